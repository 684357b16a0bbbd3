/* SPDX-License-Identifier: MIT */
/* memres/pools.h -- size-class pools: many sizes, freed one by one, fast
 * (std::pmr::unsynchronized_pool_resource, PostgreSQL's AllocSet).
 *
 * A request is served from the pool of its size class: a free list of
 * blocks of one size, refilled from chunks taken from the upstream resource.
 * Freeing a block pushes it on its class's free list; the next request of
 * that class gets it back (LIFO: likely still in cache).  Because the caller
 * passes the size (and alignment) to mr_pools_free, the class is computed
 * again from them: no header before the block, no lookup of the chunk.
 *
 * Size classes: 8, 16, 24, ... 256 (8-byte steps), then eight classes in
 * each power of two (288, 320, ... 512, 576, 640, ... 1024, 1152, ...), so
 * rounding wastes at most 12.5% of a request above 256 bytes (and < 8 bytes
 * below: a 24-, 40- or 56-byte struct costs its size).  The class of a
 * request is the smallest class that holds size bytes and whose blocks are
 * aligned to align, i.e. the class of max(size, align) rounded up to a
 * multiple of align; blocks of a class are aligned to the largest power of
 * two dividing the class size (at least 8, at most MR_POOLS_MAX_ALIGN).  So
 * an alignment of 8 or less gets 8-byte granularity, and 16 (what malloc
 * gives) the multiples of 16: pass the alignment the object needs.
 * mr_pools_block_size() says what a request gets.  (Thread-safe pools:
 * at least 16 bytes a block.)
 *
 * Direct requests: sizes above largest_required_pool_block (rounded up to a
 * class) and alignments above MR_POOLS_MAX_ALIGN go straight to the upstream
 * resource, with a 32-byte header (or one alignment unit, when it is larger)
 * before the block that links it into the pool's list of direct blocks, so
 * mr_pools_free returns such a block upstream at once and release/destroy
 * return any still held.
 *
 * Chunks: the first chunk of a class holds about 4 KiB of blocks (at least
 * one block), each next one twice as many blocks, up to max_blocks_per_chunk
 * blocks (default: 16384 blocks and at most 64 KiB per chunk).  A chunk is
 * exactly the bytes its blocks need, rounded to 64 bytes (below a page) or to
 * pages -- never a power of two plus a header: the chunk list lives apart
 * from the chunks.
 *
 * Memory comes back upstream on release or destroy, at once for direct
 * requests, and -- unsynchronised pools -- when whole chunks of a class
 * are free: after the pool takes memory from upstream (a new chunk, a
 * direct block), each class whose free list has grown enough since it was
 * last looked at (at least 64 KiB, and frees since then at least a quarter
 * of its free blocks) is walked once, and its chunks whose every block is
 * free go back upstream, except a current chunk's worth of free blocks that
 * the class keeps for its next swing.  So a program that moves from one
 * size to another holds about its peak, not the sum of every class's peak
 * (the Lua benchmark: 18.5 -> 13.0 MiB peak RSS with the 64 KiB chunks).
 * A walk passes over the free list once per 128 chunks, at most four times
 * (a class of more chunks is looked at a part per walk), so walks cost at
 * most 16 steps per free, amortised (4 for classes of up to 128 chunks),
 * and nothing on the inline paths; the
 * pool never calls upstream to give back from mr_pools_free.  Reset frees
 * every block and keeps every chunk.
 *
 * Memory: the same walk gives the OS the pages of idle classes
 * (unsynchronised pools).  A class with no live block, with no allocation
 * since the pool's previous upstream take, and since whose last use the
 * pool has taken at least as many bytes as the class has carved (so a
 * class used off and on refaults at most what the growth faults in), is
 * rewound (its free blocks forgotten, carving again from its first chunk)
 * and the whole pages inside its chunks are advised away (MADV_DONTNEED).
 * The chunks stay held (no upstream call, `held` unchanged), resident
 * memory drops, and the class takes its pages back one page fault at a
 * time when it is used again.  So a class that served one phase of the
 * program (a statement's sort buffers) does not stay resident through the
 * next.  The pages are inside what the upstream gave the pool, so any
 * upstream's memory may be advised (memory locked with mlock refuses the
 * advice and stays resident: the way to keep a latency-critical pool's
 * pages faulted in).
 *
 * Resizing: mr_pools_realloc keeps the block when the new size falls in the
 * same class (inline, no call), else moves it (allocate, copy, free).
 *
 * Thread-safety: by default none.  One pool belongs to one thread at a
 * time; distinct pools are independent.
 *
 * Threads (thread_safe = true).  Any thread may call mr_pools_alloc,
 * mr_pools_free, mr_pools_realloc, mr_pools_block_size and mr_pools_stats
 * (a snapshot) at any time, the resource view's allocate and deallocate
 * too, and a block may be freed by a thread other than the one that
 * allocated it.  release, reset, destroy and mr_pools_check must not run
 * concurrently with any other call on the same pool; a thread that used
 * the pool may exit at any time, also while another thread destroys it.
 *   How: each (pool, thread) pair has a cache -- per class, the free list
 *   and carving region an unsynchronised pool has -- so alloc and free
 *   stay inline, with no lock and no atomic read-modify-write: a lookup in
 *   a small per-thread table, then a pop or a push.  A free goes to the
 *   freeing thread's cache (the size says the class: no owner lookup).
 *   A cache keeps at most two batches (about 16 KiB, 2..128 blocks each)
 *   plus its own: the blocks of the chunks its thread took from upstream
 *   and of the lists exited threads left that it took over; past that,
 *   blocks go to the class's shared stack (a compare-and-swap; taking a
 *   batch locks a mutex per class).  An empty cache takes a batch, else a
 *   region handed back, else a chunk -- a new chunk only when the class
 *   has no free block the thread can reach; a thread's chunks of a class
 *   double with its own demand (its first is a first-size chunk however
 *   much other threads took).  At thread exit (or mr_pools_thread_flush)
 *   the cache's blocks go to the shared lists and the cache is kept for
 *   the next thread.
 *   Memory bound, per class: held blocks <= peak live + sum over the other
 *   threads of (2 batches + its own blocks + one carving region) + the
 *   chunk being taken; threads coming and going add
 *   nothing (docs/design.md).  Cost: 64 bytes per class per (pool, thread)
 *   (6 KiB with the 96 default classes), counted in held.
 *   fork: handlers (pthread_atfork) hold every lock of every thread-safe
 *   pool across fork, so the child can use every pool; the child loses
 *   the blocks the other threads cached (they stay held until release or
 *   destroy).
 *   A thread's table keeps 8 pools; a thread that alternates between more
 *   pools whose ids collide takes a short uncontended lock per switch.
 *
 * Errors: a failed call returns NULL with errno = ENOMEM (the upstream could
 * not give memory, or the size cannot be represented) or EINVAL (alignment 0
 * or not a power of two, bad options) and leaves the pool exactly as it was.
 *
 * Sanitizers: when this header is compiled with AddressSanitizer
 * (MR_SANITIZED) or against a library built for Valgrind (MR_VALGRIND;
 * MR_CHECKED covers both), alloc and free call out of line so that the library (built
 * with ASan too) poisons free blocks and the slack after each request inside
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
#include "memres/tcache.h"

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
} mr_pools_options;

/* largest_required_pool_block when the options say 0 (std::pmr in libstdc++
 * pools up to 4 KiB; buffers of a few KiB are common enough to pool). */
