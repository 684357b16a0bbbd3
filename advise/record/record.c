/* SPDX-License-Identifier: MIT */
/* advise/record/record.c -- libmemres-advise-recorder.so, preloaded by
 * memres-advise into the program it profiles.  It interposes the malloc
 * family, gives every object it records a 32-byte header (site, thread,
 * birth on the allocation clock and in time, realloc count, size), keeps
 * per-thread per-site tables (no lock on the path of an allocation) and at
 * exit writes the profile of advise/format.h; with MEMRES_ADVISE_TRACE it
 * also writes the compact event stream.
 *
 * The pieces, in the order of this file:
 *   - glibc's allocator, bound by its __libc_* names (no dlsym, no recursion);
 *   - the object header: 4 words just below the user's pointer, the last one
 *     a tag (a hash of the pointer and a per-process secret, its top bit set,
 *     so that no glibc chunk size field can match) and the site id; a pointer
 *     without a matching tag is not the recorder's and goes to glibc as is;
 *   - clocks: one global allocation tick per allocation, taken by each
 *     thread in batches of 64 from one atomic counter; time from rdtsc scaled
 *     to ns (calibrated against CLOCK_MONOTONIC for 0.5 ms at start-up);
 *   - call stacks: frames[0] from __builtin_return_address(0); deeper frames
 *     by a walk that adds learnt frame sizes (CFA distances, keyed by return
 *     address, in a per-thread cache in front of a global lock-free table)
 *     and reads each return address at CFA - 8 within the thread's stack
 *     bounds; a miss, a frame whose size varies (alloca) or a stack outside
 *     the bounds uses libgcc's _Unwind_Backtrace, which also teaches the
 *     cache; every 1024th cached walk is checked against the unwinder;
 *   - sites: a global open-addressed table keyed by the frames, read without
 *     lock, a mutex only to add a site;
 *   - per-thread per-site statistics, merged at thread exit and at exit;
 *     shared live/peak counters per site and for the program (relaxed
 *     atomics; plain loads and stores while only one thread ever recorded);
 *   - the trace, per-thread chunks appended under a mutex when full;
 *   - start-up (environment), fork (the child records and writes nothing),
 *     thread exit, process exit (the profile, written with write(2) to a
 *     temporary name and renamed).
 *
 * What it cannot see: a process ending by _exit or a signal writes no
 * profile (nor trace; an exec writes them first); allocations made before its constructor ran (by
 * ld.so and the constructors of libraries initialised before it) are not
 * recorded, nor are calls that bypass malloc (mmap, __libc_malloc).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <unwind.h>
#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

#include "clock.h"
#include "format.h"
#include "site_stats.h"

#define EXPORT __attribute__((visibility("default")))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define NOINLINE __attribute__((noinline))
#define COLD __attribute__((noinline, cold))
#define TLS __attribute__((tls_model("initial-exec"))) _Thread_local

/* ---- glibc's allocator (exported by glibc 2.36 at GLIBC_2.2.5) ---- */

extern void *__libc_malloc(size_t n);
extern void __libc_free(void *p);
extern void *__libc_calloc(size_t a, size_t b);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t align, size_t n);

/* ---- configuration and global state ---- */

enum { ST_INIT, ST_OFF, ST_REC, ST_DONE, ST_CHILD };
enum { STACK_CACHE, STACK_UNWIND, STACK_FP, STACK_RA };

#define HDR 32u
#define TICK_BITS 44u
#define TICK_MASK ((UINT64_C(1) << TICK_BITS) - 1)
#define THR_BITS 20u
#define THR_MASK ((UINT64_C(1) << THR_BITS) - 1)
#define SIZE_BITS 48u
#define SIZE_MASK ((UINT64_C(1) << SIZE_BITS) - 1)
#define CHAIN_MAX UINT64_C(0x3ff) /* realloc chain counts saturate here */
#define MAX_REQ ((size_t)PTRDIFF_MAX - 4096u)
#define TICK_BATCH 64u
#define LSIZES 16u       /* sizes a thread counts per site between merges */
#define GSIZES 32u       /* sizes kept per site when merging */
#define RING 8u          /* recent live births per (thread, site): stack-like */
#define BURST_SITES 16u  /* sites followed in one burst of frees */
#define FC_SIZE 512u     /* per-thread frame-size cache */
#define SC_SIZE 256u     /* per-thread site cache */
#define FSZ_BITS 16u     /* global frame-size table: 2^16 entries */
#define SLOT_BITS 18u    /* site hash table: 2^18 slots */
#define MAX_SITES ((1u << SLOT_BITS) / 4u * 3u)
#define VERIFY_FIRST 256u    /* cached walks between checks, doubling while they agree */
#define VERIFY_MAX 65536u

/* frame-size codes: 0 unknown, 1..0xfffd size/8, END: the stack ends after
 * this frame, VAR: the size varies (alloca) or cannot be cached: unwind */
#define FS_MISS 0u
#define FS_END 0xfffeu
#define FS_VAR 0xffffu
#define MEMO_NONE 0x10000u /* no code: the memo of a depth not walked yet */

static _Atomic int g_state = ST_INIT;
static int g_stack_mode = STACK_CACHE;
static unsigned g_depth = 4u + MRA_FOLD_EXTRA;
static uint64_t g_secret;
static _Atomic int g_multi;              /* a second thread has recorded */
static _Atomic uint64_t g_tick = 1;      /* the allocation clock */
static _Atomic uint32_t g_nthreads;
static _Atomic uint64_t g_foreign;
static _Atomic int64_t g_hook_time;      /* merged tstate.hook_time */
static _Atomic uint64_t g_max_tick;
static uint64_t g_start_ns;
static char g_profile[4096];
static char g_trace_path[4096];
static char g_exe[256];
static int g_trace_fd = -1;
static pthread_key_t g_key;
static size_t g_pagesize = 4096;
static size_t (*g_usable)(void *);

/* program-wide live and peak */
static _Atomic uint64_t g_live_bytes, g_live_objects, g_peak_bytes, g_peak_objects;
/* the recorder's own memory (tables, thread states, sites; not headers) */
static _Atomic uint64_t g_rec_mem, g_rec_mem_peak;

static pthread_mutex_t g_site_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t g_merge_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t g_list_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t g_trace_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t g_mod_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t g_trace_events, g_trace_bytes; /* under g_trace_mu */

/* per thread */
static TLS int tls_guard;                /* >0: pass through unrecorded */
static TLS struct tstate *tls_ts;
static TLS int tls_dead;                 /* the thread's state was merged and freed */

/* ---- small helpers ---- */

static void rec_mem_add(int64_t d)
{
    uint64_t v = atomic_fetch_add_explicit(&g_rec_mem, (uint64_t)d, memory_order_relaxed) + (uint64_t)d;
    uint64_t p = atomic_load_explicit(&g_rec_mem_peak, memory_order_relaxed);
    while (v > p && !atomic_compare_exchange_weak_explicit(&g_rec_mem_peak, &p, v,
                                                            memory_order_relaxed, memory_order_relaxed)) {
    }
}

static void *imalloc(size_t n)
{
    void *p = __libc_calloc(1, n);
    if (p)
        rec_mem_add((int64_t)n);
    return p;
}

static void ifree(void *p, size_t n)
{
    if (p) {
        __libc_free(p);
        rec_mem_add(-(int64_t)n);
    }
}

static void *imap(size_t n)
{
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* bytes of [p, p+n) resident (the big tables are touched sparsely) */
static uint64_t resident(const void *p, size_t n)
{
    if (!p)
        return 0;
    size_t pages = (n + g_pagesize - 1) / g_pagesize;
    unsigned char vec[4096];
    uint64_t r = 0;
    for (size_t i = 0; i < pages; i += sizeof vec) {
        size_t k = pages - i < sizeof vec ? pages - i : sizeof vec;
        if (mincore((char *)(uintptr_t)p + i * g_pagesize, k * g_pagesize, vec) != 0)
            return (uint64_t)n;
        for (size_t j = 0; j < k; j++)
            r += vec[j] & 1u;
    }
    return r * g_pagesize;
}

static inline uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    x *= UINT64_C(0xc4ceb9fe1a85ec53);
    x ^= x >> 33;
    return x;
}

/* ---- time: rdtsc scaled to ns, or CLOCK_MONOTONIC ---- */

static bool g_use_tsc;
static uint64_t g_tsc_mult = UINT64_C(1) << 32; /* ns = ticks * mult >> 32 */
static int64_t g_fenced_cost;                   /* a fenced empty interval, on average */
static int64_t g_timer_cost;                    /* a plain empty interval, the least seen */
static int64_t g_clip, g_clip_page;             /* the longest sample kept, and per 4 KiB asked */

static inline uint64_t now_time(void)
{
#if defined(__x86_64__)
    if (LIKELY(g_use_tsc))
        return (uint64_t)__rdtsc();
#endif
    return mra_mono_ns();
}

/* For timed samples: rdtsc between fences, so that the code timed cannot
 * overlap the reads (an unfenced rdtsc lets the ~30 instructions of a
 * malloc run inside its own latency, and they time as nothing). */
static inline uint64_t fenced_time(void)
{
#if defined(__x86_64__)
    if (LIKELY(g_use_tsc)) {
        _mm_lfence();
        uint64_t t = (uint64_t)__rdtsc();
        _mm_lfence();
        return t;
    }
#endif
    return mra_mono_ns();
}

static inline uint64_t time_to_ns(uint64_t d)
{
    __extension__ typedef unsigned __int128 u128;
    return (uint64_t)(((u128)d * g_tsc_mult) >> 32);
}

static void clock_calibrate(void)
{
#if defined(__x86_64__)
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
        return;
    __get_cpuid(0x80000007u, &a, &b, &c, &d);
    if (!(d & (1u << 8)))
        return; /* no invariant TSC: CLOCK_MONOTONIC */
    uint64_t n0 = mra_mono_ns(), c0 = (uint64_t)__rdtsc(), n1, c1;
    do {
        n1 = mra_mono_ns();
        c1 = (uint64_t)__rdtsc();
    } while (n1 - n0 < 500000u);
    if (c1 <= c0)
        return;
    double mult = (double)(n1 - n0) / (double)(c1 - c0) * 4294967296.0;
    if (mult < 1.0 || mult > 1e12)
        return;
    g_tsc_mult = (uint64_t)mult;
    g_use_tsc = true;
#endif
}

/* What an interval timed with nothing in it reads on average (the clock
 * steps by 26 cycles on this project's virtual machines, so one sample is
 * coarse; their sum is not): taken off each timed sample. */
static void timer_calibrate(void)
{
    uint64_t sum = 0, least = UINT64_MAX;
    for (int i = 0; i < 2000; i++) {
        uint64_t a = fenced_time(), b = fenced_time();
        sum += b - a;
        a = now_time();
        b = now_time();
        if (b - a < least)
            least = b - a;
    }
    g_fenced_cost = (int64_t)(sum / 2000);
    g_timer_cost = (int64_t)least;
    /* in clock units: 20 us, and 1 us per page of the request (mmap,
     * munmap, a trim) */
    uint64_t us = g_use_tsc ? (UINT64_C(1000) << 32) / (g_tsc_mult ? g_tsc_mult : 1) : 1000;
    g_clip = (int64_t)(20 * us);
    g_clip_page = (int64_t)us;
}

