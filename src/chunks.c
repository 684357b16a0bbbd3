/* SPDX-License-Identifier: MIT */
/* src/chunks.c -- chunks and their records (src/chunks.h).
 *
 * Records are bump-allocated from record pages taken from the owner's
 * upstream, newest page first; a record whose chunk went back upstream is
 * kept on a spare list for the next chunk.  A new chunk takes its record
 * first (so that a thread-safe owner can list the chunk, for fork, in the
 * same hold of its lock in which the ledger counts it) and undoes that
 * record -- giving back a page fetched for it alone -- when the upstream
 * refuses the chunk: a failed call holds what it held before.
 */
#include "chunks.h"

#include "track.h"

struct mri_rec_page {
    struct mri_rec_page *next;
};
#define REC_FIRST (mri_align_up_nocheck(sizeof(struct mri_rec_page), alignof(struct mri_chunk)))
#define RECS_PER_PAGE ((MRI_REC_PAGE_BYTES - REC_FIRST) / sizeof(struct mri_chunk))

bool mri_chunk_layout(size_t size, size_t *n, size_t cap, bool round, size_t *bytes)
{
    size_t b;
    if (mri_mul_overflow(*n, size, &b) || b > MRI_MAX_SIZE || (round && !mri_round_block(b, &b))) {
        errno = ENOMEM;
        return false;
    }
    if (round)
        *n = b / size < cap ? b / size : cap; /* fill the rounding with blocks */
    *bytes = b;
    return true;
}

void *mri_chunks_up_allocate(struct mri_chunks *c, size_t size, size_t align)
{
    if (c->lock == NULL)
        return mri_ledger_allocate(c->ledger, c->upstream, size, align);
    if (!mri_ledger_reserve(c->ledger, size))
        return NULL;
    mri_lock_give(c->lock);
    void *p = mr_allocate(c->upstream, size, align);
    int err = errno;
    mri_lock_take(c->lock);
    if (p == NULL) {
        mri_ledger_cancel(c->ledger, size);
        errno = err;
        return NULL;
    }
    mri_ledger_commit(c->ledger, size);
    return p;
}

void mri_chunks_up_deallocate(struct mri_chunks *c, void *p, size_t size, size_t align)
{
    if (c->lock == NULL) {
        mri_ledger_deallocate(c->ledger, c->upstream, p, size, align);
        return;
    }
    mri_ledger_give(c->ledger, size);
    mri_lock_give(c->lock);
    mr_deallocate(c->upstream, p, size, align);
    mri_lock_take(c->lock);
}

/* A record: a spare one, else the newest page's next, else a new page's
 * first (*fresh then names the page).  NULL with errno when no page can be
 * had. */
static struct mri_chunk *rec_take(struct mri_chunks *c, struct mri_rec_page **fresh)
{
    *fresh = NULL;
    if (c->spare != NULL) {
        struct mri_chunk *r = c->spare;
        c->spare = r->next;
        return r;
    }
    if (c->ptr == c->end) {
        struct mri_rec_page *pg = mri_chunks_up_allocate(c, MRI_REC_PAGE_BYTES, alignof(struct mri_rec_page));
        if (pg == NULL)
            return NULL;
        /* (a thread-safe owner: another thread's page fetched meanwhile
         * keeps its unused records, which this one leaves behind) */
        pg->next = c->pages;
        c->pages = pg;
        c->npages++;
        c->ptr = (uintptr_t)pg + REC_FIRST;
        c->end = c->ptr + RECS_PER_PAGE * sizeof(struct mri_chunk);
        *fresh = pg;
    }
    struct mri_chunk *r = (struct mri_chunk *)c->ptr;
    c->ptr += sizeof *r;
    return r;
}

/* Undoes rec_take: the record back, and the page when it came for r alone
 * (no record of it handed out since: the page before it is then full, or
 * its rest was left behind, as mri_chunks_handed_out counts it). */
static void rec_untake(struct mri_chunks *c, struct mri_chunk *r, struct mri_rec_page *fresh)
{
    if (fresh != NULL && c->pages == fresh && c->ptr == (uintptr_t)fresh + REC_FIRST + sizeof *r) {
        c->pages = fresh->next;
        c->npages--;
        c->ptr = c->end = c->pages != NULL ? (uintptr_t)c->pages + REC_FIRST + RECS_PER_PAGE * sizeof *r : 0;
        mri_chunks_up_deallocate(c, fresh, MRI_REC_PAGE_BYTES, alignof(struct mri_rec_page));
        return;
    }
    r->next = c->spare;
    c->spare = r;
}

