/* SPDX-License-Identifier: MIT */
/* src/arena_create.c -- the arena's lifetime: mr_arena_create (a kept
 * child taken back, or a new arena), mr_arena_destroy, and the arena as a
 * node of the tree of lifetimes (memres/tree.h, src/tree.h): the children
 * a parent keeps for reuse, the node's operations.  The allocator itself
 * is arena.c's; its walker, arena_check.c's.
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
 *
 * Shared blocks.  A child taken back by an arena that parents children of
 * its own (a server's connection, made after a request died) carries the
 * request's chain, made for its children's needs, and would live on with
 * it unused.  So when a child of more than one block dies under such a
 * parent, the parent's spare blocks go to the keeper (an arena without a
 * limit), which shares up to MRI_TREE_SHARED_BYTES of them; an arena below
 * the keeper that needs a block takes one of them, of its growth size or
 * less, before it goes upstream.  A parent's growth size then stays (it
 * grows by as little as it can); another child's grows as with blocks from
 * upstream.  The bytes move between the ledgers (mri_ledger_move): every
 * byte from upstream stays on some node's books.  The per-request child
 * keeps its chain, so its create and destroy cost what they did.
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
    const struct mri_made *m = &k->made;
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

/* ---- blocks a keeper shares ---- */

/* The arena keeper that shares blocks for the children of p over up: an
 * arena (no tree lock), with no limit, over up itself; else NULL. */
static inline mr_arena *sharing_keeper(mr_node *keeper, const mr_resource *up)
{
    if (keeper->ops != &mri_arena_node_ops || keeper->upstream != up)
        return NULL;
    mr_arena *k = mri_container_of(keeper, mr_arena, node);
    return k->ledger.limit == 0 ? k : NULL;
}

/* Gives the spare blocks of p's chain (after its current one) to its
 * keeper k to share, as far as k shares at most MRI_TREE_SHARED_BYTES (the
 * rest upstream), in their order, smallest first.  p is an arena that
 * parents children: it took back a kept arena and its chain, made for its
 * children's needs, and lives on beside them, keeping what it allocates.
 * The bytes move from p's books to k's. */
static void give_spares(mr_arena *p, mr_arena *k)
{
    mri_block *c = p->hot.cur->next, *last = NULL;
    p->hot.cur->next = NULL;
    /* the growth size again that of the first spare: p takes blocks as if
     * it had grown from its current one (read now: the loop may free c) */
    const size_t first = c->size;
    p->next_size = first >= p->block_size && first <= p->max_block_size ? first : p->block_size;
    size_t bytes = 0, n = 0;
    for (mri_block *b = c; b != NULL; last = b, b = b->next) {
        if (k->shared_bytes + bytes + b->size > MRI_TREE_SHARED_BYTES) {
            if (last != NULL)
                last->next = NULL;
            mri_arena_free_list(p, b);
            break;
        }
        bytes += b->size;
        n++;
    }
    if (last == NULL)
        return;
    last->next = k->shared;
    k->shared = c;
    k->shared_bytes += bytes;
    mri_ledger_move(&p->ledger, &k->ledger, bytes, n);
}

mri_block *mri_arena_shared_take(mr_arena *a, size_t need)
{
    mr_arena *k = sharing_keeper(keeper_of(a->node.parent, a->upstream), a->upstream);
    if (k == NULL || k == a)
        return NULL;
    /* A block of the growth size or less among the newest few: the first
     * for a parent (a connection whose request lives), which keeps what it
     * allocates as long as it lives, and whose growth size stays, so that
     * it grows by as little as it can; the largest for another, which
     * grows as with blocks from upstream. */
    const bool parent = a->node.child != NULL;
    mri_block **link = NULL, *b;
    int scan = 0;
    for (mri_block **l = &k->shared; (b = *l) != NULL && scan < MRI_TREE_SHARED_SCAN; l = &b->next, scan++)
        if (b->size <= a->next_size && need <= mri_block_end(b) - mri_block_data(b) &&
            (link == NULL || b->size > (*link)->size)) {
            link = l;
            if (parent || b->size == a->next_size)
                break;
        }
    if (link == NULL || !mri_ledger_fits(&a->ledger, (b = *link)->size))
        return NULL;
    *link = b->next;
    k->shared_bytes -= b->size;
    mri_ledger_move(&k->ledger, &a->ledger, b->size, 1);
    b->next = NULL;
    b->top = mri_block_data(b);
    b->low = mri_block_end(b);
    b->meta = 1;
    if (b->size == a->next_size && a->node.child == NULL)
        a->next_size = mri_arena_next_growth(b->size, a->max_block_size);
    return b;
}

/* ---- new arenas ---- */

/* The header and the first block carved from a caller's buffer: the
 * buffer's first MR_ARENA_BUFFER_MIN bytes always hold both. */
_Static_assert(alignof(struct mr_arena) - 1 + sizeof(struct mr_arena) + MR_ARENA_ALIGN - 1 + MRI_BLOCK_HDR +
                       MR_ARENA_ALIGN <=
                   MR_ARENA_BUFFER_MIN,
               "MR_ARENA_BUFFER_MIN holds the header and one aligned object");

