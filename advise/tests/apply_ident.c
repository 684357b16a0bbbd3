/* SPDX-License-Identifier: MIT */
/* advise/tests/apply_ident.c -- what `memres-advise apply` must tell
 * apart: sixteen call sites that reach malloc through one allocation
 * wrapper (wrap) by one helper (via), each from a function of the same
 * frame size called from one loop, so that every call has the same first
 * frame, the same caller of it and the same stack depth; only the third
 * frame says which site it is.
 *
 * Four sites (SITE0..SITE3) make 250 objects a round of one size each,
 * and each frees a random one of its 64 newest: object pools, one route a
 * site.  The other twelve make 20 objects a round, freed at once: fewer
 * than the 1000 allocations the rules want, so no plan names them, and
 * their calls, interleaved with the four's, must go to glibc.
 *
 *   apply_ident [ROUNDS]     (default 20)
 *
 * stdout: a checksum; stderr: "KAT-COUNT SITEk n" for the four sites (the
 * allocations each must be served by its route: apply.sh --kat-counts).
 * Exit 0.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PLANNED 4
#define OTHERS 12
#define LIVE 64
#define PER_ROUND 250
#define OTHER_PER_ROUND 20

static __attribute__((noinline)) void *wrap(size_t n)
{
    void *p = malloc(n);
    if (p == NULL) {
        fputs("apply_ident: out of memory\n", stderr);
        abort();
    }
    return p;
}

/* the helper between the sites and the wrapper: no tail call, so that its
 * frame is on every stack */
static __attribute__((noinline)) unsigned char *via(size_t n)
{
    unsigned char *p = wrap(n);
    __asm__ volatile("" : : "r"(p) : "memory");
    return p;
}

/* Sixteen sites alike but for a constant (so that no two are folded into
 * one function): each marks its object and returns it. */
#define SITE(k)                                                                                                    \
    static __attribute__((noinline)) unsigned char *site##k(size_t n)                                             \
    {                                                                                                              \
        unsigned char *p = via(n);                                                                                 \
        p[0] = (unsigned char)(k + 1);                                                                             \
        return p;                                                                                                  \
    }
SITE(0)
SITE(1)
SITE(2)
SITE(3)
SITE(4)
SITE(5)
SITE(6)
SITE(7)
SITE(8)
SITE(9)
SITE(10)
SITE(11)
SITE(12)
SITE(13)
SITE(14)
SITE(15)

typedef unsigned char *site_fn(size_t);
static site_fn *const sites[PLANNED + OTHERS] = { site0, site1, site2,  site3,  site4,  site5,  site6,  site7,
                                                  site8, site9, site10, site11, site12, site13, site14, site15 };

static uint64_t rng = 0x6964656e74ULL;
static uint64_t next_rand(void)
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

int main(int argc, char **argv)
{
    long rounds = argc > 1 ? atol(argv[1]) : 20;
    unsigned char *live[PLANNED][LIVE] = { { 0 } };
    unsigned char *other[OTHERS * OTHER_PER_ROUND];
    uint64_t count[PLANNED] = { 0 }, sum = 0;
    for (long r = 0; r < rounds; r++) {
        unsigned no = 0;
        for (int i = 0; i < PER_ROUND; i++) {
            for (int k = 0; k < PLANNED; k++) {
                size_t size = 32 + 16 * (size_t)k;
                unsigned slot = (unsigned)(next_rand() % LIVE);
                if (live[k][slot] != NULL) {
                    sum += live[k][slot][0] + live[k][slot][size - 1];
                    free(live[k][slot]);
                }
                unsigned char *p = sites[k](size);
                p[size - 1] = (unsigned char)i;
                live[k][slot] = p;
                count[k]++;
            }
            /* one of the others every few calls, between the four's */
            if (i % 12 == 5 && no < OTHERS * OTHER_PER_ROUND) {
                for (int j = 0; j < OTHERS && no < OTHERS * OTHER_PER_ROUND; j++) {
                    size_t size = 24 + 8 * (size_t)j;
                    unsigned char *p = sites[PLANNED + j](size);
                    memset(p + 1, j, size - 1);
                    other[no++] = p;
                }
            }
        }
        for (unsigned j = 0; j < no; j++) {
            sum += other[j][0] + other[j][1];
            free(other[j]);
        }
    }
    for (int k = 0; k < PLANNED; k++)
        for (int s = 0; s < LIVE; s++)
            if (live[k][s] != NULL) {
                sum += live[k][s][0];
                free(live[k][s]);
            }
    printf("apply_ident: %ld rounds, checksum %" PRIu64 "\n", rounds, sum);
    for (int k = 0; k < PLANNED; k++)
        fprintf(stderr, "KAT-COUNT SITE%d %" PRIu64 "\n", k, count[k]);
    return 0;
}
