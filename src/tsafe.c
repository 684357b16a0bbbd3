/* SPDX-License-Identifier: MIT */
/* src/tsafe.c -- the thread-safe engine: per-(pool, thread) caches in front
 * of shared per-class lists, what makes mr_pools and mr_objpool safe to
 * share between threads (thread_safe = true) with no lock and no shared
 * written cache line on the common path.
 *
 * Structure.  Each (pool, thread) pair has a cache: per class, the state an
 * unsynchronised pool has (a free list and a carving region [bump, end)),
 * private to the thread.  Each class also has shared state: a stack of
 * batches of free blocks (pushed lock-free, popped under the class's
 * lock), and under that lock a list of carving regions handed back and
 * the class's chunks.
 *
 *   alloc  pop the thread's list, else carve its region, else (refill) take
 *          a batch, else a region, else a kept chunk (after reset), else a
 *          new chunk from upstream -- in that order: a new chunk is taken
 *          only when no free block of the class is reachable by the thread.
 *   free   push on the thread's list -- whichever thread allocated the
 *          block (the size is given: the class is known, no owner lookup);
 *          when the list holds more than its limit, it goes to the shared
 *          stack (one compare-and-swap: the whole list, in O(1), when the
 *          limit is the minimum; else one batch of it).
 *   exit   (pthread key destructor) each of the thread's lists becomes one
 *          batch (O(1): refill takes such a batch apart a batch at a time), its
 *          regions go to the shared list; the cache itself is parked on the
 *          pool's spare list for the next thread (no upstream call at exit).
 *
 * Why not send blocks back to the thread that carved them (mimalloc,
 * snmalloc): that needs the owner of every block, i.e. a header or aligned
 * chunks and a lookup on every free; memres is told the size at free, so
 * any thread can keep the block for its own next request of that class,
 * and the limit keeps a thread that only frees from hoarding.
 *
 * The limit of a thread's list for a class is min_limit (two batches) plus
 * its own blocks ("own peak"): those of the chunks it took from upstream
 * since the last reset, and those it took over from a list an exited thread
 * left (whose cache went back to min_limit: the allowance moves with the
 * blocks).  A thread that frees what it allocated keeps it all, as an
 * unsynchronised pool would (binary-trees: no lock at all), and a thread
 * that only frees keeps at most min_limit.  A thread's new chunks are as
 * large as what it owns (first-size at first, doubling, capped): chunk size
 * follows the thread's own demand, not the other threads'.
 *
 * Memory bound.  For every class, at every moment,
 *     capacity <= live + sum over threads T of (limit_T + region_T)
 *                      + shared batches and regions,
 * and a chunk is taken only when the taking thread's list and region and
 * the shared lists are empty (the shared part is then 0), so the chunks
 * ever taken satisfy
 *     held_blocks <= peak live + sum over other threads (min_limit + own
 *                    blocks + one region) + the new chunk.
 * Rounds of fresh threads add nothing: an exiting thread's blocks and
 * region go to the shared lists, where the next round takes them first
 * (tests/test_pools_threads_bound.c proves it on exact held).
 *
 * Cache lookup.  The first MRI_TC_SLOTS engines alive at once each own an
 * entry index (g_index_used); every thread's table (static TLS) holds at
 * that index its slots for the engine, or mri_tc_none.  A destroy, which
 * no other call on the pool may overlap, sets the entry back to
 * mri_tc_none in the thread of each active cache before the index is
 * free again, and an exiting thread resets its whole table: an entry
 * never leads to a cache that is not the thread's for the index's present
 * engine.  Engines beyond the first MRI_TC_SLOTS find their caches out of
 * line, in a direct-mapped table keyed by the engine's id (a global
 * counter, never reused: an entry left by a destroyed engine never
 * matches).  The first use of a pool by a thread takes a spare cache, or a
 * new one from upstream.
 *
 * Locks (word locks, src/lock.h), in this order (no path takes an earlier
 * one while holding a later one; no upstream call is made with any of them
 * held):
 *     g_mu (global: thread exit, cache attach, pool destroy/reset, fork)
 *       -> thread mu (a thread's list of caches)
 *         -> class mu (shared lists of one class of one pool)
 *           -> pool mu (ledger, chunk records, cache lists)
 * The common path takes none.  A refill takes its class's mu once; a new
 * chunk takes the pool's mu, which the chunk records (chunks.c) drop
 * around the upstream call.  Thread exit and fork come through the one
 * registry of per-thread state (threads.c), before the block pool's.
 *
 * Fork.  pthread_atfork takes every lock above before fork, gives them
 * back after it in the parent and makes them anew in the child (a thread
 * that did not come along may have been inside one's mutex, waiting or
 * waking), so the child sees consistent shared lists.
 * In the child, the caches of the threads that did not come along move to
 * the pool's lost list: their free blocks and regions are not reused
 * (they stay held until release or destroy) -- their threads may have been
 * in the middle of a push or pop.
 *
 * Batches and regions live in the free blocks themselves (every block is at
 * least two words): a batch's first block holds the next batch in its
 * second word, its second block (if any) the batch's block count; a
 * region's first block holds the next region and the region's end.
 *
 * Files: this one runs the engine; tsafe_check.c walks it (mri_tc_check);
 * tsafe_impl.h has what both read (those records, a slot's counts).
 */
