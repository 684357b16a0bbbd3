/* SPDX-License-Identifier: MIT */
/* advise/record/record.h -- libmemres-advise-recorder.so, preloaded by
 * memres-advise into the program it profiles, as its files share it.  It
 * interposes the malloc family, gives every object it records a 32-byte
 * header (site, thread, birth on the allocation clock and in time, realloc
 * count, size; sampled, two words in the object and the rest in a side
 * record, and the objects it passes over two words: sample.c, side.c),
 * keeps per-thread per-site tables (no lock on the path of an allocation)
 * and at exit writes the profile of common/format.h; with
 * MEMRES_ADVISE_TRACE it also writes the compact event stream.
 *
 * The pieces, and the files that hold them:
 *   - glibc's allocator, bound by its __libc_* names (no dlsym, no
 *     recursion); the interposers (interpose.c);
 *   - the object header: 4 words just below the user's pointer, the last one
 *     a tag (a hash of the pointer and a per-process secret, its top bit set,
 *     so that no glibc chunk size field can match) and the site id; a pointer
 *     without a matching tag is not the recorder's and goes to glibc as is
 *     (this header);
 *   - clocks: one global allocation tick per allocation, taken by each
 *     thread in batches of 64 from one atomic counter; time from rdtsc scaled
 *     to ns (calibrated against CLOCK_MONOTONIC for 0.5 ms at start-up:
 *     clock.c);
 *   - call stacks: frames[0] from __builtin_return_address(0); deeper frames
 *     by a walk that adds learnt frame sizes (CFA distances, keyed by return
 *     address, in a per-thread cache in front of a global lock-free table)
 *     and reads each return address at CFA - 8 within the thread's stack
 *     bounds; a miss, a frame whose size varies (alloca) or a stack
 *     outside the bounds uses libgcc's _Unwind_Backtrace, which also
 *     teaches the cache; now and then a cached walk is checked against the
 *     unwinder (common/walk.h and walk.c, shared with the apply runtime);
 *     the frame-pointer and return-address modes are record.c's, and so is
 *     the per-thread stack cache in front of the walk (an allocation's
 *     stack seen before is read at known offsets and compared whole);
 *   - sites: a global open-addressed table keyed by the frames, read without
 *     lock (record.c), a mutex only to add a site (sites.c), and the modules
 *     their frames are in (modules.c);
 *   - per-thread per-site statistics (threads.c, record.c), merged at
 *     thread exit and at exit (merge.c, with common/site_stats.c); shared
 *     live/peak counters per site and for the program (relaxed atomics;
 *     plain loads and stores while only one thread ever recorded);
 *   - the trace, per-thread chunks appended under a mutex when full
 *     (trace.c);
 *   - the timeline of the program's live bytes: points taken at timed
 *     samples, decimated to a fixed size, and the exact peak's moment
 *     (timeline.c);
 *   - start-up (environment: start.c), fork (the child records and writes
 *     nothing), thread exit, exec (exec.c: the profile written first),
 *     process exit (the profile, written with write(2) to a temporary name
 *     and renamed: profile_out.c).
 * The global state is defined in state.c.  What runs on every call is
 * static inline (here and in hot.h) or in record.c and interpose.c, so
 * that it inlines as it did when the recorder was one file; the other
 * files' functions (mrr_*) are the slow paths, hidden like everything the
 * recorder does not export.  No header here calls into a file that
 * includes it: record.h's inline functions call none of the recorder's,
 * hot.h's only those of threads.c, trace.c and timeline.c, which
 * include record.h alone.
 *
 * What it cannot see: a process ending by _exit or a signal writes no
 * profile (nor trace; an exec writes them first); allocations made before
 * its constructor ran (by ld.so and the constructors of libraries
 * initialised before it) are not recorded, nor are calls that bypass
 * malloc (mmap, __libc_malloc).
 */
#ifndef MEMRES_ADVISE_RECORD_H
#define MEMRES_ADVISE_RECORD_H

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
#include "preload.h"
#include "walk.h"

/* glibc's allocator: common/preload.h */

