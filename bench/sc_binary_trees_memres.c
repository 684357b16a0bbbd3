/* SPDX-License-Identifier: MIT */
/* bench/sc_binary_trees_memres.c -- the memres variants of binary-trees
 * (the list is in sc_binary_trees.c): the arena over each upstream, the
 * object pool reset per tree, and the pools and object pool freed per node,
 * one per context or one shared by every thread.  Each BT_VARIANT_H below
 * generates its variant's inner loop here, with the memres calls inlined.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memres/arena.h"
#include "memres/blocks.h"
#include "memres/objpool.h"
#include "memres/pools.h"

#include "sc_binary_trees.h"

/* ---- memres arena, rewound per tree ---- */

static inline bt_node *arena_node(mr_arena *a)
{
    bt_node *n = mr_arena_alloc(a, sizeof *n);
    if (MR_UNLIKELY(n == NULL))
        bt_oom();
    return n;
}

typedef struct arena_ctx {
    mr_arena *arena;
    mr_arena_mark mark;
} arena_ctx;

#define ARENA_BEGIN(c) ((c)->mark = mr_arena_save((c)->arena))
#define ARENA_END(c, t) mr_arena_rewind((c)->arena, (c)->mark)
#define ARENA_HANDLE(c) ((c)->arena)
BT_VARIANT_H(bt_arena, arena_ctx, mr_arena, ARENA_HANDLE, arena_node, ARENA_BEGIN, ARENA_END)

static void *arena_ctx_with(const mr_arena_options *opts)
{
    arena_ctx *c = calloc(1, sizeof *c);
    if (c && (c->arena = mr_arena_create(opts)) == NULL) {
        free(c);
        c = NULL;
    }
    return c;
}

static void arena_ctx_free(void *vc)
{
    arena_ctx *c = vc;
    mr_arena_destroy(c->arena);
    free(c);
}

static void arena_stats(void *vc, size_t *held)
{
    mr_stats st;
    mr_arena_stats(((arena_ctx *)vc)->arena, &st);
    *held += st.peak_held;
}

static void *arena_default_new(void *shared, int max_depth)
{
    (void)shared;
    (void)max_depth;
    return arena_ctx_with(NULL); /* the arena as users create it */
}

const bt_ops bt_arena_ops = {
    NULL, NULL, arena_default_new, arena_ctx_free, bt_arena_make, bt_arena_drop, bt_arena_trees, arena_stats
};

static void *arena_blocks_new(void *shared, int max_depth)
{
    (void)shared;
    (void)max_depth;
    mr_blocks *b = mr_blocks_shared();
    mr_arena_options o = { 0 };
    o.upstream = mr_blocks_resource(b);
    o.block_size = mr_blocks_block_size(b);
    o.max_block_size = o.block_size;
    return arena_ctx_with(&o);
}

static void *arena_pages_new(void *shared, int max_depth)
{
    (void)shared;
    (void)max_depth;
    mr_arena_options o = { 0 };
    o.upstream = mr_page_resource();
    return arena_ctx_with(&o);
}

static void *arena_huge_new(void *shared, int max_depth)
{
    (void)shared;
    (void)max_depth;
    mr_arena_options o = { 0 };
    o.upstream = mr_page_resource_huge();
    return arena_ctx_with(&o);
}

const bt_ops bt_arena_blocks_ops = {
    NULL, NULL, arena_blocks_new, arena_ctx_free, bt_arena_make, bt_arena_drop, bt_arena_trees, arena_stats
};
const bt_ops bt_arena_pages_ops = {
    NULL, NULL, arena_pages_new, arena_ctx_free, bt_arena_make, bt_arena_drop, bt_arena_trees, arena_stats
};
const bt_ops bt_arena_huge_ops = {
    NULL, NULL, arena_huge_new, arena_ctx_free, bt_arena_make, bt_arena_drop, bt_arena_trees, arena_stats
};

/* ---- memres objpool, reset per tree ---- */

typedef struct objpool_ctx {
    mr_objpool *pool;
} objpool_ctx;

static inline bt_node *objpool_node(mr_objpool *p)
{
    bt_node *n = mr_objpool_alloc(p);
    if (MR_UNLIKELY(n == NULL))
        bt_oom();
    return n;
}

#define OBJPOOL_BEGIN(c) ((void)(c))
#define OBJPOOL_END(c, t) mr_objpool_reset((c)->pool)
#define OBJPOOL_HANDLE(c) ((c)->pool)
BT_VARIANT_H(bt_objpool, objpool_ctx, mr_objpool, OBJPOOL_HANDLE, objpool_node, OBJPOOL_BEGIN, OBJPOOL_END)

static void *objpool_ctx_new(void *shared, int max_depth)
{
    (void)shared;
    (void)max_depth;
    objpool_ctx *c = calloc(1, sizeof *c);
    if (c && (c->pool = mr_objpool_create(sizeof(bt_node), _Alignof(bt_node), NULL)) == NULL) {
        free(c);
        c = NULL;
    }
    return c;
}

