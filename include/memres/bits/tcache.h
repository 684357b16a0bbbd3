/* SPDX-License-Identifier: MIT */
/* memres/bits/tcache.h -- private: what the inline paths of thread-safe pools
 * (mr_pools, mr_objpool with thread_safe = true) read.  Not for direct use;
 * the layout changes between versions (rebuild against the headers of the
 * library you link).
 *
 * Each thread has a table of pointers to its caches of the thread-safe
 * pools (the per-class state of an unsynchronised pool, private to the
 * thread), one entry per pool, at an offset every thread shares: finding
 * the cache is one load.  The table is static TLS (initial-exec: one
 * %fs-relative access, also from the shared library); a thread's first use
 * of a pool, an empty list or region, and a list at its limit go out of
 * line (src/tsafe.c).
 */
#ifndef MEMRES_BITS_TCACHE_H
#define MEMRES_BITS_TCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memres/bits/freelist.h"
#include "memres/bits/link.h"
#include "memres/config.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Private: one class in one thread's cache of one pool.  One cache line.
 * The counts are written by the owning thread only and read by mr_*_stats
 * from any thread (src/tsafe.c, "the counts of a slot"): an allocation
 * counts one of from_list and carved, a free takes one from room, and the
 * list's length and the frees are derived.  The list's limit is out of
 * line; room never lets the list past it. */
struct mri_tc_slot {
    void     *free;        /* the thread's free list (link in the first word) */
    uintptr_t bump, end;   /* the rest of the region the thread carves; bump == end: none */
    size_t    room;        /* frees the list takes before it is counted again: at most
                              its limit less its length (allocations give none back) */
    size_t    credit;      /* credit + from_list + room = the limit less the list's
                              length (mod 2^64; mri_tc_put's recount) */
    size_t    size;        /* the class's block size */
    size_t    from_list;   /* allocations served from the free list */
    size_t    carved;      /* allocations carved from the region */
};

/* Private: the first MRI_TC_SLOTS thread-safe pools alive at once each
 * own one entry of every thread's table (an index, taken at create and
 * given back at destroy): the entry points at that thread's slots for the
 * pool, or at mri_tc_none while the thread has no cache of it.  Every
 * other pool shares entry MRI_TC_NONE, which always points at mri_tc_none,
 * and finds its caches out of line.  mri_tc_none's slots are empty and have
 * no room (all zero, read-only; neither inline path writes to such a
 * slot): the inline paths need no test of their own to leave for the
 * out-of-line ones.  A destroy sets its entry
 * back to mri_tc_none in every thread that has a cache of the pool, so an
 * index taken again never leads to a destroyed pool's cache. */
#define MRI_TC_SLOTS 32
#define MRI_TC_NONE ((size_t)MRI_TC_SLOTS)
#define MRI_TC_MAX_CLASSES 192 /* the most classes of a pool (mri_tc_none's length) */
extern MR_API const struct mri_tc_slot mri_tc_none[MRI_TC_MAX_CLASSES];

/* Private: a handle's header (mr_pools_local, mr_objpool_local): what its
 * inline paths read besides the slots, which follow it at
 * MRI_TC_LOCAL_SLOTS bytes.  A thread-safe pool's handle is the header of
 * one (pool, thread) cache (src/tsafe.h), a copy of the pool's, so that
 * the handle's paths need no entry load and no test of the pool's kind.  A
 * pool that is not thread-safe keeps one in its own struct: max 0 (every
 * request leaves the inline path) and, for an object pool, the slots of
 * an empty slot after it (all zero, as mri_tc_none's: every call leaves
 * the inline path too). */
struct mri_tc_local {
    size_t    max;   /* requests of 1..max bytes take the inline paths (mr_pools_local);
                        0: none */
    uintptr_t key;   /* the pool's free-list link key (bits/link.h) */
    uintptr_t mark;  /* a free block's second word (MR_FREE_CHECK) */
    void     *pool;  /* the mr_pools * or mr_objpool *, for the out-of-line paths */
};
#define MRI_TC_LOCAL_SLOTS 64

/* Private: slot i of handle l. */
static inline struct mri_tc_slot *mri_tc_local_slot(const struct mri_tc_local *l, size_t i)
{
    return (struct mri_tc_slot *)(uintptr_t)((const char *)l + MRI_TC_LOCAL_SLOTS) + i;
}

#if defined(__cplusplus)
extern MR_API thread_local struct mri_tc_slot *mri_tc_table[MRI_TC_SLOTS + 1] __attribute__((tls_model("initial-exec")));
#else
extern MR_API _Thread_local struct mri_tc_slot *mri_tc_table[MRI_TC_SLOTS + 1] __attribute__((tls_model("initial-exec")));
#endif