/* The recorder's own declarations hidden too (not only its definitions,
 * which -fvisibility=hidden covers): its state and its slow paths are
 * reached PC-relative, not through the GOT. */
#pragma GCC visibility push(hidden)

#define EXPORT __attribute__((visibility("default")))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define NOINLINE __attribute__((noinline))
#define COLD __attribute__((noinline, cold))
#define TLS __attribute__((tls_model("initial-exec"))) _Thread_local

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
#define SC_SIZE 256u     /* per-thread site cache */
#define SLOT_BITS 18u    /* site hash table: 2^18 slots */
#define MAX_SITES ((1u << SLOT_BITS) / 4u * 3u)

/* the global state, defined in state.c */
extern _Atomic int g_state;
extern int g_stack_mode;
extern unsigned g_depth;
extern bool g_sk_on;                     /* stacks cached (record.c), set at start-up */
extern bool g_sampling;                  /* allocations sampled (MEMRES_ADVISE_SAMPLE) */
extern double g_sample_bytes;            /* ... one per this many bytes on average */
extern uint64_t g_secret;
extern _Atomic int g_multi;              /* a second thread has recorded */
extern _Atomic uint64_t g_tick;      /* the allocation clock */
extern _Atomic uint32_t g_nthreads;
extern _Atomic uint64_t g_foreign;
/* sampled: the program's allocations, bytes, frees and reallocs, every object
 * counted (merged tstate.all_*): the profile's totals */
extern _Atomic uint64_t g_all_allocs, g_all_bytes, g_all_frees, g_all_reallocs;
extern _Atomic int64_t g_hook_time;      /* merged tstate.hook_time */
extern _Atomic uint64_t g_max_tick;
extern uint64_t g_start_ns;
extern char g_profile[4096];
extern char g_trace_path[4096];
extern char g_exe[256];
extern int g_trace_fd;
extern pthread_key_t g_key;
extern size_t g_pagesize;
extern size_t (*g_usable)(void *);

/* program-wide live and peak */
extern _Atomic uint64_t g_live_bytes, g_live_objects, g_peak_bytes, g_peak_objects;
/* the moment of the live bytes' peak, for the timeline (timeline.c) */
struct mrr_tl_peak {
    _Atomic uint64_t bytes, objects, tick, time;
};
extern struct mrr_tl_peak g_tl_peak;
/* the recorder's own memory (tables, thread states, sites; not headers) */
extern _Atomic uint64_t g_rec_mem, g_rec_mem_peak;

extern pthread_mutex_t g_site_mu;
extern pthread_mutex_t g_merge_mu;
extern pthread_mutex_t g_list_mu;
extern pthread_mutex_t g_trace_mu;
extern pthread_mutex_t g_mod_mu;
extern uint64_t g_trace_events, g_trace_bytes; /* under g_trace_mu */

/* per thread */
extern TLS int tls_guard;                /* >0: pass through unrecorded */
extern TLS struct tstate *tls_ts;
extern TLS int tls_dead;                 /* the thread's state was merged and freed */

extern bool g_use_tsc;
extern uint64_t g_tsc_mult;                     /* ns = ticks * mult >> 32 */
extern int64_t g_fenced_cost;                   /* a fenced empty interval, on average */
extern int64_t g_timer_cost;                    /* a plain empty interval, the least seen */
extern int64_t g_plain_fenced_cost;             /* a plain read then a fenced one, on average */
extern int64_t g_fenced_plain_cost;             /* a fenced read then a plain one, on average */
extern int64_t g_clip, g_clip_page;             /* the longest sample kept, and per 4 KiB asked */

extern _Atomic uint32_t *g_slots;        /* hash -> site id */
extern uint64_t *g_gkeys;                /* group key -> ... (under g_site_mu) */
extern uint32_t *g_gsite;                /* ... the group's first site */
extern struct gsite **g_sites;           /* id -> site */
extern _Atomic uint32_t g_nsites;
extern struct tstate *g_threads;         /* under g_list_mu */
extern _Atomic uint64_t g_sites_dropped;

extern struct module *g_mods;            /* under g_mod_mu */
extern size_t g_nmods, g_capmods;

