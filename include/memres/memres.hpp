/* SPDX-License-Identifier: MIT */
/* memres/memres.hpp -- the C++17 bridge between memres and std::pmr.
 * Header-only; link with memres as for C.
 *
 * Both directions:
 *   memres::resource_adaptor  a std::pmr::memory_resource that forwards to an
 *                             mr_resource (any memres allocator, or malloc),
 *                             so std::pmr containers run on memres;
 *   memres::pmr_resource      an mr_resource that forwards to a
 *                             std::pmr::memory_resource, so memres allocators
 *                             can take a std::pmr resource as upstream.
 * And RAII owners: memres::arena (mr_arena), memres::objpool (mr_objpool),
 * memres::pools (mr_pools), plus memres::arena_allocator<T>, a std::allocator-like allocator over an
 * arena with no virtual call at all.
 *
 * Errors: the C API returns NULL with errno; the C++ side throws
 * std::bad_alloc for ENOMEM (std::pmr convention) and std::invalid_argument
 * when an owner is created with invalid options (EINVAL).  No exception ever
 * crosses into C code: pmr_resource catches them and returns NULL, ENOMEM.
 *
 * Thread-safety: that of the wrapped resource.  The owners are neither
 * copyable nor movable: containers keep pointers to their pmr() adaptor.
 *
 *     memres::arena a;                           // default options, malloc upstream
 *     std::pmr::list<int> l{a.pmr()};            // nodes come from the arena
 *     ...
 *     l.clear(); a.reset();                      // memory kept for the next round
 */
#ifndef MEMRES_MEMRES_HPP
#define MEMRES_MEMRES_HPP

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <memory_resource>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "memres/memres.h"

namespace memres {

namespace detail {
/* Turns a failed C create (NULL + errno) into the matching exception. */
[[noreturn]] inline void throw_create_error(const char *what)
{
    if (errno == EINVAL)
        throw std::invalid_argument(what);
    throw std::bad_alloc();
}
} // namespace detail

/* ---------------------------------------------------------------------------
 * resource_adaptor: a std::pmr::memory_resource over an mr_resource.
 *
 * allocate    -> mr_allocate; NULL becomes std::bad_alloc.  Size 0 gives a
 *                valid pointer as in C; std::pmr never passes a bad alignment.
 * deallocate  -> mr_deallocate with the same size and alignment.
 * is_equal    -> true for the same adaptor, or when the other is also a
 *                resource_adaptor and mr_is_equal(wrapped, other wrapped)
 *                (needs RTTI; without it, identity only).
 * The mr_resource is not owned and must outlive the adaptor and everything
 * allocated through it.
 *
 * Constructed from an mr_arena *, the adaptor is the arena's resource
 * (mr_arena_resource) with its work inlined: one virtual call and a pointer
 * bump per allocate; deallocate gives back only the newest allocation (a
 * temporary freed at once) and otherwise does nothing, like
 * std::pmr::monotonic_buffer_resource: memory comes back with the arena's
 * rewind, reset or release (the arena's own rule, mri_arena_free_newest in
 * arena.h).  Constructed from an mr_pools *, it is mr_pools_resource with
 * mr_pools_alloc / mr_pools_free inlined. */
class resource_adaptor final : public std::pmr::memory_resource {
public:
    explicit resource_adaptor(mr_resource *r) noexcept : r_(r), arena_(nullptr), pools_(nullptr) {}
    explicit resource_adaptor(mr_arena *a) noexcept : r_(mr_arena_resource(a)), arena_(a), pools_(nullptr) {}
    explicit resource_adaptor(mr_pools *p) noexcept : r_(mr_pools_resource(p)), arena_(nullptr), pools_(p) {}

    /* The wrapped resource (for an arena or pools: their mr_resource view). */
    mr_resource *resource() const noexcept { return r_; }

private:
    void *do_allocate(std::size_t bytes, std::size_t align) override
    {
        void *p;
        if (arena_ != nullptr)
            p = mr_arena_alloc_aligned(arena_, bytes, align);
        else if (pools_ != nullptr)
            p = mr_pools_alloc(pools_, bytes, align);
        else
            p = mr_allocate(r_, bytes, align);
        if (MR_UNLIKELY(p == nullptr))
            throw std::bad_alloc();
        return p;
    }

