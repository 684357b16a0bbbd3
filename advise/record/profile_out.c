/* SPDX-License-Identifier: MIT */
/* advise/record/profile_out.c -- the profile (common/format.h) written
 * from the merged sites and the timeline (timeline.c): to a temporary
 * name with write(2), through a mapped buffer (no malloc at exit), then
 * renamed. */
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "record.h"

struct wbuf {
    int fd;
    bool err;
    size_t len;
    char buf[65536];
};

static void wb_put(struct wbuf *w, const void *p, size_t n)
{
    const char *s = p;
    while (n > 0) {
        if (w->len == sizeof w->buf) {
            mrr_write_all(w->fd, w->buf, w->len);
            w->len = 0;
        }
        size_t k = sizeof w->buf - w->len < n ? sizeof w->buf - w->len : n;
        memcpy(w->buf + w->len, s, k);
        w->len += k;
        s += k;
        n -= k;
    }
}

static void wb_put_cb(void *w, const void *p, size_t n)
{
    wb_put(w, p, n);
}

static int cmp_size_count(const void *a, const void *b)
{
    const struct mra_size_count *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return x->size < y->size ? -1 : x->size > y->size;
}

/* Frees judged in the exact windows that make a share (sample.c) */
#define WIN_JUDGED 32u

/* part / judged of all (no judged: 0) */
static uint64_t share_of(uint64_t part, uint64_t judged, uint64_t all)
{
    return judged ? (uint64_t)((double)part / (double)judged * (double)all) : 0;
}

static void finish_site(struct gsite *g, struct mra_site_stats *out)
{
    *out = g->mg->m;
    out->id = g->id;
    out->nframes = g->nframes;
    out->live_objects = atomic_load_explicit(&g->live_objects, memory_order_relaxed);
    out->live_bytes = atomic_load_explicit(&g->live_bytes, memory_order_relaxed);
    out->peak_live_objects = atomic_load_explicit(&g->peak_objects, memory_order_relaxed);
    out->peak_live_bytes = atomic_load_explicit(&g->peak_bytes, memory_order_relaxed);
    out->arena_peak_bytes = atomic_load_explicit(&g->arena_peak, memory_order_relaxed);
    if (g_sampling) {
        /* the shares of the frees that tell (record.c: ring_free,
         * mrr_burst_end), of all (none: no evidence, 0) */
        const struct gmerged *mg = g->mg;
        uint64_t j = mg->stack_judged, tj = mg->together_judged, all = tj + mg->together_unjudged;
        /* the exact windows' judgement, else the sample's */
        out->stack_like = mg->win_stack_frees >= WIN_JUDGED
                              ? share_of(mg->win_stack_like, mg->win_stack_frees, out->frees)
                              : share_of(out->stack_like, j, out->frees);
        out->freed_together = mg->win_together_frees >= WIN_JUDGED
                                  ? share_of(mg->win_together, mg->win_together_frees, all)
                                  : share_of(out->freed_together, tj, all);
    }
    if (out->allocations == 0)
        out->min_size = 0;
    int64_t gt = (int64_t)out->glibc_ns;
    out->glibc_ns = gt > 0 ? (g_use_tsc ? time_to_ns((uint64_t)gt) : (uint64_t)gt) : 0;
    int64_t gs = (int64_t)out->glibc_slow_ns;
    out->glibc_slow_ns = gs > 0 ? (g_use_tsc ? time_to_ns((uint64_t)gs) : (uint64_t)gs) : 0;

    qsort(g->mg->msz, g->mg->nmsz, sizeof g->mg->msz[0], cmp_size_count);
    out->nsizes = g->mg->nmsz < MRA_SIZES ? g->mg->nmsz : MRA_SIZES;
    memset(out->sizes, 0, sizeof out->sizes);
    memcpy(out->sizes, g->mg->msz, out->nsizes * sizeof g->mg->msz[0]);
    out->other_sizes_count = g->mg->msz_other;
    for (uint32_t i = out->nsizes; i < g->mg->nmsz; i++)
        out->other_sizes_count += g->mg->msz[i].count;
    out->sizes_overflow = g->mg->nmsz > MRA_SIZES || g->mg->msz_overflow;
}

