/* SPDX-License-Identifier: MIT */
/* memres/blocks.h -- the caching block pool (the page source under it is
 * memres/pages.h).
 *
 * An mr_blocks hands out fixed-size blocks (default 64 KiB, any
 * power of two from MR_BLOCKS_MIN_SIZE up, 2 MiB and more), each aligned to
 * its size, so the block that holds any address is found by masking
 * (mr_blocks_block_of).  Blocks put back are cached for the next get, up to
 * max_free bytes; beyond that they go back to the upstream at once.  Cached
 * blocks are returned on demand by mr_blocks_trim and all at destroy.  This is
 * GCC's memory-block-pool and APR's allocator with max_free: it removes the
 * malloc/mmap churn under arenas and pools that are created and destroyed
 * over and over.  mr_blocks_resource() lets arenas and pools stack on a pool.
 *
 * mr_blocks_shared() is the one process-wide pool (the only global of memres
 * besides the default resource).  It keeps a small cache of blocks per thread
 * in front of its shared list, so that most gets and puts take no lock; a
 * thread's cache goes back to the shared list when the thread exits.
 *
 * Thread-safety: every pool is thread-safe -- any thread may get, put, use
 * the resource view, trim, read stats, check.  Pools from mr_blocks_create
 * take their mutex on every get and put (a block is 64 KiB of work, so an
 * uncontended lock is noise); only the shared pool has per-thread caches,
 * because it is never destroyed (a destroyable pool could not reclaim the
 * caches of other threads).  The upstream of a pool is only ever called with
 * the pool's lock held, so it need not be thread-safe itself.  Create and
 * destroy of one pool must not race with its other uses.  fork(): the
 * shared pool is usable in the child (its lock is held across fork; the
 * caches of the other threads are lost to the child, their blocks stay
 * counted as in use there); a private pool that another thread was using at
 * the moment of fork is, like any mutex, unusable in the child.
 *
 * Errors: a failed call returns NULL with errno = ENOMEM (the upstream could
 * not give memory, a size is impossible) or EINVAL (bad options) and changes
 * no state.  Nothing aborts or prints (except mr_blocks_check on failure).
 */
#ifndef MEMRES_BLOCKS_H
#define MEMRES_BLOCKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memres/pages.h"
#include "memres/resource.h"
#include "memres/tree.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- block pool ---- */

typedef struct mr_blocks mr_blocks;

/* The default and smallest block sizes, and the default max_free. */
#define MR_BLOCKS_DEFAULT_SIZE     ((size_t)64 << 10)
#define MR_BLOCKS_MIN_SIZE         ((size_t)64)
#define MR_BLOCKS_DEFAULT_MAX_FREE ((size_t)32 << 20)
/* max_free value that caches every block put back until trim or destroy. */
#define MR_BLOCKS_UNLIMITED        ((size_t)-1)

typedef struct mr_blocks_options {
    mr_resource *upstream;  /* where blocks (and requests larger than a block,
                               through mr_blocks_resource) come from;
                               NULL: mr_page_resource().  Called only under
                               the pool's lock; must not call back into this
                               pool; must outlive the pool. */
    size_t block_size;      /* power of two >= MR_BLOCKS_MIN_SIZE; 0: 64 KiB.
                               With the page source, sizes below the page size
                               still map a page per block. */
    size_t max_free;        /* most bytes of free blocks kept for reuse;
                               0: MR_BLOCKS_DEFAULT_MAX_FREE (32 MiB);
                               MR_BLOCKS_UNLIMITED: keep all; a value below
                               block_size (e.g. 1): keep none */
    mr_huge_pages huge_pages; /* blocks of MR_HUGE_PAGE_SIZE or more from
                               mr_page_resource_huge() (pages.h: the same rule
                               as the arena's).  AUTO (0): when the upstream is
                               the page source (NULL) or the malloc resource;
                               ON (true): always; OFF: never.  Smaller blocks
                               are unaffected. */
    const char *name;       /* shown in reports (memres/tree.h); not copied;
                               NULL: "blocks" */
    mr_node *parent;        /* the node this pool dies with (memres/tree.h);
                               NULL: a root.  With upstream NULL, the upstream
                               is the parent's upstream */
} mr_blocks_options;

/* Creates a block pool.  opts may be NULL (all defaults).  No block is taken
 * until the first get; the pool's own header (a few hundred bytes) is taken
 * from the upstream now (a page, with the page source).
 * Errors: NULL with EINVAL (block_size not a power of two, below
 * MR_BLOCKS_MIN_SIZE or above PTRDIFF_MAX; huge_pages not one of the three
 * values), ENOMEM (the upstream failed). */
MR_API mr_blocks *mr_blocks_create(const mr_blocks_options *opts);

