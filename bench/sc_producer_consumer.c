/* SPDX-License-Identifier: MIT */
/* bench/sc_producer_consumer.c -- scenario "producer-consumer": objects made
 * on one thread and freed on another, by threads that come and go.
 *
 * T producers and T consumers (T = --threads).  Producer i hands its objects
 * to consumer i through a bounded single-producer/single-consumer ring of
 * PC_RING pointers (C11 atomics; nothing allocated per item; a full or empty
 * ring spins briefly, then sleeps until a batch is ready, so 2T threads on
 * fewer cores hand over in batches).  A producer allocates N objects of 16..512 bytes (uniform, from
 * a splitmix64 generator seeded with the round and the producer's number, so
 * every variant makes the same objects), writes a tag (size, producer,
 * sequence number) at the start and a byte derived from them at the end, and
 * pushes it; the consumer runs the same generator, pops the object, checks
 * its tag and last byte, adds them to its sums and frees it.  8 rounds; each
 * round starts 2T fresh threads and joins them, so whatever an allocator
 * keeps per thread (caches, arenas, remote-free lists) is orphaned 8 times
 * and must be taken back or reused.  N = 250 000 per producer per round
 * (--quick: 4096).  At most PC_RING + 1 objects per pair are alive at once.
 *
 * Output (equal for every variant): the object count, bytes and a sum of the
 * checked values.  Beside it, in the row's note (bench_note, not compared):
 * objects/s over the rounds, RSS after each round (/proc/self/statm) and, for
 * memres, mr_stats.held after each round, with growth = value after round 8
 * / value after round 2 (round 1 warms the allocator up; steady state reads
 * 1.00, per-thread state that is never reclaimed makes it grow).
 *
 * Every variant requests alignof(max_align_t) (what malloc gives) and frees
 * with the size where the interface takes one:
 *   malloc                               malloc / free (run under glibc,
 *                                        jemalloc, mimalloc, tcmalloc)
 *   memres pools (shared, thread-safe)   ONE mr_pools, thread_safe = true,
 *                                        used by every producer and consumer;
 *                                        mr_pools_free with the size
 *   memres objpool (shared, thread-safe) ONE mr_objpool of 512-byte objects,
 *                                        thread_safe = true: every object
 *                                        takes the largest size (held is
 *                                        about 2x the bytes asked for).  Not
 *                                        the tool for mixed sizes; it is here
 *                                        because no other scenario frees
 *                                        objpool objects on another thread
 *   memres pools (shared, local handle)
 *   memres objpool (shared, local handle)
 *                                        the same pools, each producer and
 *                                        consumer through its own handle
 *                                        (mr_*_local_get once per thread)
 *   pmr sync pool                        ONE std::pmr::synchronized_pool_
 *                                        resource (sc_producer_consumer_pmr.cpp;
 *                                        called through a C function per
 *                                        object, which costs little beside
 *                                        its lock)
 * Timing starts once the rings and the allocator exist: it includes thread
 * creation and joining.  memres rows report their peak bytes held.
 */
#include <errno.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "memres/objpool.h"
#include "memres/pools.h"

#define PC_ROUNDS 8
#define PC_RING 1024u /* slots per ring, a power of two */
#define PC_MIN 16u
#define PC_MAX 512u
#define PC_ALIGN ((size_t)alignof(max_align_t))
#define PC_SEED 0x70726f64636f6eULL
#define PC_MAX_THREADS 128
#define PC_FULL 250000u /* objects per producer per round */
#define PC_QUICK 4096u  /* --quick (CI checks the outputs): 4 rings' worth per round */

/* The std::pmr variant's resource (sc_producer_consumer_pmr.cpp): NULL on
 * failure; allocate returns NULL instead of throwing. */
void *bench_pc_pmr_new(void);
void bench_pc_pmr_delete(void *r);
void *bench_pc_pmr_allocate(void *r, size_t n, size_t align);
void bench_pc_pmr_deallocate(void *r, void *p, size_t n, size_t align);

