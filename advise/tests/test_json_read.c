/* SPDX-License-Identifier: MIT */
/* advise/tests/test_json_read.c -- the advisor's strict JSON reader
 * (analyze/json_read.c), which `memres-advise diff` and the tests read
 * reports with:
 *   - a document's values come back as written: numbers by RFC 8259's
 *     grammar, escapes decoded, surrogate pairs joined into UTF-8, UTF-8
 *     passed through, objects' members in order;
 *   - what RFC 8259 does not allow is refused with a reason and the byte
 *     where it was found: trailing commas, leading zeros, '+', hex, a lone
 *     surrogate, a raw control character or a byte that is not UTF-8 in a
 *     string, a bad escape, a truncated document, text after it, nesting
 *     beyond 200 levels;
 *   - a refused document leaves nothing allocated (run under ASan in the
 *     sanitizer builds), and *out is cleared. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "json_read.h"

static void parse_ok(const char *text, struct mra_json *v)
{
    const char *err = NULL;
    size_t at = 0;
    int rc = mra_json_parse(text, strlen(text), v, &err, &at);
    if (rc != 0)
        fprintf(stderr, "  refused %s: %s at byte %zu\n", text, err, at);
    assert_int_equal(rc, 0);
}

static void test_values(void **state)
{
    (void)state;
    struct mra_json v;
    parse_ok(" {\"a\": [1, -0.5e-3, 1E+2, 0, -0], \"b\": \"x\\u00e9\\n\\\"\\/\", \"c\": [true, false, null],"
             " \"d\": {}, \"e\": [], \"f\": \"\\ud83d\\ude00\", \"g\": \"\xc3\xa9\xe2\x82\xac\"}\n",
             &v);
    assert_int_equal(v.t, MRA_JSON_OBJ);
    assert_int_equal(v.n, 7);
    assert_string_equal(v.keys[0], "a");
    assert_string_equal(v.keys[6], "g");
    const struct mra_json *a = mra_json_get(&v, "a");
    assert_int_equal(a->n, 5);
    assert_true(mra_json_num(mra_json_at(a, 0), 0) == 1);
    assert_true(mra_json_num(mra_json_at(a, 1), 0) == -0.5e-3);
    assert_true(mra_json_num(mra_json_at(a, 2), 0) == 100);
    assert_null(mra_json_at(a, 5));
    assert_string_equal(mra_json_str(mra_json_get(&v, "b")), "x\xc3\xa9\n\"/");
    const struct mra_json *c = mra_json_get(&v, "c");
    assert_int_equal(c->items[0].t, MRA_JSON_BOOL);
    assert_true(c->items[0].b);
    assert_false(c->items[1].b);
    assert_int_equal(c->items[2].t, MRA_JSON_NULL);
    assert_int_equal(mra_json_get(&v, "d")->t, MRA_JSON_OBJ);
    assert_int_equal(mra_json_get(&v, "e")->n, 0);
    assert_string_equal(mra_json_str(mra_json_get(&v, "f")), "\xf0\x9f\x98\x80"); /* U+1F600 */
    assert_string_equal(mra_json_str(mra_json_get(&v, "g")), "\xc3\xa9\xe2\x82\xac");
    assert_null(mra_json_get(&v, "missing"));
    assert_null(mra_json_str(a));
    assert_true(mra_json_num(NULL, 7) == 7);
    mra_json_free(&v);
    /* a large document: many members, grown arrays */
    size_t n = 100000;
    char *big = malloc(n * 4 + 3), *p = big;
    *p++ = '[';
    for (size_t i = 0; i < n; i++)
        p += sprintf(p, "%s%zu", i ? "," : "", i % 100);
    strcpy(p, "]");
    parse_ok(big, &v);
    assert_int_equal(v.n, n);
    assert_true(v.items[n - 1].num == (double)((n - 1) % 100));
    mra_json_free(&v);
    free(big);
}

