/* SPDX-License-Identifier: MIT */
/* tests/test_pools.c -- size-class pools (memres/pools.h).
 *
 * Every clause of the header's contract: class rounding (bounded waste for
 * every size up to 64 KiB), alignment 1..4096 from the pools and above it
 * from upstream, reuse without upstream traffic, direct (large) requests
 * tracked and returned at once, reset keeping chunks, release and destroy
 * balanced, chunk sizes never a power of two plus a header, memory back
 * to the OS after a destroy over malloc (RSS, in a child), bad input,
 * stats, options, the resource view, a thread-safe pool on one thread; a fault sweep
 * (fail the Nth upstream request for every N until the scenario completes);
 * and a seeded random stress against a shadow model that writes a pattern
 * into every block and checks it before the block is freed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support.h"

#if defined(__SANITIZE_THREAD__)
#  define THREAD_SANITIZED 1
#elif defined(__has_feature)
#  if __has_feature(thread_sanitizer)
#    define THREAD_SANITIZED 1
#  endif
#endif
#ifndef THREAD_SANITIZED
#  define THREAD_SANITIZED 0
#endif

#define KiB ((size_t)1024)

static void assert_aligned(const void *p, size_t align)
{
    assert_int_equal((uintptr_t)p & (align - 1), 0);
}

static mr_pools *make(mrt_upstream *u, size_t largest, size_t max_blocks)
{
    mr_pools_options o = {.upstream = &u->base, .max_blocks_per_chunk = max_blocks, .largest_required_pool_block = largest};
    mr_pools *p = mr_pools_create(&o);
    assert_non_null(p);
    assert_true(mr_pools_check(p));
    return p;
}

/* The fixture's teardown (or mrt_upstream_restart) then finds the upstream
 * balanced: destroy returns everything, live blocks included. */
static void destroy_checked(mr_pools *p)
{
    assert_true(mr_pools_check(p));
    mr_pools_destroy(p);
}

static mr_stats stats_of(const mr_pools *p)
{
    mr_stats s;
    mr_pools_stats(p, &s);
    return s;
}

static void fill(void *p, size_t n, unsigned tag)
{
    unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)(tag + i * 131u);
}

static void verify(const void *p, size_t n, unsigned tag)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i] != (unsigned char)(tag + i * 131u))
            fail_msg("block %p byte %zu of %zu: 0x%02x, expected 0x%02x", p, i, n, b[i],
                     (unsigned char)(tag + i * 131u));
}

/* ---- classes ---- */

static void test_class_rounding(void **state)
{
    mrt_upstream *u = *state;
    mr_pools *p = make(u, 0, 0);
    size_t prev = 0, classes = 0;
    for (size_t size = 1; size <= 64 * KiB; size++) {
        size_t b = mr_pools_block_size(p, size, 1);
        if (b < size || b % 8 != 0)
            fail_msg("size %zu: block %zu", size, b);
        if (size <= 256 && b - size >= 8)
            fail_msg("size %zu: block %zu wastes >= 8 bytes", size, b);
        if (size > 256 && (b - size) * 8 > size)
            fail_msg("size %zu: block %zu wastes more than 12.5%%", size, b);
        if (b < prev)
            fail_msg("size %zu: block %zu smaller than for size - 1 (%zu)", size, b, prev);
        if (b != prev)
            classes++;
        /* asking for the block size gets the same block */
        if (mr_pools_block_size(p, b, 1) != b || mr_pools_block_size(p, size, 8) != b)
            fail_msg("size %zu: block %zu not stable", size, b);
        /* alignment 16: the multiples of 16 */
        if (mr_pools_block_size(p, size, 16) != ((b + 15) & ~(size_t)15))
            fail_msg("size %zu, align 16: block %zu", size, mr_pools_block_size(p, size, 16));
        prev = b;
    }
    assert_int_equal(prev, 64 * KiB);
    assert_int_equal(classes, 32 + 8 * 8); /* 8..256, then 8 per power of two to 64 KiB */
    /* 8-byte steps: three-pointer structs and Lua's 40- and 56-byte objects */
    assert_int_equal(mr_pools_block_size(p, 24, 8), 24);
    assert_int_equal(mr_pools_block_size(p, 40, 8), 40);
    assert_int_equal(mr_pools_block_size(p, 56, 8), 56);
    assert_int_equal(mr_pools_block_size(p, 24, 16), 32);
    assert_int_equal(mr_pools_block_size(p, 136, 8), 136);
    assert_int_equal(mr_pools_block_size(p, 136, 16), 144);
    assert_int_equal(mr_pools_block_size(p, 257, 8), 288);
    /* SQLite's page buffers and journal chunks with their size word */
    assert_int_equal(mr_pools_block_size(p, 4368, 8), 4608);
    assert_int_equal(mr_pools_block_size(p, 1040, 8), 1152);
    assert_int_equal(mr_pools_block_size(p, 0, 1), 8);
    assert_int_equal(mr_pools_block_size(p, 0, 16), 16);
    assert_int_equal(mr_pools_block_size(p, 64 * KiB + 1, 1), 64 * KiB + 1); /* direct */
    /* the class is that of max(size, align) rounded to a multiple of align */
    assert_int_equal(mr_pools_block_size(p, 8, 64), 64);
    assert_int_equal(mr_pools_block_size(p, 129, 64), 192);
    assert_int_equal(mr_pools_block_size(p, 129, 128), 256);
    assert_int_equal(mr_pools_block_size(p, 1, 4096), 4096);
    assert_int_equal(mr_pools_block_size(p, 4097, 4096), 8192);
    assert_int_equal(mr_pools_block_size(p, 1, 8192), 1);      /* above MR_POOLS_MAX_ALIGN: direct */
    assert_int_equal(mr_pools_block_size(p, 1, 3), 0);         /* bad alignment */
    assert_int_equal(mr_pools_block_size(p, SIZE_MAX, 1), 0);  /* impossible */
    assert_int_equal(u->calls, 1);                              /* queries allocate nothing */

    /* the blocks really are that size: stats count them so, and two fresh
     * blocks of a class are one block apart */
    static const size_t probe[] = {1, 8, 15, 16, 17, 24, 100, 128, 129, 200, 1000, 1025, 3000, 5000, 40000, 65536};
    for (size_t i = 0; i < sizeof probe / sizeof probe[0]; i++)
        for (size_t align = 1; align <= 16; align *= 2) {
            size_t b = mr_pools_block_size(p, probe[i], align);
            mr_stats before = stats_of(p);
            char *x = mr_pools_alloc(p, probe[i], align);
            char *y = mr_pools_alloc(p, probe[i], align);
            assert_non_null(x);
            assert_non_null(y);
            assert_aligned(x, align);
            assert_aligned(y, align);
            mr_stats after = stats_of(p);
            assert_int_equal(after.in_use - before.in_use, 2 * b);
            if (b <= 2048) /* the first chunk of such a class holds two blocks or more */
                assert_int_equal((size_t)(y - x), b);
            mr_pools_free(p, y, probe[i], align);
            mr_pools_free(p, x, probe[i], align);
            assert_int_equal(stats_of(p).in_use, before.in_use);
        }
    destroy_checked(p);
}

/* The class the allocation paths compute (a table below 1 KiB, a bit scan
 * above) is the one mr_pools_block_size answers, for every pooled size and
 * alignments 8 and 16: a block resized to its block size stays, and a
 * block of a class's largest size resized one byte more (the next class)
 * moves; the pool stays consistent. */
