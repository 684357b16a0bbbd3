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
 * addresses - 1, innermost first; *fail: the unwinder must finish.  With
 * off (not NULL), off[i] is where fr[i] + 1 lies from cfa (i >= 1). */
static inline unsigned mra_walk_cached(struct mra_walker *w, uintptr_t ra, uintptr_t cfa, uint64_t *fr,
                                       unsigned depth, bool *fail, uint32_t *off)
{
    uintptr_t cfa0 = cfa;
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
        if (off)
            off[n] = (uint32_t)(cfa - cfa0 - 8);
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
 * unwinder behind a miss, checked now and then.  With want, where the
 * cached walk stops at a frame it cannot size after n frames, want(fr, n)
 * is asked first: false, and the walk ends there, 0, without the unwinder
 * (the apply runtime: a stack no planned one begins with).  With off (not
 * NULL): the frames' places as mra_walk_cached gives them, off[0] 0 where
 * they are all known (the cached walk's frames, or those want turned
 * down), else UINT32_MAX.  errno is kept. */
static inline unsigned mra_walk_want(struct mra_walker *w, uintptr_t ra, uintptr_t cfa, uint64_t *fr,
                                     unsigned depth, bool (*want)(const uint64_t *fr, unsigned n), uint32_t *off)
{
    if (off)
        off[0] = 0;
    uint32_t ep = atomic_load_explicit(&mra_fc_epoch, memory_order_relaxed);
    if (MRA_UNLIKELY(ep != w->fc_epoch)) {
        memset(w->fc, 0, sizeof w->fc);
        w->fc_epoch = ep;
    }
    bool fail = false;
    unsigned n = mra_walk_cached(w, ra, cfa, fr, depth, &fail, off);
    if (MRA_UNLIKELY(fail)) {
        if (want && !want(fr, n))
            return 0;
        if (off)
            off[0] = UINT32_MAX;
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
        if (off)
            off[0] = UINT32_MAX;
        if (atomic_load_explicit(&mra_fc_epoch, memory_order_relaxed) != ep0)
            w->verify_every = MRA_VERIFY_FIRST;
        else if (w->verify_every < MRA_VERIFY_MAX)
            w->verify_every *= 2;
        errno = e;
    }
    return n;
}

static inline unsigned mra_walk(struct mra_walker *w, uintptr_t ra, uintptr_t cfa, uint64_t *fr, unsigned depth)
{
    return mra_walk_want(w, ra, cfa, fr, depth, NULL, NULL);
}

/* The multipliers of a stack's hash, one per frame position: odd and
 * unrelated (splitmix64's outputs).  Constants in arithmetic progression
 * would make the sum depend only on how many frames differ and the sum of
 * their positions: a recursion's left and right calls, one return address
 * apart, would collide in all 64 bits. */
static const uint64_t mra_hash_mult[MRA_MAX_DEPTH] = {
    UINT64_C(0x2cb0f69f4abea221), UINT64_C(0x9417034723148989), UINT64_C(0xdd555950609dfe03), UINT64_C(0xdbafb150deb12801),
    UINT64_C(0x7e789b2e6c442cb7), UINT64_C(0xf41e5636c7e4f8c5), UINT64_C(0x0959d150f8fba7e5), UINT64_C(0xa97316f13cdb9eeb),
    UINT64_C(0x74cd8258f9520069), UINT64_C(0x55c74a62e116868b), UINT64_C(0xd2f4c799a2023cbd), UINT64_C(0xdf98cb79a37b51b9),
    UINT64_C(0x396f5885524f3905), UINT64_C(0xaf1d56386ca3b277), UINT64_C(0xa9ffbe6b5104e85b), UINT64_C(0x6bd0c51b9fd533b3),
    UINT64_C(0x980ce91c50ab4b57), UINT64_C(0x28ac395780fe62c5), UINT64_C(0x768912e3a6bcedc7), UINT64_C(0x50b3e8c9332c7c89),
    UINT64_C(0xce3bbfe520bd47db), UINT64_C(0xcba6c8e8e0bb7c4f), UINT64_C(0xbf194db8434a346d), UINT64_C(0x7d8f2a7b60416d7f),
    UINT64_C(0x0849d1f6e0e10a5f), UINT64_C(0x7654b590d064e22f), UINT64_C(0x16d1da9507df3af3), UINT64_C(0xf63aef1089ea30e5),
    UINT64_C(0x9ade6673cc6c522b), UINT64_C(0x4c75bc274e37087d), UINT64_C(0xd35e12b49f51f27b), UINT64_C(0x22ddf2ffcee481eb),
    UINT64_C(0x06007fb13c59a1f1), UINT64_C(0x8966a38c651ea4db), UINT64_C(0x25242f018fc01ac7), UINT64_C(0xa73ec74fa31b717d),
    UINT64_C(0x7ee0abdd9797d3a3), UINT64_C(0x5c06ff7dc4ac1881), UINT64_C(0x8434e41042c28a7d), UINT64_C(0x770a372d64327351),
    UINT64_C(0xeed940dad9e9c06d), UINT64_C(0x8977e93646524825), UINT64_C(0xa9897f0a62a51617), UINT64_C(0xa35d4250c53f2b3b),
    UINT64_C(0x4072542a94b9c33f), UINT64_C(0x3154a7a62447e8ab), UINT64_C(0x686865712a1a245f), UINT64_C(0x0fba67727d7b3b99),
    UINT64_C(0x0634e2024536912f), UINT64_C(0xd9ff52a26cf9881b), UINT64_C(0x9435dc0399f932db), UINT64_C(0x18d39fc1af93e7f1),
    UINT64_C(0x12f7147c1e7f46ab), UINT64_C(0xdedf66783eddb4a1), UINT64_C(0x6f75480614554799), UINT64_C(0xe40e95e8ef84bde3),
    UINT64_C(0xbb41fe601fefb567), UINT64_C(0x5c3702e4c7bf19f1), UINT64_C(0x8c7d1d0d3d4a8ec5), UINT64_C(0xee779996ba62dccb),
    UINT64_C(0x80ccb15bf530844b), UINT64_C(0xdf56e7dc4d57959d), UINT64_C(0x9eb86a81fe90b68f), UINT64_C(0x6a25741fa696fbd3),
};

/* A stack's hash: a multilinear sum (each frame times its position's
 * multiplier: the products are independent, no chain of multiplies
 * through the frames), then murmur's finaliser. */
static inline uint64_t mra_frames_hash(const uint64_t *fr, unsigned n)
{
    uint64_t h = n * UINT64_C(0x9E3779B97F4A7C15);
    for (unsigned i = 0; i < n; i++)
        h += fr[i] * mra_hash_mult[i];
    return mra_mix64(h);
}

#pragma GCC visibility pop

#endif
