/* SPDX-License-Identifier: MIT */
/* src/blocks.c -- the caching block pool (GCC's memory-block-pool, APR's
 * allocator with max_free) and the process-wide shared pool.
 *
 * What it is for.  Arenas and pools that are created and destroyed over and
 * over (a request, a frame, a compiler pass) would otherwise mmap/munmap or
 * malloc/free the same big blocks every time, paying the syscalls and the
 * first-touch page faults again.  A block pool keeps the blocks: every block
 * has one fixed size, so any cached block fits any request, and reuse is a
 * list pop.
 *
 * Algorithm.  A pool holds blocks of block_size bytes (a power of two), each
 * aligned to block_size, so the block of any address is addr & ~(size - 1).
 * Free blocks form an intrusive LIFO list (the link is the block's first
 * word: no side table, put never allocates and never fails).  get pops the
 * list, or takes a new block from the upstream; put pushes it while the list
 * holds fewer than max_free / block_size blocks, else returns it upstream at
 * once.  trim and destroy return the list.
 *
 * The shared pool adds per-thread blocks: a _Thread_local array of up to
 * TBLOCKS_SLOTS blocks.  get pops it and put pushes it without a lock or an
 * atomic read-modify-write; only an empty cache (get) or a full one (put)
 * takes the lock, and then moves TBLOCKS_BATCH blocks at once, so a thread
 * that alternates get/put never locks and one that only puts (blocks other
 * threads got) locks once per TBLOCKS_BATCH puts.  A cache is registered in
 * the pool (a list under the lock) on the thread's first slow path; the
 * thread's exit (the one registry of per-thread state, threads.c) flushes it
 * to the shared list and marks it dead, so later uses by that thread (other
 * destructors) go to the locked list directly.  Pools from mr_blocks_create have no
 * per-thread caches: they can be destroyed, and a destroyed pool could not
 * take back blocks cached in other threads.  They lock on every get and put;
 * a block is 64 KiB of work, so an uncontended lock is noise.
 *
 * Invariants (under the pool's lock; Σ over the shared pool's live caches;
 * the ledger is src/ledger.h):
 *   nheld == nfree + Σ tb.count + blocks the callers hold
 *   nfree <= max_free_blocks                       (max_free honoured)
 *   ledger.held == nheld * block_size + large_bytes
 *   upstream_allocations - upstream_deallocations == nheld + nlarge
 *   every block address % block_size == 0
 * Requests through the resource view that exceed a block (size or align)
 * go to the upstream and are only counted (nlarge, large_bytes): their size
 * tells deallocate where they belong.
 *
 * Lock order.  Each pool has one lock, b->lock (a word lock: memres/bits/
 * lock.h); functions that must run with it held end in _locked and assert
 * it (MR_DEBUG >= 2).  The pool calls its upstream only with b->lock held (so the upstream needs no thread safety of
 * its own); when that upstream is another pool's resource, this pool's lock
 * is taken before the other's -- a pool must never be its own upstream,
 * directly or through others.  No other memres lock is taken under b->lock.
 * A per-thread cache is read and written without a lock by its own thread;
 * other threads read only its two atomic counters (relaxed), and its
 * registry links only, both under shared_pool.lock.  The thread-exit and
 * fork hooks take shared_pool.lock alone (after the thread-safe pools'
 * locks: threads.h).  pthread_once and the registry are called with no
 * lock held.
 *
 * ASan (track.h): a cached block is poisoned, in the list and in per-thread
 * caches alike, and unpoisoned when it is handed out or returned upstream, so
 * use after put is reported.  The list link is unpoisoned only while read or
 * written.
 *
 * Not supported: blocks of different sizes in one pool; reclaiming blocks a
 * caller never put back (destroy returns the cache only); returning the
 * shared pool's memory at process exit (it goes with the process); the
 * caches of threads that exist at fork() (the child cannot flush them: their
 * blocks stay counted as in use there).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "internal.h"
#include "ledger.h"
#include "memres/blocks.h"
#include "os.h"
#include "threads.h"
#include "track.h"
#include "tree.h"

/* Per-thread cache of the shared pool: 8 blocks of 64 KiB = 512 KiB per
 * thread at most; moved to and from the shared list 4 at a time. */