/* ---- small helpers ---- */

static inline uint64_t mix64(uint64_t x)
{
    return mra_mix64(x);
}

/* ---- time: rdtsc scaled to ns, or CLOCK_MONOTONIC (calibrated by clock.c) ---- */

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

/* A sampled hook's own parts: [t0, t1] from its plain first read to the
 * fenced read before glibc's call, and [t2, t3] from the fenced read after
 * it to its plain last read, each less what the same two reads with
 * nothing between them take on average (about 40 clock units each here,
 * where the least plain interval is 21).  What stays: a timed call shows
 * its latency, where the calls not timed overlap their cache misses with
 * the program (a sampled free of kat_trees 16 reads 411 clock units, 162
 * of them its stack walk, against 79 instructions a free on average), so
 * an allocation-bound program's hooks are overstated (docs/ADVISE.md, the
 * run's time).  d: t1 - t0 + t3 - t2. */
static inline int64_t timed_hook(int64_t d)
{
    d -= g_plain_fenced_cost + g_fenced_plain_cost;
    return d > 0 ? clip(d, 0) : 0;
}

/* glibc's part [t1, t2] between fenced reads, less their average cost
 * (negative for a call shorter than the average empty interval: the sums
 * are what count). */
static inline int64_t timed_fenced(uint64_t t1, uint64_t t2, uint64_t size)
{
    return clip((int64_t)(t2 - t1) - g_fenced_cost, size);
}

/* A sample of glibc longer than this (1 us, in clock units) took a
 * system call or a page fault. */
extern int64_t g_slow;

/* ---- the object header ---- */

struct hdr {
    uint64_t birth_time;  /* weight: 8 << 56 | now_time() at birth mod 2^56 */
    uint64_t size_misc;   /* size: 48 | realloc chain: 10 | log2 alignment: 6 */
    uint64_t tick_thread; /* birth tick mod 2^44 << 20 | thread index mod 2^20 */
    uint64_t tag_site;    /* tag: 32 (top bit set) << 32 | site */
};
_Static_assert(sizeof(struct hdr) == HDR, "32-byte header");

/* A sampled object's weight (the allocations it stands for, 1 when every
 * one is recorded) rides in the birth time's top byte: 2^56 clock units
 * are over 270 days at 3 GHz, and lifetimes are taken mod 2^56. */
#define BIRTH_BITS 56u
#define BIRTH_MASK ((UINT64_C(1) << BIRTH_BITS) - 1)
#define WEIGHT_MAX 255u

static inline uint64_t hdr_weight(const struct hdr *h)
{
    return h->birth_time >> BIRTH_BITS;
}

/* The time from birth b (the header's) to t, 0 where t is not after it
 * (another thread's clock read later). */
static inline uint64_t since_birth(uint64_t t, uint64_t b)
{
    uint64_t d = (t - b) & BIRTH_MASK;
    return d < (UINT64_C(1) << (BIRTH_BITS - 1)) ? d : 0;
}

/* Sampled (the recorder samples allocations: sample.c), an object has two
 * words before it, 16 bytes: the tag word, and
 *   - for an object the sampling passed over, site SITE_UNSAMPLED, and the
 *     size word; only the program's totals count it;
 *   - for an object recorded whole, its site with SITE_SIDE, and the index
 *     of its side record (side.c: the header's other words).
 * Both come from the same glibc bins: with the recorded objects' 32-byte
 * header in the object, their chunks were a size class of their own, its
 * bins cold, and the glibc time timed on them twice the run's (kat_churn:
 * 35.8 ms against 16.4 recording every allocation).  An aligned object,
 * and any object once the side records are used up, keeps the header in
 * the object. */
#define SITE_UNSAMPLED UINT32_MAX
#define SITE_SIDE 0x80000000u
#define UHDR 16u
#define SIDE_MAX (1u << 26)  /* side records: 2 GiB of address space, 32 bytes each */
extern struct hdr *g_side;
extern uint32_t g_side_max;        /* SIDE_MAX, or fewer (MEMRES_ADVISE_SIDE_MAX, for tests) */

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

