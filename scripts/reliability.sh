#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/reliability.sh -- the figures of docs/RELIABILITY.md, from one
# CI-sized run on a fresh Debian 12 machine (a few minutes on two cores):
#
#   misuse   every case of tests/misuse/misuse.c, each in a fresh process, in
#            five builds of the library:
#              release   -DCMAKE_BUILD_TYPE=Release            (MR_DEBUG 0)
#              debug     -DCMAKE_BUILD_TYPE=Debug              (MR_DEBUG 1)
#              debug3    Debug, -DMEMRES_DEBUG=3
#              asan      Debug, -DMEMRES_SANITIZE=address (ASan+UBSan), MEMRES_DEBUG=3
#              valgrind  Debug, -DMEMRES_VALGRIND=ON (when the option exists),
#                        run under valgrind --error-exitcode=99 -q
#            and a table of what caught each case.  A case that a header
#            promises to detect in a build and that goes silent there (or
#            crashes without a report) fails the run.
#   leaks    the unit tests (ctest -L fast) under ASan's LeakSanitizer, and
#            every misuse case under LeakSanitizer and memcheck
#   faults   failure points swept by the fault-sweep tests (their "# fault
#            sweep" lines) plus the upstream failures the fuzz inputs injected
#   fuzz     the standalone fuzz run that CTest calls fuzz_ops (same seed, same
#            number of inputs), built with counters (tests/misuse/fuzz_count.c):
#            inputs, op steps and API calls per allocator (run without address
#            randomisation, so the counts repeat)
#   coverage line coverage of src/ (gcovr) from a --coverage build running
#            ctest -L fast and that fuzz run; then again with the misuse
#            cases added
#
# Usage: scripts/reliability.sh [BUILD ...]   (default: all five misuse builds,
#        leaks, faults, fuzz and coverage; naming builds runs only their
#        misuse columns)
# Environment: MEMRES_SKIP_APT=1 skips the package step; MEMRES_RELIABILITY_DIR
# (default build-reliability) holds the builds, the logs and report.md, the
# tables in Markdown for docs/RELIABILITY.md; MEMRES_JOBS (default: nproc).
# Exit status: 0 when no promise was broken, no leak found, every test passed
# and coverage was measured; 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
start=$(date +%s)

SUDO=
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; fi
if [ "${MEMRES_SKIP_APT:-0}" != 1 ] && command -v apt-get >/dev/null; then
  echo "== installing build, test and measurement dependencies (apt-get)"
  $SUDO apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    cmake make gcc g++ pkg-config libcmocka-dev valgrind gcovr >/dev/null
fi

jobs=${MEMRES_JOBS:-$(nproc 2>/dev/null || echo 2)}
out=${MEMRES_RELIABILITY_DIR:-build-reliability}
mkdir -p "$out"
out=$(cd "$out" && pwd)
report=$out/report.md
: >"$report"
status=0
fail() { echo "FAIL: $*"; status=1; }

have_valgrind_option=0
if grep -q 'option(MEMRES_VALGRIND' CMakeLists.txt; then have_valgrind_option=1; fi

builds=("$@")
full=0
if [ ${#builds[@]} -eq 0 ]; then builds=(release debug debug3 asan valgrind); full=1; fi

# ---- build descriptions: cmake flags, MR_DEBUG level, checker ----
build_flags() {
  case $1 in
    release)  echo "-DCMAKE_BUILD_TYPE=Release" ;;
    debug)    echo "-DCMAKE_BUILD_TYPE=Debug" ;;
    debug3)   echo "-DCMAKE_BUILD_TYPE=Debug -DMEMRES_DEBUG=3" ;;
    asan)     echo "-DCMAKE_BUILD_TYPE=Debug -DMEMRES_SANITIZE=address -DMEMRES_DEBUG=3" ;;
    valgrind) if [ $have_valgrind_option = 1 ]; then echo "-DCMAKE_BUILD_TYPE=Debug -DMEMRES_VALGRIND=ON"
              else echo "-DCMAKE_BUILD_TYPE=Debug"; fi ;;
    coverage) echo "-DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS=--coverage -DCMAKE_CXX_FLAGS=--coverage" ;;
    *) echo "unknown build '$1' (release, debug, debug3, asan, valgrind)" >&2; exit 2 ;;
  esac
}
build_level() { case $1 in release) echo 0 ;; debug|valgrind|coverage) echo 1 ;; *) echo 3 ;; esac; }