static void objpool_ctx_free(void *vc)
{
    objpool_ctx *c = vc;
    mr_objpool_destroy(c->pool);
    free(c);
}

static void objpool_stats(void *vc, size_t *held)
{
    mr_stats st;
    mr_objpool_stats(((objpool_ctx *)vc)->pool, &st);
    *held += st.peak_held;
}

const bt_ops bt_objpool_ops = {
    NULL, NULL, objpool_ctx_new, objpool_ctx_free, bt_objpool_make, bt_objpool_drop, bt_objpool_trees,
    objpool_stats
};

/* ---- memres pools and objpool, freed per node: one per context, or one shared ---- */

/* What a shared variant's one pool is. */
enum bt_pool_kind { BT_POOLS, BT_OBJPOOL };

/* The shared variants' state: the one pool (thread-safe), its kind, and
 * whether bt_run's stats calls (one per context) have counted it already. */
typedef struct bt_shared_pool {
    void *pool; /* mr_pools * or mr_objpool * */
    enum bt_pool_kind kind;
    bool counted;
} bt_shared_pool;

/* A context of the per-node variants: the pool it allocates from, and the
 * shared state when that pool is the shared one (NULL: the context owns a
 * mr_pools). */
typedef struct pool_ctx {
    void *pool; /* mr_pools * or mr_objpool * */
    bt_shared_pool *shared;
    void *local; /* the local-handle variants: the running thread's handle of pool
                    (mr_pools_local * or mr_objpool_local *), taken per job */
} pool_ctx;

static inline bt_node *pools_node(mr_pools *p)
{
    bt_node *n = mr_pools_alloc(p, sizeof *n, _Alignof(bt_node));
    if (MR_UNLIKELY(n == NULL))
        bt_oom();
    return n;
}

static void pools_free_tree(mr_pools *p, bt_node *t)
{
    if (t->left) {
        pools_free_tree(p, t->left);
        pools_free_tree(p, t->right);
    }
    mr_pools_free(p, t, sizeof *t, _Alignof(bt_node));
}

#define POOLS_BEGIN(c) ((void)(c))
#define POOLS_END(c, t) pools_free_tree(POOLS_HANDLE(c), (t))
#define POOLS_HANDLE(c) ((mr_pools *)(c)->pool)
BT_VARIANT_H(bt_pools, pool_ctx, mr_pools, POOLS_HANDLE, pools_node, POOLS_BEGIN, POOLS_END)

static void objpool_free_tree(mr_objpool *p, bt_node *t)
{
    if (t->left) {
        objpool_free_tree(p, t->left);
        objpool_free_tree(p, t->right);
    }
    mr_objpool_free(p, t);
}

#define OBJPOOL_TS_END(c, t) objpool_free_tree(OBJPOOL_TS_HANDLE(c), (t))
#define OBJPOOL_TS_HANDLE(c) ((mr_objpool *)(c)->pool)
BT_VARIANT_H(bt_objpool_ts, pool_ctx, mr_objpool, OBJPOOL_TS_HANDLE, objpool_node, OBJPOOL_BEGIN,
             OBJPOOL_TS_END)

/* The shared pools through the running thread's handle (mr_pools_local_get,
 * mr_objpool_local_get): taken once per job -- each make, drop and trees
 * call, in the thread that runs it (a context's thread may change between
 * depths without --persistent) -- and passed down the recursion in place
 * of the pool. */
static inline bt_node *pools_local_node(mr_pools_local *l)
{
    bt_node *n = mr_pools_local_alloc(l, sizeof *n, _Alignof(bt_node));
    if (MR_UNLIKELY(n == NULL))
        bt_oom();
    return n;
}

static void pools_local_free_tree(mr_pools_local *l, bt_node *t)
{
    if (t->left) {
        pools_local_free_tree(l, t->left);
        pools_local_free_tree(l, t->right);
    }
    mr_pools_local_free(l, t, sizeof *t, _Alignof(bt_node));
}

#define POOLS_LOCAL_END(c, t) pools_local_free_tree(POOLS_LOCAL_HANDLE(c), (t))
#define POOLS_LOCAL_HANDLE(c) ((mr_pools_local *)(c)->local)
BT_VARIANT_H(bt_pools_local_in, pool_ctx, mr_pools_local, POOLS_LOCAL_HANDLE, pools_local_node, POOLS_BEGIN,
             POOLS_LOCAL_END)

static inline bt_node *objpool_local_node(mr_objpool_local *l)
{
    bt_node *n = mr_objpool_local_alloc(l);
    if (MR_UNLIKELY(n == NULL))
        bt_oom();
    return n;
}

static void objpool_local_free_tree(mr_objpool_local *l, bt_node *t)
{
    if (t->left) {
        objpool_local_free_tree(l, t->left);
        objpool_local_free_tree(l, t->right);
    }
    mr_objpool_local_free(l, t);
}

