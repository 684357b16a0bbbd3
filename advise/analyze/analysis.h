/* SPDX-License-Identifier: MIT */
/* advise/analyze/analysis.h -- memres-advise's parts, as the driver
 * (main.c) runs them: the progress line (progress.c), the profile read
 * back (profile.c), frames resolved to symbols (symbols.c), sites folded
 * (fold.c), judged (judge.c: the rules, their thresholds) and handed on
 * (analyze.c), the per-operation costs of this machine (calibrate.c), the
 * reports (report.c: text and JSON; svg.c; html.c) and their comparison
 * (diff.c), the trace's plan chunk and its decoding (trace.c, with
 * tables.c and trace.h) and its replay (replay.c).  The recorder's side is advise/record/; what both share,
 * advise/common/. */
#ifndef MEMRES_ADVISE_ANALYSIS_H
#define MEMRES_ADVISE_ANALYSIS_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>

#include "format.h"

/* ---- the progress line on stderr (progress.c) ---- */

/* Enabled by the driver; on a terminal updated in place after half a
 * second, elsewhere one line per stage once the analysis has run a second;
 * mra_progress_end clears it. */
void mra_progress_enable(bool on);
void mra_progress(const char *stage, size_t done, size_t total);
void mra_progress_end(void);

/* ---- running the program (run.c) ---- */

struct mra_launch {
    const char *preload;         /* a library put first in LD_PRELOAD (the caller's goes to
                                    MEMRES_ADVISE_PRELOAD), or NULL: LD_PRELOAD untouched */
    const char *(*env)[2];       /* variables set ({name, value}; value NULL: unset), up to
                                    an entry whose name is NULL; NULL: none */
    int in_fd, out_fd, err_fd;   /* the program's stdin, stdout, stderr; -1: the driver's */
};

struct mra_child {
    int status;                  /* wait4's */
    int exec_errno;              /* 0: the program ran */
    struct rusage ru;            /* its resource usage */
    double wall_ns;
};

/* dir/rel, malloc'ed (NULL: out of memory). */
char *mra_path_join(const char *dir, const char *rel);
/* Why LD_PRELOAD cannot reach prog's malloc ("statically linked",
 * "set-user-ID", "set-group-ID"), or NULL. */
const char *mra_preload_barrier(const char *prog);
/* The library name: $envvar, else beside the executable (the build tree),
 * in ../lib/<multiarch>, ../lib64 or ../lib relative to it, else in
 * MEMRES_ADVISE_LIBDIR; its real path, malloc'ed, or NULL with a message. */
char *mra_find_library(const char *name, const char *envvar);
/* Runs argv as l says and waits for it: 0 (c filled in), or -1 with a
 * message on stderr (no fork, no pipe). */
int mra_run(char **argv, const struct mra_launch *l, struct mra_child *c);
/* User + system time of the child. */
double mra_child_cpu_ns(const struct mra_child *c);

/* The CPUs this process may run on (sched_getaffinity), to run a
 * measurement on one of them at a time: a shared host slows one virtual CPU
 * for minutes (a loop of malloc/free pairs: 6.4 ns on one of this VM's two,
 * 12.6 on the other).  n = 0 where there is one, or the mask is unknown:
 * nothing is pinned. */
#define MRA_CPUS_MAX 256u
struct mra_cpus {
    cpu_set_t all;
    unsigned id[MRA_CPUS_MAX];
    unsigned n;
};
void mra_cpus_get(struct mra_cpus *c);
/* This thread, and the processes it starts, on the (k mod n)-th CPU; on
 * all of them again for k < 0. */
void mra_cpus_pin(const struct mra_cpus *c, int k);

/* ---- the profile as written (profile.c) ---- */

struct mra_raw_module {
    uint64_t bias, lo, hi;
    char *path;
};

struct mra_raw_site {
    struct mra_site_stats s;
    uint64_t *frames;            /* s.nframes return addresses - 1, innermost first */
};

struct mra_profile {
    struct mra_profile_header h;
    struct mra_raw_module *modules;
    size_t nmodules;
    struct mra_raw_site *sites;
    size_t nsites;
    struct mra_timeline_header tl; /* tl.npoints 0: no timeline (a version 4 profile) */
    struct mra_timeline_point *timeline; /* tl.npoints points (format.h) */
    struct mra_heap_header heap; /* what glibc gave back and took again (all 0 before version 6) */
    struct mra_heap_site heap_sites[MRA_HEAP_SITES];
    struct mra_speed speed;      /* the machine's speed in the run (all 0 before version 7) */
};

