/* SPDX-License-Identifier: MIT */
/* src/direct.c -- the direct blocks of a size-class pool: requests above
 * its largest pooled size or with an alignment above MR_POOLS_MAX_ALIGN,
 * passed to the upstream one by one and tracked, so that mr_pools_free
 * returns such a block at once and release, reset and destroy return any
 * still held.
 *
 * Each block has a header (prev, next, size, align) of DIRECT_PAD_MIN
 * bytes -- or one alignment unit, when that is larger -- just before it,
 * in a circular doubly linked list with a sentinel in the pool: O(1)
 * insert and remove, and debug builds check that free is given the
 * allocation's size and alignment.  A thread-safe pool's blocks are under
 * its engine's lock, which is dropped across the upstream calls.
 *
 * Invariants (mri_direct_verify): the list is linked both ways and holds
 * direct_count blocks of direct_bytes requested bytes; each is aligned as
 * asked and holds size + pad bytes of the pool's held.
 */
#include "pools_impl.h"

#define DIRECT_ALIGN_MIN ((size_t)16) /* what malloc gives */
#define DIRECT_PAD_MIN ((size_t)32)   /* the pad before a direct block */

_Static_assert(sizeof(struct mri_direct) <= DIRECT_PAD_MIN, "the direct header fits its pad");

/* The alignment a direct block's upstream allocation is asked for: plain
 * malloc alignment unless the request needs more. */
static size_t direct_align(size_t align) { return align > DIRECT_ALIGN_MIN ? align : DIRECT_ALIGN_MIN; }

/* The pad before a direct block (header, alignment) and the bytes asked of
 * upstream; false when they cannot be represented.  The upstream is asked
 * for direct_align(align) <= pad: base + pad is aligned to align. */
static bool layout(size_t size, size_t align, size_t *pad, size_t *total)
{
    *pad = align > DIRECT_PAD_MIN ? align : DIRECT_PAD_MIN;
    return !mri_add_overflow(size, *pad, total) && *total <= MRI_MAX_SIZE;
}

bool mri_direct_fits(size_t size, size_t align)
{
    size_t pad, total;
    return layout(size, align, &pad, &total);
}

MR_NOINLINE void *mri_direct_alloc(mr_pools *p, size_t size, size_t align)
{
    size_t pad, total;
    if (!layout(size, align, &pad, &total))
        return mri_fail(ENOMEM);
    mri_pools_lock(p);
    char *base = mri_chunks_up_allocate(mri_pools_up(p), total, direct_align(align));
    if (base == NULL) {
        mri_pools_unlock(p);
        return NULL;
    }
    struct mri_direct *h = (struct mri_direct *)(void *)(base + pad - sizeof *h);
    h->size = size;
    h->align = align;
    h->prev = &p->direct;
    h->next = p->direct.next;
    p->direct.next->prev = h;
    p->direct.next = h;
    p->direct_count++;
    p->direct_bytes += size;
    p->direct_allocations++;
    p->taken += total;
    if (MRI_ADDRMAP)
        mri_addrmap_add(&mri_pools_up(p)->map, (uintptr_t)(h + 1), size != 0 ? size : 1, 0);
    mri_pools_unlock(p);
    if (p->tc == NULL)
        mri_pools_after_take(p);
    return base + pad;
}

MR_NOINLINE void mri_direct_free(mr_pools *p, void *ptr, size_t size, size_t align)
{
    size_t pad, total;
    if (MRI_MISUSE(!layout(size, align, &pad, &total), ptr, "mr_pools_free: size and alignment of no possible allocation"))
        return;
    struct mri_direct *h = (struct mri_direct *)(void *)((char *)ptr - sizeof *h);
    mri_pools_lock(p);
    /* (debug builds only: the header of a pointer that is not ours may
     * itself point anywhere) */
    if (MRI_MISUSE(MR_DEBUG >= 1 && (h->prev->next != h || h->next->prev != h), ptr,
                   "mr_pools_free: not a live block of this pool") ||
        MRI_MISUSE(h->size != size || h->align != align, ptr,
                   "mr_pools_free: size or alignment differs from the allocation's")) {
        mri_pools_unlock(p);
        return;
    }
    h->prev->next = h->next;
    h->next->prev = h->prev;
    if (MRI_ADDRMAP)
        mri_addrmap_remove(mri_pools_up(p)->map, (uintptr_t)ptr, size != 0 ? size : 1);
    p->direct_count--;
    p->direct_bytes -= size;
    mri_chunks_up_deallocate(mri_pools_up(p), (char *)ptr - pad, total, direct_align(align));
    mri_pools_unlock(p);
}

void mri_direct_release_all(mr_pools *p)
{
    mri_pools_lock(p);
    struct mri_direct *h = p->direct.next;
    while (h != &p->direct) {
        struct mri_direct *next = h->next;
        size_t pad, total;
        (void)layout(h->size, h->align, &pad, &total); /* held it once: fits */
        if (MRI_ADDRMAP)
            mri_addrmap_remove(mri_pools_up(p)->map, (uintptr_t)(h + 1), h->size != 0 ? h->size : 1);
        mri_chunks_up_deallocate(mri_pools_up(p), (char *)(h + 1) - pad, total, direct_align(h->align));
        h = next;
    }
    p->direct.prev = p->direct.next = &p->direct;
    p->direct_count = p->direct_bytes = 0;
    mri_pools_unlock(p);
}

#define CHECK(cond, ...) MRI_VERIFY(cond, "mr_pools_check", (const void *)p, __VA_ARGS__)

bool mri_direct_verify(const mr_pools *p, size_t *held, size_t *blocks, size_t *steps)
{
    size_t n = 0, bytes = 0;
    for (const struct mri_direct *h = p->direct.next; h != &p->direct; h = h->next) {
        CHECK(h->next->prev == h && h->prev->next == h, "direct block %p: list links broken", (const void *)(h + 1));
        CHECK(++n <= p->direct_count, "direct list longer than the %zu counted (cycle?)", p->direct_count);
        size_t pad, total;
        CHECK(mri_is_pow2(h->align) && layout(h->size, h->align, &pad, &total),
              "direct block %p: bad size %zu / alignment %zu", (const void *)(h + 1), h->size, h->align);
        CHECK((uintptr_t)(h + 1) % h->align == 0, "direct block %p not aligned to %zu", (const void *)(h + 1), h->align);
        bytes += h->size;
        *held += total;
        ++*blocks;
    }
    *steps += n;
    CHECK(n == p->direct_count && bytes == p->direct_bytes, "direct blocks: %zu / %zu B, counted %zu / %zu B", n, bytes,
          p->direct_count, p->direct_bytes);
    return true;
}
