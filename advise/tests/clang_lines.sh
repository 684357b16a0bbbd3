#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# advise/tests/clang_lines.sh -- file:line from a program clang built:
#
#   bash clang_lines.sh ADVISOR SOURCE INCLUDE_DIR LIBMEMRES_A WORKDIR
#
# clang writes no .debug_aranges; libdw then finds no compilation unit for
# an address, and the report had function+offset where it should name the
# source line.  SOURCE (kat_trees.c) is built with clang at DWARF 4 and 5,
# recorded, and the report must name the line its KAT-SITE comment marks.
# Exit 77 (skipped) where clang is not installed.
set -eu
adv=$1 src=$2 inc=$3 lib=$4 work=$5
command -v clang >/dev/null 2>&1 || { echo "clang not installed: skipped"; exit 77; }
mkdir -p "$work"
line=$(grep -n 'KAT-SITE:' "$src" | head -1 | cut -d: -f1)
base=$(basename "$src")
for v in 4 5; do
  prog=$work/prog-dwarf$v
  clang -std=c11 -O2 -g -gdwarf-$v -fomit-frame-pointer -I"$inc" -o "$prog" "$src" "$lib" -lpthread
  if readelf -S "$prog" | grep -q debug_aranges; then
    echo "note: this clang wrote .debug_aranges (DWARF $v)"
  fi
  "$adv" -o "$work/report-$v.txt" -- "$prog" malloc 12 >/dev/null
  if ! grep -Eq "^    at   [a-z_]+ .*$base:$line\$" "$work/report-$v.txt"; then
    echo "FAIL: DWARF $v: the report does not name $base:$line"
    grep -E '^#|^    (at|from)' "$work/report-$v.txt" | head -12
    exit 1
  fi
  echo "DWARF $v: $(grep -E -m1 "^    at   .*$base:$line\$" "$work/report-$v.txt")"
done
