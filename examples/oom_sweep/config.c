/* SPDX-License-Identifier: MIT */
/* examples/oom_sweep/config.c -- the configuration parser (config.h).
 *
 * Recursive descent over the text.  Ownership rule, kept on every path: a
 * function that returns a node owns it until it hands it to its caller, and
 * a function that fails frees whatever it allocated itself before
 * returning.  A container is freed with cfg_free, which frees the n items
 * it holds, so a half-built list or table is freed correctly at any point.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdalign.h>
#include <string.h>

enum { MAX_DEPTH = 64 };

typedef struct parser {
    mr_resource *r;
    const char *s, *end, *line_start;
    int line;
    int err; /* errno to return: ENOMEM or EINVAL */
    cfg_error *error;
} parser;

static void fail(parser *p, int err, const char *message)
{
    p->err = err;
    if (p->error != NULL) {
        p->error->line = p->line;
        p->error->column = (int)(p->s - p->line_start) + 1;
        p->error->message = message;
    }
}

static void *get(parser *p, size_t size, size_t align)
{
    void *mem = mr_allocate(p->r, size, align);
    if (mem == NULL)
        fail(p, ENOMEM, "out of memory");
    return mem;
}

static void skip_space(parser *p)
{
    while (p->s < p->end) {
        char c = *p->s;
        if (c == '#') {
            while (p->s < p->end && *p->s != '\n')
                p->s++;
        } else if (c == '\n') {
            p->s++;
            p->line++;
            p->line_start = p->s;
        } else if (c == ' ' || c == '\t' || c == '\r') {
            p->s++;
        } else {
            return;
        }
    }
}

static bool is_ident(char c, bool first)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
           (!first && ((c >= '0' && c <= '9') || c == '-'));
}

/* Grows an array of elem-byte elements from cap to room for n + 1. */
static bool grow(parser *p, void **array, size_t *cap, size_t n, size_t elem, size_t align)
{
    if (n < *cap)
        return true;
    size_t ncap = *cap == 0 ? 4 : *cap * 2;
    void *bigger = get(p, ncap * elem, align);
    if (bigger == NULL)
        return false;
    if (n != 0)
        memcpy(bigger, *array, n * elem);
    if (*array != NULL)
        mr_deallocate(p->r, *array, *cap * elem, align);
    *array = bigger;
    *cap = ncap;
    return true;
}

static cfg_value *new_value(parser *p, cfg_kind kind)
{
    cfg_value *v = get(p, sizeof *v, alignof(cfg_value));
    if (v != NULL) {
        memset(v, 0, sizeof *v);
        v->kind = kind;
    }
    return v;
}

/* A "string" at p->s: its unescaped copy in *out (len bytes + NUL). */
static bool parse_string(parser *p, char **out, size_t *len)
{
    const char *q = ++p->s; /* past the opening quote */
    size_t n = 0;
    for (;; q++, n++) {
        if (q == p->end || *q == '\n') {
            fail(p, EINVAL, "unterminated string");
            return false;
        }
        if (*q == '"')
            break;
        if (*q == '\\') {
            if (++q == p->end || strchr("\"\\nt", *q) == NULL) {
                p->s = q;
                fail(p, EINVAL, "unknown escape");
                return false;
            }
        }
    }
    char *chars = get(p, n + 1, 1);
    if (chars == NULL)
        return false;
    for (size_t i = 0; i < n; i++, p->s++) {
        char c = *p->s;
        if (c == '\\') {
            c = *++p->s;
            c = c == 'n' ? '\n' : c == 't' ? '\t' : c;
        }
        chars[i] = c;
    }
    chars[n] = '\0';
    p->s++; /* the closing quote */
    *out = chars;
    *len = n;
    return true;
}

static cfg_value *parse_value(parser *p, int depth);

