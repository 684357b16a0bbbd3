/* SPDX-License-Identifier: MIT */
/* tests/support.c -- the checking upstream, its fixtures and the fault sweep
 * (see support.h). */
#include "support.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if MR_SANITIZED
/* Tests ask for impossible sizes on purpose, and some reach malloc through
 * mrt_upstream or the malloc resource: ASan must return NULL for them, as
 * libc does, instead of reporting them (CTest sets the same option; this
 * covers running a test binary by hand). */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }
#endif

/* tab (*cap elements of elem bytes) grown to hold n + 1 elements, or NULL
 * (tab untouched) when out of memory. */
static void *grow(void *tab, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return tab;
    size_t ncap = *cap ? *cap * 2 : 64;
    void *t = realloc(tab, ncap * elem);
    if (t != NULL)
        *cap = ncap;
    return t;
}

static void log_request(mrt_upstream *u, mrt_op op, size_t size, size_t align, void *p, bool ok)
{
    if (!u->log_requests)
        return;
    mrt_request *log = grow(u->log, &u->log_cap, u->nlog, sizeof *log);
    if (log == NULL)
        fail_msg("mrt_upstream: out of memory for the request log");
    u->log = log;
    u->log[u->nlog++] = (mrt_request){op, size, align, p, ok};
}

static void *allocate_or_fail(mrt_upstream *u, size_t size, size_t align)
{
    u->calls++;
    if (u->fail_at != 0 && (u->fail_all_after ? u->calls >= u->fail_at : u->calls == u->fail_at)) {
        u->injected++;
        u->failures++;
        errno = ENOMEM;
        return NULL;
    }
    if (u->limit != 0 && (size > u->limit || u->bytes > u->limit - size)) {
        u->failures++;
        errno = ENOMEM;
        return NULL;
    }
    void *p = mr_allocate(mr_malloc_resource(), size, align);
    if (p == NULL) {
        u->failures++;
        return NULL;
    }
    mrt_block *live = grow(u->live, &u->cap, u->nlive, sizeof *live);
    if (live == NULL) {
        mr_deallocate(mr_malloc_resource(), p, size, align);
        u->failures++;
        errno = ENOMEM;
        return NULL;
    }
    u->live = live;
    u->live[u->nlive++] = (mrt_block){p, size, align};
    u->allocations++;
    u->bytes += size;
    if (u->bytes > u->peak_bytes)
        u->peak_bytes = u->bytes;
    /* dirty the memory: allocators must not assume zeroed upstream memory */
    memset(p, 0xA5, size);
    return p;
}

static void *up_allocate(mr_resource *self, size_t size, size_t align)
{
    mrt_upstream *u = (mrt_upstream *)self;
    void *p = allocate_or_fail(u, size, align);
    log_request(u, MRT_ALLOCATE, size, align, p, p != NULL);
    return p;
}

static void up_deallocate(mr_resource *self, void *p, size_t size, size_t align)
{
    mrt_upstream *u = (mrt_upstream *)self;
    u->deallocations++;
    for (size_t i = u->nlive; i-- > 0;) {
        if (u->live[i].p == p) {
            bool ok = u->live[i].size == size && u->live[i].align == align;
            if (!ok) {
                fprintf(stderr, "mrt_upstream: deallocate(%p, %zu, %zu) but it was allocated with (%zu, %zu)\n",
                        p, size, align, u->live[i].size, u->live[i].align);
                u->bad_deallocations++;
            }
            log_request(u, MRT_DEALLOCATE, size, align, p, ok);
            u->bytes -= u->live[i].size;
            /* a block read after it went back reads this, not what it held
             * (give_spares once read a freed block's size) */
            memset(p, MRT_FREED_BYTE, u->live[i].size);
            mr_deallocate(mr_malloc_resource(), p, u->live[i].size, u->live[i].align);
            u->live[i] = u->live[--u->nlive];
            return;
        }
    }
    fprintf(stderr, "mrt_upstream: deallocate(%p, %zu, %zu) of a pointer it never gave\n", p, size, align);
    u->bad_deallocations++;
    log_request(u, MRT_DEALLOCATE, size, align, p, false);
}

static const struct mr_resource_ops up_ops = {up_allocate, up_deallocate, NULL};

void mrt_upstream_init(mrt_upstream *u)
{
    memset(u, 0, sizeof *u);
    u->base.ops = &up_ops;
}

void mrt_upstream_fini(mrt_upstream *u)
{
    free(u->live);
    free(u->log);
    u->live = NULL;
    u->log = NULL;
    u->nlive = u->cap = u->nlog = u->log_cap = 0;
}

