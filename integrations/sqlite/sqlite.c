/* SPDX-License-Identifier: MIT */
/* integrations/sqlite/sqlite.c -- SQLite's allocator on memres pools
 * (memres/sqlite.h).
 *
 * Layout of a block: [size word: 8 bytes][the n bytes SQLite sees].  The
 * word's low 32 bits hold n as SQLite asked for it (an int: below 2^31);
 * bits 32-39 say where the block lives: 0 for the size-class pools (the
 * pool block is n + 8 bytes, so free and resize recompute the class from
 * the word), i + 1 for exact pool i; bit 63 (COUNTED) marks a class block
 * counted as a live block of its exact size (below).  A word above
 * LARGE - 8 thus sends free to the large path, one compare; below it the
 * class comes from a table (class_off).  SQLite rounds every request with
 * xRoundup first, which answers class size - 8 (or exact size - 8, below):
 * the requests that arrive are whole blocks and xSize (the low word) is
 * what the block holds.
 *
 * Why a word and not a lookup: mr_pools_free needs the size, and finding the
 * class of a pointer without one needs a map from addresses to chunks (a
 * radix tree or size-aligned chunks) that the pools do not keep; the word
 * costs 8 bytes a block, and xRoundup hands SQLite the class's slack, so
 * most of it is used.
 *
 * Exact sizes.  Above 1 KiB the classes are 1/8 of a power of two apart,
 * and SQLite's big blocks are few sizes in great numbers: its in-memory
 * journal's 1 KiB chunks (1032 bytes with the word: class 1152) and its
 * page-cache entries (page + ~264 bytes: 4368, class 4608).  On the
 * project's workload (size 4000) those two were 99% of the peak, and their
 * rounding 2.6 MB.  So a pool request s above LARGE whose class is more
 * than 1/32 larger than s rounded up to 16 (its exact size e) is served at
 * e: xRoundup answers e - 8 (whether or not e has a pool yet, so that the
 * word of every such block, memstatus on or off, tells e again at free),
 * and the blocks of e live in the class pool and are counted (live ones,
 * per e, in a small table) until their rounding wastes PROMOTE_WASTE bytes
 * at once; then e gets a pool of its own, an mr_objpool carved from blocks
 * the size-class pool hands out (direct requests: in its held, given back
 * with it).  Live blocks, not requests, because SQLite also asks for many
 * sizes one at a time (sorter and record buffers: thousands of requests of
 * one size, one live): counting requests would give them pools whose first
 * block is nearly all waste.  At most EXACT_MAX sizes, kept until
 * sqlite3_shutdown (xShutdown), when SQLite has freed everything: the
 * objpools are destroyed and the counts forgotten.  An exact pool whose
 * last block is freed gives its blocks back (exact_empty).
 *
 * Instructions.  SQLite calls xRoundup, xMalloc and xSize for each
 * allocation and xSize and xFree for each free, so the methods are paths of
 * a handful of instructions below LARGE (see "the methods": 17 for xMalloc
 * and 16 for xFree to their ret, gcc 12 -O2) and an exact pool's block
 * above it is about 27 more; counting, promotion and refills are out of
 * line.
 *
 * Threads.  The table and the published sizes are C11 atomics (a
 * compare-and-swap per count with a thread-safe pool, only on the large,
 * wasteful, unpromoted path; plain loads and stores of the size's home
 * slot when one thread at a time calls); promotion takes promote_lock and
 * publishes pool then size then exact_n with release stores, so a reader
 * that sees exact_n sees the rest (and a block's word says i only after
 * pool i was seen).  Exact objpools are thread-safe exactly when the pool
 * is: in the locked mode every pool and objpool call is under the lock
 * (lock_take; xRoundup reads neither), in the thread-safe mode none is.
 *
 * State: SQLite's allocator is process-wide and xMalloc gets no user data,
 * so the pool, the exact pools and the locks are file statics.  Lock order:
 * SQLite's mem0 mutex (when it takes it) before the lock (lock_take) before
 * promote_lock; we call nothing that locks but the pools.  (lock_mu is
 * held only while a thread waits for the lock or wakes one, never across a
 * pool call.)
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <sqlite3.h>

#include "memres/objpool.h"
#include "memres/sqlite.h"

#define HDR MR_SQLITE_HEADER
#define ALIGN ((size_t)8) /* the pool block and SQLite's memory, 8 bytes in: 8-aligned */

