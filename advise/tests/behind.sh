#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# advise/tests/behind.sh -- `memres-advise measure` runs the pools the
# report recommends behind one function, on a plan of their own:
#
#   behind.sh ADVISOR WORKDIR ALLOCATIONS -- PROGRAM [ARGS...]
#
# PROGRAM's report must name one mr_pools behind a function; measure (one
# round: timing is never a pass/fail here) must have a row for it, a line
# with its prediction and measurement, and must have routed exactly
# ALLOCATIONS (every allocation from the function, told by its first
# frame), with the program's output and exit status unchanged.
set -u
advisor=$1 work=$2 want=$3
shift 3
[ "$1" = "--" ] && shift
rm -rf "$work"
mkdir -p "$work"
fail() { echo "behind.sh: FAIL: $*" >&2; cat "$work/report" >&2; exit 1; }
"$advisor" measure --rounds 1 --no-other-mallocs -o "$work/report" -- "$@" </dev/null >"$work/out" 2>"$work/err" \
  || fail "measure exited $?"
r=$work/report
grep -q '^behind one function: pools ' "$r" || fail "the report names no pools behind a function"
fn=$(sed -n 's/^    at   \([^ ]*\) .*/\1/p' <(grep -A1 '^behind one function' "$r") | head -1)
grep -q "^  pools behind $fn " "$r" || fail "no row of the pools behind $fn"
grep -Eq "^  one mr_pools behind $fn: predicted [0-9.]+ ms, measured -?[0-9.]+ ms \(" "$r" \
  || fail "no line of the pools behind $fn, predicted and measured"
grep -q "; routed $want allocations by their first frame; " "$r" \
  || fail "the pools behind $fn did not route the $want allocations from it"
grep -q 'DIFFERS' "$r" && fail "a run changed the output or exit status"
echo "behind.sh: $(grep -A1 "^  one mr_pools behind $fn" "$r" | tr -s ' ' | tr '\n' ' ')"
exit 0
