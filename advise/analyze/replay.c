/* SPDX-License-Identifier: MIT */
/* advise/analyze/replay.c -- the plan chunk of a trace, and `memres-advise replay
 * TRACE [--json FILE] [--runs N]`: the program's allocations replayed
 * against glibc and against the recommended plan on the real memres
 * allocators, the replayed saving printed beside the predicted one.
 *
 * Decoding (format.h): the file is read whole and checked as it is decoded
 * (a truncated or garbled trace is an error with the offset, never a
 * crash).  Each thread's chunks form one stream; the streams are merged
 * into one single-threaded sequence in global order: an allocation at its
 * tick, a free or realloc just after its thread's last allocation or the
 * object's birth, whichever is later, and after every earlier event of its
 * thread (a thread that freed an object born at tick b acts after b from
 * then on); at equal places, a thread at that point of its own clock goes
 * first.  A free of an object whose birth comes later in the merge waits
 * for that birth, so the sequence is causal and keeps each thread's order
 * (across threads it is the program's order to within a batch of ticks).
 * Objects are then numbered densely, so the replay's bookkeeping is a few
 * arrays indexed by that number.  A trace whose live memory peaks above
 * half of this machine's is refused.
 *
 * The replay: the same sequence, run against (a) glibc malloc, free,
 * realloc and posix_memalign, (b) the plan: per site of the report (all
 * the raw sites, the call stacks, folded into it share it: the advice is
 * applied at a line of the program) an allocator of its own, created at the
 * site's first allocation:
 *   arena         one mr_arena (default options); a free does nothing;
 *                 when the site's live count returns to 0 the arena is
 *                 reset; a realloc is mr_arena_realloc.
 *   arena-rewind  one mr_arena and a stack of marks: a mark is saved before
 *                 each allocation and each realloc (at most MARK_DEPTH deep;
 *                 a realloc allocates anew, without copying), and a free that
 *                 brings the site's live count back to the count at the
 *                 newest mark rewinds to it; at 0 without a mark the arena
 *                 is reset.  This
 *                 goes by count, not by object, as a program whose frees
 *                 are stack-like would; a free out of stack order rewinds
 *                 the youngest object's bytes instead (harmless here: the
 *                 replay writes an object only when it is allocated).
 *   objpool       one mr_objpool whose objects are the site's largest size
 *                 in the trace; larger requests (a realloc past it) go to
 *                 malloc; thread-safe when the plan says so.
 *   pools         one mr_pools per site (thread-safe when the plan says so;
 *                 the replay is single-threaded, so remote frees are not
 *                 replayed as such); frees through mr_pools_free with the
 *                 object's size, reallocs through mr_pools_realloc.
 * Allocations with an alignment above 16 stay on glibc in both runs; a
 * realloc to 0 bytes reallocs to 1 (the object lives on in the trace).
 * Sites outside the plan use glibc in both.  Every allocation is written
 * (a byte per 4 KiB page, as calibrate.c does), and the bookkeeping is the
 * same in both runs: only the allocator calls differ.  Runs alternate
 * glibc, plan, glibc, plan...; each is timed by the thread's CPU time (page
 * faults included), and the report gives medians.  A site's replayed
 * saving comes from further alternating runs with that site alone on the
 * plan (the first MAX_ALONE sites by predicted saving), as its predicted
 * saving supposes. */
#include "analysis.h"
#include "clock.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "memres/arena.h"
#include "memres/objpool.h"
#include "memres/pools.h"

#define MAX_TICK ((uint64_t)1 << 62)
#define MAX_SIZE ((uint64_t)1 << 40)  /* a larger request is taken as garbage */
#define MAX_ALIGN ((uint64_t)1 << 30)
#define MAX_OBJECTS (UINT32_MAX - 1)
#define MAX_SLOTS ((uint32_t)1 << 29)
#define MARK_DEPTH ((size_t)1 << 24) /* marks per arena-rewind site, at most */
#define PAGE 4096u

/* ---- a map of 64-bit keys (never UINT64_MAX) to 64-bit values ---- */

struct map {
    uint64_t *keys, *vals;
    size_t cap, n; /* cap: 0 or a power of two */
};

#define EMPTY UINT64_MAX

static inline size_t map_hash(uint64_t k, size_t cap)
{
    k ^= k >> 31;
    k *= 0x9e3779b97f4a7c15ull;
    k ^= k >> 29;
    return (size_t)k & (cap - 1);
}

static uint64_t *map_get(const struct map *m, uint64_t k)
{
    if (m->n == 0)
        return NULL;
    for (size_t i = map_hash(k, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == k)
            return &m->vals[i];
        if (m->keys[i] == EMPTY)
            return NULL;
    }
}

static int map_grow(struct map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    uint64_t *keys = malloc(cap * sizeof *keys), *vals = malloc(cap * sizeof *vals);
    if (!keys || !vals) {
        free(keys);
        free(vals);
        return -1;
    }
    memset(keys, 0xff, cap * sizeof *keys);
    for (size_t j = 0; j < m->cap; j++) {
        if (m->keys[j] == EMPTY)
            continue;
        size_t i = map_hash(m->keys[j], cap);
        while (keys[i] != EMPTY)
            i = (i + 1) & (cap - 1);
        keys[i] = m->keys[j];
        vals[i] = m->vals[j];
    }
    free(m->keys);
    free(m->vals);
    m->keys = keys;
    m->vals = vals;
    m->cap = cap;
    return 0;
}

/* Sets k to v; -1: out of memory. */
static int map_put(struct map *m, uint64_t k, uint64_t v)
{
    if ((m->n + 1) * 4 > m->cap * 3 && map_grow(m) != 0)
        return -1;
    size_t i = map_hash(k, m->cap);
    while (m->keys[i] != EMPTY && m->keys[i] != k)
        i = (i + 1) & (m->cap - 1);
    if (m->keys[i] == EMPTY) {
        m->keys[i] = k;
        m->n++;
    }
    m->vals[i] = v;
    return 0;
}

static void map_del(struct map *m, uint64_t k)
{
    if (m->n == 0)
        return;
    size_t mask = m->cap - 1, i = map_hash(k, m->cap);
    while (m->keys[i] != k) {
        if (m->keys[i] == EMPTY)
            return;
        i = (i + 1) & mask;
    }
    /* backward-shift deletion: no tombstones */
    for (size_t j = i;;) {
        j = (j + 1) & mask;
        if (m->keys[j] == EMPTY)
            break;
        size_t h = map_hash(m->keys[j], m->cap);
        /* move j to i when its home h does not lie in (i, j] cyclically */
        if ((j > i && (h <= i || h > j)) || (j < i && h <= i && h > j)) {
            m->keys[i] = m->keys[j];
            m->vals[i] = m->vals[j];
            i = j;
        }
    }
    m->keys[i] = EMPTY;
    m->n--;
}

