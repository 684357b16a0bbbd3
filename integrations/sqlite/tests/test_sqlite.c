/* SPDX-License-Identifier: MIT */
/* integrations/sqlite/tests/test_sqlite.c -- SQLite on memres
 * (memres/sqlite.h).
 *
 * test_sqlite WORKLOAD.sql DIR
 *   Runs the workload (size 1000) on a :memory: database and on a file
 *   database in DIR, first with SQLite's own allocator, then on memres
 *   pools installed with mr_sqlite_install (SQLite's threading mode as
 *   compiled: the pools behind a lock), on a thread-safe pool installed
 *   with mr_sqlite_install (no lock of ours), then with
 *   mr_sqlite_install_singlethread.  Every query's rows must be identical;
 *   after sqlite3_close sqlite3_memory_used() is 0, after sqlite3_shutdown
 *   the pools hold no live block, and after mr_pools_destroy nothing is
 *   outstanding upstream (a tracking adaptor).  Also: two threads with a
 *   connection each on the locked and the thread-safe installs, and the
 *   misuse answers.  Exact sizes, in every mode, memstatus on and off:
 *   3000 blocks of 1024 bytes (SQLite's journal chunks) and 1000 of 4360
 *   (its page-cache entries) must take at least 3% less of the pool than
 *   their classes (1152, 4608) would, xSize must be what xRoundup said (1032,
 *   4360; 1024 with memstatus off), a realloc within the exact size keeps
 *   the block, others move it with its bytes, and the pool gets the memory
 *   back (at once, unless thread-safe; at sqlite3_shutdown).  Then four
 *   threads (memstatus off: SQLite takes no lock around the allocator) race
 *   eight exact sizes for the four exact pools, on the locked and the
 *   thread-safe installs, and free each other's blocks; and race eight
 *   small sizes (150 rounds of 240 blocks each) on the locked, thread-safe
 *   and small-pool installs: on the locked ones every call takes the
 *   integration's lock, contended.
 * test_sqlite --sweep WORKLOAD.sql
 *   The fault sweep: for N = 1, 2, ... the pools' Nth upstream request fails
 *   (mr_failing); the workload (size 60) runs statement by statement, and
 *   the first statement that fails must fail with SQLITE_NOMEM; the
 *   connection must then answer a query (it stays usable).  After it is
 *   closed, the whole workload runs again on a new connection, on the same
 *   pools, to the rows of a run without failures.  Nothing leaks at any N;
 *   the sweep ends at the first N that injects nothing.  Then the exact
 *   sizes' sweep: the Nth upstream request fails (once, then from the Nth
 *   on) while 400 blocks of 1024 bytes and 200 of 4360 are taken -- exact
 *   pools created, given blocks, falling back to the classes: every
 *   sqlite3_malloc returns a whole block or NULL, nothing leaks.
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
static size_t stack_largest;   /* and their largest_required_pool_block (0: default) */