/* Exact sizes: pool requests above LARGE bytes may get one (n > LARGE -
 * HDR: the one compare the small paths pay); EXACT_MAX of them at most
 * (with the pool, 5 of the 8 entries of a thread's table of thread-safe
 * pools: memres/tcache.h).  A size is promoted once its live blocks waste
 * PROMOTE_WASTE bytes at once in their class (74 live blocks of 1040 bytes,
 * 35 of 4368): late enough that one-at-a-time sizes never get there, early
 * enough that the blocks left in the class before are few (on the
 * workload, 2 KiB to 16 KiB moved peak RSS by less than 1%).  An objpool's
 * blocks hold EXACT_BLOCK bytes' worth of its size, whatever the size: the
 * journal's pool takes and gives back its blocks at every transaction, and
 * blocks of one size for every pool fill each other's holes in malloc's
 * heap (the pool's upstream).  Blocks a little over 64 KiB (the largest
 * class), 66 and 70 KB for the two pools, left the heap with 55-63 KB holes
 * at the peak and it grew past them: peak RSS 39.2 MiB on the bench against
 * 38.5 with 256 KiB (192 KiB alike; 128 KiB, 384 KiB and up worse), and a
 * quarter of the objpool refills. */
#define EXACT_BLOCK ((size_t)256 * 1024)
#define LARGE ((size_t)1024)
#define EXACT_MAX 4u
#define EXACT_SHIFT 32
#define EXACT_MASK ((uint64_t)0xff)
/* A class block of an exact size counted live (count_add): its free counts
 * it out, with no class lookup. */
#define COUNTED ((uint64_t)1 << 63)
#define PROMOTE_WASTE ((size_t)8 * 1024)
#define EXACT_ALIGN ((size_t)16) /* as the class blocks: SQLite's memory 8 in */
/* The live-count table: CANDS slots of (e / 16) << 32 | live blocks, a
 * size probing PROBE of them from its hash; a slot with no live block may
 * be taken by another size. */
#define CANDS 32u
#define PROBE 8u
#define LIVE_MASK ((uint64_t)0xffffffff)

static mr_pools *pool;
static size_t pool_max;        /* the pool's largest pooled size (install) */
static bool exact_thread_safe; /* the exact objpools' thread_safe (the pool's) */
static pthread_mutex_t promote_lock = PTHREAD_MUTEX_INITIALIZER;
static sqlite3_mem_methods previous;
static bool have_previous;

static _Atomic(mr_objpool *) exact_pool[EXACT_MAX];
static _Atomic(size_t) exact_size[EXACT_MAX];
static _Atomic(unsigned) exact_n; /* published: exact_pool/size[0..exact_n) */
static _Atomic(uint64_t) cands[CANDS];
/* Live blocks per exact pool, kept when the pool is not thread-safe (under
 * the lock, or one thread): an exact pool whose last block is freed gives its
 * blocks back (exact_empty), for other sizes to use. */
static size_t exact_live[EXACT_MAX];
/* xRoundup below LARGE: the block a request of up to 8 (i + 1) bytes with
 * the word gets, less the word (class blocks are multiples of 8, so one
 * entry covers 8 sizes); filled at install from mr_pools_block_size. */
static uint16_t roundup_tab[LARGE / 8];
/* The local methods' classes (see "the methods"): the pool's class array,
 * and per entry as roundup_tab's the byte offset in it of the class of the
 * request -- for a thread-safe pool, in a thread's slots of the pool (whose
 * id and link key are tc_id and tc_key; classes stays NULL). */
static struct mri_pools_class *classes;
static uint16_t class_off[LARGE / 8];
static uint64_t tc_id;
static uintptr_t tc_key;

static inline uint64_t word_get(const void *user)
{
    uint64_t n;
    memcpy(&n, (const char *)user - HDR, sizeof n);
    return n;
}

static inline void *word_set(void *block, uint64_t w)
{
    memcpy(block, &w, sizeof w);
    return (char *)block + HDR;
}

/* The exact pool a word names (1 + its index), 0: none. */
static inline unsigned word_exact(uint64_t w) { return (unsigned)(w >> EXACT_SHIFT & EXACT_MASK); }

/* The word of a block of size bytes of exact pool i. */
static inline uint64_t exact_word(size_t size, unsigned i) { return size | (uint64_t)(i + 1) << EXACT_SHIFT; }

/* ---- exact sizes ---- */

/* The exact size of a pool request of s bytes whose block is b bytes: s
 * rounded up to 16 when s is above LARGE and the class wastes more than
 * 1/32 of b over it (never a class size then), else 0.  b == s (a direct
 * request) or 0 (impossible) give 0. */
static inline size_t exact_of(size_t s, size_t b)
{
    size_t e = (s + 15) & ~(size_t)15;
    return s > LARGE && b > e && b - e > b / 32 ? e : 0;
}

