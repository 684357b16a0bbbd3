/* SPDX-License-Identifier: MIT */
/* tests/test_arena_alloc.c -- the arena (memres/arena.h): creating one and
 * allocating from it, clause by clause.
 *
 * Create and destroy: NULL and all-zero options, the upstream fixed at
 * create time, every invalid combination (a buffer without a size, a block
 * size above the maximum, a buffer too small for the header, impossible
 * block sizes, a limit below the header, a failing upstream, the null
 * resource without a buffer) and the rounding of valid block sizes.  alloc
 * and alloc_aligned: aligned and disjoint, bumped one after the other, size
 * 0 (never NULL), every alignment up to 1 MiB, invalid alignments refused
 * before any upstream call.  calloc: zeroed memory, reused memory zeroed
 * again, overflow caught before any upstream call.  realloc: in place for
 * the newest allocation (but never across a mark), a copy otherwise, and a
 * failure keeps the old block.  SIZE_MAX-class requests go through every
 * entry point: NULL with ENOMEM, the arena unchanged, and the upstream never
 * asked for a small, wrapped size.
 *
 * Helpers: tests/arena_helpers.h.  The other arena tests are the other
 * tests/test_arena_*.c: marks, strings, upstream, merge, stress.
 */
#include <errno.h>
#include <stdalign.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "support.h"
#include "arena_helpers.h"

/* Any request the arena sends upstream for an impossible size must be at
 * least this big: never a wrapped, small one. */
#define HUGE_REQUEST ((size_t)1 << 40)

/* Allocate requests from index `from` on (u logging): none succeeded and
 * none was small. */
static void assert_no_small_request(const mrt_upstream *u, size_t from)
{
    for (size_t i = from; i < u->calls; i++) {
        const mrt_request *r = mrt_upstream_request(u, i);
        if (r->size < HUGE_REQUEST && r->align < HUGE_REQUEST)
            fprintf(stderr, "request %zu: size %zu align %zu\n", i, r->size, r->align);
        assert_false(r->ok);
        assert_true(r->size >= HUGE_REQUEST || r->align >= HUGE_REQUEST);
    }
}

static const size_t huge_sizes[] = {
    SIZE_MAX,
    SIZE_MAX - 1,
    SIZE_MAX - 15,
    SIZE_MAX - 4095,
    SIZE_MAX - MRI_ARENA_INLINE_MAX,
    (size_t)PTRDIFF_MAX + 1,
    (size_t)PTRDIFF_MAX,
    (size_t)PTRDIFF_MAX - 15,
    (size_t)1 << 62,
};

static const size_t bad_aligns[] = {
    0, 3, 5, 6, 12, 24, 48, 96, 100, 4095, 4097, 12288, SIZE_MAX, ((size_t)1 << 63) + 1,
};

/* ======================================================================
 * create / destroy
 * ====================================================================== */

static void test_create_null_opts(void **state)
{
    mrt_upstream *u = *state;
    mr_resource *prev = mr_set_default_resource(&u->base);

    mr_arena *a = mr_arena_create(NULL);
    assert_non_null(a);
    assert_true(mr_arena_check(a));
    /* the header comes from the default upstream; the first block only on
     * the first allocation */
    assert_int_equal(u->allocations, 1);
    assert_true(u->bytes <= 4 * KiB);
    assert_agrees(a, u);
    void *p = mr_arena_alloc(a, 100);
    assert_non_null(p);
    assert_true(is_aligned(p, A));
    memset(p, 1, 100);
    assert_int_equal(u->allocations, 2);
    assert_true(mrt_upstream_owns(u, p));
    /* block_size 0: the first block is 4 KiB */
    assert_int_equal(u->live[1].size, 4 * KiB);
    assert_agrees(a, u);

    /* the upstream was fixed at create time: changing the default now must
     * not send the arena's memory anywhere else */
    mr_set_default_resource(prev);
    assert_non_null(mr_arena_alloc(a, 10000));
    assert_int_equal(u->allocations, 3);
    mr_arena_destroy(a);
    mrt_assert_balanced(u);

    /* all-zero options are the same as NULL */
    mr_set_default_resource(&u->base);
    mr_arena_options o = {0};
    a = mr_arena_create(&o);
    assert_non_null(a);
    assert_non_null(mr_arena_alloc(a, 1));
    assert_int_equal(u->live[1].size, 4 * KiB);
    mr_set_default_resource(NULL);
    mr_arena_destroy(a);
}

