/* SPDX-License-Identifier: MIT */
/* src/lock.h -- the word lock (memres/bits/lock.h: the idiom, its take and
 * give) and what only the library itself calls: a lock in memory the
 * caller allocated, its end, and a try. */
#ifndef MEMRES_LOCK_H
#define MEMRES_LOCK_H

#include <stdbool.h>

#include "memres/bits/lock.h"

/* A lock in memory the caller allocated (false: the pthread objects could
 * not be made), and its end.  Also the child's side of fork for a lock
 * held across it (memres/bits/lock.h). */
bool mri_lock_init(mri_lock *l);
void mri_lock_fini(mri_lock *l);

/* Takes l if it is free (true), else leaves it (false); never waits. */
static inline bool mri_lock_try(mri_lock *l)
{
    int v = 0;
    return __atomic_compare_exchange_n(&l->word, &v, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

#endif /* MEMRES_LOCK_H */
