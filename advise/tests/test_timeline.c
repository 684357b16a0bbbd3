/* SPDX-License-Identifier: MIT */
/* advise/tests/test_timeline.c -- the recorder's timeline
 * (advise/record/timeline.c, compiled into this test) fed by hand: the
 * test plays record.c, offering points at times it chooses and noting the
 * peak through hot.h's tl_peak_note as every allocation does, then reads
 * the section mrr_tl_write writes.  Asserts:
 *   - however many points are offered, the section holds at most
 *     MRA_TIMELINE_MAX, and of a dense run at least half the buffer:
 *     the interval doubled and every other point dropped, not the tail;
 *   - the kept points are spread evenly: one per interval, each the first
 *     offer in its slot;
 *   - the series starts at 0, ends at the figures given for the exit,
 *     never goes back in time or allocations (a tick below the last
 *     point's, another thread's batch, is raised to it);
 *   - the peak, which no sample saw, is in it exactly, at its allocation.
 * The clock is CLOCK_MONOTONIC (no rdtsc): the times are the test's own
 * offsets from the start, so nothing here depends on the machine's speed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "hot.h"

/* what timeline.c and tl_peak_note read of the recorder's state (state.c
 * and clock.c define it in the recorder) */
bool g_use_tsc;
uint64_t g_tsc_mult = UINT64_C(1) << 32;
uint64_t g_start_ns;
_Atomic int g_multi;
_Atomic uint64_t g_live_bytes, g_live_objects;
struct mrr_tl_peak g_tl_peak;

/* the section as written */
static struct {
    unsigned char buf[sizeof(struct mra_timeline_header) + (MRA_TIMELINE_MAX + 8) * sizeof(struct mra_timeline_point)];
    size_t len;
} out;

static void put(void *ctx, const void *p, size_t n)
{
    (void)ctx;
    assert_true(out.len + n <= sizeof out.buf);
    memcpy(out.buf + out.len, p, n);
    out.len += n;
}

static const struct mra_timeline_header *written(void)
{
    return (const struct mra_timeline_header *)(const void *)out.buf;
}

static const struct mra_timeline_point *point(uint32_t i)
{
    return (const struct mra_timeline_point *)(const void *)(out.buf + sizeof(struct mra_timeline_header)) + i;
}

/* The timeline started afresh; the start (ns, CLOCK_MONOTONIC) returned:
 * the test's times are offsets from it. */
static uint64_t start(void)
{
    memset(&g_tl_peak, 0, sizeof g_tl_peak);
    atomic_store(&g_live_bytes, 0);
    atomic_store(&g_live_objects, 0);
    g_start_ns = mra_mono_ns();
    mrr_tl_start();
    out.len = 0;
    /* timeline.c took its start just now: within a few us of g_start_ns */
    return mra_mono_ns();
}

/* One "allocation" at time t: the live figures set, the peak noted; a
 * point offered when `offer`. */
static void event(struct tstate *ts, uint64_t t, uint64_t tick, uint64_t bytes, uint64_t objects, bool offer)
{
    ts->last_tick = tick;
    atomic_store(&g_live_bytes, bytes);
    atomic_store(&g_live_objects, objects);
    tl_peak_note(tick, t);
    if (offer)
        mrr_tl_sample(ts, t);
}

/* The section written and checked for what holds of every one: bounded,
 * from 0 to the exit's figures, never going back; the number of points. */
static uint32_t write_and_check(uint64_t end_ns, uint64_t live, uint64_t objects, uint64_t ticks)
{
    mrr_tl_write(put, NULL, end_ns, atomic_load(&g_tl_peak.bytes), live, objects, ticks);
    const struct mra_timeline_header *h = written();
    uint32_t n = h->npoints;
    assert_int_equal(out.len, sizeof *h + n * sizeof(struct mra_timeline_point));
    assert_true(n >= 2 && n <= MRA_TIMELINE_MAX);
    assert_true(h->peak < n);
    const struct mra_timeline_point *first = point(0), *last = point(n - 1);
    assert_true(first->time_ns == 0 && first->allocations == 0 && first->live_bytes == 0 && first->live_objects == 0);
    assert_int_equal(last->time_ns, end_ns - g_start_ns);
    assert_int_equal(last->live_bytes, live);
    assert_int_equal(last->live_objects, objects);
    assert_int_equal(last->allocations, ticks);
    for (uint32_t i = 1; i < n; i++) {
        assert_true(point(i)->time_ns >= point(i - 1)->time_ns);
        assert_true(point(i)->allocations >= point(i - 1)->allocations);
    }
    return n;
}