static void test_destroy_null(void **state)
{
    (void)state;
    mr_arena_destroy(NULL);
}

static void test_create_invalid(void **state)
{
    mrt_upstream *u = *state;
    alignas(max_align_t) unsigned char buf[2048];
    mr_arena_options o;

    /* buffer without size */
    o = (mr_arena_options){0};
    o.upstream = &u->base;
    o.buffer = buf;
    mrt_assert_fails(mr_arena_create(&o), EINVAL);
    /* size without buffer */
    o = (mr_arena_options){0};
    o.upstream = &u->base;
    o.buffer_size = sizeof buf;
    mrt_assert_fails(mr_arena_create(&o), EINVAL);
    /* block_size > max_block_size when both are given */
    const size_t bad_blocks[][2] = {{8192, 4096}, {4097, 4096}, {2 * MiB + 1, 2 * MiB}, {65, 64}};
    for (size_t i = 0; i < ARRAY_LEN(bad_blocks); i++) {
        o = (mr_arena_options){0};
        o.upstream = &u->base;
        o.block_size = bad_blocks[i][0];
        o.max_block_size = bad_blocks[i][1];
        mrt_assert_fails(mr_arena_create(&o), EINVAL);
    }
    /* buffer too small for the header: every size below the smallest that
     * works fails with EINVAL, every size from it on works */
    size_t smallest = 0;
    for (size_t n = 1; n <= sizeof buf; n++) {
        o = (mr_arena_options){0};
        o.upstream = &u->base;
        o.buffer = buf;
        o.buffer_size = n;
        errno = 0;
        mr_arena *a = mr_arena_create(&o);
        if (a == NULL) {
            assert_int_equal(errno, EINVAL);
            assert_int_equal(smallest, 0);
            continue;
        }
        if (smallest == 0)
            smallest = n;
        assert_true(mr_arena_check(a));
        assert_true((unsigned char *)a >= buf && (unsigned char *)a < buf + n);
        mr_arena_destroy(a);
    }
    assert_true(smallest > 16);
    assert_true(smallest <= 1024);
    /* validation happens before anything is allocated */
    assert_int_equal(u->calls, 0);

    /* impossible block sizes: refused at create, or every allocation that
     * needs such a block fails cleanly without a small upstream request */
    const size_t impossible[][2] = {
        {SIZE_MAX, 0}, {(size_t)PTRDIFF_MAX, 0}, {(size_t)1 << 62, 0},
        {0, SIZE_MAX}, {4096, SIZE_MAX}, {SIZE_MAX, SIZE_MAX},
    };
    u->limit = 64 * MiB;
    for (size_t i = 0; i < ARRAY_LEN(impossible); i++) {
        o = (mr_arena_options){0};
        o.upstream = &u->base;
        o.block_size = impossible[i][0];
        o.max_block_size = impossible[i][1];
        errno = 0;
        mr_arena *a = mr_arena_create(&o);
        if (a == NULL) {
            assert_true(errno == EINVAL || errno == ENOMEM);
        } else {
            size_t allocs = u->allocations;
            void *p = mr_arena_alloc(a, 16);
            if (p == NULL)
                assert_int_equal(errno, ENOMEM);
            else
                assert_true(u->allocations == allocs || u->live[u->nlive - 1].size <= 64 * MiB);
            assert_true(mr_arena_check(a));
            mr_arena_destroy(a);
        }
        mrt_assert_balanced(u);
    }
    u->limit = 0;

    /* limit too small for the header */
    o = (mr_arena_options){0};
    o.upstream = &u->base;
    o.limit = 1;
    mrt_assert_fails(mr_arena_create(&o), ENOMEM);
    mrt_assert_balanced(u);
    /* upstream fails */
    u->fail_at = u->calls + 1;
    o = (mr_arena_options){0};
    o.upstream = &u->base;
    mrt_assert_fails(mr_arena_create(&o), ENOMEM);
    mrt_assert_balanced(u);
    u->fail_at = 0;
    /* the null resource and no buffer: nowhere to put the header */
    o = (mr_arena_options){0};
    o.upstream = mr_null_resource();
    mrt_assert_fails(mr_arena_create(&o), ENOMEM);
}

