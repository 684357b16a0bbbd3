/* SPDX-License-Identifier: MIT */
/* advise/tests/apply_check.c -- what `memres-advise apply` must keep of a
 * program: run once under the recorder (its plan made with every site the
 * rules name), then natively and under the plan, it must print the same
 * and exit 0 in both.  It checks itself as it goes, on every kind of
 * route and at the edges between the runtime and glibc:
 *
 *   - a region site (trees of mixed sizes freed whole), with realloc that
 *     grows in place, that moves, and that leaves for glibc's sizes;
 *     calloc on memory a region reused; malloc_usable_size;
 *   - a stack-like site (scratch buffers freed newest first);
 *   - an object-pool site (one size, freed in a shuffled order) and a
 *     size-class site (sizes 8..4096, shuffled);
 *   - threads: objects of each route made by one thread and freed by
 *     another, also after the maker has exited;
 *   - glibc's objects (posix_memalign, strdup, a big malloc) freed and
 *     realloc'd through the interposers, and realloc of a routed object to
 *     a size its route does not serve;
 *   - fork (the child allocates, frees and exits) and fork + exec.
 *
 *   apply_check [ROUNDS]      stdout: one line per part and a checksum;
 *                             exit 0, or 1 with the failed check on stderr
 */
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static uint64_t sum;
static int failed;

#define CHECK(c)                                                                                                   \
    do {                                                                                                           \
        if (!(c)) {                                                                                                \
            fprintf(stderr, "apply_check: %s:%d: %s\n", __FILE__, __LINE__, #c);                                   \
            failed = 1;                                                                                            \
        }                                                                                                          \
    } while (0)

static uint32_t rng = 12345;
static uint32_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return rng;
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(seed + i * 7);
}

static int filled(const unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != (unsigned char)(seed + i * 7))
            return 0;
    return 1;
}

/* ---- a region site: trees freed whole ---- */

struct node {
    struct node *l, *r;
    size_t n;
    unsigned char data[];
};

static __attribute__((noinline)) struct node *tree_node(size_t n)
{
    return malloc(sizeof(struct node) + n);
}

static struct node *build(int d)
{
    size_t n = (next_rand() % 200) * (d == 0 ? 8 : 1);
    struct node *t = tree_node(n);
    if (!t)
        return NULL;
    t->n = n;
    fill(t->data, n, (unsigned)d);
    t->l = d > 0 ? build(d - 1) : NULL;
    t->r = d > 0 ? build(d - 1) : NULL;
    return t;
}

static uint64_t walk_free(struct node *t, int d)
{
    if (!t)
        return 0;
    uint64_t s = t->n;
    CHECK(filled(t->data, t->n, (unsigned)d));
    CHECK(malloc_usable_size(t) >= sizeof *t + t->n);
    s += walk_free(t->l, d - 1) + walk_free(t->r, d - 1);
    free(t);
    return s;
}

static __attribute__((noinline)) char *buf_new(size_t n)
{
    return malloc(n);
}

static __attribute__((noinline)) char *buf_grow(char *p, size_t n)
{
    return realloc(p, n);
}

static __attribute__((noinline)) int *zeroed(size_t n)
{
    return calloc(n, sizeof(int));
}

static void regions(int rounds)
{
    uint64_t s = 0;
    for (int i = 0; i < rounds; i++)
        s += walk_free(build(9), 9);
    /* realloc: in place while newest, moved when not, and to a size that
     * only glibc serves; the bytes survive each */
    for (int i = 0; i < rounds * 4; i++) {
        char *a = buf_new(40);
        CHECK(a != NULL);
        fill((unsigned char *)a, 40, 1);
        a = buf_grow(a, 200);
        CHECK(a && filled((unsigned char *)a, 40, 1));
        char *b = buf_new(24);
        fill((unsigned char *)b, 24, 2);
        a = buf_grow(a, 3000);
        CHECK(a && filled((unsigned char *)a, 40, 1));
        a = buf_grow(a, 1u << 20);
        CHECK(a && filled((unsigned char *)a, 40, 1));
        a = buf_grow(a, 64);
        CHECK(a && filled((unsigned char *)a, 40, 1));
        CHECK(filled((unsigned char *)b, 24, 2));
        s += malloc_usable_size(b) >= 24;
        free(b);
        free(a);
    }
    /* calloc on reused memory */
    for (int i = 0; i < rounds * 4; i++) {
        int *z = zeroed(100);
        CHECK(z != NULL);
        for (int k = 0; k < 100; k++)
            CHECK(z[k] == 0);
        memset(z, 0xff, 100 * sizeof *z);
        free(z);
    }
    printf("regions %llu\n", (unsigned long long)s);
    sum += s;
}

/* ---- a stack-like site ---- */

static __attribute__((noinline)) char *scratch(size_t n)
{
    return malloc(n);
}

static uint64_t nest(int d)
{
    size_t n = 32 + (size_t)d * 24;
    char *p = scratch(n);
    fill((unsigned char *)p, n, (unsigned)d);
    uint64_t s = d > 0 ? nest(d - 1) + nest(d - 1) : 1;
    CHECK(filled((unsigned char *)p, n, (unsigned)d));
    free(p);
    return s + n;
}

