/* SPDX-License-Identifier: MIT */
/* advise/tests/kat_stack.c -- known answer for memres-advise: strictly LIFO
 * temporaries in a recursive-descent evaluator.
 *
 *   kat_stack [malloc|memres] [N]            (default: malloc 2000)
 *
 * N arithmetic expressions (numbers, + - *, parentheses nested up to 10
 * deep) are generated from a seed and evaluated by a recursive-descent
 * parser, four times each.  Each call of parse_expr takes a scratch frame for its operands
 * from one line (KAT-SITE below, through the wrapper xmalloc) and frees it
 * before it returns: the frames die in exactly the reverse order of their
 * birth.  The answer is an arena with marks (arena-rewind).  The memres
 * variant saves a mark on entry, allocates the frame from one mr_arena and
 * rewinds to the mark on return.
 *
 * stdout: a checksum; stderr: "KAT-COUNT SITE n".  Exit 0.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memres/arena.h"

#define KAT_NAME "kat_stack"
#include "kat.h"

#define MAX_TERMS 6u

typedef struct frame {
    unsigned n, depth;
    uint64_t v[]; /* the operands of one sum */
} frame;

/* ---- the generator ---- */

typedef struct gen {
    char *buf;
    size_t len, cap;
    uint64_t seed;
} gen;

static void put(gen *g, char c)
{
    if (g->len + 1 < g->cap)
        g->buf[g->len++] = c;
}

static void gen_number(gen *g)
{
    unsigned v = (unsigned)(next_rand(&g->seed) % 10);
    put(g, (char)('0' + v % 10));
}

static void gen_expr(gen *g, int depth)
{
    unsigned terms = 1 + (unsigned)(next_rand(&g->seed) % (MAX_TERMS - 3));
    for (unsigned t = 0; t < terms; t++) {
        if (t > 0)
            put(g, next_rand(&g->seed) & 1 ? '+' : '-');
        unsigned factors = 1 + (unsigned)(next_rand(&g->seed) % 2);
        for (unsigned f = 0; f < factors; f++) {
            if (f > 0)
                put(g, '*');
            if (depth > 0 && next_rand(&g->seed) % 2 == 0) {
                put(g, '(');
                gen_expr(g, depth - 1);
                put(g, ')');
            } else {
                gen_number(g);
            }
        }
    }
}

/* ---- the evaluator ---- */

typedef struct parser {
    const char *p;
    mr_arena *arena; /* the memres variant */
} parser;

static uint64_t site_count;

static uint64_t parse_expr(parser *ps, unsigned depth);

static uint64_t parse_factor(parser *ps, unsigned depth)
{
    if (*ps->p == '(') {
        ps->p++;
        uint64_t v = parse_expr(ps, depth + 1);
        if (*ps->p == ')')
            ps->p++;
        return v;
    }
    uint64_t v = 0;
    while (*ps->p >= '0' && *ps->p <= '9')
        v = v * 10 + (uint64_t)(*ps->p++ - '0');
    return v;
}

static uint64_t parse_term(parser *ps, unsigned depth)
{
    uint64_t v = parse_factor(ps, depth);
    while (*ps->p == '*') {
        ps->p++;
        v *= parse_factor(ps, depth);
    }
    return v;
}

static uint64_t parse_expr(parser *ps, unsigned depth)
{
    /* the operands of this sum, in a frame that dies on return */
    size_t bytes = sizeof(frame) + (MAX_TERMS + depth % 4) * sizeof(uint64_t);
    frame *f;
    mr_arena_mark mark;
    if (ps->arena != NULL) {
        mark = mr_arena_save(ps->arena);
        f = mr_arena_alloc(ps->arena, bytes);
        if (f == NULL)
            abort();
    } else {
        f = xmalloc(bytes); /* KAT-SITE: arena-rewind */
        site_count++;
    }
    f->n = 0;
    f->depth = depth;
    uint64_t sign = 1;
    for (;;) {
        uint64_t t = parse_term(ps, depth);
        if (f->n < MAX_TERMS)
            f->v[f->n++] = sign * t;
        else
            f->v[MAX_TERMS - 1] += sign * t;
        if (*ps->p == '+')
            sign = 1;
        else if (*ps->p == '-')
            sign = (uint64_t)-1;
        else
            break;
        ps->p++;
    }
    uint64_t v = 0;
    for (unsigned i = 0; i < f->n; i++)
        v += f->v[i] * (i + 1 + f->depth);
    if (ps->arena != NULL)
        mr_arena_rewind(ps->arena, mark);
    else
        free(f);
    return v;
}

int main(int argc, char **argv)
{
    int memres = argc > 1 && strcmp(argv[1], "memres") == 0;
    long n = argc > 2 ? atol(argv[2]) : 2000;
    parser ps = {NULL, NULL};
    if (memres && (ps.arena = mr_arena_create(NULL)) == NULL) {
        fputs("kat_stack: mr_arena_create failed\n", stderr);
        return 1;
    }
    gen g = {NULL, 0, (size_t)1 << 20, 0x737461636bULL};
    if ((g.buf = malloc(g.cap)) == NULL)
        return 1;
    uint64_t sum = 0, chars = 0;
    for (long i = 0; i < n; i++) {
        g.len = 0;
        gen_expr(&g, 10);
        g.buf[g.len] = '\0';
        chars += g.len;
        for (int rep = 0; rep < 4; rep++) { /* evaluated four times: the parser dominates */
            ps.p = g.buf;
            sum = sum * 31 + parse_expr(&ps, 0);
        }
    }
    free(g.buf);
    mr_arena_destroy(ps.arena);
    printf("stack: %ld expressions, %" PRIu64 " characters\n", n, chars);
    printf("checksum %" PRIu64 "\n", sum);
    fprintf(stderr, "KAT-COUNT SITE %" PRIu64 "\n", site_count);
    return 0;
}
