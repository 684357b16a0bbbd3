/* SPDX-License-Identifier: MIT */
/* tests/test_tree_model.c -- the tree of lifetimes (memres/tree.h) against a
 * model, at depth and width, and under failing upstreams.
 *
 * The model.  A reference tree in plain arrays: for every node ever made,
 * its kind, parent, whether it lives, what it has allocated (bytes in use,
 * the blocks it holds), its marks, and its items -- for an arena, its
 * children and cleanups in the order they were made (or moved) there, for
 * the others their children alone.  Every item carries a tick of one global
 * clock, so the rules of memres/tree.h read as the model's code:
 *   - destroy, reset or release of a node unwinds its items newest first,
 *     each child's subtree first (the model recurses; the library must not);
 *   - a rewind to a mark unwinds the items with a tick after the mark's;
 *   - a merge moves `from`'s items on top of `into`'s, with fresh ticks;
 *   - set_parent moves the node's item to its new parent with a fresh tick
 *     (to the parent it has already: nothing happens).
 * Seeded random operations (create a child of any kind under any live node
 * or as a root, allocate, free, defer, save, rewind, destroy, reset,
 * release, trim, merge, set_parent -- cycles included, which must fail with
 * EINVAL and report a misuse in debug builds -- and reports) drive the
 * library and the model together.  After each one the library must agree:
 * every live node's parent and children (newest first), its bytes in use,
 * the cleanups that ran and their order, the subtree sums of mr_node_stats,
 * the sum of the roots' held bytes, and that of every live node's own held
 * bytes, against the upstream's (every byte in exactly one node's books),
 * each allocator's own stats against its node's, and (every few
 * operations, and for the nodes an operation touched) each allocator's
 * walker; a report (text or JSON, with and without small limits) is read
 * back line by line against the model's tree.  Every allocator takes its
 * memory from one mrt_upstream, balanced at the end.  The seed is printed
 * (MEMRES_TEST_SEED replays it: the runs use seed, seed + 1, ...); a
 * mismatch prints the seed, the operation and the ones before it.
 *
 * Depth and width: a chain of 10,000 nested arenas (and one of arenas and
 * object pools alternating) destroyed from the root in a thread with a
 * 64 KiB stack; a root with 100,000 children; the reports of both, with and
 * without limits, checked for the nodes they write.
 *
 * Directed tests: kept children (the per-request child costs no upstream
 * call once warm; two upstreams kept apart); cleanups that act on the tree
 * while a cascade runs (what is allowed works, what is misuse is refused
 * and reported); children over their parent's resource view (counted once,
 * destroyed before the memory they stand on).
 *
 * Fault sweeps: a small tree (an arena with child arenas, pools, object
 * pools, a block pool and a thread-safe pool under it, grandchildren under
 * those) built, used, pruned, reset and rebuilt while the Nth upstream
 * request fails (or every one from the Nth): a failed create returns NULL
 * with ENOMEM and leaves its parent exactly as it was (children, stats),
 * every cleanup runs once, nothing leaks.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"

/* ======================================================================
 * the cleanup log
 * ====================================================================== */

static int *ran;
static size_t nran, ran_cap;

/* A cleanup: appends its id to the log.  May run in a thread of its own
 * (the deep chain): no cmocka. */
static void on_cleanup(void *arg)
{
    if (nran == ran_cap) {
        size_t cap = ran_cap != 0 ? ran_cap * 2 : 1024;
        int *t = realloc(ran, cap * sizeof *t);
        if (t == NULL)
            abort();
        ran = t;
        ran_cap = cap;
    }
    ran[nran++] = (int)(intptr_t)arg;
}

static void log_free(void)
{
    free(ran);
    ran = NULL;
    nran = ran_cap = 0;
}

/* What one cleanup record costs the arena in use (it lives in the arena). */
static size_t cleanup_bytes(void)
{
    static size_t bytes;
    if (bytes == 0) {
        mr_arena *a = mr_arena_create(&(mr_arena_options){.upstream = mr_malloc_resource()});
        assert_non_null(a);
        mr_stats before, after;
        assert_non_null(mr_arena_alloc(a, 16));
        mr_arena_stats(a, &before);
        assert_int_equal(mr_arena_defer(a, on_cleanup, NULL), 0);
        mr_arena_stats(a, &after);
        bytes = after.in_use - before.in_use;
        mr_arena_destroy(a);
        assert_int_equal(nran, 1);
        nran = 0;
        assert_true(bytes >= 3 * sizeof(void *));
    }
    return bytes;
}

static size_t round16(size_t n) { return (n + 15) & ~(size_t)15; }

/* ======================================================================
 * the model
 * ====================================================================== */

enum kind { K_ARENA, K_OBJPOOL, K_POOLS, K_BLOCKS, K_KINDS };
static const char *const kind_name[K_KINDS] = {"arena", "objpool", "pools", "blocks"};

#define MAX_LIVE 40 /* live nodes at once */
#define MAX_MARKS 6 /* marks kept per arena */
#define TRACE 24    /* operations shown when one goes wrong */
#define BLOCK 4096  /* the block pools' block size */

typedef struct item {
    uint64_t tick; /* when it was made, or moved here */
    int child;     /* a node id, or -1 */
    int cleanup;   /* a cleanup id (child -1) */
} item;

typedef struct alloc {
    void *p;
    size_t size, align;
} alloc;

typedef struct mmark {
    mr_arena_mark m;
    uint64_t tick;
    size_t in_use;
} mmark;

typedef struct mnode {
    int kind;
    bool alive, ts;
    int parent; /* -1: a root */
    void *obj;  /* the mr_arena, mr_objpool, mr_pools or mr_blocks */
    mr_node *node;
    const char *name;
    item *items; /* oldest first */
    size_t nitems, items_cap;
    alloc *allocs; /* objpool, pools, blocks: what is live */
    size_t nallocs, allocs_cap;
    size_t in_use, obj_size;
    mmark marks[MAX_MARKS]; /* in the order saved, all valid */
    size_t nmarks;
} mnode;

typedef struct model {
    mrt_upstream *u;
    uint64_t seed, rng, tick;
    mnode *nodes;
    size_t nnodes, nodes_cap;
    int live[MAX_LIVE];
    size_t nlive;
    int next_cleanup;
    int *expect; /* the cleanups the current operation must run, in order */
    size_t nexpect, expect_cap;
    int violations; /* misuse reports expected (debug builds) */
    mrt_violations *v;
    size_t op;
    char trace[TRACE][160];
    bool touched[MAX_LIVE]; /* by index in live[]: walk these after the op */
    /* what the run exercised (printed) */
    int again; /* a parent whose child died just now, or -1 */
    size_t reused, direct, cascaded, rewound_items, merged_items, moved, cycles;
} model;

static const char *const names[] = {NULL, "request", "connection \"7\"", "cache\tline", "a"};

static size_t rnd(model *m, size_t n) { return (size_t)(mrt_rand(&m->rng) % n); }

static mnode *nd(model *m, int id) { return &m->nodes[id]; }

static void *grow_to(void *tab, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return tab;
    size_t ncap = *cap != 0 ? *cap * 2 : 16;
    void *t = realloc(tab, ncap * elem);
    if (t == NULL)
        fail_msg("out of memory in the model");
    *cap = ncap;
    return t;
}

static void trace(model *m, const char *fmt, ...) MR_PRINTF(2, 3);
static void trace(model *m, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->trace[m->op % TRACE], sizeof m->trace[0], fmt, ap);
    va_end(ap);
}

/* Prints where the run is, and the operations that led there. */
static void dump(const model *m)
{
    print_error("tree model: seed %" PRIu64 " (MEMRES_TEST_SEED=%" PRIu64 " replays it as the first run), "
                "operation %zu; the last operations:\n",
                m->seed, m->seed, m->op);
    size_t first = m->op >= TRACE - 1 ? m->op - (TRACE - 1) : 0;
    for (size_t i = first; i <= m->op; i++)
        print_error("  op %zu: %s\n", i, m->trace[i % TRACE]);
}

