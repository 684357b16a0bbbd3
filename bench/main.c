/* SPDX-License-Identifier: MIT */
/* bench/main.c -- memres-bench: the command line and the plan.
 *
 * What it does.  Every scenario (a workload, bench/sc_*.c) has variants (one
 * per way of allocating; registry.c lists them).  The harness runs each
 * (scenario, variant, malloc implementation) row several times, each run in
 * a fresh child process (run.c).  BENCH_MALLOC variants get one row per
 * malloc implementation found (glibc, and jemalloc, mimalloc, tcmalloc by
 * LD_PRELOAD of their Debian .so); every other kind runs once, with glibc.
 * No in-process warm-up: each run is a cold process, as a program meets its
 * allocator (first-touch page faults included).  --warmup N discarded runs
 * per row go first (default 1 when --runs >= 3; 0 in --quick).  The rows
 * of a scenario run in rounds, each round every row once in an order
 * shuffled per round, so that neither a host whose speed drifts nor the row
 * run before another biases a row.  Rows show the median of the runs
 * with min and max, and the ratio to the glibc row of the scenario's first
 * malloc variant and to the best peer (the fastest malloc, peer-library or
 * external row), each the median of the per-round ratios, with the spread
 * of the ratio to the best peer (its lowest and highest round).
 *
 * The check.  Every row's output text and checksum must equal those of the
 * scenario's first row, and every run of a row those of its first run; a
 * mismatch or a failed run is an error and the exit status is 1.  That is
 * what CI runs (--quick); timing is never a pass/fail test.
 *
 * Output (report.c): progress on stderr; the machine, compiler and flags,
 * then a table per scenario on stdout; --json FILE; --plot FILE.svg.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "harness.h"

/* ------------------------------------------------------------------------ */
/* Options. */

static void usage(FILE *f)
{
    fputs("usage: " PROG " [options]\n"
          "Runs every scenario x variant x malloc implementation in fresh processes and\n"
          "prints a table of median wall time [min, max], user/sys time, peak RSS, minor\n"
          "faults, instructions, bytes held vs requested, and ratios.  Every variant's\n"
          "output must equal its scenario's first: a mismatch exits 1.\n"
          "\n"
          "  --quick            small sizes, 1 run, no warm-up (what CI runs)\n"
          "  --runs N           timed runs per row (default 5; --quick: 1)\n"
          "  --warmup N         discarded runs per row first (default 1; 0 when --runs < 3\n"
          "                     or --quick)\n"
          "  --scenario NAME    only this scenario (repeatable)\n"
          "  --variant TEXT     only variants whose name contains TEXT (repeatable)\n"
          "  --malloc NAME      only these malloc implementations for malloc variants\n"
          "                     (glibc, jemalloc, mimalloc, tcmalloc; repeatable)\n"
          "  --depth N          binary-trees depth (default 21; --quick: 12)\n"
          "  --threads N        threads for the threaded variants (default 1)\n"
          "  --persistent       binary-trees: worker threads made once and kept across the\n"
          "                     depths (default: new threads for each depth)\n"
          "  --timeout S        seconds one run may take (default 900)\n"
          "  --json FILE        write all results as JSON\n"
          "  --plot FILE.svg    write an SVG bar chart per scenario\n"
          "  --list             list scenarios, variants and malloc implementations\n"
          "  --help\n",
          f);
}

static int parse_int(const char *opt, const char *s, int lo, int hi)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end != '\0' || v < lo || v > hi)
        die("%s: expected an integer in [%d, %d], got '%s'", opt, lo, hi, s);
    return (int)v;
}

static void add_filter(const char **list, int *n, const char *opt, const char *val)
{
    if (*n == MAX_FILTERS)
        die("too many %s", opt);
    list[(*n)++] = val;
}

/* The options that take a value (--fd is the child's result pipe). */
static const char *const value_options[] = {
    "--runs", "--warmup", "--depth", "--threads", "--timeout", "--scenario",
    "--variant", "--malloc", "--json", "--plot", "--fd",
};

static bool takes_value(const char *a)
{
    for (size_t i = 0; i < sizeof value_options / sizeof value_options[0]; i++)
        if (strcmp(a, value_options[i]) == 0)
            return true;
    return false;
}

