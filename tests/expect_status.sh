#!/bin/sh
# SPDX-License-Identifier: MIT
# expect_status.sh STATUS COMMAND...: runs COMMAND and passes (exit 0) only
# when it exits with STATUS -- for negative tests, where a checker's own exit
# status (valgrind --error-exitcode) proves that it reported the error.
expected=$1
shift
"$@"
status=$?
if [ "$status" -ne "$expected" ]; then
  echo "expect_status: '$*' exited $status, expected $expected" >&2
  exit 1
fi
exit 0
