/* SPDX-License-Identifier: MIT */
/* advise/apply/apply.h -- libmemres-advise-apply.so, the advice applied to
 * an unmodified program: preloaded by `memres-advise apply`, it reads the
 * plan (analyze/plan.c), and routes the allocations of each planned call
 * stack to a memres allocator; everything else, and every pointer it did
 * not hand out, goes to glibc unchanged.
 *
 *   - identification (apply.c): the caller's return address first (a set of
 *     the planned stacks' first frames: an allocation from anywhere else
 *     costs one look-up), then the plan's walk of K frames with the
 *     recorder's walker (common/walk.h) and a hash of them;
 *   - routes: an arena is a *site region* (region.c): per thread, bump
 *     allocation in 64 KiB blocks aligned to their size in one reserved
 *     range of address space (a region's object is known by its address
 *     and has no header), each block counting its live objects; a free
 *     only counts (and gives back the newest object's room: a stack-like
 *     site reuses its memory as an arena with marks would), and a block
 *     whose count reaches zero is reused or given back: the reap pattern,
 *     so that a program that frees a burst object by object gets an
 *     arena's allocation cost unchanged; size-class pools and object pools
 *     are memres's, thread-safe (any thread may free), their objects with a
 *     16-byte header below the user's pointer: size, route, and a tag (the
 *     address and a per-process secret, the top bit set: a glibc chunk's
 *     size field, the word below a glibc pointer, never has it), so that
 *     free, realloc and malloc_usable_size know their own;
 *   - what it did, at exit, to $MEMRES_ADVISE_APPLY_STATS (stats.c).
 *
 * Its files share this header; everything but the malloc family is hidden.
 */
#ifndef MEMRES_ADVISE_APPLY_H
#define MEMRES_ADVISE_APPLY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <memres/objpool.h>
#include <memres/pools.h>

#include "preload.h"
#include "walk.h"

#pragma GCC visibility push(hidden)

#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define TLS __attribute__((tls_model("initial-exec"))) _Thread_local

#define OHDR 16u                 /* the object header */
#define MAX_ROUTES 4096u
#define SIZE_BITS 48u
#define SIZE_MASK ((UINT64_C(1) << SIZE_BITS) - 1)
#define POOL_MAX 4096u           /* pools and objpool routes serve sizes up to this */
#define MAX_REQ ((size_t)PTRDIFF_MAX - 65536u)

/* region blocks */
#define RBLOCK ((size_t)64 << 10)
#define RBLOCK_HDR 576u             /* the header: 64 bytes and the bitmap of starts */
#define REGION_MAX (RBLOCK / 4u)    /* larger requests of a region site go to glibc */
#define SEGMENT ((size_t)2 << 20)   /* blocks are carved from segments of this */

enum route_kind { RK_REGION = 1, RK_OBJPOOL, RK_POOLS };


struct route {
    enum route_kind kind;
    bool rewind;                 /* arena-rewind in the plan (a region: the same engine) */
    uint32_t site;               /* the report's site id */
    size_t objsize;              /* objpool: the object size planned */
    mr_pools *pools;
    mr_objpool *objpool;
    _Atomic uint64_t fallbacks;  /* calls of its stacks that went to glibc */
};

/* A region block (region.c): this header, then objects (their sizes
 * rounded to 16 bytes, no header). */
struct rblock {
    _Atomic uint64_t state;      /* live objects << 1 | retired */
    char *top;                   /* the end of what was handed out */
    uint32_t route;
    uint32_t pad;
    struct rblock *next, *prev;  /* on a free list */
    uint64_t freed_at;           /* free: when it was freed (ns, coarse clock) */
    char pad_[16];
    uint64_t bits[RBLOCK / 16 / 64]; /* one bit per 16 bytes: where an object starts */
};
_Static_assert(sizeof(struct rblock) == RBLOCK_HDR, "region block header");

/* One thread's region of one route: its current block. */
struct region {
    char *bump, *end;
    char *last;                  /* the newest object in cur, or NULL */
    struct rblock *cur;
    uint64_t allocations;        /* the thread's allocations of the route (any kind) */
};

struct tstate {
    struct mra_walker walk;
    struct tstate *next;         /* every thread's, for the stats */
    struct region reg[];         /* g_nroutes + 1 */
};

/* global state (apply.c) */
extern bool g_active;
extern _Atomic int g_multi;      /* a second thread may run: counts are atomic */
extern uint64_t g_secret;
extern unsigned g_walk;          /* frames walked to identify a stack */
extern unsigned g_nroutes;
extern struct route g_routes[MAX_ROUTES + 1];
extern TLS struct tstate *tls_ts; /* NULL before the thread's first routed call and after its exit */
extern struct tstate *_Atomic g_threads;
extern TLS int tls_guard;

/* ---- the object header ---- */

struct ohdr {
    uint64_t size_route;         /* size: 48 | route: 16 */
    uint64_t tag;
};

/* The top bit tells the tag from a glibc chunk's size field; the rest
 * ties it to the address and the process (one multiply: it is on every
 * malloc and free). */
static inline uint64_t tag_of(const void *p)
{
    return ((uint64_t)(uintptr_t)p * UINT64_C(0x9E3779B97F4A7C15) ^ g_secret) | (UINT64_C(1) << 63);
}

static inline bool is_ours(const void *p)
{
    uint64_t w;
    memcpy(&w, (const char *)p - 8, 8);
    return w == tag_of(p);
}

static inline struct ohdr *ohdr_of(void *p)
{
    return (struct ohdr *)(void *)((char *)p - OHDR);
}

