/* SPDX-License-Identifier: MIT */
/* advise/analyze/html.c -- the report as one self-contained HTML page
 * (--html FILE): nothing fetched, no external script, font or stylesheet;
 * the CSS and the script (html_script.c) are in the page.
 *
 * The page's data is one JSON object in a <script type="application/json">
 * element, written for the page alone: the --json report's figures, made
 * compact (a page of 10,000 sites must render in under 2 s; their --json
 * report is 19 MB, this data 4.7 MB):
 *   "generator"  memres-advise and its version
 *   "run"        the run's figures (the text report's head)
 *   "timeline"   the profile's timeline of live bytes (format.h), or null:
 *                {"peak": index, "interval_ns", "points": [[time_ns,
 *                allocations, live_bytes, live_objects], ...]}
 *   "columns"    the names of a site row's columns
 *   "sites"      one array per site, in the analysis' order; its frames
 *                as indices into "frames"; a histogram as [first bucket,
 *                counts...], the empty buckets at both ends left out
 *   "behind"     the pools behind one function
 *   "names"      every function, file and module name once
 *   "frames"     every distinct frame once: [function, file, line, module,
 *                offset, address], names as indices into "names" (-1:
 *                unknown)
 *   "plan"       the planned sites and the plan file's text, or null
 *   "measured"   measure's table as it wrote it, or null
 * Inside a script element the text must not hold "</script" nor "<!--":
 * every '<' in a string is written as \u003c (a JSON escape; '<' stands
 * nowhere else in JSON), which covers "</".
 *
 * The script renders from that object in one pass, each part's HTML built
 * as one string and set once: the summary and recommendations; the sites
 * table (fixed column widths, so that laying it out measures no cell),
 * sorted on a click on a column header and shown 100 rows a page; one
 * site's frames, figures, lifetime histograms (format.h's log2 buckets,
 * on the allocation clock and in time) and its most frequent sizes; a
 * flame graph (an icicle: outermost frame on top) of the sites' folded
 * stacks (fold.c's frames, as the report gives them) weighted by
 * allocations, bytes or glibc time, a click zooming into a frame; the
 * plan; the measured table; live bytes over time, an SVG line chart of
 * the timeline (axes in time and bytes, in units of the largest figure:
 * MiB from 1 MiB on), its peak marked and labelled (a profile without a
 * timeline, of version 4, gets a note instead).  When the script ends it lays the page
 * out, sets the title to "memres-advise: ok" and writes performance.now()
 * into #render-ms; an exception sets the title to "memres-advise: error
 * ..." (the tests load the page in headless Chromium and read both). */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"

#ifndef MEMRES_ADVISE_VERSION
# define MEMRES_ADVISE_VERSION "unknown"
#endif

/* The plan file's text kept in the page, at most. */
#define PLAN_TEXT_MAX (64u * 1024u)


/* s as a JSON string for the page's data: '"', '\\' and control
 * characters escaped, '<' as \u003c; other bytes as they are (the page is
 * UTF-8; a byte that starts no valid sequence shows as U+FFFD). */
