/* SPDX-License-Identifier: MIT */
/* advise/apply/apply.c -- the interposed malloc family of the apply runtime
 * (apply.h says what it does), its start-up and its threads.
 *
 * malloc, calloc and realloc(NULL, n) identify their caller's stack and
 * route it; free, realloc, reallocarray and malloc_usable_size tell their
 * own objects by their address (region.c's reserved range: a region's or
 * a slab's block) and pass every other pointer to glibc.
 * The aligned family (posix_memalign, aligned_alloc, memalign, valloc,
 * pvalloc) is not interposed: glibc's objects, which free passes on.
 *
 * Start-up takes MEMRES_ADVISE_PLAN (and the driver's other variables) out
 * of the environment and puts LD_PRELOAD back as it was, so that a program
 * it execs runs unchanged; a fork's child goes on with its parent's
 * routes. */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "apply.h"

#define EXPORT __attribute__((visibility("default")))
#define CALLER MRA_CALLER
#define CALLER_CFA MRA_CALLER_CFA

bool g_active;
bool g_identify_only;
_Atomic int g_multi;
unsigned g_walk = 1;
unsigned g_nroutes;
struct route g_routes[MAX_ROUTES + 1];
TLS struct tstate *tls_ts;
TLS int tls_guard;
struct tstate *_Atomic g_threads;
static TLS int tls_exited;
static _Atomic uint64_t g_thread_ids; /* the last thread's id */

static pthread_key_t g_key;
static char g_stats_path[4096];
static int (*real_pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
static size_t (*real_usable)(void *);
/* The malloc after the runtime: glibc's, or one preloaded after it
 * (`measure` runs the plan over mimalloc: LD_PRELOAD=runtime:mimalloc).
 * glibc's until start-up looks them up (dlsym may allocate). */
static void *(*next_malloc)(size_t) = __libc_malloc;
static void *(*next_calloc)(size_t, size_t) = __libc_calloc;
static void *(*next_realloc)(void *, size_t) = __libc_realloc;
static void (*next_free)(void *) = __libc_free;

/* The identification of a stack (the memo's probe, or the walk) is timed
 * on one call in IDENT_SAMPLE, out of line, less the least time of an
 * empty pair of clock reads (a call that its first frame tells apart
 * costs one look-up, in every call). */
#define IDENT_SAMPLE 256u
static uint64_t g_clock_cost;

/* ---- threads ---- */

static void thread_exit(void *arg)
{
    struct tstate *ts = arg;
    tls_guard++;
    mra_region_thread_exit(ts);
    mra_slab_thread_exit(ts);
    tls_ts = NULL;
    tls_exited = 1;
    tls_guard--;
}

static __attribute__((noinline, cold)) struct tstate *thread_register(void)
{
    if (tls_ts)
        return tls_ts;
    if (tls_exited)
        return NULL;
    size_t n = sizeof(struct tstate) + (g_nroutes + 1) * sizeof(struct region);
    void *m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    struct tstate *ts = m;
    tls_guard++; /* pthread_getattr_np reads /proc/self/maps with stdio */
    mra_walker_init(&ts->walk);
    ts->ident_left = IDENT_SAMPLE;
    ts->id = atomic_fetch_add_explicit(&g_thread_ids, 1, memory_order_relaxed) + 1;
    tls_ts = ts;
    pthread_setspecific(g_key, ts);
    ts->next = atomic_load(&g_threads);
    while (!atomic_compare_exchange_weak(&g_threads, &ts->next, ts)) {
    }
    tls_guard--;
    return ts;
}

static inline struct tstate *get_ts(void)
{
    struct tstate *ts = tls_ts;
    if (LIKELY(ts != NULL))
        return ts;
    return thread_register();
}

EXPORT int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    /* before the second thread exists: every count atomic from here on */
    atomic_store_explicit(&g_multi, 1, memory_order_seq_cst);
    if (!real_pthread_create) {
        void *f = dlsym(RTLD_NEXT, "pthread_create");
        if (!f)
            return EAGAIN;
        memcpy(&real_pthread_create, &f, sizeof f);
    }
    return real_pthread_create(t, attr, fn, arg);
}

