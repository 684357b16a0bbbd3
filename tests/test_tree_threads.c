/* SPDX-License-Identifier: MIT */
/* tests/test_tree_threads.c -- the tree of lifetimes (memres/tree.h) under
 * threads.  Built and run under TSan and ASan in CI.
 *
 * The contract: children of a thread-safe pool or object pool, or of a
 * block pool (mr_blocks_shared() included), may be created and destroyed
 * from any thread; the links and the children a parent keeps for reuse
 * then take the parent's tree lock.  A child that is not thread-safe is
 * used by one thread at a time, but may be handed to another thread (here
 * through a mutex) and destroyed there.  Tested here, for each kind of
 * thread-safe parent:
 *   - churn: 4 threads each loop creating a child arena under the shared
 *     parent (so that the children one thread destroys and the parent keeps
 *     are reused by another), allocating from it, sometimes with a cleanup,
 *     a grandchild arena (which dies with it) or a child pool, and
 *     destroying it -- or handing it to another thread to destroy -- while
 *     the parent itself serves allocations and its figures are read; once
 *     joined, the parent has no children, every cleanup ran once, and the
 *     upstream is balanced after the parent's destroy;
 *   - cascade: the threads create children and leave them alive; the main
 *     thread, after joining, counts and reports them, and destroys the
 *     parent with all of them.
 * Worker threads never call cmocka (it is not thread-safe): they count what
 * went wrong, and the main thread asserts the counts are 0 once they are
 * joined.  No assertion measures time.  MEMRES_TEST_SCALE (percent)
 * shrinks the iteration counts, MEMRES_TEST_FACTOR multiplies them
 * (tests/pools_threads_helpers.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"
#include "pools_threads_helpers.h"

enum { THREADS = 4, HANDOFF_CAP = 16 };

/* The parents under test. */
enum parent_kind { P_POOLS, P_POOLS_VIEW, P_OBJPOOL, P_BLOCKS, P_SHARED, P_SHARED_OWN_UPSTREAM };
static const char *const parent_name[] = {"thread-safe pools",   "thread-safe pools, children over its resource view",
                                          "thread-safe objpool", "block pool",
                                          "mr_blocks_shared()",  "mr_blocks_shared(), children on the test's upstream"};

typedef struct parent {
    int kind;
    void *obj;
    mr_node *node;
    mr_resource *child_upstream; /* what children are made with (NULL: the parent's) */
} parent;

static parent parent_make(int kind, locked_upstream *lu)
{
    parent p = {.kind = kind};
    switch (kind) {
    case P_POOLS:
    case P_POOLS_VIEW:
        p.obj =
            mr_pools_create(&(mr_pools_options){.upstream = &lu->base, .thread_safe = true, .name = "shared pools"});
        assert_non_null(p.obj);
        p.node = mr_pools_node(p.obj);
        /* the view: the children's memory is the parent's, which must
         * outlive them (the cascade destroys them first) */
        p.child_upstream = kind == P_POOLS_VIEW ? mr_pools_resource(p.obj) : NULL;
        break;
    case P_OBJPOOL:
        p.obj = mr_objpool_create(
            48, 16,
            &(mr_objpool_options){
                .upstream = &lu->base, .objects_per_block = 64, .thread_safe = true, .name = "shared objpool"});
        assert_non_null(p.obj);
        p.node = mr_objpool_node(p.obj);
        break;
    case P_BLOCKS:
        p.obj = mr_blocks_create(
            &(mr_blocks_options){.upstream = &lu->base, .block_size = 4096, .max_free = 8 * 4096, .name = "blocks"});
        assert_non_null(p.obj);
        p.node = mr_blocks_node(p.obj);
        break;
    default:
        p.obj = mr_blocks_shared();
        p.node = mr_blocks_node(p.obj);
        /* with the parent's upstream (the page source), children are kept
         * by the shared pool; with the test's, they are not, and the
         * upstream proves that each one went back */
        p.child_upstream = kind == P_SHARED_OWN_UPSTREAM ? &lu->base : NULL;
        break;
    }
    assert_string_equal(mr_node_kind(p.node), kind <= P_POOLS_VIEW ? "pools"
                                              : kind == P_OBJPOOL  ? "objpool"
                                                                   : "blocks");
    return p;
}

static bool parent_check(const parent *p)
{
    switch (p->kind) {
    case P_POOLS:
    case P_POOLS_VIEW:
        return mr_pools_check(p->obj);
    case P_OBJPOOL:
        return mr_objpool_check(p->obj);
    default:
        return mr_blocks_check(p->obj);
    }
}

