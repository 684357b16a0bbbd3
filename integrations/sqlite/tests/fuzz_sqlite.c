/* SPDX-License-Identifier: MIT */
/* integrations/sqlite/tests/fuzz_sqlite.c -- an op-sequence fuzz target over
 * SQLite's allocator on memres (memres/sqlite.h), called the way SQLite's
 * own code calls it: sqlite3_malloc64, sqlite3_realloc64, sqlite3_free and
 * sqlite3_msize, which go through xRoundup (memory statistics on), xMalloc,
 * xRealloc, xSize and xFree.
 *
 * Each input is a program.  Its first byte picks the pool, made by
 * mr_sqlite_pools_create (a plain pool behind the integration's lock, a
 * thread-safe pool, or a pool whose classes stop at 512 bytes), whether SQLite keeps
 * memory statistics, and whether the pool's memory comes from malloc or from
 * the page source (mapped and unmapped whole); the second picks a fault rule
 * of an mr_failing under the pools (none, the Nth request, the Nth and every
 * one after, or at random).
 * Then ops: allocate, free, resize, bursts of one size (sizes around the
 * pool's exact sizes among them) and frees of a run of slots (which empty
 * a class: its chunks go back), and checks.  A shadow model
 * keeps every block with a fill pattern over all the bytes its xSize says
 * it holds (at least what was asked); a block is verified whole before it
 * is freed or resized and at both ends at every check, and a resize keeps
 * the bytes both sizes cover.  A NULL must come with an injected failure (or a size SQLite
 * refuses itself).  At the end every block is freed: sqlite3_memory_used()
 * returns to 0 (statistics on), and after sqlite3_shutdown the pools hold
 * nothing live, pass mr_pools_check, and nothing is outstanding upstream.
 * Any violation aborts, which libFuzzer (or the seeded driver,
 * tests/fuzz/driver.c) reports with the input.
 *
 * Not here: mr_sqlite_install_singlethread, which configures SQLite
 * single-threaded for the rest of the process (test_sqlite runs it last);
 * its methods are the locked install's without the lock.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "memres/adaptors.h"
#include "memres/pages.h"
#include "memres/pools.h"
#include "memres/sqlite.h"

#define FAIL(...) (fprintf(stderr, "fuzz_sqlite: " __VA_ARGS__), fputc('\n', stderr), abort())

enum { SLOTS = 512 };
/* SQLite refuses requests of this many bytes and more without calling
 * xMalloc (sqlite3Malloc), and 0 bytes. */
#define SQLITE_REFUSES ((sqlite3_uint64)0x7fffff00)

typedef struct slot {
    unsigned char *p; /* NULL: empty */
    size_t n;         /* bytes it holds: its xSize, all of them filled */
    unsigned char seed;
} slot;

typedef struct state {
    const uint8_t *in;
    size_t len, pos;
    mr_failing *fl;
    mr_tracking *tr;
    mr_pools *p;
    unsigned seq;
    slot s[SLOTS];
} state;

static unsigned byte(state *s) { return s->pos < s->len ? s->in[s->pos++] : 0; }
static unsigned word(state *s) { unsigned hi = byte(s); return hi << 8 | byte(s); }

/* Sizes the pool treats apart: the inline classes' (up to 1 KiB), the
 * sizes around the exact ones (SQLite's journal chunks, its pages with
 * their headers), the largest class and past it (direct blocks), and sizes
 * SQLite refuses (not the largest it takes: 2 GiB to fill).  Big blocks
 * are rare: filling and verifying them is most of a run's time. */
static const size_t exact_like[] = {1024, 1032, 1040, 1160, 2056, 2400, 3100, 4096, 4200, 4360, 4368, 5200, 9000, 17000};
#define NEXACT (sizeof exact_like / sizeof exact_like[0])

static size_t exact_arg(state *s) { return exact_like[byte(s) % NEXACT] - 8 + byte(s) % 17; }

static size_t size_arg(state *s)
{
    unsigned b = byte(s);
    if (b < 96)
        return 1 + word(s) % 1100;
    if (b < 192)
        return exact_arg(s);
    if (b < 240)
        return 1000 + word(s) % 20000;
    if (b < 250)
        return 60000 + word(s) * 2u; /* around the largest class (64 KiB) and past it */
    switch (b) {
    case 250: return 0;
    case 251: return (size_t)1 << 20; /* a direct block of its own */
    case 252: return (size_t)SQLITE_REFUSES;
    case 253: return (size_t)1 << 31;
    case 254: return SIZE_MAX / 2;
    default: return 1;
    }
}

