/* SPDX-License-Identifier: MIT */
/* bench/run.c -- running one row: every run in a fresh process.
 *
 * The parent forks and execs this very program with the hidden option
 * --run SCENARIO VARIANT --fd N (and the row's --depth, --threads,
 * --timeout, --quick).  The child runs the workload once and writes one
 * run_msg to the pipe N; the parent reads it and takes the child's rusage
 * from wait4.  A BENCH_MALLOC row under jemalloc, mimalloc or tcmalloc gets
 * LD_PRELOAD of that .so; the child checks in /proc/self/maps that it took
 * effect and then drops LD_PRELOAD so programs a variant spawns do not get it.
 *
 * What one run measures:
 *   wall time     CLOCK_MONOTONIC in the child, around run() (or from the
 *                 scenario's bench_timing_start(), after untimed setup; the
 *                 span is kept in bench.c);
 *   instructions  perf_event_open in the child over the same span, user
 *                 space, threads and spawned programs included; "n/a" where
 *                 the machine has no counters;
 *   user, sys, peak RSS, minor faults  of the whole child (wait4's rusage:
 *                 program start included, a few hundred faults and ~2 MiB);
 *   output text, checksum, upstream and requested bytes  from the workload.
 * A child that outlives --timeout dies of SIGALRM (alarm in the child).
 * A row is its --warmup discarded runs and its --runs timed runs (main.c
 * interleaves the rows of a scenario: round k runs every row once); every
 * run must print what the first printed; the row keeps the median [min,
 * max] and run k's figures at index k.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

extern char **environ;

#define MSG_MAGIC 0x6d726231u /* "mrb1" */

/* What the child sends back over the pipe. */
typedef struct run_msg {
    uint32_t magic;
    int32_t status;          /* run()'s return value */
    uint64_t wall_ns;
    int64_t instructions;    /* -1: not available */
    uint64_t checksum;
    uint64_t upstream_bytes, requested_bytes;
    uint32_t text_len, note_len;
    char error[256];
    char text[BENCH_TEXT_MAX];
    char note[BENCH_NOTE_MAX];
} run_msg;

/* ------------------------------------------------------------------------ */
/* The child: one run. */

static bool maps_contain(const char *soname)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (f == NULL)
        return true; /* cannot tell: trust the loader */
    char line[1024];
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, soname) != NULL;
    fclose(f);
    return found;
}

static void write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            _exit(4);
        p += n;
        len -= (size_t)n;
    }
}

/* Runs v once, timed and counted, into msg. */
static void measure(const bench_variant *v, const bench_args *args, run_msg *msg)
{
    static bench_out out;
    timing_begin();
    msg->status = v->run(args, &out);
    msg->wall_ns = timing_end(&msg->instructions);
    msg->checksum = out.checksum;
    msg->upstream_bytes = out.upstream_bytes;
    msg->requested_bytes = out.requested_bytes;
    msg->text_len = (uint32_t)(out.text_len < BENCH_TEXT_MAX ? out.text_len : BENCH_TEXT_MAX - 1);
    memcpy(msg->text, out.text, msg->text_len);
    msg->note_len = (uint32_t)(out.note_len < BENCH_NOTE_MAX ? out.note_len : BENCH_NOTE_MAX - 1);
    memcpy(msg->note, out.note, msg->note_len);
    if (msg->status != 0)
        snprintf(msg->error, sizeof msg->error, "the workload returned %d", (int)msg->status);
}

int child_main(const options *o)
{
    static run_msg msg;
    msg.magic = MSG_MAGIC;
    msg.instructions = -1;
    msg.status = -1;
    if (o->run_fd < 0)
        die("--run needs --fd");
    /* The workload's own prints must not land in the table. */
    dup2(STDERR_FILENO, STDOUT_FILENO);
    alarm((unsigned)o->timeout);

    const bench_variant *v = registry_find(o->run_scenario, o->run_variant);
    const char *expect = getenv("MEMRES_BENCH_EXPECT_LIB");
    if (v == NULL || v->run == NULL) {
        snprintf(msg.error, sizeof msg.error, "no variant '%s' in scenario '%s'", o->run_variant,
                 o->run_scenario);
    } else if (expect && *expect && !maps_contain(expect)) {
        snprintf(msg.error, sizeof msg.error, "LD_PRELOAD of %s did not take effect", expect);
    } else {
        unsetenv("MEMRES_BENCH_EXPECT_LIB");
        unsetenv("LD_PRELOAD"); /* not into programs a variant spawns */
        measure(v, &o->args, &msg);
    }
    write_all(o->run_fd, &msg, sizeof msg);
    close(o->run_fd);
    return msg.status == 0 ? 0 : 1;
}

/* ------------------------------------------------------------------------ */
/* The parent: one run in a child process. */

