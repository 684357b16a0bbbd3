/* SPDX-License-Identifier: MIT */
/* src/objpool.c -- a pool of fixed-size objects with an intrusive free list.
 *
 * What it is for: very many objects of one type whose lifetimes are
 * independent (an object store, tree nodes, order-book entries) or end
 * together (reset).  git's alloc.c and GCC's object_allocator are the models;
 * unlike git's, objects can be freed one by one, and unlike a general
 * allocator, an object costs exactly its (rounded) size: no header, no
 * size class.
 *
 * Algorithm.  Objects are carved from blocks of per_block objects, each block
 * exactly per_block * size bytes from upstream, aligned to the pool's
 * alignment.  The list of blocks is a separate array (the directory), not a
 * header in each block: a header would cost a whole alignment unit per block
 * for aligned objects, and would push a block of 1024 * 40 bytes (ten pages)
 * onto an eleventh page on a page-granular upstream.  The directory is in
 * order of first use:
 *
 *     blocks[0] ... blocks[used-1]   blocks[used] ... blocks[nblocks-1]
 *     \___ carved since reset ___/   \_________ spare, kept _________/
 *                      ^ current: hot.ptr .. hot.end
 *
 * mr_objpool_alloc pops the free list (the most recently freed object: warm
 * in cache, and the set of touched memory stays small), else carves the next
 * object of the current block (hot.ptr), else calls the slow path, which
 * makes the next spare block current or takes a new one from upstream.  Free
 * pushes the object on the free list; its first word holds the link.  Reset
 * empties the free list and sets used = 0, so the same blocks are carved
 * again in the same order without an upstream call.  Release returns every
 * block and the directory.
 *
 * The inline paths count allocations and frees (one add each); live objects
 * are their difference, so stats are O(1) and the fast paths carry nothing
 * else.
 *
 * Memory overhead for n objects: the unused tail of the current block (less
 * than one block), the directory (8 bytes per block, at most doubled by
 * growth) and the header.  2M objects of 40 bytes: about 52 KiB.
 *
 * Invariants (checked by mr_objpool_check), with carved = objects handed out
 * by bumping since the last reset = (used - 1) * per_block +
 * (hot.ptr - blocks[used-1]) / size:
 *   free + live == carved   (free: objects on the free list; live:
 *                            allocations - frees)
 *   used == 0  =>  hot.ptr == hot.end == 0
 *   used  > 0  =>  blocks[used-1] <= hot.ptr <= hot.end == blocks[used-1] + block_bytes
 *   every free object is an object boundary in blocks[0..used), below hot.ptr
 *   in the current block; the free list has no cycle
 *   held == sizeof(header) + nblocks * block_bytes + cap * sizeof(void *)
 *   upstream_allocations - upstream_deallocations == 1 + nblocks + (cap != 0)
 * (the last two are the ledger's, src/ledger.h).
 *
 * In ASan builds (track.h) blocks are poisoned when taken, objects are
 * unpoisoned when handed out and poisoned when freed or reset; the link word
 * of a free object is unpoisoned only while this file reads or writes it.
 * Freeing an object twice then writes to poisoned memory and is reported.
 *
 * Thread-safe pools (thread_safe = true) keep no directory: their blocks and
 * per-thread caches are the engine's (tsafe.c, one class).
 *
 * Not supported: objects of other sizes
 * (the resource view accepts smaller ones and hands out a whole object),
 * returning single blocks upstream before release (a block is free only when
 * all its objects are, which the pool does not track: that would cost a
 * per-block count on every free).  Freeing what is no object of the pool
 * corrupts it; code built without NDEBUG has that reported at the free
 * (mri_objpool_free_ok: the blocks' address map, addrmap.h).
 */
#include <string.h>

#include "addrmap.h"
#include "internal.h"
#include "ledger.h"
#include "memres/objpool.h"
#include "track.h"
#include "tree.h"
#include "tsafe.h"

#define LINK MRI_LINK
#define LINK_ALIGN ((size_t)alignof(void *))
#define HEADER_ALIGN ((size_t)64) /* hot fields in one cache line */
#define DIR_INITIAL ((size_t)8)