/* Members up to `close` ('}' or the end of the text for the top level). */
static cfg_value *parse_table(parser *p, char close, int depth)
{
    cfg_value *t = new_value(p, CFG_TABLE);
    if (t == NULL)
        return NULL;
    for (;;) {
        skip_space(p);
        if (close == '\0' ? p->s == p->end : (p->s < p->end && *p->s == close))
            break;
        if (p->s == p->end) {
            fail(p, EINVAL, "missing '}'");
            goto fail;
        }
        char *key;
        size_t key_len;
        if (*p->s == '"') {
            if (!parse_string(p, &key, &key_len))
                goto fail;
        } else if (is_ident(*p->s, true)) {
            const char *k = p->s;
            while (p->s < p->end && is_ident(*p->s, false))
                p->s++;
            key_len = (size_t)(p->s - k);
            if ((key = get(p, key_len + 1, 1)) == NULL)
                goto fail;
            memcpy(key, k, key_len);
            key[key_len] = '\0';
        } else {
            fail(p, EINVAL, "expected a key");
            goto fail;
        }
        skip_space(p);
        cfg_value *v = NULL;
        if (p->s == p->end || *p->s != '=') {
            fail(p, EINVAL, "expected '='");
        } else {
            p->s++;
            v = parse_value(p, depth + 1);
        }
        if (v != NULL && cfg_get(t, key) != NULL) {
            fail(p, EINVAL, "duplicate key");
            cfg_free(p->r, v);
            v = NULL;
        }
        if (v == NULL || !grow(p, (void **)&t->u.table.members, &t->u.table.cap, t->u.table.n, sizeof(cfg_member),
                               alignof(cfg_member))) {
            cfg_free(p->r, v);
            mr_deallocate(p->r, key, key_len + 1, 1);
            goto fail;
        }
        t->u.table.members[t->u.table.n++] = (cfg_member){key, key_len, v};
        skip_space(p);
        if (p->s < p->end && *p->s == ',')
            p->s++;
    }
    if (close != '\0')
        p->s++;
    return t;
fail:
    cfg_free(p->r, t);
    return NULL;
}

static cfg_value *parse_list(parser *p, int depth)
{
    cfg_value *l = new_value(p, CFG_LIST);
    if (l == NULL)
        return NULL;
    p->s++; /* '[' */
    for (;;) {
        skip_space(p);
        if (p->s == p->end) {
            fail(p, EINVAL, "missing ']'");
            goto fail;
        }
        if (*p->s == ']')
            break;
        cfg_value *v = parse_value(p, depth + 1);
        if (v == NULL)
            goto fail;
        if (!grow(p, (void **)&l->u.list.items, &l->u.list.cap, l->u.list.n, sizeof(cfg_value *),
                  alignof(cfg_value *))) {
            cfg_free(p->r, v);
            goto fail;
        }
        l->u.list.items[l->u.list.n++] = v;
        skip_space(p);
        if (p->s < p->end && *p->s == ',')
            p->s++;
    }
    p->s++; /* ']' */
    return l;
fail:
    cfg_free(p->r, l);
    return NULL;
}

static bool word(parser *p, const char *w)
{
    size_t n = strlen(w);
    if ((size_t)(p->end - p->s) < n || memcmp(p->s, w, n) != 0 || (p->s + n < p->end && is_ident(p->s[n], false)))
        return false;
    p->s += n;
    return true;
}

static cfg_value *parse_value(parser *p, int depth)
{
    skip_space(p);
    if (depth > MAX_DEPTH) {
        fail(p, EINVAL, "nested too deeply");
        return NULL;
    }
    if (p->s == p->end) {
        fail(p, EINVAL, "expected a value");
        return NULL;
    }
    char c = *p->s;
    if (c == '{') {
        p->s++;
        return parse_table(p, '}', depth);
    }
    if (c == '[')
        return parse_list(p, depth);
    if (c == '"') {
        cfg_value *v = new_value(p, CFG_STRING);
        if (v != NULL && !parse_string(p, &v->u.string.chars, &v->u.string.len)) {
            cfg_free(p->r, v);
            v = NULL;
        }
        return v;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        bool neg = c == '-';
        const char *q = p->s + neg;
        if (q == p->end || *q < '0' || *q > '9') {
            fail(p, EINVAL, "expected a digit");
            return NULL;
        }
        unsigned long long x = 0, lim = neg ? (unsigned long long)LLONG_MAX + 1 : (unsigned long long)LLONG_MAX;
        for (; q < p->end && *q >= '0' && *q <= '9'; q++) {
            unsigned d = (unsigned)(*q - '0');
            if (x > (lim - d) / 10) {
                fail(p, EINVAL, "integer out of range");
                return NULL;
            }
            x = x * 10 + d;
        }
        p->s = q;
        cfg_value *v = new_value(p, CFG_INT);
        if (v != NULL)
            v->u.integer = neg ? (x == (unsigned long long)LLONG_MAX + 1 ? LLONG_MIN : -(long long)x) : (long long)x;
        return v;
    }
    cfg_kind kind;
    bool b = false;
    if (word(p, "true"))
        kind = CFG_BOOL, b = true;
    else if (word(p, "false"))
        kind = CFG_BOOL;
    else if (word(p, "null"))
        kind = CFG_NULL;
    else {
        fail(p, EINVAL, "expected a value");
        return NULL;
    }
    cfg_value *v = new_value(p, kind);
    if (v != NULL)
        v->u.boolean = b;
    return v;
}

