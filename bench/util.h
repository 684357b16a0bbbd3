/* SPDX-License-Identifier: MIT */
/* bench/util.h -- the helpers every file of the harness may use (bench/util.c):
 * the error exit, allocation that cannot fail, the median, a time as the
 * table prints it, and the instruction counter.  util.c depends on no other
 * file of bench/, so that sharing these makes none of the harness's files
 * (main.c, registry.c, run.c, report.c) depend on another in a circle.
 */
#ifndef MEMRES_BENCH_UTIL_H
#define MEMRES_BENCH_UTIL_H

#include <stddef.h>

#define PROG "memres-bench"

/* Prints "memres-bench: " and the message on stderr and exits with 2. */
__attribute__((format(printf, 1, 2), noreturn)) void die(const char *fmt, ...);
/* calloc and strdup that die on failure. */
void *xcalloc(size_t n, size_t size);
char *xstrdup(const char *s);

/* The median of v[0..n) (NAN when n is 0). */
double median_of(const double *v, int n);

/* s seconds as the table shows a time ("1.234s", "5.67ms", "-" for NAN);
 * returns b. */
const char *fmt_time(char *b, size_t n, double s);

/* A user-space instruction counter for this process and its children, or
 * -1 with errno. */
int perf_open(void);

#endif
