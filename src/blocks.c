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
 * The shared pool adds a per-thread cache: a _Thread_local array of up to
 * TCACHE_SLOTS blocks.  get pops it and put pushes it without a lock or an
 * atomic read-modify-write; only an empty cache (get) or a full one (put)
 * takes the lock, and then moves TCACHE_BATCH blocks at once, so a thread
 * that alternates get/put never locks and one that only puts (blocks other
 * threads got) locks once per TCACHE_BATCH puts.  A cache is registered in
 * the pool (a list under the lock) on the thread's first slow path; a
 * pthread key destructor flushes it to the shared list when the thread
 * exits and marks it dead, so later uses by that thread (other destructors)
 * go to the locked list directly.  Pools from mr_blocks_create have no
 * per-thread caches: they can be destroyed, and a destroyed pool could not
 * take back blocks cached in other threads.  They lock on every get and put;
 * a block is 64 KiB of work, so an uncontended mutex is noise.
 *
 * Invariants (under the pool's lock; Σ over the shared pool's live caches):
 *   nheld == nfree + Σ tc.count + blocks the callers hold
 *   nfree <= max_free_blocks                       (max_free honoured)
 *   upstream_allocations - upstream_deallocations == nheld + nlarge
 *   every block address % block_size == 0
 * Requests through the resource view that exceed a block (size or align)
 * go to the upstream and are only counted (nlarge, large_bytes): their size
 * tells deallocate where they belong.
 *
 * Lock order.  Each pool has one mutex, b->lock.  The pool calls its
 * upstream only with b->lock held (so the upstream needs no thread safety of
 * its own); when that upstream is another pool's resource, this pool's lock
 * is taken before the other's -- a pool must never be its own upstream,
 * directly or through others.  No other memres lock is taken under b->lock.
 * A per-thread cache is read and written without a lock by its own thread;
 * other threads read only its two atomic counters (relaxed), and its
 * registry links only, both under shared_pool.lock.  The thread-exit
 * destructor and the fork handlers take shared_pool.lock alone.
 * pthread_once and pthread_setspecific are called with no lock held.
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
#include "memres/blocks.h"
#include "os.h"
#include "track.h"

/* Per-thread cache of the shared pool: 8 blocks of 64 KiB = 512 KiB per
 * thread at most; moved to and from the shared list 4 at a time. */
#define TCACHE_SLOTS 8
#define TCACHE_BATCH 4

/* The cache is reached with one %fs-relative access, also from the shared
 * library (glibc keeps surplus static TLS for the few bytes it needs). */
#if defined(__GNUC__) || defined(__clang__)
#  define TLS_MODEL __attribute__((tls_model("initial-exec")))
#else
#  define TLS_MODEL
#endif

typedef struct free_block {
    struct free_block *next;
} free_block;

enum { TC_FRESH = 0, TC_LIVE, TC_DEAD };

typedef struct tcache {
    _Atomic size_t count;       /* blocks in slot[0 .. count); written by the owner only */
    _Atomic size_t hits;        /* gets served from slot; written by the owner only */
    size_t limit;               /* TCACHE_SLOTS while live, else 0 (puts take the slow path) */
    int state;                  /* TC_FRESH, TC_LIVE (registered), TC_DEAD (flushed at exit) */
    struct tcache *prev, *next; /* registry of live caches, under shared_pool.lock */
    void *slot[TCACHE_SLOTS];   /* poisoned blocks; the newest on top */
} tcache;

struct mr_blocks {
    mr_resource resource;       /* first: mr_blocks_resource(b) == &b->resource */
    size_t block_size;
    size_t max_free_blocks;     /* max_free / block_size */
    mr_resource *upstream;      /* never NULL */
    bool shared;                /* the process-wide pool: has per-thread caches */
    pthread_mutex_t lock;
    /* everything below: under lock */
    free_block *free;           /* cached blocks, LIFO */
    size_t nfree;               /* blocks on free */
    size_t nheld;               /* blocks held from the upstream */
    size_t nlarge, large_bytes; /* passed-through requests outstanding */
    size_t peak_held;           /* bytes */
    size_t gets;                /* successful gets on the locked path + large allocations */
    size_t upstream_allocations, upstream_deallocations;
    tcache *threads;            /* live per-thread caches (shared pool only) */
    size_t retired_hits;        /* hits of caches whose threads exited */
};