static void map_free(struct map *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

/* ---- the live objects of the merge, by birth tick ----
 * Ticks are dense (each thread takes them in batches), so a table of pages
 * of TICK_PAGE ticks, each entry the object's number + 1 (0: none), found
 * by a map of pages with the last page cached; a page whose objects all
 * died is freed (a later birth in it finds a new, empty page). */

#define TICK_PAGE_BITS 14
#define TICK_PAGE ((size_t)1 << TICK_PAGE_BITS)

struct tpage {
    size_t live;
    uint32_t e[TICK_PAGE];
};

struct ticktab {
    struct map pages;            /* page number -> struct tpage * */
    uint64_t last_no;
    struct tpage *last;
};

static struct tpage *tt_page(struct ticktab *tt, uint64_t tick, bool make)
{
    uint64_t no = tick >> TICK_PAGE_BITS;
    if (tt->last && tt->last_no == no)
        return tt->last;
    uint64_t *v = map_get(&tt->pages, no);
    struct tpage *pg = v ? (struct tpage *)(uintptr_t)*v : NULL;
    if (!pg && make) {
        pg = calloc(1, sizeof *pg);
        if (!pg)
            return NULL;
        if (map_put(&tt->pages, no, (uint64_t)(uintptr_t)pg) != 0) {
            free(pg);
            return NULL;
        }
    }
    if (pg) {
        tt->last = pg;
        tt->last_no = no;
    }
    return pg;
}

/* The object born at tick + 1, or 0. */
static inline uint32_t tt_get(struct ticktab *tt, uint64_t tick)
{
    struct tpage *pg = tt_page(tt, tick, false);
    return pg ? pg->e[tick & (TICK_PAGE - 1)] : 0;
}

/* Sets the object born at tick (obj1 = its number + 1).  0, or -1. */
static int tt_set(struct ticktab *tt, uint64_t tick, uint32_t obj1)
{
    struct tpage *pg = tt_page(tt, tick, true);
    if (!pg)
        return -1;
    pg->e[tick & (TICK_PAGE - 1)] = obj1;
    pg->live++;
    return 0;
}

static void tt_clear(struct ticktab *tt, uint64_t tick)
{
    struct tpage *pg = tt_page(tt, tick, false);
    if (!pg || pg->e[tick & (TICK_PAGE - 1)] == 0)
        return;
    pg->e[tick & (TICK_PAGE - 1)] = 0;
    if (--pg->live == 0) {
        map_del(&tt->pages, tick >> TICK_PAGE_BITS);
        if (tt->last == pg)
            tt->last = NULL;
        free(pg);
    }
}

static void tt_free(struct ticktab *tt)
{
    for (size_t i = 0; i < tt->pages.cap; i++)
        if (tt->pages.keys[i] != EMPTY)
            free((void *)(uintptr_t)tt->pages.vals[i]);
    map_free(&tt->pages);
    tt->last = NULL;
}

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

static int bad(const struct trace *t, size_t at, const char *what)
{
    fprintf(stderr, "memres-advise replay: %s: %s (at byte %zu): not a trace memres-advise wrote, or a damaged one\n",
            t->path, what, at);
    return -1;
}

static int oom(const struct trace *t)
{
    fprintf(stderr, "memres-advise replay: %s: out of memory\n", t->path);
    return -1;
}

static int read_file(struct trace *t)
{
    FILE *f = fopen(t->path, "rb");
    if (!f) {
        fprintf(stderr, "memres-advise replay: %s: %s\n", t->path, strerror(errno));
        return -1;
    }
    size_t cap = 1 << 16, len = 0;
    uint8_t *buf = malloc(cap);
    for (;;) {
        if (!buf) {
            fclose(f);
            return oom(t);
        }
        len += fread(buf + len, 1, cap - len, f);
        if (len < cap)
            break;
        uint8_t *nb = realloc(buf, cap * 2);
        if (!nb)
            free(buf);
        buf = nb;
        cap *= 2;
    }
    int err = ferror(f);
    fclose(f);
    if (err) {
        free(buf);
        fprintf(stderr, "memres-advise replay: %s: read error\n", t->path);
        return -1;
    }
    t->buf = buf;
    t->len = len;
    return 0;
}

static struct thr *thread_of(struct trace *t, struct map *ids, uint32_t id)
{
    uint64_t *v = map_get(ids, id);
    if (v)
        return &t->thr[*v];
    if (t->nthr == t->capthr) {
        size_t cap = t->capthr ? t->capthr * 2 : 16;
        struct thr *n = realloc(t->thr, cap * sizeof *n);
        if (!n)
            return NULL;
        t->thr = n;
        t->capthr = cap;
    }
    if (map_put(ids, id, t->nthr) != 0)
        return NULL;
    struct thr *th = &t->thr[t->nthr++];
    memset(th, 0, sizeof *th);
    th->id = id;
    th->wait_next = UINT32_MAX;
    return th;
}

static int read_plan(struct trace *t, const uint8_t *p, const uint8_t *end)
{
    size_t base = (size_t)(p - t->buf);
    uint64_t n;
    if (mra_get_varint(&p, end, &n) != 0 || n > (uint64_t)(end - p) / 5 || n >= MAX_SLOTS)
        return bad(t, base, "bad plan chunk");
    map_free(&t->site_slot);
    free(t->slots);
    free(t->praw);
    t->npraw = 0;
    t->slots = calloc((size_t)n + 1, sizeof *t->slots);
    t->praw = malloc(((size_t)n + 1) * sizeof *t->praw);
    if (!t->slots || !t->praw)
        return oom(t);
    t->nslots = 1;
    struct map reports = {0}; /* report site -> slot */
    for (uint64_t i = 0; i < n; i++) {
        uint64_t raw, rec, flags, report, saving;
        if (mra_get_varint(&p, end, &raw) != 0 || mra_get_varint(&p, end, &rec) != 0 ||
            mra_get_varint(&p, end, &flags) != 0 || mra_get_varint(&p, end, &report) != 0 ||
            mra_get_varint(&p, end, &saving) != 0) {
            map_free(&reports);
            return bad(t, (size_t)(p - t->buf), "truncated plan entry");
        }
        if (raw > UINT32_MAX || rec >= MRA_RECS || flags > 1 || report > UINT32_MAX) {
            map_free(&reports);
            return bad(t, (size_t)(p - t->buf), "bad plan entry");
        }
        if (rec == MRA_NONE)
            continue;
        if (map_get(&t->site_slot, raw)) {
            map_free(&reports);
            return bad(t, (size_t)(p - t->buf), "a site twice in the plan");
        }
        /* one slot, one allocator, per report site: where the advice is applied */
        uint64_t *r = map_get(&reports, report);
        size_t k = r ? (size_t)*r : t->nslots;
        struct slot *s = &t->slots[k];
        if (!r) {
            s->rec = (enum mra_rec)rec;
            s->ts = flags & 1;
            s->report = (unsigned)report;
            t->nslots++;
        }
        if ((double)saving > s->predicted_ns)
            s->predicted_ns = (double)saving; /* every entry carries its report site's */
        t->praw[t->npraw].raw = (uint32_t)raw;
        t->praw[t->npraw++].slot = (uint32_t)k;
        if ((!r && map_put(&reports, report, k) != 0) || map_put(&t->site_slot, raw, k) != 0) {
            map_free(&reports);
            return oom(t);
        }
    }
    map_free(&reports);
    if (p != end)
        return bad(t, (size_t)(p - t->buf), "bytes after the plan's entries");
    t->have_plan = true;
    return 0;
}

/* Splits the file into chunks, per thread; reads the plan. */
static int read_chunks(struct trace *t)
{
    struct mra_trace_header hd;
    if (t->len < sizeof hd)
        return bad(t, 0, "shorter than a trace header");
    memcpy(&hd, t->buf, sizeof hd);
    if (memcmp(hd.magic, MRA_TRACE_MAGIC, 8) != 0)
        return bad(t, 0, "no trace magic");
    if (hd.version != MRA_TRACE_VERSION) {
        fprintf(stderr, "memres-advise replay: %s: trace version %u, this replay reads version %u\n", t->path,
                hd.version, MRA_TRACE_VERSION);
        return -1;
    }
    struct map ids = {0};
    size_t off = sizeof hd;
    int rc = 0;
    while (off < t->len) {
        struct mra_trace_chunk c;
        if (t->len - off < sizeof c) {
            rc = bad(t, off, "truncated chunk header");
            break;
        }
        memcpy(&c, t->buf + off, sizeof c);
        off += sizeof c;
        if (c.nbytes > t->len - off) {
            rc = bad(t, off - sizeof c, "chunk runs past the end of the file");
            break;
        }
        if (c.thread == MRA_TRACE_PLAN) {
            if ((rc = read_plan(t, t->buf + off, t->buf + off + c.nbytes)) != 0)
                break;
        } else {
            if (c.nevents > c.nbytes) {
                rc = bad(t, off - sizeof c, "chunk with more events than bytes");
                break;
            }
            struct thr *th = thread_of(t, &ids, c.thread);
            if (!th) {
                rc = oom(t);
                break;
            }
            if (th->nchunks == th->capchunks) {
                size_t cap = th->capchunks ? th->capchunks * 2 : 8;
                struct chunkref *n = realloc(th->chunks, cap * sizeof *n);
                if (!n) {
                    rc = oom(t);
                    break;
                }
                th->chunks = n;
                th->capchunks = cap;
            }
            th->chunks[th->nchunks++] = (struct chunkref){off, c.nbytes, c.nevents};
        }
        off += c.nbytes;
    }
    map_free(&ids);
    if (rc == 0 && !t->slots) { /* no plan: everything on glibc */
        t->slots = calloc(1, sizeof *t->slots);
        if (!t->slots)
            return oom(t);
        t->nslots = 1;
    }
    return rc;
}

/* Places th's head event at (key, after), but never before the thread's
 * floor: a thread that freed an object born at tick b did so after b, and
 * so did everything it does next. */
static void place(struct thr *th, uint64_t key, int after)
{
    struct head *h = &th->h;
    uint64_t own = after ? th->last_tick : key;
    if (key < th->floor) {
        key = th->floor;
        after = 1;
    }
    h->key = th->floor = key;
    h->after = after;
    h->raised = key > own;
}

/* Decodes the next event of th into th->h (kind -1 at the end).  0, or -1. */
static int next_event(struct trace *t, struct thr *th, struct map *last_size)
{
    for (;;) {
        if (th->p == th->end) {
            if (th->left != 0)
                return bad(t, (size_t)(th->end - t->buf), "chunk holds fewer events than its header says");
            if (th->ci == th->nchunks) {
                th->h.kind = -1;
                return 0;
            }
            const struct chunkref *c = &th->chunks[th->ci++];
            th->p = t->buf + c->off;
            th->end = th->p + c->nbytes;
            th->left = c->nevents;
            continue;
        }
        size_t at = (size_t)(th->p - t->buf);
        if (th->left == 0)
            return bad(t, at, "chunk holds more events than its header says");
        th->left--;
        uint64_t v, x;
        if (mra_get_varint(&th->p, th->end, &v) != 0)
            return bad(t, at, "truncated event");
        struct head *h = &th->h;
        h->at = at;
        h->align = 0;
        unsigned kind = (unsigned)(v & 3);
        if (kind == MRA_EV_ALLOC || kind == MRA_EV_ALLOC_SIZE) {
            if ((v >> 2) >= UINT32_MAX)
                return bad(t, at, "site number out of range");
            h->site = (uint32_t)(v >> 2);
            size_t li = h->site & (LSZ - 1);
            if (MR_UNLIKELY(!th->lsz) && !(th->lsz = calloc(LSZ, sizeof *th->lsz)))
                return oom(t);
            if (th->lsz[li].site1 != h->site + 1) {
                /* write the entry back, bring this site's in */
                if (th->lsz[li].site1 != 0 &&
                    map_put(last_size, (uint64_t)th->id << 32 | (th->lsz[li].site1 - 1), th->lsz[li].size) != 0)
                    return oom(t);
                uint64_t *s = map_get(last_size, (uint64_t)th->id << 32 | h->site);
                th->lsz[li].site1 = h->site + 1;
                th->lsz[li].size = s ? *s : 0;
            }
            if (kind == MRA_EV_ALLOC_SIZE) {
                if (mra_get_varint(&th->p, th->end, &x) != 0)
                    return bad(t, at, "truncated event");
                if (x > MAX_SIZE)
                    return bad(t, at, "implausible size");
                th->lsz[li].size = x;
            }
            h->size = th->lsz[li].size;
            if (th->last_tick >= MAX_TICK)
                return bad(t, at, "tick out of range");
            h->kind = R_ALLOC;
            h->tick = ++th->last_tick;
            place(th, h->tick, 0);
            return 0;
        }
        if (kind == MRA_EV_FREE) {
            h->kind = R_FREE;
            h->tick = th->last_tick - (uint64_t)mra_unzigzag(v >> 2);
        } else {
            unsigned sub = (unsigned)(v >> 2) & 7;
            uint64_t arg = v >> 5;
            if (sub == MRA_CTL_JUMP) {
                if (arg >= MAX_TICK)
                    return bad(t, at, "jump out of range");
                th->last_tick = arg;
                continue;
            }
            if (sub == MRA_CTL_REALLOC) {
                if (mra_get_varint(&th->p, th->end, &x) != 0)
                    return bad(t, at, "truncated event");
                if (x > MAX_SIZE)
                    return bad(t, at, "implausible size");
                h->kind = R_REALLOC;
                h->tick = th->last_tick - (uint64_t)mra_unzigzag(arg);
                h->size = x;
            } else if (sub == MRA_CTL_ALIGNED) {
                uint64_t site;
                if (arg == 0 || (arg & (arg - 1)) != 0 || arg > MAX_ALIGN)
                    return bad(t, at, "bad alignment");
                if (mra_get_varint(&th->p, th->end, &site) != 0 || mra_get_varint(&th->p, th->end, &x) != 0)
                    return bad(t, at, "truncated event");
                if (site > UINT32_MAX)
                    return bad(t, at, "site number out of range");
                if (x > MAX_SIZE)
                    return bad(t, at, "implausible size");
                if (th->last_tick >= MAX_TICK)
                    return bad(t, at, "tick out of range");
                h->kind = R_ALIGNED;
                h->site = (uint32_t)site;
                h->size = x;
                h->align = arg;
                h->tick = ++th->last_tick;
                place(th, h->tick, 0);
                return 0;
            } else
                return bad(t, at, "unknown control event");
        }
        if (h->tick == 0 || h->tick >= MAX_TICK)
            return bad(t, at, "free of an object born at no tick");
        place(th, h->tick > th->last_tick ? h->tick : th->last_tick, 1);
        return 0;
    }
}

/* The merge's heap of threads, by (key, after, index). */
static bool thr_before(const struct trace *t, uint32_t a, uint32_t b)
{
    const struct head *x = &t->thr[a].h, *y = &t->thr[b].h;
    if (x->key != y->key)
        return x->key < y->key;
    if (x->after != y->after)
        return x->after < y->after;
    if (x->raised != y->raised) /* a thread at that point of its own clock goes first */
        return x->raised < y->raised;
    return a < b;
}

static void heap_push(const struct trace *t, uint32_t *heap, size_t *n, uint32_t v)
{
    size_t i = (*n)++;
    heap[i] = v;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!thr_before(t, heap[i], heap[p]))
            break;
        uint32_t s = heap[i];
        heap[i] = heap[p];
        heap[p] = s;
        i = p;
    }
}

