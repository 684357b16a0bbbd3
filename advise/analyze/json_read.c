/* SPDX-License-Identifier: MIT */
/* advise/analyze/json_read.c -- the strict JSON reader of json_read.h.
 *
 * Recursive descent over the bytes, one value at a time, building the tree
 * as it goes.  Invariants: a value that fails to parse frees what it built
 * before returning (so the caller frees only what it owns), and the first
 * error found is the one reported (inner calls set it, outer calls keep
 * it).  Strict where a lenient reader would guess: a number must match
 * RFC 8259's grammar (no leading '+' or zeros, no hex, no inf/nan), a
 * string may hold no raw control character nor a byte that is not
 * well-formed UTF-8, a \u escape of a high surrogate must be followed by
 * its low one, a lone low surrogate is refused, and the literals are
 * matched whole.  Not supported: keys compared other than byte by byte
 * (the reports' keys are ASCII), numbers of more than 63 characters. */
#include "json_read.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NESTING 200

struct reader {
    const char *p, *end;
    const char *err;
    const char *err_at;
    int depth;
};

static int fail(struct reader *r, const char *why)
{
    if (!r->err) {
        r->err = why;
        r->err_at = r->p;
    }
    return -1;
}

static void skip_blanks(struct reader *r)
{
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
        r->p++;
}

static bool at_char(const struct reader *r, char c)
{
    return r->p < r->end && *r->p == c;
}

/* Four hex digits at r->p into *cp. */
static int hex4(struct reader *r, unsigned *cp)
{
    if (r->end - r->p < 4)
        return fail(r, "a short \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = r->p[i];
        unsigned d;
        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            d = (unsigned)(c - 'A' + 10);
        else
            return fail(r, "a bad \\u escape");
        v = v * 16 + d;
    }
    r->p += 4;
    *cp = v;
    return 0;
}

static char *put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) {
        *o++ = (char)cp;
    } else if (cp < 0x800) {
        *o++ = (char)(0xc0 | (cp >> 6));
        *o++ = (char)(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
        *o++ = (char)(0xe0 | (cp >> 12));
        *o++ = (char)(0x80 | ((cp >> 6) & 0x3f));
        *o++ = (char)(0x80 | (cp & 0x3f));
    } else {
        *o++ = (char)(0xf0 | (cp >> 18));
        *o++ = (char)(0x80 | ((cp >> 12) & 0x3f));
        *o++ = (char)(0x80 | ((cp >> 6) & 0x3f));
        *o++ = (char)(0x80 | (cp & 0x3f));
    }
    return o;
}

/* One escape after the backslash, decoded into o; the end of what it wrote. */
static char *unescape(struct reader *r, char *o)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    if (r->p >= r->end) {
        fail(r, "an unterminated string");
        return NULL;
    }
    char c = *r->p++;
    const char *k = c ? strchr(from, c) : NULL;
    if (k) {
        *o++ = to[k - from];
        return o;
    }
    if (c != 'u') {
        fail(r, "a bad escape");
        return NULL;
    }
    unsigned cp, lo;
    if (hex4(r, &cp) != 0)
        return NULL;
    if (cp >= 0xdc00 && cp <= 0xdfff) {
        fail(r, "a lone low surrogate");
        return NULL;
    }
    if (cp >= 0xd800 && cp <= 0xdbff) {
        if (r->end - r->p < 2 || r->p[0] != '\\' || r->p[1] != 'u') {
            fail(r, "a high surrogate without its low one");
            return NULL;
        }
        r->p += 2;
        if (hex4(r, &lo) != 0)
            return NULL;
        if (lo < 0xdc00 || lo > 0xdfff) {
            fail(r, "a high surrogate without its low one");
            return NULL;
        }
        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
    }
    return put_utf8(o, cp);
}

/* The length of the well-formed UTF-8 sequence at p (before end), or 0:
 * RFC 3629's table of first bytes and the range of the byte after each
 * (no overlong form, no surrogate, nothing above U+10FFFF); the bytes
 * after those are 80..BF. */
