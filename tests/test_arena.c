/* SPDX-License-Identifier: MIT */
/* tests/test_arena.c -- the arena (memres/arena.h), clause by clause.
 *
 * Every test stacks the arena on mrt_upstream (tests/support.h), a checking
 * upstream that counts calls and bytes and verifies every deallocate, often
 * with its log of each request's size and alignment.  That is how
 * the tests prove what the header promises about the upstream: reset makes no
 * upstream call, release and destroy return every byte, block sizes are
 * never a power of two plus a header, impossible sizes never become small
 * requests, and the limit is never exceeded.
 *
 * A failed call must leave the arena exactly as it was: tests compare
 * mr_arena_stats and mr_arena_save before and after, and the address the
 * next allocation gets.
 */
#include <errno.h>
#include <limits.h>
#include <stdalign.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support.h"

#if defined(__GLIBC__) && !MR_SANITIZED && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
#  include <malloc.h>
#  define HAVE_MALLINFO2 1
#else
#  define HAVE_MALLINFO2 0
#endif

#define A MR_ARENA_ALIGN
#define KiB ((size_t)1024)
#define MiB ((size_t)1024 * 1024)
#define ARRAY_LEN(x) (sizeof(x) / sizeof((x)[0]))
/* Any request the arena sends upstream for an impossible size must be at
 * least this big: never a wrapped, small one. */
#define HUGE_REQUEST ((size_t)1 << 40)

static size_t page_size(void)
{
    long v = sysconf(_SC_PAGESIZE);
    return v > 0 ? (size_t)v : 4096;
}

static size_t round_up(size_t x, size_t to) { return (x + to - 1) / to * to; }
static bool is_aligned(const void *p, size_t align) { return ((uintptr_t)p & (align - 1)) == 0; }

/* The size of allocate request i (u logging). */
static size_t req_size(const mrt_upstream *u, size_t i) { return mrt_upstream_request(u, i)->size; }

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

/* ---- helpers ---- */

static mr_arena *arena_on(mr_resource *up, size_t block, size_t max, size_t limit)
{
    mr_arena_options o = {0};
    o.upstream = up;
    o.block_size = block;
    o.max_block_size = max;
    o.limit = limit;
    mr_arena *a = mr_arena_create(&o);
    assert_non_null(a);
    assert_true(mr_arena_check(a));
    return a;
}

static mr_arena *arena_buf(mr_resource *up, void *buf, size_t size)
{
    mr_arena_options o = {0};
    o.upstream = up;
    o.buffer = buf;
    o.buffer_size = size;
    mr_arena *a = mr_arena_create(&o);
    assert_non_null(a);
    assert_true(mr_arena_check(a));
    return a;
}

static mr_stats stats(const mr_arena *a)
{
    mr_stats s;
    memset(&s, 0xEE, sizeof s);
    mr_arena_stats(a, &s);
    return s;
}

static void assert_mark_eq(mr_arena_mark x, mr_arena_mark y)
{
    assert_ptr_equal(x.mri_block, y.mri_block);
    assert_int_equal(x.mri_ptr, y.mri_ptr);
    assert_int_equal(x.mri_end, y.mri_end);
    assert_ptr_equal(x.mri_big, y.mri_big);
    assert_ptr_equal(x.mri_cleanups, y.mri_cleanups);
    assert_int_equal(x.mri_arena, y.mri_arena);
    assert_int_equal(x.mri_big_seq, y.mri_big_seq);
    assert_int_equal(x.mri_cleanup_seq, y.mri_cleanup_seq);
}

/* The arena's stats agree with what its (private) upstream saw. */
static void assert_agrees(const mr_arena *a, const mrt_upstream *u)
{
    mr_stats s = stats(a);
    mrt_assert_stats_agree(&s, u);
    assert_true(s.peak_held >= s.held);
}

/* Where the next n-byte allocation goes, without keeping it. */
/* Where the next allocation of n bytes lands: allocated and given back as
 * the newest (the resource view's deallocate), which leaves the arena as it
 * was -- a save and rewind would leave a mark behind, and an allocation
 * before a mark is not grown in place (mr_arena_realloc). */
static void *probe_n(mr_arena *a, size_t n)
{
    void *p = mr_arena_alloc(a, n);
    assert_non_null(p);
    mr_deallocate(mr_arena_resource(a), p, n, MR_ARENA_ALIGN);
    return p;
}

static void *probe(mr_arena *a) { return probe_n(a, 1); }

static unsigned char pat(size_t tag, size_t i) { return (unsigned char)(tag * 131u + i * 7u + 1u); }

static void fill(void *p, size_t n, size_t tag)
{
    unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        b[i] = pat(tag, i);
}

/* Index of the first wrong byte, or SIZE_MAX when all are right. */
static size_t verify(const void *p, size_t n, size_t tag)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i] != pat(tag, i))
            return i;
    return SIZE_MAX;
}

static bool all_zero(const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i] != 0)
            return false;
    return true;
}

/* Snapshot of everything a failed call must not change. */
typedef struct snapshot {
    mr_stats st;
    mr_arena_mark m;
    size_t upstream_allocations;
} snapshot;

static snapshot snap(const mr_arena *a, const mrt_upstream *u)
{
    snapshot s = {stats(a), mr_arena_save(a), u ? u->allocations : 0};
    return s;
}

static void assert_unchanged(const mr_arena *a, const mrt_upstream *u, const snapshot *before)
{
    mr_stats now = stats(a);
    mrt_assert_stats_equal(&now, &before->st);
    assert_mark_eq(mr_arena_save(a), before->m);
    if (u)
        assert_int_equal(u->allocations, before->upstream_allocations);
    assert_true(mr_arena_check(a));
}

/* Cleanups write their argument here, in the order they run. */
static intptr_t cleanup_log[4096];
static size_t cleanup_n;

static void log_cleanup(void *arg)
{
    if (cleanup_n < ARRAY_LEN(cleanup_log))
        cleanup_log[cleanup_n] = (intptr_t)arg;
    cleanup_n++;
}

