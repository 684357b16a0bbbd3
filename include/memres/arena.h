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

#include "memres/resource.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mr_arena mr_arena;

typedef struct mr_arena_options {
    mr_resource *upstream;  /* NULL: mr_get_default_resource() at create time.
                               When it is the malloc resource, blocks of 2 MiB
                               and more are mapped from mr_page_resource_huge()
                               (2 MiB-aligned, transparent huge pages) */
    void  *buffer;          /* optional first buffer, not owned, reused by reset;
                               the arena's own header is carved from it */
    size_t buffer_size;     /* bytes at buffer; must hold the header (~200 B) */
    size_t block_size;      /* first block from upstream; 0: 4 KiB */
    size_t max_block_size;  /* cap on geometric growth; 0: 2 MiB */
    size_t limit;           /* most bytes held from upstream at any time
                               (header included); 0: no limit */
} mr_arena_options;

/* The alignment of mr_arena_alloc: alignof(max_align_t) (16 on x86-64). */
#define MR_ARENA_ALIGN ((size_t)_Alignof(max_align_t))
#ifdef __cplusplus
#  undef MR_ARENA_ALIGN
#  define MR_ARENA_ALIGN ((size_t)alignof(std::max_align_t))
#endif

/* A position in an arena, from mr_arena_save.  A small value type: copy it,
 * keep it anywhere.  Fields are private. */
typedef struct mr_arena_mark {
    void     *mri_block;
    uintptr_t mri_ptr;
    void     *mri_big;
    void     *mri_cleanups;
} mr_arena_mark;

/* Creates an arena.  opts may be NULL (all defaults).
 * With opts->buffer, the header is carved from the buffer and the rest of it
 * is the first block: an arena over a stack buffer with mr_null_resource()
 * as upstream never touches the heap.  Without, the header (a few hundred
 * bytes) comes from upstream; the first block comes on the first allocation.
 * Block sizes grow geometrically from block_size to max_block_size, each
 * rounded to 64 bytes (below a page) or to pages: never a power of two plus
 * a header.
 * Errors: NULL with EINVAL (buffer without size or size without buffer,
 * buffer too small for the header, block_size > max_block_size when both are
 * given), ENOMEM (upstream failed, limit too small). */
MR_API mr_arena *mr_arena_create(const mr_arena_options *opts);

/* Runs every pending cleanup (LIFO), returns all memory upstream, frees the
 * header.  NULL: no-op.  Every pointer from the arena becomes invalid. */
MR_API void mr_arena_destroy(mr_arena *a);

/* Out-of-line slow path of the allocation functions; not for direct use. */
MR_API void *mri_arena_alloc_slow(mr_arena *a, size_t size, size_t align);

/* Private: the fields the inline fast paths read, first in struct mr_arena. */
struct mri_arena_hot {
    uintptr_t ptr;       /* next free byte of the current block (MR_ARENA_ALIGN-aligned) */
    uintptr_t end;       /* end of the current block; end - ptr is a multiple of MR_ARENA_ALIGN */
    size_t allocations;  /* successful allocations so far */
    struct mri_arena_block *cur;        /* current block; NULL: none in use */
    struct mri_arena_block *big;        /* dedicated blocks in use, newest first */
    struct mri_arena_cleanup *cleanups; /* pending cleanups, newest first */
};

/* Requests up to this size take the inline path; p + size cannot wrap for
 * them because no block lies within this distance of the top of memory. */
#define MRI_ARENA_INLINE_MAX ((size_t)1 << 20)

/* MR_ARENA_NO_COUNT: define it (to 1) before including memres headers to
 * drop the allocation counter from the inline path.  The counter is one
 * read-modify-write per allocation; on the tightest loops (binary-trees: ~4
 * cycles and ~25 instructions per node) that is 3% of the instructions and
 * measured 0-10% of the time, depending on code layout (docs/BENCHMARKS.md).
 * Without it,
 * mr_stats.allocations counts only the allocations made out of line (new
 * blocks, large or over-aligned requests, calloc/strdup/sprintf/defer, and
 * everything in sanitizer builds).  Everything else is unchanged; translation
 * units with and without it may share an arena. */
#ifndef MR_ARENA_NO_COUNT
#  define MR_ARENA_NO_COUNT 0
#endif

/* Allocates size bytes aligned to MR_ARENA_ALIGN.  size 0: a valid non-NULL
 * pointer.  Failure: NULL, errno = ENOMEM, nothing changed.  The memory is
 * uninitialised and lives until a rewind past it, reset, release or destroy.
 * Common case inline: compare, bump, count (6 instructions for a constant
 * size; 5 with MR_ARENA_NO_COUNT). */
static inline void *mr_arena_alloc(mr_arena *a, size_t size)
{
#if !MR_SANITIZED
    struct mri_arena_hot *h = (struct mri_arena_hot *)(void *)a;
    if (MR_LIKELY(size <= MRI_ARENA_INLINE_MAX)) {
        uintptr_t p = h->ptr;
        uintptr_t np = p + ((size + MR_ARENA_ALIGN - 1) & ~(uintptr_t)(MR_ARENA_ALIGN - 1));
        if (MR_LIKELY(np <= h->end)) {
            MR_ASSUME(p != 0); /* ptr is never NULL: the caller's NULL check folds away */
            h->ptr = np;
#if !MR_ARENA_NO_COUNT
            h->allocations++;
#endif
            return (void *)p;
        }
    }
#endif
    return mri_arena_alloc_slow(a, size, MR_ARENA_ALIGN);
}

