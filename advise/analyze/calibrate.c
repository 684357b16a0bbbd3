/* SPDX-License-Identifier: MIT */
/* advise/analyze/calibrate.c -- what an allocation costs on this machine: glibc
 * malloc/free under the four patterns of analysis.h, and the memres
 * allocators that would replace it, in ns per allocation (its free, reset
 * or rewind included), by log2 size class.
 *
 * The measurement takes about two seconds: MEASURED classes are measured
 * (each cell the least of REPS runs of about CELL_NS each, in passes over
 * every cell: what else runs on the machine only ever adds), the classes
 * between them are interpolated linearly in the class number, those below
 * the first take its value, those above the last its value.  Every
 * allocation is written, one byte per 4 KiB page (its first byte for small
 * ones), as a program would, so that page faults count where an allocator
 * takes fresh pages (glibc's mmap'd chunks) and not where it reuses them.
 * The big series (glibc's batches with its memory kept, the arena's) are
 * measured over live sets of two larger levels, for a site whose cohort is
 * larger than the cells': mra_cost_live_extra.
 *
 * The cache: $XDG_CACHE_HOME/memres-advise/costs-v1 (else
 * ~/.cache/memres-advise/costs-v1), a text file: a line naming the format,
 * a line `machine ...` (the CPU model and the advisor's version: a cache of
 * another machine or build is measured again), then one line per series of
 * MRA_COST_CLASSES numbers.  MEMRES_ADVISE_RECALIBRATE=1 measures again;
 * MEMRES_ADVISE_COSTS=FILE takes the costs of FILE instead.  Without a
 * writable home the costs are measured and not cached. */
#include "analysis.h"
#include "clock.h"
#include "probe.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "memres/arena.h"
#include "memres/objpool.h"
#include "memres/pools.h"

#ifndef MEMRES_ADVISE_VERSION
#define MEMRES_ADVISE_VERSION "unknown"
#endif

#define COSTS_VERSION 1u
#define COST_MODEL 7u /* the cells as measured: a cache of another model is measured again */
#define COSTS_MAGIC "memres-advise costs v1"

/* The classes measured: 8, 32, 128, 512 B, 2, 8, 64 KiB, 1 MiB. */
static const unsigned MEASURED[] = {3, 5, 7, 9, 11, 13, 16, 20};
#define NMEASURED (sizeof MEASURED / sizeof MEASURED[0])
#define REPS 5
#define CELL_NS 2000000ull       /* one run of one cell: 2 ms (at least one round) */
#define LIVE_BYTES ((size_t)8 << 20) /* most bytes live at once in a run */
#define PAGE 4096u

unsigned mra_cost_class(uint64_t size)
{
    if (size <= 1)
        return 0;
    unsigned c = 64u - (unsigned)__builtin_clzll(size - 1);
    return c < MRA_COST_CLASSES ? c : MRA_COST_CLASSES - 1;
}

/* Objects live at once for a size: a power of two up to `most` (a power of
 * two), at least 8, within LIVE_BYTES. */
static size_t live_count(size_t size, size_t most)
{
    size_t n = LIVE_BYTES / (size ? size : 1);
    if (n > most)
        n = most;
    if (n < 8)
        n = 8;
    return (size_t)1 << (63 - __builtin_clzll(n)); /* a power of two: picked by a mask */
}

/* The big live sets: level l holds at most BIG_COUNT[l] objects and
 * BIG_BYTES[l] bytes (a power of two of objects); measured at the classes
 * MEASURED_BIG, REPS_BIG times each.  A cell at a level whose set is no
 * larger than its base cell's adds nothing (big sizes: the base cells hold
 * up to LIVE_BYTES already). */
static const size_t BIG_COUNT[MRA_BIG_LEVELS] = {(size_t)1 << 16, (size_t)1 << 18};
static const size_t BIG_BYTES[MRA_BIG_LEVELS] = {(size_t)4 << 20, (size_t)16 << 20};
static const unsigned MEASURED_BIG[] = {5, 7, 9, 11};
#define NMEASURED_BIG (sizeof MEASURED_BIG / sizeof MEASURED_BIG[0])
#define REPS_BIG 2
#define BIG_MAX_OBJECTS ((size_t)1 << 18)

