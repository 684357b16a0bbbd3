/* SPDX-License-Identifier: MIT */
/* advise/analyze/sites.h -- the merged sites as the analysis builds them:
 * folded and merged (fold.c), judged (judge.c), ordered and handed on
 * (analyze.c).  Private to those three files. */
#ifndef MEMRES_ADVISE_SITES_H
#define MEMRES_ADVISE_SITES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis.h"

struct msite {
    struct mra_site_stats s;
    size_t fr;                   /* its frames: fpool[fr .. fr + nfr) */
    unsigned nfr;
    bool cut;
    bool unresolved;             /* its stack ends in a wrapper: the caller is unknown */
    bool dead;                   /* merged into another */
    const struct mra_frame *inner; /* the frame that called malloc (before folding) */
    uint64_t hash;
    uint32_t *raw;
    size_t nraw, capraw;
    /* judged */
    enum mra_rec rec;
    enum mra_rec cand;           /* what the rules named, before the cost and share tests */
    bool thread_safe;
    enum mra_pattern pattern;
    double saving;
    int64_t mem_delta;
    bool retention;
    char *reason;
    char near[240];              /* the thresholds it is near, or "" */
    /* a candidate whose saving is positive but below the 2% rule alone:
     * its saving and texts, for a group of such sites (mra_free_groups) */
    double cand_saving;
    char *rule, *costed;
    double glibc_costed;         /* glibc's time for its calls as the judge costed them (the
                                    candidate's, else mra_glibc_floor's) */
};

struct work {
    const struct mra_frame **fpool;
    size_t nf, capf;
    struct msite *ms;
    size_t n, cap;
    size_t *tab;                 /* hash of frame sequences -> index + 1 */
    size_t tabcap;
    const char **folded;
    size_t nfolded, capfolded;
};

/* ---- folding and merging (fold.c) ---- */

/* Steps 1 to 4 of analyze.c for one raw site: symbolized, folded,
 * recursion collapsed, cut to o->depth, merged into w's site of the same
 * frames or added.  0, or -1 out of memory. */
int mra_fold_raw(struct work *w, const struct mra_raw_site *r, uint32_t hdepth, struct mra_symbols *sym,
                 const struct mra_options *o);
/* Step 5: cut sites merged into the one site that extends them.  0, or -1. */
int mra_fold_cut(struct work *w);
void mra_work_free(struct work *w);
/* f passes a free on (libc, a --wrapper, a known free wrapper: xfree,
 * g_free, operator delete, ...). */
bool mra_is_free_wrapper(const struct mra_frame *f, const struct mra_options *o);

/* ---- judging (judge.c) ---- */

int mra_judge(struct msite *m, const struct mra_analysis *a, const struct mra_costs *c,
              const struct mra_thresholds *th);
/* The least glibc can have taken for s's calls in the program, at this
 * machine's calibration (its warmest pair a class; 0 without one). */
double mra_glibc_floor(const struct mra_site_stats *s, const struct mra_costs *c);
/* The part of s's slow calls (over 1 us) that reuse would avoid for r, in
 * the program's own chunks, before analysis.slow_scale. */
double mra_slow_reused(const struct mra_site_stats *s, enum mra_rec r);
/* m, a candidate below the 2% rule alone (m->rule set), recommended as
 * one of nsites sites that one arena serves, which save together_ns
 * together (group: what they share, e.g. "freed in F").  0, or -1. */
int mra_promote(struct msite *m, const struct mra_analysis *a, const struct mra_thresholds *th,
                const char *group, size_t nsites, double together_ns);
/* m, one of such a group that together falls short of the rule: says so
 * in m->near where the group is within a factor 2 of it. */
void mra_group_near(struct msite *m, const struct mra_analysis *a, const struct mra_thresholds *th,
                    const char *group, size_t nsites, double together_ns);
/* Two lines of memres calls replacing m's malloc and free. */
void mra_sketch(const struct msite *m, char sk[2][160], const struct mra_thresholds *th);

/* freed.c: s's freed[] from its free_sites (at_id: a raw site id's index
 * in p->sites, SIZE_MAX for none; nid entries), then the change to make
 * (s->change) from its frames, freed[0] and its kind. */
void mra_freed_fill(struct mra_site *s, const struct mra_profile *p, const size_t *at_id, size_t nid,
                    struct mra_symbols *sym);
void mra_change(struct mra_site *s, double never_share, double at_exit_share);
/* The arena candidates each below the 2% rule whose objects one
 * function frees (the dominant free stack's innermost function that is
 * not a folded wrapper), or that are never freed, recommended together
 * where together they pass it (mra_promote).  0, or -1. */
int mra_free_groups(struct work *w, const struct mra_analysis *a, const struct mra_profile *p, const size_t *at_id,
                    size_t nid, struct mra_symbols *sym, const struct mra_thresholds *th);
/* The allocators behind a function that w's sites together, not alone,
 * are worth (a->behind).  0, or -1. */
int mra_behind_functions(struct work *w, struct mra_analysis *a, const struct mra_costs *c,
                         const struct mra_thresholds *th);

#endif
