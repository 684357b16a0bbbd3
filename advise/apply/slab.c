/* SPDX-License-Identifier: MIT */
/* advise/apply/slab.c -- the site slab (apply.h): the engine of a pools
 * or objpool site under `memres-advise apply`.
 *
 * Why not memres's own pools: through malloc's interface a free has no
 * size and no pool, so a pool's object needs a header saying both (and a
 * tag telling it from glibc's chunks, read on every free): with it the
 * pooled routes ran 6-19% slower than glibc on churn.  A slab's objects
 * lie in the reserved range, which tells them in free by one compare, in
 * blocks of one size class, whose header gives the size.
 *
 * What runs where: allocation pops the thread's list of the class, or
 * carves the thread's current block of the class (inline, apply.h); free
 * pushes on the freeing thread's list of the object's class where the
 * thread carved the block (inline), else on its remote list, which goes to
 * the route's shared stack SLAB_REMOTE objects at a time.  Out of line,
 * here: a list over SLAB_KEEP gives half to the route's shared stack of
 * the class (one chain, one compare-and-swap); an empty list takes the
 * whole shared stack (one exchange), else a new block; a thread's classes are made at its first use of the route (mmap:
 * untouched until used) and given back whole at its exit, its blocks'
 * uncarved rest with them. */
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

static struct slab_class *classes_make(void)
{
    struct slab_class *cls = zmap(SLAB_CLASSES * sizeof *cls);
    if (cls)
        for (unsigned c = 1; c < SLAB_CLASSES; c++)
            cls[c].size = c * 16u;
    return cls;
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

void mra_slab_spill(struct slab_class *s, struct slab_shared *sh)
{
    void *first = s->free, *last = first;
    for (int i = 1; i < SLAB_KEEP / 2; i++)
        last = *(void **)last;
    s->free = *(void **)last;
    s->n -= SLAB_KEEP / 2;
    shared_push(sh, first, last);
}

void mra_slab_free_remote(struct slab_class *s, struct slab_shared *sh, void *p)
{
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
        b->owner = ts;
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
    r->bump = end;
    s->bump = start;
    s->end = end;
    return true;
}

void *mra_slab_refill(struct tstate *ts, unsigned route, unsigned c)
{
    struct region *r = &ts->reg[route];
    if (!r->cls && !(r->cls = classes_make()))
        return NULL;
    struct slab_class *s = &r->cls[c];
    void *p = s->free;
    if (!p) {
        struct slab_shared *sh = &g_routes[route].shared[c];
        if (atomic_load_explicit(&sh->stack, memory_order_relaxed))
            p = atomic_exchange_explicit(&sh->stack, NULL, memory_order_acquire);
        if (p)
            s->n = 0; /* the chain's length is not known: n counts from here */
    }
    if (p) {
        s->free = *(void **)p;
        s->n--;
    } else {
        if ((size_t)(s->end - s->bump) < s->size && !run_get(ts, r, route, s))
            return NULL;
        p = s->bump;
        s->bump += s->size;
    }
    r->allocations++;
    return p;
}

void mra_slab_free_slow(struct rblock *b, void *p)
{
    struct tstate *ts = tls_ts;
    if (ts && !ts->reg[b->route].cls && (ts->reg[b->route].cls = classes_make()) != NULL) {
        mra_slab_free(b, p);
        return;
    }
    shared_push(&g_routes[b->route].shared[mra_slab_psize(b, p) >> 4], p, p);
}

/* The thread's lists and its blocks' uncarved rest to the routes' shared
 * stacks. */
void mra_slab_thread_exit(struct tstate *ts)
{
    for (unsigned route = 1; route <= g_nroutes; route++) {
        struct slab_class *cls = ts->reg[route].cls;
        if (g_routes[route].kind != RK_SLAB || !cls)
            continue;
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
            if (s->free) {
                void *last = s->free;
                while (*(void **)last)
                    last = *(void **)last;
                shared_push(sh, s->free, last);
            }
        }
        munmap(cls, SLAB_CLASSES * sizeof *cls);
    }
}
