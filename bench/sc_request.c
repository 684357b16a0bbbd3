/* SPDX-License-Identifier: MIT */
/* bench/sc_request.c -- request: a server-style loop.
 *
 * Each request makes 50..500 allocations of 16 B..4 KiB (log-uniform: an
 * octave 16 << e, e = 0..7, then uniform inside it), writes the first 8 bytes
 * and the last byte of each, reads them all back (the "response"), and frees
 * everything at the end of the request.  The sequence comes from a fixed seed,
 * so every variant makes exactly the same requests.
 *
 *   malloc         malloc / free each
 *   memres arena   mr_arena_alloc; mr_arena_reset per request
 *   memres pools   mr_pools_alloc / mr_pools_free each (sized free)
 *   apr pool       apr_palloc; apr_pool_clear per request
 *   talloc         talloc_size under a per-request context; talloc_free of it
 *   obstack        obstack_alloc; obstack_free to the request's first block
 *
 * checksum = sum over all blocks of the tag written + the last byte.
 */
#include <inttypes.h>
#include <obstack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memres/arena.h"
#include "memres/pools.h"
#ifdef BENCH_HAVE_APR
#  include <apr_general.h>
#  include <apr_pools.h>
#endif
#ifdef BENCH_HAVE_TALLOC
#  include <talloc.h>
#endif

#include "bench.h"

#define RQ_REQUESTS 200000
#define RQ_REQUESTS_QUICK 2000
#define RQ_MAX_ALLOCS 500

typedef struct rq_state {
    uint64_t seed;
    int requests;
    uint64_t sum;          /* the checksum */
    uint64_t allocations;
    uint64_t bytes;        /* all requests together */
    size_t peak_request;   /* the biggest request's bytes */
    /* the current request */
    int n;
    void *ptr[RQ_MAX_ALLOCS];
    size_t size[RQ_MAX_ALLOCS];
} rq_state;

static inline uint64_t rq_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static void rq_init(rq_state *st, const bench_args *args)
{
    memset(st, 0, sizeof *st);
    st->seed = 0x5eed0002;
    st->requests = args->quick ? RQ_REQUESTS_QUICK : RQ_REQUESTS;
}

/* Starts request i: how many allocations it makes. */
static inline int rq_begin(rq_state *st)
{
    st->n = 50 + (int)(rq_next(&st->seed) % 451);
    return st->n;
}

static inline size_t rq_size(rq_state *st)
{
    uint64_t r = rq_next(&st->seed);
    size_t base = (size_t)16 << (r & 7);
    return base + (size_t)((r >> 3) % base);
}

/* Writes block j of request i and remembers it. */
static inline void rq_fill(rq_state *st, int i, int j, void *p, size_t size)
{
    uint64_t tag = (uint64_t)i * 1000 + (uint64_t)j;
    memcpy(p, &tag, sizeof tag);
    ((unsigned char *)p)[size - 1] = (unsigned char)j;
    st->ptr[j] = p;
    st->size[j] = size;
}

/* The response: reads every block back. */
static inline void rq_use(rq_state *st)
{
    uint64_t sum = 0;
    size_t bytes = 0;
    for (int j = 0; j < st->n; j++) {
        uint64_t tag;
        memcpy(&tag, st->ptr[j], sizeof tag);
        sum += tag + ((unsigned char *)st->ptr[j])[st->size[j] - 1];
        bytes += st->size[j];
    }
    st->sum += sum;
    st->allocations += (uint64_t)st->n;
    st->bytes += bytes;
    if (bytes > st->peak_request)
        st->peak_request = bytes;
}

static int rq_finish(rq_state *st, bench_out *out)
{
    out->checksum = st->sum;
    out->requested_bytes = st->peak_request;
    bench_printf(out, "%d requests, %" PRIu64 " allocations, %" PRIu64 " bytes, checksum %016" PRIx64 "\n",
                 st->requests, st->allocations, st->bytes, st->sum);
    return 0;
}

static int rq_oom(const char *who)
{
    fprintf(stderr, "request: %s: out of memory\n", who);
    return -1;
}

/* RQ_LOOP(ALLOC(size), FREE_EACH(p, size), END_REQUEST): the same loop for
 * every variant.  ALLOC may give NULL (the run fails). */
#define RQ_LOOP(st, ALLOC, FREE_EACH, END_REQUEST, ON_OOM)                              \
    for (int i = 0; i < (st)->requests; i++) {                                          \
        int n = rq_begin(st);                                                           \
        for (int j = 0; j < n; j++) {                                                   \
            size_t size = rq_size(st);                                                  \
            void *p = ALLOC(size);                                                      \
            if (p == NULL) {                                                            \
                ON_OOM;                                                                 \
            }                                                                           \
            rq_fill(st, i, j, p, size);                                                 \
        }                                                                               \
        rq_use(st);                                                                     \
        for (int j = 0; j < n; j++) {                                                   \
            FREE_EACH((st)->ptr[j], (st)->size[j]);                                     \
        }                                                                               \
        END_REQUEST;                                                                    \
    }

#define RQ_NOTHING(p, size) ((void)(p), (void)(size))

/* ---- malloc / free ---- */