#define TBLOCKS_SLOTS 8
#define TBLOCKS_BATCH 4

/* The cache is reached with one %fs-relative access, also from the shared
 * library (glibc keeps surplus static TLS for the few bytes it needs). */
#if defined(__GNUC__) || defined(__clang__)
#  define TLS_MODEL __attribute__((tls_model("initial-exec")))
#else
#  define TLS_MODEL
#endif

enum { TB_FRESH = 0, TB_LIVE, TB_DEAD };

typedef struct tblocks {
    _Atomic size_t count;       /* blocks in slot[0 .. count); written by the owner only */
    _Atomic size_t hits;        /* gets served from slot; written by the owner only */
    size_t limit;               /* TBLOCKS_SLOTS while live, else 0 (puts take the slow path) */
    int state;                  /* TB_FRESH, TB_LIVE (registered), TB_DEAD (flushed at exit) */
    struct tblocks *prev, *next; /* registry of live caches, under shared_pool.lock */
    void *slot[TBLOCKS_SLOTS];   /* poisoned blocks; the newest on top */
} tblocks;

struct mr_blocks {
    mr_resource resource;       /* the mr_blocks_resource() view */
    size_t block_size;
    size_t max_free_blocks;     /* max_free / block_size */
    mr_resource *upstream;      /* never NULL once reachable */
    mr_resource *block_source;  /* where blocks come from: upstream, or the
                                   huge-page source (memres/pages.h) */
    bool shared;                /* the process-wide pool: has per-thread caches */
    mri_lock lock;
    /* everything below: under lock */
    void *free;                 /* cached blocks, LIFO, linked through their first word */
    size_t nfree;               /* blocks on free */
    size_t nheld;               /* blocks held from the upstream */
    size_t nlarge, large_bytes; /* passed-through requests outstanding */
    size_t gets;                /* successful gets on the locked path + large allocations */
    mri_ledger ledger;          /* bytes and calls upstream (the header excluded) */
    tblocks *threads;            /* live per-thread caches (shared pool only) */
    size_t retired_hits;        /* hits of caches whose threads exited */
    mr_node node;               /* in the tree of lifetimes */
    mri_lock tree_lock;         /* the node's tree lock: children from any thread */
};

extern const struct mri_node_ops mri_blocks_node_ops; /* in the table of kinds */

static void *view_allocate(mr_resource *self, size_t size, size_t align);
static void view_deallocate(mr_resource *self, void *p, size_t size, size_t align);
static const struct mr_resource_ops view_ops = {view_allocate, view_deallocate, NULL};

/* The upstreams are set by shared_init, which mr_blocks_shared() -- the
 * only way to reach this pool -- runs first. */
static mr_blocks shared_pool = {
    .resource = {&view_ops},
    .block_size = MR_BLOCKS_DEFAULT_SIZE,
    .max_free_blocks = MR_BLOCKS_DEFAULT_MAX_FREE / MR_BLOCKS_DEFAULT_SIZE,
    .shared = true,
    .lock = MRI_LOCK_INIT,
    .tree_lock = MRI_LOCK_INIT,
};

static _Thread_local tblocks tls_blocks TLS_MODEL;

static void lock(mr_blocks *b) { mri_lock_take(&b->lock); }
static void unlock(mr_blocks *b) { mri_lock_give(&b->lock); }

/* Is b's lock held (by some thread: a lock cannot say by whom)?  For
 * MR_ASSERT_INTERNAL in the _locked functions only. */
MRI_UNUSED static bool is_locked(mr_blocks *b)
{
    if (!mri_lock_try(&b->lock))
        return true;
    unlock(b);
    return false;
}

static bool check_locked(const mr_blocks *b);

/* ---- the locked list (every function here runs under b->lock) ---- */

/* Pops a cached block, leaving its body poisoned.  NULL when none. */
static void *pop_free_locked(mr_blocks *b)
{
    MR_ASSERT_INTERNAL(is_locked(b));
    void *f = b->free;
    if (f == NULL)
        return NULL;
    b->free = mri_link_get(f, 0);
    b->nfree--;
    return f;
}

