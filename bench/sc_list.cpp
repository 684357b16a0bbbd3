/* SPDX-License-Identifier: MIT */
/* bench/sc_list.cpp -- scenario "list": the cppreference example of
 * std::pmr::monotonic_buffer_resource.
 *
 * A list<int> of N push_backs, built and destroyed R times (N = 200 000,
 * R = 100; --quick: 20 000 x 5), with every way of allocating its nodes:
 *   std::allocator (malloc: run under each malloc peer), new_delete_resource,
 *   monotonic_buffer_resource without and with a preallocated buffer (one
 *   buffer of N * 32 bytes reused by every round, as cppreference's stack
 *   array is), unsynchronized_ and synchronized_pool_resource (one resource
 *   kept across rounds), and memres through the C++ bridge (memres.hpp):
 *     memres arena (pmr)            std::pmr::list over arena.pmr(), an
 *                                   arena_resource, the headline: reset per
 *                                   round;
 *     memres arena (mr_resource)    std::pmr::list over a resource_adaptor of
 *                                   mr_arena_resource: the generic path,
 *                                   which recognises the arena's view and
 *                                   takes the same inline path;
 *     memres arena_allocator        std::list<int, memres::arena_allocator>:
 *                                   no virtual call at all;
 *     memres pools (pmr)            over memres::pools::pmr(), a
 *                                   pools_resource (one pool kept across
 *                                   rounds, as the std::pmr pools are);
 *     memres pools (mr_resource)    over a resource_adaptor of
 *                                   mr_pools_resource (recognised);
 *     memres objpool (pmr)          over memres::objpool::pmr(), an
 *                                   objpool_resource of one pool sized for
 *                                   the node (kept across rounds);
 *     memres objpool (mr_resource)  over a resource_adaptor of
 *                                   mr_objpool_resource (recognised);
 * plus the same work as a plain C singly linked list with a tail pointer:
 * malloc/free per node vs mr_arena_alloc with a reset per round.
 *
 * Output and checksum, identical in every variant: the sum over rounds of
 * the list's size, plus the sum of the values of the last round's list (read
 * back by walking it).  Only the last round is walked, so the timed work is
 * the cppreference example's: push_back and destroy.
 *
 * Timing starts after the node size is probed and the monotonic buffer is
 * allocated (bench_timing_start); creating any other resource is timed.
 * requested_bytes is N times the node size (measured once with a probing
 * resource for std::list; sizeof(struct c_node) for the C list); memres rows
 * report the arena's peak bytes held from upstream.
 */
#include <cstdint>
#include <cstdlib>
#include <list>
#include <memory>
#include <memory_resource>
#include <new>

#include "bench.h"
#include "memres/memres.hpp"

