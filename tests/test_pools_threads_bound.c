/* SPDX-License-Identifier: MIT */
/* tests/test_pools_threads_bound.c -- thread-safe size-class pools and
 * object pools under threads: bounded memory, and pool and thread
 * lifetimes.  Built and run under TSan and ASan in CI
 * (MEMRES_SANITIZE=thread|address).
 *
 * The contract (memres/pools.h, memres/objpool.h, src/tcache.c): release,
 * reset and destroy run alone, but a thread that used the pool may exit at
 * any time, even while another thread destroys the pool.  What users rely
 * on, tested here:
 *   - memory stays bounded: rounds of fresh producer and consumer threads
 *     (some idling midway with their caches) do not grow held (exact
 *     mr_stats.held, not RSS), and a thousand short-lived threads reuse the
 *     caches and blocks of the earlier ones, one at a time without a single
 *     upstream call once the patterns are all seen;
 *   - lifetimes: a pool destroyed while the threads that used it exit, and
 *     thousands of pools created and destroyed at reused addresses while a
 *     worker uses each (a stale per-thread cache entry never serves a new
 *     pool).
 * Every block is tagged with a unique id, checked when it is freed
 * (tests/pools_threads_helpers.h); the fixture's upstream proves at the end
 * that every pool gave everything back.
 * Worker threads never call cmocka (it is not thread-safe): they count what
 * went wrong and the main thread asserts the counts are 0, after joining
 * them all.  No assertion measures time.  MEMRES_TEST_SCALE (percent)
 * shrinks the iteration counts, MEMRES_TEST_FACTOR (an integer, default 1)
 * multiplies them (the `slow` variants in tests/CMakeLists.txt).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "support.h"
#include "pools_threads_helpers.h"

/* ---- 3: bounded memory over rounds of fresh threads ---- */

/* Producers hand their blocks to consumers through one mailbox (it never
 * fills: room for the whole round). */
typedef struct mailbox {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    item *items;
    size_t n;
    int producing;   /* producers not done yet */
    bool wait_all;   /* consumers start only when every producer is done */
    bool over;       /* the round is over: idle producers may exit */
} mailbox;

typedef struct pc_thread {
    const tpool *tp;
    mailbox *mb;
    int id;
    size_t n;        /* producer: blocks to allocate */
    size_t stop_at;  /* producer: stops allocating here, stays alive until the round is over */
    uint64_t seed;
    size_t allocations;
    long bad;
} pc_thread;

static void mb_put(mailbox *mb, const item *it, size_t n)
{
    pthread_mutex_lock(&mb->mu);
    memcpy(&mb->items[mb->n], it, n * sizeof *it);
    mb->n += n;
    pthread_cond_broadcast(&mb->cv);
    pthread_mutex_unlock(&mb->mu);
}

static void *producer_main(void *arg)
{
    pc_thread *p = arg;
    item buf[32];
    size_t nb = 0;
    for (size_t i = 0; i < p->stop_at; i++) {
        size_t size = 16 + (size_t)(mrt_rand(&p->seed) % 497); /* 16..512 */
        if (item_new(p->tp, size, 8, ((uint64_t)p->id + 1) << 40 | i, &buf[nb], &p->bad)) {
            p->allocations++;
            if (++nb == 32) {
                mb_put(p->mb, buf, nb);
                nb = 0;
            }
        }
    }
    mb_put(p->mb, buf, nb);
    pthread_mutex_lock(&p->mb->mu);
    p->mb->producing--;
    pthread_cond_broadcast(&p->mb->cv);
    while (p->stop_at < p->n && !p->mb->over) /* stopped midway: idle, cache held */
        pthread_cond_wait(&p->mb->cv, &p->mb->mu);
    pthread_mutex_unlock(&p->mb->mu);
    return NULL;
}

static void *consumer_main(void *arg)
{
    pc_thread *c = arg;
    item buf[32];
    for (;;) {
        pthread_mutex_lock(&c->mb->mu);
        while ((c->mb->n == 0 || (c->mb->wait_all && c->mb->producing > 0)) && c->mb->producing > 0)
            pthread_cond_wait(&c->mb->cv, &c->mb->mu);
        size_t k = c->mb->n < 32 ? c->mb->n : 32;
        c->mb->n -= k;
        memcpy(buf, &c->mb->items[c->mb->n], k * sizeof *buf);
        pthread_mutex_unlock(&c->mb->mu);
        if (k == 0)
            return NULL; /* empty and no producer left */
        for (size_t i = 0; i < k; i++)
            item_free(c->tp, &buf[i], &c->bad);
    }
}

#define PC_ROUNDS 8

