/* SPDX-License-Identifier: MIT */
/* memres/pools.h -- size-class pools: many sizes, freed one by one, fast
 * (std::pmr::unsynchronized_pool_resource and synchronized_pool_resource,
 * PostgreSQL's AllocSet).
 *
 * A request is served from the pool of its size class: a free list of
 * blocks of one size, refilled from chunks taken from the upstream.  The
 * caller passes the size (and alignment) to mr_pools_free, so the class is
 * computed again from them: no header before a block, no lookup.  Freed
 * blocks are reused LIFO.
 *
 * Size classes: 8, 16, ... 256 (8-byte steps), then eight in each power of
 * two (288, 320, ... 512, 576, ... 1024, 1152, ...): a request above 256
 * bytes loses at most 12.5% to rounding, one below less than 8 bytes.  The
 * class of a request is the smallest whose blocks hold size bytes and are
 * aligned to align; pass the alignment the object needs (8 or less: 8-byte
 * granularity; 16, what malloc gives: multiples of 16).
 * mr_pools_block_size() says what a request gets.
 *
 * Direct requests: sizes above largest_required_pool_block (rounded up to a
 * class) and alignments above MR_POOLS_MAX_ALIGN go to the upstream with a
 * small header (32 bytes, or one alignment unit), are returned upstream by
 * mr_pools_free at once, and by release and destroy when still held.
 *
 * Exact sizes: above 1 KiB the classes are an eighth of a power of two
 * apart, so a program whose big blocks come in a few sizes in great numbers
 * (SQLite's page-cache entries and journal chunks) can lose up to 12.5% of
 * each.  A size in exact_sizes (MR_POOLS_EXACT_MIN up to the largest pooled
 * size) gets a class of its own whose blocks are that size rounded up to
 * 16; a request with an alignment of 16 or less whose size rounds up to it
 * is served there (mr_pools_block_size says so).  A size that is a class's
 * already, and a repeated one, are left as they are.  The inline paths then
 * stop below the class of the smallest exact size: larger requests take
 * one call more.
 *
 * Chunks: a class's first chunk holds about 4 KiB of blocks, each next one
 * twice as many, up to max_blocks_per_chunk blocks (default: 16384 blocks
 * and 64 KiB).  A chunk is the bytes its blocks need rounded to 64 bytes or
 * to pages, never a power of two plus a header.
 *
 * Memory goes back upstream on release and destroy, at once for direct
 * requests, and -- pools that are not thread-safe -- while the pool runs:
 * after the pool takes memory from upstream, a class whose free list holds
 * whole chunks gives them back (keeping a current chunk's worth), and a
 * class that stood idle (no live block, no allocation since the previous
 * take, and as many bytes taken by the pool since as it has carved) gives
 * the pages of its chunks to the OS (MADV_DONTNEED; it keeps the chunks and
 * refaults them when used again).  No upstream call happens in
 * mr_pools_free, none in mr_pools_reset.
 *
 * Thread-safety: by default none; one pool belongs to one thread at a time.
 * Threads (thread_safe = true): any thread may call mr_pools_alloc,
 * mr_pools_free, mr_pools_realloc, mr_pools_block_size and mr_pools_stats
 * (a snapshot) at any time, the resource view's allocate and deallocate
 * too, and a block may be freed by a thread other than the one that
 * allocated it.  release, reset, destroy and mr_pools_check must not run
 * concurrently with any other call on the pool; a thread that used the pool
 * may exit at any time, also while another thread destroys it.  Each
 * (pool, thread) pair has a cache (80 bytes a class and 128, counted in
 * held; the thread's handle, mr_pools_local_get, is its header), so
 * the common case takes no lock and no atomic read-modify-write; a thread's
 * cache keeps at most about 32 KiB a class beyond the blocks of the chunks
 * it took itself, the rest goes to shared lists, so memory is bounded when
 * threads come and go (docs/design.md, "Threads").  The inline paths
 * serve the first 32 thread-safe pools and object pools alive at once;
 * the ones beyond that work the same with one call per operation.  Blocks
 * are then at least 16 bytes.  fork: the child can use every pool; the blocks other
 * threads cached stay held until release or destroy.
 *
 * Errors: a failed call returns NULL with errno = ENOMEM (the upstream could
 * not give memory, or the size cannot be represented) or EINVAL (alignment 0
 * or not a power of two, bad options: an exact size out of range, more than
 * MR_POOLS_MAX_EXACT of them, exact_count without exact_sizes) and leaves
 * the pool as it was.
 *
 * Sanitizers: built with AddressSanitizer (MR_SANITIZED) or against a
 * library built for Valgrind (MR_VALGRIND), alloc and free call out of line
 * and the library poisons free blocks and the slack after each request in
 * its block: use after free or reset, and overflow into the class rounding,
 * are reported.  Build the library and its users the same way.
 */
