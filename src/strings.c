/* SPDX-License-Identifier: MIT */
/* src/strings.c -- the arena's strings: strdup, strndup, sprintf.
 *
 * Strings need no alignment, so they are packed downward from the top of
 * the current block's free space (hot.end moves down) while aligned
 * allocations bump hot.ptr up (arena.c): a string costs its length.  These
 * functions read and move only the arena's inline fields (memres/bits/
 * arena.h), as mr_arena_strdup's inline path does, and leave every block
 * change to the arena's slow path (mri_arena_alloc_slow with alignment 1).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "memres/arena.h"
#include "track.h"

static inline struct mri_arena_hot *hot(mr_arena *a) { return (struct mri_arena_hot *)(void *)a; }

/* n bytes (n >= 1) with no alignment: packed down from the top of the
 * current block's free space, so strings cost their length, not a multiple
 * of MR_ARENA_ALIGN.  When they do not fit, the slow path starts a block
 * (and the first string there is aligned at its bottom). */
static char *alloc_bytes(mr_arena *a, size_t n)
{
    struct mri_arena_hot *h = hot(a);
    if (MR_LIKELY(n <= h->end - h->ptr)) {
        h->end -= n;
        h->allocations++;
        mri_track_unpoison(h->end, n);
        return (char *)h->end;
    }
    return mri_arena_alloc_slow(a, n, 1);
}

MR_API char *mr_arena_strndup(mr_arena *a, const char *s, size_t n)
{
    if (s == NULL)
        return mri_fail(EINVAL);
    size_t len = strnlen(s, n);
    char *p = alloc_bytes(a, len + 1);
    if (p != NULL) {
        memcpy(p, s, len);
        p[len] = '\0';
    }
    return p;
}

MR_API MR_NOINLINE char *mri_arena_strdup_slow(mr_arena *a, const char *s)
{
    if (s == NULL)
        return mri_fail(EINVAL);
    return mr_arena_strndup(a, s, SIZE_MAX);
}

MR_API char *mr_arena_vsprintf(mr_arena *a, const char *fmt, va_list ap)
{
    struct mri_arena_hot *h = hot(a);
    va_list ap2;
    va_copy(ap2, ap);
    int n;
    char *p = NULL;
    if (!MRI_TRACKING && h->cur != NULL) {
        /* One pass into the free space (it is ours, so a partial write is
         * harmless), then moved up to the packed strings at its top. */
        size_t avail = (size_t)(h->end - h->ptr);
        n = vsnprintf((char *)h->ptr, avail, fmt, ap);
        if (n >= 0 && (size_t)n < avail) {
            p = (char *)(h->end - ((size_t)n + 1));
            memmove(p, (const char *)h->ptr, (size_t)n + 1);
            h->end = (uintptr_t)p;
            h->allocations++;
            va_end(ap2);
            return p;
        }
    } else {
        n = vsnprintf(NULL, 0, fmt, ap);
    }
    if (n >= 0) {
        p = alloc_bytes(a, (size_t)n + 1);
        if (p != NULL)
            vsnprintf(p, (size_t)n + 1, fmt, ap2);
    }
    va_end(ap2);
    return p;
}

MR_API char *mr_arena_sprintf(mr_arena *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *p = mr_arena_vsprintf(a, fmt, ap);
    va_end(ap);
    return p;
}
