/* SPDX-License-Identifier: MIT */
/* tests/test_pools_local.c -- the per-thread handles of memres/pools.h and
 * memres/objpool.h (mr_pools_local_get, mr_objpool_local_get and their
 * alloc / free), on pools of both kinds: thread-safe, where a handle is the
 * calling thread's cache, and not, where it sends every call to the pool.
 *
 * What the headers promise, tested here on each kind:
 *   - the handle: NULL for a NULL pool (EINVAL), the same on every call of
 *     one thread, one per thread on a thread-safe pool, valid across reset,
 *     release and mr_*_thread_flush;
 *   - alloc and free with mr_pools_alloc's contract: size 0, alignments up
 *     to the direct ones, class sizes; NULL with EINVAL or ENOMEM and no
 *     state changed for a bad alignment or a size that cannot be met; a
 *     free of NULL does nothing;
 *   - one pool behind two doors: blocks from the handle freed through the
 *     pool and the other way, by this thread or another (a remote free),
 *     also after the allocating thread exited; mr_*_stats balance
 *     (allocations counted once, in_use back to 0) and mr_*_check passes;
 *   - a thread's first handle whose cache the upstream cannot give: NULL,
 *     ENOMEM, nothing changed; more thread-safe pools than the threads'
 *     tables have entries.
 * The stress of handles under many threads is in test_pools_threads.c
 * (test_local_handles); workers here never call cmocka: they count what
 * went wrong and the main thread asserts the counts once it joined them.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "support.h"
#include "pools_threads_helpers.h"

/* A pool of either kind (thread_safe or not) over up. */
static tpool make_pools(mr_resource *up, bool ts)
{
    mr_pools_options o = {.upstream = up, .thread_safe = ts};
    tpool t = {0};
    t.p = mr_pools_create(&o);
    assert_non_null(t.p);
    return t;
}

static tpool make_objpool(mr_resource *up, bool ts, size_t size)
{
    mr_objpool_options o = {.upstream = up, .objects_per_block = 64, .thread_safe = ts};
    tpool t = {0};
    t.o = mr_objpool_create(size, 8, &o);
    assert_non_null(t.o);
    t.osize = mr_objpool_object_size(t.o);
    t.oalign = 8;
    return t;
}

/* The handle of the calling thread, any kind. */
static void *local_of(const tpool *t)
{
    return t->p != NULL ? (void *)mr_pools_local_get(t->p) : (void *)mr_objpool_local_get(t->o);
}

static void *local_alloc(const tpool *t, void *l, size_t size, size_t align)
{
    return t->p != NULL ? mr_pools_local_alloc(l, size, align) : mr_objpool_local_alloc(l);
}

static void local_free(const tpool *t, void *l, void *b, size_t size, size_t align)
{
    if (t->p != NULL)
        mr_pools_local_free(l, b, size, align);
    else
        mr_objpool_local_free(l, b);
}

static void pool_free(const tpool *t, void *b, size_t size, size_t align)
{
    if (t->p != NULL)
        mr_pools_free(t->p, b, size, align);
    else
        mr_objpool_free(t->o, b);
}

/* ---- one thread ---- */

/* The requests of the single-thread test: pooled classes, the first direct
 * size, alignments the classes give and one that goes upstream. */
static const size_t sizes[] = {0, 1, 7, 8, 15, 16, 17, 31, 100, 256, 257, 1000, 1024, 1500, 4096, 65536, 65537, 200000};
static const size_t aligns[] = {1, 8, 16, 32, 4096, 8192};
#define NREQ (sizeof sizes / sizeof sizes[0] * (sizeof aligns / sizeof aligns[0]))

static void request(const tpool *t, size_t k, size_t *size, size_t *align)
{
    if (t->o != NULL) {
        *size = t->osize;
        *align = t->oalign;
        return;
    }
    *size = sizes[k % (sizeof sizes / sizeof sizes[0])];
    *align = aligns[k / (sizeof sizes / sizeof sizes[0])];
}

/* Every request through the handle, freed through either door, then every
 * one through the pool, freed through the handle; stats balance. */
