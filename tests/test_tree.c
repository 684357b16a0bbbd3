/* SPDX-License-Identifier: MIT */
/* tests/test_tree.c -- the tree of lifetimes (memres/tree.h): every rule of
 * its contract, one named case each.
 *
 * Links and names; destroy, reset, release, rewind and merge cascading to
 * the children, children and cleanups unwinding together newest first; a
 * child's memory from its own upstream (the parent's by default), never
 * the parent's allocations; create under a parent all or nothing; moving a
 * node; the children a parent keeps for reuse; stats over a subtree that
 * count each byte once; the text and JSON reports; and misuse (a dead
 * handle, a cascade's cleanup destroying what runs it, a cycle), with the
 * recording violation handler: the safe way out is asserted in every
 * build, the report in debug builds only.  The model-based random test and
 * the deep and wide trees are in test_tree_model.c, threads in
 * test_tree_threads.c.
 */
#include <malloc.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"

/* Every case gets a checking upstream and the recording handler. */
typedef struct fixture {
    mrt_upstream u;
    mrt_violations v;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (f == NULL)
        return -1;
    mrt_upstream_init(&f->u);
    mr_set_violation_handler(mrt_record_violation, &f->v);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    mr_set_violation_handler(NULL, NULL);
    int ok = f->u.bad_deallocations == 0 && mrt_upstream_live(&f->u) == 0;
    if (!ok)
        fprintf(stderr, "upstream not balanced: %zu live blocks, %zu bad deallocations\n", mrt_upstream_live(&f->u),
                f->u.bad_deallocations);
    mrt_upstream_fini(&f->u);
    free(f);
    return ok ? 0 : -1;
}

#define tree_test(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

/* ---- helpers ---- */

static mr_arena *arena_under(mr_node *parent, mr_resource *up, const char *name)
{
    mr_arena *a = mr_arena_create(&(mr_arena_options){.upstream = up, .name = name, .parent = parent});
    assert_non_null(a);
    return a;
}

static size_t count_children(const mr_node *n)
{
    size_t k = 0;
    for (const mr_node *c = mr_node_first_child(n); c != NULL; c = mr_node_next_sibling(c))
        k++;
    return k;
}

/* The order in which cleanups ran: each appends its tag. */
static char order[256];
static size_t norder;
static void note(void *arg)
{
    if (norder + 1 < sizeof order)
        order[norder++] = *(const char *)arg;
    order[norder] = '\0';
}
static void order_reset(void) { norder = 0, order[0] = '\0'; }

/* ======================================================================
 * links, names, kinds
 * ====================================================================== */

static void test_names_default_to_the_kind(void **state)
{
    fixture *f = *state;
    mr_arena *a = mr_arena_create(&(mr_arena_options){.upstream = &f->u.base});
    mr_objpool *o = mr_objpool_create(32, 8, &(mr_objpool_options){.upstream = &f->u.base, .name = "objects"});
    mr_pools *p = mr_pools_create(&(mr_pools_options){.upstream = &f->u.base});
    mr_blocks *b = mr_blocks_create(&(mr_blocks_options){.upstream = &f->u.base, .name = "blocks of 64 KiB"});
    assert_string_equal(mr_node_name(mr_arena_node(a)), "arena");
    assert_string_equal(mr_node_kind(mr_arena_node(a)), "arena");
    assert_string_equal(mr_node_name(mr_objpool_node(o)), "objects");
    assert_string_equal(mr_node_kind(mr_objpool_node(o)), "objpool");
    assert_string_equal(mr_node_name(mr_pools_node(p)), "pools");
    assert_string_equal(mr_node_kind(mr_pools_node(p)), "pools");
    assert_string_equal(mr_node_name(mr_blocks_node(b)), "blocks of 64 KiB");
    assert_string_equal(mr_node_kind(mr_blocks_node(b)), "blocks");
    mr_pools_options got;
    mr_pools_get_options(p, &got);
    assert_string_equal(got.name, "pools");
    assert_null(got.parent);
    for (mr_node *n = mr_arena_node(a); n != NULL; n = NULL) {
        assert_null(mr_node_parent(n));
        assert_null(mr_node_first_child(n));
        assert_null(mr_node_next_sibling(n));
    }
    mr_blocks_destroy(b);
    mr_pools_destroy(p);
    mr_objpool_destroy(o);
    mr_arena_destroy(a);
}

static void test_node_of_a_resource_view(void **state)
{
    fixture *f = *state;
    mr_arena *a = mr_arena_create(&(mr_arena_options){.upstream = &f->u.base});
    mr_objpool *o = mr_objpool_create(32, 8, &(mr_objpool_options){.upstream = &f->u.base});
    mr_pools *p = mr_pools_create(&(mr_pools_options){.upstream = &f->u.base});
    mr_blocks *b = mr_blocks_create(&(mr_blocks_options){.upstream = &f->u.base});
    assert_ptr_equal(mr_node_of(mr_arena_resource(a)), mr_arena_node(a));
    assert_ptr_equal(mr_node_of(mr_objpool_resource(o)), mr_objpool_node(o));
    assert_ptr_equal(mr_node_of(mr_pools_resource(p)), mr_pools_node(p));
    assert_ptr_equal(mr_node_of(mr_blocks_resource(b)), mr_blocks_node(b));
    errno = 0;
    assert_null(mr_node_of(mr_malloc_resource()));
    assert_int_equal(errno, EINVAL);
    errno = 0;
    assert_null(mr_node_of(NULL));
    assert_int_equal(errno, EINVAL);
    errno = 0;
    assert_null(mr_node_of(&f->u.base));
    assert_int_equal(errno, EINVAL);
    mr_blocks_destroy(b);
    mr_pools_destroy(p);
    mr_objpool_destroy(o);
    mr_arena_destroy(a);
}

static void test_children_are_listed_newest_first(void **state)
{
    fixture *f = *state;
    mr_arena *root = arena_under(NULL, &f->u.base, "root");
    mr_node *r = mr_arena_node(root);
    mr_arena *c1 = arena_under(r, NULL, "c1");
    mr_pools *c2 = mr_pools_create(&(mr_pools_options){.parent = r, .name = "c2"});
    mr_objpool *c3 = mr_objpool_create(24, 8, &(mr_objpool_options){.parent = r, .name = "c3"});
    assert_non_null(c2);
    assert_non_null(c3);
    mr_node *n = mr_node_first_child(r);
    assert_ptr_equal(n, mr_objpool_node(c3));
    assert_ptr_equal(n = mr_node_next_sibling(n), mr_pools_node(c2));
    assert_ptr_equal(n = mr_node_next_sibling(n), mr_arena_node(c1));
    assert_null(mr_node_next_sibling(n));
    assert_ptr_equal(mr_node_parent(mr_pools_node(c2)), r);
    /* destroying the middle one leaves the others linked */
    mr_pools_destroy(c2);
    assert_ptr_equal(mr_node_first_child(r), mr_objpool_node(c3));
    assert_ptr_equal(mr_node_next_sibling(mr_objpool_node(c3)), mr_arena_node(c1));
    mr_objpool_destroy(c3);
    mr_arena_destroy(c1);
    assert_null(mr_node_first_child(r));
    mr_arena_destroy(root);
    assert_int_equal(f->v.count, 0);
}

