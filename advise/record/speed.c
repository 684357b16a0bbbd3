/* SPDX-License-Identifier: MIT */
/* advise/record/speed.c -- the machine's speed on the recorded program's
 * own thread (format.h's speed section): the calibration's probe
 * (common/probe.h) on glibc's own malloc and free, once at start-up, before
 * anything is recorded, and once at exit, after the heap's last reading,
 * so that neither counts in the program's figures.  A shared host runs one
 * virtual CPU or one stretch of time slower than another (a recording of
 * kat_mixed pinned to each vCPU of this project's VMs timed 119-138 ms and
 * 71 ms of glibc in the same site); the analysis divides the run's timed
 * figures by this against the calibration. */
#include "record.h"
#include "probe.h"

static struct mra_speed speed;
static void *probe_v[MRA_PROBE_LIVE];

void mrr_speed_probe(bool at_exit)
{
    uint64_t c0 = mra_cpu_ns();
    double ns = mra_probe_pairs(__libc_malloc, __libc_free, probe_v);
    if (at_exit) {
        speed.exit_ns = ns;
    } else {
        /* the probe's freed chunks back into the heap's top and the top
         * trimmed: the program starts on the heap it would have had */
        malloc_trim(0);
        speed.start_ns = ns;
    }
    speed.cost_ns += mra_cpu_ns() - c0;
}

void mrr_speed_get(struct mra_speed *out)
{
    *out = speed;
}
