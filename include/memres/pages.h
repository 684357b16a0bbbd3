/* SPDX-License-Identifier: MIT */
/* memres/pages.h -- the OS page source: the bottom layer of memres.
 *
 * mr_page_resource() is an mr_resource straight over the OS (mmap/munmap):
 * every request is rounded up to whole pages, alignments above the page size
 * are honoured by over-mapping and trimming, and nothing is cached.
 * mr_page_resource_huge() is the same, except that regions of
 * MR_HUGE_PAGE_SIZE (2 MiB) or more are aligned to 2 MiB and advised
 * MADV_HUGEPAGE, so that transparent huge pages can back them (fewer TLB
 * misses and page faults for big arenas).  Memory from either may be
 * returned through either: they are equal resources.
 *
 * Huge pages, one rule for every allocator.  The arena and the block pool
 * take an mr_huge_pages option with the same meaning: where it says so,
 * blocks of MR_HUGE_PAGE_SIZE bytes or more are mapped from
 * mr_page_resource_huge() instead of being asked of the upstream (smaller
 * blocks always come from the upstream).  MR_HUGE_PAGES_AUTO, the zero
 * value, turns this on only where the upstream is a system source that
 * nobody observes -- the malloc resource or the page source -- because
 * glibc would mmap blocks that large anyway; an upstream of the user's
 * (an adaptor that counts or limits, a pool) then sees every request.
 * MR_HUGE_PAGES_ON asks for it whatever the upstream (such blocks then
 * bypass it); MR_HUGE_PAGES_OFF never.
 *
 * Thread-safety: everything here is stateless and thread-safe.
 */
#ifndef MEMRES_PAGES_H
#define MEMRES_PAGES_H

#include <stddef.h>

#include "memres/resource.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The size whose aligned regions transparent huge pages can back. */
#define MR_HUGE_PAGE_SIZE ((size_t)2 << 20)

/* Where an allocator's blocks of MR_HUGE_PAGE_SIZE or more come from (see
 * above).  The zero value is AUTO; ON is 1, so `.huge_pages = true` means ON. */
typedef enum mr_huge_pages {
    MR_HUGE_PAGES_AUTO = 0, /* on when the upstream is mr_malloc_resource() or the page source */
    MR_HUGE_PAGES_ON = 1,   /* always: big blocks bypass the upstream */
    MR_HUGE_PAGES_OFF = 2   /* never: every block comes from the upstream */
} mr_huge_pages;

/* The OS page size (sysconf), cached after the first call.  A power of two;
 * 4096 when the OS does not say.  Thread-safe. */
MR_API size_t mr_page_size(void);

/* The page source: a process-wide, stateless, thread-safe resource over
 * mmap/munmap.  Never NULL.
 *   allocate(size, align): size rounded up to whole pages (size 0: one page,
 *     a valid unique pointer); memory is zeroed (fresh pages); any
 *     power-of-two align, above the page size by mapping size + align - page
 *     and unmapping the unaligned head and tail.  size > PTRDIFF_MAX, or a
 *     size + align that does not fit in size_t, or the OS refusing:
 *     NULL, errno = ENOMEM.
 *   deallocate(p, size, align): unmaps the same page-rounded length;
 *     deallocating part of a region is not supported.
 * Equal to mr_page_resource_huge(). */
MR_API mr_resource *mr_page_resource(void);

/* As mr_page_resource(), but a request whose page-rounded size is at least
 * MR_HUGE_PAGE_SIZE is aligned to MR_HUGE_PAGE_SIZE (or its own larger align)
 * and advised MADV_HUGEPAGE, so that THP backs it where the OS enables THP
 * for madvised regions ("madvise" or "always" in
 * /sys/kernel/mm/transparent_hugepage/enabled).  The advice is best effort:
 * where the OS has no huge pages the memory is ordinary pages.  Smaller
 * requests are served exactly as mr_page_resource() serves them (no RSS is
 * inflated for small regions).  Never NULL; thread-safe. */
MR_API mr_resource *mr_page_resource_huge(void);

#ifdef __cplusplus
}
#endif
#endif /* MEMRES_PAGES_H */