/* As mr_arena_alloc with any power-of-two alignment (above the page size
 * too).  align 0 or not a power of two: NULL, errno = EINVAL. */
static inline void *mr_arena_alloc_aligned(mr_arena *a, size_t size, size_t align)
{
    if (MR_LIKELY(align - 1 < MR_ARENA_ALIGN && (align & (align - 1)) == 0))
        return mr_arena_alloc(a, size);
    return mri_arena_alloc_slow(a, size, align);
}

/* count * size bytes, zeroed.  Overflow: NULL, errno = ENOMEM. */
MR_API void *mr_arena_calloc(mr_arena *a, size_t count, size_t size);

/* Resizes p (from this arena, old_size bytes) to new_size.  Grows or shrinks
 * in place when p is the newest allocation and the block has room; otherwise
 * shrinking returns p and growing copies into a new allocation (the old one
 * is freed with the rest of the arena).  p NULL: mr_arena_alloc(new_size).
 * Failure: NULL, errno = ENOMEM, p untouched and still valid.  The result is
 * aligned to MR_ARENA_ALIGN (or keeps p's alignment when p does not move). */
MR_API void *mr_arena_realloc(mr_arena *a, void *p, size_t old_size, size_t new_size);

/* Copies of s (NUL-terminated) / of at most n bytes of s, NUL-terminated.
 * s NULL: NULL, errno = EINVAL. */
MR_API char *mr_arena_strdup(mr_arena *a, const char *s);
MR_API char *mr_arena_strndup(mr_arena *a, const char *s, size_t n);

/* printf into the arena.  Formats straight into the free tail of the current
 * block when the result fits (one pass), else measures and allocates.
 * Failure: NULL with errno = ENOMEM, or what vsnprintf set (EOVERFLOW). */
MR_API char *mr_arena_sprintf(mr_arena *a, const char *fmt, ...) MR_PRINTF(2, 3);
MR_API char *mr_arena_vsprintf(mr_arena *a, const char *fmt, va_list ap) MR_PRINTF(2, 0);

/* The current position.  Inline: four loads; never fails. */
static inline mr_arena_mark mr_arena_save(const mr_arena *a)
{
    const struct mri_arena_hot *h = (const struct mri_arena_hot *)(const void *)a;
    mr_arena_mark m = {h->cur, h->ptr, h->big, h->cleanups};
    return m;
}

/* Out-of-line part of mr_arena_rewind; not for direct use. */
MR_API void mri_arena_rewind_slow(mr_arena *a, mr_arena_mark m);

/* Frees everything allocated after m was saved, running the cleanups
 * registered after it (LIFO) first.  Memory is kept: allocating the same
 * sequence again hands out the same addresses with no upstream call.
 * m must come from this arena and not lie after an earlier rewind's target
 * (checked in debug builds).  Inline when nothing but the bump pointer moved
 * since m (same block, no large block, no cleanup): one store. */
static inline void mr_arena_rewind(mr_arena *a, mr_arena_mark m)
{
#if !MR_SANITIZED
    struct mri_arena_hot *h = (struct mri_arena_hot *)(void *)a;
    if (MR_LIKELY(m.mri_block == (void *)h->cur && m.mri_block != NULL && m.mri_big == (void *)h->big &&
                  m.mri_cleanups == (void *)h->cleanups && m.mri_ptr <= h->ptr)) {
        h->ptr = m.mri_ptr;
        return;
    }
#endif
    mri_arena_rewind_slow(a, m);
}

/* Frees everything (cleanups run first) and keeps every block for reuse, in
 * the same order: no upstream call. */
MR_API void mr_arena_reset(mr_arena *a);

/* Frees everything (cleanups run first) and returns every block upstream.
 * The caller's buffer, if any, stays as the first block.  Growth restarts
 * from block_size. */
MR_API void mr_arena_release(mr_arena *a);

/* Registers fn(arg) to run when what is allocated before it is freed: on a
 * rewind to a mark saved before this call, reset, release or destroy.
 * Cleanups run LIFO, before the memory is freed; they must not allocate from
 * or rewind this arena.  0 on success; -1 with errno = ENOMEM (no memory for
 * the record) or EINVAL (fn NULL), nothing registered. */
MR_API int mr_arena_defer(mr_arena *a, void (*fn)(void *arg), void *arg);

/* The arena as an mr_resource (owned by the arena, valid until destroy).
 * allocate = mr_arena_alloc_aligned; deallocate frees the block only when it
 * is the newest allocation, else does nothing (memory comes back on rewind,
 * reset or release).  Equal only to itself. */
MR_API mr_resource *mr_arena_resource(mr_arena *a);


/* Fills *out (mr_stats is in resource.h).  Walks the blocks: O(blocks), never on a hot path. */
MR_API void mr_arena_stats(const mr_arena *a, mr_stats *out);

/* Verifies the arena's invariants (block chain, bump pointer inside the
 * current block, held bytes == sum of blocks).  Returns true when they hold;
 * otherwise prints the first violation to stderr and returns false. */
MR_API bool mr_arena_check(const mr_arena *a);

#ifdef __cplusplus
}
#endif
#endif /* MEMRES_ARENA_H */
