/* SPDX-License-Identifier: MIT */
/* advise/record/interpose.c -- the interposed malloc family: malloc,
 * free, calloc, realloc, reallocarray, memalign, aligned_alloc,
 * posix_memalign, valloc, pvalloc and malloc_usable_size, exported over
 * glibc's.  Each checks what glibc would (overflow, alignment), passes
 * unrecorded calls and pointers the recorder did not make to glibc, and
 * hands the recorded ones to record.c. */
#include "hot.h"

#define CALLER MRA_CALLER
#define CALLER_CFA MRA_CALLER_CFA

/* The interposers' paths come in two copies, `sampled` a constant in
 * each (g_sampling, set at start-up, picks one): recording every
 * allocation pays nothing for the sampling, and sampled recording inlines
 * the path of the objects it passes over. */
#define ALWAYS_INLINE inline __attribute__((always_inline))

/* A recorded allocation (n <= MAX_REQ, alignment 16): sampled, one the
 * sampling passes over is made here (record.h: its two words), the rest
 * in record.c. */
static ALWAYS_INLINE void *rec_alloc(size_t n, bool zero, uintptr_t ra, uintptr_t cfa, bool sampled)
{
    if (!sampled)
        return mrr_rec_alloc(n, 0, zero, ra, cfa);
    struct tstate *ts = tls_ts;
    if (LIKELY(ts != NULL) && LIKELY(--ts->win_left != 0) && LIKELY(!ts->in_win) &&
        sample_skip(ts, sample_size(n)))
        return unsampled_alloc(ts, n, zero); /* calls nothing that allocates */
    return mrr_rec_alloc_sampled(n, 0, zero, ra, cfa); /* (a window's turn too) */
}

static ALWAYS_INLINE void *do_malloc(size_t n, uintptr_t ra, uintptr_t cfa, bool sampled)
{
    if (!recording())
        return __libc_malloc(n);
    if (UNLIKELY(n > MAX_REQ)) {
        errno = ENOMEM;
        return NULL;
    }
    return rec_alloc(n, false, ra, cfa, sampled);
}

static ALWAYS_INLINE void do_free(void *p, uintptr_t ra, uintptr_t cfa, bool sampled)
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
    uint32_t sf = (uint32_t)w;
    if (sampled && sf == SITE_UNSAMPLED) {
        unsampled_free(p);
        return;
    }
    /* (recording every allocation, no object has a side record) */
    struct hdr *h = sampled ? obj_hdr(p, sf) : hdr_of(p);
    void *raw = sampled ? obj_raw(p, sf, h) : raw_of(p, h);
    if ((sf & ~SITE_SIDE) != 0 && recording()) {
        if (sampled)
            mrr_rec_free_sampled(p, h, sf, raw, ra, cfa);
        else
            mrr_rec_free(p, h, sf, raw, ra, cfa);
        return;
    }
    *tagw_of(p) = 0; /* (a side record stays taken: a fork's child, or after the profile) */
    __libc_free(raw);
}

/* realloc of an object (p != NULL), out of line: an interpreter's
 * allocator (Lua's lua_Alloc) makes every object with realloc(NULL, n),
 * which do_realloc hands to malloc's path without this frame. */
