/* SPDX-License-Identifier: MIT */
/* tests/fuzz/fuzz_threads.c -- a lock-step multi-thread op-sequence fuzz
 * target over the thread-safe pools (mr_pools and mr_objpool with
 * thread_safe = true), each stacked on its own checking upstream that fails
 * requests chosen by the input.
 *
 * Why lock-step: a thread-safe pool's interesting states -- a block freed by
 * another thread than the one that allocated it, a thread's cache spilled to
 * the shared lists, a thread exiting with cached blocks and a fresh thread
 * taking its cache, an allocation failing on a thread's first use -- depend
 * on which thread runs each call.  Free-running threads would make every
 * failure a one-off.  Here the main thread hands op k to worker t_k and waits
 * until it is done before handing op k + 1 (a mutex and condition variable
 * per worker), so the interleaving is the input's, and an input (or the
 * driver's seed) replays exactly.  The handoff also orders every access, so
 * the shadow model and the (unsynchronised) checking upstreams need no lock.
 *
 * Program format (missing bytes read as 0):
 *   byte 0   bits 0-1  workers: 2 + value % 3 (2..4)
 *            bits 2-3  pools: 1 mr_pools only, 2 mr_objpool only, else both
 *            bit  4    end: 0 join the workers, then destroy; 1 destroy while
 *                      the workers (and their caches) live, then join
 *            bits 5-6  objpool objects per block: 1, 4, 16, default
 *            bit  7    objpool alignment 4096 (else by byte 1)
 *   byte 1   bits 0-1  largest_required_pool_block: 256, 1024, 4096, default
 *            bits 2-3  max_blocks_per_chunk: default, 1, 4, 64
 *            bits 4-5  objpool object size: 8, 40, 100, 16
 *            bits 6-7  objpool alignment: 8, 16, 64, 256
 *   then ops, each one byte: thread (high 4 bits, modulo the workers) and op
 *   code (low 4 bits), then the op's argument bytes:
 *     0-2   mr_pools alloc (size, alignment; hostile sizes and alignments too)
 *     3-4   mr_objpool alloc
 *     5-7   free a live block chosen by index, whichever thread allocated it
 *     8-9   mr_pools_realloc of a live mr_pools block (index, new size)
 *     10    thread flush (which pool)
 *     11    thread exit: the worker returns (its caches flush at exit) and a
 *           fresh thread replaces it
 *     12    stats snapshot, in the worker: exact against the model
 *     13    quiescent check (every worker idle): check() and exact stats
 *     14    arm an upstream to fail the Nth next request, or all from it on,
 *           or disarm
 *     15    quiescent reset or release of one pool (1 in 4), else as 13
 *   A disabled pool's allocs go to the other pool.
 *
 * A shadow model remembers every live block with a fill pattern, verified
 * before it is freed or reallocated; a failed alloc must return NULL with
 * ENOMEM (EINVAL for a bad alignment) and change nothing: the same stats,
 * and the same bytes held unless it was the thread's first use of the pool
 * (which may keep the cache it took).  Stats are exact at every snapshot:
 * in_use, allocations, and held / peak / upstream calls as the pool's own
 * upstream saw them.  At the end every block is freed (each from a worker),
 * the pools are checked, the stats must show in_use 0 and every allocation
 * made, the pools are destroyed and both upstreams must be balanced.  Any
 * violation aborts, which libFuzzer (or the standalone driver in driver.c)
 * reports with the input.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memres/memres.h"
#include "support.h"

#define MAX_WORKERS 4
#define MAX_LIVE 256

enum owner { POOLS = 0, OBJPOOL = 1 };
enum cmd { IDLE, RUN, EXIT };
/* op codes (the low 4 bits of an op byte); FREE_LAST is internal (cleanup) */
enum { OP_FLUSH = 10, OP_EXIT = 11, OP_STATS = 12, OP_CHECK = 13, OP_ARM = 14, OP_RESET = 15, OP_FREE_LAST = 16 };

typedef struct live {
    unsigned char *p;
    size_t size, align;
    size_t bsize; /* what in_use counts for it: the class size, or size when direct */
    unsigned char fill;
    enum owner owner;
} live;

