/* SPDX-License-Identifier: MIT */
/* src/ledger.h -- upstream accounting, kept once for every allocator
 * (PostgreSQL keeps it in the MemoryContextData every context embeds).
 *
 * Every allocator embeds one mri_ledger and calls its upstream only through
 * mri_ledger_allocate / mri_ledger_deallocate, so that bytes held, their
 * peak and the successful upstream calls are counted in one place, on every
 * path, failure paths included: a failed upstream call counts nothing.  An
 * optional cap (the arena's `limit`) refuses a request that would take the
 * bytes held above it, before the upstream is asked.  mr_<object>_stats
 * copies the ledger (mri_ledger_stats) and adds what only the allocator
 * knows (in_use, allocations); mr_<object>_check verifies it against what
 * the allocator actually holds (mri_ledger_verify).
 *
 * Invariants (mri_ledger_verify), where `held_walked` and `live_walked` are
 * what the allocator's walker finds:
 *   held == held_walked
 *   upstream_allocations - upstream_deallocations == live_walked
 *   held <= peak_held
 *   limit == 0 || held <= limit
 *
 * The ledger is not thread-safe: its owner serialises it (the block pool
 * under its lock; the thread-safe pools under theirs, with reserve / commit
 * / cancel around the upstream calls they make with the lock dropped).
 */
#ifndef MEMRES_LEDGER_H
#define MEMRES_LEDGER_H

#include "internal.h"

typedef struct mri_ledger {
    size_t held;                   /* bytes held from upstream now */
    size_t peak_held;              /* the most held at once */
    size_t upstream_allocations;   /* successful upstream allocate calls */
    size_t upstream_deallocations; /* upstream deallocate calls */
    size_t limit;                  /* cap on held; 0: none */
    size_t reserved;               /* bytes of requests in flight (mri_ledger_reserve) */
} mri_ledger;

/* Does a request of size bytes fit under the cap (with those in flight)? */
static inline bool mri_ledger_fits(const mri_ledger *l, size_t size)
{
    return l->limit == 0 ||
           (size <= l->limit && l->reserved <= l->limit - size && l->held <= l->limit - size - l->reserved);
}

/* Bytes the cap still allows (SIZE_MAX without one). */
static inline size_t mri_ledger_room(const mri_ledger *l)
{
    return l->limit == 0 ? SIZE_MAX : l->limit - l->held - l->reserved;
}

/* Records an allocation the caller made itself (the arena's header, carved
 * before the ledger exists, is the one user). */
static inline void mri_ledger_note(mri_ledger *l, size_t size)
{
    l->upstream_allocations++;
    l->held += size;
    if (l->held > l->peak_held)
        l->peak_held = l->held;
}

/* size bytes aligned to align from up, counted.  NULL with errno = ENOMEM
 * (the cap) or the upstream's errno, nothing counted. */
static inline void *mri_ledger_allocate(mri_ledger *l, mr_resource *up, size_t size, size_t align)
{
    if (MR_UNLIKELY(!mri_ledger_fits(l, size)))
        return mri_fail(ENOMEM);
    void *p = mr_allocate(up, size, align);
    if (MR_UNLIKELY(p == NULL))
        return NULL;
    mri_ledger_note(l, size);
    return p;
}

/* An owner that drops its lock across the upstream call (the thread-safe
 * pools: an upstream may take locks of its own) splits mri_ledger_allocate
 * in two, each half under its lock: reserve counts the request against the
 * cap (false, errno = ENOMEM, nothing counted: it does not fit), then
 * commit (the upstream gave it) or cancel (it did not).  held changes only
 * at commit, so a snapshot never sees held above peak_held. */
static inline bool mri_ledger_reserve(mri_ledger *l, size_t size)
{
    if (MR_UNLIKELY(!mri_ledger_fits(l, size))) {
        errno = ENOMEM;
        return false;
    }
    l->reserved += size;
    return true;
}

static inline void mri_ledger_commit(mri_ledger *l, size_t size)
{
    MR_ASSERT_INTERNAL(l->reserved >= size);
    l->reserved -= size;
    mri_ledger_note(l, size);
}

static inline void mri_ledger_cancel(mri_ledger *l, size_t size)
{
    MR_ASSERT_INTERNAL(l->reserved >= size);
    l->reserved -= size;
}

/* Counts size bytes as given back, before the owner makes the upstream
 * deallocate call itself (with its lock dropped). */
static inline void mri_ledger_give(mri_ledger *l, size_t size)
{
    MR_ASSERT_INTERNAL(l->held >= size && l->upstream_allocations > l->upstream_deallocations);
    l->held -= size;
    l->upstream_deallocations++;
}

/* Moves count blocks of bytes in all from one owner's books to another's,
 * with no upstream call: as if `from` gave them back and `to` took them. */
static inline void mri_ledger_move(mri_ledger *from, mri_ledger *to, size_t bytes, size_t count)
{
    MR_ASSERT_INTERNAL(from->held >= bytes);
    from->held -= bytes;
    from->upstream_deallocations += count;
    to->held += bytes;
    to->upstream_allocations += count;
    if (to->held > to->peak_held)
        to->peak_held = to->held;
}

/* Gives p (from mri_ledger_allocate(l, up, size, align)) back to up. */
static inline void mri_ledger_deallocate(mri_ledger *l, mr_resource *up, void *p, size_t size, size_t align)
{
    mri_ledger_give(l, size);
    mr_deallocate(up, p, size, align);
}

/* The ledger's part of mr_stats; the caller fills in_use and allocations. */
static inline void mri_ledger_stats(const mri_ledger *l, mr_stats *out)
{
    out->held = l->held;
    out->peak_held = l->peak_held;
    out->upstream_allocations = l->upstream_allocations;
    out->upstream_deallocations = l->upstream_deallocations;
}

/* Checks the invariants above for the walker `who` of allocator obj.  true,
 * or one line on stderr and false. */
static inline bool mri_ledger_verify(const mri_ledger *l, const char *who, const void *obj, size_t held_walked,
                                     size_t live_walked)
{
    MRI_VERIFY(l->held == held_walked, who, obj, "ledger holds %zu bytes, the walk finds %zu", l->held, held_walked);
    MRI_VERIFY(l->upstream_allocations - l->upstream_deallocations == live_walked, who, obj,
               "%zu upstream allocations - %zu deallocations != %zu live upstream blocks", l->upstream_allocations,
               l->upstream_deallocations, live_walked);
    MRI_VERIFY(l->peak_held >= l->held, who, obj, "peak %zu below held %zu", l->peak_held, l->held);
    MRI_VERIFY(l->limit == 0 || l->held <= l->limit, who, obj, "held %zu above the limit %zu", l->held, l->limit);
    MRI_VERIFY(l->reserved == 0, who, obj, "%zu bytes in flight while walked", l->reserved);
    return true;
}

#endif /* MEMRES_LEDGER_H */