/* ======================================================================
 * cascades
 * ====================================================================== */

/* A parent of each kind with children of each kind and grandchildren:
 * destroying the parent frees them all (the upstream balanced). */
static void test_destroy_frees_the_subtree(void **state)
{
    fixture *f = *state;
    for (int kind = 0; kind < 4; kind++) {
        mr_arena *pa = NULL;
        mr_pools *pp = NULL;
        mr_objpool *po = NULL;
        mr_blocks *pb = NULL;
        mr_node *parent;
        switch (kind) {
        case 0: parent = mr_arena_node(pa = arena_under(NULL, &f->u.base, "p")); break;
        case 1: parent = mr_pools_node(pp = mr_pools_create(&(mr_pools_options){.upstream = &f->u.base})); break;
        case 2: parent = mr_objpool_node(po = mr_objpool_create(64, 8, &(mr_objpool_options){.upstream = &f->u.base})); break;
        default: parent = mr_blocks_node(pb = mr_blocks_create(&(mr_blocks_options){.upstream = &f->u.base})); break;
        }
        for (int i = 0; i < 5; i++) {
            mr_arena *c = arena_under(parent, NULL, "child");
            assert_non_null(mr_arena_alloc(c, 1000 + 3000 * (size_t)i));
            mr_pools *g = mr_pools_create(&(mr_pools_options){.parent = mr_arena_node(c)});
            assert_non_null(mr_pools_alloc(g, 100, 8));
            mr_objpool *g2 = mr_objpool_create(40, 8, &(mr_objpool_options){.parent = mr_pools_node(g)});
            assert_non_null(mr_objpool_alloc(g2));
            mr_blocks *g3 = mr_blocks_create(&(mr_blocks_options){.parent = mr_objpool_node(g2), .block_size = 4096});
            mr_blocks_put(g3, mr_blocks_get(g3));
        }
        assert_true(f->u.allocations > 20);
        mr_node_destroy(parent); /* the kind's destroy, through the node */
        mrt_assert_balanced(&f->u);
        (void)pa, (void)pp, (void)po, (void)pb;
    }
    assert_int_equal(f->v.count, 0);
}

static void test_reset_and_release_destroy_the_children(void **state)
{
    fixture *f = *state;
    mr_arena *a = arena_under(NULL, &f->u.base, "a");
    mr_pools *p = mr_pools_create(&(mr_pools_options){.upstream = &f->u.base});
    mr_objpool *o = mr_objpool_create(16, 8, &(mr_objpool_options){.upstream = &f->u.base});
    mr_node *parents[] = {mr_arena_node(a), mr_pools_node(p), mr_objpool_node(o)};
    for (int round = 0; round < 2; round++) {
        for (size_t k = 0; k < 3; k++) {
            mr_arena *c = mr_arena_create(&(mr_arena_options){.parent = parents[k], .block_size = 600000});
            assert_non_null(c);
            assert_non_null(mr_arena_alloc(c, 100)); /* too big to keep or spare: freed upstream */
            mr_pools *g = mr_pools_create(&(mr_pools_options){.parent = mr_arena_node(c)});
            assert_non_null(g);
            assert_int_equal(count_children(parents[k]), 1);
        }
        size_t before = f->u.bytes;
        if (round == 0) {
            mr_arena_reset(a), mr_pools_reset(p), mr_objpool_reset(o);
        } else {
            mr_arena_release(a), mr_pools_release(p), mr_objpool_release(o);
        }
        for (size_t k = 0; k < 3; k++)
            assert_null(mr_node_first_child(parents[k]));
        assert_true(f->u.bytes < before - 3 * 600000);
        assert_true(mr_arena_check(a) && mr_pools_check(p) && mr_objpool_check(o));
    }
    mr_objpool_destroy(o);
    mr_pools_destroy(p);
    mr_arena_destroy(a);
    assert_int_equal(f->v.count, 0);
}

/* Under an arena a child is a cleanup registered at its creation: they
 * unwind together, newest first, each child's own cleanups before it dies;
 * a cleanup registered after a child still sees it alive. */
static mr_arena *seen_alive;
static void use_child(void *arg)
{
    note(arg);
    assert_non_null(mr_arena_alloc(seen_alive, 10)); /* still alive */
}

static void test_children_and_cleanups_unwind_newest_first(void **state)
{
    fixture *f = *state;
    static const char A = 'A', B = 'B', C = 'C', D = 'D', x = 'x', y = 'y', z = 'z';
    for (int how = 0; how < 3; how++) {
        mr_arena *root = arena_under(NULL, &f->u.base, "root");
        mr_node *r = mr_arena_node(root);
        assert_int_equal(mr_arena_defer(root, note, (void *)&A), 0);
        mr_arena *c1 = arena_under(r, NULL, "c1");
        assert_int_equal(mr_arena_defer(c1, note, (void *)&x), 0);
        assert_int_equal(mr_arena_defer(root, note, (void *)&B), 0);
        mr_pools *c2 = mr_pools_create(&(mr_pools_options){.parent = r});
        mr_arena *g = arena_under(mr_pools_node(c2), NULL, "g");
        assert_int_equal(mr_arena_defer(g, note, (void *)&y), 0);
        seen_alive = c1;
        assert_int_equal(mr_arena_defer(root, use_child, (void *)&C), 0);
        mr_arena *c3 = arena_under(r, NULL, "c3");
        assert_int_equal(mr_arena_defer(c3, note, (void *)&z), 0);
        assert_int_equal(mr_arena_defer(root, note, (void *)&D), 0);
        order_reset();
        if (how == 0)
            mr_arena_destroy(root);
        else if (how == 1)
            mr_arena_reset(root);
        else
            mr_arena_release(root);
        /* D, c3 (z), C, c2 (g: y), B, c1 (x), A */
        assert_string_equal(order, "DzCyBxA");
        if (how != 0) {
            assert_null(mr_node_first_child(r));
            assert_true(mr_arena_check(root));
            mr_arena_destroy(root);
        }
        mrt_assert_balanced(&f->u);
    }
}

