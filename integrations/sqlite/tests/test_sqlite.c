/* SPDX-License-Identifier: MIT */
/* integrations/sqlite/tests/test_sqlite.c -- SQLite on memres
 * (memres/sqlite.h), as named cmocka cases.
 *
 * test_sqlite WORKLOAD.sql DIR
 *   The workload (size 1000) on a :memory: and on a file database in DIR
 *   gives the rows of SQLite's own allocator on every install: a pool from
 *   mr_sqlite_pools_create behind the integration's lock, a thread-safe
 *   one (no lock of ours), one whose classes stop at 512 bytes (SQLite's
 *   big blocks go upstream), then mr_sqlite_install_singlethread (last:
 *   SQLite keeps that mode to the end of the process).  After
 *   sqlite3_close sqlite3_memory_used() is 0, after sqlite3_shutdown the
 *   pool holds no live block, after mr_pools_destroy nothing is
 *   outstanding upstream (a tracking adaptor).  Two threads with a
 *   connection each; SQLite's big blocks at their exact sizes (memory
 *   statistics on and off); four threads racing big and small sizes with
 *   SQLite taking no lock of its own (statistics off); the misuse answers.
 * test_sqlite --sweep WORKLOAD.sql
 *   The fault sweeps: for N = 1, 2, ... the pool's Nth upstream request
 *   fails (mr_failing); the workload (size 60) runs statement by statement
 *   and the first statement that fails must fail with SQLITE_NOMEM, the
 *   connection must then answer a query, and a new connection must run the
 *   whole workload to the rows of a run without failures; then blocks of
 *   the exact sizes under failures (once, and from the Nth on).  Nothing
 *   leaks at any N; a sweep ends at the first N that injects nothing.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "memres/adaptors.h"
#include "memres/sqlite.h"

#define ITEST_NAME "test_sqlite"
#include "itest.h"

static const char *sql_path, *db_dir;
static char *sql;              /* the workload */
static text stock_mem, stock_disk; /* its rows on SQLite's own allocator */

static int row(void *arg, int ncol, char **vals, char **names)
{
    (void)names;
    text *t = arg;
    for (int i = 0; i < ncol; i++) {
        if (i > 0)
            text_puts(t, "|");
        text_puts(t, vals[i] != NULL ? vals[i] : "NULL");
    }
    text_puts(t, "\n");
    return 0;
}

/* Opens name, runs the workload at size n, closes.  The rows go to out. */
static void workload(const char *name, int n, text *out)
{
    sqlite3 *db = NULL;
    int rc = sqlite3_open(name, &db);
    char params[128], *err = NULL;
    snprintf(params, sizeof params, "CREATE TABLE params(n INTEGER); INSERT INTO params VALUES(%d);", n);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db, params, NULL, NULL, &err);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db, sql, row, out, &err);
    CHECK(rc == SQLITE_OK, "%s: workload failed: %d %s", name, rc, err ? err : sqlite3_errmsg(db));
    sqlite3_free(err);
    CHECK(sqlite3_close(db) == SQLITE_OK, "%s: close", name);
}

/* The workload's size: 1000, or MEMRES_SQLITE_SIZE. */
static int size(void)
{
    const char *e = getenv("MEMRES_SQLITE_SIZE");
    return e != NULL && atoi(e) > 0 ? atoi(e) : 1000;
}

static void both(text *mem, text *disk)
{
    char file[4096];
    snprintf(file, sizeof file, "%s/test_sqlite.db", db_dir);
    remove(file);
    workload(":memory:", size(), mem);
    workload(file, size(), disk);
    remove(file);
}

/* ---- the pool stacks: a pool for SQLite on a tracking adaptor ---- */

/* The installs, in the order the cases run them. */
enum mode { LOCKED, THREAD_SAFE, SMALL, SINGLE, MODES };
static const char *const mode_names[MODES] = {"locked", "thread-safe pool", "classes up to 512 bytes",
                                             "single-thread"};

typedef struct stack {
    mr_tracking *tr;
    mr_pools *p;
} stack;

/* The pool of mode m on a tracking adaptor on under; s.p NULL when it could
 * not be created (a sweep's first failure point). */
