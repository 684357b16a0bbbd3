/* bench/main.c -- memres-bench, the benchmark harness.
 *
 * What it does.  Every scenario (a workload, bench/sc_*.c) has variants (one
 * per way of allocating).  The harness runs each (scenario, variant, malloc
 * implementation) row several times, each run in a fresh child process: a
 * fork and exec of this very program with the hidden option --run, which runs
 * the workload once and sends its result back over a pipe.  BENCH_MALLOC
 * variants get one row per malloc implementation found (glibc, and jemalloc,
 * mimalloc, tcmalloc by LD_PRELOAD of their Debian .so, checked in the child's
 * /proc/self/maps); every other kind runs once, with glibc.
 *
 * What it measures, per run:
 *   wall time     CLOCK_MONOTONIC in the child, around run() (or from the
 *                 scenario's bench_timing_start(), after untimed setup);
 *   instructions  perf_event_open in the child over the same span, user
 *                 space, threads and spawned programs included; "n/a" where
 *                 the machine has no counters;
 *   user, sys, peak RSS, minor faults  of the whole child (wait4's rusage:
 *                 program start included, a few hundred faults and ~2 MiB);
 *   output text, checksum, upstream and requested bytes  from the workload.
 * No in-process warm-up: each run is a cold process, as a program meets its
 * allocator (first-touch page faults included).  --warmup N discarded runs
 * per row go first (default 1 when --runs >= 3; 0 in --quick).  Rows show
 * the median of the runs with min and max, and the ratio of the median to the
 * glibc row of the scenario's first malloc variant and to the best peer (the
 * fastest malloc, peer-library or external row).
 *
 * The check.  Every row's output text and checksum must equal those of the
 * scenario's first row, and every run of a row those of its first run; a
 * mismatch or a failed run is an error and the exit status is 1.  That is
 * what CI runs (--quick); timing is never a pass/fail test.
 *
 * Output: progress on stderr; the machine, compiler and flags, then a table
 * per scenario on stdout; --json FILE; --plot FILE.svg (a hand-written SVG
 * bar chart per scenario).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "bench_config.h"
#include "memres/memres.h"

extern char **environ;

#define PROG "memres-bench"

static void die(const char *fmt, ...) MR_PRINTF(1, 2);
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs(PROG ": ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (p == NULL)
        die("out of memory");
    return p;
}

static char *xstrdup(const char *s)
{
    char *p = strdup(s);
    if (p == NULL)
        die("out of memory");
    return p;
}

/* ------------------------------------------------------------------------ */
/* The registry: the scenario tables, weakly, so a missing file is no error. */

extern const bench_variant bench_binary_trees[] __attribute__((weak));
extern const bench_variant bench_list[] __attribute__((weak));
extern const bench_variant bench_git_objects[] __attribute__((weak));
extern const bench_variant bench_churn[] __attribute__((weak));
extern const bench_variant bench_strings[] __attribute__((weak));
extern const bench_variant bench_request[] __attribute__((weak));
const char *bench_cxx_version(void) __attribute__((weak));

#define MAX_TABLES 64
#define MAX_SCENARIOS 32
#define MAX_VARIANTS 64

static const bench_variant *registered[MAX_TABLES];
static int n_registered;

void bench_register_table(const bench_variant *table)
{
    if (table != NULL && n_registered < MAX_TABLES)
        registered[n_registered++] = table;
}

typedef struct scenario {
    const char *name;
    const bench_variant *v[MAX_VARIANTS];
    int nv;
} scenario;

static scenario scenarios[MAX_SCENARIOS];
static int n_scenarios;

static void registry_add(const bench_variant *v)
{
    scenario *s = NULL;
    for (int i = 0; i < n_scenarios; i++)
        if (strcmp(scenarios[i].name, v->scenario) == 0)
            s = &scenarios[i];
    if (s == NULL) {
        if (n_scenarios == MAX_SCENARIOS)
            die("too many scenarios");
        s = &scenarios[n_scenarios++];
        s->name = v->scenario;
    }
    if (s->nv == MAX_VARIANTS)
        die("too many variants in %s", s->name);
    s->v[s->nv++] = v;
}

static void registry_build(void)
{
    const bench_variant *volatile known[] = {
        bench_binary_trees, bench_list, bench_git_objects, bench_churn, bench_strings, bench_request,
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0] + (size_t)n_registered; i++) {
        const bench_variant *t = i < sizeof known / sizeof known[0]
                                     ? known[i]
                                     : registered[i - sizeof known / sizeof known[0]];
        if (t == NULL)
            continue;
        for (; t->name != NULL; t++)
            if (t->scenario != NULL)
                registry_add(t);
    }
}

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

static const char *variant_unavailable(const bench_variant *v)
{
    if (v->run == NULL)
        return "not built in";
    return v->unavailable ? v->unavailable() : NULL;
}

static const char *kind_name(enum bench_kind k)
{
    switch (k) {
    case BENCH_MEMRES: return "memres";
    case BENCH_MALLOC: return "malloc";
    case BENCH_PEER: return "peer";
    case BENCH_LIMIT: return "limit";
    case BENCH_EXTERNAL: return "external";
    }
    return "?";
}

/* ------------------------------------------------------------------------ */
/* Malloc implementations: glibc, and Debian's .so files for LD_PRELOAD. */

typedef struct malloc_impl {
    const char *name;
    const char *soname;  /* NULL: glibc, built in */
    const char *package; /* Debian 12 package */
    char path[512];      /* found here; "" when not */
} malloc_impl;

static malloc_impl mallocs[] = {
    { "glibc", NULL, NULL, "" },
    { "jemalloc", "libjemalloc.so.2", "libjemalloc2", "" },
    { "mimalloc", "libmimalloc.so.2", "libmimalloc2.0", "" },
    { "tcmalloc", "libtcmalloc_minimal.so.4", "libtcmalloc-minimal4", "" },
};
#define N_MALLOCS ((int)(sizeof mallocs / sizeof mallocs[0]))

#if defined(__x86_64__)
#  define MULTIARCH "x86_64-linux-gnu"
#elif defined(__aarch64__)
#  define MULTIARCH "aarch64-linux-gnu"
#else
#  define MULTIARCH "unknown"
#endif