static uint32_t heap_pop(const struct trace *t, uint32_t *heap, size_t *n)
{
    uint32_t top = heap[0];
    heap[0] = heap[--*n];
    for (size_t i = 0;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < *n && thr_before(t, heap[l], heap[m]))
            m = l;
        if (r < *n && thr_before(t, heap[r], heap[m]))
            m = r;
        if (m == i)
            break;
        uint32_t s = heap[i];
        heap[i] = heap[m];
        heap[m] = s;
        i = m;
    }
    return top;
}

static int emit(struct trace *t, uint32_t kind, uint32_t slot, uint32_t obj, uint64_t size)
{
    if (t->nev == t->capev) {
        size_t cap = t->capev ? t->capev * 2 : 4096;
        struct rev *n = realloc(t->ev, cap * sizeof *n);
        if (!n)
            return oom(t);
        t->ev = n;
        t->capev = cap;
    }
    t->ev[t->nev++] = (struct rev){kind | slot << 2, obj, size};
    return 0;
}

/* Merges the threads' streams into t->ev. */
static int merge(struct trace *t)
{
    struct map last_size = {0}, waiting = {0};
    struct ticktab objects = {0};
    uint32_t *heap = malloc((t->nthr + 1) * sizeof *heap);
    size_t nheap = 0, nblocked = 0;
    int rc = 0;
    t->osize = malloc(1024 * sizeof *t->osize);
    t->oslot = malloc(1024 * sizeof *t->oslot);
    if (!heap || !t->osize || !t->oslot) {
        free(heap);
        return oom(t);
    }
    if (t->nthr >= UINT32_MAX) {
        free(heap);
        return bad(t, 0, "too many threads");
    }
    for (size_t i = 0; i < t->nthr && rc == 0; i++) {
        rc = next_event(t, &t->thr[i], &last_size);
        if (rc == 0 && t->thr[i].h.kind >= 0)
            heap_push(t, heap, &nheap, (uint32_t)i);
    }
    while (rc == 0 && nheap > 0) {
        uint32_t ti = heap_pop(t, heap, &nheap);
        struct thr *th = &t->thr[ti];
        struct head *h = &th->h;
        if (h->kind == R_ALLOC || h->kind == R_ALIGNED) {
            if (tt_get(&objects, h->tick)) {
                rc = bad(t, h->at, "two live objects born at the same tick");
                break;
            }
            if (t->nobjects >= MAX_OBJECTS) {
                rc = bad(t, h->at, "too many objects");
                break;
            }
            uint64_t *sl = map_get(&t->site_slot, h->site);
            uint32_t slot = sl ? (uint32_t)*sl : 0;
            if ((t->nobjects & (t->nobjects - 1)) == 0 && t->nobjects >= 1024) {
                uint64_t *n = realloc(t->osize, 2 * (size_t)t->nobjects * sizeof *n);
                if (n)
                    t->osize = n;
                uint32_t *o = realloc(t->oslot, 2 * (size_t)t->nobjects * sizeof *o);
                if (o)
                    t->oslot = o;
                if (!n || !o) {
                    rc = oom(t);
                    break;
                }
            }
            uint32_t obj = (uint32_t)t->nobjects++;
            t->osize[obj] = h->size;
            t->oslot[obj] = slot;
            t->live_bytes += h->size;
            if (t->live_bytes > t->peak_live_bytes)
                t->peak_live_bytes = t->live_bytes;
            struct slot *s = &t->slots[slot];
            if (h->size > s->max_size)
                s->max_size = h->size;
            s->allocations++;
            t->nallocs++;
            if (tt_set(&objects, h->tick, obj + 1) != 0) {
                rc = oom(t);
                break;
            }
            if ((rc = emit(t, (uint32_t)h->kind, slot, obj, h->size)) != 0)
                break;
            if (h->kind == R_ALIGNED && (rc = emit(t, R_ALIGNED, slot, obj, h->align)) != 0)
                break;
            uint64_t *w;
            if (nblocked > 0 && (w = map_get(&waiting, h->tick)) != NULL) {
                /* wake the threads that wait on this birth */
                for (uint32_t wi = (uint32_t)*w; wi != UINT32_MAX;) {
                    uint32_t next = t->thr[wi].wait_next;
                    t->thr[wi].wait_next = UINT32_MAX;
                    heap_push(t, heap, &nheap, wi);
                    nblocked--;
                    wi = next;
                }
                map_del(&waiting, h->tick);
            }
        } else {
            uint32_t o1 = tt_get(&objects, h->tick);
            if (!o1) {
                /* born later in the merge (another thread's batch of ticks):
                 * this thread waits for that birth */
                uint64_t *w = map_get(&waiting, h->tick);
                th->wait_next = w ? (uint32_t)*w : UINT32_MAX;
                if (map_put(&waiting, h->tick, ti) != 0) {
                    rc = oom(t);
                    break;
                }
                nblocked++;
                continue;
            }
            uint32_t obj = o1 - 1, slot = t->oslot[obj];
            t->live_bytes -= t->osize[obj];
            if (h->kind == R_FREE) {
                tt_clear(&objects, h->tick);
                t->nfrees++;
            } else {
                t->osize[obj] = h->size;
                t->live_bytes += h->size;
                if (t->live_bytes > t->peak_live_bytes)
                    t->peak_live_bytes = t->live_bytes;
                struct slot *s = &t->slots[slot];
                if (h->size > s->max_size)
                    s->max_size = h->size;
                t->nreallocs++;
            }
            if ((rc = emit(t, (uint32_t)h->kind, slot, obj, h->size)) != 0)
                break;
        }
        if ((rc = next_event(t, th, &last_size)) != 0)
            break;
        if (th->h.kind >= 0)
            heap_push(t, heap, &nheap, ti);
    }
    if (rc == 0 && nblocked > 0) {
        for (size_t i = 0; i < t->nthr; i++)
            if (t->thr[i].h.kind == R_FREE || t->thr[i].h.kind == R_REALLOC) {
                const struct head *h = &t->thr[i].h;
                bool waits = map_get(&waiting, h->tick) != NULL;
                if (waits) {
                    rc = bad(t, h->at,
                             h->kind == R_FREE ? "free of an object never allocated (or freed twice)"
                                               : "realloc of an object never allocated (or freed)");
                    break;
                }
            }
        if (rc == 0)
            rc = bad(t, 0, "an event waits for an object never allocated");
    }
    free(heap);
    map_free(&last_size);
    tt_free(&objects);
    map_free(&waiting);
    return rc;
}

