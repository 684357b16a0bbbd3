/* SPDX-License-Identifier: MIT */
/* bench/sc_tree.c -- tree: a server with a tree of lifetimes (server,
 * connections, requests).
 *
 * TR_CONNECTIONS connections are open at a time.  Each request goes to a
 * random open connection; a connection closes after a random number of
 * requests (1..TR_CONN_REQUESTS) and a new one takes its slot, so
 * connections close in a random order.  A request makes its temporaries in
 * a child of its connection: a parse buffer of 512..2048 bytes with the
 * request line (24..200 bytes) copied in, a copy of the line (the
 * variant's strdup), and 16..64 allocations of 16..512 bytes, each tagged
 * in its first 8 bytes and its last byte.  It reads them back, puts a
 * result of 32..256 bytes (made from what it read) in the connection and
 * drops the child.  Results accumulate in the connection until it closes;
 * the close reads them all (the checksum) and drops the connection with
 * them.  A seeded splitmix64 draws everything, so every variant makes the
 * same requests in the same order.
 *
 *   memres arena children  a root arena (the server); each connection a
 *                          child arena of it, each request a child arena of
 *                          its connection, mr_arena_destroy at the end; a
 *                          close is mr_arena_destroy of the connection
 *   apr pool + subpools    a root pool (unmanaged: no allocator mutex, as
 *                          in request); connections subpools of it,
 *                          requests subpools of theirs; apr_pool_destroy
 *   talloc contexts        talloc_new(root) per connection, talloc_new(conn)
 *                          per request; talloc_free
 *   malloc + free          malloc / strdup / free of every temporary at the
 *                          end of its request; the results on a list per
 *                          connection, freed at the close
 *
 * held (memres): the peak bytes held from malloc by the whole tree, through
 * a counting resource under the root.  req: the peak of the bytes the open
 * connections' results and the current request's temporaries ask for.  The
 * memres row's note is its report (mr_report, one level, two children
 * shown) at the end of the run, before the last connections close.
 *
 * checksum = sum over every result of its 64-bit words, read at its
 * connection's close.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memres/adaptors.h"
#include "memres/arena.h"
#include "memres/tree.h"
#ifdef BENCH_HAVE_APR
#  include <apr_general.h>
#  include <apr_pools.h>
#  include <apr_strings.h>
#endif
#ifdef BENCH_HAVE_TALLOC
#  include <talloc.h>
#endif

#include "bench.h"

#define TR_CONNECTIONS 64
#define TR_REQUESTS 2000000
#define TR_REQUESTS_QUICK 40000
#define TR_CONN_REQUESTS 256 /* a connection serves 1..TR_CONN_REQUESTS requests */
#define TR_MAX_TEMPS 64

/* A result, in its connection's memory: the connection's list, newest
 * first. */
typedef struct tr_result {
    struct tr_result *next;
    size_t size;           /* bytes, a multiple of 8 */
    unsigned char bytes[];
} tr_result;

typedef struct tr_conn {
    tr_result *results;
    size_t bytes;          /* what its results asked for */
    int left;              /* requests before it closes */
    bool open;
} tr_conn;

typedef struct tr_state {
    uint64_t seed;
    int requests;
    uint64_t connections;  /* opened */
    uint64_t temporaries, temp_bytes, result_bytes;
    uint64_t sum;          /* the checksum */
    size_t live;           /* bytes of the open connections' results */
    size_t peak;           /* of live + the current request's temporaries */
    tr_conn conn[TR_CONNECTIONS];
    /* the current request */
    char line[256];
    size_t line_len, buf_size, bytes;
    char *buf, *copy;
    int n;
    void *ptr[TR_MAX_TEMPS];
    size_t size[TR_MAX_TEMPS];
} tr_state;

/* The request lines are pieces of this. */
static const char tr_text[] =
    "GET /api/v2/repositories/memres/issues?state=open&sort=updated&per_page=100 HTTP/1.1\r\n"
    "Host: bench.example.org\r\nUser-Agent: memres-bench/1.0 (tree of lifetimes)\r\n"
    "Accept: application/json, text/plain;q=0.9, */*;q=0.1\r\nAccept-Encoding: gzip, br\r\n"
    "Cookie: session=7f3a9c2e1b5d4f60a8e7c6b5a4f3e2d1; theme=dark\r\nConnection: keep-alive\r\n";