static void parent_destroy(parent *p)
{
    switch (p->kind) {
    case P_POOLS:
    case P_POOLS_VIEW:
        mr_pools_destroy(p->obj);
        break;
    case P_OBJPOOL:
        mr_objpool_destroy(p->obj);
        break;
    case P_BLOCKS:
        mr_blocks_destroy(p->obj);
        break;
    default:
        (void)mr_blocks_trim(p->obj);
        break; /* its kept children go back; it stays */
    }
}

/* One allocation from the parent itself and its return (the parent serves
 * its own users while its children come and go). */
static void parent_use(const parent *p, uint64_t *rng, long *bad)
{
    switch (p->kind) {
    case P_POOLS:
    case P_POOLS_VIEW: {
        size_t size = 1 + mrt_rand(rng) % 300;
        unsigned char *x = mr_pools_alloc(p->obj, size, 8);
        if (x == NULL) {
            ++*bad;
            return;
        }
        memset(x, 0x33, size);
        mr_pools_free(p->obj, x, size, 8);
        break;
    }
    case P_OBJPOOL: {
        unsigned char *x = mr_objpool_alloc(p->obj);
        if (x == NULL) {
            ++*bad;
            return;
        }
        memset(x, 0x33, 48);
        mr_objpool_free(p->obj, x);
        break;
    }
    default: {
        unsigned char *x = mr_blocks_get(p->obj);
        if (x == NULL) {
            ++*bad;
            return;
        }
        x[0] = 0x33;
        mr_blocks_put(p->obj, x);
        break;
    }
    }
    if (mrt_rand(rng) % 4 == 0) { /* the parent's own figures: a snapshot */
        mr_stats s;
        mr_node_stats(p->node, false, &s);
        if (s.held < s.in_use)
            ++*bad;
    }
}

/* ---- a child: an arena with a pattern in its allocations ---- */

static atomic_long registered, ran;

static void on_cleanup(void *arg)
{
    atomic_fetch_add_explicit(&ran, 1, memory_order_relaxed);
    if (((const unsigned char *)arg)[0] != 0x77) /* it runs before the memory it guards goes */
        abort();
}

typedef struct child {
    mr_arena *a;
    unsigned char *mem[3];
    size_t size[3];
    unsigned char tag;
    bool guards; /* mem[0] holds 0x77 at [0]: a grandchild's cleanup reads it */
} child;

/* A child arena of p, with allocations tagged `tag`, sometimes a cleanup,
 * a grandchild arena or a child pool under it.  false when a call failed. */
static bool child_make(const parent *p, uint64_t *rng, child *c, long *bad)
{
    static const size_t block_sizes[] = {0, 1024};
    uint64_t r = mrt_rand(rng);
    c->a = mr_arena_create(&(mr_arena_options){
        .upstream = p->child_upstream, .block_size = block_sizes[r % 2], .name = "child", .parent = p->node});
    if (c->a == NULL) {
        ++*bad;
        return false;
    }
    if (mr_node_parent(mr_arena_node(c->a)) != p->node || mr_node_first_child(mr_arena_node(c->a)) != NULL)
        ++*bad;
    c->tag = (unsigned char)(r >> 8);
    for (int i = 0; i < 3; i++) {
        c->size[i] = 16 + (size_t)((r >> (16 + 4 * i)) % 16) * 40;
        c->mem[i] = mr_arena_alloc(c->a, c->size[i]);
        if (c->mem[i] == NULL) {
            ++*bad;
            return false;
        }
        memset(c->mem[i], c->tag, c->size[i]);
    }
    if ((r >> 32) % 4 == 0) {
        unsigned char *guarded = mr_arena_alloc(c->a, 1);
        if (guarded == NULL || mr_arena_defer(c->a, on_cleanup, guarded) != 0) {
            ++*bad;
            return false;
        }
        guarded[0] = 0x77;
        atomic_fetch_add_explicit(&registered, 1, memory_order_relaxed);
    }
    if ((r >> 36) % 8 == 0) { /* a grandchild: dies with the child */
        mr_arena *g = mr_arena_create(&(mr_arena_options){.name = "grandchild", .parent = mr_arena_node(c->a)});
        if (g == NULL || mr_arena_alloc(g, 100) == NULL || mr_arena_defer(g, on_cleanup, c->mem[0]) != 0) {
            ++*bad;
            return false;
        }
        c->mem[0][0] = 0x77;
        c->guards = true;
        atomic_fetch_add_explicit(&registered, 1, memory_order_relaxed);
    }
    if ((r >> 40) % 16 == 0) { /* a child pool of the parent, used and destroyed at once */
        mr_pools *q = mr_pools_create(&(mr_pools_options){.upstream = p->child_upstream,
                                                          .largest_required_pool_block = 1024,
                                                          .name = "child pools",
                                                          .parent = p->node});
        if (q == NULL) {
            ++*bad;
            return false;
        }
        void *x = mr_pools_alloc(q, 100, 8);
        if (x == NULL)
            ++*bad;
        else
            memset(x, 0x44, 100);
        mr_pools_destroy(q);
    }
    return true;
}

