/* src/internal.h -- what every memres source file shares and users never see:
 * assertions, alignment and overflow arithmetic, branch hints.
 *
 * All alignment and overflow math lives here.  Every size that grows --
 * count * size, size + header, aligning near SIZE_MAX, doubling a block --
 * goes through these helpers, so an impossible size fails instead of wrapping.
 */
#ifndef MEMRES_INTERNAL_H
#define MEMRES_INTERNAL_H

#include <errno.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "memres/resource.h"

/* ---- assertion tiers, selected by MR_DEBUG 0..3 ----
 *   MR_ASSERT           (>= 1) cheap checks of caller misuse
 *   MR_ASSERT_INTERNAL  (>= 2) checks of our own logic
 *   MR_ASSERT_EXPENSIVE (>= 3) walks (mr_*_check on every operation) */
#ifndef MR_DEBUG
#  ifdef NDEBUG
#    define MR_DEBUG 0
#  else
#    define MR_DEBUG 1
#  endif
#endif

void mri_assert_fail(const char *expr, const char *msg, const char *file, int line, const char *func);

#define MRI_ASSERT_IMPL(e, msg) \
    (MR_LIKELY(e) ? (void)0 : mri_assert_fail(#e, msg, __FILE__, __LINE__, __func__))
#if MR_DEBUG >= 1
#  define MR_ASSERT(e, msg) MRI_ASSERT_IMPL(e, msg)
#else
#  define MR_ASSERT(e, msg) ((void)0)
#endif
#if MR_DEBUG >= 2
#  define MR_ASSERT_INTERNAL(e) MRI_ASSERT_IMPL(e, "internal invariant")
#else
#  define MR_ASSERT_INTERNAL(e) ((void)0)
#endif
#if MR_DEBUG >= 3
#  define MR_ASSERT_EXPENSIVE(e) MRI_ASSERT_IMPL(e, "expensive check")
#else
#  define MR_ASSERT_EXPENSIVE(e) ((void)0)
#endif

/* The alignment every allocator gives by default. */
#define MRI_MAX_ALIGN ((size_t)alignof(max_align_t))

/* ---- arithmetic ---- */
static inline bool mri_is_pow2(size_t x) { return x != 0 && (x & (x - 1)) == 0; }

/* Rounds x up to a multiple of align (a power of two).  Returns false, leaving
 * *out untouched, when the result does not fit in size_t. */
static inline bool mri_align_up(size_t x, size_t align, size_t *out)
{
    size_t r;
    if (__builtin_add_overflow(x, align - 1, &r))
        return false;
    *out = r & ~(align - 1);
    return true;
}

/* Rounds x up to a multiple of align; the caller knows it cannot overflow. */
static inline size_t mri_align_up_nocheck(size_t x, size_t align) { return (x + align - 1) & ~(align - 1); }

static inline uintptr_t mri_align_ptr(uintptr_t p, size_t align) { return (p + align - 1) & ~(uintptr_t)(align - 1); }

static inline bool mri_add_overflow(size_t a, size_t b, size_t *out) { return __builtin_add_overflow(a, b, out); }
static inline bool mri_mul_overflow(size_t a, size_t b, size_t *out) { return __builtin_mul_overflow(a, b, out); }

/* The largest size any allocator accepts: objects larger than PTRDIFF_MAX
 * cannot be indexed in C, and no upstream can give them. */
#define MRI_MAX_SIZE ((size_t)PTRDIFF_MAX)

/* The largest alignment any allocator tries to honour (1 TiB on 64-bit,
 * 1 GiB on 32-bit); larger powers of two fail with ENOMEM. */
#define MRI_MAX_ALIGNMENT ((size_t)1 << (sizeof(size_t) >= 8 ? 40 : 30))

/* Sets errno and returns NULL: the one way an allocation fails. */
static inline void *mri_fail(int err)
{
    errno = err;
    return NULL;
}

/* ---- OS page source facts (os.c, the only file with platform #ifdefs) ---- */
size_t mri_os_page_size(void);

#endif /* MEMRES_INTERNAL_H */
