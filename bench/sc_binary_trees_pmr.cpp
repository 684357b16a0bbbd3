/* SPDX-License-Identifier: MIT */
// bench/sc_binary_trees_pmr.cpp -- binary-trees over libstdc++'s std::pmr
// resources: the same program (bt_run in sc_binary_trees_driver.c) and the
// same tree code, with the allocation done by a std::pmr::memory_resource
// called through its concrete type (so the compiler may devirtualise and
// inline it, as a careful C++ programmer would get).
//
//   pmr monotonic         monotonic_buffer_resource(), release() per tree: its
//                         buffers go back to new/delete and come again
//   pmr monotonic/buffer  monotonic_buffer_resource over a buffer that holds
//                         the context's largest tree, release() per tree
//                         (back to the buffer, nothing upstream)
//   pmr unsync pool       unsynchronized_pool_resource, one per context; each
//                         node deallocated per tree (a tree walk)
//   pmr sync pool         one synchronized_pool_resource shared by all threads;
//                         each node deallocated per tree
//
// An allocation failure (std::bad_alloc) ends the run through bt_oom, so no
// exception unwinds through the C driver.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <memory_resource>
#include <new>

#include "sc_binary_trees.h"

namespace {

constexpr std::size_t node_size = sizeof(bt_node);
constexpr std::size_t node_align = alignof(bt_node);

std::size_t tree_bytes(int depth)
{
    return ((std::size_t{2} << depth) - 1) * node_size;
}

template <class R> bt_node *allocate_node(R &r)
{
    try {
        return static_cast<bt_node *>(r.allocate(node_size, node_align));
    } catch (...) {
        bt_oom();
    }
}

template <class R> void deallocate_tree(R &r, bt_node *t)
{
    if (t->left) {
        deallocate_tree(r, t->left);
        deallocate_tree(r, t->right);
    }
    r.deallocate(t, node_size, node_align);
}

// The tree code, the same as BT_VARIANT in sc_binary_trees.h: pre-order, with
// Ctx::alloc inlined.
template <class Ctx> struct tree_code {
    static bt_node *build(Ctx *c, int d)
    {
        bt_node *n = c->alloc();
        if (d > 0) {
            n->left = build(c, d - 1);
            n->right = build(c, d - 1);
        } else {
            n->left = nullptr;
            n->right = nullptr;
        }
        return n;
    }
    static bt_node *make(void *vc, int d)
    {
        return build(static_cast<Ctx *>(vc), d);
    }
    static void drop(void *vc, bt_node *t)
    {
        static_cast<Ctx *>(vc)->end(t);
    }
    static int64_t trees(void *vc, int d, int64_t count)
    {
        Ctx *c = static_cast<Ctx *>(vc);
        int64_t check = 0;
        for (int64_t i = 0; i < count; i++) {
            bt_node *t = build(c, d);
            check += bt_check(t);
            c->end(t);
        }
        return check;
    }
    static void *ctx_new(void *shared, int max_depth)
    {
        try {
            return new Ctx(shared, max_depth);
        } catch (...) {
            return nullptr;
        }
    }
    static void ctx_free(void *vc)
    {
        delete static_cast<Ctx *>(vc);
    }
};

struct monotonic_ctx {
    std::pmr::monotonic_buffer_resource r;
    monotonic_ctx(void *, int) {}
    bt_node *alloc() { return allocate_node(r); }
    void end(bt_node *) { r.release(); }
};

struct monotonic_buffer_ctx {
    std::unique_ptr<std::byte[]> buf;
    std::pmr::monotonic_buffer_resource r;
    monotonic_buffer_ctx(void *, int max_depth)
        : buf(new std::byte[tree_bytes(max_depth)]), r(buf.get(), tree_bytes(max_depth))
    {
    }
    bt_node *alloc() { return allocate_node(r); }
    void end(bt_node *) { r.release(); }
};

struct unsync_pool_ctx {
    std::pmr::unsynchronized_pool_resource r;
    unsync_pool_ctx(void *, int) {}
    bt_node *alloc() { return allocate_node(r); }
    void end(bt_node *t) { deallocate_tree(r, t); }
};

struct sync_pool_ctx {
    std::pmr::synchronized_pool_resource *r;
    sync_pool_ctx(void *shared, int) : r(static_cast<std::pmr::synchronized_pool_resource *>(shared)) {}
    bt_node *alloc() { return allocate_node(*r); }
    void end(bt_node *t) { deallocate_tree(*r, t); }
};

void *sync_shared_new(int *failed)
{
    try {
        return new std::pmr::synchronized_pool_resource();
    } catch (...) {
        *failed = 1;
        return nullptr;
    }
}

void sync_shared_free(void *shared)
{
    delete static_cast<std::pmr::synchronized_pool_resource *>(shared);
}

template <class Ctx> constexpr bt_ops ops_of(void *(*shared_new)(int *), void (*shared_free)(void *))
{
    return bt_ops{ shared_new,           shared_free,         tree_code<Ctx>::ctx_new, tree_code<Ctx>::ctx_free,
                   tree_code<Ctx>::make, tree_code<Ctx>::drop, tree_code<Ctx>::trees,  nullptr };
}

} // namespace

extern "C" {

const bt_ops bt_pmr_monotonic_ops = ops_of<monotonic_ctx>(nullptr, nullptr);
const bt_ops bt_pmr_monotonic_buffer_ops = ops_of<monotonic_buffer_ctx>(nullptr, nullptr);
const bt_ops bt_pmr_unsync_pool_ops = ops_of<unsync_pool_ctx>(nullptr, nullptr);
const bt_ops bt_pmr_sync_pool_ops = ops_of<sync_pool_ctx>(sync_shared_new, sync_shared_free);

#define BENCH_STR2(x) #x
#define BENCH_STR(x) BENCH_STR2(x)

const char *bench_cxx_version(void)
{
#if defined(__clang__)
    return "clang++ " __clang_version__ ", C++ " BENCH_STR(__cplusplus)
#  if defined(__GLIBCXX__)
        ", libstdc++ " BENCH_STR(__GLIBCXX__)
#  endif
        ;
#elif defined(__GNUC__)
    return "g++ " __VERSION__ ", C++ " BENCH_STR(__cplusplus)
#  if defined(__GLIBCXX__)
        ", libstdc++ " BENCH_STR(__GLIBCXX__)
#  endif
        ;
#else
    return "C++ " BENCH_STR(__cplusplus);
#endif
}

} // extern "C"
