/* SPDX-License-Identifier: MIT */
/* bench/sc_binary_trees_driver.c -- the binary-trees program (bt_run), the
 * same for every variant (the list is in sc_binary_trees.c): the stretch
 * tree, the long-lived tree, and the trees of each depth split across the
 * worker threads, which are new threads per depth or, with --persistent,
 * a crew made once.  A variant gives only its bt_ops (sc_binary_trees.h).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "sc_binary_trees.h"

void bt_oom(void)
{
    fputs("binary-trees: out of memory\n", stderr);
    exit(3);
}

static int bt_max_depth(const bench_args *args)
{
    return args->depth > BT_MIN_DEPTH + 2 ? args->depth : BT_MIN_DEPTH + 2;
}

int bt_threads(int threaded, const bench_args *args)
{
    return threaded && args->threads > 1 ? args->threads : 1;
}

/* The most bytes of nodes alive at once: the stretch tree, or the long-lived
 * tree plus one tree per busy thread. */
size_t bt_requested_bytes(const bench_args *args, int nthreads)
{
    int max_depth = bt_max_depth(args);
    size_t peak = bt_nodes(max_depth + 1);
    for (int d = BT_MIN_DEPTH; d <= max_depth; d += 2) {
        int64_t iters = (int64_t)1 << (max_depth - d + BT_MIN_DEPTH);
        size_t busy = iters < nthreads ? (size_t)iters : (size_t)nthreads;
        size_t alive = bt_nodes(max_depth) + busy * bt_nodes(d);
        if (alive > peak)
            peak = alive;
    }
    return peak * sizeof(bt_node);
}

/* ---- the program ---- */

typedef struct bt_job {
    const bt_ops *ops;
    void *ctx;
    int depth;
    int64_t count;
    int64_t check;
} bt_job;

static void *bt_job_main(void *arg)
{
    bt_job *j = arg;
    j->check = j->ops->trees(j->ctx, j->depth, j->count);
    return NULL;
}

/* --persistent: worker threads 1..n-1 made once; for each depth the main
 * thread posts the jobs (a generation number) and waits for all of them. */
typedef struct bt_crew {
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    unsigned gen;                /* bumped per depth; 0 stops */
    int running, n;
    bool stop;
    bt_job *jobs;
    pthread_t tid[256];
    int started;
} bt_crew;

typedef struct bt_worker {
    bt_crew *crew;
    int index;
} bt_worker;

