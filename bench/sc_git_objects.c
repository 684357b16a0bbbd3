/* SPDX-License-Identifier: MIT */
/* bench/sc_git_objects.c -- scenario "git-objects": a git-like object store.
 *
 * git allocates its parsed objects (blob, tree, commit, tag structs) from
 * per-type slabs (alloc.c) and never frees one alone: the whole store goes
 * when the repository is closed.  The workload: N objects (2M; --quick 200k)
 * of four fixed sizes -- blob 40, tree 56, commit 72, tag 64 bytes -- mixed
 * about 50/35/14/1% by a seeded generator (one type sequence, the same for
 * every variant); each is touched when made (its header and its last word
 * written), then every object is read back (the checksum) and all are
 * dropped.  R rounds (5; --quick 1).
 *
 * Variants:
 *   malloc                      malloc per object, free per object (run under
 *                               every malloc peer);
 *   memres objpool (free)       one mr_objpool per type; every object given
 *                               back with mr_objpool_free (the free list
 *                               refills the next round);
 *   memres objpool (reset)      one mr_objpool per type; mr_objpool_reset per
 *                               round (git's model: drop the whole store;
 *                               blocks kept, no upstream call);
 *   memres arena                one mr_arena for all types; mr_arena_reset
 *                               per round.
 * Timing starts after the type sequence and the pointer array are made
 * (bench_timing_start); creating the pools or arena is timed.
 * requested_bytes is one round's objects x sizes; memres rows report their
 * peak bytes held from upstream, so the table shows held vs requested.
 */
#include <stdint.h>
#include <stdlib.h>

#include "bench.h"
#include "memres/memres.h"

enum { OBJ_BLOB, OBJ_TREE, OBJ_COMMIT, OBJ_TAG, OBJ_TYPES };

static const size_t obj_size[OBJ_TYPES] = {40, 56, 72, 64};

/* The common header every object starts with (git's struct object). */
typedef struct obj_head {
    uint32_t type;
    uint32_t flags;
    uint64_t id;
} obj_head;

typedef struct git_work {
    size_t n;                 /* objects per round */
    int rounds;
    uint8_t *types;           /* the type of object i, the same in every round */
    void **objs;              /* the live objects of this round */
    size_t count[OBJ_TYPES];
    size_t requested;         /* bytes per round: sum of object sizes */
} git_work;

static uint64_t git_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static int work_init(git_work *w, const bench_args *args)
{
    *w = (git_work){0};
    w->n = args->quick ? 200000 : 2000000;
    w->rounds = args->quick ? 1 : 5;
    w->types = malloc(w->n);
    w->objs = malloc(w->n * sizeof *w->objs);
    if (w->types == NULL || w->objs == NULL) {
        free(w->types);
        free(w->objs);
        return -1;
    }
    uint64_t seed = 0x617420676974ULL;
    for (size_t i = 0; i < w->n; i++) {
        unsigned r = (unsigned)(git_rand(&seed) % 100);
        uint8_t t = r < 50 ? OBJ_BLOB : r < 85 ? OBJ_TREE : r < 99 ? OBJ_COMMIT : OBJ_TAG;
        w->types[i] = t;
        w->count[t]++;
        w->requested += obj_size[t];
    }
    return 0;
}

static void work_fini(git_work *w)
{
    free(w->types);
    free(w->objs);
}

/* Writes object i: its header and its last word. */
static inline void obj_touch(void *p, uint8_t type, size_t i)
{
    obj_head *h = p;
    h->type = type;
    h->flags = 1u;
    h->id = (uint64_t)i * 0x9e3779b97f4a7c15ULL;
    uint64_t *words = p;
    words[obj_size[type] / 8 - 1] = h->id ^ (uint64_t)i;
}

/* Reads object i back. */
static inline uint64_t obj_read(const void *p, uint8_t type)
{
    const obj_head *h = p;
    const uint64_t *words = p;
    return h->type + h->flags + (h->id >> 32) + (words[obj_size[type] / 8 - 1] & 0xffff);
}

static int finish(const git_work *w, bench_out *out, uint64_t checksum, size_t upstream)
{
    bench_printf(out,
                 "git-objects: %zu objects x %d rounds (blob %zu, tree %zu, commit %zu, tag %zu), "
                 "%zu bytes per round, checksum %llu\n",
                 w->n, w->rounds, w->count[OBJ_BLOB], w->count[OBJ_TREE], w->count[OBJ_COMMIT],
                 w->count[OBJ_TAG], w->requested, (unsigned long long)checksum);
    out->checksum = checksum;
    out->requested_bytes = w->requested;
    out->upstream_bytes = upstream;
    return 0;
}

