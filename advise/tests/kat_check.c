/* SPDX-License-Identifier: MIT */
/* advise/tests/kat_check.c -- runs a program natively and under
 * memres-advise and checks what the advisor says against what is known.
 *
 *   kat_check kat  --advisor A --source SRC --workdir D [--status N]
 *                  [--thread-safe] [--depth N] [--sample BYTES] -- PROGRAM [ARGS...]
 *       A known-answer program (kat_*.c).  Its source marks the known site:
 *       a line with "KAT-SITE: rec..." (the recommendations accepted; "any":
 *       not checked), optionally "KAT-ALSO: rec..." (a second site), and
 *       lines "KAT-CHILD" / "KAT-EXEC" (allocations made by a forked child
 *       or an exec'd image: never in the profile), and "KAT-FREE" (where
 *       the KAT site's objects are freed).  The program prints
 *       "KAT-COUNT SITE n" (and "KAT-COUNT ALSO n") on stderr.  Asserts:
 *         passthrough  stdout, stderr and the exit status are the same
 *                      natively and under the advisor (the report goes to
 *                      -o), and the status is N (default 0);
 *         json         the JSON is valid, "version" 1, and has the fields
 *                      of DESIGN.md (program, allocations, frees,
 *                      peak_live_bytes, sites with id, frames, allocations,
 *                      bytes, sizes, peak_live, freed_at_exit,
 *                      recommendation, reason, predicted_saving_ns);
 *         counts       the allocations of the sites whose first frame is
 *                      the KAT-SITE line add up to KAT-COUNT SITE exactly
 *                      (--sample: the advisor samples, and the sum is an
 *                      estimate within 10%; the program's total, counted,
 *                      is still at least the count)
 *                      (KAT-ALSO likewise); no site starts at a KAT-CHILD
 *                      or KAT-EXEC line;
 *         advice       the recommended site with the largest predicted
 *                      saving starts at the KAT-SITE line and has one of
 *                      its recommendations ("none": no site recommended);
 *                      KAT-ALSO sites have one of theirs; --thread-safe:
 *                      the KAT site's pools are thread-safe;
 *         freed        with a KAT-FREE line: the KAT site's "freed" stacks
 *                      have a frame at that line, and its "change" names
 *                      it (file:line);
 *         rules        every site has a reason; every recommended site has
 *                      a predicted saving of at least min_share (the
 *                      JSON's thresholds; 2% by default) of the program's
 *                      time (when the JSON states that time).
 *         timeline     the "timeline" of live bytes has 2 to
 *                      MRA_TIMELINE_MAX points, from the start (all 0) to
 *                      the end (the figures at exit, the recorded time),
 *                      never going back in time or allocations; its
 *                      highest live_bytes is peak_live_bytes exactly, at
 *                      "timeline_peak".
 *   kat_check real --advisor A --workdir D [--stdin FILE] [--svg] -- PROGRAM [ARGS...]
 *       A program no one on the project wrote (lua5.4, sqlite3): exit 77
 *       (skipped) when PROGRAM is not there.  Asserts passthrough (stdout,
 *       stderr, status), that a text report and a valid JSON report with
 *       allocations, sites and the timeline came out (and an SVG with --svg), and
 *       prints the times.
 *   kat_check query --json F --source SRC [--tag SITE|ALSO]
 *       For accuracy.sh: prints "PREDICTED_NS REC PROGRAM_NS ALLOCATIONS
 *       WOULD_NS" for the sites starting at the tagged line (savings
 *       summed; the rec of the one with the largest saving; WOULD_NS: the
 *       saving the analysis computed before the 2% rule, from the reasons
 *       of sites judged none).
 *
 * The advisor finds its recorder through MEMRES_ADVISE_RECORDER (CTest
 * sets it).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "format.h"
#include "kat_json.h"

/* ---- the configuration ---- */

#define MAX_RECS 6
#define MAX_FORBID 8

static struct {
    const char *mode;
    const char *advisor, *source, *workdir, *stdin_path, *json_path, *tag;
    int status;
    bool thread_safe, svg;
    int depth;
    const char *sample; /* --sample BYTES, passed on */
    char **prog; /* PROGRAM ARGS..., NULL-terminated */
    int nprog;
} cfg = {.status = 0, .depth = 0};

/* The marks in the source. */
typedef struct mark {
    unsigned line;
    char recs[MAX_RECS][24];
    int nrecs;
} mark;

static struct {
    mark site, also;
    bool has_also;
    unsigned forbid[MAX_FORBID];
    int nforbid;
    unsigned free_line; /* KAT-FREE, or 0 */
    char base[256]; /* the source's file name */
} src;

