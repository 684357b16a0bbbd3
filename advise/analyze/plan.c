/* SPDX-License-Identifier: MIT */
/* advise/analyze/plan.c -- the plan that `memres-advise apply` carries out:
 * which call stacks' allocations go to which memres allocator, in the
 * terms the apply runtime (advise/apply/) can check cheaply at run time.
 *
 * A site of the report is folded and merged from raw stacks (the frames
 * the recorder walked, return addresses - 1).  The runtime walks the same
 * frames with the same walker (common/walk.h), but only as deep as it must:
 * the plan's `walk K` is the least depth at which the routes of the
 * profile's raw stacks are told apart: two raw stacks whose first K frames
 * are equal have routes of the same kind ("none" counting as one, and a
 * stack that is not planned counting as what the rules named for its site,
 * so that an arena candidate below the 2% rule may share an arena's
 * prefix -- but in a region, another site's objects that live far longer
 * and come spread over the run weigh 64x: they would keep its blocks
 * live), within 1% of the planned allocations.  Where
 * routes of one kind share a K-prefix (a recursive builder's sites, told
 * apart only by how deep the recursion was), the prefix goes to the one
 * that allocated most.  Stacks whose kinds still differ at the recorded
 * depth go to glibc.  Frames are written as
 * module + file offset, so that another run of the same program (its
 * modules loaded elsewhere) resolves them.
 *
 * The text format, one record a line:
 *   memres-advise-plan 1
 *   walk K
 *   module M PATH                 (M = 0, 1, ...)
 *   route R KIND SIZE SITE        (R = 1, 2, ...; KIND arena, arena-rewind,
 *                                  objpool or pools; SIZE the objpool's
 *                                  object size, else 0; SITE the report's id)
 *   stack R N M:0xOFF ...         (N frames, innermost first)
 * Lines starting with '#' are comments. */
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"

struct pstack {
    const uint64_t *fr;
    unsigned n;
    unsigned route;              /* 0: glibc */
    enum mra_rec kind;           /* the route's; unplanned: its site's candidate (an arena
                                    candidate's objects may share an arena route's prefix) */
    uint64_t allocations;
    double life;                 /* its site's median lifetime in allocations; never freed
                                    (a tenth or more at exit): infinite */
    bool spread;                 /* its site's allocations are spread over the run, not made
                                    in one stretch */
};

static const struct pstack *sort_ps;
static unsigned sort_k;

static int cmp_prefix(const void *a, const void *b)
{
    const struct pstack *x = &sort_ps[*(const size_t *)a], *y = &sort_ps[*(const size_t *)b];
    unsigned nx = x->n < sort_k ? x->n : sort_k, ny = y->n < sort_k ? y->n : sort_k;
    if (nx != ny)
        return nx < ny ? -1 : 1;
    for (unsigned i = 0; i < nx; i++)
        if (x->fr[i] != y->fr[i])
            return x->fr[i] < y->fr[i] ? -1 : 1;
    return 0;
}

/* The group of stacks sharing idx[t]'s k-prefix: idx[t .. *end). */
static size_t group_end(size_t *idx, size_t n, size_t t)
{
    size_t u = t + 1;
    while (u < n && cmp_prefix(&idx[t], &idx[u]) == 0)
        u++;
    return u;
}

/* Another kind's object in a region costs more than its own misrouting:
 * it keeps its block live (one never-freed object in each block of a
 * request loop's temporaries keeps them all); such allocations weigh this
 * much in *lost. */
#define REGION_PIN_WEIGHT 64u

/* The route a group goes to: the route that allocated most among those of
 * the kind that allocated most ("none" included: 0); *lost: the group's
 * allocations of other kinds (weighed REGION_PIN_WEIGHT in a region). */
