/* SPDX-License-Identifier: MIT */
/* advise/analyze/replay.c -- `memres-advise replay TRACE [--json FILE]
 * [--runs N]`: the program's allocations replayed
 * against glibc and against the recommended plan on the real memres
 * allocators, the replayed saving printed beside the predicted one.
 *
 * The replay: the same sequence, run against (a) glibc malloc, free,
 * realloc and posix_memalign, (b) the plan: per site of the report (all
 * the raw sites, the call stacks, folded into it share it: the advice is
 * applied at a line of the program) an allocator of its own, created at the
 * site's first allocation:
 *   arena         one mr_arena (default options); a free does nothing;
 *                 when the site's live count returns to 0 the arena is
 *                 reset; a realloc is mr_arena_realloc.
 *   arena-rewind  one mr_arena and a stack of marks: a mark is saved before
 *                 each allocation and each realloc (at most MARK_DEPTH deep;
 *                 a realloc allocates anew, without copying), and a free that
 *                 brings the site's live count back to the count at the
 *                 newest mark rewinds to it; at 0 without a mark the arena
 *                 is reset.  This
 *                 goes by count, not by object, as a program whose frees
 *                 are stack-like would; a free out of stack order rewinds
 *                 the youngest object's bytes instead (harmless here: the
 *                 replay writes an object only when it is allocated).
 *   objpool       one mr_objpool whose objects are the site's largest size
 *                 in the trace; larger requests (a realloc past it) go to
 *                 malloc; thread-safe when the plan says so.
 *   pools         one mr_pools per site (thread-safe when the plan says so;
 *                 the replay is single-threaded, so remote frees are not
 *                 replayed as such); frees through mr_pools_free with the
 *                 object's size, reallocs through mr_pools_realloc.
 * Allocations with an alignment above 16 stay on glibc in both runs; a
 * realloc to 0 bytes reallocs to 1 (the object lives on in the trace).
 * Sites outside the plan use glibc in both.  Every allocation is written
 * (a byte per 4 KiB page, as calibrate.c does), and the bookkeeping is the
 * same in both runs: only the allocator calls differ.  Runs alternate
 * glibc, plan, glibc, plan...; each is timed by the thread's CPU time (page
 * faults included), and the report gives medians.  A site's replayed
 * saving comes from further alternating runs with that site alone on the
 * plan (the first MAX_ALONE sites by predicted saving), as its predicted
 * saving supposes.  A trace whose live memory peaks above half of this
 * machine's is refused.  The trace is decoded by trace.c. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "trace.h"

#define MARK_DEPTH ((size_t)1 << 24) /* marks per arena-rewind site, at most */
#define PAGE 4096u

/* ---- the replay ---- */

static inline void touch(void *p, uint64_t size)
{
    volatile unsigned char *b = p;
    for (uint64_t i = 0; i < size; i += PAGE)
        b[i] = (unsigned char)i;
}

struct run_state {
    void **ptr;                  /* per object; NULL: dead */
    uint64_t *size;              /* its size now */
    uint8_t *fb;                 /* 1: from glibc (in the plan run: a fallback) */
};

static size_t objpool_per_block(size_t size)
{
    size_t n = ((size_t)64 << 10) / (size ? size : 1);
    return n < 8 ? 8 : n > 1024 ? 1024 : n;
}

static void *glibc_aligned(uint64_t size, uint64_t align)
{
    void *p = NULL;
    if (align < sizeof(void *))
        align = sizeof(void *);
    return posix_memalign(&p, (size_t)align, (size_t)size) == 0 ? p : NULL;
}

/* Creates s's allocator.  0, or -1. */
static int slot_open(struct slot *s)
{
    switch (s->rec) {
    case MRA_ARENA:
    case MRA_ARENA_REWIND:
        s->arena = mr_arena_create(NULL);
        return s->arena ? 0 : -1;
    case MRA_OBJPOOL: {
        mr_objpool_options o = {0};
        size_t size = s->max_size ? (size_t)s->max_size : 1;
        o.thread_safe = s->ts;
        o.objects_per_block = objpool_per_block(size);
        s->objpool = mr_objpool_create(size, 16, &o);
        return s->objpool ? 0 : -1;
    }
    case MRA_POOLS: {
        mr_pools_options o = {0};
        o.thread_safe = s->ts;
        s->pools = mr_pools_create(&o);
        return s->pools ? 0 : -1;
    }
    default:
        return 0;
    }
}

