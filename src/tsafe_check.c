/* SPDX-License-Identifier: MIT */
/* src/tsafe_check.c -- the walk of the thread-safe engine (mri_tc_check,
 * for mr_pools_check and mr_objpool_check on thread-safe pools): every
 * chunk, every cache's list and region, the shared batches and regions of
 * each class, checked against each other and against the counts.  Only
 * while no other thread uses the pool; reads, never writes.  The engine it
 * walks is tsafe.c's (its opening comment has the design). */
#include <stdlib.h>
#include <string.h>

#include "tsafe_impl.h"

static int cmp_uptr(const void *x, const void *y)
{
    uintptr_t a = *(const uintptr_t *)x, b = *(const uintptr_t *)y;
    return a < b ? -1 : a > b;
}

#define CHECK(cond, ...)                          \
    do {                                          \
        if (!(cond)) {                            \
            mri_verify_report(who, obj, __VA_ARGS__); \
            goto fail;                            \
        }                                         \
    } while (0)

/* Class i: every chunk, every cache's list and region, the shared lists;
 * no free block twice, none outside the carved part of a chunk. */
static bool check_class(const struct mri_tc *t, size_t i, const char *who, const void *obj, size_t *held,
                        size_t *blocks, size_t *records)
{
    const struct mri_tc_class *cls = &t->classes[i];
    const size_t s = cls->size;
    size_t steps = 0; /* (walked on demand only: not counted) */
    struct mri_span *chunks = NULL, *uncarved = NULL;
    uintptr_t *freeb = NULL;
    size_t nchunks = 0, capacity = 0;
    const size_t max_records = mri_chunks_handed_out(&t->chunks);
    bool in_next = false;
    for (const struct mri_chunk *r = cls->chunks; r != NULL && nchunks <= max_records; r = r->next) {
        in_next = in_next || r == cls->next;
        capacity += r->blocks;
        nchunks++;
    }
    size_t ncaches = 0;
    const struct mri_tc_cache *lists[3] = {t->active, t->spare, t->lost};
    size_t a = 0, f = cls->frees_nocache, listed = 0, nlost = 0;
    for (size_t l = 0; l < 3; l++)
        for (const struct mri_tc_cache *c = lists[l]; c != NULL; c = c->next) {
            ncaches++;
            nlost += l == 2;
            cache_counts(t, c, i, &a, &f);
            if (l < 2) /* (a lost cache's counts may be mid-update) */
                listed += slot_listed(t, &c->slots[i], i);
        }
    size_t regions = 0;
    for (const void *b = cls->regions; b != NULL; b = mri_link_get(b, t->key))
        if (++regions > capacity)
            break;
    chunks = malloc((nchunks + 1) * sizeof *chunks);
    uncarved = malloc((nchunks + ncaches + regions + 1) * sizeof *uncarved);
    freeb = malloc(((listed <= capacity ? listed : 0) + cls->batched + 1) * sizeof *freeb);
    CHECK(chunks != NULL && uncarved != NULL && freeb != NULL, "class %zu: no memory for the check", i);
    CHECK(listed <= capacity, "class %zu (%zu B): the threads' lists count %zu blocks, more than the chunks' %zu", i,
          s, listed, capacity);
    CHECK(nchunks <= max_records, "class %zu (%zu B): chunk list longer than the records held (cycle?)", i, s);
    CHECK(cls->size >= 2 * LINK && cls->align != 0 && cls->batch >= 1, "class %zu: bad parameters", i);
    /* (after fork, a lost cache's thread may have been between two stores:
     * its frees seen up to a batch too high, or one too low) */
    CHECK(nlost != 0 || a >= f, "class %zu (%zu B): %zu frees > %zu allocations", i, s, f, a);
    CHECK(capacity == cls->capacity, "class %zu (%zu B): chunks hold %zu blocks, counted %zu", i, s, capacity,
          cls->capacity);
    CHECK(cls->next == NULL || in_next, "class %zu (%zu B): next chunk not in the list", i, s);
    size_t k = 0, nu = 0, nf = 0, uncarved_blocks = 0;
    for (const struct mri_chunk *r = cls->chunks; r != NULL && k < nchunks; r = r->next) {
        CHECK(r->blocks >= 1 && r->blocks * s <= r->bytes && r->base % cls->align == 0,
              "class %zu (%zu B): chunk %p: %zu blocks in %zu bytes", i, s, (void *)r->base, r->blocks, r->bytes);
        chunks[k].lo = r->base;
        chunks[k++].hi = r->base + r->blocks * s;
        *held += r->bytes + r->pad;
        ++*blocks;
    }
    *records += nchunks;
    mri_spans_sort(chunks, nchunks);
    for (size_t j = 1; j < nchunks; j++)
        CHECK(chunks[j].lo >= chunks[j - 1].hi, "class %zu (%zu B): chunks overlap at %p", i, s, (void *)chunks[j].lo);
    bool in = false;
    for (const struct mri_chunk *r = cls->chunks; r != NULL; r = r->next) {
        in = in || r == cls->next;
        if (in) {
            uncarved[nu].lo = r->base;
            uncarved[nu++].hi = r->base + r->blocks * s;
        }
    }
    /* regions: of caches (not lost ones: they may be mid-update) and shared */
    for (size_t l = 0; l < 2; l++)
        for (const struct mri_tc_cache *c = lists[l]; c != NULL; c = c->next) {
            const struct mri_tc_slot *sl = &c->slots[i];
            if (sl->bump != sl->end) {
                uncarved[nu].lo = sl->bump;
                uncarved[nu++].hi = sl->end;
            }
        }
    size_t shared_region_blocks = 0;
    for (const void *b = cls->regions; b != NULL; b = mri_link_get(b, t->key)) {
        CHECK(nu < nchunks + ncaches + regions, "class %zu (%zu B): region list cycles", i, s);
        uncarved[nu].lo = (uintptr_t)b;
        uncarved[nu++].hi = word1_get(b);
        shared_region_blocks += (uncarved[nu - 1].hi - uncarved[nu - 1].lo) / s;
    }
    CHECK(shared_region_blocks == cls->region_blocks, "class %zu (%zu B): regions hold %zu blocks, counted %zu", i, s,
          shared_region_blocks, cls->region_blocks);
    mri_spans_sort(uncarved, nu);
    for (size_t j = 0; j < nu; j++) {
        const struct mri_span *ch = mri_span_find(chunks, nchunks, uncarved[j].lo, &steps);
        CHECK(uncarved[j].lo < uncarved[j].hi && ch != NULL && uncarved[j].hi <= ch->hi &&
                  (uncarved[j].lo - ch->lo) % s == 0 && (uncarved[j].hi - uncarved[j].lo) % s == 0,
              "class %zu (%zu B): region %p..%p is not whole blocks of one chunk", i, s, (void *)uncarved[j].lo,
              (void *)uncarved[j].hi);
        CHECK(j == 0 || uncarved[j].lo >= uncarved[j - 1].hi, "class %zu (%zu B): regions overlap at %p", i, s,
              (void *)uncarved[j].lo);
        uncarved_blocks += (uncarved[j].hi - uncarved[j].lo) / s;
    }
    /* free blocks: every cache's list (not lost ones), every batch */
    for (size_t l = 0; l < 2; l++)
        for (const struct mri_tc_cache *c = lists[l]; c != NULL; c = c->next) {
            size_t n = 0, counted = slot_listed(t, &c->slots[i], i);
            for (const void *b = c->slots[i].free; b != NULL; b = mri_link_get(b, t->key)) {
                CHECK(n < counted, "class %zu (%zu B): a thread's list is longer than its count %zu", i, s, counted);
                freeb[nf++] = (uintptr_t)b;
                n++;
            }
            CHECK(n == counted, "class %zu (%zu B): a thread's list has %zu blocks, counted %zu", i, s, n, counted);
            const size_t limit = slot_limit(t, &c->slots[i], i);
            CHECK(counted + c->slots[i].room <= limit || c->slots[i].room == 0,
                  "class %zu (%zu B): a thread's list of %zu blocks has room %zu past its limit %zu", i, s, counted,
                  c->slots[i].room, limit);
        }
    size_t batched = 0;
    for (const void *h = cls->batches; h != NULL; h = (const void *)(word1_get(h) ^ t->key)) {
        size_t n = 0, want = batch_count(t, h);
        for (const void *b = h; b != NULL; b = mri_link_get(b, t->key)) {
            CHECK(batched + n < cls->batched, "class %zu (%zu B): batches hold more than the %zu counted", i, s,
                  cls->batched);
            freeb[nf++] = (uintptr_t)b;
            n++;
        }
        CHECK(n == want, "class %zu (%zu B): a batch of %zu blocks says %zu", i, s, n, want);
        batched += n;
    }
    CHECK(batched == cls->batched, "class %zu (%zu B): batches hold %zu blocks, counted %zu", i, s, batched,
          cls->batched);
    qsort(freeb, nf, sizeof *freeb, cmp_uptr);
    for (size_t j = 0; j < nf; j++) {
        CHECK(j == 0 || freeb[j] != freeb[j - 1], "class %zu (%zu B): block %p is free twice", i, s, (void *)freeb[j]);
        const struct mri_span *ch = mri_span_find(chunks, nchunks, freeb[j], &steps);
        CHECK(ch != NULL && (freeb[j] - ch->lo) % s == 0, "class %zu (%zu B): free block %p is no block of a chunk", i,
              s, (void *)freeb[j]);
        CHECK(mri_span_find(uncarved, nu, freeb[j], &steps) == NULL, "class %zu (%zu B): free block %p is in an uncarved region",
              i, s, (void *)freeb[j]);
    }
    /* what lost caches hold is unknown: then only an upper bound */
    size_t live = a - frees_within(a, f);
    CHECK(nlost != 0 ? nf + uncarved_blocks + live <= capacity + nlost : nf + uncarved_blocks + live == capacity,
          "class %zu (%zu B): free %zu + uncarved %zu + live %zu != capacity %zu", i, s, nf, uncarved_blocks, live,
          capacity);
    free(chunks);
    free(uncarved);
    free(freeb);
    return true;
fail:
    free(chunks);
    free(uncarved);
    free(freeb);
    return false;
}

bool mri_tc_check(const struct mri_tc *t, const char *who, const void *obj, size_t *held, size_t *blocks)
{
    size_t records = 0;
    MRI_VERIFY(t->pending == NULL, who, obj, "a chunk taken but not in its class while walked");
    for (size_t i = 0; i < t->nclasses; i++)
        if (!check_class(t, i, who, obj, held, blocks, &records))
            return false;
    const struct mri_tc_cache *lists[3] = {t->active, t->spare, t->lost};
    for (size_t l = 0; l < 3; l++)
        for (const struct mri_tc_cache *c = lists[l]; c != NULL; c = c->next) {
            MRI_VERIFY(c->owner == t && c->id == t->id && c->bytes == t->cache_bytes, who, obj,
                       "cache %p belongs to another pool", (const void *)c);
            MRI_VERIFY(memcmp(&c->local, &t->local, sizeof c->local) == 0, who, obj,
                       "cache %p: its handle is not the pool's", (const void *)c);
            MRI_VERIFY((l == 0) == (c->thread != NULL), who, obj, "cache %p: thread and list disagree",
                       (const void *)c);
            *held += c->bytes;
            ++*blocks;
        }
    return mri_chunks_verify(&t->chunks, who, obj, records, held, blocks);
}
