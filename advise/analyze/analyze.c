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
 * this machine's per-operation costs, and sorted. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "site_stats.h"

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
}

/* ---- wrappers ---- */

static const char *const builtin_wrappers[] = {
    "xmalloc", "xcalloc", "xrealloc", "xstrdup", "xstrndup", "xmemdup", "xzalloc", "xnmalloc",
    "xreallocarray", "xmallocz", "xrecalloc",
    "g_malloc", "g_malloc0", "g_realloc", "g_malloc_n", "g_malloc0_n", "g_realloc_n",
    "g_try_malloc*", "g_try_realloc*", "g_new*", "g_strdup", "g_strndup", "g_memdup", "g_memdup2",
    "g_slice_alloc*",
    "sqlite3Malloc", "sqlite3MallocZero", "sqlite3DbMallocRaw*", "sqlite3DbMallocZero",
    "sqlite3DbRealloc", "sqlite3Realloc", "sqlite3_malloc", "sqlite3_malloc64", "sqlite3_realloc*",
    "sqlite3MemMalloc", "sqlite3MemRealloc",
    "luaM_malloc_", "luaM_realloc_", "luaM_saferealloc_", "luaM_growaux_", "l_alloc",
    "strdup", "strndup",
    "operator new*", "_Znw*", "_Zna*",
    "std::__new_allocator*", "__gnu_cxx::new_allocator*", "std::allocator<*",
    "std::allocator_traits<*",
};

static bool pat_match(const char *pat, const char *name)
{
    size_t pl = strlen(pat);
    if (pl && pat[pl - 1] == '*')
        return strncmp(pat, name, pl - 1) == 0;
    if (strcmp(pat, name) == 0)
        return true;
    /* "f" matches a demangled "f(int)" */
    size_t nl = strlen(name);
    return nl > pl && name[pl] == '(' && strncmp(pat, name, pl) == 0;
}

/* The name without GCC's clone suffixes (".constprop.0", ".isra.0",
 * ".part.0", ".cold"): C names have no '.'. */
static const char *plain_name(const char *fn, char *buf, size_t cap)
{
    if (fn[0] == '_' && fn[1] == 'Z')
        return fn;
    const char *dot = strchr(fn, '.');
    if (!dot || strchr(fn, '(') || dot == fn)
        return fn;
    size_t n = (size_t)(dot - fn);
    if (n >= cap)
        return fn;
    memcpy(buf, fn, n);
    buf[n] = '\0';
    return buf;
}

static bool module_is_folded(const char *m)
{
    if (!m)
        return false;
    const char *b = strrchr(m, '/');
    b = b ? b + 1 : m;
    return strncmp(b, "libc.so", 7) == 0 || strncmp(b, "libc-", 5) == 0 || strncmp(b, "ld-linux", 8) == 0 ||
           strncmp(b, "ld64.so", 7) == 0 || strncmp(b, "libmemres-advise-recorder", 25) == 0;
}

static bool is_wrapper(const struct mra_frame *f, const struct mra_options *o, const char **as)
{
    *as = f->function;
    if (module_is_folded(f->module))
        return true;
    if (!f->function) {
        /* without symbols (a stripped program), --wrapper MODULE+0xOFFSET
         * names the frame as the report shows it */
        if (!f->module || !o->nwrappers)
            return false;
        const char *b = strrchr(f->module, '/');
        char mo[320];
        snprintf(mo, sizeof mo, "%s+0x%llx", b ? b + 1 : f->module, (unsigned long long)f->offset);
        for (size_t i = 0; i < o->nwrappers; i++)
            if (o->wrappers[i] && pat_match(o->wrappers[i], mo)) {
                *as = o->wrappers[i];
                return true;
            }
        return false;
    }
    char buf[256];
    const char *n = plain_name(f->function, buf, sizeof buf);
    for (size_t i = 0; i < sizeof builtin_wrappers / sizeof *builtin_wrappers; i++)
        if (pat_match(builtin_wrappers[i], n))
            return true;
    for (size_t i = 0; i < o->nwrappers; i++)
        if (o->wrappers[i] && pat_match(o->wrappers[i], n))
            return true;
    return false;
}

/* ---- merged sites ---- */

