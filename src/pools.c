/* SPDX-License-Identifier: MIT */
/* src/pools.c -- size-class pools (std::pmr::unsynchronized_pool_resource,
 * PostgreSQL's AllocSet): classes, refill, lifecycle, stats, the node.  The
 * classes' sizes are memres/bits/classes.h; chunks and their records,
 * chunks.c; requests the classes do not serve, direct.c; what the pool
 * gives back while it runs, trim.c; the thread-safe engine, tsafe.c; the
 * walker, pools_check.c.
 *
 * What it is for: many objects of many sizes, freed one by one or all at
 * once, by a caller who knows each size when it frees (C++ allocators, a
 * compiler's nodes, Lua): the class of a block is computed from (size,
 * align) again, so a block has no header and free writes one link word.
 *
 * Classes.  Each has an intrusive free list (LIFO: the block freed last is
 * reused first, warm in cache) and a bump region [bump, end) in its current
 * chunk.  Allocation pops the free list, else bumps, else (here) moves to
 * the next kept chunk (after a reset) or takes a new chunk from upstream;
 * the inline paths (memres/bits/pools.h) do the first two.  A request
 * with an alignment above 16 takes the class of its size rounded up to a
 * multiple of the alignment: blocks of a class are aligned to the largest
 * power of two dividing its size, and so are its chunks.  The exact sizes
 * are classes after the size classes, whose block size is the exact size;
 * only the slow paths reach them (the inline paths stop below them).
 *
 * Chunks (the rule is chunks.h's): each next one of a class twice the
 * blocks of the last, up to the cap.  Each class's records form a list in
 * order of first use:
 *
 *     chunks -> [carved] -> ... -> [current: bump..end] -> [kept] -> ... NULL
 *
 * Reset empties every free list and makes every class's first chunk
 * current again: the same chunks are carved again in the same order, with
 * no upstream call.  Release returns chunks and records.  The inline paths
 * count allocations and frees per class (one add each): live blocks are
 * their difference.
 *
 * Invariants (mr_pools_check), for every class c of size s:
 *   free + live == capacity, where
 *       capacity = sum of blocks over c's chunks,
 *       free     = free-list length + (end - bump) / s
 *                  + blocks of the kept chunks after the current one,
 *       live     = allocations - frees;
 *   no chunk    =>  current == NULL, bump == end == 0, free list empty;
 *   current     =>  base <= bump <= end == base + blocks * s, s | end - bump;
 *   every free-list entry is a block boundary in the carved part of a chunk
 *   of c (a chunk before current, or current below bump); no cycle.
 * And for the pool (the first two are the ledger's):
 *   held == header + record pages + chunks + direct blocks with their pads;
 *   upstream_allocations - upstream_deallocations
 *        == 1 + record pages + chunks + direct blocks.
 *
 * In ASan builds (track.h) chunks are poisoned when taken and at reset,
 * exactly the requested bytes of a block are unpoisoned when handed out (so
 * writing into the class rounding is reported too), and a freed block is
 * poisoned whole; the link word of a free block is unpoisoned only while
 * it is read or written.  Freeing a block twice reads its first byte, now
 * poisoned, and is reported.
 *
 * Thread-safe pools keep no class array: their classes, chunks and caches
 * are the engine's (tsafe.c); their blocks are at least two words.
 *
 * Not supported: freeing with a size or alignment other than the
 * allocation's (undefined; mr_pools_check finds some of it, and code built
 * without NDEBUG has it reported at the free when it names another class:
 * mri_pools_free_ok, the chunks' address map, addrmap.h).
 */
#include <string.h>

#include "os.h"
#include "pools_impl.h"
#include "track.h"

#define LINK MRI_LINK
#define INLINE_ALIGN_MAX ((size_t)16)      /* alignments the classes take by or-ing */
#define HEADER_ALIGN ((size_t)64)          /* classes one cache line each */

