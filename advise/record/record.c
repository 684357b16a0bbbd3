/* SPDX-License-Identifier: MIT */
/* advise/record/record.c -- what the recorder does per call, all in one
 * translation unit so that the allocation path is one function with its
 * helpers inlined, as it was: an allocation's site found by the stack
 * cache (its return addresses read at the offsets a walk from the same
 * first frame and CFA found, compared whole with the stacks seen before),
 * else the stack captured (common/walk.h's cached walk, the frame-pointer
 * and return-address modes) and the site looked up (sites.c adds a new
 * one), the allocation, free or realloc counted in the thread's per-site figures and the site's
 * shared live counters, and its event written to the trace.  The
 * interposers (interpose.c) come here once they know the call is
 * recorded. */
#include "hot.h"

static unsigned walk_fp(struct tstate *ts, uintptr_t ra, uintptr_t fp, uint64_t *fr, unsigned depth)
{
    fr[0] = ra - 1;
    unsigned n = 1;
    uintptr_t lo = ts->walk.stk_lo, hi = ts->walk.stk_hi;
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
        return mra_unwind_stack(ra, cfa, fr, depth, false);
    if (g_stack_mode == STACK_FP)
        return walk_fp(ts, ra, cfa - 16, fr, depth);
    return mra_walk(&ts->walk, ra, cfa, fr, depth);
}

static inline bool frames_eq(const uint64_t *a, const uint64_t *b, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        if (a[i] != b[i])
            return false;
    return true;
}

/* The key of a free's stack: apart from the allocation sites' (a stack
 * may do both). */
#define FREE_STACK_SALT UINT64_C(0x5bd1e9955bd1e995)