/* One ring per producer/consumer pair.  head and tail count the slots taken
 * and filled this round; each side writes one and reads the other, on
 * separate cache lines.  A side that finds the ring empty (full) spins a
 * little, then sleeps on its condition variable until a quarter of the ring
 * (PC_BATCH) is ready for it, so that 2T threads on fewer cores hand over in
 * batches instead of a context switch per object.  The waiting flags and
 * the indexes are seq_cst: a side stores its index, then loads the other's
 * flag; a sleeper stores its flag, then loads the index: one of them sees
 * the other, so no wake-up is lost. */
typedef struct pc_ring {
    alignas(64) atomic_size_t head;
    alignas(64) atomic_size_t tail;
    /* The flags on lines of their own: each side reads the other's flag
     * after every store of its index, and a flag shares no line with an
     * index, so that read hits in cache unless a side went to sleep (with
     * a flag beside the other side's index, every push and pop missed). */
    alignas(64) atomic_int consumer_waits;
    alignas(64) atomic_int producer_waits;
    alignas(64) pthread_mutex_t mu;
    pthread_cond_t consumer_cv, producer_cv;
    alignas(64) void *slot[PC_RING];
} pc_ring;

/* What every thread of a run shares. */
typedef struct pc_run {
    void *alloc;       /* the allocator (mr_pools *, mr_objpool *, the pmr resource; NULL: malloc) */
    size_t per_round;  /* objects per producer per round */
    pc_ring *rings;
    int nrings;
    atomic_int stop;   /* set by the first failure: every thread leaves its loop */
    char why[128];     /* that failure, written by the thread that set stop */
} pc_run;

typedef struct pc_thread {
    pc_run *run;
    pc_ring *ring;
    uint32_t id, round;
    uint64_t objects, bytes, sum; /* consumers: what they checked */
} pc_thread;

/* The tag at the start of every object (12 bytes: the last byte of the
 * smallest object, 16 bytes, is apart from it). */
typedef struct pc_tag {
    uint32_t size, producer, seq;
} pc_tag;

static inline uint64_t pc_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline uint64_t pc_seed(uint32_t round, uint32_t id)
{
    return PC_SEED ^ ((uint64_t)round << 40) ^ ((uint64_t)id * 0x2545f4914f6cdd1dULL);
}

static inline size_t pc_size(uint64_t r)
{
    return PC_MIN + (size_t)(r % (PC_MAX - PC_MIN + 1));
}

static inline unsigned char pc_last(uint32_t seq, uint32_t id)
{
    return (unsigned char)(seq * 131u + id * 7u + 1u);
}

/* Stops the run (the first failure's text is kept) and wakes every sleeper. */
static void pc_fail(pc_run *run, const char *what, uint32_t id)
{
    int expected = 0;
    if (atomic_compare_exchange_strong(&run->stop, &expected, 1))
        snprintf(run->why, sizeof run->why, "%s (thread %u)", what, (unsigned)id);
    for (int i = 0; i < run->nrings; i++) {
        pc_ring *q = &run->rings[i];
        pthread_mutex_lock(&q->mu);
        pthread_cond_broadcast(&q->consumer_cv);
        pthread_cond_broadcast(&q->producer_cv);
        pthread_mutex_unlock(&q->mu);
    }
}

#define PC_BATCH (PC_RING / 4u)
#define PC_SPINS 256 /* pauses before a side sleeps (about 5-10 us) */

static inline void pc_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

/* The producer, its ring full: waits until PC_BATCH slots are free; -1 when
 * the run stopped.  Returns the consumer's head it saw. */
