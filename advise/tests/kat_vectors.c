/* SPDX-License-Identifier: MIT */
/* advise/tests/kat_vectors.c -- known answer for memres-advise: growable
 * arrays (vectors) grown by realloc, built side by side and freed together.
 *
 *   kat_vectors [malloc|memres] [ROUNDS]        (default: malloc 400)
 *
 * Each round makes 8192 vectors of 8-byte items, as an interpreter's lists
 * or a parser's child arrays: each starts at 4 items (32 bytes) from one
 * line (KAT-SITE below) through the wrapper xmalloc and grows by realloc
 * to cap + cap / 2 + 4 items when full, as CPython's lists and most C
 * vectors do.  Items are pushed to vectors picked at random (most lists
 * short, a few long: up to 160 items), so the growths of many vectors
 * interleave and a realloc that moves leaves its old copy among live
 * vectors.  The round then reads every vector and frees them all, in
 * order: the vectors die together.
 *
 * Freed together is an arena's pattern, but an arena keeps every copy a
 * realloc moved away from until its reset: this site's arena would hold
 * about twice what the vectors hold at their peak.  Size-class pools hand
 * the abandoned copies to the next vector that grows into their class and
 * hold about what the vectors hold: the answer is pools.  The memres
 * variant takes the vectors from one mr_pools (mr_pools_realloc).
 *
 * stdout: a checksum; stderr: "KAT-COUNT SITE n".  Exit 0.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memres/pools.h"

#define KAT_NAME "kat_vectors"
#include "kat.h"

#define VECTORS 8192u
#define PUSHES (VECTORS * 24u) /* items per round: 24 a vector on average */
#define MAX_ITEMS 160u

typedef struct vec {
    uint64_t *item;
    uint32_t len, cap;
} vec;

static uint64_t site_count;

void *xrealloc(void *p, size_t n);

__attribute__((noinline)) void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n);
    if (q == NULL) {
        fputs(KAT_NAME ": out of memory\n", stderr);
        abort();
    }
    return q;
}

static void vec_init(mr_pools *ps, vec *v)
{
    v->len = 0;
    v->cap = 4;
    if (ps != NULL) {
        v->item = mr_pools_alloc(ps, 4 * sizeof(uint64_t), 8);
        if (v->item == NULL)
            abort();
    } else {
        v->item = xmalloc(4 * sizeof(uint64_t)); /* KAT-SITE: pools */
        site_count++;
    }
}

static void vec_push(mr_pools *ps, vec *v, uint64_t x)
{
    if (v->len == v->cap) {
        uint32_t cap = v->cap + v->cap / 2 + 4;
        if (ps != NULL) {
            v->item = mr_pools_realloc(ps, v->item, v->cap * sizeof(uint64_t), cap * sizeof(uint64_t), 8);
            if (v->item == NULL)
                abort();
        } else {
            v->item = xrealloc(v->item, cap * sizeof(uint64_t));
        }
        v->cap = cap;
    }
    v->item[v->len++] = x;
}

static uint64_t vec_drop(mr_pools *ps, vec *v)
{
    uint64_t s = v->len;
    for (uint32_t i = 0; i < v->len; i++)
        s += v->item[i] * (i + 1);
    if (ps != NULL)
        mr_pools_free(ps, v->item, v->cap * sizeof(uint64_t), 8);
    else
        free(v->item);
    v->item = NULL;
    return s;
}

int main(int argc, char **argv)
{
    int memres = argc > 1 && strcmp(argv[1], "memres") == 0;
    long rounds = argc > 2 ? atol(argv[2]) : 400;
    mr_pools *ps = NULL;
    if (memres && (ps = mr_pools_create(NULL)) == NULL) {
        fputs("kat_vectors: mr_pools_create failed\n", stderr);
        return 1;
    }
    vec *v = calloc(VECTORS, sizeof *v);
    if (v == NULL)
        return 1;
    uint64_t seed = 0x766563746f7273ULL, sum = 0, items = 0;
    for (long r = 0; r < rounds; r++) {
        for (uint32_t i = 0; i < VECTORS; i++)
            vec_init(ps, &v[i]);
        for (uint32_t k = 0; k < PUSHES; k++) {
            uint64_t x = next_rand(&seed);
            /* a few long vectors, most short: the low indexes draw the most */
            uint32_t i = (uint32_t)((x >> 40) % (1 + (x >> 8) % VECTORS));
            if (v[i].len < MAX_ITEMS) {
                vec_push(ps, &v[i], x & 0xffffu);
                items++;
            }
        }
        for (uint32_t i = 0; i < VECTORS; i++)
            sum += vec_drop(ps, &v[i]);
    }
    free(v);
    mr_pools_destroy(ps);
    printf("vectors: %ld rounds, %" PRIu64 " items\n", rounds, items);
    printf("checksum %" PRIu64 "\n", sum);
    fprintf(stderr, "KAT-COUNT SITE %" PRIu64 "\n", site_count);
    return 0;
}