typedef struct worker {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    enum cmd cmd;     /* under mu: RUN / EXIT from the main thread, IDLE when done */
    unsigned op;
    bool attached[2]; /* surely holds a cache of the pool (a pooled alloc succeeded) */
} worker;

typedef struct state {
    const uint8_t *in;
    size_t len, pos;
    mrt_upstream up[2]; /* one per pool: a pool's stats must agree with its own */
    mr_pools *pools;
    mr_objpool *objpool;
    bool use[2];
    size_t pool_max;    /* the largest pooled size */
    size_t obj_size, obj_align;
    unsigned nworkers;
    worker w[MAX_WORKERS];
    live lv[MAX_LIVE];
    size_t nlive;
    size_t in_use[2], allocations[2];
    size_t seq;
} state;

static state g; /* large: off the stack; the workers reach it too */

#define FAIL(...) (fprintf(stderr, "fuzz_threads: " __VA_ARGS__), fputc('\n', stderr), abort())

static unsigned byte(state *s) { return s->pos < s->len ? s->in[s->pos++] : 0; }

static bool is_pow2(size_t x) { return x != 0 && (x & (x - 1)) == 0; }

/* Sizes on a log scale up to 128 KiB, plus a few hostile values. */
static size_t size_arg(state *s)
{
    unsigned b = byte(s);
    switch (b) {
    case 255: return SIZE_MAX;
    case 254: return SIZE_MAX - 15;
    case 253: return (size_t)PTRDIFF_MAX + 1;
    case 252: return 0;
    default: break;
    }
    unsigned shift = b % 17;
    return ((size_t)1 << shift) + (byte(s) % ((size_t)1 << shift));
}

/* Alignments 1 .. 8192 (above MR_POOLS_MAX_ALIGN: direct), and 0 and 24. */
static size_t align_arg(state *s)
{
    unsigned k = byte(s);
    return k == 255 ? 0 : k == 254 ? 24 : (size_t)1 << (k % 14);
}

/* Does a request go to a class (else: direct)?  As pools.c decides. */
static bool pooled(const state *s, size_t size, size_t align)
{
    size_t n = size != 0 ? size : 1;
    if (align > 16) {
        if (align > MR_POOLS_MAX_ALIGN || n > SIZE_MAX - (align - 1))
            return false;
        n = (n + align - 1) & ~(align - 1);
    }
    return n <= s->pool_max;
}

static void fill(live *l) { memset(l->p, l->fill, l->size); }

static void verify_bytes(const unsigned char *p, size_t n, unsigned char f, const char *what)
{
    unsigned char ref[256];
    memset(ref, f, sizeof ref);
    for (size_t off = 0; off < n; off += sizeof ref) {
        size_t k = n - off < sizeof ref ? n - off : sizeof ref;
        if (memcmp(p + off, ref, k) != 0)
            for (size_t i = off; i < off + k; i++)
                if (p[i] != f)
                    FAIL("%s %p (%zu bytes) corrupted at %zu: %#x != %#x", what, (const void *)p, n, i, p[i], f);
    }
}

static void verify(const live *l) { verify_bytes(l->p, l->size, l->fill, "block"); }

static void stats_of(state *s, enum owner k, mr_stats *st)
{
    if (k == POOLS) mr_pools_stats(s->pools, st);
    else mr_objpool_stats(s->objpool, st);
}

/* The pool's stats against the model and its upstream: exact (lock-step). */
static void check_stats(state *s, enum owner k, const char *when)
{
    if (!s->use[k]) return;
    mr_stats st;
    stats_of(s, k, &st);
    const mrt_upstream *u = &s->up[k];
    const char *who = k == POOLS ? "pools" : "objpool";
    if (st.in_use != s->in_use[k])
        FAIL("%s (%s): in_use %zu, model %zu", who, when, st.in_use, s->in_use[k]);
    if (st.allocations != s->allocations[k])
        FAIL("%s (%s): allocations %zu, model %zu", who, when, st.allocations, s->allocations[k]);
    if (st.held != u->bytes || st.peak_held != u->peak_bytes)
        FAIL("%s (%s): held %zu / peak %zu, upstream %zu / %zu", who, when, st.held, st.peak_held, u->bytes,
             u->peak_bytes);
    if (st.upstream_allocations != u->allocations || st.upstream_deallocations != u->deallocations)
        FAIL("%s (%s): upstream calls %zu / %zu, upstream saw %zu / %zu", who, when, st.upstream_allocations,
             st.upstream_deallocations, u->allocations, u->deallocations);
}