/* ---- routing ---- */

/* Where the memo keeps this call's stack (and, at at ^ 1, the other of its
 * two ways): by the return address, the CFA and, where the first frame's
 * size is known (its entry's caller), its caller's return address: a
 * wrapper or operator new is called from many places at one depth. */
static inline size_t fast_at(uintptr_t ra, uintptr_t cfa, uint32_t caller)
{
    uintptr_t h = (ra >> 4) ^ (cfa >> 4);
    if (caller != 0) {
        uint64_t v;
        memcpy(&v, (const void *)(cfa + caller - 1), 8);
        h ^= (v >> 4) ^ (v >> 13);
    }
    return h & (IDENT_FAST - 1);
}

/* Learns where the walk's frames fr[1..n-1] keep their return addresses:
 * frame i + 1's at CFA(i) - 8, at[i + 1] from cfa as the cached walk found
 * them (at[0] 0), else from the frame sizes the walk used (the recorder's
 * stack cache does the same, record.c's sk_learn); nothing is learnt where
 * a size is unknown or varies, or a slot lies outside the thread's stack.
 * The first frame's caller's place goes in its entry e, and the stack in
 * the way of its set that does not hold another stack of this call (both
 * ways of it: each in turn).  The memo holds for the sizes' epoch
 * (walk_route). */
static void fast_learn(struct tstate *ts, struct kv *e1, uintptr_t ra, uintptr_t cfa, const uint64_t *fr,
                       unsigned n, unsigned route, const uint32_t *at)
{
    struct mra_walker *w = &ts->walk;
    struct ident_fast e;
    uint32_t off = 0;
    if (at[0] == 0) {
        for (unsigned i = 1; i < n; i++) {
            e.off[i] = at[i];
            e.ret[i] = fr[i] + 1;
        }
        off = n > 1 ? at[n - 1] + 8u : 0;
    } else {
        for (unsigned i = 0; i + 1 < n; i++) {
            uint32_t code = mra_fsz_get(w, fr[i] + 1);
            if (code == MRA_FS_MISS || code == MRA_FS_END || code == MRA_FS_VAR)
                return;
            off += code * 8u;
            e.off[i + 1] = off - 8u;
            e.ret[i + 1] = fr[i + 1] + 1;
        }
    }
    if (cfa < w->stk_lo || cfa + off > w->stk_hi)
        return;
    e.ra = ra;
    e.cfa = cfa;
    e.route = route;
    e.n = n;
    uint32_t caller = __atomic_load_n(&e1->caller, __ATOMIC_RELAXED);
    if (n > 1 && caller == 0 && e.off[1] < 4096u) { /* within the first frame's own frame */
        caller = e.off[1] + 1u;
        __atomic_store_n(&e1->caller, caller, __ATOMIC_RELAXED);
    }
    size_t at0 = fast_at(ra, cfa, caller);
    struct ident_fast *f = &ts->fast[at0], *g = &ts->fast[at0 ^ 1];
    if (f->n && f->ra == ra && f->cfa == cfa && (g->n == 0 || g->ra != ra || g->cfa != cfa || (ts->fast_turn++ & 1)))
        f = g;
    memcpy(f, &e, offsetof(struct ident_fast, off) + n * sizeof e.off[0]);
    memcpy(f->ret, e.ret, n * sizeof e.ret[0]);
}

/* Whether f holds the stack of this call. */
static inline bool fast_is(const struct ident_fast *f, uintptr_t ra, uintptr_t cfa)
{
    if (f->ra != ra || f->cfa != cfa || f->n == 0)
        return false;
    uint64_t diff = 0;
#pragma GCC unroll 8
    for (unsigned i = 1; i < IDENT_MEMO_DEPTH; i++) {
        if (i >= f->n)
            break;
        uint64_t v;
        memcpy(&v, (const void *)(cfa + f->off[i]), 8);
        diff |= v ^ f->ret[i];
    }
    return diff == 0;
}

/* The route of this call's stack if the memo holds it (either way), else
 * FAST_MISS; inline, on every call from a walk's first frame.  A memo of
 * an older epoch (a frame size turned out to vary) misses: walk_route
 * empties it. */