static void *blocks_allocate(mr_resource *self, size_t size, size_t align);
static void blocks_deallocate(mr_resource *self, void *p, size_t size, size_t align);
static const struct mr_resource_ops blocks_ops = {blocks_allocate, blocks_deallocate, NULL};

static mr_blocks shared_pool = {
    .resource = {&blocks_ops},
    .block_size = MR_BLOCKS_DEFAULT_SIZE,
    .max_free_blocks = MR_BLOCKS_DEFAULT_MAX_FREE / MR_BLOCKS_DEFAULT_SIZE,
    .upstream = &mri_os_pages.base,
    .shared = true,
    .lock = PTHREAD_MUTEX_INITIALIZER,
};

static _Thread_local tcache tls_cache TLS_MODEL;

static void lock(mr_blocks *b) { (void)pthread_mutex_lock(&b->lock); }
static void unlock(mr_blocks *b) { (void)pthread_mutex_unlock(&b->lock); }

/* ---- the locked list (every function here runs under b->lock) ---- */

static void note_held(mr_blocks *b)
{
    size_t held = b->nheld * b->block_size + b->large_bytes;
    if (held > b->peak_held)
        b->peak_held = held;
}

/* Pops a cached block, leaving its body poisoned.  NULL when none. */
static void *pop_free(mr_blocks *b)
{
    free_block *f = b->free;
    if (f == NULL)
        return NULL;
    mri_track_unpoison(f, sizeof *f);
    b->free = f->next;
    mri_track_poison(f, sizeof *f);
    b->nfree--;
    return f;
}

/* Pushes a block (any poisoning) onto the list, poisoned whole. */
static void push_free(mr_blocks *b, void *p)
{
    free_block *f = p;
    mri_track_unpoison(f, sizeof *f);
    f->next = b->free;
    b->free = f;
    b->nfree++;
    mri_track_poison(p, b->block_size);
}

static void release_block(mr_blocks *b, void *p)
{
    mri_track_unpoison(p, b->block_size);
    mr_deallocate(b->upstream, p, b->block_size, b->block_size);
    b->nheld--;
    b->upstream_deallocations++;
}

/* A block for a caller: cached, else new from the upstream.  NULL with the
 * upstream's errno and nothing changed when the upstream fails. */
static void *take_block(mr_blocks *b)
{
    void *p = pop_free(b);
    if (p == NULL) {
        p = mr_allocate(b->upstream, b->block_size, b->block_size);
        if (MR_UNLIKELY(p == NULL))
            return NULL;
        MR_ASSERT(((uintptr_t)p & (b->block_size - 1)) == 0,
                  "mr_blocks: the upstream ignored the block alignment");
        b->nheld++;
        b->upstream_allocations++;
        note_held(b);
    }
    mri_track_unpoison(p, b->block_size);
    return p;
}

/* A block back from a caller or a per-thread cache: cached while the list
 * is below max_free, else returned upstream. */
static void give_block(mr_blocks *b, void *p)
{
    if (b->nfree < b->max_free_blocks)
        push_free(b, p);
    else
        release_block(b, p);
}

/* ---- per-thread caches of the shared pool ---- */

static pthread_once_t tc_once = PTHREAD_ONCE_INIT;
static pthread_key_t tc_key;
static bool tc_key_ok; /* written in tc_init_once, read after pthread_once */

/* Thread exit: everything in the cache goes to the shared list (or upstream,
 * beyond max_free), and the cache stops caching. */
static void tc_exit(void *arg)
{
    tcache *tc = arg;
    mr_blocks *b = &shared_pool;
    lock(b);
    size_t n = atomic_load_explicit(&tc->count, memory_order_relaxed);
    for (size_t i = 0; i < n; i++)
        give_block(b, tc->slot[i]);
    atomic_store_explicit(&tc->count, 0, memory_order_relaxed);
    b->retired_hits += atomic_load_explicit(&tc->hits, memory_order_relaxed);
    atomic_store_explicit(&tc->hits, 0, memory_order_relaxed);
    if (tc->prev != NULL)
        tc->prev->next = tc->next;
    else
        b->threads = tc->next;
    if (tc->next != NULL)
        tc->next->prev = tc->prev;
    tc->prev = tc->next = NULL;
    tc->state = TC_DEAD;
    tc->limit = 0;
    unlock(b);
}

/* fork(): the child must not inherit the lock held by a thread that does not
 * exist there.  Of the registered caches only the forking thread's survives. */
