/* SPDX-License-Identifier: MIT */
/* advise/tests/kat_mixed.c -- known answer for memres-advise: several small
 * sizes, freed one by one in random order.
 *
 *   kat_mixed [malloc|memres] [STEPS]        (default: malloc 1000000)
 *
 * A table of 65 536 slots; each step picks a slot with a seeded generator:
 * a full slot's message is read and freed, an empty one gets a new message
 * of one of six sizes (24, 40, 64, 96, 160 or 224 bytes, equally likely)
 * from one line (KAT-SITE below) through the wrapper xmalloc.  No size
 * dominates and the messages die in random order: the answer is size-class
 * pools.  The memres variant takes them from one mr_pools
 * (mr_pools_alloc / mr_pools_free with the size).
 *
 * stdout: a checksum; stderr: "KAT-COUNT SITE n".  Exit 0.
 */
#include <inttypes.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memres/pools.h"

#define KAT_NAME "kat_mixed"
#include "kat.h"

#define SLOTS 65536u
#define ALIGN ((size_t)alignof(max_align_t))

static const size_t msg_size[6] = {24, 40, 64, 96, 160, 224};

typedef struct msg {
    uint32_t size, tag;
    uint64_t body[1]; /* the rest of the message */
} msg;

static uint64_t site_count;

static msg *new_msg(mr_pools *pools, size_t size, uint32_t tag)
{
    msg *m;
    if (pools != NULL) {
        m = mr_pools_alloc(pools, size, ALIGN);
        if (m == NULL)
            abort();
    } else {
        m = xmalloc(size); /* KAT-SITE: pools */
        site_count++;
    }
    m->size = (uint32_t)size;
    m->tag = tag;
    m->body[0] = tag * 7u;
    ((unsigned char *)m)[size - 1] = (unsigned char)tag;
    return m;
}

static uint64_t drop_msg(mr_pools *pools, msg *m)
{
    size_t size = m->size;
    uint64_t v = m->tag + m->body[0] + ((unsigned char *)m)[size - 1];
    if (pools != NULL)
        mr_pools_free(pools, m, size, ALIGN);
    else
        free(m);
    return v;
}

int main(int argc, char **argv)
{
    int memres = argc > 1 && strcmp(argv[1], "memres") == 0;
    long steps = argc > 2 ? atol(argv[2]) : 1000000;
    mr_pools *pools = NULL;
    if (memres && (pools = mr_pools_create(NULL)) == NULL) {
        fputs("kat_mixed: mr_pools_create failed\n", stderr);
        return 1;
    }
    msg **slot = calloc(SLOTS, sizeof *slot);
    if (slot == NULL)
        return 1;
    uint64_t seed = 0x6d69786564ULL, sum = 0, made = 0;
    for (long i = 0; i < steps; i++) {
        uint64_t r = next_rand(&seed);
        uint32_t s = (uint32_t)(r >> 48);
        if (slot[s] != NULL) {
            sum += drop_msg(pools, slot[s]);
            slot[s] = NULL;
        } else {
            slot[s] = new_msg(pools, msg_size[(r & 0xffff) % 6], (uint32_t)(r >> 16));
            made++;
        }
    }
    for (uint32_t s = 0; s < SLOTS; s++)
        if (slot[s] != NULL)
            sum += drop_msg(pools, slot[s]);
    free(slot);
    mr_pools_destroy(pools);
    printf("mixed: %ld steps, %" PRIu64 " messages\n", steps, made);
    printf("checksum %" PRIu64 "\n", sum);
    fprintf(stderr, "KAT-COUNT SITE %" PRIu64 "\n", site_count);
    return 0;
}
