/* SPDX-License-Identifier: MIT */
/* bench/sc_producer_consumer_pmr.cpp -- the std::pmr resource of scenario
 * "producer-consumer": one std::pmr::synchronized_pool_resource (default
 * options) shared by every producer and consumer thread.  The rounds, rings
 * and checks are those of sc_producer_consumer.c, which calls these
 * functions once per object: a plain call, cheap beside the resource's lock,
 * and no second copy of the ring code to keep in step.  bad_alloc becomes
 * NULL, so no exception unwinds through the C threads.
 */
#include <cstddef>
#include <memory_resource>
#include <new>

extern "C" {

void *bench_pc_pmr_new(void);
void bench_pc_pmr_delete(void *r);
void *bench_pc_pmr_allocate(void *r, std::size_t n, std::size_t align);
void bench_pc_pmr_deallocate(void *r, void *p, std::size_t n, std::size_t align);

void *bench_pc_pmr_new(void)
{
    try {
        return new std::pmr::synchronized_pool_resource();
    } catch (...) {
        return nullptr;
    }
}

void bench_pc_pmr_delete(void *r)
{
    delete static_cast<std::pmr::synchronized_pool_resource *>(r);
}

void *bench_pc_pmr_allocate(void *r, std::size_t n, std::size_t align)
{
    try {
        return static_cast<std::pmr::synchronized_pool_resource *>(r)->allocate(n, align);
    } catch (...) {
        return nullptr;
    }
}

void bench_pc_pmr_deallocate(void *r, void *p, std::size_t n, std::size_t align)
{
    static_cast<std::pmr::synchronized_pool_resource *>(r)->deallocate(p, n, align);
}

} // extern "C"