static void fill(slot *sl)
{
    for (size_t i = 0; i < sl->n; i++)
        sl->p[i] = (unsigned char)(sl->seed + i * 31u);
}

/* Takes q, a block for a request of n bytes, into sl: every byte its
 * xSize says it holds (SQLite uses the slack: sqlite3DbMallocSize) gets the
 * slot's pattern. */
static void take(state *s, slot *sl, void *q, size_t n)
{
    sqlite3_uint64 m = sqlite3_msize(q);
    if (m < n)
        FAIL("a block for %zu bytes: xSize says %llu", n, (unsigned long long)m);
    *sl = (slot){q, (size_t)m, (unsigned char)++s->seq};
    fill(sl);
}

/* Bytes [from, to) of sl hold its pattern. */
static void verify_range(const slot *sl, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++)
        if (sl->p[i] != (unsigned char)(sl->seed + i * 31u))
            FAIL("block %p (%zu bytes) changed at byte %zu", (void *)sl->p, sl->n, i);
}

static void verify(const slot *sl, size_t n) { verify_range(sl, 0, n); }

/* A NULL from SQLite's allocator for n bytes, while the failing adaptor had
 * failed `before` requests: allowed only for what SQLite refuses or after an
 * injected failure. */
static void null_ok(state *s, size_t n, unsigned long before, const char *what)
{
    if (n == 0 || (sqlite3_uint64)n >= SQLITE_REFUSES)
        return;
    if (mr_failing_failures(s->fl) == before)
        FAIL("%s(%zu) returned NULL with no failure injected", what, n);
}

static void slot_free(slot *sl)
{
    if (sl->p == NULL)
        return;
    verify(sl, sl->n);
    sqlite3_free(sl->p);
    sl->p = NULL;
}

static void slot_malloc(state *s, slot *sl, size_t n)
{
    slot_free(sl);
    unsigned long before = mr_failing_failures(s->fl);
    void *q = sqlite3_malloc64(n);
    if (q == NULL) {
        null_ok(s, n, before, "sqlite3_malloc64");
        return;
    }
    if (n == 0 || (sqlite3_uint64)n >= SQLITE_REFUSES)
        FAIL("sqlite3_malloc64(%zu) did not return NULL", n);
    take(s, sl, q, n);
}

static void slot_realloc(state *s, slot *sl, size_t n)
{
    if (n == 0) /* sqlite3_realloc64(p, 0) frees p */
        n = 1;
    if (sl->p != NULL)
        verify(sl, sl->n);
    unsigned long before = mr_failing_failures(s->fl);
    void *q = sqlite3_realloc64(sl->p, n);
    if (q == NULL) {
        null_ok(s, n, before, "sqlite3_realloc64");
        if (sl->p != NULL)
            verify(sl, sl->n); /* the old block stays, whole */
        return;
    }
    if ((sqlite3_uint64)n >= SQLITE_REFUSES)
        FAIL("sqlite3_realloc64(%zu) did not return NULL", n);
    if (sl->p != NULL) { /* the kept bytes moved with the block */
        slot moved = {q, n < sl->n ? n : sl->n, sl->seed};
        verify(&moved, moved.n);
    }
    take(s, sl, q, n);
}

/* Every block's first and last 64 bytes (a block is verified whole when it
 * is freed or resized), and the pools' invariants. */
static void check_all(state *s)
{
    for (unsigned i = 0; i < SLOTS; i++) {
        const slot *sl = &s->s[i];
        if (sl->p == NULL)
            continue;
        verify_range(sl, 0, sl->n < 64 ? sl->n : 64);
        verify_range(sl, sl->n > 64 ? sl->n - 64 : 0, sl->n);
    }
    if (!mr_pools_check(s->p))
        FAIL("mr_pools_check");
}

