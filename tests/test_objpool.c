/* SPDX-License-Identifier: MIT */
/* tests/test_objpool.c -- the object pool: every clause of objpool.h, bad
 * input, reuse without upstream traffic, LIFO reuse, alignment 1..4096, the
 * memory overhead bound, a fault sweep, a seeded stress test against a
 * shadow model, the resource view, the checker finding corruption, hardened
 * free lists (MR_HARDENED builds: an object pool's and a size-class pool's)
 * that a use-after-free write cannot steer, and (in ASan builds) poisoning.
 *
 * Every pool here sits on an mrt_upstream (unless a test says otherwise), so
 * the pool's own stats are compared with what the upstream saw, and every
 * test ends with the upstream balanced.
 */
#include "support.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if MR_SANITIZED
#  include <sanitizer/asan_interface.h>
#  include <sys/wait.h>
#  include <unistd.h>
#  include <fcntl.h>
#endif

/* ---- helpers ---- */

static mr_objpool *mk(mrt_upstream *u, size_t size, size_t align, size_t per_block)
{
    mr_objpool_options o = {.upstream = &u->base, .objects_per_block = per_block};
    return mr_objpool_create(size, align, &o);
}

static mr_stats stats_of(const mr_objpool *p)
{
    mr_stats s;
    memset(&s, 0xCC, sizeof s);
    mr_objpool_stats(p, &s);
    return s;
}

/* The pool is the only user of u: its stats must agree with u's counts. */
#define assert_stats_match(p, u)          \
    do {                                  \
        mr_stats s_ = stats_of(p);        \
        mrt_assert_stats_agree(&s_, (u)); \
    } while (0)

/* Same state before (a) and after (b) a failed call.  Only the history
 * counters may move: a failed call may have taken and given back the block
 * directory, which upstream_* and peak_held record. */
#define assert_same_state(a, b)                                                  \
    do {                                                                         \
        assert_int_equal((a).in_use, (b).in_use);                                \
        assert_int_equal((a).held, (b).held);                                    \
        assert_int_equal((a).allocations, (b).allocations);                      \
        assert_true((b).peak_held >= (a).peak_held);                             \
        assert_int_equal((a).upstream_allocations - (a).upstream_deallocations, \
                         (b).upstream_allocations - (b).upstream_deallocations); \
    } while (0)

static bool aligned(const void *p, size_t align) { return ((uintptr_t)p & (align - 1)) == 0; }

/* Bytes of the largest upstream block (the blocks; header and directory are smaller in these tests). */
static size_t count_upstream_blocks(const mrt_upstream *u, size_t size, size_t align)
{
    size_t n = 0;
    for (size_t i = 0; i < u->nlive; i++)
        if (u->live[i].size == size && u->live[i].align == align)
            n++;
    return n;
}

/* ---- bad input ---- */

static void test_bad_alignment(void **state)
{
    mrt_upstream *u = *state;
    const size_t bad[] = {0, 3, 5, 6, 12, 24, 100, 4095, 4097, SIZE_MAX, SIZE_MAX / 2};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mrt_assert_fails(mk(u, 16, bad[i], 0), EINVAL);
    }
    assert_int_equal(u->calls, 0);
}

static void test_bad_size(void **state)
{
    mrt_upstream *u = *state;
    struct {
        size_t size, align, per_block;
    } bad[] = {
        {0, 8, 0},                                   /* size 0 */
        {0, 1, 1},
        {SIZE_MAX, 8, 1},                            /* rounding wraps */
        {SIZE_MAX - 6, 8, 1},
        {(size_t)PTRDIFF_MAX, 1, 1},                 /* rounds above PTRDIFF_MAX */
        {(size_t)PTRDIFF_MAX + 1, 8, 1},             /* above PTRDIFF_MAX */
        {(size_t)1 << 40, 8, (size_t)1 << 30},       /* size * per_block overflows */
        {8, 8, SIZE_MAX},
        {8, 8, SIZE_MAX / 8 + 1},                    /* exactly 2^64 */
        {16, 8, (size_t)PTRDIFF_MAX / 16 + 1},       /* just above PTRDIFF_MAX */
        {8, (size_t)1 << 62, 0},                     /* 2^62 * 1024 overflows */
        {1, (size_t)1 << 63, 1},                     /* object above PTRDIFF_MAX */
        {(size_t)1 << 20, 8, (size_t)1 << 43},       /* 2^63 bytes */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        errno = 0;
        mr_objpool *p = mk(u, bad[i].size, bad[i].align, bad[i].per_block);
        if (p != NULL)
            fprintf(stderr, "case %zu accepted\n", i);
        assert_null(p);
        assert_int_equal(errno, EINVAL);
    }
    assert_int_equal(u->calls, 0);

    /* A block that fits in size_t but that no upstream gives: create
     * succeeds (no block yet); the allocation fails cleanly. */
    u->limit = (size_t)1 << 30;
    mr_objpool *p = mk(u, (size_t)1 << 20, 8, (size_t)1 << 42);
    assert_non_null(p);
    mr_stats before = stats_of(p);
    mrt_assert_fails(mr_objpool_alloc(p), ENOMEM);
    mr_stats after = stats_of(p);
    assert_same_state(before, after);
    assert_true(mr_objpool_check(p));
    assert_stats_match(p, u);
    mr_objpool_destroy(p);
}

