/* SPDX-License-Identifier: MIT */
/* integrations/lua/tests/test_lua.c -- Lua on memres (memres/lua.h), as
 * named cmocka cases (one per script and per sweep).
 *
 * test_lua SCRIPT...
 *   Every script runs twice, on stock Lua (luaL_newstate: realloc/free) and
 *   on memres pools (mr_lua_newstate), with `print` captured; the outputs
 *   must be identical.  The pools sit on a tracking adaptor: after lua_close
 *   they hold no live block (stats in_use == 0, mr_pools_check), and after
 *   mr_pools_destroy nothing is outstanding upstream.  Also unit checks of
 *   mr_lua_alloc's four cases and resizes in and across classes.
 * test_lua --sweep SCRIPT
 *   The fault sweep: for N = 1, 2, ... the pools' Nth upstream request and
 *   every later one fail (mr_failing, persistent: Lua's emergency collection
 *   and retry fail too); the script must either complete with the stock
 *   output or fail with "not enough memory".  Then memory comes back (a
 *   valve between the pools and mr_failing opens) and, in the same state,
 *   the script must run again to the stock output (recovery).  Nothing
 *   leaks at any N.  The sweep ends at the first N that injects nothing.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <lauxlib.h>
#include <lualib.h>

#include "memres/adaptors.h"
#include "memres/lua.h"

#define ITEST_NAME "test_lua"
#include "itest.h"

/* ---- output capture: `print` appends to a buffer ---- */

static int capture_print(lua_State *L)
{
    text *t = lua_touserdata(L, lua_upvalueindex(1));
    int n = lua_gettop(L);
    for (int i = 1; i <= n; i++) {
        size_t len;
        const char *s = luaL_tolstring(L, i, &len);
        if (i > 1)
            text_add(t, "\t", 1);
        text_add(t, s, len);
        lua_pop(L, 1);
    }
    text_add(t, "\n", 1);
    return 0;
}

/* Opens the libraries and installs the capturing print (protected: it
 * allocates). */
static int setup(lua_State *L)
{
    luaL_openlibs(L);
    /* arg[1]: the scripts' size; MEMRES_LUA_ARG makes it small for the
     * builds that check every pool after each slow path (MEMRES_DEBUG=3) */
    const char *size = getenv("MEMRES_LUA_ARG");
    if (size != NULL) {
        lua_createtable(L, 1, 0);
        lua_pushstring(L, size);
        lua_rawseti(L, -2, 1);
        lua_setglobal(L, "arg");
    }
    lua_pushlightuserdata(L, lua_touserdata(L, 1));
    lua_pushcclosure(L, capture_print, 1);
    lua_setglobal(L, "print");
    return 0;
}

/* Runs the script in L; its printed output goes to out.  Returns the Lua
 * status; on error the message is appended to err (when not NULL). */
static int run(lua_State *L, const char *name, const char *src, size_t len, text *out, text *err)
{
    lua_pushcfunction(L, setup);
    lua_pushlightuserdata(L, out);
    int rc = lua_pcall(L, 1, 0, 0);
    if (rc == LUA_OK)
        rc = luaL_loadbuffer(L, src, len, name);
    if (rc == LUA_OK)
        rc = lua_pcall(L, 0, 0, 0);
    if (rc != LUA_OK) {
        size_t n;
        const char *m = lua_tolstring(L, -1, &n);
        if (err != NULL && m != NULL)
            text_add(err, m, n);
        lua_pop(L, 1);
    }
    return rc;
}

static text run_stock(const char *name, const char *src, size_t len)
{
    text out = {0}, err = {0};
    lua_State *L = luaL_newstate();
    if (L == NULL || run(L, name, src, len, &out, &err) != LUA_OK)
        fail_msg("%s on stock Lua: %s", name, err.s ? err.s : "no state");
    lua_close(L);
    free(err.s);
    return out;
}

/* ---- the scripts, stock vs memres ---- */

