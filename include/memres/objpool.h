/* SPDX-License-Identifier: MIT */
/* memres/objpool.h -- a pool of fixed-size objects (git's alloc.c, GCC's
 * object_allocator): the fastest way to make and drop many objects of one
 * type.
 *
 * Every object of a pool has the same size and alignment, fixed at create.
 * Objects are carved from blocks of objects_per_block objects taken from the
 * upstream resource; a freed object goes on an intrusive free list kept
 * inside the freed objects themselves, so objects carry no per-object header
 * and a 40-byte object costs 40 bytes.  mr_objpool_alloc reuses the most
 * recently freed object first (LIFO: its memory is likely still in cache),
 * else carves the next never-used object of the current block, else takes
 * a block; mr_objpool_reset frees every object at once and keeps the blocks.
 *
 * Object size: the size given to create is rounded up to at least
 * sizeof(void *) and to a multiple of the alignment (itself at least
 * alignof(void *)), because a free object holds the free-list link.
 * mr_objpool_object_size() returns that rounded size; every object may use
 * all of it.
 *
 * Thread-safety: by default none.  One pool belongs to one thread at a
 * time; distinct pools are independent and may be used from different
 * threads.
 *
 * Threads (thread_safe = true): any thread may call mr_objpool_alloc,
 * mr_objpool_free and mr_objpool_stats (a snapshot) at any time, the
 * resource view too, and an object may be freed by another thread than the
 * one that allocated it; reset, release, destroy and mr_objpool_check must
 * not run concurrently with other calls on the pool; a thread that used it
 * may exit at any time.  Same machinery, bound and fork rules as the
 * thread-safe size-class pools (memres/pools.h, "Threads"), with one class:
 * alloc and free stay inline (one load from a per-thread table, then a pop or a
 * push), objects still carry no header, but are at least 16 bytes (a free
 * object holds two words), and each (pool, thread) pair costs a 208-byte
 * cache, counted in held.  Blocks of objects_per_block objects are taken
 * as threads need them.
 *
 * Errors: a failed call returns NULL with errno = ENOMEM (the upstream could
 * not give a block) or EINVAL (bad size or alignment) and leaves the pool
 * exactly as it was: same objects, same bytes held.  Only the history in
 * mr_stats (peak_held, upstream_*) may record what it tried.
 *
 * Sanitizers: when this header is compiled with AddressSanitizer
 * (MR_SANITIZED) or against a library built for Valgrind (MR_VALGRIND;
 * MR_CHECKED covers both), alloc and free call out of line so that the library (built
 * with ASan too) poisons free objects: use after free or reset is reported.
 * Build the library and its users the same way.
 */
#ifndef MEMRES_OBJPOOL_H
#define MEMRES_OBJPOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "memres/resource.h"
#include "memres/tree.h"
#include "memres/bits/objpool.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mr_objpool mr_objpool;

typedef struct mr_objpool_options {
    mr_resource *upstream;      /* NULL: mr_get_default_resource() at create time */
    size_t objects_per_block;   /* objects in each block; 0: 1024 */
    bool   thread_safe;         /* any thread may allocate and free (see "Threads" below);
                                   objects are then at least 16 bytes */
    const char *name;           /* shown in reports (memres/tree.h); not copied;
                                   NULL: "objpool" */
    mr_node *parent;            /* the node this pool dies with (memres/tree.h);
                                   NULL: a root.  With upstream NULL, the upstream
                                   is the parent's upstream */
} mr_objpool_options;

/* The objects per block when the options say 0. */
#define MR_OBJPOOL_DEFAULT_OBJECTS_PER_BLOCK ((size_t)1024)

/* Creates a pool of objects of object_size bytes aligned to align.  opts may
 * be NULL (all defaults).  Only the pool's header (a few hundred bytes) is
 * taken from upstream now; the first block comes with the first
 * allocation.  Each block is exactly objects_per_block * (rounded size)
 * bytes, requested from upstream with the pool's alignment (any power of
 * two the upstream supports: 4096 and above with the malloc resource); the
 * list of blocks is kept apart from them, so no block carries a header.
 * Errors: NULL with errno = EINVAL when object_size is 0, align is 0 or not
 * a power of two, or the rounded size or a block's size (size times
 * objects_per_block) does not fit in PTRDIFF_MAX; ENOMEM when the upstream
 * cannot give the header. */
