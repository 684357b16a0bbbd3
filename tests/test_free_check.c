/* SPDX-License-Identifier: MIT */
/* tests/test_free_check.c -- a block freed twice (MR_FREE_CHECK, config.h).
 *
 * This file is built with MR_FREE_CHECK forced on, as code built without
 * NDEBUG has it, in every build of the library (a release one included):
 * mr_objpool_free and mr_pools_free of an object or block freed already are
 * reported to the violation handler and ignored, so the next two
 * allocations do not return the same address; a block of one word is not
 * checked; a block freed once, reallocated and freed again is no double
 * free; a value in a live block's second word that happens to equal the
 * mark costs a walk, never a report.  Thread-safe pools: a thread finds
 * what it freed twice itself (the walk is of its own cache; across threads
 * nothing is promised).  Builds with ASan or Valgrind take
 * the library's checked paths instead (their own reports of the use after
 * free): there the cases are skipped.
 */
#undef MR_FREE_CHECK
#define MR_FREE_CHECK 1

#include <string.h>

#include "support.h"

#if MR_CHECKED
#  define SKIP_CHECKED() skip()
#else
#  define SKIP_CHECKED() ((void)0)
#endif

static void test_objpool_double_free(void **state)
{
    SKIP_CHECKED();
    mrt_violations *v = *state;
    for (int ts = 0; ts < 2; ts++) {
        v->count = 0;
        mr_objpool *p = mr_objpool_create(40, 8, &(mr_objpool_options){.thread_safe = ts == 1});
        assert_non_null(p);
        void *a = mr_objpool_alloc(p), *b = mr_objpool_alloc(p);
        assert_non_null(a);
        assert_non_null(b);
        mr_objpool_free(p, a);
        mr_objpool_free(p, b);
        mr_objpool_free(p, a); /* twice */
        assert_int_equal(v->count, 1);
        assert_ptr_equal(v->ptr, a);
        assert_non_null(strstr(v->last, "freed twice"));
        void *x = mr_objpool_alloc(p), *y = mr_objpool_alloc(p);
        assert_ptr_not_equal(x, y); /* the second free was ignored */
        assert_true(mr_objpool_check(p));
        /* freed, handed out again, freed: no double free */
        mr_objpool_free(p, x);
        void *z = mr_objpool_alloc(p);
        assert_ptr_equal(z, x);
        mr_objpool_free(p, z);
        mr_objpool_free(p, y);
        assert_int_equal(v->count, 1);
        mr_objpool_destroy(p);
    }
}

static void test_pools_double_free(void **state)
{
    SKIP_CHECKED();
    mrt_violations *v = *state;
    for (int ts = 0; ts < 2; ts++) {
        v->count = 0;
        mr_pools *p = mr_pools_create(&(mr_pools_options){.thread_safe = ts == 1});
        assert_non_null(p);
        static const size_t sizes[] = {16, 24, 100, 1000, 5000};
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            size_t n = sizes[k];
            void *a = mr_pools_alloc(p, n, 8), *b = mr_pools_alloc(p, n, 8);
            assert_non_null(a);
            assert_non_null(b);
            mr_pools_free(p, a, n, 8);
            mr_pools_free(p, b, n, 8);
            mr_pools_free(p, a, n, 8); /* twice */
            assert_int_equal(v->count, (int)k + 1);
            assert_ptr_equal(v->ptr, a);
            void *x = mr_pools_alloc(p, n, 8), *y = mr_pools_alloc(p, n, 8);
            assert_ptr_not_equal(x, y);
            mr_pools_free(p, x, n, 8);
            mr_pools_free(p, y, n, 8);
        }
        assert_int_equal(v->count, 5);
        assert_true(mr_pools_check(p));
        /* a block of one word carries no mark: not checked (the walker
         * finds the cycle it makes) */
        if (ts == 0) {
            void *w = mr_pools_alloc(p, 8, 8);
            mr_pools_free(p, w, 8, 8);
            assert_int_equal(v->count, 5);
            (void)mr_pools_alloc(p, 8, 8);
        }
        mr_pools_destroy(p);
    }
}

/* A live block whose second word the program filled with the pool's mark
 * (here: copied from a freed block) is no double free: the walk finds it
 * on no list, and the free goes on. */
static void test_mark_in_live_data(void **state)
{
    SKIP_CHECKED();
    mrt_violations *v = *state;
    mr_pools *p = mr_pools_create(NULL);
    assert_non_null(p);
    unsigned char *a = mr_pools_alloc(p, 64, 8), *b = mr_pools_alloc(p, 64, 8);
    mr_pools_free(p, a, 64, 8);
    memcpy(b + 8, a + 8, 8); /* the mark, as data */
    mr_pools_free(p, b, 64, 8);
    assert_int_equal(v->count, 0);
    assert_true(mr_pools_check(p));
    mr_pools_destroy(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        mrt_violation_test(test_objpool_double_free),
        mrt_violation_test(test_pools_double_free),
        mrt_violation_test(test_mark_in_live_data),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