static inline uint64_t tr_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static void tr_init(tr_state *st, const bench_args *args)
{
    memset(st, 0, sizeof *st);
    st->seed = 0x5eed0007;
    st->requests = args->quick ? TR_REQUESTS_QUICK : TR_REQUESTS;
}

/* Opens the connection of slot c: how many requests it will serve. */
static inline void tr_open(tr_state *st, int c)
{
    tr_conn *k = &st->conn[c];
    k->results = NULL;
    k->bytes = 0;
    k->left = 1 + (int)(tr_next(&st->seed) % TR_CONN_REQUESTS);
    k->open = true;
    st->connections++;
}

/* The connection of the next request. */
static inline int tr_pick(tr_state *st)
{
    return (int)(tr_next(&st->seed) % TR_CONNECTIONS);
}

/* Draws the next request: its line, its parse buffer's size, how many
 * temporaries. */
static inline void tr_begin(tr_state *st)
{
    uint64_t r = tr_next(&st->seed);
    st->line_len = 24 + (size_t)(r % 177);
    r /= 177;
    size_t off = (size_t)(r % (sizeof tr_text - st->line_len));
    r /= sizeof tr_text;
    memcpy(st->line, tr_text + off, st->line_len);
    st->line[st->line_len] = '\0';
    st->buf_size = 512 + (size_t)(r % 1537);
    r /= 1537;
    st->n = 16 + (int)(r % (TR_MAX_TEMPS - 15));
    st->bytes = st->buf_size + st->line_len + 1;
}

/* The parse buffer: the line copied in. */
static inline void tr_parse(tr_state *st, char *buf, char *copy)
{
    memcpy(buf, st->line, st->line_len + 1);
    st->buf = buf;
    st->copy = copy;
}

static inline size_t tr_size(tr_state *st)
{
    return 16 + (size_t)(tr_next(&st->seed) % 497);
}

/* Writes temporary j of request i and remembers it. */
static inline void tr_fill(tr_state *st, int i, int j, void *p, size_t size)
{
    uint64_t tag = (uint64_t)i * 1000 + (uint64_t)j;
    memcpy(p, &tag, sizeof tag);
    ((unsigned char *)p)[size - 1] = (unsigned char)j;
    st->ptr[j] = p;
    st->size[j] = size;
    st->bytes += size;
}

static inline size_t tr_result_size(tr_state *st)
{
    return 8 * (4 + (size_t)(tr_next(&st->seed) % 29));
}

/* The response: reads the temporaries back and writes the result r of
 * size bytes into connection c. */
static inline void tr_respond(tr_state *st, int c, tr_result *r, size_t size)
{
    uint64_t h;
    memcpy(&h, st->buf + st->line_len - 8, sizeof h);
    h ^= (uint64_t)(unsigned char)st->copy[st->line_len / 2] << 56;
    for (int j = 0; j < st->n; j++) {
        uint64_t tag;
        memcpy(&tag, st->ptr[j], sizeof tag);
        h = (h ^ (tag + ((unsigned char *)st->ptr[j])[st->size[j] - 1])) * 0x100000001b3u;
    }
    for (size_t b = 0; b < size; b += 8) {
        uint64_t w = h + b * 0x9e3779b97f4a7c15u;
        memcpy(r->bytes + b, &w, sizeof w);
    }
    tr_conn *k = &st->conn[c];
    r->next = k->results;
    r->size = size;
    k->results = r;
    k->bytes += sizeof *r + size;
    st->live += sizeof *r + size;
    if (st->live + st->bytes > st->peak)
        st->peak = st->live + st->bytes;
    st->temporaries += (uint64_t)st->n + 2;
    st->temp_bytes += st->bytes;
    st->result_bytes += size;
}

/* The close of connection c: reads its results (the checksum). */
static inline void tr_close(tr_state *st, int c)
{
    tr_conn *k = &st->conn[c];
    uint64_t sum = 0;
    for (const tr_result *r = k->results; r != NULL; r = r->next)
        for (size_t b = 0; b < r->size; b += 8) {
            uint64_t w;
            memcpy(&w, r->bytes + b, sizeof w);
            sum += w;
        }
    st->sum += sum;
    st->live -= k->bytes;
    k->open = false;
}

