/* SPDX-License-Identifier: MIT */
/* tests/test_pools_threads.c -- thread-safe size-class pools and object
 * pools (mr_pools_options / mr_objpool_options .thread_safe) under threads:
 * blocks handed between threads, and exact accounting once they are joined.
 * Built and run under TSan and ASan in CI (MEMRES_SANITIZE=thread|address).
 *
 * The contract (memres/pools.h, memres/objpool.h, src/tcache.c): any thread
 * may allocate, free, ask block sizes and take a stats snapshot at any time,
 * and may free a block another thread allocated; mr_*_check runs alone and
 * walks every thread cache, shared batch and region.  What users rely on,
 * tested here:
 *   - no block is ever handed to two owners: every allocation writes a
 *     unique id into its first and last 8 bytes, checked when it is freed
 *     (often by another thread); alignment and block size are checked too;
 *     a stats snapshot taken while the others run never goes backwards and
 *     never holds more than its peak;
 *   - once the threads are joined the pool is exact: mr_*_check passes (no
 *     block free twice, free + live == capacity), stats count every
 *     allocation and exactly the live bytes, whether or not the threads
 *     flushed their caches before they exited, and a fresh thread that asks
 *     again for what one of them asked for takes no new chunk;
 *   - the per-thread handles (mr_*_local), alone and in turn with the pool;
 *   - the resource views, pools of their own stacked on a shared pool's
 *     view by every thread, the 16-byte minimum object of a thread-safe
 *     object pool, and mr_pools_check finding a block freed by two threads.
 * Memory bounds and lifetimes under threads: tests/test_pools_threads_bound.c;
 * fork and a thread stopped inside an upstream call:
 * tests/test_pools_threads_fork.c; the helpers: tests/pools_threads_helpers.h.
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

/* ---- per-thread queues: mutex-protected rings, push never blocks ---- */

#define QCAP 64

typedef struct queue {
    pthread_mutex_t mu;
    item ring[QCAP];
    size_t head, n;
} queue;

static void queues_init(queue *q, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        pthread_mutex_init(&q[i].mu, NULL);
        q[i].head = q[i].n = 0;
    }
}

static void queues_fini(queue *q, size_t n)
{
    for (size_t i = 0; i < n; i++)
        pthread_mutex_destroy(&q[i].mu);
}

/* false when the queue is full (the caller keeps the item). */
static bool q_push(queue *q, const item *it)
{
    pthread_mutex_lock(&q->mu);
    bool ok = q->n < QCAP;
    if (ok)
        q->ring[(q->head + q->n++) % QCAP] = *it;
    pthread_mutex_unlock(&q->mu);
    return ok;
}

static size_t q_pop(queue *q, item *out, size_t max)
{
    pthread_mutex_lock(&q->mu);
    size_t k = 0;
    for (; k < max && q->n > 0; k++) {
        out[k] = q->ring[q->head];
        q->head = (q->head + 1) % QCAP;
        q->n--;
    }
    pthread_mutex_unlock(&q->mu);
    return k;
}

/* ---- 1, 8, 9: the handoff stress ---- */

#define OWN 64  /* most blocks a worker holds */
#define KEEP 8  /* blocks each worker leaves live on purpose */
#define MAX_THREADS 8
#define MIN_RECEIVED 256 /* blocks each worker takes from the others, at least */

typedef struct worker {
    const tpool *tp;
    queue *queues;
    pthread_barrier_t *start; /* all begin together */
    atomic_int *running;      /* workers not done yet */
    int id, nthreads;
    long ops;
    uint64_t seed;
    bool flush;          /* mr_*_thread_flush before exiting */
    bool stats_reader;   /* takes stats snapshots while the others run */
    item own[OWN];
    size_t nown;
    size_t allocations;  /* successful allocations */
    long bad;            /* tag, alignment, size or NULL failures (must stay 0) */
    long snap_backwards; /* stats snapshots whose allocations went down (must stay 0) */
    long snap_over_peak; /* stats snapshots with held > peak_held (must stay 0) */
    long received;       /* blocks taken from this thread's queue */
    long cross_frees;    /* blocks freed here that another thread allocated */
    long handed;         /* blocks pushed to another thread's queue */
} worker;

static void worker_free(worker *w, const item *it)
{
    if (ID_THREAD(it->id) != (uint64_t)w->id + 1)
        w->cross_frees++;
    item_free(w->tp, it, &w->bad);
}