static void check_pools(state *s, const char *when)
{
    if (s->use[POOLS] && !mr_pools_check(s->pools)) FAIL("mr_pools_check failed (%s)", when);
    if (s->use[OBJPOOL] && !mr_objpool_check(s->objpool)) FAIL("mr_objpool_check failed (%s)", when);
    check_stats(s, POOLS, when);
    check_stats(s, OBJPOOL, when);
}

static void free_block(state *s, const live *l)
{
    if (l->owner == POOLS) mr_pools_free(s->pools, l->p, l->size, l->align);
    else mr_objpool_free(s->objpool, l->p);
}

/* A new block: tracked with a fill pattern, or (model full) freed at once. */
static void add_live(state *s, void *p, size_t size, size_t align, size_t bsize, enum owner k)
{
    live l = {p, size, align, bsize, (unsigned char)(s->seq * 31 + 7), k};
    if (s->nlive == MAX_LIVE) {
        fill(&l); /* the memory is ours: all of it */
        free_block(s, &l);
        return;
    }
    s->in_use[k] += bsize;
    s->lv[s->nlive] = l;
    fill(&s->lv[s->nlive++]);
}

static void drop_live(state *s, size_t i)
{
    verify(&s->lv[i]);
    s->in_use[s->lv[i].owner] -= s->lv[i].bsize;
    s->lv[i] = s->lv[--s->nlive];
}

/* A call that failed: errno as expected, nothing changed (the bytes held too,
 * unless the thread may just have taken its first cache of the pool). */
static void expect_failure(state *s, worker *w, enum owner k, int err, int expect, size_t held_before,
                           size_t fails_before, bool upstream_cause, const char *what)
{
    if (err != expect)
        FAIL("%s failed with errno %d, expected %d", what, err, expect);
    if (upstream_cause && s->up[k].failures == fails_before)
        FAIL("%s failed with no upstream failure", what);
    if (w->attached[k] && s->up[k].bytes != held_before)
        FAIL("%s failed but the bytes held went from %zu to %zu", what, held_before, s->up[k].bytes);
    check_stats(s, k, what);
}

static void op_pools_alloc(state *s, worker *w)
{
    size_t n = size_arg(s), align = align_arg(s);
    size_t bsize = is_pow2(align) ? mr_pools_block_size(s->pools, n, align) : 0;
    bool possible = is_pow2(align) && (bsize != 0 || n == 0); /* a direct 0-byte block counts 0 */
    size_t held = s->up[POOLS].bytes, fails = s->up[POOLS].failures;
    errno = 0;
    unsigned char *p = mr_pools_alloc(s->pools, n, align);
    if (p == NULL) {
        expect_failure(s, w, POOLS, errno, is_pow2(align) ? ENOMEM : EINVAL, held, fails, possible, "pools alloc");
        return;
    }
    if (!possible) FAIL("pools alloc(%zu, %zu) succeeded", n, align);
    if ((uintptr_t)p % align != 0) FAIL("pools alloc: %p not aligned to %zu", (void *)p, align);
    s->allocations[POOLS]++;
    if (pooled(s, n, align)) w->attached[POOLS] = true;
    add_live(s, p, n, align, bsize, POOLS);
}

static void op_objpool_alloc(state *s, worker *w)
{
    size_t held = s->up[OBJPOOL].bytes, fails = s->up[OBJPOOL].failures;
    errno = 0;
    unsigned char *p = mr_objpool_alloc(s->objpool);
    if (p == NULL) {
        expect_failure(s, w, OBJPOOL, errno, ENOMEM, held, fails, true, "objpool alloc");
        return;
    }
    if ((uintptr_t)p % s->obj_align != 0) FAIL("objpool alloc: %p not aligned to %zu", (void *)p, s->obj_align);
    s->allocations[OBJPOOL]++;
    w->attached[OBJPOOL] = true;
    add_live(s, p, s->obj_size, s->obj_align, s->obj_size, OBJPOOL);
}