/* The published pool of e, or -1. */
static int exact_find(size_t e)
{
    unsigned k = atomic_load_explicit(&exact_n, memory_order_acquire);
    for (unsigned i = 0; i < k; i++)
        if (atomic_load_explicit(&exact_size[i], memory_order_relaxed) == e)
            return (int)i;
    return -1;
}

static inline mr_objpool *exact_get(unsigned i) { return atomic_load_explicit(&exact_pool[i], memory_order_acquire); }

/* The live-count table, for exact size e: op +1 counts a live block, -1
 * one fewer, 0 forgets them; returns the count after (0: not counted -- no
 * free slot, or nothing to take back).  A heuristic: a count lost to a full
 * table, or a block freed after its size's slot was reused, only makes a
 * promotion later.  Lock-free: a compare-and-swap on the slot. */
static size_t count_add(size_t e, int op)
{
    uint64_t key = (uint64_t)(e >> 4) << 32;
    unsigned h = (unsigned)((e >> 4) * 0x9e3779b1u) >> 27; /* 5 bits: CANDS */
    if (!exact_thread_safe && op != 0) {
        /* one thread at a time (alone, or under the lock): the size's home
         * slot, where it most often is, with no compare-and-swap */
        uint64_t v = atomic_load_explicit(&cands[h], memory_order_relaxed);
        if ((v & ~LIVE_MASK) == key && (op > 0 || (v & LIVE_MASK) != 0)) {
            v = op > 0 ? v + 1 : v - 1;
            atomic_store_explicit(&cands[h], v, memory_order_relaxed);
            return (size_t)(v & LIVE_MASK);
        }
        if (op > 0 && (v & LIVE_MASK) == 0) {
            /* a free home, taken at once (should the size also hold a
             * slot further on, its count splits: a later promotion) */
            atomic_store_explicit(&cands[h], key | 1, memory_order_relaxed);
            return 1;
        }
    }
    for (;;) {
        unsigned claim = CANDS;
        uint64_t claimed = 0;
        bool retry = false;
        for (unsigned j = 0; j < PROBE && !retry; j++) {
            unsigned i = (h + j) & (CANDS - 1);
            uint64_t v = atomic_load_explicit(&cands[i], memory_order_relaxed);
            if ((v & ~LIVE_MASK) == key && (op > 0 || (v & LIVE_MASK) != 0)) {
                uint64_t nv = op > 0 ? v + 1 : op < 0 ? v - 1 : key;
                if (atomic_compare_exchange_weak_explicit(&cands[i], &v, nv, memory_order_relaxed,
                                                          memory_order_relaxed))
                    return (size_t)(nv & LIVE_MASK);
                retry = true;
            } else if (claim == CANDS && (v & LIVE_MASK) == 0) {
                claim = i;
                claimed = v;
            }
        }
        if (retry)
            continue;
        if (op <= 0 || claim == CANDS)
            return 0;
        if (atomic_compare_exchange_strong_explicit(&cands[claim], &claimed, key | 1, memory_order_relaxed,
                                                    memory_order_relaxed))
            return 1;
    }
}

/* The word of a class block of size bytes (s with the word) of exact size
 * e (0: none), counted in while promotion is open: COUNTED when it was, so
 * that its free or move counts it out (count_out). */
static uint64_t count_in(size_t size, size_t s)
{
    size_t e = exact_of(s, mr_pools_block_size(pool, s, ALIGN));
    if (e != 0 && atomic_load_explicit(&exact_n, memory_order_acquire) < EXACT_MAX && count_add(e, +1) != 0)
        return size | COUNTED;
    return size;
}

/* A COUNTED block's word: one live block of its exact size fewer (also
 * once the size has a pool: its slot drains to 0 and can be reused). */
static void count_out(uint64_t w)
{
    if (w & COUNTED)
        count_add(((size_t)(uint32_t)w + HDR + 15) & ~(size_t)15, -1);
}

static inline size_t exact_per_block(size_t e) { return e < EXACT_BLOCK ? EXACT_BLOCK / e : 1; }

/* Gives e an objpool (if it has none and the table is not full); returns
 * its index, or -1 (full, or the objpool could not be created: the blocks
 * stay in the class pool, and the count starts again). */