static void mallocs_find(void)
{
    static const char *const dirs[] = {
        "/usr/lib/" MULTIARCH, "/lib/" MULTIARCH, "/usr/lib64", "/usr/lib", "/usr/local/lib",
    };
    for (int i = 0; i < N_MALLOCS; i++) {
        malloc_impl *m = &mallocs[i];
        if (m->soname == NULL) {
            snprintf(m->path, sizeof m->path, "(built in)");
            continue;
        }
        for (size_t d = 0; d < sizeof dirs / sizeof dirs[0] && m->path[0] == '\0'; d++) {
            char p[512];
            snprintf(p, sizeof p, "%s/%s", dirs[d], m->soname);
            if (access(p, R_OK) == 0)
                snprintf(m->path, sizeof m->path, "%s", p);
        }
    }
}

static int malloc_by_name(const char *name)
{
    for (int i = 0; i < N_MALLOCS; i++)
        if (strcmp(mallocs[i].name, name) == 0)
            return i;
    return -1;
}

/* ------------------------------------------------------------------------ */
/* Options. */

#define MAX_FILTERS 32

typedef struct options {
    bench_args args;
    int runs, warmup, timeout;
    bool runs_set, warmup_set, depth_set;
    const char *scenario[MAX_FILTERS];
    int n_scenario;
    const char *variant[MAX_FILTERS];
    int n_variant;
    const char *malloc_filter[MAX_FILTERS];
    int n_malloc;
    const char *json, *plot;
    bool list;
    /* --run (the child) */
    const char *run_scenario, *run_variant;
    int run_fd;
} options;

static void usage(FILE *f)
{
    fputs("usage: " PROG " [options]\n"
          "Runs every scenario x variant x malloc implementation in fresh processes and\n"
          "prints a table of median wall time [min, max], user/sys time, peak RSS, minor\n"
          "faults, instructions, bytes held vs requested, and ratios.  Every variant's\n"
          "output must equal its scenario's first: a mismatch exits 1.\n"
          "\n"
          "  --quick            small sizes, 1 run, no warm-up (what CI runs)\n"
          "  --runs N           timed runs per row (default 5; --quick: 1)\n"
          "  --warmup N         discarded runs per row first (default 1; 0 when --runs < 3\n"
          "                     or --quick)\n"
          "  --scenario NAME    only this scenario (repeatable)\n"
          "  --variant TEXT     only variants whose name contains TEXT (repeatable)\n"
          "  --malloc NAME      only these malloc implementations for malloc variants\n"
          "                     (glibc, jemalloc, mimalloc, tcmalloc; repeatable)\n"
          "  --depth N          binary-trees depth (default 21; --quick: 12)\n"
          "  --threads N        threads for the threaded variants (default 1)\n"
          "  --timeout S        seconds one run may take (default 900)\n"
          "  --json FILE        write all results as JSON\n"
          "  --plot FILE.svg    write an SVG bar chart per scenario\n"
          "  --list             list scenarios, variants and malloc implementations\n"
          "  --help\n",
          f);
}

static int parse_int(const char *opt, const char *s, int lo, int hi)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end != '\0' || v < lo || v > hi)
        die("%s: expected an integer in [%d, %d], got '%s'", opt, lo, hi, s);
    return (int)v;
}

static void parse_options(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    o->args.depth = 21;
    o->args.threads = 1;
    o->runs = 5;
    o->warmup = 1;
    o->timeout = 900;
    o->run_fd = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = NULL;
        char name[64];
        const char *eq = strchr(a, '=');
        if (strncmp(a, "--", 2) == 0 && eq && (size_t)(eq - a) < sizeof name) {
            memcpy(name, a, (size_t)(eq - a));
            name[eq - a] = '\0';
            val = eq + 1;
            a = name;
        }
#define NEEDS_VALUE()                                                   \
    do {                                                                \
        if (val == NULL) {                                              \
            if (i + 1 >= argc)                                          \
                die("%s needs a value (see --help)", a);                \
            val = argv[++i];                                            \
        }                                                               \
    } while (0)
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            exit(0);
        } else if (strcmp(a, "--quick") == 0) {
            o->args.quick = true;
        } else if (strcmp(a, "--list") == 0) {
            o->list = true;
        } else if (strcmp(a, "--runs") == 0) {
            NEEDS_VALUE();
            o->runs = parse_int(a, val, 1, 1000);
            o->runs_set = true;
        } else if (strcmp(a, "--warmup") == 0) {
            NEEDS_VALUE();
            o->warmup = parse_int(a, val, 0, 100);
            o->warmup_set = true;
        } else if (strcmp(a, "--depth") == 0) {
            NEEDS_VALUE();
            o->args.depth = parse_int(a, val, 1, 30);
            o->depth_set = true;
        } else if (strcmp(a, "--threads") == 0) {
            NEEDS_VALUE();
            o->args.threads = parse_int(a, val, 1, 256);
        } else if (strcmp(a, "--timeout") == 0) {
            NEEDS_VALUE();
            o->timeout = parse_int(a, val, 1, 1000000);
        } else if (strcmp(a, "--scenario") == 0) {
            NEEDS_VALUE();
            if (o->n_scenario == MAX_FILTERS)
                die("too many --scenario");
            o->scenario[o->n_scenario++] = val;
        } else if (strcmp(a, "--variant") == 0) {
            NEEDS_VALUE();
            if (o->n_variant == MAX_FILTERS)
                die("too many --variant");
            o->variant[o->n_variant++] = val;
        } else if (strcmp(a, "--malloc") == 0) {
            NEEDS_VALUE();
            if (malloc_by_name(val) < 0)
                die("--malloc: unknown implementation '%s' (glibc, jemalloc, mimalloc, tcmalloc)", val);
            if (o->n_malloc == MAX_FILTERS)
                die("too many --malloc");
            o->malloc_filter[o->n_malloc++] = val;
        } else if (strcmp(a, "--json") == 0) {
            NEEDS_VALUE();
            o->json = val;
        } else if (strcmp(a, "--plot") == 0) {
            NEEDS_VALUE();
            o->plot = val;
        } else if (strcmp(a, "--run") == 0) { /* hidden: the child */
            if (i + 2 >= argc)
                die("--run needs SCENARIO VARIANT");
            o->run_scenario = argv[++i];
            o->run_variant = argv[++i];
        } else if (strcmp(a, "--fd") == 0) { /* hidden: the child's result pipe */
            NEEDS_VALUE();
            o->run_fd = parse_int(a, val, 0, 1 << 20);
        } else {
            fprintf(stderr, PROG ": unknown option '%s'\n", argv[i]);
            usage(stderr);
            exit(2);
        }
