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
 *     recorder's walker (common/walk.h) and a hash of them, or a per-thread
 *     memo of the stacks walked before, compared frame by frame;
 *   - routes: an arena is a *site region* (region.c): per thread, bump
 *     allocation in 64 KiB blocks aligned to their size in one reserved
 *     range of address space (a region's object is known by its address
 *     and has no header), each block counting its live objects; a free
 *     only counts (and gives back the newest object's room: a stack-like
 *     site reuses its memory as an arena with marks would), and a block
 *     whose count reaches zero is reused or given back: the reap pattern,
 *     so that a program that frees a burst object by object gets an
 *     arena's allocation cost unchanged; size-class pools and object pools
 *     are a *site slab* (slab.c): per thread and size class a free list of
 *     objects without a header, in blocks of one class in the same range
 *     (any thread may free: the object goes on the freeing thread's list),
 *     so that free, realloc and malloc_usable_size know every object of
 *     theirs by its address and its size by its block;
 *   - what it did, at exit, to $MEMRES_ADVISE_APPLY_STATS (stats.c);
 *   - with MEMRES_ADVISE_APPLY_IDENTIFY_ONLY=1, every call identified and
 *     then served by glibc: a run that costs the runtime and saves nothing,
 *     which `measure` sets beside the plan's run to tell the allocators'
 *     saving from the runtime's cost.
 *
 * Its files share this header; everything but the malloc family is hidden.
 */
#ifndef MEMRES_ADVISE_APPLY_H
#define MEMRES_ADVISE_APPLY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "preload.h"
#include "walk.h"

#pragma GCC visibility push(hidden)

#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define TLS __attribute__((tls_model("initial-exec"))) _Thread_local

#define MAX_ROUTES 4096u
#define POOL_MAX 4096u           /* pools and objpool routes serve sizes up to this */
#define MAX_REQ ((size_t)PTRDIFF_MAX - 65536u)

/* region blocks */
#define RBLOCK ((size_t)64 << 10)
#define RBLOCK_HDR 576u             /* the header: 64 bytes and the bitmap of starts */
#define REGION_MAX (RBLOCK / 4u)    /* larger requests of a region site go to glibc */
#define SEGMENT ((size_t)2 << 20)   /* blocks are carved from segments of this */

enum route_kind { RK_REGION = 1, RK_SLAB };

/* A site slab's classes: class c serves sizes up to 16 c bytes (0 as 16:
 * class 1), one class a block. */
#define SLAB_CLASSES (POOL_MAX / 16u + 1u)
#define SLAB_KEEP 256u               /* with threads, a thread's free objects of a class above this: half
                                        to the route's */
#define SLAB_REMOTE 32u              /* objects of other threads' blocks a thread frees: to the route's in these */

/* A site slab's class, shared by the threads: objects given back by a
 * thread (one with too many, or exiting), in chains pushed whole and
 * taken whole -- no single pop, so no ABA. */
struct slab_shared {
    _Atomic(void *) stack;
    char pad_[56];
};

struct route {
    enum route_kind kind;
    bool rewind;                 /* arena-rewind in the plan (a region: the same engine) */
    bool objpool;                /* objpool in the plan (a slab: the same engine) */
    uint32_t site;               /* the report's site id */
    struct slab_shared *shared;  /* a slab's: SLAB_CLASSES */
    _Atomic uint64_t fallbacks;  /* calls of its stacks that went to glibc */
    _Atomic uint64_t blocks, blocks_peak; /* blocks of the range it holds, now and at most */
};

/* A block of the reserved range (region.c), a region's or a slab's: this
 * header, then objects without a header of their own (a region's sizes
 * rounded to 16 bytes; a slab's its class's size). */
struct rblock {
    union {
        struct {
            _Atomic uint64_t state;  /* a region's: live objects << 1 | retired */
            char *top;               /* a region's: the end of what was handed out */
        };
        struct {
            uint32_t objects;        /* a slab's: the objects of its runs */
            uint32_t listed;         /* a slab's, in a scan: those on its thread's lists */
            uint32_t epoch;          /* a slab's: the scan that counted listed */
            uint32_t dying;          /* a slab's: a scan gives it back */
        };
    };
    uint32_t route;
    uint32_t slab;               /* 1: a slab's block (its pages in runs of one class each); 0: a region's */
    struct rblock *next, *prev;  /* on a free list; a slab's next: in a scan */
    uint64_t freed_at;           /* free: when it was freed (ns, coarse clock) */
    uint64_t owner;              /* a slab's: the id of the thread that carves it (ids are not
                                    reused: a block of a thread that exited is remote to all) */
    char pad2_[8];
    union {
        uint64_t bits[RBLOCK / 16 / 64]; /* a region's: one bit per 16 bytes: where an object starts */
        uint16_t psize[RBLOCK / 4096];   /* a slab's: per 4 KiB page, the object size of its run */
    };
};
_Static_assert(sizeof(struct rblock) == RBLOCK_HDR, "region block header");

/* One thread's class of a slab route. */
struct slab_class {
    void *free;                  /* its free objects of its own blocks, linked through their
                                    first word */
    void *loose;                 /* objects taken from the route's shared stack */
    uint32_t n;                  /* objects on free */
    uint32_t limit;              /* n above this: a scan is due, or with threads a spill */
    uint32_t size;               /* the class's object size */
    char *bump, *end;            /* the rest of its current block, not carved yet */
    void *remote, *remote_last;  /* objects of other threads' blocks it freed, for the shared stack */
    uint32_t nremote;
};

/* One thread's region of one route (its current block), or its slab's
 * classes. */
struct region {
    char *bump, *end;
    char *last;                  /* the newest object in cur, or NULL */
    struct rblock *cur;
    bool fresh;                  /* cur's bytes from bump on are zero (its pages new or given
                                    back, and bump never moved down): calloc needs no memset */
    uint64_t allocations;        /* the thread's allocations of the route (any kind) */
    struct slab_class *cls;      /* a slab route's: SLAB_CLASSES, made at its first use */
    uint32_t scan_epoch;         /* a slab route's scans */
    bool scan;                   /* a slab route's: a class's list grew, or with threads its lists
                                    spilled scan_at bytes: a scan at the next block */
    uint64_t spilled, scan_at;   /* a slab route's: bytes its lists spilled since the last scan,
                                    and the bytes that make one due (0: the first spill) */
};

/* A stack walked before and its route: the walk's frames compared whole
 * stand in for the hash and the table's probe (most calls repeat one of a
 * few stacks). */
#define IDENT_MEMO 64u           /* entries per thread */
#define IDENT_MEMO_DEPTH 8u      /* frames an entry holds (a plan walks at most the recorded
                                    depth, 8 by default); deeper walks hash */