/* A timed sample longer than a call can take is the thread preempted
 * inside it (another thread's time slice, weighed by the sample's gap):
 * such samples count at the cap. */
static inline int64_t clip(int64_t d, uint64_t size)
{
    int64_t cap = g_clip + g_clip_page * (int64_t)(size >> 12);
    return d < cap ? d : cap;
}

/* The recorder's own part [t0, t1], timed with plain reads (which the code
 * around them overlaps: fences would slow the timed hook itself), less
 * the least empty interval. */
static inline int64_t timed(uint64_t t0, uint64_t t1)
{
    int64_t d = (int64_t)(t1 - t0) - g_timer_cost;
    return d > 0 ? clip(d, 0) : 0;
}

/* glibc's part [t1, t2] between fenced reads, less their average cost
 * (negative for a call shorter than the average empty interval: the sums
 * are what count). */
static inline int64_t timed_fenced(uint64_t t1, uint64_t t2, uint64_t size)
{
    return clip((int64_t)(t2 - t1) - g_fenced_cost, size);
}

/* ---- the object header ---- */

struct hdr {
    uint64_t birth_time;  /* now_time() at birth */
    uint64_t size_misc;   /* size: 48 | realloc chain: 10 | log2 alignment: 6 */
    uint64_t tick_thread; /* birth tick mod 2^44 << 20 | thread index mod 2^20 */
    uint64_t tag_site;    /* tag: 32 (top bit set) << 32 | site */
};
_Static_assert(sizeof(struct hdr) == HDR, "32-byte header");

static inline uint32_t tag_of(const void *p)
{
    uint64_t x = ((uint64_t)(uintptr_t)p ^ g_secret) * UINT64_C(0x9E3779B97F4A7C15);
    return (uint32_t)(x >> 32) | 0x80000000u;
}

static inline struct hdr *hdr_of(void *p)
{
    return (struct hdr *)(void *)((char *)p - HDR);
}

/* The word just below p: for a glibc chunk its size field (always
 * readable, never with the top bit set), for a recorder object the tag. */
static inline uint64_t tag_word(const void *p)
{
    uint64_t w;
    memcpy(&w, (const char *)p - 8, 8);
    return w;
}

static inline bool is_ours(const void *p, uint64_t w)
{
    return (uint32_t)(w >> 32) == tag_of(p);
}

static inline unsigned hdr_alog(const struct hdr *h)
{
    return (unsigned)(h->size_misc >> 58);
}

static inline size_t pad_of(unsigned alog)
{
    return alog <= 4u ? HDR : (size_t)1 << alog;
}

static inline void *raw_of(void *p, const struct hdr *h)
{
    return (char *)p - pad_of(hdr_alog(h));
}

static size_t glibc_usable(void *raw)
{
    if (g_usable)
        return g_usable(raw);
    /* glibc 2.36 musable(): chunk size minus its overhead */
    uint64_t sz;
    memcpy(&sz, (char *)raw - 8, 8);
    size_t cs = (size_t)(sz & ~(uint64_t)7);
    return (sz & 2u) ? cs - 16u : cs - 8u;
}

/* ---- per-thread and per-site state ---- */

/* One thread's figures for one site: the fields of struct mra_site_stats
 * it adds up, those of every allocation and free first (a few cache lines
 * per site in the hot path). */
struct lstats {
    uint64_t allocations, bytes, min_size, max_size, first_tick, last_tick;
    uint64_t frees, freed_bytes, lifetime_ticks_sum, lifetime_ns_sum;
    uint64_t freed_together, stack_like, remote_frees, aligned;
    uint64_t reallocs, realloc_moves, realloc_chain_max;
    int64_t glibc_time;          /* sampled time in glibc for the site's objects (clock units, weighed) */
    uint64_t glibc_samples;
    uint64_t hist_ticks[MRA_HIST];
    uint64_t hist_ns[MRA_HIST];
};

struct lsite {
    struct lstats s;
    uint32_t rhead, rcount;      /* births of this thread's recent live objects */
    uint64_t rlost, rlast_pop;
    uint64_t ring[RING];
    uint64_t tr_last_size;       /* trace: the last ALLOC size at this site */
    struct lsite *grp;           /* this thread's lsite of the site's group (itself, or
                                    the group's first site): its ring and bursts */
    uint64_t burst_min;          /* the oldest birth freed in the thread's current burst */
    uint32_t burst_n, burst_epoch; /* frees in it; the burst's number (0: none) */
    uint32_t nsz, sz_overflow;
    uint64_t sz_other;
    uint32_t counted;            /* counted in alloc_threads */
    struct mra_size_count sz[LSIZES];
};

struct fc_ent {
    uint64_t pc;
    uint32_t code;
    uint32_t pad;
};

struct tstate {
    uint32_t index;
    uint32_t burst_epoch, nburst; /* the current burst of frees: its number, its sites */
    uint32_t burst_sites[BURST_SITES];
    uint32_t samp_left, samp_gap; /* events to the next timed one, of a gap of */
    uint32_t samp_rng;
    int64_t hook_time;           /* the recorder's own time in hooks, sampled (clock units) */
    uint64_t tick_next, tick_end, last_tick;
    uintptr_t stk_lo, stk_hi;
    uint32_t verify_ctr, verify_every, fc_epoch;
    uint32_t memo[MRA_MAX_DEPTH];  /* the last walk's frame-size codes, by depth */
    struct sc_ent { uint64_t hash; uint64_t site; } sc[SC_SIZE]; /* hash -> site (frames_hash) */
    struct lsite **ls;
    uint32_t lcap;
    int rounds;
    struct tstate *next, *prev;
    uint8_t *tbuf;
    uint32_t tlen, tev;
    uint64_t tr_prev_tick;       /* trace: the decoder's last_tick */
    uint64_t t_cur, t_step, t_last; /* the interpolated clock (thread_time) */
    uint32_t t_left;
    struct fc_ent fc[FC_SIZE];
};

/* The time of an event: the clock (rdtsc: about 30 ns on this project's
 * virtual machines, clock_gettime: 70) is read at every TIME_EVERY-th event
 * of the thread and interpolated between, at the pace of the last period;
 * never going back on one thread. */
#define TIME_EVERY 16u
static inline uint64_t thread_time(struct tstate *ts)
{
    if (LIKELY(--ts->t_left != 0)) {
        ts->t_cur += ts->t_step;
        return ts->t_cur;
    }
    uint64_t now = now_time();
    ts->t_step = now > ts->t_last ? (now - ts->t_last) / TIME_EVERY : 0;
    ts->t_last = now;
    ts->t_left = TIME_EVERY;
    if (now > ts->t_cur)
        ts->t_cur = now;
    return ts->t_cur;
}

/* Timed samples: about one hook in SAMPLE_EVERY of a thread (the gap drawn
 * from [SAMPLE_EVERY / 2 + 1, 3 * SAMPLE_EVERY / 2], so that no periodic
 * pattern of the program aliases with it) has the recorder's own part
 * timed (glibc's call inside it left out), weighed by the gap that led to
 * it: the recorder's time, which the analysis takes off the recorded run.
 * (Timing glibc's part per call does not work where the clock is coarse:
 * this project's virtual machines step rdtsc by 26 cycles, about 10 ns.) */
#define SAMPLE_EVERY 64u
static inline uint32_t sample_now(struct tstate *ts)
{
    if (LIKELY(--ts->samp_left != 0))
        return 0;
    uint32_t w = ts->samp_gap;
    ts->samp_rng ^= ts->samp_rng << 13;
    ts->samp_rng ^= ts->samp_rng >> 17;
    ts->samp_rng ^= ts->samp_rng << 5;
    ts->samp_gap = ts->samp_left = SAMPLE_EVERY / 2 + 1 + (ts->samp_rng % SAMPLE_EVERY);
    return w;
}

struct gmerged {                 /* merged figures, under g_merge_mu */
    struct mra_site_stats m;
    struct mra_size_count msz[GSIZES];
    uint32_t nmsz, msz_overflow;
    uint64_t msz_other;
};

struct gsite {
    /* shared counters first, on their own cache line */
    _Atomic uint64_t live_objects, live_bytes, peak_objects, peak_bytes;
    _Atomic uint64_t arena_cur, arena_peak;
    char pad_[64 - 6 * 8];
    /* read-only after publication */
    uint64_t hash;
    uint32_t id, nframes;
    uint32_t group;              /* the site whose ring and bursts this one shares */
    struct gmerged *mg;
    uint64_t frames[];
};

static _Atomic uint32_t *g_slots;        /* hash -> site id */
static uint64_t *g_gkeys;                /* group key -> ... (under g_site_mu) */
static uint32_t *g_gsite;                /* ... the group's first site */
static struct gsite **g_sites;           /* id -> site */
static _Atomic uint32_t g_nsites;
static _Atomic uint64_t *g_fsz;          /* frame sizes */
static _Atomic uint32_t g_fc_epoch;
static struct tstate *g_threads;         /* under g_list_mu */
static _Atomic uint64_t g_sites_dropped;

static inline size_t gsite_bytes(void)
{
    return (sizeof(struct gsite) + g_depth * sizeof(uint64_t) + 63u) & ~(size_t)63;
}

/* counters: plain loads and stores until a second thread records */
static inline uint64_t cnt_add(_Atomic uint64_t *a, uint64_t d)
{
    if (LIKELY(!atomic_load_explicit(&g_multi, memory_order_relaxed))) {
        uint64_t v = atomic_load_explicit(a, memory_order_relaxed) + d;
        atomic_store_explicit(a, v, memory_order_relaxed);
        return v;
    }
    return atomic_fetch_add_explicit(a, d, memory_order_relaxed) + d;
}

static inline void cnt_max(_Atomic uint64_t *a, uint64_t v)
{
    uint64_t p = atomic_load_explicit(a, memory_order_relaxed);
    if (LIKELY(v <= p))
        return;
    if (LIKELY(!atomic_load_explicit(&g_multi, memory_order_relaxed))) {
        atomic_store_explicit(a, v, memory_order_relaxed);
        return;
    }
    while (v > p && !atomic_compare_exchange_weak_explicit(a, &p, v, memory_order_relaxed,
                                                            memory_order_relaxed)) {
    }
}

static void lsite_reset(struct lsite *l)
{
    memset(&l->s, 0, sizeof l->s);
    l->s.min_size = UINT64_MAX;
    memset(l->sz, 0, sizeof l->sz);
    l->nsz = l->sz_overflow = 0;
    l->sz_other = 0;
}

/* ---- modules: seen at site creation by _dl_find_object, so that a
 * dlclosed module still resolves; all loaded ones added at exit ---- */

struct module {
    uint64_t bias, lo, hi;
    char *path;
    uint32_t len;
};
static struct module *g_mods;            /* under g_mod_mu */
static size_t g_nmods, g_capmods;

