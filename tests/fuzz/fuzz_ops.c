/* SPDX-License-Identifier: MIT */
/* tests/fuzz/fuzz_ops.c -- an op-sequence fuzz target over the arena, the
 * object pool and the size-class pools, stacked on a checking upstream that
 * fails a request chosen by the input.
 *
 * Each input byte string is a program: every op reads a few bytes.  A shadow
 * model remembers every live allocation with a fill pattern; patterns are
 * verified before memory is given back (free, rewind, reset, release), every
 * allocator's check() runs after each op, and at the end the upstream must be
 * balanced.  Child arenas (memres/tree.h) come and go under the arena --
 * destroyed at once, with a grandchild, or left to die in the arena's reset,
 * release or rewind, when the arena keeps them for reuse -- and after every op
 * the books balance: the allocators' held bytes (mr_*_stats, the kept
 * children in their keeper's) add up to what the upstream has out (read
 * after every op that called the upstream or made or killed a child).  Any violation aborts, which libFuzzer (or the standalone driver
 * in driver.c) reports with the input.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memres/memres.h"
#include "support.h"

#define MAX_LIVE 256
#define MAX_MARKS 8

enum owner { ARENA, OBJPOOL, POOLS };

typedef struct live {
    unsigned char *p;
    size_t size, align;
    unsigned char fill;
    enum owner owner;
    size_t seq; /* arena: allocation sequence number (for rewind) */
} live;

typedef struct state {
    const uint8_t *in;
    size_t len, pos;
    mrt_upstream up;
    mr_arena *arena;
    mr_objpool *objpool;
    mr_pools *pools;
    live lv[MAX_LIVE];
    size_t nlive;
    size_t seq;
    mr_arena_mark marks[MAX_MARKS];
    size_t mark_seq[MAX_MARKS];
    size_t mark_cleanups[MAX_MARKS];
    size_t nmarks;
    size_t cleanups_registered, cleanups_run;
    mr_arena *child;  /* a live child of the arena, or NULL */
    size_t child_seq; /* when it was made (a rewind past it destroys it) */
    size_t books_calls; /* the upstream's calls when the books were last read */
    bool tree_op;       /* this op made or killed a child (the books move) */
} state;

#define FAIL(...) (fprintf(stderr, "fuzz_ops: " __VA_ARGS__), fputc('\n', stderr), abort())

static unsigned byte(state *s) { return s->pos < s->len ? s->in[s->pos++] : 0; }

/* Sizes on a log scale up to 64 KiB, plus a few hostile values. */
static size_t size_arg(state *s)
{
    unsigned b = byte(s);
    switch (b) {
    case 255: return SIZE_MAX;
    case 254: return SIZE_MAX - 15;
    case 253: return (size_t)PTRDIFF_MAX + 1;
    case 252: return 0;
    default: break;
    }
    unsigned shift = b % 17;
    return ((size_t)1 << shift) + (byte(s) % ((size_t)1 << shift));
}

static void fill(live *l)
{
    memset(l->p, l->fill, l->size);
}

static void verify(const live *l)
{
    for (size_t i = 0; i < l->size; i++)
        if (l->p[i] != l->fill)
            FAIL("allocation %p (%zu bytes) corrupted at %zu: %#x != %#x", (void *)l->p, l->size, i, l->p[i], l->fill);
}

static void add_live(state *s, void *p, size_t size, size_t align, enum owner o)
{
    if (((uintptr_t)p & (align - 1)) != 0)
        FAIL("%p not aligned to %zu", p, align);
    if (s->nlive == MAX_LIVE || size > 1 << 20) /* not tracked: still valid memory */
        return;
    live *l = &s->lv[s->nlive++];
    *l = (live){p, size, align, (unsigned char)(s->seq * 31 + 7), o, s->seq};
    fill(l);
}

static void drop_live(state *s, size_t i)
{
    verify(&s->lv[i]);
    s->lv[i] = s->lv[--s->nlive];
}

/* Drops (after verifying) every arena allocation with seq >= from. */
static void drop_arena_from(state *s, size_t from)
{
    for (size_t i = s->nlive; i-- > 0;)
        if (s->lv[i].owner == ARENA && s->lv[i].seq >= from)
            drop_live(s, i);
}

static void count_cleanup(void *arg) { ((state *)arg)->cleanups_run++; }

static void expect_failure(void *p, const char *what)
{
    if (p != NULL)
        FAIL("%s succeeded", what);
    if (errno != ENOMEM && errno != EINVAL)
        FAIL("%s failed with errno %d", what, errno);
}

