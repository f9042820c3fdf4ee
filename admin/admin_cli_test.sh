#!/usr/bin/env bash
# rangefs-admin end to end against a real etcd: human and JSON output,
# exit codes, dump/restore between clusters, a dead etcd.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$TEST_SRCDIR/$TEST_WORKSPACE/tests/testing/etcd_harness.sh"
admin="$TEST_SRCDIR/$TEST_WORKSPACE/admin/rangefs-admin"
fail() { echo "FAIL: $*"; exit 1; }
expect_rc() {  # expect_rc RC CMD...
  local want=$1; shift
  "$@" >"$TEST_TMPDIR/out" 2>"$TEST_TMPDIR/err"
  local rc=$?
  [ "$rc" = "$want" ] || fail "$* exited $rc, want $want: $(cat "$TEST_TMPDIR/err")"
}

etcd_start 1 || fail "etcd did not start"
A=("$admin" --etcd="$ETCD_ENDPOINTS" --cluster=clitest)

expect_rc 0 "${A[@]}" node add n1 --address=127.0.0.1:7001 --export=/srv/n1 --zone=a
expect_rc 0 "${A[@]}" node add n2 --address=127.0.0.1:7002 --export=/srv/n2 --zone=b
expect_rc 4 "${A[@]}" node add n1 --address=127.0.0.1:7001 --export=/srv/n1
expect_rc 2 "${A[@]}" node add n3 --bogus=1
expect_rc 0 "${A[@]}" node list
grep -q "^n2 .*active" "$TEST_TMPDIR/out" || fail "node list: $(cat "$TEST_TMPDIR/out")"
expect_rc 0 "${A[@]}" --json node list
grep -q '"id": "n1"' "$TEST_TMPDIR/out" || fail "json list"

cat >"$TEST_TMPDIR/layout.json" <<'JSON'
{"size": "10", "state": "READY",
 "extents": [{"offset": "0", "length": "10",
              "replicas": [{"node_id": "n1", "object": "a"},
                           {"node_id": "n2", "object": "a"}]}]}
JSON
expect_rc 0 "${A[@]}" file create /crawl/a --layout="$TEST_TMPDIR/layout.json"
expect_rc 4 "${A[@]}" file create /crawl/a --layout="$TEST_TMPDIR/layout.json"
expect_rc 0 "${A[@]}" file stat /crawl/a
grep -q "nodes .*n1,n2" "$TEST_TMPDIR/out" || fail "stat: $(cat "$TEST_TMPDIR/out")"
expect_rc 3 "${A[@]}" file stat /crawl/missing
expect_rc 2 "${A[@]}" file stat crawl/relative
expect_rc 0 "${A[@]}" status
grep -q "2 node(s), 0 live" "$TEST_TMPDIR/out" || fail "status: $(cat "$TEST_TMPDIR/out")"

# Storage policies: refused when the cluster cannot place them (no agent
# runs here: no live node), with the reason and exit 4; usage errors exit 2;
# removing a policy that is not there exits 3; the help names the commands.
expect_rc 4 "${A[@]}" policy set /crawl --ec=2+1
grep -q 'policy set /crawl ec=2+1 refused: ec=2+1 needs 3 live ACTIVE nodes.*has 0 (none)' "$TEST_TMPDIR/err" \
  || fail "policy set refusal: $(cat "$TEST_TMPDIR/err")"
expect_rc 2 "${A[@]}" policy set /crawl --ec=2+1 --replicas=2
grep -q 'exactly one of --replicas=N and --ec=K+M' "$TEST_TMPDIR/err" || fail "both flags: $(cat "$TEST_TMPDIR/err")"
expect_rc 2 "${A[@]}" policy set /crawl --replicas=x
expect_rc 2 "${A[@]}" policy set /crawl --ec=40+40
expect_rc 2 "${A[@]}" policy sett /crawl --ec=2+1
grep -q 'did you mean "set"' "$TEST_TMPDIR/err" || fail "policy did you mean: $(cat "$TEST_TMPDIR/err")"
expect_rc 3 "${A[@]}" policy rm /crawl
expect_rc 0 "${A[@]}" policy ls
grep -q '0 policy(ies)' "$TEST_TMPDIR/out" || fail "policy ls: $(cat "$TEST_TMPDIR/out")"
expect_rc 0 "$admin" help policy
grep -q 'policy set DIR (--replicas=N | --ec=K+M)' "$TEST_TMPDIR/out" || fail "help policy: $(cat "$TEST_TMPDIR/out")"
# A policy record written by hand that the record gate refuses: listed as
# invalid, ignored by `file stat`, reported by doctor.
ETCDCTL_API=3 etcdctl --endpoints="$ETCD_ENDPOINTS" \
  put /rangefs/v1/clitest/policies/crawl garbage >/dev/null || fail "etcdctl put"
expect_rc 0 "${A[@]}" policy ls
grep -q 'invalid.*policies/crawl: not a decodable storage policy' "$TEST_TMPDIR/out" \
  || fail "invalid policy in ls: $(cat "$TEST_TMPDIR/out")"
expect_rc 0 "${A[@]}" file stat /crawl/a
grep -q '^policy  *-' "$TEST_TMPDIR/out" || fail "stat with a bad policy: $(cat "$TEST_TMPDIR/out")"
expect_rc 0 "${A[@]}" policy rm /crawl

