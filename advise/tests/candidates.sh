#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# advise/tests/candidates.sh -- a "none" whose candidates together pass the
# 2% rule says so, and how to apply them:
#
#   candidates.sh ADVISOR WORKDIR -- PROGRAM ARGS...
#
# PROGRAM must have two sites or more that the rules name an allocator for,
# not freed in one function (whose sites the rules judge as one group):
# kat_request, its requests' objects and its never-freed table.  The
# profile is analysed again with the rule set between the largest site's
# share and the sites' sum: no site passes alone, the candidates' line
# says that together they do and names --plan-candidates, which plans
# them; with the rule above the sum, the plain line of the candidates
# under the rule.  The JSON's under_the_rule says the same.
set -u
advisor=$1 work=$2
shift 3
rm -rf "$work"
mkdir -p "$work"
fail() { echo "candidates.sh: FAIL: $*" >&2; cat "$work/report" >&2; exit 1; }
"$advisor" --save-profile "$work/profile" --json "$work/first.json" -o "$work/first" -- "$@" >/dev/null 2>&1 \
  || fail "recording exited $?"
read -r between above n <<<"$(python3 - "$work/first.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
shares = [100 * s["candidate_saving_ns"] / d["run_time_ns"] for s in d["sites"] if s["candidate"] != "none"]
print("%.4f %.4f %d" % ((max(shares) + sum(shares)) / 2, (sum(shares) + 100) / 2, len(shares) if sum(shares) < 99 else 0))
PY
)"
[ "$n" -ge 2 ] || fail "$n candidate sites (0: together 99% of the run or more): the program needs two"
json_says() { # FILE SITES PASS: the JSON's under_the_rule
  python3 - "$@" <<'PY'
import json, sys
u = json.load(open(sys.argv[1]))["under_the_rule"]
n = int(sys.argv[2])
sys.exit(0 if u["sites"] == n and (u["predicted_saving_ns"] > 0) == (n > 0)
         and u["together_pass"] == (sys.argv[3] == "true") else 1)
PY
}
"$advisor" --analyze-profile "$work/profile" --min-share "$between" --json "$work/between.json" -o "$work/report" \
  >/dev/null 2>&1 || fail "analysis exited $?"
grep -q '^total: 0 sites recommended' "$work/report" || fail "a site passed the rule at $between%"
json_says "$work/between.json" "$n" true || fail "the JSON's under_the_rule at $between%: $(grep -A1 under_the_rule "$work/between.json")"
grep -q "^under the rule one by one: $n candidate sites, predicted .* together (" "$work/report" \
  || fail "no line of the candidates together at $between%"
grep -q -- '--plan FILE --plan-candidates writes it' "$work/report" || fail "the line does not say how to plan them"
"$advisor" --analyze-profile "$work/profile" --min-share "$between" --plan "$work/plan" --plan-candidates \
  -o /dev/null >/dev/null 2>&1 || fail "planning exited $?"
[ "$(grep -c '^route ' "$work/plan")" -eq "$n" ] || fail "the plan does not route the $n candidates"
"$advisor" --analyze-profile "$work/profile" --min-share "$above" --json "$work/above.json" -o "$work/report" \
  >/dev/null 2>&1 || fail "analysis exited $?"
json_says "$work/above.json" "$n" false || fail "the JSON's under_the_rule at $above%"
grep -q "^under the rule: $n candidate sites, predicted " "$work/report" \
  || fail "no line of the candidates under the rule at $above%"
grep -q 'one by one' "$work/report" && fail "the candidates said to pass together at $above%"
json_says "$work/first.json" 0 false || fail "the JSON's under_the_rule counts candidates where a site is recommended"
echo "candidates.sh: $n sites, the rule at $between% (together) and $above% (not)"
