/* SPDX-License-Identifier: MIT */
/* src/tsafe.h -- the engine behind the thread-safe pools (mr_pools and
 * mr_objpool with thread_safe = true): per-(pool, thread) caches in front
 * of shared per-class lists.  See tsafe.c for the design and the memory
 * bound; this header has what pools.c and objpool.c inline.
 *
 * The caller (a pool) owns the memory of a struct mri_tc and its class
 * array (mri_tc_bytes), the ledger and the upstream; it fills each class's
 * size and chunk policy and calls mri_tc_start.  Blocks of class i are
 * then allocated with mri_tc_alloc and freed with mri_tc_free from any
 * thread.  The caller unpoisons a block it hands out (the bytes the user
 * asked for); mri_tc_free poisons the whole block.
 */
#ifndef MEMRES_TSAFE_H
#define MEMRES_TSAFE_H

#include "chunks.h"
#include "internal.h"
#include "ledger.h"
#include "lock.h"
#include "memres/bits/tcache.h"
#include "track.h"

/* A (pool, thread) cache.  On the pool's active list while a thread has it,
 * on its spare list after the thread exited (reused by the next thread), on
 * its lost list in a child after fork (the thread did not come along). */
struct mri_tc_cache {
    struct mri_tc *owner;
    uint64_t id;                       /* owner's id */
    struct mri_tc_cache *prev, *next;  /* in one of the owner's lists (under owner->mu) */
    struct mri_tc_cache *tnext;        /* in the thread's list (under the thread's mu) */
    struct mri_tc_thread *thread;      /* NULL: spare or lost */
    size_t bytes;                      /* of this cache, from upstream */
    _Alignas(64) struct mri_tc_local local; /* the thread's handle (owner->local's copy) */
    _Alignas(64) struct mri_tc_slot slots[];
    /* after the slots, one struct mri_tc_tally per class (tsafe.c,
     * slot_tally) */
};

_Static_assert(offsetof(struct mri_tc_cache, slots) - offsetof(struct mri_tc_cache, local) == MRI_TC_LOCAL_SLOTS,
               "a handle's slots follow it at MRI_TC_LOCAL_SLOTS");

/* What no inline path reads of a slot (tsafe.c, "the counts of a slot");
 * written by the owning thread, read by stats from any. */
struct mri_tc_tally {
    size_t limit; /* most blocks the list keeps: two batches + the blocks of the
                     chunks this cache took from upstream since reset */
    size_t moved; /* blocks its list passed to the shared lists less those it
                     took from them (mod 2^64) */
};

/* The shared state of one class, under mu. */
struct mri_tc_class {
    mri_lock mu;
    void *batches;                  /* stack of batches of free blocks (tsafe.c) */
    size_t batched;                 /* blocks in them */
    void *regions;                  /* carving regions handed back by threads */
    size_t region_blocks;           /* blocks in them */
    struct mri_chunk *chunks;    /* every chunk, in order of first use */
    struct mri_chunk *last;      /* the newest */
    struct mri_chunk *next;      /* first chunk not handed out since reset; NULL: none */
    struct mri_chunk *dropped;   /* release: chunks to return once the locks are gone */
    size_t capacity;                /* blocks in all chunks */
    size_t frees_nocache;           /* frees by a thread that could not get a cache */
    /* set by the pool before mri_tc_start */
    size_t size;                    /* block size, >= 2 words */
    size_t align;                   /* chunk alignment (blocks are aligned to it) */
    size_t first_blocks;            /* blocks of the first chunk (>= 1) */
    size_t max_blocks;              /* the most blocks of a chunk; chunks double up to it */
    bool round;                     /* round chunk bytes to 64 / pages, filling with blocks */
    /* set by mri_tc_start */
    size_t batch;                   /* blocks a thread moves at once */
    size_t min_limit;               /* free blocks any thread may keep (2 * batch) */
};

/* The engine of one pool.  classes[] follows it in the caller's memory. */
struct mri_tc {
    uint64_t id;                    /* never reused: stale entries of the overflow table never match */
    size_t index;                   /* its entry in every thread's mri_tc_table; MRI_TC_NONE: none
                                       (more than MRI_TC_SLOTS engines alive: the overflow table) */
    mri_lock mu;                    /* ledger, chunk records, the cache lists */
    struct mri_chunks chunks;       /* the records, and every upstream call (lock: mu) */
    uintptr_t key;
    size_t nclasses;
    struct mri_tc_class *classes;
    struct mri_tc_cache *active, *spare, *lost;
    size_t cache_bytes;             /* one cache */
    struct mri_tc *reg_prev, *reg_next; /* every engine, for fork */
    struct mri_chunk *pending;      /* chunks taken, not yet in their class (under mu) */
    struct mri_tc_local local;      /* each cache's handle header; set by the pool
                                       before mri_tc_start */
};

/* A thread's caches (the entries that lead to them: mri_tc_table). */
struct mri_tc_thread {
    struct mri_tc_cache *caches;    /* under mu */
    struct mri_tc_slot **table;     /* the thread's mri_tc_table (a destroy resets its entry) */
    mri_lock mu;                    /* the list, against a destroy in another thread */
    bool ready;                     /* mu initialised */
};
extern __thread struct mri_tc_thread mri_tc_self __attribute__((tls_model("initial-exec"), visibility("hidden")));

/* Bytes of a struct mri_tc with n classes (the class array after it). */
size_t mri_tc_bytes(size_t nclasses);
/* The engine in mem (mri_tc_bytes(nclasses) bytes, 64-aligned, zeroed),
 * whose classes[i].size / align / first_blocks / max_blocks / round the
 * caller fills afterwards through the returned pointer, then calls
 * mri_tc_start.  Registers it for fork. */
