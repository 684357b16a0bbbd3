/* SPDX-License-Identifier: MIT */
/* advise/analyze/judge.c -- the rules of the analysis (analyze.c) and
 * their thresholds: each merged site judged (arena, arena-rewind, objpool,
 * pools or none, and why), its saving costed with this machine's
 * per-operation costs (calibrate.c) and its memory estimated; the sketch
 * of the memres calls that would replace its malloc and free; the pools
 * behind a function that many sites reach malloc from. */
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sites.h"

/* ---- options ---- */

const char *mra_rec_name(enum mra_rec r)
{
    switch (r) {
    case MRA_ARENA: return "arena";
    case MRA_ARENA_REWIND: return "arena-rewind";
    case MRA_OBJPOOL: return "objpool";
    case MRA_POOLS: return "pools";
    default: return "none";
    }
}

void mra_options_default(struct mra_options *o)
{
    memset(o, 0, sizeof *o);
    o->depth = 4;
    o->top = 10;
    o->progress = true;
    /* Fewer allocations cannot save a measurable time: at the tens of ns a
     * malloc/free pair costs, 1000 of them are tens of microseconds. */
    o->th.min_allocations = 1000;
    /* The accuracy target: nothing is recommended whose saving is below
     * 2% of the run. */
    o->th.min_share = 0.02;
    /* Of a site's objects, 80% freed together or never freed: in bursts
     * (two or more frees of the site's group with no allocation between)
     * that leave no younger object of the group live, as an arena reset
     * would.  Whole trees and per-request temporaries score 0.86-1.0
     * (kat_trees, kat_request), allocations and frees at random 0.1
     * (kat_churn), a collector's sweeps, which keep young objects, 0.1
     * (Lua 5.4), objects freed right after their allocation 0. */
    o->th.together_share = 0.8;
    /* Mark/rewind needs nearly every free to be of the youngest live
     * object: a few out-of-order frees only delay memory's reuse. */
    o->th.stack_share = 0.8;
    /* One size for 90% of the allocations: a pool of that size serves
     * them; the rest stays on malloc or goes to pools. */
    o->th.dominant_size_share = 0.9;
    /* A page: small objects are where malloc's per-call cost dominates,
     * and where class rounding costs little memory. */
    o->th.max_small_size = 4096;
    /* More than 5% freed by another thread: the pool must be thread-safe. */
    o->th.remote_share = 0.05;
    /* Nine objects in ten alive at exit: the site's objects live as long
     * as the program, an arena never reset serves them. */
    o->th.at_exit_share = 0.9;
    /* An arena holding twice what is live (Berger, Zorn, McKinley 2002:
     * regions can bloat) is worth a warning. */
    o->th.retention_warn = 2.0;
    /* A site freed together whose objects realloc moves: an arena keeps
     * each copy moved away from until its reset, pools reuse them.  At
     * 1.5x the site's peak a third of the arena is such copies; pools
     * measured no slower at 1.9-2.4x and held less (kat_vectors, Debian's
     * python3.11: docs/ADVISE.md). */
    o->th.moved_retention = 1.5;
    /* The run's own timed samples of glibc, where there are enough of
     * them (one call in 64 is timed: 200 samples are 12,800 calls). */
    o->th.min_timed_samples = 200;
}

/* ---- judging ---- */

static double share(uint64_t a, uint64_t b)
{
    return b ? (double)a / (double)b : 0.0;
}

/* The bytes glibc's malloc holds for a request of n bytes: 8 bytes of
 * header, rounded to 16, at least 32. */
static double malloc_chunk(double n)
{
    double c = ceil((n + 8) / 16) * 16;
    return c < 32 ? 32 : c;
}

/* The block memres' size-class pools give a request (memres/pools.h). */
static double pools_block(double n, bool ts)
{
    if (n < 8)
        n = 8;
    if (ts && n < 16)
        n = 16;
    if (n <= 256)
        return ceil(n / 8) * 8;
    double p = exp2(floor(log2(n - 1)));
    double step = p / 8;
    return ceil(n / step) * step;
}

static char *dupf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *dupf(const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return strdup(buf);
}

static const double *memres_costs(const struct mra_costs *c, enum mra_rec r, bool ts)
{
    switch (r) {
    case MRA_ARENA: return c->arena;
    case MRA_ARENA_REWIND: return c->arena_rewind;
    case MRA_OBJPOOL: return ts ? c->pools_ts : c->objpool;
    case MRA_POOLS: return ts ? c->pools_ts : c->pools;
    default: return NULL;
    }
}

/* glibc's cost of a pair at class cl in the pattern.  Freed together, the
 * first cohort (the most the site held between two moments of nothing
 * live) costs what a batch costs with its memory kept; the repeats what a
 * repeated batch costs, which glibc may have trimmed and faults in again --
 * unless the cohort is below the trim threshold (glibc never gives back
 * less), or warm: the floor under the run's own timing, which saw whether
 * this program's glibc trims (the calibration's repeated batches trim or
 * not with glibc's dynamic thresholds in the analysing process: 19 ns or
 * 1.6 us a pair of 1 KiB objects between two calibrations, which put the
 * request loop's 56 KB cohorts at 2.5 s in a run of 0.25 s). */
