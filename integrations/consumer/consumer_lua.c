/* SPDX-License-Identifier: MIT */
/* integrations/consumer/consumer_lua.c -- Lua on memres, built against the
 * installed memres-lua (CMake memres::lua or pkg-config memres-lua).
 * Exits 0 when a script ran and the pools are empty after lua_close. */
#include <stdio.h>

#include <lauxlib.h>
#include <lualib.h>
#include <memres/lua.h>

int main(void)
{
    mr_pools *p = mr_pools_create(NULL);
    lua_State *L = p != NULL ? mr_lua_newstate(p) : NULL;
    if (L == NULL)
        return 1;
    luaL_openlibs(L);
    int rc = luaL_dostring(L, "local t = {} for i = 1, 1000 do t[i] = ('x'):rep(i % 50) end "
                              "return #table.concat(t)");
    long long n = rc == LUA_OK ? (long long)lua_tointeger(L, -1) : -1;
    lua_close(L);
    mr_stats s;
    mr_pools_stats(p, &s);
    mr_pools_destroy(p);
    printf("consumer_lua: %lld bytes built, %zu in use after lua_close\n", n, s.in_use);
    return n == 24500 && s.in_use == 0 ? 0 : 1;
}