static void test_create_options_valid(void **state)
{
    mrt_upstream *u = *state;
    u->log_requests = true;
    size_t ps = page_size();

    /* block sizes are rounded to 64 bytes below a page, to pages above
     * (0 in the second column: tiny, only "a multiple of 64, under 1 KiB") */
    const size_t cases[][2] = {
        {4096, 4096}, {1000, 1024}, {1024, 1024}, {1, 0}, {64, 0}, {65, 0}, {200, 0},
        {5000, round_up(5000, ps)}, {100000, round_up(100000, ps)}, {8192, 8192},
    };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        mr_arena *a = arena_on(&u->base, cases[i][0], 0, 0);
        size_t before = u->calls;
        void *p = mr_arena_alloc(a, 1);
        assert_non_null(p);
        assert_int_equal(u->calls, before + 1);
        if (cases[i][1] != 0) {
            assert_int_equal(req_size(u, before), cases[i][1]);
        } else {
            assert_int_equal(req_size(u, before) % 64, 0);
            assert_true(req_size(u, before) >= cases[i][0]);
            assert_true(req_size(u, before) < 1024);
        }
        /* usable: a request bigger than the block still works */
        void *q = mr_arena_alloc(a, 3 * cases[i][0] + 100);
        assert_non_null(q);
        memset(q, 1, 3 * cases[i][0] + 100);
        assert_true(mr_arena_check(a));
        mr_arena_destroy(a);
        mrt_assert_balanced(u);
    }
    /* block_size == max_block_size, and only one of them given */
    const size_t pairs[][2] = {{4096, 4096}, {0, 8192}, {8192, 0}, {4 * MiB, 0}, {0, 1024}, {64, 64}};
    for (size_t i = 0; i < ARRAY_LEN(pairs); i++) {
        mr_arena *a = arena_on(&u->base, pairs[i][0], pairs[i][1], 0);
        for (size_t k = 0; k < 100; k++)
            assert_non_null(mr_arena_alloc(a, 1000));
        assert_true(mr_arena_check(a));
        mr_arena_destroy(a);
        mrt_assert_balanced(u);
    }
    /* limit alone */
    mr_arena *a = arena_on(&u->base, 0, 0, MiB);
    assert_non_null(mr_arena_alloc(a, 1000));
    mr_arena_destroy(a);
    /* a buffer with upstream NULL: the default resource backs it */
    alignas(max_align_t) unsigned char buf[1024];
    mr_resource *prev = mr_set_default_resource(&u->base);
    mr_arena_options o = {0};
    o.buffer = buf;
    o.buffer_size = sizeof buf;
    size_t calls = u->calls;
    a = mr_arena_create(&o);
    mr_set_default_resource(prev);
    assert_non_null(a);
    assert_int_equal(u->calls, calls); /* nothing yet from the default resource */
    assert_non_null(mr_arena_alloc(a, 4000)); /* more than the buffer holds */
    assert_true(u->allocations > 0);
    mr_arena_destroy(a);
}

/* ======================================================================
 * alloc, alloc_aligned
 * ====================================================================== */

static void test_alloc_aligned_and_disjoint(void **state)
{
    mrt_upstream *u = *state;
    mr_arena *a = arena_on(&u->base, 4096, 0, 0);
    enum { N = 700 };
    static unsigned char *ps[N];
    size_t total = 0;
    for (size_t i = 0; i < N; i++) {
        ps[i] = mr_arena_alloc(a, i);
        assert_non_null(ps[i]);
        assert_true(is_aligned(ps[i], A));
        if (i > 0) /* a size-0 pointer may point anywhere */
            assert_true(mrt_upstream_owns(u, ps[i]));
        fill(ps[i], i, i);
        total += i;
    }
    for (size_t i = 0; i < N; i++)
        assert_int_equal(verify(ps[i], i, i), SIZE_MAX);
    mr_stats st = stats(a);
    assert_true(st.in_use >= total);
    assert_true(st.in_use <= st.held);
    assert_int_equal(st.allocations, N);
    assert_agrees(a, u);
    assert_true(mr_arena_check(a));
    /* the boundary of the inline path */
    unsigned char *p = mr_arena_alloc(a, MRI_ARENA_INLINE_MAX);
    unsigned char *q = mr_arena_alloc(a, MRI_ARENA_INLINE_MAX + 1);
    assert_non_null(p);
    assert_non_null(q);
    memset(p, 1, MRI_ARENA_INLINE_MAX);
    memset(q, 2, MRI_ARENA_INLINE_MAX + 1);
    assert_int_equal(p[MRI_ARENA_INLINE_MAX - 1], 1);
    assert_true(mr_arena_check(a));
    mr_arena_destroy(a);
}

