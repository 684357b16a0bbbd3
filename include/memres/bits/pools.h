/* SPDX-License-Identifier: MIT */
/* memres/bits/pools.h -- private: what the inline paths of memres/pools.h
 * read and call.  Not for direct use; the layout changes between versions
 * (rebuild against the headers of the library you link).
 *
 * Internal API for memres's own clients: mri_pools_alloc_in and
 * mri_pools_free_in, mr_pools_alloc and mr_pools_free for an alignment
 * already known to be a power of two <= 16, and the slow paths
 * mri_pools_alloc_slow / mri_pools_free_slow they fall back to
 * (memres.hpp); mri_pools_class_for with mri_pools_class_take /
 * mri_pools_class_put, a request's class looked up once and used without
 * the lookup (integrations/sqlite).  Everything else here serves the
 * inline bodies of memres/pools.h. */
#ifndef MEMRES_BITS_POOLS_H
#define MEMRES_BITS_POOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memres/bits/classes.h"
#include "memres/bits/freelist.h"
#include "memres/bits/link.h"
#include "memres/bits/tcache.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mr_pools mr_pools;
typedef struct mr_pools_local mr_pools_local;

/* The out-of-line paths (src/pools.c).  alloc returns the block or NULL
 * with errno. */
MR_API MR_NOINLINE void *mri_pools_alloc_slow(mr_pools *p, size_t size, size_t align);
MR_API MR_NOINLINE void mri_pools_free_slow(mr_pools *p, void *ptr, size_t size, size_t align);
MR_API MR_NOINLINE void *mri_pools_realloc_slow(mr_pools *p, void *ptr, size_t old_size, size_t new_size,
                                                size_t align);
MR_API MR_NOINLINE size_t mri_pools_block_size_slow(const mr_pools *p, size_t size, size_t align);
/* The check at the free of code built without NDEBUG (MR_FREE_CHECK): true
 * when ptr may be freed with size and align (a block of the pool, of the
 * class they name, or a direct block when they name none; NULL too); else
 * the misuse is reported to the violation handler and the free must not
 * go on.  O(1).  Always true in a library built with NDEBUG. */
MR_API MR_NOINLINE bool mri_pools_free_ok(mr_pools *p, void *ptr, size_t size, size_t align);

/* The class a request of size bytes with alignment align takes on the
 * inline paths of p, for mri_pools_class_take / mri_pools_class_put; NULL
 * when none does (a thread-safe pool, a request the inline paths leave to
 * the slow path).  Valid until p is destroyed. */
MR_API struct mri_pools_class *mri_pools_class_for(mr_pools *p, size_t size, size_t align);

/* One size class of a pool that is not thread-safe.  Invariants: bump and
 * end lie in the class's current chunk (bump == end == 0 before its first
 * chunk) and end - bump is a multiple of size; every block on the free list
 * holds the address of the next one in its first word; free + live ==
 * capacity (src/pools.c). */
struct mri_pools_class {
    void     *free;         /* most recently freed block; NULL: list empty */
    uintptr_t bump;         /* next never-used block of the current chunk */
    uintptr_t end;          /* end of the current chunk's blocks */
    size_t    size;         /* block size of this class */
    size_t    allocations;  /* blocks handed out so far */
    size_t    frees;        /* blocks given back so far (reset counts all live ones) */
    void     *chunks;       /* first chunk record (src/pools.c) */
    void     *current;      /* record of the chunk bump/end lie in */
};

/* The fields the inline paths read, first in struct mr_pools. */
struct mri_pools_hot {
    struct mri_pools_class *classes;  /* the class array; thread-safe: NULL */
    size_t alloc_max;                 /* pool_max; thread-safe: 0 (the unsynchronised
                                         alloc never applies) */
    size_t pool_max;                  /* requests of up to this many bytes take the inline
                                         paths (a class size) */
    uintptr_t key;                    /* free-list link encoding (bits/link.h) */
    uintptr_t guard;                  /* 0; thread-safe: UINTPTR_MAX (no pointer is above
                                         it: the unsynchronised free never applies) */
    size_t ts_max;                    /* thread-safe: pool_max; 0: not (one compare picks
                                         the thread-safe inline parts) */
    uintptr_t tc_ref;                 /* where its entry in the threads' tables is
                                         (bits/tcache.h); not thread-safe: MRI_TC_NONE's */
    uintptr_t mark;                   /* a free block's second word (MR_FREE_CHECK) */
};

/* A handle's out-of-line paths (src/pools.c), as mri_pools_alloc_slow and
 * mri_pools_free_slow. */
MR_API MR_NOINLINE void *mri_pools_local_alloc_slow(mr_pools_local *l, size_t size, size_t align);
MR_API MR_NOINLINE void mri_pools_local_free_slow(mr_pools_local *l, void *ptr, size_t size, size_t align);

/* Is a request of size bytes with alignment align one the inline paths
 * serve (1 <= size <= pool_max, align a power of two <= 16)? */
#define MRI_POOLS_ALIGN_OK(align) ((align) - 1 < 16 && ((align) & ((align) - 1)) == 0)
#define MRI_POOLS_INLINE_OK(h, size, align) ((size) - 1 < (h)->pool_max && MRI_POOLS_ALIGN_OK(align))

/* mr_pools_realloc: ptr itself when both sizes are requests of one class
 * the inline paths serve, else (and in checked builds) the slow path.
 * Whole here, the slow call too: as a test returning to its caller it
 * compiles to other code (gcc: a register move more). */
