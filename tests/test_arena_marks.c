/* SPDX-License-Identifier: MIT */
/* tests/test_arena_marks.c -- the arena's marks, cleanups, reset and
 * release (memres/arena.h).
 *
 * Save and rewind: a fixed sequence of allocations gets the same addresses
 * after every rewind, with no upstream call (small blocks, dedicated
 * blocks, a buffer and then the upstream); nested marks give back exactly
 * the bytes in use at each mark, and the mark itself.  Cleanups
 * (mr_arena_defer) run last in, first out at rewind, reset, release and
 * destroy, each once, before the memory they guard is freed; a defer that
 * fails registers nothing.  Reset makes no upstream call and reuses the
 * blocks in order; release gives every block back but the header, and
 * growth restarts from block_size.
 *
 * Stale and foreign marks are regression tests of an outside report.
 * Misuse is tested with the recording violation handler of tests/support.h
 * instead of death tests: the handler returns, and the arena must then take
 * its safe way out (ignore the rewind).  That safe way out is taken and
 * asserted in every build; the report itself comes only from debug builds
 * (MR_DEBUG >= 1: mrt_assert_reported).
 *
 * Helpers: tests/arena_helpers.h.
 */
#include <errno.h>
#include <stdalign.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "support.h"
#include "arena_helpers.h"

/* ======================================================================
 * marks and rewind
 * ====================================================================== */

/* A fixed sequence of allocations; records the addresses. */
static void run_sequence(mr_arena *a, void **out, size_t n, bool big)
{
    for (size_t i = 0; i < n; i++) {
        void *p;
        if (big && i % 97 == 50)
            p = mr_arena_alloc(a, 100000 + i);      /* its own block */
        else if (big && i % 211 == 100)
            p = mr_arena_alloc_aligned(a, 5000, 8192);
        else if (big && i == n - 7)
            p = mr_arena_alloc(a, 3 * MiB);         /* beyond max_block_size */
        else if (i % 13 == 0)
            p = mr_arena_alloc_aligned(a, 1 + i % 300, 64);
        else /* size 1..500: a size-0 pointer's address is not promised */
            p = mr_arena_alloc(a, 1 + (i * 37) % 500);
        assert_non_null(p);
        out[i] = p;
    }
}

static void check_same_addresses(mrt_upstream *u, bool big)
{
    mr_arena *a = arena_on(&u->base, 4096, 65536, 0);
    unsigned char *pre = mr_arena_alloc(a, 100);
    fill(pre, 100, 12);
    enum { N = 600 };
    static void *first[N], *again[N];
    mr_arena_mark m = mr_arena_save(a);
    run_sequence(a, first, N, big);
    mr_stats st1 = stats(a);
    for (int cycle = 0; cycle < 4; cycle++) {
        mr_arena_rewind(a, m);
        assert_true(mr_arena_check(a));
        assert_int_equal(verify(pre, 100, 12), SIZE_MAX);
        size_t calls = u->calls;
        run_sequence(a, again, N, big);
        assert_int_equal(u->calls, calls); /* no upstream call */
        for (size_t i = 0; i < N; i++)
            assert_ptr_equal(again[i], first[i]);
        mr_stats st = stats(a);
        assert_int_equal(st.held, st1.held);
        assert_int_equal(st.in_use, st1.in_use);
        assert_agrees(a, u);
    }
    mr_arena_destroy(a);
}

static void test_rewind_same_addresses(void **state) { check_same_addresses(*state, false); }

static void test_rewind_same_addresses_big_blocks(void **state) { check_same_addresses(*state, true); }

static void test_rewind_buffer_then_upstream(void **state)
{
    mrt_upstream *u = *state;
    alignas(max_align_t) unsigned char buf[1024];
    mr_arena *a = arena_buf(&u->base, buf, sizeof buf);
    enum { N = 200 };
    void *first[N], *again[N];
    mr_arena_mark m = mr_arena_save(a);
    run_sequence(a, first, N, false);
    assert_true(u->allocations > 0);
    mr_arena_rewind(a, m);
    size_t calls = u->calls;
    run_sequence(a, again, N, false);
    assert_int_equal(u->calls, calls);
    for (size_t i = 0; i < N; i++)
        assert_ptr_equal(again[i], first[i]);
    assert_true((unsigned char *)first[0] >= buf && (unsigned char *)first[0] < buf + sizeof buf);
    mr_arena_destroy(a);
}