#define GLIBC_TRIM_BYTES 131072.0 /* M_TRIM_THRESHOLD's default */
static double glibc_cost(const struct mra_site_stats *s, const struct mra_costs *c, enum mra_pattern pat,
                         unsigned cl, bool warm)
{
    if (pat != MRA_PAT_BATCH || !(c->glibc_batch_kept[cl] > 0) || s->bytes == 0)
        return c->glibc[pat][cl];
    /* never above the repeated batch's cost: below the trim threshold the
     * two are one cost measured twice */
    double kept = fmin(c->glibc_batch_kept[cl], c->glibc[pat][cl]);
    if (warm || (double)s->arena_peak_bytes < GLIBC_TRIM_BYTES)
        return kept;
    double repeated = 1 - (double)s->arena_peak_bytes / (double)s->bytes;
    if (repeated < 0)
        repeated = 0;
    return kept + repeated * (c->glibc[pat][cl] - kept);
}

/* What a pair at class cl costs more, in glibc (*g) and in r (*m), over
 * the site's live set than in the calibration's cells (about a thousand
 * objects): the objects' cache and TLB misses.  Freed together into an
 * arena: the cohort the arena would hold (arena_peak_bytes; xmllint's
 * parse tree, 168 MB of one site, predicted 20 ms from the small cells).
 * Other patterns are costed as their cells measured them. */
static void live_extra(const struct mra_site_stats *s, const struct mra_costs *c, enum mra_pattern pat,
                       enum mra_rec r, unsigned cl, double *g, double *m)
{
    *g = *m = 0;
    if (pat == MRA_PAT_BATCH && r == MRA_ARENA) {
        *g = mra_cost_live_extra(c, MRA_BIG_GLIBC_BATCH, cl, (double)s->arena_peak_bytes);
        *m = mra_cost_live_extra(c, MRA_BIG_ARENA, cl, (double)s->arena_peak_bytes);
    }
}

/* The predicted saving of serving m's allocations from r instead of
 * glibc: glibc's time for them less memres's.
 *
 * glibc's time is the run's own, where it timed enough of the site's
 * calls (min_timed_samples): the samples of at most 1 us as they are (the
 * allocator's work, on the program's own cache and heap), and of the
 * longer ones -- page faults on fresh heap, mmap, trims -- only the share
 * that reuse would avoid: memres touches the same new pages a first time
 * (a region's object takes the bytes glibc's chunk took), and saves only
 * the faults and trims of memory glibc gave back and takes again (the
 * share of the site's bytes above what it held at its peak).  xmllint's
 * parse tree: 661 ms timed at its first site, 623 ms of it page faults of
 * a heap that grows once; calibrated costs instead (warm, small loops)
 * came to 0.4x the measured saving there.  Otherwise, and as the second
 * opinion: per size in the site's table, count x the calibration's cost
 * of glibc for the pattern at the size's class, the sizes not in the
 * table at their mean, never-freed objects less half of glibc's pair
 * each (the program never paid their free), a cohort larger than the
 * calibration's cells with live_extra's.  memres's cost is the
 * calibration's in both. */
static double memres_part(const struct mra_site_stats *s, const double *mc, const struct mra_costs *c,
                          enum mra_pattern pat, enum mra_rec r, bool warm, double *glibc_out)
{
    double glibc = 0, memres = 0, counted = 0, counted_bytes = 0, xg, xm;
    for (unsigned i = 0; i < s->nsizes; i++) {
        unsigned cl = mra_cost_class(s->sizes[i].size);
        live_extra(s, c, pat, r, cl, &xg, &xm);
        glibc += (double)s->sizes[i].count * (glibc_cost(s, c, pat, cl, warm) + xg);
        memres += (double)s->sizes[i].count * (mc[cl] + xm);
        counted += (double)s->sizes[i].count;
        counted_bytes += (double)s->sizes[i].count * (double)s->sizes[i].size;
    }
    double rest = (double)s->allocations - counted;
    if (rest > 0.5) {
        double mean = ((double)s->bytes - counted_bytes) / rest;
        if (mean < 0)
            mean = (double)s->bytes / (double)s->allocations;
        unsigned cl = mra_cost_class((uint64_t)mean);
        live_extra(s, c, pat, r, cl, &xg, &xm);
        glibc += rest * (glibc_cost(s, c, pat, cl, warm) + xg);
        memres += rest * (mc[cl] + xm);
    }
    if (s->allocations && s->live_objects) {
        double mean = (double)s->bytes / (double)s->allocations;
        unsigned cl = mra_cost_class((uint64_t)mean);
        glibc -= (double)s->live_objects * 0.5 * glibc_cost(s, c, pat, cl, warm);
    }
    *glibc_out = glibc;
    return memres;
}

/* glibc's warmest pair at size's class in this machine's calibration:
 * the least over the patterns of one thread (0 without a calibration). */
static double warmest_pair(const struct mra_costs *c, uint64_t size)
{
    unsigned cl = mra_cost_class(size);
    double best = HUGE_VAL;
    for (unsigned p = 0; p < MRA_PATTERNS; p++)
        if (p != MRA_PAT_REMOTE && c->glibc[p][cl] > 0 && c->glibc[p][cl] < best)
            best = c->glibc[p][cl];
    return best < HUGE_VAL ? best : 0;
}

/* The least glibc can have taken for s's calls in the program: each
 * allocation at glibc's warmest pair of its class (the calibration's loops
 * are glibc at its warmest, which is what the costing of a site assumes of
 * a program too), a never-freed object at half a pair. */