static size_t big_objects(unsigned level, size_t size)
{
    size_t n = BIG_BYTES[level] / (size ? size : 1);
    if (n > BIG_COUNT[level])
        n = BIG_COUNT[level];
    if (n < 8)
        n = 8;
    return (size_t)1 << (63 - __builtin_clzll(n));
}

/* A representative size of class c: three quarters of its top, 8-aligned. */
static size_t class_size(unsigned c)
{
    size_t top = (size_t)1 << c;
    size_t s = top - top / 4;
    s &= ~(size_t)7;
    return s < 8 ? 8 : s;
}

/* Objects per objpool block for a size: about 64 KiB of them, 8..1024
 * (replay.c creates its pools the same way). */
static size_t objpool_per_block(size_t size)
{
    size_t n = ((size_t)64 << 10) / (size ? size : 1);
    return n < 8 ? 8 : n > 1024 ? 1024 : n;
}

/* ---- one run of one cell: ns per allocation ---- */

/* The stack-like pattern: up to STACK_DEPTH objects deep, at most
 * STACK_BYTES live: a stack of temporaries.  (Deeper stacks of big blocks
 * would measure glibc trimming its heap at every round, which a program's
 * stack of a few 8 KiB buffers never makes it do.) */
#define STACK_DEPTH 16
#define STACK_BYTES ((size_t)64 << 10)
static int stack_depth(size_t size)
{
    size_t d = STACK_BYTES / (size ? size : 1);
    return d < 1 ? 1 : d > STACK_DEPTH ? STACK_DEPTH : (int)d;
}

static double run_glibc_lifo(size_t size, void **v)
{
    int depth = stack_depth(size);
    struct mra_cell c;
    mra_cell_init(&c);
    do {
        /* freed at once, then in reverse order */
        void *p = malloc(size);
        mra_touch(p, size);
        free(p);
        for (int i = 0; i < depth; i++) {
            v[i] = malloc(size);
            mra_touch(v[i], size);
        }
        for (int i = depth - 1; i >= 0; i--)
            free(v[i]);
    } while (mra_cell_round(&c, 1 + (uint64_t)depth, CELL_NS));
    return mra_cell_result(&c);
}

/* Batches allocated and freed again.  glibc gives a freed batch above
 * M_TRIM_THRESHOLD (128 KiB) back to the kernel and faults it in again at
 * the next: what a program that repeats its batches pays.  `kept`: with
 * trimming and mmap off, what a batch costs the first time (its pages'
 * first faults, paid by an arena as well, aside); this series is measured
 * last, since mallopt's settings stay. */
static double run_glibc_batch(size_t size, void **v, bool kept, size_t n)
{
    if (kept) {
        mallopt(M_TRIM_THRESHOLD, INT_MAX);
        mallopt(M_MMAP_THRESHOLD, 32 << 20);
    }
    struct mra_cell c;
    mra_cell_init(&c);
    do {
        for (size_t i = 0; i < n; i++) {
            v[i] = malloc(size);
            mra_touch(v[i], size);
        }
        for (size_t i = 0; i < n; i++)
            free(v[i]);
    } while (mra_cell_round(&c, n, CELL_NS));
    return mra_cell_result(&c);
}

/* A page given back and taken again (the heap trimmed, grown again and
 * written; a chunk unmapped and mapped again): FAULT_PAGES pages mapped,
 * written one byte a page, unmapped; ns per page. */