/* What the runs gave. */
typedef struct run_result {
    int status;
    double wall_s;
    char *out, *err;
    size_t out_len, err_len;
} run_result;

static run_result native, advised;
static kj doc;
static bool doc_ok;
static char json_file[4096], report_file[4096], svg_file[4096];

/* ---- helpers ---- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char *base_name(const char *p)
{
    const char *b = strrchr(p, '/');
    return b ? b + 1 : p;
}

/* Runs argv with stdin from in (NULL: /dev/null), stdout and stderr into
 * files; returns its exit status (128 + signal when killed). */
static int run(char **argv, const char *in, const char *out, const char *err, double *wall)
{
    double t0 = now_s();
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int fi = open(in ? in : "/dev/null", O_RDONLY);
        int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fi < 0 || fo < 0 || fe < 0)
            _exit(126);
        dup2(fi, 0);
        dup2(fo, 1);
        dup2(fe, 2);
        close(fi);
        close(fo);
        close(fe);
        execvp(argv[0], argv);
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    *wall = now_s() - t0;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void run_into(run_result *r, char **argv, const char *tag)
{
    char out[4096], err[4096];
    snprintf(out, sizeof out, "%s/%s.stdout", cfg.workdir, tag);
    snprintf(err, sizeof err, "%s/%s.stderr", cfg.workdir, tag);
    r->status = run(argv, cfg.stdin_path, out, err, &r->wall_s);
    r->out = kj_read_file(out, &r->out_len);
    r->err = kj_read_file(err, &r->err_len);
}

/* The number after "KAT-COUNT tag " in the native stderr; -1: none. */
static long long kat_count(const char *tag)
{
    char key[64];
    snprintf(key, sizeof key, "KAT-COUNT %s ", tag);
    const char *p = native.err ? strstr(native.err, key) : NULL;
    return p ? strtoll(p + strlen(key), NULL, 10) : -1;
}

static void parse_mark(const char *text, mark *m)
{
    m->nrecs = 0;
    const char *end = strstr(text, "*/");
    const char *p = text;
    while (m->nrecs < MAX_RECS) {
        while (*p == ' ' || *p == '\t')
            p++;
        size_t n = strcspn(p, " \t\n*");
        if (n == 0 || (end && p >= end))
            break;
        snprintf(m->recs[m->nrecs], sizeof m->recs[0], "%.*s", (int)n, p);
        m->nrecs++;
        p += n;
    }
}

static int read_source(const char *path)
{
    size_t len;
    char *text = kj_read_file(path, &len);
    if (text == NULL) {
        fprintf(stderr, "kat_check: cannot read %s\n", path);
        return -1;
    }
    snprintf(src.base, sizeof src.base, "%s", base_name(path));
    unsigned line = 1;
    for (char *p = text; *p; line++) {
        char *nl = strchr(p, '\n');
        if (nl)
            *nl = '\0';
        char *k;
        if ((k = strstr(p, "KAT-SITE:")) != NULL && strstr(p, "/*") != NULL && src.site.line == 0) {
            src.site.line = line;
            parse_mark(k + 9, &src.site);
        } else if ((k = strstr(p, "KAT-ALSO:")) != NULL && strstr(p, "/*") != NULL && !src.has_also) {
            src.also.line = line;
            src.has_also = true;
            parse_mark(k + 9, &src.also);
        } else if (strstr(p, "/* KAT-FREE") != NULL && src.free_line == 0) {
            src.free_line = line;
        } else if ((strstr(p, "/* KAT-CHILD") != NULL || strstr(p, "/* KAT-EXEC") != NULL) &&
                   src.nforbid < MAX_FORBID) {
            src.forbid[src.nforbid++] = line;
        }
        if (!nl)
            break;
        p = nl + 1;
    }
    free(text);
    if (src.site.line == 0) {
        fprintf(stderr, "kat_check: no KAT-SITE mark in %s\n", path);
        return -1;
    }
    return 0;
}

static const kj *sites(void)
{
    const kj *s = kj_get(&doc, "sites");
    return s && s->t == KJ_ARR ? s : NULL;
}

/* The first frame of site s: file and line. */
static bool site_at(const kj *s, unsigned line)
{
    const kj *f0 = kj_at(kj_get(s, "frames"), 0);
    const char *file = kj_str(kj_get(f0, "file"));
    double l = kj_num(kj_get(f0, "line"), -1);
    return file != NULL && strcmp(base_name(file), src.base) == 0 && (unsigned)l == line && l >= 0;
}

