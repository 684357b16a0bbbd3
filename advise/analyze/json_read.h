/* SPDX-License-Identifier: MIT */
/* advise/analyze/json_read.h -- a small, strict JSON reader for what
 * memres-advise wrote itself (--json): `memres-advise diff` reads two
 * reports with it, and the tests read the reports they check.  A whole
 * document becomes a tree; objects keep their members in order. */
#ifndef MEMRES_ADVISE_JSON_READ_H
#define MEMRES_ADVISE_JSON_READ_H

#include <stdbool.h>
#include <stddef.h>

enum mra_json_type { MRA_JSON_NULL, MRA_JSON_BOOL, MRA_JSON_NUM, MRA_JSON_STR, MRA_JSON_ARR, MRA_JSON_OBJ };

struct mra_json {
    enum mra_json_type t;
    bool b;                      /* MRA_JSON_BOOL */
    double num;                  /* MRA_JSON_NUM */
    char *str;                   /* MRA_JSON_STR: decoded, UTF-8, NUL-terminated */
    size_t n;                    /* MRA_JSON_ARR, MRA_JSON_OBJ: items */
    struct mra_json *items;
    char **keys;                 /* MRA_JSON_OBJ: keys[i] names items[i] */
};

/* Parses text[0..len) as one JSON document (RFC 8259: no trailing
 * commas, no comments, numbers by the grammar, strings of UTF-8, escapes
 * checked, surrogate pairs joined, at most 200 levels deep, nothing after
 * it but blanks).
 * 0 and *out filled in, or -1 with *err (what was wrong) and *at (its
 * byte offset) set and nothing left allocated. */
int mra_json_parse(const char *text, size_t len, struct mra_json *out, const char **err, size_t *at);
/* Frees what mra_json_parse allocated under v (v itself is the caller's). */
void mra_json_free(struct mra_json *v);
/* The member key of object v: NULL where v is NULL, not an object, or has
 * no such member. */
const struct mra_json *mra_json_get(const struct mra_json *v, const char *key);
/* Item i of array v, or NULL. */
const struct mra_json *mra_json_at(const struct mra_json *v, size_t i);
/* v's number, or dflt where v is NULL or not a number. */
double mra_json_num(const struct mra_json *v, double dflt);
/* v's string, or NULL where v is NULL or not a string. */
const char *mra_json_str(const struct mra_json *v);
/* The whole file at path, NUL-terminated (*len bytes before the NUL), or
 * NULL with errno set. */
char *mra_json_read_file(const char *path, size_t *len);

#endif