static void test_create_upstream_fails(void **state)
{
    mrt_upstream *u = *state;
    u->fail_at = 1;
    mrt_assert_fails(mk(u, 40, 8, 0), ENOMEM);
    assert_int_equal(u->calls, 1);
    mrt_assert_balanced(u);

    mr_objpool_options o = {.upstream = mr_null_resource()};
    mrt_assert_fails(mr_objpool_create(40, 8, &o), ENOMEM);
}

static void test_destroy_null(void **state)
{
    (void)state;
    mr_objpool_destroy(NULL); /* no-op */
}

/* ---- sizes, defaults, basic use ---- */

static void test_object_size_rounding(void **state)
{
    mrt_upstream *u = *state;
    struct {
        size_t size, align, expect;
    } t[] = {
        {1, 1, 8},     {3, 2, 8},       {8, 1, 8},       {9, 1, 16},     {12, 4, 16},
        {40, 8, 40},   {56, 8, 56},     {24, 16, 32},    {100, 64, 128}, {1, 4096, 4096},
        {4096, 4096, 4096}, {4097, 4096, 8192}, {72, 1, 72}, {65, 32, 96},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        mr_objpool *p = mk(u, t[i].size, t[i].align, 5);
        assert_non_null(p);
        assert_int_equal(mr_objpool_object_size(p), t[i].expect);
        void *o = mr_objpool_alloc(p);
        assert_non_null(o);
        assert_true(aligned(o, t[i].align));
        assert_int_equal(stats_of(p).in_use, t[i].expect);
        /* the block is exactly per_block rounded objects */
        size_t a = t[i].align < sizeof(void *) ? sizeof(void *) : t[i].align;
        assert_int_equal(count_upstream_blocks(u, 5 * t[i].expect, a), 1);
        mr_objpool_destroy(p);
        mrt_assert_balanced(u);
    }
}

static void test_defaults(void **state)
{
    mrt_upstream *u = *state;
    mr_resource *old = mr_set_default_resource(&u->base);
    mr_objpool *p = mr_objpool_create(40, 8, NULL); /* default upstream, 1024 per block */
    mr_set_default_resource(old);
    assert_non_null(p);
    assert_int_equal(u->allocations, 1); /* the header only: no block before the first allocation */
    void *first = mr_objpool_alloc(p);
    assert_non_null(first);
    assert_int_equal(count_upstream_blocks(u, 1024 * 40, 8), 1);
    for (int i = 1; i < 1024; i++)
        assert_non_null(mr_objpool_alloc(p));
    size_t calls = u->calls;
    assert_non_null(mr_objpool_alloc(p)); /* 1025th: a second block */
    assert_int_equal(u->calls, calls + 1);
    assert_int_equal(count_upstream_blocks(u, 1024 * 40, 8), 2);
    assert_int_equal(stats_of(p).in_use, 1025 * 40);
    assert_true(mr_objpool_check(p));
    assert_stats_match(p, u);
    mr_objpool_destroy(p);
    mrt_assert_balanced(u);

    /* options with zero fields mean the defaults too */
    mr_objpool_options o = {.upstream = NULL};
    old = mr_set_default_resource(&u->base);
    p = mr_objpool_create(16, 16, &o);
    mr_set_default_resource(old);
    assert_non_null(p);
    assert_non_null(mr_objpool_alloc(p));
    assert_int_equal(count_upstream_blocks(u, 1024 * 16, 16), 1);
    mr_objpool_destroy(p);
}

static void test_alloc_free_basic(void **state)
{
    mrt_upstream *u = *state;
    mr_objpool *p = mk(u, 40, 8, 16);
    assert_non_null(p);
    enum { N = 40 };
    unsigned char *o[N];
    for (int i = 0; i < N; i++) {
        o[i] = mr_objpool_alloc(p);
        assert_non_null(o[i]);
        assert_true(aligned(o[i], 8));
        assert_true(mrt_upstream_owns(u, o[i]));
        memset(o[i], i + 1, 40);
    }
    for (int i = 0; i < N; i++)
        for (int j = 0; j < 40; j++)
            assert_int_equal(o[i][j], i + 1); /* no overlap */
    mr_stats s = stats_of(p);
    assert_int_equal(s.in_use, N * 40);
    assert_int_equal(s.allocations, N);
    assert_int_equal(count_upstream_blocks(u, 16 * 40, 8), 3);
    assert_stats_match(p, u);
    for (int i = 0; i < N; i += 4)
        mr_objpool_free(p, o[i]);
    s = stats_of(p);
    assert_int_equal(s.in_use, (N - N / 4) * 40);
    assert_int_equal(s.allocations, N);
    mr_objpool_free(p, NULL); /* no-op */
    mr_stats s2 = stats_of(p);
    assert_same_state(s, s2);
    assert_true(mr_objpool_check(p));
    mr_objpool_destroy(p); /* with live objects: everything goes back */
}

