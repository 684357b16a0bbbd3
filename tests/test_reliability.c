/* SPDX-License-Identifier: MIT */
/* tests/test_reliability.c -- regression tests for the defects an outside
 * attack on memres found (issue 8), each failing before its fix, and for
 * the violation handler they report through.
 *
 * Misuse is tested with a recording violation handler instead of death
 * tests: the handler returns, and the library must then take its safe way
 * out (ignore the call).  That safe way out is taken in every build and
 * asserted in every build; the report itself comes only from debug builds
 * (the library's MR_DEBUG >= 1, which support.h gives the tests too). */
#include <errno.h>
#include <stdalign.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support.h"

#if defined(__SANITIZE_THREAD__)
#  define THREAD_SANITIZED 1
#elif defined(__has_feature)
#  if __has_feature(thread_sanitizer)
#    define THREAD_SANITIZED 1
#  endif
#endif
#ifndef THREAD_SANITIZED
#  define THREAD_SANITIZED 0
#endif

/* ---- a recording violation handler ---- */

typedef struct violations {
    int count;
    const char *last;
    const void *ptr;
} violations;

static void record(const char *what, const void *ptr, void *ctx)
{
    violations *v = ctx;
    v->count++;
    v->last = what;
    v->ptr = ptr;
}

/* n violations reported, in builds that report. */
#define assert_reported(v, n)                  \
    do {                                       \
        if (MR_DEBUG >= 1)                     \
            assert_int_equal((v)->count, (n)); \
        else                                   \
            assert_int_equal((v)->count, 0);   \
    } while (0)

static int setup_handler(void **state)
{
    static violations v;
    memset(&v, 0, sizeof v);
    mr_set_violation_handler(record, &v);
    *state = &v;
    return 0;
}

static int teardown_handler(void **state)
{
    (void)state;
    mr_set_violation_handler(NULL, NULL);
    return 0;
}

/* ---- defect 1: stale and foreign marks ---- */

static int ran[4];
static void note_run(void *arg) { ran[(int)(intptr_t)arg]++; }

/* defer(c0); m1 = save; defer(c1); m2 = save; rewind(m1); rewind(m2):
 * c0 was registered before both marks and must not run. */
static void test_stale_mark_never_runs_older_cleanups(void **state)
{
    violations *v = *state;
    memset(ran, 0, sizeof ran);
    mr_arena *a = mr_arena_create(NULL);
    assert_non_null(a);
    assert_int_equal(mr_arena_defer(a, note_run, (void *)(intptr_t)0), 0);
    mr_arena_mark m1 = mr_arena_save(a);
    assert_int_equal(mr_arena_defer(a, note_run, (void *)(intptr_t)1), 0);
    mr_arena_mark m2 = mr_arena_save(a);
    mr_arena_rewind(a, m1);
    assert_int_equal(ran[1], 1);
    assert_reported(v, 0);
    mr_arena_rewind(a, m2); /* stale */
    assert_int_equal(ran[0], 0);
    assert_int_equal(ran[1], 1);
    assert_reported(v, 1);
    assert_true(mr_arena_check(a));
    /* the stale mark after more cleanups: still never below its own number */
    assert_int_equal(mr_arena_defer(a, note_run, (void *)(intptr_t)2), 0);
    assert_int_equal(mr_arena_defer(a, note_run, (void *)(intptr_t)3), 0);
    mr_arena_rewind(a, m2); /* m2 numbers 2 cleanups: only the 3rd, newest, runs */
    assert_int_equal(ran[3], 1);
    assert_int_equal(ran[2], 0);
    assert_int_equal(ran[0], 0);
    mr_arena_destroy(a);
    assert_int_equal(ran[0], 1);
    assert_int_equal(ran[2], 1);
}

/* Rewinding arena A to a mark of another, empty arena must not reset A. */
static void test_foreign_mark_is_ignored(void **state)
{
    violations *v = *state;
    mr_arena *a = mr_arena_create(NULL), *b = mr_arena_create(NULL);
    assert_non_null(a);
    assert_non_null(b);
    mr_arena_mark mb = mr_arena_save(b);
    char *x = mr_arena_alloc(a, 64);
    assert_non_null(x);
    memset(x, 'x', 64);
    mr_stats before, after;
    mr_arena_stats(a, &before);
    mr_arena_rewind(a, mb);
    mr_arena_stats(a, &after);
    assert_reported(v, 1);
    assert_int_equal(after.in_use, before.in_use);
    char *y = mr_arena_alloc(a, 64); /* must not be x again */
    assert_non_null(y);
    assert_true(y >= x + 64 || y + 64 <= x);
    /* a mark from before a release is foreign too */
    mr_arena_mark old = mr_arena_save(a);
    mr_arena_release(a);
    assert_non_null(mr_arena_alloc(a, 32));
    mr_arena_rewind(a, old);
    assert_reported(v, 2);
    assert_true(mr_arena_check(a));
    mr_arena_destroy(a);
    mr_arena_destroy(b);
}

