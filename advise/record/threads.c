/* SPDX-License-Identifier: MIT */
/* advise/record/threads.c -- a thread's state: made at its first
 * recorded call (its index, its stack bounds, its clocks, on the list of
 * threads), its per-site table grown, and released once merged (merge.c).
 * Reading it on the allocation path is hot.h's (get_ts, lsite_get). */
#include "record.h"

size_t mrr_tstate_bytes(void)
{
    return sizeof(struct tstate) + (g_trace_fd >= 0 ? MRA_TRACE_CHUNK : 0u);
}

COLD struct tstate *mrr_thread_register(void)
{
    if (tls_dead)
        return NULL;
    int e = errno;
    size_t tb = mrr_tstate_bytes();
    struct tstate *ts = mrr_imalloc_lines(tb);
    if (!ts) {
        errno = e;
        return NULL;
    }
    if (g_trace_fd >= 0)
        ts->tbuf = (uint8_t *)(ts + 1);
    ts->index = atomic_fetch_add_explicit(&g_nthreads, 1, memory_order_relaxed) + 1;
    if (ts->index >= 2)
        atomic_store_explicit(&g_multi, 1, memory_order_relaxed);
    ts->t_cur = ts->t_last = now_time();
    ts->t_left = ts->t_period = 1;
    ts->t_warm = TIME_EVERY;
    ts->samp_left = ts->samp_gap = SAMPLE_EVERY;
    ts->u_left = ts->u_gap = SAMPLE_EVERY;
    ts->burst_epoch = 1;
    ts->samp_rng = (uint32_t)mix64(g_secret ^ ts->index) | 1u;
    ts->alloc_rng = mix64(g_secret + ts->index) | 1u;
    if (g_sampling) {
        ts->alloc_left = mrr_sample_gap(ts);
        ts->in_win = true; /* a thread starts in an exact window */
        ts->win_left = SAMPLE_WIN;
    }
    mra_walker_init(&ts->walk);
    pthread_mutex_lock(&g_list_mu);
    ts->next = g_threads;
    if (g_threads)
        g_threads->prev = ts;
    g_threads = ts;
    pthread_mutex_unlock(&g_list_mu);
    pthread_setspecific(g_key, ts);
    tls_ts = ts;
    errno = e;
    return ts;
}

/* A thread's lsites: carved from mapped chunks of its own, unmapped with
 * its state, not taken from glibc, whose requests of a kilobyte and more
 * consolidate the program's freed small chunks each time and would lie
 * among the program's objects (kat_trees: some 2,300 sites).  The first
 * chunk is small (a thread of a few sites), each next twice the last, up
 * to LCHUNK_MAX; each faulted in by one system call. */
#define LCHUNK_FIRST ((size_t)16 << 10)
#define LCHUNK_MAX ((size_t)1 << 20)
struct lchunk {
    struct lchunk *next;
    size_t size;
};

static struct lsite *lsite_alloc(struct tstate *ts)
{
    size_t n = sizeof(struct lsite); /* whole cache lines */
    if ((size_t)(ts->lend - ts->lmem) < n) {
        size_t c = ts->lchunk_next ? ts->lchunk_next : LCHUNK_FIRST;
        char *p = mrr_imap_populated(c);
        if (!p)
            return NULL;
        struct lchunk *k = (struct lchunk *)(void *)p;
        k->next = ts->lchunks;
        k->size = c;
        ts->lchunks = k;
        ts->lmem = p + 64;
        ts->lend = p + c;
        ts->lchunk_next = c < LCHUNK_MAX ? 2 * c : c;
    }
    struct lsite *l = (struct lsite *)(void *)ts->lmem;
    ts->lmem += n;
    mrr_rec_mem_add((int64_t)n);
    return l;
}

COLD struct lsite *mrr_lsite_slow(struct tstate *ts, uint32_t site)
{
    int e = errno;
    if (site >= ts->lcap) {
        uint32_t nc = ts->lcap ? ts->lcap : 64;
        while (nc <= site)
            nc *= 2;
        struct lsite **a = mrr_imalloc(nc * sizeof *a);
        if (!a) {
            errno = e;
            return NULL;
        }
        if (ts->ls)
            memcpy(a, ts->ls, ts->lcap * sizeof *a);
        mrr_ifree(ts->ls, ts->lcap * sizeof *a);
        ts->ls = a;
        ts->lcap = nc;
    }
    struct lsite *l = lsite_alloc(ts);
    if (l) {
        lsite_reset(l);
        ts->ls[site] = l;
        uint32_t grp = g_sites[site]->group;
        l->grp = grp == site                          ? l
                 : grp < ts->lcap && ts->ls[grp] != NULL ? ts->ls[grp]
                                                         : mrr_lsite_slow(ts, grp);
        if (!l->grp)
            l->grp = l;
    }
    errno = e;
    return l;
}

void mrr_thread_release(struct tstate *ts)
{
    mrr_side_release(ts);
    for (uint32_t i = 0; i < ts->lcap; i++)
        if (ts->ls[i])
            mrr_rec_mem_add(-(int64_t)sizeof(struct lsite));
    for (struct lchunk *k = ts->lchunks, *next; k; k = next) {
        next = k->next;
        munmap(k, k->size);
    }
    mrr_ifree(ts->ls, ts->lcap * sizeof(struct lsite *));
    mrr_ifree(ts, mrr_tstate_bytes());
}
