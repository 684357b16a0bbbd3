/* SPDX-License-Identifier: MIT */
/* tests/test_adaptors.c -- the adaptors of adaptors.h: counting, limiting,
 * failing and tracking, each clause of their contracts with exact figures,
 * bad input (NULL + errno, nothing allocated), the violations tracking
 * reports (through a recording handler, in every build), threads, and a
 * fault sweep of an arena and a pools stacked over tracking over failing.
 *
 * Every adaptor sits on an mrt_upstream (tests/support.h), so what reached
 * the upstream is compared with what the adaptor says, and every test ends
 * with the upstream balanced and the violation handler and the default
 * resource restored (the fixture's teardown).
 */
#include "support.h"

#include "memres/adaptors.h" /* also in memres/memres.h */

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Counting, limiting and failing report deallocate misuse only when the
 * library's MR_DEBUG >= 1 (support.h); tracking reports in every build. */

/* ---- fixture: an upstream and a recording violation handler ---- */

enum { MAX_SEEN = 16 };

typedef struct fixture {
    mrt_upstream u;
    size_t nseen;             /* violations reported */
    char what[MAX_SEEN][256]; /* copies: the messages live only during the call */
    const void *ptr[MAX_SEEN];
} fixture;

static void record(const char *what, const void *ptr, void *ctx)
{
    fixture *fx = ctx;
    if (fx->nseen < MAX_SEEN) {
        snprintf(fx->what[fx->nseen], sizeof fx->what[0], "%s", what);
        fx->ptr[fx->nseen] = ptr;
    }
    fx->nseen++;
}

static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof *fx);
    if (fx == NULL)
        return -1;
    mrt_upstream_init(&fx->u);
    mr_set_violation_handler(record, fx);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    *state = NULL;
    mr_set_violation_handler(NULL, NULL);
    mr_set_default_resource(NULL);
    mrt_assert_balanced(&fx->u);
    mrt_upstream_fini(&fx->u);
    free(fx);
    return 0;
}

#define adaptor_test(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

/* Deallocate misuse of counting, limiting and failing: reported in debug
 * builds only. */
#define assert_debug_reported(fx, n) assert_int_equal((fx)->nseen, MR_DEBUG >= 1 ? (n) : 0)

static mr_stats stats_of(void (*fn)(const void *, mr_stats *), const void *obj)
{
    mr_stats s;
    memset(&s, 0xCC, sizeof s);
    fn(obj, &s);
    return s;
}

/* Typed wrappers so stats_of takes every adaptor. */
static void cstats(const void *o, mr_stats *s) { mr_counting_stats(o, s); }
static void lstats(const void *o, mr_stats *s) { mr_limiting_stats(o, s); }
static void fstats(const void *o, mr_stats *s) { mr_failing_stats(o, s); }
static void tstats(const void *o, mr_stats *s) { mr_tracking_stats(o, s); }

#define assert_stats(s, in_use_, peak_, allocs_, deallocs_)             \
    do {                                                                \
        assert_int_equal((s).in_use, (in_use_));                        \
        assert_int_equal((s).held, (in_use_));                          \
        assert_int_equal((s).peak_held, (peak_));                       \
        assert_int_equal((s).allocations, (allocs_));                   \
        assert_int_equal((s).upstream_allocations, (allocs_));          \
        assert_int_equal((s).upstream_deallocations, (deallocs_));      \
    } while (0)

#define assert_same_stats(a, b) assert_memory_equal(&(a), &(b), sizeof(mr_stats))

/* ---- every adaptor: create, destroy, identity ---- */

static void test_create_failure_is_null_enomem(void **state)
{
    fixture *fx = *state;
    /* The header comes from the default resource, which now gives nothing. */
    mr_set_default_resource(mr_null_resource());
    mr_failing_options fo = {.upstream = &fx->u.base};
    errno = 0;
    assert_null(mr_counting_create(&fx->u.base));
    assert_int_equal(errno, ENOMEM);
    errno = 0;
    assert_null(mr_limiting_create(&fx->u.base, 100));
    assert_int_equal(errno, ENOMEM);
    errno = 0;
    assert_null(mr_failing_create(&fo));
    assert_int_equal(errno, ENOMEM);
    errno = 0;
    assert_null(mr_tracking_create(&fx->u.base));
    assert_int_equal(errno, ENOMEM);
    assert_int_equal(fx->u.calls, 0);
}

static void test_destroy_null_is_noop(void **state)
{
    (void)state;
    mr_counting_destroy(NULL);
    mr_limiting_destroy(NULL);
    mr_failing_destroy(NULL);
    mr_tracking_destroy(NULL);
}

/* upstream NULL: the default resource at create time, which also gives the
 * header; a later change of the default does not move the adaptor. */
static void test_null_upstream_is_default_at_create(void **state)
{
    fixture *fx = *state;
    mr_set_default_resource(&fx->u.base);
    mr_counting *c = mr_counting_create(NULL);
    mr_tracking *t = mr_tracking_create(NULL);
    mr_failing *f = mr_failing_create(NULL);
    mr_limiting *l = mr_limiting_create(NULL, 64);
    assert_non_null(c);
    assert_non_null(t);
    assert_non_null(f);
    assert_non_null(l);
    assert_int_equal(fx->u.allocations, 4); /* the four headers */
    mr_set_default_resource(NULL);

    mr_resource *views[] = {mr_counting_resource(c), mr_tracking_resource(t), mr_failing_resource(f),
                            mr_limiting_resource(l)};
    const size_t calls[] = {1, 2, 1, 1}; /* tracking's first call takes its table first */
    for (size_t i = 0; i < 4; i++) {
        size_t before = fx->u.allocations;
        void *p = mr_allocate(views[i], 10, 8);
        assert_non_null(p);
        assert_int_equal(fx->u.allocations, before + calls[i]);
        assert_true(mrt_upstream_owns(&fx->u, p));
        mr_deallocate(views[i], p, 10, 8);
    }
    /* tracking's table (first allocation) came from the default too */
    assert_int_equal(fx->u.allocations, 4 + 4 + 1);
    mr_counting_destroy(c);
    mr_tracking_destroy(t);
    mr_failing_destroy(f);
    mr_limiting_destroy(l);
    assert_int_equal(fx->nseen, 0);
}