/* Pushes a block (any poisoning) onto the list, poisoned whole. */
static void push_free_locked(mr_blocks *b, void *p)
{
    MR_ASSERT_INTERNAL(is_locked(b) && b->nfree < b->nheld);
    mri_link_set(p, b->free, 0);
    b->free = p;
    b->nfree++;
    mri_track_poison(p, b->block_size);
}

static void release_block_locked(mr_blocks *b, void *p)
{
    MR_ASSERT_INTERNAL(is_locked(b) && b->nheld > 0);
    mri_track_unpoison(p, b->block_size);
    mri_ledger_deallocate(&b->ledger, b->block_source, p, b->block_size, b->block_size);
    b->nheld--;
}

/* A block for a caller: cached, else new from the upstream.  NULL with the
 * upstream's errno and nothing changed when the upstream fails. */
static void *take_block_locked(mr_blocks *b)
{
    void *p = pop_free_locked(b);
    if (p == NULL) {
        p = mri_ledger_allocate(&b->ledger, b->block_source, b->block_size, b->block_size);
        if (MR_UNLIKELY(p == NULL))
            return NULL;
        MR_ASSERT(((uintptr_t)p & (b->block_size - 1)) == 0,
                  "mr_blocks: the upstream ignored the block alignment");
        b->nheld++;
    }
    mri_track_unpoison(p, b->block_size);
    return p;
}

/* Is the block on the free list already (a put twice)?  O(cached blocks):
 * debug builds only. */
static bool on_free_list_locked(mr_blocks *b, const void *block)
{
    for (const void *f = b->free; f != NULL; f = mri_link_get(f, 0))
        if (f == block)
            return true;
    return false;
}

/* Is the block in this thread's cache already?  O(TBLOCKS_SLOTS). */
static bool in_own_cache(const tblocks *tb, const void *block)
{
    size_t n = atomic_load_explicit(&tb->count, memory_order_relaxed);
    for (size_t i = 0; i < n; i++)
        if (tb->slot[i] == block)
            return true;
    return false;
}

/* A block back from a caller or a per-thread cache: cached while the list
 * is below max_free, else returned upstream. */
static void give_block_locked(mr_blocks *b, void *p)
{
    if (b->nfree < b->max_free_blocks)
        push_free_locked(b, p);
    else
        release_block_locked(b, p);
}

/* ---- per-thread blocks of the shared pool ---- */

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

/* Thread exit (the registry's hook, threads.c): everything in the calling
 * thread's cache goes to the shared list (or upstream, beyond max_free),
 * and the cache stops caching. */
void mri_blocks_thread_exit(void)
{
    tblocks *tb = &tls_blocks;
    if (tb->state != TB_LIVE)
        return;
    mr_blocks *b = &shared_pool;
    lock(b);
    size_t n = atomic_load_explicit(&tb->count, memory_order_relaxed);
    for (size_t i = 0; i < n; i++)
        give_block_locked(b, tb->slot[i]);
    atomic_store_explicit(&tb->count, 0, memory_order_relaxed);
    b->retired_hits += atomic_load_explicit(&tb->hits, memory_order_relaxed);
    atomic_store_explicit(&tb->hits, 0, memory_order_relaxed);
    if (tb->prev != NULL)
        tb->prev->next = tb->next;
    else
        b->threads = tb->next;
    if (tb->next != NULL)
        tb->next->prev = tb->prev;
    tb->prev = tb->next = NULL;
    tb->state = TB_DEAD;
    tb->limit = 0;
    unlock(b);
}

/* fork() (the registry's hooks): the child must not inherit the lock held
 * by a thread that does not exist there: taken before fork, given back in
 * the parent, made anew in the child (memres/bits/lock.h).  Of the
 * registered caches only the forking thread's survives. */
void mri_blocks_fork_prepare(void) { lock(&shared_pool); }
void mri_blocks_fork_parent(void) { unlock(&shared_pool); }
void mri_blocks_fork_child(void)
{
    tblocks *me = &tls_blocks;
    shared_pool.threads = NULL;
    if (me->state == TB_LIVE) {
        me->prev = me->next = NULL;
        shared_pool.threads = me;
    }
    (void)mri_lock_init(&shared_pool.lock);
}

