/* SPDX-License-Identifier: MIT */
/* examples/scratch_merge.c -- build a result in a scratch arena, then keep it
 * (mr_arena_merge into the long-lived arena) or drop it (destroy the
 * scratch), the way git builds objects in a temporary mem-pool and combines
 * it into the repository's.
 *
 * A "transaction" parses a line of comma-separated words into a list.  A line
 * with an empty word is rejected: everything the transaction allocated goes
 * with its scratch arena.  An accepted line is merged: its list lives as long
 * as the document arena, and the scratch arena is reused for the next line.
 *
 * Expected output ends with: "kept 3 lines, dropped 2, document holds 9 words". */
#include <stdio.h>
#include <string.h>

#include <memres/memres.h>

struct word {
    struct word *next;
    const char *text;
};

/* Parses one line into a list built entirely in `scratch`; NULL when the
 * line is rejected (an empty word) or memory ran out. */
static struct word *parse(mr_arena *scratch, const char *line, size_t *count)
{
    struct word *head = NULL, **tail = &head;
    *count = 0;
    for (const char *p = line;;) {
        size_t n = strcspn(p, ",");
        if (n == 0)
            return NULL; /* rejected: the caller drops the scratch arena */
        struct word *w = mr_arena_alloc(scratch, sizeof *w);
        char *text = mr_arena_strndup(scratch, p, n);
        if (w == NULL || text == NULL)
            return NULL;
        *w = (struct word){NULL, text};
        *tail = w;
        tail = &w->next;
        ++*count;
        if (p[n] == '\0')
            return head;
        p += n + 1;
    }
}

int main(void)
{
    static const char *const lines[] = {"alpha,beta,gamma", "delta,,epsilon", "zeta,eta", "theta,iota,kappa,lambda",
                                        ",mu"};
    mr_arena *doc = mr_arena_create(NULL);
    mr_arena *scratch = mr_arena_create(NULL);
    if (doc == NULL || scratch == NULL)
        return 1;
    struct word *kept[8];
    size_t nkept = 0, dropped = 0, words = 0;
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        size_t count;
        struct word *list = parse(scratch, lines[i], &count);
        if (list != NULL && mr_arena_merge(doc, scratch) == 0) {
            kept[nkept++] = list; /* now lives as long as doc */
            words += count;
        } else {
            dropped++;
            mr_arena_reset(scratch); /* drop the half-built result, keep the memory */
        }
    }
    mr_arena_destroy(scratch); /* the kept lists do not depend on it */
    for (size_t i = 0; i < nkept; i++) {
        for (struct word *w = kept[i]; w != NULL; w = w->next)
            printf("%s%s", w->text, w->next != NULL ? " " : "\n");
    }
    printf("kept %zu lines, dropped %zu, document holds %zu words\n", nkept, dropped, words);
    mr_arena_destroy(doc);
    return 0;
}