#undef NEEDS_VALUE
    }
    if (o->args.quick) {
        if (!o->runs_set)
            o->runs = 1;
        if (!o->depth_set)
            o->args.depth = 12;
        if (!o->warmup_set)
            o->warmup = 0;
    }
    if (!o->warmup_set && o->runs < 3)
        o->warmup = 0;
}

static bool contains_ci(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++)
        if (strncasecmp(hay, needle, n) == 0)
            return true;
    return n == 0;
}

static bool scenario_selected(const options *o, const char *name)
{
    if (o->n_scenario == 0)
        return true;
    for (int i = 0; i < o->n_scenario; i++)
        if (strcmp(o->scenario[i], name) == 0)
            return true;
    return false;
}

static bool variant_selected(const options *o, const char *name)
{
    if (o->n_variant == 0)
        return true;
    for (int i = 0; i < o->n_variant; i++)
        if (contains_ci(name, o->variant[i]))
            return true;
    return false;
}

static bool malloc_selected(const options *o, int m)
{
    if (o->n_malloc == 0)
        return true;
    for (int i = 0; i < o->n_malloc; i++)
        if (strcmp(o->malloc_filter[i], mallocs[m].name) == 0)
            return true;
    return false;
}

/* ------------------------------------------------------------------------ */
/* The child: runs one variant once and reports over the pipe. */

#define MSG_MAGIC 0x6d726231u /* "mrb1" */

typedef struct run_msg {
    uint32_t magic;
    int32_t status;          /* run()'s return value */
    uint64_t wall_ns;
    int64_t instructions;    /* -1: not available */
    uint64_t checksum;
    uint64_t upstream_bytes, requested_bytes;
    uint32_t text_len;
    char error[256];
    char text[BENCH_TEXT_MAX];
} run_msg;

static struct timespec t_start;
static int perf_fd = -1;

static uint64_t ns_between(const struct timespec *a, const struct timespec *b)
{
    return (uint64_t)((b->tv_sec - a->tv_sec) * 1000000000LL + (b->tv_nsec - a->tv_nsec));
}

void bench_timing_start(void)
{
    if (perf_fd >= 0)
        ioctl(perf_fd, PERF_EVENT_IOC_RESET, 0);
    clock_gettime(CLOCK_MONOTONIC, &t_start);
}