static void shared_init(void)
{
    shared_pool.upstream = mr_page_resource();
    mri_node_create(&shared_pool.node, &mri_blocks_node_ops, "mr_blocks_shared", NULL, shared_pool.upstream,
                    &shared_pool.tree_lock, NULL);
    shared_pool.node.state |= MRI_NODE_PERMANENT;
    shared_pool.block_source = mri_os_block_source(shared_pool.upstream, MR_HUGE_PAGES_AUTO, shared_pool.block_size);
    (void)mri_threads_ready(); /* the fork handlers exist before any use */
}

/* Makes the calling thread's cache live, so that its exit flushes it.  On
 * failure the cache stays unused (every call takes the lock): correct, only
 * slower.  Called with no lock held. */
static void tb_register(tblocks *tb)
{
    if (!mri_threads_ready()) {
        tb->state = TB_DEAD;
        return;
    }
    if (!mri_thread_watch())
        return; /* still fresh: tried again on the next slow path */
    mr_blocks *b = &shared_pool;
    lock(b);
    tb->prev = NULL;
    tb->next = b->threads;
    if (b->threads != NULL)
        b->threads->prev = tb;
    b->threads = tb;
    tb->state = TB_LIVE;
    tb->limit = TBLOCKS_SLOTS;
    unlock(b);
}

static MR_NOINLINE void *shared_get_slow(tblocks *tb)
{
    mr_blocks *b = &shared_pool;
    if (tb->state == TB_FRESH)
        tb_register(tb);
    lock(b);
    void *p = take_block_locked(b);
    if (p != NULL) {
        b->gets++;
        if (tb->state == TB_LIVE) { /* refill: the next gets take no lock */
            size_t n = atomic_load_explicit(&tb->count, memory_order_relaxed);
            void *q;
            while (n < TBLOCKS_BATCH && (q = pop_free_locked(b)) != NULL)
                tb->slot[n++] = q;
            atomic_store_explicit(&tb->count, n, memory_order_relaxed);
        }
    }
    MR_ASSERT_EXPENSIVE(check_locked(b));
    unlock(b);
    return p;
}

static MR_NOINLINE void shared_put_slow(tblocks *tb, void *block)
{
    mr_blocks *b = &shared_pool;
    if (tb->state == TB_FRESH) {
        tb_register(tb);
        if (tb->state == TB_LIVE) { /* empty and live now */
            mri_track_poison(block, b->block_size);
            tb->slot[0] = block;
            atomic_store_explicit(&tb->count, 1, memory_order_relaxed);
            return;
        }
    }
    lock(b);
    if (MRI_MISUSE(MR_DEBUG >= 1 && on_free_list_locked(b, block), block, "mr_blocks_put: the block was put twice")) {
        unlock(b);
        return;
    }
    if (tb->state == TB_LIVE) {
        /* full: the oldest TBLOCKS_BATCH go to the list, the newest stay */
        for (size_t i = 0; i < TBLOCKS_BATCH; i++)
            give_block_locked(b, tb->slot[i]);
        memmove(&tb->slot[0], &tb->slot[TBLOCKS_BATCH], (TBLOCKS_SLOTS - TBLOCKS_BATCH) * sizeof tb->slot[0]);
        mri_track_poison(block, b->block_size);
        tb->slot[TBLOCKS_SLOTS - TBLOCKS_BATCH] = block;
        atomic_store_explicit(&tb->count, TBLOCKS_SLOTS - TBLOCKS_BATCH + 1, memory_order_relaxed);
    } else {
        give_block_locked(b, block);
    }
    MR_ASSERT_EXPENSIVE(check_locked(b));
    unlock(b);
}

/* ---- public API ---- */

MR_API mr_blocks *mr_blocks_shared(void)
{
    /* the only way to reach the pool: the fork handlers exist before any use */
    (void)pthread_once(&init_once, shared_init);
    return &shared_pool;
}

