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
    uint64_t lb = cnt_add(&g->live_bytes, n - old);
    cnt_max(&g->peak_bytes, lb);
    cnt_max(&g->arena_peak, cnt_add(&g->arena_cur, n));
    cnt_max(&g_peak_bytes, cnt_add(&g_live_bytes, n - old));
    tl_peak_note(ts->last_tick, ts->t_cur);
    if (UNLIKELY(!l))
        return;
    uint64_t chain = (h->size_misc >> SIZE_BITS) & CHAIN_MAX;
    l->s.reallocs++;
    if (moved)
        l->s.realloc_moves++;
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

#pragma GCC visibility pop

#endif
