/* SPDX-License-Identifier: MIT */
/* src/internal.h -- what every memres source file shares and users never see:
 * the check tiers, alignment and overflow arithmetic, container-of.
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

/* ---- checks: one mechanism, three tiers, selected by MR_DEBUG 0..3 ----
 *
 *   MR_DEBUG 0   release (NDEBUG): nothing is checked but what keeps memory
 *                safe at no measurable cost and is itself safe to evaluate
 *                (MRI_MISUSE conditions; a check that would read memory a
 *                foreign pointer points at is written MR_DEBUG >= 1 && ...).
 *   MR_DEBUG 1   the default without NDEBUG (a plain Debug build): cheap O(1)
 *                checks of caller misuse are reported.
 *   MR_DEBUG 2   also our own invariants at the places that rely on them.
 *   MR_DEBUG 3   also the walkers (mr_<object>_check) after every slow-path
 *                operation of every allocator.
 *
 * Caller misuse and our own failures are reported differently:
 *   MRI_MISUSE(bad, ptr, what)  is an expression: true when `bad` holds.
 *       The caller takes its safe way out (ignore the call, stop a walk), so
 *       release builds stay memory-safe; at MR_DEBUG >= 1 the misuse is
 *       reported first through mri_misuse(), the one place every detected
 *       misuse goes: the user's violation handler (mr_set_violation_handler,
 *       resource.h), which may return, or by default one line and abort.
 *   MR_ASSERT(e, msg)           a misuse check with no way out: reported at
 *       MR_DEBUG >= 1, compiled out below.
 *   MR_ASSERT_INTERNAL(e)       our own logic (>= 2) and
 *   MR_ASSERT_EXPENSIVE(e)      walks (>= 3): a failure is a bug in memres,
 *       reported by mri_check_fail(), which never returns.
 * Both failure functions are cold and out of line: a check costs its test
 * and a never-taken branch. */
#ifndef MR_DEBUG
#  ifdef NDEBUG
#    define MR_DEBUG 0
#  else
#    define MR_DEBUG 1
#  endif
#endif

MR_COLD void mri_misuse(const char *what, const void *ptr, const char *file, int line, const char *func);
MR_NORETURN MR_COLD void mri_check_fail(const char *expr, const char *msg, const char *file, int line,
                                        const char *func);

#if MR_DEBUG >= 1
#  define MRI_MISUSE(bad, ptr, what) \
    (MR_UNLIKELY(bad) ? (mri_misuse(what, ptr, __FILE__, __LINE__, __func__), true) : false)
