#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/package.sh -- the Debian packages and the ways a project consumes
# memres, checked end to end (scripts/test.sh runs it as its "package" step):
#   1. a Release build in build-package/ and `cpack`: libmemres-dev,
#      libmemres-lua-dev, libmemres-sqlite-dev, memres-advise (.deb) and a
#      .tar.gz;
#   2. apt-get install ./*.deb; the install consumer (tests/install/) built
#      against the installed files with find_package(memres) and with
#      pkg-config, and the integrations' consumer (integrations/consumer/)
#      with find_package(memres COMPONENTS lua sqlite) and pkg-config
#      memres-lua / memres-sqlite; all run; the installed memres-advise
#      runs sort(1) and reports, its output unchanged, and applies its plan
#      to sort(1), the output again unchanged;
#   3. apt-get remove of the packages (also when a step failed);
#   4. memres consumed from source by add_subdirectory and by FetchContent
#      (tests/subproject/), built and run.
# Needs root or sudo for apt-get (step 2-3); MEMRES_PACKAGE_NO_INSTALL=1
# skips them (build, cpack and step 4 only).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${MEMRES_PACKAGE_BUILD_DIR:-$root/build-package}
jobs=$(nproc 2>/dev/null || echo 2)
[ "$jobs" -gt 2 ] && jobs=2
SUDO=()
if [ "$(id -u)" -ne 0 ]; then SUDO=(sudo); fi
log=$build.log

quiet() { "$@" >>"$log" 2>&1 || { tail -n 40 "$log"; echo "package: failed: $*" >&2; exit 1; }; }

: >"$log"
echo "== package: build and cpack in $build"
rm -rf "$build"
quiet cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DMEMRES_BUILD_TESTS=OFF \
  -DMEMRES_BUILD_EXAMPLES=OFF -DMEMRES_BUILD_BENCH=OFF -DMEMRES_WERROR=ON
quiet cmake --build "$build" -j "$jobs"
(cd "$build" && quiet cpack)
mapfile -t debs < <(find "$build" -maxdepth 1 -name '*.deb' | sort)
ls -l "$build"/*.deb "$build"/*.tar.gz | awk '{print "  " $5 "  " $9}'
[ ${#debs[@]} -ge 1 ] || { echo "package: no .deb produced" >&2; exit 1; }
for d in "${debs[@]}"; do dpkg-deb --info "$d" | grep -E "Package:|Depends:" | sed 's/^ */  /'; done

scratch=$build/consumers
mkdir -p "$scratch"
if [ "${MEMRES_PACKAGE_NO_INSTALL:-0}" != 1 ]; then
  names=()
  for d in "${debs[@]}"; do names+=("$(dpkg-deb --field "$d" Package)"); done
  remove() { "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq "${names[@]}" >/dev/null 2>&1 || true; }
  trap remove EXIT
  echo "== package: apt-get install ${names[*]}"
  quiet "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${debs[@]}"
  echo "== package: the install consumer against /usr (CMake and pkg-config)"
  quiet cmake -S "$root/tests/install" -B "$scratch/core" -DCMAKE_BUILD_TYPE=Release
  quiet cmake --build "$scratch/core"
  "$scratch/core/consumer"
  # shellcheck disable=SC2046
  cc -std=c11 -Wall -Wextra -Werror -o "$scratch/core-pc" "$root/tests/install/consumer.c" $(pkg-config --cflags --libs memres)
  "$scratch/core-pc"
  if printf '%s\n' "${names[@]}" | grep -qx libmemres-lua-dev && printf '%s\n' "${names[@]}" | grep -qx libmemres-sqlite-dev; then
    echo "== package: the integrations' consumer (find_package COMPONENTS lua sqlite, pkg-config)"
    quiet cmake -S "$root/integrations/consumer" -B "$scratch/integrations" -DCMAKE_BUILD_TYPE=Release
    quiet cmake --build "$scratch/integrations"
    "$scratch/integrations/consumer_lua"
    "$scratch/integrations/consumer_sqlite"
    for c in lua sqlite; do
      # shellcheck disable=SC2046
      cc -std=c11 -Wall -Wextra -Werror -o "$scratch/$c-pc" "$root/integrations/consumer/consumer_$c.c" \
        $(pkg-config --cflags --libs "memres-$c")
      "$scratch/$c-pc"
    done
  fi
  if printf '%s\n' "${names[@]}" | grep -qx memres-advise; then
    echo "== package: the installed memres-advise runs a program (sort) and reports"
    seq 200000 | shuf --random-source=<(yes) >"$scratch/numbers"
    env -u MEMRES_ADVISE_RECORDER XDG_CACHE_HOME="$scratch/cache" /usr/bin/memres-advise \
      -o "$scratch/advise.txt" --json "$scratch/advise.json" --plan-candidates --plan "$scratch/plan" \
      -- sort -n "$scratch/numbers" >"$scratch/sorted"
    sort -n "$scratch/numbers" | cmp - "$scratch/sorted"
    grep -q '^== memres-advise: ' "$scratch/advise.txt"
    grep -q '"version": 1' "$scratch/advise.json"
    sed -n '2p' "$scratch/advise.txt" | sed 's/^/  /'
    echo "== package: the installed memres-advise applies its plan to the same program"
    env -u MEMRES_ADVISE_APPLY_LIB /usr/bin/memres-advise apply "$scratch/plan" --stats "$scratch/stats" \
      -- sort -n "$scratch/numbers" | cmp - "$scratch/sorted"
    grep -q '^apply-stats 1' "$scratch/stats"
  fi
  remove
  trap - EXIT
  echo "== package: removed ${names[*]}"
fi

for how in subdirectory fetchcontent; do
  echo "== package: memres from source by $how (tests/subproject)"
  quiet cmake -S "$root/tests/subproject" -B "$scratch/$how" -DMEMRES_SOURCE_DIR="$root" -DMEMRES_CONSUME=$how \
    -DCMAKE_BUILD_TYPE=Release
  quiet cmake --build "$scratch/$how" -j "$jobs"
  "$scratch/$how/consumer"
  if [ -x "$scratch/$how/consumer_lua" ]; then "$scratch/$how/consumer_lua"; fi
done
echo "package: ok"