static stack stack_try(mr_resource *under, enum mode m)
{
    stack s;
    s.tr = mr_tracking_create(under);
    assert_non_null(s.tr);
    mr_pools_options po = {.upstream = mr_tracking_resource(s.tr),
                           .largest_required_pool_block = m == SMALL ? 512 : 0,
                           .thread_safe = m == THREAD_SAFE};
    s.p = mr_sqlite_pools_create(&po);
    return s;
}

static int install(enum mode m, mr_pools *p) { return m == SINGLE ? mr_sqlite_install_singlethread(p) : mr_sqlite_install(p); }

/* A pool of mode m installed, SQLite initialised. */
static stack stack_up(enum mode m)
{
    stack s = stack_try(NULL, m);
    assert_non_null(s.p);
    assert_int_equal(install(m, s.p), SQLITE_OK);
    assert_int_equal(sqlite3_initialize(), SQLITE_OK);
    return s;
}

/* After sqlite3_shutdown: nothing live in the pool, nothing upstream. */
static void stack_done(stack s, const char *what)
{
    mr_stats st;
    mr_pools_stats(s.p, &st);
    CHECK(st.in_use == 0, "%s: %zu bytes live in the pool after sqlite3_shutdown", what, st.in_use);
    CHECK(mr_pools_check(s.p), "%s: mr_pools_check", what);
    mr_pools_destroy(s.p);
    CHECK(mr_tracking_outstanding(s.tr) == 0, "%s: upstream blocks outstanding", what);
    mr_tracking_destroy(s.tr);
}

static void stack_down(stack s, const char *what)
{
    assert_int_equal(sqlite3_shutdown(), SQLITE_OK);
    stack_done(s, what);
}

static size_t pool_in_use(mr_pools *p)
{
    mr_stats st;
    mr_pools_stats(p, &st);
    return st.in_use;
}

static void fill(void *p, size_t n, unsigned seed)
{
    unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        c[i] = (unsigned char)(seed + i * 31u);
}

static bool filled(const void *p, size_t n, unsigned seed)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        if (c[i] != (unsigned char)(seed + i * 31u))
            return false;
    return true;
}

/* ---- rows identical to SQLite's allocator ---- */

static void *thread_main(void *arg)
{
    workload(":memory:", 200, arg);
    return NULL;
}

static void test_rows(void **state)
{
    enum mode m = *(enum mode *)*state;
    stack s = stack_up(m);
    assert_int_equal(mr_sqlite_install(s.p), SQLITE_MISUSE); /* while initialised */
    text mem = {0}, disk = {0};
    both(&mem, &disk);
    CHECK(strcmp(mem.s, stock_mem.s) == 0, "%s, :memory:: rows differ\n--- stock:\n%s--- memres:\n%s",
          mode_names[m], stock_mem.s, mem.s);
    CHECK(strcmp(disk.s, stock_disk.s) == 0, "%s, file: rows differ", mode_names[m]);
    CHECK(sqlite3_memory_used() == 0, "%s: sqlite3_memory_used() = %lld after close", mode_names[m],
          (long long)sqlite3_memory_used());
    if (m != SINGLE) { /* two threads, a connection each */
        text out[2] = {{0}, {0}};
        pthread_t t[2];
        for (int i = 0; i < 2; i++)
            assert_int_equal(pthread_create(&t[i], NULL, thread_main, &out[i]), 0);
        for (int i = 0; i < 2; i++)
            pthread_join(t[i], NULL);
        CHECK(out[0].n > 100 && strcmp(out[0].s, out[1].s) == 0, "%s: the threads' rows differ", mode_names[m]);
        free(out[0].s);
        free(out[1].s);
    }
    mr_stats st;
    mr_pools_stats(s.p, &st);
    printf("%s: rows identical to SQLite's allocator (:memory: and file, %zu bytes of rows); "
           "peak %zu bytes held, %zu allocations\n",
           mode_names[m], mem.n, st.peak_held, st.allocations);
    free(mem.s);
    free(disk.s);
    stack_down(s, mode_names[m]);
}

/* ---- SQLite's big blocks at their exact sizes ---- */

/* k blocks of n bytes, each filled to its xSize (want); what they take of
 * the pool must be less than k blocks of class cls would. */