/* Two million offers over a second, one every 500 ns, and a peak between
 * them that no offer sees. */
static void test_long_run(void **state)
{
    (void)state;
    struct tstate ts;
    memset(&ts, 0, sizeof ts);
    uint64_t t0 = start();
    const uint64_t N = 2000000, STEP = 500, PEAK_AT = 1234567, PEAK = UINT64_C(1) << 40;
    for (uint64_t i = 0; i < N; i++) {
        uint64_t bytes = 1000 + (i % 4096) * 64; /* a saw tooth under 300,000 */
        event(&ts, t0 + i * STEP, i + 1, i == PEAK_AT ? PEAK : bytes, i % 4096 + 1, i != PEAK_AT);
    }
    uint64_t end = t0 + N * STEP;
    uint32_t n = write_and_check(end, 4096, 1, N);
    const struct mra_timeline_header *h = written();
    fprintf(stderr, "  %llu offers: %u points, interval %llu ns, the peak at point %u\n", (unsigned long long)N, n,
            (unsigned long long)h->interval_ns, h->peak);
    /* decimated, not cut: the points reach the end of the run, half the
     * buffer at least */
    assert_true(n >= MRA_TIMELINE_MAX / 2);
    assert_true(point(n - 2)->time_ns + 2 * h->interval_ns + 2 * STEP >= end - g_start_ns);
    /* the peak exactly, at its allocation, between its neighbours */
    const struct mra_timeline_point *pk = point(h->peak);
    assert_int_equal(pk->live_bytes, PEAK);
    assert_int_equal(pk->allocations, PEAK_AT + 1);
    assert_int_equal(pk->live_objects, PEAK_AT % 4096 + 1);
    assert_true(point(h->peak - 1)->allocations <= PEAK_AT + 1 && point(h->peak + 1)->allocations > PEAK_AT + 1);
    for (uint32_t i = 0; i < n; i++)
        assert_true(i == h->peak || point(i)->live_bytes < PEAK);
    /* evenly spread: consecutive sampled points an interval apart, to
     * within the offers' step (each is the first offer of its slot; the
     * first one is wherever the first offer fell in slot 0) */
    for (uint32_t i = 3; i + 1 < n; i++) {
        if (i == h->peak || i - 1 == h->peak)
            continue;
        uint64_t gap = point(i)->time_ns - point(i - 1)->time_ns;
        if (gap + STEP < h->interval_ns || gap > h->interval_ns + STEP)
            fprintf(stderr, "  points %u and %u: %llu ns apart, the interval %llu\n", i - 1, i,
                    (unsigned long long)gap, (unsigned long long)h->interval_ns);
        assert_true(gap + STEP >= h->interval_ns && gap <= h->interval_ns + STEP);
    }
}

/* Offers far apart (an idle program) and ticks out of order (threads'
 * batches): every offer in its own slot is kept, none goes back. */
static void test_sparse_and_threads(void **state)
{
    (void)state;
    struct tstate ts;
    memset(&ts, 0, sizeof ts);
    uint64_t t0 = start();
    static const uint64_t tick[] = { 64, 10, 200, 130, 300 };
    for (unsigned i = 0; i < 5; i++)
        event(&ts, t0 + (i + 1) * 1000000u, tick[i], 100 * (i + 1), i + 1, true);
    /* a second offer in the last one's slot (at its very time): refused,
     * but its figures are the peak */
    event(&ts, t0 + 5 * 1000000u, 301, 777, 9, true);
    uint32_t n = write_and_check(t0 + 10000000u, 0, 0, 400);
    /* the start, the 5 points, the peak (after them: its tick is the
     * highest), the end */
    assert_int_equal(n, 1 + 5 + 1 + 1);
    static const uint64_t want_tick[] = { 64, 64, 200, 200, 300 };
    const struct mra_timeline_header *h = written();
    uint32_t k = 1;
    for (unsigned i = 0; i < 5; i++, k++) {
        if (k == h->peak)
            k++;
        assert_int_equal(point(k)->allocations, want_tick[i]);
        assert_int_equal(point(k)->live_bytes, 100 * (i + 1));
    }
    assert_int_equal(point(h->peak)->live_bytes, 777);
    assert_int_equal(point(h->peak)->allocations, 301);
}

/* Nothing recorded: the start and the end, the peak the start. */
static void test_empty(void **state)
{
    (void)state;
    uint64_t t0 = start();
    assert_int_equal(write_and_check(t0 + 5000, 0, 0, 0), 2);
    assert_int_equal(written()->peak, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_long_run),
        cmocka_unit_test(test_sparse_and_threads),
        cmocka_unit_test(test_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