static void assert_log(const intptr_t *want, size_t n)
{
    assert_int_equal(cleanup_n, n);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(cleanup_log[i], want[i]);
    cleanup_n = 0;
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

static const size_t bad_aligns[] = {0, 3, 5, 6, 12, 24, 48, 96, 100, 4095, 4097, 12288, SIZE_MAX, ((size_t)1 << 63) + 1};

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
    unsigned char *later = mr_arena_alloc(a, 4000); /* another block */
    assert_non_null(later);
    assert_ptr_equal(mr_arena_realloc(a, later, 4000, 4100), later);
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

/* ======================================================================
 * strdup, strndup, sprintf
 * ====================================================================== */

static char *vsp(mr_arena *a, const char *fmt, ...) MR_PRINTF(2, 3);
static char *vsp(mr_arena *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = mr_arena_vsprintf(a, fmt, ap);
    va_end(ap);
    return s;
}

static void test_strdup_strndup(void **state)
{
    mrt_upstream *u = *state;
    mr_arena *a = arena_on(&u->base, 4096, 0, 0);
    const char *src = "hello, arena";
    char *s = mr_arena_strdup(a, src);
    assert_non_null(s);
    assert_true(s != src);
    assert_string_equal(s, src);
    assert_true(mrt_upstream_owns(u, s));
    s = mr_arena_strdup(a, "");
    assert_non_null(s);
    assert_string_equal(s, "");

    /* longer than a block */
    char *longs = malloc(10001);
    assert_non_null(longs);
    for (size_t i = 0; i < 10000; i++)
        longs[i] = (char)('a' + i % 26);
    longs[10000] = '\0';
    s = mr_arena_strdup(a, longs);
    assert_non_null(s);
    assert_string_equal(s, longs);
    s = mr_arena_strndup(a, longs, 9000);
    assert_non_null(s);
    assert_int_equal(strlen(s), 9000);
    assert_memory_equal(s, longs, 9000);
    free(longs);

    const struct { size_t n; const char *want; } nd[] = {
        {0, ""}, {1, "a"}, {3, "abc"}, {6, "abcdef"}, {7, "abcdef"}, {100, "abcdef"},
        {SIZE_MAX, "abcdef"}, {SIZE_MAX - 1, "abcdef"}, {(size_t)PTRDIFF_MAX + 1, "abcdef"},
    };
    for (size_t i = 0; i < ARRAY_LEN(nd); i++) {
        s = mr_arena_strndup(a, "abcdef", nd[i].n);
        assert_non_null(s);
        assert_string_equal(s, nd[i].want);
    }
    /* strndup reads no further than n: a buffer with no NUL (ASan checks) */
    char *raw = malloc(4);
    assert_non_null(raw);
    memcpy(raw, "wxyz", 4);
    s = mr_arena_strndup(a, raw, 4);
    assert_non_null(s);
    assert_string_equal(s, "wxyz");
    s = mr_arena_strndup(a, raw, 2);
    assert_string_equal(s, "wx");
    free(raw);

    /* NULL string: EINVAL, nothing changed */
    void *next = probe(a);
    snapshot before = snap(a, u);
    mrt_assert_fails(mr_arena_strdup(a, NULL), EINVAL);
    assert_unchanged(a, u, &before);
    mrt_assert_fails(mr_arena_strndup(a, NULL, 3), EINVAL);
    assert_unchanged(a, u, &before);
    assert_ptr_equal(probe(a), next);
    mr_arena_destroy(a);
}

static void test_sprintf(void **state)
{
    mrt_upstream *u = *state;
    mr_arena *a = arena_on(&u->base, 4096, 0, 0);
    assert_non_null(mr_arena_alloc(a, 8));
    /* fits: packed at the top of the free space, byte by byte; the next
     * aligned allocation still goes where it would have gone */
    char *next = probe(a);
    char *s = mr_arena_sprintf(a, "x=%d y=%s z=%zu", 42, "hello", (size_t)7);
    assert_true(s > next);
    assert_string_equal(s, "x=42 y=hello z=7");
    assert_ptr_equal(probe(a), next);
    char *s2 = vsp(a, "%s-%d", "v", -1);
    assert_string_equal(s2, "v--1");
    assert_ptr_equal(s2 + strlen(s2) + 1, s); /* no rounding between strings */
    char *s3 = mr_arena_strdup(a, "abc");
    assert_ptr_equal(s3 + 4, s2);
    s = mr_arena_sprintf(a, "%s", "");
    assert_non_null(s);
    assert_string_equal(s, "");

    /* longer than a block */
    char *longs = malloc(10001);
    assert_non_null(longs);
    memset(longs, 'q', 10000);
    longs[10000] = '\0';
    s = mr_arena_sprintf(a, "<%s>", longs);
    assert_non_null(s);
    assert_int_equal(strlen(s), 10002);
    assert_int_equal(s[0], '<');
    assert_int_equal(s[10001], '>');
    assert_memory_equal(s + 1, longs, 10000);
    s = mr_arena_sprintf(a, "%s%s%s", longs, longs, longs);
    assert_non_null(s);
    assert_int_equal(strlen(s), 30000);
    free(longs);
    assert_true(mr_arena_check(a));
    assert_agrees(a, u);
    mr_arena_destroy(a);
}

/* The exact edge of the tail: a buffer arena whose free space is measured
 * first.  A string of tail-1 characters fits (with its NUL), one of tail
 * characters does not and goes to the upstream. */
static void test_sprintf_tail_edge(void **state)
{
    mrt_upstream *u = *state;
    alignas(max_align_t) unsigned char buf[2048];
    mr_arena *a = arena_buf(&u->base, buf, sizeof buf);
    mr_arena_mark start = mr_arena_save(a);
    size_t units = 0;
    for (;;) {
        unsigned char *p = mr_arena_alloc(a, A);
        assert_non_null(p);
        if (!(p >= buf && p < buf + sizeof buf))
            break;
        units++;
    }
    assert_true(units > 8);
    mr_arena_rewind(a, start);
    char str[4 * A + 1];
    memset(str, 'k', sizeof str - 1);
    for (size_t tailunits = 1; tailunits <= 4; tailunits++) {
        size_t tail = tailunits * A;
        for (size_t len = tail - 2; len <= tail; len++) {
            mr_arena_rewind(a, start);
            unsigned char *fillp = mr_arena_alloc(a, (units - tailunits) * A);
            assert_true(fillp >= buf && fillp < buf + sizeof buf);
            unsigned char *where = probe_n(a, 1);
            assert_true(where >= buf && where < buf + sizeof buf);
            char *s = mr_arena_sprintf(a, "%.*s", (int)len, str);
            assert_non_null(s);
            assert_int_equal(strlen(s), len);
            bool inbuf = (unsigned char *)s >= buf && (unsigned char *)s < buf + sizeof buf;
            if (len + 1 <= tail) {
                assert_true(inbuf);
                assert_ptr_equal(s + len + 1, where + tail); /* packed at the top */
            } else {
                assert_false(inbuf);
                assert_true(mrt_upstream_owns(u, s));
            }
            assert_true(mr_arena_check(a));
        }
    }
    mr_arena_destroy(a);
}

static void test_sprintf_failure(void **state)
{
    (void)state;
    alignas(max_align_t) unsigned char buf[1024];
    mr_arena *a = arena_buf(mr_null_resource(), buf, sizeof buf);
    char *s0 = mr_arena_sprintf(a, "%d", 1);
    assert_string_equal(s0, "1");
    void *next = probe(a);
    snapshot before = snap(a, NULL);
    char big[2048];
    memset(big, 'b', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    mrt_assert_fails(mr_arena_sprintf(a, "%s", big), ENOMEM);
    assert_unchanged(a, NULL, &before);
    /* more than INT_MAX characters: vsnprintf fails (EOVERFLOW) -- after
     * formatting 2 GiB of padding, which a scaled-down run (Valgrind) skips */
    if (mrt_scaled(100) == 100) {
        errno = 0;
        volatile int width = INT_MAX; /* hidden from the compiler's format check */
        assert_null(mr_arena_sprintf(a, "%*s%s", width, "", "x"));
        assert_true(errno != 0);
        assert_unchanged(a, NULL, &before);
    }
    assert_ptr_equal(probe(a), next);
    assert_string_equal(s0, "1");
    char *s = mr_arena_sprintf(a, "%s", "ok");
    assert_ptr_equal(s + 3, s0); /* packed right below the first string */
    assert_ptr_equal(probe(a), next);
    assert_string_equal(s, "ok");
    mr_arena_destroy(a);
}

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
 * buffer + null resource
 * ====================================================================== */

static void test_buffer_null_never_touches_heap(void **state)
{
    mrt_upstream *trap = *state; /* as the default: must never be called */
    mr_resource *prev = mr_set_default_resource(&trap->base);
    alignas(max_align_t) unsigned char buf[8192];
#if HAVE_MALLINFO2
    struct mallinfo2 before = mallinfo2();
#endif
    mr_arena *a = arena_buf(mr_null_resource(), buf, sizeof buf);
    unsigned char *lo = buf, *hi = buf + sizeof buf;
    assert_true((unsigned char *)a >= lo && (unsigned char *)a < hi);
    mr_arena_mark start = mr_arena_save(a);
    for (int round = 0; round < 3; round++) {
        unsigned char *p = mr_arena_alloc(a, 100);
        unsigned char *q = mr_arena_alloc_aligned(a, 64, 256);
        unsigned char *c = mr_arena_calloc(a, 10, 10);
        unsigned char *r = mr_arena_realloc(a, c, 100, 300);
        char *s = mr_arena_strdup(a, "stack");
        char *f = mr_arena_sprintf(a, "%d-%s", 12, "x");
        assert_int_equal(mr_arena_defer(a, log_cleanup, NULL), 0);
        unsigned char *all[] = {p, q, c, r, (unsigned char *)s, (unsigned char *)f};
        for (size_t i = 0; i < ARRAY_LEN(all); i++) {
            assert_non_null(all[i]);
            assert_true(all[i] >= lo && all[i] < hi);
        }
        assert_string_equal(f, "12-x");
        /* fill to the brim: clean ENOMEM */
        size_t n = 0;
        unsigned char *last = NULL, *x;
        while ((x = mr_arena_alloc(a, 48)) != NULL) {
            assert_true(x >= lo && x + 48 <= hi);
            last = x;
            n++;
        }
        assert_int_equal(errno, ENOMEM);
        assert_true(n > 10);
        (void)last;
        mrt_assert_fails(mr_arena_alloc(a, 100000), ENOMEM);
        assert_true(mr_arena_check(a));
        mr_stats st = stats(a);
        assert_int_equal(st.held, 0);
        assert_int_equal(st.upstream_allocations, 0);
        assert_true(st.in_use > 4096);
        /* usable after rewind: the same addresses again */
        cleanup_n = 0;
        mr_arena_rewind(a, start);
        assert_int_equal(cleanup_n, 1);
        cleanup_n = 0;
        assert_ptr_equal(probe_n(a, 100), p);
        if (round == 1)
            mr_arena_reset(a);
        if (round == 2)
            mr_arena_release(a);
    }
    mr_arena_destroy(a);
#if HAVE_MALLINFO2
    struct mallinfo2 after = mallinfo2();
    assert_int_equal(after.uordblks, before.uordblks);
    assert_int_equal(after.hblkhd, before.hblkhd);
#endif
    mr_set_default_resource(prev);
    assert_int_equal(trap->calls, 0);
    /* the buffer is ours again: writable (ASan: no poison left behind) */
    memset(buf, 0, sizeof buf);
}

static void test_buffer_misaligned(void **state)
{
    (void)state;
    alignas(max_align_t) unsigned char buf[4096 + 1];
    unsigned char *lo = buf + 1, *hi = buf + sizeof buf;
    mr_arena *a = arena_buf(mr_null_resource(), lo, 4096);
    assert_true((unsigned char *)a >= lo && (unsigned char *)a < hi);
    assert_true(is_aligned(a, alignof(void *)));
    size_t n = 0;
    unsigned char *p;
    while ((p = mr_arena_alloc(a, 24)) != NULL) {
        assert_true(is_aligned(p, A));
        assert_true(p >= lo && p + 24 <= hi);
        memset(p, 1, 24);
        n++;
    }
    assert_true(n > 50);
    mr_arena_destroy(a);
    memset(buf, 0, sizeof buf);
}

/* ======================================================================
 * limit
 * ====================================================================== */

static void test_limit(void **state)
{
    mrt_upstream *u = *state;
    u->log_requests = true;
    const size_t limit = 64 * KiB;
    mr_arena *a = arena_on(&u->base, 4096, 0, limit);
    size_t n = 0;
    for (;;) {
        errno = 0;
        void *p = mr_arena_alloc(a, 1000);
        mr_stats st = stats(a);
        assert_true(st.held <= limit);
        assert_true(u->bytes <= limit);
        if (p == NULL) {
            assert_int_equal(errno, ENOMEM);
            break;
        }
        n++;
        assert_true(n < 1000);
    }
    assert_true(n >= 40); /* most of the limit is usable */
    assert_true(u->peak_bytes <= limit);
    assert_true(stats(a).peak_held <= limit);
    assert_true(mr_arena_check(a));
    assert_agrees(a, u);
    /* a request that can never fit is refused without asking upstream for
     * more than the limit */
    mrt_assert_fails(mr_arena_alloc(a, 100000), ENOMEM);
    mrt_assert_fails(mr_arena_alloc_aligned(a, 1000, 65536), ENOMEM);
    for (size_t i = 0; i < u->calls; i++)
        assert_true(req_size(u, i) <= limit);
    assert_int_equal(u->failures, 0); /* the arena refused; upstream never hit */
    /* usable after reset, the same amount fits again */
    mr_arena_reset(a);
    size_t again = 0;
    while (mr_arena_alloc(a, 1000) != NULL)
        again++;
    assert_int_equal(again, n);
    /* after release too */
    mr_arena_release(a);
    again = 0;
    while (mr_arena_alloc(a, 1000) != NULL) {
        assert_true(stats(a).held <= limit);
        again++;
    }
    assert_true(again >= 40);
    assert_true(u->peak_bytes <= limit);
    mr_arena_destroy(a);
    mrt_assert_balanced(u);

    /* a limit that cuts the growth short: the last block is smaller, but
     * still rounded as every block is (64 bytes below a page, pages above) */
    {
        size_t ps = page_size();
        mr_arena *h = arena_on(&u->base, 4096, 0, 0);
        size_t header = u->bytes;
        mr_arena_destroy(h);
        mr_arena *c = arena_on(&u->base, 4096, 0, header + 4096 + 8192 + 6000);
        size_t from = u->calls;
        while (mr_arena_alloc(c, 512) != NULL) {
        }
        assert_true(u->calls - from >= 3);
        for (size_t i = from; i < u->calls; i++) {
            if (req_size(u, i) >= ps)
                assert_int_equal(req_size(u, i) % ps, 0);
            else
                assert_int_equal(req_size(u, i) % 64, 0);
        }
        assert_true(stats(c).held <= header + 4096 + 8192 + 6000);
        mr_arena_destroy(c);
        mrt_assert_balanced(u);
    }

    /* with a buffer: the buffer does not count against the limit */
    u->peak_bytes = 0;
    alignas(max_align_t) unsigned char buf[8192];
    mr_arena_options o = {0};
    o.upstream = &u->base;
    o.buffer = buf;
    o.buffer_size = sizeof buf;
    o.limit = 4096;
    a = mr_arena_create(&o);
    assert_non_null(a);
    size_t inbuf = 0;
    unsigned char *p;
    while ((p = mr_arena_alloc(a, 100)) != NULL) {
        if (p >= buf && p < buf + sizeof buf)
            inbuf++;
        assert_true(stats(a).held <= 4096);
    }
    assert_true(inbuf >= 60);
    assert_true(u->peak_bytes <= 4096);
    mr_arena_destroy(a);
}

/* ======================================================================
 * block sizes and dedicated blocks
 * ====================================================================== */

static void test_block_sizes(void **state)
{
    mrt_upstream *u = *state;
    u->log_requests = true;
    size_t ps = page_size();
    mr_arena *a = arena_on(&u->base, 4096, 65536, 0);
    size_t from = u->calls; /* after the header */
    while (u->calls - from < 12)
        assert_non_null(mr_arena_alloc(a, 100));
    assert_int_equal(req_size(u, from), 4096); /* exactly, not 4096 + a header */
    size_t prev = 0;
    for (size_t i = from; i < u->calls; i++) {
        size_t sz = req_size(u, i);
        if (sz >= ps)
            assert_int_equal(sz % ps, 0);
        else
            assert_int_equal(sz % 64, 0);
        assert_true(sz <= 65536);
        assert_true(sz >= prev); /* geometric: never shrinking */
        prev = sz;
    }
    assert_true(req_size(u, from + 1) > req_size(u, from)); /* it grows */
    assert_int_equal(req_size(u, u->calls - 1), 65536);     /* up to the cap */
    mr_arena_destroy(a);
    mrt_assert_balanced(u);

    /* an odd block size: every block a whole number of pages, growing to
     * the default cap */
    a = arena_on(&u->base, 5000, 0, 0);
    from = u->calls;
    while (u->calls - from < 12)
        assert_non_null(mr_arena_alloc(a, 4000));
    assert_int_equal(req_size(u, from), round_up(5000, ps));
    prev = 0;
    for (size_t i = from; i < u->calls; i++) {
        assert_int_equal(req_size(u, i) % ps, 0);
        assert_true(req_size(u, i) <= 2 * MiB + 8 * KiB); /* the default cap */
        assert_true(req_size(u, i) >= prev);
        prev = req_size(u, i);
    }
    mr_arena_destroy(a);
}

static void test_dedicated_block(void **state)
{
    mrt_upstream *u = *state;
    u->log_requests = true;
    size_t ps = page_size();
    mr_arena *a = arena_on(&u->base, 4096, 65536, 0);
    char *p = mr_arena_alloc(a, 16);
    assert_non_null(p);
    const size_t bigs[] = {100000, 65536 * 3, 3 * MiB};
    for (size_t i = 0; i < ARRAY_LEN(bigs); i++) {
        size_t req = u->calls;
        char *big = mr_arena_alloc(a, bigs[i]);
        assert_non_null(big);
        memset(big, 1, bigs[i]);
        assert_int_equal(u->calls, req + 1);
        size_t sz = req_size(u, req);
        assert_true(sz >= bigs[i]);
        assert_true(sz < bigs[i] + 2 * ps); /* not doubled */
        assert_int_equal(sz % ps, 0);
        /* the current block stays current */
        char *q = mr_arena_alloc(a, 16);
        assert_ptr_equal(q, p + 16);
        p = q;
    }
    /* an over-aligned big request too */
    char *al = mr_arena_alloc_aligned(a, 70000, 65536);
    assert_non_null(al);
    assert_true(is_aligned(al, 65536));
    memset(al, 2, 70000);
    char *q = mr_arena_alloc(a, 16);
    assert_ptr_equal(q, p + 16);
    /* and calloc, realloc, strdup of big sizes */
    p = q;
    char *z = mr_arena_calloc(a, 1, 200000);
    assert_non_null(z);
    assert_true(all_zero(z, 200000));
    q = mr_arena_alloc(a, 16);
    assert_ptr_equal(q, p + 16);
    assert_true(mr_arena_check(a));
    assert_agrees(a, u);
    mr_arena_destroy(a);
}

/* With the malloc resource as upstream (given, or the default), blocks of
 * MR_HUGE_PAGE_SIZE and more are mapped from mr_page_resource_huge():
 * 2 MiB-aligned.  Any other upstream sees them itself (test_dedicated_block). */
static void test_huge_page_blocks(void **state)
{
    (void)state;
    for (int how = 0; how < 2; how++) {
        mr_arena *a = how == 0 ? arena_on(mr_malloc_resource(), 0, 0, 0) : mr_arena_create(NULL);
        assert_non_null(a);
        unsigned char *small = mr_arena_alloc(a, 100);
        assert_non_null(small);
        const size_t sizes[] = {MR_HUGE_PAGE_SIZE, 3 * MiB, 5 * MiB + 17};
        for (size_t i = 0; i < ARRAY_LEN(sizes); i++) {
            unsigned char *p = mr_arena_alloc(a, sizes[i]);
            assert_non_null(p);
            assert_true(is_aligned(p, A));
            /* the block starts on a 2 MiB boundary; p is just past its header */
            assert_true(((uintptr_t)p & (MR_HUGE_PAGE_SIZE - 1)) < page_size());
            memset(p, (int)i, sizes[i]);
            assert_ptr_equal(mr_arena_alloc(a, 16), small + round_up(100, A) + 16 * i);
        }
        mr_stats st = stats(a);
        assert_true(st.held >= 10 * MiB);
        assert_true(mr_arena_check(a));
        mr_arena_mark m = mr_arena_save(a);
        void *again = mr_arena_alloc(a, 3 * MiB);
        mr_arena_rewind(a, m);
        assert_ptr_equal(mr_arena_alloc(a, 3 * MiB), again);
        mr_arena_release(a);
        st = stats(a);
        assert_true(st.held < MiB);
        assert_int_equal(st.upstream_allocations - st.upstream_deallocations, 1); /* the header */
        mr_arena_destroy(a);
    }
}

/* ======================================================================
 * fault sweep: the Nth upstream request fails
 * ====================================================================== */

typedef struct live_obj {
    unsigned char *p;
    size_t size, tag;
} live_obj;

typedef struct sweep {
    mr_arena *a;
    mrt_upstream *u;
    live_obj objs[256];
    size_t n;
    size_t failures;
    intptr_t deferred;
    bool retry;   /* single failure mode: retry once after a failure */
    size_t floor; /* objects below this index lie before the current mark */
} sweep;

static void sweep_verify(sweep *w)
{
    for (size_t i = 0; i < w->n; i++)
        assert_int_equal(verify(w->objs[i].p, w->objs[i].size, w->objs[i].tag), SIZE_MAX);
}

static void sweep_after_failure(sweep *w)
{
    assert_int_equal(errno, ENOMEM);
    w->failures++;
    assert_true(mr_arena_check(w->a));
    sweep_verify(w);
    /* usable: an allocation that fits without upstream still works, or
     * fails cleanly */
}

static void sweep_keep(sweep *w, void *p, size_t size)
{
    assert_true(w->n < ARRAY_LEN(w->objs));
    w->objs[w->n] = (live_obj){p, size, w->n + 100};
    fill(p, size, w->n + 100);
    w->n++;
}

/* One allocation step: kind 0 alloc, 1 aligned, 2 calloc, 3 strdup,
 * 4 sprintf, 5 realloc of the newest. */
static void sweep_step(sweep *w, int kind, size_t size)
{
    if (kind == 3 || kind == 4)
        size %= 19000;
    for (int attempt = 0; attempt < 2; attempt++) {
        errno = 0;
        void *p = NULL;
        static char text[20000];
        if (text[0] == '\0') {
            memset(text, 't', sizeof text - 1);
        }
        snapshot before = snap(w->a, w->u);
        switch (kind) {
        case 0: p = mr_arena_alloc(w->a, size); break;
        case 1: p = mr_arena_alloc_aligned(w->a, size, 4096); break;
        case 2: p = mr_arena_calloc(w->a, size, 1); break;
        case 3: p = mr_arena_strndup(w->a, text, size); break;
        case 4: p = mr_arena_sprintf(w->a, "%.*s", (int)size, text); break;
        default:
            if (w->n > w->floor) {
                live_obj *o = &w->objs[w->n - 1];
                p = mr_arena_realloc(w->a, o->p, o->size, size);
                if (p != NULL) {
                    assert_int_equal(verify(p, size < o->size ? size : o->size, o->tag), SIZE_MAX);
                    w->n--; /* replaced by the new one */
                }
            } else {
                p = mr_arena_alloc(w->a, size);
            }
            break;
        }
        if (p != NULL) {
            if (kind == 1)
                assert_true(is_aligned(p, 4096));
            if (kind == 2)
                assert_true(all_zero(p, size));
            if (kind == 3 || kind == 4)
                assert_int_equal(strlen(p), size);
            sweep_keep(w, p, kind == 3 || kind == 4 ? size + 1 : size);
            return;
        }
        mr_stats now = stats(w->a);
        if (now.held != before.st.held || now.in_use != before.st.in_use)
            fprintf(stderr, "# failed step changed the arena: kind %d size %zu: in_use %zu -> %zu, held %zu -> %zu\n",
                    kind, size, before.st.in_use, now.in_use, before.st.held, now.held);
        assert_unchanged(w->a, w->u, &before);
        sweep_after_failure(w);
        if (!w->retry)
            return;
    }
    fail_msg("a retry after a single injected failure failed too");
}

static void sweep_defer(sweep *w, intptr_t id)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        errno = 0;
        if (mr_arena_defer(w->a, log_cleanup, (void *)id) == 0) {
            w->deferred++;
            return;
        }
        sweep_after_failure(w);
        if (!w->retry)
            return;
    }
    fail_msg("a retry after a single injected failure failed too");
}

