/* SPDX-License-Identifier: MIT */
/* integrations/consumer/consumer_sqlite.c -- SQLite on memres, built against
 * the installed memres-sqlite (CMake memres::sqlite or pkg-config
 * memres-sqlite).  Exits 0 when a query ran and memory came back. */
#include <stdio.h>
#include <stdlib.h>

#include <memres/sqlite.h>
#include <sqlite3.h>

static int row(void *arg, int n, char **v, char **names)
{
    (void)n;
    (void)names;
    *(long long *)arg = v[0] != NULL ? atoll(v[0]) : -1;
    return 0;
}

int main(void)
{
    mr_pools *p = mr_sqlite_pools_create(NULL);
    if (p == NULL || mr_sqlite_install(p) != SQLITE_OK)
        return 1;
    sqlite3 *db;
    long long sum = -1;
    if (sqlite3_open(":memory:", &db) != SQLITE_OK)
        return 1;
    int rc = sqlite3_exec(db,
                          "CREATE TABLE t(x); WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c "
                          "WHERE i < 100) INSERT INTO t SELECT i FROM c; SELECT sum(x) FROM t;",
                          row, &sum, NULL);
    sqlite3_close(db);
    long long used = sqlite3_memory_used();
    sqlite3_shutdown();
    mr_stats s;
    mr_pools_stats(p, &s);
    mr_pools_destroy(p);
    printf("consumer_sqlite: sum %lld, %lld bytes used after close, %zu in the pools after shutdown\n", sum, used,
           s.in_use);
    return rc == SQLITE_OK && sum == 5050 && used == 0 && s.in_use == 0 ? 0 : 1;
}
