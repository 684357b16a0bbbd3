/* SPDX-License-Identifier: MIT */
/* memres/adaptors.h -- resources that wrap an upstream resource, for users'
 * own tests and tools: counting, a byte budget, fault injection, and a
 * checker that finds leaks, double frees and mismatched deallocations.
 *
 * Put them under your own code in your own tests, as SQLite's OOM loops and
 * Zig's FailingAllocator do:
 *
 *     your code -> mr_tracking -> mr_failing -> (default resource)
 *
 * and run it once for every failure point (fail_at = 1, 2, ... until a run
 * injects nothing), checking that each run fails cleanly and that
 * mr_tracking_outstanding() is 0 after your cleanup.  examples/oom_sweep/ is
 * that loop, written to be copied.
 *
 * Each adaptor is an object like the allocators (create / destroy /
 * resource / stats), and its mr_resource view can be the upstream of
 * anything, another adaptor included.  Requests pass through unchanged: the
 * pointer, size and alignment the caller sees are the upstream's.  None is
 * on a hot path (each call takes a lock), but none adds more than a few
 * dozen instructions and, for tracking, one hash-table probe.
 *
 * Common contract (every adaptor):
 *   - upstream NULL: mr_get_default_resource() as it is at create time.
 *   - The adaptor's own memory (its header, tracking's table) comes from
 *     the default resource as it is at create time, never through the
 *     upstream: an adaptor does not disturb what it measures, so a failing
 *     upstream numbers only your requests, a limit counts only your bytes,
 *     and mr_stats below show only what passed through.
 *   - size 0 passes through (the upstream returns a valid non-NULL pointer);
 *     alignment passes through (mr_allocate has rejected 0 and
 *     non-powers-of-two with EINVAL before any adaptor sees them).
 *   - Failure: NULL with errno = ENOMEM (or the upstream's errno), and the
 *     adaptor's figures are unchanged (a failed call is not counted, except
 *     in mr_failing_requests / mr_failing_failures, which count requests).
 *   - create fails with NULL and errno (ENOMEM: no memory for the header;
 *     EINVAL: bad options) and allocates nothing.  destroy(NULL) is a no-op.
 *   - The view (mr_<adaptor>_resource) lives as long as the adaptor and is
 *     equal only to itself (is_equal NULL: identity).
 *   - mr_stats (resource.h) of counting, limiting, failing and tracking:
 *       in_use = held   bytes outstanding through the adaptor (sizes as
 *                       requested: the adaptor cannot see the upstream's
 *                       rounding)
 *       peak_held       the most bytes outstanding at once
 *       allocations     successful allocations through the adaptor
 *       upstream_allocations    == allocations (every one is passed up)
 *       upstream_deallocations  deallocations passed upstream
 *
 * Thread-safety: every adaptor is thread-safe.  Any thread may allocate,
 * deallocate, read stats or counts and (tracking) report at any time; each
 * adaptor serialises them with its own mutex, which it holds while it calls
 * its upstream (so a limit or a fault rule is exact under concurrency, and
 * an upstream that is not thread-safe is serialised too).  The mutex is
 * never held while the violation handler runs.  create and destroy must not
 * run concurrently with any other call on the same adaptor.  Lock order:
 * an adaptor's lock before its upstream's; stacks have no cycles, so no
 * deadlock, but a violation handler or upstream must not call back into an
 * adaptor whose call is in progress on the same thread.
 */
#ifndef MEMRES_ADAPTORS_H
#define MEMRES_ADAPTORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "memres/resource.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- counting: bytes and calls through it ---- */

typedef struct mr_counting mr_counting;

/* A resource that passes every call to upstream (NULL: the default
 * resource) and counts it.  NULL with errno = ENOMEM when the header cannot
 * be allocated. */
MR_API mr_counting *mr_counting_create(mr_resource *upstream);

/* Frees the adaptor.  Allocations still outstanding are not touched: they
 * remain the upstream's, and may be deallocated there directly (with the
 * same size and alignment).  NULL: no-op. */
MR_API void mr_counting_destroy(mr_counting *c);

/* The adaptor as an mr_resource (valid until destroy; thread-safe).
 * A deallocate of more bytes than are outstanding, or with none
 * outstanding, is misuse: reported in debug builds (mr_set_violation_handler)
 * and, in every build, ignored (not passed upstream). */
