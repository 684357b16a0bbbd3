#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# advise/tests/apply.sh -- `memres-advise apply` keeps a program's output:
#
#   apply.sh ADVISOR WORKDIR [--stdin FILE] [--expect KIND]... [--max-held BYTES] [--kat-counts]
#            [--routed-min KIND N] [--rss-max RATIO] [--under LIB] -- PROGRAM [ARGS...]
#
# records PROGRAM and writes the plan of every site the rules name an
# allocator for (--plan-candidates, --min-share 0: each kind of route gets
# exercised, whatever it would save), runs PROGRAM natively and under the
# plan, and fails unless both print the same on stdout and exit the same,
# the plan routes something, and (--expect KIND) a route of each KIND was
# planned and served allocations, and (--max-held) the routes held at most
# BYTES at their peak (a plan that mixes a long-lived site into a short-lived
# site's region keeps every block live), and (--kat-counts) the routes served
# exactly the allocations the known-answer program counts at its sites
# ("KAT-COUNT NAME n" on its stderr, one route a site: a call identified as
# another site's shows as a count off by it), and (--routed-min) the routes of
# KIND served N allocations or more, and (--rss-max) the peak RSS the program
# prints ("PEAK-RSS KB" on its stderr) under the plan was at most RATIO
# times its native run's.  --under LIB: the native and
# the applied runs with the malloc LIB preloaded (after the runtime: every
# call the plan does not route, and every pointer it did not hand out, goes
# to LIB).  Exit 77 (skipped) when PROGRAM or LIB is not installed.
set -u
advisor=$1 work=$2
shift 2
stdin=/dev/null
expect=()
max_held=
kat_counts=
routed_kind= routed_min=
rss_max=
under=
while [ $# -gt 0 ]; do
  case $1 in
    --stdin) stdin=$2; shift 2 ;;
    --expect) expect+=("$2"); shift 2 ;;
    --max-held) max_held=$2; shift 2 ;;
    --kat-counts) kat_counts=1; shift ;;
    --routed-min) routed_kind=$2; routed_min=$3; shift 3 ;;
    --rss-max) rss_max=$2; shift 2 ;;
    --under) under=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "apply.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
if ! command -v "$1" >/dev/null 2>&1; then
  echo "apply.sh: $1 is not installed: skipped"
  exit 77
fi
if [ -n "$under" ] && [ ! -r "$under" ]; then
  echo "apply.sh: $under is not installed: skipped"
  exit 77
fi
# the runs under test, natively and applied: with LIB preloaded (the runtime
# puts itself in front of the caller's LD_PRELOAD)
under_env=()
[ -n "$under" ] && under_env=(env "LD_PRELOAD=$under")
rm -rf "$work"
mkdir -p "$work"
fail() { echo "apply.sh: FAIL: $*" >&2; exit 1; }

"$advisor" --plan-candidates --plan "$work/plan" --min-share 0 -o "$work/report" -- "$@" \
  <"$stdin" >"$work/recorded.out" 2>"$work/recorded.err"
recorded=$?
[ -s "$work/plan" ] || fail "no plan was written (status $recorded; $work/recorded.err)"
"${under_env[@]}" "$@" <"$stdin" >"$work/native.out" 2>"$work/native.err"
native=$?
"${under_env[@]}" "$advisor" apply "$work/plan" --stats "$work/stats" -- "$@" <"$stdin" >"$work/applied.out" \
  2>"$work/applied.err"
applied=$?
[ $native -eq $applied ] || fail "exit status $native natively, $applied under the plan ($work/applied.err)"
[ $recorded -eq $native ] || fail "exit status $native natively, $recorded under the recorder"
cmp -s "$work/native.out" "$work/applied.out" || fail "stdout differs under the plan: diff $work/native.out $work/applied.out"
[ -s "$work/stats" ] || fail "the apply runtime wrote no stats ($work/applied.err)"
routed=$(awk '$1 == "route" { n += $5 } END { print n + 0 }' "$work/stats")
[ "$routed" -gt 0 ] || fail "the plan routed no allocation ($work/plan, $work/stats)"
for k in "${expect[@]}"; do
  n=$(awk -v k="$k" '$1 == "route" && $3 == k { n += $5 } END { print n + 0 }' "$work/stats")
  [ "$n" -gt 0 ] || fail "no $k route served an allocation ($work/plan, $work/stats)"
done
if [ -n "$routed_kind" ]; then
  n=$(awk -v k="$routed_kind" '$1 == "route" && $3 == k { n += $5 } END { print n + 0 }' "$work/stats")
  [ "$n" -ge "$routed_min" ] || fail "the $routed_kind routes served $n allocations, fewer than $routed_min ($work/plan, $work/stats)"
fi
held=$(awk '$1 == "held_peak" { print $2 }' "$work/stats")
if [ -n "$max_held" ] && [ "${held:-0}" -gt "$max_held" ]; then
  fail "the routes held $held bytes at their peak, more than $max_held ($work/plan, $work/stats)"
fi
if [ -n "$rss_max" ]; then
  rn=$(awk '$1 == "PEAK-RSS" { print $2 }' "$work/native.err")
  ra=$(awk '$1 == "PEAK-RSS" { print $2 }' "$work/applied.err")
  [ -n "$rn" ] && [ -n "$ra" ] || fail "the program printed no PEAK-RSS line ($work/native.err, $work/applied.err)"
  awk -v a="$ra" -v n="$rn" -v m="$rss_max" 'BEGIN { exit !(a <= n * m) }' \
    || fail "peak RSS $ra KB under the plan, more than $rss_max x the native run's $rn KB ($work/stats)"
fi
if [ -n "$kat_counts" ]; then
  want=$(awk '$1 == "KAT-COUNT" { print $3 }' "$work/native.err" | sort -n | tr '\n' ' ')
  got=$(awk '$1 == "route" { print $5 }' "$work/stats" | sort -n | tr '\n' ' ')
  [ -n "$want" ] && [ "$want" = "$got" ] \
    || fail "the routes served [$got] allocations, the program counts [$want] at its sites ($work/stats)"
fi
# a plan that walks more than 2 frames lets calls out by their first
# frames (plan_load.c's prefixes): the same routes as walking every stack
# whole
if [ "$(awk '$1 == "walk" { print $2 }' "$work/plan")" -gt 2 ]; then
  MEMRES_ADVISE_APPLY_WALK_WHOLE=1 "${under_env[@]}" "$advisor" apply "$work/plan" --stats "$work/stats-whole" -- "$@" \
    <"$stdin" >"$work/whole.out" 2>"$work/whole.err" || fail "exit status $? with every stack walked whole"
  cmp -s "$work/native.out" "$work/whole.out" || fail "stdout differs with every stack walked whole"
  [ "$(grep '^route' "$work/stats")" = "$(grep '^route' "$work/stats-whole")" ] \
    || fail "the routes differ with every stack walked whole: diff $work/stats $work/stats-whole"
fi
echo "apply.sh: $(basename "$1"): same output and status ($native) under the plan; $routed allocations routed:"
grep '^route' "$work/stats" | sed 's/^/  /'
exit 0