void bench_printf(bench_out *o, const char *fmt, ...)
{
    if (o->text_len >= BENCH_TEXT_MAX - 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(o->text + o->text_len, BENCH_TEXT_MAX - o->text_len, fmt, ap);
    va_end(ap);
    if (n > 0) {
        o->text_len += (size_t)n;
        if (o->text_len > BENCH_TEXT_MAX - 1)
            o->text_len = BENCH_TEXT_MAX - 1;
    }
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
    char buf[4096];
    for (;;) {
        ssize_t n = read(p[0], buf, sizeof buf);
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

static int perf_open(void)
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

static int child_main(const options *o)
{
    static run_msg msg;
    static bench_out out;
    msg.magic = MSG_MAGIC;
    msg.instructions = -1;
    msg.status = -1;
    if (o->run_fd < 0)
        die("--run needs --fd");
    /* The workload's own prints must not land in the table. */
    dup2(STDERR_FILENO, STDOUT_FILENO);
    alarm((unsigned)o->timeout);

    const bench_variant *v = NULL;
    for (int i = 0; i < n_scenarios && v == NULL; i++)
        if (strcmp(scenarios[i].name, o->run_scenario) == 0)
            for (int j = 0; j < scenarios[i].nv; j++)
                if (strcmp(scenarios[i].v[j]->name, o->run_variant) == 0)
                    v = scenarios[i].v[j];
    const char *expect = getenv("MEMRES_BENCH_EXPECT_LIB");
    if (v == NULL || v->run == NULL) {
        snprintf(msg.error, sizeof msg.error, "no variant '%s' in scenario '%s'", o->run_variant,
                 o->run_scenario);
    } else if (expect && *expect && !maps_contain(expect)) {
        snprintf(msg.error, sizeof msg.error, "LD_PRELOAD of %s did not take effect", expect);
    } else {
        unsetenv("MEMRES_BENCH_EXPECT_LIB");
        unsetenv("LD_PRELOAD"); /* not into programs a variant spawns */
        perf_fd = perf_open();
        struct timespec t1;
        if (perf_fd >= 0)
            ioctl(perf_fd, PERF_EVENT_IOC_ENABLE, 0);
        clock_gettime(CLOCK_MONOTONIC, &t_start);
        msg.status = v->run(&o->args, &out);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (perf_fd >= 0) {
            uint64_t count = 0;
            ioctl(perf_fd, PERF_EVENT_IOC_DISABLE, 0);
            if (read(perf_fd, &count, sizeof count) == (ssize_t)sizeof count && count > 0)
                msg.instructions = (int64_t)count;
        }
        msg.wall_ns = ns_between(&t_start, &t1);
        msg.checksum = out.checksum;
        msg.upstream_bytes = out.upstream_bytes;
        msg.requested_bytes = out.requested_bytes;
        msg.text_len = (uint32_t)(out.text_len < BENCH_TEXT_MAX ? out.text_len : BENCH_TEXT_MAX - 1);
        memcpy(msg.text, out.text, msg.text_len);
        if (msg.status != 0)
            snprintf(msg.error, sizeof msg.error, "the workload returned %d", (int)msg.status);
    }
    write_all(o->run_fd, &msg, sizeof msg);
    close(o->run_fd);
    return msg.status == 0 ? 0 : 1;
}

/* ------------------------------------------------------------------------ */
/* The parent: rows, runs, statistics. */

typedef struct row {
    const bench_variant *v;
    int scen;          /* index in scenarios[] */
    int malloc_idx;
    int threads;
    int nruns;         /* timed runs done */
    double *wall, *user, *sys;
    double *rss_kib, *minflt, *instr;
    bool failed, mismatch;
    char why[320];
    uint64_t checksum, upstream, requested;
    char *text;
    /* summaries */
    double med, min, max, med_user, med_sys, med_rss, med_flt, med_instr;
    double x_glibc, x_peer; /* NAN: none */
} row;

static char self_exe[4096];

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
        if (strncmp(environ[i], "LD_PRELOAD=", 11) != 0 && strncmp(environ[i], "MEMRES_BENCH_EXPECT_LIB=", 24) != 0)
            env[k++] = environ[i];
    if (m->soname) {
        env[k++] = env_assign("LD_PRELOAD", m->path);
        env[k++] = env_assign("MEMRES_BENCH_EXPECT_LIB", m->soname);
    }
    env[k] = NULL;
    return env;
}

static double tv_sec(struct timeval tv)
{
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

/* One run of r in a fresh process.  Returns 0 and fills the measurements,
 * or -1 with r->why set. */
static int run_child(const options *o, row *r, run_msg *msg, struct rusage *ru)
{
    int p[2];
    if (pipe(p) != 0)
        die("pipe: %s", strerror(errno));
    fcntl(p[0], F_SETFD, FD_CLOEXEC);
    char fd[16], depth[16], threads[16], timeout[16];
    snprintf(fd, sizeof fd, "%d", p[1]);
    snprintf(depth, sizeof depth, "%d", o->args.depth);
    snprintf(threads, sizeof threads, "%d", o->args.threads);
    snprintf(timeout, sizeof timeout, "%d", o->timeout);
    char *argv[16];
    int a = 0;
    argv[a++] = self_exe;
    argv[a++] = (char *)"--run";
    argv[a++] = (char *)r->v->scenario;
    argv[a++] = (char *)r->v->name;
    argv[a++] = (char *)"--fd";
    argv[a++] = fd;
    argv[a++] = (char *)"--depth";
    argv[a++] = depth;
    argv[a++] = (char *)"--threads";
    argv[a++] = threads;
    argv[a++] = (char *)"--timeout";
    argv[a++] = timeout;
    if (o->args.quick)
        argv[a++] = (char *)"--quick";
    argv[a] = NULL;
    char **env = child_env(&mallocs[r->malloc_idx]);

    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        die("fork: %s", strerror(errno));
    if (pid == 0) {
        execve(self_exe, argv, env);
        fprintf(stderr, PROG ": exec %s: %s\n", self_exe, strerror(errno));
        _exit(127);
    }
    close(p[1]);
    for (char **e = env; *e; e++)
        if (strncmp(*e, "LD_PRELOAD=", 11) == 0 || strncmp(*e, "MEMRES_BENCH_EXPECT_LIB=", 24) == 0)
            free(*e);
    free(env);

    memset(msg, 0, sizeof *msg);
    size_t got = 0;
    for (;;) {
        ssize_t n = read(p[0], (char *)msg + got, sizeof *msg - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
        if (got == sizeof *msg)
            break;
    }
    close(p[0]);
    int status;
    while (wait4(pid, &status, 0, ru) < 0) {
        if (errno != EINTR)
            die("wait4: %s", strerror(errno));
    }
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
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(const double *v, int n)
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

/* ------------------------------------------------------------------------ */
/* Formatting. */

static const char *fmt_time(char *b, size_t n, double s)
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

static const char *fmt_bytes(char *b, size_t n, double bytes)
{
    if (isnan(bytes) || bytes <= 0)
        snprintf(b, n, "-");
    else if (bytes >= 1024.0 * 1024 * 1024)
        snprintf(b, n, "%.2fG", bytes / (1024.0 * 1024 * 1024));
    else if (bytes >= 1024.0 * 1024)
        snprintf(b, n, "%.1fM", bytes / (1024.0 * 1024));
    else if (bytes >= 1024.0)
        snprintf(b, n, "%.1fK", bytes / 1024.0);
    else
        snprintf(b, n, "%.0f", bytes);
    return b;
}

static const char *fmt_count(char *b, size_t n, double c)
{
    if (isnan(c) || c < 0)
        snprintf(b, n, "n/a");
    else if (c >= 1e9)
        snprintf(b, n, "%.2fG", c / 1e9);
    else if (c >= 1e6)
        snprintf(b, n, "%.2fM", c / 1e6);
    else if (c >= 1e4)
        snprintf(b, n, "%.1fk", c / 1e3);
    else
        snprintf(b, n, "%.0f", c);
    return b;
}

static const char *fmt_ratio(char *b, size_t n, double x)
{
    if (isnan(x))
        snprintf(b, n, "-");
    else
        snprintf(b, n, "%.3f", x);
    return b;
}

static char row_mark(const row *r)
{
    return r->v->kind == BENCH_MEMRES ? '*' : r->v->kind == BENCH_LIMIT ? '^' : r->v->kind == BENCH_EXTERNAL ? '>' : ' ';
}

/* ------------------------------------------------------------------------ */
/* The machine. */

typedef struct machine {
    char cpu[256];
    long cpus;
    char kernel[256];
    char thp[64];
    char date[64];
    char cxx[256];
    char perf[128];
} machine;

static void machine_read(machine *m)
{
    memset(m, 0, sizeof *m);
    snprintf(m->cpu, sizeof m->cpu, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof line, f)) {
            if (strncmp(line, "model name", 10) == 0 || strncmp(line, "Model", 5) == 0) {
                char *c = strchr(line, ':');
                if (c) {
                    c++;
                    while (*c == ' ' || *c == '\t')
                        c++;
                    c[strcspn(c, "\n")] = '\0';
                    snprintf(m->cpu, sizeof m->cpu, "%s", c);
                    break;
                }
            }
        }
        fclose(f);
    }
    m->cpus = sysconf(_SC_NPROCESSORS_ONLN);
    struct utsname u;
    if (uname(&u) == 0)
        snprintf(m->kernel, sizeof m->kernel, "%s %s %s", u.sysname, u.release, u.machine);
    snprintf(m->thp, sizeof m->thp, "unknown");
    f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (f) {
        char line[256];
        if (fgets(line, sizeof line, f)) {
            char *a = strchr(line, '['), *b = a ? strchr(a, ']') : NULL;
            if (a && b) {
                *b = '\0';
                snprintf(m->thp, sizeof m->thp, "%s", a + 1);
            }
        }
        fclose(f);
    }
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(m->date, sizeof m->date, "%Y-%m-%d %H:%M:%S %z", &tm);
    snprintf(m->cxx, sizeof m->cxx, "%s", bench_cxx_version ? bench_cxx_version() : "(no C++ scenario)");
    int fd = perf_open();
    if (fd >= 0) {
        snprintf(m->perf, sizeof m->perf, "perf_event_open (user-space instructions)");
        close(fd);
    } else {
        snprintf(m->perf, sizeof m->perf, "n/a (perf_event_open: %s)", strerror(errno));
    }
}

static void print_header(FILE *f, const options *o, const machine *m)
{
    fprintf(f, PROG " (memres %s)\n", MEMRES_VERSION_STRING);
    fprintf(f, "date:      %s\n", m->date);
    fprintf(f, "machine:   %s, %ld CPUs online; %s; THP %s; glibc %s\n", m->cpu, m->cpus, m->kernel, m->thp,
            gnu_get_libc_version());
    fprintf(f, "compilers: C %s (%s); C++ %s\n", BENCH_C_COMPILER, __VERSION__, m->cxx);
    fprintf(f, "flags:     bench C: %s; C++: %s; library (%s): %s\n", BENCH_C_FLAGS, BENCH_CXX_FLAGS,
            BENCH_BUILD_TYPE, BENCH_LIB_FLAGS);
    fprintf(f, "peers:     %s; malloc by LD_PRELOAD:", BENCH_PEERS);
    for (int i = 1; i < N_MALLOCS; i++)
        fprintf(f, " %s%s", mallocs[i].name, mallocs[i].path[0] ? "" : " (missing)");
    fputc('\n', f);
    fprintf(f, "method:    each run a fresh process; wall time inside it around the workload;\n"
               "           user/sys/RSS/faults of the whole process; %d run%s per row after %d discarded;\n"
               "           median [min, max]; instructions: %s\n",
            o->runs, o->runs == 1 ? "" : "s", o->warmup, m->perf);
    fprintf(f, "args:      depth %d, threads %d%s\n", o->args.depth, o->args.threads,
            o->args.quick ? ", --quick (small sizes)" : "");
    for (int i = 1; i < N_MALLOCS; i++)
        if (!mallocs[i].path[0])
            fprintf(f, "notice:    %s not found (%s; apt-get install %s): its rows are skipped\n", mallocs[i].name,
                    mallocs[i].soname, mallocs[i].package);
    fprintf(f, "legend:    * memres   ^ reference limit (hand-written)   > external program\n");
}

/* ------------------------------------------------------------------------ */
/* Progress on stderr. */

static bool progress_tty;

static void progress(const char *fmt, ...) MR_PRINTF(1, 2);
static void progress(const char *fmt, ...)
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

static void progress_end(void)
{
    if (progress_tty)
        fputs("\r\033[K", stderr);
}

/* ------------------------------------------------------------------------ */
/* The table. */

static void row_label(const row *r, char *b, size_t n)
{
    snprintf(b, n, "%s", r->v->name);
}

static void print_scenario(FILE *f, const options *o, int si, row *rows, int nrows, char **skipped,
                           int nskipped)
{
    const scenario *s = &scenarios[si];
    fprintf(f, "\n== %s", s->name);
    if (strcmp(s->name, "binary-trees") == 0)
        fprintf(f, " (depth %d)", o->args.depth);
    if (o->args.threads > 1)
        fprintf(f, " (threaded variants: %d threads; thr = threads a row used)", o->args.threads);
    fprintf(f, " ==\n");
    fprintf(f, "  %-26s %-8s %3s %9s %9s %9s %8s %8s %8s %8s %8s %8s %8s %7s %7s\n", "variant", "malloc", "thr",
            "median", "min", "max", "user", "sys", "peakRSS", "minflt", "instr", "held", "req", "xglibc",
            "xpeer");
    const row *ref = NULL;
    for (int i = 0; i < nrows; i++) {
        row *r = &rows[i];
        char lab[64], b[12][32];
        row_label(r, lab, sizeof lab);
        if (r->failed) {
            fprintf(f, "%c %-26s %-8s %3d FAILED: %s\n", row_mark(r), lab, mallocs[r->malloc_idx].name, r->threads,
                    r->why);
            continue;
        }
        if (ref == NULL)
            ref = r;
        fprintf(f, "%c %-26s %-8s %3d %9s %9s %9s %8s %8s %8s %8s %8s %8s %8s %7s %7s%s\n", row_mark(r), lab,
                mallocs[r->malloc_idx].name, r->threads, fmt_time(b[0], 32, r->med), fmt_time(b[1], 32, r->min),
                fmt_time(b[2], 32, r->max), fmt_time(b[3], 32, r->med_user), fmt_time(b[4], 32, r->med_sys),
                fmt_bytes(b[5], 32, r->med_rss * 1024), fmt_count(b[6], 32, r->med_flt),
                fmt_count(b[7], 32, r->med_instr), fmt_bytes(b[8], 32, (double)r->upstream),
                fmt_bytes(b[9], 32, (double)r->requested), fmt_ratio(b[10], 32, r->x_glibc),
                fmt_ratio(b[11], 32, r->x_peer), r->mismatch ? "  OUTPUT MISMATCH" : "");
    }
    for (int i = 0; i < nskipped; i++)
        fprintf(f, "  skipped %s\n", skipped[i]);
    if (ref && ref->text && ref->text[0]) {
        int agree = 0;
        for (int i = 0; i < nrows; i++)
            agree += !rows[i].failed && !rows[i].mismatch;
        fprintf(f, "  output (%d %s, checksum %016" PRIx64 "):\n", agree, agree == 1 ? "row" : "rows agree",
                ref->checksum);
        const char *p = ref->text;
        int lines = 0;
        while (*p && lines < 16) {
            size_t len = strcspn(p, "\n");
            fprintf(f, "    %.*s\n", (int)len, p);
            p += len + (p[len] == '\n');
            lines++;
        }
        if (*p)
            fprintf(f, "    ...\n");
    }
    fflush(f);
}

/* The output check and the ratios for one scenario's rows.  Returns the
 * errors (failed rows and rows whose output differs from the first row's). */
static int scenario_check(row *rows, int nrows, FILE *err)
{
    const row *ref = NULL;
    int errors = 0;
    for (int i = 0; i < nrows; i++) {
        row *r = &rows[i];
        if (r->failed) {
            errors++;
            continue;
        }
        if (ref == NULL)
            ref = r;
        if (r != ref && !r->mismatch &&
            (r->checksum != ref->checksum || strcmp(r->text ? r->text : "", ref->text ? ref->text : "") != 0)) {
            r->mismatch = true;
            fprintf(err, PROG ": ERROR: %s / %s (%s): output differs from %s (%s)\n", r->v->scenario, r->v->name,
                    mallocs[r->malloc_idx].name, ref->v->name, mallocs[ref->malloc_idx].name);
            fprintf(err, "  checksum %016" PRIx64 " vs %016" PRIx64 "\n  got:\n%s  expected:\n%s", r->checksum,
                    ref->checksum, r->text ? r->text : "", ref->text ? ref->text : "");
        }
        if (r->mismatch)
            errors++;
    }
    /* Baselines only from rows that ran and agree. */
    const row *glibc = NULL, *best = NULL;
    for (int i = 0; i < nrows; i++) {
        const row *r = &rows[i];
        if (r->failed || r->mismatch)
            continue;
        if (glibc == NULL && r->v->kind == BENCH_MALLOC && r->malloc_idx == 0)
            glibc = r;
        if ((r->v->kind == BENCH_MALLOC || r->v->kind == BENCH_PEER || r->v->kind == BENCH_EXTERNAL) &&
            (best == NULL || r->med < best->med))
            best = r;
    }
    for (int i = 0; i < nrows; i++) {
        row *r = &rows[i];
        if (r->failed)
            continue;
        r->x_glibc = glibc && glibc->med > 0 ? r->med / glibc->med : NAN;
        r->x_peer = best && best->med > 0 ? r->med / best->med : NAN;
    }
    return errors;
}

/* ------------------------------------------------------------------------ */
/* JSON and SVG. */

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c == '\n')
            fputs("\\n", f);
        else if (c == '\t')
            fputs("\\t", f);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void json_num(FILE *f, double x)
{
    if (isnan(x) || isinf(x))
        fputs("null", f);
    else
        fprintf(f, "%.9g", x);
}

static void json_array(FILE *f, const double *v, int n)
{
    fputc('[', f);
    for (int i = 0; i < n; i++) {
        if (i)
            fputc(',', f);
        json_num(f, v[i]);
    }
    fputc(']', f);
}

static void write_json(const char *path, const options *o, const machine *m, row *rows, int nrows, int errors,
                       char **const *skipped, const int *nskipped)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, PROG ": cannot write %s: %s\n", path, strerror(errno));
        return;
    }
    fprintf(f, "{\n  \"program\": \"" PROG "\", \"memres_version\": \"%s\",\n", MEMRES_VERSION_STRING);
    fputs("  \"machine\": {\"cpu\": ", f);
    json_str(f, m->cpu);
    fprintf(f, ", \"cpus\": %ld, \"kernel\": ", m->cpus);
    json_str(f, m->kernel);
    fputs(", \"thp\": ", f);
    json_str(f, m->thp);
    fputs(", \"glibc\": ", f);
    json_str(f, gnu_get_libc_version());
    fputs(", \"date\": ", f);
    json_str(f, m->date);
    fputs("},\n  \"build\": {\"c_compiler\": ", f);
    json_str(f, BENCH_C_COMPILER);
    fputs(", \"cxx_compiler\": ", f);
    json_str(f, m->cxx);
    fputs(", \"c_flags\": ", f);
    json_str(f, BENCH_C_FLAGS);
    fputs(", \"cxx_flags\": ", f);
    json_str(f, BENCH_CXX_FLAGS);
    fputs(", \"library_flags\": ", f);
    json_str(f, BENCH_LIB_FLAGS);
    fputs(", \"build_type\": ", f);
    json_str(f, BENCH_BUILD_TYPE);
    fputs("},\n", f);
    fprintf(f, "  \"args\": {\"depth\": %d, \"threads\": %d, \"quick\": %s, \"runs\": %d, \"warmup\": %d},\n",
            o->args.depth, o->args.threads, o->args.quick ? "true" : "false", o->runs, o->warmup);
    fputs("  \"instructions\": ", f);
    json_str(f, m->perf);
    fprintf(f, ",\n  \"errors\": %d,\n  \"rows\": [\n", errors);
    for (int i = 0; i < nrows; i++) {
        const row *r = &rows[i];
        fputs("    {\"scenario\": ", f);
        json_str(f, r->v->scenario);
        fputs(", \"variant\": ", f);
        json_str(f, r->v->name);
        fprintf(f, ", \"kind\": \"%s\", \"malloc\": \"%s\", \"threads\": %d, \"ok\": %s", kind_name(r->v->kind),
                mallocs[r->malloc_idx].name, r->threads, r->failed || r->mismatch ? "false" : "true");
        if (r->failed) {
            fputs(", \"error\": ", f);
            json_str(f, r->why);
        }
        fputs(",\n     \"wall_s\": {\"median\": ", f);
        json_num(f, r->med);
        fputs(", \"min\": ", f);
        json_num(f, r->min);
        fputs(", \"max\": ", f);
        json_num(f, r->max);
        fputs(", \"runs\": ", f);
        json_array(f, r->wall, r->nruns);
        fputs("},\n     \"user_s\": ", f);
        json_num(f, r->med_user);
        fputs(", \"sys_s\": ", f);
        json_num(f, r->med_sys);
        fputs(", \"peak_rss_kib\": ", f);
        json_num(f, r->med_rss);
        fputs(", \"minor_faults\": ", f);
        json_num(f, r->med_flt);
        fputs(", \"instructions\": ", f);
        json_num(f, r->med_instr >= 0 ? r->med_instr : NAN);
        fprintf(f, ",\n     \"upstream_bytes\": %" PRIu64 ", \"requested_bytes\": %" PRIu64 ", \"checksum\": \"%016" PRIx64
                   "\", \"x_glibc\": ",
                r->upstream, r->requested, r->checksum);
        json_num(f, r->x_glibc);
        fputs(", \"x_best_peer\": ", f);
        json_num(f, r->x_peer);
        fputs(", \"output\": ", f);
        json_str(f, r->text ? r->text : "");
        fprintf(f, "}%s\n", i + 1 < nrows ? "," : "");
    }
    fputs("  ],\n  \"skipped\": [", f);
    int first = 1;
    for (int si = 0; si < n_scenarios; si++)
        for (int i = 0; i < nskipped[si]; i++) {
            fputs(first ? "\n    {\"scenario\": " : ",\n    {\"scenario\": ", f);
            first = 0;
            json_str(f, scenarios[si].name);
            fputs(", \"what\": ", f);
            json_str(f, skipped[si][i]);
            fputc('}', f);
        }
    fputs("\n  ]\n}\n", f);
    if (fclose(f) != 0)
        fprintf(stderr, PROG ": writing %s: %s\n", path, strerror(errno));
}