static int promote(size_t e)
{
    pthread_mutex_lock(&promote_lock);
    unsigned k = atomic_load_explicit(&exact_n, memory_order_relaxed);
    int i = exact_find(e);
    if (i < 0 && k < EXACT_MAX) {
        /* blocks just above the largest pooled size: direct requests, one
         * upstream call each, no class rounding of their own */
        mr_objpool_options o = {mr_pools_resource(pool), exact_per_block(e), exact_thread_safe};
        mr_objpool *op = mr_objpool_create(e, EXACT_ALIGN, &o);
        if (op != NULL) {
            atomic_store_explicit(&exact_pool[k], op, memory_order_release);
            atomic_store_explicit(&exact_size[k], e, memory_order_relaxed);
            atomic_store_explicit(&exact_n, k + 1, memory_order_release);
            i = (int)k;
        }
    }
    pthread_mutex_unlock(&promote_lock);
    return i;
}

/* Destroys the exact objpools and forgets the counts.  Only when SQLite
 * holds no block (after sqlite3_shutdown, or before anything ran). */
static void exact_drop(void)
{
    pthread_mutex_lock(&promote_lock);
    unsigned k = atomic_load_explicit(&exact_n, memory_order_relaxed);
    atomic_store_explicit(&exact_n, 0, memory_order_relaxed);
    for (unsigned i = 0; i < k; i++) {
        mr_objpool_destroy(exact_get(i));
        exact_live[i] = 0;
        atomic_store_explicit(&exact_pool[i], NULL, memory_order_relaxed);
        atomic_store_explicit(&exact_size[i], 0, memory_order_relaxed);
    }
    for (unsigned i = 0; i < CANDS; i++)
        atomic_store_explicit(&cands[i], 0, memory_order_relaxed);
    pthread_mutex_unlock(&promote_lock);
}

/* ---- the methods ---- */

/* Three ways below LARGE (enum way), each its own tables.  A pool that is
 * not thread-safe and whose classes reach LARGE (the single-thread install,
 * and the locked one under the lock) goes LOCAL: the class lists popped and
 * pushed with mri_pools_class_take / mri_pools_class_put, with none of the
 * checks that mr_pools_alloc and mr_pools_free make on every call (install
 * checked them once).  A thread-safe one whose classes reach LARGE goes
 * THREAD: the calling thread's slot of the class, mri_tc_take / mri_tc_put,
 * the rest (a thread's first call, an empty slot) by mr_pools_alloc /
 * mr_pools_free.  A pool whose classes stop below LARGE goes GENERAL, by
 * mr_pools_alloc and mr_pools_free (direct blocks among them).  Above
 * LARGE, and for resizes, all share one path, which takes the local way
 * where it can (classes set: local_class; an exact pool's block by
 * mri_objpool_take / mri_objpool_put, or for a thread-safe objpool by
 * mri_objpool_tc_take / mri_objpool_tc_put, then the general calls). */

/* A request of size bytes of exact size e whose live blocks now waste
 * enough: e gets a pool (promote) and the block comes from it; NULL when
 * there is none (table full, or no memory; the count starts again from 0)
 * or it has no block: the caller takes one from the class. */
static MR_NOINLINE void *malloc_promoted(size_t size, size_t e)
{
    int i = promote(e);
    count_add(e, i >= 0 ? -1 : 0); /* this block goes to the new pool */
    if (i < 0)
        return NULL;
    void *q = mr_objpool_alloc(exact_get((unsigned)i));
    if (q == NULL)
        return NULL;
    if (!exact_thread_safe)
        exact_live[i]++;
    return word_set(q, exact_word(size, (unsigned)i));
}

/* The class of a pool request of s > LARGE bytes for the local methods;
 * NULL for the general ones, and for a direct request. */
static inline struct mri_pools_class *local_class(size_t s)
{
    return classes != NULL && s <= pool_max ? &classes[mri_pools_class_of(s - 1)] : NULL;
}

/* A request above LARGE that no exact pool serves: a class block (or a
 * direct one).  While promotion is open (open), a class block of an exact
 * size is counted (COUNTED in its word), and promoted when its size's live
 * blocks waste enough. */
static MR_NOINLINE void *malloc_class(size_t size, bool open)
{
    size_t s = size + HDR;
    uint64_t w = size;
    size_t e = 0;
    struct mri_pools_class *c = local_class(s);
    if (open) {
        size_t b = c != NULL ? c->size : mr_pools_block_size(pool, s, ALIGN);
        e = exact_of(s, b);
        if (e != 0) {
            size_t live = count_add(e, +1);
            if (MR_UNLIKELY(live * (b - e) >= PROMOTE_WASTE)) {
                void *q = malloc_promoted(size, e);
                if (q != NULL)
                    return q;
                live = 0; /* counted out, or forgotten */
            }
            if (live != 0)
                w |= COUNTED;
        }
    }
    void *q = c != NULL ? mri_pools_class_take(pool, c) : NULL;
    if (q == NULL)
        q = mr_pools_alloc(pool, s, ALIGN);
    if (q == NULL) {
        if (w & COUNTED)
            count_add(e, -1);
        return NULL;
    }
    return word_set(q, w);
}

