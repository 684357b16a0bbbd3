/* SPDX-License-Identifier: MIT */
/* advise/common/walk.h -- the call-stack walk of an allocation, shared by
 * the recorder (record/) and the apply runtime (apply/), so that both see
 * the same frames for the same call: a site recorded in one run is found
 * again in the next.
 *
 * Frame k + 1's return address sits at CFA(k) - 8, CFA(k) = CFA(k - 1) +
 * size(pc of frame k).  The frame sizes are learnt from libgcc's unwinder
 * (walk.c) into a global lock-free table (mra_fsz), cached per thread; a
 * miss, a frame whose size varies (alloca) or a stack outside the thread's
 * bounds uses the unwinder itself, which also teaches the table; every
 * verify_every-th cached walk is checked against it (doubling while they
 * agree).  Debian's -O2 binaries have no frame pointers: this is what
 * makes a walk of a few frames cost a few loads.
 *
 * Everything here is hidden: each shared object that includes it has its
 * own table. */
#ifndef MEMRES_ADVISE_WALK_H
#define MEMRES_ADVISE_WALK_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "format.h"

#pragma GCC visibility push(hidden)

#define MRA_FC_SIZE 512u    /* per-thread frame-size cache */
#define MRA_FSZ_BITS 16u    /* global frame-size table: 2^16 entries */
#define MRA_VERIFY_FIRST 256u /* cached walks between checks, doubling while they agree */
#define MRA_VERIFY_MAX 65536u

/* frame-size codes: 0 unknown, 1..0xfffd size/8, END: the stack ends after
 * this frame, VAR: the size varies (alloca) or cannot be cached: unwind */
#define MRA_FS_MISS 0u
#define MRA_FS_END 0xfffeu
#define MRA_FS_VAR 0xffffu
#define MRA_MEMO_NONE 0x10000u /* no code: the memo of a depth not walked yet */

#define MRA_LIKELY(x) __builtin_expect(!!(x), 1)
#define MRA_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* One thread's walking state (mra_walker_init makes it). */
struct mra_walker {
    uintptr_t stk_lo, stk_hi;    /* the thread's stack */
    uint32_t verify_ctr, verify_every, fc_epoch;
    uint32_t memo[MRA_MAX_DEPTH]; /* the last walk's frame-size codes, by depth */
    struct mra_fc_ent {
        uint64_t pc;
        uint32_t code;
        uint32_t pad;
    } fc[MRA_FC_SIZE];
};

/* The frame-size table (2^MRA_FSZ_BITS words, zeroed; its owner maps it)
 * and its epoch, bumped when a size learnt once turns out to vary. */
extern _Atomic uint64_t *mra_fsz;
extern _Atomic uint32_t mra_fc_epoch;

/* murmur's finaliser */
static inline uint64_t mra_mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    x *= UINT64_C(0xc4ceb9fe1a85ec53);
    x ^= x >> 33;
    return x;
}

static inline uint32_t mra_fsz_global(uint64_t pc)
{
    size_t mask = ((size_t)1 << MRA_FSZ_BITS) - 1;
    size_t i = (size_t)mra_mix64(pc) & mask;
    for (unsigned probe = 0; probe < 16; probe++, i = (i + 1) & mask) {
        uint64_t v = atomic_load_explicit(&mra_fsz[i], memory_order_relaxed);
        if (v == 0)
            return MRA_FS_MISS;
        if ((v >> 16) == pc)
            return (uint32_t)(v & 0xffffu);
    }
    return MRA_FS_MISS;
}

static inline uint32_t mra_fsz_get(struct mra_walker *w, uint64_t pc)
{
    struct mra_fc_ent *e = &w->fc[(pc ^ (pc >> 9)) & (MRA_FC_SIZE - 1)];
    if (MRA_LIKELY(e->pc == pc))
        return e->code;
    uint32_t c = mra_fsz_global(pc);
    if (c != MRA_FS_MISS) {
        e->pc = pc;
        e->code = c;
    }
    return c;
}

/* The cached walk.  The address chain uses the size the previous walk
 * found at the same depth (memo), so that the loads of the stack do not
 * wait for the table look-ups, which only confirm it.  fr[i] are return
 * addresses - 1, innermost first; *fail: the unwinder must finish. */
