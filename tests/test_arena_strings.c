/* SPDX-License-Identifier: MIT */
/* tests/test_arena_strings.c -- the arena's strings (memres/arena.h):
 * strdup, strndup, sprintf and vsprintf, and the top side of a block.
 *
 * Strings are copied whole (longer than a block too); strndup reads no
 * further than n, and a NULL string is EINVAL with nothing changed.
 * Formatted strings are packed at the top of the free space, byte by byte
 * with no rounding between them, so that the next aligned allocation still
 * goes where it would have gone; at the exact edge of the tail a string
 * that fits with its NUL stays in the block and one byte more goes to the
 * upstream; a string that fits nowhere, or more than INT_MAX characters,
 * fails and changes nothing.  Allocations of alignment <= 8 that open a new
 * block land at the top too, where the inline path puts them, and given
 * back as the newest they are handed out again at the same address.
 *
 * Helpers: tests/arena_helpers.h.
 */
#include <errno.h>
#include <limits.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"
#include "arena_helpers.h"

/* ======================================================================
 * strdup, strndup, sprintf
 * ====================================================================== */

static char *vsp(mr_arena *a, const char *fmt, ...) MR_PRINTF(2, 3);
static char *vsp(mr_arena *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = mr_arena_vsprintf(a, fmt, ap);
    va_end(ap);
    return s;
}

static void test_strdup_strndup(void **state)
{
    mrt_upstream *u = *state;
    mr_arena *a = arena_on(&u->base, 4096, 0, 0);
    const char *src = "hello, arena";
    char *s = mr_arena_strdup(a, src);
    assert_non_null(s);
    assert_true(s != src);
    assert_string_equal(s, src);
    assert_true(mrt_upstream_owns(u, s));
    s = mr_arena_strdup(a, "");
    assert_non_null(s);
    assert_string_equal(s, "");

    /* longer than a block */
    char *longs = malloc(10001);
    assert_non_null(longs);
    for (size_t i = 0; i < 10000; i++)
        longs[i] = (char)('a' + i % 26);
    longs[10000] = '\0';
    s = mr_arena_strdup(a, longs);
    assert_non_null(s);
    assert_string_equal(s, longs);
    s = mr_arena_strndup(a, longs, 9000);
    assert_non_null(s);
    assert_int_equal(strlen(s), 9000);
    assert_memory_equal(s, longs, 9000);
    free(longs);

    const struct { size_t n; const char *want; } nd[] = {
        {0, ""}, {1, "a"}, {3, "abc"}, {6, "abcdef"}, {7, "abcdef"}, {100, "abcdef"},
        {SIZE_MAX, "abcdef"}, {SIZE_MAX - 1, "abcdef"}, {(size_t)PTRDIFF_MAX + 1, "abcdef"},
    };
    for (size_t i = 0; i < ARRAY_LEN(nd); i++) {
        s = mr_arena_strndup(a, "abcdef", nd[i].n);
        assert_non_null(s);
        assert_string_equal(s, nd[i].want);
    }
    /* strndup reads no further than n: a buffer with no NUL (ASan checks) */
    char *raw = malloc(4);
    assert_non_null(raw);
    memcpy(raw, "wxyz", 4);
    s = mr_arena_strndup(a, raw, 4);
    assert_non_null(s);
    assert_string_equal(s, "wxyz");
    s = mr_arena_strndup(a, raw, 2);
    assert_string_equal(s, "wx");
    free(raw);

    /* NULL string: EINVAL, nothing changed */
    void *next = probe(a);
    snapshot before = snap(a, u);
    mrt_assert_fails(mr_arena_strdup(a, NULL), EINVAL);
    assert_unchanged(a, u, &before);
    mrt_assert_fails(mr_arena_strndup(a, NULL, 3), EINVAL);
    assert_unchanged(a, u, &before);
    assert_ptr_equal(probe(a), next);
    mr_arena_destroy(a);
}

static void test_sprintf(void **state)
{
    mrt_upstream *u = *state;
    mr_arena *a = arena_on(&u->base, 4096, 0, 0);
    assert_non_null(mr_arena_alloc(a, 8));
    /* fits: packed at the top of the free space, byte by byte; the next
     * aligned allocation still goes where it would have gone */
    char *next = probe(a);
    char *s = mr_arena_sprintf(a, "x=%d y=%s z=%zu", 42, "hello", (size_t)7);
    assert_true(s > next);
    assert_string_equal(s, "x=42 y=hello z=7");
    assert_ptr_equal(probe(a), next);
    char *s2 = vsp(a, "%s-%d", "v", -1);
    assert_string_equal(s2, "v--1");
    assert_ptr_equal(s2 + strlen(s2) + 1, s); /* no rounding between strings */
    char *s3 = mr_arena_strdup(a, "abc");
    assert_ptr_equal(s3 + 4, s2);
    s = mr_arena_sprintf(a, "%s", "");
    assert_non_null(s);
    assert_string_equal(s, "");

    /* longer than a block */
    char *longs = malloc(10001);
    assert_non_null(longs);
    memset(longs, 'q', 10000);
    longs[10000] = '\0';
    s = mr_arena_sprintf(a, "<%s>", longs);
    assert_non_null(s);
    assert_int_equal(strlen(s), 10002);
    assert_int_equal(s[0], '<');
    assert_int_equal(s[10001], '>');
    assert_memory_equal(s + 1, longs, 10000);
    s = mr_arena_sprintf(a, "%s%s%s", longs, longs, longs);
    assert_non_null(s);
    assert_int_equal(strlen(s), 30000);
    free(longs);
    assert_true(mr_arena_check(a));
    assert_agrees(a, u);
    mr_arena_destroy(a);
}