/* Reads the profile at path, of versions MRA_PROFILE_VERSION_MIN to
 * MRA_PROFILE_VERSION: 0, or -1 with a message on stderr (missing,
 * truncated, wrong magic or version). */
int mra_profile_read(const char *path, struct mra_profile *p);
void mra_profile_free(struct mra_profile *p);

/* ---- frames (symbols.c) ---- */

struct mra_frame {
    uint64_t addr;               /* as recorded */
    const char *function;        /* demangled where possible; NULL: unknown */
    uint64_t offset;             /* addr - function start, when function is known */
    const char *file;            /* source file with debug information, else NULL */
    unsigned line;
    const char *module;          /* the module's path; NULL: in no known module */
};

/* Resolves every distinct address of p's sites.  The strings live until
 * mra_symbols_free.  Needs no debug information: without it, function +
 * offset from the symbol tables, else module + offset. */
struct mra_symbols;
struct mra_symbols *mra_symbols_open(const struct mra_profile *p);
/* The frame for addr (never NULL; fields NULL where unknown). */
const struct mra_frame *mra_symbols_get(struct mra_symbols *s, uint64_t addr);
/* The frames of addr with the calls inlined there, innermost first (*n of
 * them, at least 1; the innermost is mra_symbols_get's): a wrapper inlined
 * into its caller is a frame of its own, its caller's frame at the call's
 * file:line.  A frame without function but with module has offset = addr -
 * the module's bias (its file address). */
const struct mra_frame *mra_symbols_inline(struct mra_symbols *s, uint64_t addr, unsigned *n);
void mra_symbols_free(struct mra_symbols *s);

/* ---- per-operation costs of this machine (calibrate.c) ---- */

/* Sizes are costed in log2 classes: class c covers (2^(c-1), 2^c], class 0
 * sizes 0 and 1; the last class all larger sizes. */
#define MRA_COST_CLASSES 21u

enum mra_pattern {
    MRA_PAT_LIFO,                /* freed at once or in reverse order (stack-like) */
    MRA_PAT_BATCH,               /* a batch allocated, then freed together */
    MRA_PAT_RANDOM,              /* many live, freed in random order */
    MRA_PAT_REMOTE,              /* allocated by one thread, freed by another */
    MRA_PATTERNS
};

/* The series measured over big live sets: glibc (its memory kept) and the
 * arena in batches freed in allocation order.  (Random order is not: what
 * a big live set costs glibc there depends on the order the frees take
 * through memory, which the recorder does not see -- a random order's
 * cells overstated Lua's saving 3.7x, its collector freeing in sweeps.) */
enum mra_big_kind { MRA_BIG_GLIBC_BATCH, MRA_BIG_ARENA, MRA_BIG_KINDS };
#define MRA_BIG_LEVELS 2u

struct mra_costs {
    uint32_t version;            /* of this struct in the cache file */
    char machine[128];           /* CPU model and the library's version: a cache
                                    for another machine or build is measured again */
    /* ns per allocation, its free included, by pattern and size class */
    double glibc[MRA_PATTERNS][MRA_COST_CLASSES];
    double arena[MRA_COST_CLASSES];        /* mr_arena_alloc, reset amortised in */
    double arena_rewind[MRA_COST_CLASSES]; /* alloc under a mark, rewind amortised */
    double objpool[MRA_COST_CLASSES];      /* mr_objpool_alloc + free, random order */
    double pools[MRA_COST_CLASSES];        /* mr_pools_alloc + free */
    double pools_ts[MRA_COST_CLASSES];     /* thread-safe pools, remote frees */
    double glibc_batch_kept[MRA_COST_CLASSES]; /* glibc, batches, memory kept (no trim):
                                                  a batch's first time */
    double glibc_fenced[MRA_COST_CLASSES]; /* glibc, random order, as the recorder times a
                                              call (fenced rdtsc reads around it, their
                                              empty cost taken off), summed per pair: 0 where
                                              not measured (not x86-64, an older cache) */
    /* the same pairs over live sets larger than the cells above hold (their
     * objects' cache and TLB misses), at MRA_BIG_LEVELS sizes of live set:
     * 0 where not measured (an older cache, a fixture) */
    double big[MRA_BIG_KINDS][MRA_BIG_LEVELS][MRA_COST_CLASSES];
    /* a page of memory given back and taken again: mapped, written once,
     * unmapped, ns per 4 KiB page (every class the same; 0: not measured) */
    double page_fault[MRA_COST_CLASSES];
};

