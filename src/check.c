/* src/check.c -- where every failed check of memres is reported (the tiers
 * and macros are in internal.h).
 *
 * Three kinds of report, each one line on stderr starting "memres: ":
 *   mri_misuse       a caller misused the API (debug builds; the caller
 *                    then takes its safe way out if this returns).  Today
 *                    it aborts; it is the one place a user-set violation
 *                    handler will plug in.
 *   mri_check_fail   an invariant of memres itself failed: a bug, or memory
 *                    corrupted behind the allocator's back.  Aborts.
 *   mri_verify_report  a walker (mr_<object>_check) found a violation; the
 *                    walker returns false to its caller.
 */
#include <stdarg.h>

#include "internal.h"

void mri_misuse(const char *what, const void *ptr, const char *file, int line, const char *func)
{
    fprintf(stderr, "memres: misuse: %s (pointer %p) at %s:%d in %s\n", what, ptr, file, line, func);
    fflush(stderr);
    abort();
}

void mri_check_fail(const char *expr, const char *msg, const char *file, int line, const char *func)
{
    fprintf(stderr, "memres: %s:%d: %s: %s (check '%s' failed)\n", file, line, func, msg, expr);
    fflush(stderr);
    abort();
}

void mri_verify_report(const char *who, const void *obj, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "memres: %s(%p): ", who, obj);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}
