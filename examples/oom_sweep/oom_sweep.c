/* SPDX-License-Identifier: MIT */
/* examples/oom_sweep/oom_sweep.c -- an out-of-memory sweep: the test that
 * proves a piece of C code handles every allocation failure without a
 * crash and without a leak.  Copy it into your own test suite.
 *
 * The code under test here is a small configuration parser (config.c) that
 * takes its memory from an mr_resource.  The sweep puts two adaptors of
 * memres/adaptors.h under it:
 *
 *     cfg_parse -> mr_tracking -> mr_failing -> default resource (malloc)
 *
 * and runs the same parse for N = 1, 2, 3, ...: mr_failing fails the N-th
 * allocation request (fail_at = N), and each run must
 *   - fail cleanly: return its error (ENOMEM), not crash -- run it under
 *     ASan as well, to catch a use of the NULL it got or a use after free;
 *   - give back everything: mr_tracking_outstanding() == 0 after cleanup,
 *     and no violation (double free, wrong size) reported by mr_tracking;
 *   - and, when the failure came after the last request, succeed with the
 *     same result as a run without failures.
 * The first N that injects nothing (mr_failing_failures() == 0) ran to the
 * end untouched: every failure point has been swept.  This is SQLite's
 * malloc-failure loop and Zig's FailingAllocator loop.
 *
 * It sweeps more than the happy path: invalid inputs too, because syntax
 * error paths free half-built trees and leak as easily.  And it sweeps the
 * production stack, the parser over an mr_pools over the adaptors, where
 * the failure points are the pool's upstream requests and the proof is that
 * the pool's in_use is 0 after cleanup (the parser gave every block back)
 * and the tracking adaptor has nothing outstanding after the pool is gone.
 *
 * To use it for your code: replace run_parse() by a call of your code on a
 * given mr_resource (with its cleanup), keep sweep() as it is.  Exit status
 * 0 means every check passed; the last lines say
 *     N failure points swept, 0 leaks
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <memres/adaptors.h>
#include <memres/memres.h>

#include "config.h"

static int failures; /* failed checks */

#define CHECK(cond, ...)                                                          \
    do {                                                                          \
        if (!(cond)) {                                                            \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                         \
            fputc('\n', stderr);                                                  \
            failures++;                                                           \
        }                                                                         \
    } while (0)

/* ---- violations: count them instead of aborting, so a sweep reports every
 * failure point that misbehaves (the default handler aborts at the first).
 * ctx NULL: print and count in `violations`; else count quietly in *ctx. */

static unsigned long violations;

static void on_violation(const char *what, const void *ptr, void *ctx)
{
    if (ctx != NULL) {
        ++*(unsigned long *)ctx;
        return;
    }
    fprintf(stderr, "violation: %s (pointer %p)\n", what, ptr);
    violations++;
}

/* ---- the inputs ---- */

static const char sample[] =
    "# server configuration\n"
    "name   = \"edge-1\"\n"
    "port   = 8080\n"
    "debug  = false\n"
    "owner  = null\n"
    "tags   = [\"eu\", \"fast\", \"tls\", \"h2\", \"quic\"]\n"
    "limits = { connections = 512, body = 1048576, \"idle timeout\" = -30 }\n"
    "routes = [\n"
    "  { path = \"/\", backend = \"web\" },\n"
    "  { path = \"/api\", backend = \"api\", timeout = 30, retry = [1, 2, 4] },\n"
    "  { path = \"/static\\tfiles\", backend = \"cdn\", cache = true },\n"
    "]\n";

struct input {
    const char *name;
    const char *text;
    int want;           /* errno of a run without failures; 0: success */
};

static const struct input inputs[] = {
    {"sample", sample, 0},
    {"empty", "", 0},
    {"duplicate key deep inside", "a = 1\nb = { c = [1, {d = 2, d = 3}] }\n", EINVAL},
    {"unterminated list", "tags = [\"a\", \"b\", { x = 1 }\n", EINVAL},
    {"bad escape in a key", "t = { ok = 1, \"k\\q\" = 2 }\n", EINVAL},
    {"integer out of range", "list = [1, 2, 99999999999999999999]\n", EINVAL},
};

/* ---- the code under test, with its cleanup ---- */

/* Parses in->text from r and frees the tree again.  Returns 0 or the errno
 * of the failure.  *tree_ok says whether a successful parse produced the
 * reference tree (reference NULL: not checked). */
static int run_parse(mr_resource *r, const struct input *in, const cfg_value *reference, bool *tree_ok)
{
    cfg_value *v;
    cfg_error err;
    *tree_ok = true;
    errno = 0;
    if (cfg_parse(r, in->text, strlen(in->text), &v, &err) != 0)
        return errno;
    if (reference != NULL)
        *tree_ok = cfg_equal(v, reference);
    cfg_free(r, v);
    return 0;
}

/* ---- the sweep ---- */

