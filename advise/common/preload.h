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

/* ---- the driver's variables, read and removed from environ itself ----
 *
 * Not through getenv, setenv and unsetenv: a program may define its own,
 * which keep its variables elsewhere once its main has run -- bash's do,
 * and before its main they leave environ as it is (an unsetenv loop until
 * a variable is gone never ended under bash -c).  A constructor edits the
 * array in place, as glibc's unsetenv does, so that the program's main
 * (which may take environ as its third argument) sees the same. */
extern char **environ;

/* The entry of environ that sets name, or NULL. */
static inline char **mra_env_find(const char *name)
{
    size_t len = strlen(name);
    for (char **e = environ; e && *e; e++)
        if (strncmp(*e, name, len) == 0 && (*e)[len] == '=')
            return e;
    return NULL;
}

/* Every entry that sets name removed. */
static inline void mra_env_remove(const char *name)
{
    char **e;
    while ((e = mra_env_find(name)) != NULL)
        for (char **d = e; *d; d++)
            d[0] = d[1];
}

/* name set to the value of entry ("NAME=value", which must live as long as
 * the process): an entry that sets name replaced, else environ grown by
 * one (the array from glibc's allocator, never freed).  0, or -1 without
 * memory. */
static inline int mra_env_put(const char *name, char *entry)
{
    char **e = mra_env_find(name);
    if (e) {
        *e = entry;
        return 0;
    }
    size_t n = 0;
    while (environ && environ[n])
        n++;
    char **ne = __libc_malloc((n + 2) * sizeof *ne);
    if (!ne)
        return -1;
    if (n)
        memcpy(ne, environ, n * sizeof *ne);
    ne[n] = entry;
    ne[n + 1] = NULL;
    environ = ne;
    return 0;
}

/* The variable name copied into dst (cap bytes, cut), "" when unset, and
 * removed from the environment; *present says whether it was set. */
static inline void mra_env_take(const char *name, char *dst, size_t cap, bool *present)
{
    char **e = mra_env_find(name);
    *present = e != NULL;
    dst[0] = 0;
    if (e) {
        const char *v = *e + strlen(name) + 1;
        size_t n = strlen(v);
        if (n >= cap)
            n = cap - 1;
        memcpy(dst, v, n);
        dst[n] = 0;
        mra_env_remove(name);
    }
}

/* LD_PRELOAD as it was before the driver set it: preload where the driver
 * passed it on (have), else unset.  The entry lives in static storage. */
static inline void mra_env_restore_preload(const char *preload, bool have)
{
    static char entry[4096 + 16];
    if (!have) {
        mra_env_remove("LD_PRELOAD");
        return;
    }
    size_t n = strlen(preload);
    if (n > sizeof entry - 12)
        n = sizeof entry - 12;
    memcpy(entry, "LD_PRELOAD=", 11);
    memcpy(entry + 11, preload, n);
    entry[11 + n] = 0;
    mra_env_remove("LD_PRELOAD");
    (void)mra_env_put("LD_PRELOAD", entry);
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
