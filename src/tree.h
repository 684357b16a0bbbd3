/* SPDX-License-Identifier: MIT */
/* src/tree.h -- the node every allocator embeds (memres/tree.h): links,
 * states, the cascade, the children a parent keeps for reuse.
 *
 * Links.  Children are a doubly linked list, newest first: parent->child is
 * the newest, ->older the next one, ->newer the previous one (unlink is
 * O(1)).  Under an arena, children are numbered among its cleanups (seq,
 * from the arena's cleanup_seq): the list is sorted by seq, descending, so
 * a rewind to a mark destroys a prefix of it and the cascade interleaves
 * children and cleanups by comparing the two newest numbers.
 *
 * States.  LIVE, or DEAD once the allocator is gone (its header freed, or
 * kept by its parent for reuse).  Two flags on a live node: UNWINDING while
 * a cascade runs on it (destroy, reset, release, rewind: its cleanups may
 * run user code), DOOMED when the cascade ends in its destroy.  A cleanup
 * runs inside a frame (thread-local) naming its node, so a call made from a
 * cleanup that would free a node whose cascade is running -- the cleanup's
 * own arena or one above it -- is found (mri_node_busy) and refused.
 *
 * Locks.  A thread-safe allocator (thread-safe pools and object pools, block
 * pools) gives its node a tree lock: its children's links and its kept
 * children change under it, so that any thread may create and destroy
 * children of it.  Its allocation lock is never taken for the tree.
 *
 * Kept children.  An arena that dies while its parent lives, made with the
 * parent's upstream and no buffer, is kept on the parent's `kept` list
 * (linked through ->older) with its header and first blocks, for the next
 * child created with the same options; the parent's release and destroy
 * free them (mri_node_drop_kept).  The parent's upstream outlives the
 * parent, so a kept child's memory stays valid as long as the list.
 */
#ifndef MEMRES_TREE_INTERNAL_H
#define MEMRES_TREE_INTERNAL_H

#include <stdatomic.h>
#include <string.h>

#include "internal.h"
#include "ledger.h"
#include "lock.h"
#include "memres/tree.h"
#include "memres/bits/tree.h"

/* What a node's figures are: its allocator's stats and what reports add. */
struct mri_figures {
    mr_stats s;
    size_t blocks;      /* upstream blocks held now (the header included) */
    size_t free_chunks; /* free pieces the allocator knows of at once */
};

/* What each kind of allocator does for the tree (one table a kind, listed
 * in the table of kinds, src/tree_kinds.c; the recipe for a new kind is
 * docs/design.md's "How a new allocator kind joins the tree"). */
struct mri_node_ops {
    const char *kind;
    /* The node of r (not NULL) when r is this kind's resource view, else
     * NULL. */
    mr_node *(*node_of)(mr_resource *r);
    /* The allocator's teardown, its children and cleanups gone: memory
     * upstream, header freed -- or kept by its parent (mri_node_leave). */
    void (*free)(mr_node *n);
    /* Frees a child the node kept (an arena, DEAD) and its memory. */
    void (*free_kept)(mr_node *kept);
    void (*figures)(const mr_node *n, struct mri_figures *out);
    void (*held)(const mr_node *n, size_t *bytes, size_t *blocks); /* from upstream now */
    /* Arenas only (NULL otherwise): the number of the newest pending
     * cleanup (0: none), and running it (popped first). */
    size_t (*cleanup_top)(const mr_node *n);
    void (*cleanup_run)(mr_node *n);
};

struct mr_node {
    mr_node *parent;
    mr_node *child;             /* the newest child */
    mr_node *older, *newer;     /* siblings */
    const char *name;           /* as given: NULL shows the kind (mri_node_name) */
    const struct mri_node_ops *ops;
    mr_resource *upstream;      /* the allocator's upstream: its children's default */
    mri_lock *lock;             /* thread-safe allocators: the tree lock; else NULL */
    size_t *numbers;            /* an arena: its cleanup_seq, which numbers children too;
                                   else own_numbers */
    size_t own_numbers;         /* the numbers of a node that is not an arena */
    size_t seq;                 /* under an arena: its number among the arena's cleanups */
    mr_node *kept;              /* children kept for reuse, through ->older */
    mr_node **watch;            /* set to NULL when the node dies (mri_node_watch) */
    uint32_t nkept;
    uint32_t state;             /* MRI_NODE_LIVE | flags, or MRI_NODE_DEAD */
    _Atomic uint64_t stamp;     /* the report or stats walk that last visited it */
};