#  define MR_ASSERT(e, msg) ((void)MRI_MISUSE(!(e), NULL, msg))
#else
#  define MRI_MISUSE(bad, ptr, what) (MR_UNLIKELY(bad) ? ((void)(ptr), true) : false)
#  define MR_ASSERT(e, msg) ((void)0)
#endif
#define MRI_CHECK_FAIL_IF(bad, e, msg) \
    (MR_UNLIKELY(bad) ? mri_check_fail(#e, msg, __FILE__, __LINE__, __func__) : (void)0)
#if MR_DEBUG >= 2
#  define MR_ASSERT_INTERNAL(e) MRI_CHECK_FAIL_IF(!(e), e, "internal invariant")
#else
#  define MR_ASSERT_INTERNAL(e) ((void)0)
#endif
#if MR_DEBUG >= 3
#  define MR_ASSERT_EXPENSIVE(e) MRI_CHECK_FAIL_IF(!(e), e, "invariant walk")
#else
#  define MR_ASSERT_EXPENSIVE(e) ((void)0)
#endif

/* MR_DEBUG >= 3 walks an allocator after its slow paths, amortised: a walk
 * of S steps is followed by S / MRI_WALK_RATIO slow-path calls with none,
 * so the walks cost O(MRI_WALK_RATIO) steps per call whatever the
 * allocator holds (a test of n frees in an ASan build, where every free
 * takes the slow path, stays linear), while a small allocator is walked
 * after every call.  reset, release and destroy walk every time
 * (MRI_WALK_NOW).  The allocator embeds one struct mri_walk; its walker
 * fn(obj, &steps) adds the steps it takes to steps.  Compiled out below
 * MR_DEBUG 3. */
struct mri_walk {
    uint32_t calls; /* slow-path calls since the last walk */
    uint32_t due;   /* calls between the last walk and the next */
};
#define MRI_WALK_RATIO ((size_t)4)
static inline bool mri_walk_due(struct mri_walk *w) { return ++w->calls > w->due; }
static inline void mri_walk_done(struct mri_walk *w, size_t steps)
{
    w->calls = 0;
    w->due = steps / MRI_WALK_RATIO < UINT32_MAX ? (uint32_t)(steps / MRI_WALK_RATIO) : UINT32_MAX;
}
#if MR_DEBUG >= 3
#  define MRI_WALK_IF(now, w, fn, obj)                                                 \
    do {                                                                              \
        if ((now) || mri_walk_due(w)) {                                               \
            size_t mri_steps_ = 0;                                                    \
            MRI_CHECK_FAIL_IF(!fn(obj, &mri_steps_), fn(obj), "invariant walk");       \
            mri_walk_done(w, mri_steps_);                                             \
        }                                                                             \
    } while (0)
#else
#  define MRI_WALK_IF(now, w, fn, obj) ((void)0)
#endif
/* After a slow path: walk obj with fn when due. */
#define MRI_WALK(obj, fn) MRI_WALK_IF(false, &(obj)->walk, fn, obj)
/* At reset, release, destroy: walk now. */
#define MRI_WALK_NOW(obj, fn) MRI_WALK_IF(true, &(obj)->walk, fn, obj)

/* The walkers (mr_<object>_check) report the first violated invariant with
 * one line on stderr, "memres: mr_arena_check(0x...): <what>", and return
 * false: MRI_VERIFY(cond, who, obj, fmt, ...) inside a function returning
 * bool.  `who` is the walker's name. */
MR_COLD void mri_verify_report(const char *who, const void *obj, const char *fmt, ...) MR_PRINTF(3, 4);
#define MRI_VERIFY(cond, who, obj, ...)                 \
    do {                                                \
        if (MR_UNLIKELY(!(cond))) {                     \
            mri_verify_report(who, obj, __VA_ARGS__);   \
            return false;                               \
        }                                               \
    } while (0)

/* Address ranges [lo, hi), for the walkers that ask which chunk holds a
 * block (check.c): sorted once, then found by binary search. */
struct mri_span {
    uintptr_t lo, hi;
};
void mri_spans_sort(struct mri_span *spans, size_t n);
/* The span of spans[0..n) (sorted, disjoint) that holds a, or NULL;
 * ++*steps for each probe. */
const struct mri_span *mri_span_find(const struct mri_span *spans, size_t n, uintptr_t a, size_t *steps);

/* A static function used only by checks that a lower MR_DEBUG compiles out. */
#define MRI_UNUSED __attribute__((unused))

/* The struct that contains `member` at ptr (one spelling for every view of
 * an allocator as an mr_resource). */
#define mri_container_of(ptr, type, member) \
    ((type *)(void *)((char *)(uintptr_t)(const void *)(ptr) - offsetof(type, member)))

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

/* The OS page size (os.c, the only file with platform #ifdefs). */
size_t mri_os_page_size(void);

/* The block rounding rule of every allocator (arena blocks, pool chunks):
 * n bytes rounded up to a multiple of 64 below a page and of the page size
 * above -- never a power of two plus a header.  false when the result does
 * not fit in MRI_MAX_SIZE. */
static inline bool mri_round_block(size_t n, size_t *out)
{
    size_t page = mri_os_page_size();
    return mri_align_up(n, n < page ? 64 : page, out) && *out <= MRI_MAX_SIZE;
}

/* A fresh random word (os.c): a process secret from the OS, drawn once,
 * stirred with a counter.  For free-list keys; not for cryptography. */
uintptr_t mri_os_random(void);

#endif /* MEMRES_INTERNAL_H */