static void module_add_locked(uint64_t bias, uint64_t lo, uint64_t hi, const char *path)
{
    for (size_t i = 0; i < g_nmods; i++)
        if (g_mods[i].lo == lo && g_mods[i].bias == bias)
            return;
    if (g_nmods == g_capmods) {
        size_t nc = g_capmods ? g_capmods * 2 : 32;
        struct module *m = imalloc(nc * sizeof *m);
        if (!m)
            return;
        if (g_mods)
            memcpy(m, g_mods, g_nmods * sizeof *m);
        ifree(g_mods, g_capmods * sizeof *m);
        g_mods = m;
        g_capmods = nc;
    }
    size_t len = strlen(path);
    char *s = imalloc(len + 1);
    if (!s)
        return;
    memcpy(s, path, len);
    g_mods[g_nmods++] = (struct module){bias, lo, hi, s, (uint32_t)len};
}

static bool module_known_locked(uint64_t a)
{
    for (size_t i = 0; i < g_nmods; i++)
        if (a >= g_mods[i].lo && a < g_mods[i].hi)
            return true;
    return false;
}

static void modules_note(const uint64_t *fr, unsigned nf)
{
    pthread_mutex_lock(&g_mod_mu);
    for (unsigned i = 0; i < nf; i++) {
        if (module_known_locked(fr[i]))
            continue;
        struct dl_find_object fo;
        if (_dl_find_object((void *)(uintptr_t)fr[i], &fo) != 0 || !fo.dlfo_link_map)
            continue;
        const char *name = fo.dlfo_link_map->l_name;
        if (!name || !*name)
            name = g_exe;
        module_add_locked((uint64_t)fo.dlfo_link_map->l_addr, (uint64_t)(uintptr_t)fo.dlfo_map_start,
                          (uint64_t)(uintptr_t)fo.dlfo_map_end, name);
    }
    pthread_mutex_unlock(&g_mod_mu);
}

static int phdr_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (unsigned i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uint64_t a = (uint64_t)info->dlpi_addr + ph->p_vaddr;
        a &= ~(uint64_t)(g_pagesize - 1);
        uint64_t b = (uint64_t)info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
        b = (b + g_pagesize - 1) & ~(uint64_t)(g_pagesize - 1);
        if (a < lo)
            lo = a;
        if (b > hi)
            hi = b;
    }
    if (lo >= hi)
        return 0;
    const char *name = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : g_exe;
    pthread_mutex_lock(&g_mod_mu);
    bool known = false;
    for (size_t i = 0; i < g_nmods; i++)
        if (g_mods[i].bias == (uint64_t)info->dlpi_addr && strcmp(g_mods[i].path, name) == 0)
            known = true;
    if (!known)
        module_add_locked((uint64_t)info->dlpi_addr, lo, hi, name);
    pthread_mutex_unlock(&g_mod_mu);
    return 0;
}

/* ---- call stacks ---- */


static inline uint32_t fsz_global(uint64_t pc)
{
    size_t mask = ((size_t)1 << FSZ_BITS) - 1;
    size_t i = (size_t)mix64(pc) & mask;
    for (unsigned probe = 0; probe < 16; probe++, i = (i + 1) & mask) {
        uint64_t v = atomic_load_explicit(&g_fsz[i], memory_order_relaxed);
        if (v == 0)
            return FS_MISS;
        if ((v >> 16) == pc)
            return (uint32_t)(v & 0xffffu);
    }
    return FS_MISS;
}

static void fsz_set(uint64_t pc, uint32_t code)
{
    if (pc >> 47)
        return;
    size_t mask = ((size_t)1 << FSZ_BITS) - 1;
    size_t i = (size_t)mix64(pc) & mask;
    uint64_t nv = pc << 16 | code;
    for (unsigned probe = 0; probe < 16; probe++, i = (i + 1) & mask) {
        uint64_t v = atomic_load_explicit(&g_fsz[i], memory_order_relaxed);
        for (;;) {
            if (v != 0 && (v >> 16) != pc)
                break;
            if (v != 0 && ((v & 0xffffu) == FS_VAR || (v & 0xffffu) == code))
                return;
            if (atomic_compare_exchange_weak_explicit(&g_fsz[i], &v, nv, memory_order_relaxed,
                                                      memory_order_relaxed)) {
                if (v != 0 && code == FS_VAR)
                    atomic_fetch_add_explicit(&g_fc_epoch, 1, memory_order_relaxed);
                return;
            }
        }
    }
}

static inline uint32_t fsz_get(struct tstate *ts, uint64_t pc)
{
    struct fc_ent *e = &ts->fc[(pc ^ (pc >> 9)) & (FC_SIZE - 1)];
    if (LIKELY(e->pc == pc))
        return e->code;
    uint32_t c = fsz_global(pc);
    if (c != FS_MISS) {
        e->pc = pc;
        e->code = c;
    }
    return c;
}

static inline uint32_t fsz_code(uintptr_t size)
{
    if (size == 0 || (size & 7u) || size / 8u >= FS_END)
        return FS_VAR;
    return (uint32_t)(size / 8u);
}

struct ucoll {
    uintptr_t ra, cfa0;          /* the caller of malloc, malloc's CFA */
    uintptr_t last_cfa;
    unsigned n, depth, skipped;
    bool started, full, signal, cfa_ok;
    uint64_t pcs[MRA_MAX_DEPTH];
    uintptr_t sizes[MRA_MAX_DEPTH]; /* sizes[i]: CFA(frame i) - CFA(frame i-1), for i < n - 1 */
};

/* libgcc's callback sees frame k with _Unwind_GetCFA() giving the CFA of
 * its callee, frame k - 1 (the stack pointer of frame k at its call):
 * frame k's own size is known at the callback of frame k + 1. */
static _Unwind_Reason_Code ucb(struct _Unwind_Context *ctx, void *arg)
{
    struct ucoll *u = arg;
    int before = 0;
    uintptr_t ip = (uintptr_t)_Unwind_GetIPInfo(ctx, &before);
    uintptr_t cfa = (uintptr_t)_Unwind_GetCFA(ctx);
    if (!u->started) {
        if (ip != u->ra || before)
            return ++u->skipped > 32 ? _URC_NORMAL_STOP : _URC_NO_REASON;
        u->started = true;
        u->cfa_ok = cfa == u->cfa0;
    } else {
        if (ip == 0) /* the end of the stack: called once more with no frame */
            return _URC_NORMAL_STOP;
        u->sizes[u->n - 1] = cfa - u->last_cfa;
    }
    if (before) { /* a signal frame: stop before it */
        u->signal = true;
        return _URC_NORMAL_STOP;
    }
    if (u->n == u->depth) {
        u->full = true;
        return _URC_NORMAL_STOP;
    }
    u->pcs[u->n++] = ip;
    u->last_cfa = cfa;
    return _URC_NO_REASON;
}

/* What the unwinder taught: the code of frame i's size (FS_MISS: none). */
static uint32_t ucoll_code(const struct ucoll *u, unsigned i)
{
    if (!u->cfa_ok)
        return FS_MISS;
    if (i + 1 < u->n || (i + 1 == u->n && u->full))
        return fsz_code(u->sizes[i]);
    return u->signal ? FS_VAR : FS_END;
}

/* Unwinds with libgcc from here, keeps the frames from the caller of
 * malloc (return address ra) on, teaches the frame-size table. */
static NOINLINE unsigned unwind_stack(uintptr_t ra, uintptr_t cfa, uint64_t *fr, unsigned depth,
                                      bool learn)
{
    struct ucoll u;
    memset(&u, 0, sizeof u);
    u.ra = ra;
    u.cfa0 = cfa;
    u.depth = depth;
    _Unwind_Backtrace(ucb, &u);
    if (!u.started || u.n == 0) {
        fr[0] = ra - 1;
        return 1;
    }
    for (unsigned i = 0; i < u.n; i++) {
        fr[i] = u.pcs[i] - 1;
        uint32_t code = learn ? ucoll_code(&u, i) : FS_MISS;
        if (code != FS_MISS)
            fsz_set(u.pcs[i], code);
    }
    return u.n;
}

/* Checks a cached walk against the unwinder: a frame whose size differs is
 * marked FS_VAR.  Returns the unwinder's frames. */
static COLD unsigned verify_stack(uintptr_t ra, uintptr_t cfa, uint64_t *fr, unsigned n,
                                  unsigned depth)
{
    struct ucoll u;
    memset(&u, 0, sizeof u);
    u.ra = ra;
    u.cfa0 = cfa;
    u.depth = depth;
    _Unwind_Backtrace(ucb, &u);
    if (!u.started || u.n == 0)
        return n;
    for (unsigned i = 0; i < u.n; i++) {
        fr[i] = u.pcs[i] - 1;
        uint32_t code = ucoll_code(&u, i);
        if (code == FS_MISS)
            continue;
        uint32_t have = fsz_global(u.pcs[i]);
        if (have != FS_MISS && have != code) {
            fsz_set(u.pcs[i], FS_VAR);
        } else if (have == FS_MISS) {
            fsz_set(u.pcs[i], code);
        }
    }
    return u.n;
}

/* The walk: frame k + 1's return address sits at CFA(k) - 8, CFA(k) =
 * CFA(k - 1) + size(pc of frame k).  The address chain uses the size the
 * previous walk found at the same depth (memo), so that the loads of the
 * stack do not wait for the table look-ups, which only confirm it. */
static inline unsigned walk_cached(struct tstate *ts, uintptr_t ra, uintptr_t cfa, uint64_t *fr,
                                   unsigned depth, bool *fail)
{
    fr[0] = ra - 1;
    unsigned n = 1;
    uint64_t pc = ra;
    uintptr_t hi = ts->stk_hi;
    if (UNLIKELY(cfa < ts->stk_lo || cfa >= hi)) {
        *fail = true;
        return n;
    }
    for (; n < depth; n++) {
        uint32_t guess = ts->memo[n - 1];
        uint32_t step = guess; /* opaque to the compiler: the chain uses it, not code */
        __asm__("" : "+r"(step));
        uint32_t code = fsz_get(ts, pc);
        if (UNLIKELY(code != guess)) {
            if (UNLIKELY(code == FS_MISS || code == FS_VAR)) {
                *fail = true;
                return n;
            }
            ts->memo[n - 1] = code;
            step = code;
        }
        if (UNLIKELY(step == FS_END))
            break;
        cfa += (uintptr_t)step * 8u;
        if (UNLIKELY(cfa > hi))
            break;
        memcpy(&pc, (const void *)(cfa - 8), 8);
        if (UNLIKELY(pc < 4096u))
            break;
        fr[n] = pc - 1;
    }
    return n;
}

static unsigned walk_fp(struct tstate *ts, uintptr_t ra, uintptr_t fp, uint64_t *fr, unsigned depth)
{
    fr[0] = ra - 1;
    unsigned n = 1;
    uintptr_t lo = ts->stk_lo, hi = ts->stk_hi;
    if (fp < lo || fp + 16 > hi)
        return n;
    memcpy(&fp, (const void *)fp, 8); /* the caller's frame pointer */
    while (n < depth && fp >= lo && fp + 16 <= hi && !(fp & 7u)) {
        uint64_t pc, next;
        memcpy(&pc, (const void *)(fp + 8), 8);
        memcpy(&next, (const void *)fp, 8);
        if (pc < 4096u)
            break;
        fr[n++] = pc - 1;
        if (next <= fp)
            break;
        fp = (uintptr_t)next;
    }
    return n;
}

