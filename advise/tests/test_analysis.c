/* SPDX-License-Identifier: MIT */
/* advise/tests/test_analysis.c -- memres-advise's analysis on synthetic
 * profiles: no recorder, no calibration.
 *
 * Profiles are built in memory (struct mra_profile) with hand-set site
 * statistics; their frames are real return addresses of this test's own
 * functions (captured with backtrace(), so they resolve with this binary's
 * debug information to known functions and lines), and the modules are
 * this process's (dl_iterate_phdr).  mra_analyze runs with fixed costs
 * (struct mra_costs filled by hand), so every figure is known:
 *   - a wrapper frame (xmalloc, and a --wrapper name) is folded into its
 *     caller, and the analysis lists what it folded;
 *   - recursion collapses: stacks that differ only in how deep a recursive
 *     function called itself are one site, their counts added;
 *   - each rule gives its recommendation (arena for bursts and for objects
 *     never freed, arena-rewind for stack-like frees, objpool for one
 *     dominant size, pools for mixed small sizes, thread-safe when freed
 *     elsewhere, none for big sizes and few allocations), and the reason
 *     states the site's figures and the threshold;
 *   - the predicted saving is count x (glibc's cost for the pattern -
 *     memres' cost) at the size's class; never-freed objects are credited
 *     half of glibc's pair less;
 *   - the 2% rule: a saving below min_share of the run is no recommendation;
 *   - the retention warning: an arena that would hold far more than the
 *     program's peak;
 *   - sites come out by predicted saving; the JSON report of an analysis
 *     is valid JSON with the fields of DESIGN.md and the same figures; the
 *     text report names the frames and the recommendation;
 *   - profile files (written here): a version 4 profile reads as one
 *     without a timeline, a version 5 one with its timeline, which the
 *     JSON, text and page data carry; other versions and a timeline
 *     section cut short or out of bounds are refused.
 */
#include <execinfo.h>
#include <limits.h>
#include <link.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "analysis.h"
#include "kat_json.h"

/* ---- stacks captured from this test's own functions ---- */

#define CAP_MAX 32u

typedef struct cap {
    uint64_t frames[CAP_MAX];
    unsigned n;
    unsigned line; /* the line of the call that plays malloc's caller */
} cap;

/* Plays malloc: records the stack of its caller (frames[0] is in the
 * function that called capture, as the recorder's frames[0] is in the
 * caller of malloc). */
static __attribute__((noinline)) void capture(cap *c)
{
    void *b[CAP_MAX + 4];
    int n = backtrace(b, (int)CAP_MAX + 4);
    /* from the return into capture's caller on (a sanitizer's backtrace
     * interceptor adds frames of its own in front) */
    void *ra = __builtin_return_address(0);
    int first = 1;
    for (int i = 0; i < n; i++)
        if (b[i] == ra) {
            first = i;
            break;
        }
    c->n = 0;
    for (int i = first; i < n && c->n < CAP_MAX; i++)
        c->frames[c->n++] = (uint64_t)(uintptr_t)b[i] - 1;
    __asm__ volatile("" ::: "memory");
}

/* A wrapper with a built-in name. */
static __attribute__((noinline)) void xmalloc(cap *c)
{
    capture(c);
    __asm__ volatile("" ::: "memory");
}

/* A wrapper only --wrapper names. */
static __attribute__((noinline)) void my_alloc(cap *c)
{
    capture(c);
    __asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) void caller_a(cap *c)
{
    c->line = __LINE__; xmalloc(c);
    __asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) void caller_b(cap *c)
{
    c->line = __LINE__; capture(c);
    __asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) void caller_c(cap *c)
{
    c->line = __LINE__; my_alloc(c);
    __asm__ volatile("" ::: "memory");
}

/* Four call sites of one wrapper. */
static __attribute__((noinline)) void via_xmalloc(cap *c, int which)
{
    switch (which) {
    case 0: c->line = __LINE__; xmalloc(c); break;
    case 1: c->line = __LINE__; xmalloc(c); break;
    case 2: c->line = __LINE__; xmalloc(c); break;
    default: c->line = __LINE__; xmalloc(c); break;
    }
    __asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) void rec_build(cap *c, int d)
{
    if (d == 0) {
        c->line = __LINE__; capture(c);
    } else {
        rec_build(c, d - 1);
    }
    __asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) void rec_root(cap *c, int d)
{
    rec_build(c, d);
    __asm__ volatile("" ::: "memory");
}

/* Stacks that differ only in the depth of the recursion: one call site. */
static __attribute__((noinline)) void rec_caps(cap *c, const int *depth, int n)
{
    for (int i = 0; i < n; i++)
        rec_root(&c[i], depth[i]);
    __asm__ volatile("" ::: "memory");
}

/* ---- this process's modules ---- */

static struct mra_raw_module mods[256];
static size_t nmods;
static char exe[PATH_MAX];

static int add_module(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    if (nmods >= sizeof mods / sizeof *mods)
        return 1;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uint64_t a = info->dlpi_addr + ph->p_vaddr;
        if (a < lo)
            lo = a;
        if (a + ph->p_memsz > hi)
            hi = a + ph->p_memsz;
    }
    if (hi <= lo)
        return 0;
    mods[nmods].bias = info->dlpi_addr;
    mods[nmods].lo = lo;
    mods[nmods].hi = hi;
    mods[nmods].path = (char *)(info->dlpi_name && *info->dlpi_name ? info->dlpi_name : exe);
    nmods++;
    return 0;
}

/* ---- profiles ---- */

#define MAX_SITES 16

typedef struct synth {
    struct mra_profile p;
    struct mra_raw_site sites[MAX_SITES];
    cap caps[MAX_SITES];
} synth;

/* costs: every class the same, so that each figure is simple */
static struct mra_costs costs;

static void costs_init(void)
{
    memset(&costs, 0, sizeof costs);
    costs.version = 1;
    snprintf(costs.machine, sizeof costs.machine, "synthetic");
    for (unsigned c = 0; c < MRA_COST_CLASSES; c++) {
        costs.glibc[MRA_PAT_LIFO][c] = 18;
        costs.glibc[MRA_PAT_BATCH][c] = 22;
        costs.glibc[MRA_PAT_RANDOM][c] = 30;
        costs.glibc[MRA_PAT_REMOTE][c] = 60;
        costs.arena[c] = 2;
        costs.arena_rewind[c] = 1.5;
        costs.objpool[c] = 4;
        costs.pools[c] = 6;
        costs.pools_ts[c] = 12;
    }
}

/* A profile of a run of run_ns, the program's peak peak_bytes. */
static void synth_init(synth *s, uint64_t run_ns, uint64_t peak_bytes)
{
    memset(s, 0, sizeof *s);
    memcpy(s->p.h.magic, MRA_PROFILE_MAGIC, 8);
    s->p.h.version = MRA_PROFILE_VERSION;
    s->p.h.depth = CAP_MAX;
    s->p.h.pid = (uint64_t)getpid();
    s->p.h.start_ns = 1000000000ull;
    s->p.h.end_ns = s->p.h.start_ns + run_ns;
    s->p.h.peak_live_bytes = peak_bytes;
    s->p.h.threads = 1;
    size_t el = strlen(exe) < sizeof s->p.h.program - 1 ? strlen(exe) : sizeof s->p.h.program - 1;
    memcpy(s->p.h.program, exe, el);
    s->p.h.program[el] = '\0';
    s->p.modules = mods;
    s->p.nmodules = nmods;
    s->p.sites = s->sites;
}

/* Site stats: n allocations of the given sizes (equal shares), all freed
 * unless said otherwise by the caller afterwards. */
static struct mra_site_stats stats_sizes(uint64_t n, const uint64_t *size, unsigned nsize)
{
    struct mra_site_stats st;
    memset(&st, 0, sizeof st);
    st.allocations = n;
    st.frees = n;
    st.min_size = UINT64_MAX;
    for (unsigned i = 0; i < nsize; i++) {
        uint64_t cnt = n / nsize + (i < n % nsize);
        if (i < MRA_SIZES) {
            st.sizes[i].size = size[i];
            st.sizes[i].count = cnt;
            st.nsizes++;
        } else {
            st.other_sizes_count += cnt;
            st.sizes_overflow = 1;
        }
        st.bytes += cnt * size[i];
        if (size[i] < st.min_size)
            st.min_size = size[i];
        if (size[i] > st.max_size)
            st.max_size = size[i];
    }
    st.freed_bytes = st.bytes;
    st.peak_live_objects = n / 100 + 1;
    st.peak_live_bytes = st.peak_live_objects * (st.bytes / (n ? n : 1));
    st.arena_peak_bytes = st.peak_live_bytes;
    st.alloc_threads = 1;
    st.lifetime_ticks_sum = n * 10;
    st.lifetime_ns_sum = n * 100;
    st.hist_ticks[mra_bucket(10)] = n;
    st.hist_ns[mra_bucket(100)] = n;
    st.last_tick = n;
    return st;
}

static struct mra_site_stats stats_one(uint64_t n, uint64_t size)
{
    return stats_sizes(n, &size, 1);
}

/* Adds a site with stats st and the stack of c. */
static struct mra_raw_site *synth_add(synth *s, const cap *c, struct mra_site_stats st)
{
    assert_true(s->p.nsites < MAX_SITES);
    size_t i = s->p.nsites++;
    s->caps[i] = *c;
    s->sites[i].s = st;
    s->sites[i].s.id = (uint32_t)i;
    s->sites[i].s.nframes = c->n;
    s->sites[i].frames = s->caps[i].frames;
    return &s->sites[i];
}