static void svg_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '&')
            fputs("&amp;", f);
        else if (*s == '<')
            fputs("&lt;", f);
        else if (*s == '>')
            fputs("&gt;", f);
        else
            fputc(*s, f);
    }
}

static const char *kind_color(enum bench_kind k)
{
    switch (k) {
    case BENCH_MEMRES: return "#d62728";
    case BENCH_MALLOC: return "#1f77b4";
    case BENCH_PEER: return "#2ca02c";
    case BENCH_LIMIT: return "#7f7f7f";
    case BENCH_EXTERNAL: return "#9467bd";
    }
    return "#000000";
}

static void write_svg(const char *path, const options *o, const machine *m, row *rows, int nrows)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, PROG ": cannot write %s: %s\n", path, strerror(errno));
        return;
    }
    const int W = 980, label_w = 300, bar_x = 310, bar_w = 500, row_h = 20, head = 70, gap = 40;
    int height = head;
    for (int si = 0; si < n_scenarios; si++) {
        int n = 0;
        for (int i = 0; i < nrows; i++)
            n += rows[i].scen == si && !rows[i].failed;
        if (n)
            height += gap + n * row_h + 10;
    }
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" "
               "font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", W, height + 10);
    fprintf(f, "<text x=\"10\" y=\"20\" font-size=\"15\" font-weight=\"bold\">" PROG
               ": median wall time [min, max] of %d run%s</text>\n", o->runs, o->runs == 1 ? "" : "s");
    fputs("<text x=\"10\" y=\"38\" fill=\"#444\">", f);
    svg_text(f, m->cpu);
    fprintf(f, ", %ld CPUs; %s; depth %d, threads %d%s</text>\n", m->cpus, m->date, o->args.depth,
            o->args.threads, o->args.quick ? ", --quick" : "");
    static const enum bench_kind kinds[] = { BENCH_MEMRES, BENCH_MALLOC, BENCH_PEER, BENCH_LIMIT, BENCH_EXTERNAL };
    for (int k = 0; k < 5; k++) {
        fprintf(f, "<rect x=\"%d\" y=\"48\" width=\"12\" height=\"12\" fill=\"%s\"/>", 10 + k * 120,
                kind_color(kinds[k]));
        fprintf(f, "<text x=\"%d\" y=\"58\">%s</text>\n", 26 + k * 120, kind_name(kinds[k]));
    }
    int y = head;
    for (int si = 0; si < n_scenarios; si++) {
        double top = 0;
        int n = 0;
        for (int i = 0; i < nrows; i++)
            if (rows[i].scen == si && !rows[i].failed) {
                n++;
                if (rows[i].max > top)
                    top = rows[i].max;
            }
        if (n == 0)
            continue;
        y += gap;
        fputs("<text x=\"10\" y=\"", f);
        fprintf(f, "%d\" font-size=\"14\" font-weight=\"bold\">", y - 12);
        svg_text(f, scenarios[si].name);
        fputs("</text>\n", f);
        for (int i = 0; i < nrows; i++) {
            const row *r = &rows[i];
            if (r->scen != si || r->failed)
                continue;
            char lab[128], t[32];
            snprintf(lab, sizeof lab, "%s%s%s%s", r->v->name, r->v->kind == BENCH_MALLOC ? " (" : "",
                     r->v->kind == BENCH_MALLOC ? mallocs[r->malloc_idx].name : "",
                     r->v->kind == BENCH_MALLOC ? ")" : "");
            double sc = top > 0 ? bar_w / top : 0;
            fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\"%s>", label_w, y + 13,
                    r->v->kind == BENCH_MEMRES ? " font-weight=\"bold\"" : "");
            svg_text(f, lab);
            fputs("</text>\n", f);
            fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"14\" fill=\"%s\"/>\n", bar_x, y + 2,
                    r->med * sc, kind_color(r->v->kind));
            if (r->nruns > 1)
                fprintf(f, "<path d=\"M%.1f %d H%.1f M%.1f %d V%d M%.1f %d V%d\" stroke=\"black\"/>\n",
                        bar_x + r->min * sc, y + 9, bar_x + r->max * sc, bar_x + r->min * sc, y + 5, y + 13,
                        bar_x + r->max * sc, y + 5, y + 13);
            fmt_time(t, sizeof t, r->med);
            fprintf(f, "<text x=\"%.1f\" y=\"%d\">%s", bar_x + r->max * sc + 6, y + 13, t);
            if (!isnan(r->x_glibc))
                fprintf(f, "  (%.2fx glibc)", r->x_glibc);
            fputs("</text>\n", f);
            y += row_h;
        }
        y += 10;
    }
    fputs("</svg>\n", f);
    if (fclose(f) != 0)
        fprintf(stderr, PROG ": writing %s: %s\n", path, strerror(errno));
}

