/* SPDX-License-Identifier: MIT */
/* advise/record/merge.c -- each thread's per-site figures merged into
 * the sites' (common/site_stats.c adds them up): at thread exit (after
 * the other keys' destructors), and for every live thread at exit or
 * before an exec, which then write the profile (profile_out.c) and put the
 * trace under its name.  Under g_merge_mu, which is taken before
 * g_list_mu and g_trace_mu. */
#include <stdio.h>
#include <sys/stat.h>

#include "record.h"

static void merge_lsite(struct gsite *g, struct lsite *l)
{
    struct mra_site_stats *m = &g->mg->m;
    const struct lstats *s = &l->s;
    if (s->allocations && !l->counted) {
        m->alloc_threads++;
        l->counted = 1;
    }
    /* the thread's figures as a record of the format, added as the
     * analysis adds raw sites (the live and peak figures are the site's
     * shared counters, taken at exit) */
    struct mra_site_stats t;
    memset(&t, 0, sizeof t);
    t.allocations = s->allocations;
    t.bytes = s->bytes;
    t.min_size = s->min_size;
    t.max_size = s->max_size;
    t.first_tick = s->first_tick;
    t.last_tick = s->last_tick;
    t.frees = s->frees;
    t.freed_bytes = s->freed_bytes;
    t.lifetime_ticks_sum = s->lifetime_ticks_sum;
    t.lifetime_ns_sum = s->lifetime_ns_sum;
    t.freed_together = s->freed_together;
    t.stack_like = s->stack_like;
    t.remote_frees = s->remote_frees;
    t.aligned = s->aligned;
    t.reallocs = s->reallocs;
    t.realloc_moves = s->realloc_moves;
    t.realloc_chain_max = s->realloc_chain_max;
    t.glibc_ns = (uint64_t)s->glibc_time; /* clock units, two's complement until finish_site */
    t.glibc_samples = s->glibc_samples;
    t.glibc_slow_ns = (uint64_t)s->glibc_slow_time;
    t.nfree_sites = s->nfree_sites;
    memcpy(t.free_sites, s->free_sites, sizeof t.free_sites);
    memcpy(t.free_site_counts, s->free_site_counts, sizeof t.free_site_counts);
    memcpy(t.hist_ticks, s->hist_ticks, sizeof t.hist_ticks);
    memcpy(t.hist_ns, s->hist_ns, sizeof t.hist_ns);
    mra_site_stats_add(m, &t);
    g->mg->stack_judged += s->stack_judged;
    g->mg->together_judged += s->together_judged;
    g->mg->together_unjudged += s->together_unjudged;
    g->mg->win_stack_frees += s->win_stack_frees;
    g->mg->win_stack_like += s->win_stack_like;
    g->mg->win_together_frees += s->win_together_frees;
    g->mg->win_together += s->win_together;
    for (uint32_t i = 0; i < l->nsz; i++) {
        uint32_t j;
        for (j = 0; j < g->mg->nmsz; j++)
            if (g->mg->msz[j].size == l->sz[i].size)
                break;
        if (j < g->mg->nmsz) {
            g->mg->msz[j].count += l->sz[i].count;
        } else if (g->mg->nmsz < GSIZES) {
            g->mg->msz[g->mg->nmsz++] = l->sz[i];
        } else {
            g->mg->msz_other += l->sz[i].count;
            g->mg->msz_overflow = 1;
        }
    }
    g->mg->msz_other += l->sz_other;
    if (l->sz_overflow)
        g->mg->msz_overflow = 1;
    lsite_reset(l);
}

