/* SPDX-License-Identifier: MIT */
/* tests/dlopen_module.c -- a module that tests/test_dlopen.c loads with
 * dlopen: it links the shared library, whose initial-exec TLS (the threads'
 * tables of thread-safe pool caches, with their initial values) then comes
 * from the static TLS the C library keeps for dlopen, copied into every
 * thread that already runs. */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "memres/objpool.h"
#include "memres/pools.h"

/* What test_dlopen.c finds with dlsym. */
int module_init(void);
int module_run(uintptr_t tag);
int module_fini(void);

static mr_pools *pools;
static mr_objpool *objs;

/* Makes the pools (once, before any thread uses them). */
int module_init(void)
{
    mr_pools_options po = {.thread_safe = true};
    mr_objpool_options oo = {.thread_safe = true};
    pools = mr_pools_create(&po);
    objs = mr_objpool_create(40, 8, &oo);
    return pools != NULL && objs != NULL ? 0 : -1;
}

/* Allocates, writes, checks and frees blocks of both pools in the calling
 * thread, on their inline paths; returns what went wrong (0: nothing). */
int module_run(uintptr_t tag)
{
    int bad = 0;
    for (int round = 0; round < 4; round++) {
        uintptr_t *b[300], *o[300];
        for (int i = 0; i < 300; i++) {
            size_t n = 16 + (size_t)(i % 9) * 8;
            b[i] = mr_pools_alloc(pools, n, 8);
            o[i] = mr_objpool_alloc(objs);
            if (b[i] == NULL || o[i] == NULL)
                return bad + 1;
            b[i][0] = o[i][0] = tag + (uintptr_t)i;
        }
        for (int i = 0; i < 300; i++) {
            bad += b[i][0] != tag + (uintptr_t)i || o[i][0] != tag + (uintptr_t)i;
            mr_pools_free(pools, b[i], 16 + (size_t)(i % 9) * 8, 8);
            mr_objpool_free(objs, o[i]);
        }
    }
    return bad;
}

/* Checks and destroys the pools (the threads that used them are joined). */
int module_fini(void)
{
    mr_stats ps, os;
    mr_pools_stats(pools, &ps);
    mr_objpool_stats(objs, &os);
    int bad = !mr_pools_check(pools) + !mr_objpool_check(objs) + (ps.in_use != 0) + (os.in_use != 0);
    mr_pools_destroy(pools);
    mr_objpool_destroy(objs);
    return bad;
}