#define CHECKM(m, cond, ...)    \
  do {                          \
    if (!(cond)) {              \
      dump(m);                  \
      print_error(__VA_ARGS__); \
      print_error("\n");        \
      fail_msg("%s", #cond);    \
    }                           \
  } while (0)

/* The model id of a library node (-1: none live). */
static int id_of(model *m, const mr_node *n)
{
    for (size_t i = 0; i < m->nlive; i++)
        if (nd(m, m->live[i])->node == n)
            return m->live[i];
    return -1;
}

static void live_touch(model *m, int id)
{
    for (size_t i = 0; i < m->nlive; i++)
        if (m->live[i] == id)
            m->touched[i] = true;
}

static void live_remove(model *m, int id)
{
    for (size_t i = 0; i < m->nlive; i++)
        if (m->live[i] == id) {
            m->live[i] = m->live[--m->nlive];
            m->touched[i] = m->touched[m->nlive];
            m->touched[m->nlive] = false;
            return;
        }
    fail_msg("model: node %d is not live", id);
}

static void push_item(model *m, int id, int child, int cleanup)
{
    mnode *n = nd(m, id);
    n->items = grow_to(n->items, &n->items_cap, n->nitems, sizeof *n->items);
    n->items[n->nitems++] = (item){++m->tick, child, cleanup};
}

static void remove_child_item(model *m, int id, int child)
{
    mnode *n = nd(m, id);
    for (size_t i = 0; i < n->nitems; i++)
        if (n->items[i].child == child) {
            memmove(&n->items[i], &n->items[i + 1], (n->nitems - i - 1) * sizeof *n->items);
            n->nitems--;
            return;
        }
    fail_msg("model: node %d is no child of %d", child, id);
}

static void push_alloc(mnode *n, void *p, size_t size, size_t align)
{
    n->allocs = grow_to(n->allocs, &n->allocs_cap, n->nallocs, sizeof *n->allocs);
    n->allocs[n->nallocs++] = (alloc){p, size, align};
}

static void expect_cleanup(model *m, int cleanup)
{
    m->expect = grow_to(m->expect, &m->expect_cap, m->nexpect, sizeof *m->expect);
    m->expect[m->nexpect++] = cleanup;
}

static bool is_below(model *m, int id, int top)
{
    for (; id >= 0; id = nd(m, id)->parent)
        if (id == top)
            return true;
    return false;
}

static size_t subtree_count(model *m, int id)
{
    size_t n = 1;
    for (size_t i = 0; i < nd(m, id)->nitems; i++)
        if (nd(m, id)->items[i].child >= 0)
            n += subtree_count(m, nd(m, id)->items[i].child);
    return n;
}

static size_t subtree_in_use(model *m, int id)
{
    size_t n = nd(m, id)->in_use;
    for (size_t i = 0; i < nd(m, id)->nitems; i++)
        if (nd(m, id)->items[i].child >= 0)
            n += subtree_in_use(m, nd(m, id)->items[i].child);
    return n;
}

/* ---- the library side of a node ---- */

static bool walk(const mnode *n)
{
    switch (n->kind) {
    case K_ARENA:
        return mr_arena_check(n->obj);
    case K_OBJPOOL:
        return mr_objpool_check(n->obj);
    case K_POOLS:
        return mr_pools_check(n->obj);
    default:
        return mr_blocks_check(n->obj);
    }
}

/* A block pool must have every block back before it dies: gives back the
 * blocks of every block pool in id's subtree. */
static void give_back_subtree(model *m, int id)
{
    mnode *n = nd(m, id);
    if (n->kind == K_BLOCKS) {
        for (size_t i = 0; i < n->nallocs; i++)
            mr_blocks_put(n->obj, n->allocs[i].p);
        n->nallocs = 0;
        n->in_use = 0;
    }
    for (size_t i = 0; i < n->nitems; i++)
        if (n->items[i].child >= 0)
            give_back_subtree(m, n->items[i].child);
}

/* The same for the items of id made after `after`. */
static void give_back_after(model *m, int id, uint64_t after)
{
    mnode *n = nd(m, id);
    for (size_t i = 0; i < n->nitems; i++)
        if (n->items[i].tick > after && n->items[i].child >= 0)
            give_back_subtree(m, n->items[i].child);
}

/* ---- the model's cascade ---- */

static void model_kill(model *m, int id);

/* Unwinds id's items made after `after`, newest first: what the library's
 * cascade must do. */
static void model_unwind(model *m, int id, uint64_t after)
{
    while (nd(m, id)->nitems > 0 && nd(m, id)->items[nd(m, id)->nitems - 1].tick > after) {
        item it = nd(m, id)->items[--nd(m, id)->nitems];
        if (it.child >= 0)
            model_kill(m, it.child);
        else
            expect_cleanup(m, it.cleanup);
    }
}

/* id dies (its item already gone from its parent). */
static void model_kill(model *m, int id)
{
    m->cascaded++;
    model_unwind(m, id, 0);
    mnode *n = nd(m, id);
    n->alive = false;
    n->nallocs = 0;
    n->in_use = 0;
    n->nmarks = 0;
    live_remove(m, id);
}

/* ======================================================================
 * checking
 * ====================================================================== */

static void check_log(model *m)
{
    bool same = nran == m->nexpect;
    for (size_t i = 0; same && i < nran; i++)
        same = ran[i] == m->expect[i];
    if (!same) {
        dump(m);
        print_error("cleanups that ran (%zu):", nran);
        for (size_t i = 0; i < nran && i < 40; i++)
            print_error(" %d", ran[i]);
        print_error("\nthe model expected (%zu):", m->nexpect);
        for (size_t i = 0; i < m->nexpect && i < 40; i++)
            print_error(" %d", m->expect[i]);
        print_error("\n");
        fail_msg("the cleanups ran in another order than the model's");
    }
    nran = 0;
    m->nexpect = 0;
}

static void check_node(model *m, int id, bool deep)
{
    mnode *n = nd(m, id);
    const mr_node *want = n->parent >= 0 ? nd(m, n->parent)->node : NULL;
    const mr_node *got = mr_node_parent(n->node);
    CHECKM(m, got == want, "node %d: mr_node_parent is node %d (%p), the model's parent is %d", id, id_of(m, got),
           (const void *)got, n->parent);
    const mr_node *c = mr_node_first_child(n->node);
    size_t k = 0;
    for (size_t i = n->nitems; i-- > 0;) {
        if (n->items[i].child < 0)
            continue;
        const mnode *ch = nd(m, n->items[i].child);
        CHECKM(m, c == ch->node, "node %d: child %zu (newest first) is node %d (%p), the model says node %d", id, k,
               c != NULL ? id_of(m, c) : -1, (const void *)c, n->items[i].child);
        c = mr_node_next_sibling(c);
        k++;
    }
    CHECKM(m, c == NULL, "node %d: more children than the model's %zu (next: node %d)", id, k, id_of(m, c));
    mr_stats s, own;
    mr_node_stats(n->node, false, &s);
    CHECKM(m, s.in_use == n->in_use, "node %d (%s): in use %zu, the model says %zu", id, kind_name[n->kind], s.in_use,
           n->in_use);
    /* the allocator's own stats hold what its node holds (the children it
     * keeps included); a block pool's header is in its node's figures only
     * (memres/blocks.h) */
    size_t header = 0;
    switch (n->kind) {
    case K_ARENA: mr_arena_stats(n->obj, &own); break;
    case K_OBJPOOL: mr_objpool_stats(n->obj, &own); break;
    case K_POOLS: mr_pools_stats(n->obj, &own); break;
    default: mr_blocks_stats(n->obj, &own); header = s.held - own.held; break;
    }
    CHECKM(m, own.held + header == s.held && own.peak_held >= own.held,
           "node %d (%s): its stats hold %zu (peak %zu), its node %zu", id, kind_name[n->kind], own.held,
           own.peak_held, s.held);
    if (deep)
        CHECKM(m, walk(n), "node %d (%s): its walker failed", id, kind_name[n->kind]);
}

static void check_all(model *m, bool deep)
{
    check_log(m);
    size_t held = 0, own = 0;
    for (size_t i = 0; i < m->nlive; i++) {
        int id = m->live[i];
        check_node(m, id, deep || m->touched[i]);
        mr_stats o;
        mr_node_stats(nd(m, id)->node, false, &o);
        own += o.held;
        m->touched[i] = false;
        if (nd(m, id)->parent < 0) {
            mr_stats s;
            mr_node_stats(nd(m, id)->node, true, &s);
            size_t want = subtree_in_use(m, id);
            CHECKM(m, s.in_use == want, "root %d: mr_node_stats(recurse) in use %zu, the model's subtree %zu", id,
                   s.in_use, want);
            held += s.held;
        }
    }
    CHECKM(m, held == m->u->bytes, "the roots hold %zu bytes (mr_node_stats), the upstream has %zu out", held,
           m->u->bytes);
    CHECKM(m, own == m->u->bytes, "the live nodes hold %zu bytes (mr_node_stats, each alone), the upstream has %zu out",
           own, m->u->bytes);
    mrt_assert_reported(m->v, m->violations);
}

/* ======================================================================
 * operations
 * ====================================================================== */

static int pick_live(model *m) { return m->nlive != 0 ? m->live[rnd(m, m->nlive)] : -1; }

static int pick_arena(model *m)
{
    int ids[MAX_LIVE];
    size_t n = 0;
    for (size_t i = 0; i < m->nlive; i++)
        if (nd(m, m->live[i])->kind == K_ARENA)
            ids[n++] = m->live[i];
    return n != 0 ? ids[rnd(m, n)] : -1;
}

/* A new node: under `again` (a parent whose child just died: a child
 * arena made as the common one is, which the parent may have kept), else
 * of any kind under any live node, or a root. */
static void op_create(model *m, int again)
{
    int parent = again >= 0 ? again : m->nlive == 0 || rnd(m, 6) == 0 ? -1 : pick_live(m);
    mr_node *pn = parent >= 0 ? nd(m, parent)->node : NULL;
    size_t r = again >= 0 ? 0 : rnd(m, 100);
    int kind = r < 55 ? K_ARENA : r < 70 ? K_OBJPOOL : r < 88 ? K_POOLS : K_BLOCKS;
    mr_resource *up = parent < 0 || (again < 0 && rnd(m, 4) == 0) ? &m->u->base : NULL;
    const char *name = names[rnd(m, sizeof names / sizeof names[0])];
    bool ts = false;
    void *obj = NULL;
    mr_node *node = NULL;
    size_t obj_size = 0;
    switch (kind) {
    case K_ARENA: {
        static const size_t sizes[] = {0, 1024, 256};
        size_t bs = again >= 0 || rnd(m, 3) != 0 ? 0 : sizes[rnd(m, 3)]; /* mostly the common one */
        trace(m, "create arena (block %zu, upstream %s) under %d", bs, up ? "u" : "NULL", parent);
        size_t calls = m->u->calls;
        mr_arena *a =
            mr_arena_create(&(mr_arena_options){.upstream = up, .block_size = bs, .name = name, .parent = pn});
        assert_non_null(a);
        m->reused += m->u->calls == calls; /* a child its parent kept */
        obj = a;
        node = mr_arena_node(a);
        assert_ptr_equal(mr_node_of(mr_arena_resource(a)), node);
        break;
    }
    case K_OBJPOOL: {
        static const size_t sizes[] = {8, 24, 100};
        ts = rnd(m, 4) == 0;
        size_t size = sizes[rnd(m, 3)];
        trace(m, "create objpool (%zu bytes%s) under %d", size, ts ? ", thread-safe" : "", parent);
        mr_objpool *p = mr_objpool_create(
            size, 8,
            &(mr_objpool_options){
                .upstream = up, .objects_per_block = 16, .thread_safe = ts, .name = name, .parent = pn});
        assert_non_null(p);
        obj = p;
        node = mr_objpool_node(p);
        obj_size = mr_objpool_object_size(p);
        assert_ptr_equal(mr_node_of(mr_objpool_resource(p)), node);
        break;
    }
    case K_POOLS: {
        ts = rnd(m, 4) == 0;
        trace(m, "create pools%s under %d", ts ? " (thread-safe)" : "", parent);
        mr_pools *p = mr_pools_create(&(mr_pools_options){.upstream = up,
                                                          .max_blocks_per_chunk = 16,
                                                          .largest_required_pool_block = 4096,
                                                          .thread_safe = ts,
                                                          .name = name,
                                                          .parent = pn});
        assert_non_null(p);
        obj = p;
        node = mr_pools_node(p);
        assert_ptr_equal(mr_node_of(mr_pools_resource(p)), node);
        break;
    }
    default: {
        trace(m, "create blocks under %d", parent);
        mr_blocks *b = mr_blocks_create(&(mr_blocks_options){
            .upstream = up, .block_size = BLOCK, .max_free = 2 * BLOCK, .name = name, .parent = pn});
        assert_non_null(b);
        obj = b;
        node = mr_blocks_node(b);
        assert_ptr_equal(mr_node_of(mr_blocks_resource(b)), node);
        break;
    }
    }
    assert_string_equal(mr_node_kind(node), kind_name[kind]);
    if (name != NULL)
        assert_ptr_equal(mr_node_name(node), name);
    else
        assert_string_equal(mr_node_name(node), kind_name[kind]);
    m->nodes = grow_to(m->nodes, &m->nodes_cap, m->nnodes, sizeof *m->nodes);
    int id = (int)m->nnodes++;
    m->nodes[id] = (mnode){.kind = kind,
                           .alive = true,
                           .ts = ts,
                           .parent = parent,
                           .obj = obj,
                           .node = node,
                           .name = name,
                           .obj_size = obj_size};
    m->touched[m->nlive] = true;
    m->live[m->nlive++] = id;
    if (parent >= 0)
        push_item(m, parent, id, -1);
    snprintf(m->trace[m->op % TRACE] + strlen(m->trace[m->op % TRACE]),
             sizeof m->trace[0] - strlen(m->trace[m->op % TRACE]), ": node %d", id);
}

static void op_alloc(model *m, int id)
{
    mnode *n = nd(m, id);
    live_touch(m, id);
    switch (n->kind) {
    case K_ARENA: {
        size_t r = rnd(m, 10);
        if (r < 2) {
            static const char text[] = "the quick brown fox jumps over the lazy dog";
            size_t len = rnd(m, sizeof text);
            trace(m, "arena %d: strndup %zu", id, len);
            mr_stats before, after;
            mr_arena_stats(n->obj, &before);
            char *s = mr_arena_strndup(n->obj, text, len);
            assert_non_null(s);
            assert_int_equal(strlen(s), len);
            /* a string costs its length; the first one in a fresh block
             * is placed at an 8-byte boundary (src/strings.c) */
            mr_arena_stats(n->obj, &after);
            size_t cost = after.in_use - before.in_use;
            CHECKM(m, cost == len + 1 || cost == ((len + 1 + 7) & ~(size_t)7),
                   "arena %d: a string of %zu bytes cost %zu bytes in use", id, len + 1, cost);
            n->in_use += cost;
        } else {
            size_t size = r == 9 ? 5000 + rnd(m, 20000) : rnd(m, 700);
            trace(m, "arena %d: alloc %zu", id, size);
            unsigned char *p = mr_arena_alloc(n->obj, size);
            assert_non_null(p);
            memset(p, 0x5a, size);
            n->in_use += round16(size);
        }
        break;
    }
    case K_OBJPOOL: {
        trace(m, "objpool %d: alloc", id);
        void *p = mr_objpool_alloc(n->obj);
        assert_non_null(p);
        memset(p, 0x5a, n->obj_size);
        push_alloc(n, p, n->obj_size, 8);
        n->in_use += n->obj_size;
        break;
    }
    case K_POOLS: {
        static const size_t aligns[] = {8, 16, 64};
        size_t size = rnd(m, 10) == 0 ? 5000 + rnd(m, 3000) : 1 + rnd(m, 1500);
        size_t align = aligns[rnd(m, 3)];
        trace(m, "pools %d: alloc %zu, align %zu", id, size, align);
        void *p = mr_pools_alloc(n->obj, size, align);
        assert_non_null(p);
        memset(p, 0x5a, size);
        push_alloc(n, p, size, align);
        n->in_use += mr_pools_block_size(n->obj, size, align);
        break;
    }
    default: {
        trace(m, "blocks %d: get", id);
        void *p = mr_blocks_get(n->obj);
        assert_non_null(p);
        memset(p, 0x5a, BLOCK);
        push_alloc(n, p, BLOCK, BLOCK);
        n->in_use += BLOCK;
        break;
    }
    }
}

static void op_free(model *m, int id)
{
    mnode *n = nd(m, id);
    if (n->nallocs == 0) {
        op_alloc(m, id);
        return;
    }
    live_touch(m, id);
    size_t k = rnd(m, n->nallocs);
    alloc a = n->allocs[k];
    n->allocs[k] = n->allocs[--n->nallocs];
    trace(m, "%s %d: free %zu", kind_name[n->kind], id, a.size);
    switch (n->kind) {
    case K_OBJPOOL:
        mr_objpool_free(n->obj, a.p);
        n->in_use -= n->obj_size;
        break;
    case K_POOLS:
        n->in_use -= mr_pools_block_size(n->obj, a.size, a.align);
        mr_pools_free(n->obj, a.p, a.size, a.align);
        break;
    default:
        mr_blocks_put(n->obj, a.p);
        n->in_use -= BLOCK;
        break;
    }
}

static void op_defer(model *m, int id)
{
    mnode *n = nd(m, id);
    int cid = ++m->next_cleanup;
    trace(m, "arena %d: defer cleanup %d", id, cid);
    live_touch(m, id);
    assert_int_equal(mr_arena_defer(n->obj, on_cleanup, (void *)(intptr_t)cid), 0);
    push_item(m, id, -1, cid);
    n->in_use += cleanup_bytes();
}

static void op_save(model *m, int id)
{
    mnode *n = nd(m, id);
    if (n->nmarks == MAX_MARKS) { /* forget the oldest */
        memmove(&n->marks[0], &n->marks[1], (MAX_MARKS - 1) * sizeof n->marks[0]);
        n->nmarks--;
    }
    trace(m, "arena %d: save mark %zu (in use %zu)", id, n->nmarks, n->in_use);
    n->marks[n->nmarks++] = (mmark){mr_arena_save(n->obj), m->tick, n->in_use};
}

static void op_rewind(model *m, int id)
{
    mnode *n = nd(m, id);
    if (n->nmarks == 0) {
        op_save(m, id);
        return;
    }
    size_t k = rnd(m, n->nmarks);
    mmark mk = n->marks[k];
    trace(m, "arena %d: rewind to mark %zu (tick %" PRIu64 ", in use %zu)", id, k, mk.tick, mk.in_use);
    live_touch(m, id);
    give_back_after(m, id, mk.tick);
    size_t items = nd(m, id)->nitems;
    model_unwind(m, id, mk.tick);
    m->rewound_items += items - nd(m, id)->nitems;
    n = nd(m, id);
    n->in_use = mk.in_use;
    n->nmarks = k + 1; /* the marks saved after it lie after its position */
    mr_arena_rewind(n->obj, mk.m);
}

static void op_destroy(model *m, int id)
{
    mnode *n = nd(m, id);
    bool generic = rnd(m, 3) == 0;
    trace(m, "destroy %s %d (%zu nodes)%s", kind_name[n->kind], id, subtree_count(m, id),
          generic ? " with mr_node_destroy" : "");
    give_back_subtree(m, id);
    m->direct++;
    if (n->parent >= 0 && rnd(m, 2) == 0)
        m->again = n->parent;
    if (n->parent >= 0) {
        live_touch(m, n->parent);
        remove_child_item(m, n->parent, id);
    }
    void *obj = n->obj;
    mr_node *node = n->node;
    int kind = n->kind;
    model_kill(m, id);
    if (generic) {
        mr_node_destroy(node);
        return;
    }
    switch (kind) {
    case K_ARENA:
        mr_arena_destroy(obj);
        break;
    case K_OBJPOOL:
        mr_objpool_destroy(obj);
        break;
    case K_POOLS:
        mr_pools_destroy(obj);
        break;
    default:
        mr_blocks_destroy(obj);
        break;
    }
}

static void op_reset(model *m, int id)
{
    mnode *n = nd(m, id);
    bool release = rnd(m, 2) == 0;
    live_touch(m, id);
    if (n->kind == K_BLOCKS) { /* trim gives back the kept children only */
        trace(m, "blocks %d: trim", id);
        (void)mr_blocks_trim(n->obj);
        return;
    }
    trace(m, "%s %d: %s (%zu nodes)", kind_name[n->kind], id, release ? "release" : "reset", subtree_count(m, id));
    give_back_after(m, id, 0);
    model_unwind(m, id, 0);
    n = nd(m, id);
    n->in_use = 0;
    n->nallocs = 0;
    n->nmarks = 0;
    switch (n->kind) {
    case K_ARENA:
        release ? mr_arena_release(n->obj) : mr_arena_reset(n->obj);
        break;
    case K_OBJPOOL:
        release ? mr_objpool_release(n->obj) : mr_objpool_reset(n->obj);
        break;
    default:
        release ? mr_pools_release(n->obj) : mr_pools_reset(n->obj);
        break;
    }
}

static void op_merge(model *m)
{
    int into = pick_arena(m), from = rnd(m, 10) == 0 ? into : pick_arena(m);
    if (into < 0)
        return;
    live_touch(m, into);
    live_touch(m, from);
    mnode *a = nd(m, into), *b = nd(m, from);
    bool ok = into != from && !is_below(m, into, from);
    trace(m, "merge arena %d into arena %d (%zu items, in use %zu)%s", from, into, b->nitems, b->in_use,
          ok ? "" : ": must fail");
    errno = 0;
    int rc = mr_arena_merge(a->obj, b->obj);
    if (!ok) {
        CHECKM(m, rc == -1 && errno == EINVAL, "merge of %d into %d: %d, errno %d; the model expected EINVAL", from,
               into, rc, errno);
        return;
    }
    CHECKM(m, rc == 0, "merge of %d into %d: %d, errno %d", from, into, rc, errno);
    m->merged_items += b->nitems;
    for (size_t i = 0; i < b->nitems; i++) {
        item it = b->items[i];
        push_item(m, into, it.child, it.cleanup);
        a = nd(m, into);
        b = nd(m, from);
        if (it.child >= 0)
            nd(m, it.child)->parent = into;
    }
    b->nitems = 0;
    a->in_use += b->in_use;
    b->in_use = 0;
    b->nmarks = 0;
}

static void op_set_parent(model *m, int id)
{
    mnode *n = nd(m, id);
    size_t r = rnd(m, 8);
    int target = r == 0 ? -1 : pick_live(m);
    if (r == 1) { /* a cycle: id itself or a node below it */
        int below[MAX_LIVE];
        size_t nb = 0;
        for (size_t i = 0; i < m->nlive; i++)
            if (is_below(m, m->live[i], id))
                below[nb++] = m->live[i];
        target = below[rnd(m, nb)];
    }
    bool cycle = target >= 0 && is_below(m, target, id);
    trace(m, "set_parent %s %d under %d%s", kind_name[n->kind], id, target, cycle ? ": a cycle, must fail" : "");
    live_touch(m, id);
    errno = 0;
    int rc = mr_node_set_parent(n->node, target >= 0 ? nd(m, target)->node : NULL);
    if (cycle) {
        CHECKM(m, rc == -1 && errno == EINVAL, "set_parent %d under %d: %d, errno %d; the model expected EINVAL", id,
               target, rc, errno);
        if (MR_DEBUG >= 1)
            m->violations++;
        m->cycles++;
        return;
    }
    CHECKM(m, rc == 0, "set_parent %d under %d: %d, errno %d", id, target, rc, errno);
    if (target == n->parent)
        return; /* where it is: nothing moves */
    if (n->parent >= 0) {
        live_touch(m, n->parent);
        remove_child_item(m, n->parent, id);
    }
    nd(m, id)->parent = target;
    m->moved++;
    if (target >= 0) {
        live_touch(m, target);
        push_item(m, target, id, -1);
    }
}

/* The name as a report shows it (src/tree_report.c): control characters as
 * spaces; in JSON, '"' and '\' escaped. */
static void shown(const char *name, bool json, char *out, size_t cap)
{
    size_t j = 0;
    for (size_t i = 0; name[i] != '\0' && j + 3 < cap; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c < 0x20 || c == 0x7f)
            out[j++] = ' ';
        else if (json && (c == '"' || c == '\\')) {
            out[j++] = '\\';
            out[j++] = (char)c;
        } else
            out[j++] = (char)c;
    }
    out[j] = '\0';
}