#define FAULT_PAGES 64u
static double run_page_fault(void)
{
    struct mra_cell c;
    mra_cell_init(&c);
    do {
        void *p = mmap(NULL, FAULT_PAGES * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return -1;
        mra_touch(p, FAULT_PAGES * PAGE);
        munmap(p, FAULT_PAGES * PAGE);
    } while (mra_cell_round(&c, FAULT_PAGES, CELL_NS));
    return mra_cell_result(&c);
}

static double run_glibc_random(size_t size, void **v, size_t n)
{
    return mra_random_pairs(malloc, free, size, v, n, CELL_NS);
}

#if defined(__x86_64__)
#include <x86intrin.h>
/* The recorder's fenced read of the time-stamp counter (record.h). */
static inline uint64_t fenced_tsc(void)
{
    _mm_lfence();
    uint64_t t = (uint64_t)__rdtsc();
    _mm_lfence();
    return t;
}

/* The random pattern as the recorder times it: each free and malloc
 * between two fenced reads, less the mean empty interval, as the recorder
 * takes it off (mra_empty_interval; the counter steps by 26 cycles on this
 * project's virtual machines, so the least of a few hundred empty
 * intervals, taken off before, was one step or two from one calibration
 * to the next, and this cell 19 or 37 ns a pair at 32 bytes), per pair,
 * converted to ns by the counter's rate over the run.  Fencing
 * serialises the call: no overlap with the code around it, as in a
 * program, so the sum is above the loop's own time per pair; the
 * difference is what the run's timed samples overstate. */
static double run_glibc_fenced(size_t size, void **v)
{
    size_t n = live_count(size, 4096);
    uint64_t s = 0x9e3779b97f4a7c15ull;
    static uint32_t iv[2000];
    for (unsigned i = 0; i < 2000; i++) {
        uint64_t a = fenced_tsc(), b = fenced_tsc();
        iv[i] = (uint32_t)(b - a);
    }
    double empty = mra_empty_interval(iv, 2000);
    for (size_t i = 0; i < n; i++) {
        v[i] = malloc(size);
        mra_touch(v[i], size);
    }
    uint64_t m0 = mra_mono_ns(), c0 = (uint64_t)__rdtsc(), sum = 0, pairs = 0;
    do {
        for (int r = 0; r < 64; r++) {
            size_t i = (size_t)mra_rng_next(&s) & (n - 1);
            uint64_t t1 = fenced_tsc();
            free(v[i]);
            uint64_t t2 = fenced_tsc();
            v[i] = malloc(size);
            uint64_t t3 = fenced_tsc();
            mra_touch(v[i], size);
            sum += (t2 - t1) + (t3 - t2);
        }
        pairs += 64;
    } while (mra_mono_ns() - m0 < CELL_NS);
    double ns_per_tick = (double)(mra_mono_ns() - m0) / (double)((uint64_t)__rdtsc() - c0);
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    return ((double)sum / (double)pairs - 2 * empty) * ns_per_tick;
}
#else
static double run_glibc_fenced(size_t size, void **v)
{
    (void)size;
    (void)v;
    return 0;
}
#endif

static double run_arena(size_t size, void **v, size_t n)
{
    mr_arena *a = mr_arena_create(NULL);
    if (!a)
        return -1;
    struct mra_cell c;
    mra_cell_init(&c);
    do {
        for (size_t i = 0; i < n; i++) {
            v[i] = mr_arena_alloc(a, size);
            mra_touch(v[i], size);
        }
        mr_arena_reset(a);
    } while (mra_cell_round(&c, n, CELL_NS));
    mr_arena_destroy(a);
    return mra_cell_result(&c);
}

/* As replay.c does at an arena-rewind site: a mark before each allocation,
 * a rewind to it at each free (here in stack order). */
static double run_arena_rewind(size_t size, void **v)
{
    mr_arena *a = mr_arena_create(NULL);
    if (!a)
        return -1;
    mr_arena_mark m[STACK_DEPTH + 1];
    int depth = stack_depth(size);
    struct mra_cell c;
    mra_cell_init(&c);
    do {
        m[0] = mr_arena_save(a);
        void *p = mr_arena_alloc(a, size);
        mra_touch(p, size);
        mr_arena_rewind(a, m[0]);
        for (int i = 0; i < depth; i++) {
            m[i] = mr_arena_save(a);
            v[i] = mr_arena_alloc(a, size);
            mra_touch(v[i], size);
        }
        for (int i = depth - 1; i >= 0; i--)
            mr_arena_rewind(a, m[i]);
    } while (mra_cell_round(&c, 1 + (uint64_t)depth, CELL_NS));
    mr_arena_destroy(a);
    return mra_cell_result(&c);
}

static double run_objpool(size_t size, void **v, size_t n)
{
    mr_objpool_options o = {0};
    o.objects_per_block = objpool_per_block(size);
    mr_objpool *p = mr_objpool_create(size, 16, &o);
    if (!p)
        return -1;
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < n; i++) {
        v[i] = mr_objpool_alloc(p);
        mra_touch(v[i], size);
    }
    struct mra_cell c;
    mra_cell_init(&c);
    do {
        for (int r = 0; r < 64; r++) {
            size_t i = (size_t)mra_rng_next(&s) & (n - 1);
            mr_objpool_free(p, v[i]);
            v[i] = mr_objpool_alloc(p);
            mra_touch(v[i], size);
        }
    } while (mra_cell_round(&c, 64, CELL_NS));
    mr_objpool_destroy(p);
    return mra_cell_result(&c);
}