/* ---- the replay ---- */

static inline void touch(void *p, uint64_t size)
{
    volatile unsigned char *b = p;
    for (uint64_t i = 0; i < size; i += PAGE)
        b[i] = (unsigned char)i;
}

struct run_state {
    void **ptr;                  /* per object; NULL: dead */
    uint64_t *size;              /* its size now */
    uint8_t *fb;                 /* 1: from glibc (in the plan run: a fallback) */
};

static size_t objpool_per_block(size_t size)
{
    size_t n = ((size_t)64 << 10) / (size ? size : 1);
    return n < 8 ? 8 : n > 1024 ? 1024 : n;
}

static void *glibc_aligned(uint64_t size, uint64_t align)
{
    void *p = NULL;
    if (align < sizeof(void *))
        align = sizeof(void *);
    return posix_memalign(&p, (size_t)align, (size_t)size) == 0 ? p : NULL;
}

/* Creates s's allocator.  0, or -1. */
static int slot_open(struct slot *s)
{
    switch (s->rec) {
    case MRA_ARENA:
    case MRA_ARENA_REWIND:
        s->arena = mr_arena_create(NULL);
        return s->arena ? 0 : -1;
    case MRA_OBJPOOL: {
        mr_objpool_options o = {0};
        size_t size = s->max_size ? (size_t)s->max_size : 1;
        o.thread_safe = s->ts;
        o.objects_per_block = objpool_per_block(size);
        s->objpool = mr_objpool_create(size, 16, &o);
        return s->objpool ? 0 : -1;
    }
    case MRA_POOLS: {
        mr_pools_options o = {0};
        o.thread_safe = s->ts;
        s->pools = mr_pools_create(&o);
        return s->pools ? 0 : -1;
    }
    default:
        return 0;
    }
}

