#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# advise/tests/measure-table.sh -- `memres-advise measure` on the known-answer
# programs and on real programs from Debian's archive, one table:
#
#   bash advise/tests/measure-table.sh BUILD [ROUNDS] > table.md
#
# BUILD is a build directory of the project (memres-advise, the apply
# runtime, the known-answer programs and the zero-cost yardstick built in
# it).  For each program: the plan of the recommended sites, or, where
# nothing is recommended, of the sites the rules name that would save most (measure plans them
# then; marked *); what the report predicted for it, what measure measured (CPU
# time saved against glibc, median of ROUNDS paired rounds, default 5, with
# the lowest and highest round's ratio), the allocators' saving (the run of
# the runtime alone, every call identified and served by glibc, less the
# plan's run, per round: about what a change in the source would save, the
# prediction's counterpart), what the zero-cost limit saves in
# the same rounds, the plan's peak RSS over glibc's, the memory glibc gave
# back and took again (its predicted cost against what glibc with its memory
# kept saved, same rounds), and for a known-answer
# program what the change in its source saves (its memres mode, which makes
# the advised allocator's calls itself, against its malloc mode: CPU time,
# median of ROUNDS paired rounds, lowest-highest), and measure's verdict
# (apply: the plan saved 2% of glibc's run or more in every round, from 9
# rounds in the rounds' range -- measure runs up to 3x ROUNDS where the
# verdict is open; source: only the allocators' saving did, in the rounds'
# range; rounds: in the
# median, not in the range; none).  Real programs that are not installed are skipped: lua5.4,
# sqlite3, xmllint (libxml2-utils), jq, git, perl, python3.11 and cppcheck,
# on inputs the script makes in a private folder (git: this project's own
# history; perl and python: the word indexes wordindex.pl and wordindex.py,
# and python's decimals.py (its sites in the modules it dlopens), python's
# with PYTHONMALLOC=malloc; cppcheck: a copy of this project's
# src/pools.c and headers).
# MEASURE_TABLE_KEEP=DIR keeps each program's whole report in DIR.
set -u
build=$(cd "$1" && pwd)
rounds=${2:-5}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
adv=$build/advise/memres-advise
kat=$build/advise/tests
export MEMRES_ADVISE_ZEROCOST=$kat/libmemres-zerocost.so
export MEMRES_ADVISE_APPLY_LIB=$build/advise/libmemres-advise-apply.so
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# inputs for the real programs
python3 "$here/real_inputs.py" "$work"
mkdir -p "$work/cpc" && cp -r "$root/src" "$root/include" "$work/cpc/"
printf 'CREATE TABLE params(n INTEGER);\nINSERT INTO params VALUES(1000);\n.read %s\n' \
  "$root/integrations/sqlite/tests/workload.sql" >"$work/sqlite.sql"

