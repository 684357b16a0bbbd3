/* SPDX-License-Identifier: MIT */
/* advise/record/sites.c -- a new site: the global open-addressed table
 * keyed by the frames, read without lock (record.c's site_lookup), a mutex
 * only to add a site; and the site's group, the sites whose stacks hold
 * the same set of return addresses. */
#include "record.h"

/* A site's group: the sites whose stacks hold the same set of return
 * addresses, which differ only by the order and repetition that recursion
 * gives them (a tree builder's node at depth d returns through the left-
 * and right-child calls in the order of its path: each path is a stack of
 * its own, one object per tree).  Order and liveness -- the ring of
 * stack-like frees, the bursts of freed-together ones -- are followed per
 * group, so that the objects of one recursive structure are judged
 * together.  The key: a sum over the distinct addresses, order-free. */
static uint64_t group_key(const uint64_t *fr, unsigned n)
{
    uint64_t k = 0;
    for (unsigned i = 0; i < n; i++) {
        unsigned j = 0;
        while (j < i && fr[j] != fr[i])
            j++;
        if (j == i)
            k += mix64(fr[i] ^ UINT64_C(0x5bd1e9955bd1e995));
    }
    return k | 1u;
}

/* The group of a new site id (under g_site_mu). */
static uint32_t group_of(const uint64_t *fr, unsigned n, uint32_t id)
{
    uint64_t k = group_key(fr, n);
    size_t mask = ((size_t)1 << SLOT_BITS) - 1;
    for (size_t i = (size_t)mix64(k) & mask;; i = (i + 1) & mask) {
        if (g_gkeys[i] == k)
            return g_gsite[i];
        if (g_gkeys[i] == 0) {
            g_gkeys[i] = k;
            g_gsite[i] = id;
            return id;
        }
    }
}

/* A new site's memory, never freed: carved from mapped chunks, not taken
 * from glibc, whose requests of a kilobyte and more consolidate the
 * program's freed small chunks each time (a program with thousands of
 * free stacks paid for it in every free that followed); each chunk faulted
 * in by one system call, not a page fault per page touched (costly in a
 * virtual machine).  Under g_site_mu. */
#define SITE_CHUNK ((size_t)1 << 20)
static char *site_mem, *site_end;

static void *site_alloc(size_t n)
{
    n = (n + 63u) & ~(size_t)63;
    if ((size_t)(site_end - site_mem) < n) {
        size_t c = n > SITE_CHUNK ? n : SITE_CHUNK;
        char *p = mrr_imap_populated(c);
        if (!p)
            return NULL;
        site_mem = p;
        site_end = p + c;
    }
    void *p = site_mem;
    site_mem += n;
    mrr_rec_mem_add((int64_t)n);
    return p;
}

/* Free stacks kept at most: a recursive free (a tree's nodes freed by a
 * function that calls itself for each child, inlined a few levels deep so
 * that every level has return addresses of its own) has a stack per path
 * through the recursion -- kat_trees 16: 53,000, each a site of about
 * 2 KiB, 104 MiB of the recorder's memory.  The frees are sampled, the
 * analysis shows a site's most frequent free stacks and names the
 * function they share: the first FREE_STACKS_MAX stacks show it as well,
 * and a free whose stack is new after them is counted on no stack. */
#define FREE_STACKS_MAX 2048u
static _Atomic uint32_t g_free_stacks;

COLD uint32_t mrr_site_create(const uint64_t *fr, unsigned n, uint64_t h, bool free_stack)
{
    if (free_stack && atomic_load_explicit(&g_free_stacks, memory_order_relaxed) >= FREE_STACKS_MAX)
        return 0;
    int e = errno;
    uint32_t id = 0;
    size_t mask = ((size_t)1 << SLOT_BITS) - 1;
    pthread_mutex_lock(&g_site_mu);
    size_t i = (size_t)h & mask;
    for (;; i = (i + 1) & mask) {
        uint32_t s = atomic_load_explicit(&g_slots[i], memory_order_acquire);
        if (s == 0)
            break;
        struct gsite *g = g_sites[s];
        if (g->hash == h && g->nframes == n && memcmp(g->frames, fr, n * sizeof *fr) == 0) {
            id = s;
            goto out;
        }
    }
    uint32_t ns = atomic_load_explicit(&g_nsites, memory_order_relaxed);
    if (ns + 1 >= MAX_SITES) {
        atomic_fetch_add_explicit(&g_sites_dropped, 1, memory_order_relaxed);
        goto out;
    }
    if (free_stack && atomic_fetch_add_explicit(&g_free_stacks, 1, memory_order_relaxed) >= FREE_STACKS_MAX)
        goto out;
    struct gsite *g = site_alloc(gsite_bytes()); /* zeroed pages */
    struct gmerged *mg = g ? site_alloc(sizeof *mg) : NULL;
    if (!mg)
        goto out;
    g->mg = mg;
    id = ns + 1;
    g->hash = h;
    g->id = id;
    g->nframes = n;
    g->mg->m.id = id;
    g->mg->m.nframes = n;
    g->mg->m.min_size = UINT64_MAX;
    memcpy(g->frames, fr, n * sizeof *fr);
    g->group = free_stack ? id : group_of(fr, n, id);
    g->mg->m.free_stack = free_stack;
    g_sites[id] = g;
    atomic_store_explicit(&g_nsites, id, memory_order_release);
    atomic_store_explicit(&g_slots[i], id, memory_order_release);
    mrr_modules_note(fr, n);
out:
    pthread_mutex_unlock(&g_site_mu);
    errno = e;
    return id;
}