static void slot_close(struct slot *s)
{
    mr_arena_destroy(s->arena);
    mr_objpool_destroy(s->objpool);
    mr_pools_destroy(s->pools);
    free(s->marks);
    free(s->mark_live);
    s->arena = NULL;
    s->objpool = NULL;
    s->pools = NULL;
    s->marks = NULL;
    s->mark_live = NULL;
    s->nmarks = s->capmarks = 0;
    s->live = 0;
}

/* Saves a mark before an allocation at an arena-rewind site (none beyond
 * MARK_DEPTH, or without memory for the stack: that allocation then waits
 * for an older mark or the reset). */
static inline void push_mark(struct slot *s)
{
    if (MR_UNLIKELY(s->nmarks == s->capmarks)) {
        size_t cap = s->capmarks ? s->capmarks * 2 : 256;
        if (cap > MARK_DEPTH)
            return;
        mr_arena_mark *m = realloc(s->marks, cap * sizeof *m);
        if (!m)
            return;
        s->marks = m;
        int64_t *l = realloc(s->mark_live, cap * sizeof *l);
        if (!l)
            return;
        s->mark_live = l;
        s->capmarks = cap;
    }
    s->marks[s->nmarks] = mr_arena_save(s->arena);
    s->mark_live[s->nmarks++] = s->live - 1;
}

static inline bool slot_ready(struct slot *s)
{
    return s->arena || s->objpool || s->pools;
}

/* One event (ev[i], and ev[i + 1] for an aligned allocation): 0, or -1
 * (out of memory).  *i is advanced past the event. */