static inline unsigned capture(struct tstate *ts, uintptr_t ra, uintptr_t cfa, uint64_t *fr)
{
    unsigned depth = g_depth;
    if (depth <= 1 || g_stack_mode == STACK_RA) {
        fr[0] = ra - 1;
        return 1;
    }
    if (g_stack_mode == STACK_UNWIND)
        return unwind_stack(ra, cfa, fr, depth, false);
    if (g_stack_mode == STACK_FP)
        return walk_fp(ts, ra, cfa - 16, fr, depth);
    uint32_t ep = atomic_load_explicit(&g_fc_epoch, memory_order_relaxed);
    if (UNLIKELY(ep != ts->fc_epoch)) {
        memset(ts->fc, 0, sizeof ts->fc);
        ts->fc_epoch = ep;
    }
    bool fail = false;
    unsigned n = walk_cached(ts, ra, cfa, fr, depth, &fail);
    if (UNLIKELY(fail)) {
        int e = errno;
        n = unwind_stack(ra, cfa, fr, depth, true);
        errno = e;
        return n;
    }
    if (UNLIKELY(++ts->verify_ctr >= ts->verify_every)) {
        ts->verify_ctr = 0;
        int e = errno;
        uint32_t ep0 = atomic_load_explicit(&g_fc_epoch, memory_order_relaxed);
        n = verify_stack(ra, cfa, fr, n, depth);
        if (atomic_load_explicit(&g_fc_epoch, memory_order_relaxed) != ep0)
            ts->verify_every = VERIFY_FIRST;
        else if (ts->verify_every < VERIFY_MAX)
            ts->verify_every *= 2;
        errno = e;
    }
    return n;
}

/* ---- sites ---- */

static inline bool frames_eq(const uint64_t *a, const uint64_t *b, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        if (a[i] != b[i])
            return false;
    return true;
}

/* A stack's hash: a multilinear sum (each frame times an odd constant of
 * its position: the products are independent, no chain of multiplies
 * through the frames), then murmur's finaliser.  A site is known by this
 * hash in the thread's cache (64 bits: a collision among 2^18 sites is
 * about 2^-29 likely per run); the global table compares the frames. */
static inline uint64_t frames_hash(const uint64_t *fr, unsigned n)
{
    uint64_t h = n * UINT64_C(0x9E3779B97F4A7C15);
    for (unsigned i = 0; i < n; i++)
        h += fr[i] * (UINT64_C(0xD6E8FEB86659FD93) + ((uint64_t)i << 33) * 2);
    h ^= h >> 33;
    h *= UINT64_C(0xff51afd7ed558ccd);
    h ^= h >> 33;
    h *= UINT64_C(0xc4ceb9fe1a85ec53);
    h ^= h >> 33;
    return h;
}

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

static COLD uint32_t site_create(const uint64_t *fr, unsigned n, uint64_t h)
{
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
    size_t gb = gsite_bytes();
    struct gsite *g = __libc_memalign(64, gb);
    if (!g)
        goto out;
    memset(g, 0, gb);
    g->mg = imalloc(sizeof *g->mg);
    if (!g->mg) {
        __libc_free(g);
        goto out;
    }
    rec_mem_add((int64_t)gb);
    id = ns + 1;
    g->hash = h;
    g->id = id;
    g->nframes = n;
    g->mg->m.id = id;
    g->mg->m.nframes = n;
    g->mg->m.min_size = UINT64_MAX;
    memcpy(g->frames, fr, n * sizeof *fr);
    g->group = group_of(fr, n, id);
    g_sites[id] = g;
    atomic_store_explicit(&g_nsites, id, memory_order_release);
    atomic_store_explicit(&g_slots[i], id, memory_order_release);
    modules_note(fr, n);
out:
    pthread_mutex_unlock(&g_site_mu);
    errno = e;
    return id;
}

static inline uint32_t site_lookup(struct tstate *ts, const uint64_t *fr, unsigned n)
{
    uint64_t h = frames_hash(fr, n);
    struct sc_ent *e = &ts->sc[(h >> 7) & (SC_SIZE - 1)];
    if (LIKELY(e->hash == h))
        return (uint32_t)e->site;
    size_t mask = ((size_t)1 << SLOT_BITS) - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        uint32_t s = atomic_load_explicit(&g_slots[i], memory_order_acquire);
        if (UNLIKELY(s == 0)) {
            s = site_create(fr, n, h);
            if (s != 0) {
                e->hash = h;
                e->site = s;
            }
            return s;
        }
        const struct gsite *g = g_sites[s];
        if (LIKELY(g->hash == h && g->nframes == n && frames_eq(g->frames, fr, n))) {
            e->hash = h;
            e->site = s;
            return s;
        }
    }
}

/* ---- threads ---- */

static size_t tstate_bytes(void)
{
    return sizeof(struct tstate) + (g_trace_fd >= 0 ? MRA_TRACE_CHUNK : 0u);
}

static COLD struct tstate *thread_register(void)
{
    if (tls_dead)
        return NULL;
    int e = errno;
    size_t tb = tstate_bytes();
    struct tstate *ts = imalloc(tb);
    if (!ts) {
        errno = e;
        return NULL;
    }
    if (g_trace_fd >= 0)
        ts->tbuf = (uint8_t *)(ts + 1);
    ts->index = atomic_fetch_add_explicit(&g_nthreads, 1, memory_order_relaxed) + 1;
    if (ts->index >= 2)
        atomic_store_explicit(&g_multi, 1, memory_order_relaxed);
    ts->fc_epoch = atomic_load_explicit(&g_fc_epoch, memory_order_relaxed);
    ts->t_cur = ts->t_last = now_time();
    ts->t_left = 1;
    ts->samp_left = ts->samp_gap = SAMPLE_EVERY;
    ts->burst_epoch = 1;
    ts->samp_rng = (uint32_t)mix64(g_secret ^ ts->index) | 1u;
    ts->verify_every = VERIFY_FIRST;
    for (unsigned i = 0; i < MRA_MAX_DEPTH; i++)
        ts->memo[i] = MEMO_NONE;
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        void *addr;
        size_t size;
        if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
            ts->stk_lo = (uintptr_t)addr;
            ts->stk_hi = (uintptr_t)addr + size;
        }
        pthread_attr_destroy(&attr);
    }
    pthread_mutex_lock(&g_list_mu);
    ts->next = g_threads;
    if (g_threads)
        g_threads->prev = ts;
    g_threads = ts;
    pthread_mutex_unlock(&g_list_mu);
    pthread_setspecific(g_key, ts);
    tls_ts = ts;
    errno = e;
    return ts;
}

static inline struct tstate *get_ts(void)
{
    struct tstate *ts = tls_ts;
    return LIKELY(ts != NULL) ? ts : thread_register();
}

static inline struct lsite *lsite_get(struct tstate *ts, uint32_t site);

static COLD struct lsite *lsite_slow(struct tstate *ts, uint32_t site)
{
    int e = errno;
    if (site >= ts->lcap) {
        uint32_t nc = ts->lcap ? ts->lcap : 64;
        while (nc <= site)
            nc *= 2;
        struct lsite **a = imalloc(nc * sizeof *a);
        if (!a) {
            errno = e;
            return NULL;
        }
        if (ts->ls)
            memcpy(a, ts->ls, ts->lcap * sizeof *a);
        ifree(ts->ls, ts->lcap * sizeof *a);
        ts->ls = a;
        ts->lcap = nc;
    }
    struct lsite *l = imalloc(sizeof *l);
    if (l) {
        lsite_reset(l);
        ts->ls[site] = l;
        uint32_t grp = g_sites[site]->group;
        l->grp = grp == site ? l : lsite_get(ts, grp);
        if (!l->grp)
            l->grp = l;
    }
    errno = e;
    return l;
}

static inline struct lsite *lsite_get(struct tstate *ts, uint32_t site)
{
    if (LIKELY(site < ts->lcap)) {
        struct lsite *l = ts->ls[site];
        if (LIKELY(l != NULL))
            return l;
    }
    return lsite_slow(ts, site);
}

static inline uint64_t next_tick(struct tstate *ts)
{
    if (UNLIKELY(ts->tick_next == ts->tick_end)) {
        uint64_t b = atomic_fetch_add_explicit(&g_tick, TICK_BATCH, memory_order_relaxed);
        ts->tick_next = b;
        ts->tick_end = b + TICK_BATCH;
    }
    uint64_t t = ts->tick_next++;
    ts->last_tick = t;
    return t;
}

/* ---- the trace ---- */

static void write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        p += w;
        n -= (size_t)w;
    }
}

static COLD void tr_flush(struct tstate *ts)
{
    if (!ts->tbuf || ts->tlen == 0)
        return;
    int e = errno;
    struct mra_trace_chunk c = {ts->index, ts->tlen, ts->tev, 0};
    pthread_mutex_lock(&g_trace_mu);
    write_all(g_trace_fd, &c, sizeof c);
    write_all(g_trace_fd, ts->tbuf, ts->tlen);
    g_trace_events += ts->tev;
    g_trace_bytes += sizeof c + ts->tlen;
    pthread_mutex_unlock(&g_trace_mu);
    ts->tlen = ts->tev = 0;
    errno = e;
}

static inline uint8_t *tr_room(struct tstate *ts)
{
    if (UNLIKELY(ts->tlen + 48u > MRA_TRACE_CHUNK))
        tr_flush(ts);
    return ts->tbuf + ts->tlen;
}

static inline void tr_done(struct tstate *ts, uint8_t *end, uint32_t events)
{
    ts->tlen = (uint32_t)(end - ts->tbuf);
    ts->tev += events;
}

/* ---- recording ---- */

static inline bool recording(void)
{
    return LIKELY(atomic_load_explicit(&g_state, memory_order_relaxed) == ST_REC) && !tls_guard;
}

/* The shared live counters: with one recording thread, plain loads and
 * stores (of atomics: no data race, no locked instruction). */
static inline void live_add(struct gsite *g, uint64_t n)
{
    if (LIKELY(!atomic_load_explicit(&g_multi, memory_order_relaxed))) {
#define LD(a) atomic_load_explicit(&(a), memory_order_relaxed)
#define ST(a, v) atomic_store_explicit(&(a), (v), memory_order_relaxed)
        uint64_t lo = LD(g->live_objects) + 1, lb = LD(g->live_bytes) + n;
        uint64_t ac = lo == 1 ? n : LD(g->arena_cur) + n;
        ST(g->live_objects, lo);
        ST(g->live_bytes, lb);
        ST(g->arena_cur, ac);
        if (UNLIKELY(lo > LD(g->peak_objects)))
            ST(g->peak_objects, lo);
        if (UNLIKELY(lb > LD(g->peak_bytes)))
            ST(g->peak_bytes, lb);
        if (UNLIKELY(ac > LD(g->arena_peak)))
            ST(g->arena_peak, ac);
        uint64_t po = LD(g_live_objects) + 1, pb = LD(g_live_bytes) + n;
        ST(g_live_objects, po);
        ST(g_live_bytes, pb);
        if (UNLIKELY(po > LD(g_peak_objects)))
            ST(g_peak_objects, po);
        if (UNLIKELY(pb > LD(g_peak_bytes)))
            ST(g_peak_bytes, pb);
        return;
    }
    uint64_t lo = cnt_add(&g->live_objects, 1);
    uint64_t lb = cnt_add(&g->live_bytes, n);
    cnt_max(&g->peak_objects, lo);
    cnt_max(&g->peak_bytes, lb);
    uint64_t ac;
    if (lo == 1) {
        ac = n;
        atomic_store_explicit(&g->arena_cur, n, memory_order_relaxed);
    } else {
        ac = cnt_add(&g->arena_cur, n);
    }
    cnt_max(&g->arena_peak, ac);
    uint64_t po = cnt_add(&g_live_objects, 1);
    uint64_t pb = cnt_add(&g_live_bytes, n);
    cnt_max(&g_peak_objects, po);
    cnt_max(&g_peak_bytes, pb);
}

