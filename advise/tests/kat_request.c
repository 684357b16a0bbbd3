/* SPDX-License-Identifier: MIT */
/* advise/tests/kat_request.c -- known answer for memres-advise: a server
 * loop whose per-request temporaries die at the end of each request while
 * the responses live on.
 *
 *   kat_request [malloc|memres] [N]          (default: malloc 20000)
 *
 * N requests; each makes 20..100 temporaries of 16 B..1 KiB (log-uniform,
 * from a seeded generator) at one line (KAT-SITE below, through the
 * wrapper xmalloc), writes and reads them, frees them all at the end of
 * the request, and keeps a response of 64..256 bytes (KAT-ALSO below) in
 * the server's log, which lives until the process exits.  The answer: an
 * arena for the temporaries, reset per request; the responses need
 * nothing (or an arena: they are never freed).  The memres variant applies
 * the first: the temporaries come from one mr_arena, mr_arena_reset after
 * each request; the responses stay on malloc.
 *
 * stdout: a checksum; stderr: "KAT-COUNT SITE n" and "KAT-COUNT ALSO n".
 * Exit 0.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memres/arena.h"

#define KAT_NAME "kat_request"
#include "kat.h"

#define MAX_TEMPS 100

typedef struct response {
    struct response *next;
    uint64_t request, digest;
    char text[];
} response;

static uint64_t temp_count, response_count;

static unsigned char *new_temp(mr_arena *a, size_t size)
{
    unsigned char *t;
    if (a != NULL) {
        t = mr_arena_alloc(a, size);
        if (t == NULL)
            abort();
    } else {
        t = xmalloc(size); /* KAT-SITE: arena */
        temp_count++;
    }
    return t;
}

static response *new_response(uint64_t request, uint64_t digest, size_t size)
{
    response *r = xmalloc(size); /* KAT-ALSO: none arena */
    response_count++;
    r->next = NULL;
    r->request = request;
    r->digest = digest;
    snprintf(r->text, size - sizeof *r, "request %" PRIu64 " digest %016" PRIx64, request, digest);
    return r;
}

int main(int argc, char **argv)
{
    int memres = argc > 1 && strcmp(argv[1], "memres") == 0;
    long n = argc > 2 ? atol(argv[2]) : 20000;
    mr_arena *a = NULL;
    if (memres && (a = mr_arena_create(NULL)) == NULL) {
        fputs("kat_request: mr_arena_create failed\n", stderr);
        return 1;
    }
    uint64_t seed = 0x72657175657374ULL, sum = 0;
    response *log = NULL, **tail = &log;
    unsigned char *temp[MAX_TEMPS];
    size_t tsize[MAX_TEMPS];
    for (long i = 0; i < n; i++) {
        int k = 20 + (int)(next_rand(&seed) % 81);
        uint64_t digest = 0xcbf29ce484222325ULL;
        for (int j = 0; j < k; j++) {
            uint64_t r = next_rand(&seed);
            size_t base = (size_t)16 << (r & 7); /* 16 .. 2048 */
            size_t size = base + (size_t)((r >> 3) % base);
            if (size > 1024)
                size = 1024;
            temp[j] = new_temp(a, size);
            tsize[j] = size;
            memset(temp[j], (int)(r >> 40) & 0xff, size < 64 ? size : 64);
            temp[j][size - 1] = (unsigned char)j;
        }
        for (int j = 0; j < k; j++) {
            uint64_t v = temp[j][0];
            v += temp[j][tsize[j] - 1];
            digest = (digest ^ v) * 0x100000001b3ULL;
        }
        if (a != NULL) {
            mr_arena_reset(a);
        } else {
            for (int j = 0; j < k; j++)
                free(temp[j]); /* KAT-FREE */
        }
        response *resp = new_response((uint64_t)i, digest, 64 + (size_t)(digest % 193));
        *tail = resp;
        tail = &resp->next;
        sum += digest >> 8;
    }
    uint64_t chars = 0;
    for (const response *r = log; r != NULL; r = r->next)
        chars += strlen(r->text);
    mr_arena_destroy(a);
    printf("request: %ld requests, %" PRIu64 " characters of responses\n", n, chars);
    printf("checksum %" PRIu64 "\n", sum);
    fprintf(stderr, "KAT-COUNT SITE %" PRIu64 "\n", temp_count);
    fprintf(stderr, "KAT-COUNT ALSO %" PRIu64 "\n", response_count);
    return 0; /* the log lives until exit */
}
