/* SPDX-License-Identifier: MIT */
/* advise/analyze/tables.c -- the two tables the trace decoder (trace.c)
 * keeps: a map of 64-bit keys to 64-bit values (open addressing, linear
 * probing, backward-shift deletion), and the live objects of the merge by
 * birth tick, in pages found through such a map.  Declared in trace.h. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"

/* ---- a map of 64-bit keys (never UINT64_MAX) to 64-bit values ---- */


#define EMPTY UINT64_MAX

static inline size_t map_hash(uint64_t k, size_t cap)
{
    k ^= k >> 31;
    k *= 0x9e3779b97f4a7c15ull;
    k ^= k >> 29;
    return (size_t)k & (cap - 1);
}

uint64_t *mra_map_get(const struct map *m, uint64_t k)
{
    if (m->n == 0)
        return NULL;
    for (size_t i = map_hash(k, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == k)
            return &m->vals[i];
        if (m->keys[i] == EMPTY)
            return NULL;
    }
}

static int map_grow(struct map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    uint64_t *keys = malloc(cap * sizeof *keys), *vals = malloc(cap * sizeof *vals);
    if (!keys || !vals) {
        free(keys);
        free(vals);
        return -1;
    }
    memset(keys, 0xff, cap * sizeof *keys);
    for (size_t j = 0; j < m->cap; j++) {
        if (m->keys[j] == EMPTY)
            continue;
        size_t i = map_hash(m->keys[j], cap);
        while (keys[i] != EMPTY)
            i = (i + 1) & (cap - 1);
        keys[i] = m->keys[j];
        vals[i] = m->vals[j];
    }
    free(m->keys);
    free(m->vals);
    m->keys = keys;
    m->vals = vals;
    m->cap = cap;
    return 0;
}

/* Sets k to v; -1: out of memory. */
int mra_map_put(struct map *m, uint64_t k, uint64_t v)
{
    if ((m->n + 1) * 4 > m->cap * 3 && map_grow(m) != 0)
        return -1;
    size_t i = map_hash(k, m->cap);
    while (m->keys[i] != EMPTY && m->keys[i] != k)
        i = (i + 1) & (m->cap - 1);
    if (m->keys[i] == EMPTY) {
        m->keys[i] = k;
        m->n++;
    }
    m->vals[i] = v;
    return 0;
}

void mra_map_del(struct map *m, uint64_t k)
{
    if (m->n == 0)
        return;
    size_t mask = m->cap - 1, i = map_hash(k, m->cap);
    while (m->keys[i] != k) {
        if (m->keys[i] == EMPTY)
            return;
        i = (i + 1) & mask;
    }
    /* backward-shift deletion: no tombstones */
    for (size_t j = i;;) {
        j = (j + 1) & mask;
        if (m->keys[j] == EMPTY)
            break;
        size_t h = map_hash(m->keys[j], m->cap);
        /* move j to i when its home h does not lie in (i, j] cyclically */
        if ((j > i && (h <= i || h > j)) || (j < i && h <= i && h > j)) {
            m->keys[i] = m->keys[j];
            m->vals[i] = m->vals[j];
            i = j;
        }
    }
    m->keys[i] = EMPTY;
    m->n--;
}

void mra_map_free(struct map *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

/* ---- the live objects of the merge, by birth tick ----
 * Ticks are dense (each thread takes them in batches), so a table of pages
 * of TICK_PAGE ticks, each entry the object's number + 1 (0: none), found
 * by a map of pages with the last page cached; a page whose objects all
 * died is freed (a later birth in it finds a new, empty page). */

#define TICK_PAGE_BITS 14
#define TICK_PAGE ((size_t)1 << TICK_PAGE_BITS)

struct tpage {
    size_t live;
    uint32_t e[TICK_PAGE];
};


static struct tpage *tt_page(struct ticktab *tt, uint64_t tick, bool make)
{
    uint64_t no = tick >> TICK_PAGE_BITS;
    if (tt->last && tt->last_no == no)
        return tt->last;
    uint64_t *v = mra_map_get(&tt->pages, no);
    struct tpage *pg = v ? (struct tpage *)(uintptr_t)*v : NULL;
    if (!pg && make) {
        pg = calloc(1, sizeof *pg);
        if (!pg)
            return NULL;
        if (mra_map_put(&tt->pages, no, (uint64_t)(uintptr_t)pg) != 0) {
            free(pg);
            return NULL;
        }
    }
    if (pg) {
        tt->last = pg;
        tt->last_no = no;
    }
    return pg;
}

/* The object born at tick + 1, or 0. */
uint32_t mra_tt_get(struct ticktab *tt, uint64_t tick)
{
    struct tpage *pg = tt_page(tt, tick, false);
    return pg ? pg->e[tick & (TICK_PAGE - 1)] : 0;
}

/* Sets the object born at tick (obj1 = its number + 1).  0, or -1. */
int mra_tt_set(struct ticktab *tt, uint64_t tick, uint32_t obj1)
{
    struct tpage *pg = tt_page(tt, tick, true);
    if (!pg)
        return -1;
    pg->e[tick & (TICK_PAGE - 1)] = obj1;
    pg->live++;
    return 0;
}

void mra_tt_clear(struct ticktab *tt, uint64_t tick)
{
    struct tpage *pg = tt_page(tt, tick, false);
    if (!pg || pg->e[tick & (TICK_PAGE - 1)] == 0)
        return;
    pg->e[tick & (TICK_PAGE - 1)] = 0;
    if (--pg->live == 0) {
        mra_map_del(&tt->pages, tick >> TICK_PAGE_BITS);
        if (tt->last == pg)
            tt->last = NULL;
        free(pg);
    }
}

void mra_tt_free(struct ticktab *tt)
{
    for (size_t i = 0; i < tt->pages.cap; i++)
        if (tt->pages.keys[i] != EMPTY)
            free((void *)(uintptr_t)tt->pages.vals[i]);
    mra_map_free(&tt->pages);
    tt->last = NULL;
}