struct mri_tc *mri_tc_layout(void *mem, size_t nclasses, mri_ledger *ledger, mr_resource *up, uintptr_t key);
void mri_tc_start(struct mri_tc *t);
/* What a pool whose entry index is index (mri_tc.index, or MRI_TC_NONE)
 * keeps as tc_ref for the inline paths (mri_tc_slots_at): the entry's
 * offset from the thread pointer, the same in every thread (initial-exec
 * TLS); the index itself where MRI_TC_TP is 0.  The checks compare the
 * kept value with the checking thread's. */
uintptr_t mri_tc_ref(size_t index);
/* Detaches every cache from its thread, returns caches, chunks and record
 * pages upstream.  No other call on the pool may run. */
void mri_tc_fini(struct mri_tc *t);
/* Frees every block: every cache and shared list emptied, every chunk
 * kept for carving again (release: returned upstream with the record
 * pages).  No other call on the pool may run; threads may exit. */
void mri_tc_reset(struct mri_tc *t, bool release);
/* The calling thread hands back what it caches for t. */
void mri_tc_flush(struct mri_tc *t);
/* Successful allocations and frees of class i over every cache (a
 * snapshot: exact when no thread allocates or frees). */
void mri_tc_counts(struct mri_tc *t, size_t i, size_t *allocations, size_t *frees);
/* Walks everything (quiescent only): returns true or reports the first
 * violation; adds the bytes and upstream blocks the engine holds. */
bool mri_tc_check(const struct mri_tc *t, const char *who, const void *obj, size_t *held, size_t *blocks);
/* The pool's lock (the caller's own shared state: direct blocks, ledger);
 * the caller's upstream calls go through t->chunks under it. */
static inline void mri_tc_lock(struct mri_tc *t) { mri_lock_take(&t->mu); }
static inline void mri_tc_unlock(struct mri_tc *t) { mri_lock_give(&t->mu); }

/* The calling thread's handle of t (its cache's header), attaching a
 * cache on the thread's first use; NULL with errno = ENOMEM when none can
 * be had. */
struct mri_tc_local *mri_tc_local_get(struct mri_tc *t);

/* Is b on the calling thread's free list of class i (MR_FREE_CHECK's
 * confirmation of a double free)? */
bool mri_tc_listed(struct mri_tc *t, size_t i, const void *b);

/* Out of line: the first use of t by this thread (NULL, errno = ENOMEM
 * when no cache can be had), the slot's refill, the spill of a batch, a
 * free with no cache. */
MR_NOINLINE struct mri_tc_cache *mri_tc_attach(struct mri_tc *t);
MR_NOINLINE void *mri_tc_refill(struct mri_tc *t, struct mri_tc_slot *s, size_t i);
MR_NOINLINE void mri_tc_spill(struct mri_tc *t, struct mri_tc_slot *s, size_t i);
MR_NOINLINE void mri_tc_free_nocache(struct mri_tc *t, void *b, size_t i);

/* The calling thread's slots of t, NULL when it has no cache of t yet:
 * its entry, or for an engine with no entry the overflow table's. */
struct mri_tc_slot *mri_tc_overflow_slots(const struct mri_tc *t);
static inline struct mri_tc_slot *mri_tc_slots_of(const struct mri_tc *t)
{
    if (MR_LIKELY(t->index != MRI_TC_NONE)) {
        struct mri_tc_slot *s = mri_tc_table[t->index];
        return MR_LIKELY(s != mri_tc_none) ? s : NULL;
    }
    return mri_tc_overflow_slots(t);
}

/* The calling thread's slot of class i of t (NULL: no cache, ENOMEM). */
static inline struct mri_tc_slot *mri_tc_slot(struct mri_tc *t, size_t i)
{
    struct mri_tc_slot *s = mri_tc_slots_of(t);
    if (MR_LIKELY(s != NULL))
        return &s[i];
    struct mri_tc_cache *c = mri_tc_attach(t);
    return c != NULL ? &c->slots[i] : NULL;
}

/* A block of class i, or NULL with errno = ENOMEM: mri_tc_take (in
 * memres/bits/tcache.h, the users' inline path) with links read as track.h
 * does, then a refill. */
static inline void *mri_tc_alloc(struct mri_tc *t, size_t i)
{
    struct mri_tc_slot *s = mri_tc_slot(t, i);
    if (MR_UNLIKELY(s == NULL))
        return NULL;
    void *b = s->free;
    if (MR_LIKELY(b != NULL)) {
        s->free = mri_link_get(b, t->key);
        MRI_TC_COUNT(s, from_list);
    } else if (MR_LIKELY(s->bump != s->end)) {
        b = (void *)s->bump;
        s->bump += s->size;
        MRI_TC_COUNT(s, carved);
    } else {
        b = mri_tc_refill(t, s, i); /* counted there */
        if (b == NULL)
            return NULL;
    }
    if (MR_FREE_CHECK && !MRI_TRACKING)
        mri_mark_set(b, 0); /* no stale mark (bits/tcache.h): nor batch records */
    return b;
}

/* Frees block b of class i (from any thread): a push on the thread's own
 * list; with its room spent, mri_tc_spill counts the list (and past its
 * limit, one batch goes to the shared stack). */
static inline void mri_tc_free(struct mri_tc *t, void *b, size_t i)
{
    struct mri_tc_slot *s = mri_tc_slot(t, i);
    if (MR_UNLIKELY(s == NULL)) {
        mri_tc_free_nocache(t, b, i);
        return;
    }
    mri_track_poison(b, s->size);
    mri_link_set(b, s->free, t->key);
    s->free = b;
    if (MR_LIKELY(s->room != 0))
        MRI_TC_UNCOUNT(s, room);
    else
        mri_tc_spill(t, s, i);
}

#endif /* MEMRES_TSAFE_H */
