/* SPDX-License-Identifier: MIT */
/* src/adaptors.c -- resources that wrap an upstream: counting, limiting,
 * failing (fault injection) and tracking (leaks, double frees, mismatched
 * deallocations).
 *
 * What they are for: users' own tests.  A test puts them under the code it
 * tests -- code -> tracking -> failing -> malloc -- and runs the code once
 * for every failure point, proving that each failure is handled and that
 * nothing leaks (examples/oom_sweep/).  They are instruments, so they must
 * not disturb what they measure: requests pass through unchanged (same
 * pointer, size and alignment), and an adaptor's own memory (its header,
 * tracking's table) comes from the default resource as it was at create
 * time, never through the upstream.  Otherwise tracking's table growth would
 * take request numbers from a failing upstream below it, or bytes from a
 * limit.  (Not plain malloc: a test can point the default resource at a
 * failing resource to exercise the adaptors' own failure paths.)
 *
 * Algorithm.  Every adaptor embeds `struct adaptor`: its resource view, the
 * upstream, the resource its own memory came from, a lock (a word lock:
 * memres/bits/lock.h), and one mri_ledger (src/ledger.h) through which
 * every upstream call goes, so that
 * bytes outstanding, their peak and the upstream calls are counted the way
 * every allocator counts them.  Each view operation takes the lock, decides,
 * calls upstream through the ledger and unlocks: the lock is held across the
 * upstream call, which makes a limit or a fault rule exact under concurrency
 * and serialises an upstream that is not thread-safe.  None of this is on a
 * hot path; a lock per call is cheap next to what a test does.
 *   counting  the ledger alone.
 *   limiting  refuses size when held + size > limit, before the ledger.
 *   failing   numbers each request (n = ++requests), draws the n-th
 *             splitmix64 output when probability > 0 (every request draws,
 *             so the sequence depends on n only), and fails it when a rule
 *             of adaptors.h holds; else the ledger.
 *   tracking  an open-addressing hash table with linear probing, keyed by
 *             pointer (Fibonacci hashing of the address), of records
 *             {pointer, size, log2 align, sequence number, live}.  Nothing
 *             is ever deleted from a probe sequence: a deallocate turns a
 *             record from live to freed (it is kept, so a second free is a
 *             "double free", not an "unknown pointer"), and an allocate that
 *             gets an address with a freed record reuses that record.  So
 *             lookups need no tombstones.  Freed records are dropped only
 *             when the table is rebuilt: before an insert that would take
 *             the occupied slots above half the table, the table is rebuilt
 *             twice as large (keeping freed records) when live records fill
 *             more than a quarter of it, else at the same size without the
 *             freed records.  Either way at least a quarter of the table can
 *             be filled before the next rebuild, so inserts are amortised
 *             O(1), and right after a rebuild freed records never outnumber
 *             live ones.
 *             The rebuild happens before the upstream is called, so a table
 *             that cannot grow fails the allocation cleanly (ENOMEM,
 *             upstream untouched, nothing recorded).  Duplicate pointers (an
 *             arena's consecutive size-0 allocations share an address) are
 *             separate records; a deallocate takes the first live record
 *             with its pointer, size and alignment.
 * Violations are formatted under the lock and reported after unlocking, with
 * mri_misuse() (src/check.c) called directly: tracking reports in every
 * build, unlike the MRI_MISUSE checks that MR_DEBUG compiles out.
 *
 * Invariants (the ledger's, src/ledger.h, plus, for tracking,
 * mr_tracking_check):
 *   held == in_use == sum of sizes of the allocations outstanding
 *   upstream_allocations - upstream_deallocations == allocations outstanding
 *   tracking:  live + freed == used == occupied slots,  2 * used <= cap,
 *              live == upstream_allocations - upstream_deallocations,
 *              sum of live records' sizes == held,
 *              every record is reached from its hash slot without crossing
 *              an empty slot
 *   failing:   failures <= requests,
 *              allocations + failures + upstream refusals == requests
 *
 * Lock order: an adaptor's lock, then whatever its upstream takes (and the
 * default resource's, for tracking's table).  The violation handler runs
 * with no lock held.
 *
 * Not supported: reallocation (mr_resource has none); counting the
 * upstream's rounding (an adaptor sees the requested size only); detecting
 * use after free or overflow (that is ASan's job); shrinking the tracking
 * table after a peak.
 */
