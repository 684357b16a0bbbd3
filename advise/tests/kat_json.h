/* SPDX-License-Identifier: MIT */
/* advise/tests/kat_json.h -- a tiny JSON reader for the advisor's tests:
 * parses a whole document into a tree (objects keep their keys in order),
 * strict about the syntax (a report that is not JSON fails the test), and
 * finds members and items.  Header-only; the tests need nothing else. */
#ifndef MEMRES_ADVISE_KAT_JSON_H
#define MEMRES_ADVISE_KAT_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KJ_UNUSED __attribute__((unused))

enum kj_type { KJ_NULL, KJ_BOOL, KJ_NUM, KJ_STR, KJ_ARR, KJ_OBJ };

typedef struct kj {
    enum kj_type t;
    bool b;
    double num;
    char *str;          /* KJ_STR: the decoded string */
    size_t n;           /* KJ_ARR, KJ_OBJ: items */
    struct kj *items;
    char **keys;        /* KJ_OBJ: keys[i] names items[i] */
} kj;

typedef struct kj_parser {
    const char *p, *end;
    const char *err;
    int depth;
} kj_parser;

static void kj_ws(kj_parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static int kj_fail(kj_parser *ps, const char *why)
{
    if (ps->err == NULL)
        ps->err = why;
    return -1;
}

static void kj_put_utf8(char **o, unsigned cp)
{
    if (cp < 0x80) {
        *(*o)++ = (char)cp;
    } else if (cp < 0x800) {
        *(*o)++ = (char)(0xc0 | (cp >> 6));
        *(*o)++ = (char)(0x80 | (cp & 0x3f));
    } else {
        *(*o)++ = (char)(0xe0 | (cp >> 12));
        *(*o)++ = (char)(0x80 | ((cp >> 6) & 0x3f));
        *(*o)++ = (char)(0x80 | (cp & 0x3f));
    }
}

static int kj_string(kj_parser *ps, char **out)
{
    if (ps->p >= ps->end || *ps->p != '"')
        return kj_fail(ps, "a string expected");
    ps->p++;
    const char *s = ps->p;
    while (ps->p < ps->end && *ps->p != '"') {
        if ((unsigned char)*ps->p < 0x20)
            return kj_fail(ps, "a control character in a string");
        if (*ps->p == '\\')
            ps->p++;
        ps->p++;
    }
    if (ps->p >= ps->end)
        return kj_fail(ps, "an unterminated string");
    size_t len = (size_t)(ps->p - s);
    char *o = malloc(len * 2 + 1), *w = o;
    if (o == NULL)
        return kj_fail(ps, "out of memory");
    for (const char *q = s; q < ps->p; q++) {
        if (*q != '\\') {
            *w++ = *q;
            continue;
        }
        q++;
        switch (*q) {
        case '"': *w++ = '"'; break;
        case '\\': *w++ = '\\'; break;
        case '/': *w++ = '/'; break;
        case 'b': *w++ = '\b'; break;
        case 'f': *w++ = '\f'; break;
        case 'n': *w++ = '\n'; break;
        case 'r': *w++ = '\r'; break;
        case 't': *w++ = '\t'; break;
        case 'u': {
            unsigned cp = 0;
            for (int i = 1; i <= 4; i++) {
                char c = q + i < ps->p ? q[i] : 0;
                unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0')
                             : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                             : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
                                                    : 99;
                if (d == 99) {
                    free(o);
                    return kj_fail(ps, "a bad \\u escape");
                }
                cp = cp * 16 + d;
            }
            q += 4;
            kj_put_utf8(&w, cp);
            break;
        }
        default:
            free(o);
            return kj_fail(ps, "a bad escape");
        }
    }
    *w = '\0';
    ps->p++;
    *out = o;
    return 0;
}

static int kj_value(kj_parser *ps, kj *v);

static int kj_push(kj *v, kj *item, char *key)
{
    kj *ni = realloc(v->items, (v->n + 1) * sizeof *ni);
    if (ni == NULL)
        return -1;
    v->items = ni;
    if (v->t == KJ_OBJ) {
        char **nk = realloc(v->keys, (v->n + 1) * sizeof *nk);
        if (nk == NULL)
            return -1;
        v->keys = nk;
        v->keys[v->n] = key;
    }
    v->items[v->n++] = *item;
    return 0;
}

static int kj_value(kj_parser *ps, kj *v)
{
    memset(v, 0, sizeof *v);
    kj_ws(ps);
    if (ps->p >= ps->end)
        return kj_fail(ps, "a value expected");
    if (++ps->depth > 200)
        return kj_fail(ps, "nested too deep");
    int rc = 0;
    char c = *ps->p;
    if (c == '{' || c == '[') {
        v->t = c == '{' ? KJ_OBJ : KJ_ARR;
        ps->p++;
        kj_ws(ps);
        char close = c == '{' ? '}' : ']';
        if (ps->p < ps->end && *ps->p == close) {
            ps->p++;
        } else {
            for (;;) {
                char *key = NULL;
                kj_ws(ps);
                if (v->t == KJ_OBJ) {
                    if (kj_string(ps, &key) != 0)
                        return -1;
                    kj_ws(ps);
                    if (ps->p >= ps->end || *ps->p != ':') {
                        free(key);
                        return kj_fail(ps, "':' expected");
                    }
                    ps->p++;
                }
                kj item;
                if (kj_value(ps, &item) != 0 || kj_push(v, &item, key) != 0) {
                    free(key);
                    return kj_fail(ps, "a bad member");
                }
                kj_ws(ps);
                if (ps->p < ps->end && *ps->p == ',') {
                    ps->p++;
                    continue;
                }
                if (ps->p < ps->end && *ps->p == close) {
                    ps->p++;
                    break;
                }
                return kj_fail(ps, v->t == KJ_OBJ ? "',' or '}' expected" : "',' or ']' expected");
            }
        }
    } else if (c == '"') {
        v->t = KJ_STR;
        rc = kj_string(ps, &v->str);
    } else if (strncmp(ps->p, "true", 4) == 0 || strncmp(ps->p, "false", 5) == 0) {
        v->t = KJ_BOOL;
        v->b = c == 't';
        ps->p += v->b ? 4 : 5;
    } else if (strncmp(ps->p, "null", 4) == 0) {
        v->t = KJ_NULL;
        ps->p += 4;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
        char *e;
        v->t = KJ_NUM;
        v->num = strtod(ps->p, &e);
        if (e == ps->p)
            rc = kj_fail(ps, "a bad number");
        ps->p = e;
    } else {
        rc = kj_fail(ps, "an unexpected character");
    }
    ps->depth--;
    return rc;
}

static KJ_UNUSED void kj_free(kj *v)
{
    if (v == NULL)
        return;
    free(v->str);
    for (size_t i = 0; i < v->n; i++) {
        kj_free(&v->items[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    memset(v, 0, sizeof *v);
}

/* Parses text[0..len): 0, or -1 with *err and *at (the offset) set. */
static KJ_UNUSED int kj_parse(const char *text, size_t len, kj *out, const char **err, size_t *at)
{
    kj_parser ps = {text, text + len, NULL, 0};
    int rc = kj_value(&ps, out);
    if (rc == 0) {
        kj_ws(&ps);
        if (ps.p != ps.end)
            rc = kj_fail(&ps, "text after the document");
    }
    if (rc != 0) {
        if (err)
            *err = ps.err ? ps.err : "invalid";
        if (at)
            *at = (size_t)(ps.p - text);
    }
    return rc;
}

/* The member key of object v, or NULL (v NULL or not an object too). */
static KJ_UNUSED const kj *kj_get(const kj *v, const char *key)
{
    if (v == NULL || v->t != KJ_OBJ)
        return NULL;
    for (size_t i = 0; i < v->n; i++)
        if (strcmp(v->keys[i], key) == 0)
            return &v->items[i];
    return NULL;
}

static KJ_UNUSED const kj *kj_at(const kj *v, size_t i)
{
    return v != NULL && v->t == KJ_ARR && i < v->n ? &v->items[i] : NULL;
}

static KJ_UNUSED double kj_num(const kj *v, double dflt)
{
    return v != NULL && v->t == KJ_NUM ? v->num : dflt;
}

static KJ_UNUSED const char *kj_str(const kj *v)
{
    return v != NULL && v->t == KJ_STR ? v->str : NULL;
}

/* Reads a whole file (NUL-terminated); NULL when it cannot. */
static KJ_UNUSED char *kj_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    size_t cap = 65536, n = 0;
    char *b = malloc(cap);
    for (;;) {
        if (b == NULL)
            break;
        n += fread(b + n, 1, cap - n - 1, f);
        if (n < cap - 1)
            break;
        cap *= 2;
        char *nb = realloc(b, cap);
        if (nb == NULL) {
            free(b);
            b = NULL;
            break;
        }
        b = nb;
    }
    fclose(f);
    if (b != NULL) {
        b[n] = '\0';
        if (len)
            *len = n;
    }
    return b;
}

#endif