static void test_alloc_consecutive(void **state)
{
    mrt_upstream *u = *state;
    mr_arena *a = arena_on(&u->base, 4096, 0, 0);
    /* within a block, allocations are bumped: each right after the last,
     * rounded to MR_ARENA_ALIGN */
    char *p = mr_arena_alloc(a, 1);
    char *q = mr_arena_alloc(a, 17);
    char *r = mr_arena_alloc(a, 0);
    char *s = mr_arena_alloc(a, 5);
    assert_ptr_equal(q, p + A);
    assert_ptr_equal(r, q + round_up(17, A));
    assert_non_null(s);
    assert_true(s == r || s == r + A);
    mr_arena_destroy(a);
}

static void test_size_zero(void **state)
{
    mrt_upstream *u = *state;
    mr_arena *a = arena_on(&u->base, 0, 0, 0);
    /* on an arena with no block yet: still non-NULL and aligned */
    void *z = mr_arena_alloc(a, 0);
    assert_non_null(z);
    assert_true(is_aligned(z, A));
    void *p = mr_arena_alloc_aligned(a, 0, 4096);
    assert_non_null(p);
    assert_true(is_aligned(p, 4096));
    assert_non_null(mr_arena_calloc(a, 0, 5));
    assert_non_null(mr_arena_calloc(a, 5, 0));
    assert_non_null(mr_arena_calloc(a, 0, SIZE_MAX));
    assert_non_null(mr_arena_realloc(a, NULL, 0, 0));
    char *e = mr_arena_strndup(a, "abc", 0);
    assert_non_null(e);
    assert_string_equal(e, "");
    assert_non_null(mr_allocate(mr_arena_resource(a), 0, 1));
    mr_arena_release(a); /* no block again */
    z = mr_arena_alloc(a, 0);
    assert_non_null(z);
    assert_true(is_aligned(z, A));
    mr_arena_destroy(a);
    mrt_assert_balanced(u);

    /* even in a full arena that cannot grow */
    alignas(max_align_t) unsigned char buf[1024];
    a = arena_buf(mr_null_resource(), buf, sizeof buf);
    while (mr_arena_alloc(a, 16) != NULL) {
    }
    assert_non_null(mr_arena_alloc(a, 0));
    assert_non_null(mr_arena_calloc(a, 0, 0));
    assert_true(mr_arena_check(a));
    mr_arena_destroy(a);
}

static void test_alloc_aligned_every_alignment(void **state)
{
    mrt_upstream *u = *state;
    mr_arena *a = arena_on(&u->base, 4096, 0, 0);
    enum { MAXN = 512 };
    static unsigned char *ps[MAXN];
    static size_t sz[MAXN];
    size_t n = 0;
    for (size_t align = 1; align <= MiB; align <<= 1) {
        const size_t sizes[] = {1, 7, align, align + align / 2 + 1, 100};
        for (size_t i = 0; i < ARRAY_LEN(sizes); i++) {
            /* knock the bump pointer off any alignment first */
            assert_non_null(mr_arena_alloc(a, 3));
            ps[n] = mr_arena_alloc_aligned(a, sizes[i], align);
            assert_non_null(ps[n]);
            assert_true(is_aligned(ps[n], align));
            sz[n] = sizes[i];
            fill(ps[n], sz[n], n);
            n++;
            assert_true(mr_arena_check(a));
        }
    }
    for (size_t i = 0; i < n; i++)
        assert_int_equal(verify(ps[i], sz[i], i), SIZE_MAX);
    assert_agrees(a, u);
    mr_arena_destroy(a);
    mrt_assert_balanced(u);

    /* in a buffer arena that cannot grow: small alignments come from the
     * buffer, all correctly aligned */
    alignas(max_align_t) unsigned char buf[16384];
    a = arena_buf(mr_null_resource(), buf, sizeof buf);
    for (size_t align = 1; align <= 4096; align <<= 1) {
        unsigned char *p = mr_arena_alloc_aligned(a, 10, align);
        assert_non_null(p);
        assert_true(is_aligned(p, align));
        assert_true(p >= buf && p + 10 <= buf + sizeof buf);
        assert_non_null(mr_arena_alloc(a, 1));
    }
    assert_true(mr_arena_check(a));
    mr_arena_destroy(a);
}