static void test_nested_marks(void **state)
{
    mrt_upstream *u = *state;
    mr_arena *a = arena_on(&u->base, 4096, 0, 0);
    mr_arena_mark m0 = mr_arena_save(a);
    size_t use0 = stats(a).in_use;
    unsigned char *a1 = mr_arena_alloc(a, 10);
    fill(a1, 10, 1);
    mr_arena_mark m1 = mr_arena_save(a);
    size_t use1 = stats(a).in_use;
    unsigned char *a2 = mr_arena_alloc(a, 5000); /* a new block */
    fill(a2, 5000, 2);
    mr_arena_mark m2 = mr_arena_save(a);
    size_t use2 = stats(a).in_use;
    unsigned char *a3 = mr_arena_alloc(a, 20);
    mr_arena_mark m3 = mr_arena_save(a);
    unsigned char *a4 = mr_arena_alloc(a, 200000); /* its own block */
    (void)a4;

    mr_arena_rewind(a, m3);
    assert_true(mr_arena_check(a));
    mr_arena_rewind(a, m2);
    assert_true(mr_arena_check(a));
    assert_int_equal(stats(a).in_use, use2);
    assert_ptr_equal(probe_n(a, 20), a3);
    assert_int_equal(verify(a1, 10, 1), SIZE_MAX);
    assert_int_equal(verify(a2, 5000, 2), SIZE_MAX);
    /* the same mark again */
    mr_arena_rewind(a, m2);
    mr_arena_rewind(a, m2);
    assert_int_equal(stats(a).in_use, use2);
    assert_mark_eq(mr_arena_save(a), m2);
    mr_arena_rewind(a, m1);
    assert_int_equal(stats(a).in_use, use1);
    assert_mark_eq(mr_arena_save(a), m1);
    assert_ptr_equal(probe_n(a, 5000), a2);
    assert_int_equal(verify(a1, 10, 1), SIZE_MAX);
    mr_arena_rewind(a, m0);
    assert_int_equal(stats(a).in_use, use0);
    assert_ptr_equal(probe_n(a, 10), a1);
    /* a rewind to where we are changes nothing */
    mr_arena_mark here = mr_arena_save(a);
    mr_stats st = stats(a);
    mr_arena_rewind(a, here);
    mr_stats st2 = stats(a);
    mrt_assert_stats_equal(&st, &st2);
    assert_true(mr_arena_check(a));
    mr_arena_destroy(a);
}

/* ======================================================================
 * cleanups
 * ====================================================================== */

static void test_cleanups_lifo(void **state)
{
    mrt_upstream *u = *state;
    cleanup_n = 0;

    /* reset */
    mr_arena *a = arena_on(&u->base, 4096, 0, 0);
    for (intptr_t i = 1; i <= 3; i++) {
        assert_non_null(mr_arena_alloc(a, 1000));
        assert_int_equal(mr_arena_defer(a, log_cleanup, (void *)i), 0);
    }
    assert_int_equal(cleanup_n, 0);
    mr_arena_reset(a);
    assert_log((const intptr_t[]){3, 2, 1}, 3);
    mr_arena_reset(a); /* ran once only */
    assert_log(NULL, 0);
    /* release */
    for (intptr_t i = 4; i <= 5; i++)
        assert_int_equal(mr_arena_defer(a, log_cleanup, (void *)i), 0);
    mr_arena_release(a);
    assert_log((const intptr_t[]){5, 4}, 2);
    mr_arena_release(a);
    assert_log(NULL, 0);
    /* destroy, with many cleanups across blocks */
    enum { M = 1000 };
    for (intptr_t i = 0; i < M; i++) {
        assert_non_null(mr_arena_alloc(a, (size_t)i % 64));
        assert_int_equal(mr_arena_defer(a, log_cleanup, (void *)i), 0);
    }
    assert_true(mr_arena_check(a));
    mr_arena_destroy(a);
    assert_int_equal(cleanup_n, M);
    for (size_t i = 0; i < M; i++)
        assert_int_equal(cleanup_log[i], M - 1 - i);
    cleanup_n = 0;
}