/* The handle of a pool that is not thread-safe: a header and, where a
 * thread-safe pool's handle has its cache's slot, an empty one with no
 * room (as mri_tc_none's), which sends every call out of line. */
struct objpool_local {
    struct mri_tc_local h;
    char pad[MRI_TC_LOCAL_SLOTS - sizeof(struct mri_tc_local)];
    struct mri_tc_slot none;
};
_Static_assert(offsetof(struct objpool_local, none) == MRI_TC_LOCAL_SLOTS, "the slot where a handle's is");

struct mr_objpool {
    struct mri_objpool_hot hot; /* first: read by the inline fast paths */
    mr_resource resource;       /* the mr_objpool_resource() view */
    mr_resource *upstream;
    void **blocks;         /* the directory: every block, in order of first use */
    size_t nblocks;        /* blocks held */
    size_t used;           /* blocks[0..used) carved since the last reset */
    size_t cap;            /* directory entries (0: no directory held) */
    size_t per_block;      /* objects per block */
    size_t block_bytes;    /* per_block * hot.size */
    size_t align;          /* alignment of objects and blocks, >= LINK_ALIGN */
    mri_ledger ledger;     /* upstream accounting, the header included */
    size_t header_bytes;   /* this struct (and, thread-safe, the engine after it) */
    struct mri_tc *tc;     /* thread_safe: the thread caches, one class (tsafe.c);
                              blocks/directory unused */
    struct mri_walk walk;  /* MR_DEBUG 3: when the next walk is due */
    struct mri_addrmap *map; /* MRI_ADDRMAP: the blocks, for the check at the free
                               (thread-safe: the engine's chunks have theirs) */
    mr_node node;          /* in the tree of lifetimes (thread-safe: its tree lock
                              follows the engine in the header block) */
    struct objpool_local local; /* not thread-safe: every thread's handle
                                   (mr_objpool_local_get), all out of line */
};

static MRI_UNUSED bool walk(const mr_objpool *p, size_t *steps);
extern const struct mri_node_ops mri_objpool_node_ops; /* in the table of kinds */

/* ---- blocks ---- */

static void give_back(mr_objpool *p, void *mem, size_t size, size_t align)
{
    mri_ledger_deallocate(&p->ledger, p->upstream, mem, size, align);
}

/* Takes a new block from upstream and appends it to the directory.  When the
 * directory is full, its doubled successor is requested first (the small
 * request, so a refused block costs one small round trip) and adopted only
 * once the block is granted.  All or nothing: on failure nothing is kept,
 * errno is ENOMEM and false is returned. */
static bool add_block(mr_objpool *p)
{
    void **dir = NULL;
    size_t ncap = 0, dir_bytes = 0;
    if (p->nblocks == p->cap) {
        ncap = DIR_INITIAL;
        if ((p->cap != 0 && mri_mul_overflow(p->cap, 2, &ncap)) || mri_mul_overflow(ncap, LINK, &dir_bytes) ||
            dir_bytes > MRI_MAX_SIZE) {
            errno = ENOMEM;
            return false;
        }
        dir = mri_ledger_allocate(&p->ledger, p->upstream, dir_bytes, LINK_ALIGN);
        if (MR_UNLIKELY(dir == NULL)) {
            errno = ENOMEM;
            return false;
        }
    }
    void *b = mri_ledger_allocate(&p->ledger, p->upstream, p->block_bytes, p->align);
    if (b != NULL && MR_UNLIKELY((uintptr_t)b > UINTPTR_MAX - p->block_bytes)) {
        /* hot.end would wrap; no real address space puts a block there */
        give_back(p, b, p->block_bytes, p->align);
        b = NULL;
    }
    if (MR_UNLIKELY(b == NULL)) {
        if (dir != NULL)
            give_back(p, dir, dir_bytes, LINK_ALIGN);
        errno = ENOMEM;
        return false;
    }
    MR_ASSERT_INTERNAL(((uintptr_t)b & (p->align - 1)) == 0);
    mri_track_poison(b, p->block_bytes);
    if (dir != NULL) {
        if (p->nblocks != 0)
            memcpy(dir, p->blocks, p->nblocks * LINK);
        if (p->blocks != NULL)
            give_back(p, p->blocks, p->cap * LINK, LINK_ALIGN);
        p->blocks = dir;
        p->cap = ncap;
    }
    p->blocks[p->nblocks++] = b;
    if (MRI_ADDRMAP)
        mri_addrmap_add(&p->map, (uintptr_t)b, p->block_bytes, p->hot.size);
    return true;
}