static inline void live_sub(struct gsite *g, uint64_t n)
{
    if (LIKELY(!atomic_load_explicit(&g_multi, memory_order_relaxed))) {
        ST(g->live_objects, LD(g->live_objects) - 1);
        ST(g->live_bytes, LD(g->live_bytes) - n);
        ST(g_live_objects, LD(g_live_objects) - 1);
        ST(g_live_bytes, LD(g_live_bytes) - n);
        return;
    }
    cnt_add(&g->live_objects, (uint64_t)-1);
    cnt_add(&g->live_bytes, (uint64_t)0 - n);
    cnt_add(&g_live_objects, (uint64_t)-1);
    cnt_add(&g_live_bytes, (uint64_t)0 - n);
}

static inline void size_note(struct lsite *l, uint64_t n)
{
    if (LIKELY(l->nsz != 0 && l->sz[0].size == n)) {
        l->sz[0].count++;
        return;
    }
    for (uint32_t i = 1; i < l->nsz; i++) {
        if (l->sz[i].size == n) {
            if (++l->sz[i].count > l->sz[i - 1].count) {
                struct mra_size_count t = l->sz[i];
                l->sz[i] = l->sz[i - 1];
                l->sz[i - 1] = t;
            }
            return;
        }
    }
    if (l->nsz < LSIZES) {
        l->sz[l->nsz].size = n;
        l->sz[l->nsz].count = 1;
        l->nsz++;
        return;
    }
    l->sz_other++;
    l->sz_overflow = 1;
}

/* The end of a burst of frees (an allocation, or a merge): a group's frees
 * in it count as freed together (on the group's first site) when there
 * were two or more and no object of the group younger than the oldest of
 * them is left live on the thread (the ring holds the youngest live ones):
 * what an arena reset frees.  A collector's sweep, which also frees in
 * bursts, leaves younger survivors. */
static NOINLINE void burst_end(struct tstate *ts)
{
    for (uint32_t i = 0; i < ts->nburst; i++) {
        struct lsite *l = lsite_get(ts, ts->burst_sites[i]);
        if (!l || l->burst_epoch != ts->burst_epoch || l->burst_n < 2)
            continue;
        if (l->rcount != 0 && l->ring[(l->rhead + l->rcount - 1) % RING] > l->burst_min)
            continue;
        l->s.freed_together += l->burst_n;
    }
    ts->nburst = 0;
    ts->burst_epoch++;
    if (ts->burst_epoch == 0)
        ts->burst_epoch = 1;
}

/* Writes p's header and counts the allocation (site != 0). */
static inline void note_alloc(struct tstate *ts, uint32_t site, void *p, size_t n, unsigned alog,
                              size_t align)
{
    struct hdr *h = hdr_of(p);
    uint64_t tick = next_tick(ts);
    h->birth_time = thread_time(ts);
    h->size_misc = (uint64_t)n | (uint64_t)alog << 58;
    h->tick_thread = (tick & TICK_MASK) << THR_BITS | (ts->index & THR_MASK);
    h->tag_site = (uint64_t)tag_of(p) << 32 | site;
    if (UNLIKELY(ts->nburst != 0))
        burst_end(ts);
    struct lsite *l = lsite_get(ts, site);
    if (UNLIKELY(!l))
        return;
    struct lstats *s = &l->s;
    s->allocations++;
    s->bytes += n;
    if (n < s->min_size)
        s->min_size = n;
    if (n > s->max_size)
        s->max_size = n;
    if (UNLIKELY(s->first_tick == 0))
        s->first_tick = tick;
    s->last_tick = tick;
    if (align > 16)
        s->aligned++;
    size_note(l, n);
    /* stack-like: push the birth on the group's ring */
    struct lsite *gr = l->grp;
    if (gr->rcount < RING) {
        gr->ring[(gr->rhead + gr->rcount) % RING] = tick;
        gr->rcount++;
    } else {
        gr->ring[gr->rhead] = tick;
        gr->rhead = (gr->rhead + 1) % RING;
        gr->rlost++;
    }
    gr->rlast_pop = UINT64_MAX;
    live_add(g_sites[site], n);
    if (ts->tbuf) {
        uint8_t *q = tr_room(ts);
        uint32_t ev = 1;
        if (UNLIKELY(tick != ts->tr_prev_tick + 1)) {
            q = mra_put_varint(q, (tick - 1) << 5 | MRA_CTL_JUMP << 2 | MRA_EV_CONTROL);
            ev++;
        }
        if (UNLIKELY(align > 16)) {
            q = mra_put_varint(q, (uint64_t)align << 5 | MRA_CTL_ALIGNED << 2 | MRA_EV_CONTROL);
            q = mra_put_varint(q, site);
            q = mra_put_varint(q, n);
        } else if (LIKELY(l->tr_last_size == n)) {
            q = mra_put_varint(q, (uint64_t)site << 2 | MRA_EV_ALLOC);
        } else {
            q = mra_put_varint(q, (uint64_t)site << 2 | MRA_EV_ALLOC_SIZE);
            q = mra_put_varint(q, n);
            l->tr_last_size = n;
        }
        ts->tr_prev_tick = tick;
        tr_done(ts, q, ev);
    }
}

/* The birth tick of h as a full tick, and the lifetime on the clock. */
static inline uint64_t birth_tick(struct tstate *ts, const struct hdr *h, uint64_t *life)
{
    uint64_t b44 = h->tick_thread >> THR_BITS;
    uint64_t now = ts->last_tick;
    uint64_t d = (now - b44) & TICK_MASK;
    if (UNLIKELY(d >= (UINT64_C(1) << (TICK_BITS - 1)))) {
        /* born after this thread's last allocation (another thread's batch) */
        uint64_t birth = now + ((UINT64_C(1) << TICK_BITS) - d);
        uint64_t g = atomic_load_explicit(&g_tick, memory_order_relaxed) - 1;
        *life = g > birth ? g - birth : 0;
        return birth;
    }
    *life = d;
    return now - d;
}

static inline void ring_free(struct lsite *l, uint64_t birth, struct lstats *s)
{
    if (LIKELY(l->rcount != 0)) {
        uint32_t top = (l->rhead + l->rcount - 1) % RING;
        if (LIKELY(l->ring[top] == birth)) {
            l->rcount--;
            s->stack_like++;
            l->rlast_pop = birth;
            return;
        }
        /* the ring holds births in increasing order: search only within */
        if (birth < l->ring[l->rhead] || birth > l->ring[top])
            return;
        for (uint32_t k = l->rcount - 1; k-- > 0;) {
            uint32_t j = (l->rhead + k) % RING;
            if (l->ring[j] == birth) {
                for (uint32_t m = k; m + 1 < l->rcount; m++)
                    l->ring[(l->rhead + m) % RING] = l->ring[(l->rhead + m + 1) % RING];
                l->rcount--;
                return;
            }
        }
        return;
    }
    /* the ring ran empty while older objects live: a free in reverse order
     * of birth continues the stack */
    if (l->rlost != 0 && birth < l->rlast_pop) {
        l->rlost--;
        s->stack_like++;
        l->rlast_pop = birth;
    }
}

static void note_free(struct tstate *ts, struct hdr *h, uint32_t site)
{
    uint64_t n = h->size_misc & SIZE_MASK;
    struct lsite *l = lsite_get(ts, site);
    struct gsite *g = g_sites[site];
    live_sub(g, n);
    if (UNLIKELY(!l))
        return;
    struct lstats *s = &l->s;
    uint64_t life;
    uint64_t birth = birth_tick(ts, h, &life);
    uint64_t t = thread_time(ts);
    uint64_t lns = t > h->birth_time ? t - h->birth_time : 0;
    if (g_use_tsc)
        lns = time_to_ns(lns);
    s->frees++;
    s->freed_bytes += n;
    s->lifetime_ticks_sum += life;
    s->lifetime_ns_sum += lns;
    s->hist_ticks[mra_bucket(life)]++;
    s->hist_ns[mra_bucket(lns)]++;
    /* the burst: frees of this thread with no allocation between, of any
     * sites, followed per group */
    struct lsite *gr = l->grp;
    if (gr->burst_epoch != ts->burst_epoch) {
        if (UNLIKELY(ts->nburst == BURST_SITES))
            burst_end(ts);
        gr->burst_epoch = ts->burst_epoch;
        gr->burst_min = birth;
        gr->burst_n = 0;
        ts->burst_sites[ts->nburst++] = g->group;
    }
    gr->burst_n++;
    if (birth < gr->burst_min)
        gr->burst_min = birth;
    if ((h->tick_thread & THR_MASK) != (ts->index & THR_MASK))
        s->remote_frees++;
    else
        ring_free(gr, birth, s);
    if (ts->tbuf) {
        uint8_t *q = tr_room(ts);
        q = mra_put_varint(q, mra_zigzag((int64_t)(ts->tr_prev_tick - birth)) << 2 | MRA_EV_FREE);
        tr_done(ts, q, 1);
    }
}

static void note_realloc(struct tstate *ts, struct hdr *h, uint32_t site, uint64_t old, uint64_t n,
                         bool moved)
{
    struct lsite *l = lsite_get(ts, site);
    struct gsite *g = g_sites[site];
    uint64_t lb = cnt_add(&g->live_bytes, n - old);
    cnt_max(&g->peak_bytes, lb);
    cnt_max(&g->arena_peak, cnt_add(&g->arena_cur, n));
    cnt_max(&g_peak_bytes, cnt_add(&g_live_bytes, n - old));
    if (UNLIKELY(!l))
        return;
    uint64_t chain = (h->size_misc >> SIZE_BITS) & CHAIN_MAX;
    l->s.reallocs++;
    if (moved)
        l->s.realloc_moves++;
    if (chain > l->s.realloc_chain_max)
        l->s.realloc_chain_max = chain;
    if (ts->tbuf) {
        uint64_t life;
        uint64_t birth = birth_tick(ts, h, &life);
        uint8_t *q = tr_room(ts);
        q = mra_put_varint(q, mra_zigzag((int64_t)(ts->tr_prev_tick - birth)) << 5 |
                                  MRA_CTL_REALLOC << 2 | MRA_EV_CONTROL);
        q = mra_put_varint(q, n);
        tr_done(ts, q, 1);
    }
}