static void test_views_equal_only_themselves(void **state)
{
    fixture *fx = *state;
    mr_counting *a = mr_counting_create(&fx->u.base);
    mr_counting *b = mr_counting_create(&fx->u.base);
    mr_tracking *t = mr_tracking_create(&fx->u.base);
    assert_true(mr_is_equal(mr_counting_resource(a), mr_counting_resource(a)));
    assert_false(mr_is_equal(mr_counting_resource(a), mr_counting_resource(b)));
    assert_false(mr_is_equal(mr_counting_resource(a), &fx->u.base));
    assert_false(mr_is_equal(mr_counting_resource(a), mr_tracking_resource(t)));
    assert_null(mr_counting_resource(a)->ops->is_equal);
    assert_null(mr_tracking_resource(t)->ops->is_equal);
    mr_counting_destroy(a);
    mr_counting_destroy(b);
    mr_tracking_destroy(t);
}

/* ---- counting ---- */

static void test_counting_exact_figures(void **state)
{
    fixture *fx = *state;
    mr_counting *c = mr_counting_create(&fx->u.base);
    mr_resource *r = mr_counting_resource(c);
    assert_int_equal(fx->u.calls, 0); /* the header is not the upstream's */
    mr_stats s = stats_of(cstats, c);
    assert_stats(s, 0, 0, 0, 0);

    void *a = mr_allocate(r, 100, 8);
    void *b = mr_allocate(r, 28, 64);
    void *z = mr_allocate(r, 0, 1);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(z);
    assert_int_equal((uintptr_t)b % 64, 0);
    /* passed through unchanged */
    assert_int_equal(fx->u.nlive, 3);
    assert_ptr_equal(fx->u.live[0].p, a);
    assert_int_equal(fx->u.live[1].size, 28);
    assert_int_equal(fx->u.live[1].align, 64);
    s = stats_of(cstats, c);
    assert_stats(s, 128, 128, 3, 0);

    mr_deallocate(r, a, 100, 8);
    s = stats_of(cstats, c);
    assert_stats(s, 28, 128, 3, 1);
    void *d = mr_allocate(r, 50, 16);
    s = stats_of(cstats, c);
    assert_stats(s, 78, 128, 4, 1);
    mr_deallocate(r, d, 50, 16);
    mr_deallocate(r, b, 28, 64);
    mr_deallocate(r, z, 0, 1);
    s = stats_of(cstats, c);
    assert_stats(s, 0, 128, 4, 4);
    assert_int_equal(fx->u.allocations, 4);
    assert_int_equal(fx->u.deallocations, 4);
    mr_counting_destroy(c);
}

static void test_counting_upstream_failure_changes_nothing(void **state)
{
    fixture *fx = *state;
    mr_counting *c = mr_counting_create(&fx->u.base);
    mr_resource *r = mr_counting_resource(c);
    void *a = mr_allocate(r, 40, 8);
    mr_stats before = stats_of(cstats, c);
    fx->u.fail_at = fx->u.calls + 1;
    errno = 0;
    assert_null(mr_allocate(r, 16, 8));
    assert_int_equal(errno, ENOMEM);
    mr_stats after = stats_of(cstats, c);
    assert_same_stats(before, after);
    /* bad alignment never reaches the adaptor */
    errno = 0;
    assert_null(mr_allocate(r, 16, 3));
    assert_int_equal(errno, EINVAL);
    after = stats_of(cstats, c);
    assert_same_stats(before, after);
    mr_deallocate(r, a, 40, 8);
    mr_counting_destroy(c);
}

/* A deallocate of more than is outstanding is ignored (not passed up) in
 * every build, reported in debug builds. */
static void test_counting_bad_deallocate_ignored(void **state)
{
    fixture *fx = *state;
    mr_counting *c = mr_counting_create(&fx->u.base);
    mr_resource *r = mr_counting_resource(c);
    int local;
    mr_deallocate(r, &local, 8, 8); /* nothing outstanding */
    assert_debug_reported(fx, 1);
    void *a = mr_allocate(r, 24, 8);
    mr_stats before = stats_of(cstats, c);
    mr_deallocate(r, a, 25, 8); /* more bytes than outstanding */
    assert_debug_reported(fx, 2);
    mr_stats after = stats_of(cstats, c);
    assert_same_stats(before, after);
    assert_int_equal(fx->u.deallocations, 0);
    if (MR_DEBUG >= 1)
        assert_ptr_equal(fx->ptr[1], a);
    mr_deallocate(r, a, 24, 8);
    assert_debug_reported(fx, 2);
    mr_counting_destroy(c);
}

/* ---- limiting ---- */

static void test_limiting_boundary(void **state)
{
    fixture *fx = *state;
    mr_limiting *l = mr_limiting_create(&fx->u.base, 100);
    mr_resource *r = mr_limiting_resource(l);
    void *a = mr_allocate(r, 60, 8);
    assert_non_null(a);
    mr_stats before = stats_of(lstats, l);
    size_t calls = fx->u.calls;
    errno = 0;
    assert_null(mr_allocate(r, 41, 8)); /* limit + 1 */
    assert_int_equal(errno, ENOMEM);
    assert_int_equal(fx->u.calls, calls); /* refused before the upstream */
    mr_stats after = stats_of(lstats, l);
    assert_same_stats(before, after);

    void *b = mr_allocate(r, 40, 8); /* exactly the limit */
    assert_non_null(b);
    assert_stats(stats_of(lstats, l), 100, 100, 2, 0);
    void *z = mr_allocate(r, 0, 8); /* size 0 fits a full budget */
    assert_non_null(z);
    errno = 0;
    assert_null(mr_allocate(r, 1, 1));
    assert_int_equal(errno, ENOMEM);

    mr_deallocate(r, a, 60, 8); /* after a free it fits again */
    void *c = mr_allocate(r, 60, 8);
    assert_non_null(c);
    assert_stats(stats_of(lstats, l), 100, 100, 4, 1);
    errno = 0;
    assert_null(mr_allocate(r, 1, 1));
    assert_int_equal(errno, ENOMEM);
    mr_deallocate(r, b, 40, 8);
    mr_deallocate(r, c, 60, 8);
    mr_deallocate(r, z, 0, 8);
    assert_stats(stats_of(lstats, l), 0, 100, 4, 4);
    mr_limiting_destroy(l);
}

