/* SPDX-License-Identifier: MIT */
/* tests/test_blocks_threads.c -- the block pools under several threads.
 * Built and run under TSan in CI (MEMRES_SANITIZE=thread).
 *
 * The shared pool is hammered by THREADS threads, OPS operations each: get,
 * put, and exchange of blocks through a table of atomic slots, so that most
 * blocks are put by a thread other than the one that got them.  Each block
 * carries its owner's stamp while owned; a block handed to two owners at
 * once (a pool bug) breaks a stamp or shows up as a TSan race.  Afterwards
 * every thread has exited, so its cache must be back in the shared list:
 * nothing is in use, the pool checks, and the cached blocks serve new gets
 * without the page source.  A private pool (mutex only) gets the same
 * treatment on a smaller scale, and a fork child must find the shared pool
 * usable.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support.h"

#include "memres/blocks.h"

#define THREADS 4
#define OPS 100000
#define SLOTS 64
#define STASH 16

typedef struct stamp {
    uint64_t owner; /* thread number + 1 */
    uint64_t serial;
} stamp;

typedef struct hammer {
    mr_blocks *pool;
    _Atomic(void *) *slots;
    int id;
    long ops;
    uint64_t seed;
    long bad;         /* stamp mismatches seen (must stay 0) */
    long cross_puts;  /* puts of blocks another thread got */
} hammer;

static void stamp_block(void *blk, size_t bs, uint64_t owner, uint64_t serial)
{
    stamp s = {owner, serial};
    memcpy(blk, &s, sizeof s);
    memcpy((char *)blk + bs - sizeof s, &s, sizeof s);
}

static bool stamp_ok(const void *blk, size_t bs, uint64_t *owner)
{
    stamp a, b;
    memcpy(&a, blk, sizeof a);
    memcpy(&b, (const char *)blk + bs - sizeof b, sizeof b);
    *owner = a.owner;
    return a.owner == b.owner && a.serial == b.serial && a.owner != 0;
}

static void *hammer_main(void *arg)
{
    hammer *h = arg;
    const size_t bs = mr_blocks_block_size(h->pool);
    const uint64_t me = (uint64_t)h->id + 1;
    void *stash[STASH];
    int n = 0;
    uint64_t serial = 0;
    for (long i = 0; i < h->ops; i++) {
        uint64_t r = mrt_rand(&h->seed);
        unsigned op = (unsigned)(r % 8);
        uint64_t owner;
        if (op < 3 && n < STASH) { /* get */
            void *b = mr_blocks_get(h->pool);
            if (b == NULL) {
                h->bad++;
                continue;
            }
            stamp_block(b, bs, me, ++serial);
            stash[n++] = b;
        } else if (op < 6 && n > 0) { /* put one of ours */
            void *b = stash[--n];
            if (!stamp_ok(b, bs, &owner) || owner != me)
                h->bad++;
            mr_blocks_put(h->pool, b);
        } else { /* exchange through a slot: blocks change threads */
            void *mine = n > 0 ? stash[--n] : NULL;
            if (mine != NULL && (!stamp_ok(mine, bs, &owner) || owner != me))
                h->bad++;
            void *got = atomic_exchange(&h->slots[(r >> 8) % SLOTS], mine);
            if (got != NULL) {
                if (!stamp_ok(got, bs, &owner))
                    h->bad++;
                if (owner != me)
                    h->cross_puts++;
                if ((r >> 20) & 1) {
                    mr_blocks_put(h->pool, got); /* often a block another thread got */
                } else {
                    stamp_block(got, bs, me, ++serial);
                    stash[n++] = got;
                }
            }
        }
    }
    while (n > 0)
        mr_blocks_put(h->pool, stash[--n]);
    return NULL;
}

static void run_hammer(mr_blocks *pool, long ops, uint64_t seed)
{
    static _Atomic(void *) slots[SLOTS];
    for (int i = 0; i < SLOTS; i++)
        atomic_store(&slots[i], NULL);
    pthread_t t[THREADS];
    hammer h[THREADS];
    for (int i = 0; i < THREADS; i++) {
        h[i] = (hammer){.pool = pool, .slots = slots, .id = i, .ops = ops, .seed = seed + (uint64_t)i * 7919};
        assert_int_equal(pthread_create(&t[i], NULL, hammer_main, &h[i]), 0);
    }
    long cross = 0;
    for (int i = 0; i < THREADS; i++) {
        assert_int_equal(pthread_join(t[i], NULL), 0);
        assert_int_equal(h[i].bad, 0);
        cross += h[i].cross_puts;
    }
    for (int i = 0; i < SLOTS; i++) {
        void *b = atomic_exchange(&slots[i], NULL);
        mr_blocks_put(pool, b); /* NULL: no-op */
    }
    printf("# %d threads x %ld ops: %ld blocks moved between threads\n", THREADS, ops, cross);
    assert_true(cross > 0);
}

