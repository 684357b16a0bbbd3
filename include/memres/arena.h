/* SPDX-License-Identifier: MIT */
/* memres/arena.h -- monotonic (bump) allocation with marks, rewind, reset and
 * cleanups.
 *
 * An arena hands out memory by bumping a pointer through blocks it takes from
 * its upstream resource.  Objects are not freed one by one: everything after
 * a mark is freed by mr_arena_rewind, everything by mr_arena_reset (memory
 * kept for reuse, no upstream call) or mr_arena_release (memory returned).
 *
 * Thread-safety: none.  One arena belongs to one thread at a time; distinct
 * arenas are independent and may be used from different threads.
 *
 * Errors: a failed call returns NULL with errno = ENOMEM (cannot be
 * satisfied, limit reached, size too large) or EINVAL (bad alignment or
 * options) and leaves the arena exactly as it was.
 */
#ifndef MEMRES_ARENA_H
#define MEMRES_ARENA_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "memres/pages.h"
#include "memres/resource.h"
#include "memres/tree.h"
#include "memres/bits/arena.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mr_arena mr_arena;

typedef struct mr_arena_options {
    mr_resource *upstream;  /* NULL: mr_get_default_resource() at create time */
    void  *buffer;          /* optional first buffer, not owned, reused by reset;
                               the arena's own header is carved from it.  The
                               arena must be destroyed before the buffer is
                               reused (a stack buffer: before its function
                               returns): in ASan builds its free part stays
                               poisoned until mr_arena_destroy, and ASan would
                               report the next use of that memory, in some
                               other function (the report then ends with a
                               "memres: the buffer ... never destroyed" line) */
    size_t buffer_size;     /* bytes at buffer: at least MR_ARENA_BUFFER_MIN */
    size_t block_size;      /* first block from upstream; 0: 4 KiB, or over
                               mr_page_resource_huge() the largest default
                               (2 MiB + 8 KiB: a huge page per block; capped
                               by max_block_size); smaller than 256 bytes: 256 */
    size_t max_block_size;  /* cap on geometric growth; 0: 2 MiB + 8 KiB, so
                               that a block holds 2 MiB of data besides its
                               header and the smaller blocks' rounding (data
                               that is a power of two never spills a few KiB
                               into one more block) (or block_size
                               when that is larger); SIZE_MAX and other sizes
                               no block can have: EINVAL */
    size_t limit;           /* most bytes held from upstream at any time
                               (header included); 0: no limit */
    mr_huge_pages huge_pages; /* blocks of MR_HUGE_PAGE_SIZE or more from
                               mr_page_resource_huge() (memres/pages.h: the
                               same rule as the block pool's).  AUTO (0): when
                               the upstream is the malloc resource -- the
                               default -- so big arenas get 2 MiB-aligned
                               THP-advised blocks; ON: always (such blocks
                               bypass the upstream); OFF: never. */
    const char *name;       /* shown in reports (memres/tree.h); not copied;
                               NULL: "arena" */
    mr_node *parent;        /* the node this arena dies with (memres/tree.h);
                               NULL: a root.  With upstream NULL, the upstream
                               is the parent's upstream */
} mr_arena_options;

/* The smallest buffer an arena can be created over: its header and one
 * aligned object always fit, whatever the buffer's alignment. */
#define MR_ARENA_BUFFER_MIN ((size_t)512)

/* MR_ARENA_ALIGN (memres/bits/arena.h): the alignment of mr_arena_alloc,
 * alignof(max_align_t) (16 on x86-64). */

/* A position in an arena, from mr_arena_save.  A small value type: copy it,
 * keep it anywhere.  Fields are private.  It names its arena (an id never
 * reused, renewed by release) and numbers the cleanups and large blocks
 * before it, so a rewind can tell a foreign, released or stale mark. */
typedef struct mr_arena_mark mr_arena_mark; /* the fields: memres/bits/arena.h */

/* Creates an arena.  opts may be NULL (all defaults).
 * With opts->buffer, the header is carved from the buffer and the rest of it
 * is the first block: an arena over a stack buffer with mr_null_resource()
 * as upstream never touches the heap.  Without, the header (a few hundred
 * bytes) comes from upstream; the first block comes on the first allocation.
 * Block sizes grow geometrically from block_size to max_block_size, each
 * rounded to 64 bytes (below a page) or to pages: never a power of two plus
 * a header.  An arena with live children (memres/tree.h) grows by blocks of
 * one size until it holds 64 KiB, so that a parent keeping a little at a
 * time beside its children has no doubled, mostly empty newest block.
 * While the arena holds 3 MiB to 12 MiB a new block is at most a twelfth
 * of what it holds (or what the request needs), so the newest block's
 * unused tail stays a small share of the whole.
 * Errors: NULL with EINVAL (buffer without size or size without buffer,
 * buffer_size below MR_ARENA_BUFFER_MIN, block_size > max_block_size when
 * both are given, a block size that cannot be rounded to pages within
 * PTRDIFF_MAX, huge_pages not one of its three values, a parent that is
 * dead or whose cascade runs), ENOMEM (upstream failed, limit too small for
 * the header).  Under a parent, an arena kept from an earlier child with
 * the same options is reused when there is one (memres/tree.h): no
 * upstream call. */