/* Block sizes from the options: defaults, the MRI_ARENA_BLOCK_MIN floor, the cap
 * raised to the first size, both rounded as every block is.  false on
 * options no arena can honour.  huge: the upstream is
 * mr_page_resource_huge(), where the default first block is the largest
 * default size: smaller blocks there are separate mappings of small pages
 * (no huge page can back them), and binary-trees' small trees, which live
 * in the first blocks after a rewind, ran 1.05x slower in them than in a
 * 2 MiB block or in the default arena's malloc'd ones (the Intel Xeon VM,
 * docs/BENCHMARKS.md "binary-trees"). */
static bool growth_sizes(const mr_arena_options *o, bool huge, size_t *first, size_t *max)
{
    if (o->block_size != 0 && o->max_block_size != 0 && o->block_size > o->max_block_size)
        return false;
    size_t bs = o->block_size != 0 ? o->block_size : huge ? MRI_ARENA_MAX_BLOCK_DEFAULT : MRI_ARENA_BLOCK_DEFAULT;
    size_t mx = o->max_block_size != 0 ? o->max_block_size : MRI_ARENA_MAX_BLOCK_DEFAULT;
    if (o->max_block_size == 0 && mx < bs)
        mx = bs;
    if (o->block_size == 0 && bs > mx)
        bs = mx;
    if (bs < MRI_ARENA_BLOCK_MIN)
        bs = MRI_ARENA_BLOCK_MIN;
    if (mx < bs)
        mx = bs;
    return mri_round_block(bs, first) && mri_round_block(mx, max);
}

/* Carves the header and the first block (the rest) from the caller's
 * buffer.  NULL when the buffer cannot hold them. */
static mr_arena *carve_buffer(void *buffer, size_t buffer_size, mri_block **first)
{
    uintptr_t start = (uintptr_t)buffer, end = start + buffer_size;
    uintptr_t ha = mri_align_ptr(start, alignof(mr_arena));
    uintptr_t ba = mri_align_ptr(ha + sizeof(mr_arena), MR_ARENA_ALIGN);
    if (buffer_size < MR_ARENA_BUFFER_MIN || end < start || ha < start || ba < ha || ba > end ||
        end - ba < MRI_BLOCK_HDR + MR_ARENA_ALIGN)
        return NULL;
    mri_block *b = (mri_block *)ba;
    b->next = NULL;
    b->size = (size_t)(end - ba);
    mri_block_set_end(b);
    b->top = mri_block_data(b);
    b->low = mri_block_end(b);
    b->meta = 0;
    *first = b;
    return (mr_arena *)ha;
}

/* mr_arena_create's new arena (no kept one to reuse). */
static MR_NOINLINE mr_arena *create_new(const mr_arena_options *opts)
{
    mr_arena_options o = {0};
    if (opts != NULL)
        o = *opts;
    mr_resource *up = mri_node_begin(o.parent, o.upstream, mr_get_default_resource, "mr_arena_create");
    if (up == NULL)
        return NULL;
    size_t bs, mx;
    if ((o.buffer == NULL) != (o.buffer_size == 0) || (unsigned)o.huge_pages > MR_HUGE_PAGES_OFF ||
        !growth_sizes(&o, up == mr_page_resource_huge(), &bs, &mx))
        return mri_fail(EINVAL);
    mri_ledger ledger = {.limit = o.limit};
    mr_arena *a;
    mri_block *first = NULL;
    size_t header_size = 0;
    if (o.buffer != NULL) {
        a = carve_buffer(o.buffer, o.buffer_size, &first);
        if (a == NULL)
            return mri_fail(EINVAL);
        memset(a, 0, sizeof *a);
    } else {
        header_size = sizeof(mr_arena);
        a = mri_node_header(&ledger, up, header_size, alignof(mr_arena), 0);
        if (a == NULL)
            return mri_fail(ENOMEM);
    }

    a->resource.ops = &mri_arena_view_ops;
    a->upstream = up;
    a->big_source = mri_os_block_source(up, o.huge_pages, MR_HUGE_PAGE_SIZE);
    a->head = first;
    a->shared = NULL;
    a->shared_bytes = 0;
    a->block_size = a->next_size = bs;
    a->max_block_size = mx;
    a->ledger = ledger;
    a->header_size = header_size;
    a->buffer = o.buffer;
    a->buffer_size = o.buffer_size;
    a->hot.id = mri_arena_new_id();
    a->made = mri_arena_made_of(&o);
    if (first != NULL) {
        mri_track_lend(o.buffer, o.buffer_size);
        mri_track_poison(mri_block_data(first), first->size - MRI_BLOCK_HDR);
    }
    mri_arena_restart(a);
    mri_node_create(&a->node, &mri_arena_node_ops, o.name, o.parent, up, NULL, &a->hot.cleanup_seq);
    MRI_WALK_NOW(a, mri_arena_walk);
    return a;
}

/* ---- create and destroy ---- */

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
                return create_new(opts);
        }
        mr_arena *a = reuse(p, opts, up);
        if (a != NULL)
            return a;
    }
    return create_new(opts);
}