static double run_pools(size_t size, void **v, size_t n)
{
    mr_pools *p = mr_pools_create(NULL);
    if (!p)
        return -1;
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < n; i++) {
        v[i] = mr_pools_alloc(p, size, 16);
        mra_touch(v[i], size);
    }
    struct mra_cell c;
    mra_cell_init(&c);
    do {
        for (int r = 0; r < 64; r++) {
            size_t i = (size_t)mra_rng_next(&s) & (n - 1);
            mr_pools_free(p, v[i], size, 16);
            v[i] = mr_pools_alloc(p, size, 16);
            mra_touch(v[i], size);
        }
    } while (mra_cell_round(&c, 64, CELL_NS));
    mr_pools_destroy(p);
    return mra_cell_result(&c);
}

/* ---- remote frees: one thread allocates a batch, another frees it ----
 * The two take turns (a batch at a time), each timing its own part (by the
 * wall clock: reading a thread's CPU clock costs microseconds here): the
 * cost is the time of both per allocation, not a pipeline's wall time. */

struct remote {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int turn;                    /* 0: the allocator's, 1: the freer's, 2: stop */
    void **v;
    size_t n, size;
    mr_pools *pools;             /* NULL: glibc */
    uint64_t free_ns;
};

static void *remote_freer(void *arg)
{
    struct remote *r = arg;
    pthread_mutex_lock(&r->mu);
    for (;;) {
        while (r->turn == 0)
            pthread_cond_wait(&r->cv, &r->mu);
        if (r->turn == 2)
            break;
        pthread_mutex_unlock(&r->mu);
        uint64_t t0 = mra_mono_ns();
        if (r->pools)
            for (size_t i = 0; i < r->n; i++)
                mr_pools_free(r->pools, r->v[i], r->size, 16);
        else
            for (size_t i = 0; i < r->n; i++)
                free(r->v[i]);
        r->free_ns += mra_mono_ns() - t0;
        pthread_mutex_lock(&r->mu);
        r->turn = 0;
        pthread_cond_broadcast(&r->cv);
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

static double run_remote(size_t size, void **v, bool pools)
{
    struct remote r;
    memset(&r, 0, sizeof r);
    pthread_mutex_init(&r.mu, NULL);
    pthread_cond_init(&r.cv, NULL);
    r.v = v;
    r.size = size;
    r.n = live_count(size, 256);
    if (pools) {
        mr_pools_options o = {0};
        o.thread_safe = true;
        r.pools = mr_pools_create(&o);
        if (!r.pools)
            return -1;
    }
    pthread_t th;
    if (pthread_create(&th, NULL, remote_freer, &r) != 0) {
        mr_pools_destroy(r.pools);
        return -1;
    }
    uint64_t start = 0, alloc_ns = 0, ops = 0;
    /* one batch untimed, then batches for a wall time of twice the cell
     * (the two threads take turns) */
    for (int b = 0;; b++) {
        if (b == 1) {
            start = mra_mono_ns();
            alloc_ns = ops = 0;
            r.free_ns = 0; /* the freer is waiting: its turn is over */
        } else if (b > 1 && mra_mono_ns() - start >= 2 * CELL_NS)
            break;
        uint64_t t0 = mra_mono_ns();
        if (r.pools)
            for (size_t i = 0; i < r.n; i++) {
                v[i] = mr_pools_alloc(r.pools, size, 16);
                mra_touch(v[i], size);
            }
        else
            for (size_t i = 0; i < r.n; i++) {
                v[i] = malloc(size);
                mra_touch(v[i], size);
            }
        alloc_ns += mra_mono_ns() - t0;
        ops += r.n;
        pthread_mutex_lock(&r.mu);
        r.turn = 1;
        pthread_cond_broadcast(&r.cv);
        while (r.turn == 1)
            pthread_cond_wait(&r.cv, &r.mu);
        pthread_mutex_unlock(&r.mu);
    }
    pthread_mutex_lock(&r.mu);
    r.turn = 2;
    pthread_cond_broadcast(&r.cv);
    pthread_mutex_unlock(&r.mu);
    pthread_join(th, NULL);
    pthread_mutex_destroy(&r.mu);
    pthread_cond_destroy(&r.cv);
    mr_pools_destroy(r.pools);
    return ops ? (double)(alloc_ns + r.free_ns) / (double)ops : -1;
}

/* ---- the whole measurement ---- */

/* S_BATCH_KEPT and the big series last: the first changes glibc's
 * settings, and the big batches are measured with them (memory kept: the
 * misses of a big live set without the faults of a trimmed heap, which the
 * timed model counts) */
enum { S_LIFO, S_BATCH, S_RANDOM, S_REMOTE, S_ARENA, S_REWIND, S_OBJPOOL, S_POOLS, S_POOLS_TS,
       S_FENCED, S_BATCH_KEPT, S_FAULT, S_BIG, NSERIES = S_BIG + MRA_BIG_KINDS * MRA_BIG_LEVELS };
/* S_FENCED, S_FAULT and the big series may be missing from a cache (a
 * fixture of an older model): their rows are 0 */
#define SERIES_OPTIONAL ((1u << S_FENCED) | (1u << S_FAULT) | (((1u << NSERIES) - 1) & ~((1u << S_BIG) - 1)))

static const char *const SERIES_NAME[NSERIES] = {
    "glibc-lifo", "glibc-batch", "glibc-random", "glibc-remote",
    "arena", "arena-rewind", "objpool", "pools", "pools-ts", "glibc-random-fenced", "glibc-batch-kept",
    "page-fault", "glibc-batch-kept-big1", "glibc-batch-kept-big2", "arena-big1", "arena-big2",
};
_Static_assert(MRA_BIG_LEVELS == 2 && MRA_BIG_KINDS == 2, "SERIES_NAME's big series");

static double *series_row(struct mra_costs *c, int s)
{
    if (s >= S_BIG)
        return c->big[(unsigned)(s - S_BIG) / MRA_BIG_LEVELS][(unsigned)(s - S_BIG) % MRA_BIG_LEVELS];
    switch (s) {
    case S_LIFO: return c->glibc[MRA_PAT_LIFO];
    case S_BATCH: return c->glibc[MRA_PAT_BATCH];
    case S_RANDOM: return c->glibc[MRA_PAT_RANDOM];
    case S_REMOTE: return c->glibc[MRA_PAT_REMOTE];
    case S_ARENA: return c->arena;
    case S_REWIND: return c->arena_rewind;
    case S_OBJPOOL: return c->objpool;
    case S_POOLS: return c->pools;
    case S_BATCH_KEPT: return c->glibc_batch_kept;
    case S_FENCED: return c->glibc_fenced;
    case S_FAULT: return c->page_fault;
    default: return c->pools_ts;
    }
}

static double run_big(enum mra_big_kind k, size_t size, void **v, size_t n)
{
    return k == MRA_BIG_GLIBC_BATCH ? run_glibc_batch(size, v, true, n) : run_arena(size, v, n);
}

static double run_cell(int s, size_t size, void **v)
{
    size_t batch = live_count(size, 1024), random = live_count(size, 4096);
    if (s >= S_BIG)
        return run_big((enum mra_big_kind)((unsigned)(s - S_BIG) / MRA_BIG_LEVELS), size, v,
                       big_objects((unsigned)(s - S_BIG) % MRA_BIG_LEVELS, size));
    switch (s) {
    case S_LIFO: return run_glibc_lifo(size, v);
    case S_BATCH: return run_glibc_batch(size, v, false, batch);
    case S_BATCH_KEPT: return run_glibc_batch(size, v, true, batch);
    case S_RANDOM: return run_glibc_random(size, v, random);
    case S_FENCED: return run_glibc_fenced(size, v);
    case S_FAULT: return run_page_fault();
    case S_REMOTE: return run_remote(size, v, false);
    case S_ARENA: return run_arena(size, v, batch);
    case S_REWIND: return run_arena_rewind(size, v);
    case S_OBJPOOL: return run_objpool(size, v, random);
    case S_POOLS: return run_pools(size, v, random);
    default: return run_remote(size, v, true);
    }
}

static void machine_name(char *out, size_t n)
{
    char model[96] = "unknown CPU";
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof line, f)) {
            if (strncmp(line, "model name", 10) != 0 && strncmp(line, "Processor", 9) != 0 &&
                strncmp(line, "cpu model", 9) != 0)
                continue;
            char *p = strchr(line, ':');
            if (!p)
                continue;
            p++;
            while (*p == ' ' || *p == '\t')
                p++;
            size_t len = strcspn(p, "\n");
            if (len == 0)
                continue;
            if (len >= sizeof model)
                len = sizeof model - 1;
            memcpy(model, p, len);
            model[len] = 0;
            break;
        }
        fclose(f);
    }
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    snprintf(out, n, "%s x%ld / memres-advise %s, cost model %u", model, ncpu, MEMRES_ADVISE_VERSION, COST_MODEL);
    /* one line, no spaces at the ends: it is a line of the cache file */
    for (char *p = out; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
}

