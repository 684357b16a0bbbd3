/* SPDX-License-Identifier: MIT */
/* advise/analyze/diff.c -- `memres-advise diff A.json B.json`: two reports
 * written by --json ("version": 1), compared site by site.
 *
 * A site is known across runs by its frames as the report gives them,
 * innermost first, each as `function file:line` (the file's base name:
 * two builds in different directories still match), else
 * `function+0xOFFSET (module)`, else `module+0xOFFSET`; the report's id
 * and the frames' addresses change from run to run and are not used.
 * Sites with the same identity in one report (rare: two stacks that
 * resolve alike) are summed.  Both lists are sorted by identity and
 * walked together: a site is in both, only in A or only in B.
 *
 * For each site in both whose allocations, bytes, glibc time,
 * recommendation or predicted saving differ: old -> new with the change.
 * They are listed by the size of the change: a changed recommendation
 * first, then by the largest change of the site's share of the run's
 * allocations, of its bytes, of its glibc time (the sites' sum) and of
 * its predicted saving (of the run time), whichever is largest.  The sites
 * only in A and only in B follow, by allocations.  Text to stdout, exit 0;
 * a report that cannot be read, is not JSON or is not memres-advise's
 * version 1: a message on stderr and exit 2. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "json_read.h"

struct dsite {
    char *key;                   /* the identity, " <- " between frames */
    unsigned id;                 /* the report's, for the reader */
    double allocations, bytes, glibc_ns, saving_ns;
    char rec[48];                /* recommendation, "(thread-safe)" added */
};

struct dreport {
    const char *path;
    struct mra_json doc;
    const char *program;
    double run_ns, allocations, bytes, saving_ns, glibc_ns;
    double heap_retaken, heap_retaken_ns; /* memory glibc gave back and took again (0: none, or
                                             a report from before the heap section) */
    struct dsite *s;
    size_t n;
};

static int bad(const char *path, const char *what)
{
    fprintf(stderr, "memres-advise diff: %s: %s\n", path, what);
    return -1;
}

static const char *base_name(const char *p)
{
    const char *b = strrchr(p, '/');
    return b ? b + 1 : p;
}

/* A count or offset from a report: a number outside 0..2^64 (not one
 * memres-advise writes) as 0, not converted out of range. */
static unsigned long long as_u64(double v)
{
    return v >= 0 && v < 18446744073709551616.0 ? (unsigned long long)v : 0;
}

/* Appends the identity of one frame to *buf (a growing string). */
static int frame_key(const struct mra_json *fr, char **buf, size_t *len)
{
    const char *fn = mra_json_str(mra_json_get(fr, "function"));
    const char *file = mra_json_str(mra_json_get(fr, "file"));
    const char *mod = mra_json_str(mra_json_get(fr, "module"));
    unsigned long long line = as_u64(mra_json_num(mra_json_get(fr, "line"), 0));
    unsigned long long off = as_u64(mra_json_num(mra_json_get(fr, "offset"), 0));
    char one[1024];
    if (fn && file)
        snprintf(one, sizeof one, "%s %s:%llu", fn, base_name(file), line);
    else if (fn)
        snprintf(one, sizeof one, "%s+0x%llx (%s)", fn, off, mod ? base_name(mod) : "?");
    else
        snprintf(one, sizeof one, "%s+0x%llx", mod ? base_name(mod) : "?", off);
    size_t add = strlen(one) + (*len ? 4 : 0);
    char *nb = realloc(*buf, *len + add + 1);
    if (!nb)
        return -1;
    snprintf(nb + *len, add + 1, "%s%s", *len ? " <- " : "", one);
    *buf = nb;
    *len += add;
    return 0;
}

static bool is_num(const struct mra_json *v)
{
    return v && v->t == MRA_JSON_NUM;
}