static int tr_finish(tr_state *st, bench_out *out)
{
    out->checksum = st->sum;
    out->requested_bytes = st->peak;
    bench_printf(out,
                 "%d connections open at a time, %" PRIu64 " connections, %d requests, %" PRIu64
                 " temporaries (%" PRIu64 " bytes), %" PRIu64 " result bytes, checksum %016" PRIx64 "\n",
                 TR_CONNECTIONS, st->connections, st->requests, st->temporaries, st->temp_bytes, st->result_bytes,
                 st->sum);
    return 0;
}

static int tr_oom(const char *who)
{
    fprintf(stderr, "tree: %s: out of memory\n", who);
    return -1;
}

/* TR_LOOP: the same server for every variant, up to the last request.
 * OPEN(c) opens connection c, BEGIN(c) starts a request in it (both false
 * on failure); TEMP(size), STRDUP(s) make a temporary of the request and
 * RESULT(c, size) a result in connection c (NULL on failure); END(c) drops
 * the request, CLOSE(c) the connection. */
#define TR_LOOP(st, OPEN, BEGIN, TEMP, STRDUP, RESULT, END, CLOSE, ON_OOM)                \
    for (int c = 0; c < TR_CONNECTIONS; c++) {                                          \
        tr_open(st, c);                                                                 \
        if (!(OPEN(c))) {                                                               \
            ON_OOM;                                                                     \
        }                                                                               \
    }                                                                                   \
    for (int i = 0; i < (st)->requests; i++) {                                          \
        int c = tr_pick(st);                                                            \
        tr_begin(st);                                                                   \
        if (!(BEGIN(c))) {                                                              \
            ON_OOM;                                                                     \
        }                                                                               \
        char *buf = TEMP((st)->buf_size);                                               \
        char *copy = STRDUP((st)->line);                                                \
        if (buf == NULL || copy == NULL) {                                              \
            ON_OOM;                                                                     \
        }                                                                               \
        tr_parse(st, buf, copy);                                                        \
        for (int j = 0; j < (st)->n; j++) {                                             \
            size_t size = tr_size(st);                                                  \
            void *p = TEMP(size);                                                       \
            if (p == NULL) {                                                            \
                ON_OOM;                                                                 \
            }                                                                           \
            tr_fill(st, i, j, p, size);                                                 \
        }                                                                               \
        size_t rsize = tr_result_size(st);                                              \
        tr_result *r = RESULT(c, sizeof(tr_result) + rsize);                            \
        if (r == NULL) {                                                                \
            ON_OOM;                                                                     \
        }                                                                               \
        tr_respond(st, c, r, rsize);                                                    \
        END(c);                                                                         \
        if (--(st)->conn[c].left == 0) {                                                \
            tr_close(st, c);                                                            \
            CLOSE(c);                                                                   \
            if (i + 1 < (st)->requests) {                                               \
                tr_open(st, c);                                                         \
                if (!(OPEN(c))) {                                                       \
                    ON_OOM;                                                             \
                }                                                                       \
            }                                                                           \
        }                                                                               \
    }

/* The connections still open after the last request. */
#define TR_CLOSE_ALL(st, CLOSE)                                                         \
    for (int c = 0; c < TR_CONNECTIONS; c++) {                                          \
        if ((st)->conn[c].open) {                                                       \
            tr_close(st, c);                                                            \
            CLOSE(c);                                                                   \
        }                                                                               \
    }

/* ---- malloc + free ---- */

static int run_malloc(const bench_args *args, bench_out *out)
{
    static tr_state st;
    tr_init(&st, args);
#define MALLOC_OPEN(c) ((void)(c), 1)
#define MALLOC_BEGIN(c) ((void)(c), 1)
#define MALLOC_RESULT(c, size) ((void)(c), (tr_result *)malloc(size))
#define MALLOC_END(c)                                                                   \
    do {                                                                                \
        (void)(c);                                                                      \
        free(st.buf);                                                                   \
        free(st.copy);                                                                  \
        for (int t = 0; t < st.n; t++)                                                  \
            free(st.ptr[t]);                                                            \
    } while (0)
#define MALLOC_CLOSE(c)                                                                 \
    for (tr_result *q = st.conn[c].results, *next; q != NULL; q = next) {               \
        next = q->next;                                                                 \
        free(q);                                                                        \
    }
    TR_LOOP(&st, MALLOC_OPEN, MALLOC_BEGIN, malloc, strdup, MALLOC_RESULT, MALLOC_END, MALLOC_CLOSE,
            return tr_oom("malloc"))
    TR_CLOSE_ALL(&st, MALLOC_CLOSE)
    return tr_finish(&st, out);
}

