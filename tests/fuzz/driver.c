/* SPDX-License-Identifier: MIT */
/* tests/fuzz/driver.c -- runs the fuzz target without libFuzzer: each file
 * argument is one input; with no arguments, N seeded random inputs (the seed
 * is printed; MEMRES_TEST_SEED replays, MEMRES_FUZZ_RUNS sets N). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
    if (argc > 1) {
        for (int i = 1; i < argc; i++) {
            FILE *f = fopen(argv[i], "rb");
            if (f == NULL) { perror(argv[i]); return 1; }
            static uint8_t buf[1 << 20];
            size_t n = fread(buf, 1, sizeof buf, f);
            fclose(f);
            LLVMFuzzerTestOneInput(buf, n);
        }
        printf("%d passed, 0 failed\n", argc - 1);
        return 0;
    }
    uint64_t seed = mrt_seed(20261130);
    const char *r = getenv("MEMRES_FUZZ_RUNS");
    long runs = r ? strtol(r, NULL, 10) : 1000;
    static uint8_t buf[4096];
    for (long i = 0; i < runs; i++) {
        size_t n = (size_t)(mrt_rand(&seed) % sizeof buf);
        for (size_t j = 0; j < n; j++)
            buf[j] = (uint8_t)mrt_rand(&seed);
        LLVMFuzzerTestOneInput(buf, n);
    }
    const char *name = strrchr(argv[0], '/');
    printf("%s: %ld passed, 0 failed\n", name != NULL ? name + 1 : argv[0], runs);
    return 0;
}
