/* SPDX-License-Identifier: MIT */
/* advise/analyze/freed.c -- where a site's objects are freed, and the
 * change to make.
 *
 * The recorder keeps, per allocation site, the call stacks its sampled
 * frees came from (the free's own stack, recorded as a site of its own
 * marked free_stack; tcmalloc's lifetime profile pairs each allocation
 * stack with its free stack the same way).  The function that owns the
 * objects' lifetime is the innermost one on both stacks: the allocation
 * path and the free path leave it through two calls, one leading to the
 * malloc, one to the frees.  That is where an arena is made and reset. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sites.h"

static const char *base_name(const char *p)
{
    const char *b = strrchr(p, '/');
    return b ? b + 1 : p;
}

/* f as the report names a place: file:line, else function+offset, else
 * module+offset, else
 * its address. */
static const char *where(char *b, size_t cap, const struct mra_frame *f)
{
    if (f->file)
        snprintf(b, cap, "%s:%u", base_name(f->file), f->line);
    else if (f->function)
        snprintf(b, cap, "%s+0x%llx", f->function, (unsigned long long)f->offset);
    else if (f->module)
        snprintf(b, cap, "%s+0x%llx", base_name(f->module), (unsigned long long)f->offset);
    else
        snprintf(b, cap, "0x%llx", (unsigned long long)f->addr);
    return b;
}

/* The change's text, cut at cap (a long function name is not an error). */
__attribute__((format(printf, 3, 4))) static void say(char *o, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o, cap, fmt, ap);
    va_end(ap);
}

static const char *fn(const struct mra_frame *f) { return f->function ? f->function : "a function without a symbol"; }

void mra_freed_fill(struct mra_site *s, const struct mra_profile *p, const size_t *at_id, size_t nid,
                    struct mra_symbols *sym)
{
    const struct mra_site_stats *st = &s->s;
    unsigned n = st->nfree_sites < MRA_FREE_SITES ? st->nfree_sites : MRA_FREE_SITES;
    unsigned ord[MRA_FREE_SITES];
    uint64_t total = 0;
    for (unsigned i = 0; i < n; i++) {
        ord[i] = i;
        total += st->free_site_counts[i];
        for (unsigned j = i; j > 0 && st->free_site_counts[ord[j]] > st->free_site_counts[ord[j - 1]]; j--) {
            unsigned t = ord[j];
            ord[j] = ord[j - 1];
            ord[j - 1] = t;
        }
    }
    s->nfreed = 0;
    for (unsigned k = 0; k < n && s->nfreed < MRA_FREED_SHOWN; k++) {
        uint32_t id = st->free_sites[ord[k]];
        if (id >= nid || at_id[id] == SIZE_MAX || total == 0)
            continue;
        const struct mra_raw_site *raw = &p->sites[at_id[id]];
        struct mra_freed *f = &s->freed[s->nfreed++];
        f->share = (double)st->free_site_counts[ord[k]] / (double)total;
        /* each return address with the calls inlined at it, innermost
         * first, as the site's own frames */
        f->nframes = 0;
        for (unsigned j = 0; j < raw->s.nframes && f->nframes < MRA_MAX_DEPTH; j++) {
            unsigned ni = 0;
            const struct mra_frame *fr = mra_symbols_inline(sym, raw->frames[j], &ni);
            if (!fr || ni == 0)
                f->frames[f->nframes++] = (struct mra_frame){.addr = raw->frames[j]};
            for (unsigned x = 0; fr && x < ni && f->nframes < MRA_MAX_DEPTH; x++)
                f->frames[f->nframes++] = fr[x];
        }
    }
}

/* The innermost function on both stacks: its frame's index on each. */
static bool owner(const struct mra_site *s, const struct mra_freed *f, unsigned *ia, unsigned *jf)
{
    for (unsigned i = 0; i < s->nframes; i++) {
        if (!s->frames[i].function)
            continue;
        for (unsigned j = 0; j < f->nframes; j++)
            if (f->frames[j].function && strcmp(s->frames[i].function, f->frames[j].function) == 0) {
                *ia = i;
                *jf = j;
                return true;
            }
    }
    return false;
}

