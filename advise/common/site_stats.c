/* SPDX-License-Identifier: MIT */
/* advise/common/site_stats.c -- the one merge of a site's figures
 * (site_stats.h), compiled into the recorder and into the analysis: plain
 * C, no library call. */
#include "site_stats.h"

void mra_site_stats_add(struct mra_site_stats *d, const struct mra_site_stats *s)
{
    /* the least and the most: before the counts, which say whether d or s
     * has any allocation yet */
    if (s->allocations && (d->allocations == 0 || s->min_size < d->min_size))
        d->min_size = s->min_size;
    if (s->max_size > d->max_size)
        d->max_size = s->max_size;
    if (s->allocations && (d->allocations == 0 || s->first_tick < d->first_tick))
        d->first_tick = s->first_tick;
    if (s->last_tick > d->last_tick)
        d->last_tick = s->last_tick;
    d->allocations += s->allocations;
    d->frees += s->frees;
    d->bytes += s->bytes;
    d->freed_bytes += s->freed_bytes;
    d->live_objects += s->live_objects;
    d->live_bytes += s->live_bytes;
    d->peak_live_objects += s->peak_live_objects;
    d->peak_live_bytes += s->peak_live_bytes;
    d->arena_peak_bytes += s->arena_peak_bytes;
    d->lifetime_ticks_sum += s->lifetime_ticks_sum;
    d->lifetime_ns_sum += s->lifetime_ns_sum;
    for (unsigned b = 0; b < MRA_HIST; b++) {
        d->hist_ticks[b] += s->hist_ticks[b];
        d->hist_ns[b] += s->hist_ns[b];
    }
    d->freed_together += s->freed_together;
    d->stack_like += s->stack_like;
    d->remote_frees += s->remote_frees;
    d->reallocs += s->reallocs;
    d->realloc_moves += s->realloc_moves;
    if (s->realloc_chain_max > d->realloc_chain_max)
        d->realloc_chain_max = s->realloc_chain_max;
    d->aligned += s->aligned;
    d->glibc_ns += s->glibc_ns;
    d->glibc_samples += s->glibc_samples;
    d->glibc_slow_ns += s->glibc_slow_ns;
    if (s->alloc_threads > d->alloc_threads)
        d->alloc_threads = s->alloc_threads;
}
