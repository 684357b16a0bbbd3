/* SPDX-License-Identifier: MIT */
/* advise/common/probe.h -- glibc's malloc/free pair in random order among
 * a set of live objects, timed in this thread's CPU time: the calibration's
 * random-order cells (analyze/calibrate.c), and the probe of the machine's
 * speed that compares a moment with the calibration -- run by the analysis
 * (a stale cache, measure's rounds) and by the recorder on the recorded
 * program's own thread (record/speed.c), so that the run's timed figures
 * can be taken to the calibration's speed.  A shared host slows one
 * virtual CPU or a stretch of time, not one allocator: on this project's
 * VMs a loop of pairs ran at 6.4 ns on one vCPU and 12.6 on the other for
 * minutes.  Plain C and libc: it compiles into the preloaded recorder,
 * which passes glibc's own functions (its malloc is the interposer). */
#ifndef MEMRES_ADVISE_PROBE_H
#define MEMRES_ADVISE_PROBE_H

#include <stddef.h>
#include <stdint.h>

#include "clock.h"

#define MRA_PROBE_SIZE 32u            /* the probe's objects: a measured class of the calibration */
#define MRA_PROBE_LIVE 4096u          /* ... live at once: the calibration's random cell at 32 bytes */
#define MRA_PROBE_CELL_NS 2000000ull  /* one run: 2 ms of the wall clock after a warm-up round */
#define MRA_PROBE_RUNS 3              /* a probe is the least of this many runs */

/* Writes p as a program would: one byte a 4 KiB page. */
static inline void mra_touch(void *p, size_t size)
{
    volatile unsigned char *b = p;
    for (size_t i = 0; i < size; i += 4096u)
        b[i] = (unsigned char)i;
}

/* xorshift64: the cells' order, the same in every run. */
static inline uint64_t mra_rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

/* A cell's clocks (the calibration's cells and the probe): a first round
 * that warms up (not counted), then rounds until cell_ns of wall time have
 * passed; the result is this thread's CPU time per operation of the
 * counted rounds -- what the code costs, whatever else runs on the
 * machine; the wall clock only says when it has run long enough. */
struct mra_cell {
    uint64_t t0, c0, ops;
    int warm;
};

static inline void mra_cell_init(struct mra_cell *c)
{
    c->t0 = c->c0 = c->ops = 0;
    c->warm = 1;
}

/* After a round of n operations: whether to run another. */
static inline int mra_cell_round(struct mra_cell *c, uint64_t n, uint64_t cell_ns)
{
    if (c->warm) {
        c->warm = 0;
        c->t0 = mra_mono_ns();
        c->c0 = mra_cpu_ns();
        return 1;
    }
    c->ops += n;
    return mra_mono_ns() - c->t0 < cell_ns;
}

static inline double mra_cell_result(const struct mra_cell *c)
{
    return (double)(mra_cpu_ns() - c->c0) / (double)c->ops;
}

/* ns of CPU time a pair: n objects of size (n a power of two) made, then
 * rounds of 64 pairs (a random one freed, made again, written) for a cell
 * of cell_ns, then all freed (counted in).  v holds n pointers.  0 when an
 * allocation failed. */
static inline double mra_random_pairs(void *(*alloc)(size_t), void (*release)(void *), size_t size, void **v,
                                      size_t n, uint64_t cell_ns)
{
    uint64_t s = 0x9e3779b97f4a7c15ull;
    size_t made = 0;
    while (made < n && (v[made] = alloc(size)) != NULL)
        mra_touch(v[made++], size);
    int ok = made == n;
    struct mra_cell c;
    mra_cell_init(&c);
    do {
        for (int r = 0; r < 64 && ok; r++) {
            size_t i = (size_t)mra_rng_next(&s) & (n - 1);
            release(v[i]);
            if ((v[i] = alloc(size)) == NULL) { /* the last one fills the hole */
                v[i] = v[--made];
                ok = 0;
            } else {
                mra_touch(v[i], size);
            }
        }
    } while (ok && mra_cell_round(&c, 64, cell_ns));
    for (size_t i = 0; i < made; i++)
        release(v[i]);
    return ok ? mra_cell_result(&c) : 0;
}

/* The probe: the least of MRA_PROBE_RUNS runs at MRA_PROBE_SIZE bytes
 * among MRA_PROBE_LIVE live (v holds that many pointers); 0 if none ran. */
static inline double mra_probe_pairs(void *(*alloc)(size_t), void (*release)(void *), void **v)
{
    double best = 0;
    for (int i = 0; i < MRA_PROBE_RUNS; i++) {
        double r = mra_random_pairs(alloc, release, MRA_PROBE_SIZE, v, MRA_PROBE_LIVE, MRA_PROBE_CELL_NS);
        if (r > 0 && (best == 0 || r < best))
            best = r;
    }
    return best;
}

#endif