static void data_string(FILE *f, const char *s, size_t max)
{
    if (!s) {
        fputs("null", f);
        return;
    }
    fputc('"', f);
    for (size_t i = 0; s[i] && i < max; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20 || c == '<' || c == 0x7f)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* A number as short as it reads: whole numbers whole (below 2^53, where
 * a double holds them exactly), others to 4 digits; JSON has no NaN. */
static void data_num(FILE *f, double v)
{
    if (!isfinite(v))
        v = 0;
    if (fabs(v) < 9e15 && v == floor(v))
        fprintf(f, "%.0f", v);
    else
        fprintf(f, "%.4g", v);
}

/* ---- names and frames, each written once ---- */

/* Byte strings interned: each distinct key gets the next index. */
struct intern {
    char **key;                  /* by index: a copy, its length in front */
    size_t n, cap;
    size_t *slot;                /* open addressing: index + 1, 0 empty */
    size_t nslot;
};

static uint64_t key_hash(const void *k, size_t len)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (size_t i = 0; i < len; i++) {
        h ^= ((const unsigned char *)k)[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

static bool key_is(const char *stored, const void *k, size_t len)
{
    size_t sl;
    memcpy(&sl, stored, sizeof sl);
    return sl == len && memcmp(stored + sizeof sl, k, len) == 0;
}

/* The index of the len bytes at k in t, added when new; -2 out of memory. */
static long intern(struct intern *t, const void *k, size_t len)
{
    if (2 * (t->n + 1) > t->nslot) {
        size_t ns = t->nslot ? 2 * t->nslot : 1024;
        size_t *slot = calloc(ns, sizeof *slot);
        if (!slot)
            return -2;
        for (size_t i = 0; i < t->n; i++) {
            size_t sl;
            memcpy(&sl, t->key[i], sizeof sl);
            size_t j = key_hash(t->key[i] + sizeof sl, sl) & (ns - 1);
            while (slot[j])
                j = (j + 1) & (ns - 1);
            slot[j] = i + 1;
        }
        free(t->slot);
        t->slot = slot;
        t->nslot = ns;
    }
    size_t j = key_hash(k, len) & (t->nslot - 1);
    for (; t->slot[j]; j = (j + 1) & (t->nslot - 1))
        if (key_is(t->key[t->slot[j] - 1], k, len))
            return (long)(t->slot[j] - 1);
    if (t->n == t->cap) {
        size_t nc = t->cap ? 2 * t->cap : 256;
        char **nk = realloc(t->key, nc * sizeof *nk);
        if (!nk)
            return -2;
        t->key = nk;
        t->cap = nc;
    }
    char *copy = malloc(sizeof len + len + 1);
    if (!copy)
        return -2;
    memcpy(copy, &len, sizeof len);
    memcpy(copy + sizeof len, k, len);
    copy[sizeof len + len] = '\0';
    t->key[t->n] = copy;
    t->slot[j] = ++t->n;
    return (long)(t->n - 1);
}

static void intern_free(struct intern *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->key[i]);
    free(t->key);
    free(t->slot);
}

/* The page's tables: names (functions, files, modules) and frames. */
struct tables {
    struct intern names, frames;
};

/* A frame as written in "frames": its names as indices, -1 unknown. */
struct frame_key {
    long long function, file, line, module, offset, addr;
};

static long name_index(struct tables *t, const char *s)
{
    return s ? intern(&t->names, s, strlen(s)) : -1;
}

/* The index of fr in the frame table: 0.., or -1 out of memory. */
static long frame_index(struct tables *t, const struct mra_frame *fr)
{
    struct frame_key k = { .function = name_index(t, fr->function), .file = name_index(t, fr->file),
                           .line = fr->file ? fr->line : 0, .module = name_index(t, fr->module),
                           .offset = (long long)fr->offset, .addr = (long long)fr->addr };
    if (k.function == -2 || k.file == -2 || k.module == -2)
        return -1;
    long i = intern(&t->frames, &k, sizeof k);
    return i < 0 ? -1 : i;
}

/* Frame fr's index, written; 0, or -1 out of memory. */
static int data_frame(FILE *f, struct tables *t, const struct mra_frame *fr)
{
    long i = frame_index(t, fr);
    if (i < 0)
        return -1;
    fprintf(f, "%ld", i);
    return 0;
}

/* "names" and "frames", from the tables. */
static void data_tables(FILE *f, const struct tables *t)
{
    fputs("\"names\":[", f);
    for (size_t i = 0; i < t->names.n; i++) {
        fputs(i ? ",\n" : "\n", f);
        data_string(f, t->names.key[i] + sizeof(size_t), SIZE_MAX);
    }
    fputs("],\n\"frames\":[", f);
    for (size_t i = 0; i < t->frames.n; i++) {
        struct frame_key k;
        memcpy(&k, t->frames.key[i] + sizeof(size_t), sizeof k);
        fprintf(f, "%s[%lld,%lld,%lld,%lld,%lld,%lld]", i ? ",\n" : "\n", k.function, k.file, k.line, k.module,
                k.offset, k.addr);
    }
    fputc(']', f);
}

/* A log2 histogram as [first bucket, its count, the next's ...], the empty
 * buckets at both ends left out (lifetimes in ns start near 2^8); []
 * when every bucket is empty. */
static void data_hist(FILE *f, const uint64_t *h)
{
    unsigned lo = 0, hi = MRA_HIST;
    while (hi > 0 && !h[hi - 1])
        hi--;
    while (lo < hi && !h[lo])
        lo++;
    fputc('[', f);
    if (lo < hi)
        fprintf(f, "%u", lo);
    for (unsigned b = lo; b < hi; b++)
        fprintf(f, ",%llu", (unsigned long long)h[b]);
    fputc(']', f);
}

static double ratio(uint64_t a, uint64_t b)
{
    return b ? (double)a / (double)b : 0;
}

/* The names of a site row's columns, in the order data_site writes them. */
static const char site_columns[] =
    "\"id\",\"frames\",\"recommendation\",\"thread_safe\",\"allocations\",\"frees\",\"bytes\",\"sizes\","
    "\"other_sizes_count\",\"min_size\",\"max_size\",\"peak_live_objects\",\"peak_live_bytes\","
    "\"never_freed_objects\",\"never_freed_bytes\",\"arena_peak_bytes\",\"mean_ticks\",\"median_ticks\","
    "\"p90_ticks\",\"mean_ns\",\"median_ns\",\"p90_ns\",\"hist_ticks\",\"hist_ns\",\"freed_together_share\","
    "\"stack_like_share\",\"remote_share\",\"reallocs\",\"realloc_moves\",\"realloc_chain_max\",\"glibc_ns\","
    "\"glibc_samples\",\"predicted_saving_ns\",\"memory_delta_bytes\",\"retention_warning\",\"reason\",\"change\","
    "\"near\",\"sketch\"";

static int data_site(FILE *f, struct tables *t, const struct mra_site *s)
{
    const struct mra_site_stats *st = &s->s;
    fprintf(f, "[%u,[", s->id);
    for (unsigned k = 0; k < s->nframes; k++) {
        if (k)
            fputc(',', f);
        if (data_frame(f, t, &s->frames[k]) != 0)
            return -1;
    }
    const char *rec = mra_rec_name(s->rec);
    fprintf(f, "],\"%s\",%d,%llu,%llu,%llu,[", rec, s->thread_safe, (unsigned long long)st->allocations,
            (unsigned long long)st->frees, (unsigned long long)st->bytes);
    for (unsigned k = 0; k < st->nsizes && k < MRA_SIZES; k++)
        fprintf(f, "%s[%llu,%llu]", k ? "," : "", (unsigned long long)st->sizes[k].size,
                (unsigned long long)st->sizes[k].count);
    const uint64_t counts[] = { st->other_sizes_count, st->min_size,     st->max_size,     st->peak_live_objects,
                                st->peak_live_bytes,   st->live_objects, st->live_bytes,   st->arena_peak_bytes };
    fputc(']', f);
    for (size_t k = 0; k < sizeof counts / sizeof *counts; k++)
        fprintf(f, ",%llu", (unsigned long long)counts[k]);
    const double life[] = { ratio(st->lifetime_ticks_sum, st->frees), mra_hist_quantile(st->hist_ticks, 0.5),
                            mra_hist_quantile(st->hist_ticks, 0.9), ratio(st->lifetime_ns_sum, st->frees),
                            mra_hist_quantile(st->hist_ns, 0.5),    mra_hist_quantile(st->hist_ns, 0.9) };
    for (size_t k = 0; k < sizeof life / sizeof *life; k++) {
        fputc(',', f);
        data_num(f, life[k]);
    }
    fputc(',', f);
    data_hist(f, st->hist_ticks);
    fputc(',', f);
    data_hist(f, st->hist_ns);
    const double shares[] = { ratio(st->freed_together, st->frees), ratio(st->stack_like, st->frees),
                              ratio(st->remote_frees, st->frees) };
    for (size_t k = 0; k < 3; k++) {
        fputc(',', f);
        data_num(f, shares[k]);
    }
    fprintf(f, ",%llu,%llu,%llu,%llu,%llu,", (unsigned long long)st->reallocs, (unsigned long long)st->realloc_moves,
            (unsigned long long)st->realloc_chain_max, (unsigned long long)st->glibc_ns,
            (unsigned long long)st->glibc_samples);
    data_num(f, s->predicted_saving_ns);
    fprintf(f, ",%lld,%d,", (long long)s->memory_delta_bytes, s->retention_warning);
    data_string(f, s->reason, sizeof s->reason);
    fputc(',', f);
    data_string(f, s->change, sizeof s->change);
    fputc(',', f);
    data_string(f, s->near, sizeof s->near);
    /* the sketch where something is recommended: the page shows it there */
    if (s->rec != MRA_NONE) {
        fputs(",[", f);
        data_string(f, s->sketch[0], sizeof s->sketch[0]);
        fputc(',', f);
        data_string(f, s->sketch[1], sizeof s->sketch[1]);
        fputs("]]", f);
    } else {
        fputs(",null]", f);
    }
    return 0;
}

/* The run's figures, as the text report's head states them. */
static void data_run(FILE *f, const struct mra_analysis *a)
{
    const struct mra_profile_header *h = &a->h;
    fputs("{\"program\":", f);
    data_string(f, h->program, sizeof h->program);
    if (a->exec_into) {
        fputs(",\"exec_into\":", f);
        data_string(f, a->exec_into, strlen(a->exec_into) + 1);
    }
    const struct {
        const char *name;
        double v;
    } nums[] = {
        { "pid", (double)h->pid },
        { "run_time_ns", a->program_ns },
        { "recorded_time_ns", a->recorded_ns },
        { "allocations", (double)h->allocations },
        { "frees", (double)h->frees },
        { "reallocs", (double)h->reallocs },
        { "bytes", (double)h->bytes },
        { "peak_live_bytes", (double)h->peak_live_bytes },
        { "peak_live_objects", (double)h->peak_live_objects },
        { "live_bytes_at_exit", (double)h->live_bytes_at_exit },
        { "live_objects_at_exit", (double)h->live_objects_at_exit },
        { "threads", (double)h->threads },
        { "depth", a->opts.depth },
        { "nsites", (double)a->nsites_total },
        { "min_share", a->opts.th.min_share },
        { "total_predicted_saving_ns", a->total_saving_ns },
        { "heap_given_back_bytes", (double)a->heap.given_back_bytes },
        { "heap_given_back_events", (double)a->heap.given_back_events },
        { "heap_retaken_bytes", (double)a->heap.retaken_bytes },
        { "heap_retaken_events", (double)a->heap.retaken_events },
        { "heap_retaken_ns", a->heap_retaken_ns },
    };
    for (size_t i = 0; i < sizeof nums / sizeof *nums; i++) {
        fprintf(f, ",\"%s\":", nums[i].name);
        data_num(f, nums[i].v);
    }
    fputs(",\"keep_tunables\":", f);
    data_string(f, mra_keep_tunables, SIZE_MAX);
    fputs(",\"costs_machine\":", f);
    data_string(f, a->costs.machine, sizeof a->costs.machine);
    fputs(",\"folded\":[", f);
    for (size_t i = 0; i < a->nfolded; i++) {
        if (i)
            fputc(',', f);
        data_string(f, a->folded[i], SIZE_MAX);
    }
    fputs("]}", f);
}

/* The timeline: {"peak": index, "interval_ns": n, "points": [[time_ns,
 * allocations, live_bytes, live_objects], ...]}, or null. */
static void data_timeline(FILE *f, const struct mra_analysis *a)
{
    if (!a->tl.npoints) {
        fputs("null", f);
        return;
    }
    fprintf(f, "{\"peak\":%u,\"interval_ns\":%llu,\"points\":[", a->tl.peak,
            (unsigned long long)a->tl.interval_ns);
    for (uint32_t i = 0; i < a->tl.npoints; i++) {
        const struct mra_timeline_point *q = &a->timeline[i];
        fprintf(f, "%s[%llu,%llu,%llu,%llu]", i ? "," : "", (unsigned long long)q->time_ns,
                (unsigned long long)q->allocations, (unsigned long long)q->live_bytes,
                (unsigned long long)q->live_objects);
    }
    fputs("]}", f);
}

char *mra_html_data(const struct mra_analysis *a)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    struct tables t = { 0 };
    int rc = 0;
    fputs("\"run\":", f);
    data_run(f, a);
    fputs(",\n\"timeline\":", f);
    data_timeline(f, a);
    fprintf(f, ",\n\"columns\":[%s],\n\"sites\":[", site_columns);
    for (size_t i = 0; i < a->nsites && rc == 0; i++) {
        fputs(i ? ",\n" : "\n", f);
        rc = data_site(f, &t, &a->sites[i]);
    }
    fputs("],\n\"behind\":[", f);
    for (size_t i = 0; i < a->nbehind && rc == 0; i++) {
        const struct mra_behind *b = &a->behind[i];
        fprintf(f, "%s{\"frame\":", i ? "," : "");
        rc = data_frame(f, &t, &b->frame);
        fprintf(f, ",\"sites\":%zu,\"allocations\":%llu,\"thread_safe\":%d,\"predicted_saving_ns\":", b->nsites,
                (unsigned long long)b->allocations, b->thread_safe);
        data_num(f, b->predicted_saving_ns);
        fputs(",\"reason\":", f);
        data_string(f, b->reason, sizeof b->reason);
        fputc('}', f);
    }
    /* the tables last: the sites and the behind entries filled them */
    fputs("],\n", f);
    data_tables(f, &t);
    intern_free(&t.names);
    intern_free(&t.frames);
    if (fclose(f) != 0 || rc != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* The plan file's first PLAN_TEXT_MAX bytes, malloc'ed; NULL where it
 * cannot be read. */
static char *plan_text(const char *path)
{
    FILE *p = path ? fopen(path, "r") : NULL;
    if (!p)
        return NULL;
    char *t = malloc(PLAN_TEXT_MAX + 1);
    size_t n = t ? fread(t, 1, PLAN_TEXT_MAX, p) : 0;
    fclose(p);
    if (t)
        t[n] = '\0';
    return t;
}

static void data_plan(FILE *f, const struct mra_html_extra *x)
{
    const struct mra_planned *pl = x ? x->plan : NULL;
    if (!pl) {
        fputs("null", f);
        return;
    }
    fputs("{\"path\":", f);
    data_string(f, x->plan_kept ? x->plan_path : NULL, SIZE_MAX);
    fprintf(f, ",\"mode\":\"%s\",\"predicted_ns\":%.0f,\"sites\":[",
            pl->mode == MRA_PLAN_CANDIDATES       ? "every candidate"
            : pl->mode == MRA_PLAN_TOP_CANDIDATES ? "the candidates that would save most"
                                                  : "the recommended sites",
            pl->predicted_ns);
    for (size_t i = 0; i < pl->n; i++)
        fprintf(f, "%s{\"site\":%u,\"kind\":\"%s\",\"predicted_ns\":%.0f,\"glibc_ns\":%.0f}", i ? "," : "",
                pl->s[i].site, mra_rec_name(pl->s[i].kind), pl->s[i].predicted_ns, pl->s[i].glibc_ns);
    fputs("],\"text\":", f);
    char *t = plan_text(x->plan_path);
    data_string(f, t, PLAN_TEXT_MAX);
    free(t);
    fputc('}', f);
}

int mra_html_write(FILE *f, const char *data, const struct mra_html_extra *x)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width\">\n<title>memres-advise: loading</title>\n"
          "<script>window.onerror = function (m, u, l) { document.title = \"memres-advise: error \" + m + "
          "\" (line \" + l + \")\"; };</script>\n<style>\n",
          f);
    mra_html_put_css(f);
    fputs("</style></head>\n<body>\n", f);
    mra_html_put_body(f);
    fputs("<script type=\"application/json\" id=\"data\">{\"generator\":\"memres-advise " MEMRES_ADVISE_VERSION "\",\n",
          f);
    fputs(data, f);
    fputs(",\n\"plan\":", f);
    data_plan(f, x);
    fputs(",\n\"measured\":", f);
    data_string(f, x ? x->measured : NULL, SIZE_MAX);
    fputs("}</script>\n<script>\n", f);
    mra_html_put_script(f);
    fputs("</script>\n</body></html>\n", f);
    return ferror(f) ? -1 : 0;
}

int mra_report_html(FILE *f, const struct mra_analysis *a, const struct mra_html_extra *x)
{
    char *data = mra_html_data(a);
    if (!data) {
        fprintf(stderr, "memres-advise: out of memory writing the HTML page\n");
        return -1;
    }
    int rc = mra_html_write(f, data, x);
    free(data);
    return rc;
}
