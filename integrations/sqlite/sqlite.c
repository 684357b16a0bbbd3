/* SPDX-License-Identifier: MIT */
/* integrations/sqlite/sqlite.c -- SQLite's allocator on memres pools
 * (memres/sqlite.h).
 *
 * Layout of a block: [size word: 8 bytes][the n bytes SQLite sees].  The
 * word holds n as SQLite asked for it; the pool block is n + 8 bytes, so
 * free and resize recompute the class from the word.  SQLite rounds every
 * request with xRoundup first, which answers class size - 8: the requests
 * that arrive are whole blocks and xSize (the word) is what the block holds.
 *
 * Why a word and not a lookup: mr_pools_free needs the size, and finding the
 * class of a pointer without one needs a map from addresses to chunks (a
 * radix tree or size-aligned chunks) that the pools do not keep; the word
 * costs 8 bytes a block, and xRoundup hands SQLite the class's slack, so
 * most of it is used.
 *
 * State: SQLite's allocator is process-wide and xMalloc gets no user data,
 * so the pool and the lock are file statics.  Lock order: SQLite's
 * mem0 mutex (when it takes it) before ours; we call nothing that locks.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <sqlite3.h>

#include "memres/sqlite.h"

#define HDR MR_SQLITE_HEADER
#define ALIGN ((size_t)8) /* the pool block is 16-aligned; SQLite's memory 8 in */

static mr_pools *pool;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static sqlite3_mem_methods previous;
static bool have_previous;

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

static void *x_malloc(int n)
{
    size_t size = n > 0 ? (size_t)n : 0;
    void *b = mr_pools_alloc(pool, size + HDR, ALIGN);
    return b != NULL ? word_set(b, size) : NULL;
}

static void x_free(void *p)
{
    if (p == NULL)
        return;
    size_t size = word_get(p);
    mr_pools_free(pool, (char *)p - HDR, size + HDR, ALIGN);
}

static void *x_realloc(void *p, int n)
{
    if (p == NULL)
        return x_malloc(n);
    size_t size = n > 0 ? (size_t)n : 0;
    size_t old = word_get(p);
    void *b = mr_pools_realloc(pool, (char *)p - HDR, old + HDR, size + HDR, ALIGN);
    return b != NULL ? word_set(b, size) : NULL;
}

static int x_size(void *p)
{
    return p != NULL ? (int)word_get(p) : 0;
}

static int x_roundup(int n)
{
    size_t size = n > 0 ? (size_t)n : 0;
    size_t b = mr_pools_block_size(pool, size + HDR, ALIGN);
    /* a direct request (0 < b = size + HDR) keeps its size; b - HDR fits an
     * int whenever n did, as b <= largest class or b == size + HDR */
    return b > HDR ? (int)(b - HDR) : n;
}

static int x_init(void *app) { (void)app; return SQLITE_OK; }
static void x_shutdown(void *app) { (void)app; }

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
    pool = NULL;
    return SQLITE_OK;
}
