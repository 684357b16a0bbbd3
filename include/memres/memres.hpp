/* SPDX-License-Identifier: MIT */
/* memres/memres.hpp -- the C++17 bridge between memres and std::pmr.
 * Header-only; link with memres as for C.
 *
 * Both directions:
 *   memres::arena_resource,   std::pmr::memory_resources over one memres
 *   memres::pools_resource,   allocator each, its inline fast path behind
 *   memres::objpool_resource  the one virtual call, so std::pmr containers
 *                             run on memres;
 *   memres::resource_adaptor  the same over any mr_resource (memres's own
 *                             allocators recognised and inlined, others --
 *                             malloc, adaptors, yours -- called through it);
 *   memres::pmr_resource      an mr_resource that forwards to a
 *                             std::pmr::memory_resource, so memres allocators
 *                             can take a std::pmr resource as upstream.
 * And RAII owners: memres::arena (mr_arena), memres::objpool (mr_objpool),
 * memres::pools (mr_pools), each with pmr(), plus memres::arena_allocator<T>,
 * a std::allocator-like allocator over an arena with no virtual call at all.
 *
 * Trees (memres/tree.h): an owner made with a parent -- another owner, or
 * any mr_node -- owns a child of it, `memres::arena request{connection,
 * "request"}`, which dies with the parent: destroyed by the parent's
 * destroy, reset or release (or rewind) it is gone, alive() turns false,
 * and the owner's destructor does nothing more.  Objects made with
 * arena::make<T> are destroyed then too (their destructors are the arena's
 * cleanups), so a std::pmr container made in a child arena dies with the
 * parent; anything else allocated from a dead owner is gone.
 *
 * Errors: the C API returns NULL with errno; the C++ side throws
 * std::bad_alloc for a failed allocation (std::pmr convention) and
 * std::invalid_argument when an owner is created with invalid options
 * (EINVAL).  No exception ever
 * crosses into C code: pmr_resource catches them and returns NULL, ENOMEM.
 *
 * Thread-safety: that of the wrapped resource (memres::thread_safe makes
 * thread-safe pools and object pools).  The owners are neither
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
#include "memres/bits/tree.h"

namespace memres {

/* Tag for the owners' thread-safe constructors: memres::pools{memres::thread_safe}
 * is a drop-in for std::pmr::synchronized_pool_resource, and std::pmr
 * containers (one per thread, or shared under the container's own lock) may
 * then allocate and free on one pool from many threads. */
struct thread_safe_t {
    explicit thread_safe_t() = default;
};
inline constexpr thread_safe_t thread_safe{};

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
 * std::pmr resources over memres.
 *
 * One class per allocator -- arena_resource, pools_resource,
 * objpool_resource -- with the allocator's inline fast path behind the one
 * virtual call that std::pmr makes, and resource_adaptor for any
 * mr_resource (which takes the same inline paths when the mr_resource is
 * the view of a memres arena, pools or objpool).  All derive from
 * bridge_resource, which holds the wrapped mr_resource and defines equality.
 *
 * allocate    throws std::bad_alloc where the C call returns NULL (ENOMEM,
 *             and EINVAL for an alignment that is not a power of two, which
 *             std::pmr never passes).  Size 0 gives a valid pointer as in C.
 * deallocate  takes the size and alignment given to allocate.
 * is_equal    true for the same object, or when the other is also a
 *             bridge_resource and mr_is_equal(wrapped, other wrapped): an
 *             arena_resource and a resource_adaptor over the same arena's
 *             view are equal (needs RTTI; without it, identity only).
 * Nothing is owned: the allocator (or mr_resource) must outlive the object
 * and everything allocated through it.  Thread-safety: that of the wrapped
 * allocator.  Copies are cheap and use the same allocator. */

