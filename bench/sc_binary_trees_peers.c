/* SPDX-License-Identifier: MIT */
/* bench/sc_binary_trees_peers.c -- the variants of binary-trees that are not
 * memres (the list is in sc_binary_trees.c): malloc per node, the
 * hand-written bump pointer (the reference limit), and the C peer libraries
 * APR, obstack and talloc.  Each BT_VARIANT below generates its variant's
 * inner loop here, with the allocation inlined.  std::pmr's are in
 * sc_binary_trees_pmr.cpp.
 */
#include <obstack.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "memres/config.h"

#ifdef BENCH_HAVE_APR
#  include <apr_general.h>
#  include <apr_pools.h>
#endif
#ifdef BENCH_HAVE_TALLOC
#  include <talloc.h>
#endif

#include "sc_binary_trees.h"

/* ---- malloc / free per node ---- */

typedef struct malloc_ctx {
    int unused;
} malloc_ctx;

static inline bt_node *malloc_node(malloc_ctx *c)
{
    (void)c;
    bt_node *n = malloc(sizeof *n);
    if (MR_UNLIKELY(n == NULL))
        bt_oom();
    return n;
}

static void malloc_free_tree(bt_node *t)
{
    if (t->left) {
        malloc_free_tree(t->left);
        malloc_free_tree(t->right);
    }
    free(t);
}

#define MALLOC_BEGIN(c) ((void)(c))
#define MALLOC_END(c, t) malloc_free_tree(t)
BT_VARIANT(bt_malloc, malloc_ctx, malloc_node, MALLOC_BEGIN, MALLOC_END)

static void *malloc_ctx_new(void *shared, int max_depth)
{
    (void)shared;
    (void)max_depth;
    return calloc(1, sizeof(malloc_ctx));
}

const bt_ops bt_malloc_ops = {
    NULL, NULL, malloc_ctx_new, free, bt_malloc_make, bt_malloc_drop, bt_malloc_trees, NULL
};

/* ---- hand-written bump pointer: the reference limit ---- */

typedef struct bump_ctx {
    char *ptr, *end, *mark;
    char *base;
    size_t size;
    int mapped;
} bump_ctx;

static inline bt_node *bump_node(bump_ctx *c)
{
    char *p = c->ptr;
    if (MR_UNLIKELY((size_t)(c->end - p) < sizeof(bt_node)))
        bt_oom();
    c->ptr = p + sizeof(bt_node);
    return (bt_node *)(void *)p;
}

#define BUMP_BEGIN(c) ((c)->mark = (c)->ptr)
#define BUMP_END(c, t) ((c)->ptr = (c)->mark)
BT_VARIANT(bt_bump, bump_ctx, bump_node, BUMP_BEGIN, BUMP_END)

static void *bump_ctx_new(void *shared, int max_depth)
{
    (void)shared;
    bump_ctx *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    c->size = bt_nodes(max_depth) * sizeof(bt_node);
    if ((c->base = malloc(c->size)) == NULL) {
        free(c);
        return NULL;
    }
    c->ptr = c->mark = c->base;
    c->end = c->base + c->size;
    return c;
}

#define BT_HUGE ((size_t)2 << 20)

static void *bump_huge_ctx_new(void *shared, int max_depth)
{
    (void)shared;
    bump_ctx *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    size_t want = bt_nodes(max_depth) * sizeof(bt_node);
    c->size = (want + BT_HUGE - 1) & ~(BT_HUGE - 1);
    /* Over-map by one huge page and trim, so that the region is 2 MiB aligned. */
    char *raw = mmap(NULL, c->size + BT_HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) {
        free(c);
        return NULL;
    }
    uintptr_t r = (uintptr_t)raw;
    uintptr_t aligned = (r + BT_HUGE - 1) & ~(uintptr_t)(BT_HUGE - 1);
    if (aligned > r)
        munmap(raw, aligned - r);
    munmap((char *)aligned + c->size, BT_HUGE - (aligned - r));
    c->base = (char *)aligned;
    (void)madvise(c->base, c->size, MADV_HUGEPAGE); /* best effort */
    c->mapped = 1;
    c->ptr = c->mark = c->base;
    c->end = c->base + want;
    return c;
}

static void bump_ctx_free(void *vc)
{
    bump_ctx *c = vc;
    if (c->mapped)
        munmap(c->base, c->size);
    else
        free(c->base);
    free(c);
}

const bt_ops bt_bump_ops = {
    NULL, NULL, bump_ctx_new, bump_ctx_free, bt_bump_make, bt_bump_drop, bt_bump_trees, NULL
};
const bt_ops bt_bump_huge_ops = {
    NULL, NULL, bump_huge_ctx_new, bump_ctx_free, bt_bump_make, bt_bump_drop, bt_bump_trees, NULL
};

