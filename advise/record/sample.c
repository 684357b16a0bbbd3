/* SPDX-License-Identifier: MIT */
/* advise/record/sample.c -- sampled recording (MEMRES_ADVISE_SAMPLE=BYTES,
 * memres-advise --sample BYTES).  Each thread's allocations are a line of
 * bytes on which points fall at random, one per BYTES on average (a
 * Poisson process: the gaps are drawn from an exponential distribution,
 * as tcmalloc's heap profiler samples); an allocation that a point falls
 * in is recorded whole -- its stack found, its site's figures counted --
 * and stands for 1 / (1 - exp(-size / BYTES)) allocations of its size,
 * the inverse of the chance that it was picked, so that every figure of
 * a site is an unbiased estimate.  That weight is rounded to an integer
 * at random (its expected value is the weight), kept in the object's
 * header, and its free and reallocs count with the same.  The other
 * allocations get a header of two words and count in the program's totals
 * alone (record.c). */
#include <math.h>

#include "record.h"

/* A number in (0, 1], from the thread's own xorshift generator. */
static double unit(struct tstate *ts)
{
    uint64_t x = ts->alloc_rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    ts->alloc_rng = x;
    return (double)((x * UINT64_C(0x2545F4914F6CDD1D)) >> 11) * 0x1p-53 + 0x1p-53;
}

/* Exact windows: stack-like and freed-together follow the order of frees,
 * which the sample alone shows only where the recorded objects are dense
 * (record.c: ring_free, mrr_burst_end).  So each thread records every
 * allocation in one window of SAMPLE_WIN per SAMPLE_PERIOD allocations
 * (the sampling's points still decide the weights: an allocation in a
 * window that no point falls in weighs 0, counts in no figure, and is
 * seen by the order alone); a free of an object born in the window
 * while it lasts, and a burst whose frees were all of recorded objects
 * and whose oldest was born in it, are judged as recording every
 * allocation would judge them. */
void mrr_window_turn(struct tstate *ts)
{
    if (ts->in_win) {
        ts->in_win = false;
        ts->win_left = SAMPLE_PERIOD - SAMPLE_WIN;
    } else {
        ts->in_win = true;
        ts->win_left = SAMPLE_WIN;
        ts->win_tick = ts->last_tick + 1; /* the thread's ticks only grow */
    }
}

uint64_t mrr_sample_gap(struct tstate *ts)
{
    double g = -log(unit(ts)) * g_sample_bytes;
    return g < 1.0 ? 1u : g > 0x1p62 ? UINT64_C(1) << 62 : (uint64_t)g;
}

uint64_t mrr_sample_weight(struct tstate *ts, uint64_t size)
{
    double w = -1.0 / expm1(-(double)size / g_sample_bytes);
    uint64_t k = (uint64_t)w;
    if (unit(ts) <= w - (double)k)
        k++;
    return k < 1u ? 1u : k > WEIGHT_MAX ? WEIGHT_MAX : k;
}