static void test_class_of_matches_block_size(void **state)
{
    mrt_upstream *u = *state;
    mr_pools *p = make(u, 0, 0);
    for (size_t align = 8; align <= 16; align *= 2)
        for (size_t size = 1; size <= 64 * KiB; size++) {
            size_t b = mr_pools_block_size(p, size, align);
            void *q = mr_pools_alloc(p, size, align);
            assert_non_null(q);
            assert_int_equal((uintptr_t)q % align, 0);
            if (mr_pools_realloc(p, q, size, b, align) != q)
                fail_msg("size %zu, align %zu: resized to its block %zu, it moved", size, align, b);
            if (size == b && b < 64 * KiB) { /* once a class: the copy is b bytes */
                void *r = mr_pools_realloc(p, q, b, b + 1, align);
                if (r == NULL || r == q)
                    fail_msg("size %zu, align %zu: resized to %zu, past its block %zu, it stayed", size, align,
                             b + 1, b);
                mr_pools_free(p, r, b + 1, align);
            } else {
                mr_pools_free(p, q, b, align);
            }
        }
    assert_int_equal(stats_of(p).in_use, 0);
    destroy_checked(p);
}

/* mr_pools_realloc: in place within a class, moved (bytes kept) across
 * classes and to and from direct blocks, NULL, bad alignment, and a failed
 * move that leaves the block as it was. */
static void test_resize(void **state)
{
    mrt_upstream *u = *state;
    mr_pools *p = make(u, 0, 0);
    char *a = mr_pools_realloc(p, NULL, 0, 100, 8); /* NULL: allocates */
    assert_non_null(a);
    fill(a, 100, 1);
    size_t b100 = mr_pools_block_size(p, 100, 8);
    assert_ptr_equal(mr_pools_realloc(p, a, 100, b100, 8), a); /* same class: stays */
    assert_ptr_equal(mr_pools_realloc(p, a, b100, 97, 8), a);
    char *b = mr_pools_realloc(p, a, 97, 3000, 8); /* across classes: moves */
    assert_non_null(b);
    assert_ptr_not_equal(b, a);
    verify(b, 97, 1);
    assert_ptr_equal(mr_pools_realloc(p, b, 3000, 2900, 8), b); /* 2900 and 3000: one class */
    char *c = mr_pools_realloc(p, b, 2900, 100 * KiB, 8);     /* to a direct block */
    assert_non_null(c);
    verify(c, 97, 1);
    mrt_assert_fails(mr_pools_realloc(p, c, 100 * KiB, 40, 3), EINVAL);
    char *d = mr_pools_realloc(p, c, 100 * KiB, 40, 8); /* back into a class */
    assert_non_null(d);
    verify(d, 40, 1);
    /* a move that needs a new chunk, which the upstream refuses: d is kept */
    mr_stats before = stats_of(p);
    u->fail_at = u->calls + 1;
    mrt_assert_fails(mr_pools_realloc(p, d, 40, 20 * KiB, 8), ENOMEM);
    u->fail_at = 0;
    mr_stats after = stats_of(p);
    mrt_assert_stats_equal(&before, &after);
    verify(d, 40, 1);
    char *e = mr_pools_realloc(p, d, 40, 0, 8); /* size 0: the 0-byte request's block */
    assert_non_null(e);
    mr_pools_free(p, e, 0, 8);
    assert_int_equal(stats_of(p).in_use, 0);
    destroy_checked(p);
}

static void test_alignment(void **state)
{
    mrt_upstream *u = *state;
    static const size_t sizes[] = {0, 1, 7, 16, 17, 48, 100, 129, 200, 1000, 3000, 4096, 5000, 20000};
    mr_pools *p = make(u, 0, 0);
    for (size_t align = 1; align <= 16384; align *= 2) {
        for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
            size_t size = sizes[si];
            void *blk[5];
            for (int k = 0; k < 5; k++) {
                blk[k] = mr_pools_alloc(p, size, align);
                assert_non_null(blk[k]);
                assert_aligned(blk[k], align);
                fill(blk[k], size, (unsigned)k + (unsigned)si);
            }
            for (int k = 0; k < 5; k++) {
                verify(blk[k], size, (unsigned)k + (unsigned)si);
                for (int j = 0; j < k; j++)
                    assert_ptr_not_equal(blk[j], blk[k]);
            }
            bool direct = align > MR_POOLS_MAX_ALIGN;
            size_t live = mrt_upstream_live(u);
            for (int k = 0; k < 5; k++)
                mr_pools_free(p, blk[k], size, align);
            if (direct)
                assert_int_equal(mrt_upstream_live(u), live - 5);
            assert_true(mr_pools_check(p));
        }
    }
    assert_int_equal(stats_of(p).in_use, 0);
    destroy_checked(p);
}

/* ---- reuse, reset, release ---- */

static void test_reuse_without_upstream(void **state)
{
    mrt_upstream *u = *state;
    enum { N = 3000 };
    static void *blk[N];
    mr_pools *p = make(u, 0, 0);
    for (int round = 0; round < 4; round++) {
        size_t calls0 = u->calls;
        for (int i = 0; i < N; i++) {
            size_t size = (size_t)i * 37 % 2000;
            blk[i] = mr_pools_alloc(p, size, 8);
            assert_non_null(blk[i]);
            fill(blk[i], size, (unsigned)i);
        }
        size_t calls = u->calls;
        for (int i = 0; i < N; i++) {
            size_t size = (size_t)i * 37 % 2000;
            verify(blk[i], size, (unsigned)i);
            mr_pools_free(p, blk[i], size, 8);
        }
        assert_int_equal(u->calls, calls);
        assert_int_equal(u->deallocations, 0);
        if (round > 0) /* after the first round every block comes from a free list */
            assert_int_equal(u->calls, calls0);
        assert_true(mr_pools_check(p));
    }
    size_t calls = u->calls;
    /* LIFO: the block freed last comes back first */
    void *a = mr_pools_alloc(p, 300, 16);
    mr_pools_free(p, a, 300, 16);
    assert_ptr_equal(mr_pools_alloc(p, 290, 1), a);
    mr_pools_free(p, a, 290, 1);
    assert_int_equal(u->calls, calls);
    destroy_checked(p);
}

static void test_reset_keeps_chunks(void **state)
{
    mrt_upstream *u = *state;
    enum { N = 2000 };
    static void *first[N];
    mr_pools *p = make(u, 0, 0);
    for (int i = 0; i < N; i++) {
        first[i] = mr_pools_alloc(p, (size_t)(i % 700), 1);
        assert_non_null(first[i]);
    }
    void *big = mr_pools_alloc(p, 100 * KiB, 16); /* direct: reset returns it */
    assert_non_null(big);
    size_t live = mrt_upstream_live(u), calls = u->calls;
    mr_stats before = stats_of(p);
    mr_pools_reset(p);
    assert_true(mr_pools_check(p));
    assert_int_equal(mrt_upstream_live(u), live - 1);
    mr_stats after = stats_of(p);
    assert_int_equal(after.in_use, 0);
    assert_int_equal(after.held, before.held - (100 * KiB + 32));
    assert_int_equal(after.allocations, before.allocations);
    /* the same sequence gets the same blocks, with no upstream call */
    for (int i = 0; i < N; i++)
        assert_ptr_equal(mr_pools_alloc(p, (size_t)(i % 700), 1), first[i]);
    assert_int_equal(u->calls, calls);
    assert_true(mr_pools_check(p));
    mr_pools_reset(p);
    mr_pools_reset(p); /* twice is fine */
    assert_true(mr_pools_check(p));
    destroy_checked(p);
}

static void test_release_and_destroy_balanced(void **state)
{
    mrt_upstream *u = *state;
    mr_pools *p = make(u, 0, 0);
    for (int round = 0; round < 3; round++) {
        for (size_t i = 0; i < 5000; i++)
            assert_non_null(mr_pools_alloc(p, i % 5000, (size_t)1 << (i % 8)));
        for (size_t i = 0; i < 5; i++)
            assert_non_null(mr_pools_alloc(p, 70 * KiB + i, i % 2 ? 8192 : 8));
        assert_true(mr_pools_check(p));
        mr_pools_release(p);
        assert_true(mr_pools_check(p));
        assert_int_equal(mrt_upstream_live(u), 1); /* the header */
        mr_stats s = stats_of(p);
        assert_int_equal(s.in_use, 0);
        assert_int_equal(s.held, u->bytes);
        assert_int_equal(s.upstream_allocations - s.upstream_deallocations, 1);
    }
    mr_pools_release(p); /* twice is fine */
    /* destroy with everything still live returns everything */
    for (size_t i = 0; i < 1000; i++)
        assert_non_null(mr_pools_alloc(p, i * 3, 16));
    assert_non_null(mr_pools_alloc(p, 1 * KiB * KiB, 64));
    destroy_checked(p);
    mr_pools_destroy(NULL);
}