#define FAST_MISS FIRST_WALK
static inline __attribute__((always_inline)) unsigned fast_route(const struct tstate *ts, const struct kv *e1,
                                                                 uintptr_t ra, uintptr_t cfa)
{
    if (UNLIKELY(atomic_load_explicit(&mra_fc_epoch, memory_order_relaxed) != ts->fast_epoch))
        return FAST_MISS;
    size_t at = fast_at(ra, cfa, __atomic_load_n(&e1->caller, __ATOMIC_RELAXED));
    if (LIKELY(fast_is(&ts->fast[at], ra, cfa)))
        return ts->fast[at].route;
    if (fast_is(&ts->fast[at ^ 1], ra, cfa))
        return ts->fast[at ^ 1].route;
    return FAST_MISS;
}

/* Whether the walk, stopped at a frame it has not sized after fr[0..n-1],
 * should go on with libgcc's unwinder: whether a planned stack begins
 * with the longest of its first 2, 4, 8 ... frames that it has.  Most
 * calls from a planned first frame (operator new, an allocation wrapper)
 * come from stacks the plan does not name, and a stack seen the first
 * time costs the unwinder (clang -fsyntax-only: 470-590 ns a walk of 7
 * frames, 10% of the run). */
static TLS unsigned tls_unwanted; /* the frames prefix_wanted last turned down */

static bool prefix_wanted(const uint64_t *fr, unsigned n)
{
    unsigned k = 0;
    for (unsigned j = 2; j <= n && j < g_walk; j *= 2)
        k = j;
    if (k == 0 || mra_apply_prefix_planned(fr, k))
        return true;
    tls_unwanted = n;
    return false;
}

/* The route of a stack the plan tells by more than its first frame: the
 * stack seen before from this return address and CFA, else the walk (out
 * of line: its frames' array stays off the common path). */
static __attribute__((noinline)) unsigned walk_route(struct tstate *ts, struct kv *e1, uintptr_t ra, uintptr_t cfa)
{
    /* two ways: two stacks that reach the allocation from one return
     * address at one depth (a request's temporaries and its response) */
    uint32_t ep = atomic_load_explicit(&mra_fc_epoch, memory_order_relaxed);
    if (UNLIKELY(ep != ts->fast_epoch)) { /* a frame size turned out to vary, or a late module's
                                             stacks were placed (the memos may hold glibc for them) */
        memset(ts->fast, 0, sizeof ts->fast);
        memset(ts->memo, 0, sizeof ts->memo);
        ts->fast_epoch = ep;
    }
    unsigned known = fast_route(ts, e1, ra, cfa);
    if (LIKELY(known != FAST_MISS))
        return known;
    uint64_t fr[MRA_MAX_DEPTH];
    uint32_t place[MRA_MAX_DEPTH];
    unsigned n = mra_walk_want(&ts->walk, ra, cfa, fr, g_walk, g_prefix ? prefix_wanted : NULL, place);
    if (n == 0) { /* no planned stack begins with its first frames: */
        if (tls_unwanted >= 2) /* glibc's when they come again */
            fast_learn(ts, e1, ra, cfa, fr, tls_unwanted, 0, place);
        return 0;
    }
    if (UNLIKELY(n > IDENT_MEMO_DEPTH || n < 2))
        return mra_apply_route_of(fr, n);
    /* fr[0] is the planned first frame; the caller's frame tells the rest */
    struct ident_memo *m = &ts->memo[(fr[1] ^ (fr[1] >> 6) ^ (fr[n - 1] >> 3)) & (IDENT_MEMO - 1)];
    unsigned route;
    bool same = m->n == n;
    for (unsigned i = 0; same && i < n; i++)
        same = m->fr[i] == fr[i];
    if (LIKELY(same))
        route = m->route;
    else {
        route = mra_apply_route_of(fr, n);
        memcpy(m->fr, fr, n * sizeof fr[0]);
        m->n = n;
        m->route = route;
    }
    fast_learn(ts, e1, ra, cfa, fr, n, route, place);
    return route;
}

