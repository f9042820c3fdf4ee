#!/usr/bin/env bash
# A local rangefs cluster on one machine: a real etcd, N storage-node agents
# with their export directories, registered with rangefs-admin, and one
# rangefs-keeper (re-replication and drain; keeper/README.md; log in
# <dir>/logs/keeper.log).
#
#   deploy/local/cluster.sh up [--nodes=4] [--etcd=1|3] [--hosts=local|netns]
#                              [--rate=800mbit] [--dir=DIR] [--cluster=NAME]
#                              [--tls | --insecure]
#                              [--node-flags="--data_listen=off ..."]
#                              [--dead-after=SECONDS] [--nfs[=4|3]]
#   deploy/local/cluster.sh status [--dir=DIR]
#   deploy/local/cluster.sh restart-node ID [--dir=DIR]
#   deploy/local/cluster.sh down   [--dir=DIR] [--purge]
#   deploy/local/cluster.sh exec [--dir=DIR] -- CMD...   (in the client's network)
#
# --hosts=local: everything on 127.0.0.1; each node's export directory is
#   also its clients' "mount" (<dir>/mnt/<node> -> <dir>/exports/<node>).
# --hosts=netns: each node in its own network namespace, joined with the
#   client namespace (which also runs etcd) over veth + a bridge in a third
#   namespace; each node's egress capped with tc tbf at --rate. Addresses
#   (10.250.<tag>.0/24) exist only inside these namespaces, with no route
#   out. Clients use the agent (TCP) path. Agents then listen on network
#   addresses, so this mode needs --tls or --insecure (rangefs-node refuses
#   plaintext off loopback).
# --tls: agents serve mTLS, as in production: <dir>/tls gets a CA, a server
#   certificate per agent (deploy/etcd/make-certs.sh --agents), a writer
#   client certificate rangefs-admin (the agents' --writers; cluster.sh's
#   own rangefs-admin uses it) and a reader rangefs-client (jobs:
#   --agent_ca/--agent_cert/--agent_key of rangefs-bench). The data port is
#   off (plaintext). `up` prints AGENT_TLS_DIR=<dir>/tls too.
# `up` writes <dir>/rangefs.conf (etcd, cluster, mount_root, TLS files)
#   and prints `export RANGEFS_CONFIG=<dir>/rangefs.conf`: with it set,
#   rangefs-admin, rangefs-mount, rangefs-bench and Python's Client() use
#   this cluster, mount path included. Its last line is for scripts:
#   eval "$(cluster.sh up ... | tail -n 1)" sets RANGEFS_CONFIG,
#   RANGEFS_ETCD, RANGEFS_CLUSTER and MOUNT_ROOT.
# --insecure: plaintext agents on network addresses (rangefs-node
#   --insecure; each warns every minute). Benchmarks only.
# --dead-after=SECONDS: the keeper's --dead_after_s (default 600): how long
#   a node is unreachable before its replicas are re-created elsewhere.
# --nfs[=4|3]: also one nfs-ganesha per node (a real userspace NFS server,
#   read-only, config from deploy/node/export.sh --ganesha; in --hosts=netns
#   inside the node's namespace on port 2049), each in private PID/mount
#   namespaces with, for v3, a private rpcbind (deploy/local/ganesha_private.sh);
#   each agent publishes it (rangefs-node --nfs_export=nfs://HOST:PORT/EXPORT
#   ?mountport=P --nfs_version=4|3). `up` and `status` print every export
#   and a libnfs URL for nfs-cat / nfs-ls; logs in <dir>/logs/ganesha-*.log;
#   `down` stops them (SIGTERM, then SIGKILL).
# restart-node ID: stops agent ID if it runs (SIGTERM, then SIGKILL) and
#   starts it again with the same flags; returns once it is live again.
# Each agent serves Prometheus metrics (rangefs-node --metrics_port): `up`
#   and `status` print the URLs (in --hosts=netns, reachable through exec).
# State (pids, endpoints) lives in <dir>/cluster.env; `down` stops every
# process, deletes the namespaces and, with --purge, the directory.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cmd=${1:-}
[ -n "$cmd" ] && shift || true
case "$cmd" in
  -h|--help|help) sed -n '2,55p' "$0"; exit 0 ;;
