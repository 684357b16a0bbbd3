/* SPDX-License-Identifier: MIT */
/* advise/common/site_stats.h -- the one merge of a site's figures
 * (format.h's struct mra_site_stats), for the recorder (a thread's figures
 * into the site's, at thread exit and at exit) and the analysis (raw sites
 * that fold to one call stack into one site). */
#ifndef MEMRES_ADVISE_SITE_STATS_H
#define MEMRES_ADVISE_SITE_STATS_H

#include "format.h"

/* Adds s's figures to d's: counts, bytes, live and peak figures, lifetime
 * sums and histograms summed (a merged site's peaks are the sum of its
 * parts': an upper bound, exact when their objects were live at the same
 * time); sizes, ticks, realloc_chain_max and alloc_threads as the least or
 * the most of both (alloc_threads: a lower bound).  Not the table of
 * sizes (sizes, nsizes, sizes_overflow, other_sizes_count), which each side
 * keeps its own way, nor id and nframes. */
void mra_site_stats_add(struct mra_site_stats *d, const struct mra_site_stats *s);

/* count more frees from stack id into the table ids/counts of *n of at
 * most MRA_FREE_SITES entries (full: the least one makes room and its
 * count carries on, the space-saving way: the frequent ones stay). */
void mra_free_sites_add(uint32_t *ids, uint64_t *counts, uint32_t *n, uint32_t id, uint64_t count);

#endif