#ifndef MEMRES_POOLS_H
#define MEMRES_POOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "memres/resource.h"
#include "memres/tree.h"
#include "memres/bits/pools.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mr_pools mr_pools;

typedef struct mr_pools_options {
    mr_resource *upstream;              /* NULL: mr_get_default_resource() at create time */
    size_t max_blocks_per_chunk;        /* most blocks in one chunk of any class; 0: library
                                           default (16384 blocks, at most 64 KiB a chunk) */
    size_t largest_required_pool_block; /* larger requests go straight upstream; rounded up
                                           to a class, at most MR_POOLS_MAX_POOL_BLOCK;
                                           0: MR_POOLS_DEFAULT_POOL_BLOCK */
    bool   thread_safe;                 /* any thread may allocate and free (see "Threads" above) */
    const size_t *exact_sizes;          /* sizes served at their own size, not their class's
                                           (see "Exact sizes" above); NULL: none */
    size_t exact_count;                 /* entries in exact_sizes, at most MR_POOLS_MAX_EXACT */
    const char *name;                   /* shown in reports (memres/tree.h); not copied;
                                           NULL: "pools" */
    mr_node *parent;                    /* the node this pool dies with (memres/tree.h);
                                           NULL: a root.  With upstream NULL, the
                                           upstream is the parent's upstream */
} mr_pools_options;

/* largest_required_pool_block when the options say 0. */
#define MR_POOLS_DEFAULT_POOL_BLOCK ((size_t)64 * 1024)
/* The largest class; a larger largest_required_pool_block is lowered to it. */
#define MR_POOLS_MAX_POOL_BLOCK ((size_t)1024 * 1024)
/* The largest alignment pooled blocks give; larger alignments go upstream. */
#define MR_POOLS_MAX_ALIGN ((size_t)4096)
/* The most exact sizes a pool has, and the smallest one. */
#define MR_POOLS_MAX_EXACT ((size_t)8)
#define MR_POOLS_EXACT_MIN ((size_t)1025)

/* Creates a pool.  opts may be NULL (all defaults).  Only the header (about
 * 110 bytes a class, 10 KiB with the defaults; thread-safe, 240 a class) is
 * taken from upstream now; a class's chunks come with its first
 * allocation.  Errors: NULL with errno = ENOMEM (the upstream cannot give
 * the header) or EINVAL (bad options).  A thread-safe pool's per-thread
 * cache comes with each thread's first call (which then fails with ENOMEM
 * if the upstream cannot give it). */
MR_API mr_pools *mr_pools_create(const mr_pools_options *opts);

/* Destroys the pool's children (memres/tree.h), returns every chunk, every
 * direct block and the header upstream.  NULL: no-op.  Every pointer from
 * the pool becomes invalid. */
MR_API void mr_pools_destroy(mr_pools *p);

/* Allocates size bytes aligned to align (a power of two, any size: above
 * MR_POOLS_MAX_ALIGN it goes upstream).  size 0: a valid non-NULL pointer.
 * align 0 or not a power of two: NULL, errno = EINVAL.  Failure: NULL,
 * errno = ENOMEM, nothing changed.  The memory is uninitialised; size bytes
 * of it may be used (ask for mr_pools_block_size(p, size, align) bytes to
 * use the whole block: the same block, the same cost).
 * Inline, no call in the common case: the class, then a pop or a bump. */
static inline void *mr_pools_alloc(mr_pools *p, size_t size, size_t align)
{
    if (MR_LIKELY(MRI_POOLS_ALIGN_OK(align)))
        return mri_pools_alloc_in(p, size, align, mri_pools_xbits(align));
    return mri_pools_alloc_slow(p, size, align);
}

/* Returns ptr (from mr_pools_alloc(p, size, align), not freed since) to the
 * pool, with the same size and align.  ptr NULL: no-op.  A pooled block
 * goes on its class's free list, a direct block upstream at once.  A wrong
 * size or alignment, a double free or a foreign pointer corrupts the pool
 * (mr_pools_check finds most of it; ASan builds report the use after free
 * that follows); code built without NDEBUG reports a pooled block freed
 * twice to the violation handler and ignores the second free
 * (MR_FREE_CHECK, config.h).  Code built without NDEBUG also reports, at
 * the free, a pointer the pool did not hand out and a size of another class
 * (a direct block freed with a pooled size too), and ignores that free:
 * the pool finds the block's chunk from its address in O(1).  Inline, no
 * call in the common case: a push. */
