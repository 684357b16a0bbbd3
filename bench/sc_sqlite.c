/* SPDX-License-Identifier: MIT */
/* bench/sc_sqlite.c -- scenario "sqlite": SQLite 3 running the project's
 * SQL workload (integrations/sqlite/tests/workload.sql: a schema with
 * indexes, bulk inserts in transactions, joins, LIKE, GROUP BY, text and
 * blobs, updates, deletes, a rollback, a rebuilt table) on a :memory:
 * database of 4000 customers and 40000 orders (--quick 300 / 3000).
 *
 *   malloc                      SQLite's own allocator (malloc/free with its
 *                               size header; run under glibc, jemalloc,
 *                               mimalloc, tcmalloc by the harness)
 *   memres pools               mr_sqlite_install over mr_sqlite_pools_create(NULL):
 *                               SQLite serialized as Debian builds it, the
 *                               pools behind the integration's lock
 *   memres pools, single-thread mr_sqlite_install_singlethread: no lock in
 *                               SQLite or the pools
 *   memres pools, thread-safe   mr_sqlite_install over a thread-safe pool:
 *                               SQLite serialized, no lock of the
 *                               integration's (per-thread caches)
 *   memres pools, page source   as "memres pools" and "single-thread", the
 *   memres pools, single-thread, page source
 *                               pool over mr_page_resource() instead of
 *                               malloc: what <memres/sqlite.h> suggests
 *                               for the least memory (freed chunks and
 *                               exact blocks go back to the OS, no holes
 *                               in malloc's heap) at more page faults
 *
 * The rows of every query are the output (FNV-1a hash as the checksum, the
 * row count and bytes as text).  Timing starts after the script is read;
 * sqlite3_shutdown is timed.  Built when pkg-config finds sqlite3
 * (BENCH_HAVE_SQLITE).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#ifdef BENCH_HAVE_SQLITE
#  include <sqlite3.h>

#  include "memres/pages.h"
#  include "memres/sqlite.h"

typedef struct sq_rows {
    uint64_t hash;
    size_t rows, bytes;
} sq_rows;

static int sq_row(void *arg, int ncol, char **vals, char **names)
{
    (void)names;
    sq_rows *r = arg;
    for (int i = 0; i < ncol; i++) {
        const char *v = vals[i] != NULL ? vals[i] : "NULL";
        for (const char *c = v; *c; c++)
            r->hash = (r->hash ^ (unsigned char)*c) * 0x100000001b3ULL;
        r->hash = (r->hash ^ '|') * 0x100000001b3ULL;
        r->bytes += strlen(v) + 1;
    }
    r->rows++;
    return 0;
}

static char *read_sql(void)
{
    const char *path = BENCH_SOURCE_DIR "/integrations/sqlite/tests/workload.sql";
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        perror(path);
        return NULL;
    }
    char *s = calloc(1, 1 << 16);
    if (s != NULL)
        (void)fread(s, 1, (1 << 16) - 1, f);
    fclose(f);
    return s;
}

/* The workload on a :memory: database; SQLite is initialised by the open. */
static int sq_workload(const bench_args *args, bench_out *out, const char *sql)
{
    sqlite3 *db = NULL;
    char params[128], *err = NULL;
    int n = args->quick ? 300 : 4000;
    snprintf(params, sizeof params, "CREATE TABLE params(n INTEGER); INSERT INTO params VALUES(%d);", n);
    sq_rows r = {0xcbf29ce484222325ULL, 0, 0};
    int rc = sqlite3_open(":memory:", &db);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db, params, NULL, NULL, &err);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db, sql, sq_row, &r, &err);
    if (rc != SQLITE_OK)
        fprintf(stderr, "sqlite: %s\n", err ? err : sqlite3_errmsg(db));
    sqlite3_free(err);
    sqlite3_close(db);
    if (rc != SQLITE_OK || sqlite3_memory_used() != 0)
        return 1;
    bench_printf(out, "sqlite: %d customers, %zu rows, %zu bytes of results, hash %016llx\n", n, r.rows, r.bytes,
                 (unsigned long long)r.hash);
    out->checksum = r.hash;
    return 0;
}

static int run_malloc(const bench_args *args, bench_out *out)
{
    char *sql = read_sql();
    if (sql == NULL)
        return 1;
    bench_timing_start();
    int rc = sq_workload(args, out, sql);
    sqlite3_shutdown();
    free(sql);
    return rc;
}

static int run_pools_mode(const bench_args *args, bench_out *out, int (*install)(mr_pools *), bool thread_safe,
                          mr_resource *upstream)
{
    char *sql = read_sql();
    if (sql == NULL)
        return 1;
    bench_timing_start();
    mr_pools *p = mr_sqlite_pools_create(&(mr_pools_options){.upstream = upstream, .thread_safe = thread_safe});
    int rc = p == NULL || install(p) != SQLITE_OK || sq_workload(args, out, sql);
    sqlite3_shutdown();
    if (p != NULL) {
        mr_stats s;
        mr_pools_stats(p, &s);
        out->upstream_bytes = s.peak_held;
        rc = rc || s.in_use != 0;
        mr_pools_destroy(p);
    }
    free(sql);
    return rc;
}

static int run_pools(const bench_args *args, bench_out *out)
{
    return run_pools_mode(args, out, mr_sqlite_install, false, NULL);
}

static int run_pools_ts(const bench_args *args, bench_out *out)
{
    return run_pools_mode(args, out, mr_sqlite_install, true, NULL);
}

static int run_pools_st(const bench_args *args, bench_out *out)
{
    return run_pools_mode(args, out, mr_sqlite_install_singlethread, false, NULL);
}

static int run_pools_pages(const bench_args *args, bench_out *out)
{
    return run_pools_mode(args, out, mr_sqlite_install, false, mr_page_resource());
}

static int run_pools_st_pages(const bench_args *args, bench_out *out)
{
    return run_pools_mode(args, out, mr_sqlite_install_singlethread, false, mr_page_resource());
}

#  define SQLITE_UNAVAILABLE NULL
#else
#  define run_malloc NULL
#  define run_pools NULL
#  define run_pools_st NULL
#  define run_pools_ts NULL
#  define run_pools_pages NULL
#  define run_pools_st_pages NULL
static const char *sqlite_unavailable(void) { return "sqlite3 (libsqlite3-dev) not found at build time"; }
#  define SQLITE_UNAVAILABLE sqlite_unavailable
#endif

const bench_variant bench_sqlite[] = {
    {"sqlite", "malloc", BENCH_MALLOC, false, SQLITE_UNAVAILABLE, run_malloc},
    {"sqlite", "memres pools", BENCH_MEMRES, false, SQLITE_UNAVAILABLE, run_pools},
    {"sqlite", "memres pools, single-thread", BENCH_MEMRES, false, SQLITE_UNAVAILABLE, run_pools_st},
    {"sqlite", "memres pools, thread-safe", BENCH_MEMRES, false, SQLITE_UNAVAILABLE, run_pools_ts},
    {"sqlite", "memres pools, page source", BENCH_MEMRES, false, SQLITE_UNAVAILABLE, run_pools_pages},
    {"sqlite", "memres pools, single-thread, page source", BENCH_MEMRES, false, SQLITE_UNAVAILABLE, run_pools_st_pages},
    {NULL, NULL, BENCH_MEMRES, false, NULL, NULL},
};
