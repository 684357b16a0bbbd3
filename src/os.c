/* SPDX-License-Identifier: MIT */
/* src/os.c -- the page source and every other fact memres takes from the OS.
 *
 * This is the only file with mmap/munmap/madvise/sysconf and platform
 * #ifdefs, and the bottom of the dependency plan: it includes no allocator's
 * header.  The allocators above ask it for the page size, page-granular
 * memory and where big blocks come from (os.h); users get it as
 * mr_page_resource() (memres/pages.h).
 *
 * Mapping with an alignment above the page size.  mmap only promises page
 * alignment, so for align > page we map len + align - page bytes: since the
 * mapping starts on a page boundary, an align boundary lies within its first
 * align - page bytes, and len bytes fit after it.  The unaligned head and the
 * surplus tail are unmapped at once, so the region costs exactly len bytes of
 * address space afterwards and deallocate unmaps exactly len.
 *
 * Huge pages.  Transparent huge pages back only 2 MiB-aligned, 2 MiB-long
 * extents of a region the kernel allows THP for (all anonymous memory with
 * "always", madvised memory with "madvise").  mr_page_resource_huge() aligns
 * every region of 2 MiB or more to 2 MiB and advises MADV_HUGEPAGE on its
 * 2 MiB-aligned part; regions below 2 MiB are left to ordinary pages so that
 * small allocations do not grow to 2 MiB of RSS.  The length is not rounded
 * up to 2 MiB: a 3 MiB region gets one huge page and 1 MiB of small ones.
 *
 * Invariant: for every live region, mapped length == page_round(size) where
 * size is what the caller passes to allocate and deallocate alike, and the
 * huge flag never changes that length, so the two page resources are
 * interchangeable for deallocation (equal resources).
 *
 * Not supported: platforms without mmap (Windows would need VirtualAlloc
 * here); partial deallocation; committing or decommitting inside a region.
 */
#include <stdatomic.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#if defined(__linux__) && defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 25)
#  include <sys/random.h>
#  define HAVE_GETRANDOM 1
#endif

#include "memres/pages.h"
#include "os.h"

#if !defined(MAP_ANONYMOUS) && defined(MAP_ANON)
#  define MAP_ANONYMOUS MAP_ANON
#endif

size_t mri_os_page_size(void)
{
    static size_t cached; /* benign race: every thread computes the same value */
    size_t ps = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (MR_UNLIKELY(ps == 0)) {
        long v = sysconf(_SC_PAGESIZE);
        ps = (v > 0 && mri_is_pow2((size_t)v)) ? (size_t)v : 4096;
        __atomic_store_n(&cached, ps, __ATOMIC_RELAXED);
    }
    return ps;
}

/* ---- random words ---- */

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15u;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

/* The process secret: getrandom where there is one, else the clock and
 * addresses (ASLR) mixed.  Drawn once; a racing first draw by two threads
 * stores one of two good values. */
static uint64_t os_secret(void)
{
    static _Atomic uint64_t secret;
    uint64_t s = atomic_load_explicit(&secret, memory_order_relaxed);
    if (MR_LIKELY(s != 0))
        return s;
#ifdef HAVE_GETRANDOM
    if (getrandom(&s, sizeof s, GRND_NONBLOCK) != (ssize_t)sizeof s)
        s = 0;
#endif
    struct timespec ts;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    s ^= splitmix64((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)(uintptr_t)&secret ^
                    (uint64_t)(uintptr_t)&ts);
    if (s == 0)
        s = 1;
    atomic_store_explicit(&secret, s, memory_order_relaxed);
    return s;
}

uintptr_t mri_os_random(void)
{
    static _Atomic uint64_t counter;
    uint64_t n = atomic_fetch_add_explicit(&counter, 1, memory_order_relaxed);
    return (uintptr_t)splitmix64(os_secret() + n * 0x9e3779b97f4a7c15u);
}

