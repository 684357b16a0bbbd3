/* SPDX-License-Identifier: MIT */
/* src/resource.c -- the polymorphic resource interface and the resources that
 * need no state: malloc, null, and the process-wide default.
 *
 * mr_allocate is the single place where alignment is validated, so every
 * resource implementation may assume a power-of-two alignment.  The malloc
 * resource uses malloc for alignments malloc already guarantees (no rounding,
 * no header of ours) and posix_memalign above that, for any power of two.
 *
 * The default resource is one atomic pointer; NULL in it means "malloc", so
 * the zero-initialised state needs no constructor.
 */
#include <stdatomic.h>
#include <string.h>

#include "internal.h"
#include "track.h"

MR_API void *mr_allocate(mr_resource *r, size_t size, size_t align)
{
    MR_ASSERT(r != NULL, "mr_allocate: resource is NULL");
    if (MR_UNLIKELY(!mri_is_pow2(align)))
        return mri_fail(EINVAL);
    return r->ops->allocate(r, size, align);
}

MR_API void mr_deallocate(mr_resource *r, void *p, size_t size, size_t align)
{
    MR_ASSERT(r != NULL, "mr_deallocate: resource is NULL");
    if (p == NULL || MRI_MISUSE(!mri_is_pow2(align), p, "mr_deallocate: alignment is not a power of two"))
        return; /* no allocation had that alignment */
    r->ops->deallocate(r, p, size, align);
}

MR_API bool mr_is_equal(const mr_resource *a, const mr_resource *b)
{
    if (a == b)
        return true;
    if (a == NULL || b == NULL || a->ops != b->ops || a->ops->is_equal == NULL)
        return false;
    return a->ops->is_equal(a, b);
}

/* ---- malloc resource ---- */

static void *malloc_allocate(mr_resource *self, size_t size, size_t align)
{
    (void)self;
    /* No alignment near the size of the address space can be met, nor a
     * size a sanitizer's malloc aborts on: refuse them here (track.h). */
    if (MR_UNLIKELY(size > MRI_MALLOC_MAX || align > MRI_MAX_ALIGNMENT))
        return mri_fail(ENOMEM);
    if (size == 0)
        size = 1; /* a unique, valid pointer on every libc */
    void *p;
    if (align <= MRI_MAX_ALIGN) {
        p = malloc(size);
    } else {
        int err = posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, size);
        if (err != 0)
            return mri_fail(err == EINVAL ? EINVAL : ENOMEM);
    }
    if (MR_UNLIKELY(p == NULL))
        return mri_fail(ENOMEM);
    return p;
}

static void malloc_deallocate(mr_resource *self, void *p, size_t size, size_t align)
{
    (void)self, (void)size, (void)align;
    free(p);
}

static bool malloc_is_equal(const mr_resource *self, const mr_resource *other)
{
    (void)self, (void)other;
    return true; /* same ops: any malloc resource frees what another allocated */
}

static const struct mr_resource_ops malloc_ops = {malloc_allocate, malloc_deallocate, malloc_is_equal};
static mr_resource malloc_resource = {&malloc_ops};

MR_API mr_resource *mr_malloc_resource(void) { return &malloc_resource; }

/* ---- null resource ---- */

static void *null_allocate(mr_resource *self, size_t size, size_t align)
{
    (void)self, (void)size, (void)align;
    return mri_fail(ENOMEM);
}

static void null_deallocate(mr_resource *self, void *p, size_t size, size_t align)
{
    (void)self, (void)p, (void)size, (void)align;
    MR_ASSERT(p == NULL, "mr_null_resource: deallocate of memory it never gave");
}

static const struct mr_resource_ops null_ops = {null_allocate, null_deallocate, NULL};
static mr_resource null_resource = {&null_ops};

MR_API mr_resource *mr_null_resource(void) { return &null_resource; }

/* ---- default resource ---- */

static _Atomic(mr_resource *) default_resource; /* NULL: malloc */

MR_API mr_resource *mr_get_default_resource(void)
{
    mr_resource *r = atomic_load_explicit(&default_resource, memory_order_acquire);
    return r != NULL ? r : &malloc_resource;
}

MR_API mr_resource *mr_set_default_resource(mr_resource *r)
{
    mr_resource *old = atomic_exchange_explicit(&default_resource, r, memory_order_acq_rel);
    return old != NULL ? old : &malloc_resource;
}