static void refused(const char *text, size_t len, const char *why, size_t where)
{
    struct mra_json v;
    memset(&v, 0xa5, sizeof v);
    const char *err = NULL;
    size_t at = SIZE_MAX;
    int rc = mra_json_parse(text, len, &v, &err, &at);
    if (rc == 0 || !err || !strstr(err, why) || at != where)
        fprintf(stderr, "  %.*s: rc %d, '%s' at %zu; want '%s' at %zu\n", (int)len, text, rc, err ? err : "",
                at, why, where);
    assert_int_equal(rc, -1);
    assert_non_null(strstr(err, why));
    assert_int_equal(at, where);
    assert_null(v.items); /* cleared: nothing for the caller to free */
    assert_null(v.str);
}

#define REFUSED(text, why, where) refused(text, sizeof text - 1, why, where)

static void test_refused(void **state)
{
    (void)state;
    REFUSED("", "a value expected", 0);
    REFUSED("   ", "a value expected", 3);
    REFUSED("[1,]", "an unexpected character", 3);
    REFUSED("{\"a\": 1,}", "a string expected", 8);
    REFUSED("{\"a\" 1}", "':' expected", 5);
    REFUSED("[1 2]", "',' or ']' expected", 3);
    REFUSED("{\"a\": 1", "',' or '}' expected", 7);
    REFUSED("01", "text after the document", 1);
    REFUSED("+1", "an unexpected character", 0);
    REFUSED("0x10", "text after the document", 1);
    REFUSED("1.", "no digit after '.'", 2);
    REFUSED("1e", "no digit in the exponent", 2);
    REFUSED("-", "a bad number", 1);
    REFUSED("NaN", "an unexpected character", 0);
    REFUSED("tru", "an unexpected character", 0);
    REFUSED("nul", "an unexpected character", 0);
    REFUSED("\"abc", "an unterminated string", 1);
    REFUSED("\"a\tb\"", "a control character", 2);
    REFUSED("\"\\x\"", "a bad escape", 3);
    REFUSED("\"\\u12\"", "a short \\u escape", 3);
    REFUSED("\"\\u12g4\"", "a bad \\u escape", 3);
    REFUSED("\"\\udc00\"", "a lone low surrogate", 7);
    REFUSED("\"\\ud800x\"", "a high surrogate without its low one", 7);
    REFUSED("\"\\ud800\\u0041\"", "a high surrogate without its low one", 13);
    REFUSED("\"\xff\"", "not UTF-8", 1);
    REFUSED("\"\xc0\xaf\"", "not UTF-8", 1);         /* overlong '/' */
    REFUSED("\"\xed\xa0\x80\"", "not UTF-8", 1);     /* a surrogate */
    REFUSED("\"\xe2\x82\"", "not UTF-8", 1);         /* cut short */
    REFUSED("{} {}", "text after the document", 3);
    REFUSED("[[[{\"a\": [1, 2, {\"b\": tru}]}]]]", "an unexpected character", 22);
    char deep[402];
    memset(deep, '[', 201);
    memset(deep + 201, ']', 201);
    refused(deep, 402, "nested too deep", 200);
    /* 200 levels are allowed */
    struct mra_json v;
    const char *err;
    size_t at;
    assert_int_equal(mra_json_parse(deep + 1, 400, &v, &err, &at), 0);
    mra_json_free(&v);
}

static void test_read_file(void **state)
{
    (void)state;
    size_t len = 1;
    assert_null(mra_json_read_file("/nonexistent/report.json", &len));
    char path[] = "/tmp/test_json_read.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    for (int i = 0; i < 30000; i++)
        fputs("{\"k\": [1]}", f); /* over the first buffer of 64 KiB */
    fclose(f);
    char *t = mra_json_read_file(path, &len);
    unlink(path);
    assert_non_null(t);
    assert_int_equal(len, 30000 * 10);
    assert_int_equal(strlen(t), len);
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_read_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