static void *stress_main(void *arg)
{
    worker *w = arg;
    const tpool *t = w->tp;
    uint64_t serial = 0, last_allocations = 0;
    item got[16];
    pthread_barrier_wait(w->start);
    /* ops operations, and more while another worker runs and fewer than
     * MIN_RECEIVED blocks came from the others: the workers overlap, however
     * they are scheduled */
    for (long i = 0; i < w->ops || (w->received < MIN_RECEIVED && atomic_load(w->running) > 1); i++) {
        if (i >= w->ops)
            sched_yield(); /* let the others run */
        uint64_t r = mrt_rand(&w->seed);
        unsigned op = (unsigned)(r % 16);
        if (op < 6 && w->nown < OWN) { /* allocate */
            size_t size, align;
            pick_request(t, &w->seed, true, &size, &align);
            uint64_t id = ((uint64_t)w->id + 1) << 40 | ++serial;
            if (item_new(t, size, align, id, &w->own[w->nown], &w->bad)) {
                w->nown++;
                w->allocations++;
            }
        } else if (op < 10 && w->nown > 0) { /* free one of ours */
            size_t k = (size_t)(r >> 8) % w->nown;
            worker_free(w, &w->own[k]);
            w->own[k] = w->own[--w->nown];
        } else if (op < 13 && w->nown > 0) { /* hand one to another thread */
            size_t k = (size_t)(r >> 8) % w->nown;
            int to = (w->id + 1 + (int)((r >> 32) % (uint64_t)(w->nthreads - 1))) % w->nthreads;
            if (q_push(&w->queues[to], &w->own[k]))
                w->handed++;
            else
                worker_free(w, &w->own[k]); /* full: never wait for it */
            w->own[k] = w->own[--w->nown];
        } else { /* take what others handed us: free it or keep it */
            size_t n = q_pop(&w->queues[w->id], got, 16);
            w->received += (long)n;
            for (size_t k = 0; k < n; k++) {
                if (((r >> (20 + k)) & 1) && w->nown < OWN) {
                    if (!tag_ok(got[k].p, got[k].size, got[k].id))
                        w->bad++;
                    w->own[w->nown++] = got[k];
                } else {
                    worker_free(w, &got[k]);
                }
            }
        }
        if (w->stats_reader && i % 256 == 0) { /* a snapshot while others run */
            mr_stats s = tp_stats(t);
            if (s.allocations < last_allocations)
                w->snap_backwards++;
            if (s.held > s.peak_held)
                w->snap_over_peak++;
            last_allocations = s.allocations;
        }
    }
    while (w->nown > KEEP) {
        w->nown--;
        worker_free(w, &w->own[w->nown]);
    }
    if (w->flush)
        tp_flush(t);
    atomic_fetch_sub(w->running, 1);
    return NULL;
}

/* nthreads workers on t, ops operations in all; afterwards the pool is
 * checked exact with blocks still live, then everything is freed here.
 * Returns the snapshots a worker took with held > peak_held (the caller
 * asserts there were none once the pool is destroyed). */
static long run_stress(const tpool *t, int nthreads, long ops, uint64_t seed, bool flush_all)
{
    static queue queues[MAX_THREADS];
    static worker w[MAX_THREADS];
    pthread_t th[MAX_THREADS];
    pthread_barrier_t start;
    atomic_int running = nthreads;
    assert_true(nthreads >= 2 && nthreads <= MAX_THREADS);
    queues_init(queues, (size_t)nthreads);
    pthread_barrier_init(&start, NULL, (unsigned)nthreads);
    mr_stats before = tp_stats(t);
    for (int i = 0; i < nthreads; i++) {
        w[i] = (worker){.tp = t,
                        .queues = queues,
                        .start = &start,
                        .running = &running,
                        .id = i,
                        .nthreads = nthreads,
                        .ops = ops / nthreads,
                        .seed = seed + (uint64_t)i * 7919,
                        .flush = flush_all || i % 2 == 1,
                        .stats_reader = i == 0};
        assert_int_equal(pthread_create(&th[i], NULL, stress_main, &w[i]), 0);
    }
    size_t allocations = 0;
    long cross = 0, handed = 0;
    for (int i = 0; i < nthreads; i++) /* all joined before any assertion */
        assert_int_equal(pthread_join(th[i], NULL), 0);
    pthread_barrier_destroy(&start);
    for (int i = 0; i < nthreads; i++) {
        assert_int_equal(w[i].bad, 0);
        assert_int_equal(w[i].snap_backwards, 0);
        allocations += w[i].allocations;
        cross += w[i].cross_frees;
        handed += w[i].handed;
    }
    /* every thread has exited: what is still live is what they kept and
     * what waits in the queues */
    enum { LIVE_MAX = MAX_THREADS * (KEEP + QCAP) };
    static item live[LIVE_MAX];
    size_t nlive = 0, in_use = 0;
    for (int i = 0; i < nthreads; i++) {
        for (size_t k = 0; k < w[i].nown; k++)
            live[nlive++] = w[i].own[k];
        nlive += q_pop(&queues[i], &live[nlive], QCAP);
    }
    long bad = 0;
    for (size_t k = 0; k < nlive; k++) {
        in_use += tp_block_size(t, live[k].size, live[k].align);
        if (!tag_ok(live[k].p, live[k].size, live[k].id))
            bad++;
    }
    assert_int_equal(bad, 0);
    assert_true(tp_check(t));
    mr_stats s = tp_stats(t);
    assert_int_equal(s.in_use, before.in_use + in_use);
    assert_int_equal(s.allocations, before.allocations + allocations);
    printf("# %s, %d threads: %zu allocations, %ld handed over, %ld freed by another thread, %zu live "
           "(%zu B), %zu B held\n",
           tp_name(t), nthreads, allocations, handed, cross, nlive, in_use, s.held);
    assert_true(cross > 0);
    assert_true(nlive > 0); /* some kept on purpose */
    /* the main thread frees the rest: blocks of exited threads */
    for (size_t k = 0; k < nlive; k++)
        item_free(t, &live[k], &bad);
    assert_int_equal(bad, 0);
    s = tp_stats(t);
    assert_int_equal(s.in_use, before.in_use);
    assert_int_equal(s.allocations, before.allocations + allocations);
    assert_true(tp_check(t));
    queues_fini(queues, (size_t)nthreads);
    long over_peak = 0;
    for (int i = 0; i < nthreads; i++)
        over_peak += w[i].snap_over_peak;
    return over_peak;
}

