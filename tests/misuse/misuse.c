/* SPDX-License-Identifier: MIT */
/* tests/misuse/misuse.c -- a catalogue of misuse of the public API, one small
 * function per case, and a driver that commits one case in this process.
 *
 *     misuse --list   one line per case: name, promised builds, description
 *                     and where a header promises the detection
 *     misuse CASE     commits CASE with a recording violation handler that
 *                     prints "REPORTED: <what>" and returns, calls the
 *                     walker (mr_<object>_check) where the header says the
 *                     walker finds the misuse (printing "WALKER: ..." when
 *                     it does), and exits 0 if nothing stopped it
 *
 * scripts/reliability.sh runs every case in a fresh process in every build
 * (release, Debug, MR_DEBUG=3, ASan+UBSan, Valgrind memcheck) and sorts the
 * outcome: reported to the violation handler, found by the walker, reported
 * by a memory checker (ASan, UBSan, memcheck), stopped by a memres internal
 * check, or silent.  A case that a header promises to detect in a build and
 * that goes silent there fails the run.
 *
 * The promises are data (struct promise below): the builds the header names
 * and the header's own words, so that the runner can cite file:line and
 * notice when the words change.  Only a header's specific contract counts:
 *   all      every build ("in EVERY build, release included")
 *   debug    MR_DEBUG >= 1 ("debug builds")
 *   asan     AddressSanitizer builds
 *   valgrind a library built with MEMRES_VALGRIND=ON, run under memcheck
 *   walker   mr_<object>_check finds it, in every build
 *   safe     not a detection: the header promises a safe way out in every
 *            build (the call is ignored); the case checks that it was and
 *            prints "UNSAFE: ..." when not
 * Cases with no promise are in the catalogue to show what is caught anyway
 * (and what is not).
 *
 * Every case cleans up after its misuse where it can, so that a leak report
 * in an ASan build means a leak and not the case's own debris.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memres/memres.h"

enum {
    P_ALL = 1u << 0,
    P_DEBUG = 1u << 1,
    P_ASAN = 1u << 2,
    P_VALGRIND = 1u << 3,
    P_WALKER = 1u << 4,
    P_SAFE = 1u << 5,
};

/* A header's promise: the builds it names and a line of its text. */
struct promise {
    unsigned flags;
    const char *file; /* under include/memres/ */
    const char *text; /* words on one line of that file */
};

struct mcase {
    const char *name;
    void (*run)(void);
    const char *what;
    struct promise promise[3];
};

/* ---- what the cases share ---- */

static void on_violation(const char *what, const void *ptr, void *ctx)
{
    (void)ctx;
    printf("REPORTED: %s (%p)\n", what, ptr);
    fflush(stdout);
}

/* The walker the header names: a false result is a detection. */
static void walk(bool ok, const char *walker)
{
    if (!ok) {
        printf("WALKER: %s found the misuse\n", walker);
        fflush(stdout);
    }
}

static void *must(void *p, const char *what)
{
    if (p == NULL) {
        fprintf(stderr, "misuse: setup failed: %s\n", what);
        exit(3);
    }
    return p;
}

/* Reads and writes the compiler must keep. */
static volatile unsigned char sink;
static void touch_write(void *p, size_t n)
{
    volatile unsigned char *q = p;
    for (size_t i = 0; i < n; i++)
        q[i] = (unsigned char)i;
}
static void touch_read(const void *p, size_t n)
{
    const volatile unsigned char *q = p;
    for (size_t i = 0; i < n; i++)
        sink = (unsigned char)(sink + q[i]);
}

/* Memory no allocator handed out, with a zero "header" before it. */
static _Alignas(4096) unsigned char foreign[4096 + 131072];
#define FOREIGN ((void *)(foreign + 4096))

/* ---- objpool ---- */

static void objpool_double_free(void)
{
    mr_objpool *p = must(mr_objpool_create(40, 8, NULL), "objpool");
    void *a = must(mr_objpool_alloc(p), "alloc");
    void *keep = must(mr_objpool_alloc(p), "alloc");
    mr_objpool_free(p, a);
    mr_objpool_free(p, a);
    walk(mr_objpool_check(p), "mr_objpool_check");
    /* what follows: the same object handed out twice */
    void *x = mr_objpool_alloc(p), *y = mr_objpool_alloc(p);
    if (x != NULL && x == y)
        touch_write(y, 40);
    (void)keep;
    mr_objpool_destroy(p);
}

static void objpool_free_after_reset(void)
{
    mr_objpool *p = must(mr_objpool_create(40, 8, NULL), "objpool");
    void *a = must(mr_objpool_alloc(p), "alloc");
    mr_objpool_reset(p);
    mr_objpool_free(p, a);
    walk(mr_objpool_check(p), "mr_objpool_check");
    mr_objpool_destroy(p);
}

static void objpool_foreign_pointer(void)
{
    mr_objpool *p = must(mr_objpool_create(40, 8, NULL), "objpool");
    (void)must(mr_objpool_alloc(p), "alloc");
    mr_objpool_free(p, FOREIGN);
    walk(mr_objpool_check(p), "mr_objpool_check");
    mr_objpool_destroy(p);
}

static void objpool_other_pools_object(void)
{
    mr_objpool *p = must(mr_objpool_create(40, 8, NULL), "objpool");
    mr_objpool *q = must(mr_objpool_create(40, 8, NULL), "objpool");
    (void)must(mr_objpool_alloc(p), "alloc");
    void *b = must(mr_objpool_alloc(q), "alloc");
    mr_objpool_free(p, b);
    walk(mr_objpool_check(p), "mr_objpool_check");
    mr_objpool_destroy(p);
    mr_objpool_destroy(q);
}

static void objpool_write_after_free(void)
{
    mr_objpool *p = must(mr_objpool_create(40, 8, NULL), "objpool");
    void *a = must(mr_objpool_alloc(p), "alloc");
    (void)must(mr_objpool_alloc(p), "alloc");
    mr_objpool_free(p, a);
    touch_write((char *)a + 8, 32);
    mr_objpool_destroy(p);
}

static void objpool_read_after_free(void)
{
    mr_objpool *p = must(mr_objpool_create(40, 8, NULL), "objpool");
    void *a = must(mr_objpool_alloc(p), "alloc");
    (void)must(mr_objpool_alloc(p), "alloc");
    mr_objpool_free(p, a);
    touch_read((char *)a + 8, 32);
    mr_objpool_destroy(p);
}

static void objpool_write_after_reset(void)
{
    mr_objpool *p = must(mr_objpool_create(40, 8, NULL), "objpool");
    void *a = must(mr_objpool_alloc(p), "alloc");
    mr_objpool_reset(p);
    touch_write(a, 40);
    mr_objpool_destroy(p);
}

