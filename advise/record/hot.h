/* SPDX-License-Identifier: MIT */
/* advise/record/hot.h -- what a recorded call runs on its way, static
 * inline for the two files it runs in (record.c: allocations and frees;
 * interpose.c: reallocs): the thread's state and its per-site figures
 * (threads.c makes them), the allocation clock, the trace buffer (trace.c
 * writes it out), the timeline's peak (timeline.c keeps the rest), and
 * what a realloc or a timed sample counts.  Apart from record.h so that
 * the files behind its slow paths need not include it. */
#ifndef MEMRES_ADVISE_HOT_H
#define MEMRES_ADVISE_HOT_H

#include "record.h"

#pragma GCC visibility push(hidden)

static inline struct tstate *get_ts(void)
{
    struct tstate *ts = tls_ts;
    return LIKELY(ts != NULL) ? ts : mrr_thread_register();
}

static inline struct lsite *lsite_get(struct tstate *ts, uint32_t site)
{
    if (LIKELY(site < ts->lcap)) {
        struct lsite *l = ts->ls[site];
        if (LIKELY(l != NULL))
            return l;
    }
    return mrr_lsite_slow(ts, site);
}

static inline uint64_t next_tick(struct tstate *ts)
{
    if (UNLIKELY(ts->tick_next == ts->tick_end)) {
        uint64_t b = atomic_fetch_add_explicit(&g_tick, TICK_BATCH, memory_order_relaxed);
        ts->tick_next = b;
        ts->tick_end = b + TICK_BATCH;
    }
    uint64_t t = ts->tick_next++;
    ts->last_tick = t;
    return t;
}

static inline uint8_t *tr_room(struct tstate *ts)
{
    if (UNLIKELY(ts->tlen + 48u > MRA_TRACE_CHUNK))
        mrr_tr_flush(ts);
    return ts->tbuf + ts->tlen;
}

static inline void tr_done(struct tstate *ts, uint8_t *end, uint32_t events)
{
    ts->tlen = (uint32_t)(end - ts->tbuf);
    ts->tev += events;
}

/* The birth tick of h as a full tick, and the lifetime on the clock. */
static inline uint64_t birth_tick(struct tstate *ts, const struct hdr *h, uint64_t *life)
{
    uint64_t b44 = h->tick_thread >> THR_BITS;
    uint64_t now = ts->last_tick;
    uint64_t d = (now - b44) & TICK_MASK;
    if (UNLIKELY(d >= (UINT64_C(1) << (TICK_BITS - 1)))) {
        /* born after this thread's last allocation (another thread's batch) */
        uint64_t birth = now + ((UINT64_C(1) << TICK_BITS) - d);
        uint64_t g = atomic_load_explicit(&g_tick, memory_order_relaxed) - 1;
        *life = g > birth ? g - birth : 0;
        return birth;
    }
    *life = d;
    return now - d;
}

/* The timeline's peak (timeline.c): after an allocation or realloc that
 * may have raised the program's live bytes, at allocation tick `tick` and
 * time `time` (clock units). */
static inline void tl_peak_note(uint64_t tick, uint64_t time)
{
    uint64_t b = atomic_load_explicit(&g_live_bytes, memory_order_relaxed);
    if (LIKELY(b <= atomic_load_explicit(&g_tl_peak.bytes, memory_order_relaxed)))
        return;
    if (UNLIKELY(atomic_load_explicit(&g_multi, memory_order_relaxed))) {
        mrr_tl_peak_multi(b, tick, time);
        return;
    }
    atomic_store_explicit(&g_tl_peak.bytes, b, memory_order_relaxed);
    atomic_store_explicit(&g_tl_peak.objects, atomic_load_explicit(&g_live_objects, memory_order_relaxed),
                          memory_order_relaxed);
    atomic_store_explicit(&g_tl_peak.tick, tick, memory_order_relaxed);
    atomic_store_explicit(&g_tl_peak.time, time, memory_order_relaxed);
}

static inline void note_realloc(struct tstate *ts, struct hdr *h, uint32_t site, uint64_t old, uint64_t n,
                         bool moved)
{
    struct lsite *l = lsite_get(ts, site);
    struct gsite *g = g_sites[site];
    uint64_t w = hdr_weight(h); /* the reallocs it stands for (sampled) */
    uint64_t lb = cnt_add(&g->live_bytes, (n - old) * w);
    cnt_max(&g->peak_bytes, lb);
    cnt_max(&g->arena_peak, cnt_add(&g->arena_cur, n * w));
    cnt_max(&g_peak_bytes, cnt_add(&g_live_bytes, n - old));
    tl_peak_note(ts->last_tick, ts->t_cur);
    if (UNLIKELY(!l))
        return;
    uint64_t chain = (h->size_misc >> SIZE_BITS) & CHAIN_MAX;
    l->s.reallocs += w;
    if (moved)
        l->s.realloc_moves += w;
    if (chain > l->s.realloc_chain_max)
        l->s.realloc_chain_max = chain;
    if (ts->tbuf) {
        uint64_t life;
        uint64_t birth = birth_tick(ts, h, &life);
        uint8_t *q = tr_room(ts);
        q = mra_put_varint(q, mra_zigzag((int64_t)(ts->tr_prev_tick - birth)) << 5 |
                                  MRA_CTL_REALLOC << 2 | MRA_EV_CONTROL);
        q = mra_put_varint(q, n);
        tr_done(ts, q, 1);
    }
}

