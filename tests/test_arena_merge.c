/* SPDX-License-Identifier: MIT */
/* tests/test_arena_merge.c -- arenas over and into arenas (memres/arena.h):
 * an arena stacked on another's resource view, the resource view itself,
 * and mr_arena_merge.
 *
 * Stacked: everything the inner arena takes lies in the outer's blocks,
 * the inner's rewind, reset and release work as on any upstream, the
 * outer's rewind frees it all, and the outer's limit stops the inner
 * cleanly.  The resource view: one per arena, equal only to itself,
 * aligned allocations, a deallocate of the newest frees it and of any other
 * does nothing.  Merge (git's mem_pool_combine): the objects of `from`
 * outlive it, its cleanups move to `into` and run in order, a rewind of
 * `into` to a mark saved before the merge frees what came from `from`, the
 * refusals (the same arena, NULL, other upstreams, a buffer with data in
 * it, into's limit) change nothing, and a fault sweep leaves both arenas
 * consistent at every failure point.
 *
 * Helpers: tests/arena_helpers.h.
 */
#include <errno.h>
#include <stdalign.h>
#include <stdint.h>
#include <string.h>

#include "support.h"
#include "arena_helpers.h"

/* ======================================================================
 * stacking and the resource view
 * ====================================================================== */

static void test_arena_on_arena(void **state)
{
    mrt_upstream *u = *state;
    mr_arena *outer = arena_on(&u->base, 8192, 0, 0);
    unsigned char *keep = mr_arena_alloc(outer, 64);
    fill(keep, 64, 13);
    void *outer_next = probe_n(outer, 64);
    mr_arena_mark om = mr_arena_save(outer);

    cleanup_n = 0;
    mr_arena *inner = arena_on(mr_arena_resource(outer), 1024, 8192, 0);
    for (int round = 0; round < 3; round++) {
        mr_arena_mark im = mr_arena_save(inner);
        for (size_t i = 1; i < 200; i++) {
            unsigned char *p = mr_arena_alloc(inner, i);
            assert_non_null(p);
            assert_true(mrt_upstream_owns(u, p)); /* inside the outer's blocks */
            memset(p, (int)i, i);
        }
        unsigned char *big = mr_arena_alloc(inner, 50000);
        assert_non_null(big);
        assert_true(mrt_upstream_owns(u, big));
        assert_int_equal(mr_arena_defer(inner, log_cleanup, (void *)(intptr_t)round), 0);
        assert_true(mr_arena_check(inner));
        assert_true(mr_arena_check(outer));
        if (round == 0)
            mr_arena_rewind(inner, im);
        else if (round == 1)
            mr_arena_reset(inner);
        else
            mr_arena_release(inner);
        assert_int_equal(cleanup_n, 1);
        cleanup_n = 0;
    }
    mr_arena_destroy(inner);
    assert_true(mr_arena_check(outer));
    assert_int_equal(verify(keep, 64, 13), SIZE_MAX);
    /* everything the inner arena took is freed with the outer's rewind */
    mr_arena_rewind(outer, om);
    assert_ptr_equal(probe_n(outer, 64), outer_next);
    assert_true(mr_arena_check(outer));

    /* the outer's limit stops the inner cleanly */
    mr_arena *lim = arena_on(&u->base, 4096, 0, 32 * KiB);
    inner = arena_on(mr_arena_resource(lim), 1024, 4096, 0);
    size_t n = 0;
    while (mr_arena_alloc(inner, 500) != NULL)
        n++;
    assert_int_equal(errno, ENOMEM);
    assert_true(n > 10);
    assert_true(mr_arena_check(inner));
    assert_true(mr_arena_check(lim));
    mr_arena_reset(inner);
    assert_non_null(mr_arena_alloc(inner, 500));
    mr_arena_destroy(inner);
    mr_arena_destroy(lim);
    mr_arena_destroy(outer);
}