void mra_change(struct mra_site *s, double never_share, double at_exit_share)
{
    enum mra_rec r = s->rec != MRA_NONE ? s->rec : s->candidate;
    char *o = s->change;
    size_t cap = sizeof s->change;
    o[0] = 0;
    if (r == MRA_NONE || s->nframes == 0)
        return;
    char a0[200], fw[200], aw[200], fw0[200];
    const struct mra_frame *site = &s->frames[0];
    where(a0, sizeof a0, site);
    if (s->nfreed == 0) {
        if (r == MRA_ARENA && never_share >= at_exit_share)
            say(o, cap,
                "never freed: allocate with mr_arena_alloc at %s in %s from one mr_arena, destroyed at exit "
                "(or never)",
                a0, fn(site));
        return;
    }
    const struct mra_freed *f = &s->freed[0];
    where(fw0, sizeof fw0, &f->frames[0]);
    unsigned ia = 0, jf = 0;
    bool common = owner(s, f, &ia, &jf);
    /* the first named caller of the freeing function */
    const struct mra_frame *caller = NULL;
    for (unsigned j = 1; j < f->nframes && !caller; j++)
        if (f->frames[j].function && strcmp(f->frames[j].function, fn(&f->frames[0])) != 0)
            caller = &f->frames[j];
    switch (r) {
    case MRA_ARENA:
        if (common && ia == 0 && jf == 0)
            say(o, cap,
                "%s allocates (%s) and frees (%s) them: give it an mr_arena, allocate with mr_arena_alloc, and "
                "drop the frees: mr_arena_reset once the whole burst is dead",
                fn(site), a0, fw0);
        else if (common && jf == 0)
            say(o, cap,
                "%s owns their lifetime (its call at %s leads to the allocation at %s in %s; it frees them "
                "itself at %s): give it an mr_arena (made before the first call, or one it passes down), "
                "allocate with mr_arena_alloc at %s, and call mr_arena_reset (or mr_arena_destroy) at %s "
                "instead of the frees",
                fn(&s->frames[ia]), where(aw, sizeof aw, &s->frames[ia]), a0, fn(site), fw0, a0, fw0);
        else if (common)
            say(o, cap,
                "%s owns their lifetime (its call at %s leads to the allocation at %s in %s, its call at %s "
                "to the frees at %s in %s): give it an mr_arena (made before the first call, or one it "
                "passes down), allocate with mr_arena_alloc at %s, and call mr_arena_reset (or "
                "mr_arena_destroy) at %s instead of the frees",
                fn(&s->frames[ia]), where(aw, sizeof aw, &s->frames[ia]), a0, fn(site),
                where(fw, sizeof fw, &f->frames[jf]), fw0, fn(&f->frames[0]), a0, fw);
        else
            say(o, cap,
                "allocate with mr_arena_alloc at %s in %s; the objects are freed at %s in %s%s%s: reset the "
                "arena where that runs instead of the frees (the function on both paths is above the recorded "
                "stacks: --depth shows more)",
                a0, fn(site), fw0, fn(&f->frames[0]), caller ? ", called from " : "", caller ? fn(caller) : "");
        break;
    case MRA_ARENA_REWIND:
        say(o, cap,
            "mr_arena_save before the allocation at %s in %s, mr_arena_rewind to the mark where the newest "
            "object is freed, at %s in %s",
            a0, fn(site), fw0, fn(&f->frames[0]));
        break;
    case MRA_OBJPOOL:
    case MRA_POOLS: {
        bool op = r == MRA_OBJPOOL;
        say(o, cap, "%s at %s in %s, %s at %s in %s (the %s made where both can reach %s%s%s)",
            op ? "mr_objpool_alloc" : "mr_pools_alloc", a0, fn(site),
            op ? "mr_objpool_free" : "mr_pools_free (with the size)", fw0, fn(&f->frames[0]), op ? "pool" : "pools",
            op ? "it" : "them", common ? ": " : "", common ? fn(&s->frames[ia]) : "");
        break;
    }
    default:
        break;
    }
}

/* ---- arena sites that together pass the 2% rule ---- */