_Static_assert(sizeof(struct mri_pools_class) == 64 || sizeof(void *) != 8, "a class is one cache line");
_Static_assert(MR_POOLS_MAX_POOL_BLOCK <= MRI_CHUNK_HARD_MAX_BYTES, "every class fits a chunk");
_Static_assert((MR_POOLS_MAX_POOL_BLOCK & (MR_POOLS_MAX_POOL_BLOCK - 1)) == 0, "the largest class is a power of two");
_Static_assert(MRI_MASK_WORDS * 64 <= MRI_TC_MAX_CLASSES, "mri_tc_none covers every class of a pool");
_Static_assert(MR_POOLS_MAX_ALIGN == MRI_CLASS_ALIGN_MAX, "one largest class alignment");

/* ---- classes ---- */

/* Is a request pooled?  If so *cls is its class.  The inline paths decide
 * the same for align <= 16 and 1 <= size <= hot.pool_max. */
static inline __attribute__((always_inline)) bool pooled(const mr_pools *p, size_t size, size_t align, size_t *cls)
{
    size_t n = size != 0 ? size : 1;
    if (align > INLINE_ALIGN_MAX) {
        if (align > MR_POOLS_MAX_ALIGN || !mri_align_up(n, align, &n))
            return false;
        align = INLINE_ALIGN_MAX; /* n is a multiple of align: the or changes nothing */
    } else if (n > p->hot.pool_max && n <= p->pool_max) {
        size_t e = mri_align_up_nocheck(n, 16);
        for (size_t k = 0; k < p->nclasses - p->nsized; k++)
            if (p->exact[k] == e) {
                *cls = p->nsized + k;
                return true;
            }
    }
    if (n > p->pool_max)
        return false;
    size_t x = mri_pools_x(n, align);
    *cls = mri_pools_class_of(p->tc != NULL ? mri_pools_ts_of(x) : x);
    return true;
}

/* The exact sizes of the options, rounded, ascending, without repeats or
 * class sizes, into p->exact; false when one is out of range. */
static bool exact_sizes(mr_pools *p, const mr_pools_options *o)
{
    if (o->exact_count > MR_POOLS_MAX_EXACT || (o->exact_count != 0 && o->exact_sizes == NULL))
        return false;
    size_t n = 0;
    for (size_t k = 0; k < o->exact_count; k++) {
        size_t e = o->exact_sizes[k];
        if (e < MR_POOLS_EXACT_MIN || e > p->pool_max)
            return false;
        e = mri_align_up_nocheck(e, 16);
        size_t j = 0;
        while (j < n && p->exact[j] < e)
            j++;
        if (e == mri_pools_class_size_of(e - 1) || (j < n && p->exact[j] == e))
            continue; /* a class's size already, or a repeat */
        memmove(&p->exact[j + 1], &p->exact[j], (n - j) * sizeof p->exact[0]);
        p->exact[j] = e;
        n++;
    }
    p->nclasses = p->nsized + n;
    p->hot.pool_max = mri_pools_inline_max(p);
    return true;
}

/* Makes a fresh chunk current for class c: the next kept one, else a new
 * one (twice the last's blocks, capped).  false, errno set, nothing changed
 * on failure. */
static MR_NOINLINE bool class_refill(mr_pools *p, struct mri_pools_class *c)
{
    const size_t i = (size_t)(c - p->hot.classes);
    struct mri_chunk *cur = c->current;
    struct mri_chunk *r = cur != NULL ? cur->next : NULL;
    const size_t s = c->size;
    bool fresh = r == NULL;
    if (fresh) {
        const size_t cap = mri_chunk_cap(s, p->max_blocks_opt);
        size_t n = cur == NULL ? mri_chunk_first(s) : cur->blocks <= cap / 2 ? cur->blocks * 2 : cap;
        if (n > cap)
            n = cap;
        size_t bytes;
        if (!mri_chunk_layout(s, &n, cap, true, &bytes))
            return false;
        r = mri_chunk_new(&p->chunks, bytes, n, s, mri_pools_class_align(s));
        if (r == NULL)
            return false;
        if (cur != NULL)
            cur->next = r;
        else
            c->chunks = r;
        p->taken += bytes;
        if (mri_os_inner_pages((void *)r->base, bytes) != 0) /* something for purge to give back */
            mri_mask_set(p->purge_mask, i);
    }
    MR_ASSERT_INTERNAL(r->blocks >= 1 && r->base % mri_pools_class_align(s) == 0);
    c->current = r;
    c->bump = r->base;
    c->end = r->base + r->blocks * s;
    p->cold[i].carved += r->blocks;
    if (r != c->chunks)
        mri_mask_set(p->trim_mask, i);
    if (fresh)
        mri_pools_after_take(p);
    return true;
}