/* limit is literal: 0 allows size 0 only; huge sizes never wrap. */
static void test_limiting_extremes(void **state)
{
    fixture *fx = *state;
    mr_limiting *zero = mr_limiting_create(&fx->u.base, 0);
    void *z = mr_allocate(mr_limiting_resource(zero), 0, 1);
    assert_non_null(z);
    errno = 0;
    assert_null(mr_allocate(mr_limiting_resource(zero), 1, 1));
    assert_int_equal(errno, ENOMEM);
    mr_deallocate(mr_limiting_resource(zero), z, 0, 1);
    mr_limiting_destroy(zero);

    mr_limiting *l = mr_limiting_create(&fx->u.base, 100);
    mr_resource *r = mr_limiting_resource(l);
    void *a = mr_allocate(r, 50, 8);
    size_t calls = fx->u.calls;
    errno = 0;
    assert_null(mr_allocate(r, SIZE_MAX, 8));
    assert_int_equal(errno, ENOMEM);
    errno = 0;
    assert_null(mr_allocate(r, SIZE_MAX - 40, 8)); /* 50 + that wraps to 9 */
    assert_int_equal(errno, ENOMEM);
    assert_int_equal(fx->u.calls, calls);
    mr_deallocate(r, a, 50, 8);
    mr_limiting_destroy(l);

    mr_limiting *big = mr_limiting_create(&fx->u.base, SIZE_MAX);
    r = mr_limiting_resource(big);
    a = mr_allocate(r, 50, 8);
    calls = fx->u.calls;
    errno = 0;
    assert_null(mr_allocate(r, SIZE_MAX - 10, 8)); /* refused here: 50 > SIZE_MAX - (SIZE_MAX - 10) */
    assert_int_equal(errno, ENOMEM);
    assert_int_equal(fx->u.calls, calls);
    errno = 0;
    assert_null(mr_allocate(r, SIZE_MAX - 50, 8)); /* fits the budget, the upstream refuses */
    assert_int_equal(errno, ENOMEM);
    assert_int_equal(fx->u.calls, calls + 1);
    assert_stats(stats_of(lstats, big), 50, 50, 1, 0);
    mr_deallocate(r, a, 50, 8);
    mr_limiting_destroy(big);
}

static void test_limiting_upstream_failure_changes_nothing(void **state)
{
    fixture *fx = *state;
    mr_limiting *l = mr_limiting_create(&fx->u.base, 1000);
    mr_resource *r = mr_limiting_resource(l);
    void *a = mr_allocate(r, 500, 8);
    mr_stats before = stats_of(lstats, l);
    fx->u.fail_at = fx->u.calls + 1;
    errno = 0;
    assert_null(mr_allocate(r, 500, 8));
    assert_int_equal(errno, ENOMEM);
    mr_stats after = stats_of(lstats, l);
    assert_same_stats(before, after);
    void *b = mr_allocate(r, 500, 8); /* the budget was not consumed */
    assert_non_null(b);
    mr_deallocate(r, a, 500, 8);
    mr_deallocate(r, b, 500, 8);
    int local;
    mr_deallocate(r, &local, 1, 1);
    assert_debug_reported(fx, 1);
    mr_limiting_destroy(l);
}

/* ---- failing ---- */

static mr_failing *mkf(fixture *fx, mr_failing_options o)
{
    o.upstream = &fx->u.base;
    mr_failing *f = mr_failing_create(&o);
    assert_non_null(f);
    return f;
}

/* Runs n requests of the given sizes (sizes[i % nsizes]) and returns the
 * pattern of failures as a bit string (request i + 1 -> bit i). */
static uint64_t run_pattern(mr_failing *f, size_t n, const size_t *sizes, size_t nsizes)
{
    uint64_t pattern = 0;
    for (size_t i = 0; i < n; i++) {
        size_t size = sizes[i % nsizes];
        errno = 0;
        void *p = mr_allocate(mr_failing_resource(f), size, 8);
        if (p == NULL) {
            assert_int_equal(errno, ENOMEM);
            pattern |= (uint64_t)1 << i;
        } else {
            mr_deallocate(mr_failing_resource(f), p, size, 8);
        }
    }
    return pattern;
}

static const size_t small[] = {8};

static void test_failing_bad_options(void **state)
{
    fixture *fx = *state;
    mr_set_default_resource(&fx->u.base); /* nothing may be allocated */
    const double bad_p[] = {-0.1, 1.0000001, NAN, INFINITY, -INFINITY};
    for (size_t i = 0; i < sizeof bad_p / sizeof bad_p[0]; i++) {
        mr_failing_options o = {.probability = bad_p[i]};
        errno = 0;
        assert_null(mr_failing_create(&o));
        assert_int_equal(errno, EINVAL);
    }
    mr_failing_options o = {.persistent = true}; /* persistent without fail_at */
    errno = 0;
    assert_null(mr_failing_create(&o));
    assert_int_equal(errno, EINVAL);
    assert_int_equal(fx->u.calls, 0);
}

static void test_failing_null_options_pass_through(void **state)
{
    fixture *fx = *state;
    mr_set_default_resource(&fx->u.base);
    mr_failing *f = mr_failing_create(NULL);
    assert_non_null(f);
    assert_int_equal(run_pattern(f, 50, small, 1), 0);
    assert_int_equal(mr_failing_requests(f), 50);
    assert_int_equal(mr_failing_failures(f), 0);
    assert_stats(stats_of(fstats, f), 0, 8, 50, 50);
    mr_failing_destroy(f);
}

static void test_failing_fail_at(void **state)
{
    fixture *fx = *state;
    mr_failing *f = mkf(fx, (mr_failing_options){.fail_at = 3});
    assert_int_equal(run_pattern(f, 6, small, 1), 0x4); /* request 3 only */
    assert_int_equal(mr_failing_requests(f), 6);
    assert_int_equal(mr_failing_failures(f), 1);
    assert_int_equal(fx->u.calls, 5);
    assert_stats(stats_of(fstats, f), 0, 8, 5, 5);
    mr_failing_destroy(f);

    f = mkf(fx, (mr_failing_options){.fail_at = 1});
    assert_int_equal(run_pattern(f, 3, small, 1), 0x1);
    mr_failing_destroy(f);
}

