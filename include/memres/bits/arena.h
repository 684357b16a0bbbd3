/* SPDX-License-Identifier: MIT */
/* memres/bits/arena.h -- private: what the inline paths of memres/arena.h
 * read and call.  Not for direct use; the layout changes between versions
 * (rebuild against the headers of the library you link).
 *
 * Internal API for memres's own clients (memres.hpp): mri_arena_alloc_down8
 * (an alignment of 8 or less, packed down from the top of the free space)
 * and mri_arena_free_newest (the resource view's deallocate, inline). */
#ifndef MEMRES_BITS_ARENA_H
#define MEMRES_BITS_ARENA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "memres/config.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mr_arena mr_arena;

/* mr_arena_mark (memres/arena.h): its fields, read by the inline rewind. */
struct mr_arena_mark {
    void     *mri_block;
    uintptr_t mri_ptr;
    uintptr_t mri_end;       /* strings are packed down from the top to here */
    void     *mri_big;
    uint64_t  mri_arena;     /* the arena's id when saved */
    size_t    mri_big_seq;   /* dedicated blocks in use when saved */
    size_t    mri_cleanup_seq; /* cleanups and children numbered when saved */
};

/* The alignment of mr_arena_alloc: alignof(max_align_t) (16 on x86-64). */
#define MR_ARENA_ALIGN ((size_t)_Alignof(max_align_t))
#ifdef __cplusplus
#  undef MR_ARENA_ALIGN
#  define MR_ARENA_ALIGN ((size_t)alignof(max_align_t))
#endif

/* The out-of-line paths (src/arena.c). */
MR_API MR_NOINLINE void *mri_arena_alloc_slow(mr_arena *a, size_t size, size_t align);
MR_API MR_NOINLINE char *mri_arena_strdup_slow(mr_arena *a, const char *s);
MR_API MR_NOINLINE void mri_arena_rewind_slow(mr_arena *a, struct mr_arena_mark m);
MR_API void mri_arena_free_newest_slow(mr_arena *a, void *p, size_t size);

/* The fields the inline paths read, first in struct mr_arena. */
struct mri_arena_hot {
    uintptr_t ptr;       /* next free byte of the current block (MR_ARENA_ALIGN-aligned) */
    uintptr_t end;       /* end of the free space: byte-packed strings lie above it, up to
                            the end of the current block */
    size_t allocations;  /* successful allocations so far */
    struct mri_arena_block *cur;        /* current block; NULL: none in use */
    struct mri_arena_block *big;        /* dedicated blocks in use, newest first */
    struct mri_arena_cleanup *cleanups; /* pending cleanups, newest first */
    size_t big_seq;      /* dedicated blocks in use (the newest one's number) */
    size_t cleanup_seq;  /* pending cleanups (the newest one's number) */
    uint64_t id;         /* never reused by another arena; renewed by release */
    uintptr_t mark;      /* where the newest mark was saved in the current block (0: none
                            there): an allocation below it is not grown in place */
};

/* Requests up to this size take the inline path; p + size cannot wrap for
 * them because no block lies within this distance of the top of memory. */
#define MRI_ARENA_INLINE_MAX ((size_t)1 << 20)

/* The inline part of mr_arena_alloc: size bytes aligned to MR_ARENA_ALIGN
 * bumped from the current block (compare, bump, count), or NULL (then the
 * slow path). */
static inline void *mri_arena_bump(mr_arena *a, size_t size)
{
    struct mri_arena_hot *h = (struct mri_arena_hot *)(void *)a;
    if (MR_LIKELY(size <= MRI_ARENA_INLINE_MAX)) {
        uintptr_t p = h->ptr;
        uintptr_t np = p + ((size + MR_ARENA_ALIGN - 1) & ~(uintptr_t)(MR_ARENA_ALIGN - 1));
        if (MR_LIKELY(np <= h->end)) {
            MR_ASSUME(p != 0); /* ptr is never NULL: the caller's NULL check folds away */
            h->ptr = np;
            h->allocations++;
            return (void *)p;
        }
    }
    return NULL;
}

/* mr_arena_strdup: the copy packed at the top of the free space when it
 * fits (strlen, a compare, a subtract, memcpy), else (and in checked
 * builds) the slow path.  Whole here, the slow call too: as a helper that
 * returns NULL to its caller it compiles to other code (clang turns a
 * compare round). */
static inline char *mri_arena_strdup_in(mr_arena *a, const char *s)
{
#if !MR_CHECKED
    struct mri_arena_hot *h = (struct mri_arena_hot *)(void *)a;
    if (MR_LIKELY(s != NULL)) {
        size_t n = strlen(s) + 1;
        if (MR_LIKELY(n <= h->end - h->ptr)) {
            char *p = (char *)(h->end - n);
            MR_ASSUME(p != NULL);
            h->end = (uintptr_t)p;
            h->allocations++;
            return (char *)memcpy(p, s, n);
        }
    }
#endif
    return mri_arena_strdup_slow(a, s);
}

