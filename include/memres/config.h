/* SPDX-License-Identifier: MIT */
/* memres/config.h -- the compiler stance of memres, in one place: the
 * version, symbol visibility, branch hints and the few GNU builtins the
 * public inline functions use, each with a portable fallback.
 *
 * memres is written for C11 compilers.  GCC and Clang (and compilers that
 * claim __GNUC__) get the attributes and builtins below; any other C11
 * compiler gets plain fallbacks that compute the same results, only without
 * hints.  No other public header tests a compiler macro; src/ may rely on
 * GNU C (statement attributes, __builtin_*_overflow) because the library is
 * built only with GCC or Clang (CMakeLists.txt).
 *
 * Every public header includes this one (through resource.h).
 */
#ifndef MEMRES_CONFIG_H
#define MEMRES_CONFIG_H

/* ---- version ---- */
#define MEMRES_VERSION_MAJOR 0
#define MEMRES_VERSION_MINOR 2
#define MEMRES_VERSION_PATCH 0
#define MEMRES_VERSION_STRING "0.2.0"
/* MEMRES_VERSION >= MEMRES_MAKE_VERSION(0, 1, 0) */
#define MEMRES_MAKE_VERSION(major, minor, patch) ((major) * 10000 + (minor) * 100 + (patch))
#define MEMRES_VERSION MEMRES_MAKE_VERSION(MEMRES_VERSION_MAJOR, MEMRES_VERSION_MINOR, MEMRES_VERSION_PATCH)

/* ---- symbol visibility: MR_API marks every exported function ---- */
#if defined(MR_STATIC)
#  define MR_API
#elif defined(MR_BUILDING_SHARED) && defined(__GNUC__)
#  define MR_API __attribute__((visibility("default")))
#else
#  define MR_API
#endif

/* ---- hints ---- */
#if defined(__GNUC__) || defined(__clang__)
#  define MR_LIKELY(x)   __builtin_expect(!!(x), 1)
#  define MR_UNLIKELY(x) __builtin_expect(!!(x), 0)
#  define MR_NOINLINE    __attribute__((noinline))
#  define MR_COLD        __attribute__((cold, noinline))
#  define MR_MALLOC_LIKE __attribute__((malloc))
#  define MR_PRINTF(f, a) __attribute__((format(printf, f, a)))
/* Tells the compiler a condition holds (no code): lets it drop the caller's
 * NULL check after an inline fast path that cannot return NULL. */
#  define MR_ASSUME(x)   (__builtin_expect(!!(x), 1) ? (void)0 : __builtin_unreachable())
#else
#  define MR_LIKELY(x)   (x)
#  define MR_UNLIKELY(x) (x)
#  define MR_NOINLINE
#  define MR_COLD
#  define MR_MALLOC_LIKE
#  define MR_PRINTF(f, a)
#  define MR_ASSUME(x)   ((void)0)
#endif

/* MR_NORETURN: C11 _Noreturn in C, [[noreturn]] in C++. */
#ifdef __cplusplus
#  define MR_NORETURN [[noreturn]]
#else
#  define MR_NORETURN _Noreturn
#endif

/* MR_CLZLL(x): the count of leading zero bits of x (unsigned long long,
 * x != 0): one bsr/lzcnt with GNU C, a short loop elsewhere. */
#if defined(__GNUC__) || defined(__clang__)
#  define MR_CLZLL(x) __builtin_clzll(x)
#else
static inline int mri_clzll_fallback(unsigned long long x)
{
    int n = 0;
    for (unsigned long long bit = 1ULL << 63; (x & bit) == 0; bit >>= 1)
        n++;
    return n;
}
#  define MR_CLZLL(x) mri_clzll_fallback(x)
#endif

/* MR_SANITIZED is 1 when this translation unit is built with AddressSanitizer.
 * The inline fast paths then call out of line so that the library can poison
 * and unpoison memory (see src/track.h). */
#if defined(__SANITIZE_ADDRESS__)
#  define MR_SANITIZED 1
#elif defined(__has_feature)
#  if __has_feature(address_sanitizer)
#    define MR_SANITIZED 1
#  endif
#endif
#ifndef MR_SANITIZED
#  define MR_SANITIZED 0
#endif

/* MR_VALGRIND is 1 in a library built with -DMEMRES_VALGRIND=ON and in
 * everything built against it (the CMake targets and memres.pc carry
 * -DMR_VALGRIND=1): the library then marks memory for Valgrind's memcheck
 * as it poisons it for ASan, so memcheck reports use after rewind, reset,
 * free or put.  The marks cost a few instructions when not running under
 * Valgrind. */
#ifndef MR_VALGRIND
#  define MR_VALGRIND 0
#endif

/* MR_HARDENED is 1 in a library built with -DMEMRES_HARDEN=ON and in
 * everything built against it (the CMake targets and memres.pc carry
 * -DMR_HARDENED=1): free-list links of object pools and size-class pools
 * are then stored encoded with a random per-pool key (see mri_link_load in
 * memres/bits/link.h).  Off by default: it costs the pools' fast paths more
 * than the project allows a default (docs/RELIABILITY.md has the figures).
 * The library and its users must agree:
 * build against a hardened library only through its CMake package or
 * pkg-config file (or pass -DMR_HARDENED=1 yourself). */
#ifndef MR_HARDENED
#  define MR_HARDENED 0
#endif

/* MR_FREE_CHECK is 1 in code built without NDEBUG (a debug build): the
 * inline frees of object pools and size-class pools then write the pool's
 * mark into the second word of each block they free, and one that finds
 * the mark there already leaves the block to the library, which walks that
 * free list (then only) and reports a block found on it -- a double free --
 * to the violation handler (resource.h), in every build of the library:
 * glibc's tcache key, for memres.  Blocks of one word are not checked.
 * The inline frees also call the library first, which finds the block's
 * chunk from its address (a map a library built without NDEBUG keeps) and
 * reports a pointer the pool did not hand out, or a size of another class,
 * and the free is ignored.  It costs a call and a lookup a free, and a
 * store an allocation, so release builds (NDEBUG) leave it out; define it
 * to 0 or 1 to choose. */
#ifndef MR_FREE_CHECK
#  ifdef NDEBUG
#    define MR_FREE_CHECK 0
#  else
#    define MR_FREE_CHECK 1
#  endif
#endif

/* MR_CHECKED: the inline fast paths call out of line, so that the library
 * can mark each object for the memory checker in use. */
#define MR_CHECKED (MR_SANITIZED || MR_VALGRIND)

#endif /* MEMRES_CONFIG_H */
