/* SPDX-License-Identifier: MIT */
/* advise/common/format.h -- what the recorder (libmemres-advise-recorder.so,
 * advise/record/) hands to memres-advise: the profile, written once when
 * the profiled process exits, and the optional trace, the compact event
 * stream that `memres-advise replay` replays.  Both are native-endian files
 * read back on the machine that wrote them.
 *
 * Environment the driver sets for the recorder (and the recorder removes
 * from the process's environment at start-up, so that only the process
 * started is profiled, not what it execs):
 *   MEMRES_ADVISE_PROFILE   path of the profile to write at exit (required:
 *                           without it the recorder passes calls through)
 *   MEMRES_ADVISE_DEPTH     frames to record per site (the driver passes
 *                           --depth + MRA_FOLD_EXTRA, for folding)
 *   MEMRES_ADVISE_TRACE     path of the trace to write (optional)
 *   MEMRES_ADVISE_SAMPLE    record one allocation per this many bytes on
 *                           average (16..4032; optional, not with a trace)
 *   MEMRES_ADVISE_SIDE_MAX  sampled, the side records to use, fewer than the
 *                           recorder's own limit (for tests: record/side.c)
 *   MEMRES_ADVISE_PRELOAD   LD_PRELOAD as it was before the driver added the
 *                           recorder, when it was set (absent: LD_PRELOAD was
 *                           unset): restored at start-up
 */
#ifndef MEMRES_ADVISE_FORMAT_H
#define MEMRES_ADVISE_FORMAT_H

#include <stdint.h>

/* ---- the profile ---- */

#define MRA_PROFILE_MAGIC "MRADVPF1" /* 8 bytes, no NUL in the file */
#define MRA_PROFILE_VERSION 7u
#define MRA_PROFILE_VERSION_MIN 4u /* the oldest read: version 4 has no timeline section */
#define MRA_MAX_DEPTH 64u     /* frames per site, at most */
#define MRA_FOLD_EXTRA 4u     /* frames recorded beyond --depth, for folding wrappers */
#define MRA_HIST 48u          /* log2 buckets: 0 holds 0, b >= 1 holds [2^(b-1), 2^b) */
#define MRA_SIZES 8u          /* the most frequent sizes kept per site */
#define MRA_FREE_SITES 4u     /* the stacks a site's objects are freed from, kept per site */

/* The file: struct mra_profile_header, then nmodules module records, then
 * nsites site records, then (version 5 on) the timeline section, then
 * (version 6 on) the heap section, then (version 7 on) the speed section. */
struct mra_profile_header {
    char magic[8];
    uint32_t version;
    uint32_t depth;              /* frame slots per site record */
    uint64_t pid;
    uint64_t start_ns, end_ns;   /* CLOCK_MONOTONIC: recorder start, exit */
    uint64_t allocations;        /* successful allocations (realloc(NULL, n) counts; a moving realloc does not) */
    uint64_t frees;              /* frees of recorded objects (free(NULL) does not count) */
    uint64_t reallocs;           /* realloc calls on a recorded object */
    uint64_t bytes;              /* bytes requested by those allocations */
    uint64_t peak_live_bytes;    /* highest sum of live requested bytes */
    uint64_t peak_live_objects;
    uint64_t live_bytes_at_exit, live_objects_at_exit;
    uint64_t foreign_frees;      /* frees of pointers the recorder did not make (passed to glibc) */
    uint64_t threads;            /* threads that allocated or freed */
    uint64_t ticks;              /* the allocation clock at exit (one tick per allocation) */
    uint64_t recorder_peak_bytes; /* the recorder's own memory at its peak, headers of live objects included */
    uint64_t nmodules, nsites;
    uint64_t trace_events;       /* events written to the trace (0 without one) */
    uint64_t trace_bytes;
    uint64_t recorder_ns;        /* the recorder's own time in its hooks (sampled, all
                                    threads): the program alone ran about cpu_ns - this */
    uint64_t cpu_ns;             /* the process's CPU time (user + system, every thread) when
                                    the profile was written, less the speed probes' (version
                                    7); 0: not known (then end - start) */
    char program[256];           /* /proc/self/exe, NUL-terminated */
};

