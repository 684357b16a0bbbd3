/* SPDX-License-Identifier: MIT */
/* advise/record/trace.c -- the trace (format.h): opened at start-up
 * under a temporary name (put under its own by merge.c at exit or exec),
 * each thread's chunk appended under g_trace_mu when full.  The events
 * are written into the chunk by record.c. */
#include <fcntl.h>

#include "record.h"

/* The trace at g_trace_path, opened (as a high descriptor, close-on-exec)
 * and its header written; g_trace_fd stays -1 when it cannot be. */
void mrr_trace_open(void)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", g_trace_path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
        int hi = fcntl(fd, F_DUPFD_CLOEXEC, 1000);
        if (hi >= 0) {
            close(fd);
            fd = hi;
        }
        struct mra_trace_header th;
        memset(&th, 0, sizeof th);
        memcpy(th.magic, MRA_TRACE_MAGIC, 8);
        th.version = MRA_TRACE_VERSION;
        th.pid = (uint64_t)getpid();
        mrr_write_all(fd, &th, sizeof th);
        g_trace_fd = fd;
    }
}

void mrr_write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        p += w;
        n -= (size_t)w;
    }
}

COLD void mrr_tr_flush(struct tstate *ts)
{
    if (!ts->tbuf || ts->tlen == 0)
        return;
    int e = errno;
    struct mra_trace_chunk c = {ts->index, ts->tlen, ts->tev, 0};
    pthread_mutex_lock(&g_trace_mu);
    mrr_write_all(g_trace_fd, &c, sizeof c);
    mrr_write_all(g_trace_fd, ts->tbuf, ts->tlen);
    g_trace_events += ts->tev;
    g_trace_bytes += sizeof c + ts->tlen;
    pthread_mutex_unlock(&g_trace_mu);
    ts->tlen = ts->tev = 0;
    errno = e;
}