/* A snapshot is one moment: held never above the peak. */
static void assert_no_snapshot_over_peak(long n)
{
    if (n != 0)
        fail_msg("%ld stats snapshots taken while threads ran had held > peak_held", n);
}

#define STRESS_OPS 120000

static void test_pools_stress(void **state)
{
    locked_upstream lu;
    lu_init(&lu, *state);
    uint64_t seed = mrt_seed(20250101);
    static const int nthreads[] = {2, 4, 8};
    long over_peak = 0;
    for (size_t i = 0; i < 3; i++) {
        tpool t = tp_create_pools(&lu.base);
        over_peak += run_stress(&t, nthreads[i], (long)scaled(STRESS_OPS), seed + i, false);
        tp_destroy(&t);
    }
    lu_fini(&lu);
    assert_no_snapshot_over_peak(over_peak);
}

static void test_objpool_stress(void **state)
{
    locked_upstream lu;
    lu_init(&lu, *state);
    uint64_t seed = mrt_seed(20250102);
    static const int nthreads[] = {2, 4, 8};
    long over_peak = 0;
    for (size_t i = 0; i < 3; i++) {
        tpool t = tp_create_objpool(&lu.base, 40, 8);
        over_peak += run_stress(&t, nthreads[i], (long)scaled(STRESS_OPS), seed + i, false);
        tp_destroy(&t);
    }
    lu_fini(&lu);
    assert_no_snapshot_over_peak(over_peak);
}

/* 8: an object pool of 8-byte objects: thread-safe, its objects are 16
 * bytes (a free object holds two words), the tags at 0 and 8 stay intact
 * while live; every thread flushes before it exits. */
static void test_objpool_small_objects(void **state)
{
    locked_upstream lu;
    lu_init(&lu, *state);
    mr_objpool_options plain = {.upstream = &lu.base};
    mr_objpool *q = mr_objpool_create(8, 8, &plain);
    assert_non_null(q);
    assert_int_equal(mr_objpool_object_size(q), 8);
    mr_objpool_destroy(q);
    tpool t = tp_create_objpool(&lu.base, 8, 8);
    assert_true(t.osize >= 16);
    assert_int_equal(t.osize, 16);
    long over_peak = run_stress(&t, 4, (long)scaled(STRESS_OPS / 3), mrt_seed(20250108), true);
    mr_stats s = tp_stats(&t);
    assert_int_equal(s.in_use, 0);
    tp_destroy(&t);
    lu_fini(&lu);
    assert_no_snapshot_over_peak(over_peak);
}

/* 9: the resource views of thread-safe pools, from several threads. */
static void test_resource_views(void **state)
{
    locked_upstream lu;
    lu_init(&lu, *state);
    uint64_t seed = mrt_seed(20250109);
    tpool t = tp_create_pools(&lu.base);
    t.via_resource = true;
    long over_peak = run_stress(&t, 4, (long)scaled(STRESS_OPS / 2), seed, false);
    tp_destroy(&t);
    t = tp_create_objpool(&lu.base, 24, 8);
    t.via_resource = true;
    over_peak += run_stress(&t, 4, (long)scaled(STRESS_OPS / 2), seed + 1, false);
    tp_destroy(&t);
    lu_fini(&lu);
    assert_no_snapshot_over_peak(over_peak);
}