static void test_lifo_reuse(void **state)
{
    mrt_upstream *u = *state;
    mr_objpool *p = mk(u, 24, 8, 64);
    void *a = mr_objpool_alloc(p), *b = mr_objpool_alloc(p), *c = mr_objpool_alloc(p);
    assert_non_null(a), assert_non_null(b), assert_non_null(c);
    size_t calls = u->calls;
    mr_objpool_free(p, a);
    mr_objpool_free(p, b);
    mr_objpool_free(p, c);
    assert_int_equal(stats_of(p).in_use, 0);
    /* the most recently freed comes back first, even with room in the block */
    assert_ptr_equal(mr_objpool_alloc(p), c);
    assert_ptr_equal(mr_objpool_alloc(p), b);
    mr_objpool_free(p, c);
    assert_ptr_equal(mr_objpool_alloc(p), c);
    assert_ptr_equal(mr_objpool_alloc(p), a);
    /* free list empty: the next never-used object of the block */
    void *d = mr_objpool_alloc(p);
    assert_ptr_equal(d, (char *)c + 24);
    assert_int_equal(u->calls, calls);
    assert_int_equal(stats_of(p).allocations, 8);
    assert_true(mr_objpool_check(p));
    mr_objpool_destroy(p);
}

static int cmp_ptr(const void *x, const void *y)
{
    uintptr_t a = (uintptr_t) * (void *const *)x, b = (uintptr_t) * (void *const *)y;
    return (a > b) - (a < b);
}

static void test_reuse_without_upstream(void **state)
{
    mrt_upstream *u = *state;
    mr_objpool *p = mk(u, 48, 16, 8);
    enum { N = 100 };
    void *o[N], *again[N];
    for (int i = 0; i < N; i++)
        assert_non_null(o[i] = mr_objpool_alloc(p));
    size_t calls = u->calls, deallocs = u->deallocations;
    mr_stats s = stats_of(p);
    for (int i = 0; i < N; i++)
        mr_objpool_free(p, o[(i * 37) % N]); /* any order */
    assert_int_equal(stats_of(p).in_use, 0);
    assert_true(mr_objpool_check(p));
    for (int i = 0; i < N; i++)
        assert_non_null(again[i] = mr_objpool_alloc(p));
    assert_int_equal(u->calls, calls);
    assert_int_equal(u->deallocations, deallocs);
    mr_stats s2 = stats_of(p);
    assert_int_equal(s2.held, s.held);
    assert_int_equal(s2.in_use, N * 48);
    assert_int_equal(s2.allocations, 2 * N);
    /* the same set of objects, each once */
    qsort(o, N, sizeof o[0], cmp_ptr);
    qsort(again, N, sizeof again[0], cmp_ptr);
    for (int i = 0; i < N; i++)
        assert_ptr_equal(o[i], again[i]);
    assert_true(mr_objpool_check(p));
    mr_objpool_destroy(p);
}

/* ---- reset / release ---- */

static void test_reset(void **state)
{
    mrt_upstream *u = *state;
    mr_objpool *p = mk(u, 32, 32, 8);

    /* reset of an empty pool: nothing to do, no upstream call */
    mr_objpool_reset(p);
    assert_int_equal(u->calls, 1);
    assert_true(mr_objpool_check(p));

    enum { N = 100 }; /* 13 blocks of 8: 104 objects */
    void *o[N];
    for (int i = 0; i < N; i++)
        assert_non_null(o[i] = mr_objpool_alloc(p));
    for (int i = 0; i < N; i += 3)
        mr_objpool_free(p, o[i]);
    mr_stats s = stats_of(p);
    size_t calls = u->calls, deallocs = u->deallocations;
    mr_objpool_reset(p);
    mr_stats r = stats_of(p);
    assert_int_equal(r.in_use, 0);
    assert_int_equal(r.held, s.held);
    assert_int_equal(r.allocations, s.allocations);
    assert_int_equal(u->calls, calls);
    assert_int_equal(u->deallocations, deallocs);
    assert_true(mr_objpool_check(p));
    /* the same objects in the same order, no upstream call */
    for (int i = 0; i < N; i++)
        assert_ptr_equal(mr_objpool_alloc(p), o[i]);
    for (int i = N; i < 104; i++)
        assert_non_null(mr_objpool_alloc(p));
    assert_int_equal(u->calls, calls);
    /* beyond the kept blocks: a new block */
    assert_non_null(mr_objpool_alloc(p));
    assert_true(u->calls > calls);
    assert_int_equal(stats_of(p).in_use, 105 * 32);
    assert_true(mr_objpool_check(p));
    assert_stats_match(p, u);

    /* reset twice in a row, then use */
    mr_objpool_reset(p);
    mr_objpool_reset(p);
    assert_ptr_equal(mr_objpool_alloc(p), o[0]);
    assert_true(mr_objpool_check(p));
    mr_objpool_destroy(p);
}