static void test_resource_view(void **state)
{
    mrt_upstream *u = *state;
    mr_arena *a = arena_on(&u->base, 4096, 0, 0);
    mr_arena *b = arena_on(&u->base, 4096, 0, 0);
    mr_resource *r = mr_arena_resource(a);
    assert_non_null(r);
    assert_ptr_equal(mr_arena_resource(a), r);
    assert_true(mr_is_equal(r, r));
    assert_false(mr_is_equal(r, mr_arena_resource(b)));
    assert_false(mr_is_equal(mr_arena_resource(b), r));
    assert_false(mr_is_equal(r, mr_malloc_resource()));
    assert_false(mr_is_equal(r, &u->base));

    unsigned char *p = mr_allocate(r, 24, 8);
    assert_non_null(p);
    assert_true(is_aligned(p, 8));
    unsigned char *q = mr_allocate(r, 100, 4096);
    assert_non_null(q);
    assert_true(is_aligned(q, 4096));
    assert_true(mrt_upstream_owns(u, q));
    assert_non_null(mr_allocate(r, 0, 16));

    /* deallocating the newest frees it */
    unsigned char *n1 = mr_allocate(r, 64, 16);
    size_t use = stats(a).in_use;
    mr_deallocate(r, n1, 64, 16);
    assert_true(stats(a).in_use < use);
    assert_ptr_equal(mr_allocate(r, 64, 16), n1);
    /* deallocating an older one does nothing */
    unsigned char *n2 = mr_allocate(r, 64, 16);
    fill(n1, 64, 14);
    fill(n2, 64, 15);
    use = stats(a).in_use;
    mr_deallocate(r, n1, 64, 16);
    assert_int_equal(stats(a).in_use, use);
    assert_int_equal(verify(n1, 64, 14), SIZE_MAX);
    assert_int_equal(verify(n2, 64, 15), SIZE_MAX);
    unsigned char *n3 = mr_allocate(r, 64, 16);
    assert_true(n3 != n1 && n3 != n2);
    assert_int_equal(verify(n2, 64, 15), SIZE_MAX);
    mr_deallocate(r, NULL, 64, 16);
    /* a big one, newest */
    unsigned char *big = mr_allocate(r, 200000, 16);
    assert_non_null(big);
    mr_deallocate(r, big, 200000, 16);
    assert_true(mr_arena_check(a));
    assert_int_equal(verify(n2, 64, 15), SIZE_MAX);
    mr_arena_destroy(b);
    mr_arena_destroy(a);
}

/* ======================================================================
 * merge (git's mem_pool_combine)
 * ====================================================================== */

static char merge_log[16];
static size_t merge_n;
static void merge_note(void *arg) { merge_log[merge_n++] = (char)(intptr_t)arg; }

/* Fills `from` with tagged objects of many sizes (small, a new block, a
 * dedicated one, strings) and two cleanups. */
static void merge_fill(mr_arena *from, unsigned char **objs, size_t *sizes, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        sizes[i] = i % 7 == 0 ? 70000 : i % 3 == 0 ? 3000 : 40 + i;
        objs[i] = mr_arena_alloc(from, sizes[i]);
        assert_non_null(objs[i]);
        fill(objs[i], sizes[i], i + 1);
    }
    assert_non_null(mr_arena_strdup(from, "packed"));
    assert_int_equal(mr_arena_defer(from, merge_note, (void *)(intptr_t)'f'), 0);
    assert_int_equal(mr_arena_defer(from, merge_note, (void *)(intptr_t)'g'), 0);
}