# What a known-answer program's memres mode saves against its malloc mode:
# "S ms (LO-HI)" in CPU time (user + system), or "-" for another program.
source_change() {
  [ "$2" = malloc ] && [ "${1#"$kat"/}" != "$1" ] || { echo "-"; return; }
  python3 - "$rounds" "$@" <<'PY'
import os, subprocess, sys
rounds, prog, args = int(sys.argv[1]), sys.argv[2], sys.argv[4:]
def cpu(mode):
    p = subprocess.Popen([prog, mode] + args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, ru = os.wait4(p.pid, 0)
    return ru.ru_utime + ru.ru_stime
saved = []
for r in range(rounds):
    if r % 2:  # the order alternates
        b = cpu("memres")
        a = cpu("malloc")
    else:
        a = cpu("malloc")
        b = cpu("memres")
    saved.append((a - b) * 1000)
saved.sort()
print("%.1f ms (%.1f-%.1f)" % (saved[len(saved) // 2], saved[0], saved[-1]))
PY
}

echo "| program | plan | predicted (at the rounds' speed) | measured (lowest-highest round) | the allocators' saving (lowest-highest) | the source change (lowest-highest) | zero-cost limit | peak RSS / glibc | memory given back and taken again: predicted / glibc with it kept saved | verdict |"
echo "|---|---|---|---|---|---|---|---|---|---|"
row() {
  local name=$1 input=$2
  shift 2
  command -v "$1" >/dev/null 2>&1 || { echo "| $name | not installed | | | | | | | | |"; return; }
  local rep=$work/report mode=""
  "$adv" measure --rounds "$rounds" -o "$rep" -- "$@" <"$input" >/dev/null 2>&1
  grep -q '^  nothing passed the .* rule by the prediction' "$rep" && mode="*"
  [ -n "${MEASURE_TABLE_KEEP:-}" ] && mkdir -p "$MEASURE_TABLE_KEEP" && cp "$rep" "$MEASURE_TABLE_KEEP/${name%% *}.txt"
  local src
  src=$(source_change "$@")
  awk -v name="$name" -v mode="$mode" -v src="$src" '
    /^  memres \(the plan\)/ { ratio = $5; spread = $6; saved = $7
                                for (i = 1; i <= NF; i++) if ($i == "MiB") rss = $(i + 1) }
    /^  zero-cost limit/ { zratio = $4; zsaved = $6 }
    /^  the allocators. saving \(the runtime/ { asaved = $12; aspread = $14; sub(/,$/, "", aspread) }
    /^  the plan:/ { sites = $3; for (i = 1; i <= NF; i++) if ($i == "predicted") pred = $(i + 1) }
    /the prediction at that speed: / { spred = $(NF - 1) }
    /^  verdict: / { verdict = /saved in every round/ ? "apply" : /not in$/ ? "rounds" : \
                               /the runtime.s identification;$/ ? "source" : "none" }
    /^  saved .* against the predicted .* of memory given back and$/ {
      ksaved = $2; kspread = $5; sub(/\),$/, "", kspread); kpred = $(NF - 6) }
    END {
      if (ratio == "") { printf "| %s | no plan run | | | | | | | | |\n", name; exit }
      printf "| %s | %s site%s%s | %s ms%s | %s ms = %.1f%% %s | %s ms %s | %s | %s | %s | %s | %s |\n", name, sites, sites == 1 ? "" : "s", mode,
             pred, spred == "" ? "" : " (" spred " at the rounds\047 speed)", saved, 100 * (1 - ratio), spread, asaved, aspread, src,
             zsaved == "" ? "-" : zsaved " ms = " sprintf("%.1f%%", 100 * (1 - zratio)), rss,
             ksaved == "" ? "-" : kpred " ms / " ksaved " ms (" kspread ")", verdict
    }' "$rep"
}
row "kat_trees 18" /dev/null "$kat/kat_trees" malloc 18
row "kat_objects 2000000" /dev/null "$kat/kat_objects" malloc 2000000
row "kat_churn 10000000" /dev/null "$kat/kat_churn" malloc 10000000
row "kat_mixed 10000000" /dev/null "$kat/kat_mixed" malloc 10000000
row "kat_stack 20000" /dev/null "$kat/kat_stack" malloc 20000
row "kat_threads 4000000" /dev/null "$kat/kat_threads" malloc 4000000
row "kat_request 100000" /dev/null "$kat/kat_request" malloc 100000
row "kat_vectors 400" /dev/null "$kat/kat_vectors" malloc 400
[ -x "$kat/kat_cxx" ] && row "kat_cxx 10000000" /dev/null "$kat/kat_cxx" malloc 10000000
row "lua5.4 bench.lua 20" /dev/null lua5.4 "$root/integrations/lua/tests/bench.lua" 20
row "sqlite3 workload" "$work/sqlite.sql" sqlite3 :memory:
row "xmllint --noout (34 MB)" /dev/null xmllint --noout "$work/doc.xml"
row "jq length (14 MB)" /dev/null jq length "$work/doc.json"
row "git log -p -n 400" /dev/null git -C "$root" log -p -n 400
row "perl wordindex.pl" /dev/null perl "$here/wordindex.pl"
# Python's own allocator (pymalloc) serves its small objects unless told not to
export PYTHONMALLOC=malloc
row "python3.11 wordindex.py" /dev/null /usr/bin/python3.11 "$here/wordindex.py"
row "python3.11 decimals.py" /dev/null /usr/bin/python3.11 "$here/decimals.py"
unset PYTHONMALLOC
row "cppcheck src/pools.c" /dev/null cppcheck -q --std=c11 -I "$work/cpc/include" "$work/cpc/src/pools.c"
