/* SPDX-License-Identifier: MIT */
/* src/arena_node.c -- the arena in the tree of lifetimes (memres/tree.h,
 * src/tree.h): the children a parent keeps for reuse, the node's
 * operations; and the arena's stats and walker, which the reports use.
 *
 * Kept children.  A child arena that dies goes, with its header and the
 * first blocks of its chain (up to MR_TREE_KEEP_BYTES with the header; the
 * rest is released), to the kept list of its keeper (keeper_of: the parent,
 * or an ancestor of the same thread over the same upstream): no dedicated
 * block, no cleanup, growth restarting after the last kept block.
 * mr_arena_create under any node of that keeper with the same options takes
 * it back (reuse): a new id, fresh counts, no upstream call.  Only an arena
 * made with its parent's upstream and no buffer is kept: that upstream
 * outlives the keeper, and so the kept list.
 */
#include <string.h>

#include "arena_impl.h"

/* ---- kept children ---- */

/* How far up a dead child may go to be kept. */
#define KEEPER_DEPTH 8

/* Who keeps the dead children made under p over the upstream up (p's own):
 * the highest of p's ancestors, at most KEEPER_DEPTH up, reached through
 * ancestors of this thread (no tree lock) over the same upstream and not
 * dying -- so that the children of every connection of a server go to the
 * server, and the next request of any connection takes the arena the last
 * one left, warm.  The keeper's upstream is up, which outlives the keeper
 * and so its kept list.  A shared p (with a tree lock) keeps its own. */
static inline mr_node *keeper_of(mr_node *p, const mr_resource *up)
{
    mr_node *k = p;
    if (p->lock == NULL)
        for (int i = 0; i < KEEPER_DEPTH; i++) {
            mr_node *q = k->parent;
            if (q == NULL || q->upstream != up || q->lock != NULL ||
                (q->state & ~MRI_NODE_UNWINDING) != MRI_NODE_LIVE)
                break;
            k = q;
        }
    return k;
}

/* Was k made with the options o asks for, over up? */
static inline bool made_as(const mr_arena *k, const mr_arena_options *o, const mr_resource *up)
{
    const struct made *m = &k->made;
    return k->upstream == up && m->block_size == o->block_size && m->max_block_size == o->max_block_size &&
           m->limit == o->limit && m->huge_pages == o->huge_pages;
}

/* k, just taken from its keeper's list (the keeper's lock held, if any),
 * as a fresh child of p: its blocks as if just taken, fresh counts, a new
 * id. */
static inline __attribute__((always_inline)) mr_arena *revive(mr_arena *k, mr_node *keeper, mr_node *p,
                                                              const char *name)
{
    keeper->nkept--;
    mri_node_revive(&k->node, name);
    mri_node_link_locked(&k->node, p);
    k->ledger.peak_held = k->ledger.held;
    k->ledger.upstream_allocations -= k->ledger.upstream_deallocations;
    k->ledger.upstream_deallocations = 0;
    k->hot.allocations = 0;
    k->hot.id = mri_arena_new_id();
    return k;
}

/* An arena the keeper of p kept, made with the options o over up, revived
 * as a child of p; NULL when it keeps none. */
static MR_NOINLINE mr_arena *reuse(mr_node *p, const mr_arena_options *o, const mr_resource *up)
{
    mr_node *keeper = keeper_of(p, up); /* p itself when p has a lock */
    mr_arena *a = NULL;
    mri_node_lock(keeper);
    for (mr_node **link = &keeper->kept; *link != NULL; link = &(*link)->older) {
        mr_arena *k = mri_container_of(*link, mr_arena, node);
        if (made_as(k, o, up)) {
            *link = k->node.older;
            a = revive(k, keeper, p, o->name);
            break;
        }
    }
    mri_node_unlock(keeper);
    if (a != NULL)
        MRI_WALK_NOW(a, mri_arena_walk);
    return a;
}

