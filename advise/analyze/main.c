/* SPDX-License-Identifier: MIT */
/* advise/analyze/main.c -- memres-advise, the driver:
 *
 *   memres-advise [-o REPORT] [--json FILE] [--svg FILE] [--html FILE]
 *                 [--trace FILE | --sample BYTES] [--depth N] [--top N] [--wrapper NAME]...
 *                 [--plan FILE] [--measure ...] -- PROGRAM [ARGS...]
 *   memres-advise measure ... -- PROGRAM [ARGS...]
 *   memres-advise apply PLAN [--stats FILE] -- PROGRAM [ARGS...]
 *   memres-advise replay TRACE [--json FILE]
 *   memres-advise diff A.json B.json
 *
 * Runs PROGRAM (run.c: fork + execvp) with the recorder preloaded and the
 * environment of format.h, its stdin, stdout and stderr untouched, and
 * prints nothing before it ends.  Then it reads the profile, resolves
 * symbols, gets this machine's costs, analyses, writes the reports, the
 * trace's plan and the apply plan (plan.c), measures (measure.c) when
 * asked, writes the HTML page last (html.c: it shows the plan and the
 * measurement), and exits as the program did (run.c's mra_exit_as).  An exec
 * failure exits 127 (not found) or 126 (not executable), like a shell.
 *
 * The recorder: $MEMRES_ADVISE_RECORDER, else libmemres-advise-recorder.so
 * found as run.c's mra_find_library says (beside the executable, ../lib,
 * where it was installed).
 *
 * The driver sits in analyze/ beside the parts it runs (analysis.h); the
 * recorder it preloads is advise/record/. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "analysis.h"

#ifndef MEMRES_ADVISE_VERSION
#define MEMRES_ADVISE_VERSION "unknown"
#endif

#define RECORDER_NAME "libmemres-advise-recorder.so"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: memres-advise [-o REPORT] [--json FILE] [--svg FILE] [--html FILE] [--trace FILE]\n"
            "                     [--sample BYTES] [--depth N] [--top N] [--min-share PERCENT] [--wrapper NAME]...\n"
            "                     [--plan FILE] [--plan-candidates]\n"
            "                     [--measure [--rounds N] [--rounds-max N] [--per-site] [--alternatives]\n"
            "                                [--no-other-mallocs]]\n"
            "                     -- PROGRAM [ARGS...]\n"
            "       memres-advise measure [options as above] -- PROGRAM [ARGS...]\n"
            "       memres-advise apply PLAN [--stats FILE] -- PROGRAM [ARGS...]\n"
            "       memres-advise replay TRACE [--json FILE]\n"
            "       memres-advise diff A.json B.json\n"
            "\n"
            "Runs PROGRAM with an allocation recorder preloaded and says which allocation sites\n"
            "would gain from a memres arena, arena with marks, object pool or size-class pools,\n"
            "and how much.  PROGRAM's input, output and exit status pass through unchanged.\n"
            "\n"
            "  -o REPORT        the text report to REPORT (default: stderr, after PROGRAM ends)\n"
            "  --json FILE      the report as JSON (\"version\": 1)\n"
            "  --svg FILE       the report as a self-contained SVG picture\n"
            "  --html FILE      the report as one self-contained HTML page: sortable sites, flame graph,\n"
            "                   histograms, the plan and the measurement\n"
            "  --trace FILE     also write the compact event stream, for `memres-advise replay`\n"
            "  --sample BYTES   record one allocation per BYTES (16..4032) on average, each standing for\n"
            "                   the ones not recorded: each site's figures become estimates, the\n"
            "                   program's totals stay exact; for allocation-heavy programs (1024: about\n"
            "                   half the recorder's cost on 16-byte objects); not with --trace\n"
            "  --depth N        frames per site, 1..%u (default 4)\n"
            "  --top N          sites in the text report (default 10)\n"
            "  --min-share PERCENT  recommend only what saves at least PERCENT of the program's\n"
            "                   own run time (default 2; MEMRES_ADVISE_MIN_SHARE sets the default)\n"
            "  --wrapper NAME   fold NAME as an allocation wrapper (repeatable; NAME* matches a prefix;\n"
            "                   without symbols: MODULE+0xOFFSET as the report shows the frame)\n"
            "  --plan FILE      write the plan of the recommended sites, for `memres-advise apply`\n"
            "  --plan-candidates  plan every site the rules name an allocator for (not only the\n"
            "                   recommended ones)\n"
            "  --measure        then run PROGRAM --rounds times (default 5) on glibc, under the plan,\n"
            "                   and on mimalloc and jemalloc where installed (--no-other-mallocs: not),\n"
            "                   alternating, and report CPU time and peak RSS, paired by round\n"
            "                   (--per-site: also each planned site alone; --alternatives: and each\n"
            "                   on another allocator, to see which saves most); where nothing passes\n"
            "                   the 2%% rule it measures the rules' candidates instead; it ends with\n"
            "                   the verdict of the rounds; PROGRAM's input must be a file or the terminal;\n"
            "                   where the plan's verdict is still open after --rounds, more rounds up\n"
            "                   to --rounds-max (default 3x --rounds)\n"
            "  --save-profile FILE     keep the recorder's profile (format.h) in FILE\n"
            "  --analyze-profile FILE  run nothing: analyse a profile saved before (for tests)\n"
            "  --help, --version\n"
            "\n",
            MRA_MAX_DEPTH - MRA_FOLD_EXTRA);
    fprintf(f,
            "  apply PLAN       runs PROGRAM with the plan applied (libmemres-advise-apply.so preloaded;\n"
            "                   --stats FILE: what it routed)\n"
            "  replay TRACE     replays a trace against glibc malloc and the recommended memres plan\n"
            "  diff A.json B.json  compares two --json reports site by site\n"
            "\n"
            "Environment: MEMRES_ADVISE_RECORDER (the recorder library), MEMRES_ADVISE_APPLY_LIB\n"
            "(the apply runtime), MEMRES_ADVISE_ZEROCOST (a zero-cost malloc for measure), TMPDIR,\n"
            "XDG_CACHE_HOME (the cached costs of this machine), MEMRES_ADVISE_RECALIBRATE=1,\n"
            "MEMRES_ADVISE_COSTS=FILE (costs from FILE, a cache file, instead of this machine's),\n"
            "MEMRES_ADVISE_MIN_SHARE=PERCENT (--min-share's default), MEMRES_ADVISE_MODEL=calibrated\n"
            "(glibc's costs from the calibration only, not from the run's timed samples),\n"
            "MEMRES_ADVISE_RECORDING_SPEED=0 (the run's times as timed, not taken to the calibration's\n"
            "speed).\n"
            "Documentation: docs/ADVISE.md.\n");
}

static int bad_usage(const char *what, const char *arg)
{
    fprintf(stderr, "memres-advise: %s%s%s%s\nTry 'memres-advise --help'.\n", what, arg ? " '" : "",
            arg ? arg : "", arg ? "'" : "");
    return 2;
}

static int parse_uint(const char *s, unsigned lo, unsigned hi, unsigned *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-' || v < lo || v > hi)
        return -1;
    *out = (unsigned)v;
    return 0;
}

/* A percentage 0..100 (decimals allowed) as a fraction. */
static int parse_share(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= 0 && v <= 100))
        return -1;
    *out = v / 100;
    return 0;
}