static void objpool_write_after_release(void)
{
    mr_objpool *p = must(mr_objpool_create(40, 8, NULL), "objpool");
    void *a = must(mr_objpool_alloc(p), "alloc");
    mr_objpool_release(p);
    touch_write(a, 40);
    mr_objpool_destroy(p);
}

static void objpool_resource_oversized_free(void)
{
    mr_objpool *p = must(mr_objpool_create(40, 8, NULL), "objpool");
    mr_resource *r = mr_objpool_resource(p);
    void *a = must(mr_allocate(r, 40, 8), "alloc");
    mr_deallocate(r, a, 4096, 8);
    walk(mr_objpool_check(p), "mr_objpool_check");
    mr_objpool_destroy(p);
}

/* ---- pools: pooled blocks ---- */

static void pools_double_free(void)
{
    mr_pools *p = must(mr_pools_create(NULL), "pools");
    void *a = must(mr_pools_alloc(p, 24, 8), "alloc");
    (void)must(mr_pools_alloc(p, 24, 8), "alloc");
    mr_pools_free(p, a, 24, 8);
    mr_pools_free(p, a, 24, 8);
    walk(mr_pools_check(p), "mr_pools_check");
    mr_pools_destroy(p);
}

static void pools_free_after_reset(void)
{
    mr_pools *p = must(mr_pools_create(NULL), "pools");
    void *a = must(mr_pools_alloc(p, 24, 8), "alloc");
    mr_pools_reset(p);
    mr_pools_free(p, a, 24, 8);
    walk(mr_pools_check(p), "mr_pools_check");
    mr_pools_destroy(p);
}

static void pools_foreign_pointer(void)
{
    mr_pools *p = must(mr_pools_create(NULL), "pools");
    (void)must(mr_pools_alloc(p, 24, 8), "alloc");
    mr_pools_free(p, FOREIGN, 24, 8);
    walk(mr_pools_check(p), "mr_pools_check");
    mr_pools_destroy(p);
}

/* malloc's memory freed into the pool: the next allocation returns it. */
static void pools_malloc_pointer(void)
{
    mr_pools *p = must(mr_pools_create(NULL), "pools");
    void *m = must(malloc(64), "malloc");
    (void)must(mr_pools_alloc(p, 24, 8), "alloc");
    mr_pools_free(p, m, 24, 8);
    walk(mr_pools_check(p), "mr_pools_check");
    void *x = mr_pools_alloc(p, 24, 8); /* m, unless the free was refused */
    if (x != NULL)
        touch_write(x, 24);
    mr_pools_destroy(p);
    free(m);
}

static void pools_other_pools_block(void)
{
    mr_pools *p = must(mr_pools_create(NULL), "pools");
    mr_pools *q = must(mr_pools_create(NULL), "pools");
    (void)must(mr_pools_alloc(p, 24, 8), "alloc");
    void *b = must(mr_pools_alloc(q, 24, 8), "alloc");
    mr_pools_free(p, b, 24, 8);
    walk(mr_pools_check(p), "mr_pools_check");
    mr_pools_destroy(p);
    mr_pools_destroy(q);
}

static void pools_free_larger_size(void)
{
    mr_pools *p = must(mr_pools_create(NULL), "pools");
    void *a = must(mr_pools_alloc(p, 24, 8), "alloc"); /* class 32 */
    void *b = must(mr_pools_alloc(p, 24, 8), "alloc"); /* its neighbour */
    mr_pools_free(p, a, 100, 8);                         /* class 112 */
    walk(mr_pools_check(p), "mr_pools_check");
    touch_write(b, 24); /* the neighbour is still the caller's */
    void *c = mr_pools_alloc(p, 100, 8); /* a again, 112 bytes over b */
    if (c != NULL)
        touch_write(c, 100);
    mr_pools_destroy(p);
}

static void pools_free_smaller_size(void)
{
    mr_pools *p = must(mr_pools_create(NULL), "pools");
    void *a = must(mr_pools_alloc(p, 100, 8), "alloc"); /* class 112 */
    mr_pools_free(p, a, 24, 8);                          /* class 32 */
    walk(mr_pools_check(p), "mr_pools_check");
    mr_pools_destroy(p);
}

static void pools_free_wrong_alignment(void)
{
    mr_pools *p = must(mr_pools_create(NULL), "pools");
    void *a = must(mr_pools_alloc(p, 24, 64), "alloc"); /* class 64 */
    mr_pools_free(p, a, 24, 8);                          /* class 32 */
    walk(mr_pools_check(p), "mr_pools_check");
    mr_pools_destroy(p);
}

static void pools_free_bad_alignment(void)
{
    mr_pools *p = must(mr_pools_create(NULL), "pools");
    void *a = must(mr_pools_alloc(p, 24, 8), "alloc");
    mr_pools_free(p, a, 24, 3);
    walk(mr_pools_check(p), "mr_pools_check");
    mr_pools_free(p, a, 24, 8);
    mr_pools_destroy(p);
}

static void pools_overflow_into_rounding(void)
{
    mr_pools *p = must(mr_pools_create(NULL), "pools");
    unsigned char *a = must(mr_pools_alloc(p, 20, 8), "alloc"); /* a 32-byte block */
    touch_write(a + 20, 12);
    mr_pools_free(p, a, 20, 8);
    mr_pools_destroy(p);
}

static void pools_write_after_free(void)
{
    mr_pools *p = must(mr_pools_create(NULL), "pools");
    void *a = must(mr_pools_alloc(p, 48, 8), "alloc");
    (void)must(mr_pools_alloc(p, 48, 8), "alloc");
    mr_pools_free(p, a, 48, 8);
    touch_write((char *)a + 8, 40);
    mr_pools_destroy(p);
}

static void pools_read_after_free(void)
{
    mr_pools *p = must(mr_pools_create(NULL), "pools");
    void *a = must(mr_pools_alloc(p, 48, 8), "alloc");
    (void)must(mr_pools_alloc(p, 48, 8), "alloc");
    mr_pools_free(p, a, 48, 8);
    touch_read((char *)a + 8, 40);
    mr_pools_destroy(p);
}

static void pools_write_after_reset(void)
{
    mr_pools *p = must(mr_pools_create(NULL), "pools");
    void *a = must(mr_pools_alloc(p, 48, 8), "alloc");
    mr_pools_reset(p);
    touch_write(a, 48);
    mr_pools_destroy(p);
}

/* ---- pools: direct blocks (above largest_required_pool_block) ---- */

#define DIRECT ((size_t)100000)

