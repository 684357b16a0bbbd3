/* SPDX-License-Identifier: MIT */
/* src/track.c -- the sanitizer code that needs state (ASan builds only; the
 * rest of track.h is macros): the buffers that arenas have lent and
 * poisoned.
 *
 * An arena over a caller's buffer poisons the buffer's free part and
 * unpoisons it at destroy.  When the arena is never destroyed and the
 * buffer was on the stack, the stack stays poisoned, and ASan later reports
 * a use-after-poison in whatever function reuses that stack -- far from the
 * cause.  So lent buffers are listed here (a fixed table: no allocation,
 * best effort beyond its size), and a death callback, installed on the first
 * loan, ends every ASan report with one line per buffer still lent.
 *
 * Thread-safety: a mutex around the table; the callback reads it without
 * taking the lock (the process is dying; a torn entry is at worst a wrong
 * address in a hint).
 */
#include "internal.h"
#include "track.h"

#ifdef MRI_ASAN
#  include <pthread.h>
#  include "lock.h"
#  include <sanitizer/common_interface_defs.h>

#  define LENT_MAX 64

static struct {
    const void *buf;
    size_t n;
} lent[LENT_MAX];
static mri_lock lent_lock = MRI_LOCK_INIT;
static pthread_once_t lent_once = PTHREAD_ONCE_INIT;

static void report_lent(void)
{
    for (size_t i = 0; i < LENT_MAX; i++)
        if (lent[i].buf != NULL)
            fprintf(stderr,
                    "memres: the buffer [%p, %p) of an arena that was never destroyed is still poisoned; a report "
                    "on it is that missing mr_arena_destroy, not a bug where it was reported\n",
                    lent[i].buf, (const void *)((const char *)lent[i].buf + lent[i].n));
}

static void install(void) { __sanitizer_set_death_callback(report_lent); }

void mri_track_lend(const void *buf, size_t n)
{
    (void)pthread_once(&lent_once, install);
    mri_lock_take(&lent_lock);
    for (size_t i = 0; i < LENT_MAX; i++) {
        if (lent[i].buf == NULL) {
            lent[i].buf = buf;
            lent[i].n = n;
            break;
        }
    }
    mri_lock_give(&lent_lock);
}

void mri_track_unlend(const void *buf)
{
    mri_lock_take(&lent_lock);
    for (size_t i = 0; i < LENT_MAX; i++) {
        if (lent[i].buf == buf) {
            lent[i].buf = NULL;
            break;
        }
    }
    mri_lock_give(&lent_lock);
}
#else
/* ISO C wants a translation unit to declare something. */
typedef int mri_track_empty;
#endif
