/* SPDX-License-Identifier: MIT */
/* integrations/sqlite/sqlite.c -- SQLite's allocator on memres pools
 * (memres/sqlite.h): an adapter from sqlite3_mem_methods to mr_pools.
 *
 * SQLite frees without a size and asks for it (xSize), so each block is
 * [size word: 8 bytes][the n bytes SQLite sees]: a request of n bytes is a
 * pool request of n + 8 with alignment 8, and free and resize read n back
 * from the word to give the pool the size it needs.  xRoundup answers the
 * pool's block size less the word (mr_pools_block_size), so the rounding
 * is SQLite's to use; xRealloc is mr_pools_realloc, which keeps a block
 * whose new size is in the same class.  The sizes of SQLite's big blocks
 * are the pool's exact sizes (mr_sqlite_pools_create).  Small blocks skip
 * the pool's class lookup: their classes are looked up once, at install,
 * through the internal API memres lists for its clients (memres/bits/
 * pools.h), and popped and pushed directly.
 *
 * Threads: mr_sqlite_install takes the integration's lock (memres/bits/
 * lock.h, the internal API memres lists for its clients)
 * around every pool call when SQLite may call from several threads at once
 * and the pool is not thread-safe; xSize and xRoundup take none (they read
 * the block's word and what the pool's create fixed).  The two method
 * tables below are the locked and the unlocked ones.  Lock order: SQLite's
 * mem0 mutex (when it takes it) before this lock; under it we call nothing
 * but the pool.
 *
 * State: SQLite's allocator is process-wide and xMalloc gets no user data,
 * so the pool and the lock are file statics.
 */
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <sqlite3.h>

#include "memres/bits/lock.h"
#include "memres/sqlite.h"

#define HDR MR_SQLITE_HEADER
#define ALIGN ((size_t)8) /* the pool block and SQLite's memory, 8 bytes in: 8-aligned */

/* The in-memory journal's chunk: SQLite's FileChunk (a next pointer and
 * 8 bytes) holding MEMJOURNAL_DFLT_FILECHUNKSIZE (1024) bytes, its last 8
 * in the struct: 1032 bytes.  A SQLite internal, stable since 3.8; were it
 * to change, those blocks would only fall back to their class. */
#define JOURNAL_CHUNK ((size_t)1032)
/* The page size SQLite uses unless told otherwise (SQLITE_DEFAULT_PAGE_SIZE
 * in Debian's build and SQLite's default). */
#define DEFAULT_PAGE ((size_t)4096)

static mr_pools *pool;
/* Blocks of up to 1 KiB (with the word): xRoundup's answer and the pool's
 * class, one entry for 8 sizes (the pool's blocks are multiples of 8),
 * looked up at install (mr_pools_block_size, mri_pools_class_for): SQLite
 * rounds before nearly every allocation, and most of its blocks are small.
 * A class NULL (a thread-safe pool): mr_pools_alloc and mr_pools_free. */
#define SMALL_MAX ((size_t)1024)
static uint16_t roundup_tab[SMALL_MAX / 8];
static struct mri_pools_class *class_tab[SMALL_MAX / 8];
static sqlite3_mem_methods previous;
static bool have_previous;
static mri_lock lock = MRI_LOCK_INIT;

static inline size_t word_get(const void *user)
{
    uint64_t n;
    memcpy(&n, (const char *)user - HDR, sizeof n);
    return (size_t)n;
}

static inline void *word_set(void *block, size_t n)
{
    uint64_t w = n;
    memcpy(block, &w, sizeof w);
    return (char *)block + HDR;
}

/* ---- the methods ---- */

/* SQLite asks for 1 to 0x7fffff00 bytes (sqlite3Malloc refuses the rest)
 * and never frees or sizes NULL; an int below 0 would be taken as a size
 * above 2 GiB and refused upstream. */
static MR_NOINLINE void *malloc_pool(size_t size)
{
    void *b = mr_pools_alloc(pool, size + HDR, ALIGN);
    return b != NULL ? word_set(b, size) : NULL;
}

static void *x_malloc(int n)
{
    size_t size = (unsigned)n, i = (size + HDR - 1) / 8; /* i < SMALL_MAX / 8: size + HDR <= SMALL_MAX */
    if (MR_LIKELY(i < SMALL_MAX / 8)) {
        struct mri_pools_class *c = class_tab[i];
        void *b = c != NULL ? mri_pools_class_take(pool, c) : NULL;
        if (MR_LIKELY(b != NULL))
            return word_set(b, size);
    }
    return malloc_pool(size);
}

