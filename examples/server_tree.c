/* SPDX-License-Identifier: MIT */
/* examples/server_tree.c -- the tree of lifetimes (memres/tree.h) in the
 * shape of a server: a server arena, a child arena per connection, and a
 * child arena per request for its temporaries, as Apache gives each
 * connection and request an APR subpool and PostgreSQL each query a memory
 * context.
 *
 * A request parses "key=value" words into a list built in the request's
 * arena (the temporaries), and keeps one summary string in the
 * connection's arena (the result).  Destroying the request frees its
 * temporaries; destroying the connection frees its results and any
 * request still open under it.  The connection keeps each dead request's
 * arena for the next request (memres/tree.h, "Cheap children"), so after
 * the first request there are no upstream calls: the example counts them
 * with mr_counting (memres/adaptors.h).
 *
 * Before closing, it prints the tree in PostgreSQL's MemoryContextStats form
 * and as JSON Lines (mr_report).  Expected output ends with
 * "upstream calls after the first request of each connection: 0". */
#include <stdio.h>
#include <string.h>

#include <memres/memres.h>

struct pair {
    struct pair *next;
    const char *key, *value;
};

/* Parses "k=v k=v ..." into a list in the request's arena; NULL when a word
 * has no '=' or memory ran out. */
static struct pair *parse(mr_arena *request, const char *line, size_t *n)
{
    struct pair *head = NULL;
    *n = 0;
    char *copy = mr_arena_strdup(request, line); /* a temporary: cut into words in place */
    if (copy == NULL)
        return NULL;
    for (char *w = copy; *w != '\0';) {
        size_t len = strcspn(w, " ");
        char *next = w[len] != '\0' ? w + len + 1 : w + len;
        w[len] = '\0';
        char *eq = strchr(w, '=');
        struct pair *p = mr_arena_alloc(request, sizeof *p);
        if (eq == NULL || p == NULL)
            return NULL;
        *eq = '\0';
        *p = (struct pair){head, w, eq + 1};
        head = p;
        ++*n;
        w = next;
    }
    return head;
}

/* One request: temporaries in a child of the connection, the summary in the
 * connection.  Returns the summary, or NULL. */
static const char *handle(mr_arena *conn, const char *line)
{
    mr_arena *request = mr_arena_create(&(mr_arena_options){.name = "request", .parent = mr_arena_node(conn)});
    if (request == NULL)
        return NULL;
    size_t n;
    const struct pair *pairs = parse(request, line, &n);
    const char *summary = NULL;
    if (pairs != NULL)
        summary = mr_arena_sprintf(conn, "%zu pairs, first key %s", n, pairs->key);
    mr_arena_destroy(request); /* the temporaries go; the connection keeps the arena for the next request */
    return summary;
}

int main(void)
{
    mr_counting *counter = mr_counting_create(NULL); /* counts the calls to malloc below the tree */
    if (counter == NULL)
        return 1;
    mr_arena *server = mr_arena_create(&(mr_arena_options){.name = "server", .upstream = mr_counting_resource(counter)});
    if (server == NULL)
        return 1;
    static const char *const lines[] = {"user=ann path=/ q=1", "user=bob path=/index.html", "a=1 b=2 c=3 d=4"};
    size_t steady = 0;
    mr_arena *conns[2];
    for (int c = 0; c < 2; c++) {
        conns[c] = mr_arena_create(&(mr_arena_options){.name = "connection", .parent = mr_arena_node(server)});
        if (conns[c] == NULL)
            return 1;
        for (int r = 0; r < 3; r++) {
            mr_stats before;
            mr_counting_stats(counter, &before);
            const char *summary = handle(conns[c], lines[r]);
            if (summary == NULL)
                return 1;
            printf("connection %d request %d: %s\n", c, r, summary);
            mr_stats after;
            mr_counting_stats(counter, &after);
            if (r > 0)
                steady += after.upstream_allocations - before.upstream_allocations;
        }
    }
    /* a request left open: it dies with its connection */
    mr_arena *open = mr_arena_create(&(mr_arena_options){.name = "request (open)", .parent = mr_arena_node(conns[1])});
    if (open == NULL || mr_arena_alloc(open, 3000) == NULL)
        return 1;

    printf("-- the tree, as PostgreSQL prints its memory contexts:\n");
    mr_report(mr_arena_node(server), stdout, NULL);
    printf("-- and as JSON Lines:\n");
    mr_report(mr_arena_node(server), stdout, &(mr_report_options){.format = MR_REPORT_JSON});
    fflush(stdout);

    mr_arena_destroy(conns[1]); /* and the open request */
    mr_arena_destroy(conns[0]);
    mr_arena_destroy(server);
    mr_stats end;
    mr_counting_stats(counter, &end);
    printf("upstream calls after the first request of each connection: %zu\n", steady);
    printf("left upstream at the end: %zu bytes\n", end.held);
    mr_counting_destroy(counter);
    return steady == 0 && end.held == 0 ? 0 : 1;
}
