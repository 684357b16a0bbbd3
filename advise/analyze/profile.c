/* SPDX-License-Identifier: MIT */
/* advise/analyze/profile.c -- the profile the recorder writes at exit (format.h),
 * read back: header, modules, sites and, from version 5 on, the timeline
 * (a version 4 profile reads as one without: tl.npoints 0), from version 6
 * on the heap section (before it: all 0).  Every count
 * in the file is checked against the file's size (the timeline's against
 * MRA_TIMELINE_MAX) before anything is allocated for it, so a truncated
 * or corrupt file fails with a message instead of a huge allocation. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis.h"

static int fail(const char *path, const char *what)
{
    fprintf(stderr, "memres-advise: %s: %s\n", path, what);
    return -1;
}

static int read_exact(FILE *f, void *buf, size_t n)
{
    return fread(buf, 1, n, f) == n ? 0 : -1;
}

/* The timeline section (version 5 on): 0, or -1 (truncated or corrupt:
 * more points than the recorder writes, a peak outside them). */
static int read_timeline(FILE *f, struct mra_profile *p)
{
    struct mra_timeline_header th;
    if (read_exact(f, &th, sizeof th) != 0 || th.npoints < 2 || th.npoints > MRA_TIMELINE_MAX ||
        th.peak >= th.npoints)
        return -1;
    p->timeline = malloc(th.npoints * sizeof *p->timeline);
    if (!p->timeline || read_exact(f, p->timeline, th.npoints * sizeof *p->timeline) != 0)
        return -1;
    p->tl = th;
    return 0;
}

/* The heap section (version 6 on): 0, or -1 (truncated, or more sites
 * than the recorder writes). */
static int read_heap(FILE *f, struct mra_profile *p)
{
    if (read_exact(f, &p->heap, sizeof p->heap) != 0 || p->heap.nsites > MRA_HEAP_SITES)
        return -1;
    return read_exact(f, p->heap_sites, p->heap.nsites * sizeof p->heap_sites[0]);
}

int mra_profile_read(const char *path, struct mra_profile *p)
{
    memset(p, 0, sizeof *p);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "memres-advise: %s: %s\n", path, strerror(errno));
        return -1;
    }
    static char buf[1 << 16];
    setvbuf(f, buf, _IOFBF, sizeof buf);
    struct stat st;
    uint64_t fsize = fstat(fileno(f), &st) == 0 ? (uint64_t)st.st_size : UINT64_MAX;

    struct mra_profile_header *h = &p->h;
    if (read_exact(f, h, sizeof *h) != 0) {
        fclose(f);
        return fail(path, "truncated profile (no complete header)");
    }
    if (memcmp(h->magic, MRA_PROFILE_MAGIC, 8) != 0) {
        fclose(f);
        return fail(path, "not a memres-advise profile (wrong magic)");
    }
    if (h->version < MRA_PROFILE_VERSION_MIN || h->version > MRA_PROFILE_VERSION) {
        fclose(f);
        fprintf(stderr, "memres-advise: %s: profile version %u, this memres-advise reads %u to %u\n", path,
                h->version, MRA_PROFILE_VERSION_MIN, MRA_PROFILE_VERSION);
        return -1;
    }
    if (h->depth == 0 || h->depth > MRA_MAX_DEPTH) {
        fclose(f);
        return fail(path, "corrupt profile (frame depth out of range)");
    }
    h->program[sizeof h->program - 1] = '\0';
    uint64_t site_rec = sizeof(struct mra_site_stats) + (uint64_t)h->depth * sizeof(uint64_t);
    uint64_t rest = fsize >= sizeof *h ? fsize - sizeof *h : 0;
    if (h->nmodules > rest / sizeof(struct mra_module) || h->nsites > rest / site_rec) {
        fclose(f);
        return fail(path, "truncated profile (fewer records than the header says)");
    }

    p->modules = calloc(h->nmodules ? h->nmodules : 1, sizeof *p->modules);
    if (!p->modules)
        goto nomem;
    for (uint64_t i = 0; i < h->nmodules; i++) {
        struct mra_module m;
        if (read_exact(f, &m, sizeof m) != 0)
            goto truncated;
        if (m.path_len > 65536 || m.path_len > rest)
            goto corrupt;
        char *s = malloc((size_t)m.path_len + 1);
        if (!s)
            goto nomem;
        if (read_exact(f, s, m.path_len) != 0) {
            free(s);
            goto truncated;
        }
        s[m.path_len] = '\0';
        p->modules[i] = (struct mra_raw_module){ .bias = m.bias, .lo = m.lo, .hi = m.hi, .path = s };
        p->nmodules = (size_t)i + 1;
    }

    p->sites = calloc(h->nsites ? h->nsites : 1, sizeof *p->sites);
    /* One block for every site's frames: sites[0].frames is its start. */
    uint64_t *frames = calloc(h->nsites ? h->nsites * h->depth : 1, sizeof *frames);
    if (!p->sites || !frames) {
        free(frames);
        goto nomem;
    }
    p->sites[0].frames = frames; /* owned from here on, even when nsites is 0 */
    for (uint64_t i = 0; i < h->nsites; i++) {
        struct mra_raw_site *r = &p->sites[i];
        r->frames = frames + i * h->depth;
        if (read_exact(f, &r->s, sizeof r->s) != 0 || read_exact(f, r->frames, h->depth * sizeof *frames) != 0)
            goto truncated;
        if (r->s.nframes > h->depth)
            goto corrupt;
        if (r->s.nsizes > MRA_SIZES)
            r->s.nsizes = MRA_SIZES;
        p->nsites = (size_t)i + 1;
    }
    if (h->version >= 5 && read_timeline(f, p) != 0)
        goto corrupt;
    if (h->version >= 6 && read_heap(f, p) != 0)
        goto corrupt;
    if (h->version >= 7 && read_exact(f, &p->speed, sizeof p->speed) != 0)
        goto corrupt;
    fclose(f);
    return 0;

truncated:
    fclose(f);
    mra_profile_free(p);
    return fail(path, "truncated profile");
corrupt:
    fclose(f);
    mra_profile_free(p);
    return fail(path, "corrupt profile");
nomem:
    fclose(f);
    mra_profile_free(p);
    return fail(path, "out of memory reading the profile");
}

void mra_profile_free(struct mra_profile *p)
{
    if (p->modules)
        for (size_t i = 0; i < p->nmodules; i++)
            free(p->modules[i].path);
    free(p->modules);
    if (p->sites)
        free(p->sites[0].frames);
    free(p->sites);
    free(p->timeline);
    memset(p, 0, sizeof *p);
}
