/* SPDX-License-Identifier: MIT */
/* bench/report.c -- the results as people and programs read them: the
 * machine and build header, a table per scenario (stdout), --json FILE
 * (every row with all its runs) and --plot FILE.svg (a hand-written SVG bar
 * chart per scenario: median wall time with a [min, max] whisker).
 * Numbers are formatted here (times by util.c's fmt_time, which run.c's
 * progress shares); the rows come from main.c and run.c.
 */
#include <errno.h>
#include <gnu/libc-version.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "bench_config.h"
#include "harness.h"
#include "memres/memres.h"

/* ------------------------------------------------------------------------ */
/* The machine. */

/* The value of the first line of /proc/cpuinfo that names the CPU. */
static void read_cpu_model(char *cpu, size_t n)
{
    snprintf(cpu, n, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f == NULL)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0 && strncmp(line, "Model", 5) != 0)
            continue;
        char *c = strchr(line, ':');
        if (c) {
            c++;
            while (*c == ' ' || *c == '\t')
                c++;
            c[strcspn(c, "\n")] = '\0';
            snprintf(cpu, n, "%s", c);
            break;
        }
    }
    fclose(f);
}

/* The selected mode of transparent huge pages: "[madvise]" -> "madvise". */
static void read_thp(char *thp, size_t n)
{
    snprintf(thp, n, "unknown");
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (f == NULL)
        return;
    char line[256];
    if (fgets(line, sizeof line, f)) {
        char *a = strchr(line, '['), *b = a ? strchr(a, ']') : NULL;
        if (a && b) {
            *b = '\0';
            snprintf(thp, n, "%s", a + 1);
        }
    }
    fclose(f);
}

void machine_read(machine *m)
{
    memset(m, 0, sizeof *m);
    read_cpu_model(m->cpu, sizeof m->cpu);
    m->cpus = sysconf(_SC_NPROCESSORS_ONLN);
    struct utsname u;
    if (uname(&u) == 0)
        snprintf(m->kernel, sizeof m->kernel, "%s %s %s", u.sysname, u.release, u.machine);
    read_thp(m->thp, sizeof m->thp);
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(m->date, sizeof m->date, "%Y-%m-%d %H:%M:%S %z", &tm);
    snprintf(m->cxx, sizeof m->cxx, "%s", bench_cxx_version());
    int fd = perf_open();
    if (fd >= 0) {
        snprintf(m->perf, sizeof m->perf, "perf_event_open (user-space instructions)");
        close(fd);
    } else {
        snprintf(m->perf, sizeof m->perf, "n/a (perf_event_open: %s)", strerror(errno));
    }
}

void print_header(FILE *f, const options *o, const machine *m)
{
    fprintf(f, PROG " (memres %s)\n", MEMRES_VERSION_STRING);
    fprintf(f, "date:      %s\n", m->date);
    fprintf(f, "machine:   %s, %ld CPUs online; %s; THP %s; glibc %s\n", m->cpu, m->cpus, m->kernel, m->thp,
            gnu_get_libc_version());
    fprintf(f, "compilers: C %s (%s); C++ %s\n", BENCH_C_COMPILER, __VERSION__, m->cxx);
    fprintf(f, "flags:     bench C: %s; C++: %s; library (%s): %s\n", BENCH_C_FLAGS, BENCH_CXX_FLAGS,
            BENCH_BUILD_TYPE, BENCH_LIB_FLAGS);
    fprintf(f, "peers:     %s; malloc by LD_PRELOAD:", BENCH_PEERS);
    for (int i = 1; i < N_MALLOCS; i++)
        fprintf(f, " %s%s", mallocs[i].name, mallocs[i].path[0] ? "" : " (missing)");
    fputc('\n', f);
    fprintf(f, "method:    each run a fresh process; wall time inside it around the workload;\n"
               "           user/sys/RSS/faults of the whole process; %d run%s per row after %d discarded,\n"
               "           in rounds (each round runs every row of a scenario once, order shuffled per round);\n"
               "           median [min, max]; xglibc, xpeer: medians of the per-round ratios,\n"
               "           xpeer range: the lowest and highest round; instructions: %s\n",
            o->runs, o->runs == 1 ? "" : "s", o->warmup, m->perf);
    fprintf(f, "args:      depth %d, threads %d%s\n", o->args.depth, o->args.threads,
            o->args.quick ? ", --quick (small sizes)" : "");
    for (int i = 1; i < N_MALLOCS; i++)
        if (!mallocs[i].path[0])
            fprintf(f, "notice:    %s not found (%s; apt-get install %s): its rows are skipped\n", mallocs[i].name,
                    mallocs[i].soname, mallocs[i].package);
    fprintf(f, "legend:    * memres   ^ reference limit (hand-written)   > external program\n");
}

