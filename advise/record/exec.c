/* SPDX-License-Identifier: MIT */
/* advise/record/exec.c -- the exec family interposed: the profile so far
 * is written before the image is replaced; the new program is not
 * profiled (the recorder's variables left the environment at start-up);
 * if the exec fails, recording goes on and the profile is written again
 * at exit. */
#include <dlfcn.h>
#include <stdarg.h>

#include "record.h"

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

static void before_exec(void)
{
    if (atomic_load_explicit(&g_state, memory_order_acquire) == ST_REC && !tls_guard)
        mrr_flush_all(false);
}

static void *_Atomic g_execve, *_Atomic g_execvpe, *_Atomic g_fexecve, *_Atomic g_execveat;

/* The libc function an exec hook stands in front of, the profile written
 * first; NULL with ENOSYS when there is none. */
static void *exec_real(void *_Atomic *slot, const char *name)
{
    void *sym = real_fn(slot, name);
    if (!sym) {
        errno = ENOSYS;
        return NULL;
    }
    before_exec();
    return sym;
}

/* Calls the exec hook's libc function of type T (found in SLOT by NAME). */
#define EXEC_CALL(T, slot, name, ...)                 \
    do {                                              \
        void *sym_ = exec_real(&(slot), name);        \
        if (!sym_)                                    \
            return -1;                                \
        T f_;                                         \
        memcpy(&f_, &sym_, sizeof f_);                \
        return f_(__VA_ARGS__);                       \
    } while (0)

EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    EXEC_CALL(execve_fn, g_execve, "execve", path, argv, envp);
}

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    EXEC_CALL(execvpe_fn, g_execvpe, "execvpe", file, argv, envp);
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
    EXEC_CALL(fexecve_fn, g_fexecve, "fexecve", fd, argv, envp);
}

EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags)
{
    EXEC_CALL(execveat_fn, g_execveat, "execveat", dirfd, path, argv, envp, flags);
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
