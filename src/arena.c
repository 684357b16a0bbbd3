/* SPDX-License-Identifier: MIT */
/* src/arena.c -- monotonic (bump) arena with marks, rewind, reset, cleanups.
 *
 * What it is for: many small objects that die together -- a parse tree, a
 * request, a compiler pass.  Allocation bumps a pointer; nothing is freed one
 * by one; a mark/rewind frees everything after a point, reset frees all and
 * keeps the memory, release returns it upstream.
 *
 * Algorithm.  Memory comes from upstream in blocks, each with a small header
 * (mri_block) followed by data aligned to MR_ARENA_ALIGN.  The blocks form
 * one chain in order of use:
 *
 *     head -> ... -> cur -> spare -> spare -> NULL
 *     \______ in use ___/   \___ kept for reuse ___/
 *
 * The current block is the only one with free space that allocation uses
 * (hot.ptr .. hot.end).  When a request does not fit, the next spare becomes
 * current if the request fits in it; otherwise a new block of the growth size
 * is taken from upstream and inserted right after cur.  Because a rewind or
 * reset only moves cur back, replaying the same sequence of requests walks
 * the same blocks in the same order: the same addresses, no upstream call.
 * Growth sizes double from block_size to max_block_size (an arena with
 * live children stays at its growth size until it holds
 * MRI_ARENA_PARENT_STEADY: a parent keeps a little at a time), but while the
 * arena holds 3 MiB to 12 MiB a new block is no larger than a twelfth of
 * that (MRI_ARENA_GROWTH_SHARE and its bounds) unless the request needs
 * it: the newest block's unused tail is then a
 * small share of the whole, where a doubled block could be as large as all
 * the rest and nearly empty.  Sizes are rounded to 64 bytes below a page
 * and to pages above -- the upstream sees exactly that size, never a power
 * of two plus our header.  The growth size (next_size) still doubles with
 * each block taken: it is the bound above which a request gets a dedicated
 * block, and it moves as it did, so replays take the same decisions.
 *
 * A request larger than the growth size gets a dedicated block (list `big`,
 * newest first) and the current block stays current, so the free tail of cur
 * is not wasted; when a block of the maximum size would hold it, the growth
 * size advances too, so that such requests soon fit regular blocks.  Rewind
 * and reset move dedicated blocks to `big_spare`, from
 * which later large requests are served first-fit (a miss returns one spare
 * upstream, so spares cannot pile up across cycles).
 *
 * Byte-packed strings (strings.c).  strdup, strndup and sprintf need no
 * alignment, so they are packed downward from the top of the current
 * block's free space (hot.end moves down), while aligned allocations bump
 * hot.ptr up, as bumpalo allocates: a string costs its length, and the
 * inline aligned path is unchanged (it compares against hot.end either
 * way).  A block that stops being current keeps both fill levels (top for
 * aligned data, low for strings); a mark saves hot.end too.
 *
 * Invariants (checked by mr_arena_check; the last three are the ledger's,
 * src/ledger.h, with the limit as its cap):
 *   data(cur) <= hot.ptr <= hot.end <= end(cur), hot.ptr MR_ARENA_ALIGN-aligned
 *   data(b) <= b.top <= b.low <= end(b) for blocks in use but not current
 *   block_size <= next_size <= max_block_size
 *   held == header_size + sum of owned block sizes (chain, big, big_spare)
 *   upstream_allocations - upstream_deallocations == owned blocks + (header_size != 0)
 *   held <= limit (when a limit is set), peak_held >= held
 *   no block ends within MRI_ARENA_INLINE_MAX of UINTPTR_MAX (the inline path
 *   computes ptr + size without an overflow check)
 * Cleanup records are allocated in the arena itself, so they live exactly as
 * long as what they follow; marks remember the newest record.
 *   cleanups and dedicated blocks in use are numbered 1..n up their lists
 *   (cleanup_seq, big_seq == n), so a rewind stops at a mark's numbers
 *   without finding its records: a stale mark cannot run or free what lies
 *   before it.  hot.id is unique among arenas, renewed by release.
 * Realloc and marks: hot.mark is 0 or a position in the current block at or
 * after every live mark there (a save sets it to hot.ptr, a rewind to the
 * mark's position, a move to a later block clears it: every mark lies
 * before that block).  A live allocation that starts at or after hot.mark
 * was made after every live mark, so growing it in place cannot put its
 * bytes after a mark it predates; mr_arena_realloc copies otherwise.  (An
 * inline rewind leaves hot.mark where the newest save put it, which is at
 * or after the mark rewound to: conservative.)
 *
 * Huge pages by default.  Under the rule of memres/pages.h (huge_pages
 * AUTO and the malloc resource as upstream, the default), blocks of
 * MR_HUGE_PAGE_SIZE and more are mapped from mr_page_resource_huge()
 * instead: glibc would mmap blocks that large anyway, and this mapping is
 * 2 MiB-aligned and advised for transparent huge pages, which cuts
 * first-touch faults 512-fold and TLB misses for big arenas.  Small arenas
 * never grow blocks that large, so their RSS is unchanged.  The choice is
 * made once, at create (big_source).
 *
 * Not supported: individual free (the resource view frees only the newest
 * allocation), thread safety (one arena per thread), shrinking the mri_block
 * chain on reset (that is release).
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <string.h>

#include "arena_impl.h"

/* ---- blocks ---- */