/* The costs of this machine: from the cache ($XDG_CACHE_HOME or
 * ~/.cache/memres-advise/costs-v1), else measured (about a second, a note
 * on stderr unless quiet) and cached.  0, or -1 with a message. */
int mra_costs_get(struct mra_costs *c, bool quiet);
/* Measures into c without the cache. */
int mra_costs_measure(struct mra_costs *c);
/* glibc's pair at 32 bytes in random order now, in ns (the calibration's
 * cell, the least of three runs: 6 ms), to set against the cached cell:
 * how fast this machine runs at the moment against when it was
 * calibrated.  0 where it cannot be measured. */
double mra_costs_probe(void);
/* The cached cell that mra_costs_probe measures again. */
double mra_costs_probe_ref(const struct mra_costs *c);
unsigned mra_cost_class(uint64_t size);
/* What a pair of kind k at class cl costs more over a live set of
 * live_bytes than in its calibration cell (ns, >= 0; 0 without big cells):
 * interpolated in the logarithm of the live set between the cell's and
 * the big levels', the largest level's beyond it. */
double mra_cost_live_extra(const struct mra_costs *c, enum mra_big_kind k, unsigned cl, double live_bytes);

/* ---- the analysis (analyze.c; the rules and their options: judge.c) ---- */

enum mra_rec { MRA_NONE, MRA_ARENA, MRA_ARENA_REWIND, MRA_OBJPOOL, MRA_POOLS, MRA_RECS };

/* "none", "arena", "arena-rewind", "objpool", "pools" */
const char *mra_rec_name(enum mra_rec r);

/* Of a site's allocations, the share freed together or never freed (an
 * arena's pattern). */
static inline double mra_together_share(const struct mra_site_stats *s)
{
    return s->allocations ? (double)(s->freed_together + s->live_objects) / (double)s->allocations : 0;
}

/* Whether realloc resizes one of a site's objects in a hundred
 * allocations or more (moved: and moves them), the rules' test of it. */
static inline bool mra_resized(const struct mra_site_stats *s, bool moved)
{
    uint64_t n = moved ? s->realloc_moves : s->reallocs;
    return n > 0 && n * 100 >= s->allocations;
}

/* The thresholds of the rules, stated in every report. */
struct mra_thresholds {
    uint64_t min_allocations;    /* fewer: none */
    double min_share;            /* predicted saving below this share of the program's time: none */
    double together_share;       /* freed-together share for an arena */
    double stack_share;          /* stack-like share for arena-rewind */
    double dominant_size_share;  /* share of the most frequent size for an objpool */
    uint64_t max_small_size;     /* pools and objpool serve sizes up to this */
    double remote_share;         /* freed-elsewhere share for thread-safe pools */
    double at_exit_share;        /* never-freed share that counts as freed together at exit */
    double retention_warn;       /* arena_peak_bytes above this times the program's peak: warn */
    double moved_retention;      /* a site freed together whose objects realloc moves (1% of its
                                    allocations or more): pools, not an arena, when the arena
                                    would hold above this times the site's peak */
    uint64_t min_timed_samples;  /* a site with this many timed samples of glibc is costed from
                                    them, not from the calibration (0: never) */
};

struct mra_options {
    unsigned depth;              /* --depth, default 4 */
    unsigned top;                /* --top, default 10 */
    const char **wrappers;       /* --wrapper names, added to the built-in ones */
    size_t nwrappers;
    bool progress;               /* a progress line on stderr */
    bool no_speed;               /* the recording's speed not applied
                                    (MEMRES_ADVISE_RECORDING_SPEED=0) */
    struct mra_thresholds th;
};

/* The defaults of options and thresholds. */
void mra_options_default(struct mra_options *o);