/* Makes the next block current: the next spare one, else a new one. */
static bool next_block(mr_objpool *p)
{
    if (p->used == p->nblocks && !add_block(p))
        return false;
    MR_ASSERT_INTERNAL(p->hot.free == NULL && p->hot.ptr == p->hot.end && p->used < p->nblocks);
    uintptr_t b = (uintptr_t)p->blocks[p->used++];
    p->hot.ptr = b;
    p->hot.end = b + p->block_bytes;
    return true;
}

/* ---- the resource view ---- */

static void *view_allocate(mr_resource *self, size_t size, size_t align)
{
    mr_objpool *p = mri_container_of(self, mr_objpool, resource);
    if (MR_UNLIKELY(size > p->hot.size))
        return mri_fail(ENOMEM);
    if (MR_UNLIKELY(align > p->align))
        return mri_fail(EINVAL);
    return mr_objpool_alloc(p);
}

static void view_deallocate(mr_resource *self, void *obj, size_t size, size_t align)
{
    mr_objpool *p = mri_container_of(self, mr_objpool, resource);
    if (MRI_MISUSE(size > p->hot.size || align > p->align, obj,
                   "mr_objpool_resource: deallocate of a size or alignment this pool never gives"))
        return;
    mr_objpool_free(p, obj);
}

static const struct mr_resource_ops view_ops = {view_allocate, view_deallocate, NULL};

MR_API mr_resource *mr_objpool_resource(mr_objpool *p)
{
    MR_ASSERT(p != NULL, "mr_objpool_resource: pool is NULL");
    return &p->resource;
}

/* ---- create / destroy ---- */

MR_API mr_objpool *mr_objpool_create(size_t object_size, size_t align, const mr_objpool_options *opts)
{
    if (!mri_is_pow2(align) || object_size == 0 || object_size > MRI_MAX_SIZE)
        return mri_fail(EINVAL);
    const bool ts = opts != NULL && opts->thread_safe;
    size_t a = align < LINK_ALIGN ? LINK_ALIGN : align;
    size_t min = ts ? 2 * LINK : LINK; /* thread caches keep two words in a free object */
    size_t size = object_size < min ? min : object_size;
    size_t per_block = (opts != NULL && opts->objects_per_block != 0) ? opts->objects_per_block
                                                                       : MR_OBJPOOL_DEFAULT_OBJECTS_PER_BLOCK;
    size_t block_bytes;
    if (!mri_align_up(size, a, &size) || size > MRI_MAX_SIZE || mri_mul_overflow(size, per_block, &block_bytes) ||
        block_bytes > MRI_MAX_SIZE)
        return mri_fail(EINVAL);
    mr_node *parent = opts != NULL ? opts->parent : NULL;
    mr_resource *up = mri_node_begin(parent, opts != NULL ? opts->upstream : NULL, mr_get_default_resource,
                                     "mr_objpool_create");
    if (up == NULL)
        return NULL;

    size_t off = mri_align_up_nocheck(sizeof(struct mr_objpool), HEADER_ALIGN);
    /* thread-safe: the engine, then the tree lock, after the struct */
    size_t lock_off = mri_align_up_nocheck(off + mri_tc_bytes(1), alignof(mri_lock));
    size_t header_bytes = ts ? lock_off + sizeof(mri_lock) : sizeof(struct mr_objpool);
    mri_ledger ledger = {0};
    mr_objpool *p = mri_node_header(&ledger, up, header_bytes, HEADER_ALIGN, ts ? lock_off : 0);
    if (MR_UNLIKELY(p == NULL))
        return mri_fail(ENOMEM);
    mri_lock *tree_lock = ts ? (mri_lock *)(void *)((char *)p + lock_off) : NULL;
    p->ledger = ledger;
    p->header_bytes = header_bytes;
    p->hot.size = size;
    p->hot.key = mri_os_random();
    p->hot.tc_ref = mri_tc_ref(MRI_TC_NONE); /* slots empty, no room; thread-safe: the engine's, below */
    p->hot.mark = mri_os_random() | 1; /* never 0: a cleared mark */
    p->resource.ops = &view_ops;
    p->upstream = up;
    p->per_block = per_block;
    p->block_bytes = block_bytes;
    p->align = a;
    p->local.h = (struct mri_tc_local){0, p->hot.key, p->hot.mark, p};
    if (ts) {
        p->hot.guard = UINTPTR_MAX;
        p->tc = mri_tc_layout((char *)p + off, 1, &p->ledger, up, p->hot.key);
        struct mri_tc_class *cls = &p->tc->classes[0];
        cls->size = size;
        cls->align = a;
        cls->first_blocks = cls->max_blocks = per_block;
        cls->round = false;
        p->tc->local = (struct mri_tc_local){size, p->hot.key, p->hot.mark, p};
        mri_tc_start(p->tc);
        p->hot.tc_ref = mri_tc_ref(p->tc->index);
    }
    mri_node_create(&p->node, &mri_objpool_node_ops, opts != NULL ? opts->name : NULL, parent, up, tree_lock, NULL);
    MRI_WALK_NOW(p, walk);
    return p;
}

