/* SPDX-License-Identifier: MIT */
/* bench/bench.h -- the interface between the benchmark harness (main.c,
 * registry.c, run.c, report.c, with bench.c the services below) and the
 * scenarios (bench/sc_*.c and bench/sc_*.cpp files).
 *
 * A scenario is one workload written once; a variant is that workload with one
 * way of allocating.  Every variant of a scenario must produce the same output
 * text and checksum (the harness compares them).  The harness runs each
 * (variant, malloc implementation) pair in a fresh child process, several
 * times, and measures wall time, user/sys time, peak RSS and minor faults of
 * that process.
 */
#ifndef MEMRES_BENCH_H
#define MEMRES_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bench_args {
    int  depth;      /* binary-trees depth (default 21; --quick: 12) */
    int  threads;    /* worker threads for scenarios that support them (default 1) */
    bool persistent; /* binary-trees: the worker threads made once, kept across depths */
    bool quick;      /* small sizes for CI: scenarios scale themselves down */
} bench_args;

#define BENCH_TEXT_MAX 4096
#define BENCH_NOTE_MAX 1024

typedef struct bench_out {
    char     text[BENCH_TEXT_MAX]; /* the workload's printed output (append with bench_printf) */
    size_t   text_len;
    uint64_t checksum;             /* fingerprint of the work; equal across variants */
    size_t   upstream_bytes;       /* memres variants: peak bytes held from upstream; else 0 */
    size_t   requested_bytes;      /* bytes the workload asked for at peak, when known; else 0 */
    char     note[BENCH_NOTE_MAX]; /* measurements beside the result (append with bench_note) */
    size_t   note_len;
} bench_out;

void bench_printf(bench_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends to out->note: what a run measured that may differ between variants
 * and between runs (per-round RSS, bytes held, a rate), as opposed to the
 * output text, which must not.  Never compared; the report prints the note of
 * each row's last run under the scenario's table, and --json keeps it. */
void bench_note(bench_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Keeps a value alive so the optimiser cannot delete the work. */
#define BENCH_KEEP(x) __asm__ volatile("" : : "g"(x) : "memory")

enum bench_kind {
    BENCH_MEMRES, /* a memres allocator: marked in the table */
    BENCH_MALLOC, /* uses malloc/free: run once per malloc peer (glibc, jemalloc,
                     mimalloc, tcmalloc via LD_PRELOAD of the Debian .so) */
    BENCH_PEER,   /* another library's allocator (APR, talloc, obstack, std::pmr, ...) */
    BENCH_LIMIT,  /* a reference limit (hand-written bump pointer) */
    BENCH_EXTERNAL /* another program (the Rust peer): run() spawns it with
                      bench_run_program; run once, with glibc, no LD_PRELOAD */
};

typedef struct bench_variant {
    const char *scenario;      /* "binary-trees", "list", "git-objects", "churn", "strings", "request",
                                  "tree", "producer-consumer", ... */
    const char *name;          /* row label, e.g. "memres arena", "malloc", "apr pool" */
    enum bench_kind kind;
    bool threaded;             /* honours args->threads */
    /* 0 when usable here; else a short reason ("libapr not built in").  NULL: always usable. */
    const char *(*unavailable)(void);
    /* Runs the workload once; 0 on success. */
    int (*run)(const bench_args *args, bench_out *out);
} bench_variant;

/* ---- services of the harness (bench/bench.c) to the scenarios ---- */

/* CLOCK_MONOTONIC in nanoseconds: the one clock of bench/. */
uint64_t bench_now_ns(void);

/* Restarts the wall clock and the instruction counter of this run: call it
 * once, after untimed setup (generating input, allocating result arrays) and
 * before the timed work.  Not calling it times the whole of run(). */
void bench_timing_start(void);

/* Runs argv[0] (a path) with argv, waits for it, and puts what it printed on
 * stdout into out->text (truncated to BENCH_TEXT_MAX - 1 bytes).  Its stderr
 * is ours.  Returns 0 when it exited with status 0, else -1 (with a line on
 * stderr).  Its time, page faults, RSS and instructions count in this run. */
int bench_run_program(char *const argv[], bench_out *out);

/* The C++ compiler and library the C++ scenarios were built with (defined in
 * sc_binary_trees_pmr.cpp; the harness prints it with the results). */
const char *bench_cxx_version(void);

/* The `unavailable` of rows that need a peer library found at build time
 * (BENCH_HAVE_APR, BENCH_HAVE_TALLOC): NULL when it was built in. */
const char *bench_apr_unavailable(void);
const char *bench_talloc_unavailable(void);


/* Each scenario file defines one NULL-name-terminated table (a C++ file with
 * extern "C"), and bench/registry.c lists every table: a new scenario file
 * adds its table here, there and to the source list in CMakeLists.txt.
 * Rows of one scenario from several tables are shown together, in the order
 * of that list. */
extern const bench_variant bench_binary_trees[];
extern const bench_variant bench_list[];
extern const bench_variant bench_git_objects[];
extern const bench_variant bench_churn[];
extern const bench_variant bench_strings[];
extern const bench_variant bench_request[];
extern const bench_variant bench_tree[];
extern const bench_variant bench_lua[];
extern const bench_variant bench_sqlite[];
extern const bench_variant bench_producer_consumer[];

#ifdef __cplusplus
}
#endif
#endif
