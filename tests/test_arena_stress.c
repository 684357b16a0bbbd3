/* SPDX-License-Identifier: MIT */
/* tests/test_arena_stress.c -- the arena (memres/arena.h) under a fault
 * sweep and a seeded random stress.
 *
 * The fault sweep (mrt_fault_sweep, tests/support.h) runs one scenario --
 * every kind of allocation, cleanups, a rewind, a reset and a release --
 * with the Nth upstream request failing, for every N until the scenario
 * completes, once with that single failure (create and every step are then
 * retried once, and must work) and once with every request from the Nth on
 * failing.  Every failed call sets ENOMEM and leaves the arena exactly as it
 * was, every live object keeps its contents, and the upstream ends
 * balanced.
 *
 * The stress runs seeded random operations (MEMRES_TEST_SEED replays one)
 * against a shadow model of the live objects, the marks and the cleanups,
 * with and without a buffer: every object keeps its pattern until a rewind,
 * reset or release drops it, no two live objects overlap, rewinds give back
 * exactly the bytes in use at the mark and run exactly the cleanups
 * registered after it, and the stats agree with the upstream after every
 * step.  MEMRES_TEST_SCALE (percent) shrinks it.
 *
 * Helpers: tests/arena_helpers.h.
 */
#include <errno.h>
#include <stdalign.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"
#include "arena_helpers.h"

/* ======================================================================
 * fault sweep: the Nth upstream request fails
 * ====================================================================== */

typedef struct live_obj {
    unsigned char *p;
    size_t size, tag;
} live_obj;

typedef struct sweep {
    mr_arena *a;
    mrt_upstream *u;
    live_obj objs[256];
    size_t n;
    size_t failures;
    intptr_t deferred;
    bool retry;   /* single failure mode: retry once after a failure */
    size_t floor; /* objects below this index lie before the current mark */
} sweep;

static void sweep_verify(sweep *w)
{
    for (size_t i = 0; i < w->n; i++)
        assert_int_equal(verify(w->objs[i].p, w->objs[i].size, w->objs[i].tag), SIZE_MAX);
}

static void sweep_after_failure(sweep *w)
{
    assert_int_equal(errno, ENOMEM);
    w->failures++;
    assert_true(mr_arena_check(w->a));
    sweep_verify(w);
    /* usable: an allocation that fits without upstream still works, or
     * fails cleanly */
}

static void sweep_keep(sweep *w, void *p, size_t size)
{
    assert_true(w->n < ARRAY_LEN(w->objs));
    w->objs[w->n] = (live_obj){p, size, w->n + 100};
    fill(p, size, w->n + 100);
    w->n++;
}

/* One allocation step: kind 0 alloc, 1 aligned, 2 calloc, 3 strdup,
 * 4 sprintf, 5 realloc of the newest. */
static void sweep_step(sweep *w, int kind, size_t size)
{
    if (kind == 3 || kind == 4)
        size %= 19000;
    for (int attempt = 0; attempt < 2; attempt++) {
        errno = 0;
        void *p = NULL;
        static char text[20000];
        if (text[0] == '\0') {
            memset(text, 't', sizeof text - 1);
        }
        snapshot before = snap(w->a, w->u);
        switch (kind) {
        case 0: p = mr_arena_alloc(w->a, size); break;
        case 1: p = mr_arena_alloc_aligned(w->a, size, 4096); break;
        case 2: p = mr_arena_calloc(w->a, size, 1); break;
        case 3: p = mr_arena_strndup(w->a, text, size); break;
        case 4: p = mr_arena_sprintf(w->a, "%.*s", (int)size, text); break;
        default:
            if (w->n > w->floor) {
                live_obj *o = &w->objs[w->n - 1];
                p = mr_arena_realloc(w->a, o->p, o->size, size);
                if (p != NULL) {
                    assert_int_equal(verify(p, size < o->size ? size : o->size, o->tag), SIZE_MAX);
                    w->n--; /* replaced by the new one */
                }
            } else {
                p = mr_arena_alloc(w->a, size);
            }
            break;
        }
        if (p != NULL) {
            if (kind == 1)
                assert_true(is_aligned(p, 4096));
            if (kind == 2)
                assert_true(all_zero(p, size));
            if (kind == 3 || kind == 4)
                assert_int_equal(strlen(p), size);
            sweep_keep(w, p, kind == 3 || kind == 4 ? size + 1 : size);
            return;
        }
        mr_stats now = stats(w->a);
        if (now.held != before.st.held || now.in_use != before.st.in_use)
            fprintf(stderr, "# failed step changed the arena: kind %d size %zu: in_use %zu -> %zu, held %zu -> %zu\n",
                    kind, size, before.st.in_use, now.in_use, before.st.held, now.held);
        assert_unchanged(w->a, w->u, &before);
        sweep_after_failure(w);
        if (!w->retry)
            return;
    }
    fail_msg("a retry after a single injected failure failed too");
}

