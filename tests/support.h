/* SPDX-License-Identifier: MIT */
/* tests/support.h -- what every test stacks under the allocators.
 *
 * mrt_upstream is a checking upstream: it serves from malloc, records every
 * live block with its size and alignment, counts calls and bytes, can fail
 * the Nth request (fault sweep), verifies that every deallocate names a
 * block it handed out with the same size and alignment, and on request logs
 * every call in order.  A test that ends with the upstream balanced has
 * proven that nothing leaked.
 *
 * Three ways to use it:
 *   - mrt_unit_test(f): a cmocka test whose *state is a fresh mrt_upstream;
 *     the teardown asserts it balanced.  The body says only what it tests.
 *   - mrt_fault_sweep(): fail the Nth request for N = 1, 2, ... until a
 *     scenario runs clean.
 *   - by hand (mrt_upstream_init / mrt_upstream_fini) for a second upstream.
 */
#ifndef MEMRES_TEST_SUPPORT_H
#define MEMRES_TEST_SUPPORT_H

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "memres/memres.h"

/* The library's check tier (src/internal.h): MEMRES_DEBUG when the build
 * sets it (tests/CMakeLists.txt passes it on), else 1 without NDEBUG.  What
 * misuse the library reports to the violation handler depends on it. */
#ifndef MR_DEBUG
#  ifdef NDEBUG
#    define MR_DEBUG 0
#  else
#    define MR_DEBUG 1
#  endif
#endif

/* A recording violation handler (mr_set_violation_handler): counts what
 * the library reports and returns, so the call takes its safe way out.
 * mrt_violation_setup / _teardown install it as a cmocka fixture (*state:
 * the mrt_violations). */
typedef struct mrt_violations {
    int count;
    const char *last;
    const void *ptr;
} mrt_violations;
void mrt_record_violation(const char *what, const void *ptr, void *ctx);
int mrt_violation_setup(void **state);
int mrt_violation_teardown(void **state);
#define mrt_violation_test(f) cmocka_unit_test_setup_teardown(f, mrt_violation_setup, mrt_violation_teardown)

/* cmocka assertion: the recording handler (v: the mrt_violations) saw n
 * reports, in builds that report (MR_DEBUG >= 1), none in the others. */
#define mrt_assert_reported(v, n)              \
    do {                                       \
        if (MR_DEBUG >= 1)                     \
            assert_int_equal((v)->count, (n)); \
        else                                   \
            assert_int_equal((v)->count, 0);   \
    } while (0)

typedef struct mrt_block {
    void  *p;
    size_t size, align;
} mrt_block;

/* One call the upstream saw (when log_requests is set). */
typedef enum mrt_op { MRT_ALLOCATE, MRT_DEALLOCATE } mrt_op;
typedef struct mrt_request {
    mrt_op op;
    size_t size, align;
    void  *p;      /* allocate: the result (NULL: it failed); deallocate: the pointer given */
    bool   ok;     /* allocate: it succeeded; deallocate: p was live with this size and align */
} mrt_request;

#define MRT_FREED_BYTE 0xdb /* what mrt_upstream writes over a block given back */

typedef struct mrt_upstream {
    mr_resource base;          /* first: usable as an mr_resource * */
    size_t allocations;        /* successful allocate calls */
    size_t deallocations;      /* deallocate calls */
    size_t failures;           /* allocate calls that failed (injected, limit or malloc) */
    size_t injected;           /* of those, failed by fail_at */
    size_t calls;              /* allocate calls, failed ones included */
    size_t bytes;              /* bytes outstanding */
    size_t peak_bytes;
    size_t fail_at;            /* 0: never; N: the Nth allocate call (1-based) fails */
    bool   fail_all_after;     /* with fail_at: every call from the Nth on fails */
    size_t limit;              /* 0: none; else fail when bytes would exceed it */
    size_t bad_deallocations;  /* deallocate of an unknown pointer or wrong size/align */
    bool   log_requests;       /* record every call in log[] from now on */
    mrt_request *log;
    size_t nlog, log_cap;
    mrt_block *live;
    size_t nlive, cap;
} mrt_upstream;

void mrt_upstream_init(mrt_upstream *u);
void mrt_upstream_fini(mrt_upstream *u);    /* frees the tables (not the blocks) */
/* Number of live blocks; 0 means everything handed out came back. */
size_t mrt_upstream_live(const mrt_upstream *u);
/* Is p inside a live block of u? */
bool mrt_upstream_owns(const mrt_upstream *u, const void *p);
/* The allocate request that was call number i + 1 (so i counts from 0, as
 * u->calls does); u must have logged it (log_requests set before the call). */
const mrt_request *mrt_upstream_request(const mrt_upstream *u, size_t i);