static inline int step(struct trace *t, struct run_state *st, size_t *ip, bool plan)
{
    const struct rev *e = &t->ev[*ip];
    uint32_t kind = e->hdr & 3, slot = e->hdr >> 2, obj = e->obj;
    struct slot *s = &t->slots[slot];
    bool mine = plan && s->rec != MRA_NONE && s->on;
    uint64_t size = e->size;
    void *p;
    (*ip)++;
    switch (kind) {
    case R_ALLOC:
    case R_ALIGNED: {
        uint64_t align = 16;
        if (kind == R_ALIGNED)
            align = t->ev[(*ip)++].size;
        s->live++;
        if (!mine || align > 16) {
            p = align > 16 ? glibc_aligned(size, align) : malloc((size_t)size);
            st->fb[obj] = 1;
        } else {
            if (MR_UNLIKELY(!slot_ready(s)) && slot_open(s) != 0)
                return -1;
            st->fb[obj] = 0;
            switch (s->rec) {
            case MRA_ARENA:
                p = mr_arena_alloc(s->arena, (size_t)size);
                break;
            case MRA_ARENA_REWIND:
                push_mark(s);
                p = mr_arena_alloc(s->arena, (size_t)size);
                break;
            case MRA_OBJPOOL:
                if (size <= s->max_size)
                    p = mr_objpool_alloc(s->objpool);
                else {
                    p = malloc((size_t)size);
                    st->fb[obj] = 1;
                }
                break;
            default:
                p = mr_pools_alloc(s->pools, (size_t)size, 16);
                break;
            }
        }
        if (MR_UNLIKELY(!p))
            return -1;
        touch(p, size);
        st->ptr[obj] = p;
        st->size[obj] = size;
        return 0;
    }
    case R_FREE:
        p = st->ptr[obj];
        st->ptr[obj] = NULL;
        s->live--;
        if (st->fb[obj]) {
            free(p);
            return 0;
        }
        switch (s->rec) {
        case MRA_ARENA:
            if (s->live == 0)
                mr_arena_reset(s->arena);
            break;
        case MRA_ARENA_REWIND:
            if (s->nmarks > 0 && s->mark_live[s->nmarks - 1] == s->live)
                mr_arena_rewind(s->arena, s->marks[--s->nmarks]);
            else if (s->live == 0) { /* what no mark covers (beyond MARK_DEPTH) */
                mr_arena_reset(s->arena);
                s->nmarks = 0;
            }
            break;
        case MRA_OBJPOOL:
            mr_objpool_free(s->objpool, p);
            break;
        default:
            mr_pools_free(s->pools, p, (size_t)st->size[obj], 16);
            break;
        }
        return 0;
    default: { /* R_REALLOC */
        uint64_t old = st->size[obj];
        void *q;
        p = st->ptr[obj];
        if (st->fb[obj])
            q = realloc(p, size ? (size_t)size : 1);
        else
            switch (s->rec) {
            case MRA_ARENA:
                q = mr_arena_realloc(s->arena, p, (size_t)old, (size_t)size);
                break;
            case MRA_ARENA_REWIND:
                /* no copy: a rewind by count may have given the old bytes back */
                push_mark(s);
                q = mr_arena_alloc(s->arena, (size_t)size);
                break;
            case MRA_OBJPOOL:
                if (size <= s->max_size)
                    q = p;
                else {
                    q = malloc((size_t)size);
                    if (q) {
                        memcpy(q, p, (size_t)(old < s->max_size ? old : s->max_size));
                        mr_objpool_free(s->objpool, p);
                        st->fb[obj] = 1;
                    }
                }
                break;
            default:
                q = mr_pools_realloc(s->pools, p, (size_t)old, (size_t)size, 16);
                break;
            }
        if (MR_UNLIKELY(!q))
            return -1;
        touch(q, size);
        st->ptr[obj] = q;
        st->size[obj] = size;
        return 0;
    }
    }
}

/* Replays t->ev once: on glibc, or on the plan's allocators for the slots
 * that are on.  The time of the whole loop in *ns.  0, or -1. */
static int replay_once(struct trace *t, bool plan, double *ns)
{
    struct run_state st;
    size_t n = (size_t)t->nobjects ? (size_t)t->nobjects : 1;
    st.ptr = calloc(n, sizeof *st.ptr);
    st.size = malloc(n * sizeof *st.size);
    st.fb = malloc(n);
    int rc = 0;
    if (!st.ptr || !st.size || !st.fb)
        rc = -1;
    for (size_t k = 0; k < t->nslots; k++)
        t->slots[k].live = 0;
    uint64_t t0 = mra_cpu_ns(); /* a replay's cost, whatever else runs on the machine */
    if (rc == 0)
        for (size_t i = 0; i < t->nev;)
            if (MR_UNLIKELY(step(t, &st, &i, plan) != 0)) {
                rc = -1;
                break;
            }
    *ns = (double)(mra_cpu_ns() - t0);
    /* untimed: what is still live, and the allocators */
    if (st.ptr && st.fb)
        for (size_t o = 0; o < t->nobjects; o++)
            if (st.ptr[o] && st.fb[o])
                free(st.ptr[o]);
    for (size_t k = 0; k < t->nslots; k++)
        slot_close(&t->slots[k]);
    free(st.ptr);
    free(st.size);
    free(st.fb);
    if (rc != 0)
        fprintf(stderr, "memres-advise replay: %s: out of memory replaying the trace\n", t->path);
    return rc;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* A site of the report: the plan's raw sites with its number. */
struct rsite {
    unsigned report;
    enum mra_rec rec;
    bool ts;
    double predicted_ns;         /* every entry of the plan carries its report site's */
    uint64_t allocations;
    double saving_ns;            /* replayed: median of glibc runs - median of runs with it alone on the plan */
    bool replayed;               /* false: not replayed alone (beyond MAX_ALONE sites) */
    uint32_t *raw;
    size_t nraw;
    size_t slot;
};

#define MAX_ALONE 16             /* report sites replayed alone, by predicted saving */

static int cmp_rsite_predicted(const void *a, const void *b)
{
    const struct rsite *x = a, *y = b;
    if (x->predicted_ns != y->predicted_ns)
        return x->predicted_ns > y->predicted_ns ? -1 : 1;
    return x->report < y->report ? -1 : x->report > y->report;
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: memres-advise replay TRACE [--json FILE] [--runs N]\n"
               "  replays TRACE (memres-advise --trace) against glibc malloc and against the\n"
               "  plan the analysis appended to it, then each site of the plan alone; prints\n"
               "  the replayed saving per site beside the predicted one (medians of N\n"
               "  alternating runs each, default 3)\n");
}

