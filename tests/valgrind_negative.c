/* SPDX-License-Identifier: MIT */
/* tests/valgrind_negative.c -- misuse that Valgrind memcheck must report in
 * a library built with -DMEMRES_VALGRIND=ON: one use of memory that an
 * allocator took back, per case.  CTest runs each case under
 * `valgrind --error-exitcode=99` and passes only when memcheck reported an
 * error (exit 99), which proves the library's client requests fire.  Run
 * without Valgrind the program does the same accesses silently: the memory
 * is still mapped, only its owner says it is not the caller's. */
#include <stdio.h>
#include <string.h>

#include "memres/memres.h"

static volatile char sink;

static void touch(void *p) { sink = *(volatile char *)p; }

static int use_after_rewind(void)
{
    mr_arena *a = mr_arena_create(NULL);
    mr_arena_mark m = mr_arena_save(a);
    char *p = mr_arena_alloc(a, 64);
    memset(p, 1, 64);
    mr_arena_rewind(a, m);
    touch(p);
    mr_arena_destroy(a);
    return 0;
}

static int use_after_reset(void)
{
    mr_arena *a = mr_arena_create(NULL);
    char *p = mr_arena_alloc(a, 64);
    memset(p, 1, 64);
    mr_arena_reset(a);
    touch(p);
    mr_arena_destroy(a);
    return 0;
}

static int use_after_objpool_free(void)
{
    mr_objpool *o = mr_objpool_create(48, 8, NULL);
    char *p = mr_objpool_alloc(o);
    memset(p, 1, 48);
    mr_objpool_free(o, p);
    touch(p + 16);
    mr_objpool_destroy(o);
    return 0;
}

static int use_after_pools_free(void)
{
    mr_pools *pl = mr_pools_create(NULL);
    char *p = mr_pools_alloc(pl, 100, 8);
    memset(p, 1, 100);
    mr_pools_free(pl, p, 100, 8);
    touch(p + 32);
    mr_pools_destroy(pl);
    return 0;
}

static int use_after_blocks_put(void)
{
    mr_blocks_options bo = {.block_size = 4096};
    mr_blocks *b = mr_blocks_create(&bo);
    char *p = mr_blocks_get(b);
    memset(p, 1, 4096);
    mr_blocks_put(b, p);
    touch(p + 100);
    mr_blocks_destroy(b);
    return 0;
}

static int overflow_into_pools_rounding(void)
{
    mr_pools *pl = mr_pools_create(NULL);
    char *p = mr_pools_alloc(pl, 20, 8); /* a 32-byte block: 12 bytes of rounding */
    touch(p + 24);
    mr_pools_free(pl, p, 20, 8);
    mr_pools_destroy(pl);
    return 0;
}

static const struct {
    const char *name;
    int (*run)(void);
} cases[] = {
    {"use_after_rewind", use_after_rewind},
    {"use_after_reset", use_after_reset},
    {"use_after_objpool_free", use_after_objpool_free},
    {"use_after_pools_free", use_after_pools_free},
    {"use_after_blocks_put", use_after_blocks_put},
    {"overflow_into_pools_rounding", overflow_into_pools_rounding},
};

int main(int argc, char **argv)
{
    for (size_t i = 0; argc == 2 && i < sizeof cases / sizeof cases[0]; i++)
        if (strcmp(argv[1], cases[i].name) == 0)
            return cases[i].run();
    fprintf(stderr, "usage: valgrind_negative CASE\ncases:");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        fprintf(stderr, " %s", cases[i].name);
    fputc('\n', stderr);
    return 2;
}