    void do_deallocate(void *p, std::size_t bytes, std::size_t align) override
    {
        if (arena_ != nullptr) {
            (void)align;
            mri_arena_free_newest(arena_, p, bytes);
            return;
        }
        if (pools_ != nullptr) {
            mr_pools_free(pools_, p, bytes, align);
            return;
        }
        mr_deallocate(r_, p, bytes, align);
    }

    bool do_is_equal(const std::pmr::memory_resource &other) const noexcept override
    {
        if (this == &other)
            return true;
#if defined(__cpp_rtti) || defined(__GXX_RTTI)
        const auto *o = dynamic_cast<const resource_adaptor *>(&other);
        return o != nullptr && mr_is_equal(r_, o->r_);
#else
        return false;
#endif
    }

    mr_resource *r_;
    mr_arena *arena_; /* non-NULL: r_ is this arena's resource; inline fast path */
    mr_pools *pools_; /* non-NULL: r_ is this mr_pools's resource; inline fast path */
};

/* ---------------------------------------------------------------------------
 * pmr_resource: an mr_resource over a std::pmr::memory_resource.
 *
 *     std::pmr::monotonic_buffer_resource mono{buf, sizeof buf};
 *     memres::pmr_resource up{&mono};
 *     mr_arena_options o = {}; o.upstream = up.resource();
 *
 * allocate catches every exception and returns NULL with errno = ENOMEM (the
 * C contract); mr_allocate has already rejected a bad alignment.  deallocate
 * forwards (a throwing deallocate terminates: C frames cannot unwind).
 * mr_is_equal of two pmr_resources is the pmr is_equal of what they wrap.
 * The std::pmr resource is not owned and must outlive this object; the object
 * must stay where it is while anything uses resource(). */
struct pmr_resource {
    mr_resource base; /* first: &base is the mr_resource (pointer-interconvertible) */
    std::pmr::memory_resource *r;

    explicit pmr_resource(std::pmr::memory_resource *res) noexcept : base{&ops}, r(res) {}
    pmr_resource(const pmr_resource &) = delete;
    pmr_resource &operator=(const pmr_resource &) = delete;

    mr_resource *resource() noexcept { return &base; }

private:
    static pmr_resource *self_of(mr_resource *m) noexcept { return reinterpret_cast<pmr_resource *>(m); }
    static const pmr_resource *self_of(const mr_resource *m) noexcept
    {
        return reinterpret_cast<const pmr_resource *>(m);
    }

    static void *allocate_fn(mr_resource *self, std::size_t size, std::size_t align) noexcept
    {
        try {
            return self_of(self)->r->allocate(size, align);
        } catch (...) {
            errno = ENOMEM;
            return nullptr;
        }
    }
    static void deallocate_fn(mr_resource *self, void *p, std::size_t size, std::size_t align) noexcept
    {
        self_of(self)->r->deallocate(p, size, align);
    }
    static bool is_equal_fn(const mr_resource *self, const mr_resource *other) noexcept
    {
        /* mr_is_equal calls this only when both have these ops */
        return self_of(self)->r->is_equal(*self_of(other)->r);
    }

    static inline const mr_resource_ops ops = {&allocate_fn, &deallocate_fn, &is_equal_fn};
};
static_assert(std::is_standard_layout_v<pmr_resource>, "pmr_resource must be standard layout");

/* ---------------------------------------------------------------------------
 * arena: owns an mr_arena (mr_arena_destroy in the destructor).
 *
 * Construction throws std::bad_alloc (upstream failed) or
 * std::invalid_argument (bad options: see mr_arena_create).  alloc throws
 * std::bad_alloc; the other members never throw.  pmr() is a
 * resource_adaptor over this arena (inline; deallocate frees only the
 * newest allocation), valid as long as the arena. */
class arena {
public:
    using mark = mr_arena_mark;