static unsigned group_route(const struct pstack *ps, const size_t *idx, size_t t, size_t end, uint64_t *lost)
{
    uint64_t by_kind[MRA_RECS] = { 0 }, total = 0;
    for (size_t u = t; u < end; u++) {
        by_kind[ps[idx[u]].kind] += ps[idx[u]].allocations;
        total += ps[idx[u]].allocations;
    }
    enum mra_rec kind = MRA_NONE;
    for (int k = 0; k < MRA_RECS; k++)
        if (by_kind[k] > by_kind[kind])
            kind = (enum mra_rec)k;
    *lost = total - by_kind[kind];
    if (kind == MRA_ARENA || kind == MRA_ARENA_REWIND)
        *lost *= REGION_PIN_WEIGHT;
    if (kind == MRA_NONE)
        return 0;
    unsigned best = 0;
    uint64_t most = 0;
    for (size_t u = t; u < end; u++) {
        if (ps[idx[u]].kind != kind || ps[idx[u]].route == 0)
            continue;
        uint64_t sum = 0;
        for (size_t v = t; v < end; v++)
            if (ps[idx[v]].route == ps[idx[u]].route)
                sum += ps[idx[v]].allocations;
        if (sum > most || best == 0) {
            most = sum;
            best = ps[idx[u]].route;
        }
    }
    /* a region shared with another site's objects that live much longer
     * than its own and come spread over the run: they keep its blocks live
     * (made in one stretch, as binary-trees' long-lived tree, they fill
     * blocks of their own) */
    if (kind == MRA_ARENA || kind == MRA_ARENA_REWIND) {
        double life = 0;
        for (size_t u = t; u < end; u++)
            if (ps[idx[u]].route == best && ps[idx[u]].life > life)
                life = ps[idx[u]].life;
        for (size_t u = t; u < end; u++)
            if (ps[idx[u]].kind == kind && ps[idx[u]].route != best && ps[idx[u]].spread &&
                ps[idx[u]].life > 4 * life + 64)
                *lost += REGION_PIN_WEIGHT * ps[idx[u]].allocations;
    }
    return best;
}

/* Sorts idx by k-prefix; the allocations that the groups' routes would
 * send to an allocator of another kind than their own site's. */
static uint64_t misrouted_at(const struct pstack *ps, size_t *idx, size_t n, unsigned k)
{
    sort_ps = ps;
    sort_k = k;
    qsort(idx, n, sizeof *idx, cmp_prefix);
    uint64_t lost_all = 0;
    for (size_t t = 0; t < n;) {
        size_t end = group_end(idx, n, t);
        uint64_t lost;
        group_route(ps, idx, t, end, &lost);
        lost_all += lost;
        t = end;
    }
    return lost_all;
}

static const struct mra_raw_module *module_of(const struct mra_profile *p, uint64_t a, size_t *m)
{
    for (size_t i = 0; i < p->nmodules; i++)
        if (a >= p->modules[i].lo && a < p->modules[i].hi) {
            *m = i;
            return &p->modules[i];
        }
    return NULL;
}

enum mra_rec mra_plan_kind(const struct mra_site *s, enum mra_plan_mode mode, double cutoff)
{
    switch (mode) {
    case MRA_PLAN_CANDIDATES:
        return s->candidate;
    case MRA_PLAN_TOP_CANDIDATES:
        return s->candidate_saving_ns >= cutoff ? s->candidate : MRA_NONE;
    case MRA_PLAN_RECOMMENDED:
        break;
    }
    return s->rec;
}

static int cmp_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

double mra_plan_cutoff(const struct mra_analysis *a, enum mra_plan_mode mode)
{
    if (mode != MRA_PLAN_TOP_CANDIDATES)
        return 0;
    double *v = malloc((a->nsites ? a->nsites : 1) * sizeof *v);
    if (!v)
        return 0; /* every candidate */
    size_t n = 0;
    for (size_t i = 0; i < a->nsites; i++)
        if (a->sites[i].candidate != MRA_NONE)
            v[n++] = a->sites[i].candidate_saving_ns;
    double cut = 0;
    if (n > 0) {
        qsort(v, n, sizeof *v, cmp_desc);
        cut = a->opts.th.min_share / 20 * a->program_ns;
        if (n > MRA_PLANNED_MAX && v[MRA_PLANNED_MAX - 1] > cut)
            cut = v[MRA_PLANNED_MAX - 1];
        if (cut > v[0])
            cut = v[0]; /* the best one at least */
    }
    free(v);
    return cut;
}

enum mra_rec mra_alternative(const struct mra_site *s, enum mra_rec k, const struct mra_thresholds *th)
{
    const struct mra_site_stats *st = &s->s;
    uint64_t max_small_size = th->max_small_size;
    switch (k) {
    case MRA_ARENA:
    case MRA_ARENA_REWIND:
    case MRA_OBJPOOL:
        return st->max_size <= max_small_size ? MRA_POOLS : MRA_NONE;
    case MRA_POOLS:
        /* pools for objects realloc moves, freed together: the arena the
         * moved copies ruled out (an object pool cannot hold them) */
        if (mra_resized(st, true) && mra_together_share(st) >= th->together_share)
            return MRA_ARENA;
        return st->nsizes && st->sizes[0].size <= max_small_size && 2 * st->sizes[0].count >= st->allocations
                   ? MRA_OBJPOOL
                   : MRA_NONE;
    default:
        return MRA_NONE;
    }
}

