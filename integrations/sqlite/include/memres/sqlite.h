/* SPDX-License-Identifier: MIT */
/* memres/sqlite.h -- SQLite 3 on memres size-class pools (the memres-sqlite
 * component: CMake target memres::sqlite, pkg-config memres-sqlite, Debian
 * package libmemres-sqlite-dev; built when pkg-config finds sqlite3).
 *
 *     mr_pools *p = mr_sqlite_pools_create(NULL);   a pool made for SQLite
 *     mr_sqlite_install(p);                 before sqlite3_initialize or any
 *     sqlite3_open(":memory:", &db);        other SQLite call that allocates
 *     ...
 *     sqlite3_close(db);
 *     sqlite3_shutdown();                   SQLite gives everything back
 *     mr_pools_destroy(p);
 *
 * How it maps.  SQLite's allocator (sqlite3_mem_methods) frees without a
 * size and asks for it (xSize), so every block carries an 8-byte word with
 * the size SQLite asked for before the memory SQLite sees: a request of n
 * bytes is a pool request of n + 8, aligned to 8 (what SQLite requires).
 * xRoundup answers with the whole block (mr_pools_block_size), so SQLite,
 * which rounds every request before it allocates, uses the whole block;
 * xRealloc keeps the block when the new size is in the same class
 * (mr_pools_realloc).  Requests above the pool's largest class (SQLite's
 * lookaside buffers and bulk page-cache allocations, with the defaults) go
 * to the pool's upstream, one upstream call each.
 *
 * The pool.  Any pool works.  mr_sqlite_pools_create makes one whose exact
 * sizes (memres/pools.h, "Exact sizes") are those of SQLite's big blocks,
 * which come in two sizes in great numbers and would lose a twentieth and
 * a tenth of themselves to their classes: the page cache's entries at the
 * default page size (4096 and SQLite's per-page header,
 * SQLITE_CONFIG_PCACHE_HDRSZ) and the in-memory journal's chunks.  For the least memory put the pool on the
 * page source (memres/pages.h), where every chunk is mapped and unmapped
 * whole, rather than over malloc, whose heap keeps the holes: at more page
 * faults, fewer resident bytes.
 *
 *     mr_pools *p = mr_sqlite_pools_create(&(mr_pools_options){.upstream = mr_page_resource()});
 *
 * Threads.  SQLite calls its allocator from every thread that uses it.
 * Given a thread-safe pool (mr_pools_options.thread_safe), mr_sqlite_install
 * uses it as it is.  Given a pool that is not thread-safe, it takes a lock
 * around every pool call unless SQLite was compiled single-threaded
 * (sqlite3_threadsafe() == 0); the lock is uncontended whenever SQLite keeps
 * memory statistics (its default, SQLITE_CONFIG_MEMSTATUS), since SQLite
 * then calls its allocator under its own mutex.  xSize and xRoundup take
 * no lock.  A program that uses SQLite from one thread only can call
 * mr_sqlite_install_singlethread instead: SQLite's threading mode becomes
 * SQLITE_CONFIG_SINGLETHREAD (no mutex anywhere in SQLite) and the pool is
 * used with no lock.  No mode runs a pool that is not thread-safe unlocked
 * under a multi-threaded SQLite.
 *
 * Errors.  When the pool cannot get memory SQLite sees NULL and returns
 * SQLITE_NOMEM from the call in progress; the connection stays usable.
 *
 * Lifetime.  SQLite's allocator is process-wide: one pool at a time serves
 * all of SQLite, and it must outlive every SQLite allocation: call
 * sqlite3_shutdown (after closing every connection and freeing every block
 * from sqlite3_malloc, as SQLite requires) before destroying it.
 * Installing again after sqlite3_shutdown is allowed (another pool, or
 * mr_sqlite_uninstall to give SQLite back the allocator it had).
 */
#ifndef MEMRES_SQLITE_H
#define MEMRES_SQLITE_H

#include "memres/pools.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The bytes before every block SQLite sees (its size word). */
#define MR_SQLITE_HEADER ((size_t)8)

/* mr_pools_create(opts) with the exact sizes of SQLite's big blocks (see
 * "The pool"); opts may be NULL (all defaults).  Options that name exact
 * sizes of their own are used as they are.  Call it before
 * sqlite3_initialize (SQLite tells its page header only then; after it,
 * the page-cache entries are left to their class).  NULL with errno as
 * mr_pools_create. */
MR_API mr_pools *mr_sqlite_pools_create(const mr_pools_options *opts);

/* Makes p SQLite's allocator (sqlite3_config(SQLITE_CONFIG_MALLOC)), with a
 * lock around the pool calls unless p is thread-safe or SQLite is compiled
 * single-threaded.  Call it before sqlite3_initialize (or after
 * sqlite3_shutdown), from one thread, like sqlite3_config.  Returns
 * SQLITE_OK; SQLITE_MISUSE when p is NULL or SQLite is initialised
 * (nothing changed then). */
MR_API int mr_sqlite_install(mr_pools *p);

/* As mr_sqlite_install, and sets SQLITE_CONFIG_SINGLETHREAD first: SQLite
 * and the pool then take no lock at all, and the program must use SQLite
 * from one thread at a time (SQLite's own rule for that mode).  Returns
 * SQLITE_OK, SQLITE_MISUSE as mr_sqlite_install, or SQLite's error when it
 * refuses the mode. */
MR_API int mr_sqlite_install_singlethread(mr_pools *p);

/* Gives SQLite back the allocator it had before the first install (call it
 * after sqlite3_shutdown).  The threading mode is left as it is.  Returns
 * SQLITE_OK, or SQLITE_MISUSE when nothing is installed or SQLite is
 * initialised. */
MR_API int mr_sqlite_uninstall(void);

#ifdef __cplusplus
}
#endif
#endif /* MEMRES_SQLITE_H */
