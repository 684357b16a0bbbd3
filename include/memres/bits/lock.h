/* SPDX-License-Identifier: MIT */
/* memres/bits/lock.h -- private: the word lock, memres's one lock idiom.
 * Internal API for memres's own clients (the SQLite integration: an
 * unsynchronised pool under a multi-threaded SQLite); not for direct use.
 * The slow halves are exported from the shared library for the
 * integrations, which link it; the library's own code also has
 * mri_lock_init / mri_lock_fini / mri_lock_try (src/lock.h).
 *
 * A word taken with one compare-and-swap and given back with one exchange:
 * 0 free, 1 held, 2 held and a thread may sleep on it.  Uncontended, that
 * is two atomic instructions a take and give, against a pthread mutex's
 * calls; a thread that finds the word held spins a little (the sections it
 * guards are short), then sleeps on the lock's condition variable: it marks
 * the word 2 under the lock's mutex before it waits, and a give that finds
 * 2 signals under that mutex, so no wake-up is lost (a thread that takes
 * the word with 2 keeps it 2: its give wakes the next sleeper).  Not
 * recursive, not fair.  GCC atomic builtins (C and C++ alike) and pthreads
 * only.
 *
 * fork: a lock held across fork (the fork handlers take them) is given
 * back in the parent with mri_lock_give and made anew in the child with
 * mri_lock_init -- a thread that did not come along may have held the
 * mutex inside it, in the middle of a wait or a wake.
 */
#ifndef MEMRES_BITS_LOCK_H
#define MEMRES_BITS_LOCK_H

#include <pthread.h>
#include <stdbool.h>

#include "memres/config.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mri_lock {
    int word;           /* 0, 1, 2 (above); only through __atomic builtins */
    pthread_mutex_t mu; /* only while a thread waits or wakes one */
    pthread_cond_t cv;
} mri_lock;

#define MRI_LOCK_INIT {0, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER}

/* The slow halves (src/lock.c). */
MR_API MR_NOINLINE void mri_lock_wait(mri_lock *l);
MR_API MR_NOINLINE void mri_lock_wake(mri_lock *l);

static inline void mri_lock_take(mri_lock *l)
{
    int v = 0;
    if (MR_UNLIKELY(!__atomic_compare_exchange_n(&l->word, &v, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)))
        mri_lock_wait(l);
}

static inline void mri_lock_give(mri_lock *l)
{
    if (MR_UNLIKELY(__atomic_exchange_n(&l->word, 0, __ATOMIC_RELEASE) == 2))
        mri_lock_wake(l);
}

#ifdef __cplusplus
}
#endif
#endif /* MEMRES_BITS_LOCK_H */