static const char *site_rec(const kj *s)
{
    const char *r = kj_str(kj_get(s, "recommendation"));
    return r ? r : "(missing)";
}

static double site_saving(const kj *s)
{
    return kj_num(kj_get(s, "predicted_saving_ns"), 0);
}

static bool rec_in(const char *rec, const mark *m)
{
    for (int i = 0; i < m->nrecs; i++)
        if (strcmp(m->recs[i], rec) == 0)
            return true;
    return false;
}

/* The program's time in ns, as the JSON states it; <= 0: not stated. */
static double program_ns(void)
{
    static const char *const keys[] = {"run_time_ns", "program_ns", "run_ns", "wall_ns", "elapsed_ns", "time_ns", "duration_ns"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        double v = kj_num(kj_get(&doc, keys[i]), -1);
        if (v > 0)
            return v;
    }
    const kj *run_obj = kj_get(&doc, "run");
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        double v = kj_num(kj_get(run_obj, keys[i]), -1);
        if (v > 0)
            return v;
    }
    return -1;
}

static void print_frame0(const kj *s, char *buf, size_t cap)
{
    const kj *f0 = kj_at(kj_get(s, "frames"), 0);
    const char *fn = kj_str(kj_get(f0, "function"));
    const char *file = kj_str(kj_get(f0, "file"));
    snprintf(buf, cap, "%s %s:%.0f", fn ? fn : "?", file ? base_name(file) : "?",
             kj_num(kj_get(f0, "line"), 0));
}

static void dump_sites(int max)
{
    const kj *ss = sites();
    if (ss == NULL)
        return;
    for (size_t i = 0; i < ss->n && (int)i < max; i++) {
        const kj *s = &ss->items[i];
        char f[512];
        print_frame0(s, f, sizeof f);
        fprintf(stderr, "  site %.0f: %s  allocations %.0f  %s  saving %.3f ms  reason: %s\n",
                kj_num(kj_get(s, "id"), 0), f, kj_num(kj_get(s, "allocations"), 0), site_rec(s),
                site_saving(s) / 1e6, kj_str(kj_get(s, "reason")) ? kj_str(kj_get(s, "reason")) : "(none)");
    }
}

static int load_json(const char *path)
{
    size_t len;
    char *text = kj_read_file(path, &len);
    if (text == NULL) {
        fprintf(stderr, "kat_check: no JSON report at %s\n", path);
        return -1;
    }
    const char *err = NULL;
    size_t at = 0;
    int rc = kj_parse(text, len, &doc, &err, &at);
    if (rc != 0)
        fprintf(stderr, "kat_check: %s is not JSON: %s at byte %zu\n", path, err, at);
    free(text);
    doc_ok = rc == 0;
    return rc;
}

/* ---- the runs (group setup) ---- */

static void mkdir_p(const char *d)
{
    char b[4096];
    snprintf(b, sizeof b, "%s", d);
    for (char *p = b + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(b, 0755);
            *p = '/';
        }
    mkdir(b, 0755);
}

static int setup_runs(void **state)
{
    (void)state;
    mkdir_p(cfg.workdir);
    snprintf(json_file, sizeof json_file, "%s/report.json", cfg.workdir);
    snprintf(report_file, sizeof report_file, "%s/report.txt", cfg.workdir);
    snprintf(svg_file, sizeof svg_file, "%s/report.svg", cfg.workdir);
    unlink(json_file);
    unlink(report_file);
    unlink(svg_file);

    run_into(&native, cfg.prog, "native");
    char *argv[64];
    int n = 0;
    char depth[16];
    argv[n++] = (char *)cfg.advisor;
    argv[n++] = (char *)"-o";
    argv[n++] = report_file;
    argv[n++] = (char *)"--json";
    argv[n++] = json_file;
    if (cfg.svg) {
        argv[n++] = (char *)"--svg";
        argv[n++] = svg_file;
    }
    if (cfg.depth > 0) {
        snprintf(depth, sizeof depth, "%d", cfg.depth);
        argv[n++] = (char *)"--depth";
        argv[n++] = depth;
    }
    if (cfg.sample) {
        argv[n++] = (char *)"--sample";
        argv[n++] = (char *)cfg.sample;
    }
    argv[n++] = (char *)"--";
    for (int i = 0; i < cfg.nprog && n < 63; i++)
        argv[n++] = cfg.prog[i];
    argv[n] = NULL;
    run_into(&advised, argv, "advised");
    fprintf(stderr, "kat_check: %s: native %.3f s (status %d), under memres-advise %.3f s (status %d): %.2fx\n",
            base_name(cfg.prog[0]), native.wall_s, native.status, advised.wall_s, advised.status,
            native.wall_s > 0 ? advised.wall_s / native.wall_s : 0.0);
    if (load_json(json_file) == 0 && strcmp(cfg.mode, "kat") == 0)
        dump_sites(6);
    return 0;
}