static void slot_close(struct slot *s)
{
    mr_arena_destroy(s->arena);
    mr_objpool_destroy(s->objpool);
    mr_pools_destroy(s->pools);
    free(s->marks);
    free(s->mark_live);
    s->arena = NULL;
    s->objpool = NULL;
    s->pools = NULL;
    s->marks = NULL;
    s->mark_live = NULL;
    s->nmarks = s->capmarks = 0;
    s->live = 0;
}

/* Saves a mark before an allocation at an arena-rewind site (none beyond
 * MARK_DEPTH, or without memory for the stack: that allocation then waits
 * for an older mark or the reset). */
static inline void push_mark(struct slot *s)
{
    if (MR_UNLIKELY(s->nmarks == s->capmarks)) {
        size_t cap = s->capmarks ? s->capmarks * 2 : 256;
        if (cap > MARK_DEPTH)
            return;
        mr_arena_mark *m = realloc(s->marks, cap * sizeof *m);
        if (!m)
            return;
        s->marks = m;
        int64_t *l = realloc(s->mark_live, cap * sizeof *l);
        if (!l)
            return;
        s->mark_live = l;
        s->capmarks = cap;
    }
    s->marks[s->nmarks] = mr_arena_save(s->arena);
    s->mark_live[s->nmarks++] = s->live - 1;
}

static inline bool slot_ready(struct slot *s)
{
    return s->arena || s->objpool || s->pools;
}

/* One event (ev[i], and ev[i + 1] for an aligned allocation): 0, or -1
 * (out of memory).  *i is advanced past the event. */
static inline int step(struct trace *t, struct run_state *st, size_t *ip, bool plan)
{
    const struct rev *e = &t->ev[*ip];
    uint32_t kind = e->hdr & 3, slot = e->hdr >> 2, obj = e->obj;
    struct slot *s = &t->slots[slot];
    bool mine = plan && s->rec != MRA_NONE && s->on;
    uint64_t size = e->size;
    void *p;
    (*ip)++;
    switch (kind) {
    case R_ALLOC:
    case R_ALIGNED: {
        uint64_t align = 16;
        if (kind == R_ALIGNED)
            align = t->ev[(*ip)++].size;
        s->live++;
        if (!mine || align > 16) {
            p = align > 16 ? glibc_aligned(size, align) : malloc((size_t)size);
            st->fb[obj] = 1;
        } else {
            if (MR_UNLIKELY(!slot_ready(s)) && slot_open(s) != 0)
                return -1;
            st->fb[obj] = 0;
            switch (s->rec) {
            case MRA_ARENA:
                p = mr_arena_alloc(s->arena, (size_t)size);
                break;
            case MRA_ARENA_REWIND:
                push_mark(s);
                p = mr_arena_alloc(s->arena, (size_t)size);
                break;
            case MRA_OBJPOOL:
                if (size <= s->max_size)
                    p = mr_objpool_alloc(s->objpool);
                else {
                    p = malloc((size_t)size);
                    st->fb[obj] = 1;
                }
                break;
            default:
                p = mr_pools_alloc(s->pools, (size_t)size, 16);
                break;
            }
        }
        if (MR_UNLIKELY(!p))
            return -1;
        touch(p, size);
        st->ptr[obj] = p;
        st->size[obj] = size;
        return 0;
    }
    case R_FREE:
        p = st->ptr[obj];
        st->ptr[obj] = NULL;
        s->live--;
        if (st->fb[obj]) {
            free(p);
            return 0;
        }
        switch (s->rec) {
        case MRA_ARENA:
            if (s->live == 0)
                mr_arena_reset(s->arena);
            break;
        case MRA_ARENA_REWIND:
            if (s->nmarks > 0 && s->mark_live[s->nmarks - 1] == s->live)
                mr_arena_rewind(s->arena, s->marks[--s->nmarks]);
            else if (s->live == 0) { /* what no mark covers (beyond MARK_DEPTH) */
                mr_arena_reset(s->arena);
                s->nmarks = 0;
            }
            break;
        case MRA_OBJPOOL:
            mr_objpool_free(s->objpool, p);
            break;
        default:
            mr_pools_free(s->pools, p, (size_t)st->size[obj], 16);
            break;
        }
        return 0;
    default: { /* R_REALLOC */
        uint64_t old = st->size[obj];
        void *q;
        p = st->ptr[obj];
        if (st->fb[obj])
            q = realloc(p, size ? (size_t)size : 1);
        else
            switch (s->rec) {
            case MRA_ARENA:
                q = mr_arena_realloc(s->arena, p, (size_t)old, (size_t)size);
                break;
            case MRA_ARENA_REWIND:
                /* no copy: a rewind by count may have given the old bytes back */
                push_mark(s);
                q = mr_arena_alloc(s->arena, (size_t)size);
                break;
            case MRA_OBJPOOL:
                if (size <= s->max_size)
                    q = p;
                else {
                    q = malloc((size_t)size);
                    if (q) {
                        memcpy(q, p, (size_t)(old < s->max_size ? old : s->max_size));
                        mr_objpool_free(s->objpool, p);
                        st->fb[obj] = 1;
                    }
                }
                break;
            default:
                q = mr_pools_realloc(s->pools, p, (size_t)old, (size_t)size, 16);
                break;
            }
        if (MR_UNLIKELY(!q))
            return -1;
        touch(q, size);
        st->ptr[obj] = q;
        st->size[obj] = size;
        return 0;
    }
    }
}

