/* SPDX-License-Identifier: MIT */
/* src/pools.c -- size-class pools (std::pmr::unsynchronized_pool_resource,
 * PostgreSQL's AllocSet).
 *
 * What it is for: many objects of many sizes, freed one by one or all at
 * once, where the caller knows each object's size when it frees it (C++
 * allocators, containers, a compiler's nodes and vectors).  Knowing the size
 * at free is what makes this faster than malloc: the class of a block is
 * computed from (size, align) again, so a block carries no header and free
 * reads nothing -- it writes one link word into the block and pushes it.
 *
 * Size classes.  8..256 in steps of 8, then eight classes in each power
 * of two: 288 320 ... 512 | 576 640 ... 1024 | 1152 ... up to the largest
 * pooled size (64 KiB by default, 1 MiB at most).  Rounding wastes < 8
 * bytes up to 256 and at most 12.5% above (a request of 2^k + 1 gets
 * 2^k + 2^(k-3)).  Steps of 8, not 16, below 256: C structs of 24, 40 and
 * 56 bytes (three pointers; Lua's closures, upvalues and tables) are
 * common, and at 16-byte steps lost a quarter, a sixth and an eighth of
 * themselves (Lua's benchmark: 9.7 -> 8.7 MB of peak live blocks); and up
 * to 256, not 128, so that the class of a small request stays one shift
 * behind one well-predicted branch (8-byte steps to 128 and 16 above put
 * the branch at 128, in the middle of churn's sizes: +10% time there).
 * Eight, not four, per power of two since the Lua and SQLite
 * integrations: SQLite's page buffers (4096 + its page header) and 1 KiB
 * journal chunks with their size word went to 5120 and 1280 with four
 * (17% and 23% lost) and go to 4608 and 1152 with eight, at the same
 * instruction count (the fast paths' shift and multiplier change, nothing
 * else) and the same churn time and RSS (docs/BENCHMARKS.md).  The class
 * index of a request of x + 1 bytes is computed with a bit scan (see
 * mri_pools_class_of in pools.h): 8k - 40 + (x >> (k - 3)) for
 * k = floor(log2 x) >= 8, x >> 3 below 256.  The classes are a class's
 * alignment's multiples: blocks of a class are aligned to the largest
 * power of two dividing its size (at least 8), so a request with
 * alignment 16 takes the class of x = (size - 1) | 8 (a multiple of 16:
 * every one is a class; mri_pools_x in pools.h), and one with alignment above 16 the class of its
 * size rounded up to a multiple of align (in (2^k, 2^(k+1)] every multiple
 * of 2^(k-3) is a class), aligned to align as long as its chunks are
 * aligned to the largest power of two dividing the class size, which they
 * are (capped at MR_POOLS_MAX_ALIGN: larger alignments are served directly
 * by the upstream).  Thread-safe pools never use class 0: their smallest
 * blocks are 16 bytes (tcache.c keeps two words in a free block).
 *
 * Each class has an intrusive free list (LIFO: the block freed last is
 * reused first, warm in cache) and a bump region [bump, end) in its current
 * chunk.  Allocation pops the free list, else bumps, else (slow path) moves
 * to the next kept chunk (after a reset) or takes a new chunk from upstream.
 * The inline paths in pools.h do the first two with no call.
 *
 * Chunks.  The first chunk of a class holds about 4 KiB of blocks (at least
 * one), every next one twice the blocks of the last, up to the cap (given
 * max_blocks_per_chunk, else 16384 blocks and 64 KiB).  A chunk is exactly
 * blocks * size bytes rounded up to 64 bytes (below a page) or to pages, and
 * any room the rounding leaves is filled with blocks: a chunk is never a
 * power of two plus a header, so a page-granular upstream (or a block cache
 * of 64 KiB blocks) wastes nothing.  The chunk list is kept apart from the
 * chunks, in records (base, bytes, blocks, next) bump-allocated from small
 * record pages of REC_PAGE_BYTES: a header inside each chunk would cost an
 * alignment unit per chunk and push exact page multiples onto one more page.
 * Each class's records are a list in order of first use:
 *
 *     chunks -> [carved] -> ... -> [current: bump..end] -> [kept] -> ... NULL
 *
 * Reset empties every free list and makes every class's first chunk current
 * again: the same chunks are carved again in the same order, with no upstream
 * call.  Release returns chunks and record pages.
 *
 * Direct blocks.  A request above the largest pooled size or with an
 * alignment above MR_POOLS_MAX_ALIGN goes to the upstream with a header
 * (prev, next, size, align) of 32 bytes -- or one alignment unit, when that
 * is larger -- just before the block, in a circular doubly linked list with
 * a sentinel in the pool: O(1) insert and remove, free returns the block at
 * once, and release/reset/destroy walk the list.  The header also lets debug
 * builds check that free is given the size and alignment of the allocation.
 *
 * Accounting.  The inline paths count allocations and frees per class (one
 * add each); live blocks of a class are their difference, so stats need no
 * work on the hot paths.  Every upstream call goes through the ledger.
 *
 * Invariants (checked by mr_pools_check), for every class c of size s:
 *   free + live == capacity, where
 *       capacity = sum of blocks over c's chunks,
 *       free     = free-list length + (end - bump) / s
 *                  + blocks of the kept chunks after the current one,
 *       live     = allocations - frees;
 *   no chunk    =>  current == NULL, bump == end == 0, free list empty;
 *   current     =>  base <= bump <= end == base + blocks * s, s | end - bump;
 *   every free-list entry is a block boundary in the carved part of a chunk
 *   of c (a chunk before current, or current below bump); no cycle.
 * And for the pool (the first two are the ledger's, src/ledger.h):
 *   held == header + record pages + sum of chunk bytes + sum of direct blocks
 *           (with their headers);
 *   upstream_allocations - upstream_deallocations
 *        == 1 + record pages + chunks + direct blocks;
 *   the direct list is linked both ways and holds direct_count blocks of
 *   direct_bytes requested bytes.
 *
 * In ASan builds (track.h) chunks are poisoned when taken and at reset,
 * exactly the requested bytes of a block are unpoisoned when handed out (so
 * writing into the class rounding is reported too), and a freed block is
 * poisoned whole; the link word of a free block is unpoisoned only while
 * this file reads or writes it.  Freeing a block twice reads its first byte,
 * now poisoned, and is reported (for requests of at least one byte).
 *
 * Thread-safe pools (thread_safe = true) keep no class array of their own:
 * their classes, chunks and per-thread caches are the engine's (tcache.c);
 * this file routes their calls there and keeps the direct blocks, under
 * the engine's lock.
 *
 * Giving empty chunks back (unsynchronised pools).  Each class keeps the
 * chunks of its own peak, so a program whose sizes change from phase to
 * phase (Lua's collector freeing a generation of tables, then building
 * strings; SQLite's journal, then its pages) would hold the sum of the
 * classes' peaks, not the peak of their sum.  No per-chunk count is kept
 * on the free path (it would cost a chunk lookup on every free); instead,
 * after the pool has taken memory from upstream (a new chunk, a direct
 * block), it looks for classes whose free lists have grown enough to hold
 * whole chunks and gives those chunks back (trim below): one walk of the
 * class's free list counts its blocks per chunk (a binary search among the
 * class's fully carved chunks), and a chunk whose every block is on the
 * list leaves the list, the class and the pool.  A class is walked again
 * only when its free list has doubled since its last walk and holds at
 * least TRIM_MIN_BYTES, so the walks cost O(1) per free, amortised, and
 * nothing on the inline paths.  After, not before, the upstream call: a
 * failed allocation changes nothing, and the upstream reuses the memory
 * for the pool's next request.  The current chunk and the chunks kept by
 * reset after it are never given back.  Thread-safe pools (tcache.c) do
 * not trim: their free blocks are spread over the threads' caches.
 *
 * Idle classes give their pages back (unsynchronised pools).  Trim frees
 * whole chunks only from a long free list and never the current chunk, so
 * a class that was busy once and is idle now (SQLite's sort and record
 * buffers of 2-37 KiB, used by one statement; the journal's 1 KiB class
 * once its size has a pool of its own) would keep its chunks resident for
 * good.  So the same walk (after an upstream take) also looks at the
 * classes whose chunks span whole pages (purge_mask).  A class is rewound
 * as reset rewinds every class (empty free list, bumping again from its
 * first chunk) and the whole pages of its chunks are given to the OS
 * (MADV_DONTNEED, os.c) when all of these hold:
 *   - it has no live block;
 *   - it has had no allocation since the previous walk;
 *   - since it was last seen in use, the pool has taken from upstream at
 *     least the bytes the class has carved (so a class used off and on
 *     refaults at most what the pool's growth itself faults in).
 * The chunks stay the class's (held, no upstream call): the class carves
 * them again when it is used, and they take memory then, one page fault
 * each.  On the SQLite workload this is 0.4 MiB of peak RSS
 * (docs/BENCHMARKS.md).  The pages are the pool's alone: a chunk's whole
 * pages lie inside what the upstream gave.  Where the OS refuses the
 * advice (locked memory) the pages stay resident and nothing else changes.
 *
 * Not supported: freeing with a size or alignment other than the
 * allocation's (undefined; debug builds catch it for direct blocks,
 * mr_pools_check finds some of it).
 */
