/* SPDX-License-Identifier: MIT */
/* integrations/sqlite/sqlite.c -- SQLite's allocator on memres pools
 * (memres/sqlite.h).
 *
 * Layout of a block: [size word: 8 bytes][the n bytes SQLite sees].  The
 * word's low 32 bits hold n as SQLite asked for it (an int: below 2^31);
 * its high bits say where the block lives: 0 for the size-class pools
 * (the pool block is n + 8 bytes, so free and resize recompute the class
 * from the word), i + 1 for exact pool i.  SQLite rounds every request with
 * xRoundup first, which answers class size - 8 (or exact size - 8, below):
 * the requests that arrive are whole blocks and xSize (the low word) is
 * what the block holds.
 *
 * Why a word and not a lookup: mr_pools_free needs the size, and finding the
 * class of a pointer without one needs a map from addresses to chunks (a
 * radix tree or size-aligned chunks) that the pools do not keep; the word
 * costs 8 bytes a block, and xRoundup hands SQLite the class's slack, so
 * most of it is used.
 *
 * Exact sizes.  Above 1 KiB the classes are 1/8 of a power of two apart,
 * and SQLite's big blocks are few sizes in great numbers: its in-memory
 * journal's 1 KiB chunks (1032 bytes with the word: class 1152) and its
 * page-cache entries (page + ~264 bytes: 4368, class 4608).  On the
 * project's workload (size 4000) those two were 99% of the peak, and their
 * rounding 2.6 MB.  So a pool request s above LARGE whose class is more
 * than 1/32 larger than s rounded up to 16 (its exact size e) is served at
 * e: xRoundup answers e - 8 (whether or not e has a pool yet, so that the
 * word of every such block, memstatus on or off, tells e again at free),
 * and the blocks of e live in the class pool and are counted (live ones,
 * per e, in a small table) until their rounding wastes PROMOTE_WASTE bytes
 * at once; then e gets a pool of its own, an mr_objpool carved from blocks
 * the size-class pool hands out (direct requests: in its held, given back
 * with it).  Live blocks, not requests, because SQLite also asks for many
 * sizes one at a time (sorter and record buffers: thousands of requests of
 * one size, one live): counting requests would give them pools whose first
 * block is nearly all waste.  At most EXACT_MAX sizes, kept until
 * sqlite3_shutdown (xShutdown), when SQLite has freed everything: the
 * objpools are destroyed and the counts forgotten.  An exact pool whose
 * last block is freed gives its blocks back (exact_free).
 *
 * Threads.  The table and the published sizes are C11 atomics (a
 * compare-and-swap per count, only on the large, wasteful, unpromoted
 * path); promotion takes promote_lock and publishes pool then size then
 * exact_n with release stores, so a reader that sees exact_n sees the rest
 * (and a block's word says i only after pool i was seen).  Exact objpools
 * are thread-safe exactly when the pool is: in the locked mode every pool
 * and objpool call is under `lock` (xRoundup reads neither), in the
 * thread-safe mode none is.
 *
 * State: SQLite's allocator is process-wide and xMalloc gets no user data,
 * so the pool, the exact pools and the locks are file statics.  Lock order:
 * SQLite's mem0 mutex (when it takes it) before `lock` before promote_lock;
 * we call nothing that locks but the pools.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <sqlite3.h>

#include "memres/objpool.h"
#include "memres/sqlite.h"

#define HDR MR_SQLITE_HEADER
#define ALIGN ((size_t)8) /* the pool block and SQLite's memory, 8 bytes in: 8-aligned */

/* Exact sizes: pool requests above LARGE bytes may get one (n > LARGE -
 * HDR: the one compare the small paths pay); EXACT_MAX of them at most
 * (with the pool, 5 of the 8 entries of a thread's table of thread-safe
 * pools: memres/tcache.h).  A size is promoted once its live blocks waste
 * PROMOTE_WASTE bytes at once in their class (74 live blocks of 1040 bytes,
 * 35 of 4368): late enough that one-at-a-time sizes never get there, early
 * enough that the blocks left in the class before are few (on the
 * workload, 2 KiB to 16 KiB moved peak RSS by less than 1%).  An objpool's
 * blocks are a little over the largest pooled size (about 64 KiB: direct
 * requests, no class rounding of their own; 128 KiB to 1 MiB did no
 * better). */