#include <string.h>

#include "internal.h"
#include "ledger.h"
#include "lock.h"
#include "memres/adaptors.h"

/* ---- what every adaptor shares ---- */

struct adaptor {
    mr_resource resource; /* the view; ops say which adaptor it is */
    mr_resource *upstream;
    mr_resource *meta;    /* where this header (and tracking's table) came from */
    size_t header_size;   /* of the whole object, for destroy */
    mri_lock lock;        /* guards everything below and the upstream calls */
    mri_ledger ledger;    /* held == in_use: bytes outstanding through it */
};

#define HEADER_ALIGN ((size_t)64)

/* Allocates and initialises an adaptor object of size bytes (its struct
 * adaptor first) from the default resource.  NULL with errno = ENOMEM. */
static void *adaptor_create(size_t size, mr_resource *upstream, const struct mr_resource_ops *ops)
{
    mr_resource *meta = mr_get_default_resource();
    struct adaptor *a = mr_allocate(meta, size, HEADER_ALIGN);
    if (a == NULL)
        return mri_fail(ENOMEM);
    memset(a, 0, size);
    if (!mri_lock_init(&a->lock)) {
        mr_deallocate(meta, a, size, HEADER_ALIGN);
        return mri_fail(ENOMEM);
    }
    a->resource.ops = ops;
    a->upstream = upstream != NULL ? upstream : meta;
    a->meta = meta;
    a->header_size = size;
    return a;
}

static void adaptor_destroy(struct adaptor *a)
{
    mri_lock_fini(&a->lock);
    mr_deallocate(a->meta, a, a->header_size, HEADER_ALIGN);
}

/* The lock of an adaptor reached through a const pointer: stats and
 * queries are logically const, and no adaptor object is ever defined const
 * (each is allocated by its create). */
static void lock(const struct adaptor *a) { mri_lock_take((mri_lock *)(uintptr_t)&a->lock); }

/* Unlocks, keeping errno (a give that wakes a waiter calls pthreads, which
 * POSIX lets change it). */
static void unlock(const struct adaptor *a)
{
    int e = errno;
    mri_lock_give((mri_lock *)(uintptr_t)&a->lock);
    errno = e;
}

static void adaptor_stats(const struct adaptor *a, mr_stats *out)
{
    lock(a);
    mri_ledger_stats(&a->ledger, out);
    out->in_use = a->ledger.held;
    out->allocations = a->ledger.upstream_allocations;
    unlock(a);
}

/* The deallocate of counting, limiting and failing: passed upstream unless
 * it would take the ledger below zero (a foreign pointer or a wrong size),
 * which is misuse: reported in debug builds, ignored in every build. */
static void adaptor_deallocate(struct adaptor *a, void *p, size_t size, size_t align, const char *misuse)
{
    lock(a);
    bool bad = size > a->ledger.held || a->ledger.upstream_allocations == a->ledger.upstream_deallocations;
    if (!bad)
        mri_ledger_deallocate(&a->ledger, a->upstream, p, size, align);
    unlock(a);
    (void)misuse; /* unused where MR_DEBUG compiles the report out */
    (void)MRI_MISUSE(bad, p, misuse);
}

/* ---- counting ---- */

struct mr_counting {
    struct adaptor base;
};

static void *counting_allocate(mr_resource *self, size_t size, size_t align)
{
    struct adaptor *a = mri_container_of(self, struct adaptor, resource);
    lock(a);
    void *p = mri_ledger_allocate(&a->ledger, a->upstream, size, align);
    unlock(a);
    return p;
}

static void counting_deallocate(mr_resource *self, void *p, size_t size, size_t align)
{
    adaptor_deallocate(mri_container_of(self, struct adaptor, resource), p, size, align,
                       "mr_counting_resource: deallocate of more than is outstanding");
}