static void release(mr_objpool *p);

/* node_ops.free: the children are gone. */
static void node_free(mr_node *n)
{
    mr_objpool *p = mri_container_of(n, mr_objpool, node);
    mri_node_drop_kept(n);
    if (p->tc != NULL)
        mri_tc_fini(p->tc); /* the caches too, and no thread finds them again */
    else
        release(p);
    mri_node_release(n, p, p->header_bytes, HEADER_ALIGN, &p->ledger);
}

MR_API void mr_objpool_destroy(mr_objpool *p)
{
    if (p != NULL)
        mr_node_destroy(&p->node);
}

MR_API mr_node *mr_objpool_node(mr_objpool *p) { return &p->node; }

/* ---- slow paths ---- */

MR_API MR_NOINLINE void *mri_objpool_alloc_slow(mr_objpool *p)
{
    MR_ASSERT(p != NULL, "mr_objpool_alloc: pool is NULL");
    struct mri_objpool_hot *h = &p->hot;
    if (p->tc != NULL) {
        void *obj = mri_tc_alloc(p->tc, 0);
        if (obj != NULL)
            mri_track_unpoison(obj, h->size);
        return obj;
    }
    void *obj = h->free;
    if (obj != NULL) { /* only callers built with ASan come here with a free object */
        h->free = mri_link_get(obj, h->key);
    } else {
        if (h->ptr == h->end && MR_UNLIKELY(!next_block(p)))
            return NULL; /* errno = ENOMEM, nothing changed */
        obj = (void *)h->ptr;
        h->ptr += h->size;
        if (MR_FREE_CHECK && !MRI_TRACKING && h->size >= 16)
            mri_mark_set(obj, 0); /* carved again after a reset: no stale mark */
    }
    mri_track_unpoison(obj, h->size);
    h->allocations++;
    MRI_WALK(p, walk);
    return obj;
}

/* Is obj on the free list (the calling thread's, thread-safe)? */
static MR_NOINLINE bool freed_twice(mr_objpool *p, const void *obj)
{
    if (p->tc != NULL)
        return mri_tc_listed(p->tc, 0, obj);
    for (const void *o = p->hot.free; o != NULL; o = mri_link_load(o, p->hot.key))
        if (o == obj)
            return true;
    return false;
}

/* The check at the free of code built without NDEBUG (MR_FREE_CHECK,
 * config.h): obj must be an object boundary in one of the pool's blocks
 * (the map says in O(1)).  A bad free is reported and refused.  A library
 * built with NDEBUG keeps no map: always true. */
