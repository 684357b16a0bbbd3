/* SPDX-License-Identifier: MIT */
/* advise/apply/slab.c -- the site slab (apply.h): the engine of a pools
 * or objpool site under `memres-advise apply`.
 *
 * Why not memres's own pools: through malloc's interface a free has no
 * size and no pool, so a pool's object needs a header saying both (and a
 * tag telling it from glibc's chunks, read on every free): with it the
 * pooled routes ran 6-19% slower than glibc on churn.  A slab's objects
 * lie in the reserved range, which tells them in free by one compare, in
 * runs of pages of one size class, whose block's header gives the size.
 *
 * What runs where: allocation pops the thread's list of the class, or its
 * loose objects, or carves the class's current run (inline, apply.h);
 * free pushes on the freeing thread's list of the object's class where the
 * thread carved the block (inline), else on its remote list, which goes to
 * the route's shared stack SLAB_REMOTE objects at a time.  Out of line,
 * here: with threads, a list over SLAB_KEEP gives half to the route's
 * shared stack of the class (one chain, one compare-and-swap); a class
 * with nothing on its lists takes the whole shared stack (one exchange) as
 * its loose objects, else a new run.  A thread's classes are made at its
 * first use of the route (mmap: untouched until used) and given back whole
 * at its exit, its blocks' uncarved rest with them.
 *
 * Why scans: a program's phases free one site's objects and then
 * allocate as many at others (python's json.dumps frees its input;
 * json.loads makes the same objects again from its own sites).  glibc's
 * one heap serves the second phase from what the first freed; lists per
 * route kept each route's peak (decimals.py under its candidates' plan:
 * 1.39x glibc's peak RSS).  A class whose list grows past a block's worth
 * of bytes (then past twice what it held at the last scan) asks for a
 * scan, which its thread makes when it next takes a block from the range:
 * it counts the route's listed objects per block, and a block (not the
 * one runs are carved from) whose objects are all listed is taken off the
 * lists and given back.  With threads the lists spill to the route's
 * shared stacks: a thread's spills of a block's worth (then of twice what
 * its last scan counted) make its scan due, and the scan takes the shared
 * stacks whole too.  The free's limit test was there before (the
 * spill's); the walks are paid by the lists' growth.  Tried and left: a
 * count per block on the inline paths (kat_churn +5.8% instructions, a
 * third of the saving over glibc), and a free list per run of pages
 * (mimalloc's): a program that frees at random with most of its objects
 * live refills its run every few allocations (kat_churn +40%). */
#include <string.h>
#include <sys/mman.h>

#include "apply.h"

static void *zmap(size_t n)
{
    void *m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return m == MAP_FAILED ? NULL : m;
}

bool mra_slab_make(struct route *rt)
{
    rt->shared = zmap(SLAB_CLASSES * sizeof *rt->shared);
    return rt->shared != NULL;
}

/* The length of s's list above which a scan is due: twice what it holds,
 * at least a block's worth; or with threads SLAB_KEEP, above which half
 * spills. */
static uint32_t class_limit(const struct slab_class *s)
{
    if (atomic_load_explicit(&g_multi, memory_order_relaxed))
        return SLAB_KEEP;
    uint32_t least = (uint32_t)(RBLOCK / s->size);
    return s->n > least / 2 ? 2 * s->n : least;
}

static struct slab_class *classes_make(void)
{
    struct slab_class *cls = zmap(SLAB_CLASSES * sizeof *cls);
    if (cls)
        for (unsigned c = 1; c < SLAB_CLASSES; c++) {
            cls[c].size = c * 16u;
            cls[c].limit = class_limit(&cls[c]);
        }
    return cls;
}

/* ts's classes of route, made at its first use (NULL: no memory). */
static struct slab_class *classes_get(struct tstate *ts, unsigned route)
{
    struct region *r = &ts->reg[route];
    if (!r->cls)
        r->cls = classes_make();
    return r->cls;
}

/* The chain first..last onto sh. */
static void shared_push(struct slab_shared *sh, void *first, void *last)
{
    void *old = atomic_load_explicit(&sh->stack, memory_order_relaxed);
    do
        *(void **)last = old;
    while (!atomic_compare_exchange_weak_explicit(&sh->stack, &old, first, memory_order_release,
                                                  memory_order_relaxed));
}

/* r's scan due, made at the thread's next block or glibc's next growth. */
static void scan_due(struct tstate *ts, struct region *r)
{
    r->scan = true;
    ts->scan = true;
    mra_region_watch_glibc();
}

void mra_slab_over(struct tstate *ts, unsigned route, unsigned c)
{
    struct region *r = &ts->reg[route];
    struct slab_class *s = &r->cls[c];
    if (!atomic_load_explicit(&g_multi, memory_order_relaxed)) {
        scan_due(ts, r);
    } else if (s->n > SLAB_KEEP) {
        void *first = s->free, *last = first;
        for (unsigned i = 1; i < SLAB_KEEP / 2; i++)
            last = *(void **)last;
        s->free = *(void **)last;
        s->n -= SLAB_KEEP / 2;
        shared_push(&g_routes[route].shared[c], first, last);
        r->spilled += (uint64_t)(SLAB_KEEP / 2) * s->size;
        if (r->spilled >= r->scan_at)
            scan_due(ts, r);
    }
    s->limit = class_limit(s);
}

