/* SPDX-License-Identifier: MIT */
/* memres/memres.h -- the umbrella header: every C header of memres, and the
 * version (from memres/config.h).  Link with -lmemres (pkg-config memres, or
 * CMake memres::memres). */
#ifndef MEMRES_MEMRES_H
#define MEMRES_MEMRES_H

#include "memres/config.h"
#include "memres/resource.h"
#include "memres/pages.h"
#include "memres/arena.h"
#include "memres/objpool.h"
#include "memres/pools.h"
#include "memres/blocks.h"
#include "memres/adaptors.h"
#include "memres/tree.h"

#endif /* MEMRES_MEMRES_H */