static void sweep_defer(sweep *w, intptr_t id)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        errno = 0;
        if (mr_arena_defer(w->a, log_cleanup, (void *)id) == 0) {
            w->deferred++;
            return;
        }
        sweep_after_failure(w);
        if (!w->retry)
            return;
    }
    fail_msg("a retry after a single injected failure failed too");
}

static void sweep_scenario(sweep *w)
{
    static const size_t sizes[] = {10, 100, 3000, 5000, 40, 100000, 7, 300000, 64, 9000};
    for (size_t i = 0; i < 30; i++)
        sweep_step(w, (int)(i % 6), sizes[i % ARRAY_LEN(sizes)] + i);
    mr_arena_mark m = mr_arena_save(w->a);
    size_t n_at_mark = w->n;
    intptr_t deferred_at_mark = w->deferred;
    w->floor = n_at_mark;
    cleanup_n = 0;
    for (intptr_t i = 0; i < 5; i++) {
        sweep_defer(w, i);
        sweep_step(w, 0, 2000);
    }
    for (size_t i = 0; i < 20; i++)
        sweep_step(w, (int)(i % 6), sizes[(i * 3) % ARRAY_LEN(sizes)]);
    mr_arena_rewind(w->a, m);
    assert_true(mr_arena_check(w->a));
    assert_int_equal(cleanup_n, (size_t)(w->deferred - deferred_at_mark));
    w->deferred = deferred_at_mark;
    w->n = n_at_mark;
    sweep_verify(w);
    for (size_t i = 0; i < 20; i++)
        sweep_step(w, (int)(i % 6), sizes[(i * 7) % ARRAY_LEN(sizes)] * 2);
    sweep_verify(w);
    mr_arena_reset(w->a);
    w->n = 0;
    w->floor = 0;
    assert_true(mr_arena_check(w->a));
    for (size_t i = 0; i < 30; i++)
        sweep_step(w, (int)(i % 6), sizes[i % ARRAY_LEN(sizes)]);
    sweep_verify(w);
    mr_arena_release(w->a);
    w->n = 0;
    assert_true(mr_arena_check(w->a));
    for (size_t i = 0; i < 10; i++)
        sweep_step(w, (int)(i % 6), sizes[i % ARRAY_LEN(sizes)]);
    sweep_verify(w);
}

/* The fault-sweep scenario (see mrt_fault_sweep): with a single failure
 * the arena's create and every step are retried once, and must then work. */
static bool sweep_run(mrt_upstream *u, void *ctx)
{
    (void)ctx;
    bool retry = !u->fail_all_after;
    mr_arena_options o = {0};
    o.upstream = &u->base;
    o.block_size = 4096;
    o.max_block_size = 32768;
    errno = 0;
    mr_arena *a = mr_arena_create(&o);
    bool create_failed = a == NULL;
    if (create_failed) {
        assert_int_equal(errno, ENOMEM);
        mrt_assert_balanced(u);
        if (!retry)
            return true;
        a = mr_arena_create(&o);
        assert_non_null(a);
    }
    static sweep w;
    memset(&w, 0, sizeof w);
    w.a = a;
    w.u = u;
    w.retry = retry;
    sweep_scenario(&w);
    cleanup_n = 0;
    mr_arena_destroy(a);
    return create_failed || w.failures > 0;
}