typedef struct result {
    struct mra_analysis a;
    struct mra_symbols *sym;
} result;

static void analyze_with(synth *s, const struct mra_options *o, result *r)
{
    r->sym = mra_symbols_open(&s->p);
    assert_non_null(r->sym);
    assert_int_equal(mra_analyze(&s->p, r->sym, &costs, o, &r->a), 0);
}

static void analyze(synth *s, result *r)
{
    struct mra_options o;
    mra_options_default(&o);
    analyze_with(s, &o, r);
}

static void result_free(result *r)
{
    mra_analysis_free(&r->a);
    mra_symbols_free(r->sym);
}

static const char *base_name(const char *p)
{
    const char *b = p ? strrchr(p, '/') : NULL;
    return b ? b + 1 : p;
}

/* The site whose first frame is at line of this file. */
static const struct mra_site *site_at_line(const struct mra_analysis *a, unsigned line)
{
    for (size_t i = 0; i < a->nsites; i++) {
        const struct mra_frame *f = &a->sites[i].frames[0];
        if (a->sites[i].nframes > 0 && f->file && strcmp(base_name(f->file), "test_analysis.c") == 0 &&
            f->line == line)
            return &a->sites[i];
    }
    return NULL;
}

static void dump(const struct mra_analysis *a)
{
    for (size_t i = 0; i < a->nsites; i++) {
        const struct mra_site *s = &a->sites[i];
        fprintf(stderr, "  site %u: %s %s:%u (%u frames) %s: %s\n", s->id,
                s->frames[0].function ? s->frames[0].function : "?",
                s->frames[0].file ? base_name(s->frames[0].file) : "?", s->frames[0].line, s->nframes,
                mra_rec_name(s->rec), s->reason);
    }
}

static void assert_contains(const char *hay, const char *needle)
{
    if (hay == NULL || strstr(hay, needle) == NULL)
        fprintf(stderr, "  \"%s\" not in \"%s\"\n", needle, hay ? hay : "(null)");
    assert_non_null(hay);
    assert_non_null(strstr(hay, needle));
}

static void assert_near(double got, double want, double rel)
{
    if (fabs(got - want) > rel * fabs(want) + 1e-9)
        fprintf(stderr, "  got %.6g, want %.6g\n", got, want);
    assert_true(fabs(got - want) <= rel * fabs(want) + 1e-9);
}

#define RUN_NS 100000000ull /* 100 ms */

/* The default thresholds (the tests' figures sit well inside them). */
static const struct mra_thresholds *def_th(void)
{
    static struct mra_options o;
    static bool done;
    if (!done) {
        mra_options_default(&o);
        done = true;
    }
    return &o.th;
}

/* "NAME >= P%" as a reason states a threshold. */
static const char *threshold_text(const char *name, double share)
{
    static char b[4][64];
    static unsigned k;
    char *t = b[k++ % 4];
    snprintf(t, sizeof b[0], "%s >= %.0f%%", name, 100 * share);
    return t;
}

/* ---- tests ---- */

static void test_rec_names(void **state)
{
    (void)state;
    /* the synthetic figures below assume thresholds in these ranges */
    assert_true(def_th()->together_share > 0.4 && def_th()->together_share <= 0.9);
    assert_true(def_th()->stack_share > 0.2 && def_th()->stack_share <= 0.9);
    assert_true(def_th()->dominant_size_share > 0.3 && def_th()->dominant_size_share <= 1.0);
    assert_true(def_th()->remote_share < 0.5);
    assert_true(def_th()->max_small_size >= 512 && def_th()->max_small_size < 65536);
    assert_true(def_th()->min_allocations > 500 && def_th()->min_allocations <= 100000);
    assert_true(def_th()->retention_warn > 1 && def_th()->retention_warn < 100);
    assert_string_equal(mra_rec_name(MRA_NONE), "none");
    assert_string_equal(mra_rec_name(MRA_ARENA), "arena");
    assert_string_equal(mra_rec_name(MRA_ARENA_REWIND), "arena-rewind");
    assert_string_equal(mra_rec_name(MRA_OBJPOOL), "objpool");
    assert_string_equal(mra_rec_name(MRA_POOLS), "pools");
    struct mra_options o;
    mra_options_default(&o);
    assert_int_equal(o.depth, 4);
    assert_int_equal(o.top, 10);
    assert_near(o.th.min_share, 0.02, 1e-12); /* the 2% */
}

/* The symbols resolve this test's frames to its functions and lines. */
static void test_symbols(void **state)
{
    (void)state;
    synth s;
    synth_init(&s, RUN_NS, 1 << 20);
    cap c;
    caller_b(&c);
    synth_add(&s, &c, stats_one(10, 32));
    struct mra_symbols *sym = mra_symbols_open(&s.p);
    assert_non_null(sym);
    const struct mra_frame *f = mra_symbols_get(sym, c.frames[0]);
    assert_non_null(f);
    assert_non_null(f->function);
    assert_string_equal(f->function, "caller_b");
    assert_non_null(f->file);
    assert_string_equal(base_name(f->file), "test_analysis.c");
    assert_int_equal(f->line, c.line);
    assert_non_null(f->module);
    mra_symbols_free(sym);
}

static void test_fold_wrapper(void **state)
{
    (void)state;
    synth s;
    synth_init(&s, RUN_NS, 1 << 20);
    cap a, b;
    caller_a(&a); /* through xmalloc */
    caller_b(&b); /* direct */
    struct mra_site_stats st = stats_one(1000000, 32);
    st.freed_together = 990000;
    synth_add(&s, &a, st);
    synth_add(&s, &b, st);
    result r;
    analyze(&s, &r);
    dump(&r.a);
    assert_int_equal(r.a.nsites, 2);
    const struct mra_site *sa = site_at_line(&r.a, a.line);
    const struct mra_site *sb = site_at_line(&r.a, b.line);
    assert_non_null(sa);
    assert_non_null(sb);
    assert_string_equal(sa->frames[0].function, "caller_a"); /* xmalloc folded */
    assert_string_equal(sb->frames[0].function, "caller_b");
    bool listed = false;
    for (size_t i = 0; i < r.a.nfolded; i++)
        listed = listed || (r.a.folded[i] && strcmp(r.a.folded[i], "xmalloc") == 0);
    assert_true(listed);
    assert_true(sa->nframes >= 2 && sa->nframes <= 4); /* --depth 4 */
    assert_string_equal(sa->frames[1].function, "test_fold_wrapper");
    result_free(&r);
}

static void test_fold_option(void **state)
{
    (void)state;
    synth s;
    synth_init(&s, RUN_NS, 1 << 20);
    cap c;
    caller_c(&c); /* through my_alloc */
    struct mra_site_stats st = stats_one(1000000, 32);
    st.freed_together = 990000;
    synth_add(&s, &c, st);
    result r;
    analyze(&s, &r);
    assert_int_equal(r.a.nsites, 1);
    assert_string_equal(r.a.sites[0].frames[0].function, "my_alloc"); /* not a built-in name */
    result_free(&r);

    struct mra_options o;
    mra_options_default(&o);
    const char *w[] = {"my_alloc"};
    o.wrappers = w;
    o.nwrappers = 1;
    analyze_with(&s, &o, &r);
    assert_int_equal(r.a.nsites, 1);
    assert_string_equal(r.a.sites[0].frames[0].function, "caller_c");
    assert_int_equal(r.a.sites[0].frames[0].line, c.line);
    result_free(&r);
}

static void test_recursion(void **state)
{
    (void)state;
    synth s;
    synth_init(&s, RUN_NS, 1 << 20);
    cap c[4];
    const int depth[4] = {1, 3, 6, 9};
    rec_caps(c, depth, 4);
    for (int i = 0; i < 4; i++) {
        assert_true(c[i].n > (unsigned)depth[i] + 2);
        struct mra_site_stats st = stats_one(250000 + (uint64_t)i, 32);
        st.freed_together = st.allocations - 100;
        synth_add(&s, &c[i], st);
    }
    result r;
    analyze(&s, &r);
    dump(&r.a);
    assert_int_equal(r.a.nsites, 1);
    const struct mra_site *m = &r.a.sites[0];
    assert_int_equal(m->nraw, 4);
    assert_int_equal(m->s.allocations, 1000006);
    assert_int_equal(m->s.frees, 1000006);
    assert_string_equal(m->frames[0].function, "rec_build");
    assert_int_equal(m->frames[0].line, c[0].line);
    assert_true(m->nframes >= 2);
    assert_string_equal(m->frames[1].function, "rec_root");
    if (m->nframes >= 3)
        assert_string_equal(m->frames[2].function, "rec_caps");
    assert_int_equal(m->rec, MRA_ARENA);
    result_free(&r);
}

/* freed in bursts: an arena; the saving is count x (batch - arena) */
/* One site of a million 32-byte objects, 99% freed together, its
 * arena's cohort arena_peak bytes (0: the stats' own), analysed into r. */
static void arena_site(uint64_t arena_peak, result *r)
{
    synth s;
    synth_init(&s, RUN_NS, 64 << 20);
    cap c;
    caller_b(&c);
    struct mra_site_stats st = stats_one(1000000, 32);
    st.freed_together = 990000;
    st.stack_like = 10000;
    if (arena_peak)
        st.arena_peak_bytes = arena_peak;
    synth_add(&s, &c, st);
    analyze(&s, r);
}