/* ---- memres: a child arena per connection, and per request ---- */

/* The report of the server's tree as the row's note. */
static void tr_note_report(mr_arena *root, bench_out *out)
{
    char text[BENCH_NOTE_MAX] = {0};
    FILE *f = fmemopen(text, sizeof text - 1, "w");
    if (f == NULL)
        return;
    mr_report(mr_arena_node(root), f, &(mr_report_options){.max_depth = 1, .max_children = 2});
    fclose(f);
    bench_note(out, "mr_report after the last request (max_depth 1, max_children 2):\n%s", text);
}

static int run_arena(const bench_args *args, bench_out *out)
{
    static tr_state st;
    tr_init(&st, args);
    mr_counting *up = mr_counting_create(NULL);
    if (up == NULL)
        return tr_oom("mr_counting_create");
    mr_arena *root = mr_arena_create(&(mr_arena_options){.upstream = mr_counting_resource(up), .name = "server"});
    if (root == NULL) {
        mr_counting_destroy(up);
        return tr_oom("mr_arena_create");
    }
    const mr_arena_options conn_opts = {.name = "connection", .parent = mr_arena_node(root)};
    mr_arena *conn[TR_CONNECTIONS], *req = NULL;
#define ARENA_OPEN(c) ((conn[c] = mr_arena_create(&conn_opts)) != NULL)
#define ARENA_BEGIN(c)                                                                  \
    ((req = mr_arena_create(&(mr_arena_options){.name = "request", .parent = mr_arena_node(conn[c])})) != NULL)
#define ARENA_TEMP(size) mr_arena_alloc(req, size)
#define ARENA_STRDUP(s) mr_arena_strdup(req, s)
#define ARENA_RESULT(c, size) ((tr_result *)mr_arena_alloc(conn[c], size))
#define ARENA_END(c) ((void)(c), mr_arena_destroy(req))
#define ARENA_CLOSE(c) mr_arena_destroy(conn[c])
    /* the root's destroy takes the open connections and their requests */
    TR_LOOP(&st, ARENA_OPEN, ARENA_BEGIN, ARENA_TEMP, ARENA_STRDUP, ARENA_RESULT, ARENA_END, ARENA_CLOSE,
            mr_arena_destroy(root); mr_counting_destroy(up); return tr_oom("mr_arena"))
    tr_note_report(root, out);
    TR_CLOSE_ALL(&st, ARENA_CLOSE)
    mr_arena_destroy(root);
    mr_stats ms;
    mr_counting_stats(up, &ms);
    out->upstream_bytes = ms.peak_held;
    mr_counting_destroy(up);
    return tr_finish(&st, out);
}

/* ---- APR: a subpool per connection, and per request ---- */

#ifdef BENCH_HAVE_APR
static int run_apr(const bench_args *args, bench_out *out)
{
    static tr_state st;
    tr_init(&st, args);
    apr_pool_t *root, *conn[TR_CONNECTIONS], *req = NULL;
    if (apr_initialize() != APR_SUCCESS)
        return tr_oom("apr_initialize");
    if (apr_pool_create_unmanaged_ex(&root, NULL, NULL) != APR_SUCCESS) {
        apr_terminate();
        return tr_oom("apr_pool_create");
    }
#  define APR_OPEN(c) (apr_pool_create(&conn[c], root) == APR_SUCCESS)
#  define APR_BEGIN(c) (apr_pool_create(&req, conn[c]) == APR_SUCCESS)
#  define APR_TEMP(size) apr_palloc(req, size)
#  define APR_STRDUP(s) apr_pstrdup(req, s)
#  define APR_RESULT(c, size) ((tr_result *)apr_palloc(conn[c], size))
#  define APR_END(c) ((void)(c), apr_pool_destroy(req))
#  define APR_CLOSE(c) apr_pool_destroy(conn[c])
    TR_LOOP(&st, APR_OPEN, APR_BEGIN, APR_TEMP, APR_STRDUP, APR_RESULT, APR_END, APR_CLOSE,
            apr_pool_destroy(root); apr_terminate(); return tr_oom("apr"))
    TR_CLOSE_ALL(&st, APR_CLOSE)
    apr_pool_destroy(root);
    apr_terminate();
    return tr_finish(&st, out);
}
#else
#  define run_apr NULL
#endif

