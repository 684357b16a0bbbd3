/* SPDX-License-Identifier: MIT */
/* memres/tree.h -- a tree of lifetimes: allocators that die with another
 * one, names, and memory reports in PostgreSQL's form.
 *
 * Every memres allocator (arena, object pool, size-class pool, block pool)
 * is a node.  Give its options a `parent` and it dies with that parent:
 * destroying, resetting or releasing the parent destroys it first (APR's
 * subpools, PostgreSQL's memory contexts, talloc's contexts -- but only
 * allocators are nodes: nothing per allocation, the node lives inside the
 * allocator's header).  Give it a `name` and the reports show it.
 *
 *     mr_arena *conn = mr_arena_create(&(mr_arena_options){.name = "connection"});
 *     for (each request) {
 *         mr_arena *req = mr_arena_create(&(mr_arena_options){.name = "request",
 *                                                             .parent = mr_arena_node(conn)});
 *         ... temporaries in req, results in conn ...
 *         mr_arena_destroy(req);       // or leave it: it dies with conn
 *     }
 *     mr_report(mr_arena_node(conn), stderr, NULL);
 *     mr_arena_destroy(conn);          // and every child still alive
 *
 * The rules:
 *   - Destroy of a node destroys its subtree first, deepest first, with no
 *     recursion (a chain of any depth, any number of children).  Under an
 *     arena, children and cleanups (mr_arena_defer) unwind together, newest
 *     first: a child is, to its parent arena, a cleanup registered when the
 *     child was created (or moved under it).
 *   - Reset and release destroy the children, then do what they did before.
 *     mr_arena_rewind(a, m) destroys the children created after m was
 *     saved; mr_arena_merge(into, from) moves the children of `from` under
 *     `into`.
 *   - Create under a parent is all or nothing: a failed create leaves the
 *     parent as it was.  A child's header and blocks come from its own
 *     upstream -- with `upstream` NULL, the parent's upstream -- never from
 *     the parent's allocations.
 *   - Cheap children: an arena made under a parent with no buffer and the
 *     parent's upstream is, when it dies, kept for the next child made
 *     with the same options (its header and its first blocks, up to
 *     MR_TREE_KEEP_BYTES; at most MR_TREE_KEEP_CHILDREN a keeper): the
 *     per-request child costs no upstream call once warm.  The keeper is
 *     the highest ancestor, at most 8 levels up, reached through ancestors
 *     over the same upstream that have no tree lock and are not dying --
 *     a server's arena keeps the dead requests of all its connections, so
 *     the next request of any connection takes the arena the last one
 *     left -- or the parent itself when it is thread-safe.  The keeper's
 *     release and destroy give the kept children back upstream; its own
 *     stats (mr_arena_stats, ...), mr_node_stats and the reports include
 *     them in held (as free).  An arena keeper also shares blocks: when a
 *     child of more than one block dies under an arena parent, the
 *     parent's spare blocks (a kept chain it took back and does not use)
 *     go to the keeper, and an arena below it that needs a block takes
 *     one of them before it asks its upstream (up to 64 KiB shared; in
 *     the keeper's held, as free).
 *   - Threads: a node that is not thread-safe and its subtree are used by
 *     one thread at a time (a report or mr_node_stats is a use).  Children
 *     of a thread-safe pool or object pool, or of a block pool, may be
 *     created and destroyed from any thread: the links and kept children
 *     then take that parent's tree lock, never its allocation lock.
 *   - Misuse: a handle used after its node died (destroyed directly or by a
 *     cascade); a child created under, or a destroy, reset, release or
 *     rewind of, a node whose cascade is running (from one of its cleanups,
 *     or a cleanup of a node below it); a cycle in mr_node_set_parent.  The
 *     create and set_parent calls fail with EINVAL; the others are ignored;
 *     debug builds (MR_DEBUG >= 1) report each to the violation handler
 *     (memres/resource.h).  A use of a dead handle is found as long as the
 *     header was not reused; ASan builds report a use of a dead child's
 *     memory.
 * Names are not copied: give static strings (or strings that outlive the
 * node).
 */
#ifndef MEMRES_TREE_H
#define MEMRES_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "memres/resource.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The children a parent keeps for reuse, and the bytes each may keep. */
#define MR_TREE_KEEP_CHILDREN 8
#define MR_TREE_KEEP_BYTES ((size_t)32 << 10)

