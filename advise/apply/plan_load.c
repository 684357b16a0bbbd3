/* SPDX-License-Identifier: MIT */
/* advise/apply/plan_load.c -- the plan read at start-up (its format:
 * analyze/plan.c), its frames placed at this run's load addresses, and the
 * two read-only tables the allocation path asks: the planned stacks' first
 * frames (a set), and the hash of each planned stack's frames -> its
 * route.  A module the plan names that is not loaded at start-up (a later
 * dlopen) keeps its stacks on glibc. */
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "apply.h"

struct kv *g_first;
size_t g_first_mask;
struct kv *g_stacks;
size_t g_stacks_mask;
uint64_t *g_prefix;
size_t g_prefix_mask;

static void *zmap(size_t n)
{
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void first_add(uint64_t f, unsigned route)
{
    size_t i = (size_t)((f * UINT64_C(0x9E3779B97F4A7C15)) >> 20) & g_first_mask;
    while (g_first[i].key != 0 && g_first[i].key != f)
        i = (i + 1) & g_first_mask;
    g_first[i].key = f;
    g_first[i].route = g_walk <= 1 ? route : FIRST_WALK;
}

/* Enters fr's prefixes of 2, 4, 8 ... frames, up to all n (a stack that
 * ended at 2 or 4 frames is its own prefix: the walk of k frames cannot
 * tell a stack of k from a longer one). */
static void prefixes_add(const uint64_t *fr, unsigned n)
{
    for (unsigned k = 2; k <= n; k *= 2) {
        uint64_t key = mra_apply_prefix_key(fr, k);
        size_t i = (size_t)key & g_prefix_mask;
        while (g_prefix[i] != 0 && g_prefix[i] != key)
            i = (i + 1) & g_prefix_mask;
        g_prefix[i] = key;
    }
}

static void stack_add(const uint64_t *fr, unsigned n, unsigned route)
{
    uint64_t h = mra_frames_hash(fr, n) | 1u;
    size_t i = (size_t)h & g_stacks_mask;
    while (g_stacks[i].key != 0 && g_stacks[i].key != h)
        i = (i + 1) & g_stacks_mask;
    g_stacks[i].key = h;
    g_stacks[i].route = route;
}

/* ---- modules: the plan's paths at this run's load biases ---- */

#define MAX_MODULES 1024u
struct pmod {
    const char *path;            /* in the plan's text */
    uint64_t bias;
    bool loaded;
};
static struct pmod g_mods[MAX_MODULES];
static unsigned g_nmods;
static char g_exe[4096];

static const char *base_of(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static int phdr_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    const char *name = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : g_exe;
    for (unsigned i = 0; i < g_nmods; i++) {
        if (g_mods[i].loaded)
            continue;
        if (strcmp(g_mods[i].path, name) == 0) {
            g_mods[i].bias = (uint64_t)info->dlpi_addr;
            g_mods[i].loaded = true;
        }
    }
    /* a path written otherwise (a symbolic link): the same file name */
    for (unsigned i = 0; i < g_nmods; i++) {
        if (g_mods[i].loaded)
            continue;
        if (strcmp(base_of(g_mods[i].path), base_of(name)) == 0) {
            g_mods[i].bias = (uint64_t)info->dlpi_addr;
            g_mods[i].loaded = true;
        }
    }
    return 0;
}

static char *read_all(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = __libc_malloc(cap + 1);
    for (;;) {
        if (!buf)
            break;
        if (n == cap) {
            char *nb = __libc_realloc(buf, cap * 2 + 1);
            if (!nb) {
                __libc_free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0) {
            __libc_free(buf);
            buf = NULL;
            break;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (buf) {
        buf[n] = 0;
        *len = n;
    }
    return buf;
}

/* Copies the line at *cur into buf (cut at cap - 1), advances *cur past
 * it: false at the end of the text. */
static bool next_line(const char **cur, char *buf, size_t cap)
{
    const char *p = *cur;
    if (!*p)
        return false;
    const char *e = strchr(p, '\n');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    *cur = e ? e + 1 : p + n;
    if (n >= cap)
        n = cap - 1;
    memcpy(buf, p, n);
    buf[n] = 0;
    return true;
}

static size_t pow2_above(size_t n)
{
    size_t c = 64;
    while (c < n * 2)
        c *= 2;
    return c;
}

static enum route_kind kind_of(const char *k, struct route *rt)
{
    rt->rewind = strcmp(k, "arena-rewind") == 0;
    rt->objpool = strcmp(k, "objpool") == 0;
    if (strcmp(k, "arena") == 0 || rt->rewind)
        return RK_REGION;
    if (strcmp(k, "pools") == 0 || rt->objpool)
        return RK_SLAB;
    return 0;
}

/* Reads and places the plan: 0, or -1 with a line on stderr. */
int mra_apply_plan_load(const char *path)
{
    size_t len = 0;
    char *text = read_all(path, &len);
    if (!text) {
        fprintf(stderr, "memres-advise apply: cannot read the plan %s\n", path);
        return -1;
    }
    ssize_t xn = readlink("/proc/self/exe", g_exe, sizeof g_exe - 1);
    g_exe[xn > 0 ? (size_t)xn : 0] = 0;
    /* pass 1: header, routes, modules; count stacks */
    size_t nstacks = 0;
    bool header = false;
    char line[8192];
    for (const char *cur = text; next_line(&cur, line, sizeof line);) {
        if (!header) {
            if (strcmp(line, "memres-advise-plan 1") != 0)
                break;
            header = true;
        } else if (strncmp(line, "walk ", 5) == 0) {
            long k = strtol(line + 5, NULL, 10);
            g_walk = k < 1 ? 1 : k > (long)MRA_MAX_DEPTH ? MRA_MAX_DEPTH : (unsigned)k;
        } else if (strncmp(line, "module ", 7) == 0) {
            char *end;
            unsigned long m = strtoul(line + 7, &end, 10);
            if (m != g_nmods || m >= MAX_MODULES || *end != ' ')
                continue;
            size_t pl = strlen(end + 1);
            char *copy = __libc_malloc(pl + 1);
            if (!copy)
                continue;
            memcpy(copy, end + 1, pl + 1);
            g_mods[g_nmods++].path = copy;
        } else if (strncmp(line, "route ", 6) == 0) {
            unsigned r, site;
            unsigned long long size;
            char kind[32];
            if (sscanf(line + 6, "%u %31s %llu %u", &r, kind, &size, &site) != 4 || r != g_nroutes + 1 ||
                r > MAX_ROUTES)
                continue;
            struct route *rt = &g_routes[r];
            rt->kind = kind_of(kind, rt);
            rt->site = site;
            g_nroutes = r;
        } else if (strncmp(line, "stack ", 6) == 0) {
            nstacks++;
        }
    }
    if (!header) {
        fprintf(stderr, "memres-advise apply: %s is not a plan of version 1\n", path);
        __libc_free(text);
        return -1;
    }
    dl_iterate_phdr(phdr_cb, NULL);
    g_first_mask = pow2_above(nstacks + 1) - 1;
    g_stacks_mask = g_first_mask;
    /* up to log2(walk) prefixes a stack */
    g_prefix_mask = pow2_above((nstacks + 1) * 4) - 1;
    g_first = zmap((g_first_mask + 1) * sizeof *g_first);
    g_stacks = zmap((g_stacks_mask + 1) * sizeof *g_stacks);
    g_prefix = g_walk > 2 ? zmap((g_prefix_mask + 1) * sizeof *g_prefix) : NULL;
    if (!g_first || !g_stacks) {
        fprintf(stderr, "memres-advise apply: out of memory reading the plan\n");
        return -1;
    }
    /* pass 2: the stacks, placed */
    for (const char *cur = text; next_line(&cur, line, sizeof line);) {
        if (strncmp(line, "stack ", 6) != 0)
            continue;
        char *end;
        unsigned long r = strtoul(line + 6, &end, 10);
        unsigned long n = strtoul(end, &end, 10);
        if (r == 0 || r > g_nroutes || n == 0 || n > MRA_MAX_DEPTH || g_routes[r].kind == 0)
            continue;
        uint64_t fr[MRA_MAX_DEPTH];
        bool ok = true;
        for (unsigned long j = 0; j < n && ok; j++) {
            unsigned long m = strtoul(end, &end, 10);
            if (*end != ':' || m >= g_nmods || !g_mods[m].loaded)
                ok = false;
            else
                fr[j] = strtoull(end + 1, &end, 16) + g_mods[m].bias;
        }
        if (!ok)
            continue;
        first_add(fr[0], (unsigned)r);
        stack_add(fr, (unsigned)n, (unsigned)r);
        if (g_prefix)
            prefixes_add(fr, (unsigned)n);
    }
    __libc_free(text);
    return 0;
}