static void two_doors(const tpool *t, void *l)
{
    static void *b[NREQ];
    mr_stats s0 = tp_stats(t);
    size_t in_use = 0;
    for (size_t k = 0; k < NREQ; k++) {
        size_t size, align;
        request(t, k, &size, &align);
        b[k] = local_alloc(t, l, size, align);
        assert_non_null(b[k]);
        assert_int_equal((uintptr_t)b[k] & (align - 1), 0);
        memset(b[k], (int)k, size);
        in_use += tp_block_size(t, size, align);
    }
    mr_stats s = tp_stats(t);
    assert_int_equal(s.allocations, s0.allocations + NREQ);
    assert_int_equal(s.in_use, s0.in_use + in_use);
    assert_true(tp_check(t));
    for (size_t k = 0; k < NREQ; k++) {
        size_t size, align;
        request(t, k, &size, &align);
        for (size_t i = 0; i < size; i++)
            if (((unsigned char *)b[k])[i] != (unsigned char)k)
                fail_msg("request %zu: byte %zu overwritten", k, i);
        if (k % 2 == 0)
            local_free(t, l, b[k], size, align);
        else
            pool_free(t, b[k], size, align);
    }
    assert_int_equal(tp_stats(t).in_use, s0.in_use);
    for (size_t k = 0; k < NREQ; k++) {
        size_t size, align;
        request(t, k, &size, &align);
        b[k] = tp_alloc(t, size, align);
        assert_non_null(b[k]);
    }
    for (size_t k = NREQ; k-- > 0;) {
        size_t size, align;
        request(t, k, &size, &align);
        local_free(t, l, b[k], size, align);
    }
    s = tp_stats(t);
    assert_int_equal(s.allocations, s0.allocations + 2 * NREQ);
    assert_int_equal(s.in_use, s0.in_use);
    assert_true(tp_check(t));
}

static void single_thread(tpool *t)
{
    mrt_assert_fails(mr_pools_local_get(NULL), EINVAL);
    mrt_assert_fails(mr_objpool_local_get(NULL), EINVAL);
    void *l = local_of(t);
    assert_non_null(l);
    assert_ptr_equal(local_of(t), l);
    two_doors(t, l);

    /* bad requests: NULL, errno, nothing changed */
    mr_stats s0 = tp_stats(t);
    if (t->p != NULL) {
        mrt_assert_fails(mr_pools_local_alloc(l, 16, 0), EINVAL);
        mrt_assert_fails(mr_pools_local_alloc(l, 16, 3), EINVAL);
        mrt_assert_fails(mr_pools_local_alloc(l, 16, 48), EINVAL);
        mrt_assert_fails(mr_pools_local_alloc(l, SIZE_MAX, 8), ENOMEM);
        mrt_assert_fails(mr_pools_local_alloc(l, SIZE_MAX / 2, 16), ENOMEM);
        mrt_assert_fails(mr_pools_local_alloc(l, SIZE_MAX - 4096, 4096), ENOMEM);
        mr_pools_local_free(l, NULL, 16, 8);
        mr_pools_local_free(l, NULL, 0, 1);
    } else {
        mr_objpool_local_free(l, NULL);
    }
    mr_stats s = tp_stats(t);
    assert_int_equal(s.allocations, s0.allocations);
    assert_int_equal(s.in_use, s0.in_use);
    assert_int_equal(s.held, s0.held);

    /* reset, release and flush keep the handle */
    size_t size, align;
    request(t, 5, &size, &align);
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 100; i++)
            assert_non_null(local_alloc(t, l, size, align));
        if (round == 0)
            t->p != NULL ? mr_pools_reset(t->p) : mr_objpool_reset(t->o);
        else if (round == 1)
            t->p != NULL ? mr_pools_release(t->p) : mr_objpool_release(t->o);
        else
            tp_flush(t);
        assert_ptr_equal(local_of(t), l);
        if (round < 2)
            assert_int_equal(tp_stats(t).in_use, 0);
        assert_true(tp_check(t));
        two_doors(t, l);
    }
}

static void test_pools_one_thread(void **state)
{
    mrt_upstream *u = *state;
    for (int ts = 0; ts < 2; ts++) {
        tpool t = make_pools(&u->base, ts);
        single_thread(&t);
        tp_destroy(&t);
        mrt_upstream_restart(u);
    }
}

static void test_objpool_one_thread(void **state)
{
    mrt_upstream *u = *state;
    for (int ts = 0; ts < 2; ts++) {
        tpool t = make_objpool(&u->base, ts, 40);
        single_thread(&t);
        tp_destroy(&t);
        mrt_upstream_restart(u);
    }
}