static char self_exe[4096];
static bool progress_tty;

void run_init(void)
{
    ssize_t n = readlink("/proc/self/exe", self_exe, sizeof self_exe - 1);
    if (n <= 0)
        die("cannot find this program (/proc/self/exe): %s", strerror(errno));
    self_exe[n] = '\0';
    progress_tty = isatty(STDERR_FILENO);
    signal(SIGPIPE, SIG_IGN);
}

static bool is_preload_var(const char *assignment)
{
    return strncmp(assignment, "LD_PRELOAD=", 11) == 0 || strncmp(assignment, "MEMRES_BENCH_EXPECT_LIB=", 24) == 0;
}

static char *env_assign(const char *name, const char *value)
{
    size_t n = strlen(name) + strlen(value) + 2;
    char *s = xcalloc(1, n);
    snprintf(s, n, "%s=%s", name, value);
    return s;
}

/* The child's environment: ours without LD_PRELOAD, plus the preload. */
static char **child_env(const malloc_impl *m)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = xcalloc(n + 3, sizeof *env);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!is_preload_var(environ[i]))
            env[k++] = environ[i];
    if (m->soname) {
        env[k++] = env_assign("LD_PRELOAD", m->path);
        env[k++] = env_assign("MEMRES_BENCH_EXPECT_LIB", m->soname);
    }
    env[k] = NULL;
    return env;
}

static void child_env_free(char **env)
{
    for (char **e = env; *e; e++)
        if (is_preload_var(*e))
            free(*e);
    free(env);
}

/* The child's command line; the strings live in c. */
typedef struct child_cmd {
    char fd[16], depth[16], threads[16], timeout[16];
    char *argv[16];
} child_cmd;

static void child_cmd_make(child_cmd *c, const options *o, const row *r, int fd)
{
    snprintf(c->fd, sizeof c->fd, "%d", fd);
    snprintf(c->depth, sizeof c->depth, "%d", o->args.depth);
    snprintf(c->threads, sizeof c->threads, "%d", o->args.threads);
    snprintf(c->timeout, sizeof c->timeout, "%d", o->timeout);
    char **argv = c->argv;
    int a = 0;
    argv[a++] = self_exe;
    argv[a++] = (char *)"--run";
    argv[a++] = (char *)r->v->scenario;
    argv[a++] = (char *)r->v->name;
    argv[a++] = (char *)"--fd";
    argv[a++] = c->fd;
    argv[a++] = (char *)"--depth";
    argv[a++] = c->depth;
    argv[a++] = (char *)"--threads";
    argv[a++] = c->threads;
    argv[a++] = (char *)"--timeout";
    argv[a++] = c->timeout;
    if (o->args.quick)
        argv[a++] = (char *)"--quick";
    if (o->args.persistent)
        argv[a++] = (char *)"--persistent";
    argv[a] = NULL;
}