static void sweep_scenario(sweep *w)
{
    static const size_t sizes[] = {10, 100, 3000, 5000, 40, 100000, 7, 300000, 64, 9000};
    for (size_t i = 0; i < 30; i++)
        sweep_step(w, (int)(i % 6), sizes[i % ARRAY_LEN(sizes)] + i);
    mr_arena_mark m = mr_arena_save(w->a);
    size_t n_at_mark = w->n;
    intptr_t deferred_at_mark = w->deferred;
    w->floor = n_at_mark;
    cleanup_n = 0;
    for (intptr_t i = 0; i < 5; i++) {
        sweep_defer(w, i);
        sweep_step(w, 0, 2000);
    }
    for (size_t i = 0; i < 20; i++)
        sweep_step(w, (int)(i % 6), sizes[(i * 3) % ARRAY_LEN(sizes)]);
    mr_arena_rewind(w->a, m);
    assert_true(mr_arena_check(w->a));
    assert_int_equal(cleanup_n, (size_t)(w->deferred - deferred_at_mark));
    w->deferred = deferred_at_mark;
    w->n = n_at_mark;
    sweep_verify(w);
    for (size_t i = 0; i < 20; i++)
        sweep_step(w, (int)(i % 6), sizes[(i * 7) % ARRAY_LEN(sizes)] * 2);
    sweep_verify(w);
    mr_arena_reset(w->a);
    w->n = 0;
    w->floor = 0;
    assert_true(mr_arena_check(w->a));
    for (size_t i = 0; i < 30; i++)
        sweep_step(w, (int)(i % 6), sizes[i % ARRAY_LEN(sizes)]);
    sweep_verify(w);
    mr_arena_release(w->a);
    w->n = 0;
    assert_true(mr_arena_check(w->a));
    for (size_t i = 0; i < 10; i++)
        sweep_step(w, (int)(i % 6), sizes[i % ARRAY_LEN(sizes)]);
    sweep_verify(w);
}