static void run_rounds(const tpool *t, size_t n, uint64_t seed)
{
    item *items = malloc(2 * n * sizeof *items);
    assert_non_null(items);
    size_t held[PC_ROUNDS + 1] = {0}, allocations = 0;
    for (int round = 1; round <= PC_ROUNDS; round++) {
        /* shapes: 1, 2, 7: consumers wait until everything is allocated
         * (the peak live set); 4, 6: producer 1 stops halfway and idles
         * with its cache until the round is over; 3, 5, 8: both at once */
        mailbox mb = {.items = items, .producing = 2, .wait_all = round <= 2 || round == 7};
        pthread_mutex_init(&mb.mu, NULL);
        pthread_cond_init(&mb.cv, NULL);
        pc_thread pc[4];
        pthread_t th[4];
        for (int i = 0; i < 4; i++) {
            /* the same sizes every round: the class mix, hence what each
             * class needs at the peak, does not change, so growth can only
             * be the pool's (with a new mix per round, held follows the
             * largest demand each class ever saw, which at small scales
             * varies more than 20% from round to round) */
            pc[i] = (pc_thread){.tp = t, .mb = &mb, .id = i, .n = n, .stop_at = n, .seed = seed + (uint64_t)i};
            if (i == 1 && (round == 4 || round == 6))
                pc[i].stop_at = n / 2;
            assert_int_equal(pthread_create(&th[i], NULL, i < 2 ? producer_main : consumer_main, &pc[i]), 0);
        }
        for (int i = 2; i < 4; i++)
            assert_int_equal(pthread_join(th[i], NULL), 0);
        pthread_mutex_lock(&mb.mu);
        mb.over = true;
        pthread_cond_broadcast(&mb.cv);
        pthread_mutex_unlock(&mb.mu);
        for (int i = 0; i < 2; i++)
            assert_int_equal(pthread_join(th[i], NULL), 0);
        for (int i = 0; i < 4; i++) {
            assert_int_equal(pc[i].bad, 0);
            allocations += pc[i].allocations;
        }
        assert_int_equal(mb.n, 0);
        pthread_cond_destroy(&mb.cv);
        pthread_mutex_destroy(&mb.mu);
        mr_stats s = tp_stats(t);
        assert_int_equal(s.in_use, 0);
        assert_int_equal(s.allocations, allocations);
        assert_true(tp_check(t));
        held[round] = s.held;
        printf("# %s round %d: %zu B held\n", tp_name(t), round, s.held);
    }
    /* round 2 had the peak live set with the caches of the round before it
     * back in the shared lists; nothing after it may need 20% more */
    for (int round = 3; round <= PC_ROUNDS; round++)
        if (held[round] > held[2] + held[2] / 5)
            fail_msg("round %d holds %zu B, round 2 held %zu B: fresh threads grow the pool", round, held[round],
                     held[2]);
    free(items);
}

static void test_pools_bounded_rounds(void **state)
{
    locked_upstream lu;
    lu_init(&lu, *state);
    tpool t = tp_create_pools(&lu.base);
    /* at least 5000 objects a producer, however small MEMRES_TEST_SCALE:
     * with a few hundred (memcheck's 5%), one chunk more or less is 20% */
    size_t n = scaled(20000);
    run_rounds(&t, n > 5000 ? n : 5000, mrt_seed(20250301));
    tp_destroy(&t);
    lu_fini(&lu);
}

/* ---- 4: a thousand short-lived threads ---- */

#define EXIT_ALLOCS 12

typedef struct exiter {
    const tpool *tp;
    uint64_t seed;
    item handed[EXIT_ALLOCS / 2]; /* for the main thread to free */
    long bad;
} exiter;

static void *exiter_main(void *arg)
{
    exiter *e = arg;
    item m[EXIT_ALLOCS];
    for (size_t i = 0; i < EXIT_ALLOCS; i++) {
        size_t size, align;
        pick_request(e->tp, &e->seed, false, &size, &align);
        if (!item_new(e->tp, size, align, i + 1, &m[i], &e->bad))
            return NULL;
    }
    for (size_t i = 0; i < EXIT_ALLOCS; i++) {
        if (i % 2 == 0)
            item_free(e->tp, &m[i], &e->bad);
        else
            e->handed[i / 2] = m[i];
    }
    return NULL;
}

/* Threads j = from..to-1, width at a time; thread j asks for pattern j % 10.
 * The main thread frees what each wave handed over and flushes. */