/* ---- running the program ---- */

struct run {
    char *profile;               /* the private profile path */
    char *dir;                   /* its private directory */
    int status;                  /* waitpid's */
    int exec_errno;              /* 0: the program ran */
};

static int run_program(char **argv, const char *recorder, const char *trace, unsigned depth, const char *sample,
                       struct run *r)
{
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp)
        tmp = "/tmp";
    char *t = realpath(tmp, NULL);
    if (!t)
        t = strdup("/tmp");
    r->dir = t ? mra_path_join(t, "memres-advise.XXXXXX") : NULL;
    free(t);
    if (!r->dir || !mkdtemp(r->dir)) {
        fprintf(stderr, "memres-advise: cannot make a private directory in %s: %s\n", tmp, strerror(errno));
        return -1;
    }
    r->profile = mra_path_join(r->dir, "profile");
    if (!r->profile)
        return -1;
    char d[16];
    snprintf(d, sizeof d, "%u", depth);
    const char *env[][2] = {
        { "MEMRES_ADVISE_PROFILE", r->profile },
        { "MEMRES_ADVISE_DEPTH", d },
        { "MEMRES_ADVISE_TRACE", trace },
        { "MEMRES_ADVISE_SAMPLE", sample },
        { NULL, NULL },
    };
    struct mra_launch l = { .preload = recorder, .env = env, .in_fd = -1, .out_fd = -1, .err_fd = -1 };
    struct mra_child c;
    if (mra_run(argv, &l, &c) != 0)
        return -1;
    r->status = c.status;
    r->exec_errno = c.exec_errno;
    return 0;
}