#define MRI_NODE_LIVE 0x6d726e00u /* "mrn" */
#define MRI_NODE_DEAD 0xdeadd1e0u
#define MRI_NODE_UNWINDING 1u
#define MRI_NODE_DOOMED 2u
#define MRI_NODE_PERMANENT 4u /* mr_blocks_shared(): never destroyed */
#define MRI_NODE_FLAGS 7u

static inline const char *mri_node_name(const mr_node *n) { return n->name != NULL ? n->name : n->ops->kind; }

static inline bool mri_node_live(const mr_node *n) { return (n->state & ~MRI_NODE_FLAGS) == MRI_NODE_LIVE; }

/* The cleanups running on this thread, innermost first (src/tree.c). */
struct mri_frame {
    const mr_node *n;
    struct mri_frame *prev;
};
extern _Thread_local struct mri_frame *mri_node_frames __attribute__((tls_model("initial-exec")));

/* The tree lock of a node (no-op without one). */
static inline void mri_node_lock(mr_node *n)
{
    if (n->lock != NULL)
        mri_lock_take(n->lock);
}
static inline void mri_node_unlock(mr_node *n)
{
    if (n->lock != NULL)
        mri_lock_give(n->lock);
}

/* A node its parent kept (DEAD, no child, nothing kept, no watch, its
 * kind's fields as they were) made live again, to be linked at once. */
static inline void mri_node_revive(mr_node *n, const char *name)
{
    n->name = name;
    n->state = MRI_NODE_LIVE;
}

/* A node dies: its watch learns it (mri_node_watch). */
static inline void mri_node_die(mr_node *n)
{
    n->state = MRI_NODE_DEAD;
    if (MR_UNLIKELY(n->watch != NULL)) {
        *n->watch = NULL;
        n->watch = NULL;
    }
}

/* May a child be created under (or moved under) p?  true, or false with
 * errno = EINVAL (p dead or unwinding: reported as misuse by `who`). */
bool mri_node_can_adopt_slow(mr_node *p, const char *who);
static inline bool mri_node_can_adopt(mr_node *p, const char *who)
{
    return MR_LIKELY((p->state | MRI_NODE_PERMANENT) == (MRI_NODE_LIVE | MRI_NODE_PERMANENT)) ||
           mri_node_can_adopt_slow(p, who);
}

/* Links n (a fresh root) under p, the caller holding p's tree lock. */
static inline void mri_node_link_locked(mr_node *n, mr_node *p)
{
    n->parent = p;
    n->newer = NULL;
    n->older = p->child;
    if (p->child != NULL)
        p->child->newer = n;
    p->child = n;
    n->seq = ++*p->numbers;
}

/* Links n (a fresh root) under p, checked by mri_node_can_adopt; cannot
 * fail.  Takes p's tree lock. */
static inline void mri_node_link(mr_node *n, mr_node *p)
{
    mri_node_lock(p);
    mri_node_link_locked(n, p);
    mri_node_unlock(p);
}

/* Unlinks n from its parent, the caller holding the parent's tree lock;
 * n's own links are left as they were (a dead node's do not matter, a new
 * root's are cleared by mr_node_set_parent). */
static inline void mri_node_unlink_locked(mr_node *n)
{
    if (n->newer != NULL)
        n->newer->older = n->older;
    else
        n->parent->child = n->older;
    if (n->older != NULL)
        n->older->newer = n->newer;
}

/* Before destroy, reset, release or rewind of n (by `who`): false, with the
 * misuse reported, when n is dead, or its cascade (or that of a node below
 * it) is running on this thread -- the call is then ignored. */