static void test_failing_persistent(void **state)
{
    fixture *fx = *state;
    mr_failing *f = mkf(fx, (mr_failing_options){.fail_at = 3, .persistent = true});
    assert_int_equal(run_pattern(f, 6, small, 1), 0x3c); /* 3, 4, 5, 6 */
    assert_int_equal(mr_failing_requests(f), 6);
    assert_int_equal(mr_failing_failures(f), 4);
    assert_int_equal(fx->u.calls, 2);
    mr_failing_destroy(f);
}

static void test_failing_every(void **state)
{
    fixture *fx = *state;
    mr_failing *f = mkf(fx, (mr_failing_options){.every = 3});
    assert_int_equal(run_pattern(f, 10, small, 1), 0x124); /* 3, 6, 9 */
    assert_int_equal(mr_failing_failures(f), 3);
    mr_failing_destroy(f);
    f = mkf(fx, (mr_failing_options){.every = 1});
    assert_int_equal(run_pattern(f, 4, small, 1), 0xf);
    assert_int_equal(mr_failing_failures(f), 4);
    mr_failing_destroy(f);
}

static void test_failing_above(void **state)
{
    fixture *fx = *state;
    mr_failing *f = mkf(fx, (mr_failing_options){.above = 64});
    const size_t sizes[] = {64, 65, 0, SIZE_MAX, 1};
    assert_int_equal(run_pattern(f, 5, sizes, 5), 0xa); /* 65 and SIZE_MAX */
    assert_int_equal(mr_failing_requests(f), 5);
    assert_int_equal(mr_failing_failures(f), 2);
    assert_int_equal(fx->u.calls, 3);
    mr_failing_destroy(f);
}

/* Rules combine with "or"; each request is numbered whatever fails it. */
static void test_failing_combined_rules(void **state)
{
    fixture *fx = *state;
    const size_t sizes[] = {8, 8, 200, 8, 8, 8, 8, 8, 8, 8};
    mr_failing *f = mkf(fx, (mr_failing_options){.fail_at = 2, .every = 5, .above = 100});
    /* 2 (fail_at), 3 (above), 5 and 10 (every) */
    assert_int_equal(run_pattern(f, 10, sizes, 10), 0x216);
    assert_int_equal(mr_failing_requests(f), 10);
    assert_int_equal(mr_failing_failures(f), 4);
    mr_failing_destroy(f);

    f = mkf(fx, (mr_failing_options){.fail_at = 8, .persistent = true, .every = 3, .above = 100});
    /* 3 (above and every), 6 (every), 8.. (persistent) */
    assert_int_equal(run_pattern(f, 10, sizes, 10), 0x3a4);
    assert_int_equal(mr_failing_failures(f), 5);
    mr_failing_destroy(f);
}

/* The documented generator, written out independently. */
static bool expected_draw(uint64_t *s, double p)
{
    uint64_t x = mrt_rand(s); /* splitmix64, support.h */
    return (double)(x >> 11) * 0x1.0p-53 < p;
}

static void test_failing_random_reproducible(void **state)
{
    fixture *fx = *state;
    enum { N = 64 };
    uint64_t want = 0, s = 42;
    for (unsigned i = 0; i < N; i++)
        if (expected_draw(&s, 0.3))
            want |= (uint64_t)1 << i;
    mr_failing *f = mkf(fx, (mr_failing_options){.probability = 0.3, .seed = 42});
    uint64_t got = run_pattern(f, N, small, 1);
    assert_int_equal(got, want);
    assert_int_equal(mr_failing_failures(f), (unsigned long)__builtin_popcountll(want));
    assert_true(want != 0 && want != UINT64_MAX);
    mr_failing_destroy(f);
    /* the same seed replays, another seed does not */
    f = mkf(fx, (mr_failing_options){.probability = 0.3, .seed = 42});
    assert_int_equal(run_pattern(f, N, small, 1), want);
    mr_failing_destroy(f);
    f = mkf(fx, (mr_failing_options){.probability = 0.3, .seed = 43});
    assert_int_not_equal(run_pattern(f, N, small, 1), want);
    mr_failing_destroy(f);

    /* every request draws, so other rules do not shift the sequence */
    f = mkf(fx, (mr_failing_options){.probability = 0.3, .seed = 42, .fail_at = 5, .above = 100});
    const size_t sizes[] = {8, 8, 8, 8, 8, 8, 8, 500};
    uint64_t above = 0;
    for (unsigned i = 7; i < N; i += 8)
        above |= (uint64_t)1 << i;
    assert_int_equal(run_pattern(f, N, sizes, 8), want | 0x10 | above);
    mr_failing_destroy(f);

    f = mkf(fx, (mr_failing_options){.probability = 1.0, .seed = 9});
    assert_int_equal(run_pattern(f, N, small, 1), UINT64_MAX);
    mr_failing_destroy(f);
}

/* Refusals of the upstream are not injected failures; figures unchanged. */
static void test_failing_upstream_refusal(void **state)
{
    fixture *fx = *state;
    mr_failing *f = mkf(fx, (mr_failing_options){.fail_at = 100});
    mr_stats before = stats_of(fstats, f);
    fx->u.fail_at = 1;
    errno = 0;
    assert_null(mr_allocate(mr_failing_resource(f), 8, 8));
    assert_int_equal(errno, ENOMEM);
    assert_int_equal(mr_failing_requests(f), 1);
    assert_int_equal(mr_failing_failures(f), 0);
    mr_stats after = stats_of(fstats, f);
    assert_same_stats(before, after);
    void *p = mr_allocate(mr_failing_resource(f), 8, 8);
    int local;
    mr_deallocate(mr_failing_resource(f), &local, 16, 8);
    assert_debug_reported(fx, 1);
    mr_deallocate(mr_failing_resource(f), p, 8, 8);
    assert_stats(stats_of(fstats, f), 0, 8, 1, 1);
    mr_failing_destroy(f);
}

/* ---- tracking ---- */