/* Where a request of rsize bytes aligned to align would start in b, or 0. */
static inline uintptr_t fit_in(uintptr_t from, uintptr_t end, size_t rsize, size_t align)
{
    uintptr_t p = mri_align_ptr(from, align);
    if (p < from || p > end || rsize > end - p)
        return 0;
    return p;
}


/* Where a block of this size comes from and goes back to. */
static inline mr_resource *source_of(const mr_arena *a, size_t size)
{
    return size >= MR_HUGE_PAGE_SIZE ? a->big_source : a->upstream;
}

static mri_block *new_block(mr_arena *a, size_t size)
{
    MR_ASSERT_INTERNAL(size >= MRI_BLOCK_HDR + MR_ARENA_ALIGN && size <= MRI_MAX_SIZE);
    mri_block *b = mri_ledger_allocate(&a->ledger, source_of(a, size), size, MR_ARENA_ALIGN);
    if (MR_UNLIKELY(b == NULL))
        return mri_fail(ENOMEM);
    MR_ASSERT_INTERNAL(((uintptr_t)b & (MR_ARENA_ALIGN - 1)) == 0);
    b->next = NULL;
    b->size = size;
    mri_block_set_end(b);
    b->top = mri_block_data(b);
    b->low = mri_block_end(b);
    b->meta = 1;
    mri_track_poison(mri_block_data(b), size - MRI_BLOCK_HDR);
    return b;
}

static void free_block(mr_arena *a, mri_block *b)
{
    if (!mri_block_owned(b))
        return;
    size_t size = b->size;
    mri_track_unpoison(b, size);
    mri_ledger_deallocate(&a->ledger, source_of(a, size), b, size, MR_ARENA_ALIGN);
}

void mri_arena_free_list(mr_arena *a, mri_block *b)
{
    while (b != NULL) {
        mri_block *next = b->next;
        free_block(a, b);
        b = next;
    }
}

static void *bump(mr_arena *a, uintptr_t p, size_t size, size_t rsize)
{
    MR_ASSERT_INTERNAL(p >= a->hot.ptr && rsize <= a->hot.end - p && p % MR_ARENA_ALIGN == 0);
    a->hot.ptr = p + rsize;
    a->hot.allocations++;
    mri_track_unpoison(p, size);
    return (void *)p;
}

/* An alignment of 8 or less: carved down from the top of the free space, as
 * mri_arena_alloc_down8 does inline (size <= end - ptr). */