static stack stack_try(mr_resource *under)
{
    stack s;
    s.tr = mr_tracking_create(under);
    if (s.tr == NULL) {
        fputs("test_sqlite: cannot create the tracking adaptor\n", stderr);
        exit(2);
    }
    mr_pools_options po = {mr_tracking_resource(s.tr), 0, stack_largest, stack_thread_safe};
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

/* ---- exact sizes ---- */

/* Mode SMALL: a pool whose classes stop below SQLite's big blocks (the
 * integration's general methods, behind its lock, on a pool that is not
 * thread-safe).  The single-thread mode last: SQLite keeps it until the
 * process ends. */
static const char *const modes[] = {"mr_sqlite_install", "mr_sqlite_install (thread-safe pool)",
                                    "mr_sqlite_install (pool of classes up to 512 bytes)",
                                    "mr_sqlite_install_singlethread"};
enum { MODES = sizeof modes / sizeof modes[0], SMALL = 2 };

/* The next stacks for mode m. */
static void stack_mode(int m)
{
    stack_thread_safe = m == 1;
    stack_largest = m == SMALL ? 512 : 0;
}

static int install_mode(int m, mr_pools *p) { return m < 3 ? mr_sqlite_install(p) : mr_sqlite_install_singlethread(p); }

static size_t pools_in_use(mr_pools *p)
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

/* k blocks of n bytes (each filled to its xSize), then what they take of
 * the pool; it must be 3% less than k blocks of class `cls`. */
static size_t exact_batch(mr_pools *p, void **b, int k, int n, int want_size, size_t cls, const char *what)
{
    size_t before = pools_in_use(p);
    int bad = 0;
    for (int i = 0; i < k; i++) {
        b[i] = sqlite3_malloc(n);
        if (b[i] == NULL || sqlite3_msize(b[i]) != (sqlite3_uint64)want_size) {
            bad++;
            continue;
        }
        fill(b[i], (size_t)want_size, (unsigned)i);
    }
    size_t used = pools_in_use(p) - before;
    CHECK(bad == 0, "%s: %d of %d sqlite3_malloc(%d) NULL or not of xSize %d", what, bad, k, n, want_size);
    CHECK(used < (size_t)k * cls / 100 * 97, "%s: %d blocks of %d take %zu bytes of the pool (class %zu: %zu)", what, k,
          n, used, cls, (size_t)k * cls);
    return used;
}

static void exact_sizes(int m, bool memstatus)
{
    char what[160];
    snprintf(what, sizeof what, "%s, exact sizes, memstatus %s", modes[m], memstatus ? "on" : "off");
    CHECK(sqlite3_config(SQLITE_CONFIG_MEMSTATUS, (int)memstatus) == SQLITE_OK, "%s: SQLITE_CONFIG_MEMSTATUS", what);
    stack_mode(m);
    stack s = stack_new(NULL);
    CHECK(install_mode(m, s.p) == SQLITE_OK, "%s: install", what);
    CHECK(sqlite3_initialize() == SQLITE_OK, "%s: initialize", what);
    size_t base = pools_in_use(s.p);

    /* enough blocks that the last, partly used block of each exact pool
     * (256 KiB: EXACT_BLOCK in sqlite.c) does not hide the saving */
    enum { K = 3000, P = 6000 };
    void **j = malloc(K * sizeof *j), **pg = malloc(P * sizeof *pg);
    if (j == NULL || pg == NULL) {
        fputs("test_sqlite: out of memory\n", stderr);
        exit(2);
    }
    /* xRoundup(1024) = 1040 - 8: what SQLite asks for (and xSize says)
     * with memstatus on; with it off xMalloc gets 1024 and xSize says so */
    size_t uj = exact_batch(s.p, j, K, 1024, memstatus ? 1032 : 1024, 1152, what);
    size_t up = exact_batch(s.p, pg, P, 4360, 4360, 4608, what);

    /* realloc: within 1040 the block stays (SQLite, or xRealloc), with the
     * size xRoundup says; else it moves with its bytes.  The last block:
     * the first ones went to the class before 1040 had a pool. */
    void *r = j[K - 1], *q = r != NULL ? sqlite3_realloc(r, 1020) : NULL;
    CHECK(q != NULL && q == r && sqlite3_msize(q) == 1032, "%s: realloc(1024 -> 1020) moved or is %llu bytes", what,
          (unsigned long long)sqlite3_msize(q));
    q = sqlite3_realloc(q, 3000);
    const unsigned seed = K - 1;
    CHECK(q != NULL && sqlite3_msize(q) >= 3000 && filled(q, 1020, seed), "%s: realloc(-> 3000)", what);
    q = sqlite3_realloc(q, 100);
    CHECK(q != NULL && sqlite3_msize(q) >= 100 && filled(q, 100, seed), "%s: realloc(-> 100)", what);
    q = sqlite3_realloc(q, 4360);
    CHECK(q != NULL && sqlite3_msize(q) == 4360 && filled(q, 100, seed), "%s: realloc(-> 4360)", what);
    q = sqlite3_realloc(q, 4200); /* 4208 with the word: not 4368's exact pool */
    CHECK(q != NULL && sqlite3_msize(q) >= 4200 && filled(q, 100, seed), "%s: realloc(-> 4200)", what);
    q = sqlite3_realloc(q, 1024);
    CHECK(q != NULL && sqlite3_msize(q) >= 1024 && filled(q, 100, seed), "%s: realloc(-> 1024)", what);
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
    /* an exact pool whose last block goes gives its blocks back, unless
     * thread-safe (then at sqlite3_shutdown: stack_done) */
    size_t left = pools_in_use(s.p) - base;
    if (m != 1)
        CHECK(left < 64 * 1024, "%s: %zu bytes still in use after every block went", what, left);
    printf("%s: %d x 1024 bytes take %zu bytes of the pool (%.0f a block), %d x 4360 take %zu (%.0f); "
           "%zu in use after freeing\n",
           what, K, uj, (double)uj / K, P, up, (double)up / P, left);
    free(j);
    free(pg);
    CHECK(sqlite3_shutdown() == SQLITE_OK, "%s: shutdown", what);
    stack_done(s, what);
    CHECK(sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 1) == SQLITE_OK, "%s: SQLITE_CONFIG_MEMSTATUS", what);
}

