/* SPDX-License-Identifier: MIT */
/* advise/tests/lifetimes.c -- the recorder's lifetimes in time: a
 * thread's clock is read at one event in 16 and interpolated between
 * (record.h's thread_time), which must not spread a thread's waits over
 * its events.  This checks the lifetimes against those the program itself
 * measured.
 *
 *   lifetimes RECORDER PROFILE     runs itself under RECORDER, then checks
 *
 * The child's sites, told apart by their one size:
 *   1001  20 objects, each freed 4 ms after its birth, while 500
 *         short-lived objects of size 1002 come and go each millisecond;
 *   1002  those short-lived ones: allocated and freed at once;
 *   1003  20 objects freed 4 ms after birth on a second thread that does
 *         nothing else (its events 4 ms apart: interpolated over 16 of
 *         them, the lives read 1.2 ms), the first thread allocating
 *         meanwhile;
 *   1004  8 objects born first and freed last, after 1.2 million other
 *         allocations.
 * Asserted on the profile: the medians (log2 buckets, so within a factor
 * of 2 at each end, with room for a loaded host) and the means, against
 * the lives measured by the child itself (CLOCK_MONOTONIC). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis.h"
#include "recorded_self.h"

static void *volatile sink;

static uint64_t mono_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* short-lived objects (size 1002) until `ns` have passed */
static void churn_for(uint64_t ns)
{
    uint64_t end = mono_ns() + ns;
    while (mono_ns() < end) {
        for (int i = 0; i < 500; i++) {
            sink = malloc(1002);
            free(sink);
        }
        struct timespec ms = { 0, 1000000 };
        nanosleep(&ms, NULL);
    }
}

static uint64_t second_lives; /* the second thread's objects' lives, summed */

static void *second_thread(void *arg)
{
    (void)arg;
    for (int i = 0; i < 20; i++) {
        uint64_t t0 = mono_ns();
        void *p = malloc(1003);
        sink = p;
        struct timespec w = { 0, 4000000 };
        nanosleep(&w, NULL);
        free(p);
        second_lives += mono_ns() - t0;
    }
    return NULL;
}

/* The lives the child measured, written to stdout: "SIZE MEAN_NS". */
static int child(void)
{
    void *old[8];
    for (int i = 0; i < 8; i++)
        old[i] = malloc(1004);
    uint64_t t_old = mono_ns();
    uint64_t sum = 0;
    for (int i = 0; i < 20; i++) {
        uint64_t t0 = mono_ns();
        void *p = malloc(1001);
        sink = p; /* kept: a malloc whose pointer goes nowhere may be left out */
        churn_for(4000000);
        free(p);
        sum += mono_ns() - t0;
    }
    printf("1001 %llu\n", (unsigned long long)(sum / 20));
    pthread_t th;
    if (pthread_create(&th, NULL, second_thread, NULL) != 0)
        return 1;
    /* the first thread allocates meanwhile: batches of ticks on both */
    churn_for(85000000);
    pthread_join(th, NULL);
    printf("1003 %llu\n", (unsigned long long)(second_lives / 20));
    for (int i = 0; i < 1200000; i++) {
        sink = malloc(24);
        free(sink);
    }
    uint64_t life_old = mono_ns() - t_old;
    for (int i = 0; i < 8; i++)
        free(old[i]);
    printf("1004 %llu\n", (unsigned long long)life_old);
    return 0;
}

static const struct mra_site_stats *site_of_size(const struct mra_profile *p, uint64_t size)
{
    for (size_t i = 0; i < p->nsites; i++) {
        const struct mra_site_stats *s = &p->sites[i].s;
        if (!s->free_stack && s->nsizes == 1 && s->sizes[0].size == size)
            return s;
    }
    return NULL;
}

/* Whether site `size`'s lives are about `want` ns: median and mean within
 * a factor of 2 of it. */
static int check_site(const struct mra_profile *p, uint64_t size, double want)
{
    const double lo = 2.0, hi = 2.0;
    const struct mra_site_stats *s = site_of_size(p, size);
    if (!s || s->frees == 0) {
        printf("site of size %llu: not in the profile, or never freed\n", (unsigned long long)size);
        return 1;
    }
    double median = mra_hist_quantile(s->hist_ns, 0.5);
    double mean = (double)s->lifetime_ns_sum / (double)s->frees;
    int ok = median >= want / lo && median <= want * hi && mean >= want / lo && mean <= want * hi;
    printf("site of size %llu: %llu frees, lifetime median %.0f ns, mean %.0f ns; the program measured %.0f ns "
           "(accepted %.0f to %.0f): %s\n",
           (unsigned long long)size, (unsigned long long)s->frees, median, mean, want, want / lo, want * hi,
           ok ? "ok" : "FAIL");
    return ok ? 0 : 1;
}

static int check(const char *profile, const char *lives)
{
    double want[5] = { 0 };
    FILE *f = fopen(lives, "r");
    if (!f)
        return 1;
    unsigned long long sz, ns;
    while (fscanf(f, "%llu %llu", &sz, &ns) == 2)
        if (sz >= 1001 && sz <= 1004)
            want[sz - 1000] = (double)ns;
    fclose(f);
    struct mra_profile p;
    if (mra_profile_read(profile, &p) != 0)
        return 1;
    int bad = 0;
    bad |= check_site(&p, 1001, want[1]);
    bad |= check_site(&p, 1003, want[3]);
    bad |= check_site(&p, 1004, want[4]);
    /* allocated and freed at once: under 2 us, above 0 (a clock that did
     * not move) */
    const struct mra_site_stats *s = site_of_size(&p, 1002);
    double median = s ? mra_hist_quantile(s->hist_ns, 0.5) : -1;
    int ok = s && s->frees >= 20000 && median > 0 && median < 2000;
    printf("site of size 1002: %llu frees, lifetime median %.0f ns (accepted above 0, below 2000): %s\n",
           s ? (unsigned long long)s->frees : 0ull, median, ok ? "ok" : "FAIL");
    bad |= !ok;
    mra_profile_free(&p);
    return bad;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "child") == 0)
        return child();
    if (argc != 3) {
        fputs("usage: lifetimes RECORDER PROFILE\n", stderr);
        return 2;
    }
    char lives[4200];
    snprintf(lives, sizeof lives, "%s.lives", argv[2]);
    if (run_recorded_self(argv[0], argv[1], argv[2], lives) != 0)
        return 1;
    return check(argv[2], lives);
}