struct msite {
    struct mra_site_stats s;
    size_t fr;                   /* its frames: fpool[fr .. fr + nfr) */
    unsigned nfr;
    bool cut;
    bool unresolved;             /* its stack ends in a wrapper: the caller is unknown */
    bool dead;                   /* merged into another */
    const struct mra_frame *inner; /* the frame that called malloc (before folding) */
    uint64_t hash;
    uint32_t *raw;
    size_t nraw, capraw;
    /* judged */
    enum mra_rec rec;
    bool thread_safe;
    enum mra_pattern pattern;
    double saving;
    int64_t mem_delta;
    bool retention;
    char *reason;
};

struct work {
    const struct mra_frame **fpool;
    size_t nf, capf;
    struct msite *ms;
    size_t n, cap;
    size_t *tab;                 /* hash of frame sequences -> index + 1 */
    size_t tabcap;
    const char **folded;
    size_t nfolded, capfolded;
};

static int push_frames(struct work *w, const struct mra_frame **f, unsigned n, size_t *at)
{
    if (w->nf + n > w->capf) {
        size_t nc = w->capf ? w->capf : 4096;
        while (nc < w->nf + n)
            nc *= 2;
        const struct mra_frame **p = realloc(w->fpool, nc * sizeof *p);
        if (!p)
            return -1;
        w->fpool = p;
        w->capf = nc;
    }
    memcpy(w->fpool + w->nf, f, n * sizeof *f);
    *at = w->nf;
    w->nf += n;
    return 0;
}

static uint64_t hash_frames(const struct mra_frame **f, unsigned n)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
    for (unsigned i = 0; i < n; i++) {
        h ^= (uint64_t)(uintptr_t)f[i];
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    return h;
}

static int add_raw(struct msite *m, uint32_t id)
{
    if (m->nraw == m->capraw) {
        size_t nc = m->capraw ? 2 * m->capraw : 2;
        uint32_t *r = realloc(m->raw, nc * sizeof *r);
        if (!r)
            return -1;
        m->raw = r;
        m->capraw = nc;
    }
    m->raw[m->nraw++] = id;
    return 0;
}

static int cmp_sc(const void *a, const void *b)
{
    const struct mra_size_count *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return x->size < y->size ? -1 : x->size > y->size;
}

static void merge_stats(struct mra_site_stats *d, const struct mra_site_stats *s)
{
    /* sizes: the union of both tables, the most frequent MRA_SIZES kept */
    struct mra_size_count all[2 * MRA_SIZES];
    unsigned n = 0;
    for (unsigned i = 0; i < d->nsizes; i++)
        all[n++] = d->sizes[i];
    uint64_t other = d->other_sizes_count + s->other_sizes_count;
    for (unsigned i = 0; i < s->nsizes && i < MRA_SIZES; i++) {
        unsigned j = 0;
        while (j < n && all[j].size != s->sizes[i].size)
            j++;
        if (j < n)
            all[j].count += s->sizes[i].count;
        else
            all[n++] = s->sizes[i];
    }
    qsort(all, n, sizeof *all, cmp_sc);
    bool overflow = d->sizes_overflow || s->sizes_overflow;
    if (n > MRA_SIZES) {
        for (unsigned i = MRA_SIZES; i < n; i++)
            other += all[i].count;
        n = MRA_SIZES;
        overflow = true;
    }
    memcpy(d->sizes, all, n * sizeof *all);
    d->nsizes = n;
    d->sizes_overflow = overflow;
    d->other_sizes_count = other;
    /* the rest as the recorder merges a thread's figures */
    mra_site_stats_add(d, s);
}

static int add_folded(struct work *w, const char *name)
{
    if (!name)
        return 0;
    for (size_t i = 0; i < w->nfolded; i++)
        if (w->folded[i] == name)
            return 0;
    if (w->nfolded == w->capfolded) {
        size_t nc = w->capfolded ? 2 * w->capfolded : 16;
        const char **p = realloc(w->folded, nc * sizeof *p);
        if (!p)
            return -1;
        w->folded = p;
        w->capfolded = nc;
    }
    w->folded[w->nfolded++] = name;
    return 0;
}

static int tab_grow(struct work *w)
{
    size_t nc = w->tabcap ? 2 * w->tabcap : 1024;
    size_t *t = calloc(nc, sizeof *t);
    if (!t)
        return -1;
    for (size_t i = 0; i < w->n; i++) {
        size_t j = w->ms[i].hash & (nc - 1);
        while (t[j])
            j = (j + 1) & (nc - 1);
        t[j] = i + 1;
    }
    free(w->tab);
    w->tab = t;
    w->tabcap = nc;
    return 0;
}

