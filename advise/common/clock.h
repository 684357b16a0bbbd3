/* SPDX-License-Identifier: MIT */
/* advise/common/clock.h -- the advisor's one clock helper, for the
 * recorder and the analysis alike (plain C and libc: it compiles into the
 * preloaded recorder too): a POSIX clock read in ns.  The recorder reads
 * CLOCK_MONOTONIC (the profile's start and end, its rdtsc calibration, its
 * time without an invariant TSC); the analysis CLOCK_MONOTONIC (the
 * progress line, how long a calibration cell has run) and
 * CLOCK_THREAD_CPUTIME_ID (what a calibration cell or a replay costs,
 * whatever else runs on the machine). */
#ifndef MEMRES_ADVISE_CLOCK_H
#define MEMRES_ADVISE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t mra_clock_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The time since some fixed point, never going back. */
static inline uint64_t mra_mono_ns(void)
{
    return mra_clock_ns(CLOCK_MONOTONIC);
}

/* This thread's CPU time: what the code it runs costs, whatever else runs
 * on the machine (page faults included). */
static inline uint64_t mra_cpu_ns(void)
{
    return mra_clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

/* The mean of n intervals of an empty timed section (clock units), those
 * above 4x the least left out: the clock steps by 26 cycles on this
 * project's virtual machines, so the least is one step or two and no
 * figure by itself, and an interrupt in one interval would weigh on a
 * plain mean.  0 for n = 0. */
static inline double mra_empty_interval(const uint32_t *v, unsigned n)
{
    uint64_t least = UINT64_MAX, sum = 0, k = 0;
    for (unsigned i = 0; i < n; i++)
        if (v[i] < least)
            least = v[i];
    for (unsigned i = 0; i < n; i++)
        if (v[i] <= 4 * least) {
            sum += v[i];
            k++;
        }
    return k ? (double)sum / (double)k : 0;
}

#endif