/* The classes of series s, and how many. */
static const unsigned *series_classes(int s, size_t *nc)
{
    /* a page fault costs the same whatever the class: one cell, every
     * class its value */
    static const unsigned FAULT_CLASS[] = {12};
    *nc = s >= S_BIG ? NMEASURED_BIG : s == S_FAULT ? 1 : NMEASURED;
    return s >= S_BIG ? MEASURED_BIG : s == S_FAULT ? FAULT_CLASS : MEASURED;
}

/* Whether pass p of REPS measures series s: every pass the small cells,
 * the first and the last the big ones (REPS_BIG of them). */
_Static_assert(REPS_BIG == 2, "series_in_pass: the big series' passes");
static bool series_in_pass(int s, int p)
{
    return s < S_BIG || p == 0 || p == REPS - 1;
}

int mra_costs_measure(struct mra_costs *c)
{
    memset(c, 0, sizeof *c);
    c->version = COSTS_VERSION;
    machine_name(c->machine, sizeof c->machine);
    void **v = malloc(BIG_MAX_OBJECTS * sizeof *v);
    if (!v) {
        fprintf(stderr, "memres-advise: calibration: out of memory\n");
        return -1;
    }
    /* a warm-up, so that the first cell does not pay for the heap's growth */
    (void)run_glibc_random(64, v, live_count(64, 4096));
    /* Each cell is the least of its runs, and its runs are spread over the
     * whole calibration: pass after pass over every cell, not one cell's
     * runs back to back, and each pass on another of the CPUs the process
     * may use.  A shared host slows a stretch of time or one virtual CPU,
     * not a cell: measured back to back, one calibration's small glibc
     * cells came to 8.5 ns a pair and the next one's, a second later, to
     * 14.6; a loop of malloc/free pairs took 6.4 ns on one of this VM's two
     * CPUs and 12.6 on the other for minutes.  The passes go in two
     * phases: S_BATCH_KEPT changes glibc's settings for good. */
    double m[NSERIES][NMEASURED];
    for (int s = 0; s < NSERIES; s++)
        for (size_t k = 0; k < NMEASURED; k++)
            m[s][k] = HUGE_VAL;
    struct mra_cpus cpus;
    mra_cpus_get(&cpus);
    static const int PHASE[] = {0, S_BATCH_KEPT, NSERIES};
    for (int ph = 0; ph < 2; ph++)
        for (int p = 0; p < REPS; p++)
            for (int s = PHASE[ph]; s < PHASE[ph + 1]; s++) {
                if (!series_in_pass(s, p))
                    continue;
                /* another thread frees the remote series' objects: the
                 * process's own CPUs, not one */
                mra_cpus_pin(&cpus, s == S_REMOTE || s == S_POOLS_TS ? -1 : p);
                size_t nc;
                const unsigned *classes = series_classes(s, &nc);
                for (size_t k = 0; k < nc; k++) {
                    double r = run_cell(s, class_size(classes[k]), v);
                    if (r < m[s][k])
                        m[s][k] = r;
                }
            }
    mra_cpus_pin(&cpus, -1);
    free(v);
    for (int s = 0; s < NSERIES; s++) {
        double *row = series_row(c, s);
        size_t nc;
        const unsigned *classes = series_classes(s, &nc);
        for (size_t k = 0; k < nc; k++)
            if (!(m[s][k] > 0) && s != S_FENCED) {
                fprintf(stderr, "memres-advise: calibration of %s at %zu bytes failed\n", SERIES_NAME[s],
                        class_size(classes[k]));
                return -1;
            }
        /* interpolate linearly in the class number between measured classes */
        for (unsigned cl = 0; cl < MRA_COST_CLASSES; cl++) {
            if (cl <= classes[0]) {
                row[cl] = m[s][0];
                continue;
            }
            if (cl >= classes[nc - 1]) {
                row[cl] = m[s][nc - 1];
                continue;
            }
            size_t k = 0;
            while (classes[k + 1] < cl)
                k++;
            double f = (double)(cl - classes[k]) / (double)(classes[k + 1] - classes[k]);
            row[cl] = m[s][k] + f * (m[s][k + 1] - m[s][k]);
        }
    }
    return 0;
}