static void test_rewind_destroys_the_children_made_after_the_mark(void **state)
{
    fixture *f = *state;
    static const char a = 'a', b = 'b', c = 'c';
    mr_arena *root = arena_under(NULL, &f->u.base, "root");
    mr_node *r = mr_arena_node(root);
    mr_arena *before = arena_under(r, NULL, "before");
    assert_int_equal(mr_arena_defer(before, note, (void *)&a), 0);
    mr_arena_mark m = mr_arena_save(root);
    (void)mr_arena_alloc(root, 16); /* the same block: an inline rewind unless a child forces the slow one */
    mr_arena *after = arena_under(r, NULL, "after");
    assert_int_equal(mr_arena_defer(after, note, (void *)&b), 0);
    mr_objpool *after2 = mr_objpool_create(32, 8, &(mr_objpool_options){.parent = r});
    assert_non_null(after2);
    mr_arena *g = arena_under(mr_objpool_node(after2), NULL, "g");
    assert_int_equal(mr_arena_defer(g, note, (void *)&c), 0);
    order_reset();
    mr_arena_rewind(root, m);
    assert_string_equal(order, "cb");
    assert_ptr_equal(mr_node_first_child(r), mr_arena_node(before));
    assert_null(mr_node_next_sibling(mr_arena_node(before)));
    /* again, with a child made and destroyed after the mark: nothing to do */
    m = mr_arena_save(root);
    mr_arena_destroy(arena_under(r, NULL, "gone"));
    mr_arena_rewind(root, m);
    assert_ptr_equal(mr_node_first_child(r), mr_arena_node(before));
    assert_true(mr_arena_check(root));
    order_reset();
    mr_arena_destroy(root);
    assert_string_equal(order, "a");
    assert_int_equal(f->v.count, 0);
}

static void test_merge_moves_the_children(void **state)
{
    fixture *f = *state;
    static const char i1 = '1', f1 = 'f', f2 = 'g', k = 'k', i2 = '2';
    mr_arena *into = arena_under(NULL, &f->u.base, "into");
    mr_arena *from = arena_under(NULL, &f->u.base, "from");
    assert_int_equal(mr_arena_defer(into, note, (void *)&i1), 0);
    mr_arena *ci = arena_under(mr_arena_node(into), NULL, "ci");
    assert_int_equal(mr_arena_defer(ci, note, (void *)&i2), 0);
    mr_arena_mark m = mr_arena_save(into);
    assert_int_equal(mr_arena_defer(from, note, (void *)&f1), 0);
    mr_arena *cf = arena_under(mr_arena_node(from), NULL, "cf");
    assert_int_equal(mr_arena_defer(cf, note, (void *)&k), 0);
    assert_int_equal(mr_arena_defer(from, note, (void *)&f2), 0);
    assert_int_equal(mr_arena_merge(into, from), 0);
    assert_null(mr_node_first_child(mr_arena_node(from)));
    assert_ptr_equal(mr_node_parent(mr_arena_node(cf)), mr_arena_node(into));
    assert_ptr_equal(mr_node_first_child(mr_arena_node(into)), mr_arena_node(cf));
    assert_ptr_equal(mr_node_next_sibling(mr_arena_node(cf)), mr_arena_node(ci));
    assert_true(mr_arena_check(into) && mr_arena_check(from));
    /* a rewind of into to a mark from before the merge frees what moved */
    order_reset();
    mr_arena_rewind(into, m);
    assert_string_equal(order, "gkf");
    assert_ptr_equal(mr_node_first_child(mr_arena_node(into)), mr_arena_node(ci));
    /* into below from: EINVAL, nothing moved */
    mr_arena *below = arena_under(mr_arena_node(from), NULL, "below");
    errno = 0;
    assert_int_equal(mr_arena_merge(below, from), -1);
    assert_int_equal(errno, EINVAL);
    assert_ptr_equal(mr_node_parent(mr_arena_node(below)), mr_arena_node(from));
    order_reset();
    mr_arena_destroy(from);
    mr_arena_destroy(into);
    assert_string_equal(order, "21");
    assert_int_equal(f->v.count, 0);
}

/* ======================================================================
 * memory of a child
 * ====================================================================== */

static void test_a_child_takes_its_parents_upstream_not_its_memory(void **state)
{
    fixture *f = *state;
    mrt_upstream other;
    mrt_upstream_init(&other);
    mr_arena *root = arena_under(NULL, &f->u.base, "root");
    (void)mr_arena_alloc(root, 10);
    mr_stats before, after;
    mr_arena_stats(root, &before);
    size_t calls = f->u.allocations;
    mr_arena *c = arena_under(mr_arena_node(root), NULL, "c");
    assert_non_null(mr_arena_alloc(c, 20000));
    mr_arena_stats(root, &after);
    assert_int_equal(after.in_use, before.in_use); /* not the parent's allocations */
    assert_int_equal(after.allocations, before.allocations);
    assert_true(f->u.allocations >= calls + 2); /* its header and block: the parent's upstream */
    /* its own upstream when given */
    size_t mine = f->u.allocations;
    mr_arena *d = arena_under(mr_arena_node(root), &other.base, "d");
    assert_non_null(mr_arena_alloc(d, 100));
    assert_int_equal(f->u.allocations, mine);
    assert_true(other.allocations >= 2);
    /* a pools child of a block pool: the block pool's upstream */
    mr_blocks *b = mr_blocks_create(&(mr_blocks_options){.upstream = &other.base, .block_size = 4096});
    mr_pools *pc = mr_pools_create(&(mr_pools_options){.parent = mr_blocks_node(b)});
    size_t got = other.allocations;
    assert_non_null(mr_pools_alloc(pc, 64, 8));
    assert_true(other.allocations > got);
    mr_blocks_destroy(b); /* and pc with it */
    mr_arena_destroy(root);
    mrt_assert_balanced(&other);
    mrt_upstream_fini(&other);
}

/* A create under a parent that fails changes nothing: the parent keeps the
 * same children and figures. */