/* A pool that is not thread-safe has one handle; a thread-safe one, one per
 * thread (taken below in a thread of its own). */
static void *handle_main(void *arg)
{
    const tpool *t = arg;
    void *l = local_of(t);
    return l == local_of(t) ? l : NULL;
}

static void test_one_handle_per_thread(void **state)
{
    locked_upstream lu;
    lu_init(&lu, *state);
    for (int kind = 0; kind < 4; kind++) {
        bool ts = kind % 2 == 1;
        tpool t = kind < 2 ? make_pools(&lu.base, ts) : make_objpool(&lu.base, ts, 32);
        void *mine = local_of(&t), *theirs = NULL;
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, handle_main, &t), 0);
        assert_int_equal(pthread_join(th, &theirs), 0);
        assert_non_null(theirs);
        if (ts)
            assert_ptr_not_equal(mine, theirs);
        else
            assert_ptr_equal(mine, theirs);
        assert_true(tp_check(&t));
        tp_destroy(&t);
    }
    lu_fini(&lu);
}

/* ---- threads: remote frees, frees after the allocating thread exited ---- */

enum { NBLOCKS = 3000 };

typedef struct hand {
    const tpool *t;
    void **blocks;
    size_t n, first; /* blocks[first .. first + n) */
    bool alloc;      /* allocate them (else free them) */
    long bad;
} hand;

static size_t hand_size(const tpool *t, size_t k) { return t->o != NULL ? t->osize : 1 + k % 700; }

static void *hand_main(void *arg)
{
    hand *h = arg;
    void *l = local_of(h->t);
    if (l == NULL) {
        h->bad++;
        return NULL;
    }
    for (size_t k = h->first; k < h->first + h->n; k++) {
        size_t size = hand_size(h->t, k);
        if (h->alloc) {
            h->blocks[k] = local_alloc(h->t, l, size, 8);
            if (h->blocks[k] == NULL)
                h->bad++;
            else
                memset(h->blocks[k], 0x3c, size);
        } else if (((unsigned char *)h->blocks[k])[size - 1] != 0x3c) {
            h->bad++;
        } else if (k % 3 == 0) {
            pool_free(h->t, h->blocks[k], size, 8); /* the other door */
        } else {
            local_free(h->t, l, h->blocks[k], size, 8);
        }
    }
    return NULL;
}

static void run_hand(hand *h)
{
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, hand_main, h), 0);
    assert_int_equal(pthread_join(th, NULL), 0); /* the thread has exited */
    assert_int_equal(h->bad, 0);
}

/* One thread allocates through its handle and exits; another frees half
 * through its own (or the pool) and exits; this thread frees the rest
 * through its handle and hands back what it caches.  Then a fresh thread
 * allocates as many again: it takes an exited thread's cache and the
 * blocks they all left (a chunk more at most). */
static void remote_frees(const tpool *t)
{
    static void *blocks[NBLOCKS];
    mr_stats s0 = tp_stats(t);
    size_t in_use = 0;
    for (size_t k = 0; k < NBLOCKS; k++)
        in_use += tp_block_size(t, hand_size(t, k), 8);
    hand h = {t, blocks, NBLOCKS, 0, true, 0};
    run_hand(&h);
    mr_stats s = tp_stats(t);
    assert_int_equal(s.allocations, s0.allocations + NBLOCKS);
    assert_int_equal(s.in_use, s0.in_use + in_use);
    assert_true(tp_check(t));
    h = (hand){t, blocks, NBLOCKS / 2, 0, false, 0};
    run_hand(&h);
    assert_true(tp_check(t));
    h = (hand){t, blocks, NBLOCKS - NBLOCKS / 2, NBLOCKS / 2, false, 0};
    hand_main(&h); /* this thread */
    assert_int_equal(h.bad, 0);
    s = tp_stats(t);
    assert_int_equal(s.allocations, s0.allocations + NBLOCKS);
    assert_int_equal(s.in_use, s0.in_use);
    assert_true(tp_check(t));
    tp_flush(t); /* (else this thread's lists keep what it freed, up to two batches a class) */
    h = (hand){t, blocks, NBLOCKS, 0, true, 0};
    run_hand(&h);
    mr_stats s2 = tp_stats(t);
    assert_true(s2.held >= s.held && s2.held - s.held <= 64 * KiB); /* a chunk at most (tsafe.c's bound) */
    assert_int_equal(s2.in_use, s0.in_use + in_use);
    h = (hand){t, blocks, NBLOCKS, 0, false, 0};
    hand_main(&h);
    assert_int_equal(h.bad, 0);
    assert_int_equal(tp_stats(t).in_use, s0.in_use);
    assert_true(tp_check(t));
}

