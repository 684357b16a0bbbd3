#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/callgrind-rows.sh [BENCH] -- the instructions (callgrind's total
# Ir) of every memres row of `memres-bench --quick`, one line each:
# "scenario<TAB>variant<TAB>Ir".  Repeatable whatever the machine's load:
# the check that a change leaves the allocation paths alone is the same
# totals before and after (within a fraction of a percent: addresses and
# hash seeds move a little).  BENCH defaults to build-bench/bench/memres-bench
# (scripts/bench.sh builds it).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bench=${1:-$root/build-bench/bench/memres-bench}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
scenario=
"$bench" --list | while IFS= read -r line; do
  case $line in
    "  "[a-z]*) scenario=${line#  }; scenario=${scenario%% *} ;;
    "    * "*)
      variant=$(sed -E 's/^    \* (.*[^ ]) +memres +.*$/\1/' <<<"$line")
      out=$tmp/cg.out
      valgrind --tool=callgrind --callgrind-out-file="$out" \
        "$bench" --quick --run "$scenario" "$variant" --fd 3 3>/dev/null >/dev/null 2>"$tmp/log" || {
        echo "callgrind-rows: $scenario / $variant failed:" >&2; tail -5 "$tmp/log" >&2; exit 1; }
      ir=$(awk '/^summary:/ {print $2}' "$out")
      printf '%s\t%s\t%s\n' "$scenario" "$variant" "$ir" ;;
  esac
done
