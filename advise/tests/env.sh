#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# advise/tests/env.sh -- the driver's variables leave the environment of the
# program it runs, also where the program has its own getenv, setenv and
# unsetenv (bash's keep its variables apart from environ once its main has
# run; the recorder's unsetenv loop never ended under `bash -c`):
#
#   env.sh ADVISOR WORKDIR
#
# Runs bash -c under the recorder and under `apply` (MEMRES_ADVISE_APPLY_LIB
# names the runtime), each within 120 s, and fails unless the shell and a
# child of it (env) see no variable of the driver's and LD_PRELOAD as the
# caller had it: unset, and libm.so.6 where the caller preloaded that.
# Also a wrapper: a shell that execs another program gets a report that
# says so (the recorder's note of the exec), and an exec that fails none;
# and a static program (ldconfig, where `file` finds no interpreter in it)
# gets told why nothing was recorded.
set -u
advisor=$1 work=$2
rm -rf "$work"
mkdir -p "$work"
fail() { echo "env.sh: FAIL: $*" >&2; exit 1; }
# the shell's view and its child's: the profile's and plan's variables,
# LD_PRELOAD, and the driver's variables env (a child) still has
# shellcheck disable=SC2016 # expanded by the shell under test
script='printf "%s|%s|%s|%s|" "${MEMRES_ADVISE_PROFILE-unset}" "${MEMRES_ADVISE_PLAN-unset}" "${MEMRES_ADVISE_PRELOAD-unset}" "${LD_PRELOAD-unset}"
env | grep -cE "^(MEMRES_ADVISE_(PROFILE|DEPTH|PRELOAD|PLAN|APPLY_STATS|APPLY_IDENTIFY_ONLY)|LD_PRELOAD)=" || true'
check() { # check WHAT WANT GOT STATUS
  [ "$4" -eq 0 ] || fail "$1: exit status $4 (124: did not end within 120 s)"
  [ "$3" = "$2" ] || fail "$1: the shell saw [$3], not [$2]"
}

got=$(timeout 120 "$advisor" --plan-candidates --min-share 0 --plan "$work/plan" -o "$work/report" -- bash -c "$script")
check "recorded" "unset|unset|unset|unset|0" "$got" $?
grep -q '^== memres-advise: .*bash' "$work/report" || fail "recorded: no report of bash ($work/report)"
got=$(LD_PRELOAD=libm.so.6 timeout 120 "$advisor" -o "$work/report2" -- bash -c "$script")
check "recorded, the caller preloading libm.so.6" "unset|unset|unset|libm.so.6|1" "$got" $?
[ -s "$work/plan" ] || fail "no plan ($work/report)"
got=$(timeout 120 "$advisor" apply "$work/plan" --stats "$work/stats" -- bash -c "$script")
check "applied" "unset|unset|unset|unset|0" "$got" $?
got=$(LD_PRELOAD=libm.so.6 timeout 120 "$advisor" apply "$work/plan" -- bash -c "$script")
check "applied, the caller preloading libm.so.6" "unset|unset|unset|libm.so.6|1" "$got" $?
# a wrapper that execs: said, in the report, its JSON and its page; an exec that fails: not
timeout 120 "$advisor" -o "$work/wrapper" --json "$work/wrapper.json" --html "$work/wrapper.html" \
  -- bash -c 'exec /bin/true' 2>"$work/wrapper.err" || fail "the wrapper: exit status $?"
grep -q "^the process exec'd /bin/true after this profile was written" "$work/wrapper" \
  || fail "the wrapper's report does not say what it exec'd ($work/wrapper)"
grep -q '"exec_into": "/bin/true"' "$work/wrapper.json" || fail "the wrapper's JSON has no exec_into ($work/wrapper.json)"
grep -q '"exec_into":"/bin/true"' "$work/wrapper.html" || fail "the wrapper's page has no exec_into ($work/wrapper.html)"
grep -q "exec'd /bin/true, which was not profiled" "$work/wrapper.err" || fail "nothing said on stderr ($work/wrapper.err)"
got=$(timeout 120 "$advisor" -o "$work/failed" -- bash -c 'shopt -s execfail; exec /nonexistent/x 2>/dev/null; echo on')
check "an exec that fails" "on" "$got" $?
if grep -q "exec'd" "$work/failed"; then fail "an exec that failed is reported as done ($work/failed)"; fi
# a static program (Debian's ldconfig is static-pie): said why nothing was recorded
ldc=$(command -v ldconfig || echo /sbin/ldconfig)
if [ -x "$ldc" ] && ! grep -q "interpreter" <(file -b "$ldc" 2>/dev/null || echo interpreter); then
  timeout 120 "$advisor" -o "$work/static" -- "$ldc" -p >/dev/null 2>"$work/static.err" || fail "ldconfig: exit status $?"
  grep -q "is statically linked: the loader does not preload the recorder" "$work/static.err" \
    || fail "a static program: not said why nothing was recorded ($work/static.err)"
fi
echo "env.sh: bash under the recorder and under apply: the driver's variables gone, LD_PRELOAD as the caller had it;"
echo "env.sh: an exec said in the report, a failed one not"
