/* SPDX-License-Identifier: MIT */
/* advise/analyze/measure.c -- `memres-advise apply` and the measurement
 * of `memres-advise measure` (--measure):
 *
 *   apply: the program run with libmemres-advise-apply.so preloaded and
 *   the plan named, as it is otherwise (input, output, exit status).
 *
 *   measure: after the recorded run and its plan, the program is run in
 *   rounds, each round once on glibc, once under the plan and once on each
 *   other malloc found (Debian's mimalloc and jemalloc, preloaded), in an
 *   order that alternates from round to round (and, when
 *   MEMRES_ADVISE_ZEROCOST names tests/zerocost.c's library, over a malloc
 *   whose free does nothing: the limit); with --per-site also once
 *   under each planned site's plan alone, and with --alternatives once
 *   more with the site on another allocator (mra_alternative): which
 *   allocator saves most at each site, measured, against the advice.  Each run's user + system time
 *   and peak RSS come from wait4; a variant's figures are the medians over
 *   the rounds of its ratio to the glibc run of the same round (paired:
 *   the machine's drift between rounds cancels), with the lowest and
 *   highest.  The program's standard output of every run is compared with
 *   the first glibc run's, and its exit status (a variant that changes
 *   either is reported); its standard input, a file, is rewound for each
 *   run. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "analysis.h"

#define MAX_VARIANTS (8 + MRA_BEHIND_MEASURED + 2 * MRA_PLANNED_MAX)

struct variant {
    char name[64];
    const char *preload;         /* NULL: glibc */
    const char *plan;            /* the apply runtime's plan, or NULL */
    unsigned site;               /* per-site plan: the site; 0: all */
    bool identify_only;          /* the plan's identification, every call served by glibc */
    const char *tunables;        /* GLIBC_TUNABLES for the run (the caller's kept before them) */
    enum mra_rec kind;           /* per-site plan: the allocator it routes the site to */
    double cpu[MRA_MEASURE_ROUNDS_MAX], rss[MRA_MEASURE_ROUNDS_MAX];
    double flt[MRA_MEASURE_ROUNDS_MAX];   /* page faults (minor: the program's own touching of memory) */
    double ratio[MRA_MEASURE_ROUNDS_MAX], rss_ratio[MRA_MEASURE_ROUNDS_MAX];
    unsigned runs;
    bool output_differs, status_differs;
    char stats[4096];            /* the apply runtime's stats file */
    char under[4200];            /* a plan over another malloc: "runtime:malloc" */
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(const double *v, unsigned n, double *lo, double *hi)
{
    double t[MRA_MEASURE_ROUNDS_MAX];
    memcpy(t, v, n * sizeof *t);
    qsort(t, n, sizeof *t, cmp_double);
    if (lo)
        *lo = n ? t[0] : 0;
    if (hi)
        *hi = n ? t[n - 1] : 0;
    if (n == 0)
        return 0;
    return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

/* The rounds a median's range leaves out at each end: the most whose
 * two-sided chance of holding the median stays at least that of n = 5
 * rounds' lowest-to-highest (15/16): 0 up to 8 rounds, 1 from 9, 2 from
 * 12, 3 from 15.  A verdict "in the rounds' range" is then as sure with
 * eleven rounds as with five, where "in every round" would ask more of
 * each added round. */
unsigned mra_range_trim(unsigned n)
{
    unsigned d = 0;
    /* P(X <= d) for X ~ Binomial(n, 1/2), in units of 2^-n */
    double c = 1, cum = 1, all = ldexp(1, (int)n);
    while (d + 1 < n / 2) {
        c = c * (double)(n - d) / (double)(d + 1);
        if (2 * (cum + c) / all > 1.0 / 16)
            break;
        cum += c;
        d++;
    }
    return d;
}

/* The lowest of v's range as mra_range_trim leaves it, and (hi not NULL)
 * its highest. */
static double range_lo(const double *v, unsigned n, double *hi)
{
    if (hi)
        *hi = 0;
    if (n == 0)
        return 0;
    double t[MRA_MEASURE_ROUNDS_MAX];
    memcpy(t, v, n * sizeof *t);
    qsort(t, n, sizeof *t, cmp_double);
    unsigned d = mra_range_trim(n);
    if (hi)
        *hi = t[n - 1 - d];
    return t[d];
}

/* The highest of v's range. */
static double range_hi(const double *v, unsigned n)
{
    double hi;
    range_lo(v, n, &hi);
    return hi;
}

/* The share of glibc's run the 2% rule asks (--min-share). */
static double rule_share(const struct mra_planned *pl)
{
    return pl->min_share > 0 ? pl->min_share : 0.02;
}

/* The allocators' saving of each round, in glibc's run: the runtime
 * alone's ratio (ident) less the plan's. */
static void alloc_savings(const struct variant *plan, const struct variant *ident, double *out)
{
    for (unsigned r = 0; r < plan->runs; r++)
        out[r] = ident->ratio[r] - plan->ratio[r];
}

/* FNV-1a of a file's bytes; -1 when it cannot be read. */
static int hash_file(const char *path, uint64_t *h)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    uint64_t x = UINT64_C(0xcbf29ce484222325);
    int c;
    while ((c = getc(f)) != EOF) {
        x ^= (uint64_t)(unsigned char)c;
        x *= UINT64_C(0x100000001b3);
    }
    fclose(f);
    *h = x;
    return 0;
}

