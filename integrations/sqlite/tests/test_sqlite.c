/* SPDX-License-Identifier: MIT */
/* integrations/sqlite/tests/test_sqlite.c -- SQLite on memres
 * (memres/sqlite.h).
 *
 * test_sqlite WORKLOAD.sql DIR
 *   Runs the workload (size 1000) on a :memory: database and on a file
 *   database in DIR, first with SQLite's own allocator, then on memres
 *   pools installed with mr_sqlite_install (SQLite's threading mode as
 *   compiled: the pools behind a mutex), on a thread-safe pool installed
 *   with mr_sqlite_install (no mutex of ours), then with
 *   mr_sqlite_install_singlethread.  Every query's rows must be identical;
 *   after sqlite3_close sqlite3_memory_used() is 0, after sqlite3_shutdown
 *   the pools hold no live block, and after mr_pools_destroy nothing is
 *   outstanding upstream (a tracking adaptor).  Also: two threads with a
 *   connection each on the locked and the thread-safe installs, and the
 *   misuse answers.
 * test_sqlite --sweep WORKLOAD.sql
 *   The fault sweep: for N = 1, 2, ... the pools' Nth upstream request fails
 *   (mr_failing); the workload (size 60) runs statement by statement, and
 *   the first statement that fails must fail with SQLITE_NOMEM; the
 *   connection must then answer a query (it stays usable).  After it is
 *   closed, the whole workload runs again on a new connection, on the same
 *   pools, to the rows of a run without failures.  Nothing leaks at any N;
 *   the sweep ends at the first N that injects nothing.
 * Exit status 0 when everything held.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "memres/adaptors.h"
#include "memres/sqlite.h"

#define ITEST_NAME "test_sqlite"
#include "itest.h"

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
static void workload(const char *name, const char *sql, int n, text *out)
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

/* The workload's size: 1000, or MEMRES_SQLITE_SIZE (small for the builds
 * that check every pool after each slow path, MEMRES_DEBUG=3). */
static int size(void)
{
    const char *e = getenv("MEMRES_SQLITE_SIZE");
    return e != NULL && atoi(e) > 0 ? atoi(e) : 1000;
}

static void both(const char *sql, const char *file, text *mem, text *disk)
{
    remove(file);
    workload(":memory:", sql, size(), mem);
    workload(file, sql, size(), disk);
    remove(file);
}

typedef struct stack {
    mr_tracking *tr;
    mr_pools *p;
} stack;

/* The pools on a tracking adaptor on under; s.p NULL when the pools could
 * not be created (the sweep's first failure point). */
static bool stack_thread_safe; /* the next stacks' pools are thread-safe */

static stack stack_try(mr_resource *under)
{
    stack s;
    s.tr = mr_tracking_create(under);
    if (s.tr == NULL) {
        fputs("test_sqlite: cannot create the tracking adaptor\n", stderr);
        exit(2);
    }
    mr_pools_options po = {mr_tracking_resource(s.tr), 0, 0, stack_thread_safe};
    s.p = mr_pools_create(&po);
    return s;
}

static stack stack_new(mr_resource *under)
{
    stack s = stack_try(under);
    if (s.p == NULL) {
        fputs("test_sqlite: cannot create the pools\n", stderr);
        exit(2);
    }
    return s;
}

/* After sqlite3_shutdown: nothing live in the pools, nothing upstream. */
static void stack_done(stack s, const char *what)
{
    mr_stats st;
    mr_pools_stats(s.p, &st);
    CHECK(st.in_use == 0, "%s: %zu bytes live in the pools after sqlite3_shutdown", what, st.in_use);
    CHECK(mr_pools_check(s.p), "%s: mr_pools_check", what);
    mr_pools_destroy(s.p);
    CHECK(mr_tracking_outstanding(s.tr) == 0, "%s: upstream blocks outstanding", what);
    mr_tracking_destroy(s.tr);
}

static const char *thread_sql;

static void *thread_main(void *arg)
{
    text *out = arg;
    workload(":memory:", thread_sql, 200, out);
    return NULL;
}