static int teardown_runs(void **state)
{
    (void)state;
    free(native.out);
    free(native.err);
    free(advised.out);
    free(advised.err);
    kj_free(&doc);
    return 0;
}

/* Removes the lines that start with "memres-advise:" from b[0..n), in
 * place; returns the new length. */
static size_t strip_notes(char *b, size_t n)
{
    size_t r = 0, w = 0;
    while (r < n) {
        size_t e = r;
        while (e < n && b[e] != '\n')
            e++;
        if (e < n)
            e++; /* the newline */
        if (!(e - r >= 14 && memcmp(b + r, "memres-advise:", 14) == 0)) {
            memmove(b + w, b + r, e - r);
            w += e - r;
        }
        r = e;
    }
    b[w] = '\0';
    return w;
}

/* ---- the tests ---- */

static void test_passthrough(void **state)
{
    (void)state;
    assert_non_null(native.out);
    assert_non_null(advised.out);
    if (advised.status != native.status)
        fprintf(stderr, "  advised stderr:\n%s\n", advised.err ? advised.err : "");
    assert_int_equal(native.status, cfg.status);
    assert_int_equal(advised.status, native.status);
    if (native.out_len != advised.out_len || memcmp(native.out, advised.out, native.out_len) != 0)
        fprintf(stderr, "  stdout differs: native %zu bytes, advised %zu bytes (%s/*.stdout)\n", native.out_len,
                advised.out_len, cfg.workdir);
    assert_int_equal(native.out_len, advised.out_len);
    assert_memory_equal(native.out, advised.out, native.out_len);
    /* the program's stderr, and nothing else but the advisor's own notes
     * (lines "memres-advise: ...", e.g. the calibration's) */
    size_t el = strip_notes(advised.err, advised.err_len);
    if (native.err_len != el || memcmp(native.err, advised.err, el) != 0)
        fprintf(stderr, "  stderr differs (%s/*.stderr):\n--- native\n%s\n--- advised (notes removed)\n%s\n",
                cfg.workdir, native.err, advised.err);
    assert_int_equal(native.err_len, el);
    assert_memory_equal(native.err, advised.err, el);
}

static void test_json(void **state)
{
    (void)state;
    assert_true(doc_ok);
    assert_int_equal((int)kj_num(kj_get(&doc, "version"), -1), 1);
    assert_non_null(kj_str(kj_get(&doc, "program")));
    static const char *const top[] = {"allocations", "frees", "peak_live_bytes"};
    for (size_t i = 0; i < sizeof top / sizeof *top; i++) {
        if (kj_get(&doc, top[i]) == NULL || kj_get(&doc, top[i])->t != KJ_NUM)
            fprintf(stderr, "  top-level \"%s\" missing or not a number\n", top[i]);
        assert_true(kj_num(kj_get(&doc, top[i]), -1) >= 0);
    }
    const kj *ss = sites();
    assert_non_null(ss);
    assert_true(ss->n > 0);
    static const char *const fields[] = {"id", "frames", "allocations", "bytes", "sizes", "peak_live",
                                         "freed_at_exit", "recommendation", "reason", "predicted_saving_ns"};
    for (size_t i = 0; i < ss->n; i++) {
        const kj *s = &ss->items[i];
        for (size_t k = 0; k < sizeof fields / sizeof *fields; k++) {
            if (kj_get(s, fields[k]) == NULL)
                fprintf(stderr, "  site %zu: no \"%s\"\n", i, fields[k]);
            assert_non_null(kj_get(s, fields[k]));
        }
        const kj *fr = kj_get(s, "frames");
        assert_true(fr->t == KJ_ARR && fr->n > 0);
        for (size_t k = 0; k < fr->n; k++) {
            const kj *f = &fr->items[k];
            assert_non_null(kj_get(f, "function"));
            assert_non_null(kj_get(f, "file"));
            assert_non_null(kj_get(f, "line"));
            assert_non_null(kj_get(f, "module"));
        }
        const char *rec = site_rec(s);
        assert_true(strcmp(rec, "none") == 0 || strcmp(rec, "arena") == 0 || strcmp(rec, "arena-rewind") == 0 ||
                    strcmp(rec, "objpool") == 0 || strcmp(rec, "pools") == 0);
    }
}

