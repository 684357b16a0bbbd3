#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# advise/tests/stability.sh BUILD N -- PROGRAM [ARGS...]: records PROGRAM N times with
# BUILD's memres-advise and prints, for every site recommended or near a threshold
# in any run, its recommendation in each run (~: "near a threshold"). Not a test: the
# stability figures in docs/results come from it.
set -u
B=$1/advise
n=$2
shift 3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for i in $(seq $n); do
  MEMRES_ADVISE_RECORDER=$B/libmemres-advise-recorder.so $B/memres-advise --json $work/stab.$i.json -o /dev/null -- "$@" </dev/null >/dev/null 2>&1
done
python3 - "$n" "$work" <<'PY'
import json, sys
n = int(sys.argv[1])
runs = []
for i in range(1, n + 1):
    d = json.load(open(sys.argv[2] + '/stab.%d.json' % i))
    sites = {}
    for s in d['sites']:
        f = s['frames'][0] if s['frames'] else {}
        if f.get('file') or f.get('function'):
            key = '%s:%s' % ((f.get('file') or f.get('function')), f.get('line') or f.get('offset'))
        elif f.get('module'):
            # no symbols: the module offsets of the site's frames (a wrapper's
            # first frame is every site's)
            key = ' '.join('%s+%x' % (g.get('module', '?').rsplit('/', 1)[-1], g.get('offset') or 0)
                           for g in s['frames'][:4])
        else:
            continue
        sites.setdefault(key, []).append((s['recommendation'], s['candidate'], bool(s.get('near_threshold'))))
    runs.append(sites)
keys = set().union(*runs)
flips = 0
shown = 0
for k in sorted(keys):
    recs = [r.get(k, [('-', '-', False)])[0] for r in runs]
    if all(x[0] == 'none' and not x[2] for x in recs):
        continue
    shown += 1
    same = len(set(x[0] for x in recs)) == 1
    if not same: flips += 1
    print('%-40s %s%s' % (k[-60:], ' '.join(x[0] + ('~' if x[2] else '') for x in recs), '' if same else '  <- differs'))
print('sites shown %d, differing %d' % (shown, flips))
PY
