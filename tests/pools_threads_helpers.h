/* SPDX-License-Identifier: MIT */
/* tests/pools_threads_helpers.h -- what the tests of the thread-safe pools
 * under threads (tests/test_pools_threads*.c) share.
 *
 * scaled(): an iteration count times MEMRES_TEST_FACTOR.  locked_upstream:
 * the fixture's mrt_upstream behind a mutex, for a pool that calls its
 * upstream from any thread.  tpool: one interface over a thread-safe
 * mr_pools and a thread-safe mr_objpool (and their resource views), with
 * pick_request drawing a random request for either.  item: a live block
 * tagged with a unique id in its first and last 8 bytes, written when it is
 * allocated and checked when it is freed, often by another thread: a block
 * handed to two owners at once shows as a wrong tag.
 *
 * The functions are static inline, so that a test program compiles only
 * those it uses.  They are called by worker threads too, so none of them
 * calls cmocka but tp_create_* (main thread only): they count what went
 * wrong in *bad.
 */
#ifndef MEMRES_TEST_POOLS_THREADS_HELPERS_H
#define MEMRES_TEST_POOLS_THREADS_HELPERS_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"

#define KiB ((size_t)1024)

/* mrt_scaled(n) times MEMRES_TEST_FACTOR. */
static inline size_t scaled(size_t n)
{
    const char *e = getenv("MEMRES_TEST_FACTOR");
    unsigned long f = e != NULL ? strtoul(e, NULL, 10) : 1;
    if (f == 0 || f > 1000)
        f = 1;
    return mrt_scaled(n) * (size_t)f;
}

/* ---- a thread-safe front for the checking upstream ----
 * mrt_upstream is not thread-safe, and a thread-safe pool calls its
 * upstream from any thread (with none of its own locks held): each test
 * puts the fixture's upstream behind this mutex, and the fixture's teardown
 * still proves that everything came back. */
typedef struct locked_upstream {
    mr_resource base;
    pthread_mutex_t mu;
    mrt_upstream *u;
} locked_upstream;

static inline void *lu_allocate(mr_resource *self, size_t size, size_t align)
{
    locked_upstream *l = (locked_upstream *)(void *)self;
    pthread_mutex_lock(&l->mu);
    void *p = mr_allocate(&l->u->base, size, align);
    int err = errno;
    pthread_mutex_unlock(&l->mu);
    errno = err;
    return p;
}

static inline void lu_deallocate(mr_resource *self, void *p, size_t size, size_t align)
{
    locked_upstream *l = (locked_upstream *)(void *)self;
    pthread_mutex_lock(&l->mu);
    mr_deallocate(&l->u->base, p, size, align);
    pthread_mutex_unlock(&l->mu);
}

static const struct mr_resource_ops lu_ops = {lu_allocate, lu_deallocate, NULL};

static inline void lu_init(locked_upstream *l, mrt_upstream *u)
{
    l->base.ops = &lu_ops;
    pthread_mutex_init(&l->mu, NULL);
    l->u = u;
}

static inline void lu_fini(locked_upstream *l) { pthread_mutex_destroy(&l->mu); }

/* ---- one interface over both kinds of pool ---- */

typedef struct tpool {
    mr_pools *p;       /* exactly one of p and o */
    mr_objpool *o;
    size_t osize;      /* o: mr_objpool_object_size */
    size_t oalign;     /* o: the alignment it was created with */
    bool via_resource; /* allocate and free through the resource view */
    int via_local;     /* 1: through the calling thread's handle (mr_*_local_get per
                          call); 2: that or the pool, in turn (a block freed through
                          the other door about half the time) */
} tpool;

/* Which door a call of this thread takes (via_local 2: alternately). */
static inline bool tp_local_turn(const tpool *t)
{
    static _Thread_local unsigned turn;
    return t->via_local == 1 || (t->via_local == 2 && (turn++ & 1) != 0);
}

static inline tpool tp_create_pools(mr_resource *up)
{
    mr_pools_options o = {.upstream = up, .thread_safe = true};
    tpool t = {0};
    t.p = mr_pools_create(&o);
    assert_non_null(t.p);
    return t;
}

static inline tpool tp_create_objpool(mr_resource *up, size_t size, size_t align)
{
    mr_objpool_options o = {.upstream = up, .objects_per_block = 256, .thread_safe = true};
    tpool t = {0};
    t.o = mr_objpool_create(size, align, &o);
    assert_non_null(t.o);
    t.osize = mr_objpool_object_size(t.o);
    t.oalign = align;
    return t;
}

static inline void *tp_alloc(const tpool *t, size_t size, size_t align)
{
    if (t->via_resource)
        return mr_allocate(t->p != NULL ? mr_pools_resource(t->p) : mr_objpool_resource(t->o), size, align);
    if (tp_local_turn(t)) {
        if (t->p != NULL) {
            mr_pools_local *l = mr_pools_local_get(t->p);
            return l != NULL ? mr_pools_local_alloc(l, size, align) : NULL;
        }
        mr_objpool_local *l = mr_objpool_local_get(t->o);
        return l != NULL ? mr_objpool_local_alloc(l) : NULL;
    }
    return t->p != NULL ? mr_pools_alloc(t->p, size, align) : mr_objpool_alloc(t->o);
}