static const char *find_malloc(const char *const *paths)
{
    for (size_t i = 0; paths[i]; i++)
        if (access(paths[i], R_OK) == 0)
            return paths[i];
    return NULL;
}

/* Stdin for the runs: -1 (a terminal: /dev/null), or the driver's, a file
 * rewound before each run or a device such as /dev/null (main.c refuses a
 * pipe). */
static int input_fd(void)
{
    return isatty(0) ? -1 : 0;
}

static int run_variant(char **argv, struct variant *v, const char *apply_lib, int in, const char *out_path,
                       struct mra_child *c)
{
    char tun[1024] = "";
    if (v->tunables) {
        const char *t = getenv("GLIBC_TUNABLES");
        snprintf(tun, sizeof tun, "%s%s%s", t && *t ? t : "", t && *t ? ":" : "", v->tunables);
    }
    const char *env[][2] = {
        { "MEMRES_ADVISE_PLAN", v->plan },
        { "MEMRES_ADVISE_APPLY_STATS", v->plan ? v->stats : NULL },
        { "MEMRES_ADVISE_APPLY_IDENTIFY_ONLY", v->identify_only ? "1" : NULL },
        { v->tunables ? "GLIBC_TUNABLES" : NULL, tun },
        { NULL, NULL },
    };
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    int out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (in >= 0)
        lseek(in, 0, SEEK_SET);
    struct mra_launch l = {
        .preload = v->under[0] ? v->under : v->plan ? apply_lib : v->preload,
        .env = env,
        .in_fd = in >= 0 ? in : null,
        .out_fd = out,
        .err_fd = null,
    };
    int rc = mra_run(argv, &l, c);
    if (null >= 0)
        close(null);
    if (out >= 0)
        close(out);
    if (in >= 0)
        lseek(in, 0, SEEK_SET);
    return rc;
}

/* The apply runtime's stats file: ident ns per walked call, the calls
 * walked, and the routes' peak. */
static void read_stats(const char *path, unsigned *walk, double *ident_ns, double *walked, double *held_peak,
                       uint64_t *routed)
{
    *ident_ns = *held_peak = *walked = 0;
    *routed = 0;
    *walk = 1;
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        unsigned long long a, b, e;
        unsigned r, site;
        char kind[32];
        if (sscanf(line, "walk %u", walk) == 1)
            continue;
        if (sscanf(line, "ident %llu %llu %llu", &a, &b, &e) == 3 && b > 0) {
            *ident_ns = (double)a / (double)b;
            *walked = (double)e;
        }
        else if (sscanf(line, "held_peak %llu", &a) == 1)
            *held_peak = (double)a;
        else if (sscanf(line, "route %u %31s %u %llu %llu", &r, kind, &site, &a, &b) == 5)
            *routed += a;
    }
    fclose(f);
}

/* Which allocator saved most at each planned site, its plan alone: the
 * advised one, the alternative, or none (glibc) where neither saved
 * min_share of glibc's run. */