static void *bump_down8(mr_arena *a, size_t size)
{
    MR_ASSERT_INTERNAL(size <= a->hot.end - a->hot.ptr);
    uintptr_t q = (a->hot.end - size) & ~(uintptr_t)7;
    a->hot.end = q;
    a->hot.allocations++;
    mri_track_unpoison(q, size);
    return (void *)q;
}

/* ---- allocation slow path ---- */

/* The spare blocks the limit may take back: the dedicated spares, then the
 * owned chain blocks after the current one (they hold nothing now). */
static mri_block **next_spare(mr_arena *a)
{
    if (a->big_spare != NULL)
        return &a->big_spare;
    mri_block **link = a->hot.cur != NULL ? &a->hot.cur->next : &a->head;
    while (*link != NULL && !mri_block_owned(*link))
        link = &(*link)->next;
    return *link != NULL ? link : NULL;
}

/* The limit refuses a block of size bytes: returns spare blocks upstream
 * until it fits -- but only when enough of them exist, so that a request
 * that fails anyway changes nothing.  true when size fits now. */
static bool make_room(mr_arena *a, size_t size)
{
    if (mri_ledger_fits(&a->ledger, size))
        return true;
    size_t spare = 0;
    for (const mri_block *b = a->big_spare; b != NULL; b = b->next)
        spare += b->size;
    for (const mri_block *b = a->hot.cur != NULL ? a->hot.cur->next : a->head; b != NULL; b = b->next)
        spare += mri_block_owned(b) ? b->size : 0;
    if (size > a->ledger.limit || a->ledger.held - spare > a->ledger.limit - size)
        return false;
    mri_block **link;
    while (!mri_ledger_fits(&a->ledger, size) && (link = next_spare(a)) != NULL) {
        mri_block *b = *link;
        *link = b->next;
        free_block(a, b);
    }
    MR_ASSERT_INTERNAL(mri_ledger_fits(&a->ledger, size));
    return true;
}

static void *alloc_dedicated(mr_arena *a, size_t size, size_t rsize, size_t align, size_t need)
{
    mri_block **link = &a->big_spare;
    mri_block *b = NULL;
    for (int i = 0; *link != NULL && i < MRI_ARENA_DEDICATED_SCAN; i++, link = &(*link)->next) {
        if (fit_in(mri_block_data(*link), mri_block_end(*link), rsize, align) != 0) {
            b = *link;
            *link = b->next;
            break;
        }
    }
    if (b == NULL) {
        size_t bsize;
        if (!mri_add_overflow(need, MRI_BLOCK_HDR, &bsize) && mri_round_block(bsize, &bsize)) {
            b = make_room(a, bsize) ? new_block(a, bsize) : mri_fail(ENOMEM);
            /* A miss returns the first spare too, so that spares of sizes no
             * longer asked for cannot accumulate cycle after cycle.  Only
             * after the new block came: a failed call changes nothing. */
            mri_block *victim = a->big_spare;
            if (b != NULL && victim != NULL) {
                a->big_spare = victim->next;
                free_block(a, victim);
            }
        } else {
            errno = ENOMEM;
        }
        if (b == NULL)
            return NULL;
    }
    uintptr_t p = mri_align_ptr(mri_block_data(b), align);
    MR_ASSERT_INTERNAL(p + rsize <= mri_block_end(b));
    b->top = p + rsize;
    b->low = mri_block_end(b);
    b->meta = (a->hot.big_seq + 1) << 1 | 1u;
    a->hot.big_seq++;
    b->next = a->hot.big;
    a->hot.big = b;
    a->hot.allocations++;
    mri_track_unpoison(p, size);
    return (void *)p;
}

/* The size of a new chain block where the growth size allows bsize and the
 * request needs need bytes of data: bsize, cut to the arena's share
 * (MRI_ARENA_GROWTH_SHARE of what it holds, at least MRI_ARENA_SHARE_FLOOR
 * and block_size; not cut once the share reaches MRI_ARENA_SHARE_CEIL) but
 * never below what holds the request. */