static void check_all(state *s)
{
    if (!mr_arena_check(s->arena) || !mr_objpool_check(s->objpool) || !mr_pools_check(s->pools))
        FAIL("allocator invariant broken");
    if (s->cleanups_run > s->cleanups_registered)
        FAIL("more cleanups ran than were registered");
    /* the books move only with an upstream call or a child's birth or death
     * (a kept child's bytes go to its keeper): read them then, not after
     * every op (an arena's stats walk its blocks) */
    if (!s->tree_op && s->up.calls == s->books_calls)
        return;
    s->tree_op = false;
    s->books_calls = s->up.calls;
    mr_stats a, o, p, c = {0};
    mr_arena_stats(s->arena, &a);
    mr_objpool_stats(s->objpool, &o);
    mr_pools_stats(s->pools, &p);
    if (s->child != NULL)
        mr_arena_stats(s->child, &c);
    if (a.held + o.held + p.held + c.held != s->up.bytes)
        FAIL("the books: arena %zu + objpool %zu + pools %zu + child %zu held, the upstream has %zu out", a.held, o.held,
             p.held, c.held, s->up.bytes);
}

/* A child arena of the arena with n bytes in it, or NULL (a failed create
 * or allocation: expected only of a failing upstream). */
static mr_arena *child_of(state *s, mr_node *parent, size_t n)
{
    size_t failures = s->up.failures;
    mr_arena *c = mr_arena_create(&(mr_arena_options){.parent = parent, .name = "child"});
    if (c == NULL) {
        if (s->up.failures == failures) FAIL("child create failed with no upstream failure");
        expect_failure(c, "child create");
        return NULL;
    }
    unsigned char *p = mr_arena_alloc(c, n);
    if (p != NULL) memset(p, 0xc5, n < 4096 ? n : 4096);
    return c;
}