/* cmocka assertion: no live blocks, no bytes outstanding, no bad frees. */
#define mrt_assert_balanced(u)                                   \
    do {                                                         \
        assert_int_equal((u)->bad_deallocations, 0);             \
        assert_int_equal(mrt_upstream_live(u), 0);               \
        assert_int_equal((u)->bytes, 0);                         \
        assert_int_equal((u)->allocations, (u)->deallocations);  \
    } while (0)

/* cmocka assertion: every field of two mr_stats (pointers) is equal. */
#define mrt_assert_stats_equal(a, b)                                                       \
    do {                                                                                   \
        const mr_stats *mrt_a_ = (a), *mrt_b_ = (b);                                       \
        assert_int_equal(mrt_a_->in_use, mrt_b_->in_use);                                  \
        assert_int_equal(mrt_a_->held, mrt_b_->held);                                      \
        assert_int_equal(mrt_a_->peak_held, mrt_b_->peak_held);                            \
        assert_int_equal(mrt_a_->allocations, mrt_b_->allocations);                        \
        assert_int_equal(mrt_a_->upstream_allocations, mrt_b_->upstream_allocations);      \
        assert_int_equal(mrt_a_->upstream_deallocations, mrt_b_->upstream_deallocations);  \
    } while (0)

/* cmocka assertion: the stats (pointer) of an allocator that is u's only
 * user agree with what u saw: held, peak and upstream calls. */
#define mrt_assert_stats_agree(s, u)                                              \
    do {                                                                          \
        const mr_stats *mrt_s_ = (s);                                             \
        const mrt_upstream *mrt_u_ = (u);                                         \
        assert_int_equal(mrt_s_->held, mrt_u_->bytes);                            \
        assert_int_equal(mrt_s_->peak_held, mrt_u_->peak_bytes);                  \
        assert_int_equal(mrt_s_->upstream_allocations, mrt_u_->allocations);      \
        assert_int_equal(mrt_s_->upstream_deallocations, mrt_u_->deallocations);  \
    } while (0)

/* cmocka assertion: call returns NULL and sets errno to err. */
#define mrt_assert_fails(call, err)          \
    do {                                     \
        errno = 0;                           \
        assert_null(call);                   \
        assert_int_equal(errno, (err));      \
    } while (0)

/* Asserts u balanced and starts it again from zero (counters, options, log
 * off): one section of a test ends, the next gets a fresh upstream. */
#define mrt_upstream_restart(u)  \
    do {                         \
        mrt_assert_balanced(u);  \
        mrt_upstream_fini(u);    \
        mrt_upstream_init(u);    \
    } while (0)

/* ---- cmocka fixtures ----
 * mrt_upstream_setup puts a fresh mrt_upstream in *state; the teardown
 * fails the test unless the upstream is balanced (as mrt_assert_balanced),
 * saying what is left, and frees it (it runs after a failed test too).  A
 * test starts with `mrt_upstream *u = *state;`. */
int mrt_upstream_setup(void **state);
int mrt_upstream_teardown(void **state);
#define mrt_unit_test(f) cmocka_unit_test_setup_teardown(f, mrt_upstream_setup, mrt_upstream_teardown)

/* ---- the fault sweep ---- */

typedef enum mrt_fail_mode {
    MRT_FAIL_ONCE, /* only the Nth request fails: the caller may retry */
    MRT_FAIL_FROM, /* the Nth and every later request fail: upstream is gone */
} mrt_fail_mode;

/* A scenario builds what it tests on u, drives it, and at every call that
 * fails asserts ENOMEM and that the call changed nothing; it may go on after
 * a failure.  Before it returns, everything it got from u is given back.
 * Returns whether any call it made failed. */
typedef bool mrt_scenario(mrt_upstream *u, void *ctx);

/* The fault sweep (SQLite's malloc-failure loop).  For N = 1, 2, 3, ...:
 * the scenario runs on a fresh mrt_upstream whose Nth allocate request fails
 * (with MRT_FAIL_FROM, every one from the Nth on); afterwards the upstream
 * must be balanced (nothing leaked, no bad deallocation) and the scenario
 * must have seen a failed call exactly when a failure was injected.
 * Stop rule: the first run in which nothing was injected (u->injected == 0:
 * the scenario completed before its Nth request) ends the sweep.
 * Returns the number of failure points swept (N - 1), printed with name,
 * after asserting that it is at least min_points and at least 1: a sweep
 * that sweeps nothing fails. */
size_t mrt_fault_sweep(const char *name, mrt_scenario *scenario, void *ctx, mrt_fail_mode mode,
                       size_t min_points);

/* ---- seeds ---- */

/* Deterministic PRNG for seeded tests (splitmix64). */
static inline uint64_t mrt_rand(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Seed from MEMRES_TEST_SEED or the given default; printed so a failure can
 * be replayed. */
uint64_t mrt_seed(uint64_t def);

/* n scaled by MEMRES_TEST_SCALE percent (default 100), at least 1: lets a
 * slow checker (the Valgrind run) do fewer iterations of a seeded stress. */
size_t mrt_scaled(size_t n);

#endif