static void test_direct_tracked(void **state)
{
    mrt_upstream *u = *state;
    mr_pools *p = make(u, 0, 0);
    enum { N = 40 };
    void *blk[N];
    size_t sizes[N], aligns[N];
    for (int i = 0; i < N; i++) {
        sizes[i] = 64 * KiB + 1 + (size_t)i * 4099;
        aligns[i] = (size_t)1 << (i % 15);
        size_t live = mrt_upstream_live(u);
        blk[i] = mr_pools_alloc(p, sizes[i], aligns[i]);
        assert_non_null(blk[i]);
        assert_aligned(blk[i], aligns[i]);
        assert_int_equal(mrt_upstream_live(u), live + 1); /* exactly one upstream block each */
        /* asking upstream for no more alignment than the request needs */
        assert_int_equal(u->live[u->nlive - 1].align, aligns[i] > 16 ? aligns[i] : 16);
        fill(blk[i], sizes[i], (unsigned)i);
    }
    size_t in_use = stats_of(p).in_use;
    for (int i = 0; i < N; i += 2) { /* free every other one: returned at once */
        verify(blk[i], sizes[i], (unsigned)i);
        size_t live = mrt_upstream_live(u), bytes = u->bytes;
        mr_pools_free(p, blk[i], sizes[i], aligns[i]);
        assert_int_equal(mrt_upstream_live(u), live - 1);
        assert_true(u->bytes < bytes - sizes[i] + 1);
        in_use -= sizes[i];
        assert_int_equal(stats_of(p).in_use, in_use);
        assert_true(mr_pools_check(p));
    }
    for (int i = 1; i < N; i += 2)
        verify(blk[i], sizes[i], (unsigned)i);
    /* small but over-aligned requests go direct too */
    void *a = mr_pools_alloc(p, 1, 65536);
    assert_non_null(a);
    assert_aligned(a, 65536);
    mr_pools_release(p); /* frees the rest */
    assert_int_equal(mrt_upstream_live(u), 1);
    assert_int_equal(u->bad_deallocations, 0);
    destroy_checked(p);
}

/* ---- chunks ---- */

static void test_chunk_sizes(void **state)
{
    mrt_upstream *u = *state;
    mr_pools *p = make(u, 0, 0);
    assert_int_equal(u->nlive, 1);
    const void *header = u->live[0].p; /* the pool's own header: not a chunk */
    /* every class, many blocks each */
    for (size_t size = 16; size <= 64 * KiB; size += size / 4 > 16 ? size / 4 : 16)
        for (int i = 0; i < 200; i++)
            assert_non_null(mr_pools_alloc(p, size, 1));
    for (size_t i = 0; i < u->nlive; i++) {
        size_t n = u->live[i].size;
        if (u->live[i].p != header && (n % 64 != 0 || (n >= 4096 && n % 4096 != 0)))
            fail_msg("upstream block of %zu bytes is not a multiple of 64 / of pages", n);
    }
    destroy_checked(p);
    mrt_upstream_restart(u);

    /* growth is geometric up to the 64 KiB cap: a million 16-byte blocks
     * take about 16 MB / 64 KiB chunks */
    p = make(u, 0, 0);
    for (int i = 0; i < 1000000; i++)
        assert_non_null(mr_pools_alloc(p, 16, 16));
    assert_true(u->allocations < 16000000 / (64 * KiB) + 20);
    mr_stats s = stats_of(p);
    assert_int_equal(s.in_use, 16000000);
    assert_true(s.held < s.in_use + s.in_use / 33); /* < 3% overhead */
    destroy_checked(p);
    mrt_upstream_restart(u);

    /* max_blocks_per_chunk = 1: a chunk per block for a class of 4 KiB */
    p = make(u, 0, 1);
    size_t before = u->allocations;
    for (int i = 0; i < 10; i++)
        assert_non_null(mr_pools_alloc(p, 4096, 4096));
    assert_int_equal(u->allocations - before, 10 + 1); /* + one page of chunk records */
    destroy_checked(p);
}

/* Empty chunks go back: a class's free blocks that fill whole chunks are
 * returned upstream once another class takes memory, so a program that
 * moves from one size to another holds about its peak, not the sum of the
 * classes' peaks; a chunk with one live block stays, with its data. */
static void test_empty_chunks_go_back(void **state)
{
    mrt_upstream *u = *state;
    enum { NA = 40000, NB = 2600 };
    static void *a[NA], *b[NB];
    mr_pools *p = make(u, 0, 0);
    /* phase A: 2.5 MB of 64-byte blocks, then all but every 1000th freed
     * (blocks of the first chunks: those chunks must stay) */
    for (int i = 0; i < NA; i++) {
        a[i] = mr_pools_alloc(p, 64, 8);
        assert_non_null(a[i]);
        fill(a[i], 64, (unsigned)i);
    }
    for (int i = 0; i < NA; i++)
        if (i % 1000 != 0 || i >= 4000)
            mr_pools_free(p, a[i], 64, 8);
    size_t held_a = stats_of(p).held, deallocs = u->deallocations;
    assert_true(mr_pools_check(p));
    /* phase B: 2.5 MB of 1000-byte blocks */
    for (int i = 0; i < NB; i++) {
        b[i] = mr_pools_alloc(p, 1000, 8);
        assert_non_null(b[i]);
        fill(b[i], 1000, (unsigned)i);
        if (i % 500 == 0)
            assert_true(mr_pools_check(p));
    }
    assert_true(mr_pools_check(p));
    mr_stats s = stats_of(p);
    assert_true(u->deallocations > deallocs);
    /* what is held beyond the live blocks: class A's kept slack (at most its
     * current chunk, 64 KiB), its chunks with a live block, class B's last
     * chunk's tail, header and records -- not the 2.5 MB A freed */
    assert_true(s.held - s.in_use < 900 * KiB);
    assert_true(s.held < held_a + NB * 1024 / 2);
    assert_int_equal(s.held, u->bytes);
    /* the survivors kept their data; class A still serves, from upstream again */
    for (int i = 0; i < 4000; i += 1000)
        verify(a[i], 64, (unsigned)i);
    for (int i = 0; i < NA; i++)
        if (i % 1000 != 0 || i >= 4000) {
            a[i] = mr_pools_alloc(p, 64, 8);
            assert_non_null(a[i]);
            fill(a[i], 64, (unsigned)i);
        }
    for (int i = 0; i < NA; i++)
        verify(a[i], 64, (unsigned)i);
    for (int i = 0; i < NB; i++)
        verify(b[i], 1000, (unsigned)i);
    assert_true(mr_pools_check(p));

    /* a swing inside the kept slack takes nothing from upstream: free a
     * chunk's worth of A and allocate it again while B grows */
    for (int i = 0; i < NA; i++)
        mr_pools_free(p, a[i], 64, 8);
    for (int i = 0; i < NB; i++)
        mr_pools_free(p, b[i], 1000, 8);
    for (int i = 0; i < NB; i++)
        assert_non_null(b[i] = mr_pools_alloc(p, 1000, 8)); /* no upstream: the free list */
    size_t calls = u->calls;
    for (int i = 0; i < 4000; i++)
        assert_non_null(a[i] = mr_pools_alloc(p, 64, 8));
    assert_int_equal(u->calls, calls);
    assert_true(mr_pools_check(p));

    /* reset after chunks went back: the remaining chunks are carved again */
    mr_pools_reset(p);
    assert_true(mr_pools_check(p));
    for (int i = 0; i < NA; i++)
        assert_non_null(a[i] = mr_pools_alloc(p, 64, 8));
    assert_true(mr_pools_check(p));
    mr_pools_release(p);
    assert_int_equal(mrt_upstream_live(u), 1);
    destroy_checked(p);
}