/* The recorder's note of an exec beside the profile (record/exec.c). */
static void exec_note_path(char *buf, size_t cap, const char *profile)
{
    snprintf(buf, cap, "%s.exec", profile);
}

/* What the program exec'd, from the note (malloc'd; NULL: it did not, or
 * the exec failed). */
static char *exec_note(const char *profile)
{
    char path[8192];
    exec_note_path(path, sizeof path, profile);
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return n ? strdup(buf) : NULL;
}

static void cleanup(struct run *r)
{
    if (r->profile) {
        char note[8192];
        exec_note_path(note, sizeof note, r->profile);
        unlink(note);
        unlink(r->profile);
    }
    if (r->dir)
        rmdir(r->dir);
    free(r->profile);
    free(r->dir);
}

static int copy_file(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb");
    if (!in)
        return -1;
    FILE *out = fopen(to, "wb");
    if (!out) {
        fclose(in);
        return -1;
    }
    char buf[65536];
    size_t n;
    int rc = 0;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        if (fwrite(buf, 1, n, out) != n)
            rc = -1;
    if (ferror(in))
        rc = -1;
    fclose(in);
    if (fclose(out) != 0)
        rc = -1;
    return rc;
}

static FILE *open_out(const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        fprintf(stderr, "memres-advise: %s: %s\n", path, strerror(errno));
    return f;
}

static int close_out(FILE *f, const char *path)
{
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        fprintf(stderr, "memres-advise: writing %s failed\n", path);
        return -1;
    }
    return 0;
}

/* The plan of a to path (mode), and, with pl, what it holds (each site's
 * own plan in pl->dir when that is set). */