/* A figure of timeline point i. */
static double tl_num(const kj *tl, size_t i, const char *key)
{
    return kj_num(kj_get(kj_at(tl, i), key), -1);
}

static void test_timeline(void **state)
{
    (void)state;
    assert_true(doc_ok);
    const kj *tl = kj_get(&doc, "timeline");
    assert_non_null(tl);
    assert_int_equal(tl->t, KJ_ARR);
    size_t n = tl->n, pk = (size_t)kj_num(kj_get(&doc, "timeline_peak"), -1);
    double peak = kj_num(kj_get(&doc, "peak_live_bytes"), -1);
    fprintf(stderr, "  timeline: %zu points, the peak (%.0f bytes) at point %zu: %.0f ns, allocation %.0f\n", n, peak,
            pk, tl_num(tl, pk, "time_ns"), tl_num(tl, pk, "allocations"));
    /* bounded; from the start (all 0) to the end (the figures at exit) */
    assert_true(n >= 2 && n <= MRA_TIMELINE_MAX);
    assert_true(pk < n);
    static const char *const keys[] = {"time_ns", "allocations", "live_bytes", "live_objects"};
    for (size_t k = 0; k < 4; k++)
        assert_true(tl_num(tl, 0, keys[k]) == 0);
    assert_true(tl_num(tl, n - 1, "live_bytes") == kj_num(kj_get(&doc, "live_bytes_at_exit"), -2));
    assert_true(tl_num(tl, n - 1, "live_objects") == kj_num(kj_get(&doc, "live_objects_at_exit"), -2));
    assert_true(tl_num(tl, n - 1, "allocations") >= kj_num(kj_get(&doc, "allocations"), -2));
    assert_true(fabs(tl_num(tl, n - 1, "time_ns") - kj_num(kj_get(&doc, "recorded_time_ns"), -2)) < 1);
    /* in order of time and of allocations; the peak exact, and the highest */
    double top = 0;
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < 4; k++)
            assert_true(tl_num(tl, i, keys[k]) >= 0);
        if (i > 0) {
            if (tl_num(tl, i, "time_ns") < tl_num(tl, i - 1, "time_ns") ||
                tl_num(tl, i, "allocations") < tl_num(tl, i - 1, "allocations"))
                fprintf(stderr, "  point %zu goes back: %.0f ns, allocation %.0f after %.0f ns, %.0f\n", i,
                        tl_num(tl, i, "time_ns"), tl_num(tl, i, "allocations"), tl_num(tl, i - 1, "time_ns"),
                        tl_num(tl, i - 1, "allocations"));
            assert_true(tl_num(tl, i, "time_ns") >= tl_num(tl, i - 1, "time_ns"));
            assert_true(tl_num(tl, i, "allocations") >= tl_num(tl, i - 1, "allocations"));
        }
        if (tl_num(tl, i, "live_bytes") > top)
            top = tl_num(tl, i, "live_bytes");
    }
    assert_true(tl_num(tl, pk, "live_bytes") == peak);
    assert_true(top == peak);
    assert_true(tl_num(tl, pk, "live_objects") <= kj_num(kj_get(&doc, "peak_live_objects"), -1));
    assert_true(tl_num(tl, pk, "live_objects") > 0 || peak == 0);
}

static void test_counts(void **state)
{
    (void)state;
    assert_true(doc_ok);
    const kj *ss = sites();
    assert_non_null(ss);
    long long want = kat_count("SITE");
    assert_true(want >= 0); /* the program printed its count */
    double got = 0;
    size_t n = 0;
    for (size_t i = 0; i < ss->n; i++)
        if (site_at(&ss->items[i], src.site.line)) {
            got += kj_num(kj_get(&ss->items[i], "allocations"), 0);
            n++;
        }
    fprintf(stderr, "  %s:%u: %zu sites, %.0f allocations (the program made %lld)\n", src.base, src.site.line, n,
            got, want);
    assert_true(n > 0);
    if (cfg.sample) /* an estimate: within 10% */
        assert_true(got >= 0.9 * (double)want && got <= 1.1 * (double)want);
    else
        assert_int_equal((long long)got, want);
    if (src.has_also) {
        long long want_also = kat_count("ALSO");
        double got_also = 0;
        for (size_t i = 0; i < ss->n; i++)
            if (site_at(&ss->items[i], src.also.line))
                got_also += kj_num(kj_get(&ss->items[i], "allocations"), 0);
        fprintf(stderr, "  %s:%u (KAT-ALSO): %.0f allocations (the program made %lld)\n", src.base,
                src.also.line, got_also, want_also);
        if (cfg.sample)
            assert_true(got_also >= 0.9 * (double)want_also && got_also <= 1.1 * (double)want_also);
        else
            assert_int_equal((long long)got_also, want_also);
    }
    for (int k = 0; k < src.nforbid; k++)
        for (size_t i = 0; i < ss->n; i++) {
            if (site_at(&ss->items[i], src.forbid[k]))
                fprintf(stderr, "  a site at %s:%u: an allocation of a child or an exec'd image was profiled\n",
                        src.base, src.forbid[k]);
            assert_false(site_at(&ss->items[i], src.forbid[k]));
        }
    /* the whole profile holds at least the site's allocations */
    assert_true(kj_num(kj_get(&doc, "allocations"), 0) >= (double)want);
}