/* 9a: the per-thread handles (mr_pools_local, mr_objpool_local) from
 * several threads: every call through the calling thread's handle, then
 * handle and pool in turn (a block freed through the other door, often by
 * another thread). */
static void test_local_handles(void **state)
{
    locked_upstream lu;
    lu_init(&lu, *state);
    uint64_t seed = mrt_seed(20251206);
    long over_peak = 0;
    for (int mixed = 0; mixed < 2; mixed++) {
        tpool t = tp_create_pools(&lu.base);
        t.via_local = 1 + mixed;
        over_peak += run_stress(&t, 4, (long)scaled(STRESS_OPS / 2), seed + (uint64_t)mixed, false);
        tp_destroy(&t);
        t = tp_create_objpool(&lu.base, 24, 8);
        t.via_local = 1 + mixed;
        over_peak += run_stress(&t, 4, (long)scaled(STRESS_OPS / 2), seed + 2 + (uint64_t)mixed, mixed != 0);
        tp_destroy(&t);
    }
    lu_fini(&lu);
    assert_no_snapshot_over_peak(over_peak);
}

/* 9b: each thread stacks a pool of its own (not thread-safe) on the shared
 * pool's resource view: chunk requests and direct blocks from every thread
 * at once. */
typedef struct stacker {
    mr_pools *shared;
    uint64_t seed;
    long bad;
} stacker;

static void *stacker_main(void *arg)
{
    stacker *s = arg;
    for (int round = 0; round < 4; round++) {
        mr_pools_options o = {.upstream = mr_pools_resource(s->shared), .largest_required_pool_block = 4096};
        mr_pools *mine = mr_pools_create(&o);
        if (mine == NULL) {
            s->bad++;
            continue;
        }
        for (size_t i = 0; i < 2000; i++) {
            size_t size = 1 + (size_t)(mrt_rand(&s->seed) % 6000); /* above 4096: direct in mine */
            void *b = mr_pools_alloc(mine, size, 8);
            if (b == NULL) {
                s->bad++;
                continue;
            }
            memset(b, 0x5a, size);
            if (i % 3 == 0)
                mr_pools_free(mine, b, size, 8);
        }
        if (!mr_pools_check(mine))
            s->bad++;
        mr_pools_destroy(mine);
    }
    return NULL;
}

static void test_stacked_on_resource_view(void **state)
{
    locked_upstream lu;
    lu_init(&lu, *state);
    tpool t = tp_create_pools(&lu.base);
    enum { T = 4 };
    pthread_t th[T];
    stacker s[T];
    for (int i = 0; i < T; i++) {
        s[i] = (stacker){t.p, 99 + (uint64_t)i, 0};
        assert_int_equal(pthread_create(&th[i], NULL, stacker_main, &s[i]), 0);
    }
    for (int i = 0; i < T; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
        assert_int_equal(s[i].bad, 0);
    }
    assert_true(tp_check(&t));
    assert_int_equal(tp_stats(&t).in_use, 0);
    tp_destroy(&t);
    lu_fini(&lu);
}

/* ---- 2: quiescent exact accounting ---- */

#define QA_THREADS 4
#define QA_N 600

typedef struct qa_worker {
    const tpool *tp;
    pthread_barrier_t *barrier;
    item *out;     /* QA_N / 3 slots: handed to the next thread */
    const item *in;/* the previous thread's out */
    int id;
    uint64_t seed;
    bool flush;
    item kept[QA_N];
    size_t nkept;
    size_t allocations, directs;
    long bad;
} qa_worker;

static void *qa_main(void *arg)
{
    qa_worker *w = arg;
    static item mine[QA_THREADS][QA_N];
    item *m = mine[w->id];
    size_t n = 0;
    for (size_t i = 0; i < QA_N; i++) { /* all live at once */
        size_t size, align;
        pick_request(w->tp, &w->seed, true, &size, &align);
        if (item_new(w->tp, size, align, ((uint64_t)w->id + 1) << 40 | i, &m[n], &w->bad)) {
            w->allocations++;
            if (w->tp->p != NULL && size > 64 * KiB)
                w->directs++;
            n++;
        }
    }
    /* a third freed here, a third kept, a third handed to the next thread */
    size_t nout = 0;
    for (size_t i = 0; i < n; i++) {
        if (i % 3 == 0)
            item_free(w->tp, &m[i], &w->bad);
        else if (i % 3 == 1)
            w->kept[w->nkept++] = m[i];
        else
            w->out[nout++] = m[i];
    }
    for (; nout < QA_N / 3; nout++)
        w->out[nout] = (item){0};
    pthread_barrier_wait(w->barrier);
    /* half of what the previous thread handed over is freed here */
    for (size_t i = 0; i < QA_N / 3; i++) {
        if (w->in[i].p == NULL)
            continue;
        if (i % 2 == 0)
            item_free(w->tp, &w->in[i], &w->bad);
        else
            w->kept[w->nkept++] = w->in[i];
    }
    if (w->flush)
        tp_flush(w->tp);
    return NULL;
}