static void test_rule_arena(void **state)
{
    (void)state;
    result r;
    arena_site(0, &r);
    dump(&r.a);
    const struct mra_site *m = &r.a.sites[0];
    assert_int_equal(m->rec, MRA_ARENA);
    assert_int_equal(m->pattern, MRA_PAT_BATCH);
    assert_false(m->thread_safe);
    assert_near(m->predicted_saving_ns, 1e6 * (22 - 2), 1e-9);
    assert_near(r.a.total_saving_ns, m->predicted_saving_ns, 1e-9);
    assert_contains(m->reason, "99.0%");             /* the site's share */
    assert_contains(m->reason, threshold_text("together_share", def_th()->together_share)); /* the rule's */
    assert_contains(m->reason, "1000000 allocations"); /* the count */
    assert_contains(m->reason, "20.00 ms");          /* the saving */
    assert_false(m->retention_warning);
    result_free(&r);
}

/* A cohort larger than the calibration's cells costs glibc, and the arena,
 * what the big cells measured on top: 0 below the cells' live set, the
 * largest level's beyond it, rising in between. */
static void test_rule_arena_big_cohort(void **state)
{
    (void)state;
    for (unsigned c = 0; c < MRA_COST_CLASSES; c++) {
        costs.glibc_batch_kept[c] = 22;
        costs.big[MRA_BIG_GLIBC_BATCH][0][c] = 30;
        costs.big[MRA_BIG_GLIBC_BATCH][1][c] = 40;
        costs.big[MRA_BIG_ARENA][0][c] = 3;
        costs.big[MRA_BIG_ARENA][1][c] = 4;
    }
    unsigned cl = mra_cost_class(32);
    assert_true(mra_cost_live_extra(&costs, MRA_BIG_GLIBC_BATCH, cl, 4096) == 0);
    assert_near(mra_cost_live_extra(&costs, MRA_BIG_GLIBC_BATCH, cl, 1e12), 18, 1e-9);
    assert_near(mra_cost_live_extra(&costs, MRA_BIG_ARENA, cl, 1e12), 2, 1e-9);
    double prev = 0, mid = 0;
    for (double b = 4096; b < 1e10; b *= 2) {
        double x = mra_cost_live_extra(&costs, MRA_BIG_GLIBC_BATCH, cl, b);
        assert_true(x >= prev && x <= 18);
        if (x > 0 && x < 18)
            mid = x;
        prev = x;
    }
    assert_true(mid > 0); /* interpolated somewhere between the levels */
    result r;
    arena_site(UINT64_C(1) << 40, &r); /* one cohort past the largest level */
    const struct mra_site *m = &r.a.sites[0];
    assert_int_equal(m->rec, MRA_ARENA);
    assert_near(m->predicted_saving_ns, 1e6 * ((22 + 18) - (2 + 2)), 1e-9);
    result_free(&r);
    /* without the big cells (an older cache): the cells' costs alone */
    memset(costs.big, 0, sizeof costs.big);
    assert_true(mra_cost_live_extra(&costs, MRA_BIG_GLIBC_BATCH, cl, 1e12) == 0);
    costs_init();
}

static void test_rule_arena_at_exit(void **state)
{
    (void)state;
    synth s;
    synth_init(&s, RUN_NS, 64 << 20);
    cap c;
    caller_b(&c);
    struct mra_site_stats st = stats_one(1000000, 48);
    st.frees = 0;
    st.freed_bytes = 0;
    st.live_objects = 1000000;
    st.live_bytes = st.bytes;
    st.peak_live_objects = 1000000;
    st.peak_live_bytes = st.bytes;
    st.arena_peak_bytes = st.bytes;
    synth_add(&s, &c, st);
    result r;
    analyze(&s, &r);
    dump(&r.a);
    const struct mra_site *m = &r.a.sites[0];
    assert_int_equal(m->rec, MRA_ARENA);
    assert_contains(m->reason, "100.0% never freed");
    assert_contains(m->reason, threshold_text("at_exit_share", def_th()->at_exit_share));
    /* glibc never paid their free: half the pair is not saved */
    assert_near(m->predicted_saving_ns, 1e6 * (22 - 2) - 1e6 * 0.5 * 22, 1e-9);
    result_free(&r);
}

static void test_rule_arena_rewind(void **state)
{
    (void)state;
    synth s;
    synth_init(&s, RUN_NS, 1 << 20);
    cap c;
    caller_b(&c);
    const uint64_t sizes[3] = {64, 80, 96};
    struct mra_site_stats st = stats_sizes(1200000, sizes, 3);
    st.stack_like = 1140000; /* 95% */
    st.freed_together = 700000;
    synth_add(&s, &c, st);
    result r;
    analyze(&s, &r);
    dump(&r.a);
    const struct mra_site *m = &r.a.sites[0];
    assert_int_equal(m->rec, MRA_ARENA_REWIND);
    assert_int_equal(m->pattern, MRA_PAT_LIFO);
    assert_contains(m->reason, "95.0%");
    assert_contains(m->reason, threshold_text("stack_share", def_th()->stack_share));
    assert_near(m->predicted_saving_ns, 1.2e6 * (18 - 1.5), 1e-9);
    result_free(&r);
}

static void test_rule_objpool(void **state)
{
    (void)state;
    synth s;
    synth_init(&s, RUN_NS, 8 << 20);
    cap c;
    caller_b(&c);
    struct mra_site_stats st = stats_one(1000000, 48);
    st.freed_together = 300000;
    st.stack_like = 50000;
    synth_add(&s, &c, st);
    result r;
    analyze(&s, &r);
    dump(&r.a);
    const struct mra_site *m = &r.a.sites[0];
    assert_int_equal(m->rec, MRA_OBJPOOL);
    assert_int_equal(m->pattern, MRA_PAT_RANDOM);
    assert_false(m->thread_safe);
    assert_contains(m->reason, "100.0% of allocations are 48 bytes");
    assert_contains(m->reason, "dominant_size_share");
    assert_near(m->predicted_saving_ns, 1e6 * (30 - 4), 1e-9);
    assert_non_null(strstr(m->sketch[0], "mr_objpool_create(48"));
    result_free(&r);
}

/* One allocation size, but realloc resizes the objects: pools, not an
 * object pool (which could not hold the grown ones); a rare realloc (under
 * one allocation in a hundred) leaves the object pool. */
static void test_rule_objpool_resized(void **state)
{
    (void)state;
    for (int rare = 0; rare < 2; rare++) {
        static synth s;
        cap c;
        caller_b(&c);
        synth_init(&s, RUN_NS, 8 << 20);
        struct mra_site_stats st = stats_one(1000000, 48);
        st.freed_together = 300000;
        st.reallocs = rare ? 9999 : 200000;
        st.realloc_moves = st.reallocs / 2;
        synth_add(&s, &c, st);
        result r;
        analyze(&s, &r);
        const struct mra_site *m = &r.a.sites[0];
        if (rare) {
            assert_int_equal(m->rec, MRA_OBJPOOL);
        } else {
            assert_int_equal(m->rec, MRA_POOLS);
            assert_contains(m->reason, "not one size: realloc resizes its objects (200000 reallocs for 1000000 "
                                       "allocations)");
        }
        result_free(&r);
    }
}

static void test_rule_pools(void **state)
{
    (void)state;
    synth s;
    synth_init(&s, RUN_NS, 8 << 20);
    cap c;
    caller_b(&c);
    const uint64_t sizes[6] = {24, 40, 64, 96, 160, 224};
    struct mra_site_stats st = stats_sizes(1200000, sizes, 6);
    st.freed_together = 400000;
    st.stack_like = 20000;
    synth_add(&s, &c, st);
    result r;
    analyze(&s, &r);
    dump(&r.a);
    const struct mra_site *m = &r.a.sites[0];
    assert_int_equal(m->rec, MRA_POOLS);
    assert_false(m->thread_safe);
    assert_contains(m->reason, "24..224 bytes");
    assert_contains(m->reason, "max_small_size");
    assert_near(m->predicted_saving_ns, 1.2e6 * (30 - 6), 1e-9);
    assert_non_null(strstr(m->sketch[0], "mr_pools_create(NULL)"));
    result_free(&r);
}

static void test_rule_pools_thread_safe(void **state)
{
    (void)state;
    synth s;
    synth_init(&s, RUN_NS, 8 << 20);
    cap c;
    caller_b(&c);
    const uint64_t sizes[4] = {16, 100, 300, 512};
    struct mra_site_stats st = stats_sizes(1000000, sizes, 4);
    st.remote_frees = 1000000; /* every one freed by another thread */
    st.freed_together = 990000; /* the consumer frees in bursts: no arena across threads */
    synth_add(&s, &c, st);
    result r;
    analyze(&s, &r);
    dump(&r.a);
    const struct mra_site *m = &r.a.sites[0];
    assert_int_equal(m->rec, MRA_POOLS);
    assert_true(m->thread_safe);
    assert_int_equal(m->pattern, MRA_PAT_REMOTE);
    assert_contains(m->reason, "thread-safe");
    assert_contains(m->reason, "100.0% freed by another thread");
    assert_near(m->predicted_saving_ns, 1e6 * (60 - 12), 1e-9);
    assert_non_null(strstr(m->sketch[0], "thread_safe = true"));
    result_free(&r);
}

