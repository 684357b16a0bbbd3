/* SPDX-License-Identifier: MIT */
/* src/track.h -- the ONLY place that knows about AddressSanitizer (and any
 * other memory checker): poisoning of memory an allocator holds but has not
 * handed out, so that use after free, reset or rewind is reported.
 *
 * In a build with ASan (MR_SANITIZED from memres/config.h) or for Valgrind
 * (MR_VALGRIND), the inline fast paths of the public headers call out of
 * line (MR_CHECKED), and the library poisons:
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

#include <string.h>

#include "internal.h"
#include "memres/bits/link.h"

#if MR_SANITIZED && defined(__has_include)
#  if __has_include(<sanitizer/asan_interface.h>)
#    include <sanitizer/asan_interface.h>
#    define MRI_TRACKING 1
#    define MRI_ASAN 1
#    define mri_track_poison(p, n)   ASAN_POISON_MEMORY_REGION((const void *)(p), (size_t)(n))
#    define mri_track_unpoison(p, n) ASAN_UNPOISON_MEMORY_REGION((const void *)(p), (size_t)(n))
#  endif
#endif

#if !defined(MRI_TRACKING) && MR_VALGRIND
/* Valgrind memcheck: memory we hold but have not handed out is NOACCESS;
 * handed out, or read by us (a link word), it is DEFINED (its contents are
 * the caller's or ours, never uninitialised garbage to warn about).  The
 * requests are no-ops costing a few instructions outside Valgrind, and the
 * loops that exist only to mark memory run only under it. */
#  include <valgrind/memcheck.h>
#  define MRI_TRACKING (RUNNING_ON_VALGRIND != 0)
#  define mri_track_poison(p, n)   ((void)VALGRIND_MAKE_MEM_NOACCESS((const void *)(p), (size_t)(n)))
#  define mri_track_unpoison(p, n) ((void)VALGRIND_MAKE_MEM_DEFINED((const void *)(p), (size_t)(n)))
#endif

/* A caller's buffer that an arena poisons (ASan) until mr_arena_destroy:
 * lent and returned here, so that if ASan dies on one never returned (an
 * arena over a stack buffer that was not destroyed: a false report in some
 * later function), the report ends with a line naming the buffer. */
#ifdef MRI_ASAN
void mri_track_lend(const void *buf, size_t n);
void mri_track_unlend(const void *buf);
#else
#  define mri_track_lend(buf, n) ((void)(buf), (void)(n))
#  define mri_track_unlend(buf)  ((void)(buf))
#endif

#ifndef MRI_TRACKING
#  define MRI_TRACKING 0
#  define mri_track_poison(p, n)   ((void)(p), (void)(n))
#  define mri_track_unpoison(p, n) ((void)(p), (void)(n))
#endif

/* ---- the largest request malloc is asked for ----
 * The sanitizers replace malloc with allocators that abort (unless the
 * user sets allocator_may_return_null) on requests above about 1 TiB,
 * where libc's malloc returns NULL.  The malloc resource refuses those
 * itself, with ENOMEM, so that a sanitizer build behaves as a plain one. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#  define MRI_SANITIZER_MALLOC 1
#elif defined(__has_feature)
#  if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#    define MRI_SANITIZER_MALLOC 1
#  endif
#endif
#ifdef MRI_SANITIZER_MALLOC
#  define MRI_MALLOC_MAX ((size_t)1 << (sizeof(size_t) >= 8 ? 39 : 30))
#else
#  define MRI_MALLOC_MAX MRI_MAX_SIZE
#endif

/* ---- free-list links ----
 * A free object (objpool), block (pools) or cached block (blocks) holds the
 * address of the next one in its first word, encoded with the owner's key
 * (mri_link_load in memres/resource.h; the block pool's key is 0), and, in
 * ASan and Valgrind builds, unpoisoned only for the access. */
#define MRI_LINK sizeof(void *)

static inline void *mri_link_get(const void *obj, uintptr_t key)
{
    mri_track_unpoison(obj, MRI_LINK);
    void *next = mri_link_load(obj, key);
    mri_track_poison(obj, MRI_LINK);
    return next;
}

static inline void mri_link_set(void *obj, const void *next, uintptr_t key)
{
    mri_track_unpoison(obj, MRI_LINK);
    mri_link_store(obj, next, key);
    mri_track_poison(obj, MRI_LINK);
}

#endif /* MEMRES_TRACK_H */
