/* SPDX-License-Identifier: MIT */
/* tests/test_free_owner.c -- the check at the free of code built without
 * NDEBUG (MR_FREE_CHECK, config.h): mr_pools_free and mr_objpool_free of a
 * pointer the pool did not hand out (malloc's, another pool's, the inside
 * of a block), and mr_pools_free with a size of another class (a 200-byte
 * block freed as 48 bytes, and the reverse) or of a direct block freed with
 * a pooled size, are reported to the violation handler at the free, with
 * the pointer, and ignored: the pool's stats do not move, mr_*_check holds,
 * and no later allocation hands the pointer out.  Unsynchronised and
 * thread-safe pools alike; ASan builds too (the check comes before their
 * checked paths).  Release builds (NDEBUG) keep no such check: there the
 * cases are skipped.
 */
#include <stdlib.h>
#include <string.h>

#include "support.h"

#ifdef NDEBUG
#  define SKIP_RELEASE() skip()
#else
#  define SKIP_RELEASE() ((void)0)
#endif

#define DIRECT ((size_t)100000) /* above the default largest pooled size */

static mr_stats pools_stats(const mr_pools *p)
{
    mr_stats s;
    mr_pools_stats(p, &s);
    return s;
}

static mr_stats objpool_stats(const mr_objpool *p)
{
    mr_stats s;
    mr_objpool_stats(p, &s);
    return s;
}

/* The handler saw one more report, of ptr, whose words hold `words`. */
static void assert_reported(mrt_violations *v, int *seen, const void *ptr, const char *words)
{
    ++*seen;
    assert_int_equal(v->count, *seen);
    assert_ptr_equal(v->ptr, ptr);
    if (strstr(v->last, words) == NULL)
        fail_msg("report \"%s\" does not say \"%s\"", v->last, words);
}

/* mr_pools_free(p, bad, size, align) is reported with `words` and changes
 * nothing; the next allocations of that size do not return bad. */
static void pools_bad_free(mrt_violations *v, int *seen, mr_pools *p, void *bad, size_t size, size_t align,
                           const char *words)
{
    mr_stats before = pools_stats(p);
    mr_pools_free(p, bad, size, align);
    assert_reported(v, seen, bad, words);
    mr_stats after = pools_stats(p);
    mrt_assert_stats_equal(&after, &before);
    assert_true(mr_pools_check(p));
    void *x = mr_pools_alloc(p, size, align), *y = mr_pools_alloc(p, size, align);
    assert_non_null(x);
    assert_non_null(y);
    assert_ptr_not_equal(x, bad);
    assert_ptr_not_equal(y, bad);
    mr_pools_free(p, y, size, align);
    mr_pools_free(p, x, size, align);
    assert_int_equal(v->count, *seen);
}

static mr_pools *pools_new(int ts)
{
    mr_pools *p = mr_pools_create(&(mr_pools_options){.thread_safe = ts == 1});
    assert_non_null(p);
    return p;
}

/* After the good frees: nothing more reported, nothing live, p sound. */
static void pools_end(const mrt_violations *v, int seen, mr_pools *p)
{
    assert_int_equal(v->count, seen);
    assert_int_equal(pools_stats(p).in_use, 0);
    assert_true(mr_pools_check(p));
    mr_pools_destroy(p);
}

/* Issue 38's catalogue, case 1: malloc's memory freed into the pool, with
 * a pooled size and with a direct one (whose header is not read). */
static void test_pools_malloc_pointer(void **state)
{
    SKIP_RELEASE();
    mrt_violations *v = *state;
    int seen = 0;
    for (int ts = 0; ts < 2; ts++) {
        mr_pools *p = pools_new(ts);
        void *a = mr_pools_alloc(p, 24, 8);
        assert_non_null(a);
        char *m = malloc(DIRECT + 64);
        assert_non_null(m);
        memset(m, 0, DIRECT + 64);
        pools_bad_free(v, &seen, p, m + 32, 24, 8, "not a block of this pool");
        pools_bad_free(v, &seen, p, m + 32, DIRECT, 8, "not a block of this pool");
        mr_pools_free(p, a, 24, 8);
        pools_end(v, seen, p);
        free(m);
    }
}

/* Another pool's block, and a pointer inside one of this pool's blocks. */
static void test_pools_foreign_block(void **state)
{
    SKIP_RELEASE();
    mrt_violations *v = *state;
    int seen = 0;
    for (int ts = 0; ts < 2; ts++) {
        mr_pools *p = pools_new(ts), *q = pools_new(ts);
        char *a = mr_pools_alloc(p, 64, 8), *b = mr_pools_alloc(q, 64, 8);
        assert_non_null(a);
        assert_non_null(b);
        pools_bad_free(v, &seen, p, b, 64, 8, "not a block of this pool");
        pools_bad_free(v, &seen, p, a + 16, 64, 8, "not the start of a block");
        mr_pools_free(q, b, 64, 8);
        mr_pools_free(p, a, 64, 8);
        pools_end(v, seen, q);
        pools_end(v, seen, p);
    }
}

/* Case 2: a 200-byte block freed as 48 bytes, a 48-byte one as 200, a
 * block freed with a smaller alignment than its class's; a size of the
 * same class (the rounding) is no misuse. */