static void identical(const char *path, const char *dir)
{
    char *sql = read_file(path, NULL);
    char file[4096];
    snprintf(file, sizeof file, "%s/test_sqlite.db", dir);

    text stock_mem = {0}, stock_disk = {0};
    both(sql, file, &stock_mem, &stock_disk);
    CHECK(stock_mem.n > 300 && strcmp(stock_mem.s, stock_disk.s) == 0, "stock: :memory: and file results differ");
    CHECK(sqlite3_shutdown() == SQLITE_OK, "shutdown");

    /* singlethread last: SQLite keeps that mode until the process ends */
    static const char *const modes[] = {"mr_sqlite_install", "mr_sqlite_install (thread-safe pool)",
                                        "mr_sqlite_install_singlethread"};
    for (int m = 0; m < 3; m++) {
        stack_thread_safe = m == 1;
        stack s = stack_new(NULL);
        int rc = m < 2 ? mr_sqlite_install(s.p) : mr_sqlite_install_singlethread(s.p);
        CHECK(rc == SQLITE_OK, "%s: %d", modes[m], rc);
        CHECK(sqlite3_initialize() == SQLITE_OK, "initialize");
        CHECK(mr_sqlite_install(s.p) == SQLITE_MISUSE, "install while initialised: SQLITE_MISUSE");
        text mem = {0}, disk = {0};
        both(sql, file, &mem, &disk);
        CHECK(strcmp(mem.s, stock_mem.s) == 0, "%s, :memory:: rows differ\n--- stock:\n%s--- memres:\n%s", modes[m],
              stock_mem.s, mem.s);
        CHECK(strcmp(disk.s, stock_disk.s) == 0, "%s, file: rows differ", modes[m]);
        CHECK(sqlite3_memory_used() == 0, "%s: sqlite3_memory_used() = %lld after close", modes[m],
              (long long)sqlite3_memory_used());
        if (m < 2) { /* two threads, a connection each, on the locked or thread-safe pools */
            thread_sql = sql;
            text out[2] = {{0}, {0}};
            pthread_t t[2];
            for (int i = 0; i < 2; i++)
                CHECK(pthread_create(&t[i], NULL, thread_main, &out[i]) == 0, "pthread_create");
            for (int i = 0; i < 2; i++)
                pthread_join(t[i], NULL);
            CHECK(out[0].n > 100 && strcmp(out[0].s, out[1].s) == 0, "threads: results differ");
            free(out[0].s);
            free(out[1].s);
        }
        mr_stats st;
        mr_pools_stats(s.p, &st);
        printf("%s: rows identical to SQLite's allocator (:memory: and file, %zu bytes of rows); "
               "peak %zu bytes held, %zu allocations\n",
               modes[m], mem.n, st.peak_held, st.allocations);
        CHECK(sqlite3_shutdown() == SQLITE_OK, "shutdown");
        stack_done(s, modes[m]);
        free(mem.s);
        free(disk.s);
    }
    CHECK(mr_sqlite_uninstall() == SQLITE_OK, "uninstall");
    CHECK(mr_sqlite_uninstall() == SQLITE_MISUSE, "second uninstall: SQLITE_MISUSE");
    CHECK(mr_sqlite_install(NULL) == SQLITE_MISUSE, "install(NULL): SQLITE_MISUSE");
    free(stock_mem.s);
    free(stock_disk.s);
    free(sql);
}

/* Runs the statements of sql one by one on db; a failed one must say
 * SQLITE_NOMEM, and db must then answer a query. */
static unsigned long sweep_statements(sqlite3 *db, const char *sql, unsigned long n)
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

static void sweep(const char *path)
{
    char *sql = read_file(path, NULL);
    text ref = {0};
    workload(":memory:", sql, 60, &ref); /* SQLite's allocator, no failure */
    CHECK(sqlite3_shutdown() == SQLITE_OK, "shutdown");
    unsigned long n, nomem = 0, noopen = 0;
    for (n = 1;; n++) {
        mr_failing_options fo = {.fail_at = n};
        mr_failing *fl = mr_failing_create(&fo);
        stack s = stack_try(mr_failing_resource(fl));
        if (s.p == NULL) { /* the pools' header was the request that failed */
            CHECK(mr_tracking_outstanding(s.tr) == 0, "N=%lu: a failed create left blocks", n);
            mr_tracking_destroy(s.tr);
            mr_failing_destroy(fl);
            noopen++;
            continue;
        }
        CHECK(mr_sqlite_install(s.p) == SQLITE_OK, "install");
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
            nomem += sweep_statements(db, sql, n);
        }
        CHECK(sqlite3_close(db) == SQLITE_OK, "N=%lu: close", n);
        if (mr_failing_failures(fl) > 0 && sqlite3_initialize() == SQLITE_OK) { /* spent: a full run */
            text again = {0};
            workload(":memory:", sql, 60, &again);
            CHECK(again.s != NULL && strcmp(again.s, ref.s) == 0, "N=%lu: the run after the failure differs", n);
            free(again.s);
        }
        CHECK(sqlite3_memory_used() == 0, "N=%lu: sqlite3_memory_used() = %lld after close", n,
              (long long)sqlite3_memory_used());
        CHECK(sqlite3_shutdown() == SQLITE_OK, "shutdown");
        stack_done(s, "sweep");
        unsigned long injected = mr_failing_failures(fl);
        mr_failing_destroy(fl);
        if (injected == 0 || failures > 0)
            break;
    }
    printf("%s: fault sweep: %lu failure points (%lu statements failed with SQLITE_NOMEM, "
           "%lu opens failed), every time usable after\n",
           path, n - 1, nomem, noopen);
    CHECK(n > 10 && nomem > 0, "the sweep swept too little");
    CHECK(mr_sqlite_uninstall() == SQLITE_OK, "uninstall");
    free(ref.s);
    free(sql);
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--sweep") == 0) {
        sweep(argv[2]);
    } else if (argc == 3) {
        identical(argv[1], argv[2]);
    } else {
        fputs("usage: test_sqlite WORKLOAD.sql DIR | --sweep WORKLOAD.sql\n", stderr);
        return 2;
    }
    return itest_end();
}