static void test_a_failed_create_leaves_the_parent_unchanged(void **state)
{
    fixture *f = *state;
    mr_arena *root = arena_under(NULL, &f->u.base, "root");
    mr_node *r = mr_arena_node(root);
    mr_arena *keep = arena_under(r, NULL, "keep");
    (void)keep;
    mr_stats s0, s1;
    mr_node_stats(r, true, &s0);
    f->u.fail_at = f->u.calls + 1;
    mrt_assert_fails(mr_arena_create(&(mr_arena_options){.parent = r, .block_size = 8192}), ENOMEM);
    f->u.fail_at = f->u.calls + 1;
    mrt_assert_fails(mr_pools_create(&(mr_pools_options){.parent = r}), ENOMEM);
    f->u.fail_at = f->u.calls + 1;
    mrt_assert_fails(mr_objpool_create(8, 8, &(mr_objpool_options){.parent = r}), ENOMEM);
    f->u.fail_at = f->u.calls + 1;
    mrt_assert_fails(mr_blocks_create(&(mr_blocks_options){.parent = r}), ENOMEM);
    f->u.fail_at = 0;
    mr_node_stats(r, true, &s1);
    mrt_assert_stats_equal(&s0, &s1);
    assert_ptr_equal(mr_node_first_child(r), mr_arena_node(keep));
    assert_null(mr_node_next_sibling(mr_arena_node(keep)));
    /* bad options under a parent: EINVAL, nothing linked */
    mrt_assert_fails(mr_arena_create(&(mr_arena_options){.parent = r, .buffer_size = 10}), EINVAL);
    assert_int_equal(count_children(r), 1);
    assert_true(mr_arena_check(root));
    mr_arena_destroy(root);
    assert_int_equal(f->v.count, 0);
}

/* ======================================================================
 * moving a node
 * ====================================================================== */

static void test_set_parent_moves_a_subtree(void **state)
{
    fixture *f = *state;
    mr_arena *a = arena_under(NULL, &f->u.base, "a");
    mr_pools *b = mr_pools_create(&(mr_pools_options){.upstream = &f->u.base});
    mr_node *na = mr_arena_node(a), *nb = mr_pools_node(b);
    mr_arena *c = arena_under(na, NULL, "c");
    mr_arena *g = arena_under(mr_arena_node(c), NULL, "g");
    mr_node *nc = mr_arena_node(c), *ng = mr_arena_node(g);
    assert_int_equal(mr_node_set_parent(nc, nb), 0);
    assert_ptr_equal(mr_node_parent(nc), nb);
    assert_null(mr_node_first_child(na));
    assert_ptr_equal(mr_node_first_child(nb), nc);
    assert_ptr_equal(mr_node_parent(ng), nc);
    /* cycles: EINVAL, nothing changed */
    errno = 0;
    assert_int_equal(mr_node_set_parent(nb, ng), -1);
    assert_int_equal(errno, EINVAL);
    errno = 0;
    assert_int_equal(mr_node_set_parent(nc, nc), -1);
    assert_int_equal(errno, EINVAL);
    assert_null(mr_node_parent(nb));
    assert_ptr_equal(mr_node_parent(nc), nb);
    mrt_assert_reported(&f->v, 2);
    f->v.count = 0;
    /* a root, then under an arena again: as if made now (a rewind to a
     * mark saved before frees it) */
    assert_int_equal(mr_node_set_parent(nc, NULL), 0);
    assert_null(mr_node_parent(nc));
    assert_null(mr_node_first_child(nb));
    mr_arena_mark m = mr_arena_save(a);
    assert_int_equal(mr_node_set_parent(nc, na), 0);
    assert_int_equal(mr_node_set_parent(nc, na), 0); /* already there: no change */
    mr_arena_rewind(a, m);
    assert_null(mr_node_first_child(na));
    mr_pools_destroy(b);
    mr_arena_destroy(a);
    assert_int_equal(f->v.count, 0);
}

/* ======================================================================
 * kept children
 * ====================================================================== */

static void test_a_parent_keeps_dead_children_for_reuse(void **state)
{
    fixture *f = *state;
    mr_arena *root = arena_under(NULL, &f->u.base, "root");
    mr_node *r = mr_arena_node(root);
    mr_stats alone; /* the root's books before it keeps any child */
    mr_arena_stats(root, &alone);
    /* warm: the per-request child makes no upstream call */
    for (int i = 0; i < 3; i++) {
        mr_arena *c = arena_under(r, NULL, "request");
        assert_non_null(mr_arena_alloc(c, 100));
        mr_arena_destroy(c);
    }
    size_t calls = f->u.calls;
    for (int i = 0; i < 1000; i++) {
        mr_arena *c = arena_under(r, NULL, "request");
        unsigned char *p = mr_arena_alloc(c, 100 + (size_t)i % 2000);
        assert_non_null(p);
        memset(p, i, 100);
        mr_stats s;
        mr_arena_stats(c, &s);
        assert_int_equal(s.allocations, 1); /* fresh counts */
        assert_int_equal(s.upstream_deallocations, 0);
        assert_int_equal(s.peak_held, s.held);
        assert_string_equal(mr_node_name(mr_arena_node(c)), "request");
        assert_ptr_equal(mr_node_parent(mr_arena_node(c)), r);
        mr_arena_destroy(c);
    }
    assert_int_equal(f->u.calls, calls);
    /* the parent shows them, as free, in its own stats as in its node's */
    mr_stats rs, own;
    mr_node_stats(r, false, &rs);
    mr_arena_stats(root, &own);
    assert_int_equal(rs.held, own.held);
    assert_true(own.held > alone.held);
    assert_int_equal(rs.in_use, own.in_use);
    assert_int_equal(own.in_use, alone.in_use);
    /* other options: not that one */
    mr_arena *big = mr_arena_create(&(mr_arena_options){.parent = r, .block_size = 8192});
    assert_true(f->u.calls > calls);
    /* at most MR_TREE_KEEP_CHILDREN kept, each at most MR_TREE_KEEP_BYTES */
    mr_arena *many[MR_TREE_KEEP_CHILDREN + 3];
    for (size_t i = 0; i < MR_TREE_KEEP_CHILDREN + 3; i++) {
        many[i] = arena_under(r, NULL, "many");
        assert_non_null(mr_arena_alloc(many[i], 200000)); /* a dedicated block */
        assert_non_null(mr_arena_alloc(many[i], 3000));
    }
    mr_arena_destroy(big);
    for (size_t i = 0; i < MR_TREE_KEEP_CHILDREN + 3; i++)
        mr_arena_destroy(many[i]);
    mr_node_stats(r, false, &rs);
    mr_arena_stats(root, &own);
    assert_int_equal(rs.held, own.held);
    assert_true(own.held - alone.held <= MR_TREE_KEEP_CHILDREN * MR_TREE_KEEP_BYTES);
    /* release returns them */
    mr_arena_release(root);
    mr_node_stats(r, false, &rs);
    mr_arena_stats(root, &own);
    assert_int_equal(rs.held, own.held);
    assert_int_equal(f->u.bytes, own.held);
    mr_arena_destroy(root);
    assert_int_equal(f->v.count, 0);
}

/* An arena parent that took back a kept arena with its chain (a
 * connection made after a request died) gives its spare blocks to the
 * keeper when a child of more than one block dies; it grows again one block at a time
 * from what the keeper shares, a child without a chain takes a run of
 * them, no upstream call is made, and every byte stays on some node's
 * books. */