/* How the code meets the adaptors: "direct" (code -> tracking -> failing)
 * or "pools" (code -> mr_pools -> tracking -> failing). */
enum stack { DIRECT, POOLS };

/* Sweeps every failure point of one input; returns the number swept. */
static unsigned long sweep(const struct input *in, enum stack stack, const cfg_value *reference)
{
    unsigned long n;
    for (n = 1;; n++) {
        mr_failing_options fo = {.fail_at = n}; /* upstream NULL: the default resource */
        mr_failing *f = mr_failing_create(&fo);
        mr_tracking *t = f != NULL ? mr_tracking_create(mr_failing_resource(f)) : NULL;
        if (t == NULL) {
            CHECK(t != NULL, "cannot create the adaptors");
            mr_failing_destroy(f);
            return n;
        }
        unsigned long before = violations;

        int got;
        bool tree_ok = true, pool_clean = true;
        if (stack == DIRECT) {
            got = run_parse(mr_tracking_resource(t), in, reference, &tree_ok);
        } else {
            mr_pools_options po = {.upstream = mr_tracking_resource(t)};
            errno = 0;
            mr_pools *pools = mr_pools_create(&po);
            if (pools == NULL) {
                got = errno;
            } else {
                got = run_parse(mr_pools_resource(pools), in, reference, &tree_ok);
                mr_stats s;
                mr_pools_stats(pools, &s);
                pool_clean = s.in_use == 0; /* the parser gave every block back */
                mr_pools_destroy(pools);
            }
        }

        bool injected = mr_failing_failures(f) != 0;
        /* an injected failure must surface as ENOMEM (or, for an invalid
         * input, may come after the syntax error was found) */
        if (injected)
            CHECK(got == ENOMEM || (got == in->want && got != 0), "%s, N = %lu: got errno %d", in->name, n, got);
        else
            CHECK(got == in->want, "%s, N = %lu: got errno %d, want %d", in->name, n, got, in->want);
        CHECK(tree_ok, "%s, N = %lu: the tree differs from the reference", in->name, n);
        CHECK(pool_clean, "%s, N = %lu: blocks still in use in the pool after cleanup", in->name, n);
        size_t leaked = mr_tracking_outstanding(t);
        CHECK(leaked == 0, "%s, N = %lu: %zu allocations leaked", in->name, n, leaked);
        if (leaked != 0)
            mr_tracking_report(t, stderr);
        mr_tracking_destroy(t); /* reports each leak as a violation, frees it */
        mr_failing_destroy(f);
        CHECK(violations == before, "%s, N = %lu: %lu violations", in->name, n, violations - before);
        if (!injected)
            return n - 1; /* ran to the end: every point before it swept */
    }
}

/* The harness must see a leak when there is one: a sweep that cannot fail
 * proves nothing.  Parse, "forget" the tree, and count what destroy says. */
static void self_check(void)
{
    mr_tracking *t = mr_tracking_create(NULL);
    cfg_value *v;
    if (t == NULL || cfg_parse(mr_tracking_resource(t), sample, strlen(sample), &v, NULL) != 0) {
        CHECK(false, "self-check: cannot parse");
        mr_tracking_destroy(t);
        return;
    }
    size_t leaked = mr_tracking_outstanding(t);
    unsigned long reported = 0;
    mr_set_violation_handler(on_violation, &reported);
    mr_tracking_destroy(t); /* one violation per leaked allocation, then frees them */
    mr_set_violation_handler(on_violation, NULL);
    CHECK(leaked > 0 && reported == leaked, "self-check: %zu leaked, %lu reported", leaked, reported);
    printf("self-check: a planted leak of %zu allocations is caught\n", leaked);
}

int main(void)
{
    mr_set_violation_handler(on_violation, NULL);

    /* the reference: parsed once without adaptors */
    cfg_value *reference;
    cfg_error err;
    if (cfg_parse(mr_get_default_resource(), sample, strlen(sample), &reference, &err) != 0) {
        fprintf(stderr, "sample: line %d, column %d: %s\n", err.line, err.column, err.message);
        return 1;
    }
    printf("sample: %zu values\n", cfg_count(reference));

    static const char *const names[] = {"parser -> tracking -> failing", "parser -> pools -> tracking -> failing"};
    unsigned long total = 0;
    for (int stack = DIRECT; stack <= POOLS; stack++) {
        unsigned long points = 0;
        for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; i++)
            points += sweep(&inputs[i], (enum stack)stack, i == 0 ? reference : NULL);
        printf("%s: %lu failure points swept\n", names[stack], points);
        total += points;
    }
    cfg_free(mr_get_default_resource(), reference);
    self_check();

    mr_set_violation_handler(NULL, NULL);
    if (failures != 0 || violations != 0) {
        printf("%d checks failed, %lu violations\n", failures, violations);
        return 1;
    }
    printf("%lu failure points swept, 0 leaks\n", total);
    return 0;
}