#include <string.h>

#include "threads.h"
#include "tsafe_impl.h"

#define BATCH_BYTES ((size_t)16 * 1024) /* a batch moves about this much ... */
#define BATCH_MIN ((size_t)2)           /* ... and at least 2, at most 128 blocks */
#define BATCH_MAX ((size_t)128)

MR_API const struct mri_tc_slot mri_tc_none[MRI_TC_MAX_CLASSES];
#define NONE1 (struct mri_tc_slot *)mri_tc_none
#define NONE8 NONE1, NONE1, NONE1, NONE1, NONE1, NONE1, NONE1, NONE1
_Static_assert(MRI_TC_SLOTS == 32, "the initialiser below has MRI_TC_SLOTS + 1 entries");
MR_API _Thread_local struct mri_tc_slot *mri_tc_table[MRI_TC_SLOTS + 1]
    __attribute__((tls_model("initial-exec"))) = {NONE8, NONE8, NONE8, NONE8, NONE1};
__thread struct mri_tc_thread mri_tc_self __attribute__((tls_model("initial-exec"), visibility("hidden")));

/* The overflow table: engines with no entry index, by id. */
#define OVERFLOW_SLOTS 8
struct overflow_entry {
    uint64_t id;
    struct mri_tc_slot *slots;
};
static __thread struct overflow_entry overflow[OVERFLOW_SLOTS] __attribute__((tls_model("initial-exec")));

static mri_lock g_mu = MRI_LOCK_INIT;
static struct mri_tc *g_engines; /* every engine (under g_mu) */
static uint32_t g_index_used;    /* entry indexes taken (under g_mu) */
_Static_assert(MRI_TC_SLOTS <= 32, "g_index_used has a bit per entry index");
static uint64_t g_next_id;       /* atomic */

/* ---- second words: batch and region records inside free blocks ---- */

static void word1_set(void *b, uintptr_t v)
{
    char *w = (char *)b + LINK;
    mri_track_unpoison(w, LINK);
    memcpy(w, &v, sizeof v);
    mri_track_poison(w, LINK);
}

/* Pushes the chain head (n blocks, NULL-terminated) on the class's stack:
 * lock-free (a Treiber push; pops are serialised by the class's lock, so
 * a popped batch cannot come back under a popper's feet: no ABA). */