double mra_glibc_floor(const struct mra_site_stats *s, const struct mra_costs *c)
{
    if (s->allocations == 0)
        return 0;
    double ns = 0, counted = 0, counted_bytes = 0;
    for (unsigned i = 0; i < s->nsizes; i++) {
        ns += (double)s->sizes[i].count * warmest_pair(c, s->sizes[i].size);
        counted += (double)s->sizes[i].count;
        counted_bytes += (double)s->sizes[i].count * (double)s->sizes[i].size;
    }
    double rest = (double)s->allocations - counted;
    if (rest > 0.5) {
        double mean = ((double)s->bytes - counted_bytes) / rest;
        ns += rest * warmest_pair(c, mean > 0 ? (uint64_t)mean : s->bytes / s->allocations);
    }
    ns -= (double)s->live_objects * 0.5 * warmest_pair(c, s->bytes / s->allocations);
    return ns > 0 ? ns : 0;
}

/* glibc's time for s's calls as the run timed it, the part memres would
 * take off for r (above). */
static double reuse_of(const struct mra_site_stats *s, enum mra_rec r)
{
    double held = (double)(r == MRA_ARENA ? s->arena_peak_bytes : s->peak_live_bytes);
    /* a site that holds less than glibc's trim threshold never makes it
     * give memory back: its slow calls are no faults of memory given back
     * and taken again, but interrupts and preemption under the recorder
     * (the request loop's 56 KB cohorts: 121 ms of calls over 1 us in a
     * run of 0.45 s) */
    if (held < GLIBC_TRIM_BYTES)
        return 0;
    double reuse = s->bytes ? 1 - held / (double)s->bytes : 0;
    return reuse < 0 ? 0 : reuse;
}

/* What the recorder's fencing adds to a timed call, in ns: half the
 * calibrated difference between a malloc/free pair timed as the recorder
 * times it and the pair in a loop (no overlap with the code around it), the
 * least over the size classes up to 4 KiB -- the fences cost a call the
 * same whatever its size, and what else runs on the machine only ever adds
 * to a cell (one calibration's differences were 6.0, 10.8 and 15.6 ns at
 * 32, 64 and 128 bytes, which took kat_mixed's prediction from 97-182 ms
 * to 28); 0 where the calibration has no fenced row. */
static double fence_penalty(const struct mra_costs *c)
{
    double best = HUGE_VAL;
    for (unsigned cl = 0; cl <= 12 && cl < MRA_COST_CLASSES; cl++) {
        double d = (c->glibc_fenced[cl] - c->glibc[MRA_PAT_RANDOM][cl]) / 2;
        if (c->glibc_fenced[cl] > 0 && d < best)
            best = d;
    }
    return best < HUGE_VAL && best > 0 ? best : 0;
}

/* The slow calls of s (page faults, trims: proportional to the heap's
 * bytes) that reuse would avoid for r, scaled from the recorder's
 * 32-byte-larger chunks to the program's own. */
double mra_slow_reused(const struct mra_site_stats *s, enum mra_rec r)
{
    double slow = (double)s->glibc_slow_ns;
    if (slow > (double)s->glibc_ns)
        slow = (double)s->glibc_ns;
    double mean = s->allocations ? (double)s->bytes / (double)s->allocations : 16;
    return reuse_of(s, r) * slow * malloc_chunk(mean) / malloc_chunk(mean + 32);
}

static double glibc_timed(const struct mra_site_stats *s, enum mra_rec r, const struct mra_costs *c,
                          const struct mra_analysis *a)
{
    double slow = (double)s->glibc_slow_ns, all = (double)s->glibc_ns;
    if (slow > all)
        slow = all;
    /* the fast calls less the fencing's part of each, and the slow ones
     * that reuse avoids, no more than the heap saw taken again */
    double calls = (double)(s->allocations + s->frees + s->reallocs);
    double fast = all - slow - calls * fence_penalty(c);
    if (fast < 0)
        fast = 0;
    return fast + mra_slow_reused(s, r) * a->slow_scale;
}

static bool timed_model(const struct mra_site_stats *s, const struct mra_thresholds *th)
{
    return th->min_timed_samples && s->glibc_samples >= th->min_timed_samples;
}

/* The most glibc can have taken for a site with timed samples too few for
 * the run's own figure (below min_timed_samples): what they add up to,
 * every call whole, the slow ones included, with four standard errors of a
 * count of that many samples; HUGE_VAL without samples or with the timed
 * model off.  The calibration costs such a site but is held to it: git log
 * -p's 2,547 allocations of 0.3-89 KB freed together came to 160 ms from
 * the calibration's repeated batches of those sizes (trimmed and faulted
 * in again in the analysing process, 10-700 us a pair), where the run
 * timed 7.2 ms in 79 samples and routing the site and another to a region
 * saved 18.6 ms. */
static double sparse_cap(const struct mra_site_stats *s, const struct mra_analysis *a,
                         const struct mra_thresholds *th)
{
    if (!th->min_timed_samples || s->glibc_samples == 0 || s->glibc_samples >= th->min_timed_samples)
        return HUGE_VAL;
    return (double)s->glibc_ns * a->glibc_scale * (1 + 4 / sqrt((double)s->glibc_samples));
}

