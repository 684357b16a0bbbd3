/* SPDX-License-Identifier: MIT */
/* advise/analyze/trace.h -- a trace (format.h) decoded into the one
 * sequence of events that `memres-advise replay` runs (trace.c decodes,
 * replay.c replays), and the tables the decoder keeps (tables.c).  Private
 * to those three files. */
#ifndef MEMRES_ADVISE_TRACE_H
#define MEMRES_ADVISE_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis.h"
#include "memres/arena.h"
#include "memres/objpool.h"
#include "memres/pools.h"

/* ---- a map of 64-bit keys (never UINT64_MAX) to 64-bit values (tables.c) ---- */

struct map {
    uint64_t *keys, *vals;
    size_t cap, n; /* cap: 0 or a power of two */
};

/* The value of k, or NULL. */
uint64_t *mra_map_get(const struct map *m, uint64_t k);
/* Sets k to v; -1: out of memory. */
int mra_map_put(struct map *m, uint64_t k, uint64_t v);
void mra_map_del(struct map *m, uint64_t k);
void mra_map_free(struct map *m);

/* ---- the live objects of the merge, by birth tick (tables.c) ---- */

struct tpage;
struct ticktab {
    struct map pages;            /* page number -> struct tpage * */
    uint64_t last_no;
    struct tpage *last;
};

/* The object born at tick + 1, or 0. */
uint32_t mra_tt_get(struct ticktab *tt, uint64_t tick);
/* Sets the object born at tick (obj1 = its number + 1).  0, or -1. */
int mra_tt_set(struct ticktab *tt, uint64_t tick, uint32_t obj1);
void mra_tt_clear(struct ticktab *tt, uint64_t tick);
void mra_tt_free(struct ticktab *tt);

/* ---- the trace, decoded ---- */

enum { R_ALLOC, R_FREE, R_REALLOC, R_ALIGNED }; /* R_ALIGNED: the next record's size is the alignment */

struct rev {
    uint32_t hdr;                /* kind | slot << 2 */
    uint32_t obj;
    uint64_t size;
};

struct chunkref {
    size_t off;                  /* of the events in the file */
    uint32_t nbytes, nevents;
};

/* The event at the head of a thread's stream. */
struct head {
    int kind;                    /* R_*; -1: the stream is over */
    uint32_t site;
    uint64_t size, align;
    uint64_t tick;               /* ALLOC: its tick; FREE, REALLOC: the birth tick of the object */
    uint64_t key;                /* its place in the merge (with after) */
    int after;                   /* 0: an allocation at tick key; 1: after the allocation at key */
    int raised;                  /* 1: key is later than the thread's own clock says (see merge) */
    size_t at;                   /* its offset in the file */
};

#define LSZ 256u

struct lsz {
    uint32_t site1;              /* site + 1; 0: empty */
    uint64_t size;
};

struct thr {
    uint32_t id;
    struct chunkref *chunks;
    size_t nchunks, capchunks, ci;
    const uint8_t *p, *end;
    uint32_t left;               /* events the current chunk still holds */
    uint64_t last_tick;
    uint64_t floor;              /* no event of the thread is placed before it (see merge) */
    struct head h;
    uint32_t wait_next;          /* the next thread waiting on the same birth; UINT32_MAX: none */
    struct lsz *lsz;             /* [LSZ], made at the first allocation: last sizes by site,
                                    written back to the map when evicted */
};

struct slot {
    /* from the plan (slot 0: sites outside it): a report site */
    enum mra_rec rec;
    bool ts;
    unsigned report;
    double predicted_ns;
    /* from the trace */
    uint64_t max_size, allocations;
    /* the replay's */
    mr_arena *arena;
    mr_objpool *objpool;
    mr_pools *pools;
    mr_arena_mark *marks;
    int64_t *mark_live;
    size_t nmarks, capmarks;
    int64_t live;
    bool on;                     /* on the plan in this run */
};

struct trace {
    const char *path;
    uint8_t *buf;
    size_t len;
    struct thr *thr;
    size_t nthr, capthr;
    bool have_plan;
    struct slot *slots;          /* [0]: outside the plan */
    size_t nslots;
    struct map site_slot;        /* raw site -> slot */
    struct {
        uint32_t raw, slot;
    } *praw;                     /* the plan's raw sites, in its order */
    size_t npraw;
    struct rev *ev;
    size_t nev, capev;
    uint64_t nobjects;
    uint64_t nallocs, nfrees, nreallocs;
    uint64_t *osize;             /* per object: its size now (the merge's) */
    uint32_t *oslot;             /* per object: its slot (the merge's) */
    uint64_t live_bytes, peak_live_bytes;
};

/* Reads the trace at t->path (t zeroed but for path) and decodes it into
 * t->ev, every thread's events merged into one sequence; t->osize and
 * t->oslot, the merge's, are freed.  0, or -1 with a message on stderr
 * (the offset of what is wrong in a damaged trace).  Either way t is then
 * freed with mra_trace_free. */
int mra_trace_decode(struct trace *t);
void mra_trace_free(struct trace *t);
/* Says "out of memory" for t on stderr; -1. */
int mra_trace_oom(const struct trace *t);

#endif