static size_t share_cut(const mr_arena *a, size_t bsize, size_t need)
{
    size_t share = a->ledger.held / MRI_ARENA_GROWTH_SHARE, least;
    if (share < MRI_ARENA_SHARE_FLOOR)
        share = MRI_ARENA_SHARE_FLOOR;
    if (share >= bsize || share >= MRI_ARENA_SHARE_CEIL)
        return bsize;
    if (share < a->block_size)
        share = a->block_size;
    if (mri_round_block(MRI_BLOCK_HDR + need, &least) && share < least)
        share = least; /* need <= bsize - MRI_BLOCK_HDR: least <= bsize */
    return mri_round_block(share, &share) && share < bsize ? share : bsize;
}

size_t mri_arena_next_growth(size_t cur, size_t max)
{
    size_t n;
    if ((cur & (cur - 1)) == 0 && cur < max / 2) /* a power of two: twice it is rounded already */
        return cur * 2;
    if (cur >= max || mri_mul_overflow(cur, 2, &n) || n >= max || !mri_round_block(n, &n) || n > max)
        return max;
    return n;
}

static void *alloc_slow(mr_arena *a, size_t size, size_t align);

MR_API MR_NOINLINE void *mri_arena_alloc_slow(mr_arena *a, size_t size, size_t align)
{
    void *p = alloc_slow(a, size, align);
    MRI_WALK(a, mri_arena_walk);
    return p;
}

static void *alloc_slow(mr_arena *a, size_t size, size_t align)
{
    if (MR_UNLIKELY(!mri_is_pow2(align)))
        return mri_fail(EINVAL);
    if (MR_UNLIKELY(size > MRI_MAX_SIZE))
        return mri_fail(ENOMEM);
    /* align <= 8 takes the top side, in the block it lands in too: the
     * same place the inline path gives, so a newest allocation given back
     * and asked for again gets the same address */
    const bool down = align <= 8;
    if (align < MR_ARENA_ALIGN)
        align = MR_ARENA_ALIGN;
    size_t rsize = mri_align_up_nocheck(size, MR_ARENA_ALIGN); /* size <= PTRDIFF_MAX: cannot wrap */

    if (down && a->hot.cur != NULL && size <= a->hot.end - a->hot.ptr) /* the inline path's test */
        return bump_down8(a, size);
    uintptr_t p = fit_in(a->hot.ptr, a->hot.end, rsize, align);
    if (p != 0)
        return down ? bump_down8(a, size) : bump(a, p, size, rsize);

    size_t need; /* bytes that hold the request from any MR_ARENA_ALIGN-aligned start */
    if (mri_add_overflow(rsize, align - MR_ARENA_ALIGN, &need) || need > MRI_MAX_SIZE - MRI_BLOCK_HDR)
        return mri_fail(ENOMEM);
    if (need > a->next_size - MRI_BLOCK_HDR) {
        /* a request a grown block would hold also advances the growth: an
         * arena asked only for requests above its growth size takes
         * regular blocks soon, not one upstream call per request */
        if (need <= a->max_block_size - MRI_BLOCK_HDR)
            a->next_size = mri_arena_next_growth(a->next_size, a->max_block_size);
        return alloc_dedicated(a, size, rsize, align, need);
    }

    mri_block *b = a->hot.cur != NULL ? a->hot.cur->next : a->head;
    if (b == NULL && a->node.parent != NULL && (b = mri_arena_shared_take(a, need)) != NULL) {
        /* a block its keeper shares (arena_create.c): no upstream call */
        if (a->hot.cur != NULL)
            a->hot.cur->next = b;
        else
            a->head = b;
    } else if (b == NULL || fit_in(mri_block_data(b), mri_block_end(b), rsize, align) == 0) {
        size_t bsize = a->next_size;
        /* spares that cannot serve this give way to the limit: for a mri_block
         * of the growth size, or else for the smallest that serves it */
        size_t least;
        if (!make_room(a, bsize) && mri_round_block(MRI_BLOCK_HDR + need, &least))
            (void)make_room(a, least);
        size_t room = mri_ledger_room(&a->ledger);
        if (bsize > room) {
            size_t page = mri_os_page_size();
            bsize = room & ~(room < page ? (size_t)63 : page - 1); /* the most the limit allows */
            if (bsize < MRI_BLOCK_HDR + need)
                return mri_fail(ENOMEM);
        }
        const bool grow = bsize == a->next_size;
        b = new_block(a, share_cut(a, bsize, need));
        if (b == NULL)
            return NULL;
        if (a->hot.cur != NULL) {
            b->next = a->hot.cur->next;
            a->hot.cur->next = b;
        } else {
            b->next = a->head;
            a->head = b;
        }
        if (grow && (a->node.child == NULL || a->ledger.held >= MRI_ARENA_PARENT_STEADY))
            a->next_size = mri_arena_next_growth(a->next_size, a->max_block_size);
    }
    if (a->hot.cur != NULL) {
        a->hot.cur->top = a->hot.ptr;
        a->hot.cur->low = a->hot.end;
    }
    mri_arena_set_current(a, b, mri_block_data(b));
    p = fit_in(a->hot.ptr, a->hot.end, rsize, align);
    MR_ASSERT_INTERNAL(p != 0);
    return down ? bump_down8(a, size) : bump(a, p, size, rsize);
}

