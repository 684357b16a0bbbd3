/* SPDX-License-Identifier: MIT */
/* memres/bits/tree.h -- private: the tree's internal API for memres's own
 * clients (memres.hpp).  Not for direct use.
 *
 * mri_node_watch(n, slot): when n dies -- destroyed directly or by its
 * parent's cascade -- *slot becomes NULL (one slot a node; slot NULL
 * stops watching).  The C++ owners watch their allocator's node, so that
 * an owner whose allocator died with its parent does not destroy it again. */
#ifndef MEMRES_BITS_TREE_H
#define MEMRES_BITS_TREE_H

#include "memres/config.h"
#include "memres/resource.h"

#ifdef __cplusplus
extern "C" {
#endif

MR_API void mri_node_watch(mr_node *n, mr_node **slot);

#ifdef __cplusplus
}
#endif
#endif /* MEMRES_BITS_TREE_H */
