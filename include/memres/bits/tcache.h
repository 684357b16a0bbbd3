/* SPDX-License-Identifier: MIT */
/* memres/bits/tcache.h -- private: what the inline paths of thread-safe pools
 * (mr_pools, mr_objpool with thread_safe = true) read.  Not for direct use;
 * the layout changes between versions (rebuild against the headers of the
 * library you link).
 *
 * Each thread has a small direct-mapped table from pool id to that
 * thread's cache of the pool (the per-class state of an unsynchronised
 * pool, private to the thread).  Pool ids come from a global counter and
 * are never reused, so an entry left by a destroyed pool never matches.
 * The table is static TLS (initial-exec: one %fs-relative access, also from
 * the shared library); an entry that does not match, an empty list or
 * region, and a list at its limit go out of line (src/tcache.c).
 */
#ifndef MEMRES_BITS_TCACHE_H
#define MEMRES_BITS_TCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "memres/bits/link.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Private: one class in one thread's cache of one pool.  One cache line. */
struct mri_tc_slot {
    void     *free;        /* the thread's free list (link in the first word) */
    uintptr_t bump, end;   /* the rest of the region the thread carves; bump == end: none */
    size_t    nfree;       /* blocks on the free list */
    size_t    limit;       /* most blocks the list keeps: two batches + the blocks of
                              the chunks this cache took from upstream since reset */
    size_t    size;        /* the class's block size */
    size_t    allocations; /* written by the owning thread only (relaxed atomic */
    size_t    frees;       /*   stores), read by mr_*_stats from any thread */
};

/* Private: an entry of a thread's table: the pool's id and the thread's
 * slots for it (id 0: empty). */
#define MRI_TC_SLOTS 8
struct mri_tc_entry {
    uint64_t id;
    struct mri_tc_slot *slots;
};

#if defined(__cplusplus)
extern MR_API thread_local struct mri_tc_entry mri_tc_table[MRI_TC_SLOTS] __attribute__((tls_model("initial-exec")));
#else
extern MR_API _Thread_local struct mri_tc_entry mri_tc_table[MRI_TC_SLOTS] __attribute__((tls_model("initial-exec")));
#endif

/* Private: pool ids are multiples of the entry size (the global counter
 * steps by it), so that an id's entry is at byte offset id & MRI_TC_MASK of
 * the table: one AND on the inline paths.  No id is ever MRI_TC_NO_ID
 * (odd), what a pool that is not thread-safe keeps where no table entry
 * matches it. */
#define MRI_TC_STEP ((uint64_t)sizeof(struct mri_tc_entry))
#define MRI_TC_MASK ((uint64_t)(MRI_TC_SLOTS - 1) * MRI_TC_STEP)
#define MRI_TC_NO_ID UINT64_MAX

/* Private: the calling thread's table entry for the pool with this id; it
 * is the pool's when e->id == id (else: first use, or another pool took
 * the entry). */
static inline struct mri_tc_entry *mri_tc_entry_of(uint64_t id)
{
    return (struct mri_tc_entry *)(void *)((char *)mri_tc_table + (id & MRI_TC_MASK));
}

/* Private: on x86-64 Linux the inline paths find the entry from the thread
 * pointer (%fs:0, the x86-64 TLS ABI's TCB self pointer) and the entry's
 * offset from it, which the pool keeps (tc_off, from mri_tc_off): the table
 * is static TLS, at the same offset from every thread's thread pointer, so
 * the offset taken in the thread that made the pool holds in all.  That is
 * one load and one add where the table's address takes a GOT load, the
 * thread pointer, a copy, an AND and an add.  Elsewhere: mri_tc_entry_of. */
#if defined(__x86_64__) && defined(__linux__) && (defined(__GNUC__) || defined(__clang__))
#define MRI_TC_TP 1
static inline uintptr_t mri_tc_tp(void)
{
    uintptr_t tp;
    __asm__("movq %%fs:0, %0" : "=r"(tp)); /* constant within a thread: not volatile */
    return tp;
}
#else
#define MRI_TC_TP 0
#endif

/* Private: the calling thread's table entry for the pool with this id and
 * tc_off (the inline paths' mri_tc_entry_of). */
static inline struct mri_tc_entry *mri_tc_entry_at(uint64_t id, uintptr_t off)
{
#if MRI_TC_TP
    (void)id;
    return (struct mri_tc_entry *)(void *)(mri_tc_tp() + off);
#else
    (void)off;
    return mri_tc_entry_of(id);
#endif
}

/* Private: the calling thread's slot of class i of the pool with this id,
 * or NULL when the thread's table has no entry for it. */
static inline struct mri_tc_slot *mri_tc_slot_of(uint64_t id, size_t i)
{
    struct mri_tc_entry *e = mri_tc_entry_of(id);
    return MR_LIKELY(e->id == id) ? &e->slots[i] : (struct mri_tc_slot *)NULL;
}

/* Private: counts one allocation or free in a slot's counter, which only
 * the owning thread writes and mr_*_stats reads from any thread (relaxed
 * atomic loads).  On x86-64 one add to memory: an aligned 8-byte store is
 * never seen torn, and the compiler's relaxed atomic store would take a
 * load, an add and a store (two instructions more on every allocation and
 * free).  Elsewhere, that relaxed store. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define MRI_TC_COUNT(field) __asm__("addq $1, %0" : "+m"(field))
#else
#define MRI_TC_COUNT(field) __atomic_store_n(&(field), (field) + 1, __ATOMIC_RELAXED)
#endif

/* Private: a block from the slot's list or region, or NULL (empty).  With
 * MR_FREE_CHECK its mark is cleared (blocks are at least two words). */
static inline void *mri_tc_take(struct mri_tc_slot *s, uintptr_t key)
{
    void *b = s->free;
    if (MR_LIKELY(b != NULL)) {
        s->free = mri_link_load(b, key);
        s->nfree--;
        MRI_TC_COUNT(s->allocations);
        if (MR_FREE_CHECK)
            mri_mark_set(b, 0);
        return b;
    }
    uintptr_t q = s->bump;
    if (MR_LIKELY(q != s->end)) {
        s->bump = q + s->size;
        MRI_TC_COUNT(s->allocations);
        if (MR_FREE_CHECK)
            mri_mark_set((void *)q, 0);
        return (void *)q;
    }
    return NULL;
}

/* Private: pushes b on the slot's list unless the list is at its limit
 * (then false: the out-of-line free moves a batch), or, with MR_FREE_CHECK,
 * b already holds the pool's mark (then false: the out-of-line free looks
 * for a double free). */
static inline bool mri_tc_put(struct mri_tc_slot *s, void *b, uintptr_t key, uintptr_t mark)
{
    if (MR_UNLIKELY(s->nfree >= s->limit))
        return false;
    if (MR_FREE_CHECK) {
        if (MR_UNLIKELY(mri_mark_test(b, mark)))
            return false;
        mri_mark_set(b, mark);
    }
    mri_link_store(b, s->free, key);
    s->free = b;
    s->nfree++;
    MRI_TC_COUNT(s->frees);
    return true;
}

#ifdef __cplusplus
}
#endif
#endif /* MEMRES_BITS_TCACHE_H */
