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
    for (uint32_t i = 0; i < s->nfree_sites && i < MRA_FREE_SITES; i++)
        mra_free_sites_add(d->free_sites, d->free_site_counts, &d->nfree_sites, s->free_sites[i],
                           s->free_site_counts[i]);
    if (s->alloc_threads > d->alloc_threads)
        d->alloc_threads = s->alloc_threads;
}

void mra_free_sites_add(uint32_t *ids, uint64_t *counts, uint32_t *n, uint32_t id, uint64_t count)
{
    uint32_t least = 0;
    for (uint32_t i = 0; i < *n; i++) {
        if (ids[i] == id) {
            counts[i] += count;
            return;
        }
        if (counts[i] < counts[least])
            least = i;
    }
    if (*n < MRA_FREE_SITES) {
        ids[*n] = id;
        counts[(*n)++] = count;
    } else {
        ids[least] = id;
        counts[least] += count;
    }
}