/* Requests above LARGE: an exact pool, looked up by the exact size (a size
 * that has a pool is one whose class wastes enough), else the classes. */
/* A block of exact pool i when mri_objpool_take had none at hand (an
 * objpool that needs a block, a thread-safe one, a checked build). */
static MR_NOINLINE void *malloc_exact(size_t size, unsigned i)
{
    void *q = mr_objpool_alloc(exact_get(i));
    if (MR_UNLIKELY(q == NULL)) /* the class may have one */
        return malloc_class(size, false);
    if (!exact_thread_safe)
        exact_live[i]++;
    return word_set(q, exact_word(size, i));
}

static MR_NOINLINE void *malloc_large(size_t size)
{
    size_t e = (size + HDR + 15) & ~(size_t)15;
    unsigned k = atomic_load_explicit(&exact_n, memory_order_acquire);
    for (unsigned i = 0; i < k; i++) /* exact_find, keeping k for the miss */
        if (atomic_load_explicit(&exact_size[i], memory_order_relaxed) == e) {
            mr_objpool *op = exact_get(i);
            void *q = mri_objpool_take(op);
            if (MR_LIKELY(q != NULL))
                exact_live[i]++; /* taken: the objpool is not thread-safe */
            else if ((q = mri_objpool_tc_take(op)) == NULL) /* thread-safe: this thread's cache */
                return malloc_exact(size, i);
            return word_set(q, exact_word(size, i));
        }
    return malloc_class(size, k < EXACT_MAX);
}

/* The class of a local request of size <= LARGE - HDR bytes. */
static inline struct mri_pools_class *class_at(size_t size)
{
    return (struct mri_pools_class *)(void *)((char *)classes + class_off[(size + HDR - 1) / 8]);
}

/* The calling thread's slot of the thread-safe pool for a request of size
 * <= LARGE - HDR bytes; NULL when the thread has no cache of the pool yet
 * (or another pool took its table entry), and in checked builds.  As
 * mri_tc_slot_of, but by the byte offset class_off holds: with the index,
 * xMalloc was 30 instructions to its ret and xFree 37, against 29 and 34. */
static inline struct mri_tc_slot *slot_at(size_t size)
{
#if !MR_CHECKED
    struct mri_tc_entry *e = mri_tc_entry_of(tc_id);
    if (MR_LIKELY(e->id == tc_id))
        return (struct mri_tc_slot *)(void *)((char *)e->slots + class_off[(size + HDR - 1) / 8]);
#else
    (void)size;
#endif
    return NULL;
}

/* Below LARGE, by the pool's general path: the GENERAL way, and the
 * others when the class or the thread's slot had no block at hand. */
static MR_NOINLINE void *malloc_general(size_t size)
{
    void *b = mr_pools_alloc(pool, size + HDR, ALIGN);
    return b != NULL ? word_set(b, size) : NULL;
}

/* How the methods reach the pool below LARGE: */
enum way {
    GENERAL, /* mr_pools_alloc / mr_pools_free */
    LOCAL,   /* an unsynchronised pool's class, mri_pools_class_take / _put */
    THREAD   /* a thread-safe pool's slot in this thread's cache, mri_tc_take / _put */
};

static inline void *do_malloc(size_t size, enum way way)
{
    if (MR_UNLIKELY(size > LARGE - HDR))
        return malloc_large(size);
    void *b = NULL;
    if (way == LOCAL) {
        b = mri_pools_class_take(pool, class_at(size));
    } else if (way == THREAD) {
        struct mri_tc_slot *sl = slot_at(size);
        if (sl != NULL)
            b = mri_tc_take(sl, tc_key);
    }
    if (MR_UNLIKELY(b == NULL))
        return malloc_general(size);
    return word_set(b, size);
}

/* Exact pool i's last live block was freed: it gives its blocks back (not
 * thread-safe pools: the count is exact, and release must not meet another
 * call).  SQLite's journal grows to the size of a transaction and is freed
 * whole at its end, and its memory should serve the pages after, as the
 * pool's empty chunks do (and malloc's).  A pool of one block keeps it: a
 * transaction that small would take it back from upstream every time. */
static MR_NOINLINE void exact_empty(unsigned i)
{
    mr_objpool *op = exact_get(i);
    mr_stats st;
    mr_objpool_stats(op, &st);
    if (st.held >= 2 * exact_per_block(mr_objpool_object_size(op)) * mr_objpool_object_size(op))
        mr_objpool_release(op);
}

