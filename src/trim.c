/* SPDX-License-Identifier: MIT */
/* src/trim.c -- what an unsynchronised size-class pool gives back while it
 * runs: the empty chunks of a class whose free list has grown, and the
 * pages of a class that stands idle.  One hook, mri_pools_after_take,
 * called by pools.c after each upstream take (a new chunk, a direct block).
 *
 * Why: each class keeps the chunks of its own peak, so a program whose
 * sizes change from phase to phase (Lua's collector freeing a generation of
 * tables, then building strings; SQLite's journal, then its pages) would
 * hold the sum of its classes' peaks, not the peak of their sum.
 *
 * Empty chunks.  No per-chunk count is kept on the free path (that would
 * cost a chunk lookup on every free).  Instead a class worth a walk has its
 * free list walked once: its blocks are counted per chunk (a binary search
 * among a batch of its fully carved chunks, sorted), and a chunk whose
 * every block is on the list leaves the list, the class and the pool.
 * Worth a walk: the class has a chunk before its current one, its list
 * holds TRIM_MIN_BYTES and more than a current chunk's worth (kept for the
 * next swing), and since its last walk it had at least a quarter as many
 * frees as the list has blocks -- half as many when that walk gave nothing
 * back (a fragmented class waits for more of its blocks to turn over).  A
 * walk makes at most TRIM_PASSES passes of TRIM_BATCH chunks, from where
 * the last one stopped, so walks cost O(1) steps per free, amortised, and
 * nothing on the inline paths.  The current chunk and the chunks reset
 * kept after it are never given back.
 *
 * Idle classes.  Trim reaches neither a current chunk nor a short list, so
 * a class busy once and idle now (SQLite's sort buffers, used by one
 * statement) would keep its chunks resident.  So the same hook rewinds a
 * class (as reset does) and advises the whole pages of its chunks away
 * (MADV_DONTNEED, os.c) when all of these hold:
 *   - it has no live block;
 *   - it has had no allocation since the previous hook;
 *   - since it was last seen in use, the pool has taken from upstream at
 *     least the bytes the class has carved (so a class used off and on
 *     refaults at most what the pool's growth itself faults in).
 * The chunks stay the class's (held, no upstream call) and take memory
 * again one page fault at a time when it is used.  The pages lie inside
 * what the upstream gave; where the OS refuses the advice (locked memory)
 * they stay resident and nothing else changes.
 *
 * Thread-safe pools do not come here: their free blocks are spread over
 * the threads' caches.
 */
#include "os.h"
#include "pools_impl.h"
#include "track.h"

/* A class's free list is walked for empty chunks only when it holds at
 * least this many bytes. */
#define TRIM_MIN_BYTES ((size_t)64 * 1024)
/* Chunks sorted per pass of a walk (on the stack), and passes a walk
 * makes at most. */
#define TRIM_BATCH 128
#define TRIM_PASSES 4u

/* The chunks of one pass, sorted by base: their extents copied out of the
 * records (no pointer chase per lookup), and the chunk the last lookup
 * found (free lists often hold runs of one chunk's blocks). */
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
 * sorted here): gives back those whose every block is on the list, at most
 * budget blocks' worth.  Returns the blocks that left the list; *gone the
 * chunks. */
static size_t trim_batch(mr_pools *p, struct mri_pools_class *c, struct mri_chunk **cand, size_t n, size_t budget,
                         size_t *gone)
{
    *gone = 0;
    const size_t s = c->size;
    const uintptr_t key = p->hot.key;
    size_t count[TRIM_BATCH] = {0};
    for (size_t i = 1; i < n; i++) { /* insertion sort: n <= TRIM_BATCH, once a pass */
        struct mri_chunk *r = cand[i];
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
    /* the chunks out of the class's list and back upstream */
    const size_t align = mri_pools_class_align(s);
    for (struct mri_chunk **pr = (struct mri_chunk **)&c->chunks, *r; (r = *pr) != NULL;) {
        if (r->blocks != 0) {
            pr = &r->next;
            continue;
        }
        *pr = r->next;
        mri_chunk_free(&p->chunks, r, align);
    }
    return dropped;
}

/* Walks class c's free list for empty chunks when it is worth it (see
 * above) and gives them back. */
static void trim_class(mr_pools *p, struct mri_pools_class *c, struct mri_pools_cold *k)
{
    if (c->chunks == c->current) /* none, or only the current one */
        return;
    const size_t s = c->size;
    const size_t bumpable = (c->end - c->bump) / s;
    size_t listed = k->carved - bumpable - (c->allocations - c->frees);
    const size_t cur_blocks = ((const struct mri_chunk *)c->current)->blocks;
    size_t keep = cur_blocks > bumpable ? cur_blocks - bumpable : 0;
    if (listed * s < TRIM_MIN_BYTES || listed <= keep ||
        c->frees - k->walked_frees < (k->futile ? listed / 2 : listed / 4))
        return;
    k->walked_frees = c->frees;
    const size_t carved = k->carved;
    struct mri_chunk *cand[TRIM_BATCH];
    /* the fully carved chunks (before current), TRIM_BATCH at a time; a
     * class of more chunks than a walk reaches is looked at a part per
     * walk, from where the last stopped.  The next of each chunk is read
     * before a pass may give it back. */
    struct mri_chunk *r = c->chunks;
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

/* Rewinds the classes that stood idle since the last hook and gives their
 * chunks' whole pages to the OS (see above).  A class untouched since its
 * rewind (or since reset, or its first chunk) is skipped: nothing of it is
 * resident. */
static void purge(mr_pools *p)
{
    for (unsigned w = 0; w < MRI_MASK_WORDS; w++)
        for (uint64_t m = p->purge_mask[w]; m != 0; m &= m - 1) {
            size_t i = (size_t)w * 64 + (unsigned)__builtin_ctzll(m);
            struct mri_pools_class *c = &p->hot.classes[i];
            struct mri_pools_cold *k = &p->cold[i];
            const struct mri_chunk *first = c->chunks;
            if (c->allocations != k->purge_seen) { /* used since the last hook */
                k->purge_seen = c->allocations;
                k->purge_taken = p->taken;
                continue;
            }
            if (c->frees != c->allocations || first == NULL ||
                (c->free == NULL && c->current == first && c->bump == first->base) ||
                p->taken - k->purge_taken < k->carved * c->size)
                continue;
            mri_pools_class_rewind(p, i);
            for (const struct mri_chunk *r = first; r != NULL; r = r->next)
                mri_os_discard((void *)r->base, r->bytes);
        }
}

void mri_pools_after_take(mr_pools *p)
{
    for (unsigned w = 0; w < MRI_MASK_WORDS; w++)
        for (uint64_t m = p->trim_mask[w]; m != 0; m &= m - 1) {
            size_t i = (size_t)w * 64 + (unsigned)__builtin_ctzll(m);
            struct mri_pools_class *c = &p->hot.classes[i];
            trim_class(p, c, &p->cold[i]);
            if (c->chunks == c->current) /* nothing before current: nothing to walk */
                mri_mask_clear(p->trim_mask, i);
        }
    purge(p);
}
