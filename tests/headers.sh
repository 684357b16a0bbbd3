#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/headers.sh ROOT [CC...] -- every public header compiles alone: a
# one-line translation unit that includes nothing but it, built as C11 by
# each C compiler given (default: gcc and clang, those found) with -Wall
# -Wextra -Wpedantic -Werror, and as C++17 by g++ (or $CXX).  The C++
# bridge (memres.hpp) is compiled as C++ only.  Fails, naming the header,
# when one needs something it does not include, or when a contract header
# casts to a private struct.
set -uo pipefail
root=${1:?usage: headers.sh ROOT [CC...]}
shift
ccs=("$@")
[ ${#ccs[@]} -eq 0 ] && ccs=(gcc clang)
cxx=${CXX:-g++}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0 built=0
flags=(-Wall -Wextra -Wpedantic -Wundef -Wshadow -Wconversion -Wsign-conversion -Wcast-align -Werror -fsyntax-only -I"$root/include")
try() { # what, compiler and flags..., (the TU on stdin)
  local what=$1; shift
  if ! "$@" >"$tmp/log" 2>&1; then
    echo "FAIL: $what"; sed 's/^/    /' "$tmp/log" | head -20; fail=1
  fi
  built=$((built + 1))
}
for h in "$root"/include/memres/*.h "$root"/include/memres/*.hpp "$root"/include/memres/bits/*.h; do
  rel=${h#"$root/include/"}
  # (a declaration after it: a header of macros only would leave the unit
  # empty, which -Wpedantic rejects)
  printf '#include "%s"\ntypedef int memres_header_alone;\n' "$rel" >"$tmp/tu.c"
  cp "$tmp/tu.c" "$tmp/tu.cpp"
  if [ "${h%.hpp}" = "$h" ]; then
    for cc in "${ccs[@]}"; do
      command -v "$cc" >/dev/null || { echo "skip: $cc not found"; continue; }
      try "$rel as C11 ($cc)" "$cc" -std=c11 "${flags[@]}" "$tmp/tu.c"
    done
  fi
  if command -v "$cxx" >/dev/null; then
    try "$rel as C++17 ($cxx)" "$cxx" -std=c++17 "${flags[@]}" "$tmp/tu.cpp"
  else
    echo "skip: $cxx not found"
  fi
done
# The contract headers (memres/*.h, not bits/) call into bits/ and cast to
# no private struct: the layouts live in bits/ alone.
if casts=$(grep -nE '\( *(const +)?struct +mri_[a-z_]+ *\*+ *\)' "$root"/include/memres/*.h "$root"/include/memres/*.hpp); then
  echo "FAIL: a contract header casts to a private struct:"; sed 's/^/    /' <<<"$casts"; fail=1
fi
echo "headers: $built compiles, $([ $fail = 0 ] && echo all self-contained || echo FAILED)"
exit $fail