/* A class (or direct) block above LARGE, or a COUNTED one. */
static MR_NOINLINE void free_class(void *p, uint64_t w)
{
    count_out(w);
    size_t s = (size_t)(uint32_t)w + HDR;
    struct mri_pools_class *c = local_class(s);
    if (c == NULL || !mri_pools_class_put(pool, c, (char *)p - HDR))
        mr_pools_free(pool, (char *)p - HDR, s, ALIGN);
}

/* Block b of exact pool i, when mri_objpool_put could not take it. */
static MR_NOINLINE void free_exact(unsigned i, void *b)
{
    mr_objpool_free(exact_get(i), b);
    if (!exact_thread_safe && --exact_live[i] == 0)
        exact_empty(i);
}

static MR_NOINLINE void free_large(void *p, uint64_t w)
{
    unsigned i = word_exact(w);
    if (i == 0) {
        free_class(p, w);
        return;
    }
    void *b = (char *)p - HDR;
    mr_objpool *op = exact_get(i - 1);
    if (MR_LIKELY(mri_objpool_put(op, b))) {
        if (--exact_live[i - 1] == 0) /* put: the objpool is not thread-safe */
            exact_empty(i - 1);
        return;
    }
    if (!mri_objpool_tc_put(op, b)) /* thread-safe: this thread's cache, no count */
        free_exact(i - 1, b);
}

static inline void do_free(void *p, enum way way)
{
    uint64_t w = word_get(p);
    if (MR_UNLIKELY(w > LARGE - HDR)) { /* a large size, an exact pool's index, COUNTED */
        free_large(p, w);
        return;
    }
    void *b = (char *)p - HDR;
    if (way == LOCAL && mri_pools_class_put(pool, class_at((size_t)w), b))
        return;
    if (way == THREAD) {
        struct mri_tc_slot *sl = slot_at((size_t)w);
        if (sl != NULL && mri_tc_put(sl, b, tc_key))
            return;
    }
    mr_pools_free(pool, b, (size_t)w + HDR, ALIGN);
}

/* Either size above LARGE: the block stays when the new size belongs where
 * it is (the same exact pool; the same class, with no exact pool for the
 * new size), else it moves (allocate, copy, free). */
static MR_NOINLINE void *realloc_large(void *p, uint64_t w, size_t size)
{
    size_t s = size + HDR;
    size_t e = (s + 15) & ~(size_t)15;
    unsigned i = word_exact(w);
    size_t old = (size_t)(uint32_t)w;
    if (i != 0) {
        /* (an exact size is above LARGE: s is then too) */
        if (e == atomic_load_explicit(&exact_size[i - 1], memory_order_relaxed))
            return word_set((char *)p - HDR, exact_word(size, i - 1));
    } else if (mr_pools_block_size(pool, s, ALIGN) == mr_pools_block_size(pool, old + HDR, ALIGN) &&
               exact_find(e) < 0) {
        /* the same class (a class block: never 0): mr_pools_realloc keeps
         * the block (and moves the poisoned slack in ASan builds) */
        void *q = mr_pools_realloc(pool, (char *)p - HDR, old + HDR, s, ALIGN);
        if (q == NULL)
            return NULL;
        count_out(w);
        return word_set(q, count_in(size, s));
    }
    void *q = do_malloc(size, GENERAL);
    if (q == NULL)
        return NULL; /* p is untouched */
    memcpy(q, p, old < size ? old : size);
    do_free(p, GENERAL);
    return q;
}

/* SQLite asks for 1 to 0x7fffff00 bytes (sqlite3Malloc refuses the rest),
 * and never frees or sizes NULL (its own methods would fault); an int
 * below 0 would be taken as a size above 2 GiB and refused upstream. */
static void *g_malloc(int n) { return do_malloc((unsigned)n, GENERAL); }
static void *l_malloc(int n) { return do_malloc((unsigned)n, LOCAL); }
static void *t_malloc(int n) { return do_malloc((unsigned)n, THREAD); }

static void g_free(void *p)
{
    if (p != NULL)
        do_free(p, GENERAL);
}

static void l_free(void *p)
{
    if (p != NULL)
        do_free(p, LOCAL);
}

static void t_free(void *p)
{
    if (p != NULL)
        do_free(p, THREAD);
}

