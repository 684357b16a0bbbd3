/* SPDX-License-Identifier: MIT */
/* advise/analyze/progress.c -- the progress line on stderr while the
 * symbols are resolved and the sites judged (symbols.c, analyze.c): on a
 * terminal, updated in place after half a second, at most 10 times a
 * second; elsewhere one line per stage, once the analysis has run a
 * second.  The driver enables it (mra_options.progress) and clears it
 * before the report.  Its own file, so that the parts that report
 * progress depend on it and not on each other. */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <unistd.h>

#include "analysis.h"
#include "clock.h"

static struct {
    bool on, shown, tty;
    double start, last;
    const char *stage;
} prog;

static double now_s(void)
{
    return (double)mra_mono_ns() * 1e-9;
}

void mra_progress_enable(bool on)
{
    prog.on = on;
    prog.shown = false;
    prog.tty = isatty(2);
    prog.start = now_s();
    prog.last = 0;
    prog.stage = NULL;
}

void mra_progress(const char *stage, size_t done, size_t total)
{
    if (!prog.on)
        return;
    double t = now_s();
    /* on a terminal after half a second, updated in place at most 10 times
     * a second; elsewhere only when the analysis has run for a second, one
     * line per stage */
    if (prog.tty) {
        if (t - prog.start < 0.5 || (t - prog.last < 0.1 && done < total))
            return;
        fprintf(stderr, "\rmemres-advise: %s %zu/%zu ...\033[K", stage, done, total);
        prog.shown = true;
    } else {
        if (t - prog.start < 1.0 || prog.stage == stage)
            return;
        fprintf(stderr, "memres-advise: %s (%zu items) ...\n", stage, total);
    }
    prog.stage = stage;
    prog.last = t;
    fflush(stderr);
}

void mra_progress_end(void)
{
    if (prog.on && prog.tty && prog.shown)
        fprintf(stderr, "\r\033[K");
    prog.shown = false;
}