static void test_rule_none(void **state)
{
    (void)state;
    synth s;
    synth_init(&s, RUN_NS, 64 << 20);
    cap c[2];
    caller_a(&c[0]);
    caller_b(&c[1]);
    /* big sizes, freed one by one */
    const uint64_t big[2] = {64 * 1024, 1 << 20};
    struct mra_site_stats st = stats_sizes(100000, big, 2);
    synth_add(&s, &c[0], st);
    /* few allocations, freed together */
    st = stats_one(500, 32);
    st.freed_together = 499;
    synth_add(&s, &c[1], st);
    result r;
    analyze(&s, &r);
    dump(&r.a);
    for (size_t i = 0; i < r.a.nsites; i++) {
        assert_int_equal(r.a.sites[i].rec, MRA_NONE);
        assert_true(r.a.sites[i].predicted_saving_ns == 0);
        assert_contains(r.a.sites[i].reason, "none");
    }
    const struct mra_site *few = site_at_line(&r.a, c[1].line);
    assert_non_null(few);
    assert_contains(few->reason, "500 allocations");
    assert_contains(few->reason, "min_allocations");
    const struct mra_site *bigs = site_at_line(&r.a, c[0].line);
    assert_non_null(bigs);
    assert_contains(bigs->reason, "1048576");
    assert_true(r.a.total_saving_ns == 0);
    result_free(&r);
}

/* below 2% of the run: none, whatever the rule said */
static void test_two_percent(void **state)
{
    (void)state;
    synth s;
    synth_init(&s, 10000000000ull, 64 << 20); /* a 10 s run */
    cap c;
    caller_b(&c);
    struct mra_site_stats st = stats_one(1000000, 32); /* 20 ms: 0.2% */
    st.freed_together = 990000;
    synth_add(&s, &c, st);
    result r;
    analyze(&s, &r);
    dump(&r.a);
    const struct mra_site *m = &r.a.sites[0];
    assert_int_equal(m->rec, MRA_NONE);
    assert_true(m->predicted_saving_ns == 0);
    assert_contains(m->reason, "min_share");
    assert_contains(m->reason, "2%");
    assert_contains(m->reason, "0.20%"); /* the site's share of the run */
    result_free(&r);

    /* at 2.5% of the run it is recommended */
    synth_init(&s, 800000000ull, 64 << 20);
    synth_add(&s, &c, st);
    analyze(&s, &r);
    assert_int_equal(r.a.sites[0].rec, MRA_ARENA);
    result_free(&r);
}

/* What report writes of r's analysis, as a string to free. */
static char *report_string(const result *r, void (*report)(FILE *, const struct mra_analysis *))
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    report(f, &r->a);
    fclose(f);
    return buf;
}

/* glibc's time as the run timed it, where it timed min_timed_samples of
 * the site's calls: the calls of at most 1 us as timed, the longer ones
 * (page faults, mmap, trims) at the share of the site's bytes that reuse
 * memory; memres's cost the calibration's (4 ns a pair for an objpool of
 * 48 bytes).  Fewer samples: the calibration's glibc (30 ns a pair). */
static double timed_saving_heap(uint64_t glibc_ns, uint64_t slow_ns, uint64_t samples, bool reused,
                                uint64_t held, uint64_t retaken)
{
    synth s;
    synth_init(&s, RUN_NS, 8 << 20);
    s.p.heap.retaken_bytes = retaken;
    cap c;
    caller_b(&c);
    struct mra_site_stats st = stats_one(1000000, 48); /* peak live: 1% of its bytes */
    if (!reused)
        st.peak_live_bytes = st.arena_peak_bytes = st.bytes;
    if (held)
        st.peak_live_bytes = st.arena_peak_bytes = held;
    st.glibc_ns = glibc_ns;
    st.glibc_slow_ns = slow_ns;
    st.glibc_samples = samples;
    synth_add(&s, &c, st);
    result r;
    analyze(&s, &r);
    const struct mra_site *m = &r.a.sites[0];
    assert_int_equal(m->candidate, MRA_OBJPOOL);
    assert_int_equal(m->s.glibc_ns, glibc_ns);
    assert_int_equal(m->s.glibc_slow_ns, slow_ns);
    assert_int_equal(m->s.glibc_samples, samples);
    double save = m->predicted_saving_ns;
    if (glibc_ns == 50000000 && slow_ns == 0 && samples == 20000) {
        char *buf = report_string(&r, mra_report_text);
        assert_contains(buf, "in glibc 50.0 ms (timed in the run, 20,000 samples;");
        assert_contains(buf, "glibc as timed in the run: 50.0 ms of 50.0 ms");
        free(buf);
    }
    result_free(&r);
    return save;
}

/* glibc took 1 GiB again (the heap's section), which the fixture does not
 * cost (page_fault 0): the slow calls count at the share that reuses */
static double timed_saving_held(uint64_t glibc_ns, uint64_t slow_ns, uint64_t samples, bool reused,
                                uint64_t held)
{
    return timed_saving_heap(glibc_ns, slow_ns, samples, reused, held, 1u << 30);
}

static double timed_saving(uint64_t glibc_ns, uint64_t slow_ns, uint64_t samples, bool reused)
{
    return timed_saving_held(glibc_ns, slow_ns, samples, reused, 0);
}

/* measure's range of the rounds' ratios: lowest to highest up to eight
 * rounds (five rounds' range holds the median with chance 15/16); from
 * nine rounds the extremes are left out, as many as keep that chance:
 * one round in 9 and in 11, two in 12, three in 15, and never so many
 * that the range stops holding the median itself. */
static void test_range_trim(void **state)
{
    (void)state;
    for (unsigned n = 0; n <= 8; n++)
        assert_int_equal(mra_range_trim(n), 0);
    assert_int_equal(mra_range_trim(9), 1);
    assert_int_equal(mra_range_trim(11), 1);
    assert_int_equal(mra_range_trim(12), 2);
    assert_int_equal(mra_range_trim(15), 3);
    for (unsigned n = 1; n <= MRA_MEASURE_ROUNDS_MAX; n++) {
        unsigned d = mra_range_trim(n);
        assert_true(2 * d < n);
        assert_true(d == 0 || mra_range_trim(n - 1) <= d);
    }
    /* at the most rounds: about 40 of 101 left out at each end */
    assert_in_range(mra_range_trim(MRA_MEASURE_ROUNDS_MAX), 38, 43);
}

static void test_glibc_timed(void **state)
{
    (void)state;
    /* 50 ns a pair as timed, nothing slow: 50 - 4 */
    assert_near(timed_saving(50000000, 0, 20000, true), 1e6 * (50 - 4), 1e-6);
    /* 40 of the 50 ms in slow calls, 99% of the bytes reuse memory; the
     * slow calls scaled from the recorder's chunks of 48 + 32 bytes (96)
     * to the program's of 48 (64) */
    assert_near(timed_saving(50000000, 40000000, 20000, true), 1e6 * (10 + 0.99 * 40 * 64 / 96 - 4), 1e-6);
    /* a site that holds less than glibc's trim threshold (128 KiB): its
     * slow calls are no faults that reuse saves, only the 40 ms fast */
    assert_near(timed_saving_held(80000000, 40000000, 20000, true, 64 << 10), 1e6 * (40 - 4), 1e-6);
    /* glibc took nothing again (the heap's section): the slow calls were no
     * faults of memory given back, and count not at all */
    assert_near(timed_saving_heap(80000000, 40000000, 20000, true, 0, 0), 1e6 * (40 - 4), 1e-6);
    /* it took 1000 pages again, at 10 us a page: 10 ms of the 26.4 ms the
     * share that reuses would count */
    for (unsigned k = 0; k < MRA_COST_CLASSES; k++)
        costs.page_fault[k] = 10000;
    assert_near(timed_saving_heap(80000000, 40000000, 20000, true, 0, 4096 * 1000), 1e6 * (40 + 10 - 4), 1e-6);
    for (unsigned k = 0; k < MRA_COST_CLASSES; k++)
        costs.page_fault[k] = 0;
    /* the same where nothing is reused: the faults move with the objects,
     * and the 10 ms left, 10 ns a pair, is below the calibration's 30 ns:
     * glibc costs at least that in a program, so the calibration counts */
    assert_near(timed_saving(50000000, 40000000, 20000, false), 1e6 * (30 - 4), 1e-6);
    assert_near(timed_saving(10000000, 0, 20000, true), 1e6 * (30 - 4), 1e-6);
    /* too few samples: the calibration's 30 ns a pair */
    assert_near(timed_saving(50000000, 0, 199, true), 1e6 * (30 - 4), 1e-6);
    /* ... but never more than the samples add up to, with four standard
     * errors of their count: 100 samples of 10 ms in all allow 14 ms */
    assert_near(timed_saving(10000000, 0, 100, true), 1e6 * (14 - 4), 1e-6);
    assert_near(timed_saving(40000000, 30000000, 100, true), 1e6 * (30 - 4), 1e-6);
    /* the calibration timed a pair as the recorder does at 40 ns, 30 in a
     * loop: 5 ns of fencing off each of the 2,000,000 calls */
    unsigned cl = mra_cost_class(48);
    costs.glibc_fenced[cl] = 40;
    assert_near(timed_saving(50000000, 0, 20001, true), 1e6 * (50 - 10 - 4), 1e-6);
    /* the fences cost a call the same at any size: the least difference
     * over the classes counts (2 ns at the next class: 4 ms off) */
    costs.glibc_fenced[cl + 1] = costs.glibc[MRA_PAT_RANDOM][cl + 1] + 4;
    assert_near(timed_saving(50000000, 0, 20001, true), 1e6 * (50 - 4 - 4), 1e-6);
    costs.glibc_fenced[cl + 1] = 0;
    costs.glibc_fenced[cl] = 0;
}

