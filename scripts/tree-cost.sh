#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/tree-cost.sh [LIBDIR] -- what a child costs (memres/tree.h), with
# the anchors beside it, in callgrind instructions (repeatable whatever the
# machine's load):
#   cycle   create a child under a long-lived parent, one 100-byte
#           allocation, destroy the child, warm: memres child arenas, APR
#           subpools (apr_pool_create / apr_palloc / apr_pool_destroy),
#           talloc (talloc_new / talloc_size / talloc_free).  Instructions
#           per cycle = (total at 11000 cycles - total at 1000) / 10000, so
#           start-up costs cancel; the loop's own instructions are included
#           alike for all three.  Then the wall time per cycle over 10M
#           cycles, best of three (noisy on a shared machine; the
#           instructions are not).
#   report  mr_report of 100,000 child arenas (1000 connections x 99
#           requests, each with a 4 KiB block) to /dev/null: wall time of
#           the text and the JSON report, best of three.
# LIBDIR: a memres build directory holding libmemres.so (default build).
# Needs valgrind, libapr1-dev and libtalloc-dev (scripts/bench.sh installs them).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
lib=$(cd "${1:-$root/build}" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cat >"$tmp/memres.c" <<'EOF'
#include <stdlib.h>
#include <memres/memres.h>
int main(int argc, char **argv)
{
    int n = atoi(argv[1]);
    mr_arena *root = mr_arena_create(NULL);
    mr_arena_options o = {.parent = mr_arena_node(root)};
    void *volatile sink;
    for (int i = 0; i < n; i++) {
        mr_arena *c = mr_arena_create(&o);
        sink = mr_arena_alloc(c, 100);
        mr_arena_destroy(c);
    }
    (void)sink;
    mr_arena_destroy(root);
    return 0;
}
EOF
cat >"$tmp/apr.c" <<'EOF'
#include <stdlib.h>
#include <apr_pools.h>
int main(int argc, char **argv)
{
    int n = atoi(argv[1]);
    apr_initialize();
    apr_pool_t *root;
    apr_pool_create(&root, NULL);
    void *volatile sink;
    for (int i = 0; i < n; i++) {
        apr_pool_t *c;
        apr_pool_create(&c, root);
        sink = apr_palloc(c, 100);
        apr_pool_destroy(c);
    }
    (void)sink;
    apr_pool_destroy(root);
    apr_terminate();
    return 0;
}
EOF
cat >"$tmp/talloc.c" <<'EOF'
#include <stdlib.h>
#include <talloc.h>
int main(int argc, char **argv)
{
    int n = atoi(argv[1]);
    void *root = talloc_new(NULL);
    void *volatile sink;
    for (int i = 0; i < n; i++) {
        void *c = talloc_new(root);
        sink = talloc_size(c, 100);
        talloc_free(c);
    }
    (void)sink;
    talloc_free(root);
    return 0;
}
EOF
cat >"$tmp/report.c" <<'EOF'
#include <stdio.h>
#include <time.h>
#include <memres/memres.h>
static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}
int main(void)
{
    mr_arena *root = mr_arena_create(NULL);
    for (int i = 0; i < 1000; i++) {
        mr_arena *c = mr_arena_create(&(mr_arena_options){.parent = mr_arena_node(root), .name = "connection"});
        for (int j = 0; j < 99; j++)
            mr_arena_alloc(mr_arena_create(&(mr_arena_options){.parent = mr_arena_node(c), .name = "request"}), 100);
    }
    FILE *f = fopen("/dev/null", "w");
    double best[2] = {1e9, 1e9};
    size_t nodes = 0;
    for (int k = 0; k < 3; k++)
        for (int json = 0; json < 2; json++) {
            double t0 = now();
            nodes = mr_report(mr_arena_node(root), f, &(mr_report_options){.format = json, .max_children = 1000000});
            double t = now() - t0;
            best[json] = t < best[json] ? t : best[json];
        }
    printf("report\t%zu nodes\ttext %.1f ms\tjson %.1f ms\n", nodes, best[0] * 1e3, best[1] * 1e3);
    mr_arena_destroy(root);
    return 0;
}
EOF

cc=${CC:-cc}
"$cc" -O2 -I"$root/include" "$tmp/memres.c" -L"$lib" -lmemres -Wl,-rpath,"$lib" -o "$tmp/memres"
"$cc" -O2 -I"$root/include" "$tmp/report.c" -L"$lib" -lmemres -Wl,-rpath,"$lib" -o "$tmp/report"
progs=(memres)
if pkg-config --exists apr-1; then
  "$cc" -O2 $(pkg-config --cflags apr-1) "$tmp/apr.c" $(pkg-config --libs apr-1) -o "$tmp/apr"
  progs+=(apr)
fi
if pkg-config --exists talloc; then
  "$cc" -O2 $(pkg-config --cflags talloc) "$tmp/talloc.c" $(pkg-config --libs talloc) -o "$tmp/talloc"
  progs+=(talloc)
fi

ir() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 | awk '/refs:/ {gsub(",", "", $4); print $4}'; }
# wall time: ns per cycle of 10M cycles, best of three (start-up included,
# a few ms against seconds)
wall() {
  local best=
  for _ in 1 2 3; do
    local t0 t1
    t0=$(date +%s%N)
    "$@" >/dev/null
    t1=$(date +%s%N)
    if [ -z "$best" ] || [ $((t1 - t0)) -lt "$best" ]; then best=$((t1 - t0)); fi
  done
  echo "$best"
}
for p in "${progs[@]}"; do
  a=$(ir "$tmp/$p" 1000)
  b=$(ir "$tmp/$p" 11000)
  ns=$(wall "$tmp/$p" 10000000)
  printf 'cycle\t%s\t%d instructions\t%d.%d ns\n' "$p" $(((b - a) / 10000)) $((ns / 10000000)) $((ns / 1000000 % 10))
done
"$tmp/report"
