/* SPDX-License-Identifier: MIT */
/* memres/resource.h -- the polymorphic memory resource interface.
 *
 * An mr_resource is anything that can allocate and deallocate memory with a
 * given size and alignment: malloc, an arena, a pool, a block cache, an
 * adaptor.  Every memres allocator is itself an mr_resource and takes another
 * one as its upstream, so they stack (like C++17 std::pmr::memory_resource).
 *
 * The contract for every resource:
 *   - alignment must be a non-zero power of two, else NULL with errno = EINVAL
 *     and the resource is never called (the one clause mr_allocate checks
 *     before dispatch, so no implementation sees a bad alignment);
 *   - an allocation that cannot be satisfied returns NULL with errno = ENOMEM
 *     and changes no state; nothing aborts or prints;
 *   - size 0 returns a valid non-NULL pointer that must not be dereferenced;
 *   - deallocate receives the same size and alignment that allocate got.
 * The last three are promises each implementation keeps (and the tests
 * check); mr_allocate cannot verify them.
 *
 * Options structs (mr_arena_options, mr_pools_options, ...) only ever grow
 * at the end, and the zero value of every new field keeps the old
 * behaviour: initialise them with designated initialisers or = {0} and a
 * newer header never changes what your code asks for.  A release that grows
 * one changes the library's SONAME (libmemres.so.0.MINOR while the major
 * version is 0), so an old binary never passes a short struct to a new
 * library.
 */
#ifndef MEMRES_RESOURCE_H
#define MEMRES_RESOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "memres/config.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mr_resource mr_resource;

/* The node of an allocator in a tree of lifetimes (memres/tree.h). */
typedef struct mr_node mr_node;

struct mr_resource_ops {
    /* Called only with a valid (power-of-two) alignment. */
    void *(*allocate)(mr_resource *self, size_t size, size_t align);
    /* Called only with p != NULL and the size/align it was allocated with. */
    void  (*deallocate)(mr_resource *self, void *p, size_t size, size_t align);
    /* NULL means two resources are equal only when they are the same object. */
    bool  (*is_equal)(const mr_resource *self, const mr_resource *other);
};

/* Embed this as the first member (or anywhere, with container-of) of a
 * resource implementation. */
struct mr_resource {
    const struct mr_resource_ops *ops;
};

/* Statistics every allocator reports (mr_arena_stats, mr_objpool_stats,
 * mr_pools_stats, mr_blocks_stats).  Copied out on demand; the inline fast
 * paths maintain only the allocation counts (one add each), and everything
 * upstream is kept by one ledger per allocator (src/ledger.h). */
typedef struct mr_stats {
    size_t in_use;          /* bytes handed out and not yet freed (with any rounding) */
    size_t held;            /* bytes held from upstream now */
    size_t peak_held;       /* most bytes held at once */
    size_t allocations;     /* successful allocations so far: every one, the
                               inline fast paths included, in every build */
    size_t upstream_allocations, upstream_deallocations; /* successful calls */
} mr_stats;

/* Allocates size bytes aligned to align from r.
 * r: must not be NULL.  align: a power of two, any size (above the page size
 * too, where the resource supports it); 0 or not a power of two -> NULL,
 * errno = EINVAL, r is not called.  size 0 -> a valid non-NULL pointer.
 * Failure -> NULL, errno = ENOMEM (or what r sets), no state changed.
 * Thread-safety: that of r. */
MR_API void *mr_allocate(mr_resource *r, size_t size, size_t align);

/* Returns p (from mr_allocate(r, size, align) with the same size and align)
 * to r.  p NULL: no-op. */
MR_API void mr_deallocate(mr_resource *r, void *p, size_t size, size_t align);

/* True when memory allocated from a can be deallocated through b: the same
 * object, or the same kind and a->ops->is_equal says so. */
MR_API bool mr_is_equal(const mr_resource *a, const mr_resource *b);

/* The process-wide malloc resource: malloc/posix_memalign/free.  Honours any
 * power-of-two alignment, including alignments above the page size.
 * Thread-safe.  Never NULL. */
MR_API mr_resource *mr_malloc_resource(void);

/* A resource whose every allocation fails with NULL, errno = ENOMEM.  Use it
 * as an upstream to forbid heap use (an arena over a stack buffer).
 * Deallocate of NULL is a no-op; of anything else (it never gave memory) is
 * misuse, reported in debug builds and ignored.  Never NULL. */
MR_API mr_resource *mr_null_resource(void);

/* The default resource, used wherever an upstream is given as NULL: the
 * malloc resource unless mr_set_default_resource() chose another.  Reads and
 * writes are atomic (any thread). */
MR_API mr_resource *mr_get_default_resource(void);

/* Sets the default resource and returns the previous one (never NULL).
 * r NULL restores the malloc resource.  r must outlive its use as default. */
MR_API mr_resource *mr_set_default_resource(mr_resource *r);

/* ---- misuse: one handler for everything memres detects ----
 * Misuse that memres detects calls the violation handler with a short
 * description and the pointer concerned (or NULL).  The default handler
 * prints one line to stderr and aborts.  A handler that returns lets the
 * call go on: memres then takes its safe way out (the call is ignored or
 * stopped short), so a test can record misuse without dying.
 * What is detected, and where (docs/RELIABILITY.md has the measured table):
 *   every build        the tracking adaptor: unknown pointer, double free,
 *                      size or alignment mismatch, leaks at destroy;
 *                      arena marks of another (or a released or destroyed)
 *                      arena, and stale marks that number more cleanups or
 *                      large blocks than are pending -- ignored, and
 *                      reported only from MR_DEBUG 1;
 *   MR_DEBUG >= 1      (any build without NDEBUG): those arena marks, a
 *                      stale mark whose block is no longer in use, a block
 *                      put twice (block pool), a deallocate of a direct
 *                      (large) pools block that is not live or has another
 *                      size or alignment, a misaligned block put, a
 *                      deallocation of the wrong size through a resource
 *                      view, a bad alignment given to mr_deallocate;
 *   code built without NDEBUG (MR_FREE_CHECK, config.h): at the free of an
 *                      object pool or size-class pool, a block freed twice,
 *                      a pointer the pool did not hand out, a size of
 *                      another class -- reported and the free ignored;
 *   mr_<object>_check  double frees and foreign pointers on the free lists
 *                      of object pools and pooled size classes (a walk: a
 *                      release build checks nothing on the free path, which
 *                      stays a handful of instructions);
 *   ASan, Valgrind     (builds with MEMRES_SANITIZE=address or
 *                      MEMRES_VALGRIND=ON) every use of memory after its
 *                      free, rewind, reset, release or put, and writes past
 *                      a pools request into its class's rounding. */
typedef void mr_violation_fn(const char *what, const void *ptr, void *ctx);

/* Sets the process-wide handler (fn NULL: the default) and the ctx passed
 * to it.  Thread-safe; a violation racing the change sees the old or the
 * new handler, each with its own ctx. */
MR_API void mr_set_violation_handler(mr_violation_fn *fn, void *ctx);

#ifdef __cplusplus
}
#endif
#endif /* MEMRES_RESOURCE_H */