static int pc_producer_wait(pc_run *run, pc_ring *q, size_t t, size_t *head)
{
    for (int spins = 0; spins < PC_SPINS; spins++) {
        pc_pause();
        if (t - (*head = atomic_load_explicit(&q->head, memory_order_acquire)) < PC_RING)
            return 0;
    }
    pthread_mutex_lock(&q->mu);
    atomic_store(&q->producer_waits, 1);
    while (PC_RING - (t - (*head = atomic_load(&q->head))) < PC_BATCH && !atomic_load(&run->stop))
        pthread_cond_wait(&q->producer_cv, &q->mu);
    atomic_store(&q->producer_waits, 0);
    pthread_mutex_unlock(&q->mu);
    return t - *head < PC_RING ? 0 : -1;
}

/* The consumer, its ring empty: waits until PC_BATCH objects (or the rest of
 * the round) are there; -1 when the run stopped.  Returns the tail it saw. */
static int pc_consumer_wait(pc_run *run, pc_ring *q, size_t h, size_t *tail)
{
    for (int spins = 0; spins < PC_SPINS; spins++) {
        pc_pause();
        if ((*tail = atomic_load_explicit(&q->tail, memory_order_acquire)) != h)
            return 0;
    }
    size_t rest = run->per_round - h, need = rest < PC_BATCH ? rest : PC_BATCH;
    pthread_mutex_lock(&q->mu);
    atomic_store(&q->consumer_waits, 1);
    while ((*tail = atomic_load(&q->tail)) - h < need && !atomic_load(&run->stop))
        pthread_cond_wait(&q->consumer_cv, &q->mu);
    atomic_store(&q->consumer_waits, 0);
    pthread_mutex_unlock(&q->mu);
    return *tail != h ? 0 : -1;
}

/* Puts p in the ring; -1 when the run stopped.  tail: this side's count,
 * head: its last view of the consumer's. */
static inline int pc_push(pc_run *run, pc_ring *q, size_t *tail, size_t *head, void *p)
{
    size_t t = *tail;
    if (t - *head == PC_RING && pc_producer_wait(run, q, t, head) != 0)
        return -1;
    q->slot[t & (PC_RING - 1)] = p;
    atomic_store(&q->tail, t + 1);
    *tail = t + 1;
    if (MR_UNLIKELY(atomic_load(&q->consumer_waits))) {
        /* it sleeps until need objects are there (pc_consumer_wait) */
        size_t h = atomic_load(&q->head), rest = run->per_round - h;
        if (t + 1 - h >= (rest < PC_BATCH ? rest : PC_BATCH)) {
            pthread_mutex_lock(&q->mu);
            pthread_cond_signal(&q->consumer_cv);
            pthread_mutex_unlock(&q->mu);
        }
    }
    return 0;
}

/* Takes the next object from the ring; NULL when the run stopped. */
static inline void *pc_pop(pc_run *run, pc_ring *q, size_t *head, size_t *tail)
{
    size_t h = *head;
    if (h == *tail && pc_consumer_wait(run, q, h, tail) != 0)
        return NULL;
    void *p = q->slot[h & (PC_RING - 1)];
    atomic_store(&q->head, h + 1);
    *head = h + 1;
    if (MR_UNLIKELY(atomic_load(&q->producer_waits))) {
        size_t t = atomic_load(&q->tail);
        if (PC_RING - (t - (h + 1)) >= PC_BATCH) {
            pthread_mutex_lock(&q->mu);
            pthread_cond_signal(&q->producer_cv);
            pthread_mutex_unlock(&q->mu);
        }
    }
    return p;
}

/* PC_THREADS_H(prefix, HANDLE, ALLOC, FREE) defines prefix_producer and
 * prefix_consumer, the thread bodies, with the allocator's calls inlined:
 * ALLOC(a, n) gives n bytes aligned to PC_ALIGN or NULL, FREE(a, p, n) frees
 * them; a is HANDLE(run->alloc), taken once by each thread (NULL for an
 * allocator that is not NULL: the thread fails).  PC_THREADS: a is
 * run->alloc itself. */
#define PC_THREADS(prefix, ALLOC, FREE) PC_THREADS_H(prefix, PC_SELF, ALLOC, FREE)
#define PC_SELF(a) (a)
#define PC_HANDLE_OK(run, a, th)                                                            \
    do {                                                                                    \
        if ((a) == NULL && (run)->alloc != NULL) {                                          \
            pc_fail((run), "no handle", (th)->id);                                          \
            return NULL;                                                                    \
        }                                                                                   \
    } while (0)