int cfg_parse(mr_resource *r, const char *text, size_t len, cfg_value **out, cfg_error *err)
{
    parser p = {r, text, text + len, text, 1, 0, err};
    cfg_value *t = parse_table(&p, '\0', 0);
    if (t == NULL) {
        errno = p.err;
        return -1;
    }
    *out = t;
    return 0;
}

void cfg_free(mr_resource *r, cfg_value *v)
{
    if (v == NULL)
        return;
    switch (v->kind) {
    case CFG_STRING:
        if (v->u.string.chars != NULL)
            mr_deallocate(r, v->u.string.chars, v->u.string.len + 1, 1);
        break;
    case CFG_LIST:
        for (size_t i = 0; i < v->u.list.n; i++)
            cfg_free(r, v->u.list.items[i]);
        if (v->u.list.items != NULL)
            mr_deallocate(r, v->u.list.items, v->u.list.cap * sizeof(cfg_value *), alignof(cfg_value *));
        break;
    case CFG_TABLE:
        for (size_t i = 0; i < v->u.table.n; i++) {
            mr_deallocate(r, v->u.table.members[i].key, v->u.table.members[i].key_len + 1, 1);
            cfg_free(r, v->u.table.members[i].value);
        }
        if (v->u.table.members != NULL)
            mr_deallocate(r, v->u.table.members, v->u.table.cap * sizeof(cfg_member), alignof(cfg_member));
        break;
    case CFG_NULL:
    case CFG_BOOL:
    case CFG_INT:
        break;
    }
    mr_deallocate(r, v, sizeof *v, alignof(cfg_value));
}

const cfg_value *cfg_get(const cfg_value *t, const char *key)
{
    if (t == NULL || t->kind != CFG_TABLE)
        return NULL;
    for (size_t i = 0; i < t->u.table.n; i++)
        if (strcmp(t->u.table.members[i].key, key) == 0)
            return t->u.table.members[i].value;
    return NULL;
}

bool cfg_equal(const cfg_value *a, const cfg_value *b)
{
    if (a->kind != b->kind)
        return false;
    switch (a->kind) {
    case CFG_NULL:
        return true;
    case CFG_BOOL:
        return a->u.boolean == b->u.boolean;
    case CFG_INT:
        return a->u.integer == b->u.integer;
    case CFG_STRING:
        return a->u.string.len == b->u.string.len && memcmp(a->u.string.chars, b->u.string.chars, a->u.string.len) == 0;
    case CFG_LIST:
        if (a->u.list.n != b->u.list.n)
            return false;
        for (size_t i = 0; i < a->u.list.n; i++)
            if (!cfg_equal(a->u.list.items[i], b->u.list.items[i]))
                return false;
        return true;
    case CFG_TABLE:
        if (a->u.table.n != b->u.table.n)
            return false;
        for (size_t i = 0; i < a->u.table.n; i++)
            if (strcmp(a->u.table.members[i].key, b->u.table.members[i].key) != 0 ||
                !cfg_equal(a->u.table.members[i].value, b->u.table.members[i].value))
                return false;
        return true;
    }
    return false;
}

size_t cfg_count(const cfg_value *v)
{
    size_t n = 1;
    if (v->kind == CFG_LIST)
        for (size_t i = 0; i < v->u.list.n; i++)
            n += cfg_count(v->u.list.items[i]);
    if (v->kind == CFG_TABLE)
        for (size_t i = 0; i < v->u.table.n; i++)
            n += cfg_count(v->u.table.members[i].value);
    return n;
}
