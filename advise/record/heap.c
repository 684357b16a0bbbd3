/* SPDX-License-Identifier: MIT */
/* advise/record/heap.c -- what glibc gave back to the system and took
 * again (format.h's heap section).
 *
 * Given back: a recorded free (or realloc) that lowers the main heap's end
 * (glibc's __curbrk), read before and after the calls that can (a chunk
 * above fastbin size), or that frees a chunk glibc mmapped for it.  Taken:
 * the heap's growth, counted lazily -- only a trim lowers the end, so what
 * it grew since the last trim is the end before this one less the end
 * after that one (and at an unmapping and at exit, the end then), which
 * takes from what was given back before that event only -- and each chunk glibc
 * mmapped, counted at its free (a chunk mapped and never freed is not
 * counted: its pages are touched once).  Nothing is read on the path of an
 * allocation.  What was given back and not yet taken again is a pool: growth
 * takes from it first, and what it takes is memory the program faults in
 * a second time.  The events are rare: counted here, under a mutex. */
#include "record.h"

static pthread_mutex_t heap_mu = PTHREAD_MUTEX_INITIALIZER;
static struct mra_heap_header heap;
static uint64_t heap_pending; /* given back, not yet taken again */
static uintptr_t heap_last;   /* the heap's end after the last trim (at start-up: then) */

void mrr_heap_start(void)
{
    /* sbrk(0) sets __curbrk where glibc has not yet (no call to brk so far) */
    heap_last = (uintptr_t)sbrk(0);
}

static struct gmerged *merged_of(uint32_t site)
{
    return site && site <= atomic_load_explicit(&g_nsites, memory_order_acquire) ? g_sites[site]->mg : NULL;
}

/* d bytes taken (under heap_mu): from what was given back first */
static void taken(struct gmerged *mg, uint64_t d)
{
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

static void given(struct gmerged *mg, uint64_t d)
{
    heap.given_back_bytes += d;
    heap.given_back_events++;
    heap_pending += d;
    if (mg)
        mg->heap_given += d;
}

/* The heap's growth since the last event, its end now at end (under
 * heap_mu): taken from what was given back before. */
static void grown_to(uintptr_t end)
{
    if (end > heap_last)
        taken(NULL, end - heap_last);
    heap_last = end;
}

void mrr_heap_settle(void)
{
    pthread_mutex_lock(&heap_mu);
    grown_to(heap_end());
    pthread_mutex_unlock(&heap_mu);
}

void mrr_heap_skip(void)
{
    pthread_mutex_lock(&heap_mu);
    uintptr_t end = heap_end();
    if (end > heap_last)
        heap_last = end;
    pthread_mutex_unlock(&heap_mu);
}

COLD void mrr_heap_trimmed(uint32_t site, uintptr_t before, uintptr_t after)
{
    pthread_mutex_lock(&heap_mu);
    struct gmerged *mg = merged_of(site);
    grown_to(before);
    given(mg, before - after);
    heap_last = after;
    pthread_mutex_unlock(&heap_mu);
}

/* A chunk glibc mapped for one allocation, unmapped: taken when it was
 * made -- counted now, so that the allocation path reads nothing more
 * (what was given back between its making and now counts as taken by it
 * too) -- and given back. */
COLD void mrr_heap_unmapped(uint32_t site, size_t bytes)
{
    pthread_mutex_lock(&heap_mu);
    struct gmerged *mg = merged_of(site);
    grown_to(heap_end());
    taken(mg, bytes);
    given(mg, bytes);
    pthread_mutex_unlock(&heap_mu);
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
    grown_to(heap_end());
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