MR_API mr_blocks *mr_blocks_create(const mr_blocks_options *opts)
{
    mr_blocks_options o = {0};
    if (opts != NULL)
        o = *opts;
    size_t bs = o.block_size != 0 ? o.block_size : MR_BLOCKS_DEFAULT_SIZE;
    if (!mri_is_pow2(bs) || bs < MR_BLOCKS_MIN_SIZE || bs > MRI_MAX_SIZE)
        return mri_fail(EINVAL);
    if ((unsigned)o.huge_pages > MR_HUGE_PAGES_OFF)
        return mri_fail(EINVAL);
    mr_resource *up = mri_node_begin(o.parent, o.upstream, mr_page_resource, "mr_blocks_create");
    if (up == NULL)
        return NULL;
    size_t max_free = o.max_free != 0 ? o.max_free : MR_BLOCKS_DEFAULT_MAX_FREE;

    mr_blocks *b = mri_node_header(NULL, up, sizeof *b, alignof(mr_blocks), 0); /* (not the ledger's) */
    if (b == NULL)
        return NULL; /* errno from the upstream */
    if (!mri_lock_init(&b->lock)) {
        mr_deallocate(up, b, sizeof *b, alignof(mr_blocks));
        return mri_fail(ENOMEM);
    }
    if (!mri_lock_init(&b->tree_lock)) {
        mri_lock_fini(&b->lock);
        mr_deallocate(up, b, sizeof *b, alignof(mr_blocks));
        return mri_fail(ENOMEM);
    }
    b->resource.ops = &view_ops;
    b->block_size = bs;
    b->max_free_blocks = max_free / bs;
    b->upstream = up;
    b->block_source = mri_os_block_source(up, o.huge_pages, bs);
    b->shared = false;
    mri_node_create(&b->node, &mri_blocks_node_ops, o.name, o.parent, up, &b->tree_lock, NULL);
    return b;
}

MR_API void mr_blocks_destroy(mr_blocks *b)
{
    if (b != NULL && !b->shared)
        mr_node_destroy(&b->node);
}

MR_API mr_node *mr_blocks_node(mr_blocks *b) { return &b->node; }

/* node_ops.free: the children are gone. */
static void node_free(mr_node *n)
{
    mr_blocks *b = mri_container_of(n, mr_blocks, node);
    mri_node_drop_kept(n);
    MR_ASSERT(b->nheld == b->nfree && b->nlarge == 0,
              "mr_blocks_destroy: blocks or allocations not given back");
    void *p;
    lock(b); /* no other thread may use b now: taken for the _locked helpers' sake */
    while ((p = pop_free_locked(b)) != NULL)
        release_block_locked(b, p);
    unlock(b);
    mri_lock_fini(&b->lock);
    mri_node_release(n, b, sizeof *b, alignof(mr_blocks), NULL);
}

MR_API void *mr_blocks_get(mr_blocks *b)
{
    MR_ASSERT(b != NULL, "mr_blocks_get: pool is NULL");
    if (MR_LIKELY(b->shared)) {
        tblocks *tb = &tls_blocks;
        size_t n = atomic_load_explicit(&tb->count, memory_order_relaxed);
        if (MR_LIKELY(n != 0)) {
            void *p = tb->slot[n - 1];
            atomic_store_explicit(&tb->count, n - 1, memory_order_relaxed);
            atomic_store_explicit(&tb->hits, atomic_load_explicit(&tb->hits, memory_order_relaxed) + 1,
                                  memory_order_relaxed);
            mri_track_unpoison(p, b->block_size);
            return p;
        }
        return shared_get_slow(tb);
    }
    lock(b);
    void *p = take_block_locked(b);
    if (p != NULL)
        b->gets++;
    MR_ASSERT_EXPENSIVE(check_locked(b));
    unlock(b);
    return p;
}