static void test_tracking_records_and_frees(void **state)
{
    fixture *fx = *state;
    mr_tracking *t = mr_tracking_create(&fx->u.base);
    mr_resource *r = mr_tracking_resource(t);
    assert_int_equal(mr_tracking_outstanding(t), 0);
    void *a = mr_allocate(r, 24, 8);
    void *b = mr_allocate(r, 100, 64);
    void *z = mr_allocate(r, 0, 1);
    assert_int_equal(mr_tracking_outstanding(t), 3);
    assert_stats(stats_of(tstats, t), 124, 124, 3, 0);
    assert_int_equal(fx->u.allocations, 3); /* the table is not the upstream's */
    assert_true(mr_tracking_check(t));
    mr_deallocate(r, b, 100, 64);
    mr_deallocate(r, z, 0, 1);
    assert_int_equal(mr_tracking_outstanding(t), 1);
    assert_stats(stats_of(tstats, t), 24, 124, 3, 2);
    mr_deallocate(r, a, 24, 8);
    assert_int_equal(mr_tracking_outstanding(t), 0);
    assert_true(mr_tracking_check(t));
    mr_tracking_destroy(t);
    assert_int_equal(fx->nseen, 0);
}

static void test_tracking_report(void **state)
{
    fixture *fx = *state;
    mr_tracking *t = mr_tracking_create(&fx->u.base);
    mr_resource *r = mr_tracking_resource(t);
    void *a = mr_allocate(r, 24, 8);
    void *b = mr_allocate(r, 100, 64);
    void *z = mr_allocate(r, 0, 1);
    mr_deallocate(r, b, 100, 64);

    FILE *f = tmpfile();
    assert_non_null(f);
    assert_int_equal(mr_tracking_report(t, f), 2);
    char want[512], got[512] = {0};
    snprintf(want, sizeof want,
             "memres: mr_tracking %p: 2 allocations outstanding, 24 bytes\n"
             "memres:   #1 %p 24 bytes align 8\n"
             "memres:   #3 %p 0 bytes align 1\n",
             (void *)t, a, z);
    rewind(f);
    size_t n = fread(got, 1, sizeof got - 1, f);
    fclose(f);
    assert_int_equal(n, strlen(want));
    assert_string_equal(got, want);

    mr_deallocate(r, a, 24, 8);
    mr_deallocate(r, z, 0, 1);
    assert_int_equal(mr_tracking_report(t, NULL), 0); /* the heading, to stderr */
    mr_tracking_destroy(t);
}

/* The report and the leaks come in sequence order, whatever the table's. */
static void test_tracking_report_in_sequence_order(void **state)
{
    fixture *fx = *state;
    enum { N = 200 };
    mr_tracking *t = mr_tracking_create(&fx->u.base);
    mr_resource *r = mr_tracking_resource(t);
    void *p[N];
    for (size_t i = 0; i < N; i++)
        p[i] = mr_allocate(r, i, 8);
    for (size_t i = 0; i < N; i += 2)
        mr_deallocate(r, p[i], i, 8);
    FILE *f = tmpfile();
    assert_non_null(f);
    assert_int_equal(mr_tracking_report(t, f), N / 2);
    rewind(f);
    char line[256];
    assert_non_null(fgets(line, sizeof line, f)); /* heading */
    for (size_t i = 1; i < N; i += 2) {
        char want[128];
        snprintf(want, sizeof want, "memres:   #%zu %p %zu bytes align 8\n", i + 1, p[i], i);
        assert_non_null(fgets(line, sizeof line, f));
        assert_string_equal(line, want);
    }
    assert_null(fgets(line, sizeof line, f));
    fclose(f);
    for (size_t i = 1; i < N; i += 2)
        mr_deallocate(r, p[i], i, 8);
    mr_tracking_destroy(t);
    assert_int_equal(fx->nseen, 0);
}

static void test_tracking_leaks_reported_at_destroy(void **state)
{
    fixture *fx = *state;
    mr_tracking *t = mr_tracking_create(&fx->u.base);
    mr_resource *r = mr_tracking_resource(t);
    void *a = mr_allocate(r, 24, 8);
    void *b = mr_allocate(r, 100, 64);
    void *c = mr_allocate(r, 7, 1);
    mr_deallocate(r, b, 100, 64);
    mr_tracking_destroy(t); /* a and c leak: reported once each, then freed */
    assert_int_equal(fx->nseen, 2);
    assert_string_equal(fx->what[0], "mr_tracking: leak: allocation #1 (24 bytes, align 8) not freed before destroy");
    assert_ptr_equal(fx->ptr[0], a);
    assert_string_equal(fx->what[1], "mr_tracking: leak: allocation #3 (7 bytes, align 1) not freed before destroy");
    assert_ptr_equal(fx->ptr[1], c);
    assert_int_equal(strncmp(fx->what[0], MR_TRACKING_LEAK ": ", strlen(MR_TRACKING_LEAK) + 2), 0);
    assert_int_equal(fx->u.deallocations, 3); /* the teardown checks sizes */
}

static void test_tracking_double_free(void **state)
{
    fixture *fx = *state;
    mr_tracking *t = mr_tracking_create(&fx->u.base);
    mr_resource *r = mr_tracking_resource(t);
    void *a = mr_allocate(r, 24, 8);
    mr_deallocate(r, a, 24, 8);
    assert_int_equal(fx->nseen, 0);
    mr_deallocate(r, a, 24, 8);
    assert_int_equal(fx->nseen, 1);
    assert_string_equal(fx->what[0], "mr_tracking: double free: allocation #1 (24 bytes, align 8) was already freed");
    assert_ptr_equal(fx->ptr[0], a);
    assert_int_equal(fx->u.deallocations, 1); /* not forwarded */
    assert_int_equal(mr_tracking_outstanding(t), 0);
    assert_stats(stats_of(tstats, t), 0, 24, 1, 1);
    assert_true(mr_tracking_check(t));
    mr_tracking_destroy(t);
    assert_int_equal(fx->nseen, 1);
}

static void test_tracking_unknown_pointer(void **state)
{
    fixture *fx = *state;
    mr_tracking *t = mr_tracking_create(&fx->u.base);
    mr_resource *r = mr_tracking_resource(t);
    int local;
    mr_deallocate(r, &local, 4, 4); /* before any table exists */
    assert_int_equal(fx->nseen, 1);
    assert_string_equal(fx->what[0], "mr_tracking: unknown pointer: not an outstanding allocation of this adaptor "
                                     "(deallocate with 4 bytes, align 4)");
    assert_ptr_equal(fx->ptr[0], &local);
    void *a = mr_allocate(r, 16, 16);
    mr_deallocate(r, (char *)a + 16, 16, 16); /* inside nothing tracked */
    assert_int_equal(fx->nseen, 2);
    assert_ptr_equal(fx->ptr[1], (char *)a + 16);
    assert_int_equal(fx->u.deallocations, 0);
    assert_int_equal(fx->u.bad_deallocations, 0);
    assert_int_equal(mr_tracking_outstanding(t), 1);
    mr_deallocate(r, a, 16, 16);
    mr_tracking_destroy(t);
    assert_int_equal(fx->nseen, 2);
}

