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

#define ALIGN MR_ARENA_ALIGN
#define DEFAULT_BLOCK_SIZE ((size_t)4096)
/* 2 MiB of data per block besides the header, plus the few KiB the growing
 * blocks before the first full-size one fall short of 2 MiB: power-of-two
 * data (binary-trees: 2^k nodes of 16 bytes) no longer spills into one more
 * block.  Over the huge-page source such a block is one 2 MiB page and two
 * small ones (docs/design.md, "Block and chunk sizes"). */
#define DEFAULT_MAX_BLOCK_SIZE (((size_t)2 << 20) + 8192)
#define MIN_BLOCK_SIZE ((size_t)256) /* the floor arena.h documents for block_size */
#define DEDICATED_SCAN 16 /* spare dedicated blocks looked at per large request */

typedef struct mri_arena_block {
    struct mri_arena_block *next;
    size_t size;   /* bytes of the block, header included (as requested upstream) */
    uintptr_t top; /* fill level while not current; end of the allocation for dedicated blocks */
    uintptr_t low; /* start of the byte-packed strings at the block's top while not
                      current (end_of(b) when there are none) */
    size_t meta;   /* seq << 1 | owned.  owned 1: from upstream; 0: the caller's buffer.
                      seq: a dedicated block in use is numbered 1, 2, ... up the list */
    uintptr_t end; /* end of its data (end_of); in the header's padding to ALIGN */
} block;

static inline bool owned_of(const block *b) { return (b->meta & 1u) != 0; }
static inline size_t seq_of(const block *b) { return b->meta >> 1; }

#define HDR ((sizeof(block) + ALIGN - 1) & ~(ALIGN - 1))
_Static_assert(sizeof(void *) != 8 || HDR == 48, "a block header is 48 bytes");


typedef struct mri_arena_cleanup {
    struct mri_arena_cleanup *prev;
    void (*fn)(void *arg);
    void *arg;
    size_t seq; /* 1, 2, ... up the list: prev->seq == seq - 1 */
} cleanup;

struct mr_arena {
    struct mri_arena_hot hot; /* first: read by the inline fast path */
    mr_resource resource;     /* the mr_arena_resource() view */
    mr_resource *upstream;
    mr_resource *big_source;  /* where blocks >= MR_HUGE_PAGE_SIZE come from */
    block *head;      /* chain in order of use; up to hot.cur in use, after it spare */
    block *big_spare; /* dedicated blocks kept for reuse */
    size_t block_size, next_size, max_block_size;
    mri_ledger ledger;  /* upstream accounting; its cap is the limit */
    size_t header_size; /* bytes of this header from upstream; 0 when carved from a buffer */
    void *buffer;       /* the caller's buffer (unpoisoned on destroy) */
    size_t buffer_size;
    struct mri_walk walk; /* MR_DEBUG 3: when the next walk is due */
    uintptr_t cur_end;    /* end_of(hot.cur): the stats read no block */
    mr_node node;         /* in the tree of lifetimes */
    struct made {         /* the options it was made with, as given: a kept arena is
                             reused for a child asking for the same */
        mr_resource *upstream;
        size_t block_size, max_block_size, limit;
        mr_huge_pages huge_pages;
    } made;
};

static inline uintptr_t data_of(const block *b) { return (uintptr_t)b + HDR; }

/* The end of b's data, set once when the block is made (set_end). */
static inline uintptr_t end_of(const block *b) { return b->end; }

static inline void set_end(block *b)
{
    uintptr_t e = ((uintptr_t)b + b->size) & ~(uintptr_t)(ALIGN - 1);
    const uintptr_t top = (UINTPTR_MAX - MRI_ARENA_INLINE_MAX) & ~(uintptr_t)(ALIGN - 1);
    if (MR_UNLIKELY(e > top)) /* keep ptr + size from wrapping in the inline path */
        e = top > data_of(b) ? top : data_of(b);
    b->end = e;
}

/* Makes b current with aligned allocations up to ptr and byte-packed
 * strings from end (end_of(b): none). */
static inline void set_current_at(mr_arena *a, block *b, uintptr_t ptr, uintptr_t end)
{
    MR_ASSERT_INTERNAL(ptr >= data_of(b) && ptr <= end && end <= end_of(b) && ptr % ALIGN == 0);
    a->hot.cur = b;
    a->hot.ptr = ptr;
    a->hot.end = end;
    a->hot.mark = 0; /* every live mark lies before this block (a rewind sets its own) */
    a->cur_end = end_of(b);
}

static inline void set_current(mr_arena *a, block *b, uintptr_t ptr) { set_current_at(a, b, ptr, end_of(b)); }

/* No block in use: ptr == end, so every request takes the slow path, and a
 * size-0 request gets a non-NULL pointer that points at nothing of ours. */
static inline void set_empty(mr_arena *a)
{
    a->hot.cur = NULL;
    a->hot.ptr = a->hot.end = a->cur_end = mri_align_ptr((uintptr_t)(a + 1), ALIGN);
    a->hot.mark = 0;
}

/* Make the first block of the chain current (or none). */
static inline void restart(mr_arena *a)
{
    if (a->head != NULL)
        set_current(a, a->head, data_of(a->head));
    else
        set_empty(a);
}

static inline struct made made_of(const mr_arena_options *o)
{
    return (struct made){o->upstream, o->block_size, o->max_block_size, o->limit, o->huge_pages};
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
void mri_arena_free_list(mr_arena *a, block *b);
void mri_arena_free_blocks(mr_arena *a); /* every owned block upstream; the buffer stays */
size_t mri_arena_next_growth(size_t cur, size_t max);
bool mri_arena_in_use_block(const mr_arena *a, const block *b);

/* arena_create.c */
extern const struct mri_node_ops mri_arena_node_ops; /* in the table of kinds */

/* arena_check.c */
bool mri_arena_walk(const mr_arena *a, size_t *steps); /* mr_arena_check, counting steps */

#endif /* MEMRES_ARENA_IMPL_H */