void mrr_write_profile(uint64_t end_ns)
{
    /* the speed at exit, after the heap's last growth is counted: the
     * probe's own is not the program's */
    mrr_heap_settle();
    mrr_speed_probe(true);
    mrr_heap_skip();
    struct mra_speed sp;
    mrr_speed_get(&sp);
    sp.sample_bytes = g_sampling ? (uint64_t)g_sample_bytes : 0;
    uint32_t ns = atomic_load_explicit(&g_nsites, memory_order_acquire);
    dl_iterate_phdr(mrr_phdr_cb, NULL);
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", g_profile, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    struct wbuf *w = mrr_imap(sizeof *w);
    if (!w) {
        close(fd);
        unlink(tmp);
        return;
    }
    w->fd = fd;
    struct mra_profile_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, MRA_PROFILE_MAGIC, 8);
    h.version = MRA_PROFILE_VERSION;
    h.depth = g_depth;
    h.pid = (uint64_t)getpid();
    h.start_ns = g_start_ns;
    h.end_ns = end_ns;
    for (uint32_t i = 1; i <= ns; i++) {
        const struct gsite *g = g_sites[i];
        h.allocations += g->mg->m.allocations;
        h.frees += g->mg->m.frees;
        h.reallocs += g->mg->m.reallocs;
        h.bytes += g->mg->m.bytes;
    }
    if (g_sampling) { /* the sites' figures are estimates; the totals counted */
        h.allocations = atomic_load_explicit(&g_all_allocs, memory_order_relaxed);
        h.bytes = atomic_load_explicit(&g_all_bytes, memory_order_relaxed);
        h.frees = atomic_load_explicit(&g_all_frees, memory_order_relaxed);
        h.reallocs = atomic_load_explicit(&g_all_reallocs, memory_order_relaxed);
    }
    h.peak_live_bytes = atomic_load_explicit(&g_peak_bytes, memory_order_relaxed);
    h.peak_live_objects = atomic_load_explicit(&g_peak_objects, memory_order_relaxed);
    h.live_bytes_at_exit = atomic_load_explicit(&g_live_bytes, memory_order_relaxed);
    h.live_objects_at_exit = atomic_load_explicit(&g_live_objects, memory_order_relaxed);
    h.foreign_frees = atomic_load_explicit(&g_foreign, memory_order_relaxed);
    h.threads = atomic_load_explicit(&g_nthreads, memory_order_relaxed);
    h.ticks = atomic_load_explicit(&g_max_tick, memory_order_relaxed);
    h.recorder_peak_bytes = atomic_load_explicit(&g_rec_mem_peak, memory_order_relaxed) +
                            mrr_resident(g_slots, sizeof(uint32_t) << SLOT_BITS) +
                            mrr_resident(g_sites, sizeof(struct gsite *) << SLOT_BITS) +
                            mrr_resident(g_gkeys, sizeof(uint64_t) << SLOT_BITS) +
                            mrr_resident(g_gsite, sizeof(uint32_t) << SLOT_BITS) +
                            mrr_resident(mra_fsz, sizeof(uint64_t) << MRA_FSZ_BITS) +
                            (g_side ? mrr_resident(g_side, (size_t)SIDE_MAX * sizeof(struct hdr)) : 0) +
                            (uint64_t)HDR * h.peak_live_objects;
    pthread_mutex_lock(&g_mod_mu);
    h.nmodules = g_nmods;
    h.nsites = ns;
    pthread_mutex_lock(&g_trace_mu);
    h.trace_events = g_trace_events;
    h.trace_bytes = g_trace_fd >= 0 ? g_trace_bytes + sizeof(struct mra_trace_header) : 0;
    pthread_mutex_unlock(&g_trace_mu);
    int64_t hook = atomic_load_explicit(&g_hook_time, memory_order_relaxed);
    h.recorder_ns = hook > 0 ? (uint64_t)hook : 0;
    if (g_use_tsc)
        h.recorder_ns = time_to_ns(h.recorder_ns);
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        h.cpu_ns = (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000u +
                   (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000u;
    h.cpu_ns = h.cpu_ns > sp.cost_ns ? h.cpu_ns - sp.cost_ns : 0;
    memcpy(h.program, g_exe, sizeof h.program);
    h.program[sizeof h.program - 1] = 0;
    wb_put(w, &h, sizeof h);
    for (size_t i = 0; i < g_nmods; i++) {
        struct mra_module m = {g_mods[i].bias, g_mods[i].lo, g_mods[i].hi, g_mods[i].len, 0};
        wb_put(w, &m, sizeof m);
        wb_put(w, g_mods[i].path, g_mods[i].len);
    }
    pthread_mutex_unlock(&g_mod_mu);
    uint64_t frames[MRA_MAX_DEPTH];
    for (uint32_t i = 1; i <= ns; i++) {
        struct gsite *g = g_sites[i];
        struct mra_site_stats s;
        finish_site(g, &s);
        wb_put(w, &s, sizeof s);
        memset(frames, 0, sizeof frames);
        memcpy(frames, g->frames, g->nframes * sizeof frames[0]);
        wb_put(w, frames, g_depth * sizeof frames[0]);
    }
    mrr_tl_write(wb_put_cb, w, end_ns, h.peak_live_bytes, h.live_bytes_at_exit, h.live_objects_at_exit, h.ticks);
    mrr_heap_write(wb_put_cb, w, ns);
    wb_put(w, &sp, sizeof sp);
    mrr_write_all(fd, w->buf, w->len);
    munmap(w, sizeof *w);
    if (close(fd) == 0)
        rename(tmp, g_profile);
    else
        unlink(tmp);
}