#define MR_POOLS_DEFAULT_POOL_BLOCK ((size_t)64 * 1024)
/* The largest class; a larger largest_required_pool_block is lowered to it. */
#define MR_POOLS_MAX_POOL_BLOCK ((size_t)1024 * 1024)
/* The largest alignment pooled blocks give; larger alignments go upstream. */
#define MR_POOLS_MAX_ALIGN ((size_t)4096)

/* Creates a pool.  opts may be NULL (all defaults).  Only the pool's header
 * (about 90 bytes per class: 8.5 KiB with the defaults; thread-safe, about
 * 180 bytes per class: 17 KiB) is taken from upstream
 * now; chunks come with the first allocation of each class.
 * Errors: NULL with errno = ENOMEM when the upstream cannot give the
 * header.  Thread-safe: each thread's cache comes with its first call
 * (an allocation then fails with ENOMEM if the upstream cannot give it). */
MR_API mr_pools *mr_pools_create(const mr_pools_options *opts);

/* Returns every chunk, every direct block and the header upstream.  NULL:
 * no-op.  Every pointer from the pool becomes invalid. */
MR_API void mr_pools_destroy(mr_pools *p);

/* Out-of-line slow paths of mr_pools_alloc and mr_pools_free; not for direct
 * use.  mri_pools_alloc_slow returns the block (or NULL with errno). */
