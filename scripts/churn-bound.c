/* SPDX-License-Identifier: MIT */
/* scripts/churn-bound.c -- the memory a size-class allocator cannot go
 * below on the churn scenario (bench/sc_churn.c), against glibc's.
 *
 * Replays churn's step sequence (the generator and the size draw must stay
 * in step with bench/sc_churn.c: the peak it prints equals the scenario's
 * "peak ... bytes live") without allocating, and prints, at their peaks:
 *   requested           the bytes live;
 *   class-rounded sum   the live blocks at their mr_pools class sizes, summed
 *                       (what an allocator that shared memory between
 *                       classes at no cost would hold);
 *   per-class peaks     each class's own peak of live blocks times its size,
 *                       summed: the least any segregated allocator holds
 *                       (a class's blocks serve only its class), before
 *                       chunk tails and headers;
 *   glibc chunks        the live blocks as glibc's chunks (size + 8 rounded
 *                       to 16, at least 32), summed: what its coalescing
 *                       heap holds at best.
 * Build and run (from the top of the tree, after a build in build/):
 *   cc -O2 -std=c11 -Iinclude scripts/churn-bound.c build/libmemres.a -lpthread -o churn-bound
 *   ./churn-bound [STEPS]       (STEPS: 20000000, the scenario's)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "memres/memres.h"

#define SLOTS 100000u
#define SEED 0x636875726eULL
#define ALIGN ((size_t)16) /* alignof(max_align_t), what the scenario asks */

static uint64_t next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static size_t draw_size(uint64_t r)
{
    unsigned octave = (unsigned)(r & 0xff) % 7u;
    size_t base = (size_t)8 << octave;
    return base + (size_t)((r >> 8) & 0xffffff) % (base + (octave == 6));
}

static size_t glibc_chunk(size_t n)
{
    size_t c = (n + 8 + 15) & ~(size_t)15;
    return c < 32 ? 32 : c;
}

static void peak(size_t *now, size_t *top, size_t add, size_t sub)
{
    *now = *now + add - sub;
    if (*now > *top)
        *top = *now;
}

int main(int argc, char **argv)
{
    size_t steps = argc > 1 ? strtoull(argv[1], NULL, 10) : 20000000u;
    mr_pools *p = mr_pools_create(NULL);
    static size_t size[SLOTS];
    static long live[2048], top[2048]; /* per class, by block size / 8 */
    if (p == NULL)
        return 1;
    size_t req = 0, req_top = 0, cls = 0, cls_top = 0, gl = 0, gl_top = 0;
    uint64_t s = SEED;
    for (size_t i = 0; i < steps; i++) {
        uint64_t r = next(&s);
        uint32_t k = (uint32_t)((r >> 32) % SLOTS);
        if (size[k] != 0) {
            size_t b = mr_pools_block_size(p, size[k], ALIGN);
            live[b / 8]--;
            peak(&req, &req_top, 0, size[k]);
            peak(&cls, &cls_top, 0, b);
            peak(&gl, &gl_top, 0, glibc_chunk(size[k]));
            size[k] = 0;
        } else {
            size_t n = draw_size(r), b = mr_pools_block_size(p, n, ALIGN);
            if (b / 8 >= sizeof live / sizeof *live)
                return 1;
            size[k] = n;
            if (++live[b / 8] > top[b / 8])
                top[b / 8] = live[b / 8];
            peak(&req, &req_top, n, 0);
            peak(&cls, &cls_top, b, 0);
            peak(&gl, &gl_top, glibc_chunk(n), 0);
        }
    }
    size_t sum = 0, classes = 0;
    for (size_t c = 0; c < sizeof top / sizeof *top; c++)
        if (top[c] != 0) {
            sum += (size_t)top[c] * c * 8;
            classes++;
        }
    mr_pools_destroy(p);
    printf("steps %zu\n", steps);
    printf("requested          %10zu B  1.000\n", req_top);
    printf("class-rounded sum  %10zu B  %.3f\n", cls_top, (double)cls_top / (double)req_top);
    printf("per-class peaks    %10zu B  %.3f  (%zu classes)\n", sum, (double)sum / (double)req_top, classes);
    printf("glibc chunks       %10zu B  %.3f\n", gl_top, (double)gl_top / (double)req_top);
    return 0;
}
