/* SPDX-License-Identifier: MIT */
/* advise/tests/kat_objects.c -- known answer for memres-advise: a git-like
 * object store.
 *
 *   kat_objects [malloc|memres] [N]          (default: malloc 200000)
 *
 * N objects of four types -- blob 40, tree 56, commit 72, tag 64 bytes,
 * mixed about 50/35/14/1% by a seeded generator -- are parsed into the
 * store (a hash table from object id to object) through the allocation
 * wrapper xcalloc, all from one line (KAT-SITE below), and looked up again
 * once; none is ever freed: they live until the process exits, as
 * git's parsed objects do.  The answer is an arena.  The memres variant
 * takes the objects from one mr_arena (mr_arena_calloc), which lives until
 * exit too.
 *
 * stdout: counts and a checksum; stderr: "KAT-COUNT SITE n".  Exit 0.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memres/arena.h"

#define KAT_NAME "kat_objects"
#include "kat.h"

enum { OBJ_BLOB, OBJ_TREE, OBJ_COMMIT, OBJ_TAG, OBJ_TYPES };

static const size_t obj_size[OBJ_TYPES] = {40, 56, 72, 64};

typedef struct object {
    uint32_t type;
    uint32_t flags;
    uint64_t id;
    struct object *next; /* the hash chain */
} object;

void *xcalloc(size_t count, size_t size);

__attribute__((noinline)) void *xcalloc(size_t count, size_t size)
{
    void *p = calloc(count, size);
    if (p == NULL) {
        fputs("kat_objects: out of memory\n", stderr);
        abort();
    }
    return p;
}

static uint64_t site_count;
static mr_arena *store_arena; /* the memres variant */

static object *new_object(unsigned type, uint64_t id)
{
    object *o;
    if (store_arena != NULL) {
        o = mr_arena_calloc(store_arena, 1, obj_size[type]);
        if (o == NULL) {
            fputs("kat_objects: out of memory\n", stderr);
            abort();
        }
    } else {
        o = xcalloc(1, obj_size[type]); /* KAT-SITE: arena */
        site_count++;
    }
    o->type = type;
    o->id = id;
    ((unsigned char *)o)[obj_size[type] - 1] = (unsigned char)id;
    return o;
}

int main(int argc, char **argv)
{
    int memres = argc > 1 && strcmp(argv[1], "memres") == 0;
    long n = argc > 2 ? atol(argv[2]) : 200000;
    if (n < 1000)
        n = 1000;
    if (memres && (store_arena = mr_arena_create(NULL)) == NULL) {
        fputs("kat_objects: mr_arena_create failed\n", stderr);
        return 1;
    }
    size_t nbuckets = 1;
    while (nbuckets < (size_t)n)
        nbuckets <<= 1;
    object **table = calloc(nbuckets, sizeof *table); /* one allocation: the index */
    if (table == NULL)
        return 1;
    uint64_t seed = 0x617420676974ULL, count[OBJ_TYPES] = {0};
    for (long i = 0; i < n; i++) {
        uint64_t r = next_rand(&seed);
        unsigned pct = (unsigned)(r % 100);
        unsigned t = pct < 50 ? OBJ_BLOB : pct < 85 ? OBJ_TREE : pct < 99 ? OBJ_COMMIT : OBJ_TAG;
        uint64_t id = r >> 8;
        object *o = new_object(t, id);
        size_t b = (size_t)(id * 0x9e3779b97f4a7c15ULL >> 20) & (nbuckets - 1);
        o->next = table[b];
        table[b] = o;
        count[t]++;
    }
    /* Look every object up again (the walk of a git command). */
    uint64_t sum = 0;
    for (int pass = 0; pass < 1; pass++) {
        seed = 0x617420676974ULL;
        for (long i = 0; i < n; i++) {
            uint64_t id = next_rand(&seed) >> 8;
            size_t b = (size_t)(id * 0x9e3779b97f4a7c15ULL >> 20) & (nbuckets - 1);
            for (object *o = table[b]; o != NULL; o = o->next)
                if (o->id == id) {
                    sum += o->type + ((unsigned char *)o)[obj_size[o->type] - 1] + (uint64_t)pass;
                    o->flags++;
                    break;
                }
        }
    }
    printf("objects %ld: blobs %" PRIu64 " trees %" PRIu64 " commits %" PRIu64 " tags %" PRIu64 "\n", n,
           count[OBJ_BLOB], count[OBJ_TREE], count[OBJ_COMMIT], count[OBJ_TAG]);
    printf("checksum %" PRIu64 "\n", sum);
    fprintf(stderr, "KAT-COUNT SITE %" PRIu64 "\n", site_count);
    return 0; /* the objects (and the arena) live until exit, as git's */
}