MR_API MR_NOINLINE void *mri_pools_alloc_slow(mr_pools *p, size_t size, size_t align);
MR_API MR_NOINLINE void mri_pools_free_slow(mr_pools *p, void *ptr, size_t size, size_t align);
MR_API MR_NOINLINE void *mri_pools_realloc_slow(mr_pools *p, void *ptr, size_t old_size, size_t new_size,
                                                size_t align);
MR_API MR_NOINLINE size_t mri_pools_block_size_slow(const mr_pools *p, size_t size, size_t align);

/* Private: one size class.  Invariants: bump and end lie in the class's
 * current chunk (bump == end == 0 before its first chunk) and end - bump is
 * a multiple of size; every block on the free list holds the address of the
 * next one in its first word; free + live == capacity, where free counts the
 * free list, the blocks between bump and end and the blocks of the kept
 * chunks after the current one, and live == allocations - frees. */
struct mri_pools_class {
    void     *free;         /* most recently freed block; NULL: list empty */
    uintptr_t bump;         /* next never-used block of the current chunk */
    uintptr_t end;          /* end of the current chunk's blocks */
    size_t    size;         /* block size of this class */
    size_t    allocations;  /* blocks handed out so far */
    size_t    frees;        /* blocks given back so far (reset counts all live ones) */
    void     *chunks;       /* first chunk record (pools.c) */
    void     *current;      /* record of the chunk bump/end lie in */
};

/* Private: the fields the inline fast paths read, first in struct mr_pools. */
struct mri_pools_hot {
    struct mri_pools_class *classes;  /* the class array (in the header block); thread-safe:
                                         none */
    size_t alloc_max;                 /* pool_max; 0 when thread-safe: the unsynchronised
                                         alloc never applies */
    size_t pool_max;                  /* the largest pooled size (a class size) */
    uintptr_t key;                    /* free-list link encoding (mri_link_load) */
    uintptr_t guard;                  /* 0; thread-safe: UINTPTR_MAX (no pointer is above
                                         it: the unsynchronised free never applies) */
    uint64_t tc_id;                   /* thread-safe: the pool's id (memres/tcache.h); 0: not */
};

/* Private: the class of a request of x + 1 bytes (1 <= x + 1 <= 2^62),
 * x as mri_pools_x makes it.  Classes 0..31 are 8..256 (x >> 3); above,
 * class 8k - 40 + q holds the sizes (q << (k - 3), (q + 1) << (k - 3)] for
 * k = floor(log2 x) >= 8, q in 8..15.  Below 1024 (classes 0..47) a table
 * by x >> 3 answers: one load; above, a bit scan, two shifts, two adds.
 * The branch is at 1024, not 256: programs whose sizes fall on both sides
 * of 256 in no fixed order (16 B to 4 KiB, as a server's) mispredicted a
 * branch there on every other alloc and free: the request benchmark's
 * pools row went from 645-658 to 436-460 ms, churn's (8 B to 1 KiB) from
 * 370-374 to 331-351, with no row slower (docs/results/
 * 2026-12-01-class-table.txt).  Branch-free selects (a conditional move
 * between the shift and the bit-scan formula) took request to 268-318 ms
 * but cost 12-23% on a loop of one size through the resource interface
 * (list, 110 -> 122-134 ms): about six instructions more on every alloc
 * and free than this. */