esac

DIR=/tmp/rangefs-local
NODES=4
ETCD_MEMBERS=1
HOSTS=local
RATE=800mbit
CLUSTER=local
PURGE=0
TLS=0
INSECURE=0
BIN=""
NODE_FLAGS=()
EXEC_ARGS=()
DEAD_AFTER=""
RESTART_ID=""
NFS=0
NFS_VERSION=4
while [ $# -gt 0 ]; do
  case "$1" in
    --dir=*) DIR=${1#*=} ;;
    --nodes=*) NODES=${1#*=} ;;
    --etcd=*) ETCD_MEMBERS=${1#*=} ;;
    --hosts=*) HOSTS=${1#*=} ;;
    --rate=*) RATE=${1#*=} ;;
    --cluster=*) CLUSTER=${1#*=} ;;
    --bin=*) BIN=${1#*=} ;;
    --node-flags=*) read -r -a NODE_FLAGS <<<"${1#*=}" ;;
    --purge) PURGE=1 ;;
    --tls) TLS=1 ;;
    --insecure) INSECURE=1 ;;
    --dead-after=*) DEAD_AFTER=${1#*=} ;;
    --nfs) NFS=1 ;;
    --nfs=*) NFS=1; NFS_VERSION=${1#*=} ;;
    --) shift; EXEC_ARGS=("$@"); break ;;
    -h|--help) sed -n '2,55p' "$0"; exit 0 ;;
    [!-]*) [ "$cmd" = restart-node ] && [ -z "$RESTART_ID" ] || {
        echo "cluster.sh: unknown argument $1" >&2; exit 2; }
      RESTART_ID=$1 ;;
    *) echo "cluster.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
STATE="$DIR/cluster.env"
# A short tag keeps namespace and interface names unique per directory.
TAG=$(printf '%s' "$DIR" | cksum | awk '{print $1 % 200 + 20}')

log() { echo "cluster: $*" >&2; }
die() { echo "cluster: error: $*" >&2; exit 1; }

# free_port: a port no one listens on, drawn from below the kernel's
# ephemeral range (10000 .. ip_local_port_range's low - 1, as
# base/testing/ports.cc): a port from bind(0) is ephemeral, and any
# outgoing connection may take it before our server binds it ("cannot
# listen"). 64 random tries, then bind(0).
free_port() {
  python3 - <<'PY'
import random, socket
try:
    low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
except (OSError, ValueError, IndexError):
    low = 32768
def bindable(port):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        return s.getsockname()[1]
    except OSError:
        return 0
    finally:
        s.close()
for _ in range(64 if low > 10001 else 0):
    port = bindable(random.randrange(10000, low))
    if port:
        print(port)
        break
else:
    print(bindable(0))
PY
}

# in_client CMD...: runs CMD in the client's network (netns or the host).
in_client() {
  if [ "${HOSTS}" = netns ]; then ip netns exec "rfs${TAG}-c" "$@"; else "$@"; fi
}

# TLS material (cluster.sh up --tls); agents' flags and the writer's.
TLS_DIR="$DIR/tls"
admin_tls_flags() {
  if [ "${TLS:-0}" = 1 ]; then
    echo "--agent-ca=$TLS_DIR/ca.crt --agent-cert=$TLS_DIR/rangefs-admin.crt --agent-key=$TLS_DIR/rangefs-admin.key"
  fi
}
admin() {
  # shellcheck disable=SC2046
  in_client "$BIN/rangefs-admin" --etcd="$ETCD_ENDPOINTS" --cluster="$CLUSTER" --no-progress \
    $(admin_tls_flags) "$@"
}