bool mri_node_enter_slow(mr_node *n, const char *who);
static inline bool mri_node_enter(mr_node *n, const char *who)
{
    return MR_LIKELY(n->state == MRI_NODE_LIVE && mri_node_frames == NULL) || mri_node_enter_slow(n, who);
}

/* Destroys n's children with numbers above stop (all of them when n is not
 * an arena) and runs its cleanups above stop, newest first, each child's
 * subtree first; no recursion.  n stays (reset, release, rewind). */
void mri_node_unwind(mr_node *n, size_t stop);
static inline bool mri_node_has_children(const mr_node *n) { return n->child != NULL; }

/* Is n below (or) `top`? */
bool mri_node_below(const mr_node *n, const mr_node *top);

/* Moves the children of `from` to the front of those of `into` (both not
 * thread-safe: no lock), adding offset to their numbers (mr_arena_merge). */
void mri_node_move_children(mr_node *into, mr_node *from, size_t offset);

/* The whole destroy of n, checked by mri_node_enter: the subtree, then
 * n->ops->free. */
void mri_node_destroy_checked(mr_node *n);

/* For ops->free: unlinks n from its parent and marks it DEAD.  keeper (not
 * NULL: the allocator can be reused) is the parent, or an ancestor of one
 * thread's parent: it keeps n when it is not doomed and has room -- true,
 * n is on its kept list and must not be freed.  Takes the parent's tree
 * lock. */
static inline __attribute__((always_inline)) void mri_node_keep(mr_node *n, mr_node *keeper)
{
    n->older = keeper->kept;
    keeper->kept = n;
    keeper->nkept++;
}

static inline bool mri_node_leave(mr_node *n, mr_node *keeper)
{
    mr_node *p = n->parent;
    mri_node_die(n);
    if (p == NULL)
        return false;
    if (p->lock == NULL) { /* one thread's: as the caller checked */
        mri_node_unlink_locked(n);
        if (keeper != NULL)
            mri_node_keep(n, keeper);
        return keeper != NULL;
    }
    mri_lock_take(p->lock); /* keeper is p */
    /* the caller's checks, again under the lock: another thread may keep too */
    bool keep = keeper != NULL && (p->state & MRI_NODE_DOOMED) == 0 && p->nkept < MR_TREE_KEEP_CHILDREN;
    mri_node_unlink_locked(n);
    if (keep)
        mri_node_keep(n, p);
    mri_lock_give(p->lock);
    return keep;
}

/* ---- a kind's create and free: the tree's part, written once ----
 *
 * A kind's create calls, in this order (PostgreSQL's MemoryContextCreate is
 * the last one: "called from context-type-specific creation routines, and
 * noplace else"):
 *   mri_node_begin   before anything is allocated: may the parent take a
 *                    child, and which upstream the allocator uses;
 *   mri_node_header  its header from that upstream, zeroed, with its tree
 *                    lock (a kind that carves its header elsewhere skips it);
 *   mri_node_create  once the header is filled: the node made and linked.
 * Its ops->free frees what the kind holds and ends with mri_node_release,
 * which gives the header back. */

/* The upstream of a new allocator whose options give parent (NULL: a root)
 * and upstream: that upstream, else the parent's, else dflt() -- or NULL,
 * errno = EINVAL, when parent may not take a child (dead or unwinding:
 * reported as misuse by `who`). */
static inline __attribute__((always_inline)) mr_resource *mri_node_begin(mr_node *parent, mr_resource *upstream,
                                                                         mr_resource *(*dflt)(void), const char *who)
{
    if (parent != NULL && !mri_node_can_adopt(parent, who))
        return NULL;
    return upstream != NULL ? upstream : parent != NULL ? parent->upstream : dflt();
}

/* A header of bytes at align from up, counted in *ledger (NULL: not
 * counted), zeroed; a tree lock at lock_off in it (0: none) initialised.
 * NULL on failure, nothing held: errno the upstream's, or ENOMEM (the
 * ledger's cap, or the lock). */
