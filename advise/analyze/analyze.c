/* SPDX-License-Identifier: MIT */
/* advise/analyze/analyze.c -- raw call stacks turned into sites, and sites into
 * advice.
 *
 * Per raw site (one distinct recorded stack):
 *   1. its frames are symbolized, each return address expanded into its
 *      chain of inlined calls (innermost first);
 *   2. leading wrapper frames are folded: the built-in names below, the
 *      --wrapper names, and any frame in libc or the dynamic loader (and
 *      the recorder), so the site starts at the wrapper's caller;
 *   3. recursion is collapsed: a function met again further out closes a
 *      loop (direct recursion, or mutual recursion of any period), which
 *      is dropped, the function's innermost frame kept: a recursive
 *      builder whose two recursive calls interleave on the stack, or a
 *      recursive-descent parser, is one site whatever the depth;
 *   4. the stack is cut to --depth frames; raw sites that become equal are
 *      merged (counts, bytes, histograms and sizes added up; a merged
 *      site's peaks -- peak_live_objects, peak_live_bytes, arena_peak_bytes
 *      -- are the SUM of its raw sites' peaks: an upper bound, exact when
 *      their objects were live at the same time; realloc_chain_max and
 *      alloc_threads are the max: lower bounds);
 *   5. a site whose recorded stack was cut by the recording depth (all
 *      slots used) and that folded to fewer than --depth frames is merged
 *      into the one site that extends it, when exactly one does.
 * Then each site is judged by rules whose thresholds are in mra_thresholds
 * (mra_options_default says why each default is what it is), costed with
 * this machine's per-operation costs, and sorted.  Steps 1 to 5 are
 * fold.c's, the rules judge.c's; this file runs them and hands the sites
 * on. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sites.h"

static const struct msite *sort_ms;

static int cmp_order(const void *a, const void *b)
{
    const struct msite *x = &sort_ms[*(const size_t *)a], *y = &sort_ms[*(const size_t *)b];
    if (x->saving != y->saving)
        return x->saving > y->saving ? -1 : 1;
    if (x->s.bytes != y->s.bytes)
        return x->s.bytes > y->s.bytes ? -1 : 1;
    if (x->s.allocations != y->s.allocations)
        return x->s.allocations > y->s.allocations ? -1 : 1;
    return x->raw[0] < y->raw[0] ? -1 : x->raw[0] > y->raw[0];
}

/* The sites' timed glibc (glibc_sum in all) scaled so that it adds up to
 * at most the program's own time (<= 1). */
static double glibc_scale_of(double glibc_sum, double program_ns)
{
    return glibc_sum > program_ns && glibc_sum > 0 ? program_ns / glibc_sum : 1;
}

/* The run's speed against the calibration (struct mra_analysis.speed):
 * the recording's probes on its own thread (the mean of those that ran)
 * over the calibration's cell, held to [1/3, 3] (a probe that far off is
 * no figure of the machine); 1 without either. */
static double speed_of(const struct mra_profile *p, const struct mra_costs *c, double *probe)
{
    double sum = 0;
    int n = 0;
    if (p->speed.start_ns > 0) {
        sum += p->speed.start_ns;
        n++;
    }
    if (p->speed.exit_ns > 0) {
        sum += p->speed.exit_ns;
        n++;
    }
    *probe = n ? sum / n : 0;
    double ref = mra_costs_probe_ref(c);
    if (!n || !(ref > 0))
        return 1;
    return fmin(3, fmax(1.0 / 3, *probe / ref));
}