static void test_release(void **state)
{
    mrt_upstream *u = *state;
    mr_objpool *p = mk(u, 40, 8, 8);
    mr_objpool_release(p); /* empty: no upstream call */
    assert_int_equal(u->calls, 1);
    assert_int_equal(u->deallocations, 0);
    size_t header = stats_of(p).held;
    assert_int_equal(header, u->bytes);

    for (int i = 0; i < 100; i++)
        assert_non_null(mr_objpool_alloc(p));
    assert_int_equal(mrt_upstream_live(u), 1 + 13 + 1); /* header, blocks, directory */
    mr_objpool_release(p);
    assert_int_equal(mrt_upstream_live(u), 1);
    assert_int_equal(u->bytes, header);
    mr_stats s = stats_of(p);
    assert_int_equal(s.held, header);
    assert_int_equal(s.in_use, 0);
    assert_int_equal(s.allocations, 100);
    assert_true(s.peak_held >= header + 13 * 8 * 40);
    assert_true(mr_objpool_check(p));
    assert_stats_match(p, u);

    /* usable again: blocks come from upstream anew */
    size_t calls = u->calls;
    void *o = mr_objpool_alloc(p);
    assert_non_null(o);
    assert_true(u->calls > calls);
    mr_objpool_free(p, o);
    mr_objpool_release(p);
    mr_objpool_release(p);
    assert_true(mr_objpool_check(p));
    assert_stats_match(p, u);
    mr_objpool_destroy(p);
}

/* ---- alignment ---- */

static void test_alignment(void **state)
{
    mrt_upstream *u = *state;
    for (size_t align = 1; align <= 4096; align *= 2) {
        const size_t sizes[] = {1, align / 2 + 1, align, align + 1, 3 * align - 1, 100};
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            size_t size = sizes[k];
            mr_objpool *p = mk(u, size, align, 5);
            assert_non_null(p);
            size_t os = mr_objpool_object_size(p);
            assert_true(os >= size && os >= sizeof(void *));
            assert_int_equal(os % align, 0);
            enum { N = 12 };
            unsigned char *o[N];
            for (int i = 0; i < N; i++) {
                o[i] = mr_objpool_alloc(p);
                assert_non_null(o[i]);
                assert_true(aligned(o[i], align));
                assert_true(aligned(o[i], sizeof(void *)));
                memset(o[i], 0x10 + i, os);
            }
            for (int i = 0; i < N; i++)
                for (size_t j = 0; j < os; j++)
                    assert_int_equal(o[i][j], 0x10 + i);
            /* blocks were requested with the alignment and exact size */
            size_t a = align < sizeof(void *) ? sizeof(void *) : align;
            assert_int_equal(count_upstream_blocks(u, 5 * os, a), 3);
            for (int i = 0; i < N; i += 2)
                mr_objpool_free(p, o[i]);
            for (int i = 0; i < N / 2; i++) {
                void *q = mr_objpool_alloc(p);
                assert_non_null(q);
                assert_true(aligned(q, align));
            }
            assert_true(mr_objpool_check(p));
            assert_stats_match(p, u);
            mr_objpool_destroy(p);
            mrt_upstream_restart(u);
        }
    }
}

/* ---- memory overhead ---- */

static void overhead_case(size_t size, size_t n, size_t bound)
{
    mr_objpool_options o = {.upstream = mr_malloc_resource()};
    mr_objpool *p = mr_objpool_create(size, 8, &o);
    assert_non_null(p);
    for (size_t i = 0; i < n; i++) {
        char *q = mr_objpool_alloc(p);
        assert_non_null(q);
        q[0] = (char)i; /* touched, like git's object store */
        q[size - 1] = (char)i;
    }
    mr_stats s = stats_of(p);
    assert_int_equal(s.in_use, n * size);
    size_t over = s.held - n * size;
    printf("# objpool overhead: %zu objects of %zu bytes: held %zu = requested %zu + %zu bytes (%.4f%%)\n", n,
           size, s.held, n * size, over, 100.0 * (double)over / (double)(n * size));
    assert_true(s.held >= n * size);
    if (over > bound)
        fprintf(stderr, "overhead %zu > bound %zu\n", over, bound);
    assert_true(over <= bound);
    assert_true(mr_objpool_check(p));
    mr_objpool_reset(p);
    assert_int_equal(stats_of(p).held, s.held);
    mr_objpool_destroy(p);
}

static void test_overhead_2M_objects(void **state)
{
    (void)state;
    overhead_case(40, 2000000, 64 * 1024); /* the git figure: <= objects * size + 64 KiB */
    /* the other git object sizes, fewer of them: 0.1% + 64 KiB */
    overhead_case(56, 500000, 56 * 500000 / 1000 + 64 * 1024);
    overhead_case(72, 200000, 72 * 200000 / 1000 + 64 * 1024);
    overhead_case(64, 20000, 64 * 20000 / 1000 + 64 * 1024);
}

/* ---- stats ---- */

static void test_stats(void **state)
{
    mrt_upstream *u = *state;
    mr_objpool *p = mk(u, 20, 4, 10); /* rounded to 24 */
    mr_stats s = stats_of(p);
    assert_int_equal(s.in_use, 0);
    assert_int_equal(s.allocations, 0);
    assert_int_equal(s.upstream_allocations, 1);
    assert_int_equal(s.upstream_deallocations, 0);
    assert_true(s.held > 0 && s.held <= 512); /* the header, its tree node and handle included */
    assert_int_equal(s.peak_held, s.held);
    assert_stats_match(p, u);
    void *o[35];
    for (int i = 0; i < 35; i++) {
        o[i] = mr_objpool_alloc(p);
        assert_int_equal(stats_of(p).in_use, (size_t)(i + 1) * 24);
        assert_stats_match(p, u);
    }
    for (int i = 0; i < 35; i++) {
        mr_objpool_free(p, o[i]);
        s = stats_of(p);
        assert_int_equal(s.in_use, (size_t)(34 - i) * 24);
        assert_int_equal(s.allocations, 35);
    }
    size_t peak = stats_of(p).peak_held;
    mr_objpool_release(p);
    s = stats_of(p);
    assert_int_equal(s.peak_held, peak);
    assert_true(s.held < peak);
    assert_int_equal(s.allocations, 35);
    assert_stats_match(p, u);
    mr_objpool_destroy(p);
}