/* Option a (one of value_options) with its value. */
static void set_value(options *o, const char *a, const char *val)
{
    if (strcmp(a, "--runs") == 0) {
        o->runs = parse_int(a, val, 1, 1000);
        o->runs_set = true;
    } else if (strcmp(a, "--warmup") == 0) {
        o->warmup = parse_int(a, val, 0, 100);
        o->warmup_set = true;
    } else if (strcmp(a, "--depth") == 0) {
        o->args.depth = parse_int(a, val, 1, 30);
        o->depth_set = true;
    } else if (strcmp(a, "--threads") == 0) {
        o->args.threads = parse_int(a, val, 1, 256);
    } else if (strcmp(a, "--timeout") == 0) {
        o->timeout = parse_int(a, val, 1, 1000000);
    } else if (strcmp(a, "--scenario") == 0) {
        add_filter(o->scenario, &o->n_scenario, a, val);
    } else if (strcmp(a, "--variant") == 0) {
        add_filter(o->variant, &o->n_variant, a, val);
    } else if (strcmp(a, "--malloc") == 0) {
        if (malloc_by_name(val) < 0)
            die("--malloc: unknown implementation '%s' (glibc, jemalloc, mimalloc, tcmalloc)", val);
        add_filter(o->malloc_filter, &o->n_malloc, a, val);
    } else if (strcmp(a, "--json") == 0) {
        o->json = val;
    } else if (strcmp(a, "--plot") == 0) {
        o->plot = val;
    } else { /* --fd */
        o->run_fd = parse_int(a, val, 0, 1 << 20);
    }
}

/* The defaults that depend on other options. */
static void derive_defaults(options *o)
{
    if (o->args.quick) {
        if (!o->runs_set)
            o->runs = 1;
        if (!o->depth_set)
            o->args.depth = 12;
        if (!o->warmup_set)
            o->warmup = 0;
    }
    if (!o->warmup_set && o->runs < 3)
        o->warmup = 0;
}

static void parse_options(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    o->args.depth = 21;
    o->args.threads = 1;
    o->runs = 5;
    o->warmup = 1;
    o->timeout = 900;
    o->run_fd = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = NULL;
        char name[64];
        const char *eq = strchr(a, '=');
        if (strncmp(a, "--", 2) == 0 && eq && (size_t)(eq - a) < sizeof name) { /* --name=value */
            memcpy(name, a, (size_t)(eq - a));
            name[eq - a] = '\0';
            val = eq + 1;
            a = name;
        }
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            exit(0);
        } else if (strcmp(a, "--quick") == 0) {
            o->args.quick = true;
        } else if (strcmp(a, "--persistent") == 0) {
            o->args.persistent = true;
        } else if (strcmp(a, "--list") == 0) {
            o->list = true;
        } else if (strcmp(a, "--run") == 0) { /* hidden: the child */
            if (i + 2 >= argc)
                die("--run needs SCENARIO VARIANT");
            o->run_scenario = argv[++i];
            o->run_variant = argv[++i];
        } else if (takes_value(a)) {
            if (val == NULL && i + 1 >= argc)
                die("%s needs a value (see --help)", a);
            set_value(o, a, val ? val : argv[++i]);
        } else {
            fprintf(stderr, PROG ": unknown option '%s'\n", argv[i]);
            usage(stderr);
            exit(2);
        }
    }
    derive_defaults(o);
}

static bool contains_ci(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++)
        if (strncasecmp(hay, needle, n) == 0)
            return true;
    return n == 0;
}

static bool scenario_selected(const options *o, const char *name)
{
    if (o->n_scenario == 0)
        return true;
    for (int i = 0; i < o->n_scenario; i++)
        if (strcmp(o->scenario[i], name) == 0)
            return true;
    return false;
}

static bool variant_selected(const options *o, const char *name)
{
    if (o->n_variant == 0)
        return true;
    for (int i = 0; i < o->n_variant; i++)
        if (contains_ci(name, o->variant[i]))
            return true;
    return false;
}

static bool malloc_selected(const options *o, int m)
{
    if (o->n_malloc == 0)
        return true;
    for (int i = 0; i < o->n_malloc; i++)
        if (strcmp(o->malloc_filter[i], mallocs[m].name) == 0)
            return true;
    return false;
}

static void check_scenario_filters(const options *o)
{
    for (int i = 0; i < o->n_scenario; i++) {
        bool known = false;
        for (int s = 0; s < n_scenarios; s++)
            known = known || strcmp(scenarios[s].name, o->scenario[i]) == 0;
        if (!known)
            die("--scenario: no scenario '%s' (see --list)", o->scenario[i]);
    }
}

static void list_all(const options *o)
{
    printf("scenarios and variants (kind, threaded, availability):\n");
    for (int i = 0; i < n_scenarios; i++) {
        if (!scenario_selected(o, scenarios[i].name))
            continue;
        printf("  %s\n", scenarios[i].name);
        for (int j = 0; j < scenarios[i].nv; j++) {
            const bench_variant *v = scenarios[i].v[j];
            if (!variant_selected(o, v->name))
                continue;
            const char *why = variant_unavailable(v);
            printf("    %c %-36s %-8s %-8s %s\n", v->kind == BENCH_MEMRES ? '*' : ' ', v->name, kind_name(v->kind),
                   v->threaded ? "threaded" : "", why ? why : "ok");
        }
    }
    printf("malloc implementations (malloc variants run once per each):\n");
    for (int i = 0; i < N_MALLOCS; i++)
        printf("  %-9s %s\n", mallocs[i].name, mallocs[i].path[0] ? mallocs[i].path : "not found");
}