/* ---- malloc/free per object ---- */

static int run_malloc(const bench_args *args, bench_out *out)
{
    git_work w;
    if (work_init(&w, args) != 0)
        return 1;
    bench_timing_start();
    uint64_t sum = 0;
    for (int r = 0; r < w.rounds; r++) {
        for (size_t i = 0; i < w.n; i++) {
            void *p = malloc(obj_size[w.types[i]]);
            if (p == NULL) {
                for (size_t j = 0; j < i; j++)
                    free(w.objs[j]);
                work_fini(&w);
                return 1;
            }
            obj_touch(p, w.types[i], i);
            w.objs[i] = p;
        }
        for (size_t i = 0; i < w.n; i++) {
            sum += obj_read(w.objs[i], w.types[i]);
            free(w.objs[i]);
        }
    }
    int rc = finish(&w, out, sum, 0);
    work_fini(&w);
    return rc;
}

/* ---- one objpool per type ---- */

static int run_objpool(const bench_args *args, bench_out *out, bool reset)
{
    git_work w;
    if (work_init(&w, args) != 0)
        return 1;
    bench_timing_start();
    mr_objpool *pool[OBJ_TYPES] = {0};
    int rc = 1;
    for (int t = 0; t < OBJ_TYPES; t++)
        if ((pool[t] = mr_objpool_create(obj_size[t], 8, NULL)) == NULL)
            goto done;
    uint64_t sum = 0;
    for (int r = 0; r < w.rounds; r++) {
        for (size_t i = 0; i < w.n; i++) {
            void *p = mr_objpool_alloc(pool[w.types[i]]);
            if (p == NULL)
                goto done;
            obj_touch(p, w.types[i], i);
            w.objs[i] = p;
        }
        if (reset) {
            for (size_t i = 0; i < w.n; i++)
                sum += obj_read(w.objs[i], w.types[i]);
            for (int t = 0; t < OBJ_TYPES; t++)
                mr_objpool_reset(pool[t]);
        } else {
            for (size_t i = 0; i < w.n; i++) {
                sum += obj_read(w.objs[i], w.types[i]);
                mr_objpool_free(pool[w.types[i]], w.objs[i]);
            }
        }
    }
    size_t held = 0;
    for (int t = 0; t < OBJ_TYPES; t++) {
        mr_stats s;
        mr_objpool_stats(pool[t], &s);
        held += s.peak_held; /* every pool peaks at the end of a round: the sum is the peak */
    }
    rc = finish(&w, out, sum, held);
done:
    for (int t = 0; t < OBJ_TYPES; t++)
        mr_objpool_destroy(pool[t]);
    work_fini(&w);
    return rc;
}

static int run_objpool_free(const bench_args *args, bench_out *out) { return run_objpool(args, out, false); }
static int run_objpool_reset(const bench_args *args, bench_out *out) { return run_objpool(args, out, true); }

/* ---- one arena for every type ---- */

static int run_arena(const bench_args *args, bench_out *out)
{
    git_work w;
    if (work_init(&w, args) != 0)
        return 1;
    bench_timing_start();
    mr_arena *a = mr_arena_create(NULL);
    int rc = 1;
    if (a == NULL)
        goto done;
    uint64_t sum = 0;
    for (int r = 0; r < w.rounds; r++) {
        for (size_t i = 0; i < w.n; i++) {
            void *p = mr_arena_alloc(a, obj_size[w.types[i]]);
            if (p == NULL)
                goto done;
            obj_touch(p, w.types[i], i);
            w.objs[i] = p;
        }
        for (size_t i = 0; i < w.n; i++)
            sum += obj_read(w.objs[i], w.types[i]);
        mr_arena_reset(a);
    }
    mr_stats s;
    mr_arena_stats(a, &s);
    rc = finish(&w, out, sum, s.peak_held);
done:
    mr_arena_destroy(a);
    work_fini(&w);
    return rc;
}

const bench_variant bench_git_objects[] = {
    {"git-objects", "malloc", BENCH_MALLOC, false, NULL, run_malloc},
    {"git-objects", "memres objpool (free)", BENCH_MEMRES, false, NULL, run_objpool_free},
    {"git-objects", "memres objpool (reset)", BENCH_MEMRES, false, NULL, run_objpool_reset},
    {"git-objects", "memres arena", BENCH_MEMRES, false, NULL, run_arena},
    {NULL, NULL, BENCH_MEMRES, false, NULL, NULL},
};