size_t mra_candidates_only(const struct mra_analysis *a, double *ns)
{
    size_t n = 0;
    double sum = 0;
    for (size_t i = 0; i < a->nsites; i++) {
        if (a->sites[i].rec != MRA_NONE)
            return *ns = 0, 0;
        if (a->sites[i].candidate != MRA_NONE) {
            n++;
            sum += a->sites[i].candidate_saving_ns;
        }
    }
    *ns = sum;
    return n;
}

/* The largest site id of p (ids index the plan's tables). */
static uint32_t max_site_id(const struct mra_profile *p)
{
    uint32_t maxid = 0;
    for (size_t i = 0; i < p->nsites; i++)
        if (p->sites[i].s.id > maxid)
            maxid = p->sites[i].s.id;
    return maxid;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int mra_plan_write_behind(FILE *f, const struct mra_profile *p, const struct mra_analysis *a, size_t bi)
{
    const struct mra_behind *b = &a->behind[bi];
    uint32_t maxid = max_site_id(p);
    /* the behind's sites' first frames, each once */
    bool *in = calloc((size_t)maxid + 1, sizeof *in);
    uint64_t *first = malloc((p->nsites ? p->nsites : 1) * sizeof *first);
    if (!in || !first) {
        free(in);
        free(first);
        fprintf(stderr, "memres-advise: out of memory writing the plan\n");
        return -1;
    }
    for (size_t r = 0; r < b->nraw; r++)
        if (b->raw_ids[r] <= maxid)
            in[b->raw_ids[r]] = true;
    size_t n = 0;
    for (size_t i = 0; i < p->nsites; i++)
        if (in[p->sites[i].s.id] && p->sites[i].s.nframes > 0)
            first[n++] = p->sites[i].frames[0];
    qsort(first, n, sizeof *first, cmp_u64);
    fprintf(f, "memres-advise-plan 1\n");
    fprintf(f, "# program %s; one mr_pools behind %s (%zu sites)\n", a->h.program[0] ? a->h.program : "?",
            b->frame.function ? b->frame.function : "a function without a symbol", b->nsites);
    fprintf(f, "route 1 pools 0 0\nwalk 1\n");
    for (size_t i = 0; i < p->nmodules; i++)
        fprintf(f, "module %zu %s\n", i, p->modules[i].path ? p->modules[i].path : "?");
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && first[i] == first[i - 1])
            continue;
        size_t m;
        const struct mra_raw_module *mod = module_of(p, first[i], &m);
        if (mod)
            fprintf(f, "stack 1 1 %zu:0x%llx\n", m, (unsigned long long)(first[i] - mod->bias));
    }
    free(in);
    free(first);
    return 0;
}