MR_API mr_objpool *mr_objpool_create(size_t object_size, size_t align, const mr_objpool_options *opts);

/* Destroys the pool's children (memres/tree.h), returns every block and the
 * header to upstream.  NULL: no-op.  Every object from the pool becomes
 * invalid. */
MR_API void mr_objpool_destroy(mr_objpool *p);

/* Allocates one object (mr_objpool_object_size(p) bytes, aligned to the
 * pool's alignment, uninitialised).  Failure: NULL, errno = ENOMEM, nothing
 * changed.  The object lives until it is freed, or the pool is reset,
 * released or destroyed.
 * Common case inline, no call: pop the free list, else bump in the block. */
static inline void *mr_objpool_alloc(mr_objpool *p)
{
#if !MR_CHECKED
    void *obj = mri_objpool_take(p);
    if (MR_LIKELY(obj != NULL))
        return obj;
    obj = mri_objpool_tc_take(p);
    if (MR_LIKELY(obj != NULL))
        return obj;
#endif
    return mri_objpool_alloc_slow(p);
}

/* Returns obj (from mr_objpool_alloc on this pool, not freed since) to the
 * pool; it is the next object mr_objpool_alloc hands out.  obj NULL: no-op.
 * Never calls upstream; memory goes back on release or destroy.  Freeing an
 * object twice or one from elsewhere corrupts the pool (mr_objpool_check
 * finds it; ASan builds report the use after free that follows); code
 * built without NDEBUG reports an object freed twice to the violation
 * handler and ignores the second free (MR_FREE_CHECK, config.h).  Code built
 * without NDEBUG also reports, at the free, a pointer the pool did not hand
 * out, and ignores that free: the pool finds the object's block from its
 * address in O(1). */
static inline void mr_objpool_free(mr_objpool *p, void *obj)
{
    if (MR_FREE_CHECK && !mri_objpool_free_ok(p, obj))
        return; /* reported */
#if !MR_CHECKED
    if (MR_LIKELY(mri_objpool_put(p, obj)))
        return;
    if (mri_objpool_tc_put(p, obj))
        return;
#endif
    mri_objpool_free_slow(p, obj);
}

/* ---- the per-thread handle: a thread's own entry to a pool ----
 * As memres/pools.h's (mr_pools_local): the calling thread's cache of a
 * thread-safe pool, looked up once, whose mr_objpool_local_alloc and
 * mr_objpool_local_free are the unsynchronised pool's pop and push on the
 * thread's own list, with no table load; an object from either door may
 * be freed through the other, by any thread.  A pool that is not
 * thread-safe has a handle too (one for every thread), whose calls go out
 * of line to mr_objpool_alloc / mr_objpool_free. */
typedef struct mr_objpool_local mr_objpool_local;

/* The calling thread's handle of p, with mr_pools_local_get's contract:
 * thread-safe p, the thread's cache, made on its first use of p (NULL,
 * errno = ENOMEM when it cannot be), valid until the thread exits or p is
 * destroyed (reset, release and mr_objpool_thread_flush keep it), for the
 * calling thread only, the same on every call; out of line, take it once.
 * Not thread-safe p: a handle valid until p is destroyed.  p NULL: NULL,
 * errno = EINVAL. */
MR_API mr_objpool_local *mr_objpool_local_get(mr_objpool *p);

/* mr_objpool_alloc for the pool of l (from mr_objpool_local_get, not
 * NULL), with its contract.  Inline, no call in the common case: a pop or
 * a carve on the thread's own list. */
