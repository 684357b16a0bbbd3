#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/bench.sh -- the benchmark suite in one command, on a fresh Debian 12
# machine (as root, or a user with sudo):
#
#   scripts/bench.sh                 # install the peers, build, run the full suite
#   scripts/bench.sh --quick         # what CI runs: small sizes, outputs cross-checked
#   scripts/bench.sh --scenario binary-trees --threads 2 --json out.json --plot out.svg
#
# 1. Installs the build tools and every peer from Debian's packages, when any
#    is missing (apt-get update + install, quiet; a second run installs
#    nothing).  MEMRES_BENCH_NO_APT=1 skips this step.
# 2. Configures a Release build in build-bench/ (MEMRES_BENCH_BUILD_DIR to
#    change it) and builds memres-bench.
# 3. Builds the Rust peer (bench/rust/build.sh) when it is there; a failure
#    only skips that peer, with a notice.
# 4. Runs build-bench/bench/memres-bench with this script's arguments; its
#    exit status is this script's (1 when a run failed or outputs differ).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${MEMRES_BENCH_BUILD_DIR:-$root/build-bench}

note() { echo "bench.sh: $*" >&2; }

# ---- 1. packages (names checked against Debian 12 "bookworm") ----
packages=(
  cmake make gcc g++ pkg-config                        # build
  libjemalloc2 libmimalloc2.0 libtcmalloc-minimal4     # malloc peers (LD_PRELOAD)
  libapr1-dev libtalloc-dev                            # pool peers
  liblua5.4-dev libsqlite3-dev                         # real clients: scenarios lua, sqlite
  cargo librust-bumpalo-dev librust-rayon-dev          # the Rust bumpalo + rayon peer
)
if [ "${MEMRES_BENCH_NO_APT:-0}" != 1 ] && command -v dpkg-query >/dev/null 2>&1; then
  missing=()
  for p in "${packages[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    [ "$status" = "install ok installed" ] || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" -eq 0 ]; then
      sudo=()
    elif command -v sudo >/dev/null 2>&1; then
      sudo=(sudo)
    else
      note "need root or sudo to install: ${missing[*]}"
      exit 1
    fi
    note "installing: ${missing[*]}"
    log=$(mktemp)
    if ! { "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
           "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
             --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
      cat "$log" >&2
      rm -f "$log"
      note "apt-get failed"
      exit 1
    fi
    rm -f "$log"
  fi
elif [ "${MEMRES_BENCH_NO_APT:-0}" != 1 ]; then
  note "not a Debian system (no dpkg-query): install the peers yourself; missing ones are skipped"
fi

# ---- 2. build ----
jobs=$(nproc 2>/dev/null || echo 2)
log=$(mktemp)
if ! { cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DMEMRES_BUILD_BENCH=ON \
         -DMEMRES_BUILD_TESTS=OFF -DMEMRES_BUILD_EXAMPLES=OFF &&
       cmake --build "$build" --target memres-bench -j "$jobs"; } >"$log" 2>&1; then
  cat "$log" >&2
  rm -f "$log"
  note "the build failed"
  exit 1
fi
rm -f "$log"

# ---- 3. the Rust peer ----
if [ -f "$root/bench/rust/build.sh" ]; then
  if ! sh "$root/bench/rust/build.sh" >/dev/null; then
    note "the Rust peer did not build (bench/rust/build.sh); its rows are skipped"
  fi
fi

# ---- 4. run ----
exec "$build/bench/memres-bench" "$@"