/* ---- talloc: a context per connection, and per request ---- */

#ifdef BENCH_HAVE_TALLOC
static int run_talloc(const bench_args *args, bench_out *out)
{
    static tr_state st;
    tr_init(&st, args);
    TALLOC_CTX *root = talloc_new(NULL), *conn[TR_CONNECTIONS], *req = NULL;
    if (root == NULL)
        return tr_oom("talloc_new");
#  define TALLOC_OPEN(c) ((conn[c] = talloc_new(root)) != NULL)
#  define TALLOC_BEGIN(c) ((req = talloc_new(conn[c])) != NULL)
#  define TALLOC_TEMP(size) talloc_size(req, size)
#  define TALLOC_STRDUP(s) talloc_strdup(req, s)
#  define TALLOC_RESULT(c, size) ((tr_result *)talloc_size(conn[c], size))
#  define TALLOC_END(c) ((void)(c), talloc_free(req))
#  define TALLOC_CLOSE(c) talloc_free(conn[c])
    TR_LOOP(&st, TALLOC_OPEN, TALLOC_BEGIN, TALLOC_TEMP, TALLOC_STRDUP, TALLOC_RESULT, TALLOC_END, TALLOC_CLOSE,
            talloc_free(root); return tr_oom("talloc"))
    TR_CLOSE_ALL(&st, TALLOC_CLOSE)
    talloc_free(root);
    return tr_finish(&st, out);
}
#else
#  define run_talloc NULL
#endif

/* ---- the limit: a bump pointer that never frees ----
 * Temporaries bump through one static buffer rewound at each request's
 * end, results through a static buffer per connection slot rewound at its
 * close: no allocator at all, so the row is what the work costs alone. */

#define TR_SLOT_BYTES ((size_t)TR_CONN_REQUESTS * (sizeof(tr_result) + 8 * 32) + 64)
static _Alignas(64) unsigned char tr_temps[65536];
static _Alignas(64) unsigned char tr_slots[TR_CONNECTIONS][TR_SLOT_BYTES];

static inline void *tr_bump(unsigned char *base, size_t *used, size_t cap, size_t size)
{
    size_t at = *used;
    size_t end = at + ((size + 15) & ~(size_t)15);
    if (end > cap)
        return NULL;
    *used = end;
    return base + at;
}

static int run_limit(const bench_args *args, bench_out *out)
{
    static tr_state st;
    static size_t slot_used[TR_CONNECTIONS];
    size_t temps_used = 0;
    tr_init(&st, args);
#define LIMIT_OPEN(c) ((slot_used[c] = 0), 1)
#define LIMIT_BEGIN(c) ((void)(c), (temps_used = 0), 1)
#define LIMIT_TEMP(size) ((char *)tr_bump(tr_temps, &temps_used, sizeof tr_temps, size))
#define LIMIT_STRDUP(s) strcpy(LIMIT_TEMP(strlen(s) + 1), s)
#define LIMIT_RESULT(c, size) ((tr_result *)tr_bump(tr_slots[c], &slot_used[c], TR_SLOT_BYTES, size))
#define LIMIT_END(c) ((void)(c))
#define LIMIT_CLOSE(c) ((void)(c))
    TR_LOOP(&st, LIMIT_OPEN, LIMIT_BEGIN, LIMIT_TEMP, LIMIT_STRDUP, LIMIT_RESULT, LIMIT_END, LIMIT_CLOSE,
            return tr_oom("bump pointer"))
    TR_CLOSE_ALL(&st, LIMIT_CLOSE)
    return tr_finish(&st, out);
}

#define TV(name, kind, unavailable, run) { "tree", name, kind, false, unavailable, run }

const bench_variant bench_tree[] = {
    TV("malloc + free", BENCH_MALLOC, NULL, run_malloc),
    TV("memres arena children", BENCH_MEMRES, NULL, run_arena),
    TV("apr pool + subpools", BENCH_PEER, bench_apr_unavailable, run_apr),
    TV("talloc contexts", BENCH_PEER, bench_talloc_unavailable, run_talloc),
    TV("bump pointer (limit)", BENCH_LIMIT, NULL, run_limit),
    { 0 },
};