/* The run's time is never below what the rules costed glibc's calls at: a
 * recorded run of 1 s whose hooks were sampled at 1.2 s (more than the
 * run: an allocation-bound program) and whose site makes 10 million
 * pairs of 32 bytes freed together (glibc's warmest pair 18 ns, its
 * batch 22 ns), and a site below min_allocations (500 pairs: its warmest
 * pairs, 9 us).  Without the floor the run was a tenth of the recorded
 * one, 100 ms, and the site saved twice that. */
static void test_run_time_floor(void **state)
{
    (void)state;
    synth s;
    synth_init(&s, 1000000000ull, 64 << 20);
    s.p.h.cpu_ns = 1000000000ull;
    s.p.h.recorder_ns = 1200000000ull;
    cap c;
    caller_b(&c);
    struct mra_site_stats st = stats_one(10000000, 32);
    st.freed_together = st.allocations;
    synth_add(&s, &c, st);
    caller_c(&c);
    synth_add(&s, &c, stats_one(500, 32));
    result r;
    analyze(&s, &r);
    dump(&r.a);
    assert_near(r.a.program_ns, 220e6 + 500 * 18, 1e-9);
    assert_near(r.a.program_floor_ns, r.a.program_ns, 1e-9);
    const struct mra_site *m = &r.a.sites[0];
    assert_int_equal(m->rec, MRA_ARENA);
    assert_near(m->predicted_saving_ns, 1e7 * (22 - 2), 1e-9);
    assert_true(m->predicted_saving_ns < r.a.program_ns);
    assert_contains(m->reason, "90.9% of the run");
    char *buf = report_string(&r, mra_report_text);
    assert_contains(buf, "run time 220.0 ms CPU (at least what glibc's calls take at this machine's calibration; "
                         "the recorder's hooks, sampled, came to 1.20 s of the 1.00 s recorded (user + system): "
                         "an estimate too coarse");
    free(buf);
    buf = report_string(&r, mra_report_json);
    assert_contains(buf, "\"recorder_hooks_ns\": 1200000000, \"run_time_floor_ns\": 220009000");
    free(buf);
    result_free(&r);

    /* where the hooks leave more than that, the run is what they leave;
     * where they are most of the recorded run, the report says the run's
     * time is rough */
    static const struct {
        uint64_t hooks_ns;
        const char *says, *not_says;
    } cases[] = {
        { 500000000ull, "run time 500.0 ms CPU (user + system: 1.00 s under the recorder less 500.0 ms in its hooks",
          "rough estimate" },
        { 700000000ull,
          "less 700.0 ms in its hooks; 1.00 s wall; the hooks are 70% of the recorded run: the program's own time is "
          "a rough estimate (often low), and so are the shares of it below; measure times the program alone; "
          "--sample 1024 records a sample, at about half the cost)",
          NULL },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        synth_init(&s, 1000000000ull, 64 << 20);
        s.p.h.cpu_ns = 1000000000ull;
        s.p.h.recorder_ns = cases[i].hooks_ns;
        caller_b(&c);
        synth_add(&s, &c, st);
        analyze(&s, &r);
        assert_near(r.a.program_ns, 1e9 - (double)cases[i].hooks_ns, 1e-9);
        buf = report_string(&r, mra_report_text);
        assert_contains(buf, cases[i].says);
        if (cases[i].not_says)
            assert_null(strstr(buf, cases[i].not_says));
        free(buf);
        result_free(&r);
    }
}

/* Four sites through one wrapper, each below the 2% rule, together above
 * it: one mr_pools behind the wrapper. */
static void test_behind_function(void **state)
{
    (void)state;
    synth s;
    synth_init(&s, 400000000ull, 64 << 20); /* 400 ms */
    const uint64_t sizes[6] = {24, 40, 64, 96, 160, 224};
    for (int k = 0; k < 4; k++) {
        cap c;
        via_xmalloc(&c, k);
        struct mra_site_stats st = stats_sizes(200000, sizes, 6); /* 200k x (30 - 6) = 4.8 ms: 1.2% */
        st.freed_together = 20000;
        synth_add(&s, &c, st);
    }
    result r;
    analyze(&s, &r);
    dump(&r.a);
    assert_int_equal(r.a.nsites, 4);
    for (size_t i = 0; i < r.a.nsites; i++) {
        assert_int_equal(r.a.sites[i].rec, MRA_NONE);
        assert_contains(r.a.sites[i].reason, "would be pools");
        assert_string_equal(r.a.sites[i].frames[0].function, "via_xmalloc");
    }
    assert_int_equal(r.a.nbehind, 1);
    const struct mra_behind *b = &r.a.behind[0];
    assert_non_null(b->frame.function);
    assert_string_equal(b->frame.function, "xmalloc");
    assert_int_equal(b->nsites, 4);
    assert_int_equal(b->allocations, 800000);
    assert_false(b->thread_safe);
    assert_near(b->predicted_saving_ns, 4 * 200000.0 * (30 - 6), 1e-9);
    assert_contains(b->reason, "4 sites reach malloc from this function");
    assert_contains(b->reason, "4.8% of the run");
    /* its plan (measure runs it): one pools route, every stack from xmalloc's
     * call of malloc by its first frame, that frame once */
    assert_int_equal(b->nraw, 4);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(mra_plan_write_behind(f, &s.p, &r.a, 0), 0);
    fclose(f);
    assert_contains(buf, "memres-advise-plan 1\n");
    assert_contains(buf, "one mr_pools behind xmalloc (4 sites)");
    assert_contains(buf, "\nroute 1 pools 0 0\nwalk 1\n");
    size_t nstack = 0;
    for (const char *q = buf; (q = strstr(q, "\nstack 1 1 ")) != NULL; q++)
        nstack++;
    assert_int_equal(nstack, 1);
    free(buf);
    result_free(&r);

    /* a site above max_small_size among them: it stays on malloc, the rest
     * (80% of the allocations) is not enough */
    synth_init(&s, 400000000ull, 64 << 20);
    for (int k = 0; k < 4; k++) {
        cap c;
        via_xmalloc(&c, k);
        struct mra_site_stats st = stats_sizes(200000, sizes, 6);
        if (k == 3) {
            st = stats_one(200000, 8192);
        }
        st.freed_together = 20000;
        synth_add(&s, &c, st);
    }
    analyze(&s, &r);
    assert_int_equal(r.a.nbehind, 0);
    result_free(&r);
}

/* Two functions that free (they play the caller of free). */
static __attribute__((noinline)) void free_doc(cap *c)
{
    c->line = __LINE__; capture(c);
    __asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) void free_other(cap *c)
{
    c->line = __LINE__; capture(c);
    __asm__ volatile("" ::: "memory");
}

/* A site freed in bursts from the free stack at raw id fid. */
static struct mra_site_stats stats_freed_by(uint64_t n, uint32_t fid)
{
    struct mra_site_stats st = stats_one(n, 48);
    st.freed_together = n;
    st.nfree_sites = 1;
    st.free_sites[0] = fid;
    st.free_site_counts[0] = n / 64;
    return st;
}

/* Arena candidates each below the 2% rule, whose objects one function
 * frees, are recommended together where together they pass it (one arena
 * for the burst); a candidate freed by another function is not; sites
 * never freed go together too. */