/* mr_node (memres/resource.h) is the node inside an allocator.  Its
 * accessors: mr_arena_node, mr_objpool_node, mr_pools_node, mr_blocks_node
 * (each allocator's header), and for a resource view: */

/* The node of an allocator's resource view (mr_arena_resource, ...), or
 * NULL with errno = EINVAL for any other resource (or NULL). */
MR_API mr_node *mr_node_of(mr_resource *r);

/* The allocator's own destroy (mr_arena_destroy, ...): its subtree first.
 * NULL: no-op.  mr_blocks_shared()'s node is never destroyed (ignored,
 * reported in debug builds). */
MR_API void mr_node_destroy(mr_node *n);

/* The tree's links.  Children are listed newest first. */
MR_API mr_node *mr_node_parent(const mr_node *n);
MR_API mr_node *mr_node_first_child(const mr_node *n);
MR_API mr_node *mr_node_next_sibling(const mr_node *n);

/* The name given at create (never NULL: the kind when none was given) and
 * the kind: "arena", "objpool", "pools" or "blocks". */
MR_API const char *mr_node_name(const mr_node *n);
MR_API const char *mr_node_kind(const mr_node *n);

/* Moves n and its subtree under parent (NULL: n becomes a root); no memory
 * moves, and n's upstream stays what it was.  Under an arena, n then counts
 * as created now (a rewind to a mark saved before this call destroys it);
 * a node already under parent stays as it is.
 * 0, or -1 with errno = EINVAL and nothing changed: parent is n or below n,
 * n or parent is dead or its cascade is running, or n is
 * mr_blocks_shared()'s node. */
MR_API int mr_node_set_parent(mr_node *n, mr_node *parent);

/* Fills *out with n's figures (mr_stats of its allocator, whose held
 * counts the children it keeps for reuse: held, not in use; a block pool's
 * header too) -- or, recurse, their sum over n's subtree.  Every byte a
 * subtree has from its roots' upstreams is in exactly one node's held.
 * O(nodes), no allocation. */
MR_API void mr_node_stats(const mr_node *n, bool recurse, mr_stats *out);

/* Reports. */
enum { MR_REPORT_TEXT = 0, MR_REPORT_JSON = 1 };

typedef struct mr_report_options {
    int format;       /* MR_REPORT_TEXT (0, the default) or MR_REPORT_JSON */
    int max_depth;    /* levels shown below the root; 0: 100; at most MR_REPORT_MAX_DEPTH */
    int max_children; /* children shown per node, the rest summed in one line; 0: 100 */
} mr_report_options;

#define MR_REPORT_MAX_DEPTH 1000

/* Writes the report of root's subtree to f and returns the number of nodes
 * written (not counting summary lines).  opts may be NULL (text, 100, 100).
 *
 * Text, PostgreSQL's MemoryContextStats form: one line a node, indented two
 * spaces a level,
 *     NAME: KIND T total in B blocks; F free (C chunks); U used
 * where T is the bytes held from upstream (headers included), B the
 * upstream blocks held, U the bytes in use, F = T - U, C the pieces on
 * the allocator's free lists (objects, blocks; none in an arena); past
 * max_children (or below max_depth) a line
 *     K more child contexts containing T total in B blocks; F free (C chunks); U used
 * sums the rest, and the last line is
 *     Grand total: T bytes in B blocks; F free (C chunks); U used
 * JSON Lines: one object a line with id, parent (the id of the parent's
 * line; null for the root), level, name, kind, total_bytes,
 * total_nblocks, free_bytes, free_chunks, used_bytes, peak_bytes,
 * allocations; a summary line has kind "more" and "contexts": K; the last
 * line has kind "total" and "nodes": the nodes of the subtree.
 *
 * The grand total counts each byte once: a node whose upstream is the
 * resource view of another node of the subtree (a child arena over its
 * parent pool) is inside that node's figures and not added again.  No
 * allocation (usable on an out-of-memory path: each line is formatted on
 * the stack and written with fwrite), no recursion, O(nodes). */
MR_API size_t mr_report(const mr_node *root, FILE *f, const mr_report_options *opts);

#ifdef __cplusplus
}
#endif
#endif /* MEMRES_TREE_H */