MR_API MR_NOINLINE bool mri_objpool_free_ok(mr_objpool *p, void *obj)
{
    if (!MRI_ADDRMAP || p == NULL || obj == NULL)
        return true; /* the free's own checks */
    enum mri_free_verdict v;
    if (p->tc != NULL) {
        mri_tc_lock(p->tc);
        v = mri_addrmap_check(p->tc->chunks.map, obj, p->tc->classes[0].size);
        mri_tc_unlock(p->tc);
    } else {
        v = mri_addrmap_check(p->map, obj, p->hot.size);
    }
    if (MR_LIKELY(v == MRI_FREE_OK))
        return true;
    mri_misuse(v == MRI_FREE_INTERIOR ? "mr_objpool_free: not the start of an object"
                                      : "mr_objpool_free: not an object of this pool",
               obj, __FILE__, __LINE__, __func__);
    return false;
}

/* Reached from callers built with ASan, and for a suspected double free. */
MR_API MR_NOINLINE void mri_objpool_free_slow(mr_objpool *p, void *obj)
{
    MR_ASSERT(p != NULL, "mr_objpool_free: pool is NULL");
    if (obj == NULL)
        return;
    struct mri_objpool_hot *h = &p->hot;
    /* an object that holds the pool's mark (MR_FREE_CHECK) is looked for on
     * the free list, only then */
    if (!MRI_TRACKING && h->size >= 16 && mri_mark_test(obj, h->mark) && freed_twice(p, obj)) {
        mri_misuse("mr_objpool_free: the object was freed twice", obj, __FILE__, __LINE__, __func__);
        return;
    }
    if (p->tc != NULL) {
        if (MRI_TRACKING) /* a free object is poisoned: a double free is reported */
            (void)*(volatile const char *)obj;
        mri_tc_free(p->tc, obj, 0);
        return;
    }
    /* A live object is unpoisoned; writing the link into one already freed
     * (double free, free after reset) is what ASan reports here. */
    mri_link_store(obj, h->free, h->key);
    h->free = obj;
    h->frees++;
    mri_track_poison(obj, h->size);
    MRI_WALK(p, walk);
}

/* ---- the per-thread handle ---- */

MR_API mr_objpool_local *mr_objpool_local_get(mr_objpool *p)
{
    if (p == NULL)
        return mri_fail(EINVAL);
    struct mri_tc_local *l = p->tc != NULL ? mri_tc_local_get(p->tc) : &p->local.h;
    return (mr_objpool_local *)(void *)l; /* NULL: errno = ENOMEM */
}

/* The handle's slow paths: a thread-safe pool's are its own (the cache
 * they find from the thread's entry is the handle's); a pool that is not
 * thread-safe takes its inline paths from here. */
MR_API MR_NOINLINE void *mri_objpool_local_alloc_slow(mr_objpool_local *l)
{
    MR_ASSERT(l != NULL, "mr_objpool_local_alloc: handle is NULL");
    mr_objpool *p = ((struct mri_tc_local *)(void *)l)->pool;
    if (p->tc == NULL) {
        void *obj = mri_objpool_take(p);
        if (obj != NULL)
            return obj;
    }
    return mri_objpool_alloc_slow(p);
}

MR_API MR_NOINLINE void mri_objpool_local_free_slow(mr_objpool_local *l, void *obj)
{
    MR_ASSERT(l != NULL, "mr_objpool_local_free: handle is NULL");
    mr_objpool *p = ((struct mri_tc_local *)(void *)l)->pool;
    if (p->tc == NULL && mri_objpool_put(p, obj))
        return;
    mri_objpool_free_slow(p, obj);
}

/* ---- reset / release ---- */

MR_API void mr_objpool_thread_flush(mr_objpool *p)
{
    if (p != NULL && p->tc != NULL)
        mri_tc_flush(p->tc);
}

