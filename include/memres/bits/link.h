/* SPDX-License-Identifier: MIT */
/* memres/bits/link.h -- private: the free-list link codec of object pools
 * and size-class pools, read by their inline paths.  Not for direct use;
 * the layout may change between versions.
 *
 * A free object holds the address of the next free one in its first word.
 * In a hardened build (MR_HARDENED, config.h) the word is stored encoded,
 * like glibc's safe-linking and mimalloc's encoded lists: next ^ key ^
 * (address of the word >> 12), with a random key per pool, so that a
 * use-after-free write or a double free cannot make the pool hand out an
 * address of an attacker's choosing.  Otherwise the mask is 0 and the link
 * is a plain pointer. */
#ifndef MEMRES_BITS_LINK_H
#define MEMRES_BITS_LINK_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "memres/config.h"

static inline uintptr_t mri_link_mask(const void *slot, uintptr_t key)
{
    return MR_HARDENED ? key ^ ((uintptr_t)slot >> 12) : 0;
}

static inline void *mri_link_load(const void *slot, uintptr_t key)
{
    uintptr_t v;
    memcpy(&v, slot, sizeof v); /* memcpy: the memory has the user's types */
    return (void *)(v ^ mri_link_mask(slot, key));
}

static inline void mri_link_store(void *slot, const void *next, uintptr_t key)
{
    uintptr_t v = (uintptr_t)next ^ mri_link_mask(slot, key);
    memcpy(slot, &v, sizeof v);
}

/* The mark of a free block (MR_FREE_CHECK, config.h): its second word,
 * the pool's random mark while the block is free. */
static inline bool mri_mark_test(const void *b, uintptr_t mark)
{
    uintptr_t v;
    memcpy(&v, (const char *)b + sizeof(void *), sizeof v);
    return v == mark;
}

static inline void mri_mark_set(void *b, uintptr_t mark) { memcpy((char *)b + sizeof(void *), &mark, sizeof mark); }

#endif /* MEMRES_BITS_LINK_H */