/* ------------------------------------------------------------------------ */
/* Formatting. */

static const char *fmt_bytes(char *b, size_t n, double bytes)
{
    if (isnan(bytes) || bytes <= 0)
        snprintf(b, n, "-");
    else if (bytes >= 1024.0 * 1024 * 1024)
        snprintf(b, n, "%.2fG", bytes / (1024.0 * 1024 * 1024));
    else if (bytes >= 1024.0 * 1024)
        snprintf(b, n, "%.1fM", bytes / (1024.0 * 1024));
    else if (bytes >= 1024.0)
        snprintf(b, n, "%.1fK", bytes / 1024.0);
    else
        snprintf(b, n, "%.0f", bytes);
    return b;
}

static const char *fmt_count(char *b, size_t n, double c)
{
    if (isnan(c) || c < 0)
        snprintf(b, n, "n/a");
    else if (c >= 1e9)
        snprintf(b, n, "%.2fG", c / 1e9);
    else if (c >= 1e6)
        snprintf(b, n, "%.2fM", c / 1e6);
    else if (c >= 1e4)
        snprintf(b, n, "%.1fk", c / 1e3);
    else
        snprintf(b, n, "%.0f", c);
    return b;
}

static const char *fmt_ratio(char *b, size_t n, double x)
{
    if (isnan(x))
        snprintf(b, n, "-");
    else
        snprintf(b, n, "%.3f", x);
    return b;
}

static char row_mark(const row *r)
{
    return r->v->kind == BENCH_MEMRES ? '*' : r->v->kind == BENCH_LIMIT ? '^' : r->v->kind == BENCH_EXTERNAL ? '>' : ' ';
}

/* ------------------------------------------------------------------------ */
/* The table. */

/* One row; w: the width of the variant column. */
static void print_row(FILE *f, const row *r, int w)
{
    char lab[64], b[13][32];
    snprintf(lab, sizeof lab, "%s", r->v->name);
    if (r->failed) {
        fprintf(f, "%c %-*s %-8s %3d FAILED: %s\n", row_mark(r), w, lab, mallocs[r->malloc_idx].name, r->threads,
                r->why);
        return;
    }
    if (isnan(r->x_peer_lo))
        snprintf(b[12], 32, "-");
    else
        snprintf(b[12], 32, "%.2f-%.2f", r->x_peer_lo, r->x_peer_hi);
    fprintf(f, "%c %-*s %-8s %3d %9s %9s %9s %8s %8s %8s %8s %8s %8s %8s %7s %7s %11s%s\n", row_mark(r), w, lab,
            mallocs[r->malloc_idx].name, r->threads, fmt_time(b[0], 32, r->med), fmt_time(b[1], 32, r->min),
            fmt_time(b[2], 32, r->max), fmt_time(b[3], 32, r->med_user), fmt_time(b[4], 32, r->med_sys),
            fmt_bytes(b[5], 32, r->med_rss * 1024), fmt_count(b[6], 32, r->med_flt),
            fmt_count(b[7], 32, r->med_instr), fmt_bytes(b[8], 32, (double)r->upstream),
            fmt_bytes(b[9], 32, (double)r->requested), fmt_ratio(b[10], 32, r->x_glibc),
            fmt_ratio(b[11], 32, r->x_peer), b[12], r->mismatch ? "  OUTPUT MISMATCH" : "");
}

/* The notes of the rows (bench_note: per-run measurements beside the
 * output, not compared), each line under its row's label. */
static void print_notes(FILE *f, const row *rows, int nrows)
{
    bool any = false;
    for (int i = 0; i < nrows; i++) {
        const row *r = &rows[i];
        if (r->failed || r->note == NULL)
            continue;
        if (!any)
            fprintf(f, "  notes (last run of each row):\n");
        any = true;
        fprintf(f, "    %s (%s):\n", r->v->name, mallocs[r->malloc_idx].name);
        for (const char *p = r->note; *p;) {
            size_t len = strcspn(p, "\n");
            fprintf(f, "      %.*s\n", (int)len, p);
            p += len + (p[len] == '\n');
        }
    }
}

