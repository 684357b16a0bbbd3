/* SPDX-License-Identifier: MIT */
/* advise/tests/kat_json.h -- the advisor's tests read the reports they
 * check with memres-advise's own strict JSON reader (analyze/json_read.h,
 * which `memres-advise diff` uses): a report that is not JSON fails the
 * test.  These are the tests' short names for it. */
#ifndef MEMRES_ADVISE_KAT_JSON_H
#define MEMRES_ADVISE_KAT_JSON_H

#include "json_read.h"

typedef struct mra_json kj;
#define KJ_NULL MRA_JSON_NULL
#define KJ_BOOL MRA_JSON_BOOL
#define KJ_NUM MRA_JSON_NUM
#define KJ_STR MRA_JSON_STR
#define KJ_ARR MRA_JSON_ARR
#define KJ_OBJ MRA_JSON_OBJ

#define kj_parse mra_json_parse
#define kj_free mra_json_free
#define kj_get mra_json_get
#define kj_at mra_json_at
#define kj_num mra_json_num
#define kj_str mra_json_str
#define kj_read_file mra_json_read_file

#endif
