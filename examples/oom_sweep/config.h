/* SPDX-License-Identifier: MIT */
/* examples/oom_sweep/config.h -- a small configuration parser: the code
 * under test in the out-of-memory sweep (oom_sweep.c).
 *
 * The syntax is key = value lines, with JSON-ish values:
 *
 *     # server configuration
 *     name   = "edge-1"
 *     port   = 8080
 *     debug  = false
 *     tags   = ["eu", "fast", "tls"]
 *     limits = { connections = 512, body = 1048576 }
 *
 * Values: integers, "strings" (escapes \" \\ \n \t), true, false, null,
 * [lists] and {tables}.  Keys are identifiers or strings; commas between
 * members and items are optional, newlines are spaces, # starts a comment.
 *
 * The parser is written the way allocator-aware C code should be: it takes
 * an mr_resource and gets every byte from it (one allocation per node,
 * string and array; arrays grow by allocate-copy-deallocate), so a test can
 * put a failing and a tracking resource under it.  Every allocation can
 * fail, and every failure -- and every syntax error -- must give back all
 * that the parse took so far.  The sweep proves that it does.
 */
#ifndef OOM_SWEEP_CONFIG_H
#define OOM_SWEEP_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include <memres/resource.h>

typedef enum cfg_kind { CFG_NULL, CFG_BOOL, CFG_INT, CFG_STRING, CFG_LIST, CFG_TABLE } cfg_kind;

typedef struct cfg_value cfg_value;
typedef struct cfg_member {
    char      *key;     /* NUL-terminated, key_len bytes before the NUL */
    size_t     key_len;
    cfg_value *value;
} cfg_member;

struct cfg_value {
    cfg_kind kind;
    union {
        bool      boolean;
        long long integer;
        struct { char *chars; size_t len; } string;                /* NUL-terminated */
        struct { cfg_value **items; size_t n, cap; } list;
        struct { cfg_member *members; size_t n, cap; } table;      /* in source order */
    } u;
};

typedef struct cfg_error {
    int line, column;       /* 1-based position of the error */
    const char *message;    /* static text */
} cfg_error;

/* Parses text (len bytes) into a table allocated from r.  0 and *out set,
 * or -1 with errno = ENOMEM (r failed) or EINVAL (syntax; *err says where),
 * *out untouched and everything taken from r given back.  err may be NULL. */
int cfg_parse(mr_resource *r, const char *text, size_t len, cfg_value **out, cfg_error *err);

/* Gives v and everything below it back to r (the resource it was parsed
 * with).  v NULL: no-op. */
void cfg_free(mr_resource *r, cfg_value *v);

/* The value of key in table t, or NULL. */
const cfg_value *cfg_get(const cfg_value *t, const char *key);

/* Do a and b hold the same tree? */
bool cfg_equal(const cfg_value *a, const cfg_value *b);

/* Values in the tree (every node, the root included). */
size_t cfg_count(const cfg_value *v);

#endif /* OOM_SWEEP_CONFIG_H */