static void test_free_groups(void **state)
{
    (void)state;
    synth s;
    synth_init(&s, 400000000ull, 64 << 20); /* 400 ms: the rule is 8 ms */
    cap fd, fo;
    free_doc(&fd);
    free_other(&fo);
    struct mra_raw_site *r0 = synth_add(&s, &fd, stats_one(1, 16));
    r0->s.free_stack = 1;
    struct mra_raw_site *r1 = synth_add(&s, &fo, stats_one(1, 16));
    r1->s.free_stack = 1;
    uint32_t doc = r0->s.id, other = r1->s.id;
    /* 250,000 x (22 - 2) ns = 5 ms = 1.25% each; three freed in free_doc */
    cap c[4];
    caller_a(&c[0]);
    caller_b(&c[1]);
    via_xmalloc(&c[2], 0);
    via_xmalloc(&c[3], 1);
    for (int k = 0; k < 3; k++)
        synth_add(&s, &c[k], stats_freed_by(250000, doc));
    synth_add(&s, &c[3], stats_freed_by(250000, other));
    result r;
    analyze(&s, &r);
    dump(&r.a);
    size_t grouped = 0, alone = 0;
    for (size_t i = 0; i < r.a.nsites; i++) {
        const struct mra_site *x = &r.a.sites[i];
        if (x->s.allocations != 250000)
            continue;
        if (x->rec == MRA_ARENA) {
            grouped++;
            assert_near(x->predicted_saving_ns, 250000.0 * 20, 1e-6);
            assert_contains(x->reason, "together with the 2 other sites freed in free_doc");
            assert_contains(x->reason, "3.8% together");
            assert_contains(x->reason, "one mr_arena for them all");
            assert_contains(x->near, "together");
            assert_true(x->memory_delta_bytes != 0);
        } else {
            alone++;
            assert_int_equal(x->rec, MRA_NONE);
            assert_contains(x->reason, "below min_share");
            assert_string_equal(x->frames[0].function, "via_xmalloc");
        }
    }
    assert_int_equal(grouped, 3);
    assert_int_equal(alone, 1);
    assert_near(r.a.total_saving_ns, 3 * 250000.0 * 20, 1e-6);
    result_free(&r);

    /* two freed in free_doc only: 2.5% together, still one arena; a
     * raised rule (3%) leaves them none */
    synth_init(&s, 400000000ull, 64 << 20);
    r0 = synth_add(&s, &fd, stats_one(1, 16));
    r0->s.free_stack = 1;
    for (int k = 0; k < 2; k++)
        synth_add(&s, &c[k], stats_freed_by(250000, r0->s.id));
    analyze(&s, &r);
    for (size_t i = 0; i < r.a.nsites; i++)
        if (r.a.sites[i].s.allocations == 250000)
            assert_int_equal(r.a.sites[i].rec, MRA_ARENA);
    result_free(&r);
    struct mra_options o;
    mra_options_default(&o);
    o.th.min_share = 0.03;
    analyze_with(&s, &o, &r);
    for (size_t i = 0; i < r.a.nsites; i++)
        if (r.a.sites[i].s.allocations == 250000) {
            assert_int_equal(r.a.sites[i].rec, MRA_NONE);
            assert_contains(r.a.sites[i].near, "saves 2.50% of the run together with the 1 other site freed in free_doc");
        }
    result_free(&r);

    /* never freed: 600,000 x (22 - 2 - 11) ns = 5.4 ms = 1.35% each, one
     * arena for both, destroyed at exit */
    synth_init(&s, 400000000ull, 64 << 20);
    for (int k = 0; k < 2; k++) {
        struct mra_site_stats st = stats_one(600000, 48);
        st.live_objects = 600000;
        st.frees = 0;
        st.freed_bytes = 0;
        synth_add(&s, &c[k], st);
    }
    analyze(&s, &r);
    dump(&r.a);
    for (size_t i = 0; i < r.a.nsites; i++)
        if (r.a.sites[i].s.allocations == 600000) {
            assert_int_equal(r.a.sites[i].rec, MRA_ARENA);
            assert_contains(r.a.sites[i].reason, "together with the 1 other site never freed");
        }
    result_free(&r);
}

static void test_retention(void **state)
{
    (void)state;
    synth s;
    synth_init(&s, RUN_NS, 1 << 20); /* the program's peak: 1 MiB */
    cap c[2];
    caller_a(&c[0]);
    caller_b(&c[1]);
    struct mra_site_stats st = stats_one(1000000, 64);
    st.freed_together = 950000;
    st.peak_live_objects = 1000;
    st.peak_live_bytes = 64000;
    st.arena_peak_bytes = 64000000; /* its live count never reaches 0: an arena keeps it all */
    synth_add(&s, &c[0], st);
    st.arena_peak_bytes = 64000; /* reset where it empties: no more than its peak */
    synth_add(&s, &c[1], st);
    result r;
    analyze(&s, &r);
    dump(&r.a);
    const struct mra_site *hold = site_at_line(&r.a, c[0].line);
    const struct mra_site *ok = site_at_line(&r.a, c[1].line);
    assert_non_null(hold);
    assert_non_null(ok);
    assert_int_equal(hold->rec, MRA_ARENA);
    assert_int_equal(ok->rec, MRA_ARENA);
    assert_true(hold->retention_warning);
    assert_false(ok->retention_warning);
    assert_true(hold->memory_delta_bytes > ok->memory_delta_bytes);
    result_free(&r);
}

/* A site freed together whose objects realloc moves: the arena would keep
 * the copies moved away from (arena_peak over moved_retention, 1.5x, the
 * site's peak), so pools; at 1.4x an arena, near the threshold; at 1.1x an
 * arena, not near it; moves under one in a hundred allocations leave it an
 * arena.  The alternative measure tries beside the pools is the arena. */
static void test_rule_pools_realloc_moves(void **state)
{
    (void)state;
    const double x[4] = {2.5, 1.4, 1.1, 2.5};
    for (int k = 0; k < 4; k++) {
        synth s;
        synth_init(&s, RUN_NS, 8 << 20);
        cap c;
        caller_a(&c);
        struct mra_site_stats st = stats_one(1000000, 32);
        st.freed_together = 1000000;
        st.peak_live_objects = 8192;
        st.peak_live_bytes = 2 << 20;
        st.reallocs = 2000000;
        st.realloc_moves = k == 3 ? 9000 : 1800000;
        st.arena_peak_bytes = (uint64_t)(x[k] * (2 << 20));
        synth_add(&s, &c, st);
        result r;
        analyze(&s, &r);
        const struct mra_site *m = &r.a.sites[0];
        if (k == 0) {
            assert_int_equal(m->rec, MRA_POOLS);
            assert_contains(m->reason, "100.0% freed together, but realloc moved its objects 1800000 times for "
                                       "1000000 allocations: an arena would keep the copies it moved away from "
                                       "(5120.0 KiB, 2.5x the site's peak > moved_retention 1.5x), pools reuse them");
            assert_false(m->retention_warning);
            assert_int_equal(mra_alternative(m, m->rec, &r.a.opts.th), MRA_ARENA);
        } else {
            assert_int_equal(m->rec, MRA_ARENA);
        }
        if (k == 1)
            assert_contains(m->near, "an arena would hold 1.40x the site's peak (moved_retention 1.5x: pools above it)");
        else
            assert_null(strstr(m->near, "moved_retention"));
        result_free(&r);
    }
}

/* measure's plan where nothing is recommended: the candidates that would
 * save most, at most MRA_PLANNED_MAX, each at least a twentieth of the 2%
 * rule (0.1% of the run), and the best one whatever it saves; the CLI's
 * --plan-candidates keeps every one. */
static size_t planned_in(const struct mra_site *sites, size_t n, enum mra_plan_mode mode, double cut)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += mra_plan_kind(&sites[i], mode, cut) != MRA_NONE;
    return k;
}

static void test_plan_top_candidates(void **state)
{
    (void)state;
    struct mra_analysis a;
    memset(&a, 0, sizeof a);
    struct mra_site sites[50];
    memset(sites, 0, sizeof sites);
    a.sites = sites;
    a.nsites = 50;
    a.program_ns = 1e9;
    a.opts.th.min_share = 0.02; /* a twentieth: 1 ms of the 1 s run */
    for (int i = 0; i < 50; i++) {
        sites[i].candidate = i % 10 == 9 ? MRA_NONE : MRA_ARENA;
        sites[i].candidate_saving_ns = (50 - i) * 4e4 + 1e3; /* 2 ms .. 0.04 ms */
    }
    double cut = mra_plan_cutoff(&a, MRA_PLAN_TOP_CANDIDATES);
    assert_true(cut > 0.999e6 && cut < 1.001e6);
    assert_int_equal(planned_in(sites, 50, MRA_PLAN_CANDIDATES, 0), 45);
    assert_int_equal(planned_in(sites, 50, MRA_PLAN_TOP_CANDIDATES, cut), 24); /* the 26 of 1 ms or more,
                                                                                 less sites 9 and 19 */
    assert_int_equal(mra_plan_kind(&sites[25], MRA_PLAN_TOP_CANDIDATES, cut), MRA_ARENA); /* 1.001 ms */
    assert_int_equal(mra_plan_kind(&sites[26], MRA_PLAN_TOP_CANDIDATES, cut), MRA_NONE);  /* 0.961 ms */
    assert_true(mra_plan_cutoff(&a, MRA_PLAN_CANDIDATES) == 0);

    /* more than MRA_PLANNED_MAX above a twentieth of the rule: the 32 best */
    for (int i = 0; i < 50; i++)
        sites[i].candidate_saving_ns = (50 - i) * 1e6;
    cut = mra_plan_cutoff(&a, MRA_PLAN_TOP_CANDIDATES);
    assert_int_equal(planned_in(sites, 50, MRA_PLAN_TOP_CANDIDATES, cut), MRA_PLANNED_MAX);

    /* every one under a twentieth of the rule: the best one */
    for (int i = 0; i < 50; i++)
        sites[i].candidate_saving_ns = (50 - i) * 1e3;
    cut = mra_plan_cutoff(&a, MRA_PLAN_TOP_CANDIDATES);
    assert_int_equal(planned_in(sites, 50, MRA_PLAN_TOP_CANDIDATES, cut), 1);
    assert_int_equal(mra_plan_kind(&sites[0], MRA_PLAN_TOP_CANDIDATES, cut), MRA_ARENA);
}