#define PC_THREADS_H(prefix, HANDLE, ALLOC, FREE)                                           \
    static void *prefix##_producer(void *arg)                                               \
    {                                                                                       \
        pc_thread *th = arg;                                                                \
        pc_run *run = th->run;                                                              \
        void *a = HANDLE(run->alloc);                                                       \
        (void)a;                                                                            \
        PC_HANDLE_OK(run, a, th);                                                           \
        uint64_t seed = pc_seed(th->round, th->id);                                         \
        size_t tail = atomic_load(&th->ring->tail), head = atomic_load(&th->ring->head);     \
        for (size_t i = 0; i < run->per_round; i++) {                                       \
            size_t n = pc_size(pc_next(&seed));                                             \
            unsigned char *p = ALLOC(a, n);                                                 \
            if (p == NULL) {                                                                \
                pc_fail(run, "out of memory", th->id);                                      \
                break;                                                                      \
            }                                                                               \
            pc_tag tag = { (uint32_t)n, th->id, (uint32_t)i };                              \
            memcpy(p, &tag, sizeof tag);                                                    \
            p[n - 1] = pc_last(tag.seq, th->id);                                            \
            if (pc_push(run, th->ring, &tail, &head, p) != 0) {                             \
                FREE(a, p, n);                                                              \
                break;                                                                      \
            }                                                                               \
        }                                                                                   \
        return NULL;                                                                        \
    }                                                                                       \
    static void *prefix##_consumer(void *arg)                                               \
    {                                                                                       \
        pc_thread *th = arg;                                                                \
        pc_run *run = th->run;                                                              \
        void *a = HANDLE(run->alloc);                                                       \
        (void)a;                                                                            \
        PC_HANDLE_OK(run, a, th);                                                           \
        uint64_t seed = pc_seed(th->round, th->id);                                         \
        size_t head = atomic_load(&th->ring->head), tail = atomic_load(&th->ring->tail);     \
        for (size_t i = 0; i < run->per_round; i++) {                                       \
            size_t n = pc_size(pc_next(&seed));                                             \
            unsigned char *p = pc_pop(run, th->ring, &head, &tail);                         \
            if (p == NULL)                                                                  \
                break;                                                                      \
            pc_tag tag;                                                                     \
            memcpy(&tag, p, sizeof tag);                                                    \
            if (tag.size != n || tag.producer != th->id || tag.seq != (uint32_t)i ||        \
                p[n - 1] != pc_last(tag.seq, th->id)) {                                     \
                pc_fail(run, "an object arrived with a wrong tag", th->id);                 \
                break;                                                                      \
            }                                                                               \
            th->objects++;                                                                  \
            th->bytes += n;                                                                 \
            th->sum += (n ^ tag.seq) + p[n - 1];                                            \
            FREE(a, p, n);                                                                  \
        }                                                                                   \
        return NULL;                                                                        \
    }

/* Resident bytes of this process now. */
static size_t pc_rss(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long size = 0, resident = 0;
    if (f == NULL)
        return 0;
    if (fscanf(f, "%lu %lu", &size, &resident) != 2)
        resident = 0;
    fclose(f);
    return (size_t)resident * (size_t)sysconf(_SC_PAGESIZE);
}

/* A variant: its thread bodies and, for memres, its bytes held now and at
 * peak. */
typedef struct pc_impl {
    void *(*producer)(void *);
    void *(*consumer)(void *);
    void (*held)(void *alloc, size_t *now, size_t *peak); /* NULL: not a memres row */
} pc_impl;

/* One series of per-round values as a note line: "what: v1 ... v8 MiB;
 * growth r8/r2 x". */