static void test_tracking_size_mismatch(void **state)
{
    fixture *fx = *state;
    mr_tracking *t = mr_tracking_create(&fx->u.base);
    mr_resource *r = mr_tracking_resource(t);
    void *a = mr_allocate(r, 24, 8);
    mr_stats before = stats_of(tstats, t);
    mr_deallocate(r, a, 32, 8);
    assert_int_equal(fx->nseen, 1);
    assert_string_equal(fx->what[0],
                        "mr_tracking: size mismatch: deallocate with 32 bytes, allocation #1 has 24 bytes (align 8)");
    assert_ptr_equal(fx->ptr[0], a);
    assert_int_equal(fx->u.deallocations, 0); /* ignored: still outstanding */
    assert_int_equal(mr_tracking_outstanding(t), 1);
    mr_stats after = stats_of(tstats, t);
    assert_same_stats(before, after);
    mr_deallocate(r, a, 24, 8); /* the right call still works */
    assert_int_equal(fx->nseen, 1);
    mr_tracking_destroy(t);
}

static void test_tracking_alignment_mismatch(void **state)
{
    fixture *fx = *state;
    mr_tracking *t = mr_tracking_create(&fx->u.base);
    mr_resource *r = mr_tracking_resource(t);
    void *a = mr_allocate(r, 24, 64);
    mr_deallocate(r, a, 24, 8);
    assert_int_equal(fx->nseen, 1);
    assert_string_equal(
        fx->what[0], "mr_tracking: alignment mismatch: deallocate with align 8, allocation #1 has align 64 (24 bytes)");
    assert_ptr_equal(fx->ptr[0], a);
    mr_deallocate(r, a, 16, 32);
    assert_int_equal(fx->nseen, 2);
    assert_string_equal(fx->what[1], "mr_tracking: size and alignment mismatch: deallocate with 16 bytes, align 32; "
                                     "allocation #1 has 24 bytes, align 64");
    assert_int_equal(fx->u.deallocations, 0);
    assert_int_equal(mr_tracking_outstanding(t), 1);
    mr_deallocate(r, a, 24, 64);
    assert_int_equal(fx->nseen, 2);
    assert_int_equal(mr_tracking_outstanding(t), 0);
    mr_tracking_destroy(t);
}

/* An upstream may return one address twice (an arena's size-0 requests):
 * separate allocations, each freed once without complaint. */
static void test_tracking_duplicate_pointers(void **state)
{
    fixture *fx = *state;
    mr_arena_options ao = {.upstream = &fx->u.base};
    mr_arena *arena = mr_arena_create(&ao);
    assert_non_null(arena);
    mr_tracking *t = mr_tracking_create(mr_arena_resource(arena));
    mr_resource *r = mr_tracking_resource(t);
    void *x = mr_allocate(r, 0, 8);
    void *y = mr_allocate(r, 0, 8);
    assert_non_null(x);
    assert_non_null(y);
    assert_int_equal(mr_tracking_outstanding(t), 2);
    assert_true(mr_tracking_check(t));
    mr_deallocate(r, y, 0, 8);
    mr_deallocate(r, x, 0, 8);
    assert_int_equal(mr_tracking_outstanding(t), 0);
    assert_int_equal(fx->nseen, 0);
    mr_deallocate(r, x, 0, 8);
    assert_int_equal(fx->nseen, 1);
    assert_int_equal(strncmp(fx->what[0], MR_TRACKING_DOUBLE_FREE ": ", strlen(MR_TRACKING_DOUBLE_FREE) + 2), 0);
    mr_tracking_destroy(t);
    mr_arena_destroy(arena);
}

/* Many allocations: the table grows and stays consistent. */
static void test_tracking_growth(void **state)
{
    fixture *fx = *state;
    enum { N = 1000 };
    mr_tracking *t = mr_tracking_create(&fx->u.base);
    mr_resource *r = mr_tracking_resource(t);
    void *p[N];
    for (size_t round = 0; round < 2; round++) {
        for (size_t i = 0; i < N; i++)
            p[i] = mr_allocate(r, i % 64, 8);
        assert_int_equal(mr_tracking_outstanding(t), N);
        assert_true(mr_tracking_check(t));
        for (size_t i = 0; i < N; i += 2)
            mr_deallocate(r, p[i], i % 64, 8);
        assert_int_equal(mr_tracking_outstanding(t), N / 2);
        assert_true(mr_tracking_check(t));
        for (size_t i = 1; i < N; i += 2)
            mr_deallocate(r, p[i], i % 64, 8);
        assert_int_equal(mr_tracking_outstanding(t), 0);
        assert_true(mr_tracking_check(t));
    }
    assert_stats(stats_of(tstats, t), 0, (N / 64) * (63 * 64 / 2) + (N % 64) * (N % 64 - 1) / 2, 2 * N, 2 * N);
    mr_tracking_destroy(t);
    assert_int_equal(fx->nseen, 0);
}

/* Freed records are kept to recognise a double free, and dropped to make
 * room: with few allocations outstanding, the table does not grow however
 * many distinct addresses come and go.  The arena upstream never reuses the
 * address of an allocation that is not its newest, so every `a` below is a
 * new address that stays freed. */