static void fork_prepare(void) { lock(&shared_pool); }
static void fork_parent(void) { unlock(&shared_pool); }
static void fork_child(void)
{
    tcache *me = &tls_cache;
    shared_pool.threads = NULL;
    if (me->state == TC_LIVE) {
        me->prev = me->next = NULL;
        shared_pool.threads = me;
    }
    unlock(&shared_pool);
}

static void tc_init_once(void)
{
    tc_key_ok = pthread_key_create(&tc_key, tc_exit) == 0;
    if (tc_key_ok)
        (void)pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* Makes the calling thread's cache live, so that its exit flushes it.  On
 * failure the cache stays unused (every call takes the lock): correct, only
 * slower.  Called with no lock held. */
static void tc_register(tcache *tc)
{
    if (pthread_once(&tc_once, tc_init_once) != 0 || !tc_key_ok) {
        tc->state = TC_DEAD;
        return;
    }
    if (pthread_setspecific(tc_key, tc) != 0)
        return; /* still fresh: tried again on the next slow path */
    mr_blocks *b = &shared_pool;
    lock(b);
    tc->prev = NULL;
    tc->next = b->threads;
    if (b->threads != NULL)
        b->threads->prev = tc;
    b->threads = tc;
    tc->state = TC_LIVE;
    tc->limit = TCACHE_SLOTS;
    unlock(b);
}

static MR_NOINLINE void *shared_get_slow(tcache *tc)
{
    mr_blocks *b = &shared_pool;
    if (tc->state == TC_FRESH)
        tc_register(tc);
    lock(b);
    void *p = take_block(b);
    if (p != NULL) {
        b->gets++;
        if (tc->state == TC_LIVE) { /* refill: the next gets take no lock */
            size_t n = atomic_load_explicit(&tc->count, memory_order_relaxed);
            void *q;
            while (n < TCACHE_BATCH && (q = pop_free(b)) != NULL)
                tc->slot[n++] = q;
            atomic_store_explicit(&tc->count, n, memory_order_relaxed);
        }
    }
    unlock(b);
    return p;
}

static MR_NOINLINE void shared_put_slow(tcache *tc, void *block)
{
    mr_blocks *b = &shared_pool;
    if (tc->state == TC_FRESH) {
        tc_register(tc);
        if (tc->state == TC_LIVE) { /* empty and live now */
            mri_track_poison(block, b->block_size);
            tc->slot[0] = block;
            atomic_store_explicit(&tc->count, 1, memory_order_relaxed);
            return;
        }
    }
    lock(b);
    if (tc->state == TC_LIVE) {
        /* full: the oldest TCACHE_BATCH go to the list, the newest stay */
        for (size_t i = 0; i < TCACHE_BATCH; i++)
            give_block(b, tc->slot[i]);
        memmove(&tc->slot[0], &tc->slot[TCACHE_BATCH], (TCACHE_SLOTS - TCACHE_BATCH) * sizeof tc->slot[0]);
        mri_track_poison(block, b->block_size);
        tc->slot[TCACHE_SLOTS - TCACHE_BATCH] = block;
        atomic_store_explicit(&tc->count, TCACHE_SLOTS - TCACHE_BATCH + 1, memory_order_relaxed);
    } else {
        give_block(b, block);
    }
    unlock(b);
}

/* ---- public API ---- */

MR_API mr_blocks *mr_blocks_shared(void)
{
    /* the only way to reach the pool: the fork handlers exist before any use */
    (void)pthread_once(&tc_once, tc_init_once);
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
    if (o.huge_pages && o.upstream != NULL)
        return mri_fail(EINVAL);
    mr_resource *up = o.upstream;
    if (up == NULL)
        up = o.huge_pages ? &mri_os_pages_huge.base : &mri_os_pages.base;
    size_t max_free = o.max_free != 0 ? o.max_free : MR_BLOCKS_DEFAULT_MAX_FREE;

    mr_blocks *b = mr_allocate(up, sizeof *b, alignof(mr_blocks));
    if (b == NULL)
        return NULL; /* errno from the upstream */
    memset(b, 0, sizeof *b);
    int err = pthread_mutex_init(&b->lock, NULL);
    if (err != 0) {
        mr_deallocate(up, b, sizeof *b, alignof(mr_blocks));
        return mri_fail(ENOMEM);
    }
    b->resource.ops = &blocks_ops;
    b->block_size = bs;
    b->max_free_blocks = max_free / bs;
    b->upstream = up;
    b->shared = false;
    return b;
}

MR_API void mr_blocks_destroy(mr_blocks *b)
{
    if (b == NULL || b->shared)
        return;
    MR_ASSERT(b->nheld == b->nfree && b->nlarge == 0,
              "mr_blocks_destroy: blocks or allocations not given back");
    void *p;
    while ((p = pop_free(b)) != NULL)
        release_block(b, p);
    (void)pthread_mutex_destroy(&b->lock);
    mr_resource *up = b->upstream;
    mr_deallocate(up, b, sizeof *b, alignof(mr_blocks));
}

MR_API void *mr_blocks_get(mr_blocks *b)
{
    MR_ASSERT(b != NULL, "mr_blocks_get: pool is NULL");
    if (MR_LIKELY(b->shared)) {
        tcache *tc = &tls_cache;
        size_t n = atomic_load_explicit(&tc->count, memory_order_relaxed);
        if (MR_LIKELY(n != 0)) {
            void *p = tc->slot[n - 1];
            atomic_store_explicit(&tc->count, n - 1, memory_order_relaxed);
            atomic_store_explicit(&tc->hits, atomic_load_explicit(&tc->hits, memory_order_relaxed) + 1,
                                  memory_order_relaxed);
            mri_track_unpoison(p, b->block_size);
            return p;
        }
        return shared_get_slow(tc);
    }
    lock(b);
    void *p = take_block(b);
    if (p != NULL)
        b->gets++;
    unlock(b);
    return p;
}

MR_API void mr_blocks_put(mr_blocks *b, void *block)
{
    MR_ASSERT(b != NULL, "mr_blocks_put: pool is NULL");
    if (block == NULL)
        return;
    MR_ASSERT(((uintptr_t)block & (b->block_size - 1)) == 0, "mr_blocks_put: not a block (misaligned)");
    if (MR_LIKELY(b->shared)) {
        tcache *tc = &tls_cache;
        size_t n = atomic_load_explicit(&tc->count, memory_order_relaxed);
        if (MR_LIKELY(n < tc->limit)) {
            mri_track_poison(block, b->block_size);
            tc->slot[n] = block;
            atomic_store_explicit(&tc->count, n + 1, memory_order_relaxed);
            return;
        }
        shared_put_slow(tc, block);
        return;
    }
    lock(b);
    give_block(b, block);
    unlock(b);
}

MR_API size_t mr_blocks_block_size(const mr_blocks *b) { return b->block_size; }

MR_API size_t mr_blocks_trim(mr_blocks *b)
{
    if (b == NULL)
        return 0;
    size_t released = 0;
    lock(b);
    if (b->shared) {
        tcache *tc = &tls_cache;
        size_t n = atomic_load_explicit(&tc->count, memory_order_relaxed);
        for (size_t i = 0; i < n; i++)
            release_block(b, tc->slot[i]);
        atomic_store_explicit(&tc->count, 0, memory_order_relaxed);
        released += n * b->block_size;
    }
    void *p;
    while ((p = pop_free(b)) != NULL) {
        release_block(b, p);
        released += b->block_size;
    }
    unlock(b);
    return released;
}

MR_API mr_resource *mr_blocks_resource(mr_blocks *b) { return &b->resource; }

static void *blocks_allocate(mr_resource *self, size_t size, size_t align)
{
    mr_blocks *b = (mr_blocks *)(void *)self;
    if (size <= b->block_size && align <= b->block_size)
        return mr_blocks_get(b);
    if (MR_UNLIKELY(size > MRI_MAX_SIZE))
        return mri_fail(ENOMEM);
    lock(b);
    void *p = mr_allocate(b->upstream, size, align);
    if (p != NULL) {
        b->nlarge++;
        b->large_bytes += size;
        b->gets++;
        b->upstream_allocations++;
        note_held(b);
    }
    unlock(b);
    return p;
}

static void blocks_deallocate(mr_resource *self, void *p, size_t size, size_t align)
{
    mr_blocks *b = (mr_blocks *)(void *)self;
    if (size <= b->block_size && align <= b->block_size) {
        mr_blocks_put(b, p);
        return;
    }
    lock(b);
    MR_ASSERT(b->nlarge != 0 && b->large_bytes >= size, "mr_blocks_resource: deallocate of a request it never passed through");
    mr_deallocate(b->upstream, p, size, align);
    b->nlarge--;
    b->large_bytes -= size;
    b->upstream_deallocations++;
    unlock(b);
}

MR_API void mr_blocks_stats(const mr_blocks *cb, mr_stats *out)
{
    mr_blocks *b = (mr_blocks *)cb; /* the lock is not part of the value */
    lock(b);
    size_t cached = b->nfree, hits = b->retired_hits;
    for (const tcache *tc = b->threads; tc != NULL; tc = tc->next) {
        cached += atomic_load_explicit(&tc->count, memory_order_relaxed);
        hits += atomic_load_explicit(&tc->hits, memory_order_relaxed);
    }
    if (cached > b->nheld) /* a snapshot that saw one block in two caches */
        cached = b->nheld;
    out->held = b->nheld * b->block_size + b->large_bytes;
    out->in_use = (b->nheld - cached) * b->block_size + b->large_bytes;
    out->peak_held = b->peak_held;
    out->allocations = b->gets + hits;
    out->upstream_allocations = b->upstream_allocations;
    out->upstream_deallocations = b->upstream_deallocations;
    unlock(b);
}

static bool check_failed(const char *what, size_t x, size_t y)
{
    fprintf(stderr, "memres: mr_blocks_check: %s (%zu vs %zu)\n", what, x, y);
    return false;
}

static bool check_locked(const mr_blocks *b)
{
    if (!mri_is_pow2(b->block_size) || b->upstream == NULL)
        return check_failed("bad block size or no upstream", b->block_size, 0);
    size_t n = 0;
    for (free_block *f = b->free; f != NULL;) {
        if (n == b->nfree)
            return check_failed("free list longer than nfree (cycle?)", n + 1, b->nfree);
        if (((uintptr_t)f & (b->block_size - 1)) != 0)
            return check_failed("free block not aligned to the block size", (size_t)(uintptr_t)f, b->block_size);
        n++;
        mri_track_unpoison(f, sizeof *f);
        free_block *next = f->next;
        mri_track_poison(f, sizeof *f);
        f = next;
    }
    if (n != b->nfree)
        return check_failed("free list length != nfree", n, b->nfree);
    if (b->nfree > b->max_free_blocks)
        return check_failed("more free blocks than max_free allows", b->nfree, b->max_free_blocks);
    if (b->nfree > b->nheld)
        return check_failed("more free blocks than held", b->nfree, b->nheld);
    if (b->upstream_allocations - b->upstream_deallocations != b->nheld + b->nlarge)
        return check_failed("upstream allocations - deallocations != held blocks + large",
                            b->upstream_allocations - b->upstream_deallocations, b->nheld + b->nlarge);
    if ((b->nlarge == 0) != (b->large_bytes == 0))
        return check_failed("large count and bytes disagree", b->nlarge, b->large_bytes);
    if (!b->shared && b->threads != NULL)
        return check_failed("per-thread caches on a private pool", 1, 0);
    const tcache *prev = NULL;
    for (const tcache *tc = b->threads; tc != NULL; prev = tc, tc = tc->next) {
        if (tc->prev != prev || tc->state != TC_LIVE)
            return check_failed("thread cache registry broken", (size_t)tc->state, TC_LIVE);
        size_t c = atomic_load_explicit(&tc->count, memory_order_relaxed);
        if (c > TCACHE_SLOTS)
            return check_failed("thread cache overfull", c, TCACHE_SLOTS);
    }
    if (b->shared) { /* the caller's own cache is stable while it runs this */
        size_t c = atomic_load_explicit(&tls_cache.count, memory_order_relaxed);
        for (size_t i = 0; i < c; i++)
            if (((uintptr_t)tls_cache.slot[i] & (b->block_size - 1)) != 0)
                return check_failed("cached block not aligned", (size_t)(uintptr_t)tls_cache.slot[i], b->block_size);
        if (b->nfree + c > b->nheld)
            return check_failed("free + own cache > held", b->nfree + c, b->nheld);
    }
    return true;
}

MR_API bool mr_blocks_check(const mr_blocks *cb)
{
    if (cb == NULL)
        return check_failed("pool is NULL", 0, 0);
    mr_blocks *b = (mr_blocks *)cb;
    lock(b);
    bool ok = check_locked(b);
    unlock(b);
    return ok;
}