static const unsigned char mri_pools_class_tab[128] = {
    0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25,
    26, 27, 28, 29, 30, 31, 32, 32, 32, 32, 33, 33, 33, 33, 34, 34, 34, 34, 35, 35, 35, 35, 36, 36, 36, 36,
    37, 37, 37, 37, 38, 38, 38, 38, 39, 39, 39, 39, 40, 40, 40, 40, 40, 40, 40, 40, 41, 41, 41, 41, 41, 41,
    41, 41, 42, 42, 42, 42, 42, 42, 42, 42, 43, 43, 43, 43, 43, 43, 43, 43, 44, 44, 44, 44, 44, 44, 44, 44,
    45, 45, 45, 45, 45, 45, 45, 45, 46, 46, 46, 46, 46, 46, 46, 46, 47, 47, 47, 47, 47, 47, 47, 47};
static inline size_t mri_pools_class_of(size_t x)
{
    if (MR_LIKELY(x < 1024))
        return mri_pools_class_tab[x >> 3];
    unsigned k = 63u ^ (unsigned)MR_CLZLL((unsigned long long)x); /* 63 ^ clz: one bsr */
    return (x >> (k - 3u)) + ((size_t)k << 3) - 40u;
}

/* Private: the block size of the class of mri_pools_class_of(x): (x | 7) + 1
 * below 256 (with bit 3 set: a multiple of 16), else ((x >> (k - 3)) + 1)
 * << (k - 3).  No table load. */
static inline size_t mri_pools_class_size_of(size_t x)
{
    if (MR_LIKELY(x < 256))
        return (x | 7u) + 1u;
    unsigned s = (63u ^ (unsigned)MR_CLZLL((unsigned long long)x)) - 3u;
    return ((x >> s) + 1u) << s;
}

/* Private: what the class functions take for a request of size >= 1 bytes
 * with alignment align <= 16: size - 1, with bit 3 set for an alignment of
 * 16 -- below 256 that makes the class index odd, i.e. a class that is a
 * multiple of 16 (blocks 16-aligned); above, every class is one and the
 * bit changes nothing. */
#define mri_pools_xbits(align) (((align) - 1) & ~(size_t)7)

/* Private: the class of x = size - 1 (no bits or-ed in) with xbits as
 * mri_pools_xbits (or align - 1): &classes[mri_pools_class_of(x | xbits)]
 * (from 256 every class is a multiple of 32, and the bit changes
 * nothing). */
static inline struct mri_pools_class *mri_pools_class_in(struct mri_pools_class *classes, size_t x, size_t xbits)
{
    return &classes[mri_pools_class_of(x | xbits)];
}
#define mri_pools_x(size, align) (((size) - 1) | mri_pools_xbits(align))
/* Private: x for a thread-safe pool, whose smallest class is 16 bytes (its
 * caches keep two words in a free block): class 0 is unused. */
#define mri_pools_ts_of(x) ((x) < 8 ? (size_t)8 : (x))

/* Private: is a request of size bytes with alignment align one the inline
 * paths serve (1 <= size <= pool_max, align a power of two <= 16)? */
#define MRI_POOLS_ALIGN_OK(align) ((align) - 1 < 16 && ((align) & ((align) - 1)) == 0)
#define MRI_POOLS_INLINE_OK(h, size, align) ((size) - 1 < (h)->pool_max && MRI_POOLS_ALIGN_OK(align))

/* Allocates size bytes aligned to align (a power of two, any size: above
 * MR_POOLS_MAX_ALIGN it goes upstream).  size 0: a valid non-NULL pointer
 * (a block of the smallest class that align allows).  align 0 or not a
 * power of two: NULL, errno = EINVAL.
 * Failure: NULL, errno = ENOMEM, nothing changed.  The memory is
 * uninitialised; size bytes of it may be used (to use the whole block, ask
 * for mr_pools_block_size(p, size, align) bytes: the same block, same cost).
 * Common case inline, no call: class lookup, pop the free list, else bump. */
