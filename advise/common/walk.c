/* SPDX-License-Identifier: MIT */
/* advise/common/walk.c -- the slow half of the stack walk (walk.h):
 * libgcc's unwinder (a miss in the frame-size cache, a frame whose size
 * varies, a stack outside the thread's bounds, and now and then a cached
 * walk checked against it), the global frame-size table it teaches, and a
 * thread's walker made.  The cached walk itself is walk.h's, inlined into
 * the allocation paths of the recorder and the apply runtime. */
#include <pthread.h>
#include <unwind.h>

#include "walk.h"

_Atomic uint64_t *mra_fsz;
_Atomic uint32_t mra_fc_epoch;

static void fsz_set(uint64_t pc, uint32_t code)
{
    if (pc >> 47)
        return;
    size_t mask = ((size_t)1 << MRA_FSZ_BITS) - 1;
    size_t i = (size_t)mra_mix64(pc) & mask;
    uint64_t nv = pc << 16 | code;
    for (unsigned probe = 0; probe < 16; probe++, i = (i + 1) & mask) {
        uint64_t v = atomic_load_explicit(&mra_fsz[i], memory_order_relaxed);
        for (;;) {
            if (v != 0 && (v >> 16) != pc)
                break;
            if (v != 0 && ((v & 0xffffu) == MRA_FS_VAR || (v & 0xffffu) == code))
                return;
            if (atomic_compare_exchange_weak_explicit(&mra_fsz[i], &v, nv, memory_order_relaxed,
                                                      memory_order_relaxed)) {
                if (v != 0 && code == MRA_FS_VAR)
                    atomic_fetch_add_explicit(&mra_fc_epoch, 1, memory_order_relaxed);
                return;
            }
        }
    }
}

static inline uint32_t fsz_code(uintptr_t size)
{
    if (size == 0 || (size & 7u) || size / 8u >= MRA_FS_END)
        return MRA_FS_VAR;
    return (uint32_t)(size / 8u);
}

struct ucoll {
    uintptr_t ra, cfa0;          /* the caller of malloc, malloc's CFA */
    uintptr_t last_cfa;
    unsigned n, depth, skipped;
    bool started, full, signal, cfa_ok;
    uint64_t pcs[MRA_MAX_DEPTH];
    uintptr_t sizes[MRA_MAX_DEPTH]; /* sizes[i]: CFA(frame i) - CFA(frame i-1), for i < n - 1 */
};

/* libgcc's callback sees frame k with _Unwind_GetCFA() giving the CFA of
 * its callee, frame k - 1 (the stack pointer of frame k at its call):
 * frame k's own size is known at the callback of frame k + 1. */
static _Unwind_Reason_Code ucb(struct _Unwind_Context *ctx, void *arg)
{
    struct ucoll *u = arg;
    int before = 0;
    uintptr_t ip = (uintptr_t)_Unwind_GetIPInfo(ctx, &before);
    uintptr_t cfa = (uintptr_t)_Unwind_GetCFA(ctx);
    if (!u->started) {
        if (ip != u->ra || before)
            return ++u->skipped > 32 ? _URC_NORMAL_STOP : _URC_NO_REASON;
        u->started = true;
        u->cfa_ok = cfa == u->cfa0;
    } else {
        if (ip == 0) /* the end of the stack: called once more with no frame */
            return _URC_NORMAL_STOP;
        u->sizes[u->n - 1] = cfa - u->last_cfa;
    }
    if (before) { /* a signal frame: stop before it */
        u->signal = true;
        return _URC_NORMAL_STOP;
    }
    if (u->n == u->depth) {
        u->full = true;
        return _URC_NORMAL_STOP;
    }
    u->pcs[u->n++] = ip;
    u->last_cfa = cfa;
    return _URC_NO_REASON;
}

/* What the unwinder taught: the code of frame i's size (MRA_FS_MISS: none). */
static uint32_t ucoll_code(const struct ucoll *u, unsigned i)
{
    if (!u->cfa_ok)
        return MRA_FS_MISS;
    if (i + 1 < u->n || (i + 1 == u->n && u->full))
        return fsz_code(u->sizes[i]);
    return u->signal ? MRA_FS_VAR : MRA_FS_END;
}

/* libgcc's unwinder from here into u: the frames from the caller of the
 * allocation function (return address ra, the function's CFA cfa) on. */
static void ucoll_run(struct ucoll *u, uintptr_t ra, uintptr_t cfa, unsigned depth)
{
    memset(u, 0, sizeof *u);
    u->ra = ra;
    u->cfa0 = cfa;
    u->depth = depth;
    _Unwind_Backtrace(ucb, u);
}

/* Unwinds with libgcc from here, keeps the frames from the caller of
 * malloc (return address ra) on, teaches the frame-size table. */
unsigned mra_unwind_stack(uintptr_t ra, uintptr_t cfa, uint64_t *fr, unsigned depth,
                          bool learn)
{
    struct ucoll u;
    ucoll_run(&u, ra, cfa, depth);
    if (!u.started || u.n == 0) {
        fr[0] = ra - 1;
        return 1;
    }
    for (unsigned i = 0; i < u.n; i++) {
        fr[i] = u.pcs[i] - 1;
        uint32_t code = learn ? ucoll_code(&u, i) : MRA_FS_MISS;
        if (code != MRA_FS_MISS)
            fsz_set(u.pcs[i], code);
    }
    return u.n;
}

/* Checks a cached walk against the unwinder: a frame whose size differs is
 * marked MRA_FS_VAR.  Returns the unwinder's frames. */
unsigned mra_verify_stack(uintptr_t ra, uintptr_t cfa, uint64_t *fr, unsigned n,
                          unsigned depth)
{
    struct ucoll u;
    ucoll_run(&u, ra, cfa, depth);
    if (!u.started || u.n == 0)
        return n;
    for (unsigned i = 0; i < u.n; i++) {
        fr[i] = u.pcs[i] - 1;
        uint32_t code = ucoll_code(&u, i);
        if (code == MRA_FS_MISS)
            continue;
        uint32_t have = mra_fsz_global(u.pcs[i]);
        if (have != MRA_FS_MISS && have != code) {
            fsz_set(u.pcs[i], MRA_FS_VAR);
        } else if (have == MRA_FS_MISS) {
            fsz_set(u.pcs[i], code);
        }
    }
    return u.n;
}

void mra_walker_init(struct mra_walker *w)
{
    memset(w, 0, sizeof *w);
    w->fc_epoch = atomic_load_explicit(&mra_fc_epoch, memory_order_relaxed);
    w->verify_every = MRA_VERIFY_FIRST;
    for (unsigned i = 0; i < MRA_MAX_DEPTH; i++)
        w->memo[i] = MRA_MEMO_NONE;
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        void *addr;
        size_t size;
        if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
            w->stk_lo = (uintptr_t)addr;
            w->stk_hi = (uintptr_t)addr + size;
        }
        pthread_attr_destroy(&attr);
    }
}
