/* tests/test_resource.c -- the resource interface (memres/resource.h).
 *
 * Every clause of the header's contract: alignment validation before
 * dispatch (the resource is never called for a bad alignment), the malloc
 * resource for every power-of-two alignment up to 1 MiB (above the page size)
 * with writes across the whole block, size 0, impossible sizes, the null
 * resource, the default resource (get/set/restore, atomic from threads), and
 * is_equal.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"

#if MR_SANITIZED
/* Impossible sizes reach malloc through the malloc resource on purpose: ASan
 * must return NULL for them, as libc does, instead of reporting them. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }
#endif

static void assert_aligned(const void *p, size_t align)
{
    assert_int_equal((uintptr_t)p & (align - 1), 0);
}

/* A resource that records its last call and can say it is equal to another
 * of its kind with the same key, to test mr_is_equal's dispatch. */
typedef struct keyed {
    mr_resource base;
    int key;
    size_t allocs, deallocs, last_size, last_align;
} keyed;

static void *keyed_allocate(mr_resource *self, size_t size, size_t align)
{
    keyed *k = (keyed *)self;
    k->allocs++;
    k->last_size = size;
    k->last_align = align;
    return mr_allocate(mr_malloc_resource(), size, align);
}

static void keyed_deallocate(mr_resource *self, void *p, size_t size, size_t align)
{
    keyed *k = (keyed *)self;
    k->deallocs++;
    k->last_size = size;
    k->last_align = align;
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
    (void)state;
    mrt_upstream u;
    mrt_upstream_init(&u);
    for (size_t i = 0; i < sizeof bad_aligns / sizeof bad_aligns[0]; i++) {
        for (size_t size = 0; size <= 64; size += 16) {
            errno = 0;
            assert_null(mr_allocate(&u.base, size, bad_aligns[i]));
            assert_int_equal(errno, EINVAL);
        }
    }
    assert_int_equal(u.calls, 0);
    assert_int_equal(u.allocations, 0);
    assert_int_equal(u.failures, 0);
    mrt_assert_balanced(&u);
    mrt_upstream_fini(&u);
}

static void test_bad_alignment_builtin_resources(void **state)
{
    (void)state;
    mr_resource *rs[] = {mr_malloc_resource(), mr_null_resource(), mr_get_default_resource()};
    for (size_t r = 0; r < 3; r++) {
        for (size_t i = 0; i < sizeof bad_aligns / sizeof bad_aligns[0]; i++) {
            errno = 0;
            assert_null(mr_allocate(rs[r], 16, bad_aligns[i]));
            assert_int_equal(errno, EINVAL);
        }
    }
}

static void test_args_passed_through(void **state)
{
    (void)state;
    keyed k = {{&keyed_ops}, 1, 0, 0, 0, 0};
    void *p = mr_allocate(&k.base, 100, 64);
    assert_non_null(p);
    assert_aligned(p, 64);
    assert_int_equal(k.allocs, 1);
    assert_int_equal(k.last_size, 100);
    assert_int_equal(k.last_align, 64);
    mr_deallocate(&k.base, p, 100, 64);
    assert_int_equal(k.deallocs, 1);
    assert_int_equal(k.last_size, 100);
    assert_int_equal(k.last_align, 64);
    /* size 0 is passed as is: the resource decides how to give a pointer */
    p = mr_allocate(&k.base, 0, 1);
    assert_non_null(p);
    assert_int_equal(k.last_size, 0);
    assert_int_equal(k.last_align, 1);
    mr_deallocate(&k.base, p, 0, 1);
}

static void test_deallocate_null_is_noop(void **state)
{
    (void)state;
    mrt_upstream u;
    mrt_upstream_init(&u);
    mr_deallocate(&u.base, NULL, 16, 16);
    mr_deallocate(&u.base, NULL, 0, 1);
    assert_int_equal(u.deallocations, 0);
    mr_deallocate(mr_malloc_resource(), NULL, 16, 16);
    mr_deallocate(mr_null_resource(), NULL, 16, 16);
    mrt_assert_balanced(&u);
    mrt_upstream_fini(&u);
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
            errno = 0;
            assert_null(mr_allocate(m, sizes[i], aligns[j]));
            assert_int_equal(errno, ENOMEM);
        }
    }
    /* Alignments that cannot be met (valid powers of two, so not EINVAL):
     * the resource refuses them itself, so this holds under ASan too. */
    const size_t huge_aligns[] = {(size_t)1 << 63, (size_t)1 << 62, (size_t)1 << 41};
    for (size_t j = 0; j < sizeof huge_aligns / sizeof huge_aligns[0]; j++) {
        errno = 0;
        assert_null(mr_allocate(m, 16, huge_aligns[j]));
        assert_int_equal(errno, ENOMEM);
    }
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
            errno = 0;
            assert_null(mr_allocate(n, sizes[i], aligns[j]));
            assert_int_equal(errno, ENOMEM);
        }
    }
    mr_deallocate(n, NULL, 0, 1); /* no-op */
}

/* ---- default resource ---- */