struct ident_memo {
    uint64_t fr[IDENT_MEMO_DEPTH];
    uint32_t n, route;           /* n 0: empty */
};

/* A stack seen before from the same return address and CFA: its frames'
 * return addresses are read where the walk found them and compared whole
 * (independent loads, no frame-size look-ups); a miss walks.  Safe when
 * wrong: any route serves any allocation, and a free finds its owner by
 * the address. */
#define IDENT_FAST 512u          /* entries per thread (61 KiB; a C++ program's calls from operator
                                    new come from thousands of stacks) */
struct ident_fast {
    uintptr_t ra, cfa;
    uint32_t n, route;           /* n 0: empty */
    uint32_t off[IDENT_MEMO_DEPTH]; /* frame i's return address at cfa + off[i] */
    uint64_t ret[IDENT_MEMO_DEPTH]; /* and its value */
};

struct tstate {
    struct mra_walker walk;
    struct ident_memo memo[IDENT_MEMO];
    struct ident_fast fast[IDENT_FAST];
    uint32_t fast_turn, fast_epoch;
    uint32_t ident_left;         /* calls to a walk's first frame until the next timed one */
    bool scan;                   /* some slab route's scan is due */
    uint64_t id;                 /* the thread's, never reused (a slab block's owner) */
    struct tstate *next;         /* every thread's, for the stats */
    struct region reg[];         /* g_nroutes + 1 */
};

