/* SPDX-License-Identifier: MIT */
/* advise/tests/html_page.c -- writes memres-advise's HTML page (html.c) of
 * a synthetic analysis with N sites, for html.sh to load in headless
 * Chromium and time (the target: 10,000 sites render in under 2 s).
 *
 *   html_page N OUT.html
 *
 * The analysis is built by hand, as mra_analyze hands it on: sites in
 * report order with four frames each (a tree: 1 main, 50 second frames,
 * 500 third frames, N call sites, so the flame graph has breadth at every
 * level), every kind of recommendation, lifetime histograms, a table of
 * sizes, a plan and a measured table.  Site 1's function name and the
 * measured text hold "</script>" and "<!--", which the page must keep as
 * data.  No recorder, no symbols: nothing but the writer is exercised. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"

static char names[3][600][40];

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: html_page N OUT.html\n");
        return 2;
    }
    size_t n = strtoul(argv[1], NULL, 10);
    if (n == 0 || n > 1000000) {
        fprintf(stderr, "html_page: N is 1..1000000\n");
        return 2;
    }
    struct mra_analysis a;
    memset(&a, 0, sizeof a);
    memcpy(a.h.program, "/usr/bin/synthetic", sizeof "/usr/bin/synthetic");
    a.h.pid = 4242;
    a.h.depth = 8;
    a.h.threads = 2;
    a.program_ns = 2e9;
    a.recorded_ns = 3e9;
    mra_options_default(&a.opts);
    snprintf(a.costs.machine, sizeof a.costs.machine, "synthetic costs");
    a.sites = calloc(n, sizeof *a.sites);
    char (*fn)[48] = calloc(n, sizeof *fn);
    if (!a.sites || !fn) {
        fprintf(stderr, "html_page: out of memory\n");
        return 1;
    }
    for (unsigned k = 0; k < 600; k++) {
        snprintf(names[0][k], sizeof names[0][k], "layer_two_%u", k);
        snprintf(names[1][k], sizeof names[1][k], "layer_three_%u", k);
        snprintf(names[2][k], sizeof names[2][k], "/src/project/module_%u.c", k % 40);
    }
    static const enum mra_rec kinds[] = { MRA_ARENA, MRA_ARENA_REWIND, MRA_OBJPOOL, MRA_POOLS, MRA_NONE };
    for (size_t i = 0; i < n; i++) {
        struct mra_site *s = &a.sites[i];
        s->id = (unsigned)(i + 1);
        snprintf(fn[i], sizeof fn[i], i == 0 ? "evil</script><!--<script>%zu" : "alloc_site_%zu", i);
        s->nframes = 4;
        s->frames[0] = (struct mra_frame){ .addr = 0x401000 + i, .function = fn[i], .file = names[2][i % 40],
                                           .line = (unsigned)(10 + i % 900), .module = "/usr/bin/synthetic" };
        s->frames[1] = (struct mra_frame){ .addr = 0x402000, .function = names[1][i % 500],
                                           .file = names[2][(i / 7) % 40], .line = 77,
                                           .module = "/usr/bin/synthetic" };
        s->frames[2] = (struct mra_frame){ .addr = 0x403000, .function = names[0][i % 50], .offset = 0x1c,
                                           .module = "/usr/lib/libsynthetic.so" };
        s->frames[3] = (struct mra_frame){ .addr = 0x404000, .function = "main", .file = "/src/project/main.c",
                                           .line = 12, .module = "/usr/bin/synthetic" };
        struct mra_site_stats *st = &s->s;
        st->allocations = 1000000 / (i + 1) + 1000;
        st->frees = st->allocations - i % 3;
        st->bytes = st->allocations * (16 + 16 * (i % 8));
        st->min_size = 16;
        st->max_size = 16 + 16 * (i % 8) + 4096 * (i % 2);
        st->nsizes = 3;
        for (unsigned k = 0; k < 3; k++)
            st->sizes[k] = (struct mra_size_count){ .size = 16u << k, .count = st->allocations / (k + 2) };
        st->other_sizes_count = i % 2 ? st->allocations / 12 : 0;
        st->peak_live_objects = st->allocations / 10;
        st->peak_live_bytes = st->bytes / 10;
        st->arena_peak_bytes = st->bytes / 5;
        st->live_objects = i % 3;
        st->live_bytes = 16 * (i % 3);
        for (unsigned b = 0; b < 20; b++) {
            st->hist_ticks[b + (i % 5)] = (st->frees >> (b % 10)) % 1000 + 1;
            st->hist_ns[b + 10] = (st->frees >> ((b + i) % 12)) % 700 + 1;
        }
        st->lifetime_ticks_sum = st->frees * 40;
        st->lifetime_ns_sum = st->frees * 900;
        st->freed_together = st->frees * (i % 10) / 10;
        st->stack_like = st->frees / (2 + i % 4);
        st->remote_frees = i % 7 == 0 ? st->frees / 20 : 0;
        st->glibc_ns = st->allocations * 25;
        st->glibc_samples = st->allocations / 64;
        s->rec = i < 200 ? kinds[i % 5] : MRA_NONE;
        s->candidate = kinds[i % 5];
        s->thread_safe = st->remote_frees > 0;
        s->predicted_saving_ns = s->rec != MRA_NONE ? 1e8 / (double)(i + 1) : 0;
        a.total_saving_ns += s->predicted_saving_ns;
        s->memory_delta_bytes = -(int64_t)(i * 64);
        s->retention_warning = i % 11 == 0;
        snprintf(s->reason, sizeof s->reason, "synthetic site %zu: \"quoted\", <b>not bold</b>, 100%% & more", i);
        snprintf(s->sketch[0], sizeof s->sketch[0], "mr_arena *a = mr_arena_create(NULL);");
        snprintf(s->sketch[1], sizeof s->sketch[1], "mr_arena_reset(a);");
        a.h.allocations += st->allocations;
        a.h.frees += st->frees;
        a.h.bytes += st->bytes;
        a.nsites++;
    }
    a.nsites_total = n + 17;
    a.h.peak_live_bytes = a.h.bytes / 10;
    a.h.peak_live_objects = a.h.allocations / 10;
    static const char *folded[] = { "xmalloc", "operator new(unsigned long)" };
    a.folded = folded;
    a.nfolded = 2;

    static struct mra_planned pl;
    pl.n = 3;
    for (unsigned k = 0; k < 3; k++) {
        pl.s[k] = (struct mra_planned_site){ .site = k + 1, .kind = kinds[k], .predicted_ns = 1e6 * (k + 1),
                                             .glibc_ns = 3e6 };
        pl.predicted_ns += pl.s[k].predicted_ns;
    }
    struct mra_html_extra x = { .plan = &pl, .plan_path = NULL, .plan_kept = false,
                                .measured = "variant   ratio\nglibc     1.000\n</pre></script><!-- measured" };
    FILE *f = fopen(argv[2], "w");
    if (!f) {
        perror(argv[2]);
        return 1;
    }
    int rc = mra_report_html(f, &a, &x);
    if (fclose(f) != 0)
        rc = -1;
    free(a.sites);
    free(fn);
    return rc == 0 ? 0 : 1;
}