# The same settings from a config file (and a bad file is a clear error).
printf 'etcd_endpoints = %s\ncluster = clitest\n' "$ETCD_ENDPOINTS" >"$TEST_TMPDIR/rangefs.conf"
expect_rc 0 "$admin" --config="$TEST_TMPDIR/rangefs.conf" node list
grep -q "^n1 " "$TEST_TMPDIR/out" || fail "config: $(cat "$TEST_TMPDIR/out")"
printf 'etcd_endpoints = %s\nclustr = x\n' "$ETCD_ENDPOINTS" >"$TEST_TMPDIR/bad.conf"
expect_rc 2 "$admin" --config="$TEST_TMPDIR/bad.conf" node list
grep -q "bad.conf:2" "$TEST_TMPDIR/err" || fail "config error location: $(cat "$TEST_TMPDIR/err")"

# doctor: nodes registered but no agents running -> FAIL findings with
# fixes, exit 1 (doctor's exit codes: admin/doctor.h).
expect_rc 1 "${A[@]}" doctor --mounts=no
grep -q "FAIL" "$TEST_TMPDIR/out" || fail "doctor: $(cat "$TEST_TMPDIR/out")"
grep -q "n1" "$TEST_TMPDIR/out" || fail "doctor names the node: $(cat "$TEST_TMPDIR/out")"

# A mistyped command names the closest valid one; exit 2.
expect_rc 2 "${A[@]}" file lss /data
grep -q 'unknown file command "lss"; did you mean "ls"?' "$TEST_TMPDIR/err" \
  || fail "did you mean: $(cat "$TEST_TMPDIR/err")"
# --json: sizes and counts are JSON numbers.
expect_rc 0 "${A[@]}" --json file ls /crawl
grep -Eq '"size": [0-9]+,' "$TEST_TMPDIR/out" || fail "json size: $(cat "$TEST_TMPDIR/out")"

# Dump from one cluster name, restore into another.
expect_rc 0 "${A[@]}" dump --out="$TEST_TMPDIR/dump.json"
expect_rc 0 "$admin" --etcd="$ETCD_ENDPOINTS" --cluster=copy restore --in="$TEST_TMPDIR/dump.json"
expect_rc 0 "$admin" --etcd="$ETCD_ENDPOINTS" --cluster=copy file ls /
grep -q "^/crawl/a " "$TEST_TMPDIR/out" || fail "restored ls: $(cat "$TEST_TMPDIR/out")"

# A wrong cluster name: the command runs (empty), and stderr says so,
# naming the clusters that exist; the right one warns of nothing.
expect_rc 0 "$admin" --etcd="$ETCD_ENDPOINTS" --cluster=nope status
grep -q 'cluster "nope" at .* has no nodes and no files (clusters there: .*clitest' "$TEST_TMPDIR/err" \
  || fail "empty cluster warning: $(cat "$TEST_TMPDIR/err")"
expect_rc 0 "${A[@]}" status
! grep -q "has no nodes and no files" "$TEST_TMPDIR/err" || fail "warned on a real cluster: $(cat "$TEST_TMPDIR/err")"
# One config file, read through $RANGEFS_CONFIG; $RANGEFS_CLUSTER and then
# --cluster win over it (the same precedence in every tool:
# base/layered_config.h).
printf 'etcd_endpoints = %s\ncluster = copy\n' "$ETCD_ENDPOINTS" >"$TEST_TMPDIR/rangefs.conf"
RANGEFS_CONFIG="$TEST_TMPDIR/rangefs.conf" expect_rc 0 "$admin" file ls /
grep -q "^/crawl/a " "$TEST_TMPDIR/out" || fail "config file's cluster: $(cat "$TEST_TMPDIR/out")"
RANGEFS_CONFIG="$TEST_TMPDIR/rangefs.conf" RANGEFS_CLUSTER=nope expect_rc 0 "$admin" file ls /
grep -q 'cluster "nope"' "$TEST_TMPDIR/err" || fail "\$RANGEFS_CLUSTER over the file: $(cat "$TEST_TMPDIR/err")"
RANGEFS_CONFIG="$TEST_TMPDIR/rangefs.conf" RANGEFS_CLUSTER=nope expect_rc 0 "$admin" --cluster=copy file ls /
grep -q "^/crawl/a " "$TEST_TMPDIR/out" || fail "--cluster over \$RANGEFS_CLUSTER: $(cat "$TEST_TMPDIR/out")"
RANGEFS_CONFIG="$TEST_TMPDIR/missing.conf" expect_rc 3 "$admin" file ls /
grep -q 'missing.conf.*RANGEFS_CONFIG' "$TEST_TMPDIR/err" || fail "bad \$RANGEFS_CONFIG: $(cat "$TEST_TMPDIR/err")"

# A cluster name that is not one safe key component: refused, exit 2.
RANGEFS_CLUSTER=a/b expect_rc 2 "$admin" --etcd="$ETCD_ENDPOINTS" status
grep -q 'cluster name "a/b"' "$TEST_TMPDIR/err" || fail "bad cluster: $(cat "$TEST_TMPDIR/err")"

# A dead etcd: a clear error and exit 5, quickly.
etcd_stop_all
start=$(date +%s)
expect_rc 5 "${A[@]}" --timeout=1 node list
grep -q "UNAVAILABLE\|DEADLINE" "$TEST_TMPDIR/err" || fail "dead etcd message: $(cat "$TEST_TMPDIR/err")"
# Refused at once (idle: well under 1 s); 20 s only tells a hang.
took=$(( $(date +%s) - start ))
[ "$took" -lt 20 ] || fail "took ${took}s against a dead etcd (--timeout=1)"
echo PASS