static void test_alloc_aligned_invalid(void **state)
{
    mrt_upstream *u = *state;
    mr_arena *a = arena_on(&u->base, 4096, 0, 0);
    assert_non_null(mr_arena_alloc(a, 40));
    void *next = probe(a);
    snapshot before = snap(a, u);
    size_t calls = u->calls;
    for (size_t i = 0; i < ARRAY_LEN(bad_aligns); i++) {
        const size_t sizes[] = {0, 1, 16, 100000, SIZE_MAX};
        for (size_t j = 0; j < ARRAY_LEN(sizes); j++) {
            mrt_assert_fails(mr_arena_alloc_aligned(a, sizes[j], bad_aligns[i]), EINVAL);
            assert_unchanged(a, u, &before);
            mrt_assert_fails(mr_allocate(mr_arena_resource(a), sizes[j], bad_aligns[i]), EINVAL);
            assert_unchanged(a, u, &before);
        }
    }
    assert_int_equal(u->calls, calls);
    assert_ptr_equal(probe(a), next);
    mr_arena_destroy(a);
}

/* SIZE_MAX-class requests through every entry point: NULL, ENOMEM, the
 * arena unchanged, and the upstream never asked for a small (wrapped) size. */
static void test_huge_sizes(void **state)
{
    mrt_upstream *u = *state;
    u->limit = 64 * MiB; /* a huge request is refused here, not by malloc */
    u->log_requests = true;
    mr_arena *a = arena_on(&u->base, 4096, 0, 0);
    unsigned char *old = mr_arena_alloc(a, 48);
    unsigned char *newest = mr_arena_alloc(a, 32);
    fill(old, 48, 1);
    fill(newest, 32, 2);
    void *next = probe(a);
    snapshot before = snap(a, u);
    size_t from = u->calls;

    for (size_t i = 0; i < ARRAY_LEN(huge_sizes); i++) {
        size_t n = huge_sizes[i];
        const size_t aligns[] = {1, 16, 64, 4096, MiB};
        for (size_t j = 0; j < ARRAY_LEN(aligns); j++) {
            mrt_assert_fails(mr_arena_alloc_aligned(a, n, aligns[j]), ENOMEM);
            assert_unchanged(a, u, &before);
            mrt_assert_fails(mr_allocate(mr_arena_resource(a), n, aligns[j]), ENOMEM);
            assert_unchanged(a, u, &before);
        }
        mrt_assert_fails(mr_arena_alloc(a, n), ENOMEM);
        assert_unchanged(a, u, &before);
        mrt_assert_fails(mr_arena_calloc(a, n, 1), ENOMEM);
        assert_unchanged(a, u, &before);
        mrt_assert_fails(mr_arena_calloc(a, 1, n), ENOMEM);
        assert_unchanged(a, u, &before);
        mrt_assert_fails(mr_arena_realloc(a, NULL, 0, n), ENOMEM);
        assert_unchanged(a, u, &before);
        mrt_assert_fails(mr_arena_realloc(a, newest, 32, n), ENOMEM);
        assert_unchanged(a, u, &before);
        mrt_assert_fails(mr_arena_realloc(a, old, 48, n), ENOMEM);
        assert_unchanged(a, u, &before);
        assert_no_small_request(u, from);
    }
    /* alignments that cannot be met: valid powers of two, so ENOMEM */
    const size_t huge_aligns[] = {(size_t)1 << 63, (size_t)1 << 62};
    for (size_t j = 0; j < ARRAY_LEN(huge_aligns); j++) {
        const size_t sizes[] = {0, 16, huge_aligns[j], SIZE_MAX};
        for (size_t k = 0; k < ARRAY_LEN(sizes); k++) {
            mrt_assert_fails(mr_arena_alloc_aligned(a, sizes[k], huge_aligns[j]), ENOMEM);
            assert_unchanged(a, u, &before);
        }
    }
    assert_no_small_request(u, from);
    assert_int_equal(verify(old, 48, 1), SIZE_MAX);
    assert_int_equal(verify(newest, 32, 2), SIZE_MAX);
    assert_ptr_equal(probe(a), next);
    mr_arena_destroy(a);
}

/* ======================================================================
 * calloc
 * ====================================================================== */