/* A class of more chunks than one walk looks at (TRIM_BATCH x TRIM_PASSES
 * = 512 in pools.c) gives them back over several walks, each starting
 * where the last stopped, every walk bounded. */
static void test_empty_chunks_many(void **state)
{
    mrt_upstream *u = *state;
    enum { N = 8000, CHUNK = 8 }; /* 1000 chunks of 8 blocks */
    static void *a[N];
    mr_pools *p = make(u, 0, CHUNK);
    for (int i = 0; i < N; i++)
        assert_non_null(a[i] = mr_pools_alloc(p, 64, 8));
    for (int i = 0; i < N; i++)
        mr_pools_free(p, a[i], 64, 8);
    size_t chunks = u->nlive, before = u->deallocations;
    void *other[64];
    int k = 0;
    assert_non_null(other[k++] = mr_pools_alloc(p, 1000, 8)); /* a new chunk: a walk */
    size_t first = u->deallocations - before;
    assert_true(first > 0 && first <= 512);
    assert_true(mr_pools_check(p));
    for (int round = 0; round < 8 && u->deallocations - before < chunks - 20; round++) {
        /* frees enough for another walk, and another class's new chunk */
        for (int i = 0; i < 2000; i++)
            assert_non_null(a[i] = mr_pools_alloc(p, 64, 8));
        for (int i = 0; i < 2000; i++)
            mr_pools_free(p, a[i], 64, 8);
        for (int j = 0; j < CHUNK; j++)
            assert_non_null(other[k % 64] = mr_pools_alloc(p, 2000 + (size_t)round * 300, 8)), k++;
        assert_true(mr_pools_check(p));
    }
    /* all but the kept slack went back, 512 chunks a walk at most */
    assert_true(u->deallocations - before > first);
    assert_true(stats_of(p).held < 200 * CHUNK * 64 + 100 * KiB);
    destroy_checked(p);
}

/* Idle classes give their pages to the OS (pools.h, "Memory"): a class with
 * no live block and no allocation through one upstream take of the pool is
 * rewound and its chunks' whole pages advised away at the next take; a class
 * with a live block, or used in between, keeps them.  Nothing is given back
 * upstream, and the class carves the same blocks again.  (The classes'
 * free lists stay below the 64 KiB at which trim would give whole chunks
 * back upstream first.) */
#if defined(__linux__)
#  include <sys/mman.h>
#  include <unistd.h>

/* Resident pages among the whole pages inside [b, b + n); *whole: how many. */
static size_t resident(const void *b, size_t n, size_t *whole)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = ((uintptr_t)b + page - 1) & ~(uintptr_t)(page - 1);
    uintptr_t hi = ((uintptr_t)b + n) & ~(uintptr_t)(page - 1);
    unsigned char vec[64];
    *whole = hi > lo ? (hi - lo) / page : 0;
    assert_true(*whole <= sizeof vec);
    if (*whole == 0)
        return 0;
    assert_int_equal(mincore((void *)lo, hi - lo, vec), 0);
    size_t r = 0;
    for (size_t i = 0; i < *whole; i++)
        r += vec[i] & 1;
    return r;
}

static size_t resident_all(void *const *b, size_t count, size_t n)
{
    size_t r = 0, whole;
    for (size_t i = 0; i < count; i++) {
        r += resident(b[i], n, &whole);
        assert_true(whole >= 3);
    }
    return r;
}

static void test_idle_pages_go_to_os(void **state)
{
    mrt_upstream *u = *state;
    enum { NX = 3, NY = 2, NZ = 1 }; /* free lists below 64 KiB: no trim walk */
    const size_t sx = 20000, sy = 30000, sz = 40000, big = 100 * KiB;
    void *x[NX], *x_again[NX], *y[NY], *z[NZ], *d[3];
    mr_pools *p = make(u, 0, 0);
    /* X: used, then idle; Y: one block stays live; Z: idle, used again
     * between two takes */
    for (int i = 0; i < NX; i++) {
        assert_non_null(x[i] = mr_pools_alloc(p, sx, 8));
        fill(x[i], sx, (unsigned)i);
    }
    for (int i = 0; i < NY; i++) {
        assert_non_null(y[i] = mr_pools_alloc(p, sy, 8));
        fill(y[i], sy, 100u + (unsigned)i);
    }
    for (int i = 0; i < NZ; i++) {
        assert_non_null(z[i] = mr_pools_alloc(p, sz, 8));
        fill(z[i], sz, 200u + (unsigned)i);
    }
    for (int i = 0; i < NX; i++)
        mr_pools_free(p, x[i], sx, 8);
    for (int i = 1; i < NY; i++)
        mr_pools_free(p, y[i], sy, 8);
    for (int i = 0; i < NZ; i++)
        mr_pools_free(p, z[i], sz, 8);
    size_t whole, r = resident(x[0], sx, &whole);
    assert_int_equal(r, whole); /* written: resident */
    mr_stats before = stats_of(p);

    /* take A (a direct block), then Z used and idle again, then take B: X
     * has stood idle through a whole step (it may already have gone at A),
     * Z has not */
    assert_non_null(d[0] = mr_pools_alloc(p, big, 8));
    void *z0 = mr_pools_alloc(p, sz, 8);
    assert_non_null(z0);
    mr_pools_free(p, z0, sz, 8);
    assert_non_null(d[1] = mr_pools_alloc(p, big, 8));
    assert_int_equal(resident_all(x, NX, sx), 0);
    assert_true(resident_all(y + 1, NY - 1, sy) > 0); /* a live block: kept */
    assert_true(resident_all(z, NZ, sz) > 0);         /* used in the step: kept */
    verify(y[0], sy, 100u);
    mr_stats after = stats_of(p);
    assert_int_equal(after.held, before.held + 2 * (big + 32)); /* nothing went upstream */
    assert_int_equal(after.in_use, before.in_use + 2 * big);
    assert_true(mr_pools_check(p));
    /* take C: Z's turn */
    assert_non_null(d[2] = mr_pools_alloc(p, big, 8));
    assert_int_equal(resident_all(z, NZ, sz), 0);
    assert_true(resident_all(y + 1, NY - 1, sy) > 0);

    /* X carves the same blocks again, in the same order, from its own
     * chunks: no upstream call, and they hold what is written */
    size_t calls = u->calls;
    for (int i = 0; i < NX; i++) {
        assert_non_null(x_again[i] = mr_pools_alloc(p, sx, 8));
        assert_ptr_equal(x_again[i], x[i]);
        fill(x_again[i], sx, 50u + (unsigned)i);
    }
    assert_int_equal(u->calls, calls);
    for (int i = 0; i < NX; i++)
        verify(x_again[i], sx, 50u + (unsigned)i);
    /* Y's free blocks were not forgotten: its list serves them again */
    for (int i = 1; i < NY; i++) {
        assert_non_null(y[i] = mr_pools_alloc(p, sy, 8));
        fill(y[i], sy, 150u + (unsigned)i);
    }
    assert_int_equal(u->calls, calls);
    verify(y[0], sy, 100u);
    assert_true(mr_pools_check(p));
    for (int i = 0; i < 3; i++)
        mr_pools_free(p, d[i], big, 8);
    destroy_checked(p);

    /* small takes: an idle class goes only once the pool has taken as much
     * as the class carved since its last use (here 12 KiB: blocks of 1 KiB
     * in chunks of 4 and 8; takes of 2 KiB direct blocks) */
    enum { NW = 12, ND = 12 };
    void *w[NW], *dd[ND];
    p = make(u, 1024, 0);
    for (int i = 0; i < NW; i++) {
        assert_non_null(w[i] = mr_pools_alloc(p, 1024, 8));
        fill(w[i], 1024, (unsigned)i);
    }
    assert_ptr_equal((char *)w[4] + 7 * 1024, w[11]); /* the second chunk, contiguous */
    for (int i = 0; i < NW; i++)
        mr_pools_free(p, w[i], 1024, 8);
    size_t pages = resident(w[4], 8 * 1024, &whole);
    assert_true(whole >= 1 && pages == whole);
    for (int i = 0; i < 4; i++) /* 8 KiB taken: not yet */
        assert_non_null(dd[i] = mr_pools_alloc(p, 2048, 8));
    assert_int_equal(resident(w[4], 8 * 1024, &whole), whole);
    for (int i = 4; i < ND; i++) /* 24 KiB */
        assert_non_null(dd[i] = mr_pools_alloc(p, 2048, 8));
    assert_int_equal(resident(w[4], 8 * 1024, &whole), 0);
    assert_true(mr_pools_check(p));
    for (int i = 0; i < ND; i++)
        mr_pools_free(p, dd[i], 2048, 8);
    destroy_checked(p);
}
#endif