static void stacks(int rounds)
{
    uint64_t s = 0;
    for (int i = 0; i < rounds; i++)
        s += nest(8);
    printf("stacks %llu\n", (unsigned long long)s);
    sum += s;
}

/* ---- an object-pool site and a size-class site, freed shuffled ---- */

static __attribute__((noinline)) void *object48(void)
{
    return malloc(48);
}

static __attribute__((noinline)) void *sized(size_t n)
{
    return malloc(n);
}

static void shuffle(void **v, size_t n)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = next_rand() % i;
        void *t = v[i - 1];
        v[i - 1] = v[j];
        v[j] = t;
    }
}

#define BATCH 2000
static void pools(int rounds)
{
    static void *v[BATCH];
    static size_t sz[BATCH];
    uint64_t s = 0;
    for (int r = 0; r < rounds; r++) {
        for (size_t i = 0; i < BATCH; i++) {
            v[i] = object48();
            fill(v[i], 48, (unsigned)i);
        }
        for (size_t i = 0; i < BATCH; i++)
            CHECK(filled(v[i], 48, (unsigned)i));
        shuffle(v, BATCH);
        for (size_t i = 0; i < BATCH; i++)
            free(v[i]);
        for (size_t i = 0; i < BATCH; i++) {
            sz[i] = 8 + next_rand() % 4089;
            v[i] = sized(sz[i]);
            fill(v[i], sz[i] < 64 ? sz[i] : 64, (unsigned)i);
            s += sz[i];
        }
        for (size_t i = 0; i < BATCH; i++) {
            CHECK(filled(v[i], sz[i] < 64 ? sz[i] : 64, (unsigned)i));
            CHECK(malloc_usable_size(v[i]) >= sz[i]);
        }
        for (size_t i = 0; i < BATCH; i += 2) {
            size_t keep = sz[i] < 64 ? sz[i] : 64;
            v[i] = realloc(v[i], sz[i] * 2);
            CHECK(v[i] && filled(v[i], keep, (unsigned)i));
        }
        shuffle(v, BATCH);
        for (size_t i = 0; i < BATCH; i++)
            free(v[i]);
    }
    printf("pools %llu\n", (unsigned long long)s);
    sum += s;
}

/* ---- threads: made by one, freed by another ---- */

struct handoff {
    void *obj[3][BATCH];
    int rounds;
};

static void *maker(void *arg)
{
    struct handoff *h = arg;
    for (size_t i = 0; i < BATCH; i++) {
        h->obj[0][i] = tree_node(16 + i % 50); /* a region's */
        h->obj[1][i] = object48();
        h->obj[2][i] = sized(8 + i % 2000);
        memset(h->obj[1][i], (int)(i & 0xff), 48);
    }
    return NULL;
}

static void threads(int rounds)
{
    static struct handoff h;
    uint64_t s = 0;
    for (int r = 0; r < rounds; r++) {
        pthread_t t;
        CHECK(pthread_create(&t, NULL, maker, &h) == 0);
        CHECK(pthread_join(t, NULL) == 0); /* the maker has exited */
        for (size_t i = 0; i < BATCH; i++) {
            unsigned char *o = h.obj[1][i];
            CHECK(o[47] == (unsigned char)(i & 0xff));
            for (int k = 0; k < 3; k++)
                free(h.obj[k][i]);
            s++;
        }
    }
    printf("threads %llu\n", (unsigned long long)s);
    sum += s;
}

/* ---- glibc's objects through the interposers ---- */

static void foreign(int rounds)
{
    uint64_t s = 0;
    for (int r = 0; r < rounds; r++) {
        void *a = NULL;
        CHECK(posix_memalign(&a, 64, 100) == 0);
        CHECK(((uintptr_t)a & 63) == 0);
        CHECK(malloc_usable_size(a) >= 100);
        a = realloc(a, 5000);
        CHECK(a != NULL);
        free(a);
        char *d = strdup("memres-advise apply");
        CHECK(d && strcmp(d, "memres-advise apply") == 0);
        d = realloc(d, 100);
        CHECK(d && strcmp(d, "memres-advise apply") == 0);
        free(d);
        void *big = malloc(1u << 21);
        CHECK(big != NULL);
        free(big);
        free(NULL);
        free(realloc(NULL, 0));
        s += 3;
    }
    printf("foreign %llu\n", (unsigned long long)s);
    sum += s;
}

/* ---- fork, and fork + exec ---- */

static void forks(void)
{
    pid_t p = fork();
    if (p == 0) {
        struct node *t = build(6);
        uint64_t s = walk_free(t, 6);
        void *o = object48();
        free(o);
        _exit(failed || s == 0 ? 1 : 0);
    }
    int st = 0;
    CHECK(p > 0 && waitpid(p, &st, 0) == p && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    fflush(stdout);
    p = fork();
    if (p == 0) {
        execl("/bin/sh", "sh", "-c", "exit 7", (char *)NULL);
        _exit(99);
    }
    CHECK(p > 0 && waitpid(p, &st, 0) == p && WIFEXITED(st) && WEXITSTATUS(st) == 7);
    printf("forks 2\n");
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 20;
    if (rounds < 1)
        rounds = 1;
    regions(rounds);
    stacks(rounds);
    pools(rounds);
    threads(rounds);
    foreign(rounds);
    forks();
    printf("checksum %llu\n", (unsigned long long)sum);
    return failed;
}