static void test_fault_sweep_nth(void **state)
{
    (void)state;
    mrt_fault_sweep("arena", sweep_run, NULL, MRT_FAIL_ONCE, 10); /* the scenario makes many upstream calls */
}

static void test_fault_sweep_all_after(void **state)
{
    (void)state;
    mrt_fault_sweep("arena", sweep_run, NULL, MRT_FAIL_FROM, 10);
}

/* ======================================================================
 * seeded random stress against a shadow model
 * ====================================================================== */

typedef struct model_mark {
    mr_arena_mark m;
    size_t nobjs, ncleanups, in_use;
} model_mark;

typedef struct model {
    live_obj objs[4096];
    size_t n;
    model_mark marks[16];
    size_t nmarks;
    intptr_t cleanups[4096]; /* registered, in order */
    size_t ncleanups;
    size_t tag;
} model;

static void model_expect_cleanups(model *md, size_t keep)
{
    /* cleanups from index keep on must have run, last first */
    assert_int_equal(cleanup_n, md->ncleanups - keep);
    for (size_t i = 0; i < cleanup_n; i++)
        assert_int_equal(cleanup_log[i], md->cleanups[md->ncleanups - 1 - i]);
    cleanup_n = 0;
    md->ncleanups = keep;
}

static void model_verify(const model *md)
{
    for (size_t i = 0; i < md->n; i++)
        assert_int_equal(verify(md->objs[i].p, md->objs[i].size, md->objs[i].tag), SIZE_MAX);
}

static int cmp_obj(const void *x, const void *y)
{
    uintptr_t a = (uintptr_t)((const live_obj *)x)->p, b = (uintptr_t)((const live_obj *)y)->p;
    return a < b ? -1 : a > b;
}

static void model_disjoint(const model *md)
{
    static live_obj sorted[4096];
    memcpy(sorted, md->objs, md->n * sizeof sorted[0]);
    qsort(sorted, md->n, sizeof sorted[0], cmp_obj);
    for (size_t i = 1; i < md->n; i++)
        if (sorted[i - 1].size > 0)
            assert_true((uintptr_t)sorted[i - 1].p + sorted[i - 1].size <= (uintptr_t)sorted[i].p);
}