static void run_exiters(const tpool *t, size_t from, size_t to, size_t width)
{
    exiter e[4];
    pthread_t th[4];
    for (size_t j = from; j < to; j += width) {
        size_t w = to - j < width ? to - j : width;
        for (size_t k = 0; k < w; k++) {
            e[k] = (exiter){.tp = t, .seed = 4000 + (j + k) % 10};
            assert_int_equal(pthread_create(&th[k], NULL, exiter_main, &e[k]), 0);
        }
        long bad = 0;
        for (size_t k = 0; k < w; k++) {
            assert_int_equal(pthread_join(th[k], NULL), 0);
            assert_int_equal(e[k].bad, 0);
            for (size_t i = 0; i < EXIT_ALLOCS / 2; i++)
                item_free(t, &e[k].handed[i], &bad);
        }
        assert_int_equal(bad, 0);
        tp_flush(t);
    }
}

static void test_pools_thread_exit(void **state)
{
    locked_upstream lu;
    lu_init(&lu, *state);
    tpool t = tp_create_pools(&lu.base);
    const size_t n = scaled(1000);
    /* one at a time: every free block is reachable by the next thread, and
     * the ten patterns are all seen by thread 10: from then on no thread
     * needs anything from upstream, its cache included */
    run_exiters(&t, 0, 10, 1);
    mr_stats s10 = tp_stats(&t);
    run_exiters(&t, 10, n, 1);
    mr_stats s = tp_stats(&t);
    assert_int_equal(s.in_use, 0);
    assert_int_equal(s.held, s10.held);
    assert_int_equal(s.upstream_allocations, s10.upstream_allocations);
    assert_true(tp_check(&t));
    printf("# %zu threads one at a time: %zu B held after 10 and after all\n", n, s.held);
    /* four at a time: caches are reused (a leaked or unreused cache costs
     * one upstream allocation per thread); the chunk growth that four
     * threads holding regions at once may cause is far below that */
    run_exiters(&t, 0, 100, 4);
    mr_stats s100 = tp_stats(&t);
    run_exiters(&t, 100, 100 + n, 4);
    s = tp_stats(&t);
    assert_int_equal(s.in_use, 0);
    printf("# %zu threads four at a time: %zu B held after 100, %zu B after all, %zu upstream allocations "
           "meanwhile\n",
           n, s100.held, s.held, s.upstream_allocations - s100.upstream_allocations);
    assert_true(s.upstream_allocations - s100.upstream_allocations < n / 4 + 64);
    assert_true(tp_check(&t));
    tp_destroy(&t);
    lu_fini(&lu);
}

/* ---- 5: destroy while the threads that used the pool exit ---- */

typedef struct racer {
    const tpool *tp;
    sem_t *done;
    uint64_t seed;
    bool flush;
    long bad;
} racer;

static void *racer_main(void *arg)
{
    racer *r = arg;
    item m[40];
    for (size_t i = 0; i < 40; i++) {
        size_t size, align;
        pick_request(r->tp, &r->seed, true, &size, &align);
        if (!item_new(r->tp, size, align, i + 1, &m[i], &r->bad))
            break;
        if (i % 2 == 1)
            item_free(r->tp, &m[i - 1], &r->bad); /* the rest stays live: destroy takes it */
    }
    if (r->flush)
        tp_flush(r->tp);
    sem_post(r->done); /* from here on no call on the pool: only the exit */
    return NULL;
}

static void test_destroy_races_thread_exit(void **state)
{
    locked_upstream lu;
    lu_init(&lu, *state);
    const size_t rounds = scaled(200);
    enum { T = 3 };
    sem_t done;
    assert_int_equal(sem_init(&done, 0, 0), 0);
    for (size_t round = 0; round < rounds; round++) {
        tpool t = round % 2 == 0 ? tp_create_pools(&lu.base) : tp_create_objpool(&lu.base, 32, 16);
        racer r[T];
        pthread_t th[T];
        for (int i = 0; i < T; i++) {
            r[i] = (racer){&t, &done, round * 3 + (uint64_t)i, (round / 2 + (size_t)i) % 2 == 0, 0};
            assert_int_equal(pthread_create(&th[i], NULL, racer_main, &r[i]), 0);
        }
        for (int i = 0; i < T; i++)
            while (sem_wait(&done) != 0)
                ;
        tp_destroy(&t); /* while the three exit */
        for (int i = 0; i < T; i++) {
            assert_int_equal(pthread_join(th[i], NULL), 0);
            assert_int_equal(r[i].bad, 0);
        }
    }
    sem_destroy(&done);
    lu_fini(&lu); /* the teardown: every pool gave everything back */
}

/* ---- 6: pools created and destroyed by the thousand ---- */

#define RING 10 /* more pools than a thread's direct-mapped table has slots */

typedef struct churn_slot {
    tpool tp;
    size_t allocations; /* by the worker */
    item live;          /* the block the worker keeps in it (p NULL: none) */
} churn_slot;

typedef struct churn {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    churn_slot slot[RING];
    size_t step;     /* the step the worker is asked to do */
    size_t done;     /* the last step it finished */
    size_t skip;     /* the slot it leaves alone in this step */
    bool quit;
    uint64_t seed;
    long bad;
} churn;

