/* SPDX-License-Identifier: MIT */
/* src/addrmap.c -- the address map of the checks at the free (addrmap.h).
 *
 * Open addressing with linear probing; a removed entry leaves a deleted
 * slot that lookups step over and a rebuild drops.  The map is rebuilt at
 * four times the live entries (at least 16 slots) when live and deleted
 * slots would fill half of it, so a probe sequence stays short, also one
 * that ends empty-handed (a level that does not hold the address).  Its
 * memory is whole pages from the OS (os.c), apart from malloc's heap, so
 * the heap's layout -- what a use after free of upstream memory hits -- is
 * the same in every build.
 */
#include "addrmap.h"

#include <string.h>

#include "os.h"

#define DELETED SIZE_MAX

/* What a map that the OS refused points at: lost, never unmapped. */
static struct mri_addrmap lost_map = {.lost = true};

static unsigned level_of(size_t bytes)
{
    return bytes <= 1 ? 0u : 64u - (unsigned)__builtin_clzll((unsigned long long)(bytes - 1));
}

static size_t slot_of(const struct mri_addrmap *m, uintptr_t granule, unsigned level)
{
    uint64_t h = ((uint64_t)granule ^ ((uint64_t)level << 58)) * UINT64_C(0x9E3779B97F4A7C15);
    return (size_t)(h >> 32) & (m->cap - 1);
}

static void put(struct mri_addrmap *m, const struct mri_addrmap_slot *e)
{
    size_t i = slot_of(m, e->granule, e->level);
    while (m->slots[i].bytes != 0 && m->slots[i].bytes != DELETED)
        i = (i + 1) & (m->cap - 1);
    if (m->slots[i].bytes == 0)
        m->used++;
    m->slots[i] = *e;
    m->live++;
}

/* The bytes a map of cap slots maps. */
static size_t map_bytes(size_t cap)
{
    return mri_align_up_nocheck(sizeof(struct mri_addrmap) + cap * sizeof(struct mri_addrmap_slot), mri_os_page_size());
}

static void unmap(struct mri_addrmap *m)
{
    if (m != NULL && m != &lost_map)
        mri_os_unmap(m, map_bytes(m->cap));
}

/* Room in *m for two more entries; false (*m lost) when the OS refuses. */
static bool reserve(struct mri_addrmap **mp)
{
    struct mri_addrmap *old = *mp;
    if (old != NULL && (old->used + 2) * 2 <= old->cap)
        return true;
    size_t live = old != NULL ? old->live : 0, cap = 16;
    while (cap < (live + 2) * 4)
        cap *= 2;
    const size_t bytes = map_bytes(cap);
    while (map_bytes(cap * 2) == bytes) /* the rest of the last page */
        cap *= 2;
    struct mri_addrmap *m = mri_os_map(bytes, mri_os_page_size()); /* zeroed */
    if (m == NULL) {
        mri_addrmap_clear(mp);
        *mp = &lost_map;
        return false;
    }
    m->cap = cap;
    if (old != NULL) {
        m->levels = old->levels;
        memcpy(m->at_level, old->at_level, sizeof m->at_level);
        for (size_t i = 0; i < old->cap; i++)
            if (old->slots[i].bytes != 0 && old->slots[i].bytes != DELETED)
                put(m, &old->slots[i]);
        unmap(old);
    }
    *mp = m;
    return true;
}

void mri_addrmap_add(struct mri_addrmap **mp, uintptr_t base, size_t bytes, size_t size)
{
    if ((*mp != NULL && (*mp)->lost) || !reserve(mp))
        return;
    struct mri_addrmap *m = *mp;
    unsigned level = level_of(bytes);
    uintptr_t g0 = base >> level, g1 = (base + (bytes - 1)) >> level;
    put(m, &(struct mri_addrmap_slot){g0, base, bytes, size, level});
    if (g1 != g0)
        put(m, &(struct mri_addrmap_slot){g1, base, bytes, size, level});
    m->levels |= (uint64_t)1 << level;
    m->at_level[level]++;
}

static void drop(struct mri_addrmap *m, uintptr_t granule, unsigned level, uintptr_t base)
{
    for (size_t i = slot_of(m, granule, level); m->slots[i].bytes != 0; i = (i + 1) & (m->cap - 1)) {
        struct mri_addrmap_slot *e = &m->slots[i];
        if (e->bytes != DELETED && e->granule == granule && e->level == level && e->base == base) {
            e->bytes = DELETED;
            m->live--;
            return;
        }
    }
}

void mri_addrmap_remove(struct mri_addrmap *m, uintptr_t base, size_t bytes)
{
    if (m == NULL || m->lost)
        return;
    unsigned level = level_of(bytes);
    uintptr_t g0 = base >> level, g1 = (base + (bytes - 1)) >> level;
    drop(m, g0, level, base);
    if (g1 != g0)
        drop(m, g1, level, base);
    if (--m->at_level[level] == 0)
        m->levels &= ~((uint64_t)1 << level);
}

void mri_addrmap_clear(struct mri_addrmap **mp)
{
    unmap(*mp);
    *mp = NULL;
}

/* The range of `level` that holds a, or NULL. */
static const struct mri_addrmap_slot *find_at(const struct mri_addrmap *m, uintptr_t a, unsigned level)
{
    const uintptr_t granule = a >> level;
    for (size_t i = slot_of(m, granule, level);; i = (i + 1) & (m->cap - 1)) {
        const struct mri_addrmap_slot *e = &m->slots[i];
        if (e->bytes == 0)
            return NULL;
        if (a - e->base < e->bytes && e->granule == granule && e->level == level && e->bytes != DELETED)
            return e;
    }
}

const struct mri_addrmap_slot *mri_addrmap_find(const struct mri_addrmap *m, uintptr_t a)
{
    /* the highest level first: the chunks of a class double in size, so
     * most blocks are in its largest ones */
    for (uint64_t lv = m != NULL ? m->levels : 0; lv != 0;) {
        const unsigned level = 63u - (unsigned)__builtin_clzll(lv);
        lv &= ~((uint64_t)1 << level);
        const struct mri_addrmap_slot *e = find_at(m, a, level);
        if (e != NULL)
            return e;
    }
    return NULL;
}

enum mri_free_verdict mri_addrmap_check(const struct mri_addrmap *m, const void *ptr, size_t size)
{
    if (m != NULL && m->lost)
        return MRI_FREE_OK;
    /* a block of 0 bytes (entered as 1 byte, at level 0) ends where the next
     * allocation may begin: the pointer of a direct block of size 0 can be
     * the first byte of the range after it */
    if (size == 0 && m != NULL && (m->levels & 1u)) {
        const struct mri_addrmap_slot *z = find_at(m, (uintptr_t)ptr, 0);
        if (z != NULL && z->size == 0 && z->base == (uintptr_t)ptr)
            return MRI_FREE_OK;
    }
    const struct mri_addrmap_slot *e = mri_addrmap_find(m, (uintptr_t)ptr);
    if (e == NULL)
        return MRI_FREE_FOREIGN;
    if (e->size != size)
        return e->size == 0 ? MRI_FREE_SINGLE : MRI_FREE_OTHER_CLASS;
    size_t off = (uintptr_t)ptr - e->base; /* a whole block from a block boundary */
    return (size != 0 ? off % size == 0 && e->bytes - off >= size : off == 0) ? MRI_FREE_OK : MRI_FREE_INTERIOR;
}