/* The exact edge of the tail: a buffer arena whose free space is measured
 * first.  A string of tail-1 characters fits (with its NUL), one of tail
 * characters does not and goes to the upstream. */
static void test_sprintf_tail_edge(void **state)
{
    mrt_upstream *u = *state;
    alignas(max_align_t) unsigned char buf[2048];
    mr_arena *a = arena_buf(&u->base, buf, sizeof buf);
    mr_arena_mark start = mr_arena_save(a);
    size_t units = 0;
    for (;;) {
        unsigned char *p = mr_arena_alloc(a, A);
        assert_non_null(p);
        if (!(p >= buf && p < buf + sizeof buf))
            break;
        units++;
    }
    assert_true(units > 8);
    mr_arena_rewind(a, start);
    char str[4 * A + 1];
    memset(str, 'k', sizeof str - 1);
    for (size_t tailunits = 1; tailunits <= 4; tailunits++) {
        size_t tail = tailunits * A;
        for (size_t len = tail - 2; len <= tail; len++) {
            mr_arena_rewind(a, start);
            unsigned char *fillp = mr_arena_alloc(a, (units - tailunits) * A);
            assert_true(fillp >= buf && fillp < buf + sizeof buf);
            unsigned char *where = probe_n(a, 1);
            assert_true(where >= buf && where < buf + sizeof buf);
            char *s = mr_arena_sprintf(a, "%.*s", (int)len, str);
            assert_non_null(s);
            assert_int_equal(strlen(s), len);
            bool inbuf = (unsigned char *)s >= buf && (unsigned char *)s < buf + sizeof buf;
            if (len + 1 <= tail) {
                assert_true(inbuf);
                assert_ptr_equal(s + len + 1, where + tail); /* packed at the top */
            } else {
                assert_false(inbuf);
                assert_true(mrt_upstream_owns(u, s));
            }
            assert_true(mr_arena_check(a));
        }
    }
    mr_arena_destroy(a);
}

static void test_sprintf_failure(void **state)
{
    (void)state;
    alignas(max_align_t) unsigned char buf[1024];
    mr_arena *a = arena_buf(mr_null_resource(), buf, sizeof buf);
    char *s0 = mr_arena_sprintf(a, "%d", 1);
    assert_string_equal(s0, "1");
    void *next = probe(a);
    snapshot before = snap(a, NULL);
    char big[2048];
    memset(big, 'b', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    mrt_assert_fails(mr_arena_sprintf(a, "%s", big), ENOMEM);
    assert_unchanged(a, NULL, &before);
    /* more than INT_MAX characters: vsnprintf fails (EOVERFLOW) -- after
     * formatting 2 GiB of padding, which a scaled-down run (Valgrind) skips */
    if (mrt_scaled(100) == 100) {
        errno = 0;
        volatile int width = INT_MAX; /* hidden from the compiler's format check */
        assert_null(mr_arena_sprintf(a, "%*s%s", width, "", "x"));
        assert_true(errno != 0);
        assert_unchanged(a, NULL, &before);
    }
    assert_ptr_equal(probe(a), next);
    assert_string_equal(s0, "1");
    char *s = mr_arena_sprintf(a, "%s", "ok");
    assert_ptr_equal(s + 3, s0); /* packed right below the first string */
    assert_ptr_equal(probe(a), next);
    assert_string_equal(s, "ok");
    mr_arena_destroy(a);
}

/* ======================================================================
 * the top side: allocations of alignment <= 8
 * ====================================================================== */

/* An allocation of alignment <= 8 that opens a new block lands where the
 * inline path puts it, at the top: given back as the newest through the
 * resource view and asked for again, it gets the same address, whichever
 * block it landed in (found by test_bridge, whose arena sat near the end of
 * a block under one heap layout: the slow path had carved from the bottom
 * and the next request then came from the top). */
static void test_down8_newest_across_blocks(void **state)
{
    mrt_upstream *u = *state;
    mr_resource *up = &u->base;
    for (size_t pre = 0; pre < 4096; pre += 8) {
        mr_arena *a = arena_on(up, 1024, 4096, 0);
        assert_non_null(a);
        mr_resource *r = mr_arena_resource(a);
        assert_non_null(mr_allocate(r, pre, 8));
        void *tmp = mr_allocate(r, 100, 8);
        assert_non_null(tmp);
        assert_int_equal((uintptr_t)tmp % 8, 0);
        mr_deallocate(r, tmp, 100, 8);
        assert_ptr_equal(mr_allocate(r, 100, 8), tmp);
        assert_true(mr_arena_check(a));
        mr_arena_destroy(a);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        mrt_unit_test(test_strdup_strndup),
        mrt_unit_test(test_sprintf),
        mrt_unit_test(test_sprintf_tail_edge),
        cmocka_unit_test(test_sprintf_failure),
        mrt_unit_test(test_down8_newest_across_blocks),
    };
    return cmocka_run_group_tests_name("arena strings", tests, NULL, NULL);
}