/* The output of the scenario's first row that ran (at most 16 lines). */
static void print_output(FILE *f, const row *rows, int nrows)
{
    const row *ref = NULL;
    int agree = 0;
    for (int i = 0; i < nrows; i++) {
        if (ref == NULL && !rows[i].failed)
            ref = &rows[i];
        agree += !rows[i].failed && !rows[i].mismatch;
    }
    if (ref == NULL || ref->text == NULL || ref->text[0] == '\0')
        return;
    fprintf(f, "  output (%d %s, checksum %016" PRIx64 "):\n", agree, agree == 1 ? "row" : "rows agree",
            ref->checksum);
    const char *p = ref->text;
    int lines = 0;
    while (*p && lines < 16) {
        size_t len = strcspn(p, "\n");
        fprintf(f, "    %.*s\n", (int)len, p);
        p += len + (p[len] == '\n');
        lines++;
    }
    if (*p)
        fprintf(f, "    ...\n");
}

void print_scenario(FILE *f, const options *o, int si, row *rows, int nrows, char **skipped, int nskipped)
{
    const scenario *s = &scenarios[si];
    fprintf(f, "\n== %s", s->name);
    if (strcmp(s->name, "binary-trees") == 0)
        fprintf(f, " (depth %d)", o->args.depth);
    if (o->args.threads > 1)
        fprintf(f, " (threaded variants: %d threads; thr = threads a row used)", o->args.threads);
    fprintf(f, " ==\n");
    int w = 26; /* the variant column: 26, or the longest name (at most 63) */
    for (int i = 0; i < nrows; i++) {
        size_t len = strlen(rows[i].v->name);
        if (len > (size_t)w)
            w = len < 63 ? (int)len : 63;
    }
    fprintf(f, "  %-*s %-8s %3s %9s %9s %9s %8s %8s %8s %8s %8s %8s %8s %7s %7s %11s\n", w, "variant", "malloc",
            "thr", "median", "min", "max", "user", "sys", "peakRSS", "minflt", "instr", "held", "req", "xglibc",
            "xpeer", "xpeer range");
    for (int i = 0; i < nrows; i++)
        print_row(f, &rows[i], w);
    for (int i = 0; i < nskipped; i++)
        fprintf(f, "  skipped %s\n", skipped[i]);
    print_notes(f, rows, nrows);
    print_output(f, rows, nrows);
    fflush(f);
}

/* ------------------------------------------------------------------------ */
/* Files. */

static FILE *file_open(const char *path)
{
    FILE *f = fopen(path, "w");
    if (f == NULL)
        fprintf(stderr, PROG ": cannot write %s: %s\n", path, strerror(errno));
    return f;
}

static void file_close(FILE *f, const char *path)
{
    if (fclose(f) != 0)
        fprintf(stderr, PROG ": writing %s: %s\n", path, strerror(errno));
}

/* ------------------------------------------------------------------------ */
/* JSON. */

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c == '\n')
            fputs("\\n", f);
        else if (c == '\t')
            fputs("\\t", f);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void json_num(FILE *f, double x)
{
    if (isnan(x) || isinf(x))
        fputs("null", f);
    else
        fprintf(f, "%.9g", x);
}

/* The text before a number (a separator and a key), and the number. */
static void json_field(FILE *f, const char *before, double x)
{
    fputs(before, f);
    json_num(f, x);
}

static void json_array(FILE *f, const double *v, int n)
{
    fputc('[', f);
    for (int i = 0; i < n; i++) {
        if (i)
            fputc(',', f);
        json_num(f, v[i]);
    }
    fputc(']', f);
}

/* `, "key": value` for each pair: keys and string values alternate. */
static void json_strs(FILE *f, const char *const *kv, int n)
{
    for (int i = 0; i < n; i += 2) {
        fprintf(f, "%s\"%s\": ", i ? ", " : "", kv[i]);
        json_str(f, kv[i + 1]);
    }
}

/* Everything before the rows: the program, the machine, the build, the args. */
static void json_head(FILE *f, const options *o, const machine *m, int errors)
{
    fprintf(f, "{\n  \"program\": \"" PROG "\", \"memres_version\": \"%s\",\n", MEMRES_VERSION_STRING);
    fputs("  \"machine\": {\"cpu\": ", f);
    json_str(f, m->cpu);
    fprintf(f, ", \"cpus\": %ld, ", m->cpus);
    const char *const mach[] = { "kernel", m->kernel, "thp", m->thp, "glibc", gnu_get_libc_version(), "date", m->date };
    json_strs(f, mach, 8);
    fputs("},\n  \"build\": {", f);
    const char *const build[] = {
        "c_compiler", BENCH_C_COMPILER, "cxx_compiler", m->cxx, "c_flags", BENCH_C_FLAGS,
        "cxx_flags", BENCH_CXX_FLAGS, "library_flags", BENCH_LIB_FLAGS, "build_type", BENCH_BUILD_TYPE,
    };
    json_strs(f, build, 12);
    fputs("},\n", f);
    fprintf(f, "  \"args\": {\"depth\": %d, \"threads\": %d, \"quick\": %s, \"runs\": %d, \"warmup\": %d},\n",
            o->args.depth, o->args.threads, o->args.quick ? "true" : "false", o->runs, o->warmup);
    fputs("  \"instructions\": ", f);
    json_str(f, m->perf);
    fprintf(f, ",\n  \"errors\": %d,\n  \"rows\": [\n", errors);
}