static inline void *mri_pools_alloc_in(mr_pools *p, size_t size, size_t align, size_t xbits);
static inline void *mr_pools_alloc(mr_pools *p, size_t size, size_t align)
{
    if (MR_LIKELY(MRI_POOLS_ALIGN_OK(align)))
        return mri_pools_alloc_in(p, size, align, mri_pools_xbits(align));
    return mri_pools_alloc_slow(p, size, align);
}

/* Private: the unsynchronised fast paths of class c of p, for a caller
 * that knows p is not thread-safe and c is the class of the request (an
 * in-project client that checked once; mri_pools_alloc_in and
 * mri_pools_free_in check each time).  Take: a block from c's free list or
 * its chunk's bump region, else NULL (the caller then calls
 * mri_pools_alloc_slow); always NULL in checked builds. */
static inline void *mri_pools_class_take(mr_pools *p, struct mri_pools_class *c)
{
#if !MR_CHECKED
    const struct mri_pools_hot *h = (const struct mri_pools_hot *)(const void *)p;
    void *b = c->free;
    if (MR_LIKELY(b != NULL)) {
        c->free = mri_link_load(b, h->key);
        c->allocations++;
        return b;
    }
    uintptr_t q = c->bump;
    if (MR_LIKELY(q != c->end)) {
        MR_ASSUME(q != 0); /* a bump region is never at address 0 */
        /* the count first: a tail unlike the free-list path's, which the
         * compiler would otherwise merge with it, costing that path a
         * load and a store in place of one add to memory */
        c->allocations++;
        c->bump = q + c->size;
        return (void *)q;
    }
    return NULL;
#else
    (void)p, (void)c;
    return NULL;
#endif
}

/* Private: put, on the same terms (ptr not NULL): pushes ptr on c's free
 * list and returns true; false in checked builds (the caller then calls
 * mri_pools_free_slow). */
static inline bool mri_pools_class_put(mr_pools *p, struct mri_pools_class *c, void *ptr)
{
#if !MR_CHECKED
    const struct mri_pools_hot *h = (const struct mri_pools_hot *)(const void *)p;
    mri_link_store(ptr, c->free, h->key);
    c->free = ptr;
    c->frees++;
    return true;
#else
    (void)p, (void)c, (void)ptr;
    return false;
#endif
}

/* Private: the class array of a pool that is not thread-safe (class i at
 * [i], i = mri_pools_class_of(x)); NULL for a thread-safe one. */
static inline struct mri_pools_class *mri_pools_classes(mr_pools *p)
{
    return ((struct mri_pools_hot *)(void *)p)->classes;
}

/* Private: mr_pools_alloc for an align already known to be a power of two
 * <= 16, with xbits = mri_pools_xbits(align) or align - 1 (the same class:
 * the low three bits of x never change it, as its size is at least 8 and
 * x < 256 is shifted by 3); a caller whose align is not a constant -- the
 * C++ bridge -- passes align - 1 and pays no power-of-two test. */
static inline void *mri_pools_alloc_in(mr_pools *p, size_t size, size_t align, size_t xbits)
{
#if !MR_CHECKED
    struct mri_pools_hot *h = (struct mri_pools_hot *)(void *)p;
    size_t x = size - 1;
    if (MR_LIKELY(x < h->alloc_max)) {
        void *b = mri_pools_class_take(p, mri_pools_class_in(h->classes, x, xbits));
        if (MR_LIKELY(b != NULL))
            return b;
    } else if (h->tc_id != 0 && x < h->pool_max) {
        /* thread-safe: this thread's cache of the pool */
        struct mri_tc_entry *e = mri_tc_entry_of(h->tc_id);
        if (MR_LIKELY(e->id == h->tc_id)) {
            void *b = mri_tc_take(&e->slots[mri_pools_class_of(mri_pools_ts_of(x | xbits))], h->key);
            if (MR_LIKELY(b != NULL))
                return b;
        }
    }
#else
    (void)xbits;
#endif
    return mri_pools_alloc_slow(p, size, align);
}

