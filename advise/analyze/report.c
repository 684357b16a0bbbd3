/* SPDX-License-Identifier: MIT */
/* advise/analyze/report.c -- the text report (top --top sites) and the JSON one
 * (every site the analysis hands on; DESIGN.md's fields, "version": 1,
 * plus the figures behind each rule). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis.h"

/* ---- formatting ---- */

static const char *fmt_count(char *b, size_t cap, uint64_t v)
{
    char t[32];
    int n = snprintf(t, sizeof t, "%llu", (unsigned long long)v);
    size_t o = 0;
    for (int i = 0; i < n && o + 2 < cap; i++) {
        if (i && (n - i) % 3 == 0)
            b[o++] = ',';
        b[o++] = t[i];
    }
    b[o] = '\0';
    return b;
}

static const char *fmt_bytes(char *b, size_t cap, double v)
{
    const char *neg = v < 0 ? "-" : "";
    v = fabs(v);
    if (v < 10 * 1024.0)
        snprintf(b, cap, "%s%.0f B", neg, v);
    else if (v < 10 * 1024.0 * 1024)
        snprintf(b, cap, "%s%.1f KiB", neg, v / 1024);
    else if (v < 10 * 1024.0 * 1024 * 1024)
        snprintf(b, cap, "%s%.1f MiB", neg, v / (1024.0 * 1024));
    else
        snprintf(b, cap, "%s%.1f GiB", neg, v / (1024.0 * 1024 * 1024));
    return b;
}

static const char *fmt_ns(char *b, size_t cap, double ns)
{
    if (ns < 1e3)
        snprintf(b, cap, "%.0f ns", ns);
    else if (ns < 1e6)
        snprintf(b, cap, "%.1f us", ns / 1e3);
    else if (ns < 1e9)
        snprintf(b, cap, "%.1f ms", ns / 1e6);
    else
        snprintf(b, cap, "%.2f s", ns / 1e9);
    return b;
}

static const char *base_name(const char *p)
{
    const char *b = p ? strrchr(p, '/') : NULL;
    return b ? b + 1 : p;
}

/* A source path relative to the working directory when under it. */
static const char *short_path(const char *f)
{
    static char cwd[4096];
    static size_t cwdlen = (size_t)-1;
    if (cwdlen == (size_t)-1)
        cwdlen = getcwd(cwd, sizeof cwd) ? strlen(cwd) : 0;
    if (cwdlen > 1 && strncmp(f, cwd, cwdlen) == 0 && f[cwdlen] == '/')
        return f + cwdlen + 1;
    return f;
}

static void print_frame(FILE *o, const struct mra_frame *f)
{
    if (f->function && f->file)
        fprintf(o, "%s %s:%u", f->function, short_path(f->file), f->line);
    else if (f->function)
        fprintf(o, "%s+0x%llx (%s)", f->function, (unsigned long long)f->offset,
                f->module ? base_name(f->module) : "?");
    else if (f->module)
        fprintf(o, "0x%llx (%s+0x%llx)", (unsigned long long)f->addr, base_name(f->module),
                (unsigned long long)f->offset);
    else
        fprintf(o, "0x%llx (no module)", (unsigned long long)f->addr);
}

/* Line `line` of file, its leading blanks dropped, cut to cap - 1
 * bytes: true, or false where the file cannot be read or is shorter. */
static bool source_line(const char *file, unsigned line, char *buf, size_t cap)
{
    FILE *f = line ? fopen(file, "r") : NULL;
    if (!f)
        return false;
    char text[4096];
    unsigned n = 0;
    bool found = false;
    while (fgets(text, sizeof text, f)) {
        size_t len = strlen(text);
        bool whole = len > 0 && text[len - 1] == '\n';
        if (++n == line) {
            const char *t = text;
            while (*t == ' ' || *t == '\t')
                t++;
            size_t k = strcspn(t, "\r\n");
            if (k >= cap)
                k = cap - 1;
            memcpy(buf, t, k);
            buf[k] = 0;
            found = buf[0] != 0;
            break;
        }
        while (!whole && fgets(text, sizeof text, f)) { /* the rest of a long line */
            len = strlen(text);
            whole = len > 0 && text[len - 1] == '\n';
        }
    }
    fclose(f);
    return found;
}

static double share(uint64_t a, uint64_t b)
{
    return b ? (double)a / (double)b : 0.0;
}

static const char *rec_label(const struct mra_site *s)
{
    if (s->rec == MRA_POOLS && s->thread_safe)
        return "pools (thread-safe)";
    if (s->rec == MRA_OBJPOOL && s->thread_safe)
        return "objpool (thread-safe)";
    return mra_rec_name(s->rec);
}