/* The child's allocations still hold what child_make wrote. */
static bool child_ok(const child *c)
{
    for (int i = 0; i < 3; i++) {
        if (c->mem[i] == NULL)
            return false;
        if (i == 0 && c->guards && c->mem[0][0] != 0x77)
            return false;
        for (size_t k = i == 0 && c->guards ? 1 : 0; k < c->size[i]; k++)
            if (c->mem[i][k] != c->tag)
                return false;
    }
    return true;
}

/* ---- children handed between threads ---- */

typedef struct handoff {
    pthread_mutex_t mu;
    child slot[HANDOFF_CAP];
    size_t n;
} handoff;

static bool handoff_push(handoff *h, const child *c)
{
    pthread_mutex_lock(&h->mu);
    bool ok = h->n < HANDOFF_CAP;
    if (ok)
        h->slot[h->n++] = *c;
    pthread_mutex_unlock(&h->mu);
    return ok;
}

static bool handoff_pop(handoff *h, child *c)
{
    pthread_mutex_lock(&h->mu);
    bool ok = h->n > 0;
    if (ok)
        *c = h->slot[--h->n];
    pthread_mutex_unlock(&h->mu);
    return ok;
}

/* ---- the workers ---- */

typedef struct worker {
    pthread_t t;
    pthread_barrier_t *start;
    const parent *p;
    handoff *h;
    uint64_t seed;
    size_t iterations;
    bool keep; /* the cascade test: leave the children alive */
    child kept[64];
    size_t nkept;
    long bad;
} worker;

static void child_destroy(child *c, long *bad)
{
    if (!child_ok(c))
        ++*bad;
    if (mr_node_first_child(mr_arena_node(c->a)) != NULL && ((uintptr_t)c->a >> 6) % 2 == 0)
        mr_node_destroy(mr_arena_node(c->a));
    else
        mr_arena_destroy(c->a);
    c->a = NULL;
}

static void *churn(void *arg)
{
    worker *w = arg;
    uint64_t rng = w->seed;
    (void)pthread_barrier_wait(w->start); /* all at once: the most interleaving */
    for (size_t i = 0; i < w->iterations; i++) {
        child c = {0};
        if (!child_make(w->p, &rng, &c, &w->bad)) {
            if (c.a != NULL)
                mr_arena_destroy(c.a);
            continue;
        }
        uint64_t r = mrt_rand(&rng);
        if (r % 8 == 0 && !mr_arena_check(c.a))
            w->bad++;
        if (w->keep && w->nkept < sizeof w->kept / sizeof w->kept[0] && r % 4 == 0) {
            w->kept[w->nkept++] = c; /* dies with the parent */
        } else if (w->h != NULL && (r >> 8) % 4 == 0 && handoff_push(w->h, &c)) {
            /* another thread destroys it */
        } else {
            child_destroy(&c, &w->bad);
        }
        child other;
        if (w->h != NULL && (r >> 16) % 4 == 0 && handoff_pop(w->h, &other))
            child_destroy(&other, &w->bad);
        if ((r >> 24) % 2 == 0)
            parent_use(w->p, &rng, &w->bad);
    }
    return NULL;
}

/* Runs the workers over p; each child is destroyed by its thread or by
 * another, or (keep) left alive in w[i].kept. */