static void pools_direct_double_free(void)
{
    mr_pools *p = must(mr_pools_create(NULL), "pools");
    void *a = must(mr_pools_alloc(p, DIRECT, 8), "alloc");
    mr_pools_free(p, a, DIRECT, 8);
    mr_pools_free(p, a, DIRECT, 8);
    walk(mr_pools_check(p), "mr_pools_check");
    mr_pools_destroy(p);
}

static void pools_direct_wrong_size(void)
{
    mr_pools *p = must(mr_pools_create(NULL), "pools");
    void *a = must(mr_pools_alloc(p, DIRECT, 8), "alloc");
    mr_pools_free(p, a, DIRECT + 1000, 8);
    walk(mr_pools_check(p), "mr_pools_check");
    mr_pools_free(p, a, DIRECT, 8);
    mr_pools_destroy(p);
}

static void pools_direct_wrong_alignment(void)
{
    mr_pools *p = must(mr_pools_create(NULL), "pools");
    void *a = must(mr_pools_alloc(p, DIRECT, 16), "alloc");
    mr_pools_free(p, a, DIRECT, 8);
    walk(mr_pools_check(p), "mr_pools_check");
    mr_pools_free(p, a, DIRECT, 16);
    mr_pools_destroy(p);
}

static void pools_direct_foreign_pointer(void)
{
    mr_pools *p = must(mr_pools_create(NULL), "pools");
    memset(foreign, 0, sizeof foreign);
    mr_pools_free(p, FOREIGN, DIRECT, 8); /* the 32 bytes before it are zero */
    walk(mr_pools_check(p), "mr_pools_check");
    mr_pools_destroy(p);
}

/* A direct block freed with a pooled size: it goes on that class's list. */
static void pools_direct_freed_as_pooled(void)
{
    mr_pools *p = must(mr_pools_create(NULL), "pools");
    void *d = must(mr_pools_alloc(p, DIRECT, 8), "alloc");
    mr_pools_free(p, d, 200, 8);
    walk(mr_pools_check(p), "mr_pools_check");
    mr_pools_destroy(p); /* gives d back: still a direct block */
}

/* ---- arena ---- */

static void arena_write_after_rewind(void)
{
    mr_arena *a = must(mr_arena_create(NULL), "arena");
    (void)must(mr_arena_alloc(a, 32), "alloc");
    mr_arena_mark m = mr_arena_save(a);
    void *p = must(mr_arena_alloc(a, 64), "alloc");
    mr_arena_rewind(a, m);
    touch_write(p, 64);
    mr_arena_destroy(a);
}

static void arena_read_after_rewind(void)
{
    mr_arena *a = must(mr_arena_create(NULL), "arena");
    (void)must(mr_arena_alloc(a, 32), "alloc");
    mr_arena_mark m = mr_arena_save(a);
    void *p = must(mr_arena_alloc(a, 64), "alloc");
    memset(p, 1, 64);
    mr_arena_rewind(a, m);
    touch_read(p, 64);
    mr_arena_destroy(a);
}

static void arena_write_after_reset(void)
{
    mr_arena *a = must(mr_arena_create(NULL), "arena");
    void *p = must(mr_arena_alloc(a, 64), "alloc");
    mr_arena_reset(a);
    touch_write(p, 64);
    mr_arena_destroy(a);
}

static void arena_read_after_reset(void)
{
    mr_arena *a = must(mr_arena_create(NULL), "arena");
    void *p = must(mr_arena_alloc(a, 64), "alloc");
    memset(p, 1, 64);
    mr_arena_reset(a);
    touch_read(p, 64);
    mr_arena_destroy(a);
}

static void arena_write_after_release(void)
{
    mr_arena *a = must(mr_arena_create(NULL), "arena");
    void *p = must(mr_arena_alloc(a, 64), "alloc");
    mr_arena_release(a);
    touch_write(p, 64);
    mr_arena_destroy(a);
}

static void arena_buffer_write_after_reset(void)
{
    static _Alignas(16) unsigned char buf[4096];
    mr_arena_options o = {.upstream = mr_null_resource(), .buffer = buf, .buffer_size = sizeof buf};
    mr_arena *a = must(mr_arena_create(&o), "arena");
    void *p = must(mr_arena_alloc(a, 64), "alloc");
    mr_arena_reset(a);
    touch_write(p, 64);
    mr_arena_destroy(a);
}

/* realloc of an allocation made before a mark, then a rewind to the mark:
 * the object before the mark stays whole (the grown copy is an allocation
 * after the mark, freed whole by the rewind) */
static void arena_realloc_across_mark(void)
{
    mr_arena *a = must(mr_arena_create(NULL), "arena");
    unsigned char *buf = must(mr_arena_alloc(a, 16), "alloc");
    memset(buf, 'a', 16);
    mr_arena_mark m = mr_arena_save(a);
    (void)must(mr_arena_realloc(a, buf, 16, 64), "realloc");
    mr_arena_rewind(a, m);
    unsigned char *next = must(mr_arena_alloc(a, 48), "alloc");
    memset(next, 'z', 48);
    if (buf[15] != 'a' || (next < buf + 16 && next + 48 > buf)) {
        printf("UNSAFE: a rewind freed part of an object grown across the mark\n");
        fflush(stdout);
    }
    mr_arena_destroy(a);
}

/* the grown copy used after the rewind that freed it */
static void arena_realloc_copy_after_rewind(void)
{
    mr_arena *a = must(mr_arena_create(NULL), "arena");
    unsigned char *buf = must(mr_arena_alloc(a, 16), "alloc");
    mr_arena_mark m = mr_arena_save(a);
    unsigned char *grown = must(mr_arena_realloc(a, buf, 16, 64), "realloc");
    mr_arena_rewind(a, m); /* frees the copy, made after m */
    touch_write(grown + 32, 16);
    mr_arena_destroy(a);
}

static int cleanups_run;
static void count_cleanup(void *arg)
{
    (void)arg;
    cleanups_run++;
}

/* arena.h promises, in every build, that a rewind to a foreign, released or
 * stale mark changes nothing: the live allocation [live, live + n) must not
 * be handed out again. */
static void expect_ignored(mr_arena *a, const unsigned char *live, size_t n)
{
    const unsigned char *q = mr_arena_alloc(a, 16);
    if (q != NULL && q + 16 > live && q < live + n) {
        printf("UNSAFE: the rewind was not ignored: a live allocation is handed out again\n");
        fflush(stdout);
    }
}