/* The tag word of an object of the recorder. */
static inline uint64_t *tagw_of(void *p)
{
    return (uint64_t *)(void *)((char *)p - 8);
}

/* An unsampled object's size word, and its chunk (alignment 16 always;
 * also a side-recorded object's). */
static inline uint64_t *usize_of(void *p)
{
    return (uint64_t *)(void *)((char *)p - UHDR);
}

static inline void *uraw_of(void *p)
{
    return (char *)p - UHDR;
}

/* The header of a recorded object whose tag word has site field sf: its
 * side record or the 32 bytes before it (its tag_site unused in a side
 * record: the tag is the object's); and its chunk. */
static inline struct hdr *obj_hdr(void *p, uint32_t sf)
{
    if (sf & SITE_SIDE)
        return &g_side[(uint32_t)*usize_of(p)];
    return hdr_of(p);
}

static inline void *obj_raw(void *p, uint32_t sf, const struct hdr *h)
{
    return (sf & SITE_SIDE) ? uraw_of(p) : raw_of(p, h);
}

/* The main heap's end, as glibc's brk wrapper keeps it (glibc exports it
 * since 2.2.5): compared around glibc's calls, it tells a trim or a
 * growth (heap.c). */
extern void *__curbrk __attribute__((visibility("default"))); /* libc's, not hidden */
static inline uintptr_t heap_end(void)
{
    return (uintptr_t)__curbrk;
}

/* The size word of raw's glibc chunk: the size, flags in the low 3 bits
 * (2: mmapped for this one allocation). */
static inline uint64_t chunk_word(const void *raw)
{
    uint64_t sz;
    memcpy(&sz, (const char *)raw - 8, 8);
    return sz;
}

/* The size of raw's glibc chunk where glibc mmapped it for this one
 * allocation, else 0. */
static inline size_t mmapped_chunk(const void *raw)
{
    uint64_t sz = chunk_word(raw);
    return (sz & 2u) ? (size_t)(sz & ~(uint64_t)7) : 0;
}

static inline size_t glibc_usable(void *raw)
{
    if (g_usable)
        return g_usable(raw);
    /* glibc 2.36 musable(): chunk size minus its overhead */
    uint64_t sz = chunk_word(raw);
    size_t cs = (size_t)(sz & ~(uint64_t)7);
    return (sz & 2u) ? cs - 16u : cs - 8u;
}

/* ---- per-thread and per-site state ---- */

/* One thread's figures for one site: the fields of struct mra_site_stats
 * it adds up, the eight that every allocation and free counts first (one
 * cache line: the size range and the first tick change only with a new
 * size or on the first allocation). */
struct lstats {
    uint64_t allocations, bytes, last_tick, frees, freed_bytes, lifetime_ticks_sum, lifetime_ns_sum;
    uint64_t stack_like;
    uint64_t stack_judged;       /* sampled: the frees that tell (record.c's ring_free) */
    uint64_t together_judged, together_unjudged; /* sampled: the frees of the bursts that tell, and
                                    of those that do not (record.c's mrr_burst_end) */
    uint64_t win_stack_frees, win_stack_like;  /* sampled, in exact windows: frees judged as
                                    recording every allocation would, and the stack-like ones */
    uint64_t win_together_frees, win_together; /* ... the frees of bursts so judged, and
                                    of the bursts freed together */
    uint64_t min_size, max_size, first_tick;
    uint64_t freed_together, remote_frees, aligned;
    uint64_t reallocs, realloc_moves, realloc_chain_max;
    int64_t glibc_time;          /* sampled time in glibc for the site's objects (clock units, weighed) */
    uint64_t glibc_samples;
    int64_t glibc_slow_time;     /* of it, the samples above g_slow */
    uint32_t nfree_sites;        /* the stacks of sampled frees (format.h) */
    uint32_t free_sites[MRA_FREE_SITES];
    uint64_t free_site_counts[MRA_FREE_SITES];
    uint64_t hist_ticks[MRA_HIST];
    uint64_t hist_ns[MRA_HIST];
};

