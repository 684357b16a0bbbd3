/* SPDX-License-Identifier: MIT */
/* advise/tests/recorded_self.h -- for a test program that records itself:
 * runs this program again as "PROG child" under the recorder, its profile
 * to `profile` (8 frames, memres-advise's default) and its standard output
 * to `out` (NULL: inherited).  0 where the child exited 0. */
#ifndef MEMRES_ADVISE_RECORDED_SELF_H
#define MEMRES_ADVISE_RECORDED_SELF_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static int run_recorded_self(const char *argv0, const char *recorder, const char *profile, const char *out)
{
    unlink(profile);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        if (out && !freopen(out, "w", stdout))
            _exit(127);
        setenv("MEMRES_ADVISE_PROFILE", profile, 1);
        setenv("MEMRES_ADVISE_DEPTH", "8", 1);
        setenv("LD_PRELOAD", recorder, 1);
        execl("/proc/self/exe", argv0, "child", (char *)NULL);
        _exit(127);
    }
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "%s: the recorded child failed\n", argv0);
        return -1;
    }
    return 0;
}

#endif