#define MRA_FREED_SHOWN 2u
struct mra_site {
    unsigned id;                 /* 1.. in the report's order */
    struct mra_frame frames[MRA_MAX_DEPTH]; /* after folding, at most depth */
    unsigned nframes;
    struct mra_site_stats s;     /* merged over the raw sites folded into it */
    uint32_t *raw_ids;           /* the profile's site ids merged here */
    size_t nraw;
    enum mra_rec rec;
    enum mra_rec candidate;      /* what the rules named before the cost and share tests
                                    (rec, or what a "none" would have been) */
    bool thread_safe;            /* pools: a share is freed by another thread */
    enum mra_pattern pattern;    /* how glibc was costed */
    char reason[640];            /* the rule and the figures that made it */
    char near[240];              /* "" or the thresholds the site is near: another run (other
                                    input, another machine's costs) may decide otherwise */
    double predicted_saving_ns;  /* >= 0; 0 for none */
    double candidate_saving_ns;  /* what the candidate would save, whatever the 2% rule
                                    (<= 0: memres is not faster; 0 also where not costed) */
    int64_t memory_delta_bytes;  /* held by the plan minus held by malloc (estimate) */
    bool retention_warning;      /* an arena would hold much more than the program's peak */
    char sketch[2][160];         /* two lines of memres calls replacing malloc/free */
    struct mra_freed {           /* where its objects were freed: the stacks of the sampled
                                    frees, most frequent first */
        struct mra_frame frames[MRA_MAX_DEPTH];
        unsigned nframes;
        double share;            /* of the site's sampled frees */
    } freed[MRA_FREED_SHOWN];
    unsigned nfreed;
    char change[600];            /* the change to make, in the program's terms ("" none) */
    uint64_t heap_given_back;    /* bytes glibc gave back at its frees, and took again at */
    uint64_t heap_retaken;       /* its allocations (the heap section's, where it names the site) */
};

/* One mr_pools behind a function that many sites reach malloc from (an
 * allocation wrapper), where the sites together, not alone, pass the 2%
 * rule. */
#define MRA_BEHIND_MAX 8u
struct mra_behind {
    struct mra_frame frame;      /* the function that calls malloc */
    size_t nsites;
    uint64_t allocations;
    bool thread_safe;
    double predicted_saving_ns;
    char reason[400];
    uint32_t *raw_ids;           /* the profile's site ids of its sites (their first frames
                                    are the function's calls of malloc: the plan's stacks) */
    size_t nraw;
};

struct mra_analysis {
    struct mra_profile_header h;
    const char *command;         /* the program as the command line named it (NULL: a saved
                                    profile's analysis); h.program is its file, links resolved */
    const char *exec_into;       /* what the process exec'd after the profile was written
                                    (the recorder's PROFILE.exec; NULL: none, or not known) */
    double program_ns;           /* the program's own time: the recorded run's CPU time less the
                                    recorder's in its hooks, at least program_floor_ns */
    double recorded_ns;          /* end_ns - start_ns: the run under the recorder */
    double program_floor_ns;     /* glibc's calls at the calibration's warmest: the least
                                    program_ns is (the hooks' estimate can leave less) */
    struct mra_site *sites;      /* by predicted saving, then bytes, descending */
    size_t nsites;
    const char **folded;         /* functions folded as wrappers (seen in stacks) */
    size_t nfolded;
    struct mra_costs costs;
    struct mra_options opts;
    double total_saving_ns;      /* over recommended sites */
    double glibc_scale;          /* the sites' timed glibc time, taken to the calibration's
                                    speed (1 / speed) and scaled so that its sum is at most
                                    the program's own time */
    double glibc_clamp;          /* the second factor alone (<= 1) */
    double speed;                /* the recording's time for the calibration's probe over the
                                    calibration's (1: not known, or not applied); the run's
                                    time and its timed figures are divided by it */
    double speed_probe_ns;       /* the recording's probe (mean of start and exit), 0: none */
    struct mra_speed speed_probes; /* the profile's speed section, copied */
    struct mra_behind behind[MRA_BEHIND_MAX]; /* by saving, descending */
    size_t nbehind;
    size_t nsites_total;         /* sites after merging; sites[] holds the first
                                    max(recommended, top, 4096) of them */
    struct mra_timeline_header tl; /* the profile's timeline, copied (tl.npoints 0: none) */
    struct mra_timeline_point *timeline;
    struct mra_heap_header heap; /* the profile's heap section, copied */
    double heap_retaken_ns;      /* what faulting the re-taken pages in again cost, at this
                                    machine's page_fault cost (0: not calibrated) */
    double slow_scale;           /* the share of the sites' slow calls counted as memory taken
                                    again that the heap section allows (0..1) */
};

