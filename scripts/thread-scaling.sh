#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/thread-scaling.sh -- thread scaling of the threaded scenarios:
# binary-trees (per-thread arenas, per-thread pools, one shared thread-safe
# pool and object pool, mimalloc, std::pmr sync/unsync pools) and
# producer-consumer (T producers + T consumers), at 1, 2, 4, 8, 16 threads
# (or the counts given), on the memres-bench built by scripts/bench.sh.
#
#   scripts/thread-scaling.sh                      # 1 2 4 8 16 threads
#   scripts/thread-scaling.sh 1 2                  # these counts only
#   MEMRES_SCALING_DEPTH=18 MEMRES_SCALING_RUNS=3 scripts/thread-scaling.sh
#
# Needs a machine with at least as many cores as the largest count (16 for
# the full run; fewer cores measure contention for cores, not scaling).  For
# each count it runs memres-bench once per scenario (--runs RUNS, medians)
# and keeps the JSON in $MEMRES_SCALING_OUT (default build-bench/scaling/);
# then prints one table per scenario: median time per variant and thread
# count, and the speed-up over the variant's own 1-thread median.
# binary-trees does the same total work at every count (the trees of each
# depth are split across the threads); producer-consumer does T times the
# work at T threads, so its figure is objects/s (from the row's note).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bench=${MEMRES_BENCH:-$root/build-bench/bench/memres-bench}
out=${MEMRES_SCALING_OUT:-$root/build-bench/scaling}
depth=${MEMRES_SCALING_DEPTH:-18}
runs=${MEMRES_SCALING_RUNS:-3}
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(1 2 4 8 16)

[ -x "$bench" ] || { echo "thread-scaling.sh: $bench not built (run scripts/bench.sh --list first)" >&2; exit 1; }
mkdir -p "$out"
echo "thread-scaling.sh: $(nproc) CPUs; depth $depth; $runs runs; threads ${counts[*]}" >&2

bt_variants=(--variant "memres arena" --variant "memres pools (per thread)"
             --variant "memres pools (shared, thread-safe)" --variant "memres objpool (shared, thread-safe)"
             --variant malloc --malloc glibc --malloc mimalloc --malloc jemalloc
             --variant "pmr unsync pool" --variant "pmr sync pool")
pc_variants=(--variant "memres pools (shared, thread-safe)" --variant malloc --malloc glibc --malloc mimalloc
             --malloc jemalloc --variant "pmr sync pool")

for t in "${counts[@]}"; do
  "$bench" --scenario binary-trees --depth "$depth" --threads "$t" --runs "$runs" "${bt_variants[@]}" \
    --json "$out/binary-trees-$t.json" >/dev/null
  "$bench" --scenario producer-consumer --threads "$t" --runs "$runs" "${pc_variants[@]}" \
    --json "$out/producer-consumer-$t.json" >/dev/null
done

python3 - "$out" "${counts[@]}" <<'EOF'
import json, re, sys
out, counts = sys.argv[1], [int(c) for c in sys.argv[2:]]
for scen in ("binary-trees", "producer-consumer"):
    table = {}
    for t in counts:
        with open(f"{out}/{scen}-{t}.json") as f:
            doc = json.load(f)
        for r in doc["rows"]:
            if not r.get("ok", False):
                continue
            name = f'{r["variant"]} ({r["malloc"]})' if r["kind"] == "malloc" else r["variant"]
            if scen == "producer-consumer":
                m = re.search(r"([0-9.]+)M objects/s", r.get("note", ""))
                val = float(m.group(1)) if m else None
            else:
                val = r["wall_s"]["median"]
            table.setdefault(name, {})[t] = val
    unit = "M objects/s (speed-up)" if scen == "producer-consumer" else "median s (speed-up over 1 thread)"
    print(f"\n{scen}: {unit}")
    print("| variant | " + " | ".join(f"{t} thr" for t in counts) + " |")
    print("|---|" + "---|" * len(counts))
    for name, row in table.items():
        base = row.get(counts[0])
        cells = []
        for t in counts:
            v = row.get(t)
            if v is None or base is None:
                cells.append("-")
            elif scen == "producer-consumer":
                cells.append(f"{v:.2f} ({v / base:.1f}x)")
            else:
                cells.append(f"{v:.3f} ({base / v:.1f}x)")
        print(f"| {name} | " + " | ".join(cells) + " |")
EOF