static void test_pools_other_class(void **state)
{
    SKIP_RELEASE();
    mrt_violations *v = *state;
    int seen = 0;
    for (int ts = 0; ts < 2; ts++) {
        mr_pools *p = pools_new(ts);
        void *big = mr_pools_alloc(p, 200, 8), *small = mr_pools_alloc(p, 48, 8);
        void *aligned = mr_pools_alloc(p, 24, 64);
        assert_non_null(big);
        assert_non_null(small);
        assert_non_null(aligned);
        pools_bad_free(v, &seen, p, big, 48, 8, "another class");
        pools_bad_free(v, &seen, p, small, 200, 8, "another class");
        pools_bad_free(v, &seen, p, aligned, 24, 8, "another class");
        /* the frees the contract allows: the rounding's size, or the sizes
         * mr_pools_block_size names */
        mr_pools_free(p, big, mr_pools_block_size(p, 200, 8), 8);
        mr_pools_free(p, small, 41, 8);
        mr_pools_free(p, aligned, 24, 64);
        pools_end(v, seen, p);
    }
}

/* Case 3: a direct block (above the classes) freed with a pooled size. */
static void test_pools_direct_as_pooled(void **state)
{
    SKIP_RELEASE();
    mrt_violations *v = *state;
    int seen = 0;
    for (int ts = 0; ts < 2; ts++) {
        mr_pools *p = pools_new(ts);
        void *d = mr_pools_alloc(p, DIRECT, 8), *a = mr_pools_alloc(p, 48, 8);
        assert_non_null(d);
        assert_non_null(a);
        pools_bad_free(v, &seen, p, d, 48, 8, "direct block");
        pools_bad_free(v, &seen, p, a, DIRECT, 8, "another class");
        mr_pools_free(p, d, DIRECT, 8);
        mr_pools_free(p, a, 48, 8);
        /* freed: no longer a block of the pool */
        pools_bad_free(v, &seen, p, d, 48, 8, "not a block of this pool");
        pools_end(v, seen, p);
    }
}

/* The resource view checks the same (the library's own inline free). */
static void test_pools_resource_view(void **state)
{
    SKIP_RELEASE();
    mrt_violations *v = *state;
    mr_pools *p = pools_new(0);
    mr_resource *r = mr_pools_resource(p);
    void *big = mr_allocate(r, 200, 8);
    assert_non_null(big);
    mr_deallocate(r, big, 48, 8);
    assert_int_equal(v->count, 1);
    assert_ptr_equal(v->ptr, big);
    mr_deallocate(r, big, 200, 8);
    pools_end(v, 1, p);
}

/* Good frees are never reported: many sizes, chunks that come and go
 * (release, reset, the trim of a pool that is not thread-safe). */
static void test_pools_no_false_reports(void **state)
{
    SKIP_RELEASE();
    mrt_violations *v = *state;
    enum { N = 3000 };
    static void *b[N];
    static size_t sz[N];
    for (int ts = 0; ts < 2; ts++) {
        mr_pools *p = pools_new(ts);
        unsigned long x = 12345;
        for (int round = 0; round < 6; round++) {
            for (int i = 0; i < N; i++) {
                x = x * 6364136223846793005UL + 1442695040888963407UL;
                sz[i] = (size_t)(x >> 33) % (round % 2 == 0 ? 600 : 70000) + 1;
                b[i] = mr_pools_alloc(p, sz[i], 8);
                assert_non_null(b[i]);
            }
            for (int i = 0; i < N; i++)
                mr_pools_free(p, b[i], sz[i], 8);
            if (round == 2)
                mr_pools_release(p);
            if (round == 4)
                mr_pools_reset(p);
        }
        pools_end(v, 0, p);
    }
}

static void objpool_bad_free(mrt_violations *v, int *seen, mr_objpool *p, void *bad, const char *words)
{
    mr_stats before = objpool_stats(p);
    mr_objpool_free(p, bad);
    assert_reported(v, seen, bad, words);
    mr_stats after = objpool_stats(p);
    mrt_assert_stats_equal(&after, &before);
    assert_true(mr_objpool_check(p));
    void *x = mr_objpool_alloc(p), *y = mr_objpool_alloc(p);
    assert_non_null(x);
    assert_non_null(y);
    assert_ptr_not_equal(x, bad);
    assert_ptr_not_equal(y, bad);
    mr_objpool_free(p, y);
    mr_objpool_free(p, x);
    assert_int_equal(v->count, *seen);
}

/* mr_objpool_free: malloc's memory, another pool's object, the inside of
 * an object. */
static void test_objpool_foreign(void **state)
{
    SKIP_RELEASE();
    mrt_violations *v = *state;
    int seen = 0;
    for (int ts = 0; ts < 2; ts++) {
        mr_objpool_options o = {.thread_safe = ts == 1};
        mr_objpool *p = mr_objpool_create(40, 8, &o), *q = mr_objpool_create(40, 8, &o);
        assert_non_null(p);
        assert_non_null(q);
        char *a = mr_objpool_alloc(p), *b = mr_objpool_alloc(q);
        char *m = malloc(64);
        assert_non_null(a);
        assert_non_null(b);
        assert_non_null(m);
        objpool_bad_free(v, &seen, p, m, "not an object of this pool");
        objpool_bad_free(v, &seen, p, b, "not an object of this pool");
        objpool_bad_free(v, &seen, p, a + 8, "not the start of an object");
        mr_objpool_free(q, b);
        mr_objpool_free(p, a);
        assert_int_equal(v->count, seen);
        mr_objpool_destroy(q);
        mr_objpool_destroy(p);
        free(m);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        mrt_violation_test(test_pools_malloc_pointer),  mrt_violation_test(test_pools_foreign_block),
        mrt_violation_test(test_pools_other_class),     mrt_violation_test(test_pools_direct_as_pooled),
        mrt_violation_test(test_pools_resource_view),   mrt_violation_test(test_pools_no_false_reports),
        mrt_violation_test(test_objpool_foreign),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
