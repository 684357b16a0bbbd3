/* SPDX-License-Identifier: MIT */
/* src/chunks.h -- chunks and their records, one implementation for both
 * pool engines (pools.c, the unsynchronised one; tsafe.c, the thread-safe
 * one): the chunk rule, the records that list a class's chunks apart from
 * the chunks, and the owner's upstream calls through its ledger.
 *
 * The chunk rule: n blocks of `size` bytes take n * size bytes rounded to 64
 * bytes below a page and to pages above (mri_round_block, internal.h: the
 * arena rounds its blocks the same way), and the rounding is filled with
 * more blocks, up to the class's cap.  A chunk is never a power of two plus
 * a header: its record lives apart, in record pages of MRI_REC_PAGE_BYTES.
 *
 * Locking: an owner that is used by one thread at a time gives lock NULL.
 * A thread-safe owner gives its lock and holds it across every call here;
 * the calls drop it while the upstream runs (an upstream may take locks of
 * its own) and count the request in flight meanwhile (mri_ledger_reserve).
 *
 * The address map (addrmap.h, builds without NDEBUG): a chunk's blocks
 * are entered when it is made and removed when it goes back, under the
 * owner's lock, so the owner's check at the free finds a block's chunk and
 * block size from its address alone.
 *
 * Invariants (mri_chunks_verify), with `listed` the records the owner's
 * classes (and anything else of the owner) hold:
 *   listed + spare == records handed out from the pages
 *   held from upstream == pages * MRI_REC_PAGE_BYTES + what the owner counts
 */
#ifndef MEMRES_CHUNKS_H
#define MEMRES_CHUNKS_H

#include "addrmap.h"
#include "internal.h"
#include "ledger.h"
#include "lock.h"

/* 4 KiB, not less: glibc keeps freed blocks of up to 1032 bytes in its
 * per-thread cache, unmerged, where a record page freed last could pin the
 * top of the heap and keep a released pool's chunks resident. */
#define MRI_REC_PAGE_BYTES ((size_t)4096)

/* A chunk of a class: blocks [base, base + blocks * size). */
struct mri_chunk {
    struct mri_chunk *next; /* the class's next chunk, in order of first use */
    uintptr_t base;
    size_t bytes;           /* from base on (the upstream request: bytes + pad) */
    size_t blocks;
    void *cls;              /* the thread-safe engine's class (fork); NULL in pools.c */
    uint32_t pad;           /* bytes requested beyond `bytes` (mri_chunk_pad) */
    uint32_t off;           /* base - what the upstream gave */
};

/* What a chunk aligned to align over upstream up requests beyond its bytes:
 * over malloc, an alignment above malloc's own comes from a plain malloc
 * padded by the difference, not from posix_memalign, whose cut-off
 * fragments glibc keeps in its per-thread cache, in use in the middle of
 * the heap: they pinned a released pool's chunks there (10-21% of a 256 MiB
 * pool came back; all of it with the padding). */
static inline size_t mri_chunk_pad(const mr_resource *up, size_t align)
{
    return align > MRI_MAX_ALIGN && up == mr_malloc_resource() ? align - MRI_MAX_ALIGN : 0;
}

struct mri_chunks {
    mri_ledger *ledger;      /* the owner's */
    mr_resource *upstream;
    mri_lock *lock;          /* NULL, or the owner's lock (see above) */
    struct mri_rec_page *pages;
    size_t npages;
    uintptr_t ptr, end;      /* free records of the newest page */
    struct mri_chunk *spare; /* records of chunks given back, for reuse */
    struct mri_addrmap *map; /* MRI_ADDRMAP: every chunk's blocks (and the owner's
                                direct blocks), for the check at the free */
};

/* The chunk rule's sizes: a class's first chunk holds about
 * MRI_CHUNK_FIRST_BYTES of blocks (at least one), later ones more, up to
 * mri_chunk_cap blocks: MRI_CHUNK_MAX_BLOCKS and MRI_CHUNK_MAX_BYTES,
 * or the caller's max_blocks (given, not 0) and MRI_CHUNK_HARD_MAX_BYTES. */
#define MRI_CHUNK_FIRST_BYTES ((size_t)4096)
#define MRI_CHUNK_MAX_BLOCKS ((size_t)16384)          /* libstdc++'s default */
#define MRI_CHUNK_MAX_BYTES ((size_t)64 * 1024)
#define MRI_CHUNK_HARD_MAX_BYTES ((size_t)1 << 30)

static inline size_t mri_chunk_first(size_t size)
{
    return MRI_CHUNK_FIRST_BYTES / size != 0 ? MRI_CHUNK_FIRST_BYTES / size : 1;
}

static inline size_t mri_chunk_cap(size_t size, size_t max_blocks)
{
    size_t cap = max_blocks != 0 ? max_blocks : MRI_CHUNK_MAX_BLOCKS;
    size_t by_bytes = (max_blocks != 0 ? MRI_CHUNK_HARD_MAX_BYTES : MRI_CHUNK_MAX_BYTES) / size;
    if (by_bytes == 0)
        by_bytes = 1;
    return cap < by_bytes ? cap : by_bytes;
}

/* The chunk rule: *n (>= 1) blocks of size bytes, at most cap (>= 1), and
 * the bytes they take; with round, the rounding is filled with blocks (up
 * to cap).  false (errno = ENOMEM) when the bytes cannot be represented. */
bool mri_chunk_layout(size_t size, size_t *n, size_t cap, bool round, size_t *bytes);

/* size bytes aligned to align from the owner's upstream, through its
 * ledger (the lock, if any, dropped across the call).  NULL with errno,
 * nothing counted, on failure. */
void *mri_chunks_up_allocate(struct mri_chunks *c, size_t size, size_t align);
/* Gives p (from mri_chunks_up_allocate) back. */
void mri_chunks_up_deallocate(struct mri_chunks *c, void *p, size_t size, size_t align);

/* A new chunk of `blocks` blocks of `size` bytes in `bytes` bytes aligned to
 * align, with its record (next NULL, cls NULL), poisoned, its blocks in the
 * map.  All or nothing: NULL with errno and nothing held on failure. */
struct mri_chunk *mri_chunk_new(struct mri_chunks *c, size_t bytes, size_t blocks, size_t size, size_t align);
/* Gives chunk r back upstream; its record is kept for the next chunk. */
void mri_chunk_free(struct mri_chunks *c, struct mri_chunk *r, size_t align);
/* Gives the record pages back and empties the map (the owner gave every
 * chunk back first and forgets their records). */
void mri_chunks_release(struct mri_chunks *c);

/* Records handed out from the pages (listed by the owner or spare). */
size_t mri_chunks_handed_out(const struct mri_chunks *c);
/* Checks the invariants above for walker `who` of obj; adds the pages'
 * bytes and upstream blocks to *held and *blocks. */
bool mri_chunks_verify(const struct mri_chunks *c, const char *who, const void *obj, size_t listed, size_t *held,
                       size_t *blocks);

#endif /* MEMRES_CHUNKS_H */
