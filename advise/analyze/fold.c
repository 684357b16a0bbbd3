/* SPDX-License-Identifier: MIT */
/* advise/analyze/fold.c -- steps 1 to 5 of the analysis (analyze.c): a raw
 * site's frames symbolized and expanded into their inlined calls, its
 * leading wrapper frames folded, its recursion collapsed, its stack cut to
 * --depth and merged with the sites that become equal; cut sites merged
 * into the one site that extends them. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "site_stats.h"
#include "sites.h"

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

/* The free side's wrappers: functions that only pass a free on (the
 * allocation side's wrappers above, and the --wrapper names, fold too). */
static const char *const builtin_free_wrappers[] = {
    "xfree", "g_free", "g_free_sized", "g_slice_free*", "sqlite3_free", "sqlite3DbFree*", "sqlite3MemFree",
    "luaM_free_", "operator delete*", "_ZdlPv*", "_ZdaPv*",
};

bool mra_is_free_wrapper(const struct mra_frame *f, const struct mra_options *o)
{
    const char *as;
    if (is_wrapper(f, o, &as))
        return true;
    if (!f->function)
        return false;
    char buf[256];
    const char *n = plain_name(f->function, buf, sizeof buf);
    for (size_t i = 0; i < sizeof builtin_free_wrappers / sizeof *builtin_free_wrappers; i++)
        if (pat_match(builtin_free_wrappers[i], n))
            return true;
    return false;
}

/* ---- merged sites ---- */

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
int mra_fold_raw(struct work *w, const struct mra_raw_site *r, uint32_t hdepth, struct mra_symbols *sym,
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
int mra_fold_cut(struct work *w)
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

void mra_work_free(struct work *w)
{
    for (size_t i = 0; i < w->n; i++) {
        free(w->ms[i].raw);
        free(w->ms[i].reason);
        free(w->ms[i].rule);
        free(w->ms[i].costed);
    }
    free(w->ms);
    free(w->fpool);
    free(w->tab);
    free(w->folded);
}