/* A line a report must write: a node's, or a "more" line summing the
 * subtrees of `contexts` children. */
typedef struct line_want {
    bool more;
    int id, level;      /* node lines: the node */
    size_t line_id;     /* its JSON id (lines are numbered from 1, "more" lines too) */
    size_t parent_line; /* the JSON id of the parent's line; 0: none (the root) */
    size_t contexts, held, used;
} line_want;

typedef struct report_want {
    line_want lines[2 * MAX_LIVE];
    size_t n, nodes;
    int max_depth;
    size_t max_children;
} report_want;

static size_t subtree_held(model *m, int id)
{
    mr_stats s;
    mr_node_stats(nd(m, id)->node, false, &s);
    size_t held = s.held;
    for (size_t i = 0; i < nd(m, id)->nitems; i++)
        if (nd(m, id)->items[i].child >= 0)
            held += subtree_held(m, nd(m, id)->items[i].child);
    return held;
}

static void want_more(model *m, report_want *w, const int *ch, size_t k, int level, size_t parent_line)
{
    line_want *l = &w->lines[w->n];
    *l = (line_want){.more = true, .level = level, .line_id = w->n + 1, .parent_line = parent_line, .contexts = k};
    for (size_t i = 0; i < k; i++) {
        l->held += subtree_held(m, ch[i]);
        l->used += subtree_in_use(m, ch[i]);
    }
    w->n++;
}

