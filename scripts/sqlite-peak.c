/* SPDX-License-Identifier: MIT */
/* scripts/sqlite-peak.c -- where the memory of SQLite on memres pools is at
 * its peak (the sqlite scenario, bench/sc_sqlite.c: the project's SQL
 * workload on a :memory: database of 4000 customers).
 *
 *   sqlite-peak glibc     SQLite's own allocator over glibc malloc: SQLite's
 *                         high-water mark and the process's peak RSS
 *   sqlite-peak memres    mr_sqlite_install_singlethread over
 *                         mr_sqlite_pools_create on malloc (the bench's
 *                         "single-thread" row): at the peak of the bytes the
 *                         pool holds from malloc, what SQLite has live, what
 *                         the pool has handed out (its blocks, with the size
 *                         word and the class rounding), RSS then, and each
 *                         class holding more than 16 KiB free: its chunks,
 *                         live and free bytes, and how much of its chunks'
 *                         pages is resident (mincore: pages a chunk shares
 *                         with its neighbours count whole)
 *
 * It reads the pool's private structs (src/pools_impl.h), as the walker
 * does: a diagnostic, not an example.  Build and run from the top of the
 * tree after a Release build in build/:
 *   cc -O2 -std=gnu11 -Iinclude -Isrc -Iintegrations/sqlite/include scripts/sqlite-peak.c \
 *      integrations/sqlite/sqlite.c build/libmemres.a -lsqlite3 -lpthread -o sqlite-peak
 *   ./sqlite-peak glibc; ./sqlite-peak memres
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <sqlite3.h>

#include "chunks.h"
#include "memres/sqlite.h"
#include "pools_impl.h"

static mr_pools *pool;
static size_t held, peak, used_at_peak, in_use_at_peak;
static long rss_at_peak_kib;
static char classes[16384];

/* Bytes of the pages [b, b + n) touches that are resident. */
static size_t resident(uintptr_t b, size_t n)
{
    const uintptr_t page = 4096, s = b & ~(page - 1), e = (b + n + page - 1) & ~(page - 1);
    unsigned char v[256];
    size_t r = 0;
    for (uintptr_t x = s; x < e; x += sizeof v * page) {
        size_t len = e - x < sizeof v * page ? e - x : sizeof v * page;
        if (mincore((void *)x, len, v) == 0)
            for (size_t k = 0; k < len / page; k++)
                r += (v[k] & 1) * page;
    }
    return r;
}

static long rss_kib(void)
{
    long pages = 0, res = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f != NULL) {
        if (fscanf(f, "%ld %ld", &pages, &res) != 2)
            res = 0;
        fclose(f);
    }
    return res * 4;
}

/* The pool's classes now, into classes[]. */
static void snapshot(void)
{
    FILE *f = fmemopen(classes, sizeof classes, "w");
    size_t idle_free = 0, idle_res = 0, all_free = 0;
    for (size_t i = 0; i < pool->nclasses; i++) {
        const struct mri_pools_class *c = &pool->hot.classes[i];
        size_t n = 0, bytes = 0, res = 0, live = (c->allocations - c->frees) * c->size;
        for (const struct mri_chunk *r = c->chunks; r != NULL; r = r->next, n++) {
            bytes += r->bytes;
            res += resident(r->base, r->bytes);
        }
        all_free += bytes - live;
        if (live == 0) {
            idle_free += bytes;
            idle_res += res;
        }
        if (bytes - live > 16384)
            fprintf(f, "  class %6zu: %3zu chunks %9zu bytes, live %9zu, free %7zu, resident ~%9zu\n", c->size, n,
                    bytes, live, bytes - live, res);
    }
    fprintf(f, "  free in all classes %zu; classes with no live block: %zu bytes, ~%zu resident\n", all_free,
            idle_free, idle_res);
    fprintf(f, "  direct blocks: %zu bytes in %zu\n", pool->direct_bytes, pool->direct_count);
    fclose(f);
}

static void *up_allocate(mr_resource *self, size_t size, size_t align)
{
    (void)self;
    void *p = mr_allocate(mr_malloc_resource(), size, align);
    if (p != NULL && (held += size) > peak && pool != NULL) {
        peak = held;
        used_at_peak = (size_t)sqlite3_memory_used();
        mr_stats s;
        mr_pools_stats(pool, &s);
        in_use_at_peak = s.in_use;
        rss_at_peak_kib = rss_kib();
        snapshot();
    }
    return p;
}

static void up_deallocate(mr_resource *self, void *p, size_t size, size_t align)
{
    (void)self;
    held -= size;
    mr_deallocate(mr_malloc_resource(), p, size, align);
}

static const struct mr_resource_ops up_ops = {up_allocate, up_deallocate, NULL};
static mr_resource up = {&up_ops};

static int row(void *arg, int n, char **v, char **names)
{
    (void)arg, (void)n, (void)v, (void)names;
    return 0;
}

int main(int argc, char **argv)
{
    const int memres = argc > 1 && strcmp(argv[1], "memres") == 0;
    FILE *f = fopen("integrations/sqlite/tests/workload.sql", "rb");
    char *sql = calloc(1, 1 << 16);
    if (f == NULL || sql == NULL || fread(sql, 1, (1 << 16) - 1, f) == 0) {
        fputs("sqlite-peak: run it from the top of the tree\n", stderr);
        return 1;
    }
    fclose(f);
    if (memres) {
        pool = mr_sqlite_pools_create(&(mr_pools_options){.upstream = &up});
        if (pool == NULL || mr_sqlite_install_singlethread(pool) != SQLITE_OK)
            return 1;
    }
    sqlite3 *db;
    char *err = NULL;
    if (sqlite3_open(":memory:", &db) != SQLITE_OK ||
        sqlite3_exec(db, "CREATE TABLE params(n INTEGER); INSERT INTO params VALUES(4000);", row, NULL, &err) ||
        sqlite3_exec(db, sql, row, NULL, &err)) {
        fprintf(stderr, "sqlite-peak: %s\n", err != NULL ? err : "open failed");
        return 1;
    }
    printf("SQLite's high-water mark (its own count of the bytes it asked for): %lld\n",
           (long long)sqlite3_memory_highwater(0));
    if (memres)
        printf("pool's peak held %zu; then: SQLite live %zu, pool in use %zu, RSS %ld KiB\n%s", peak, used_at_peak,
               in_use_at_peak, rss_at_peak_kib, classes);
    sqlite3_close(db);
    sqlite3_shutdown();
    f = fopen("/proc/self/status", "r");
    char line[256];
    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, "VmHWM", 5) == 0)
            fputs(line, stdout);
    if (f != NULL)
        fclose(f);
    if (pool != NULL)
        mr_pools_destroy(pool);
    free(sql);
    return 0;
}