static const void *fkey(const struct mra_frame *f)
{
    /* functions are interned strings: one pointer per name */
    return f->function ? (const void *)f->function : (const void *)f;
}

/* One raw site into the merged ones. */
static int take_raw(struct work *w, const struct mra_raw_site *r, uint32_t hdepth, struct mra_symbols *sym,
                    const struct mra_options *o)
{
    enum { MAXL = 512 };
    const struct mra_frame *l[MAXL];
    unsigned n = 0;
    for (uint32_t k = 0; k < r->s.nframes && n < MAXL; k++) {
        unsigned ni = 0;
        const struct mra_frame *f = mra_symbols_inline(sym, r->frames[k], &ni);
        for (unsigned i = 0; i < ni && n < MAXL; i++)
            l[n++] = &f[i];
    }
    /* fold leading wrappers (keep at least one frame) */
    unsigned start = 0;
    const char *as;
    for (;;) {
        if (start + 1 < n && is_wrapper(l[start], o, &as)) {
            if (add_folded(w, as) != 0)
                return -1;
            start++;
            continue;
        }
        /* frames without a name (static functions of a stripped library:
         * SQLite's sqlite3MemMalloc) right before a named wrapper of the
         * same module are the wrapper's own */
        unsigned k = start;
        while (k < n && k < start + 3 && !l[k]->function && l[k]->module == l[start]->module && l[k]->module)
            k++;
        if (k > start && k + 1 < n && l[k]->function && l[k]->module == l[start]->module &&
            is_wrapper(l[k], o, &as)) {
            if (add_folded(w, as) != 0)
                return -1;
            start = k + 1;
            continue;
        }
        break;
    }
    /* collapse recursion: a function met again (direct or mutual
     * recursion, any period) closes a loop; the loop is dropped and the
     * function's innermost frame kept */
    const struct mra_frame *c[MAXL];
    unsigned nc = 0;
    for (unsigned i = start; i < n; i++) {
        unsigned j = nc;
        if (l[i]->function)
            for (j = 0; j < nc; j++)
                if (fkey(c[j]) == fkey(l[i]) && c[j]->module == l[i]->module)
                    break;
        if (j < nc) {
            nc = j + 1;
            continue;
        }
        c[nc++] = l[i];
    }
    /* the start-up frames below main or a thread's function (libc's
     * __libc_start_main, start_thread, clone; _start) say nothing */
    while (nc > 1 && (module_is_folded(c[nc - 1]->module) ||
                      (c[nc - 1]->function && strcmp(c[nc - 1]->function, "_start") == 0)))
        nc--;
    /* every frame a wrapper: the recorder's stack ended inside one */
    bool unresolved = start + 1 == n && n > 0 && is_wrapper(l[start], o, &as);
    bool cut = r->s.nframes >= hdepth && nc < o->depth;
    if (nc > o->depth)
        nc = o->depth;

    uint64_t h = hash_frames(c, nc);
    if (2 * (w->n + 1) > w->tabcap && tab_grow(w) != 0)
        return -1;
    size_t j = h & (w->tabcap - 1);
    while (w->tab[j]) {
        struct msite *m = &w->ms[w->tab[j] - 1];
        if (m->hash == h && m->nfr == nc && memcmp(w->fpool + m->fr, c, nc * sizeof *c) == 0) {
            merge_stats(&m->s, &r->s);
            m->cut = m->cut && cut;
            m->unresolved = m->unresolved || unresolved;
            return add_raw(m, r->s.id);
        }
        j = (j + 1) & (w->tabcap - 1);
    }
    if (w->n == w->cap) {
        size_t ncap = w->cap ? 2 * w->cap : 256;
        struct msite *p = realloc(w->ms, ncap * sizeof *p);
        if (!p)
            return -1;
        w->ms = p;
        w->cap = ncap;
    }
    struct msite *m = &w->ms[w->n];
    memset(m, 0, sizeof *m);
    m->s = r->s;
    m->nfr = nc;
    m->cut = cut;
    m->unresolved = unresolved;
    m->inner = n > 0 ? l[0] : NULL;
    m->hash = h;
    if (push_frames(w, c, nc, &m->fr) != 0 || add_raw(m, r->s.id) != 0)
        return -1;
    w->tab[j] = ++w->n;
    return 0;
}

static const struct work *sort_w;