/* The sites of r->doc into r->s: 0, or -1 with a message. */
static int read_sites(struct dreport *r)
{
    const struct mra_json *sites = mra_json_get(&r->doc, "sites");
    if (!sites || sites->t != MRA_JSON_ARR)
        return bad(r->path, "not a memres-advise report (no \"sites\" array)");
    r->s = calloc(sites->n ? sites->n : 1, sizeof *r->s);
    if (!r->s)
        return bad(r->path, "out of memory");
    for (size_t i = 0; i < sites->n; i++) {
        const struct mra_json *s = &sites->items[i];
        const struct mra_json *frames = mra_json_get(s, "frames");
        const char *rec = mra_json_str(mra_json_get(s, "recommendation"));
        if (s->t != MRA_JSON_OBJ || !frames || frames->t != MRA_JSON_ARR || !rec ||
            !is_num(mra_json_get(s, "allocations")) || !is_num(mra_json_get(s, "bytes"))) {
            char what[128];
            snprintf(what, sizeof what, "site %zu is not a memres-advise site (frames, allocations, bytes, "
                                        "recommendation)", i + 1);
            return bad(r->path, what);
        }
        struct dsite *d = &r->s[r->n++];
        size_t len = 0;
        for (size_t f = 0; f < frames->n; f++)
            if (frame_key(&frames->items[f], &d->key, &len) != 0)
                return bad(r->path, "out of memory");
        if (!d->key && !(d->key = strdup("(no frames)")))
            return bad(r->path, "out of memory");
        unsigned long long id = as_u64(mra_json_num(mra_json_get(s, "id"), 0));
        d->id = id <= UINT_MAX ? (unsigned)id : 0;
        d->allocations = mra_json_num(mra_json_get(s, "allocations"), 0);
        d->bytes = mra_json_num(mra_json_get(s, "bytes"), 0);
        d->glibc_ns = mra_json_num(mra_json_get(s, "glibc_ns"), 0);
        d->saving_ns = mra_json_num(mra_json_get(s, "predicted_saving_ns"), 0);
        const struct mra_json *ts = mra_json_get(s, "thread_safe");
        snprintf(d->rec, sizeof d->rec, "%s%s", rec, ts && ts->t == MRA_JSON_BOOL && ts->b ? " (thread-safe)" : "");
        r->glibc_ns += d->glibc_ns;
    }
    return 0;
}

static int cmp_key(const void *a, const void *b)
{
    const struct dsite *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    /* among equals, the report's order (by saving): the first names the sum */
    return c ? c : (x->id > y->id) - (x->id < y->id);
}

/* Sorted by identity, equal identities summed into the first. */
static void sort_and_merge(struct dreport *r)
{
    qsort(r->s, r->n, sizeof *r->s, cmp_key);
    size_t k = 0;
    for (size_t i = 0; i < r->n; i++) {
        if (k && strcmp(r->s[k - 1].key, r->s[i].key) == 0) {
            struct dsite *d = &r->s[k - 1];
            d->allocations += r->s[i].allocations;
            d->bytes += r->s[i].bytes;
            d->glibc_ns += r->s[i].glibc_ns;
            d->saving_ns += r->s[i].saving_ns;
            free(r->s[i].key);
            continue;
        }
        r->s[k++] = r->s[i];
    }
    r->n = k;
}

static int load(struct dreport *r, const char *path)
{
    memset(r, 0, sizeof *r);
    r->path = path;
    size_t len;
    char *text = mra_json_read_file(path, &len);
    if (!text)
        return bad(path, strerror(errno));
    const char *err;
    size_t at;
    int rc = mra_json_parse(text, len, &r->doc, &err, &at);
    free(text);
    if (rc != 0) {
        char what[160];
        snprintf(what, sizeof what, "not JSON: %s at byte %zu", err, at);
        return bad(path, what);
    }
    if (r->doc.t != MRA_JSON_OBJ || mra_json_num(mra_json_get(&r->doc, "version"), 0) != 1 ||
        !is_num(mra_json_get(&r->doc, "run_time_ns")))
        return bad(path, "not a memres-advise report of version 1 (written by --json)");
    r->program = mra_json_str(mra_json_get(&r->doc, "program"));
    r->run_ns = mra_json_num(mra_json_get(&r->doc, "run_time_ns"), 0);
    r->allocations = mra_json_num(mra_json_get(&r->doc, "allocations"), 0);
    r->bytes = mra_json_num(mra_json_get(&r->doc, "bytes"), 0);
    r->saving_ns = mra_json_num(mra_json_get(&r->doc, "total_predicted_saving_ns"), 0);
    const struct mra_json *heap = mra_json_get(&r->doc, "heap");
    r->heap_retaken = mra_json_num(mra_json_get(heap, "retaken_bytes"), 0);
    r->heap_retaken_ns = mra_json_num(mra_json_get(heap, "retaken_ns"), 0);
    if (read_sites(r) != 0)
        return -1;
    sort_and_merge(r);
    return 0;
}