/* sites by predicted saving; the JSON and text reports say the same */
static void test_order_and_reports(void **state)
{
    (void)state;
    synth s;
    synth_init(&s, RUN_NS, 8 << 20);
    cap c[3];
    caller_a(&c[0]);
    caller_b(&c[1]);
    caller_c(&c[2]);
    struct mra_site_stats st = stats_one(300000, 32);
    st.freed_together = 290000;
    synth_add(&s, &c[0], st); /* arena: 6 ms */
    st = stats_one(1000000, 48);
    synth_add(&s, &c[1], st); /* objpool: 26 ms */
    st = stats_one(200, 16);
    synth_add(&s, &c[2], st); /* none */
    result r;
    analyze(&s, &r);
    dump(&r.a);
    assert_int_equal(r.a.nsites, 3);
    for (size_t i = 1; i < r.a.nsites; i++)
        assert_true(r.a.sites[i - 1].predicted_saving_ns >= r.a.sites[i].predicted_saving_ns);
    assert_int_equal(r.a.sites[0].rec, MRA_OBJPOOL);
    assert_int_equal(r.a.sites[1].rec, MRA_ARENA);
    assert_int_equal(r.a.sites[2].rec, MRA_NONE);
    for (size_t i = 0; i < r.a.nsites; i++)
        assert_int_equal(r.a.sites[i].id, i + 1);

    char *buf = report_string(&r, mra_report_json);
    kj doc;
    const char *err = NULL;
    size_t at = 0;
    int parsed = kj_parse(buf, strlen(buf), &doc, &err, &at);
    if (parsed != 0)
        fprintf(stderr, "  not JSON: %s at %zu: %.80s\n", err, at, buf + (at > 20 ? at - 20 : 0));
    assert_int_equal(parsed, 0);
    assert_int_equal((int)kj_num(kj_get(&doc, "version"), 0), 1);
    assert_non_null(kj_str(kj_get(&doc, "program")));
    assert_true(kj_get(&doc, "allocations") != NULL);
    assert_true(kj_get(&doc, "frees") != NULL);
    assert_true(kj_get(&doc, "peak_live_bytes") != NULL);
    const kj *ss = kj_get(&doc, "sites");
    assert_non_null(ss);
    assert_int_equal(ss->n, 3);
    static const char *const names[] = {"objpool", "arena", "none"};
    for (size_t i = 0; i < 3; i++) {
        const kj *js = &ss->items[i];
        assert_string_equal(kj_str(kj_get(js, "recommendation")), names[i]);
        assert_near(kj_num(kj_get(js, "predicted_saving_ns"), -1), r.a.sites[i].predicted_saving_ns, 1e-6);
        assert_int_equal((long)kj_num(kj_get(js, "allocations"), -1), (long)r.a.sites[i].s.allocations);
        assert_int_equal((long)kj_num(kj_get(js, "bytes"), -1), (long)r.a.sites[i].s.bytes);
        assert_string_equal(kj_str(kj_get(js, "reason")), r.a.sites[i].reason);
        static const char *const fields[] = {"id", "frames", "sizes", "peak_live", "freed_at_exit"};
        for (size_t k = 0; k < sizeof fields / sizeof *fields; k++)
            assert_non_null(kj_get(js, fields[k]));
        const kj *f0 = kj_at(kj_get(js, "frames"), 0);
        assert_non_null(f0);
        assert_string_equal(kj_str(kj_get(f0, "function")), r.a.sites[i].frames[0].function);
        assert_string_equal(base_name(kj_str(kj_get(f0, "file"))), "test_analysis.c");
        assert_int_equal((unsigned)kj_num(kj_get(f0, "line"), 0), r.a.sites[i].frames[0].line);
        assert_non_null(kj_get(f0, "module"));
    }
    kj_free(&doc);
    free(buf);

    buf = report_string(&r, mra_report_text);
    char want[128];
    snprintf(want, sizeof want, "test_analysis.c:%u", c[1].line);
    assert_contains(buf, want);
    assert_contains(buf, "caller_b");
    assert_contains(buf, "objpool");
    assert_contains(buf, r.a.sites[0].sketch[0]);
    free(buf);

    buf = report_string(&r, mra_report_svg);
    assert_contains(buf, "<svg");
    assert_contains(buf, "</svg>");
    assert_null(strstr(buf, "<script"));
    free(buf);
    result_free(&r);
}

/* ---- the profile file: versions, the timeline section ---- */

/* Writes a profile of version `version` with one site (stack c) and, from
 * version 5 on, the timeline section th and its points (th.npoints of
 * them; fewer written: ngiven), from version 6 on the heap section heap
 * and its nhsites sites (write_profile: none). */
/* ... and from version 7 on the speed section sp (NULL: none written;
 * write_profile_heap writes one of zeros). */
static void write_profile_speed(const char *path, uint32_t version, const cap *c,
                                const struct mra_timeline_header *th, const struct mra_timeline_point *pts,
                                uint32_t ngiven, const struct mra_heap_header *heap,
                                const struct mra_heap_site *hsites, uint32_t nhsites, const struct mra_speed *sp)
{    synth s;
    synth_init(&s, RUN_NS, 16u << 20);
    s.p.h.version = version;
    s.p.h.nmodules = 0;
    s.p.h.nsites = 1;
    s.p.h.allocations = 2000;
    s.p.h.ticks = 2000;
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(&s.p.h, sizeof s.p.h, 1, f), 1);
    struct mra_site_stats st = stats_one(2000, 32);
    st.id = 1;
    st.nframes = c->n;
    uint64_t fr[CAP_MAX] = { 0 };
    memcpy(fr, c->frames, c->n * sizeof *fr);
    assert_int_equal(fwrite(&st, sizeof st, 1, f), 1);
    assert_int_equal(fwrite(fr, sizeof fr, 1, f), 1);
    if (th) {
        assert_int_equal(fwrite(th, sizeof *th, 1, f), 1);
        assert_int_equal(fwrite(pts, sizeof *pts, ngiven, f), ngiven);
    }
    if (heap) {
        assert_int_equal(fwrite(heap, sizeof *heap, 1, f), 1);
        assert_int_equal(fwrite(hsites, sizeof *hsites, nhsites, f), nhsites);
    }
    if (sp)
        assert_int_equal(fwrite(sp, sizeof *sp, 1, f), 1);
    assert_int_equal(fclose(f), 0);
}

static void write_profile_heap(const char *path, uint32_t version, const cap *c,
                               const struct mra_timeline_header *th, const struct mra_timeline_point *pts,
                               uint32_t ngiven, const struct mra_heap_header *heap,
                               const struct mra_heap_site *hsites, uint32_t nhsites)
{
    const struct mra_speed none = { 0 };
    write_profile_speed(path, version, c, th, pts, ngiven, heap, hsites, nhsites, version >= 7 ? &none : NULL);
}

static void write_profile(const char *path, uint32_t version, const cap *c, const struct mra_timeline_header *th,
                          const struct mra_timeline_point *pts, uint32_t ngiven)
{
    write_profile_heap(path, version, c, th, pts, ngiven, NULL, NULL, 0);
}

/* The analysis of the profile at path, the recording's speed applied or
 * not (no_speed). */
static void analyze_speed(const char *path, struct mra_profile *p, result *r, bool no_speed)
{
    assert_int_equal(mra_profile_read(path, p), 0);
    r->sym = mra_symbols_open(p);
    assert_non_null(r->sym);
    struct mra_options o;
    mra_options_default(&o);
    o.no_speed = no_speed;
    assert_int_equal(mra_analyze(p, r->sym, &costs, &o, &r->a), 0);
}

/* The analysis of the profile at path, its JSON report parsed into doc and
 * its text report and page data returned (malloc'ed). */
static void analyze_file(const char *path, struct mra_profile *p, result *r, kj *doc, char **text, char **page)
{
    assert_int_equal(mra_profile_read(path, p), 0);
    r->sym = mra_symbols_open(p);
    assert_non_null(r->sym);
    struct mra_options o;
    mra_options_default(&o);
    assert_int_equal(mra_analyze(p, r->sym, &costs, &o, &r->a), 0);
    char *json = report_string(r, mra_report_json);
    const char *err = NULL;
    size_t at = 0;
    assert_int_equal(kj_parse(json, strlen(json), doc, &err, &at), 0);
    free(json);
    *text = report_string(r, mra_report_text);
    *page = mra_html_data(&r->a);
    assert_non_null(*page);
}

