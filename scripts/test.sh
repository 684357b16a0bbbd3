#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine:
#   installs the build and test dependencies (apt-get; sudo when not root),
#   then builds and runs every CTest test in three configurations:
#     release  -O2, warnings as errors
#     asan     AddressSanitizer + UndefinedBehaviorSanitizer, MR_DEBUG=3 (every internal check)
#     tsan     ThreadSanitizer (the threaded tests are what it is for; all tests run)
# Usage: scripts/test.sh [release|asan|tsan ...]   (default: all three)
# MEMRES_SKIP_APT=1 skips the package step.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; fi
if [ "${MEMRES_SKIP_APT:-0}" != 1 ] && command -v apt-get >/dev/null; then
  echo "== installing build and test dependencies (apt-get)"
  $SUDO apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    cmake make gcc g++ clang pkg-config libcmocka-dev >/dev/null
fi

jobs=$(nproc 2>/dev/null || echo 2)
configs=("$@")
if [ ${#configs[@]} -eq 0 ]; then configs=(release asan tsan); fi

for cfg in "${configs[@]}"; do
  case $cfg in
    release) flags=(-DCMAKE_BUILD_TYPE=Release) ;;
    asan)    flags=(-DCMAKE_BUILD_TYPE=Debug -DMEMRES_SANITIZE=address -DMEMRES_DEBUG=3) ;;
    tsan)    flags=(-DCMAKE_BUILD_TYPE=Debug -DMEMRES_SANITIZE=thread) ;;
    *) echo "unknown configuration '$cfg' (release, asan, tsan)" >&2; exit 2 ;;
  esac
  dir=build-test-$cfg
  echo "== $cfg: configure, build, test in $dir"
  cmake -S . -B "$dir" -DMEMRES_WERROR=ON "${flags[@]}" >/dev/null
  cmake --build "$dir" -j"$jobs" >/dev/null
  ctest --test-dir "$dir" --output-on-failure -j"$jobs"
done
echo "== all test configurations passed: ${configs[*]}"