/* glibc_out (or NULL): glibc's time for the calls, as costed */
static double saving_of(const struct msite *m, const struct mra_analysis *a, const struct mra_costs *c,
                        const struct mra_thresholds *th, enum mra_rec r, bool ts, enum mra_pattern pat,
                        double *glibc_out)
{
    const double *mc = memres_costs(c, r, ts);
    if (!mc)
        return 0;
    double glibc;
    double memres = memres_part(&m->s, mc, c, pat, r, timed_model(&m->s, th), &glibc);
    /* the calibration's loops are glibc at its warmest: a site's calls
     * cost at least that in the program, and a run's timed samples of
     * tiny calls can net below it once the fencing is taken off (a Lua
     * site of 29-byte strings: 715 samples, 0 ns) */
    if (timed_model(&m->s, th)) {
        double t = glibc_timed(&m->s, r, c, a) * a->glibc_scale;
        if (t > glibc)
            glibc = t;
    }
    glibc = fmin(glibc, sparse_cap(&m->s, a, th));
    if (glibc_out)
        *glibc_out = glibc;
    return glibc - memres;
}

/* The margins: a share within NEAR_POINTS of its threshold, a saving
 * within a factor NEAR_FACTOR of the 2% rule (the prediction's error on
 * the known-answer programs is of that order). */
#define NEAR_POINTS 0.05
#define NEAR_FACTOR 2.0
#define NEAR_RATIO 1.25 /* a ratio within this factor of its threshold (moved_retention) */

static void near_add(char *buf, size_t cap, const char *what, double v, double t)
{
    size_t len = strlen(buf);
    if (fabs(v - t) >= NEAR_POINTS || len + 1 >= cap)
        return;
    snprintf(buf + len, cap - len, "%s%s %.1f%% (threshold %.0f%%)", len ? "; " : "", what, 100 * v, 100 * t);
}

/* What could flip m's recommendation in another run: its rules' shares
 * near their thresholds, its saving near the 2% rule.  Only for a site
 * whose saving is within NEAR_FACTOR of the rule or above it. */
static void near_note(struct msite *m, const struct mra_thresholds *th, double save_share, double never,
                      double together, double stack, double remote, double dominant, double arena_x)
{
    m->near[0] = 0;
    if (m->cand == MRA_NONE || save_share < th->min_share / NEAR_FACTOR)
        return;
    if (save_share < th->min_share * NEAR_FACTOR)
        snprintf(m->near, sizeof m->near, "saves %.2f%% of the run (the 2%% rule: %g%%)", 100 * save_share,
                 100 * th->min_share);
    near_add(m->near, sizeof m->near, "never freed", never, th->at_exit_share);
    near_add(m->near, sizeof m->near, "freed together", together, th->together_share);
    near_add(m->near, sizeof m->near, "stack-like", stack, th->stack_share);
    near_add(m->near, sizeof m->near, "remote frees", remote, th->remote_share);
    near_add(m->near, sizeof m->near, "dominant size", dominant, th->dominant_size_share);
    size_t len = strlen(m->near);
    if (arena_x > th->moved_retention / NEAR_RATIO && arena_x < th->moved_retention * NEAR_RATIO &&
        len + 1 < sizeof m->near)
        snprintf(m->near + len, sizeof m->near - len, "%san arena would hold %.2fx the site's peak (moved_retention "
                 "%.1fx: pools above it)", len ? "; " : "", arena_x, th->moved_retention);
}

static void judge_memory(struct msite *m, const struct mra_analysis *a, const struct mra_thresholds *th);