/* Replays t->ev once: on glibc, or on the plan's allocators for the slots
 * that are on.  The time of the whole loop in *ns.  0, or -1. */
static int replay_once(struct trace *t, bool plan, double *ns)
{
    struct run_state st;
    size_t n = (size_t)t->nobjects ? (size_t)t->nobjects : 1;
    st.ptr = calloc(n, sizeof *st.ptr);
    st.size = malloc(n * sizeof *st.size);
    st.fb = malloc(n);
    int rc = 0;
    if (!st.ptr || !st.size || !st.fb)
        rc = -1;
    for (size_t k = 0; k < t->nslots; k++)
        t->slots[k].live = 0;
    uint64_t t0 = mra_cpu_ns(); /* a replay's cost, whatever else runs on the machine */
    if (rc == 0)
        for (size_t i = 0; i < t->nev;)
            if (MR_UNLIKELY(step(t, &st, &i, plan) != 0)) {
                rc = -1;
                break;
            }
    *ns = (double)(mra_cpu_ns() - t0);
    /* untimed: what is still live, and the allocators */
    if (st.ptr && st.fb)
        for (size_t o = 0; o < t->nobjects; o++)
            if (st.ptr[o] && st.fb[o])
                free(st.ptr[o]);
    for (size_t k = 0; k < t->nslots; k++)
        slot_close(&t->slots[k]);
    free(st.ptr);
    free(st.size);
    free(st.fb);
    if (rc != 0)
        fprintf(stderr, "memres-advise replay: %s: out of memory replaying the trace\n", t->path);
    return rc;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* A site of the report: the plan's raw sites with its number. */
struct rsite {
    unsigned report;
    enum mra_rec rec;
    bool ts;
    double predicted_ns;         /* every entry of the plan carries its report site's */
    uint64_t allocations;
    double saving_ns;            /* replayed: median of glibc runs - median of runs with it alone on the plan */
    bool replayed;               /* false: not replayed alone (beyond MAX_ALONE sites) */
    uint32_t *raw;
    size_t nraw;
    size_t slot;
};

#define MAX_ALONE 16             /* report sites replayed alone, by predicted saving */

static int cmp_rsite_predicted(const void *a, const void *b)
{
    const struct rsite *x = a, *y = b;
    if (x->predicted_ns != y->predicted_ns)
        return x->predicted_ns > y->predicted_ns ? -1 : 1;
    return x->report < y->report ? -1 : x->report > y->report;
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: memres-advise replay TRACE [--json FILE] [--runs N]\n"
               "  replays TRACE (memres-advise --trace) against glibc malloc and against the\n"
               "  plan the analysis appended to it, then each site of the plan alone; prints\n"
               "  the replayed saving per site beside the predicted one (medians of N\n"
               "  alternating runs each, default 3)\n");
}

/* The report sites of the plan (a slot each), by predicted saving. */
static struct rsite *report_sites(struct trace *t, size_t *n)
{
    struct rsite *rs = calloc(t->nslots, sizeof *rs);
    uint32_t *raw = malloc((t->npraw + 1) * sizeof *raw);
    size_t nrs = 0, nraw = 0;
    if (!rs || !raw) {
        free(rs);
        free(raw);
        return NULL;
    }
    for (size_t k = 1; k < t->nslots; k++) {
        const struct slot *s = &t->slots[k];
        struct rsite *r = &rs[nrs++];
        r->report = s->report;
        r->rec = s->rec;
        r->ts = s->ts;
        r->predicted_ns = s->predicted_ns;
        r->allocations = s->allocations;
        r->slot = k;
    }
    qsort(rs, nrs, sizeof *rs, cmp_rsite_predicted);
    for (size_t i = 0; i < nrs; i++) {
        rs[i].raw = raw + nraw;
        for (size_t j = 0; j < t->npraw; j++)
            if (t->praw[j].slot == rs[i].slot)
                raw[nraw++] = t->praw[j].raw;
        rs[i].nraw = (size_t)(raw + nraw - rs[i].raw);
    }
    if (nrs == 0)
        free(raw);
    *n = nrs;
    return rs;
}