static void test_shared_hammer(void **state)
{
    (void)state;
    mr_blocks *s = mr_blocks_shared();
    const size_t bs = mr_blocks_block_size(s);
    mr_stats base, st;
    mr_blocks_stats(s, &base);
    run_hammer(s, OPS, mrt_seed(20240601));

    /* every worker exited: its cache is back in the shared list */
    mr_blocks_stats(s, &st);
    assert_int_equal(st.in_use, base.in_use);
    assert_true(st.allocations >= base.allocations + THREADS * (OPS / 8));
    assert_true(mr_blocks_check(s));
    printf("# shared pool after the hammer: %zu blocks held, %zu upstream allocations for %zu gets\n",
           st.held / bs, st.upstream_allocations - base.upstream_allocations, st.allocations - base.allocations);

    /* the cached blocks serve this thread's gets without the page source */
    size_t cached = (st.held - st.in_use) / bs;
    assert_true(cached > 0);
    void **blk = calloc(cached, sizeof *blk);
    assert_non_null(blk);
    for (size_t k = 0; k < cached; k++) {
        blk[k] = mr_blocks_get(s);
        assert_non_null(blk[k]);
    }
    mr_stats st2;
    mr_blocks_stats(s, &st2);
    assert_int_equal(st2.upstream_allocations, st.upstream_allocations);
    for (size_t k = 0; k < cached; k++)
        mr_blocks_put(s, blk[k]);
    free(blk);
    (void)mr_blocks_trim(s);
    mr_blocks_stats(s, &st);
    assert_int_equal(st.held, st.in_use);
    assert_true(mr_blocks_check(s));
}

/* A thread that ends with a full cache: the blocks must come back. */
static void *fill_cache_and_exit(void *arg)
{
    mr_blocks *s = arg;
    void *b[8];
    for (int k = 0; k < 8; k++)
        b[k] = mr_blocks_get(s);
    for (int k = 0; k < 8; k++)
        mr_blocks_put(s, b[k]);
    return NULL;
}

static void test_shared_thread_exit_flushes(void **state)
{
    (void)state;
    mr_blocks *s = mr_blocks_shared();
    const size_t bs = mr_blocks_block_size(s);
    (void)mr_blocks_trim(s);
    mr_stats base, st;
    mr_blocks_stats(s, &base);
    for (int round = 0; round < 4; round++) {
        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, fill_cache_and_exit, s), 0);
        assert_int_equal(pthread_join(t, NULL), 0);
    }
    mr_blocks_stats(s, &st);
    assert_int_equal(st.in_use, base.in_use);
    /* the first thread took 8 blocks from the page source; the others reused them */
    assert_int_equal(st.upstream_allocations - base.upstream_allocations, 8);
    assert_int_equal(st.held - st.in_use, 8 * bs);
    assert_int_equal(mr_blocks_trim(s), 8 * bs);
    assert_true(mr_blocks_check(s));
}

static void test_private_pool_threads(void **state)
{
    (void)state;
    mr_blocks_options o = {.block_size = 16 << 10, .max_free = 32 << 10};
    mr_blocks *p = mr_blocks_create(&o);
    assert_non_null(p);
    run_hammer(p, OPS / 5, 77);
    mr_stats st;
    mr_blocks_stats(p, &st);
    assert_int_equal(st.in_use, 0);
    assert_true(st.held <= (size_t)(32 << 10)); /* max_free holds under threads too */
    assert_true(mr_blocks_check(p));
    mr_blocks_destroy(p);
}

static void test_shared_after_fork(void **state)
{
    (void)state;
    mr_blocks *s = mr_blocks_shared();
    void *held = mr_blocks_get(s);
    assert_non_null(held);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int ok = 1;
        for (int i = 0; i < 100 && ok; i++) {
            void *b = mr_blocks_get(s);
            ok = b != NULL;
            mr_blocks_put(s, b);
        }
        mr_blocks_put(s, held);
        ok = ok && mr_blocks_check(s);
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    mr_blocks_put(s, held);
    assert_true(mr_blocks_check(s));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shared_hammer),
        cmocka_unit_test(test_shared_thread_exit_flushes),
        cmocka_unit_test(test_private_pool_threads),
        cmocka_unit_test(test_shared_after_fork),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
