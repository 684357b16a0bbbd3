/* SPDX-License-Identifier: MIT */
/* memres/bits/freelist.h -- private: a free list in front of a bump
 * region, the one take and put of the inline allocation paths: an object
 * pool's (bits/objpool.h), a size-class pool's class (bits/pools.h) and a
 * thread's slot of a thread-safe pool (bits/tcache.h).  Not for direct
 * use; the layout may change between versions.
 *
 * Statement macros, not functions: the caller's own fields and counts go
 * in as they are, so each path compiles to the code it had with the body
 * written out (a function over pointers to the fields moved registers and
 * loads around on gcc).  s is the state: s->free, the list (the link in a
 * free block's first word, encoded with key: bits/link.h); BUMP names the
 * field where the region [s->BUMP, s->end) of s->size-byte blocks starts.
 */
#ifndef MEMRES_BITS_FREELIST_H
#define MEMRES_BITS_FREELIST_H

#include <stdbool.h>
#include <stdint.h>

#include "memres/bits/link.h"
#include "memres/config.h"

/* In a function returning void *: returns a block from the list (counted
 * by COUNT_LIST), else from the region (counted by COUNT_BUMP), clearing
 * its mark when MARKED (MR_FREE_CHECK); falls through when both are empty.
 * Two constants keep each caller's code as it was tuned:
 *   FIRST    the region's count before the bump (the pools: a tail unlike
 *            the list's, which the compiler would otherwise merge with it,
 *            costing that path a load and a store in place of one add to
 *            memory); false: after it (the thread caches, whose counts are
 *            asm adds the compiler cannot merge)
 *   NONZERO  tell the compiler the region's block is not NULL, so that a
 *            caller's NULL test folds (the pools; the thread caches' code
 *            keeps its test: one more compare on their carving path) */
#define MRI_FL_TAKE(s, BUMP, key, COUNT_LIST, COUNT_BUMP, MARKED, FIRST, NONZERO) \
    do {                                                                        \
        void *mri_b_ = (s)->free;                                               \
        if (MR_LIKELY(mri_b_ != NULL)) {                                        \
            (s)->free = mri_link_load(mri_b_, (key));                           \
            COUNT_LIST;                                                         \
            if (MARKED)                                                         \
                mri_mark_set(mri_b_, 0);                                        \
            return mri_b_;                                                      \
        }                                                                       \
        uintptr_t mri_q_ = (s)->BUMP;                                           \
        if (MR_LIKELY(mri_q_ != (s)->end)) {                                    \
            if (NONZERO)                                                        \
                MR_ASSUME(mri_q_ != 0);                                         \
            if (FIRST)                                                          \
                COUNT_BUMP;                                                     \
            (s)->BUMP = mri_q_ + (s)->size;                                     \
            if (!(FIRST))                                                       \
                COUNT_BUMP;                                                     \
            if (MARKED)                                                         \
                mri_mark_set((void *)mri_q_, 0);                                \
            return (void *)mri_q_;                                              \
        }                                                                       \
    } while (0)

/* In a function returning bool: pushes b (not NULL) on the list, counts it
 * (COUNT) and returns true; with MARKED, returns false when b already
 * holds mark (the caller's slow path then looks for a double free), else
 * sets it. */
#define MRI_FL_PUT(s, b, key, mark, COUNT, MARKED)     \
    do {                                               \
        if (MARKED) {                                  \
            if (MR_UNLIKELY(mri_mark_test((b), (mark)))) \
                return false;                          \
            mri_mark_set((b), (mark));                 \
        }                                              \
        mri_link_store((b), (s)->free, (key));         \
        (s)->free = (b);                               \
        COUNT;                                         \
        return true;                                   \
    } while (0)

#endif /* MEMRES_BITS_FREELIST_H */