    arena() : a_(create(nullptr)), pmr_(a_) {}
    explicit arena(const mr_arena_options &opts) : a_(create(&opts)), pmr_(a_) {}
    /* Default options over the given upstream (NULL: default resource). */
    explicit arena(mr_resource *upstream) : a_(create_over(upstream, nullptr, 0)), pmr_(a_) {}
    /* The first block is buffer (not owned; the arena's header is carved from
     * it); more blocks from upstream.  With mr_null_resource() the arena never
     * touches the heap and throws std::bad_alloc when the buffer is full. */
    arena(void *buffer, std::size_t size, mr_resource *upstream = nullptr)
        : a_(create_over(upstream, buffer, size)), pmr_(a_)
    {
    }
    ~arena() { mr_arena_destroy(a_); }

    arena(const arena &) = delete;
    arena &operator=(const arena &) = delete;

    /* size bytes aligned to align (a power of two; default
     * alignof(max_align_t)); size 0 gives a valid pointer.  Throws
     * std::bad_alloc on failure (std::invalid_argument never: a bad alignment
     * gives std::bad_alloc too, as std::pmr leaves it undefined). */
    void *alloc(std::size_t size, std::size_t align = MR_ARENA_ALIGN)
    {
        void *p = mr_arena_alloc_aligned(a_, size, align);
        if (MR_UNLIKELY(p == nullptr))
            throw std::bad_alloc();
        return p;
    }

    /* Constructs a T in the arena.  When T has a non-trivial destructor it is
     * registered with mr_arena_defer, so it runs on rewind past it, reset,
     * release or destruction of the arena.  Throws what T's constructor throws,
     * or std::bad_alloc (then nothing is left behind but arena memory). */
    template <class T, class... Args>
    T *make(Args &&...args)
    {
        T *t = ::new (alloc(sizeof(T), alignof(T))) T(std::forward<Args>(args)...);
        if constexpr (!std::is_trivially_destructible_v<T>) {
            if (mr_arena_defer(a_, &destroy_fn<T>, t) != 0) {
                t->~T();
                throw std::bad_alloc();
            }
        }
        return t;
    }

    mark save() const noexcept { return mr_arena_save(a_); }
    void rewind(mark m) noexcept { mr_arena_rewind(a_, m); }
    void reset() noexcept { mr_arena_reset(a_); }
    void release() noexcept { mr_arena_release(a_); }

    mr_stats stats() const noexcept
    {
        mr_stats s;
        mr_arena_stats(a_, &s);
        return s;
    }

    mr_arena *get() const noexcept { return a_; }
    mr_resource *resource() const noexcept { return pmr_.resource(); }
    std::pmr::memory_resource *pmr() noexcept { return &pmr_; }

private:
    static mr_arena *create(const mr_arena_options *opts)
    {
        mr_arena *a = mr_arena_create(opts);
        if (a == nullptr)
            detail::throw_create_error("memres: mr_arena_create: invalid options");
        return a;
    }
    static mr_arena *create_over(mr_resource *upstream, void *buffer, std::size_t size)
    {
        mr_arena_options o{};
        o.upstream = upstream;
        o.buffer = buffer;
        o.buffer_size = size;
        return create(&o);
    }
    template <class T>
    static void destroy_fn(void *p) noexcept
    {
        static_cast<T *>(p)->~T();
    }

    mr_arena *a_;
    resource_adaptor pmr_;
};

/* ---------------------------------------------------------------------------
 * arena_allocator<T>: a std::allocator-like allocator over an mr_arena, for
 * containers that take an allocator type (std::list<int, arena_allocator<int>>).
 * allocate is mr_arena_alloc_aligned inline (no virtual call) and throws
 * std::bad_alloc on failure; deallocate does nothing.  Two allocators are
 * equal when they use the same arena.  The arena must outlive the container. */
template <class T>
class arena_allocator {
public:
    using value_type = T;

    explicit arena_allocator(mr_arena *a) noexcept : a_(a) {}
    explicit arena_allocator(arena &a) noexcept : a_(a.get()) {}
    template <class U>
    arena_allocator(const arena_allocator<U> &o) noexcept : a_(o.get())
    {
    }

    T *allocate(std::size_t n)
    {
        if (MR_UNLIKELY(n > SIZE_MAX / sizeof(T)))
            throw std::bad_array_new_length();
        void *p = mr_arena_alloc_aligned(a_, n * sizeof(T), alignof(T));
        if (MR_UNLIKELY(p == nullptr))
            throw std::bad_alloc();
        return static_cast<T *>(p);
    }
    void deallocate(T *, std::size_t) noexcept {}