MR_API mr_resource *mr_counting_resource(mr_counting *c);

/* Fills *out with the figures in the common contract above (a consistent
 * snapshot).  O(1). */
MR_API void mr_counting_stats(const mr_counting *c, mr_stats *out);

/* ---- limiting: a byte budget ---- */

typedef struct mr_limiting mr_limiting;

/* A counting resource with a budget: a request of size bytes fails with
 * NULL, errno = ENOMEM, without calling upstream and changing nothing, when
 * it would take the bytes outstanding above limit (in_use + size > limit).
 * Exactly limit bytes outstanding is allowed; after a deallocation the room
 * is there again.  limit is taken literally: 0 allows only size-0 requests,
 * SIZE_MAX is no budget.  Sizes are counted as requested (the upstream's
 * rounding is invisible here).  upstream NULL: the default resource.
 * NULL with errno = ENOMEM when the header cannot be allocated. */
MR_API mr_limiting *mr_limiting_create(mr_resource *upstream, size_t limit);

/* As mr_counting_destroy.  NULL: no-op. */
MR_API void mr_limiting_destroy(mr_limiting *l);

/* The adaptor as an mr_resource (valid until destroy; thread-safe).
 * Deallocate misuse as for mr_counting_resource. */
MR_API mr_resource *mr_limiting_resource(mr_limiting *l);

/* As mr_counting_stats; refused requests are not counted anywhere. */
MR_API void mr_limiting_stats(const mr_limiting *l, mr_stats *out);

/* ---- failing: fault injection (SQLite's and Zig's failing allocators) ----
 *
 * Every allocate call through the adaptor is a request, numbered from 1.
 * Request n fails (NULL, errno = ENOMEM, upstream not called) when any rule
 * holds:
 *   fail_at != 0 and n == fail_at, or n > fail_at with persistent;
 *   every != 0 and n is a multiple of every;
 *   probability > 0 and the n-th draw u_n < probability (below);
 *   above != 0 and the request's size > above.
 * All other requests go to upstream (and may fail there: those are not
 * counted as injected).  Deallocations always go to upstream.
 *
 * The random rule is deterministic, so a run replays from its seed: with
 * probability > 0, request n (whatever the other rules decide) draws
 *     x_n = splitmix64 output number n from state seed
 *           (s += 0x9e3779b97f4a7c15; z = s;
 *            z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9;
 *            z = (z ^ (z >> 27)) * 0x94d049bb133111eb;  x = z ^ (z >> 31))
 *     u_n = (x_n >> 11) * 2^-53            (uniform in [0, 1))
 * probability 1 fails every request, 0 none. */
typedef struct mr_failing_options {
    mr_resource  *upstream;      /* NULL: default resource */
    unsigned long fail_at;       /* fail the fail_at-th request (1-based); 0: never */
    bool          persistent;    /* with fail_at: also fail every request after it */
    unsigned long every;         /* fail every every-th request; 0: never */
    double        probability;   /* fail at random with this probability ... */
    unsigned long seed;          /* ... from this seed (reproducible) */
    size_t        above;         /* fail requests larger than this; 0: no size rule */
} mr_failing_options;

typedef struct mr_failing mr_failing;

/* Creates a failing resource with the rules in *opts (NULL: all zero, a
 * plain pass-through that fails nothing).  NULL with errno = EINVAL when
 * probability is not in [0, 1] (NaN included) or persistent is set without
 * fail_at; ENOMEM when the header cannot be allocated. */
MR_API mr_failing *mr_failing_create(const mr_failing_options *opts);

/* As mr_counting_destroy.  NULL: no-op. */
MR_API void mr_failing_destroy(mr_failing *f);

/* The adaptor as an mr_resource (valid until destroy; thread-safe: request
 * numbers are taken in lock order).  Deallocate misuse as for
 * mr_counting_resource. */
MR_API mr_resource *mr_failing_resource(mr_failing *f);

/* Allocate calls seen so far (requests), and of them those failed on
 * purpose by a rule above.  A run whose failures() is 0 injected nothing:
 * the end of a sweep over fail_at. */
MR_API unsigned long mr_failing_requests(const mr_failing *f);
MR_API unsigned long mr_failing_failures(const mr_failing *f);

/* As mr_counting_stats: what passed through (injected failures are not
 * allocations). */
MR_API void mr_failing_stats(const mr_failing *f, mr_stats *out);