int mra_plan_write(FILE *f, const struct mra_profile *p, const struct mra_analysis *a, enum mra_plan_mode mode,
                   unsigned only_site, enum mra_rec as)
{
    size_t n = p->nsites;
    struct pstack *ps = calloc(n ? n : 1, sizeof *ps);
    size_t *idx = calloc(n ? n : 1, sizeof *idx);
    unsigned *route_of_id = NULL;
    enum mra_rec *cand_of_id = NULL;
    enum mra_rec *kind_of_route = calloc(a->nsites + 1, sizeof *kind_of_route);
    uint32_t maxid = max_site_id(p);
    route_of_id = calloc((size_t)maxid + 1, sizeof *route_of_id);
    cand_of_id = calloc((size_t)maxid + 1, sizeof *cand_of_id);
    if (!ps || !idx || !route_of_id || !kind_of_route || !cand_of_id) {
        free(cand_of_id);
        free(kind_of_route);
        free(ps);
        free(idx);
        free(route_of_id);
        fprintf(stderr, "memres-advise: out of memory writing the plan\n");
        return -1;
    }
    fprintf(f, "memres-advise-plan 1\n");
    fprintf(f, "# program %s; %s\n", a->h.program[0] ? a->h.program : "?",
            mode == MRA_PLAN_CANDIDATES       ? "every site the rules name an allocator for"
            : mode == MRA_PLAN_TOP_CANDIDATES ? "the sites the rules name an allocator for that would save most"
                                              : "the recommended sites");
    double cutoff = mra_plan_cutoff(a, mode);
    /* the routes: one per planned site */
    unsigned nroutes = 0;
    /* An unplanned site may share a route's prefix when the rules name the
     * route's kind for it (binary-trees' root nodes beside the recursion's,
     * freed with them) -- unless it would keep the route's blocks live
     * (group_route: a request loop's responses, never freed, between each
     * request's temporaries). */
    for (size_t i = 0; i < a->nsites; i++)
        for (size_t r = 0; r < a->sites[i].nraw; r++)
            if (a->sites[i].raw_ids[r] <= maxid)
                cand_of_id[a->sites[i].raw_ids[r]] = a->sites[i].candidate;
    for (size_t i = 0; i < a->nsites; i++) {
        const struct mra_site *s = &a->sites[i];
        enum mra_rec k = mra_plan_kind(s, mode, cutoff);
        if (k == MRA_NONE || (only_site && s->id != only_site))
            continue;
        if (only_site && as != MRA_NONE)
            k = as;
        kind_of_route[++nroutes] = k;
        uint64_t size = k == MRA_OBJPOOL && s->s.nsizes ? s->s.sizes[0].size : 0;
        fprintf(f, "route %u %s %llu %u\n", nroutes, mra_rec_name(k), (unsigned long long)size, s->id);
        for (size_t r = 0; r < s->nraw; r++)
            if (s->raw_ids[r] <= maxid)
                route_of_id[s->raw_ids[r]] = nroutes;
    }
    unsigned depth = p->h.depth;
    for (size_t i = 0; i < n; i++) {
        ps[i].fr = p->sites[i].frames;
        ps[i].n = p->sites[i].s.nframes < depth ? p->sites[i].s.nframes : depth;
        ps[i].route = route_of_id[p->sites[i].s.id];
        ps[i].kind = ps[i].route ? kind_of_route[ps[i].route] : cand_of_id[p->sites[i].s.id];
        ps[i].allocations = p->sites[i].s.allocations;
        const struct mra_site_stats *st = &p->sites[i].s;
        ps[i].life = st->live_objects * 10 >= st->allocations && st->live_objects
                         ? INFINITY
                         : mra_hist_quantile(st->hist_ticks, 0.5);
        ps[i].spread = st->last_tick - st->first_tick >= 4 * st->allocations;
        idx[i] = i;
    }
    /* the least depth that tells the routes apart: at which the allocations
     * that would go to another kind of allocator than their site's are at
     * most 1% of the planned allocations more than at the depth that
     * misroutes least (each frame walked costs every planned call) */
    unsigned k = 1;
    uint64_t planned = 0;
    for (size_t i = 0; i < n; i++)
        if (ps[i].route)
            planned += ps[i].allocations;
    uint64_t lost = 0;
    if (nroutes > 0 && depth > 0) {
        uint64_t lost_at[MRA_MAX_DEPTH + 1], best = UINT64_MAX;
        for (k = 1; k <= depth && k <= MRA_MAX_DEPTH; k++) {
            lost_at[k] = misrouted_at(ps, idx, n, k);
            if (lost_at[k] < best)
                best = lost_at[k];
        }
        for (k = 1; lost_at[k] > best + planned / 100; k++) {
        }
        lost = misrouted_at(ps, idx, n, k);
    }
    fprintf(f, "walk %u\n", k);
    if (lost)
        fprintf(f, "# %llu allocations share their first %u frames with more allocations of another plan\n",
                (unsigned long long)lost, k);
    for (size_t i = 0; i < p->nmodules; i++)
        fprintf(f, "module %zu %s\n", i, p->modules[i].path ? p->modules[i].path : "?");
    /* each k-prefix group once (idx is sorted by k-prefix) */
    size_t unplaced = 0;
    for (size_t t = 0, end; nroutes > 0 && t < n; t = end) {
        end = group_end(idx, n, t);
        uint64_t glost;
        unsigned best = group_route(ps, idx, t, end, &glost);
        if (best == 0)
            continue;
        const struct pstack *x = &ps[idx[t]];
        unsigned nf = x->n < k ? x->n : k;
        char line[MRA_MAX_DEPTH * 40 + 64];
        int len = snprintf(line, sizeof line, "stack %u %u", best, nf);
        bool ok = true;
        for (unsigned j = 0; j < nf && ok; j++) {
            size_t m;
            const struct mra_raw_module *mod = module_of(p, x->fr[j], &m);
            if (!mod) {
                ok = false;
                break;
            }
            len += snprintf(line + len, sizeof line - (size_t)len, " %zu:0x%llx", m,
                            (unsigned long long)(x->fr[j] - mod->bias));
        }
        if (ok)
            fprintf(f, "%s\n", line);
        else
            unplaced++;
    }
    if (unplaced)
        fprintf(f, "# %zu routed stacks have a frame in no module (JIT code?): they stay on glibc\n", unplaced);
    free(cand_of_id);
    free(kind_of_route);
    free(ps);
    free(idx);
    free(route_of_id);
    return ferror(f) ? -1 : 0;
}
