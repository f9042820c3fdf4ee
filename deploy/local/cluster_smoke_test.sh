#!/usr/bin/env bash
# Smoke test of deploy/local/cluster.sh: up (real etcd + agents), ingest a
# small file with rangefs-admin, read it back verified with rangefs-bench,
# status, down — in local mode (plaintext on loopback) and in netns mode
# (capped veth links) with --tls: agents serve mTLS, cluster.sh's admin
# ingests with the writer certificate, the job reads with the reader's, and
# a reader cannot ingest. Also: netns mode without --tls/--insecure is
# refused; in local mode (--dead-after=3600) an agent's metrics URL
# answers, kill -9 of agent n1 shows in status as unreachable with files
# at risk and a countdown, and restart-node n1 brings it back live.
# --nfs (v4 in local mode, v3 in netns mode): one nfs-ganesha per node, each
# agent's live record carries its export, nfs-cat reads an object through
# node n1's ganesha byte-exact, and down leaves no ganesha or rpcbind.
# Checks that nothing is left behind: no processes, no namespaces.
set -uo pipefail
RF="$TEST_SRCDIR/$TEST_WORKSPACE"
# Namespaces, veths and mounts die with the test, even when it is killed.
source "$RF/tests/testing/private_namespaces.sh"
BIN="$TEST_TMPDIR/bin"
mkdir -p "$BIN"
cp "$RF/storage_node/rangefs-node" "$RF/admin/rangefs-admin" \
   "$RF/keeper/rangefs-keeper" "$RF/tests/bench/rangefs-bench" "$BIN/"