static size_t big_blocks(mr_pools *p, void **b, int k, int n, int want, size_t cls, const char *what)
{
    size_t before = pool_in_use(p);
    int bad = 0;
    for (int i = 0; i < k; i++) {
        b[i] = sqlite3_malloc(n);
        if (b[i] == NULL || sqlite3_msize(b[i]) != (sqlite3_uint64)want) {
            bad++;
            continue;
        }
        fill(b[i], (size_t)want, (unsigned)i);
    }
    size_t used = pool_in_use(p) - before;
    CHECK(bad == 0, "%s: %d of %d sqlite3_malloc(%d) NULL or not of xSize %d", what, bad, k, n, want);
    CHECK(used <= (size_t)k * (size_t)(want + 8 + 15) / 16 * 16 && used < (size_t)k * cls,
          "%s: %d blocks of %d take %zu bytes of the pool (class %zu: %zu)", what, k, n, used, cls, (size_t)k * cls);
    return used;
}

struct exact_case {
    enum mode m;
    bool memstatus;
};

static void test_exact_sizes(void **state)
{
    const struct exact_case *c = *state;
    char what[160];
    snprintf(what, sizeof what, "%s, memory statistics %s", mode_names[c->m], c->memstatus ? "on" : "off");
    assert_int_equal(sqlite3_config(SQLITE_CONFIG_MEMSTATUS, (int)c->memstatus), SQLITE_OK);
    stack s = stack_up(c->m);
    size_t base = pool_in_use(s.p);
    enum { K = 3000, P = 3000 };
    void **j = malloc(K * sizeof *j), **pg = malloc(P * sizeof *pg);
    assert_true(j != NULL && pg != NULL);
    /* a journal chunk: xRoundup(1024) = 1040 - 8, what SQLite asks for
     * (and xSize says) with statistics on; off, xMalloc gets 1024, and the
     * block is 1040 all the same */
    size_t uj = big_blocks(s.p, j, K, 1024, c->memstatus ? 1032 : 1024, 1152, what);
    size_t up = big_blocks(s.p, pg, P, 4360, 4360, 4608, what); /* a page with its header */
    /* realloc within an exact size keeps the block; else it moves with its
     * bytes */
    void *r = j[K - 1], *q = r != NULL ? sqlite3_realloc(r, 1020) : NULL;
    CHECK(q != NULL && q == r && sqlite3_msize(q) == 1032, "%s: realloc(1024 -> 1020) moved or is %llu bytes", what,
          (unsigned long long)sqlite3_msize(q));
    const unsigned seed = K - 1;
    static const int steps[] = {3000, 100, 4360, 4200, 1024};
    int kept = 1020;
    for (size_t i = 0; q != NULL && i < sizeof steps / sizeof steps[0]; i++) {
        q = sqlite3_realloc(q, steps[i]);
        CHECK(q != NULL && sqlite3_msize(q) >= (sqlite3_uint64)steps[i] && filled(q, (size_t)kept < 100 ? (size_t)kept : 100, seed),
              "%s: realloc(-> %d)", what, steps[i]);
        kept = steps[i] < kept ? steps[i] : kept;
    }
    if (q != NULL)
        fill(q, 1024, seed);
    j[K - 1] = q;
    for (int i = 0; i < K; i++)
        CHECK(j[i] == NULL || filled(j[i], 1024, (unsigned)i), "%s: block %d of 1024 changed", what, i);
    for (int i = 0; i < P; i++)
        CHECK(pg[i] == NULL || filled(pg[i], 4360, (unsigned)i), "%s: block %d of 4360 changed", what, i);
    for (int i = 0; i < K; i++)
        sqlite3_free(j[i]);
    for (int i = 0; i < P; i++)
        sqlite3_free(pg[i]);
    CHECK(pool_in_use(s.p) == base, "%s: %zu bytes still in use after every block went", what,
          pool_in_use(s.p) - base);
    printf("%s: %d x 1024 bytes take %zu bytes of the pool (%.0f a block), %d x 4360 take %zu (%.0f)\n", what, K, uj,
           (double)uj / K, P, up, (double)up / P);
    free(j);
    free(pg);
    stack_down(s, what);
    assert_int_equal(sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 1), SQLITE_OK);
}

/* ---- threads racing, SQLite taking no lock of its own ---- */