namespace {

struct list_params {
    int nodes;
    int rounds;
};

list_params params_of(const bench_args *a)
{
    return a->quick ? list_params{20000, 5} : list_params{200000, 100};
}

/* One round: build, and on the last round read the values back.  The list is
 * destroyed by the caller's scope, which is part of the timed work. */
template <class List>
std::uint64_t fill(List &l, const list_params &p, int round)
{
    for (int i = 0; i < p.nodes; ++i)
        l.push_back(i);
    std::uint64_t c = l.size();
    if (round == p.rounds - 1)
        for (int v : l)
            c += static_cast<std::uint64_t>(v);
    BENCH_KEEP(&l);
    return c;
}

/* The bytes std::list<int> asks for per node (libstdc++: 24), and with
 * what alignment (8), when align is not NULL. */
std::size_t list_node_bytes(std::size_t *align = nullptr)
{
    struct probe final : std::pmr::memory_resource {
        std::size_t last = 0, last_align = 0;
        void *do_allocate(std::size_t n, std::size_t a) override
        {
            last = n;
            last_align = a;
            return std::pmr::new_delete_resource()->allocate(n, a);
        }
        void do_deallocate(void *q, std::size_t n, std::size_t a) override
        {
            std::pmr::new_delete_resource()->deallocate(q, n, a);
        }
        bool do_is_equal(const std::pmr::memory_resource &o) const noexcept override { return this == &o; }
    } pr;
    {
        std::pmr::list<int> l{&pr};
        l.push_back(0);
    }
    if (align != nullptr)
        *align = pr.last_align;
    return pr.last;
}

int finish(bench_out *out, const list_params &p, std::uint64_t checksum, std::size_t node_bytes,
           std::size_t upstream)
{
    bench_printf(out, "list: %d push_back x %d rounds, checksum %llu\n", p.nodes, p.rounds,
                 static_cast<unsigned long long>(checksum));
    out->checksum = checksum;
    out->requested_bytes = static_cast<std::size_t>(p.nodes) * node_bytes;
    out->upstream_bytes = upstream;
    return 0;
}

/* Runs body(params) -> checksum with exceptions turned into a failed run. */
template <class F>
int guarded(bench_out *out, F body)
{
    try {
        return body();
    } catch (const std::exception &e) {
        bench_printf(out, "list: failed: %s\n", e.what());
        return 1;
    }
}

/* ---- std::list and std::pmr peers ---- */

int run_std_allocator(const bench_args *args, bench_out *out)
{
    return guarded(out, [&] {
        list_params p = params_of(args);
        std::size_t node_bytes = list_node_bytes();
        bench_timing_start();
        std::uint64_t c = 0;
        for (int r = 0; r < p.rounds; ++r) {
            std::list<int> l;
            c += fill(l, p, r);
        }
        return finish(out, p, c, node_bytes, 0);
    });
}

int run_new_delete(const bench_args *args, bench_out *out)
{
    return guarded(out, [&] {
        list_params p = params_of(args);
        std::size_t node_bytes = list_node_bytes();
        bench_timing_start();
        std::uint64_t c = 0;
        for (int r = 0; r < p.rounds; ++r) {
            std::pmr::list<int> l{std::pmr::new_delete_resource()};
            c += fill(l, p, r);
        }
        return finish(out, p, c, node_bytes, 0);
    });
}

int run_monotonic(const bench_args *args, bench_out *out)
{
    return guarded(out, [&] {
        list_params p = params_of(args);
        std::size_t node_bytes = list_node_bytes();
        bench_timing_start();
        std::uint64_t c = 0;
        for (int r = 0; r < p.rounds; ++r) {
            std::pmr::monotonic_buffer_resource mbr;
            std::pmr::polymorphic_allocator<int> pa{&mbr};
            std::pmr::list<int> l{pa};
            c += fill(l, p, r);
        }
        return finish(out, p, c, node_bytes, 0);
    });
}

int run_monotonic_buffer(const bench_args *args, bench_out *out)
{
    return guarded(out, [&] {
        list_params p = params_of(args);
        std::size_t node_bytes = list_node_bytes();
        std::size_t size = static_cast<std::size_t>(p.nodes) * 32; /* cppreference: enough for all nodes */
        std::unique_ptr<std::byte[]> buffer{new std::byte[size]}; /* cppreference's is a stack array */
        bench_timing_start();
        std::uint64_t c = 0;
        for (int r = 0; r < p.rounds; ++r) {
            std::pmr::monotonic_buffer_resource mbr{buffer.get(), size};
            std::pmr::polymorphic_allocator<int> pa{&mbr};
            std::pmr::list<int> l{pa};
            c += fill(l, p, r);
        }
        return finish(out, p, c, node_bytes, 0);
    });
}

template <class Pool>
int run_pool(const bench_args *args, bench_out *out)
{
    return guarded(out, [&] {
        list_params p = params_of(args);
        std::size_t node_bytes = list_node_bytes();
        bench_timing_start();
        Pool pool;
        std::uint64_t c = 0;
        for (int r = 0; r < p.rounds; ++r) {
            std::pmr::list<int> l{&pool};
            c += fill(l, p, r);
        }
        return finish(out, p, c, node_bytes, 0);
    });
}

int run_unsync_pool(const bench_args *args, bench_out *out)
{
    return run_pool<std::pmr::unsynchronized_pool_resource>(args, out);
}

int run_sync_pool(const bench_args *args, bench_out *out)
{
    return run_pool<std::pmr::synchronized_pool_resource>(args, out);
}

/* ---- memres through the bridge ---- */

int run_memres_arena_pmr(const bench_args *args, bench_out *out)
{
    return guarded(out, [&] {
        list_params p = params_of(args);
        std::size_t node_bytes = list_node_bytes();
        bench_timing_start();
        memres::arena a;
        std::uint64_t c = 0;
        for (int r = 0; r < p.rounds; ++r) {
            {
                std::pmr::list<int> l{a.pmr()};
                c += fill(l, p, r);
            }
            a.reset();
        }
        return finish(out, p, c, node_bytes, a.stats().peak_held);
    });
}

int run_memres_arena_generic(const bench_args *args, bench_out *out)
{
    return guarded(out, [&] {
        list_params p = params_of(args);
        std::size_t node_bytes = list_node_bytes();
        bench_timing_start();
        memres::arena a;
        memres::resource_adaptor ra{a.resource()};
        std::uint64_t c = 0;
        for (int r = 0; r < p.rounds; ++r) {
            {
                std::pmr::list<int> l{&ra};
                c += fill(l, p, r);
            }
            a.reset();
        }
        return finish(out, p, c, node_bytes, a.stats().peak_held);
    });
}

int run_memres_arena_allocator(const bench_args *args, bench_out *out)
{
    return guarded(out, [&] {
        list_params p = params_of(args);
        std::size_t node_bytes = list_node_bytes();
        bench_timing_start();
        memres::arena a;
        std::uint64_t c = 0;
        for (int r = 0; r < p.rounds; ++r) {
            {
                std::list<int, memres::arena_allocator<int>> l{memres::arena_allocator<int>(a)};
                c += fill(l, p, r);
            }
            a.reset();
        }
        return finish(out, p, c, node_bytes, a.stats().peak_held);
    });
}

int run_memres_pools_pmr(const bench_args *args, bench_out *out)
{
    return guarded(out, [&] {
        list_params p = params_of(args);
        std::size_t node_bytes = list_node_bytes();
        bench_timing_start();
        memres::pools pl;
        std::uint64_t c = 0;
        for (int r = 0; r < p.rounds; ++r) {
            std::pmr::list<int> l{pl.pmr()};
            c += fill(l, p, r);
        }
        return finish(out, p, c, node_bytes, pl.stats().peak_held);
    });
}

int run_memres_pools_generic(const bench_args *args, bench_out *out)
{
    return guarded(out, [&] {
        list_params p = params_of(args);
        std::size_t node_bytes = list_node_bytes();
        bench_timing_start();
        memres::pools pl;
        memres::resource_adaptor ra{pl.resource()};
        std::uint64_t c = 0;
        for (int r = 0; r < p.rounds; ++r) {
            std::pmr::list<int> l{&ra};
            c += fill(l, p, r);
        }
        return finish(out, p, c, node_bytes, pl.stats().peak_held);
    });
}

/* pmr: the owner's objpool_resource; else a resource_adaptor over the
 * pool's mr_resource view */
template <bool pmr>
int run_memres_objpool(const bench_args *args, bench_out *out)
{
    return guarded(out, [&] {
        list_params p = params_of(args);
        std::size_t node_align = 0;
        std::size_t node_bytes = list_node_bytes(&node_align);
        bench_timing_start();
        memres::objpool pool{node_bytes, node_align};
        memres::resource_adaptor ra{pool.resource()};
        std::pmr::memory_resource *res = pmr ? pool.pmr() : &ra;
        std::uint64_t c = 0;
        for (int r = 0; r < p.rounds; ++r) {
            std::pmr::list<int> l{res};
            c += fill(l, p, r);
        }
        return finish(out, p, c, node_bytes, pool.stats().peak_held);
    });
}

/* ---- the same work as a plain C list ---- */

struct c_node {
    c_node *next;
    int value;
};

/* Appends n values through alloc(); returns the round's checksum part, or
 * sets *failed. */
template <class Alloc>
std::uint64_t c_fill(c_node **head, const list_params &p, int round, Alloc alloc, bool *failed)
{
    c_node **tail = head;
    std::size_t size = 0;
    for (int i = 0; i < p.nodes; ++i) {
        auto *n = static_cast<c_node *>(alloc(sizeof(c_node)));
        if (n == nullptr) {
            *failed = true;
            break;
        }
        n->value = i;
        *tail = n;
        tail = &n->next;
        ++size;
    }
    *tail = nullptr;
    std::uint64_t c = size;
    if (round == p.rounds - 1)
        for (const c_node *n = *head; n != nullptr; n = n->next)
            c += static_cast<std::uint64_t>(n->value);
    BENCH_KEEP(*head);
    return c;
}

int run_c_list_malloc(const bench_args *args, bench_out *out)
{
    list_params p = params_of(args);
    std::uint64_t c = 0;
    bool failed = false;
    for (int r = 0; r < p.rounds && !failed; ++r) {
        c_node *head = nullptr;
        c += c_fill(&head, p, r, [](std::size_t n) { return std::malloc(n); }, &failed);
        while (head != nullptr) {
            c_node *next = head->next;
            std::free(head);
            head = next;
        }
    }
    if (failed)
        return 1;
    return finish(out, p, c, sizeof(c_node), 0);
}

int run_c_list_arena(const bench_args *args, bench_out *out)
{
    list_params p = params_of(args);
    mr_arena *a = mr_arena_create(nullptr);
    if (a == nullptr)
        return 1;
    std::uint64_t c = 0;
    bool failed = false;
    for (int r = 0; r < p.rounds && !failed; ++r) {
        c_node *head = nullptr;
        c += c_fill(&head, p, r, [a](std::size_t n) { return mr_arena_alloc(a, n); }, &failed);
        mr_arena_reset(a);
    }
    mr_stats s;
    mr_arena_stats(a, &s);
    mr_arena_destroy(a);
    if (failed)
        return 1;
    return finish(out, p, c, sizeof(c_node), s.peak_held);
}

} // namespace