static void test_profile_versions(void **state)
{
    (void)state;
    char path[64];
    snprintf(path, sizeof path, "/tmp/test_advise_profile.%ld", (long)getpid());
    cap c;
    caller_a(&c);
    struct mra_profile p;
    result r;
    kj doc;
    char *text, *page;

    /* version 4: no timeline; the reports say so (an empty array, null) */
    write_profile(path, 4, &c, NULL, NULL, 0);
    analyze_file(path, &p, &r, &doc, &text, &page);
    assert_int_equal(p.nsites, 1);
    assert_int_equal(p.tl.npoints, 0);
    assert_null(p.timeline);
    assert_int_equal(r.a.tl.npoints, 0);
    assert_int_equal(kj_get(&doc, "timeline")->t, KJ_ARR);
    assert_int_equal(kj_get(&doc, "timeline")->n, 0);
    assert_int_equal(kj_get(&doc, "timeline_peak")->t, KJ_NULL);
    assert_null(strstr(text, "live bytes peaked"));
    assert_contains(page, "\"timeline\":null");
    kj_free(&doc);
    free(text);
    free(page);
    result_free(&r);
    mra_profile_free(&p);

    /* version 5: the timeline read back as written, in every report */
    const struct mra_timeline_point pts[3] = {
        { 0, 0, 0, 0 },
        { 50000000, 1234, 16u << 20, 1000 },
        { 100000000, 2000, 4096, 1 },
    };
    struct mra_timeline_header th = { .npoints = 3, .peak = 1, .interval_ns = 10000 };
    write_profile(path, 5, &c, &th, pts, 3);
    analyze_file(path, &p, &r, &doc, &text, &page);
    assert_int_equal(p.tl.npoints, 3);
    assert_int_equal(p.tl.peak, 1);
    assert_memory_equal(p.timeline, pts, sizeof pts);
    assert_int_equal(r.a.tl.npoints, 3);
    assert_memory_equal(r.a.timeline, pts, sizeof pts);
    const kj *tl = kj_get(&doc, "timeline");
    assert_int_equal(tl->n, 3);
    assert_int_equal((int)kj_num(kj_get(&doc, "timeline_peak"), -1), 1);
    for (size_t i = 0; i < 3; i++) {
        assert_true(kj_num(kj_get(kj_at(tl, i), "time_ns"), -1) == (double)pts[i].time_ns);
        assert_true(kj_num(kj_get(kj_at(tl, i), "allocations"), -1) == (double)pts[i].allocations);
        assert_true(kj_num(kj_get(kj_at(tl, i), "live_bytes"), -1) == (double)pts[i].live_bytes);
        assert_true(kj_num(kj_get(kj_at(tl, i), "live_objects"), -1) == (double)pts[i].live_objects);
    }
    assert_contains(text, "live bytes peaked at 16.0 MiB, 50.0 ms into the run, at allocation 1,234 of 2,000 "
                          "(timeline of 3 points)");
    assert_contains(page, "\"timeline\":{\"peak\":1,\"interval_ns\":10000,\"points\":[[0,0,0,0],"
                          "[50000000,1234,16777216,1000],[100000000,2000,4096,1]]}");
    kj_free(&doc);
    free(text);
    free(page);
    result_free(&r);
    mra_profile_free(&p);

    /* version 6: the heap section -- what glibc gave back and took again --
     * on the run and on the site it names, costed at the calibration's
     * page_fault (here 0: no time; 2 us a page below) */
    struct mra_heap_header heap = { .given_back_bytes = 64u << 20, .given_back_events = 16,
                                    .retaken_bytes = 60u << 20, .retaken_events = 15, .grown_bytes = 80u << 20,
                                    .nsites = 2 };
    const struct mra_heap_site hs[2] = { { .site = 1, .given_back_bytes = 64u << 20, .retaken_bytes = 40u << 20 },
                                         { .site = 9, .retaken_bytes = 20u << 20 } };
    for (unsigned k = 0; k < MRA_COST_CLASSES; k++)
        costs.page_fault[k] = 2000;
    write_profile_heap(path, 6, &c, &th, pts, 3, &heap, hs, 2);
    analyze_file(path, &p, &r, &doc, &text, &page);
    assert_int_equal(p.heap.nsites, 2);
    assert_int_equal(r.a.heap.retaken_bytes, 60u << 20);
    /* 15,360 pages at 2 us: 30.7 ms, 30.7% of the 100 ms run */
    assert_near(r.a.heap_retaken_ns, 15360 * 2000.0, 1e-9);
    assert_int_equal(r.a.sites[0].heap_given_back, 64u << 20);
    assert_int_equal(r.a.sites[0].heap_retaken, 40u << 20);
    const kj *hj = kj_get(&doc, "heap");
    assert_true(kj_num(kj_get(hj, "given_back_bytes"), -1) == (double)(64u << 20));
    assert_true(kj_num(kj_get(hj, "retaken_bytes"), -1) == (double)(60u << 20));
    assert_true(kj_num(kj_get(hj, "retaken_ns"), -1) == 15360 * 2000.0);
    assert_true(kj_num(kj_get(kj_at(kj_get(&doc, "sites"), 0), "heap_retaken_bytes"), -1) == (double)(40u << 20));
    assert_contains(text, "glibc gave 64.0 MiB back to the system (16 trims and unmaps) and took 60.0 MiB of it "
                          "again (15 times): pages faulted in a second time, about 30.7 ms");
    assert_contains(text, "memory kept would save that: GLIBC_TUNABLES=");
    assert_contains(text, "glibc's heap: its frees gave 64.0 MiB back to the system; its chunks glibc mapped took "
                          "40.0 MiB of what was given back again");
    kj_free(&doc);
    free(text);
    free(page);
    result_free(&r);
    mra_profile_free(&p);
    for (unsigned k = 0; k < MRA_COST_CLASSES; k++)
        costs.page_fault[k] = 0;
    /* version 7: the speed section.  The recording's probes (mean 60 ns)
     * against the calibration's cell (30 ns): the run took twice the
     * calibration's time, so its time and its timed figures count half */
    const struct mra_speed sp = { .start_ns = 45, .exit_ns = 75 };
    write_profile_speed(path, 7, &c, &th, pts, 3, &heap, hs, 2, &sp);
    analyze_file(path, &p, &r, &doc, &text, &page);
    assert_near(p.speed.exit_ns, 75, 1e-12);
    assert_near(r.a.speed, 2, 1e-12);
    assert_near(r.a.program_ns, RUN_NS / 2.0, 1e-9);
    assert_near(r.a.glibc_scale, 0.5, 1e-12);
    assert_near(kj_num(kj_get(&doc, "speed"), -1), 2, 1e-12);
    assert_near(kj_num(kj_get(&doc, "speed_probe_ns"), -1), 60, 1e-12);
    assert_contains(text, "took 60.0 ns on the program's thread (45.0 at start, 75.0 at exit), 30.0 in the "
                          "calibration: the run's times and its timed figures are taken to the calibration's speed");
    kj_free(&doc);
    free(text);
    free(page);
    result_free(&r);
    mra_profile_free(&p);
    /* ... not applied when asked, and held to 3x */
    analyze_speed(path, &p, &r, true);
    assert_near(r.a.speed, 1, 1e-12);
    assert_near(r.a.program_ns, RUN_NS, 1e-9);
    result_free(&r);
    mra_profile_free(&p);
    const struct mra_speed slow = { .start_ns = 300 };
    write_profile_speed(path, 7, &c, &th, pts, 3, &heap, hs, 2, &slow);
    analyze_speed(path, &p, &r, false);
    assert_near(r.a.speed, 3, 1e-12);
    assert_near(r.a.speed_probe_ns, 300, 1e-12);
    result_free(&r);
    mra_profile_free(&p);
    /* a version 7 profile without its speed section */
    write_profile_speed(path, 7, &c, &th, pts, 3, &heap, hs, 2, NULL);
    assert_int_equal(mra_profile_read(path, &p), -1);

    /* a version 6 profile without its heap section, or naming more sites
     * than the recorder writes */
    write_profile(path, 6, &c, &th, pts, 3);
    assert_int_equal(mra_profile_read(path, &p), -1);
    heap.nsites = MRA_HEAP_SITES + 1;
    write_profile_heap(path, 6, &c, &th, pts, 3, &heap, hs, 2);
    assert_int_equal(mra_profile_read(path, &p), -1);

    /* refused: a version before 4 or after this one, a section cut short,
     * more points than the recorder writes, a peak outside them */
    write_profile(path, 3, &c, NULL, NULL, 0);
    assert_int_equal(mra_profile_read(path, &p), -1);
    write_profile(path, MRA_PROFILE_VERSION + 1, &c, &th, pts, 3);
    assert_int_equal(mra_profile_read(path, &p), -1);
    write_profile(path, 5, &c, NULL, NULL, 0);
    assert_int_equal(mra_profile_read(path, &p), -1);
    write_profile(path, 5, &c, &th, pts, 2);
    assert_int_equal(mra_profile_read(path, &p), -1);
    th.npoints = MRA_TIMELINE_MAX + 1;
    write_profile(path, 5, &c, &th, pts, 3);
    assert_int_equal(mra_profile_read(path, &p), -1);
    th.npoints = 3;
    th.peak = 3;
    write_profile(path, 5, &c, &th, pts, 3);
    assert_int_equal(mra_profile_read(path, &p), -1);
    unlink(path);
}

int main(void)
{
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return 1;
    exe[n] = '\0';
    dl_iterate_phdr(add_module, NULL);
    costs_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rec_names),
        cmocka_unit_test(test_symbols),
        cmocka_unit_test(test_fold_wrapper),
        cmocka_unit_test(test_fold_option),
        cmocka_unit_test(test_recursion),
        cmocka_unit_test(test_rule_arena),
        cmocka_unit_test(test_rule_arena_big_cohort),
        cmocka_unit_test(test_rule_arena_at_exit),
        cmocka_unit_test(test_rule_arena_rewind),
        cmocka_unit_test(test_rule_objpool),
        cmocka_unit_test(test_rule_objpool_resized),
        cmocka_unit_test(test_rule_pools),
        cmocka_unit_test(test_rule_pools_thread_safe),
        cmocka_unit_test(test_rule_none),
        cmocka_unit_test(test_two_percent),
        cmocka_unit_test(test_range_trim),
        cmocka_unit_test(test_glibc_timed),
        cmocka_unit_test(test_run_time_floor),
        cmocka_unit_test(test_behind_function),
        cmocka_unit_test(test_free_groups),
        cmocka_unit_test(test_retention),
        cmocka_unit_test(test_rule_pools_realloc_moves),
        cmocka_unit_test(test_plan_top_candidates),
        cmocka_unit_test(test_order_and_reports),
        cmocka_unit_test(test_profile_versions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