static void alternatives_verdict(FILE *f, const struct mra_planned *pl, const struct variant *vs, unsigned first,
                                 unsigned nv)
{
    double need = 1 - rule_share(pl);
    fprintf(f, "\n  which allocator saves most at each site (its plan alone, by the median of its rounds'\n"
               "  ratios; above %.3f, a saving under %g%% of glibc's run, is none):\n",
            need, 100 * (1 - need));
    unsigned held = 0, judged = 0;
    for (size_t k = 0; k < pl->n; k++) {
        const struct mra_planned_site *ps = &pl->s[k];
        double own = -1, alt = -1, olo = 0, ohi = 0, alo = 0, ahi = 0;
        for (unsigned i = first; i < nv; i++) {
            if (vs[i].site != ps->site)
                continue;
            if (vs[i].kind == ps->kind)
                own = median(vs[i].ratio, vs[i].runs, &olo, &ohi);
            else
                alt = median(vs[i].ratio, vs[i].runs, &alo, &ahi);
        }
        if (own < 0)
            continue;
        enum mra_rec best = MRA_NONE;
        double br = need;
        if (own <= br) {
            best = ps->kind;
            br = own;
        }
        if (alt >= 0 && alt < br) {
            best = ps->alt;
            br = alt;
        }
        judged++;
        held += best == ps->kind;
        char as[48] = "";
        if (alt >= 0)
            snprintf(as, sizeof as, ", %s %.3f", mra_rec_name(ps->alt), alt);
        char said[64];
        snprintf(said, sizeof said, best == ps->kind ? "the advice" : "the advice was %s", mra_rec_name(ps->kind));
        /* two allocators whose rounds' ranges overlap are not told apart */
        bool close = alt >= 0 && alo <= ohi && olo <= ahi;
        fprintf(f, "    site %-4u %s %.3f%s -> %s (%s)%s\n", ps->site, mra_rec_name(ps->kind), own, as,
                mra_rec_name(best), said, close ? "; the two within the rounds' spread" : "");
    }
    fprintf(f, "  the advice held at %u of %u site%s\n", held, judged, judged == 1 ? "" : "s");
}

/* A plan's peak RSS above this times glibc's is said with its verdict
 * (the target for a plan of freed-together sites: 1.2x). */
#define RSS_SAID 1.2

/* Whether more rounds could settle the plan's verdict: it saves the rule's
 * share in the median, but not in the rounds' range; or it does not, and
 * the allocators' saving (ident: the runtime alone) does in the median but
 * not in the range. */
static bool plan_open(const struct mra_planned *pl, const struct variant *plan, const struct variant *ident)
{
    double share = rule_share(pl);
    if (plan->runs == 0)
        return false;
    if (1 - median(plan->ratio, plan->runs, NULL, NULL) >= share)
        return range_hi(plan->ratio, plan->runs) >= 1;
    if (ident->runs != plan->runs)
        return false;
    double alloc[MRA_MEASURE_ROUNDS_MAX];
    alloc_savings(plan, ident, alloc);
    return median(alloc, plan->runs, NULL, NULL) >= share && range_lo(alloc, plan->runs, NULL) < share;
}

/* What the rounds say of the plan against the 2% rule: its own run's
 * saving (the plan's rounds, the apply runtime's identification included)
 * and the allocators' saving (alloc, the planned allocators without the
 * runtime's identification: about what a change in the source saves, which
 * pays neither the identification nor the runtime's engines' bookkeeping),
 * both as shares of glibc's run. */