size_t mrt_upstream_live(const mrt_upstream *u) { return u->nlive; }

bool mrt_upstream_owns(const mrt_upstream *u, const void *p)
{
    uintptr_t a = (uintptr_t)p;
    for (size_t i = 0; i < u->nlive; i++) {
        uintptr_t b = (uintptr_t)u->live[i].p;
        if (a >= b && a < b + u->live[i].size)
            return true;
    }
    return false;
}

const mrt_request *mrt_upstream_request(const mrt_upstream *u, size_t i)
{
    size_t first = u->calls; /* the index of the first logged allocate */
    for (size_t k = 0; k < u->nlog; k++)
        if (u->log[k].op == MRT_ALLOCATE)
            first--;
    for (size_t k = 0, call = first; k < u->nlog; k++) {
        if (u->log[k].op != MRT_ALLOCATE)
            continue;
        if (call == i)
            return &u->log[k];
        call++;
    }
    fail_msg("mrt_upstream: allocate request %zu was not logged (calls %zu, log %zu entries)", i, u->calls, u->nlog);
    return NULL;
}

/* ---- fixtures ---- */

void mrt_record_violation(const char *what, const void *ptr, void *ctx)
{
    mrt_violations *v = ctx;
    v->count++;
    v->last = what;
    v->ptr = ptr;
}

int mrt_violation_setup(void **state)
{
    static mrt_violations v;
    memset(&v, 0, sizeof v);
    mr_set_violation_handler(mrt_record_violation, &v);
    *state = &v;
    return 0;
}

int mrt_violation_teardown(void **state)
{
    (void)state;
    mr_set_violation_handler(NULL, NULL);
    return 0;
}

int mrt_upstream_setup(void **state)
{
    mrt_upstream *u = malloc(sizeof *u);
    if (u == NULL)
        return -1;
    mrt_upstream_init(u);
    *state = u;
    return 0;
}

int mrt_upstream_teardown(void **state)
{
    mrt_upstream *u = *state;
    *state = NULL;
    bool balanced = u->bad_deallocations == 0 && u->nlive == 0 && u->bytes == 0 &&
                    u->allocations == u->deallocations;
    if (!balanced)
        print_error("mrt_upstream not balanced at the end of the test: %zu live blocks, %zu bytes, "
                    "%zu allocations, %zu deallocations, %zu bad deallocations\n",
                    u->nlive, u->bytes, u->allocations, u->deallocations, u->bad_deallocations);
    mrt_upstream_fini(u);
    free(u);
    return balanced ? 0 : -1;
}

/* ---- the fault sweep ---- */

size_t mrt_fault_sweep(const char *name, mrt_scenario *scenario, void *ctx, mrt_fail_mode mode, size_t min_points)
{
    enum { SWEEP_MAX = 100000 }; /* a scenario that never completes is a bug */
    size_t n;
    for (n = 1; n < SWEEP_MAX; n++) {
        mrt_upstream u;
        mrt_upstream_init(&u);
        u.fail_at = n;
        u.fail_all_after = mode == MRT_FAIL_FROM;
        bool saw_failure = scenario(&u, ctx);
        size_t injected = u.injected;
        if (saw_failure != (injected != 0))
            fprintf(stderr, "# fault sweep %s, N = %zu: %zu injected failures, scenario saw %s\n", name, n,
                    injected, saw_failure ? "a failure" : "none");
        mrt_assert_balanced(&u);
        mrt_upstream_fini(&u);
        assert_int_equal(saw_failure, injected != 0);
        if (injected == 0)
            break;
    }
    assert_true(n < SWEEP_MAX);
    size_t points = n - 1;
    printf("# fault sweep %s (%s): %zu failure points, completed at N = %zu\n", name,
           mode == MRT_FAIL_FROM ? "every request from the Nth fails" : "the Nth request fails", points, n);
    assert_true(points >= 1);
    assert_true(points >= min_points);
    return points;
}

uint64_t mrt_seed(uint64_t def)
{
    const char *s = getenv("MEMRES_TEST_SEED");
    uint64_t seed = (s && *s) ? strtoull(s, NULL, 0) : def;
    printf("# seed %" PRIu64 " (set MEMRES_TEST_SEED to replay)\n", seed);
    return seed;
}

size_t mrt_scaled(size_t n)
{
    const char *e = getenv("MEMRES_TEST_SCALE");
    unsigned long pct = e != NULL ? strtoul(e, NULL, 10) : 100;
    if (pct == 0 || pct > 100)
        pct = 100;
    size_t r = n / 100 * pct + n % 100 * pct / 100;
    return r != 0 ? r : 1;
}
