/* SPDX-License-Identifier: MIT */
/* advise/tests/kat_threads.c -- known answer for memres-advise: objects
 * allocated by producer threads and freed by consumer threads.
 *
 *   kat_threads [malloc|memres] [N]          (default: malloc 100000)
 *
 * Two producers and two consumers; producer i hands its objects to
 * consumer i through a single-producer/single-consumer ring of 1024
 * pointers (C11 atomics).  A producer makes N objects of 16..512 bytes
 * (sizes from a seeded generator) from one line (KAT-SITE below) through
 * the wrapper xmalloc and writes a tag; the consumer checks the tag and
 * frees the object.  Every object is freed by another thread than the one
 * that made it, in the order it was made: the answer is size-class pools,
 * thread-safe.  The memres variant takes them from one mr_pools created
 * with thread_safe = true (mr_pools_alloc by the producers, mr_pools_free
 * with the size by the consumers).
 *
 * stdout: the objects and a checksum; stderr: "KAT-COUNT SITE n".  Exit 0.
 */
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memres/pools.h"

#define KAT_NAME "kat_threads"
#include "kat.h"

#define PAIRS 2
#define RING 1024u
#define ALIGN ((size_t)alignof(max_align_t))

typedef struct item {
    uint32_t size, producer;
    uint64_t seq;
} item;

typedef struct ring {
    _Atomic size_t head; /* next slot the producer fills */
    char pad1[64 - sizeof(size_t)];
    _Atomic size_t tail; /* next slot the consumer empties */
    char pad2[64 - sizeof(size_t)];
    item *slot[RING];
} ring;

typedef struct pair {
    ring r;
    unsigned id;
    long n;
    uint64_t made;  /* the producer's allocations */
    uint64_t sum;   /* the consumer's */
} pair;

static mr_pools *pools; /* the memres variant */

static item *new_item(pair *pr, size_t size, uint64_t seq)
{
    item *it;
    if (pools != NULL) {
        it = mr_pools_alloc(pools, size, ALIGN);
        if (it == NULL)
            abort();
    } else {
        it = xmalloc(size); /* KAT-SITE: pools */
    }
    pr->made++;
    it->size = (uint32_t)size;
    it->producer = pr->id;
    it->seq = seq;
    if (size > sizeof *it)
        ((unsigned char *)it)[size - 1] = (unsigned char)seq;
    return it;
}

static void *producer(void *arg)
{
    pair *pr = arg;
    uint64_t seed = 0x70726f64ULL + pr->id;
    for (long i = 0; i < pr->n; i++) {
        size_t size = 16 + (size_t)(next_rand(&seed) % (512 - 16 + 1));
        item *it = new_item(pr, size, (uint64_t)i);
        size_t h = atomic_load_explicit(&pr->r.head, memory_order_relaxed);
        while (h - atomic_load_explicit(&pr->r.tail, memory_order_acquire) >= RING)
            sched_yield();
        pr->r.slot[h % RING] = it;
        atomic_store_explicit(&pr->r.head, h + 1, memory_order_release);
    }
    return NULL;
}

static void *consumer(void *arg)
{
    pair *pr = arg;
    uint64_t sum = 0;
    for (long i = 0; i < pr->n; i++) {
        size_t t = atomic_load_explicit(&pr->r.tail, memory_order_relaxed);
        while (atomic_load_explicit(&pr->r.head, memory_order_acquire) == t)
            sched_yield();
        item *it = pr->r.slot[t % RING];
        atomic_store_explicit(&pr->r.tail, t + 1, memory_order_release);
        size_t size = it->size;
        if (it->seq != (uint64_t)i || it->producer != pr->id ||
            (size > sizeof *it && ((unsigned char *)it)[size - 1] != (unsigned char)i)) {
            fputs("kat_threads: a corrupt item\n", stderr);
            abort();
        }
        sum += size + it->seq;
        if (pools != NULL)
            mr_pools_free(pools, it, size, ALIGN);
        else
            free(it);
    }
    pr->sum = sum;
    return NULL;
}

int main(int argc, char **argv)
{
    int memres = argc > 1 && strcmp(argv[1], "memres") == 0;
    long n = argc > 2 ? atol(argv[2]) : 100000;
    if (memres && (pools = mr_pools_create(&(mr_pools_options){.thread_safe = true})) == NULL) {
        fputs("kat_threads: mr_pools_create failed\n", stderr);
        return 1;
    }
    static pair pairs[PAIRS];
    pthread_t prod[PAIRS], cons[PAIRS];
    for (unsigned i = 0; i < PAIRS; i++) {
        pairs[i].id = i;
        pairs[i].n = n;
        if (pthread_create(&cons[i], NULL, consumer, &pairs[i]) != 0 ||
            pthread_create(&prod[i], NULL, producer, &pairs[i]) != 0) {
            fputs("kat_threads: pthread_create failed\n", stderr);
            return 1;
        }
    }
    uint64_t sum = 0, made = 0;
    for (unsigned i = 0; i < PAIRS; i++) {
        pthread_join(prod[i], NULL);
        pthread_join(cons[i], NULL);
        sum += pairs[i].sum;
        made += pairs[i].made;
    }
    mr_pools_destroy(pools);
    printf("threads: %d producers, %" PRIu64 " objects\n", PAIRS, made);
    printf("checksum %" PRIu64 "\n", sum);
    fprintf(stderr, "KAT-COUNT SITE %" PRIu64 "\n", memres ? 0 : made);
    return 0;
}