static inline void *mr_objpool_local_alloc(mr_objpool_local *l)
{
#if !MR_CHECKED
    const struct mri_tc_local *h = mri_objpool_local_h(l);
    void *obj = mri_tc_take(mri_tc_local_slot(h, 0), h->key);
    if (MR_LIKELY(obj != NULL))
        return obj;
#endif
    return mri_objpool_local_alloc_slow(l);
}

/* mr_objpool_free for the pool of l, with its contract: obj from
 * mr_objpool_alloc or mr_objpool_local_alloc on that pool (any thread's
 * handle, or none); NULL: a no-op.  Inline, no call in the common case: a
 * push on the thread's own list. */
static inline void mr_objpool_local_free(mr_objpool_local *l, void *obj)
{
    if (MR_FREE_CHECK && !mri_objpool_free_ok((mr_objpool *)mri_objpool_local_h(l)->pool, obj))
        return; /* reported */
#if !MR_CHECKED
    const struct mri_tc_local *h = mri_objpool_local_h(l);
    if (MR_LIKELY(obj != NULL) && MR_LIKELY(mri_tc_put(mri_tc_local_slot(h, 0), obj, h->key, h->mark)))
        return;
#endif
    mri_objpool_local_free_slow(l, obj);
}

/* Thread-safe pools only: the calling thread hands back the objects it
 * caches for p.  Automatic when the thread exits.  A pool that is not
 * thread-safe: no-op.  NULL: no-op. */
MR_API void mr_objpool_thread_flush(mr_objpool *p);

/* Destroys the pool's children (memres/tree.h), then frees every object at
 * once and keeps every block: the next allocations
 * carve the same blocks again, in the same order, with no upstream call.
 * O(1) (O(blocks used) in ASan builds, which poison them). */
MR_API void mr_objpool_reset(mr_objpool *p);

/* Destroys the pool's children and returns the children it kept for reuse
 * (memres/tree.h), frees every object and returns every block (and the
 * block list) upstream; the pool keeps only its header and stays usable. */
MR_API void mr_objpool_release(mr_objpool *p);

/* Fills *out (mr_stats is in resource.h).  O(1).
 *   in_use      live objects * mr_objpool_object_size(p)
 *   held        bytes held from upstream: header, blocks and block list,
 *               and the children kept for reuse (memres/tree.h)
 *   allocations successful mr_objpool_alloc calls (and resource allocates)
 *   upstream_*  successful upstream allocate / deallocate calls */
MR_API void mr_objpool_stats(const mr_objpool *p, mr_stats *out);

/* The rounded object size: what every object may use, and the stride. */
MR_API size_t mr_objpool_object_size(const mr_objpool *p);

/* Verifies the pool's invariants: the current block and bump pointer, every
 * free-list entry an object boundary inside the carved part of a block,
 * no cycle, free + live == carved objects, held bytes == header + blocks +
 * block list.  O(free objects * log blocks).  Returns true when they hold;
 * otherwise prints the first violation to stderr and returns false. */
MR_API bool mr_objpool_check(const mr_objpool *p);

/* The pool as an mr_resource (owned by the pool, valid until destroy).
 * allocate(size, align) gives an object when size <= the rounded object size
 * and align <= the pool's alignment (size 0 too); larger sizes fail with
 * ENOMEM, larger alignments with EINVAL.  deallocate frees the object (size
 * and align are not needed).  Equal only to itself.  Thread-safe exactly
 * when the pool is. */
MR_API mr_resource *mr_objpool_resource(mr_objpool *p);

/* The pool whose mr_objpool_resource() view r is; NULL when r is NULL or any
 * other resource.  O(1), calls nothing through r.  Lets a wrapper handed an
 * mr_resource (the C++ bridge, memres.hpp) use mr_objpool_alloc /
 * mr_objpool_free inline. */
MR_API mr_objpool *mr_objpool_of_resource(mr_resource *r);

/* The pool's node in the tree of lifetimes (memres/tree.h).  A thread-safe
 * pool's children may be created and destroyed from any thread. */
MR_API mr_node *mr_objpool_node(mr_objpool *p);

#ifdef __cplusplus
}
#endif
#endif /* MEMRES_OBJPOOL_H */
