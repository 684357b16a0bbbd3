/* SPDX-License-Identifier: MIT */
/* memres/lua.h -- Lua 5.4 on memres size-class pools (the memres-lua
 * component: CMake target memres::lua, pkg-config memres-lua, Debian package
 * libmemres-lua-dev; built when pkg-config finds lua5.4).
 *
 * Lua asks for all its memory through one lua_Alloc function and passes the
 * old size of every block it frees or resizes, which is exactly what
 * mr_pools_free and mr_pools_realloc need: no header before a block, no
 * lookup, the class recomputed from the size.  A resize that stays in its
 * class (a string buffer or a table growing by a few slots) keeps the block
 * with no call and no copy.
 *
 *     mr_pools *p = mr_pools_create(NULL);
 *     lua_State *L = mr_lua_newstate(p);      (or lua_newstate(mr_lua_alloc, p))
 *     luaL_openlibs(L);
 *     ... luaL_dostring(L, "...") ...
 *     lua_close(L);                            every block is back in p
 *     mr_pools_destroy(p);
 *
 * Out of memory: when the pools cannot get memory from their upstream the
 * allocator returns NULL and Lua does what it does with any allocator: a
 * full emergency collection and one retry, then the error "not enough
 * memory" (LUA_ERRMEM), which a protected call catches; the state stays
 * usable.  Put a limiting adaptor (memres/adaptors.h) under the pools to
 * cap a script's memory.
 *
 * Threads: a lua_State and everything it creates (coroutines included) is
 * used by one thread at a time, and so is its pool (size-class pools are not
 * thread-safe): give each state its own pool, or serialise the states that
 * share one.  One pool may serve several states used by one thread.
 *
 * Lifetime: the pool must outlive every state that allocates from it.
 * lua_close gives every block back; mr_pools_destroy (or mr_pools_release)
 * then returns the memory upstream.
 */
#ifndef MEMRES_LUA_H
#define MEMRES_LUA_H

#include <stddef.h>

#include <lua.h>

#include "memres/pools.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The alignment every block for Lua gets: what Lua asks of its allocator,
 * the alignment of its LUAI_MAXALIGN union (luaconf.h: 8 with the default
 * double lua_Number on LP64; 16 with long double).  Not malloc's 16: the
 * pools then serve Lua's 40- and 56-byte objects (closures, upvalues,
 * tables) from 8-byte classes (pools.h) at their size, not rounded up to a
 * multiple of 16.  Userdata blocks are aligned as
 * Lua promises, to LUAI_MAXALIGN, as on any allocator that gives only that. */
union mri_lua_maxalign {
    LUAI_MAXALIGN;
};
struct mri_lua_align_probe {
    char c;
    union mri_lua_maxalign u;
};
#define MR_LUA_ALIGN (offsetof(struct mri_lua_align_probe, u))

/* A lua_Alloc over the pools ud (an mr_pools *, not NULL), with Lua's
 * contract: nsize 0 frees ptr (osize bytes; ptr NULL: nothing) and returns
 * NULL; ptr NULL allocates nsize bytes (osize is then the kind of object,
 * ignored); otherwise resizes ptr from osize to nsize bytes, in place when
 * both fall in one class.  Returns NULL only when the request cannot be met
 * (ptr is then untouched), also for a shrink that moves the block to a
 * smaller class.  The common case is inline: no call into the library. */
MR_API void *mr_lua_alloc(void *ud, void *ptr, size_t osize, size_t nsize);

/* lua_newstate(mr_lua_alloc, p) with what luaL_newstate adds: a panic
 * function that prints the error to stderr (before Lua aborts).  Warnings
 * are off, as with luaL_newstate.  NULL with errno = EINVAL when p is NULL,
 * ENOMEM when the state could not be allocated (nothing is left allocated
 * in p). */
MR_API lua_State *mr_lua_newstate(mr_pools *p);

#ifdef __cplusplus
}
#endif
#endif /* MEMRES_LUA_H */