/* n bytes from route's engine, zeroed where zero asks (a region's block
 * whose bytes are new needs no memset: kat_objects' calloc site, 12 of
 * its 105 instructions a call), or NULL (counted) for glibc's: a size the
 * route does not serve, or the range used up. */
static inline __attribute__((always_inline)) void *route_alloc(struct tstate *ts, unsigned route, size_t n,
                                                               bool zero)
{
    if (UNLIKELY(g_identify_only))
        return NULL;
    struct route *rt = &g_routes[route];
    void *p;
    if (rt->kind == RK_REGION) {
        p = mra_region_alloc(ts, route, n);
        if (zero && p && !ts->reg[route].fresh)
            memset(p, 0, n);
    } else {
        p = mra_slab_alloc(ts, route, n);
        if (zero && p)
            memset(p, 0, n);
    }
    if (UNLIKELY(!p))
        cnt_add(&rt->fallbacks, 1);
    return p;
}

/* A call from the first frame of a planned stack (v: its route or
 * FIRST_WALK) that the inline path does not serve -- the thread's first
 * routed call, a stack the memo does not hold, or the timed call of
 * IDENT_SAMPLE: the allocation from its route, or NULL for glibc's. */
static __attribute__((noinline)) void *routed_malloc(size_t n, bool zero, struct kv *e1, uintptr_t ra,
                                                     uintptr_t cfa)
{
    struct tstate *ts = get_ts();
    if (UNLIKELY(ts == NULL))
        return NULL;
    unsigned route = e1->route;
    if (route == FIRST_WALK) {
        bool timed = ts->ident_left == 0;
        uint64_t t0 = timed ? mra_mono_ns() : 0;
        route = walk_route(ts, e1, ra, cfa);
        if (timed) {
            ts->ident_left = IDENT_SAMPLE;
            uint64_t d = mra_mono_ns() - t0;
            mra_apply_stats_note_ident(d > g_clock_cost ? d - g_clock_cost : 0, IDENT_SAMPLE);
        }
        if (route == 0)
            return NULL;
    }
    return route_alloc(ts, route, n, zero);
}

/* A call that no placed stack begins with, while some of the plan's stacks
 * wait for a module not loaded yet: one such call in LATE_EVERY of a
 * thread looks whether it is loaded now (a plugin's stacks are routed
 * from about that many calls after its dlopen). */
#define LATE_EVERY 1024u
static TLS uint32_t tls_late_calls;

static __attribute__((noinline, cold)) void late_tick(void)
{
    if (++tls_late_calls % LATE_EVERY != 0)
        return;
    tls_guard++;
    mra_apply_plan_late();
    tls_guard--;
}

/* glibc's allocation (or the malloc preloaded after the runtime's), out
 * of line: the inline path of malloc calls nothing else but by a tail
 * call, so that it saves no registers. */
static __attribute__((noinline)) void *glibc_alloc(size_t n, bool zero)
{
    void *p = zero ? next_calloc(1, n) : next_malloc(n);
    mra_glibc_took();
    return p;
}

static __attribute__((noinline, cold)) void *late_alloc(size_t n, bool zero)
{
    late_tick();
    return glibc_alloc(n, zero);
}

/* A routed call that the inline path does not finish: the thread's first,
 * a stack the memo does not hold or the timed one: from its route, else
 * from glibc. */
static __attribute__((noinline)) void *routed_rest(size_t n, bool zero, struct kv *e1, uintptr_t ra, uintptr_t cfa)
{
    void *p = routed_malloc(n, zero, e1, ra, cfa);
    return p ? p : glibc_alloc(n, zero);
}

/* A routed call whose route's list or block is used up, or a calloc the
 * route must zero (the thread has its state): from the route, else from
 * glibc.  Three arguments: the inline path keeps nothing else live. */
static __attribute__((noinline)) void *route_rest(size_t n, bool zero, unsigned route)
{
    void *p = route_alloc(tls_ts, route, n, zero);
    return p ? p : glibc_alloc(n, zero);
}

/* n bytes from route: off its list or block inline, else out of line
 * (route_rest); for calloc zeroed. */
