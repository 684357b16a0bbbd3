/* SPDX-License-Identifier: MIT */
/* src/tsafe_impl.h -- what the thread-safe engine (tsafe.c) and its walk
 * (tsafe_check.c) both read: the records a batch keeps in its free blocks'
 * second words, and a slot's counts (tsafe.c, "the counts of a slot",
 * says how they are kept and written). */
#ifndef MEMRES_TSAFE_IMPL_H
#define MEMRES_TSAFE_IMPL_H

#include <string.h>

#include "tsafe.h"

#define LINK MRI_LINK

/* A free block's second word (a batch's or region's record). */
static inline uintptr_t word1_get(const void *b)
{
    const char *w = (const char *)b + LINK;
    mri_track_unpoison(w, LINK);
    uintptr_t v;
    memcpy(&v, w, sizeof v);
    mri_track_poison(w, LINK);
    return v;
}

/* The size of a batch whose first block is head. */
static inline size_t batch_count(const struct mri_tc *t, const void *head)
{
    const void *second = mri_link_get(head, t->key);
    return second == NULL ? 1 : (size_t)word1_get(second);
}

/* Slot s (class i)'s tally: after the cache's slots (tsafe.h). */
static inline struct mri_tc_tally *slot_tally(const struct mri_tc *t, const struct mri_tc_slot *s, size_t i)
{
    return (struct mri_tc_tally *)(uintptr_t)(s - i + t->nclasses) + i;
}

static inline size_t slot_limit(const struct mri_tc *t, const struct mri_tc_slot *s, size_t i)
{
    return slot_tally(t, s, i)->limit;
}

/* The blocks on the slot's list (the owning thread, or none running). */
static inline size_t slot_listed(const struct mri_tc *t, const struct mri_tc_slot *s, size_t i)
{
    return slot_limit(t, s, i) - s->credit - s->room - s->from_list;
}

/* Adds cache c's counts of class i to *a and *f (mod 2^64: moved may be
 * "negative"); read while its thread goes on. */
static inline void cache_counts(const struct mri_tc *t, const struct mri_tc_cache *c, size_t i, size_t *a, size_t *f)
{
    const struct mri_tc_slot *s = &c->slots[i];
    *a += __atomic_load_n(&s->from_list, __ATOMIC_RELAXED) + __atomic_load_n(&s->carved, __ATOMIC_RELAXED);
    const struct mri_tc_tally *y = slot_tally(t, s, i);
    *f += __atomic_load_n(&y->limit, __ATOMIC_RELAXED) + __atomic_load_n(&y->moved, __ATOMIC_RELAXED) -
          __atomic_load_n(&s->credit, __ATOMIC_RELAXED) - __atomic_load_n(&s->room, __ATOMIC_RELAXED);
}

/* f kept within [0, a]: a snapshot's counts are read one by one. */
static inline size_t frees_within(size_t a, size_t f)
{
    return (ptrdiff_t)(a - f) < 0 ? a : a - f > a ? 0 : f;
}

#endif /* MEMRES_TSAFE_IMPL_H */