static void test_a_keeper_shares_a_parents_spare_blocks(void **state)
{
    fixture *f = *state;
    mr_arena *root = arena_under(NULL, &f->u.base, "server");
    mr_node *r = mr_arena_node(root);
    mr_stats alone, s, cs;
    mr_arena_stats(root, &alone);
    /* a request of 20 KB grows a chain of three blocks and is kept whole */
    mr_arena *conn = arena_under(r, NULL, "connection");
    mr_arena *req = arena_under(mr_arena_node(conn), NULL, "request");
    for (int i = 0; i < 40; i++)
        assert_non_null(mr_arena_alloc(req, 500));
    mr_arena_stats(req, &cs);
    const size_t chain = cs.held;
    assert_true(cs.upstream_allocations >= 4); /* its header and three blocks */
    mr_arena_destroy(req);
    /* a second connection takes the kept arena back with its chain */
    mr_arena *first = conn;
    conn = arena_under(r, NULL, "connection");
    mr_arena_stats(conn, &cs);
    const size_t taken = cs.held;
    assert_true(taken >= chain);
    req = arena_under(mr_arena_node(conn), NULL, "request");
    assert_non_null(mr_arena_alloc(conn, 100)); /* a result: the connection's first block */
    for (int i = 0; i < 20; i++)                /* more than one block */
        assert_non_null(mr_arena_alloc(req, 500));
    mr_arena_destroy(req); /* kept; the connection's spares go to the server */
    size_t calls = f->u.calls;
    mr_arena_stats(conn, &cs);
    assert_true(cs.held < taken / 2);
    mr_node_stats(r, true, &s);
    assert_int_equal(s.held, f->u.bytes);
    assert_true(mr_arena_check(conn));
    assert_true(mr_arena_check(root));
    /* requests and the connection's growth are served without upstream calls */
    for (int k = 0; k < 50; k++) {
        req = arena_under(mr_arena_node(conn), NULL, "request");
        for (int i = 0; i < 40; i++)
            assert_non_null(mr_arena_alloc(req, 500));
        if (k < 20)
            assert_non_null(mr_arena_alloc(conn, 400)); /* 8 KB of results in all */
        mr_node_stats(r, true, &s);
        assert_int_equal(s.held, f->u.bytes);
        assert_true(mr_arena_check(req));
        assert_true(mr_arena_check(conn));
        mr_arena_destroy(req);
        assert_true(mr_arena_check(root));
    }
    assert_int_equal(f->u.calls, calls);
    mr_arena_stats(conn, &cs);
    assert_true(cs.held < taken);
    mr_arena_destroy(conn);
    mr_arena_destroy(first);
    /* release gives the shared blocks back with the kept children */
    mr_arena_release(root);
    mr_arena_stats(root, &s);
    assert_int_equal(s.held, alone.held);
    assert_int_equal(f->u.bytes, s.held);
    assert_true(mr_arena_check(root));
    mr_arena_destroy(root);
    assert_int_equal(f->v.count, 0);
}

/* A parent with a live child grows by blocks of one size until it holds
 * 64 KiB, then by doubling again; alone, it doubles from the start. */
static void test_a_parent_grows_by_one_size(void **state)
{
    fixture *f = *state;
    mr_stats s;
    /* alone: 4, 8, 16, 32 KiB for 40 KB, a newest block mostly tail */
    mr_arena *lone = arena_under(NULL, &f->u.base, "alone");
    for (int i = 0; i < 100; i++)
        assert_non_null(mr_arena_alloc(lone, 400));
    mr_arena_stats(lone, &s);
    assert_true(s.held - s.in_use > 12 << 10);
    mr_arena_destroy(lone);
    /* with a child: blocks of 4 KiB, the tail less than one */
    mr_arena *conn = arena_under(NULL, &f->u.base, "connection");
    mr_arena *req = arena_under(mr_arena_node(conn), NULL, "request");
    for (int i = 0; i < 100; i++)
        assert_non_null(mr_arena_alloc(conn, 400));
    mr_arena_stats(conn, &s);
    const size_t header = s.held - 10 * (size_t)4096;
    assert_int_equal(s.upstream_allocations, 11); /* its header and 10 blocks */
    assert_true(header < 1024);
    assert_true(s.held - s.in_use < 4096 + header);
    /* past 64 KiB it doubles again: 16 blocks of 4 KiB, then 8, 16 KiB */
    for (int i = 0; i < 100; i++)
        assert_non_null(mr_arena_alloc(conn, 400));
    mr_arena_stats(conn, &s);
    assert_int_equal(s.upstream_allocations, 1 + 16 + 2);
    assert_int_equal(s.held, header + 16 * (size_t)4096 + (8 + 16) * (size_t)1024);
    assert_true(mr_arena_check(conn));
    mr_arena_destroy(req);
    mr_arena_destroy(conn);
    assert_int_equal(f->v.count, 0);
}

/* A server's connections and their requests over pages that go back to
 * the system when freed (a use of a freed block faults): connections that
 * live a while, requests of 2-30 KB, a connection closing now and then.
 * The server's share fills, so a connection's first spare block can find
 * no room and go upstream (it once was read after that).  After every
 * request the tree holds every byte the upstream has out, and nothing is
 * reported. */
static void test_spares_past_the_keepers_share(void **state)
{
    fixture *f = *state;
    mr_counting *up = mr_counting_create(mr_page_resource());
    assert_non_null(up);
    mr_arena *root = mr_arena_create(&(mr_arena_options){.upstream = mr_counting_resource(up), .name = "server"});
    assert_non_null(root);
    mr_node *r = mr_arena_node(root);
    enum { CONNS = 8 };
    mr_arena *conn[CONNS];
    for (int c = 0; c < CONNS; c++)
        conn[c] = arena_under(r, NULL, "connection");
    uint64_t seed = 42;
    mr_stats s, us;
    for (int i = 0; i < 4000; i++) {
        int c = (int)(mrt_rand(&seed) % CONNS);
        mr_arena *req = arena_under(mr_arena_node(conn[c]), NULL, "request");
        int n = 4 + (int)(mrt_rand(&seed) % 60);
        for (int j = 0; j < n; j++)
            assert_non_null(mr_arena_alloc(req, 16 + mrt_rand(&seed) % 496));
        assert_non_null(mr_arena_alloc(conn[c], 32 + mrt_rand(&seed) % 224));
        mr_arena_destroy(req);
        if (mrt_rand(&seed) % 64 == 0) {
            mr_arena_destroy(conn[c]);
            conn[c] = arena_under(r, NULL, "connection");
        }
        mr_node_stats(r, true, &s);
        mr_counting_stats(up, &us);
        assert_int_equal(s.held, us.held);
    }
    assert_true(mr_arena_check(root));
    mr_arena_destroy(root);
    mr_counting_stats(up, &us);
    assert_int_equal(us.held, 0);
    mr_counting_destroy(up);
    assert_int_equal(f->v.count, 0);
}

