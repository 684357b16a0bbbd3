/* SPDX-License-Identifier: MIT */
/* advise/record/state.c -- the recorder's global state (record.h says
 * what each part is for and which file writes it) and its own memory:
 * the tables it maps (mrr_imap, read back by mrr_resident for the
 * profile's recorder_peak_bytes) and what it allocates from glibc
 * (mrr_imalloc, mrr_ifree: counted in g_rec_mem). */
#include <sys/mman.h>

#include "record.h"

_Atomic int g_state = ST_INIT;
int g_stack_mode = STACK_CACHE;
unsigned g_depth = 4u + MRA_FOLD_EXTRA;
bool g_sk_on;
bool g_sampling;
double g_sample_bytes;
uint64_t g_secret;
_Atomic int g_multi;              /* a second thread has recorded */
_Atomic uint64_t g_tick = 1;      /* the allocation clock */
_Atomic uint32_t g_nthreads;
_Atomic uint64_t g_foreign;
_Atomic uint64_t g_all_allocs, g_all_bytes, g_all_frees, g_all_reallocs;
_Atomic int64_t g_hook_time;      /* merged tstate.hook_time */
_Atomic uint64_t g_max_tick;
uint64_t g_start_ns;
char g_profile[4096];
char g_trace_path[4096];
char g_exe[256];
int g_trace_fd = -1;
pthread_key_t g_key;
size_t g_pagesize = 4096;
size_t (*g_usable)(void *);

/* program-wide live and peak */
_Atomic uint64_t g_live_bytes, g_live_objects, g_peak_bytes, g_peak_objects;
struct mrr_tl_peak g_tl_peak;     /* the timeline's (timeline.c) */
/* the recorder's own memory (tables, thread states, sites; not headers) */
_Atomic uint64_t g_rec_mem, g_rec_mem_peak;

pthread_mutex_t g_site_mu = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t g_merge_mu = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t g_list_mu = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t g_trace_mu = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t g_mod_mu = PTHREAD_MUTEX_INITIALIZER;
uint64_t g_trace_events, g_trace_bytes; /* under g_trace_mu */

/* per thread */
TLS int tls_guard;                /* >0: pass through unrecorded */
TLS struct tstate *tls_ts;
TLS int tls_dead;                 /* the thread's state was merged and freed */

/* time (clock.c calibrates; now_time and friends read) */
bool g_use_tsc;
uint64_t g_tsc_mult = UINT64_C(1) << 32; /* ns = ticks * mult >> 32 */
int64_t g_fenced_cost;                   /* a fenced empty interval, on average */
int64_t g_timer_cost;                    /* a plain empty interval, the least seen */
int64_t g_plain_fenced_cost;             /* a plain read then a fenced one, on average */
int64_t g_fenced_plain_cost;             /* a fenced read then a plain one, on average */
int64_t g_slow;
int64_t g_clip, g_clip_page;             /* the longest sample kept, and per 4 KiB asked */

/* sites (sites.c; the frame sizes are common/walk.c's) */
_Atomic uint32_t *g_slots;        /* hash -> site id */
uint64_t *g_gkeys;                /* group key -> ... (under g_site_mu) */
uint32_t *g_gsite;                /* ... the group's first site */
struct gsite **g_sites;           /* id -> site */
_Atomic uint32_t g_nsites;
struct tstate *g_threads;         /* under g_list_mu */
_Atomic uint64_t g_sites_dropped;

/* modules (modules.c) */
struct module *g_mods;            /* under g_mod_mu */
size_t g_nmods, g_capmods;

/* ---- the recorder's own memory ---- */

void mrr_rec_mem_add(int64_t d)
{
    uint64_t v = atomic_fetch_add_explicit(&g_rec_mem, (uint64_t)d, memory_order_relaxed) + (uint64_t)d;
    uint64_t p = atomic_load_explicit(&g_rec_mem_peak, memory_order_relaxed);
    while (v > p && !atomic_compare_exchange_weak_explicit(&g_rec_mem_peak, &p, v,
                                                            memory_order_relaxed, memory_order_relaxed)) {
    }
}

void *mrr_imalloc(size_t n)
{
    void *p = __libc_calloc(1, n);
    if (p)
        mrr_rec_mem_add((int64_t)n);
    return p;
}

void *mrr_imalloc_lines(size_t n)
{
    void *p = __libc_memalign(64, n);
    if (p) {
        memset(p, 0, n);
        mrr_rec_mem_add((int64_t)n);
    }
    return p;
}

void mrr_ifree(void *p, size_t n)
{
    if (p) {
        __libc_free(p);
        mrr_rec_mem_add(-(int64_t)n);
    }
}

void *mrr_imap(size_t n)
{
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void *mrr_imap_populated(size_t n)
{
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* bytes of [p, p+n) mrr_resident (the big tables are touched sparsely) */
uint64_t mrr_resident(const void *p, size_t n)
{
    if (!p)
        return 0;
    size_t pages = (n + g_pagesize - 1) / g_pagesize;
    unsigned char vec[4096];
    uint64_t r = 0;
    for (size_t i = 0; i < pages; i += sizeof vec) {
        size_t k = pages - i < sizeof vec ? pages - i : sizeof vec;
        if (mincore((char *)(uintptr_t)p + i * g_pagesize, k * g_pagesize, vec) != 0)
            return (uint64_t)n;
        for (size_t j = 0; j < k; j++)
            r += vec[j] & 1u;
    }
    return r * g_pagesize;
}