static void test_cleanups_rewind(void **state)
{
    mrt_upstream *u = *state;
    cleanup_n = 0;
    mr_arena *a = arena_on(&u->base, 4096, 0, 0);
    assert_int_equal(mr_arena_defer(a, log_cleanup, (void *)1), 0);
    mr_arena_mark m = mr_arena_save(a);
    assert_int_equal(mr_arena_defer(a, log_cleanup, (void *)2), 0);
    assert_non_null(mr_arena_alloc(a, 100000));
    assert_int_equal(mr_arena_defer(a, log_cleanup, (void *)3), 0);
    mr_arena_rewind(a, m);
    assert_log((const intptr_t[]){3, 2}, 2);
    mr_arena_rewind(a, m); /* nothing left after m */
    assert_log(NULL, 0);

    /* nested */
    mr_arena_mark m1 = mr_arena_save(a);
    assert_int_equal(mr_arena_defer(a, log_cleanup, (void *)10), 0);
    mr_arena_mark m2 = mr_arena_save(a);
    assert_int_equal(mr_arena_defer(a, log_cleanup, (void *)20), 0);
    assert_int_equal(mr_arena_defer(a, log_cleanup, (void *)21), 0);
    mr_arena_rewind(a, m2);
    assert_log((const intptr_t[]){21, 20}, 2);
    assert_int_equal(mr_arena_defer(a, log_cleanup, (void *)22), 0);
    mr_arena_rewind(a, m1);
    assert_log((const intptr_t[]){22, 10}, 2);
    assert_int_equal(mr_arena_defer(a, log_cleanup, (void *)4), 0);
    mr_arena_reset(a);
    assert_log((const intptr_t[]){4, 1}, 2);
    mr_arena_destroy(a);
    assert_log(NULL, 0);
}

/* Cleanups run before the memory is freed: they may read what they guard. */
static int cleanup_seen[8];
static size_t cleanup_seen_n;

static void read_guarded(void *arg)
{
    const int *v = arg;
    if (cleanup_seen_n < ARRAY_LEN(cleanup_seen))
        cleanup_seen[cleanup_seen_n++] = *v;
}

static void test_cleanups_run_before_free(void **state)
{
    mrt_upstream *u = *state;
    mr_arena *a = arena_on(&u->base, 4096, 0, 0);
    cleanup_seen_n = 0;
    mr_arena_mark m = mr_arena_save(a);
    int *x = mr_arena_alloc(a, sizeof *x);
    *x = 41;
    assert_int_equal(mr_arena_defer(a, read_guarded, x), 0);
    int *y = mr_arena_alloc(a, 200000); /* in a big block */
    *y = 42;
    assert_int_equal(mr_arena_defer(a, read_guarded, y), 0);
    mr_arena_rewind(a, m);
    assert_int_equal(cleanup_seen_n, 2);
    assert_int_equal(cleanup_seen[0], 42);
    assert_int_equal(cleanup_seen[1], 41);
    x = mr_arena_alloc(a, sizeof *x);
    *x = 43;
    assert_int_equal(mr_arena_defer(a, read_guarded, x), 0);
    mr_arena_reset(a);
    x = mr_arena_alloc(a, sizeof *x);
    *x = 44;
    assert_int_equal(mr_arena_defer(a, read_guarded, x), 0);
    mr_arena_release(a);
    x = mr_arena_alloc(a, sizeof *x);
    *x = 45;
    assert_int_equal(mr_arena_defer(a, read_guarded, x), 0);
    mr_arena_destroy(a);
    assert_int_equal(cleanup_seen_n, 5);
    assert_int_equal(cleanup_seen[2], 43);
    assert_int_equal(cleanup_seen[3], 44);
    assert_int_equal(cleanup_seen[4], 45);
}