CLUSTER_SH="$RF/deploy/local/cluster.sh"
fail() { echo "FAIL: $*"; for f in "$DIR"/logs/*.log; do echo "--- $f"; tail -5 "$f"; done; bash "$CLUSTER_SH" down --dir="$DIR" >/dev/null 2>&1; exit 1; }

run_mode() {
  local hosts=$1 nodes=$2 security=$3
  DIR="$TEST_TMPDIR/c-$hosts"
  local env
  AGENT_TLS_DIR=""
  env=$(bash "$CLUSTER_SH" up --dir="$DIR" --nodes="$nodes" --hosts="$hosts" $security \
        --bin="$BIN" --cluster=smoke --rate=400mbit | tail -n 1) || fail "$hosts: up failed"
  eval "$env"
  local writer=() reader=()
  if [[ " $security " == *" --tls "* ]]; then
    [ -s "$AGENT_TLS_DIR/ca.crt" ] || fail "$hosts: no AGENT_TLS_DIR from up: $env"
    local give_up=$((SECONDS + 60))  # the line follows "serving on" closely
    until grep -q "(mTLS)" "$DIR/logs/node-n1.log" || [ "$SECONDS" -ge "$give_up" ]; do
      sleep 0.1
    done
    grep -q "(mTLS)" "$DIR/logs/node-n1.log" || fail "$hosts: agent n1 is not serving mTLS"
    local t=$AGENT_TLS_DIR
    writer=(--agent-ca="$t/ca.crt" --agent-cert="$t/rangefs-admin.crt" --agent-key="$t/rangefs-admin.key")
    reader=(--agent_ca="$t/ca.crt" --agent_cert="$t/rangefs-client.crt" --agent_key="$t/rangefs-client.key")
  fi
  mkdir -p "$TEST_TMPDIR/data-$hosts/d"
  head -c 3000000 /dev/urandom >"$TEST_TMPDIR/data-$hosts/d/f1"
  head -c 5000 /dev/urandom >"$TEST_TMPDIR/data-$hosts/d/f2"
  for f in f1 f2; do
    bash "$CLUSTER_SH" exec --dir="$DIR" -- "$BIN/rangefs-admin" --etcd="$RANGEFS_ETCD" \
      --cluster=smoke --no-progress ${writer[@]+"${writer[@]}"} file put \
      "$TEST_TMPDIR/data-$hosts/d/$f" "/d/$f" --replicas=2 --stripe-unit=1M >/dev/null \
      || fail "$hosts: put $f"
  done
  if [[ " $security " == *" --tls "* ]]; then
    # The reader's certificate cannot ingest.
    local t=$AGENT_TLS_DIR out
    if out=$(bash "$CLUSTER_SH" exec --dir="$DIR" -- "$BIN/rangefs-admin" --etcd="$RANGEFS_ETCD" \
        --cluster=smoke --no-progress --agent-ca="$t/ca.crt" --agent-cert="$t/rangefs-client.crt" \
        --agent-key="$t/rangefs-client.key" file put "$TEST_TMPDIR/data-$hosts/d/f2" /d/f3 \
        --replicas=1 2>&1); then
      fail "$hosts: the reader certificate ingested /d/f3"
    fi
    echo "$out" | grep -q "PERMISSION_DENIED" || fail "$hosts: reader put: $out"
  fi
  local path=auto
  [ "$hosts" = netns ] && path=agent
  bash "$CLUSTER_SH" exec --dir="$DIR" -- "$BIN/rangefs-bench" --etcd="$RANGEFS_ETCD" \
    --cluster=smoke --mount_root="$MOUNT_ROOT" --data_path="$path" --workload=scan \
    ${reader[@]+"${reader[@]}"} --once --threads=2 --verify_against="$TEST_TMPDIR/data-$hosts" \
    --json >"$TEST_TMPDIR/scan-$hosts.json" || fail "$hosts: read job: $(cat "$TEST_TMPDIR/scan-$hosts.json")"
  grep -q '"bytes": 3005000' "$TEST_TMPDIR/scan-$hosts.json" || fail "$hosts: bytes read: $(cat "$TEST_TMPDIR/scan-$hosts.json")"
  grep -q '"mismatches": 0' "$TEST_TMPDIR/scan-$hosts.json" || fail "$hosts: mismatches"
  bash "$CLUSTER_SH" status --dir="$DIR" | grep -q "$nodes node(s), $nodes live" || fail "$hosts: status"
  if [ "$hosts" = local ]; then
    # The one export line: rangefs-admin and rangefs-bench with no flags use
    # this cluster (mount path included: mount_root is in the file).
    [ -s "$RANGEFS_CONFIG" ] || fail "no config file from up: $env"
    grep -q "^mount_root = $DIR/mnt" "$RANGEFS_CONFIG" || fail "config: $(cat "$RANGEFS_CONFIG")"
    (unset RANGEFS_ETCD RANGEFS_CLUSTER; export RANGEFS_CONFIG
     "$BIN/rangefs-admin" file ls /d) >"$TEST_TMPDIR/ls-conf" 2>&1 \
      || fail "admin with RANGEFS_CONFIG: $(cat "$TEST_TMPDIR/ls-conf")"
    grep -q "^/d/f1 " "$TEST_TMPDIR/ls-conf" || fail "admin with RANGEFS_CONFIG: $(cat "$TEST_TMPDIR/ls-conf")"
    (unset RANGEFS_ETCD RANGEFS_CLUSTER; export RANGEFS_CONFIG
     "$BIN/rangefs-bench" --workload=scan --once --threads=2 --data_path=mount \
       --verify_against="$TEST_TMPDIR/data-$hosts" --json) >"$TEST_TMPDIR/scan-conf.json" 2>&1 \
      || fail "bench with RANGEFS_CONFIG: $(cat "$TEST_TMPDIR/scan-conf.json")"
    grep -q '"mismatches": 0' "$TEST_TMPDIR/scan-conf.json" || fail "bench with RANGEFS_CONFIG: $(cat "$TEST_TMPDIR/scan-conf.json")"
  fi
  check_nfs "$hosts"
  [ "$hosts" = local ] && check_unreachable_and_restart "$nodes"
  local pids p
  pids=$(cat "$DIR"/run/*.pid)
  # ganesha runs as the child of its launcher (the pid file's process).
  for p in $(cat "$DIR"/run/ganesha-*.pid); do
    pids="$pids $(cat "/proc/$p/task/$p/children" 2>/dev/null)"
  done
  bash "$CLUSTER_SH" down --dir="$DIR" --purge >/dev/null 2>&1 || fail "$hosts: down"
  for p in $pids; do
    kill -0 "$p" 2>/dev/null && fail "$hosts: process $p still runs after down"
  done
  [ -e "$DIR" ] && fail "$hosts: $DIR left behind"
  return 0
}

# --nfs: node n1's ganesha serves one of its objects byte-exact to nfs-cat
# (libnfs, in the client's network), and its live record names the export.
check_nfs() {
  local hosts=$1 object libnfs url got="$TEST_TMPDIR/nfs-got-$hosts"
  [ -s "$DIR/run/nfs-n1.libnfs" ] || fail "$hosts: no NFS export for n1 (up --nfs)"
  local status
  status=$(bash "$CLUSTER_SH" status --dir="$DIR" 2>&1) || fail "$hosts: status: $status"
  grep -q "node n1 NFS export nfs://" <<<"$status" \
    || fail "$hosts: status does not show n1's NFS export: $status"
  object=$(cd "$DIR/exports/n1" && find f -type f ! -name '.*' | head -n 1)
  [ -n "$object" ] || fail "$hosts: no object on n1"
  libnfs=$(cat "$DIR/run/nfs-n1.libnfs")
  url="${libnfs%%\?*}/$object?${libnfs#*\?}"
  bash "$CLUSTER_SH" exec --dir="$DIR" -- timeout 30 nfs-cat "$url" >"$got" \
    || fail "$hosts: nfs-cat $url: $(tail -5 "$DIR/logs/ganesha-n1.nfsd.log")"
  cmp "$got" "$DIR/exports/n1/$object" || fail "$hosts: nfs-cat returned other bytes for $object"
  [ -s "$got" ] || fail "$hosts: $object is empty"
  if command -v etcdctl >/dev/null; then
    local live
    live=$(ETCDCTL_API=3 bash "$CLUSTER_SH" exec --dir="$DIR" -- etcdctl --endpoints="$RANGEFS_ETCD" \
      get /rangefs/v1/smoke/live/n1 --print-value-only | tr -d '\0') || fail "$hosts: etcdctl get"
    grep -aqF "$(cat "$DIR/run/nfs-n1.url")" <<<"$live" || fail "$hosts: n1's live record lacks its NFS export"
  fi
}

# Local mode, up with --dead-after=3600: each agent's metrics URL (status
# prints them) answers Prometheus text; kill -9 of agent n1: status names
# it unreachable at once (once its lease expires), and the keeper's record
# shows files at risk with a countdown (nothing healed for an hour);
# restart-node n1 brings it back live.
check_unreachable_and_restart() {
  local nodes=$1 out url give_up
  out=$(bash "$CLUSTER_SH" status --dir="$DIR" 2>&1) || fail "local: status"
  url=$(echo "$out" | sed -n 's/.*agent n1 metrics at \(http[^ ]*\).*/\1/p')
  [ -n "$url" ] || fail "local: no metrics URL for n1 in status: $out"
  python3 -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())' \
    "$url" >"$TEST_TMPDIR/n1.metrics" || fail "local: scraping $url"
  grep -q '^rangefs_node_info{node="n1"} 1' "$TEST_TMPDIR/n1.metrics" &&
    grep -q '^rangefs_node_free_bytes [1-9]' "$TEST_TMPDIR/n1.metrics" ||
    fail "local: n1 metrics: $(head -c 600 "$TEST_TMPDIR/n1.metrics")"
  kill -KILL "$(cat "$DIR/run/node-n1.pid")"
  give_up=$((SECONDS + 90))  # the agent's lease TTL (10 s), a keeper round (5 s)
  until out=$(bash "$CLUSTER_SH" status --dir="$DIR" 2>/dev/null) &&
      echo "$out" | grep -q "1 unreachable (n1)" &&
      echo "$out" | grep -Eq "[1-9][0-9]* file\(s\) \([^)]*\) at risk on unreachable node\(s\); healing starts in (59m|1h)" ||
      [ "$SECONDS" -ge "$give_up" ]; do
    sleep 0.5
  done
  echo "$out" | grep -q "1 unreachable (n1)" || fail "local: status after kill -9 of n1: $out"
  echo "$out" | grep -Eq "at risk on unreachable node\(s\); healing starts in (59m|1h)" ||
    fail "local: no at-risk countdown after kill -9 of n1: $out"
  echo "$out" | grep -q "0 replica move(s) to do" || fail "local: the keeper moves replicas of n1: $out"
  bash "$CLUSTER_SH" restart-node n1 --dir="$DIR" >/dev/null 2>&1 || fail "local: restart-node n1"
  bash "$CLUSTER_SH" status --dir="$DIR" 2>/dev/null | grep -q "$nodes node(s), $nodes live;" ||
    fail "local: n1 not live after restart-node"
}

