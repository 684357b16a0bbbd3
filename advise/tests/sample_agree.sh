#!/bin/bash
# SPDX-License-Identifier: MIT
# advise/tests/sample_agree.sh -- whether sampled recording (memres-advise
# --sample BYTES) gives the advice that recording every allocation gives (not a
# pass/fail test: it prints a table).
#
#   advise/tests/sample_agree.sh BUILD_DIR [BYTES]
#
# Each program runs under memres-advise twice, recording every allocation and
# sampling one per BYTES (default 1024) on average; a row says, for every site
# either run recommends, the recommendation and predicted saving of each, and
# the CPU time of each recorded run.  A site is its frames (module and offset),
# the same in both runs, or else the site with the same first frame and
# recommendation (a recursion's stacks fold into a different representative).
# Programs: the known-answer programs (build/advise/tests) and, where
# installed, Debian's lua5.4 (the Lua benchmark), xmllint and jq on the inputs
# of measure-table.sh, python3.11 on decimals.py (PYTHONMALLOC=malloc) and perl
# on wordindex.pl.  Needs bash and python3.
set -u
if [ $# -lt 1 ] || [ ! -d "$1" ]; then
  echo "usage: $0 BUILD_DIR [BYTES]" >&2
  exit 2
fi
B=$(cd "$1" && pwd)
BYTES=${2:-1024}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
adv=$B/advise/memres-advise
kat=$B/advise/tests
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 "$here/real_inputs.py" "$work"

echo "sampled recording (--sample $BYTES) against recording every allocation: the recommended sites"
echo "| program | site | every allocation | sampled | same | recorded CPU (every / sampled) |"
echo "|---|---|---|---|---|---|"
row() {
  local name=$1
  shift
  if ! command -v "$1" > /dev/null; then
    echo "| $name | not installed | | | | |"
    return
  fi
  "$adv" -o /dev/null --json "$work/e.json" -- "$@" > /dev/null 2>&1 < /dev/null
  "$adv" --sample "$BYTES" -o /dev/null --json "$work/s.json" -- "$@" > /dev/null 2>&1 < /dev/null
  python3 - "$name" "$work/e.json" "$work/s.json" <<'PY'
import json, sys
name, ea, sa = sys.argv[1:4]
def load(p):
    try:
        d = json.load(open(p))
    except (OSError, ValueError):
        return None, {}
    return d, {tuple((f.get("module"), f.get("offset")) for f in s["frames"]): s for s in d["sites"]}
de, e = load(ea)
ds, s = load(sa)
if de is None or ds is None:
    print("| %s | no report | | | | |" % name)
    sys.exit()
def label(x):
    f = x["frames"][0]
    if f.get("function"):
        return f["function"] + (":%d" % f["line"] if f.get("line") else "")
    return "%s+0x%x" % (f.get("module", "?").rsplit("/", 1)[-1], f.get("offset", 0))
def rec(x):
    return "-" if x is None else "%s %.1f ms" % (x["recommendation"], x.get("predicted_saving_ns", 0) / 1e6)
keys = [k for k in e if e[k]["recommendation"] != "none"] + \
       [k for k in s if s[k]["recommendation"] != "none" and (k not in e or e[k]["recommendation"] == "none")]
keys.sort(key=lambda k: -max(e[k]["predicted_saving_ns"] if k in e else 0, s[k]["predicted_saving_ns"] if k in s else 0))
cpu = "%.0f / %.0f ms" % (de["recorded_cpu_ns"] / 1e6, ds["recorded_cpu_ns"] / 1e6)
if not keys:
    print("| %s | (none recommended) | none | none | yes | %s |" % (name, cpu))
def by_label(d, x):
    # the same first frame: a recursion's stacks fold into different representatives
    return next((y for y in d.values() if label(y) == label(x) and y["recommendation"] == x["recommendation"]), None)
for i, k in enumerate(keys):
    a, b = e.get(k), s.get(k)
    if a is None:
        a = by_label(e, b)
    if b is None:
        b = by_label(s, a)
    same = a is not None and b is not None and a["recommendation"] == b["recommendation"]
    print("| %s | %s | %s | %s | %s | %s |" % (name if i == 0 else "", label(a or b), rec(a), rec(b),
          "yes" if same else "**no**", cpu if i == 0 else ""))
PY
}
row "kat_trees 16" "$kat/kat_trees" malloc 16
row "kat_objects 200000" "$kat/kat_objects" malloc 200000
row "kat_churn 1000000" "$kat/kat_churn" malloc 1000000
row "kat_mixed 1000000" "$kat/kat_mixed" malloc 1000000
row "kat_stack 2000" "$kat/kat_stack" malloc 2000
row "kat_threads 100000" "$kat/kat_threads" malloc 100000
row "kat_request 20000" "$kat/kat_request" malloc 20000
row "kat_vectors 20" "$kat/kat_vectors" malloc 20
row "kat_plugin 200" "$kat/kat_plugin" malloc 200
row "lua5.4 bench.lua 20" lua5.4 "$root/integrations/lua/tests/bench.lua" 20
row "xmllint --noout (34 MB)" xmllint --noout "$work/doc.xml"
row "jq length (14 MB)" jq length "$work/doc.json"
PYTHONMALLOC=malloc row "python3.11 decimals.py" /usr/bin/python3.11 "$here/decimals.py"
row "perl wordindex.pl" perl "$here/wordindex.pl"
