/* SPDX-License-Identifier: MIT */
/* integrations/itest.h -- what the integrations' cmocka tests share: CHECK
 * (a condition with a printf-style message), a growing text buffer (plain
 * malloc: never the allocator under test) and reading a whole file.
 * Header-only; each test program defines ITEST_NAME and includes cmocka.h
 * before it. */
#ifndef MEMRES_ITEST_H
#define MEMRES_ITEST_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A failed check ends the cmocka case with the message (include cmocka.h
 * first; never from a thread other than the case's). */
#define CHECK(cond, ...)             \
    do {                             \
        if (!(cond))                 \
            fail_msg(__VA_ARGS__);   \
    } while (0)

typedef struct text {
    char *s;
    size_t n, cap;
} text;

static void text_add(text *t, const char *s, size_t n)
{
    if (t->n + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 256;
        while (cap < t->n + n + 1)
            cap *= 2;
        char *ns = realloc(t->s, cap);
        if (ns == NULL) {
            fputs(ITEST_NAME ": out of memory\n", stderr);
            exit(2);
        }
        t->s = ns;
        t->cap = cap;
    }
    memcpy(t->s + t->n, s, n);
    t->n += n;
    t->s[t->n] = '\0';
}

static inline void text_puts(text *t, const char *s) { text_add(t, s, strlen(s)); }

/* The whole file, NUL-terminated (exits on error). */
static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        perror(path);
        exit(2);
    }
    text t = {0};
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        text_add(&t, buf, n);
    fclose(f);
    if (len != NULL)
        *len = t.n;
    return t.s;
}

#endif