/* A stale mark past the current position in the same block is a plain
 * position: a rewind to it skips free bytes and never hands out memory in
 * use twice. */
static void test_forward_mark_never_overlaps(void **state)
{
    violations *v = *state;
    mr_arena *a = mr_arena_create(NULL);
    assert_non_null(a);
    mr_arena_mark m1 = mr_arena_save(a);
    assert_non_null(mr_arena_alloc(a, 16));
    assert_non_null(mr_arena_alloc(a, 16));
    mr_arena_mark m2 = mr_arena_save(a);
    mr_arena_rewind(a, m1);
    char *q = mr_arena_alloc(a, 16);
    assert_non_null(q);
    mr_arena_rewind(a, m2);
    assert_reported(v, 0);
    char *r = mr_arena_alloc(a, 16);
    assert_non_null(r);
    assert_true(r >= q + 16);
    assert_true(mr_arena_check(a));
    mr_arena_destroy(a);
}

/* Large (dedicated) blocks allocated before a stale mark stay in use. */
static void test_stale_mark_keeps_older_large_blocks(void **state)
{
    violations *v = *state;
    mr_arena *a = mr_arena_create(NULL);
    assert_non_null(a);
    char *big0 = mr_arena_alloc(a, 1 << 20); /* dedicated: above the growth size */
    assert_non_null(big0);
    memset(big0, 1, 1 << 20);
    mr_arena_mark m1 = mr_arena_save(a);
    assert_non_null(mr_arena_alloc(a, 1 << 20));
    mr_arena_mark m2 = mr_arena_save(a);
    mr_arena_rewind(a, m1);
    mr_arena_rewind(a, m2);
    assert_reported(v, 1);
    char *big2 = mr_arena_alloc(a, 1 << 20);
    assert_non_null(big2);
    assert_true(big2 >= big0 + (1 << 20) || big2 + (1 << 20) <= big0);
    assert_true(mr_arena_check(a));
    mr_arena_destroy(a);
}

/* ---- defect 3: realloc in place across a mark: made safe (test_arena.c,
 * test_realloc_across_a_mark) ---- */

/* ---- defect 4: a limit with kept blocks after reset ---- */

static void test_limit_gives_back_spares_after_reset(void **state)
{
    (void)state;
    mr_arena_options o = {.limit = 1 << 20};
    mr_arena *a = mr_arena_create(&o);
    assert_non_null(a);
    while (mr_arena_alloc(a, 100) != NULL)
        ;
    assert_int_equal(errno, ENOMEM);
    mr_arena_reset(a);
    mr_stats st;
    mr_arena_stats(a, &st);
    assert_int_equal(st.in_use, 0);
    void *p = mr_arena_alloc(a, 300000);
    assert_non_null(p);
    memset(p, 0, 300000);
    mr_arena_stats(a, &st);
    assert_true(st.held <= (size_t)1 << 20);
    assert_true(mr_arena_check(a));
    /* a request that cannot fit even without spares fails and changes nothing */
    mr_stats before;
    mr_arena_stats(a, &before);
    errno = 0;
    assert_null(mr_arena_alloc(a, 2 << 20));
    assert_int_equal(errno, ENOMEM);
    mr_arena_stats(a, &st);
    assert_int_equal(st.held, before.held);
    assert_int_equal(st.in_use, before.in_use);
    mr_arena_destroy(a);
}

/* ---- defect 5: release over malloc returns memory to the OS ---- */

/* Resident kB, read without malloc (fopen's FILE would land on top of the
 * heap and pin it: the measurement must not cause what it measures). */