/* Two sets of 8 sizes the threads cycle through: big ones (the exact sizes
 * and their neighbours) and small ones (on the locked install, many short
 * turns of the lock: contended, with threads that spin and sleep on it). */
static const int race_big[8] = {1024, 1160, 2056, 2400, 3100, 4096, 4360, 5200};
static const int race_small[8] = {8, 24, 40, 100, 200, 360, 700, 1000};
enum { RACE_THREADS = 4, RACE_BLOCKS = 240 };

typedef struct racer {
    unsigned id;
    const int *sizes; /* 8 of them */
    int rounds;
    void *keep[RACE_BLOCKS]; /* the last round's blocks, freed by the main thread */
    int kept[RACE_BLOCKS];
    int bad; /* no cmocka assertion in a thread: counted */
} racer;

static void *race_main(void *arg)
{
    racer *x = arg;
    void *b[RACE_BLOCKS];
    int n[RACE_BLOCKS];
    for (int r = 0; r < x->rounds; r++) {
        for (int i = 0; i < RACE_BLOCKS; i++) {
            n[i] = x->sizes[(unsigned)i % 8];
            b[i] = sqlite3_malloc(n[i]);
            if (b[i] == NULL) {
                x->bad++;
                n[i] = 0;
                continue;
            }
            fill(b[i], (size_t)n[i], x->id * 7919u + (unsigned)i);
        }
        for (int i = 0; i < RACE_BLOCKS; i += 5) { /* resize some to another size */
            if (b[i] == NULL)
                continue;
            int nn = x->sizes[(unsigned)(i + r + 1) % 8];
            void *q = sqlite3_realloc(b[i], nn);
            if (q == NULL) {
                x->bad++;
                continue;
            }
            if (!filled(q, (size_t)(n[i] < nn ? n[i] : nn), x->id * 7919u + (unsigned)i))
                x->bad++;
            b[i] = q;
            n[i] = nn;
            fill(q, (size_t)nn, x->id * 7919u + (unsigned)i);
        }
        for (int i = 0; i < RACE_BLOCKS; i++) {
            if (b[i] != NULL && !filled(b[i], (size_t)n[i], x->id * 7919u + (unsigned)i))
                x->bad++;
            if (r + 1 < x->rounds) {
                sqlite3_free(b[i]);
            } else {
                x->keep[i] = b[i];
                x->kept[i] = n[i];
            }
        }
    }
    return NULL;
}

struct race_case {
    enum mode m;
    bool big;
};

static void test_threads_race(void **state)
{
    const struct race_case *c = *state;
    char what[160];
    snprintf(what, sizeof what, "%s, %s sizes, %d threads", mode_names[c->m], c->big ? "big" : "small", RACE_THREADS);
    assert_int_equal(sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0), SQLITE_OK); /* no mutex of SQLite's */
    stack s = stack_up(c->m);
    static racer args[RACE_THREADS];
    pthread_t t[RACE_THREADS];
    for (unsigned i = 0; i < RACE_THREADS; i++) {
        args[i] = (racer){.id = i, .sizes = c->big ? race_big : race_small, .rounds = c->big ? 12 : 150};
        assert_int_equal(pthread_create(&t[i], NULL, race_main, &args[i]), 0);
    }
    for (unsigned i = 0; i < RACE_THREADS; i++)
        pthread_join(t[i], NULL);
    int bad = 0;
    for (unsigned i = 0; i < RACE_THREADS; i++) { /* each thread's blocks, freed here */
        bad += args[i].bad;
        for (int k = 0; k < RACE_BLOCKS; k++) {
            if (args[i].keep[k] != NULL && !filled(args[i].keep[k], (size_t)args[i].kept[k], i * 7919u + (unsigned)k))
                bad++;
            sqlite3_free(args[i].keep[k]);
        }
    }
    CHECK(bad == 0, "%s: %d blocks NULL or changed", what, bad);
    CHECK(mr_pools_check(s.p), "%s: mr_pools_check", what);
    stack_down(s, what);
    assert_int_equal(sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 1), SQLITE_OK);
}

/* ---- the options, and misuse ---- */