static void op_free(state *s, size_t i)
{
    live l = s->lv[i];
    drop_live(s, i);
    free_block(s, &l);
}

static void op_realloc(state *s, worker *w)
{
    unsigned pick = byte(s);
    size_t n = size_arg(s);
    if (s->nlive == 0) return;
    size_t i = pick % s->nlive, k = 0;
    while (k < s->nlive && s->lv[(i + k) % s->nlive].owner != POOLS) k++;
    if (k == s->nlive) return;
    i = (i + k) % s->nlive;
    live old = s->lv[i];
    verify(&old);
    size_t bsize = mr_pools_block_size(s->pools, n, old.align);
    bool same_class = pooled(s, old.size, old.align) && pooled(s, n, old.align) && bsize == old.bsize;
    size_t held = s->up[POOLS].bytes, fails = s->up[POOLS].failures;
    errno = 0;
    unsigned char *q = mr_pools_realloc(s->pools, old.p, old.size, n, old.align);
    if (q == NULL) {
        if (same_class) FAIL("realloc %zu -> %zu in one class failed", old.size, n);
        expect_failure(s, w, POOLS, errno, ENOMEM, held, fails, bsize != 0 || n == 0, "pools realloc");
        verify(&old);
        return;
    }
    if (bsize == 0 && n != 0) FAIL("pools realloc to %zu succeeded", n);
    if ((q == old.p) != same_class)
        FAIL("realloc %zu -> %zu (align %zu): %s", old.size, n, old.align, same_class ? "moved in one class" : "kept");
    if ((uintptr_t)q % old.align != 0) FAIL("realloc: %p not aligned to %zu", (void *)q, old.align);
    verify_bytes(q, old.size < n ? old.size : n, old.fill, "realloc result");
    if (q != old.p) {
        s->allocations[POOLS]++;
        if (pooled(s, n, old.align)) w->attached[POOLS] = true;
    }
    live *l = &s->lv[i];
    s->in_use[POOLS] += bsize - old.bsize;
    *l = (live){q, n, old.align, bsize, (unsigned char)(s->seq * 31 + 7), POOLS};
    fill(l);
}

static void op_flush(state *s)
{
    unsigned which = byte(s) % 3;
    size_t calls[2] = {s->up[0].calls + s->up[0].deallocations, s->up[1].calls + s->up[1].deallocations};
    if (which != 1 && s->use[POOLS]) mr_pools_thread_flush(s->pools);
    if (which != 0 && s->use[OBJPOOL]) mr_objpool_thread_flush(s->objpool);
    if (which == 2) { /* no-ops */
        mr_pools_thread_flush(NULL);
        mr_objpool_thread_flush(NULL);
    }
    for (int k = 0; k < 2; k++)
        if (s->up[k].calls + s->up[k].deallocations != calls[k]) FAIL("thread flush called upstream");
    check_stats(s, POOLS, "after flush");
    check_stats(s, OBJPOOL, "after flush");
}

/* Op `op` (its argument bytes still to read) in worker w's thread. */
static void run_op(state *s, worker *w, unsigned op)
{
    switch (op) {
    case 0: case 1: case 2:
        if (s->use[POOLS]) op_pools_alloc(s, w);
        else op_objpool_alloc(s, w);
        break;
    case 3: case 4:
        if (s->use[OBJPOOL]) op_objpool_alloc(s, w);
        else op_pools_alloc(s, w);
        break;
    case 5: case 6: case 7: {
        unsigned pick = byte(s);
        if (s->nlive != 0) op_free(s, pick % s->nlive);
        break;
    }
    case 8: case 9:
        if (s->use[POOLS]) op_realloc(s, w);
        break;
    case OP_FLUSH: op_flush(s); break;
    case OP_STATS:
        check_stats(s, POOLS, "snapshot");
        check_stats(s, OBJPOOL, "snapshot");
        break;
    case OP_FREE_LAST: op_free(s, s->nlive - 1); break;
    default: FAIL("op %u given to a worker", op);
    }
}

