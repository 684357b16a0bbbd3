/* SPDX-License-Identifier: MIT */
/* tests/install/consumer.c -- a program that uses memres the way an outside
 * project does: only the installed headers and library, found through the
 * CMake package or through pkg-config.  Exits 0 when the library works. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <memres/memres.h>

#if !defined(MEMRES_VERSION) || MEMRES_VERSION < MEMRES_MAKE_VERSION(0, 1, 0)
#  error "memres.h does not define a usable version"
#endif

static int cleaned;

static void cleanup(void *arg)
{
    (void)arg;
    cleaned++;
}

int main(void)
{
    mr_arena *a = mr_arena_create(NULL);
    if (a == NULL)
        return 1;
    char *s = mr_arena_sprintf(a, "memres %s", MEMRES_VERSION_STRING);
    mr_arena_mark m = mr_arena_save(a);
    int *xs = mr_arena_alloc(a, 100 * sizeof *xs);
    if (xs == NULL || s == NULL || mr_arena_defer(a, cleanup, NULL) != 0)
        return 1;
    for (int i = 0; i < 100; i++)
        xs[i] = i;
    mr_arena_rewind(a, m);
    if (cleaned != 1 || mr_arena_alloc(a, 100 * sizeof *xs) != (void *)xs)
        return 1;
    errno = 0;
    if (mr_allocate(mr_null_resource(), 1, 1) != NULL || errno != ENOMEM)
        return 1;
    printf("consumer: %s ok\n", s);
    mr_arena_destroy(a);
    return 0;
}
