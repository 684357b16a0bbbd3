/* tests/support.h -- resources that tests stack under the allocators.
 *
 * mrt_upstream is a checking upstream: it serves from malloc, records every
 * live block with its size and alignment, counts calls and bytes, can fail
 * the Nth request (fault sweep), and verifies that every deallocate names a
 * block it handed out with the same size and alignment.  A test that ends
 * with mrt_upstream_balanced() has proven that nothing leaked.
 */
#ifndef MEMRES_TEST_SUPPORT_H
#define MEMRES_TEST_SUPPORT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "memres/memres.h"

typedef struct mrt_block {
    void  *p;
    size_t size, align;
} mrt_block;

typedef struct mrt_upstream {
    mr_resource base;          /* first: usable as an mr_resource * */
    size_t allocations;        /* successful allocate calls */
    size_t deallocations;      /* deallocate calls */
    size_t failures;           /* allocate calls that failed (injected or limit) */
    size_t calls;              /* allocate calls, failed ones included */
    size_t bytes;              /* bytes outstanding */
    size_t peak_bytes;
    size_t fail_at;            /* 0: never; N: the Nth allocate call (1-based) fails */
    bool   fail_all_after;     /* with fail_at: every call from the Nth on fails */
    size_t limit;              /* 0: none; else fail when bytes would exceed it */
    size_t bad_deallocations;  /* deallocate of an unknown pointer or wrong size/align */
    mrt_block *live;
    size_t nlive, cap;
} mrt_upstream;

void mrt_upstream_init(mrt_upstream *u);
void mrt_upstream_fini(mrt_upstream *u);    /* frees the tracking table (not the blocks) */
/* Number of live blocks; 0 means everything handed out came back. */
size_t mrt_upstream_live(const mrt_upstream *u);
/* Is p inside a live block of u? */
bool mrt_upstream_owns(const mrt_upstream *u, const void *p);

/* cmocka assertion: no live blocks, no bytes outstanding, no bad frees. */
#define mrt_assert_balanced(u)                                   \
    do {                                                         \
        assert_int_equal((u)->bad_deallocations, 0);             \
        assert_int_equal(mrt_upstream_live(u), 0);               \
        assert_int_equal((u)->bytes, 0);                         \
        assert_int_equal((u)->allocations, (u)->deallocations);  \
    } while (0)

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

#endif
