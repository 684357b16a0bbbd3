#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# advise/tests/heap.sh -- the recorder sees what glibc gives back and takes
# again (format.h's heap section), and the report says so:
#
#   heap.sh ADVISOR WORKDIR HEAP_TRIM [--measure]
#
# heap_trim's 20 rounds give 4 MiB back and take it again each (19 times
# taken again: at least 70 MiB between them, whatever the trim threshold's
# slack), and one 64 MiB block is mapped and unmapped (given back); its
# site is named.  With glibc told to keep its memory (the tunables the
# report gives) nothing is taken again (the 64 MiB block, above the largest
# mmap threshold, is still mapped and unmapped).
# --measure (the apply runtime built, MEMRES_ADVISE_APPLY_LIB set): no site
# is recommended (the blocks' site is an arena-rewind candidate predicted
# far under the 2% rule), so measure plans the rules' candidates instead
# and says so; the memory taken again passes the rule at the costs'
# page-fault figure, so the row of glibc keeping its memory is there with
# its saving against the prediction; the report ends with a verdict.
set -u
advisor=$1 work=$2 prog=$3
rm -rf "$work"
mkdir -p "$work"
fail() { echo "heap.sh: FAIL: $*" >&2; cat "$work/report" >&2; exit 1; }
if [ "${4:-}" = --measure ]; then
  "$advisor" measure --rounds 1 --no-other-mallocs -o "$work/report" -- "$prog" 20 >"$work/out" 2>"$work/err" \
    || fail "measure exited $?"
  grep -q '^glibc gave .*: pages faulted in a second time, about ' "$work/report" || fail "no predicted cost"
  grep -q '^  memory kept would save that: GLIBC_TUNABLES=glibc.malloc.trim_threshold=' "$work/report" \
    || fail "no advice to keep the memory"
  grep -q '^under the rule: 1 candidate site, predicted ' "$work/report" || fail "no line of the candidates under the rule"
  grep -q '^  the plan: 1 site,' "$work/report" || fail "the candidate was not planned"
  grep -q '^  nothing passed the [0-9.]*% rule by the prediction, so the plan measured is the sites the rules$' \
    "$work/report" || fail "no line saying the candidates were measured instead"
  grep -Eq '^  verdict: (the plan saves|the plan.s run saves|under the)' "$work/report" || fail "no verdict"
  grep -q '^  glibc, memory kept ' "$work/report" || fail "no row of glibc keeping its memory"
  grep -Eq '^  saved -?[0-9.]+ ms \(.*\), against the predicted [0-9.]+ ms of memory given back and$' \
    "$work/report" || fail "no saving against the prediction"
  # faults are counted, not timed: keeping the memory lowers them on any host
  fewer=$(sed -n 's/^  page faults [0-9]* against glibc.s [0-9]* (\(-\{0,1\}[0-9]*\) fewer); the recorded run took [0-9]* pages again$/\1/p' "$work/report")
  [ -n "$fewer" ] && [ "$fewer" -gt 0 ] || fail "keeping glibc's memory did not lower the page faults ($fewer fewer)"
  grep -q 'DIFFERS' "$work/report" && fail "a run changed the output or exit status"
  echo "heap.sh: $(grep -A1 '^  glibc with its memory kept' "$work/report" | tail -1)"
  exit 0
fi
"$advisor" --min-share 0 -o "$work/report" --json "$work/r.json" -- "$prog" 20 >"$work/out" 2>"$work/err" \
  || fail "memres-advise exited $?"
[ "$(cat "$work/out")" = "$("$prog" 20)" ] || fail "the program's output changed under the recorder"
# field NAME of the JSON's "heap" object (one line), or of every site (one per line)
heapf() { grep -o '"heap": {[^}]*}' "$1" | grep -o "\"$2\": [0-9]*" | grep -o '[0-9]*$'; }
sitef() { grep -o "\"$2\": [0-9]*" "$1" | grep -o '[0-9]*$'; }
MiB=$((1 << 20))
given=$(heapf "$work/r.json" given_back_bytes) retaken=$(heapf "$work/r.json" retaken_bytes)
grown=$(heapf "$work/r.json" grown_bytes)
[ -n "$given" ] && [ -n "$retaken" ] && [ -n "$grown" ] || fail "no heap object in the JSON"
[ "$given" -ge $((19 * 4 * MiB + 64 * MiB)) ] || fail "given back $given"
[ "$(heapf "$work/r.json" given_back_events)" -ge 20 ] || fail "fewer than 20 give-backs"
[ "$retaken" -ge $((70 * MiB)) ] || fail "taken again $retaken"
[ "$(heapf "$work/r.json" retaken_events)" -ge 19 ] || fail "fewer than 19 re-takes"
[ "$grown" -ge $((retaken + 64 * MiB)) ] && [ "$grown" -lt $((1 << 40)) ] || fail "grown $grown"
grep -q '"keep_tunables": "glibc.malloc.trim_threshold=' "$work/r.json" || fail "no tunables"
# the speed probes ran on the program's thread (format.h's speed section),
# and did not count in the heap's figures above; this test's environment
# takes the run as timed (MEMRES_ADVISE_RECORDING_SPEED=0)
grep -Eq "^speed: glibc's pair of the calibration \(32 bytes, random order\) took [0-9.]+ ns on the program's thread \([0-9.]+ at start, [0-9.]+ at exit\)" \
  "$work/report" || fail "no speed line"
grep -q '"speed": 1,' "$work/r.json" || fail "the speed applied under MEMRES_ADVISE_RECORDING_SPEED=0"
grep -Eq '"speed_probe_ns": [1-9]' "$work/r.json" || fail "no speed probe in the JSON"
# the sites name what their frees gave back (all of it) and what their mapped
# chunks took again (the heap's growth is on no site)
sgiven=$(sitef "$work/r.json" heap_given_back_bytes | awk '{ s += $1 } END { print s + 0 }')
staken=$(sitef "$work/r.json" heap_retaken_bytes | awk '{ s += $1 } END { print s + 0 }')
[ "$sgiven" -eq "$given" ] || fail "the sites gave back $sgiven of $given"
[ "$staken" -le "$retaken" ] || fail "the sites took $staken of $retaken"
grep -q '^glibc gave .* back to the system (.* trims and unmaps) and took .* of it again' "$work/report" \
  || fail "no heap line in the report"
grep -q "^  glibc's heap: its frees gave " "$work/report" || fail "no site's heap line"
line=$(grep '^glibc gave' "$work/report" | cut -c1-120)
tun=$(grep -o '"keep_tunables": "[^"]*"' "$work/r.json" | cut -d'"' -f4)
GLIBC_TUNABLES=$tun "$advisor" --min-share 0 -o "$work/report" --json "$work/k.json" -- "$prog" 20 \
  >/dev/null 2>"$work/err" || fail "memres-advise exited $? (memory kept)"
# nothing taken again; the 64 MiB block, above the largest mmap threshold, still unmapped
[ "$(heapf "$work/k.json" retaken_bytes)" -eq 0 ] && [ "$(heapf "$work/k.json" given_back_events)" -le 1 ] \
  || fail "memory kept: something taken again"
echo "heap.sh: $line"
echo "heap.sh: memory kept: nothing taken again"
