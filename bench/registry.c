/* SPDX-License-Identifier: MIT */
/* bench/registry.c -- what the benchmark can run: the scenario tables of
 * the sc_*.c and sc_*.cpp files, grouped by scenario, and the malloc
 * implementations that BENCH_MALLOC variants run under (glibc, and the
 * Debian .so files of jemalloc, mimalloc and tcmalloc for LD_PRELOAD).
 *
 * Registration is this explicit list: every scenario file defines one
 * NULL-name-terminated table and tables[] below names it, so a C and a C++
 * file join the same way and a missing file is a link error.
 */
#include <string.h>
#include <unistd.h>

#include "harness.h"

static const bench_variant *const tables[] = {
    bench_binary_trees, bench_list, bench_git_objects, bench_churn, bench_strings, bench_request,
    bench_tree, bench_lua, bench_sqlite, bench_producer_consumer,
};

scenario scenarios[MAX_SCENARIOS];
int n_scenarios;

static void registry_add(const bench_variant *v)
{
    scenario *s = NULL;
    for (int i = 0; i < n_scenarios; i++)
        if (strcmp(scenarios[i].name, v->scenario) == 0)
            s = &scenarios[i];
    if (s == NULL) {
        if (n_scenarios == MAX_SCENARIOS)
            die("too many scenarios");
        s = &scenarios[n_scenarios++];
        s->name = v->scenario;
    }
    if (s->nv == MAX_VARIANTS)
        die("too many variants in %s", s->name);
    s->v[s->nv++] = v;
}

void registry_build(void)
{
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++)
        for (const bench_variant *t = tables[i]; t->name != NULL; t++)
            if (t->scenario != NULL)
                registry_add(t);
}

const bench_variant *registry_find(const char *scen, const char *variant)
{
    for (int i = 0; i < n_scenarios; i++)
        if (strcmp(scenarios[i].name, scen) == 0)
            for (int j = 0; j < scenarios[i].nv; j++)
                if (strcmp(scenarios[i].v[j]->name, variant) == 0)
                    return scenarios[i].v[j];
    return NULL;
}

const char *variant_unavailable(const bench_variant *v)
{
    if (v->run == NULL)
        return "not built in";
    return v->unavailable ? v->unavailable() : NULL;
}

const char *kind_name(enum bench_kind k)
{
    switch (k) {
    case BENCH_MEMRES: return "memres";
    case BENCH_MALLOC: return "malloc";
    case BENCH_PEER: return "peer";
    case BENCH_LIMIT: return "limit";
    case BENCH_EXTERNAL: return "external";
    }
    return "?";
}

/* ---- malloc implementations ---- */

malloc_impl mallocs[N_MALLOCS] = {
    { "glibc", NULL, NULL, "" },
    { "jemalloc", "libjemalloc.so.2", "libjemalloc2", "" },
    { "mimalloc", "libmimalloc.so.2", "libmimalloc2.0", "" },
    { "tcmalloc", "libtcmalloc_minimal.so.4", "libtcmalloc-minimal4", "" },
};

#if defined(__x86_64__)
#  define MULTIARCH "x86_64-linux-gnu"
#elif defined(__aarch64__)
#  define MULTIARCH "aarch64-linux-gnu"
#else
#  define MULTIARCH "unknown"
#endif

void mallocs_find(void)
{
    static const char *const dirs[] = {
        "/usr/lib/" MULTIARCH, "/lib/" MULTIARCH, "/usr/lib64", "/usr/lib", "/usr/local/lib",
    };
    for (int i = 0; i < N_MALLOCS; i++) {
        malloc_impl *m = &mallocs[i];
        if (m->soname == NULL) {
            snprintf(m->path, sizeof m->path, "(built in)");
            continue;
        }
        for (size_t d = 0; d < sizeof dirs / sizeof dirs[0] && m->path[0] == '\0'; d++) {
            char p[512];
            snprintf(p, sizeof p, "%s/%s", dirs[d], m->soname);
            if (access(p, R_OK) == 0)
                snprintf(m->path, sizeof m->path, "%s", p);
        }
    }
}

int malloc_by_name(const char *name)
{
    for (int i = 0; i < N_MALLOCS; i++)
        if (strcmp(mallocs[i].name, name) == 0)
            return i;
    return -1;
}
