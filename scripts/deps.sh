#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/deps.sh [OBJDIR] -- the dependency picture of src/ from the object
# files of a build (default build/CMakeFiles/memres_static.dir/src): file A
# depends on B when A.o uses a symbol (a function or an object) that B.o
# defines.  Prints each file's dependencies, then the strongly connected
# components of more than one file (the circles), largest first, and the
# size of the largest (docs/design.md: the dependency plan).  Needs nm and
# python3.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=${1:-$root/build/CMakeFiles/memres_static.dir/src}
for o in "$dir"/*.o; do
  f=$(basename "$o" .o)
  [ -e "$root/src/$f" ] || continue # an object a renamed file left behind
  nm "$o" | awk -v f="$f" '$1 == "U" { print f, "U", $2 } NF == 3 && $2 ~ /^[TDBRCGSV]$/ { print f, "D", $3 }'
done | python3 -c '
import sys, collections
defs, uses = {}, collections.defaultdict(set)
for line in sys.stdin:
    f, kind, sym = line.split()
    if kind == "D":
        defs[sym] = f
    else:
        uses[f].add(sym)
files = sorted(set(defs.values()) | set(uses))
dep = {f: sorted({defs[s] for s in uses[f] if s in defs and defs[s] != f}) for f in files}
for f in files:
    print("%s: %s" % (f, " ".join(dep[f])))
# Tarjan, iterative
index, low, on, stack, sccs, n = {}, {}, set(), [], [], 0
for v0 in files:
    if v0 in index:
        continue
    work = [(v0, 0)]
    while work:
        v, i = work.pop()
        if i == 0:
            index[v] = low[v] = n; n += 1; stack.append(v); on.add(v)
        recurse = False
        for j in range(i, len(dep[v])):
            w = dep[v][j]
            if w not in index:
                work.append((v, j + 1)); work.append((w, 0)); recurse = True; break
            if w in on:
                low[v] = min(low[v], index[w])
        if recurse:
            continue
        if low[v] == index[v]:
            c = []
            while True:
                w = stack.pop(); on.discard(w); c.append(w)
                if w == v:
                    break
            sccs.append(sorted(c))
        if work:
            u = work[-1][0]
            low[u] = min(low[u], low[v])
circles = sorted((c for c in sccs if len(c) > 1), key=len, reverse=True)
for c in circles:
    print("circle of %d: %s" % (len(c), " ".join(c)))
print("largest circle: %d files" % (len(circles[0]) if circles else 1))
'