/* ---- the workers, in lock-step ---- */

static void *worker_main(void *arg)
{
    worker *w = arg;
    for (;;) {
        pthread_mutex_lock(&w->mu);
        while (w->cmd == IDLE)
            pthread_cond_wait(&w->cv, &w->mu);
        enum cmd cmd = w->cmd;
        unsigned op = w->op;
        pthread_mutex_unlock(&w->mu);
        if (cmd == EXIT)
            return NULL; /* the pools' thread-exit hook flushes this thread's caches */
        run_op(&g, w, op);
        pthread_mutex_lock(&w->mu);
        w->cmd = IDLE;
        pthread_cond_signal(&w->cv);
        pthread_mutex_unlock(&w->mu);
    }
}

static void worker_start(state *s, unsigned t)
{
    worker *w = &s->w[t];
    memset(w, 0, sizeof *w);
    if (pthread_mutex_init(&w->mu, NULL) != 0 || pthread_cond_init(&w->cv, NULL) != 0 ||
        pthread_create(&w->th, NULL, worker_main, w) != 0)
        FAIL("cannot start worker %u", t);
}

/* Hands op to worker t and waits until it is done. */
static void worker_run(state *s, unsigned t, unsigned op)
{
    worker *w = &s->w[t];
    pthread_mutex_lock(&w->mu);
    w->op = op;
    w->cmd = RUN;
    pthread_cond_signal(&w->cv);
    while (w->cmd != IDLE)
        pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
}

/* Worker t's thread exits (and is joined). */
static void worker_stop(state *s, unsigned t)
{
    worker *w = &s->w[t];
    pthread_mutex_lock(&w->mu);
    w->cmd = EXIT;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    if (pthread_join(w->th, NULL) != 0) FAIL("cannot join worker %u", t);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
}

/* ---- the main thread's ops ---- */

static void op_exit(state *s, unsigned t)
{
    size_t calls[2] = {s->up[0].calls + s->up[0].deallocations, s->up[1].calls + s->up[1].deallocations};
    worker_stop(s, t);
    for (int k = 0; k < 2; k++)
        if (s->up[k].calls + s->up[k].deallocations != calls[k]) FAIL("thread exit called upstream");
    worker_start(s, t);
}

static void op_arm(state *s)
{
    unsigned b = byte(s);
    enum owner k = (b & 1) ? OBJPOOL : POOLS;
    if (!s->use[k]) k = (enum owner)!k;
    mrt_upstream *u = &s->up[k];
    unsigned mode = (b >> 1) & 7;
    u->fail_at = mode < 2 ? 0 : u->calls + 1 + (b >> 4) % 4;
    u->fail_all_after = mode == 7;
}

/* Every block of pool k goes at once (reset or release). */
static void op_reset(state *s, unsigned b)
{
    enum owner k = (b & 4) ? OBJPOOL : POOLS;
    if (!s->use[k]) k = (enum owner)!k;
    for (size_t i = s->nlive; i-- > 0;)
        if (s->lv[i].owner == k) drop_live(s, i);
    size_t allocs = s->up[k].calls;
    bool release = (b & 8) != 0;
    if (k == POOLS) {
        if (release) mr_pools_release(s->pools);
        else mr_pools_reset(s->pools);
    } else {
        if (release) mr_objpool_release(s->objpool);
        else mr_objpool_reset(s->objpool);
    }
    if (s->up[k].calls != allocs) FAIL("reset/release allocated upstream");
    check_pools(s, release ? "after release" : "after reset");
}