static void test_defer_failure(void **state)
{
    mrt_upstream *u = *state;
    cleanup_n = 0;
    /* fn NULL */
    mr_arena *a = arena_on(&u->base, 4096, 0, 0);
    snapshot before = snap(a, u);
    errno = 0;
    assert_int_equal(mr_arena_defer(a, NULL, NULL), -1);
    assert_int_equal(errno, EINVAL);
    assert_unchanged(a, u, &before);

    /* an upstream that fails from now on: records fill the current block,
     * then defer fails with ENOMEM and registers nothing */
    assert_non_null(mr_arena_alloc(a, 1));
    u->fail_at = u->calls + 1;
    u->fail_all_after = true;
    intptr_t ok = 0;
    for (;;) {
        before = snap(a, u);
        errno = 0;
        int rc = mr_arena_defer(a, log_cleanup, (void *)ok);
        if (rc != 0) {
            assert_int_equal(rc, -1);
            assert_int_equal(errno, ENOMEM);
            assert_unchanged(a, u, &before);
            break;
        }
        ok++;
        assert_true(ok < 100000);
    }
    /* still usable: the ones that were registered run, LIFO */
    mr_arena_reset(a);
    assert_int_equal(cleanup_n, (size_t)ok);
    for (intptr_t i = 0; i < ok; i++)
        assert_int_equal(cleanup_log[i], ok - 1 - i);
    cleanup_n = 0;
    assert_true(mr_arena_check(a));
    u->fail_at = 0;
    u->fail_all_after = false;
    assert_int_equal(mr_arena_defer(a, log_cleanup, (void *)7), 0);
    mr_arena_destroy(a);
    assert_log((const intptr_t[]){7}, 1);
    mrt_assert_balanced(u);

    /* a full buffer and the null resource */
    alignas(max_align_t) unsigned char buf[1024];
    a = arena_buf(mr_null_resource(), buf, sizeof buf);
    while (mr_arena_alloc(a, A) != NULL) {
    }
    before = snap(a, NULL);
    errno = 0;
    assert_int_equal(mr_arena_defer(a, log_cleanup, (void *)1), -1);
    assert_int_equal(errno, ENOMEM);
    assert_unchanged(a, NULL, &before);
    mr_arena_destroy(a);
    assert_log(NULL, 0);
}

/* ======================================================================
 * reset and release
 * ====================================================================== */

static void check_reset_cycles(mrt_upstream *u, bool big)
{
    mr_arena *a = arena_on(&u->base, 4096, 65536, 0);
    enum { N = 2000 };
    static void *first[N], *again[N];
    run_sequence(a, first, N, big);
    assert_true(u->allocations > 4); /* it grew over several blocks */
    mr_stats st1 = stats(a);
    for (int cycle = 0; cycle < 5; cycle++) {
        size_t calls = u->calls, deallocs = u->deallocations;
        mr_arena_reset(a);
        assert_int_equal(u->calls, calls);          /* reset: no upstream call */
        assert_int_equal(u->deallocations, deallocs);
        mr_stats st = stats(a);
        assert_int_equal(st.in_use, 0);
        assert_int_equal(st.held, st1.held);
        assert_true(mr_arena_check(a));
        run_sequence(a, again, N, big);
        assert_int_equal(u->calls, calls);          /* nor the cycle after it */
        assert_int_equal(u->deallocations, deallocs);
        for (size_t i = 0; i < N; i++) {           /* blocks reused in order */
            if (again[i] != first[i])
                fprintf(stderr, "# cycle %d: allocation %zu moved from %p to %p\n", cycle, i, first[i], again[i]);
            assert_ptr_equal(again[i], first[i]);
        }
        assert_agrees(a, u);
    }
    mr_arena_destroy(a);
}

static void test_reset_no_upstream_calls(void **state) { check_reset_cycles(*state, false); }

static void test_reset_no_upstream_calls_big_blocks(void **state) { check_reset_cycles(*state, true); }

static void test_reset_buffer(void **state)
{
    mrt_upstream *u = *state;
    alignas(max_align_t) unsigned char buf[2048];
    mr_arena *a = arena_buf(&u->base, buf, sizeof buf);
    void *first = probe(a);
    assert_true((unsigned char *)first >= buf && (unsigned char *)first < buf + sizeof buf);
    for (int i = 0; i < 100; i++)
        assert_non_null(mr_arena_alloc(a, 100));
    assert_true(u->allocations > 0);
    size_t calls = u->calls;
    mr_arena_reset(a);
    assert_int_equal(u->calls, calls);
    assert_ptr_equal(probe(a), first);
    for (int i = 0; i < 100; i++)
        assert_non_null(mr_arena_alloc(a, 100));
    assert_int_equal(u->calls, calls);
    mr_arena_destroy(a);
}