static const struct mr_resource_ops counting_ops = {counting_allocate, counting_deallocate, NULL};

MR_API mr_counting *mr_counting_create(mr_resource *upstream)
{
    return adaptor_create(sizeof(mr_counting), upstream, &counting_ops);
}

MR_API void mr_counting_destroy(mr_counting *c)
{
    if (c != NULL)
        adaptor_destroy(&c->base);
}

MR_API mr_resource *mr_counting_resource(mr_counting *c)
{
    MR_ASSERT(c != NULL, "mr_counting_resource: adaptor is NULL");
    return &c->base.resource;
}

MR_API void mr_counting_stats(const mr_counting *c, mr_stats *out)
{
    MR_ASSERT(c != NULL && out != NULL, "mr_counting_stats: NULL argument");
    adaptor_stats(&c->base, out);
}

/* ---- limiting ---- */

struct mr_limiting {
    struct adaptor base;
    size_t limit; /* most bytes outstanding; taken literally */
};

static void *limiting_allocate(mr_resource *self, size_t size, size_t align)
{
    mr_limiting *l = mri_container_of(self, mr_limiting, base.resource);
    lock(&l->base);
    void *p;
    if (size > l->limit || l->base.ledger.held > l->limit - size)
        p = mri_fail(ENOMEM);
    else
        p = mri_ledger_allocate(&l->base.ledger, l->base.upstream, size, align);
    unlock(&l->base);
    return p;
}

static void limiting_deallocate(mr_resource *self, void *p, size_t size, size_t align)
{
    adaptor_deallocate(mri_container_of(self, struct adaptor, resource), p, size, align,
                       "mr_limiting_resource: deallocate of more than is outstanding");
}

static const struct mr_resource_ops limiting_ops = {limiting_allocate, limiting_deallocate, NULL};

MR_API mr_limiting *mr_limiting_create(mr_resource *upstream, size_t limit)
{
    mr_limiting *l = adaptor_create(sizeof(mr_limiting), upstream, &limiting_ops);
    if (l != NULL)
        l->limit = limit;
    return l;
}

MR_API void mr_limiting_destroy(mr_limiting *l)
{
    if (l != NULL)
        adaptor_destroy(&l->base);
}

MR_API mr_resource *mr_limiting_resource(mr_limiting *l)
{
    MR_ASSERT(l != NULL, "mr_limiting_resource: adaptor is NULL");
    return &l->base.resource;
}

MR_API void mr_limiting_stats(const mr_limiting *l, mr_stats *out)
{
    MR_ASSERT(l != NULL && out != NULL, "mr_limiting_stats: NULL argument");
    adaptor_stats(&l->base, out);
}

/* ---- failing ---- */

struct mr_failing {
    struct adaptor base;
    mr_failing_options opts;
    uint64_t prng;          /* splitmix64 state: seed + n * golden after n draws */
    unsigned long requests; /* allocate calls seen */
    unsigned long failures; /* of them, failed by a rule */
};

/* The next splitmix64 output (Steele, Lea and Flood; the constants are
 * Stafford's "Mix13"), as a double uniform in [0, 1). */
static double draw(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53;
}

/* Does request n (of size bytes) fail by a rule?  Advances the PRNG. */
static bool injected(mr_failing *f, unsigned long n, size_t size)
{
    const mr_failing_options *o = &f->opts;
    bool fail = false;
    if (o->probability > 0.0)
        fail = draw(&f->prng) < o->probability;
    if (o->fail_at != 0 && (n == o->fail_at || (o->persistent && n > o->fail_at)))
        fail = true;
    if (o->every != 0 && n % o->every == 0)
        fail = true;
    if (o->above != 0 && size > o->above)
        fail = true;
    return fail;
}

static void *failing_allocate(mr_resource *self, size_t size, size_t align)
{
    mr_failing *f = mri_container_of(self, mr_failing, base.resource);
    lock(&f->base);
    void *p;
    if (injected(f, ++f->requests, size)) {
        f->failures++;
        p = mri_fail(ENOMEM);
    } else {
        p = mri_ledger_allocate(&f->base.ledger, f->base.upstream, size, align);
    }
    unlock(&f->base);
    return p;
}

