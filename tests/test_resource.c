/* SPDX-License-Identifier: MIT */
/* tests/test_resource.c -- the resource interface (memres/resource.h).
 *
 * Every clause of the header's contract: alignment validation before
 * dispatch (the resource is never called for a bad alignment), the malloc
 * resource for every power-of-two alignment up to 1 MiB (above the page size)
 * with writes across the whole block, size 0, impossible sizes, the null
 * resource, the default resource (get/set/restore, atomic from threads),
 * is_equal, huge requests failing with ENOMEM through every allocator (in
 * sanitizer builds too), and the default violation handler, which aborts.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support.h"

static void assert_aligned(const void *p, size_t align)
{
    assert_int_equal((uintptr_t)p & (align - 1), 0);
}

/* A resource that says it is equal to another of its kind with the same
 * key, to test mr_is_equal's dispatch. */
typedef struct keyed {
    mr_resource base;
    int key;
} keyed;

static void *keyed_allocate(mr_resource *self, size_t size, size_t align)
{
    (void)self;
    return mr_allocate(mr_malloc_resource(), size, align);
}

static void keyed_deallocate(mr_resource *self, void *p, size_t size, size_t align)
{
    (void)self;
    mr_deallocate(mr_malloc_resource(), p, size, align);
}

static bool keyed_is_equal(const mr_resource *self, const mr_resource *other)
{
    return ((const keyed *)self)->key == ((const keyed *)other)->key;
}

static const struct mr_resource_ops keyed_ops = {keyed_allocate, keyed_deallocate, keyed_is_equal};
/* Same behaviour, different ops table: a different kind of resource. */
static const struct mr_resource_ops keyed_ops2 = {keyed_allocate, keyed_deallocate, keyed_is_equal};

static const size_t bad_aligns[] = {
    0, 3, 5, 6, 7, 12, 24, 48, 100, 4095, 4097, 12288, ((size_t)1 << 20) + 1,
    SIZE_MAX, SIZE_MAX - 1, ((size_t)1 << 63) + 1, ((size_t)1 << 63) | ((size_t)1 << 62),
};

/* ---- alignment validation ---- */

static void test_bad_alignment_never_reaches_resource(void **state)
{
    mrt_upstream *u = *state;
    for (size_t i = 0; i < sizeof bad_aligns / sizeof bad_aligns[0]; i++) {
        for (size_t size = 0; size <= 64; size += 16) {
            mrt_assert_fails(mr_allocate(&u->base, size, bad_aligns[i]), EINVAL);
        }
    }
    assert_int_equal(u->calls, 0);
    assert_int_equal(u->allocations, 0);
    assert_int_equal(u->failures, 0);
}

static void test_bad_alignment_builtin_resources(void **state)
{
    (void)state;
    mr_resource *rs[] = {mr_malloc_resource(), mr_null_resource(), mr_get_default_resource()};
    for (size_t r = 0; r < 3; r++) {
        for (size_t i = 0; i < sizeof bad_aligns / sizeof bad_aligns[0]; i++) {
            mrt_assert_fails(mr_allocate(rs[r], 16, bad_aligns[i]), EINVAL);
        }
    }
}

/* The resource gets exactly what the caller asked for. */
static void assert_request(const mrt_request *r, mrt_op op, size_t size, size_t align, const void *p)
{
    assert_int_equal(r->op, op);
    assert_int_equal(r->size, size);
    assert_int_equal(r->align, align);
    assert_ptr_equal(r->p, p);
    assert_true(r->ok);
}

static void test_args_passed_through(void **state)
{
    mrt_upstream *u = *state;
    u->log_requests = true;
    void *p = mr_allocate(&u->base, 100, 64);
    assert_non_null(p);
    assert_aligned(p, 64);
    assert_int_equal(u->calls, 1);
    assert_request(&u->log[0], MRT_ALLOCATE, 100, 64, p);
    mr_deallocate(&u->base, p, 100, 64);
    assert_int_equal(u->deallocations, 1);
    assert_request(&u->log[1], MRT_DEALLOCATE, 100, 64, p);
    /* size 0 is passed as is: the resource decides how to give a pointer */
    p = mr_allocate(&u->base, 0, 1);
    assert_non_null(p);
    assert_request(&u->log[2], MRT_ALLOCATE, 0, 1, p);
    mr_deallocate(&u->base, p, 0, 1);
    assert_int_equal(u->nlog, 4);
}