/* Objects of `from` survive its destroy, and into's release balances. */
static void test_merge_objects_outlive_from(void **state)
{
    mrt_upstream *u = *state;
    mr_arena *into = arena_on(&u->base, 1024, 16384, 0);
    mr_arena *from = arena_on(&u->base, 1024, 16384, 0);
    unsigned char *keep = mr_arena_alloc(into, 100);
    fill(keep, 100, 99);
    unsigned char *objs[40];
    size_t sizes[40];
    merge_n = 0;
    assert_int_equal(mr_arena_defer(into, merge_note, (void *)(intptr_t)'a'), 0);
    merge_fill(from, objs, sizes, 40);
    mr_stats fi = stats(from), ii = stats(into);
    assert_int_equal(mr_arena_merge(into, from), 0);
    mr_stats fo = stats(from), io = stats(into);
    assert_int_equal(io.in_use, ii.in_use + fi.in_use);
    assert_int_equal(io.held + fo.held, ii.held + fi.held);
    assert_int_equal(fo.in_use, 0);
    assert_true(mr_arena_check(into));
    assert_true(mr_arena_check(from));
    /* from is usable, and its allocations no longer collide with into's */
    unsigned char *f2 = mr_arena_alloc(from, 64);
    assert_non_null(f2);
    for (size_t i = 0; i < 40; i++)
        assert_true(f2 + 64 <= objs[i] || f2 >= objs[i] + sizes[i]);
    mr_arena_destroy(from);
    assert_int_equal(merge_n, 0); /* from's cleanups moved: not run by its destroy */
    for (size_t i = 0; i < 40; i++)
        assert_int_equal(verify(objs[i], sizes[i], i + 1), SIZE_MAX);
    assert_int_equal(verify(keep, 100, 99), SIZE_MAX);
    /* into's cleanups after the merge run first, then from's, then into's older */
    assert_int_equal(mr_arena_defer(into, merge_note, (void *)(intptr_t)'z'), 0);
    mr_arena_release(into);
    assert_int_equal(merge_n, 4);
    assert_memory_equal(merge_log, "zgfa", 4);
    mr_arena_destroy(into);
    /* the fixture's teardown proves the upstream balanced */
}

/* A rewind of `into` to a mark saved before the merge frees what came from
 * `from` (and runs its cleanups); a mark saved after keeps it. */
static void test_merge_rewind_frees_merged(void **state)
{
    mrt_upstream *u = *state;
    mr_arena *into = arena_on(&u->base, 1024, 16384, 0);
    mr_arena *from = arena_on(&u->base, 1024, 16384, 0);
    assert_non_null(mr_arena_alloc(into, 48));
    mr_arena_mark before = mr_arena_save(into);
    size_t in_use = stats(into).in_use;
    unsigned char *objs[20];
    size_t sizes[20];
    merge_n = 0;
    merge_fill(from, objs, sizes, 20);
    assert_int_equal(mr_arena_merge(into, from), 0);
    mr_arena_mark after = mr_arena_save(into);
    assert_non_null(mr_arena_alloc(into, 5000));
    mr_arena_rewind(into, after);
    assert_int_equal(merge_n, 0);
    for (size_t i = 0; i < 20; i++)
        assert_int_equal(verify(objs[i], sizes[i], i + 1), SIZE_MAX);
    mr_arena_rewind(into, before);
    assert_int_equal(merge_n, 2);
    assert_memory_equal(merge_log, "gf", 2);
    assert_int_equal(stats(into).in_use, in_use);
    assert_true(mr_arena_check(into));
    /* a mark of from, saved before the merge, is stale now: ignored */
    mr_arena_mark fm = mr_arena_save(from);
    assert_non_null(mr_arena_alloc(from, 16));
    mr_arena_destroy(from);
    mr_arena_destroy(into);
    (void)fm;
}