# configure_build NAME [extra cmake args...]: configures tests/misuse (the
# library as a subproject) in $out/NAME; logs in $out/NAME.build.log.
configure_build() {
  local name=$1; shift
  # shellcheck disable=SC2046
  cmake -S tests/misuse -B "$out/$name" $(build_flags "$name") "$@" >"$out/$name.build.log" 2>&1
}

# ---- misuse: run every case, classify ----
# The catalogue: name <TAB> promised flags <TAB> description <TAB> promises...
catalogue=$out/catalogue.tsv

# classify LOG RC BUILD -> prints the detectors that fired (letters) or - / X
#   H violation handler (REPORTED)  W walker (mr_*_check returned false)
#   M memres internal check abort    A AddressSanitizer   U UBSan
#   V valgrind memcheck error        X crash/exit without any report
classify() {
  local log=$1 rc=$2 codes=""
  grep -q '^REPORTED:' "$log" && codes+=H
  grep -q '^WALKER:' "$log" && codes+=W
  grep -q "^memres: .*(check '.*' failed)" "$log" && codes+=M
  grep -q 'ERROR: AddressSanitizer' "$log" && codes+=A
  grep -q 'runtime error:' "$log" && codes+=U
  if [ "$rc" = 99 ] || grep -Eq '^==[0-9]+== (Invalid (read|write|free)|Conditional jump|Use of uninitialised|Mismatched free|Source and destination overlap|Syscall param)' "$log"; then
    codes+=V
  fi
  if [ -z "$codes" ]; then
    if [ "$rc" = 0 ] && grep -q '^DONE:' "$log"; then codes=-; else codes=X; fi
  fi
  echo "$codes"
}

# promised FLAGS BUILD: is detection promised in BUILD?
promised() {
  local flags=$1 build=$2 level
  level=$(build_level "$build")
  case ",$flags," in *,all,*|*,walker,*) return 0 ;; esac
  case ",$flags," in *,debug,*) [ "$level" -ge 1 ] && return 0 ;; esac
  case ",$flags," in *,asan,*) [ "$build" = asan ] && return 0 ;; esac
  case ",$flags," in *,valgrind,*) [ "$build" = valgrind ] && [ $have_valgrind_option = 1 ] && return 0 ;; esac
  return 1
}

run_misuse() {
  local build=$1 dir=$out/$1 prefix=() name flags
  mkdir -p "$dir/cases"
  if [ "$build" = valgrind ]; then
    prefix=(valgrind -q --error-exitcode=99 --leak-check=full --show-leak-kinds=definite,indirect
            --errors-for-leak-kinds=none)
  fi
  : >"$dir/results.tsv"
  while IFS=$'\t' read -r name flags _; do
    local log=$dir/cases/$name.log rc cell leak=0 unsafe
    # (the braces keep bash's "Segmentation fault" notices out of the output)
    { ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
        timeout 120 "${prefix[@]}" "$dir/misuse" "$name" </dev/null >"$log" 2>&1; rc=$?; } 2>/dev/null
    cell=$(classify "$log" "$rc")
    if grep -Eq 'ERROR: LeakSanitizer|are (definitely|indirectly) lost' "$log"; then leak=1; fi
    if grep -q '^UNSAFE:' "$log"; then unsafe=1; else unsafe=0; fi
    printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$cell" "$rc" "$leak" "$unsafe" >>"$dir/results.tsv"
  done <"$catalogue"
}

