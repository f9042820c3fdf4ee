#!/usr/bin/env bash
# nfs_node_test's reads under valgrind's leak checker: every file handle
# libnfs gave a connection is closed before its context is destroyed, over
# NFSv4 and v3, on a clean stop, a torn-down context (a stopped server, a
# killed one, a lost NFSv4 lease) and a stale handle. Any leak or memory error fails it, except
# the one libnfs 4.0 makes itself and we cannot reach
# (nfs_leak.supp: the default NFSv4 client name, ~30 bytes a v4 mount).
# The tests bound by wall time (a healthy read under 1 s) stay out: valgrind
# runs the code ~20x slower. Needs what nfs_node_test needs (root,
# ganesha) and valgrind (deploy/install-deps.sh).
set -uo pipefail
fail() { echo "FAIL: $*"; exit 1; }
dir="${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-.}/client_lib"
bin="$dir/nfs_node_test"
supp="$dir/internal/nfs_leak.supp"
command -v valgrind >/dev/null ||
  fail "valgrind is not installed (deploy/install-deps.sh installs it)"
[ -x "$bin" ] || fail "no test binary at $bin"
tests=(
  ByteExactAtEdgeSizes
  ConcurrentFirstReadsOfManyObjects
  ConcurrentReadsOfAnOpenObjectAreByteExact
  CorruptBlockIsDataLoss
  StoppedServerFailsAtTheDeadlineThenRecovers
  KilledAndRestartedServerIsUsedAgain
  LeaseLostWhilePausedIsANewContext
  MissingExportIsAClearError
  ReplacedWhileServerDownIsLookedUpAgainOverV3
)
filter=$(printf 'NfsNodeTest.%s:' "${tests[@]}")
log="${TEST_UNDECLARED_OUTPUTS_DIR:-${TEST_TMPDIR:-/tmp}}/valgrind.log"
valgrind --leak-check=full --show-leak-kinds=definite,indirect \
  --errors-for-leak-kinds=definite,indirect --error-exitcode=3 \
  --suppressions="$supp" --num-callers=30 --log-file="$log" \
  "$bin" --gtest_filter="${filter%:}"
rc=$?
[ "$rc" = 3 ] && { cat "$log"; fail "valgrind found leaks or memory errors"; }
[ "$rc" = 0 ] || fail "nfs_node_test failed under valgrind (rc $rc)"
# The run was checked (not a valgrind that did nothing).
grep -q "ERROR SUMMARY: 0 errors" "$log" || { cat "$log"; fail "no summary"; }
echo "PASS: no leak, no memory error in ${#tests[@]} tests"