#include <string.h>

#include "internal.h"
#include "ledger.h"
#include "memres/pools.h"
#include "os.h"
#include "tcache.h"
#include "track.h"

#define LINK MRI_LINK
#define CLASS_ALIGN_MIN ((size_t)8)            /* every class gives 8 (class 0 is 8 bytes) */
#define DIRECT_ALIGN_MIN ((size_t)16)          /* direct blocks: what malloc gives */
#define INLINE_ALIGN_MAX ((size_t)16)          /* alignments the classes take by or-ing (pools.h) */
#define HEADER_ALIGN ((size_t)64)              /* classes one cache line each */
#define FIRST_CHUNK_BYTES ((size_t)4096)       /* blocks of a class's first chunk */
#define DEFAULT_MAX_BLOCKS ((size_t)16384)     /* libstdc++'s default */
/* 64 KiB, not 256: with the trim (below), smaller chunks empty more often
 * and glibc keeps them in its heap (below its 128 KiB mmap threshold)
 * instead of unmapping and mapping them again: the Lua benchmark's peak RSS
 * went from 14.7 to 13.0 MiB and its page faults from 5444 to 2576, at no
 * cost in time there or on churn, request, sqlite and binary-trees. */
#define DEFAULT_MAX_CHUNK ((size_t)64 * 1024) /* and at most this many bytes a chunk */
#define HARD_MAX_CHUNK ((size_t)1 << 30)       /* cap even a user's max_blocks_per_chunk */
/* 4 KiB, not less: glibc keeps freed blocks of up to 1032 bytes in its
 * per-thread cache, unmerged, and a record page freed last there pinned the
 * top of the heap, so release over malloc left a whole pool's chunks
 * resident (279 of 280 MiB in one measurement). */
#define REC_PAGE_BYTES ((size_t)4096)
/* A class's free list is walked for empty chunks only when it holds at
 * least this many bytes (and has doubled since the last walk). */
#define TRIM_MIN_BYTES ((size_t)64 * 1024)
/* Chunks sorted per pass of a trim walk (on the stack: 2 KiB), and passes
 * a walk makes at most. */
#define TRIM_BATCH 128
#define TRIM_PASSES 4u
/* Bits of mr_pools.trim_mask: one per class (MR_POOLS_MAX_POOL_BLOCK makes
 * 128 classes). */
#define TRIM_MASK_WORDS 2u

_Static_assert(sizeof(struct mri_pools_class) == 64 || sizeof(void *) != 8, "a class is one cache line");
_Static_assert(MR_POOLS_MAX_POOL_BLOCK <= HARD_MAX_CHUNK, "every class fits a chunk");
_Static_assert((MR_POOLS_MAX_POOL_BLOCK & (MR_POOLS_MAX_POOL_BLOCK - 1)) == 0, "the largest class is a power of two");


/* One chunk of a class: its blocks are [base, base + blocks * size). */
struct chunk_rec {
    struct chunk_rec *next; /* the class's next chunk, in order of first use */
    uintptr_t base;
    size_t bytes;           /* as requested from upstream (blocks * size rounded) */
    size_t blocks;
};

/* What the pool keeps per class apart from the hot class array (which is
 * one cache line a class and full): for the trim. */
struct class_cold {
    size_t carved;       /* blocks of the chunks up to and including current */
    size_t walked_frees; /* the class's frees count at its last trim walk */
    uint32_t cursor;     /* where the next walk starts: chunks to skip (see trim_class) */
    bool futile;         /* that walk gave nothing back */
    size_t purge_seen;   /* the class's allocations count at the last purge walk */
    size_t purge_taken;  /* mr_pools.taken when a walk last saw that count change */
};

/* A page of chunk records; records follow the header. */
struct rec_page {
    struct rec_page *next;
    size_t bytes;
};
#define REC_FIRST (mri_align_up_nocheck(sizeof(struct rec_page), alignof(struct chunk_rec)))
#define RECS_PER_PAGE ((REC_PAGE_BYTES - REC_FIRST) / sizeof(struct chunk_rec))

/* The header before a direct block, at block - sizeof(struct direct_hdr). */
struct direct_hdr {
    struct direct_hdr *prev, *next;
    size_t size, align; /* as requested */
};
#define DIRECT_PAD_MIN ((size_t)32)
_Static_assert(sizeof(struct direct_hdr) <= DIRECT_PAD_MIN, "the direct header fits its pad");

struct mr_pools {
    struct mri_pools_hot hot;   /* first: read by the inline fast paths */
    mr_resource resource;       /* the mr_pools_resource() view */
    mr_resource *upstream;
    size_t nclasses;
    size_t header_bytes;        /* this block: the struct and the class array */
    size_t max_blocks_opt;      /* max_blocks_per_chunk as given (0: default) */
    /* chunk records */
    struct rec_page *rec_pages;
    uintptr_t rec_ptr, rec_end; /* free records of the newest page */
    struct chunk_rec *rec_spare; /* records of chunks given back, for reuse */
    struct class_cold *cold;    /* per class (unsynchronised pools; in the header block) */
    uint64_t trim_mask[TRIM_MASK_WORDS]; /* classes whose current chunk may have chunks
                                            before it: the ones trim looks at */
    uint64_t purge_mask[TRIM_MASK_WORDS]; /* classes with a chunk that spans a whole
                                             page: the ones purge looks at */
    size_t taken;               /* bytes of chunks and direct blocks taken from upstream,
                                   ever (purge's clock) */
    /* direct blocks */
    struct direct_hdr direct;   /* sentinel of the circular list */
    size_t direct_count;        /* blocks on the list */
    size_t direct_bytes;        /* their requested sizes */
    size_t direct_allocations;  /* successful direct allocations so far */
    mri_ledger ledger;          /* upstream accounting, the header included */
    size_t pool_max;            /* the largest pooled size (== hot.pool_max) */
    struct mri_tc *tc;          /* thread_safe: the thread caches (in the header
                                   block); they guard direct blocks and ledger too */
    struct mri_walk walk;       /* MR_DEBUG 3: when the next walk is due */
};