/* Frees all but the first blocks of a's chain, up to MR_TREE_KEEP_BYTES
 * with the header. */
static MR_NOINLINE void trim(mr_arena *a)
{
    mri_arena_free_list(a, a->hot.big);
    mri_arena_free_list(a, a->big_spare);
    a->hot.big = a->big_spare = NULL;
    size_t bytes = a->header_size;
    mri_block **link = &a->head, *last = NULL;
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

/* What a dying child a, kept by keeper, does with chains: its own is cut
 * to MR_TREE_KEEP_BYTES with the header, and when its parent is an arena
 * below a keeper that shares, the parent's spare blocks go to the keeper
 * (give_spares). */
MR_NOINLINE void mri_arena_keep_chain(mr_arena *a, mr_node *keeper)
{
    if (MR_UNLIKELY(a->ledger.held > MR_TREE_KEEP_BYTES))
        trim(a);
    mr_node *p = a->node.parent;
    if (p == keeper || p->ops != &mri_arena_node_ops)
        return;
    mr_arena *pa = mri_container_of(p, mr_arena, node), *k;
    if (pa->hot.cur != NULL && pa->hot.cur->next != NULL && (k = sharing_keeper(keeper, a->upstream)) != NULL &&
        pa->upstream == a->upstream)
        give_spares(pa, k);
}

/* Rewinds a for its keeper to keep: no cleanup, no child, every mri_block
 * spare, the bump pointers at the first block; at most MR_TREE_KEEP_BYTES
 * held, header included (the first blocks of the chain). */
static void keep(mr_arena *a, mr_node *keeper)
{
    mri_arena_keep_chain(a, keeper);
    while (a->hot.big != NULL) { /* dedicated blocks in use become spare, as on reset */
        mri_block *b = a->hot.big;
        a->hot.big = b->next;
        b->next = a->big_spare;
        a->big_spare = b;
    }
    a->hot.big_seq = 0;
    if (MRI_TRACKING) {
        for (mri_block *b = a->head; b != NULL; b = b->next)
            mri_track_poison(mri_block_data(b), b->size - MRI_BLOCK_HDR);
        for (mri_block *b = a->big_spare; b != NULL; b = b->next)
            mri_track_poison(mri_block_data(b), b->size - MRI_BLOCK_HDR);
    }
    mri_arena_restart(a); /* (cleanup_seq goes on counting: the numbers are relative) */
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
static void node_free(mr_node *n)
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
    keep(a, keeper);
    if (!mri_node_leave(n, keeper)) /* refused under the parent's lock: freed as a kept child is */
        node_free_kept(n);
}

MR_API void mr_arena_destroy(mr_arena *a)
{
    if (a == NULL)
        return;
    mr_node *n = &a->node, *p = n->parent;
    /* The per-request child: nothing to unwind, nothing but its chain to
     * keep, a parent of this thread.  (Its parent is not dying: no mri_cleanup
     * runs on this thread, and only a cleanup runs user code in a
     * cascade.) */
    if (MR_LIKELY(p != NULL && n->child == NULL && a->hot.cleanups == NULL && n->kept == NULL && a->hot.big == NULL &&
                  n->state == MRI_NODE_LIVE && mri_node_frames == NULL && p->lock == NULL && a->buffer == NULL &&
                  a->upstream == p->upstream && !MRI_TRACKING && MR_DEBUG < 3)) {
        mr_node *keeper = keeper_of(p, a->upstream);
        if (MR_LIKELY(keeper->nkept < MR_TREE_KEEP_CHILDREN)) {
            if (MR_UNLIKELY(a->ledger.held > MRI_TREE_ONE_BLOCK))
                mri_arena_keep_chain(a, keeper);
            mri_arena_restart(a);
            mri_node_die(n);
            mri_node_unlink_locked(n);
            mri_node_keep(n, keeper);
            return;
        }
    }
    if (!mri_node_enter(n, "mr_arena_destroy"))
        return;
    if (n->child == NULL && a->hot.cleanups == NULL)
        node_free(n); /* nothing to unwind */
    else
        mri_node_destroy_checked(n);
}


MR_API mr_node *mr_arena_node(mr_arena *a) { return &a->node; }

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
    const mri_cleanup *c = mri_container_of(n, mr_arena, node)->hot.cleanups;
    return c != NULL ? c->seq : 0;
}

static void node_cleanup_run(mr_node *n)
{
    mr_arena *a = mri_container_of(n, mr_arena, node);
    mri_cleanup *c = a->hot.cleanups;
    a->hot.cleanups = c->prev; /* popped first: the cleanup may look at the arena */
    c->fn(c->arg);
}

static mr_node *node_of(mr_resource *r)
{
    return r->ops == &mri_arena_view_ops ? &mri_container_of(r, mr_arena, resource)->node : NULL;
}

const struct mri_node_ops mri_arena_node_ops = {
    .kind = "arena",
    .node_of = node_of,
    .free = node_free,
    .free_kept = node_free_kept,
    .figures = node_figures,
    .held = node_held,
    .cleanup_top = node_cleanup_top,
    .cleanup_run = node_cleanup_run,
};
