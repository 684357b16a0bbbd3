/* SPDX-License-Identifier: MIT */
/* advise/apply/region.c -- the site region: an arena per (thread, route)
 * whose blocks count their live objects, for a site whose objects die
 * together (or stack-like, or never) but are freed one by one by a
 * program that does not know about arenas.
 *
 * Objects have no header: a region object costs its size rounded to 16
 * bytes, as in an arena.  Blocks lie in one range of address space
 * reserved at start-up (a pointer is a region's when it is in the range:
 * one compare in free), RBLOCK bytes each, aligned to RBLOCK, so that a
 * free finds its block from the pointer.  A block's header holds its
 * route, the end of what was handed out in it (top), a bitmap of where
 * objects start (one bit per 16 bytes: an object's size for realloc and
 * malloc_usable_size is the distance to the next start, or to top), and a
 * state word (live objects << 1 | retired): the owner's allocations add 2;
 * a free subtracts 2 (from any thread); the owner sets the retired bit
 * when it moves to a new block.  Whoever's operation leaves the word at
 * exactly 1 (retired, nothing live) gives the block back: one operation
 * can, so one thread does.  A free of the region's newest object gives
 * its room back (a stack-like site reuses its memory as an arena with
 * marks would), and a current block whose count reaches zero starts over.
 * While the process has one thread the counts are plain loads and stores
 * (apply.c sets g_multi before a second thread exists).
 *
 * The range is made usable a segment of 2 MiB at a time; blocks go back to
 * a free list (a mutex: the block path is rare), taken newest first.  A
 * free block keeps its pages until it has waited DECAY_NS unused, as
 * jemalloc's dirty pages decay in 10 s (a program that builds and frees a
 * large structure again and again must not fault its pages in each time:
 * on these machines a page fault costs more than all the allocations on
 * its page); then its pages go back to the system (MADV_DONTNEED) and it
 * waits on a second list, taken after the first.  Sooner when glibc grows:
 * the calls the plan does not route are glibc's, which would have served
 * them from the memory the routes freed (a program's next phase at other
 * sites); a free block's pages kept while glibc's heap grows past its
 * highest end are memory the process holds twice.  So as glibc's heap
 * grows past its highest end (its brk: the main arena's; threads' arenas
 * and glibc's mmapped chunks are not seen), as many bytes of the oldest
 * free blocks' pages go back (python decimals.py under its 12 best
 * candidates: peak RSS 1.26x glibc's with the pages kept). */
#include <pthread.h>
#include <sys/mman.h>
#include <time.h>

#include "apply.h"

#define DECAY_NS (UINT64_C(10) * 1000000000u) /* an unused free block's pages go after this */

uintptr_t g_range_lo;
size_t g_range_len;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static struct rblock *g_free, *g_free_tail; /* under g_mu: free blocks with their pages, newest first */
static struct rblock *g_cold;    /* under g_mu: free blocks without */
static char *g_seg_next, *g_seg_end; /* under g_mu: the segment being carved */
static char *g_commit;           /* under g_mu: the range's first byte not yet usable */
static _Atomic uint64_t g_blocks_used, g_blocks_peak;
static _Atomic uintptr_t g_brk_high; /* glibc's heap's highest end seen (written under g_mu) */
_Atomic uintptr_t g_brk_mark = UINTPTR_MAX; /* g_brk_high while free blocks keep their pages,
                                                or a slab's scan is due */

static uint64_t coarse_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

int mra_region_init(void)
{
    /* 64 GiB of address space, less where a limit refuses it */
    for (size_t len = (size_t)64 << 30; len >= ((size_t)1 << 30); len /= 4) {
        void *m = mmap(NULL, len + SEGMENT, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED)
            continue;
        uintptr_t a = ((uintptr_t)m + SEGMENT - 1) & ~(uintptr_t)(SEGMENT - 1);
        g_range_lo = a;
        g_range_len = len;
        g_commit = (char *)a;
        atomic_store_explicit(&g_brk_high, (uintptr_t)__curbrk, memory_order_relaxed);
        return 0;
    }
    return -1;
}