MR_API void mr_blocks_put(mr_blocks *b, void *block)
{
    MR_ASSERT(b != NULL, "mr_blocks_put: pool is NULL");
    if (block == NULL)
        return;
    if (MRI_MISUSE(((uintptr_t)block & (b->block_size - 1)) != 0, block, "mr_blocks_put: not a block (misaligned)"))
        return;
    if (MR_LIKELY(b->shared)) {
        tblocks *tb = &tls_blocks;
        if (MRI_MISUSE(MR_DEBUG >= 1 && in_own_cache(tb, block), block, "mr_blocks_put: the block was put twice"))
            return;
        size_t n = atomic_load_explicit(&tb->count, memory_order_relaxed);
        if (MR_LIKELY(n < tb->limit)) {
            mri_track_poison(block, b->block_size);
            tb->slot[n] = block;
            atomic_store_explicit(&tb->count, n + 1, memory_order_relaxed);
            return;
        }
        shared_put_slow(tb, block);
        return;
    }
    lock(b);
    if (!MRI_MISUSE(MR_DEBUG >= 1 && on_free_list_locked(b, block), block, "mr_blocks_put: the block was put twice"))
        give_block_locked(b, block);
    MR_ASSERT_EXPENSIVE(check_locked(b));
    unlock(b);
}

MR_API size_t mr_blocks_block_size(const mr_blocks *b) { return b->block_size; }

MR_API size_t mr_blocks_trim(mr_blocks *b)
{
    if (b == NULL)
        return 0;
    size_t released = mri_node_drop_kept(&b->node);
    lock(b);
    if (b->shared) {
        tblocks *tb = &tls_blocks;
        size_t n = atomic_load_explicit(&tb->count, memory_order_relaxed);
        for (size_t i = 0; i < n; i++)
            release_block_locked(b, tb->slot[i]);
        atomic_store_explicit(&tb->count, 0, memory_order_relaxed);
        released += n * b->block_size;
    }
    void *p;
    while ((p = pop_free_locked(b)) != NULL) {
        release_block_locked(b, p);
        released += b->block_size;
    }
    MR_ASSERT_EXPENSIVE(check_locked(b));
    unlock(b);
    return released;
}

MR_API mr_resource *mr_blocks_resource(mr_blocks *b) { return &b->resource; }

/* ---- the node (src/tree.h) ---- */

static void node_figures(const mr_node *n, struct mri_figures *f)
{
    mr_blocks *b = mri_container_of(n, mr_blocks, node);
    mr_blocks_stats(b, &f->s);
    f->s.held += sizeof *b; /* the header: not in the ledger */
    f->s.peak_held += sizeof *b;
    lock(b);
    f->blocks = b->nheld + b->nlarge + 1;
    f->free_chunks = b->nfree;
    unlock(b);
}

static void node_held(const mr_node *n, size_t *bytes, size_t *blocks)
{
    const mr_blocks *b = mri_container_of(n, mr_blocks, node);
    *bytes = b->ledger.held + sizeof *b;
    *blocks = b->nheld + b->nlarge + 1;
}

static mr_node *node_of(mr_resource *r)
{
    return r->ops == &view_ops ? &mri_container_of(r, mr_blocks, resource)->node : NULL;
}

const struct mri_node_ops mri_blocks_node_ops = {
    .kind = "blocks",
    .node_of = node_of,
    .free = node_free,
    .figures = node_figures,
    .held = node_held,
};

static void *view_allocate(mr_resource *self, size_t size, size_t align)
{
    mr_blocks *b = mri_container_of(self, mr_blocks, resource);
    if (size <= b->block_size && align <= b->block_size)
        return mr_blocks_get(b);
    if (MR_UNLIKELY(size > MRI_MAX_SIZE))
        return mri_fail(ENOMEM);
    lock(b);
    void *p = mri_ledger_allocate(&b->ledger, b->upstream, size, align);
    if (p != NULL) {
        b->nlarge++;
        b->large_bytes += size;
        b->gets++;
    }
    MR_ASSERT_EXPENSIVE(check_locked(b));
    unlock(b);
    return p;
}

static void view_deallocate(mr_resource *self, void *p, size_t size, size_t align)
{
    mr_blocks *b = mri_container_of(self, mr_blocks, resource);
    if (size <= b->block_size && align <= b->block_size) {
        mr_blocks_put(b, p);
        return;
    }
    lock(b);
    if (!MRI_MISUSE(b->nlarge == 0 || b->large_bytes < size, p,
                    "mr_blocks_resource: deallocate of a request it never passed through")) {
        mri_ledger_deallocate(&b->ledger, b->upstream, p, size, align);
        b->nlarge--;
        b->large_bytes -= size;
    }
    MR_ASSERT_EXPENSIVE(check_locked(b));
    unlock(b);
}