static void test_advice(void **state)
{
    (void)state;
    assert_true(doc_ok);
    const kj *ss = sites();
    assert_non_null(ss);
    const kj *top = NULL;
    for (size_t i = 0; i < ss->n; i++) {
        const kj *s = &ss->items[i];
        if (strcmp(site_rec(s), "none") != 0 && (top == NULL || site_saving(s) > site_saving(top)))
            top = s;
    }
    if (src.site.nrecs == 1 && strcmp(src.site.recs[0], "any") == 0)
        return;
    if (src.site.nrecs == 1 && strcmp(src.site.recs[0], "none") == 0) {
        if (top != NULL) {
            char f[512];
            print_frame0(top, f, sizeof f);
            fprintf(stderr, "  expected no recommendation; %s is recommended %s\n", f, site_rec(top));
        }
        assert_null(top);
        return;
    }
    if (top == NULL)
        fprintf(stderr, "  no site recommended; expected %s:%u -> %s\n", src.base, src.site.line, src.site.recs[0]);
    assert_non_null(top);
    char f[512];
    print_frame0(top, f, sizeof f);
    if (!site_at(top, src.site.line) || !rec_in(site_rec(top), &src.site))
        fprintf(stderr, "  top recommended site: %s -> %s; expected %s:%u -> %s%s%s\n", f, site_rec(top), src.base,
                src.site.line, src.site.recs[0], src.site.nrecs > 1 ? " or " : "",
                src.site.nrecs > 1 ? src.site.recs[1] : "");
    assert_true(site_at(top, src.site.line));
    assert_true(rec_in(site_rec(top), &src.site));
    if (cfg.thread_safe) {
        const kj *ts = kj_get(top, "thread_safe");
        const char *reason = kj_str(kj_get(top, "reason"));
        bool said = (ts != NULL && ts->t == KJ_BOOL && ts->b) ||
                    (ts == NULL && reason != NULL && strstr(reason, "thread-safe") != NULL);
        if (!said)
            fprintf(stderr, "  the site's pools are not thread-safe (\"thread_safe\" %s)\n",
                    ts == NULL ? "missing" : "false");
        assert_true(said);
    }
    /* every site at the KAT line that is recommended says one of the answers */
    for (size_t i = 0; i < ss->n; i++) {
        const kj *s = &ss->items[i];
        if (site_at(s, src.site.line) && strcmp(site_rec(s), "none") != 0)
            assert_true(rec_in(site_rec(s), &src.site));
        if (src.has_also && site_at(s, src.also.line)) {
            if (!rec_in(site_rec(s), &src.also))
                fprintf(stderr, "  KAT-ALSO site %s:%u -> %s\n", src.base, src.also.line, site_rec(s));
            assert_true(rec_in(site_rec(s), &src.also));
        }
    }
}

static bool frame_at(const kj *f, unsigned line)
{
    const char *file = kj_str(kj_get(f, "file"));
    double l = kj_num(kj_get(f, "line"), -1);
    return file != NULL && strcmp(base_name(file), src.base) == 0 && l >= 0 && (unsigned)l == line;
}

