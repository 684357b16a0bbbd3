/* SPDX-License-Identifier: MIT */
/* examples/stack_arena.c -- an arena over a buffer on the stack, with the null
 * resource as its upstream: it never touches the heap.
 *
 * Useful where malloc is unwelcome (a signal handler's scratch space, a hot
 * loop, an embedded target) or to put a hard cap on what a piece of code may
 * use.  When the buffer is full, allocation fails cleanly (NULL, ENOMEM) and
 * the arena stays usable: rewind to a mark and carry on.
 *
 * The program splits sentences into words in the arena, fills it to the brim
 * on purpose, and checks every step; it exits 0 when all checks pass.
 */
#include <errno.h>
#include <stdalign.h>
#include <stdio.h>
#include <string.h>

#include <memres/memres.h>

static int failures;

#define CHECK(cond)                                                        \
    do {                                                                   \
        if (!(cond)) {                                                     \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            failures++;                                                    \
        }                                                                  \
    } while (0)

/* Splits s at spaces into an array of words, all in the arena.  Returns the
 * number of words, or 0 with errno set when the arena is full. */
static size_t split(mr_arena *a, const char *s, char ***out)
{
    size_t cap = 4, n = 0;
    char **words = mr_arena_alloc(a, cap * sizeof *words);
    if (words == NULL)
        return 0;
    while (*s != '\0') {
        size_t len = strcspn(s, " ");
        if (len > 0) {
            if (n == cap) {
                /* words is not the newest allocation (the last word is), so
                 * this copies; the old array is freed with the rest. */
                char **bigger = mr_arena_realloc(a, words, cap * sizeof *words, 2 * cap * sizeof *words);
                if (bigger == NULL)
                    return 0;
                words = bigger;
                cap *= 2;
            }
            if ((words[n] = mr_arena_strndup(a, s, len)) == NULL)
                return 0;
            n++;
        }
        s += len + (s[len] == ' ');
    }
    *out = words;
    return n;
}

int main(void)
{
    alignas(max_align_t) unsigned char buffer[4096];
    mr_arena_options opts = {
        .upstream = mr_null_resource(), /* no heap, ever */
        .buffer = buffer,
        .buffer_size = sizeof buffer,
    };
    mr_arena *a = mr_arena_create(&opts);
    if (a == NULL) {
        perror("mr_arena_create");
        return 1;
    }
    /* The arena's own header lives in the buffer too. */
    CHECK((unsigned char *)a >= buffer && (unsigned char *)a < buffer + sizeof buffer);

    const char *sentences[] = {
        "the quick brown fox jumps over the lazy dog",
        "an arena frees everything at once",
        "a stack buffer and the null resource never touch the heap",
    };
    mr_arena_mark start = mr_arena_save(a);
    for (size_t i = 0; i < sizeof sentences / sizeof sentences[0]; i++) {
        char **words;
        size_t n = split(a, sentences[i], &words);
        CHECK(n > 0);
        for (size_t w = 0; w < n; w++) {
            CHECK((unsigned char *)words[w] >= buffer && (unsigned char *)words[w] < buffer + sizeof buffer);
        }
        printf("sentence %zu: %zu words, last \"%s\"\n", i + 1, n, n > 0 ? words[n - 1] : "");
        mr_arena_rewind(a, start); /* the next sentence reuses the same bytes */
    }

    /* Fill the buffer to the brim: allocation then fails cleanly. */
    size_t count = 0;
    char *first = NULL, *s;
    errno = 0;
    while ((s = mr_arena_sprintf(a, "item %zu", count)) != NULL) {
        if (first == NULL)
            first = s;
        count++;
    }
    CHECK(errno == ENOMEM);
    CHECK(count > 10);
    printf("buffer full after %zu strings: %s\n", count, strerror(errno));

    /* Still usable: rewind and the same memory is handed out again. */
    mr_arena_rewind(a, start);
    char *again = mr_arena_sprintf(a, "item %d", 0);
    CHECK(again != NULL && again == first && strcmp(again, "item 0") == 0);

    mr_stats st;
    mr_arena_stats(a, &st);
    CHECK(st.held == 0 && st.upstream_allocations == 0);
    printf("upstream bytes held: %zu, upstream allocations: %zu\n", st.held, st.upstream_allocations);

    mr_arena_destroy(a); /* nothing to free: the buffer is ours */
    if (failures == 0)
        printf("stack arena: all checks passed\n");
    else
        printf("stack arena: %d checks failed\n", failures);
    return failures == 0 ? 0 : 1;
}
