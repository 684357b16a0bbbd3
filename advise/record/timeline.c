/* SPDX-License-Identifier: MIT */
/* advise/record/timeline.c -- the program's live bytes over the run, for
 * the profile's timeline section (common/format.h): a bounded series of
 * sampled points and, apart from it, the exact peak.
 *
 * Sampling costs the allocation path nothing of its own: a point is
 * offered at each timed sample of record.c (about one hook in
 * SAMPLE_EVERY per thread, at a random gap), after the timed part, so that
 * the recorder's sampled time does not count it.  The run is cut into
 * slots of `interval` clock units from the start; the first offer in a
 * slot becomes a point (the program's live bytes and objects then, the
 * thread's allocation tick, the time), the others are refused by one
 * compare against tl_next, read without lock.  When the buffer is full,
 * the interval doubles and of the points in each new slot only the first
 * stays: every other one, when each slot had one.  So whatever the run's
 * length the series holds at most TL_CAP points spread evenly over it
 * (TL_CAP / 2 at least where offers come in every slot), and its memory
 * is fixed (TL_CAP points, here).
 *
 * The peak would be lost to the decimation (and fall between samples), so
 * it is kept apart: the allocation (or growing realloc) that takes the
 * program's live bytes above the peak so far stores its tick and time in
 * g_tl_peak (hot.h's tl_peak_note, called from the branch record.c's
 * live_add takes when the program's peak rises: nothing while the program
 * does not grow, a few stores while it does).  With one recording thread the
 * stores are plain; with several, a compare-and-swap on the bytes elects
 * the thread that stores the rest, so a point written while another
 * thread raises the peak may mix the two moments' tick and time (they are
 * events apart).  The profile writes the header's peak_live_bytes as its
 * bytes, which the shared counters make exact.
 *
 * Invariants: pts[] is in order of time, strictly, and of ticks (a tick
 * below the last point's, another thread's batch, is raised to it);
 * slot(pts[i]) < slot(pts[i + 1]) for the current interval; tl_next ==
 * start + (slot(pts[n - 1]) + 1) * interval (start while n == 0).
 * Lock: tl_mu, a leaf, taken by trylock on the sampling path (a busy lock
 * means another thread is taking this slot's point) and by the writer at
 * exit. */
#include "record.h"

/* sampled points kept: the written series adds the start, the end and
 * the peak */
#define TL_CAP (MRA_TIMELINE_MAX - 3u)
/* the first interval, in ns: 1,000 slots make 10 ms, and a long run
 * doubles it a dozen times or two */
#define TL_FIRST_NS 10000u

struct tl_pt {
    uint64_t time;               /* now_time() units */
    uint64_t tick, bytes, objects;
};

static pthread_mutex_t tl_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t tl_start, tl_interval; /* clock units */
static uint32_t tl_n;
static struct tl_pt tl_pts[TL_CAP];

static _Atomic uint64_t tl_next = UINT64_MAX; /* nothing is taken before mrr_tl_start */

void mrr_tl_start(void)
{
    tl_n = 0;
    tl_start = now_time();
    tl_interval = g_use_tsc ? ((uint64_t)TL_FIRST_NS << 32) / (g_tsc_mult ? g_tsc_mult : 1) : TL_FIRST_NS;
    if (tl_interval == 0)
        tl_interval = 1;
    atomic_store_explicit(&tl_next, tl_start, memory_order_relaxed);
}

static uint64_t slot_of(uint64_t t)
{
    return (t - tl_start) / tl_interval;
}

/* The interval doubled, the first point of each new slot kept. */
static void halve(void)
{
    tl_interval *= 2;
    uint32_t k = 0;
    for (uint32_t i = 0; i < tl_n; i++)
        if (k == 0 || slot_of(tl_pts[i].time) != slot_of(tl_pts[k - 1].time))
            tl_pts[k++] = tl_pts[i];
    tl_n = k;
}

NOINLINE void mrr_tl_sample(const struct tstate *ts, uint64_t t)
{
    if (LIKELY(t < atomic_load_explicit(&tl_next, memory_order_relaxed)))
        return;
    if (pthread_mutex_trylock(&tl_mu) != 0)
        return;
    if (t >= atomic_load_explicit(&tl_next, memory_order_relaxed)) {
        struct tl_pt p = { t, ts->last_tick, atomic_load_explicit(&g_live_bytes, memory_order_relaxed),
                           atomic_load_explicit(&g_live_objects, memory_order_relaxed) };
        if (tl_n != 0 && p.tick < tl_pts[tl_n - 1].tick)
            p.tick = tl_pts[tl_n - 1].tick;
        while (tl_n == TL_CAP)
            halve();
        if (tl_n == 0 || slot_of(t) != slot_of(tl_pts[tl_n - 1].time))
            tl_pts[tl_n++] = p;
        atomic_store_explicit(&tl_next, tl_start + (slot_of(t) + 1) * tl_interval, memory_order_relaxed);
    }
    pthread_mutex_unlock(&tl_mu);
}