/* global state (apply.c) */
extern bool g_active;
extern bool g_identify_only;  /* identify and route every call to glibc: the runtime's own cost */
extern _Atomic int g_multi;      /* a second thread may run: counts are atomic */
extern unsigned g_walk;          /* frames walked to identify a stack */
extern unsigned g_nroutes;
extern struct route g_routes[MAX_ROUTES + 1];
extern TLS struct tstate *tls_ts; /* NULL before the thread's first routed call and after its exit */
extern struct tstate *_Atomic g_threads;
extern TLS int tls_guard;

static inline uint64_t cnt_add(_Atomic uint64_t *a, uint64_t d)
{
    return mra_cnt_add(a, d, &g_multi);
}
static inline void cnt_max(_Atomic uint64_t *a, uint64_t v)
{
    mra_cnt_max(a, v, &g_multi);
}

/* ---- the other files ---- */

/* region.c */
extern uintptr_t g_range_lo;     /* the range of the regions' blocks */
extern size_t g_range_len;
/* Reserves the range: 0, or -1 (no regions: their sites stay on glibc). */
int mra_region_init(void);
/* A block of the range (a mutex), or NULL when the range is used up. */
struct rblock *mra_block_get(bool *fresh); /* fresh: its bytes past the header are zero */
/* b, just taken, is route's (counted in its blocks). */
void mra_block_owned(struct rblock *b, unsigned route);
/* b, nothing of it in use, back to the range's free blocks. */
void mra_block_put(struct rblock *b);
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
static inline void *mra_region_take(struct region *r, size_t need);
/* n bytes from ts's region of route where its block has room, else NULL
 * (mra_region_alloc refills): no call, for the inline path of malloc. */
