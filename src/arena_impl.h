/* SPDX-License-Identifier: MIT */
/* src/arena_impl.h -- the arena's structs and what its files share:
 * arena.c (blocks, allocation, marks, cleanups, release, stats; its head
 * comment describes the design), arena_create.c (create and destroy, the
 * arena in the tree of lifetimes: kept children), arena_merge.c
 * (mr_arena_merge) and arena_check.c (the walker). */
#ifndef MEMRES_ARENA_IMPL_H
#define MEMRES_ARENA_IMPL_H

#include <stdatomic.h>

#include "internal.h"
#include "ledger.h"
#include "memres/arena.h"
#include "os.h"
#include "track.h"
#include "tree.h"

#define MRI_ARENA_BLOCK_DEFAULT ((size_t)4096)
/* 2 MiB of data per block besides the header, plus the few KiB the growing
 * blocks before the first full-size one fall short of 2 MiB: power-of-two
 * data (binary-trees: 2^k nodes of 16 bytes) no longer spills into one more
 * block.  Over the huge-page source such a block is one 2 MiB page and two
 * small ones (docs/design.md, "Block and chunk sizes"). */
#define MRI_ARENA_MAX_BLOCK_DEFAULT (((size_t)2 << 20) + 8192)
/* Growth: while a twelfth of what the arena holds is between
 * MRI_ARENA_SHARE_FLOOR and MRI_ARENA_SHARE_CEIL (the arena holds 3 MiB to
 * 12 MiB), a new block is at most that twelfth (and at least what the
 * request needs), so the unused tail of the newest block is a small share
 * of the whole: such an arena holds at most ~1.09x its data, where a
 * doubled block, or a 2 MiB one, could be as large as all the rest and
 * nearly empty (strings: 8.1 MiB of strings in 10.0 MiB, the newest 2 MiB
 * block 2% used).  Below the floor blocks double as they did (at most
 * 256 KiB unused): smaller arenas keep their few blocks and their speed (a
 * twelfth from 4 KiB on cost the tree scenario 4.6% more instructions, a
 * floor of 64 KiB the request scenario 0.6%).  Above the ceiling blocks go
 * on to the 2 MiB + 8 KiB maximum, each a huge page (memres/pages.h):
 * cutting up to 24 MiB took git-objects' arena from 5.3k to 10.9k page
 * faults; past 12 MiB a 2 MiB block is at most a sixth more. */
#define MRI_ARENA_GROWTH_SHARE ((size_t)12)
/* An arena with live children (a connection whose request lives) takes
 * blocks of its growth size without doubling it until it holds
 * MRI_ARENA_PARENT_STEADY: such a parent keeps what it allocates beside
 * its children, often a little at a time, and a doubled newest block would
 * be mostly tail (the tree scenario: 64 connections held 1.71 MB at the
 * peak for 1.23 MB of results, 0.44 MB of it their newest blocks' tails;
 * growing by the growth size, 1.46 MB, peak RSS 5140 KiB against 5452,
 * APR's 5076-5116, for 0.2% more instructions).  The shared blocks a keeper
 * gives such a parent are of its growth size or less for the same reason
 * (arena_create.c). */
#define MRI_ARENA_PARENT_STEADY ((size_t)64 << 10)
#define MRI_ARENA_SHARE_FLOOR ((size_t)256 << 10)
#define MRI_ARENA_SHARE_CEIL ((size_t)1 << 20)
#define MRI_ARENA_BLOCK_MIN ((size_t)256) /* the floor arena.h documents for block_size */
#define MRI_ARENA_DEDICATED_SCAN 16       /* spare dedicated blocks looked at per large request */

typedef struct mri_arena_block {
    struct mri_arena_block *next;
    size_t size;   /* bytes of the block, header included (as requested upstream) */
    uintptr_t top; /* fill level while not current; end of the allocation for dedicated blocks */
    uintptr_t low; /* start of the byte-packed strings at the block's top while not
                      current (mri_block_end(b) when there are none) */
    size_t meta;   /* seq << 1 | owned.  owned 1: from upstream; 0: the caller's buffer.
                      seq: a dedicated block in use is numbered 1, 2, ... up the list */
    uintptr_t end; /* end of its data (mri_block_end); in the header's padding to MR_ARENA_ALIGN */
} mri_block;

static inline bool mri_block_owned(const mri_block *b) { return (b->meta & 1u) != 0; }
static inline size_t mri_block_seq(const mri_block *b) { return b->meta >> 1; }

#define MRI_BLOCK_HDR ((sizeof(mri_block) + MR_ARENA_ALIGN - 1) & ~(MR_ARENA_ALIGN - 1))
_Static_assert(sizeof(void *) != 8 || MRI_BLOCK_HDR == 48, "a block header is 48 bytes");

typedef struct mri_arena_cleanup {
    struct mri_arena_cleanup *prev;
    void (*fn)(void *arg);
    void *arg;
    size_t seq; /* 1, 2, ... up the list: prev->seq == seq - 1 */
} mri_cleanup;