static void failing_deallocate(mr_resource *self, void *p, size_t size, size_t align)
{
    adaptor_deallocate(mri_container_of(self, struct adaptor, resource), p, size, align,
                       "mr_failing_resource: deallocate of more than is outstanding");
}

static const struct mr_resource_ops failing_ops = {failing_allocate, failing_deallocate, NULL};

MR_API mr_failing *mr_failing_create(const mr_failing_options *opts)
{
    mr_failing_options o = {0};
    if (opts != NULL)
        o = *opts;
    if (!(o.probability >= 0.0 && o.probability <= 1.0) || (o.persistent && o.fail_at == 0))
        return mri_fail(EINVAL); /* NaN fails both comparisons */
    mr_failing *f = adaptor_create(sizeof(mr_failing), o.upstream, &failing_ops);
    if (f == NULL)
        return NULL;
    o.upstream = f->base.upstream;
    f->opts = o;
    f->prng = (uint64_t)o.seed;
    return f;
}

MR_API void mr_failing_destroy(mr_failing *f)
{
    if (f != NULL)
        adaptor_destroy(&f->base);
}

MR_API mr_resource *mr_failing_resource(mr_failing *f)
{
    MR_ASSERT(f != NULL, "mr_failing_resource: adaptor is NULL");
    return &f->base.resource;
}

MR_API unsigned long mr_failing_requests(const mr_failing *f)
{
    MR_ASSERT(f != NULL, "mr_failing_requests: adaptor is NULL");
    lock(&f->base);
    unsigned long n = f->requests;
    unlock(&f->base);
    return n;
}

MR_API unsigned long mr_failing_failures(const mr_failing *f)
{
    MR_ASSERT(f != NULL, "mr_failing_failures: adaptor is NULL");
    lock(&f->base);
    unsigned long n = f->failures;
    unlock(&f->base);
    return n;
}

MR_API void mr_failing_stats(const mr_failing *f, mr_stats *out)
{
    MR_ASSERT(f != NULL && out != NULL, "mr_failing_stats: NULL argument");
    adaptor_stats(&f->base, out);
}

/* ---- tracking ---- */

struct record {
    uintptr_t p; /* 0: empty slot (no allocation is at NULL) */
    size_t size;
    size_t seq; /* the seq-th successful allocation */
    unsigned char align_log2;
    bool live; /* false: freed, kept to recognise a double free */
};

struct mr_tracking {
    struct adaptor base;
    struct record *tab; /* cap slots, from base.meta; NULL while cap == 0 */
    size_t cap;         /* 0 or a power of two >= TABLE_MIN */
    unsigned bits;      /* log2(cap) */
    size_t used;        /* occupied slots: live + freed */
    size_t live;        /* records of outstanding allocations */
    struct mri_walk walk; /* MR_DEBUG 3: when the next walk is due */
};

#define TABLE_MIN ((size_t)64)
#define TABLE_MIN_BITS 6u

static bool check_locked(const mr_tracking *t, size_t *steps);

static size_t align_of(const struct record *r) { return (size_t)1 << r->align_log2; }

/* The home slot of address p: Fibonacci hashing (the top bits of p times
 * 2^64 / phi), which spreads aligned addresses, whose low bits are zero. */
static size_t home(uintptr_t p, unsigned bits)
{
    return (size_t)(((uint64_t)p * UINT64_C(0x9e3779b97f4a7c15)) >> (64u - bits));
}

/* Puts r in the first empty slot of its probe sequence in tab. */
static void place(struct record *tab, size_t cap, unsigned bits, const struct record *r)
{
    size_t i = home(r->p, bits);
    while (tab[i].p != 0)
        i = (i + 1) & (cap - 1);
    tab[i] = *r;
}

/* Rebuilds the table with ncap slots, keeping freed records or not.  false
 * with errno = ENOMEM, nothing changed, when the new table is not given. */
