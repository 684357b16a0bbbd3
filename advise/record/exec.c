/* SPDX-License-Identifier: MIT */
/* advise/record/exec.c -- the exec family interposed: the profile so far
 * is written before the image is replaced, and beside it the file
 * PROFILE.exec naming what the process execs, for the driver to say so (a
 * wrapper -- a script run by env, a version manager's shim -- is profiled,
 * not the program it execs); the new program is not profiled (the
 * recorder's variables left the environment at start-up); if the exec
 * fails, the note goes, recording goes on and the profile is written
 * again at exit. */
#include <dlfcn.h>
#include <stdarg.h>

#include "record.h"

/* PROFILE.exec's path in buf */
static void note_path(char *buf, size_t cap)
{
    snprintf(buf, cap, "%s.exec", g_profile);
}

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execvpe_fn)(const char *, char *const[], char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef int (*execveat_fn)(int, const char *, char *const[], char *const[], int);

static void *real_fn(void *_Atomic *slot, const char *name)
{
    void *f = atomic_load_explicit(slot, memory_order_acquire);
    if (!f) {
        tls_guard++;
        f = dlsym(RTLD_NEXT, name);
        tls_guard--;
        atomic_store_explicit(slot, f, memory_order_release);
    }
    return f;
}

/* The profile written and what the process execs noted (what: a path or
 * file name); true when this process records (the note is its). */
static bool before_exec(const char *what)
{
    if (atomic_load_explicit(&g_state, memory_order_acquire) != ST_REC || tls_guard)
        return false;
    mrr_flush_all(false);
    char path[sizeof g_profile + 8];
    note_path(path, sizeof path);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) {
        mrr_write_all(fd, what, strlen(what));
        close(fd);
    }
    return true;
}

/* The exec failed: its note goes (errno kept). */
static void exec_failed(bool noted)
{
    if (!noted)
        return;
    int e = errno;
    char path[sizeof g_profile + 8];
    note_path(path, sizeof path);
    unlink(path);
    errno = e;
}

static void *_Atomic g_execve, *_Atomic g_execvpe, *_Atomic g_fexecve, *_Atomic g_execveat;

/* The libc function an exec hook stands in front of, the profile written
 * first and what (what) is exec'd noted (*noted); NULL with ENOSYS when
 * there is none. */
static void *exec_real(void *_Atomic *slot, const char *name, const char *what, bool *noted)
{
    void *sym = real_fn(slot, name);
    *noted = false;
    if (!sym) {
        errno = ENOSYS;
        return NULL;
    }
    *noted = before_exec(what ? what : "?");
    return sym;
}

/* Calls the exec hook's libc function of type T (found in SLOT by NAME),
 * what it execs being WHAT; returns only where the exec failed. */
#define EXEC_CALL(T, slot, name, what, ...)                   \
    do {                                                      \
        bool noted_;                                          \
        void *sym_ = exec_real(&(slot), name, what, &noted_); \
        if (!sym_)                                            \
            return -1;                                        \
        T f_;                                                 \
        memcpy(&f_, &sym_, sizeof f_);                        \
        int r_ = f_(__VA_ARGS__);                             \
        exec_failed(noted_);                                  \
        return r_;                                            \
    } while (0)

EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    EXEC_CALL(execve_fn, g_execve, "execve", path, path, argv, envp);
}

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    EXEC_CALL(execvpe_fn, g_execvpe, "execvpe", file, file, argv, envp);
}

EXPORT int execv(const char *path, char *const argv[])
{
    return execve(path, argv, environ);
}

EXPORT int execvp(const char *file, char *const argv[])
{
    return execvpe(file, argv, environ);
}

EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    EXEC_CALL(fexecve_fn, g_fexecve, "fexecve", "a program by its file descriptor", fd, argv, envp);
}

EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags)
{
    EXEC_CALL(execveat_fn, g_execveat, "execveat", path, dirfd, path, argv, envp, flags);
}

/* execl, execlp, execle: the arguments gathered into an array on the
 * stack (the kernel limits them far below what a stack holds), then the
 * array form; execle's environment follows the terminating NULL. */
#define EXEC_ARGV_STACK 256u
#define EXEC_ARGS(first, ap, argv, n)                                                     \
    size_t n = 1;                                                                         \
    va_start(ap, first);                                                                  \
    while (va_arg(ap, char *) != NULL)                                                    \
        n++;                                                                              \
    va_end(ap);                                                                           \
    char *argv_stack_[EXEC_ARGV_STACK];                                                   \
    char **argv = argv_stack_;                                                            \
    if (n >= EXEC_ARGV_STACK && !(argv = __libc_malloc((n + 1) * sizeof *argv))) {        \
        errno = E2BIG;                                                                    \
        return -1;                                                                        \
    }                                                                                     \
    argv[0] = (char *)(first);                                                            \
    va_start(ap, first);                                                                  \
    for (size_t i_ = 1; i_ <= n; i_++)                                                    \
        argv[i_] = va_arg(ap, char *)

/* the exec, then (it failed) the array freed */
static int exec_done(int r, char **argv, char **stack)
{
    if (argv != stack) {
        int e = errno;
        __libc_free(argv);
        errno = e;
    }
    return r;
}

EXPORT int execl(const char *path, const char *arg, ...)
{
    va_list ap;
    EXEC_ARGS(arg, ap, argv, n);
    va_end(ap);
    return exec_done(execve(path, argv, environ), argv, argv_stack_);
}

EXPORT int execlp(const char *file, const char *arg, ...)
{
    va_list ap;
    EXEC_ARGS(arg, ap, argv, n);
    va_end(ap);
    return exec_done(execvpe(file, argv, environ), argv, argv_stack_);
}

EXPORT int execle(const char *path, const char *arg, ...)
{
    va_list ap;
    EXEC_ARGS(arg, ap, argv, n);
    char *const *envp = va_arg(ap, char *const *);
    va_end(ap);
    return exec_done(execve(path, argv, envp), argv, argv_stack_);
}
