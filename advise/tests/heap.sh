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
# is recommended but the memory taken again passes the 2% rule at the
# costs' page-fault figure, so measure runs anyway, with the row of glibc
# keeping its memory and its saving against the prediction.
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
  grep -q '^  the plan: 0 sites' "$work/report" || fail "a site was planned"
  grep -q '^  glibc, memory kept ' "$work/report" || fail "no row of glibc keeping its memory"
  grep -Eq '^  saved -?[0-9.]+ ms \(.*\), against the predicted [0-9.]+ ms of memory given back and$' \
    "$work/report" || fail "no saving against the prediction"
  grep -q 'DIFFERS' "$work/report" && fail "a run changed the output or exit status"
  echo "heap.sh: $(grep -A1 '^  glibc with its memory kept' "$work/report" | tail -1)"
  exit 0
fi
"$advisor" --min-share 0 -o "$work/report" --json "$work/r.json" -- "$prog" 20 >"$work/out" 2>"$work/err" \
  || fail "memres-advise exited $?"
[ "$(cat "$work/out")" = "$("$prog" 20)" ] || fail "the program's output changed under the recorder"
python3 - "$work/r.json" <<'PY' || fail "heap figures"
import json, sys
d = json.load(open(sys.argv[1]))
h = d["heap"]
MiB = 1 << 20
assert h["given_back_bytes"] >= 19 * 4 * MiB + 64 * MiB, h
assert h["given_back_events"] >= 20, h
assert h["retaken_bytes"] >= 70 * MiB, h
assert h["retaken_events"] >= 19, h
assert h["grown_bytes"] >= h["retaken_bytes"] + 64 * MiB, h
assert "glibc.malloc.trim_threshold=" in h["keep_tunables"], h
named = [s for s in d["sites"] if s["heap_given_back_bytes"] or s["heap_retaken_bytes"]]
assert named, "no site named"
# the heap's growth is counted at trims, on no site; a mapped chunk's on its own
assert sum(s["heap_retaken_bytes"] for s in named) <= h["retaken_bytes"], (named, h)
assert h["grown_bytes"] < 1 << 40, h
assert sum(s["heap_given_back_bytes"] for s in named) == h["given_back_bytes"], (named, h)
PY
grep -q '^glibc gave .* back to the system (.* trims and unmaps) and took .* of it again' "$work/report" \
  || fail "no heap line in the report"
grep -q "^  glibc's heap: its frees gave " "$work/report" || fail "no site's heap line"
line=$(grep '^glibc gave' "$work/report" | cut -c1-120)
tun=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["heap"]["keep_tunables"])' "$work/r.json")
GLIBC_TUNABLES=$tun "$advisor" --min-share 0 -o "$work/report" --json "$work/k.json" -- "$prog" 20 \
  >/dev/null 2>"$work/err" || fail "memres-advise exited $? (memory kept)"
python3 - "$work/k.json" <<'PY' || fail "memory kept: something taken again"
import json, sys
h = json.load(open(sys.argv[1]))["heap"]
assert h["retaken_bytes"] == 0 and h["given_back_events"] <= 1, h  # the 64 MiB block: mapped still
PY
echo "heap.sh: $line"
echo "heap.sh: memory kept: nothing taken again"