# wait_for DESCRIPTION SECONDS CMD...: polls CMD every 0.1 s, SECONDS*10
# times (longer when CMD is slow). The bounds only end a wait that would
# never end: they leave room for a loaded machine (tests start clusters
# beside builds and other tests).
wait_for() {
  local what=$1 secs=$2; shift 2
  local i
  for ((i = 0; i < secs * 10; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.1
  done
  die "timed out after ${secs}s waiting for $what"
}

build_binaries() {
  if [ -n "$BIN" ]; then return; fi
  log "building rangefs-node, rangefs-admin, rangefs-keeper and rangefs-mount"
  (cd "$ROOT" && bazel build --noshow_progress //storage_node:rangefs-node \
      //admin:rangefs-admin //keeper:rangefs-keeper //mount:rangefs-mount \
      2>&1 | grep -E "ERROR|error:" >&2 || true)
  local bazel_bin
  bazel_bin=$(cd "$ROOT" && bazel info bazel-bin 2>/dev/null)
  [ -x "$bazel_bin/storage_node/rangefs-node" ] || die "build failed"
  BIN="$DIR/bin"
  mkdir -p "$BIN"
  cp -f "$bazel_bin/storage_node/rangefs-node" "$bazel_bin/admin/rangefs-admin" \
    "$bazel_bin/keeper/rangefs-keeper" "$bazel_bin/mount/rangefs-mount" "$BIN/"
}

save_state() {
  cat >"$STATE" <<ENV
HOSTS=$HOSTS
NODES=$NODES
ETCD_MEMBERS=$ETCD_MEMBERS
CLUSTER=$CLUSTER
ETCD_ENDPOINTS=$ETCD_ENDPOINTS
BIN=$BIN
TAG=$TAG
RATE=$RATE
MOUNT_ROOT=$DIR/mnt
TLS=$TLS
NFS=$NFS
NFS_VERSION=$NFS_VERSION
ENV
}

all_live() { admin status 2>/dev/null | grep -q "$NODES node(s), $NODES live"; }

start_bg() {  # start_bg LOGFILE PIDFILE NETNS|- CMD...
  local logf=$1 pidf=$2 ns=$3; shift 3
  if [ "$ns" = - ]; then
    setsid "$@" >>"$logf" 2>&1 < /dev/null &
  else
    setsid ip netns exec "$ns" "$@" >>"$logf" 2>&1 < /dev/null &
  fi
  echo $! >"$pidf"
}

setup_netns() {
  local br="rfs${TAG}-br" i ns
  ip netns add "$br"
  ip -n "$br" link add br0 type bridge
  ip -n "$br" link set br0 up
  for i in c $(seq 1 "$NODES"); do
    ns="rfs${TAG}-$i"
    ip netns add "$ns"
    ip link add "r${TAG}v$i" type veth peer name "r${TAG}b$i"
    ip link set "r${TAG}v$i" netns "$ns"
    ip link set "r${TAG}b$i" netns "$br"
    ip -n "$br" link set "r${TAG}b$i" master br0 up
    ip -n "$ns" link set lo up
    if [ "$i" = c ]; then
      ip -n "$ns" addr add "10.250.${TAG}.1/24" dev "r${TAG}v$i"
    else
      ip -n "$ns" addr add "10.250.${TAG}.$((10 + i))/24" dev "r${TAG}v$i"
      # Cap the node's egress (the data it serves).
      ip netns exec "$ns" tc qdisc add dev "r${TAG}v$i" root tbf rate "$RATE" burst 1mb latency 50ms
    fi
    ip -n "$ns" link set "r${TAG}v$i" up
  done
}

teardown_netns() {
  local ns
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^rfs${TAG}-" || true); do
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
  done
}

stop_processes() {
  local f pid
  for f in "$DIR"/run/*.pid; do
    [ -e "$f" ] || continue
    pid=$(cat "$f")
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  done
  # Agents drain in-flight reads on SIGTERM; give them a moment, then kill.
  for _ in $(seq 1 50); do
    local alive=0
    for f in "$DIR"/run/*.pid; do
      [ -e "$f" ] || continue
      kill -0 "$(cat "$f")" 2>/dev/null && alive=1
    done
    [ "$alive" = 0 ] && break
    sleep 0.1
  done
  for f in "$DIR"/run/*.pid; do
    [ -e "$f" ] || continue
    pid=$(cat "$f")
    kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
    rm -f "$f"
  done
}

cmd_up() {
  [ -e "$STATE" ] && die "a cluster already runs in $DIR (cluster.sh down --dir=$DIR first)"
  [ "$HOSTS" = local ] || [ "$HOSTS" = netns ] || die "--hosts must be local or netns"
  [ "$NODES" -ge 1 ] || die "--nodes must be >= 1"
  [ "$TLS" = 1 ] && [ "$INSECURE" = 1 ] && die "--tls and --insecure exclude each other"
  [ "$NFS_VERSION" = 4 ] || [ "$NFS_VERSION" = 3 ] || die "--nfs must be 4 or 3, not '$NFS_VERSION'"
  if [ "$NFS" = 1 ]; then
    [ -x /usr/bin/ganesha.nfsd ] && [ -e /usr/lib/x86_64-linux-gnu/ganesha/libfsalvfs.so ] \
      && command -v nfs-ls >/dev/null && command -v rpcbind >/dev/null \
      || die "--nfs needs nfs-ganesha, nfs-ganesha-vfs, rpcbind and libnfs-utils (deploy/install-deps.sh)"
  fi
  [ -z "$DEAD_AFTER" ] || [[ "$DEAD_AFTER" =~ ^[0-9]+([.][0-9]+)?$ ]] ||
    die "--dead-after must be a number of seconds, not '$DEAD_AFTER'"
  if [ "$HOSTS" = netns ] && [ "$TLS" = 0 ] && [ "$INSECURE" = 0 ]; then
    die "--hosts=netns: agents listen on veth addresses, and rangefs-node serves a network address only with mTLS; pass --tls (mTLS, certificates made here) or --insecure (plaintext, benchmarks only)"
  fi
  # A fresh cluster: no data of a previous one (its bin/ stays).
  rm -rf "$DIR/run" "$DIR/logs" "$DIR/exports" "$DIR/mnt" "$DIR/etcd" "$DIR/nfs" "$TLS_DIR"
  mkdir -p "$DIR/run" "$DIR/logs" "$DIR/exports" "$DIR/mnt" "$DIR/etcd"
  build_binaries
  trap 'log "start-up failed; tearing down"; cmd_down; exit 1' ERR
  local i ns etcd_ip peers=() eps=()
  if [ "$HOSTS" = netns ]; then
    setup_netns
    etcd_ip="10.250.${TAG}.1"
  else
    etcd_ip=127.0.0.1
  fi
  # etcd
  local cports=() pports=()
  for ((i = 0; i < ETCD_MEMBERS; i++)); do
    if [ "$HOSTS" = netns ]; then
      cports[$i]=$((2379 + 10 * i)); pports[$i]=$((2380 + 10 * i))
    else
      cports[$i]=$(free_port); pports[$i]=$(free_port)
    fi
    peers+=("m$i=http://$etcd_ip:${pports[$i]}")
    eps+=("$etcd_ip:${cports[$i]}")
  done
  ETCD_ENDPOINTS=$(IFS=,; echo "${eps[*]}")
  local initial
  initial=$(IFS=,; echo "${peers[*]}")
  for ((i = 0; i < ETCD_MEMBERS; i++)); do
    start_bg "$DIR/logs/etcd-m$i.log" "$DIR/run/etcd-m$i.pid" \
      "$([ "$HOSTS" = netns ] && echo "rfs${TAG}-c" || echo -)" \
      /usr/bin/etcd --name "m$i" --data-dir "$DIR/etcd/m$i" \
      --listen-client-urls "http://$etcd_ip:${cports[$i]}" \
      --advertise-client-urls "http://$etcd_ip:${cports[$i]}" \
      --listen-peer-urls "http://$etcd_ip:${pports[$i]}" \
      --initial-advertise-peer-urls "http://$etcd_ip:${pports[$i]}" \
      --initial-cluster "$initial" --initial-cluster-state new \
      --initial-cluster-token "rangefs-$CLUSTER" --logger=zap --log-level=warn \
      --auto-compaction-mode=revision --auto-compaction-retention=100000
  done
  save_state
  wait_for "etcd" 120 admin node list
  log "etcd up at $ETCD_ENDPOINTS"
  # nodes: addresses first (agent certificates name them)
  local addrs=() agents=()
  for i in $(seq 1 "$NODES"); do
    if [ "$HOSTS" = netns ]; then
      addrs[$i]="10.250.${TAG}.$((10 + i)):7070"
      agents+=("n$i@10.250.${TAG}.$((10 + i))")
    else
      addrs[$i]="127.0.0.1:$(free_port)"
      agents+=("n$i")
    fi
  done
  if [ "$TLS" = 1 ]; then
    bash "$ROOT/deploy/etcd/make-certs.sh" "$TLS_DIR" --members= \
      --agents="$(IFS=,; echo "${agents[*]}")" --clients=rangefs-admin,rangefs-client,rangefs-keeper,rangefs-node >/dev/null
    log "agent certificates in $TLS_DIR (writers rangefs-admin and rangefs-keeper, reader rangefs-client)"
  fi
  for i in $(seq 1 "$NODES"); do
    local id="n$i" export="$DIR/exports/n$i" addr=${addrs[$i]} sec=()
    mkdir -p "$export"
    if [ "$HOSTS" = netns ]; then
      ns="rfs${TAG}-$i"
    else
      ns=-
      ln -sfn "$export" "$DIR/mnt/$id"
    fi
    if [ "$TLS" = 1 ]; then
      sec=(--tls_cert="$TLS_DIR/$id.crt" --tls_key="$TLS_DIR/$id.key"
           --tls_client_ca="$TLS_DIR/ca.crt" --writers=rangefs-admin,rangefs-keeper
           --peer_tls_ca="$TLS_DIR/ca.crt" --peer_tls_cert="$TLS_DIR/rangefs-node.crt"
           --peer_tls_key="$TLS_DIR/rangefs-node.key")
    elif [ "$INSECURE" = 1 ]; then
      sec=(--insecure)
    fi
    local nfs=()
    if [ "$NFS" = 1 ]; then
      start_ganesha "$i" "$export" "$ns"
      nfs=(--nfs_export="$(cat "$DIR/run/nfs-n$i.url")" --nfs_version="$NFS_VERSION")
    fi
    admin node add "$id" --address="$addr" --export="$export" --zone="z$(( (i - 1) % 2 ))" >/dev/null
    local metrics
    metrics=$(metrics_flags "$i")
    # shellcheck disable=SC2086
    save_agent "$id" "$ns" "$BIN/rangefs-node" --node_id="$id" --export_root="$export" \
      --listen="$addr" --etcd_endpoints="$ETCD_ENDPOINTS" --cluster="$CLUSTER" \
      ${sec[@]+"${sec[@]}"} $metrics ${nfs[@]+"${nfs[@]}"} ${NODE_FLAGS[@]+"${NODE_FLAGS[@]}"}
    start_agent "$id"
  done
  for i in $(seq 1 "$NODES"); do
    wait_for "node n$i serving" 120 grep -q "serving on" "$DIR/logs/node-n$i.log"
  done
  wait_for "live records of $NODES nodes" 120 all_live
  local ksec=()
  if [ "$TLS" = 1 ]; then
    ksec=(--agent_ca="$TLS_DIR/ca.crt" --agent_cert="$TLS_DIR/rangefs-keeper.crt"
          --agent_key="$TLS_DIR/rangefs-keeper.key")
  fi
  if [ -x "$BIN/rangefs-keeper" ]; then
    start_bg "$DIR/logs/keeper.log" "$DIR/run/keeper.pid" \
      "$([ "$HOSTS" = netns ] && echo "rfs${TAG}-c" || echo -)" \
      "$BIN/rangefs-keeper" --etcd_endpoints="$ETCD_ENDPOINTS" --cluster="$CLUSTER" \
      --id=local-keeper ${ksec[@]+"${ksec[@]}"} \
      ${DEAD_AFTER:+--dead_after_s="$DEAD_AFTER"}
    wait_for "rangefs-keeper active" 120 grep -q "is active" "$DIR/logs/keeper.log"
  else
    log "no $BIN/rangefs-keeper: running without a keeper"
  fi
  trap - ERR
  local security=plaintext
  [ "$TLS" = 1 ] && security=mTLS
  [ "$INSECURE" = 1 ] && security="INSECURE (--insecure)"
  log "up: $NODES node(s), etcd $ETCD_ENDPOINTS, cluster '$CLUSTER', hosts=$HOSTS, agents $security, dir $DIR"
  print_metrics
  print_nfs
  write_config
  log "the tools are in $BIN; every tool, rangefs-mount and Python use this cluster (fast path included) after:"
  echo "export RANGEFS_CONFIG=$DIR/rangefs.conf"
  echo "RANGEFS_CONFIG=$DIR/rangefs.conf RANGEFS_ETCD=$ETCD_ENDPOINTS RANGEFS_CLUSTER=$CLUSTER MOUNT_ROOT=$DIR/mnt$([ "$TLS" = 1 ] && echo " AGENT_TLS_DIR=$TLS_DIR")"
}

# <dir>/rangefs.conf: the shared config file (base/config.h) of this
# cluster, which every tool reads through $RANGEFS_CONFIG: etcd, the
# cluster name, the clients' mount root (the node exports, so that reads
# take the mount path) and, with --tls, the reader certificate.
write_config() {
  {
    echo "# written by deploy/local/cluster.sh up"
    echo "etcd_endpoints = $ETCD_ENDPOINTS"
    echo "cluster = $CLUSTER"
    [ "$HOSTS" = local ] && echo "mount_root = $DIR/mnt"
    if [ "$TLS" = 1 ]; then
      echo "agent_ca = $TLS_DIR/ca.crt"
      echo "agent_cert = $TLS_DIR/rangefs-client.crt"
      echo "agent_key = $TLS_DIR/rangefs-client.key"
    fi
  } >"$DIR/rangefs.conf"
}

load_state() {
  [ -e "$STATE" ] || die "no cluster in $DIR (cluster.sh up first)"
  # shellcheck disable=SC1090
  source "$STATE"
}

cmd_status() {
  load_state
  admin status
  print_metrics
  print_nfs
}

# start_ganesha I EXPORT NETNS|-: node I's nfs-ganesha, serving EXPORT
# read-only (config written by deploy/node/export.sh --ganesha), in private
# namespaces (ganesha_private.sh); returns once it answers nfs-ls. Writes
# <dir>/run/nfs-n<I>.url (the agent's --nfs_export) and .libnfs (a libnfs
# URL of the export for nfs-cat / nfs-ls).
start_ganesha() {
  local i=$1 export=$2 ns=$3 host port mport clients bind protocols=4 v3=()
  if [ "$HOSTS" = netns ]; then
    host="10.250.${TAG}.$((10 + i))"; port=2049; mport=20048
    clients="10.250.${TAG}.0/24"; bind=$host
  else
    # Every address (no --bind): ganesha cannot resolve 127.0.0.1 where
    # loopback is the only interface; only 127.0.0.1 is admitted.
    host=127.0.0.1; port=$(free_port); mport=$(free_port)
    clients=127.0.0.1; bind=""
  fi
  if [ "$NFS_VERSION" = 3 ]; then protocols=3,4; v3=(--v3); fi
  mkdir -p "$DIR/nfs"
  bash "$ROOT/deploy/node/export.sh" --ganesha --export="$export" --clients="$clients" \
    --bind="$bind" --nfs-port="$port" --mount-port="$mport" --protocols="$protocols" \
    --ganesha-conf="$DIR/nfs/n$i.conf" --recovery="$DIR/nfs/n$i.recovery" --no-restart \
    >>"$DIR/logs/ganesha-n$i.log" || die "writing the ganesha config of n$i failed"
  start_bg "$DIR/logs/ganesha-n$i.log" "$DIR/run/ganesha-n$i.pid" "$ns" \
    /bin/sh "$ROOT/deploy/local/ganesha_private.sh" ${v3[@]+"${v3[@]}"} \
    "$DIR/nfs/n$i.conf" "$DIR/logs/ganesha-n$i.nfsd.log"
  local url="nfs://$host:$port$export?mountport=$mport"
  [ "$port" = 2049 ] && url="nfs://$host$export?mountport=$mport"
  echo "$url" >"$DIR/run/nfs-n$i.url"
  echo "nfs://$host$export?version=$NFS_VERSION&nfsport=$port&mountport=$mport" >"$DIR/run/nfs-n$i.libnfs"
  wait_for "nfs-ganesha of n$i answering on $host:$port" 60 \
    in_client timeout 2 nfs-ls "$(cat "$DIR/run/nfs-n$i.libnfs")"
}

print_nfs() {
  local f id u
  for f in "$DIR"/run/nfs-n*.url; do
    [ -e "$f" ] || continue
    id=${f##*/nfs-}; id=${id%.url}
    u=$(cat "$DIR/run/nfs-$id.libnfs")
    log "node $id NFS export $(cat "$f") (v$NFS_VERSION; read with: nfs-cat '${u%%\?*}/PATH?${u#*\?}')"
  done
}

# Agent metrics: a free loopback port each (--hosts=local), or port 9470 on
# the node's own address (--hosts=netns: 127.0.0.1 there is the node's).
metrics_flags() {  # metrics_flags I
  local i=$1 host=127.0.0.1 port
  if [ "$HOSTS" = netns ]; then
    host="10.250.${TAG}.$((10 + i))"; port=9470
    echo "--metrics_address=$host --metrics_port=$port"
  else
    port=$(free_port)
    echo "--metrics_port=$port"
  fi
  echo "http://$host:$port/metrics" >"$DIR/run/node-n$i.metrics"
}

print_metrics() {
  local f
  for f in "$DIR"/run/node-*.metrics; do
    [ -e "$f" ] || continue
    f=${f##*/node-}
    log "agent ${f%.metrics} metrics at $(cat "$DIR/run/node-$f")"
  done
}

# save_agent ID NETNS|- CMD...: records how agent ID is started (for
# restart-node); start_agent ID starts it so, appending to its log.
save_agent() {
  local id=$1; shift
  printf '%s\0' "$@" >"$DIR/run/node-$id.args"
}
start_agent() {
  local id=$1 argv=()
  mapfile -d '' argv <"$DIR/run/node-$id.args"
  start_bg "$DIR/logs/node-$id.log" "$DIR/run/node-$id.pid" "${argv[@]}"
}

serving_count() { grep -c "serving on" "$DIR/logs/node-$1.log" 2>/dev/null || true; }
serving_more() { [ "$(serving_count "$1")" -gt "$2" ]; }  # serving_more ID N

node_live() {  # node_live ID: its status row says live "yes"
  admin status 2>/dev/null | awk -v id="$1" '$1 == id && $3 == "yes" {f = 1} END {exit !f}'
}

cmd_restart_node() {
  load_state
  local id=$RESTART_ID pid serving
  [ -n "$id" ] || die "restart-node: give a node id (n1 .. n$NODES)"
  [ -e "$DIR/run/node-$id.args" ] || die "restart-node: no agent $id in $DIR"
  if [ -e "$DIR/run/node-$id.pid" ]; then
    pid=$(cat "$DIR/run/node-$id.pid")
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
  fi
  serving=$(serving_count "$id")
  start_agent "$id"
  wait_for "node $id serving again" 120 serving_more "$id" "$serving"
  wait_for "node $id live" 120 node_live "$id"
  log "$id restarted (pid $(cat "$DIR/run/node-$id.pid"))"
}

cmd_down() {
  if [ -e "$STATE" ]; then
    # shellcheck disable=SC1090
    source "$STATE" || true
  fi
  stop_processes
  teardown_netns
  rm -f "$STATE"
  if [ "$PURGE" = 1 ]; then rm -rf "$DIR"; fi
  log "down ($DIR)"
}

cmd_exec() {
  load_state
  [ "${#EXEC_ARGS[@]}" -gt 0 ] || die "exec: give a command after --"
  RANGEFS_ETCD=$ETCD_ENDPOINTS RANGEFS_CLUSTER=$CLUSTER in_client "${EXEC_ARGS[@]}"
}

case "$cmd" in
  up) cmd_up ;;
  status) cmd_status ;;
  down) cmd_down ;;
  exec) cmd_exec ;;
  restart-node) cmd_restart_node ;;
  *) echo "usage: cluster.sh up|status|down|exec|restart-node [options] (see --help)" >&2; exit 2 ;;
esac