/* ------------------------------------------------------------------------ */
/* The plan: every row, with the skipped variants noted per scenario. */

static void plan_add_row(plan *p, const options *o, const bench_variant *v, int si, int m)
{
    if (p->nrows == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 16;
        row *nr = realloc(p->rows, (size_t)p->cap * sizeof *nr);
        if (nr == NULL)
            die("out of memory");
        p->rows = nr;
    }
    row *r = &p->rows[p->nrows++];
    memset(r, 0, sizeof *r);
    r->v = v;
    r->scen = si;
    r->malloc_idx = m;
    r->threads = v->threaded ? o->args.threads : 1;
    r->wall = xcalloc((size_t)o->runs, sizeof(double));
    r->user = xcalloc((size_t)o->runs, sizeof(double));
    r->sys = xcalloc((size_t)o->runs, sizeof(double));
    r->rss_kib = xcalloc((size_t)o->runs, sizeof(double));
    r->minflt = xcalloc((size_t)o->runs, sizeof(double));
    r->instr = xcalloc((size_t)o->runs, sizeof(double));
    r->x_glibc = r->x_peer = r->x_peer_lo = r->x_peer_hi = NAN;
}

/* The rows of variant v: one per malloc found and selected for a
 * BENCH_MALLOC variant, else one with glibc. */
static void plan_variant(plan *p, const options *o, const bench_variant *v, int si)
{
    const char *why = variant_unavailable(v);
    if (why) {
        char line[512];
        snprintf(line, sizeof line, "%s: %s", v->name, why);
        p->skipped[si][p->nskipped[si]++] = xstrdup(line);
        return;
    }
    for (int m = 0; m < N_MALLOCS; m++) {
        if (v->kind != BENCH_MALLOC && m > 0)
            break;
        if (v->kind == BENCH_MALLOC && (!mallocs[m].path[0] || !malloc_selected(o, m)))
            continue;
        plan_add_row(p, o, v, si, m);
    }
}

static void plan_build(plan *p, const options *o)
{
    memset(p, 0, sizeof *p);
    p->cap = 16;
    p->rows = xcalloc((size_t)p->cap, sizeof *p->rows);
    for (int si = 0; si < n_scenarios; si++) {
        const scenario *s = &scenarios[si];
        if (!scenario_selected(o, s->name))
            continue;
        p->skipped[si] = xcalloc((size_t)s->nv, sizeof(char *));
        for (int j = 0; j < s->nv; j++)
            if (variant_selected(o, s->v[j]->name))
                plan_variant(p, o, s->v[j], si);
    }
    int planned = p->nrows;
    for (int si = 0; si < n_scenarios; si++)
        planned += p->nskipped[si];
    if (planned == 0)
        die("no scenario and variant match the filters (see --list)");
}

/* ------------------------------------------------------------------------ */
/* The check and the ratios. */

/* Marks the rows whose output differs from the first row that ran.  Returns
 * the errors: failed rows and rows whose output differs. */
static int check_outputs(row *rows, int nrows, FILE *err)
{
    const row *ref = NULL;
    int errors = 0;
    for (int i = 0; i < nrows; i++) {
        row *r = &rows[i];
        if (r->failed) {
            errors++;
            continue;
        }
        if (ref == NULL)
            ref = r;
        if (r != ref && !r->mismatch &&
            (r->checksum != ref->checksum || strcmp(r->text ? r->text : "", ref->text ? ref->text : "") != 0)) {
            r->mismatch = true;
            fprintf(err, PROG ": ERROR: %s / %s (%s): output differs from %s (%s)\n", r->v->scenario, r->v->name,
                    mallocs[r->malloc_idx].name, ref->v->name, mallocs[ref->malloc_idx].name);
            fprintf(err, "  checksum %016" PRIx64 " vs %016" PRIx64 "\n  got:\n%s  expected:\n%s", r->checksum,
                    ref->checksum, r->text ? r->text : "", ref->text ? ref->text : "");
        }
        if (r->mismatch)
            errors++;
    }
    return errors;
}

/* The median of r's per-round ratios to ref (round k: both rows' run k),
 * with the lowest and highest round in *lo, *hi. */