struct mri_chunk *mri_chunk_new(struct mri_chunks *c, size_t bytes, size_t blocks, size_t size, size_t align)
{
    struct mri_rec_page *fresh;
    struct mri_chunk *r = rec_take(c, &fresh);
    if (r == NULL)
        return NULL;
    const size_t pad = mri_chunk_pad(c->upstream, align);
    if (MR_UNLIKELY(bytes > SIZE_MAX - pad)) {
        rec_untake(c, r, fresh);
        errno = ENOMEM;
        return NULL;
    }
    void *raw = mri_chunks_up_allocate(c, bytes + pad, pad != 0 ? MRI_MAX_ALIGN : align);
    if (raw == NULL) {
        int err = errno;
        rec_untake(c, r, fresh);
        errno = err;
        return NULL;
    }
    const uintptr_t base = ((uintptr_t)raw + align - 1) & ~(uintptr_t)(align - 1);
    MR_ASSERT_INTERNAL(base - (uintptr_t)raw <= pad);
    mri_track_poison((void *)base, bytes);
    *r = (struct mri_chunk){NULL, base, bytes, blocks, NULL, (uint32_t)pad, (uint32_t)(base - (uintptr_t)raw)};
    if (MRI_ADDRMAP)
        mri_addrmap_add(&c->map, base, bytes, size);
    return r;
}

void mri_chunk_free(struct mri_chunks *c, struct mri_chunk *r, size_t align)
{
    if (MRI_ADDRMAP)
        mri_addrmap_remove(c->map, r->base, r->bytes);
    mri_track_unpoison((void *)r->base, r->bytes);
    mri_chunks_up_deallocate(c, (void *)(r->base - r->off), r->bytes + r->pad, r->pad != 0 ? MRI_MAX_ALIGN : align);
    r->next = c->spare;
    c->spare = r;
}

void mri_chunks_release(struct mri_chunks *c)
{
    for (struct mri_rec_page *pg = c->pages, *next; pg != NULL; pg = next) {
        next = pg->next;
        mri_chunks_up_deallocate(c, pg, MRI_REC_PAGE_BYTES, alignof(struct mri_rec_page));
    }
    c->pages = NULL;
    c->npages = 0;
    c->ptr = c->end = 0;
    c->spare = NULL;
    if (MRI_ADDRMAP)
        mri_addrmap_clear(&c->map);
}

size_t mri_chunks_handed_out(const struct mri_chunks *c)
{
    if (c->pages == NULL)
        return 0;
    /* every page but the newest was used whole, or its unused records
     * were left behind by a page fetched meanwhile (counted as handed out:
     * mri_chunks_verify then sees fewer listed, never more) */
    size_t last = (c->ptr - ((uintptr_t)c->pages + REC_FIRST)) / sizeof(struct mri_chunk);
    return (c->npages - 1) * RECS_PER_PAGE + last;
}

bool mri_chunks_verify(const struct mri_chunks *c, const char *who, const void *obj, size_t listed, size_t *held,
                       size_t *blocks)
{
    size_t pages = 0, spare = 0, out = mri_chunks_handed_out(c);
    for (const struct mri_rec_page *pg = c->pages; pg != NULL && pages <= c->npages; pg = pg->next)
        pages++;
    MRI_VERIFY(pages == c->npages, who, obj, "%zu record pages listed, %zu counted", pages, c->npages);
    MRI_VERIFY(c->pages == NULL ? c->ptr == 0 && c->end == 0
                                : c->ptr >= (uintptr_t)c->pages + REC_FIRST && c->ptr <= c->end &&
                                      c->end == (uintptr_t)c->pages + REC_FIRST + RECS_PER_PAGE * sizeof(struct mri_chunk),
               who, obj, "free records %#jx..%#jx outside the newest page", (uintmax_t)c->ptr, (uintmax_t)c->end);
    for (const struct mri_chunk *r = c->spare; r != NULL; r = r->next)
        MRI_VERIFY(++spare <= out, who, obj, "spare chunk records: more than the %zu handed out (cycle?)", out);
    MRI_VERIFY(c->lock != NULL ? listed + spare <= out : listed + spare == out, who, obj,
               "%zu chunk records listed and %zu spare, %zu handed out", listed, spare, out);
    *held += pages * MRI_REC_PAGE_BYTES;
    *blocks += pages;
    return true;
}
