/* SPDX-License-Identifier: MIT */
/* bench/util.c -- the harness's shared helpers (see util.h). */
#include <linux/perf_event.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util.h"

void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs(PROG ": ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (p == NULL)
        die("out of memory");
    return p;
}

char *xstrdup(const char *s)
{
    char *p = strdup(s);
    if (p == NULL)
        die("out of memory");
    return p;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double median_of(const double *v, int n)
{
    if (n <= 0)
        return NAN;
    double *s = xcalloc((size_t)n, sizeof *s);
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    double m = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    free(s);
    return m;
}

const char *fmt_time(char *b, size_t n, double s)
{
    if (isnan(s))
        snprintf(b, n, "-");
    else if (s >= 100)
        snprintf(b, n, "%.1fs", s);
    else if (s >= 1)
        snprintf(b, n, "%.3fs", s);
    else if (s >= 0.001)
        snprintf(b, n, "%.2fms", s * 1e3);
    else
        snprintf(b, n, "%.0fus", s * 1e6);
    return b;
}

int perf_open(void)
{
    struct perf_event_attr pe;
    memset(&pe, 0, sizeof pe);
    pe.type = PERF_TYPE_HARDWARE;
    pe.size = sizeof pe;
    pe.config = PERF_COUNT_HW_INSTRUCTIONS;
    pe.disabled = 1;
    pe.inherit = 1; /* threads and spawned programs count too */
    pe.exclude_kernel = 1;
    pe.exclude_hv = 1;
    return (int)syscall(SYS_perf_event_open, &pe, 0, -1, -1, (unsigned long)PERF_FLAG_FD_CLOEXEC);
}