static void arena_stale_mark_cleanups(void)
{
    mr_arena *a = must(mr_arena_create(NULL), "arena");
    (void)mr_arena_defer(a, count_cleanup, NULL);
    mr_arena_mark m1 = mr_arena_save(a);
    (void)mr_arena_defer(a, count_cleanup, NULL);
    mr_arena_mark m2 = mr_arena_save(a);
    mr_arena_rewind(a, m1); /* runs the second cleanup */
    mr_arena_rewind(a, m2); /* lies after m1: stale */
    walk(mr_arena_check(a), "mr_arena_check");
    if (cleanups_run != 1) {
        printf("UNSAFE: the stale rewind ran a cleanup registered before its mark\n");
        fflush(stdout);
    }
    mr_arena_destroy(a);
}

static void arena_stale_mark_large_blocks(void)
{
    mr_arena *a = must(mr_arena_create(NULL), "arena");
    unsigned char *big = must(mr_arena_alloc(a, 1 << 20), "alloc");
    mr_arena_mark m1 = mr_arena_save(a);
    (void)must(mr_arena_alloc(a, 1 << 20), "alloc");
    mr_arena_mark m2 = mr_arena_save(a);
    mr_arena_rewind(a, m1);
    mr_arena_rewind(a, m2); /* stale: one more large block than are in use */
    walk(mr_arena_check(a), "mr_arena_check");
    touch_write(big, 1 << 20); /* allocated before both marks: still live */
    mr_arena_destroy(a);
}

static void arena_stale_mark_spare_block(void)
{
    mr_arena_options o = {.block_size = 256, .max_block_size = 256};
    mr_arena *a = must(mr_arena_create(&o), "arena");
    (void)must(mr_arena_alloc(a, 16), "alloc");
    mr_arena_mark m1 = mr_arena_save(a);
    for (int i = 0; i < 64; i++) /* some blocks further on */
        (void)must(mr_arena_alloc(a, 64), "alloc");
    mr_arena_mark m2 = mr_arena_save(a);
    mr_arena_rewind(a, m1); /* m2's block is a spare now */
    mr_arena_rewind(a, m2);
    walk(mr_arena_check(a), "mr_arena_check");
    mr_arena_destroy(a);
}

static void arena_foreign_mark(void)
{
    mr_arena *a = must(mr_arena_create(NULL), "arena");
    mr_arena *b = must(mr_arena_create(NULL), "arena");
    mr_arena_mark mb = mr_arena_save(b);
    unsigned char *x = must(mr_arena_alloc(a, 64), "alloc");
    mr_arena_rewind(a, mb);
    walk(mr_arena_check(a), "mr_arena_check");
    expect_ignored(a, x, 64);
    mr_arena_destroy(a);
    mr_arena_destroy(b);
}

static void arena_mark_before_release(void)
{
    mr_arena *a = must(mr_arena_create(NULL), "arena");
    (void)must(mr_arena_alloc(a, 64), "alloc");
    mr_arena_mark m = mr_arena_save(a);
    mr_arena_release(a);
    unsigned char *x = must(mr_arena_alloc(a, 32), "alloc");
    mr_arena_rewind(a, m);
    walk(mr_arena_check(a), "mr_arena_check");
    expect_ignored(a, x, 32);
    mr_arena_destroy(a);
}

static void arena_mark_before_release_reused(void)
{
    /* as above, but the arena is past the mark's position again when it is
     * rewound to it (and the block's address is likely reused) */
    mr_arena *a = must(mr_arena_create(NULL), "arena");
    (void)must(mr_arena_alloc(a, 64), "alloc");
    mr_arena_mark m = mr_arena_save(a);
    mr_arena_release(a);
    unsigned char *x = must(mr_arena_alloc(a, 128), "alloc");
    mr_arena_rewind(a, m);
    walk(mr_arena_check(a), "mr_arena_check");
    expect_ignored(a, x, 128);
    mr_arena_destroy(a);
}

static void arena_mark_of_destroyed_arena(void)
{
    mr_arena *b = must(mr_arena_create(NULL), "arena");
    (void)must(mr_arena_alloc(b, 64), "alloc");
    mr_arena_mark mb = mr_arena_save(b);
    mr_arena_destroy(b);
    mr_arena *a = must(mr_arena_create(NULL), "arena"); /* likely at b's addresses */
    unsigned char *x = must(mr_arena_alloc(a, 128), "alloc");
    mr_arena_rewind(a, mb);
    walk(mr_arena_check(a), "mr_arena_check");
    expect_ignored(a, x, 128);
    mr_arena_destroy(a);
}

/* ---- blocks ---- */

static void blocks_double_put(void)
{
    mr_blocks *b = must(mr_blocks_create(NULL), "blocks");
    void *x = must(mr_blocks_get(b), "get");
    mr_blocks_put(b, x);
    mr_blocks_put(b, x);
    walk(mr_blocks_check(b), "mr_blocks_check");
    mr_blocks_destroy(b);
}

static void blocks_double_put_shared(void)
{
    mr_blocks *b = mr_blocks_shared();
    void *x = must(mr_blocks_get(b), "get");
    mr_blocks_put(b, x);
    mr_blocks_put(b, x);
    walk(mr_blocks_check(b), "mr_blocks_check");
}

static void blocks_misaligned_put(void)
{
    mr_blocks *b = must(mr_blocks_create(NULL), "blocks");
    unsigned char *x = must(mr_blocks_get(b), "get");
    mr_blocks_put(b, x + 64);
    walk(mr_blocks_check(b), "mr_blocks_check");
    mr_blocks_put(b, x);
    mr_blocks_destroy(b);
}

static void blocks_other_pools_block(void)
{
    mr_blocks *b = must(mr_blocks_create(NULL), "blocks");
    mr_blocks *c = must(mr_blocks_create(NULL), "blocks");
    void *x = must(mr_blocks_get(c), "get");
    mr_blocks_put(b, x);
    walk(mr_blocks_check(b), "mr_blocks_check");
    mr_blocks_destroy(b);
    mr_blocks_destroy(c);
}

static void blocks_write_after_put(void)
{
    mr_blocks *b = must(mr_blocks_create(NULL), "blocks");
    void *x = must(mr_blocks_get(b), "get");
    mr_blocks_put(b, x);
    touch_write((char *)x + 64, 64);
    mr_blocks_destroy(b);
}

static void blocks_write_after_put_shared(void)
{
    mr_blocks *b = mr_blocks_shared();
    void *x = must(mr_blocks_get(b), "get");
    mr_blocks_put(b, x);
    touch_write((char *)x + 64, 64);
}

static void blocks_leak_at_destroy(void)
{
    mr_blocks *b = must(mr_blocks_create(NULL), "blocks");
    (void)must(mr_blocks_get(b), "get");
    mr_blocks_destroy(b);
}