static inline void *mra_region_try(struct tstate *ts, unsigned route, size_t n)
{
    size_t need = mra_region_room(n);
    struct region *r = &ts->reg[route];
    if (UNLIKELY(n > REGION_MAX) || UNLIKELY((size_t)(r->end - r->bump) < need))
        return NULL;
    return mra_region_take(r, need);
}
static inline void *mra_region_alloc(struct tstate *ts, unsigned route, size_t n)
{
    void *p = mra_region_try(ts, route, n);
    if (LIKELY(p != NULL) || n > REGION_MAX)
        return p;
    struct region *r = &ts->reg[route];
    return mra_region_refill(r, route) ? mra_region_take(r, mra_region_room(n)) : NULL;
}
/* need bytes off the bump of r's block, which has room: counted live. */
static inline void *mra_region_take(struct region *r, size_t need)
{
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
/* glibc's heap end (libc's, exported since glibc 2.2.5), and the mark
 * past which a call glibc served tells region.c that it grew while free
 * blocks kept their pages (UINTPTR_MAX: none keep any). */
extern void *__curbrk __attribute__((visibility("default")));
extern _Atomic uintptr_t g_brk_mark;
__attribute__((noinline, cold)) void mra_region_glibc_grew(void);
/* A slab's scan is due: glibc's growth is watched (it runs the scan). */
void mra_region_watch_glibc(void);
static inline void mra_glibc_took(void)
{
    uintptr_t mark = atomic_load_explicit(&g_brk_mark, memory_order_relaxed);
    if (UNLIKELY(mark != UINTPTR_MAX) && (uintptr_t)__curbrk > mark)
        mra_region_glibc_grew();
}

/* slab.c: the site slab, for a pools or objpool site: per thread and
 * size class (16-byte steps up to POOL_MAX) a free list of objects
 * without a header in blocks of the reserved range (a block's pages are
 * in runs of one class: its header gives the size, and the thread that
 * carves it); a free goes on the freeing thread's list of the object's
 * class when that thread carved the object's block (no lock and no atomic
 * on either path), else on its remote list, which goes to the route's
 * shared stack SLAB_REMOTE objects at a time (a consumer thread does not
 * hoard a producer's memory); once a second thread exists, a thread with
 * more than SLAB_KEEP free objects of a class gives half to the shared
 * stack, from which a thread whose list is empty takes them all.
 * A class whose list grows past a block's worth (then past twice what it
 * held; with threads, the route's spills) asks for a scan of the route's
 * lists and shared stacks, which the thread makes the next time it takes
 * a block from the range: a block of its whose objects are all there is
 * taken off them and given back (a program's next phase, at other sites,
 * reuses the memory the last one freed, as in glibc's one heap). */
/* The object size of p, in slab block b. */
static inline unsigned mra_slab_psize(const struct rblock *b, const void *p)
{
    return b->psize[((uintptr_t)p - (uintptr_t)b) >> 12];
}
static inline unsigned mra_slab_class(size_t n)
{
    return n ? (unsigned)((n + 15u) >> 4) : 1u;
}
/* cls's lists and run are empty: an object from the shared stack or a
 * new run (NULL: none; the cls table itself made on first use). */
__attribute__((noinline)) void *mra_slab_refill(struct tstate *ts, unsigned route, unsigned c);
/* An object of n bytes from ts's lists of route's class, or its run, else
 * NULL (mra_slab_alloc refills): no call, for the inline path of malloc. */
static inline void *mra_slab_try(struct tstate *ts, unsigned route, size_t n)
{
    if (UNLIKELY(n > POOL_MAX))
        return NULL;
    unsigned c = mra_slab_class(n);
    struct slab_class *cls = ts->reg[route].cls;
    if (LIKELY(cls != NULL)) {
        struct slab_class *s = &cls[c];
        void *p = s->free;
        if (LIKELY(p != NULL)) {
            s->free = *(void **)p;
            s->n--;
            ts->reg[route].allocations++;
            return p;
        }
        if ((p = s->loose) != NULL) {
            s->loose = *(void **)p;
            ts->reg[route].allocations++;
            return p;
        }
        if (LIKELY((size_t)(s->end - s->bump) >= s->size)) {
            p = s->bump;
            s->bump += s->size;
            ts->reg[route].allocations++;
            return p;
        }
    }
    return NULL;
}
static inline void *mra_slab_alloc(struct tstate *ts, unsigned route, size_t n)
{
    void *p = mra_slab_try(ts, route, n);
    if (LIKELY(p != NULL) || n > POOL_MAX)
        return p;
    return mra_slab_refill(ts, route, mra_slab_class(n));
}
/* p freed by a thread that did not carve its block (or has exited): on
 * its remote list, or the route's shared stack. */
__attribute__((noinline)) void mra_slab_free_remote(struct rblock *b, void *p);
/* s's list grew past its limit: a scan asked for, or (threads run) half
 * of it to the shared stack. */
__attribute__((noinline)) void mra_slab_over(struct tstate *ts, unsigned route, unsigned c);
static inline void mra_slab_free(struct rblock *b, void *p)
{
    struct tstate *ts = tls_ts;
    if (UNLIKELY(ts == NULL) || UNLIKELY(b->owner != ts->id)) {
        mra_slab_free_remote(b, p);
        return;
    }
    unsigned c = mra_slab_psize(b, p) >> 4;
    struct slab_class *s = &ts->reg[b->route].cls[c];
    *(void **)p = s->free;
    s->free = p;
    if (UNLIKELY(++s->n > s->limit))
        mra_slab_over(ts, b->route, c);
}
/* A routed object (the reserved range's) freed. */
static inline void mra_range_free(void *p)
{
    struct rblock *b = mra_region_block(p);
    if (b->slab)
        mra_slab_free(b, p);
    else
        mra_region_free(p);
}
bool mra_slab_make(struct route *rt);
void mra_slab_thread_exit(struct tstate *ts);
/* ts's slab routes whose scan is due scanned (mra_block_get calls it when
 * ts->scan). */
void mra_slab_scan(struct tstate *ts);

/* plan_load.c: the plan read and placed, into two tables that calls read
 * without a lock (keys stored last, with release) */
int mra_apply_plan_load(const char *path);
/* Whether some of the plan's stacks wait for their modules (a plugin not
 * loaded yet); mra_apply_plan_late places those of the modules loaded
 * since it last looked (a look without a new module: a lock and one
 * callback of dl_iterate_phdr). */
extern _Atomic bool g_late;
void mra_apply_plan_late(void);
struct kv {
    uint64_t key;                /* 0: empty */
    uint32_t route;
    uint32_t caller;             /* g_first's FIRST_WALK entries: where the first frame's caller
                                    keeps its return address, at cfa + caller - 1 (0: not known);
                                    learnt by the walks (apply.c's fast_learn), any thread */
};
#define FIRST_WALK UINT32_MAX    /* g_first: the stack must be walked to know its route */
extern struct kv *g_first;       /* a planned stack's first frame -> its route (walk 1) or
                                    FIRST_WALK */
extern size_t g_first_mask;
extern struct kv *g_stacks;      /* hash of a planned stack's frames | 1 -> route */
extern size_t g_stacks_mask;

/* The entry of a planned stack's first frame f, whose route is a route or
 * FIRST_WALK; NULL: none of the plan's stacks begins with f. */
static inline struct kv *mra_apply_first_frame(uint64_t f)
{
    for (size_t i = (size_t)((f * UINT64_C(0x9E3779B97F4A7C15)) >> 20) & g_first_mask;;
         i = (i + 1) & g_first_mask) {
        struct kv *e = &g_first[i];
        uint64_t k = __atomic_load_n(&e->key, __ATOMIC_ACQUIRE); /* a plain load on x86-64 */
        if (k == f)
            return e;
        if (k == 0)
            return NULL;
    }
}

/* The route of a stack of n frames (0: glibc). */
static inline unsigned mra_apply_route_of(const uint64_t *fr, unsigned n)
{
    uint64_t h = mra_frames_hash(fr, n) | 1u;
    for (size_t i = (size_t)h & g_stacks_mask;; i = (i + 1) & g_stacks_mask) {
        const struct kv *e = &g_stacks[i];
        uint64_t k = __atomic_load_n(&e->key, __ATOMIC_ACQUIRE);
        if (k == h)
            return e->route;
        if (k == 0)
            return 0;
    }
}

/* The planned stacks' first 2, 4, 8 ... frames (up to the whole stack),
 * for the walk's ways out: a call from a planned first frame
 * (operator new, an allocation wrapper) whose first frames begin no
 * planned stack is glibc's after those frames, not the whole walk.  NULL
 * where that saves nothing (a walk of 2 frames or fewer). */
extern uint64_t *g_prefix;       /* a prefix's key (mra_apply_prefix_key), 0: empty */
extern size_t g_prefix_mask;

static inline uint64_t mra_apply_prefix_key(const uint64_t *fr, unsigned k)
{
    return mra_mix64(mra_frames_hash(fr, k) + k) | 1u;
}

/* Whether a planned stack begins with fr[0..k-1]. */
static inline bool mra_apply_prefix_planned(const uint64_t *fr, unsigned k)
{
    uint64_t key = mra_apply_prefix_key(fr, k);
    for (size_t i = (size_t)key & g_prefix_mask;; i = (i + 1) & g_prefix_mask) {
        uint64_t v = __atomic_load_n(&g_prefix[i], __ATOMIC_RELAXED);
        if (v == key)
            return true;
        if (v == 0)
            return false;
    }
}

/* stats.c */
void mra_apply_stats_note_ident(uint64_t ns, uint64_t calls);
void mra_apply_stats_write(const char *path);

#pragma GCC visibility pop

#endif
