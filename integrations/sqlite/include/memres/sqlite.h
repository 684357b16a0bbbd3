/* SPDX-License-Identifier: MIT */
/* memres/sqlite.h -- SQLite 3 on memres size-class pools (the memres-sqlite
 * component: CMake target memres::sqlite, pkg-config memres-sqlite, Debian
 * package libmemres-sqlite-dev; built when pkg-config finds sqlite3).
 *
 *     mr_pools *p = mr_pools_create(NULL);
 *     mr_sqlite_install(p);                 before sqlite3_initialize or any
 *     sqlite3_open(":memory:", &db);        other SQLite call that allocates
 *     ...
 *     sqlite3_close(db);
 *     sqlite3_shutdown();                   SQLite gives everything back
 *     mr_pools_destroy(p);
 *
 * How it maps.  SQLite's allocator (sqlite3_mem_methods) frees without a
 * size and asks for it (xSize), so every block carries one 8-byte word
 * before the memory SQLite sees, holding the size SQLite asked for (and,
 * in its high half, which exact pool holds the block, if one does): a
 * request of n bytes is a pool request of n + 8 with the result 8 bytes in,
 * aligned to 8 (what SQLite requires).  xRoundup answers with the whole
 * class (from a table filled by mr_pools_block_size), so SQLite, which rounds
 * every request before it allocates, uses the whole block and xSize is
 * exact.  xRealloc keeps the block when the new size is in the same class
 * (mr_pools_realloc).  Requests above the pools' largest class (SQLite's
 * lookaside buffers and bulk page-cache allocations, 64 KiB and more with
 * the default options) go to the pools' upstream, one upstream call each.
 *
 * Exact sizes.  Above 1 KiB the classes are 12.5% apart, and SQLite's big
 * blocks come in a few sizes, many at once: the in-memory journal's 1 KiB
 * chunks (1032 bytes with the word, class 1152) and the page cache's
 * entries (4368 with 4 KiB pages, class 4608) -- 99% of the peak of the
 * project's workload.  So a request of n + 8 > 1024 bytes whose class is
 * more than 1/32 larger than n + 8 rounded up to 16 (its exact size) is
 * given exactly that: xRoundup answers exact size - 8 (1032 for 1024; with
 * SQLITE_CONFIG_MEMSTATUS off, xMalloc gets n itself and xSize says n), and
 * once the live blocks of one exact size waste 8 KiB in their class (74
 * blocks of 1040 bytes, 35 of 4368) that size gets a pool of its own (an
 * mr_objpool on mr_pools_resource(p): its blocks, 256 KiB each whatever
 * the size, are requests of p, in p's held).  Sizes asked for one at a time never
 * get one.  At most 4 exact sizes; blocks of a size from before its
 * promotion stay in their class until freed.  xRealloc keeps a block when
 * the new size has the same exact size (or the same class and no exact
 * pool), else moves it.  With a pool that is not thread-safe, an exact
 * pool gives its blocks back to p when its last block is freed (SQLite
 * frees its journal whole at the end of each transaction); thread-safe,
 * it keeps them until sqlite3_shutdown.  On the workload (memres-bench
 * --scenario sqlite, size 4000) the pool's peak held went from 36.4 to
 * 33.9 MiB (thread-safe pool: 37.7 to 35.5), peak RSS from 41.4 to 38.5 MiB
 * (40.5 thread-safe; malloc 37.7).
 *
 * Memory.  SQLite's heap swings: its journal grows through a transaction
 * and is freed whole at the end, and a statement's sort and record buffers
 * (2-37 KiB, one of a size) are used once.  A pool that is not thread-safe
 * gives the pages of classes that stand idle back to the OS (memres/pools.h,
 * "Memory"), and an exact pool gives its blocks back to p when it empties.
 * Over malloc (mr_pools_create(NULL)) what p gives back stays in malloc's
 * heap, in holes that only malloc's next requests can fill.  For the least
 * memory, put p on the page source (memres/pages.h), where every chunk and
 * exact block is mapped and unmapped whole:
 *
 *     mr_pools *p = mr_pools_create(&(mr_pools_options){.upstream = mr_page_resource()});
 *
 * On the workload (memres-bench --scenario sqlite, rows "memres pools" and
 * "memres pools, page source"): peak RSS 38.1 MiB over malloc, 37.6-37.7
 * over the page source, against 37.7-37.8 for SQLite's own methods on
 * glibc; the page source costs 19.7k page faults against 11.4k (the
 * journal's blocks are mapped afresh at every big transaction), 15-20 ms of
 * system time on a run of about 480 ms.
 *
 * Costs.  With a pool that is not thread-safe and classes up to at least
 * 1 KiB (the default), a request of 1016 bytes or less is a table lookup
 * and the class's free list, with none of mr_pools_alloc's checks (made
 * once, here): 17 instructions in xMalloc and 16 in xFree to their return
 * (gcc 12 -O2), and xRoundup reads a table.  A block of an exact pool is
 * about 27 more each way; a larger request that has none pays the class
 * lookup, and for an exact size not promoted a count on malloc and on free.
 * On the workload (callgrind, memres-bench --quick) xMalloc + xFree average
 * 47 instructions, against 96 for SQLite's own methods over mimalloc (its
 * 8-byte header included) and 193 over glibc.  A thread-safe pool takes
 * the calling thread's cache of the class the same way (29 instructions to
 * xMalloc's return; 80 a malloc + free on the workload); one whose classes
 * stop below 1 KiB goes through mr_pools_alloc and mr_pools_free.
 *
 * Threads.  SQLite calls its allocator from every thread that uses it.
 * Given a thread-safe pool (mr_pools_options.thread_safe), mr_sqlite_install
 * uses it as it is, with no lock of its own, and the exact pools are
 * thread-safe too (their table is C11 atomics; a promotion takes a mutex
 * once).  Given an unsynchronised pool, it takes a lock around every pool
 * call unless SQLite was compiled single-threaded (sqlite3_threadsafe() ==
 * 0); xSize
 * and xRoundup take none (they read the block's word and the pool's fixed
 * class table).  The lock is a word taken with one compare-and-swap and
 * given back with one exchange (a thread that finds it held spins a
 * little, then sleeps on a condition variable): uncontended, about 25
 * instructions per malloc + free (72 against the unlocked 47 on the
 * project's workload, callgrind; two pthread mutex pairs cost 185).  It
 * is uncontended whenever SQLite keeps memory statistics (its default,
 * SQLITE_CONFIG_MEMSTATUS), since SQLite then calls the allocator under
 * its own mutex.  Which to choose for a multi-threaded program: with
 * memory statistics on, an unsynchronised pool (72 instructions a pair,
 * peak RSS 38.1 MiB on the workload) costs less than a thread-safe one
 * (80, 40.6 MiB: its exact pools keep their blocks), since SQLite
 * serialises the calls either way; with them off (SQLITE_CONFIG_MEMSTATUS
 * 0) and threads that allocate at once, a thread-safe pool lets them run
 * in parallel.  A program that uses SQLite from one thread only can call
 * mr_sqlite_install_singlethread instead: it sets SQLite's threading
 * mode to SQLITE_CONFIG_SINGLETHREAD (no mutex anywhere in SQLite) and
 * installs the pools without a lock.  Never both: no mode runs the pools
 * unsynchronised under a multi-threaded SQLite.
 *
 * Errors.  When the pools cannot get memory SQLite sees NULL and returns
 * SQLITE_NOMEM from the call in progress; the connection stays usable.
 *
 * Lifetime.  SQLite's allocator is process-wide: one pool at a time serves
 * all of SQLite.  The pool must outlive every SQLite allocation: call
 * sqlite3_shutdown (after closing every connection and freeing every block
 * from sqlite3_malloc, as SQLite requires) before destroying it.  The exact
 * pools live in the pool from their promotion until sqlite3_shutdown, which
 * destroys them (the allocator's xShutdown); the next sqlite3_initialize
 * starts counting afresh.  Installing again after sqlite3_shutdown is
 * allowed (another pool, or mr_sqlite_uninstall to give SQLite back the
 * allocator it had); either destroys exact pools left over, if SQLite's
 * allocator was started and not shut down.
 */
#ifndef MEMRES_SQLITE_H
#define MEMRES_SQLITE_H

#include "memres/pools.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The bytes before every block SQLite sees (its size word). */
#define MR_SQLITE_HEADER ((size_t)8)

/* Makes p SQLite's allocator (sqlite3_config(SQLITE_CONFIG_MALLOC)), with a
 * mutex around the pool calls unless p is thread-safe or SQLite is compiled
 * single-threaded.
 * Call it before sqlite3_initialize (or after sqlite3_shutdown), from one
 * thread, like sqlite3_config.  Returns SQLITE_OK; SQLITE_MISUSE when p is
 * NULL or SQLite is initialised (nothing changed then). */
MR_API int mr_sqlite_install(mr_pools *p);

/* As mr_sqlite_install, and sets SQLITE_CONFIG_SINGLETHREAD first: SQLite
 * and the pools then take no lock at all, and the program must use SQLite
 * from one thread at a time (SQLite's own rule for that mode).  Returns
 * SQLITE_OK, SQLITE_MISUSE as mr_sqlite_install, or SQLite's error when it
 * refuses the mode (SQLITE_ERROR with a library built without threads is
 * not an error: it is single-threaded already). */
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
