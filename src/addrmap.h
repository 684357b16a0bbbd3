/* SPDX-License-Identifier: MIT */
/* src/addrmap.h -- which of an owner's block ranges an address lies in, in
 * O(1): the check at the free of debug builds (MRI_ADDRMAP), one
 * implementation for the pools' chunks (chunks.c, both engines), their
 * direct blocks (direct.c) and the object pool's blocks (objpool.c).
 *
 * A range [base, base + bytes) of blocks of `size` bytes has the level L,
 * the least with bytes <= 2^L, and is entered under the one or two
 * granules base >> L and (base + bytes - 1) >> L of that level, in an
 * open-addressing table keyed by (granule, level).  An address is looked
 * up at every level in use (a pool's chunks use a handful: their sizes
 * double up to a cap), one probe sequence each; a granule of level L holds
 * parts of at most three ranges of that level (each is over 2^(L-1)
 * bytes), so a lookup costs O(levels in use), whatever the number of
 * ranges.
 *
 * The table is pages from the OS, not memory from the owner's upstream:
 * held, the upstream's calls and the fault sweeps' failure points are the
 * same in every build.  When the OS refuses, the map is lost: it says
 * "unknown" from then on (no false report) until cleared.  Callers hold the owner's
 * lock, if any, across every call.
 */
#ifndef MEMRES_ADDRMAP_H
#define MEMRES_ADDRMAP_H

#include "internal.h"

/* Builds that keep the map (the library built without NDEBUG). */
#define MRI_ADDRMAP (MR_DEBUG >= 1)

struct mri_addrmap_slot {
    uintptr_t granule; /* address >> level */
    uintptr_t base;
    size_t bytes;      /* 0: empty; SIZE_MAX: deleted */
    size_t size;       /* the block size of the range (0: one block, any size) */
    unsigned level;
};

/* The map, in pages from the OS; its owner keeps a pointer, NULL while empty (one
 * word in the owner, in every build). */
struct mri_addrmap {
    size_t cap;                     /* slots: a power of two */
    size_t used;                    /* slots not empty (live and deleted) */
    size_t live;                    /* slots in use */
    uint64_t levels;                /* bit L: a range of level L is entered */
    uint32_t at_level[64];          /* ranges entered at each level */
    bool lost;                      /* the OS refused: lookups say unknown */
    struct mri_addrmap_slot slots[];
};

/* Enters the range [base, base + bytes) of blocks of `size` bytes (size 0:
 * a single block of `bytes` bytes) in *m.  bytes >= 1. */
void mri_addrmap_add(struct mri_addrmap **m, uintptr_t base, size_t bytes, size_t size);
/* Removes the range entered with base and bytes. */
void mri_addrmap_remove(struct mri_addrmap *m, uintptr_t base, size_t bytes);
/* Frees the map: *m is empty (and no longer lost). */
void mri_addrmap_clear(struct mri_addrmap **m);

/* What a free of ptr as a block of `size` bytes (0: a single block) would
 * be. */
enum mri_free_verdict {
    MRI_FREE_OK,          /* a block boundary in a range of that size (or the map is lost) */
    MRI_FREE_FOREIGN,     /* in no range */
    MRI_FREE_OTHER_CLASS, /* in a range of blocks of another size */
    MRI_FREE_SINGLE,      /* a single block (size 0) where size names a class */
    MRI_FREE_INTERIOR,    /* inside a block, not at its start */
};
enum mri_free_verdict mri_addrmap_check(const struct mri_addrmap *m, const void *ptr, size_t size);
/* The range that holds a, or NULL. */
const struct mri_addrmap_slot *mri_addrmap_find(const struct mri_addrmap *m, uintptr_t a);

#endif /* MEMRES_ADDRMAP_H */
