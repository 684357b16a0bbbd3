/* SPDX-License-Identifier: MIT */
/* bench/sc_lua.c -- scenario "lua": the Lua 5.4 interpreter running the
 * project's Lua benchmark (integrations/lua/tests/bench.lua: binary trees of
 * tables, string building and interning, closures in rehashed tables,
 * coroutines), size 100 (--quick 5).
 *
 *   malloc         luaL_newstate: Lua's own allocator, realloc/free (run
 *                  under glibc, jemalloc, mimalloc, tcmalloc by the harness)
 *   memres pools   mr_lua_newstate over mr_pools_create(NULL): the shipped
 *                  integration (integrations/lua/lua.c, compiled in)
 *
 * The script's printed lines are the output; the checksum is their FNV-1a
 * hash.  Timing starts after the script is read, before the state is made;
 * lua_close is timed.  Built when pkg-config finds lua5.4 (BENCH_HAVE_LUA).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#ifdef BENCH_HAVE_LUA
#  include <lauxlib.h>
#  include <lualib.h>

#  include "memres/lua.h"

static uint64_t fnv(uint64_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ULL;
    return h;
}

static int lua_print(lua_State *L)
{
    bench_out *out = lua_touserdata(L, lua_upvalueindex(1));
    int n = lua_gettop(L);
    for (int i = 1; i <= n; i++) {
        size_t len;
        const char *s = luaL_tolstring(L, i, &len);
        bench_printf(out, "%s%s", i > 1 ? "\t" : "", s);
        out->checksum = fnv(out->checksum, s, len);
        lua_pop(L, 1);
    }
    bench_printf(out, "\n");
    return 0;
}

static char *read_script(size_t *len)
{
    const char *path = BENCH_SOURCE_DIR "/integrations/lua/tests/bench.lua";
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        perror(path);
        return NULL;
    }
    char *s = malloc(1 << 16);
    *len = s != NULL ? fread(s, 1, (1 << 16) - 1, f) : 0;
    fclose(f);
    return s;
}

/* Runs the script in L (NULL: no state) and closes it. */
static int run_state(lua_State *L, const bench_args *args, bench_out *out, const char *src, size_t len)
{
    if (L == NULL)
        return 1;
    luaL_openlibs(L);
    lua_pushlightuserdata(L, out);
    lua_pushcclosure(L, lua_print, 1);
    lua_setglobal(L, "print");
    lua_createtable(L, 1, 0);
    lua_pushinteger(L, args->quick ? 5 : 100);
    lua_rawseti(L, -2, 1);
    lua_setglobal(L, "arg");
    out->checksum = 0xcbf29ce484222325ULL;
    int rc = luaL_loadbuffer(L, src, len, "bench.lua") || lua_pcall(L, 0, 0, 0);
    if (rc != 0)
        fprintf(stderr, "lua: %s\n", lua_tostring(L, -1));
    lua_close(L);
    return rc != 0;
}

static int run_malloc(const bench_args *args, bench_out *out)
{
    size_t len;
    char *src = read_script(&len);
    if (src == NULL)
        return 1;
    bench_timing_start();
    int rc = run_state(luaL_newstate(), args, out, src, len);
    free(src);
    return rc;
}

static int run_pools(const bench_args *args, bench_out *out)
{
    size_t len;
    char *src = read_script(&len);
    if (src == NULL)
        return 1;
    bench_timing_start();
    mr_pools *p = mr_pools_create(NULL);
    int rc = p == NULL || run_state(mr_lua_newstate(p), args, out, src, len);
    if (p != NULL) {
        mr_stats s;
        mr_pools_stats(p, &s);
        out->upstream_bytes = s.peak_held;
        mr_pools_destroy(p);
    }
    free(src);
    return rc;
}

#  define LUA_UNAVAILABLE NULL
#else
#  define run_malloc NULL
#  define run_pools NULL
static const char *lua_unavailable(void) { return "lua5.4 (liblua5.4-dev) not found at build time"; }
#  define LUA_UNAVAILABLE lua_unavailable
#endif

const bench_variant bench_lua[] = {
    {"lua", "malloc", BENCH_MALLOC, false, LUA_UNAVAILABLE, run_malloc},
    {"lua", "memres pools", BENCH_MEMRES, false, LUA_UNAVAILABLE, run_pools},
    {NULL, NULL, BENCH_MEMRES, false, NULL, NULL},
};