#define LARGE ((size_t)1024)
#define EXACT_MAX 4u
#define EXACT_SHIFT 32
#define PROMOTE_WASTE ((size_t)8 * 1024)
#define EXACT_ALIGN ((size_t)16) /* as the class blocks: SQLite's memory 8 in */
/* The live-count table: CANDS slots of (e / 16) << 32 | live blocks, a
 * size probing PROBE of them from its hash; a slot with no live block may
 * be taken by another size. */
#define CANDS 32u
#define PROBE 8u
#define LIVE_MASK ((uint64_t)0xffffffff)

static mr_pools *pool;
static size_t pool_max;        /* the pool's largest pooled size (install) */
static bool exact_thread_safe; /* the exact objpools' thread_safe (the pool's) */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t promote_lock = PTHREAD_MUTEX_INITIALIZER;
static sqlite3_mem_methods previous;
static bool have_previous;

static _Atomic(mr_objpool *) exact_pool[EXACT_MAX];
static _Atomic(size_t) exact_size[EXACT_MAX];
static _Atomic(unsigned) exact_n; /* published: exact_pool/size[0..exact_n) */
static _Atomic(uint64_t) cands[CANDS];
/* Live blocks per exact pool, kept when the pool is not thread-safe (under
 * `lock`, or one thread): an exact pool whose last block is freed gives its
 * blocks back (exact_free), for other sizes to use. */
static size_t exact_live[EXACT_MAX];

static inline uint64_t word_get(const void *user)
{
    uint64_t n;
    memcpy(&n, (const char *)user - HDR, sizeof n);
    return n;
}

static inline void *word_set(void *block, uint64_t w)
{
    memcpy(block, &w, sizeof w);
    return (char *)block + HDR;
}

/* ---- exact sizes ---- */

/* The exact size of a pool request of s bytes whose block is b bytes: s
 * rounded up to 16 when s is above LARGE and the class wastes more than
 * 1/32 of b over it (never a class size then), else 0.  b == s (a direct
 * request) or 0 (impossible) give 0. */
static inline size_t exact_of(size_t s, size_t b)
{
    size_t e = (s + 15) & ~(size_t)15;
    return s > LARGE && b > e && b - e > b / 32 ? e : 0;
}

/* The published pool of e, or -1. */
static int exact_find(size_t e)
{
    unsigned k = atomic_load_explicit(&exact_n, memory_order_acquire);
    for (unsigned i = 0; i < k; i++)
        if (atomic_load_explicit(&exact_size[i], memory_order_relaxed) == e)
            return (int)i;
    return -1;
}

static inline mr_objpool *exact_get(unsigned i) { return atomic_load_explicit(&exact_pool[i], memory_order_acquire); }

/* The live-count table, for exact size e: op +1 counts a live block, -1
 * one fewer, 0 forgets them; returns the count after (0: not counted -- no
 * free slot, or nothing to take back).  A heuristic: a count lost to a full
 * table, or a block freed after its size's slot was reused, only makes a
 * promotion later.  Lock-free: a compare-and-swap on the slot. */
static size_t count_add(size_t e, int op)
{
    uint64_t key = (uint64_t)(e >> 4) << 32;
    unsigned h = (unsigned)((e >> 4) * 0x9e3779b1u) >> 27; /* 5 bits: CANDS */
    for (;;) {
        unsigned claim = CANDS;
        uint64_t claimed = 0;
        bool retry = false;
        for (unsigned j = 0; j < PROBE && !retry; j++) {
            unsigned i = (h + j) & (CANDS - 1);
            uint64_t v = atomic_load_explicit(&cands[i], memory_order_relaxed);
            if ((v & ~LIVE_MASK) == key && (op > 0 || (v & LIVE_MASK) != 0)) {
                uint64_t nv = op > 0 ? v + 1 : op < 0 ? v - 1 : key;
                if (atomic_compare_exchange_weak_explicit(&cands[i], &v, nv, memory_order_relaxed,
                                                          memory_order_relaxed))
                    return (size_t)(nv & LIVE_MASK);
                retry = true;
            } else if (claim == CANDS && (v & LIVE_MASK) == 0) {
                claim = i;
                claimed = v;
            }
        }
        if (retry)
            continue;
        if (op <= 0 || claim == CANDS)
            return 0;
        if (atomic_compare_exchange_strong_explicit(&cands[claim], &claimed, key | 1, memory_order_relaxed,
                                                    memory_order_relaxed))
            return 1;
    }
}

