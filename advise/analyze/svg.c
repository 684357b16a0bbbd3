/* SPDX-License-Identifier: MIT */
/* advise/analyze/svg.c -- the report as a picture: a self-contained SVG (no script,
 * no external font or stylesheet; tooltips are <title> elements).
 *   top:    the top sites as horizontal bars of predicted saving (ms and
 *           share of the run), coloured by recommendation, each labelled
 *           with its first frame, `function file:line`;
 *   bottom: every site (the BIGGEST_DOTS most allocating) as a dot of mean
 *           lifetime (allocations, log) against mean size (log), its area
 *           by allocations, coloured by recommendation; sites never freed
 *           in a band at the top. */
#include "analysis.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define W 1000
#define BAR_ROW 26
#define LABEL_W 430
#define BAR_X 450
#define BAR_W 300
#define MAX_BARS 30
#define BIGGEST_DOTS 2000
#define PLOT_X 90
#define PLOT_W 850
#define PLOT_H 360

/* arena, arena-rewind, objpool, pools, pools (thread-safe), none */
static const char *const COLOUR[] = {"#2a9d8f", "#7cb518", "#e9c46a", "#f4a261", "#d62828", "#b8b8b8"};
static const char *const LEGEND[] = {"arena", "arena-rewind", "objpool", "pools", "pools (thread-safe)", "none"};

static const char *colour_of(const struct mra_site *s)
{
    switch (s->rec) {
    case MRA_ARENA: return COLOUR[0];
    case MRA_ARENA_REWIND: return COLOUR[1];
    case MRA_OBJPOOL: return COLOUR[2];
    case MRA_POOLS: return s->thread_safe ? COLOUR[4] : COLOUR[3];
    default: return COLOUR[5];
    }
}

/* The length of the valid UTF-8 sequence at s (1..4), or 0. */
static size_t utf8_len(const unsigned char *s)
{
    unsigned c = s[0];
    size_t n = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
    if (n == 0 || (n == 2 && c < 0xc2) || (n == 4 && c > 0xf4))
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    if (n == 3 && ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] >= 0xa0)))
        return 0; /* overlong, or a surrogate */
    if (n == 4 && ((c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] >= 0x90)))
        return 0;
    return n;
}

/* Writes s as XML character data or attribute text: markup escaped, bytes
 * that are not valid UTF-8 and control characters XML 1.0 forbids as '?';
 * at most max characters (0: all), the rest as an ellipsis. */
static void xml_text(FILE *f, const char *str, size_t max)
{
    const unsigned char *s = (const unsigned char *)(str ? str : "");
    for (size_t chars = 0; *s; chars++) {
        if (max && chars == max) {
            fputs("\xe2\x80\xa6", f);
            return;
        }
        unsigned c = *s;
        size_t n = utf8_len(s);
        if (n == 0) {
            fputc('?', f);
            s++;
            continue;
        }
        if (n > 1) {
            fwrite(s, 1, n, f);
            s += n;
            continue;
        }
        s++;
        switch (c) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&apos;", f); break;
        case '\n': fputs("&#10;", f); break;
        case '\t': fputc(' ', f); break;
        default: fputc(c < 0x20 || c == 0x7f ? '?' : (int)c, f);
        }
    }
}

static const char *base_name(const char *p)
{
    const char *s = p ? strrchr(p, '/') : NULL;
    return s ? s + 1 : p;
}

/* The frame as `function file:line`, else `function+offset (module)`. */
static void frame_label(char *out, size_t n, const struct mra_frame *fr, bool full)
{
    char fn[256];
    if (fr->function)
        snprintf(fn, sizeof fn, "%s", fr->function);
    else
        snprintf(fn, sizeof fn, "0x%llx", (unsigned long long)fr->addr);
    if (fr->file)
        snprintf(out, n, "%s %s:%u", fn, full ? fr->file : base_name(fr->file), fr->line);
    else if (fr->module && fr->function)
        snprintf(out, n, "%s+0x%llx (%s)", fn, (unsigned long long)fr->offset, full ? fr->module : base_name(fr->module));
    else if (fr->module)
        snprintf(out, n, "%s (%s)", fn, full ? fr->module : base_name(fr->module));
    else
        snprintf(out, n, "%s", fn);
}

/* The first frame, and the caller's function (sites often share a first
 * frame and differ by their callers). */
static void site_label(char *out, size_t n, const struct mra_site *s)
{
    if (s->nframes == 0) {
        snprintf(out, n, "(no frame)");
        return;
    }
    frame_label(out, n, &s->frames[0], false);
    if (s->nframes > 1 && s->frames[1].function) {
        size_t len = strlen(out);
        snprintf(out + len, n - len, " \xe2\x86\x90 %s", s->frames[1].function);
    }
}

