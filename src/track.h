/* src/track.h -- the ONLY place that knows about AddressSanitizer (and any
 * other memory checker): poisoning of memory an allocator holds but has not
 * handed out, so that use after free, reset or rewind is reported.
 *
 * In a build with ASan (MR_SANITIZED from resource.h), the inline fast paths
 * of the public headers call out of line, and the library poisons:
 *   - the free tail of every block it holds,
 *   - objects on free lists (except the link word the list needs, which is
 *     unpoisoned only while the allocator reads or writes it),
 *   - everything a rewind, reset or release frees.
 * Memory is unpoisoned before it is handed out and before it is returned
 * upstream or to the caller who lent it (an arena's buffer).
 * Without ASan every macro here is a no-op and MRI_TRACKING is 0, so loops
 * that exist only to poison are removed by the compiler.
 */
#ifndef MEMRES_TRACK_H
#define MEMRES_TRACK_H

#include "memres/resource.h"

#if MR_SANITIZED && defined(__has_include)
#  if __has_include(<sanitizer/asan_interface.h>)
#    include <sanitizer/asan_interface.h>
#    define MRI_TRACKING 1
#    define mri_track_poison(p, n)   ASAN_POISON_MEMORY_REGION((const void *)(p), (size_t)(n))
#    define mri_track_unpoison(p, n) ASAN_UNPOISON_MEMORY_REGION((const void *)(p), (size_t)(n))
#  endif
#endif

#ifndef MRI_TRACKING
#  define MRI_TRACKING 0
#  define mri_track_poison(p, n)   ((void)(p), (void)(n))
#  define mri_track_unpoison(p, n) ((void)(p), (void)(n))
#endif

#endif /* MEMRES_TRACK_H */
