/* SPDX-License-Identifier: MIT */
/* src/lock.h -- a small mutual-exclusion lock for memres's own clients (the
 * SQLite integration: an unsynchronised pool under a multi-threaded SQLite).
 * Internal API: in-project code only; the slow halves are exported from the
 * shared library for the integrations, which link it.
 *
 * A word taken with one compare-and-swap and given back with one exchange:
 * 0 free, 1 held, 2 held and a thread may sleep on it.  Uncontended, that
 * is two atomic instructions a take and give, against a pthread mutex's
 * calls; a thread that finds the word held spins a little (the sections it
 * guards are short), then sleeps on the lock's condition variable: it marks
 * the word 2 under the lock's mutex before it waits, and a give that finds
 * 2 signals under that mutex, so no wake-up is lost (a thread that takes
 * the word with 2 keeps it 2: its give wakes the next sleeper).  Not
 * recursive, not fair.  C11 atomics and pthreads only.
 */
#ifndef MEMRES_LOCK_H
#define MEMRES_LOCK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "memres/config.h"

typedef struct mri_lock {
    _Atomic(int) word;
    pthread_mutex_t mu; /* only while a thread waits or wakes one */
    pthread_cond_t cv;
} mri_lock;

#define MRI_LOCK_INIT {0, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER}

/* A lock in memory the caller allocated (false: the pthread objects could
 * not be made), and its end. */
bool mri_lock_init(mri_lock *l);
void mri_lock_fini(mri_lock *l);

/* The slow halves (lock.c). */
MR_API MR_NOINLINE void mri_lock_wait(mri_lock *l);
MR_API MR_NOINLINE void mri_lock_wake(mri_lock *l);

static inline void mri_lock_take(mri_lock *l)
{
    int v = 0;
    if (MR_UNLIKELY(!atomic_compare_exchange_strong_explicit(&l->word, &v, 1, memory_order_acquire,
                                                             memory_order_relaxed)))
        mri_lock_wait(l);
}

static inline void mri_lock_give(mri_lock *l)
{
    if (MR_UNLIKELY(atomic_exchange_explicit(&l->word, 0, memory_order_release) == 2))
        mri_lock_wake(l);
}

#endif /* MEMRES_LOCK_H */