static void human_bytes(char *out, size_t n, double b)
{
    const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (b >= 1024 && u < 4) {
        b /= 1024;
        u++;
    }
    snprintf(out, n, u == 0 ? "%.0f %s" : "%.1f %s", b, unit[u]);
}

static void human_count(char *out, size_t n, double v)
{
    if (v >= 1e9)
        snprintf(out, n, "%.1fG", v / 1e9);
    else if (v >= 1e6)
        snprintf(out, n, "%.1fM", v / 1e6);
    else if (v >= 1e4)
        snprintf(out, n, "%.0fk", v / 1e3);
    else
        snprintf(out, n, "%.0f", v);
}

static double mean_size(const struct mra_site *s)
{
    return s->s.allocations ? (double)s->s.bytes / (double)s->s.allocations : 0;
}

/* Mean lifetime in allocations, or -1 when no object was freed. */
static double mean_life(const struct mra_site *s)
{
    return s->s.frees ? (double)s->s.lifetime_ticks_sum / (double)s->s.frees : -1;
}

/* The tooltip of a site: frames, figures, recommendation, reason. */
static void site_title(FILE *f, const struct mra_analysis *a, const struct mra_site *s)
{
    char buf[1024], b1[32], b2[32];
    fputs("<title>", f);
    snprintf(buf, sizeof buf, "#%u %s%s", s->id, mra_rec_name(s->rec),
             s->rec == MRA_POOLS && s->thread_safe ? " (thread-safe)" : "");
    xml_text(f, buf, 0);
    if (s->predicted_saving_ns > 0) {
        snprintf(buf, sizeof buf, ": saves %.2f ms", s->predicted_saving_ns / 1e6);
        xml_text(f, buf, 0);
        if (a->program_ns > 0) {
            snprintf(buf, sizeof buf, " (%.1f%% of the run)", 100 * s->predicted_saving_ns / a->program_ns);
            xml_text(f, buf, 0);
        }
    }
    fputs("&#10;", f);
    for (unsigned i = 0; i < s->nframes && i < MRA_MAX_DEPTH; i++) {
        frame_label(buf, sizeof buf, &s->frames[i], true);
        fputs(i ? "&#10;  called from " : "  at ", f);
        xml_text(f, buf, 300);
    }
    human_count(b1, sizeof b1, (double)s->s.allocations);
    human_bytes(b2, sizeof b2, (double)s->s.bytes);
    snprintf(buf, sizeof buf, "\n%s allocations, %s, mean ", b1, b2);
    xml_text(f, buf, 0);
    human_bytes(b1, sizeof b1, mean_size(s));
    xml_text(f, b1, 0);
    double life = mean_life(s);
    if (life >= 0)
        snprintf(buf, sizeof buf, "; mean lifetime %.0f allocations", life);
    else
        snprintf(buf, sizeof buf, "; never freed");
    xml_text(f, buf, 0);
    human_bytes(b1, sizeof b1, (double)s->s.peak_live_bytes);
    snprintf(buf, sizeof buf, "; peak live %s in %llu objects; %llu never freed", b1,
             (unsigned long long)s->s.peak_live_objects, (unsigned long long)s->s.live_objects);
    xml_text(f, buf, 0);
    if (s->memory_delta_bytes != 0) {
        human_bytes(b1, sizeof b1, fabs((double)s->memory_delta_bytes));
        snprintf(buf, sizeof buf, "\nmemory: %s%s with the plan", s->memory_delta_bytes > 0 ? "+" : "-", b1);
        xml_text(f, buf, 0);
    }
    if (s->retention_warning)
        xml_text(f, "\nwarning: an arena here would hold much more than the program's peak", 0);
    if (s->reason[0]) {
        fputs("&#10;", f);
        xml_text(f, s->reason, 600);
    }
    fputs("</title>", f);
}

static void legend(FILE *f, int y)
{
    int x = 20;
    for (int i = 0; i < 6; i++) {
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" rx=\"2\" fill=\"%s\"/>", x, y - 10, COLOUR[i]);
        fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"s\">%s</text>\n", x + 17, y, LEGEND[i]);
        x += 17 + 6 * (int)strlen(LEGEND[i]) + 22;
    }
}

struct dot {
    const struct mra_site *s;
    double r;
};

static int cmp_dot(const void *a, const void *b)
{
    const struct dot *x = a, *y = b;
    return x->r > y->r ? -1 : x->r < y->r;
}

static int cmp_alloc_desc(const void *a, const void *b)
{
    const struct mra_site *x = *(const struct mra_site *const *)a, *y = *(const struct mra_site *const *)b;
    return x->s.allocations > y->s.allocations ? -1 : x->s.allocations < y->s.allocations;
}