/* ---- the cost of a big live set ---- */

static const double *big_base(const struct mra_costs *c, enum mra_big_kind k)
{
    return k == MRA_BIG_GLIBC_BATCH ? c->glibc_batch_kept : c->arena;
}

double mra_cost_live_extra(const struct mra_costs *c, enum mra_big_kind k, unsigned cl, double live_bytes)
{
    if (cl >= MRA_COST_CLASSES)
        cl = MRA_COST_CLASSES - 1;
    size_t size = class_size(cl);
    size_t n = live_count(size, 1024);
    double base = big_base(c, k)[cl];
    double x0 = log((double)(n * size)), y0 = 0, x = live_bytes > 1 ? log(live_bytes) : 0;
    if (x <= x0 || !(base > 0))
        return 0;
    for (unsigned l = 0; l < MRA_BIG_LEVELS; l++) {
        size_t nl = big_objects(l, size);
        double cost = c->big[k][l][cl];
        if (nl <= n || !(cost > 0))
            continue;
        double x1 = log((double)(nl * size)), y1 = fmax(0, cost - base);
        if (x <= x1)
            return y0 + (x - x0) / (x1 - x0) * (y1 - y0);
        x0 = x1;
        y0 = y1;
        n = nl;
    }
    return y0;
}

/* ---- the cache ---- */

