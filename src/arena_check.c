/* SPDX-License-Identifier: MIT */
/* src/arena_check.c -- the arena's walker: mr_arena_check, and the same walk
 * counting its steps for the debug tier's periodic checks (MRI_WALK).  The
 * invariants it checks are arena.c's head comment's. */
#include "arena_impl.h"

#define CHECK(cond, ...) MRI_VERIFY(cond, "mr_arena_check", (const void *)a, __VA_ARGS__)

/* Checks a list of blocks: `filled` says whether the blocks before the
 * current one (the whole list when there is no current one in it) hold
 * fill levels to check. */
static bool check_list(const mr_arena *a, const mri_block *b, size_t *held, size_t *owned, bool filled, size_t *steps)
{
    for (; b != NULL; b = b->next) {
        ++*steps;
        CHECK(b->size >= MRI_BLOCK_HDR + MR_ARENA_ALIGN, "block %p has size %zu", (const void *)b, b->size);
        if (b == a->hot.cur)
            filled = false; /* the current block's levels are hot.ptr / hot.end; spares after it */
        else if (filled)
            CHECK(b->top >= mri_block_data(b) && b->top <= b->low && b->low <= mri_block_end(b),
                  "block %p: fill %#jx and strings %#jx outside it", (const void *)b, (uintmax_t)b->top,
                  (uintmax_t)b->low);
        if (mri_block_owned(b)) {
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
        CHECK(a->hot.mark == 0 ||
                  (a->hot.mark >= mri_block_data(a->hot.cur) && a->hot.mark <= mri_block_end(a->hot.cur)),
              "newest mark %#jx outside the current block", (uintmax_t)a->hot.mark);
        CHECK(mri_arena_in_use_block(a, a->hot.cur), "current block %p not in the chain", (const void *)a->hot.cur);
        CHECK(a->hot.ptr >= mri_block_data(a->hot.cur) && a->hot.end <= mri_block_end(a->hot.cur),
              "bump pointers outside the current block");
        CHECK(a->hot.ptr % MR_ARENA_ALIGN == 0, "bump pointer %#jx misaligned", (uintmax_t)a->hot.ptr);
        CHECK(a->cur_end == mri_block_end(a->hot.cur), "cached end %#jx of the current block, not %#jx",
              (uintmax_t)a->cur_end, (uintmax_t)mri_block_end(a->hot.cur));
    } else {
        CHECK(a->hot.ptr == a->hot.end, "no current block but free space");
    }
    if (!check_list(a, a->head, &held, &owned, a->hot.cur != NULL, steps) ||
        !check_list(a, a->hot.big, &held, &owned, true, steps) ||
        !check_list(a, a->big_spare, &held, &owned, false, steps) ||
        !check_list(a, a->shared, &held, &owned, false, steps))
        return false;
    *steps += a->hot.big_seq;
    size_t seq = a->hot.big_seq;
    for (const mri_block *b = a->hot.big; b != NULL; b = b->next, seq--)
        CHECK(mri_block_seq(b) == seq && seq != 0, "dedicated block %p numbered %zu, expected %zu", (const void *)b,
              mri_block_seq(b), seq);
    CHECK(seq == 0, "%zu dedicated blocks counted, fewer on the list", a->hot.big_seq);
    /* cleanups and children: numbered below cleanup_seq, falling down each
     * list (children destroyed on their own leave gaps) */
    seq = a->hot.cleanup_seq + 1;
    for (const mri_cleanup *c = a->hot.cleanups; c != NULL; c = c->prev, ++*steps) {
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