static void plan_verdict(FILE *f, const struct mra_planned *pl, const struct variant *plan, double alloc,
                         double alloc_lo, double alloc_hi, const struct variant *kept_v)
{
    double kept = median(kept_v->ratio, kept_v->runs, NULL, NULL);
    double lo, hi, ratio = median(plan->ratio, plan->runs, &lo, &hi);
    double share = rule_share(pl), saved = 1 - ratio;
    unsigned trim = mra_range_trim(plan->runs);
    char every[96] = "every round", every_alloc[96] = "every round";
    if (trim) {
        snprintf(every, sizeof every, "every round\n  but its %u highest of %u (the rounds' range)", trim, plan->runs);
        snprintf(every_alloc, sizeof every_alloc, "every round but its %u lowest of %u (the rounds' range)", trim,
                 plan->runs);
    }
    if (pl->candidates_instead)
        fprintf(f, "  nothing passed the %g%% rule by the prediction, so the plan measured is the sites the rules\n"
                   "  name an allocator for that would save most (at most %u, each at least %g%% of the run)\n",
                100 * share, MRA_PLANNED_MAX, 100 * share / 20);
    /* memory: what the time costs where the routes hold more than glibc
     * (a slab keeps its pages: sites that peak at different moments do
     * not share them, as glibc's heap does) */
    double rss = median(plan->rss_ratio, plan->runs, NULL, NULL);
    char mem[128] = "";
    if (rss > RSS_SAID)
        snprintf(mem, sizeof mem, "\n  (its peak RSS is %.2fx glibc's: the routes hold their memory apart)", rss);
    if (saved >= share && range_hi(plan->ratio, plan->runs) < 1)
        fprintf(f, "  verdict: the plan saves %.1f%% of glibc's run, above the %g%% rule, and saved in %s:\n"
                   "  apply it%s%s\n",
                100 * saved, 100 * share, every,
                pl->predicted_ns < share * pl->program_ns ? " (the prediction, under the rule, saw less than this run gains)"
                                                          : "",
                mem);
    else if (saved >= share)
        fprintf(f, "  verdict: the plan saves %.1f%% of glibc's run in the median, above the %g%% rule, but not in\n"
                   "  %s (%.3f-%.3f): more --rounds tell\n",
                100 * saved, 100 * share, trim ? "the rounds' range" : "every round", lo, hi);
    else if (alloc >= share && alloc_lo >= share)
        fprintf(f, "  verdict: the plan's run saves %.1f%%, under the %g%% rule with the runtime's identification;\n"
                   "  the allocators' saving, about what a change in the source would save, is %.1f%%, above it\n"
                   "  in %s\n",
                100 * saved, 100 * share, 100 * alloc, every_alloc);
    else if (alloc >= share)
        /* a source change is a programmer's work: not on a median the
         * rounds do not hold (Debian's gawk: 7.9%, its rounds -5.9% to 37%) */
        fprintf(f, "  verdict: the plan's run saves %.1f%%; the allocators' saving is %.1f%% in the median, but not in\n"
                   "  %s (%.1f%% to %.1f%%): more --rounds tell\n",
                100 * saved, 100 * alloc, trim ? "the rounds' range" : "every round", 100 * alloc_lo, 100 * alloc_hi);
    else
        fprintf(f, "  verdict: under the %g%% rule as measured (the plan %.1f%%, the allocators %.1f%% of glibc's\n"
                   "  run): none\n",
                100 * share, 100 * saved, 100 * alloc);
    /* glibc told to keep its memory, no change to the program at all: in
     * the rounds' range too (Debian's bc: 6.0% in the median, 0.865-1.040,
     * with 2 pages taken again) */
    if (1 - kept >= share && 1 - kept > saved + share && range_hi(kept_v->ratio, kept_v->runs) < 1)
        fprintf(f, "  glibc with its memory kept saved more, %.1f%% of its run: its tunables (below) come first\n",
                100 * (1 - kept));
}