static void blocks_resource_foreign_free(void)
{
    mr_blocks *b = must(mr_blocks_create(NULL), "blocks");
    mr_deallocate(mr_blocks_resource(b), FOREIGN, 1 << 20, 16); /* above a block: "passed through" */
    walk(mr_blocks_check(b), "mr_blocks_check");
    mr_blocks_destroy(b);
}

/* ---- resources ---- */

static void deallocate_bad_alignment(void)
{
    mr_resource *r = mr_malloc_resource();
    void *p = must(mr_allocate(r, 16, 16), "alloc");
    mr_deallocate(r, p, 16, 24);
    mr_deallocate(r, p, 16, 16);
}

static void null_resource_foreign_free(void)
{
    mr_deallocate(mr_null_resource(), FOREIGN, 16, 16);
}

static void page_resource_impossible_size(void)
{
    mr_resource *r = mr_page_resource();
    void *p = must(mr_allocate(r, 4096, 4096), "alloc");
    mr_deallocate(r, p, SIZE_MAX, 4096);
    mr_deallocate(r, p, 4096, 4096);
}

/* ---- adaptors ---- */

static void tracking_double_free(void)
{
    mr_tracking *t = must(mr_tracking_create(NULL), "tracking");
    mr_resource *r = mr_tracking_resource(t);
    void *p = must(mr_allocate(r, 24, 8), "alloc");
    mr_deallocate(r, p, 24, 8);
    mr_deallocate(r, p, 24, 8);
    mr_tracking_destroy(t);
}

static void tracking_unknown_pointer(void)
{
    mr_tracking *t = must(mr_tracking_create(NULL), "tracking");
    mr_resource *r = mr_tracking_resource(t);
    void *p = must(mr_allocate(r, 24, 8), "alloc");
    mr_deallocate(r, FOREIGN, 24, 8);
    mr_deallocate(r, p, 24, 8);
    mr_tracking_destroy(t);
}

static void tracking_size_mismatch(void)
{
    mr_tracking *t = must(mr_tracking_create(NULL), "tracking");
    mr_resource *r = mr_tracking_resource(t);
    void *p = must(mr_allocate(r, 24, 8), "alloc");
    mr_deallocate(r, p, 32, 8);
    mr_deallocate(r, p, 24, 8);
    mr_tracking_destroy(t);
}

static void tracking_align_mismatch(void)
{
    mr_tracking *t = must(mr_tracking_create(NULL), "tracking");
    mr_resource *r = mr_tracking_resource(t);
    void *p = must(mr_allocate(r, 24, 16), "alloc");
    mr_deallocate(r, p, 24, 8);
    mr_deallocate(r, p, 24, 16);
    mr_tracking_destroy(t);
}

static void tracking_size_and_align_mismatch(void)
{
    mr_tracking *t = must(mr_tracking_create(NULL), "tracking");
    mr_resource *r = mr_tracking_resource(t);
    void *p = must(mr_allocate(r, 24, 16), "alloc");
    mr_deallocate(r, p, 48, 8);
    mr_deallocate(r, p, 24, 16);
    mr_tracking_destroy(t);
}

static void tracking_leak_at_destroy(void)
{
    mr_tracking *t = must(mr_tracking_create(NULL), "tracking");
    (void)must(mr_allocate(mr_tracking_resource(t), 24, 8), "alloc");
    mr_tracking_destroy(t); /* reports, then frees it */
}

static void tracking_arena_leak(void)
{
    /* the use the header suggests: a checker under an allocator, which is
     * then dropped without destroy (its blocks are "leaked") */
    mr_tracking *t = must(mr_tracking_create(NULL), "tracking");
    mr_arena_options o = {.upstream = mr_tracking_resource(t)};
    mr_arena *a = must(mr_arena_create(&o), "arena");
    (void)must(mr_arena_alloc(a, 64), "alloc");
    mr_tracking_destroy(t); /* reports the arena's header and block, frees them */
}

static void counting_over_free(void)
{
    mr_counting *c = must(mr_counting_create(NULL), "counting");
    mr_resource *r = mr_counting_resource(c);
    void *p = must(mr_allocate(r, 16, 16), "alloc");
    mr_deallocate(r, p, 64, 16); /* more than is outstanding */
    mr_deallocate(r, p, 16, 16);
    mr_counting_destroy(c);
}

static void counting_free_none_outstanding(void)
{
    mr_counting *c = must(mr_counting_create(NULL), "counting");
    mr_deallocate(mr_counting_resource(c), FOREIGN, 16, 16);
    mr_counting_destroy(c);
}

static void limiting_over_free(void)
{
    mr_limiting *l = must(mr_limiting_create(NULL, 1 << 20), "limiting");
    mr_resource *r = mr_limiting_resource(l);
    void *p = must(mr_allocate(r, 16, 16), "alloc");
    mr_deallocate(r, p, 64, 16);
    mr_deallocate(r, p, 16, 16);
    mr_limiting_destroy(l);
}

static void failing_over_free(void)
{
    mr_failing *f = must(mr_failing_create(NULL), "failing");
    mr_resource *r = mr_failing_resource(f);
    void *p = must(mr_allocate(r, 16, 16), "alloc");
    mr_deallocate(r, p, 64, 16);
    mr_deallocate(r, p, 16, 16);
    mr_failing_destroy(f);
}

/* ---- the tree of lifetimes ---- */

static void unsafe(bool bad, const char *what)
{
    if (bad) {
        printf("UNSAFE: %s\n", what);
        fflush(stdout);
    }
}

static mr_arena *child_of(mr_node *parent)
{
    return must(mr_arena_create(&(mr_arena_options){.parent = parent}), "child arena");
}

static void tree_dead_child_memory(void)
{
    mr_arena *root = must(mr_arena_create(NULL), "arena");
    mr_arena *child = child_of(mr_arena_node(root));
    unsigned char *p = must(mr_arena_alloc(child, 64), "alloc");
    mr_arena_destroy(root); /* and child with it */
    touch_write(p, 64);
}

static void tree_dead_handle_reset(void)
{
    mr_arena *root = must(mr_arena_create(NULL), "arena");
    mr_arena *child = child_of(mr_arena_node(root));
    mr_arena_destroy(child); /* kept by root: the header is memres's still */
    mr_arena_reset(child);
    unsafe(mr_node_first_child(mr_arena_node(root)) != NULL, "a dead child came back to life");
    mr_arena *again = child_of(mr_arena_node(root));
    unsafe(!mr_arena_check(again), "the reused child is corrupt");
    mr_arena_destroy(root);
}

