/* SPDX-License-Identifier: MIT */
/* src/tree_report.c -- what the tree of lifetimes tells (memres/tree.h):
 * mr_node_stats and the reports (mr_report), PostgreSQL's
 * MemoryContextStats.  Each node's figures come from its kind's ops; the
 * kinds themselves (which node a resource view is: a byte counted once)
 * from the table of kinds, tree_kinds.c.
 *
 * Every walk here is a loop over the links (parent, child, older), in
 * pre-order, the reports with a per-level counter of the children shown.
 * Depth costs no stack.
 */
#include <string.h>

#include "internal.h"
#include "tree.h"

/* ---- walks ---- */

/* The next node of root's subtree in pre-order (children newest first),
 * after n's subtree when skip, or NULL. */
static const mr_node *next_in(const mr_node *n, const mr_node *root, bool skip)
{
    if (!skip && n->child != NULL)
        return n->child;
    for (; n != root; n = n->parent)
        if (n->older != NULL)
            return n->older;
    return NULL;
}

static void figures_of(const mr_node *n, struct mri_figures *f)
{
    n->ops->figures(n, f); /* its stats: the kept children's bytes in held */
    size_t bytes, blocks;
    mri_node_kept_held(n, &bytes, &blocks);
    f->blocks += blocks;
}

/* A sum of figures: what a report line shows. */
struct sum {
    size_t total, blocks, free, chunks, used, peak, allocations, upstream_allocations, upstream_deallocations;
    size_t nodes;
};

static void sum_add(struct sum *t, const struct mri_figures *f)
{
    t->total += f->s.held;
    t->blocks += f->blocks;
    t->free += f->s.held > f->s.in_use ? f->s.held - f->s.in_use : 0;
    t->chunks += f->free_chunks;
    t->used += f->s.in_use;
    t->peak += f->s.peak_held;
    t->allocations += f->s.allocations;
    t->upstream_allocations += f->s.upstream_allocations;
    t->upstream_deallocations += f->s.upstream_deallocations;
    t->nodes++;
}

/* Stamps every node of root's subtree with a fresh number, so that
 * counted_once can tell whether a node's upstream is inside it. */
static uint64_t stamp_subtree(const mr_node *root)
{
    static _Atomic uint64_t last;
    uint64_t s = atomic_fetch_add_explicit(&last, 1, memory_order_relaxed) + 1;
    for (const mr_node *n = root; n != NULL; n = next_in(n, root, false))
        atomic_store_explicit(&((mr_node *)(uintptr_t)n)->stamp, s, memory_order_relaxed);
    return s;
}

/* Are n's bytes its own, not inside the figures of another node of the
 * stamped subtree (n's upstream is not such a node's resource view)? */
static bool counted_once(const mr_node *n, uint64_t stamp)
{
    const mr_node *u = n->upstream != NULL ? mri_node_of(n->upstream) : NULL;
    return u == NULL || atomic_load_explicit(&((mr_node *)(uintptr_t)u)->stamp, memory_order_relaxed) != stamp;
}

MR_API void mr_node_stats(const mr_node *n, bool recurse, mr_stats *out)
{
    struct mri_figures f;
    if (!recurse) {
        figures_of(n, &f);
        *out = f.s;
        return;
    }
    const uint64_t stamp = stamp_subtree(n);
    memset(out, 0, sizeof *out);
    for (const mr_node *q = n; q != NULL; q = next_in(q, n, false)) {
        if (!counted_once(q, stamp))
            continue;
        figures_of(q, &f);
        out->in_use += f.s.in_use;
        out->held += f.s.held;
        out->peak_held += f.s.peak_held;
        out->allocations += f.s.allocations;
        out->upstream_allocations += f.s.upstream_allocations;
        out->upstream_deallocations += f.s.upstream_deallocations;
    }
}

/* ---- reports ---- */

struct report {
    FILE *f;
    bool json;
    uint64_t stamp;
    struct sum grand;  /* every node of the subtree, each byte once */
    size_t written;    /* node lines */
    size_t next_id;
};