/* A free on a thread whose state was already merged and released (a
 * destructor of another key ran after ours): counted straight into the
 * site under the merge lock. */
static COLD void late_free(struct hdr *h, uint32_t site)
{
    uint64_t n = h->size_misc & SIZE_MASK;
    struct gsite *g = g_sites[site];
    atomic_fetch_add_explicit(&g->live_objects, (uint64_t)-1, memory_order_relaxed);
    atomic_fetch_add_explicit(&g->live_bytes, (uint64_t)0 - n, memory_order_relaxed);
    atomic_fetch_add_explicit(&g_live_objects, (uint64_t)-1, memory_order_relaxed);
    atomic_fetch_add_explicit(&g_live_bytes, (uint64_t)0 - n, memory_order_relaxed);
    pthread_mutex_lock(&g_merge_mu);
    g->mg->m.frees++;
    g->mg->m.freed_bytes += n;
    pthread_mutex_unlock(&g_merge_mu);
}

/* A timed sample of glibc's time for an object of site (weighed). */
static void glibc_note(struct tstate *ts, uint32_t site, int64_t d)
{
    struct lsite *l = lsite_get(ts, site);
    if (l) {
        l->s.glibc_time += d;
        l->s.glibc_samples++;
    }
}

/* ---- the interposers' bodies ---- */

#define CALLER() ((uintptr_t)__builtin_return_address(0))
#define CALLER_CFA() ((uintptr_t)__builtin_frame_address(0) + 16u)

static NOINLINE void *rec_alloc(size_t n, size_t align, bool zero, uintptr_t ra, uintptr_t cfa)
{
    tls_guard++;
    struct tstate *ts = get_ts();
    if (UNLIKELY(!ts)) {
        tls_guard--;
        return align > 16 ? __libc_memalign(align, n) : zero ? __libc_calloc(1, n) : __libc_malloc(n);
    }
    uint32_t w = sample_now(ts);
    uint64_t t0 = w ? now_time() : 0, t1 = 0, t2 = 0;
    uint64_t fr[MRA_MAX_DEPTH];
    unsigned nf = capture(ts, ra, cfa, fr);
    uint32_t site = site_lookup(ts, fr, nf);
    if (UNLIKELY(w))
        t1 = fenced_time();
    void *raw, *p;
    unsigned alog = 4;
    if (align > 16) {
        alog = (unsigned)__builtin_ctzll(align);
        raw = __libc_memalign(align, n + align);
        p = raw ? (char *)raw + align : NULL;
    } else {
        raw = zero ? __libc_calloc(1, n + HDR) : __libc_malloc(n + HDR);
        p = raw ? (char *)raw + HDR : NULL;
    }
    if (UNLIKELY(w))
        t2 = fenced_time();
    if (LIKELY(p != NULL)) {
        if (LIKELY(site != 0)) {
            note_alloc(ts, site, p, n, alog, align);
            if (UNLIKELY(w))
                glibc_note(ts, site, timed_fenced(t1, t2, n) * w);
        } else {
            struct hdr *h = hdr_of(p);
            h->size_misc = (uint64_t)n | (uint64_t)alog << 58;
            h->tick_thread = 0;
            h->tag_site = (uint64_t)tag_of(p) << 32;
        }
    }
    if (UNLIKELY(w))
        ts->hook_time += (timed(t0, t1) + timed(t2, now_time())) * w;
    tls_guard--;
    return p;
}

static inline void *do_malloc(size_t n, uintptr_t ra, uintptr_t cfa)
{
    if (!recording())
        return __libc_malloc(n);
    if (UNLIKELY(n > MAX_REQ)) {
        errno = ENOMEM;
        return NULL;
    }
    return rec_alloc(n, 0, false, ra, cfa);
}

/* Counts the free of a recorded object and frees it. */
static NOINLINE void rec_free(struct hdr *h, uint32_t site, void *raw)
{
    tls_guard++;
    struct tstate *ts = get_ts();
    if (LIKELY(ts != NULL)) {
        uint32_t w = sample_now(ts);
        if (UNLIKELY(w != 0)) {
            uint64_t t0 = now_time();
            note_free(ts, h, site);
            uint64_t size = h->size_misc & SIZE_MASK;
            h->tag_site = 0;
            uint64_t t1 = fenced_time();
            __libc_free(raw);
            uint64_t t2 = fenced_time();
            ts->hook_time += timed(t0, t1) * w;
            glibc_note(ts, site, timed_fenced(t1, t2, size) * w);
            tls_guard--;
            return;
        }
        note_free(ts, h, site);
    } else {
        late_free(h, site);
    }
    h->tag_site = 0;
    __libc_free(raw);
    tls_guard--;
}

static inline void do_free(void *p)
{
    if (UNLIKELY(p == NULL))
        return;
    uint64_t w = tag_word(p);
    if (UNLIKELY(!is_ours(p, w))) {
        if (recording())
            atomic_fetch_add_explicit(&g_foreign, 1, memory_order_relaxed);
        __libc_free(p);
        return;
    }
    struct hdr *h = hdr_of(p);
    uint32_t site = (uint32_t)w;
    void *raw = raw_of(p, h);
    if (site != 0 && recording()) {
        rec_free(h, site, raw);
        return;
    }
    h->tag_site = 0;
    __libc_free(raw);
}

static void *do_realloc(void *p, size_t n, uintptr_t ra, uintptr_t cfa)
{
    if (p == NULL)
        return do_malloc(n, ra, cfa);
    uint64_t w = tag_word(p);
    if (!is_ours(p, w)) {
        if (recording())
            atomic_fetch_add_explicit(&g_foreign, 1, memory_order_relaxed);
        return __libc_realloc(p, n);
    }
    if (n == 0) { /* glibc: frees, returns NULL */
        do_free(p);
        return NULL;
    }
    if (n > MAX_REQ) {
        errno = ENOMEM;
        return NULL;
    }
    struct hdr *h = hdr_of(p);
    uint32_t site = (uint32_t)w;
    uint64_t old = h->size_misc & SIZE_MASK;
    unsigned alog = hdr_alog(h);
    struct tstate *ts = NULL;
    if (site != 0 && recording()) {
        tls_guard++;
        ts = get_ts();
        tls_guard--;
    }
    uint32_t sw = ts ? sample_now(ts) : 0;
    void *np;
    if (alog <= 4u) {
        uint64_t t1 = sw ? fenced_time() : 0;
        void *raw = __libc_realloc((char *)p - HDR, n + HDR);
        if (UNLIKELY(sw)) {
            tls_guard++;
            glibc_note(ts, site, timed_fenced(t1, fenced_time(), n > old ? n : old) * sw);
            tls_guard--;
        }
        if (!raw)
            return NULL;
        np = (char *)raw + HDR;
    } else {
        void *raw = __libc_malloc(n + HDR);
        if (!raw)
            return NULL;
        np = (char *)raw + HDR;
        size_t usable = glibc_usable(raw_of(p, h)) - pad_of(alog);
        memcpy(np, p, usable < n ? usable : n);
        memcpy(hdr_of(np), h, HDR);
        h->tag_site = 0;
        __libc_free(raw_of(p, h));
    }
    struct hdr *nh = hdr_of(np);
    uint64_t chain = (nh->size_misc >> SIZE_BITS) & CHAIN_MAX;
    if (chain < CHAIN_MAX)
        chain++;
    nh->size_misc = (uint64_t)n | chain << SIZE_BITS | (uint64_t)4 << 58;
    nh->tag_site = (uint64_t)tag_of(np) << 32 | site;
    if (ts) {
        tls_guard++;
        note_realloc(ts, nh, site, old, n, np != p);
        tls_guard--;
    }
    return np;
}

static void *do_memalign(size_t align, size_t n, uintptr_t ra, uintptr_t cfa)
{
    if (align <= 16)
        return do_malloc(n, ra, cfa);
    if (align > ((size_t)1 << 62)) {
        errno = EINVAL;
        return NULL;
    }
    if (align & (align - 1)) /* glibc 2.36 rounds up to a power of two */
        align = (size_t)1 << (64 - __builtin_clzll(align));
    if (!recording())
        return __libc_memalign(align, n);
    if (n > MAX_REQ - align) {
        errno = ENOMEM;
        return NULL;
    }
    return rec_alloc(n, align, false, ra, cfa);
}

/* ---- the interposed functions ---- */

EXPORT void *malloc(size_t n)
{
    return do_malloc(n, CALLER(), CALLER_CFA());
}

EXPORT void free(void *p)
{
    do_free(p);
}

EXPORT void *calloc(size_t a, size_t b)
{
    size_t n;
    if (__builtin_mul_overflow(a, b, &n)) {
        errno = ENOMEM;
        return NULL;
    }
    if (!recording())
        return __libc_calloc(a, b);
    if (n > MAX_REQ) {
        errno = ENOMEM;
        return NULL;
    }
    return rec_alloc(n, 0, true, CALLER(), CALLER_CFA());
}

EXPORT void *realloc(void *p, size_t n)
{
    return do_realloc(p, n, CALLER(), CALLER_CFA());
}

EXPORT void *reallocarray(void *p, size_t a, size_t b)
{
    size_t n;
    if (__builtin_mul_overflow(a, b, &n)) {
        errno = ENOMEM;
        return NULL;
    }
    return do_realloc(p, n, CALLER(), CALLER_CFA());
}

EXPORT void *memalign(size_t align, size_t n)
{
    return do_memalign(align, n, CALLER(), CALLER_CFA());
}

EXPORT void *aligned_alloc(size_t align, size_t n)
{
    return do_memalign(align, n, CALLER(), CALLER_CFA());
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
    if (align % sizeof(void *) != 0 || (align & (align - 1)) != 0 || align == 0)
        return EINVAL;
    int e = errno;
    void *p = do_memalign(align, n, CALLER(), CALLER_CFA());
    if (!p) {
        int r = errno == EINVAL ? EINVAL : ENOMEM;
        errno = e;
        return r;
    }
    errno = e;
    *out = p;
    return 0;
}

EXPORT void *valloc(size_t n)
{
    return do_memalign(g_pagesize, n, CALLER(), CALLER_CFA());
}

EXPORT void *pvalloc(size_t n)
{
    size_t r;
    if (__builtin_add_overflow(n, g_pagesize - 1, &r)) {
        errno = ENOMEM;
        return NULL;
    }
    r &= ~(g_pagesize - 1);
    return do_memalign(g_pagesize, r, CALLER(), CALLER_CFA());
}

EXPORT size_t malloc_usable_size(void *p)
{
    if (!p)
        return 0;
    uint64_t w = tag_word(p);
    if (!is_ours(p, w))
        return glibc_usable(p);
    struct hdr *h = hdr_of(p);
    return glibc_usable(raw_of(p, h)) - pad_of(hdr_alog(h));
}

/* ---- merging ---- */

