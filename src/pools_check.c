/* SPDX-License-Identifier: MIT */
/* src/pools_check.c -- the size-class pool's walker: mr_pools_check, and the
 * same walk counting its steps for the debug tier's periodic checks
 * (MRI_WALK).  The invariants it checks are pools.c's head comment's. */
#include <stdlib.h>

#include "pools_impl.h"

#define CHECK(cond, ...) MRI_VERIFY(cond, "mr_pools_check", (const void *)p, __VA_ARGS__)

/* The free list of class c: every entry a block boundary in a carved part
 * of a chunk of c, no cycle (at most capacity entries).  Counts them in
 * *nfree. */
static bool check_free_list(const mr_pools *p, size_t i, size_t capacity, size_t *nfree, size_t *steps)
{
    const struct mri_pools_class *c = &p->hot.classes[i];
    const size_t s = c->size;
    size_t nspans = 0;
    for (const struct mri_chunk *r = c->chunks; r != NULL; r = r->next) {
        nspans++;
        if (r == c->current)
            break;
    }
    struct mri_span local[16], *spans = nspans <= 16 ? local : malloc(nspans * sizeof *spans);
    CHECK(spans != NULL, "class %zu (%zu B): no memory for the check", i, s);
    size_t k = 0;
    for (const struct mri_chunk *r = c->chunks; k < nspans; r = r->next, k++)
        spans[k] = (struct mri_span){r->base, r == c->current ? c->bump : r->base + r->blocks * s};
    mri_spans_sort(spans, nspans);
    *steps += nspans;
    bool ok = true;
    const void *b = c->free;
    for (*nfree = 0; b != NULL && ok; b = mri_link_get(b, p->hot.key)) {
        const struct mri_span *in = mri_span_find(spans, nspans, (uintptr_t)b, steps);
        ok = ++*nfree <= capacity && in != NULL && ((uintptr_t)b - in->lo) % s == 0;
    }
    if (spans != local)
        free(spans);
    *steps += *nfree;
    CHECK(ok, "class %zu (%zu B): free block %p is no block of a carved part of the class's chunks "
          "(or the list is longer than the capacity %zu: a cycle)", i, s, b, capacity);
    return true;
}

/* Checks class i; adds its chunk bytes to *chunk_bytes, its chunks to
 * *records (at most max_records in all: a cycle ends there). */