static size_t utf8_seq(const unsigned char *p, const unsigned char *end)
{
    static const struct {
        unsigned char first_lo, first_hi, second_lo, second_hi, n;
    } tab[] = {
        { 0xc2, 0xdf, 0x80, 0xbf, 2 }, { 0xe0, 0xe0, 0xa0, 0xbf, 3 }, { 0xe1, 0xec, 0x80, 0xbf, 3 },
        { 0xed, 0xed, 0x80, 0x9f, 3 }, { 0xee, 0xef, 0x80, 0xbf, 3 }, { 0xf0, 0xf0, 0x90, 0xbf, 4 },
        { 0xf1, 0xf3, 0x80, 0xbf, 4 }, { 0xf4, 0xf4, 0x80, 0x8f, 4 },
    };
    for (size_t i = 0; i < sizeof tab / sizeof *tab; i++) {
        if (p[0] < tab[i].first_lo || p[0] > tab[i].first_hi)
            continue;
        size_t n = tab[i].n;
        if ((size_t)(end - p) < n || p[1] < tab[i].second_lo || p[1] > tab[i].second_hi)
            return 0;
        for (size_t k = 2; k < n; k++)
            if (p[k] < 0x80 || p[k] > 0xbf)
                return 0;
        return n;
    }
    return 0;
}

static int string(struct reader *r, char **out)
{
    if (!at_char(r, '"'))
        return fail(r, "a string expected");
    r->p++;
    /* the decoded string is never longer than the text it came from */
    const char *close = r->p;
    while (close < r->end && *close != '"')
        close += *close == '\\' && close + 1 < r->end ? 2 : 1;
    if (close >= r->end)
        return fail(r, "an unterminated string");
    char *s = malloc((size_t)(close - r->p) + 1), *o = s;
    if (!s)
        return fail(r, "out of memory");
    while (r->p < close) {
        unsigned char c = (unsigned char)*r->p;
        if (c < 0x20) {
            free(s);
            return fail(r, "a control character in a string");
        }
        if (c >= 0x80) {
            size_t n = utf8_seq((const unsigned char *)r->p, (const unsigned char *)close);
            if (!n) {
                free(s);
                return fail(r, "a byte that is not UTF-8 in a string");
            }
            memcpy(o, r->p, n);
            o += n;
            r->p += n;
            continue;
        }
        if (c != '\\') {
            *o++ = (char)c;
            r->p++;
            continue;
        }
        r->p++;
        o = unescape(r, o);
        if (!o || r->p > close) {
            free(s);
            return fail(r, "a bad escape");
        }
    }
    *o = '\0';
    r->p++;
    *out = s;
    return 0;
}

static int number(struct reader *r, double *out)
{
    const char *s = r->p, *q = s;
    if (q < r->end && *q == '-')
        q++;
    if (q < r->end && *q == '0') {
        q++;
    } else if (q < r->end && *q >= '1' && *q <= '9') {
        while (q < r->end && *q >= '0' && *q <= '9')
            q++;
    } else {
        r->p = q;
        return fail(r, "a bad number");
    }
    if (q < r->end && *q == '.') {
        const char *d = ++q;
        while (q < r->end && *q >= '0' && *q <= '9')
            q++;
        if (q == d) {
            r->p = q;
            return fail(r, "a bad number (no digit after '.')");
        }
    }
    if (q < r->end && (*q == 'e' || *q == 'E')) {
        q++;
        if (q < r->end && (*q == '+' || *q == '-'))
            q++;
        const char *d = q;
        while (q < r->end && *q >= '0' && *q <= '9')
            q++;
        if (q == d) {
            r->p = q;
            return fail(r, "a bad number (no digit in the exponent)");
        }
    }
    /* strtod on a NUL-terminated copy: the text need not end after it */
    char buf[64];
    if ((size_t)(q - s) >= sizeof buf)
        return fail(r, "a number too long");
    memcpy(buf, s, (size_t)(q - s));
    buf[q - s] = '\0';
    *out = strtod(buf, NULL);
    r->p = q;
    return 0;
}

static int value(struct reader *r, struct mra_json *v);

/* Appends item (and key, for an object) to v, taking ownership: 0, or -1
 * with both freed. */
static int push(struct reader *r, struct mra_json *v, size_t *cap, struct mra_json *item, char *key)
{
    if (v->n == *cap) {
        size_t nc = *cap ? 2 * *cap : 8;
        struct mra_json *ni = realloc(v->items, nc * sizeof *ni);
        if (ni)
            v->items = ni;
        char **nk = ni && v->t == MRA_JSON_OBJ ? realloc(v->keys, nc * sizeof *nk) : NULL;
        if (nk)
            v->keys = nk;
        if (!ni || (v->t == MRA_JSON_OBJ && !nk)) {
            mra_json_free(item);
            free(key);
            return fail(r, "out of memory");
        }
        *cap = nc;
    }
    if (v->t == MRA_JSON_OBJ)
        v->keys[v->n] = key;
    v->items[v->n++] = *item;
    return 0;
}