static void merge_lsite(struct gsite *g, struct lsite *l)
{
    struct mra_site_stats *m = &g->mg->m;
    const struct lstats *s = &l->s;
    if (s->allocations && !l->counted) {
        m->alloc_threads++;
        l->counted = 1;
    }
    /* the thread's figures as a record of the format, added as the
     * analysis adds raw sites (the live and peak figures are the site's
     * shared counters, taken at exit) */
    struct mra_site_stats t;
    memset(&t, 0, sizeof t);
    t.allocations = s->allocations;
    t.bytes = s->bytes;
    t.min_size = s->min_size;
    t.max_size = s->max_size;
    t.first_tick = s->first_tick;
    t.last_tick = s->last_tick;
    t.frees = s->frees;
    t.freed_bytes = s->freed_bytes;
    t.lifetime_ticks_sum = s->lifetime_ticks_sum;
    t.lifetime_ns_sum = s->lifetime_ns_sum;
    t.freed_together = s->freed_together;
    t.stack_like = s->stack_like;
    t.remote_frees = s->remote_frees;
    t.aligned = s->aligned;
    t.reallocs = s->reallocs;
    t.realloc_moves = s->realloc_moves;
    t.realloc_chain_max = s->realloc_chain_max;
    t.glibc_ns = (uint64_t)s->glibc_time; /* clock units, two's complement until finish_site */
    t.glibc_samples = s->glibc_samples;
    memcpy(t.hist_ticks, s->hist_ticks, sizeof t.hist_ticks);
    memcpy(t.hist_ns, s->hist_ns, sizeof t.hist_ns);
    mra_site_stats_add(m, &t);
    for (uint32_t i = 0; i < l->nsz; i++) {
        uint32_t j;
        for (j = 0; j < g->mg->nmsz; j++)
            if (g->mg->msz[j].size == l->sz[i].size)
                break;
        if (j < g->mg->nmsz) {
            g->mg->msz[j].count += l->sz[i].count;
        } else if (g->mg->nmsz < GSIZES) {
            g->mg->msz[g->mg->nmsz++] = l->sz[i];
        } else {
            g->mg->msz_other += l->sz[i].count;
            g->mg->msz_overflow = 1;
        }
    }
    g->mg->msz_other += l->sz_other;
    if (l->sz_overflow)
        g->mg->msz_overflow = 1;
    lsite_reset(l);
}

/* under g_merge_mu */
static void merge_thread(struct tstate *ts)
{
    if (ts->nburst != 0)
        burst_end(ts);
    uint32_t ns = atomic_load_explicit(&g_nsites, memory_order_acquire);
    uint32_t lim = ts->lcap < ns + 1 ? ts->lcap : ns + 1;
    for (uint32_t i = 1; i < lim; i++)
        if (ts->ls[i])
            merge_lsite(g_sites[i], ts->ls[i]);
    atomic_fetch_add_explicit(&g_hook_time, ts->hook_time, memory_order_relaxed);
    ts->hook_time = 0;
    uint64_t mt = atomic_load_explicit(&g_max_tick, memory_order_relaxed);
    if (ts->last_tick > mt)
        atomic_store_explicit(&g_max_tick, ts->last_tick, memory_order_relaxed);
}

static void thread_release(struct tstate *ts)
{
    for (uint32_t i = 0; i < ts->lcap; i++)
        if (ts->ls[i])
            ifree(ts->ls[i], sizeof(struct lsite));
    ifree(ts->ls, ts->lcap * sizeof(struct lsite *));
    ifree(ts, tstate_bytes());
}

static void thread_exit(void *arg)
{
    struct tstate *ts = arg;
    if (atomic_load_explicit(&g_state, memory_order_acquire) != ST_REC)
        return;
    if (ts->rounds < 3) { /* run again after the other keys' destructors */
        ts->rounds++;
        pthread_setspecific(g_key, ts);
        return;
    }
    tls_guard++;
    int e = errno;
    pthread_mutex_lock(&g_merge_mu);
    if (atomic_load_explicit(&g_state, memory_order_acquire) == ST_REC) {
        merge_thread(ts);
        tr_flush(ts);
        pthread_mutex_lock(&g_list_mu);
        if (ts->prev)
            ts->prev->next = ts->next;
        else
            g_threads = ts->next;
        if (ts->next)
            ts->next->prev = ts->prev;
        pthread_mutex_unlock(&g_list_mu);
        tls_ts = NULL;
        tls_dead = 1;
        thread_release(ts);
    }
    pthread_mutex_unlock(&g_merge_mu);
    errno = e;
    tls_guard--;
}

/* ---- the profile ---- */

struct wbuf {
    int fd;
    bool err;
    size_t len;
    char buf[65536];
};

static void wb_put(struct wbuf *w, const void *p, size_t n)
{
    const char *s = p;
    while (n > 0) {
        if (w->len == sizeof w->buf) {
            write_all(w->fd, w->buf, w->len);
            w->len = 0;
        }
        size_t k = sizeof w->buf - w->len < n ? sizeof w->buf - w->len : n;
        memcpy(w->buf + w->len, s, k);
        w->len += k;
        s += k;
        n -= k;
    }
}

static int cmp_size_count(const void *a, const void *b)
{
    const struct mra_size_count *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return x->size < y->size ? -1 : x->size > y->size;
}

static void finish_site(struct gsite *g, struct mra_site_stats *out)
{
    *out = g->mg->m;
    out->id = g->id;
    out->nframes = g->nframes;
    out->live_objects = atomic_load_explicit(&g->live_objects, memory_order_relaxed);
    out->live_bytes = atomic_load_explicit(&g->live_bytes, memory_order_relaxed);
    out->peak_live_objects = atomic_load_explicit(&g->peak_objects, memory_order_relaxed);
    out->peak_live_bytes = atomic_load_explicit(&g->peak_bytes, memory_order_relaxed);
    out->arena_peak_bytes = atomic_load_explicit(&g->arena_peak, memory_order_relaxed);
    if (out->allocations == 0)
        out->min_size = 0;
    int64_t gt = (int64_t)out->glibc_ns;
    out->glibc_ns = gt > 0 ? (g_use_tsc ? time_to_ns((uint64_t)gt) : (uint64_t)gt) : 0;

    qsort(g->mg->msz, g->mg->nmsz, sizeof g->mg->msz[0], cmp_size_count);
    out->nsizes = g->mg->nmsz < MRA_SIZES ? g->mg->nmsz : MRA_SIZES;
    memset(out->sizes, 0, sizeof out->sizes);
    memcpy(out->sizes, g->mg->msz, out->nsizes * sizeof g->mg->msz[0]);
    out->other_sizes_count = g->mg->msz_other;
    for (uint32_t i = out->nsizes; i < g->mg->nmsz; i++)
        out->other_sizes_count += g->mg->msz[i].count;
    out->sizes_overflow = g->mg->nmsz > MRA_SIZES || g->mg->msz_overflow;
}

static void write_profile(uint64_t end_ns)
{
    uint32_t ns = atomic_load_explicit(&g_nsites, memory_order_acquire);
    dl_iterate_phdr(phdr_cb, NULL);
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", g_profile, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    struct wbuf *w = imap(sizeof *w);
    if (!w) {
        close(fd);
        unlink(tmp);
        return;
    }
    w->fd = fd;
    struct mra_profile_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, MRA_PROFILE_MAGIC, 8);
    h.version = MRA_PROFILE_VERSION;
    h.depth = g_depth;
    h.pid = (uint64_t)getpid();
    h.start_ns = g_start_ns;
    h.end_ns = end_ns;
    for (uint32_t i = 1; i <= ns; i++) {
        const struct gsite *g = g_sites[i];
        h.allocations += g->mg->m.allocations;
        h.frees += g->mg->m.frees;
        h.reallocs += g->mg->m.reallocs;
        h.bytes += g->mg->m.bytes;
    }
    h.peak_live_bytes = atomic_load_explicit(&g_peak_bytes, memory_order_relaxed);
    h.peak_live_objects = atomic_load_explicit(&g_peak_objects, memory_order_relaxed);
    h.live_bytes_at_exit = atomic_load_explicit(&g_live_bytes, memory_order_relaxed);
    h.live_objects_at_exit = atomic_load_explicit(&g_live_objects, memory_order_relaxed);
    h.foreign_frees = atomic_load_explicit(&g_foreign, memory_order_relaxed);
    h.threads = atomic_load_explicit(&g_nthreads, memory_order_relaxed);
    h.ticks = atomic_load_explicit(&g_max_tick, memory_order_relaxed);
    h.recorder_peak_bytes = atomic_load_explicit(&g_rec_mem_peak, memory_order_relaxed) +
                            resident(g_slots, sizeof(uint32_t) << SLOT_BITS) +
                            resident(g_sites, sizeof(struct gsite *) << SLOT_BITS) +
                            resident(g_gkeys, sizeof(uint64_t) << SLOT_BITS) +
                            resident(g_gsite, sizeof(uint32_t) << SLOT_BITS) +
                            resident(g_fsz, sizeof(uint64_t) << FSZ_BITS) +
                            (uint64_t)HDR * h.peak_live_objects;
    pthread_mutex_lock(&g_mod_mu);
    h.nmodules = g_nmods;
    h.nsites = ns;
    pthread_mutex_lock(&g_trace_mu);
    h.trace_events = g_trace_events;
    h.trace_bytes = g_trace_fd >= 0 ? g_trace_bytes + sizeof(struct mra_trace_header) : 0;
    pthread_mutex_unlock(&g_trace_mu);
    int64_t hook = atomic_load_explicit(&g_hook_time, memory_order_relaxed);
    h.recorder_ns = hook > 0 ? (uint64_t)hook : 0;
    if (g_use_tsc)
        h.recorder_ns = time_to_ns(h.recorder_ns);
    memcpy(h.program, g_exe, sizeof h.program);
    h.program[sizeof h.program - 1] = 0;
    wb_put(w, &h, sizeof h);
    for (size_t i = 0; i < g_nmods; i++) {
        struct mra_module m = {g_mods[i].bias, g_mods[i].lo, g_mods[i].hi, g_mods[i].len, 0};
        wb_put(w, &m, sizeof m);
        wb_put(w, g_mods[i].path, g_mods[i].len);
    }
    pthread_mutex_unlock(&g_mod_mu);
    uint64_t frames[MRA_MAX_DEPTH];
    for (uint32_t i = 1; i <= ns; i++) {
        struct gsite *g = g_sites[i];
        struct mra_site_stats s;
        finish_site(g, &s);
        wb_put(w, &s, sizeof s);
        memset(frames, 0, sizeof frames);
        memcpy(frames, g->frames, g->nframes * sizeof frames[0]);
        wb_put(w, frames, g_depth * sizeof frames[0]);
    }
    write_all(fd, w->buf, w->len);
    munmap(w, sizeof *w);
    if (close(fd) == 0)
        rename(tmp, g_profile);
    else
        unlink(tmp);
}

/* Merges every thread's figures, writes the profile and puts the trace
 * under its name; `closing`: the process ends (the trace is closed),
 * else an exec is about to replace it (the trace stays open, to go on if
 * the exec fails: it is close-on-exec). */
