/* SPDX-License-Identifier: MIT */
/* advise/common/preload.h -- what the two preloaded libraries (the
 * recorder, record/, and the apply runtime, apply/) both need at the
 * malloc interface: the caller of an interposer and its CFA, the
 * realloc/reallocarray pair, counters that stay plain until a second
 * thread exists, and the driver's variables taken from the environment. */
#ifndef MEMRES_ADVISE_PRELOAD_H
#define MEMRES_ADVISE_PRELOAD_H

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "clock.h"
#include "walk.h"

/* glibc's allocator (exported by glibc 2.36 at GLIBC_2.2.5): what the
 * interposers call, never through the PLT's malloc (no recursion) */
extern void *__libc_malloc(size_t n);
extern void __libc_free(void *p);
extern void *__libc_calloc(size_t a, size_t b);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t align, size_t n);

/* In an interposer compiled with frame pointers: the return address into
 * its caller, and its own CFA (where the walk of common/walk.h starts). */
#define MRA_CALLER() ((uintptr_t)__builtin_return_address(0))
#define MRA_CALLER_CFA() ((uintptr_t)__builtin_frame_address(0) + 16u)

/* realloc and reallocarray over do_realloc(p, n, caller, cfa), exported
 * with visibility `export`. */
#define MRA_DEFINE_REALLOCS(export, do_realloc)                                                                    \
    export void *realloc(void *p, size_t n)                                                                        \
    {                                                                                                              \
        return do_realloc(p, n, MRA_CALLER(), MRA_CALLER_CFA());                                                   \
    }                                                                                                              \
    export void *reallocarray(void *p, size_t a, size_t b)                                                         \
    {                                                                                                              \
        size_t n;                                                                                                  \
        if (__builtin_mul_overflow(a, b, &n)) {                                                                    \
            errno = ENOMEM;                                                                                        \
            return NULL;                                                                                           \
        }                                                                                                          \
        return do_realloc(p, n, MRA_CALLER(), MRA_CALLER_CFA());                                                   \
    }

/* *a += d: plain loads and stores (of atomics: no data race, no locked
 * instruction) while *multi is 0, atomic after.  The new value. */
static inline uint64_t mra_cnt_add(_Atomic uint64_t *a, uint64_t d, _Atomic int *multi)
{
    if (__builtin_expect(!atomic_load_explicit(multi, memory_order_relaxed), 1)) {
        uint64_t v = atomic_load_explicit(a, memory_order_relaxed) + d;
        atomic_store_explicit(a, v, memory_order_relaxed);
        return v;
    }
    return atomic_fetch_add_explicit(a, d, memory_order_relaxed) + d;
}

/* *a = max(*a, v), the same way. */
static inline void mra_cnt_max(_Atomic uint64_t *a, uint64_t v, _Atomic int *multi)
{
    uint64_t p = atomic_load_explicit(a, memory_order_relaxed);
    if (__builtin_expect(v <= p, 1))
        return;
    if (__builtin_expect(!atomic_load_explicit(multi, memory_order_relaxed), 1)) {
        atomic_store_explicit(a, v, memory_order_relaxed);
        return;
    }
    while (v > p && !atomic_compare_exchange_weak_explicit(a, &p, v, memory_order_relaxed, memory_order_relaxed)) {
    }
}

/* The variable name copied into dst (cap bytes, cut), "" when unset;
 * *present says whether it was set. */
static inline void mra_env_take(const char *name, char *dst, size_t cap, bool *present)
{
    const char *v = getenv(name);
    *present = v != NULL;
    dst[0] = 0;
    if (v) {
        size_t n = strlen(v);
        if (n >= cap)
            n = cap - 1;
        memcpy(dst, v, n);
        dst[n] = 0;
    }
}

/* A per-process secret for the tags that tell a library's objects from
 * glibc's: the kernel's AT_RANDOM bytes, the time and the pid, mixed; odd. */
static inline uint64_t mra_secret(void)
{
    const uint64_t *rnd = (const uint64_t *)getauxval(AT_RANDOM);
    uint64_t sec = mra_mono_ns() ^ (uint64_t)getpid() << 32;
    if (rnd) {
        uint64_t r[2];
        memcpy(r, rnd, sizeof r);
        sec ^= r[0] ^ mra_mix64(r[1]);
    }
    return mra_mix64(sec) | 1u;
}

/* glibc's malloc_usable_size, found past the interposer's own (NULL: none). */
static inline size_t (*mra_next_usable(void))(void *)
{
    size_t (*f)(void *) = NULL;
    void *sym = dlsym(RTLD_NEXT, "malloc_usable_size");
    if (sym)
        memcpy(&f, &sym, sizeof sym);
    return f;
}

#endif
