#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# advise/tests/measure.sh -- `memres-advise measure --alternatives` runs and
# says what it measured:
#
#   measure.sh ADVISOR WORKDIR -- PROGRAM [ARGS...]
#
# One round (timing is never a pass/fail here): the table has the glibc
# run, the plan's run, the runtime's alone (the allocators' saving is the
# difference of the last two), glibc keeping its memory (against the
# predicted cost of memory given back and taken again) and each planned site alone on its allocator and on
# its alternative; the plan's verdict against the 2% rule; the per-site verdict names, for every planned site, the allocator
# that saved most (or none) and how many sites the advice held at; no run
# changed the program's output or exit status.
set -u
advisor=$1 work=$2
shift 2
[ "$1" = "--" ] && shift
rm -rf "$work"
mkdir -p "$work"
fail() { echo "measure.sh: FAIL: $*" >&2; cat "$work/report" >&2; exit 1; }
"$advisor" measure --alternatives --rounds 1 --no-other-mallocs --min-share 0 --plan-candidates \
  -o "$work/report" -- "$@" </dev/null >"$work/out" 2>"$work/err" || fail "measure exited $?"
r=$work/report
grep -q '^  glibc malloc ' "$r" || fail "no glibc row"
grep -q '^  memres (the plan) ' "$r" || fail "no plan row"
grep -q '^  the runtime alone ' "$r" || fail "no row of the runtime alone (identification, glibc's allocators)"
grep -Eq "^  the allocators' saving \(the runtime-alone run less the plan's, per round\): -?[0-9.]+ ms" "$r" \
  || fail "no allocators' saving"
grep -q '^  glibc, memory kept ' "$r" || fail "no row of glibc keeping its memory"
grep -Eq '^  saved -?[0-9.]+ ms \(.*\), against the predicted [0-9.]+ ms of memory given back and$' "$r" \
  || fail "no line of what glibc's memory kept saved"
grep -Eq '^  variant .* RSS ratio  page faults$' "$r" || fail "no column of page faults"
grep -Eq "^  page faults [0-9]+ against glibc's [0-9]+ \(-?[0-9]+ fewer\); the recorded run took [0-9]+ pages again$" "$r" \
  || fail "no line of the page faults glibc's memory kept saved"
grep -Eq '^  took [0-9.]+x its calibrated [0-9.]+ ns \([0-9.]+-[0-9.]+\); the prediction at that speed: -?[0-9.]+ ms$' "$r" \
  || fail "no line of the machine's speed in the rounds"
grep -Eq "^  verdict: (the plan saves [0-9.]+% of glibc's run|the plan's run saves -?[0-9.]+%|under the [0-9.]+% rule as measured)" "$r" \
  || fail "no verdict of the rounds"
grep -q '^  nothing passed the ' "$r" && fail "candidates measured instead, where --plan-candidates planned them"
grep -Eq 'DIFFERS' "$r" && fail "a run changed the output or exit status"
nsites=$(grep -Ec '^  site [0-9]+ alone, ' "$r")
[ "$nsites" -ge 2 ] || fail "fewer than two per-site rows ($nsites)"
# every planned site's allocator and its alternative, then the verdict
grep -Eq '^    site [0-9]+ +[a-z-]+ [0-9.]+, [a-z-]+ [0-9.]+ -> [a-z-]+ \((the advice|the advice was [a-z-]+)\)(; the two within the rounds. spread)?$' "$r" \
  || fail "no verdict line with an alternative"
grep -Eq '^  the advice held at [0-9]+ of [0-9]+ sites?$' "$r" || fail "no summary"
echo "measure.sh: $(grep -E '^    site .* -> ' "$r" | head -3 | tr -s ' ')"