static void step(state *s)
{
    unsigned op = byte(s) % 17;
    s->seq++;
    switch (op) {
    case 0: case 1: { /* arena alloc */
        size_t n = size_arg(s), failures = s->up.failures;
        void *p = mr_arena_alloc(s->arena, n);
        if (p != NULL) add_live(s, p, n, MR_ARENA_ALIGN, ARENA);
        else if (n <= 1 << 20 && s->up.failures == failures) FAIL("arena alloc(%zu) failed with no upstream failure", n);
        else expect_failure(p, "arena alloc");
        break;
    }
    case 2: { /* arena alloc_aligned, including invalid alignments */
        size_t n = size_arg(s);
        unsigned k = byte(s);
        size_t align = k == 0 ? 0 : k == 1 ? 24 : (size_t)1 << (k % 14);
        void *p = mr_arena_alloc_aligned(s->arena, n, align);
        if (p != NULL) add_live(s, p, n, align, ARENA);
        else expect_failure(p, "arena alloc_aligned");
        break;
    }
    case 3: { /* calloc with possible overflow */
        size_t c = size_arg(s), n = size_arg(s);
        unsigned char *p = mr_arena_calloc(s->arena, c, n);
        if (p != NULL) {
            for (size_t i = 0; i < c * n && i < 4096; i++)
                if (p[i] != 0) FAIL("calloc memory not zero at %zu", i);
            add_live(s, p, c * n, MR_ARENA_ALIGN, ARENA);
        } else {
            expect_failure(p, "calloc");
        }
        break;
    }
    case 4: { /* realloc the newest arena allocation or another one */
        size_t n = size_arg(s);
        for (size_t i = s->nlive; i-- > 0;) {
            if (s->lv[i].owner != ARENA) continue;
            live old = s->lv[i];
            verify(&old);
            unsigned char *q = mr_arena_realloc(s->arena, old.p, old.size, n);
            if (q == NULL) { expect_failure(q, "realloc"); verify(&old); break; }
            size_t keep = old.size < n ? old.size : n;
            for (size_t j = 0; j < keep; j++)
                if (q[j] != old.fill) FAIL("realloc lost contents at %zu", j);
            s->lv[i] = s->lv[--s->nlive];
            /* a moved result is aligned to MR_ARENA_ALIGN; one that stayed keeps p's */
            add_live(s, q, n, q == old.p ? old.align : MR_ARENA_ALIGN, ARENA);
            break;
        }
        break;
    }
    case 5: { /* strings */
        char buf[64];
        unsigned n = byte(s) % 60;
        memset(buf, 'a' + (int)(s->seq % 26), n);
        buf[n] = '\0';
        char *a = mr_arena_strdup(s->arena, buf);
        char *b = mr_arena_sprintf(s->arena, "%s-%zu", buf, s->seq);
        if (a != NULL && strcmp(a, buf) != 0) FAIL("strdup");
        if (b != NULL && (strncmp(b, buf, n) != 0 || b[n] != '-')) FAIL("sprintf");
        break;
    }
    case 6: /* save */
        if (s->nmarks < MAX_MARKS) {
            s->marks[s->nmarks] = mr_arena_save(s->arena);
            s->mark_seq[s->nmarks] = s->seq;
            s->mark_cleanups[s->nmarks] = s->cleanups_registered;
            s->nmarks++;
        }
        break;
    case 7: /* rewind to one of the marks */
        if (s->nmarks > 0) {
            size_t m = byte(s) % s->nmarks;
            drop_arena_from(s, s->mark_seq[m]);
            size_t expect_run = s->cleanups_run + (s->cleanups_registered - s->mark_cleanups[m]);
            mr_arena_rewind(s->arena, s->marks[m]);
            if (s->cleanups_run != expect_run) FAIL("rewind ran %zu cleanups, expected %zu", s->cleanups_run, expect_run);
            s->cleanups_registered = s->mark_cleanups[m];
            s->cleanups_run = 0;
            s->nmarks = m + 1;
            if (s->child != NULL && s->child_seq > s->mark_seq[m]) s->child = NULL; /* made after the mark: gone */
            s->tree_op = true;
        }
        break;
    case 8: /* defer */
        if (mr_arena_defer(s->arena, count_cleanup, s) == 0) s->cleanups_registered++;
        break;
    case 9: { /* reset or release */
        drop_arena_from(s, 0);
        size_t before = s->up.allocations;
        if (byte(s) & 1) {
            mr_arena_reset(s->arena);
            if (s->up.allocations != before) FAIL("reset called upstream");
        } else {
            mr_arena_release(s->arena);
        }
        if (s->cleanups_run != s->cleanups_registered) FAIL("reset/release did not run every cleanup");
        s->cleanups_registered = s->cleanups_run = 0;
        s->nmarks = 0;
        s->child = NULL; /* died with the reset or release */
        s->tree_op = true;
        break;
    }
    case 10: case 11: { /* objpool alloc */
        void *p = mr_objpool_alloc(s->objpool);
        if (p != NULL) add_live(s, p, 40, 8, OBJPOOL);
        else expect_failure(p, "objpool alloc");
        break;
    }
    case 12: { /* pools alloc */
        size_t n = size_arg(s);
        size_t align = (size_t)1 << (byte(s) % 13);
        void *p = mr_pools_alloc(s->pools, n, align);
        if (p != NULL) {
            if (s->nlive == MAX_LIVE || n > 1 << 20) { mr_pools_free(s->pools, p, n, align); break; }
            add_live(s, p, n, align, POOLS);
        } else {
            expect_failure(p, "pools alloc");
        }
        break;
    }
    case 13: case 14: { /* free a random objpool/pools allocation */
        if (s->nlive == 0) break;
        size_t i = byte(s) % s->nlive;
        live l = s->lv[i];
        if (l.owner == ARENA) break;
        drop_live(s, i);
        if (l.owner == OBJPOOL) mr_objpool_free(s->objpool, l.p);
        else mr_pools_free(s->pools, l.p, l.size, l.align);
        break;
    }
    case 15: /* arm the upstream to fail a coming request */
        s->up.fail_at = (byte(s) & 1) ? s->up.calls + 1 + byte(s) % 4 : 0;
        break;
    case 16: { /* a child arena: destroyed now, with a grandchild, or left to the arena */
        unsigned how = byte(s) % 3;
        s->tree_op = true;
        size_t n = size_arg(s) % (64 << 10);
        mr_arena *c = child_of(s, mr_arena_node(s->arena), n);
        if (c == NULL) break;
        if (how == 0) {
            mr_arena_destroy(c);
        } else if (how == 1) {
            (void)child_of(s, mr_arena_node(c), n / 2); /* dies with c */
            mr_arena_destroy(c);
        } else {
            if (s->child != NULL) mr_arena_destroy(s->child);
            s->child = c;
            s->child_seq = s->seq;
        }
        break;
    }
    }
    check_all(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static state s; /* large: keep it off the stack */
    memset(&s, 0, sizeof s);
    s.in = data;
    s.len = size;
    mrt_upstream_init(&s.up);
    s.up.limit = (size_t)64 << 20; /* huge calloc products fail instead of zeroing gigabytes */
    mr_arena_options ao = {.upstream = &s.up.base, .block_size = 512, .max_block_size = 8192};
    mr_objpool_options oo = {.upstream = &s.up.base, .objects_per_block = 16};
    mr_pools_options po = {.upstream = &s.up.base, .largest_required_pool_block = 4096};
    s.arena = mr_arena_create(&ao);
    s.objpool = mr_objpool_create(40, 8, &oo);
    s.pools = mr_pools_create(&po);
    if (s.arena == NULL || s.objpool == NULL || s.pools == NULL)
        FAIL("create failed");
    while (s.pos < s.len)
        step(&s);
    for (size_t i = 0; i < s.nlive; i++)
        verify(&s.lv[i]);
    mr_arena_destroy(s.arena);
    mr_objpool_destroy(s.objpool);
    mr_pools_destroy(s.pools);
    if (s.cleanups_run != s.cleanups_registered) FAIL("destroy did not run every cleanup");
    if (s.up.nlive != 0 || s.up.bytes != 0 || s.up.bad_deallocations != 0)
        FAIL("upstream not balanced: %zu blocks, %zu bytes, %zu bad frees", s.up.nlive, s.up.bytes, s.up.bad_deallocations);
    mrt_upstream_fini(&s.up);
    return 0;
}
