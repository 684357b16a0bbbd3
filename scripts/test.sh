#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The whole test suite, from a fresh Debian 12 machine:
#   installs the build and test dependencies (apt-get; sudo when not root),
#   then builds and runs every CTest test in three build configurations
#   (each printing its ten slowest tests; the release build runs the
#   everyday loop, ctest -L fast, first and fails when it takes more than
#   MEMRES_FAST_LIMIT seconds, default 60),
#   the tests again under Valgrind in a fourth, and the fuzzer in a fifth:
#     release  -O2, warnings as errors
#     asan     AddressSanitizer + UndefinedBehaviorSanitizer, MR_DEBUG=3 (every internal check),
#              hardened free lists (MEMRES_HARDEN=ON)
#     tsan     ThreadSanitizer, hardened free lists (inline paths included): every test but the single-threaded fuzz drivers
#              (fuzz_ops, fuzz_sqlite and their quick runs: TSan makes them far slower and they have no threads to check); the lock-step threaded
#              fuzz driver (fuzz_threads, fuzz_threads_quick) does run
#     valgrind -O2 with MEMRES_VALGRIND=ON: every C test under memcheck (zero
#              errors, no definite leak; stress scaled to 5%), and negative
#              tests that pass only when memcheck reports a use after
#              rewind/reset/free/put
#     fuzz     clang + libFuzzer + ASan: the op-sequence target, coverage-guided,
#              for MEMRES_FUZZ_SECONDS (default 60) from an empty corpus, then the
#              lock-step threaded target for MEMRES_FUZZ_THREADS_SECONDS (default 30), then
#              SQLite's allocator on memres (when built) for MEMRES_FUZZ_SQLITE_SECONDS (default 30)
#     package  scripts/package.sh: the .deb packages built with CPack, installed
#              with apt-get, consumed (CMake and pkg-config), removed; and
#              memres consumed from source (add_subdirectory, FetchContent)
# The Lua and SQLite integrations (integrations/) and memres-advise (advise/,
# which needs libdw) are built and tested in every configuration: their
# packages are in the list below (chromium: memres-advise's HTML page is
# loaded in headless Chromium by advise/tests/html.sh).
# Usage: scripts/test.sh [release|asan|tsan|valgrind|fuzz|package ...]   (default: all six)
# MEMRES_SKIP_APT=1 skips the package step.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; fi
if [ "${MEMRES_SKIP_APT:-0}" != 1 ] && command -v apt-get >/dev/null; then
  echo "== installing build and test dependencies (apt-get)"
  $SUDO apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    cmake make gcc g++ clang libclang-rt-14-dev pkg-config libcmocka-dev valgrind \
    liblua5.4-dev lua5.4 libsqlite3-dev sqlite3 libdw-dev chromium libjemalloc2 libmimalloc2.0 >/dev/null
fi

jobs=$(nproc 2>/dev/null || echo 2)
fast_limit=${MEMRES_FAST_LIMIT:-60}