/* A fresh thread that repeats thread 0's requests (pooled only): all live
 * at once, then all freed. */
typedef struct replay {
    const tpool *tp;
    uint64_t seed;
    size_t directs;
    long bad;
} replay;

static void *replay_main(void *arg)
{
    replay *r = arg;
    static item m[QA_N];
    for (size_t i = 0; i < QA_N; i++) {
        size_t size, align;
        pick_request(r->tp, &r->seed, true, &size, &align);
        if (!item_new(r->tp, size, align, i + 1, &m[i], &r->bad))
            return NULL;
        if (r->tp->p != NULL && size > 64 * KiB)
            r->directs++;
    }
    for (size_t i = 0; i < QA_N; i++)
        item_free(r->tp, &m[i], &r->bad);
    return NULL;
}

static void run_quiescent(const tpool *t, uint64_t seed)
{
    static qa_worker w[QA_THREADS];
    static item handoff[QA_THREADS][QA_N / 3];
    pthread_t th[QA_THREADS];
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, QA_THREADS);
    for (int i = 0; i < QA_THREADS; i++) {
        w[i] = (qa_worker){.tp = t,
                           .barrier = &barrier,
                           .out = handoff[i],
                           .in = handoff[(i + QA_THREADS - 1) % QA_THREADS],
                           .id = i,
                           .seed = seed + (uint64_t)i,
                           .flush = i % 2 == 0}; /* even threads flush, odd ones just exit */
        assert_int_equal(pthread_create(&th[i], NULL, qa_main, &w[i]), 0);
    }
    size_t allocations = 0, in_use = 0;
    long bad = 0;
    for (int i = 0; i < QA_THREADS; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
        assert_int_equal(w[i].bad, 0);
        allocations += w[i].allocations;
    }
    pthread_barrier_destroy(&barrier);
    assert_true(tp_check(t));
    for (int i = 0; i < QA_THREADS; i++)
        for (size_t k = 0; k < w[i].nkept; k++)
            in_use += tp_block_size(t, w[i].kept[k].size, w[i].kept[k].align);
    mr_stats s = tp_stats(t);
    assert_int_equal(s.allocations, allocations);
    assert_int_equal(s.in_use, in_use);
    for (int i = 0; i < QA_THREADS; i++)
        for (size_t k = 0; k < w[i].nkept; k++)
            item_free(t, &w[i].kept[k], &bad);
    assert_int_equal(bad, 0);
    assert_int_equal(tp_stats(t).in_use, 0);
    assert_true(tp_check(t));
    /* every block is free and, once this thread flushes too, reachable by
     * any thread: a fresh thread that asks for what thread 0 asked for gets
     * it with no upstream call but its direct blocks (cache and chunks
     * reused) */
    tp_flush(t);
    s = tp_stats(t);
    replay r = {t, seed, 0, 0};
    pthread_t rt;
    assert_int_equal(pthread_create(&rt, NULL, replay_main, &r), 0);
    assert_int_equal(pthread_join(rt, NULL), 0);
    assert_int_equal(r.bad, 0);
    mr_stats s2 = tp_stats(t);
    assert_int_equal(s2.upstream_allocations - s.upstream_allocations, r.directs);
    assert_int_equal(s2.held, s.held);
    assert_int_equal(s2.in_use, 0);
    assert_int_equal(s2.allocations, s.allocations + QA_N);
    assert_true(tp_check(t));
    printf("# %s: %zu allocations by %d threads, %zu B held; the replay took no chunk\n", tp_name(t),
           allocations, QA_THREADS, s2.held);
}

static void test_pools_quiescent_exact(void **state)
{
    locked_upstream lu;
    lu_init(&lu, *state);
    tpool t = tp_create_pools(&lu.base);
    run_quiescent(&t, mrt_seed(20250201));
    tp_destroy(&t);
    lu_fini(&lu);
}

static void test_objpool_quiescent_exact(void **state)
{
    locked_upstream lu;
    lu_init(&lu, *state);
    tpool t = tp_create_objpool(&lu.base, 56, 8);
    run_quiescent(&t, mrt_seed(20250202));
    tp_destroy(&t);
    lu_fini(&lu);
}