void mra_report_svg(FILE *f, const struct mra_analysis *a)
{
    unsigned top = a->opts.top ? a->opts.top : 10;
    size_t nbars = a->nsites < top ? a->nsites : top;
    if (nbars > MAX_BARS)
        nbars = MAX_BARS;
    const int bars_y = 110;
    const int bars_h = (int)(nbars ? nbars : 1) * BAR_ROW;
    const int plot_y = bars_y + bars_h + 84;
    const int height = plot_y + PLOT_H + 90;
    char buf[512], b1[32], b2[32];

    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
               "font-family=\"sans-serif\" font-size=\"12\">\n",
            W, height, W, height);
    fputs("<style>text{fill:#222}.s{font-size:11px}.t{font-size:18px;font-weight:bold}"
          ".h{font-size:14px;font-weight:bold}.m{font-family:monospace;font-size:11.5px}.g{fill:#777}"
          ".ax{stroke:#999;stroke-width:1}.grid{stroke:#e4e4e4;stroke-width:1}</style>\n",
          f);
    fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", W, height);

    /* the title */
    fputs("<text x=\"20\" y=\"32\" class=\"t\">memres-advise: ", f);
    xml_text(f, base_name(a->h.program[0] ? a->h.program : "(program)"), 80);
    fputs("<title>", f);
    xml_text(f, a->h.program, 0);
    fputs("</title></text>\n", f);
    human_count(b1, sizeof b1, (double)a->h.allocations);
    human_bytes(b2, sizeof b2, (double)a->h.peak_live_bytes);
    snprintf(buf, sizeof buf, "run %.1f ms, %s allocations, peak %s live, %zu sites; predicted saving %.2f ms", a->program_ns / 1e6,
             b1, b2, a->nsites, a->total_saving_ns / 1e6);
    fputs("<text x=\"20\" y=\"54\">", f);
    xml_text(f, buf, 0);
    if (a->program_ns > 0)
        fprintf(f, " (%.1f%% of the run)", 100 * a->total_saving_ns / a->program_ns);
    fputs("</text>\n", f);
    legend(f, 80);

    /* the bars */
    fprintf(f, "<text x=\"20\" y=\"%d\" class=\"h\">Predicted saving by site (top %zu)</text>\n", bars_y - 8, nbars);
    double maxs = 0;
    for (size_t i = 0; i < nbars; i++)
        if (a->sites[i].predicted_saving_ns > maxs)
            maxs = a->sites[i].predicted_saving_ns;
    if (nbars == 0)
        fprintf(f, "<text x=\"20\" y=\"%d\" class=\"g\">no allocation sites</text>\n", bars_y + 16);
    for (size_t i = 0; i < nbars; i++) {
        const struct mra_site *s = &a->sites[i];
        int y = bars_y + (int)i * BAR_ROW;
        fprintf(f, "<g>");
        site_title(f, a, s);
        if (i % 2 == 0)
            fprintf(f, "<rect x=\"14\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#f6f6f6\"/>", y, W - 28, BAR_ROW);
        site_label(buf, sizeof buf, s);
        fprintf(f, "<text x=\"20\" y=\"%d\" class=\"m\">#%u ", y + 17, s->id);
        xml_text(f, buf, 58);
        fputs("</text>", f);
        double w = maxs > 0 ? BAR_W * s->predicted_saving_ns / maxs : 0;
        if (s->predicted_saving_ns > 0 && w < 2)
            w = 2;
        if (w > 0)
            fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" rx=\"3\" fill=\"%s\"/>", BAR_X, y + 5, w,
                    BAR_ROW - 10, colour_of(s));
        if (s->rec != MRA_NONE && s->predicted_saving_ns > 0) {
            fprintf(f, "<text x=\"%.1f\" y=\"%d\">%.2f ms", BAR_X + w + 6, y + 17, s->predicted_saving_ns / 1e6);
            if (a->program_ns > 0)
                fprintf(f, " (%.1f%%)", 100 * s->predicted_saving_ns / a->program_ns);
            fprintf(f, " %s%s%s</text>", mra_rec_name(s->rec), s->rec == MRA_POOLS && s->thread_safe ? " (thread-safe)" : "",
                    s->retention_warning ? " \xe2\x9a\xa0" : "");
        } else {
            human_count(b1, sizeof b1, (double)s->s.allocations);
            fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"g\">none: %s allocation%s</text>", BAR_X + 6, y + 17, b1,
                    s->s.allocations == 1 ? "" : "s");
        }
        fputs("</g>\n", f);
    }

    /* the scatter: the BIGGEST_DOTS most allocating sites */
    fprintf(f, "<text x=\"20\" y=\"%d\" class=\"h\">Sites by mean size and mean lifetime (dot area: allocations)</text>\n",
            plot_y - 28);
    const struct mra_site **by = malloc((a->nsites ? a->nsites : 1) * sizeof *by);
    struct dot *dots = malloc((a->nsites ? a->nsites : 1) * sizeof *dots);
    if (!by || !dots) {
        free(by);
        free(dots);
        fputs("</svg>\n", f);
        return;
    }
    for (size_t i = 0; i < a->nsites; i++)
        by[i] = &a->sites[i];
    qsort(by, a->nsites, sizeof *by, cmp_alloc_desc);
    size_t nd = a->nsites < BIGGEST_DOTS ? a->nsites : BIGGEST_DOTS;
    double maxsize = 16, maxlife = 10, maxalloc = 1;
    for (size_t i = 0; i < nd; i++) {
        if (mean_size(by[i]) > maxsize)
            maxsize = mean_size(by[i]);
        if (mean_life(by[i]) > maxlife)
            maxlife = mean_life(by[i]);
        if ((double)by[i]->s.allocations > maxalloc)
            maxalloc = (double)by[i]->s.allocations;
    }
    /* axes: size 1 B .. a power of 16 above the largest; lifetime 1 .. a power of 10 */
    double xmax = 16;
    while (xmax < maxsize * 1.01)
        xmax *= 16;
    double ymax = 10;
    while (ymax < maxlife * 1.01)
        ymax *= 10;
    const int band = 34; /* the band of sites never freed, above the plot */
    const int py = plot_y + band, ph = PLOT_H - band;
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#fafafa\" class=\"ax\"/>\n", PLOT_X, plot_y,
            PLOT_W, band - 6);
    fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"s g\" text-anchor=\"end\">never freed</text>\n", PLOT_X - 6,
            plot_y + band / 2);
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" class=\"ax\"/>\n", PLOT_X, py, PLOT_W,
            ph);
    double lx = log(xmax), ly = log(ymax);
    for (double v = 1; v <= xmax * 1.001; v *= 16) {
        double x = PLOT_X + PLOT_W * log(v) / lx;
        human_bytes(b1, sizeof b1, v);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" class=\"grid\"/>", x, py, x, py + ph);
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" class=\"s\" text-anchor=\"middle\">%s</text>\n", x, py + ph + 15, b1);
    }
    for (double v = 1; v <= ymax * 1.001; v *= 10) {
        double y = py + ph - ph * log(v) / ly;
        human_count(b1, sizeof b1, v);
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" class=\"grid\"/>", PLOT_X, y, PLOT_X + PLOT_W, y);
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" class=\"s\" text-anchor=\"end\">%s</text>\n", PLOT_X - 6, y + 4, b1);
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">mean size (log)</text>\n", PLOT_X + PLOT_W / 2,
            py + ph + 34);
    fprintf(f, "<text x=\"24\" y=\"%d\" text-anchor=\"middle\" transform=\"rotate(-90 24 %d)\">mean lifetime, "
               "allocations (log)</text>\n",
            py + ph / 2, py + ph / 2);
    for (size_t i = 0; i < nd; i++) {
        dots[i].s = by[i];
        dots[i].r = 2.5 + 16 * sqrt((double)by[i]->s.allocations / maxalloc);
    }
    qsort(dots, nd, sizeof *dots, cmp_dot); /* the biggest first, so small dots stay visible */
    for (size_t i = 0; i < nd; i++) {
        const struct mra_site *s = dots[i].s;
        double ms = mean_size(s), life = mean_life(s);
        double x = PLOT_X + PLOT_W * (ms > 1 ? log(ms) / lx : 0);
        double y = life < 0 ? plot_y + (band - 6) / 2.0 : py + ph - ph * (life > 1 ? log(life) / ly : 0);
        double r = life < 0 && dots[i].r > (band - 6) / 2.0 ? (band - 6) / 2.0 : dots[i].r;
        fprintf(f, "<g><circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"%s\" fill-opacity=\"0.75\" stroke=\"#fff\" "
                   "stroke-width=\"0.8\">",
                x, y, r, colour_of(s));
        site_title(f, a, s);
        fputs("</circle>", f);
        if (s->id <= nbars && s->rec != MRA_NONE)
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"s\">#%u</text>", x + r + 2, y + 4, s->id);
        fputs("</g>\n", f);
    }
    free(by);
    free(dots);
    fprintf(f, "<text x=\"20\" y=\"%d\" class=\"s g\">Savings predicted from this machine's measured costs of glibc "
               "and memres per allocation; hover a bar or a dot for its frames, figures and the rule that decided."
               "</text>\n",
            height - 16);
    fputs("</svg>\n", f);
}
