/* SPDX-License-Identifier: MIT */
/* bench/sc_churn.c -- scenario "churn": mixed-size allocation churn.
 *
 * A table of 100 000 slots.  Each step picks a slot with a seeded generator;
 * if the slot holds a block, the block's first and last bytes are read into
 * the checksum and it is freed (with its size); else a block of 8..1024 bytes
 * is allocated and its first and last bytes written.  20M steps (--quick 1M),
 * then every block left is read and freed.  Sizes are log-uniform by octave:
 * one of the seven octaves [8,16) .. [512,1024] with equal probability, then
 * uniform inside it.  About half the slots are full at any time: ~50 000 live
 * blocks of ~200 bytes on average.
 *
 * Every variant runs the same step sequence (one splitmix64 draw per step)
 * and requests the same alignment (alignof(max_align_t), what malloc gives):
 *   malloc                 malloc/free (run under glibc, jemalloc, mimalloc,
 *                          tcmalloc by the harness);
 *   memres pools           mr_pools_alloc / mr_pools_free with the size
 *                          (default options), when pools.h is built;
 *   pmr unsync pool        std::pmr::unsynchronized_pool_resource and
 *   pmr sync pool          synchronized_pool_resource (default options),
 *                          in sc_churn_pmr.cpp: that file repeats the step
 *                          loop below for std::pmr and must stay in step
 *                          with it (the harness compares the checksums).
 * Timing starts once the slot table is allocated and the allocator created.
 * requested_bytes is the peak of live requested bytes; memres rows report
 * their peak bytes held from upstream.
 */
#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>

#include "bench.h"
#include "memres/memres.h"

#define CHURN_SLOTS 100000u
#define CHURN_SEED 0x636875726eULL
#define CHURN_ALIGN ((size_t)alignof(max_align_t))

typedef struct churn_slot {
    unsigned char *p;
    size_t size;
} churn_slot;

static inline uint64_t churn_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* 8..1024 bytes from the low 32 bits of a draw (the slot uses the high 32). */
static inline size_t churn_size(uint64_t r)
{
    unsigned octave = (unsigned)(r & 0xff) % 7u;
    size_t base = (size_t)8 << octave;
    return base + (size_t)((r >> 8) & 0xffffff) % (base + (octave == 6));
}

typedef struct churn_result {
    uint64_t sum;
    size_t allocations;
    size_t peak_live;
} churn_result;

/* The std::pmr step loops, in sc_churn_pmr.cpp: 0 and *res filled, or 1. */
int bench_churn_pmr_unsync(const bench_args *args, churn_result *res);
int bench_churn_pmr_sync(const bench_args *args, churn_result *res);

static int churn_finish(const bench_args *args, bench_out *out, const churn_result *res, size_t upstream)
{
    size_t steps = args->quick ? 1000000u : 20000000u;
    uint64_t checksum = res->sum * 31u + res->allocations;
    bench_printf(out, "churn: %u slots, %zu steps, %zu allocations, peak %zu bytes live, checksum %llu\n",
                 CHURN_SLOTS, steps, res->allocations, res->peak_live, (unsigned long long)checksum);
    out->checksum = checksum;
    out->requested_bytes = res->peak_live;
    out->upstream_bytes = upstream;
    return 0;
}

/* The step loop, expanded once per allocator so that its calls inline.
 * ALLOC(n) gives n bytes aligned to CHURN_ALIGN or NULL; FREE(p, n) frees.
 * Sets rc to 0 and fills res, or rc to 1 on allocation failure (everything
 * freed either way). */