/* The cache's path in out (creating its directories when mk), or -1. */
static int cache_path(char *out, size_t n, bool mk)
{
    const char *x = getenv("XDG_CACHE_HOME");
    char dir[4096];
    int w;
    if (x && x[0] == '/')
        w = snprintf(dir, sizeof dir, "%s", x);
    else {
        const char *home = getenv("HOME");
        if (!home || home[0] != '/')
            return -1;
        w = snprintf(dir, sizeof dir, "%s/.cache", home);
    }
    if (w < 0 || (size_t)w >= sizeof dir - 32)
        return -1;
    if (mk && mkdir(dir, 0700) != 0 && errno != EEXIST)
        return -1;
    size_t len = (size_t)w;
    snprintf(dir + len, sizeof dir - len, "/memres-advise");
    if (mk && mkdir(dir, 0700) != 0 && errno != EEXIST)
        return -1;
    w = snprintf(out, n, "%s/costs-v1", dir);
    return w < 0 || (size_t)w >= n ? -1 : 0;
}

static int cache_read(struct mra_costs *c, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[4096];
    int ok = 0;
    struct mra_costs t;
    memset(&t, 0, sizeof t);
    t.version = COSTS_VERSION;
    if (!fgets(line, sizeof line, f) || strcmp(line, COSTS_MAGIC "\n") != 0)
        goto out;
    if (!fgets(line, sizeof line, f) || strncmp(line, "machine ", 8) != 0)
        goto out;
    line[strcspn(line, "\n")] = 0;
    size_t ml = strlen(line + 8);
    if (ml >= sizeof t.machine)
        goto out;
    memcpy(t.machine, line + 8, ml + 1);
    unsigned seen = 0;
    while (fgets(line, sizeof line, f)) {
        char *p = strchr(line, ' ');
        if (!p)
            goto out;
        *p++ = 0;
        int s = 0;
        while (s < NSERIES && strcmp(SERIES_NAME[s], line) != 0)
            s++;
        if (s == NSERIES)
            goto out;
        double *row = series_row(&t, s);
        for (unsigned cl = 0; cl < MRA_COST_CLASSES; cl++) {
            char *e;
            double d = strtod(p, &e);
            if (e == p || !(d > 0 || (s == S_FENCED && d == 0)) || d > 1e9)
                goto out;
            row[cl] = d;
            p = e;
        }
        seen |= 1u << s;
    }
    if ((seen | SERIES_OPTIONAL) == (1u << NSERIES) - 1) {
        *c = t;
        ok = 1;
    }
out:
    fclose(f);
    return ok ? 0 : -1;
}