static int write_plans(const char *path, const struct mra_profile *p, const struct mra_analysis *a,
                       struct mra_planned *pl)
{
    enum mra_plan_mode mode = pl ? pl->mode : MRA_PLAN_RECOMMENDED;
    /* measure where nothing passes the 2% rule by the prediction measures
     * the rules' candidates instead: a "none" is what measuring checks
     * (Debian's perl on a word index: candidates predicted at 1.3-1.5% of
     * the run saved 4.7-8.5%) */
    double cand_ns;
    if (pl && pl->dir && mode == MRA_PLAN_RECOMMENDED && mra_candidates_only(a, &cand_ns) > 0) {
        mode = pl->mode = MRA_PLAN_TOP_CANDIDATES;
        pl->candidates_instead = true;
    }
    FILE *f = open_out(path);
    if (!f)
        return -1;
    int rc = mra_plan_write(f, p, a, mode, 0, MRA_NONE);
    rc |= close_out(f, path);
    if (!pl || rc)
        return rc;
    pl->program_ns = a->program_ns;
    pl->threads = (unsigned)a->h.threads;
    pl->min_share = a->opts.th.min_share;
    pl->heap_retaken_ns = a->heap_retaken_ns;
    pl->heap_retaken_pages = (double)a->heap.retaken_bytes / 4096.0;
    pl->probe_ref_ns = mra_costs_probe_ref(&a->costs);
    double cutoff = mra_plan_cutoff(a, mode);
    bool cand = mode != MRA_PLAN_RECOMMENDED;
    for (size_t i = 0; i < a->nsites; i++) {
        const struct mra_site *s = &a->sites[i];
        enum mra_rec k = mra_plan_kind(s, mode, cutoff);
        if (k == MRA_NONE)
            continue;
        if (pl->total < MRA_PLANNED_MAX) {
            struct mra_planned_site *ps = &pl->s[pl->total];
            ps->site = s->id;
            ps->kind = k;
            ps->predicted_ns = cand ? s->candidate_saving_ns : s->predicted_saving_ns;
            ps->glibc_ns = (double)s->s.glibc_ns;
            if (pl->dir) {
                snprintf(ps->plan, sizeof ps->plan, "%s/plan-%u", pl->dir, s->id);
                FILE *g = open_out(ps->plan);
                if (!g)
                    return -1;
                rc |= mra_plan_write(g, p, a, mode, s->id, MRA_NONE);
                rc |= close_out(g, ps->plan);
                ps->alt = mra_alternative(s, k, &a->opts.th);
                if (ps->alt != MRA_NONE) {
                    snprintf(ps->alt_plan, sizeof ps->alt_plan, "%s/plan-%u-alt", pl->dir, s->id);
                    g = open_out(ps->alt_plan);
                    if (!g)
                        return -1;
                    rc |= mra_plan_write(g, p, a, mode, s->id, ps->alt);
                    rc |= close_out(g, ps->alt_plan);
                }
            }
        }
        pl->total++;
        pl->predicted_ns += cand ? s->candidate_saving_ns : s->predicted_saving_ns;
    }
    pl->n = pl->total < MRA_PLANNED_MAX ? pl->total : MRA_PLANNED_MAX;
    /* the pools behind one function that save most, each on its own plan:
     * the report recommends them beside the sites */
    for (size_t i = 0; pl->dir && i < a->nbehind && pl->nbehind < MRA_BEHIND_MEASURED; i++) {
        const struct mra_behind *b = &a->behind[i];
        struct mra_planned_behind *pb = &pl->behind[pl->nbehind++];
        if (b->frame.function)
            snprintf(pb->function, sizeof pb->function, "%s", b->frame.function);
        else {
            const char *m = b->frame.module ? strrchr(b->frame.module, '/') : NULL;
            snprintf(pb->function, sizeof pb->function, "%s+0x%llx",
                     m ? m + 1 : b->frame.module ? b->frame.module : "?", (unsigned long long)b->frame.offset);
        }
        pb->predicted_ns = b->predicted_saving_ns;
        snprintf(pb->plan, sizeof pb->plan, "%s/plan-behind-%zu", pl->dir, i);
        FILE *g = open_out(pb->plan);
        if (!g)
            return -1;
        rc |= mra_plan_write_behind(g, p, a, i);
        rc |= close_out(g, pb->plan);
    }
    return rc;
}

/* With html_data, the HTML page's data is kept there (malloc'ed): main
 * writes the page last. */
static int analyse_and_report(const struct run *r, const struct mra_options *o, const char *report,
                              const char *json, const char *svg, const char *trace, const char *progname,
                              const char *plan, struct mra_planned *pl, char **html_data)
{
    struct stat st;
    if (stat(r->profile, &st) != 0) {
        const char *barrier = mra_preload_barrier(progname);
        if (barrier)
            fprintf(stderr, "memres-advise: %s is %s: the loader does not preload the recorder into it, so nothing "
                            "was recorded: no report\n", progname, barrier);
        else if (WIFSIGNALED(r->status))
            fprintf(stderr, "memres-advise: %s was killed by signal %d (%s) and wrote no profile: no report\n",
                    progname, WTERMSIG(r->status), strsignal(WTERMSIG(r->status)));
        else
            fprintf(stderr,
                    "memres-advise: %s wrote no profile (it ended with _exit or by exec'ing another program, "
                    "or the recorder could not be preloaded, e.g. set-user-ID): no report\n",
                    progname);
        return -1;
    }
    mra_progress_enable(o->progress);
    struct mra_profile p;
    if (mra_profile_read(r->profile, &p) != 0)
        return -1;
    mra_progress("symbols", 0, 1);
    struct mra_symbols *sym = mra_symbols_open(&p);
    if (!sym) {
        fprintf(stderr, "memres-advise: out of memory resolving symbols\n");
        mra_profile_free(&p);
        return -1;
    }
    mra_progress_end();
    struct mra_costs c;
    memset(&c, 0, sizeof c);
    if (mra_costs_get(&c, false) != 0) {
        fprintf(stderr, "memres-advise: no costs of this machine: predicted savings are 0\n");
        memset(&c, 0, sizeof c);
    }
    struct mra_analysis a;
    int rc = mra_analyze(&p, sym, &c, o, &a);
    mra_progress_end();
    if (rc == 0) {
        char *into = NULL;
        if (progname != r->profile) { /* a run's, not a saved profile's */
            a.command = progname;
            a.exec_into = into = exec_note(r->profile);
            if (into)
                fprintf(stderr,
                        "memres-advise: %s exec'd %s, which was not profiled: the report is of %s before the exec "
                        "(a wrapper? run memres-advise on the program it runs)\n",
                        progname, into, progname);
        }
        if (report) {
            FILE *f = open_out(report);
            if (f) {
                mra_report_text(f, &a);
                rc |= close_out(f, report);
            } else {
                rc = -1;
            }
        } else {
            mra_report_text(stderr, &a);
            fflush(stderr);
        }
        if (json) {
            FILE *f = open_out(json);
            if (f) {
                mra_report_json(f, &a);
                rc |= close_out(f, json);
            } else {
                rc = -1;
            }
        }
        if (svg) {
            FILE *f = open_out(svg);
            if (f) {
                mra_report_svg(f, &a);
                rc |= close_out(f, svg);
            } else {
                rc = -1;
            }
        }
        if (trace && access(trace, F_OK) == 0 && mra_trace_append_plan(trace, &a) != 0)
            rc = -1;
        if (plan && write_plans(plan, &p, &a, pl) != 0)
            rc = -1;
        if (html_data && !(*html_data = mra_html_data(&a))) {
            fprintf(stderr, "memres-advise: out of memory writing the HTML page\n");
            rc = -1;
        }
        mra_analysis_free(&a);
        free(into);
    }
    mra_symbols_free(sym);
    mra_profile_free(&p);
    return rc;
}