static void tree_dead_handle_destroy(void)
{
    mr_arena *root = must(mr_arena_create(NULL), "arena");
    mr_arena *child = child_of(mr_arena_node(root));
    mr_arena_destroy(child);
    mr_arena_destroy(child); /* again */
    mr_arena *a = child_of(mr_arena_node(root)), *b = child_of(mr_arena_node(root));
    unsafe(a == b, "a child kept twice: two creates got the same arena");
    mr_arena_destroy(root);
}

static void tree_set_parent_cycle(void)
{
    mr_arena *root = must(mr_arena_create(NULL), "arena");
    mr_arena *child = child_of(mr_arena_node(root));
    mr_arena *grandchild = child_of(mr_arena_node(child));
    int rc = mr_node_set_parent(mr_arena_node(root), mr_arena_node(grandchild));
    unsafe(rc != -1 || mr_node_parent(mr_arena_node(root)) != NULL, "a cycle was made");
    mr_arena_destroy(root);
}

static mr_node *tree_unwinding;
static void make_child_in_cleanup(void *arg)
{
    mr_arena *c = mr_arena_create(&(mr_arena_options){.parent = tree_unwinding});
    unsafe(c != NULL, "a child was made under an arena whose cascade runs");
    *(bool *)arg = true;
}

static void tree_child_during_cascade(void)
{
    mr_arena *root = must(mr_arena_create(NULL), "arena");
    bool ran = false;
    tree_unwinding = mr_arena_node(root);
    (void)mr_arena_defer(root, make_child_in_cleanup, &ran);
    mr_arena_destroy(root);
    unsafe(!ran, "the cleanup did not run");
}

static mr_arena *tree_victim;
static void destroy_in_cleanup(void *arg)
{
    (void)arg;
    mr_arena_destroy(tree_victim);
}

static void tree_cleanup_destroys_parent(void)
{
    mr_arena *root = must(mr_arena_create(NULL), "arena");
    mr_arena *child = child_of(mr_arena_node(root));
    tree_victim = root;
    (void)mr_arena_defer(child, destroy_in_cleanup, NULL);
    mr_arena_reset(child); /* its cleanup destroys root, above it */
    unsafe(mr_node_parent(mr_arena_node(child)) != mr_arena_node(root) || !mr_arena_check(root),
           "the parent was destroyed under its child's cascade");
    mr_arena_destroy(root);
}

static void tree_destroy_shared_node(void)
{
    mr_node_destroy(mr_blocks_node(mr_blocks_shared()));
    void *b = mr_blocks_get(mr_blocks_shared());
    unsafe(b == NULL, "the shared block pool stopped working");
    mr_blocks_put(mr_blocks_shared(), b);
}

/* ---- the catalogue ---- */

/* The headers' words, one line each (the runner finds their line). */
#define OBJPOOL_WALKER {P_WALKER, "objpool.h", "object twice or one from elsewhere corrupts the pool (mr_objpool_check"}
#define OBJPOOL_FREE_CHECK {P_DEBUG, "objpool.h", "built without NDEBUG reports an object freed twice to the violation"}
#define OBJPOOL_AT_FREE {P_DEBUG, "objpool.h", "without NDEBUG also reports, at the free, a pointer the pool did not hand"}
#define OBJPOOL_UAF_AFTER {P_ASAN, "objpool.h", "finds it; ASan builds report the use after free that follows"}
#define OBJPOOL_POISON {P_ASAN | P_VALGRIND, "objpool.h", "poisons free objects: use after free or reset is reported."}
#define POOLS_WALKER {P_WALKER, "pools.h", "(mr_pools_check finds most of it; ASan builds report the use after free"}
#define POOLS_FREE_CHECK {P_DEBUG, "pools.h", "that follows); code built without NDEBUG reports a pooled block freed"}
#define POOLS_AT_FREE {P_DEBUG, "pools.h", "the free, a pointer the pool did not hand out and a size of another class"}
#define POOLS_UAF_AFTER {P_ASAN, "pools.h", "(mr_pools_check finds most of it; ASan builds report the use after free"}
#define POOLS_POISON {P_ASAN | P_VALGRIND, "pools.h", "its block: use after free or reset, and overflow into the class rounding,"}
#define ARENA_MARKS {P_DEBUG, "arena.h", "debug builds (MR_DEBUG >= 1) report these to the violation handler"}
#define ARENA_IGNORED {P_SAFE, "arena.h", "after an earlier rewind's target (a stale mark).  In every build a rewind"}
#define ARENA_MARK_BLOCK {P_DEBUG, "arena.h", "(resource.h) and also check that m's block is in use"}
#define ARENA_REALLOC {P_SAFE, "arena.h", "an object never straddles a mark: grown after a mark, the copy is an"}
#define CHECKED_MARKS {P_ASAN | P_VALGRIND, "config.h", "as it poisons it for ASan, so memcheck reports use after rewind, reset,"}
#define BLOCKS_DESTROY {P_DEBUG, "blocks.h", "been put back / deallocated first (checked in debug builds)"}
#define TRACKING_EVERY {P_ALL, "adaptors.h", "EVERY build, release included -- that is what the adaptor is for."}
#define TRACKING_LEAKS {P_ALL, "adaptors.h", "Reports every allocation still outstanding as a leak"}
#define ADAPTOR_OVERFREE {P_DEBUG, "adaptors.h", "outstanding, is misuse: reported in debug builds (mr_set_violation_handler)"}
#define TREE_DEBUG {P_DEBUG, "tree.h", "debug builds (MR_DEBUG >= 1) report each to the violation handler"}
#define TREE_SAFE {P_SAFE, "tree.h", "create and set_parent calls fail with EINVAL; the others are ignored;"}
#define TREE_ASAN {P_ASAN, "tree.h", "header was not reused; ASan builds report a use of a dead child's"}
#define TREE_SHARED {P_DEBUG | P_SAFE, "tree.h", "mr_blocks_shared()'s node is never destroyed (ignored,"}
#define NONE {0, NULL, NULL}