/* ---- failures ---- */

static void test_failed_alloc_changes_nothing(void **state)
{
    mrt_upstream *u = *state;
    mr_objpool *p = mk(u, 40, 8, 1); /* one object per block: a block per allocation */
    void *o[9];
    for (int i = 0; i < 8; i++)
        assert_non_null(o[i] = mr_objpool_alloc(p));
    mr_stats before = stats_of(p);

    /* the 9th block needs a bigger directory: fail the directory request */
    u->fail_at = u->calls + 1;
    mrt_assert_fails(mr_objpool_alloc(p), ENOMEM);
    mr_stats after = stats_of(p);
    assert_same_state(before, after);
    assert_true(mr_objpool_check(p));
    assert_stats_match(p, u);

    /* directory granted, block refused: the directory goes back */
    u->fail_at = u->calls + 2;
    mrt_assert_fails(mr_objpool_alloc(p), ENOMEM);
    after = stats_of(p);
    assert_same_state(before, after);
    assert_true(mr_objpool_check(p));
    assert_stats_match(p, u);
    assert_int_equal(mrt_upstream_live(u), 1 + 8 + 1);

    /* a free object is still served while upstream refuses */
    u->fail_at = 1;
    u->fail_all_after = true;
    mr_objpool_free(p, o[3]);
    assert_ptr_equal(mr_objpool_alloc(p), o[3]);
    assert_null(mr_objpool_alloc(p));
    u->fail_at = 0;
    u->fail_all_after = false;
    assert_non_null(o[8] = mr_objpool_alloc(p));
    assert_int_equal(stats_of(p).in_use, 9 * 40);
    assert_true(mr_objpool_check(p));
    assert_stats_match(p, u);
    mr_objpool_destroy(p);
}

/* One scenario for the fault sweep: returns false at the first failed
 * allocation, after checking that it changed nothing. */
static bool sweep_scenario(mr_objpool *p, void **live, size_t *nlive)
{
    const size_t phases[] = {37, 0, 50, 0, 20};
    for (size_t ph = 0; ph < sizeof phases / sizeof phases[0]; ph++) {
        if (phases[ph] == 0) {
            if (ph == 1) {
                for (size_t i = 0; i < *nlive; i += 3)
                    mr_objpool_free(p, live[i]), live[i] = NULL;
                mr_objpool_reset(p);
            } else {
                mr_objpool_release(p);
            }
            *nlive = 0;
            continue;
        }
        for (size_t i = 0; i < phases[ph]; i++) {
            mr_stats before = stats_of(p);
            errno = 0;
            void *o = mr_objpool_alloc(p);
            if (o == NULL) {
                assert_int_equal(errno, ENOMEM);
                mr_stats after = stats_of(p);
                assert_same_state(before, after);
                return false;
            }
            memset(o, 0x5A, mr_objpool_object_size(p));
            live[(*nlive)++] = o;
            if (i % 4 == 3) { /* churn: free one, take it back */
                mr_objpool_free(p, live[--*nlive]);
                live[(*nlive)++] = mr_objpool_alloc(p);
            }
        }
    }
    return true;
}

/* The fault-sweep scenario (see mrt_fault_sweep): a pool, driven until
 * its first failed allocation, must then still work once upstream does. */
static bool sweep_run(mrt_upstream *u, void *ctx)
{
    (void)ctx;
    errno = 0;
    mr_objpool *p = mk(u, 24, 8, 4);
    if (p == NULL) {
        assert_int_equal(errno, ENOMEM);
        return true;
    }
    void *live[128];
    size_t nlive = 0;
    bool completed = sweep_scenario(p, live, &nlive);
    assert_true(mr_objpool_check(p));
    assert_stats_match(p, u);
    /* still usable once upstream recovers */
    u->fail_at = 0;
    u->fail_all_after = false;
    for (int i = 0; i < 10; i++)
        assert_non_null(mr_objpool_alloc(p));
    for (size_t i = 0; i < nlive; i++)
        mr_objpool_free(p, live[i]);
    assert_true(mr_objpool_check(p));
    mr_objpool_destroy(p);
    return !completed;
}

static void test_fault_sweep(void **state)
{
    (void)state;
    mrt_fault_sweep("objpool", sweep_run, NULL, MRT_FAIL_ONCE, 10);
    mrt_fault_sweep("objpool", sweep_run, NULL, MRT_FAIL_FROM, 10);
}

/* ---- seeded stress against a shadow model ---- */

