/* SPDX-License-Identifier: MIT */
/* memres/bits/classes.h -- private: the size classes of memres/pools.h, the
 * one place that defines them: a request's class, a class's block size and
 * alignment.  The inline paths and src/ both use these.  Not for direct
 * use; the classes may change between versions (mr_pools_block_size says
 * what a request gets).
 *
 * Classes 0..31 are 8, 16, ... 256 (8-byte steps); above, eight classes in
 * each power of two: class 8k - 40 + q holds the sizes
 * (q << (k - 3), (q + 1) << (k - 3)] for k >= 8, q in 8..15 (288, 320, ...
 * 512, 576, ... 1024, 1152, ...).  The class of a request of x + 1 bytes is
 * computed from x: below 1024 a table by x >> 3 (one load), above a bit
 * scan, two shifts and two adds.  A request with alignment 16 takes the
 * class of (size - 1) | 8, a multiple of 16 below 256 (every class above
 * 256 is one); blocks of a class are aligned to the largest power of two
 * dividing its size (at least 8, at most MRI_CLASS_ALIGN_MAX). */
#ifndef MEMRES_BITS_CLASSES_H
#define MEMRES_BITS_CLASSES_H

#include <stddef.h>

#include "memres/config.h"

/* The largest alignment a class gives (MR_POOLS_MAX_ALIGN). */
#define MRI_CLASS_ALIGN_MAX ((size_t)4096)

/* The class of a request of x + 1 bytes (1 <= x + 1 <= 2^62).  The table
 * (below 1024: the class by x >> 3) lives in here, not at file scope, so
 * that only a unit that looks a class up has a copy (at -O0 too, where a
 * file-scope static const is kept in every unit that includes this).  Not
 * an extern table in the library: the code here would stay the same with
 * gcc, but clang loads an extern table's address from the GOT in PIE and
 * PIC code, and the shared library's own references to an exported table
 * go through the GOT too -- a load more on the fast path. */
static inline size_t mri_pools_class_of(size_t x)
{
    static const unsigned char tab[128] = {
        0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25,
        26, 27, 28, 29, 30, 31, 32, 32, 32, 32, 33, 33, 33, 33, 34, 34, 34, 34, 35, 35, 35, 35, 36, 36, 36, 36,
        37, 37, 37, 37, 38, 38, 38, 38, 39, 39, 39, 39, 40, 40, 40, 40, 40, 40, 40, 40, 41, 41, 41, 41, 41, 41,
        41, 41, 42, 42, 42, 42, 42, 42, 42, 42, 43, 43, 43, 43, 43, 43, 43, 43, 44, 44, 44, 44, 44, 44, 44, 44,
        45, 45, 45, 45, 45, 45, 45, 45, 46, 46, 46, 46, 46, 46, 46, 46, 47, 47, 47, 47, 47, 47, 47, 47};
    if (MR_LIKELY(x < 1024))
        return tab[x >> 3];
    unsigned k = 63u ^ (unsigned)MR_CLZLL((unsigned long long)x); /* 63 ^ clz: one bsr */
    return (x >> (k - 3u)) + ((size_t)k << 3) - 40u;
}

/* The block size of the class of mri_pools_class_of(x), with no table load:
 * (x | 7) + 1 below 256, else ((x >> (k - 3)) + 1) << (k - 3). */
static inline size_t mri_pools_class_size_of(size_t x)
{
    if (MR_LIKELY(x < 256))
        return (x | 7u) + 1u;
    unsigned s = (63u ^ (unsigned)MR_CLZLL((unsigned long long)x)) - 3u;
    return ((x >> s) + 1u) << s;
}

/* The block size of class i (the inverse of mri_pools_class_of). */
static inline size_t mri_pools_class_size(size_t i)
{
    if (i < 32)
        return (i + 1) * 8;
    unsigned k = (unsigned)(i / 8) + 4u;
    return (i % 8 + 9) << (k - 3u);
}

/* The alignment of the blocks (and chunks) of a class of `size` bytes. */
static inline size_t mri_pools_class_align(size_t size)
{
    size_t a = size & (~size + 1); /* the lowest set bit */
    if (a < 8)
        a = 8;
    return a > MRI_CLASS_ALIGN_MAX ? MRI_CLASS_ALIGN_MAX : a;
}

/* What the class functions take for a request of size >= 1 bytes with an
 * alignment align <= 16: size - 1 | mri_pools_xbits(align), where the bit
 * 3 of an alignment of 16 makes the class below 256 a multiple of 16 (above,
 * every class is one and the bit changes nothing). */
static inline size_t mri_pools_xbits(size_t align) { return (align - 1) & ~(size_t)7; }
static inline size_t mri_pools_x(size_t size, size_t align) { return (size - 1) | mri_pools_xbits(align); }

/* x for a thread-safe pool, whose smallest class is 16 bytes (its caches
 * keep two words in a free block): class 0 is never used. */
static inline size_t mri_pools_ts_of(size_t x) { return x < 8 ? (size_t)8 : x; }

#endif /* MEMRES_BITS_CLASSES_H */