static double round_ratio(const row *r, const row *ref, double *lo, double *hi)
{
    int n = r->nruns < ref->nruns ? r->nruns : ref->nruns;
    double *x = xcalloc(n > 0 ? (size_t)n : 1, sizeof *x);
    int m = 0;
    for (int k = 0; k < n; k++)
        if (ref->wall[k] > 0)
            x[m++] = r->wall[k] / ref->wall[k];
    double med = median_of(x, m);
    *lo = *hi = m > 0 ? x[0] : NAN;
    for (int k = 1; k < m; k++) {
        *lo = x[k] < *lo ? x[k] : *lo;
        *hi = x[k] > *hi ? x[k] : *hi;
    }
    free(x);
    return med;
}

/* Each row's time over the glibc row's and over the best peer's (the
 * fastest median of the malloc, peer and external rows), as the median of
 * the ratios round by round, taken only from rows that ran and agree: a
 * host whose speed drifts during the run moves both runs of a round alike. */
static void set_ratios(row *rows, int nrows)
{
    const row *glibc = NULL, *best = NULL;
    for (int i = 0; i < nrows; i++) {
        const row *r = &rows[i];
        if (r->failed || r->mismatch)
            continue;
        if (glibc == NULL && r->v->kind == BENCH_MALLOC && r->malloc_idx == 0)
            glibc = r;
        if ((r->v->kind == BENCH_MALLOC || r->v->kind == BENCH_PEER || r->v->kind == BENCH_EXTERNAL) &&
            (best == NULL || r->med < best->med))
            best = r;
    }
    for (int i = 0; i < nrows; i++) {
        row *r = &rows[i];
        double lo, hi;
        if (r->failed)
            continue;
        r->x_glibc = glibc ? round_ratio(r, glibc, &lo, &hi) : NAN;
        r->x_peer = best ? round_ratio(r, best, &r->x_peer_lo, &r->x_peer_hi) : NAN;
    }
}

/* The order of round k's rows: 0 .. count-1 shuffled by a generator seeded
 * with k (the same in every run of the program).  A row's cost can depend
 * on the row before it -- on a VM, a process that touches memory the one
 * before it gave back to the host (4 KiB pages, then huge pages) took 0.5 s
 * more system time -- so no row keeps one predecessor. */
static void round_order(int *order, int count, int k)
{
    uint64_t x = 0x9e3779b97f4a7c15u * (uint64_t)(k + 1);
    for (int i = 0; i < count; i++)
        order[i] = i;
    for (int i = count - 1; i > 0; i--) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 */
        int j = (int)(x % (uint64_t)(i + 1));
        int t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

/* Runs the plan scenario by scenario, printing each scenario's table when
 * its rows are done.  The rows of a scenario run in rounds: the warm-ups,
 * then round k runs every row's run k, in round_order's order, so that each
 * ratio compares runs made at the same time.  Returns the errors. */
static int plan_run(plan *p, const options *o)
{
    int errors = 0;
    for (int si = 0; si < n_scenarios; si++) {
        if (!scenario_selected(o, scenarios[si].name))
            continue;
        int first = -1, count = 0;
        for (int i = 0; i < p->nrows; i++)
            if (p->rows[i].scen == si) {
                if (first < 0)
                    first = i;
                count++;
            }
        row *rows = count > 0 ? &p->rows[first] : p->rows;
        int *order = xcalloc((size_t)count, sizeof *order);
        for (int k = 0; k < o->warmup + o->runs; k++) {
            round_order(order, count, k);
            for (int j = 0; j < count; j++)
                (void)run_row_once(o, &rows[order[j]], first + order[j], p->nrows, k);
        }
        free(order);
        for (int i = 0; i < count; i++)
            run_row_done(&rows[i], first + i, p->nrows);
        progress_end();
        if (count > 0) {
            errors += check_outputs(rows, count, stderr);
            set_ratios(rows, count);
        }
        print_scenario(stdout, o, si, rows, count, p->skipped[si], p->nskipped[si]);
    }
    return errors;
}

int main(int argc, char **argv)
{
    options o;
    parse_options(argc, argv, &o);
    registry_build();
    if (o.run_scenario)
        return child_main(&o);
    mallocs_find();
    if (o.list) {
        list_all(&o);
        return 0;
    }
    check_scenario_filters(&o);
    run_init();
    plan p;
    plan_build(&p, &o);
    machine mach;
    machine_read(&mach);
    print_header(stdout, &o, &mach);
    fflush(stdout);
    int errors = plan_run(&p, &o);
    if (o.json)
        write_json(o.json, &o, &mach, &p, errors);
    if (o.plot)
        write_svg(o.plot, &o, &mach, &p);
    if (errors)
        printf("\n%d error%s: failed runs or outputs that differ (see stderr)\n", errors, errors == 1 ? "" : "s");
    else
        printf("\nall outputs agree\n");
    return errors ? 1 : 0;
}