static long rss_kb(void)
{
    char buf[128];
    int fd = open("/proc/self/statm", O_RDONLY);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    long pages = 0, resident = 0;
    if (sscanf(buf, "%ld %ld", &pages, &resident) != 2)
        return -1;
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* In a child (a clean heap): one earlier 1 MiB malloc/free raises glibc's
 * mmap threshold, as in any long-running program; a pool then grows to
 * ~280 MiB and is destroyed; RSS must come back.  (Sanitizer builds have
 * their own allocator: skipped there.) */
static void test_pools_destroy_returns_memory(void **state)
{
    (void)state;
    if (rss_kb() < 0 || MR_SANITIZED || THREAD_SANITIZED || MR_VALGRIND)
        skip();
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        void *volatile earlier = malloc(1 << 20); /* volatile: the pair must not be optimised away */
        free(earlier);
        long base = rss_kb();
        mr_pools *p = mr_pools_create(NULL);
        if (p == NULL)
            _exit(2);
        enum { N = 280 * 1024 };
        static void *blocks[N];
        for (int i = 0; i < N; i++) {
            blocks[i] = mr_pools_alloc(p, 1000, 8);
            if (blocks[i] == NULL)
                _exit(3);
            memset(blocks[i], 1, 1000);
        }
        long peak = rss_kb();
        mr_pools_destroy(p);
        long after = rss_kb();
        printf("# pools over malloc: RSS %ld kB before, %ld kB at peak, %ld kB after destroy\n", base, peak, after);
        fflush(stdout);
        /* Before the fix all of it stayed (287 of 289 MiB); now about a
         * quarter does (glibc keeps part of the heap top; malloc_trim(0)
         * takes it to ~2 MiB).  Assert at least half comes back. */
        _exit(peak - base > 200 * 1024 && after - base < (peak - base) / 2 ? 0 : 1);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* ---- defect 6: huge requests fail cleanly, sanitizer builds included ---- */

static void test_huge_requests_fail_with_enomem(void **state)
{
    (void)state;
    const size_t tib = (size_t)1 << 40;
    errno = 0;
    assert_null(mr_allocate(mr_malloc_resource(), tib, 16));
    assert_int_equal(errno, ENOMEM);
    mr_objpool *op = mr_objpool_create(tib, 16, NULL);
    if (op != NULL) {
        errno = 0;
        assert_null(mr_objpool_alloc(op));
        assert_int_equal(errno, ENOMEM);
        mr_objpool_destroy(op);
    }
    mr_pools *p = mr_pools_create(NULL);
    assert_non_null(p);
    errno = 0;
    assert_null(mr_pools_alloc(p, 4 * tib, 16));
    assert_int_equal(errno, ENOMEM);
    mr_arena_options o = {.upstream = mr_pools_resource(p)};
    mr_arena *a = mr_arena_create(&o);
    assert_non_null(a);
    errno = 0;
    assert_null(mr_arena_alloc(a, 4 * tib));
    assert_int_equal(errno, ENOMEM);
    assert_true(mr_arena_check(a));
    mr_arena_destroy(a);
    assert_true(mr_pools_check(p));
    mr_pools_destroy(p);
}

/* ---- defect 8: a block put twice ---- */

static void test_blocks_double_put_detected(void **state)
{
    violations *v = *state;
    if (MR_DEBUG < 1)
        skip(); /* release builds do not look: the pool is corrupted */
    mr_blocks_options o = {.block_size = 4096};
    mr_blocks *b = mr_blocks_create(&o);
    assert_non_null(b);
    void *x = mr_blocks_get(b);
    assert_non_null(x);
    mr_blocks_put(b, x);
    mr_blocks_put(b, x);
    assert_reported(v, 1);
    assert_ptr_equal(v->ptr, x);
    void *p = mr_blocks_get(b), *q = mr_blocks_get(b);
    assert_ptr_not_equal(p, q);
    mr_blocks_put(b, p);
    mr_blocks_put(b, q);
    assert_true(mr_blocks_check(b));
    mr_blocks_destroy(b);
}

/* ---- hardened free lists (MR_HARDENED builds) ---- */

/* A use-after-free write of a chosen address into a freed object must not
 * make that address the next one handed out. */
static void test_hardened_links_resist_a_chosen_address(void **state)
{
    (void)state;
    if (!MR_HARDENED || MR_CHECKED)
        skip(); /* plain links, or a checker that would report the write */
    static char target[64];
    mr_objpool *op = mr_objpool_create(32, 8, NULL);
    assert_non_null(op);
    void *a = mr_objpool_alloc(op), *b = mr_objpool_alloc(op);
    assert_non_null(a);
    assert_non_null(b);
    mr_objpool_free(op, b);
    void *chosen = target;
    memcpy(b, &chosen, sizeof chosen); /* the attacker's write */
    assert_ptr_equal(mr_objpool_alloc(op), b);
    const struct mri_objpool_hot *h = (const struct mri_objpool_hot *)(const void *)op;
    assert_ptr_not_equal(h->free, target); /* the next object would be a random address */
    ((struct mri_objpool_hot *)(void *)op)->free = NULL; /* do not follow it */
    mr_objpool_free(op, a);
    mr_objpool_destroy(op);

    mr_pools *pl = mr_pools_create(NULL);
    assert_non_null(pl);
    void *x = mr_pools_alloc(pl, 40, 8), *y = mr_pools_alloc(pl, 40, 8);
    mr_pools_free(pl, y, 40, 8);
    memcpy(y, &chosen, sizeof chosen);
    assert_ptr_equal(mr_pools_alloc(pl, 40, 8), y);
    const struct mri_pools_hot *ph = (const struct mri_pools_hot *)(const void *)pl;
    struct mri_pools_class *c = &ph->classes[mri_pools_class_of(40 - 1)];
    assert_ptr_not_equal(c->free, target);
    c->free = NULL;
    mr_pools_free(pl, x, 40, 8);
    mr_pools_destroy(pl);
}

/* ---- defect 7: a buffer arena not destroyed (ASan builds) ---- */

static MR_NOINLINE void leave_arena_on_stack(void)
{
    alignas(max_align_t) unsigned char buf[2048];
    mr_arena_options o = {.upstream = mr_null_resource(), .buffer = buf, .buffer_size = sizeof buf};
    mr_arena *a = mr_arena_create(&o);
    if (a != NULL)
        (void)mr_arena_alloc(a, 16); /* and no mr_arena_destroy */
}

static MR_NOINLINE void use_the_same_stack(void)
{
    volatile unsigned char other[4096];
    for (size_t i = 0; i < sizeof other; i++)
        other[i] = 1;
}

/* ASan reports the later, innocent use, and its report names the cause. */
static void test_undestroyed_buffer_arena_is_named(void **state)
{
    (void)state;
    if (!MR_SANITIZED)
        skip();
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        leave_arena_on_stack();
        use_the_same_stack();
        _exit(0); /* not reached when ASan reports */
    }
    close(fds[1]);
    static char out[1 << 16];
    size_t n = 0;
    ssize_t k;
    while (n < sizeof out - 1 && (k = read(fds[0], out + n, sizeof out - 1 - n)) > 0)
        n += (size_t)k;
    out[n] = '\0';
    close(fds[0]);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_false(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_non_null(strstr(out, "use-after-poison"));
    assert_non_null(strstr(out, "memres: the buffer"));
    assert_non_null(strstr(out, "never destroyed"));
}

/* ---- the handler itself ---- */

static void test_default_handler_aborts(void **state)
{
    (void)state;
    if (MR_DEBUG < 1)
        skip(); /* release builds report nothing */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        mr_set_violation_handler(NULL, NULL);
        if (freopen("/dev/null", "w", stderr) == NULL)
            _exit(3);
        mr_arena *a = mr_arena_create(NULL), *b = mr_arena_create(NULL);
        mr_arena_rewind(a, mr_arena_save(b)); /* foreign: reported in every build */
        _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGABRT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_stale_mark_never_runs_older_cleanups, setup_handler, teardown_handler),
        cmocka_unit_test_setup_teardown(test_foreign_mark_is_ignored, setup_handler, teardown_handler),
        cmocka_unit_test_setup_teardown(test_forward_mark_never_overlaps, setup_handler, teardown_handler),
        cmocka_unit_test_setup_teardown(test_stale_mark_keeps_older_large_blocks, setup_handler, teardown_handler),
        cmocka_unit_test(test_limit_gives_back_spares_after_reset),
        cmocka_unit_test(test_pools_destroy_returns_memory),
        cmocka_unit_test(test_huge_requests_fail_with_enomem),
        cmocka_unit_test_setup_teardown(test_blocks_double_put_detected, setup_handler, teardown_handler),
        cmocka_unit_test(test_hardened_links_resist_a_chosen_address),
        cmocka_unit_test(test_undestroyed_buffer_arena_is_named),
        cmocka_unit_test(test_default_handler_aborts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