static void test_script(void **state)
{
    const char *path = *state;
    size_t len;
    char *src = read_file(path, &len);
    text stock = run_stock(path, src, len);

    mr_tracking *tr = mr_tracking_create(NULL);
    mr_pools_options po = {.upstream = mr_tracking_resource(tr)};
    mr_pools *p = mr_pools_create(&po);
    CHECK(tr != NULL && p != NULL, "%s: pools", path);
    lua_State *L = mr_lua_newstate(p);
    CHECK(L != NULL, "%s: mr_lua_newstate", path);
    text mine = {0}, err = {0};
    int rc = run(L, path, src, len, &mine, &err);
    CHECK(rc == LUA_OK, "%s on memres: %s", path, err.s ? err.s : "?");
    mr_stats s;
    mr_pools_stats(p, &s);
    CHECK(s.in_use > 0, "%s: pools in use before lua_close", path);
    lua_close(L);
    mr_pools_stats(p, &s);
    CHECK(s.in_use == 0, "%s: %zu bytes still in the pools after lua_close", path, s.in_use);
    CHECK(mr_pools_check(p), "%s: mr_pools_check", path);
    CHECK(stock.n == mine.n && memcmp(stock.s, mine.s, stock.n) == 0,
          "%s: output differs\n--- stock Lua:\n%s--- memres:\n%s", path, stock.s, mine.s ? mine.s : "");
    printf("%s: identical (%zu bytes of output, peak %zu bytes held)\n", path, mine.n, s.peak_held);
    mr_pools_destroy(p);
    CHECK(mr_tracking_outstanding(tr) == 0, "%s: upstream blocks outstanding after destroy", path);
    mr_tracking_destroy(tr);
    free(stock.s);
    free(mine.s);
    free(err.s);
    free(src);
}

/* ---- the allocator's cases ---- */

static void test_alloc_cases(void **state)
{
    (void)state;
    mr_tracking *tr = mr_tracking_create(NULL);
    mr_pools_options po = {.upstream = mr_tracking_resource(tr)};
    mr_pools *p = mr_pools_create(&po);
    CHECK(mr_lua_alloc(p, NULL, 0, 0) == NULL, "free of NULL returns NULL");
    char *a = mr_lua_alloc(p, NULL, LUA_TTABLE, 40); /* osize: a type tag, ignored */
    CHECK(a != NULL && (uintptr_t)a % MR_LUA_ALIGN == 0, "allocate 40");
    memset(a, 'x', 40);
    size_t bs = mr_pools_block_size(p, 40, MR_LUA_ALIGN);
    char *b = mr_lua_alloc(p, a, 40, bs); /* grows within its class: stays */
    CHECK(b == a, "resize 40 -> %zu in the same class moved the block", bs);
    char *c = mr_lua_alloc(p, b, bs, 4000); /* to another class: moves, keeps the bytes */
    CHECK(c != NULL && c != b && memcmp(c, "xxxxxxxxxx", 10) == 0 && c[39] == 'x', "resize across classes");
    char *d = mr_lua_alloc(p, c, 4000, 8); /* shrinks across classes */
    CHECK(d != NULL && d[0] == 'x' && d[7] == 'x', "shrink across classes");
    char *e = mr_lua_alloc(p, d, 8, 200000); /* to a direct block and back */
    CHECK(e != NULL && e[7] == 'x', "grow to a direct block");
    char *f = mr_lua_alloc(p, e, 200000, 300000);
    CHECK(f != NULL && f[0] == 'x', "direct to direct");
    CHECK(mr_lua_alloc(p, f, 300000, 0) == NULL, "free returns NULL");
    mr_stats s;
    mr_pools_stats(p, &s);
    CHECK(s.in_use == 0 && mr_pools_check(p), "the unit's blocks all freed");
    errno = 0;
    CHECK(mr_lua_newstate(NULL) == NULL && errno == EINVAL, "mr_lua_newstate(NULL): EINVAL");
    mr_pools_destroy(p);
    CHECK(mr_tracking_outstanding(tr) == 0, "unit: nothing outstanding");
    mr_tracking_destroy(tr);
}

/* ---- the fault sweep ---- */

/* The valve: while closed, requests go through the failing adaptor; once
 * open, straight to the failing adaptor's upstream (memory is back).  Frees
 * always go to that upstream, which is where every block came from. */
typedef struct valve {
    mr_resource base;
    mr_resource *failing, *direct;
    bool open;
} valve;

static void *valve_allocate(mr_resource *self, size_t size, size_t align)
{
    valve *v = (valve *)(void *)self;
    return mr_allocate(v->open ? v->direct : v->failing, size, align);
}

static void valve_deallocate(mr_resource *self, void *p, size_t size, size_t align)
{
    valve *v = (valve *)(void *)self;
    mr_deallocate(v->direct, p, size, align);
}

