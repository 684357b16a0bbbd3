/* SPDX-License-Identifier: MIT */
/* advise/tests/kat_rare.c -- known answer for memres-advise: a few big
 * allocations and little time in malloc.
 *
 *   kat_rare [malloc|memres] [PASSES]        (default: malloc 40)
 *
 * Twelve buffers of 1..8 MiB are allocated (KAT-SITE below, through the
 * wrapper xmalloc), filled, mixed PASSES times by a hash, and freed.  The
 * program spends nearly all its time computing: no allocator could save 2%
 * of it, so no site may be recommended (the answer is none).  The memres
 * variant is the same program (the advice is to change nothing).
 *
 * stdout: a checksum; stderr: "KAT-COUNT SITE n".  Exit 0.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KAT_NAME "kat_rare"
#include "kat.h"

#define BUFFERS 12

int main(int argc, char **argv)
{
    long passes = argc > 2 ? atol(argv[2]) : 40;
    uint64_t *buf[BUFFERS];
    size_t words[BUFFERS];
    uint64_t site_count = 0, sum = 0;
    for (int i = 0; i < BUFFERS; i++) {
        words[i] = ((size_t)1 << 17) * (size_t)(1 + i % 8); /* 1..8 MiB */
        buf[i] = xmalloc(words[i] * sizeof(uint64_t)); /* KAT-SITE: none */
        site_count++;
        for (size_t w = 0; w < words[i]; w++)
            buf[i][w] = (uint64_t)w * 0x9e3779b97f4a7c15ULL + (uint64_t)(unsigned)i;
    }
    for (long p = 0; p < passes; p++)
        for (int i = 0; i < BUFFERS; i++) {
            uint64_t h = (uint64_t)p;
            uint64_t *b = buf[i];
            for (size_t w = 0; w < words[i]; w++) {
                h = (h ^ b[w]) * 0x100000001b3ULL;
                b[w] += h >> 7;
            }
            sum += h;
        }
    for (int i = 0; i < BUFFERS; i++)
        free(buf[i]);
    printf("rare: %d buffers, %ld passes\n", BUFFERS, passes);
    printf("checksum %" PRIu64 "\n", sum);
    fprintf(stderr, "KAT-COUNT SITE %" PRIu64 "\n", site_count);
    return 0;
}