MR_API mr_arena *mr_arena_create(const mr_arena_options *opts)
{
    mr_node *p;
    if (opts != NULL && (p = opts->parent) != NULL && opts->buffer == NULL && p->state == MRI_NODE_LIVE) {
        const mr_resource *up = opts->upstream != NULL ? opts->upstream : p->upstream;
        if (p->lock == NULL) { /* the per-request child: the newest one kept, warm */
            mr_node *keeper = keeper_of(p, up), *k = keeper->kept;
            if (MR_LIKELY(k != NULL && made_as(mri_container_of(k, mr_arena, node), opts, up) && MR_DEBUG < 3)) {
                keeper->kept = k->older;
                return revive(mri_container_of(k, mr_arena, node), keeper, p, opts->name);
            }
            if (k == NULL)
                return mri_arena_create_new(opts);
        }
        mr_arena *a = reuse(p, opts, up);
        if (a != NULL)
            return a;
    }
    return mri_arena_create_new(opts);
}

/* Frees all but the first blocks of a's chain, up to MR_TREE_KEEP_BYTES
 * with the header. */
static MR_NOINLINE void trim(mr_arena *a)
{
    mri_arena_free_list(a, a->hot.big);
    mri_arena_free_list(a, a->big_spare);
    a->hot.big = a->big_spare = NULL;
    size_t bytes = a->header_size;
    block **link = &a->head, *last = NULL;
    while (*link != NULL && (*link)->size <= MR_TREE_KEEP_BYTES - bytes) {
        bytes += (*link)->size;
        last = *link;
        link = &last->next;
    }
    mri_arena_free_list(a, *link);
    *link = NULL;
    a->next_size = last != NULL ? mri_arena_next_growth(last->size, a->max_block_size) : a->block_size;
    if (a->next_size < a->block_size)
        a->next_size = a->block_size;
}

/* Rewinds a for its keeper to keep: no cleanup, no child, every block
 * spare, the bump pointers at the first block; at most MR_TREE_KEEP_BYTES
 * held, header included (the first blocks of the chain). */
static void keep(mr_arena *a)
{
    if (MR_UNLIKELY(a->ledger.held > MR_TREE_KEEP_BYTES))
        trim(a);
    while (a->hot.big != NULL) { /* dedicated blocks in use become spare, as on reset */
        block *b = a->hot.big;
        a->hot.big = b->next;
        b->next = a->big_spare;
        a->big_spare = b;
    }
    a->hot.big_seq = 0;
    if (MRI_TRACKING) {
        for (block *b = a->head; b != NULL; b = b->next)
            mri_track_poison(data_of(b), b->size - HDR);
        for (block *b = a->big_spare; b != NULL; b = b->next)
            mri_track_poison(data_of(b), b->size - HDR);
    }
    restart(a); /* (cleanup_seq goes on counting: the numbers are relative) */
}

/* node_ops.free_kept: a kept child (never over a caller's buffer) and its
 * memory. */
static void node_free_kept(mr_node *n)
{
    mr_arena *a = mri_container_of(n, mr_arena, node);
    mri_arena_free_blocks(a);
    mri_node_free_header(a->upstream, a, a->header_size, alignof(mr_arena), &a->ledger);
}

/* The tree's release tail (src/tree.h), the blocks gone: the header back
 * upstream, or the caller's buffer no longer lent. */
static void release(mr_arena *a)
{
    void *buffer = a->buffer;
    size_t buffer_size = a->buffer_size;
    mri_node_release(&a->node, a, a->header_size, alignof(mr_arena), &a->ledger);
    if (buffer != NULL) {
        mri_track_unpoison(buffer, buffer_size);
        mri_track_unlend(buffer);
    }
}

/* node_ops.free: the children and cleanups are gone.  Kept (keeper_of)
 * when made with no buffer over its parent's upstream, the keeper not
 * dying and with room. */
void mri_arena_node_free(mr_node *n)
{
    mr_arena *a = mri_container_of(n, mr_arena, node);
    if (n->kept != NULL)
        mri_node_drop_kept(n);
    mr_node *p = n->parent, *keeper = NULL;
    if (p != NULL && a->buffer == NULL && a->upstream == p->upstream) {
        keeper = keeper_of(p, a->upstream); /* (a dying parent's children may go above it) */
        if ((keeper->state & MRI_NODE_DOOMED) != 0 ||
            (keeper->lock == NULL && keeper->nkept >= MR_TREE_KEEP_CHILDREN))
            keeper = NULL; /* (a shared keeper's count is read under its lock) */
    }
    if (keeper == NULL) {
        mri_arena_free_blocks(a);
        release(a);
        return;
    }
    keep(a);
    if (!mri_node_leave(n, keeper)) /* refused under the parent's lock: freed as a kept child is */
        node_free_kept(n);
}

