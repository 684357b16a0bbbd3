# SPDX-License-Identifier: MIT
# advise/tests/real_inputs.py DIR -- the inputs the real programs of
# measure-table.sh and sample_agree.sh read: DIR/doc.json (100,000 items,
# 14 MB, for jq) and DIR/doc.xml (100,000 items, 34 MB, for xmllint).
import json
import sys

d = sys.argv[1]
items = [{"id": i, "name": "item%d" % i, "tags": ["t%d" % (i % 17), "u%d" % (i % 5)], "price": i * 0.25,
          "nested": {"a": i, "b": [1, 2, 3], "c": "x" * (i % 30)}} for i in range(100000)]
with open(d + "/doc.json", "w") as f:
    f.write(json.dumps(items))
with open(d + "/doc.xml", "w") as f:
    f.write('<?xml version="1.0"?>\n<catalog>\n')
    for i in range(100000):
        f.write('<item id="%d" kind="k%d"><name>item %d</name><tags><t>a%d</t><t>b%d</t></tags>'
                '<price cur="EUR">%d.25</price><desc>%s</desc></item>\n'
                % (i, i % 13, i, i % 7, i % 11, i, "lorem ipsum " * (i % 8)))
    f.write('</catalog>\n')