/* What is not kept: an arena over a buffer, one with its own upstream, the
 * children of a dying parent; a block pool's trim returns what it kept. */
static void test_what_a_parent_does_not_keep(void **state)
{
    fixture *f = *state;
    mrt_upstream other;
    mrt_upstream_init(&other);
    mr_blocks *b = mr_blocks_create(&(mr_blocks_options){.upstream = &f->u.base});
    mr_node *nb = mr_blocks_node(b);
    alignas(64) unsigned char buf[4096];
    mr_arena *in_buf = mr_arena_create(&(mr_arena_options){.parent = nb, .buffer = buf, .buffer_size = sizeof buf});
    assert_non_null(in_buf);
    mr_arena_destroy(in_buf);
    mr_arena *own = arena_under(nb, &other.base, "own");
    assert_non_null(mr_arena_alloc(own, 10));
    mr_arena_destroy(own);
    mrt_assert_balanced(&other);
    mr_stats s;
    mr_node_stats(nb, false, &s);
    size_t held = s.held;
    mr_arena *kept = arena_under(nb, NULL, "kept");
    assert_non_null(mr_arena_alloc(kept, 10));
    mr_arena_destroy(kept);
    mr_node_stats(nb, false, &s);
    assert_true(s.held > held);
    assert_true(mr_blocks_trim(b) > 0);
    mr_node_stats(nb, false, &s);
    assert_int_equal(s.held, held);
    mr_blocks_destroy(b);
    mrt_upstream_fini(&other);
    assert_int_equal(f->v.count, 0);
}

/* The children a parent keeps are on its books: its own stats (held, and
 * peak_held at least held), its node's, the report's grand total -- after a
 * reset that kills the child as after its destroy; its release gives them
 * back.  An arena keeper, and a thread-safe pool that keeps its own. */
static void assert_books(fixture *f, mr_node *n, const mr_stats *own)
{
    mr_stats s;
    mr_node_stats(n, false, &s);
    assert_int_equal(own->held, f->u.bytes);
    assert_true(own->peak_held >= own->held);
    assert_int_equal(s.held, f->u.bytes);
    char line[512];
    FILE *out = tmpfile();
    assert_non_null(out);
    assert_int_equal(mr_report(n, out, &(mr_report_options){.format = MR_REPORT_JSON}), 1);
    rewind(out);
    size_t total = 0;
    while (fgets(line, sizeof line, out) != NULL) {
        const char *t = strstr(line, "\"kind\":\"total\"");
        if (t != NULL)
            assert_int_equal(sscanf(strstr(line, "\"total_bytes\":"), "\"total_bytes\":%zu", &total), 1);
    }
    fclose(out);
    assert_int_equal(total, f->u.bytes);
}

static void test_kept_children_are_on_the_keepers_books(void **state)
{
    fixture *f = *state;
    mr_stats s;
    mr_arena *parent = arena_under(NULL, &f->u.base, "parent");
    mr_node *np = mr_arena_node(parent);
    mr_arena *child = arena_under(np, NULL, "child");
    assert_non_null(mr_arena_alloc(child, 100));
    mr_arena_reset(parent); /* the child dies and is kept */
    assert_null(mr_node_first_child(np));
    mr_arena_stats(parent, &s);
    assert_int_equal(s.in_use, 0);
    assert_books(f, np, &s);
    child = arena_under(np, NULL, "child"); /* the kept one, again: off the keeper's books, on its own */
    mr_arena_stats(parent, &s);
    mr_stats sc;
    mr_arena_stats(child, &sc);
    assert_int_equal(s.held + sc.held, f->u.bytes);
    mr_arena_destroy(child);
    mr_arena_stats(parent, &s);
    assert_books(f, np, &s);
    mr_arena_release(parent); /* gives the kept children back */
    mr_arena_stats(parent, &s);
    assert_int_equal(s.held, f->u.bytes);
    mr_arena_destroy(parent);
    assert_int_equal(f->u.bytes, 0);

    mr_pools *ts = mr_pools_create(&(mr_pools_options){.upstream = &f->u.base, .thread_safe = true});
    mr_node *nt = mr_pools_node(ts);
    child = arena_under(nt, NULL, "child");
    assert_non_null(mr_arena_alloc(child, 100));
    mr_arena_destroy(child);
    mr_pools_stats(ts, &s);
    assert_books(f, nt, &s);
    mr_pools_destroy(ts);
    assert_int_equal(f->u.bytes, 0);
    assert_int_equal(f->v.count, 0);
}

/* ======================================================================
 * stats and reports
 * ====================================================================== */

static void test_stats_of_a_subtree_count_each_byte_once(void **state)
{
    fixture *f = *state;
    mr_pools *p = mr_pools_create(&(mr_pools_options){.upstream = &f->u.base, .name = "pool"});
    mr_node *np = mr_pools_node(p);
    assert_non_null(mr_pools_alloc(p, 100, 8));
    /* a child over its parent's resource view: inside the parent's figures */
    mr_arena *over = mr_arena_create(&(mr_arena_options){.upstream = mr_pools_resource(p), .parent = np,
                                                         .block_size = 1024, .max_block_size = 1024});
    assert_non_null(over);
    assert_non_null(mr_arena_alloc(over, 500));
    mr_arena *beside = arena_under(np, NULL, "beside");
    assert_non_null(mr_arena_alloc(beside, 700));
    mr_stats sum, sp, sb;
    mr_node_stats(np, true, &sum);
    mr_node_stats(np, false, &sp);
    mr_node_stats(mr_arena_node(beside), false, &sb);
    assert_int_equal(sum.held, sp.held + sb.held);
    assert_int_equal(sum.held, f->u.bytes); /* every byte from upstream, once */
    assert_int_equal(sum.in_use, sp.in_use + sb.in_use);
    mr_pools_destroy(p);
    assert_int_equal(f->v.count, 0);
}

