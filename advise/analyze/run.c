/* SPDX-License-Identifier: MIT */
/* advise/analyze/run.c -- the libraries the driver preloads, found
 * beside it, in ../lib (an installed tree moved elsewhere) or where they
 * were installed; and running the program: fork + execvp with a
 * library preloaded in front of the caller's LD_PRELOAD (which is passed
 * on in MEMRES_ADVISE_PRELOAD, for the library to put back) and variables
 * of its own, stdin, stdout and stderr as given.  While it runs the driver
 * ignores SIGINT and SIGQUIT (as system() does: the terminal sends them to
 * the program) and forwards SIGTERM and SIGHUP to it.  An exec failure is
 * reported through a close-on-exec pipe.  The child's resource usage
 * (user and system time, peak RSS, page faults) comes back from wait4. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "analysis.h"

#ifndef MEMRES_ADVISE_LIBDIR
#define MEMRES_ADVISE_LIBDIR "/usr/local/lib"
#endif

#if defined(__x86_64__) && defined(__ILP32__)
#define MULTIARCH "x86_64-linux-gnux32"
#elif defined(__x86_64__)
#define MULTIARCH "x86_64-linux-gnu"
#elif defined(__aarch64__)
#define MULTIARCH "aarch64-linux-gnu"
#elif defined(__i386__)
#define MULTIARCH "i386-linux-gnu"
#elif defined(__arm__)
#define MULTIARCH "arm-linux-gnueabihf"
#elif defined(__riscv) && __riscv_xlen == 64
#define MULTIARCH "riscv64-linux-gnu"
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define MULTIARCH "powerpc64le-linux-gnu"
#elif defined(__s390x__)
#define MULTIARCH "s390x-linux-gnu"
#else
#define MULTIARCH ""
#endif

char *mra_path_join(const char *dir, const char *rel)
{
    size_t n = strlen(dir) + strlen(rel) + 2;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%s", dir, rel);
    return p;
}

char *mra_find_library(const char *name, const char *envvar)
{
    const char *e = getenv(envvar);
    if (e && *e) {
        char *r = realpath(e, NULL);
        if (!r)
            fprintf(stderr, "memres-advise: %s=%s: %s\n", envvar, e, strerror(errno));
        return r;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            static const char *const rel[] = { "", "../lib/" MULTIARCH "/", "../lib64/", "../lib/" };
            for (size_t i = 0; i < sizeof rel / sizeof *rel; i++) {
                if (i == 1 && !*MULTIARCH)
                    continue;
                char sub[PATH_MAX];
                snprintf(sub, sizeof sub, "%s%s", rel[i], name);
                char *p = mra_path_join(exe, sub);
                if (p && access(p, R_OK) == 0) {
                    char *r = realpath(p, NULL);
                    free(p);
                    if (r)
                        return r;
                    continue;
                }
                free(p);
            }
        }
    }
    char *p = mra_path_join(MEMRES_ADVISE_LIBDIR, name);
    if (p && access(p, R_OK) == 0)
        return p;
    fprintf(stderr, "memres-advise: cannot find %s (beside memres-advise, in ../lib, or in %s); set %s\n", name,
            MEMRES_ADVISE_LIBDIR, envvar);
    free(p);
    return NULL;
}

static volatile sig_atomic_t child_pid;

/* Why LD_PRELOAD cannot reach prog's malloc (the file execvp would run),
 * or NULL: "statically linked" (an ELF file without an interpreter),
 * "set-user-ID" or "set-group-ID" (the loader ignores LD_PRELOAD for it). */
const char *mra_preload_barrier(const char *prog)
{
    char buf[PATH_MAX];
    const char *path = prog;
    if (!strchr(prog, '/')) { /* as execvp searches */
        const char *p = getenv("PATH");
        path = NULL;
        for (p = p ? p : "/usr/local/bin:/usr/bin:/bin"; *p;) {
            const char *e = strchr(p, ':');
            size_t n = e ? (size_t)(e - p) : strlen(p);
            if (n && (size_t)snprintf(buf, sizeof buf, "%.*s/%s", (int)n, p, prog) < sizeof buf &&
                access(buf, X_OK) == 0) {
                path = buf;
                break;
            }
            p += e ? n + 1 : n;
        }
        if (!path)
            return NULL;
    }
    struct stat st;
    if (stat(path, &st) != 0)
        return NULL;
    /* the loader's secure mode: the exec changes the process's IDs */
    if ((st.st_mode & S_ISUID) && st.st_uid != getuid())
        return "set-user-ID";
    if ((st.st_mode & S_ISGID) && (st.st_mode & S_IXGRP) && st.st_gid != getgid())
        return "set-group-ID";
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    Elf64_Ehdr eh;
    const char *why = NULL;
    if (pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh && memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 &&
        eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_phentsize == sizeof(Elf64_Phdr) && eh.e_phnum < 4096) {
        bool interp = false;
        for (unsigned i = 0; i < eh.e_phnum && !interp; i++) {
            Elf64_Phdr ph;
            if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + i * sizeof ph)) != (ssize_t)sizeof ph)
                break;
            interp = ph.p_type == PT_INTERP;
        }
        if (!interp)
            why = "statically linked";
    }
    close(fd);
    return why;
}

static void forward_signal(int sig)
{
    pid_t p = (pid_t)child_pid;
    if (p > 0)
        kill(p, sig);
}

static const int handled[] = { SIGINT, SIGQUIT, SIGTERM, SIGHUP };
#define NHANDLED (sizeof handled / sizeof *handled)