static void test_freed(void **state)
{
    (void)state;
    assert_true(doc_ok);
    if (src.free_line == 0)
        return;
    const kj *ss = sites(), *site = NULL;
    assert_non_null(ss);
    for (size_t i = 0; i < ss->n; i++)
        if (site_at(&ss->items[i], src.site.line) &&
            (site == NULL || kj_num(kj_get(&ss->items[i], "allocations"), 0) > kj_num(kj_get(site, "allocations"), 0)))
            site = &ss->items[i];
    assert_non_null(site);
    const kj *freed = kj_get(site, "freed");
    bool found = false;
    for (size_t k = 0; freed && k < freed->n && !found; k++) {
        const kj *fr = kj_get(&freed->items[k], "frames");
        for (size_t j = 0; fr && j < fr->n && !found; j++)
            found = frame_at(&fr->items[j], src.free_line);
    }
    if (!found)
        fprintf(stderr, "  no freed stack of %s:%u has a frame at %s:%u (KAT-FREE)\n", src.base, src.site.line,
                src.base, src.free_line);
    assert_true(found);
    const char *change = kj_str(kj_get(site, "change"));
    char want[300];
    snprintf(want, sizeof want, "%s:%u", src.base, src.free_line);
    if (change == NULL || strstr(change, want) == NULL)
        fprintf(stderr, "  the change does not name %s: %s\n", want, change ? change : "(none)");
    assert_true(change != NULL && strstr(change, want) != NULL);
}

static void test_rules(void **state)
{
    (void)state;
    assert_true(doc_ok);
    const kj *ss = sites();
    assert_non_null(ss);
    double prog = program_ns();
    if (prog <= 0)
        fprintf(stderr, "  the JSON states no program time: the 2%% rule is not checked\n");
    /* the rule's share as the run had it (the known-answer tests lower it:
     * CMakeLists.txt) */
    double share = kj_num(kj_get(kj_get(&doc, "thresholds"), "min_share"), 0.02);
    for (size_t i = 0; i < ss->n; i++) {
        const kj *s = &ss->items[i];
        const char *reason = kj_str(kj_get(s, "reason"));
        assert_non_null(reason);
        assert_true(reason[0] != '\0');
        double save = site_saving(s);
        assert_true(save >= 0);
        if (strcmp(site_rec(s), "none") == 0) {
            assert_true(save == 0);
            continue;
        }
        assert_true(save > 0);
        if (prog > 0) {
            if (save < share * prog)
                fprintf(stderr, "  site %zu recommended with %.3f ms saved, under %g%% of %.3f ms\n", i, save / 1e6,
                        100 * share, prog / 1e6);
            assert_true(save >= share * prog);
        }
    }
}

static void test_report(void **state)
{
    (void)state;
    assert_true(doc_ok);
    size_t len = 0;
    char *text = kj_read_file(report_file, &len);
    if (text == NULL)
        fprintf(stderr, "  no text report at %s\n", report_file);
    assert_non_null(text);
    assert_true(len > 0);
    free(text);
    assert_true(kj_num(kj_get(&doc, "allocations"), 0) > 0);
    const kj *ss = sites();
    assert_non_null(ss);
    assert_true(ss->n > 0);
    /* at least one frame is named (symbols resolved in some module) */
    bool named = false;
    for (size_t i = 0; i < ss->n && !named; i++) {
        const kj *fr = kj_get(&ss->items[i], "frames");
        for (size_t k = 0; fr && k < fr->n && !named; k++)
            named = kj_str(kj_get(&fr->items[k], "function")) != NULL;
    }
    assert_true(named);
    if (cfg.svg) {
        char *svg = kj_read_file(svg_file, &len);
        if (svg == NULL)
            fprintf(stderr, "  no SVG at %s\n", svg_file);
        assert_non_null(svg);
        assert_non_null(strstr(svg, "<svg"));
        assert_non_null(strstr(svg, "</svg>"));
        assert_null(strstr(svg, "<script"));
        free(svg);
    }
}

/* ---- query mode ---- */

/* What the site would save in ns whatever the 2% rule says: its
 * predicted saving, or for a site judged none the figure its reason
 * states ("but it saves X ms", "X ms lost"); 0 when it states none. */
static double would_save(const kj *s)
{
    if (site_saving(s) > 0)
        return site_saving(s);
    const char *r = kj_str(kj_get(s, "reason"));
    const char *p = r ? strstr(r, "saves ") : NULL;
    if (p != NULL)
        return strtod(p + 6, NULL) * 1e6;
    p = r ? strstr(r, " ms lost") : NULL;
    if (p != NULL) {
        const char *q = p;
        while (q > r && (q[-1] == '.' || (q[-1] >= '0' && q[-1] <= '9')))
            q--;
        return -strtod(q, NULL) * 1e6;
    }
    return 0;
}