static void print_thresholds(FILE *o, const struct mra_thresholds *t)
{
    fprintf(o,
            "rules: none below min_allocations %llu or a saving below min_share %g%% of the run;\n"
            "       arena when >= at_exit_share %.0f%% never freed, or >= together_share %.0f%% freed in bursts "
            "that leave nothing younger of the site live, or never freed;\n"
            "       but pools when realloc moves >= 1%% of its objects and an arena would hold > moved_retention "
            "%.1fx the site's peak;\n"
            "       arena-rewind when >= stack_share %.0f%% of frees free the youngest live object;\n"
            "       objpool when one size <= max_small_size %llu B is >= dominant_size_share %.0f%% of "
            "allocations and realloc resizes under 1%% of them; pools when all sizes <= %llu B;\n"
            "       thread-safe pools/objpool (never an arena) when >= remote_share %.0f%% of frees are remote;\n"
            "       retention warning when an arena would hold > retention_warn %.1fx the site's or the "
            "program's peak live bytes\n",
            (unsigned long long)t->min_allocations, 100 * t->min_share, 100 * t->at_exit_share,
            100 * t->together_share, t->moved_retention, 100 * t->stack_share, (unsigned long long)t->max_small_size,
            100 * t->dominant_size_share, (unsigned long long)t->max_small_size, 100 * t->remote_share,
            t->retention_warn);
}

/* Frames, innermost first, each with its source line where it has one. */
static void print_frames(FILE *o, const struct mra_frame *fr, unsigned n)
{
    for (unsigned f = 0; f < n; f++) {
        fprintf(o, "    %s ", f ? "from" : "at  ");
        print_frame(o, &fr[f]);
        fputc('\n', o);
        char src[160];
        if (fr[f].file && source_line(fr[f].file, fr[f].line, src, sizeof src))
            fprintf(o, "         | %s\n", src);
    }
}

/* The tunables that keep glibc from giving memory back: the trim
 * threshold at its largest and the mmap threshold at its largest (32 MiB
 * on 64-bit; a fixed one also ends its dynamic adjustment). */
const char mra_keep_tunables[] =
    "glibc.malloc.trim_threshold=4294967295:glibc.malloc.mmap_threshold=33554432";

/* What glibc gave back and took again: the run's line, and the finding
 * where it passes the 2% rule. */
static void print_heap(FILE *o, const struct mra_analysis *a)
{
    char b1[32], b2[32], b3[32], b4[32], b5[32];
    const struct mra_heap_header *hp = &a->heap;
    fprintf(o, "glibc gave %s back to the system (%s trims and unmaps) and took %s of it again (%s times)",
            fmt_bytes(b1, sizeof b1, (double)hp->given_back_bytes), fmt_count(b2, sizeof b2, hp->given_back_events),
            fmt_bytes(b3, sizeof b3, (double)hp->retaken_bytes), fmt_count(b4, sizeof b4, hp->retaken_events));
    if (a->heap_retaken_ns > 0)
        fprintf(o, ": pages faulted in a second time, about %s (%.1f%% of the run) at this machine's %s a page",
                fmt_ns(b5, sizeof b5, a->heap_retaken_ns),
                a->program_ns > 0 ? 100 * a->heap_retaken_ns / a->program_ns : 0,
                fmt_ns(b1, sizeof b1, a->costs.page_fault[0]));
    fputc('\n', o);
    if (!(a->program_ns > 0) || !(a->heap_retaken_ns > 0) || a->heap_retaken_ns < a->opts.th.min_share * a->program_ns)
        return;
    fprintf(o, "  memory kept would save that: GLIBC_TUNABLES=%s for the unchanged program (or mallopt's "
               "M_TRIM_THRESHOLD and M_MMAP_THRESHOLD in it), an allocator that keeps what is freed, or memres "
               "resources at the sites whose frees gave it back (below, \"glibc's heap\"); memres-advise "
               "measure runs it so\n",
            mra_keep_tunables);
}

/* Whether no site passes the rule but the ncand candidates (cand ns) pass it
 * together: none pays alone, so a change in the source per site is not
 * advice, but one plan of them, applied to the unchanged program, is. */
static bool candidates_together(const struct mra_analysis *a, size_t ncand, double cand)
{
    return ncand > 1 && a->program_ns > 0 && cand >= a->opts.th.min_share * a->program_ns;
}