static inline void mr_pools_free(mr_pools *p, void *ptr, size_t size, size_t align)
{
    if (MR_FREE_CHECK && !mri_pools_free_ok(p, ptr, size, align))
        return; /* reported */
    if (MR_LIKELY(MRI_POOLS_ALIGN_OK(align)))
        mri_pools_free_in(p, ptr, size, align, mri_pools_xbits(align));
    else
        mri_pools_free_slow(p, ptr, size, align);
}

/* Resizes ptr (from mr_pools_alloc(p, old_size, align), or NULL) to new_size
 * bytes with the same alignment and returns the block, which holds the
 * first min(old_size, new_size) bytes of the old one; free it with new_size
 * from then on.  Both sizes in one class (mr_pools_block_size): the same
 * block, inline, no call, no copy.  Otherwise a block of new_size's class
 * is allocated, the bytes copied and ptr freed.  ptr NULL:
 * mr_pools_alloc(p, new_size, align).  new_size 0: a block of the 0-byte
 * request's class (free it with size 0).  align 0 or not a power of two:
 * NULL, errno = EINVAL.  Failure: NULL, errno = ENOMEM, ptr untouched and
 * still valid with old_size (a shrink to another class can fail too).
 * ASan builds report a use of the bytes past new_size. */
static inline void *mr_pools_realloc(mr_pools *p, void *ptr, size_t old_size, size_t new_size, size_t align)
{
    return mri_pools_realloc_in(p, ptr, old_size, new_size, align);
}

/* The bytes a request of size bytes with alignment align reserves: its
 * class's block size when pooled, size itself when it goes upstream.  A
 * request of that many bytes gets a block of the same class, so a caller
 * who wants the rounding asks for it (and frees with either size).  0 when
 * align is 0 or not a power of two, or when no request of that size could
 * be satisfied.  O(1), no allocation; inline for pooled requests with
 * align <= 16.  Thread-safe: it reads only what create set. */
static inline size_t mr_pools_block_size(const mr_pools *p, size_t size, size_t align)
{
    return mri_pools_block_size_in(p, size, align);
}

/* ---- the per-thread handle: a thread's own entry to a pool ----
 *
 * mr_pools_alloc and mr_pools_free serve both kinds of pool from one
 * inline body: on a thread-safe pool they first tell the kinds apart, then
 * find the calling thread's cache through its table.  A thread that makes
 * many calls on one pool can look its cache up once instead: the handle is
 * that cache, and mr_pools_local_alloc / mr_pools_local_free on it are the
 * unsynchronised pool's pop and push on the thread's own lists (no kind
 * test, no table, no lock, no atomic read-modify-write).  Handle and pool
 * are two doors to one pool: a block from either may be freed through the
 * other, by this thread or, through its own handle or the pool, by any
 * other; mr_pools_stats, mr_pools_check and the reports see one pool.
 *
 * A pool that is not thread-safe has a handle too (the same for every
 * thread), whose calls go out of line to mr_pools_alloc / mr_pools_free:
 * correct, one call slower; code written against handles runs on either
 * kind of pool. */
typedef struct mr_pools_local mr_pools_local;

/* The calling thread's handle of p.  Thread-safe p: the thread's cache of
 * p, made now on the thread's first use of p (its first call may fail,
 * NULL with errno = ENOMEM, as that of mr_pools_alloc).  It is valid until
 * the thread exits or p is destroyed -- reset, release and
 * mr_pools_thread_flush keep it -- and only the calling thread may use it
 * (another thread takes its own); calling this again gives the same
 * handle.  O(1), out of line: take it once (per thread, per job), not per
 * allocation.  Not thread-safe p: a handle valid until p is destroyed,
 * for p's one thread at a time.  p NULL: NULL, errno = EINVAL. */
MR_API mr_pools_local *mr_pools_local_get(mr_pools *p);

/* mr_pools_alloc(p, size, align) for the pool of l (from
 * mr_pools_local_get, not NULL), with its contract: size 0, alignment,
 * failure (NULL, errno = ENOMEM or EINVAL, nothing changed) and block size
 * alike.  Inline, no call in the common case: the class, then a pop or a
 * carve on the thread's own lists. */