static const struct mcase cases[] = {
    {"objpool_double_free", objpool_double_free, "mr_objpool_free of the same object twice",
     {OBJPOOL_WALKER, OBJPOOL_UAF_AFTER, OBJPOOL_FREE_CHECK}},
    {"objpool_free_after_reset", objpool_free_after_reset, "mr_objpool_free of an object from before mr_objpool_reset",
     {OBJPOOL_POISON, NONE, NONE}},
    {"objpool_foreign_pointer", objpool_foreign_pointer, "mr_objpool_free of memory the pool never gave",
     {OBJPOOL_WALKER, OBJPOOL_AT_FREE, NONE}},
    {"objpool_other_pools_object", objpool_other_pools_object, "mr_objpool_free of another pool's object",
     {OBJPOOL_WALKER, OBJPOOL_AT_FREE, NONE}},
    {"objpool_write_after_free", objpool_write_after_free, "write to an object after mr_objpool_free",
     {OBJPOOL_POISON, NONE, NONE}},
    {"objpool_read_after_free", objpool_read_after_free, "read of an object after mr_objpool_free",
     {OBJPOOL_POISON, NONE, NONE}},
    {"objpool_write_after_reset", objpool_write_after_reset, "write to an object after mr_objpool_reset",
     {OBJPOOL_POISON, NONE, NONE}},
    {"objpool_write_after_release", objpool_write_after_release,
     "write to an object after mr_objpool_release (memory back upstream)", {NONE, NONE, NONE}},
    {"objpool_resource_oversized_free", objpool_resource_oversized_free,
     "resource deallocate with a size the pool never gives", {NONE, NONE, NONE}},

    {"pools_double_free", pools_double_free, "mr_pools_free of a pooled block twice",
     {POOLS_WALKER, POOLS_UAF_AFTER, POOLS_FREE_CHECK}},
    {"pools_free_after_reset", pools_free_after_reset, "mr_pools_free of a block from before mr_pools_reset",
     {POOLS_POISON, NONE, NONE}},
    {"pools_foreign_pointer", pools_foreign_pointer, "mr_pools_free of memory the pool never gave (pooled size)",
     {POOLS_WALKER, POOLS_AT_FREE, NONE}},
    {"pools_malloc_pointer", pools_malloc_pointer, "mr_pools_free of malloc's memory, then reuse",
     {POOLS_WALKER, POOLS_AT_FREE, NONE}},
    {"pools_other_pools_block", pools_other_pools_block, "mr_pools_free of another pool's block",
     {POOLS_WALKER, POOLS_AT_FREE, NONE}},
    {"pools_free_larger_size", pools_free_larger_size, "mr_pools_free with a larger size (another class), then reuse",
     {POOLS_WALKER, POOLS_AT_FREE, NONE}},
    {"pools_free_smaller_size", pools_free_smaller_size, "mr_pools_free with a smaller size (another class)",
     {POOLS_WALKER, POOLS_AT_FREE, NONE}},
    {"pools_free_wrong_alignment", pools_free_wrong_alignment, "mr_pools_free with a smaller alignment (another class)",
     {POOLS_WALKER, POOLS_AT_FREE, NONE}},
    {"pools_free_bad_alignment", pools_free_bad_alignment, "mr_pools_free with alignment 3", {NONE, NONE, NONE}},
    {"pools_overflow_into_rounding", pools_overflow_into_rounding,
     "write past the size asked for, into the class rounding", {POOLS_POISON, NONE, NONE}},
    {"pools_write_after_free", pools_write_after_free, "write to a block after mr_pools_free",
     {POOLS_POISON, NONE, NONE}},
    {"pools_read_after_free", pools_read_after_free, "read of a block after mr_pools_free",
     {POOLS_POISON, NONE, NONE}},
    {"pools_write_after_reset", pools_write_after_reset, "write to a block after mr_pools_reset",
     {POOLS_POISON, NONE, NONE}},
    {"pools_direct_double_free", pools_direct_double_free, "mr_pools_free of a direct block twice",
     {NONE, NONE, NONE}},
    {"pools_direct_wrong_size", pools_direct_wrong_size, "mr_pools_free of a direct block with the wrong size",
     {NONE, NONE, NONE}},
    {"pools_direct_wrong_alignment", pools_direct_wrong_alignment,
     "mr_pools_free of a direct block with the wrong alignment", {NONE, NONE, NONE}},
    {"pools_direct_foreign_pointer", pools_direct_foreign_pointer,
     "mr_pools_free of memory the pool never gave (direct size)", {POOLS_AT_FREE, NONE, NONE}},
    {"pools_direct_freed_as_pooled", pools_direct_freed_as_pooled, "mr_pools_free of a direct block with a pooled size",
     {POOLS_WALKER, POOLS_AT_FREE, NONE}},

    {"arena_write_after_rewind", arena_write_after_rewind, "write to arena memory after mr_arena_rewind",
     {CHECKED_MARKS, NONE, NONE}},
    {"arena_read_after_rewind", arena_read_after_rewind, "read of arena memory after mr_arena_rewind",
     {CHECKED_MARKS, NONE, NONE}},
    {"arena_write_after_reset", arena_write_after_reset, "write to arena memory after mr_arena_reset",
     {CHECKED_MARKS, NONE, NONE}},
    {"arena_read_after_reset", arena_read_after_reset, "read of arena memory after mr_arena_reset",
     {CHECKED_MARKS, NONE, NONE}},
    {"arena_buffer_write_after_reset", arena_buffer_write_after_reset,
     "write after mr_arena_reset, arena over a caller's buffer", {CHECKED_MARKS, NONE, NONE}},
    {"arena_write_after_release", arena_write_after_release,
     "write to arena memory after mr_arena_release (memory back upstream)", {NONE, NONE, NONE}},
    {"arena_realloc_across_mark", arena_realloc_across_mark,
     "realloc of an allocation made before a mark, then a rewind to the mark",
     {ARENA_REALLOC, NONE, NONE}},
    {"arena_realloc_copy_after_rewind", arena_realloc_copy_after_rewind,
     "write to a realloc's copy after a rewind to a mark saved before the realloc",
     {CHECKED_MARKS, NONE, NONE}},
    {"arena_stale_mark_cleanups", arena_stale_mark_cleanups, "rewind to a mark with more cleanups than are pending",
     {ARENA_MARKS, ARENA_IGNORED, NONE}},
    {"arena_stale_mark_large_blocks", arena_stale_mark_large_blocks,
     "rewind to a mark with more large blocks than are in use", {ARENA_MARKS, ARENA_IGNORED, NONE}},
    {"arena_stale_mark_spare_block", arena_stale_mark_spare_block,
     "rewind to a mark whose block an earlier rewind made a spare", {ARENA_MARK_BLOCK, NONE, NONE}},
    {"arena_foreign_mark", arena_foreign_mark, "rewind to another arena's mark", {ARENA_MARKS, ARENA_IGNORED, NONE}},
    {"arena_mark_before_release", arena_mark_before_release, "rewind to a mark from before mr_arena_release",
     {ARENA_MARKS, ARENA_IGNORED, NONE}},
    {"arena_mark_before_release_reused", arena_mark_before_release_reused,
     "rewind to a mark from before mr_arena_release, the arena past its position again",
     {ARENA_MARKS, ARENA_IGNORED, NONE}},
    {"arena_mark_of_destroyed_arena", arena_mark_of_destroyed_arena, "rewind to a mark of a destroyed arena",
     {ARENA_MARKS, ARENA_IGNORED, NONE}},

    {"blocks_double_put", blocks_double_put, "mr_blocks_put of the same block twice (private pool)",
     {NONE, NONE, NONE}},
    {"blocks_double_put_shared", blocks_double_put_shared, "mr_blocks_put of the same block twice (shared pool)",
     {NONE, NONE, NONE}},
    {"blocks_misaligned_put", blocks_misaligned_put, "mr_blocks_put of an address inside a block",
     {NONE, NONE, NONE}},
    {"blocks_other_pools_block", blocks_other_pools_block, "mr_blocks_put of another pool's block",
     {NONE, NONE, NONE}},
    {"blocks_write_after_put", blocks_write_after_put, "write to a block after mr_blocks_put (private pool)",
     {CHECKED_MARKS, NONE, NONE}},
    {"blocks_write_after_put_shared", blocks_write_after_put_shared,
     "write to a block after mr_blocks_put (shared pool)", {CHECKED_MARKS, NONE, NONE}},
    {"blocks_leak_at_destroy", blocks_leak_at_destroy, "mr_blocks_destroy with a block not put back",
     {BLOCKS_DESTROY, NONE, NONE}},
    {"blocks_resource_foreign_free", blocks_resource_foreign_free,
     "resource deallocate of a large request it never passed through", {NONE, NONE, NONE}},

    {"tree_dead_child_memory", tree_dead_child_memory, "write to a child arena's memory after its parent's destroy",
     {TREE_ASAN, NONE, NONE}},
    {"tree_dead_handle_reset", tree_dead_handle_reset, "mr_arena_reset of a child after its destroy",
     {TREE_DEBUG, TREE_SAFE, NONE}},
    {"tree_dead_handle_destroy", tree_dead_handle_destroy, "mr_arena_destroy of a child twice",
     {TREE_DEBUG, TREE_SAFE, NONE}},
    {"tree_set_parent_cycle", tree_set_parent_cycle, "mr_node_set_parent of a node under its grandchild",
     {TREE_DEBUG, TREE_SAFE, NONE}},
    {"tree_child_during_cascade", tree_child_during_cascade, "a cleanup makes a child of the arena being destroyed",
     {TREE_DEBUG, TREE_SAFE, NONE}},
    {"tree_cleanup_destroys_parent", tree_cleanup_destroys_parent,
     "a cleanup destroys its arena's parent while the arena resets", {TREE_DEBUG, TREE_SAFE, NONE}},
    {"tree_destroy_shared_node", tree_destroy_shared_node, "mr_node_destroy of mr_blocks_shared()'s node",
     {TREE_SHARED, NONE, NONE}},

    {"deallocate_bad_alignment", deallocate_bad_alignment, "mr_deallocate with alignment 24", {NONE, NONE, NONE}},
    {"null_resource_foreign_free", null_resource_foreign_free, "mr_deallocate of a pointer to mr_null_resource()",
     {NONE, NONE, NONE}},
    {"page_resource_impossible_size", page_resource_impossible_size,
     "mr_page_resource deallocate with size SIZE_MAX", {NONE, NONE, NONE}},

    {"tracking_double_free", tracking_double_free, "tracking: deallocate twice", {TRACKING_EVERY, NONE, NONE}},
    {"tracking_unknown_pointer", tracking_unknown_pointer, "tracking: deallocate of a pointer never allocated",
     {TRACKING_EVERY, NONE, NONE}},
    {"tracking_size_mismatch", tracking_size_mismatch, "tracking: deallocate with another size",
     {TRACKING_EVERY, NONE, NONE}},
    {"tracking_align_mismatch", tracking_align_mismatch, "tracking: deallocate with another alignment",
     {TRACKING_EVERY, NONE, NONE}},
    {"tracking_size_and_align_mismatch", tracking_size_and_align_mismatch,
     "tracking: deallocate with another size and alignment", {TRACKING_EVERY, NONE, NONE}},
    {"tracking_leak_at_destroy", tracking_leak_at_destroy, "tracking: destroy with an allocation outstanding",
     {TRACKING_LEAKS, NONE, NONE}},
    {"tracking_arena_leak", tracking_arena_leak, "tracking under an arena that is never destroyed",
     {TRACKING_LEAKS, NONE, NONE}},
    {"counting_over_free", counting_over_free, "counting: deallocate of more bytes than are outstanding",
     {ADAPTOR_OVERFREE, NONE, NONE}},
    {"counting_free_none_outstanding", counting_free_none_outstanding,
     "counting: deallocate with nothing outstanding", {ADAPTOR_OVERFREE, NONE, NONE}},
    {"limiting_over_free", limiting_over_free, "limiting: deallocate of more bytes than are outstanding",
     {ADAPTOR_OVERFREE, NONE, NONE}},
    {"failing_over_free", failing_over_free, "failing: deallocate of more bytes than are outstanding",
     {ADAPTOR_OVERFREE, NONE, NONE}},
};