static inline uint32_t site_lookup(struct tstate *ts, const uint64_t *fr, unsigned n, bool free_stack)
{
    uint64_t h = mra_frames_hash(fr, n); /* 64 bits: a collision among 2^18 sites is
                                             about 2^-29 likely per run; the global
                                             table compares the frames */
    if (free_stack)
        h ^= FREE_STACK_SALT;
    struct sc_ent *e = &ts->sc[(h >> 7) & (SC_SIZE - 1)];
    if (LIKELY(e->hash == h))
        return (uint32_t)e->site;
    size_t mask = ((size_t)1 << SLOT_BITS) - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        uint32_t s = atomic_load_explicit(&g_slots[i], memory_order_acquire);
        if (UNLIKELY(s == 0)) {
            s = mrr_site_create(fr, n, h, free_stack);
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

/* ---- the stack cache (record.h: struct sk_shape, struct sk_ent) ----
 *
 * Why it is exact: the cached walk (common/walk.h) reads frame i + 1's
 * return address at CFA + the sizes of frames 0..i, each size a function
 * of the frame's return address (the frame-size table, whose entries only
 * ever go from unknown to a size, or to "varies" with its epoch bumped).
 * So when the first return address is the same and the values read at a
 * shape's offsets are the frames that a walk with that shape found, a
 * walk now would read the same slots and find the same frames: the entry
 * holds the frames and the shape's signature, and both are compared whole.
 * The recursion that makes one first frame lead to many stacks (a tree
 * builder's left and right calls) changes the values, not the shape.  A
 * shape is kept only for a walk that ended at the depth asked or at the
 * stack's end, never at the thread's stack bound or a bad address, with
 * every size below 256 words.  The walker's check against the unwinder
 * counts the cached stacks too, and takes the slow path when due. */

/* Whether stacks are cached (start.c sets g_sk_on). */
static inline bool sk_on(void)
{
    return g_sk_on;
}

/* The hash of return addresses v[0..n): each frame weighed by 8 to the
 * power of its distance from the last (one lea a frame; rotations cost
 * two instructions), so that stacks differing by the same few frames (a
 * recursion's left and right calls, return addresses a few bytes apart)
 * differ by distinct sums, then mixed by one multiply whose top bits pick
 * the set.  Only the set and the tag depend on it: stacks are compared
 * whole. */
static inline __attribute__((always_inline)) uint64_t sk_hash(const uint64_t *v, unsigned n)
{
    uint64_t h = v[0];
    for (unsigned i = 1; i < n; i++)
        h = h * 8u + v[i];
    h *= UINT64_C(0x9E3779B97F4A7C15);
    return h ^ h >> 29;
}

static inline uint32_t sk_tag(uint64_t h)
{
    return (uint32_t)(h >> 16) | 1u;
}

static inline unsigned sk_shape_set(uintptr_t ra, uintptr_t cfa)
{
    return (unsigned)(((ra ^ cfa * 8u) * UINT64_C(0x9E3779B97F4A7C15)) >> (64 - SK_SHAPE_BITS));
}

/* Whether the stacks a[0..n) and b[0..n) are the same; the full depth
 * two frames at a time (a a way's, 64-byte aligned; b 16-byte aligned). */
static inline __attribute__((always_inline)) bool sk_same(const uint64_t *a, const uint64_t *b, unsigned n)
{
#if defined(__x86_64__) && defined(__SSE2__)
    if (n == SK_FRAMES) {
        __m128i d = _mm_setzero_si128();
        for (unsigned i = 0; i < SK_FRAMES; i += 2)
            d = _mm_or_si128(d, _mm_xor_si128(_mm_load_si128((const __m128i *)(const void *)(a + i)),
                                              _mm_load_si128((const __m128i *)(const void *)(b + i))));
        return _mm_movemask_epi8(_mm_cmpeq_epi8(d, _mm_setzero_si128())) == 0xffff;
    }
#endif
    uint64_t diff = 0;
    for (unsigned i = 0; i < n; i++)
        diff |= a[i] ^ b[i];
    return diff == 0;
}

/* The way of set that holds the stack v[0..n) read with shape sig, or
 * SK_WAYS. */
static inline __attribute__((always_inline)) unsigned sk_way(const struct sk_set *set, uint32_t tag, uint64_t sig, const uint64_t *v, unsigned n)
{
    for (unsigned k = 0; k < SK_WAYS; k++) {
        if (set->tag[k] != tag || set->sig[k] != sig)
            continue;
        if (sk_same(set->ra[k], v, n))
            return k;
    }
    return SK_WAYS;
}

/* The site of the stack read from cfa with shape sh, if the cache holds it
 * (else 0). */
static inline __attribute__((always_inline)) uint32_t sk_read(const struct tstate *ts, const struct sk_shape *sh,
                                                              uintptr_t cfa, unsigned n)
{
    _Alignas(16) uint64_t v[SK_FRAMES];
    v[0] = sh->ra;
    for (unsigned i = 1; i < n; i++)
        memcpy(&v[i], (const void *)(cfa + sh->off[i]), 8);
    uint64_t h = sk_hash(v, n);
    const struct sk_set *set = &ts->sk[h >> (64 - SK_SET_BITS)];
    unsigned k = sk_way(set, sk_tag(h), sh->sig, v, n);
    return k == SK_WAYS ? 0 : set->site[k];
}

/* The site of the allocation stack from (ra, cfa) if the cache knows it,
 * else 0. */
static inline uint32_t sk_find(struct tstate *ts, uintptr_t ra, uintptr_t cfa)
{
    struct mra_walker *w = &ts->walk;
    if (UNLIKELY(atomic_load_explicit(&mra_fc_epoch, memory_order_relaxed) != ts->sk_epoch))
        return 0;
    if (UNLIKELY(w->verify_ctr + 1 >= w->verify_every))
        return 0; /* the slow path's walk is checked against the unwinder */
    const struct sk_shape *sh = ts->sk_shape[sk_shape_set(ra, cfa)];
    unsigned way = 0;
    while (sh->ra != ra || sh->cfa != cfa) {
        if (++way == SK_SHAPE_WAYS)
            return 0;
        sh++;
    }
    /* no bounds check: sk_learn kept the shape only with its slots inside
     * the thread's stack, whose bounds do not change, and the shape is
     * found by its CFA, so the same slots are read */
    unsigned n = (unsigned)(sh->sig & 15u);
    /* the full depth unrolled: the common case */
    uint32_t site = LIKELY(n == SK_FRAMES) ? sk_read(ts, sh, cfa, SK_FRAMES) : sk_read(ts, sh, cfa, n);
    if (site != 0)
        w->verify_ctr++;
    return site;
}

/* Teaches the cache the stack fr[0..n) of site, walked from cfa. */
static NOINLINE void sk_learn(struct tstate *ts, uintptr_t cfa, const uint64_t *fr, unsigned n, uint32_t site)
{
    struct mra_walker *w = &ts->walk;
    uint32_t ep = atomic_load_explicit(&mra_fc_epoch, memory_order_relaxed);
    if (ep != ts->sk_epoch) {
        memset(ts->sk_shape, 0, sizeof ts->sk_shape);
        memset(ts->sk, 0, sizeof ts->sk);
        memset(ts->sk_next, 0, sizeof ts->sk_next);
        ts->sk_epoch = ep;
    }
    if (n == 0 || n > SK_FRAMES)
        return;
    /* the walk must have ended where a walk with these sizes ends: at the
     * depth asked, or at a frame whose code is the stack's end */
    if (n < g_depth && mra_fsz_get(w, fr[n - 1] + 1) != MRA_FS_END)
        return;
    struct sk_shape sh = { .ra = fr[0] + 1, .cfa = cfa, .sig = n };
    uint32_t off = 0;
    for (unsigned i = 0; i + 1 < n; i++) {
        uint32_t code = mra_fsz_get(w, fr[i] + 1);
        if (code == MRA_FS_MISS || code >= 256u)
            return;
        sh.sig |= (uint64_t)code << (8 + 8 * i);
        off += code * 8u;
        sh.off[i + 1] = (uint16_t)(off - 8u);
    }
    if (cfa < w->stk_lo || cfa + sh.off[n - 1] + 8u > w->stk_hi)
        return;
    /* one shape per (first return address, CFA): the last walk's */
    unsigned si = sk_shape_set(sh.ra, cfa);
    struct sk_shape *shapes = ts->sk_shape[si];
    unsigned way = 0;
    while (way < SK_SHAPE_WAYS && !(shapes[way].ra == sh.ra && shapes[way].cfa == cfa))
        way++;
    if (way == SK_SHAPE_WAYS) {
        way = ts->sk_shape_next[si];
        ts->sk_shape_next[si] = (way + 1) % SK_SHAPE_WAYS;
    }
    shapes[way] = sh;
    _Alignas(16) uint64_t v[SK_FRAMES];
    for (unsigned i = 0; i < n; i++)
        v[i] = fr[i] + 1;
    uint64_t h = sk_hash(v, n);
    unsigned ki = (unsigned)(h >> (64 - SK_SET_BITS));
    struct sk_set *set = &ts->sk[ki];
    uint32_t tag = sk_tag(h);
    if (sk_way(set, tag, sh.sig, v, n) != SK_WAYS)
        return; /* known: walked for the unwinder's check */
    unsigned k = ts->sk_next[ki];
    ts->sk_next[ki] = (uint8_t)((k + 1) % SK_WAYS);
    set->tag[k] = tag;
    set->sig[k] = sh.sig;
    set->site[k] = site;
    memcpy(set->ra[k], v, n * sizeof *v);
}

/* The site of the stack from (ra, cfa), walked and looked up (0: none
 * could be made); an allocation's taught to the cache. */
static NOINLINE uint32_t stack_walk_site(struct tstate *ts, uintptr_t ra, uintptr_t cfa, bool free_stack)
{
    uint64_t fr[MRA_MAX_DEPTH];
    unsigned nf = capture(ts, ra, cfa, fr);
    uint32_t site = site_lookup(ts, fr, nf, free_stack);
    if (!free_stack && site != 0 && sk_on())
        sk_learn(ts, cfa, fr, nf, site);
    return site;
}

/* The site of an allocation's stack from (ra, cfa): the cache's, else
 * walked. */
static inline uint32_t alloc_site(struct tstate *ts, uintptr_t ra, uintptr_t cfa)
{
    if (LIKELY(sk_on())) {
        uint32_t s = sk_find(ts, ra, cfa);
        if (LIKELY(s != 0))
            return s;
    }
    return stack_walk_site(ts, ra, cfa, false);
}

/* A site's live counters (hot.h's prog_add, prog_sub for the program's):
 * its recorded objects, each as the w allocations it stands for; true
 * when the program's live bytes may have reached a new peak. */
static inline __attribute__((always_inline)) bool live_add(struct gsite *g, uint64_t n, uint64_t w)
{
    uint64_t nw = n * w;
    if (LIKELY(!LD(g_multi))) {
        uint64_t lo = LD(g->live_objects) + w, lb = LD(g->live_bytes) + nw;
        uint64_t ac = lo == w ? nw : LD(g->arena_cur) + nw;
        ST(g->live_objects, lo);
        ST(g->live_bytes, lb);
        ST(g->arena_cur, ac);
        if (UNLIKELY(lo > LD(g->peak_objects)))
            ST(g->peak_objects, lo);
        if (UNLIKELY(lb > LD(g->peak_bytes)))
            ST(g->peak_bytes, lb);
        if (UNLIKELY(ac > LD(g->arena_peak)))
            ST(g->arena_peak, ac);
        return prog_add_1(n);
    }
    uint64_t lo = cnt_add(&g->live_objects, w);
    uint64_t lb = cnt_add(&g->live_bytes, nw);
    cnt_max(&g->peak_objects, lo);
    cnt_max(&g->peak_bytes, lb);
    uint64_t ac;
    if (lo == w) {
        ac = nw;
        atomic_store_explicit(&g->arena_cur, nw, memory_order_relaxed);
    } else {
        ac = cnt_add(&g->arena_cur, nw);
    }
    cnt_max(&g->arena_peak, ac);
    return prog_add_n(n);
}

static inline __attribute__((always_inline)) void live_sub(struct gsite *g, uint64_t n, uint64_t w)
{
    if (LIKELY(!LD(g_multi))) {
        ST(g->live_objects, LD(g->live_objects) - w);
        ST(g->live_bytes, LD(g->live_bytes) - n * w);
        prog_sub_1(n);
        return;
    }
    cnt_add(&g->live_objects, (uint64_t)0 - w);
    cnt_add(&g->live_bytes, (uint64_t)0 - n * w);
    prog_sub_n(n);
}

/* Counts size n in l's sizes; the size range follows the sizes not in
 * them (the table and the range are reset together). */
static inline void size_note(struct lsite *l, uint64_t n, uint64_t w)
{
    if (LIKELY(l->nsz != 0 && l->sz[0].size == n)) {
        l->sz[0].count += w;
        return;
    }
    for (uint32_t i = 1; i < l->nsz; i++) {
        if (l->sz[i].size == n) {
            if ((l->sz[i].count += w) > l->sz[i - 1].count) {
                struct mra_size_count t = l->sz[i];
                l->sz[i] = l->sz[i - 1];
                l->sz[i - 1] = t;
            }
            return;
        }
    }
    if (n < l->s.min_size)
        l->s.min_size = n;
    if (n > l->s.max_size)
        l->s.max_size = n;
    if (l->nsz < LSIZES) {
        l->sz[l->nsz].size = n;
        l->sz[l->nsz].count = w;
        l->nsz++;
        return;
    }
    l->sz_other += w;
    l->sz_overflow = 1;
}

/* The end of a burst of frees (an allocation, or a merge): a group's frees
 * in it count as freed together (on the group's first site) when there
 * were two or more and no object of the group younger than the oldest of
 * them is left live on the thread (the ring holds the youngest live ones):
 * what an arena reset frees.  A collector's sweep, which also frees in
 * bursts, leaves younger survivors.
 * Sampled, a burst in an exact window whose frees were all of recorded
 * objects, the oldest born in the window, is judged as recording every
 * allocation would (sample.c).  Outside, the ring holds the recorded
 * objects only, and a burst tells only where it shows a younger recorded
 * survivor (not together), or had two recorded frees and left no younger
 * recorded one (together); the others tell nothing (a recorded object
 * among unrecorded survivors, in a collector's sweep, would look freed
 * together, and still does where the recorded ones are sparse: an upper
 * estimate).  The share of the frees of the bursts that tell stands for
 * all (profile_out.c). */
NOINLINE void mrr_burst_end(struct tstate *ts)
{
    bool sampled = g_sampling;
    for (uint32_t i = 0; i < ts->nburst; i++) {
        struct lsite *l = lsite_get(ts, ts->burst_sites[i]);
        if (!l || l->burst_epoch != ts->burst_epoch)
            continue;
        bool younger = l->rcount != 0 && l->ring[(l->rhead + l->rcount - 1) % RING] > l->burst_min;
        if (!sampled) {
            if (l->burst_n >= 2 && !younger)
                l->s.freed_together += l->burst_n;
            continue;
        }
        if (ts->in_win && !ts->burst_unrec && l->burst_min >= ts->win_tick) {
            /* judged as recording every allocation would (sample.c) */
            l->s.win_together_frees += l->burst_recs;
            if (l->burst_recs >= 2 && !younger)
                l->s.win_together += l->burst_recs;
        }
        if (younger) {
            l->s.together_judged += l->burst_n;
        } else if (l->burst_recs >= 2) {
            l->s.freed_together += l->burst_n;
            l->s.together_judged += l->burst_n;
        } else {
            l->s.together_unjudged += l->burst_n;
        }
    }
    ts->nburst = 0;
    ts->burst_epoch++;
    if (ts->burst_epoch == 0)
        ts->burst_epoch = 1;
}

/* Writes p's header h (in the object or a side record) and its tag word
 * (site field sf) and counts the allocation (site != 0), which stands for
 * w (1 unless sampled; sampled a constant where it is inlined). */
static inline __attribute__((always_inline)) void note_alloc(struct tstate *ts, uint32_t site, void *p,
                                                             struct hdr *h, uint32_t sf, size_t n, unsigned alog,
                                                             size_t align, uint64_t w, bool sampled)
{
    uint64_t tick = next_tick(ts);
    uint64_t t = thread_time(ts);
    h->birth_time = (t & BIRTH_MASK) | w << BIRTH_BITS;
    h->size_misc = (uint64_t)n | (uint64_t)alog << 58;
    h->tick_thread = (tick & TICK_MASK) << THR_BITS | (ts->index & THR_MASK);
    *tagw_of(p) = (uint64_t)tag_of(p) << 32 | sf;
    if (UNLIKELY(ts->nburst != 0))
        mrr_burst_end(ts);
    if (sampled)
        ts->burst_unrec = false;
    struct lsite *l = lsite_get(ts, site);
    if (UNLIKELY(!l))
        return;
    struct lstats *s = &l->s;
    if (UNLIKELY(s->first_tick == 0)) /* (ticks start at 1) */
        s->first_tick = tick;
    s->allocations += w;
    s->bytes += n * w;
    s->last_tick = tick;
    if (align > 16)
        s->aligned += w;
    if (LIKELY(w != 0))
        size_note(l, n, w);
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
    if (UNLIKELY(live_add(g_sites[site], n, w)))
        tl_peak_note(tick, t);
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


/* Whether a free takes the youngest live object of the group (stack-like).
 * Sampled, only the recorded objects are in the ring.  A free of an object
 * born in the current exact window (sample.c) is judged as recording
 * every allocation judges it (win_stack_*); outside, a free shows whether
 * its object was the youngest only where another recorded one of the
 * group is live (stack_judged), a recorded object alone in the ring
 * looking like the top of a stack in any order of frees (a tree's, freed
 * children first).  The share of the judged frees stands for all
 * (profile_out.c). */
static inline __attribute__((always_inline)) void ring_free(struct lsite *l, uint64_t birth, struct lstats *s,
                                                            uint64_t w, bool sampled, bool exact)
{
    /* exact: sampled, in an exact window (sample.c), and the object born
     * in it: every younger one of the group was recorded */
    if (exact)
        s->win_stack_frees++;
    if (LIKELY(l->rcount != 0)) {
        uint32_t top = (l->rhead + l->rcount - 1) % RING;
        if (LIKELY(l->ring[top] == birth)) {
            if (!sampled) {
                s->stack_like += w;
            } else if (exact) {
                s->win_stack_like++;
            } else if (l->rcount + l->rlost >= 2) {
                s->stack_like += w;
                s->stack_judged += w;
            }
            l->rcount--;
            l->rlast_pop = birth;
            return;
        }
        if (sampled && !exact && birth < l->ring[top])
            s->stack_judged += w; /* a younger recorded one is live */
        /* the ring holds births in increasing order: search only within */
        if (birth < l->ring[l->rhead] || birth > l->ring[top])
            return;
        for (uint32_t k = l->rcount - 1; k-- > 0;) {
            uint32_t j = (l->rhead + k) % RING;
            if (l->ring[j] == birth) {
                for (uint32_t m = k; m + 1u < l->rcount; m++)
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
        if (!sampled) {
            s->stack_like += w;
        } else if (exact) {
            s->win_stack_like++;
        } else if (l->rlost >= 2) {
            s->stack_like += w;
            s->stack_judged += w;
        }
        l->rlost--;
        l->rlast_pop = birth;
    }
}

/* sampled: a constant where it is inlined, so that recording every
 * allocation (weight 1) pays for no weights */
static inline __attribute__((always_inline)) void note_free(struct tstate *ts, struct hdr *h, uint32_t site,
                                                            bool sampled)
{
    uint64_t n = h->size_misc & SIZE_MASK;
    uint64_t w = sampled ? hdr_weight(h) : 1;
    struct lsite *l = lsite_get(ts, site);
    struct gsite *g = g_sites[site];
    live_sub(g, n, w);
    if (UNLIKELY(!l))
        return;
    struct lstats *s = &l->s;
    uint64_t life;
    uint64_t birth = birth_tick(ts, h, &life);
    uint64_t lns = since_birth(thread_time(ts), h->birth_time);
    if (g_use_tsc)
        lns = time_to_ns(lns);
    s->frees += w;
    s->freed_bytes += n * w;
    s->lifetime_ticks_sum += life * w;
    s->lifetime_ns_sum += lns * w;
    s->hist_ticks[mra_bucket(life)] += w;
    s->hist_ns[mra_bucket(lns)] += w;
    /* the burst: frees of this thread with no allocation between, of any
     * sites, followed per group */
    struct lsite *gr = l->grp;
    if (gr->burst_epoch != ts->burst_epoch) {
        if (UNLIKELY(ts->nburst == BURST_SITES))
            mrr_burst_end(ts);
        gr->burst_epoch = ts->burst_epoch;
        gr->burst_min = birth;
        gr->burst_n = 0;
        gr->burst_recs = 0;
        ts->burst_sites[ts->nburst++] = g->group;
    }
    gr->burst_n += (uint32_t)w;
    if (gr->burst_recs != UINT16_MAX)
        gr->burst_recs = (uint16_t)(gr->burst_recs + 1);
    if (birth < gr->burst_min)
        gr->burst_min = birth;
    if ((h->tick_thread & THR_MASK) != (ts->index & THR_MASK))
        s->remote_frees += w;
    else
        ring_free(gr, birth, s, w, sampled, sampled && ts->in_win && birth >= ts->win_tick);
    if (ts->tbuf) {
        uint8_t *q = tr_room(ts);
        q = mra_put_varint(q, mra_zigzag((int64_t)(ts->tr_prev_tick - birth)) << 2 | MRA_EV_FREE);
        tr_done(ts, q, 1);
    }
}


/* A free on a thread whose state was already merged and released (a
 * destructor of another key ran after ours): counted straight into the
 * site under the merge lock. */
static COLD void late_free(struct hdr *h, uint32_t site)
{
    uint64_t n = h->size_misc & SIZE_MASK, w = hdr_weight(h);
    struct gsite *g = g_sites[site];
    atomic_fetch_add_explicit(&g->live_objects, (uint64_t)0 - w, memory_order_relaxed);
    atomic_fetch_add_explicit(&g->live_bytes, (uint64_t)0 - n * w, memory_order_relaxed);
    atomic_fetch_add_explicit(&g_live_objects, (uint64_t)-1, memory_order_relaxed);
    atomic_fetch_add_explicit(&g_live_bytes, (uint64_t)0 - n, memory_order_relaxed);
    atomic_fetch_add_explicit(&g_all_frees, 1, memory_order_relaxed);
    pthread_mutex_lock(&g_merge_mu);
    g->mg->m.frees += w;
    g->mg->m.freed_bytes += n * w;
    pthread_mutex_unlock(&g_merge_mu);
}


/* The end of a timed hook: its own parts [t0, t1] and [t2, now] (glibc's
 * call between t1 and t2 left out) for w hooks, and the timeline's point
 * (after the timed part: it would weigh w times). */
static void hook_timed(struct tstate *ts, uint64_t t0, uint64_t t1, uint64_t t2, uint32_t w)
{
    ts->hook_time += timed_hook((int64_t)(t1 - t0) + (int64_t)(now_time() - t2)) * w;
    mrr_tl_sample(ts, t2);
}

/* The timed hooks of objects the sampling passed over (u_left's
 * countdown at its end): the hook's own part timed, glibc's call left
 * out, weighed by the gap -- one in UNSAMPLED_EVERY, the hooks being
 * alike and their fences as costly as the rest of them. */
#define UNSAMPLED_EVERY (4u * SAMPLE_EVERY)
static uint32_t unsampled_gap(struct tstate *ts)
{
    uint32_t w = ts->u_gap;
    ts->u_gap = ts->u_left = sample_gap(ts) * (UNSAMPLED_EVERY / SAMPLE_EVERY);
    return w;
}

NOINLINE void *mrr_unsampled_timed(struct tstate *ts, size_t n, bool zero)
{
    tls_guard++;
    uint32_t w = unsampled_gap(ts);
    uint64_t t0 = now_time();
    uint64_t t1 = fenced_time();
    char *raw = zero ? __libc_calloc(1, n + UHDR) : __libc_malloc(n + UHDR);
    uint64_t t2 = fenced_time();
    void *p = unsampled_made(ts, raw, n);
    hook_timed(ts, t0, t1, t2, w);
    tls_guard--;
    return p;
}

NOINLINE void mrr_unsampled_free_timed(struct tstate *ts, void *raw, uint64_t n)
{
    tls_guard++;
    uint32_t w = unsampled_gap(ts);
    uint64_t t0 = now_time();
    prog_sub(n);
    uint64_t t1 = fenced_time();
    free_raw(0, raw);
    uint64_t t2 = fenced_time();
    hook_timed(ts, t0, t1, t2, w);
    tls_guard--;
}

/* A recorded allocation; sampled: a constant where it is inlined (two
 * copies: mrr_rec_alloc, mrr_rec_alloc_sampled), so that recording every
 * allocation pays nothing for the sampling. */
static inline __attribute__((always_inline)) void *rec_alloc_body(size_t n, size_t align, bool zero, uintptr_t ra,
                                                                  uintptr_t cfa, bool sampled)
{
    tls_guard++;
    struct tstate *ts = get_ts();
    if (UNLIKELY(!ts)) {
        tls_guard--;
        return align > 16 ? __libc_memalign(align, n) : zero ? __libc_calloc(1, n) : __libc_malloc(n);
    }
    /* wt: the allocations this one stands for; w: the hooks its timing
     * does (sampled, every recorded one is timed, its glibc time standing
     * for wt calls) */
    uint64_t wt = 1;
    uint32_t w, hw = 0;
    if (sampled) {
        if (align <= 16) {
            /* rec_alloc (interpose.c) passed it on: picked (its way is 0
             * now), in an exact window, at the window's turn, or the
             * thread had no state yet */
            if (UNLIKELY(ts->win_left == 0))
                mrr_window_turn(ts);
            uint64_t sz = sample_size(n);
            if (ts->alloc_left != 0 && sample_skip(ts, sz)) {
                if (!ts->in_win) {
                    void *p = unsampled_alloc(ts, n, zero);
                    tls_guard--;
                    return p;
                }
                wt = 0; /* in a window, not picked: for the order of frees alone */
            } else {
                ts->alloc_left = mrr_sample_gap(ts);
                wt = mrr_sample_weight(ts, sz);
            }
        }
        ts->all_allocs++;
        ts->all_bytes += n;
        w = sample_rec(ts, (uint32_t)wt, &hw);
    } else {
        w = hw = sample_now(ts);
    }
    uint64_t t0 = w ? now_time() : 0, t1 = 0, t2 = 0;
    uint32_t site = alloc_site(ts, ra, cfa);
    /* sampled, the header in a side record (side.c) where one is left */
    uint32_t side = sampled && site != 0 && align <= 16 ? mrr_side_get(ts) : 0;
    if (UNLIKELY(w))
        t1 = fenced_time();
    void *raw, *p;
    unsigned alog = 4;
    if (align > 16) {
        alog = (unsigned)__builtin_ctzll(align);
        raw = __libc_memalign(align, n + align);
        p = raw ? (char *)raw + align : NULL;
    } else {
        size_t pad = side ? UHDR : HDR;
        raw = zero ? __libc_calloc(1, n + pad) : __libc_malloc(n + pad);
        p = raw ? (char *)raw + pad : NULL;
    }
    if (UNLIKELY(w))
        t2 = fenced_time();
    if (UNLIKELY(p == NULL) && side)
        mrr_side_put(ts, side);
    if (LIKELY(p != NULL)) {
        if (LIKELY(site != 0)) {
            struct hdr *h = hdr_of(p);
            uint32_t sf = site;
            if (side) {
                *usize_of(p) = side;
                h = &g_side[side];
                sf |= SITE_SIDE;
            }
            note_alloc(ts, site, p, h, sf, n, alog, align, sampled ? wt : 1, sampled);
            if (UNLIKELY(w))
                glibc_note(ts, site, timed_fenced(t1, t2, n), w);
        } else {
            struct hdr *h = hdr_of(p);
            h->size_misc = (uint64_t)n | (uint64_t)alog << 58;
            h->tick_thread = 0;
            h->tag_site = (uint64_t)tag_of(p) << 32;
        }
    }
    if (UNLIKELY(w))
        hook_timed(ts, t0, t1, t2, hw);
    tls_guard--;
    return p;
}

NOINLINE void *mrr_rec_alloc(size_t n, size_t align, bool zero, uintptr_t ra, uintptr_t cfa)
{
    return rec_alloc_body(n, align, zero, ra, cfa, false);
}

NOINLINE void *mrr_rec_alloc_sampled(size_t n, size_t align, bool zero, uintptr_t ra, uintptr_t cfa)
{
    return rec_alloc_body(n, align, zero, ra, cfa, true);
}

/* The stack of a sampled free, counted on the freed object's site. */
static void free_stack_note(struct tstate *ts, uint32_t site, uintptr_t ra, uintptr_t cfa, uint32_t w)
{
    uint32_t fs = stack_walk_site(ts, ra, cfa, true);
    struct lsite *l = fs ? lsite_get(ts, site) : NULL;
    if (l)
        mra_free_sites_add(l->s.free_sites, l->s.free_site_counts, &l->s.nfree_sites, fs, w);
}

/* The rest of a timed free of p (the hook began at t0): its stack noted
 * and glibc's part timed, standing for w frees; the hook's own part for
 * hw hooks (record.h: sample_now, sample_rec). */
static NOINLINE void timed_free(struct tstate *ts, void *p, struct hdr *h, uint32_t site, void *raw, uintptr_t ra,
                                uintptr_t cfa, uint32_t w, uint32_t hw, uint64_t t0)
{
    /* the free's stack is walked on the sampled frees only: its time counts
     * once, the rest of the hook's for the w frees the sample stands for */
    uint64_t ta = now_time();
    free_stack_note(ts, site, ra, cfa, w);
    uint64_t tb = now_time();
    uint64_t size = h->size_misc & SIZE_MASK;
    *tagw_of(p) = 0;
    uint64_t t1 = fenced_time();
    free_raw(site, raw);
    uint64_t t2 = fenced_time();
    /* the free's end (t2 to the caller) is not timed: the fenced read's
     * part of it is taken off as for an allocation's */
    int64_t walk = timed(ta, tb);
    int64_t rest = timed_hook((int64_t)(t1 - t0) - (int64_t)(tb - ta) + g_fenced_plain_cost);
    ts->hook_time += rest * hw + walk;
    glibc_note(ts, site, timed_fenced(t1, t2, size), w);
    mrr_tl_sample(ts, t2);
}

/* Counts the free of a recorded object p (header h, site field sf) and
 * frees it; sampled as rec_alloc_body's. */
static inline __attribute__((always_inline)) void rec_free_body(void *p, struct hdr *h, uint32_t sf, void *raw,
                                                                uintptr_t ra, uintptr_t cfa, bool sampled)
{
    tls_guard++;
    uint32_t site = sf & ~SITE_SIDE;
    uint32_t side = sampled && (sf & SITE_SIDE) ? (uint32_t)*usize_of(p) : 0;
    struct tstate *ts = get_ts();
    if (LIKELY(ts != NULL)) {
        uint32_t hw = 0, w;
        if (sampled) {
            ts->all_frees++;
            w = sample_rec(ts, (uint32_t)hdr_weight(h), &hw);
        } else {
            w = hw = sample_now(ts);
        }
        uint64_t t0 = UNLIKELY(w != 0) ? now_time() : 0;
        note_free(ts, h, site, sampled);
        if (UNLIKELY(w != 0)) {
            timed_free(ts, p, h, site, raw, ra, cfa, w, hw, t0);
            if (side)
                mrr_side_put(ts, side);
            tls_guard--;
            return;
        }
    } else {
        late_free(h, site);
    }
    *tagw_of(p) = 0;
    free_raw(site, raw);
    if (side)
        mrr_side_put(ts, side);
    tls_guard--;
}

NOINLINE void mrr_rec_free(void *p, struct hdr *h, uint32_t sf, void *raw, uintptr_t ra, uintptr_t cfa)
{
    rec_free_body(p, h, sf, raw, ra, cfa, false);
}

NOINLINE void mrr_rec_free_sampled(void *p, struct hdr *h, uint32_t sf, void *raw, uintptr_t ra, uintptr_t cfa)
{
    rec_free_body(p, h, sf, raw, ra, cfa, true);
}

/* The realloc of an object the sampling passed over (n: 1..MAX_REQ): it
 * stays unsampled, and only the program's live bytes change. */
NOINLINE void *mrr_unsampled_realloc(void *p, size_t n)
{
    uint64_t old = *usize_of(p) & SIZE_MASK;
    uintptr_t e0 = heap_end();
    char *raw = __libc_realloc(uraw_of(p), n + UHDR);
    if (!raw)
        return NULL;
    char *np = raw + UHDR;
    *usize_of(np) = (uint64_t)n | (uint64_t)4 << 58;
    *tagw_of(np) = (uint64_t)tag_of(np) << 32 | SITE_UNSAMPLED;
    if (recording()) {
        if (UNLIKELY(heap_end() < e0))
            mrr_heap_trimmed(0, e0, heap_end());
        uint64_t pb = cnt_add(&g_live_bytes, (uint64_t)n - old);
        cnt_max(&g_peak_bytes, pb);
        struct tstate *ts = tls_ts;
        if (ts) {
            ts->all_reallocs++;
            tl_peak_note(ts->last_tick, ts->t_cur);
        } else {
            atomic_fetch_add_explicit(&g_all_reallocs, 1, memory_order_relaxed);
        }
    }
    return np;
}

/* glibc's free of raw's chunk, watching what it gives back (heap.c): a
 * chunk above fastbin size (128 bytes, glibc's default; smaller ones stop
 * in a bin) can end in a trim, an mmapped one (a page at least) is
 * unmapped.  sz: the chunk's size word, flags in its low 3 bits.  (A
 * program that lowers glibc.malloc.mxfast has trims this does not see.) */
COLD void mrr_free_watched(uint32_t site, void *raw, uint64_t sz)
{
    if (sz & 2u) {
        __libc_free(raw);
        mrr_heap_unmapped(site, (size_t)(sz & ~(uint64_t)7));
        return;
    }
    uintptr_t e0 = heap_end();
    __libc_free(raw);
    if (UNLIKELY(heap_end() < e0))
        mrr_heap_trimmed(site, e0, heap_end());
}
