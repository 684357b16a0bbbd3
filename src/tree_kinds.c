/* SPDX-License-Identifier: MIT */
/* src/tree_kinds.c -- the table of kinds: every kind of allocator that is a
 * node of the tree of lifetimes, by its ops (src/tree.h), as PostgreSQL's
 * mcxt_methods[] lists its context types.  Only this file names them all:
 * the tree (tree.c) reaches a node's kind through its ops, and what needs
 * to know which allocator a resource view belongs to -- mr_node_of, and
 * the reports, which count a node's bytes once (tree_report.c) -- asks
 * here.  A new kind adds its ops below (docs/design.md, "How a new
 * allocator kind joins the tree").
 */
#include "tree.h"

/* Each kind's ops (its own file). */
extern const struct mri_node_ops mri_arena_node_ops, mri_pools_node_ops, mri_objpool_node_ops, mri_blocks_node_ops;

/* In the order mr_node_of has always asked them; a view is at most one's. */
static const struct mri_node_ops *const kinds[] = {
    &mri_arena_node_ops,
    &mri_pools_node_ops,
    &mri_objpool_node_ops,
    &mri_blocks_node_ops,
};

mr_node *mri_node_of(mr_resource *r)
{
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        mr_node *n = kinds[i]->node_of(r);
        if (n != NULL)
            return n;
    }
    return NULL;
}

MR_API mr_node *mr_node_of(mr_resource *r)
{
    mr_node *n = r != NULL ? mri_node_of(r) : NULL;
    if (n == NULL)
        errno = EINVAL;
    return n;
}