static bool rebuild(mr_tracking *t, size_t ncap, unsigned nbits, bool keep_freed)
{
    size_t bytes;
    if (mri_mul_overflow(ncap, sizeof(struct record), &bytes) || bytes > MRI_MAX_SIZE) {
        errno = ENOMEM;
        return false;
    }
    struct record *tab = mr_allocate(t->base.meta, bytes, alignof(struct record));
    if (tab == NULL) {
        errno = ENOMEM;
        return false;
    }
    memset(tab, 0, bytes);
    size_t used = 0;
    for (size_t i = 0; i < t->cap; i++) {
        const struct record *r = &t->tab[i];
        if (r->p != 0 && (r->live || keep_freed)) {
            place(tab, ncap, nbits, r);
            used++;
        }
    }
    if (t->tab != NULL)
        mr_deallocate(t->base.meta, t->tab, t->cap * sizeof(struct record), alignof(struct record));
    t->tab = tab;
    t->cap = ncap;
    t->bits = nbits;
    t->used = used;
    MR_ASSERT_INTERNAL(used >= t->live && 2 * used <= ncap);
    return true;
}

/* Makes room for one more record: used + 1 <= cap / 2 afterwards. */
static bool make_room(mr_tracking *t)
{
    if (MR_LIKELY(2 * (t->used + 1) <= t->cap))
        return true;
    if (t->cap == 0)
        return rebuild(t, TABLE_MIN, TABLE_MIN_BITS, false);
    if (4 * (t->live + 1) > t->cap) {
        if (t->cap > SIZE_MAX / 2 || t->bits >= 63u) {
            errno = ENOMEM;
            return false;
        }
        return rebuild(t, 2 * t->cap, t->bits + 1u, true);
    }
    return rebuild(t, t->cap, t->bits, false); /* drop the freed records */
}

/* Records allocation #seq at p; make_room has run. */
static void insert(mr_tracking *t, void *p, size_t size, size_t align, size_t seq)
{
    struct record r = {(uintptr_t)p, size, seq, (unsigned char)(63u ^ (unsigned)MR_CLZLL((unsigned long long)align)),
                       true};
    size_t mask = t->cap - 1;
    for (size_t i = home(r.p, t->bits); t->tab[i].p != 0; i = (i + 1) & mask) {
        if (t->tab[i].p == r.p && !t->tab[i].live) { /* the address came back */
            t->tab[i] = r;
            t->live++;
            return;
        }
    }
    place(t->tab, t->cap, t->bits, &r);
    t->used++;
    t->live++;
}

static void *tracking_allocate(mr_resource *self, size_t size, size_t align)
{
    mr_tracking *t = mri_container_of(self, mr_tracking, base.resource);
    lock(&t->base);
    void *p = NULL;
    if (make_room(t)) {
        p = mri_ledger_allocate(&t->base.ledger, t->base.upstream, size, align);
        if (p != NULL)
            insert(t, p, size, align, t->base.ledger.upstream_allocations);
    }
    MRI_WALK(t, check_locked);
    unlock(&t->base);
    return p;
}