/* One step: on every pool but the skipped one, allocate three blocks, free
 * two and the one kept from the step before, keep the third. */
static void churn_step(churn *c, size_t skip)
{
    for (size_t k = 0; k < RING; k++) {
        if (k == skip)
            continue;
        churn_slot *s = &c->slot[k];
        item m[3];
        for (size_t i = 0; i < 3; i++) {
            size_t size, align;
            pick_request(&s->tp, &c->seed, false, &size, &align);
            if (item_new(&s->tp, size, align, s->allocations + 1, &m[i], &c->bad))
                s->allocations++;
            else
                m[i].p = NULL;
        }
        if (s->live.p != NULL)
            item_free(&s->tp, &s->live, &c->bad);
        for (size_t i = 0; i < 2; i++)
            if (m[i].p != NULL)
                item_free(&s->tp, &m[i], &c->bad);
        s->live = m[2];
    }
}

static void *churn_main(void *arg)
{
    churn *c = arg;
    size_t seen = 0;
    for (;;) {
        pthread_mutex_lock(&c->mu);
        while (c->step == seen && !c->quit)
            pthread_cond_wait(&c->cv, &c->mu);
        if (c->quit) {
            pthread_mutex_unlock(&c->mu);
            return NULL;
        }
        seen = c->step;
        size_t skip = c->skip;
        pthread_mutex_unlock(&c->mu);
        churn_step(c, skip);
        pthread_mutex_lock(&c->mu);
        c->done = seen;
        pthread_cond_broadcast(&c->cv);
        pthread_mutex_unlock(&c->mu);
    }
}

static tpool churn_new(mr_resource *up, size_t k)
{
    return k % 2 == 0 ? tp_create_pools(up) : tp_create_objpool(up, 48, 16);
}

static void test_create_destroy_churn(void **state)
{
    locked_upstream lu;
    lu_init(&lu, *state);
    static churn c;
    memset(&c, 0, sizeof c);
    pthread_mutex_init(&c.mu, NULL);
    pthread_cond_init(&c.cv, NULL);
    c.seed = mrt_seed(20250601);
    for (size_t k = 0; k < RING; k++)
        c.slot[k].tp = churn_new(&lu.base, k);
    c.skip = RING; /* none */
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, churn_main, &c), 0);
    const size_t steps = scaled(2000);
    size_t reused = 0;
    for (size_t step = 1; step <= steps; step++) {
        size_t v = step % RING; /* the worker did step - 1 on it, leaves it alone now */
        pthread_mutex_lock(&c.mu);
        c.step = step;
        c.skip = v;
        pthread_cond_broadcast(&c.cv);
        pthread_mutex_unlock(&c.mu);
        /* while the worker uses the other pools: pool v is exact, then it
         * goes, and a new one (often at the same address) takes its place */
        churn_slot *s = &c.slot[v];
        mr_stats st = tp_stats(&s->tp);
        assert_int_equal(st.allocations, s->allocations);
        assert_int_equal(st.in_use, s->live.p != NULL ? tp_block_size(&s->tp, s->live.size, s->live.align) : 0);
        assert_true(tp_check(&s->tp));
        const void *old = s->tp.p != NULL ? (const void *)s->tp.p : (const void *)s->tp.o;
        tp_destroy(&s->tp);
        s->tp = churn_new(&lu.base, v);
        s->allocations = 0;
        s->live.p = NULL;
        reused += (s->tp.p != NULL ? (const void *)s->tp.p : (const void *)s->tp.o) == old;
        pthread_mutex_lock(&c.mu);
        while (c.done != step)
            pthread_cond_wait(&c.cv, &c.mu);
        pthread_mutex_unlock(&c.mu);
    }
    pthread_mutex_lock(&c.mu);
    c.quit = true;
    pthread_cond_broadcast(&c.cv);
    pthread_mutex_unlock(&c.mu);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(c.bad, 0);
    for (size_t k = 0; k < RING; k++) {
        churn_slot *s = &c.slot[k];
        assert_int_equal(tp_stats(&s->tp).allocations, s->allocations);
        assert_true(tp_check(&s->tp));
        tp_destroy(&s->tp); /* with its live block and the exited worker's cache */
    }
    printf("# %zu pools destroyed and replaced, %zu at the address of the one before\n", steps, reused);
    pthread_cond_destroy(&c.cv);
    pthread_mutex_destroy(&c.mu);
    lu_fini(&lu);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        mrt_unit_test(test_pools_bounded_rounds),
        mrt_unit_test(test_pools_thread_exit),
        mrt_unit_test(test_destroy_races_thread_exit),
        mrt_unit_test(test_create_destroy_churn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