static void test_deallocate_null_is_noop(void **state)
{
    mrt_upstream *u = *state;
    mr_deallocate(&u->base, NULL, 16, 16);
    mr_deallocate(&u->base, NULL, 0, 1);
    assert_int_equal(u->deallocations, 0);
    mr_deallocate(mr_malloc_resource(), NULL, 16, 16);
    mr_deallocate(mr_null_resource(), NULL, 16, 16);
}

/* ---- malloc resource ---- */

static void test_malloc_every_alignment(void **state)
{
    (void)state;
    mr_resource *m = mr_malloc_resource();
    for (size_t align = 1; align <= ((size_t)1 << 20); align <<= 1) {
        const size_t sizes[] = {1, align - 1, align, align + 1, 3 * align + 7, 100};
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            size_t size = sizes[i] ? sizes[i] : 1;
            unsigned char *p = mr_allocate(m, size, align);
            assert_non_null(p);
            assert_aligned(p, align);
            memset(p, 0x5A, size); /* the whole block is ours (ASan checks the bounds) */
            assert_int_equal(p[0], 0x5A);
            assert_int_equal(p[size - 1], 0x5A);
            mr_deallocate(m, p, size, align);
        }
    }
}

static void test_malloc_many_live_distinct(void **state)
{
    (void)state;
    mr_resource *m = mr_malloc_resource();
    enum { N = 64 };
    unsigned char *ps[N];
    size_t sz[N], al[N];
    for (size_t i = 0; i < N; i++) {
        al[i] = (size_t)1 << (i % 14);
        sz[i] = 1 + (i * 37) % 300;
        ps[i] = mr_allocate(m, sz[i], al[i]);
        assert_non_null(ps[i]);
        assert_aligned(ps[i], al[i]);
        memset(ps[i], (int)i, sz[i]);
    }
    for (size_t i = 0; i < N; i++) {
        for (size_t j = 0; j < sz[i]; j++)
            assert_int_equal(ps[i][j], i);
        mr_deallocate(m, ps[i], sz[i], al[i]);
    }
}

static void test_malloc_size_zero(void **state)
{
    (void)state;
    mr_resource *m = mr_malloc_resource();
    const size_t aligns[] = {1, 8, 16, 32, 4096, (size_t)1 << 16, (size_t)1 << 20};
    for (size_t i = 0; i < sizeof aligns / sizeof aligns[0]; i++) {
        void *p = mr_allocate(m, 0, aligns[i]);
        void *q = mr_allocate(m, 0, aligns[i]);
        assert_non_null(p);
        assert_non_null(q);
        assert_aligned(p, aligns[i]);
        assert_aligned(q, aligns[i]);
        mr_deallocate(m, q, 0, aligns[i]);
        mr_deallocate(m, p, 0, aligns[i]);
    }
}

static void test_malloc_impossible_sizes(void **state)
{
    (void)state;
    mr_resource *m = mr_malloc_resource();
    const size_t sizes[] = {
        SIZE_MAX, SIZE_MAX - 1, SIZE_MAX - 15, SIZE_MAX - 4095, SIZE_MAX / 2 + 1,
        (size_t)PTRDIFF_MAX + 1, (size_t)PTRDIFF_MAX, (size_t)PTRDIFF_MAX - 15,
    };
    const size_t aligns[] = {1, 16, 64, 4096, (size_t)1 << 20};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        for (size_t j = 0; j < sizeof aligns / sizeof aligns[0]; j++) {
            mrt_assert_fails(mr_allocate(m, sizes[i], aligns[j]), ENOMEM);
        }
    }
    /* Alignments that cannot be met (valid powers of two, so not EINVAL):
     * the resource refuses them itself, so this holds under ASan too. */
    const size_t huge_aligns[] = {(size_t)1 << 63, (size_t)1 << 62, (size_t)1 << 41};
    for (size_t j = 0; j < sizeof huge_aligns / sizeof huge_aligns[0]; j++) {
        mrt_assert_fails(mr_allocate(m, 16, huge_aligns[j]), ENOMEM);
    }
}

/* An outside report: huge requests aborted in sanitizer builds, whose
 * malloc aborts on them instead of returning NULL.  The malloc resource
 * refuses them itself, so a request of a TiB and more fails with ENOMEM in
 * every build, through it and through an object pool, a size-class pool
 * and an arena stacked on a pool. */
