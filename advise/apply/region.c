/* SPDX-License-Identifier: MIT */
/* advise/apply/region.c -- the site region: an arena per (thread, route)
 * whose blocks count their live objects, for a site whose objects die
 * together (or stack-like, or never) but are freed one by one by a
 * program that does not know about arenas.
 *
 * A block is RBLOCK bytes aligned to RBLOCK, so that a free finds it from
 * the pointer.  Its state word is (live objects << 1 | retired): the
 * owner's allocations add 2; a free subtracts 2 (from any thread); the
 * owner sets the retired bit when it moves to a new block.  Whoever's
 * operation leaves the word at exactly 1 (retired, nothing live) gives the
 * block back: one operation can, so one thread does.  A free of the
 * region's newest object gives its room back (a stack-like site reuses its
 * memory as an arena with marks would), and a current block whose count
 * reaches zero starts over.  While the process has one thread the counts
 * are plain loads and stores (apply.c sets g_multi before a second thread
 * exists).
 *
 * Blocks come from segments of 2 MiB mapped for them and go back to a free
 * list (a mutex: the block path is rare), taken newest first.  A free
 * block keeps its pages until it has waited DECAY_NS unused, as jemalloc's
 * dirty pages decay in 10 s (a program that builds and frees a large structure again
 * and again must not fault its pages in each time: on these machines a
 * page fault costs more than all the allocations on its page); then its
 * pages go back to the system (MADV_DONTNEED) and it waits on a second
 * list, taken after the first. */
#include <pthread.h>
#include <sys/mman.h>
#include <time.h>

#include "apply.h"

#define DECAY_NS (UINT64_C(10) * 1000000000u) /* an unused free block's pages go after this */

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static struct rblock *g_free, *g_free_tail; /* under g_mu: free blocks with their pages, newest first */
static struct rblock *g_cold;    /* under g_mu: free blocks without */

static uint64_t coarse_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}
static char *g_seg_next, *g_seg_end; /* under g_mu */
static _Atomic uint64_t g_blocks_used, g_blocks_peak;

static inline struct rblock *block_of(const void *h)
{
    return (struct rblock *)((uintptr_t)h & ~(uintptr_t)(RBLOCK - 1));
}

static inline uint64_t state_sub2(struct rblock *b)
{
    if (LIKELY(!atomic_load_explicit(&g_multi, memory_order_relaxed))) {
        uint64_t v = atomic_load_explicit(&b->state, memory_order_relaxed) - 2;
        atomic_store_explicit(&b->state, v, memory_order_relaxed);
        return v;
    }
    return atomic_fetch_sub_explicit(&b->state, 2, memory_order_acq_rel) - 2;
}

static void block_put(struct rblock *b)
{
    atomic_fetch_sub_explicit(&g_blocks_used, 1, memory_order_relaxed);
    uint64_t now = coarse_ns();
    pthread_mutex_lock(&g_mu);
    b->freed_at = now;
    b->prev = NULL;
    b->next = g_free;
    if (g_free)
        g_free->prev = b;
    else
        g_free_tail = b;
    g_free = b;
    pthread_mutex_unlock(&g_mu);
}

static struct rblock *block_get(void)
{
    struct rblock *b = NULL;
    uint64_t now = coarse_ns();
    pthread_mutex_lock(&g_mu);
    while (g_free_tail && now - g_free_tail->freed_at > DECAY_NS) {
        struct rblock *old = g_free_tail;
        g_free_tail = old->prev;
        if (g_free_tail)
            g_free_tail->next = NULL;
        else
            g_free = NULL;
        madvise(old, RBLOCK, MADV_DONTNEED);
        old->next = g_cold;
        g_cold = old;
    }
    if (g_free) {
        b = g_free;
        g_free = b->next;
        if (g_free)
            g_free->prev = NULL;
        else
            g_free_tail = NULL;
    } else if (g_cold) {
        b = g_cold;
        g_cold = b->next;
    } else {
        if (g_seg_next == g_seg_end) {
            size_t len = SEGMENT + RBLOCK;
            char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (m != MAP_FAILED) {
                char *a = (char *)(((uintptr_t)m + RBLOCK - 1) & ~(uintptr_t)(RBLOCK - 1));
                if (a > m)
                    munmap(m, (size_t)(a - m));
                size_t tail = (size_t)(m + len - (a + SEGMENT));
                if (tail)
                    munmap(a + SEGMENT, tail);
                g_seg_next = a;
                g_seg_end = a + SEGMENT;
            }
        }
        if (g_seg_next != g_seg_end) {
            b = (struct rblock *)(void *)g_seg_next;
            g_seg_next += RBLOCK;
        }
    }
    pthread_mutex_unlock(&g_mu);
    if (b) {
        uint64_t u = atomic_fetch_add_explicit(&g_blocks_used, 1, memory_order_relaxed) + 1;
        uint64_t pk = atomic_load_explicit(&g_blocks_peak, memory_order_relaxed);
        while (u > pk && !atomic_compare_exchange_weak_explicit(&g_blocks_peak, &pk, u, memory_order_relaxed,
                                                                memory_order_relaxed)) {
        }
    }
    return b;
}