static void judge_site(struct msite *m, const struct mra_analysis *a, const struct mra_costs *c,
                  const struct mra_thresholds *th)
{
    const struct mra_site_stats *s = &m->s;
    double never = share(s->live_objects, s->allocations);
    double together = mra_together_share(s);
    double stack = share(s->stack_like, s->frees);
    double remote = share(s->remote_frees, s->frees);
    double dominant = s->nsizes ? share(s->sizes[0].count, s->allocations) : 0;
    uint64_t dsize = s->nsizes ? s->sizes[0].size : 0;
    /* a site whose objects realloc resizes (one in a hundred or more) is not
     * of one size, whatever size they were allocated at: an object pool
     * cannot hold the grown ones (mr_objpool refuses them, the apply runtime
     * hands them to glibc); the sizes they grow to are not recorded */
    bool resized = mra_resized(s, false);
    /* freed together, but realloc moved one object in a hundred or more and
     * an arena would hold over moved_retention times the site's peak: the
     * arena keeps every copy a realloc moved away from until its reset,
     * where pools hand them to the next object that grows into their class
     * (kat_vectors; Debian's python3.11 lists' item arrays) */
    bool moved_batch = mra_resized(s, true) && together >= th->together_share;
    double arena_x = (double)s->arena_peak_bytes / (s->peak_live_bytes > 0 ? (double)s->peak_live_bytes : 1);
    bool pools_not_arena = moved_batch && arena_x > th->moved_retention && s->max_size <= th->max_small_size;
    char rule[640];
    enum mra_rec r = MRA_NONE;
    bool ts = remote >= th->remote_share && s->remote_frees > 0;
    char thr[64] = "";
    if (s->alloc_threads > 1)
        snprintf(thr, sizeof thr, "; allocated by %llu threads: one per thread",
                 (unsigned long long)s->alloc_threads);

    m->pattern = stack >= th->stack_share ? MRA_PAT_LIFO
                 : together >= th->together_share ? MRA_PAT_BATCH
                 : ts ? MRA_PAT_REMOTE
                      : MRA_PAT_RANDOM;
    char how[200];
    if (ts)
        snprintf(how, sizeof how,
                 "thread-safe: %.1f%% freed by another thread (remote_share >= %.0f%%: no arena)", 100 * remote,
                 100 * th->remote_share);
    else
        snprintf(how, sizeof how, "freed one by one (%.1f%% together < %.0f%%, %.1f%% stack-like < %.0f%%)",
                 100 * together, 100 * th->together_share, 100 * stack, 100 * th->stack_share);
    m->rec = m->cand = MRA_NONE;
    m->near[0] = 0;
    m->glibc_costed = mra_glibc_floor(s, c);
    m->saving = 0;
    m->mem_delta = 0;
    m->retention = false;
    m->thread_safe = false;

    if (s->allocations < th->min_allocations) {
        m->reason = dupf("none: %llu allocations, fewer than min_allocations %llu",
                         (unsigned long long)s->allocations, (unsigned long long)th->min_allocations);
        return;
    }
    if (!ts && never >= th->at_exit_share) {
        r = MRA_ARENA;
        snprintf(rule, sizeof rule, "%.1f%% never freed (at_exit_share >= %.0f%%): one arena, never reset%s",
                 100 * never, 100 * th->at_exit_share, thr);
    } else if (!ts && s->frees > 0 && stack >= th->stack_share) {
        r = MRA_ARENA_REWIND;
        snprintf(rule, sizeof rule,
                 "%.1f%% of frees free the site's youngest live object (stack_share >= %.0f%%): mark before, "
                 "rewind where they are freed%s",
                 100 * stack, 100 * th->stack_share, thr);
    } else if (!ts && together >= th->together_share && !pools_not_arena) {
        r = MRA_ARENA;
        snprintf(rule, sizeof rule,
                 "%.1f%% freed together (in bursts that leave nothing younger of the site live) or never freed (%.1f%% never freed; "
                 "together_share >= %.0f%%): reset the arena where the burst frees%s",
                 100 * together, 100 * never, 100 * th->together_share, thr);
    } else if (dominant >= th->dominant_size_share && dsize <= th->max_small_size && !resized) {
        r = MRA_OBJPOOL;
        m->thread_safe = ts;
        snprintf(rule, sizeof rule,
                 "%.1f%% of allocations are %llu bytes (dominant_size_share >= %.0f%%, <= max_small_size %llu), %s",
                 100 * dominant, (unsigned long long)dsize, 100 * th->dominant_size_share,
                 (unsigned long long)th->max_small_size, how);
    } else if (s->max_size <= th->max_small_size) {
        r = MRA_POOLS;
        m->thread_safe = ts;
        char why[240];
        if (pools_not_arena)
            snprintf(why, sizeof why,
                     "%.1f%% freed together, but realloc moved its objects %llu times for %llu allocations: an arena "
                     "would keep the copies it moved away from (%.1f KiB, %.1fx the site's peak > moved_retention "
                     "%.1fx), pools reuse them",
                     100 * together, (unsigned long long)s->realloc_moves, (unsigned long long)s->allocations,
                     (double)s->arena_peak_bytes / 1024, arena_x, th->moved_retention);
        else if (resized && dominant >= th->dominant_size_share)
            snprintf(why, sizeof why, "not one size: realloc resizes its objects (%llu reallocs for %llu allocations)",
                     (unsigned long long)s->reallocs, (unsigned long long)s->allocations);
        else
            snprintf(why, sizeof why, "no size above %.0f%% (dominant_size_share)", 100 * th->dominant_size_share);
        snprintf(rule, sizeof rule, "%s%llu..%llu bytes (<= max_small_size %llu), %s%s%s",
                 s->sizes_overflow || s->nsizes > 1 ? "sizes " : "size ", (unsigned long long)s->min_size,
                 (unsigned long long)s->max_size, (unsigned long long)th->max_small_size, why,
                 pools_not_arena ? "" : ", ", pools_not_arena ? "" : how);
    } else {
        m->reason = dupf("none: sizes up to %llu bytes (above max_small_size %llu), %s",
                         (unsigned long long)s->max_size, (unsigned long long)th->max_small_size, how);
        return;
    }
    if (ts)
        m->pattern = MRA_PAT_REMOTE;
    m->cand = r;

    double g = 0;
    double save = saving_of(m, a, c, th, r, m->thread_safe, m->pattern, &g);
    if (g > m->glibc_costed)
        m->glibc_costed = g;
    double prog_ns = a->program_ns > 0 ? a->program_ns : 1;
    near_note(m, th, save / prog_ns, never, together, stack, remote, dominant, moved_batch ? arena_x : 0);
    const char *name = r == MRA_POOLS && m->thread_safe ? "pools (thread-safe)"
                       : r == MRA_OBJPOOL && m->thread_safe ? "objpool (thread-safe)"
                                                            : mra_rec_name(r);
    static const char *const patname[] = { "stack-like", "freed together", "random order", "remote" };
    char costed[320];
    double calib = 0;
    const double *mcr = memres_costs(c, r, m->thread_safe);
    if (mcr)
        (void)memres_part(s, mcr, c, m->pattern, r, timed_model(s, th), &calib);
    double timed = glibc_timed(s, r, c, a) * a->glibc_scale, cap = sparse_cap(s, a, th);
    if (timed_model(s, th) && timed >= calib)
        snprintf(costed, sizeof costed,
                 "glibc as timed in the run: %.1f ms of %.1f ms (its calls over 1 us, %.1f ms, counted at the "
                 "%.0f%% of the site's bytes that reuse memory%s, less the recorder's fencing%s)",
                 timed / 1e6, (double)s->glibc_ns / 1e6, (double)s->glibc_slow_ns / 1e6, 100 * reuse_of(s, r),
                 a->slow_scale >= 1 || reuse_of(s, r) == 0 ? ""
                 : a->slow_scale > 0
                     ? " and held to the memory glibc took again (its re-faults: the heap's section)"
                     : " but glibc took no memory again (the heap's section): none of them",
                 a->glibc_clamp < 1 ? "; scaled down with every site's to the program's own time" : "");
    else if (timed_model(s, th))
        snprintf(costed, sizeof costed,
                 "glibc costed as %s (this machine's calibration, %.1f ms: more than the run timed, %.1f ms of "
                 "%.1f ms, and glibc in a program costs at least what it costs in the calibration's loops)",
                 patname[m->pattern], calib / 1e6, timed / 1e6, (double)s->glibc_ns / 1e6);
    else if (calib > cap)
        snprintf(costed, sizeof costed,
                 "glibc costed as %s (this machine's calibration, %.1f ms, held to what the run's %llu timed "
                 "samples allow: %.1f ms of them, %.1f ms with their error)",
                 patname[m->pattern], calib / 1e6, (unsigned long long)s->glibc_samples,
                 (double)s->glibc_ns * a->glibc_scale / 1e6, cap / 1e6);
    else
        snprintf(costed, sizeof costed, "glibc costed as %s (this machine's calibration)", patname[m->pattern]);
    if (c->glibc[m->pattern][MRA_COST_CLASSES / 2] <= 0) {
        m->reason = dupf("none: would be %s (%s), but there are no costs of this machine to predict a saving",
                         name, rule);
        m->thread_safe = false;
        return;
    }
    m->cand_saving = save;
    if (save <= 0) {
        m->reason = dupf("none: would be %s (%s), but memres is not faster here (%s: %.1f ms lost)", name, rule,
                         costed, -save / 1e6);
        m->thread_safe = false;
        return;
    }
    if (save < th->min_share * prog_ns) {
        m->reason = dupf("none: would be %s (%s), but it saves %.2f ms, %.2f%% of the run (below min_share %g%%; %s)",
                         name, rule, save / 1e6, 100 * save / prog_ns, 100 * th->min_share, costed);
        m->thread_safe = false;
        /* kept for a group that together passes the rule (mra_free_groups) */
        m->rule = strdup(rule);
        m->costed = strdup(costed);
        return;
    }
    m->rec = r;
    m->saving = save;
    m->reason = dupf("%s: %s; %llu allocations (>= %llu), saves %.2f ms = %.1f%% of the run (>= %g%%), %s", name,
                     rule, (unsigned long long)s->allocations, (unsigned long long)th->min_allocations, save / 1e6,
                     100 * save / prog_ns, 100 * th->min_share, costed);
    judge_memory(m, a, th);
}