/* ---- mr_*_check finds a block freed by two threads ----
 * ASan and Valgrind builds report the second free itself (the block is
 * poisoned) and the expensive check tiers may stop at it: this is for the
 * builds that only the walk protects. */
#define WALK_ONLY !(MR_CHECKED || MR_DEBUG >= 2)

#if WALK_ONLY
typedef struct double_free {
    mr_pools *p;
    void *b;
} double_free;

static void *double_free_main(void *arg)
{
    double_free *d = arg;
    mr_pools_free(d->p, d->b, 100, 8);
    mr_pools_thread_flush(d->p);
    return NULL;
}
#endif

static void test_check_finds_cross_thread_double_free(void **state)
{
#if WALK_ONLY
    locked_upstream lu;
    lu_init(&lu, *state);
    tpool t = tp_create_pools(&lu.base);
    void *b = mr_pools_alloc(t.p, 100, 8);
    assert_non_null(b);
    double_free d = {t.p, b};
    for (int i = 0; i < 2; i++) { /* two threads free the same block */
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, double_free_main, &d), 0);
        assert_int_equal(pthread_join(th, NULL), 0);
    }
    assert_false(mr_pools_check(t.p)); /* "... frees > ... allocations" on stderr */
    tp_destroy(&t);
    lu_fini(&lu);
#else
    (void)state;
    skip();
#endif
}

/* ---- a pool's place in the threads' tables, taken again ----
 * A thread-safe pool finds the calling thread's cache through an entry of
 * that thread's table which the pool owns while it lives; a later pool may
 * take the same entry.  A thread that used a destroyed pool, and is still
 * alive, must then work with the new pool's cache: its allocations count
 * in the new pool and come from the new pool's chunks (not from the
 * destroyed pool's cache, whose memory went back upstream: ASan and
 * Valgrind see any use of it). */

typedef struct stepper {
    sem_t go, done;
    void (*step)(struct stepper *);
    tpool *t;
    void *blocks[100];
    size_t size;
    bool quit;
} stepper;

static void *stepper_main(void *arg)
{
    stepper *w = arg;
    for (;;) {
        while (sem_wait(&w->go) != 0)
            ;
        if (w->quit)
            return NULL;
        w->step(w);
        sem_post(&w->done);
    }
}

/* Runs step in the worker and waits for it. */
static void stepper_run(stepper *w, void (*step)(stepper *), tpool *t)
{
    w->step = step;
    w->t = t;
    sem_post(&w->go);
    while (sem_wait(&w->done) != 0)
        ;
}

static void step_alloc(stepper *w)
{
    for (size_t i = 0; i < 100; i++)
        w->blocks[i] = tp_alloc(w->t, w->size, 8);
}

static void step_free_half(stepper *w) /* the rest stays in the worker's cache */
{
    for (size_t i = 0; i < 50; i++)
        tp_free(w->t, w->blocks[i], w->size, 8);
}

static void step_free_rest(stepper *w)
{
    for (size_t i = 50; i < 100; i++)
        tp_free(w->t, w->blocks[i], w->size, 8);
}

static void entry_taken_again(mr_resource *up, bool objpool)
{
    stepper w = {.size = 48};
    assert_int_equal(sem_init(&w.go, 0, 0), 0);
    assert_int_equal(sem_init(&w.done, 0, 0), 0);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, stepper_main, &w), 0);
    for (int round = 0; round < 3; round++) {
        tpool a = objpool ? tp_create_objpool(up, 48, 8) : tp_create_pools(up);
        stepper_run(&w, step_alloc, &a);
        for (size_t i = 0; i < 100; i++)
            assert_non_null(w.blocks[i]);
        stepper_run(&w, step_free_half, &a);
        assert_true(tp_check(&a));
        tp_destroy(&a); /* the worker is alive and has a cache of a */

        tpool b = objpool ? tp_create_objpool(up, 48, 8) : tp_create_pools(up);
        mr_stats s0 = tp_stats(&b);
        stepper_run(&w, step_alloc, &b);
        for (size_t i = 0; i < 100; i++) {
            assert_non_null(w.blocks[i]);
            tag_write(w.blocks[i], 48, (uint64_t)i + 1);
        }
        mr_stats s = tp_stats(&b);
        assert_int_equal(s.allocations - s0.allocations, 100);
        assert_int_equal(s.in_use, 100 * tp_block_size(&b, 48, 8));
        assert_true(tp_check(&b)); /* the blocks are b's: free + live == capacity */
        stepper_run(&w, step_free_half, &b);
        assert_int_equal(tp_stats(&b).in_use, 50 * tp_block_size(&b, 48, 8));
        for (size_t i = 50; i < 100; i++)
            assert_true(tag_ok(w.blocks[i], 48, (uint64_t)i + 1));
        stepper_run(&w, step_free_rest, &b);
        assert_int_equal(tp_stats(&b).in_use, 0);
        assert_true(tp_check(&b));
        tp_destroy(&b);
    }
    w.quit = true;
    sem_post(&w.go);
    assert_int_equal(pthread_join(th, NULL), 0);
    sem_destroy(&w.go);
    sem_destroy(&w.done);
}