static void test_tracking_drops_freed_records(void **state)
{
    fixture *fx = *state;
    enum { N = 2000 };
    mrt_upstream meta;
    mrt_upstream_init(&meta);
    mr_arena_options ao = {.upstream = &fx->u.base};
    mr_arena *arena = mr_arena_create(&ao);
    mr_set_default_resource(&meta.base);
    mr_tracking *t = mr_tracking_create(mr_arena_resource(arena));
    mr_set_default_resource(NULL);
    mr_resource *r = mr_tracking_resource(t);
    size_t header = meta.bytes, table = 0;
    void *first = NULL, *a = NULL;
    for (size_t i = 0; i < N; i++) {
        a = mr_allocate(r, 16, 16);
        void *b = mr_allocate(r, 16, 16);
        if (i == 0) {
            first = a;
            table = meta.bytes - header;
        }
        mr_deallocate(r, a, 16, 16);
        mr_deallocate(r, b, 16, 16);
        assert_int_equal(meta.bytes - header, table); /* never grows */
    }
    assert_true(mr_tracking_check(t));
    assert_int_equal(mr_tracking_outstanding(t), 0);
    assert_true(meta.allocations > 2); /* it was rebuilt, at the same size */
    assert_int_equal(fx->nseen, 0);
    mr_deallocate(r, a, 16, 16); /* freed since the last rebuild: remembered */
    assert_int_equal(fx->nseen, 1);
    char want[128];
    snprintf(want, sizeof want, "mr_tracking: double free: allocation #%d (16 bytes, align 16) was already freed",
             2 * N - 1);
    assert_string_equal(fx->what[0], want);
    mr_deallocate(r, first, 16, 16); /* dropped long ago */
    assert_int_equal(fx->nseen, 2);
    assert_string_equal(fx->what[1], "mr_tracking: unknown pointer: not an outstanding allocation of this adaptor "
                                     "(deallocate with 16 bytes, align 16)");
    mr_tracking_destroy(t);
    mr_arena_destroy(arena);
    mrt_assert_balanced(&meta);
    mrt_upstream_fini(&meta);
}

/* The table comes from the default resource; when it cannot grow, the
 * allocation fails with ENOMEM before the upstream is asked, and nothing
 * changes. */
static void test_tracking_table_growth_failure(void **state)
{
    fixture *fx = *state;
    mrt_upstream meta;
    mrt_upstream_init(&meta);
    mr_set_default_resource(&meta.base);
    mr_tracking *t = mr_tracking_create(&fx->u.base);
    mr_set_default_resource(NULL);
    assert_non_null(t);
    mr_resource *r = mr_tracking_resource(t);
    assert_int_equal(meta.allocations, 1); /* the header */

    void *p[200];
    size_t n = 0, growths = 0;
    while (growths < 3) {
        /* arm: the next table request fails */
        meta.fail_at = meta.calls + 1;
        mr_stats before = stats_of(tstats, t);
        size_t calls = fx->u.calls;
        errno = 0;
        void *q = mr_allocate(r, 8, 8);
        if (q == NULL) {
            assert_int_equal(errno, ENOMEM);
            assert_int_equal(meta.injected, growths + 1);
            assert_int_equal(fx->u.calls, calls); /* upstream untouched */
            assert_int_equal(mr_tracking_outstanding(t), n);
            mr_stats after = stats_of(tstats, t);
            assert_same_stats(before, after);
            assert_true(mr_tracking_check(t));
            growths++;
            meta.fail_at = 0;
            q = mr_allocate(r, 8, 8); /* disarmed: it grows */
            assert_non_null(q);
        }
        assert_true(n < 200);
        p[n++] = q;
    }
    assert_int_equal(meta.injected, 3);
    for (size_t i = 0; i < n; i++)
        mr_deallocate(r, p[i], 8, 8);
    mr_tracking_destroy(t);
    mrt_assert_balanced(&meta);
    mrt_upstream_fini(&meta);
    assert_int_equal(fx->nseen, 0);
}

static void test_tracking_upstream_failure_changes_nothing(void **state)
{
    fixture *fx = *state;
    mr_tracking *t = mr_tracking_create(&fx->u.base);
    mr_resource *r = mr_tracking_resource(t);
    void *a = mr_allocate(r, 8, 8);
    mr_stats before = stats_of(tstats, t);
    fx->u.fail_at = fx->u.calls + 1;
    errno = 0;
    assert_null(mr_allocate(r, 8, 8));
    assert_int_equal(errno, ENOMEM);
    mr_stats after = stats_of(tstats, t);
    assert_same_stats(before, after);
    assert_int_equal(mr_tracking_outstanding(t), 1);
    void *b = mr_allocate(r, 8, 8);
    FILE *f = tmpfile();
    assert_non_null(f);
    assert_int_equal(mr_tracking_report(t, f), 2);
    rewind(f);
    char line[256], want[128];
    assert_non_null(fgets(line, sizeof line, f));
    assert_non_null(fgets(line, sizeof line, f));
    assert_non_null(fgets(line, sizeof line, f));
    snprintf(want, sizeof want, "memres:   #2 %p 8 bytes align 8\n", b); /* the failure took no number */
    assert_string_equal(line, want);
    fclose(f);
    mr_deallocate(r, a, 8, 8);
    mr_deallocate(r, b, 8, 8);
    mr_tracking_destroy(t);
}

/* ---- threads: each adaptor serialises its upstream ---- */

enum { THREADS = 4, PER_THREAD = 2000 };

static void *hammer(void *arg)
{
    mr_resource *r = arg;
    void *held[8] = {0};
    for (size_t i = 0; i < PER_THREAD; i++) {
        size_t k = i % 8, size = 8 + k * 8;
        if (held[k] != NULL)
            mr_deallocate(r, held[k], size, 8);
        held[k] = mr_allocate(r, size, 8);
    }
    for (size_t k = 0; k < 8; k++)
        if (held[k] != NULL)
            mr_deallocate(r, held[k], 8 + k * 8, 8);
    return NULL;
}

static void test_threads(void **state)
{
    fixture *fx = *state;
    /* tracking -> counting -> failing -> limiting -> u (not thread-safe) */
    mr_limiting *l = mr_limiting_create(&fx->u.base, SIZE_MAX);
    mr_failing *f = mr_failing_create(&(mr_failing_options){.upstream = mr_limiting_resource(l), .every = 7});
    mr_counting *c = mr_counting_create(mr_failing_resource(f));
    mr_tracking *t = mr_tracking_create(mr_counting_resource(c));
    pthread_t th[THREADS];
    for (size_t i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, hammer, mr_tracking_resource(t)), 0);
    for (size_t i = 0; i < THREADS; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
    unsigned long requests = mr_failing_requests(f), failures = mr_failing_failures(f);
    assert_int_equal(requests, THREADS * PER_THREAD);
    assert_int_equal(failures, requests / 7);
    mr_stats sc = stats_of(cstats, c), st = stats_of(tstats, t), sl = stats_of(lstats, l);
    assert_int_equal(sc.allocations, requests - failures);
    assert_int_equal(st.allocations, requests - failures);
    assert_int_equal(sl.allocations, requests - failures);
    assert_int_equal(sc.upstream_deallocations, sc.allocations);
    assert_int_equal(st.in_use, 0);
    assert_int_equal(mr_tracking_outstanding(t), 0);
    assert_true(mr_tracking_check(t));
    assert_int_equal(fx->u.allocations, requests - failures);
    assert_int_equal(fx->nseen, 0);
    mr_tracking_destroy(t);
    mr_counting_destroy(c);
    mr_failing_destroy(f);
    mr_limiting_destroy(l);
}