/* The model: the set of live objects with the byte each is filled with, and
 * the free list as a stack (the pool must hand back its top). */
typedef struct shadow {
    unsigned char **live;
    unsigned char *tag;
    size_t nlive;
    void **stack;
    size_t nstack;
} shadow;

static void stress_one(mrt_upstream *u, uint64_t *rng, size_t steps)
{
    static const size_t aligns[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 4096};
    size_t align = aligns[mrt_rand(rng) % (sizeof aligns / sizeof aligns[0])];
    size_t size = 1 + (size_t)(mrt_rand(rng) % 200);
    size_t per_block = 1 + (size_t)(mrt_rand(rng) % 40);
    mr_objpool *p = mk(u, size, align, per_block);
    assert_non_null(p);
    size_t os = mr_objpool_object_size(p);
    shadow m = {malloc(steps * sizeof(void *)), malloc(steps), 0, malloc(steps * sizeof(void *)), 0};
    assert_non_null(m.live), assert_non_null(m.tag), assert_non_null(m.stack);

    for (size_t step = 0; step < steps; step++) {
        uint64_t r = mrt_rand(rng) % 1000;
        if (r < 560 || m.nlive == 0) {
            unsigned char *o = mr_objpool_alloc(p);
            assert_non_null(o);
            assert_true(aligned(o, align));
            if (m.nstack > 0)
                assert_ptr_equal(o, m.stack[--m.nstack]); /* LIFO */
            unsigned char t = (unsigned char)(1 + step % 251);
            memset(o, t, os);
            m.live[m.nlive] = o;
            m.tag[m.nlive++] = t;
        } else if (r < 995) {
            size_t i = (size_t)(mrt_rand(rng) % m.nlive);
            unsigned char *o = m.live[i];
            for (size_t j = 0; j < os; j++)
                if (o[j] != m.tag[i]) /* overlap with another object or a stray write */
                    assert_int_equal(o[j], m.tag[i]);
            mr_objpool_free(p, o);
            m.stack[m.nstack++] = o;
            m.live[i] = m.live[--m.nlive];
            m.tag[i] = m.tag[m.nlive];
        } else if (r < 998) {
            mr_objpool_reset(p);
            m.nlive = m.nstack = 0;
            assert_true(mr_objpool_check(p));
        } else {
            mr_objpool_release(p);
            m.nlive = m.nstack = 0;
            assert_int_equal(mrt_upstream_live(u), 1);
        }
        assert_int_equal(stats_of(p).in_use, m.nlive * os);
        if (step % 1024 == 0) {
            assert_true(mr_objpool_check(p));
            assert_stats_match(p, u);
        }
    }
    for (size_t i = 0; i < m.nlive; i++)
        for (size_t j = 0; j < os; j++)
            assert_int_equal(m.live[i][j], m.tag[i]);
    assert_true(mr_objpool_check(p));
    assert_stats_match(p, u);
    mr_objpool_destroy(p);
    free(m.live);
    free(m.tag);
    free(m.stack);
}

static void test_stress(void **state)
{
    mrt_upstream *u = *state;
    uint64_t rng = mrt_seed(0x0b1ec7f00dULL);
    for (int round = 0; round < 12; round++) {
        stress_one(u, &rng, 6000);
        mrt_upstream_restart(u);
    }
}

/* ---- the resource view ---- */

static void test_resource_view(void **state)
{
    mrt_upstream *u = *state;
    mr_objpool *p = mk(u, 40, 16, 8);
    mr_objpool *q = mk(u, 40, 16, 8);
    mr_resource *r = mr_objpool_resource(p);
    assert_non_null(r);
    assert_ptr_equal(r, mr_objpool_resource(p));
    assert_true(mr_is_equal(r, r));
    assert_false(mr_is_equal(r, mr_objpool_resource(q)));

    void *a = mr_allocate(r, 40, 16);
    assert_non_null(a);
    assert_true(aligned(a, 16));
    void *z = mr_allocate(r, 0, 1); /* size 0: a valid object */
    assert_non_null(z);
    void *b = mr_allocate(r, 48, 8); /* rounded size is 48 */
    assert_non_null(b);
    assert_int_equal(stats_of(p).allocations, 3);
    assert_int_equal(stats_of(p).in_use, 3 * 48);

    mr_stats before = stats_of(p);
    mrt_assert_fails(mr_allocate(r, 49, 8), ENOMEM);
    mrt_assert_fails(mr_allocate(r, 8, 32), EINVAL);
    mrt_assert_fails(mr_allocate(r, 8, 3), EINVAL);
    mrt_assert_fails(mr_allocate(r, SIZE_MAX, 8), ENOMEM);
    mr_stats after = stats_of(p);
    assert_same_state(before, after);

    mr_deallocate(r, a, 40, 16);
    assert_ptr_equal(mr_allocate(r, 16, 8), a); /* it went back on the free list */
    mr_deallocate(r, NULL, 40, 16);               /* no-op */
    mr_deallocate(r, a, 16, 8);
    mr_deallocate(r, z, 0, 1);
    mr_deallocate(r, b, 48, 8);
    assert_int_equal(stats_of(p).in_use, 0);
    assert_true(mr_objpool_check(p));
    mr_objpool_destroy(q);
    mr_objpool_destroy(p);
}