static void x_free(void *p)
{
    if (p == NULL)
        return;
    size_t size = word_get(p), i = (size + HDR - 1) / 8;
    void *b = (char *)p - HDR;
    if (MR_LIKELY(i < SMALL_MAX / 8)) {
        struct mri_pools_class *c = class_tab[i];
        if (MR_LIKELY(c != NULL) && mri_pools_class_put(pool, c, b))
            return;
    }
    mr_pools_free(pool, b, size + HDR, ALIGN);
}

static void *x_realloc(void *p, int n)
{
    if (p == NULL)
        return x_malloc(n);
    size_t size = (unsigned)n;
    void *b = mr_pools_realloc(pool, (char *)p - HDR, word_get(p) + HDR, size + HDR, ALIGN);
    return b != NULL ? word_set(b, size) : NULL;
}

static int x_size(void *p) { return p != NULL ? (int)word_get(p) : 0; }

/* The whole block less the word (a direct request's is its own size: n);
 * it fits an int whenever n did. */
static int roundup(size_t n)
{
    size_t b = mr_pools_block_size(pool, n + HDR, ALIGN);
    return b > HDR && b - HDR <= INT_MAX ? (int)(b - HDR) : (int)n;
}

static int x_roundup(int n)
{
    size_t size = (unsigned)n, i = (size + HDR - 1) / 8;
    if (MR_LIKELY(i < SMALL_MAX / 8))
        return roundup_tab[i];
    return roundup(size);
}

static int x_init(void *app)
{
    (void)app;
    return SQLITE_OK;
}

static void x_shutdown(void *app) { (void)app; }

/* The same behind the lock. */
static void *l_malloc(int n)
{
    mri_lock_take(&lock);
    void *p = x_malloc(n);
    mri_lock_give(&lock);
    return p;
}

static void l_free(void *p)
{
    mri_lock_take(&lock);
    x_free(p);
    mri_lock_give(&lock);
}

static void *l_realloc(void *p, int n)
{
    mri_lock_take(&lock);
    void *q = x_realloc(p, n);
    mri_lock_give(&lock);
    return q;
}

static const sqlite3_mem_methods methods[2] = {
    {x_malloc, x_free, x_realloc, x_size, x_roundup, x_init, x_shutdown, NULL},
    {l_malloc, l_free, l_realloc, x_size, x_roundup, x_init, x_shutdown, NULL},
};

static bool ours(const sqlite3_mem_methods *m) { return m->xRoundup == x_roundup; }

/* ---- install ---- */

static int install(mr_pools *p, bool locked)
{
    if (p == NULL)
        return SQLITE_MISUSE;
    sqlite3_mem_methods old;
    int rc = sqlite3_config(SQLITE_CONFIG_GETMALLOC, &old);
    if (rc == SQLITE_OK)
        rc = sqlite3_config(SQLITE_CONFIG_MALLOC, &methods[locked]);
    if (rc != SQLITE_OK)
        return rc;
    if (!have_previous && !ours(&old)) {
        previous = old;
        have_previous = true;
    }
    pool = p;
    for (size_t i = 0; i < SMALL_MAX / 8; i++) {
        roundup_tab[i] = (uint16_t)roundup(8 * (i + 1) - HDR);
        class_tab[i] = mri_pools_class_for(p, 8 * (i + 1), ALIGN);
    }
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
    pool = NULL;
    return SQLITE_OK;
}

MR_API mr_pools *mr_sqlite_pools_create(const mr_pools_options *opts)
{
    mr_pools_options o = {0};
    if (opts != NULL)
        o = *opts;
    if (o.exact_count != 0) /* the caller's own exact sizes are not combined */
        return mr_pools_create(&o);
    /* SQLite's extra bytes per page-cache entry (before sqlite3_initialize;
     * after it, 0: the entries then fall to their class) */
    int extra = 0;
    if (sqlite3_config(SQLITE_CONFIG_PCACHE_HDRSZ, &extra) != SQLITE_OK || extra < 0)
        extra = 0;
    size_t sizes[2] = {JOURNAL_CHUNK + HDR, DEFAULT_PAGE + (size_t)extra + HDR};
    o.exact_sizes = sizes;
    o.exact_count = extra != 0 ? 2 : 1;
    size_t largest = o.largest_required_pool_block != 0 ? o.largest_required_pool_block : MR_POOLS_DEFAULT_POOL_BLOCK;
    while (o.exact_count > 0 && sizes[o.exact_count - 1] > largest)
        o.exact_count--; /* a pool that does not pool them */
    if (o.exact_count == 0)
        o.exact_sizes = NULL;
    return mr_pools_create(&o);
}