void mri_pools_class_rewind(mr_pools *p, size_t i)
{
    struct mri_pools_class *c = &p->hot.classes[i];
    struct mri_chunk *r = c->chunks;
    if (MRI_TRACKING)
        for (struct mri_chunk *q = r; q != NULL; q = q->next)
            mri_track_poison((void *)q->base, q->bytes);
    c->free = NULL;
    c->frees = c->allocations;
    c->current = r;
    c->bump = r != NULL ? r->base : 0;
    c->end = r != NULL ? r->base + r->blocks * c->size : 0;
    p->cold[i] = (struct mri_pools_cold){r != NULL ? r->blocks : 0, c->frees, 0, false, c->allocations, p->taken};
}

/* Is ptr on class i's free list (the calling thread's, thread-safe)? */
static MR_NOINLINE bool freed_twice(mr_pools *p, size_t i, const void *ptr)
{
    const void *b = p->tc != NULL ? NULL : p->hot.classes[i].free;
    while (b != NULL && b != ptr)
        b = mri_link_load(b, p->hot.key);
    return b != NULL || (p->tc != NULL && mri_tc_listed(p->tc, i, ptr));
}

/* ---- allocation ---- */

MR_API MR_NOINLINE void *mri_pools_alloc_slow(mr_pools *p, size_t size, size_t align)
{
    MR_ASSERT(p != NULL, "mr_pools_alloc: pool is NULL");
    if (MR_UNLIKELY(!mri_is_pow2(align)))
        return mri_fail(EINVAL);
    size_t i;
    if (!pooled(p, size, align, &i))
        return mri_direct_alloc(p, size, align);
    void *b;
    if (p->tc != NULL) {
        b = mri_tc_alloc(p->tc, i);
        if (b != NULL)
            mri_track_unpoison(b, size);
        return b;
    }
    struct mri_pools_class *c = &p->hot.classes[i];
    b = c->free;
    if (b != NULL) { /* only callers built with ASan come here with a free block */
        c->free = mri_link_get(b, p->hot.key);
    } else {
        if (c->bump == c->end && !class_refill(p, c))
            return NULL; /* errno set, nothing changed */
        b = (void *)c->bump;
        c->bump += c->size;
        if (MR_FREE_CHECK && !MRI_TRACKING && c->size >= 16)
            mri_mark_set(b, 0); /* carved again after a reset: no stale mark */
    }
    mri_track_unpoison(b, size);
    c->allocations++;
    MRI_WALK(p, mri_pools_walk);
    return b;
}

MR_API MR_NOINLINE void mri_pools_free_slow(mr_pools *p, void *ptr, size_t size, size_t align)
{
    MR_ASSERT(p != NULL, "mr_pools_free: pool is NULL");
    if (ptr == NULL || MRI_MISUSE(!mri_is_pow2(align), ptr, "mr_pools_free: alignment is not a power of two"))
        return; /* no allocation had it */
    size_t i;
    if (!pooled(p, size, align, &i)) {
        mri_direct_free(p, ptr, size, align);
        return;
    }
    /* A live block's requested bytes are unpoisoned; touching the first one
     * of a block already freed (double free, free after reset) is reported.
     * Else a block that holds the pool's mark (MR_FREE_CHECK) is looked for
     * on its free list, only then. */
    if (MRI_TRACKING && size != 0)
        (void)*(volatile const char *)ptr;
    if (!MRI_TRACKING && mri_pools_size_of(p, i) >= 16 && mri_mark_test(ptr, p->hot.mark) && freed_twice(p, i, ptr)) {
        mri_misuse("mr_pools_free: the block was freed twice", ptr, __FILE__, __LINE__, __func__);
        return;
    }
    if (p->tc != NULL) {
        mri_tc_free(p->tc, ptr, i);
        return;
    }
    struct mri_pools_class *c = &p->hot.classes[i];
    MR_ASSERT_INTERNAL(((uintptr_t)ptr & (mri_pools_class_align(c->size) - 1)) == 0);
    mri_track_unpoison(ptr, LINK);
    mri_link_store(ptr, c->free, p->hot.key);
    mri_track_poison(ptr, c->size);
    c->free = ptr;
    c->frees++;
    MRI_WALK(p, mri_pools_walk);
}