/* Laid out for the cache: a thread's lsite is 64-byte aligned (carved
 * from the thread's chunks: threads.c), its first line holds what every
 * allocation and free reads (the group's ring head and burst, the most
 * frequent size), the ring its own line, the counters of s the first line
 * of s; with thousands of sites (a recursion's stacks) each line is a
 * likely cache miss. */
struct lsite {
    struct lsite *grp;           /* this thread's lsite of the site's group (itself, or
                                    the group's first site): its ring and bursts */
    uint32_t nsz, rcount;        /* sizes in sz; live births in ring */
    uint32_t rhead, burst_n;     /* the ring's oldest; frees in the thread's current burst
                                    (sampled: the frees its recorded ones stand for) */
    uint32_t burst_epoch;        /* the burst's number (0: none) */
    uint16_t counted;            /* counted in alloc_threads */
    uint16_t burst_recs;         /* sampled: recorded frees in the burst (saturating) */
    uint64_t rlast_pop;          /* the birth the ring gave last */
    uint64_t burst_min;          /* the oldest birth freed in the thread's current burst */
    struct mra_size_count sz[LSIZES]; /* the first in line 0 */
    uint64_t rlost;              /* births pushed off the ring, still live */
    uint64_t tr_last_size;       /* trace: the last ALLOC size at this site */
    uint64_t sz_other;
    uint32_t sz_overflow;
    _Alignas(64) uint64_t ring[RING]; /* births of this thread's recent live objects */
    _Alignas(64) struct lstats s;
};
_Static_assert(offsetof(struct lsite, sz) + sizeof(struct mra_size_count) <= 64, "sz[0] in line 0");
_Static_assert(sizeof(struct lsite) % 64 == 0, "lsite: whole cache lines");

/* The stack cache (record.c's stack_site): an allocation's stack seen
 * before is known again from its return addresses read where the last walk
 * from the same first frame and CFA found them, compared whole -- no
 * frame-size look-up, no hash of 64 bits.  A shape: for a first return
 * address and CFA, the frame sizes of a walk from there; a set: stacks
 * read with some shape, and their sites. */
#define SK_FRAMES 8u      /* stacks of up to 8 frames (--depth 4 and the folding's 4) */
#define SK_SHAPE_BITS 6u  /* 2^6 sets of SK_SHAPE_WAYS shapes */
#define SK_SHAPE_WAYS 4u
#define SK_SET_BITS 7u    /* 2^7 sets of SK_WAYS stacks */
#define SK_WAYS 8u
struct sk_shape {
    uint64_t ra, cfa;            /* the first return address (0: empty), the CFA below it */
    uint64_t sig;                /* frames: 4 | 4 | size / 8 of frames 0..6: 8 each */
    uint16_t off[SK_FRAMES];     /* frame i's return address at CFA + off[i] (i >= 1) */
};
struct sk_set {
    uint32_t tag[SK_WAYS];       /* bits of the stack's hash, never 0 (0: empty) */
    uint32_t site[SK_WAYS];
    uint64_t sig[SK_WAYS];       /* the shape it was read with */
    uint64_t ra[SK_WAYS][SK_FRAMES]; /* the return addresses */
};
/* tag and site one cache line, sig one, each way's stack one */
_Static_assert(sizeof(struct sk_set) % 64 == 0, "sk_set: whole cache lines");

