/* SPDX-License-Identifier: MIT */
/* advise/apply/stats.c -- what the apply runtime did, written at exit to
 * $MEMRES_ADVISE_APPLY_STATS for `memres-advise apply` and `measure`:
 *
 *   apply-stats 1
 *   walk K
 *   ident NS SAMPLES CALLS  identification time, sampled: NS over SAMPLES timed
 *                           calls, one in CALLS / SAMPLES
 *   held_peak BYTES         the routes' memory at its peak: the blocks of the
 *                           reserved range in use (regions' and slabs')
 *   route R KIND SITE ALLOCATIONS FALLBACKS HELD_PEAK
 *
 * (FALLBACKS: allocations of the route's stacks that went to glibc, e.g.
 * a size the route does not serve; HELD_PEAK: the most bytes of blocks the
 * route held at once, every thread's.) */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "apply.h"

static _Atomic uint64_t g_ident_ns, g_ident_samples, g_ident_calls;

void mra_apply_stats_note_ident(uint64_t ns, uint64_t calls)
{
    cnt_add(&g_ident_ns, ns);
    cnt_add(&g_ident_samples, 1);
    cnt_add(&g_ident_calls, calls);
}

static const char *kind_name(const struct route *rt)
{
    switch (rt->kind) {
    case RK_REGION:
        return rt->rewind ? "arena-rewind" : "arena";
    case RK_SLAB:
        return rt->objpool ? "objpool" : "pools";
    }
    return "none";
}

void mra_apply_stats_write(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    uint64_t held = mra_region_held_peak();
    char line[256];
    int n = snprintf(line, sizeof line, "apply-stats 1\nwalk %u\nident %llu %llu %llu\nheld_peak %llu\n", g_walk,
                     (unsigned long long)atomic_load(&g_ident_ns), (unsigned long long)atomic_load(&g_ident_samples),
                     (unsigned long long)atomic_load(&g_ident_calls), (unsigned long long)held);
    if (write(fd, line, (size_t)n) != n)
        goto out;
    for (unsigned r = 1; r <= g_nroutes; r++) {
        const struct route *rt = &g_routes[r];
        uint64_t allocations = 0;
        for (struct tstate *ts = atomic_load(&g_threads); ts; ts = ts->next)
            allocations += ts->reg[r].allocations;
        n = snprintf(line, sizeof line, "route %u %s %u %llu %llu %llu\n", r, kind_name(rt), rt->site,
                     (unsigned long long)allocations, (unsigned long long)atomic_load(&rt->fallbacks),
                     (unsigned long long)atomic_load(&rt->blocks_peak) * RBLOCK);
        if (write(fd, line, (size_t)n) != n)
            goto out;
    }
out:
    close(fd);
}