/* The check at the free of code built without NDEBUG (MR_FREE_CHECK,
 * config.h): ptr must be a block boundary in a chunk of the class that
 * size and align name, or a direct block when they name none (the map of
 * the chunks and direct blocks says in O(1)).  A bad free is reported and
 * refused.  A library built with NDEBUG keeps no map: always true. */
static const char *const free_verdicts[] = {
    [MRI_FREE_OK] = "",
    [MRI_FREE_FOREIGN] = "mr_pools_free: not a block of this pool",
    [MRI_FREE_OTHER_CLASS] = "mr_pools_free: the size or alignment is of another class than the block's",
    [MRI_FREE_SINGLE] = "mr_pools_free: a direct block freed with a pooled size",
    [MRI_FREE_INTERIOR] = "mr_pools_free: not the start of a block",
};

MR_API MR_NOINLINE bool mri_pools_free_ok(mr_pools *p, void *ptr, size_t size, size_t align)
{
    size_t i;
    if (!MRI_ADDRMAP || p == NULL || ptr == NULL || !mri_is_pow2(align))
        return true; /* the free's own checks */
    const size_t expect = pooled(p, size, align, &i) ? mri_pools_size_of(p, i) : 0; /* 0: direct */
    mri_pools_lock(p);
    enum mri_free_verdict v = mri_addrmap_check(mri_pools_up(p)->map, ptr, expect);
    mri_pools_unlock(p);
    if (MR_LIKELY(v == MRI_FREE_OK))
        return true;
    mri_misuse(free_verdicts[v], ptr, __FILE__, __LINE__, __func__);
    return false;
}

/* Reached when the inline path cannot keep the block: classes differ, a
 * direct block, NULL, an alignment above 16, or a checked build (which comes
 * here for every call, to move the poisoned tail). */
MR_API MR_NOINLINE void *mri_pools_realloc_slow(mr_pools *p, void *ptr, size_t old_size, size_t new_size,
                                                size_t align)
{
    MR_ASSERT(p != NULL, "mr_pools_realloc: pool is NULL");
    if (MR_UNLIKELY(!mri_is_pow2(align)))
        return mri_fail(EINVAL);
    if (ptr == NULL)
        return mr_pools_alloc(p, new_size, align);
    size_t io, in;
    if (pooled(p, old_size, align, &io) && pooled(p, new_size, align, &in) && io == in) {
        /* the same block: only the bytes a user may touch change */
        mri_track_poison(ptr, mri_pools_size_of(p, io));
        mri_track_unpoison(ptr, new_size);
        return ptr;
    }
    void *q = mr_pools_alloc(p, new_size, align);
    if (q == NULL)
        return NULL; /* errno set; ptr untouched */
    memcpy(q, ptr, old_size < new_size ? old_size : new_size);
    mr_pools_free(p, ptr, old_size, align);
    return q;
}

MR_API struct mri_pools_class *mri_pools_class_for(mr_pools *p, size_t size, size_t align)
{
    if (p->tc != NULL || !MRI_POOLS_ALIGN_OK(align) || size - 1 >= p->hot.alloc_max) /* size 0: wraps */
        return NULL;
    return mri_pools_class_in(p->hot.classes, size - 1, mri_pools_xbits(align));
}

/* ---- the per-thread handle ---- */

MR_API mr_pools_local *mr_pools_local_get(mr_pools *p)
{
    if (p == NULL)
        return mri_fail(EINVAL);
    struct mri_tc_local *l = p->tc != NULL ? mri_tc_local_get(p->tc) : &p->local;
    return (mr_pools_local *)(void *)l; /* NULL: errno = ENOMEM */
}

/* The handle's slow paths: a thread-safe pool's are its own (the cache
 * they find from the thread's entry is the handle's); a pool that is not
 * thread-safe takes its inline paths from here. */