static void test_pools_create(void **state)
{
    (void)state;
    /* SQLite's two exact sizes, whatever else the options say */
    mr_pools *p = mr_sqlite_pools_create(NULL);
    assert_non_null(p);
    mr_pools_options o;
    mr_pools_get_options(p, &o);
    assert_int_equal(o.exact_count, 2);
    assert_int_equal(o.exact_sizes[0], 1040);
    assert_true(o.exact_sizes[1] > 4096 + MR_SQLITE_HEADER);
    mr_pools_destroy(p);
    p = mr_sqlite_pools_create(&(mr_pools_options){.thread_safe = true});
    assert_non_null(p);
    mr_pools_get_options(p, &o);
    assert_true(o.thread_safe);
    assert_int_equal(o.exact_count, 2);
    mr_pools_destroy(p);
    /* the caller's own exact sizes win; a pool that does not pool them has none */
    p = mr_sqlite_pools_create(&(mr_pools_options){.exact_sizes = (const size_t[]){2000}, .exact_count = 1});
    assert_non_null(p);
    mr_pools_get_options(p, &o);
    assert_int_equal(o.exact_count, 1);
    assert_int_equal(o.exact_sizes[0], 2000);
    mr_pools_destroy(p);
    p = mr_sqlite_pools_create(&(mr_pools_options){.largest_required_pool_block = 512});
    assert_non_null(p);
    mr_pools_get_options(p, &o);
    assert_int_equal(o.exact_count, 0);
    mr_pools_destroy(p);
}

static void test_misuse(void **state)
{
    (void)state;
    assert_int_equal(mr_sqlite_install(NULL), SQLITE_MISUSE);
    assert_int_equal(mr_sqlite_install_singlethread(NULL), SQLITE_MISUSE);
}

static void test_uninstall(void **state)
{
    (void)state;
    assert_int_equal(mr_sqlite_uninstall(), SQLITE_OK);
    assert_int_equal(mr_sqlite_uninstall(), SQLITE_MISUSE);
    /* SQLite's own allocator again: the workload runs */
    text mem = {0};
    workload(":memory:", 50, &mem);
    assert_true(mem.n > 0);
    free(mem.s);
    assert_int_equal(sqlite3_shutdown(), SQLITE_OK);
}

/* ---- the fault sweeps ---- */

/* Runs the statements of sql one by one on db; a failed one must say
 * SQLITE_NOMEM, and db must then answer a query. */
static unsigned long sweep_statements(sqlite3 *db, unsigned long n)
{
    unsigned long nomem = 0;
    const char *tail = sql;
    while (*tail != '\0') {
        sqlite3_stmt *st = NULL;
        const char *next = NULL;
        int rc = sqlite3_prepare_v2(db, tail, -1, &st, &next);
        if (rc == SQLITE_OK && st == NULL)
            break; /* only whitespace or comments left */
        while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW)
            rc = SQLITE_OK;
        if (rc == SQLITE_DONE)
            rc = SQLITE_OK;
        sqlite3_finalize(st);
        if (rc != SQLITE_OK) {
            nomem++;
            CHECK(rc == SQLITE_NOMEM || sqlite3_errcode(db) == SQLITE_NOMEM, "N=%lu: error %d (%s), not SQLITE_NOMEM",
                  n, rc, sqlite3_errmsg(db));
            if (!sqlite3_get_autocommit(db))
                sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
            text t = {0};
            rc = sqlite3_exec(db, "SELECT count(*) FROM sqlite_schema", row, &t, NULL);
            CHECK(rc == SQLITE_OK && t.n > 0, "N=%lu: the connection is not usable after SQLITE_NOMEM (%d)", n, rc);
            free(t.s);
            break; /* what follows would fail for want of what failed */
        }
        if (next == NULL || next == tail)
            break;
        tail = next;
    }
    return nomem;
}

