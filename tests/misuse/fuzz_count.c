/* SPDX-License-Identifier: MIT */
/* tests/misuse/fuzz_count.c -- the standalone fuzz run of CTest's fuzz_ops
 * (tests/fuzz/fuzz_ops.c with tests/fuzz/driver.c: the same seed, the same
 * MEMRES_FUZZ_RUNS inputs), compiled here with two counters added, so that
 * scripts/reliability.sh can report what a run executed:
 *
 *     fuzz_count: ops N arena A objpool O pools P injected M
 *
 * ops      steps of the op-sequence programs: every step ends with
 *          check_all(), which calls mr_arena_check once and only there
 *          (the script verifies that), so its calls count the steps
 * arena, objpool, pools
 *          calls of each allocator's API that the steps made (create,
 *          destroy and the walkers not counted)
 * injected upstream failures that the inputs armed and that fired
 *          (mrt_upstream.injected, summed over the inputs)
 *
 * Both files are included unchanged; the counters wrap calls by macro,
 * defined after the headers that declare them (whose include guards keep
 * the declarations from being seen again).
 */
#include <stdio.h>
#include <stdlib.h>

#include "memres/memres.h"
#include "support.h"

static unsigned long long fuzz_ops, fuzz_injected, calls_arena, calls_objpool, calls_pools;

#define mr_arena_check(a) (fuzz_ops++, mr_arena_check(a))
#define mrt_upstream_fini(u) (fuzz_injected += (u)->injected, mrt_upstream_fini(u))

#define mr_arena_alloc(a, n) (calls_arena++, mr_arena_alloc(a, n))
#define mr_arena_alloc_aligned(a, n, al) (calls_arena++, mr_arena_alloc_aligned(a, n, al))
#define mr_arena_calloc(a, c, n) (calls_arena++, mr_arena_calloc(a, c, n))
#define mr_arena_realloc(a, p, o, n) (calls_arena++, mr_arena_realloc(a, p, o, n))
#define mr_arena_strdup(a, s) (calls_arena++, mr_arena_strdup(a, s))
#define mr_arena_sprintf(...) (calls_arena++, mr_arena_sprintf(__VA_ARGS__))
#define mr_arena_save(a) (calls_arena++, mr_arena_save(a))
#define mr_arena_rewind(a, m) (calls_arena++, mr_arena_rewind(a, m))
#define mr_arena_defer(a, f, x) (calls_arena++, mr_arena_defer(a, f, x))
#define mr_arena_reset(a) (calls_arena++, mr_arena_reset(a))
#define mr_arena_release(a) (calls_arena++, mr_arena_release(a))
#define mr_objpool_alloc(p) (calls_objpool++, mr_objpool_alloc(p))
#define mr_objpool_free(p, x) (calls_objpool++, mr_objpool_free(p, x))
#define mr_pools_alloc(p, n, al) (calls_pools++, mr_pools_alloc(p, n, al))
#define mr_pools_free(p, x, n, al) (calls_pools++, mr_pools_free(p, x, n, al))

#include "../fuzz/fuzz_ops.c"

static void report(void)
{
    printf("fuzz_count: ops %llu arena %llu objpool %llu pools %llu injected %llu\n", fuzz_ops, calls_arena,
           calls_objpool, calls_pools, fuzz_injected);
}

__attribute__((constructor)) static void at_start(void) { atexit(report); }

#include "../fuzz/driver.c"