int mra_replay_main(int argc, char **argv)
{
    const char *path = NULL, *json = NULL;
    int runs = 3;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0 && i + 1 < argc)
            json = argv[++i];
        else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
            char *e;
            long r = strtol(argv[++i], &e, 10);
            if (*e || r < 1 || r > 99) {
                fprintf(stderr, "memres-advise replay: --runs takes 1..99\n");
                return 2;
            }
            runs = (int)r;
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (argv[i][0] == '-' || path) {
            usage(stderr);
            return 2;
        } else
            path = argv[i];
    }
    if (!path) {
        usage(stderr);
        return 2;
    }
    struct trace t;
    memset(&t, 0, sizeof t);
    t.path = path;
    if (mra_trace_decode(&t) != 0) {
        mra_trace_free(&t);
        return 1;
    }
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    if (pages > 0 && psize > 0 && t.peak_live_bytes / 2 > (uint64_t)pages / 4 * (uint64_t)psize) {
        fprintf(stderr, "memres-advise replay: %s: the program's peak of live memory, %llu MiB, is more than half "
                        "of this machine's: not replayed\n", path, (unsigned long long)(t.peak_live_bytes >> 20));
        mra_trace_free(&t);
        return 1;
    }
    if (!t.have_plan)
        fprintf(stderr, "memres-advise replay: %s has no plan (the analysis of a run with --trace appends it): "
                        "replaying glibc against itself\n", path);
    size_t nrs = 0;
    struct rsite *rs = report_sites(&t, &nrs);
    double *g = malloc((size_t)runs * 3 * sizeof *g);
    if (!rs || !g) {
        mra_trace_oom(&t);
        if (rs && nrs)
            free(rs[0].raw);
        free(rs);
        free(g);
        mra_trace_free(&t);
        return 1;
    }
    double *pl = g + runs, *alone = g + 2 * runs;
    int rc = 0;

    /* glibc and the whole plan, alternating */
    for (size_t k = 0; k < t.nslots; k++)
        t.slots[k].on = true;
    for (int r = 0; r < runs && rc == 0; r++)
        if (replay_once(&t, false, &g[r]) != 0 || replay_once(&t, true, &pl[r]) != 0)
            rc = 1;
    double glibc_ns = rc == 0 ? median(g, runs) : 0, plan_ns = rc == 0 ? median(pl, runs) : 0;
    /* each report site alone (one alone: the whole plan), alternating with glibc */
    size_t nalone = nrs > 1 ? (nrs < MAX_ALONE ? nrs : MAX_ALONE) : 0;
    int aruns = t.nev > 20000000 ? 1 : runs;
    double *ga = malloc((size_t)runs * sizeof *ga);
    if (!ga)
        rc = mra_trace_oom(&t) != 0;
    for (size_t i = 0; i < nalone && rc == 0; i++) {
        for (size_t k = 1; k < t.nslots; k++)
            t.slots[k].on = k == rs[i].slot;
        for (int r = 0; r < aruns && rc == 0; r++)
            if (replay_once(&t, false, &ga[r]) != 0 || replay_once(&t, true, &alone[r]) != 0)
                rc = 1;
        if (rc == 0) {
            rs[i].saving_ns = median(ga, aruns) - median(alone, aruns);
            rs[i].replayed = true;
        }
    }
    if (nrs == 1) {
        rs[0].saving_ns = glibc_ns - plan_ns;
        rs[0].replayed = true;
    }
    free(ga);
    if (rc != 0) {
        if (nrs)
            free(rs[0].raw);
        free(rs);
        free(g);
        mra_trace_free(&t);
        return 1;
    }

    double predicted = 0;
    for (size_t i = 0; i < nrs; i++)
        predicted += rs[i].predicted_ns;
    double saving = glibc_ns - plan_ns;
    FILE *out = stdout;
    fprintf(out, "memres-advise replay: %s: %llu allocations, %llu frees, %llu reallocs in %zu threads; "
                 "plan: %zu sites (%zu raw)\n",
            path, (unsigned long long)t.nallocs, (unsigned long long)t.nfrees, (unsigned long long)t.nreallocs,
            t.nthr, nrs, t.npraw);
    fprintf(out, "  %-6s %-20s %12s %14s %14s\n", "site", "plan", "allocations", "replayed ms", "predicted ms");
    for (size_t i = 0; i < nrs; i++) {
        const struct rsite *r = &rs[i];
        char name[40], rep[32];
        snprintf(name, sizeof name, "%s%s", mra_rec_name(r->rec), r->ts ? " (thread-safe)" : "");
        if (r->replayed)
            snprintf(rep, sizeof rep, "%.3f", r->saving_ns / 1e6);
        else
            snprintf(rep, sizeof rep, "-");
        fprintf(out, "  #%-5u %-20s %12llu %14s %14.3f\n", r->report, name, (unsigned long long)r->allocations, rep,
                r->predicted_ns / 1e6);
    }
    fprintf(out, "total: glibc %.3f ms, plan %.3f ms: replayed saving %.3f ms (%.1f%%), predicted %.3f ms\n",
            glibc_ns / 1e6, plan_ns / 1e6, saving / 1e6, glibc_ns > 0 ? 100 * saving / glibc_ns : 0,
            predicted / 1e6);
    fprintf(out, "(medians of %d alternating runs; a site's saving: the plan with that site alone, %d runs%s)\n", runs,
            nrs > 1 ? aruns : runs, nrs > MAX_ALONE ? "; sites beyond the first 16 not replayed alone" : "");

    if (json) {
        FILE *f = fopen(json, "w");
        if (!f) {
            fprintf(stderr, "memres-advise replay: %s: %s\n", json, strerror(errno));
            rc = 1;
        } else {
            fprintf(f, "{\n  \"version\": 1,\n  \"trace\": ");
            json_str(f, path);
            fprintf(f, ",\n  \"plan\": %s,\n  \"allocations\": %llu,\n  \"frees\": %llu,\n  \"reallocs\": %llu,\n"
                       "  \"threads\": %zu,\n  \"runs\": %d,\n",
                    t.have_plan ? "true" : "false", (unsigned long long)t.nallocs, (unsigned long long)t.nfrees,
                    (unsigned long long)t.nreallocs, t.nthr, runs);
            fprintf(f, "  \"glibc_ms\": %.6f,\n  \"plan_ms\": %.6f,\n  \"replayed_saving_ms\": %.6f,\n"
                       "  \"predicted_saving_ms\": %.6f,\n",
                    glibc_ns / 1e6, plan_ns / 1e6, saving / 1e6, predicted / 1e6);
            fprintf(f, "  \"glibc_runs_ms\": [");
            for (int r = 0; r < runs; r++)
                fprintf(f, "%s%.6f", r ? ", " : "", g[r] / 1e6);
            fprintf(f, "],\n  \"plan_runs_ms\": [");
            for (int r = 0; r < runs; r++)
                fprintf(f, "%s%.6f", r ? ", " : "", pl[r] / 1e6);
            fprintf(f, "],\n  \"sites\": [");
            for (size_t i = 0; i < nrs; i++) {
                const struct rsite *r = &rs[i];
                fprintf(f, "%s\n    {\"id\": %u, \"recommendation\": \"%s\", \"thread_safe\": %s, \"raw_sites\": [",
                        i ? "," : "", r->report, mra_rec_name(r->rec), r->ts ? "true" : "false");
                for (size_t m = 0; m < r->nraw; m++)
                    fprintf(f, "%s%u", m ? ", " : "", r->raw[m]);
                fprintf(f, "], \"allocations\": %llu, \"replayed_saving_ms\": ", (unsigned long long)r->allocations);
                if (r->replayed)
                    fprintf(f, "%.6f", r->saving_ns / 1e6);
                else
                    fprintf(f, "null");
                fprintf(f, ", \"predicted_saving_ms\": %.6f}", r->predicted_ns / 1e6);
            }
            fprintf(f, "%s]\n}\n", nrs ? "\n  " : "");
            if (fclose(f) != 0) {
                fprintf(stderr, "memres-advise replay: %s: write error\n", json);
                rc = 1;
            }
        }
    }
    if (nrs)
        free(rs[0].raw);
    free(rs);
    free(g);
    mra_trace_free(&t);
    return rc;
}