static void tracking_deallocate(mr_resource *self, void *p, size_t size, size_t align)
{
    mr_tracking *t = mri_container_of(self, mr_tracking, base.resource);
    char msg[224];
    lock(&t->base);
    /* The first live record of p with this size and alignment, else the
     * first live one and the first freed one, for the report. */
    struct record *live = NULL, *freed = NULL;
    size_t mask = t->cap - 1, i = t->cap == 0 ? 0 : home((uintptr_t)p, t->bits);
    for (; t->cap != 0 && t->tab[i].p != 0; i = (i + 1) & mask) {
        struct record *r = &t->tab[i];
        if (r->p != (uintptr_t)p)
            continue;
        if (r->live && r->size == size && align_of(r) == align) {
            r->live = false;
            t->live--;
            mri_ledger_deallocate(&t->base.ledger, t->base.upstream, p, size, align);
            MRI_WALK(t, check_locked);
            unlock(&t->base);
            return;
        }
        if (r->live && live == NULL)
            live = r;
        if (!r->live && freed == NULL)
            freed = r;
    }
    if (live != NULL && live->size != size && align_of(live) != align)
        snprintf(msg, sizeof msg,
                 MR_TRACKING_SIZE_ALIGN_MISMATCH ": deallocate with %zu bytes, align %zu; allocation #%zu has %zu "
                                                 "bytes, align %zu",
                 size, align, live->seq, live->size, align_of(live));
    else if (live != NULL && live->size != size)
        snprintf(msg, sizeof msg,
                 MR_TRACKING_SIZE_MISMATCH ": deallocate with %zu bytes, allocation #%zu has %zu bytes (align %zu)",
                 size, live->seq, live->size, align_of(live));
    else if (live != NULL)
        snprintf(msg, sizeof msg,
                 MR_TRACKING_ALIGN_MISMATCH ": deallocate with align %zu, allocation #%zu has align %zu (%zu bytes)",
                 align, live->seq, align_of(live), live->size);
    else if (freed != NULL)
        snprintf(msg, sizeof msg, MR_TRACKING_DOUBLE_FREE ": allocation #%zu (%zu bytes, align %zu) was already freed",
                 freed->seq, freed->size, align_of(freed));
    else
        snprintf(msg, sizeof msg,
                 MR_TRACKING_UNKNOWN_POINTER ": not an outstanding allocation of this adaptor (deallocate with %zu "
                                             "bytes, align %zu)",
                 size, align);
    unlock(&t->base);
    mri_misuse(msg, p, __FILE__, __LINE__, __func__);
}

static const struct mr_resource_ops tracking_ops = {tracking_allocate, tracking_deallocate, NULL};

MR_API mr_tracking *mr_tracking_create(mr_resource *upstream)
{
    return adaptor_create(sizeof(mr_tracking), upstream, &tracking_ops);
}

static int by_seq(const void *x, const void *y)
{
    size_t a = ((const struct record *)x)->seq, b = ((const struct record *)y)->seq;
    return (a > b) - (a < b);
}

/* The live records in sequence order: a sorted copy in *copy (from meta; the
 * caller frees it with n records), or, when there is no memory for one, the
 * table itself (*copy NULL, n = cap: the caller skips the non-live slots). */
static const struct record *live_records(const mr_tracking *t, struct record **copy, size_t *n)
{
    *copy = NULL;
    *n = t->cap;
    if (t->live == 0)
        return t->tab;
    struct record *c = mr_allocate(t->base.meta, t->live * sizeof *c, alignof(struct record));
    if (c == NULL)
        return t->tab;
    size_t k = 0;
    for (size_t i = 0; i < t->cap; i++)
        if (t->tab[i].p != 0 && t->tab[i].live)
            c[k++] = t->tab[i];
    MR_ASSERT_INTERNAL(k == t->live);
    qsort(c, k, sizeof *c, by_seq);
    *copy = c;
    *n = k;
    return c;
}

static void free_copy(const mr_tracking *t, struct record *copy, size_t n)
{
    if (copy != NULL)
        mr_deallocate(t->base.meta, copy, n * sizeof *copy, alignof(struct record));
}

MR_API void mr_tracking_destroy(mr_tracking *t)
{
    if (t == NULL)
        return;
    /* No lock: destroy runs alone, and the handler may query t. */
    struct record *copy;
    size_t n;
    const struct record *recs = live_records(t, &copy, &n);
    char msg[160];
    for (size_t i = 0; i < n; i++) {
        const struct record *r = &recs[i];
        if (r->p == 0 || !r->live)
            continue;
        snprintf(msg, sizeof msg, MR_TRACKING_LEAK ": allocation #%zu (%zu bytes, align %zu) not freed before destroy",
                 r->seq, r->size, align_of(r));
        mri_misuse(msg, (const void *)r->p, __FILE__, __LINE__, __func__);
    }
    for (size_t i = 0; i < n; i++) {
        const struct record *r = &recs[i];
        if (r->p != 0 && r->live)
            mri_ledger_deallocate(&t->base.ledger, t->base.upstream, (void *)r->p, r->size, align_of(r));
    }
    free_copy(t, copy, n);
    MR_ASSERT_INTERNAL(t->base.ledger.held == 0);
    if (t->tab != NULL)
        mr_deallocate(t->base.meta, t->tab, t->cap * sizeof(struct record), alignof(struct record));
    adaptor_destroy(&t->base);
}

