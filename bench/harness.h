/* SPDX-License-Identifier: MIT */
/* bench/harness.h -- what the files of the harness share: the options, the
 * registry of scenarios and malloc implementations, the rows of the plan and
 * their results.  main.c reads the options and runs the plan, registry.c
 * knows what can be run, run.c runs one row (each run a child process) and
 * report.c writes the results; util.h has the helpers they share (the
 * error exit, the median, ...).  The scenarios see only bench.h.
 */
#ifndef MEMRES_BENCH_HARNESS_H
#define MEMRES_BENCH_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "bench.h"
#include "util.h"

#define MAX_FILTERS 32
#define MAX_SCENARIOS 32
#define MAX_VARIANTS 64

/* ---- main.c: the options ---- */

typedef struct options {
    bench_args args;
    int runs, warmup, timeout;
    bool runs_set, warmup_set, depth_set;
    const char *scenario[MAX_FILTERS];
    int n_scenario;
    const char *variant[MAX_FILTERS];
    int n_variant;
    const char *malloc_filter[MAX_FILTERS];
    int n_malloc;
    const char *json, *plot;
    bool list;
    /* --run (the child) */
    const char *run_scenario, *run_variant;
    int run_fd;
} options;

/* ---- registry.c: scenarios, variants, malloc implementations ---- */

typedef struct scenario {
    const char *name;
    const bench_variant *v[MAX_VARIANTS];
    int nv;
} scenario;

extern scenario scenarios[MAX_SCENARIOS];
extern int n_scenarios;

/* Groups the rows of every scenario table by scenario, in table order. */
void registry_build(void);
/* The variant named variant of scenario scen; NULL when there is none. */
const bench_variant *registry_find(const char *scen, const char *variant);
/* Why v cannot run here; NULL when it can. */
const char *variant_unavailable(const bench_variant *v);
const char *kind_name(enum bench_kind k);

typedef struct malloc_impl {
    const char *name;
    const char *soname;  /* NULL: glibc, built in */
    const char *package; /* Debian 12 package */
    char path[512];      /* found here; "" when not */
} malloc_impl;

/* glibc first: the baseline of the ratios and the malloc of every row that
 * is not BENCH_MALLOC. */
#define N_MALLOCS 4
extern malloc_impl mallocs[N_MALLOCS];

void mallocs_find(void);
int malloc_by_name(const char *name); /* -1: unknown */

/* ---- the plan: one row per (scenario, variant, malloc implementation) ---- */

typedef struct row {
    const bench_variant *v;
    int scen;          /* index in scenarios[] */
    int malloc_idx;
    int threads;
    int nruns;         /* timed runs done */
    double *wall, *user, *sys;
    double *rss_kib, *minflt, *instr;
    bool failed, mismatch;
    char why[320];
    uint64_t checksum, upstream, requested;
    char *text;
    char *note;        /* bench_note of the last run; NULL: none */
    /* summaries */
    double med, min, max, med_user, med_sys, med_rss, med_flt, med_instr;
    double x_glibc, x_peer; /* medians of the per-round ratios; NAN: none */
    double x_peer_lo, x_peer_hi; /* their spread: the lowest and highest round */
} row;

typedef struct plan {
    row *rows;
    int nrows, cap;
    char **skipped[MAX_SCENARIOS]; /* "variant: why" per scenario */
    int nskipped[MAX_SCENARIOS];
} plan;

/* ---- bench.c: the span one run measures ---- */

/* Opens and starts the instruction counter (see perf_open) and the wall
 * clock; bench_timing_start restarts both. */
void timing_begin(void);
/* The nanoseconds since the span began; the instructions counted into
 * *instructions, left alone when there is no counter. */
uint64_t timing_end(int64_t *instructions);

/* ---- run.c: one row, each run in a fresh process ---- */

/* The child (--run SCENARIO VARIANT --fd N): runs the variant once and
 * sends the result to the parent. */
int child_main(const options *o);
/* The parent's setup: finds this program (to exec it for every run; dies
 * when it cannot), whether stderr is a tty, SIGPIPE ignored. */
void run_init(void);
/* Run k of row number index (of nrows): a warm-up when k < o->warmup, else
 * timed run k - warmup; false (r->failed, r->why) when it failed or had. */
bool run_row_once(const options *o, row *r, int index, int nrows, int k);
/* After the last run: the row's summary, and its line of progress. */
void run_row_done(row *r, int index, int nrows);
/* Clears the progress line on a tty (progress goes to stderr: a line per row
 * in a log, one line rewritten on a tty). */
void progress_end(void);

/* ---- report.c: the machine, the table, JSON, SVG ---- */

typedef struct machine {
    char cpu[256];
    long cpus;
    char kernel[256];
    char thp[64];
    char date[64];
    char cxx[256];
    char perf[128];
} machine;

void machine_read(machine *m);
void print_header(FILE *f, const options *o, const machine *m);
void print_scenario(FILE *f, const options *o, int si, row *rows, int nrows, char **skipped, int nskipped);
void write_json(const char *path, const options *o, const machine *m, const plan *p, int errors);
void write_svg(const char *path, const options *o, const machine *m, const plan *p);

#endif