namespace detail {

/* The end of every failed allocate, out of line and cold, so that the
 * inline fast paths carry none of the throw's code. */
[[noreturn]] MR_COLD inline void throw_bad_alloc() { throw std::bad_alloc(); }

/* ---- the fast paths, shared by the per-allocator classes and resource_adaptor ---- */

/* Arena: std::pmr alignments are powers of two, and every one up to
 * MR_ARENA_ALIGN is met by mr_arena_alloc (which aligns to MR_ARENA_ALIGN),
 * so a single compare picks the inline bump; larger ones take
 * mr_arena_alloc_aligned.  (An alignment up to MR_ARENA_ALIGN that is not a
 * power of two, which std::pmr never passes, gets MR_ARENA_ALIGN-aligned
 * memory instead of an error.) */
inline void *arena_allocate(mr_arena *a, void *&last, std::size_t bytes, std::size_t align)
{
    void *p = MR_LIKELY(align <= 8)                ? mri_arena_alloc_down8(a, bytes)
              : MR_LIKELY(align <= MR_ARENA_ALIGN) ? mr_arena_alloc(a, bytes)
                                                   : mr_arena_alloc_aligned(a, bytes, align);
    if (MR_UNLIKELY(p == nullptr))
        throw_bad_alloc();
    last = p;
    return p;
}

/* The arena gives back only its newest allocation (a temporary freed at
 * once); for anything else this does nothing, like
 * std::pmr::monotonic_buffer_resource, and memory comes back with the
 * arena's rewind, reset or release.  The rule is the arena's own
 * (mri_arena_free_newest, arena.h), the same as mr_arena_resource's; it is
 * asked only about the last pointer this resource handed out (last), so
 * everything else -- every node of a list but one -- costs one compare.
 * (The newest allocation made through another view of the arena is left
 * to the reset, as any other.) */
inline void arena_deallocate(mr_arena *a, const void *last, void *p, std::size_t bytes) noexcept
{
    if (MR_UNLIKELY(p == last))
        mri_arena_free_newest(a, p, bytes);
}

/* Pools: std::pmr alignments are powers of two, so up to 16 they take
 * mr_pools_alloc's inline path without its power-of-two test
 * (mri_pools_alloc_in with xbits = align - 1: 8 or less the 8-byte
 * classes, 16 the multiples of 16); deallocate does the same, so both find
 * the same class.
 * Larger alignments go to the slow path as given. */
inline void *pools_allocate(mr_pools *p, std::size_t bytes, std::size_t align)
{
    void *q = MR_LIKELY(align <= 16) ? mri_pools_alloc_in(p, bytes, align, align - 1)
                                     : mri_pools_alloc_slow(p, bytes, align);
    if (MR_UNLIKELY(q == nullptr))
        throw_bad_alloc();
    return q;
}

inline void pools_deallocate(mr_pools *p, void *q, std::size_t bytes, std::size_t align) noexcept
{
    if (MR_FREE_CHECK && !mri_pools_free_ok(p, q, bytes, align))
        return; /* reported */
    if (MR_LIKELY(align <= 16))
        mri_pools_free_in(p, q, bytes, align, align - 1);
    else
        mri_pools_free_slow(p, q, bytes, align);
}

/* Objpool: a request of at most the object size with an alignment the
 * bridge knows the pool gives (fast_align) pops an object inline; any other
 * goes through the pool's mr_resource view, which accepts larger alignments
 * up to the pool's own and fails (ENOMEM, EINVAL) for what it cannot give. */
inline void *objpool_allocate(mr_objpool *p, mr_resource *view, std::size_t obj_size, std::size_t fast_align,
                              std::size_t bytes, std::size_t align)
{
    void *q =
        MR_LIKELY(bytes <= obj_size && align <= fast_align) ? mr_objpool_alloc(p) : mr_allocate(view, bytes, align);
    if (MR_UNLIKELY(q == nullptr))
        throw_bad_alloc();
    return q;
}

inline void objpool_deallocate(mr_objpool *p, mr_resource *view, std::size_t obj_size, std::size_t fast_align,
                               void *q, std::size_t bytes, std::size_t align) noexcept
{
    if (MR_LIKELY(bytes <= obj_size && align <= fast_align))
        mr_objpool_free(p, q);
    else
        mr_deallocate(view, q, bytes, align); /* the view reports a size or alignment it never gives */
}

/* The arena whose mr_arena_resource() view r is, or NULL. */
inline mr_arena *arena_of_resource(mr_resource *r) noexcept { return mr_arena_of_resource(r); }

} // namespace detail

