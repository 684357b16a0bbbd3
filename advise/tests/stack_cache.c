/* SPDX-License-Identifier: MIT */
/* advise/tests/stack_cache.c -- the recorder's stack cache (record.c's
 * sk_find) names the same sites as the walk it stands in for.
 *
 *   stack_cache RECORDER PROFILE     runs itself under RECORDER, then checks
 *
 * The child allocates from call paths that share their first return
 * addresses, their frame sizes and their CFA -- what the cache keys its
 * shapes by -- and differ only in frames further out, interleaved so that
 * each path is met again after the others:
 *   - two paths of the same chain of six frames, called from two places of
 *     one function: 1013 and 3029 allocations;
 *   - a recursion of six levels, allocating at its leaves, whose 64 paths
 *     (left or right call at each level) are 64 stacks: 77 allocations each.
 * The profile (8 frames per site, memres-advise's default) must hold exactly
 * those sites with exactly those counts.  Built like the known-answer
 * programs: -O2, no frame pointers. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "recorded_self.h"

#define NOIPA __attribute__((noinline, noipa))

static void *volatile sink;

NOIPA static void leaf(void)
{
    sink = malloc(24);
    free(sink);
}

/* the chain: frames 1..5 of a path (frame 0 is leaf's call of malloc) */
NOIPA static void c5(void) { leaf(); sink = NULL; }
NOIPA static void c4(void) { c5(); sink = NULL; }
NOIPA static void c3(void) { c4(); sink = NULL; }
NOIPA static void c2(void) { c3(); sink = NULL; }
NOIPA static void c1(void) { c2(); sink = NULL; }

/* two calls of one chain from one function: frame 6 differs (the asm
 * keeps the compiler from merging the calls) */
NOIPA static void fork_paths(int which)
{
    if (which) {
        __asm__ volatile("nop");
        c1();
    } else {
        c1();
        __asm__ volatile("nop; nop");
    }
    sink = NULL;
}

/* allocates at the leaves of a recursion of `levels` levels, the path
 * chosen by the bits of `path` */
NOIPA static void rec(int levels, unsigned path)
{
    if (levels == 0) {
        sink = malloc(40);
        free(sink);
        return;
    }
    if (path & 1u) {
        __asm__ volatile("nop");
        rec(levels - 1, path >> 1);
    } else {
        rec(levels - 1, path >> 1);
        __asm__ volatile("nop; nop");
    }
    sink = NULL;
}

static int child(void)
{
    for (int i = 0; i < 3029; i++) {
        fork_paths(1);
        if (i < 1013)
            fork_paths(0);
    }
    for (int round = 0; round < 77; round++)
        for (unsigned p = 0; p < 64; p++)
            rec(6, p * 37u % 64u);
    return 0;
}

static int check(const char *profile)
{
    struct mra_profile p;
    if (mra_profile_read(profile, &p) != 0)
        return 1;
    unsigned n1013 = 0, n3029 = 0, n77 = 0;
    for (size_t i = 0; i < p.nsites; i++) {
        const struct mra_site_stats *s = &p.sites[i].s;
        if (s->free_stack)
            continue;
        n1013 += s->allocations == 1013;
        n3029 += s->allocations == 3029;
        n77 += s->allocations == 77;
    }
    mra_profile_free(&p);
    printf("sites of 1013 allocations: %u (want 1), of 3029: %u (want 1), of 77: %u (want 64)\n", n1013, n3029,
           n77);
    return n1013 == 1 && n3029 == 1 && n77 == 64 ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "child") == 0)
        return child();
    if (argc != 3) {
        fputs("usage: stack_cache RECORDER PROFILE\n", stderr);
        return 2;
    }
    if (run_recorded_self(argv[0], argv[1], argv[2], NULL) != 0)
        return 1;
    return check(argv[2]);
}