/* A loaded module (dl_iterate_phdr at exit, plus every module seen at a
 * dlopen, so that dlclosed ones resolve too): addresses in [lo, hi) belong
 * to it, at load bias `bias` (file address = address - bias). */
struct mra_module {
    uint64_t bias, lo, hi;
    uint32_t path_len;           /* then path_len bytes of path, no NUL */
    uint32_t reserved;
};

/* Per site (one distinct call stack of `depth` raw frames). */
struct mra_size_count {
    uint64_t size, count;
};

struct mra_site_stats {
    uint32_t id;                 /* the site's number in the trace */
    uint32_t nframes;            /* frames recorded, <= depth */
    uint64_t allocations, frees, bytes, freed_bytes;
    uint64_t live_objects, live_bytes;           /* at exit: never freed */
    uint64_t peak_live_objects, peak_live_bytes; /* the site's own peak */
    uint64_t arena_peak_bytes;   /* the most bytes the site allocated between two moments
                                    its live count was 0: what an arena of the site, reset
                                    at those moments, would hold */
    uint64_t min_size, max_size;
    uint32_t nsizes;             /* entries used in sizes[] */
    uint32_t sizes_overflow;     /* 1: more distinct sizes than MRA_SIZES were seen */
    struct mra_size_count sizes[MRA_SIZES]; /* most frequent first */
    uint64_t other_sizes_count;  /* allocations whose size is not in sizes[] */
    uint64_t lifetime_ticks_sum, lifetime_ns_sum; /* over frees */
    uint64_t hist_ticks[MRA_HIST];  /* lifetimes on the allocation clock */
    uint64_t hist_ns[MRA_HIST];     /* lifetimes in ns */
    uint64_t freed_together;     /* frees in bursts (two or more frees of the site on one
                                    thread, no allocation of that thread between; frees of
                                    other sites may be in it) after which no object of the
                                    site's group younger than the burst's oldest is live on
                                    that thread: what an arena reset frees (counted on the
                                    group's first site) */
    uint64_t stack_like;         /* frees of the youngest live object (on the freeing
                                    thread) of the site's group: the sites whose stacks
                                    hold the same return addresses, in any order and
                                    repetition (a recursion's paths) */
    uint64_t remote_frees;       /* freed by another thread than the allocating one */
    uint64_t reallocs;           /* realloc calls on the site's objects */
    uint64_t realloc_moves;      /* of which the object moved */
    uint64_t realloc_chain_max;  /* most reallocs of one object */
    uint64_t aligned;            /* allocations with an alignment above 16 */
    uint64_t alloc_threads;      /* distinct threads that allocated at the site (capped count) */
    uint64_t first_tick, last_tick; /* ticks of its first and last allocation */
    uint64_t glibc_ns;           /* time in glibc's malloc, realloc and free for the site's
                                    objects, estimated from timed samples (about one call
                                    in 64, rdtsc between fences, each weighed by its gap) */
    uint64_t glibc_samples;      /* the timed calls it is estimated from */
    uint64_t glibc_slow_ns;      /* of glibc_ns, the samples above 1 us (a page fault, an
                                    mmap, a trim: what moving the allocations to memres
                                    moves with them, unless the site's memory is reused) */
    uint32_t free_stack;         /* 1: no allocation site but the call stack of sampled
                                    frees (another site's free_sites name it) */
    uint32_t nfree_sites;        /* entries used in free_sites */
    uint32_t free_sites[MRA_FREE_SITES]; /* the stacks the site's objects were freed from
                                    (free_stack sites), sampled with the timed calls and
                                    weighed by their gaps; the most frequent kept */
    uint64_t free_site_counts[MRA_FREE_SITES];
};