/* bridge_resource: the base of every std::pmr resource of the bridge; holds
 * the mr_resource it stands for and defines is_equal (above).  Not
 * constructed on its own. */
class bridge_resource : public std::pmr::memory_resource {
public:
    /* The wrapped resource (for an allocator: its mr_resource view). */
    mr_resource *resource() const noexcept { return r_; }

protected:
    explicit bridge_resource(mr_resource *r) noexcept : r_(r) {}

    bool do_is_equal(const std::pmr::memory_resource &other) const noexcept final
    {
        if (this == &other)
            return true;
#if defined(__cpp_rtti) || defined(__GXX_RTTI)
        const auto *o = dynamic_cast<const bridge_resource *>(&other);
        return o != nullptr && mr_is_equal(r_, o->r_);
#else
        return false;
#endif
    }

private:
    mr_resource *r_;
};

/* arena_resource: an mr_arena as a std::pmr::memory_resource, the cheapest
 * way to put std::pmr containers on an arena (what arena::pmr() returns).
 * allocate  mr_arena_alloc inline for alignments up to MR_ARENA_ALIGN (a
 *           compare and a pointer bump), mr_arena_alloc_aligned above;
 *           std::bad_alloc when the arena cannot grow.
 * deallocate gives back the newest allocation (a temporary freed at once,
 *           when this object handed it out) and otherwise does nothing,
 *           like monotonic_buffer_resource: memory comes back with the
 *           arena's rewind, reset or release.
 * Equal to every bridge resource over the same arena. a must not be NULL. */
class arena_resource final : public bridge_resource {
public:
    explicit arena_resource(mr_arena *a) noexcept : bridge_resource(mr_arena_resource(a)), a_(a) {}

    mr_arena *get() const noexcept { return a_; }

private:
    void *do_allocate(std::size_t bytes, std::size_t align) override
    {
        return detail::arena_allocate(a_, last_, bytes, align);
    }
    void do_deallocate(void *p, std::size_t bytes, std::size_t) override
    {
        detail::arena_deallocate(a_, last_, p, bytes);
    }

    mr_arena *a_;
    void *last_ = nullptr; /* the last pointer handed out (arena_deallocate) */
};

/* pools_resource: an mr_pools as a std::pmr::memory_resource, a drop-in for
 * std::pmr::unsynchronized_pool_resource (what pools::pmr() returns).
 * allocate / deallocate are mr_pools_alloc / mr_pools_free inline (class
 * lookup, pop or push); sizes above the largest pooled block and alignments
 * above MR_POOLS_MAX_ALIGN go upstream as in C.  std::bad_alloc when the
 * upstream fails.  Equal to every bridge resource over the same pool.
 * p must not be NULL. */
class pools_resource final : public bridge_resource {
public:
    explicit pools_resource(mr_pools *p) noexcept : bridge_resource(mr_pools_resource(p)), p_(p) {}

    mr_pools *get() const noexcept { return p_; }

private:
    void *do_allocate(std::size_t bytes, std::size_t align) override
    {
        return detail::pools_allocate(p_, bytes, align);
    }
    void do_deallocate(void *q, std::size_t bytes, std::size_t align) override
    {
        detail::pools_deallocate(p_, q, bytes, align);
    }

    mr_pools *p_;
};

class objpool;

/* objpool_resource: an mr_objpool as a std::pmr::memory_resource, for node
 * containers whose nodes all have one size (std::pmr::list, set, map of a
 * pool sized for their node: every allocate is one object).
 * allocate   a request of at most the object size (mr_objpool_object_size)
 *            pops an object inline when its alignment is at most
 *            alignof(void *) -- or the pool's alignment, for objpool::pmr()
 *            -- and otherwise goes through mr_objpool_resource, which takes
 *            alignments up to the pool's; a larger size (std::bad_alloc) or
 *            alignment (std::bad_alloc) cannot be served.
 * deallocate mr_objpool_free inline (the object is reused first).
 * Equal to every bridge resource over the same pool.  p must not be NULL. */
class objpool_resource final : public bridge_resource {
public:
    explicit objpool_resource(mr_objpool *p) noexcept : objpool_resource(p, alignof(void *)) {}

