/* SPDX-License-Identifier: MIT */
/* advise/record/clock.c -- the recorder's time at start-up: rdtsc
 * calibrated against CLOCK_MONOTONIC (0.5 ms) where the TSC is invariant,
 * and the cost of an empty timed interval, taken off each timed sample.
 * Reading the clocks is record.h's (now_time, fenced_time, thread_time);
 * the allocation clock is threads' (next_tick). */
#include "record.h"

void mrr_clock_calibrate(void)
{
#if defined(__x86_64__)
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
        return;
    __get_cpuid(0x80000007u, &a, &b, &c, &d);
    if (!(d & (1u << 8)))
        return; /* no invariant TSC: CLOCK_MONOTONIC */
    uint64_t n0 = mra_mono_ns(), c0 = (uint64_t)__rdtsc(), n1, c1;
    do {
        n1 = mra_mono_ns();
        c1 = (uint64_t)__rdtsc();
    } while (n1 - n0 < 500000u);
    if (c1 <= c0)
        return;
    double mult = (double)(n1 - n0) / (double)(c1 - c0) * 4294967296.0;
    if (mult < 1.0 || mult > 1e12)
        return;
    g_tsc_mult = (uint64_t)mult;
    g_use_tsc = true;
#endif
}

/* What an interval timed with nothing in it reads on average (the clock
 * steps by 26 cycles on this project's virtual machines, so one sample is
 * coarse; their mean is not: mra_empty_interval), taken off each timed
 * sample; the least plain one for the recorder's own parts. */
void mrr_timer_calibrate(void)
{
    enum { N = 2000 };
    static uint32_t ff[N], pf[N], fp[N];
    uint64_t least = UINT64_MAX;
    for (int i = 0; i < N; i++) {
        uint64_t a = fenced_time(), b = fenced_time();
        ff[i] = (uint32_t)(b - a);
        a = now_time();
        b = now_time();
        if (b - a < least)
            least = b - a;
        a = now_time();
        b = fenced_time();
        pf[i] = (uint32_t)(b - a);
        a = fenced_time();
        b = now_time();
        fp[i] = (uint32_t)(b - a);
    }
    g_fenced_cost = (int64_t)mra_empty_interval(ff, N);
    g_timer_cost = (int64_t)least;
    g_plain_fenced_cost = (int64_t)mra_empty_interval(pf, N);
    g_fenced_plain_cost = (int64_t)mra_empty_interval(fp, N);
    /* in clock units: 20 us, and 1 us per page of the request (mmap,
     * munmap, a trim) */
    uint64_t us = g_use_tsc ? (UINT64_C(1000) << 32) / (g_tsc_mult ? g_tsc_mult : 1) : 1000;
    g_clip = (int64_t)(20 * us);
    g_clip_page = (int64_t)us;
    g_slow = (int64_t)us;
}
