/* SPDX-License-Identifier: MIT */
/* advise/analyze/trace.c -- a trace decoded for the replay (trace.h), and
 * the plan chunk the analysis appends to it (format.h).
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
 * arrays indexed by that number. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"

#define MAX_TICK ((uint64_t)1 << 62)
#define MAX_SIZE ((uint64_t)1 << 40)  /* a larger request is taken as garbage */
#define MAX_ALIGN ((uint64_t)1 << 30)
#define MAX_OBJECTS (UINT32_MAX - 1)
#define MAX_SLOTS ((uint32_t)1 << 29)

static int bad(const struct trace *t, size_t at, const char *what)
{
    fprintf(stderr, "memres-advise replay: %s: %s (at byte %zu): not a trace memres-advise wrote, or a damaged one\n",
            t->path, what, at);
    return -1;
}

int mra_trace_oom(const struct trace *t)
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
            return mra_trace_oom(t);
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
    uint64_t *v = mra_map_get(ids, id);
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
    if (mra_map_put(ids, id, t->nthr) != 0)
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
    mra_map_free(&t->site_slot);
    free(t->slots);
    free(t->praw);
    t->npraw = 0;
    t->slots = calloc((size_t)n + 1, sizeof *t->slots);
    t->praw = malloc(((size_t)n + 1) * sizeof *t->praw);
    if (!t->slots || !t->praw)
        return mra_trace_oom(t);
    t->nslots = 1;
    struct map reports = {0}; /* report site -> slot */
    for (uint64_t i = 0; i < n; i++) {
        uint64_t raw, rec, flags, report, saving;
        if (mra_get_varint(&p, end, &raw) != 0 || mra_get_varint(&p, end, &rec) != 0 ||
            mra_get_varint(&p, end, &flags) != 0 || mra_get_varint(&p, end, &report) != 0 ||
            mra_get_varint(&p, end, &saving) != 0) {
            mra_map_free(&reports);
            return bad(t, (size_t)(p - t->buf), "truncated plan entry");
        }
        if (raw > UINT32_MAX || rec >= MRA_RECS || flags > 1 || report > UINT32_MAX) {
            mra_map_free(&reports);
            return bad(t, (size_t)(p - t->buf), "bad plan entry");
        }
        if (rec == MRA_NONE)
            continue;
        if (mra_map_get(&t->site_slot, raw)) {
            mra_map_free(&reports);
            return bad(t, (size_t)(p - t->buf), "a site twice in the plan");
        }
        /* one slot, one allocator, per report site: where the advice is applied */
        uint64_t *r = mra_map_get(&reports, report);
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
        if ((!r && mra_map_put(&reports, report, k) != 0) || mra_map_put(&t->site_slot, raw, k) != 0) {
            mra_map_free(&reports);
            return mra_trace_oom(t);
        }
    }
    mra_map_free(&reports);
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
                rc = mra_trace_oom(t);
                break;
            }
            if (th->nchunks == th->capchunks) {
                size_t cap = th->capchunks ? th->capchunks * 2 : 8;
                struct chunkref *n = realloc(th->chunks, cap * sizeof *n);
                if (!n) {
                    rc = mra_trace_oom(t);
                    break;
                }
                th->chunks = n;
                th->capchunks = cap;
            }
            th->chunks[th->nchunks++] = (struct chunkref){off, c.nbytes, c.nevents};
        }
        off += c.nbytes;
    }
    mra_map_free(&ids);
    if (rc == 0 && !t->slots) { /* no plan: everything on glibc */
        t->slots = calloc(1, sizeof *t->slots);
        if (!t->slots)
            return mra_trace_oom(t);
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
                return mra_trace_oom(t);
            if (th->lsz[li].site1 != h->site + 1) {
                /* write the entry back, bring this site's in */
                if (th->lsz[li].site1 != 0 &&
                    mra_map_put(last_size, (uint64_t)th->id << 32 | (th->lsz[li].site1 - 1), th->lsz[li].size) != 0)
                    return mra_trace_oom(t);
                uint64_t *s = mra_map_get(last_size, (uint64_t)th->id << 32 | h->site);
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
            return mra_trace_oom(t);
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
        return mra_trace_oom(t);
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
            if (mra_tt_get(&objects, h->tick)) {
                rc = bad(t, h->at, "two live objects born at the same tick");
                break;
            }
            if (t->nobjects >= MAX_OBJECTS) {
                rc = bad(t, h->at, "too many objects");
                break;
            }
            uint64_t *sl = mra_map_get(&t->site_slot, h->site);
            uint32_t slot = sl ? (uint32_t)*sl : 0;
            if ((t->nobjects & (t->nobjects - 1)) == 0 && t->nobjects >= 1024) {
                uint64_t *n = realloc(t->osize, 2 * (size_t)t->nobjects * sizeof *n);
                if (n)
                    t->osize = n;
                uint32_t *o = realloc(t->oslot, 2 * (size_t)t->nobjects * sizeof *o);
                if (o)
                    t->oslot = o;
                if (!n || !o) {
                    rc = mra_trace_oom(t);
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
            if (mra_tt_set(&objects, h->tick, obj + 1) != 0) {
                rc = mra_trace_oom(t);
                break;
            }
            if ((rc = emit(t, (uint32_t)h->kind, slot, obj, h->size)) != 0)
                break;
            if (h->kind == R_ALIGNED && (rc = emit(t, R_ALIGNED, slot, obj, h->align)) != 0)
                break;
            uint64_t *w;
            if (nblocked > 0 && (w = mra_map_get(&waiting, h->tick)) != NULL) {
                /* wake the threads that wait on this birth */
                for (uint32_t wi = (uint32_t)*w; wi != UINT32_MAX;) {
                    uint32_t next = t->thr[wi].wait_next;
                    t->thr[wi].wait_next = UINT32_MAX;
                    heap_push(t, heap, &nheap, wi);
                    nblocked--;
                    wi = next;
                }
                mra_map_del(&waiting, h->tick);
            }
        } else {
            uint32_t o1 = mra_tt_get(&objects, h->tick);
            if (!o1) {
                /* born later in the merge (another thread's batch of ticks):
                 * this thread waits for that birth */
                uint64_t *w = mra_map_get(&waiting, h->tick);
                th->wait_next = w ? (uint32_t)*w : UINT32_MAX;
                if (mra_map_put(&waiting, h->tick, ti) != 0) {
                    rc = mra_trace_oom(t);
                    break;
                }
                nblocked++;
                continue;
            }
            uint32_t obj = o1 - 1, slot = t->oslot[obj];
            t->live_bytes -= t->osize[obj];
            if (h->kind == R_FREE) {
                mra_tt_clear(&objects, h->tick);
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
                bool waits = mra_map_get(&waiting, h->tick) != NULL;
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
    mra_map_free(&last_size);
    mra_tt_free(&objects);
    mra_map_free(&waiting);
    return rc;
}

int mra_trace_decode(struct trace *t)
{
    if (read_file(t) != 0 || read_chunks(t) != 0 || merge(t) != 0)
        return -1;
    free(t->osize); /* the merge's */
    free(t->oslot);
    t->osize = NULL;
    t->oslot = NULL;
    return 0;
}

void mra_trace_free(struct trace *t)
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
    mra_map_free(&t->site_slot);
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