    mr_objpool *get() const noexcept { return p_; }

private:
    friend class objpool;
    /* fast_align: an alignment every object of p has (the pool's, or less) */
    objpool_resource(mr_objpool *p, std::size_t fast_align) noexcept
        : bridge_resource(mr_objpool_resource(p)), p_(p), size_(mr_objpool_object_size(p)), fast_align_(fast_align)
    {
    }

    void *do_allocate(std::size_t bytes, std::size_t align) override
    {
        return detail::objpool_allocate(p_, resource(), size_, fast_align_, bytes, align);
    }
    void do_deallocate(void *q, std::size_t bytes, std::size_t align) override
    {
        detail::objpool_deallocate(p_, resource(), size_, fast_align_, q, bytes, align);
    }

    mr_objpool *p_;
    std::size_t size_;       /* mr_objpool_object_size(p_) */
    std::size_t fast_align_; /* alignments up to this take the inline path */
};

/* resource_adaptor: any mr_resource as a std::pmr::memory_resource.
 * allocate -> mr_allocate, deallocate -> mr_deallocate (same size and
 * alignment) -- except that the view of a memres arena, pools or objpool
 * (mr_arena_resource, mr_pools_resource, mr_objpool_resource), and an
 * allocator given directly, are recognised at construction and served by
 * that allocator's inline path, as by arena_resource, pools_resource and
 * objpool_resource (one more compare per call).  Prefer those classes when
 * the allocator is known; this one is for code that is handed an
 * mr_resource.  The mr_resource is not owned and must outlive the adaptor
 * and everything allocated through it. */
class resource_adaptor final : public bridge_resource {
public:
    explicit resource_adaptor(mr_resource *r) noexcept : bridge_resource(r)
    {
        if (mr_arena *a = detail::arena_of_resource(r))
            set_arena(a);
        else if (mr_pools *p = mr_pools_of_resource(r))
            set_pools(p);
        else if (mr_objpool *o = mr_objpool_of_resource(r))
            set_objpool(o);
    }
    explicit resource_adaptor(mr_arena *a) noexcept : bridge_resource(mr_arena_resource(a)) { set_arena(a); }
    explicit resource_adaptor(mr_pools *p) noexcept : bridge_resource(mr_pools_resource(p)) { set_pools(p); }
    explicit resource_adaptor(mr_objpool *p) noexcept : bridge_resource(mr_objpool_resource(p)) { set_objpool(p); }

private:
    enum class kind : unsigned char { other, arena, pools, objpool };

    void set_arena(mr_arena *a) noexcept
    {
        kind_ = kind::arena;
        arena_ = a;
    }
    void set_pools(mr_pools *p) noexcept
    {
        kind_ = kind::pools;
        pools_ = p;
    }
    void set_objpool(mr_objpool *p) noexcept
    {
        kind_ = kind::objpool;
        objpool_ = p;
        obj_size_ = mr_objpool_object_size(p);
    }

    void *do_allocate(std::size_t bytes, std::size_t align) override
    {
        if (kind_ == kind::arena)
            return detail::arena_allocate(arena_, last_, bytes, align);
        if (kind_ == kind::pools)
            return detail::pools_allocate(pools_, bytes, align);
        if (kind_ == kind::objpool)
            return detail::objpool_allocate(objpool_, resource(), obj_size_, alignof(void *), bytes, align);
        void *p = mr_allocate(resource(), bytes, align);
        if (MR_UNLIKELY(p == nullptr))
            detail::throw_bad_alloc();
        return p;
    }

    void do_deallocate(void *p, std::size_t bytes, std::size_t align) override
    {
        if (kind_ == kind::arena)
            detail::arena_deallocate(arena_, last_, p, bytes);
        else if (kind_ == kind::pools)
            pools_free(pools_, p, bytes, align);
        else if (kind_ == kind::objpool)
            detail::objpool_deallocate(objpool_, resource(), obj_size_, alignof(void *), p, bytes, align);
        else
            mr_deallocate(resource(), p, bytes, align);
    }

