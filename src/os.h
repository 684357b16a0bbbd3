/* SPDX-License-Identifier: MIT */
/* src/os.h -- what os.c, the only file with platform code, offers the
 * allocators: page-granular mappings and advice.  Everything here works in
 * whole pages (mri_os_page_size(), declared in internal.h) and never
 * aborts. */
#ifndef MEMRES_OS_H
#define MEMRES_OS_H

#include <stdbool.h>
#include <stddef.h>

#include "internal.h"
#include "memres/pages.h"

/* Maps len bytes (a non-zero multiple of the page size) of zeroed, readable
 * and writable private memory aligned to align (a power of two; above the
 * page size by over-mapping and trimming).  NULL with errno = ENOMEM when
 * the OS refuses or len + align does not fit. */
void *mri_os_map(size_t len, size_t align);

/* Unmaps what mri_os_map(len, ...) returned (the same len). */
void mri_os_unmap(void *p, size_t len);

/* Advises the huge-page-aligned part of [p, p + len) for transparent huge
 * pages.  Returns false where the OS has no such advice or refused it (the
 * memory is unaffected either way). */
bool mri_os_advise_huge(void *p, size_t len);

/* The bytes of the whole pages inside [p, p + len) (0: none). */
size_t mri_os_inner_pages(const void *p, size_t len);

/* Gives the whole pages inside [p, p + len) back to the OS (MADV_DONTNEED):
 * they stay mapped, read as zeros and take memory again when touched.  The
 * caller owns the range and keeps nothing in it.  A no-op where the OS has
 * no such advice or refuses it (locked or huge-TLB memory). */
void mri_os_discard(void *p, size_t len);

/* The resource that blocks of `size` bytes come from under the huge-page
 * rule of memres/pages.h (mode: the allocator's huge_pages option): the
 * huge-page source, or upstream itself. */
mr_resource *mri_os_block_source(mr_resource *upstream, mr_huge_pages mode, size_t size);

#endif /* MEMRES_OS_H */
