/* SPDX-License-Identifier: MIT */
/* advise/tests/kat_forkexec.c -- known answer for memres-advise: fork and
 * exec.  Only the process started is profiled.
 *
 *   kat_forkexec [malloc|memres]             the started process
 *   kat_forkexec noexec                      the same, but it does the final
 *                                            image's work itself (no exec
 *                                            at the end: fork alone)
 *   kat_forkexec exec TAG                    what it execs (internal)
 *
 * The started process makes 1000 objects at one line (KAT-SITE below,
 * through the wrapper xmalloc) and keeps them; forks child A, which makes
 * and frees 5000 objects at another line (KAT-CHILD) and calls exit(0)
 * (its atexit handlers run: the recorder's too, which must not write or
 * corrupt the parent's profile); forks child B, which execs this program
 * ("exec B": 7000 objects at KAT-EXEC, exit status 5); waits for both and
 * prints their statuses; tries to exec a file that does not exist (the
 * exec fails, the profile written for it is not the last) and makes 500
 * more objects at KAT-SITE; frees its objects; and finally execs this
 * program ("exec final"), which prints its line and exits with status 3.
 * So the profile counts exactly the 1500 objects of KAT-SITE (and whatever
 * stdio allocates in the parent), no object of KAT-CHILD or KAT-EXEC;
 * stdout passes through from all four processes; the exit status is 3.
 *
 * stdout: one line per process, in a fixed order; stderr: "KAT-COUNT SITE
 * 1500".  Exit status 3.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define KAT_NAME "kat_forkexec"
#include "kat.h"

#define PARENT_OBJECTS 1000
#define CHILD_OBJECTS 5000
#define EXEC_OBJECTS 7000
#define AFTER_FAILED_EXEC 500

typedef struct obj {
    struct obj *next;
    uint64_t value;
} obj;

static obj *push(obj *list, uint64_t v)
{
    obj *o = xmalloc(sizeof *o); /* KAT-SITE: any */
    o->next = list;
    o->value = v;
    return o;
}

static uint64_t child_work(void)
{
    uint64_t sum = 0;
    obj *list = NULL;
    for (int i = 0; i < CHILD_OBJECTS; i++) {
        obj *o = xmalloc(sizeof *o + (size_t)(i % 7) * 8); /* KAT-CHILD */
        o->next = list;
        o->value = (uint64_t)i * 3;
        list = o;
    }
    while (list != NULL) {
        obj *next = list->next;
        sum += list->value;
        free(list);
        list = next;
    }
    return sum;
}

/* The final image's objects when it is not exec'd: the parent's own. */
static __attribute__((noinline)) void *own_object(int i)
{
    void *p = xmalloc(32 + (size_t)(i % 5) * 16);
    __asm__ volatile("" ::: "memory");
    return p;
}

static int exec_main(const char *tag, bool in_process)
{
    uint64_t sum = 0;
    void **p = malloc(EXEC_OBJECTS * sizeof *p);
    if (p == NULL)
        return 1;
    for (int i = 0; i < EXEC_OBJECTS; i++) {
        if (in_process)
            p[i] = own_object(i);
        else
            p[i] = xmalloc(32 + (size_t)(i % 5) * 16); /* KAT-EXEC */
        memset(p[i], i & 0xff, 32);
    }
    for (int i = 0; i < EXEC_OBJECTS; i++) {
        sum += ((unsigned char *)p[i])[31];
        free(p[i]);
    }
    free(p);
    printf("exec %s: %d objects, checksum %" PRIu64 "\n", tag, EXEC_OBJECTS, sum);
    return strcmp(tag, "final") == 0 ? 3 : 5;
}

static int wait_for(pid_t pid)
{
    int st;
    while (waitpid(pid, &st, 0) < 0)
        ;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[1], "exec") == 0)
        return exec_main(argv[2], false);

    obj *list = NULL;
    for (int i = 0; i < PARENT_OBJECTS; i++)
        list = push(list, (uint64_t)i);
    printf("parent: %d objects\n", PARENT_OBJECTS);
    fflush(stdout);

    pid_t a = fork();
    if (a < 0)
        return 1;
    if (a == 0) {
        printf("child A: %d objects, checksum %" PRIu64 "\n", CHILD_OBJECTS, child_work());
        exit(0); /* atexit handlers and stdio's flush run in the child */
    }
    int sa = wait_for(a);

    pid_t b = fork();
    if (b < 0)
        return 1;
    if (b == 0) {
        execl("/proc/self/exe", argv[0], "exec", "B", (char *)NULL);
        _exit(127);
    }
    int sb = wait_for(b);
    printf("parent: child A exited %d, child B exited %d\n", sa, sb);

    /* an exec that fails: the process goes on, and so does its profile */
    errno = 0;
    execl("/nonexistent/kat_forkexec", argv[0], "exec", "never", (char *)NULL);
    int e = errno;
    for (int i = 0; i < AFTER_FAILED_EXEC; i++)
        list = push(list, (uint64_t)(PARENT_OBJECTS + i));
    printf("parent: exec of a missing file failed (%s), then %d objects more\n",
           e == ENOENT ? "ENOENT" : "not ENOENT", AFTER_FAILED_EXEC);
    fflush(stdout);

    uint64_t sum = 0;
    while (list != NULL) {
        obj *next = list->next;
        sum += list->value;
        free(list);
        list = next;
    }
    printf("parent: checksum %" PRIu64 "\n", sum);
    fflush(stdout);
    fprintf(stderr, "KAT-COUNT SITE %d\n", PARENT_OBJECTS + AFTER_FAILED_EXEC);
    if (argc > 1 && strcmp(argv[1], "noexec") == 0)
        return exec_main("final", true); /* the same work and output, without the exec */
    execl("/proc/self/exe", argv[0], "exec", "final", (char *)NULL);
    perror("kat_forkexec: execl");
    return 1;
}
