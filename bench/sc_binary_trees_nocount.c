/* bench/sc_binary_trees_nocount.c -- the memres arena with default options,
 * compiled with MR_ARENA_NO_COUNT: the same as the "memres arena" row except
 * that the inline allocation path does not count allocations.  The gap
 * between the two rows is the price of that counter (see arena.h). */
#define MR_ARENA_NO_COUNT 1

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "memres/arena.h"
#include "sc_binary_trees.h"

static inline bt_node *arena_nc_node(mr_arena *a)
{
    bt_node *n = mr_arena_alloc(a, sizeof *n);
    if (MR_UNLIKELY(n == NULL))
        bt_oom();
    return n;
}

BT_VARIANT_H(bt_arena_nc, arena_ctx, mr_arena, ARENA_HANDLE, arena_nc_node, ARENA_BEGIN, ARENA_END)

static void *arena_nc_new(void *shared, int max_depth)
{
    (void)shared;
    (void)max_depth;
    return bt_arena_ctx_with(NULL); /* default options, as in "memres arena" */
}

static const bt_ops arena_nc_ops = {
    NULL, NULL, arena_nc_new, bt_arena_ctx_free, bt_arena_nc_make, bt_arena_nc_drop, bt_arena_nc_trees, bt_arena_stats
};

static int run_arena_nc(const bench_args *args, bench_out *out)
{
    return bt_run(&arena_nc_ops, 1, args, out);
}

static const bench_variant bench_binary_trees_nocount[] = {
    {"binary-trees", "memres arena/no count", BENCH_MEMRES, true, NULL, run_arena_nc},
    {NULL, NULL, BENCH_MEMRES, false, NULL, NULL},
};
BENCH_REGISTER_TABLE(bench_binary_trees_nocount)
