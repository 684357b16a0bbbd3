/* SPDX-License-Identifier: MIT */
/* advise/tests/heap_trim.c -- a program whose memory glibc gives back and
 * takes again, for the recorder's heap section (heap.sh):
 *
 *   heap_trim [ROUNDS]        (default 20)
 *
 * Each round allocates 256 blocks of 16 KiB (4 MiB of glibc's main heap:
 * below the mmap threshold), writes them, and frees them newest first: the
 * heap's top grows back into one free chunk larger than the trim
 * threshold, and glibc lowers the heap's end (gives the 4 MiB back); the
 * next round raises it again (takes it again) and writes the pages a
 * second time.  Then one 64 MiB block, above the mmap threshold at any
 * setting of glibc's dynamic one, mapped and unmapped.
 *
 * stdout: a checksum.  Exit 0. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCKS 256
#define BLOCK (16u << 10)

static void *xmalloc(size_t n)
{
    void *p = malloc(n);
    if (!p) {
        perror("heap_trim");
        exit(1);
    }
    return p;
}

int main(int argc, char **argv)
{
    long rounds = argc > 1 ? atol(argv[1]) : 20;
    uint64_t sum = 0;
    static unsigned char *b[BLOCKS];
    for (long r = 0; r < rounds; r++) {
        for (int i = 0; i < BLOCKS; i++) {
            b[i] = xmalloc(BLOCK);
            memset(b[i], (int)(r + i), BLOCK);
        }
        for (int i = BLOCKS - 1; i >= 0; i--) {
            sum += b[i][(size_t)i * 61 % BLOCK];
            free(b[i]);
        }
    }
    unsigned char *big = xmalloc((size_t)64 << 20);
    memset(big, 7, (size_t)64 << 20);
    sum += big[12345];
    free(big);
    printf("%" PRIu64 "\n", sum);
    return 0;
}