static void pc_note_series(bench_out *out, const char *what, const size_t *v)
{
    bench_note(out, "%s MiB after rounds 1-%d:", what, PC_ROUNDS);
    for (int r = 0; r < PC_ROUNDS; r++)
        bench_note(out, " %.2f", (double)v[r] / (1024.0 * 1024.0));
    if (v[1] > 0)
        bench_note(out, "; growth r%d/r2 %.3f\n", PC_ROUNDS, (double)v[PC_ROUNDS - 1] / (double)v[1]);
    else
        bench_note(out, "; growth -\n");
}

/* Starts the pair threads of one round and joins them; -1 when a thread
 * could not be started (the others are stopped and joined). */
static int pc_round(const pc_impl *impl, pc_run *run, pc_thread *th, pthread_t *tid, int nt)
{
    bool started[2 * PC_MAX_THREADS];
    int rc = 0;
    for (int i = 0; i < 2 * nt; i++) {
        /* consumers (even) first, then their producer (odd) */
        void *(*body)(void *) = i % 2 == 0 ? impl->consumer : impl->producer;
        started[i] = rc == 0 && pthread_create(&tid[i], NULL, body, &th[i]) == 0;
        if (rc == 0 && !started[i]) {
            pc_fail(run, "cannot start a thread", th[i].id);
            rc = -1;
        }
    }
    for (int i = 0; i < 2 * nt; i++)
        if (started[i])
            pthread_join(tid[i], NULL);
    return rc;
}

static int pc_run_rounds(const pc_impl *impl, void *alloc, const bench_args *args, bench_out *out)
{
    int nt = args->threads > 1 ? args->threads : 1;
    if (nt > PC_MAX_THREADS)
        nt = PC_MAX_THREADS;
    static pc_run run;
    run.alloc = alloc;
    run.per_round = args->quick ? PC_QUICK : PC_FULL;
    atomic_store(&run.stop, 0);
    run.why[0] = '\0';
    pc_ring *rings = aligned_alloc(alignof(pc_ring), (size_t)nt * sizeof *rings);
    pc_thread *th = calloc((size_t)(2 * nt), sizeof *th);
    pthread_t *tid = calloc((size_t)(2 * nt), sizeof *tid);
    if (rings == NULL || th == NULL || tid == NULL) {
        free(rings);
        free(th);
        free(tid);
        fputs("producer-consumer: out of memory in setup\n", stderr);
        return 1;
    }
    for (int i = 0; i < nt; i++) {
        pthread_mutex_init(&rings[i].mu, NULL);
        pthread_cond_init(&rings[i].consumer_cv, NULL);
        pthread_cond_init(&rings[i].producer_cv, NULL);
    }
    run.rings = rings;
    run.nrings = nt;
    size_t rss[PC_ROUNDS], held[PC_ROUNDS], peak = 0;
    uint64_t objects = 0, bytes = 0, sum = 0;
    int rc = 0;

    bench_timing_start();
    uint64_t t0 = bench_now_ns();
    for (int r = 0; r < PC_ROUNDS && rc == 0; r++) {
        for (int i = 0; i < nt; i++) {
            atomic_init(&rings[i].head, 0);
            atomic_init(&rings[i].tail, 0);
            atomic_init(&rings[i].consumer_waits, 0);
            atomic_init(&rings[i].producer_waits, 0);
        }
        for (int i = 0; i < 2 * nt; i++) /* pair i / 2: consumer 2i, producer 2i + 1 */
            th[i] = (pc_thread){ &run, &rings[i / 2], (uint32_t)(i / 2), (uint32_t)r, 0, 0, 0 };
        if (pc_round(impl, &run, th, tid, nt) != 0 || atomic_load(&run.stop))
            rc = 1;
        for (int i = 0; i < 2 * nt; i += 2) {
            objects += th[i].objects;
            bytes += th[i].bytes;
            sum += th[i].sum;
        }
        rss[r] = pc_rss();
        held[r] = 0;
        if (impl->held)
            impl->held(alloc, &held[r], &peak);
    }
    double secs = (double)(bench_now_ns() - t0) / 1e9;
    for (int i = 0; i < nt; i++) {
        pthread_mutex_destroy(&rings[i].mu);
        pthread_cond_destroy(&rings[i].consumer_cv);
        pthread_cond_destroy(&rings[i].producer_cv);
    }
    free(rings);
    free(th);
    free(tid);
    if (rc != 0) {
        fprintf(stderr, "producer-consumer: %s\n", run.why[0] ? run.why : "failed");
        return 1;
    }

    bench_printf(out, "producer-consumer: %d pair%s, %d rounds x %zu objects of %u..%u bytes per producer\n", nt,
                 nt == 1 ? "" : "s", PC_ROUNDS, run.per_round, PC_MIN, PC_MAX);
    bench_printf(out, "check: objects %llu bytes %llu sum %llu\n", (unsigned long long)objects,
                 (unsigned long long)bytes, (unsigned long long)sum);
    out->checksum = sum * 31u + objects;
    out->upstream_bytes = peak;
    bench_note(out, "%.2fM objects/s (%d rounds in %.3f s, thread starts included)\n",
               secs > 0 ? (double)objects / secs / 1e6 : 0.0, PC_ROUNDS, secs);
    pc_note_series(out, "RSS", rss);
    if (impl->held)
        pc_note_series(out, "held", held);
    return 0;
}