static bool starts_with(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

/* Reads what f holds into buf. */
static void slurp(FILE *fp, char *buf, size_t cap)
{
    rewind(fp);
    size_t n = fread(buf, 1, cap - 1, fp);
    buf[n] = '\0';
}

static void test_text_report_in_postgresql_form(void **state)
{
    fixture *f = *state;
    mr_arena *root = arena_under(NULL, &f->u.base, "TopMemoryContext");
    mr_node *r = mr_arena_node(root);
    assert_non_null(mr_arena_alloc(root, 100));
    mr_pools *cache = mr_pools_create(&(mr_pools_options){.parent = r, .name = "cache"});
    assert_non_null(mr_pools_alloc(cache, 48, 8));
    for (int i = 0; i < 5; i++) {
        mr_arena *q = arena_under(mr_pools_node(cache), NULL, "query\tcontext"); /* a tab: shown as a space */
        assert_non_null(mr_arena_alloc(q, 1000));
    }
    FILE *fp = tmpfile();
    assert_non_null(fp);
    assert_int_equal(mr_report(r, fp, &(mr_report_options){.max_children = 3}), 5);
    char buf[8192];
    slurp(fp, buf, sizeof buf);
    fclose(fp);
    /* one line a node, two spaces a level, then the summary and the total */
    char *line = strtok(buf, "\n");
    size_t total, blocks, freeb, chunks, used;
    assert_int_equal(sscanf(line, "TopMemoryContext: arena %zu total in %zu blocks; %zu free (%zu chunks); %zu used",
                            &total, &blocks, &freeb, &chunks, &used),
                     5);
    assert_int_equal(total, freeb + used);
    assert_true(used >= 100);
    line = strtok(NULL, "\n");
    assert_true(starts_with(line, "  cache: pools "));
    for (int i = 0; i < 3; i++) {
        line = strtok(NULL, "\n");
        assert_true(starts_with(line, "    query context: arena "));
    }
    line = strtok(NULL, "\n");
    size_t more;
    assert_int_equal(sscanf(line, "    %zu more child contexts containing %zu total in %zu blocks; %zu free (%zu chunks); "
                                  "%zu used",
                            &more, &total, &blocks, &freeb, &chunks, &used),
                     6);
    assert_int_equal(more, 2);
    assert_true(used >= 2000);
    line = strtok(NULL, "\n");
    assert_int_equal(sscanf(line, "Grand total: %zu bytes in %zu blocks; %zu free (%zu chunks); %zu used", &total,
                            &blocks, &freeb, &chunks, &used),
                     5);
    assert_int_equal(total, f->u.bytes);
    assert_int_equal(blocks, mrt_upstream_live(&f->u));
    assert_int_equal(total, freeb + used);
    assert_null(strtok(NULL, "\n"));
    /* below max_depth: summed into one line too */
    fp = tmpfile();
    assert_int_equal(mr_report(r, fp, &(mr_report_options){.max_depth = 1}), 2);
    slurp(fp, buf, sizeof buf);
    fclose(fp);
    assert_non_null(strstr(buf, "\n    5 more child contexts containing "));
    mr_arena_destroy(root);
    assert_int_equal(f->v.count, 0);
}

static void test_json_report_one_object_a_line(void **state)
{
    fixture *f = *state;
    mr_arena *root = arena_under(NULL, &f->u.base, "root \"quoted\"");
    mr_node *r = mr_arena_node(root);
    mr_objpool *o = mr_objpool_create(32, 8, &(mr_objpool_options){.parent = r});
    (void)mr_objpool_alloc(o);
    mr_arena *c = arena_under(mr_objpool_node(o), NULL, "c");
    (void)mr_arena_alloc(c, 50);
    FILE *fp = tmpfile();
    assert_int_equal(mr_report(r, fp, &(mr_report_options){.format = MR_REPORT_JSON}), 3);
    char buf[8192];
    slurp(fp, buf, sizeof buf);
    fclose(fp);
    char *l1 = strtok(buf, "\n"), *l2 = strtok(NULL, "\n"), *l3 = strtok(NULL, "\n"), *l4 = strtok(NULL, "\n");
    assert_non_null(l4);
    assert_null(strtok(NULL, "\n"));
    assert_true(starts_with(l1, "{\"id\":1,\"parent\":null,\"level\":0,\"name\":\"root \\\"quoted\\\"\",\"kind\":\"arena\","));
    assert_true(starts_with(l2, "{\"id\":2,\"parent\":1,\"level\":1,\"name\":\"objpool\",\"kind\":\"objpool\","));
    assert_true(starts_with(l3, "{\"id\":3,\"parent\":2,\"level\":2,\"name\":\"c\",\"kind\":\"arena\","));
    for (char *l = l1; l != l4; l = l == l1 ? l2 : l == l2 ? l3 : l4) {
        const char *fields[] = {"\"total_bytes\":", "\"total_nblocks\":", "\"free_bytes\":", "\"free_chunks\":",
                                "\"used_bytes\":", "\"peak_bytes\":", "\"allocations\":"};
        for (size_t k = 0; k < sizeof fields / sizeof *fields; k++)
            assert_non_null(strstr(l, fields[k]));
        assert_true(l[strlen(l) - 1] == '}');
    }
    size_t nodes, total;
    assert_int_equal(sscanf(l4, "{\"kind\":\"total\",\"nodes\":%zu,\"total_bytes\":%zu,", &nodes, &total), 2);
    assert_int_equal(nodes, 3);
    assert_int_equal(total, f->u.bytes);
    mr_arena_destroy(root);
}

/* The report takes nothing from the heap (an out-of-memory path can call
 * it): memres makes no upstream call, and glibc's heap in use is the same
 * after it when the stream has a buffer of its own. */
static void test_report_allocates_nothing(void **state)
{
    fixture *f = *state;
    mr_arena *root = arena_under(NULL, &f->u.base, "root");
    for (int i = 0; i < 200; i++)
        arena_under(mr_arena_node(root), NULL, "c");
    FILE *fp = fopen("/dev/null", "w");
    assert_non_null(fp);
    static char iobuf[1 << 16];
    setvbuf(fp, iobuf, _IOFBF, sizeof iobuf);
    fputc('\n', fp); /* stdio's own first-use work */
    size_t calls = f->u.calls;
#ifdef __GLIBC__
    struct mallinfo2 before = mallinfo2();
#endif
    assert_int_equal(mr_report(mr_arena_node(root), fp, NULL), 101); /* 100 children shown */
    assert_int_equal(mr_report(mr_arena_node(root), fp, &(mr_report_options){.format = MR_REPORT_JSON}), 101);
#ifdef __GLIBC__
    struct mallinfo2 after = mallinfo2();
    assert_int_equal(after.uordblks, before.uordblks);
#endif
    assert_int_equal(f->u.calls, calls);
    fclose(fp);
    mr_arena_destroy(root);
}

/* ======================================================================
 * misuse
 * ====================================================================== */

/* A child kept by its parent is dead: its handle is refused in every build
 * (the header is still memres's), reported in debug builds. */
static void test_a_dead_handle_is_refused(void **state)
{
    fixture *f = *state;
    mr_arena *root = arena_under(NULL, &f->u.base, "root");
    mr_arena *c = arena_under(mr_arena_node(root), NULL, "c");
    mr_arena_destroy(c); /* kept by root: the memory stays */
    mr_arena_reset(c);
    mr_arena_release(c);
    mr_arena_destroy(c); /* not kept twice */
    mr_node_destroy(mr_arena_node(c));
    mrt_assert_reported(&f->v, 4);
    errno = 0;
    assert_int_equal(mr_node_set_parent(mr_arena_node(c), NULL), -1);
    assert_int_equal(errno, EINVAL);
    errno = 0;
    assert_null(mr_arena_create(&(mr_arena_options){.parent = mr_arena_node(c)}));
    assert_int_equal(errno, EINVAL);
    mrt_assert_reported(&f->v, 6);
    /* the next child reuses it once, and only once */
    mr_arena *n1 = arena_under(mr_arena_node(root), NULL, "n1");
    mr_arena *n2 = arena_under(mr_arena_node(root), NULL, "n2");
    assert_ptr_equal(n1, c);
    assert_true(n2 != n1);
    assert_true(mr_arena_check(root));
    mr_arena_destroy(root);
}

static mr_node *unwinding;
static void make_child_of_unwinding(void *arg)
{
    errno = 0;
    *(mr_arena **)arg = mr_arena_create(&(mr_arena_options){.parent = unwinding});
    if (*(mr_arena **)arg == NULL)
        *(mr_arena **)arg = (mr_arena *)(uintptr_t)errno;
}

static void test_a_child_made_during_its_parents_cascade_is_refused(void **state)
{
    fixture *f = *state;
    for (int how = 0; how < 2; how++) {
        mr_arena *root = arena_under(NULL, &f->u.base, "root");
        unwinding = mr_arena_node(root);
        mr_arena *got = NULL;
        assert_int_equal(mr_arena_defer(root, make_child_of_unwinding, &got), 0);
        if (how == 0) {
            mr_arena_reset(root);
            mr_arena_destroy(root);
        } else {
            mr_arena_destroy(root);
        }
        assert_ptr_equal(got, (mr_arena *)(uintptr_t)EINVAL);
        mrt_assert_reported(&f->v, how + 1);
        mrt_assert_balanced(&f->u);
    }
}

static mr_arena *victim;
static void destroy_victim(void *arg)
{
    (void)arg;
    mr_arena_destroy(victim);
}
static void reset_victim(void *arg)
{
    (void)arg;
    mr_arena_reset(victim);
}

/* A cleanup that destroys (or resets) its own arena, or a node above it,
 * while that arena's cascade runs: ignored, reported; the cascade goes on. */
static void test_a_cleanup_cannot_free_what_runs_it(void **state)
{
    fixture *f = *state;
    static const char x = 'x';
    int expected = 0;
    for (int how = 0; how < 4; how++) {
        mr_arena *root = arena_under(NULL, &f->u.base, "root");
        mr_arena *child = arena_under(mr_arena_node(root), NULL, "child");
        assert_non_null(mr_arena_alloc(child, 100));
        victim = how % 2 == 0 ? root : child;
        assert_int_equal(mr_arena_defer(child, how < 2 ? destroy_victim : reset_victim, NULL), 0);
        assert_int_equal(mr_arena_defer(child, note, (void *)&x), 0);
        order_reset();
        if (how == 0 || how == 2)
            mr_arena_reset(child); /* its cleanup destroys / resets root, above it */
        else
            mr_arena_destroy(root); /* the child's cleanup destroys / resets the child */
        assert_string_equal(order, "x");
        mrt_assert_reported(&f->v, ++expected);
        if (how == 0 || how == 2) {
            assert_ptr_equal(mr_node_parent(mr_arena_node(child)), mr_arena_node(root));
            assert_true(mr_arena_check(root) && mr_arena_check(child));
            mr_arena_destroy(root);
        }
        mrt_assert_balanced(&f->u);
    }
}

static void test_the_shared_block_pool_is_a_permanent_root(void **state)
{
    fixture *f = *state;
    mr_node *shared = mr_blocks_node(mr_blocks_shared());
    assert_string_equal(mr_node_name(shared), "mr_blocks_shared");
    assert_string_equal(mr_node_kind(shared), "blocks");
    mr_arena *c = arena_under(shared, &f->u.base, "per-thread");
    assert_ptr_equal(mr_node_parent(mr_arena_node(c)), shared);
    mr_node_destroy(shared); /* ignored */
    mrt_assert_reported(&f->v, 1);
    errno = 0;
    mr_arena *r = arena_under(NULL, &f->u.base, "r");
    assert_int_equal(mr_node_set_parent(shared, mr_arena_node(r)), -1);
    assert_int_equal(errno, EINVAL);
    mr_blocks_destroy(mr_blocks_shared()); /* documented no-op, not reported */
    mrt_assert_reported(&f->v, 2);
    assert_ptr_equal(mr_node_parent(mr_arena_node(c)), shared);
    mr_arena_destroy(c);
    mr_arena_destroy(r);
    mr_node_destroy(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        tree_test(test_names_default_to_the_kind),
        tree_test(test_node_of_a_resource_view),
        tree_test(test_children_are_listed_newest_first),
        tree_test(test_destroy_frees_the_subtree),
        tree_test(test_reset_and_release_destroy_the_children),
        tree_test(test_children_and_cleanups_unwind_newest_first),
        tree_test(test_rewind_destroys_the_children_made_after_the_mark),
        tree_test(test_merge_moves_the_children),
        tree_test(test_a_child_takes_its_parents_upstream_not_its_memory),
        tree_test(test_a_failed_create_leaves_the_parent_unchanged),
        tree_test(test_set_parent_moves_a_subtree),
        tree_test(test_a_parent_keeps_dead_children_for_reuse),
        tree_test(test_kept_children_are_on_the_keepers_books),
        tree_test(test_a_keeper_shares_a_parents_spare_blocks),
        tree_test(test_spares_past_the_keepers_share),
        tree_test(test_a_parent_grows_by_one_size),
        tree_test(test_what_a_parent_does_not_keep),
        tree_test(test_stats_of_a_subtree_count_each_byte_once),
        tree_test(test_text_report_in_postgresql_form),
        tree_test(test_json_report_one_object_a_line),
        tree_test(test_report_allocates_nothing),
        tree_test(test_a_dead_handle_is_refused),
        tree_test(test_a_child_made_during_its_parents_cascade_is_refused),
        tree_test(test_a_cleanup_cannot_free_what_runs_it),
        tree_test(test_the_shared_block_pool_is_a_permanent_root),
    };
    return cmocka_run_group_tests_name("tree", tests, NULL, NULL);
}