static int run_malloc(const bench_args *args, bench_out *out)
{
    static rq_state st;
    rq_init(&st, args);
#define MALLOC_FREE(p, size) free(p)
    RQ_LOOP(&st, malloc, MALLOC_FREE, (void)0, return rq_oom("malloc"))
    return rq_finish(&st, out);
}

/* ---- memres arena, reset per request ---- */

static int run_arena(const bench_args *args, bench_out *out)
{
    static rq_state st;
    rq_init(&st, args);
    mr_arena *a = mr_arena_create(NULL);
    if (a == NULL)
        return rq_oom("mr_arena_create");
#define ARENA_ALLOC(size) mr_arena_alloc(a, size)
    RQ_LOOP(&st, ARENA_ALLOC, RQ_NOTHING, mr_arena_reset(a), mr_arena_destroy(a); return rq_oom("mr_arena_alloc"))
    mr_stats ms;
    mr_arena_stats(a, &ms);
    out->upstream_bytes = ms.peak_held;
    mr_arena_destroy(a);
    return rq_finish(&st, out);
}

/* ---- memres pools, sized free of each block ---- */

static int run_pools(const bench_args *args, bench_out *out)
{
    static rq_state st;
    rq_init(&st, args);
    mr_pools_options o;
    memset(&o, 0, sizeof o);
    mr_pools *pools = mr_pools_create(&o);
    if (pools == NULL)
        return rq_oom("mr_pools_create");
#define POOLS_ALLOC(size) mr_pools_alloc(pools, size, MR_ARENA_ALIGN)
#define POOLS_FREE(q, size) mr_pools_free(pools, q, size, MR_ARENA_ALIGN)
    RQ_LOOP(&st, POOLS_ALLOC, POOLS_FREE, (void)0, mr_pools_destroy(pools); return rq_oom("mr_pools_alloc"))
    mr_stats ms;
    mr_pools_stats(pools, &ms);
    out->upstream_bytes = ms.peak_held;
    mr_pools_destroy(pools);
    return rq_finish(&st, out);
}

/* ---- APR pool, cleared per request ---- */

#ifdef BENCH_HAVE_APR
static int run_apr(const bench_args *args, bench_out *out)
{
    static rq_state st;
    rq_init(&st, args);
    apr_pool_t *pool;
    if (apr_initialize() != APR_SUCCESS)
        return rq_oom("apr_initialize");
    if (apr_pool_create_unmanaged_ex(&pool, NULL, NULL) != APR_SUCCESS) {
        apr_terminate();
        return rq_oom("apr_pool_create");
    }
#  define APR_ALLOC(size) apr_palloc(pool, size)
    RQ_LOOP(&st, APR_ALLOC, RQ_NOTHING, apr_pool_clear(pool), apr_pool_destroy(pool); apr_terminate();
            return rq_oom("apr_palloc"))
    apr_pool_destroy(pool);
    apr_terminate();
    return rq_finish(&st, out);
}
#else
#  define run_apr NULL
#endif

/* ---- talloc, a context per request ---- */

#ifdef BENCH_HAVE_TALLOC
static int run_talloc(const bench_args *args, bench_out *out)
{
    static rq_state st;
    rq_init(&st, args);
    TALLOC_CTX *ctx = talloc_new(NULL);
#  define TALLOC_ALLOC(size) (ctx != NULL ? talloc_size(ctx, size) : NULL)
#  define TALLOC_END (talloc_free(ctx), ctx = talloc_new(NULL))
    RQ_LOOP(&st, TALLOC_ALLOC, RQ_NOTHING, TALLOC_END, talloc_free(ctx); return rq_oom("talloc"))
    talloc_free(ctx);
    return rq_finish(&st, out);
}
#else
#  define run_talloc NULL
#endif

/* ---- GNU obstack, freed to the request's first block ---- */

#define obstack_chunk_alloc malloc
#define obstack_chunk_free free

static int run_obstack(const bench_args *args, bench_out *out)
{
    static rq_state st;
    rq_init(&st, args);
    struct obstack ob;
    obstack_init(&ob); /* failure calls obstack_alloc_failed_handler (exits) */
#define OBSTACK_ALLOC(size) obstack_alloc(&ob, (int)(size)) /* glibc obstack sizes are int */
    RQ_LOOP(&st, OBSTACK_ALLOC, RQ_NOTHING, obstack_free(&ob, st.ptr[0]), return rq_oom("obstack_alloc"))
    obstack_free(&ob, NULL);
    return rq_finish(&st, out);
}

#define RV(name, kind, unavailable, run) { "request", name, kind, false, unavailable, run }

const bench_variant bench_request[] = {
    RV("malloc", BENCH_MALLOC, NULL, run_malloc),
    RV("memres arena", BENCH_MEMRES, NULL, run_arena),
    RV("memres pools", BENCH_MEMRES, NULL, run_pools),
    RV("apr pool", BENCH_PEER, bench_apr_unavailable, run_apr),
    RV("talloc", BENCH_PEER, bench_talloc_unavailable, run_talloc),
    RV("obstack", BENCH_PEER, NULL, run_obstack),
    { 0 },
};