void mra_report_text(FILE *o, const struct mra_analysis *a)
{
    char b1[64], b2[64], b3[64], b4[64], b5[64], b6[64];
    const struct mra_profile_header *h = &a->h;
    /* the command's name where the file run is another's (dot, a link to
     * libgvc6-config-update) */
    const char *cb = a->command ? strrchr(a->command, '/') : NULL, *pb = strrchr(h->program, '/');
    cb = cb ? cb + 1 : a->command;
    pb = pb ? pb + 1 : h->program;
    if (cb && *cb && strcmp(cb, pb) != 0)
        fprintf(o, "== memres-advise: %s (%s, pid %llu) ==\n", a->command, h->program, (unsigned long long)h->pid);
    else
        fprintf(o, "== memres-advise: %s (pid %llu) ==\n", h->program, (unsigned long long)h->pid);
    if (a->exec_into)
        fprintf(o, "the process exec'd %s after this profile was written; that program was not profiled (a "
                   "wrapper? run memres-advise on the program it runs)\n",
                a->exec_into);
    if (h->cpu_ns && a->program_floor_ns > 0 && a->program_ns <= a->program_floor_ns &&
        (double)h->cpu_ns - (double)h->recorder_ns < a->program_ns)
        fprintf(o,
                "run time %s CPU (at least what glibc's calls take at this machine's calibration; the "
                "recorder's hooks, sampled, came to %s of the %s recorded (user + system)%s%s: an estimate too "
                "coarse where the recorder is most of the run%s; %s wall)",
                fmt_ns(b1, sizeof b1, a->program_ns), fmt_ns(b3, sizeof b3, (double)h->recorder_ns),
                fmt_ns(b5, sizeof b5, (double)h->cpu_ns), h->recorder_ns < h->cpu_ns ? ", leaving " : "",
                h->recorder_ns < h->cpu_ns ? fmt_ns(b2, sizeof b2, (double)(h->cpu_ns - h->recorder_ns)) : "",
                a->speed_probes.sample_bytes ? "" : " (--sample 1024 records a sample, at about half the cost)",
                fmt_ns(b6, sizeof b6, a->recorded_ns));
    else if (h->cpu_ns) {
        /* where the hooks are most of the recorded run, the program's time is
         * the small difference of two large figures, and the hooks' timed
         * samples overstate them (Debian's cppcheck: 85% of the run, the
         * estimate 0.37-0.67x its native run) */
        double hooks = (double)h->cpu_ns - a->program_ns * a->speed;
        char most[300] = "";
        if (hooks > 0.5 * (double)h->cpu_ns)
            snprintf(most, sizeof most,
                     "; the hooks are %.0f%% of the recorded run: the program's own time is a rough estimate "
                     "(often low), and so are the shares of it below; measure times the program alone%s",
                     100 * hooks / (double)h->cpu_ns,
                     a->speed_probes.sample_bytes ? "" : "; --sample 1024 records a sample, at about half the cost");
        fprintf(o, "run time %s CPU (user + system: %s under the recorder less %s in its hooks; %s wall%s)",
                fmt_ns(b1, sizeof b1, a->program_ns), fmt_ns(b5, sizeof b5, (double)h->cpu_ns),
                fmt_ns(b3, sizeof b3, hooks), fmt_ns(b6, sizeof b6, a->recorded_ns), most);
    } else
        fprintf(o, "run time %s (%s under the recorder, less %s in its hooks)", fmt_ns(b1, sizeof b1, a->program_ns),
                fmt_ns(b6, sizeof b6, a->recorded_ns),
                fmt_ns(b5, sizeof b5, a->recorded_ns - a->program_ns * a->speed));
    fprintf(o, "; %s allocations, %s frees, %s reallocs, %s requested\n", fmt_count(b2, sizeof b2, h->allocations),
            fmt_count(b3, sizeof b3, h->frees), fmt_count(b4, sizeof b4, h->reallocs),
            fmt_bytes((char[32]){ 0 }, 32, (double)h->bytes));
    if (a->speed_probe_ns > 0)
        fprintf(o,
                "speed: glibc's pair of the calibration (32 bytes, random order) took %.1f ns on the program's "
                "thread (%.1f at start, %.1f at exit), %.1f in the calibration: %s\n",
                a->speed_probe_ns, a->speed_probes.start_ns, a->speed_probes.exit_ns, mra_costs_probe_ref(&a->costs),
                a->speed != 1 ? "the run's times and its timed figures are taken to the calibration's speed"
                              : "the run's times as timed (MEMRES_ADVISE_RECORDING_SPEED=0, or no calibration)");
    fprintf(o, "peak live %s in %s objects; at exit %s in %s objects; %llu thread%s; %llu foreign frees\n",
            fmt_bytes(b1, sizeof b1, (double)h->peak_live_bytes), fmt_count(b2, sizeof b2, h->peak_live_objects),
            fmt_bytes(b3, sizeof b3, (double)h->live_bytes_at_exit),
            fmt_count(b4, sizeof b4, h->live_objects_at_exit), (unsigned long long)h->threads,
            h->threads == 1 ? "" : "s", (unsigned long long)h->foreign_frees);
    if (a->tl.npoints) {
        const struct mra_timeline_point *pk = &a->timeline[a->tl.peak], *end = &a->timeline[a->tl.npoints - 1];
        fprintf(o, "live bytes peaked at %s, %s into the run, at allocation %s of %s (timeline of %u points)\n",
                fmt_bytes(b1, sizeof b1, (double)pk->live_bytes), fmt_ns(b2, sizeof b2, (double)pk->time_ns),
                fmt_count(b3, sizeof b3, pk->allocations), fmt_count(b4, sizeof b4, end->allocations),
                a->tl.npoints);
    }
    if (a->heap.given_back_bytes)
        print_heap(o, a);
    fprintf(o, "%zu sites from %llu recorded call stacks, depth %u (recorded %u); recorder memory peak %s",
            a->nsites_total, (unsigned long long)h->nsites, a->opts.depth, h->depth,
            fmt_bytes(b1, sizeof b1, (double)h->recorder_peak_bytes));
    if (h->trace_events)
        fprintf(o, "; trace %s events, %.2f bytes/event", fmt_count(b2, sizeof b2, h->trace_events),
                share(h->trace_bytes, h->trace_events));
    fputc('\n', o);
    if (a->speed_probes.sample_bytes)
        fprintf(o, "sampled (--sample %llu): one allocation recorded per %llu bytes on average, each standing "
                   "for those of its size not recorded; each site's figures are estimates, the program's "
                   "totals above counted\n",
                (unsigned long long)a->speed_probes.sample_bytes, (unsigned long long)a->speed_probes.sample_bytes);
    fprintf(o, "folded wrappers:");
    if (!a->nfolded)
        fprintf(o, " none");
    for (size_t i = 0; i < a->nfolded; i++)
        fprintf(o, "%s %s", i ? "," : "", a->folded[i]);
    fputc('\n', o);
    print_thresholds(o, &a->opts.th);
    fprintf(o, "costs: %s\n", a->costs.machine[0] ? a->costs.machine : "(not calibrated: savings are 0)");

    size_t top = a->opts.top < a->nsites ? a->opts.top : a->nsites;
    for (size_t i = 0; i < top; i++) {
        const struct mra_site *s = &a->sites[i];
        const struct mra_site_stats *st = &s->s;
        fprintf(o, "\n#%u  %s", s->id, rec_label(s));
        if (s->rec != MRA_NONE)
            fprintf(o, "  saves %s (%.1f%% of the run)", fmt_ns(b1, sizeof b1, s->predicted_saving_ns),
                    a->program_ns > 0 ? 100 * s->predicted_saving_ns / a->program_ns : 0);
        fputc('\n', o);
        print_frames(o, s->frames, s->nframes);
        if (s->rec != MRA_NONE && s->nframes > 0 && !s->frames[0].file)
            fprintf(o, "  (no file:line: the program has no debug information here; build it with -g, or install "
                       "its -dbgsym package from Debian's debug archive, then run again)\n");
        fprintf(o, "  allocations %s (%s), frees %s; sizes", fmt_count(b1, sizeof b1, st->allocations),
                fmt_bytes(b2, sizeof b2, (double)st->bytes), fmt_count(b3, sizeof b3, st->frees));
        for (unsigned k = 0; k < st->nsizes && k < 4; k++)
            fprintf(o, "%s %llu B x%s", k ? "," : "", (unsigned long long)st->sizes[k].size,
                    fmt_count(b1, sizeof b1, st->sizes[k].count));
        if (st->nsizes > 4 || st->other_sizes_count)
            fprintf(o, " ... (%llu..%llu B)", (unsigned long long)st->min_size, (unsigned long long)st->max_size);
        fputc('\n', o);
        fprintf(o, "  peak live %s objects / %s; never freed %s (%s); arena of the site would peak at %s\n",
                fmt_count(b1, sizeof b1, st->peak_live_objects),
                fmt_bytes(b2, sizeof b2, (double)st->peak_live_bytes), fmt_count(b3, sizeof b3, st->live_objects),
                fmt_bytes(b4, sizeof b4, (double)st->live_bytes),
                fmt_bytes((char[32]){ 0 }, 32, (double)st->arena_peak_bytes));
        if (st->frees) {
            fprintf(o, "  lifetime: median %.0f / p90 %.0f allocations, median %s / p90 %s\n",
                    mra_hist_quantile(st->hist_ticks, 0.5), mra_hist_quantile(st->hist_ticks, 0.9),
                    fmt_ns(b1, sizeof b1, mra_hist_quantile(st->hist_ns, 0.5)),
                    fmt_ns(b2, sizeof b2, mra_hist_quantile(st->hist_ns, 0.9)));
            fprintf(o, "  frees: %.1f%% together, %.1f%% stack-like, %.1f%% by another thread",
                    100 * share(st->freed_together, st->frees), 100 * share(st->stack_like, st->frees),
                    100 * share(st->remote_frees, st->frees));
        } else {
            fprintf(o, "  frees: none");
        }
        if (st->reallocs)
            fprintf(o, "; reallocs %s (%s moved, longest chain %llu)", fmt_count(b1, sizeof b1, st->reallocs),
                    fmt_count(b2, sizeof b2, st->realloc_moves), (unsigned long long)st->realloc_chain_max);
        if (st->alloc_threads > 1)
            fprintf(o, "; %llu allocating threads", (unsigned long long)st->alloc_threads);
        fputc('\n', o);
        if (st->glibc_samples)
            fprintf(o, "  in glibc %s (timed in the run, %s samples; %s of it in calls over 1 us: page faults, "
                       "system calls): what its malloc, realloc and free took for these objects, under the recorder\n",
                    fmt_ns(b1, sizeof b1, (double)st->glibc_ns), fmt_count(b2, sizeof b2, st->glibc_samples),
                    fmt_ns(b3, sizeof b3, (double)st->glibc_slow_ns));
        if (s->heap_given_back || s->heap_retaken) {
            fprintf(o, "  glibc's heap: its frees gave %s back to the system",
                    fmt_bytes(b1, sizeof b1, (double)s->heap_given_back));
            if (s->heap_retaken)
                fprintf(o, "; its chunks glibc mapped took %s of what was given back again",
                        fmt_bytes(b2, sizeof b2, (double)s->heap_retaken));
            fputc('\n', o);
        }
        for (unsigned k = 0; k < s->nfreed; k++) {
            fprintf(o, "  freed (%.0f%% of the sampled frees):\n", 100 * s->freed[k].share);
            print_frames(o, s->freed[k].frames, s->freed[k].nframes);
        }
        fprintf(o, "  recommendation: %s\n  reason: %s\n", rec_label(s), s->reason);
        if (s->change[0])
            fprintf(o, "  change: %s\n", s->change);
        if (s->near[0])
            fprintf(o, "  near a threshold: %s; another run, other input or another machine's costs may decide "
                       "otherwise (memres-advise measure tells)\n",
                    s->near);
        if (s->rec != MRA_NONE) {
            fprintf(o, "  memory: %s%s (estimate: held by the plan at its peak minus held by malloc)\n",
                    s->memory_delta_bytes >= 0 ? "+" : "", fmt_bytes(b1, sizeof b1, (double)s->memory_delta_bytes));
            if (s->retention_warning)
                fprintf(o,
                        "  warning: one arena for the whole site would hold %s, %.1fx the site's peak live %s "
                        "(program peak %s): reset it per structure, or use a pool\n",
                        fmt_bytes(b1, sizeof b1, (double)st->arena_peak_bytes),
                        share(st->arena_peak_bytes, st->peak_live_bytes ? st->peak_live_bytes : 1),
                        fmt_bytes(b2, sizeof b2, (double)st->peak_live_bytes),
                        fmt_bytes(b3, sizeof b3, (double)h->peak_live_bytes));
            fprintf(o, "  sketch:\n    %s\n    %s\n", s->sketch[0], s->sketch[1]);
        }
    }
    for (size_t i = 0; i < a->nbehind; i++) {
        const struct mra_behind *b = &a->behind[i];
        fprintf(o, "\nbehind one function: %s  saves %s (%.1f%% of the run)\n    at   ",
                b->thread_safe ? "pools (thread-safe)" : "pools", fmt_ns(b1, sizeof b1, b->predicted_saving_ns),
                a->program_ns > 0 ? 100 * b->predicted_saving_ns / a->program_ns : 0);
        print_frame(o, &b->frame);
        fprintf(o, "\n  %zu sites, %s allocations\n  reason: %s\n", b->nsites, fmt_count(b2, sizeof b2, b->allocations),
                b->reason);
        fprintf(o, "  predicted for the change in the source (mr_pools behind the function); measure runs it under\n"
                   "  the apply runtime, whose pools are its own engine behind malloc and free\n");
        fprintf(o, "  sketch:\n    p = mr_pools_alloc(pools, n, 16);  in the function, for malloc(n)\n"
                   "    mr_pools_free(pools, p, n, 16);  for free(p): the size from the caller (as lua_Alloc "
                   "gives it) or kept in front of the block\n");
    }
    size_t nrec = 0;
    for (size_t i = 0; i < a->nsites; i++)
        nrec += a->sites[i].rec != MRA_NONE;
    fprintf(o, "\ntotal: %zu site%s recommended, predicted saving %s (%.1f%% of the run)", nrec,
            nrec == 1 ? "" : "s", fmt_ns(b1, sizeof b1, a->total_saving_ns),
            a->program_ns > 0 ? 100 * a->total_saving_ns / a->program_ns : 0);
    if (a->nbehind) {
        double b = 0;
        for (size_t i = 0; i < a->nbehind; i++)
            b += a->behind[i].predicted_saving_ns;
        fprintf(o, "; pools behind %zu function%s: %s", a->nbehind, a->nbehind == 1 ? "" : "s",
                fmt_ns(b2, sizeof b2, b));
    }
    if (a->nsites_total > top)
        fprintf(o, "; %zu more site%s not shown (--top)", a->nsites_total - top,
                a->nsites_total - top == 1 ? "" : "s");
    fputc('\n', o);
    /* a "none" with candidates under the rule: what measuring checks */
    double cand;
    size_t ncand = mra_candidates_only(a, &cand);
    if (candidates_together(a, ncand, cand))
        fprintf(o,
                "under the rule one by one: %zu candidate sites, predicted %s together (%.1f%% of the run),\n"
                "above the %g%% rule as one plan: --plan FILE --plan-candidates writes it, memres-advise apply\n"
                "runs it in the unchanged program, and memres-advise measure says what it saves; a prediction\n"
                "sees the time in glibc's calls, not what the program's own code gains from objects made side\n"
                "by side\n",
                ncand, fmt_ns(b1, sizeof b1, cand), 100 * cand / a->program_ns, 100 * a->opts.th.min_share);
    else if (ncand > 0)
        fprintf(o,
                "under the rule: %zu candidate site%s, predicted %s (%.1f%% of the run); a prediction sees the\n"
                "time in glibc's calls, not what the program's own code gains from objects made side by side:\n"
                "memres-advise measure applies the candidates and says what they save\n",
                ncand, ncand == 1 ? "" : "s", fmt_ns(b1, sizeof b1, cand),
                a->program_ns > 0 ? 100 * cand / a->program_ns : 0);
}