for b in "${builds[@]}"; do build_flags "$b" >/dev/null; done
echo "== misuse: building ${builds[*]} in $out (jobs $jobs)"
built=()
for b in "${builds[@]}"; do
  extra=()
  if [ "$b" = asan ] && [ $full = 1 ]; then extra=(-DMEMRES_BUILD_TESTS=ON); fi
  if ! configure_build "$b" "${extra[@]}" || ! cmake --build "$out/$b" -j"$jobs" --target misuse >>"$out/$b.build.log" 2>&1; then
    tail -n 20 "$out/$b.build.log"
    fail "build $b failed (see $out/$b.build.log): its column is left out"
  else
    built+=("$b")
  fi
done
[ ${#built[@]} -gt 0 ] || exit 1
builds=("${built[@]}")
"$out/${builds[0]}/misuse" --list >"$catalogue"
ncases=$(wc -l <"$catalogue")
for b in "${builds[@]}"; do
  echo "== misuse: $ncases cases in $b"
  run_misuse "$b"
done

# ---- the table ----
# where FLAGS|FILE|TEXT -> FILE:LINE (the line of the header that promises it)
where() {
  local file=${1#*|}; local text=${file#*|}; file=${file%%|*}
  local line
  line=$(grep -nF -- "$text" "$file" 2>/dev/null | head -n 1 | cut -d: -f1)
  if [ -z "$line" ]; then echo "${file#include/memres/}:?(text changed)"; else echo "${file#include/memres/}:$line"; fi
}

{
  echo "| case | promised in | $(printf '%s | ' "${builds[@]}")where promised |"
  echo "|---|---|$(printf -- '---|%.0s' "${builds[@]}")---|"
} >>"$report"
printf '%-34s %-22s' case promised
printf ' %-9s' "${builds[@]}"
printf '\n'
broken=()
declare -A n_prom n_prom_det n_det n_silent n_crash n_leak n_unsafe
for b in "${builds[@]}"; do
  n_prom[$b]=0; n_prom_det[$b]=0; n_det[$b]=0; n_silent[$b]=0; n_crash[$b]=0; n_leak[$b]=0; n_unsafe[$b]=0
done
while IFS=$'\t' read -r name flags desc p1 p2 p3; do
  cites="" det_cites="" safe_cites=""
  for p in "$p1" "${p2:-}" "${p3:-}"; do
    [ -n "$p" ] || continue
    w=$(where "$p")
    case ", $cites, " in *", $w, "*) ;; *) cites+="${cites:+, }$w" ;; esac
    if [ "${p%%|*}" = safe ]; then safe_cites+="${safe_cites:+, }$w"
    else case ", $det_cites, " in *", $w, "*) ;; *) det_cites+="${det_cites:+, }$w" ;; esac; fi
  done
  row="| \`$name\` | $flags |"
  printf '%-34s %-22s' "$name" "$flags"
  for b in "${builds[@]}"; do
    IFS=$'\t' read -r _ cell rc leak unsafe < <(grep -P "^\Q$name\E\t" "$out/$b/results.tsv")
    [ "$leak" = 1 ] && n_leak[$b]=$((n_leak[$b] + 1))
    case $cell in
      -) n_silent[$b]=$((n_silent[$b] + 1)) ;;
      X) n_crash[$b]=$((n_crash[$b] + 1)) ;;
      *) n_det[$b]=$((n_det[$b] + 1)) ;;
    esac
    shown=$cell
    if [ "$cell" = X ]; then shown="X($rc)"; fi
    if promised "$flags" "$b"; then
      n_prom[$b]=$((n_prom[$b] + 1))
      if [ "$cell" = - ] || [ "$cell" = X ]; then
        broken+=("$name in $b: $shown, detection promised by $det_cites")
        shown="[$shown]!"
      else
        n_prom_det[$b]=$((n_prom_det[$b] + 1))
        shown="[$shown]"
      fi
    fi
    if [ "$unsafe" = 1 ]; then
      shown+=u
      n_unsafe[$b]=$((n_unsafe[$b] + 1))
      case ",$flags," in *,safe,*) broken+=("$name in $b: the call was not ignored, as promised by $safe_cites") ;; esac
    fi
    printf ' %-9s' "$shown"
    row+=" $shown |"
  done
  printf '\n'
  echo "$row ${cites:--} |" >>"$report"