int mra_analyze(const struct mra_profile *p, struct mra_symbols *sym, const struct mra_costs *c,
                const struct mra_options *o, struct mra_analysis *a)
{
    memset(a, 0, sizeof *a);
    a->h = p->h;
    /* The program's own time: the recorded run's CPU time (user + system,
     * every thread: what measure compares, and what a loaded machine does
     * not stretch as it stretches the wall clock) less the recorder's time
     * in its hooks, never below a tenth of it (the sample is an estimate);
     * a profile without CPU time takes the wall clock. */
    double rec = p->h.end_ns > p->h.start_ns ? (double)(p->h.end_ns - p->h.start_ns) : 0;
    a->recorded_ns = rec;
    /* ... taken to the calibration's speed, as the timed figures below: a
     * recording on a virtual CPU that ran glibc's pair at 1.7x the
     * calibration's time timed kat_mixed's site at 119-138 ms, on the other
     * at 71 ms */
    a->speed = speed_of(p, c, &a->speed_probe_ns);
    a->speed_probes = p->speed;
    if (o->no_speed)
        a->speed = 1;
    double base = (p->h.cpu_ns ? (double)p->h.cpu_ns : rec) / a->speed;
    a->program_ns = base - (double)p->h.recorder_ns / a->speed;
    if (a->program_ns < base / 10)
        a->program_ns = base / 10;
    /* ... and never below what glibc's calls take at this machine's
     * calibration: where the recorder is most of a recorded run its sampled
     * hooks are an estimate too coarse for the difference (binary-trees at
     * depth 18: 9.7 s sampled in a run of 6.2 s, 1.36 s native), while its
     * 68 million pairs take glibc 0.94 s at the least.  After the rules,
     * the floor is what they costed glibc at (below).  Never above the
     * recorded run. */
    for (size_t i = 0; i < p->nsites; i++)
        if (!p->sites[i].s.free_stack)
            a->program_floor_ns += mra_glibc_floor(&p->sites[i].s, c);
    if (a->program_floor_ns > base)
        a->program_floor_ns = base;
    if (a->program_ns < a->program_floor_ns)
        a->program_ns = a->program_floor_ns;
    a->costs = *c;
    a->opts = *o;
    if (a->opts.depth == 0)
        a->opts.depth = 1;
    if (a->opts.depth > MRA_MAX_DEPTH)
        a->opts.depth = MRA_MAX_DEPTH;
    o = &a->opts;

    /* glibc's time is part of the program's: where the sites' timed glibc
     * adds up to more (the recorder's 32 bytes a block slow glibc more than
     * the program: kat_trees 16, 885 ms timed in a program of 278 ms),
     * every site's is scaled down alike */
    double glibc_sum = 0;
    for (size_t i = 0; i < p->nsites; i++)
        if (!p->sites[i].s.free_stack)
            glibc_sum += (double)p->sites[i].s.glibc_ns;
    a->glibc_clamp = glibc_scale_of(glibc_sum / a->speed, a->program_ns);
    a->glibc_scale = a->glibc_clamp / a->speed;

    /* memory glibc gave back and took again: the program faults its pages
     * in a second time (an allocator that keeps its memory would not) */
    a->heap = p->heap;
    a->heap_retaken_ns = (double)p->heap.retaken_bytes / 4096.0 * c->page_fault[0];
    /* The timed model counts a site's slow calls (over 1 us) at the share
     * of its bytes that reuse memory, as page faults of memory glibc gave
     * back and takes again.  A profile with the heap's section says how
     * much it took again: those calls cost no more than faulting that in
     * (Debian's lua5.4 on the Lua benchmark: 39 ms of slow calls counted
     * at 71-87% where glibc took nothing again, the prediction 2.4x the
     * allocators' measured saving). */
    a->slow_scale = 1;
    if (p->h.version >= 6) {
        double counted = 0;
        for (size_t i = 0; i < p->nsites; i++)
            if (!p->sites[i].s.free_stack)
                counted += mra_slow_reused(&p->sites[i].s, MRA_NONE) / a->speed;
        if (p->heap.retaken_bytes == 0)
            a->slow_scale = 0;
        else if (a->heap_retaken_ns > 0 && counted > a->heap_retaken_ns)
            a->slow_scale = a->heap_retaken_ns / counted;
    }

    struct work w = { 0 };
    size_t *at_id = NULL;
    size_t nid = 1;
    for (size_t i = 0; i < p->nsites; i++)
        if (p->sites[i].s.id >= nid)
            nid = (size_t)p->sites[i].s.id + 1;
    at_id = malloc(nid * sizeof *at_id);
    if (!at_id)
        goto nomem;
    memset(at_id, 0xff, nid * sizeof *at_id);
    if (p->tl.npoints) {
        a->timeline = malloc(p->tl.npoints * sizeof *a->timeline);
        if (!a->timeline)
            goto nomem;
        memcpy(a->timeline, p->timeline, p->tl.npoints * sizeof *a->timeline);
        a->tl = p->tl;
    }
    for (size_t i = 0; i < p->nsites; i++) {
        at_id[p->sites[i].s.id] = i;
        if (p->sites[i].s.free_stack)
            continue; /* where frees come from: no site of its own */
        if (mra_fold_raw(&w, &p->sites[i], p->h.depth, sym, o) != 0)
            goto nomem;
        if ((i & 4095) == 4095)
            mra_progress("sites", i + 1, p->nsites);
    }
    if (mra_fold_cut(&w) != 0)
        goto nomem;

    size_t live = 0;
    for (size_t i = 0; i < w.n; i++) {
        if (w.ms[i].dead)
            continue;
        if (mra_judge(&w.ms[i], a, c, &o->th) != 0)
            goto nomem;
        live++;
        if ((i & 4095) == 4095)
            mra_progress("rules", i + 1, w.n);
    }
    /* The rules' glibc, summed, is part of the program's time: where it
     * is more than the time taken for the program, that time was too low
     * (binary-trees: the calibration's warm pairs of its sites' patterns
     * came to 1.07 s, where the floor above is 0.94 s and two sites would
     * save 104% of it), and the sites are judged again against it. */
    double costed = 0;
    for (size_t i = 0; i < w.n; i++)
        if (!w.ms[i].dead)
            costed += w.ms[i].glibc_costed;
    if (costed > base)
        costed = base;
    if (costed > a->program_ns) {
        a->program_ns = a->program_floor_ns = costed;
        a->glibc_clamp = glibc_scale_of(glibc_sum / a->speed, a->program_ns);
        a->glibc_scale = a->glibc_clamp / a->speed;
        for (size_t i = 0; i < w.n; i++)
            if (!w.ms[i].dead && mra_judge(&w.ms[i], a, c, &o->th) != 0)
                goto nomem;
    }
    if (mra_free_groups(&w, a, p, at_id, nid, sym, &o->th) != 0)
        goto nomem;
    if (mra_behind_functions(&w, a, c, &o->th) != 0)
        goto nomem;
    size_t *idx = malloc((live ? live : 1) * sizeof *idx);
    if (!idx)
        goto nomem;
    size_t k = 0, nrec = 0;
    for (size_t i = 0; i < w.n; i++)
        if (!w.ms[i].dead) {
            idx[k++] = i;
            nrec += w.ms[i].rec != MRA_NONE;
            if (w.ms[i].rec != MRA_NONE)
                a->total_saving_ns += w.ms[i].saving;
        }
    sort_ms = w.ms;
    qsort(idx, live, sizeof *idx, cmp_order);

    /* The sites handed on: every recommended one, and the others down to
     * at least --top and 4096 in all (a program with a hundred thousand
     * call stacks would otherwise cost 4 KiB each). */
    size_t keep = nrec;
    if (keep < o->top)
        keep = o->top;
    if (keep < 4096)
        keep = 4096;
    if (keep > live)
        keep = live;
    a->nsites_total = live;
    a->sites = calloc(keep ? keep : 1, sizeof *a->sites);
    if (!a->sites) {
        free(idx);
        goto nomem;
    }
    for (size_t i = 0; i < keep; i++) {
        struct msite *m = &w.ms[idx[i]];
        struct mra_site *s = &a->sites[i];
        s->id = (unsigned)(i + 1);
        s->nframes = m->nfr;
        for (unsigned f = 0; f < m->nfr; f++)
            s->frames[f] = *w.fpool[m->fr + f];
        s->s = m->s;
        s->raw_ids = m->raw;
        s->nraw = m->nraw;
        m->raw = NULL;
        s->rec = m->rec;
        s->candidate = m->cand;
        s->thread_safe = m->thread_safe;
        s->pattern = m->pattern;
        snprintf(s->reason, sizeof s->reason, "%s", m->reason);
        snprintf(s->near, sizeof s->near, "%s", m->near);
        s->predicted_saving_ns = m->saving;
        s->candidate_saving_ns = m->rec != MRA_NONE ? m->saving : m->cand_saving;
        s->memory_delta_bytes = m->mem_delta;
        s->retention_warning = m->retention;
        mra_sketch(m, s->sketch, &o->th);
        mra_freed_fill(s, p, at_id, nid, sym);
        mra_change(s, s->s.allocations ? (double)s->s.live_objects / (double)s->s.allocations : 0,
                   o->th.at_exit_share);
        for (size_t r = 0; r < s->nraw; r++)
            for (uint32_t j = 0; j < p->heap.nsites; j++)
                if (p->heap_sites[j].site == s->raw_ids[r]) {
                    s->heap_given_back += p->heap_sites[j].given_back_bytes;
                    s->heap_retaken += p->heap_sites[j].retaken_bytes;
                }
        a->nsites++;
    }
    /* folded names, kept apart from the work */
    a->folded = calloc(w.nfolded ? w.nfolded : 1, sizeof *a->folded);
    if (!a->folded) {
        free(idx);
        goto nomem;
    }
    if (w.nfolded)
        memcpy(a->folded, w.folded, w.nfolded * sizeof *a->folded);
    a->nfolded = w.nfolded;
    free(idx);
    free(at_id);
    /* the raw lists not handed on */
    mra_work_free(&w);
    return 0;

nomem:
    free(at_id);
    mra_work_free(&w);
    mra_analysis_free(a);
    fprintf(stderr, "memres-advise: out of memory in the analysis\n");
    return -1;
}