struct mr_arena {
    struct mri_arena_hot hot; /* first: read by the inline fast path */
    mr_resource resource;     /* the mr_arena_resource() view */
    mr_resource *upstream;
    mr_resource *big_source;  /* where blocks >= MR_HUGE_PAGE_SIZE come from */
    mri_block *head;          /* chain in order of use; up to hot.cur in use, after it spare */
    mri_block *big_spare;     /* dedicated blocks kept for reuse */
    size_t block_size, next_size, max_block_size;
    mri_ledger ledger;  /* upstream accounting; its cap is the limit */
    size_t header_size; /* bytes of this header from upstream; 0 when carved from a buffer */
    void *buffer;       /* the caller's buffer (unpoisoned on destroy) */
    size_t buffer_size;
    struct mri_walk walk; /* MR_DEBUG 3: when the next walk is due */
    uintptr_t cur_end;    /* mri_block_end(hot.cur): the stats read no mri_block */
    mr_node node;         /* in the tree of lifetimes */
    mri_block *shared;    /* as a keeper: chain blocks its kept children gave up, for
                             the children it keeps for to grow into (arena_create.c) */
    size_t shared_bytes;  /* their sizes (in held) */
    struct mri_made {     /* the options it was made with, as given: a kept arena is
                             reused for a child asking for the same */
        mr_resource *upstream;
        size_t block_size, max_block_size, limit;
        mr_huge_pages huge_pages;
    } made;
};

static inline uintptr_t mri_block_data(const mri_block *b) { return (uintptr_t)b + MRI_BLOCK_HDR; }

/* The end of b's data, set once when the block is made (mri_block_set_end). */
static inline uintptr_t mri_block_end(const mri_block *b) { return b->end; }

static inline void mri_block_set_end(mri_block *b)
{
    uintptr_t e = ((uintptr_t)b + b->size) & ~(uintptr_t)(MR_ARENA_ALIGN - 1);
    const uintptr_t top = (UINTPTR_MAX - MRI_ARENA_INLINE_MAX) & ~(uintptr_t)(MR_ARENA_ALIGN - 1);
    if (MR_UNLIKELY(e > top)) /* keep ptr + size from wrapping in the inline path */
        e = top > mri_block_data(b) ? top : mri_block_data(b);
    b->end = e;
}

/* Makes b current with aligned allocations up to ptr and byte-packed
 * strings from end (mri_block_end(b): none). */
static inline void mri_arena_set_current_at(mr_arena *a, mri_block *b, uintptr_t ptr, uintptr_t end)
{
    MR_ASSERT_INTERNAL(ptr >= mri_block_data(b) && ptr <= end && end <= mri_block_end(b) && ptr % MR_ARENA_ALIGN == 0);
    a->hot.cur = b;
    a->hot.ptr = ptr;
    a->hot.end = end;
    a->hot.mark = 0; /* every live mark lies before this block (a rewind sets its own) */
    a->cur_end = mri_block_end(b);
}

static inline void mri_arena_set_current(mr_arena *a, mri_block *b, uintptr_t ptr)
{
    mri_arena_set_current_at(a, b, ptr, mri_block_end(b));
}

/* No block in use: ptr == end, so every request takes the slow path, and a
 * size-0 request gets a non-NULL pointer that points at nothing of ours. */
static inline void mri_arena_set_empty(mr_arena *a)
{
    a->hot.cur = NULL;
    a->hot.ptr = a->hot.end = a->cur_end = mri_align_ptr((uintptr_t)(a + 1), MR_ARENA_ALIGN);
    a->hot.mark = 0;
}

/* Make the first block of the chain current (or none). */
static inline void mri_arena_restart(mr_arena *a)
{
    if (a->head != NULL)
        mri_arena_set_current(a, a->head, mri_block_data(a->head));
    else
        mri_arena_set_empty(a);
}

static inline struct mri_made mri_arena_made_of(const mr_arena_options *o)
{
    return (struct mri_made){o->upstream, o->block_size, o->max_block_size, o->limit, o->huge_pages};
}

/* A fresh identity: marks saved before it (another arena's, or this one's
 * before a release) no longer match.  Ids are never reused. */
extern _Atomic uint64_t mri_arena_last_id;
static inline uint64_t mri_arena_new_id(void)
{
    return atomic_fetch_add_explicit(&mri_arena_last_id, 1, memory_order_relaxed) + 1;
}

/* arena.c */
extern const struct mr_resource_ops mri_arena_view_ops; /* mr_arena_resource() */
void mri_arena_free_list(mr_arena *a, mri_block *b);
void mri_arena_free_blocks(mr_arena *a); /* every owned block upstream; the buffer stays */
size_t mri_arena_next_growth(size_t cur, size_t max);
bool mri_arena_in_use_block(const mr_arena *a, const mri_block *b);

/* arena_create.c */
extern const struct mri_node_ops mri_arena_node_ops; /* in the table of kinds */
/* A block its keeper shares, holding need bytes of data, moved to a's
 * books; NULL when none. */
mri_block *mri_arena_shared_take(mr_arena *a, size_t need);
/* Cuts the chain of a, dying, to what its keeper keeps it with. */
MR_NOINLINE void mri_arena_keep_chain(mr_arena *a, mr_node *keeper);
/* A dying child holding more than its header and first block (the
 * default's) goes through mri_arena_keep_chain; a keeper shares at most
 * MRI_TREE_SHARED_BYTES of blocks. */
#define MRI_TREE_ONE_BLOCK (sizeof(struct mr_arena) + MRI_ARENA_BLOCK_DEFAULT)
#define MRI_TREE_SHARED_BYTES ((size_t)64 << 10)
#define MRI_TREE_SHARED_SCAN 4 /* shared blocks a parent looks at for one of its size */

/* arena_check.c */
bool mri_arena_walk(const mr_arena *a, size_t *steps); /* mr_arena_check, counting steps */

#endif /* MEMRES_ARENA_IMPL_H */