/* ---- JSON ---- */

static void jstr(FILE *o, const char *s);
static void jframe(FILE *o, const struct mra_frame *fr)
{
    fprintf(o, "{\"function\": ");
    jstr(o, fr->function);
    fprintf(o, ", \"file\": ");
    jstr(o, fr->file);
    if (fr->file)
        fprintf(o, ", \"line\": %u", fr->line);
    else
        fprintf(o, ", \"line\": null");
    fprintf(o, ", \"module\": ");
    jstr(o, fr->module);
    fprintf(o, ", \"address\": \"0x%llx\", \"offset\": %llu}", (unsigned long long)fr->addr,
            (unsigned long long)fr->offset);
}

static void jstr(FILE *o, const char *s)
{
    if (!s) {
        fputs("null", o);
        return;
    }
    fputc('"', o);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", o); break;
        case '\\': fputs("\\\\", o); break;
        case '\n': fputs("\\n", o); break;
        case '\r': fputs("\\r", o); break;
        case '\t': fputs("\\t", o); break;
        case '\b': fputs("\\b", o); break;
        case '\f': fputs("\\f", o); break;
        default:
            if (*p < 0x20 || *p == 0x7f) {
                fprintf(o, "\\u%04x", *p);
            } else if (*p < 0x80) {
                fputc(*p, o);
            } else {
                /* UTF-8 passes through; a byte that starts no valid sequence becomes U+FFFD */
                unsigned n = (*p & 0xe0) == 0xc0 ? 1 : (*p & 0xf0) == 0xe0 ? 2 : (*p & 0xf8) == 0xf0 ? 3 : 0;
                unsigned k = 0;
                while (k < n && (p[k + 1] & 0xc0) == 0x80)
                    k++;
                if (n == 0 || k < n || *p == 0xc0 || *p == 0xc1 || *p > 0xf4) {
                    fputs("\\ufffd", o);
                } else {
                    fwrite(p, 1, n + 1, o);
                    p += n;
                }
            }
        }
    }
    fputc('"', o);
}