static void test_remote_frees(void **state)
{
    locked_upstream lu;
    lu_init(&lu, *state);
    tpool t = make_pools(&lu.base, true);
    remote_frees(&t);
    tp_destroy(&t);
    t = make_objpool(&lu.base, true, 48);
    remote_frees(&t);
    tp_destroy(&t);
    lu_fini(&lu);
}

/* A thread's first handle of a thread-safe pool needs its cache from the
 * upstream: refused, NULL with ENOMEM and nothing changed; given, the
 * handle works. */
static void *first_handle_main(void *arg)
{
    tpool *t = arg;
    errno = 0;
    void *l = local_of(t);
    return l == NULL && errno == ENOMEM ? (void *)1 : NULL;
}

static void test_first_handle_refused(void **state)
{
    mrt_upstream *u = *state;
    for (int kind = 0; kind < 2; kind++) {
        tpool t = kind == 0 ? make_pools(&u->base, true) : make_objpool(&u->base, true, 24);
        mr_stats s0 = tp_stats(&t);
        u->fail_at = u->calls + 1; /* the cache */
        pthread_t th;
        void *refused = NULL;
        assert_int_equal(pthread_create(&th, NULL, first_handle_main, &t), 0);
        assert_int_equal(pthread_join(th, &refused), 0);
        assert_non_null(refused);
        mr_stats s = tp_stats(&t);
        assert_int_equal(s.held, s0.held);
        assert_int_equal(s.allocations, s0.allocations);
        assert_true(tp_check(&t));
        u->fail_at = 0;
        void *l = local_of(&t);
        assert_non_null(l);
        void *b = local_alloc(&t, l, 24, 8);
        assert_non_null(b);
        local_free(&t, l, b, 24, 8);
        assert_int_equal(tp_stats(&t).in_use, 0);
        tp_destroy(&t);
        mrt_upstream_restart(u);
    }
}

/* More thread-safe pools alive than the threads' tables have entries: the
 * pools past them work the same through their handles. */
static void *many_main(void *arg)
{
    tpool *pools = arg;
    long bad = 0;
    for (size_t k = 0; k < 40; k++) {
        const tpool *t = &pools[k];
        void *l = local_of(t);
        void *b[64];
        for (size_t i = 0; i < 64; i++)
            if ((b[i] = i % 2 ? local_alloc(t, l, 24 + k, 8) : tp_alloc(t, 24 + k, 8)) == NULL)
                bad++;
        for (size_t i = 0; i < 64; i++)
            if (b[i] != NULL)
                local_free(t, l, b[i], 24 + k, 8);
        if (local_of(t) != l)
            bad++;
    }
    return (void *)(intptr_t)bad;
}

static void test_more_pools_than_entries(void **state)
{
    locked_upstream lu;
    lu_init(&lu, *state);
    static tpool pools[40];
    for (size_t k = 0; k < 40; k++)
        pools[k] = k % 2 ? make_pools(&lu.base, true) : make_objpool(&lu.base, true, 24 + k);
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&th[i], NULL, many_main, pools), 0);
    for (int i = 0; i < 2; i++) {
        void *bad = NULL;
        assert_int_equal(pthread_join(th[i], &bad), 0);
        assert_null(bad);
    }
    assert_null(many_main(pools));
    for (size_t k = 0; k < 40; k++) {
        assert_int_equal(tp_stats(&pools[k]).in_use, 0);
        assert_true(tp_check(&pools[k]));
        tp_destroy(&pools[k]);
    }
    lu_fini(&lu);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        mrt_unit_test(test_pools_one_thread),
        mrt_unit_test(test_objpool_one_thread),
        mrt_unit_test(test_one_handle_per_thread),
        mrt_unit_test(test_remote_frees),
        mrt_unit_test(test_first_handle_refused),
        mrt_unit_test(test_more_pools_than_entries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