/* Under g_mu: the oldest free block's pages back to the system, the
 * block to the list of those without. */
static void cool_oldest(void)
{
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

/* Under g_mu: the mark glibc's heap end is checked against. */
static void brk_mark_set(void)
{
    struct tstate *ts = tls_ts;
    bool watch = g_free || (ts && ts->scan);
    atomic_store_explicit(&g_brk_mark, watch ? atomic_load_explicit(&g_brk_high, memory_order_relaxed) : UINTPTR_MAX,
                          memory_order_relaxed);
}

void mra_region_watch_glibc(void)
{
    atomic_store_explicit(&g_brk_mark, atomic_load_explicit(&g_brk_high, memory_order_relaxed),
                          memory_order_relaxed);
}

void mra_region_glibc_grew(void)
{
    /* busy: a later call looks again (and the fork's prepare holds it while
     * other handlers may allocate) */
    if (pthread_mutex_trylock(&g_mu) != 0)
        return;
    pthread_mutex_unlock(&g_mu);
    /* the thread's slab blocks whose objects are all free go first (a
     * program's next phase on glibc takes no block, which would scan) */
    struct tstate *ts = tls_ts;
    if (ts && ts->scan && !tls_guard) {
        tls_guard++;
        mra_slab_scan(ts);
        tls_guard--;
    }
    if (pthread_mutex_trylock(&g_mu) != 0)
        return;
    uintptr_t end = (uintptr_t)__curbrk, high = atomic_load_explicit(&g_brk_high, memory_order_relaxed);
    if (end > high) {
        atomic_store_explicit(&g_brk_high, end, memory_order_relaxed);
        for (size_t given = 0; given < end - high && g_free_tail; given += RBLOCK)
            cool_oldest();
    }
    brk_mark_set();
    pthread_mutex_unlock(&g_mu);
}

void mra_block_owned(struct rblock *b, unsigned route)
{
    b->route = route;
    struct route *rt = &g_routes[route];
    cnt_max(&rt->blocks_peak, atomic_fetch_add_explicit(&rt->blocks, 1, memory_order_relaxed) + 1);
}

void mra_block_put(struct rblock *b)
{
    atomic_fetch_sub_explicit(&g_blocks_used, 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&g_routes[b->route].blocks, 1, memory_order_relaxed);
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
    brk_mark_set();
    pthread_mutex_unlock(&g_mu);
}

struct rblock *mra_block_get(bool *fresh)
{
    struct tstate *ts = tls_ts;
    if (ts && ts->scan)
        mra_slab_scan(ts); /* its slab blocks with nothing out first */
    struct rblock *b = NULL;
    *fresh = true; /* but a free block that kept its pages */
    uint64_t now = coarse_ns();
    pthread_mutex_lock(&g_mu);
    while (g_free_tail && now - g_free_tail->freed_at > DECAY_NS)
        cool_oldest();
    if (g_free) {
        b = g_free;
        *fresh = false;
        g_free = b->next;
        if (g_free)
            g_free->prev = NULL;
        else
            g_free_tail = NULL;
    } else if (g_cold) {
        b = g_cold;
        g_cold = b->next;
    } else {
        if (g_seg_next == g_seg_end && g_commit + SEGMENT <= (char *)g_range_lo + g_range_len &&
            mprotect(g_commit, SEGMENT, PROT_READ | PROT_WRITE) == 0) {
            g_seg_next = g_commit;
            g_seg_end = g_commit + SEGMENT;
            g_commit += SEGMENT;
        }
        if (g_seg_next != g_seg_end) {
            b = (struct rblock *)(void *)g_seg_next;
            g_seg_next += RBLOCK;
        }
    }
    brk_mark_set();
    pthread_mutex_unlock(&g_mu);
    if (b)
        cnt_max(&g_blocks_peak, atomic_fetch_add_explicit(&g_blocks_used, 1, memory_order_relaxed) + 1);
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
    r->bump = r->end = r->last = NULL;
    r->fresh = false;
    if (v == 0)
        mra_block_put(b);
}

/* r's block b from its first byte again; fresh: its bytes are all zero */
static void start_over(struct region *r, struct rblock *b, bool fresh)
{
    memset(b->bits, 0, sizeof b->bits);
    r->bump = (char *)b + RBLOCK_HDR;
    r->last = NULL;
    r->fresh = fresh;
    b->top = r->bump;
}

bool mra_region_refill(struct region *r, unsigned route)
{
    if (r->cur && atomic_load_explicit(&r->cur->state, memory_order_acquire) == 0) {
        start_over(r, r->cur, false); /* nothing live in it */
        return true;
    }
    retire(r);
    bool fresh;
    struct rblock *b = mra_block_get(&fresh);
    if (!b)
        return false;
    atomic_store_explicit(&b->state, 0, memory_order_relaxed);
    mra_block_owned(b, route);
    b->slab = 0;
    r->cur = b;
    r->end = (char *)b + RBLOCK;
    start_over(r, b, fresh);
    return true;
}

/* The start of the last object before granule i in b, or NULL. */
static char *start_before(struct rblock *b, size_t i)
{
    size_t first = RBLOCK_HDR / 16;
    while (i > first) {
        i--;
        size_t w = i >> 6;
        uint64_t bits = b->bits[w] & (~UINT64_C(0) >> (63 - (i & 63)));
        if (bits)
            return (char *)b + ((w << 6) + 63 - (size_t)__builtin_clzll(bits)) * 16;
        i = w << 6;
    }
    return NULL;
}

size_t mra_region_size(const void *p)
{
    struct rblock *b = mra_region_block(p);
    size_t i = ((uintptr_t)p - (uintptr_t)b) >> 4;
    size_t top = ((uintptr_t)b->top - (uintptr_t)b) >> 4;
    size_t j = i + 1;
    while (j < top) {
        uint64_t bits = b->bits[j >> 6] >> (j & 63);
        if (bits) {
            j += (size_t)__builtin_ctzll(bits);
            break;
        }
        j = ((j >> 6) + 1) << 6;
    }
    if (j > top)
        j = top;
    return (j - i) * 16;
}

/* p the newest object of r (the freeing thread's region of its block):
 * its room back, then counted; or (p NULL) the count v left by a free:
 * the block started over (0, r's current) or given back (1). */
void mra_region_free_slow(struct rblock *b, struct region *r, void *p, uint64_t v)
{
    if (p) {
        size_t i = ((uintptr_t)p - (uintptr_t)b) >> 4;
        b->bits[i >> 6] &= ~(UINT64_C(1) << (i & 63));
        r->bump = (char *)p;
        r->fresh = false; /* the room given back was written */
        b->top = r->bump;
        r->last = start_before(b, i);
        v = mra_state_sub2(b);
    }
    if (v == 0 && r && r->cur == b)
        start_over(r, b, false); /* nothing live: start over */
    else if (v == 1)
        mra_block_put(b);
}

bool mra_region_grow(void *p, size_t m)
{
    struct rblock *b = mra_region_block(p);
    struct tstate *ts = tls_ts;
    if (!ts || m > REGION_MAX)
        return false;
    struct region *r = &ts->reg[b->route];
    size_t need = mra_region_room(m);
    if (r->cur != b || (char *)p != r->last || (size_t)(r->end - (char *)p) < need)
        return false;
    r->bump = (char *)p + need;
    b->top = r->bump;
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

uint64_t mra_region_held_peak(void)
{
    return atomic_load_explicit(&g_blocks_peak, memory_order_relaxed) * RBLOCK;
}
