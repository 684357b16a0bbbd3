/* SPDX-License-Identifier: MIT */
/* advise/tests/kat_plugin.c -- known answer for memres-advise: the
 * allocating code is in a plugin that the program loads with dlopen after
 * it started (graphviz's layout plugins, Python's and Perl's extension
 * modules, Lua's C modules), so that its module is not in the process when
 * the recorder and the apply runtime start.
 *
 *   kat_plugin [malloc|memres] [ROUNDS] [THREADS]   (default: malloc 200 1)
 *
 * One source, built twice: as the program (it dlopens libkat_plugin.so
 * from its own directory and calls kat_plugin_run) and, with
 * KAT_PLUGIN_LIB, as the plugin.  Each round the plugin builds a list of
 * 2000 nodes of 24..114 bytes from one line (KAT-SITE below), sums it and
 * frees every node, oldest first: each round's nodes are freed together,
 * so the answer is an arena (the memres variant takes the round's nodes from one mr_arena
 * and resets it).  Before the plugin is loaded and after, the program makes
 * strings of its own, which no plan names.  With THREADS above 1, as many
 * threads run the rounds at once (the apply runtime places the plugin's
 * stacks while they allocate; the counts are the sum).
 *
 * stdout: a checksum; stderr: "KAT-COUNT SITE n".  Exit 0.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NODES 2000u

#ifdef KAT_PLUGIN_LIB

#include "memres/arena.h"

typedef struct node {
    struct node *next;
    uint64_t key;
} node; /* allocated at 24..114 bytes: a record of variable length */

uint64_t kat_plugin_run(int use_memres, long rounds, uint64_t *count);

static __attribute__((noinline)) node *new_node(mr_arena *a, uint64_t key, size_t size)
{
    node *n = a ? mr_arena_alloc(a, size) : malloc(size); /* KAT-SITE: arena */
    if (n == NULL) {
        fputs("kat_plugin: out of memory\n", stderr);
        abort();
    }
    n->key = key;
    return n;
}

uint64_t kat_plugin_run(int use_memres, long rounds, uint64_t *count)
{
    uint64_t sum = 0, s = 12345;
    mr_arena *a = use_memres ? mr_arena_create(NULL) : NULL;
    for (long r = 0; r < rounds; r++) {
        node *head = NULL, **tail = &head;
        for (unsigned i = 0; i < NODES; i++) {
            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
            node *n = new_node(a, s >> 17, 24u + (size_t)(s >> 59) * 6u); /* 24..114 bytes */
            if (!a)
                (*count)++;
            n->next = NULL;
            *tail = n;
            tail = &n->next;
        }
        for (node *n = head; n; n = n->next)
            sum += n->key;
        if (a) {
            mr_arena_reset(a);
        } else {
            while (head) {
                node *next = head->next;
                free(head);
                head = next;
            }
        }
    }
    if (a)
        mr_arena_destroy(a);
    return sum;
}

#else /* the program */

#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

struct worker {
    pthread_t t;
    uint64_t (*run)(int, long, uint64_t *);
    int use_memres;
    long rounds;
    uint64_t count, sum;
};

static void *work(void *arg)
{
    struct worker *w = arg;
    w->sum = w->run(w->use_memres, w->rounds, &w->count);
    return NULL;
}

static uint64_t strings(unsigned n, uint64_t seed)
{
    uint64_t sum = 0;
    for (unsigned i = 0; i < n; i++) {
        char buf[32];
        snprintf(buf, sizeof buf, "s%" PRIu64, seed + i);
        char *p = strdup(buf);
        if (p == NULL)
            abort();
        sum += (unsigned char)p[1];
        free(p);
    }
    return sum;
}

int main(int argc, char **argv)
{
    int use_memres = argc > 1 && strcmp(argv[1], "memres") == 0;
    long rounds = argc > 2 ? atol(argv[2]) : 200;
    uint64_t sum = strings(1000, 1);
    /* the plugin, next to the program */
    char path[4096];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 32);
    if (n <= 0)
        return 2;
    path[n] = 0;
    char *slash = strrchr(path, '/');
    strcpy(slash ? slash + 1 : path, "libkat_plugin.so");
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        fprintf(stderr, "kat_plugin: %s\n", dlerror());
        return 2;
    }
    uint64_t (*run)(int, long, uint64_t *);
    *(void **)&run = dlsym(h, "kat_plugin_run");
    if (run == NULL) {
        fprintf(stderr, "kat_plugin: %s\n", dlerror());
        return 2;
    }
    int threads = argc > 3 ? atoi(argv[3]) : 1;
    if (threads < 1 || threads > 64)
        threads = 1;
    struct worker w[64];
    uint64_t count = 0;
    for (int i = 0; i < threads; i++) {
        w[i] = (struct worker){ .run = run, .use_memres = use_memres, .rounds = rounds };
        if (threads > 1 && pthread_create(&w[i].t, NULL, work, &w[i]) != 0)
            return 2;
    }
    for (int i = 0; i < threads; i++) {
        if (threads > 1)
            pthread_join(w[i].t, NULL);
        else
            work(&w[i]);
        sum += w[i].sum;
        count += w[i].count;
    }
    sum += strings(1000, 2);
    printf("kat_plugin: %ld rounds on %d thread%s, checksum %" PRIu64 "\n", rounds, threads, threads > 1 ? "s" : "", sum);
    fprintf(stderr, "KAT-COUNT SITE %" PRIu64 "\n", count);
    return 0;
}

#endif
