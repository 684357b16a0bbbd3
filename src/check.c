/* SPDX-License-Identifier: MIT */
/* src/check.c -- where every failed check of memres is reported (the tiers
 * and macros are in internal.h).
 *
 * Three kinds of report, each one line on stderr starting "memres: ":
 *   mri_misuse       a caller misused the API (debug builds; the caller
 *                    then takes its safe way out if this returns).  It
 *                    calls the user's violation handler
 *                    (mr_set_violation_handler), else prints and aborts.
 *   mri_check_fail   an invariant of memres itself failed: a bug, or memory
 *                    corrupted behind the allocator's back.  Aborts.
 *   mri_verify_report  a walker (mr_<object>_check) found a violation; the
 *                    walker returns false to its caller.
 * And the walkers' search of sorted address ranges (mri_span_find).
 */
#include <stdarg.h>
#include <stdatomic.h>

#include "internal.h"

/* The handler and its ctx, published together: a reader never pairs one
 * handler with another's ctx. */
struct handler {
    mr_violation_fn *fn;
    void *ctx;
};
static struct handler default_handler; /* fn NULL: print and abort */
static _Atomic(const struct handler *) current = &default_handler;
static struct handler slots[2];           /* set alternates between them */
static atomic_flag setting = ATOMIC_FLAG_INIT;
static unsigned next_slot;

MR_API void mr_set_violation_handler(mr_violation_fn *fn, void *ctx)
{
    while (atomic_flag_test_and_set_explicit(&setting, memory_order_acquire))
        ; /* setters are rare: spin */
    if (fn == NULL) {
        atomic_store_explicit(&current, &default_handler, memory_order_release);
    } else {
        struct handler *h = &slots[next_slot];
        next_slot ^= 1u;
        h->fn = fn;
        h->ctx = ctx;
        atomic_store_explicit(&current, h, memory_order_release);
    }
    atomic_flag_clear_explicit(&setting, memory_order_release);
}

void mri_misuse(const char *what, const void *ptr, const char *file, int line, const char *func)
{
    const struct handler *h = atomic_load_explicit(&current, memory_order_acquire);
    if (h->fn != NULL) {
        h->fn(what, ptr, h->ctx);
        return;
    }
    fprintf(stderr, "memres: misuse: %s (pointer %p) at %s:%d in %s\n", what, ptr, file, line, func);
    fflush(stderr);
    abort();
}

void mri_check_fail(const char *expr, const char *msg, const char *file, int line, const char *func)
{
    fprintf(stderr, "memres: %s:%d: %s: %s (check '%s' failed)\n", file, line, func, msg, expr);
    fflush(stderr);
    abort();
}

void mri_verify_report(const char *who, const void *obj, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "memres: %s(%p): ", who, obj);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static int span_cmp(const void *x, const void *y)
{
    uintptr_t a = ((const struct mri_span *)x)->lo, b = ((const struct mri_span *)y)->lo;
    return (a > b) - (a < b);
}

void mri_spans_sort(struct mri_span *spans, size_t n) { qsort(spans, n, sizeof *spans, span_cmp); }

const struct mri_span *mri_span_find(const struct mri_span *spans, size_t n, uintptr_t a, size_t *steps)
{
    size_t lo = 0, hi = n; /* the first span with lo > a is at hi */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        ++*steps;
        if (spans[mid].lo <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && a < spans[lo - 1].hi ? &spans[lo - 1] : NULL;
}