/* ---- APR pools, cleared per tree ---- */

#ifdef BENCH_HAVE_APR
typedef struct apr_ctx {
    apr_pool_t *pool;
} apr_ctx;

static inline bt_node *apr_node(apr_pool_t *pool)
{
    bt_node *n = apr_palloc(pool, sizeof *n);
    if (MR_UNLIKELY(n == NULL))
        bt_oom();
    return n;
}

#define APR_BEGIN(c) ((void)(c))
#define APR_END(c, t) apr_pool_clear((c)->pool)
#define APR_HANDLE(c) ((c)->pool)
BT_VARIANT_H(bt_apr, apr_ctx, apr_pool_t, APR_HANDLE, apr_node, APR_BEGIN, APR_END)

static void *apr_shared_new(int *failed)
{
    if (apr_initialize() != APR_SUCCESS)
        *failed = 1;
    return NULL;
}

static void apr_shared_free(void *shared)
{
    (void)shared;
    apr_terminate();
}

static void *apr_ctx_new(void *shared, int max_depth)
{
    (void)shared;
    (void)max_depth;
    apr_ctx *c = calloc(1, sizeof *c);
    /* Unmanaged: the pool has its own allocator, so threads never share a lock. */
    if (c && apr_pool_create_unmanaged_ex(&c->pool, NULL, NULL) != APR_SUCCESS) {
        free(c);
        c = NULL;
    }
    return c;
}

static void apr_ctx_free(void *vc)
{
    apr_ctx *c = vc;
    apr_pool_destroy(c->pool);
    free(c);
}

const bt_ops bt_apr_ops = {
    apr_shared_new, apr_shared_free, apr_ctx_new, apr_ctx_free, bt_apr_make, bt_apr_drop, bt_apr_trees, NULL
};

#endif

/* ---- GNU obstack, freed to the root per tree ---- */

#define obstack_chunk_alloc malloc
#define obstack_chunk_free free

typedef struct obstack_ctx {
    struct obstack ob;
} obstack_ctx;

static inline bt_node *obstack_node(obstack_ctx *c)
{
    /* obstack_alloc never returns NULL: failure calls obstack_alloc_failed_handler. */
    return obstack_alloc(&c->ob, sizeof(bt_node));
}

#define OBSTACK_BEGIN(c) ((void)(c))
#define OBSTACK_END(c, t) obstack_free(&(c)->ob, (t))
BT_VARIANT(bt_obstack, obstack_ctx, obstack_node, OBSTACK_BEGIN, OBSTACK_END)

static void *obstack_ctx_new(void *shared, int max_depth)
{
    (void)shared;
    (void)max_depth;
    obstack_ctx *c = calloc(1, sizeof *c);
    if (c)
        obstack_init(&c->ob);
    return c;
}

static void obstack_ctx_free(void *vc)
{
    obstack_ctx *c = vc;
    obstack_free(&c->ob, NULL);
    free(c);
}

const bt_ops bt_obstack_ops = {
    NULL, NULL, obstack_ctx_new, obstack_ctx_free, bt_obstack_make, bt_obstack_drop, bt_obstack_trees, NULL
};

/* ---- talloc, a context per tree ---- */

#ifdef BENCH_HAVE_TALLOC
typedef struct talloc_ctx {
    TALLOC_CTX *root;
    TALLOC_CTX *tree;
} talloc_ctx;

static inline bt_node *talloc_node(TALLOC_CTX *tree)
{
    bt_node *n = talloc_size(tree, sizeof *n);
    if (MR_UNLIKELY(n == NULL))
        bt_oom();
    return n;
}

static inline void talloc_begin(talloc_ctx *c)
{
    if ((c->tree = talloc_new(c->root)) == NULL)
        bt_oom();
}

#define TALLOC_END(c, t) talloc_free((c)->tree)
#define TALLOC_HANDLE(c) ((c)->tree)
BT_VARIANT_H(bt_talloc, talloc_ctx, TALLOC_CTX, TALLOC_HANDLE, talloc_node, talloc_begin, TALLOC_END)

static void *talloc_ctx_new(void *shared, int max_depth)
{
    (void)shared;
    (void)max_depth;
    talloc_ctx *c = calloc(1, sizeof *c);
    if (c && (c->root = talloc_new(NULL)) == NULL) {
        free(c);
        c = NULL;
    }
    return c;
}

static void talloc_ctx_free(void *vc)
{
    talloc_ctx *c = vc;
    talloc_free(c->root);
    free(c);
}

const bt_ops bt_talloc_ops = {
    NULL, NULL, talloc_ctx_new, talloc_ctx_free, bt_talloc_make, bt_talloc_drop, bt_talloc_trees, NULL
};

#endif
