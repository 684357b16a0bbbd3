/* SPDX-License-Identifier: MIT */
/* memres/bits/objpool.h -- private: what the inline paths of
 * memres/objpool.h read and call.  Not for direct use; the layout changes
 * between versions (rebuild against the headers of the library you link).
 *
 * Internal API for memres's own clients (memres.hpp): none beyond the
 * public mr_objpool_alloc / mr_objpool_free. */
#ifndef MEMRES_BITS_OBJPOOL_H
#define MEMRES_BITS_OBJPOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memres/bits/freelist.h"
#include "memres/bits/link.h"
#include "memres/bits/tcache.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mr_objpool mr_objpool;
typedef struct mr_objpool_local mr_objpool_local;

/* The out-of-line paths (src/objpool.c); alloc returns the object or NULL
 * with errno = ENOMEM. */
MR_API MR_NOINLINE void *mri_objpool_alloc_slow(mr_objpool *p);
MR_API MR_NOINLINE void mri_objpool_free_slow(mr_objpool *p, void *obj);
/* The check at the free of code built without NDEBUG (MR_FREE_CHECK): true
 * when obj may be freed (an object of the pool, or NULL); else the misuse
 * is reported to the violation handler and the free must not go on.  O(1).
 * Always true in a library built with NDEBUG. */
MR_API MR_NOINLINE bool mri_objpool_free_ok(mr_objpool *p, void *obj);
/* A handle's out-of-line paths (src/objpool.c), as the two above. */
MR_API MR_NOINLINE void *mri_objpool_local_alloc_slow(mr_objpool_local *l);
MR_API MR_NOINLINE void mri_objpool_local_free_slow(mr_objpool_local *l, void *obj);

/* The handle's header (bits/tcache.h); its one slot follows it. */
static inline const struct mri_tc_local *mri_objpool_local_h(const mr_objpool_local *l)
{
    return (const struct mri_tc_local *)(const void *)l;
}

/* The fields the inline paths read, first in struct mr_objpool.
 * Invariant: ptr and end lie in the current block (ptr == end == 0 before
 * the first block), end - ptr is a multiple of size, and every object on
 * the free list holds the address of the next one in its first word. */
struct mri_objpool_hot {
    void     *free;         /* most recently freed object; NULL: list empty */
    uintptr_t ptr;          /* next never-used object of the current block */
    uintptr_t end;          /* end of the current block; ptr == end: exhausted */
    size_t    size;         /* object size, rounded (the stride between objects) */
    size_t    allocations;  /* successful allocations so far */
    size_t    frees;        /* objects freed so far (reset counts all live ones) */
    uintptr_t key;          /* free-list link encoding (bits/link.h) */
    uintptr_t guard;        /* 0; UINTPTR_MAX in a thread-safe pool, whose frees
                               (like its allocations: free and ptr == end stay 0)
                               all leave the unsynchronised inline path */
    uintptr_t tc_ref;       /* where its entry in the threads' tables is
                               (bits/tcache.h); not thread-safe: MRI_TC_NONE's,
                               whose slots are always empty, with no room */
    uintptr_t mark;         /* a free object's second word (MR_FREE_CHECK) */
};

/* The unsynchronised part of mr_objpool_alloc: an object from the free list
 * or the block, else NULL -- always for a thread-safe pool (its free and
 * ptr == end stay 0) and in checked builds. */
static inline void *mri_objpool_take(mr_objpool *p)
{
#if !MR_CHECKED
    struct mri_objpool_hot *h = (struct mri_objpool_hot *)(void *)p;
    MRI_FL_TAKE(h, ptr, h->key, h->allocations++, h->allocations++, MR_FREE_CHECK && h->size >= 16, true,
                true);
#else
    (void)p;
#endif
    return NULL;
}

/* The unsynchronised part of mr_objpool_free: true when obj went on the
 * free list; false for a thread-safe pool, obj NULL, in checked builds,
 * and with MR_FREE_CHECK when obj holds the pool's mark. */
static inline bool mri_objpool_put(mr_objpool *p, void *obj)
{
#if !MR_CHECKED
    struct mri_objpool_hot *h = (struct mri_objpool_hot *)(void *)p;
    if (MR_LIKELY((uintptr_t)obj > h->guard)) /* not NULL, and not thread-safe */
        MRI_FL_PUT(h, obj, h->key, h->mark, h->frees++, MR_FREE_CHECK && h->size >= 16);
#else
    (void)p, (void)obj;
#endif
    return false;
}

/* The thread-safe part of mr_objpool_alloc: an object from the calling
 * thread's cache of p, else NULL (p not thread-safe, the thread's first
 * call, an empty cache, a checked build: the slot is then mri_tc_none's or
 * empty). */
static inline void *mri_objpool_tc_take(mr_objpool *p)
{
#if !MR_CHECKED
    const struct mri_objpool_hot *h = (const struct mri_objpool_hot *)(const void *)p;
    return mri_tc_take(mri_tc_slots_at(h->tc_ref), h->key);
#else
    (void)p;
#endif
    return NULL;
}

/* The thread-safe part of mr_objpool_free: true when obj went to the
 * calling thread's cache of p; false when p is not thread-safe, obj is
 * NULL, the thread has no cache of p, its list is full, and in checked
 * builds. */
static inline bool mri_objpool_tc_put(mr_objpool *p, void *obj)
{
#if !MR_CHECKED
    const struct mri_objpool_hot *h = (const struct mri_objpool_hot *)(const void *)p;
    if (obj != NULL && MR_LIKELY(mri_tc_put(mri_tc_slots_at(h->tc_ref), obj, h->key, h->mark)))
        return true;
#else
    (void)p, (void)obj;
#endif
    return false;
}

#ifdef __cplusplus
}
#endif
#endif /* MEMRES_BITS_OBJPOOL_H */