static void flush_all(bool closing)
{
    tls_guard++;
    int e = errno;
    uint64_t end_ns = mra_mono_ns();
    pthread_mutex_lock(&g_merge_mu);
    pthread_mutex_lock(&g_list_mu);
    for (struct tstate *ts = g_threads; ts; ts = ts->next) {
        merge_thread(ts);
        tr_flush(ts);
    }
    pthread_mutex_unlock(&g_list_mu);
    write_profile(end_ns);
    if (g_trace_fd >= 0) {
        char tmp[4200];
        snprintf(tmp, sizeof tmp, "%s.tmp.%ld", g_trace_path, (long)getpid());
        pthread_mutex_lock(&g_trace_mu);
        if (!closing) {
            rename(tmp, g_trace_path); /* a second rename (at exit) finds nothing */
        } else {
            struct stat st;
            if (close(g_trace_fd) == 0) {
                if (stat(tmp, &st) == 0)
                    rename(tmp, g_trace_path);
            } else {
                unlink(tmp);
            }
            g_trace_fd = -1;
        }
        pthread_mutex_unlock(&g_trace_mu);
    }
    pthread_mutex_unlock(&g_merge_mu);
    errno = e;
    tls_guard--;
}

__attribute__((destructor(101))) static void rec_fini(void)
{
    int expect = ST_REC;
    if (!atomic_compare_exchange_strong(&g_state, &expect, ST_DONE))
        return;
    flush_all(true);
}

/* ---- exec: the profile so far is written before the image is replaced;
 * the new program is not profiled (the recorder's variables left the
 * environment at start-up); if the exec fails, recording goes on and the
 * profile is written again at exit ---- */

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execvpe_fn)(const char *, char *const[], char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef int (*execveat_fn)(int, const char *, char *const[], char *const[], int);

static void *real_fn(void *_Atomic *slot, const char *name)
{
    void *f = atomic_load_explicit(slot, memory_order_acquire);
    if (!f) {
        tls_guard++;
        f = dlsym(RTLD_NEXT, name);
        tls_guard--;
        atomic_store_explicit(slot, f, memory_order_release);
    }
    return f;
}

static void before_exec(void)
{
    if (atomic_load_explicit(&g_state, memory_order_acquire) == ST_REC && !tls_guard)
        flush_all(false);
}

static void *_Atomic g_execve, *_Atomic g_execvpe, *_Atomic g_fexecve, *_Atomic g_execveat;

/* The libc function an exec hook stands in front of, the profile written
 * first; NULL with ENOSYS when there is none. */
static void *exec_real(void *_Atomic *slot, const char *name)
{
    void *sym = real_fn(slot, name);
    if (!sym) {
        errno = ENOSYS;
        return NULL;
    }
    before_exec();
    return sym;
}

/* Calls the exec hook's libc function of type T (found in SLOT by NAME). */
#define EXEC_CALL(T, slot, name, ...)                 \
    do {                                              \
        void *sym_ = exec_real(&(slot), name);        \
        if (!sym_)                                    \
            return -1;                                \
        T f_;                                         \
        memcpy(&f_, &sym_, sizeof f_);                \
        return f_(__VA_ARGS__);                       \
    } while (0)

EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    EXEC_CALL(execve_fn, g_execve, "execve", path, argv, envp);
}

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    EXEC_CALL(execvpe_fn, g_execvpe, "execvpe", file, argv, envp);
}

EXPORT int execv(const char *path, char *const argv[])
{
    return execve(path, argv, environ);
}

EXPORT int execvp(const char *file, char *const argv[])
{
    return execvpe(file, argv, environ);
}

EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    EXEC_CALL(fexecve_fn, g_fexecve, "fexecve", fd, argv, envp);
}

EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags)
{
    EXEC_CALL(execveat_fn, g_execveat, "execveat", dirfd, path, argv, envp, flags);
}

/* execl, execlp, execle: the arguments gathered into an array on the
 * stack (the kernel limits them far below what a stack holds), then the
 * array form; execle's environment follows the terminating NULL. */
#define EXEC_ARGV_STACK 256u
#define EXEC_ARGS(first, ap, argv, n)                                                     \
    size_t n = 1;                                                                         \
    va_start(ap, first);                                                                  \
    while (va_arg(ap, char *) != NULL)                                                    \
        n++;                                                                              \
    va_end(ap);                                                                           \
    char *argv_stack_[EXEC_ARGV_STACK];                                                   \
    char **argv = argv_stack_;                                                            \
    if (n >= EXEC_ARGV_STACK && !(argv = __libc_malloc((n + 1) * sizeof *argv))) {        \
        errno = E2BIG;                                                                    \
        return -1;                                                                        \
    }                                                                                     \
    argv[0] = (char *)(first);                                                            \
    va_start(ap, first);                                                                  \
    for (size_t i_ = 1; i_ <= n; i_++)                                                    \
        argv[i_] = va_arg(ap, char *)

/* the exec, then (it failed) the array freed */
static int exec_done(int r, char **argv, char **stack)
{
    if (argv != stack) {
        int e = errno;
        __libc_free(argv);
        errno = e;
    }
    return r;
}

EXPORT int execl(const char *path, const char *arg, ...)
{
    va_list ap;
    EXEC_ARGS(arg, ap, argv, n);
    va_end(ap);
    return exec_done(execve(path, argv, environ), argv, argv_stack_);
}

EXPORT int execlp(const char *file, const char *arg, ...)
{
    va_list ap;
    EXEC_ARGS(arg, ap, argv, n);
    va_end(ap);
    return exec_done(execvpe(file, argv, environ), argv, argv_stack_);
}

EXPORT int execle(const char *path, const char *arg, ...)
{
    va_list ap;
    EXEC_ARGS(arg, ap, argv, n);
    char *const *envp = va_arg(ap, char *const *);
    va_end(ap);
    return exec_done(execve(path, argv, envp), argv, argv_stack_);
}

/* ---- start-up ---- */

static void fork_child(void)
{
    atomic_store_explicit(&g_state, ST_CHILD, memory_order_relaxed);
    g_trace_fd = -1; /* the parent's: never written by the child */
}

static _Unwind_Reason_Code noop_cb(struct _Unwind_Context *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    return _URC_NO_REASON;
}

static void env_take(const char *name, char *dst, size_t cap, bool *present)
{
    const char *v = getenv(name);
    *present = v != NULL;
    dst[0] = 0;
    if (v) {
        size_t n = strlen(v);
        if (n >= cap)
            n = cap - 1;
        memcpy(dst, v, n);
        dst[n] = 0;
    }
}

static void env_clean(void)
{
    char name[128];
    for (;;) {
        bool found = false;
        for (char **e = environ; e && *e; e++) {
            if (strncmp(*e, "MEMRES_ADVISE_", 14) == 0) {
                const char *eq = strchr(*e, '=');
                size_t n = eq ? (size_t)(eq - *e) : strlen(*e);
                if (n >= sizeof name)
                    n = sizeof name - 1;
                memcpy(name, *e, n);
                name[n] = 0;
                found = true;
                break;
            }
        }
        if (!found)
            return;
        unsetenv(name);
    }
}

__attribute__((constructor(101))) static void rec_init(void)
{
    int expect = ST_INIT;
    if (atomic_load(&g_state) != ST_INIT)
        return;
    tls_guard++;
    int e = errno;
    long ps = sysconf(_SC_PAGESIZE);
    if (ps > 0)
        g_pagesize = (size_t)ps;
    bool have_prof, have_depth, have_trace, have_preload, have_stack;
    char depth[32], preload[4096], stack[32];
    env_take("MEMRES_ADVISE_PROFILE", g_profile, sizeof g_profile, &have_prof);
    env_take("MEMRES_ADVISE_DEPTH", depth, sizeof depth, &have_depth);
    env_take("MEMRES_ADVISE_TRACE", g_trace_path, sizeof g_trace_path, &have_trace);
    env_take("MEMRES_ADVISE_PRELOAD", preload, sizeof preload, &have_preload);
    env_take("MEMRES_ADVISE_STACK", stack, sizeof stack, &have_stack); /* for measurements */
    env_clean();
    /* LD_PRELOAD as it was before the driver: set (possibly to "") when
     * the driver passed it, unset when it did not */
    if (have_prof) {
        if (have_preload)
            setenv("LD_PRELOAD", preload, 1);
        else
            unsetenv("LD_PRELOAD");
    }
    if (!have_prof || !g_profile[0]) {
        atomic_store(&g_state, ST_OFF);
        goto out;
    }
    if (have_depth) {
        long d = strtol(depth, NULL, 10);
        if (d >= 1)
            g_depth = d > (long)MRA_MAX_DEPTH ? MRA_MAX_DEPTH : (unsigned)d;
    }
    if (have_stack) {
        if (strcmp(stack, "unwind") == 0)
            g_stack_mode = STACK_UNWIND;
        else if (strcmp(stack, "fp") == 0)
            g_stack_mode = STACK_FP;
        else if (strcmp(stack, "ra") == 0)
            g_stack_mode = STACK_RA;
    }
    const uint64_t *rnd = (const uint64_t *)getauxval(AT_RANDOM);
    uint64_t sec = mra_mono_ns() ^ (uint64_t)getpid() << 32;
    if (rnd) {
        uint64_t r[2];
        memcpy(r, rnd, sizeof r);
        sec ^= r[0] ^ mix64(r[1]);
    }
    g_secret = mix64(sec) | 1u;
    {
        void *sym = dlsym(RTLD_NEXT, "malloc_usable_size");
        if (sym)
            memcpy(&g_usable, &sym, sizeof sym);
    }
    ssize_t n = readlink("/proc/self/exe", g_exe, sizeof g_exe - 1);
    g_exe[n > 0 ? (size_t)n : 0] = 0;
    g_slots = imap(sizeof(uint32_t) << SLOT_BITS);
    g_sites = imap(sizeof(struct gsite *) << SLOT_BITS);
    g_gkeys = imap(sizeof(uint64_t) << SLOT_BITS);
    g_gsite = imap(sizeof(uint32_t) << SLOT_BITS);
    g_fsz = imap(sizeof(uint64_t) << FSZ_BITS);
    if (!g_slots || !g_sites || !g_gkeys || !g_gsite || !g_fsz || pthread_key_create(&g_key, thread_exit) != 0) {
        atomic_store(&g_state, ST_OFF);
        goto out;
    }
    pthread_atfork(NULL, NULL, fork_child);
    if (have_trace && g_trace_path[0]) {
        char tmp[4200];
        snprintf(tmp, sizeof tmp, "%s.tmp.%ld", g_trace_path, (long)getpid());
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd >= 0) {
            int hi = fcntl(fd, F_DUPFD_CLOEXEC, 1000);
            if (hi >= 0) {
                close(fd);
                fd = hi;
            }
            struct mra_trace_header th;
            memset(&th, 0, sizeof th);
            memcpy(th.magic, MRA_TRACE_MAGIC, 8);
            th.version = MRA_TRACE_VERSION;
            th.pid = (uint64_t)getpid();
            write_all(fd, &th, sizeof th);
            g_trace_fd = fd;
        }
    }
    _Unwind_Backtrace(noop_cb, NULL); /* libgcc's own set-up, here */
    clock_calibrate();
    timer_calibrate();
    g_start_ns = mra_mono_ns();
    atomic_compare_exchange_strong(&g_state, &expect, ST_REC);
out:
    errno = e;
    tls_guard--;
}