MR_API mr_arena *mr_arena_create(const mr_arena_options *opts);

/* Destroys the arena's children and runs its pending cleanups (together,
 * newest first: memres/tree.h), returns all memory upstream, frees the
 * header (under a parent, the parent may keep it for its next child:
 * memres/tree.h).  NULL: no-op.  Every pointer from the arena becomes
 * invalid. */
MR_API void mr_arena_destroy(mr_arena *a);


/* Allocates size bytes aligned to MR_ARENA_ALIGN.  size 0: a valid non-NULL
 * pointer.  Failure: NULL, errno = ENOMEM, nothing changed.  The memory is
 * uninitialised and lives until a rewind past it, reset, release or destroy.
 * Common case inline: compare, bump, count. */
static inline void *mr_arena_alloc(mr_arena *a, size_t size)
{
#if !MR_CHECKED
    void *p = mri_arena_bump(a, size);
    if (MR_LIKELY(p != NULL))
        return p;
#endif
    return mri_arena_alloc_slow(a, size, MR_ARENA_ALIGN);
}

/* As mr_arena_alloc with any power-of-two alignment (above the page size
 * too).  align 0 or not a power of two: NULL, errno = EINVAL.  An
 * alignment of 8 or less is served at 8-byte granularity from the top of
 * the free space (a 24-byte object costs 24 bytes, not 32); such an
 * allocation is never "the newest" for mr_arena_realloc (it cannot grow in
 * place) but is for the resource view's deallocate, which gives back the
 * newest allocation of either side.
 * Inline for a constant align: a compare, a subtract, a mask, a store. */
static inline void *mr_arena_alloc_aligned(mr_arena *a, size_t size, size_t align)
{
    if (MR_LIKELY(align - 1 < 8 && (align & (align - 1)) == 0))
        return mri_arena_alloc_down8(a, size);
    if (MR_LIKELY(align == MR_ARENA_ALIGN))
        return mr_arena_alloc(a, size);
    return mri_arena_alloc_slow(a, size, align);
}

/* count * size bytes, zeroed.  Overflow: NULL, errno = ENOMEM. */
MR_API void *mr_arena_calloc(mr_arena *a, size_t count, size_t size);

/* Resizes p (from this arena, old_size bytes) to new_size.  Grows or shrinks
 * in place when p is the newest allocation, no mark was saved after it and
 * the block has room; otherwise shrinking returns p and growing copies into
 * a new allocation (the old one is freed with the rest of the arena).  So
 * an object never straddles a mark: grown after a mark, the copy is an
 * allocation made after it, and a rewind to the mark frees the copy whole
 * and leaves p whole.  p NULL: mr_arena_alloc(new_size).
 * Failure: NULL, errno = ENOMEM, p untouched and still valid.  The result is
 * aligned to MR_ARENA_ALIGN (or keeps p's alignment when p does not move). */
MR_API void *mr_arena_realloc(mr_arena *a, void *p, size_t old_size, size_t new_size);

/* Copies of s (NUL-terminated) / of at most n bytes of s, NUL-terminated,
 * packed at byte granularity (see mr_arena_alloc_aligned: the top side).
 * s NULL: NULL, errno = EINVAL.  mr_arena_strdup is inline when the copy
 * fits the current block: strlen, a compare, a subtract, memcpy -- no call
 * into the library. */
static inline char *mr_arena_strdup(mr_arena *a, const char *s) { return mri_arena_strdup_in(a, s); }
MR_API char *mr_arena_strndup(mr_arena *a, const char *s, size_t n);

/* printf into the arena.  Formats straight into the free tail of the current
 * block when the result fits (one pass), else measures and allocates.
 * Failure: NULL with errno = ENOMEM, or what vsnprintf set (EOVERFLOW). */
MR_API char *mr_arena_sprintf(mr_arena *a, const char *fmt, ...) MR_PRINTF(2, 3);
MR_API char *mr_arena_vsprintf(mr_arena *a, const char *fmt, va_list ap) MR_PRINTF(2, 0);

/* The current position.  Inline: seven loads and a store (the arena
 * remembers where its newest mark is, for mr_arena_realloc); never fails. */
static inline mr_arena_mark mr_arena_save(const mr_arena *a) { return mri_arena_save_in(a); }