static void json_row(FILE *f, const row *r, bool last)
{
    fputs("    {\"scenario\": ", f);
    json_str(f, r->v->scenario);
    fputs(", \"variant\": ", f);
    json_str(f, r->v->name);
    fprintf(f, ", \"kind\": \"%s\", \"malloc\": \"%s\", \"threads\": %d, \"ok\": %s", kind_name(r->v->kind),
            mallocs[r->malloc_idx].name, r->threads, r->failed || r->mismatch ? "false" : "true");
    if (r->failed) {
        fputs(", \"error\": ", f);
        json_str(f, r->why);
    }
    json_field(f, ",\n     \"wall_s\": {\"median\": ", r->med);
    json_field(f, ", \"min\": ", r->min);
    json_field(f, ", \"max\": ", r->max);
    fputs(", \"runs\": ", f);
    json_array(f, r->wall, r->nruns);
    json_field(f, "},\n     \"user_s\": ", r->med_user);
    json_field(f, ", \"sys_s\": ", r->med_sys);
    json_field(f, ", \"peak_rss_kib\": ", r->med_rss);
    json_field(f, ", \"minor_faults\": ", r->med_flt);
    json_field(f, ", \"instructions\": ", r->med_instr >= 0 ? r->med_instr : NAN);
    fprintf(f, ",\n     \"upstream_bytes\": %" PRIu64 ", \"requested_bytes\": %" PRIu64 ", \"checksum\": \"%016" PRIx64
               "\", \"x_glibc\": ",
            r->upstream, r->requested, r->checksum);
    json_num(f, r->x_glibc);
    json_field(f, ", \"x_best_peer\": ", r->x_peer);
    json_field(f, ", \"x_best_peer_min\": ", r->x_peer_lo);
    json_field(f, ", \"x_best_peer_max\": ", r->x_peer_hi);
    fputs(", \"output\": ", f);
    json_str(f, r->text ? r->text : "");
    if (r->note) {
        fputs(", \"note\": ", f);
        json_str(f, r->note);
    }
    fprintf(f, "}%s\n", last ? "" : ",");
}

void write_json(const char *path, const options *o, const machine *m, const plan *p, int errors)
{
    FILE *f = file_open(path);
    if (f == NULL)
        return;
    json_head(f, o, m, errors);
    for (int i = 0; i < p->nrows; i++)
        json_row(f, &p->rows[i], i + 1 == p->nrows);
    fputs("  ],\n  \"skipped\": [", f);
    int first = 1;
    for (int si = 0; si < n_scenarios; si++)
        for (int i = 0; i < p->nskipped[si]; i++) {
            fputs(first ? "\n    {\"scenario\": " : ",\n    {\"scenario\": ", f);
            first = 0;
            json_str(f, scenarios[si].name);
            fputs(", \"what\": ", f);
            json_str(f, p->skipped[si][i]);
            fputc('}', f);
        }
    fputs("\n  ]\n}\n", f);
    file_close(f, path);
}

/* ------------------------------------------------------------------------ */
/* SVG. */

enum { SVG_W = 980, SVG_LABEL_W = 300, SVG_BAR_X = 310, SVG_BAR_W = 500, SVG_ROW_H = 20, SVG_HEAD = 70,
       SVG_GAP = 40 };

static void svg_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '&')
            fputs("&amp;", f);
        else if (*s == '<')
            fputs("&lt;", f);
        else if (*s == '>')
            fputs("&gt;", f);
        else
            fputc(*s, f);
    }
}

static const char *kind_color(enum bench_kind k)
{
    switch (k) {
    case BENCH_MEMRES: return "#d62728";
    case BENCH_MALLOC: return "#1f77b4";
    case BENCH_PEER: return "#2ca02c";
    case BENCH_LIMIT: return "#7f7f7f";
    case BENCH_EXTERNAL: return "#9467bd";
    }
    return "#000000";
}