/* ------------------------------------------------------------------------ */

static void list_all(const options *o)
{
    printf("scenarios and variants (kind, threaded, availability):\n");
    for (int i = 0; i < n_scenarios; i++) {
        if (!scenario_selected(o, scenarios[i].name))
            continue;
        printf("  %s\n", scenarios[i].name);
        for (int j = 0; j < scenarios[i].nv; j++) {
            const bench_variant *v = scenarios[i].v[j];
            if (!variant_selected(o, v->name))
                continue;
            const char *why = variant_unavailable(v);
            printf("    %c %-28s %-8s %-8s %s\n", v->kind == BENCH_MEMRES ? '*' : ' ', v->name, kind_name(v->kind),
                   v->threaded ? "threaded" : "", why ? why : "ok");
        }
    }
    printf("malloc implementations (malloc variants run once per each):\n");
    for (int i = 0; i < N_MALLOCS; i++)
        printf("  %-9s %s\n", mallocs[i].name, mallocs[i].path[0] ? mallocs[i].path : "not found");
}

int main(int argc, char **argv)
{
    options o;
    parse_options(argc, argv, &o);
    registry_build();
    if (o.run_scenario)
        return child_main(&o);

    mallocs_find();
    if (o.list) {
        list_all(&o);
        return 0;
    }
    for (int i = 0; i < o.n_scenario; i++) {
        bool known = false;
        for (int s = 0; s < n_scenarios; s++)
            known = known || strcmp(scenarios[s].name, o.scenario[i]) == 0;
        if (!known)
            die("--scenario: no scenario '%s' (see --list)", o.scenario[i]);
    }
    ssize_t n = readlink("/proc/self/exe", self_exe, sizeof self_exe - 1);
    if (n <= 0)
        die("cannot find this program (/proc/self/exe): %s", strerror(errno));
    self_exe[n] = '\0';
    progress_tty = isatty(STDERR_FILENO);
    signal(SIGPIPE, SIG_IGN);

    /* The plan: every row, with the skipped variants noted per scenario. */
    int cap = 16, nrows = 0;
    row *rows = xcalloc((size_t)cap, sizeof *rows);
    char **skipped[MAX_SCENARIOS] = { 0 };
    int nskipped[MAX_SCENARIOS] = { 0 };
    for (int si = 0; si < n_scenarios; si++) {
        const scenario *s = &scenarios[si];
        if (!scenario_selected(&o, s->name))
            continue;
        skipped[si] = xcalloc((size_t)s->nv, sizeof(char *));
        for (int j = 0; j < s->nv; j++) {
            const bench_variant *v = s->v[j];
            if (!variant_selected(&o, v->name))
                continue;
            const char *why = variant_unavailable(v);
            if (why) {
                char line[512];
                snprintf(line, sizeof line, "%s: %s", v->name, why);
                skipped[si][nskipped[si]++] = xstrdup(line);
                continue;
            }
            for (int m = 0; m < N_MALLOCS; m++) {
                if (v->kind != BENCH_MALLOC && m > 0)
                    break;
                if (v->kind == BENCH_MALLOC && (!mallocs[m].path[0] || !malloc_selected(&o, m)))
                    continue;
                if (nrows == cap) {
                    cap *= 2;
                    row *nr = realloc(rows, (size_t)cap * sizeof *rows);
                    if (nr == NULL)
                        die("out of memory");
                    rows = nr;
                }
                row *r = &rows[nrows++];
                memset(r, 0, sizeof *r);
                r->v = v;
                r->scen = si;
                r->malloc_idx = m;
                r->threads = v->threaded ? o.args.threads : 1;
                r->wall = xcalloc((size_t)o.runs, sizeof(double));
                r->user = xcalloc((size_t)o.runs, sizeof(double));
                r->sys = xcalloc((size_t)o.runs, sizeof(double));
                r->rss_kib = xcalloc((size_t)o.runs, sizeof(double));
                r->minflt = xcalloc((size_t)o.runs, sizeof(double));
                r->instr = xcalloc((size_t)o.runs, sizeof(double));
                r->x_glibc = r->x_peer = NAN;
            }
        }
    }

    int planned = nrows;
    for (int si = 0; si < n_scenarios; si++)
        planned += nskipped[si];
    if (planned == 0)
        die("no scenario and variant match the filters (see --list)");

    machine mach;
    machine_read(&mach);
    print_header(stdout, &o, &mach);
    fflush(stdout);

    int errors = 0;
    static run_msg msg;
    for (int si = 0; si < n_scenarios; si++) {
        if (!scenario_selected(&o, scenarios[si].name))
            continue;
        int first = -1, count = 0;
        for (int i = 0; i < nrows; i++)
            if (rows[i].scen == si) {
                if (first < 0)
                    first = i;
                count++;
            }
        for (int i = first; count > 0 && i < first + count; i++) {
            row *r = &rows[i];
            int total = o.warmup + o.runs;
            for (int k = 0; k < total && !r->failed; k++) {
                bool warm = k < o.warmup;
                if (progress_tty) /* a log gets one line per row, below */
                    progress("[%d/%d] %s: %s (%s) %s %d/%d", i + 1, nrows, r->v->scenario, r->v->name,
                         mallocs[r->malloc_idx].name, warm ? "warm-up" : "run", warm ? k + 1 : k - o.warmup + 1,
                         warm ? o.warmup : o.runs);
                struct rusage ru;
                if (run_child(&o, r, &msg, &ru) != 0) {
                    r->failed = true;
                    break;
                }
                if (r->text == NULL) {
                    r->text = xstrdup(msg.text);
                    r->checksum = msg.checksum;
                } else if (r->checksum != msg.checksum || strcmp(r->text, msg.text) != 0) {
                    r->mismatch = true;
                    fprintf(stderr, PROG ": ERROR: %s / %s (%s): run %d's output differs from the first run's\n",
                            r->v->scenario, r->v->name, mallocs[r->malloc_idx].name, k + 1);
                }
                r->upstream = msg.upstream_bytes;
                r->requested = msg.requested_bytes;
                if (warm)
                    continue;
                int j = r->nruns++;
                r->wall[j] = (double)msg.wall_ns / 1e9;
                r->user[j] = tv_sec(ru.ru_utime);
                r->sys[j] = tv_sec(ru.ru_stime);
                r->rss_kib[j] = (double)ru.ru_maxrss;
                r->minflt[j] = (double)ru.ru_minflt;
                r->instr[j] = msg.instructions >= 0 ? (double)msg.instructions : -1;
            }
            summarize(r);
            if (r->failed) {
                progress_end();
                fprintf(stderr, PROG ": ERROR: %s / %s (%s): %s\n", r->v->scenario, r->v->name,
                        mallocs[r->malloc_idx].name, r->why);
            } else if (!progress_tty) {
                char t[32];
                progress("[%d/%d] %s: %s (%s): %s", i + 1, nrows, r->v->scenario, r->v->name,
                         mallocs[r->malloc_idx].name, fmt_time(t, sizeof t, r->med));
            }
        }
        progress_end();
        if (count > 0)
            errors += scenario_check(&rows[first], count, stderr);
        print_scenario(stdout, &o, si, count > 0 ? &rows[first] : rows, count, skipped[si], nskipped[si]);
    }

    if (o.json)
        write_json(o.json, &o, &mach, rows, nrows, errors, skipped, nskipped);
    if (o.plot)
        write_svg(o.plot, &o, &mach, rows, nrows);
    if (errors)
        printf("\n%d error%s: failed runs or outputs that differ (see stderr)\n", errors, errors == 1 ? "" : "s");
    else
        printf("\nall outputs agree\n");
    return errors ? 1 : 0;
}
