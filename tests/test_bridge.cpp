/* SPDX-License-Identifier: MIT */
/* tests/test_bridge.cpp -- the C++17 std::pmr bridge (memres/memres.hpp).
 *
 * Both directions: std::pmr containers over memres resources (the
 * per-allocator arena_resource, pools_resource, objpool_resource, the
 * owners' pmr(), resource_adaptor with the allocators it recognises,
 * arena_allocator), and std::pmr resources as the upstream of memres
 * allocators (pmr_resource); exceptions
 * on exhaustion; is_equal semantics; the RAII owners.  Upstreams are the
 * checking mrt_upstream (C) or a counting std::pmr resource, so every test
 * also proves that nothing leaked and that sizes and alignments match.
 */
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <list>
#include <map>
#include <memory_resource>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "memres/memres.hpp"

extern "C" {
#include "support.h" /* and cmocka.h */
}

namespace {

/* A std::pmr resource that counts what passes through it and checks that
 * every deallocate matches an allocate (by size and alignment totals). */
class counting_pmr final : public std::pmr::memory_resource {
public:
    explicit counting_pmr(std::pmr::memory_resource *up = std::pmr::new_delete_resource()) : up_(up) {}
    std::size_t allocations = 0, deallocations = 0, bytes = 0, align_sum = 0;

private:
    void *do_allocate(std::size_t n, std::size_t a) override
    {
        void *p = up_->allocate(n, a);
        allocations++;
        bytes += n;
        align_sum += a;
        return p;
    }
    void do_deallocate(void *p, std::size_t n, std::size_t a) override
    {
        deallocations++;
        bytes -= n;
        align_sum -= a;
        up_->deallocate(p, n, a);
    }
    bool do_is_equal(const std::pmr::memory_resource &o) const noexcept override { return this == &o; }
    std::pmr::memory_resource *up_;
};

/* A std::pmr resource whose allocate throws something other than bad_alloc. */
class throwing_pmr final : public std::pmr::memory_resource {
    void *do_allocate(std::size_t, std::size_t) override { throw std::runtime_error("no"); }
    void do_deallocate(void *, std::size_t, std::size_t) override {}
    bool do_is_equal(const std::pmr::memory_resource &o) const noexcept override { return this == &o; }
};

bool aligned(const void *p, std::size_t a) { return (reinterpret_cast<std::uintptr_t>(p) & (a - 1)) == 0; }

/* ---- std::pmr containers over memres ---- */

void test_list_over_arena(void **state)
{
    mrt_upstream *u = static_cast<mrt_upstream *>(*state);
    {
        memres::arena a{&u->base};
        std::size_t first_round_allocations = 0;
        for (int round = 0; round < 4; round++) {
            {
                std::pmr::list<int> l{a.pmr()};
                long long sum = 0;
                for (int i = 0; i < 20000; i++)
                    l.push_back(i);
                for (int v : l)
                    sum += v;
                assert_int_equal(sum, 20000LL * 19999 / 2);
                assert_true(mrt_upstream_owns(u, &l.front()));
                assert_true(mrt_upstream_owns(u, &l.back()));
            }
            assert_true(a.stats().allocations >= 20000);
            assert_true(mr_arena_check(a.get()));
            if (round == 0)
                first_round_allocations = u->allocations;
            else
                assert_int_equal(u->allocations, first_round_allocations); /* reset reuses: no upstream */
            a.reset();
        }
    }
}

void test_nested_containers_over_arena(void **state)
{
    mrt_upstream *u = static_cast<mrt_upstream *>(*state);
    {
        memres::arena a{&u->base};
        std::pmr::vector<std::pmr::string> v{a.pmr()};
        std::pmr::map<int, std::pmr::string> m{a.pmr()};
        for (int i = 0; i < 500; i++) {
            v.emplace_back("a string long enough to defeat the small-string buffer ");
            v.back() += std::to_string(i);
            m.emplace(i, v.back());
        }
        /* uses-allocator construction: the inner strings live in the arena too */
        assert_true(v[7].get_allocator().resource() == a.pmr());
        assert_true(m.at(9).get_allocator().resource() == a.pmr());
        assert_true(mrt_upstream_owns(u, v[123].data()));
        assert_true(mrt_upstream_owns(u, m.at(456).data()));
        assert_true(v[499] == m.at(499));
        /* over-aligned requests through the adaptor */
        void *p = a.pmr()->allocate(100, 4096);
        assert_true(aligned(p, 4096));
        a.pmr()->deallocate(p, 100, 4096);
    }
}

void test_arena_pmr_frees_newest(void **state)
{
    (void)state;
    memres::arena a;
    memres::resource_adaptor generic{a.resource()};
    std::pmr::memory_resource *views[] = {a.pmr(), &generic};
    for (std::pmr::memory_resource *r : views) {
        void *keep = r->allocate(24, 8);
        void *tmp = r->allocate(100, 8);
        r->deallocate(tmp, 100, 8); /* the newest: given back at once */
        assert_ptr_equal(r->allocate(100, 8), tmp);
        void *tmp2 = r->allocate(40, 16);
        r->deallocate(keep, 24, 8); /* not the newest: stays */
        void *next = r->allocate(40, 16);
        assert_true(next != keep);
        assert_true(next != tmp2);
        a.reset();
    }
    assert_true(mr_arena_check(a.get()));
}

void test_containers_over_malloc_resource(void **state)
{
    (void)state;
    memres::resource_adaptor m{mr_malloc_resource()};
    {
        std::pmr::vector<std::pmr::string> v{&m};
        std::pmr::map<std::pmr::string, int> idx{&m};
        for (int i = 0; i < 1000; i++) {
            v.emplace_back(std::string(40, static_cast<char>('a' + i % 26)) + std::to_string(i));
            idx.emplace(v.back(), i);
        }
        for (int i = 0; i < 1000; i++)
            assert_int_equal(idx.at(v[static_cast<std::size_t>(i)]), i);
    }
    void *p = m.allocate(0, 8); /* size 0: a valid pointer */
    assert_non_null(p);
    m.deallocate(p, 0, 8);
    p = m.allocate(1000, 8192);
    assert_true(aligned(p, 8192));
    std::memset(p, 1, 1000);
    m.deallocate(p, 1000, 8192);
}

void test_adaptor_forwards_size_and_alignment(void **state)
{
    mrt_upstream *u = static_cast<mrt_upstream *>(*state);
    {
        memres::resource_adaptor r{&u->base};
        std::pmr::vector<long> v{&r};
        for (long i = 0; i < 10000; i++)
            v.push_back(i); /* grows: allocate new, deallocate old, each with its size */
        assert_true(u->allocations > 5);
        void *p = r.allocate(256, 512);
        assert_true(aligned(p, 512));
        r.deallocate(p, 256, 512);
    }
    mrt_assert_balanced(u); /* bad_deallocations == 0: sizes and alignments matched */
}

/* ---- exhaustion becomes std::bad_alloc ---- */

void test_exhaustion_throws(void **state)
{
    (void)state;
    alignas(64) static unsigned char buf[4096];
    memres::arena a{buf, sizeof buf, mr_null_resource()};
    std::pmr::vector<int> v{a.pmr()};
    v.reserve(16);
    const int *data = v.data();
    bool threw = false;
    try {
        v.reserve(100000);
    } catch (const std::bad_alloc &) {
        threw = true;
    }
    assert_true(threw);
    assert_ptr_equal(v.data(), data); /* the failed call changed nothing */
    v.push_back(42);
    assert_int_equal(v.back(), 42);

    threw = false;
    std::size_t n = 0;
    try {
        std::pmr::list<int> l{a.pmr()};
        for (;; n++)
            l.push_back(static_cast<int>(n));
    } catch (const std::bad_alloc &) {
        threw = true;
    }
    assert_true(threw);
    assert_true(n > 10);

    threw = false;
    try {
        (void)a.alloc(1 << 20);
    } catch (const std::bad_alloc &) {
        threw = true;
    }
    assert_true(threw);

    threw = false;
    try {
        std::vector<int, memres::arena_allocator<int>> w{memres::arena_allocator<int>(a)};
        w.resize(1 << 20);
    } catch (const std::bad_alloc &) {
        threw = true;
    }
    assert_true(threw);

    /* a rewind to the start makes the buffer usable again */
    v.clear();
    v.shrink_to_fit();
    a.reset();
    assert_non_null(a.alloc(1000));

    memres::resource_adaptor none{mr_null_resource()};
    threw = false;
    try {
        (void)none.allocate(8, 8);
    } catch (const std::bad_alloc &) {
        threw = true;
    }
    assert_true(threw);
}

void test_owner_create_errors(void **state)
{
    mrt_upstream *u = static_cast<mrt_upstream *>(*state);
    /* a buffer too small for the arena's header: EINVAL -> invalid_argument */
    alignas(16) unsigned char tiny[16];
    bool threw = false;
    try {
        memres::arena a{tiny, sizeof tiny, mr_null_resource()};
    } catch (const std::invalid_argument &) {
        threw = true;
    }
    assert_true(threw);

    /* the upstream fails the header: bad_alloc, nothing leaked */
    u->fail_at = 1;
    u->fail_all_after = true;
    threw = false;
    try {
        memres::arena a{&u->base};
    } catch (const std::bad_alloc &) {
        threw = true;
    }
    assert_true(threw);
}

/* ---- std::pmr resources as memres upstreams ---- */

void test_pmr_new_delete_as_upstream(void **state)
{
    (void)state;
    memres::pmr_resource nd{std::pmr::new_delete_resource()};
    void *p = mr_allocate(nd.resource(), 100, 8);
    assert_non_null(p);
    std::memset(p, 0, 100);
    mr_deallocate(nd.resource(), p, 100, 8);
    p = mr_allocate(nd.resource(), 64, 256);
    assert_true(aligned(p, 256));
    mr_deallocate(nd.resource(), p, 64, 256);
    errno = 0;
    assert_null(mr_allocate(nd.resource(), 8, 3)); /* validated before the pmr resource sees it */
    assert_int_equal(errno, EINVAL);

    counting_pmr count; /* over new_delete_resource */
    memres::pmr_resource w{&count};
    {
        mr_arena_options o{};
        o.upstream = w.resource();
        o.block_size = 4096;
        memres::arena a{o};
        for (std::size_t i = 0; i < 2000; i++) {
            auto *q = static_cast<unsigned char *>(a.alloc(1 + i % 300));
            q[0] = 1;
        }
        assert_true(count.allocations > 3);
        assert_true(a.stats().held > 0 && a.stats().held <= count.bytes);
    }
    assert_int_equal(count.bytes, 0);
    assert_int_equal(count.align_sum, 0);
    assert_int_equal(count.allocations, count.deallocations);
}

void test_pmr_monotonic_as_upstream(void **state)
{
    (void)state;
    alignas(64) static std::byte buf[64 * 1024];
    std::pmr::monotonic_buffer_resource mono{buf, sizeof buf, std::pmr::null_memory_resource()};
    memres::pmr_resource w{&mono};
    mr_arena_options o{};
    o.upstream = w.resource();
    o.block_size = 4096;
    o.max_block_size = 8192;
    mr_arena *a = mr_arena_create(&o);
    assert_non_null(a);
    mr_arena_mark start = mr_arena_save(a);
    std::size_t n = 0;
    void *p;
    errno = 0;
    while ((p = mr_arena_alloc(a, 100)) != nullptr) {
        std::memset(p, 0x5a, 100);
        n++;
    }
    /* null_memory_resource threw std::bad_alloc; the bridge made it NULL + ENOMEM */
    assert_int_equal(errno, ENOMEM);
    assert_true(n > 300);
    mr_stats s;
    mr_arena_stats(a, &s);
    assert_true(s.held <= sizeof buf);
    assert_true(mr_arena_check(a));
    mr_arena_rewind(a, start); /* memory kept: usable again without the upstream */
    assert_non_null(mr_arena_alloc(a, 100));
    mr_arena_destroy(a);

    throwing_pmr t;
    memres::pmr_resource tw{&t};
    errno = 0;
    assert_null(mr_allocate(tw.resource(), 16, 8)); /* any exception -> NULL, ENOMEM */
    assert_int_equal(errno, ENOMEM);
}

/* ---- equality ---- */

void test_is_equal(void **state)
{
    (void)state;
    memres::arena a, b;
    memres::resource_adaptor x{a.resource()}, y{a.resource()}, z{b.resource()};
    assert_true(x == y);                       /* distinct adaptors, same arena */
    assert_true(x == *a.pmr());                /* the inline arena adaptor is the same resource */
    assert_false(x == z);                      /* different arenas */
    assert_false(*a.pmr() == *b.pmr());
    memres::resource_adaptor m1{mr_malloc_resource()}, m2{mr_malloc_resource()};
    assert_true(m1 == m2);                     /* malloc frees what malloc allocated */
    assert_false(m1 == x);
    assert_false(m1 == *std::pmr::new_delete_resource()); /* not an adaptor */
    assert_false(*std::pmr::new_delete_resource() == m1);

    /* equal allocators let a move-assignment steal the buffer */
    std::pmr::vector<int> v1{&x}, v2{&y};
    v1.assign(100, 7);
    const int *d = v1.data();
    v2 = std::move(v1);
    assert_ptr_equal(v2.data(), d);
    std::pmr::vector<int> v3{&z};
    v3 = std::move(v2); /* unequal: element-wise copy into z's arena */
    assert_true(v3.data() != d);
    assert_int_equal(v3[99], 7);

    /* pmr -> mr: equal when the wrapped std::pmr resources are */
    memres::pmr_resource n1{std::pmr::new_delete_resource()}, n2{std::pmr::new_delete_resource()};
    assert_true(mr_is_equal(n1.resource(), n2.resource()));
    std::pmr::monotonic_buffer_resource mono1, mono2;
    memres::pmr_resource p1{&mono1}, p1b{&mono1}, p2{&mono2};
    assert_true(mr_is_equal(p1.resource(), p1b.resource()));
    assert_false(mr_is_equal(p1.resource(), p2.resource()));
    assert_false(mr_is_equal(n1.resource(), mr_malloc_resource()));
    assert_false(mr_is_equal(mr_malloc_resource(), n1.resource()));

    /* round trip: an adaptor over a pmr_resource compares through both layers */
    memres::resource_adaptor r1{p1.resource()}, r1b{p1b.resource()}, r2{p2.resource()};
    assert_true(r1 == r1b);
    assert_false(r1 == r2);
}

/* ---- the per-allocator std::pmr resources ---- */

/* Runs f and says whether it threw E (and nothing else). */
template <class E, class F>
bool throws(F f)
{
    try {
        f();
    } catch (const E &) {
        return true;
    }
    return false;
}

void test_arena_resource(void **state)
{
    mrt_upstream *u = static_cast<mrt_upstream *>(*state);
    {
        memres::arena owner{&u->base};
        mr_arena *a = owner.get();
        memres::arena_resource r{a};
        assert_ptr_equal(r.get(), a);
        assert_ptr_equal(r.resource(), mr_arena_resource(a));

        /* every alignment up to 16 on the inline path, larger ones exact */
        std::size_t before = owner.stats().allocations;
        for (std::size_t al = 1; al <= 8192; al *= 2) {
            void *p = r.allocate(24, al);
            assert_true(aligned(p, al <= 8 ? 8 : al)); /* align <= 8: 8-byte granularity */
            std::memset(p, 0xa5, 24);
        }
        assert_int_equal(owner.stats().allocations, before + 14); /* the inline path counts */
        assert_non_null(r.allocate(0, 8));                         /* size 0: a valid pointer */

        /* deallocate gives back the newest allocation only */
        void *keep = r.allocate(40, 8);
        void *tmp = r.allocate(100, 8);
        r.deallocate(tmp, 100, 8);
        assert_ptr_equal(r.allocate(100, 8), tmp);
        r.deallocate(keep, 40, 8); /* not the newest: nothing happens */
        void *next = r.allocate(40, 8);
        assert_true(next != keep && next != tmp);
        void *big = r.allocate(64, 256); /* over-aligned: newest too */
        r.deallocate(big, 64, 256);
        assert_true(mr_arena_check(a));

        /* std::pmr containers, uses-allocator construction included */
        {
            std::pmr::list<int> l{&r};
            std::pmr::vector<std::pmr::string> v{&r};
            std::pmr::map<int, std::pmr::string> m{&r};
            for (int i = 0; i < 3000; i++) {
                l.push_back(i);
                v.emplace_back(std::string(30, 'x') + std::to_string(i));
                m.emplace(i, v.back());
            }
            assert_int_equal(l.back(), 2999);
            assert_true(v[2999] == m.at(2999));
            assert_true(m.at(5).get_allocator().resource() == &r);
            assert_true(mrt_upstream_owns(u, &l.front()));
            assert_true(mrt_upstream_owns(u, m.at(17).data()));
        }
        owner.reset();
        assert_true(mr_arena_check(a));

        /* arena::pmr() is an arena_resource */
        assert_non_null(dynamic_cast<memres::arena_resource *>(owner.pmr()));

        /* a bad alignment (std::pmr never passes one) above 16: bad_alloc
         * (volatile: compilers reject a constant one) */
        volatile std::size_t bad_align = 48;
        assert_true(throws<std::bad_alloc>([&] { (void)r.allocate(8, bad_align); }));
        /* sizes that can never be served: bad_alloc, nothing changed */
        std::size_t n = owner.stats().allocations;
        volatile std::size_t huge = SIZE_MAX - 8; /* volatile: no compile-time size warning */
        assert_true(throws<std::bad_alloc>([&] { (void)r.allocate(huge, 8); }));
        assert_true(throws<std::bad_alloc>([&] { (void)r.allocate(huge / 2, 64); }));
        assert_int_equal(owner.stats().allocations, n);
    }

    /* exhaustion of an arena over a stack buffer: bad_alloc from the inline
     * path's fallback, and the arena stays usable */
    alignas(64) unsigned char buf[2048];
    memres::arena small{buf, sizeof buf, mr_null_resource()};
    memres::arena_resource r{small.get()};
    std::size_t got = 0;
    assert_true(throws<std::bad_alloc>([&] {
        for (;; got++)
            (void)r.allocate(32, 8);
    }));
    assert_true(got > 10);
    small.reset();
    assert_non_null(r.allocate(32, 8));

    /* the upstream fails a new block: bad_alloc */
    u->fail_at = u->calls + 1;
    u->fail_all_after = true;
    {
        alignas(64) unsigned char buf2[2048]; /* (buf is still small's) */
        memres::arena owner2{buf2, sizeof buf2, &u->base};
        memres::arena_resource r2{owner2.get()};
        assert_true(throws<std::bad_alloc>([&] { (void)r2.allocate(4096, 8); }));
        assert_true(throws<std::bad_alloc>([&] { (void)r2.allocate(3000, 4096); }));
        assert_non_null(r2.allocate(16, 8)); /* the buffer still serves */
    }
    u->fail_at = 0;
}

void test_pools_resource(void **state)
{
    mrt_upstream *u = static_cast<mrt_upstream *>(*state);
    {
        mr_pools_options o{};
        o.upstream = &u->base;
        memres::pools owner{o};
        mr_pools *p = owner.get();
        memres::pools_resource r{p};
        assert_ptr_equal(r.get(), p);
        assert_ptr_equal(r.resource(), mr_pools_resource(p));
        assert_non_null(dynamic_cast<memres::pools_resource *>(owner.pmr()));

        /* alignments up to 8 share the 8-byte class of the size (a 24-byte
         * node costs 24): a block freed with one is served again for
         * another, and C frees what C++ gave; 16 takes the class of 32 */
        void *b = r.allocate(24, 8);
        assert_true(aligned(b, 8));
        r.deallocate(b, 24, 8);
        assert_ptr_equal(r.allocate(24, 1), b);
        mr_pools_free(p, b, 24, 1);
        assert_ptr_equal(mr_pools_alloc(p, 24, 4), b);
        r.deallocate(b, 24, 4);
        assert_int_equal(owner.stats().in_use, 0);
        void *c = r.allocate(24, 16);
        assert_true(aligned(c, 16));
        assert_int_equal(owner.stats().in_use, 32);
        r.deallocate(c, 24, 16);
        assert_ptr_equal(mr_pools_alloc(p, 32, 16), c);
        mr_pools_free(p, c, 32, 16);

        /* every alignment, every path: pooled, over-aligned, direct */
        struct req {
            std::size_t size, align;
            void *p;
        } reqs[] = {{0, 1, nullptr},      {1, 1, nullptr},        {24, 2, nullptr},
                    {100, 32, nullptr},   {1000, 4096, nullptr},  {10, 8192, nullptr},
                    {1 << 20, 64, nullptr}, {3 << 20, 8, nullptr}};
        for (req &q : reqs) {
            q.p = r.allocate(q.size, q.align);
            assert_true(aligned(q.p, q.align));
            std::memset(q.p, 0x5a, q.size);
        }
        assert_true(owner.stats().in_use > 0);
        for (req &q : reqs)
            r.deallocate(q.p, q.size, q.align);
        assert_int_equal(owner.stats().in_use, 0);
        assert_true(mr_pools_check(p));

        /* std::pmr containers */
        {
            std::pmr::list<int> l{&r};
            std::pmr::vector<std::pmr::string> v{&r};
            for (int i = 0; i < 3000; i++) {
                l.push_back(i);
                v.emplace_back(static_cast<std::size_t>(20 + i % 700), 'y');
            }
            assert_int_equal(l.size(), 3000);
            assert_true(mrt_upstream_owns(u, v[2999].data()));
        }
        assert_int_equal(owner.stats().in_use, 0); /* every node and string came back */
        assert_true(mr_pools_check(p));

        /* the upstream fails: bad_alloc, nothing changed */
        mr_stats s0 = owner.stats();
        u->fail_at = u->calls + 1;
        u->fail_all_after = true;
        assert_true(throws<std::bad_alloc>([&] { (void)r.allocate(30000, 8); /* a class not used yet */ }));
        assert_true(throws<std::bad_alloc>([&] { (void)r.allocate(1 << 21, 8); }));
        assert_true(throws<std::bad_alloc>([&] { (void)r.allocate(64, 16384); }));
        u->fail_at = 0;
        u->fail_all_after = false;
        mr_stats s1 = owner.stats();
        assert_int_equal(s1.in_use, s0.in_use);
        assert_int_equal(s1.held, s0.held);
        volatile std::size_t huge = SIZE_MAX - 64; /* volatile: no compile-time size warning */
        assert_true(throws<std::bad_alloc>([&] { (void)r.allocate(huge, 8); }));
        volatile std::size_t bad_align = 48; /* not a power of two */
        assert_true(throws<std::bad_alloc>([&] { (void)r.allocate(8, bad_align); }));
    }
}

void test_objpool_resource(void **state)
{
    mrt_upstream *u = static_cast<mrt_upstream *>(*state);
    {
        mr_objpool_options o{};
        o.upstream = &u->base;
        o.objects_per_block = 64;

        /* over a pool handed in as mr_objpool *: inline up to alignof(void *),
         * through the pool's view up to its own alignment */
        mr_objpool *raw = mr_objpool_create(48, 16, &o);
        assert_non_null(raw);
        {
            memres::objpool_resource r{raw};
            assert_ptr_equal(r.get(), raw);
            assert_ptr_equal(r.resource(), mr_objpool_resource(raw));
            void *a = r.allocate(48, 8);
            void *b = r.allocate(1, 16); /* the view's path */
            void *c = r.allocate(0, 1);
            assert_true(aligned(a, 16) && aligned(b, 16) && aligned(c, 16));
            std::memset(a, 1, 48);
            std::memset(b, 2, 1);
            r.deallocate(b, 1, 16);
            assert_ptr_equal(r.allocate(40, 8), b); /* the freed object is reused first */
            r.deallocate(b, 40, 8);
            r.deallocate(a, 48, 8);
            r.deallocate(c, 0, 1);
            mr_stats s;
            mr_objpool_stats(raw, &s);
            assert_int_equal(s.in_use, 0);

            /* what the pool cannot give: bad_alloc, nothing changed */
            assert_true(throws<std::bad_alloc>([&] { (void)r.allocate(49, 8); }));
            assert_true(throws<std::bad_alloc>([&] { (void)r.allocate(8, 32); }));
            mr_objpool_stats(raw, &s);
            assert_int_equal(s.in_use, 0);
        }
        assert_true(mr_objpool_check(raw));
        mr_objpool_destroy(raw);

        /* the owner's pmr(): a node container over a pool sized for its node */
        std::size_t node_size = 0, node_align = 0;
        {
            counting_pmr count;
            std::pmr::list<long> l{&count};
            l.push_back(1);
            node_size = count.bytes;
            node_align = count.align_sum;
        }
        memres::objpool owner{node_size, node_align, &o};
        assert_non_null(dynamic_cast<memres::objpool_resource *>(owner.pmr()));
        assert_ptr_equal(static_cast<memres::objpool_resource *>(owner.pmr())->get(), owner.get());
        {
            std::pmr::list<long> l{owner.pmr()};
            for (long i = 0; i < 5000; i++)
                l.push_back(i);
            assert_int_equal(owner.stats().in_use, 5000 * mr_objpool_object_size(owner.get()));
            assert_int_equal(mr_objpool_object_size(owner.get()), node_size); /* no rounding */
            assert_true(mrt_upstream_owns(u, &l.back()));
            for (int i = 0; i < 2500; i++)
                l.pop_front();
            std::size_t ups = u->allocations;
            for (long i = 0; i < 2500; i++)
                l.push_back(i); /* the freed nodes come back: no upstream call */
            assert_int_equal(u->allocations, ups);
        }
        assert_int_equal(owner.stats().in_use, 0);
        assert_true(mr_objpool_check(owner.get()));
        assert_true(throws<std::bad_alloc>([&] { (void)owner.pmr()->allocate(node_size + 1, 8); }));

        /* the upstream fails a new block: bad_alloc */
        memres::objpool fresh{32, 8, &o};
        u->fail_at = u->calls + 1;
        assert_true(throws<std::bad_alloc>([&] { (void)fresh.pmr()->allocate(32, 8); }));
        u->fail_at = 0;
        void *q = fresh.pmr()->allocate(32, 8);
        fresh.pmr()->deallocate(q, 32, 8);
    }
}

void test_adaptor_recognises_allocators(void **state)
{
    mrt_upstream *u = static_cast<mrt_upstream *>(*state);
    {
        memres::arena a{&u->base}, a2{&u->base};
        mr_pools_options po{};
        po.upstream = &u->base;
        memres::pools p{po}, p2{po};
        mr_objpool_options oo{};
        oo.upstream = &u->base;
        memres::objpool o{24, 8, &oo}, o2{24, 8, &oo};

        /* the C queries: the allocator of its own view, NULL for anything else */
        assert_ptr_equal(mr_pools_of_resource(p.resource()), p.get());
        assert_ptr_equal(mr_pools_of_resource(p2.resource()), p2.get());
        assert_null(mr_pools_of_resource(nullptr));
        assert_null(mr_pools_of_resource(mr_malloc_resource()));
        assert_null(mr_pools_of_resource(a.resource()));
        assert_null(mr_pools_of_resource(o.resource()));
        assert_null(mr_pools_of_resource(&u->base));
        assert_ptr_equal(mr_objpool_of_resource(o.resource()), o.get());
        assert_ptr_equal(mr_objpool_of_resource(o2.resource()), o2.get());
        assert_null(mr_objpool_of_resource(nullptr));
        assert_null(mr_objpool_of_resource(mr_null_resource()));
        assert_null(mr_objpool_of_resource(p.resource()));
        assert_null(mr_objpool_of_resource(a.resource()));
        assert_ptr_equal(memres::detail::arena_of_resource(a.resource()), a.get());
        assert_ptr_equal(memres::detail::arena_of_resource(a2.resource()), a2.get());
        assert_null(memres::detail::arena_of_resource(nullptr));
        assert_null(memres::detail::arena_of_resource(mr_malloc_resource()));
        assert_null(memres::detail::arena_of_resource(p.resource()));
        assert_null(memres::detail::arena_of_resource(o.resource()));

        /* an adaptor over each view behaves as the allocator's own class */
        memres::resource_adaptor ra{a.resource()}, rp{p.resource()}, ro{o.resource()};
        memres::resource_adaptor ro2{o.get()}, ra2{a.get()}, rp2{p.get()};
        std::size_t n = a.stats().allocations;
        void *keep = ra.allocate(24, 8);
        void *tmp = ra.allocate(100, 16);
        ra.deallocate(tmp, 100, 16); /* the newest: back */
        assert_ptr_equal(ra2.allocate(100, 16), tmp);
        ra.deallocate(keep, 24, 8); /* not the newest: stays */
        assert_int_equal(a.stats().allocations, n + 3);
        assert_true(aligned(ra.allocate(8, 1024), 1024));

        void *b = rp.allocate(24, 8);
        rp2.deallocate(b, 24, 4); /* same class */
        assert_ptr_equal(p.pmr()->allocate(24, 4), b);
        mr_pools_free(p.get(), b, 24, 8);
        assert_int_equal(p.stats().in_use, 0);

        void *x = ro.allocate(24, 8);
        void *y = ro2.allocate(16, 4);
        ro.deallocate(y, 16, 4);
        assert_ptr_equal(o.pmr()->allocate(24, 8), y);
        mr_objpool_free(o.get(), y);
        ro2.deallocate(x, 24, 8);
        assert_int_equal(o.stats().in_use, 0);
        assert_true(throws<std::bad_alloc>([&] { (void)ro.allocate(25, 8); }));
        assert_true(throws<std::bad_alloc>([&] { (void)ro.allocate(8, 16); })); /* pool aligned to 8 */

        /* containers through the adaptors */
        {
            std::pmr::list<int> la{&ra}, lp{&rp}, lo{&ro};
            for (int i = 0; i < 2000; i++) {
                la.push_back(i);
                lp.push_back(i);
                lo.push_back(i);
            }
            assert_true(la == lp && lp == lo);
        }
        assert_int_equal(p.stats().in_use, 0);
        assert_int_equal(o.stats().in_use, 0);
        assert_true(mr_arena_check(a.get()) && mr_pools_check(p.get()) && mr_objpool_check(o.get()));

        /* equality: every bridge resource over the same allocator */
        memres::arena_resource xa{a.get()};
        memres::pools_resource xp{p.get()};
        memres::objpool_resource xo{o.get()};
        assert_true(ra == xa && xa == ra && ra2 == xa && xa == *a.pmr());
        assert_true(rp == xp && xp == *p.pmr() && rp2 == xp);
        assert_true(ro == xo && xo == *o.pmr() && ro2 == xo);
        assert_false(xa == memres::arena_resource{a2.get()});
        assert_false(xp == *p2.pmr());
        assert_false(xo == *o2.pmr());
        assert_false(xa == xp || xp == xo || xo == xa);
        assert_false(xa == *std::pmr::new_delete_resource());
        assert_false(*std::pmr::new_delete_resource() == xp);
        memres::arena_resource copy = xa; /* copies use the same arena */
        assert_true(copy == xa && copy.get() == a.get());

        /* equal resources: a move steals the buffer; unequal: copies */
        std::pmr::vector<int> v1{&xa}, v2{&ra};
        v1.assign(64, 3);
        const int *d = v1.data();
        v2 = std::move(v1);
        assert_ptr_equal(v2.data(), d);
        std::pmr::vector<int> v3{&xp};
        v3 = std::move(v2);
        assert_true(v3.data() != d);
        assert_int_equal(v3[63], 3);
    }
}

/* ---- the arena owner ---- */

int g_destroyed;
struct tracked {
    int v;
    explicit tracked(int x) : v(x) {}
    ~tracked() { g_destroyed += v; }
};

void test_arena_owner(void **state)
{
    mrt_upstream *u = static_cast<mrt_upstream *>(*state);
    {
        memres::arena a{&u->base};
        memres::arena::mark m = a.save();
        void *p = a.alloc(100);
        a.rewind(m);
        assert_ptr_equal(a.alloc(100), p); /* rewind keeps the memory */
        assert_true(aligned(a.alloc(10, 4096), 4096));

        g_destroyed = 0;
        auto *t = a.make<tracked>(5);
        assert_int_equal(t->v, 5);
        auto *pod = a.make<int>(3); /* trivially destructible: no cleanup */
        assert_int_equal(*pod, 3);
        m = a.save();
        a.make<tracked>(100);
        a.rewind(m); /* runs the one made after m */
        assert_int_equal(g_destroyed, 100);
        a.reset();
        assert_int_equal(g_destroyed, 105);
        a.make<tracked>(1000);
        a.release();
        assert_int_equal(g_destroyed, 1105);
        a.make<tracked>(10000);
        assert_true(a.stats().held > 0);
        assert_true(a.get() != nullptr);
    }
    assert_int_equal(g_destroyed, 11105); /* destroy runs the last one */
}

void test_arena_allocator(void **state)
{
    mrt_upstream *u = static_cast<mrt_upstream *>(*state);
    {
        memres::arena a{&u->base}, b{&u->base};
        memres::arena_allocator<int> ai{a};
        memres::arena_allocator<double> ad{ai}; /* rebinding copy */
        assert_true(ai == ad);
        assert_true(ai != memres::arena_allocator<int>(b));
        std::list<int, memres::arena_allocator<int>> l{ai};
        std::vector<double, memres::arena_allocator<double>> v{ad};
        for (int i = 0; i < 5000; i++) {
            l.push_back(i);
            v.push_back(i * 0.5);
        }
        assert_int_equal(l.back(), 4999);
        assert_true(v[4000] == 2000.0);
        assert_true(mrt_upstream_owns(u, &l.front()));
        assert_true(mrt_upstream_owns(u, v.data()));
        bool threw = false;
        try {
            (void)ad.allocate(SIZE_MAX / 4);
        } catch (const std::bad_array_new_length &) {
            threw = true;
        }
        assert_true(threw);
    }
}

/* ---- objpool and pools owners ---- */

void test_objpool_owner(void **state)
{
    mrt_upstream *u = static_cast<mrt_upstream *>(*state);
    {
        mr_objpool_options o{};
        o.upstream = &u->base;
        memres::objpool p{40, 8, &o};
        std::vector<void *> objs;
        for (int i = 0; i < 3000; i++) {
            objs.push_back(p.alloc());
            std::memset(objs.back(), i & 0xff, 40);
        }
        assert_int_equal(p.stats().in_use, 3000 * 40);
        for (void *q : objs)
            p.free(q);
        assert_int_equal(p.stats().in_use, 0);
        std::size_t ups = u->allocations;
        for (int i = 0; i < 3000; i++)
            (void)p.alloc();
        assert_int_equal(u->allocations, ups); /* freed objects are reused */
        p.reset();
        p.release();
        assert_non_null(p.get());
    }

    bool threw = false;
    try {
        memres::objpool bad{0, 8};
    } catch (const std::invalid_argument &) {
        threw = true;
    }
    assert_true(threw);
}

void test_pools_owner(void **state)
{
    mrt_upstream *u = static_cast<mrt_upstream *>(*state);
    {
        mr_pools_options o{};
        o.upstream = &u->base;
        memres::pools p{o};
        {
            std::pmr::vector<std::pmr::string> v{p.pmr()};
            for (int i = 0; i < 2000; i++)
                v.emplace_back(static_cast<std::size_t>(20 + i % 500), 'x');
            assert_true(mrt_upstream_owns(u, v[1999].data()));
        }
        void *q = p.alloc(100);
        p.free(q, 100);
        q = p.alloc(1 << 20, 64); /* large: straight upstream, tracked */
        assert_true(aligned(q, 64));
        p.free(q, 1 << 20, 64);
        memres::resource_adaptor r{p.resource()}, r2{p.get()};
        assert_true(r == *p.pmr());
        assert_true(r2 == r);
        void *big = r.allocate(1000, 8); /* generic path: mr_allocate -> the pools resource */
        r2.deallocate(big, 1000, 8);      /* inline path frees it */
        assert_true(mr_pools_check(p.get()));
        p.reset();
        p.release();
    }

    /* a thread-safe pool behind the same owner */
    {
        mr_pools_options o{};
        o.thread_safe = true;
        memres::pools ts{o};
        std::pmr::vector<int> v(ts.pmr());
        for (int i = 0; i < 1000; i++)
            v.push_back(i);
        assert_int_equal(v[999], 999);
        assert_true(mr_pools_check(ts.get()));
    }
}


/* Owners in a tree (memres/tree.h): a child owner made from its parent
 * owner dies with the parent's reset or destroy, and its destructor then
 * does nothing more; a std::pmr container made in a child arena with
 * arena::make is destroyed with it (its destructor is a cleanup). */
static int live_strings;
struct counted {
    std::pmr::vector<std::pmr::string> v;
    explicit counted(std::pmr::memory_resource *r) : v(r) { live_strings++; }
    ~counted() { live_strings--; }
};

void test_owners_in_a_tree(void **state)
{
    mrt_upstream *u = static_cast<mrt_upstream *>(*state);
    memres::arena server{&u->base};
    {
        memres::arena conn{server, "connection"};
        assert_ptr_equal(mr_node_parent(conn.node()), server.node());
        assert_string_equal(mr_node_name(conn.node()), "connection");
        for (int i = 0; i < 100; i++) {
            memres::arena req{conn, "request"}; /* scoped: destroyed before conn */
            auto *c = req.make<counted>(req.pmr());
            c->v.emplace_back(200, 'x');
            assert_int_equal(live_strings, 1);
        } /* ~req: destroyed, kept by conn */
        assert_int_equal(live_strings, 0);
        memres::pools cache{conn, "cache"};
        memres::objpool nodes{40, 8, cache, "nodes"};
        memres::arena scratch{conn.node(), nullptr};
        auto *c = scratch.make<counted>(scratch.pmr());
        c->v.emplace_back(1000, 'y');
        assert_non_null(nodes.alloc());
        assert_non_null(cache.alloc(100));
        assert_true(cache.alive() && nodes.alive() && scratch.alive());
        conn.reset(); /* the children die, with the container */
        assert_false(cache.alive());
        assert_false(nodes.alive());
        assert_false(scratch.alive());
        assert_int_equal(live_strings, 0);
        assert_null(mr_node_first_child(conn.node()));
        assert_true(conn.alive());
    } /* ~scratch, ~nodes, ~cache: nothing; ~conn: destroyed */
    assert_null(mr_node_first_child(server.node()));
    {
        memres::arena conn{server, "connection"};
        memres::arena req{conn, "request"};
        (void)req.alloc(10);
        server.release(); /* conn and req die; their owners do nothing */
        assert_false(conn.alive());
        assert_false(req.alive());
    }
    /* a dead parent (a child the server keeps): std::invalid_argument */
    mr_arena_options o{};
    o.parent = server.node();
    mr_arena *kept = mr_arena_create(&o);
    assert_non_null(kept);
    mr_arena_destroy(kept);
    mrt_violations v{};
    mr_set_violation_handler(mrt_record_violation, &v);
    bool threw = false;
    try {
        memres::arena child_of_dead{mr_arena_node(kept), nullptr};
    } catch (const std::invalid_argument &) {
        threw = true;
    }
    mr_set_violation_handler(nullptr, nullptr);
    assert_true(threw);
    mrt_assert_reported(&v, 1);
}

/* std::pmr containers on one shared thread-safe pool (memres::thread_safe),
 * from several threads: each thread fills its own containers, and lists
 * built by one thread are destroyed by another (cross-thread frees). */
static void test_thread_safe_pmr(void **)
{
    memres::pools p{memres::thread_safe};
    memres::objpool nodes{48, alignof(std::max_align_t), memres::thread_safe};
    enum { T = 4, N = 5000 };
    std::vector<std::pmr::list<long> *> made(T);
    std::vector<std::thread> th;
    for (int t = 0; t < T; t++)
        th.emplace_back([&, t] {
            std::pmr::vector<long> v(p.pmr());
            std::pmr::map<long, long> m(p.pmr());
            auto *l = new std::pmr::list<long>(p.pmr());
            for (long i = 0; i < N; i++) {
                v.push_back(i);
                m[i] = i * t;
                l->push_back(i + t);
            }
            long sum = 0;
            for (long x : v)
                sum += x;
            assert_int_equal(sum, (long)N * (N - 1) / 2);
            assert_int_equal(m[N - 1], (long)(N - 1) * t);
            made[(size_t)t] = l;
        });
    for (auto &x : th)
        x.join();
    th.clear();
    for (int t = 0; t < T; t++) /* thread t frees the list thread t+1 built */
        th.emplace_back([&, t] {
            std::pmr::list<long> *l = made[(size_t)((t + 1) % T)];
            assert_int_equal(l->front(), (t + 1) % T);
            delete l;
            /* and an object pool's nodes, alloc here, free on the next line */
            for (int i = 0; i < 1000; i++)
                nodes.free(nodes.alloc());
        });
    for (auto &x : th)
        x.join();
    assert_true(mr_pools_check(p.get()));
    assert_true(mr_objpool_check(nodes.get()));
    assert_int_equal(p.stats().in_use, 0);
    assert_int_equal(nodes.stats().in_use, 0);
}

} // namespace

