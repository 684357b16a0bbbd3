/* SPDX-License-Identifier: MIT */
/* advise/tests/kat_trees.c -- known answer for memres-advise: binary-trees.
 *
 *   kat_trees [malloc|memres] [DEPTH]        (default: malloc 12)
 *
 * The Benchmarks Game program: a stretch tree of DEPTH + 1, a long-lived
 * tree of DEPTH, then for d = 4, 6 .. DEPTH, 2^(DEPTH - d + 4) trees of
 * depth d, each built recursively, walked and freed whole.  Every node
 * comes from one line (KAT-SITE below) through the allocation wrapper
 * xmalloc; the trees are freed whole, so the answer is an arena, reset per
 * tree (or an arena with marks, where a recursion level's nodes also die
 * in reverse order of birth: rewinding to a mark is a reset).  The memres variant applies that advice: one mr_arena for the
 * trees, mr_arena_reset after each, and one for the long-lived tree.
 *
 * stdout: the program's lines and a checksum (the same in both variants);
 * stderr: "KAT-COUNT SITE n", the allocations made at the site (malloc
 * variant; 0 in the memres variant).  Exit status 0.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memres/arena.h"

#define KAT_NAME "kat_trees"
#include "kat.h"

typedef struct node {
    struct node *left, *right;
} node;

static uint64_t site_count;

static node *make(int d)
{
    node *n = xmalloc(sizeof *n); /* KAT-SITE: arena arena-rewind */
    site_count++;
    if (d > 0) {
        n->left = make(d - 1);
        n->right = make(d - 1);
    } else {
        n->left = n->right = NULL;
    }
    return n;
}

static void free_tree(node *t)
{
    if (t->left) {
        free_tree(t->left);
        free_tree(t->right);
    }
    free(t);
}

static node *make_arena(mr_arena *a, int d)
{
    node *n = mr_arena_alloc(a, sizeof *n);
    if (n == NULL) {
        fputs("kat_trees: out of memory\n", stderr);
        abort();
    }
    if (d > 0) {
        n->left = make_arena(a, d - 1);
        n->right = make_arena(a, d - 1);
    } else {
        n->left = n->right = NULL;
    }
    return n;
}

static int64_t check(const node *t)
{
    return t->left ? 1 + check(t->left) + check(t->right) : 1;
}

/* One tree of depth d, made, checked and dropped. */
static int64_t one_tree(mr_arena *a, int d)
{
    if (a == NULL) {
        node *t = make(d);
        int64_t c = check(t);
        free_tree(t);
        return c;
    }
    node *t = make_arena(a, d);
    int64_t c = check(t);
    mr_arena_reset(a);
    return c;
}

int main(int argc, char **argv)
{
    int memres = argc > 1 && strcmp(argv[1], "memres") == 0;
    int max_depth = argc > 2 ? atoi(argv[2]) : 12;
    if (max_depth < 6)
        max_depth = 6;
    if (max_depth > 24)
        max_depth = 24;
    mr_arena *trees = NULL, *long_arena = NULL;
    if (memres) {
        trees = mr_arena_create(NULL);
        long_arena = mr_arena_create(NULL);
        if (trees == NULL || long_arena == NULL) {
            fputs("kat_trees: mr_arena_create failed\n", stderr);
            return 1;
        }
    }
    uint64_t sum = 0;
    int64_t c = one_tree(trees, max_depth + 1);
    printf("stretch tree of depth %d\t check: %" PRId64 "\n", max_depth + 1, c);
    sum += (uint64_t)c;

    node *long_lived = memres ? make_arena(long_arena, max_depth) : make(max_depth);
    for (int d = 4; d <= max_depth; d += 2) {
        int64_t iters = (int64_t)1 << (max_depth - d + 4);
        c = 0;
        for (int64_t i = 0; i < iters; i++)
            c += one_tree(trees, d);
        printf("%" PRId64 "\t trees of depth %d\t check: %" PRId64 "\n", iters, d, c);
        sum += (uint64_t)c;
    }
    c = check(long_lived);
    printf("long lived tree of depth %d\t check: %" PRId64 "\n", max_depth, c);
    sum += (uint64_t)c;
    if (memres) {
        mr_arena_destroy(long_arena);
        mr_arena_destroy(trees);
    } else {
        free_tree(long_lived);
    }
    printf("checksum %" PRIu64 "\n", sum);
    fprintf(stderr, "KAT-COUNT SITE %" PRIu64 "\n", site_count);
    return 0;
}
