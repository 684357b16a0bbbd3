/* SPDX-License-Identifier: MIT */
/* examples/parse_records.c -- a line-oriented "key=value" parser whose records
 * live in an arena, one batch at a time.
 *
 * Input: lines "key = value"; '#' starts a comment line; a blank line ends a
 * batch.  Each batch is read, parsed into a linked list of records, reported,
 * and then the arena is rewound to the mark saved before the batch: every
 * line buffer, key, value and record of the batch goes at once, and the next
 * batch reuses the same memory -- no free() per record, no leaks on the
 * error paths, and no upstream (malloc) calls once the arena has grown to the
 * size of the largest batch.
 *
 * Usage: parse_records            parse the built-in sample
 *        parse_records FILE       parse FILE ("-" for stdin)
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <memres/memres.h>

typedef struct record {
    const char *key, *value;
    struct record *next;
} record;

static const char sample[] =
    "# orders: one batch per paragraph\n"
    "id = 1\n"
    "item = apple\n"
    "qty = 3\n"
    "\n"
    "id = 2\n"
    "item = pear\n"
    "\n"
    "id = 3\n"
    "item = plum\n"
    "qty = 12\n"
    "note = ripe, sweet\n";

/* Where lines come from: a FILE, or else a string. */
typedef struct source {
    FILE *file;
    const char *text;
} source;

/* Reads the next line, without its newline, into the arena.  Returns 1 with
 * *out set, 0 at the end of the input, -1 on error (errno set).  While a long
 * line is read, its buffer is the arena's newest allocation, so
 * mr_arena_realloc grows it in place instead of copying. */
static int next_line(mr_arena *a, source *src, char **out)
{
    if (src->file == NULL) {
        if (*src->text == '\0')
            return 0;
        size_t n = strcspn(src->text, "\n");
        if ((*out = mr_arena_strndup(a, src->text, n)) == NULL)
            return -1;
        src->text += n + (src->text[n] == '\n');
        return 1;
    }
    size_t cap = 64, len = 0;
    char *buf = mr_arena_alloc(a, cap);
    if (buf == NULL)
        return -1;
    for (;;) {
        size_t room = cap - len;
        if (fgets(buf + len, room > 65536 ? 65536 : (int)room, src->file) == NULL)
            break;
        len += strlen(buf + len);
        if (len > 0 && buf[len - 1] == '\n') {
            buf[len - 1] = '\0';
            *out = buf;
            return 1;
        }
        if (len + 1 < cap)
            continue; /* a short read without newline: end of file next */
        char *bigger = mr_arena_realloc(a, buf, cap, cap * 2);
        if (bigger == NULL)
            return -1;
        buf = bigger;
        cap *= 2;
    }
    if (ferror(src->file))
        return -1;
    if (len == 0)
        return 0;
    *out = buf;
    return 1;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

/* Runs when the batch's memory is freed (the rewind below), before it is. */
static void batch_done(void *arg)
{
    const size_t *number = arg; /* lives in the arena: still valid here */
    printf("  (batch %zu released)\n", *number);
}

/* Reports one batch.  The summary string is built in the arena too. */
static int report(mr_arena *a, size_t number, const record *first, size_t count, size_t errors)
{
    char *keys = mr_arena_strdup(a, "");
    size_t shown = 0;
    for (const record *r = first; r != NULL && keys != NULL; r = r->next) {
        if (shown++ == 4) {
            keys = mr_arena_sprintf(a, "%s, ...", keys);
            break;
        }
        keys = mr_arena_sprintf(a, "%s%s%s", keys, shown > 1 ? ", " : "", r->key);
    }
    if (keys == NULL)
        return -1;
    printf("batch %zu: %zu records, %zu errors (%s)\n", number, count, errors, keys);
    return 0;
}

int main(int argc, char **argv)
{
    source src = {NULL, sample};
    if (argc > 1)
        src.file = strcmp(argv[1], "-") == 0 ? stdin : fopen(argv[1], "r");
    if (argc > 1 && src.file == NULL) {
        perror(argv[1]);
        return 1;
    }

    /* The default upstream (malloc); 4 KiB first block, growing as needed. */
    mr_arena *a = mr_arena_create(NULL);
    if (a == NULL) {
        perror("mr_arena_create");
        return 1;
    }

    size_t batches = 0, upstream_after_first = 0;
    int status = 0, more = 1;
    while (more) {
        mr_arena_mark batch_start = mr_arena_save(a);
        record *first = NULL, **tail = &first;
        size_t count = 0, errors = 0;
        char *line;
        int got;
        while ((got = next_line(a, &src, &line)) == 1) {
            char *s = trim(line);
            if (*s == '\0')
                break; /* end of the batch */
            if (*s == '#')
                continue;
            char *eq = strchr(s, '=');
            if (eq == NULL || eq == s) {
                errors++; /* not "key=value" */
                continue;
            }
            record *r = mr_arena_alloc(a, sizeof *r);
            if (r == NULL) {
                got = -1;
                break;
            }
            *eq = '\0';
            r->key = trim(s);
            r->value = trim(eq + 1);
            r->next = NULL;
            *tail = r;
            tail = &r->next;
            count++;
        }
        if (got < 0) {
            perror("reading");
            status = 1;
        }
        more = got == 1;
        if (count + errors > 0) {
            size_t *number = mr_arena_alloc(a, sizeof *number);
            if (number == NULL || mr_arena_defer(a, batch_done, number) != 0) {
                perror("arena");
                status = 1;
            } else {
                *number = ++batches;
                if (report(a, batches, first, count, errors) != 0)
                    status = 1;
            }
        }
        /* Everything of this batch goes at once; batch_done runs first. */
        mr_arena_rewind(a, batch_start);
        if (batches == 1 && upstream_after_first == 0) {
            mr_stats st;
            mr_arena_stats(a, &st);
            upstream_after_first = st.upstream_allocations;
        }
    }

    mr_stats st;
    mr_arena_stats(a, &st);
    printf("%zu batches; arena holds %zu bytes (peak %zu), %zu upstream allocations\n",
           batches, st.held, st.peak_held, st.upstream_allocations);
    if (st.upstream_allocations == upstream_after_first)
        printf("steady state: no upstream calls after the first batch\n");
    else
        printf("steady state after growth: %zu upstream calls after the first batch\n",
               st.upstream_allocations - upstream_after_first);
    mr_arena_destroy(a);
    if (src.file != NULL && src.file != stdin)
        fclose(src.file);
    return status;
}