/* The rows of scenario si that ran, and the longest of their max times. */
static int svg_bars(const plan *p, int si, double *top)
{
    int n = 0;
    *top = 0;
    for (int i = 0; i < p->nrows; i++)
        if (p->rows[i].scen == si && !p->rows[i].failed) {
            n++;
            if (p->rows[i].max > *top)
                *top = p->rows[i].max;
        }
    return n;
}

/* The document, its title line, the machine line and the legend. */
static void svg_head(FILE *f, const options *o, const machine *m, const plan *p)
{
    int height = SVG_HEAD;
    for (int si = 0; si < n_scenarios; si++) {
        double top;
        int n = svg_bars(p, si, &top);
        if (n)
            height += SVG_GAP + n * SVG_ROW_H + 10;
    }
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" "
               "font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", SVG_W, height + 10);
    fprintf(f, "<text x=\"10\" y=\"20\" font-size=\"15\" font-weight=\"bold\">" PROG
               ": median wall time [min, max] of %d run%s</text>\n", o->runs, o->runs == 1 ? "" : "s");
    fputs("<text x=\"10\" y=\"38\" fill=\"#444\">", f);
    svg_text(f, m->cpu);
    fprintf(f, ", %ld CPUs; %s; depth %d, threads %d%s</text>\n", m->cpus, m->date, o->args.depth,
            o->args.threads, o->args.quick ? ", --quick" : "");
    static const enum bench_kind kinds[] = { BENCH_MEMRES, BENCH_MALLOC, BENCH_PEER, BENCH_LIMIT, BENCH_EXTERNAL };
    for (int k = 0; k < 5; k++) {
        fprintf(f, "<rect x=\"%d\" y=\"48\" width=\"12\" height=\"12\" fill=\"%s\"/>", 10 + k * 120,
                kind_color(kinds[k]));
        fprintf(f, "<text x=\"%d\" y=\"58\">%s</text>\n", 26 + k * 120, kind_name(kinds[k]));
    }
}

/* One bar at y: label, median, [min, max] whisker, time and ratio; sc: px/s. */
static void svg_row(FILE *f, const row *r, int y, double sc)
{
    char lab[128], t[32];
    bool by_malloc = r->v->kind == BENCH_MALLOC;
    snprintf(lab, sizeof lab, "%s%s%s%s", r->v->name, by_malloc ? " (" : "",
             by_malloc ? mallocs[r->malloc_idx].name : "", by_malloc ? ")" : "");
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\"%s>", SVG_LABEL_W, y + 13,
            r->v->kind == BENCH_MEMRES ? " font-weight=\"bold\"" : "");
    svg_text(f, lab);
    fputs("</text>\n", f);
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"14\" fill=\"%s\"/>\n", SVG_BAR_X, y + 2,
            r->med * sc, kind_color(r->v->kind));
    if (r->nruns > 1)
        fprintf(f, "<path d=\"M%.1f %d H%.1f M%.1f %d V%d M%.1f %d V%d\" stroke=\"black\"/>\n",
                SVG_BAR_X + r->min * sc, y + 9, SVG_BAR_X + r->max * sc, SVG_BAR_X + r->min * sc, y + 5, y + 13,
                SVG_BAR_X + r->max * sc, y + 5, y + 13);
    fmt_time(t, sizeof t, r->med);
    fprintf(f, "<text x=\"%.1f\" y=\"%d\">%s", SVG_BAR_X + r->max * sc + 6, y + 13, t);
    if (!isnan(r->x_glibc))
        fprintf(f, "  (%.2fx glibc)", r->x_glibc);
    fputs("</text>\n", f);
}

void write_svg(const char *path, const options *o, const machine *m, const plan *p)
{
    FILE *f = file_open(path);
    if (f == NULL)
        return;
    svg_head(f, o, m, p);
    int y = SVG_HEAD;
    for (int si = 0; si < n_scenarios; si++) {
        double top;
        if (svg_bars(p, si, &top) == 0)
            continue;
        y += SVG_GAP;
        fprintf(f, "<text x=\"10\" y=\"%d\" font-size=\"14\" font-weight=\"bold\">", y - 12);
        svg_text(f, scenarios[si].name);
        fputs("</text>\n", f);
        double sc = top > 0 ? SVG_BAR_W / top : 0;
        for (int i = 0; i < p->nrows; i++) {
            if (p->rows[i].scen != si || p->rows[i].failed)
                continue;
            svg_row(f, &p->rows[i], y, sc);
            y += SVG_ROW_H;
        }
        y += 10;
    }
    fputs("</svg>\n", f);
    file_close(f, path);
}