/* The fault-sweep scenario (see mrt_fault_sweep): with a single failure
 * the arena's create and every step are retried once, and must then work. */
static bool sweep_run(mrt_upstream *u, void *ctx)
{
    (void)ctx;
    bool retry = !u->fail_all_after;
    mr_arena_options o = {0};
    o.upstream = &u->base;
    o.block_size = 4096;
    o.max_block_size = 32768;
    errno = 0;
    mr_arena *a = mr_arena_create(&o);
    bool create_failed = a == NULL;
    if (create_failed) {
        assert_int_equal(errno, ENOMEM);
        mrt_assert_balanced(u);
        if (!retry)
            return true;
        a = mr_arena_create(&o);
        assert_non_null(a);
    }
    static sweep w;
    memset(&w, 0, sizeof w);
    w.a = a;
    w.u = u;
    w.retry = retry;
    sweep_scenario(&w);
    cleanup_n = 0;
    mr_arena_destroy(a);
    return create_failed || w.failures > 0;
}

static void test_fault_sweep_nth(void **state)
{
    (void)state;
    mrt_fault_sweep("arena", sweep_run, NULL, MRT_FAIL_ONCE, 10); /* the scenario makes many upstream calls */
}

static void test_fault_sweep_all_after(void **state)
{
    (void)state;
    mrt_fault_sweep("arena", sweep_run, NULL, MRT_FAIL_FROM, 10);
}