/* m's memory figures for its recommendation m->rec: what the plan holds
 * at its peak minus what malloc held, and the arena's retention warning. */
static void judge_memory(struct msite *m, const struct mra_analysis *a, const struct mra_thresholds *th)
{
    const struct mra_site_stats *s = &m->s;
    enum mra_rec r = m->rec;
    double n = (double)s->allocations;
    double mean = n > 0 ? (double)s->bytes / n : 0;
    uint64_t dsize = s->nsizes ? s->sizes[0].size : 0;
    double objs = (double)s->peak_live_objects;
    double peak = (double)s->peak_live_bytes;
    /* objects realloc resized: their size at the peak, not as allocated */
    if (mra_resized(s, false) && objs > 0 && peak / objs > mean)
        mean = peak / objs;
    double held_malloc = objs * malloc_chunk(mean);
    double align_slack = objs * (ceil(mean / 16) * 16 - mean);
    switch (r) {
    case MRA_ARENA:
        m->mem_delta = (int64_t)((double)s->arena_peak_bytes + align_slack - held_malloc);
        break;
    case MRA_ARENA_REWIND:
        m->mem_delta = (int64_t)(peak + align_slack - held_malloc);
        break;
    case MRA_OBJPOOL: {
        double osz = ceil((double)dsize / 8) * 8;
        if (osz < (m->thread_safe ? 16 : 8))
            osz = m->thread_safe ? 16 : 8;
        /* half a block of 1024 objects, on average, carved but unused */
        m->mem_delta = (int64_t)(objs * osz + 512 * osz - held_malloc);
        break;
    }
    case MRA_POOLS:
        m->mem_delta = (int64_t)(objs * pools_block(mean, m->thread_safe) - held_malloc);
        break;
    default:
        break;
    }
    if (r == MRA_ARENA) {
        double ap = (double)s->arena_peak_bytes;
        double site_peak = peak > 0 ? peak : 1;
        if (ap > th->retention_warn * site_peak || ap > th->retention_warn * (double)a->h.peak_live_bytes)
            m->retention = true;
    }
}