static void test_huge_requests_fail_with_enomem(void **state)
{
    (void)state;
    const size_t tib = (size_t)1 << 40;
    errno = 0;
    assert_null(mr_allocate(mr_malloc_resource(), tib, 16));
    assert_int_equal(errno, ENOMEM);
    mr_objpool *op = mr_objpool_create(tib, 16, NULL);
    if (op != NULL) {
        errno = 0;
        assert_null(mr_objpool_alloc(op));
        assert_int_equal(errno, ENOMEM);
        mr_objpool_destroy(op);
    }
    mr_pools *p = mr_pools_create(NULL);
    assert_non_null(p);
    errno = 0;
    assert_null(mr_pools_alloc(p, 4 * tib, 16));
    assert_int_equal(errno, ENOMEM);
    mr_arena_options o = {.upstream = mr_pools_resource(p)};
    mr_arena *a = mr_arena_create(&o);
    assert_non_null(a);
    errno = 0;
    assert_null(mr_arena_alloc(a, 4 * tib));
    assert_int_equal(errno, ENOMEM);
    assert_true(mr_arena_check(a));
    mr_arena_destroy(a);
    assert_true(mr_pools_check(p));
    mr_pools_destroy(p);
}

static void test_malloc_is_default_and_stable(void **state)
{
    (void)state;
    assert_non_null(mr_malloc_resource());
    assert_ptr_equal(mr_malloc_resource(), mr_malloc_resource());
    assert_ptr_equal(mr_get_default_resource(), mr_malloc_resource());
}

/* ---- null resource ---- */

static void test_null_resource_always_fails(void **state)
{
    (void)state;
    mr_resource *n = mr_null_resource();
    assert_non_null(n);
    assert_ptr_equal(n, mr_null_resource());
    const size_t sizes[] = {0, 1, 16, 4096, (size_t)1 << 20, SIZE_MAX};
    const size_t aligns[] = {1, 16, 4096};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        for (size_t j = 0; j < 3; j++) {
            mrt_assert_fails(mr_allocate(n, sizes[i], aligns[j]), ENOMEM);
        }
    }
    mr_deallocate(n, NULL, 0, 1); /* no-op */
}

/* ---- default resource ---- */

static void test_default_get_set_restore(void **state)
{
    mrt_upstream *u = *state;
    mrt_upstream v;
    mrt_upstream_init(&v);
    mr_resource *m = mr_malloc_resource();

    assert_ptr_equal(mr_get_default_resource(), m);
    assert_ptr_equal(mr_set_default_resource(&u->base), m);
    assert_ptr_equal(mr_get_default_resource(), &u->base);

    /* allocation through the default goes to the resource that was set */
    void *p = mr_allocate(mr_get_default_resource(), 40, 8);
    assert_non_null(p);
    assert_int_equal(u->allocations, 1);
    mr_deallocate(mr_get_default_resource(), p, 40, 8);
    assert_int_equal(u->deallocations, 1);

    assert_ptr_equal(mr_set_default_resource(&v.base), &u->base);
    assert_ptr_equal(mr_get_default_resource(), &v.base);
    /* NULL restores malloc and returns the previous one */
    assert_ptr_equal(mr_set_default_resource(NULL), &v.base);
    assert_ptr_equal(mr_get_default_resource(), m);
    /* previous is never NULL: after a restore it is the malloc resource */
    assert_ptr_equal(mr_set_default_resource(NULL), m);
    assert_ptr_equal(mr_get_default_resource(), m);
    /* setting malloc explicitly is the same as restoring */
    assert_ptr_equal(mr_set_default_resource(m), m);
    assert_ptr_equal(mr_set_default_resource(NULL), m);
    assert_ptr_equal(mr_get_default_resource(), m);

    /* the null resource as default: every default allocation fails */
    assert_ptr_equal(mr_set_default_resource(mr_null_resource()), m);
    mrt_assert_fails(mr_allocate(mr_get_default_resource(), 1, 1), ENOMEM);
    assert_ptr_equal(mr_set_default_resource(NULL), mr_null_resource());

    assert_int_equal(v.calls, 0);
    mrt_assert_balanced(&v);
    mrt_upstream_fini(&v);
}

/* Readers see either resource, never anything else; set returns the value
 * it replaced, so the exchanges form one chain. */
static mr_resource *thread_targets[2];

static void *default_reader(void *arg)
{
    size_t *bad = arg;
    for (int i = 0; i < 20000; i++) {
        mr_resource *r = mr_get_default_resource();
        if (r != thread_targets[0] && r != thread_targets[1])
            ++*bad;
    }
    return NULL;
}