static void test_release(void **state)
{
    mrt_upstream *u = *state;
    u->log_requests = true;
    mr_arena *a = arena_on(&u->base, 4096, 65536, 0);
    size_t header_bytes = u->bytes;
    assert_int_equal(u->allocations, 1);
    size_t first_req = u->calls;
    void *first = mr_arena_alloc(a, 100);
    assert_non_null(first);
    size_t first_block = req_size(u, first_req);
    for (int i = 0; i < 500; i++)
        assert_non_null(mr_arena_alloc(a, 700));
    assert_non_null(mr_arena_alloc(a, 300000));
    assert_true(u->allocations > 5);
    size_t peak = stats(a).peak_held;

    mr_arena_release(a);
    /* every block went back; only the header is left */
    assert_int_equal(mrt_upstream_live(u), 1);
    assert_int_equal(u->bytes, header_bytes);
    assert_int_equal(u->bad_deallocations, 0);
    mr_stats st = stats(a);
    assert_int_equal(st.in_use, 0);
    assert_int_equal(st.held, header_bytes);
    assert_int_equal(st.peak_held, peak);
    assert_agrees(a, u);
    assert_true(mr_arena_check(a));
    /* usable again; growth restarts from block_size */
    size_t req = u->calls;
    assert_non_null(mr_arena_alloc(a, 100));
    assert_int_equal(u->calls, req + 1);
    assert_int_equal(req_size(u, req), first_block);
    for (int i = 0; i < 500; i++)
        assert_non_null(mr_arena_alloc(a, 700));
    mr_arena_release(a);
    mr_arena_release(a);
    assert_int_equal(u->bytes, header_bytes);
    mr_arena_destroy(a);
    mrt_assert_balanced(u);

    /* a buffer arena: release keeps the buffer as the first block */
    alignas(max_align_t) unsigned char buf[2048];
    a = arena_buf(&u->base, buf, sizeof buf);
    void *bfirst = probe(a);
    for (int i = 0; i < 100; i++)
        assert_non_null(mr_arena_alloc(a, 200));
    assert_true(u->bytes > 0);
    mr_arena_release(a);
    assert_int_equal(u->bytes, 0);
    assert_int_equal(stats(a).held, 0);
    assert_ptr_equal(probe(a), bfirst);
    mr_arena_destroy(a);
}

/* ======================================================================
 * stale and foreign marks
 * ====================================================================== */

/* An outside report: a rewind to a stale mark (one saved after an earlier
 * rewind's target) ran cleanups registered before the mark and freed large
 * blocks still in use, and a rewind to a mark of another arena, or of this
 * one before a release, reset the arena.  Marks now name their arena and
 * number the cleanups and large blocks before them; a rewind stops at those
 * numbers, and a foreign mark is ignored. */

static int ran[4];
static void note_run(void *arg) { ran[(int)(intptr_t)arg]++; }

/* defer(c0); m1 = save; defer(c1); m2 = save; rewind(m1); rewind(m2):
 * c0 was registered before both marks and must not run. */
static void test_stale_mark_never_runs_older_cleanups(void **state)
{
    mrt_violations *v = *state;
    memset(ran, 0, sizeof ran);
    mr_arena *a = mr_arena_create(NULL);
    assert_non_null(a);
    assert_int_equal(mr_arena_defer(a, note_run, (void *)(intptr_t)0), 0);
    mr_arena_mark m1 = mr_arena_save(a);
    assert_int_equal(mr_arena_defer(a, note_run, (void *)(intptr_t)1), 0);
    mr_arena_mark m2 = mr_arena_save(a);
    mr_arena_rewind(a, m1);
    assert_int_equal(ran[1], 1);
    mrt_assert_reported(v, 0);
    mr_arena_rewind(a, m2); /* stale */
    assert_int_equal(ran[0], 0);
    assert_int_equal(ran[1], 1);
    mrt_assert_reported(v, 1);
    assert_true(mr_arena_check(a));
    /* the stale mark after more cleanups: still never below its own number */
    assert_int_equal(mr_arena_defer(a, note_run, (void *)(intptr_t)2), 0);
    assert_int_equal(mr_arena_defer(a, note_run, (void *)(intptr_t)3), 0);
    mr_arena_rewind(a, m2); /* m2 numbers 2 cleanups: only the 3rd, newest, runs */
    assert_int_equal(ran[3], 1);
    assert_int_equal(ran[2], 0);
    assert_int_equal(ran[0], 0);
    mr_arena_destroy(a);
    assert_int_equal(ran[0], 1);
    assert_int_equal(ran[2], 1);
}

