/* SPDX-License-Identifier: MIT */
/* tests/arena_helpers.h -- what the arena tests (tests/test_arena_*.c)
 * share: arenas on an upstream or over a buffer, their stats, where the
 * next allocation lands, tagged fills and their check, the snapshot a
 * failed call must leave unchanged, and the log of the cleanups that ran.
 *
 * Every arena test stacks the arena on mrt_upstream (tests/support.h), a
 * checking upstream that counts calls and bytes and verifies every
 * deallocate, often with its log of each request's size and alignment
 * (req_size).  A failed call must leave the arena exactly as it was: tests
 * compare mr_arena_stats and mr_arena_save before and after (snap,
 * assert_unchanged), and the address the next allocation gets (probe).
 *
 * The functions are static inline, so that a test program compiles only
 * those it uses; the cleanup log is one object per test program.
 */
#ifndef MEMRES_TEST_ARENA_HELPERS_H
#define MEMRES_TEST_ARENA_HELPERS_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "support.h"

#define A MR_ARENA_ALIGN
#define KiB ((size_t)1024)
#define MiB ((size_t)1024 * 1024)
#define ARRAY_LEN(x) (sizeof(x) / sizeof((x)[0]))

static inline size_t page_size(void)
{
    long v = sysconf(_SC_PAGESIZE);
    return v > 0 ? (size_t)v : 4096;
}

static inline size_t round_up(size_t x, size_t to) { return (x + to - 1) / to * to; }
static inline bool is_aligned(const void *p, size_t align) { return ((uintptr_t)p & (align - 1)) == 0; }

/* The size of allocate request i (u logging). */
static inline size_t req_size(const mrt_upstream *u, size_t i) { return mrt_upstream_request(u, i)->size; }

static inline mr_arena *arena_on(mr_resource *up, size_t block, size_t max, size_t limit)
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

static inline mr_arena *arena_buf(mr_resource *up, void *buf, size_t size)
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

static inline mr_stats stats(const mr_arena *a)
{
    mr_stats s;
    memset(&s, 0xEE, sizeof s);
    mr_arena_stats(a, &s);
    return s;
}

static inline void assert_mark_eq(mr_arena_mark x, mr_arena_mark y)
{
    assert_ptr_equal(x.mri_block, y.mri_block);
    assert_int_equal(x.mri_ptr, y.mri_ptr);
    assert_int_equal(x.mri_end, y.mri_end);
    assert_ptr_equal(x.mri_big, y.mri_big);
    assert_int_equal(x.mri_arena, y.mri_arena);
    assert_int_equal(x.mri_big_seq, y.mri_big_seq);
    assert_int_equal(x.mri_cleanup_seq, y.mri_cleanup_seq);
}

/* The arena's stats agree with what its (private) upstream saw. */
static inline void assert_agrees(const mr_arena *a, const mrt_upstream *u)
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
static inline void *probe_n(mr_arena *a, size_t n)
{
    void *p = mr_arena_alloc(a, n);
    assert_non_null(p);
    mr_deallocate(mr_arena_resource(a), p, n, MR_ARENA_ALIGN);
    return p;
}

static inline void *probe(mr_arena *a) { return probe_n(a, 1); }

static inline unsigned char pat(size_t tag, size_t i) { return (unsigned char)(tag * 131u + i * 7u + 1u); }

static inline void fill(void *p, size_t n, size_t tag)
{
    unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        b[i] = pat(tag, i);
}

/* Index of the first wrong byte, or SIZE_MAX when all are right. */
static inline size_t verify(const void *p, size_t n, size_t tag)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i] != pat(tag, i))
            return i;
    return SIZE_MAX;
}

static inline bool all_zero(const void *p, size_t n)
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

static inline snapshot snap(const mr_arena *a, const mrt_upstream *u)
{
    snapshot s = {stats(a), mr_arena_save(a), u ? u->allocations : 0};
    return s;
}

static inline void assert_unchanged(const mr_arena *a, const mrt_upstream *u, const snapshot *before)
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

static inline void log_cleanup(void *arg)
{
    if (cleanup_n < ARRAY_LEN(cleanup_log))
        cleanup_log[cleanup_n] = (intptr_t)arg;
    cleanup_n++;
}

static inline void assert_log(const intptr_t *want, size_t n)
{
    assert_int_equal(cleanup_n, n);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(cleanup_log[i], want[i]);
    cleanup_n = 0;
}

#endif
