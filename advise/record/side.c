/* SPDX-License-Identifier: MIT */
/* advise/record/side.c -- side records: where a sampled recording keeps
 * the header of the objects it records whole (birth time and weight,
 * size, birth tick and thread: record.h's struct hdr less its tag), so
 * that in the object itself they take two words, as the objects the
 * sampling passes over do, and both come from glibc's same bins.
 *
 * One array of SIDE_MAX records, mapped without reserve at start-up and
 * touched as used; record 0 is never given.  Each thread keeps a list of
 * free records (linked through their tag word) and takes new ones from
 * the array's end; a thread with more than SIDE_KEEP free gives half of
 * them to the shared list (under a mutex), which a thread whose list is
 * empty takes from first.  A record is any thread's once freed: a
 * program that allocates on one thread and frees on another keeps its
 * records in circulation.  When the array is used up the recorder keeps
 * the header in the object (32 bytes), as without sampling (tests set
 * MEMRES_ADVISE_SIDE_MAX to use it up early). */
#include "record.h"

#define SIDE_KEEP 256u

struct hdr *g_side;
uint32_t g_side_max = SIDE_MAX;
static _Atomic uint32_t side_end = 1;
static pthread_mutex_t side_mu = PTHREAD_MUTEX_INITIALIZER;
static uint32_t side_shared; /* the shared list's head, under side_mu */

void mrr_side_start(void)
{
    g_side = mrr_imap((size_t)SIDE_MAX * sizeof(struct hdr));
}

static inline uint32_t next_of(uint32_t i)
{
    return (uint32_t)g_side[i].tag_site;
}

uint32_t mrr_side_get(struct tstate *ts)
{
    uint32_t i = ts->side_free;
    if (LIKELY(i != 0)) {
        ts->side_free = next_of(i);
        ts->side_nfree--;
        return i;
    }
    pthread_mutex_lock(&side_mu);
    i = side_shared;
    if (i != 0) {
        /* the whole shared list: the thread's now */
        side_shared = 0;
        pthread_mutex_unlock(&side_mu);
        uint32_t n = 0;
        for (uint32_t j = next_of(i); j != 0; j = next_of(j))
            n++;
        ts->side_free = next_of(i);
        ts->side_nfree = n;
        return i;
    }
    pthread_mutex_unlock(&side_mu);
    if (!g_side)
        return 0;
    i = atomic_fetch_add_explicit(&side_end, 1, memory_order_relaxed);
    return i < g_side_max ? i : 0;
}

/* Half of the thread's free records to the shared list. */
static void side_share(struct tstate *ts)
{
    uint32_t keep = ts->side_nfree / 2, head = ts->side_free, tail = head;
    for (uint32_t k = 1; k < keep; k++)
        tail = next_of(tail);
    uint32_t give = next_of(tail), last = give;
    while (next_of(last) != 0)
        last = next_of(last);
    g_side[tail].tag_site = 0;
    ts->side_nfree = keep;
    pthread_mutex_lock(&side_mu);
    g_side[last].tag_site = side_shared;
    side_shared = give;
    pthread_mutex_unlock(&side_mu);
}

void mrr_side_put(struct tstate *ts, uint32_t i)
{
    if (ts == NULL) { /* the thread's state is gone: to the shared list */
        pthread_mutex_lock(&side_mu);
        g_side[i].tag_site = side_shared;
        side_shared = i;
        pthread_mutex_unlock(&side_mu);
        return;
    }
    g_side[i].tag_site = ts->side_free;
    ts->side_free = i;
    if (UNLIKELY(++ts->side_nfree > SIDE_KEEP))
        side_share(ts);
}

/* A thread's state released: its free records to the shared list. */
void mrr_side_release(struct tstate *ts)
{
    uint32_t head = ts->side_free;
    if (head == 0)
        return;
    uint32_t last = head;
    while (next_of(last) != 0)
        last = next_of(last);
    pthread_mutex_lock(&side_mu);
    g_side[last].tag_site = side_shared;
    side_shared = head;
    pthread_mutex_unlock(&side_mu);
    ts->side_free = 0;
    ts->side_nfree = 0;
}