/* Rewinding arena A to a mark of another, empty arena must not reset A. */
static void test_foreign_mark_is_ignored(void **state)
{
    mrt_violations *v = *state;
    mr_arena *a = mr_arena_create(NULL), *b = mr_arena_create(NULL);
    assert_non_null(a);
    assert_non_null(b);
    mr_arena_mark mb = mr_arena_save(b);
    char *x = mr_arena_alloc(a, 64);
    assert_non_null(x);
    memset(x, 'x', 64);
    mr_stats before, after;
    mr_arena_stats(a, &before);
    mr_arena_rewind(a, mb);
    mr_arena_stats(a, &after);
    mrt_assert_reported(v, 1);
    assert_int_equal(after.in_use, before.in_use);
    char *y = mr_arena_alloc(a, 64); /* must not be x again */
    assert_non_null(y);
    assert_true(y >= x + 64 || y + 64 <= x);
    /* a mark from before a release is foreign too */
    mr_arena_mark old = mr_arena_save(a);
    mr_arena_release(a);
    assert_non_null(mr_arena_alloc(a, 32));
    mr_arena_rewind(a, old);
    mrt_assert_reported(v, 2);
    assert_true(mr_arena_check(a));
    mr_arena_destroy(a);
    mr_arena_destroy(b);
}

/* A stale mark past the current position in the same block is a plain
 * position: a rewind to it skips free bytes and never hands out memory in
 * use twice. */
static void test_forward_mark_never_overlaps(void **state)
{
    mrt_violations *v = *state;
    mr_arena *a = mr_arena_create(NULL);
    assert_non_null(a);
    mr_arena_mark m1 = mr_arena_save(a);
    assert_non_null(mr_arena_alloc(a, 16));
    assert_non_null(mr_arena_alloc(a, 16));
    mr_arena_mark m2 = mr_arena_save(a);
    mr_arena_rewind(a, m1);
    char *q = mr_arena_alloc(a, 16);
    assert_non_null(q);
    mr_arena_rewind(a, m2);
    mrt_assert_reported(v, 0);
    char *r = mr_arena_alloc(a, 16);
    assert_non_null(r);
    assert_true(r >= q + 16);
    assert_true(mr_arena_check(a));
    mr_arena_destroy(a);
}

/* Large (dedicated) blocks allocated before a stale mark stay in use. */
static void test_stale_mark_keeps_older_large_blocks(void **state)
{
    mrt_violations *v = *state;
    mr_arena *a = mr_arena_create(NULL);
    assert_non_null(a);
    char *big0 = mr_arena_alloc(a, 1 << 20); /* dedicated: above the growth size */
    assert_non_null(big0);
    memset(big0, 1, 1 << 20);
    mr_arena_mark m1 = mr_arena_save(a);
    assert_non_null(mr_arena_alloc(a, 1 << 20));
    mr_arena_mark m2 = mr_arena_save(a);
    mr_arena_rewind(a, m1);
    mr_arena_rewind(a, m2);
    mrt_assert_reported(v, 1);
    char *big2 = mr_arena_alloc(a, 1 << 20);
    assert_non_null(big2);
    assert_true(big2 >= big0 + (1 << 20) || big2 + (1 << 20) <= big0);
    assert_true(mr_arena_check(a));
    mr_arena_destroy(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        mrt_unit_test(test_rewind_same_addresses),
        mrt_unit_test(test_rewind_same_addresses_big_blocks),
        mrt_unit_test(test_rewind_buffer_then_upstream),
        mrt_unit_test(test_nested_marks),
        mrt_unit_test(test_cleanups_lifo),
        mrt_unit_test(test_cleanups_rewind),
        mrt_unit_test(test_cleanups_run_before_free),
        mrt_unit_test(test_defer_failure),
        mrt_unit_test(test_reset_no_upstream_calls),
        mrt_unit_test(test_reset_no_upstream_calls_big_blocks),
        mrt_unit_test(test_reset_buffer),
        mrt_unit_test(test_release),
        mrt_violation_test(test_stale_mark_never_runs_older_cleanups),
        mrt_violation_test(test_foreign_mark_is_ignored),
        mrt_violation_test(test_forward_mark_never_overlaps),
        mrt_violation_test(test_stale_mark_keeps_older_large_blocks),
    };
    return cmocka_run_group_tests_name("arena marks", tests, NULL, NULL);
}