/* Folds, merges, judges and costs p's sites.  0, or -1 with a message. */
int mra_analyze(const struct mra_profile *p, struct mra_symbols *sym, const struct mra_costs *c,
                const struct mra_options *o, struct mra_analysis *a);
void mra_analysis_free(struct mra_analysis *a);
/* The q-quantile (0..1) of a lifetime histogram (format.h's log2 buckets,
 * linear inside a bucket). */
double mra_hist_quantile(const uint64_t hist[MRA_HIST], double q);

/* ---- reports (report.c, svg.c, html.c) ---- */

void mra_report_text(FILE *f, const struct mra_analysis *a);
/* GLIBC_TUNABLES that keep glibc's freed memory (no trim, no mmap below
 * 32 MiB): the report's advice and measure's "glibc, memory kept" run */
extern const char mra_keep_tunables[];
void mra_report_json(FILE *f, const struct mra_analysis *a);
void mra_report_svg(FILE *f, const struct mra_analysis *a);

/* What the HTML page shows beside the analysis (each NULL: not made). */
struct mra_planned;
struct mra_html_extra {
    const struct mra_planned *plan; /* the planned sites */
    const char *plan_path;       /* the plan file, its text shown (NULL: none) */
    bool plan_kept;              /* plan_path stays (--plan): its path shown too */
    const char *measured;        /* measure's table, as it wrote it */
};
/* The page's data of a (html.c's head comment: its members but "plan"
 * and "measured", without the braces), malloc'ed; NULL: out of memory. */
char *mra_html_data(const struct mra_analysis *a);
/* The self-contained HTML page (html.c's head comment) of data, with x's
 * parts: 0, or -1 (a write failed). */
/* The page's fixed parts (html_script.c): its stylesheet, its body's
 * skeleton and its script, each as lines to f. */
void mra_html_put_css(FILE *f);
void mra_html_put_body(FILE *f);
void mra_html_put_script(FILE *f);
int mra_html_write(FILE *f, const char *data, const struct mra_html_extra *x);
/* The same of the analysis a. */
int mra_report_html(FILE *f, const struct mra_analysis *a, const struct mra_html_extra *x);

/* ---- the plan that `memres-advise apply` carries out (plan.c) ---- */

enum mra_plan_mode {
    MRA_PLAN_RECOMMENDED,        /* the sites the report recommends an allocator for */
    MRA_PLAN_CANDIDATES,         /* every site the rules name an allocator for, whatever
                                    its predicted saving (for measuring it) */
    MRA_PLAN_TOP_CANDIDATES      /* of those, the MRA_PLANNED_MAX that would save most, each
                                    at least a twentieth of the 2% rule (measure, where
                                    nothing is recommended): every planned site costs its
                                    calls' identification and a route's blocks */
};
/* What the plan of mode gives site s of a: its allocator, or MRA_NONE.
 * cutoff: mra_plan_cutoff(a, mode). */
enum mra_rec mra_plan_kind(const struct mra_site *s, enum mra_plan_mode mode, double cutoff);
/* The least predicted saving of a site in the plan of mode (ns; 0 but for
 * MRA_PLAN_TOP_CANDIDATES). */
double mra_plan_cutoff(const struct mra_analysis *a, enum mra_plan_mode mode);
/* Writes the plan (plan.c's head comment has the format) of a, analysed
 * from p, to f: the sites of mode, or only the site with report id
 * only_site when it is not 0, routed to its allocator or, with as not
 * MRA_NONE, to as.  0, or -1. */
int mra_plan_write(FILE *f, const struct mra_profile *p, const struct mra_analysis *a, enum mra_plan_mode mode,
                   unsigned only_site, enum mra_rec as);
/* The allocator measure --alternatives tries at s beside k (its plan's):
 * pools for an arena, arena-rewind or object pool site whose sizes pools
 * serve, an arena for a pools site freed together whose objects realloc
 * moves (th's together_share), else an object pool for a pools site with a
 * size of half its allocations or more; MRA_NONE where there is none. */
enum mra_rec mra_alternative(const struct mra_site *s, enum mra_rec k, const struct mra_thresholds *th);
/* The plan of one mr_pools behind function a->behind[bi]: every stack
 * whose first frame is one of its calls of malloc, walk 1.  0, or -1. */