static void stress(mrt_upstream *u, uint64_t seed, bool with_buffer, size_t ops)
{
    uint64_t rng = seed;
    static model md;
    memset(&md, 0, sizeof md);
    static alignas(max_align_t) unsigned char buf[16384];
    mr_arena_options o = {0};
    o.upstream = &u->base;
    o.block_size = 1024;
    o.max_block_size = 16384;
    if (with_buffer) {
        o.buffer = buf;
        o.buffer_size = sizeof buf;
    }
    mr_arena *a = mr_arena_create(&o);
    assert_non_null(a);
    cleanup_n = 0;
    for (size_t step = 0; step < ops; step++) {
        uint64_t r = mrt_rand(&rng);
        unsigned op = (unsigned)(r % 100);
        r >>= 8;
        if (md.n >= ARRAY_LEN(md.objs) - 2 || md.ncleanups >= ARRAY_LEN(md.cleanups) - 2)
            op = 99; /* reset */
        if (op < 40) {
            size_t size = (r % 20 == 0)    ? (size_t)(r >> 8) % 6000
                          : (r % 500 == 1) ? 20000 + (size_t)(r >> 8) % 50000
                                           : (size_t)(r >> 8) % 200;
            unsigned char *p = mr_arena_alloc(a, size);
            assert_non_null(p);
            assert_true(is_aligned(p, A));
            fill(p, size, ++md.tag);
            md.objs[md.n++] = (live_obj){p, size, md.tag};
        } else if (op < 50) {
            size_t align = (size_t)1 << (r % 14);
            size_t size = (size_t)(r >> 8) % 300;
            unsigned char *p = mr_arena_alloc_aligned(a, size, align);
            assert_non_null(p);
            assert_true(is_aligned(p, align));
            fill(p, size, ++md.tag);
            md.objs[md.n++] = (live_obj){p, size, md.tag};
        } else if (op < 55) {
            size_t cnt = (size_t)r % 40, sz = (size_t)(r >> 8) % 20;
            unsigned char *p = mr_arena_calloc(a, cnt, sz);
            assert_non_null(p);
            assert_true(all_zero(p, cnt * sz));
            fill(p, cnt * sz, ++md.tag);
            md.objs[md.n++] = (live_obj){p, cnt * sz, md.tag};
        } else if (op < 63 && md.n > (md.nmarks ? md.marks[md.nmarks - 1].nobjs : 0)) {
            /* only objects after the newest mark: growing an older one in
             * place past a mark and rewinding would cut it */
            live_obj *ob = &md.objs[md.n - 1];
            size_t ns = (size_t)r % 3000;
            unsigned char *p = mr_arena_realloc(a, ob->p, ob->size, ns);
            assert_non_null(p);
            size_t keep = ns < ob->size ? ns : ob->size;
            assert_int_equal(verify(p, keep, ob->tag), SIZE_MAX);
            if (p != ob->p)
                assert_true(is_aligned(p, A));
            fill(p, ns, ++md.tag);
            *ob = (live_obj){p, ns, md.tag};
        } else if (op < 68) {
            size_t len = (size_t)r % 100;
            char *s = mr_arena_sprintf(a, "%zu:%.*s", len, (int)len,
                                       "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz"
                                       "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz");
            assert_non_null(s);
            char want[160];
            snprintf(want, sizeof want, "%zu:%.*s", len, (int)len,
                     "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz"
                     "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz");
            assert_string_equal(s, want);
            size_t sz = strlen(s) + 1;
            fill(s, sz, ++md.tag);
            md.objs[md.n++] = (live_obj){(unsigned char *)s, sz, md.tag};
        } else if (op < 76) {
            if (md.nmarks < ARRAY_LEN(md.marks))
                md.marks[md.nmarks++] = (model_mark){mr_arena_save(a), md.n, md.ncleanups, stats(a).in_use};
        } else if (op < 86) {
            if (md.nmarks > 0) {
                size_t k = (size_t)r % md.nmarks;
                mr_arena_rewind(a, md.marks[k].m);
                md.nmarks = k + 1;
                md.n = md.marks[k].nobjs;
                model_expect_cleanups(&md, md.marks[k].ncleanups);
                assert_int_equal(stats(a).in_use, md.marks[k].in_use);
                model_verify(&md);
            }
        } else if (op < 92) {
            intptr_t id = (intptr_t)step;
            assert_int_equal(mr_arena_defer(a, log_cleanup, (void *)id), 0);
            md.cleanups[md.ncleanups++] = id;
        } else if (op < 99 && op != 98) {
            /* a resource-view allocate + deallocate of the newest */
            mr_resource *rv = mr_arena_resource(a);
            size_t sz = (size_t)r % 500;
            void *p = mr_allocate(rv, sz, 32);
            assert_non_null(p);
            assert_true(is_aligned(p, 32));
            mr_deallocate(rv, p, sz, 32);
        } else {
            if ((r & 7) == 0) {
                mr_arena_release(a);
                if (!with_buffer)
                    assert_int_equal(mrt_upstream_live(u), 1);
            } else {
                size_t calls = u->calls;
                mr_arena_reset(a);
                assert_int_equal(u->calls, calls);
            }
            md.n = 0;
            md.nmarks = 0;
            model_expect_cleanups(&md, 0);
            assert_int_equal(stats(a).in_use, 0);
        }
        assert_true(mr_arena_check(a));
        assert_agrees(a, u);
        if (step % 64 == 0) {
            model_verify(&md);
            model_disjoint(&md);
        }
    }
    model_verify(&md);
    model_disjoint(&md);
    mr_arena_destroy(a);
    model_expect_cleanups(&md, 0);
}

static void test_stress(void **state)
{
    mrt_upstream *u = *state;
    uint64_t seed = mrt_seed(20240601);
    stress(u, seed, false, mrt_scaled(20000));
    mrt_upstream_restart(u);
    stress(u, seed + 1, true, mrt_scaled(20000));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fault_sweep_nth),
        cmocka_unit_test(test_fault_sweep_all_after),
        mrt_unit_test(test_stress),
    };
    return cmocka_run_group_tests_name("arena stress", tests, NULL, NULL);
}