/* A timed sample d of glibc's time for an object of site, weighed by w. */
static inline void glibc_note(struct tstate *ts, uint32_t site, int64_t d, uint32_t w)
{
    struct lsite *l = lsite_get(ts, site);
    if (l) {
        l->s.glibc_time += d * w;
        l->s.glibc_samples++;
        if (d > g_slow)
            l->s.glibc_slow_time += d * w;
    }
}

/* The program's live counters: with one recording thread, plain loads
 * and stores (of atomics: no data race, no locked instruction).
 * prog_add is true when the live bytes may have reached a new peak (for
 * the timeline). */
#define LD(a) atomic_load_explicit(&(a), memory_order_relaxed)
#define ST(a, v) atomic_store_explicit(&(a), (v), memory_order_relaxed)
/* _1: one recording thread (the caller read g_multi); _n: several */
static inline __attribute__((always_inline)) bool prog_add_1(uint64_t n)
{
    uint64_t po = LD(g_live_objects) + 1, pb = LD(g_live_bytes) + n;
    ST(g_live_objects, po);
    ST(g_live_bytes, pb);
    if (UNLIKELY(po > LD(g_peak_objects)))
        ST(g_peak_objects, po);
    if (LIKELY(pb <= LD(g_peak_bytes)))
        return false;
    ST(g_peak_bytes, pb);
    return true;
}

static inline bool prog_add_n(uint64_t n)
{
    uint64_t po = cnt_add(&g_live_objects, 1);
    uint64_t pb = cnt_add(&g_live_bytes, n);
    cnt_max(&g_peak_objects, po);
    cnt_max(&g_peak_bytes, pb);
    return pb >= LD(g_peak_bytes);
}

static inline __attribute__((always_inline)) bool prog_add(uint64_t n)
{
    return LIKELY(!LD(g_multi)) ? prog_add_1(n) : prog_add_n(n);
}

static inline __attribute__((always_inline)) void prog_sub_1(uint64_t n)
{
    ST(g_live_objects, LD(g_live_objects) - 1);
    ST(g_live_bytes, LD(g_live_bytes) - n);
}

static inline void prog_sub_n(uint64_t n)
{
    cnt_add(&g_live_objects, (uint64_t)-1);
    cnt_add(&g_live_bytes, (uint64_t)0 - n);
}

static inline __attribute__((always_inline)) void prog_sub(uint64_t n)
{
    if (LIKELY(!LD(g_multi)))
        prog_sub_1(n);
    else
        prog_sub_n(n);
}

static inline void free_raw(uint32_t site, void *raw)
{
    uint64_t sz = chunk_word(raw);
    if (UNLIKELY(sz > 128 + 7))
        mrr_free_watched(site, raw, sz);
    else
        __libc_free(raw);
}

/* Sampling (sample.c): the bytes an allocation of n takes off the thread's
 * way to its next sampled one (16 at least, a multiple of 16). */
static inline uint64_t sample_size(size_t n)
{
    return n < 16 ? 16 : ((uint64_t)n + 15) & ~(uint64_t)15;
}

/* Whether an allocation of sz such bytes is passed over (the bytes taken
 * off the way); else the way is 0 until the next gap is drawn. */
static inline bool sample_skip(struct tstate *ts, uint64_t sz)
{
    if (LIKELY(ts->alloc_left > sz)) {
        ts->alloc_left -= sz;
        return true;
    }
    ts->alloc_left = 0;
    return false;
}

/* An allocation the sampling passed over: a header of two words, the
 * program's totals and the allocation clock; one such hook in about 256
 * is timed, for the recorder's own time (record.c: mrr_unsampled_timed). */
static inline void *unsampled_made(struct tstate *ts, char *raw, size_t n)
{
    if (UNLIKELY(raw == NULL))
        return NULL;
    char *p = raw + UHDR;
    *usize_of(p) = (uint64_t)n | (uint64_t)4 << 58;
    *tagw_of(p) = (uint64_t)tag_of(p) << 32 | SITE_UNSAMPLED;
    uint64_t tick = next_tick(ts);
    if (UNLIKELY(ts->nburst != 0))
        mrr_burst_end(ts);
    ts->burst_unrec = false;
    ts->all_allocs++;
    ts->all_bytes += n;
    if (UNLIKELY(prog_add(n)))
        tl_peak_note(tick, ts->t_cur);
    return p;
}

static inline void *unsampled_alloc(struct tstate *ts, size_t n, bool zero)
{
    if (unsampled_timed(ts))
        return mrr_unsampled_timed(ts, n, zero);
    return unsampled_made(ts, zero ? __libc_calloc(1, n + UHDR) : __libc_malloc(n + UHDR), n);
}

/* The free of an object the sampling passed over: the program's totals,
 * the thread's burst. */
static inline void unsampled_free(void *p)
{
    uint64_t n = *usize_of(p) & SIZE_MASK;
    *tagw_of(p) = 0;
    void *raw = uraw_of(p);
    if (!recording()) {
        __libc_free(raw);
        return;
    }
    struct tstate *ts = tls_ts;
    if (UNLIKELY(ts == NULL)) {
        atomic_fetch_add_explicit(&g_all_frees, 1, memory_order_relaxed);
    } else {
        ts->all_frees++;
        ts->burst_unrec = true;
        if (unsampled_timed(ts)) {
            mrr_unsampled_free_timed(ts, raw, n);
            return;
        }
    }
    prog_sub(n);
    free_raw(0, raw);
}

#pragma GCC visibility pop

#endif
