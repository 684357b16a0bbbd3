/* SPDX-License-Identifier: MIT */
/* bench/sc_binary_trees.h -- the binary-trees workload, shared by its files:
 * the rows (sc_binary_trees.c), the program (sc_binary_trees_driver.c) and
 * the variants by family (sc_binary_trees_memres.c, sc_binary_trees_peers.c,
 * sc_binary_trees_pmr.cpp).
 *
 * The Benchmarks Game rules: with n the depth argument, min_depth 4 and
 * max_depth = max(min_depth + 2, n): build and check a stretch tree of depth
 * max_depth + 1 and drop it; build a long-lived tree of depth max_depth; for
 * d = min_depth, min_depth + 2, ..., max_depth build, check and drop
 * 2^(max_depth - d + min_depth) trees of depth d; check the long-lived tree.
 * "check" is the node count.  A node is two child pointers (16 bytes).
 *
 * A variant supplies only the allocation, as a bt_ops table: contexts (one
 * per worker thread, one for the long-lived tree), building one tree, and
 * dropping it.  bt_run is the rest of the program, the same for every
 * variant.  The inner loop (bt_ops.trees) is generated per variant with the
 * allocation inlined, so no indirect call is made per node: a variant's
 * BT_VARIANT and its allocation stay in one file.
 */
#ifndef MEMRES_BENCH_BINARY_TREES_H
#define MEMRES_BENCH_BINARY_TREES_H

#include <stddef.h>
#include <stdint.h>

#include "bench.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bt_node {
    struct bt_node *left, *right;
} bt_node;

#define BT_MIN_DEPTH 4

typedef struct bt_ops {
    /* State shared by every context of one run (a synchronized pool, a
     * library's global init); may be NULL.  shared_new returns NULL on
     * failure only when it also sets *failed. */
    void *(*shared_new)(int *failed);
    void  (*shared_free)(void *shared);
    /* A context holds at most one tree at a time, of depth <= max_depth.
     * NULL on failure. */
    void *(*ctx_new)(void *shared, int max_depth);
    void  (*ctx_free)(void *ctx);
    /* Builds one tree in ctx (the only one it holds until drop). */
    bt_node *(*make)(void *ctx, int depth);
    void  (*drop)(void *ctx, bt_node *tree);
    /* count times: make a tree of depth d, check it, drop it; returns the
     * sum of the checks. */
    int64_t (*trees)(void *ctx, int depth, int64_t count);
    /* memres variants: adds the peak bytes ctx held from upstream to *held.
     * NULL for the others. */
    void (*stats)(void *ctx, size_t *held);
} bt_ops;

/* Nodes in a tree of depth d. */
static inline size_t bt_nodes(int d)
{
    return ((size_t)2 << d) - 1;
}

/* The node count of a tree (the game's "check"). */
static inline int64_t bt_check(const bt_node *t)
{
    return t->left ? 1 + bt_check(t->left) + bt_check(t->right) : 1;
}

/* Runs the whole program with ops; threaded: the trees of each depth are
 * split across args->threads threads, each with its own context.  Prints
 * the game's lines into out; checksum = the sum of every printed check.
 * Returns 0, or -1 when a context could not be created. */
int bt_run(const bt_ops *ops, int threaded, const bench_args *args, bench_out *out);

/* Dies with a message: an allocation failed (the workload does not
 * recover; the harness reports the run as failed). */
__attribute__((noreturn, cold)) void bt_oom(void);

/* The worker threads of a run: args->threads for a threaded variant, else 1. */
int bt_threads(int threaded, const bench_args *args);
/* The most bytes of nodes alive at once with nthreads threads (what
 * bt_run puts in out->requested_bytes). */
size_t bt_requested_bytes(const bench_args *args, int nthreads);

/* BT_VARIANT_H(prefix, ctx type, handle type, HANDLE(c), ALLOC(h), BEGIN(c),
 * END(c, tree)) defines prefix_make, prefix_drop and prefix_trees: the same
 * tree code for every variant, pre-order (a node before its children, so that
 * the root is the first allocation of a tree), with ALLOC inlined.  The
 * recursion passes the handle a user of that allocator would pass down (the
 * mr_arena *, the apr_pool_t *, ...); BT_VARIANT passes the context itself
 * (the hand-written bump pointer keeps its pointer there). */
#define BT_VARIANT_H(prefix, ctx_t, handle_t, HANDLE, ALLOC, BEGIN, END)               \
    static bt_node *prefix##_build(handle_t *h, int d)                                \
    {                                                                                 \
        bt_node *n = ALLOC(h);                                                        \
        if (d > 0) {                                                                  \
            n->left = prefix##_build(h, d - 1);                                       \
            n->right = prefix##_build(h, d - 1);                                      \
        } else {                                                                      \
            n->left = NULL;                                                           \
            n->right = NULL;                                                          \
        }                                                                             \
        return n;                                                                     \
    }                                                                                 \
    static bt_node *prefix##_make(void *vc, int d)                                    \
    {                                                                                 \
        ctx_t *c = vc;                                                                \
        BEGIN(c);                                                                     \
        return prefix##_build(HANDLE(c), d);                                          \
    }                                                                                 \
    static void prefix##_drop(void *vc, bt_node *t)                                   \
    {                                                                                 \
        ctx_t *c = vc;                                                                \
        (void)c;                                                                      \
        (void)t;                                                                      \
        END(c, t);                                                                    \
    }                                                                                 \
    static int64_t prefix##_trees(void *vc, int d, int64_t count)                     \
    {                                                                                 \
        ctx_t *c = vc;                                                                \
        int64_t check = 0;                                                            \
        for (int64_t i = 0; i < count; i++) {                                         \
            BEGIN(c);                                                                 \
            bt_node *t = prefix##_build(HANDLE(c), d);                                \
            check += bt_check(t);                                                     \
            END(c, t);                                                                \
        }                                                                             \
        return check;                                                                 \
    }
#define BT_SELF(c) (c)
#define BT_VARIANT(prefix, ctx_t, ALLOC, BEGIN, END) BT_VARIANT_H(prefix, ctx_t, ctx_t, BT_SELF, ALLOC, BEGIN, END)

/* The variants, one bt_ops each.  memres (sc_binary_trees_memres.c): */
extern const bt_ops bt_arena_ops;
extern const bt_ops bt_arena_blocks_ops;
extern const bt_ops bt_arena_pages_ops;
extern const bt_ops bt_arena_huge_ops;
extern const bt_ops bt_objpool_ops;
extern const bt_ops bt_pools_own_ops;
extern const bt_ops bt_pools_shared_ops;
extern const bt_ops bt_objpool_shared_ops;
extern const bt_ops bt_pools_local_ops;
extern const bt_ops bt_objpool_local_ops;
/* malloc, the reference limit and the C peers (sc_binary_trees_peers.c): */
extern const bt_ops bt_malloc_ops;
extern const bt_ops bt_bump_ops;
extern const bt_ops bt_bump_huge_ops;
#ifdef BENCH_HAVE_APR
extern const bt_ops bt_apr_ops;
#endif
extern const bt_ops bt_obstack_ops;
#ifdef BENCH_HAVE_TALLOC
extern const bt_ops bt_talloc_ops;
#endif
/* std::pmr (sc_binary_trees_pmr.cpp): */
extern const bt_ops bt_pmr_monotonic_ops;
extern const bt_ops bt_pmr_monotonic_buffer_ops;
extern const bt_ops bt_pmr_unsync_pool_ops;
extern const bt_ops bt_pmr_sync_pool_ops;

#ifdef __cplusplus
}
#endif
#endif
