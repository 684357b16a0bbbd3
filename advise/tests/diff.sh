#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# advise/tests/diff.sh -- `memres-advise diff A.json B.json`:
#
#   diff.sh ADVISOR WORKDIR -- PROGRAM ARGS_A -- ARGS_B
#
# records PROGRAM ARGS_A and PROGRAM ARGS_B with --json; a report against
# itself is "no change", A against B names a changed site of PROGRAM's
# source, and bad input (a missing file, a file that is not JSON, JSON the
# reader must refuse, JSON that is not a report, a wrong argument count)
# exits 2 with a message on stderr.
set -u
advisor=$1 work=$2
shift 2
[ "${1:-}" = -- ] && shift
prog=$1
shift
args_a=() args_b=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do args_a+=("$1"); shift; done
[ $# -gt 0 ] && shift
args_b=("$@")
fail() { echo "diff.sh: FAIL: $*" >&2; exit 1; }
rm -rf "$work"
mkdir -p "$work"
cd "$work" || exit 1

"$advisor" -o a.txt --json a.json -- "$prog" "${args_a[@]}" >/dev/null 2>a.err || fail "recording A failed (a.err)"
"$advisor" -o b.txt --json b.json -- "$prog" "${args_b[@]}" >/dev/null 2>b.err || fail "recording B failed (b.err)"

"$advisor" diff a.json a.json >same.out 2>same.err
st=$?
[ $st = 0 ] || fail "diff of a report against itself exited $st ($work/same.err)"
grep -q '^no change' same.out || fail "a report against itself is not 'no change' ($work/same.out)"

"$advisor" diff a.json b.json >ab.out 2>ab.err
st=$?
[ $st = 0 ] || fail "diff A B exited $st ($work/ab.err)"
grep -q '^changed sites' ab.out || fail "no changed site listed ($work/ab.out)"
src=$(basename "$prog").c
grep -qE "^  #[0-9]+ -> #[0-9]+  .*$src:[0-9]+" ab.out || fail "no changed site of $src named ($work/ab.out)"
grep -qE '^      allocations +[0-9]+ -> [0-9]+  \(\+[0-9]+' ab.out || fail "no allocations old -> new (+change) ($work/ab.out)"
grep -qE '^      heap taken again +[0-9]+ -> [0-9]+' ab.out || fail "no heap taken again old -> new ($work/ab.out)"
echo "diff.sh: A -> B:"
head -14 ab.out | sed 's/^/  /'

# bad input: exit 2, a message, nothing on stdout
bad() {
  local want=$1
  shift
  "$advisor" diff "$@" >bad.out 2>bad.err </dev/null
  local st=$?
  [ $st = 2 ] || fail "diff $* exited $st, not 2"
  grep -q "$want" bad.err || fail "diff $*: no message '$want' on stderr: $(cat bad.err)"
  [ ! -s bad.out ] || fail "diff $* printed on stdout"
}
bad 'No such file' a.json missing.json
bad 'No such file' missing.json a.json
bad 'usage' a.json
head -c 300 a.json >truncated.json
bad 'not JSON' truncated.json a.json
: >empty.json
bad 'not JSON' empty.json a.json
deep=$(printf '%0300d' 0 | tr 0 '[')
# what stderr must say | the file's text: not JSON, JSON the strict reader
# refuses, JSON that is not a report
while IFS='|' read -r want text; do
  printf '%s' "$text" >case.json
  bad "$want" case.json a.json
done <<CASES
not JSON|hello, world
not JSON|{"version": 1, "sites": [1,],}
not JSON|{"version": 01}
not JSON|["\udc00"]
not JSON|{"version": 1} {}
nested too deep|$deep
version 1|{"version": 2, "run_time_ns": 1, "sites": []}
no "sites"|{"version": 1, "run_time_ns": 1}
not a memres-advise site|{"version": 1, "run_time_ns": 1, "sites": [{"id": 1}]}
CASES
echo "diff.sh: bad input exits 2 with a message"
exit 0