MR_API MR_NOINLINE void *mri_pools_local_alloc_slow(mr_pools_local *l, size_t size, size_t align)
{
    MR_ASSERT(l != NULL, "mr_pools_local_alloc: handle is NULL");
    mr_pools *p = ((struct mri_tc_local *)(void *)l)->pool;
    if (p->tc == NULL && MRI_POOLS_ALIGN_OK(align))
        return mri_pools_alloc_in(p, size, align, mri_pools_xbits(align));
    return mri_pools_alloc_slow(p, size, align);
}

MR_API MR_NOINLINE void mri_pools_local_free_slow(mr_pools_local *l, void *ptr, size_t size, size_t align)
{
    MR_ASSERT(l != NULL, "mr_pools_local_free: handle is NULL");
    mr_pools *p = ((struct mri_tc_local *)(void *)l)->pool;
    if (p->tc == NULL && MRI_POOLS_ALIGN_OK(align))
        mri_pools_free_in(p, ptr, size, align, mri_pools_xbits(align));
    else
        mri_pools_free_slow(p, ptr, size, align);
}

MR_API void mr_pools_thread_flush(mr_pools *p)
{
    if (p != NULL && p->tc != NULL)
        mri_tc_flush(p->tc);
}

/* ---- the resource view ---- */

static void *view_allocate(mr_resource *self, size_t size, size_t align)
{
    return mr_pools_alloc(mri_container_of(self, mr_pools, resource), size, align);
}

static void view_deallocate(mr_resource *self, void *ptr, size_t size, size_t align)
{
    mr_pools_free(mri_container_of(self, mr_pools, resource), ptr, size, align);
}

static const struct mr_resource_ops view_ops = {view_allocate, view_deallocate, NULL};

MR_API mr_resource *mr_pools_resource(mr_pools *p)
{
    MR_ASSERT(p != NULL, "mr_pools_resource: pool is NULL");
    return &p->resource;
}

MR_API mr_pools *mr_pools_of_resource(mr_resource *r)
{
    return r != NULL && r->ops == &view_ops ? mri_container_of(r, mr_pools, resource) : NULL;
}

/* ---- lifetime ---- */

/* The engine of a thread-safe pool, in its header block at off. */
static void start_engine(mr_pools *p, size_t off)
{
    p->tc = mri_tc_layout((char *)p + off, p->nclasses, &p->ledger, p->upstream, p->hot.key);
    for (size_t i = 0; i < p->nclasses; i++) {
        struct mri_tc_class *cls = &p->tc->classes[i];
        cls->size = mri_pools_size_of(p, i);
        cls->align = mri_pools_class_align(cls->size);
        cls->first_blocks = mri_chunk_first(cls->size);
        cls->max_blocks = mri_chunk_cap(cls->size, p->max_blocks_opt);
        cls->round = true;
    }
    p->tc->local = (struct mri_tc_local){p->hot.pool_max, p->hot.key, p->hot.mark, p};
    mri_tc_start(p->tc);
    p->hot.guard = UINTPTR_MAX;      /* the inline free's unsynchronised part never applies (alloc's: alloc_max 0) */
    p->hot.ts_max = p->hot.pool_max; /* one compare picks the thread-safe parts */
    p->hot.tc_ref = mri_tc_ref(p->tc->index);
}