static void run_workers(worker *w, const parent *p, handoff *h, bool keep, size_t iterations)
{
    static pthread_barrier_t start;
    assert_int_equal(pthread_barrier_init(&start, NULL, THREADS), 0);
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){.start = &start,
                        .p = p,
                        .h = h,
                        .seed = 0x5eed0000u + (uint64_t)i * 7919u + (uint64_t)p->kind * 131u,
                        .iterations = iterations,
                        .keep = keep};
        assert_int_equal(pthread_create(&w[i].t, NULL, churn, &w[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        assert_int_equal(pthread_join(w[i].t, NULL), 0);
        assert_int_equal(w[i].bad, 0);
    }
    pthread_barrier_destroy(&start);
}

static size_t count_children(const mr_node *n)
{
    size_t k = 0;
    for (const mr_node *c = mr_node_first_child(n); c != NULL; c = mr_node_next_sibling(c)) {
        if (mr_node_parent(c) != n)
            fail_msg("child %zu of %p names %p as its parent", k, (const void *)n, (const void *)mr_node_parent(c));
        k++;
    }
    return k;
}

/* ---- the tests ---- */

static void churn_under(mrt_upstream *u, int kind)
{
    locked_upstream lu;
    lu_init(&lu, u);
    atomic_store(&registered, 0);
    atomic_store(&ran, 0);
    parent p = parent_make(kind, &lu);
    size_t before = count_children(p.node);
    handoff h = {.n = 0};
    pthread_mutex_init(&h.mu, NULL);
    worker w[THREADS];
    run_workers(w, &p, &h, false, scaled(600));
    child c;
    long bad = 0;
    while (handoff_pop(&h, &c))
        child_destroy(&c, &bad);
    assert_int_equal(bad, 0);
    pthread_mutex_destroy(&h.mu);
    assert_int_equal(count_children(p.node), before);
    if (kind != P_SHARED && kind != P_SHARED_OWN_UPSTREAM)
        assert_null(mr_node_first_child(p.node));
    assert_true(parent_check(&p));
    assert_int_equal(atomic_load(&ran), atomic_load(&registered));
    size_t made = (size_t)THREADS * scaled(600);
    printf("# %s: %zu children made and destroyed by %d threads, %ld cleanups, %zu upstream allocations\n",
           parent_name[kind], made, THREADS, atomic_load(&registered), u->allocations);
    if (kind == P_POOLS || kind == P_OBJPOOL || kind == P_BLOCKS)
        assert_true(u->allocations < 2 * made); /* each new child takes a header and a block: some were kept */
    parent_destroy(&p);
    lu_fini(&lu);
    mrt_assert_balanced(u);
}

static void test_churn_pools(void **state) { churn_under(*state, P_POOLS); }
static void test_churn_pools_view(void **state) { churn_under(*state, P_POOLS_VIEW); }
static void test_churn_objpool(void **state) { churn_under(*state, P_OBJPOOL); }
static void test_churn_blocks(void **state) { churn_under(*state, P_BLOCKS); }
static void test_churn_shared(void **state) { churn_under(*state, P_SHARED); }
static void test_churn_shared_own_upstream(void **state) { churn_under(*state, P_SHARED_OWN_UPSTREAM); }

static void cascade_under(mrt_upstream *u, int kind)
{
    locked_upstream lu;
    lu_init(&lu, u);
    atomic_store(&registered, 0);
    atomic_store(&ran, 0);
    parent p = parent_make(kind, &lu);
    worker w[THREADS];
    run_workers(w, &p, NULL, true, scaled(200));
    size_t alive = 0;
    for (int i = 0; i < THREADS; i++) {
        alive += w[i].nkept;
        for (size_t k = 0; k < w[i].nkept; k++) {
            assert_ptr_equal(mr_node_parent(mr_arena_node(w[i].kept[k].a)), p.node);
            assert_true(child_ok(&w[i].kept[k]));
            assert_true(mr_arena_check(w[i].kept[k].a));
        }
    }
    assert_true(alive > 0);
    assert_int_equal(count_children(p.node), alive);
    /* the report: the parent and its subtree (grandchildren included) */
    size_t nodes = 1 + alive;
    for (int i = 0; i < THREADS; i++)
        for (size_t k = 0; k < w[i].nkept; k++)
            nodes += count_children(mr_arena_node(w[i].kept[k].a));
    FILE *devnull = fopen("/dev/null", "w");
    assert_non_null(devnull);
    assert_int_equal(mr_report(p.node, devnull, &(mr_report_options){.max_children = 1000}), nodes);
    fclose(devnull);
    long pending = atomic_load(&registered) - atomic_load(&ran);
    assert_true(pending >= 0);
    /* the parent dies with every child still alive */
    parent_destroy(&p);
    assert_int_equal(atomic_load(&ran), atomic_load(&registered));
    printf("# %s: %zu children left alive by %d threads, destroyed with the parent (%ld cleanups then)\n",
           parent_name[kind], alive, THREADS, pending);
    lu_fini(&lu);
    mrt_assert_balanced(u);
}

static void test_cascade_pools(void **state) { cascade_under(*state, P_POOLS); }
static void test_cascade_pools_view(void **state) { cascade_under(*state, P_POOLS_VIEW); }
static void test_cascade_objpool(void **state) { cascade_under(*state, P_OBJPOOL); }
static void test_cascade_blocks(void **state) { cascade_under(*state, P_BLOCKS); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        mrt_unit_test(test_churn_pools),     mrt_unit_test(test_churn_pools_view),
        mrt_unit_test(test_churn_objpool),   mrt_unit_test(test_churn_blocks),
        mrt_unit_test(test_churn_shared),    mrt_unit_test(test_churn_shared_own_upstream),
        mrt_unit_test(test_cascade_pools),   mrt_unit_test(test_cascade_pools_view),
        mrt_unit_test(test_cascade_objpool), mrt_unit_test(test_cascade_blocks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