/* Outside reports: a pool over malloc, grown to ~280 MiB and destroyed,
 * left nearly all of it resident (287 of 289 MiB; its chunk records, 1 KiB
 * each then, sat in glibc's tcache and pinned the heap top); later, with
 * mixed sizes, 90% stayed (the fragments posix_memalign cut off aligned
 * chunks sat there: chunks.h, mri_chunk_pad).  Release and destroy must give
 * the memory back to the OS. */

/* Resident kB, read without malloc (fopen's FILE would land on top of the
 * heap and pin it: the measurement must not cause what it measures). */
static long rss_kb(void)
{
    char buf[128];
    int fd = open("/proc/self/statm", O_RDONLY);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    long pages = 0, resident = 0;
    if (sscanf(buf, "%ld %ld", &pages, &resident) != 2)
        return -1;
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* In a child (a clean heap): one earlier 1 MiB malloc/free raises glibc's
 * mmap threshold, as in any long-running program; a pool (thread-safe or
 * not) then grows to ~280 MiB, of one size or of sizes 16..512 (classes
 * aligned to 64, 128 and 256 among them), and is released, then destroyed;
 * at least 90% of the growth must leave RSS at the release.  0: passed, 1:
 * too little came back, 2/3: the pool failed.  (Sanitizer builds have their
 * own allocator: skipped there.) */
static int grow_and_release(bool thread_safe, bool mixed)
{
    void *volatile earlier = malloc(1 << 20); /* volatile: the pair must not be optimised away */
    free(earlier);
    long base = rss_kb();
    mr_pools *p = mr_pools_create(&(mr_pools_options){.thread_safe = thread_safe});
    if (p == NULL)
        return 2;
    size_t bytes = 0;
    unsigned x = 1;
    while (bytes < (size_t)280 << 20) {
        x = x * 1103515245u + 12345u;
        size_t n = mixed ? 16 + (x >> 16) % 497 : 1000;
        void *b = mr_pools_alloc(p, n, 8);
        if (b == NULL)
            return 3;
        memset(b, 1, n);
        bytes += n;
    }
    long peak = rss_kb();
    mr_pools_release(p);
    long after = rss_kb();
    mr_pools_destroy(p);
    printf("# pools over malloc (%s, %s): RSS %ld kB before, %ld kB at peak, %ld kB after release, %ld kB after "
           "destroy\n",
           thread_safe ? "thread-safe" : "one thread", mixed ? "sizes 16..512" : "1000 bytes", base, peak, after,
           rss_kb());
    fflush(stdout);
    return peak - base > 200 * 1024 && after - base < (peak - base) / 10 ? 0 : 1;
}

static void test_pools_destroy_returns_memory(void **state)
{
    (void)state;
    if (rss_kb() < 0 || MR_SANITIZED || THREAD_SANITIZED || MR_VALGRIND)
        skip();
    for (int k = 0; k < 4; k++) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0)
            _exit(grow_and_release(k & 1, k & 2));
        int status = 0;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
    }
}

/* ---- options, bad input ---- */

static void test_options(void **state)
{
    mrt_upstream *u = *state;
    mr_pools *p = make(u, 1000, 0);
    mr_pools_options o;
    mr_pools_get_options(p, &o);
    assert_ptr_equal(o.upstream, &u->base);
    assert_int_equal(o.largest_required_pool_block, 1024); /* rounded up to a class */
    assert_int_equal(o.max_blocks_per_chunk, 0);
    assert_false(o.thread_safe);
    assert_int_equal(mr_pools_block_size(p, 1024, 1), 1024);
    assert_int_equal(mr_pools_block_size(p, 1025, 1), 1025);
    size_t live = mrt_upstream_live(u);
    void *x = mr_pools_alloc(p, 1025, 1); /* direct */
    assert_int_equal(mrt_upstream_live(u), live + 1);
    mr_pools_free(p, x, 1025, 1);
    assert_int_equal(mrt_upstream_live(u), live);
    destroy_checked(p);
    mrt_upstream_restart(u);

    p = make(u, SIZE_MAX, 7);
    mr_pools_get_options(p, &o);
    assert_int_equal(o.largest_required_pool_block, MR_POOLS_MAX_POOL_BLOCK);
    assert_int_equal(o.max_blocks_per_chunk, 7);
    x = mr_pools_alloc(p, MR_POOLS_MAX_POOL_BLOCK, 1);
    assert_non_null(x);
    mr_pools_free(p, x, MR_POOLS_MAX_POOL_BLOCK, 1);
    destroy_checked(p);
    mrt_upstream_restart(u);

    p = make(u, 1, 0); /* the smallest: one class of 16 */
    mr_pools_get_options(p, &o);
    assert_int_equal(o.largest_required_pool_block, 16);
    assert_int_equal(mr_pools_block_size(p, 17, 1), 17);
    destroy_checked(p);

    /* defaults: NULL options, default upstream */
    p = mr_pools_create(NULL);
    assert_non_null(p);
    mr_pools_get_options(p, &o);
    assert_ptr_equal(o.upstream, mr_get_default_resource());
    assert_int_equal(o.largest_required_pool_block, MR_POOLS_DEFAULT_POOL_BLOCK);
    void *y = mr_pools_alloc(p, 10, 1);
    assert_non_null(y);
    mr_pools_free(p, y, 10, 1);
    assert_true(mr_pools_check(p));
    mr_pools_destroy(p);
}

/* A thread-safe pool used by one thread: the same contract as an
 * unsynchronised one (tests/test_pools_threads*.c have the threads). */