static MRI_UNUSED bool walk(const mr_pools *p, size_t *steps);

/* ---- classes ---- */

/* The block size of class i (the inverse of mri_pools_class_of). */
static size_t class_size(size_t i)
{
    if (i < 32)
        return (i + 1) * 8;
    unsigned k = (unsigned)(i / 8) + 4u;
    return (i % 8 + 9) << (k - 3u);
}

/* The block size of class i in a thread-safe pool: at least two words
 * (tcache.c keeps a batch's or a region's links in its first blocks). */
#define TS_BLOCK_MIN ((size_t)16)
static size_t ts_class_size(size_t i) { return class_size(i) < TS_BLOCK_MIN ? TS_BLOCK_MIN : class_size(i); }

/* The alignment of a class's chunks, hence of its blocks. */
static size_t class_align(size_t size)
{
    size_t a = size & (~size + 1); /* the lowest set bit */
    if (a < CLASS_ALIGN_MIN)
        a = CLASS_ALIGN_MIN;
    return a > MR_POOLS_MAX_ALIGN ? MR_POOLS_MAX_ALIGN : a;
}

/* Is a request pooled?  If so *cls is its class.  The inline paths decide
 * the same for align <= 16 and 1 <= size <= pool_max. */
static bool pooled(const mr_pools *p, size_t size, size_t align, size_t *cls)
{
    size_t n = size != 0 ? size : 1;
    if (align > INLINE_ALIGN_MAX) {
        if (align > MR_POOLS_MAX_ALIGN || !mri_align_up(n, align, &n))
            return false;
        align = INLINE_ALIGN_MAX; /* n is a multiple of align: the or changes nothing */
    }
    if (n > p->pool_max)
        return false;
    size_t x = mri_pools_x(n, align);
    *cls = mri_pools_class_of(p->tc != NULL ? mri_pools_ts_of(x) : x);
    return true;
}


/* ---- chunks ---- */

/* The most blocks a chunk of blocks of `size` bytes may have. */
static size_t chunk_cap(const mr_pools *p, size_t size)
{
    size_t cap = p->max_blocks_opt != 0 ? p->max_blocks_opt : DEFAULT_MAX_BLOCKS;
    size_t by_bytes = (p->max_blocks_opt != 0 ? HARD_MAX_CHUNK : DEFAULT_MAX_CHUNK) / size;
    if (by_bytes == 0)
        by_bytes = 1;
    return cap < by_bytes ? cap : by_bytes;
}

/* A record for a new chunk, from the newest record page or a new one.  NULL
 * (errno from upstream) with nothing changed when no page can be had. */
static struct chunk_rec *rec_new(mr_pools *p)
{
    if (p->rec_spare != NULL) {
        struct chunk_rec *r = p->rec_spare;
        p->rec_spare = r->next;
        return r;
    }
    if (p->rec_ptr == p->rec_end) {
        struct rec_page *pg = mri_ledger_allocate(&p->ledger, p->upstream, REC_PAGE_BYTES, alignof(struct rec_page));
        if (pg == NULL)
            return NULL;
        pg->next = p->rec_pages;
        pg->bytes = REC_PAGE_BYTES;
        p->rec_pages = pg;
        p->rec_ptr = (uintptr_t)pg + REC_FIRST;
        p->rec_end = p->rec_ptr + RECS_PER_PAGE * sizeof(struct chunk_rec);
    }
    struct chunk_rec *r = (struct chunk_rec *)p->rec_ptr;
    p->rec_ptr += sizeof *r;
    return r;
}

/* ---- giving empty chunks back (see "Giving empty chunks back" above) ---- */

/* The chunks of one pass of a walk, sorted by base: their extents copied
 * out of the records (no pointer chase per lookup), and the chunk the last
 * lookup found (free lists often hold runs of one chunk's blocks). */
struct trim_map {
    uintptr_t base[TRIM_BATCH], end[TRIM_BATCH];
    size_t n, last;
};