static void cache_write(const struct mra_costs *c, const char *path)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f)
        return;
    fprintf(f, "%s\nmachine %s\n", COSTS_MAGIC, c->machine);
    for (int s = 0; s < NSERIES; s++) {
        const double *row = series_row((struct mra_costs *)(uintptr_t)c, s);
        fprintf(f, "%s", SERIES_NAME[s]);
        for (unsigned cl = 0; cl < MRA_COST_CLASSES; cl++)
            fprintf(f, " %.3f", row[cl]);
        fputc('\n', f);
    }
    if (fclose(f) != 0 || rename(tmp, path) != 0)
        unlink(tmp);
}

#define STALE_SHARE 0.75

int mra_costs_get(struct mra_costs *c, bool quiet)
{
    /* MEMRES_ADVISE_COSTS=FILE: the costs of FILE (a cache file, of this
     * machine or another), not measured: a report made reproducible, and
     * the known-answer tests independent of the timing of the machine
     * running them */
    const char *given = getenv("MEMRES_ADVISE_COSTS");
    if (given && given[0]) {
        if (cache_read(c, given) == 0)
            return 0;
        fprintf(stderr, "memres-advise: MEMRES_ADVISE_COSTS=%s: not a costs file of this version\n", given);
        return -1;
    }
    char path[4096];
    char machine[sizeof c->machine];
    machine_name(machine, sizeof machine);
    const char *re = getenv("MEMRES_ADVISE_RECALIBRATE");
    bool force = re && re[0] && strcmp(re, "0") != 0;
    bool have_path = cache_path(path, sizeof path, false) == 0;
    if (!force && have_path && cache_read(c, path) == 0 && strcmp(c->machine, machine) == 0) {
        /* A cache made while a shared host slowed every CPU for the whole
         * calibration costs glibc and memres high until measured again:
         * where the machine runs the cache's glibc cell now in under
         * STALE_SHARE of its time (6 ms to look), it is. */
        double ref = mra_costs_probe_ref(c), now = ref > 0 ? mra_costs_probe() : 0;
        if (!(now > 0 && now < STALE_SHARE * ref))
            return 0;
        if (!quiet)
            fprintf(stderr,
                    "memres-advise: this machine runs glibc's calibrated pair in %.1f ns where its costs say %.1f: "
                    "calibrating again...\n",
                    now, ref);
    } else if (!quiet) {
        fprintf(stderr, "memres-advise: calibrating costs of this machine (once)...\n");
    }
    if (mra_costs_measure(c) != 0)
        return -1;
    if (cache_path(path, sizeof path, true) == 0)
        cache_write(c, path);
    return 0;
}

/* ---- the machine's speed now ---- */


double mra_costs_probe_ref(const struct mra_costs *c)
{
    return c->glibc[MRA_PAT_RANDOM][mra_cost_class(MRA_PROBE_SIZE)];
}

double mra_costs_probe(void)
{
    void **v = malloc(MRA_PROBE_LIVE * sizeof *v);
    if (!v)
        return 0;
    double best = mra_probe_pairs(malloc, free, v);
    free(v);
    return best;
}