MR_API void mr_arena_destroy(mr_arena *a)
{
    if (a == NULL)
        return;
    mr_node *n = &a->node, *p = n->parent;
    /* The per-request child: nothing to unwind, nothing but its chain to
     * keep, a parent of this thread.  (Its parent is not dying: no cleanup
     * runs on this thread, and only a cleanup runs user code in a
     * cascade.) */
    if (MR_LIKELY(p != NULL && n->child == NULL && a->hot.cleanups == NULL && n->kept == NULL && a->hot.big == NULL &&
                  n->state == MRI_NODE_LIVE && mri_node_frames == NULL && p->lock == NULL && a->buffer == NULL &&
                  a->upstream == p->upstream && a->ledger.held <= MR_TREE_KEEP_BYTES && !MRI_TRACKING &&
                  MR_DEBUG < 3)) {
        mr_node *keeper = keeper_of(p, a->upstream);
        if (MR_LIKELY(keeper->nkept < MR_TREE_KEEP_CHILDREN)) {
            restart(a);
            mri_node_die(n);
            mri_node_unlink_locked(n);
            mri_node_keep(n, keeper);
            return;
        }
    }
    if (!mri_node_enter(n, "mr_arena_destroy"))
        return;
    if (n->child == NULL && a->hot.cleanups == NULL)
        mri_arena_node_free(n); /* nothing to unwind */
    else
        mri_node_destroy_checked(n);
}


MR_API mr_node *mr_arena_node(mr_arena *a) { return &a->node; }

/* ---- statistics and checking ---- */

MR_API void mr_arena_stats(const mr_arena *a, mr_stats *out)
{
    size_t in_use = 0;
    if (a->hot.cur != NULL) {
        for (const block *b = a->head; b != NULL; b = b->next) {
            if (b == a->hot.cur) {
                in_use += (a->hot.ptr - data_of(b)) + (a->cur_end - a->hot.end);
                break;
            }
            in_use += (b->top - data_of(b)) + (end_of(b) - b->low);
        }
    }
    for (const block *b = a->hot.big; b != NULL; b = b->next)
        in_use += (b->top - data_of(b)) + (end_of(b) - b->low);
    mri_ledger_stats(&a->ledger, out);
    out->in_use = in_use;
    out->allocations = a->hot.allocations;
}

/* ---- the node (src/tree.h) ---- */

static void node_figures(const mr_node *n, struct mri_figures *f)
{
    const mr_arena *a = mri_container_of(n, mr_arena, node);
    mr_arena_stats(a, &f->s);
    f->blocks = f->s.upstream_allocations - f->s.upstream_deallocations;
    f->free_chunks = 0; /* no free list */
}

static void node_held(const mr_node *n, size_t *bytes, size_t *blocks)
{
    const mr_arena *a = mri_container_of(n, mr_arena, node);
    *bytes = a->ledger.held;
    *blocks = a->ledger.upstream_allocations - a->ledger.upstream_deallocations;
}

static size_t node_cleanup_top(const mr_node *n)
{
    const cleanup *c = mri_container_of(n, mr_arena, node)->hot.cleanups;
    return c != NULL ? c->seq : 0;
}

static void node_cleanup_run(mr_node *n)
{
    mr_arena *a = mri_container_of(n, mr_arena, node);
    cleanup *c = a->hot.cleanups;
    a->hot.cleanups = c->prev; /* popped first: the cleanup may look at the arena */
    c->fn(c->arg);
}

static mr_node *node_of(mr_resource *r)
{
    mr_arena *a = mr_arena_of_resource(r);
    return a != NULL ? &a->node : NULL;
}

const struct mri_node_ops mri_arena_node_ops = {
    .kind = "arena",
    .node_of = node_of,
    .free = mri_arena_node_free,
    .free_kept = node_free_kept,
    .figures = node_figures,
    .held = node_held,
    .cleanup_top = node_cleanup_top,
    .cleanup_run = node_cleanup_run,
};

#define CHECK(cond, ...) MRI_VERIFY(cond, "mr_arena_check", (const void *)a, __VA_ARGS__)

/* Checks a list of blocks: `filled` says whether the blocks before the
 * current one (the whole list when there is no current one in it) hold
 * fill levels to check. */
