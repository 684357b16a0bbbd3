/* SPDX-License-Identifier: MIT */
/* scripts/fastpaths.c -- one out-of-line wrapper around each inline fast
 * path of the public headers, so that scripts/fastpaths.sh can count the
 * instructions the compiler emits for it (objdump -d).  A change that
 * claims to leave a fast path alone shows the same counts, and the same
 * instructions, before and after.  Never linked: compiled to an object. */
#include <memres/memres.h>

#define FP __attribute__((noinline, used))

FP void *fp_arena_alloc_const(mr_arena *a) { return mr_arena_alloc(a, 24); }
FP void *fp_arena_alloc(mr_arena *a, size_t n) { return mr_arena_alloc(a, n); }
FP void *fp_arena_alloc_aligned8(mr_arena *a, size_t n) { return mr_arena_alloc_aligned(a, n, 8); }
FP char *fp_arena_strdup(mr_arena *a, const char *s) { return mr_arena_strdup(a, s); }
FP mr_arena_mark fp_arena_save(const mr_arena *a) { return mr_arena_save(a); }
FP void fp_arena_rewind(mr_arena *a, mr_arena_mark m) { mr_arena_rewind(a, m); }

FP void *fp_objpool_alloc(mr_objpool *p) { return mr_objpool_alloc(p); }
FP void fp_objpool_free(mr_objpool *p, void *o) { mr_objpool_free(p, o); }

FP void *fp_pools_alloc16(mr_pools *p, size_t n) { return mr_pools_alloc(p, n, 16); }
FP void fp_pools_free16(mr_pools *p, void *q, size_t n) { mr_pools_free(p, q, n, 16); }
FP void *fp_pools_alloc8(mr_pools *p, size_t n) { return mr_pools_alloc(p, n, 8); }
FP void fp_pools_free8(mr_pools *p, void *q, size_t n) { mr_pools_free(p, q, n, 8); }
FP void *fp_pools_realloc(mr_pools *p, void *q, size_t o, size_t n) { return mr_pools_realloc(p, q, o, n, 8); }
FP size_t fp_pools_block_size(const mr_pools *p, size_t n) { return mr_pools_block_size(p, n, 8); }
FP void *fp_pools_local_alloc16(mr_pools_local *l, size_t n) { return mr_pools_local_alloc(l, n, 16); }
FP void fp_pools_local_free16(mr_pools_local *l, void *q, size_t n) { mr_pools_local_free(l, q, n, 16); }
FP void *fp_pools_local_alloc_const(mr_pools_local *l) { return mr_pools_local_alloc(l, 16, 8); }
FP void fp_pools_local_free_const(mr_pools_local *l, void *q) { mr_pools_local_free(l, q, 16, 8); }
FP void *fp_objpool_local_alloc(mr_objpool_local *l) { return mr_objpool_local_alloc(l); }
FP void fp_objpool_local_free(mr_objpool_local *l, void *o) { mr_objpool_local_free(l, o); }