/* mr_arena_save: the position, remembered as the newest mark. */
static inline struct mr_arena_mark mri_arena_save_in(const mr_arena *a)
{
    const struct mri_arena_hot *h = (const struct mri_arena_hot *)(const void *)a;
    struct mr_arena_mark m = {h->cur, h->ptr, h->end, h->big, h->id, h->big_seq, h->cleanup_seq};
    ((struct mri_arena_hot *)(uintptr_t)a)->mark = h->ptr; /* no arena is a const object */
    return m;
}

/* mr_arena_rewind to *m: two stores when nothing but the bump pointers
 * moved since m was saved (same block, no large block, no cleanup or
 * child, same arena id), else (and in checked builds) the slow path.
 * Whole here, the slow call too, and m by address: as a test returning to
 * its caller, or with m copied once more by value, it compiles to other
 * code than the public function's own body did. */
static inline void mri_arena_rewind_in(mr_arena *a, const struct mr_arena_mark *m)
{
#if !MR_CHECKED
    struct mri_arena_hot *h = (struct mri_arena_hot *)(void *)a;
    if (MR_LIKELY(m->mri_block == (void *)h->cur && m->mri_block != NULL && m->mri_big == (void *)h->big &&
                  m->mri_cleanup_seq == h->cleanup_seq && m->mri_ptr <= h->ptr && m->mri_end >= h->end &&
                  m->mri_arena == h->id)) {
        h->ptr = m->mri_ptr;
        h->end = m->mri_end;
        return;
    }
#endif
    mri_arena_rewind_slow(a, *m);
}

/* size bytes aligned to 8, packed down from the top of the free space at
 * 8-byte granularity (the side byte-packed strings use), so an object whose
 * alignment is at most 8 is not rounded to MR_ARENA_ALIGN.  size <= end -
 * ptr suffices: ptr is a multiple of 16, so rounding end - size down to 8
 * stays at or above it. */
static inline void *mri_arena_alloc_down8(mr_arena *a, size_t size)
{
#if !MR_CHECKED
    struct mri_arena_hot *h = (struct mri_arena_hot *)(void *)a;
    if (MR_LIKELY(size <= h->end - h->ptr)) {
        uintptr_t q = (h->end - size) & ~(uintptr_t)7;
        MR_ASSUME(q != 0);
        h->end = q;
        h->allocations++;
        return (void *)q;
    }
#endif
    return mri_arena_alloc_slow(a, size, 8);
}

/* Is p (an allocation of size bytes from a) the newest allocation of the
 * current block?  Then it can be resized or given back in place.  For a
 * genuine allocation, ptr - p == size rounded can hold only for the newest
 * one: an allocation of an older block ends before the current block's
 * data begins. */
static inline bool mri_arena_is_newest(const mr_arena *a, const void *p, size_t size)
{
    const struct mri_arena_hot *h = (const struct mri_arena_hot *)(const void *)a;
    return h->cur != NULL && size <= (size_t)PTRDIFF_MAX &&
           h->ptr - (uintptr_t)p == ((size + MR_ARENA_ALIGN - 1) & ~(uintptr_t)(MR_ARENA_ALIGN - 1));
}

/* Is p (size bytes) the newest allocation of the top side (packed strings,
 * mri_arena_alloc_down8)?  It then starts at hot.end. */
static inline bool mri_arena_is_newest_top(const mr_arena *a, const void *p, size_t size)
{
    const struct mri_arena_hot *h = (const struct mri_arena_hot *)(const void *)a;
    return (uintptr_t)p == h->end && h->cur != NULL && size <= (size_t)PTRDIFF_MAX;
}

/* Gives back p (size bytes) when it is the newest allocation of either
 * side: the resource view's deallocate.  Out of line in checked builds,
 * which poison what comes back. */
static inline void mri_arena_free_newest(mr_arena *a, void *p, size_t size)
{
#if !MR_CHECKED
    struct mri_arena_hot *h = (struct mri_arena_hot *)(void *)a;
    if (mri_arena_is_newest(a, p, size))
        h->ptr = (uintptr_t)p;
    else if (mri_arena_is_newest_top(a, p, size))
        h->end = (uintptr_t)p + size;
#else
    mri_arena_free_newest_slow(a, p, size);
#endif
}

#ifdef __cplusplus
}
#endif
#endif /* MEMRES_BITS_ARENA_H */