static void test_thread_safe_one_thread(void **state)
{
    mrt_upstream *u = *state;
    mr_pools_options o = {.upstream = &u->base, .thread_safe = true};
    mr_pools *p = mr_pools_create(&o);
    assert_non_null(p);
    mr_pools_options got;
    mr_pools_get_options(p, &got);
    assert_true(got.thread_safe);
    assert_int_equal(got.largest_required_pool_block, MR_POOLS_DEFAULT_POOL_BLOCK);
    assert_true(mr_pools_check(p));
    enum { N = 3000 };
    static void *b[N];
    size_t in_use = 0;
    for (size_t i = 0; i < N; i++) {
        size_t size = 1 + (i * 37) % 700, align = (size_t)1 << (i % 6);
        b[i] = mr_pools_alloc(p, size, align);
        assert_non_null(b[i]);
        assert_int_equal((uintptr_t)b[i] % align, 0);
        memset(b[i], (int)i, size);
        in_use += mr_pools_block_size(p, size, align);
    }
    void *big = mr_pools_alloc(p, 100000, 8); /* direct */
    assert_non_null(big);
    mr_stats st;
    mr_pools_stats(p, &st);
    assert_int_equal(st.in_use, in_use + 100000);
    assert_int_equal(st.allocations, N + 1);
    assert_true(mr_pools_check(p));
    for (size_t i = 0; i < N; i += 2)
        mr_pools_free(p, b[i], 1 + (i * 37) % 700, (size_t)1 << (i % 6));
    mr_pools_free(p, big, 100000, 8);
    mr_pools_thread_flush(p); /* the free blocks go to the shared lists */
    assert_true(mr_pools_check(p));
    for (size_t i = 0; i < N; i += 2) { /* reused: no new chunk */
        size_t held = (mr_pools_stats(p, &st), st.held);
        b[i] = mr_pools_alloc(p, 1 + (i * 37) % 700, (size_t)1 << (i % 6));
        assert_non_null(b[i]);
        mr_pools_stats(p, &st);
        assert_int_equal(st.held, held);
    }
    assert_true(mr_pools_check(p));
    mr_pools_reset(p);
    mr_pools_stats(p, &st);
    assert_int_equal(st.in_use, 0);
    assert_true(mr_pools_check(p));
    assert_non_null(mr_pools_alloc(p, 24, 8));
    mr_pools_release(p);
    assert_true(mr_pools_check(p));
    mr_pools_destroy(p);
}

static void test_bad_input(void **state)
{
    mrt_upstream *u = *state;
    mr_pools *p = make(u, 0, 0);
    void *keep = mr_pools_alloc(p, 50, 1);
    mr_stats s0 = stats_of(p);
    size_t calls = u->calls;
    static const size_t bad_align[] = {0, 3, 6, 24, 100, SIZE_MAX};
    for (size_t i = 0; i < sizeof bad_align / sizeof bad_align[0]; i++) {
        mrt_assert_fails(mr_pools_alloc(p, 16, bad_align[i]), EINVAL);
        mrt_assert_fails(mr_allocate(mr_pools_resource(p), 16, bad_align[i]), EINVAL);
    }
    static const size_t huge[] = {SIZE_MAX, SIZE_MAX - 15, SIZE_MAX - 4096, (size_t)PTRDIFF_MAX,
                                  (size_t)PTRDIFF_MAX - 16, (size_t)PTRDIFF_MAX + 1};
    static const size_t aligns[] = {1, 16, 64, 4096, 8192, (size_t)1 << 40};
    for (size_t i = 0; i < sizeof huge / sizeof huge[0]; i++)
        for (size_t j = 0; j < sizeof aligns / sizeof aligns[0]; j++) {
            mrt_assert_fails(mr_pools_alloc(p, huge[i], aligns[j]), ENOMEM);
        }
    assert_int_equal(u->calls, calls); /* impossible sizes never reach upstream */
    mr_stats s1 = stats_of(p);
    assert_memory_equal(&s0, &s1, sizeof s0); /* no state changed */
    assert_true(mr_pools_check(p));

    /* size 0: valid, distinct, non-NULL */
    void *z1 = mr_pools_alloc(p, 0, 1), *z2 = mr_pools_alloc(p, 0, 1), *z3 = mr_pools_alloc(p, 0, 256);
    assert_non_null(z1);
    assert_non_null(z2);
    assert_non_null(z3);
    assert_ptr_not_equal(z1, z2);
    assert_aligned(z3, 256);
    mr_pools_free(p, z1, 0, 1);
    mr_pools_free(p, z2, 0, 1);
    mr_pools_free(p, z3, 0, 256);
    /* free(NULL) is a no-op, for every size */
    mr_pools_free(p, NULL, 16, 1);
    mr_pools_free(p, NULL, 0, 1);
    mr_pools_free(p, NULL, 1 * KiB * KiB * KiB, 8192);
    mr_deallocate(mr_pools_resource(p), NULL, 16, 1);
    mr_pools_free(p, keep, 50, 1);
    assert_int_equal(stats_of(p).in_use, 0);
    destroy_checked(p);
}

/* ---- stats, resource view ---- */

static void test_stats(void **state)
{
    mrt_upstream *u = *state;
    mr_pools *p = make(u, 0, 0);
    mr_stats s = stats_of(p);
    assert_int_equal(s.in_use, 0);
    assert_int_equal(s.allocations, 0);
    assert_int_equal(s.held, u->bytes);
    assert_int_equal(s.upstream_allocations, 1);
    size_t in_use = 0;
    void *blk[300];
    for (size_t i = 0; i < 300; i++) {
        size_t size = i * i;
        blk[i] = mr_pools_alloc(p, size, 1);
        assert_non_null(blk[i]);
        in_use += mr_pools_block_size(p, size, 1);
        s = stats_of(p);
        assert_int_equal(s.in_use, in_use);
        assert_int_equal(s.allocations, i + 1);
        mrt_assert_stats_agree(&s, u);
    }
    for (size_t i = 0; i < 300; i++) {
        mr_pools_free(p, blk[i], i * i, 1);
        in_use -= mr_pools_block_size(p, i * i, 1);
        s = stats_of(p);
        assert_int_equal(s.in_use, in_use);
        assert_int_equal(s.allocations, 300);
        mrt_assert_stats_agree(&s, u);
    }
    mr_pools_release(p);
    s = stats_of(p);
    mrt_assert_stats_agree(&s, u);
    destroy_checked(p);
}

static void test_resource_view(void **state)
{
    mrt_upstream *u = *state;
    mr_pools *p = make(u, 0, 0);
    mr_resource *r = mr_pools_resource(p);
    assert_ptr_equal(r, mr_pools_resource(p));
    assert_true(mr_is_equal(r, r));
    assert_false(mr_is_equal(r, mr_malloc_resource()));
    mr_pools *q = make(u, 0, 0);
    assert_false(mr_is_equal(r, mr_pools_resource(q)));
    mr_pools_destroy(q);
    void *a = mr_allocate(r, 100, 8), *b = mr_allocate(r, 100, 64), *c = mr_allocate(r, 200 * KiB, 4096);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    assert_aligned(b, 64);
    assert_aligned(c, 4096);
    assert_int_equal(stats_of(p).in_use, 104 + 128 + 200 * KiB);
    mr_deallocate(r, a, 100, 8);
    mr_deallocate(r, b, 100, 64);
    mr_deallocate(r, c, 200 * KiB, 4096);
    assert_int_equal(stats_of(p).in_use, 0);
    assert_ptr_equal(mr_allocate(r, 97, 8), a); /* reused */
    mr_deallocate(r, a, 97, 8);
    assert_int_equal(stats_of(p).allocations, 4);
    /* a pool over a pool */
    mr_pools_options o = {.upstream = r, .largest_required_pool_block = 4096};
    mr_pools *inner = mr_pools_create(&o);
    assert_non_null(inner);
    for (int i = 0; i < 1000; i++)
        assert_non_null(mr_pools_alloc(inner, (size_t)i * 7, 8));
    assert_true(mr_pools_check(inner));
    mr_pools_destroy(inner);
    assert_int_equal(stats_of(p).in_use, 0);
    destroy_checked(p);
}

/* ---- exact sizes ---- */

static const size_t exact_set[] = {4368, 1040, 1040, 1152, 2000};

static mr_pools *make_exact(mrt_upstream *u, bool thread_safe)
{
    mr_pools_options o = {.upstream = &u->base, .thread_safe = thread_safe, .exact_sizes = exact_set,
                          .exact_count = sizeof exact_set / sizeof exact_set[0]};
    mr_pools *p = mr_pools_create(&o);
    assert_non_null(p);
    assert_true(mr_pools_check(p));
    return p;
}