static inline __attribute__((always_inline)) void *route_try(struct tstate *ts, size_t n, bool zero, unsigned route)
{
    if (UNLIKELY(g_identify_only))
        return glibc_alloc(n, zero);
    void *p = g_routes[route].kind == RK_REGION ? mra_region_try(ts, route, n)
              : zero                            ? NULL
                                                : mra_slab_try(ts, route, n);
    if (LIKELY(p != NULL)) {
        if (zero && !ts->reg[route].fresh)
            memset(p, 0, n);
        return p;
    }
    return route_rest(n, zero, route);
}

/* A call from a first frame that does not tell the route: the memo's
 * probe of the stack (out of line, so that malloc's inline path needs no
 * registers saved; its arguments where malloc has them). */
static __attribute__((noinline)) void *walked_alloc(size_t n, bool zero, struct kv *e1, uintptr_t ra, uintptr_t cfa,
                                                    struct tstate *ts)
{
    unsigned route = LIKELY(--ts->ident_left != 0) ? fast_route(ts, e1, ra, cfa) : FAST_MISS;
    if (route == 0)
        return glibc_alloc(n, zero);
    if (UNLIKELY(route == FAST_MISS))
        return routed_rest(n, zero, e1, ra, cfa);
    return route_try(ts, n, zero, route);
}

/* Every call pays the look-up of its first frame; only the calls from a
 * planned stack's first frame go further: a route the first frame tells,
 * or the memo's probe of a stack seen before, and the object off the
 * route's list or block, inline; the rest out of line. */
static inline __attribute__((always_inline)) void *do_malloc(size_t n, bool zero, uintptr_t ra, uintptr_t cfa)
{
    if (LIKELY(g_active) && LIKELY(!tls_guard)) {
        struct kv *e1 = mra_apply_first_frame(ra - 1);
        if (UNLIKELY(e1 != NULL)) {
            struct tstate *ts = tls_ts;
            unsigned route = e1->route;
            if (UNLIKELY(ts == NULL))
                return routed_rest(n, zero, e1, ra, cfa);
            if (route == FIRST_WALK)
                return walked_alloc(n, zero, e1, ra, cfa, ts);
            return route_try(ts, n, zero, route);
        }
        if (UNLIKELY(atomic_load_explicit(&g_late, memory_order_relaxed)))
            return late_alloc(n, zero);
    }
    return glibc_alloc(n, zero);
}

EXPORT void *malloc(size_t n)
{
    return do_malloc(n, false, CALLER(), CALLER_CFA());
}

EXPORT void *calloc(size_t a, size_t b)
{
    size_t n;
    if (UNLIKELY(__builtin_mul_overflow(a, b, &n))) {
        errno = ENOMEM;
        return NULL;
    }
    return do_malloc(n, true, CALLER(), CALLER_CFA());
}

EXPORT void free(void *p)
{
    if (UNLIKELY(p == NULL))
        return;
    if (mra_is_region(p))
        mra_range_free(p);
    else
        next_free(p);
}

/* p's bytes, its route and its size, or 0 for glibc's. */
static unsigned owner_of(void *p, size_t *size)
{
    if (!mra_is_region(p))
        return 0;
    struct rblock *b = mra_region_block(p);
    *size = b->slab ? mra_slab_psize(b, p) : mra_region_size(p);
    return b->route;
}

static void *do_realloc(void *p, size_t n, uintptr_t ra, uintptr_t cfa)
{
    if (p == NULL)
        return do_malloc(n, false, ra, cfa);
    size_t old;
    unsigned route = owner_of(p, &old);
    if (route == 0) {
        void *q = next_realloc(p, n);
        mra_glibc_took();
        return q;
    }
    if (n == 0) { /* glibc: frees, returns NULL */
        free(p);
        return NULL;
    }
    if (n > MAX_REQ) {
        errno = ENOMEM;
        return NULL;
    }
    if (g_routes[route].kind == RK_REGION ? mra_region_grow(p, n) : n <= old)
        return p;
    struct tstate *ts = get_ts();
    void *q = ts ? route_alloc(ts, route, n, false) : NULL;
    if (!q)
        q = next_malloc(n);
    if (q) {
        memcpy(q, p, old < n ? old : n);
        mra_range_free(p);
    }
    return q;
}

