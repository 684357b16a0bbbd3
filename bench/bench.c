/* SPDX-License-Identifier: MIT */
/* bench/bench.c -- the harness's services to the scenarios (bench.h): the
 * output text and the note, the clock, the span a run measures (restarted
 * by bench_timing_start), running another program, and whether the peer
 * libraries were built in.
 *
 * None of it needs the rest of the harness (only util.c), so a scenario file
 * depends on this file and on no other of the harness: the harness reaches
 * the scenarios through registry.c's tables, never the other way.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

extern char **environ;

/* ---- the output text and the note ---- */

/* Appends to buf (len bytes used of max), truncating to fit. */
__attribute__((format(printf, 4, 0))) static void append_v(char *buf, size_t *len, size_t max, const char *fmt,
                                                           va_list ap)
{
    if (*len >= max - 1)
        return;
    int n = vsnprintf(buf + *len, max - *len, fmt, ap);
    if (n > 0) {
        *len += (size_t)n;
        if (*len > max - 1)
            *len = max - 1;
    }
}

void bench_printf(bench_out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    append_v(o->text, &o->text_len, BENCH_TEXT_MAX, fmt, ap);
    va_end(ap);
}

void bench_note(bench_out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    append_v(o->note, &o->note_len, BENCH_NOTE_MAX, fmt, ap);
    va_end(ap);
}

/* ---- the clock, and the span a run measures ---- */

uint64_t bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t t_start; /* bench_now_ns() when the span began */
static int perf_fd = -1;

void timing_begin(void)
{
    perf_fd = perf_open();
    if (perf_fd >= 0)
        ioctl(perf_fd, PERF_EVENT_IOC_ENABLE, 0);
    t_start = bench_now_ns();
}

void bench_timing_start(void)
{
    if (perf_fd >= 0)
        ioctl(perf_fd, PERF_EVENT_IOC_RESET, 0);
    t_start = bench_now_ns();
}

uint64_t timing_end(int64_t *instructions)
{
    uint64_t t1 = bench_now_ns();
    if (perf_fd >= 0) {
        uint64_t count = 0;
        ioctl(perf_fd, PERF_EVENT_IOC_DISABLE, 0);
        if (read(perf_fd, &count, sizeof count) == (ssize_t)sizeof count && count > 0)
            *instructions = (int64_t)count;
    }
    return t1 - t_start;
}

/* ---- another program ---- */

/* Appends what fd gives until EOF to out->text, truncated to fit. */
static void read_text(int fd, bench_out *out)
{
    char buf[4096];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        size_t room = BENCH_TEXT_MAX - 1 - out->text_len;
        size_t take = (size_t)n < room ? (size_t)n : room;
        memcpy(out->text + out->text_len, buf, take);
        out->text_len += take;
    }
    out->text[out->text_len] = '\0';
}

int bench_run_program(char *const argv[], bench_out *out)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) {
        fprintf(stderr, PROG ": pipe: %s\n", strerror(errno));
        return -1;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
    pid_t pid;
    int e = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(p[1]);
    if (e != 0) {
        close(p[0]);
        fprintf(stderr, PROG ": cannot run %s: %s\n", argv[0], strerror(e));
        return -1;
    }
    read_text(p[0], out);
    close(p[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    if (WIFSIGNALED(status))
        fprintf(stderr, PROG ": %s died of signal %d\n", argv[0], WTERMSIG(status));
    else
        fprintf(stderr, PROG ": %s exited with status %d\n", argv[0], WEXITSTATUS(status));
    return -1;
}

/* ---- the peer libraries found at build time ---- */

const char *bench_apr_unavailable(void)
{
#ifdef BENCH_HAVE_APR
    return NULL;
#else
    return "libapr-1 (libapr1-dev) not found at build time";
#endif
}

const char *bench_talloc_unavailable(void)
{
#ifdef BENCH_HAVE_TALLOC
    return NULL;
#else
    return "libtalloc (libtalloc-dev) not found at build time";
#endif
}