/* ======================================================================
 * stats
 * ====================================================================== */

/* An allocation of alignment <= 8 that opens a new block lands where the
 * inline path puts it, at the top: given back as the newest through the
 * resource view and asked for again, it gets the same address, whichever
 * block it landed in (found by test_bridge, whose arena sat near the end of
 * a block under one heap layout: the slow path had carved from the bottom
 * and the next request then came from the top). */
static void test_down8_newest_across_blocks(void **state)
{
    mrt_upstream *u = *state;
    mr_resource *up = &u->base;
    for (size_t pre = 0; pre < 4096; pre += 8) {
        mr_arena *a = arena_on(up, 1024, 4096, 0);
        assert_non_null(a);
        mr_resource *r = mr_arena_resource(a);
        assert_non_null(mr_allocate(r, pre, 8));
        void *tmp = mr_allocate(r, 100, 8);
        assert_non_null(tmp);
        assert_int_equal((uintptr_t)tmp % 8, 0);
        mr_deallocate(r, tmp, 100, 8);
        assert_ptr_equal(mr_allocate(r, 100, 8), tmp);
        assert_true(mr_arena_check(a));
        mr_arena_destroy(a);
    }
}

static void test_stats(void **state)
{
    mrt_upstream *u = *state;
    mr_arena *a = arena_on(&u->base, 4096, 0, 0);
    mr_stats st = stats(a);
    assert_int_equal(st.in_use, 0);
    assert_int_equal(st.allocations, 0);
    assert_agrees(a, u);

    size_t count = 0, bytes = 0;
    for (size_t i = 1; i <= 300; i++) {
        assert_non_null(mr_arena_alloc(a, i * 3));
        count++;
        bytes += i * 3;
        if (i % 50 == 0) {
            st = stats(a);
            assert_int_equal(st.allocations, count);
            assert_true(st.in_use >= bytes);
            assert_true(st.in_use <= st.held);
            assert_agrees(a, u);
        }
    }
    assert_non_null(mr_arena_alloc_aligned(a, 10, 1024));
    assert_non_null(mr_arena_calloc(a, 10, 10));
    count += 2;
    assert_int_equal(stats(a).allocations, count);
    /* failed calls are not counted */
    assert_null(mr_arena_alloc_aligned(a, 10, 3));
    assert_null(mr_arena_alloc(a, SIZE_MAX));
    assert_null(mr_arena_calloc(a, SIZE_MAX, 2));
    assert_int_equal(stats(a).allocations, count);

    mr_arena_mark m = mr_arena_save(a);
    size_t use = stats(a).in_use;
    assert_non_null(mr_arena_alloc(a, 100000));
    assert_true(stats(a).in_use >= use + 100000);
    assert_agrees(a, u);
    mr_arena_rewind(a, m);
    assert_int_equal(stats(a).in_use, use);
    assert_agrees(a, u);
    mr_arena_reset(a);
    st = stats(a);
    assert_int_equal(st.in_use, 0);
    assert_agrees(a, u);
    size_t peak = st.peak_held;
    mr_arena_release(a);
    st = stats(a);
    assert_int_equal(st.in_use, 0);
    assert_int_equal(st.peak_held, peak);
    assert_agrees(a, u);
    mr_arena_destroy(a);
}