void mra_slab_free_remote(struct rblock *b, void *p)
{
    struct tstate *ts = tls_ts;
    unsigned c = mra_slab_psize(b, p) >> 4;
    struct slab_shared *sh = &g_routes[b->route].shared[c];
    struct slab_class *cls = ts ? classes_get(ts, b->route) : NULL;
    if (!cls) {
        shared_push(sh, p, p);
        return;
    }
    struct slab_class *s = &cls[c];
    *(void **)p = s->remote;
    if (!s->remote)
        s->remote_last = p;
    s->remote = p;
    if (++s->nremote >= SLAB_REMOTE) {
        shared_push(sh, s->remote, s->remote_last);
        s->remote = s->remote_last = NULL;
        s->nremote = 0;
    }
}

/* A NULL-terminated chain onto sh. */
static void shared_push_chain(struct slab_shared *sh, void *first)
{
    if (!first)
        return;
    void *last = first;
    while (*(void **)last)
        last = *(void **)last;
    shared_push(sh, first, last);
}

/* A run of pages for s from the thread's current block of the route (the
 * region fields of r: its page-aligned rest), or from a new block: false
 * when the range is used up.  A run is one page for sizes up to 1 KiB, else
 * what holds four objects (a class costs a thread one run, not a block). */
static bool run_get(struct tstate *ts, struct region *r, unsigned route, struct slab_class *s)
{
    size_t pages = s->size <= 1024 ? 1 : (4 * (size_t)s->size + 4095) / 4096;
    char *start = r->bump;
    char *end = start ? (char *)(((uintptr_t)start + 4095) & ~(uintptr_t)4095) + pages * 4096 : NULL;
    if (!r->cur || end > r->end || (size_t)(end - start) < s->size) {
        bool fresh; /* a slab's objects are zeroed by calloc: they are reused */
        struct rblock *b = mra_block_get(&fresh);
        if (!b)
            return false;
        mra_block_owned(b, route);
        b->slab = 1;
        b->owner = ts->id;
        b->objects = b->epoch = b->dying = 0;
        memset(b->psize, 0, sizeof b->psize);
        r->cur = b;
        r->end = (char *)b + RBLOCK;
        start = (char *)b + RBLOCK_HDR;
        end = (char *)b + pages * 4096;
        if ((size_t)(end - start) < s->size)
            end += 4096;
    }
    struct rblock *b = r->cur;
    for (size_t i = ((uintptr_t)start - (uintptr_t)b) >> 12; i < ((uintptr_t)end - (uintptr_t)b) >> 12; i++)
        b->psize[i] = (uint16_t)s->size;
    b->objects += (uint32_t)((size_t)(end - start) / s->size);
    r->bump = end;
    s->bump = start;
    s->end = end;
    return true;
}

void *mra_slab_refill(struct tstate *ts, unsigned route, unsigned c)
{
    struct region *r = &ts->reg[route];
    if (!classes_get(ts, route))
        return NULL;
    struct slab_class *s = &r->cls[c];
    void *p;
    if ((p = s->free) != NULL) { /* (the inline path takes these; the first call comes here) */
        s->free = *(void **)p;
        s->n--;
        goto out;
    }
    if ((p = s->loose) == NULL) {
        struct slab_shared *sh = &g_routes[route].shared[c];
        if (atomic_load_explicit(&sh->stack, memory_order_relaxed))
            p = atomic_exchange_explicit(&sh->stack, NULL, memory_order_acquire);
    }
    if (p) {
        s->loose = *(void **)p;
        goto out;
    }
    if ((size_t)(s->end - s->bump) < s->size && !run_get(ts, r, route, s))
        return NULL;
    p = s->bump;
    s->bump += s->size;
out:
    r->allocations++;
    return p;
}

/* The block of s's run's rest not carved yet (counted as listed by a
 * scan), or NULL. */
static struct rblock *rest_block(const struct slab_class *s)
{
    if ((size_t)(s->end - s->bump) < s->size)
        return NULL;
    return mra_region_block(s->bump);
}

/* b seen by scan e: its count started, on the list seen. */
static void scan_see(struct rblock *b, uint32_t e, struct rblock **seen)
{
    if (b->epoch == e)
        return;
    b->epoch = e;
    b->listed = 0;
    b->next = *seen;
    *seen = b;
}

/* The objects of a chain that are ts's counted in their blocks; the
 * chain's length. */
static uint64_t scan_count(const struct tstate *ts, void *p, uint32_t e, struct rblock **seen)
{
    uint64_t n = 0;
    for (; p; p = *(void **)p, n++) {
        struct rblock *b = mra_region_block(p);
        if (b->owner != ts->id)
            continue; /* another thread's block: its own scans count it */
        scan_see(b, e, seen);
        b->listed++;
    }
    return n;
}