static void jnum(FILE *o, double v)
{
    if (!isfinite(v))
        v = 0;
    if (v == floor(v) && fabs(v) < 9e15)
        fprintf(o, "%.0f", v);
    else
        fprintf(o, "%.6g", v);
}

static void jhist(FILE *o, const uint64_t *h)
{
    unsigned n = MRA_HIST;
    while (n > 0 && !h[n - 1])
        n--;
    fputc('[', o);
    for (unsigned i = 0; i < n; i++)
        fprintf(o, "%s%llu", i ? "," : "", (unsigned long long)h[i]);
    fputc(']', o);
}

#define U(x) ((unsigned long long)(x))

void mra_report_json(FILE *o, const struct mra_analysis *a)
{
    const struct mra_profile_header *h = &a->h;
    const struct mra_thresholds *t = &a->opts.th;
    fprintf(o, "{\n  \"version\": 1,\n  \"program\": ");
    jstr(o, h->program);
    if (a->exec_into) {
        fprintf(o, ",\n  \"exec_into\": ");
        jstr(o, a->exec_into);
    }
    fprintf(o, ",\n  \"pid\": %llu,\n  \"run_time_ns\": ", U(h->pid));
    jnum(o, a->program_ns);
    fprintf(o, ",\n  \"recorded_time_ns\": ");
    jnum(o, a->recorded_ns);
    fprintf(o, ", \"recorded_cpu_ns\": %llu", U(h->cpu_ns));
    fprintf(o, ", \"recorder_hooks_ns\": %llu, \"run_time_floor_ns\": ", U(h->recorder_ns));
    jnum(o, a->program_floor_ns);
    fprintf(o, ", \"speed\": ");
    jnum(o, a->speed);
    fprintf(o, ", \"speed_probe_ns\": ");
    jnum(o, a->speed_probe_ns);
    fprintf(o, ", \"sample_bytes\": %llu", U(a->speed_probes.sample_bytes));
    fprintf(o,
            ",\n  \"allocations\": %llu,\n  \"frees\": %llu,\n  \"reallocs\": %llu,\n  \"bytes\": %llu,\n"
            "  \"peak_live_bytes\": %llu,\n  \"peak_live_objects\": %llu,\n  \"live_bytes_at_exit\": %llu,\n"
            "  \"live_objects_at_exit\": %llu,\n  \"foreign_frees\": %llu,\n  \"threads\": %llu,\n"
            "  \"recorder_peak_bytes\": %llu,\n  \"trace_events\": %llu,\n  \"trace_bytes\": %llu,\n"
            "  \"depth\": %u,\n  \"recorded_depth\": %u,\n  \"raw_sites\": %llu,\n  \"nsites\": %zu,\n",
            U(h->allocations), U(h->frees), U(h->reallocs), U(h->bytes), U(h->peak_live_bytes),
            U(h->peak_live_objects), U(h->live_bytes_at_exit), U(h->live_objects_at_exit), U(h->foreign_frees),
            U(h->threads), U(h->recorder_peak_bytes), U(h->trace_events), U(h->trace_bytes), a->opts.depth,
            h->depth, U(h->nsites), a->nsites_total);
    fprintf(o, "  \"folded\": [");
    for (size_t i = 0; i < a->nfolded; i++) {
        fputs(i ? ", " : "", o);
        jstr(o, a->folded[i]);
    }
    fprintf(o, "],\n  \"thresholds\": {\"min_allocations\": %llu, \"min_share\": ", U(t->min_allocations));
    jnum(o, t->min_share);
    fprintf(o, ", \"together_share\": ");
    jnum(o, t->together_share);
    fprintf(o, ", \"stack_share\": ");
    jnum(o, t->stack_share);
    fprintf(o, ", \"dominant_size_share\": ");
    jnum(o, t->dominant_size_share);
    fprintf(o, ", \"max_small_size\": %llu, \"remote_share\": ", U(t->max_small_size));
    jnum(o, t->remote_share);
    fprintf(o, ", \"at_exit_share\": ");
    jnum(o, t->at_exit_share);
    fprintf(o, ", \"retention_warn\": ");
    jnum(o, t->retention_warn);
    fprintf(o, ", \"moved_retention\": ");
    jnum(o, t->moved_retention);
    fprintf(o, "},\n  \"costs_machine\": ");
    jstr(o, a->costs.machine);
    fprintf(o, ",\n  \"total_predicted_saving_ns\": ");
    jnum(o, a->total_saving_ns);
    double cand;
    size_t ncand = mra_candidates_only(a, &cand);
    fprintf(o, ",\n  \"under_the_rule\": {\"sites\": %zu, \"predicted_saving_ns\": ", ncand);
    jnum(o, cand);
    fprintf(o, ", \"together_pass\": %s}", candidates_together(a, ncand, cand) ? "true" : "false");
    fprintf(o, ",\n  \"sites\": [");
    static const char *const patname[] = { "lifo", "batch", "random", "remote" };
    for (size_t i = 0; i < a->nsites; i++) {
        const struct mra_site *s = &a->sites[i];
        const struct mra_site_stats *st = &s->s;
        fprintf(o, "%s\n    {\"id\": %u, \"frames\": [", i ? "," : "", s->id);
        for (unsigned f = 0; f < s->nframes; f++) {
            fputs(f ? ", " : "", o);
            jframe(o, &s->frames[f]);
        }
        fprintf(o, "],\n     \"allocations\": %llu, \"frees\": %llu, \"bytes\": %llu, \"sizes\": [", U(st->allocations),
                U(st->frees), U(st->bytes));
        for (unsigned k = 0; k < st->nsizes; k++)
            fprintf(o, "%s{\"size\": %llu, \"count\": %llu}", k ? ", " : "", U(st->sizes[k].size),
                    U(st->sizes[k].count));
        fprintf(o,
                "], \"other_sizes_count\": %llu, \"min_size\": %llu, \"max_size\": %llu,\n"
                "     \"peak_live\": {\"objects\": %llu, \"bytes\": %llu}, "
                "\"freed_at_exit\": {\"objects\": %llu, \"bytes\": %llu}, \"arena_peak_bytes\": %llu,\n",
                U(st->other_sizes_count), U(st->min_size), U(st->max_size), U(st->peak_live_objects),
                U(st->peak_live_bytes), U(st->live_objects), U(st->live_bytes), U(st->arena_peak_bytes));
        fprintf(o, "     \"lifetime\": {\"mean_ticks\": ");
        jnum(o, st->frees ? (double)st->lifetime_ticks_sum / (double)st->frees : 0);
        fprintf(o, ", \"median_ticks\": ");
        jnum(o, mra_hist_quantile(st->hist_ticks, 0.5));
        fprintf(o, ", \"p90_ticks\": ");
        jnum(o, mra_hist_quantile(st->hist_ticks, 0.9));
        fprintf(o, ", \"mean_ns\": ");
        jnum(o, st->frees ? (double)st->lifetime_ns_sum / (double)st->frees : 0);
        fprintf(o, ", \"median_ns\": ");
        jnum(o, mra_hist_quantile(st->hist_ns, 0.5));
        fprintf(o, ", \"p90_ns\": ");
        jnum(o, mra_hist_quantile(st->hist_ns, 0.9));
        fprintf(o, ", \"hist_ticks\": ");
        jhist(o, st->hist_ticks);
        fprintf(o, ", \"hist_ns\": ");
        jhist(o, st->hist_ns);
        fprintf(o, "},\n     \"freed_together_share\": ");
        jnum(o, share(st->freed_together, st->frees));
        fprintf(o, ", \"stack_like_share\": ");
        jnum(o, share(st->stack_like, st->frees));
        fprintf(o, ", \"remote_share\": ");
        jnum(o, share(st->remote_frees, st->frees));
        fprintf(o,
                ", \"reallocs\": %llu, \"realloc_moves\": %llu, \"realloc_chain_max\": %llu, \"aligned\": %llu, "
                "\"alloc_threads\": %llu,\n     \"recommendation\": \"%s\", \"candidate\": \"%s\", "
                "\"thread_safe\": %s, \"pattern\": \"%s\", \"reason\": ",
                U(st->reallocs), U(st->realloc_moves), U(st->realloc_chain_max), U(st->aligned),
                U(st->alloc_threads), mra_rec_name(s->rec), mra_rec_name(s->candidate), s->thread_safe ? "true" : "false",
                s->pattern < MRA_PATTERNS ? patname[s->pattern] : "random");
        jstr(o, s->reason);
        fprintf(o, ", \"near_threshold\": ");
        jstr(o, s->near);
        fprintf(o, ",\n     \"glibc_ns\": %llu, \"glibc_slow_ns\": %llu, \"glibc_samples\": %llu, "
                   "\"predicted_saving_ns\": ",
                U(st->glibc_ns), U(st->glibc_slow_ns), U(st->glibc_samples));
        jnum(o, s->predicted_saving_ns);
        fprintf(o, ", \"candidate_saving_ns\": ");
        jnum(o, s->candidate_saving_ns);
        fprintf(o, ", \"predicted_saving_share\": ");
        jnum(o, a->program_ns > 0 ? s->predicted_saving_ns / a->program_ns : 0);
        fprintf(o, ", \"heap_given_back_bytes\": %llu, \"heap_retaken_bytes\": %llu", U(s->heap_given_back),
                U(s->heap_retaken));
        fprintf(o, ", \"memory_delta_bytes\": %lld, \"retention_warning\": %s, \"sketch\": [",
                (long long)s->memory_delta_bytes, s->retention_warning ? "true" : "false");
        jstr(o, s->sketch[0]);
        fputs(", ", o);
        jstr(o, s->sketch[1]);
        fprintf(o, "], \"freed\": [");
        for (unsigned k = 0; k < s->nfreed; k++) {
            fprintf(o, "%s{\"share\": ", k ? ", " : "");
            jnum(o, s->freed[k].share);
            fprintf(o, ", \"frames\": [");
            for (unsigned f = 0; f < s->freed[k].nframes; f++) {
                if (f)
                    fputs(", ", o);
                jframe(o, &s->freed[k].frames[f]);
            }
            fputs("]}", o);
        }
        fprintf(o, "], \"change\": ");
        jstr(o, s->change);
        fprintf(o, ", \"raw_sites\": [");
        for (size_t k = 0; k < s->nraw; k++)
            fprintf(o, "%s%u", k ? "," : "", s->raw_ids[k]);
        fprintf(o, "]}");
    }
    fprintf(o, "\n  ],\n  \"behind\": [");
    for (size_t i = 0; i < a->nbehind; i++) {
        const struct mra_behind *b = &a->behind[i];
        fprintf(o, "%s\n    {\"frame\": ", i ? "," : "");
        jframe(o, &b->frame);
        fprintf(o, ", \"sites\": %zu, \"allocations\": %llu, \"recommendation\": \"pools\", \"thread_safe\": %s, "
                   "\"predicted_saving_ns\": ",
                b->nsites, U(b->allocations), b->thread_safe ? "true" : "false");
        jnum(o, b->predicted_saving_ns);
        fprintf(o, ", \"reason\": ");
        jstr(o, b->reason);
        fputc('}', o);
    }
    fprintf(o, "%s],\n  \"heap\": {\"given_back_bytes\": %llu, \"given_back_events\": %llu, "
               "\"retaken_bytes\": %llu, \"retaken_events\": %llu, \"grown_bytes\": %llu, \"retaken_ns\": ",
            a->nbehind ? "\n  " : "", U(a->heap.given_back_bytes), U(a->heap.given_back_events),
            U(a->heap.retaken_bytes), U(a->heap.retaken_events), U(a->heap.grown_bytes));
    jnum(o, a->heap_retaken_ns);
    fprintf(o, ", \"keep_tunables\": \"%s\"},\n  \"timeline_peak\": ", mra_keep_tunables);
    if (a->tl.npoints)
        fprintf(o, "%u", a->tl.peak);
    else
        fputs("null", o);
    fprintf(o, ",\n  \"timeline\": [");
    for (uint32_t i = 0; i < a->tl.npoints; i++) {
        const struct mra_timeline_point *q = &a->timeline[i];
        fprintf(o, "%s\n    {\"time_ns\": %llu, \"allocations\": %llu, \"live_bytes\": %llu, \"live_objects\": %llu}",
                i ? "," : "", U(q->time_ns), U(q->allocations), U(q->live_bytes), U(q->live_objects));
    }
    fprintf(o, "%s]\n}\n", a->tl.npoints ? "\n  " : "");
}
