# SPDX-License-Identifier: MIT
# advise/tests/decimals.py -- a workload for Debian's python3 in
# measure-table.sh (run with PYTHONMALLOC=malloc) whose allocations come
# through extension modules that Python dlopens after start-up (_decimal,
# _json): a sum of 600,000 decimal fractions at 60 digits, then 150,000
# small records through json.dumps and json.loads.  The sites in those
# modules are routed only once the apply runtime finds them loaded.
import decimal
import json

decimal.getcontext().prec = 60
D = decimal.Decimal
s = D(0)
for i in range(1, 600000):
    s += D(1) / D(i) * D(i % 7 + 1)
print(str(s)[:30])
d = json.loads(json.dumps([{"k%d" % i: [i, str(i), i * 0.5]} for i in range(150000)]))
print(len(d))