int mra_measure(char **argv, const char *plan, const struct mra_planned *pl, const struct mra_measure_options *o,
                FILE *f)
{
    char *apply_lib = mra_find_library(APPLY_NAME, "MEMRES_ADVISE_APPLY_LIB");
    if (!apply_lib)
        return -1;
    const char *tmp = getenv("TMPDIR");
    char *dir = mra_path_join(tmp && *tmp ? tmp : "/tmp", "memres-measure.XXXXXX");
    if (!dir || !mkdtemp(dir)) {
        fprintf(stderr, "memres-advise: cannot make a private directory: %s\n", strerror(errno));
        free(apply_lib);
        free(dir);
        return -1;
    }
    static struct variant vs[MAX_VARIANTS];
    memset(vs, 0, sizeof vs);
    unsigned nv = 0;
    snprintf(vs[nv++].name, sizeof vs[0].name, "glibc malloc");
    snprintf(vs[nv].name, sizeof vs[0].name, "memres (the plan)");
    vs[nv++].plan = plan;
    /* the runtime alone: the plan's run less this one is the allocators' saving */
    snprintf(vs[nv].name, sizeof vs[0].name, "the runtime alone");
    vs[nv].identify_only = true;
    vs[nv++].plan = plan;
    static const char *const mi[] = { "/usr/lib/x86_64-linux-gnu/libmimalloc.so.2", "/usr/lib/libmimalloc.so.2",
                                      "/usr/local/lib/libmimalloc.so.2", NULL };
    static const char *const je[] = { "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", "/usr/lib/libjemalloc.so.2",
                                      "/usr/local/lib/libjemalloc.so.2", NULL };
    const char *mip = o->other_mallocs ? find_malloc(mi) : NULL, *jep = o->other_mallocs ? find_malloc(je) : NULL;
    unsigned mi_at = 0;
    if (mip) {
        mi_at = nv;
        snprintf(vs[nv].name, sizeof vs[0].name, "mimalloc");
        vs[nv++].preload = mip;
    }
    if (jep) {
        snprintf(vs[nv].name, sizeof vs[0].name, "jemalloc");
        vs[nv++].preload = jep;
    }
    /* the plan over mimalloc: what the advised sites give beyond switching
     * malloc (the runtime passes what it does not route to the malloc
     * preloaded after it) */
    unsigned over = 0;
    if (mip) {
        over = nv;
        snprintf(vs[nv].name, sizeof vs[0].name, "the plan over mimalloc");
        snprintf(vs[nv].under, sizeof vs[0].under, "%s:%s", apply_lib, mip);
        vs[nv++].plan = plan;
    }
    /* glibc keeping what is freed (no trim, no mmap below 32 MiB): what
     * the memory it gave back and took again cost */
    unsigned kept = nv;
    snprintf(vs[nv].name, sizeof vs[0].name, "glibc, memory kept");
    vs[nv++].tunables = mra_keep_tunables;
    /* the yardstick: a malloc whose free does nothing (tests/zerocost.c) */
    const char *zc = getenv("MEMRES_ADVISE_ZEROCOST");
    if (zc && *zc && access(zc, R_OK) == 0) {
        snprintf(vs[nv].name, sizeof vs[0].name, "zero-cost limit");
        vs[nv++].preload = zc;
    }
    /* one mr_pools behind a function the report names, each on its own plan */
    unsigned first_behind = nv;
    for (size_t i = 0; i < pl->nbehind; i++) {
        snprintf(vs[nv].name, sizeof vs[0].name, "pools behind %.40s", pl->behind[i].function);
        vs[nv++].plan = pl->behind[i].plan;
    }
    unsigned first_site = nv;
    if ((o->per_site && pl->n > 1) || o->alternatives)
        for (size_t i = 0; i < pl->n && nv < MAX_VARIANTS; i++) {
            snprintf(vs[nv].name, sizeof vs[0].name, "site %u alone%s%s", pl->s[i].site,
                     o->alternatives ? ", " : "", o->alternatives ? mra_rec_name(pl->s[i].kind) : "");
            vs[nv].plan = pl->s[i].plan;
            vs[nv].kind = pl->s[i].kind;
            vs[nv++].site = pl->s[i].site;
            if (o->alternatives && pl->s[i].alt != MRA_NONE && nv < MAX_VARIANTS) {
                snprintf(vs[nv].name, sizeof vs[0].name, "site %u alone, %s", pl->s[i].site,
                         mra_rec_name(pl->s[i].alt));
                vs[nv].plan = pl->s[i].alt_plan;
                vs[nv].kind = pl->s[i].alt;
                vs[nv++].site = pl->s[i].site;
            }
        }
    for (unsigned i = 0; i < nv; i++) {
        char name[32];
        snprintf(name, sizeof name, "stats-%u", i);
        char *p = mra_path_join(dir, name);
        snprintf(vs[i].stats, sizeof vs[i].stats, "%s", p ? p : "");
        free(p);
    }
    int in = input_fd();
    char *out0 = mra_path_join(dir, "out-glibc"), *outv = mra_path_join(dir, "out");
    uint64_t h0 = 0;
    int status0 = -1;
    unsigned rounds = o->rounds;
    int rc = 0;
    double speed[MRA_MEASURE_ROUNDS_MAX];
    unsigned nspeed = 0;
    /* a round's runs on one CPU, the next round's on the next: what one
     * virtual CPU runs slower for a while weighs on every variant of the
     * round alike, and the paired ratios cancel it.  A program of several
     * threads runs on all of them. */
    struct mra_cpus cpus;
    mra_cpus_get(&cpus);
    if (pl->threads > 1)
        cpus.n = 0;
    unsigned rounds_max = o->rounds_max ? o->rounds_max : 3 * rounds;
    if (rounds_max > MRA_MEASURE_ROUNDS_MAX)
        rounds_max = MRA_MEASURE_ROUNDS_MAX;
    for (unsigned r = 0; rc == 0; r++) {
        /* past --rounds, more while the plan's verdict is open: saved in
         * the median, not in the rounds' range (the plan's run, or where
         * that is under the rule the allocators': plan_open) */
        if (r >= rounds && (r >= rounds_max || !plan_open(pl, &vs[1], &vs[2])))
            break;
        mra_progress("measure", r, r < rounds ? rounds : rounds_max);
        mra_cpus_pin(&cpus, (int)r);
        /* the machine's speed in this round, on this round's CPU */
        double probe = pl->probe_ref_ns > 0 ? mra_costs_probe() : 0;
        if (probe > 0)
            speed[nspeed++] = probe / pl->probe_ref_ns;
        double cpu[MAX_VARIANTS], rss[MAX_VARIANTS], flt[MAX_VARIANTS];
        for (unsigned k = 0; k < nv; k++) {
            unsigned i = r % 2 ? nv - 1 - k : k;
            struct variant *v = &vs[i];
            struct mra_child c;
            const char *op = i == 0 && r == 0 ? out0 : outv;
            if (run_variant(argv, v, apply_lib, in, op, &c) != 0 || c.exec_errno) {
                fprintf(stderr, "memres-advise: measure: cannot run %s (%s)\n", argv[0],
                        c.exec_errno ? strerror(c.exec_errno) : "fork");
                rc = -1;
                break;
            }
            cpu[i] = mra_child_cpu_ns(&c);
            rss[i] = (double)c.ru.ru_maxrss * 1024.0;
            flt[i] = (double)c.ru.ru_minflt;
            if (i == 0 && r == 0) {
                status0 = c.status;
                hash_file(out0, &h0);
            } else {
                uint64_t h = 0;
                if (hash_file(outv, &h) != 0 || h != h0)
                    v->output_differs = true;
                if (c.status != status0)
                    v->status_differs = true;
            }
        }
        if (rc)
            break;
        for (unsigned i = 0; i < nv; i++) {
            struct variant *v = &vs[i];
            v->cpu[v->runs] = cpu[i];
            v->rss[v->runs] = rss[i];
            v->flt[v->runs] = flt[i];
            v->ratio[v->runs] = cpu[0] > 0 ? cpu[i] / cpu[0] : 1;
            v->rss_ratio[v->runs] = rss[0] > 0 ? rss[i] / rss[0] : 1;
            v->runs++;
        }
    }
    mra_cpus_pin(&cpus, -1);
    mra_progress_end();
    if (rc == 0) {
        double g = median(vs[0].cpu, vs[0].runs, NULL, NULL);
        char more[128] = "";
        if (vs[0].runs > rounds)
            snprintf(more, sizeof more, " (%u, then %u more while the plan's verdict was open)", rounds,
                     vs[0].runs - rounds);
        fprintf(f, "\nmeasured: %u rounds%s, each variant once a round in alternating order%s; CPU time (user +\n"
                   "system), peak RSS and page faults of the program; ratios are to glibc's run of the same round\n"
                   "(median, lowest-highest)\n\n",
                vs[0].runs, more, cpus.n ? ", a round's runs on one CPU (the next round on the next)" : "");
        fprintf(f, "  %-22s %10s  %-22s %12s %10s  %s  %s\n", "variant", "CPU ms", "ratio to glibc", "saving ms",
                "peak RSS", "RSS ratio", "page faults");
        for (unsigned i = 0; i < nv; i++) {
            struct variant *v = &vs[i];
            double lo, hi, rlo, rhi;
            double cpu = median(v->cpu, v->runs, NULL, NULL);
            double ratio = median(v->ratio, v->runs, &lo, &hi);
            double rr = median(v->rss_ratio, v->runs, &rlo, &rhi);
            char rs[64];
            snprintf(rs, sizeof rs, "%.3f (%.3f-%.3f)", ratio, lo, hi);
            fprintf(f, "  %-22s %10.1f  %-22s %12.1f %8.1f MiB  %.2f  %11.0f%s%s\n", v->name, cpu / 1e6, rs,
                    (1 - ratio) * g / 1e6, median(v->rss, v->runs, NULL, NULL) / 1048576.0, rr,
                    median(v->flt, v->runs, NULL, NULL),
                    v->output_differs ? "  OUTPUT DIFFERS" : "", v->status_differs ? "  EXIT STATUS DIFFERS" : "");
        }
        double ident, walked, held;
        uint64_t routed;
        unsigned walk;
        read_stats(vs[1].stats, &walk, &ident, &walked, &held, &routed);
        double ratio = median(vs[1].ratio, vs[1].runs, NULL, NULL);
        fprintf(f, "\n  the plan: %zu site%s, predicted %.1f ms, measured %.1f ms (%.1f%% of glibc's run)\n", pl->total,
                pl->total == 1 ? "" : "s", pl->predicted_ns / 1e6, (1 - ratio) * g / 1e6, 100 * (1 - ratio));
        /* the prediction is in ns of the calibration's machine: at the
         * rounds' speed where the host ran slower or faster since */
        double slo = 0, shi = 0, sp = nspeed ? median(speed, nspeed, &slo, &shi) : 0;
        if (sp > 0)
            fprintf(f,
                    "  the machine's speed in the rounds: glibc's pair of the calibration (32 bytes, random order)\n"
                    "  took %.2fx its calibrated %.1f ns (%.2f-%.2f); the prediction at that speed: %.1f ms\n",
                    sp, pl->probe_ref_ns, slo, shi, sp * pl->predicted_ns / 1e6);
        /* the report's shares divide by the program's own time, estimated
         * from the recorded run less the recorder's sampled hooks: against
         * glibc's runs here, how far off that was (cppcheck: 0.37x, its
         * hooks' timed samples overstated on a program of 15.8 million
         * allocations in 1.2 s) */
        if (pl->program_ns > 0 && g > 0) {
            double est = pl->program_ns * (sp > 0 ? sp : 1), x = est / g;
            fprintf(f, "  the program's own time as the report estimated it: %.1f ms at the rounds' speed, %.2fx "
                    "glibc's runs%s\n", est / 1e6, x,
                    x < 2.0 / 3 ? " (the report's shares of the run were that much too high)"
                    : x > 1.5 ? " (the report's shares of the run were that much too low)"
                              : "");
        }
        char id[256];
        if (walk > 1)
            snprintf(id, sizeof id, "a walk of %u frames to identify a call's site, %.1f ns (sampled) on %.0f calls",
                     walk, ident, walked);
        else
            snprintf(id, sizeof id, "each call's site known by its first frame (one look-up)");
        fprintf(f, "  routed %llu allocations; %s; the routes held %.1f MiB at their peak\n",
                (unsigned long long)routed, id, held / 1048576.0);
        /* the allocators' saving, paired by round: the runtime-alone run
         * less the plan's, in glibc's run of the round */
        double alloc[MRA_MEASURE_ROUNDS_MAX], alo, ahi, rlo, rhi;
        alloc_savings(&vs[1], &vs[2], alloc);
        double a = median(alloc, vs[1].runs, &alo, &ahi);
        /* the verdict's range: the rounds' as mra_range_trim leaves it */
        double arhi, arlo = range_lo(alloc, vs[1].runs, &arhi);
        double rt = median(vs[2].ratio, vs[2].runs, &rlo, &rhi);
        fprintf(f,
                "  the runtime alone (every call identified, then served by glibc) cost %.1f ms (%.3f, %.3f-%.3f);\n"
                "  the allocators' saving (the runtime-alone run less the plan's, per round): %.1f ms (%.1f-%.1f),\n"
                "  about what a change in the source would save (often more: the runtime's engines keep books\n"
                "  a program's own allocator does not), against the predicted %.1f ms (%.2fx)",
                (rt - 1) * g / 1e6, rt, rlo, rhi, a * g / 1e6, alo * g / 1e6, ahi * g / 1e6, pl->predicted_ns / 1e6,
                a > 0 ? pl->predicted_ns / (a * g) : 0);
        if (sp > 0)
            fprintf(f, ", %.1f ms at the rounds' speed (%.2fx)", sp * pl->predicted_ns / 1e6,
                    a > 0 ? sp * pl->predicted_ns / (a * g) : 0);
        fputc('\n', f);
        plan_verdict(f, pl, &vs[1], a, arlo, arhi, &vs[kept]);
        if (over) {
            /* mimalloc's run less the plan's over it, per round */
            for (unsigned r = 0; r < vs[over].runs; r++)
                alloc[r] = vs[mi_at].ratio[r] - vs[over].ratio[r];
            a = median(alloc, vs[over].runs, &alo, &ahi);
            fprintf(f,
                    "  the plan over mimalloc against mimalloc alone (what the advised sites give beyond switching\n"
                    "  malloc, per round): %.1f ms saved (%.1f-%.1f)\n",
                    a * g / 1e6, alo * g / 1e6, ahi * g / 1e6);
        }
        double klo, khi, kr = median(vs[kept].ratio, vs[kept].runs, &klo, &khi);
        fprintf(f,
                "  glibc with its memory kept (GLIBC_TUNABLES=%s)\n"
                "  saved %.1f ms (%.3f, %.3f-%.3f), against the predicted %.1f ms of memory given back and\n"
                "  taken again\n",
                mra_keep_tunables, (1 - kr) * g / 1e6, kr, klo, khi, pl->heap_retaken_ns / 1e6);
        /* faults are counted, not timed: what keeping the memory changed, whatever the host did */
        double f0 = median(vs[0].flt, vs[0].runs, NULL, NULL), fk = median(vs[kept].flt, vs[kept].runs, NULL, NULL);
        fprintf(f, "  page faults %.0f against glibc's %.0f (%.0f fewer); the recorded run took %.0f pages again\n", fk,
                f0, f0 - fk, pl->heap_retaken_pages);
        for (unsigned i = first_behind; i < first_site; i++) {
            const struct mra_planned_behind *pb = &pl->behind[i - first_behind];
            double lo, hi, r2 = median(vs[i].ratio, vs[i].runs, &lo, &hi);
            double share = rule_share(pl);
            read_stats(vs[i].stats, &walk, &ident, &walked, &held, &routed);
            fprintf(f,
                    "  one mr_pools behind %s: predicted %.1f ms, measured %.1f ms (%.3f, %.3f-%.3f), peak RSS\n"
                    "  %.2fx glibc's; routed %llu allocations by their first frame; %s\n",
                    pb->function, pb->predicted_ns / 1e6, (1 - r2) * g / 1e6, r2, lo, hi,
                    median(vs[i].rss_ratio, vs[i].runs, NULL, NULL), (unsigned long long)routed,
                    1 - r2 >= share && range_hi(vs[i].ratio, vs[i].runs) < 1
                        ? "saved in the rounds' range: put the pools behind it"
                    : 1 - r2 >= share ? "saved in the median, not in the rounds' range: more --rounds tell"
                                      : "under the rule as measured");
        }
        if (first_site < nv) {
            fprintf(f, "\n  per site (its plan alone):\n");
            for (unsigned i = first_site; i < nv; i++) {
                const struct mra_planned_site *ps = NULL;
                for (size_t k = 0; k < pl->n; k++)
                    if (pl->s[k].site == vs[i].site)
                        ps = &pl->s[k];
                double lo, hi;
                double r2 = median(vs[i].ratio, vs[i].runs, &lo, &hi);
                if (ps && vs[i].kind != ps->kind)
                    fprintf(f, "    site %-4u %-13s %29s measured %8.1f ms (%.3f, %.3f-%.3f)\n", vs[i].site,
                            mra_rec_name(vs[i].kind), "(the alternative)", (1 - r2) * g / 1e6, r2, lo, hi);
                else
                    fprintf(f, "    site %-4u %-13s predicted %8.1f ms  measured %8.1f ms (%.3f, %.3f-%.3f)\n",
                            vs[i].site, ps ? mra_rec_name(ps->kind) : "?", ps ? ps->predicted_ns / 1e6 : 0,
                            (1 - r2) * g / 1e6, r2, lo, hi);
            }
        }
        if (o->alternatives)
            alternatives_verdict(f, pl, vs, first_site, nv);
    }
    for (unsigned i = 0; i < nv; i++)
        unlink(vs[i].stats);
    if (out0)
        unlink(out0);
    if (outv)
        unlink(outv);
    free(out0);
    free(outv);
    rmdir(dir);
    free(dir);
    free(apply_lib);
    return rc;
}