/* Two pools on one upstream do not disturb each other. */
static void test_independent_pools(void **state)
{
    mrt_upstream *u = *state;
    mr_objpool *p = mk(u, 16, 8, 4), *q = mk(u, 64, 64, 3);
    void *a[20], *b[20];
    for (int i = 0; i < 20; i++) {
        a[i] = mr_objpool_alloc(p);
        b[i] = mr_objpool_alloc(q);
        assert_non_null(a[i]), assert_non_null(b[i]);
        assert_true(aligned(b[i], 64));
    }
    for (int i = 0; i < 20; i++)
        mr_objpool_free(p, a[i]);
    mr_objpool_reset(q);
    assert_int_equal(stats_of(p).in_use, 0);
    assert_int_equal(stats_of(q).in_use, 0);
    assert_true(mr_objpool_check(p));
    assert_true(mr_objpool_check(q));
    mr_objpool_destroy(p);
    assert_true(mr_objpool_check(q));
    mr_objpool_destroy(q);
}

static void test_large_objects(void **state)
{
    mrt_upstream *u = *state;
    mr_objpool *p = mk(u, (size_t)1 << 20, 4096, 1);
    void *a = mr_objpool_alloc(p), *b = mr_objpool_alloc(p);
    assert_non_null(a), assert_non_null(b);
    assert_true(aligned(a, 4096) && aligned(b, 4096));
    memset(a, 1, (size_t)1 << 20);
    memset(b, 2, (size_t)1 << 20);
    assert_int_equal(count_upstream_blocks(u, (size_t)1 << 20, 4096), 2);
    mr_objpool_free(p, a);
    assert_ptr_equal(mr_objpool_alloc(p), a);
    assert_true(mr_objpool_check(p));
    assert_stats_match(p, u);
    mr_objpool_destroy(p);
}

/* ---- the checker finds corruption (not in ASan builds: there the
 * corrupting call itself is reported) ---- */

static void test_check_detects_corruption(void **state)
{
#if MR_CHECKED /* a checker reports the corruption this test makes on purpose */
    (void)state;
    skip();
#else
    mrt_upstream *u = *state;
    fprintf(stderr, "# the next lines of mr_objpool_check output are expected:\n");

    /* double free: a cycle in the free list -- unless this file is built
     * with MR_FREE_CHECK (without NDEBUG), which reports the second free
     * and ignores it */
    mr_objpool *p = mk(u, 32, 8, 8);
    void *a = mr_objpool_alloc(p), *b = mr_objpool_alloc(p);
    (void)b;
    mr_objpool_free(p, a);
    assert_true(mr_objpool_check(p));
    mrt_violations v = {0};
    mr_set_violation_handler(mrt_record_violation, &v);
    mr_objpool_free(p, a);
    mr_set_violation_handler(NULL, NULL);
    if (MR_FREE_CHECK) {
        assert_int_equal(v.count, 1);
        assert_true(mr_objpool_check(p));
    } else {
        assert_int_equal(v.count, 0);
        assert_false(mr_objpool_check(p));
    }
    mr_objpool_destroy(p);

    /* a pointer that is no object of the pool -- reported at the free
     * and ignored where this file is built with MR_FREE_CHECK */
    p = mk(u, 32, 8, 8);
    void *c = mr_objpool_alloc(p);
    void *foreign[4];
    v.count = 0;
    mr_set_violation_handler(mrt_record_violation, &v);
    mr_objpool_free(p, foreign);
    mr_set_violation_handler(NULL, NULL);
    assert_int_equal(v.count, MR_FREE_CHECK ? 1 : 0);
    assert_true(mr_objpool_check(p) == (MR_FREE_CHECK != 0));
    mr_objpool_destroy(p);

    /* a free object's link overwritten to point inside another object */
    p = mk(u, 32, 8, 8);
    c = mr_objpool_alloc(p);
    char *d = mr_objpool_alloc(p);
    mr_objpool_free(p, c);
    void *bad = d + 8;
    memcpy(c, &bad, sizeof bad);
    assert_false(mr_objpool_check(p));
    mr_objpool_destroy(p);

    /* an object freed from the uncarved part of the block */
    p = mk(u, 32, 8, 8);
    d = mr_objpool_alloc(p);
    mr_objpool_free(p, d + 64);
    assert_false(mr_objpool_check(p));
    mr_objpool_destroy(p);

    assert_false(mr_objpool_check(NULL));
    mrt_assert_balanced(u);
#endif
}

/* ---- hardened free lists (MR_HARDENED builds), size-class pools too ---- */

/* A use-after-free write of a chosen address into a freed object must not
 * make that address the next one handed out. */
