/* SPDX-License-Identifier: MIT */
/* src/lock.c -- the slow halves of the word lock (memres/bits/lock.h). */
#include "lock.h"

#define SPINS 64u

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

MR_API MR_NOINLINE void mri_lock_wait(mri_lock *l)
{
    for (unsigned i = 0; i < SPINS; i++) {
        cpu_relax();
        int v = 0;
        if (__atomic_load_n(&l->word, __ATOMIC_RELAXED) == 0 &&
            __atomic_compare_exchange_n(&l->word, &v, 1, true, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            return;
    }
    pthread_mutex_lock(&l->mu);
    while (__atomic_exchange_n(&l->word, 2, __ATOMIC_ACQUIRE) != 0)
        pthread_cond_wait(&l->cv, &l->mu);
    pthread_mutex_unlock(&l->mu);
}

MR_API MR_NOINLINE void mri_lock_wake(mri_lock *l)
{
    pthread_mutex_lock(&l->mu);
    pthread_cond_signal(&l->cv);
    pthread_mutex_unlock(&l->mu);
}

bool mri_lock_init(mri_lock *l)
{
    __atomic_store_n(&l->word, 0, __ATOMIC_RELAXED);
    if (pthread_mutex_init(&l->mu, NULL) != 0)
        return false;
    if (pthread_cond_init(&l->cv, NULL) != 0) {
        pthread_mutex_destroy(&l->mu);
        return false;
    }
    return true;
}

void mri_lock_fini(mri_lock *l)
{
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->mu);
}
