// SPDX-License-Identifier: MIT
// advise/tests/kat_cxx.cpp -- known answer for memres-advise: C++ new and
// delete of one node type.
//
//   kat_cxx [malloc|memres] [STEPS]         (default: malloc 1000000)
//
// A table of 50 000 slots; each step picks a slot with a seeded generator:
// a full slot's Node is read and deleted, an empty one gets `new Node`
// (KAT-SITE below: operator new is folded as a wrapper, so the site is that
// line).  One size, random-order deletes among ~25 000 live nodes: the
// answer is an object pool.  The memres variant constructs the nodes in
// storage from one mr_objpool (placement new) and gives it back with
// mr_objpool_free after the destructor.
//
// stdout: a checksum; stderr: "KAT-COUNT SITE n".  Exit 0.
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "memres/objpool.h"

namespace {

const unsigned kSlots = 50000;

struct Node {
    explicit Node(std::uint64_t k) : key(k), left(nullptr), right(nullptr), weight(k * 7), hits(0) {}
    ~Node() { hits = 0; }
    std::uint64_t key;
    Node *left, *right;
    std::uint64_t weight;
    std::uint32_t hits;
};

std::uint64_t next_rand(std::uint64_t &s)
{
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

std::uint64_t site_count;

__attribute__((noinline)) Node *make_node(mr_objpool *pool, std::uint64_t key)
{
    if (pool != nullptr) {
        void *mem = mr_objpool_alloc(pool);
        if (mem == nullptr)
            std::abort();
        return new (mem) Node(key);
    }
    site_count++;
    return new Node(key); /* KAT-SITE: objpool */
}

__attribute__((noinline)) std::uint64_t drop_node(mr_objpool *pool, Node *n)
{
    std::uint64_t v = n->key + n->weight;
    if (pool != nullptr) {
        n->~Node();
        mr_objpool_free(pool, n);
    } else {
        delete n;
    }
    return v;
}

} // namespace

int main(int argc, char **argv)
{
    bool memres = argc > 1 && std::strcmp(argv[1], "memres") == 0;
    long steps = argc > 2 ? std::atol(argv[2]) : 1000000;
    mr_objpool *pool = nullptr;
    if (memres && (pool = mr_objpool_create(sizeof(Node), alignof(Node), nullptr)) == nullptr) {
        std::fputs("kat_cxx: mr_objpool_create failed\n", stderr);
        return 1;
    }
    Node **slot = new Node *[kSlots]();
    std::uint64_t seed = 0x637878ULL, sum = 0, made = 0;
    for (long i = 0; i < steps; i++) {
        std::uint64_t r = next_rand(seed);
        unsigned s = unsigned((r >> 32) % kSlots);
        if (slot[s] != nullptr) {
            sum += drop_node(pool, slot[s]);
            slot[s] = nullptr;
        } else {
            slot[s] = make_node(pool, r & 0xffffffffu);
            made++;
        }
    }
    for (unsigned s = 0; s < kSlots; s++)
        if (slot[s] != nullptr)
            sum += drop_node(pool, slot[s]);
    delete[] slot;
    mr_objpool_destroy(pool);
    std::printf("cxx: %ld steps, %" PRIu64 " nodes\n", steps, made);
    std::printf("checksum %" PRIu64 "\n", sum);
    std::fprintf(stderr, "KAT-COUNT SITE %" PRIu64 "\n", site_count);
    return 0;
}