MR_API void mr_blocks_stats(const mr_blocks *cb, mr_stats *out)
{
    mr_blocks *b = (mr_blocks *)cb; /* the lock is not part of the value */
    lock(b);
    size_t cached = b->nfree, hits = b->retired_hits;
    for (const tblocks *tb = b->threads; tb != NULL; tb = tb->next) {
        cached += atomic_load_explicit(&tb->count, memory_order_relaxed);
        hits += atomic_load_explicit(&tb->hits, memory_order_relaxed);
    }
    if (cached > b->nheld) /* a snapshot that saw one block in two caches */
        cached = b->nheld;
    mri_ledger_stats(&b->ledger, out);
    out->in_use = (b->nheld - cached) * b->block_size + b->large_bytes;
    out->allocations = b->gets + hits;
    unlock(b);
    mri_node_add_kept(&b->node, out);
}

#define CHECK(cond, ...) MRI_VERIFY(cond, "mr_blocks_check", (const void *)b, __VA_ARGS__)

static bool check_locked(const mr_blocks *b)
{
    CHECK(mri_is_pow2(b->block_size) && b->upstream != NULL && b->block_source != NULL,
          "block size %zu, upstream %p", b->block_size, (const void *)b->upstream);
    size_t n = 0;
    for (const void *f = b->free; f != NULL; f = mri_link_get(f, 0)) {
        CHECK(n < b->nfree, "free list longer than the %zu counted (cycle?)", b->nfree);
        CHECK(((uintptr_t)f & (b->block_size - 1)) == 0, "free block %p not aligned to %zu", f, b->block_size);
        n++;
    }
    CHECK(n == b->nfree, "free list of %zu blocks, %zu counted", n, b->nfree);
    CHECK(b->nfree <= b->max_free_blocks, "%zu free blocks, max_free allows %zu", b->nfree, b->max_free_blocks);
    CHECK(b->nfree <= b->nheld, "%zu free blocks of %zu held", b->nfree, b->nheld);
    CHECK((b->nlarge == 0) == (b->large_bytes == 0), "%zu large requests of %zu bytes", b->nlarge, b->large_bytes);
    if (!mri_ledger_verify(&b->ledger, "mr_blocks_check", b, b->nheld * b->block_size + b->large_bytes,
                           b->nheld + b->nlarge))
        return false;
    CHECK(b->shared || b->threads == NULL, "per-thread caches on a private pool");
    const tblocks *prev = NULL;
    for (const tblocks *tb = b->threads; tb != NULL; prev = tb, tb = tb->next) {
        CHECK(tb->prev == prev && tb->state == TB_LIVE, "thread cache registry broken at %p", (const void *)tb);
        size_t c = atomic_load_explicit(&tb->count, memory_order_relaxed);
        CHECK(c <= TBLOCKS_SLOTS, "thread cache holds %zu of %d", c, TBLOCKS_SLOTS);
    }
    if (b->shared) { /* the caller's own cache is stable while it runs this */
        size_t c = atomic_load_explicit(&tls_blocks.count, memory_order_relaxed);
        for (size_t i = 0; i < c; i++)
            CHECK(((uintptr_t)tls_blocks.slot[i] & (b->block_size - 1)) == 0, "cached block %p not aligned",
                  tls_blocks.slot[i]);
        CHECK(b->nfree + c <= b->nheld, "free %zu + own cache %zu > held %zu", b->nfree, c, b->nheld);
    }
    return true;
}

MR_API bool mr_blocks_check(const mr_blocks *cb)
{
    if (cb == NULL) {
        mri_verify_report("mr_blocks_check", cb, "pool is NULL");
        return false;
    }
    mr_blocks *b = (mr_blocks *)cb; /* the lock is not part of the value */
    lock(b);
    bool ok = check_locked(b);
    unlock(b);
    return ok;
}