MR_API mr_resource *mr_tracking_resource(mr_tracking *t)
{
    MR_ASSERT(t != NULL, "mr_tracking_resource: adaptor is NULL");
    return &t->base.resource;
}

MR_API void mr_tracking_stats(const mr_tracking *t, mr_stats *out)
{
    MR_ASSERT(t != NULL && out != NULL, "mr_tracking_stats: NULL argument");
    adaptor_stats(&t->base, out);
}

MR_API size_t mr_tracking_outstanding(const mr_tracking *t)
{
    MR_ASSERT(t != NULL, "mr_tracking_outstanding: adaptor is NULL");
    lock(&t->base);
    size_t n = t->live;
    unlock(&t->base);
    return n;
}

MR_API size_t mr_tracking_report(const mr_tracking *t, FILE *f)
{
    MR_ASSERT(t != NULL, "mr_tracking_report: adaptor is NULL");
    if (f == NULL)
        f = stderr;
    lock(&t->base);
    size_t live = t->live;
    fprintf(f, "memres: mr_tracking %p: %zu allocation%s outstanding, %zu bytes\n", (const void *)t, live,
            live == 1 ? "" : "s", t->base.ledger.held);
    struct record *copy;
    size_t n;
    const struct record *recs = live_records(t, &copy, &n);
    for (size_t i = 0; i < n; i++) {
        const struct record *r = &recs[i];
        if (r->p != 0 && r->live)
            fprintf(f, "memres:   #%zu %p %zu bytes align %zu\n", r->seq, (const void *)r->p, r->size, align_of(r));
    }
    free_copy(t, copy, n);
    unlock(&t->base);
    return live;
}

#define CHECK(cond, ...) MRI_VERIFY(cond, "mr_tracking_check", (const void *)t, __VA_ARGS__)

static bool check_locked(const mr_tracking *t, size_t *steps)
{
    CHECK(t->cap == 0 ? t->tab == NULL && t->bits == 0
                      : t->tab != NULL && t->cap >= TABLE_MIN && t->cap == (size_t)1 << t->bits,
          "table %p of %zu slots (%u bits)", (const void *)t->tab, t->cap, t->bits);
    CHECK(2 * t->used <= t->cap, "%zu occupied slots in a table of %zu", t->used, t->cap);
    size_t used = 0, live = 0, bytes = 0, mask = t->cap - 1;
    for (size_t i = 0; i < t->cap; i++) {
        const struct record *r = &t->tab[i];
        if (r->p == 0)
            continue;
        used++;
        if (r->live) {
            live++;
            bytes += r->size;
        }
        CHECK(r->seq >= 1 && r->seq <= t->base.ledger.upstream_allocations,
              "record %zu (%#jx) has sequence number %zu of %zu allocations", i, (uintmax_t)r->p, r->seq,
              t->base.ledger.upstream_allocations);
        for (size_t j = home(r->p, t->bits); j != i; j = (j + 1) & mask, ++*steps)
            CHECK(t->tab[j].p != 0, "record %zu (%#jx) is past an empty slot %zu of its probe sequence", i,
                  (uintmax_t)r->p, j);
    }
    *steps += t->cap;
    CHECK(used == t->used && live == t->live, "%zu occupied and %zu live slots, counted %zu and %zu", used, live,
          t->used, t->live);
    return mri_ledger_verify(&t->base.ledger, "mr_tracking_check", t, bytes, live);
}

MR_API bool mr_tracking_check(const mr_tracking *t)
{
    if (t == NULL) {
        mri_verify_report("mr_tracking_check", t, "adaptor is NULL");
        return false;
    }
    size_t steps = 0;
    lock(&t->base);
    bool ok = check_locked(t, &steps);
    unlock(&t->base);
    return ok;
}