done <"$catalogue"
cat >>"$report" <<'EOF'

Cells: H violation handler, W walker (mr_*_check) returned false, M memres internal check
aborted, A AddressSanitizer, U UBSan, V Valgrind memcheck, - silent, X crash with no report
(exit status).  [..] the header promises detection in this build; [-]! or [X]! a broken promise.
u: the case checked the safe way out that the header promises in every build (the call
ignored) and it was not taken.
EOF

{
  echo
  echo "| build | cases | detected | silent | crash | promised here | promised and detected | unsafe | leaks |"
  echo "|---|---|---|---|---|---|---|---|---|"
} >>"$report"
echo
for b in "${builds[@]}"; do
  printf '%-9s %d cases: %d detected, %d silent, %d crashed; promised here %d, detected %d; unsafe %d; leak reports %d\n' \
    "$b" "$ncases" "${n_det[$b]}" "${n_silent[$b]}" "${n_crash[$b]}" "${n_prom[$b]}" "${n_prom_det[$b]}" \
    "${n_unsafe[$b]}" "${n_leak[$b]}"
  echo "| $b | $ncases | ${n_det[$b]} | ${n_silent[$b]} | ${n_crash[$b]} | ${n_prom[$b]} | ${n_prom_det[$b]} | ${n_unsafe[$b]} | ${n_leak[$b]} |" >>"$report"
  [ "${n_leak[$b]}" -eq 0 ] || fail "$b: ${n_leak[$b]} misuse cases leaked (see $out/$b/cases/)"
done
if [ $have_valgrind_option = 0 ]; then
  echo "note: no MEMRES_VALGRIND option in CMakeLists.txt: the valgrind column is a plain Debug build under memcheck, valgrind promises not enforced"