int mra_promote(struct msite *m, const struct mra_analysis *a, const struct mra_thresholds *th,
                const char *group, size_t nsites, double together_ns)
{
    double prog_ns = a->program_ns > 0 ? a->program_ns : 1;
    const struct mra_site_stats *s = &m->s;
    char *r = dupf("%s: %s; %llu allocations (>= %llu), saves %.2f ms = %.2f%% of the run (below %g%% alone), "
                   "%.2f ms = %.1f%% together with the %zu other site%s %s (>= %g%%): one mr_arena for them all; %s",
                   mra_rec_name(m->cand), m->rule, (unsigned long long)s->allocations,
                   (unsigned long long)th->min_allocations, m->cand_saving / 1e6, 100 * m->cand_saving / prog_ns,
                   100 * th->min_share, together_ns / 1e6, 100 * together_ns / prog_ns, nsites - 1,
                   nsites == 2 ? "" : "s", group, 100 * th->min_share, m->costed);
    if (!r)
        return -1;
    free(m->reason);
    m->reason = r;
    m->rec = m->cand;
    m->saving = m->cand_saving;
    m->near[0] = 0;
    if (together_ns < th->min_share * NEAR_FACTOR * prog_ns)
        snprintf(m->near, sizeof m->near, "saves %.2f%% of the run together with the sites %s (the 2%% rule: %g%%)",
                 100 * together_ns / prog_ns, group, 100 * th->min_share);
    judge_memory(m, a, th);
    return 0;
}

void mra_group_near(struct msite *m, const struct mra_analysis *a, const struct mra_thresholds *th,
                    const char *group, size_t nsites, double together_ns)
{
    double prog_ns = a->program_ns > 0 ? a->program_ns : 1;
    if (together_ns < th->min_share / NEAR_FACTOR * prog_ns)
        return;
    size_t len = strlen(m->near);
    snprintf(m->near + len, sizeof m->near - len, "%ssaves %.2f%% of the run together with the %zu other site%s %s",
             len ? "; " : "", 100 * together_ns / prog_ns, nsites - 1, nsites == 2 ? "" : "s", group);
}

/* Judges m (a live merged site): its recommendation, saving, reason and
 * memory.  0, or -1 out of memory. */
int mra_judge(struct msite *m, const struct mra_analysis *a, const struct mra_costs *c,
              const struct mra_thresholds *th)
{
    /* a judgement again (analyze.c: the run's time raised) replaces the last */
    free(m->reason);
    free(m->rule);
    free(m->costed);
    m->reason = m->rule = m->costed = NULL;
    judge_site(m, a, c, th);
    if (!m->reason)
        return -1;
    if (m->unresolved) {
        char *r2 = dupf("%s; every recorded frame is a wrapper or in libc: the caller is beyond the recorded depth, or the recorder could not unwind", m->reason);
        if (!r2)
            return -1;
        free(m->reason);
        m->reason = r2;
    }
    return 0;
}

void mra_sketch(const struct msite *m, char sk[2][160], const struct mra_thresholds *th)
{
    const struct mra_site_stats *s = &m->s;
    bool re = s->reallocs > 0;
    uint64_t dsize = s->nsizes ? s->sizes[0].size : 0;
    double never = share(s->live_objects, s->allocations);
    switch (m->rec) {
    case MRA_ARENA:
        snprintf(sk[0], 160, "mr_arena *a = mr_arena_create(NULL);  p = %s;",
                 re ? "mr_arena_alloc(a, n) /* realloc: mr_arena_realloc(a, p, old, n) */" : "mr_arena_alloc(a, n)");
        if (never >= th->at_exit_share)
            snprintf(sk[1], 160, "/* no free(p) */  mr_arena_destroy(a);  at exit, or never");
        else
            snprintf(sk[1], 160, "mr_arena_reset(a);  where the burst of free(p) was (one arena per structure)");
        break;
    case MRA_ARENA_REWIND:
        snprintf(sk[0], 160, "mr_arena_mark m = mr_arena_save(a);  p = mr_arena_alloc(a, n);");
        snprintf(sk[1], 160, "mr_arena_rewind(a, m);  where free(p) was (newest first)");
        break;
    case MRA_OBJPOOL:
        snprintf(sk[0], 160, "mr_objpool *op = mr_objpool_create(%llu, 16, %s);  p = mr_objpool_alloc(op);",
                 (unsigned long long)dsize, m->thread_safe ? "&(mr_objpool_options){.thread_safe = true}" : "NULL");
        snprintf(sk[1], 160, "mr_objpool_free(op, p);  where free(p) was (other sizes stay on malloc)");
        break;
    case MRA_POOLS:
        snprintf(sk[0], 160, "mr_pools *ps = mr_pools_create(%s);  p = mr_pools_alloc(ps, n, 16);",
                 m->thread_safe ? "&(mr_pools_options){.thread_safe = true}" : "NULL");
        snprintf(sk[1], 160, "mr_pools_free(ps, p, n, 16);  where free(p) was (free needs the size)%s",
                 re ? "; realloc: mr_pools_realloc(ps, p, old, n, 16)" : "");
        break;
    default:
        snprintf(sk[0], 160, "p = malloc(n);  (stays on malloc)");
        snprintf(sk[1], 160, "free(p);");
        break;
    }
}

/* One allocator behind a function: the sites whose allocations all reach
 * malloc from one function (an allocation wrapper, as Lua's lua_Alloc or a
 * program's xmalloc, or a function allocating at many lines of its callers'
 * stacks), each below the 2% rule alone, together worth size-class pools
 * behind that function.  The sites with sizes above max_small_size stay
 * on malloc; at least 90% of the function's allocations must fit. */