/* mr_stats.allocations counts every successful allocation, those of the
 * inline fast path too (a bump within the current block), and a rewind
 * neither moves it back nor costs an upstream call. */
static void test_stats_count_inline_path(void **state)
{
    mrt_upstream *u = *state;
    mr_arena *a = arena_on(&u->base, 4096, 0, 0);
    mr_arena_mark m = mr_arena_save(a);
    char *first = mr_arena_alloc(a, 24);
    assert_non_null(first);
    for (int i = 1; i < 1000; i++) {
        char *p = mr_arena_alloc(a, 24); /* inline, but for each new block */
        assert_non_null(p);
        memset(p, i & 0xff, 24);
    }
    mr_stats st = stats(a);
    assert_int_equal(st.allocations, 1000);
    assert_true(st.in_use >= 1000 * round_up(24, A));
    assert_non_null(mr_arena_alloc_aligned(a, 10, 256)); /* out of line */
    assert_int_equal(stats(a).allocations, 1001);
    assert_true(mr_arena_check(a));
    size_t calls = u->calls;
    mr_arena_rewind(a, m);
    assert_ptr_equal(mr_arena_alloc(a, 24), first);
    assert_int_equal(u->calls, calls);
    assert_int_equal(stats(a).allocations, 1002);
    mr_arena_destroy(a);
}

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