static void *os_mmap(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void *mri_os_map(size_t len, size_t align)
{
    size_t page = mri_os_page_size();
    MR_ASSERT_INTERNAL(len != 0 && len % page == 0 && mri_is_pow2(align));
    if (MR_UNLIKELY(len > MRI_MAX_SIZE))
        return mri_fail(ENOMEM);
    if (align <= page) {
        void *p = os_mmap(len);
        return p != NULL ? p : mri_fail(ENOMEM);
    }
    size_t total;
    if (mri_add_overflow(len, align - page, &total) || total > MRI_MAX_SIZE)
        return mri_fail(ENOMEM);
    char *raw = os_mmap(total);
    if (raw == NULL)
        return mri_fail(ENOMEM);
    char *start = (char *)mri_align_ptr((uintptr_t)raw, align);
    size_t head = (size_t)(start - raw);
    size_t tail = total - head - len;
    if (head != 0)
        (void)munmap(raw, head);
    if (tail != 0)
        (void)munmap(start + len, tail);
    return start;
}

void mri_os_unmap(void *p, size_t len)
{
    if (p != NULL && len != 0)
        (void)munmap(p, len);
}

/* The whole units (a power of two) inside [p, p + len): their bytes, from *lo. */
static size_t inner(const void *p, size_t len, size_t unit, uintptr_t *lo)
{
    *lo = mri_align_ptr((uintptr_t)p, unit);
    uintptr_t hi = ((uintptr_t)p + len) & ~(uintptr_t)(unit - 1);
    return hi > *lo ? (size_t)(hi - *lo) : 0;
}

size_t mri_os_inner_pages(const void *p, size_t len)
{
    uintptr_t lo;
    return inner(p, len, mri_os_page_size(), &lo);
}

bool mri_os_advise_huge(void *p, size_t len)
{
#if defined(MADV_HUGEPAGE)
    uintptr_t lo;
    size_t n = inner(p, len, MR_HUGE_PAGE_SIZE, &lo);
    return n != 0 && madvise((void *)lo, n, MADV_HUGEPAGE) == 0;
#else
    (void)p, (void)len;
    return false;
#endif
}

void mri_os_discard(void *p, size_t len)
{
#if defined(MADV_DONTNEED)
    uintptr_t lo;
    size_t n = inner(p, len, mri_os_page_size(), &lo);
    if (n != 0)
        (void)madvise((void *)lo, n, MADV_DONTNEED);
#else
    (void)p, (void)len;
#endif
}

/* ---- the page resources ---- */

/* The mapped length of a request of size bytes: whole pages, one at least.
 * false when it does not fit. */
static bool page_length(size_t size, size_t *len)
{
    if (MR_UNLIKELY(size > MRI_MAX_SIZE))
        return false;
    return mri_align_up(size != 0 ? size : 1, mri_os_page_size(), len) && *len <= MRI_MAX_SIZE;
}

/* A page resource: the ops and whether it asks for huge pages. */
struct page_resource {
    mr_resource base;
    bool huge; /* align and advise regions of MR_HUGE_PAGE_SIZE or more */
};

static void *page_allocate(mr_resource *self, size_t size, size_t align)
{
    const struct page_resource *r = mri_container_of(self, struct page_resource, base);
    size_t len;
    if (!page_length(size, &len))
        return mri_fail(ENOMEM);
    bool huge = r->huge && len >= MR_HUGE_PAGE_SIZE;
    if (huge && align < MR_HUGE_PAGE_SIZE)
        align = MR_HUGE_PAGE_SIZE;
    void *p = mri_os_map(len, align);
    if (p != NULL && huge)
        (void)mri_os_advise_huge(p, len); /* best effort: ordinary pages otherwise */
    return p;
}

static void page_deallocate(mr_resource *self, void *p, size_t size, size_t align)
{
    (void)self, (void)align;
    size_t len;
    if (MRI_MISUSE(!page_length(size, &len), p, "mr_page_resource: deallocate with a size no allocation can have"))
        return;
    mri_os_unmap(p, len);
}

static bool page_is_equal(const mr_resource *self, const mr_resource *other)
{
    (void)self, (void)other;
    return true; /* same ops: the mapped length never depends on the huge flag */
}

static const struct mr_resource_ops page_ops = {page_allocate, page_deallocate, page_is_equal};

static struct page_resource pages = {{&page_ops}, false};
static struct page_resource pages_huge = {{&page_ops}, true};

MR_API size_t mr_page_size(void) { return mri_os_page_size(); }
MR_API mr_resource *mr_page_resource(void) { return &pages.base; }
MR_API mr_resource *mr_page_resource_huge(void) { return &pages_huge.base; }

mr_resource *mri_os_block_source(mr_resource *upstream, mr_huge_pages mode, size_t size)
{
    if (size < MR_HUGE_PAGE_SIZE || mode == MR_HUGE_PAGES_OFF)
        return upstream;
    if (mode == MR_HUGE_PAGES_ON || upstream == mr_malloc_resource() || upstream == &pages.base ||
        upstream == &pages_huge.base)
        return &pages_huge.base;
    return upstream;
}