/* The function a frame is in: its interned name, else its address. */
static uintptr_t function_key(const struct mra_frame *f)
{
    return f->function ? (uintptr_t)f->function : (uintptr_t)f->addr;
}

static const struct work *sort_fw;

static int cmp_inner(const void *a, const void *b)
{
    const struct mra_frame *x = sort_fw->ms[*(const size_t *)a].inner;
    const struct mra_frame *y = sort_fw->ms[*(const size_t *)b].inner;
    uintptr_t mx = (uintptr_t)x->module, my = (uintptr_t)y->module;
    if (mx != my)
        return mx < my ? -1 : 1;
    uintptr_t kx = function_key(x), ky = function_key(y);
    return kx < ky ? -1 : kx > ky;
}

int mra_behind_functions(struct work *w, struct mra_analysis *a, const struct mra_costs *c,
                            const struct mra_thresholds *th)
{
    double prog_ns = a->program_ns > 0 ? a->program_ns : 1;
    /* the live sites by the function that called malloc: one pass per group */
    size_t *idx = malloc((w->n ? w->n : 1) * sizeof *idx);
    if (!idx)
        return -1;
    size_t n = 0;
    for (size_t i = 0; i < w->n; i++)
        if (!w->ms[i].dead && w->ms[i].inner)
            idx[n++] = i;
    sort_fw = w;
    qsort(idx, n, sizeof *idx, cmp_inner);
    for (size_t g = 0, e; g < n; g = e) {
        const struct mra_frame *f0 = w->ms[idx[g]].inner;
        for (e = g + 1; e < n && cmp_inner(&idx[e], &idx[g]) == 0; e++)
            ;
        size_t nsites = e - g, nfit = 0;
        uint64_t allocs = 0, fit = 0, remote = 0, frees = 0;
        double save = 0, alone = 0;
        for (size_t k = g; k < e; k++) {
            const struct msite *m = &w->ms[idx[k]];
            allocs += m->s.allocations;
            remote += m->s.remote_frees;
            frees += m->s.frees;
            if (m->rec != MRA_NONE)
                alone += m->saving;
            if (m->s.max_size > th->max_small_size || m->s.allocations == 0)
                continue;
            nfit++;
            fit += m->s.allocations;
        }
        if (nsites < 2 || nfit < 2 || (double)fit < 0.9 * (double)allocs)
            continue;
        bool ts = frees > 0 && (double)remote >= th->remote_share * (double)frees;
        for (size_t k = g; k < e; k++) {
            const struct msite *m = &w->ms[idx[k]];
            if (m->s.max_size > th->max_small_size)
                continue;
            double sv = saving_of(m, a, c, th, MRA_POOLS, ts, ts ? MRA_PAT_REMOTE : m->pattern, NULL);
            if (sv > 0)
                save += sv;
        }
        if (save < th->min_share * prog_ns || save <= alone)
            continue;
        if (a->nbehind == MRA_BEHIND_MAX) {
            /* keep the largest */
            size_t lo = 0;
            for (size_t k = 1; k < a->nbehind; k++)
                if (a->behind[k].predicted_saving_ns < a->behind[lo].predicted_saving_ns)
                    lo = k;
            if (a->behind[lo].predicted_saving_ns >= save)
                continue;
            free(a->behind[lo].raw_ids);
            a->nbehind--;
            a->behind[lo] = a->behind[a->nbehind];
        }
        size_t nraw = 0;
        for (size_t k = g; k < e; k++)
            nraw += w->ms[idx[k]].nraw;
        uint32_t *raw = malloc((nraw ? nraw : 1) * sizeof *raw);
        if (!raw) {
            free(idx);
            return -1;
        }
        nraw = 0;
        for (size_t k = g; k < e; k++) {
            const struct msite *m = &w->ms[idx[k]];
            memcpy(raw + nraw, m->raw, m->nraw * sizeof *raw);
            nraw += m->nraw;
        }
        struct mra_behind *b = &a->behind[a->nbehind++];
        memset(b, 0, sizeof *b);
        b->raw_ids = raw;
        b->nraw = nraw;
        b->frame = *f0;
        b->nsites = nsites;
        b->allocations = allocs;
        b->thread_safe = ts;
        b->predicted_saving_ns = save;
        snprintf(b->reason, sizeof b->reason,
                 "pools%s: %zu sites reach malloc from this function, %zu of them (%.1f%% of its %llu "
                 "allocations) with sizes <= max_small_size %llu; one mr_pools behind it saves %.2f ms = %.1f%% "
                 "of the run (>= min_share %g%%)%s",
                 ts ? " (thread-safe)" : "", nsites, nfit, 100.0 * (double)fit / (double)allocs,
                 (unsigned long long)allocs, (unsigned long long)th->max_small_size, save / 1e6,
                 100 * save / prog_ns, 100 * th->min_share,
                 alone > 0 ? ", more than its sites recommended alone" : ", where no site alone reaches it");
    }
    free(idx);
    /* by saving, descending */
    for (size_t x = 1; x < a->nbehind; x++)
        for (size_t y = x; y > 0 && a->behind[y].predicted_saving_ns > a->behind[y - 1].predicted_saving_ns; y--) {
            struct mra_behind t = a->behind[y];
            a->behind[y] = a->behind[y - 1];
            a->behind[y - 1] = t;
        }
    return 0;
}