bash "$CLUSTER_SH" --help | grep -q -- "--dead-after=SECONDS" || fail "--help lacks --dead-after"
bash "$CLUSTER_SH" --help | grep -q "restart-node ID" || fail "--help lacks restart-node"
bash "$CLUSTER_SH" --help | grep -q -- "--nfs" || fail "--help lacks --nfs"
run_mode local 3 "--dead-after=3600 --nfs"
if ip netns add rfs-smoke-probe 2>/dev/null; then
  ip netns del rfs-smoke-probe
  DIR="$TEST_TMPDIR/c-refused"
  if out=$(bash "$CLUSTER_SH" up --dir="$DIR" --nodes=1 --hosts=netns --bin="$BIN" 2>&1); then
    fail "netns mode without --tls or --insecure came up"
  fi
  echo "$out" | grep -q -- "--tls" || fail "netns refusal does not say what to do: $out"
  run_mode netns 2 "--tls --nfs=3"
  # This run's namespaces only (cluster.sh names them rfs<TAG>-*, TAG from
  # the cluster dir): other tests' clusters may run on the machine meanwhile.
  tag=$(printf '%s' "$TEST_TMPDIR/c-netns" | cksum | awk '{print $1 % 200 + 20}')
  if ip netns list | grep -q "^rfs${tag}-"; then fail "network namespaces left: $(ip netns list)"; fi
else
  echo "SKIP netns mode: cannot create network namespaces here"
fi
echo PASS