#define CHURN_LOOP(args, res, rc, ALLOC, FREE)                                       \
    do {                                                                             \
        size_t steps_ = (args)->quick ? 1000000u : 20000000u;                        \
        churn_slot *slots_ = calloc(CHURN_SLOTS, sizeof *slots_);                    \
        uint64_t seed_ = CHURN_SEED, sum_ = 0;                                       \
        size_t live_ = 0, peak_ = 0, allocs_ = 0;                                    \
        (rc) = slots_ == NULL;                                                       \
        bench_timing_start();                                                        \
        for (size_t step_ = 0; step_ < steps_ && (rc) == 0; step_++) {               \
            uint64_t r_ = churn_next(&seed_);                                        \
            churn_slot *sl_ = &slots_[(uint32_t)(r_ >> 32) % CHURN_SLOTS];           \
            if (sl_->p != NULL) {                                                    \
                sum_ += sl_->p[0] + ((uint64_t)sl_->p[sl_->size - 1] << 8) + sl_->size; \
                FREE(sl_->p, sl_->size);                                             \
                live_ -= sl_->size;                                                  \
                sl_->p = NULL;                                                       \
            } else {                                                                 \
                size_t n_ = churn_size(r_);                                          \
                unsigned char *p_ = (unsigned char *)ALLOC(n_);                      \
                if (p_ == NULL) {                                                    \
                    (rc) = 1;                                                        \
                    break;                                                           \
                }                                                                    \
                p_[0] = (unsigned char)step_;                                        \
                p_[n_ - 1] = (unsigned char)(step_ >> 8);                            \
                sl_->p = p_;                                                         \
                sl_->size = n_;                                                      \
                live_ += n_;                                                         \
                allocs_++;                                                           \
                if (live_ > peak_)                                                   \
                    peak_ = live_;                                                   \
            }                                                                        \
        }                                                                            \
        for (size_t i_ = 0; slots_ != NULL && i_ < CHURN_SLOTS; i_++) {              \
            churn_slot *sl_ = &slots_[i_];                                           \
            if (sl_->p != NULL) {                                                    \
                sum_ += sl_->p[0] + ((uint64_t)sl_->p[sl_->size - 1] << 8) + sl_->size; \
                FREE(sl_->p, sl_->size);                                             \
            }                                                                        \
        }                                                                            \
        free(slots_);                                                                \
        (res).sum = sum_;                                                            \
        (res).allocations = allocs_;                                                 \
        (res).peak_live = peak_;                                                     \
    } while (0)

/* ---- malloc/free ---- */

#define MALLOC_ALLOC(n) malloc(n)
#define MALLOC_FREE(p, n) free(p)

static int run_malloc(const bench_args *args, bench_out *out)
{
    churn_result res;
    int rc;
    CHURN_LOOP(args, res, rc, MALLOC_ALLOC, MALLOC_FREE);
    return rc != 0 ? rc : churn_finish(args, out, &res, 0);
}

/* ---- memres pools ---- */

static int run_pools(const bench_args *args, bench_out *out)
{
    mr_pools *pl = mr_pools_create(NULL);
    if (pl == NULL)
        return 1;
    churn_result res;
    int rc;
#define POOLS_ALLOC(n) mr_pools_alloc(pl, (n), CHURN_ALIGN)
#define POOLS_FREE(p, n) mr_pools_free(pl, (p), (n), CHURN_ALIGN)
    CHURN_LOOP(args, res, rc, POOLS_ALLOC, POOLS_FREE);
    mr_stats s;
    mr_pools_stats(pl, &s);
    mr_pools_destroy(pl);
    return rc != 0 ? rc : churn_finish(args, out, &res, s.peak_held);
}

/* ---- std::pmr (sc_churn_pmr.cpp) ---- */

/* The step loop is sc_churn_pmr.cpp's; the output is printed here, as the
 * other rows' is. */
static int run_pmr(int (*loop)(const bench_args *, churn_result *), const bench_args *args, bench_out *out)
{
    churn_result res;
    int rc = loop(args, &res);
    return rc != 0 ? rc : churn_finish(args, out, &res, 0);
}

static int run_pmr_unsync(const bench_args *args, bench_out *out)
{
    return run_pmr(bench_churn_pmr_unsync, args, out);
}

static int run_pmr_sync(const bench_args *args, bench_out *out)
{
    return run_pmr(bench_churn_pmr_sync, args, out);
}

const bench_variant bench_churn[] = {
    {"churn", "malloc", BENCH_MALLOC, false, NULL, run_malloc},
    {"churn", "memres pools", BENCH_MEMRES, false, NULL, run_pools},
    {"churn", "pmr unsync pool", BENCH_PEER, false, NULL, run_pmr_unsync},
    {"churn", "pmr sync pool", BENCH_PEER, false, NULL, run_pmr_sync},
    {NULL, NULL, BENCH_MEMRES, false, NULL, NULL},
};