static void test_hardened_links_resist_a_chosen_address(void **state)
{
    (void)state;
    if (!MR_HARDENED || MR_CHECKED)
        skip(); /* plain links, or a checker that would report the write */
    static char target[64];
    mr_objpool *op = mr_objpool_create(32, 8, NULL);
    assert_non_null(op);
    void *a = mr_objpool_alloc(op), *b = mr_objpool_alloc(op);
    assert_non_null(a);
    assert_non_null(b);
    mr_objpool_free(op, b);
    void *chosen = target;
    memcpy(b, &chosen, sizeof chosen); /* the attacker's write */
    assert_ptr_equal(mr_objpool_alloc(op), b);
    const struct mri_objpool_hot *h = (const struct mri_objpool_hot *)(const void *)op;
    assert_ptr_not_equal(h->free, target); /* the next object would be a random address */
    ((struct mri_objpool_hot *)(void *)op)->free = NULL; /* do not follow it */
    mr_objpool_free(op, a);
    mr_objpool_destroy(op);

    mr_pools *pl = mr_pools_create(NULL);
    assert_non_null(pl);
    void *x = mr_pools_alloc(pl, 40, 8), *y = mr_pools_alloc(pl, 40, 8);
    mr_pools_free(pl, y, 40, 8);
    memcpy(y, &chosen, sizeof chosen);
    assert_ptr_equal(mr_pools_alloc(pl, 40, 8), y);
    const struct mri_pools_hot *ph = (const struct mri_pools_hot *)(const void *)pl;
    struct mri_pools_class *c = &ph->classes[mri_pools_class_of(40 - 1)];
    assert_ptr_not_equal(c->free, target);
    c->free = NULL;
    mr_pools_free(pl, x, 40, 8);
    mr_pools_destroy(pl);
}

/* ---- ASan poisoning (ASan builds only) ---- */

#if MR_SANITIZED
/* Runs fn in a child with stderr closed; true when the child died (ASan report). */
static bool dies(void (*fn)(void))
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        if (fd >= 0)
            dup2(fd, 2);
        fn();
        _exit(0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static volatile char sink;

static void use_after_free(void)
{
    mr_objpool *p = mr_objpool_create(40, 8, NULL);
    char *o = mr_objpool_alloc(p);
    mr_objpool_free(p, o);
    sink = o[20];
}

static void use_after_reset(void)
{
    mr_objpool *p = mr_objpool_create(40, 8, NULL);
    char *o = mr_objpool_alloc(p);
    mr_objpool_reset(p);
    o[0] = 1;
}

static void double_free(void)
{
    mr_objpool *p = mr_objpool_create(40, 8, NULL);
    char *o = mr_objpool_alloc(p);
    (void)mr_objpool_alloc(p);
    mr_objpool_free(p, o);
    mr_objpool_free(p, o);
}

static void no_error(void)
{
    mr_objpool *p = mr_objpool_create(40, 8, NULL);
    char *o = mr_objpool_alloc(p);
    o[39] = 1;
    mr_objpool_free(p, o);
    mr_objpool_destroy(p);
}
#endif

static void test_poisoning(void **state)
{
#if !MR_SANITIZED
    (void)state;
    skip();
#else
    mrt_upstream *u = *state;
    mr_objpool *p = mk(u, 40, 8, 4);
    char *a = mr_objpool_alloc(p);
    assert_false(__asan_address_is_poisoned(a));
    assert_false(__asan_address_is_poisoned(a + 39));
    assert_true(__asan_address_is_poisoned(a + 40)); /* the uncarved rest of the block */
    mr_objpool_free(p, a);
    assert_true(__asan_address_is_poisoned(a));
    assert_true(__asan_address_is_poisoned(a + 39));
    assert_true(mr_objpool_check(p)); /* the walker reads links without a report */
    assert_true(__asan_address_is_poisoned(a));
    assert_ptr_equal(mr_objpool_alloc(p), a);
    assert_false(__asan_address_is_poisoned(a));
    assert_false(__asan_address_is_poisoned(a + 39));
    mr_objpool_reset(p);
    assert_true(__asan_address_is_poisoned(a));
    assert_ptr_equal(mr_objpool_alloc(p), a);
    assert_false(__asan_address_is_poisoned(a + 39));
    mr_objpool_destroy(p);
    mrt_assert_balanced(u);

    assert_false(dies(no_error));
    assert_true(dies(use_after_free));
    assert_true(dies(use_after_reset));
    assert_true(dies(double_free));
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        mrt_unit_test(test_bad_alignment),
        mrt_unit_test(test_bad_size),
        mrt_unit_test(test_create_upstream_fails),
        cmocka_unit_test(test_destroy_null),
        mrt_unit_test(test_object_size_rounding),
        mrt_unit_test(test_defaults),
        mrt_unit_test(test_alloc_free_basic),
        mrt_unit_test(test_lifo_reuse),
        mrt_unit_test(test_reuse_without_upstream),
        mrt_unit_test(test_reset),
        mrt_unit_test(test_release),
        mrt_unit_test(test_alignment),
        cmocka_unit_test(test_overhead_2M_objects),
        mrt_unit_test(test_stats),
        mrt_unit_test(test_failed_alloc_changes_nothing),
        cmocka_unit_test(test_fault_sweep),
        mrt_unit_test(test_stress),
        mrt_unit_test(test_resource_view),
        mrt_unit_test(test_independent_pools),
        mrt_unit_test(test_large_objects),
        mrt_unit_test(test_check_detects_corruption),
        cmocka_unit_test(test_hardened_links_resist_a_chosen_address),
        mrt_unit_test(test_poisoning),
    };
    return cmocka_run_group_tests_name("objpool", tests, NULL, NULL);
}