static void unload(struct dreport *r)
{
    for (size_t i = 0; i < r->n; i++)
        free(r->s[i].key);
    free(r->s);
    mra_json_free(&r->doc);
}

/* ---- the comparison ---- */

struct pair {
    const struct dsite *a, *b;   /* NULL: only in the other */
    double score;                /* the size of the change */
};

static double rel(double d, double total)
{
    return total > 0 ? fabs(d) / total : (d != 0);
}

static double score(const struct dsite *a, const struct dsite *b, const struct dreport *A, const struct dreport *B)
{
    double s = rel(b->allocations - a->allocations, fmax(A->allocations, B->allocations));
    s = fmax(s, rel(b->bytes - a->bytes, fmax(A->bytes, B->bytes)));
    s = fmax(s, rel(b->glibc_ns - a->glibc_ns, fmax(A->glibc_ns, B->glibc_ns)));
    s = fmax(s, rel(b->saving_ns - a->saving_ns, fmax(A->run_ns, B->run_ns)));
    return s + (strcmp(a->rec, b->rec) != 0 ? 1 : 0);
}

static bool changed(const struct dsite *a, const struct dsite *b)
{
    return a->allocations != b->allocations || a->bytes != b->bytes || a->glibc_ns != b->glibc_ns ||
           a->saving_ns != b->saving_ns || strcmp(a->rec, b->rec) != 0;
}

static int cmp_score(const void *x, const void *y)
{
    const struct pair *p = x, *q = y;
    if (p->score != q->score)
        return p->score > q->score ? -1 : 1;
    return strcmp(p->a ? p->a->key : p->b->key, q->a ? q->a->key : q->b->key);
}

static int cmp_only(const void *x, const void *y)
{
    const struct pair *p = x, *q = y;
    const struct dsite *s = p->a ? p->a : p->b, *t = q->a ? q->a : q->b;
    if (s->allocations != t->allocations)
        return s->allocations > t->allocations ? -1 : 1;
    return strcmp(s->key, t->key);
}

/* One figure, old -> new (change, percent); ms: ns shown in ms. */
static void figure(const char *name, double a, double b, bool ms)
{
    double k = ms ? 1e6 : 1;
    const char *unit = ms ? " ms" : "";
    int prec = ms ? 3 : 0;
    printf("      %-18s %.*f%s -> %.*f%s", name, prec, a / k, unit, prec, b / k, unit);
    if (a != b) {
        printf("  (%+.*f%s", prec, (b - a) / k, unit);
        if (a != 0)
            printf(", %+.1f%%", 100 * (b - a) / fabs(a));
        putchar(')');
    }
    putchar('\n');
}

static void one_side(const struct dsite *s)
{
    printf("  #%u  %s\n      allocations %.0f, bytes %.0f, glibc time %.3f ms, recommendation %s, predicted "
           "saving %.3f ms\n",
           s->id, s->key, s->allocations, s->bytes, s->glibc_ns / 1e6, s->rec, s->saving_ns / 1e6);
}

