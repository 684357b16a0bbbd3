/* SPDX-License-Identifier: MIT */
/* advise/record/start.c -- start-up: the environment the driver set
 * taken (and removed, LD_PRELOAD restored, so that only the process
 * started is profiled), the tables mapped, the trace opened, the clocks
 * calibrated; and a fork's child, which records and writes nothing. */
#include <dlfcn.h>
#include <sys/auxv.h>
#include <unwind.h>

#include "record.h"

static void fork_child(void)
{
    atomic_store_explicit(&g_state, ST_CHILD, memory_order_relaxed);
    g_trace_fd = -1; /* the parent's: never written by the child */
}

static _Unwind_Reason_Code noop_cb(struct _Unwind_Context *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    return _URC_NO_REASON;
}

/* Every MEMRES_ADVISE_ variable left removed (common/preload.h's
 * environ edits: the program may have its own unsetenv). */
static void env_clean(void)
{
    char **w = environ;
    if (!w)
        return;
    for (char **e = environ; *e; e++)
        if (strncmp(*e, "MEMRES_ADVISE_", 14) != 0)
            *w++ = *e;
    *w = NULL;
}
__attribute__((constructor(101))) static void rec_init(void)
{
    int expect = ST_INIT;
    if (atomic_load(&g_state) != ST_INIT)
        return;
    tls_guard++;
    int e = errno;
    long ps = sysconf(_SC_PAGESIZE);
    if (ps > 0)
        g_pagesize = (size_t)ps;
    bool have_prof, have_depth, have_trace, have_preload, have_stack, have_sample, have_side;
    char depth[32], preload[4096], stack[32], sample[32], side[32];
    mra_env_take("MEMRES_ADVISE_PROFILE", g_profile, sizeof g_profile, &have_prof);
    mra_env_take("MEMRES_ADVISE_DEPTH", depth, sizeof depth, &have_depth);
    mra_env_take("MEMRES_ADVISE_TRACE", g_trace_path, sizeof g_trace_path, &have_trace);
    mra_env_take("MEMRES_ADVISE_PRELOAD", preload, sizeof preload, &have_preload);
    mra_env_take("MEMRES_ADVISE_STACK", stack, sizeof stack, &have_stack); /* for measurements */
    mra_env_take("MEMRES_ADVISE_SAMPLE", sample, sizeof sample, &have_sample);
    mra_env_take("MEMRES_ADVISE_SIDE_MAX", side, sizeof side, &have_side); /* for tests */
    env_clean();
    /* LD_PRELOAD as it was before the driver: set (possibly to "") when
     * the driver passed it, unset when it did not */
    if (have_prof)
        mra_env_restore_preload(preload, have_preload);
    if (!have_prof || !g_profile[0]) {
        atomic_store(&g_state, ST_OFF);
        goto out;
    }
    if (have_depth) {
        long d = strtol(depth, NULL, 10);
        if (d >= 1)
            g_depth = d > (long)MRA_MAX_DEPTH ? MRA_MAX_DEPTH : (unsigned)d;
    }
    if (have_stack) {
        if (strcmp(stack, "unwind") == 0)
            g_stack_mode = STACK_UNWIND;
        else if (strcmp(stack, "fp") == 0)
            g_stack_mode = STACK_FP;
        else if (strcmp(stack, "ra") == 0)
            g_stack_mode = STACK_RA;
    }
    /* sampled: a weight fits the header's byte (16 bytes at 4032: 252.5);
     * a trace needs every event, so it wins */
    if (have_sample && !(have_trace && g_trace_path[0])) {
        long b = strtol(sample, NULL, 10);
        if (b >= 16 && b <= 4032) {
            g_sample_bytes = (double)b;
            g_sampling = true;
            long m = have_side ? strtol(side, NULL, 10) : 0;
            if (m >= 1 && m < (long)SIDE_MAX)
                g_side_max = (uint32_t)m;
            mrr_side_start(); /* none mapped: the headers stay in the objects */
        }
    }
    /* the stack cache: the cached walk's mode, 2..SK_FRAMES frames */
    g_sk_on = g_stack_mode == STACK_CACHE && g_depth - 2u < SK_FRAMES - 1u;
    g_secret = mra_secret();
    g_usable = mra_next_usable();
    ssize_t n = readlink("/proc/self/exe", g_exe, sizeof g_exe - 1);
    g_exe[n > 0 ? (size_t)n : 0] = 0;
    g_slots = mrr_imap(sizeof(uint32_t) << SLOT_BITS);
    g_sites = mrr_imap(sizeof(struct gsite *) << SLOT_BITS);
    g_gkeys = mrr_imap(sizeof(uint64_t) << SLOT_BITS);
    g_gsite = mrr_imap(sizeof(uint32_t) << SLOT_BITS);
    mra_fsz = mrr_imap(sizeof(uint64_t) << MRA_FSZ_BITS);
    if (!g_slots || !g_sites || !g_gkeys || !g_gsite || !mra_fsz || pthread_key_create(&g_key, mrr_thread_exit) != 0) {
        atomic_store(&g_state, ST_OFF);
        goto out;
    }
    pthread_atfork(NULL, NULL, fork_child);
    if (have_trace && g_trace_path[0])
        mrr_trace_open();
    _Unwind_Backtrace(noop_cb, NULL); /* libgcc's own set-up, here */
    mrr_clock_calibrate();
    mrr_timer_calibrate();
    mrr_speed_probe(false);
    g_start_ns = mra_mono_ns();
    mrr_tl_start();
    mrr_heap_start();
    atomic_compare_exchange_strong(&g_state, &expect, ST_REC);
out:
    errno = e;
    tls_guard--;
}