/* ---- stacking: arena and pools over tracking over failing, swept ---- */

/* Uses an arena and a pools over r; returns whether a call failed (each
 * failure must say ENOMEM).  Frees everything before it returns. */
static bool stacked_scenario(mr_resource *r)
{
    bool failed = false;
    mr_arena_options ao = {.upstream = r, .block_size = 256, .max_block_size = 1024};
    errno = 0;
    mr_arena *a = mr_arena_create(&ao);
    if (a == NULL) {
        assert_int_equal(errno, ENOMEM);
        failed = true;
    }
    mr_pools_options po = {.upstream = r, .max_blocks_per_chunk = 4};
    errno = 0;
    mr_pools *p = mr_pools_create(&po);
    if (p == NULL) {
        assert_int_equal(errno, ENOMEM);
        failed = true;
    }
    if (a != NULL) {
        for (size_t i = 0; i < 40 && !failed; i++) {
            errno = 0;
            void *x = mr_arena_alloc(a, 24 + (i % 5) * 40);
            if (x == NULL) {
                assert_int_equal(errno, ENOMEM);
                failed = true;
            }
        }
        errno = 0;
        if (!failed && mr_arena_alloc(a, 5000) == NULL) { /* a dedicated block */
            assert_int_equal(errno, ENOMEM);
            failed = true;
        }
    }
    if (p != NULL && !failed) {
        void *blocks[30] = {0};
        for (size_t i = 0; i < 30 && !failed; i++) {
            errno = 0;
            blocks[i] = mr_pools_alloc(p, 16 + (i % 3) * 48, 16);
            if (blocks[i] == NULL) {
                assert_int_equal(errno, ENOMEM);
                failed = true;
            }
        }
        errno = 0;
        void *big = failed ? NULL : mr_pools_alloc(p, 100000, 8); /* straight upstream */
        if (!failed && big == NULL) {
            assert_int_equal(errno, ENOMEM);
            failed = true;
        }
        for (size_t i = 0; i < 30; i += 2)
            mr_pools_free(p, blocks[i], 16 + (i % 3) * 48, 16);
        if (big != NULL)
            mr_pools_free(p, big, 100000, 8);
    }
    mr_pools_destroy(p);
    mr_arena_destroy(a);
    return failed;
}

static size_t sweep_stack(fixture *fx, bool persistent)
{
    size_t n;
    for (n = 1; n < 10000; n++) {
        mrt_upstream u;
        mrt_upstream_init(&u);
        mr_failing *f =
            mr_failing_create(&(mr_failing_options){.upstream = &u.base, .fail_at = n, .persistent = persistent});
        mr_tracking *t = mr_tracking_create(mr_failing_resource(f));
        assert_non_null(f);
        assert_non_null(t);
        bool failed = stacked_scenario(mr_tracking_resource(t));
        unsigned long injected = mr_failing_failures(f);
        assert_int_equal(failed, injected != 0);
        if (mr_tracking_outstanding(t) != 0)
            mr_tracking_report(t, stderr);
        assert_int_equal(mr_tracking_outstanding(t), 0);
        assert_true(mr_tracking_check(t));
        assert_int_equal(fx->nseen, 0);
        mr_tracking_destroy(t);
        mr_failing_destroy(f);
        assert_int_equal(fx->nseen, 0);
        mrt_assert_balanced(&u);
        mrt_upstream_fini(&u);
        if (injected == 0)
            break;
    }
    size_t points = n - 1;
    printf("# stacked sweep (%s): %zu failure points, 0 leaks\n", persistent ? "persistent" : "once", points);
    return points;
}

static void test_stacked_fault_sweep(void **state)
{
    fixture *fx = *state;
    size_t once = sweep_stack(fx, false);
    size_t from = sweep_stack(fx, true);
    assert_true(once >= 10);
    assert_int_equal(once, from);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        adaptor_test(test_create_failure_is_null_enomem),
        adaptor_test(test_destroy_null_is_noop),
        adaptor_test(test_null_upstream_is_default_at_create),
        adaptor_test(test_views_equal_only_themselves),
        adaptor_test(test_counting_exact_figures),
        adaptor_test(test_counting_upstream_failure_changes_nothing),
        adaptor_test(test_counting_bad_deallocate_ignored),
        adaptor_test(test_limiting_boundary),
        adaptor_test(test_limiting_extremes),
        adaptor_test(test_limiting_upstream_failure_changes_nothing),
        adaptor_test(test_failing_bad_options),
        adaptor_test(test_failing_null_options_pass_through),
        adaptor_test(test_failing_fail_at),
        adaptor_test(test_failing_persistent),
        adaptor_test(test_failing_every),
        adaptor_test(test_failing_above),
        adaptor_test(test_failing_combined_rules),
        adaptor_test(test_failing_random_reproducible),
        adaptor_test(test_failing_upstream_refusal),
        adaptor_test(test_tracking_records_and_frees),
        adaptor_test(test_tracking_report),
        adaptor_test(test_tracking_report_in_sequence_order),
        adaptor_test(test_tracking_leaks_reported_at_destroy),
        adaptor_test(test_tracking_double_free),
        adaptor_test(test_tracking_unknown_pointer),
        adaptor_test(test_tracking_size_mismatch),
        adaptor_test(test_tracking_alignment_mismatch),
        adaptor_test(test_tracking_duplicate_pointers),
        adaptor_test(test_tracking_growth),
        adaptor_test(test_tracking_drops_freed_records),
        adaptor_test(test_tracking_table_growth_failure),
        adaptor_test(test_tracking_upstream_failure_changes_nothing),
        adaptor_test(test_threads),
        adaptor_test(test_stacked_fault_sweep),
    };
    return cmocka_run_group_tests_name("adaptors", tests, NULL, NULL);
}