/* id's subtree as mr_report walks it (src/tree_report.c): pre-order, children
 * newest first, max_children shown under each node and the rest in one
 * "more" line, the children of a node at max_depth all in one. */
static void want_lines(model *m, report_want *w, int id, int level, size_t parent_line)
{
    const size_t mine = w->n + 1;
    mr_stats s;
    mr_node_stats(nd(m, id)->node, false, &s);
    w->lines[w->n++] = (line_want){.id = id,
                                   .level = level,
                                   .line_id = mine,
                                   .parent_line = parent_line,
                                   .held = s.held,
                                   .used = nd(m, id)->in_use};
    w->nodes++;
    int ch[MAX_LIVE];
    size_t k = 0;
    const mnode *x = nd(m, id);
    for (size_t i = x->nitems; i-- > 0;)
        if (x->items[i].child >= 0)
            ch[k++] = x->items[i].child;
    if (k == 0)
        return;
    if (level >= w->max_depth) {
        want_more(m, w, ch, k, level + 1, mine);
        return;
    }
    size_t shown_children = k < w->max_children ? k : w->max_children;
    for (size_t i = 0; i < shown_children; i++)
        want_lines(m, w, ch[i], level + 1, mine);
    if (k > shown_children)
        want_more(m, w, ch + shown_children, k - shown_children, level + 1, mine);
}

static size_t field(model *m, const char *line, const char *key)
{
    const char *at = strstr(line, key);
    size_t v = 0;
    CHECKM(m, at != NULL && sscanf(at + strlen(key), "%zu", &v) == 1, "report line without %s: %s", key, line);
    return v;
}

/* A report of a live node's subtree, sometimes with small limits, read
 * back line by line: every node line (pre-order, newest child first, at its
 * level, its parent's line id in JSON, its name, kind, bytes held and in
 * use), every "more" line (children summed, their bytes), the grand total
 * (the subtree's mr_node_stats). */
static void op_report(model *m)
{
    int id = pick_live(m);
    if (id < 0)
        return;
    bool json = rnd(m, 2) == 0, limits = rnd(m, 2) == 0;
    static report_want w;
    w.n = w.nodes = 0;
    w.max_depth = limits ? 1 + (int)rnd(m, 3) : 100;
    w.max_children = limits ? 1 + rnd(m, 3) : 100;
    want_lines(m, &w, id, 0, 0);
    trace(m, "report of %s %d (%zu nodes)%s, max_depth %d, max_children %zu", kind_name[nd(m, id)->kind], id,
          subtree_count(m, id), json ? " as JSON" : "", w.max_depth, w.max_children);
    FILE *f = tmpfile();
    assert_non_null(f);
    mr_report_options o = {.format = json ? MR_REPORT_JSON : MR_REPORT_TEXT,
                           .max_depth = limits ? w.max_depth : 0,
                           .max_children = limits ? (int)w.max_children : 0};
    size_t got = mr_report(nd(m, id)->node, f, json || limits || rnd(m, 2) ? &o : NULL);
    CHECKM(m, got == w.nodes, "report of %d: %zu nodes written, the model expected %zu", id, got, w.nodes);
    rewind(f);
    char line[1024], name[256], head[512];
    for (size_t i = 0; i < w.n; i++) {
        const line_want *l = &w.lines[i];
        CHECKM(m, fgets(line, sizeof line, f) != NULL, "report of %d: %zu lines, the model expected %zu", id, i, w.n);
        if (l->more && json)
            snprintf(head, sizeof head,
                     "{\"id\":%zu,\"parent\":%zu,\"level\":%d,\"name\":null,\"kind\":\"more\",\"contexts\":%zu,",
                     l->line_id, l->parent_line, l->level, l->contexts);
        else if (l->more)
            snprintf(head, sizeof head, "%*s%zu more child contexts containing ", 2 * l->level, "", l->contexts);
        else {
            const mnode *x = nd(m, l->id);
            const char *kind = kind_name[x->kind];
            shown(x->name != NULL ? x->name : kind, json, name, sizeof name);
            if (json && l->parent_line == 0)
                snprintf(head, sizeof head, "{\"id\":%zu,\"parent\":null,\"level\":%d,\"name\":\"%s\",\"kind\":\"%s\",",
                         l->line_id, l->level, name, kind);
            else if (json)
                snprintf(head, sizeof head, "{\"id\":%zu,\"parent\":%zu,\"level\":%d,\"name\":\"%s\",\"kind\":\"%s\",",
                         l->line_id, l->parent_line, l->level, name, kind);
            else
                snprintf(head, sizeof head, "%*s%s: %s ", 2 * l->level, "", name, kind);
        }
        CHECKM(m, strncmp(line, head, strlen(head)) == 0, "report line %zu: %s    the model expected %s...", i, line,
               head);
        size_t held, used;
        if (json) {
            held = field(m, line, "\"total_bytes\":");
            used = field(m, line, "\"used_bytes\":");
        } else {
            size_t blocks, freeb, chunks;
            CHECKM(m,
                   sscanf(line + strlen(head), "%zu total in %zu blocks; %zu free (%zu chunks); %zu used", &held,
                          &blocks, &freeb, &chunks, &used) == 5,
                   "report line %zu: %s", i, line);
            CHECKM(m, freeb == held - used, "report line %zu: free %zu, total %zu, used %zu", i, freeb, held, used);
        }
        CHECKM(m, held == l->held && used == l->used,
               "report line %zu: total %zu, used %zu; the model expected total %zu (stats), used %zu: %s", i, held,
               used, l->held, l->used, line);
    }
    mr_stats s;
    mr_node_stats(nd(m, id)->node, true, &s);
    CHECKM(m, s.in_use == subtree_in_use(m, id), "node %d: mr_node_stats(recurse) in use %zu, the model's %zu", id,
           s.in_use, subtree_in_use(m, id));
    CHECKM(m, fgets(line, sizeof line, f) != NULL, "report of %d: no total line", id);
    size_t total, used;
    if (json) {
        snprintf(head, sizeof head, "{\"kind\":\"total\",\"nodes\":%zu,", subtree_count(m, id));
        CHECKM(m, strncmp(line, head, strlen(head)) == 0, "report of %d: the last line is %s, expected %s...", id, line,
               head);
        total = field(m, line, "\"total_bytes\":");
        used = field(m, line, "\"used_bytes\":");
    } else {
        size_t blocks, freeb, chunks;
        CHECKM(m,
               sscanf(line, "Grand total: %zu bytes in %zu blocks; %zu free (%zu chunks); %zu used", &total, &blocks,
                      &freeb, &chunks, &used) == 5,
               "report of %d: the last line is %s", id, line);
    }
    CHECKM(m, total == s.held && used == s.in_use, "report of %d: grand total %zu, used %zu; mr_node_stats %zu, %zu",
           id, total, used, s.held, s.in_use);
    CHECKM(m, fgets(line, sizeof line, f) == NULL, "report of %d: a line after the total: %s", id, line);
    fclose(f);
}