/* A site record: the stats, then depth uint64_t frames (return addresses
 * minus 1, innermost first: frames[0] is in the caller of malloc; unused
 * slots 0). */

/* The timeline section: the program's live requested bytes over the run,
 * a struct mra_timeline_header and npoints points in order of time (and of
 * allocations: neither goes back), at most MRA_TIMELINE_MAX of them:
 *   - the first is the recorder's start (all 0), the last its end (the
 *     header's live_*_at_exit, time end_ns - start_ns);
 *   - between them, the points sampled during the run: one per interval of
 *     interval_ns at most (the first timed sample of a thread, about one
 *     hook in 64, in each interval), the interval doubled and every other
 *     point dropped whenever the buffer fills, so that a run of any length
 *     gives points spread evenly over it;
 *   - the point `peak`, kept apart from the decimation: live_bytes there is
 *     the header's peak_live_bytes exactly, time and allocations those of
 *     the allocation (or growing realloc) that reached it.  With several
 *     threads the figures are those the recorder's counters read (the
 *     allocation count to within a thread's batch of ticks, the time of
 *     the peak within the neighbouring points'). */
#define MRA_TIMELINE_MAX 1024u

struct mra_timeline_header {
    uint32_t npoints;            /* 2..MRA_TIMELINE_MAX */
    uint32_t peak;               /* index of the peak point */
    uint64_t interval_ns;        /* the sampling interval when the run ended */
};

struct mra_timeline_point {
    uint64_t time_ns;            /* since the header's start_ns (CLOCK_MONOTONIC) */
    uint64_t allocations;        /* on the allocation clock: allocations made so far */
    uint64_t live_bytes;         /* requested bytes of the recorded objects live */
    uint64_t live_objects;
};

/* The heap section: what glibc gave back to the system during the run and
 * took again -- pages the program then faults in a second time, which an
 * allocator that keeps its memory (or glibc with its trim and mmap
 * thresholds raised) would not.  Seen from the recorded calls: the main
 * heap's end (brk) lowered by a free or realloc (a trim) or raised by an
 * allocation or realloc, and chunks glibc mmapped for one allocation and
 * unmapped at its free.  Not seen: the heaps of glibc's other arenas
 * (threads' arenas trim with madvise), madvise inside the heap
 * (malloc_trim).  A struct mra_heap_header, then nsites struct
 * mra_heap_site, most re-taken bytes first. */
#define MRA_HEAP_SITES 16u       /* sites named in the section, at most */

struct mra_heap_header {
    uint64_t given_back_bytes;   /* trimmed off the heap's end, and mmapped chunks unmapped */
    uint64_t given_back_events;
    uint64_t retaken_bytes;      /* of the heap's growth and the mmapped chunks made, the
                                    bytes up to what was given back before and not yet
                                    taken again: memory the program touches a second time */
    uint64_t retaken_events;     /* growths and mmaps that took some of it */
    uint64_t grown_bytes;        /* all growth: the heap's end raised, mmapped chunks made */
    uint32_t nsites;             /* <= MRA_HEAP_SITES */
    uint32_t reserved;
};

struct mra_heap_site {
    uint32_t site;               /* the site's id (mra_site_stats.id) */
    uint32_t reserved;
    uint64_t given_back_bytes;   /* by its objects' frees and reallocs */
    uint64_t retaken_bytes;      /* by its allocations and reallocs */
};

/* The speed section: how fast the machine ran the recorded program, as the
 * calibration measures it (common/probe.h: glibc's 32-byte pair in random
 * order, ns of thread CPU time, the least of 3 runs of 2 ms), on the
 * program's own thread when the recorder started and when it wrote the
 * profile; 0 where a probe did not run.  The analysis takes the run's
 * timed figures and its time to the calibration's speed with them. */