static void step(state *s)
{
    unsigned op = byte(s) % 10;
    slot *sl = &s->s[word(s) % SLOTS];
    switch (op) {
    case 0: case 1: case 2:
        slot_malloc(s, sl, size_arg(s));
        break;
    case 3:
        slot_free(sl);
        break;
    case 4: case 5:
        slot_realloc(s, sl, size_arg(s));
        break;
    case 6: { /* a burst of one size: enough live blocks to promote it */
        size_t n = exact_arg(s);
        unsigned k = 16 + byte(s) % 112, first = (unsigned)(sl - s->s);
        for (unsigned i = 0; i < k; i++)
            slot_malloc(s, &s->s[(first + i) % SLOTS], n);
        break;
    }
    case 7: { /* a run of frees: a class may empty */
        unsigned k = 1 + byte(s) % 200, first = (unsigned)(sl - s->s);
        for (unsigned i = 0; i < k; i++)
            slot_free(&s->s[(first + i) % SLOTS]);
        break;
    }
    case 8: /* resize within what the block may hold, or just past it */
        if (sl->p != NULL)
            slot_realloc(s, sl, (size_t)sqlite3_msize(sl->p) + (byte(s) & 1));
        break;
    default:
        check_all(s);
        break;
    }
}

/* The fault rule of the second byte: none (half the inputs), the Nth
 * request, the Nth and all after, or each at random. */
static mr_failing_options fault_rule(state *s)
{
    mr_failing_options fo = {0};
    unsigned b = byte(s);
    if (b >= 128 && b < 224) {
        fo.fail_at = 1 + word(s) % 400;
        fo.persistent = b & 1;
    } else if (b >= 224) {
        fo.probability = (double)(b - 223) / 256.0;
        fo.seed = word(s);
    }
    return fo;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static state st;
    state *s = &st;
    memset(s, 0, sizeof *s);
    s->in = data;
    s->len = size;
    unsigned how = byte(s), mode = how % 3;
    bool memstatus = (how & 4) != 0;
    mr_failing_options fo = fault_rule(s);
    if (how & 8)
        fo.upstream = mr_page_resource();
    s->fl = mr_failing_create(&fo);
    s->tr = s->fl != NULL ? mr_tracking_create(mr_failing_resource(s->fl)) : NULL;
    if (s->tr == NULL)
        FAIL("cannot create the adaptors");
    mr_pools_options po = {.upstream = mr_tracking_resource(s->tr), .largest_required_pool_block = mode == 2 ? 512 : 0, .thread_safe = mode == 1};
    s->p = mr_sqlite_pools_create(&po);
    if (s->p == NULL) { /* the header's request failed */
        if (mr_failing_failures(s->fl) == 0)
            FAIL("mr_sqlite_pools_create failed with no failure injected");
    } else {
        if (sqlite3_config(SQLITE_CONFIG_MEMSTATUS, (int)memstatus) != SQLITE_OK)
            FAIL("SQLITE_CONFIG_MEMSTATUS");
        if (mr_sqlite_install(s->p) != SQLITE_OK)
            FAIL("mr_sqlite_install");
        unsigned long before = mr_failing_failures(s->fl);
        int rc = sqlite3_initialize();
        if (rc == SQLITE_OK) {
            while (s->pos < s->len)
                step(s);
            for (unsigned i = 0; i < SLOTS; i++)
                slot_free(&s->s[i]);
            if (memstatus && sqlite3_memory_used() != 0)
                FAIL("sqlite3_memory_used() is %lld after every block was freed", (long long)sqlite3_memory_used());
        } else if (rc != SQLITE_NOMEM || mr_failing_failures(s->fl) == before) {
            FAIL("sqlite3_initialize: %d", rc);
        }
        if (sqlite3_shutdown() != SQLITE_OK)
            FAIL("sqlite3_shutdown");
        mr_stats ps;
        mr_pools_stats(s->p, &ps);
        if (ps.in_use != 0)
            FAIL("%zu bytes live in the pools after sqlite3_shutdown", ps.in_use);
        if (!mr_pools_check(s->p))
            FAIL("mr_pools_check after sqlite3_shutdown");
        mr_pools_destroy(s->p);
    }
    if (mr_tracking_outstanding(s->tr) != 0)
        FAIL("%zu blocks outstanding upstream", mr_tracking_outstanding(s->tr));
    mr_tracking_destroy(s->tr);
    mr_failing_destroy(s->fl);
    return 0;
}