static int container(struct reader *r, struct mra_json *v)
{
    char close = *r->p == '{' ? '}' : ']';
    v->t = close == '}' ? MRA_JSON_OBJ : MRA_JSON_ARR;
    r->p++;
    skip_blanks(r);
    if (at_char(r, close)) {
        r->p++;
        return 0;
    }
    size_t cap = 0;
    for (;;) {
        char *key = NULL;
        skip_blanks(r);
        if (v->t == MRA_JSON_OBJ) {
            if (string(r, &key) != 0)
                return -1;
            skip_blanks(r);
            if (!at_char(r, ':')) {
                free(key);
                return fail(r, "':' expected");
            }
            r->p++;
        }
        struct mra_json item;
        if (value(r, &item) != 0) {
            free(key);
            return -1;
        }
        if (push(r, v, &cap, &item, key) != 0)
            return -1;
        skip_blanks(r);
        if (at_char(r, ',')) {
            r->p++;
            continue;
        }
        if (at_char(r, close)) {
            r->p++;
            return 0;
        }
        return fail(r, close == '}' ? "',' or '}' expected" : "',' or ']' expected");
    }
}

static bool literal(struct reader *r, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(r->end - r->p) < n || memcmp(r->p, word, n) != 0)
        return false;
    r->p += n;
    return true;
}

static int value(struct reader *r, struct mra_json *v)
{
    memset(v, 0, sizeof *v);
    skip_blanks(r);
    if (r->p >= r->end)
        return fail(r, "a value expected");
    if (++r->depth > MAX_NESTING)
        return fail(r, "nested too deep");
    int rc = 0;
    char c = *r->p;
    if (c == '{' || c == '[') {
        rc = container(r, v);
    } else if (c == '"') {
        v->t = MRA_JSON_STR;
        rc = string(r, &v->str);
    } else if (c == '-' || (c >= '0' && c <= '9')) {
        v->t = MRA_JSON_NUM;
        rc = number(r, &v->num);
    } else if (literal(r, "true") || literal(r, "false")) {
        v->t = MRA_JSON_BOOL;
        v->b = c == 't';
    } else if (literal(r, "null")) {
        v->t = MRA_JSON_NULL;
    } else {
        rc = fail(r, "an unexpected character");
    }
    if (rc != 0)
        mra_json_free(v);
    r->depth--;
    return rc;
}

int mra_json_parse(const char *text, size_t len, struct mra_json *out, const char **err, size_t *at)
{
    struct reader r = { .p = text, .end = text + len };
    int rc = value(&r, out);
    if (rc == 0) {
        skip_blanks(&r);
        if (r.p != r.end) {
            rc = fail(&r, "text after the document");
            mra_json_free(out);
        }
    }
    if (rc != 0) {
        if (err)
            *err = r.err ? r.err : "invalid";
        if (at)
            *at = (size_t)((r.err_at ? r.err_at : r.p) - text);
    }
    return rc;
}

void mra_json_free(struct mra_json *v)
{
    if (!v)
        return;
    free(v->str);
    for (size_t i = 0; i < v->n; i++) {
        mra_json_free(&v->items[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    memset(v, 0, sizeof *v);
}

const struct mra_json *mra_json_get(const struct mra_json *v, const char *key)
{
    if (!v || v->t != MRA_JSON_OBJ)
        return NULL;
    for (size_t i = 0; i < v->n; i++)
        if (strcmp(v->keys[i], key) == 0)
            return &v->items[i];
    return NULL;
}

const struct mra_json *mra_json_at(const struct mra_json *v, size_t i)
{
    return v && v->t == MRA_JSON_ARR && i < v->n ? &v->items[i] : NULL;
}

double mra_json_num(const struct mra_json *v, double dflt)
{
    return v && v->t == MRA_JSON_NUM ? v->num : dflt;
}

const char *mra_json_str(const struct mra_json *v)
{
    return v && v->t == MRA_JSON_STR ? v->str : NULL;
}

char *mra_json_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 65536, n = 0;
    char *b = malloc(cap);
    while (b) {
        n += fread(b + n, 1, cap - n - 1, f);
        if (n < cap - 1)
            break;
        char *nb = cap < SIZE_MAX / 4 ? realloc(b, cap * 2) : NULL;
        if (!nb) {
            free(b);
            b = NULL;
            errno = ENOMEM;
            break;
        }
        b = nb;
        cap *= 2;
    }
    if (b && ferror(f)) {
        free(b);
        b = NULL;
        errno = EIO;
    }
    fclose(f);
    if (b) {
        b[n] = '\0';
        if (len)
            *len = n;
    }
    return b;
}