/* Returns ptr (from mr_pools_alloc(p, size, align), not freed since) to the
 * pool, with the same size and align.  ptr NULL: no-op.  A pooled block goes
 * on its class's free list (no upstream call); a direct block goes upstream
 * at once.  A wrong size or alignment, a double free or a foreign pointer
 * corrupts the pool (mr_pools_check finds most of it; ASan builds report the
 * use after free that follows). */
static inline void mri_pools_free_in(mr_pools *p, void *ptr, size_t size, size_t align, size_t xbits);
static inline void mr_pools_free(mr_pools *p, void *ptr, size_t size, size_t align)
{
    if (MR_LIKELY(MRI_POOLS_ALIGN_OK(align)))
        mri_pools_free_in(p, ptr, size, align, mri_pools_xbits(align));
    else
        mri_pools_free_slow(p, ptr, size, align);
}

/* Private: mr_pools_free for an align known to be a power of two <= 16
 * (see mri_pools_alloc_in). */
static inline void mri_pools_free_in(mr_pools *p, void *ptr, size_t size, size_t align, size_t xbits)
{
#if !MR_CHECKED
    struct mri_pools_hot *h = (struct mri_pools_hot *)(void *)p;
    size_t x = size - 1;
    if (MR_LIKELY((uintptr_t)ptr > h->guard && x < h->pool_max)) { /* ptr != NULL */
        (void)mri_pools_class_put(p, mri_pools_class_in(h->classes, x, xbits), ptr);
        return;
    }
    if (h->tc_id != 0 && ptr != NULL && x < h->pool_max) {
        struct mri_tc_entry *e = mri_tc_entry_of(h->tc_id);
        if (MR_LIKELY(e->id == h->tc_id) &&
            MR_LIKELY(mri_tc_put(&e->slots[mri_pools_class_of(mri_pools_ts_of(x | xbits))], ptr, h->key)))
            return;
    }
#else
    (void)xbits;
#endif
    mri_pools_free_slow(p, ptr, size, align);
}

/* Resizes ptr (from mr_pools_alloc(p, old_size, align), or NULL) to
 * new_size bytes with the same alignment and returns the block, which holds
 * the first min(old_size, new_size) bytes of the old one; the block must
 * then be freed with new_size.  When both sizes fall in the same class (see
 * mr_pools_block_size) the block stays where it is: inline, no call, no
 * copy.  Otherwise a block of new_size's class is allocated, the bytes are
 * copied and ptr is freed.  ptr NULL: mr_pools_alloc(p, new_size, align).
 * new_size 0: a block of the 0-byte request's class (as mr_pools_alloc;
 * free it with size 0).  align 0 or not a power of two: NULL, errno =
 * EINVAL.  Failure: NULL, errno = ENOMEM, ptr untouched and still valid
 * with old_size (a shrink to another class can fail too).  ASan builds
 * report a use of the bytes past new_size. */
static inline void *mr_pools_realloc(mr_pools *p, void *ptr, size_t old_size, size_t new_size, size_t align)
{
#if !MR_CHECKED
    struct mri_pools_hot *h = (struct mri_pools_hot *)(void *)p;
    if (MR_LIKELY(ptr != NULL && MRI_POOLS_INLINE_OK(h, old_size, align) && new_size - 1 < h->pool_max &&
                  mri_pools_class_of(mri_pools_x(old_size, align)) == mri_pools_class_of(mri_pools_x(new_size, align))))
        return ptr;
#endif
    return mri_pools_realloc_slow(p, ptr, old_size, new_size, align);
}

/* Thread-safe pools only: the calling thread hands back what it caches for
 * p (its free blocks and the rest of its chunk carving go where every
 * thread can take them).  Automatic when the thread exits.  A pool that is
 * not thread-safe: no-op.  NULL: no-op. */
