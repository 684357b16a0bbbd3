#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/install/run.sh SOURCE_DIR SCRATCH_DIR
#
# Installs memres from SOURCE_DIR into a scratch prefix and builds a small
# consumer against the installed package both ways a user would: CMake
# (find_package(memres CONFIG) + memres::memres) and pkg-config
# (`pkg-config --cflags --libs memres`).  Runs both.  Exits nonzero on any
# failure.  Run by CTest as install_consumer.
set -euo pipefail

if [ $# -ne 2 ]; then
  echo "usage: $0 SOURCE_DIR SCRATCH_DIR" >&2
  exit 2
fi
src=$(cd "$1" && pwd)
scratch=$2
here=$(cd "$(dirname "$0")" && pwd)
jobs=${MEMRES_INSTALL_JOBS:-2}

case "$scratch" in
  ""|/|"$HOME"|"$src") echo "refusing to use $scratch as the scratch directory" >&2; exit 2 ;;
esac
rm -rf "$scratch"
mkdir -p "$scratch"
scratch=$(cd "$scratch" && pwd)
prefix=$scratch/prefix

echo "== the README's install line, on a machine with no cmocka, into $prefix"
# `cmake -S . -B build && cmake --build build && cmake --install build`, as a
# user who installs only the library runs it: pkg-config sees no package at
# all (no cmocka, no Lua, no SQLite), so the configure must turn the tests
# off by itself and say so.
empty=$scratch/no-pkg-config
mkdir -p "$empty"
PKG_CONFIG_LIBDIR=$empty PKG_CONFIG_PATH= cmake -S "$src" -B "$scratch/build" >"$scratch/configure.log" 2>&1 \
  || { cat "$scratch/configure.log"; echo "the README's configure failed without cmocka" >&2; exit 1; }
grep -q "cmocka not found.*the tests are off" "$scratch/configure.log" \
  || { cat "$scratch/configure.log"; echo "no message saying the tests are off" >&2; exit 1; }
cmake --build "$scratch/build" -j "$jobs" >"$scratch/build.log" 2>&1 \
  || { cat "$scratch/build.log"; exit 1; }
cmake --install "$scratch/build" --prefix "$prefix" >"$scratch/install.log" 2>&1 \
  || { cat "$scratch/install.log"; exit 1; }

for f in include/memres/memres.h include/memres/resource.h include/memres/arena.h; do
  [ -f "$prefix/$f" ] || { echo "missing after install: $f" >&2; exit 1; }
done
config=$(find "$prefix" -name memresConfig.cmake | head -n 1)
pcfile=$(find "$prefix" -name memres.pc | head -n 1)
[ -n "$config" ] || { echo "no memresConfig.cmake installed" >&2; exit 1; }
[ -n "$pcfile" ] || { echo "no memres.pc installed" >&2; exit 1; }
libdir=$(dirname "$(find "$prefix" -name 'libmemres.so*' | head -n 1)")

echo "== CMake consumer: find_package(memres CONFIG REQUIRED), memres::memres"
cmake -S "$here" -B "$scratch/consumer-cmake" -DCMAKE_PREFIX_PATH="$prefix" \
      -DCMAKE_BUILD_TYPE=Release >"$scratch/consumer-cmake.log" 2>&1 \
  || { cat "$scratch/consumer-cmake.log"; exit 1; }
cmake --build "$scratch/consumer-cmake" >>"$scratch/consumer-cmake.log" 2>&1 \
  || { cat "$scratch/consumer-cmake.log"; exit 1; }
"$scratch/consumer-cmake/consumer"

echo "== pkg-config consumer: pkg-config --cflags --libs memres"
export PKG_CONFIG_PATH="$(dirname "$pcfile")${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
flags=$(pkg-config --cflags --libs memres)
echo "pkg-config: $flags"
# shellcheck disable=SC2086  # the flags are words
${CC:-cc} -std=c11 -Wall -Wextra -Werror -o "$scratch/consumer-pc" "$here/consumer.c" $flags
LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$scratch/consumer-pc"
echo "== static library: libmemres.a with pkg-config --static"
# shellcheck disable=SC2046
${CC:-cc} -std=c11 -Wall -Wextra -Werror -o "$scratch/consumer-static" "$here/consumer.c" \
  $(pkg-config --cflags memres) -L"$libdir" -Wl,-Bstatic -lmemres -Wl,-Bdynamic \
  $(pkg-config --static --libs-only-other memres)
"$scratch/consumer-static"
echo "install consumer: ok"