/* The index of the chunk holding block address a; m->n when none does. */
static size_t trim_find(struct trim_map *m, uintptr_t a)
{
    size_t k = m->last;
    if (a - m->base[k] < m->end[k] - m->base[k]) /* the same chunk as before */
        return k;
    size_t lo = 0, hi = m->n;
    while (lo < hi) { /* the first chunk with base > a is lo */
        size_t mid = lo + (hi - lo) / 2;
        if (m->base[mid] <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || a >= m->end[lo - 1])
        return m->n;
    m->last = lo - 1;
    return lo - 1;
}

/* One pass over class c's free list for the chunks cand[0..n) (any order;
 * sorted here): gives back those whose every block is on the list.
 * Returns how many blocks left the list. */
static size_t trim_batch(mr_pools *p, struct mri_pools_class *c, struct chunk_rec **cand, size_t n, size_t budget,
                         size_t *gone)
{
    *gone = 0;
    const size_t s = c->size;
    const uintptr_t key = p->hot.key;
    size_t count[TRIM_BATCH] = {0};
    for (size_t i = 1; i < n; i++) { /* insertion sort: n <= TRIM_BATCH, once a walk */
        struct chunk_rec *r = cand[i];
        size_t j = i;
        for (; j > 0 && cand[j - 1]->base > r->base; j--)
            cand[j] = cand[j - 1];
        cand[j] = r;
    }
    struct trim_map m;
    m.n = n;
    m.last = 0;
    for (size_t i = 0; i < n; i++) {
        m.base[i] = cand[i]->base;
        m.end[i] = cand[i]->base + cand[i]->blocks * s;
    }
    for (void *b = c->free; b != NULL; b = mri_link_get(b, key)) {
        size_t k = trim_find(&m, (uintptr_t)b);
        if (k != n)
            count[k]++;
    }
    size_t empty = 0, dropped = 0;
    for (size_t k = 0; k < n; k++)
        if (count[k] == cand[k]->blocks && dropped + cand[k]->blocks <= budget) {
            count[k] = SIZE_MAX; /* marks the chunk to go (for the list) */
            dropped += cand[k]->blocks;
            cand[k]->blocks = 0; /* and its record (for the chunk list) */
            empty++;
        }
    if (empty == 0)
        return 0;
    *gone = empty;
    /* the list without the blocks of the chunks that go, in its order */
    void *b = c->free, *last = NULL;
    c->free = NULL;
    for (void *next; b != NULL; b = next) {
        next = mri_link_get(b, key);
        size_t k = trim_find(&m, (uintptr_t)b);
        if (k != n && count[k] == SIZE_MAX)
            continue;
        if (last == NULL)
            c->free = b;
        else
            mri_link_set(last, b, key);
        last = b;
    }
    if (last != NULL)
        mri_link_set(last, NULL, key);
    /* the chunks out of the class's list, back upstream, records spare */
    const size_t align = class_align(s);
    for (struct chunk_rec **pr = (struct chunk_rec **)&c->chunks, *r; (r = *pr) != NULL;) {
        if (r->blocks != 0) {
            pr = &r->next;
            continue;
        }
        *pr = r->next;
        mri_track_unpoison((void *)r->base, r->bytes);
        mri_ledger_deallocate(&p->ledger, p->upstream, (void *)r->base, r->bytes, align);
        r->next = p->rec_spare;
        p->rec_spare = r;
    }
    return dropped;
}

/* Walks class c's free list for empty chunks when it is worth it and gives
 * them back, keeping a current chunk's worth of free blocks (with the bump
 * region) so that a class whose use swings does not give back and take
 * again a chunk at every swing.  Worth a walk: the class has a chunk
 * before its current one, its list holds TRIM_MIN_BYTES and more than that
 * slack, and since the last walk it had at least a quarter as many frees
 * as the list has blocks -- half as many when that walk found nothing (a
 * fragmented class waits for more of its blocks to turn over).  So a walk
 * costs at most four steps per free and pass (passes: below).  (Waiting
 * for all of a futile class's blocks to turn over saved half the walks'
 * instructions on the Lua benchmark and cost 0.9 MiB of peak RSS.) */
static void trim_class(mr_pools *p, struct mri_pools_class *c, struct class_cold *k)
{
    if (c->chunks == c->current) /* none, or only the current one */
        return;
    const size_t s = c->size;
    const size_t bumpable = (c->end - c->bump) / s;
    size_t listed = k->carved - bumpable - (c->allocations - c->frees);
    const size_t cur_blocks = ((const struct chunk_rec *)c->current)->blocks;
    size_t keep = cur_blocks > bumpable ? cur_blocks - bumpable : 0;
    if (listed * s < TRIM_MIN_BYTES || listed <= keep ||
        c->frees - k->walked_frees < (k->futile ? listed / 2 : listed / 4))
        return;
    k->walked_frees = c->frees;
    const size_t carved = k->carved;
    struct chunk_rec *cand[TRIM_BATCH];
    /* the fully carved chunks (before current), TRIM_BATCH at a time, at
     * most TRIM_PASSES passes over the list a walk: a class of more chunks
     * than that (a GiB of small blocks) is looked at a part per walk, from
     * where the last walk stopped, so that a walk stays O(list).  The next
     * of each chunk is read before a pass may give it back. */
    struct chunk_rec *r = c->chunks;
    for (size_t skip = k->cursor; skip != 0 && r != c->current; skip--)
        r = r->next;
    if (r == c->current) { /* the part the cursor named is gone: start again */
        r = c->chunks;
        k->cursor = 0;
    }
    size_t kept_before = k->cursor;
    for (unsigned pass = 0; pass < TRIM_PASSES && r != c->current; pass++) {
        size_t n = 0;
        while (r != c->current && n < TRIM_BATCH) {
            cand[n++] = r;
            r = r->next;
        }
        size_t gone, dropped = trim_batch(p, c, cand, n, listed - keep, &gone);
        listed -= dropped;
        k->carved -= dropped;
        kept_before += n - gone;
    }
    k->cursor = r == c->current || kept_before > UINT32_MAX ? 0 : (uint32_t)kept_before;
    k->futile = k->carved == carved;
}

/* ---- idle classes' pages (see "Idle classes give their pages back") ---- */

/* Class i as reset leaves it: no free block, bumping from its first chunk
 * again, the others kept; live blocks forgotten (the caller's business). */
static void class_rewind(mr_pools *p, size_t i)
{
    struct mri_pools_class *c = &p->hot.classes[i];
    struct chunk_rec *r = c->chunks;
    if (MRI_TRACKING)
        for (struct chunk_rec *q = r; q != NULL; q = q->next)
            mri_track_poison((void *)q->base, q->bytes);
    c->free = NULL;
    c->frees = c->allocations;
    c->current = r;
    c->bump = r != NULL ? r->base : 0;
    c->end = r != NULL ? r->base + r->blocks * c->size : 0;
    p->cold[i] = (struct class_cold){r != NULL ? r->blocks : 0, c->frees, 0, false, c->allocations, p->taken};
}

/* Rewinds the classes that stood idle since the last walk and gives their
 * chunks' whole pages to the OS -- once the pool has taken at least what
 * the class has carved since the class was last seen used, so that a class
 * used off and on while the pool grows refaults at most as many pages as
 * the growth itself brings.  A class untouched since its rewind (or since
 * reset, or its first chunk) is skipped: nothing of it is resident. */
static void purge(mr_pools *p)
{
    for (unsigned w = 0; w < TRIM_MASK_WORDS; w++)
        for (uint64_t m = p->purge_mask[w]; m != 0; m &= m - 1) {
            size_t i = (size_t)w * 64 + (unsigned)__builtin_ctzll(m);
            struct mri_pools_class *c = &p->hot.classes[i];
            struct class_cold *k = &p->cold[i];
            const struct chunk_rec *first = c->chunks;
            if (c->allocations != k->purge_seen) { /* used since the last walk */
                k->purge_seen = c->allocations;
                k->purge_taken = p->taken;
                continue;
            }
            if (c->frees != c->allocations || first == NULL ||
                (c->free == NULL && c->current == first && c->bump == first->base) ||
                p->taken - k->purge_taken < k->carved * c->size)
                continue;
            class_rewind(p, i);
            for (const struct chunk_rec *r = first; r != NULL; r = r->next)
                mri_os_discard((void *)r->base, r->bytes);
        }
}

/* After the pool took memory from upstream: gives back the empty chunks
 * of the classes worth a walk, and the pages of idle classes. */
static void trim(mr_pools *p)
{
    for (unsigned w = 0; w < TRIM_MASK_WORDS; w++)
        for (uint64_t m = p->trim_mask[w]; m != 0; m &= m - 1) {
            size_t i = (size_t)w * 64 + (unsigned)__builtin_ctzll(m);
            struct mri_pools_class *c = &p->hot.classes[i];
            trim_class(p, c, &p->cold[i]);
            if (c->chunks == c->current) /* nothing before current: nothing to walk */
                p->trim_mask[w] &= ~((uint64_t)1 << (i % 64));
        }
    purge(p);
}

/* Class i's current chunk has chunks before it: trim looks at it. */
static void trim_mark(mr_pools *p, size_t i) { p->trim_mask[i / 64] |= (uint64_t)1 << (i % 64); }

/* Makes a fresh chunk current for class c: the next kept one, else a new one
 * from upstream.  false (errno set) with nothing changed on failure. */
static bool class_refill(mr_pools *p, struct mri_pools_class *c)
{
    struct chunk_rec *cur = c->current;
    struct chunk_rec *r = cur != NULL ? cur->next : NULL;
    const size_t s = c->size;
    bool fresh = false;
    if (r == NULL) {
        const size_t cap = chunk_cap(p, s);
        size_t n = FIRST_CHUNK_BYTES / s;
        if (cur != NULL)
            n = cur->blocks <= cap / 2 ? cur->blocks * 2 : cap;
        if (n == 0)
            n = 1;
        if (n > cap)
            n = cap;
        size_t bytes = n * s; /* <= HARD_MAX_CHUNK: no overflow */
        size_t page = mri_os_page_size();
        if (!mri_align_up(bytes, bytes < page ? 64 : page, &bytes)) {
            errno = ENOMEM;
            return false;
        }
        n = bytes / s < cap ? bytes / s : cap; /* fill the rounding with blocks */
        const size_t align = class_align(s);
        void *base = mri_ledger_allocate(&p->ledger, p->upstream, bytes, align);
        if (base == NULL)
            return false;
        r = rec_new(p); /* after the chunk, so that a failure undoes only it */
        if (r == NULL) {
            int err = errno;
            mri_ledger_deallocate(&p->ledger, p->upstream, base, bytes, align);
            errno = err;
            return false;
        }
        r->next = NULL;
        r->base = (uintptr_t)base;
        r->bytes = bytes;
        r->blocks = n;
        if (cur != NULL)
            cur->next = r;
        else
            c->chunks = r;
        mri_track_poison(base, bytes);
        fresh = true;
        p->taken += bytes;
        if (mri_os_inner_pages(base, bytes) != 0) { /* something for purge to give back */
            size_t i = (size_t)(c - p->hot.classes);
            p->purge_mask[i / 64] |= (uint64_t)1 << (i % 64);
        }
    }
    MR_ASSERT_INTERNAL(r->blocks >= 1 && r->base % class_align(s) == 0);
    c->current = r;
    c->bump = r->base;
    c->end = r->base + r->blocks * s;
    p->cold[c - p->hot.classes].carved += r->blocks;
    if (r != c->chunks)
        trim_mark(p, (size_t)(c - p->hot.classes));
    if (fresh)
        trim(p);
    return true;
}

/* ---- direct blocks ---- */

/* The alignment a direct block's upstream allocation is asked for: plain
 * malloc alignment unless the request needs more. */
static size_t direct_align(size_t align) { return align > DIRECT_ALIGN_MIN ? align : DIRECT_ALIGN_MIN; }

/* The pad before a direct block (header, alignment) and the bytes asked of
 * upstream; false when they cannot be represented. */
static bool direct_layout(size_t size, size_t align, size_t *pad, size_t *total)
{
    /* the upstream is asked for direct_align(align) <= pad: base + pad is
     * aligned to align; the pad holds the header */
    *pad = align > DIRECT_PAD_MIN ? align : DIRECT_PAD_MIN;
    return !mri_add_overflow(size, *pad, total) && *total <= MRI_MAX_SIZE;
}

/* Upstream calls of a pool: through the ledger, which a thread-safe pool
 * guards with its lock (held by the caller, dropped during the call). */
static void *up_allocate(mr_pools *p, size_t size, size_t align)
{
    if (p->tc != NULL)
        return mri_tc_up_allocate(p->tc, size, align);
    return mri_ledger_allocate(&p->ledger, p->upstream, size, align);
}

static void up_deallocate(mr_pools *p, void *ptr, size_t size, size_t align)
{
    if (p->tc != NULL)
        mri_tc_up_deallocate(p->tc, ptr, size, align);
    else
        mri_ledger_deallocate(&p->ledger, p->upstream, ptr, size, align);
}

static void pool_lock(mr_pools *p)
{
    if (p->tc != NULL)
        mri_tc_lock(p->tc);
}

static void pool_unlock(mr_pools *p)
{
    if (p->tc != NULL)
        mri_tc_unlock(p->tc);
}

static void *direct_alloc(mr_pools *p, size_t size, size_t align)
{
    size_t pad, total;
    if (!direct_layout(size, align, &pad, &total))
        return mri_fail(ENOMEM);
    pool_lock(p);
    char *base = up_allocate(p, total, direct_align(align));
    if (base == NULL) {
        pool_unlock(p);
        return NULL;
    }
    struct direct_hdr *h = (struct direct_hdr *)(void *)(base + pad - sizeof *h);
    h->size = size;
    h->align = align;
    h->prev = &p->direct;
    h->next = p->direct.next;
    p->direct.next->prev = h;
    p->direct.next = h;
    p->direct_count++;
    p->direct_bytes += size;
    p->direct_allocations++;
    p->taken += total;
    pool_unlock(p);
    if (p->tc == NULL)
        trim(p);
    return base + pad;
}

static void direct_free(mr_pools *p, void *ptr, size_t size, size_t align)
{
    size_t pad, total;
    if (MRI_MISUSE(!direct_layout(size, align, &pad, &total), ptr,
                   "mr_pools_free: size and alignment of no possible allocation"))
        return;
    struct direct_hdr *h = (struct direct_hdr *)(void *)((char *)ptr - sizeof *h);
    pool_lock(p);
    /* (debug builds only: the header of a pointer that is not ours may
     * itself point anywhere) */
    if (MRI_MISUSE(MR_DEBUG >= 1 && (h->prev->next != h || h->next->prev != h), ptr,
                   "mr_pools_free: not a live block of this pool") ||
        MRI_MISUSE(h->size != size || h->align != align, ptr,
                   "mr_pools_free: size or alignment differs from the allocation's")) {
        pool_unlock(p);
        return;
    }
    h->prev->next = h->next;
    h->next->prev = h->prev;
    p->direct_count--;
    p->direct_bytes -= size;
    up_deallocate(p, (char *)ptr - pad, total, direct_align(align));
    pool_unlock(p);
}

static void direct_release_all(mr_pools *p)
{
    pool_lock(p);
    struct direct_hdr *h = p->direct.next;
    while (h != &p->direct) {
        struct direct_hdr *next = h->next;
        size_t pad, total;
        (void)direct_layout(h->size, h->align, &pad, &total); /* held it once: fits */
        up_deallocate(p, (char *)(h + 1) - pad, total, direct_align(h->align));
        h = next;
    }
    p->direct.prev = p->direct.next = &p->direct;
    p->direct_count = p->direct_bytes = 0;
    pool_unlock(p);
}

/* ---- thread-safe pools: the thread caches (tcache.c) ---- */

static void *ts_alloc(mr_pools *p, size_t size, size_t align)
{
    if (MR_UNLIKELY(!mri_is_pow2(align)))
        return mri_fail(EINVAL);
    size_t i;
    if (MR_UNLIKELY(!pooled(p, size, align, &i)))
        return direct_alloc(p, size, align);
    void *b = mri_tc_alloc(p->tc, i);
    if (b != NULL)
        mri_track_unpoison(b, size);
    return b;
}

static void ts_free(mr_pools *p, void *ptr, size_t size, size_t align)
{
    if (ptr == NULL || MRI_MISUSE(!mri_is_pow2(align), ptr, "mr_pools_free: alignment is not a power of two"))
        return;
    size_t i;
    if (MR_UNLIKELY(!pooled(p, size, align, &i))) {
        direct_free(p, ptr, size, align);
        return;
    }
    if (MRI_TRACKING && size != 0) /* a block already freed is poisoned */
        (void)*(volatile const char *)ptr;
    mri_tc_free(p->tc, ptr, i);
}

MR_API void mr_pools_thread_flush(mr_pools *p)
{
    if (p != NULL && p->tc != NULL)
        mri_tc_flush(p->tc);
}

/* ---- allocation ---- */

MR_API MR_NOINLINE void *mri_pools_alloc_slow(mr_pools *p, size_t size, size_t align)
{
    MR_ASSERT(p != NULL, "mr_pools_alloc: pool is NULL");
    if (p->tc != NULL)
        return ts_alloc(p, size, align);
    if (MR_UNLIKELY(!mri_is_pow2(align)))
        return mri_fail(EINVAL);
    size_t i;
    if (!pooled(p, size, align, &i))
        return direct_alloc(p, size, align);
    struct mri_pools_class *c = &p->hot.classes[i];
    void *b = c->free;
    if (b != NULL) { /* only callers built with ASan come here with a free block */
        c->free = mri_link_get(b, p->hot.key);
    } else {
        if (c->bump == c->end && !class_refill(p, c))
            return NULL; /* errno set, nothing changed */
        b = (void *)c->bump;
        c->bump += c->size;
    }
    mri_track_unpoison(b, size);
    c->allocations++;
    MRI_WALK(&p->walk, walk(p, &p->walk.steps));
    return b;
}

MR_API MR_NOINLINE void mri_pools_free_slow(mr_pools *p, void *ptr, size_t size, size_t align)
{
    MR_ASSERT(p != NULL, "mr_pools_free: pool is NULL");
    if (p->tc != NULL) {
        ts_free(p, ptr, size, align);
        return;
    }
    if (ptr == NULL || MRI_MISUSE(!mri_is_pow2(align), ptr, "mr_pools_free: alignment is not a power of two"))
        return; /* no allocation had it */
    size_t i;
    if (!pooled(p, size, align, &i)) {
        direct_free(p, ptr, size, align);
        return;
    }
    struct mri_pools_class *c = &p->hot.classes[i];
    MR_ASSERT_INTERNAL(((uintptr_t)ptr & (class_align(c->size) - 1)) == 0);
    /* A live block's requested bytes are unpoisoned; touching the first one
     * of a block already freed (double free, free after reset) is reported. */
    if (MRI_TRACKING && size != 0)
        (void)*(volatile const char *)ptr;
    mri_track_unpoison(ptr, LINK);
    mri_link_store(ptr, c->free, p->hot.key);
    mri_track_poison(ptr, c->size);
    c->free = ptr;
    c->frees++;
    MRI_WALK(&p->walk, walk(p, &p->walk.steps));
}

/* Reached when the inline path cannot keep the block: classes differ, a
 * direct block, NULL, an alignment above 16, or a checked build (which comes
 * here for every call, to move the poisoned tail). */
MR_API MR_NOINLINE void *mri_pools_realloc_slow(mr_pools *p, void *ptr, size_t old_size, size_t new_size,
                                                size_t align)
{
    MR_ASSERT(p != NULL, "mr_pools_realloc: pool is NULL");
    if (MR_UNLIKELY(!mri_is_pow2(align)))
        return mri_fail(EINVAL);
    if (ptr == NULL)
        return mr_pools_alloc(p, new_size, align);
    size_t io, in;
    if (pooled(p, old_size, align, &io) && pooled(p, new_size, align, &in) && io == in) {
        /* the same block: only the bytes a user may touch change */
        mri_track_poison(ptr, p->tc != NULL ? ts_class_size(io) : class_size(io));
        mri_track_unpoison(ptr, new_size);
        return ptr;
    }
    void *q = mr_pools_alloc(p, new_size, align);
    if (q == NULL)
        return NULL; /* errno set; ptr untouched */
    memcpy(q, ptr, old_size < new_size ? old_size : new_size);
    mr_pools_free(p, ptr, old_size, align);
    return q;
}

/* ---- resource view ---- */

static void *view_allocate(mr_resource *self, size_t size, size_t align)
{
    return mr_pools_alloc(mri_container_of(self, mr_pools, resource), size, align);
}

static void view_deallocate(mr_resource *self, void *ptr, size_t size, size_t align)
{
    mr_pools_free(mri_container_of(self, mr_pools, resource), ptr, size, align);
}

static const struct mr_resource_ops view_ops = {view_allocate, view_deallocate, NULL};

MR_API mr_resource *mr_pools_resource(mr_pools *p)
{
    MR_ASSERT(p != NULL, "mr_pools_resource: pool is NULL");
    return &p->resource;
}

/* ---- lifetime ---- */

MR_API mr_pools *mr_pools_create(const mr_pools_options *opts)
{
    mr_pools_options o = {NULL, 0, 0, false};
    if (opts != NULL)
        o = *opts;
    mr_resource *up = o.upstream != NULL ? o.upstream : mr_get_default_resource();
    size_t largest = o.largest_required_pool_block != 0 ? o.largest_required_pool_block : MR_POOLS_DEFAULT_POOL_BLOCK;
    if (largest > MR_POOLS_MAX_POOL_BLOCK)
        largest = MR_POOLS_MAX_POOL_BLOCK;
    /* the largest class a multiple of 16, so that the inline paths' or with
     * an alignment of 16 stays within the classes */
    size_t last = mri_pools_class_of((largest - 1) | (INLINE_ALIGN_MAX - 1));
    size_t nclasses = last + 1;
    MR_ASSERT_INTERNAL(nclasses <= TRIM_MASK_WORDS * 64);
    size_t off = mri_align_up_nocheck(sizeof(struct mr_pools), HEADER_ALIGN);
    /* thread-safe: the engine and its classes instead of the class array */
    size_t bytes = off + (o.thread_safe ? mri_tc_bytes(nclasses)
                                        : nclasses * (sizeof(struct mri_pools_class) + sizeof(struct class_cold)));
    mri_ledger ledger = {0};
    mr_pools *p = mri_ledger_allocate(&ledger, up, bytes, HEADER_ALIGN);
    if (p == NULL)
        return NULL;
    memset(p, 0, bytes);
    p->ledger = ledger;
    p->hot.key = mri_os_random();
    p->pool_max = class_size(last);
    p->resource.ops = &view_ops;
    p->upstream = up;
    p->nclasses = nclasses;
    p->header_bytes = bytes;
    p->max_blocks_opt = o.max_blocks_per_chunk;
    p->direct.prev = p->direct.next = &p->direct;
    if (o.thread_safe) {
        p->tc = mri_tc_layout((char *)p + off, nclasses, &p->ledger, up, p->hot.key);
        for (size_t i = 0; i < nclasses; i++) {
            struct mri_tc_class *cls = &p->tc->classes[i];
            cls->size = ts_class_size(i);
            cls->align = class_align(cls->size);
            cls->first_blocks = FIRST_CHUNK_BYTES / cls->size != 0 ? FIRST_CHUNK_BYTES / cls->size : 1;
            cls->max_blocks = chunk_cap(p, cls->size);
            cls->round = true;
        }
        mri_tc_start(p->tc);
        /* the inline paths: the unsynchronised part does not apply (alloc:
         * alloc_max 0, free: guard), the thread-safe part reads this
         * thread's cache */
        p->hot.pool_max = p->pool_max;
        p->hot.guard = UINTPTR_MAX;
        p->hot.tc_id = p->tc->id;
        return p;
    }
    p->hot.classes = (struct mri_pools_class *)(void *)((char *)p + off);
    p->cold = (struct class_cold *)(void *)(p->hot.classes + nclasses);
    p->hot.alloc_max = p->hot.pool_max = p->pool_max;
    for (size_t i = 0; i < nclasses; i++)
        p->hot.classes[i].size = class_size(i);
    MRI_WALK_NOW(&p->walk, walk(p, &p->walk.steps));
    return p;
}

MR_API void mr_pools_release(mr_pools *p)
{
    MR_ASSERT(p != NULL, "mr_pools_release: pool is NULL");
    direct_release_all(p);
    if (p->tc != NULL) {
        mri_tc_reset(p->tc, true);
        return;
    }
    for (size_t i = 0; i < p->nclasses; i++) {
        struct mri_pools_class *c = &p->hot.classes[i];
        const size_t align = class_align(c->size);
        for (struct chunk_rec *r = c->chunks; r != NULL; r = r->next) {
            mri_track_unpoison((void *)r->base, r->bytes);
            mri_ledger_deallocate(&p->ledger, p->upstream, (void *)r->base, r->bytes, align);
        }
        c->free = NULL;
        c->bump = c->end = 0;
        c->frees = c->allocations;
        c->chunks = c->current = NULL;
        p->cold[i] = (struct class_cold){0, c->frees, 0, false, c->allocations, p->taken};
    }
    memset(p->purge_mask, 0, sizeof p->purge_mask);
    /* records last: the loop above read them */
    for (struct rec_page *pg = p->rec_pages, *next; pg != NULL; pg = next) {
        next = pg->next;
        mri_ledger_deallocate(&p->ledger, p->upstream, pg, pg->bytes, alignof(struct rec_page));
    }
    p->rec_pages = NULL;
    p->rec_ptr = p->rec_end = 0;
    p->rec_spare = NULL;
    MR_ASSERT_INTERNAL(p->ledger.held == p->header_bytes);
    MRI_WALK_NOW(&p->walk, walk(p, &p->walk.steps));
}

MR_API void mr_pools_reset(mr_pools *p)
{
    MR_ASSERT(p != NULL, "mr_pools_reset: pool is NULL");
    direct_release_all(p);
    if (p->tc != NULL) {
        mri_tc_reset(p->tc, false);
        return;
    }
    for (size_t i = 0; i < p->nclasses; i++)
        class_rewind(p, i);
    MRI_WALK_NOW(&p->walk, walk(p, &p->walk.steps));
}

MR_API void mr_pools_destroy(mr_pools *p)
{
    if (p == NULL)
        return;
    if (p->tc != NULL) {
        direct_release_all(p);
        mri_tc_fini(p->tc); /* the caches too, and no thread finds them again */
    } else {
        mr_pools_release(p);
    }
    mri_ledger ledger = p->ledger; /* the header goes: count on a copy */
    mri_ledger_deallocate(&ledger, p->upstream, p, p->header_bytes, HEADER_ALIGN);
}

/* ---- queries ---- */

MR_API MR_NOINLINE size_t mri_pools_block_size_slow(const mr_pools *p, size_t size, size_t align)
{
    MR_ASSERT(p != NULL, "mr_pools_block_size: pool is NULL");
    if (!mri_is_pow2(align))
        return 0;
    size_t i, pad, total;
    if (pooled(p, size, align, &i))
        return p->tc != NULL ? ts_class_size(i) : class_size(i);
    return direct_layout(size, align, &pad, &total) ? size : 0;
}

MR_API void mr_pools_get_options(const mr_pools *p, mr_pools_options *out)
{
    MR_ASSERT(p != NULL && out != NULL, "mr_pools_get_options: NULL argument");
    out->upstream = p->upstream;
    out->max_blocks_per_chunk = p->max_blocks_opt;
    out->largest_required_pool_block = p->pool_max;
    out->thread_safe = p->tc != NULL;
}

MR_API void mr_pools_stats(const mr_pools *p, mr_stats *out)
{
    MR_ASSERT(p != NULL && out != NULL, "mr_pools_stats: NULL argument");
    if (p->tc != NULL) {
        /* a snapshot: each count is read once, while threads go on */
        size_t in_use = 0, allocations = 0;
        for (size_t i = 0; i < p->nclasses; i++) {
            size_t a, f;
            mri_tc_counts(p->tc, i, &a, &f);
            in_use += (a > f ? a - f : 0) * ts_class_size(i);
            allocations += a;
        }
        mri_tc_lock(p->tc);
        mri_ledger_stats(&p->ledger, out);
        out->in_use = in_use + p->direct_bytes;
        out->allocations = allocations + p->direct_allocations;
        mri_tc_unlock(p->tc);
        return;
    }
    size_t in_use = p->direct_bytes, allocations = p->direct_allocations;
    for (size_t i = 0; i < p->nclasses; i++) {
        const struct mri_pools_class *c = &p->hot.classes[i];
        in_use += (c->allocations - c->frees) * c->size;
        allocations += c->allocations;
    }
    mri_ledger_stats(&p->ledger, out);
    out->in_use = in_use;
    out->allocations = allocations;
}

/* ---- invariants ---- */

#define CHECK(cond, ...) MRI_VERIFY(cond, "mr_pools_check", (const void *)p, __VA_ARGS__)
/* As CHECK, but reports and goes on (the caller tests cond and frees first). */
#define CHECK_OR(cond, ...)                                                    \
    do {                                                                       \
        if (MR_UNLIKELY(!(cond)))                                              \
            mri_verify_report("mr_pools_check", (const void *)p, __VA_ARGS__); \
    } while (0)

/* A carved part of a chunk, [lo, hi). */
struct span {
    uintptr_t lo, hi;
};

static int span_cmp(const void *x, const void *y)
{
    uintptr_t a = ((const struct span *)x)->lo, b = ((const struct span *)y)->lo;
    return (a > b) - (a < b);
}

/* Checks class i; adds its chunk bytes to *chunk_bytes, its chunks to
 * *records (at most max_records in all: a cycle ends there), its work to
 * *steps. */
static bool check_class(const mr_pools *p, size_t i, size_t *chunk_bytes, size_t *records, size_t max_records,
                        size_t *steps)
{
    const struct mri_pools_class *c = &p->hot.classes[i];
    const size_t s = c->size;
    CHECK(s == class_size(i), "class %zu: size %zu, expected %zu", i, s, class_size(i));
    CHECK(c->allocations >= c->frees, "class %zu (%zu B): %zu frees > %zu allocations", i, s, c->frees,
          c->allocations);
    size_t capacity = 0, kept = 0;
    bool seen_current = false;
    const size_t align = class_align(s);
    for (const struct chunk_rec *r = c->chunks; r != NULL; r = r->next) {
        CHECK(++*records <= max_records, "class %zu (%zu B): chunk list longer than the records held", i, s);
        CHECK(r->blocks >= 1 && r->blocks <= r->bytes / s, "class %zu (%zu B): chunk %p has %zu blocks in %zu bytes", i,
              s, (void *)r->base, r->blocks, r->bytes);
        CHECK(r->base % align == 0 && r->bytes % 64 == 0, "class %zu (%zu B): chunk %p of %zu bytes misaligned", i, s,
              (void *)r->base, r->bytes);
        capacity += r->blocks;
        *chunk_bytes += r->bytes;
        if (seen_current)
            kept += r->blocks;
        if (r == c->current) {
            seen_current = true;
            uintptr_t end = r->base + r->blocks * s;
            CHECK(c->end == end && c->bump >= r->base && c->bump <= end && (end - c->bump) % s == 0,
                  "class %zu (%zu B): bump %p / end %p outside the current chunk %p..%p", i, s, (void *)c->bump,
                  (void *)c->end, (void *)r->base, (void *)end);
        }
    }
    if (c->chunks == NULL)
        CHECK(c->current == NULL && c->bump == 0 && c->end == 0 && c->free == NULL,
              "class %zu (%zu B): no chunk but current/bump/free set", i, s);
    else
        CHECK(seen_current, "class %zu (%zu B): current chunk not in the class's list", i, s);
    /* the carved parts of the chunks, sorted, for the free list's lookups
     * (a linear scan for a few chunks, or when the check cannot have the
     * memory) */
    size_t nspans = 0;
    for (const struct chunk_rec *r = c->chunks; r != NULL; r = r->next) {
        nspans++;
        if (r == c->current)
            break;
    }
    struct span *spans = c->free != NULL && nspans > 16 ? malloc(nspans * sizeof *spans) : NULL;
    if (spans != NULL) {
        size_t k = 0;
        for (const struct chunk_rec *r = c->chunks; k < nspans; r = r->next, k++)
            spans[k] = (struct span){r->base, r == c->current ? c->bump : r->base + r->blocks * s};
        qsort(spans, nspans, sizeof *spans, span_cmp);
    }
    *steps += nspans;
    size_t nfree = 0;
    bool ok = true;
    for (const void *b = c->free; b != NULL && ok; b = mri_link_get(b, p->hot.key)) {
        ok = ++nfree <= capacity;
        CHECK_OR(ok, "class %zu (%zu B): free list longer than the capacity %zu (cycle?)", i, s, capacity);
        uintptr_t a = (uintptr_t)b, base = 0;
        if (spans != NULL) {
            size_t lo = 0, hi = nspans; /* the first span with lo > a is at hi */
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                *steps += 1;
                if (spans[mid].lo <= a)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            if (lo > 0 && a < spans[lo - 1].hi)
                base = spans[lo - 1].lo;
        } else {
            for (const struct chunk_rec *r = c->chunks; r != NULL; r = r->next) {
                *steps += 1;
                uintptr_t carved_end = r == c->current ? c->bump : r->base + r->blocks * s;
                if (a >= r->base && a < carved_end) {
                    base = r->base;
                    break;
                }
                if (r == c->current)
                    break;
            }
        }
        ok = base != 0;
        CHECK_OR(ok, "class %zu (%zu B): free block %p is in no carved part of the class's chunks", i, s, b);
        ok = (a - base) % s == 0;
        CHECK_OR(ok, "class %zu (%zu B): free block %p not on a block boundary", i, s, b);
    }
    *steps += nfree;
    free(spans);
    if (!ok)
        return false;
    size_t bump_free = c->chunks != NULL ? (c->end - c->bump) / s : 0;
    size_t live = c->allocations - c->frees;
    CHECK(p->cold[i].carved == capacity - kept, "class %zu (%zu B): %zu blocks counted carved, %zu in the chunks", i,
          s, p->cold[i].carved, capacity - kept);
    CHECK(nfree + bump_free + kept + live == capacity,
          "class %zu (%zu B): free %zu + bump %zu + kept %zu + live %zu != capacity %zu", i, s, nfree, bump_free, kept,
          live, capacity);
    return true;
}

static bool check_classes(const mr_pools *p, size_t *held, size_t *blocks, size_t *steps);

/* mr_pools_check, counting its work into *steps (MRI_WALK). */
static bool walk(const mr_pools *p, size_t *steps)
{
    *steps += p != NULL ? p->nclasses : 0;
    if (p == NULL) {
        mri_verify_report("mr_pools_check", p, "pool is NULL");
        return false;
    }
    CHECK(p->nclasses >= 1 && p->pool_max == class_size(p->nclasses - 1), "class table: %zu classes, pool_max %zu",
          p->nclasses, p->pool_max);
    size_t held = p->header_bytes, blocks = 1;
    if (p->tc != NULL) {
        for (size_t i = 0; i < p->nclasses; i++)
            CHECK(p->tc->classes[i].size == ts_class_size(i), "class %zu: size %zu, expected %zu", i,
                  p->tc->classes[i].size, ts_class_size(i));
        CHECK(p->hot.classes == NULL && p->hot.alloc_max == 0 && p->hot.guard == UINTPTR_MAX &&
                  p->hot.tc_id == p->tc->id && p->hot.pool_max == p->pool_max,
              "thread-safe pool: inline fields %p / %#jx / %ju", (void *)p->hot.classes, (uintmax_t)p->hot.guard,
              (uintmax_t)p->hot.tc_id);
        if (!mri_tc_check(p->tc, "mr_pools_check", p, &held, &blocks))
            return false;
    } else {
        CHECK(p->hot.classes != NULL && p->hot.pool_max == p->pool_max && p->hot.alloc_max == p->pool_max &&
                  p->hot.guard == 0 && p->hot.tc_id == 0,
              "class table: pool_max %zu / %zu", p->hot.pool_max, p->pool_max);
        if (!check_classes(p, &held, &blocks, steps))
            return false;
    }
    size_t n = 0, bytes = 0;
    for (const struct direct_hdr *h = p->direct.next; h != &p->direct; h = h->next) {
        CHECK(h->next->prev == h && h->prev->next == h, "direct block %p: list links broken", (const void *)(h + 1));
        CHECK(++n <= p->direct_count, "direct list longer than the %zu counted (cycle?)", p->direct_count);
        size_t pad, total;
        CHECK(mri_is_pow2(h->align) && direct_layout(h->size, h->align, &pad, &total),
              "direct block %p: bad size %zu / alignment %zu", (const void *)(h + 1), h->size, h->align);
        CHECK((uintptr_t)(h + 1) % h->align == 0, "direct block %p not aligned to %zu", (const void *)(h + 1), h->align);
        bytes += h->size;
        held += total;
        blocks++;
    }
    *steps += n;
    CHECK(n == p->direct_count && bytes == p->direct_bytes, "direct blocks: %zu / %zu B, counted %zu / %zu B", n, bytes,
          p->direct_count, p->direct_bytes);
    return mri_ledger_verify(&p->ledger, "mr_pools_check", p, held, blocks);
}

MR_API bool mr_pools_check(const mr_pools *p)
{
    size_t steps = 0;
    return walk(p, &steps);
}

/* The unsynchronised pool's classes and chunk records: adds their bytes
 * and upstream blocks. */
static bool check_classes(const mr_pools *p, size_t *held, size_t *blocks, size_t *steps)
{
    size_t pages = 0;
    for (const struct rec_page *pg = p->rec_pages; pg != NULL; pg = pg->next) {
        CHECK(pg->bytes == REC_PAGE_BYTES, "record page %p of %zu bytes", (const void *)pg, pg->bytes);
        pages++;
    }
    size_t used_last = p->rec_pages != NULL ? (p->rec_ptr - ((uintptr_t)p->rec_pages + REC_FIRST)) / sizeof(struct chunk_rec) : 0;
    size_t handed_out = pages != 0 ? (pages - 1) * RECS_PER_PAGE + used_last : 0;
    size_t chunk_bytes = 0, records = 0, spare = 0;
    for (const struct chunk_rec *r = p->rec_spare; r != NULL; r = r->next)
        CHECK(++spare <= handed_out, "spare chunk records: more than the %zu handed out (cycle?)", handed_out);
    for (size_t i = 0; i < p->nclasses; i++) {
        if (!check_class(p, i, &chunk_bytes, &records, handed_out - spare, steps))
            return false;
        const struct mri_pools_class *c = &p->hot.classes[i];
        CHECK(c->chunks == c->current || (p->trim_mask[i / 64] >> (i % 64) & 1),
              "class %zu: chunks before the current one, but not marked for trim", i);
    }
    CHECK(records + spare == handed_out, "%zu chunk records in the class lists and %zu spare, %zu handed out", records,
          spare, handed_out);
    *held += pages * REC_PAGE_BYTES + chunk_bytes;
    *blocks += pages + records;
    return true;
}

/* ---- recognising the resource view (memres.hpp's resource_adaptor) ---- */

MR_API mr_pools *mr_pools_of_resource(mr_resource *r)
{
    return r != NULL && r->ops == &view_ops ? mri_container_of(r, mr_pools, resource) : NULL;
}
