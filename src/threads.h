/* SPDX-License-Identifier: MIT */
/* src/threads.h -- the one registry of per-thread state in memres: one
 * pthread key whose destructor runs every subsystem's thread exit, one set
 * of fork handlers.  Two subsystems keep per-thread state, and each gives
 * its hooks here (threads.c calls them in this order; the fork handlers in
 * this order before fork and in reverse after):
 *   tsafe   the caches of the thread-safe pools (tsafe.c)
 *   blocks  the shared block pool's per-thread blocks (blocks.c)
 * Lock order between them: tsafe's locks before the block pool's (the
 * shared block pool calls only the page source under its lock).
 */
#ifndef MEMRES_THREADS_H
#define MEMRES_THREADS_H

#include <stdbool.h>

/* The key and the fork handlers, made once (pthread_once); false when the
 * key could not be had: per-thread state then cannot be cleaned up at
 * exit, and the subsystems keep none. */
bool mri_threads_ready(void);

/* Makes sure the calling thread's exit runs the exit hooks (again, when
 * called from one of them).  false when it cannot. */
bool mri_thread_watch(void);

/* The hooks (tsafe.c, blocks.c). */
void mri_tsafe_thread_exit(void);
void mri_tsafe_fork_prepare(void);
void mri_tsafe_fork_parent(void);
void mri_tsafe_fork_child(void);
void mri_blocks_thread_exit(void);
void mri_blocks_fork_prepare(void);
void mri_blocks_fork_parent(void);
void mri_blocks_fork_child(void);

#endif /* MEMRES_THREADS_H */