struct tstate {
    uint32_t index;
    uint32_t burst_epoch, nburst; /* the current burst of frees: its number, its sites */
    uint32_t burst_sites[BURST_SITES];
    uint32_t samp_left, samp_gap; /* events to the next timed one, of a gap of */
    uint32_t samp_rng;
    uint32_t rec_hooks;          /* sampled: recorded hooks since the last timed one */
    uint32_t u_left, u_gap;      /* sampled: unsampled hooks to the next timed one, of a gap of */
    uint64_t all_allocs, all_bytes, all_frees, all_reallocs; /* sampled: every object's (g_all_*) */
    uint32_t side_free, side_nfree; /* sampled: the thread's free side records (side.c) */
    uint32_t win_left;           /* sampled: allocations to the window's next turn (sample.c) */
    bool in_win;                 /* ... in an exact window: every allocation recorded */
    bool burst_unrec;            /* ... an object not recorded was freed in the current burst */
    uint64_t win_tick;           /* ... the window's first allocation tick */
    uint64_t alloc_left;         /* sampling: bytes to the next sampled allocation (0: this one) */
    uint64_t alloc_rng;
    int64_t hook_time;           /* the recorder's own time in hooks, sampled (clock units) */
    uint64_t tick_next, tick_end, last_tick;
    struct sc_ent { uint64_t hash; uint64_t site; } sc[SC_SIZE]; /* hash -> site (frames_hash) */
    struct lsite **ls;
    uint32_t lcap;
    char *lmem, *lend;           /* the free part of the last of the lsites' chunks */
    void *lchunks;               /* the lsites' chunks (threads.c), a list */
    size_t lchunk_next;          /* the size of the next */
    int rounds;
    struct tstate *next, *prev;
    uint8_t *tbuf;
    uint32_t tlen, tev;
    uint64_t tr_prev_tick;       /* trace: the decoder's last_tick */
    uint64_t t_cur, t_step, t_last; /* the interpolated clock (thread_time) */
    uint32_t t_left, t_period;   /* events to the next clock read, of a period of */
    uint32_t t_warm;             /* events still read one by one at the thread's start */
    struct mra_walker walk;      /* the stack walk's state (common/walk.h) */
    uint32_t sk_epoch;           /* the frame sizes' epoch the stack cache holds */
    uint32_t sk_shape_next[1u << SK_SHAPE_BITS]; /* the way a new shape replaces */
    struct sk_shape sk_shape[1u << SK_SHAPE_BITS][SK_SHAPE_WAYS];
    uint8_t sk_next[1u << SK_SET_BITS]; /* the way of a set the next stack learnt replaces */
    _Alignas(64) struct sk_set sk[1u << SK_SET_BITS];
};

/* The time of an event: the clock (rdtsc: about 30 ns on this project's
 * virtual machines, clock_gettime: 70) is read at every TIME_EVERY-th event
 * of the thread and interpolated between, at the pace of the last period;
 * never going back on one thread.  Where the thread's events came a
 * microsecond apart or more, at every event (the read then costs at most
 * 3% of the time between): a thread that allocates, waits and frees would
 * have its waits spread evenly over its events (a 4 ms life read as
 * 1.2 ms: tests/lifetimes.c), until TIME_EVERY events in a row came
 * faster; and at every one of a thread's first TIME_EVERY, whose pace is
 * not known yet.
 * (Under valgrind every thread is that slow: build with -DMRR_PACE_FIXED
 * for instruction counts of the path a native run takes.) */