MR_API void mr_objpool_reset(mr_objpool *p)
{
    MR_ASSERT(p != NULL, "mr_objpool_reset: pool is NULL");
    if (!mri_node_enter(&p->node, "mr_objpool_reset"))
        return;
    if (p->node.child != NULL)
        mri_node_unwind(&p->node, 0);
    if (p->tc != NULL) {
        mri_tc_reset(p->tc, false);
        return;
    }
    /* Blocks past `used` were poisoned when taken or at an earlier reset and
     * have not been carved since. */
    if (MRI_TRACKING)
        for (size_t i = 0; i < p->used; i++)
            mri_track_poison(p->blocks[i], p->block_bytes);
    p->hot.free = NULL;
    p->hot.ptr = p->hot.end = 0;
    p->hot.frees = p->hot.allocations;
    p->used = 0;
    MRI_WALK_NOW(p, walk);
}

MR_API void mr_objpool_release(mr_objpool *p)
{
    MR_ASSERT(p != NULL, "mr_objpool_release: pool is NULL");
    if (!mri_node_enter(&p->node, "mr_objpool_release"))
        return;
    if (p->node.child != NULL)
        mri_node_unwind(&p->node, 0);
    mri_node_drop_kept(&p->node);
    release(p);
}

/* Every block back upstream; the children are gone. */
static void release(mr_objpool *p)
{
    if (p->tc != NULL) {
        mri_tc_reset(p->tc, true);
        return;
    }
    if (MRI_ADDRMAP)
        mri_addrmap_clear(&p->map);
    for (size_t i = 0; i < p->nblocks; i++) {
        mri_track_unpoison(p->blocks[i], p->block_bytes);
        give_back(p, p->blocks[i], p->block_bytes, p->align);
    }
    if (p->blocks != NULL)
        give_back(p, p->blocks, p->cap * LINK, LINK_ALIGN);
    p->blocks = NULL;
    p->nblocks = p->used = p->cap = 0;
    p->hot.free = NULL;
    p->hot.ptr = p->hot.end = 0;
    p->hot.frees = p->hot.allocations;
    MR_ASSERT_INTERNAL(p->ledger.held == p->header_bytes);
    MRI_WALK_NOW(p, walk);
}

/* ---- stats and checks ---- */

MR_API void mr_objpool_stats(const mr_objpool *p, mr_stats *out)
{
    MR_ASSERT(p != NULL && out != NULL, "mr_objpool_stats: NULL argument");
    if (p->tc != NULL) {
        size_t a, f;
        mri_tc_counts(p->tc, 0, &a, &f);
        mri_tc_lock(p->tc);
        mri_ledger_stats(&p->ledger, out);
        mri_tc_unlock(p->tc);
        out->in_use = (a > f ? a - f : 0) * p->hot.size; /* a snapshot */
        out->allocations = a;
    } else {
        mri_ledger_stats(&p->ledger, out);
        out->in_use = (p->hot.allocations - p->hot.frees) * p->hot.size;
        out->allocations = p->hot.allocations;
    }
    mri_node_add_kept(&p->node, out);
}

MR_API size_t mr_objpool_object_size(const mr_objpool *p)
{
    MR_ASSERT(p != NULL, "mr_objpool_object_size: pool is NULL");
    return p->hot.size;
}

#define CHECK(cond, ...) MRI_VERIFY(cond, "mr_objpool_check", (const void *)p, __VA_ARGS__)

static int cmp_addr(const void *x, const void *y)
{
    uintptr_t a = *(const uintptr_t *)x, b = *(const uintptr_t *)y;
    return (a > b) - (a < b);
}

/* The carved block holding address q: its base, or 0.  sorted (n entries,
 * ascending) when the check could allocate it, else a linear scan of dir. */
static uintptr_t block_of(uintptr_t q, const uintptr_t *sorted, void *const *dir, size_t n, size_t bytes)
{
    if (sorted != NULL) {
        size_t lo = 0, hi = n; /* first base > q is at hi */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (sorted[mid] <= q)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo > 0 && q - sorted[lo - 1] < bytes)
            return sorted[lo - 1];
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        if (q - (uintptr_t)dir[i] < bytes)
            return (uintptr_t)dir[i];
    return 0;
}

/* The free list: every entry an object boundary in the carved part of a
 * block, and free + live == carved.  sorted: the carved blocks' bases in
 * ascending order, or NULL for a linear scan. */