void mra_analysis_free(struct mra_analysis *a)
{
    if (a->sites)
        for (size_t i = 0; i < a->nsites; i++)
            free(a->sites[i].raw_ids);
    free(a->sites);
    for (size_t i = 0; i < a->nbehind; i++)
        free(a->behind[i].raw_ids);
    a->nbehind = 0;
    free(a->folded);
    free(a->timeline);
    a->sites = NULL;
    a->folded = NULL;
    a->timeline = NULL;
    a->tl.npoints = 0;
    a->nsites = a->nfolded = 0;
}

/* ---- figures for the reports ---- */

double mra_hist_quantile(const uint64_t hist[MRA_HIST], double q)
{
    uint64_t total = 0;
    for (unsigned b = 0; b < MRA_HIST; b++)
        total += hist[b];
    if (!total)
        return 0;
    double want = q * (double)total, cum = 0;
    for (unsigned b = 0; b < MRA_HIST; b++) {
        if (!hist[b])
            continue;
        if (cum + (double)hist[b] >= want) {
            if (b == 0)
                return 0;
            double lo = exp2((double)b - 1), hi = exp2((double)b);
            double f = (want - cum) / (double)hist[b];
            return lo + f * (hi - lo);
        }
        cum += (double)hist[b];
    }
    return exp2((double)MRA_HIST - 1);
}
