#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# advise/tests/stale_costs.sh -- a cache of this machine's costs made in a
# slow hour (a shared host that slowed every CPU for the whole
# calibration) is measured again: memres-advise times the cache's glibc
# cell at 32 bytes at each run and calibrates again where the machine now
# runs it in under 3/4 of the cached time (calibrate.c, mra_costs_get).
#
#   stale_costs.sh ADVISOR WORKDIR
#
# The first run calibrates into WORKDIR/cache; the cache's glibc rows are
# then made 40 times slower, and the second run must say so, calibrate
# again and write a cache whose cell is back near what the machine runs.
set -u
advisor=$1 work=$2
rm -rf "$work"
mkdir -p "$work"
export XDG_CACHE_HOME=$work/cache
unset MEMRES_ADVISE_COSTS MEMRES_ADVISE_RECALIBRATE
fail() { echo "stale_costs.sh: FAIL: $*" >&2; cat "$work/err" >&2; exit 1; }
cache=$XDG_CACHE_HOME/memres-advise/costs-v1
"$advisor" -o "$work/r1" -- true >/dev/null 2>"$work/err" || fail "first run exited $?"
[ -f "$cache" ] || fail "no cache written"
grep -q 'calibrating costs of this machine (once)' "$work/err" || fail "no first calibration"
# the glibc rows x40, as a calibration in a very slow hour would have them
awk '$1 ~ /^glibc-/ { for (i = 2; i <= NF; i++) $i = $i * 40 } { print }' "$cache" >"$work/slow" \
  && cp "$work/slow" "$cache" || fail "cannot rewrite the cache"
before=$(awk '$1 == "glibc-random" { print $7 }' "$cache") # class 5: 32 bytes
"$advisor" -o "$work/r2" -- true >/dev/null 2>"$work/err" || fail "second run exited $?"
grep -q "where its costs say .*: calibrating again" "$work/err" || fail "the slow cache was not measured again"
after=$(awk '$1 == "glibc-random" { print $7 }' "$cache")
awk -v a="$after" -v b="$before" 'BEGIN { exit !(a > 0 && a < b / 4) }' \
  || fail "the cache was not rewritten (glibc-random at 32 bytes: $before -> $after ns)"
echo "stale_costs.sh: glibc-random at 32 bytes $before -> $after ns"