static inline void *mri_pools_realloc_in(mr_pools *p, void *ptr, size_t old_size, size_t new_size, size_t align)
{
#if !MR_CHECKED
    const struct mri_pools_hot *h = (const struct mri_pools_hot *)(const void *)p;
    if (MR_LIKELY(ptr != NULL && MRI_POOLS_INLINE_OK(h, old_size, align) && new_size - 1 < h->pool_max &&
                  mri_pools_class_of(mri_pools_x(old_size, align)) == mri_pools_class_of(mri_pools_x(new_size, align))))
        return ptr;
#endif
    return mri_pools_realloc_slow(p, ptr, old_size, new_size, align);
}

/* mr_pools_block_size: the class's block size for a request the inline
 * paths serve, else the slow path (whole here, as mri_pools_realloc_in). */
static inline size_t mri_pools_block_size_in(const mr_pools *p, size_t size, size_t align)
{
    const struct mri_pools_hot *h = (const struct mri_pools_hot *)(const void *)p;
    if (MR_LIKELY(MRI_POOLS_INLINE_OK(h, size, align))) {
        size_t b = mri_pools_class_size_of(mri_pools_x(size, align));
        return MR_LIKELY(b != 8 || h->ts_max == 0) ? b : 16; /* thread-safe: class 0 has two words */
    }
    return mri_pools_block_size_slow(p, size, align);
}

/* The class of x = size - 1 (no bits or-ed in) with xbits as mri_pools_xbits
 * (or align - 1: the low three bits of x never change the class). */
static inline struct mri_pools_class *mri_pools_class_in(struct mri_pools_class *classes, size_t x, size_t xbits)
{
    return &classes[mri_pools_class_of(x | xbits)];
}

/* A block from class c of p (not thread-safe) -- its free list, else its
 * chunk's bump region -- or NULL (then the slow path); always NULL in
 * checked builds. */
static inline void *mri_pools_class_take(mr_pools *p, struct mri_pools_class *c)
{
#if !MR_CHECKED
    const struct mri_pools_hot *h = (const struct mri_pools_hot *)(const void *)p;
    MRI_FL_TAKE(c, bump, h->key, c->allocations++, c->allocations++, MR_FREE_CHECK && c->size >= 16, true,
                true);
    return NULL;
#else
    (void)p, (void)c;
    return NULL;
#endif
}

/* Pushes ptr (not NULL) on class c's free list and returns true; false in
 * checked builds, and with MR_FREE_CHECK when ptr holds the pool's mark
 * (then the slow path). */
static inline bool mri_pools_class_put(mr_pools *p, struct mri_pools_class *c, void *ptr)
{
#if !MR_CHECKED
    const struct mri_pools_hot *h = (const struct mri_pools_hot *)(const void *)p;
    MRI_FL_PUT(c, ptr, h->key, h->mark, c->frees++, MR_FREE_CHECK && c->size >= 16);
#else
    (void)p, (void)c, (void)ptr;
    return false;
#endif
}

/* mr_pools_alloc for an align already known to be a power of two <= 16,
 * with xbits = mri_pools_xbits(align) or align - 1 (the same class); a
 * caller whose align is not a constant -- the C++ bridge -- passes
 * align - 1 and pays no power-of-two test. */
static inline void *mri_pools_alloc_in(mr_pools *p, size_t size, size_t align, size_t xbits)
{
#if !MR_CHECKED
    struct mri_pools_hot *h = (struct mri_pools_hot *)(void *)p;
    size_t x = size - 1;
    if (MR_LIKELY(x < h->alloc_max)) {
        void *b = mri_pools_class_take(p, mri_pools_class_in(h->classes, x, xbits));
        if (MR_LIKELY(b != NULL))
            return b;
    } else if (x < h->ts_max) {
        /* thread-safe: this thread's cache of the pool */
        struct mri_tc_slot *s = mri_tc_slots_at(h->tc_ref);
        void *b = mri_tc_take(&s[mri_pools_class_of(mri_pools_ts_of(x | xbits))], h->key);
        if (MR_LIKELY(b != NULL))
            return b;
    }
#else
    (void)xbits;
#endif
    return mri_pools_alloc_slow(p, size, align);
}

/* mr_pools_free for an align known to be a power of two <= 16 (see
 * mri_pools_alloc_in). */
static inline void mri_pools_free_in(mr_pools *p, void *ptr, size_t size, size_t align, size_t xbits)
{
#if !MR_CHECKED
    struct mri_pools_hot *h = (struct mri_pools_hot *)(void *)p;
    size_t x = size - 1;
    if (MR_LIKELY((uintptr_t)ptr > h->guard && x < h->pool_max)) { /* ptr != NULL */
        if (MR_LIKELY(mri_pools_class_put(p, mri_pools_class_in(h->classes, x, xbits), ptr)))
            return;
    } else if (ptr != NULL && x < h->ts_max) {
        struct mri_tc_slot *s = mri_tc_slots_at(h->tc_ref);
        if (MR_LIKELY(mri_tc_put(&s[mri_pools_class_of(mri_pools_ts_of(x | xbits))], ptr, h->key, h->mark)))
            return;
    }
#else
    (void)xbits;
#endif
    mri_pools_free_slow(p, ptr, size, align);
}

/* The handle's header (bits/tcache.h), and the slot of its cache that a
 * request of 1..h->max bytes with an align <= 16 (a power of two) takes:
 * the thread-safe class of size - 1, as mri_pools_alloc_in's. */
static inline const struct mri_tc_local *mri_pools_local_h(const mr_pools_local *l)
{
    return (const struct mri_tc_local *)(const void *)l;
}

static inline struct mri_tc_slot *mri_pools_local_slot(const struct mri_tc_local *h, size_t size, size_t align)
{
    return mri_tc_local_slot(h, mri_pools_class_of(mri_pools_ts_of((size - 1) | mri_pools_xbits(align))));
}

#ifdef __cplusplus
}
#endif
#endif /* MEMRES_BITS_POOLS_H */