/* The chain at *pl less the objects of ts's dying blocks; how many went. */
static uint32_t scan_filter(const struct tstate *ts, void **pl)
{
    uint32_t gone = 0;
    for (void *p = *pl; p; p = *pl) {
        const struct rblock *b = mra_region_block(p);
        if (b->owner == ts->id && b->dying) {
            *pl = *(void **)p;
            gone++;
        } else {
            pl = (void **)p;
        }
    }
    return gone;
}

/* Route's free objects counted per block of ts's: its lists, its loose
 * objects and (with threads) the route's shared stacks, taken whole for
 * the scan and put back after (a thread that finds one empty meanwhile
 * carves a new run); the blocks whose objects are all there (or in a
 * run's rest not carved yet), but the one runs are carved from, taken off
 * them and given back.  Objects of ts's blocks that other threads hold
 * free (their lists and loose objects) are not seen: their blocks stay. */
static void scan_route(struct tstate *ts, unsigned route)
{
    struct region *r = &ts->reg[route];
    struct slab_class *cls = r->cls;
    r->scan = false;
    if (!cls)
        return;
    uint32_t e = ++r->scan_epoch;
    if (e == 0) /* (a block's epoch starts at 0) */
        e = ++r->scan_epoch;
    bool shared = atomic_load_explicit(&g_multi, memory_order_relaxed);
    void *taken[SLAB_CLASSES];
    struct rblock *seen = NULL;
    uint64_t bytes = 0;
    for (unsigned c = 1; c < SLAB_CLASSES; c++) {
        struct slab_class *s = &cls[c];
        struct slab_shared *sh = &g_routes[route].shared[c];
        taken[c] = shared && atomic_load_explicit(&sh->stack, memory_order_relaxed)
                       ? atomic_exchange_explicit(&sh->stack, NULL, memory_order_acquire)
                       : NULL;
        uint64_t walked = scan_count(ts, s->free, e, &seen) + scan_count(ts, s->loose, e, &seen) +
                          scan_count(ts, taken[c], e, &seen);
        bytes += walked * s->size;
        struct rblock *b = rest_block(s);
        if (b) {
            scan_see(b, e, &seen);
            b->listed += (uint32_t)((size_t)(s->end - s->bump) / s->size);
        }
    }
    bool any = false;
    for (struct rblock *b = seen; b; b = b->next)
        if (b->listed == b->objects && b != r->cur) {
            b->dying = 1;
            any = true;
        }
    for (unsigned c = 1; c < SLAB_CLASSES; c++) {
        struct slab_class *s = &cls[c];
        if (any) {
            s->n -= scan_filter(ts, &s->free);
            scan_filter(ts, &s->loose);
            scan_filter(ts, &taken[c]);
            struct rblock *b = rest_block(s);
            if (b && b->dying)
                s->bump = s->end = NULL; /* the run's rest goes with its block */
        }
        shared_push_chain(&g_routes[route].shared[c], taken[c]);
        s->limit = class_limit(s);
    }
    if (any)
        for (struct rblock *b = seen, *next; b; b = next) {
            next = b->next;
            if (b->dying)
                mra_block_put(b);
        }
    /* with threads, the next scan when the lists have spilled twice what
     * this one walked, a block's worth at least: the walks cost no more
     * than the spills (a consumer's shared stack can hold millions) */
    r->spilled = 0;
    r->scan_at = bytes > RBLOCK / 2 ? 2 * bytes : RBLOCK;
}

void mra_slab_scan(struct tstate *ts)
{
    ts->scan = false;
    for (unsigned route = 1; route <= g_nroutes; route++)
        if (g_routes[route].kind == RK_SLAB && ts->reg[route].scan)
            scan_route(ts, route);
}

/* The thread's blocks whose objects are all on its lists given back (a
 * scan); its lists and its runs' uncarved rest to the routes' shared
 * stacks. */
void mra_slab_thread_exit(struct tstate *ts)
{
    for (unsigned route = 1; route <= g_nroutes; route++) {
        struct slab_class *cls = ts->reg[route].cls;
        if (g_routes[route].kind != RK_SLAB || !cls)
            continue;
        scan_route(ts, route);
        ts->reg[route].cls = NULL;
        for (unsigned c = 1; c < SLAB_CLASSES; c++) {
            struct slab_class *s = &cls[c];
            struct slab_shared *sh = &g_routes[route].shared[c];
            while ((size_t)(s->end - s->bump) >= s->size) {
                *(void **)s->bump = s->free;
                s->free = s->bump;
                s->bump += s->size;
            }
            if (s->remote)
                shared_push(sh, s->remote, s->remote_last);
            shared_push_chain(sh, s->free);
            shared_push_chain(sh, s->loose);
        }
        munmap(cls, SLAB_CLASSES * sizeof *cls);
    }
}