/* ---- malloc/free ---- */

#define MALLOC_ALLOC(a, n) malloc(n)
#define MALLOC_FREE(a, p, n) free(p)
PC_THREADS(pc_malloc, MALLOC_ALLOC, MALLOC_FREE)

static int run_malloc(const bench_args *args, bench_out *out)
{
    static const pc_impl impl = { pc_malloc_producer, pc_malloc_consumer, NULL };
    return pc_run_rounds(&impl, NULL, args, out);
}

/* ---- memres pools, one thread-safe pool shared by every thread ---- */

#define POOLS_ALLOC(a, n) mr_pools_alloc((mr_pools *)(a), (n), PC_ALIGN)
#define POOLS_FREE(a, p, n) mr_pools_free((mr_pools *)(a), (p), (n), PC_ALIGN)
PC_THREADS(pc_pools, POOLS_ALLOC, POOLS_FREE)

static void pools_held(void *a, size_t *now, size_t *peak)
{
    mr_stats st;
    mr_pools_stats(a, &st);
    *now = st.held;
    *peak = st.peak_held;
}

/* The rounds with impl's threads on one thread-safe pool. */
static int pools_rounds(const pc_impl *impl, const bench_args *args, bench_out *out)
{
    mr_pools_options o = { 0 };
    o.thread_safe = true;
    mr_pools *pl = mr_pools_create(&o);
    if (pl == NULL) {
        fprintf(stderr, "producer-consumer: mr_pools_create (thread_safe): %s\n", strerror(errno));
        return 1;
    }
    int rc = pc_run_rounds(impl, pl, args, out);
    mr_pools_destroy(pl);
    return rc;
}

static int run_pools(const bench_args *args, bench_out *out)
{
    static const pc_impl impl = { pc_pools_producer, pc_pools_consumer, pools_held };
    return pools_rounds(&impl, args, out);
}

/* ---- the same pool, each thread through its handle (mr_pools_local_get) ---- */

#define POOLS_LOCAL(a) ((void *)mr_pools_local_get((mr_pools *)(a)))
#define POOLS_LOCAL_ALLOC(a, n) mr_pools_local_alloc((mr_pools_local *)(a), (n), PC_ALIGN)
#define POOLS_LOCAL_FREE(a, p, n) mr_pools_local_free((mr_pools_local *)(a), (p), (n), PC_ALIGN)
PC_THREADS_H(pc_pools_local, POOLS_LOCAL, POOLS_LOCAL_ALLOC, POOLS_LOCAL_FREE)

static int run_pools_local(const bench_args *args, bench_out *out)
{
    static const pc_impl impl = { pc_pools_local_producer, pc_pools_local_consumer, pools_held };
    return pools_rounds(&impl, args, out);
}