static inline unsigned mra_walk_cached(struct mra_walker *w, uintptr_t ra, uintptr_t cfa, uint64_t *fr,
                                       unsigned depth, bool *fail)
{
    fr[0] = ra - 1;
    unsigned n = 1;
    uint64_t pc = ra;
    uintptr_t hi = w->stk_hi;
    if (MRA_UNLIKELY(cfa < w->stk_lo || cfa >= hi)) {
        *fail = true;
        return n;
    }
    for (; n < depth; n++) {
        uint32_t guess = w->memo[n - 1];
        uint32_t step = guess; /* opaque to the compiler: the chain uses it, not code */
        __asm__("" : "+r"(step));
        uint32_t code = mra_fsz_get(w, pc);
        if (MRA_UNLIKELY(code != guess)) {
            if (MRA_UNLIKELY(code == MRA_FS_MISS || code == MRA_FS_VAR)) {
                *fail = true;
                return n;
            }
            w->memo[n - 1] = code;
            step = code;
        }
        if (MRA_UNLIKELY(step == MRA_FS_END))
            break;
        cfa += (uintptr_t)step * 8u;
        if (MRA_UNLIKELY(cfa > hi))
            break;
        memcpy(&pc, (const void *)(cfa - 8), 8);
        if (MRA_UNLIKELY(pc < 4096u))
            break;
        fr[n] = pc - 1;
    }
    return n;
}

/* walk.c: libgcc's unwinder from the caller of the allocation function
 * (return address ra, the allocation function's CFA cfa): the frames, the
 * table taught (learn); and the check of a cached walk of n frames, whose
 * frames it returns (a size that differs is marked MRA_FS_VAR). */
__attribute__((noinline)) unsigned mra_unwind_stack(uintptr_t ra, uintptr_t cfa, uint64_t *fr, unsigned depth,
                                                    bool learn);
__attribute__((noinline, cold)) unsigned mra_verify_stack(uintptr_t ra, uintptr_t cfa, uint64_t *fr, unsigned n,
                                                          unsigned depth);
/* The calling thread's walker: empty memo and cache, its stack's bounds. */
void mra_walker_init(struct mra_walker *w);

/* The walk of an allocation's stack, depth frames at most: cached, the
 * unwinder behind a miss, checked now and then.  errno is kept. */
static inline unsigned mra_walk(struct mra_walker *w, uintptr_t ra, uintptr_t cfa, uint64_t *fr, unsigned depth)
{
    uint32_t ep = atomic_load_explicit(&mra_fc_epoch, memory_order_relaxed);
    if (MRA_UNLIKELY(ep != w->fc_epoch)) {
        memset(w->fc, 0, sizeof w->fc);
        w->fc_epoch = ep;
    }
    bool fail = false;
    unsigned n = mra_walk_cached(w, ra, cfa, fr, depth, &fail);
    if (MRA_UNLIKELY(fail)) {
        int e = errno;
        n = mra_unwind_stack(ra, cfa, fr, depth, true);
        errno = e;
        return n;
    }
    if (MRA_UNLIKELY(++w->verify_ctr >= w->verify_every)) {
        w->verify_ctr = 0;
        int e = errno;
        uint32_t ep0 = atomic_load_explicit(&mra_fc_epoch, memory_order_relaxed);
        n = mra_verify_stack(ra, cfa, fr, n, depth);
        if (atomic_load_explicit(&mra_fc_epoch, memory_order_relaxed) != ep0)
            w->verify_every = MRA_VERIFY_FIRST;
        else if (w->verify_every < MRA_VERIFY_MAX)
            w->verify_every *= 2;
        errno = e;
    }
    return n;
}

/* A stack's hash: a multilinear sum (each frame times an odd constant of
 * its position: the products are independent, no chain of multiplies
 * through the frames), then murmur's finaliser. */
static inline uint64_t mra_frames_hash(const uint64_t *fr, unsigned n)
{
    uint64_t h = n * UINT64_C(0x9E3779B97F4A7C15);
    for (unsigned i = 0; i < n; i++)
        h += fr[i] * (UINT64_C(0xD6E8FEB86659FD93) + ((uint64_t)i << 33) * 2);
    return mra_mix64(h);
}

#pragma GCC visibility pop

#endif
