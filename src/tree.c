/* SPDX-License-Identifier: MIT */
/* src/tree.c -- the tree of lifetimes (memres/tree.h, src/tree.h): links,
 * the cascade, kept children, set_parent.  The kinds of allocator are
 * tree_kinds.c's; stats and reports, tree_report.c's.  This file knows no
 * kind: it reaches each through its node's ops.
 *
 * Every walk here is a loop over the links (parent, child, older): destroy
 * descends to the newest child, frees leaves and climbs back.  Depth costs
 * no stack.
 */
#include <string.h>

#include "internal.h"
#include "tree.h"

/* ---- misuse ---- */

/* A cleanup running, innermost first: its node's cascade cannot be freed
 * under it. */
_Thread_local struct mri_frame *mri_node_frames __attribute__((tls_model("initial-exec")));

/* Reports why (a literal: a handler may keep it) for the caller who, in
 * debug builds, and returns true when bad. */
static bool misuse(bool bad, const void *ptr, const char *who, const char *why)
{
    if (MR_LIKELY(!bad))
        return false;
    if (MR_DEBUG >= 1)
        mri_misuse(why, ptr, __FILE__, __LINE__, who);
    return true;
}

/* Is a cleanup of n or of a node below n running on this thread? */
static bool running_below(const mr_node *n)
{
    for (const struct mri_frame *f = mri_node_frames; f != NULL; f = f->prev)
        for (const mr_node *q = f->n; q != NULL; q = q->parent)
            if (q == n)
                return true;
    return false;
}

/* ---- links ---- */

bool mri_node_can_adopt_slow(mr_node *p, const char *who)
{
    if (misuse(!mri_node_live(p), p, who, "tree: the parent was destroyed") ||
        misuse((p->state & MRI_NODE_UNWINDING) != 0, p, who,
               "tree: a child made under an allocator whose cascade runs (from one of its cleanups)")) {
        errno = EINVAL;
        return false;
    }
    return true;
}

bool mri_node_enter_slow(mr_node *n, const char *who)
{
    return !misuse(!mri_node_live(n), n, who, "tree: an allocator used after it was destroyed (directly or with its parent)") &&
           !misuse((n->state & MRI_NODE_UNWINDING) != 0 || (mri_node_frames != NULL && running_below(n)), n, who,
                   "tree: an allocator destroyed, reset or rewound from a cleanup of its own cascade (its own, or one below it)");
}

bool mri_node_below(const mr_node *n, const mr_node *top)
{
    for (; n != NULL; n = n->parent)
        if (n == top)
            return true;
    return false;
}

void mri_node_move_children(mr_node *into, mr_node *from, size_t offset)
{
    mr_node *last = NULL;
    for (mr_node *c = from->child; c != NULL; c = c->older) {
        c->parent = into;
        c->seq += offset;
        last = c;
    }
    if (last == NULL)
        return;
    last->older = into->child;
    if (into->child != NULL)
        into->child->newer = last;
    into->child = from->child;
    from->child = NULL;
}

/* ---- the cascade ---- */

void mri_node_unwind(mr_node *r, size_t stop)
{
    const uint32_t flags = r->state & MRI_NODE_FLAGS;
    r->state |= MRI_NODE_UNWINDING;
    for (mr_node *n = r;;) {
        const size_t s = n == r ? stop : 0;
        const bool ordered = n->ops->cleanup_top != NULL; /* an arena: children among cleanups */
        const size_t top = ordered ? n->ops->cleanup_top(n) : 0;
        mri_node_lock(n);
        mr_node *c = n->child;
        mri_node_unlock(n);
        if (c != NULL && (!ordered || (c->seq > s && c->seq > top))) {
            c->state |= MRI_NODE_UNWINDING | MRI_NODE_DOOMED;
            n = c; /* its subtree first */
            continue;
        }
        if (top > s) {
            struct mri_frame f = {n, mri_node_frames};
            mri_node_frames = &f;
            n->ops->cleanup_run(n);
            mri_node_frames = f.prev;
            continue;
        }
        if (n == r)
            break;
        mr_node *p = n->parent;
        n->ops->free(n);
        n = p;
    }
    r->state = (r->state & ~MRI_NODE_FLAGS) | flags;
}

void mri_node_destroy_checked(mr_node *n)
{
    if (misuse((n->state & MRI_NODE_PERMANENT) != 0, n, "mr_node_destroy", "tree: mr_blocks_shared() is never destroyed"))
        return;
    n->state |= MRI_NODE_DOOMED;
    if (n->child != NULL || (n->ops->cleanup_top != NULL && n->ops->cleanup_top(n) != 0))
        mri_node_unwind(n, 0);
    n->ops->free(n);
}

MR_API void mr_node_destroy(mr_node *n)
{
    if (n != NULL && mri_node_enter(n, "mr_node_destroy"))
        mri_node_destroy_checked(n);
}

/* ---- kept children ---- */

void mri_node_kept_held(const mr_node *n, size_t *bytes, size_t *blocks)
{
    *bytes = *blocks = 0;
    if (n->lock == NULL && n->kept == NULL)
        return;
    mri_node_lock((mr_node *)(uintptr_t)n); /* the lock is not part of the value */
    for (const mr_node *k = n->kept; k != NULL; k = k->older) {
        size_t b, nb;
        k->ops->held(k, &b, &nb);
        *bytes += b;
        *blocks += nb;
    }
    mri_node_unlock((mr_node *)(uintptr_t)n);
}

size_t mri_node_drop_kept(mr_node *p)
{
    if (p->lock == NULL && p->kept == NULL)
        return 0;
    mri_node_lock(p);
    mr_node *k = p->kept;
    p->kept = NULL;
    p->nkept = 0;
    size_t bytes = 0;
    mri_node_unlock(p);
    while (k != NULL) {
        mr_node *next = k->older;
        size_t b, blocks;
        k->ops->held(k, &b, &blocks);
        bytes += b;
        k->ops->free_kept(k);
        k = next;
    }
    return bytes;
}

MR_API void mri_node_watch(mr_node *n, mr_node **slot) { n->watch = slot; }

/* ---- queries ---- */

MR_API mr_node *mr_node_parent(const mr_node *n) { return n->parent; }
MR_API mr_node *mr_node_first_child(const mr_node *n) { return n->child; }
MR_API mr_node *mr_node_next_sibling(const mr_node *n) { return n->older; }
MR_API const char *mr_node_name(const mr_node *n) { return mri_node_name(n); }
MR_API const char *mr_node_kind(const mr_node *n) { return n->ops->kind; }

MR_API int mr_node_set_parent(mr_node *n, mr_node *parent)
{
    const char *who = "mr_node_set_parent";
    if (n == NULL || !mri_node_enter(n, who) ||
        misuse((n->state & MRI_NODE_PERMANENT) != 0, n, who, "tree: mr_blocks_shared() has no parent") ||
        (parent != NULL && !mri_node_can_adopt(parent, who))) {
        errno = EINVAL;
        return -1;
    }
    if (misuse(mri_node_below(parent, n), parent, who, "tree: the new parent is the node or lies below it (a cycle)")) {
        errno = EINVAL;
        return -1;
    }
    if (n->parent == parent)
        return 0;
    mr_node *old = n->parent;
    if (old != NULL) {
        mri_node_lock(old);
        mri_node_unlink_locked(n);
        mri_node_unlock(old);
    }
    if (parent != NULL)
        mri_node_link(n, parent);
    else
        n->parent = n->older = n->newer = NULL; /* a root */
    return 0;
}