static void step(state *s)
{
    unsigned b = byte(s);
    unsigned t = (b >> 4) % s->nworkers, op = b & 15;
    s->seq++;
    switch (op) {
    case OP_EXIT: op_exit(s, t); break;
    case OP_CHECK: check_pools(s, "quiescent check"); break;
    case OP_ARM: op_arm(s); break;
    case OP_RESET: {
        unsigned a = byte(s);
        if ((a & 3) == 0) op_reset(s, a);
        else check_pools(s, "quiescent check");
        break;
    }
    default: worker_run(s, t, op); break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    state *s = &g;
    memset(s, 0, sizeof *s);
    s->in = data;
    s->len = size;
    unsigned h0 = byte(s), h1 = byte(s);
    s->nworkers = 2 + (h0 & 3) % 3;
    unsigned kinds = (h0 >> 2) & 3;
    s->use[POOLS] = kinds != 2;
    s->use[OBJPOOL] = kinds != 1;
    bool destroy_first = (h0 >> 4) & 1;
    static const size_t per_block[] = {1, 4, 16, 0};
    static const size_t largest[] = {256, 1024, 4096, 0};
    static const size_t max_blocks[] = {0, 1, 4, 64};
    static const size_t obj_sizes[] = {8, 40, 100, 16};
    static const size_t obj_aligns[] = {8, 16, 64, 256};
    for (int k = 0; k < 2; k++) {
        mrt_upstream_init(&s->up[k]);
        s->up[k].limit = (size_t)64 << 20;
    }
    mr_pools_options po = {.upstream = &s->up[POOLS].base, .thread_safe = true,
                           .largest_required_pool_block = largest[h1 & 3],
                           .max_blocks_per_chunk = max_blocks[(h1 >> 2) & 3]};
    mr_objpool_options oo = {.upstream = &s->up[OBJPOOL].base, .thread_safe = true,
                             .objects_per_block = per_block[(h0 >> 5) & 3]};
    size_t obj_align = (h0 & 128) ? 4096 : obj_aligns[(h1 >> 6) & 3];
    if (s->use[POOLS]) {
        s->pools = mr_pools_create(&po);
        if (s->pools == NULL) FAIL("mr_pools_create failed (errno %d)", errno);
        mr_pools_options got;
        mr_pools_get_options(s->pools, &got);
        if (!got.thread_safe) FAIL("mr_pools_get_options: not thread-safe");
        s->pool_max = got.largest_required_pool_block;
    }
    if (s->use[OBJPOOL]) {
        s->objpool = mr_objpool_create(obj_sizes[(h1 >> 4) & 3], obj_align, &oo);
        if (s->objpool == NULL) FAIL("mr_objpool_create failed (errno %d)", errno);
        s->obj_size = mr_objpool_object_size(s->objpool);
        s->obj_align = obj_align;
    }
    check_pools(s, "after create");
    for (unsigned t = 0; t < s->nworkers; t++)
        worker_start(s, t);

    while (s->pos < s->len)
        step(s);

    /* the end: everything freed (each block from some worker), exact stats */
    for (int k = 0; k < 2; k++) {
        s->up[k].fail_at = 0;
        s->up[k].fail_all_after = false;
    }
    for (size_t i = 0; i < s->nlive; i++)
        verify(&s->lv[i]);
    while (s->nlive != 0)
        worker_run(s, (unsigned)(s->nlive % s->nworkers), OP_FREE_LAST);
    if (s->in_use[POOLS] != 0 || s->in_use[OBJPOOL] != 0) FAIL("model: in_use left after freeing everything");
    check_pools(s, "everything freed");
    if (!destroy_first) {
        for (unsigned t = 0; t < s->nworkers; t++)
            worker_stop(s, t);
        check_pools(s, "workers joined");
    }
    mr_pools_destroy(s->pools);
    mr_objpool_destroy(s->objpool);
    if (destroy_first) /* the workers' exit hooks must not touch the destroyed pools */
        for (unsigned t = 0; t < s->nworkers; t++)
            worker_stop(s, t);
    for (int k = 0; k < 2; k++) {
        mrt_upstream *u = &s->up[k];
        if (u->nlive != 0 || u->bytes != 0 || u->bad_deallocations != 0 || u->allocations != u->deallocations)
            FAIL("%s upstream not balanced: %zu blocks, %zu bytes, %zu bad frees", k == POOLS ? "pools" : "objpool",
                 u->nlive, u->bytes, u->bad_deallocations);
        mrt_upstream_fini(u);
    }
    return 0;
}