/* Destroys the pool's children (memres/tree.h), returns every cached block
 * and the header to the upstream.  NULL: no-op.
 * Every block got and every allocation from mr_blocks_resource(b) must have
 * been put back / deallocated first (checked in debug builds); they are not
 * tracked, so destroy cannot return them.  The shared pool is never
 * destroyed: mr_blocks_destroy(mr_blocks_shared()) does nothing. */
MR_API void mr_blocks_destroy(mr_blocks *b);

/* The process-wide pool: 64 KiB blocks from mr_page_resource(), max_free
 * MR_BLOCKS_DEFAULT_MAX_FREE in its shared list, plus up to 8 blocks
 * (512 KiB) in a per-thread cache of each thread that uses it; a thread's
 * cache is flushed to the shared list when the thread exits (not when the
 * process exits: the memory then goes with the process).  Thread-safe.
 * Never NULL; lives as long as the process. */
MR_API mr_blocks *mr_blocks_shared(void);

/* The pool's node in the tree of lifetimes (memres/tree.h), named
 * "mr_blocks_shared" for the shared pool.  A block pool's children may be
 * created and destroyed from any thread. */
MR_API mr_node *mr_blocks_node(mr_blocks *b);

/* One block of mr_blocks_block_size(b) bytes, aligned to that size, with
 * unspecified contents (a reused block keeps what it held, a fresh one from
 * the page source is zero).  A cached block when there is one (no upstream
 * call; no lock for the shared pool's per-thread cache), else a new one from
 * the upstream.  Failure: NULL, errno = ENOMEM (or the upstream's errno),
 * nothing changed.  The block is the caller's until mr_blocks_put. */
MR_API void *mr_blocks_get(mr_blocks *b);

/* Gives back a block that mr_blocks_get(b) (or b's resource for a request of
 * at most one block) returned.  It is cached for reuse, or returned to the
 * upstream when the pool already caches max_free bytes.  block NULL: no-op.
 * Any thread may put a block another thread got.  Never fails. */
MR_API void mr_blocks_put(mr_blocks *b, void *block);

/* The block size of b.  Thread-safe; never changes. */
MR_API size_t mr_blocks_block_size(const mr_blocks *b);

/* The start of the block of size block_size (a power of two) that contains
 * p: the owner of an address, found by masking.  p may point anywhere in the
 * block, one past the end excluded. */
static inline void *mr_blocks_block_of(const void *p, size_t block_size)
{
    return (void *)((uintptr_t)p & ~(uintptr_t)(block_size - 1));
}

/* Returns every cached block to the upstream now, and the children the
 * pool kept for reuse (memres/tree.h).  For the shared pool: the calling
 * thread's cache and the shared list (other threads' caches are theirs
 * until they use or flush them).  Returns the bytes returned.  NULL: 0. */
MR_API size_t mr_blocks_trim(mr_blocks *b);

/* The pool as an mr_resource (owned by the pool, valid until destroy; never
 * NULL).  allocate(size, align) with size <= block size and align <= block
 * size is served by one whole block (size 0 too); larger sizes or
 * alignments pass through to the pool's upstream and are returned to it by
 * deallocate, which tells the two apart by size and align.  Errors as the
 * upstream's; size > PTRDIFF_MAX: NULL, errno = ENOMEM.  Arenas and pools
 * stack on it (give them block_size equal to the pool's: a smaller request
 * still takes a whole block).  Thread-safe as the pool.  Equal only to
 * itself. */
MR_API mr_resource *mr_blocks_resource(mr_blocks *b);

/* Fills *out (mr_stats is in resource.h); O(threads using the shared pool)
 * under the pool's lock:
 *   held        bytes of blocks held from the upstream + bytes passed through
 *               + the children kept for reuse (memres/tree.h); the header
 *               is in mr_node_stats only
 *   in_use      bytes of blocks handed out and not put back + bytes passed
 *               through (held - in_use is what the pool caches, per-thread
 *               caches included)
 *   peak_held   most bytes held at once
 *   allocations successful gets (resource allocations included)
 *   upstream_allocations / upstream_deallocations  calls to the upstream for
 *               blocks and passed-through requests (the header excluded)
 * For the shared pool the per-thread figures are read without stopping their
 * threads: exact when they are quiescent, a snapshot otherwise. */
MR_API void mr_blocks_stats(const mr_blocks *b, mr_stats *out);

/* Verifies the pool's invariants: the free list is finite, its blocks are
 * aligned to the block size and number nfree <= max_free / block_size;
 * cached (free + per-thread) <= held; the thread registry is consistent.
 * Returns true when they hold; otherwise prints the first violation to
 * stderr and returns false. */
MR_API bool mr_blocks_check(const mr_blocks *b);

#ifdef __cplusplus
}
#endif
#endif /* MEMRES_BLOCKS_H */