int mra_apply_main(int argc, char **argv)
{
    /* apply PLAN [--stats FILE] [--] PROGRAM [ARGS...] */
    if (argc < 3) {
        fprintf(stderr, "usage: memres-advise apply PLAN [--stats FILE] [--] PROGRAM [ARGS...]\n");
        return 2;
    }
    const char *plan = argv[1], *stats = NULL;
    int i = 2;
    for (; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        }
        if (strcmp(argv[i], "--stats") == 0 && i + 1 < argc) {
            stats = argv[++i];
            continue;
        }
        break;
    }
    if (i >= argc) {
        fprintf(stderr, "memres-advise apply: no PROGRAM to run\n");
        return 2;
    }
    char *plan_abs = realpath(plan, NULL);
    if (!plan_abs) {
        fprintf(stderr, "memres-advise apply: %s: %s\n", plan, strerror(errno));
        return 2;
    }
    char *lib = mra_find_library(APPLY_NAME, "MEMRES_ADVISE_APPLY_LIB");
    if (!lib) {
        free(plan_abs);
        return 2;
    }
    /* the stats are written at exit, where the program may have changed
     * directory (git -C): the path is made absolute here */
    char *stats_abs = NULL, cwd[PATH_MAX];
    if (stats && stats[0] != '/' && getcwd(cwd, sizeof cwd) && (stats_abs = mra_path_join(cwd, stats)) != NULL)
        stats = stats_abs;
    const char *env[][2] = {
        { "MEMRES_ADVISE_PLAN", plan_abs },
        { "MEMRES_ADVISE_APPLY_STATS", stats },
        { NULL, NULL },
    };
    struct mra_launch l = { .preload = lib, .env = env, .in_fd = -1, .out_fd = -1, .err_fd = -1 };
    struct mra_child c;
    int rc = mra_run(argv + i, &l, &c);
    free(lib);
    free(plan_abs);
    free(stats_abs);
    if (rc != 0)
        return 2;
    if (c.exec_errno) {
        fprintf(stderr, "memres-advise apply: cannot run %s: %s\n", argv[i], strerror(c.exec_errno));
        return c.exec_errno == ENOENT || c.exec_errno == ENOTDIR ? 127 : 126;
    }
    return mra_exit_as(c.status);
}