static void test_exact_sizes(void **state)
{
    mrt_upstream *u = *state;
    for (int ts = 0; ts < 2; ts++) {
        mr_pools *p = make_exact(u, ts == 1);
        /* the exact classes: rounded to 16, ascending, repeats and a class's
         * own size (1152) left out */
        mr_pools_options o;
        mr_pools_get_options(p, &o);
        assert_int_equal(o.exact_count, 3);
        assert_int_equal(o.exact_sizes[0], 1040);
        assert_int_equal(o.exact_sizes[1], 2000);
        assert_int_equal(o.exact_sizes[2], 4368);
        /* a request is served at an exact size when its size rounds up to it
         * (alignment 16 or less), else by its class, as before */
        assert_int_equal(mr_pools_block_size(p, 1024, 8), 1024);
        assert_int_equal(mr_pools_block_size(p, 1025, 8), 1040);
        assert_int_equal(mr_pools_block_size(p, 1032, 8), 1040);
        assert_int_equal(mr_pools_block_size(p, 1040, 16), 1040);
        assert_int_equal(mr_pools_block_size(p, 1041, 8), 1152);
        assert_int_equal(mr_pools_block_size(p, 1040, 32), 1152);
        assert_int_equal(mr_pools_block_size(p, 1985, 1), 2000);
        assert_int_equal(mr_pools_block_size(p, 4353, 8), 4368);
        assert_int_equal(mr_pools_block_size(p, 4368, 8), 4368);
        assert_int_equal(mr_pools_block_size(p, 4369, 8), 4608);
        assert_int_equal(mr_pools_block_size(p, 700, 8), 704);
        /* blocks of an exact size are that far apart, reused, counted at it */
        enum { N = 100 };
        void *a[N];
        for (int i = 0; i < N; i++) {
            a[i] = mr_pools_alloc(p, 4360, 8);
            assert_non_null(a[i]);
            assert_aligned(a[i], 16);
            fill(a[i], 4360, (unsigned)i);
        }
        assert_int_equal(stats_of(p).in_use, N * 4368);
        size_t close = 0;
        for (int i = 1; i < N; i++)
            close += (uintptr_t)a[i] - (uintptr_t)a[i - 1] == 4368;
        assert_true(close >= N / 2);
        for (int i = 0; i < N; i++)
            verify(a[i], 4360, (unsigned)i);
        void *small = mr_pools_alloc(p, 1030, 8), *big = mr_pools_alloc(p, 1100, 8);
        assert_non_null(small);
        assert_non_null(big);
        assert_int_equal(stats_of(p).in_use, N * 4368 + 1040 + 1152);
        /* a resize within an exact size keeps the block; out of it, moves */
        assert_ptr_equal(mr_pools_realloc(p, small, 1030, 1036, 8), small);
        fill(small, 1036, 7);
        void *moved = mr_pools_realloc(p, small, 1036, 1100, 8);
        assert_non_null(moved);
        assert_ptr_not_equal(moved, small);
        verify(moved, 1036, 7);
        mr_pools_free(p, moved, 1100, 8);
        mr_pools_free(p, big, 1100, 8);
        for (int i = 0; i < N; i++)
            mr_pools_free(p, a[i], 4360, 8);
        assert_int_equal(stats_of(p).in_use, 0);
        assert_true(mr_pools_check(p));
        size_t calls = u->calls;
        void *again = mr_pools_alloc(p, 4368, 16); /* reused, no upstream call */
        assert_non_null(again);
        assert_int_equal(u->calls, calls);
        mr_pools_free(p, again, 4368, 16);
        mr_pools_reset(p);
        assert_true(mr_pools_check(p));
        assert_non_null(mr_pools_alloc(p, 2000, 8));
        mr_pools_release(p);
        assert_true(mr_pools_check(p));
        destroy_checked(p);
    }
}

static void test_exact_sizes_bad(void **state)
{
    mrt_upstream *u = *state;
    size_t sizes[MR_POOLS_MAX_EXACT + 1];
    for (size_t i = 0; i <= MR_POOLS_MAX_EXACT; i++)
        sizes[i] = 2000 + 16 * i;
    const struct {
        const size_t *sizes;
        size_t count, largest;
    } bad[] = {
        {sizes, MR_POOLS_MAX_EXACT + 1, 0}, /* too many */
        {NULL, 1, 0},                       /* a count without sizes */
        {(const size_t[]){1024}, 1, 0},     /* below MR_POOLS_EXACT_MIN */
        {(const size_t[]){4000}, 1, 2048},  /* above the largest pooled size */
        {(const size_t[]){2000, 0}, 2, 0},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        mr_pools_options o = {.upstream = &u->base, .largest_required_pool_block = bad[k].largest,
                              .exact_sizes = bad[k].sizes, .exact_count = bad[k].count};
        errno = 0;
        size_t calls = u->calls;
        assert_null(mr_pools_create(&o));
        assert_int_equal(errno, EINVAL);
        assert_int_equal(u->calls, calls); /* nothing asked of the upstream */
    }
    /* the most, and the smallest: fine */
    mr_pools_options o = {.upstream = &u->base, .exact_sizes = sizes, .exact_count = MR_POOLS_MAX_EXACT};
    mr_pools *p = mr_pools_create(&o);
    assert_non_null(p);
    destroy_checked(p);
    o.exact_sizes = (const size_t[]){MR_POOLS_EXACT_MIN};
    o.exact_count = 1;
    p = mr_pools_create(&o);
    assert_non_null(p);
    assert_int_equal(mr_pools_block_size(p, MR_POOLS_EXACT_MIN, 8), 1040);
    destroy_checked(p);
}

/* The internal API the SQLite integration uses: a request's class looked up
 * once, then popped and pushed without the lookup. */
static void test_class_for(void **state)
{
    mrt_upstream *u = *state;
    mr_pools *p = make_exact(u, false);
    struct mri_pools_class *c = mri_pools_class_for(p, 100, 8);
    assert_non_null(c);
    assert_ptr_equal(mri_pools_class_for(p, 97, 1), c); /* the same class */
    assert_ptr_not_equal(mri_pools_class_for(p, 100, 16), c);
    assert_null(mri_pools_class_for(p, 1040, 8));      /* left to the slow path (exact sizes) */
    assert_null(mri_pools_class_for(p, 100, 32));      /* an alignment the inline paths do not take */
    assert_null(mri_pools_class_for(p, 0, 8));
    void *b = mri_pools_class_take(p, c);
#if MR_CHECKED
    assert_null(b); /* checked builds: always the slow path */
    b = mr_pools_alloc(p, 100, 8);
#else
    if (b == NULL) /* the class's first block comes from the slow path */
        b = mr_pools_alloc(p, 100, 8);
#endif
    assert_non_null(b);
    assert_int_equal(mr_pools_block_size(p, 100, 8), 104);
    fill(b, 100, 3);
    if (!mri_pools_class_put(p, c, b))
        mr_pools_free(p, b, 100, 8);
    assert_int_equal(stats_of(p).in_use, 0);
    assert_true(mr_pools_check(p));
    destroy_checked(p);
    p = make_exact(u, true);
    assert_null(mri_pools_class_for(p, 100, 8)); /* thread-safe: none */
    destroy_checked(p);
}

/* ---- fault sweep ---- */

/* Allocates through the pool and, on failure, checks that the failure
 * changed nothing and left the pool consistent. */
static void *try_alloc(mr_pools *p, mrt_upstream *u, size_t size, size_t align)
{
    mr_stats before = stats_of(p);
    size_t live = mrt_upstream_live(u);
    errno = 0;
    void *x = mr_pools_alloc(p, size, align);
    if (x == NULL) {
        assert_int_equal(errno, ENOMEM);
        mr_stats after = stats_of(p);
        assert_int_equal(after.in_use, before.in_use);
        assert_int_equal(after.held, before.held);
        assert_int_equal(after.allocations, before.allocations);
        assert_int_equal(mrt_upstream_live(u), live);
        assert_true(mr_pools_check(p));
    } else {
        assert_aligned(x, align);
        fill(x, size < 64 ? size : 64, (unsigned)size);
    }
    return x;
}