static bool check_class(const mr_pools *p, size_t i, size_t *chunk_bytes, size_t *records, size_t max_records,
                        size_t *steps)
{
    const struct mri_pools_class *c = &p->hot.classes[i];
    const size_t s = c->size;
    CHECK(s == mri_pools_size_of(p, i), "class %zu: size %zu, expected %zu", i, s, mri_pools_size_of(p, i));
    CHECK(c->allocations >= c->frees, "class %zu (%zu B): %zu frees > %zu allocations", i, s, c->frees,
          c->allocations);
    CHECK(c->chunks == c->current || mri_mask_has(p->trim_mask, i),
          "class %zu: chunks before the current one, but not marked for trim", i);
    size_t capacity = 0, kept = 0;
    bool seen_current = false;
    const size_t align = mri_pools_class_align(s);
    for (const struct mri_chunk *r = c->chunks; r != NULL; r = r->next) {
        CHECK(++*records <= max_records, "class %zu (%zu B): chunk list longer than the records held", i, s);
        CHECK(r->blocks >= 1 && r->blocks <= r->bytes / s, "class %zu (%zu B): chunk %p has %zu blocks in %zu bytes", i,
              s, (void *)r->base, r->blocks, r->bytes);
        CHECK(r->base % align == 0 && r->bytes % 64 == 0, "class %zu (%zu B): chunk %p of %zu bytes misaligned", i, s,
              (void *)r->base, r->bytes);
        capacity += r->blocks;
        *chunk_bytes += r->bytes + r->pad;
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
    size_t nfree = 0;
    if (c->free != NULL && !check_free_list(p, i, capacity, &nfree, steps))
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

/* mr_pools_check, counting its work into *steps (MRI_WALK). */
bool mri_pools_walk(const mr_pools *p, size_t *steps)
{
    if (p == NULL) {
        mri_verify_report("mr_pools_check", p, "pool is NULL");
        return false;
    }
    *steps += p->nclasses;
    CHECK(p->nsized >= 1 && p->nclasses >= p->nsized && p->nclasses - p->nsized <= MR_POOLS_MAX_EXACT &&
              p->pool_max == mri_pools_class_size(p->nsized - 1) && p->hot.pool_max == mri_pools_inline_max(p),
          "class table: %zu classes, %zu sized, pool_max %zu / %zu", p->nclasses, p->nsized, p->pool_max,
          p->hot.pool_max);
    for (size_t k = p->nsized; k < p->nclasses; k++)
        CHECK(mri_pools_size_of(p, k) % 16 == 0 && mri_pools_size_of(p, k) >= MR_POOLS_EXACT_MIN &&
                  (k == p->nsized || mri_pools_size_of(p, k) > mri_pools_size_of(p, k - 1)),
              "exact class %zu: size %zu", k, mri_pools_size_of(p, k));
    size_t held = p->header_bytes, blocks = 1;
    if (p->tc != NULL) {
        for (size_t i = 0; i < p->nclasses; i++)
            CHECK(p->tc->classes[i].size == mri_pools_size_of(p, i), "class %zu: size %zu, expected %zu", i,
                  p->tc->classes[i].size, mri_pools_size_of(p, i));
        CHECK(p->hot.classes == NULL && p->hot.alloc_max == 0 && p->hot.guard == UINTPTR_MAX &&
                  p->hot.ts_max == p->hot.pool_max && p->hot.tc_ref == mri_tc_ref(p->tc->index),
              "thread-safe pool: inline fields %p / %#jx / %zu / %#jx", (void *)p->hot.classes,
              (uintmax_t)p->hot.guard, p->hot.ts_max, (uintmax_t)p->hot.tc_ref);
        CHECK(p->tc->local.max == p->hot.pool_max && p->tc->local.key == p->hot.key &&
                  p->tc->local.mark == p->hot.mark && p->tc->local.pool == p,
              "thread-safe pool: the handles' header (max %zu) is not the pool's", p->tc->local.max);
        if (!mri_tc_check(p->tc, "mr_pools_check", p, &held, &blocks))
            return false;
    } else {
        CHECK(p->hot.classes != NULL && p->hot.alloc_max == p->hot.pool_max && p->hot.guard == 0 && p->hot.ts_max == 0 &&
                  p->hot.tc_ref == mri_tc_ref(MRI_TC_NONE),
              "inline fields: alloc_max %zu, guard %#jx, ts_max %zu, entry %#jx", p->hot.alloc_max,
              (uintmax_t)p->hot.guard, p->hot.ts_max, (uintmax_t)p->hot.tc_ref);
        CHECK(p->local.max == 0 && p->local.pool == p, "the handle: max %zu, pool %p", p->local.max, p->local.pool);
        size_t chunk_bytes = 0, records = 0, out = mri_chunks_handed_out(&p->chunks);
        for (size_t i = 0; i < p->nclasses; i++)
            if (!check_class(p, i, &chunk_bytes, &records, out, steps))
                return false;
        if (!mri_chunks_verify(&p->chunks, "mr_pools_check", p, records, &held, &blocks))
            return false;
        held += chunk_bytes;
        blocks += records;
    }
    return mri_direct_verify(p, &held, &blocks, steps) && mri_ledger_verify(&p->ledger, "mr_pools_check", p, held, blocks);
}

MR_API bool mr_pools_check(const mr_pools *p)
{
    size_t steps = 0;
    return mri_pools_walk(p, &steps);
}