static int cmp_frames_idx(const void *a, const void *b)
{
    const struct msite *x = &sort_w->ms[*(const size_t *)a], *y = &sort_w->ms[*(const size_t *)b];
    unsigned n = x->nfr < y->nfr ? x->nfr : y->nfr;
    for (unsigned i = 0; i < n; i++) {
        uintptr_t p = (uintptr_t)sort_w->fpool[x->fr + i], q = (uintptr_t)sort_w->fpool[y->fr + i];
        if (p != q)
            return p < q ? -1 : 1;
    }
    return x->nfr < y->nfr ? -1 : x->nfr > y->nfr;
}

static bool is_prefix(const struct work *w, const struct msite *p, const struct msite *m)
{
    return p->nfr < m->nfr && memcmp(w->fpool + p->fr, w->fpool + m->fr, p->nfr * sizeof *w->fpool) == 0;
}

/* Step 5: cut sites into the one site that extends them. */
static int merge_cut(struct work *w)
{
    bool any = false;
    for (size_t i = 0; i < w->n && !any; i++)
        any = w->ms[i].cut;
    if (!any)
        return 0;
    size_t *idx = malloc(w->n * sizeof *idx);
    if (!idx)
        return -1;
    for (size_t i = 0; i < w->n; i++)
        idx[i] = i;
    sort_w = w;
    qsort(idx, w->n, sizeof *idx, cmp_frames_idx);
    /* in this order, the sites a site is a prefix of follow it */
    for (size_t i = w->n; i-- > 0;) {
        struct msite *p = &w->ms[idx[i]];
        if (!p->cut)
            continue;
        size_t target = SIZE_MAX, count = 0;
        for (size_t k = i + 1; k < w->n && is_prefix(w, p, &w->ms[idx[k]]); k++) {
            if (w->ms[idx[k]].dead)
                continue;
            /* a site extending another extender is the same candidate */
            if (target != SIZE_MAX && is_prefix(w, &w->ms[target], &w->ms[idx[k]]))
                continue;
            target = idx[k];
            if (++count > 1)
                break;
        }
        if (count == 1) {
            struct msite *t = &w->ms[target];
            merge_stats(&t->s, &p->s);
            for (size_t k = 0; k < p->nraw; k++)
                if (add_raw(t, p->raw[k]) != 0) {
                    free(idx);
                    return -1;
                }
            p->dead = true;
        }
    }
    free(idx);
    return 0;
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
 * repeated batch costs, which glibc may have trimmed and faults in again. */
static double glibc_cost(const struct mra_site_stats *s, const struct mra_costs *c, enum mra_pattern pat,
                         unsigned cl)
{
    if (pat != MRA_PAT_BATCH || !(c->glibc_batch_kept[cl] > 0) || s->bytes == 0)
        return c->glibc[pat][cl];
    double repeated = 1 - (double)s->arena_peak_bytes / (double)s->bytes;
    if (repeated < 0)
        repeated = 0;
    /* never above the repeated batch's cost: below the trim threshold the
     * two are one cost measured twice */
    double kept = fmin(c->glibc_batch_kept[cl], c->glibc[pat][cl]);
    return kept + repeated * (c->glibc[pat][cl] - kept);
}

/* The predicted saving of serving m's allocations from r instead of
 * glibc: per size in the site's table, count x glibc's cost of the
 * pattern at the size's class, the sizes not in the table at their mean,
 * never-freed objects less half of glibc's pair each (the program never
 * paid their free); less memres' cost of the same allocations.  (The
 * run's own timed samples of glibc, which the report shows beside it, are
 * not used: under the recorder glibc serves blocks 32 bytes larger in a
 * working set the recorder shares, and on the known-answer programs they
 * came to 0.2x-5x the measured saving, where the calibration came to
 * 0.04x-1.1x, never above.) */
static double saving_of(const struct msite *m, const struct mra_costs *c, enum mra_rec r, bool ts,
                        enum mra_pattern pat)
{
    const double *mc = memres_costs(c, r, ts);
    if (!mc)
        return 0;
    const struct mra_site_stats *s = &m->s;
    double glibc = 0, memres = 0, counted = 0, counted_bytes = 0;
    for (unsigned i = 0; i < s->nsizes; i++) {
        unsigned cl = mra_cost_class(s->sizes[i].size);
        if (cl >= MRA_COST_CLASSES)
            cl = MRA_COST_CLASSES - 1;
        glibc += (double)s->sizes[i].count * glibc_cost(s, c, pat, cl);
        memres += (double)s->sizes[i].count * mc[cl];
        counted += (double)s->sizes[i].count;
        counted_bytes += (double)s->sizes[i].count * (double)s->sizes[i].size;
    }
    double rest = (double)s->allocations - counted;
    if (rest > 0.5) {
        double mean = ((double)s->bytes - counted_bytes) / rest;
        if (mean < 0)
            mean = (double)s->bytes / (double)s->allocations;
        unsigned cl = mra_cost_class((uint64_t)mean);
        if (cl >= MRA_COST_CLASSES)
            cl = MRA_COST_CLASSES - 1;
        glibc += rest * glibc_cost(s, c, pat, cl);
        memres += rest * mc[cl];
    }
    if (s->allocations && s->live_objects) {
        double mean = (double)s->bytes / (double)s->allocations;
        unsigned cl = mra_cost_class((uint64_t)mean);
        if (cl >= MRA_COST_CLASSES)
            cl = MRA_COST_CLASSES - 1;
        glibc -= (double)s->live_objects * 0.5 * glibc_cost(s, c, pat, cl);
    }
    return glibc - memres;
}

static void judge(struct msite *m, const struct mra_analysis *a, const struct mra_costs *c,
                  const struct mra_thresholds *th)
{
    const struct mra_site_stats *s = &m->s;
    double n = (double)s->allocations;
    double never = share(s->live_objects, s->allocations);
    double together = share(s->freed_together + s->live_objects, s->allocations);
    double stack = share(s->stack_like, s->frees);
    double remote = share(s->remote_frees, s->frees);
    double dominant = s->nsizes ? share(s->sizes[0].count, s->allocations) : 0;
    uint64_t dsize = s->nsizes ? s->sizes[0].size : 0;
    double mean = n > 0 ? (double)s->bytes / n : 0;
    char rule[400];
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
    m->rec = MRA_NONE;
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
    } else if (!ts && together >= th->together_share) {
        r = MRA_ARENA;
        snprintf(rule, sizeof rule,
                 "%.1f%% freed together (in bursts that leave nothing younger of the site live) or never freed (%.1f%% never freed; "
                 "together_share >= %.0f%%): reset the arena where the burst frees%s",
                 100 * together, 100 * never, 100 * th->together_share, thr);
    } else if (dominant >= th->dominant_size_share && dsize <= th->max_small_size) {
        r = MRA_OBJPOOL;
        m->thread_safe = ts;
        snprintf(rule, sizeof rule,
                 "%.1f%% of allocations are %llu bytes (dominant_size_share >= %.0f%%, <= max_small_size %llu), %s",
                 100 * dominant, (unsigned long long)dsize, 100 * th->dominant_size_share,
                 (unsigned long long)th->max_small_size, how);
    } else if (s->max_size <= th->max_small_size) {
        r = MRA_POOLS;
        m->thread_safe = ts;
        snprintf(rule, sizeof rule,
                 "%s%llu..%llu bytes (<= max_small_size %llu), no size above %.0f%% (dominant_size_share), %s",
                 s->sizes_overflow || s->nsizes > 1 ? "sizes " : "size ", (unsigned long long)s->min_size,
                 (unsigned long long)s->max_size, (unsigned long long)th->max_small_size,
                 100 * th->dominant_size_share, how);
    } else {
        m->reason = dupf("none: sizes up to %llu bytes (above max_small_size %llu), %s",
                         (unsigned long long)s->max_size, (unsigned long long)th->max_small_size, how);
        return;
    }
    if (ts)
        m->pattern = MRA_PAT_REMOTE;

    double save = saving_of(m, c, r, m->thread_safe, m->pattern);
    double prog_ns = a->program_ns > 0 ? a->program_ns : 1;
    const char *name = r == MRA_POOLS && m->thread_safe ? "pools (thread-safe)"
                       : r == MRA_OBJPOOL && m->thread_safe ? "objpool (thread-safe)"
                                                            : mra_rec_name(r);
    static const char *const patname[] = { "stack-like", "freed together", "random order", "remote" };
    if (c->glibc[m->pattern][MRA_COST_CLASSES / 2] <= 0) {
        m->reason = dupf("none: would be %s (%s), but there are no costs of this machine to predict a saving",
                         name, rule);
        m->thread_safe = false;
        return;
    }
    if (save <= 0) {
        m->reason = dupf("none: would be %s (%s), but memres is not faster for this pattern here "
                         "(%s, glibc vs memres costs of this machine: %.1f ms lost)",
                         name, rule, patname[m->pattern], -save / 1e6);
        m->thread_safe = false;
        return;
    }
    if (save < th->min_share * prog_ns) {
        m->reason = dupf("none: would be %s (%s), but it saves %.2f ms, %.2f%% of the run (below min_share %g%%)",
                         name, rule, save / 1e6, 100 * save / prog_ns, 100 * th->min_share);
        m->thread_safe = false;
        return;
    }
    m->rec = r;
    m->saving = save;
    m->reason = dupf("%s: %s; %llu allocations (>= %llu), saves %.2f ms = %.1f%% of the run (>= %g%%), "
                     "glibc costed as %s",
                     name, rule, (unsigned long long)s->allocations, (unsigned long long)th->min_allocations,
                     save / 1e6, 100 * save / prog_ns, 100 * th->min_share, patname[m->pattern]);

    /* memory: what the plan holds at its peak minus what malloc held */
    double objs = (double)s->peak_live_objects;
    double peak = (double)s->peak_live_bytes;
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

static void make_sketch(const struct msite *m, char sk[2][160], const struct mra_thresholds *th)
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

static void work_free(struct work *w)
{
    for (size_t i = 0; i < w->n; i++) {
        free(w->ms[i].raw);
        free(w->ms[i].reason);
    }
    free(w->ms);
    free(w->fpool);
    free(w->tab);
    free(w->folded);
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

static int behind_functions(struct work *w, struct mra_analysis *a, const struct mra_costs *c,
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
            double sv = saving_of(m, c, MRA_POOLS, ts, ts ? MRA_PAT_REMOTE : m->pattern);
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
            a->nbehind--;
            a->behind[lo] = a->behind[a->nbehind];
        }
        struct mra_behind *b = &a->behind[a->nbehind++];
        memset(b, 0, sizeof *b);
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

int mra_analyze(const struct mra_profile *p, struct mra_symbols *sym, const struct mra_costs *c,
                const struct mra_options *o, struct mra_analysis *a)
{
    memset(a, 0, sizeof *a);
    a->h = p->h;
    /* The program's own time: the recorded run less the recorder's time in
     * its hooks (never below a tenth of the recorded run: the sample is an
     * estimate). */
    double rec = p->h.end_ns > p->h.start_ns ? (double)(p->h.end_ns - p->h.start_ns) : 0;
    a->recorded_ns = rec;
    a->program_ns = rec - (double)p->h.recorder_ns;
    if (a->program_ns < rec / 10)
        a->program_ns = rec / 10;
    a->costs = *c;
    a->opts = *o;
    if (a->opts.depth == 0)
        a->opts.depth = 1;
    if (a->opts.depth > MRA_MAX_DEPTH)
        a->opts.depth = MRA_MAX_DEPTH;
    o = &a->opts;

    struct work w = { 0 };
    for (size_t i = 0; i < p->nsites; i++) {
        if (take_raw(&w, &p->sites[i], p->h.depth, sym, o) != 0)
            goto nomem;
        if ((i & 4095) == 4095)
            mra_progress("sites", i + 1, p->nsites);
    }
    if (merge_cut(&w) != 0)
        goto nomem;

    size_t live = 0;
    for (size_t i = 0; i < w.n; i++) {
        if (w.ms[i].dead)
            continue;
        judge(&w.ms[i], a, c, &o->th);
        if (!w.ms[i].reason)
            goto nomem;
        if (w.ms[i].unresolved) {
            char *r2 = dupf("%s; every recorded frame is a wrapper or in libc: the caller is beyond the recorded depth, or the recorder could not unwind", w.ms[i].reason);
            if (!r2)
                goto nomem;
            free(w.ms[i].reason);
            w.ms[i].reason = r2;
        }
        live++;
        if ((i & 4095) == 4095)
            mra_progress("rules", i + 1, w.n);
    }
    if (behind_functions(&w, a, c, &o->th) != 0)
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
        s->thread_safe = m->thread_safe;
        s->pattern = m->pattern;
        snprintf(s->reason, sizeof s->reason, "%s", m->reason);
        s->predicted_saving_ns = m->saving;
        s->memory_delta_bytes = m->mem_delta;
        s->retention_warning = m->retention;
        make_sketch(m, s->sketch, &o->th);
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
    /* the raw lists not handed on */
    work_free(&w);
    return 0;

nomem:
    work_free(&w);
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
    free(a->folded);
    a->sites = NULL;
    a->folded = NULL;
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