static void *x_realloc(void *p, int n)
{
    if (p == NULL)
        return g_malloc(n);
    size_t size = (unsigned)n;
    uint64_t w = word_get(p);
    if (MR_UNLIKELY(w > LARGE - HDR || size > LARGE - HDR))
        return realloc_large(p, w, size);
    void *b = mr_pools_realloc(pool, (char *)p - HDR, (size_t)w + HDR, size + HDR, ALIGN);
    return b != NULL ? word_set(b, size) : NULL;
}

static int x_size(void *p)
{
    return p != NULL ? (int)(uint32_t)word_get(p) : 0;
}

/* Above LARGE: an exact size answers itself (promoted or not), so that the
 * block's word holds it; b - HDR fits an int whenever n did. */
static MR_NOINLINE int roundup_large(int n, size_t size)
{
    size_t s = size + HDR;
    size_t b = mr_pools_block_size(pool, s, ALIGN);
    size_t e = exact_of(s, b);
    if (e != 0)
        b = e;
    return b > HDR ? (int)(b - HDR) : n;
}

static int x_roundup(int n)
{
    size_t size = (unsigned)n;
    if (MR_UNLIKELY(size > LARGE - HDR))
        return roundup_large(n, size);
    return roundup_tab[(size + HDR - 1) / 8];
}

/* Fills the tables for pool p.  roundup_tab[i]: the block of a request of
 * up to 8 (i + 1) bytes with the word, less the word (a direct request's
 * own size: more than n, which xRoundup may answer).  Local: class_off[i],
 * its class (classes are multiples of 8: one for the 8 sizes). */
static void tables_fill(mr_pools *p, enum way way)
{
    const struct mri_pools_hot *h = (const struct mri_pools_hot *)(const void *)p;
    classes = way == LOCAL ? mri_pools_classes(p) : NULL;
    tc_id = way == THREAD ? h->tc_id : 0;
    tc_key = h->key;
    for (size_t i = 0; i < LARGE / 8; i++) {
        size_t x = 8 * (i + 1) - 1;
        size_t b = mr_pools_block_size(p, x + 1, ALIGN);
        roundup_tab[i] = (uint16_t)(b - HDR);
        class_off[i] = way == LOCAL    ? (uint16_t)(mri_pools_class_of(x) * sizeof(struct mri_pools_class))
                       : way == THREAD ? (uint16_t)(mri_pools_class_of(mri_pools_ts_of(x)) * sizeof(struct mri_tc_slot))
                                       : 0;
    }
}

static int x_init(void *app) { (void)app; return SQLITE_OK; }

/* sqlite3_shutdown: SQLite has freed every block (it requires that of the
 * application too), so the exact pools go back to the pool. */
static void x_shutdown(void *app)
{
    (void)app;
    exact_drop();
}

/* ---- the lock of an unsynchronised pool under a multi-threaded SQLite ---- */

/* A word taken by one compare-and-swap and given back by one exchange when
 * no thread waits: 0 free, 1 held, 2 held and a thread may sleep on it.
 * Uncontended is the common case: with SQLite's memory statistics on (its
 * default), SQLite already calls xMalloc, xFree and xRealloc under its own
 * mutex, so this lock only matters for SQLite built or configured without
 * them (which cannot be read back: SQLITE_CONFIG_MEMSTATUS has no getter).
 * A pthread mutex pair cost 55 instructions (callgrind: lock 32, unlock
 * 23), twice per malloc + free: 185 a pair on the project's workload
 * against 72 with this word (46.5 with no lock).  A thread that finds the
 * word held spins a little (the pool calls it guards are short), then
 * sleeps on lock_cv: it marks the word 2 under lock_mu before it waits,
 * and a give that finds 2 signals under lock_mu, so no wake is lost (a
 * thread that takes the word with 2 keeps it 2: its give wakes the next
 * sleeper).
 * C11 atomics and pthreads only. */
static _Atomic(int) lock_word;
static pthread_mutex_t lock_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t lock_cv = PTHREAD_COND_INITIALIZER;
#define LOCK_SPINS 64u

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static MR_NOINLINE void lock_wait(void)
{
    for (unsigned i = 0; i < LOCK_SPINS; i++) {
        cpu_relax();
        int v = 0;
        if (atomic_load_explicit(&lock_word, memory_order_relaxed) == 0 &&
            atomic_compare_exchange_weak_explicit(&lock_word, &v, 1, memory_order_acquire, memory_order_relaxed))
            return;
    }
    pthread_mutex_lock(&lock_mu);
    while (atomic_exchange_explicit(&lock_word, 2, memory_order_acquire) != 0)
        pthread_cond_wait(&lock_cv, &lock_mu);
    pthread_mutex_unlock(&lock_mu);
}