    mr_arena *get() const noexcept { return a_; }

    template <class U>
    bool operator==(const arena_allocator<U> &o) const noexcept
    {
        return a_ == o.get();
    }
    template <class U>
    bool operator!=(const arena_allocator<U> &o) const noexcept
    {
        return a_ != o.get();
    }

private:
    mr_arena *a_;
};

/* ---------------------------------------------------------------------------
 * objpool: owns an mr_objpool of objects of one size.
 * Construction throws std::invalid_argument (object_size 0, bad alignment)
 * or std::bad_alloc; alloc throws std::bad_alloc; the rest never throw. */
class objpool {
public:
    explicit objpool(std::size_t object_size, std::size_t align = alignof(std::max_align_t),
                     const mr_objpool_options *opts = nullptr)
        : p_(mr_objpool_create(object_size, align, opts))
    {
        if (p_ == nullptr)
            detail::throw_create_error("memres: mr_objpool_create: invalid size or alignment");
    }
    ~objpool() { mr_objpool_destroy(p_); }
    objpool(const objpool &) = delete;
    objpool &operator=(const objpool &) = delete;

    void *alloc()
    {
        void *p = mr_objpool_alloc(p_);
        if (MR_UNLIKELY(p == nullptr))
            throw std::bad_alloc();
        return p;
    }
    void free(void *obj) noexcept { mr_objpool_free(p_, obj); }
    void reset() noexcept { mr_objpool_reset(p_); }
    void release() noexcept { mr_objpool_release(p_); }

    mr_stats stats() const noexcept
    {
        mr_stats s;
        mr_objpool_stats(p_, &s);
        return s;
    }
    mr_objpool *get() const noexcept { return p_; }
    /* mr_objpool_resource: allocations up to the object size only */
    mr_resource *resource() const noexcept { return mr_objpool_resource(p_); }

private:
    mr_objpool *p_;
};
/* ---------------------------------------------------------------------------
 * pools: owns an mr_pools (size classes).  pmr() is a resource_adaptor over
 * it (mr_pools_alloc / mr_pools_free inline): a drop-in for
 * std::pmr::unsynchronized_pool_resource (synchronized_pool_resource once
 * thread_safe is implemented).  Construction throws std::invalid_argument
 * (bad options, thread_safe for now) or std::bad_alloc; alloc throws
 * std::bad_alloc; the rest never throw. */
class pools {
public:
    pools() : p_(create(nullptr)), pmr_(p_) {}
    explicit pools(const mr_pools_options &opts) : p_(create(&opts)), pmr_(p_) {}
    ~pools() { mr_pools_destroy(p_); }
    pools(const pools &) = delete;
    pools &operator=(const pools &) = delete;

    void *alloc(std::size_t size, std::size_t align = alignof(std::max_align_t))
    {
        void *p = mr_pools_alloc(p_, size, align);
        if (MR_UNLIKELY(p == nullptr))
            throw std::bad_alloc();
        return p;
    }
    /* size and align as given to alloc */
    void free(void *p, std::size_t size, std::size_t align = alignof(std::max_align_t)) noexcept
    {
        mr_pools_free(p_, p, size, align);
    }
    void reset() noexcept { mr_pools_reset(p_); }
    void release() noexcept { mr_pools_release(p_); }

    mr_stats stats() const noexcept
    {
        mr_stats s;
        mr_pools_stats(p_, &s);
        return s;
    }
    mr_pools *get() const noexcept { return p_; }
    mr_resource *resource() const noexcept { return pmr_.resource(); }
    std::pmr::memory_resource *pmr() noexcept { return &pmr_; }

private:
    static mr_pools *create(const mr_pools_options *opts)
    {
        mr_pools *p = mr_pools_create(opts);
        if (p == nullptr)
            detail::throw_create_error("memres: mr_pools_create: invalid options");
        return p;
    }

    mr_pools *p_;
    resource_adaptor pmr_;
};
} // namespace memres

#endif /* MEMRES_MEMRES_HPP */