#define TIME_EVERY 16u
_Static_assert((TIME_EVERY & (TIME_EVERY - 1)) == 0, "TIME_EVERY: a power of two");
static inline uint64_t thread_time(struct tstate *ts)
{
    if (LIKELY(--ts->t_left != 0)) {
        ts->t_cur += ts->t_step;
        return ts->t_cur;
    }
    uint64_t now = now_time();
    /* the period is 1 or TIME_EVERY, a power of two: a shift, not a division */
    ts->t_step = now > ts->t_last ? (now - ts->t_last) >> __builtin_ctz(ts->t_period) : 0;
#ifdef MRR_PACE_FIXED
    ts->t_period = TIME_EVERY;
#else
    if ((int64_t)ts->t_step >= g_slow)
        ts->t_warm = TIME_EVERY; /* the next 16 read one by one */
    ts->t_period = ts->t_warm != 0 ? 1u : TIME_EVERY;
    if (ts->t_warm != 0)
        ts->t_warm--;
#endif
    ts->t_last = now;
    ts->t_left = ts->t_period;
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
static inline uint32_t sample_gap(struct tstate *ts)
{
    ts->samp_rng ^= ts->samp_rng << 13;
    ts->samp_rng ^= ts->samp_rng >> 17;
    ts->samp_rng ^= ts->samp_rng << 5;
    return SAMPLE_EVERY / 2 + 1 + (ts->samp_rng % SAMPLE_EVERY);
}

static inline uint32_t sample_now(struct tstate *ts)
{
    if (LIKELY(--ts->samp_left != 0))
        return 0;
    uint32_t w = ts->samp_gap;
    ts->samp_gap = ts->samp_left = sample_gap(ts);
    return w;
}

/* Sampled recording (sample.c) times its two kinds of hooks apart.  A
 * recorded allocation or free stands for wt calls: the countdown goes by
 * wt, so that a timed one stands for about SAMPLE_EVERY calls (the calls
 * since the last, returned; 0: not timed), its glibc time weighed by
 * them, and its hook's own time by the recorded hooks since the last
 * timed one (*hooks).  The hooks of the objects not sampled have their
 * own countdown (unsampled_timed: record.c). */
static inline uint32_t sample_rec(struct tstate *ts, uint32_t wt, uint32_t *hooks)
{
    ts->rec_hooks++;
    if (LIKELY(wt < ts->samp_left)) {
        ts->samp_left -= wt;
        return 0;
    }
    uint32_t w = ts->samp_gap + (wt - ts->samp_left);
    ts->samp_gap = ts->samp_left = sample_gap(ts);
    *hooks = ts->rec_hooks;
    ts->rec_hooks = 0;
    return w;
}

static inline bool unsampled_timed(struct tstate *ts)
{
    return UNLIKELY(--ts->u_left == 0);
}

struct gmerged {                 /* merged figures, under g_merge_mu */
    struct mra_site_stats m;
    uint64_t heap_given, heap_retaken; /* heap.c's, under its mutex */
    uint64_t stack_judged, together_judged, together_unjudged; /* sampled: lstats' merged */
    uint64_t win_stack_frees, win_stack_like, win_together_frees, win_together;
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

static inline size_t gsite_bytes(void)
{
    return (sizeof(struct gsite) + g_depth * sizeof(uint64_t) + 63u) & ~(size_t)63;
}

/* counters: plain loads and stores until a second thread records */
static inline uint64_t cnt_add(_Atomic uint64_t *a, uint64_t d)
{
    return mra_cnt_add(a, d, &g_multi);
}

static inline void cnt_max(_Atomic uint64_t *a, uint64_t v)
{
    mra_cnt_max(a, v, &g_multi);
}

static inline void lsite_reset(struct lsite *l)
{
    memset(&l->s, 0, sizeof l->s);
    l->s.min_size = UINT64_MAX;
    memset(l->sz, 0, sizeof l->sz);
    l->nsz = l->sz_overflow = 0;
    l->sz_other = 0;
}

struct module {
    uint64_t bias, lo, hi;
    char *path;
    uint32_t len;
};

/* Whether this call is recorded: recording, and not the recorder's own. */
static inline bool recording(void)
{
    return LIKELY(atomic_load_explicit(&g_state, memory_order_relaxed) == ST_REC) && !tls_guard;
}

/* ---- the functions of the other files ---- */

/* state.c: the recorder's own memory */
void mrr_rec_mem_add(int64_t d);
void *mrr_imalloc(size_t n);             /* zeroed, counted */
void *mrr_imalloc_lines(size_t n);       /* the same, 64-byte aligned */
void mrr_ifree(void *p, size_t n);
void *mrr_imap(size_t n);                /* zeroed pages, NULL on failure */
void *mrr_imap_populated(size_t n);      /* the same, faulted in by one system call */
uint64_t mrr_resident(const void *p, size_t n);
/* clock.c */
void mrr_clock_calibrate(void);
void mrr_timer_calibrate(void);
/* modules.c (the callers hold no lock) */
void mrr_modules_note(const uint64_t *fr, unsigned nf);
int mrr_phdr_cb(struct dl_phdr_info *info, size_t size, void *arg);
/* sites.c */
/* free_stack: the stack of a free (hashed apart from the allocation
 * sites', in no group). */
COLD uint32_t mrr_site_create(const uint64_t *fr, unsigned n, uint64_t h, bool free_stack);
/* threads.c */
size_t mrr_tstate_bytes(void);
COLD struct tstate *mrr_thread_register(void);
COLD struct lsite *mrr_lsite_slow(struct tstate *ts, uint32_t site);
void mrr_thread_release(struct tstate *ts);
/* sample.c: the bytes to a thread's next sampled allocation; the weight of
 * one of `size` bytes (rounded to 16), an integer in 1..WEIGHT_MAX */
uint64_t mrr_sample_gap(struct tstate *ts);
uint64_t mrr_sample_weight(struct tstate *ts, uint64_t size);
/* side.c: the side records mapped; one taken (0: none left), one given
 * back (ts NULL: the thread's state is gone); a released thread's given
 * to the others */
void mrr_side_start(void);
uint32_t mrr_side_get(struct tstate *ts);
void mrr_side_put(struct tstate *ts, uint32_t i);
void mrr_side_release(struct tstate *ts);
/* sample.c: a thread's exact windows, turned at the end of win_left */
#define SAMPLE_WIN 4096u         /* allocations recorded whole in a window */
#define SAMPLE_PERIOD 131072u    /* one window per this many allocations */
void mrr_window_turn(struct tstate *ts);
/* trace.c */
void mrr_trace_open(void);
void mrr_write_all(int fd, const void *buf, size_t n);
COLD void mrr_tr_flush(struct tstate *ts);
/* record.c */
NOINLINE void mrr_burst_end(struct tstate *ts);
/* recording every allocation, and sampled (start.c: g_sampling) */
NOINLINE void *mrr_rec_alloc(size_t n, size_t align, bool zero, uintptr_t ra, uintptr_t cfa);
NOINLINE void *mrr_rec_alloc_sampled(size_t n, size_t align, bool zero, uintptr_t ra, uintptr_t cfa);
NOINLINE void mrr_rec_free(void *p, struct hdr *h, uint32_t sf, void *raw, uintptr_t ra, uintptr_t cfa);
NOINLINE void mrr_rec_free_sampled(void *p, struct hdr *h, uint32_t sf, void *raw, uintptr_t ra, uintptr_t cfa);
COLD void mrr_free_watched(uint32_t site, void *raw, uint64_t sz);
NOINLINE void *mrr_unsampled_timed(struct tstate *ts, size_t n, bool zero);
NOINLINE void mrr_unsampled_free_timed(struct tstate *ts, void *raw, uint64_t n);
NOINLINE void *mrr_unsampled_realloc(void *p, size_t n);
/* merge.c */
void mrr_merge_thread(struct tstate *ts);
void mrr_thread_exit(void *arg);
void mrr_flush_all(bool closing);
/* profile_out.c */
void mrr_write_profile(uint64_t end_ns);

/* heap.c: a glibc call for site's object (0: no site) lowered the heap's
 * end from before to after (a trim), or unmapped a chunk of `bytes` that
 * glibc had mapped for it; the heap's end at start-up; the heap section
 * written */
COLD void mrr_heap_trimmed(uint32_t site, uintptr_t before, uintptr_t after);
COLD void mrr_heap_unmapped(uint32_t site, size_t bytes);
void mrr_heap_start(void);
/* At exit, before and after what the recorder itself allocates: the heap's
 * growth so far counted, and what it grows by in between not. */
void mrr_heap_settle(void);
void mrr_heap_skip(void);
/* speed.c: the speed probe (format.h), at start-up or at exit, and its figures. */
void mrr_speed_probe(bool at_exit);
void mrr_speed_get(struct mra_speed *out);
void mrr_heap_write(void (*put)(void *, const void *, size_t), void *ctx, uint32_t nsites);
/* timeline.c: started after the clocks' calibration; a point offered at a
 * timed sample's time t (clock units); the section written through put */
void mrr_tl_start(void);
NOINLINE void mrr_tl_sample(const struct tstate *ts, uint64_t t);
NOINLINE void mrr_tl_peak_multi(uint64_t bytes, uint64_t tick, uint64_t time);
void mrr_tl_write(void (*put)(void *, const void *, size_t), void *ctx, uint64_t end_ns, uint64_t peak_bytes,
                  uint64_t live_bytes, uint64_t live_objects, uint64_t ticks);

#pragma GCC visibility pop

#endif