static MR_NOINLINE void lock_wake(void)
{
    pthread_mutex_lock(&lock_mu);
    pthread_cond_signal(&lock_cv);
    pthread_mutex_unlock(&lock_mu);
}

static inline void lock_take(void)
{
    int v = 0;
    if (MR_UNLIKELY(!atomic_compare_exchange_strong_explicit(&lock_word, &v, 1, memory_order_acquire,
                                                             memory_order_relaxed)))
        lock_wait();
}

static inline void lock_give(void)
{
    if (MR_UNLIKELY(atomic_exchange_explicit(&lock_word, 0, memory_order_release) == 2))
        lock_wake();
}

/* The same behind the lock: other tables, so that the unlocked ones test
 * no flag. */
#define LOCKED_MALLOC(name, f)                                                                                  \
    static void *name(int n)                                                                                   \
    {                                                                                                          \
        lock_take();                                                                                           \
        void *p = f(n);                                                                                        \
        lock_give();                                                                                           \
        return p;                                                                                              \
    }
#define LOCKED_FREE(name, f)                                                                                    \
    static void name(void *p)                                                                                  \
    {                                                                                                          \
        lock_take();                                                                                           \
        f(p);                                                                                                  \
        lock_give();                                                                                           \
    }
LOCKED_MALLOC(gl_malloc, g_malloc)
LOCKED_MALLOC(ll_malloc, l_malloc)
LOCKED_FREE(gl_free, g_free)
LOCKED_FREE(ll_free, l_free)

static void *xl_realloc(void *p, int n)
{
    lock_take();
    void *q = x_realloc(p, n);
    lock_give();
    return q;
}

/* [way][locked] (a thread-safe pool is never locked) */
static const sqlite3_mem_methods tables[3][2] = {
    [GENERAL] = {{g_malloc, g_free, x_realloc, x_size, x_roundup, x_init, x_shutdown, NULL},
                 {gl_malloc, gl_free, xl_realloc, x_size, x_roundup, x_init, x_shutdown, NULL}},
    [LOCAL] = {{l_malloc, l_free, x_realloc, x_size, x_roundup, x_init, x_shutdown, NULL},
               {ll_malloc, ll_free, xl_realloc, x_size, x_roundup, x_init, x_shutdown, NULL}},
    [THREAD] = {{t_malloc, t_free, x_realloc, x_size, x_roundup, x_init, x_shutdown, NULL},
                {t_malloc, t_free, x_realloc, x_size, x_roundup, x_init, x_shutdown, NULL}},
};

static bool ours(const sqlite3_mem_methods *m) { return m->xRoundup == x_roundup; }

static int install(mr_pools *p, bool with_lock)
{
    if (p == NULL)
        return SQLITE_MISUSE;
    sqlite3_mem_methods old;
    int rc = sqlite3_config(SQLITE_CONFIG_GETMALLOC, &old);
    if (rc != SQLITE_OK)
        return rc;
    mr_pools_options o;
    mr_pools_get_options(p, &o);
    /* the local and thread ways' terms: every request below LARGE pooled */
    enum way way = o.largest_required_pool_block < LARGE ? GENERAL : o.thread_safe ? THREAD : LOCAL;
    rc = sqlite3_config(SQLITE_CONFIG_MALLOC, &tables[way][with_lock]);
    if (rc != SQLITE_OK)
        return rc;
    if (!have_previous && !ours(&old)) {
        previous = old;
        have_previous = true;
    }
    exact_drop(); /* none after sqlite3_shutdown; any other were the old pool's */
    pool_max = o.largest_required_pool_block;
    tables_fill(p, way);
    exact_thread_safe = o.thread_safe;
    pool = p;
    return SQLITE_OK;
}

MR_API int mr_sqlite_install(mr_pools *p)
{
    mr_pools_options o = {0};
    if (p != NULL)
        mr_pools_get_options(p, &o);
    return install(p, sqlite3_threadsafe() != 0 && !o.thread_safe);
}

MR_API int mr_sqlite_install_singlethread(mr_pools *p)
{
    if (p == NULL)
        return SQLITE_MISUSE;
    if (sqlite3_threadsafe() != 0) {
        int rc = sqlite3_config(SQLITE_CONFIG_SINGLETHREAD);
        if (rc != SQLITE_OK)
            return rc;
    }
    return install(p, false);
}

MR_API int mr_sqlite_uninstall(void)
{
    if (pool == NULL || !have_previous)
        return SQLITE_MISUSE;
    int rc = sqlite3_config(SQLITE_CONFIG_MALLOC, &previous);
    if (rc != SQLITE_OK)
        return rc;
    exact_drop();
    pool = NULL;
    return SQLITE_OK;
}