static void test_calloc_zeroes(void **state)
{
    mrt_upstream *u = *state; /* it hands out memory filled with 0xA5 */
    mr_arena *a = arena_on(&u->base, 4096, 0, 0);
    const size_t shapes[][2] = {{100, 8}, {1, 1}, {3, 5}, {4000, 1}, {1, 100000}, {25000, 4}};
    unsigned char *p[ARRAY_LEN(shapes)];
    mr_arena_mark m = mr_arena_save(a);
    for (size_t i = 0; i < ARRAY_LEN(shapes); i++) {
        size_t n = shapes[i][0] * shapes[i][1];
        p[i] = mr_arena_calloc(a, shapes[i][0], shapes[i][1]);
        assert_non_null(p[i]);
        assert_true(is_aligned(p[i], A));
        assert_true(all_zero(p[i], n));
        memset(p[i], 0xFF, n); /* dirty it for the next round */
    }
    /* reused memory after rewind and after reset is zeroed again */
    for (int round = 0; round < 2; round++) {
        if (round == 0)
            mr_arena_rewind(a, m);
        else
            mr_arena_reset(a);
        for (size_t i = 0; i < ARRAY_LEN(shapes); i++) {
            size_t n = shapes[i][0] * shapes[i][1];
            unsigned char *q = mr_arena_calloc(a, shapes[i][0], shapes[i][1]);
            assert_non_null(q);
            assert_true(all_zero(q, n));
            memset(q, 0xFF, n);
        }
    }
    /* a dirty tail, then calloc in the same block */
    mr_arena_reset(a);
    unsigned char *d = mr_arena_alloc(a, 256);
    memset(d, 0xFF, 256);
    mr_arena_mark m2 = mr_arena_save(a);
    unsigned char *e = mr_arena_alloc(a, 256);
    memset(e, 0xFF, 256);
    mr_arena_rewind(a, m2);
    unsigned char *z = mr_arena_calloc(a, 16, 16);
    assert_ptr_equal(z, e);
    assert_true(all_zero(z, 256));
    mr_arena_destroy(a);
}

static void test_calloc_overflow(void **state)
{
    mrt_upstream *u = *state;
    u->limit = 64 * MiB;
    u->log_requests = true;
    mr_arena *a = arena_on(&u->base, 4096, 0, 0);
    assert_non_null(mr_arena_alloc(a, 10));
    void *next = probe(a);
    snapshot before = snap(a, u);
    size_t calls = u->calls;
    const size_t pairs[][2] = {
        {SIZE_MAX / 2 + 1, 2}, {2, SIZE_MAX / 2 + 1}, {SIZE_MAX, SIZE_MAX}, {SIZE_MAX, 2},
        {(size_t)1 << 32, (size_t)1 << 32}, {SIZE_MAX / 16 + 1, 16}, {16, SIZE_MAX / 16 + 1},
        {3, SIZE_MAX / 3 + 1},
    };
    for (size_t i = 0; i < ARRAY_LEN(pairs); i++) {
        mrt_assert_fails(mr_arena_calloc(a, pairs[i][0], pairs[i][1]), ENOMEM);
        assert_unchanged(a, u, &before);
    }
    /* overflow is detected before any upstream call */
    assert_int_equal(u->calls, calls);
    /* no overflow, but impossible */
    size_t from = u->calls;
    mrt_assert_fails(mr_arena_calloc(a, (size_t)PTRDIFF_MAX / 2 + 1, 2), ENOMEM);
    assert_unchanged(a, u, &before);
    assert_no_small_request(u, from);
    assert_ptr_equal(probe(a), next);
    mr_arena_destroy(a);
}

/* ======================================================================
 * realloc
 * ====================================================================== */

static void test_realloc_in_place_newest(void **state)
{
    mrt_upstream *u = *state;
    mr_arena *a = arena_on(&u->base, 4096, 0, 0);
    assert_non_null(mr_arena_alloc(a, 16));

    /* grow in place */
    unsigned char *p = mr_arena_alloc(a, 32);
    fill(p, 32, 3);
    unsigned char *q = mr_arena_realloc(a, p, 32, 64);
    assert_ptr_equal(q, p);
    assert_int_equal(verify(q, 32, 3), SIZE_MAX);
    fill(q, 64, 4);
    assert_ptr_equal(probe(a), p + 64);
    /* shrink in place: the space is given back */
    q = mr_arena_realloc(a, p, 64, 16);
    assert_ptr_equal(q, p);
    assert_int_equal(verify(q, 16, 4), SIZE_MAX);
    assert_ptr_equal(probe(a), p + 16);
    /* same size */
    q = mr_arena_realloc(a, p, 16, 16);
    assert_ptr_equal(q, p);
    assert_ptr_equal(probe(a), p + 16);
    /* grow in place by an odd amount: the bump stays aligned */
    q = mr_arena_realloc(a, p, 16, 33);
    assert_ptr_equal(q, p);
    assert_ptr_equal(probe(a), p + round_up(33, A));
    /* to 0 */
    q = mr_arena_realloc(a, p, 33, 0);
    assert_non_null(q);
    /* the newest from alloc_aligned keeps its alignment when it grows */
    unsigned char *al = mr_arena_alloc_aligned(a, 24, 256);
    assert_true(is_aligned(al, 256));
    fill(al, 24, 5);
    q = mr_arena_realloc(a, al, 24, 200);
    assert_ptr_equal(q, al);
    assert_int_equal(verify(q, 24, 5), SIZE_MAX);
    assert_true(mr_arena_check(a));
    mr_arena_destroy(a);
}

