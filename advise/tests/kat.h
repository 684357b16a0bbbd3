/* SPDX-License-Identifier: MIT */
/* advise/tests/kat.h -- what the known-answer programs share: the
 * allocation wrapper that memres-advise must fold (xmalloc, a function of
 * its own: external, never inlined or cloned away, as in the programs it
 * stands for) and a seeded generator (splitmix64), so that both variants
 * of a program do the same work.  Each program is one translation unit
 * that defines KAT_NAME and includes this once. */
#ifndef MEMRES_ADVISE_KAT_H
#define MEMRES_ADVISE_KAT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef KAT_NAME
#error "define KAT_NAME (the program's name, for its messages) before including kat.h"
#endif

void *xmalloc(size_t n);

__attribute__((noinline)) void *xmalloc(size_t n)
{
    void *p = malloc(n);
    if (p == NULL) {
        fputs(KAT_NAME ": out of memory\n", stderr);
        abort();
    }
    return p;
}

__attribute__((unused)) static uint64_t next_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

#endif