/* ---- release ---- */

static void *view_allocate(mr_resource *self, size_t size, size_t align);
static void view_deallocate(mr_resource *self, void *p, size_t size, size_t align);
const struct mr_resource_ops mri_arena_view_ops = {view_allocate, view_deallocate, NULL};

/* The last arena id handed out (mri_arena_new_id): the only state shared
 * by all arenas. */
_Atomic uint64_t mri_arena_last_id;

/* Destroys the children and runs the cleanups numbered above stop, newest
 * first (src/tree.c interleaves them); then stop is the newest number. */
static void unwind(mr_arena *a, size_t stop)
{
    if (a->node.child != NULL || (a->hot.cleanups != NULL && a->hot.cleanups->seq > stop))
        mri_node_unwind(&a->node, stop);
    a->hot.cleanup_seq = stop;
}

/* Returns every owned block upstream; the caller's buffer stays first. */
void mri_arena_free_blocks(mr_arena *a)
{
    mri_arena_free_list(a, a->hot.big);
    mri_arena_free_list(a, a->big_spare);
    mri_arena_free_list(a, a->shared);
    a->hot.big = a->big_spare = a->shared = NULL;
    a->shared_bytes = 0;
    mri_block *keep = NULL;
    for (mri_block *b = a->head, *next; b != NULL; b = next) {
        next = b->next;
        if (mri_block_owned(b)) {
            free_block(a, b);
        } else {
            b->next = NULL;
            mri_track_poison(mri_block_data(b), b->size - MRI_BLOCK_HDR);
            keep = b;
        }
    }
    a->head = keep;
    a->next_size = a->block_size;
    a->hot.big_seq = 0;
    a->hot.id = mri_arena_new_id(); /* every mark of the released blocks goes stale */
    mri_arena_restart(a);
}

MR_API void mr_arena_release(mr_arena *a)
{
    MR_ASSERT(a != NULL, "mr_arena_release: arena is NULL");
    if (!mri_node_enter(&a->node, "mr_arena_release"))
        return;
    unwind(a, 0);
    mri_node_drop_kept(&a->node);
    mri_arena_free_blocks(a);
    MR_ASSERT_INTERNAL(a->ledger.held == a->header_size);
    MRI_WALK_NOW(a, mri_arena_walk);
}

/* ---- marks ---- */

/* Frees what lies after the position (mb, mptr; big_seq dedicated blocks,
 * cleanups and children numbered up to cleanup_seq).  The caller has
 * checked the position. */
