/* SPDX-License-Identifier: MIT */
/* src/arena_merge.c -- mr_arena_merge (git's mem_pool_combine): what one
 * arena holds moves into another without a copy or an upstream call.
 *
 * The chain blocks of `from` that hold data and its dedicated blocks in use
 * become dedicated blocks of `into`, numbered above its own (so a rewind
 * of `into` to a mark saved before the merge frees them); its cleanups and
 * children go on top of those of `into`, renumbered above them.  `from`
 * keeps its empty blocks as spares and gets a new id.
 */
#include "arena_impl.h"

/* Does the chain block b (in use in a) hold anything? */
static bool holds_data(const mr_arena *a, const mri_block *b)
{
    if (b == a->hot.cur)
        return a->hot.ptr != mri_block_data(b) || a->hot.end != mri_block_end(b);
    return b->top != mri_block_data(b) || b->low != mri_block_end(b);
}

/* Appends b, holding data, to into's dedicated blocks, numbered next. */
static void adopt(mr_arena *into, mri_block *b)
{
    b->meta = (into->hot.big_seq + 1) << 1 | (b->meta & 1u);
    into->hot.big_seq++;
    b->next = into->hot.big;
    into->hot.big = b;
}

MR_API int mr_arena_merge(mr_arena *into, mr_arena *from)
{
    if (into == NULL || from == NULL || into == from || !mr_is_equal(into->upstream, from->upstream) ||
        !mr_is_equal(into->big_source, from->big_source) || !mri_node_enter(&into->node, "mr_arena_merge") ||
        !mri_node_enter(&from->node, "mr_arena_merge") || mri_node_below(&into->node, &from->node)) {
        errno = EINVAL;
        return -1;
    }
    /* what moves: the chain blocks in use that hold data, and the dedicated
     * blocks in use */
    size_t bytes = 0, count = 0;
    for (const mri_block *b = from->hot.cur != NULL ? from->head : NULL; b != NULL; b = b->next) {
        if (holds_data(from, b)) {
            if (!mri_block_owned(b)) {
                errno = EINVAL; /* data in the caller's buffer */
                return -1;
            }
            bytes += b->size;
            count++;
        }
        if (b == from->hot.cur)
            break;
    }
    for (const mri_block *b = from->hot.big; b != NULL; b = b->next) {
        bytes += b->size;
        count++;
    }
    if (!mri_ledger_fits(&into->ledger, bytes)) {
        errno = ENOMEM;
        return -1;
    }

    /* cleanups and children: from's go on top of into's, renumbered above */
    if (from->hot.cleanups != NULL) {
        mri_cleanup *c = from->hot.cleanups;
        for (;; c = c->prev) {
            c->seq += into->hot.cleanup_seq;
            if (c->prev == NULL)
                break;
        }
        c->prev = into->hot.cleanups;
        into->hot.cleanups = from->hot.cleanups;
    }
    mri_node_move_children(&into->node, &from->node, into->hot.cleanup_seq);
    into->hot.cleanup_seq += from->hot.cleanup_seq;

    /* blocks: chain blocks holding data and dedicated ones become into's
     * dedicated blocks, newer than everything into has */
    if (from->hot.cur != NULL) {
        from->hot.cur->top = from->hot.ptr;
        from->hot.cur->low = from->hot.end;
    }
    mri_block *keep = NULL, **tail = &keep, *stop = from->hot.cur != NULL ? from->hot.cur->next : from->head;
    for (mri_block *b = from->hot.cur != NULL ? from->head : NULL, *next; b != stop; b = next) {
        next = b->next;
        if (holds_data(from, b)) {
            adopt(into, b);
        } else {
            *tail = b;
            tail = &b->next;
        }
    }
    *tail = stop; /* then from's spares, in order */
    for (mri_block *b = from->hot.big, *next; b != NULL; b = next) {
        next = b->next;
        adopt(into, b);
    }

    /* the ledgers: as if from gave the blocks back and into took them */
    mri_ledger_move(&from->ledger, &into->ledger, bytes, count);

    /* from: empty, with its spare blocks, and a new identity */
    from->head = keep;
    from->hot.big = NULL;
    from->hot.big_seq = 0;
    from->hot.cleanups = NULL;
    from->hot.cleanup_seq = 0;
    from->hot.id = mri_arena_new_id();
    from->next_size = from->block_size;
    mri_arena_restart(from);
    MRI_WALK_NOW(into, mri_arena_walk);
    MRI_WALK_NOW(from, mri_arena_walk);
    return 0;
}