int main(void)
{
    const struct CMUnitTest tests[] = {
        mrt_unit_test(test_list_over_arena),
        cmocka_unit_test(test_thread_safe_pmr),
        mrt_unit_test(test_nested_containers_over_arena),
        cmocka_unit_test(test_arena_pmr_frees_newest),
        cmocka_unit_test(test_containers_over_malloc_resource),
        mrt_unit_test(test_adaptor_forwards_size_and_alignment),
        cmocka_unit_test(test_exhaustion_throws),
        mrt_unit_test(test_owner_create_errors),
        cmocka_unit_test(test_pmr_new_delete_as_upstream),
        cmocka_unit_test(test_pmr_monotonic_as_upstream),
        cmocka_unit_test(test_is_equal),
        mrt_unit_test(test_arena_owner),
        mrt_unit_test(test_arena_allocator),
        mrt_unit_test(test_objpool_owner),
        mrt_unit_test(test_pools_owner),
        mrt_unit_test(test_arena_resource),
        mrt_unit_test(test_pools_resource),
        mrt_unit_test(test_objpool_resource),
        mrt_unit_test(test_adaptor_recognises_allocators),
        mrt_unit_test(test_owners_in_a_tree),
    };
    return cmocka_run_group_tests_name("bridge", tests, nullptr, nullptr);
}