/* Reads up to size bytes, until EOF; returns how many it got. */
static size_t read_full(int fd, void *buf, size_t size)
{
    size_t got = 0;
    while (got < size) {
        ssize_t n = read(fd, (char *)buf + got, size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    return got;
}

/* Judges a finished child from what it sent (got bytes of msg) and its exit
 * status.  Returns 0, or -1 with r->why set. */
static int child_result(row *r, run_msg *msg, size_t got, int status)
{
    if (got != sizeof *msg || msg->magic != MSG_MAGIC) {
        if (WIFSIGNALED(status))
            snprintf(r->why, sizeof r->why, "the run died of signal %d (%s)%s", WTERMSIG(status),
                     strsignal(WTERMSIG(status)), WTERMSIG(status) == SIGALRM ? ": --timeout reached" : "");
        else
            snprintf(r->why, sizeof r->why, "the run exited with status %d and no result",
                     WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        return -1;
    }
    msg->error[sizeof msg->error - 1] = '\0';
    if (msg->status != 0 || msg->error[0]) {
        snprintf(r->why, sizeof r->why, "%s", msg->error[0] ? msg->error : "the workload failed");
        return -1;
    }
    if (msg->text_len >= BENCH_TEXT_MAX)
        msg->text_len = BENCH_TEXT_MAX - 1;
    msg->text[msg->text_len] = '\0';
    if (msg->note_len >= BENCH_NOTE_MAX)
        msg->note_len = BENCH_NOTE_MAX - 1;
    msg->note[msg->note_len] = '\0';
    return 0;
}

/* One run of r in a fresh process.  Returns 0 and fills the measurements,
 * or -1 with r->why set. */
static int run_child(const options *o, row *r, run_msg *msg, struct rusage *ru)
{
    int p[2];
    if (pipe(p) != 0)
        die("pipe: %s", strerror(errno));
    fcntl(p[0], F_SETFD, FD_CLOEXEC);
    child_cmd cmd;
    child_cmd_make(&cmd, o, r, p[1]);
    char **env = child_env(&mallocs[r->malloc_idx]);

    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        die("fork: %s", strerror(errno));
    if (pid == 0) {
        execve(self_exe, cmd.argv, env);
        fprintf(stderr, PROG ": exec %s: %s\n", self_exe, strerror(errno));
        _exit(127);
    }
    close(p[1]);
    child_env_free(env);

    memset(msg, 0, sizeof *msg);
    size_t got = read_full(p[0], msg, sizeof *msg);
    close(p[0]);
    int status;
    while (wait4(pid, &status, 0, ru) < 0) {
        if (errno != EINTR)
            die("wait4: %s", strerror(errno));
    }
    return child_result(r, msg, got, status);
}

/* ------------------------------------------------------------------------ */
/* The parent: progress, the runs of a row, and their summary. */

__attribute__((format(printf, 1, 2))) static void progress(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (progress_tty)
        fputs("\r\033[K", stderr);
    vfprintf(stderr, fmt, ap);
    if (!progress_tty)
        fputc('\n', stderr);
    va_end(ap);
    fflush(stderr);
}

void progress_end(void)
{
    if (progress_tty)
        fputs("\r\033[K", stderr);
}

static double tv_sec(struct timeval tv)
{
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

static void summarize(row *r)
{
    r->med = median_of(r->wall, r->nruns);
    r->min = r->max = r->nruns ? r->wall[0] : NAN;
    for (int i = 1; i < r->nruns; i++) {
        if (r->wall[i] < r->min)
            r->min = r->wall[i];
        if (r->wall[i] > r->max)
            r->max = r->wall[i];
    }
    r->med_user = median_of(r->user, r->nruns);
    r->med_sys = median_of(r->sys, r->nruns);
    r->med_rss = median_of(r->rss_kib, r->nruns);
    r->med_flt = median_of(r->minflt, r->nruns);
    r->med_instr = median_of(r->instr, r->nruns);
}

/* Takes run k's result into r: its output must be the first run's; a
 * timed (not warm-up) run adds its measurements. */
static void record(row *r, int k, bool warm, const run_msg *msg, const struct rusage *ru)
{
    if (r->text == NULL) {
        r->text = xstrdup(msg->text);
        r->checksum = msg->checksum;
    } else if (r->checksum != msg->checksum || strcmp(r->text, msg->text) != 0) {
        r->mismatch = true;
        fprintf(stderr, PROG ": ERROR: %s / %s (%s): run %d's output differs from the first run's\n",
                r->v->scenario, r->v->name, mallocs[r->malloc_idx].name, k + 1);
    }
    r->upstream = msg->upstream_bytes;
    r->requested = msg->requested_bytes;
    free(r->note);
    r->note = msg->note[0] ? xstrdup(msg->note) : NULL;
    if (warm)
        return;
    int j = r->nruns++;
    r->wall[j] = (double)msg->wall_ns / 1e9;
    r->user[j] = tv_sec(ru->ru_utime);
    r->sys[j] = tv_sec(ru->ru_stime);
    r->rss_kib[j] = (double)ru->ru_maxrss;
    r->minflt[j] = (double)ru->ru_minflt;
    r->instr[j] = msg->instructions >= 0 ? (double)msg->instructions : -1;
}

/* Run k of row r (a warm-up when k < o->warmup); false when it failed
 * (r->failed, r->why). */
bool run_row_once(const options *o, row *r, int index, int nrows, int k)
{
    static run_msg msg;
    if (r->failed)
        return false;
    bool warm = k < o->warmup;
    if (progress_tty) /* a log gets one line per row, at its end */
        progress("[%d/%d] %s: %s (%s) %s %d/%d", index + 1, nrows, r->v->scenario, r->v->name,
                 mallocs[r->malloc_idx].name, warm ? "warm-up" : "round", warm ? k + 1 : k - o->warmup + 1,
                 warm ? o->warmup : o->runs);
    struct rusage ru;
    if (run_child(o, r, &msg, &ru) != 0) {
        r->failed = true;
        return false;
    }
    record(r, k, warm, &msg, &ru);
    return true;
}

void run_row_done(row *r, int index, int nrows)
{
    const char *mname = mallocs[r->malloc_idx].name;
    summarize(r);
    if (r->failed) {
        progress_end();
        fprintf(stderr, PROG ": ERROR: %s / %s (%s): %s\n", r->v->scenario, r->v->name, mname, r->why);
    } else if (!progress_tty) {
        char t[32];
        progress("[%d/%d] %s: %s (%s): %s", index + 1, nrows, r->v->scenario, r->v->name, mname,
                 fmt_time(t, sizeof t, r->med));
    }
}