static NOINLINE void *realloc_object(void *p, size_t n, uintptr_t ra, uintptr_t cfa)
{
    uint64_t w = tag_word(p);
    if (!is_ours(p, w)) {
        if (recording())
            atomic_fetch_add_explicit(&g_foreign, 1, memory_order_relaxed);
        return __libc_realloc(p, n);
    }
    if (n == 0) { /* glibc: frees, returns NULL */
        do_free(p, ra, cfa, g_sampling);
        return NULL;
    }
    if (n > MAX_REQ) {
        errno = ENOMEM;
        return NULL;
    }
    uint32_t sf = (uint32_t)w, site = sf & ~SITE_SIDE;
    if (sf == SITE_UNSAMPLED)
        return mrr_unsampled_realloc(p, n);
    struct hdr *h = obj_hdr(p, sf);
    size_t pad = (sf & SITE_SIDE) ? UHDR : HDR; /* alignment 16 */
    uint64_t old = h->size_misc & SIZE_MASK;
    unsigned alog = hdr_alog(h);
    struct tstate *ts = NULL;
    if (site != 0 && recording()) {
        tls_guard++;
        ts = get_ts();
        tls_guard--;
    }
    uint32_t hooks;
    uint32_t sw = !ts ? 0 : g_sampling ? sample_rec(ts, (uint32_t)hdr_weight(h), &hooks) : sample_now(ts);
    void *np;
    size_t mm = mmapped_chunk(obj_raw(p, sf, h));
    uintptr_t e0 = heap_end();
    if (alog <= 4u) {
        uint64_t t1 = sw ? fenced_time() : 0;
        void *raw = __libc_realloc((char *)p - pad, n + pad);
        if (UNLIKELY(sw)) {
            tls_guard++;
            glibc_note(ts, site, timed_fenced(t1, fenced_time(), n > old ? n : old), sw);
            tls_guard--;
        }
        if (!raw)
            return NULL;
        np = (char *)raw + pad;
    } else { /* the header in the object (side records: alignment 16 only) */
        void *raw = __libc_malloc(n + HDR);
        if (!raw)
            return NULL;
        np = (char *)raw + HDR;
        size_t usable = glibc_usable(raw_of(p, h)) - pad_of(alog);
        memcpy(np, p, usable < n ? usable : n);
        memcpy(hdr_of(np), h, HDR);
        *tagw_of(p) = 0;
        __libc_free(raw_of(p, h));
    }
    if (site != 0) {
        /* an mmapped chunk that moved into the heap is unmapped (one that
         * stays mapped, or becomes so, counts at its free) */
        if (UNLIKELY(mm) && !mmapped_chunk((char *)np - pad)) /* the new chunk: alignment 16 */
            mrr_heap_unmapped(site, mm);
        if (UNLIKELY(heap_end() < e0))
            mrr_heap_trimmed(site, e0, heap_end());
    }
    struct hdr *nh = obj_hdr(np, sf); /* a side record: the same, its index moved with the object */
    uint64_t chain = (nh->size_misc >> SIZE_BITS) & CHAIN_MAX;
    if (chain < CHAIN_MAX)
        chain++;
    nh->size_misc = (uint64_t)n | chain << SIZE_BITS | (uint64_t)4 << 58;
    *tagw_of(np) = (uint64_t)tag_of(np) << 32 | sf;
    if (ts) {
        tls_guard++;
        ts->all_reallocs++;
        note_realloc(ts, nh, site, old, n, np != p);
        tls_guard--;
    }
    return np;
}

static void *do_memalign(size_t align, size_t n, uintptr_t ra, uintptr_t cfa)
{
    if (align <= 16)
        return do_malloc(n, ra, cfa, g_sampling);
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
    return g_sampling ? mrr_rec_alloc_sampled(n, align, false, ra, cfa) : mrr_rec_alloc(n, align, false, ra, cfa);
}

static NOINLINE void *malloc_sampled(size_t n, uintptr_t ra, uintptr_t cfa)
{
    return do_malloc(n, ra, cfa, true);
}

static NOINLINE void free_sampled(void *p, uintptr_t ra, uintptr_t cfa)
{
    do_free(p, ra, cfa, true);
}

EXPORT void *malloc(size_t n)
{
    if (UNLIKELY(g_sampling))
        return malloc_sampled(n, CALLER(), CALLER_CFA());
    return do_malloc(n, CALLER(), CALLER_CFA(), false);
}

EXPORT void free(void *p)
{
    if (UNLIKELY(g_sampling))
        free_sampled(p, CALLER(), CALLER_CFA());
    else
        do_free(p, CALLER(), CALLER_CFA(), false);
}

static ALWAYS_INLINE void *do_calloc(size_t n, uintptr_t ra, uintptr_t cfa, bool sampled)
{
    if (!recording())
        return __libc_calloc(1, n);
    if (n > MAX_REQ) {
        errno = ENOMEM;
        return NULL;
    }
    return rec_alloc(n, true, ra, cfa, sampled);
}

EXPORT void *calloc(size_t a, size_t b)
{
    size_t n;
    if (__builtin_mul_overflow(a, b, &n)) {
        errno = ENOMEM;
        return NULL;
    }
    return g_sampling ? do_calloc(n, CALLER(), CALLER_CFA(), true) : do_calloc(n, CALLER(), CALLER_CFA(), false);
}

static inline void *do_realloc(void *p, size_t n, uintptr_t ra, uintptr_t cfa)
{
    if (p == NULL)
        return g_sampling ? malloc_sampled(n, ra, cfa) : do_malloc(n, ra, cfa, false);
    return realloc_object(p, n, ra, cfa);
}

MRA_DEFINE_REALLOCS(EXPORT, do_realloc)

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
    if ((uint32_t)w == SITE_UNSAMPLED || ((uint32_t)w & SITE_SIDE))
        return glibc_usable(uraw_of(p)) - UHDR;
    struct hdr *h = hdr_of(p);
    return glibc_usable(raw_of(p, h)) - pad_of(hdr_alog(h));
}