/* The HTML page to path, after the plan and the measurement. */
static int write_html(const char *path, const char *data, const char *plan, bool plan_kept,
                      const struct mra_planned *pl, const char *measured)
{
    FILE *f = data ? open_out(path) : NULL;
    if (!f)
        return -1;
    struct mra_html_extra x = { .plan = plan ? pl : NULL, .plan_path = plan, .plan_kept = plan_kept,
                                .measured = measured };
    int rc = mra_html_write(f, data, &x);
    return close_out(f, path) | rc;
}

/* measure's table to f, and with text also kept there for the page. */
static void measure_to(FILE *f, char **argv, const char *plan, const struct mra_planned *pl,
                       const struct mra_measure_options *mo, char **text)
{
    size_t len;
    FILE *m = text ? open_memstream(text, &len) : NULL;
    mra_measure(argv, plan, pl, mo, m ? m : f);
    if (m && fclose(m) == 0 && *text)
        fputs(*text, f);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "diff") == 0)
        return mra_diff_main(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "replay") == 0)
        return mra_replay_main(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "apply") == 0)
        return mra_apply_main(argc - 1, argv + 1);
    bool measure = false;
    if (argc > 1 && strcmp(argv[1], "measure") == 0) {
        measure = true;
        argv[1] = argv[0];
        argc--;
        argv++;
    }
    struct mra_measure_options mo = { .rounds = 5, .other_mallocs = true };
    static struct mra_planned planned;
    const char *plan = NULL;

    struct mra_options o;
    mra_options_default(&o);
    const char *share = getenv("MEMRES_ADVISE_MIN_SHARE");
    if (share && *share && parse_share(share, &o.th.min_share) != 0)
        return bad_usage("MEMRES_ADVISE_MIN_SHARE wants a percentage 0..100, not", share);
    const char *model = getenv("MEMRES_ADVISE_MODEL");
    if (model && *model && strcmp(model, "timed") != 0) {
        if (strcmp(model, "calibrated") != 0)
            return bad_usage("MEMRES_ADVISE_MODEL wants timed or calibrated, not", model);
        o.th.min_timed_samples = 0;
    }
    const char *speed = getenv("MEMRES_ADVISE_RECORDING_SPEED");
    if (speed && *speed) {
        if (strcmp(speed, "0") != 0 && strcmp(speed, "1") != 0)
            return bad_usage("MEMRES_ADVISE_RECORDING_SPEED wants 1 (applied) or 0 (not), not", speed);
        o.no_speed = strcmp(speed, "0") == 0;
    }
    const char *report = NULL, *json = NULL, *svg = NULL, *html = NULL, *trace = NULL;
    char *html_data = NULL, *measured = NULL;
    const char *save_profile = NULL, *from_profile = NULL, *sample = NULL;
    const char **wrappers = calloc((size_t)argc + 1, sizeof *wrappers);
    if (!wrappers)
        return 2;
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (a[0] != '-' || a[1] == '\0')
            break; /* PROGRAM without "--" */
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(a, "--measure") == 0) {
            measure = true;
            continue;
        }
        if (strcmp(a, "--per-site") == 0) {
            mo.per_site = true;
            continue;
        }
        if (strcmp(a, "--alternatives") == 0) {
            mo.alternatives = true;
            continue;
        }
        if (strcmp(a, "--plan-candidates") == 0) {
            planned.mode = MRA_PLAN_CANDIDATES;
            continue;
        }
        if (strcmp(a, "--no-other-mallocs") == 0) {
            mo.other_mallocs = false;
            continue;
        }
        if (strcmp(a, "--version") == 0) {
            printf("memres-advise %s\n", MEMRES_ADVISE_VERSION);
            return 0;
        }
        /* options with a value: "--opt VALUE" or "--opt=VALUE" */
        static const char *const withval[] = { "-o", "--json", "--svg", "--trace", "--depth", "--top", "--wrapper",
                                               "--output",
                                               "--save-profile", "--analyze-profile", "--min-share", "--plan",
                                               "--rounds", "--html", "--rounds-max", "--sample" };
        const char *val = NULL;
        size_t which = SIZE_MAX;
        for (size_t k = 0; k < sizeof withval / sizeof *withval; k++) {
            size_t l = strlen(withval[k]);
            if (strcmp(a, withval[k]) == 0) {
                if (i + 1 >= argc)
                    return bad_usage("this option needs a value:", a);
                val = argv[++i];
                which = k;
                break;
            }
            if (strncmp(a, withval[k], l) == 0 && a[l] == '=' && withval[k][1] == '-') {
                val = a + l + 1;
                which = k;
                break;
            }
        }
        switch (which) {
        case 0: case 7: report = val; break;
        case 1: json = val; break;
        case 2: svg = val; break;
        case 3: trace = val; break;
        case 4:
            if (parse_uint(val, 1, MRA_MAX_DEPTH - MRA_FOLD_EXTRA, &o.depth) != 0)
                return bad_usage("--depth wants 1..60, not", val);
            break;
        case 5:
            if (parse_uint(val, 0, 1000000, &o.top) != 0)
                return bad_usage("--top wants a number, not", val);
            break;
        case 8: save_profile = val; break;
        case 9: from_profile = val; break;
        case 10:
            if (parse_share(val, &o.th.min_share) != 0)
                return bad_usage("--min-share wants a percentage 0..100, not", val);
            break;
        case 11: plan = val; break;
        case 12:
            if (parse_uint(val, 1, MRA_MEASURE_ROUNDS_MAX, &mo.rounds) != 0)
                return bad_usage("--rounds wants 1..101, not", val);
            break;
        case 13: html = val; break;
        case 14:
            if (parse_uint(val, 1, MRA_MEASURE_ROUNDS_MAX, &mo.rounds_max) != 0)
                return bad_usage("--rounds-max wants 1..101, not", val);
            break;
        case 15: {
            unsigned b;
            if (parse_uint(val, 16, 4032, &b) != 0)
                return bad_usage("--sample wants bytes 16..4032, not", val);
            sample = val;
            break;
        }
        case 6:
            if (!*val)
                return bad_usage("--wrapper wants a name", NULL);
            wrappers[o.nwrappers++] = val;
            break;
        default:
            return bad_usage("unknown option", a);
        }
    }
    o.wrappers = wrappers;
    if (from_profile) {
        /* no program: the analysis of a saved profile */
        struct run fr = { .profile = (char *)(uintptr_t)from_profile };
        int rc = analyse_and_report(&fr, &o, report, json, svg, trace, from_profile, plan,
                                    &planned, html ? &html_data : NULL);
        if (html && write_html(html, html_data, plan, true, &planned, NULL) != 0)
            rc = -1;
        free(html_data);
        free(wrappers);
        return rc == 0 ? 0 : 1;
    }
    if (i >= argc)
        return bad_usage("no PROGRAM to run", NULL);
    if (sample && trace)
        return bad_usage("--sample and --trace exclude each other (a trace needs every allocation)", NULL);
    if (measure && !isatty(0)) {
        struct stat st;
        if (fstat(0, &st) != 0 || !(S_ISCHR(st.st_mode) || (S_ISREG(st.st_mode) && lseek(0, 0, SEEK_CUR) >= 0))) {
            fprintf(stderr, "memres-advise: measure runs the program many times: its input must be a file "
                            "(< FILE) or the terminal, not a pipe\n");
            free(wrappers);
            return 2;
        }
    }

    char *recorder = mra_find_library(RECORDER_NAME, "MEMRES_ADVISE_RECORDER");
    if (!recorder)
        return 2;
    if (strchr(recorder, ':') || strchr(recorder, ' ')) {
        fprintf(stderr, "memres-advise: the recorder's path %s has a ':' or a space: LD_PRELOAD cannot name it\n",
                recorder);
        return 2;
    }
    char *trace_abs = NULL;
    if (trace) {
        /* the program may change directory: the trace's path is absolute */
        if (trace[0] == '/') {
            trace_abs = strdup(trace);
        } else {
            char cwd[PATH_MAX];
            trace_abs = getcwd(cwd, sizeof cwd) ? mra_path_join(cwd, trace) : strdup(trace);
        }
        if (!trace_abs)
            return 2;
        unlink(trace_abs); /* a trace of an earlier run must not be taken for this one's */
    }

    struct run r = { 0 };
    if (run_program(argv + i, recorder, trace_abs, o.depth + MRA_FOLD_EXTRA, sample, &r) != 0) {
        cleanup(&r);
        return 2;
    }
    if (r.exec_errno) {
        fprintf(stderr, "memres-advise: cannot run %s: %s\n", argv[i], strerror(r.exec_errno));
        cleanup(&r);
        return r.exec_errno == ENOENT || r.exec_errno == ENOTDIR ? 127 : 126;
    }
    if (save_profile && access(r.profile, F_OK) == 0 && copy_file(r.profile, save_profile) != 0)
        fprintf(stderr, "memres-advise: cannot save the profile to %s: %s\n", save_profile, strerror(errno));
    char *plan_tmp = NULL;
    if (measure && !plan) {
        plan_tmp = mra_path_join(r.dir, "plan");
        plan = plan_tmp;
    }
    if (measure)
        planned.dir = r.dir;
    int arc = analyse_and_report(&r, &o, report, json, svg, trace_abs, argv[i], plan, &planned,
                                 html ? &html_data : NULL);
    if (measure && arc == 0 && WIFEXITED(r.status)) {
        lseek(0, 0, SEEK_SET);
        FILE *mf = report ? fopen(report, "a") : stderr;
        /* memory glibc gave back and took again is measured (glibc with
         * its memory kept) where it passes the 2% rule, planned sites or not */
        bool heap = planned.heap_retaken_ns > 0 && planned.heap_retaken_ns >= planned.min_share * planned.program_ns;
        if (planned.n == 0 && !heap) {
            static const char none[] = "\nmeasure: the plan routes no site (nothing recommended; "
                                       "--plan-candidates plans every site the rules name)\n";
            fputs(none, mf ? mf : stderr);
            if (html)
                measured = strdup(none);
        } else if (mf) {
            measure_to(mf, argv + i, plan, &planned, &mo, html ? &measured : NULL);
        }
        if (mf && mf != stderr)
            fclose(mf);
    }
    if (html && html_data)
        write_html(html, html_data, plan, plan != plan_tmp, &planned, measured);
    free(html_data);
    free(measured);
    for (size_t k = 0; k < planned.n; k++) {
        if (planned.s[k].plan[0])
            unlink(planned.s[k].plan);
        if (planned.s[k].alt_plan[0])
            unlink(planned.s[k].alt_plan);
    }
    for (size_t k = 0; k < planned.nbehind; k++)
        unlink(planned.behind[k].plan);
    if (plan_tmp) {
        unlink(plan_tmp);
        free(plan_tmp);
    }
    cleanup(&r);
    free(recorder);
    free(trace_abs);
    free(wrappers);
    return mra_exit_as(r.status);
}