/* Counts a class block of s pool bytes in (+1) or out (-1) when its size
 * is exact, while promotion is open.  Also for an exact size promoted since
 * the block was counted: its slot drains to 0 and can be reused. */
static void count_block(size_t s, int op)
{
    size_t e = exact_of(s, mr_pools_block_size(pool, s, ALIGN));
    if (e != 0 && atomic_load_explicit(&exact_n, memory_order_acquire) < EXACT_MAX)
        count_add(e, op);
}

static inline size_t exact_per_block(size_t e) { return pool_max / e + 1; }

/* Gives e an objpool (if it has none and the table is not full); returns
 * its index, or -1 (full, or the objpool could not be created: the blocks
 * stay in the class pool, and the count starts again). */
static int promote(size_t e)
{
    pthread_mutex_lock(&promote_lock);
    unsigned k = atomic_load_explicit(&exact_n, memory_order_relaxed);
    int i = exact_find(e);
    if (i < 0 && k < EXACT_MAX) {
        /* blocks just above the largest pooled size: direct requests, one
         * upstream call each, no class rounding of their own */
        mr_objpool_options o = {mr_pools_resource(pool), exact_per_block(e), exact_thread_safe};
        mr_objpool *op = mr_objpool_create(e, EXACT_ALIGN, &o);
        if (op != NULL) {
            atomic_store_explicit(&exact_pool[k], op, memory_order_release);
            atomic_store_explicit(&exact_size[k], e, memory_order_relaxed);
            atomic_store_explicit(&exact_n, k + 1, memory_order_release);
            i = (int)k;
        }
    }
    pthread_mutex_unlock(&promote_lock);
    return i;
}

/* Destroys the exact objpools and forgets the counts.  Only when SQLite
 * holds no block (after sqlite3_shutdown, or before anything ran). */
static void exact_drop(void)
{
    pthread_mutex_lock(&promote_lock);
    unsigned k = atomic_load_explicit(&exact_n, memory_order_relaxed);
    atomic_store_explicit(&exact_n, 0, memory_order_relaxed);
    for (unsigned i = 0; i < k; i++) {
        mr_objpool_destroy(exact_get(i));
        exact_live[i] = 0;
        atomic_store_explicit(&exact_pool[i], NULL, memory_order_relaxed);
        atomic_store_explicit(&exact_size[i], 0, memory_order_relaxed);
    }
    for (unsigned i = 0; i < CANDS; i++)
        atomic_store_explicit(&cands[i], 0, memory_order_relaxed);
    pthread_mutex_unlock(&promote_lock);
}

/* ---- the methods ---- */

/* A request of size bytes (s with the word, block b) of exact size e that
 * has no pool yet: counted, and promoted when its live blocks waste enough;
 * the block comes from the new pool, else from the class. */
static MR_NOINLINE void *malloc_counted(size_t size, size_t s, size_t b, size_t e)
{
    size_t live = count_add(e, +1);
    if (live * (b - e) >= PROMOTE_WASTE) {
        int i = promote(e);
        /* this block goes to the new pool; or there is none (table full,
         * or no memory): count again from 0 */
        count_add(e, i >= 0 ? -1 : 0);
        live = 0;
        if (i >= 0) {
            void *q = mr_objpool_alloc(exact_get((unsigned)i));
            if (q != NULL) {
                if (!exact_thread_safe)
                    exact_live[i]++;
                return word_set(q, size | (uint64_t)(i + 1) << EXACT_SHIFT);
            }
        }
    }
    void *q = mr_pools_alloc(pool, s, ALIGN);
    if (q == NULL && live != 0)
        count_add(e, -1);
    return q != NULL ? word_set(q, size) : NULL;
}

/* Requests above LARGE: an exact pool, else the classes (counted while
 * promotion is open). */
static MR_NOINLINE void *malloc_large(size_t size)
{
    size_t s = size + HDR;
    size_t b = mr_pools_block_size(pool, s, ALIGN);
    size_t e = exact_of(s, b);
    if (e != 0) {
        int i = exact_find(e);
        if (i >= 0) {
            void *q = mr_objpool_alloc(exact_get((unsigned)i));
            if (MR_LIKELY(q != NULL)) {
                if (!exact_thread_safe)
                    exact_live[i]++;
                return word_set(q, size | (uint64_t)(i + 1) << EXACT_SHIFT);
            }
            /* the objpool could not get a block: the class may have one */
        } else if (atomic_load_explicit(&exact_n, memory_order_relaxed) < EXACT_MAX) {
            return malloc_counted(size, s, b, e);
        }
    }
    void *q = mr_pools_alloc(pool, s, ALIGN);
    return q != NULL ? word_set(q, size) : NULL;
}