/* under g_merge_mu */
void mrr_merge_thread(struct tstate *ts)
{
    if (ts->nburst != 0)
        mrr_burst_end(ts);
    uint32_t ns = atomic_load_explicit(&g_nsites, memory_order_acquire);
    uint32_t lim = ts->lcap < ns + 1 ? ts->lcap : ns + 1;
    for (uint32_t i = 1; i < lim; i++)
        if (ts->ls[i])
            merge_lsite(g_sites[i], ts->ls[i]);
    atomic_fetch_add_explicit(&g_hook_time, ts->hook_time, memory_order_relaxed);
    ts->hook_time = 0;
    atomic_fetch_add_explicit(&g_all_allocs, ts->all_allocs, memory_order_relaxed);
    atomic_fetch_add_explicit(&g_all_bytes, ts->all_bytes, memory_order_relaxed);
    atomic_fetch_add_explicit(&g_all_frees, ts->all_frees, memory_order_relaxed);
    atomic_fetch_add_explicit(&g_all_reallocs, ts->all_reallocs, memory_order_relaxed);
    ts->all_allocs = ts->all_bytes = ts->all_frees = ts->all_reallocs = 0;
    uint64_t mt = atomic_load_explicit(&g_max_tick, memory_order_relaxed);
    if (ts->last_tick > mt)
        atomic_store_explicit(&g_max_tick, ts->last_tick, memory_order_relaxed);
}

void mrr_thread_exit(void *arg)
{
    struct tstate *ts = arg;
    if (atomic_load_explicit(&g_state, memory_order_acquire) != ST_REC)
        return;
    if (ts->rounds < 3) { /* run again after the other keys' destructors */
        ts->rounds++;
        pthread_setspecific(g_key, ts);
        return;
    }
    tls_guard++;
    int e = errno;
    pthread_mutex_lock(&g_merge_mu);
    if (atomic_load_explicit(&g_state, memory_order_acquire) == ST_REC) {
        mrr_merge_thread(ts);
        mrr_tr_flush(ts);
        pthread_mutex_lock(&g_list_mu);
        if (ts->prev)
            ts->prev->next = ts->next;
        else
            g_threads = ts->next;
        if (ts->next)
            ts->next->prev = ts->prev;
        pthread_mutex_unlock(&g_list_mu);
        tls_ts = NULL;
        tls_dead = 1;
        mrr_thread_release(ts);
    }
    pthread_mutex_unlock(&g_merge_mu);
    errno = e;
    tls_guard--;
}

/* Merges every thread's figures, writes the profile and puts the trace
 * under its name; `closing`: the process ends (the trace is closed),
 * else an exec is about to replace it (the trace stays open, to go on if
 * the exec fails: it is close-on-exec). */
void mrr_flush_all(bool closing)
{
    tls_guard++;
    int e = errno;
    uint64_t end_ns = mra_mono_ns();
    pthread_mutex_lock(&g_merge_mu);
    pthread_mutex_lock(&g_list_mu);
    for (struct tstate *ts = g_threads; ts; ts = ts->next) {
        mrr_merge_thread(ts);
        mrr_tr_flush(ts);
    }
    pthread_mutex_unlock(&g_list_mu);
    mrr_write_profile(end_ns);
    if (g_trace_fd >= 0) {
        char tmp[4200];
        snprintf(tmp, sizeof tmp, "%s.tmp.%ld", g_trace_path, (long)getpid());
        pthread_mutex_lock(&g_trace_mu);
        if (!closing) {
            rename(tmp, g_trace_path); /* a second rename (at exit) finds nothing */
        } else {
            struct stat st;
            if (close(g_trace_fd) == 0) {
                if (stat(tmp, &st) == 0)
                    rename(tmp, g_trace_path);
            } else {
                unlink(tmp);
            }
            g_trace_fd = -1;
        }
        pthread_mutex_unlock(&g_trace_mu);
    }
    pthread_mutex_unlock(&g_merge_mu);
    errno = e;
    tls_guard--;
}

__attribute__((destructor(101))) static void rec_fini(void)
{
    int expect = ST_REC;
    if (!atomic_compare_exchange_strong(&g_state, &expect, ST_DONE))
        return;
    mrr_flush_all(true);
}