static void test_fault_sweep(void **state)
{
    (void)state;
    text ref = {0};
    workload(":memory:", 60, &ref); /* SQLite's allocator, no failure */
    assert_int_equal(sqlite3_shutdown(), SQLITE_OK);
    unsigned long n, nomem = 0, noopen = 0;
    for (n = 1;; n++) {
        mr_failing_options fo = {.fail_at = n};
        mr_failing *fl = mr_failing_create(&fo);
        stack s = stack_try(mr_failing_resource(fl), LOCKED);
        if (s.p == NULL) { /* the pool's header was the request that failed */
            CHECK(mr_tracking_outstanding(s.tr) == 0, "N=%lu: a failed create left blocks", n);
            mr_tracking_destroy(s.tr);
            mr_failing_destroy(fl);
            noopen++;
            continue;
        }
        assert_int_equal(mr_sqlite_install(s.p), SQLITE_OK);
        sqlite3 *db = NULL;
        int rc = sqlite3_initialize();
        if (rc == SQLITE_OK)
            rc = sqlite3_open(":memory:", &db);
        if (rc != SQLITE_OK) {
            CHECK(rc == SQLITE_NOMEM, "N=%lu: initialize/open: %d, not SQLITE_NOMEM", n, rc);
            noopen++;
        } else {
            rc = sqlite3_exec(db, "CREATE TABLE params(n INTEGER); INSERT INTO params VALUES(60);", NULL, NULL, NULL);
            if (rc != SQLITE_OK) {
                CHECK(rc == SQLITE_NOMEM, "N=%lu: params: %d", n, rc);
                nomem++;
                rc = sqlite3_exec(db, "CREATE TABLE IF NOT EXISTS params(n INTEGER); DELETE FROM params;"
                                      "INSERT INTO params VALUES(60);", NULL, NULL, NULL);
                CHECK(rc == SQLITE_OK, "N=%lu: not usable after SQLITE_NOMEM", n);
            }
            nomem += sweep_statements(db, n);
        }
        CHECK(sqlite3_close(db) == SQLITE_OK, "N=%lu: close", n);
        if (mr_failing_failures(fl) > 0 && sqlite3_initialize() == SQLITE_OK) { /* spent: a full run */
            text again = {0};
            workload(":memory:", 60, &again);
            CHECK(again.s != NULL && strcmp(again.s, ref.s) == 0, "N=%lu: the run after the failure differs", n);
            free(again.s);
        }
        CHECK(sqlite3_memory_used() == 0, "N=%lu: sqlite3_memory_used() = %lld after close", n,
              (long long)sqlite3_memory_used());
        stack_down(s, "sweep");
        unsigned long injected = mr_failing_failures(fl);
        mr_failing_destroy(fl);
        if (injected == 0)
            break;
    }
    printf("%s: fault sweep: %lu failure points (%lu statements failed with SQLITE_NOMEM, "
           "%lu opens failed), every time usable after\n",
           sql_path, n - 1, nomem, noopen);
    assert_true(n > 10 && nomem > 0);
    free(ref.s);
}

/* Blocks of the exact sizes under failures: the Nth upstream request fails
 * (and, persistent, every one after); a block is whole or NULL, nothing
 * leaks. */
static void test_fault_sweep_exact(void **state)
{
    const bool persistent = *(const bool *)*state;
    enum { J = 400, P = 200 };
    static void *b[J + P];
    unsigned long n, nulls = 0;
    for (n = 1;; n++) {
        mr_failing_options fo = {.fail_at = n, .persistent = persistent};
        mr_failing *fl = mr_failing_create(&fo);
        stack s = stack_try(mr_failing_resource(fl), LOCKED);
        if (s.p == NULL) {
            mr_tracking_destroy(s.tr);
            mr_failing_destroy(fl);
            continue;
        }
        assert_int_equal(mr_sqlite_install(s.p), SQLITE_OK);
        if (sqlite3_initialize() == SQLITE_OK) {
            for (int i = 0; i < J + P; i++) {
                int sz = i < J ? 1024 : 4360;
                b[i] = sqlite3_malloc(sz);
                if (b[i] == NULL) {
                    nulls++;
                    continue;
                }
                CHECK(sqlite3_msize(b[i]) >= (sqlite3_uint64)sz, "N=%lu: a block of %d has %llu bytes", n, sz,
                      (unsigned long long)sqlite3_msize(b[i]));
                fill(b[i], (size_t)sz, (unsigned)i);
            }
            for (int i = 0; i < J + P; i++) {
                CHECK(b[i] == NULL || filled(b[i], i < J ? 1024 : 4360, (unsigned)i), "N=%lu: block %d changed", n, i);
                sqlite3_free(b[i]);
            }
        }
        stack_down(s, "exact sweep");
        unsigned long injected = mr_failing_failures(fl);
        mr_failing_destroy(fl);
        if (injected == 0)
            break;
    }
    printf("exact sizes' fault sweep (%s): %lu failure points, %lu blocks NULL, nothing lost\n",
           persistent ? "persistent" : "once", n - 1, nulls);
    assert_true(n > 10);
}

