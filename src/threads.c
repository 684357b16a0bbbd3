/* SPDX-License-Identifier: MIT */
/* src/threads.c -- the registry of per-thread state (src/threads.h).
 *
 * A thread that first keeps state in a subsystem calls mri_thread_watch,
 * which gives the key a value for that thread, so that its exit runs
 * on_exit, which runs every subsystem's exit hook; a hook that finds
 * nothing of its own does nothing.  POSIX runs the destructor again (up to
 * PTHREAD_DESTRUCTOR_ITERATIONS times) when another destructor used
 * memres after it and watched again.  The fork handlers bracket fork() with
 * every subsystem's locks, so that the child finds them consistent.
 */
#include <pthread.h>

#include "threads.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_key_t key;
static bool key_ok;
static char watched; /* the key's value: any non-NULL pointer */

static void on_exit(void *arg)
{
    (void)arg;
    mri_tsafe_thread_exit();
    mri_blocks_thread_exit();
}

static void prepare(void)
{
    mri_tsafe_fork_prepare();
    mri_blocks_fork_prepare();
}

static void parent(void)
{
    mri_blocks_fork_parent();
    mri_tsafe_fork_parent();
}

static void child(void)
{
    mri_blocks_fork_child();
    mri_tsafe_fork_child();
}

static void init(void)
{
    key_ok = pthread_key_create(&key, on_exit) == 0;
    if (key_ok && pthread_atfork(prepare, parent, child) != 0) {
        pthread_key_delete(key);
        key_ok = false;
    }
}

bool mri_threads_ready(void)
{
    return pthread_once(&once, init) == 0 && key_ok;
}

bool mri_thread_watch(void)
{
    if (!mri_threads_ready())
        return false;
    return pthread_getspecific(key) != NULL || pthread_setspecific(key, &watched) == 0;
}
