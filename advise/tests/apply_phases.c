/* SPDX-License-Identifier: MIT */
/* advise/tests/apply_phases.c -- a program in two phases for apply.sh's
 * --max-held: phase A fills a table of LIVE 120-byte records from one
 * site, replaces records at random (an object pool's pattern), and frees
 * them all; phase B does the same from another site.  glibc serves phase B
 * from the memory phase A freed; under a plan the sites are two routes,
 * and the routes' memory at its peak must be about one phase's, not two
 * (a route that kept its free objects held both).
 *
 *   apply_phases [STEPS [THREAD [GLIBC]]]   (default 200000 replacements a phase)
 *
 * THREAD 1: the phases run on a second thread (the runtime's lists then
 * spill to the routes' shared stacks, and its scans take those too).
 * GLIBC 1: phase B's records are 20 KiB (BIG_LIVE of them, as many bytes
 * as phase A's), which no route serves: glibc serves them from what phase
 * A freed, and the runtime must give phase A's pages back as glibc's heap
 * grows (apply.sh --rss-max).
 *
 * stdout: a checksum; stderr: "PEAK-RSS KB" (getrusage).  Exit 0. */
#include <inttypes.h>
#include <pthread.h>
#include <sys/resource.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define LIVE 60000u
#define BIG 20480u
#define BIG_LIVE (LIVE * 128u / BIG)

typedef struct record {
    uint64_t key, value[13];
    uint32_t slot, phase;
} record; /* 120 bytes */

static uint64_t next_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void fill(record *r, uint64_t key, uint32_t slot, uint32_t phase)
{
    if (r == NULL) {
        fputs("apply_phases: out of memory\n", stderr);
        exit(1);
    }
    r->key = key;
    for (int i = 0; i < 13; i++)
        r->value[i] = key * (uint64_t)(i + 1);
    r->slot = slot;
    r->phase = phase;
}

static uint64_t drop(record *r)
{
    uint64_t v = r->key + r->value[12] + r->slot + r->phase;
    free(r);
    return v;
}

/* One phase's records come from one line: A's here */
static __attribute__((noinline)) record *new_a(uint64_t key, uint32_t slot)
{
    record *r = malloc(sizeof *r);
    fill(r, key, slot, 1);
    return r;
}

/* and B's here */
static __attribute__((noinline)) record *new_b(uint64_t key, uint32_t slot)
{
    record *r = malloc(sizeof *r);
    fill(r, key, slot, 2);
    return r;
}

/* or, with GLIBC, B's 20 KiB records here */
static __attribute__((noinline)) record *new_big(uint64_t key, uint32_t slot)
{
    record *r = malloc(BIG);
    fill(r, key, slot, 3);
    return r;
}

static uint64_t phase(record *(*make)(uint64_t, uint32_t), record **table, uint32_t live, long steps,
                      uint64_t *seed)
{
    uint64_t sum = 0;
    for (uint32_t s = 0; s < live; s++)
        table[s] = make(next_rand(seed), s);
    for (long i = 0; i < steps; i++) {
        uint64_t r = next_rand(seed);
        uint32_t s = (uint32_t)((r >> 32) % live);
        sum += drop(table[s]);
        table[s] = make(r & 0xffffffffu, s);
    }
    for (uint32_t s = 0; s < live; s++)
        sum += drop(table[s]);
    return sum;
}

struct job {
    long steps;
    int big;
    uint64_t sum;
};

static void *phases(void *arg)
{
    struct job *j = arg;
    record **table = calloc(LIVE, sizeof *table);
    if (table == NULL) {
        fputs("apply_phases: out of memory\n", stderr);
        exit(1);
    }
    uint64_t seed = 0x7068617365ULL;
    j->sum = phase(new_a, table, LIVE, j->steps, &seed);
    if (j->big)
        j->sum += phase(new_big, table, BIG_LIVE, j->steps / 100, &seed);
    else
        j->sum += phase(new_b, table, LIVE, j->steps, &seed);
    free(table);
    return NULL;
}

int main(int argc, char **argv)
{
    struct job j = { argc > 1 ? atol(argv[1]) : 200000, argc > 3 && atoi(argv[3]) == 1, 0 };
    if (argc > 2 && atoi(argv[2]) == 1) {
        pthread_t t;
        if (pthread_create(&t, NULL, phases, &j) != 0 || pthread_join(t, NULL) != 0) {
            fputs("apply_phases: no thread\n", stderr);
            return 1;
        }
    } else {
        phases(&j);
    }
    printf("checksum %" PRIu64 "\n", j.sum);
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        fprintf(stderr, "PEAK-RSS %ld\n", ru.ru_maxrss);
    return 0;
}