#define OBJPOOL_LOCAL_END(c, t) objpool_local_free_tree(OBJPOOL_LOCAL_HANDLE(c), (t))
#define OBJPOOL_LOCAL_HANDLE(c) ((mr_objpool_local *)(c)->local)
BT_VARIANT_H(bt_objpool_local_in, pool_ctx, mr_objpool_local, OBJPOOL_LOCAL_HANDLE, objpool_local_node,
             OBJPOOL_BEGIN, OBJPOOL_LOCAL_END)

/* The running thread's handle into the context, then the generated code. */
static void local_take(pool_ctx *c)
{
    c->local = c->shared->kind == BT_POOLS ? (void *)mr_pools_local_get(c->pool)
                                           : (void *)mr_objpool_local_get(c->pool);
    if (MR_UNLIKELY(c->local == NULL))
        bt_oom();
}

#define BT_LOCAL_OPS(prefix)                                                   \
    static bt_node *prefix##_make(void *vc, int d)                             \
    {                                                                          \
        local_take(vc);                                                        \
        return prefix##_in_make(vc, d);                                        \
    }                                                                          \
    static void prefix##_drop(void *vc, bt_node *t)                            \
    {                                                                          \
        local_take(vc);                                                        \
        prefix##_in_drop(vc, t);                                               \
    }                                                                          \
    static int64_t prefix##_trees(void *vc, int d, int64_t count)              \
    {                                                                          \
        local_take(vc);                                                        \
        return prefix##_in_trees(vc, d, count);                                \
    }
BT_LOCAL_OPS(bt_pools_local)
BT_LOCAL_OPS(bt_objpool_local)

static void *pools_own_new(void *shared, int max_depth)
{
    (void)shared;
    (void)max_depth;
    pool_ctx *c = calloc(1, sizeof *c);
    if (c && (c->pool = mr_pools_create(NULL)) == NULL) { /* default options: unsynchronised */
        free(c);
        c = NULL;
    }
    return c;
}

static void pools_own_free(void *vc)
{
    pool_ctx *c = vc;
    mr_pools_destroy(c->pool);
    free(c);
}

/* The one pool of a shared variant, created thread-safe; on failure NULL
 * and *failed set. */
static void *shared_new(enum bt_pool_kind kind, int *failed)
{
    bt_shared_pool *s = calloc(1, sizeof *s);
    if (s) {
        s->kind = kind;
        if (kind == BT_POOLS)
            s->pool = mr_pools_create(&(mr_pools_options){.thread_safe = true});
        else
            s->pool =
                mr_objpool_create(sizeof(bt_node), _Alignof(bt_node), &(mr_objpool_options){.thread_safe = true});
        if (s->pool == NULL) {
            fprintf(stderr, "binary-trees: %s (thread_safe): %s\n",
                    kind == BT_POOLS ? "mr_pools_create" : "mr_objpool_create", strerror(errno));
            free(s);
            s = NULL;
        }
    }
    if (s == NULL)
        *failed = 1;
    return s;
}

static void *pools_shared_new(int *failed)
{
    return shared_new(BT_POOLS, failed);
}

static void *objpool_shared_new(int *failed)
{
    return shared_new(BT_OBJPOOL, failed);
}

static void shared_free(void *vs)
{
    bt_shared_pool *s = vs;
    if (s) {
        if (s->kind == BT_POOLS)
            mr_pools_destroy(s->pool);
        else
            mr_objpool_destroy(s->pool);
        free(s);
    }
}

static void *shared_ctx_new(void *shared, int max_depth)
{
    (void)max_depth;
    pool_ctx *c = calloc(1, sizeof *c);
    if (c) {
        c->shared = shared;
        c->pool = c->shared->pool;
    }
    return c;
}

/* A context's own pools add their peak; the shared pool is counted once. */
static void pool_stats(void *vc, size_t *held)
{
    pool_ctx *c = vc;
    if (c->shared && c->shared->counted)
        return;
    mr_stats st;
    if (c->shared && c->shared->kind == BT_OBJPOOL)
        mr_objpool_stats(c->pool, &st);
    else
        mr_pools_stats(c->pool, &st);
    *held += st.peak_held;
    if (c->shared)
        c->shared->counted = true;
}

const bt_ops bt_pools_own_ops = {
    NULL, NULL, pools_own_new, pools_own_free, bt_pools_make, bt_pools_drop, bt_pools_trees, pool_stats
};
const bt_ops bt_pools_shared_ops = {
    pools_shared_new, shared_free, shared_ctx_new, free, bt_pools_make, bt_pools_drop, bt_pools_trees, pool_stats
};
const bt_ops bt_objpool_shared_ops = {
    objpool_shared_new, shared_free,        shared_ctx_new,      free,
    bt_objpool_ts_make, bt_objpool_ts_drop, bt_objpool_ts_trees, pool_stats
};
const bt_ops bt_pools_local_ops = {
    pools_shared_new,    shared_free,          shared_ctx_new,        free,
    bt_pools_local_make, bt_pools_local_drop, bt_pools_local_trees, pool_stats
};
const bt_ops bt_objpool_local_ops = {
    objpool_shared_new,    shared_free,            shared_ctx_new,          free,
    bt_objpool_local_make, bt_objpool_local_drop, bt_objpool_local_trees, pool_stats
};