static inline void tp_free(const tpool *t, void *b, size_t size, size_t align)
{
    if (t->via_resource) {
        mr_deallocate(t->p != NULL ? mr_pools_resource(t->p) : mr_objpool_resource(t->o), b, size, align);
        return;
    }
    if (tp_local_turn(t)) { /* (a thread freeing another's block may have no handle yet) */
        if (t->p != NULL) {
            mr_pools_local *l = mr_pools_local_get(t->p);
            if (l != NULL) {
                mr_pools_local_free(l, b, size, align);
                return;
            }
        } else {
            mr_objpool_local *l = mr_objpool_local_get(t->o);
            if (l != NULL) {
                mr_objpool_local_free(l, b);
                return;
            }
        }
    }
    if (t->p != NULL)
        mr_pools_free(t->p, b, size, align);
    else
        mr_objpool_free(t->o, b);
}

static inline size_t tp_block_size(const tpool *t, size_t size, size_t align)
{
    return t->p != NULL ? mr_pools_block_size(t->p, size, align) : t->osize;
}

static inline mr_stats tp_stats(const tpool *t)
{
    mr_stats s;
    if (t->p != NULL)
        mr_pools_stats(t->p, &s);
    else
        mr_objpool_stats(t->o, &s);
    return s;
}

static inline bool tp_check(const tpool *t) { return t->p != NULL ? mr_pools_check(t->p) : mr_objpool_check(t->o); }

static inline void tp_flush(const tpool *t)
{
    if (t->p != NULL)
        mr_pools_thread_flush(t->p);
    else
        mr_objpool_thread_flush(t->o);
}

static inline void tp_destroy(tpool *t)
{
    if (t->p != NULL)
        mr_pools_destroy(t->p);
    else
        mr_objpool_destroy(t->o);
    t->p = NULL;
    t->o = NULL;
}

static inline const char *tp_name(const tpool *t) { return t->p != NULL ? "pools" : "objpool"; }

/* A random request: pools get 1..2000 bytes, one in 256 a direct block
 * above 64 KiB, one in four an alignment of 32..256; an object pool gets
 * its one size.  direct_ok false: pooled sizes only. */
static inline void pick_request(const tpool *t, uint64_t *seed, bool direct_ok, size_t *size, size_t *align)
{
    if (t->o != NULL) {
        *size = t->osize;
        *align = t->oalign;
        return;
    }
    uint64_t r = mrt_rand(seed);
    *size = 1 + (size_t)(r % 2000);
    if (direct_ok && (r >> 16) % 256 == 0)
        *size = 64 * KiB + 1 + (size_t)((r >> 24) % (64 * KiB));
    unsigned a = (unsigned)((r >> 48) % 16);
    *align = a < 12 ? (size_t)1 << (a % 5) : (size_t)32 << (a - 12);
}

/* ---- live blocks and their tags ---- */

typedef struct item {
    void *p;
    size_t size, align;
    uint64_t id; /* (allocating thread + 1) << 40 | serial */
} item;

#define ID_THREAD(id) ((id) >> 40)

/* The id in the first and the last 8 bytes of the size bytes asked for (a
 * block of fewer than 16 bytes: the id then its complement, as many bytes
 * as fit).  A block given to a second owner while live gets that owner's
 * id over it. */
static inline void tag_write(void *p, size_t size, uint64_t id)
{
    if (size >= 16) {
        memcpy(p, &id, 8);
        memcpy((char *)p + size - 8, &id, 8);
    } else {
        uint64_t t[2] = {id, ~id};
        memcpy(p, t, size);
    }
}

static inline bool tag_ok(const void *p, size_t size, uint64_t id)
{
    if (size >= 16) {
        uint64_t a, b;
        memcpy(&a, p, 8);
        memcpy(&b, (const char *)p + size - 8, 8);
        return a == id && b == id;
    }
    uint64_t t[2] = {id, ~id};
    return memcmp(p, t, size) == 0;
}

/* Allocates a request and tags it; counts in *bad a NULL, a misaligned
 * block or a block size below the size. */
static inline bool item_new(const tpool *t, size_t size, size_t align, uint64_t id, item *out, long *bad)
{
    void *p = tp_alloc(t, size, align);
    if (p == NULL || ((uintptr_t)p & (align - 1)) != 0 || tp_block_size(t, size, align) < size) {
        ++*bad;
        if (p != NULL)
            tp_free(t, p, size, align);
        return false;
    }
    tag_write(p, size, id);
    *out = (item){p, size, align, id};
    return true;
}

/* Checks the tag, then frees. */
static inline void item_free(const tpool *t, const item *it, long *bad)
{
    if (!tag_ok(it->p, it->size, it->id))
        ++*bad;
    tp_free(t, it->p, it->size, it->align);
}

#endif
