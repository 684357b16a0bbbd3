#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/fastpaths.sh [--asm] [CC flags...] -- the instructions of every
# inline fast path of the public headers (scripts/fastpaths.c), compiled
# with gcc -O2 (or $CC) against include/: one line per wrapper, "name count".
# --asm prints each wrapper's instructions instead, without addresses, so
# that two trees can be compared with diff.  Padding (nop) is not counted.  Extra arguments go to the
# compiler (e.g. -DMR_HARDENED=1 for the hardened links).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
asm=0
if [ "${1:-}" = --asm ]; then asm=1; shift; fi
obj=$(mktemp --suffix=.o)
trap 'rm -f "$obj"' EXIT
"${CC:-gcc}" -std=c11 -O2 -DNDEBUG -c -I"$root/include" "$@" "$root/scripts/fastpaths.c" -o "$obj"
objdump -d --no-show-raw-insn "$obj" | awk -v asm=$asm '
  /^[0-9a-f]+ <fp_.*>:$/ { if (name != "" && asm == 0) print name, n; name = $2; gsub(/[<>:]/, "", name); n = 0;
                           if (asm) print name ":"; next }
  /^[0-9a-f]+ </ { if (name != "" && asm == 0) print name, n; name = ""; next }
  name != "" && /^ *[0-9a-f]+:/ && !/\tn?op[wl]? |\tnop$|cs nopw|xchg   %ax,%ax/ { n++; if (asm) { sub(/^ *[0-9a-f]+:\t*/, "  "); gsub(/[0-9a-f]+ <[^>]*>/, "<target>"); print } }
  END { if (name != "" && asm == 0) print name, n }'