static bool check_free_list(const mr_objpool *p, const uintptr_t *sorted, uintptr_t cur, size_t carved, size_t live,
                            size_t *steps)
{
    const struct mri_objpool_hot *h = &p->hot;
    size_t nfree = 0;
    for (const void *o = h->free; o != NULL; o = mri_link_get(o, h->key)) {
        uintptr_t q = (uintptr_t)o;
        uintptr_t b = block_of(q, sorted, (void *const *)p->blocks, p->used, p->block_bytes);
        CHECK(b != 0, "free object %p (#%zu on the list) is in no carved block", o, nfree);
        CHECK((q - b) % h->size == 0, "free object %p (#%zu) is not an object boundary of block %#jx", o, nfree,
              (uintmax_t)b);
        CHECK(b != cur || q < h->ptr, "free object %p (#%zu) lies in the uncarved part of the current block",
              o, nfree);
        /* bounds the walk: a cycle (an object freed twice) ends here */
        CHECK(nfree < carved - live, "free list longer than the %zu carved objects not live "
              "(a cycle: an object freed twice?)", carved - live);
        nfree++;
    }
    *steps += nfree * (sorted != NULL ? 1 + (size_t)(64 - MR_CLZLL((unsigned long long)p->used | 1)) : p->used);
    CHECK(nfree + live == carved, "free %zu + live %zu != carved %zu", nfree, live, carved);
    return true;
}

/* mr_objpool_check, counting its work into *steps (MRI_WALK). */
static bool walk(const mr_objpool *p, size_t *steps)
{
    if (p == NULL) {
        mri_verify_report("mr_objpool_check", p, "pool is NULL");
        return false;
    }
    const struct mri_objpool_hot *h = &p->hot;
    size_t size = h->size, prod;
    CHECK(mri_is_pow2(p->align) && p->align >= LINK_ALIGN, "alignment %zu", p->align);
    CHECK(size >= LINK && size % p->align == 0, "object size %zu with alignment %zu", size, p->align);
    CHECK(p->per_block > 0 && !mri_mul_overflow(size, p->per_block, &prod) && prod == p->block_bytes,
          "block bytes %zu != %zu objects * %zu", p->block_bytes, p->per_block, size);
    if (p->tc != NULL) {
        const struct mri_tc_class *cls = &p->tc->classes[0];
        CHECK(h->guard == UINTPTR_MAX && h->tc_ref == mri_tc_ref(p->tc->index) &&
                  h->free == NULL && h->ptr == 0 && h->end == 0 && p->nblocks == 0,
              "thread-safe pool with the unsynchronised inline paths enabled");
        CHECK(cls->size == size && cls->align == p->align && cls->max_blocks == p->per_block,
              "thread caches: object size %zu, alignment %zu, %zu per block", cls->size, cls->align, cls->max_blocks);
        CHECK(p->tc->local.key == h->key && p->tc->local.mark == h->mark && p->tc->local.pool == p,
              "thread-safe pool: the handles' header is not the pool's");
        size_t held = p->header_bytes, blocks = 1;
        return mri_tc_check(p->tc, "mr_objpool_check", p, &held, &blocks) &&
               mri_ledger_verify(&p->ledger, "mr_objpool_check", p, held, blocks);
    }
    CHECK(h->guard == 0 && h->tc_ref == mri_tc_ref(MRI_TC_NONE),
          "guard %#jx / entry %#jx in a pool that is not thread-safe", (uintmax_t)h->guard, (uintmax_t)h->tc_ref);
    static const struct mri_tc_slot empty;
    CHECK(p->local.h.pool == p && memcmp(&p->local.none, &empty, sizeof empty) == 0,
          "the handle: pool %p, or its slot not empty", p->local.h.pool);
    CHECK(p->used <= p->nblocks && p->nblocks <= p->cap, "used %zu, blocks %zu, directory %zu", p->used,
          p->nblocks, p->cap);
    CHECK((p->cap == 0) == (p->blocks == NULL), "directory %p with capacity %zu", (void *)p->blocks, p->cap);
    for (size_t i = 0; i < p->nblocks; i++) {
        uintptr_t b = (uintptr_t)p->blocks[i];
        CHECK(b != 0 && (b & (p->align - 1)) == 0, "block %zu at %p not aligned to %zu", i, p->blocks[i],
              p->align);
        for (size_t j = 0; j < i && p->nblocks <= 64; j++)
            CHECK(p->blocks[j] != p->blocks[i], "block %zu listed twice", i);
    }
    if (!mri_ledger_verify(&p->ledger, "mr_objpool_check", p,
                           p->header_bytes + p->nblocks * p->block_bytes + p->cap * LINK,
                           1 + p->nblocks + (p->cap != 0)))
        return false;

    size_t carved = 0;
    uintptr_t cur = 0;
    if (p->used == 0) {
        CHECK(h->ptr == 0 && h->end == 0, "no current block but ptr %#jx end %#jx", (uintmax_t)h->ptr,
              (uintmax_t)h->end);
    } else {
        cur = (uintptr_t)p->blocks[p->used - 1];
        CHECK(h->end == cur + p->block_bytes, "end %#jx is not the end of the current block %#jx",
              (uintmax_t)h->end, (uintmax_t)cur);
        CHECK(h->ptr >= cur && h->ptr <= h->end && (h->ptr - cur) % size == 0,
              "ptr %#jx not an object boundary in the current block %#jx", (uintmax_t)h->ptr, (uintmax_t)cur);
        carved = (p->used - 1) * p->per_block + (h->ptr - cur) / size;
    }
    CHECK(h->allocations >= h->frees, "frees %zu > allocations %zu", h->frees, h->allocations);
    size_t live = h->allocations - h->frees;
    CHECK(live <= carved, "%zu live objects but only %zu carved", live, carved);

    uintptr_t *sorted = NULL;
    if (h->free != NULL && p->used > 0) {
        sorted = malloc(p->used * sizeof *sorted); /* not upstream: a check changes no stats */
        if (sorted != NULL) {
            for (size_t i = 0; i < p->used; i++)
                sorted[i] = (uintptr_t)p->blocks[i];
            qsort(sorted, p->used, sizeof *sorted, cmp_addr);
        }
    }
    *steps += p->nblocks;
    bool ok = check_free_list(p, sorted, cur, carved, live, steps);
    free(sorted);
    return ok;
}

