/* src/os.c -- the page source and every other fact memres takes from the OS.
 *
 * This is the only file with mmap/munmap/madvise/sysconf and platform #ifdefs;
 * the allocators above ask it for the page size and for page-granular memory.
 */
#include <unistd.h>

#include "internal.h"

size_t mri_os_page_size(void)
{
    static size_t cached; /* benign race: every thread computes the same value */
    size_t ps = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (MR_UNLIKELY(ps == 0)) {
        long v = sysconf(_SC_PAGESIZE);
        ps = (v > 0 && mri_is_pow2((size_t)v)) ? (size_t)v : 4096;
        __atomic_store_n(&cached, ps, __ATOMIC_RELAXED);
    }
    return ps;
}