/* ---- tracking: every outstanding allocation, checked on deallocate ----
 *
 * The adaptor records every allocation it passes through (pointer, size,
 * alignment and a sequence number: the n-th successful allocation is #n)
 * and checks every deallocate against the record.  Misuse is reported
 * through the violation handler (mr_set_violation_handler in resource.h) in
 * EVERY build, release included -- that is what the adaptor is for.  The
 * handler gets the pointer and a message that begins with one of the kinds
 * below, then ": " and the details (sizes, alignments, sequence number):
 *     "mr_tracking: double free: allocation #3 (24 bytes, align 8) was already freed"
 * A handler that returns lets the program go on: the bad deallocate is
 * ignored (not passed upstream; an allocation it named stays outstanding).
 * The default handler prints the message and aborts.
 *
 * A freed pointer is remembered, so that freeing it again is reported as a
 * double free, until its address is handed out again or the table, half
 * full and mostly of freed records, is rebuilt without them; a second free
 * after that is reported as an unknown pointer (a violation all the same).
 * Duplicate pointers from an upstream (an arena returns the same address
 * for consecutive size-0 requests) are tracked as separate allocations. */
#define MR_TRACKING_LEAK                "mr_tracking: leak"
#define MR_TRACKING_DOUBLE_FREE         "mr_tracking: double free"
#define MR_TRACKING_UNKNOWN_POINTER     "mr_tracking: unknown pointer"
#define MR_TRACKING_SIZE_MISMATCH       "mr_tracking: size mismatch"
#define MR_TRACKING_ALIGN_MISMATCH      "mr_tracking: alignment mismatch"
#define MR_TRACKING_SIZE_ALIGN_MISMATCH "mr_tracking: size and alignment mismatch"

typedef struct mr_tracking mr_tracking;

/* Creates a tracking resource over upstream (NULL: the default resource).
 * The record table (32 bytes a slot on 64-bit, kept at most half full,
 * doubling from 64 slots; at most 8 slots per allocation outstanding at
 * the peak, never shrunk) is taken at the first allocation, from the
 * default resource as it is now, not from upstream.
 * NULL with errno = ENOMEM when the header cannot be allocated. */
MR_API mr_tracking *mr_tracking_create(mr_resource *upstream);

/* Reports every allocation still outstanding as a leak -- one violation per
 * leaked allocation, in sequence order, message MR_TRACKING_LEAK ": ...",
 * pointer = the leaked pointer -- then deallocates each upstream (with its
 * recorded size and alignment) and frees the adaptor.  With the default
 * handler the first leak aborts; call mr_tracking_report first to see them
 * all.  NULL: no-op. */
MR_API void mr_tracking_destroy(mr_tracking *t);

/* The adaptor as an mr_resource (valid until destroy; thread-safe).
 * allocate: when the table must grow and cannot, NULL with errno = ENOMEM
 * before the upstream is called, nothing changed.  deallocate: checked as
 * above, passed upstream only when it names an outstanding allocation with
 * exactly its size and alignment. */
MR_API mr_resource *mr_tracking_resource(mr_tracking *t);

/* As mr_counting_stats (bytes of the outstanding allocations, etc.). */
MR_API void mr_tracking_stats(const mr_tracking *t, mr_stats *out);

/* Allocations passed through and not yet freed.  O(1). */
MR_API size_t mr_tracking_outstanding(const mr_tracking *t);

/* Writes the outstanding allocations to f (NULL: stderr), a heading line
 *     memres: mr_tracking 0x...: 2 allocations outstanding, 40 bytes
 * then one line per allocation in sequence order (in table order when there
 * is no memory to sort)
 *     memres:   #3 0x55d0c3a0 24 bytes align 8
 * and returns their number (mr_tracking_outstanding).  Nothing but the
 * heading when none is outstanding.  O(outstanding log outstanding). */
MR_API size_t mr_tracking_report(const mr_tracking *t, FILE *f);

/* Verifies the table: every record reachable by its hash, live + freed
 * records == occupied slots <= half the table, the outstanding bytes == the
 * sum of live records' sizes, live records == upstream allocations -
 * deallocations.  O(table).  true, or one line on stderr and false. */
MR_API bool mr_tracking_check(const mr_tracking *t);

#ifdef __cplusplus
}
#endif
#endif /* MEMRES_ADAPTORS_H */