static inline void *mr_pools_local_alloc(mr_pools_local *l, size_t size, size_t align)
{
#if !MR_CHECKED
    const struct mri_tc_local *h = mri_pools_local_h(l);
    if (MR_LIKELY(size - 1 < h->max && MRI_POOLS_ALIGN_OK(align))) {
        void *b = mri_tc_take(mri_pools_local_slot(h, size, align), h->key);
        if (MR_LIKELY(b != NULL))
            return b;
    }
#endif
    return mri_pools_local_alloc_slow(l, size, align);
}

/* mr_pools_free(p, ptr, size, align) for the pool of l, with its contract:
 * ptr from mr_pools_alloc or mr_pools_local_alloc on that pool (through
 * any thread's handle, or none), freed with its size and align; NULL: a
 * no-op.  Inline, no call in the common case: a push on the thread's own
 * list. */
static inline void mr_pools_local_free(mr_pools_local *l, void *ptr, size_t size, size_t align)
{
    if (MR_FREE_CHECK && !mri_pools_free_ok((mr_pools *)mri_pools_local_h(l)->pool, ptr, size, align))
        return; /* reported */
#if !MR_CHECKED
    const struct mri_tc_local *h = mri_pools_local_h(l);
    if (MR_LIKELY(ptr != NULL && size - 1 < h->max && MRI_POOLS_ALIGN_OK(align)) &&
        MR_LIKELY(mri_tc_put(mri_pools_local_slot(h, size, align), ptr, h->key, h->mark)))
        return;
#endif
    mri_pools_local_free_slow(l, ptr, size, align);
}

/* Thread-safe pools: the calling thread hands back what it caches for p
 * (its free blocks and the rest of its carving go where every thread can
 * take them).  Automatic when the thread exits.  A pool that is not
 * thread-safe, or NULL: no-op. */
MR_API void mr_pools_thread_flush(mr_pools *p);

/* Destroys the pool's children and returns the children it kept for reuse
 * (memres/tree.h), frees every block and returns every chunk and direct
 * block upstream; the pool keeps its header and stays usable (chunk growth
 * starts again). */
MR_API void mr_pools_release(mr_pools *p);

/* Destroys the pool's children (memres/tree.h), then frees every block and
 * keeps every chunk: the next allocations carve the same chunks again with
 * no upstream call.  Direct blocks go upstream.  O(classes + direct blocks
 * + children). */
MR_API void mr_pools_reset(mr_pools *p);

/* The options in effect: the upstream in use, largest_required_pool_block
 * as rounded (the largest pooled size), max_blocks_per_chunk as given (0 if
 * defaulted), thread_safe as given, exact_sizes and exact_count: the exact
 * classes' block sizes (rounded, ascending; owned by the pool) and their
 * number, the name (the kind when none was given) and the parent now. */
MR_API void mr_pools_get_options(const mr_pools *p, mr_pools_options *out);

/* Fills *out (mr_stats is in resource.h).  O(classes).
 *   in_use      bytes of live blocks, each counted at its class size, plus the
 *               sizes of live direct requests
 *   held        bytes held from upstream: header, chunks, chunk records,
 *               direct blocks with their headers, thread caches, and the
 *               children kept for reuse (memres/tree.h)
 *   allocations successful allocations (mr_pools_alloc and the resource)
 *   upstream_*  successful upstream allocate / deallocate calls */
MR_API void mr_pools_stats(const mr_pools *p, mr_stats *out);

/* Verifies the pool's invariants: for every class its chunks, the bump
 * region inside the current chunk, every free block a block boundary in a
 * carved part of a chunk of its class, no cycle, free + live == capacity;
 * the direct blocks; held == what is held.  Thread-safe pools: also every
 * thread's cache and the shared lists, no block free twice; only while no
 * other thread uses the pool.  true when they hold; otherwise prints the
 * first violation to stderr and returns false. */
MR_API bool mr_pools_check(const mr_pools *p);

/* The pool as an mr_resource (owned by the pool, valid until destroy):
 * allocate = mr_pools_alloc, deallocate = mr_pools_free.  Equal only to
 * itself.  Thread-safe exactly when the pool is. */
MR_API mr_resource *mr_pools_resource(mr_pools *p);

/* The pool whose mr_pools_resource() view r is; NULL when r is NULL or any
 * other resource.  O(1); lets a wrapper handed an mr_resource (the C++
 * bridge) take the inline paths. */
MR_API mr_pools *mr_pools_of_resource(mr_resource *r);

/* The pool's node in the tree of lifetimes (memres/tree.h).  A thread-safe
 * pool's children may be created and destroyed from any thread. */
MR_API mr_node *mr_pools_node(mr_pools *p);

#ifdef __cplusplus
}
#endif
#endif /* MEMRES_POOLS_H */