/* Refusals change nothing. */
static void test_merge_refusals(void **state)
{
    mrt_upstream *u = *state;
    mr_arena *a = arena_on(&u->base, 1024, 16384, 0);
    assert_non_null(mr_arena_alloc(a, 100));
    snapshot before = snap(a, u);
    /* into == from, NULL */
    assert_int_equal(mr_arena_merge(a, a), -1);
    assert_int_equal(errno, EINVAL);
    errno = 0;
    assert_int_equal(mr_arena_merge(NULL, a), -1);
    assert_int_equal(errno, EINVAL);
    assert_unchanged(a, u, &before);
    /* different upstreams */
    mr_arena *m = arena_on(mr_malloc_resource(), 1024, 16384, 0);
    assert_non_null(mr_arena_alloc(m, 100));
    errno = 0;
    assert_int_equal(mr_arena_merge(a, m), -1);
    assert_int_equal(errno, EINVAL);
    assert_unchanged(a, u, &before);
    mr_arena_destroy(m);
    /* from holds data in its caller's buffer */
    alignas(max_align_t) unsigned char buf[2048];
    mr_arena *b = arena_buf(&u->base, buf, sizeof buf);
    assert_non_null(mr_arena_alloc(b, 100));
    errno = 0;
    assert_int_equal(mr_arena_merge(a, b), -1);
    assert_int_equal(errno, EINVAL);
    assert_unchanged(a, u, &before);
    /* ...but once it spilled into upstream blocks only, those would move:
     * an empty buffer block is not data */
    mr_arena_reset(b);
    assert_non_null(mr_arena_alloc(b, 5000)); /* does not fit the buffer: a block */
    assert_int_equal(mr_arena_merge(a, b), 0);
    assert_true(mr_arena_check(a));
    assert_true(mr_arena_check(b));
    mr_arena_destroy(b);
    mr_arena_destroy(a);
    /* into's limit cannot take the blocks: ENOMEM, nothing changed */
    mr_arena *lim = arena_on(&u->base, 1024, 16384, 4096);
    mr_arena *big = arena_on(&u->base, 1024, 16384, 0);
    assert_non_null(mr_arena_alloc(big, 20000));
    snapshot lb = snap(lim, u);
    errno = 0;
    assert_int_equal(mr_arena_merge(lim, big), -1);
    assert_int_equal(errno, ENOMEM);
    assert_unchanged(lim, u, &lb);
    mr_arena_destroy(big);
    mr_arena_destroy(lim);
}

/* A scenario for the fault sweep: build in a scratch arena, merge into a
 * longer-lived one, and check; every upstream failure point leaves both
 * arenas consistent and, after destroy, nothing held. */
static bool merge_scenario(mrt_upstream *u, void *ctx)
{
    (void)ctx;
    bool failed = false;
    mr_arena_options o = {.upstream = &u->base, .block_size = 1024, .max_block_size = 8192};
    mr_arena *into = mr_arena_create(&o), *from = mr_arena_create(&o);
    if (into == NULL || from == NULL) {
        mr_arena_destroy(into);
        mr_arena_destroy(from);
        return true;
    }
    for (size_t i = 0; i < 30 && !failed; i++)
        failed = mr_arena_alloc(i % 2 ? into : from, i % 5 == 0 ? 9000 : 300) == NULL;
    if (!failed) {
        assert_int_equal(mr_arena_merge(into, from), 0);
        failed = mr_arena_strdup(into, "after") == NULL || mr_arena_alloc(from, 2000) == NULL;
    }
    assert_true(mr_arena_check(into));
    assert_true(mr_arena_check(from));
    mr_arena_destroy(from);
    mr_arena_destroy(into);
    return failed;
}

static void test_merge_fault_sweep(void **state)
{
    (void)state;
    mrt_fault_sweep("arena merge", merge_scenario, NULL, MRT_FAIL_ONCE, 5);
    mrt_fault_sweep("arena merge", merge_scenario, NULL, MRT_FAIL_FROM, 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        mrt_unit_test(test_arena_on_arena),
        mrt_unit_test(test_resource_view),
        mrt_unit_test(test_merge_objects_outlive_from),
        mrt_unit_test(test_merge_rewind_frees_merged),
        mrt_unit_test(test_merge_refusals),
        cmocka_unit_test(test_merge_fault_sweep),
    };
    return cmocka_run_group_tests_name("arena merge", tests, NULL, NULL);
}