/* A report line, built on the stack and written with one fwrite (no
 * printf: it is most of a report's time, and stdio allocates nothing for
 * fwrite to a stream that has its buffer).  A line too long is cut. */
struct line {
    size_t len;
    char buf[512];
};

static void put(struct line *l, const char *s, size_t n)
{
    if (n > sizeof l->buf - 1 - l->len)
        n = sizeof l->buf - 1 - l->len;
    memcpy(l->buf + l->len, s, n);
    l->len += n;
}
#define PUT(l, lit) put(l, lit, sizeof lit - 1)

static void put_uint(struct line *l, size_t v)
{
    char d[24];
    size_t k = sizeof d;
    do
        d[--k] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    put(l, d + k, sizeof d - k);
}

static void put_spaces(struct line *l, size_t n)
{
    static const char spaces[] = "                                                                ";
    while (n > 0) {
        size_t k = n < sizeof spaces - 1 ? n : sizeof spaces - 1;
        put(l, spaces, k);
        n -= k;
    }
}

/* A name as a report shows it: at most 100 bytes (then "..."), control
 * characters as spaces; JSON-escaped for JSON. */
static void put_name(struct line *l, const char *name, bool json)
{
    for (size_t i = 0; name[i] != '\0'; i++) {
        if (i == 100) {
            PUT(l, "...");
            return;
        }
        char c = name[i];
        if ((unsigned char)c < 0x20 || c == 0x7f)
            c = ' ';
        else if (json && (c == '"' || c == '\\'))
            PUT(l, "\\");
        put(l, &c, 1);
    }
}

static void line_out(struct report *r, struct line *l)
{
    l->buf[l->len++] = '\n'; /* put leaves room for it */
    fwrite(l->buf, 1, l->len, r->f);
}

static void add_grand(struct report *r, const mr_node *n, const struct mri_figures *f)
{
    if (counted_once(n, r->stamp))
        sum_add(&r->grand, f);
    else
        r->grand.nodes++;
}

/* "T total in B blocks; F free (C chunks); U used" (PostgreSQL's words) */
static void put_stats(struct line *l, const struct sum *s, const char *total_word)
{
    put_uint(l, s->total);
    put(l, total_word, strlen(total_word));
    put_uint(l, s->blocks);
    PUT(l, " blocks; ");
    put_uint(l, s->free);
    PUT(l, " free (");
    put_uint(l, s->chunks);
    PUT(l, " chunks); ");
    put_uint(l, s->used);
    PUT(l, " used");
}

/* ,"total_bytes":..,"allocations":..} */
static void put_json_figures(struct line *l, const struct sum *s)
{
    PUT(l, "\"total_bytes\":");
    put_uint(l, s->total);
    PUT(l, ",\"total_nblocks\":");
    put_uint(l, s->blocks);
    PUT(l, ",\"free_bytes\":");
    put_uint(l, s->free);
    PUT(l, ",\"free_chunks\":");
    put_uint(l, s->chunks);
    PUT(l, ",\"used_bytes\":");
    put_uint(l, s->used);
    PUT(l, ",\"peak_bytes\":");
    put_uint(l, s->peak);
    PUT(l, ",\"allocations\":");
    put_uint(l, s->allocations);
    PUT(l, "}");
}

/* {"id":I,"parent":P,"level":L,"name": (P 0: null) */
static void put_json_head(struct line *l, size_t id, size_t parent_id, int level)
{
    PUT(l, "{\"id\":");
    put_uint(l, id);
    PUT(l, ",\"parent\":");
    if (parent_id != 0)
        put_uint(l, parent_id);
    else
        PUT(l, "null");
    PUT(l, ",\"level\":");
    put_uint(l, (size_t)level);
    PUT(l, ",\"name\":");
}