static void *default_writer(void *arg)
{
    size_t *bad = arg;
    for (int i = 0; i < 20000; i++) {
        mr_resource *prev = mr_set_default_resource(thread_targets[i & 1]);
        if (prev != thread_targets[0] && prev != thread_targets[1])
            ++*bad;
    }
    return NULL;
}

static void test_default_atomic_from_threads(void **state)
{
    (void)state;
    keyed k = {{&keyed_ops}, 7};
    thread_targets[0] = mr_malloc_resource();
    thread_targets[1] = &k.base;
    size_t bad[4] = {0, 0, 0, 0};
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, (i & 1) ? default_writer : default_reader, &bad[i]), 0);
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    for (int i = 0; i < 4; i++)
        assert_int_equal(bad[i], 0);
    mr_set_default_resource(NULL);
    assert_ptr_equal(mr_get_default_resource(), mr_malloc_resource());
}

/* ---- is_equal ---- */

static void test_is_equal(void **state)
{
    mrt_upstream *u = *state;
    mr_resource *m = mr_malloc_resource(), *n = mr_null_resource();
    mrt_upstream v;
    mrt_upstream_init(&v);

    /* identity */
    assert_true(mr_is_equal(m, m));
    assert_true(mr_is_equal(n, n));
    assert_true(mr_is_equal(&u->base, &u->base));
    /* different kinds */
    assert_false(mr_is_equal(m, n));
    assert_false(mr_is_equal(n, m));
    assert_false(mr_is_equal(m, &u->base));
    assert_false(mr_is_equal(&u->base, m));
    /* same kind, is_equal NULL: identity only */
    assert_false(mr_is_equal(&u->base, &v.base));
    assert_false(mr_is_equal(&v.base, &u->base));
    /* NULL operands */
    assert_false(mr_is_equal(m, NULL));
    assert_false(mr_is_equal(NULL, m));

    /* same kind with is_equal: it decides, both ways */
    keyed a = {{&keyed_ops}, 1};
    keyed b = {{&keyed_ops}, 1};
    keyed c = {{&keyed_ops}, 2};
    keyed d = {{&keyed_ops2}, 1};
    assert_true(mr_is_equal(&a.base, &b.base));
    assert_true(mr_is_equal(&b.base, &a.base));
    assert_false(mr_is_equal(&a.base, &c.base));
    assert_false(mr_is_equal(&c.base, &a.base));
    /* another kind is never asked, even when its is_equal would say yes */
    assert_false(mr_is_equal(&a.base, &d.base));
    assert_false(mr_is_equal(&d.base, &a.base));
    assert_true(mr_is_equal(&d.base, &d.base));

    mrt_upstream_fini(&v);
}

/* ---- the violation handler ---- */

/* With no handler installed (the default), a reported misuse aborts the
 * program: a child commits one. */
static void test_default_handler_aborts(void **state)
{
    (void)state;
    if (MR_DEBUG < 1)
        skip(); /* release builds report nothing */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        mr_set_violation_handler(NULL, NULL);
        if (freopen("/dev/null", "w", stderr) == NULL)
            _exit(3);
        mr_arena *a = mr_arena_create(NULL), *b = mr_arena_create(NULL);
        mr_arena_rewind(a, mr_arena_save(b)); /* foreign: reported in every build */
        _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGABRT);
}

/* ---- the checking upstream itself (every other test trusts it) ---- */

static void test_support_upstream(void **state)
{
    mrt_upstream *u = *state;
    u->fail_at = 2;
    void *p = mr_allocate(&u->base, 100, 64);
    assert_non_null(p);
    assert_aligned(p, 64);
    assert_true(mrt_upstream_owns(u, (char *)p + 99));
    assert_false(mrt_upstream_owns(u, (char *)p + 100));
    mrt_assert_fails(mr_allocate(&u->base, 100, 64), ENOMEM); /* the 2nd call fails */
    void *q = mr_allocate(&u->base, 10, 16);
    assert_non_null(q);
    assert_int_equal(u->calls, 3);
    assert_int_equal(u->allocations, 2);
    assert_int_equal(u->failures, 1);
    assert_int_equal(u->bytes, 110);
    assert_int_equal(u->peak_bytes, 110);
    mr_deallocate(&u->base, p, 100, 64);
    mr_deallocate(&u->base, q, 10, 16);
    mrt_assert_balanced(u);

    u->fail_at = 0;
    u->limit = 100;
    mrt_assert_fails(mr_allocate(&u->base, 101, 1), ENOMEM);
    p = mr_allocate(&u->base, 100, 1);
    assert_non_null(p);
    mr_deallocate(&u->base, p, 100, 1);
}

