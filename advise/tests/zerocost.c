/* SPDX-License-Identifier: MIT */
/* advise/tests/zerocost.c -- libmemres-zerocost.so, the yardstick of
 * `memres-advise apply`: a malloc that costs nothing -- a bump pointer per
 * thread whose free does nothing -- preloaded into a program, shows the
 * limit of what any allocator (an arena included) can save it: its run
 * over this, against its run over glibc, is the most that applying advice
 * can win.  Memory is never reused: for measuring runs that fit in memory,
 * not for use.
 *
 * Each object has its size in the 8 bytes below it (realloc copies that
 * much, malloc_usable_size says it); objects are 16-byte aligned, and the
 * aligned family bumps to its alignment.  Chunks of 64 MiB are mapped per
 * thread (MAP_NORESERVE: pages are touched as they are handed out). */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define CHUNK ((size_t)64 << 20)

static _Thread_local __attribute__((tls_model("initial-exec"))) char *bump, *end;

static void *take(size_t n, size_t align)
{
    if (n > CHUNK / 2 || align > 4096) {
        /* large: its own mapping, the size below it */
        size_t pad = align > 16 ? align : 16;
        size_t len = n + pad;
        if (len < n) {
            errno = ENOMEM;
            return NULL;
        }
        char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED) {
            errno = ENOMEM;
            return NULL;
        }
        char *p = m + pad;
        memcpy(p - 8, &n, 8);
        return p;
    }
    if (align < 16)
        align = 16;
    for (;;) {
        uintptr_t p = ((uintptr_t)bump + 8 + align - 1) & ~(uintptr_t)(align - 1);
        if (bump && p + n <= (uintptr_t)end) {
            bump = (char *)(p + n);
            memcpy((char *)p - 8, &n, 8);
            return (void *)p;
        }
        char *m = mmap(NULL, CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED) {
            errno = ENOMEM;
            return NULL;
        }
        bump = m;
        end = m + CHUNK;
    }
}

static size_t size_of(const void *p)
{
    size_t n;
    memcpy(&n, (const char *)p - 8, 8);
    return n;
}

EXPORT void *malloc(size_t n)
{
    return take(n, 16);
}

EXPORT void free(void *p)
{
    (void)p;
}

EXPORT void *calloc(size_t a, size_t b)
{
    size_t n;
    if (__builtin_mul_overflow(a, b, &n)) {
        errno = ENOMEM;
        return NULL;
    }
    return take(n, 16); /* fresh pages: already zero */
}

EXPORT void *realloc(void *p, size_t n)
{
    void *q = take(n, 16);
    if (q && p) {
        size_t old = size_of(p);
        memcpy(q, p, old < n ? old : n);
    }
    return q;
}

EXPORT void *reallocarray(void *p, size_t a, size_t b)
{
    size_t n;
    if (__builtin_mul_overflow(a, b, &n)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(p, n);
}

EXPORT void *memalign(size_t align, size_t n)
{
    if (align == 0 || (align & (align - 1))) {
        errno = EINVAL;
        return NULL;
    }
    return take(n, align);
}

EXPORT void *aligned_alloc(size_t align, size_t n)
{
    return memalign(align, n);
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
    if (align < sizeof(void *) || (align & (align - 1)))
        return EINVAL;
    void *p = take(n, align);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

EXPORT void *valloc(size_t n)
{
    return take(n, 4096);
}

EXPORT void *pvalloc(size_t n)
{
    return take((n + 4095) & ~(size_t)4095, 4096);
}

EXPORT size_t malloc_usable_size(void *p)
{
    return p ? size_of(p) : 0;
}