/* The owner leaves its current block: retired; given back if nothing in
 * it is live. */
static void retire(struct region *r)
{
    struct rblock *b = r->cur;
    if (!b)
        return;
    uint64_t v;
    if (!atomic_load_explicit(&g_multi, memory_order_relaxed)) {
        v = atomic_load_explicit(&b->state, memory_order_relaxed);
        atomic_store_explicit(&b->state, v | 1u, memory_order_relaxed);
    } else {
        v = atomic_fetch_or_explicit(&b->state, 1u, memory_order_acq_rel);
    }
    r->cur = NULL;
    r->bump = r->end = NULL;
    if (v == 0)
        block_put(b);
}

bool mra_region_refill(struct region *r, unsigned route)
{
    if (r->cur && atomic_load_explicit(&r->cur->state, memory_order_acquire) == 0) {
        /* nothing live in it: start over */
        r->bump = (char *)r->cur + RBLOCK_HDR;
        return true;
    }
    retire(r);
    struct rblock *b = block_get();
    if (!b)
        return false;
    atomic_store_explicit(&b->state, 0, memory_order_relaxed);
    b->route = route;
    r->cur = b;
    r->bump = (char *)b + RBLOCK_HDR;
    r->end = (char *)b + RBLOCK;
    return true;
}

void mra_region_free(struct ohdr *h, unsigned route, size_t n)
{
    struct rblock *b = block_of(h);
    struct tstate *ts = tls_ts;
    struct region *r = ts && !ts->dead ? &ts->reg[route] : NULL;
    h->tag = 0;
    if (r && r->cur == b && (char *)h + mra_region_room(n) == r->bump)
        r->bump = (char *)h; /* the newest object: its room back */
    uint64_t v = state_sub2(b);
    if (v == 0 && r && r->cur == b)
        r->bump = (char *)b + RBLOCK_HDR; /* nothing live: start over */
    else if (v == 1)
        block_put(b);
}

bool mra_region_grow(void *p, unsigned route, size_t n, size_t m)
{
    struct ohdr *h = ohdr_of(p);
    struct tstate *ts = tls_ts;
    if (!ts || ts->dead || m > REGION_MAX)
        return false;
    struct region *r = &ts->reg[route];
    if (r->cur != block_of(h) || (char *)h + mra_region_room(n) != r->bump || (size_t)(r->end - (char *)h) < mra_region_room(m))
        return false;
    r->bump = (char *)h + mra_region_room(m);
    h->size_route = (uint64_t)m | (uint64_t)route << SIZE_BITS;
    return true;
}

void mra_region_thread_exit(struct tstate *ts)
{
    for (unsigned i = 1; i <= g_nroutes; i++)
        if (g_routes[i].kind == RK_REGION)
            retire(&ts->reg[i]);
}

void mra_region_atfork(int stage)
{
    if (stage == 0)
        pthread_mutex_lock(&g_mu);
    else
        pthread_mutex_unlock(&g_mu);
}

uint64_t mra_region_held(void)
{
    return atomic_load_explicit(&g_blocks_used, memory_order_relaxed) * RBLOCK;
}

uint64_t mra_region_held_peak(void)
{
    return atomic_load_explicit(&g_blocks_peak, memory_order_relaxed) * RBLOCK;
}