/* One node's line; returns its id. */
static size_t emit(struct report *r, const mr_node *n, int level, size_t parent_id)
{
    struct mri_figures f;
    figures_of(n, &f);
    add_grand(r, n, &f);
    struct sum s = {0};
    sum_add(&s, &f);
    const size_t id = ++r->next_id;
    struct line l;
    l.len = 0;
    if (r->json) {
        put_json_head(&l, id, parent_id, level);
        PUT(&l, "\"");
        put_name(&l, mri_node_name(n), true);
        PUT(&l, "\",\"kind\":\"");
        put(&l, n->ops->kind, strlen(n->ops->kind));
        PUT(&l, "\",");
        put_json_figures(&l, &s);
    } else {
        put_spaces(&l, 2 * (size_t)level);
        put_name(&l, mri_node_name(n), false);
        PUT(&l, ": ");
        put(&l, n->ops->kind, strlen(n->ops->kind));
        PUT(&l, " ");
        put_stats(&l, &s, " total in ");
    }
    line_out(r, &l);
    r->written++;
    return id;
}

/* The "K more child contexts" line for first and its older siblings, their
 * subtrees included, at level. */
static void emit_more(struct report *r, const mr_node *first, int level, size_t parent_id)
{
    struct sum s = {0};
    size_t contexts = 0;
    for (const mr_node *c = first; c != NULL; c = c->older, contexts++) {
        for (const mr_node *q = c; q != NULL; q = next_in(q, c, false)) {
            struct mri_figures f;
            figures_of(q, &f);
            add_grand(r, q, &f);
            sum_add(&s, &f);
        }
    }
    struct line l;
    l.len = 0;
    if (r->json) {
        put_json_head(&l, ++r->next_id, parent_id, level);
        PUT(&l, "null,\"kind\":\"more\",\"contexts\":");
        put_uint(&l, contexts);
        PUT(&l, ",");
        put_json_figures(&l, &s);
    } else {
        put_spaces(&l, 2 * (size_t)level);
        put_uint(&l, contexts);
        PUT(&l, " more child contexts containing ");
        put_stats(&l, &s, " total in ");
    }
    line_out(r, &l);
}

MR_API size_t mr_report(const mr_node *root, FILE *f, const mr_report_options *opts)
{
    if (root == NULL || f == NULL)
        return 0;
    mr_report_options o = {0};
    if (opts != NULL)
        o = *opts;
    const int max_depth = o.max_depth <= 0 ? 100 : o.max_depth > MR_REPORT_MAX_DEPTH ? MR_REPORT_MAX_DEPTH : o.max_depth;
    const size_t max_children = o.max_children <= 0 ? 100 : (size_t)o.max_children;
    struct report r = {.f = f, .json = o.format == MR_REPORT_JSON, .stamp = stamp_subtree(root)};
    /* per level on the current path: its line's id, the children shown */
    size_t ids[MR_REPORT_MAX_DEPTH + 1], shown[MR_REPORT_MAX_DEPTH + 1];

    const mr_node *n = root;
    int level = 0;
    ids[0] = emit(&r, root, 0, 0);
    for (;;) {
        if (n->child != NULL) {
            if (level < max_depth) {
                n = n->child;
                level++;
                shown[level] = 1;
                ids[level] = emit(&r, n, level, ids[level - 1]);
                continue;
            }
            emit_more(&r, n->child, level + 1, ids[level]);
        }
        /* n's subtree is done: its next sibling, or up */
        for (;;) {
            if (n == root)
                goto done;
            if (n->older != NULL) {
                if (shown[level] < max_children)
                    break;
                emit_more(&r, n->older, level, ids[level - 1]);
            }
            n = n->parent;
            level--;
        }
        n = n->older;
        shown[level]++;
        ids[level] = emit(&r, n, level, ids[level - 1]);
    }
done:;
    struct line l;
    l.len = 0;
    if (r.json) {
        PUT(&l, "{\"kind\":\"total\",\"nodes\":");
        put_uint(&l, r.grand.nodes);
        PUT(&l, ",");
        put_json_figures(&l, &r.grand);
    } else {
        PUT(&l, "Grand total: ");
        put_stats(&l, &r.grand, " bytes in ");
    }
    line_out(&r, &l);
    fflush(f);
    return r.written;
}