static bool check_list(const mr_arena *a, const block *b, size_t *held, size_t *owned, bool filled, size_t *steps)
{
    for (; b != NULL; b = b->next) {
        ++*steps;
        CHECK(b->size >= HDR + ALIGN, "block %p has size %zu", (const void *)b, b->size);
        if (b == a->hot.cur)
            filled = false; /* the current block's levels are hot.ptr / hot.end; spares after it */
        else if (filled)
            CHECK(b->top >= data_of(b) && b->top <= b->low && b->low <= end_of(b),
                  "block %p: fill %#jx and strings %#jx outside it", (const void *)b, (uintmax_t)b->top,
                  (uintmax_t)b->low);
        if (owned_of(b)) {
            *held += b->size;
            (*owned)++;
        }
    }
    return true;
}

/* mr_arena_check, counting its work into *steps (MRI_WALK). */
bool mri_arena_walk(const mr_arena *a, size_t *steps)
{
    if (a == NULL) {
        mri_verify_report("mr_arena_check", a, "arena is NULL");
        return false;
    }
    size_t held = a->header_size, owned = a->header_size != 0;
    CHECK(a->hot.ptr <= a->hot.end, "ptr %#jx beyond end %#jx", (uintmax_t)a->hot.ptr, (uintmax_t)a->hot.end);
    if (a->hot.cur != NULL) {
        CHECK(a->hot.mark == 0 || (a->hot.mark >= data_of(a->hot.cur) && a->hot.mark <= end_of(a->hot.cur)),
              "newest mark %#jx outside the current block", (uintmax_t)a->hot.mark);
        CHECK(mri_arena_in_use_block(a, a->hot.cur), "current block %p not in the chain", (const void *)a->hot.cur);
        CHECK(a->hot.ptr >= data_of(a->hot.cur) && a->hot.end <= end_of(a->hot.cur),
              "bump pointers outside the current block");
        CHECK(a->hot.ptr % ALIGN == 0, "bump pointer %#jx misaligned", (uintmax_t)a->hot.ptr);
        CHECK(a->cur_end == end_of(a->hot.cur), "cached end %#jx of the current block, not %#jx",
              (uintmax_t)a->cur_end, (uintmax_t)end_of(a->hot.cur));
    } else {
        CHECK(a->hot.ptr == a->hot.end, "no current block but free space");
    }
    if (!check_list(a, a->head, &held, &owned, a->hot.cur != NULL, steps) ||
        !check_list(a, a->hot.big, &held, &owned, true, steps) ||
        !check_list(a, a->big_spare, &held, &owned, false, steps))
        return false;
    *steps += a->hot.big_seq;
    size_t seq = a->hot.big_seq;
    for (const block *b = a->hot.big; b != NULL; b = b->next, seq--)
        CHECK(seq_of(b) == seq && seq != 0, "dedicated block %p numbered %zu, expected %zu", (const void *)b,
              seq_of(b), seq);
    CHECK(seq == 0, "%zu dedicated blocks counted, fewer on the list", a->hot.big_seq);
    /* cleanups and children: numbered below cleanup_seq, falling down each
     * list (children destroyed on their own leave gaps) */
    seq = a->hot.cleanup_seq + 1;
    for (const cleanup *c = a->hot.cleanups; c != NULL; c = c->prev, ++*steps) {
        CHECK(c->seq < seq && c->seq != 0, "cleanup %p numbered %zu, not below %zu", (const void *)c, c->seq, seq);
        seq = c->seq;
    }
    seq = a->hot.cleanup_seq + 1;
    for (const mr_node *c = a->node.child; c != NULL; c = c->older, ++*steps) {
        CHECK(c->seq < seq && c->seq != 0, "child %p numbered %zu, not below %zu", (const void *)c, c->seq, seq);
        CHECK(c->parent == &a->node && mri_node_live(c), "child %p: parent %p, state %#x", (const void *)c,
              (const void *)c->parent, c->state);
        seq = c->seq;
    }
    if (!mri_ledger_verify(&a->ledger, "mr_arena_check", a, held, owned))
        return false;
    CHECK(a->next_size >= a->block_size && a->next_size <= a->max_block_size, "growth size %zu outside [%zu, %zu]",
          a->next_size, a->block_size, a->max_block_size);
    return true;
}

MR_API bool mr_arena_check(const mr_arena *a)
{
    size_t steps = 0;
    return mri_arena_walk(a, &steps);
}