static void trace_free(struct trace *t)
{
    for (size_t i = 0; i < t->nthr; i++) {
        free(t->thr[i].chunks);
        free(t->thr[i].lsz);
    }
    free(t->thr);
    free(t->slots);
    free(t->praw);
    free(t->ev);
    free(t->buf);
    free(t->osize);
    free(t->oslot);
    map_free(&t->site_slot);
}

/* The report sites of the plan (a slot each), by predicted saving. */
static struct rsite *report_sites(struct trace *t, size_t *n)
{
    struct rsite *rs = calloc(t->nslots, sizeof *rs);
    uint32_t *raw = malloc((t->npraw + 1) * sizeof *raw);
    size_t nrs = 0, nraw = 0;
    if (!rs || !raw) {
        free(rs);
        free(raw);
        return NULL;
    }
    for (size_t k = 1; k < t->nslots; k++) {
        const struct slot *s = &t->slots[k];
        struct rsite *r = &rs[nrs++];
        r->report = s->report;
        r->rec = s->rec;
        r->ts = s->ts;
        r->predicted_ns = s->predicted_ns;
        r->allocations = s->allocations;
        r->slot = k;
    }
    qsort(rs, nrs, sizeof *rs, cmp_rsite_predicted);
    for (size_t i = 0; i < nrs; i++) {
        rs[i].raw = raw + nraw;
        for (size_t j = 0; j < t->npraw; j++)
            if (t->praw[j].slot == rs[i].slot)
                raw[nraw++] = t->praw[j].raw;
        rs[i].nraw = (size_t)(raw + nraw - rs[i].raw);
    }
    if (nrs == 0)
        free(raw);
    *n = nrs;
    return rs;
}

int mra_replay_main(int argc, char **argv)
{
    const char *path = NULL, *json = NULL;
    int runs = 3;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0 && i + 1 < argc)
            json = argv[++i];
        else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
            char *e;
            long r = strtol(argv[++i], &e, 10);
            if (*e || r < 1 || r > 99) {
                fprintf(stderr, "memres-advise replay: --runs takes 1..99\n");
                return 2;
            }
            runs = (int)r;
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (argv[i][0] == '-' || path) {
            usage(stderr);
            return 2;
        } else
            path = argv[i];
    }
    if (!path) {
        usage(stderr);
        return 2;
    }
    struct trace t;
    memset(&t, 0, sizeof t);
    t.path = path;
    if (read_file(&t) != 0 || read_chunks(&t) != 0 || merge(&t) != 0) {
        trace_free(&t);
        return 1;
    }
    free(t.osize); /* the merge's */
    free(t.oslot);
    t.osize = NULL;
    t.oslot = NULL;
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    if (pages > 0 && psize > 0 && t.peak_live_bytes / 2 > (uint64_t)pages / 4 * (uint64_t)psize) {
        fprintf(stderr, "memres-advise replay: %s: the program's peak of live memory, %llu MiB, is more than half "
                        "of this machine's: not replayed\n", path, (unsigned long long)(t.peak_live_bytes >> 20));
        trace_free(&t);
        return 1;
    }
    if (!t.have_plan)
        fprintf(stderr, "memres-advise replay: %s has no plan (the analysis of a run with --trace appends it): "
                        "replaying glibc against itself\n", path);
    size_t nrs = 0;
    struct rsite *rs = report_sites(&t, &nrs);
    double *g = malloc((size_t)runs * 3 * sizeof *g);
    if (!rs || !g) {
        oom(&t);
        if (rs && nrs)
            free(rs[0].raw);
        free(rs);
        free(g);
        trace_free(&t);
        return 1;
    }
    double *pl = g + runs, *alone = g + 2 * runs;
    int rc = 0;

    /* glibc and the whole plan, alternating */
    for (size_t k = 0; k < t.nslots; k++)
        t.slots[k].on = true;
    for (int r = 0; r < runs && rc == 0; r++)
        if (replay_once(&t, false, &g[r]) != 0 || replay_once(&t, true, &pl[r]) != 0)
            rc = 1;
    double glibc_ns = rc == 0 ? median(g, runs) : 0, plan_ns = rc == 0 ? median(pl, runs) : 0;
    /* each report site alone (one alone: the whole plan), alternating with glibc */
    size_t nalone = nrs > 1 ? (nrs < MAX_ALONE ? nrs : MAX_ALONE) : 0;
    int aruns = t.nev > 20000000 ? 1 : runs;
    double *ga = malloc((size_t)runs * sizeof *ga);
    if (!ga)
        rc = oom(&t) != 0;
    for (size_t i = 0; i < nalone && rc == 0; i++) {
        for (size_t k = 1; k < t.nslots; k++)
            t.slots[k].on = k == rs[i].slot;
        for (int r = 0; r < aruns && rc == 0; r++)
            if (replay_once(&t, false, &ga[r]) != 0 || replay_once(&t, true, &alone[r]) != 0)
                rc = 1;
        if (rc == 0) {
            rs[i].saving_ns = median(ga, aruns) - median(alone, aruns);
            rs[i].replayed = true;
        }
    }
    if (nrs == 1) {
        rs[0].saving_ns = glibc_ns - plan_ns;
        rs[0].replayed = true;
    }
    free(ga);
    if (rc != 0) {
        if (nrs)
            free(rs[0].raw);
        free(rs);
        free(g);
        trace_free(&t);
        return 1;
    }

    double predicted = 0;
    for (size_t i = 0; i < nrs; i++)
        predicted += rs[i].predicted_ns;
    double saving = glibc_ns - plan_ns;
    FILE *out = stdout;
    fprintf(out, "memres-advise replay: %s: %llu allocations, %llu frees, %llu reallocs in %zu threads; "
                 "plan: %zu sites (%zu raw)\n",
            path, (unsigned long long)t.nallocs, (unsigned long long)t.nfrees, (unsigned long long)t.nreallocs,
            t.nthr, nrs, t.npraw);
    fprintf(out, "  %-6s %-20s %12s %14s %14s\n", "site", "plan", "allocations", "replayed ms", "predicted ms");
    for (size_t i = 0; i < nrs; i++) {
        const struct rsite *r = &rs[i];
        char name[40], rep[32];
        snprintf(name, sizeof name, "%s%s", mra_rec_name(r->rec), r->ts ? " (thread-safe)" : "");
        if (r->replayed)
            snprintf(rep, sizeof rep, "%.3f", r->saving_ns / 1e6);
        else
            snprintf(rep, sizeof rep, "-");
        fprintf(out, "  #%-5u %-20s %12llu %14s %14.3f\n", r->report, name, (unsigned long long)r->allocations, rep,
                r->predicted_ns / 1e6);
    }
    fprintf(out, "total: glibc %.3f ms, plan %.3f ms: replayed saving %.3f ms (%.1f%%), predicted %.3f ms\n",
            glibc_ns / 1e6, plan_ns / 1e6, saving / 1e6, glibc_ns > 0 ? 100 * saving / glibc_ns : 0,
            predicted / 1e6);
    fprintf(out, "(medians of %d alternating runs; a site's saving: the plan with that site alone, %d runs%s)\n", runs,
            nrs > 1 ? aruns : runs, nrs > MAX_ALONE ? "; sites beyond the first 16 not replayed alone" : "");

    if (json) {
        FILE *f = fopen(json, "w");
        if (!f) {
            fprintf(stderr, "memres-advise replay: %s: %s\n", json, strerror(errno));
            rc = 1;
        } else {
            fprintf(f, "{\n  \"version\": 1,\n  \"trace\": ");
            json_str(f, path);
            fprintf(f, ",\n  \"plan\": %s,\n  \"allocations\": %llu,\n  \"frees\": %llu,\n  \"reallocs\": %llu,\n"
                       "  \"threads\": %zu,\n  \"runs\": %d,\n",
                    t.have_plan ? "true" : "false", (unsigned long long)t.nallocs, (unsigned long long)t.nfrees,
                    (unsigned long long)t.nreallocs, t.nthr, runs);
            fprintf(f, "  \"glibc_ms\": %.6f,\n  \"plan_ms\": %.6f,\n  \"replayed_saving_ms\": %.6f,\n"
                       "  \"predicted_saving_ms\": %.6f,\n",
                    glibc_ns / 1e6, plan_ns / 1e6, saving / 1e6, predicted / 1e6);
            fprintf(f, "  \"glibc_runs_ms\": [");
            for (int r = 0; r < runs; r++)
                fprintf(f, "%s%.6f", r ? ", " : "", g[r] / 1e6);
            fprintf(f, "],\n  \"plan_runs_ms\": [");
            for (int r = 0; r < runs; r++)
                fprintf(f, "%s%.6f", r ? ", " : "", pl[r] / 1e6);
            fprintf(f, "],\n  \"sites\": [");
            for (size_t i = 0; i < nrs; i++) {
                const struct rsite *r = &rs[i];
                fprintf(f, "%s\n    {\"id\": %u, \"recommendation\": \"%s\", \"thread_safe\": %s, \"raw_sites\": [",
                        i ? "," : "", r->report, mra_rec_name(r->rec), r->ts ? "true" : "false");
                for (size_t m = 0; m < r->nraw; m++)
                    fprintf(f, "%s%u", m ? ", " : "", r->raw[m]);
                fprintf(f, "], \"allocations\": %llu, \"replayed_saving_ms\": ", (unsigned long long)r->allocations);
                if (r->replayed)
                    fprintf(f, "%.6f", r->saving_ns / 1e6);
                else
                    fprintf(f, "null");
                fprintf(f, ", \"predicted_saving_ms\": %.6f}", r->predicted_ns / 1e6);
            }
            fprintf(f, "%s]\n}\n", nrs ? "\n  " : "");
            if (fclose(f) != 0) {
                fprintf(stderr, "memres-advise replay: %s: write error\n", json);
                rc = 1;
            }
        }
    }
    if (nrs)
        free(rs[0].raw);
    free(rs);
    free(g);
    trace_free(&t);
    return rc;
}

