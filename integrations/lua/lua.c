/* SPDX-License-Identifier: MIT */
/* integrations/lua/lua.c -- Lua's allocator on memres pools (memres/lua.h).
 *
 * lua_Alloc has four cases and each maps to one inline pool call: free
 * (nsize 0) to mr_pools_free with osize, allocate (ptr NULL) to
 * mr_pools_alloc, resize to mr_pools_realloc, which keeps the block when
 * osize and nsize share a class.  The sizes Lua passes are the sizes it
 * asked for, so the class recomputed at free or resize is the block's.
 * Nothing here keeps state: the user data is the pool.
 */
#include <errno.h>
#include <stdio.h>

#include "memres/lua.h"

MR_API void *mr_lua_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    mr_pools *p = ud;
    if (nsize == 0) {
        if (ptr != NULL)
            mr_pools_free(p, ptr, osize, MR_LUA_ALIGN);
        return NULL;
    }
    if (ptr == NULL)
        return mr_pools_alloc(p, nsize, MR_LUA_ALIGN);
    return mr_pools_realloc(p, ptr, osize, nsize, MR_LUA_ALIGN);
}

/* As lauxlib's: an error outside any protected call reaches here. */
static int panic(lua_State *L)
{
    const char *msg = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "error object is not a string";
    fprintf(stderr, "PANIC: unprotected error in call to Lua API (%s)\n", msg);
    fflush(stderr);
    return 0; /* Lua aborts */
}

MR_API lua_State *mr_lua_newstate(mr_pools *p)
{
    if (p == NULL) {
        errno = EINVAL;
        return NULL;
    }
    lua_State *L = lua_newstate(mr_lua_alloc, p);
    if (L == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    lua_atpanic(L, panic);
    return L;
}
