/* SPDX-License-Identifier: MIT */
/* advise/tests/kat_churn.c -- known answer for memres-advise: one fixed
 * size, freed one by one in random order among a large live set.
 *
 *   kat_churn [malloc|memres] [STEPS]        (default: malloc 1000000)
 *
 * A table of 100 000 slots; each step picks a slot with a seeded
 * generator: a full slot's object is read and freed, an empty one gets a
 * new 48-byte object (a connection record, say) from one line (KAT-SITE
 * below) through the wrapper xmalloc.  About 50 000 objects are alive at
 * any time and they die in random order: the answer is an object pool.
 * The memres variant takes them from one mr_objpool (mr_objpool_alloc /
 * mr_objpool_free).  At the end every object left is freed.
 *
 * stdout: a checksum; stderr: "KAT-COUNT SITE n".  Exit 0.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memres/objpool.h"

#define KAT_NAME "kat_churn"
#include "kat.h"

#define SLOTS 100000u

typedef struct record {
    uint64_t key;
    uint64_t value[4];
    uint32_t slot, flags;
} record; /* 48 bytes */

static uint64_t site_count;

static record *new_record(mr_objpool *pool, uint64_t key, uint32_t slot)
{
    record *r;
    if (pool != NULL) {
        r = mr_objpool_alloc(pool);
        if (r == NULL)
            abort();
    } else {
        r = xmalloc(sizeof *r); /* KAT-SITE: objpool */
        site_count++;
    }
    r->key = key;
    r->value[0] = key * 3;
    r->value[3] = key ^ slot;
    r->slot = slot;
    r->flags = 0;
    return r;
}

static uint64_t drop_record(mr_objpool *pool, record *r)
{
    uint64_t v = r->value[0] + r->value[3] + r->slot;
    if (pool != NULL)
        mr_objpool_free(pool, r);
    else
        free(r);
    return v;
}

int main(int argc, char **argv)
{
    int memres = argc > 1 && strcmp(argv[1], "memres") == 0;
    long steps = argc > 2 ? atol(argv[2]) : 1000000;
    mr_objpool *pool = NULL;
    if (memres && (pool = mr_objpool_create(sizeof(record), _Alignof(record), NULL)) == NULL) {
        fputs("kat_churn: mr_objpool_create failed\n", stderr);
        return 1;
    }
    record **slot = calloc(SLOTS, sizeof *slot);
    if (slot == NULL)
        return 1;
    uint64_t seed = 0x636875726eULL, sum = 0, made = 0;
    for (long i = 0; i < steps; i++) {
        uint64_t r = next_rand(&seed);
        uint32_t s = (uint32_t)((r >> 32) % SLOTS);
        if (slot[s] != NULL) {
            sum += drop_record(pool, slot[s]);
            slot[s] = NULL;
        } else {
            slot[s] = new_record(pool, r & 0xffffffffu, s);
            made++;
        }
    }
    for (uint32_t s = 0; s < SLOTS; s++)
        if (slot[s] != NULL)
            sum += drop_record(pool, slot[s]);
    free(slot);
    mr_objpool_destroy(pool);
    printf("churn: %ld steps, %" PRIu64 " records\n", steps, made);
    printf("checksum %" PRIu64 "\n", sum);
    fprintf(stderr, "KAT-COUNT SITE %" PRIu64 "\n", site_count);
    return 0;
}