static void rewind_to(mr_arena *a, mri_block *mb, uintptr_t mptr, uintptr_t mend, size_t big_seq, size_t cleanup_seq)
{
    unwind(a, cleanup_seq);
    while (a->hot.big != NULL && mri_block_seq(a->hot.big) > big_seq) {
        mri_block *b = a->hot.big;
        a->hot.big = b->next;
        b->next = a->big_spare;
        a->big_spare = b;
        mri_track_poison(mri_block_data(b), b->size - MRI_BLOCK_HDR);
    }
    a->hot.big_seq = a->hot.big != NULL ? mri_block_seq(a->hot.big) : 0;
    if (MRI_TRACKING) {
        for (mri_block *b = mb != NULL ? mb->next : a->head; b != NULL; b = b->next)
            mri_track_poison(mri_block_data(b), b->size - MRI_BLOCK_HDR);
    }
    if (mb != NULL) {
        mri_track_poison(mptr, mend - mptr);
        mri_arena_set_current_at(a, mb, mptr, mend);
        a->hot.mark = mptr; /* the mark rewound to is the newest live one */
    } else {
        mri_arena_restart(a);
    }
}

/* Is b a block in use (the chain up to cur)?  O(blocks in use). */
bool mri_arena_in_use_block(const mr_arena *a, const mri_block *b)
{
    for (const mri_block *q = a->head; q != NULL; q = q->next) {
        if (q == b)
            return true;
        if (q == a->hot.cur)
            break;
    }
    return false;
}

/* Is m a position this arena can rewind to?  The O(1) part runs in every
 * build (a mark that fails it is ignored); the walk only in debug builds. */
static bool mark_ok(const mr_arena *a, mr_arena_mark m)
{
    const mri_block *mb = m.mri_block;
    if (MRI_MISUSE(m.mri_arena != a->hot.id, m.mri_block,
                   "mr_arena_rewind: the mark is from another arena, or from before a release or destroy"))
        return false;
    /* (A mark past the bump pointer in the current block is no misuse: a
     * realloc or resource deallocate that shrank the newest allocation in
     * place puts it there.  Moving forward over free bytes is harmless.) */
    if (MRI_MISUSE(m.mri_big_seq > a->hot.big_seq || m.mri_cleanup_seq > a->hot.cleanup_seq, m.mri_block,
                   "mr_arena_rewind: the mark lies after the current position (after an earlier rewind's "
                   "target: a stale mark)"))
        return false;
    if (MRI_MISUSE(MR_DEBUG >= 1 && mb != NULL && !mri_arena_in_use_block(a, mb), m.mri_block,
                   "mr_arena_rewind: the mark's block is not in use (a stale mark)"))
        return false;
    return !MRI_MISUSE(mb != NULL && (m.mri_ptr < mri_block_data(mb) || m.mri_ptr > m.mri_end ||
                                      m.mri_end > mri_block_end(mb) || m.mri_ptr % MR_ARENA_ALIGN != 0),
                       (const void *)m.mri_ptr, "mr_arena_rewind: the mark is not a position of this arena");
}

MR_API MR_NOINLINE void mri_arena_rewind_slow(mr_arena *a, mr_arena_mark m)
{
    MR_ASSERT(a != NULL, "mr_arena_rewind: arena is NULL");
    if (mri_node_enter(&a->node, "mr_arena_rewind") && mark_ok(a, m))
        rewind_to(a, m.mri_block, m.mri_ptr, m.mri_end, m.mri_big_seq, m.mri_cleanup_seq);
    MRI_WALK(a, mri_arena_walk);
}

MR_API void mr_arena_reset(mr_arena *a)
{
    MR_ASSERT(a != NULL, "mr_arena_reset: arena is NULL");
    if (!mri_node_enter(&a->node, "mr_arena_reset"))
        return;
    rewind_to(a, NULL, 0, 0, 0, 0);
    MRI_WALK_NOW(a, mri_arena_walk);
}