extern "C" const bench_variant bench_list[] = {
    {"list", "std::allocator", BENCH_MALLOC, false, nullptr, run_std_allocator},
    {"list", "pmr new_delete_resource", BENCH_PEER, false, nullptr, run_new_delete},
    {"list", "pmr monotonic", BENCH_PEER, false, nullptr, run_monotonic},
    {"list", "pmr monotonic + buffer", BENCH_PEER, false, nullptr, run_monotonic_buffer},
    {"list", "pmr unsync pool", BENCH_PEER, false, nullptr, run_unsync_pool},
    {"list", "pmr sync pool", BENCH_PEER, false, nullptr, run_sync_pool},
    {"list", "memres arena (pmr)", BENCH_MEMRES, false, nullptr, run_memres_arena_pmr},
    {"list", "memres arena (mr_resource)", BENCH_MEMRES, false, nullptr, run_memres_arena_generic},
    {"list", "memres arena_allocator", BENCH_MEMRES, false, nullptr, run_memres_arena_allocator},
    {"list", "memres pools (pmr)", BENCH_MEMRES, false, nullptr, run_memres_pools_pmr},
    {"list", "memres pools (mr_resource)", BENCH_MEMRES, false, nullptr, run_memres_pools_generic},
    {"list", "memres objpool (pmr)", BENCH_MEMRES, false, nullptr, run_memres_objpool<true>},
    {"list", "memres objpool (mr_resource)", BENCH_MEMRES, false, nullptr, run_memres_objpool<false>},
    {"list", "C list, malloc", BENCH_MALLOC, false, nullptr, run_c_list_malloc},
    {"list", "C list, memres arena", BENCH_MEMRES, false, nullptr, run_c_list_arena},
    {nullptr, nullptr, BENCH_MEMRES, false, nullptr, nullptr},
};