static inline void *mri_node_header(mri_ledger *ledger, mr_resource *up, size_t bytes, size_t align, size_t lock_off)
{
    void *h = ledger != NULL ? mri_ledger_allocate(ledger, up, bytes, align) : mr_allocate(up, bytes, align);
    if (MR_UNLIKELY(h == NULL))
        return NULL;
    memset(h, 0, bytes);
    if (lock_off != 0 && MR_UNLIKELY(!mri_lock_init((mri_lock *)(void *)((char *)h + lock_off)))) {
        if (ledger != NULL)
            mri_ledger_deallocate(ledger, up, h, bytes, align);
        else
            mr_deallocate(up, h, bytes, align);
        return mri_fail(ENOMEM);
    }
    return h;
}

/* Makes n (in a header just filled) a node of kind ops over upstream, and
 * links it under parent (NULL: a root; checked by mri_node_begin).  lock:
 * its tree lock, or NULL; numbers: an arena's cleanup_seq, or NULL. */
static inline void mri_node_create(mr_node *n, const struct mri_node_ops *ops, const char *name, mr_node *parent,
                                   mr_resource *upstream, mri_lock *lock, size_t *numbers)
{
    n->parent = n->child = n->older = n->newer = n->kept = NULL;
    n->watch = NULL;
    n->name = name;
    n->ops = ops;
    n->upstream = upstream;
    n->lock = lock;
    n->numbers = numbers != NULL ? numbers : &n->own_numbers;
    n->own_numbers = 0;
    n->seq = 0;
    n->nkept = 0;
    n->state = MRI_NODE_LIVE;
    atomic_init(&n->stamp, 0);
    if (parent != NULL)
        mri_node_link(n, parent);
}

/* Gives back a header from mri_node_header(ledger, up, bytes, align, ..);
 * ledger (NULL: not counted) lies in that header: counted on a copy. */
static inline void mri_node_free_header(mr_resource *up, void *header, size_t bytes, size_t align,
                                        const mri_ledger *ledger)
{
    if (ledger != NULL) {
        mri_ledger l = *ledger;
        mri_ledger_deallocate(&l, up, header, bytes, align);
    } else {
        mr_deallocate(up, header, bytes, align);
    }
}

/* The end of every kind's ops->free, the kind's memory gone: n leaves its
 * parent (not kept) and dies, its tree lock is finished and its header
 * goes back upstream, as mri_node_free_header (bytes 0: the header is not
 * the allocator's, nothing to give back). */
static inline void mri_node_release(mr_node *n, void *header, size_t bytes, size_t align, const mri_ledger *ledger)
{
    mr_resource *up = n->upstream;
    (void)mri_node_leave(n, NULL);
    if (n->lock != NULL)
        mri_lock_fini(n->lock);
    if (bytes != 0)
        mri_node_free_header(up, header, bytes, align, ledger);
}

/* Frees the children p keeps (its release and destroy); returns their
 * bytes. */
size_t mri_node_drop_kept(mr_node *p);

/* The bytes and upstream blocks of the children n keeps for reuse (under
 * n's tree lock; none: 0 and 0, no lock taken).  They are n's memory: every
 * kind's stats add the bytes to held (mri_node_add_kept), the reports the
 * blocks. */
void mri_node_kept_held(const mr_node *n, size_t *bytes, size_t *blocks);

/* For every kind's stats, last (no allocation lock held): the kept
 * children's bytes into s->held, and s->peak_held kept at least s->held. */
static inline void mri_node_add_kept(const mr_node *n, mr_stats *s)
{
    size_t bytes, blocks;
    mri_node_kept_held(n, &bytes, &blocks);
    s->held += bytes;
    if (s->peak_held < s->held)
        s->peak_held = s->held;
}

/* The node of a resource view (not NULL) of any kind in the table of
 * kinds (src/tree_kinds.c), or NULL. */
mr_node *mri_node_of(mr_resource *r);

#endif /* MEMRES_TREE_INTERNAL_H */