static inline void *do_malloc(size_t size)
{
    if (MR_UNLIKELY(size > LARGE - HDR))
        return malloc_large(size);
    void *b = mr_pools_alloc(pool, size + HDR, ALIGN);
    return b != NULL ? word_set(b, size) : NULL;
}

/* Frees block b of exact pool i.  Its last live block gives the pool's
 * blocks back (not thread-safe pools: the count is exact, and release must
 * not meet another call): SQLite's journal grows to the size of a
 * transaction and is freed whole at its end, and its memory should serve
 * the pages after, as the pool's empty chunks do (and malloc's).  A pool
 * of one block keeps it: a transaction that small would take it back
 * from upstream every time. */
static void exact_free(unsigned i, void *b)
{
    mr_objpool *op = exact_get(i);
    mr_objpool_free(op, b);
    if (exact_thread_safe || --exact_live[i] != 0)
        return;
    mr_stats st;
    mr_objpool_stats(op, &st);
    if (st.held >= 2 * exact_per_block(mr_objpool_object_size(op)) * mr_objpool_object_size(op))
        mr_objpool_release(op);
}

static MR_NOINLINE void free_large(void *p, uint64_t w)
{
    unsigned i = (unsigned)(w >> EXACT_SHIFT);
    if (i != 0) {
        exact_free(i - 1, (char *)p - HDR);
        return;
    }
    size_t s = (size_t)w + HDR;
    count_block(s, -1);
    mr_pools_free(pool, (char *)p - HDR, s, ALIGN);
}

static inline void do_free(void *p)
{
    uint64_t w = word_get(p);
    if (MR_UNLIKELY(w > LARGE - HDR)) { /* a large size, or an exact pool's index */
        free_large(p, w);
        return;
    }
    mr_pools_free(pool, (char *)p - HDR, (size_t)w + HDR, ALIGN);
}

/* Either size above LARGE: the block stays when the new size belongs where
 * it is (the same exact pool; the same class, with no exact pool for the
 * new size), else it moves (allocate, copy, free). */
static MR_NOINLINE void *realloc_large(void *p, uint64_t w, size_t size)
{
    size_t s = size + HDR;
    size_t b = mr_pools_block_size(pool, s, ALIGN);
    size_t e = exact_of(s, b);
    unsigned i = (unsigned)(w >> EXACT_SHIFT);
    size_t old = (size_t)(uint32_t)w;
    if (i != 0) {
        if (e == atomic_load_explicit(&exact_size[i - 1], memory_order_relaxed))
            return word_set((char *)p - HDR, size | (uint64_t)i << EXACT_SHIFT);
    } else if (b != 0 && b == mr_pools_block_size(pool, old + HDR, ALIGN) && (e == 0 || exact_find(e) < 0)) {
        /* the same class: mr_pools_realloc keeps the block (and moves the
         * poisoned slack in ASan builds) */
        void *q = mr_pools_realloc(pool, (char *)p - HDR, old + HDR, s, ALIGN);
        if (q == NULL)
            return NULL;
        count_block(old + HDR, -1);
        count_block(s, +1);
        return word_set(q, size);
    }
    void *q = do_malloc(size);
    if (q == NULL)
        return NULL; /* p is untouched */
    memcpy(q, p, old < size ? old : size);
    do_free(p);
    return q;
}

static void *x_malloc(int n)
{
    return do_malloc(n > 0 ? (size_t)n : 0);
}

static void x_free(void *p)
{
    if (p != NULL)
        do_free(p);
}

static void *x_realloc(void *p, int n)
{
    if (p == NULL)
        return x_malloc(n);
    size_t size = n > 0 ? (size_t)n : 0;
    uint64_t w = word_get(p);
    if (MR_UNLIKELY(w > LARGE - HDR || size > LARGE - HDR))
        return realloc_large(p, w, size);
    void *b = mr_pools_realloc(pool, (char *)p - HDR, (size_t)w + HDR, size + HDR, ALIGN);
    return b != NULL ? word_set(b, size) : NULL;
}