static void batch_push(struct mri_tc *t, struct mri_tc_class *cls, void *head, size_t n)
{
    if (n >= 2)
        word1_set(mri_link_get(head, t->key), n);
    void *old = __atomic_load_n(&cls->batches, __ATOMIC_RELAXED);
    do
        word1_set(head, (uintptr_t)old ^ t->key);
    while (!__atomic_compare_exchange_n(&cls->batches, &old, head, true, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
    __atomic_fetch_add(&cls->batched, n, __ATOMIC_RELAXED);
}

/* Pops a batch (NULL: none), holding cls->mu. */
static void *batch_pop_locked(struct mri_tc *t, struct mri_tc_class *cls)
{
    void *head = __atomic_load_n(&cls->batches, __ATOMIC_ACQUIRE);
    while (head != NULL &&
           !__atomic_compare_exchange_n(&cls->batches, &head, (void *)(word1_get(head) ^ t->key), true,
                                        __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE))
        ;
    return head;
}

/* Ends the chain at head after its first n blocks (n >= 1, the chain at
 * least that long); returns the rest of it. */
static void *chain_cut(struct mri_tc *t, void *head, size_t n)
{
    void *last = head;
    for (size_t k = 1; k < n; k++)
        last = mri_link_get(last, t->key);
    void *rest = mri_link_get(last, t->key);
    mri_link_set(last, NULL, t->key);
    return rest;
}

/* Cuts the first n blocks (n <= the list's length) off the slot's list;
 * returns them (the caller counts them out). */
static void *cut_front(struct mri_tc *t, struct mri_tc_slot *s, size_t n)
{
    void *head = s->free;
    s->free = chain_cut(t, head, n);
    return head;
}

static void region_push_locked(struct mri_tc *t, struct mri_tc_class *cls, uintptr_t bump, uintptr_t end)
{
    void *b = (void *)bump;
    mri_link_set(b, cls->regions, t->key);
    word1_set(b, end);
    cls->regions = b;
    cls->region_blocks += (end - bump) / cls->size;
}

/* ---- the counts of a slot ----
 * allocations = from_list + carved: an inline allocation adds one to
 * either.  An inline free takes one from room and counts nothing else.
 * The rest is derived, with limit and moved from the slot's tally (after
 * the cache's slots; moved: the blocks the list passed to the shared
 * lists less those it took from them):
 *     frees           = limit + moved - credit - room
 *     the list holds    limit - credit - room - from_list blocks
 * (mod 2^64), so credit + from_list + room is the limit less the list's
 * length.  room is never more than that, so the list never holds more than
 * its limit; an allocation gives no room back (one count on each inline
 * path, as an unsynchronised pool has): when room runs out, mri_tc_put
 * takes credit + from_list as its new room, and only a list at its limit
 * goes out of line, to mri_tc_spill.  Each slow-path change keeps frees
 * as they are: a limit or moved raised raises credit as much, a room set
 * moves credit the other way.
 *
 * Only the owning thread writes the counts.  The slow paths store in an
 * order (release stores) where memory as it was at one instant -- a cache
 * lost at fork, its thread stopped anywhere -- shows frees too high, or one
 * too low (a free between its push and its count); a stats snapshot from
 * another thread reads the counts one by one and may be off by a batch
 * either way while the thread runs, and mri_tc_counts keeps it within
 * [0, allocations]. */

/* credit += n, after the stores before it. */
static void credit_add(struct mri_tc_slot *s, size_t n)
{
    __atomic_store_n(&s->credit, s->credit + n, __ATOMIC_RELEASE);
}

/* The slot's list passed n blocks to the shared lists (n "negative": took
 * -n from them). */
static void moved_add(const struct mri_tc *t, struct mri_tc_slot *s, size_t i, size_t n)
{
    struct mri_tc_tally *y = slot_tally(t, s, i);
    __atomic_store_n(&y->moved, y->moved + n, __ATOMIC_RELEASE);
    credit_add(s, n);
}

/* The slot's limit becomes n (the list's length unchanged). */
static void set_limit(const struct mri_tc *t, struct mri_tc_slot *s, size_t i, size_t n)
{
    struct mri_tc_tally *y = slot_tally(t, s, i);
    size_t d = n - y->limit;
    __atomic_store_n(&y->limit, n, __ATOMIC_RELEASE);
    credit_add(s, d);
}

/* Sets the slot's room to r, frees unchanged: credit falls first when room
 * grows and after when it shrinks, so that frees read in between are too
 * high. */
static void set_room(struct mri_tc_slot *s, size_t r)
{
    size_t old = s->room;
    if (r > old) {
        __atomic_store_n(&s->credit, s->credit - (r - old), __ATOMIC_RELEASE);
        __atomic_store_n(&s->room, r, __ATOMIC_RELEASE);
    } else {
        __atomic_store_n(&s->room, r, __ATOMIC_RELEASE);
        credit_add(s, old - r);
    }
}

/* The room a list of n blocks leaves under the slot's limit (0 when it is
 * over: the next free spills). */
static size_t room_for(const struct mri_tc *t, const struct mri_tc_slot *s, size_t i, size_t n)
{
    size_t limit = slot_limit(t, s, i);
    return n < limit ? limit - n : 0;
}

/* ---- chunks ---- */

/* The blocks of the next new chunk a thread takes for class cls: as many
 * as the thread already has of its own (its limit above the minimum), at
 * least the first chunk's, at most the cap -- so each thread's chunks
 * double with its own demand, as an unsynchronised pool's do, and a thread
 * that needs one block of a class gets a first-size chunk however much
 * the other threads took. */
static size_t next_chunk_blocks(const struct mri_tc_class *cls, size_t limit)
{
    size_t own = limit - cls->min_limit;
    size_t n = own < cls->first_blocks ? cls->first_blocks : own;
    return n < cls->max_blocks ? n : cls->max_blocks;
}

/* A new chunk of n blocks of cls from upstream, with its record.  No lock
 * held on entry or exit.  NULL with errno on failure, nothing kept.  The
 * chunk is counted by the ledger and put on the pending list in one hold
 * of the lock, so that a fork finds it (fork_child) until the caller links
 * it into its class. */
static struct mri_chunk *chunk_new(struct mri_tc *t, struct mri_tc_class *cls, size_t n)
{
    size_t bytes;
    if (!mri_chunk_layout(cls->size, &n, cls->max_blocks, cls->round, &bytes))
        return NULL;
    mri_lock_take(&t->mu);
    struct mri_chunk *r = mri_chunk_new(&t->chunks, bytes, n, cls->size, cls->align);
    if (r != NULL) {
        r->cls = cls;
        r->next = t->pending;
        t->pending = r;
    }
    mri_lock_give(&t->mu);
    return r;
}

/* Takes r (from chunk_new) off the pending list; under cls->mu. */
static void pending_remove(struct mri_tc *t, struct mri_chunk *r)
{
    mri_lock_take(&t->mu);
    struct mri_chunk **pp = &t->pending;
    while (*pp != r)
        pp = &(*pp)->next;
    *pp = r->next;
    mri_lock_give(&t->mu);
    r->next = NULL;
}

/* Appends chunk r to its class's list (under cls->mu, or in fork_child). */
static void chunk_link(struct mri_tc_class *cls, struct mri_chunk *r)
{
    if (cls->last != NULL)
        cls->last->next = r;
    else
        cls->chunks = r;
    cls->last = r;
    cls->capacity += r->blocks;
}

/* ---- the common path's slow ends ---- */

/* The slot is empty (no free block, no region): fill it from the shared
 * lists, else a kept chunk, else a new one; return one block. */
MR_NOINLINE void *mri_tc_refill(struct mri_tc *t, struct mri_tc_slot *s, size_t i)
{
    struct mri_tc_class *cls = &t->classes[i];
    const size_t size = cls->size;
    mri_lock_take(&cls->mu);
    void *head = batch_pop_locked(t, cls);
    if (head != NULL) {
        size_t n = batch_count(t, head);
        __atomic_fetch_sub(&cls->batched, n, __ATOMIC_RELAXED);
        if (n > 2 * cls->min_limit) {
            /* a whole list handed back at thread exit (slot_flush): take
             * one batch, leave the rest (walking the blocks this thread is
             * about to hand out anyway).  The exited thread's allowance
             * passes on with its blocks: they count in this thread's limit
             * as its own chunks do (the exiting cache's went back to the
             * minimum), so a thread that replaces another keeps what it
             * frees as its predecessor did. */
            batch_push(t, cls, chain_cut(t, head, cls->batch), n - cls->batch);
            n = cls->batch;
            set_limit(t, s, i, slot_limit(t, s, i) + n);
        }
        mri_lock_give(&cls->mu);
        /* n blocks in, the first handed out as if from the list (frees
         * unchanged); the list, empty before, now holds n - 1 */
        s->free = mri_link_get(head, t->key);
        MRI_TC_COUNT(s, from_list);
        moved_add(t, s, i, -n);
        set_room(s, room_for(t, s, i, n - 1));
        return head;
    }
    uintptr_t bump = 0, end = 0;
    if (cls->regions != NULL) {
        void *b = cls->regions;
        cls->regions = mri_link_get(b, t->key);
        bump = (uintptr_t)b;
        end = word1_get(b);
        cls->region_blocks -= (end - bump) / size;
    } else if (cls->next != NULL) {
        struct mri_chunk *r = cls->next;
        cls->next = r->next;
        bump = r->base;
        end = r->base + r->blocks * size;
        set_limit(t, s, i, slot_limit(t, s, i) + r->blocks);
    }
    if (bump != end) {
        mri_lock_give(&cls->mu);
    } else {
        size_t n = next_chunk_blocks(cls, slot_limit(t, s, i));
        mri_lock_give(&cls->mu);
        struct mri_chunk *r = chunk_new(t, cls, n);
        if (r == NULL)
            return NULL;
        mri_lock_take(&cls->mu);
        MR_ASSERT_INTERNAL(cls->next == NULL);
        pending_remove(t, r);
        chunk_link(cls, r);
        mri_lock_give(&cls->mu);
        bump = r->base;
        end = r->base + r->blocks * size;
        set_limit(t, s, i, slot_limit(t, s, i) + r->blocks);
    }
    s->bump = bump + size;
    s->end = end;
    MRI_TC_COUNT(s, carved);
    return (void *)bump;
}

/* The slot's room ran out with a block pushed on its list and not yet
 * counted: counts it and the list; when the list is over its limit, a batch
 * goes to the shared stack; then the room that is left. */
MR_NOINLINE void mri_tc_spill(struct mri_tc *t, struct mri_tc_slot *s, size_t i)
{
    struct mri_tc_class *cls = &t->classes[i];
    credit_add(s, -(size_t)1); /* the free just pushed */
    size_t n = slot_listed(t, s, i), limit = slot_limit(t, s, i);
    if (n > limit) {
        if (limit == cls->min_limit) {
            /* a thread that frees what others allocated (a consumer): its
             * whole list, 2 batches + 1 blocks, goes as one batch, in O(1) */
            batch_push(t, cls, s->free, n);
            s->free = NULL;
            moved_add(t, s, i, n);
            n = 0;
        } else { /* a thread with chunks of its own keeps its newest blocks */
            batch_push(t, cls, cut_front(t, s, cls->batch), cls->batch);
            moved_add(t, s, i, cls->batch);
            n -= cls->batch;
        }
    }
    set_room(s, room_for(t, s, i, n));
}

MR_NOINLINE void mri_tc_free_nocache(struct mri_tc *t, void *b, size_t i)
{
    struct mri_tc_class *cls = &t->classes[i];
    mri_track_poison(b, cls->size);
    mri_link_set(b, NULL, t->key);
    batch_push(t, cls, b, 1);
    mri_lock_take(&cls->mu);
    cls->frees_nocache++;
    mri_lock_give(&cls->mu);
}

/* Moves everything slot s of class i holds to the shared lists. */
static void slot_flush(struct mri_tc *t, struct mri_tc_slot *s, size_t i)
{
    struct mri_tc_class *cls = &t->classes[i];
    /* the whole list as one batch: O(1) at thread exit, where walking a
     * thread's free blocks (a freed tree of 2^19 nodes: cold) cost more
     * than the thread's work; refill splits it a batch at a time */
    size_t n = slot_listed(t, s, i);
    if (n != 0)
        batch_push(t, cls, s->free, n);
    s->free = NULL;
    moved_add(t, s, i, n);
    if (s->bump != s->end) {
        mri_lock_take(&cls->mu);
        region_push_locked(t, cls, s->bump, s->end);
        mri_lock_give(&cls->mu);
    }
    s->bump = s->end = 0;
    set_limit(t, s, i, cls->min_limit);
    set_room(s, cls->min_limit);
}

static void cache_flush(struct mri_tc *t, struct mri_tc_cache *c)
{
    for (size_t i = 0; i < t->nclasses; i++)
        slot_flush(t, &c->slots[i], i);
}

/* ---- cache lists ---- */

static void list_push(struct mri_tc_cache **head, struct mri_tc_cache *c)
{
    c->prev = NULL;
    c->next = *head;
    if (*head != NULL)
        (*head)->prev = c;
    *head = c;
}

static void list_remove(struct mri_tc_cache **head, struct mri_tc_cache *c)
{
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        *head = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
}

static void thread_remove(struct mri_tc_thread *th, struct mri_tc_cache *c)
{
    for (struct mri_tc_cache **pp = &th->caches; *pp != NULL; pp = &(*pp)->tnext)
        if (*pp == c) {
            *pp = c->tnext;
            return;
        }
}

/* ---- threads ---- */

/* The thread-exit hook (threads.c): a thread that used thread-safe pools
 * exits. */
void mri_tsafe_thread_exit(void)
{
    struct mri_tc_thread *th = &mri_tc_self;
    if (!th->ready)
        return;
    mri_lock_take(&g_mu);
    mri_lock_take(&th->mu);
    for (struct mri_tc_cache *c = th->caches, *next; c != NULL; c = next) {
        next = c->tnext;
        struct mri_tc *t = c->owner;
        cache_flush(t, c);
        mri_lock_take(&t->mu);
        list_remove(&t->active, c);
        list_push(&t->spare, c);
        c->thread = NULL;
        mri_lock_give(&t->mu);
    }
    th->caches = NULL;
    for (size_t k = 0; k < MRI_TC_SLOTS; k++) /* this thread's */
        mri_tc_table[k] = (struct mri_tc_slot *)mri_tc_none;
    memset(overflow, 0, sizeof overflow);
    mri_lock_give(&th->mu);
    mri_lock_give(&g_mu);
}

void mri_tsafe_fork_prepare(void)
{
    mri_lock_take(&g_mu);
    for (struct mri_tc *t = g_engines; t != NULL; t = t->reg_next) {
        for (size_t i = 0; i < t->nclasses; i++)
            mri_lock_take(&t->classes[i].mu);
        mri_lock_take(&t->mu);
    }
}

void mri_tsafe_fork_parent(void)
{
    for (struct mri_tc *t = g_engines; t != NULL; t = t->reg_next) {
        mri_lock_give(&t->mu);
        for (size_t i = 0; i < t->nclasses; i++)
            mri_lock_give(&t->classes[i].mu);
    }
    mri_lock_give(&g_mu);
}

void mri_tsafe_fork_child(void)
{
    struct mri_tc_thread *self = &mri_tc_self;
    for (struct mri_tc *t = g_engines; t != NULL; t = t->reg_next) {
        /* no thread of the child is in the middle of an upstream call */
        t->chunks.ledger->reserved = 0;
        /* chunks taken by threads that did not come along, not yet in
         * their class: linked now, their blocks a region anyone can carve */
        for (struct mri_chunk *r = t->pending, *next; r != NULL; r = next) {
            struct mri_tc_class *cls = r->cls;
            next = r->next;
            r->next = NULL;
            chunk_link(cls, r);
            region_push_locked(t, cls, r->base, r->base + r->blocks * cls->size);
        }
        t->pending = NULL;
        /* a push may have been between its compare-and-swap and its count */
        for (size_t i = 0; i < t->nclasses; i++) {
            size_t n = 0;
            for (void *h = t->classes[i].batches; h != NULL; h = (void *)(word1_get(h) ^ t->key))
                n += batch_count(t, h);
            t->classes[i].batched = n;
        }
        for (struct mri_tc_cache *c = t->active, *next; c != NULL; c = next) {
            next = c->next;
            if (c->thread != self) { /* its thread is not in this process */
                list_remove(&t->active, c);
                list_push(&t->lost, c);
                c->thread = NULL;
            }
        }
        (void)mri_lock_init(&t->mu);
        for (size_t i = 0; i < t->nclasses; i++)
            (void)mri_lock_init(&t->classes[i].mu);
    }
    if (self->ready)
        (void)mri_lock_init(&self->mu);
    (void)mri_lock_init(&g_mu);
}

MR_NOINLINE struct mri_tc_cache *mri_tc_attach(struct mri_tc *t)
{
    struct mri_tc_thread *self = &mri_tc_self;
    if (!self->ready) {
        (void)mri_lock_init(&self->mu);
        self->table = mri_tc_table;
        self->ready = true;
    }
    struct mri_tc_cache *c;
    mri_lock_take(&self->mu);
    for (c = self->caches; c != NULL && c->id != t->id; c = c->tnext)
        ;
    mri_lock_give(&self->mu);
    if (c == NULL) {
        /* its exit hands the cache back (again, when this is a later
         * destructor's use): without that, no cache */
        if (!mri_thread_watch())
            return mri_fail(ENOMEM);
        /* a spare cache, else a new one (no lock across the upstream call) */
        mri_lock_take(&t->mu);
        c = t->spare;
        if (c != NULL) {
            list_remove(&t->spare, c);
        } else {
            c = mri_chunks_up_allocate(&t->chunks, t->cache_bytes, 64);
            if (c != NULL) {
                memset(c, 0, t->cache_bytes);
                c->owner = t;
                c->id = t->id;
                c->bytes = t->cache_bytes;
                c->local = t->local;
                for (size_t i = 0; i < t->nclasses; i++)
                    c->slots[i].size = t->classes[i].size;
            }
        }
        if (c == NULL) {
            mri_lock_give(&t->mu);
            return NULL; /* errno from upstream */
        }
        for (size_t i = 0; i < t->nclasses; i++) { /* (a spare one is flushed: the same) */
            set_limit(t, &c->slots[i], i, t->classes[i].min_limit);
            set_room(&c->slots[i], t->classes[i].min_limit);
        }
        list_push(&t->active, c);
        mri_lock_give(&t->mu);
        /* the thread's list under g_mu: a destroy or exit is not walking it */
        mri_lock_take(&g_mu);
        mri_lock_take(&self->mu);
        c->thread = self;
        c->tnext = self->caches;
        self->caches = c;
        mri_lock_give(&self->mu);
        mri_lock_give(&g_mu);
    }
    if (t->index != MRI_TC_NONE) {
        mri_tc_table[t->index] = c->slots;
    } else {
        struct overflow_entry *e = &overflow[t->id % OVERFLOW_SLOTS];
        e->id = t->id;
        e->slots = c->slots;
    }
    return c;
}

struct mri_tc_slot *mri_tc_overflow_slots(const struct mri_tc *t)
{
    const struct overflow_entry *e = &overflow[t->id % OVERFLOW_SLOTS];
    return e->id == t->id ? e->slots : NULL;
}

uintptr_t mri_tc_ref(size_t index)
{
#if MRI_TC_TP
    uintptr_t tp;
    __asm__("movq %%fs:0, %0" : "=r"(tp)); /* the thread pointer */
    return (uintptr_t)&mri_tc_table[index] - tp;
#else
    return index;
#endif
}

struct mri_tc_local *mri_tc_local_get(struct mri_tc *t)
{
    struct mri_tc_slot *s = mri_tc_slots_of(t);
    struct mri_tc_cache *c = s != NULL ? mri_container_of(s, struct mri_tc_cache, slots) : mri_tc_attach(t);
    return c != NULL ? &c->local : NULL;
}

bool mri_tc_listed(struct mri_tc *t, size_t i, const void *b)
{
    const struct mri_tc_slot *s = mri_tc_slots_of(t);
    for (const void *f = s != NULL ? s[i].free : NULL; f != NULL; f = mri_link_load(f, t->key))
        if (f == b)
            return true;
    return false;
}

void mri_tc_flush(struct mri_tc *t)
{
    struct mri_tc_thread *self = &mri_tc_self;
    struct mri_tc_cache *c = NULL;
    if (mri_tc_slots_of(t) != NULL) {
        c = mri_container_of(mri_tc_slots_of(t), struct mri_tc_cache, slots);
    } else if (self->ready) {
        mri_lock_take(&self->mu);
        for (c = self->caches; c != NULL && c->id != t->id; c = c->tnext)
            ;
        mri_lock_give(&self->mu);
    }
    if (c != NULL)
        cache_flush(t, c);
}

/* ---- lifetime ---- */

size_t mri_tc_bytes(size_t nclasses)
{
    return mri_align_up_nocheck(sizeof(struct mri_tc), 64) + nclasses * sizeof(struct mri_tc_class);
}

struct mri_tc *mri_tc_layout(void *mem, size_t nclasses, mri_ledger *ledger, mr_resource *up, uintptr_t key)
{
    struct mri_tc *t = mem;
    t->id = __atomic_add_fetch(&g_next_id, 1, __ATOMIC_RELAXED);
    t->index = MRI_TC_NONE; /* mri_tc_start takes one */
    t->chunks = (struct mri_chunks){.ledger = ledger, .upstream = up, .lock = &t->mu};
    t->key = key;
    t->nclasses = nclasses;
    t->classes = (struct mri_tc_class *)(void *)((char *)mem + mri_align_up_nocheck(sizeof(struct mri_tc), 64));
    t->cache_bytes = sizeof(struct mri_tc_cache) + nclasses * (sizeof(struct mri_tc_slot) + sizeof(struct mri_tc_tally));
    return t;
}

void mri_tc_start(struct mri_tc *t)
{
    (void)mri_threads_ready(); /* the fork handlers, before the pool is used */
    (void)mri_lock_init(&t->mu);
    for (size_t i = 0; i < t->nclasses; i++) {
        struct mri_tc_class *cls = &t->classes[i];
        MR_ASSERT_INTERNAL(cls->size >= 2 * LINK && cls->first_blocks >= 1 && cls->max_blocks >= 1);
        size_t b = BATCH_BYTES / cls->size;
        cls->batch = b < BATCH_MIN ? BATCH_MIN : b > BATCH_MAX ? BATCH_MAX : b;
        cls->min_limit = 2 * cls->batch;
        (void)mri_lock_init(&cls->mu);
    }
    mri_lock_take(&g_mu);
    if (g_index_used != UINT32_MAX) {
        t->index = (size_t)__builtin_ctz(~g_index_used);
        g_index_used |= (uint32_t)1 << t->index;
    }
    t->reg_prev = NULL;
    t->reg_next = g_engines;
    if (g_engines != NULL)
        g_engines->reg_prev = t;
    g_engines = t;
    mri_lock_give(&g_mu);
}

/* Empties every cache and shared list (under g_mu: exiting threads flush
 * into them).  release: also forgets the chunks, kept in cls->dropped. */
static void empty_all(struct mri_tc *t, bool release)
{
    struct mri_tc_cache *lists[3] = {t->active, t->spare, t->lost};
    for (size_t l = 0; l < 3; l++)
        for (struct mri_tc_cache *c = lists[l]; c != NULL; c = c->next)
            for (size_t i = 0; i < t->nclasses; i++) {
                struct mri_tc_slot *s = &c->slots[i];
                s->free = NULL;
                s->bump = s->end = 0;
                /* every block free: frees = allocations, kept in from_list;
                 * the list empty, with room up to the limit */
                struct mri_tc_tally *y = slot_tally(t, s, i);
                __atomic_store_n(&s->from_list, s->from_list + s->carved, __ATOMIC_RELAXED);
                __atomic_store_n(&s->carved, 0, __ATOMIC_RELAXED);
                __atomic_store_n(&y->moved, 0, __ATOMIC_RELAXED);
                __atomic_store_n(&y->limit, t->classes[i].min_limit, __ATOMIC_RELAXED);
                __atomic_store_n(&s->room, y->limit, __ATOMIC_RELAXED);
                __atomic_store_n(&s->credit, -s->from_list, __ATOMIC_RELAXED);
            }
    for (size_t i = 0; i < t->nclasses; i++) {
        struct mri_tc_class *cls = &t->classes[i];
        __atomic_store_n(&cls->batches, NULL, __ATOMIC_RELAXED);
        __atomic_store_n(&cls->batched, 0, __ATOMIC_RELAXED);
        cls->regions = NULL;
        cls->region_blocks = 0;
        cls->frees_nocache = 0;
        if (MRI_TRACKING)
            for (struct mri_chunk *r = cls->chunks; r != NULL; r = r->next)
                mri_track_poison((void *)r->base, r->bytes);
        cls->next = cls->chunks;
        if (release) {
            cls->dropped = cls->chunks;
            cls->chunks = cls->last = cls->next = NULL;
            cls->capacity = 0;
        }
    }
}

/* Returns the dropped chunks and the record pages upstream (no other
 * call on the pool runs; the upstream calls are made with no lock held). */
static void give_back(struct mri_tc *t)
{
    mri_lock_take(&t->mu);
    for (size_t i = 0; i < t->nclasses; i++) {
        for (struct mri_chunk *r = t->classes[i].dropped, *next; r != NULL; r = next) {
            next = r->next;
            mri_chunk_free(&t->chunks, r, t->classes[i].align);
        }
        t->classes[i].dropped = NULL;
    }
    mri_chunks_release(&t->chunks);
    mri_lock_give(&t->mu);
}

void mri_tc_reset(struct mri_tc *t, bool release)
{
    mri_lock_take(&g_mu);
    empty_all(t, release);
    mri_lock_give(&g_mu);
    if (release)
        give_back(t);
}

void mri_tc_fini(struct mri_tc *t)
{
    mri_lock_take(&g_mu);
    /* no thread finds its cache again: each is taken off its thread's list,
     * and its thread's entry no longer leads to it (that thread is in no
     * call on the pool: a destroy overlaps none) */
    for (struct mri_tc_cache *c = t->active; c != NULL; c = c->next) {
        mri_lock_take(&c->thread->mu);
        thread_remove(c->thread, c);
        if (t->index != MRI_TC_NONE)
            c->thread->table[t->index] = (struct mri_tc_slot *)mri_tc_none;
        mri_lock_give(&c->thread->mu);
    }
    if (t->index != MRI_TC_NONE)
        g_index_used &= ~((uint32_t)1 << t->index);
    if (t->reg_prev != NULL)
        t->reg_prev->reg_next = t->reg_next;
    else
        g_engines = t->reg_next;
    if (t->reg_next != NULL)
        t->reg_next->reg_prev = t->reg_prev;
    empty_all(t, true);
    mri_lock_give(&g_mu);
    give_back(t);
    mri_lock_take(&t->mu);
    struct mri_tc_cache *lists[3] = {t->active, t->spare, t->lost};
    for (size_t l = 0; l < 3; l++)
        for (struct mri_tc_cache *c = lists[l], *next; c != NULL; c = next) {
            next = c->next;
            mri_chunks_up_deallocate(&t->chunks, c, c->bytes, 64);
        }
    t->active = t->spare = t->lost = NULL;
    mri_lock_give(&t->mu);
    for (size_t i = 0; i < t->nclasses; i++)
        mri_lock_fini(&t->classes[i].mu);
    mri_lock_fini(&t->mu);
}

/* ---- queries ---- */

void mri_tc_counts(struct mri_tc *t, size_t i, size_t *allocations, size_t *frees)
{
    size_t a = 0, f = 0;
    mri_lock_take(&t->mu);
    struct mri_tc_cache *lists[3] = {t->active, t->spare, t->lost};
    for (size_t l = 0; l < 3; l++)
        for (struct mri_tc_cache *c = lists[l]; c != NULL; c = c->next)
            cache_counts(t, c, i, &a, &f);
    mri_lock_give(&t->mu);
    mri_lock_take(&t->classes[i].mu);
    f += t->classes[i].frees_nocache;
    mri_lock_give(&t->classes[i].mu);
    *allocations = a;
    *frees = frees_within(a, f);
}