static void child_exec(char **argv, const struct mra_launch *l, const struct sigaction *old,
                       const sigset_t *oldmask, int errfd)
{
    for (size_t i = 0; i < NHANDLED; i++)
        sigaction(handled[i], &old[i], NULL);
    sigprocmask(SIG_SETMASK, oldmask, NULL);
    int fds[3] = { l->in_fd, l->out_fd, l->err_fd };
    for (int i = 0; i < 3; i++)
        if (fds[i] >= 0 && fds[i] != i && dup2(fds[i], i) < 0)
            _exit(126);

    int e = 0;
    if (l->preload) {
        const char *orig = getenv("LD_PRELOAD");
        char *pre;
        if (orig && *orig) {
            size_t n = strlen(l->preload) + strlen(orig) + 2;
            pre = malloc(n);
            if (pre)
                snprintf(pre, n, "%s:%s", l->preload, orig);
        } else {
            pre = strdup(l->preload);
        }
        if (orig)
            e |= setenv("MEMRES_ADVISE_PRELOAD", orig, 1);
        else
            unsetenv("MEMRES_ADVISE_PRELOAD");
        e |= pre ? setenv("LD_PRELOAD", pre, 1) : -1;
    }
    for (size_t i = 0; l->env && l->env[i][0]; i++) {
        if (l->env[i][1])
            e |= setenv(l->env[i][0], l->env[i][1], 1);
        else
            unsetenv(l->env[i][0]);
    }
    int err = ENOMEM;
    if (e == 0) {
        execvp(argv[0], argv);
        err = errno;
    }
    ssize_t w = write(errfd, &err, sizeof err);
    (void)w;
    _exit(err == ENOENT || err == ENOTDIR ? 127 : 126);
}

static double mono_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

int mra_run(char **argv, const struct mra_launch *l, struct mra_child *c)
{
    memset(c, 0, sizeof *c);
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) != 0) {
        fprintf(stderr, "memres-advise: pipe: %s\n", strerror(errno));
        return -1;
    }
    struct sigaction old[NHANDLED], ign = { .sa_handler = SIG_IGN }, fwd = { .sa_handler = forward_signal };
    sigemptyset(&ign.sa_mask);
    sigemptyset(&fwd.sa_mask);
    fwd.sa_flags = SA_RESTART;
    sigset_t block, oldmask;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGHUP);
    sigprocmask(SIG_BLOCK, &block, &oldmask);
    for (size_t i = 0; i < NHANDLED; i++)
        sigaction(handled[i], handled[i] == SIGINT || handled[i] == SIGQUIT ? &ign : &fwd, &old[i]);
    fflush(NULL);
    double t0 = mono_ns();
    pid_t pid = fork();
    if (pid == 0) {
        close(pfd[0]);
        child_exec(argv, l, old, &oldmask, pfd[1]);
    }
    int fork_errno = errno;
    close(pfd[1]);
    if (pid > 0)
        child_pid = pid;
    sigprocmask(SIG_SETMASK, &oldmask, NULL);
    if (pid < 0) {
        for (size_t i = 0; i < NHANDLED; i++)
            sigaction(handled[i], &old[i], NULL);
        close(pfd[0]);
        fprintf(stderr, "memres-advise: fork: %s\n", strerror(fork_errno));
        return -1;
    }
    int err = 0;
    ssize_t n;
    do
        n = read(pfd[0], &err, sizeof err);
    while (n < 0 && errno == EINTR);
    close(pfd[0]);
    c->exec_errno = n == (ssize_t)sizeof err ? err : 0;
    int st = 0;
    while (wait4(pid, &st, 0, &c->ru) < 0) {
        if (errno != EINTR) {
            fprintf(stderr, "memres-advise: wait4: %s\n", strerror(errno));
            st = 127 << 8;
            break;
        }
    }
    c->wall_ns = mono_ns() - t0;
    child_pid = 0;
    for (size_t i = 0; i < NHANDLED; i++)
        sigaction(handled[i], &old[i], NULL);
    c->status = st;
    return 0;
}

double mra_child_cpu_ns(const struct mra_child *c)
{
    return ((double)c->ru.ru_utime.tv_sec + (double)c->ru.ru_stime.tv_sec) * 1e9 +
           ((double)c->ru.ru_utime.tv_usec + (double)c->ru.ru_stime.tv_usec) * 1e3;
}

int mra_exit_as(int status)
{
    fflush(NULL);
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        /* no core file of the driver: the program's is the one that matters */
        struct rlimit rl = { 0, 0 };
        setrlimit(RLIMIT_CORE, &rl);
        signal(sig, SIG_DFL);
        sigset_t s;
        sigemptyset(&s);
        sigaddset(&s, sig);
        sigprocmask(SIG_UNBLOCK, &s, NULL);
        raise(sig);
        return 128 + sig;
    }
    return 1;
}

/* ---- the CPUs a run may use ---- */

void mra_cpus_get(struct mra_cpus *c)
{
    c->n = 0;
    if (sched_getaffinity(0, sizeof c->all, &c->all) != 0)
        return;
    for (unsigned i = 0; i < CPU_SETSIZE && c->n < MRA_CPUS_MAX; i++)
        if (CPU_ISSET(i, &c->all))
            c->id[c->n++] = i;
    if (c->n < 2)
        c->n = 0;
}

void mra_cpus_pin(const struct mra_cpus *c, int k)
{
    if (c->n == 0)
        return;
    if (k < 0) {
        (void)sched_setaffinity(0, sizeof c->all, &c->all);
        return;
    }
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(c->id[(unsigned)k % c->n], &one);
    (void)sched_setaffinity(0, sizeof one, &one);
}