static void test_entry_taken_again(void **state)
{
    locked_upstream lu;
    lu_init(&lu, *state);
    entry_taken_again(&lu.base, false);
    entry_taken_again(&lu.base, true);
    lu_fini(&lu);
}

/* ---- more thread-safe pools alive than the tables have entries ----
 * 80 pools and object pools at once (the tables have 32 entries): each is
 * used by the main thread and two others, blocks freed by a thread that
 * did not allocate them, every pool exact afterwards; then half of them
 * destroyed and as many made again (entries given back and taken). */

#define MANY 80

typedef struct many {
    tpool *pools;
    void **blocks; /* MANY x 64: what the thread allocated */
    void **theirs; /* what it frees: the other thread's */
    long bad;
} many;

static size_t many_size(size_t k) { return 16 + 8 * (k % 13); }

static void *many_main(void *arg)
{
    many *m = arg;
    for (size_t k = 0; k < MANY; k++)
        for (size_t j = 0; j < 64; j++) {
            void *b = tp_alloc(&m->pools[k], many_size(k), 8);
            m->bad += b == NULL;
            m->blocks[k * 64 + j] = b;
        }
    return NULL;
}

static void *many_free_main(void *arg)
{
    many *m = arg;
    for (size_t k = 0; k < MANY; k++)
        for (size_t j = 0; j < 64; j++)
            tp_free(&m->pools[k], m->theirs[k * 64 + j], many_size(k), 8);
    return NULL;
}

static void many_round(tpool *pools)
{
    many m[2];
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        m[i] = (many){.pools = pools, .blocks = calloc(MANY * 64, sizeof(void *))};
        assert_non_null(m[i].blocks);
        assert_int_equal(pthread_create(&th[i], NULL, many_main, &m[i]), 0);
    }
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
    for (size_t k = 0; k < MANY; k++) { /* the main thread's own, allocated and freed */
        void *b = tp_alloc(&pools[k], many_size(k), 8);
        assert_non_null(b);
        tp_free(&pools[k], b, many_size(k), 8);
        mr_stats s = tp_stats(&pools[k]);
        assert_int_equal(s.in_use, 128 * tp_block_size(&pools[k], many_size(k), 8));
        assert_true(tp_check(&pools[k]));
    }
    for (int i = 0; i < 2; i++) { /* each thread frees the other's blocks */
        assert_int_equal(m[i].bad, 0);
        m[i].theirs = m[1 - i].blocks;
        assert_int_equal(pthread_create(&th[i], NULL, many_free_main, &m[i]), 0);
    }
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
    for (size_t k = 0; k < MANY; k++) {
        assert_int_equal(tp_stats(&pools[k]).in_use, 0);
        assert_true(tp_check(&pools[k]));
    }
    free(m[0].blocks);
    free(m[1].blocks);
}

static void test_more_pools_than_entries(void **state)
{
    locked_upstream lu;
    lu_init(&lu, *state);
    tpool pools[MANY];
    for (size_t k = 0; k < MANY; k++)
        pools[k] = k % 2 == 0 ? tp_create_pools(&lu.base) : tp_create_objpool(&lu.base, many_size(k), 8);
    many_round(pools);
    for (size_t k = 0; k < MANY; k += 2) { /* every other one: entries of both kinds given back */
        bool objpool = pools[k].o != NULL;
        tp_destroy(&pools[k]);
        pools[k] = objpool ? tp_create_objpool(&lu.base, many_size(k), 8) : tp_create_pools(&lu.base);
    }
    many_round(pools);
    for (size_t k = 0; k < MANY; k++)
        tp_destroy(&pools[k]);
    lu_fini(&lu);
}

/* ---- a thread's free list counted again ----
 * A free only takes one from its list's room; an allocation gives none
 * back, so a thread that allocates and frees in turn runs out of room every
 * few frees (every 8 for 4 KiB blocks, 2 batches) and its list is counted
 * again.  Across that, per size: the same block comes back each time, no
 * chunk is taken, the counts stay exact (in_use) and mr_pools_check finds
 * the walked lists as long as counted; a window of live blocks and a list
 * that grows past its limit (blocks from a new chunk, then freed) too. */