static int compare(const struct dreport *A, const struct dreport *B)
{
    struct pair *both = calloc(A->n + B->n + 1, sizeof *both);
    struct pair *only = calloc(A->n + B->n + 1, sizeof *only);
    if (!both || !only) {
        free(both);
        free(only);
        fprintf(stderr, "memres-advise diff: out of memory\n");
        return -1;
    }
    size_t nboth = 0, nsame = 0, nonly = 0, nonly_a = 0;
    for (size_t i = 0, j = 0; i < A->n || j < B->n;) {
        int c = i == A->n ? 1 : j == B->n ? -1 : strcmp(A->s[i].key, B->s[j].key);
        if (c < 0) {
            only[nonly++] = (struct pair){ .a = &A->s[i++] };
            nonly_a++;
        } else if (c > 0) {
            only[nonly++] = (struct pair){ .b = &B->s[j++] };
        } else {
            const struct dsite *a = &A->s[i++], *b = &B->s[j++];
            if (changed(a, b))
                both[nboth++] = (struct pair){ .a = a, .b = b, .score = score(a, b, A, B) };
            else
                nsame++;
        }
    }
    printf("memres-advise diff: %s -> %s\n", A->path, B->path);
    printf("      %-18s %s -> %s\n", "program", A->program ? A->program : "?", B->program ? B->program : "?");
    figure("run time", A->run_ns, B->run_ns, true);
    figure("allocations", A->allocations, B->allocations, false);
    figure("bytes", A->bytes, B->bytes, false);
    figure("glibc time", A->glibc_ns, B->glibc_ns, true);
    figure("predicted saving", A->saving_ns, B->saving_ns, true);
    figure("heap taken again", A->heap_retaken, B->heap_retaken, false);
    figure("heap re-fault cost", A->heap_retaken_ns, B->heap_retaken_ns, true);
    printf("      %-18s %zu -> %zu: %zu in both (%zu changed, %zu the same), %zu only in A, %zu only in B\n",
           "sites", A->n, B->n, nboth + nsame, nboth, nsame, nonly_a, nonly - nonly_a);
    if (nboth == 0 && nonly == 0) {
        printf("\nno change: every site has the same figures and recommendation\n");
    } else {
        qsort(both, nboth, sizeof *both, cmp_score);
        if (nboth)
            printf("\nchanged sites, largest change first (A's id -> B's id):\n");
        for (size_t i = 0; i < nboth; i++) {
            const struct dsite *a = both[i].a, *b = both[i].b;
            printf("  #%u -> #%u  %s\n", a->id, b->id, a->key);
            figure("allocations", a->allocations, b->allocations, false);
            figure("bytes", a->bytes, b->bytes, false);
            figure("glibc time", a->glibc_ns, b->glibc_ns, true);
            printf("      %-18s %s -> %s%s\n", "recommendation", a->rec, b->rec,
                   strcmp(a->rec, b->rec) ? "  (changed)" : "");
            figure("predicted saving", a->saving_ns, b->saving_ns, true);
        }
        qsort(only, nonly_a, sizeof *only, cmp_only);
        qsort(only + nonly_a, nonly - nonly_a, sizeof *only, cmp_only);
        for (size_t i = 0; i < nonly; i++) {
            if (i == 0 && nonly_a)
                printf("\nonly in A (%zu site%s), most allocations first:\n", nonly_a, nonly_a == 1 ? "" : "s");
            if (i == nonly_a)
                printf("\nonly in B (%zu site%s), most allocations first:\n", nonly - nonly_a,
                       nonly - nonly_a == 1 ? "" : "s");
            one_side(only[i].a ? only[i].a : only[i].b);
        }
    }
    free(both);
    free(only);
    return 0;
}

int mra_diff_main(int argc, char **argv)
{
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        printf("usage: memres-advise diff A.json B.json\n"
               "Compares two reports written by --json, site by site (docs/ADVISE.md).\n");
        return 0;
    }
    if (argc != 3) {
        fprintf(stderr, "usage: memres-advise diff A.json B.json\nTry 'memres-advise --help'.\n");
        return 2;
    }
    struct dreport a, b;
    int rc = load(&a, argv[1]);
    if (rc == 0)
        rc = load(&b, argv[2]);
    else
        memset(&b, 0, sizeof b);
    if (rc == 0)
        rc = compare(&a, &b);
    fflush(stdout);
    unload(&a);
    unload(&b);
    return rc == 0 ? 0 : 2;
}