static void step(model *m)
{
    int again = m->again;
    m->again = -1;
    if (again >= 0 && nd(m, again)->alive && m->nlive < MAX_LIVE) {
        op_create(m, again);
        return;
    }
    size_t r = rnd(m, 100);
    int id = pick_live(m);
    if (id < 0 || (r < 14 && m->nlive < MAX_LIVE)) {
        op_create(m, -1);
        return;
    }
    if (r < 36) {
        op_alloc(m, id);
    } else if (r < 42) {
        op_free(m, id);
    } else if (r < 56) {
        if ((id = pick_arena(m)) >= 0)
            op_defer(m, id);
        else
            op_alloc(m, pick_live(m));
    } else if (r < 63) {
        if ((id = pick_arena(m)) >= 0)
            op_save(m, id);
    } else if (r < 71) {
        if ((id = pick_arena(m)) >= 0)
            op_rewind(m, id);
    } else if (r < 79 || m->nlive >= MAX_LIVE) {
        op_destroy(m, id);
    } else if (r < 83) {
        op_reset(m, id);
    } else if (r < 89) {
        op_merge(m);
    } else if (r < 97) {
        op_set_parent(m, id);
    } else {
        op_report(m);
    }
}

static void model_free(model *m)
{
    for (size_t i = 0; i < m->nnodes; i++) {
        free(m->nodes[i].items);
        free(m->nodes[i].allocs);
    }
    free(m->nodes);
    free(m->expect);
}

static void run_model(mrt_upstream *u, uint64_t seed, size_t ops)
{
    static model m;
    static mrt_violations v;
    memset(&m, 0, sizeof m);
    memset(&v, 0, sizeof v);
    m.u = u;
    m.again = -1;
    m.seed = m.rng = seed;
    m.v = &v;
    nran = 0;
    (void)cleanup_bytes();
    mr_set_violation_handler(mrt_record_violation, &v);
    for (m.op = 0; m.op < ops; m.op++) {
        step(&m);
        check_all(&m, m.op % 16 == 0);
    }
    /* the end: every root destroyed, in random order */
    while (m.nlive > 0) {
        int id = pick_live(&m);
        while (nd(&m, id)->parent >= 0)
            id = nd(&m, id)->parent;
        m.op++;
        op_destroy(&m, id);
        check_all(&m, false);
    }
    mr_set_violation_handler(NULL, NULL);
    printf("# tree model, seed %" PRIu64 ": %zu ops, %zu nodes made (%zu arenas reused), %zu destroyed in a "
           "cascade, %d cleanups, %zu items unwound by rewinds, %zu moved by merges, %zu nodes moved, %zu cycles "
           "refused, %d misuse reports\n",
           seed, ops, m.nnodes, m.reused, m.cascaded - m.direct, m.next_cleanup, m.rewound_items, m.merged_items,
           m.moved, m.cycles, v.count);
    model_free(&m);
    mrt_assert_balanced(u);
}

static void test_model(void **state)
{
    mrt_upstream *u = *state;
    uint64_t seed = mrt_seed(20240611);
    size_t ops = mrt_scaled(17000); /* 6 seeds: over 100,000 operations */
    for (uint64_t k = 0; k < 6; k++) {
        mrt_upstream_restart(u);
        run_model(u, seed + k, ops);
    }
    log_free();
}

/* ======================================================================
 * depth and width
 * ====================================================================== */

enum { DEPTH = 10000, WIDTH = 100000, SMALL_STACK = 64 << 10 };