typedef struct free_all {
    mr_pools *p;
    void **blocks;
    size_t n;
} free_all;

static void *free_all_main(void *arg)
{
    const free_all *f = arg;
    for (size_t k = 0; k < f->n; k++)
        mr_pools_free(f->p, f->blocks[k], 4096, 8);
    return NULL;
}

static void test_room_counted_again(void **state)
{
    (void)state;
    mr_pools *p = mr_pools_create(&(mr_pools_options){.thread_safe = true, .largest_required_pool_block = 8192});
    assert_non_null(p);
    static const size_t sizes[] = {16, 512, 4096, 8192};
    enum { N = 300 };
    static void *v[N];
    for (size_t j = 0; j < sizeof sizes / sizeof sizes[0]; j++) {
        const size_t size = sizes[j];
        void *b = mr_pools_alloc(p, size, 8);
        assert_non_null(b);
        mr_pools_free(p, b, size, 8);
        mr_stats s0;
        mr_pools_stats(p, &s0);
        for (int k = 0; k < 5000; k++) {
            void *c = mr_pools_alloc(p, size, 8);
            assert_ptr_equal(c, b);
            memset(c, 0x5a, size);
            mr_pools_free(p, c, size, 8);
        }
        mr_stats s1;
        mr_pools_stats(p, &s1);
        assert_int_equal(s1.allocations, s0.allocations + 5000);
        assert_int_equal(s1.in_use, s0.in_use);
        assert_int_equal(s1.upstream_allocations, s0.upstream_allocations);
        assert_true(mr_pools_check(p));
        /* a window of 5 live blocks, the oldest freed for each new one */
        void *w[5];
        for (int k = 0; k < 5; k++)
            assert_non_null(w[k] = mr_pools_alloc(p, size, 8));
        for (int k = 0; k < 3000; k++) {
            mr_pools_free(p, w[k % 5], size, 8);
            assert_non_null(w[k % 5] = mr_pools_alloc(p, size, 8));
        }
        mr_pools_stats(p, &s1);
        assert_int_equal(s1.in_use, s0.in_use + 5 * mr_pools_block_size(p, size, 8));
        assert_true(mr_pools_check(p));
        for (int k = 0; k < 5; k++)
            mr_pools_free(p, w[k], size, 8);
        /* N live, then all freed: the list grows past two batches (its
         * limit grew with the chunks this thread took) */
        for (int k = 0; k < N; k++)
            assert_non_null(v[k] = mr_pools_alloc(p, size, 8));
        assert_true(mr_pools_check(p));
        for (int k = 0; k < N; k++)
            mr_pools_free(p, v[k], size, 8);
        mr_pools_stats(p, &s1);
        assert_int_equal(s1.in_use, s0.in_use);
        assert_true(mr_pools_check(p));
    }
    /* another thread frees what this one allocated: its list keeps two
     * batches and passes the rest on; this thread takes them back with no
     * new chunk */
    mr_stats s0, s1;
    mr_pools_stats(p, &s0);
    for (int k = 0; k < N; k++)
        assert_non_null(v[k] = mr_pools_alloc(p, 4096, 8));
    free_all f = {p, v, N};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, free_all_main, &f), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    mr_pools_stats(p, &s1); /* (the other thread's cache came from upstream) */
    assert_int_equal(s1.in_use, s0.in_use);
    assert_true(mr_pools_check(p));
    for (int k = 0; k < N; k++)
        assert_non_null(v[k] = mr_pools_alloc(p, 4096, 8));
    size_t ups = s1.upstream_allocations;
    mr_pools_stats(p, &s1);
    assert_int_equal(s1.upstream_allocations, ups);
    assert_int_equal(s1.in_use, s0.in_use + N * (size_t)4096);
    for (int k = 0; k < N; k++)
        mr_pools_free(p, v[k], 4096, 8);
    assert_true(mr_pools_check(p));
    mr_pools_destroy(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        mrt_unit_test(test_pools_stress),
        mrt_unit_test(test_objpool_stress),
        mrt_unit_test(test_pools_quiescent_exact),
        mrt_unit_test(test_objpool_quiescent_exact),
        mrt_unit_test(test_objpool_small_objects),
        mrt_unit_test(test_resource_views),
        mrt_unit_test(test_local_handles),
        mrt_unit_test(test_stacked_on_resource_view),
        mrt_unit_test(test_check_finds_cross_thread_double_free),
        mrt_unit_test(test_entry_taken_again),
        mrt_unit_test(test_more_pools_than_entries),
        mrt_unit_test(test_room_counted_again),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