/* A mark saved after an allocation: growing that allocation in place would
 * put its new bytes after the mark, where a rewind to the mark frees them
 * while the object lives (an outside report: the next allocation landed
 * inside it).  The arena copies instead; the object before the mark stays
 * whole across the rewind, and growth in place returns for allocations made
 * after the newest mark. */
static void test_realloc_across_a_mark(void **state)
{
    mrt_upstream *u = *state;
    mr_arena *a = arena_on(&u->base, 4096, 0, 0);
    unsigned char *buf = mr_arena_alloc(a, 16);
    assert_non_null(buf);
    memset(buf, 'a', 16);
    mr_arena_mark m = mr_arena_save(a);
    unsigned char *grown = mr_arena_realloc(a, buf, 16, 64);
    assert_non_null(grown);
    assert_ptr_not_equal(grown, buf); /* copied: buf lies before the mark */
    for (int i = 0; i < 16; i++)
        assert_int_equal(grown[i], 'a');
    memset(grown + 16, 'b', 48);
    /* an allocation made after the newest mark still grows in place */
    unsigned char *t = mr_arena_alloc(a, 32);
    assert_non_null(t);
    assert_ptr_equal(mr_arena_realloc(a, t, 32, 96), t);
    mr_arena_rewind(a, m);
    /* what follows the mark is free again; buf, before it, is whole */
    for (int k = 0; k < 4; k++) {
        unsigned char *next = mr_arena_alloc(a, 48);
        assert_non_null(next);
        memset(next, 'z', 48);
        assert_true(next >= buf + 16 || next + 48 <= buf);
    }
    for (int i = 0; i < 16; i++)
        assert_int_equal(buf[i], 'a');
    /* after the rewind, m is the newest mark: an allocation after it grows
     * in place again, one before it does not */
    mr_arena_rewind(a, m);
    unsigned char *after = mr_arena_alloc(a, 16);
    assert_ptr_equal(mr_arena_realloc(a, after, 16, 200), after);
    mr_arena_rewind(a, m);
    /* with no mark since it, the newest allocation grows in place */
    mr_arena_reset(a);
    unsigned char *solo = mr_arena_alloc(a, 16);
    assert_ptr_equal(mr_arena_realloc(a, solo, 16, 1000), solo);
    /* a mark in an earlier block: the newest allocation of a later block
     * grows in place */
    mr_arena_mark early = mr_arena_save(a);
    unsigned char *fill = mr_arena_alloc(a, 3000);
    assert_non_null(fill);
    unsigned char *later = mr_arena_alloc(a, 2000); /* another block */
    assert_non_null(later);
    assert_ptr_equal(mr_arena_realloc(a, later, 2000, 2100), later);
    mr_arena_rewind(a, early);
    assert_true(mr_arena_check(a));
    mr_arena_destroy(a);
}

