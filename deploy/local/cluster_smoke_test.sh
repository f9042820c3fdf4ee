#!/usr/bin/env bash
# Smoke test of deploy/local/cluster.sh: up (real etcd + agents), ingest a
# small file with rangefs-admin, read it back verified with rangefs-bench,
# status, down — in local mode and in netns mode (capped veth links). Checks
# that nothing is left behind: no processes, no namespaces.
set -uo pipefail
RF="$TEST_SRCDIR/$TEST_WORKSPACE"
BIN="$TEST_TMPDIR/bin"
mkdir -p "$BIN"
cp "$RF/storage_node/rangefs-node" "$RF/namespace/cli/rangefs-admin" \
   "$RF/tests/bench/rangefs-bench" "$BIN/"
CLUSTER_SH="$RF/deploy/local/cluster.sh"
fail() { echo "FAIL: $*"; for f in "$DIR"/logs/*.log; do echo "--- $f"; tail -5 "$f"; done; bash "$CLUSTER_SH" down --dir="$DIR" >/dev/null 2>&1; exit 1; }

run_mode() {
  local hosts=$1 nodes=$2
  DIR="$TEST_TMPDIR/c-$hosts"
  local env
  env=$(bash "$CLUSTER_SH" up --dir="$DIR" --nodes="$nodes" --hosts="$hosts" \
        --bin="$BIN" --cluster=smoke --rate=400mbit | tail -n 1) || fail "$hosts: up failed"
  eval "$env"
  mkdir -p "$TEST_TMPDIR/data-$hosts/d"
  head -c 3000000 /dev/urandom >"$TEST_TMPDIR/data-$hosts/d/f1"
  head -c 5000 /dev/urandom >"$TEST_TMPDIR/data-$hosts/d/f2"
  for f in f1 f2; do
    bash "$CLUSTER_SH" exec --dir="$DIR" -- "$BIN/rangefs-admin" --etcd="$RANGEFS_ETCD" \
      --cluster=smoke --no-progress file put "$TEST_TMPDIR/data-$hosts/d/$f" "/d/$f" \
      --replicas=2 --stripe-unit=1M >/dev/null || fail "$hosts: put $f"
  done
  local path=auto
  [ "$hosts" = netns ] && path=agent
  bash "$CLUSTER_SH" exec --dir="$DIR" -- "$BIN/rangefs-bench" --etcd="$RANGEFS_ETCD" \
    --cluster=smoke --mount_root="$MOUNT_ROOT" --data_path="$path" --workload=scan \
    --once --threads=2 --verify_against="$TEST_TMPDIR/data-$hosts" --json \
    >"$TEST_TMPDIR/scan-$hosts.json" || fail "$hosts: read job: $(cat "$TEST_TMPDIR/scan-$hosts.json")"
  grep -q '"bytes": 3005000' "$TEST_TMPDIR/scan-$hosts.json" || fail "$hosts: bytes read: $(cat "$TEST_TMPDIR/scan-$hosts.json")"
  grep -q '"mismatches": 0' "$TEST_TMPDIR/scan-$hosts.json" || fail "$hosts: mismatches"
  bash "$CLUSTER_SH" status --dir="$DIR" | grep -q "$nodes node(s), $nodes live" || fail "$hosts: status"
  local pids
  pids=$(cat "$DIR"/run/*.pid)
  bash "$CLUSTER_SH" down --dir="$DIR" --purge >/dev/null 2>&1 || fail "$hosts: down"
  for p in $pids; do
    kill -0 "$p" 2>/dev/null && fail "$hosts: process $p still runs after down"
  done
  [ -e "$DIR" ] && fail "$hosts: $DIR left behind"
  return 0
}

run_mode local 3
if ip netns add rfs-smoke-probe 2>/dev/null; then
  ip netns del rfs-smoke-probe
  run_mode netns 2
  if ip netns list | grep -q "^rfs"; then fail "network namespaces left: $(ip netns list)"; fi
else
  echo "SKIP netns mode: cannot create network namespaces here"
fi
echo PASS