typedef struct held_block {
    void *p;
    size_t size, align;
} held_block;

/* The fault-sweep scenario (see mrt_fault_sweep), touching every path that
 * calls upstream: header, chunks of several classes (first and grown),
 * record pages, direct blocks, reset, release.  ctx: the
 * max_blocks_per_chunk to use. */
struct sweep_opts {
    size_t max_blocks;
    bool exact;
};

static bool sweep_run(mrt_upstream *u, void *ctx)
{
    const struct sweep_opts *so = ctx;
    mr_pools_options o = {.upstream = &u->base, .max_blocks_per_chunk = so->max_blocks};
    if (so->exact) {
        o.exact_sizes = exact_set;
        o.exact_count = sizeof exact_set / sizeof exact_set[0];
    }
    errno = 0;
    mr_pools *p = mr_pools_create(&o);
    if (p == NULL) {
        assert_int_equal(errno, ENOMEM);
        return true;
    }
    enum { N = 400 };
    static held_block h[N];
    size_t failures = 0, n = 0;
    for (int round = 0; round < 3; round++) {
        for (size_t i = 0; i < N; i++) {
            size_t size = (i * 97 + (size_t)round) % 6000;
            size_t align = (size_t)1 << (i % 7);
            if (i % 50 == 7)
                size = 70 * KiB + i; /* direct */
            if (i % 61 == 3)
                align = 8192; /* direct by alignment */
            void *x = try_alloc(p, u, size, align);
            if (x == NULL) {
                failures++;
                continue;
            }
            h[n++] = (held_block){x, size, align};
        }
        /* free half */
        for (size_t i = 0; i < n; i += 2)
            mr_pools_free(p, h[i].p, h[i].size, h[i].align);
        size_t m = 0;
        for (size_t i = 1; i < n; i += 2)
            h[m++] = h[i];
        n = m;
        assert_true(mr_pools_check(p));
        if (round == 0) {
            mr_pools_reset(p);
            n = 0;
        } else if (round == 1) {
            mr_pools_release(p);
            n = 0;
        }
        assert_true(mr_pools_check(p));
    }
    /* still usable after whatever failed: with the fault gone, it works */
    size_t saved = u->fail_at;
    u->fail_at = 0;
    void *x = mr_pools_alloc(p, 33, 1);
    assert_non_null(x);
    mr_pools_free(p, x, 33, 1);
    u->fail_at = saved;
    assert_true(mr_pools_check(p));
    mr_pools_destroy(p); /* with half the blocks still live */
    return failures > 0;
}

static void test_fault_sweep(void **state)
{
    (void)state;
    static struct sweep_opts opts[] = {{0, false}, {8, false}, {0, true}};
    for (size_t k = 0; k < sizeof opts / sizeof opts[0]; k++) {
        char name[64];
        snprintf(name, sizeof name, "pools, max_blocks_per_chunk %zu%s", opts[k].max_blocks,
                 opts[k].exact ? ", exact sizes" : "");
        mrt_fault_sweep(name, sweep_run, &opts[k], MRT_FAIL_ONCE, 10);
        mrt_fault_sweep(name, sweep_run, &opts[k], MRT_FAIL_FROM, 10);
    }
}

/* ---- seeded stress against a shadow model ---- */

typedef struct slot {
    unsigned char *p;
    size_t size, align;
    unsigned tag;
} slot;

static size_t random_size(uint64_t *rng)
{
    uint64_t r = mrt_rand(rng);
    switch (r % 100) {
    case 0:
        return 0;
    case 1:
        return 64 * KiB + (size_t)(mrt_rand(rng) % (64 * KiB)); /* direct */
    case 2:
    case 3:
        return (size_t)(mrt_rand(rng) % (64 * KiB + 1)); /* big classes */
    default: { /* log-uniform 1..4096 */
        unsigned bits = (unsigned)(mrt_rand(rng) % 12);
        return 1 + (size_t)(mrt_rand(rng) % ((uint64_t)2 << bits));
    }
    }
}

static size_t random_align(uint64_t *rng)
{
    uint64_t r = mrt_rand(rng) % 100;
    if (r < 80)
        return (size_t)1 << (r % 5); /* 1..16 */
    return (size_t)1 << (5 + r % 10); /* 32..16384 */
}

static void test_random_stress(void **state)
{
    mrt_upstream *u = *state;
    uint64_t rng = mrt_seed(20240611);
    enum { SLOTS = 3000, STEPS = 300000 };
    static slot s[SLOTS];
    memset(s, 0, sizeof s);
    mr_pools *p = make(u, 0, (size_t)(mrt_rand(&rng) % 3 == 0 ? 64 : 0));
    size_t in_use = 0, live = 0;
    for (unsigned step = 0; step < STEPS; step++) {
        slot *e = &s[mrt_rand(&rng) % SLOTS];
        if (e->p != NULL) {
            verify(e->p, e->size, e->tag);
            mr_pools_free(p, e->p, e->size, e->align);
            in_use -= mr_pools_block_size(p, e->size, e->align);
            live--;
            e->p = NULL;
        } else {
            e->size = random_size(&rng);
            e->align = random_align(&rng);
            e->tag = step;
            e->p = mr_pools_alloc(p, e->size, e->align);
            if (e->p == NULL)
                fail_msg("step %u: alloc(%zu, %zu) failed", step, e->size, e->align);
            assert_aligned(e->p, e->align);
            fill(e->p, e->size, e->tag);
            in_use += mr_pools_block_size(p, e->size, e->align);
            live++;
        }
        if (step % 20000 == 0) {
            assert_true(mr_pools_check(p));
            mr_stats st = stats_of(p);
            assert_int_equal(st.in_use, in_use);
            assert_int_equal(st.held, u->bytes);
        }
        if (step % 100000 == 99999) { /* everything freed at once, both ways */
            for (size_t i = 0; i < SLOTS; i++)
                if (s[i].p != NULL)
                    verify(s[i].p, s[i].size, s[i].tag);
            if (step % 200000 == 99999)
                mr_pools_reset(p);
            else
                mr_pools_release(p);
            memset(s, 0, sizeof s);
            in_use = live = 0;
            assert_true(mr_pools_check(p));
            assert_int_equal(stats_of(p).in_use, 0);
        }
    }
    for (size_t i = 0; i < SLOTS; i++)
        if (s[i].p != NULL) {
            verify(s[i].p, s[i].size, s[i].tag);
            mr_pools_free(p, s[i].p, s[i].size, s[i].align);
        }
    assert_int_equal(stats_of(p).in_use, 0);
    destroy_checked(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        mrt_unit_test(test_class_rounding),
        mrt_unit_test(test_class_of_matches_block_size),
        mrt_unit_test(test_resize),
        mrt_unit_test(test_alignment),
        mrt_unit_test(test_reuse_without_upstream),
        mrt_unit_test(test_reset_keeps_chunks),
        mrt_unit_test(test_release_and_destroy_balanced),
        mrt_unit_test(test_direct_tracked),
        mrt_unit_test(test_chunk_sizes),
        mrt_unit_test(test_empty_chunks_go_back),
        mrt_unit_test(test_empty_chunks_many),
#if defined(__linux__)
        mrt_unit_test(test_idle_pages_go_to_os),
#endif
        cmocka_unit_test(test_pools_destroy_returns_memory),
        mrt_unit_test(test_options),
        mrt_unit_test(test_thread_safe_one_thread),
        mrt_unit_test(test_exact_sizes),
        mrt_unit_test(test_exact_sizes_bad),
        mrt_unit_test(test_class_for),
        mrt_unit_test(test_bad_input),
        mrt_unit_test(test_stats),
        mrt_unit_test(test_resource_view),
        cmocka_unit_test(test_fault_sweep),
        mrt_unit_test(test_random_stress),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