static void test_realloc_copies(void **state)
{
    mrt_upstream *u = *state;
    mr_arena *a = arena_on(&u->base, 4096, 0, 0);

    /* not the newest: grow copies, contents preserved, neighbour untouched */
    unsigned char *p = mr_arena_alloc(a, 32);
    unsigned char *r = mr_arena_alloc(a, 16);
    fill(p, 32, 6);
    fill(r, 16, 7);
    unsigned char *q = mr_arena_realloc(a, p, 32, 100);
    assert_non_null(q);
    assert_true(q != p);
    assert_true(is_aligned(q, A));
    assert_int_equal(verify(q, 32, 6), SIZE_MAX);
    assert_int_equal(verify(r, 16, 7), SIZE_MAX);
    assert_int_equal(verify(p, 32, 6), SIZE_MAX); /* the old copy is still there */
    memset(q, 0, 100);
    assert_int_equal(verify(r, 16, 7), SIZE_MAX);
    /* not the newest: shrink returns p */
    unsigned char *s = mr_arena_realloc(a, r, 16, 8);
    assert_ptr_equal(s, r);
    assert_int_equal(verify(r, 8, 7), SIZE_MAX);

    /* the newest, but the block has no room: copies into a new block */
    unsigned char *big = mr_arena_alloc(a, 1000);
    fill(big, 1000, 8);
    unsigned char *moved = mr_arena_realloc(a, big, 1000, 20000);
    assert_non_null(moved);
    assert_true(moved != big);
    assert_true(is_aligned(moved, A));
    assert_int_equal(verify(moved, 1000, 8), SIZE_MAX);
    memset(moved + 1000, 1, 19000);
    /* p NULL: a plain allocation */
    void *next = probe_n(a, 40);
    void *n = mr_arena_realloc(a, NULL, 0, 40);
    assert_ptr_equal(n, next);
    assert_true(is_aligned(n, A));
    assert_true(mr_arena_check(a));
    assert_agrees(a, u);
    mr_arena_destroy(a);
}

static void test_realloc_failure_keeps_p(void **state)
{
    mrt_upstream *u = *state;
    alignas(max_align_t) unsigned char buf[4096];
    mr_arena *a = arena_buf(mr_null_resource(), buf, sizeof buf);
    unsigned char *old = mr_arena_alloc(a, 64);
    unsigned char *p = mr_arena_alloc(a, 64);
    fill(old, 64, 9);
    fill(p, 64, 10);
    void *next = probe(a);
    snapshot before = snap(a, NULL);
    /* the newest cannot grow past the buffer */
    mrt_assert_fails(mr_arena_realloc(a, p, 64, 8192), ENOMEM);
    assert_unchanged(a, NULL, &before);
    assert_int_equal(verify(p, 64, 10), SIZE_MAX);
    /* an older one cannot be copied */
    mrt_assert_fails(mr_arena_realloc(a, old, 64, 8192), ENOMEM);
    assert_unchanged(a, NULL, &before);
    assert_int_equal(verify(old, 64, 9), SIZE_MAX);
    assert_ptr_equal(probe(a), next);
    /* and the arena still works (a copy: the snapshots saved marks after p) */
    unsigned char *q = mr_arena_realloc(a, p, 64, 128);
    assert_non_null(q);
    assert_int_equal(verify(q, 64, 10), SIZE_MAX);
    mr_arena_destroy(a);

    /* with an upstream that fails when the arena needs a new block */
    a = arena_on(&u->base, 4096, 0, 0);
    p = mr_arena_alloc(a, 100);
    fill(p, 100, 11);
    before = snap(a, u);
    u->fail_at = u->calls + 1;
    u->fail_all_after = true;
    mrt_assert_fails(mr_arena_realloc(a, p, 100, 100000), ENOMEM);
    assert_unchanged(a, u, &before);
    assert_int_equal(verify(p, 100, 11), SIZE_MAX);
    u->fail_at = 0;
    q = mr_arena_realloc(a, p, 100, 100000);
    assert_non_null(q);
    assert_int_equal(verify(q, 100, 11), SIZE_MAX);
    mr_arena_destroy(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        mrt_unit_test(test_create_null_opts),
        cmocka_unit_test(test_destroy_null),
        mrt_unit_test(test_create_invalid),
        mrt_unit_test(test_create_options_valid),
        mrt_unit_test(test_alloc_aligned_and_disjoint),
        mrt_unit_test(test_alloc_consecutive),
        mrt_unit_test(test_size_zero),
        mrt_unit_test(test_alloc_aligned_every_alignment),
        mrt_unit_test(test_alloc_aligned_invalid),
        mrt_unit_test(test_huge_sizes),
        mrt_unit_test(test_calloc_zeroes),
        mrt_unit_test(test_calloc_overflow),
        mrt_unit_test(test_realloc_in_place_newest),
        mrt_unit_test(test_realloc_across_a_mark),
        mrt_unit_test(test_realloc_copies),
        mrt_unit_test(test_realloc_failure_keeps_p),
    };
    return cmocka_run_group_tests_name("arena alloc", tests, NULL, NULL);
}