static const struct mr_resource_ops valve_ops = {valve_allocate, valve_deallocate, NULL};

static void test_fault_sweep(void **state)
{
    const char *path = *state;
    size_t len;
    char *src = read_file(path, &len);
    text stock = run_stock(path, src, len);
    unsigned long n;
    unsigned long errmem = 0, completed = 0, nostate = 0;
    for (n = 1;; n++) {
        mr_failing_options fo = {.fail_at = n, .persistent = true};
        mr_failing *fl = mr_failing_create(&fo);
        valve v = {{&valve_ops}, mr_failing_resource(fl), mr_get_default_resource(), false};
        mr_tracking *tr = mr_tracking_create(&v.base);
        mr_pools_options po = {.upstream = mr_tracking_resource(tr)};
        mr_pools *p = mr_pools_create(&po);
        lua_State *L = p != NULL ? mr_lua_newstate(p) : NULL;
        if (L == NULL) {
            nostate++;
        } else {
            text out = {0}, err = {0};
            int rc = run(L, path, src, len, &out, &err);
            if (rc == LUA_OK) {
                completed++;
                CHECK(out.n == stock.n && memcmp(out.s, stock.s, out.n) == 0, "N=%lu: completed with other output",
                      n);
            } else {
                errmem++;
                CHECK(rc == LUA_ERRMEM && err.s != NULL && strstr(err.s, "not enough memory") != NULL,
                      "N=%lu: status %d, error '%s' (expected 'not enough memory')", n, rc, err.s ? err.s : "");
                /* recovery: memory is back; the same state runs the script again, to the end */
                v.open = true;
                text again = {0};
                rc = run(L, path, src, len, &again, NULL);
                CHECK(rc == LUA_OK && again.n == stock.n && memcmp(again.s, stock.s, stock.n) == 0,
                      "N=%lu: no recovery after 'not enough memory' (status %d)", n, rc);
                free(again.s);
            }
            free(out.s);
            free(err.s);
            lua_close(L);
            mr_stats s;
            mr_pools_stats(p, &s);
            CHECK(s.in_use == 0 && mr_pools_check(p), "N=%lu: %zu bytes left in the pools after lua_close", n,
                  s.in_use);
        }
        mr_pools_destroy(p);
        CHECK(mr_tracking_outstanding(tr) == 0, "N=%lu: upstream blocks leaked", n);
        unsigned long injected = mr_failing_failures(fl);
        mr_tracking_destroy(tr);
        mr_failing_destroy(fl);
        if (injected == 0)
            break;
    }
    printf("%s: fault sweep: %lu failure points (%lu 'not enough memory' then recovered, %lu completed, "
           "%lu no state)\n",
           path, n - 1, errmem, completed, nostate);
    CHECK(n > 10 && errmem > 0, "the sweep swept too little");
    free(stock.s);
    free(src);
}

/* The base name of a path, for a case's name. */
static const char *base(const char *path)
{
    const char *b = strrchr(path, '/');
    return b != NULL ? b + 1 : path;
}

int main(int argc, char **argv)
{
    bool sweeps = argc >= 3 && strcmp(argv[1], "--sweep") == 0;
    int first = sweeps ? 2 : 1, n = argc - first + (sweeps ? 0 : 1);
    struct CMUnitTest *cases = calloc((size_t)n, sizeof *cases);
    char **names = calloc((size_t)n, sizeof *names);
    if (cases == NULL || names == NULL)
        return 2;
    int k = 0;
    if (!sweeps)
        cases[k++] = (struct CMUnitTest)cmocka_unit_test(test_alloc_cases);
    for (int i = first; i < argc; i++, k++) {
        const char *kind = sweeps ? "test_fault_sweep" : "test_script";
        size_t len = strlen(kind) + strlen(base(argv[i])) + 4;
        names[k] = malloc(len);
        if (names[k] == NULL)
            return 2;
        snprintf(names[k], len, "%s (%s)", kind, base(argv[i]));
        cases[k] = (struct CMUnitTest){names[k], sweeps ? test_fault_sweep : test_script, NULL, NULL, argv[i]};
    }
    int rc = _cmocka_run_group_tests(sweeps ? "lua fault sweeps" : "lua on memres", cases, (size_t)n, NULL, NULL);
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
    free(cases);
    return rc;
}