MRA_DEFINE_REALLOCS(EXPORT, do_realloc)

EXPORT size_t malloc_usable_size(void *p)
{
    if (p == NULL)
        return 0;
    size_t n;
    if (owner_of(p, &n) != 0)
        return n;
    return real_usable ? real_usable(p) : 0;
}

/* ---- start-up and exit ---- */

static void atfork_prepare(void)
{
    mra_region_atfork(0);
}

static void atfork_parent(void)
{
    mra_region_atfork(1);
}

static void atfork_child(void)
{
    mra_region_atfork(2);
}

static void at_exit(void)
{
    if (g_stats_path[0]) {
        tls_guard++;
        mra_apply_stats_write(g_stats_path);
        tls_guard--;
    }
}

static bool routes_make(void)
{
    for (unsigned r = 1; r <= g_nroutes; r++)
        if (g_routes[r].kind == RK_SLAB && !mra_slab_make(&g_routes[r]))
            return false;
    return true;
}

/* The next malloc family (RTLD_NEXT), each kept glibc's where not found. */
static void next_lookup(void)
{
    void *m = dlsym(RTLD_NEXT, "malloc"), *c = dlsym(RTLD_NEXT, "calloc"), *r = dlsym(RTLD_NEXT, "realloc"),
         *f = dlsym(RTLD_NEXT, "free");
    if (!m || !c || !r || !f)
        return; /* all four from one allocator, or glibc's */
    memcpy(&next_malloc, &m, sizeof m);
    memcpy(&next_calloc, &c, sizeof c);
    memcpy(&next_realloc, &r, sizeof r);
    memcpy(&next_free, &f, sizeof f);
}

__attribute__((constructor(101))) static void apply_init(void)
{
    tls_guard++;
    int e = errno;
    bool have_plan, have_preload, have_stats, have_ident, have_whole;
    char plan[4096], preload[4096], ident[8], whole[8];
    mra_env_take("MEMRES_ADVISE_PLAN", plan, sizeof plan, &have_plan);
    mra_env_take("MEMRES_ADVISE_PRELOAD", preload, sizeof preload, &have_preload);
    mra_env_take("MEMRES_ADVISE_APPLY_STATS", g_stats_path, sizeof g_stats_path, &have_stats);
    mra_env_take("MEMRES_ADVISE_APPLY_IDENTIFY_ONLY", ident, sizeof ident, &have_ident);
    g_identify_only = have_ident && ident[0] == '1';
    /* every stack walked whole, no way out by its first frames (tests:
     * the routes must be the same either way) */
    mra_env_take("MEMRES_ADVISE_APPLY_WALK_WHOLE", whole, sizeof whole, &have_whole);
    if (have_plan) /* common/preload.h edits environ itself */
        mra_env_restore_preload(preload, have_preload);
    real_usable = mra_next_usable();
    next_lookup();
    g_clock_cost = UINT64_MAX;
    for (int i = 0; i < 64; i++) {
        uint64_t t0 = mra_mono_ns(), d = mra_mono_ns() - t0;
        if (d < g_clock_cost)
            g_clock_cost = d;
    }
    if (!have_plan || !plan[0])
        goto out;
    mra_fsz = mmap(NULL, sizeof(uint64_t) << MRA_FSZ_BITS, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    if (mra_fsz == MAP_FAILED) {
        mra_fsz = NULL;
        goto out;
    }
    if (mra_region_init() != 0) {
        /* every route's engine carves the range */
        fprintf(stderr, "memres-advise apply: no address space for the routes: the program runs on glibc\n");
        goto out;
    }
    if (mra_apply_plan_load(plan) != 0 || !routes_make() || pthread_key_create(&g_key, thread_exit) != 0) {
        fprintf(stderr, "memres-advise apply: the plan is not applied; the program runs on glibc\n");
        goto out;
    }
    if (have_whole && whole[0] == '1')
        g_prefix = NULL;
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
    atexit(at_exit);
    g_active = g_nroutes > 0;
out:
    errno = e;
    tls_guard--;
}