/* ---- the groups ---- */

static enum mode modes[MODES] = {LOCKED, THREAD_SAFE, SMALL, SINGLE};
static const struct exact_case exact_cases[] = {
    {LOCKED, true}, {LOCKED, false}, {THREAD_SAFE, true}, {THREAD_SAFE, false}, {SINGLE, true}, {SINGLE, false}};
static const struct race_case race_cases[] = {{LOCKED, true}, {THREAD_SAFE, true}, {LOCKED, false},
                                              {THREAD_SAFE, false}, {SMALL, false}};
static const bool once = false, persistent = true;

#define CASE(name, f, st) {name, f, NULL, NULL, (void *)(st)}

/* SQLite's own allocator's rows, before any install. */
static int stock_rows(void **state)
{
    (void)state;
    both(&stock_mem, &stock_disk);
    if (stock_mem.n < 300 || strcmp(stock_mem.s, stock_disk.s) != 0 || sqlite3_shutdown() != SQLITE_OK) {
        fputs("test_sqlite: SQLite's own allocator: :memory: and file results differ\n", stderr);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--sweep") == 0) {
        sql_path = argv[2];
        sql = read_file(sql_path, NULL);
        const struct CMUnitTest sweeps[] = {
            cmocka_unit_test(test_fault_sweep),
            CASE("test_fault_sweep_exact (once)", test_fault_sweep_exact, &once),
            CASE("test_fault_sweep_exact (persistent)", test_fault_sweep_exact, &persistent),
        };
        int rc = cmocka_run_group_tests_name("sqlite fault sweeps", sweeps, NULL, NULL);
        free(sql);
        return rc;
    }
    if (argc != 3) {
        fputs("usage: test_sqlite WORKLOAD.sql DIR | --sweep WORKLOAD.sql\n", stderr);
        return 2;
    }
    sql_path = argv[1];
    db_dir = argv[2];
    sql = read_file(sql_path, NULL);
    /* in this order: the single-thread mode lasts to the end of the process */
    const struct CMUnitTest cases[] = {
        cmocka_unit_test(test_pools_create),
        cmocka_unit_test(test_misuse),
        CASE("test_rows (locked)", test_rows, &modes[LOCKED]),
        CASE("test_rows (thread-safe pool)", test_rows, &modes[THREAD_SAFE]),
        CASE("test_rows (classes up to 512 bytes)", test_rows, &modes[SMALL]),
        CASE("test_exact_sizes (locked, statistics on)", test_exact_sizes, &exact_cases[0]),
        CASE("test_exact_sizes (locked, statistics off)", test_exact_sizes, &exact_cases[1]),
        CASE("test_exact_sizes (thread-safe pool, statistics on)", test_exact_sizes, &exact_cases[2]),
        CASE("test_exact_sizes (thread-safe pool, statistics off)", test_exact_sizes, &exact_cases[3]),
        CASE("test_threads_race (locked, big sizes)", test_threads_race, &race_cases[0]),
        CASE("test_threads_race (thread-safe pool, big sizes)", test_threads_race, &race_cases[1]),
        CASE("test_threads_race (locked, small sizes)", test_threads_race, &race_cases[2]),
        CASE("test_threads_race (thread-safe pool, small sizes)", test_threads_race, &race_cases[3]),
        CASE("test_threads_race (classes up to 512 bytes, small sizes)", test_threads_race, &race_cases[4]),
        CASE("test_rows (single-thread)", test_rows, &modes[SINGLE]),
        CASE("test_exact_sizes (single-thread, statistics on)", test_exact_sizes, &exact_cases[4]),
        CASE("test_exact_sizes (single-thread, statistics off)", test_exact_sizes, &exact_cases[5]),
        cmocka_unit_test(test_uninstall),
    };
    int rc = cmocka_run_group_tests_name("sqlite on memres", cases, stock_rows, NULL);
    free(sql);
    free(stock_mem.s);
    free(stock_disk.s);
    return rc;
}