static void *bt_worker_main(void *arg)
{
    bt_worker *w = arg;
    bt_crew *c = w->crew;
    unsigned seen = 0;
    pthread_mutex_lock(&c->mu);
    for (;;) {
        while (!c->stop && c->gen == seen)
            pthread_cond_wait(&c->go, &c->mu);
        if (c->stop)
            break;
        seen = c->gen;
        bt_job *j = &c->jobs[w->index];
        pthread_mutex_unlock(&c->mu);
        if (j->count > 0)
            bt_job_main(j);
        pthread_mutex_lock(&c->mu);
        if (--c->running == 0)
            pthread_cond_signal(&c->done);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

static bt_crew bt_the_crew;
static bt_worker bt_workers[256];

/* Starts workers 1..n-1; false (and no crew) when a thread cannot start. */
static bool bt_crew_start(bt_crew *c, int n, bt_job *jobs)
{
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->go, NULL);
    pthread_cond_init(&c->done, NULL);
    c->gen = 0;
    c->stop = false;
    c->n = n;
    c->jobs = jobs;
    c->started = 0;
    for (int i = 1; i < n; i++) {
        bt_workers[i] = (bt_worker){ c, i };
        if (pthread_create(&c->tid[i], NULL, bt_worker_main, &bt_workers[i]) != 0)
            return false;
        c->started = i;
    }
    return true;
}

static void bt_crew_stop(bt_crew *c)
{
    pthread_mutex_lock(&c->mu);
    c->stop = true;
    pthread_cond_broadcast(&c->go);
    pthread_mutex_unlock(&c->mu);
    for (int i = 1; i <= c->started; i++)
        pthread_join(c->tid[i], NULL);
}

static bool bt_persistent;

/* The trees of one depth, split across nthreads contexts. */
static int64_t bt_depth(const bt_ops *ops, void **ctx, int nthreads, int d, int64_t iters)
{
    if (nthreads == 1)
        return ops->trees(ctx[0], d, iters);
    if (bt_persistent) {
        bt_crew *c = &bt_the_crew;
        pthread_mutex_lock(&c->mu);
        for (int i = 0; i < nthreads; i++)
            c->jobs[i] = (bt_job){ ops, ctx[i], d, iters / nthreads + (i < iters % nthreads), 0 };
        c->running = nthreads - 1;
        c->gen++;
        pthread_cond_broadcast(&c->go);
        pthread_mutex_unlock(&c->mu);
        bt_job_main(&c->jobs[0]);
        pthread_mutex_lock(&c->mu);
        while (c->running > 0)
            pthread_cond_wait(&c->done, &c->mu);
        pthread_mutex_unlock(&c->mu);
        int64_t check = 0;
        for (int i = 0; i < nthreads; i++)
            check += c->jobs[i].check;
        return check;
    }
    bt_job jobs[256];
    pthread_t tid[256];
    bool started[256];
    for (int i = 0; i < nthreads; i++) {
        jobs[i] = (bt_job){ ops, ctx[i], d, iters / nthreads + (i < iters % nthreads), 0 };
        started[i] = false;
    }
    for (int i = 1; i < nthreads; i++)
        if (jobs[i].count > 0)
            started[i] = pthread_create(&tid[i], NULL, bt_job_main, &jobs[i]) == 0;
    for (int i = 1; i < nthreads; i++)
        if (jobs[i].count > 0 && !started[i]) /* no thread: do its share here */
            bt_job_main(&jobs[i]);
    bt_job_main(&jobs[0]);
    int64_t check = 0;
    for (int i = 0; i < nthreads; i++) {
        if (started[i])
            pthread_join(tid[i], NULL);
        check += jobs[i].check;
    }
    return check;
}

int bt_run(const bt_ops *ops, int threaded, const bench_args *args, bench_out *out)
{
    int max_depth = bt_max_depth(args);
    int stretch = max_depth + 1;
    int nthreads = bt_threads(threaded, args);
    if (nthreads > 256)
        nthreads = 256;

    int failed = 0;
    bool crew = false; /* --persistent: the worker threads started */
    void *shared = ops->shared_new ? ops->shared_new(&failed) : NULL;
    if (failed) {
        fputs("binary-trees: setup failed\n", stderr);
        return -1;
    }
    void *ctx[256];
    void *long_ctx = ops->ctx_new(shared, max_depth);
    int made = 0;
    for (; long_ctx && made < nthreads; made++)
        if ((ctx[made] = ops->ctx_new(shared, made == 0 ? stretch : max_depth)) == NULL)
            break;
    int rc = -1;
    if (long_ctx == NULL || made < nthreads) {
        fputs("binary-trees: cannot create an allocator context\n", stderr);
        goto done;
    }
    static bt_job crew_jobs[256];
    crew = args->persistent && nthreads > 1;
    if (crew && !(bt_persistent = bt_crew_start(&bt_the_crew, nthreads, crew_jobs))) {
        fputs("binary-trees: cannot start the worker threads\n", stderr);
        goto done;
    }

    uint64_t sum = 0;
    bt_node *t = ops->make(ctx[0], stretch);
    int64_t c = bt_check(t);
    ops->drop(ctx[0], t);
    bench_printf(out, "stretch tree of depth %d\t check: %" PRId64 "\n", stretch, c);
    sum += (uint64_t)c;

    bt_node *long_lived = ops->make(long_ctx, max_depth);
    for (int d = BT_MIN_DEPTH; d <= max_depth; d += 2) {
        int64_t iters = (int64_t)1 << (max_depth - d + BT_MIN_DEPTH);
        c = bt_depth(ops, ctx, nthreads, d, iters);
        bench_printf(out, "%" PRId64 "\t trees of depth %d\t check: %" PRId64 "\n", iters, d, c);
        sum += (uint64_t)c;
    }
    c = bt_check(long_lived);
    bench_printf(out, "long lived tree of depth %d\t check: %" PRId64 "\n", max_depth, c);
    sum += (uint64_t)c;
    ops->drop(long_ctx, long_lived);

    out->checksum = sum;
    out->requested_bytes = bt_requested_bytes(args, nthreads);
    if (ops->stats) {
        size_t held = 0;
        ops->stats(long_ctx, &held);
        for (int i = 0; i < nthreads; i++)
            ops->stats(ctx[i], &held);
        out->upstream_bytes = held;
    }
    rc = 0;
done:
    if (crew)
        bt_crew_stop(&bt_the_crew);
    bt_persistent = false;
    for (int i = 0; i < made; i++)
        ops->ctx_free(ctx[i]);
    if (long_ctx)
        ops->ctx_free(long_ctx);
    if (ops->shared_free)
        ops->shared_free(shared);
    return rc;
}