MR_API int mr_arena_defer(mr_arena *a, void (*fn)(void *arg), void *arg)
{
    MR_ASSERT(a != NULL, "mr_arena_defer: arena is NULL");
    if (fn == NULL) {
        errno = EINVAL;
        return -1;
    }
    mri_cleanup *c = mr_arena_alloc(a, sizeof *c);
    if (c == NULL)
        return -1;
    c->prev = a->hot.cleanups;
    c->fn = fn;
    c->arg = arg;
    c->seq = ++a->hot.cleanup_seq;
    a->hot.cleanups = c;
    return 0;
}

/* ---- derived allocation functions ---- */

MR_API void *mr_arena_calloc(mr_arena *a, size_t count, size_t size)
{
    size_t total;
    if (mri_mul_overflow(count, size, &total))
        return mri_fail(ENOMEM);
    void *p = mr_arena_alloc(a, total);
    if (p != NULL)
        memset(p, 0, total);
    return p;
}

MR_API void *mr_arena_realloc(mr_arena *a, void *p, size_t old_size, size_t new_size)
{
    if (p == NULL)
        return mr_arena_alloc(a, new_size);
    if (new_size > MRI_MAX_SIZE)
        return mri_fail(ENOMEM);
    uintptr_t up = (uintptr_t)p;
    if (mri_arena_is_newest(a, p, old_size)) {
        size_t rnew = mri_align_up_nocheck(new_size, MR_ARENA_ALIGN);
        /* growing in place needs p at or after the newest mark (see the
         * invariants): growth must not straddle a mark */
        if (rnew <= a->hot.end - up && (new_size <= old_size || up >= a->hot.mark)) {
            if (new_size > old_size)
                mri_track_unpoison(up + old_size, new_size - old_size);
            else
                mri_track_poison(up + new_size, old_size - new_size);
            a->hot.ptr = up + rnew;
            return p;
        }
    }
    if (new_size <= old_size)
        return p;
    void *q = mr_arena_alloc(a, new_size);
    if (q != NULL)
        memcpy(q, p, old_size);
    return q;
}

/* ---- statistics ---- */

MR_API void mr_arena_stats(const mr_arena *a, mr_stats *out)
{
    size_t in_use = 0;
    if (a->hot.cur != NULL) {
        for (const mri_block *b = a->head; b != NULL; b = b->next) {
            if (b == a->hot.cur) {
                in_use += (a->hot.ptr - mri_block_data(b)) + (a->cur_end - a->hot.end);
                break;
            }
            in_use += (b->top - mri_block_data(b)) + (mri_block_end(b) - b->low);
        }
    }
    for (const mri_block *b = a->hot.big; b != NULL; b = b->next)
        in_use += (b->top - mri_block_data(b)) + (mri_block_end(b) - b->low);
    mri_ledger_stats(&a->ledger, out);
    out->in_use = in_use;
    out->allocations = a->hot.allocations;
    mri_node_add_kept(&a->node, out);
}

/* ---- the resource view ---- */

static void *view_allocate(mr_resource *self, size_t size, size_t align)
{
    return mr_arena_alloc_aligned(mri_container_of(self, mr_arena, resource), size, align);
}

MR_API void mri_arena_free_newest_slow(mr_arena *a, void *p, size_t size)
{
    if (mri_arena_is_newest(a, p, size)) {
        mri_track_poison(p, mri_align_up_nocheck(size, MR_ARENA_ALIGN));
        a->hot.ptr = (uintptr_t)p;
    } else if (mri_arena_is_newest_top(a, p, size)) {
        mri_track_poison(p, size);
        a->hot.end = (uintptr_t)p + size;
    }
}

static void view_deallocate(mr_resource *self, void *p, size_t size, size_t align)
{
    (void)align;
    mri_arena_free_newest_slow(mri_container_of(self, mr_arena, resource), p, size);
}

MR_API mr_resource *mr_arena_resource(mr_arena *a) { return &a->resource; }

MR_API mr_arena *mr_arena_of_resource(mr_resource *r)
{
    return r != NULL && r->ops == &mri_arena_view_ops ? mri_container_of(r, mr_arena, resource) : NULL;
}