fi
if [ ${#broken[@]} -gt 0 ]; then
  echo
  echo "promises broken:"
  printf '  %s\n' "${broken[@]}"
  { echo; echo "Promises broken:"; printf -- '- %s\n' "${broken[@]}"; } >>"$report"
  fail "${#broken[@]} promises broken"
fi

if [ $full = 0 ]; then
  echo "== done in $(( $(date +%s) - start )) s (misuse columns only); report: $report"
  exit $status
fi

# ---- leaks: the unit tests under LeakSanitizer (the asan build) ----
echo "== leaks: ctest -L fast under ASan+UBSan+LSan (MR_DEBUG 3)"
lsan="?" asan_summary="not run"
if [ ! -d "$out/asan" ] || ! cmake --build "$out/asan" -j"$jobs" >>"$out/asan.build.log" 2>&1; then
  tail -n 20 "$out/asan.build.log"
  fail "asan test build failed: no leak figure"
else
  ctest --test-dir "$out/asan" -L fast -j"$jobs" --output-on-failure >"$out/asan.ctest.log" 2>&1
  asan_ctest=$?
  lsan=$(grep -c 'ERROR: LeakSanitizer' "$out/asan.ctest.log")
  asan_summary=$(grep -E 'tests passed|tests failed' "$out/asan.ctest.log" | tail -n 1)
  echo "   $asan_summary; LeakSanitizer reports: $lsan"
  [ $asan_ctest -eq 0 ] || fail "ctest -L fast failed under ASan (see $out/asan.ctest.log)"
  [ "$lsan" -eq 0 ] || fail "LeakSanitizer reported $lsan leaks in the unit tests"
fi

# ---- coverage, faults, fuzz: the --coverage build ----
echo "== coverage: ctest -L fast and the fuzz run in a --coverage build"
cov=$out/coverage
if ! configure_build coverage -DMEMRES_BUILD_TESTS=ON || ! cmake --build "$cov" -j"$jobs" >>"$out/coverage.build.log" 2>&1; then
  tail -n 30 "$out/coverage.build.log"; echo "coverage build failed"; exit 1
fi
find "$cov" -name '*.gcda' -delete
ctest --test-dir "$cov" -L fast -j"$jobs" -V >"$out/coverage.ctest.log" 2>&1 || fail "ctest -L fast failed (see $out/coverage.ctest.log)"
cov_summary=$(grep -E 'tests passed|tests failed' "$out/coverage.ctest.log" | tail -n 1)
echo "   $cov_summary"

# The fuzz run: CTest's fuzz_ops with its number of inputs.
fuzz_runs=$(grep -oE 'NAME fuzz_ops COMMAND .*MEMRES_FUZZ_RUNS=[0-9]+' tests/CMakeLists.txt | grep -oE '[0-9]+$' || true)
fuzz_runs=${fuzz_runs:-1000}
if [ "$(grep -c 'mr_arena_check(' tests/fuzz/fuzz_ops.c)" != 1 ]; then
  echo "warning: tests/fuzz/fuzz_ops.c calls mr_arena_check other than once a step: the op count is off"
fi
# Alignment padding depends on addresses, so with address-space layout
# randomisation the API calls and injected failures vary a little from run
# to run (the op steps do not): run without it where setarch can.
norand=()
if setarch "$(uname -m)" -R true 2>/dev/null; then norand=(setarch "$(uname -m)" -R); fi
MEMRES_FUZZ_RUNS=$fuzz_runs "${norand[@]}" "$cov/fuzz_count" >"$out/fuzz.log" 2>&1 || fail "the fuzz run failed (see $out/fuzz.log)"
read -r f_ops f_arena f_objpool f_pools f_injected < <(
  sed -n 's/^fuzz_count: ops \([0-9]*\) arena \([0-9]*\) objpool \([0-9]*\) pools \([0-9]*\) injected \([0-9]*\)$/\1 \2 \3 \4 \5/p' "$out/fuzz.log")
f_inputs=$(sed -n 's/^[A-Za-z0-9_]*: \([0-9]*\) passed.*/\1/p' "$out/fuzz.log")  # the driver prints its own name
f_seed=$(sed -n 's/^# seed \([0-9]*\).*/\1/p' "$out/fuzz.log")

# (threaded tests race on the counters; gcov can then print a negative
# branch count, which gcovr 5.2 refuses to parse unless told to skip it)
gcovr_args=(-r "$root" --object-directory "$cov" -f "$root/src/" --gcov-ignore-parse-errors)
# cov_percent FILE: the "lines: 95.1% (1707 out of 1795)" of gcovr --print-summary
cov_percent() { sed -n 's/^lines: \([0-9.]*%\) (\([0-9]*\) out of \([0-9]*\)).*/\1 (\2 of \3 lines)/p' "$1"; }
gcovr "${gcovr_args[@]}" --print-summary >"$out/coverage.txt" 2>"$out/coverage.err" || fail "gcovr failed (see $out/coverage.err)"
cov_line=$(cov_percent "$out/coverage.txt")
# The functions with the most lines not run (each line counted in the
# function that starts last before it).
gcovr "${gcovr_args[@]}" --json "$out/coverage.json" 2>>"$out/coverage.err"
python3 - "$out/coverage.json" >"$out/coverage-functions.txt" <<'PY'
import json, sys
rows = []
for f in json.load(open(sys.argv[1]))["files"]:
    funcs = sorted((fn["lineno"], fn["name"]) for fn in f["functions"])
    missed = {}
    for ln in f["lines"]:
        if ln.get("gcovr/noncode") or ln.get("gcovr/excluded") or ln["count"] != 0:
            continue
        owner = "(file scope)"
        for start, name in funcs:
            if start <= ln["line_number"]:
                owner = name
        missed.setdefault(owner, []).append(ln["line_number"])
    rows += [(len(v), f["file"], k, v) for k, v in missed.items()]
for n, file, name, lines in sorted(rows, key=lambda r: (-r[0], r[1], r[2]))[:12]:
    print(f"{n:3d}  {file}: {name}  (lines {','.join(map(str, lines))})")
PY
# ... and with the misuse cases run in the same build
cmake --build "$cov" -j"$jobs" --target misuse >>"$out/coverage.build.log" 2>&1
while IFS=$'\t' read -r name _; do
  { timeout 60 "$cov/misuse" "$name" </dev/null >/dev/null 2>&1; } 2>/dev/null
done <"$catalogue"
gcovr "${gcovr_args[@]}" --print-summary >"$out/coverage-misuse.txt" 2>>"$out/coverage.err" || fail "gcovr failed"
cov_line_misuse=$(cov_percent "$out/coverage-misuse.txt")

# ---- faults: the fault sweeps' own count ----
sweeps=$(grep -cE '# fault sweep .*: [0-9]+ failure points' "$out/coverage.ctest.log")
points=$(grep -oE '# fault sweep .*: [0-9]+ failure points' "$out/coverage.ctest.log" | grep -oE '[0-9]+ failure points' | awk '{s += $1} END {print s + 0}')

elapsed=$(( $(date +%s) - start ))
echo
echo "fuzz:      fuzz_ops, seed ${f_seed:-?}: ${f_inputs:-?} inputs, ${f_ops:-?} op steps (API calls: arena ${f_arena:-?}, objpool ${f_objpool:-?}, pools ${f_pools:-?})"
echo "faults:    $points failure points in $sweeps fault sweeps + ${f_injected:-?} upstream failures injected by the fuzz inputs"
echo "leaks:     $lsan (LeakSanitizer over ctest -L fast: $asan_summary; misuse cases: LSan and memcheck, see the table)"
echo "coverage:  src/ lines $cov_line (ctest -L fast + fuzz run); $cov_line_misuse with the misuse cases"
sed -n '/^File/,/^TOTAL/p' "$out/coverage.txt"
echo "functions with the most lines not run (ctest -L fast + fuzz run):"
cat "$out/coverage-functions.txt"
if awk -v p="${cov_line%%%*}" 'BEGIN { exit !(p + 0 < 95) }'; then
  echo "warning: src/ line coverage $cov_line is below the 95% target"
fi
echo "== done in $elapsed s on $jobs jobs; report: $report"

{
  echo
  echo "| figure | value |"
  echo "|---|---|"
  echo "| fuzz target fuzz_ops (seed ${f_seed:-?}) | ${f_inputs:-?} inputs, ${f_ops:-?} op steps; API calls: arena ${f_arena:-?}, objpool ${f_objpool:-?}, pools ${f_pools:-?} |"
  echo "| faults injected | $points failure points in $sweeps fault sweeps; ${f_injected:-?} upstream failures in the fuzz run |"
  echo "| leaks | $lsan LeakSanitizer reports over ctest -L fast ($asan_summary) |"
  echo "| line coverage of src/ | $cov_line (ctest -L fast + fuzz run); $cov_line_misuse with the misuse cases |"
  echo "| run time | $elapsed s, $jobs jobs |"
  echo
  echo '```'
  sed -n '/^File/,/^TOTAL/p' "$out/coverage.txt"
  echo
  echo "functions with the most lines not run:"
  cat "$out/coverage-functions.txt"
  echo '```'
} >>"$report"
[ -n "$cov_line" ] || fail "no coverage figure"
exit $status