# run_ctest DIR LOG [ctest args]: the tests, then the ten slowest of them.
run_ctest() {
  local dir=$1 log=$2 status=0
  shift 2
  ctest --test-dir "$dir" --output-on-failure -j"$jobs" "$@" 2>&1 | tee "$log" || status=$?
  echo "== the ten slowest tests of this run ($dir):"
  grep -E '^ *[0-9]+/[0-9]+ Test +#' "$log" | sed -E 's/^.*Test +#[0-9]+: ([^ ]+) .* ([0-9.]+) sec$/\2 \1/' |
    sort -rn | head -n 10 | awk '{printf "   %8.2f s  %s\n", $1, $2}'
  return $status
}
configs=("$@")
if [ ${#configs[@]} -eq 0 ]; then configs=(release asan tsan valgrind fuzz package); fi

for cfg in "${configs[@]}"; do
  case $cfg in
    release) flags=(-DCMAKE_BUILD_TYPE=Release); select=() ;;
    asan)    flags=(-DCMAKE_BUILD_TYPE=Debug -DMEMRES_SANITIZE=address -DMEMRES_DEBUG=3 -DMEMRES_HARDEN=ON); select=() ;;
    tsan)    flags=(-DCMAKE_BUILD_TYPE=Debug -DMEMRES_SANITIZE=thread -DMEMRES_HARDEN=ON); select=(-E '^(fuzz_ops|fuzz_ops_quick|fuzz_sqlite_quick|fuzz_sqlite)$') ;;
    valgrind) flags=(-DCMAKE_BUILD_TYPE=Release -DMEMRES_VALGRIND=ON -DMEMRES_BUILD_EXAMPLES=OFF); select=(-L valgrind) ;;
    fuzz)
      dir=build-test-fuzz
      echo "== fuzz: libFuzzer + ASan (clang) in $dir, ${MEMRES_FUZZ_SECONDS:-60} s + threads ${MEMRES_FUZZ_THREADS_SECONDS:-30} s + SQLite ${MEMRES_FUZZ_SQLITE_SECONDS:-30} s"
      CC=clang CXX=clang++ cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DMEMRES_FUZZ=ON \
        -DMEMRES_SANITIZE=address -DMEMRES_WERROR=ON -DMEMRES_BUILD_EXAMPLES=OFF >/dev/null
      # target, its directory in the build, seconds, corpus, log, libFuzzer's
      # -len_control (its default, 100, grows inputs slowly from a few
      # bytes: in 60 s the SQLite target's inputs reached 14, a few ops)
      runs=("fuzz_ops tests ${MEMRES_FUZZ_SECONDS:-60} corpus fuzz.log 100"
            "fuzz_threads tests ${MEMRES_FUZZ_THREADS_SECONDS:-30} corpus-threads fuzz-threads.log 100")
      # SQLite's allocator on memres: built when libsqlite3-dev was found
      if cmake --build "$dir" --target help | grep fuzz_sqlite_libfuzzer >/dev/null; then
        runs+=("fuzz_sqlite integrations/sqlite/tests ${MEMRES_FUZZ_SQLITE_SECONDS:-30} corpus-sqlite fuzz-sqlite.log 0")
      fi
      targets=()
      for run in "${runs[@]}"; do targets+=("${run%% *}_libfuzzer"); done
      cmake --build "$dir" -j"$jobs" --target "${targets[@]}" >/dev/null
      for run in "${runs[@]}"; do
        read -r target where secs corpus log len_control <<<"$run"
        mkdir -p "$dir/$corpus"
        status=0
        ASAN_OPTIONS=allocator_may_return_null=1 "$dir/$where/${target}_libfuzzer" \
          -max_total_time="$secs" -max_len=2048 -len_control="$len_control" -print_final_stats=1 -artifact_prefix="$dir/" \
          "$dir/$corpus" >"$dir/$log" 2>&1 || status=$?
        if [ $status -ne 0 ]; then
          tail -n 60 "$dir/$log"
          echo "fuzz ($target): 0 passed, 1 failed (the input is saved in $dir/)"
          exit 1
        fi
        grep -E "^Done|^stat::number_of_executed_units" "$dir/$log" || true
      done
      echo "fuzz: ${#runs[@]} passed, 0 failed"
      continue ;;
    package)
      bash scripts/package.sh
      continue ;;
    *) echo "unknown configuration '$cfg' (release, asan, tsan, valgrind, fuzz, package)" >&2; exit 2 ;;
  esac
  dir=build-test-$cfg
  echo "== $cfg: configure, build, test in $dir"
  cmake -S . -B "$dir" -DMEMRES_WERROR=ON "${flags[@]}" >/dev/null
  cmake --build "$dir" -j"$jobs" >/dev/null
  log=$dir/ctest.log
  if [ "$cfg" = release ]; then
    # the everyday loop first, timed: it must stay under a minute
    start=$(date +%s.%N)
    run_ctest "$dir" "$log.fast" -L fast
    wall=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
    echo "== release: the fast loop (ctest -L fast) took $wall s of wall time (limit $fast_limit s)"
    if awk -v w="$wall" -v l="$fast_limit" 'BEGIN {exit !(w > l)}'; then
      echo "the fast loop took longer than $fast_limit s: split or scale the slowest tests above" >&2
      exit 1
    fi
    select=(-LE fast)
  fi
  run_ctest "$dir" "$log" "${select[@]}"
done
echo "== all test configurations passed: ${configs[*]}"
