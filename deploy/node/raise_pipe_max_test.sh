#!/usr/bin/env bash
# raise_pipe_max.sh on the machine's real fs.pipe-max-size: raises a lower
# value, leaves a higher one alone, fails clearly when it cannot write
# (not root) and on bad arguments. Needs root; the machine's value is put
# back at the end, whatever happens.
set -uo pipefail
fail() { echo "FAIL: $*"; exit 1; }
S="${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-.}/deploy/node/raise_pipe_max.sh"
F=/proc/sys/fs/pipe-max-size
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (it changes $F)"; exit 0; }
# The value is one for the whole machine: tests that need it raised hold
# this lock shared while they run (tests/integration/pipe_max_size.h);
# this one holds it exclusive, whichever Bazel server runs it.
exec 9>>/tmp/rangefs-test-pipe-max-size || fail "cannot open the lock"
flock -w 50 -x 9 || fail "fs.pipe-max-size lock not free within 50 s"
orig=$(cat "$F") || fail "cannot read $F"
if ! echo "$orig" >"$F" 2>/dev/null; then
  echo "SKIP: $F is not writable here"; exit 0
fi
# A copy nobody can run (the runfiles may sit under /root).
pub=$(mktemp -d /tmp/raise_pipe_max.XXXXXX) || fail "mktemp"
trap 'echo "$orig" >"$F"; rm -rf "$pub"' EXIT
cp "$S" "$pub/raise_pipe_max.sh" && chmod 755 "$pub" "$pub/raise_pipe_max.sh" ||
  fail "cannot copy $S"
set_to() { echo "$1" >"$F" || fail "cannot set $F to $1"; }

set_to 1048576
out=$("$S" 2>&1) || fail "rc $? raising 1 MiB: $out"
[ "$(cat "$F")" = 2097152 ] || fail "not raised to 2 MiB: $(cat "$F"); $out"
[[ "$out" == *"raised from 1048576"* ]] || fail "output: $out"

set_to 4194304
out=$("$S" 2>&1) || fail "rc $? with 4 MiB set: $out"
[ "$(cat "$F")" = 4194304 ] || fail "a higher value was changed: $(cat "$F")"
[[ "$out" == *"left as it is"* ]] || fail "output: $out"
out=$("$S" 8388608 2>&1) || fail "rc $? raising to 8 MiB: $out"
[ "$(cat "$F")" = 8388608 ] || fail "MIN_BYTES ignored: $(cat "$F")"

# Not root: nothing to do is fine; something to do is a clear error.
nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
out=$("${nobody[@]}" "$pub/raise_pipe_max.sh" 2>&1) || fail "rc $? as nobody with nothing to do: $out"
set_to 1048576
out=$("${nobody[@]}" "$pub/raise_pipe_max.sh" 2>&1); rc=$?
[ "$rc" = 1 ] || fail "rc $rc as nobody (want 1): $out"
[[ "$out" == *"cannot raise fs.pipe-max-size from 1048576 to 2097152 (uid 65534)"* ]] ||
  fail "unclear error: $out"
[ "$(cat "$F")" = 1048576 ] || fail "changed as nobody: $(cat "$F")"

for bad in abc 0 -5 "1 2"; do
  # shellcheck disable=SC2086
  out=$("$S" $bad 2>&1); rc=$?
  [ "$rc" = 2 ] || fail "rc $rc for argument '$bad' (want 2): $out"
  [[ "$out" == usage:* ]] || fail "no usage for '$bad': $out"
done
[ "$(cat "$F")" = 1048576 ] || fail "a bad argument changed it: $(cat "$F")"
echo PASS
