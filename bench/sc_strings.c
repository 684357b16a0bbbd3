/* SPDX-License-Identifier: MIT */
/* bench/sc_strings.c -- strings: copy 1M words, use them, drop them all;
 * repeated for several rounds.
 *
 * The input is generated once, untimed: WORDS words of 3..12 lowercase
 * letters from a fixed seed, in one buffer, plus an array for the copies.
 * Each round copies every word (the variant's strdup) into the array, reads
 * every copy (length, first and last byte; every byte in the first round),
 * and drops all the copies at once (the variant's way: free each, reset,
 * clear, free the context).
 *
 *   malloc         strdup / free per word
 *   memres arena   mr_arena_strdup; mr_arena_reset per round
 *   obstack        obstack_alloc + memcpy (obstack_copy0); obstack_free to
 *                  the first copy per round
 *   talloc         talloc_strdup under a per-round context; talloc_free of it
 *   apr pool       apr_pstrdup; apr_pool_clear per round
 *
 * checksum = sum of the copies' lengths over all rounds + a hash of the
 * words (FNV-1a of every byte in round 1, of length and end bytes after).
 */
#include <inttypes.h>
#include <obstack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memres/arena.h"
#ifdef BENCH_HAVE_APR
#  include <apr_general.h>
#  include <apr_pools.h>
#  include <apr_strings.h>
#endif
#ifdef BENCH_HAVE_TALLOC
#  include <talloc.h>
#endif

#include "bench.h"

#define STR_WORDS ((size_t)1000000)
#define STR_WORDS_QUICK ((size_t)50000)
#define STR_ROUNDS 10
#define STR_ROUNDS_QUICK 2

typedef struct str_input {
    char *text;     /* the words, each NUL-terminated */
    char **src;     /* src[i]: word i in text */
    char **copy;    /* copy[i]: the variant's copy of word i */
    size_t n;
    size_t bytes;   /* sum of (length + 1): what one round asks for */
    int rounds;
    uint64_t lengths, hash;
} str_input;

static uint64_t str_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static void str_free(str_input *in)
{
    free(in->text);
    free(in->src);
    free(in->copy);
}

/* Generates the words and then starts the clock. */
static int str_setup(const bench_args *args, str_input *in)
{
    memset(in, 0, sizeof *in);
    in->n = args->quick ? STR_WORDS_QUICK : STR_WORDS;
    in->rounds = args->quick ? STR_ROUNDS_QUICK : STR_ROUNDS;
    in->text = malloc(in->n * 13);
    in->src = malloc(in->n * sizeof *in->src);
    in->copy = malloc(in->n * sizeof *in->copy);
    if (!in->text || !in->src || !in->copy) {
        str_free(in);
        fputs("strings: out of memory in setup\n", stderr);
        return -1;
    }
    uint64_t seed = 0x5eed0001;
    char *p = in->text;
    for (size_t i = 0; i < in->n; i++) {
        uint64_t r = str_next(&seed);
        size_t len = 3 + (size_t)(r % 10);
        r /= 10;
        in->src[i] = p;
        for (size_t k = 0; k < len; k++) {
            if (k % 12 == 11)
                r = str_next(&seed);
            *p++ = (char)('a' + (int)(r % 26));
            r /= 26;
        }
        *p++ = '\0';
        in->bytes += len + 1;
    }
    in->hash = 0xcbf29ce484222325u;
    bench_timing_start();
    return 0;
}

/* Reads every copy: the use of the strings, identical for every variant. */
static void str_use(str_input *in, int round)
{
    uint64_t h = in->hash, sum = 0;
    for (size_t i = 0; i < in->n; i++) {
        const unsigned char *s = (const unsigned char *)in->copy[i];
        size_t len = strlen((const char *)s);
        sum += len;
        if (round == 0) {
            for (size_t k = 0; k < len; k++)
                h = (h ^ s[k]) * 0x100000001b3u;
        } else {
            h = (h ^ (len | (uint64_t)s[0] << 8 | (uint64_t)s[len - 1] << 16)) * 0x100000001b3u;
        }
    }
    in->hash = h;
    in->lengths += sum;
}

static int str_finish(str_input *in, bench_out *out)
{
    out->checksum = in->lengths + in->hash;
    out->requested_bytes = in->bytes;
    bench_printf(out, "%zu words x %d rounds, %zu bytes per round, lengths %" PRIu64 ", hash %016" PRIx64 "\n",
                 in->n, in->rounds, in->bytes, in->lengths, in->hash);
    str_free(in);
    return 0;
}

static int str_oom(str_input *in, const char *who)
{
    fprintf(stderr, "strings: %s: out of memory\n", who);
    str_free(in);
    return -1;
}

/* ---- malloc: strdup / free ---- */

