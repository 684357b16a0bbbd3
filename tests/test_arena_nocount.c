/* tests/test_arena_nocount.c -- MR_ARENA_NO_COUNT drops the allocation
 * counter from the inline path only: allocation, marks and every other
 * statistic behave as without it, and out-of-line allocations still count. */
#define MR_ARENA_NO_COUNT 1

#include "support.h"

#include <string.h>

static void test_nocount_allocates_and_counts_out_of_line(void **state)
{
    (void)state;
    mrt_upstream up;
    mrt_upstream_init(&up);
    mr_arena_options o = {.upstream = &up.base, .block_size = 4096};
    mr_arena *a = mr_arena_create(&o);
    assert_non_null(a);
    mr_arena_mark m = mr_arena_save(a);
    char *first = mr_arena_alloc(a, 24);
    assert_non_null(first);
    for (int i = 1; i < 1000; i++) {
        char *p = mr_arena_alloc(a, 24);
        assert_non_null(p);
        memset(p, i & 0xff, 24);
    }
    mr_stats st;
    mr_arena_stats(a, &st);
    /* every new block was an out-of-line allocation; the rest were inline */
    assert_true(st.allocations >= 1);
#if !MR_SANITIZED /* sanitizer builds allocate out of line: all counted */
    assert_true(st.allocations < 1000);
#endif
    assert_int_equal(st.in_use >= 1000 * 32 ? 1 : 0, 1);
    size_t slow = st.allocations;
    assert_non_null(mr_arena_alloc_aligned(a, 10, 256)); /* out of line: counted */
    mr_arena_stats(a, &st);
    assert_int_equal(st.allocations, slow + 1);
    assert_true(mr_arena_check(a));
    size_t calls = up.calls;
    mr_arena_rewind(a, m);
    assert_ptr_equal(mr_arena_alloc(a, 24), first);
    assert_int_equal(up.calls, calls);
    mr_arena_destroy(a);
    mrt_assert_balanced(&up);
    mrt_upstream_fini(&up);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nocount_allocates_and_counts_out_of_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