static void test_default_get_set_restore(void **state)
{
    (void)state;
    mrt_upstream u, v;
    mrt_upstream_init(&u);
    mrt_upstream_init(&v);
    mr_resource *m = mr_malloc_resource();

    assert_ptr_equal(mr_get_default_resource(), m);
    assert_ptr_equal(mr_set_default_resource(&u.base), m);
    assert_ptr_equal(mr_get_default_resource(), &u.base);

    /* allocation through the default goes to the resource that was set */
    void *p = mr_allocate(mr_get_default_resource(), 40, 8);
    assert_non_null(p);
    assert_int_equal(u.allocations, 1);
    mr_deallocate(mr_get_default_resource(), p, 40, 8);
    assert_int_equal(u.deallocations, 1);

    assert_ptr_equal(mr_set_default_resource(&v.base), &u.base);
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
    errno = 0;
    assert_null(mr_allocate(mr_get_default_resource(), 1, 1));
    assert_int_equal(errno, ENOMEM);
    assert_ptr_equal(mr_set_default_resource(NULL), mr_null_resource());

    assert_int_equal(v.calls, 0);
    mrt_assert_balanced(&u);
    mrt_assert_balanced(&v);
    mrt_upstream_fini(&u);
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
    keyed k = {{&keyed_ops}, 7, 0, 0, 0, 0};
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
    (void)state;
    mr_resource *m = mr_malloc_resource(), *n = mr_null_resource();
    mrt_upstream u, v;
    mrt_upstream_init(&u);
    mrt_upstream_init(&v);

    /* identity */
    assert_true(mr_is_equal(m, m));
    assert_true(mr_is_equal(n, n));
    assert_true(mr_is_equal(&u.base, &u.base));
    /* different kinds */
    assert_false(mr_is_equal(m, n));
    assert_false(mr_is_equal(n, m));
    assert_false(mr_is_equal(m, &u.base));
    assert_false(mr_is_equal(&u.base, m));
    /* same kind, is_equal NULL: identity only */
    assert_false(mr_is_equal(&u.base, &v.base));
    assert_false(mr_is_equal(&v.base, &u.base));
    /* NULL operands */
    assert_false(mr_is_equal(m, NULL));
    assert_false(mr_is_equal(NULL, m));

    /* same kind with is_equal: it decides, both ways */
    keyed a = {{&keyed_ops}, 1, 0, 0, 0, 0};
    keyed b = {{&keyed_ops}, 1, 0, 0, 0, 0};
    keyed c = {{&keyed_ops}, 2, 0, 0, 0, 0};
    keyed d = {{&keyed_ops2}, 1, 0, 0, 0, 0};
    assert_true(mr_is_equal(&a.base, &b.base));
    assert_true(mr_is_equal(&b.base, &a.base));
    assert_false(mr_is_equal(&a.base, &c.base));
    assert_false(mr_is_equal(&c.base, &a.base));
    /* another kind is never asked, even when its is_equal would say yes */
    assert_false(mr_is_equal(&a.base, &d.base));
    assert_false(mr_is_equal(&d.base, &a.base));
    assert_true(mr_is_equal(&d.base, &d.base));

    mrt_upstream_fini(&u);
    mrt_upstream_fini(&v);
}

/* ---- the checking upstream itself (every other test trusts it) ---- */

static void test_support_upstream(void **state)
{
    (void)state;
    mrt_upstream u;
    mrt_upstream_init(&u);
    u.fail_at = 2;
    void *p = mr_allocate(&u.base, 100, 64);
    assert_non_null(p);
    assert_aligned(p, 64);
    assert_true(mrt_upstream_owns(&u, (char *)p + 99));
    assert_false(mrt_upstream_owns(&u, (char *)p + 100));
    errno = 0;
    assert_null(mr_allocate(&u.base, 100, 64)); /* the 2nd call fails */
    assert_int_equal(errno, ENOMEM);
    void *q = mr_allocate(&u.base, 10, 16);
    assert_non_null(q);
    assert_int_equal(u.calls, 3);
    assert_int_equal(u.allocations, 2);
    assert_int_equal(u.failures, 1);
    assert_int_equal(u.bytes, 110);
    assert_int_equal(u.peak_bytes, 110);
    mr_deallocate(&u.base, p, 100, 64);
    mr_deallocate(&u.base, q, 10, 16);
    mrt_assert_balanced(&u);

    u.fail_at = 0;
    u.limit = 100;
    errno = 0;
    assert_null(mr_allocate(&u.base, 101, 1));
    assert_int_equal(errno, ENOMEM);
    p = mr_allocate(&u.base, 100, 1);
    assert_non_null(p);
    mr_deallocate(&u.base, p, 100, 1);
    mrt_assert_balanced(&u);
    mrt_upstream_fini(&u);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_alignment_never_reaches_resource),
        cmocka_unit_test(test_bad_alignment_builtin_resources),
        cmocka_unit_test(test_args_passed_through),
        cmocka_unit_test(test_deallocate_null_is_noop),
        cmocka_unit_test(test_malloc_is_default_and_stable),
        cmocka_unit_test(test_malloc_every_alignment),
        cmocka_unit_test(test_malloc_many_live_distinct),
        cmocka_unit_test(test_malloc_size_zero),
        cmocka_unit_test(test_malloc_impossible_sizes),
        cmocka_unit_test(test_null_resource_always_fails),
        cmocka_unit_test(test_default_get_set_restore),
        cmocka_unit_test(test_default_atomic_from_threads),
        cmocka_unit_test(test_is_equal),
        cmocka_unit_test(test_support_upstream),
    };
    return cmocka_run_group_tests_name("resource", tests, NULL, NULL);
}
