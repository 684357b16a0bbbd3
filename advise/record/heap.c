/* SPDX-License-Identifier: MIT */
/* advise/record/heap.c -- what glibc gave back to the system and took
 * again (format.h's heap section).  The recorded calls look at the main
 * heap's end (glibc's __curbrk) before and after glibc's malloc, free and
 * realloc, and at the mmapped bit of the chunks they make and free; a
 * change is rare, and counted here under a mutex.  Memory given back and
 * not yet taken again is a pool: growth takes from it first, and what it
 * takes is memory the program faults in a second time. */
#include "record.h"

static pthread_mutex_t heap_mu = PTHREAD_MUTEX_INITIALIZER;
static struct mra_heap_header heap;
static uint64_t heap_pending; /* given back, not yet taken again */

/* d bytes given back (give) or taken (!give) for site's object. */
static void heap_note(uint32_t site, uint64_t d, bool give)
{
    pthread_mutex_lock(&heap_mu);
    struct gmerged *mg = site && site <= atomic_load_explicit(&g_nsites, memory_order_acquire) ? g_sites[site]->mg
                                                                                               : NULL;
    if (give) {
        heap.given_back_bytes += d;
        heap.given_back_events++;
        heap_pending += d;
        if (mg)
            mg->heap_given += d;
    } else {
        uint64_t r = d < heap_pending ? d : heap_pending;
        heap.grown_bytes += d;
        if (r) {
            heap.retaken_bytes += r;
            heap.retaken_events++;
            heap_pending -= r;
            if (mg)
                mg->heap_retaken += r;
        }
    }
    pthread_mutex_unlock(&heap_mu);
}

COLD void mrr_heap_moved(uint32_t site, uintptr_t before, uintptr_t after)
{
    if (after > before)
        heap_note(site, after - before, false);
    else if (after < before)
        heap_note(site, before - after, true);
}

COLD void mrr_heap_mapped(uint32_t site, size_t old_bytes, size_t new_bytes)
{
    if (new_bytes > old_bytes)
        heap_note(site, new_bytes - old_bytes, false);
    else if (new_bytes < old_bytes)
        heap_note(site, old_bytes - new_bytes, true);
}

static int cmp_heap_site(const void *a, const void *b)
{
    const struct mra_heap_site *x = a, *y = b;
    uint64_t u = x->retaken_bytes + x->given_back_bytes, v = y->retaken_bytes + y->given_back_bytes;
    if (u != v)
        return u > v ? -1 : 1;
    return x->site < y->site ? -1 : x->site > y->site;
}

void mrr_heap_write(void (*put)(void *, const void *, size_t), void *ctx, uint32_t nsites)
{
    struct mra_heap_site top[MRA_HEAP_SITES + 1];
    uint32_t n = 0;
    pthread_mutex_lock(&heap_mu);
    struct mra_heap_header h = heap;
    for (uint32_t i = 1; i <= nsites; i++) {
        const struct gmerged *mg = g_sites[i]->mg;
        if (!mg->heap_given && !mg->heap_retaken)
            continue;
        /* the least of MRA_HEAP_SITES + 1 falls off the end */
        top[n] = (struct mra_heap_site){ .site = g_sites[i]->id, .given_back_bytes = mg->heap_given,
                                         .retaken_bytes = mg->heap_retaken };
        if (n < MRA_HEAP_SITES)
            n++;
        qsort(top, n + (n == MRA_HEAP_SITES), sizeof top[0], cmp_heap_site);
    }
    pthread_mutex_unlock(&heap_mu);
    h.nsites = n;
    h.reserved = 0;
    put(ctx, &h, sizeof h);
    put(ctx, top, n * sizeof top[0]);
}