static int run_malloc(const bench_args *args, bench_out *out)
{
    str_input in;
    if (str_setup(args, &in))
        return -1;
    for (int r = 0; r < in.rounds; r++) {
        for (size_t i = 0; i < in.n; i++)
            if ((in.copy[i] = strdup(in.src[i])) == NULL)
                return str_oom(&in, "strdup");
        str_use(&in, r);
        for (size_t i = 0; i < in.n; i++)
            free(in.copy[i]);
    }
    return str_finish(&in, out);
}

/* ---- memres arena ---- */

static int run_arena(const bench_args *args, bench_out *out)
{
    str_input in;
    if (str_setup(args, &in))
        return -1;
    mr_arena *a = mr_arena_create(NULL);
    if (a == NULL)
        return str_oom(&in, "mr_arena_create");
    for (int r = 0; r < in.rounds; r++) {
        for (size_t i = 0; i < in.n; i++)
            if ((in.copy[i] = mr_arena_strdup(a, in.src[i])) == NULL) {
                mr_arena_destroy(a);
                return str_oom(&in, "mr_arena_strdup");
            }
        str_use(&in, r);
        mr_arena_reset(a);
    }
    mr_stats st;
    mr_arena_stats(a, &st);
    out->upstream_bytes = st.peak_held;
    mr_arena_destroy(a);
    return str_finish(&in, out);
}

/* ---- GNU obstack ---- */

#define obstack_chunk_alloc malloc
#define obstack_chunk_free free

static int run_obstack(const bench_args *args, bench_out *out)
{
    str_input in;
    if (str_setup(args, &in))
        return -1;
    struct obstack ob;
    obstack_init(&ob); /* failure calls obstack_alloc_failed_handler (exits) */
    for (int r = 0; r < in.rounds; r++) {
        for (size_t i = 0; i < in.n; i++) {
            /* obstack_copy0, spelled out: its macro trips -Wsign-conversion
             * (glibc obstack sizes are int). */
            const char *s = in.src[i];
            size_t len = strlen(s);
            char *c = obstack_alloc(&ob, (int)(len + 1));
            memcpy(c, s, len + 1);
            in.copy[i] = c;
        }
        str_use(&in, r);
        obstack_free(&ob, in.copy[0]);
    }
    obstack_free(&ob, NULL);
    return str_finish(&in, out);
}

/* ---- talloc ---- */

#ifdef BENCH_HAVE_TALLOC
static int run_talloc(const bench_args *args, bench_out *out)
{
    str_input in;
    if (str_setup(args, &in))
        return -1;
    for (int r = 0; r < in.rounds; r++) {
        TALLOC_CTX *ctx = talloc_new(NULL);
        if (ctx == NULL)
            return str_oom(&in, "talloc_new");
        for (size_t i = 0; i < in.n; i++)
            if ((in.copy[i] = talloc_strdup(ctx, in.src[i])) == NULL) {
                talloc_free(ctx);
                return str_oom(&in, "talloc_strdup");
            }
        str_use(&in, r);
        talloc_free(ctx);
    }
    return str_finish(&in, out);
}
#else
#  define run_talloc NULL
#endif

/* ---- APR pool ---- */

#ifdef BENCH_HAVE_APR
static int run_apr(const bench_args *args, bench_out *out)
{
    str_input in;
    if (str_setup(args, &in))
        return -1;
    apr_pool_t *pool;
    if (apr_initialize() != APR_SUCCESS)
        return str_oom(&in, "apr_initialize");
    if (apr_pool_create_unmanaged_ex(&pool, NULL, NULL) != APR_SUCCESS) {
        apr_terminate();
        return str_oom(&in, "apr_pool_create");
    }
    for (int r = 0; r < in.rounds; r++) {
        for (size_t i = 0; i < in.n; i++)
            if ((in.copy[i] = apr_pstrdup(pool, in.src[i])) == NULL) {
                apr_pool_destroy(pool);
                apr_terminate();
                return str_oom(&in, "apr_pstrdup");
            }
        str_use(&in, r);
        apr_pool_clear(pool);
    }
    apr_pool_destroy(pool);
    apr_terminate();
    return str_finish(&in, out);
}
#else
#  define run_apr NULL
#endif

#define SV(name, kind, unavailable, run) { "strings", name, kind, false, unavailable, run }

const bench_variant bench_strings[] = {
    SV("malloc", BENCH_MALLOC, NULL, run_malloc),
    SV("memres arena", BENCH_MEMRES, NULL, run_arena),
    SV("obstack", BENCH_PEER, NULL, run_obstack),
    SV("talloc", BENCH_PEER, bench_talloc_unavailable, run_talloc),
    SV("apr pool", BENCH_PEER, bench_apr_unavailable, run_apr),
    { 0 },
};