/* An arena for one site's objects is a change at one place; an arena for
 * every site whose objects one function frees in a burst (a document's
 * nodes, attributes and strings, freed by the function that frees the
 * document) is the same change, made once.  Each such site alone may save
 * less than the 2% rule asks, and the sites together more: xmllint's six
 * parser sites save 0.1-1.1% each and 3% together, freed by
 * xmlFreeNodeList.  Likewise the sites never freed: one arena, destroyed
 * at exit (or never), takes them all. */
struct gsite {
    char key[200];               /* what the group's sites share, as the reason says it */
    size_t at;                   /* index in w->ms */
};

static int cmp_gsite(const void *a, const void *b)
{
    return strcmp(((const struct gsite *)a)->key, ((const struct gsite *)b)->key);
}

/* The innermost frame of m's most frequent free stack that is not a
 * wrapper of free, as "freed in F"; false where m has no free stack. */
static bool free_key(const struct msite *m, const struct mra_profile *p, const size_t *at_id, size_t nid,
                     struct mra_symbols *sym, const struct mra_options *o, char *key, size_t cap)
{
    const struct mra_site_stats *st = &m->s;
    unsigned n = st->nfree_sites < MRA_FREE_SITES ? st->nfree_sites : MRA_FREE_SITES, best = n;
    for (unsigned i = 0; i < n; i++)
        if (st->free_sites[i] < nid && at_id[st->free_sites[i]] != SIZE_MAX &&
            (best == n || st->free_site_counts[i] > st->free_site_counts[best]))
            best = i;
    if (best == n)
        return false;
    const struct mra_raw_site *raw = &p->sites[at_id[st->free_sites[best]]];
    bool unnamed = false;
    for (unsigned j = 0; j < raw->s.nframes; j++) {
        unsigned ni = 0;
        const struct mra_frame *fr = mra_symbols_inline(sym, raw->frames[j], &ni);
        for (unsigned x = 0; fr && x < ni; x++) {
            if (fr[x].function && !mra_is_free_wrapper(&fr[x], o)) {
                /* a function without a symbol (a static one of a stripped
                 * library) is named by its first named caller: two return
                 * addresses in it are one function there */
                snprintf(key, cap, "freed in %s%s", unnamed ? "a function called from " : "", fr[x].function);
                return true;
            }
            unnamed |= !fr[x].function;
        }
        unnamed |= !fr || ni == 0;
    }
    if (raw->s.nframes == 0)
        return false;
    snprintf(key, cap, "freed at 0x%llx", (unsigned long long)raw->frames[0]);
    return true;
}

int mra_free_groups(struct work *w, const struct mra_analysis *a, const struct mra_profile *p, const size_t *at_id,
                    size_t nid, struct mra_symbols *sym, const struct mra_thresholds *th)
{
    size_t n = 0;
    for (size_t i = 0; i < w->n; i++)
        n += !w->ms[i].dead && w->ms[i].rule && w->ms[i].cand == MRA_ARENA;
    if (n < 2)
        return 0;
    struct gsite *g = calloc(n, sizeof *g);
    if (!g)
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < w->n; i++) {
        const struct msite *m = &w->ms[i];
        if (m->dead || !m->rule || m->cand != MRA_ARENA)
            continue;
        double never = m->s.allocations ? (double)m->s.live_objects / (double)m->s.allocations : 0;
        if (never >= th->at_exit_share)
            snprintf(g[k].key, sizeof g[k].key, "never freed");
        else if (!free_key(m, p, at_id, nid, sym, &a->opts, g[k].key, sizeof g[k].key))
            continue;
        g[k++].at = i;
    }
    qsort(g, k, sizeof *g, cmp_gsite);
    double prog_ns = a->program_ns > 0 ? a->program_ns : 1;
    int rc = 0;
    for (size_t s = 0, e; s < k && rc == 0; s = e) {
        double sum = 0;
        for (e = s; e < k && strcmp(g[e].key, g[s].key) == 0; e++)
            sum += w->ms[g[e].at].cand_saving;
        if (e - s < 2)
            continue;
        if (sum < th->min_share * prog_ns) {
            for (size_t x = s; x < e; x++)
                mra_group_near(&w->ms[g[x].at], a, th, g[s].key, e - s, sum);
            continue;
        }
        for (size_t x = s; x < e && rc == 0; x++)
            rc = mra_promote(&w->ms[g[x].at], a, th, g[s].key, e - s, sum);
    }
    free(g);
    return rc;
}