/* Two sets of 8 sizes the threads cycle through: big ones whose classes
 * waste more than 1/32 (exact sizes, for the four exact pools), and small
 * ones (the class tables and, on the locked installs, many short turns of
 * the lock: contended, with threads that spin and sleep on it). */
static const int xt_sizes[8] = {1024, 1160, 2056, 2400, 3100, 4096, 4360, 5200};
static const int xt_small[8] = {8, 24, 40, 100, 200, 360, 700, 1000};
enum { XT_THREADS = 4, XT_ROUNDS = 12, XT_SMALL_ROUNDS = 150, XT_BLOCKS = 240 };

typedef struct xt_arg {
    unsigned id;
    const int *sizes; /* 8 of them */
    int rounds;
    void *keep[XT_BLOCKS]; /* the last round's blocks, freed by main */
    int kept[XT_BLOCKS];
    int bad; /* no CHECK in a thread: itest's counter is not atomic */
} xt_arg;

static void *xt_main(void *arg)
{
    xt_arg *x = arg;
    void *b[XT_BLOCKS];
    int n[XT_BLOCKS];
    for (int r = 0; r < x->rounds; r++) {
        for (int i = 0; i < XT_BLOCKS; i++) {
            n[i] = x->sizes[(unsigned)i % 8];
            b[i] = sqlite3_malloc(n[i]);
            if (b[i] == NULL) {
                x->bad++;
                n[i] = 0;
                continue;
            }
            fill(b[i], (size_t)n[i], x->id * 7919u + (unsigned)i);
        }
        for (int i = 0; i < XT_BLOCKS; i += 5) { /* resize some to another exact size */
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
        for (int i = 0; i < XT_BLOCKS; i++) {
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

/* XT_THREADS threads allocate, resize, check and free blocks of the 8
 * sizes (big: xt_sizes, else xt_small) on mode m's install, with SQLite
 * taking no lock of its own; the last round's blocks are checked and freed
 * by this thread. */
static void threads_race(int m, bool big)
{
    char what[160];
    snprintf(what, sizeof what, "%s, %s sizes, %d threads", modes[m], big ? "exact" : "small", XT_THREADS);
    /* memstatus off: SQLite takes no mutex around xMalloc and xFree */
    CHECK(sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0) == SQLITE_OK, "%s: SQLITE_CONFIG_MEMSTATUS", what);
    stack_mode(m);
    stack s = stack_new(NULL);
    CHECK(install_mode(m, s.p) == SQLITE_OK, "%s: install", what);
    CHECK(sqlite3_initialize() == SQLITE_OK, "%s: initialize", what);
    static xt_arg args[XT_THREADS];
    pthread_t t[XT_THREADS];
    for (unsigned i = 0; i < XT_THREADS; i++) {
        args[i] = (xt_arg){
            .id = i, .sizes = big ? xt_sizes : xt_small, .rounds = big ? XT_ROUNDS : XT_SMALL_ROUNDS};
        CHECK(pthread_create(&t[i], NULL, xt_main, &args[i]) == 0, "pthread_create");
    }
    for (unsigned i = 0; i < XT_THREADS; i++)
        pthread_join(t[i], NULL);
    int bad = 0;
    for (unsigned i = 0; i < XT_THREADS; i++) { /* each thread's blocks, freed here */
        bad += args[i].bad;
        for (int k = 0; k < XT_BLOCKS; k++) {
            if (args[i].keep[k] != NULL && !filled(args[i].keep[k], (size_t)args[i].kept[k], i * 7919u + (unsigned)k))
                bad++;
            sqlite3_free(args[i].keep[k]);
        }
    }
    CHECK(bad == 0, "%s: %d blocks NULL or changed", what, bad);
    CHECK(mr_pools_check(s.p), "%s: mr_pools_check", what);
    printf("%s: %d blocks of 8 sizes, resized and freed across threads\n", what,
           XT_THREADS * args[0].rounds * XT_BLOCKS);
    CHECK(sqlite3_shutdown() == SQLITE_OK, "%s: shutdown", what);
    stack_done(s, what);
    CHECK(sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 1) == SQLITE_OK, "%s: SQLITE_CONFIG_MEMSTATUS", what);
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
    for (int m = 0; m < MODES; m++) {
        stack_mode(m);
        stack s = stack_new(NULL);
        int rc = install_mode(m, s.p);
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
        if (m < 3) { /* two threads, a connection each, on the locked or thread-safe pools */
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
        /* after the workload (its journal made 1040 an exact size): a
         * journal chunk is 1024 bytes and the 8 of the word, no class (the
         * small pool: a direct block of 1032, its exact size anyway) */
        void *chunk = sqlite3_malloc(1024);
        const sqlite3_uint64 want = m == SMALL ? 1024 : 1032;
        CHECK(chunk != NULL && sqlite3_msize(chunk) == want, "%s: sqlite3_malloc(1024) has %llu bytes", modes[m],
              (unsigned long long)sqlite3_msize(chunk));
        sqlite3_free(chunk);
        mr_stats st;
        mr_pools_stats(s.p, &st);
        printf("%s: rows identical to SQLite's allocator (:memory: and file, %zu bytes of rows); "
               "peak %zu bytes held, %zu allocations\n",
               modes[m], mem.n, st.peak_held, st.allocations);
        CHECK(sqlite3_shutdown() == SQLITE_OK, "shutdown");
        stack_done(s, modes[m]);
        free(mem.s);
        free(disk.s);
        if (m != SMALL) { /* the small pool's big blocks are direct: no exact sizes */
            exact_sizes(m, true);
            exact_sizes(m, false);
        }
        if (m < 2)
            threads_race(m, true);
        if (m < 3)
            threads_race(m, false);
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

/* The exact sizes under failures: the Nth upstream request fails (and,
 * persistent, every one after) while blocks of two exact sizes are taken
 * and given back; a block is whole or NULL, nothing leaks. */
static void sweep_exact(bool persistent)
{
    enum { J = 400, P = 200 };
    static void *b[J + P];
    unsigned long n, nulls = 0;
    for (n = 1;; n++) {
        mr_failing_options fo = {.fail_at = n, .persistent = persistent};
        mr_failing *fl = mr_failing_create(&fo);
        stack s = stack_try(mr_failing_resource(fl));
        if (s.p == NULL) {
            mr_tracking_destroy(s.tr);
            mr_failing_destroy(fl);
            continue;
        }
        CHECK(mr_sqlite_install(s.p) == SQLITE_OK, "install");
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
        CHECK(sqlite3_shutdown() == SQLITE_OK, "shutdown");
        stack_done(s, "exact sweep");
        unsigned long injected = mr_failing_failures(fl);
        mr_failing_destroy(fl);
        if (injected == 0 || failures > 0)
            break;
    }
    printf("exact sizes' fault sweep (%s): %lu failure points, %lu blocks NULL, nothing lost\n",
           persistent ? "persistent" : "once", n - 1, nulls);
    CHECK(n > 10, "the exact sweep swept too little");
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
    sweep_exact(false);
    sweep_exact(true);
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