/* Frees everything allocated after m was saved, running the cleanups
 * registered after it and destroying the children created after it
 * (together, newest first) first.  Memory is kept: allocating the same
 * sequence again hands out the same addresses with no upstream call.
 * Inline when nothing but the bump pointers moved since m (same block, no
 * large block, no cleanup or child, same arena id): two stores.
 * m must come from this arena, since its last release, and must not lie
 * after an earlier rewind's target (a stale mark).  In every build a rewind
 * never runs a cleanup registered before m, never frees a large block
 * allocated before m, and ignores -- changes nothing for -- a mark of
 * another arena (or of a destroyed one, or from before a release) and a
 * mark with more cleanups or large blocks than are pending now (stale);
 * debug builds (MR_DEBUG >= 1) report these to the violation handler
 * (resource.h) and also check that m's block is in use (O(blocks in use)).
 * Any other stale mark is a plain position: rewinding to it frees what lies
 * after it (or skips free bytes up to it).
 * (mr_arena_realloc never grows an allocation across a mark: see there.) */
static inline void mr_arena_rewind(mr_arena *a, mr_arena_mark m) { mri_arena_rewind_in(a, &m); }

/* Frees everything -- destroying the children and running the cleanups
 * first, newest first -- and keeps every block for reuse, in the same
 * order: no upstream call (for the arena itself; children kept for reuse
 * stay kept). */
MR_API void mr_arena_reset(mr_arena *a);

/* Frees everything -- destroying the children and running the cleanups
 * first -- and returns every block upstream, and the children kept for
 * reuse.  The caller's buffer, if any, stays as the first block.  Growth
 * restarts from block_size. */
MR_API void mr_arena_release(mr_arena *a);

/* Registers fn(arg) to run when what is allocated before it is freed: on a
 * rewind to a mark saved before this call, reset, release or destroy.
 * Cleanups run LIFO (children among them: memres/tree.h), before the memory
 * is freed; they must not allocate from or rewind this arena, nor create a
 * child of it (EINVAL) or destroy, reset or release it or a node above it
 * (ignored: memres/tree.h, "Misuse").  0 on success; -1 with errno = ENOMEM (no memory for
 * the record) or EINVAL (fn NULL), nothing registered. */
MR_API int mr_arena_defer(mr_arena *a, void (*fn)(void *arg), void *arg);

/* The arena as an mr_resource (owned by the arena, valid until destroy).
 * allocate = mr_arena_alloc_aligned; deallocate frees the block only when it
 * is the newest allocation, else does nothing (memory comes back on rewind,
 * reset or release).  Equal only to itself. */
MR_API mr_resource *mr_arena_resource(mr_arena *a);

/* The arena whose mr_arena_resource() view r is, or NULL (r NULL or any
 * other resource).  O(1); lets a generic caller (the C++ bridge) take the
 * arena's inline paths for a resource it was handed. */
MR_API mr_arena *mr_arena_of_resource(mr_resource *r);

/* Moves everything `from` holds now into `into` (git's mem_pool_combine):
 * every allocation of `from` lives on as if it had been made in `into` at
 * the time of the merge -- a rewind of `into` to a mark saved before the
 * merge, and its reset, release or destroy, free it -- and the cleanups of
 * `from` join those of `into`, running before its older ones (LIFO kept).
 * The children of `from` move under `into` too, as if created at the merge.
 * `from` is left empty and usable, keeping its spare (empty) blocks; marks
 * of `from` go stale (a rewind to one is ignored), marks of `into` keep
 * their meaning.  No upstream call; O(blocks + cleanups of from).
 * Statistics: `from`'s ledger counts the moved blocks as given back, into's
 * as taken (upstream_deallocations / _allocations) without a call.
 * 0, or -1 with errno and nothing changed: EINVAL when into == from, either
 * is NULL, their upstreams (or huge-page sources) are not equal
 * (mr_is_equal), `into` lies below `from` in the tree, either is dead or
 * its cascade runs, or `from` holds allocations in its caller's buffer (they
 * cannot outlive `from`'s buffer: copy them instead); ENOMEM when `into`'s
 * limit cannot take the moved bytes.  Not thread-safe: neither arena may be
 * in use by another thread. */
MR_API int mr_arena_merge(mr_arena *into, mr_arena *from);


/* The arena's node in the tree of lifetimes (memres/tree.h). */
MR_API mr_node *mr_arena_node(mr_arena *a);

/* Fills *out (mr_stats is in resource.h).  Walks the blocks: O(blocks), never on a hot path.
 * held counts the children the arena keeps for reuse (memres/tree.h). */
MR_API void mr_arena_stats(const mr_arena *a, mr_stats *out);

/* Verifies the arena's invariants (block chain, bump pointer inside the
 * current block, held bytes == sum of blocks).  Returns true when they hold;
 * otherwise prints the first violation to stderr and returns false. */
MR_API bool mr_arena_check(const mr_arena *a);

#ifdef __cplusplus
}
#endif
#endif /* MEMRES_ARENA_H */