MR_API void mr_pools_thread_flush(mr_pools *p);

/* Frees every block and returns every chunk and direct block upstream; the
 * pool keeps only its header and stays usable (chunk growth starts again). */
MR_API void mr_pools_release(mr_pools *p);

/* Frees every block and keeps every chunk: the next allocations carve the
 * same chunks again with no upstream call.  Direct blocks are returned
 * upstream (they are not pooled).  O(classes + direct blocks) (plus the
 * bytes held in ASan builds, which poison them). */
MR_API void mr_pools_reset(mr_pools *p);

/* The bytes a request of size bytes with alignment align reserves: its
 * class's block size when pooled, size itself when it goes upstream.  A
 * request of that many bytes gets a block of the same class (nothing more),
 * so a caller who wants the rounding asks for it (and frees with either
 * size); writing past the size asked for is reported in ASan builds.
 * 0 when align is 0 or not a power of two, or when the request could never
 * be satisfied (size too large).  O(1), no allocation; inline for pooled
 * requests with align <= 16 (a bit scan and three shifts, no memory but
 * the pool's largest size), so a client may round every request (SQLite's
 * xRoundup).  Thread-safe: it reads only what create set. */
static inline size_t mr_pools_block_size(const mr_pools *p, size_t size, size_t align)
{
    const struct mri_pools_hot *h = (const struct mri_pools_hot *)(const void *)p;
    if (MR_LIKELY(MRI_POOLS_INLINE_OK(h, size, align))) {
        size_t b = mri_pools_class_size_of(mri_pools_x(size, align));
        return MR_LIKELY(b != 8 || h->tc_id == 0) ? b : 16; /* thread-safe: class 0 has two words */
    }
    return mri_pools_block_size_slow(p, size, align);
}

/* The options in effect: the upstream in use, largest_required_pool_block
 * as rounded (the largest pooled size), max_blocks_per_chunk as given (0 if
 * defaulted), thread_safe as given. */
MR_API void mr_pools_get_options(const mr_pools *p, mr_pools_options *out);

/* Fills *out (mr_stats is in resource.h).  O(classes).
 *   in_use      bytes of live blocks, each counted at its class size, plus the
 *               sizes of live direct requests
 *   held        bytes held from upstream: header, chunks, chunk list, direct
 *               blocks with their headers, thread caches (thread-safe)
 *   allocations successful allocations (mr_pools_alloc and the resource)
 *   upstream_*  successful upstream allocate / deallocate calls */
MR_API void mr_pools_stats(const mr_pools *p, mr_stats *out);

/* Verifies the pool's invariants: for every class, each chunk's record, the
 * bump region inside the current chunk, every free-list entry a block
 * boundary inside a chunk of its class, no cycle, free + live == capacity;
 * the direct-block list linked both ways with the counted blocks and bytes;
 * held == the sum of what is held.  O(free blocks * chunks per class).
 * Thread-safe: also every thread's cache and the shared lists, every free
 * block found once, free + live == capacity per class; only while no other
 * thread uses the pool.  Returns true when they hold; otherwise prints the
 * first violation to stderr and returns false. */
MR_API bool mr_pools_check(const mr_pools *p);

/* The pool as an mr_resource (owned by the pool, valid until destroy):
 * allocate = mr_pools_alloc, deallocate = mr_pools_free.  Equal only to
 * itself.  Thread-safe exactly when the pool is. */
MR_API mr_resource *mr_pools_resource(mr_pools *p);

/* The pool whose mr_pools_resource() view r is; NULL when r is NULL or any
 * other resource.  O(1), calls nothing through r.  Lets a wrapper handed an
 * mr_resource (the C++ bridge, memres.hpp) use mr_pools_alloc / mr_pools_free
 * inline. */
MR_API mr_pools *mr_pools_of_resource(mr_resource *r);

#ifdef __cplusplus
}
#endif
#endif /* MEMRES_POOLS_H */