MR_API mr_pools *mr_pools_create(const mr_pools_options *opts)
{
    mr_pools_options o = {0};
    if (opts != NULL)
        o = *opts;
    mr_resource *up = mri_node_begin(o.parent, o.upstream, mr_get_default_resource, "mr_pools_create");
    if (up == NULL)
        return NULL;
    size_t largest = o.largest_required_pool_block != 0 ? o.largest_required_pool_block : MR_POOLS_DEFAULT_POOL_BLOCK;
    if (largest > MR_POOLS_MAX_POOL_BLOCK)
        largest = MR_POOLS_MAX_POOL_BLOCK;
    /* the largest class a multiple of 16, so that the inline paths' or with
     * an alignment of 16 stays within the classes */
    mr_pools shape = {.nsized = mri_pools_class_of((largest - 1) | (INLINE_ALIGN_MAX - 1)) + 1};
    shape.pool_max = shape.hot.pool_max = mri_pools_class_size(shape.nsized - 1);
    if (!exact_sizes(&shape, &o))
        return mri_fail(EINVAL);
    const size_t nclasses = shape.nclasses;
    MR_ASSERT_INTERNAL(nclasses <= MRI_MASK_WORDS * 64);
    size_t off = mri_align_up_nocheck(sizeof(struct mr_pools), HEADER_ALIGN);
    size_t lock_off = mri_align_up_nocheck(off + mri_tc_bytes(nclasses), alignof(mri_lock));
    size_t bytes = o.thread_safe ? lock_off + sizeof(mri_lock)
                                 : off + nclasses * (sizeof(struct mri_pools_class) + sizeof(struct mri_pools_cold));
    mri_ledger ledger = {0};
    mr_pools *p = mri_node_header(&ledger, up, bytes, HEADER_ALIGN, o.thread_safe ? lock_off : 0);
    if (p == NULL)
        return NULL;
    *p = shape; /* the classes and the inline bound */
    mri_lock *tree_lock = o.thread_safe ? (mri_lock *)(void *)((char *)p + lock_off) : NULL;
    p->ledger = ledger;
    p->hot.key = mri_os_random();
    p->hot.mark = mri_os_random() | 1; /* never 0: a cleared mark */
    p->resource.ops = &view_ops;
    p->upstream = up;
    p->header_bytes = bytes;
    p->max_blocks_opt = o.max_blocks_per_chunk;
    p->chunks = (struct mri_chunks){.ledger = &p->ledger, .upstream = up};
    p->direct.prev = p->direct.next = &p->direct;
    if (o.thread_safe) {
        start_engine(p, off);
    } else {
        p->hot.classes = (struct mri_pools_class *)(void *)((char *)p + off);
        p->cold = (struct mri_pools_cold *)(void *)(p->hot.classes + nclasses);
        p->hot.alloc_max = p->hot.pool_max;
        p->hot.tc_ref = mri_tc_ref(MRI_TC_NONE);
        p->local = (struct mri_tc_local){0, p->hot.key, p->hot.mark, p};
        for (size_t i = 0; i < nclasses; i++)
            p->hot.classes[i].size = mri_pools_size_of(p, i);
        MRI_WALK_NOW(p, mri_pools_walk);
    }
    mri_node_create(&p->node, &mri_pools_node_ops, o.name, o.parent, up, tree_lock, NULL);
    return p;
}

/* Every chunk and direct block back upstream; the children are gone. */
static void release(mr_pools *p);

MR_API void mr_pools_release(mr_pools *p)
{
    MR_ASSERT(p != NULL, "mr_pools_release: pool is NULL");
    if (!mri_node_enter(&p->node, "mr_pools_release"))
        return;
    if (p->node.child != NULL)
        mri_node_unwind(&p->node, 0);
    mri_node_drop_kept(&p->node);
    release(p);
}

static void release(mr_pools *p)
{
    mri_direct_release_all(p);
    if (p->tc != NULL) {
        mri_tc_reset(p->tc, true);
        return;
    }
    for (size_t i = 0; i < p->nclasses; i++) {
        struct mri_pools_class *c = &p->hot.classes[i];
        const size_t align = mri_pools_class_align(c->size);
        for (struct mri_chunk *r = c->chunks, *next; r != NULL; r = next) {
            next = r->next;
            mri_chunk_free(&p->chunks, r, align);
        }
        c->chunks = NULL;
        mri_pools_class_rewind(p, i);
    }
    mri_chunks_release(&p->chunks);
    memset(p->purge_mask, 0, sizeof p->purge_mask);
    memset(p->trim_mask, 0, sizeof p->trim_mask);
    MR_ASSERT_INTERNAL(p->ledger.held == p->header_bytes);
    MRI_WALK_NOW(p, mri_pools_walk);
}

MR_API void mr_pools_reset(mr_pools *p)
{
    MR_ASSERT(p != NULL, "mr_pools_reset: pool is NULL");
    if (!mri_node_enter(&p->node, "mr_pools_reset"))
        return;
    if (p->node.child != NULL)
        mri_node_unwind(&p->node, 0);
    mri_direct_release_all(p);
    if (p->tc != NULL) {
        mri_tc_reset(p->tc, false);
        return;
    }
    for (size_t i = 0; i < p->nclasses; i++)
        mri_pools_class_rewind(p, i);
    MRI_WALK_NOW(p, mri_pools_walk);
}