static int query(void)
{
    if (load_json(cfg.json_path) != 0 || read_source(cfg.source) != 0)
        return 1;
    const mark *m = cfg.tag && strcmp(cfg.tag, "ALSO") == 0 ? &src.also : &src.site;
    const kj *ss = sites();
    double save = 0, would = 0, allocs = 0, best = -1;
    const char *rec = "absent";
    for (size_t i = 0; ss && i < ss->n; i++) {
        const kj *s = &ss->items[i];
        if (!site_at(s, m->line))
            continue;
        save += site_saving(s);
        would += would_save(s);
        allocs += kj_num(kj_get(s, "allocations"), 0);
        if (site_saving(s) > best) {
            best = site_saving(s);
            rec = site_rec(s);
        }
    }
    printf("%.0f %s %.0f %.0f %.0f\n", save, rec, program_ns(), allocs, would);
    kj_free(&doc);
    return 0;
}

/* ---- main ---- */

static int usage(void)
{
    fputs("usage: kat_check kat|real|query [options] [-- PROGRAM ARGS...]\n", stderr);
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage();
    cfg.mode = argv[1];
    int i = 2;
    for (; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (strcmp(a, "--thread-safe") == 0) {
            cfg.thread_safe = true;
            continue;
        }
        if (strcmp(a, "--svg") == 0) {
            cfg.svg = true;
            continue;
        }
        if (v == NULL)
            return usage();
        if (strcmp(a, "--advisor") == 0)
            cfg.advisor = v;
        else if (strcmp(a, "--source") == 0)
            cfg.source = v;
        else if (strcmp(a, "--workdir") == 0)
            cfg.workdir = v;
        else if (strcmp(a, "--stdin") == 0)
            cfg.stdin_path = v;
        else if (strcmp(a, "--json") == 0)
            cfg.json_path = v;
        else if (strcmp(a, "--tag") == 0)
            cfg.tag = v;
        else if (strcmp(a, "--status") == 0)
            cfg.status = atoi(v);
        else if (strcmp(a, "--depth") == 0)
            cfg.depth = atoi(v);
        else if (strcmp(a, "--sample") == 0)
            cfg.sample = v;
        else
            return usage();
        i++;
    }
    cfg.prog = argv + i;
    cfg.nprog = argc - i;

    if (strcmp(cfg.mode, "query") == 0)
        return cfg.json_path && cfg.source ? query() : usage();
    if (cfg.nprog < 1 || cfg.advisor == NULL || cfg.workdir == NULL)
        return usage();

    if (strcmp(cfg.mode, "real") == 0) {
        /* skipped when the program is not installed */
        if (strchr(cfg.prog[0], '/') ? access(cfg.prog[0], X_OK) != 0 : 0) {
            fprintf(stderr, "kat_check: %s not found: skipped\n", cfg.prog[0]);
            return 77;
        }
        if (strchr(cfg.prog[0], '/') == NULL) {
            const char *path = getenv("PATH");
            bool found = false;
            char buf[4096];
            for (const char *p = path ? path : "/usr/bin:/bin"; *p && !found;) {
                size_t n = strcspn(p, ":");
                snprintf(buf, sizeof buf, "%.*s/%s", (int)n, p, cfg.prog[0]);
                found = access(buf, X_OK) == 0;
                p += n + (p[n] == ':');
            }
            if (!found) {
                fprintf(stderr, "kat_check: %s not found in PATH: skipped\n", cfg.prog[0]);
                return 77;
            }
        }
        if (cfg.stdin_path && access(cfg.stdin_path, R_OK) != 0) {
            fprintf(stderr, "kat_check: %s not readable: skipped\n", cfg.stdin_path);
            return 77;
        }
        cfg.status = -1; /* whatever it is natively */
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_report),
            cmocka_unit_test(test_json),
            cmocka_unit_test(test_timeline),
        };
        /* passthrough with the native status as the expected one */
        int rc = cmocka_run_group_tests_name("real", tests, setup_runs, NULL);
        cfg.status = native.status;
        const struct CMUnitTest pt[] = {cmocka_unit_test(test_passthrough)};
        rc += cmocka_run_group_tests_name("real passthrough", pt, NULL, teardown_runs);
        return rc != 0;
    }
    if (strcmp(cfg.mode, "kat") != 0 || cfg.source == NULL)
        return usage();
    if (read_source(cfg.source) != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_passthrough), cmocka_unit_test(test_json),  cmocka_unit_test(test_counts),
        cmocka_unit_test(test_advice),      cmocka_unit_test(test_rules), cmocka_unit_test(test_report),
        cmocka_unit_test(test_freed),       cmocka_unit_test(test_timeline),
    };
    return cmocka_run_group_tests_name(base_name(cfg.prog[0]), tests, setup_runs, teardown_runs) != 0;
}