static int x_size(void *p)
{
    return p != NULL ? (int)(uint32_t)word_get(p) : 0;
}

/* Above LARGE: an exact size answers itself (promoted or not), so that the
 * block's word holds it; b - HDR fits an int whenever n did. */
static MR_NOINLINE int roundup_large(int n, size_t size)
{
    size_t s = size + HDR;
    size_t b = mr_pools_block_size(pool, s, ALIGN);
    size_t e = exact_of(s, b);
    if (e != 0)
        b = e;
    return b > HDR ? (int)(b - HDR) : n;
}

static int x_roundup(int n)
{
    size_t size = n > 0 ? (size_t)n : 0;
    if (MR_UNLIKELY(size > LARGE - HDR))
        return roundup_large(n, size);
    size_t b = mr_pools_block_size(pool, size + HDR, ALIGN);
    /* a direct request (0 < b = size + HDR) keeps its size; b - HDR fits an
     * int whenever n did, as b <= largest class or b == size + HDR */
    return b > HDR ? (int)(b - HDR) : n;
}

static int x_init(void *app) { (void)app; return SQLITE_OK; }

/* sqlite3_shutdown: SQLite has freed every block (it requires that of the
 * application too), so the exact pools go back to the pool. */
static void x_shutdown(void *app)
{
    (void)app;
    exact_drop();
}

/* The same behind the lock: a second table, so that the unlocked one tests
 * no flag. */
static void *xl_malloc(int n)
{
    pthread_mutex_lock(&lock);
    void *p = x_malloc(n);
    pthread_mutex_unlock(&lock);
    return p;
}

static void xl_free(void *p)
{
    pthread_mutex_lock(&lock);
    x_free(p);
    pthread_mutex_unlock(&lock);
}

static void *xl_realloc(void *p, int n)
{
    pthread_mutex_lock(&lock);
    void *q = x_realloc(p, n);
    pthread_mutex_unlock(&lock);
    return q;
}

static const sqlite3_mem_methods methods = {
    x_malloc, x_free, x_realloc, x_size, x_roundup, x_init, x_shutdown, NULL,
};
static const sqlite3_mem_methods methods_locked = {
    xl_malloc, xl_free, xl_realloc, x_size, x_roundup, x_init, x_shutdown, NULL,
};

static int install(mr_pools *p, bool with_lock)
{
    if (p == NULL)
        return SQLITE_MISUSE;
    sqlite3_mem_methods old;
    int rc = sqlite3_config(SQLITE_CONFIG_GETMALLOC, &old);
    if (rc != SQLITE_OK)
        return rc;
    rc = sqlite3_config(SQLITE_CONFIG_MALLOC, with_lock ? &methods_locked : &methods);
    if (rc != SQLITE_OK)
        return rc;
    if (!have_previous && old.xMalloc != methods.xMalloc && old.xMalloc != methods_locked.xMalloc) {
        previous = old;
        have_previous = true;
    }
    exact_drop(); /* none after sqlite3_shutdown; any other were the old pool's */
    mr_pools_options o;
    mr_pools_get_options(p, &o);
    pool_max = o.largest_required_pool_block;
    exact_thread_safe = o.thread_safe;
    pool = p;
    return SQLITE_OK;
}

MR_API int mr_sqlite_install(mr_pools *p)
{
    mr_pools_options o = {0};
    if (p != NULL)
        mr_pools_get_options(p, &o);
    return install(p, sqlite3_threadsafe() != 0 && !o.thread_safe);
}

MR_API int mr_sqlite_install_singlethread(mr_pools *p)
{
    if (p == NULL)
        return SQLITE_MISUSE;
    if (sqlite3_threadsafe() != 0) {
        int rc = sqlite3_config(SQLITE_CONFIG_SINGLETHREAD);
        if (rc != SQLITE_OK)
            return rc;
    }
    return install(p, false);
}

MR_API int mr_sqlite_uninstall(void)
{
    if (pool == NULL || !have_previous)
        return SQLITE_MISUSE;
    int rc = sqlite3_config(SQLITE_CONFIG_MALLOC, &previous);
    if (rc != SQLITE_OK)
        return rc;
    exact_drop();
    pool = NULL;
    return SQLITE_OK;
}
