#include "support.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *up_allocate(mr_resource *self, size_t size, size_t align)
{
    mrt_upstream *u = (mrt_upstream *)self;
    u->calls++;
    bool fail = u->fail_at != 0 && (u->fail_all_after ? u->calls >= u->fail_at : u->calls == u->fail_at);
    if (!fail && u->limit != 0 && (size > u->limit || u->bytes > u->limit - size))
        fail = true;
    if (fail) {
        u->failures++;
        errno = ENOMEM;
        return NULL;
    }
    void *p = mr_allocate(mr_malloc_resource(), size, align);
    if (p == NULL) {
        u->failures++;
        return NULL;
    }
    if (u->nlive == u->cap) {
        size_t ncap = u->cap ? u->cap * 2 : 64;
        mrt_block *n = realloc(u->live, ncap * sizeof *n);
        if (n == NULL) {
            mr_deallocate(mr_malloc_resource(), p, size, align);
            u->failures++;
            errno = ENOMEM;
            return NULL;
        }
        u->live = n;
        u->cap = ncap;
    }
    u->live[u->nlive++] = (mrt_block){p, size, align};
    u->allocations++;
    u->bytes += size;
    if (u->bytes > u->peak_bytes)
        u->peak_bytes = u->bytes;
    /* dirty the memory: allocators must not assume zeroed upstream memory */
    memset(p, 0xA5, size);
    return p;
}

static void up_deallocate(mr_resource *self, void *p, size_t size, size_t align)
{
    mrt_upstream *u = (mrt_upstream *)self;
    u->deallocations++;
    for (size_t i = u->nlive; i-- > 0;) {
        if (u->live[i].p == p) {
            if (u->live[i].size != size || u->live[i].align != align) {
                fprintf(stderr, "mrt_upstream: deallocate(%p, %zu, %zu) but it was allocated with (%zu, %zu)\n",
                        p, size, align, u->live[i].size, u->live[i].align);
                u->bad_deallocations++;
            }
            u->bytes -= u->live[i].size;
            mr_deallocate(mr_malloc_resource(), p, u->live[i].size, u->live[i].align);
            u->live[i] = u->live[--u->nlive];
            return;
        }
    }
    fprintf(stderr, "mrt_upstream: deallocate(%p, %zu, %zu) of a pointer it never gave\n", p, size, align);
    u->bad_deallocations++;
}

static const struct mr_resource_ops up_ops = {up_allocate, up_deallocate, NULL};

void mrt_upstream_init(mrt_upstream *u)
{
    memset(u, 0, sizeof *u);
    u->base.ops = &up_ops;
}

void mrt_upstream_fini(mrt_upstream *u)
{
    free(u->live);
    u->live = NULL;
    u->nlive = u->cap = 0;
}

size_t mrt_upstream_live(const mrt_upstream *u) { return u->nlive; }

bool mrt_upstream_owns(const mrt_upstream *u, const void *p)
{
    uintptr_t a = (uintptr_t)p;
    for (size_t i = 0; i < u->nlive; i++) {
        uintptr_t b = (uintptr_t)u->live[i].p;
        if (a >= b && a < b + u->live[i].size)
            return true;
    }
    return false;
}

uint64_t mrt_seed(uint64_t def)
{
    const char *s = getenv("MEMRES_TEST_SEED");
    uint64_t seed = (s && *s) ? strtoull(s, NULL, 0) : def;
    printf("# seed %" PRIu64 " (set MEMRES_TEST_SEED to replay)\n", seed);
    return seed;
}
