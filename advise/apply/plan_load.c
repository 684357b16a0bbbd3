/* SPDX-License-Identifier: MIT */
/* advise/apply/plan_load.c -- the plan read at start-up (its format:
 * analyze/plan.c), its frames placed at this run's load addresses, and the
 * two read-only tables the allocation path asks: the planned stacks' first
 * frames (a set), and the hash of each planned stack's frames -> its
 * route.  A module the plan names that is not loaded at start-up (a plugin
 * the program dlopens later) has its stacks placed when it is found loaded
 * (mra_apply_plan_late): until then they are glibc's. */
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
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
    g_first[i].route = g_walk <= 1 ? route : FIRST_WALK;
    __atomic_store_n(&g_first[i].key, f, __ATOMIC_RELEASE); /* after its route */
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
        __atomic_store_n(&g_prefix[i], key, __ATOMIC_RELEASE);
    }
}

static void stack_add(const uint64_t *fr, unsigned n, unsigned route)
{
    uint64_t h = mra_frames_hash(fr, n) | 1u;
    size_t i = (size_t)h & g_stacks_mask;
    while (g_stacks[i].key != 0 && g_stacks[i].key != h)
        i = (i + 1) & g_stacks_mask;
    g_stacks[i].route = route;
    __atomic_store_n(&g_stacks[i].key, h, __ATOMIC_RELEASE); /* after its route */
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
/* whether some of the plan's stacks wait for a module not loaded when
 * last looked for, and their lines (in the plan's text, kept); a module
 * unloaded keeps its stacks at the address it had (a call from there is
 * served by a route: safe, as any call is) */
_Atomic bool g_late;
static const char **g_late_lines;
static size_t g_nlate;
static unsigned long long g_loads_seen; /* dl_phdr_info's dlpi_adds at the last look */
static pthread_mutex_t g_late_mu = PTHREAD_MUTEX_INITIALIZER;

static const char *base_of(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* arg: the modules loaded so far (dlpi_adds) when last looked, and now */
struct loads {
    unsigned long long seen, now;
};

static int phdr_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct loads *ld = arg;
    /* no module loaded since the last look: nothing to place */
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs)) {
        if (info->dlpi_adds == ld->seen)
            return 1;
        ld->now = info->dlpi_adds;
    }
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

/* Places the plan's line if it is a stack whose modules are all loaded:
 * PLACE_DONE; PLACE_LATE: a stack with a module not loaded (yet);
 * PLACE_NONE: any other line. */
enum place { PLACE_NONE, PLACE_DONE, PLACE_LATE };
static enum place stack_place(const char *line)
{
    if (strncmp(line, "stack ", 6) != 0)
        return PLACE_NONE;
    char *end;
    unsigned long r = strtoul(line + 6, &end, 10);
    unsigned long n = strtoul(end, &end, 10);
    if (r == 0 || r > g_nroutes || n == 0 || n > MRA_MAX_DEPTH || g_routes[r].kind == 0)
        return PLACE_NONE;
    uint64_t fr[MRA_MAX_DEPTH];
    for (unsigned long j = 0; j < n; j++) {
        unsigned long m = strtoul(end, &end, 10);
        if (*end != ':' || m >= g_nmods)
            return PLACE_NONE;
        if (!g_mods[m].loaded)
            return PLACE_LATE;
        fr[j] = strtoull(end + 1, &end, 16) + g_mods[m].bias;
    }
    first_add(fr[0], (unsigned)r);
    stack_add(fr, (unsigned)n, (unsigned)r);
    if (g_prefix)
        prefixes_add(fr, (unsigned)n);
    return PLACE_DONE;
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
    struct loads ld = { ~0ull, 0 };
    dl_iterate_phdr(phdr_cb, &ld);
    g_loads_seen = ld.now;
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
    /* pass 2: the stacks, placed, or kept for their modules' load */
    g_late_lines = __libc_malloc((nstacks + 1) * sizeof *g_late_lines);
    if (!g_late_lines) {
        fprintf(stderr, "memres-advise apply: out of memory reading the plan\n");
        return -1;
    }
    for (const char *cur = text; *cur;) {
        const char *at = cur;
        if (!next_line(&cur, line, sizeof line))
            break;
        if (stack_place(line) == PLACE_LATE)
            g_late_lines[g_nlate++] = at;
    }
    if (g_nlate == 0) {
        __libc_free(g_late_lines);
        g_late_lines = NULL;
        __libc_free(text);
    } /* else kept: the late lines point into it */
    atomic_store_explicit(&g_late, g_nlate != 0, memory_order_release);
    return 0;
}

void mra_apply_plan_late(void)
{
    if (pthread_mutex_trylock(&g_late_mu) != 0)
        return; /* another thread looks */
    struct loads ld = { g_loads_seen, g_loads_seen };
    dl_iterate_phdr(phdr_cb, &ld);
    if (ld.now != g_loads_seen) {
        g_loads_seen = ld.now;
        size_t kept = 0;
        bool placed = false;
        char line[8192];
        for (size_t i = 0; i < g_nlate; i++) {
            const char *cur = g_late_lines[i];
            next_line(&cur, line, sizeof line);
            enum place pl = stack_place(line);
            if (pl == PLACE_LATE)
                g_late_lines[kept++] = g_late_lines[i];
            placed |= pl == PLACE_DONE;
        }
        g_nlate = kept;
        if (placed) /* the threads' memos of stacks walked before may hold glibc for them */
            atomic_fetch_add_explicit(&mra_fc_epoch, 1, memory_order_release);
        atomic_store_explicit(&g_late, g_nlate != 0, memory_order_release);
    }
    pthread_mutex_unlock(&g_late_mu);
}