MR_API bool mr_objpool_check(const mr_objpool *p)
{
    size_t steps = 0;
    return walk(p, &steps);
}

/* ---- the node (src/tree.h) ---- */

static void node_figures(const mr_node *n, struct mri_figures *f)
{
    const mr_objpool *p = mri_container_of(n, mr_objpool, node);
    mr_objpool_stats(p, &f->s);
    f->blocks = f->s.upstream_allocations - f->s.upstream_deallocations;
    f->free_chunks = 0;
    if (p->tc == NULL && p->used > 0) { /* free objects: carved but not live */
        size_t carved = (p->used - 1) * p->per_block + (p->hot.ptr - (uintptr_t)p->blocks[p->used - 1]) / p->hot.size;
        size_t live = p->hot.allocations - p->hot.frees;
        f->free_chunks = carved > live ? carved - live : 0;
    }
}

static void node_held(const mr_node *n, size_t *bytes, size_t *blocks)
{
    const mr_objpool *p = mri_container_of(n, mr_objpool, node);
    *bytes = p->ledger.held;
    *blocks = p->ledger.upstream_allocations - p->ledger.upstream_deallocations;
}

static mr_node *node_of(mr_resource *r)
{
    return r->ops == &view_ops ? &mri_container_of(r, mr_objpool, resource)->node : NULL;
}

const struct mri_node_ops mri_objpool_node_ops = {
    .kind = "objpool",
    .node_of = node_of,
    .free = node_free,
    .figures = node_figures,
    .held = node_held,
};

/* ---- recognising the resource view (memres.hpp's resource_adaptor) ---- */

MR_API mr_objpool *mr_objpool_of_resource(mr_resource *r)
{
    return r != NULL && r->ops == &view_ops ? mri_container_of(r, mr_objpool, resource) : NULL;
}