/* Private: what a pool keeps to find its entry (tc_ref, from mri_tc_ref).
 * On x86-64 Linux the entry's offset from the thread pointer (%fs:0, the
 * x86-64 TLS ABI's TCB self pointer): the table is static TLS, at the same
 * offset from every thread's thread pointer, so the offset taken in the
 * thread that made the pool holds in all, and the entry is one
 * %fs-relative load where the table's address takes a GOT load first.
 * Elsewhere the entry's index. */
#if defined(__x86_64__) && defined(__linux__) && (defined(__GNUC__) || defined(__clang__))
#define MRI_TC_TP 1
#else
#define MRI_TC_TP 0
#endif

/* Private: the calling thread's slots of the pool whose tc_ref is ref
 * (mri_tc_none: none, or not yet).  On x86-64 Linux one %fs-relative load,
 * where C would load the thread pointer and then the entry.  volatile: the
 * entry changes under the inline paths (a thread's first use of the pool
 * sets it, a destroy resets it), so no two of these loads may be merged or
 * hoisted, and none moved across the out-of-line call that changed it. */
static inline struct mri_tc_slot *mri_tc_slots_at(uintptr_t ref)
{
#if MRI_TC_TP
    struct mri_tc_slot *s;
    __asm__ volatile("movq %%fs:(%1), %0" : "=r"(s) : "r"(ref));
    return s;
#else
    return mri_tc_table[ref];
#endif
}

/* Private: adds 1 to (or takes 1, or n, from) the count `field` of slot s,
 * which only the owning thread writes and mr_*_stats reads from any thread
 * (relaxed atomic loads).  On x86-64 one add to memory: an aligned 8-byte
 * store is never seen torn, and the compiler's relaxed atomic store would
 * take a load, an add and a store (two instructions more on every
 * allocation and free).  Elsewhere, that relaxed store.  The asm's operand
 * is the field's address as slot plus offset: given the member expression
 * s->field, GCC keeps the slot's address in a register of its own (one lea
 * more on each path) where the offset folds into the addressing. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define MRI_TC_FIELD(s, field) \
    (*(__typeof__((s)->field) *)(void *)((char *)(s) + offsetof(struct mri_tc_slot, field)))
#define MRI_TC_COUNT(s, field) __asm__("addq $1, %0" : "+m"(MRI_TC_FIELD(s, field)))
#define MRI_TC_UNCOUNT(s, field) __asm__("subq $1, %0" : "+m"(MRI_TC_FIELD(s, field)))
#define MRI_TC_TAKE(s, field, n) __asm__("subq %1, %0" : "+m"(MRI_TC_FIELD(s, field)) : "r"(n))
#else
#define MRI_TC_COUNT(s, field) __atomic_store_n(&(s)->field, (s)->field + 1, __ATOMIC_RELAXED)
#define MRI_TC_UNCOUNT(s, field) __atomic_store_n(&(s)->field, (s)->field - 1, __ATOMIC_RELAXED)
#define MRI_TC_TAKE(s, field, n) __atomic_store_n(&(s)->field, (s)->field - (n), __ATOMIC_RELAXED)
#endif

/* Private: a block from the slot's list or region, or NULL (empty).  With
 * MR_FREE_CHECK its mark is cleared (blocks are at least two words). */
static inline void *mri_tc_take(struct mri_tc_slot *s, uintptr_t key)
{
    MRI_FL_TAKE(s, bump, key, MRI_TC_COUNT(s, from_list), MRI_TC_COUNT(s, carved), MR_FREE_CHECK, false,
                false);
    return NULL;
}

/* Private: pushes b on the slot's list unless it is at its limit (then
 * false: the out-of-line free moves a batch), or, with MR_FREE_CHECK,
 * b already holds the pool's mark (then false: the out-of-line free looks
 * for a double free). */
static inline bool mri_tc_put(struct mri_tc_slot *s, void *b, uintptr_t key, uintptr_t mark)
{
    if (MR_UNLIKELY(s->room == 0)) {
        /* allocations since the last count gave room back: take it (none
         * for mri_tc_none's slots, which this never writes) */
        size_t r = s->credit + s->from_list;
        if ((ptrdiff_t)r <= 0)
            return false;
        MRI_TC_TAKE(s, credit, r);                       /* frees unchanged, */
        __atomic_store_n(&s->room, r, __ATOMIC_RELEASE); /* too high between */
    }
    MRI_FL_PUT(s, b, key, mark, MRI_TC_UNCOUNT(s, room), MR_FREE_CHECK);
}

#ifdef __cplusplus
}
#endif
#endif /* MEMRES_BITS_TCACHE_H */