/* Runs fn(arg) in a thread with a 64 KiB stack. */
static void in_small_stack(void *(*fn)(void *), void *arg)
{
    pthread_attr_t attr;
    pthread_t t;
    assert_int_equal(pthread_attr_init(&attr), 0);
    assert_int_equal(pthread_attr_setstacksize(&attr, SMALL_STACK), 0);
    assert_int_equal(pthread_create(&t, &attr, fn, arg), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    pthread_attr_destroy(&attr);
}

static void *destroy_node(void *arg)
{
    mr_node_destroy(arg);
    return NULL;
}

/* Lines of f (rewound), and the last one in last. */
static size_t count_lines(FILE *f, char *last, size_t cap)
{
    rewind(f);
    size_t lines = 0;
    char line[1024];
    while (fgets(line, sizeof line, f) != NULL) {
        lines++;
        snprintf(last, cap, "%s", line);
    }
    return lines;
}

/* mr_report to a temporary file: checks it writes `nodes` node lines,
 * `more` summary lines and the grand total of root's whole subtree. */
static void check_report(const mr_node *root, const mr_report_options *o, size_t nodes, size_t more)
{
    FILE *f = tmpfile();
    assert_non_null(f);
    assert_int_equal(mr_report(root, f, o), nodes);
    char last[1024] = "";
    assert_int_equal(count_lines(f, last, sizeof last), nodes + more + 1);
    mr_stats s;
    mr_node_stats(root, true, &s);
    if (o != NULL && o->format == MR_REPORT_JSON) {
        char want[128];
        snprintf(want, sizeof want, "{\"kind\":\"total\",\"nodes\":");
        assert_memory_equal(last, want, strlen(want));
        size_t total = 0, used = 0;
        const char *t = strstr(last, "\"total_bytes\":"), *us = strstr(last, "\"used_bytes\":");
        assert_non_null(t);
        assert_non_null(us);
        assert_int_equal(sscanf(t, "\"total_bytes\":%zu", &total), 1);
        assert_int_equal(sscanf(us, "\"used_bytes\":%zu", &used), 1);
        assert_int_equal(total, s.held);
        assert_int_equal(used, s.in_use);
    } else {
        size_t total, blocks, freeb, chunks, used;
        assert_int_equal(sscanf(last, "Grand total: %zu bytes in %zu blocks; %zu free (%zu chunks); %zu used", &total,
                                &blocks, &freeb, &chunks, &used),
                         5);
        assert_int_equal(total, s.held);
        assert_int_equal(used, s.in_use);
        assert_int_equal(freeb, s.held - s.in_use);
    }
    fclose(f);
}

static void test_deep_chain(void **state)
{
    mrt_upstream *u = *state;
    nran = 0;
    mr_arena *root = mr_arena_create(&(mr_arena_options){.upstream = &u->base, .block_size = 256, .name = "chain"});
    assert_non_null(root);
    assert_int_equal(mr_arena_defer(root, on_cleanup, (void *)(intptr_t)0), 0);
    mr_arena *a = root, *mid = NULL;
    for (int d = 1; d < DEPTH; d++) {
        a = mr_arena_create(&(mr_arena_options){.block_size = 256, .parent = mr_arena_node(a)});
        assert_non_null(a);
        assert_int_equal(mr_arena_defer(a, on_cleanup, (void *)(intptr_t)d), 0);
        if (d == DEPTH - 10)
            mid = a;
    }
    mr_node *rn = mr_arena_node(root);
    mr_stats s;
    mr_node_stats(rn, true, &s);
    assert_int_equal(s.in_use, (size_t)DEPTH * cleanup_bytes());
    assert_int_equal(s.held, u->bytes);

    /* the reports: max_depth levels below the root, then one "more" line
     * for the rest of the chain */
    FILE *devnull = fopen("/dev/null", "w");
    assert_non_null(devnull);
    assert_int_equal(mr_report(rn, devnull, NULL), 101);
    assert_int_equal(mr_report(rn, devnull, &(mr_report_options){.max_depth = 50}), 51);
    assert_int_equal(mr_report(rn, devnull, &(mr_report_options){.max_depth = 5000}), MR_REPORT_MAX_DEPTH + 1);
    assert_int_equal(mr_report(rn, devnull, &(mr_report_options){.max_depth = 1000, .max_children = 1}), 1001);
    assert_int_equal(mr_report(rn, devnull, &(mr_report_options){.format = MR_REPORT_JSON, .max_depth = 10}), 11);
    assert_int_equal(mr_report(mr_arena_node(mid), devnull, NULL), 10);
    fclose(devnull);
    check_report(rn, &(mr_report_options){.max_depth = 50}, 51, 1);
    check_report(rn, &(mr_report_options){.format = MR_REPORT_JSON, .max_depth = 3, .max_children = 1}, 4, 1);
    check_report(mr_arena_node(mid), NULL, 10, 0);

    /* destroyed from the root in 64 KiB of stack: deepest first */
    in_small_stack(destroy_node, rn);
    assert_int_equal(nran, DEPTH);
    for (int i = 0; i < DEPTH; i++)
        if (ran[i] != DEPTH - 1 - i)
            fail_msg("cleanup %d ran as number %d, expected %d (deepest first)", ran[i], i, DEPTH - 1 - i);
    nran = 0;
    mrt_assert_balanced(u);
    log_free();
}

/* A chain of arenas and object pools alternating: the cascade through
 * nodes with and without cleanups, in a small stack. */
static void test_deep_mixed_chain(void **state)
{
    mrt_upstream *u = *state;
    nran = 0;
    mr_arena *root = mr_arena_create(&(mr_arena_options){.upstream = &u->base, .block_size = 256});
    assert_non_null(root);
    mr_node *n = mr_arena_node(root);
    int arenas = 1;
    assert_int_equal(mr_arena_defer(root, on_cleanup, (void *)(intptr_t)0), 0);
    for (int d = 1; d < DEPTH / 2; d++) {
        if (d % 2 != 0) {
            mr_objpool *p = mr_objpool_create(32, 8, &(mr_objpool_options){.objects_per_block = 4, .parent = n});
            assert_non_null(p);
            assert_non_null(mr_objpool_alloc(p));
            n = mr_objpool_node(p);
        } else {
            mr_arena *a = mr_arena_create(&(mr_arena_options){.block_size = 256, .parent = n});
            assert_non_null(a);
            assert_int_equal(mr_arena_defer(a, on_cleanup, (void *)(intptr_t)arenas++), 0);
            n = mr_arena_node(a);
        }
    }
    in_small_stack(destroy_node, mr_arena_node(root));
    assert_int_equal(nran, arenas);
    for (int i = 0; i < arenas; i++)
        assert_int_equal(ran[i], arenas - 1 - i);
    nran = 0;
    mrt_assert_balanced(u);
    log_free();
}

static void test_wide(void **state)
{
    mrt_upstream *u = *state;
    nran = 0;
    mr_arena *root = mr_arena_create(&(mr_arena_options){.upstream = &u->base, .name = "wide"});
    assert_non_null(root);
    mr_node *rn = mr_arena_node(root);
    mr_arena *first = NULL, *last = NULL;
    int cleanups = 0;
    for (int i = 0; i < WIDTH; i++) {
        if (i % 10000 == 0)
            assert_int_equal(mr_arena_defer(root, on_cleanup, (void *)(intptr_t)cleanups++), 0);
        if (i % 10 == 9) {
            mr_objpool *p = mr_objpool_create(16, 8, &(mr_objpool_options){.parent = rn});
            assert_non_null(p);
            continue;
        }
        mr_arena *a = mr_arena_create(&(mr_arena_options){.parent = rn});
        assert_non_null(a);
        if (i % 1000 == 0)
            assert_int_equal(mr_arena_defer(a, on_cleanup, (void *)(intptr_t)(1000 + i / 1000)), 0);
        if (first == NULL)
            first = a;
        last = a;
    }
    /* the newest child first, the oldest last */
    assert_ptr_equal(mr_node_next_sibling(mr_node_first_child(rn)), mr_arena_node(last));
    size_t children = 0;
    const mr_node *c, *oldest = NULL;
    for (c = mr_node_first_child(rn); c != NULL; c = mr_node_next_sibling(c)) {
        children++;
        oldest = c;
    }
    assert_int_equal(children, WIDTH);
    assert_ptr_equal(oldest, mr_arena_node(first));

    FILE *devnull = fopen("/dev/null", "w");
    assert_non_null(devnull);
    assert_int_equal(mr_report(rn, devnull, NULL), 101);
    assert_int_equal(mr_report(rn, devnull, &(mr_report_options){.max_children = WIDTH}), WIDTH + 1);
    assert_int_equal(mr_report(rn, devnull, &(mr_report_options){.format = MR_REPORT_JSON, .max_children = 2 * WIDTH}),
                     WIDTH + 1);
    assert_int_equal(mr_report(rn, devnull, &(mr_report_options){.max_depth = 1, .max_children = 7}), 8);
    fclose(devnull);
    check_report(rn, NULL, 101, 1);
    check_report(rn, &(mr_report_options){.format = MR_REPORT_JSON, .max_children = 5}, 6, 1);

    mr_stats s;
    mr_node_stats(rn, true, &s);
    assert_int_equal(s.held, u->bytes);
    assert_int_equal(s.in_use, (size_t)(cleanups + WIDTH / 1000) * cleanup_bytes());

    mr_arena_destroy(root);
    /* newest first: the root's cleanups and its children's, interleaved as made */
    size_t k = 0;
    for (int i = WIDTH - 1; i >= 0; i--) {
        if (i % 10 != 9 && i % 1000 == 0) {
            assert_true(k < nran);
            assert_int_equal(ran[k++], 1000 + i / 1000);
        }
        if (i % 10000 == 0) {
            assert_true(k < nran);
            assert_int_equal(ran[k++], i / 10000);
        }
    }
    assert_int_equal(k, nran);
    nran = 0;
    mrt_assert_balanced(u);
    log_free();
}

/* ======================================================================
 * kept children
 * ====================================================================== */

/* The per-request child costs no upstream call once warm: requests made
 * and destroyed under any of a server's connections, connections closed
 * and opened again; and every byte they keep is in some node's figures
 * (the roots' subtree held == the upstream's bytes) and goes back with the
 * release or destroy of what keeps it. */
static void test_kept_children_warm(void **state)
{
    mrt_upstream *u = *state;
    enum { CONNS = 4, ROUNDS = 50 };
    mr_arena *server = mr_arena_create(&(mr_arena_options){.upstream = &u->base, .name = "server"});
    assert_non_null(server);
    mr_node *sn = mr_arena_node(server);
    mr_arena *conn[CONNS];
    for (int c = 0; c < CONNS; c++) {
        conn[c] = mr_arena_create(&(mr_arena_options){.name = "connection", .parent = sn});
        assert_non_null(conn[c]);
    }
    size_t warm_calls = 0;
    for (int round = 0; round < ROUNDS; round++) {
        if (round == 2)
            warm_calls = u->calls;
        for (int c = 0; c < CONNS; c++) {
            mr_arena *req = mr_arena_create(&(mr_arena_options){.name = "request", .parent = mr_arena_node(conn[c])});
            assert_non_null(req);
            assert_ptr_equal(mr_node_parent(mr_arena_node(req)), mr_arena_node(conn[c]));
            assert_null(mr_node_first_child(mr_arena_node(req)));
            unsigned char *p = mr_arena_alloc(req, 1000);
            assert_non_null(p);
            memset(p, 0x11, 1000);
            mr_stats s;
            mr_arena_stats(req, &s);
            assert_int_equal(s.in_use, 1008);
            assert_int_equal(s.allocations, 1);
            if (round % 7 == 3) { /* a connection closes with its request, another opens */
                mr_arena_destroy(conn[c]);
                conn[c] = mr_arena_create(&(mr_arena_options){.name = "connection", .parent = sn});
                assert_non_null(conn[c]);
            } else {
                mr_arena_destroy(req);
            }
            mr_stats sub;
            mr_node_stats(sn, true, &sub);
            assert_int_equal(sub.held, u->bytes);
            assert_true(mr_arena_check(server));
        }
    }
    assert_int_equal(u->calls, warm_calls); /* warm: no upstream call */
    for (int c = 0; c < CONNS; c++)
        assert_ptr_equal(mr_node_parent(mr_arena_node(conn[c])), sn);
    /* the server's release gives back every connection and what is kept */
    mr_arena_release(server);
    assert_null(mr_node_first_child(sn));
    mr_stats s;
    mr_node_stats(sn, true, &s);
    assert_int_equal(s.held, u->bytes);
    mr_arena_destroy(server);
    mrt_assert_balanced(u);
}

/* Children over another upstream than their ancestors' are kept apart, and
 * go back to their own upstream. */
static void test_kept_children_two_upstreams(void **state)
{
    mrt_upstream *u = *state;
    mrt_upstream u2;
    mrt_upstream_init(&u2);
    mr_pools *root = mr_pools_create(&(mr_pools_options){.upstream = &u->base, .largest_required_pool_block = 1024});
    assert_non_null(root);
    mr_arena *a = mr_arena_create(&(mr_arena_options){.upstream = &u2.base, .parent = mr_pools_node(root)});
    assert_non_null(a);
    mr_arena *b = mr_arena_create(&(mr_arena_options){.parent = mr_pools_node(root)}); /* over u */
    assert_non_null(b);
    for (int i = 0; i < 20; i++) {
        mr_arena *x = mr_arena_create(&(mr_arena_options){.parent = mr_arena_node(i % 2 ? a : b)});
        assert_non_null(x);
        assert_non_null(mr_arena_alloc(x, 5000 + (size_t)i * 100));
        mr_arena *y = mr_arena_create(&(mr_arena_options){.parent = mr_arena_node(x)});
        assert_non_null(y);
        assert_non_null(mr_arena_alloc(y, 100));
        mr_arena_destroy(x);
        mr_stats s1, s2;
        mr_node_stats(mr_pools_node(root), true, &s1);
        mr_node_stats(mr_arena_node(a), true, &s2);
        assert_int_equal(s1.held, u->bytes + u2.bytes);
        assert_int_equal(s2.held, u2.bytes);
    }
    mr_arena_destroy(a);
    mrt_assert_balanced(&u2);
    mr_pools_reset(root); /* b dies; what it kept or root keeps stays with root */
    mr_stats s;
    mr_node_stats(mr_pools_node(root), true, &s);
    assert_int_equal(s.held, u->bytes);
    mr_pools_destroy(root);
    mrt_assert_balanced(u);
    mrt_upstream_fini(&u2);
}

/* ======================================================================
 * cleanups that act on the tree
 * ====================================================================== */

/* A cleanup that logs its id, then does one thing to the tree and records
 * what came of it. */
enum act { ACT_NONE, ACT_DESTROY, ACT_SET_ROOT, ACT_CREATE_UNDER };

typedef struct action {
    int id;
    int act;
    mr_node *target;
    int rc, err;
    mr_arena *made; /* ACT_CREATE_UNDER: the child (NULL: refused) */
} action;

static void on_action(void *arg)
{
    action *x = arg;
    on_cleanup((void *)(intptr_t)x->id);
    errno = 0;
    switch (x->act) {
    case ACT_DESTROY:
        mr_node_destroy(x->target);
        break;
    case ACT_SET_ROOT:
        x->rc = mr_node_set_parent(x->target, NULL);
        break;
    case ACT_CREATE_UNDER:
        x->made = mr_arena_create(&(mr_arena_options){.parent = x->target});
        if (x->made != NULL)
            x->rc = mr_arena_defer(x->made, on_cleanup, (void *)(intptr_t)(x->id + 100));
        break;
    default:
        break;
    }
    x->err = errno;
}

static mr_arena *child_arena(mr_arena *parent, int cleanup_id)
{
    mr_arena *a = mr_arena_create(&(mr_arena_options){.parent = mr_arena_node(parent)});
    assert_non_null(a);
    if (cleanup_id >= 0)
        assert_int_equal(mr_arena_defer(a, on_cleanup, (void *)(intptr_t)cleanup_id), 0);
    return a;
}

static void assert_log(const int *want, size_t n)
{
    if (nran != n) {
        print_error("cleanups that ran:");
        for (size_t i = 0; i < nran; i++)
            print_error(" %d", ran[i]);
        print_error("\n");
    }
    assert_int_equal(nran, n);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(ran[i], want[i]);
    nran = 0;
}

static void test_cleanups_that_act(void **state)
{
    mrt_upstream *u = *state;
    mrt_violations v = {0};
    mr_set_violation_handler(mrt_record_violation, &v);
    nran = 0;
    mr_arena_options ro = {.upstream = &u->base};

    /* a cleanup destroys a sibling of its arena that the cascade has not
     * reached yet: allowed, the sibling's cleanups run inside it */
    {
        mr_arena *r = mr_arena_create(&ro);
        assert_non_null(r);
        mr_arena *x = child_arena(r, 1);
        (void)child_arena(x, 2);
        mr_arena *y = child_arena(r, -1);
        action act = {.id = 3, .act = ACT_DESTROY, .target = mr_arena_node(x)};
        assert_int_equal(mr_arena_defer(y, on_action, &act), 0);
        assert_int_equal(mr_arena_defer(r, on_cleanup, (void *)(intptr_t)4), 0);
        mr_arena_destroy(r);
        assert_log((const int[]){4, 3, 2, 1}, 4);
        mrt_assert_reported(&v, 0);
    }
    /* ... and during a rewind, a child made before the mark */
    {
        mr_arena *r = mr_arena_create(&ro);
        assert_non_null(r);
        mr_arena *x = child_arena(r, 1);
        mr_arena_mark m = mr_arena_save(r);
        mr_arena *y = child_arena(r, -1);
        action act = {.id = 2, .act = ACT_DESTROY, .target = mr_arena_node(x)};
        assert_int_equal(mr_arena_defer(y, on_action, &act), 0);
        mr_arena_rewind(r, m);
        assert_log((const int[]){2, 1}, 2);
        assert_null(mr_node_first_child(mr_arena_node(r)));
        assert_true(mr_arena_check(r));
        mr_arena_destroy(r);
        mrt_assert_reported(&v, 0);
    }
    /* a cleanup moves a sibling out (a root now): it survives the cascade */
    {
        mr_arena *r = mr_arena_create(&ro);
        assert_non_null(r);
        mr_arena *x = child_arena(r, 1);
        mr_arena *y = child_arena(r, -1);
        action act = {.id = 2, .act = ACT_SET_ROOT, .target = mr_arena_node(x)};
        assert_int_equal(mr_arena_defer(y, on_action, &act), 0);
        mr_arena_destroy(r);
        assert_int_equal(act.rc, 0);
        assert_log((const int[]){2}, 1);
        assert_null(mr_node_parent(mr_arena_node(x)));
        assert_true(mr_arena_check(x));
        mr_arena_destroy(x);
        assert_log((const int[]){1}, 1);
        mrt_assert_reported(&v, 0);
    }
    /* a cleanup makes a child under a sibling the cascade reaches later:
     * allowed, and the new child dies with that sibling */
    {
        mr_arena *r = mr_arena_create(&ro);
        assert_non_null(r);
        mr_arena *x = child_arena(r, 1);
        mr_arena *y = child_arena(r, -1);
        action act = {.id = 2, .act = ACT_CREATE_UNDER, .target = mr_arena_node(x)};
        assert_int_equal(mr_arena_defer(y, on_action, &act), 0);
        mr_arena_destroy(r);
        assert_non_null(act.made);
        assert_int_equal(act.rc, 0);
        assert_log((const int[]){2, 102, 1}, 3);
        mrt_assert_reported(&v, 0);
    }
    /* misuse from a cleanup: the destroy of the arena whose reset runs it
     * (ignored), a child under it (EINVAL), moving it (EINVAL) */
    {
        mr_arena *r = mr_arena_create(&ro);
        assert_non_null(r);
        mr_arena *y = child_arena(r, -1);
        action destroy_r = {.id = 1, .act = ACT_DESTROY, .target = mr_arena_node(r)};
        action under_r = {.id = 2, .act = ACT_CREATE_UNDER, .target = mr_arena_node(r)};
        action move_r = {.id = 3, .act = ACT_SET_ROOT, .target = mr_arena_node(r), .rc = 7};
        action destroy_self = {.id = 4, .act = ACT_DESTROY, .target = mr_arena_node(y)};
        assert_int_equal(mr_arena_defer(y, on_action, &destroy_r), 0);
        assert_int_equal(mr_arena_defer(y, on_action, &under_r), 0);
        assert_int_equal(mr_arena_defer(y, on_action, &move_r), 0);
        assert_int_equal(mr_arena_defer(y, on_action, &destroy_self), 0);
        mr_arena_reset(r);
        assert_log((const int[]){4, 3, 2, 1}, 4);
        assert_null(under_r.made);
        assert_int_equal(under_r.err, EINVAL);
        assert_int_equal(move_r.rc, -1);
        assert_int_equal(move_r.err, EINVAL);
        mrt_assert_reported(&v, 4);
        /* r lives on, empty, usable */
        assert_null(mr_node_first_child(mr_arena_node(r)));
        assert_true(mr_arena_check(r));
        assert_non_null(mr_arena_alloc(r, 100));
        mr_arena_destroy(r);
    }
    mr_set_violation_handler(NULL, NULL);
    mrt_assert_balanced(u);
    log_free();
}

/* ======================================================================
 * children over their parent's resource view
 * ====================================================================== */

/* An arena over its parent pool's view, an object pool over that arena's:
 * their bytes are inside their upstream's figures and counted once; the
 * cascade destroys them before the memory they stand on. */
static void test_children_over_parent_view(void **state)
{
    mrt_upstream *u = *state;
    mr_pools *p = mr_pools_create(&(mr_pools_options){.upstream = &u->base, .name = "pools"});
    assert_non_null(p);
    mr_arena *a = mr_arena_create(&(mr_arena_options){
        .upstream = mr_pools_resource(p), .block_size = 1024, .name = "arena", .parent = mr_pools_node(p)});
    assert_non_null(a);
    mr_objpool *o = mr_objpool_create(
        32, 8,
        &(mr_objpool_options){
            .upstream = mr_arena_resource(a), .objects_per_block = 8, .name = "objpool", .parent = mr_arena_node(a)});
    assert_non_null(o);
    for (int i = 0; i < 50; i++) {
        assert_non_null(mr_arena_alloc(a, 100));
        assert_non_null(mr_objpool_alloc(o));
    }
    assert_int_equal(mr_arena_defer(a, on_cleanup, (void *)(intptr_t)1), 0);
    void *own = mr_pools_alloc(p, 200, 8);
    assert_non_null(own);
    mr_stats ps, sub;
    mr_pools_stats(p, &ps);
    mr_node_stats(mr_pools_node(p), true, &sub);
    assert_int_equal(sub.held, ps.held);
    assert_int_equal(sub.in_use, ps.in_use);
    assert_int_equal(ps.held, u->bytes);
    FILE *f = tmpfile();
    assert_non_null(f);
    assert_int_equal(mr_report(mr_pools_node(p), f, NULL), 3);
    char last[1024] = "";
    assert_int_equal(count_lines(f, last, sizeof last), 4);
    size_t total, blocks, freeb, chunks, used;
    assert_int_equal(sscanf(last, "Grand total: %zu bytes in %zu blocks; %zu free (%zu chunks); %zu used", &total,
                            &blocks, &freeb, &chunks, &used),
                     5);
    assert_int_equal(total, ps.held);
    assert_int_equal(used, ps.in_use);
    fclose(f);
    nran = 0;
    mr_pools_destroy(p); /* the object pool, then the arena, then the pool */
    assert_int_equal(nran, 1);
    nran = 0;
    mrt_assert_balanced(u);
    log_free();
}

/* ======================================================================
 * fault sweeps
 * ====================================================================== */

#define SNAP_MAX 16

typedef struct snapshot {
    const mr_node *children[SNAP_MAX];
    size_t nchildren;
    mr_stats own, sub;
} snapshot;

static snapshot snap(const mr_node *n)
{
    snapshot s = {0};
    for (const mr_node *c = mr_node_first_child(n); c != NULL; c = mr_node_next_sibling(c)) {
        assert_true(s.nchildren < SNAP_MAX);
        s.children[s.nchildren++] = c;
    }
    mr_node_stats(n, false, &s.own);
    mr_node_stats(n, true, &s.sub);
    return s;
}

static void assert_unchanged(const mr_node *n, const snapshot *before)
{
    snapshot now = snap(n);
    assert_int_equal(now.nchildren, before->nchildren);
    for (size_t i = 0; i < now.nchildren; i++)
        assert_ptr_equal(now.children[i], before->children[i]);
    mrt_assert_stats_equal(&now.own, &before->own);
    mrt_assert_stats_equal(&now.sub, &before->sub);
}

static size_t failed_creates; /* over a whole sweep: printed */

typedef struct sweep {
    bool failed;
    int registered; /* cleanups registered; each must run once */
} sweep;

enum { K_TSPOOLS = K_KINDS }; /* a thread-safe pools, for try_create */

/* A node of the scenario: the allocator and its node (NULL: not made, or
 * dead). */
typedef struct tnode {
    int kind;
    bool ts;
    void *obj;
    mr_node *n;
} tnode;

/* A child of parent of the given kind, or none (n NULL): then errno is
 * ENOMEM and parent is as it was.  parent NULL: none either. */
static tnode try_create(sweep *sw, const tnode *parent, int kind)
{
    tnode t = {.kind = kind == K_TSPOOLS ? K_POOLS : kind, .ts = kind == K_TSPOOLS};
    if (parent->n == NULL)
        return t;
    mr_node *pn = parent->n;
    snapshot before = snap(pn);
    errno = 0;
    switch (kind) {
    case K_ARENA: {
        mr_arena *a = mr_arena_create(&(mr_arena_options){.block_size = 512, .parent = pn});
        t.obj = a;
        t.n = a != NULL ? mr_arena_node(a) : NULL;
        break;
    }
    case K_OBJPOOL: {
        mr_objpool *p = mr_objpool_create(24, 8, &(mr_objpool_options){.objects_per_block = 8, .parent = pn});
        t.obj = p;
        t.n = p != NULL ? mr_objpool_node(p) : NULL;
        break;
    }
    case K_POOLS:
    case K_TSPOOLS: {
        mr_pools *p = mr_pools_create(&(mr_pools_options){.max_blocks_per_chunk = 8,
                                                          .largest_required_pool_block = 1024,
                                                          .thread_safe = kind == K_TSPOOLS,
                                                          .parent = pn});
        t.obj = p;
        t.n = p != NULL ? mr_pools_node(p) : NULL;
        break;
    }
    default: {
        mr_blocks *b = mr_blocks_create(&(mr_blocks_options){.block_size = 1024, .max_free = 1024, .parent = pn});
        t.obj = b;
        t.n = b != NULL ? mr_blocks_node(b) : NULL;
        break;
    }
    }
    if (t.n == NULL) {
        assert_int_equal(errno, ENOMEM);
        assert_unchanged(pn, &before);
        sw->failed = true;
        failed_creates++;
        return t;
    }
    assert_ptr_equal(mr_node_first_child(pn), t.n);
    assert_ptr_equal(mr_node_parent(t.n), pn);
    assert_ptr_equal(mr_node_next_sibling(t.n), before.nchildren != 0 ? before.children[0] : NULL);
    assert_null(mr_node_first_child(t.n));
    return t;
}

/* Uses t as its kind allows: allocations (a failed one changes nothing), a
 * cleanup for an arena. */
static void use(sweep *sw, const tnode *t, int rounds)
{
    if (t->n == NULL)
        return;
    for (int i = 0; i < rounds; i++) {
        mr_stats before, after;
        mr_node_stats(t->n, false, &before);
        errno = 0;
        bool failed = false;
        switch (t->kind) {
        case K_ARENA:
            failed = mr_arena_alloc(t->obj, i % 3 == 2 ? 3000 : 200) == NULL;
            if (!failed) {
                mr_node_stats(t->n, false, &before); /* the defer's own "before" */
                if (mr_arena_defer(t->obj, on_cleanup, (void *)(intptr_t)sw->registered) == 0)
                    sw->registered++;
                else
                    failed = true;
            }
            assert_true(mr_arena_check(t->obj));
            break;
        case K_OBJPOOL: {
            void *p = mr_objpool_alloc(t->obj);
            failed = p == NULL;
            if (p != NULL && i % 2 == 0)
                mr_objpool_free(t->obj, p);
            assert_true(mr_objpool_check(t->obj));
            break;
        }
        case K_POOLS: {
            size_t size = i % 3 == 2 ? 2000 : 40 + (size_t)i * 24; /* 2000: a direct request */
            void *p = mr_pools_alloc(t->obj, size, 8);
            failed = p == NULL;
            if (p != NULL && i % 2 == 0)
                mr_pools_free(t->obj, p, size, 8);
            assert_true(mr_pools_check(t->obj));
            break;
        }
        default: {
            void *p = mr_blocks_get(t->obj);
            failed = p == NULL;
            mr_blocks_put(t->obj, p);
            assert_true(mr_blocks_check(t->obj));
            break;
        }
        }
        if (failed) {
            assert_int_equal(errno, ENOMEM);
            mr_node_stats(t->n, false, &after);
            if (after.in_use != before.in_use || (!t->ts && after.held != before.held))
                print_error("a failed call on %s %p (round %d) changed it: in use %zu -> %zu, held %zu -> %zu\n",
                            mr_node_kind(t->n), t->obj, i, before.in_use, after.in_use, before.held, after.held);
            assert_int_equal(after.in_use, before.in_use);
            /* (a thread-safe pool keeps the calling thread's cache, made
             * by its first call, when that call then fails for a chunk) */
            if (!t->ts)
                assert_int_equal(after.held, before.held);
            sw->failed = true;
        }
    }
}

static void forget(tnode *t) { t->n = NULL; }

static void destroy(tnode *t)
{
    if (t->n != NULL)
        mr_node_destroy(t->n);
    t->n = NULL;
}

static bool tree_scenario(mrt_upstream *u, void *ctx)
{
    (void)ctx;
    sweep sw = {0};
    nran = 0;
    errno = 0;
    mr_arena *ra = mr_arena_create(&(mr_arena_options){.upstream = &u->base, .block_size = 512, .name = "root"});
    if (ra == NULL) {
        assert_int_equal(errno, ENOMEM);
        return true;
    }
    tnode root = {K_ARENA, false, ra, mr_arena_node(ra)};
    use(&sw, &root, 2);
    /* children of every kind, grandchildren */
    tnode a = try_create(&sw, &root, K_ARENA), p = try_create(&sw, &root, K_POOLS),
          o = try_create(&sw, &root, K_OBJPOOL), b = try_create(&sw, &root, K_BLOCKS),
          t = try_create(&sw, &root, K_TSPOOLS);
    use(&sw, &a, 3);
    use(&sw, &p, 3);
    use(&sw, &o, 3);
    use(&sw, &b, 2);
    use(&sw, &t, 2);
    tnode a1 = try_create(&sw, &a, K_ARENA), a2 = try_create(&sw, &a, K_POOLS), a3 = try_create(&sw, &a, K_ARENA),
          p1 = try_create(&sw, &p, K_ARENA), o1 = try_create(&sw, &o, K_OBJPOOL), b1 = try_create(&sw, &b, K_ARENA),
          t1 = try_create(&sw, &t, K_ARENA), t2 = try_create(&sw, &t, K_OBJPOOL);
    tnode a11 = try_create(&sw, &a1, K_ARENA);
    use(&sw, &a1, 2);
    use(&sw, &a2, 3);
    use(&sw, &a3, 1);
    use(&sw, &p1, 2);
    use(&sw, &o1, 2);
    use(&sw, &b1, 2);
    use(&sw, &t1, 2);
    use(&sw, &t2, 2);
    use(&sw, &a11, 2);
    /* prune: a child destroyed (kept by its parent) and made again */
    destroy(&a3);
    a3 = try_create(&sw, &a, K_ARENA);
    use(&sw, &a3, 2);
    destroy(&t1);
    t1 = try_create(&sw, &t, K_ARENA);
    use(&sw, &t1, 1);
    /* a move: b1 under a (with a11 and everything) */
    if (b1.n != NULL && a.n != NULL)
        assert_int_equal(mr_node_set_parent(b1.n, a.n), 0);
    /* resets: their children die; made again after */
    if (p.n != NULL) {
        mr_pools_reset(p.obj);
        forget(&p1);
        assert_null(mr_node_first_child(p.n));
        p1 = try_create(&sw, &p, K_ARENA);
        use(&sw, &p1, 2);
    }
    if (a.n != NULL) {
        mr_arena_reset(a.obj);
        forget(&a1);
        forget(&a11);
        forget(&a2);
        forget(&a3);
        forget(&b1);
        assert_null(mr_node_first_child(a.n));
        a1 = try_create(&sw, &a, K_ARENA);
        use(&sw, &a1, 2);
        a2 = try_create(&sw, &a, K_OBJPOOL);
        use(&sw, &a2, 2);
    }
    /* a mark on the root, children and cleanups after it, a rewind */
    mr_arena_mark m = mr_arena_save(ra);
    tnode late = try_create(&sw, &root, K_ARENA);
    use(&sw, &late, 2);
    use(&sw, &root, 1);
    mr_arena_rewind(ra, m);
    forget(&late);
    if (o.n != NULL) {
        mr_objpool_release(o.obj);
        forget(&o1);
        o1 = try_create(&sw, &o, K_POOLS);
        use(&sw, &o1, 2);
    }
    destroy(&t); /* with its children */
    forget(&t1);
    forget(&t2);
    /* the root's release: everything else dies; then a last child */
    mr_arena_release(ra);
    assert_null(mr_node_first_child(root.n));
    tnode last = try_create(&sw, &root, K_ARENA);
    use(&sw, &last, 2);
    mr_arena_destroy(ra);

    /* every cleanup ran once */
    assert_int_equal(nran, (size_t)sw.registered);
    static bool seen[4096];
    assert_true(sw.registered <= 4096);
    memset(seen, 0, sizeof seen);
    for (size_t i = 0; i < nran; i++) {
        assert_true(ran[i] >= 0 && ran[i] < sw.registered && !seen[ran[i]]);
        seen[ran[i]] = true;
    }
    nran = 0;
    return sw.failed;
}

static void test_fault_sweeps(void **state)
{
    (void)state;
    failed_creates = 0;
    mrt_fault_sweep("tree", tree_scenario, NULL, MRT_FAIL_ONCE, 20);
    printf("# (%zu failed creates, each leaving its parent as it was)\n", failed_creates);
    assert_true(failed_creates >= 10);
    failed_creates = 0;
    mrt_fault_sweep("tree", tree_scenario, NULL, MRT_FAIL_FROM, 20);
    printf("# (%zu failed creates, each leaving its parent as it was)\n", failed_creates);
    assert_true(failed_creates >= 10);
    log_free();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        mrt_unit_test(test_model),
        mrt_unit_test(test_deep_chain),
        mrt_unit_test(test_deep_mixed_chain),
        mrt_unit_test(test_wide),
        mrt_unit_test(test_kept_children_warm),
        mrt_unit_test(test_kept_children_two_upstreams),
        mrt_unit_test(test_cleanups_that_act),
        mrt_unit_test(test_children_over_parent_view),
        mrt_unit_test(test_fault_sweeps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