int mra_plan_write_behind(FILE *f, const struct mra_profile *p, const struct mra_analysis *a, size_t bi);
/* Where no site of a is recommended: how many the rules name a candidate
 * for, and (ns) what they would save; 0 where a site is recommended. */
size_t mra_candidates_only(const struct mra_analysis *a, double *ns);

/* ---- apply and measure (measure.c) ---- */

#define APPLY_NAME "libmemres-advise-apply.so"
#define MRA_PLANNED_MAX 32u
#define MRA_BEHIND_MEASURED 2u   /* the pools behind one function that measure runs, by saving */
#define MRA_MEASURE_ROUNDS_MAX 101u

/* What a plan holds, as the analysis predicted it. */
struct mra_planned_site {
    unsigned site;               /* the report's id */
    enum mra_rec kind;
    double predicted_ns, glibc_ns;
    char plan[4096];             /* its own plan (this site alone), when written */
    enum mra_rec alt;            /* the alternative (mra_alternative), or MRA_NONE */
    char alt_plan[4096];         /* this site alone on alt, when written */
};
struct mra_planned {
    const char *dir;             /* where each site's own plan goes (NULL: none) */
    enum mra_plan_mode mode;
    bool candidates_instead;     /* measure: nothing recommended, so the plan is the rules'
                                    candidates (mode became MRA_PLAN_TOP_CANDIDATES) */
    double program_ns;           /* the program's own time in the recorded run */
    unsigned threads;            /* the recorded run's threads */
    double min_share;            /* the 2% rule, as a fraction */
    double predicted_ns;         /* over the planned sites */
    double heap_retaken_ns;      /* the analysis's: memory glibc gave back and took again */
    double heap_retaken_pages;   /* ... in 4 KiB pages */
    double probe_ref_ns;         /* the calibration's cell that mra_costs_probe measures again */
    size_t n;                    /* planned sites in s[] (at most MRA_PLANNED_MAX) */
    size_t total;                /* planned sites */
    struct mra_planned_site s[MRA_PLANNED_MAX];
    struct mra_planned_behind {  /* pools behind one function, each on its own plan */
        char function[48];       /* its name, or module+offset */
        double predicted_ns;
        char plan[4096];
    } behind[MRA_BEHIND_MEASURED];
    size_t nbehind;
};

struct mra_measure_options {
    unsigned rounds;             /* 1..MRA_MEASURE_ROUNDS_MAX */
    unsigned rounds_max;         /* more rounds while the plan's verdict is open, up to this
                                    (0: 3x rounds, at most MRA_MEASURE_ROUNDS_MAX) */
    bool per_site;               /* also each planned site alone */
    bool alternatives;           /* also each planned site alone on its alternative */
    bool other_mallocs;          /* also mimalloc and jemalloc, where installed */
};

/* The rounds measure's range of n paired ratios leaves out at each end
 * (its verdicts ask the plan to save in the range): as sure to hold the
 * median as five rounds' lowest-to-highest. */
unsigned mra_range_trim(unsigned n);
/* Runs argv in rounds on glibc, under plan and on the other mallocs, and
 * writes the table to f.  0, or -1 with a message. */
int mra_measure(char **argv, const char *plan, const struct mra_planned *pl, const struct mra_measure_options *o,
                FILE *f);
/* `memres-advise apply PLAN [--stats FILE] -- PROGRAM [ARGS...]` (argv[0]
 * is "apply"): returns the exit status. */
int mra_apply_main(int argc, char **argv);
/* The driver's exit status for a program that ended with wait status st:
 * its exit status, or its signal raised again with the default action (no
 * core file of the driver), else 128 + the signal. */
int mra_exit_as(int st);

/* ---- the trace: its plan chunk (trace.c) and its replay (replay.c) ---- */

/* Appends the plan chunk (format.h) for a's recommended sites to the trace
 * at path.  0, or -1 with a message. */
int mra_trace_append_plan(const char *path, const struct mra_analysis *a);

/* `memres-advise replay TRACE [--json FILE]` (argv[0] is "replay"):
 * returns the exit status. */
int mra_replay_main(int argc, char **argv);

/* ---- comparing two reports (diff.c, reading them with json_read.h) ---- */

/* `memres-advise diff A.json B.json` (argv[0] is "diff"): 0 (the
 * comparison on stdout), or 2 with a message (bad arguments, a file that
 * cannot be read, is not JSON or not a report of version 1). */
int mra_diff_main(int argc, char **argv);

#endif
