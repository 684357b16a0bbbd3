/* memres/memres.h -- the umbrella header: every C header of memres, and the
 * version.  Link with -lmemres (pkg-config memres, or CMake memres::memres). */
#ifndef MEMRES_MEMRES_H
#define MEMRES_MEMRES_H

#define MEMRES_VERSION_MAJOR 0
#define MEMRES_VERSION_MINOR 1
#define MEMRES_VERSION_PATCH 0
#define MEMRES_VERSION_STRING "0.1.0"
/* MEMRES_VERSION >= MEMRES_MAKE_VERSION(0, 1, 0) */
#define MEMRES_MAKE_VERSION(major, minor, patch) ((major) * 10000 + (minor) * 100 + (patch))
#define MEMRES_VERSION MEMRES_MAKE_VERSION(MEMRES_VERSION_MAJOR, MEMRES_VERSION_MINOR, MEMRES_VERSION_PATCH)

#include "memres/resource.h"
#include "memres/arena.h"
#include "memres/objpool.h"
#include "memres/pools.h"
#include "memres/blocks.h"

#endif /* MEMRES_MEMRES_H */