/* ---- memres objpool, one thread-safe pool of 512-byte objects ---- */

#define OBJPOOL_ALLOC(a, n) mr_objpool_alloc((mr_objpool *)(a))
#define OBJPOOL_FREE(a, p, n) mr_objpool_free((mr_objpool *)(a), (p))
PC_THREADS(pc_objpool, OBJPOOL_ALLOC, OBJPOOL_FREE)

static void objpool_held(void *a, size_t *now, size_t *peak)
{
    mr_stats st;
    mr_objpool_stats(a, &st);
    *now = st.held;
    *peak = st.peak_held;
}

/* The rounds with impl's threads on one thread-safe object pool. */
static int objpool_rounds(const pc_impl *impl, const bench_args *args, bench_out *out)
{
    mr_objpool *op = mr_objpool_create(PC_MAX, PC_ALIGN, &(mr_objpool_options){.thread_safe = true});
    if (op == NULL) {
        fprintf(stderr, "producer-consumer: mr_objpool_create (thread_safe): %s\n", strerror(errno));
        return 1;
    }
    int rc = pc_run_rounds(impl, op, args, out);
    mr_objpool_destroy(op);
    return rc;
}

static int run_objpool(const bench_args *args, bench_out *out)
{
    static const pc_impl impl = { pc_objpool_producer, pc_objpool_consumer, objpool_held };
    return objpool_rounds(&impl, args, out);
}

/* ---- the same object pool, each thread through its handle ---- */

#define OBJPOOL_LOCAL(a) ((void *)mr_objpool_local_get((mr_objpool *)(a)))
#define OBJPOOL_LOCAL_ALLOC(a, n) mr_objpool_local_alloc((mr_objpool_local *)(a))
#define OBJPOOL_LOCAL_FREE(a, p, n) mr_objpool_local_free((mr_objpool_local *)(a), (p))
PC_THREADS_H(pc_objpool_local, OBJPOOL_LOCAL, OBJPOOL_LOCAL_ALLOC, OBJPOOL_LOCAL_FREE)

static int run_objpool_local(const bench_args *args, bench_out *out)
{
    static const pc_impl impl = { pc_objpool_local_producer, pc_objpool_local_consumer, objpool_held };
    return objpool_rounds(&impl, args, out);
}

/* ---- std::pmr::synchronized_pool_resource (sc_producer_consumer_pmr.cpp) ---- */

#define PMR_ALLOC(a, n) bench_pc_pmr_allocate((a), (n), PC_ALIGN)
#define PMR_FREE(a, p, n) bench_pc_pmr_deallocate((a), (p), (n), PC_ALIGN)
PC_THREADS(pc_pmr, PMR_ALLOC, PMR_FREE)

static int run_pmr_sync(const bench_args *args, bench_out *out)
{
    static const pc_impl impl = { pc_pmr_producer, pc_pmr_consumer, NULL };
    void *r = bench_pc_pmr_new();
    if (r == NULL) {
        fputs("producer-consumer: cannot create the synchronized_pool_resource\n", stderr);
        return 1;
    }
    int rc = pc_run_rounds(&impl, r, args, out);
    bench_pc_pmr_delete(r);
    return rc;
}

#define PC(name, kind, run) { "producer-consumer", name, kind, true, NULL, run }

const bench_variant bench_producer_consumer[] = {
    PC("malloc", BENCH_MALLOC, run_malloc),
    PC("memres pools (shared, thread-safe)", BENCH_MEMRES, run_pools),
    PC("memres objpool (shared, thread-safe)", BENCH_MEMRES, run_objpool),
    PC("memres pools (shared, local handle)", BENCH_MEMRES, run_pools_local),
    PC("memres objpool (shared, local handle)", BENCH_MEMRES, run_objpool_local),
    PC("pmr sync pool", BENCH_PEER, run_pmr_sync),
    { 0 },
};