/* ---- the plan chunk ---- */

int mra_trace_append_plan(const char *path, const struct mra_analysis *a)
{
    size_t count = 0, cap = 16;
    for (size_t i = 0; i < a->nsites; i++)
        if (a->sites[i].rec != MRA_NONE && a->sites[i].rec < MRA_RECS)
            count += a->sites[i].nraw;
    cap += count * 5 * 10;
    uint8_t *buf = malloc(cap), *p = buf;
    if (!buf) {
        fprintf(stderr, "memres-advise: %s: out of memory writing the plan\n", path);
        return -1;
    }
    p = mra_put_varint(p, count);
    for (size_t i = 0; i < a->nsites; i++) {
        const struct mra_site *s = &a->sites[i];
        if (s->rec == MRA_NONE || s->rec >= MRA_RECS)
            continue;
        double sv = s->predicted_saving_ns;
        uint64_t saving = sv > 0 ? (sv < 1.8e19 ? (uint64_t)(sv + 0.5) : UINT64_MAX) : 0;
        for (size_t j = 0; j < s->nraw; j++) {
            p = mra_put_varint(p, s->raw_ids[j]);
            p = mra_put_varint(p, (uint64_t)s->rec);
            p = mra_put_varint(p, s->thread_safe ? 1 : 0);
            p = mra_put_varint(p, s->id);
            p = mra_put_varint(p, saving); /* the report site's saving, on each of its raw sites */
        }
    }
    size_t n = (size_t)(p - buf);
    int rc = -1;
    FILE *f = fopen(path, "r+b");
    struct mra_trace_header hd;
    if (!f)
        fprintf(stderr, "memres-advise: %s: %s\n", path, strerror(errno));
    else if (fread(&hd, sizeof hd, 1, f) != 1 || memcmp(hd.magic, MRA_TRACE_MAGIC, 8) != 0)
        fprintf(stderr, "memres-advise: %s: not a trace\n", path);
    else if (n > UINT32_MAX || count > UINT32_MAX)
        fprintf(stderr, "memres-advise: %s: plan too large\n", path);
    else {
        struct mra_trace_chunk c = {MRA_TRACE_PLAN, (uint32_t)n, (uint32_t)count, 0};
        if (fseek(f, 0, SEEK_END) != 0 || fwrite(&c, sizeof c, 1, f) != 1 || fwrite(buf, 1, n, f) != n)
            fprintf(stderr, "memres-advise: %s: write error\n", path);
        else
            rc = 0;
    }
    if (f && fclose(f) != 0 && rc == 0) {
        fprintf(stderr, "memres-advise: %s: write error\n", path);
        rc = -1;
    }
    free(buf);
    return rc;
}
