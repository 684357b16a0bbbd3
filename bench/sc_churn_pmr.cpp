/* SPDX-License-Identifier: MIT */
/* bench/sc_churn_pmr.cpp -- the std::pmr variants of scenario "churn".
 *
 * The step loop of sc_churn.c written once more in C++ so that the pool
 * resource's calls inline as the C variants' do: same slots, seed, generator,
 * sizes, alignment and reads and writes.  Keep the two in step; the harness
 * compares every variant's output and checksum, so a divergence shows.
 * The output line itself is printed by sc_churn.c, from the churn_result
 * these loops fill.
 */
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <memory_resource>

#include "bench.h"

// What a run gives back to sc_churn.c, which prints it: sc_churn.c's
// churn_result.
struct churn_result {
    std::uint64_t sum;
    std::size_t allocations;
    std::size_t peak_live;
};

namespace {

constexpr std::uint32_t churn_slots = 100000u;               /* CHURN_SLOTS */
constexpr std::uint64_t churn_seed = 0x636875726eULL;         /* CHURN_SEED */
constexpr std::size_t churn_align = alignof(std::max_align_t); /* CHURN_ALIGN */

struct churn_slot {
    unsigned char *p;
    std::size_t size;
};

inline std::uint64_t churn_next(std::uint64_t *s)
{
    std::uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

inline std::size_t churn_size(std::uint64_t r)
{
    unsigned octave = static_cast<unsigned>(r & 0xff) % 7u;
    std::size_t base = static_cast<std::size_t>(8) << octave;
    return base + static_cast<std::size_t>((r >> 8) & 0xffffff) % (base + (octave == 6));
}

template <class Resource>
int run_pmr(const bench_args *args, churn_result *result)
{
    const std::size_t steps = args->quick ? 1000000u : 20000000u;
    auto *slots = static_cast<churn_slot *>(std::calloc(churn_slots, sizeof(churn_slot)));
    if (slots == nullptr)
        return 1;
    std::uint64_t seed = churn_seed, sum = 0;
    std::size_t live = 0, peak = 0, allocs = 0;
    int rc = 0;
    {
        Resource res;
        bench_timing_start();
        try {
            for (std::size_t step = 0; step < steps; step++) {
                std::uint64_t r = churn_next(&seed);
                churn_slot *sl = &slots[static_cast<std::uint32_t>(r >> 32) % churn_slots];
                if (sl->p != nullptr) {
                    sum += sl->p[0] + (static_cast<std::uint64_t>(sl->p[sl->size - 1]) << 8) + sl->size;
                    res.deallocate(sl->p, sl->size, churn_align);
                    live -= sl->size;
                    sl->p = nullptr;
                } else {
                    std::size_t n = churn_size(r);
                    auto *p = static_cast<unsigned char *>(res.allocate(n, churn_align));
                    p[0] = static_cast<unsigned char>(step);
                    p[n - 1] = static_cast<unsigned char>(step >> 8);
                    sl->p = p;
                    sl->size = n;
                    live += n;
                    allocs++;
                    if (live > peak)
                        peak = live;
                }
            }
        } catch (const std::exception &) {
            rc = 1;
        }
        for (std::uint32_t i = 0; i < churn_slots; i++) {
            churn_slot *sl = &slots[i];
            if (sl->p != nullptr) {
                sum += sl->p[0] + (static_cast<std::uint64_t>(sl->p[sl->size - 1]) << 8) + sl->size;
                res.deallocate(sl->p, sl->size, churn_align);
            }
        }
    }
    std::free(slots);
    *result = churn_result{ sum, allocs, peak };
    return rc;
}

} // namespace

extern "C" int bench_churn_pmr_unsync(const bench_args *args, churn_result *result)
{
    return run_pmr<std::pmr::unsynchronized_pool_resource>(args, result);
}

extern "C" int bench_churn_pmr_sync(const bench_args *args, churn_result *result)
{
    return run_pmr<std::pmr::synchronized_pool_resource>(args, result);
}