/* ======================================================================
 * seeded random stress against a shadow model
 * ====================================================================== */

typedef struct model_mark {
    mr_arena_mark m;
    size_t nobjs, ncleanups, in_use;
} model_mark;

typedef struct model {
    live_obj objs[4096];
    size_t n;
    model_mark marks[16];
    size_t nmarks;
    intptr_t cleanups[4096]; /* registered, in order */
    size_t ncleanups;
    size_t tag;
} model;

static void model_expect_cleanups(model *md, size_t keep)
{
    /* cleanups from index keep on must have run, last first */
    assert_int_equal(cleanup_n, md->ncleanups - keep);
    for (size_t i = 0; i < cleanup_n; i++)
        assert_int_equal(cleanup_log[i], md->cleanups[md->ncleanups - 1 - i]);
    cleanup_n = 0;
    md->ncleanups = keep;
}

static void model_verify(const model *md)
{
    for (size_t i = 0; i < md->n; i++)
        assert_int_equal(verify(md->objs[i].p, md->objs[i].size, md->objs[i].tag), SIZE_MAX);
}

static int cmp_obj(const void *x, const void *y)
{
    uintptr_t a = (uintptr_t)((const live_obj *)x)->p, b = (uintptr_t)((const live_obj *)y)->p;
    return a < b ? -1 : a > b;
}

static void model_disjoint(const model *md)
{
    static live_obj sorted[4096];
    memcpy(sorted, md->objs, md->n * sizeof sorted[0]);
    qsort(sorted, md->n, sizeof sorted[0], cmp_obj);
    for (size_t i = 1; i < md->n; i++)
        if (sorted[i - 1].size > 0)
            assert_true((uintptr_t)sorted[i - 1].p + sorted[i - 1].size <= (uintptr_t)sorted[i].p);
}