    /* The pools kind's free out of line (a tail call): inlined here next to
     * the other kinds' it made every kind's free save registers first. */
    MR_NOINLINE static void pools_free(mr_pools *p, void *q, std::size_t bytes, std::size_t align) noexcept
    {
        detail::pools_deallocate(p, q, bytes, align);
    }

    kind kind_ = kind::other;
    union {
        void *none_ = nullptr;
        mr_arena *arena_;
        mr_pools *pools_;
        mr_objpool *objpool_;
    };
    std::size_t obj_size_ = 0; /* kind::objpool: mr_objpool_object_size */
    void *last_ = nullptr;     /* kind::arena: the last pointer handed out */
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
 * std::bad_alloc; the other members never throw.  pmr() is an
 * arena_resource over this arena (inline; deallocate frees only the newest
 * allocation), valid as long as the arena. */
class arena {
public:
    using mark = mr_arena_mark;

    arena() : a_(create(nullptr)), pmr_(a_) { watch(); }
    explicit arena(const mr_arena_options &opts) : a_(create(&opts)), pmr_(a_) { watch(); }
    /* Default options over the given upstream (NULL: default resource). */
    explicit arena(mr_resource *upstream) : a_(create_over(upstream, nullptr, 0)), pmr_(a_) { watch(); }
    /* The first block is buffer (not owned; the arena's header is carved from
     * it); more blocks from upstream.  With mr_null_resource() the arena never
     * touches the heap and throws std::bad_alloc when the buffer is full. */
    arena(void *buffer, std::size_t size, mr_resource *upstream = nullptr)
        : a_(create_over(upstream, buffer, size)), pmr_(a_)
    {
        watch();
    }
    /* A child of parent (any node: name it, nullptr for the kind; or an
     * owner), over the parent's upstream: it dies with the parent (see
     * "Trees" above). */
    arena(mr_node *parent, const char *name) : a_(create_under(parent, name)), pmr_(a_) { watch(); }
    template <class Parent, class = decltype(std::declval<Parent &>().node())>
    explicit arena(Parent &parent, const char *name = nullptr) : arena(parent.node(), name)
    {
    }
    ~arena()
    {
        if (node_ != nullptr)
            mr_arena_destroy(a_);
    }

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
    /* Its node in the tree; false once it died with its parent. */
    mr_node *node() const noexcept { return mr_arena_node(a_); }
    bool alive() const noexcept { return node_ != nullptr; }

private:
    void watch() noexcept
    {
        node_ = mr_arena_node(a_);
        mri_node_watch(node_, &node_);
    }
    static mr_arena *create(const mr_arena_options *opts)
    {
        mr_arena *a = mr_arena_create(opts);
        if (a == nullptr)
            detail::throw_create_error("memres: mr_arena_create: invalid options");
        return a;
    }
    static mr_arena *create_under(mr_node *parent, const char *name)
    {
        mr_arena_options o{};
        o.parent = parent;
        o.name = name;
        return create(&o);
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
    arena_resource pmr_;
    mr_node *node_ = nullptr; /* NULL once the arena died (mri_node_watch) */
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
 * or std::bad_alloc; alloc throws std::bad_alloc; the rest never throw.
 * pmr() is an objpool_resource over it (inline up to the pool's alignment),
 * valid as long as the pool: size the pool for a node container's node
 * (std::pmr::list<T> over objpool{node size, node alignment}). */
class objpool {
public:
    explicit objpool(std::size_t object_size, std::size_t align = alignof(std::max_align_t),
                     const mr_objpool_options *opts = nullptr)
        : p_(create(object_size, align, opts)), pmr_(p_, align > alignof(void *) ? align : alignof(void *))
    {
        node_ = mr_objpool_node(p_);
        mri_node_watch(node_, &node_);
    }
    /* a thread-safe pool (mr_objpool_options.thread_safe) with default options */
    objpool(std::size_t object_size, std::size_t align, thread_safe_t)
        : objpool(object_size, align, &ts_options)
    {
    }
    /* A child of parent (any node: name it, nullptr for the kind; or an
     * owner), named name: it dies with the parent (see "Trees" above). */
    objpool(std::size_t object_size, std::size_t align, mr_node *parent, const char *name)
        : objpool(object_size, align, child_options(parent, name))
    {
    }
    template <class Parent, class = decltype(std::declval<Parent &>().node())>
    objpool(std::size_t object_size, std::size_t align, Parent &parent, const char *name = nullptr)
        : objpool(object_size, align, parent.node(), name)
    {
    }
    ~objpool()
    {
        if (node_ != nullptr)
            mr_objpool_destroy(p_);
    }
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
    mr_resource *resource() const noexcept { return pmr_.resource(); }
    std::pmr::memory_resource *pmr() noexcept { return &pmr_; }
    /* Its node in the tree; false once it died with its parent. */
    mr_node *node() const noexcept { return mr_objpool_node(p_); }
    bool alive() const noexcept { return node_ != nullptr; }

private:
    static constexpr mr_objpool_options ts_options{nullptr, 0, true, nullptr, nullptr};
    struct child_options_t {
        mr_objpool_options o;
        operator const mr_objpool_options *() const noexcept { return &o; }
    };
    static child_options_t child_options(mr_node *parent, const char *name) noexcept
    {
        child_options_t c{};
        c.o.parent = parent;
        c.o.name = name;
        return c;
    }

    static mr_objpool *create(std::size_t object_size, std::size_t align, const mr_objpool_options *opts)
    {
        mr_objpool *p = mr_objpool_create(object_size, align, opts);
        if (p == nullptr)
            detail::throw_create_error("memres: mr_objpool_create: invalid size or alignment");
        return p;
    }

    mr_objpool *p_;
    objpool_resource pmr_;
    mr_node *node_ = nullptr; /* NULL once the pool died (mri_node_watch) */
};
/* ---------------------------------------------------------------------------
 * pools: owns an mr_pools (size classes).  pmr() is a pools_resource over
 * it (mr_pools_alloc / mr_pools_free inline): a drop-in for
 * std::pmr::unsynchronized_pool_resource, and with memres::thread_safe (or
 * options with thread_safe) for std::pmr::synchronized_pool_resource.
 * Construction throws std::invalid_argument (bad options) or std::bad_alloc;
 * alloc throws std::bad_alloc; the rest never throw. */
class pools {
public:
    pools() : p_(create(nullptr)), pmr_(p_) { watch(); }
    explicit pools(const mr_pools_options &opts) : p_(create(&opts)), pmr_(p_) { watch(); }
    /* a thread-safe pool (mr_pools_options.thread_safe) with default options */
    explicit pools(thread_safe_t) : p_(create(&ts_options)), pmr_(p_) { watch(); }
    /* A child of parent (any node: name it, nullptr for the kind; or an
     * owner), over the parent's upstream: it dies with the parent (see
     * "Trees" above). */
    pools(mr_node *parent, const char *name) : p_(create_under(parent, name)), pmr_(p_) { watch(); }
    template <class Parent, class = decltype(std::declval<Parent &>().node())>
    explicit pools(Parent &parent, const char *name = nullptr) : pools(parent.node(), name)
    {
    }
    ~pools()
    {
        if (node_ != nullptr)
            mr_pools_destroy(p_);
    }
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
    /* Its node in the tree; false once it died with its parent. */
    mr_node *node() const noexcept { return mr_pools_node(p_); }
    bool alive() const noexcept { return node_ != nullptr; }

private:
    static constexpr mr_pools_options ts_options{nullptr, 0, 0, true, nullptr, 0, nullptr, nullptr};
    void watch() noexcept
    {
        node_ = mr_pools_node(p_);
        mri_node_watch(node_, &node_);
    }
    static mr_pools *create_under(mr_node *parent, const char *name)
    {
        mr_pools_options o{};
        o.parent = parent;
        o.name = name;
        return create(&o);
    }

    static mr_pools *create(const mr_pools_options *opts)
    {
        mr_pools *p = mr_pools_create(opts);
        if (p == nullptr)
            detail::throw_create_error("memres: mr_pools_create: invalid options");
        return p;
    }

    mr_pools *p_;
    pools_resource pmr_;
    mr_node *node_ = nullptr; /* NULL once the pool died (mri_node_watch) */
};
} // namespace memres

#endif /* MEMRES_MEMRES_HPP */