#define NCASES (sizeof cases / sizeof cases[0])

static void print_flags(unsigned f)
{
    static const char *const names[] = {"all", "debug", "asan", "valgrind", "walker", "safe"};
    bool any = false;
    for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++)
        if (f & (1u << i)) {
            printf("%s%s", any ? "," : "", names[i]);
            any = true;
        }
    if (!any)
        printf("-");
}

/* One line a case, tab-separated: name, promised builds, description, then
 * for each promise "flags|file|text". */
static void list(void)
{
    for (size_t i = 0; i < NCASES; i++) {
        const struct mcase *c = &cases[i];
        unsigned all = 0;
        for (int j = 0; j < 3; j++)
            all |= c->promise[j].flags;
        printf("%s\t", c->name);
        print_flags(all);
        printf("\t%s", c->what);
        for (int j = 0; j < 3 && c->promise[j].file != NULL; j++) {
            printf("\t");
            print_flags(c->promise[j].flags);
            printf("|include/memres/%s|%s", c->promise[j].file, c->promise[j].text);
        }
        printf("\n");
    }
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--list") == 0) {
        list();
        return 0;
    }
    if (argc != 2) {
        fprintf(stderr, "usage: misuse --list | misuse CASE\n");
        return 2;
    }
    for (size_t i = 0; i < NCASES; i++) {
        if (strcmp(argv[1], cases[i].name) == 0) {
            mr_set_violation_handler(on_violation, NULL);
            cases[i].run();
            printf("DONE: %s\n", cases[i].name);
            return 0;
        }
    }
    fprintf(stderr, "misuse: no case '%s' (misuse --list)\n", argv[1]);
    return 2;
}