struct mra_speed {
    double start_ns, exit_ns;
    uint64_t cost_ns;            /* the probes' own CPU time, taken off the header's cpu_ns */
    uint64_t sample_bytes;       /* 0: every allocation recorded; else allocations sampled,
                                    one per this many bytes on average, and each site's
                                    figures estimates (record/sample.c) */
};

/* ---- the trace ---- */

#define MRA_TRACE_MAGIC "MRADVTR1"
#define MRA_TRACE_VERSION 1u
#define MRA_TRACE_CHUNK 65536u   /* bytes of events a thread buffers before writing */

struct mra_trace_header {
    char magic[8];
    uint32_t version;
    uint32_t reserved;
    uint64_t pid;
};

/* Then chunks, each a struct mra_trace_chunk and nbytes of events of one
 * thread.  A thread's chunks are in the file in its order; chunks of
 * different threads interleave.  The decoder keeps per thread: last_tick
 * (starts at 0) and, per site, last_size (starts at 0). */
struct mra_trace_chunk {
    uint32_t thread;             /* the recorder's thread index */
    uint32_t nbytes;
    uint32_t nevents;
    uint32_t reserved;
};

/* Events are LEB128 varints; v & 3 says what v >> 2 is:
 *   0 ALLOC, same size as this thread's last allocation at this site:
 *     site = v >> 2; tick = ++last_tick
 *   1 ALLOC, new size: site = v >> 2; then varint size; tick = ++last_tick
 *   2 FREE of the object born at tick last_tick - unzigzag(v >> 2)
 *   3 CONTROL: sub = (v >> 2) & 7, arg = v >> 5:
 *     0 JUMP: last_tick = arg (this thread's next allocation is arg + 1)
 *     1 REALLOC of the object born at last_tick - unzigzag(arg): then varint
 *       new size; the object keeps its birth tick, site and identity
 *     2 ALIGNED ALLOC: alignment = arg; then varint site, varint size;
 *       tick = ++last_tick
 * The clock is global (ticks are unique across threads: a thread takes
 * them from a shared counter in batches), so a birth tick names an object
 * in any thread's stream; a FREE or REALLOC happens after its thread's
 * last_tick.  Replaying in order of ticks, events of one thread in their
 * order, reproduces the program's allocation order exactly for one thread
 * and to within a batch across threads. */
/* The plan: memres-advise appends, after the analysis of a run with
 * --trace, one chunk whose thread is MRA_TRACE_PLAN.  Its events are
 * varints: the number of entries, then per entry the raw site id (the
 * profile's mra_site_stats.id), the recommendation (enum mra_rec in
 * advise/analyze/analysis.h), flags (1: thread-safe pools), the report's site
 * number and the predicted saving in ns.  Raw sites without an entry stay
 * on malloc in the replay. */
#define MRA_TRACE_PLAN 0xffffffffu

enum { MRA_EV_ALLOC = 0, MRA_EV_ALLOC_SIZE = 1, MRA_EV_FREE = 2, MRA_EV_CONTROL = 3 };
enum { MRA_CTL_JUMP = 0, MRA_CTL_REALLOC = 1, MRA_CTL_ALIGNED = 2 };

static inline uint64_t mra_zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t mra_unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* Writes v at p (at most 10 bytes); returns the end. */
static inline uint8_t *mra_put_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* Reads a varint at *p before end into *v: 0, or -1 (truncated). */
static inline int mra_get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    uint64_t r = 0;
    for (unsigned shift = 0; *p < end && shift < 64; shift += 7) {
        uint8_t b = *(*p)++;
        r |= (uint64_t)(b & 0x7f) << shift;
        if (b < 0x80) {
            *v = r;
            return 0;
        }
    }
    return -1;
}

/* The log2 bucket of v. */
static inline unsigned mra_bucket(uint64_t v)
{
    unsigned b = v == 0 ? 0 : 64u - (unsigned)__builtin_clzll(v);
    return b < MRA_HIST ? b : MRA_HIST - 1;
}

#endif
