/* SPDX-License-Identifier: MIT */
/* src/pools_impl.h -- the size-class pool's own struct, shared by pools.c
 * (classes, refill, lifecycle, stats, the node), pools_check.c (the
 * walker), direct.c (requests passed to the upstream and tracked) and
 * trim.c (what the pool gives back while it runs: empty chunks, idle
 * classes' pages). */
#ifndef MEMRES_POOLS_IMPL_H
#define MEMRES_POOLS_IMPL_H

#include "chunks.h"
#include "internal.h"
#include "ledger.h"
#include "memres/pools.h"
#include "tree.h"
#include "tsafe.h"

/* Bits of the class masks: one per class (MR_POOLS_MAX_POOL_BLOCK makes
 * 128 classes, and the exact sizes follow them). */
#define MRI_MASK_WORDS 3u

/* What the pool keeps per class apart from the hot class array (one cache
 * line a class, and full): for trim.c. */
struct mri_pools_cold {
    size_t carved;       /* blocks of the chunks up to and including current */
    size_t walked_frees; /* the class's frees count at its last trim walk */
    uint32_t cursor;     /* where the next walk starts: chunks to skip */
    bool futile;         /* that walk gave nothing back */
    size_t purge_seen;   /* the class's allocations count at the last purge walk */
    size_t purge_taken;  /* mr_pools.taken when a walk last saw that count change */
};

/* The header before a direct block, at block - sizeof(struct mri_direct). */
struct mri_direct {
    struct mri_direct *prev, *next;
    size_t size, align; /* as requested */
};

struct mr_pools {
    struct mri_pools_hot hot;   /* first: read by the inline fast paths */
    mr_resource resource;       /* the mr_pools_resource() view */
    mr_resource *upstream;
    size_t nclasses;            /* the size classes and the exact sizes after them */
    size_t nsized;              /* the size classes (mri_pools_class_of) */
    size_t exact[MR_POOLS_MAX_EXACT]; /* the exact classes' block sizes, ascending */
    size_t pool_max;            /* the largest pooled size */
    size_t header_bytes;        /* this block: the struct and the class array */
    size_t max_blocks_opt;      /* max_blocks_per_chunk as given (0: default) */
    mri_ledger ledger;          /* upstream accounting, the header included */
    struct mri_chunks chunks;   /* not thread-safe: chunk records, upstream calls */
    struct mri_tc *tc;          /* thread-safe: the engine (in the header block), whose
                                   lock guards the direct blocks and the ledger too */
    struct mri_tc_local local;  /* not thread-safe: every thread's handle
                                   (mr_pools_local_get): max 0, all out of line */
    /* not thread-safe: the memory policy (trim.c) */
    struct mri_pools_cold *cold; /* per class (in the header block) */
    uint64_t trim_mask[MRI_MASK_WORDS];  /* classes with chunks before the current one */
    uint64_t purge_mask[MRI_MASK_WORDS]; /* classes with a chunk spanning a whole page */
    size_t taken;               /* bytes of chunks and direct blocks taken from upstream, ever */
    /* direct blocks */
    struct mri_direct direct;   /* sentinel of the circular list */
    size_t direct_count;        /* blocks on the list */
    size_t direct_bytes;        /* their requested sizes */
    size_t direct_allocations;  /* successful direct allocations so far */
    struct mri_walk walk;       /* MR_DEBUG 3: when the next walk is due */
    mr_node node;               /* in the tree of lifetimes (thread-safe: its tree lock
                                   follows the engine in the header block) */
};

#define MRI_TS_BLOCK_MIN ((size_t)16) /* a thread-safe pool's smallest block */

/* The block size of class i: a size class's, or an exact size's; thread-
 * safe pools keep two words in a free block (tsafe.c). */
static inline size_t mri_pools_size_of(const mr_pools *p, size_t i)
{
    if (i >= p->nsized)
        return p->exact[i - p->nsized];
    size_t s = mri_pools_class_size(i);
    return p->tc != NULL && s < MRI_TS_BLOCK_MIN ? MRI_TS_BLOCK_MIN : s;
}

/* The largest request the inline paths serve: below the smallest exact
 * size's class. */
static inline size_t mri_pools_inline_max(const mr_pools *p)
{
    return p->nclasses == p->nsized ? p->pool_max : mri_pools_class_size(mri_pools_class_of(p->exact[0] - 1) - 1);
}

static inline bool mri_mask_has(const uint64_t *m, size_t i) { return (m[i / 64] >> (i % 64) & 1) != 0; }
static inline void mri_mask_set(uint64_t *m, size_t i) { m[i / 64] |= (uint64_t)1 << (i % 64); }
static inline void mri_mask_clear(uint64_t *m, size_t i) { m[i / 64] &= ~((uint64_t)1 << (i % 64)); }

/* Upstream calls and the lock that guards them: a thread-safe pool's go
 * through its engine, under its lock (dropped across each call). */
static inline struct mri_chunks *mri_pools_up(mr_pools *p) { return p->tc != NULL ? &p->tc->chunks : &p->chunks; }

static inline void mri_pools_lock(mr_pools *p)
{
    if (p->tc != NULL)
        mri_tc_lock(p->tc);
}

static inline void mri_pools_unlock(mr_pools *p)
{
    if (p->tc != NULL)
        mri_tc_unlock(p->tc);
}

/* direct.c: requests the classes do not serve, passed to the upstream and
 * tracked.  alloc: NULL with errno, nothing changed, on failure. */
bool mri_direct_fits(size_t size, size_t align); /* could such a request be made? */
MR_NOINLINE void *mri_direct_alloc(mr_pools *p, size_t size, size_t align);
MR_NOINLINE void mri_direct_free(mr_pools *p, void *ptr, size_t size, size_t align);
void mri_direct_release_all(mr_pools *p);
bool mri_direct_verify(const mr_pools *p, size_t *held, size_t *blocks, size_t *steps);

/* trim.c: the one hook of the memory policy, called after the pool took
 * memory from upstream (a new chunk, a direct block) -- never before, so a
 * failed allocation changes nothing. */
void mri_pools_after_take(mr_pools *p);

/* pools.c: the node's operations (in the table of kinds). */
extern const struct mri_node_ops mri_pools_node_ops;

/* pools_check.c: mr_pools_check, counting its steps (MRI_WALK). */
bool mri_pools_walk(const mr_pools *p, size_t *steps);

/* pools.c: class i as reset leaves it -- no free block, bumping from its
 * first chunk again, the others kept; live blocks forgotten. */
void mri_pools_class_rewind(mr_pools *p, size_t i);

#endif /* MEMRES_POOLS_IMPL_H */