static void test_support_request_log(void **state)
{
    mrt_upstream *u = *state;
    void *before = mr_allocate(&u->base, 8, 8); /* not logged */
    u->log_requests = true;
    u->fail_at = 3;
    void *p = mr_allocate(&u->base, 100, 64);
    errno = 0;
    assert_null(mr_allocate(&u->base, 7, 4096)); /* the 3rd call fails */
    mr_deallocate(&u->base, p, 100, 64);
    assert_int_equal(u->nlog, 3);
    assert_request(&u->log[0], MRT_ALLOCATE, 100, 64, p);
    assert_int_equal(u->log[1].op, MRT_ALLOCATE);
    assert_int_equal(u->log[1].size, 7);
    assert_int_equal(u->log[1].align, 4096);
    assert_null(u->log[1].p);
    assert_false(u->log[1].ok);
    assert_request(&u->log[2], MRT_DEALLOCATE, 100, 64, p);
    /* allocate requests by call index, as u->calls counts them */
    assert_ptr_equal(mrt_upstream_request(u, 1), &u->log[0]);
    assert_ptr_equal(mrt_upstream_request(u, 2), &u->log[1]);
    assert_int_equal(u->injected, 1);
    assert_int_equal(u->failures, 1);
    mr_deallocate(&u->base, before, 8, 8);

    /* a deallocate that names no live block is logged as not ok */
    mrt_upstream v;
    mrt_upstream_init(&v);
    v.log_requests = true;
    int x;
    fprintf(stderr, "# the next mrt_upstream complaint is expected:\n");
    mr_deallocate(&v.base, &x, sizeof x, alignof(int));
    assert_int_equal(v.bad_deallocations, 1);
    assert_int_equal(v.nlog, 1);
    assert_false(v.log[0].ok);
    assert_ptr_equal(v.log[0].p, &x);
    mrt_upstream_fini(&v);
}

/* Five allocate requests, each retried once after a failure. */
static bool five_requests(mrt_upstream *u, void *ctx)
{
    size_t *runs = ctx;
    ++*runs;
    void *p[5] = {0};
    bool failed = false;
    for (size_t i = 0; i < 5; i++) {
        errno = 0;
        p[i] = mr_allocate(&u->base, 16 * (i + 1), 16);
        if (p[i] == NULL) {
            assert_int_equal(errno, ENOMEM);
            failed = true;
            p[i] = mr_allocate(&u->base, 16 * (i + 1), 16); /* NULL again with MRT_FAIL_FROM */
        }
    }
    for (size_t i = 0; i < 5; i++)
        mr_deallocate(&u->base, p[i], 16 * (i + 1), 16);
    return failed;
}

static void test_support_fault_sweep(void **state)
{
    (void)state;
    size_t runs = 0;
    assert_int_equal(mrt_fault_sweep("support", five_requests, &runs, MRT_FAIL_ONCE, 5), 5);
    assert_int_equal(runs, 6); /* N = 1..5 fail, N = 6 runs clean */
    runs = 0;
    assert_int_equal(mrt_fault_sweep("support", five_requests, &runs, MRT_FAIL_FROM, 5), 5);
    assert_int_equal(runs, 6);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        mrt_unit_test(test_bad_alignment_never_reaches_resource),
        cmocka_unit_test(test_bad_alignment_builtin_resources),
        mrt_unit_test(test_args_passed_through),
        mrt_unit_test(test_deallocate_null_is_noop),
        cmocka_unit_test(test_malloc_is_default_and_stable),
        cmocka_unit_test(test_malloc_every_alignment),
        cmocka_unit_test(test_malloc_many_live_distinct),
        cmocka_unit_test(test_malloc_size_zero),
        cmocka_unit_test(test_malloc_impossible_sizes),
        cmocka_unit_test(test_huge_requests_fail_with_enomem),
        cmocka_unit_test(test_null_resource_always_fails),
        mrt_unit_test(test_default_get_set_restore),
        cmocka_unit_test(test_default_atomic_from_threads),
        mrt_unit_test(test_is_equal),
        cmocka_unit_test(test_default_handler_aborts),
        mrt_unit_test(test_support_upstream),
        mrt_unit_test(test_support_request_log),
        cmocka_unit_test(test_support_fault_sweep),
    };
    return cmocka_run_group_tests_name("resource", tests, NULL, NULL);
}