static inline void *ohdr_set(void *h, size_t n, unsigned route)
{
    struct ohdr *o = h;
    void *p = (char *)h + OHDR;
    o->size_route = (uint64_t)n | (uint64_t)route << SIZE_BITS;
    o->tag = tag_of(p);
    return p;
}

static inline uint64_t cnt_add(_Atomic uint64_t *a, uint64_t d)
{
    return mra_cnt_add(a, d, &g_multi);
}

/* ---- the other files ---- */

/* region.c */
extern uintptr_t g_range_lo;     /* the range of the regions' blocks */
extern size_t g_range_len;
/* Reserves the range: 0, or -1 (no regions: their sites stay on glibc). */
int mra_region_init(void);
static inline bool mra_is_region(const void *p)
{
    return (uintptr_t)p - g_range_lo < g_range_len;
}
static inline struct rblock *mra_region_block(const void *p)
{
    return (struct rblock *)((uintptr_t)p & ~(uintptr_t)(RBLOCK - 1));
}
/* The room an object of n bytes takes in a region block. */
static inline size_t mra_region_room(size_t n)
{
    return n ? (n + 15u) & ~(size_t)15 : 16u;
}
/* r's current block has no room for need bytes: a block that has. */
__attribute__((noinline)) bool mra_region_refill(struct region *r, unsigned route);
static inline void *mra_region_alloc(struct tstate *ts, unsigned route, size_t n)
{
    if (UNLIKELY(n > REGION_MAX))
        return NULL;
    size_t need = mra_region_room(n);
    struct region *r = &ts->reg[route];
    if (UNLIKELY((size_t)(r->end - r->bump) < need) && !mra_region_refill(r, route))
        return NULL;
    char *p = r->bump;
    struct rblock *b = r->cur;
    r->bump = p + need;
    r->last = p;
    b->top = r->bump;
    size_t i = ((uintptr_t)p - (uintptr_t)b) >> 4;
    b->bits[i >> 6] |= UINT64_C(1) << (i & 63);
    cnt_add(&b->state, 2);
    r->allocations++;
    return p;
}
__attribute__((noinline)) void mra_region_free_slow(struct rblock *b, struct region *r, void *p, uint64_t v);
static inline uint64_t mra_state_sub2(struct rblock *b)
{
    if (LIKELY(!atomic_load_explicit(&g_multi, memory_order_relaxed))) {
        uint64_t v = atomic_load_explicit(&b->state, memory_order_relaxed) - 2;
        atomic_store_explicit(&b->state, v, memory_order_relaxed);
        return v;
    }
    return atomic_fetch_sub_explicit(&b->state, 2, memory_order_acq_rel) - 2;
}
/* A region object freed: counted; the rest (its room back if it is the
 * newest, the block started over or given back) out of line. */
static inline void mra_region_free(void *p)
{
    struct rblock *b = mra_region_block(p);
    struct tstate *ts = tls_ts;
    struct region *r = ts ? &ts->reg[b->route] : NULL;
    if (UNLIKELY(r && (char *)p == r->last && r->cur == b)) {
        mra_region_free_slow(b, r, p, 0);
        return;
    }
    uint64_t v = mra_state_sub2(b);
    if (UNLIKELY(v <= 1))
        mra_region_free_slow(b, r, NULL, v);
}
/* The bytes p may use (its size rounded up to 16). */
size_t mra_region_size(const void *p);
/* Grows p in place to m bytes when it is its region's newest object and
 * its block has room: true, else false. */
bool mra_region_grow(void *p, size_t m);
void mra_region_thread_exit(struct tstate *ts);
void mra_region_atfork(int stage);   /* 0 prepare, 1 parent, 2 child */
uint64_t mra_region_held_peak(void);

/* plan_load.c: the plan read and placed, into two read-only tables */
int mra_apply_plan_load(const char *path);
struct kv {
    uint64_t key;                /* 0: empty */
    uint32_t route;
};
#define FIRST_WALK UINT32_MAX    /* g_first: the stack must be walked to know its route */
extern struct kv *g_first;       /* a planned stack's first frame -> its route (walk 1) or
                                    FIRST_WALK */
extern size_t g_first_mask;
extern struct kv *g_stacks;      /* hash of a planned stack's frames | 1 -> route */
extern size_t g_stacks_mask;

/* What a stack whose first frame is f is: 0 none of the plan's, a route,
 * or FIRST_WALK. */
static inline uint32_t mra_apply_first_frame(uint64_t f)
{
    for (size_t i = (size_t)((f * UINT64_C(0x9E3779B97F4A7C15)) >> 20) & g_first_mask;;
         i = (i + 1) & g_first_mask) {
        const struct kv *e = &g_first[i];
        if (e->key == f)
            return e->route;
        if (e->key == 0)
            return 0;
    }
}

/* The route of a stack of n frames (0: glibc). */
static inline unsigned mra_apply_route_of(const uint64_t *fr, unsigned n)
{
    uint64_t h = mra_frames_hash(fr, n) | 1u;
    for (size_t i = (size_t)h & g_stacks_mask;; i = (i + 1) & g_stacks_mask) {
        const struct kv *e = &g_stacks[i];
        if (e->key == h)
            return e->route;
        if (e->key == 0)
            return 0;
    }
}

/* stats.c */
void mra_apply_stats_note_ident(uint64_t ns, uint64_t calls);
void mra_apply_stats_write(const char *path);

#pragma GCC visibility pop

#endif