NOINLINE void mrr_tl_peak_multi(uint64_t bytes, uint64_t tick, uint64_t time)
{
    uint64_t p = atomic_load_explicit(&g_tl_peak.bytes, memory_order_relaxed);
    do {
        if (bytes <= p)
            return;
    } while (!atomic_compare_exchange_weak_explicit(&g_tl_peak.bytes, &p, bytes, memory_order_relaxed,
                                                    memory_order_relaxed));
    atomic_store_explicit(&g_tl_peak.objects, atomic_load_explicit(&g_live_objects, memory_order_relaxed),
                          memory_order_relaxed);
    atomic_store_explicit(&g_tl_peak.tick, tick, memory_order_relaxed);
    atomic_store_explicit(&g_tl_peak.time, time, memory_order_relaxed);
}

/* ---- the section, written at exit (or before an exec) ---- */

static uint64_t to_ns(uint64_t t)
{
    uint64_t d = t > tl_start ? t - tl_start : 0;
    return g_use_tsc ? time_to_ns(d) : d;
}

/* Writes p through put, its time and allocations raised to the last
 * point's and its time capped at the end's: the two clocks (rdtsc scaled,
 * CLOCK_MONOTONIC) and the threads' tick batches must not make the series
 * go back. */
static void put_point(void (*put)(void *, const void *, size_t), void *ctx, struct mra_timeline_point p,
                      struct mra_timeline_point *last, uint64_t end)
{
    if (p.time_ns > end)
        p.time_ns = end;
    if (p.time_ns < last->time_ns)
        p.time_ns = last->time_ns;
    if (p.allocations < last->allocations)
        p.allocations = last->allocations;
    put(ctx, &p, sizeof p);
    *last = p;
}

void mrr_tl_write(void (*put)(void *, const void *, size_t), void *ctx, uint64_t end_ns, uint64_t peak_bytes,
                  uint64_t live_bytes, uint64_t live_objects, uint64_t ticks)
{
    pthread_mutex_lock(&tl_mu);
    struct mra_timeline_point pk = {
        .time_ns = to_ns(atomic_load_explicit(&g_tl_peak.time, memory_order_relaxed)),
        .allocations = atomic_load_explicit(&g_tl_peak.tick, memory_order_relaxed),
        .live_bytes = peak_bytes,
        .live_objects = atomic_load_explicit(&g_tl_peak.objects, memory_order_relaxed),
    };
    bool has_peak = peak_bytes != 0;
    /* the peak goes before the first point after its allocation (a
     * point of the same tick was sampled at or after it) */
    uint32_t at = 0;
    while (has_peak && at < tl_n && tl_pts[at].tick < pk.allocations)
        at++;
    /* its time is the thread's interpolated clock: not after that point */
    if (has_peak && at < tl_n && pk.time_ns > to_ns(tl_pts[at].time))
        pk.time_ns = to_ns(tl_pts[at].time);
    uint64_t end = end_ns > g_start_ns ? end_ns - g_start_ns : 0;
    struct mra_timeline_header h = { .npoints = tl_n + 2u + has_peak, .peak = has_peak ? at + 1u : 0,
                                     .interval_ns = to_ns(tl_start + tl_interval) };
    put(ctx, &h, sizeof h);
    struct mra_timeline_point last = { 0 };
    put_point(put, ctx, last, &last, end);
    for (uint32_t i = 0; i <= tl_n; i++) {
        if (has_peak && i == at)
            put_point(put, ctx, pk, &last, end);
        if (i == tl_n)
            break;
        const struct tl_pt *q = &tl_pts[i];
        put_point(put, ctx,
                  (struct mra_timeline_point){ .time_ns = to_ns(q->time), .allocations = q->tick,
                                               .live_bytes = q->bytes, .live_objects = q->objects },
                  &last, end);
    }
    put_point(put, ctx,
              (struct mra_timeline_point){ .time_ns = end, .allocations = ticks, .live_bytes = live_bytes,
                                           .live_objects = live_objects },
              &last, end);
    pthread_mutex_unlock(&tl_mu);
}