static void stress(mrt_upstream *u, uint64_t seed, bool with_buffer, size_t ops)
{
    uint64_t rng = seed;
    static model md;
    memset(&md, 0, sizeof md);
    static alignas(max_align_t) unsigned char buf[16384];
    mr_arena_options o = {0};
    o.upstream = &u->base;
    o.block_size = 1024;
    o.max_block_size = 16384;
    if (with_buffer) {
        o.buffer = buf;
        o.buffer_size = sizeof buf;
    }
    mr_arena *a = mr_arena_create(&o);
    assert_non_null(a);
    cleanup_n = 0;
    for (size_t step = 0; step < ops; step++) {
        uint64_t r = mrt_rand(&rng);
        unsigned op = (unsigned)(r % 100);
        r >>= 8;
        if (md.n >= ARRAY_LEN(md.objs) - 2 || md.ncleanups >= ARRAY_LEN(md.cleanups) - 2)
            op = 99; /* reset */
        if (op < 40) {
            size_t size = (r % 20 == 0) ? (size_t)(r >> 8) % 6000 : (r % 500 == 1) ? 20000 + (size_t)(r >> 8) % 50000 : (size_t)(r >> 8) % 200;
            unsigned char *p = mr_arena_alloc(a, size);
            assert_non_null(p);
            assert_true(is_aligned(p, A));
            fill(p, size, ++md.tag);
            md.objs[md.n++] = (live_obj){p, size, md.tag};
        } else if (op < 50) {
            size_t align = (size_t)1 << (r % 14);
            size_t size = (size_t)(r >> 8) % 300;
            unsigned char *p = mr_arena_alloc_aligned(a, size, align);
            assert_non_null(p);
            assert_true(is_aligned(p, align));
            fill(p, size, ++md.tag);
            md.objs[md.n++] = (live_obj){p, size, md.tag};
        } else if (op < 55) {
            size_t cnt = (size_t)r % 40, sz = (size_t)(r >> 8) % 20;
            unsigned char *p = mr_arena_calloc(a, cnt, sz);
            assert_non_null(p);
            assert_true(all_zero(p, cnt * sz));
            fill(p, cnt * sz, ++md.tag);
            md.objs[md.n++] = (live_obj){p, cnt * sz, md.tag};
        } else if (op < 63 && md.n > (md.nmarks ? md.marks[md.nmarks - 1].nobjs : 0)) {
            /* only objects after the newest mark: growing an older one in
             * place past a mark and rewinding would cut it */
            live_obj *ob = &md.objs[md.n - 1];
            size_t ns = (size_t)r % 3000;
            unsigned char *p = mr_arena_realloc(a, ob->p, ob->size, ns);
            assert_non_null(p);
            size_t keep = ns < ob->size ? ns : ob->size;
            assert_int_equal(verify(p, keep, ob->tag), SIZE_MAX);
            if (p != ob->p)
                assert_true(is_aligned(p, A));
            fill(p, ns, ++md.tag);
            *ob = (live_obj){p, ns, md.tag};
        } else if (op < 68) {
            size_t len = (size_t)r % 100;
            char *s = mr_arena_sprintf(a, "%zu:%.*s", len, (int)len, "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz");
            assert_non_null(s);
            char want[160];
            snprintf(want, sizeof want, "%zu:%.*s", len, (int)len, "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz");
            assert_string_equal(s, want);
            size_t sz = strlen(s) + 1;
            fill(s, sz, ++md.tag);
            md.objs[md.n++] = (live_obj){(unsigned char *)s, sz, md.tag};
        } else if (op < 76) {
            if (md.nmarks < ARRAY_LEN(md.marks))
                md.marks[md.nmarks++] = (model_mark){mr_arena_save(a), md.n, md.ncleanups, stats(a).in_use};
        } else if (op < 86) {
            if (md.nmarks > 0) {
                size_t k = (size_t)r % md.nmarks;
                mr_arena_rewind(a, md.marks[k].m);
                md.nmarks = k + 1;
                md.n = md.marks[k].nobjs;
                model_expect_cleanups(&md, md.marks[k].ncleanups);
                assert_int_equal(stats(a).in_use, md.marks[k].in_use);
                model_verify(&md);
            }
        } else if (op < 92) {
            intptr_t id = (intptr_t)step;
            assert_int_equal(mr_arena_defer(a, log_cleanup, (void *)id), 0);
            md.cleanups[md.ncleanups++] = id;
        } else if (op < 99 && op != 98) {
            /* a resource-view allocate + deallocate of the newest */
            mr_resource *rv = mr_arena_resource(a);
            size_t sz = (size_t)r % 500;
            void *p = mr_allocate(rv, sz, 32);
            assert_non_null(p);
            assert_true(is_aligned(p, 32));
            mr_deallocate(rv, p, sz, 32);
        } else {
            if ((r & 7) == 0) {
                mr_arena_release(a);
                if (!with_buffer)
                    assert_int_equal(mrt_upstream_live(u), 1);
            } else {
                size_t calls = u->calls;
                mr_arena_reset(a);
                assert_int_equal(u->calls, calls);
            }
            md.n = 0;
            md.nmarks = 0;
            model_expect_cleanups(&md, 0);
            assert_int_equal(stats(a).in_use, 0);
        }
        assert_true(mr_arena_check(a));
        assert_agrees(a, u);
        if (step % 64 == 0) {
            model_verify(&md);
            model_disjoint(&md);
        }
    }
    model_verify(&md);
    model_disjoint(&md);
    mr_arena_destroy(a);
    model_expect_cleanups(&md, 0);
}

static void test_stress(void **state)
{
    mrt_upstream *u = *state;
    uint64_t seed = mrt_seed(20240601);
    stress(u, seed, false, mrt_scaled(20000));
    mrt_upstream_restart(u);
    stress(u, seed + 1, true, mrt_scaled(20000));
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
        mrt_unit_test(test_strdup_strndup),
        mrt_unit_test(test_sprintf),
        mrt_unit_test(test_sprintf_tail_edge),
        cmocka_unit_test(test_sprintf_failure),
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
        mrt_unit_test(test_buffer_null_never_touches_heap),
        cmocka_unit_test(test_buffer_misaligned),
        mrt_unit_test(test_limit),
        mrt_unit_test(test_block_sizes),
        mrt_unit_test(test_dedicated_block),
        cmocka_unit_test(test_huge_page_blocks),
        cmocka_unit_test(test_fault_sweep_nth),
        cmocka_unit_test(test_fault_sweep_all_after),
        mrt_unit_test(test_stats),
        mrt_unit_test(test_down8_newest_across_blocks),
        mrt_unit_test(test_stats_count_inline_path),
        mrt_unit_test(test_arena_on_arena),
        mrt_unit_test(test_resource_view),
        mrt_unit_test(test_merge_objects_outlive_from),
        mrt_unit_test(test_merge_rewind_frees_merged),
        mrt_unit_test(test_merge_refusals),
        cmocka_unit_test(test_merge_fault_sweep),
        mrt_unit_test(test_stress),
    };
    return cmocka_run_group_tests_name("arena", tests, NULL, NULL);
}