/* node_ops.free: the children are gone. */
static void node_free(mr_node *n)
{
    mr_pools *p = mri_container_of(n, mr_pools, node);
    mri_node_drop_kept(n);
    if (p->tc != NULL) {
        mri_direct_release_all(p);
        mri_tc_fini(p->tc); /* the caches too, and no thread finds them again */
    } else {
        release(p);
    }
    mri_node_release(n, p, p->header_bytes, HEADER_ALIGN, &p->ledger);
}

MR_API void mr_pools_destroy(mr_pools *p)
{
    if (p != NULL)
        mr_node_destroy(&p->node);
}

MR_API mr_node *mr_pools_node(mr_pools *p) { return &p->node; }

/* ---- queries ---- */

MR_API void mr_pools_stats(const mr_pools *p, mr_stats *out)
{
    MR_ASSERT(p != NULL && out != NULL, "mr_pools_stats: NULL argument");
    size_t in_use = 0, allocations = 0;
    for (size_t i = 0; i < p->nclasses; i++) {
        size_t a, f;
        if (p->tc != NULL) { /* a snapshot: each count is read once, while threads go on */
            mri_tc_counts(p->tc, i, &a, &f);
        } else {
            a = p->hot.classes[i].allocations;
            f = p->hot.classes[i].frees;
        }
        in_use += (a > f ? a - f : 0) * mri_pools_size_of(p, i);
        allocations += a;
    }
    mri_pools_lock((mr_pools *)p); /* the lock is not part of the value */
    mri_ledger_stats(&p->ledger, out);
    out->in_use = in_use + p->direct_bytes;
    out->allocations = allocations + p->direct_allocations;
    mri_pools_unlock((mr_pools *)p);
    mri_node_add_kept(&p->node, out);
}

MR_API MR_NOINLINE size_t mri_pools_block_size_slow(const mr_pools *p, size_t size, size_t align)
{
    MR_ASSERT(p != NULL, "mr_pools_block_size: pool is NULL");
    if (!mri_is_pow2(align))
        return 0;
    size_t i;
    if (pooled(p, size, align, &i))
        return mri_pools_size_of(p, i);
    return mri_direct_fits(size, align) ? size : 0;
}

MR_API void mr_pools_get_options(const mr_pools *p, mr_pools_options *out)
{
    MR_ASSERT(p != NULL && out != NULL, "mr_pools_get_options: NULL argument");
    out->upstream = p->upstream;
    out->max_blocks_per_chunk = p->max_blocks_opt;
    out->largest_required_pool_block = p->pool_max;
    out->thread_safe = p->tc != NULL;
    out->exact_sizes = p->exact;
    out->exact_count = p->nclasses - p->nsized;
    out->name = mri_node_name(&p->node);
    out->parent = p->node.parent;
}

/* ---- the node (src/tree.h) ---- */

static void node_figures(const mr_node *n, struct mri_figures *f)
{
    const mr_pools *p = mri_container_of(n, mr_pools, node);
    mr_pools_stats(p, &f->s);
    f->blocks = f->s.upstream_allocations - f->s.upstream_deallocations;
    f->free_chunks = 0;
    if (p->tc == NULL) /* free blocks: each class's list length, without a walk */
        for (size_t i = 0; i < p->nclasses; i++) {
            const struct mri_pools_class *c = &p->hot.classes[i];
            size_t bump = c->chunks != NULL ? (c->end - c->bump) / c->size : 0;
            size_t live = c->allocations - c->frees;
            f->free_chunks += p->cold[i].carved > live + bump ? p->cold[i].carved - live - bump : 0;
        }
}

static void node_held(const mr_node *n, size_t *bytes, size_t *blocks)
{
    const mr_pools *p = mri_container_of(n, mr_pools, node);
    *bytes = p->ledger.held;
    *blocks = p->ledger.upstream_allocations - p->ledger.upstream_deallocations;
}

static mr_node *node_of(mr_resource *r)
{
    return r->ops == &view_ops ? &mri_container_of(r, mr_pools, resource)->node : NULL;
}

const struct mri_node_ops mri_pools_node_ops = {
    .kind = "pools",
    .node_of = node_of,
    .free = node_free,
    .figures = node_figures,
    .held = node_held,
};
