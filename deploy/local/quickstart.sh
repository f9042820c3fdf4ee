#!/usr/bin/env bash
# The README main-job command. On a fresh Debian machine: installs what is
# missing, builds, starts a local cluster (real etcd + 4 storage nodes),
# ingests a generated crawl-like dataset with 2 replicas, runs a parallel
# read job through the client library that verifies every byte, and prints
# a report. The cluster stays up (stop it with the printed command), or use
# --down to stop it at the end.
#
#   deploy/local/quickstart.sh [--nodes=4] [--big=3] [--big-size=256M]
#                              [--small=200] [--dir=/tmp/rangefs-quickstart]
#                              [--down] [--nfs[=4|3]]
#
# --nfs: the storage nodes are also served by real NFS servers (one
# nfs-ganesha per node, cluster.sh up --nfs) and the read jobs read over
# NFS in userspace (rangefs-bench --data_path=nfs: libnfs, no kernel
# mount); the report names the data path.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"

NODES=4
BIG=3
BIG_SIZE=256M
SMALL=200
DIR=/tmp/rangefs-quickstart
DOWN=0
NFS=""
for arg in "$@"; do
  case "$arg" in
    --nodes=*) NODES=${arg#*=} ;;
    --big=*) BIG=${arg#*=} ;;
    --big-size=*) BIG_SIZE=${arg#*=} ;;
    --small=*) SMALL=${arg#*=} ;;
    --dir=*) DIR=${arg#*=} ;;
    --down) DOWN=1 ;;
    --nfs) NFS=4 ;;
    --nfs=*) NFS=${arg#*=} ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "quickstart: unknown argument $arg" >&2; exit 2 ;;
  esac
done

say() { echo "==> $*"; }
case "$NFS" in
  "") DATA_PATH=auto; CLUSTER_NFS=() ;;
  3|4) DATA_PATH=nfs; CLUSTER_NFS=(--nfs="$NFS") ;;
  *) echo "quickstart: --nfs must be 4 or 3, not '$NFS'" >&2; exit 2 ;;
esac

say "installing missing Debian packages (deploy/install-deps.sh)"
bash deploy/install-deps.sh

say "building rangefs (bazel, offline)"
bazel build -c opt --noshow_progress //storage_node:rangefs-node \
  //admin:rangefs-admin //keeper:rangefs-keeper //tests/bench:rangefs-bench 2>&1 \
  | grep -E "^(ERROR|FAILED)" || true
BAZEL_BIN=$(bazel info -c opt bazel-bin 2>/dev/null)
BIN="$DIR/bin"
mkdir -p "$BIN"
for b in storage_node/rangefs-node admin/rangefs-admin keeper/rangefs-keeper \
         tests/bench/rangefs-bench; do
  [ -x "$BAZEL_BIN/$b" ] || { echo "quickstart: build of $b failed" >&2; exit 1; }
  cp -f "$BAZEL_BIN/$b" "$BIN/"
done

if [ -e "$DIR/cluster/cluster.env" ]; then
  say "stopping the previous quickstart cluster"
  deploy/local/cluster.sh down --dir="$DIR/cluster"
fi
say "starting a local cluster: etcd + $NODES storage nodes${NFS:+, each behind an nfs-ganesha (NFSv$NFS)}"
eval "$(deploy/local/cluster.sh up --dir="$DIR/cluster" --nodes="$NODES" \
  --bin="$BIN" --cluster=quickstart ${CLUSTER_NFS[@]+"${CLUSTER_NFS[@]}"} | tail -n 1)"
export RANGEFS_ETCD RANGEFS_CLUSTER
trap 'echo "quickstart: failed; stopping the cluster (logs in $DIR/cluster/logs)" >&2; deploy/local/cluster.sh down --dir="$DIR/cluster"' ERR
ADMIN=("$BIN/rangefs-admin" --etcd="$RANGEFS_ETCD" --cluster="$RANGEFS_CLUSTER")

say "generating a crawl-like dataset: $BIG x $BIG_SIZE segments + $SMALL small files"
DATA="$DIR/data"
rm -rf "$DATA"
mkdir -p "$DATA/crawl/segments" "$DATA/crawl/index"
gen() {  # gen FILE BYTES SEED: fast deterministic pseudo-random bytes
  # (openssl dies of SIGPIPE when head has enough: not an error)
  { openssl enc -aes-128-ctr -nosalt -pass "pass:rangefs-$3" -pbkdf2 \
      </dev/zero 2>/dev/null || true; } | head -c "$2" >"$1"
  [ "$(stat -c %s "$1")" = "$2" ]
}
big_bytes=$(numfmt --from=iec "$BIG_SIZE")
for i in $(seq 1 "$BIG"); do
  gen "$DATA/crawl/segments/seg-$(printf %04d "$i").warc" "$big_bytes" "seg$i"
done
for i in $(seq 1 "$SMALL"); do
  gen "$DATA/crawl/index/part-$(printf %05d "$i")" $(( (i * 7919) % 61440 + 4096 )) "idx$i"
done

say "ingesting through the node agents (rangefs-admin file put, 2 replicas)"
t0=$(date +%s.%N)
( cd "$DATA" && find crawl -type f | sort ) | while read -r rel; do
  "${ADMIN[@]}" --no-progress file put "$DATA/$rel" "/$rel" --replicas=2 >/dev/null
done
t1=$(date +%s.%N)
total_bytes=$(du -sb "$DATA" | awk '{print $1}')
"${ADMIN[@]}" status

say "read job: every file scanned once in parallel, every byte verified"
"$BIN/rangefs-bench" --etcd="$RANGEFS_ETCD" --cluster="$RANGEFS_CLUSTER" \
  --mount_root="$DIR/cluster/mnt" --data_path="$DATA_PATH" --workload=scan --once --threads=4 \
  --verify_against="$DATA" --json >"$DIR/scan.json"
say "lookup job: 4 KiB random ReadV batches for 3 s, verified"
"$BIN/rangefs-bench" --etcd="$RANGEFS_ETCD" --cluster="$RANGEFS_CLUSTER" \
  --mount_root="$DIR/cluster/mnt" --data_path="$DATA_PATH" --workload=lookup --threads=4 --duration_s=3 \
  --verify_against="$DATA" --json >"$DIR/lookup.json"

python3 - "$DIR/scan.json" "$DIR/lookup.json" "$total_bytes" "$t0" "$t1" "$DATA_PATH" "$NFS" <<'PY'
import json, sys
scan = json.load(open(sys.argv[1])); look = json.load(open(sys.argv[2]))
total, t0, t1 = int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
data_path, nfs = sys.argv[6], sys.argv[7]
print()
print("rangefs quickstart report")
print("-------------------------")
if data_path == "nfs":
    print(f"data path         nfs: libnfs (userspace) to one nfs-ganesha per node, NFSv{nfs}")
else:
    print(f"data path         {data_path}")
print(f"dataset           {total/1e6:.1f} MB in {scan['files']} files, ingested in {t1-t0:.1f} s "
      f"({total/1e6/(t1-t0):.0f} MB/s, 2 replicas)")
print(f"scan              {scan['gbps']:.2f} GB/s, {scan['bytes']/1e6:.1f} MB read, "
      f"p50 {scan['p50_us']/1e3:.2f} ms, p99 {scan['p99_us']/1e3:.2f} ms per 4 MiB call")
print(f"verified          {scan['bytes']} bytes, {scan['mismatches']} mismatches, {scan['errors']} errors")
print(f"lookup            {look['iops']:.0f} x 4 KiB reads/s, batch p50 {look['p50_us']/1e3:.2f} ms, "
      f"p99 {look['p99_us']/1e3:.2f} ms, {look['mismatches']} mismatches")
print(f"retries/hedges    scan {scan['retries']}/{scan['hedges']}, lookup {look['retries']}/{look['hedges']}")
print("bytes per node    " + ", ".join(f"{k} {v/1e6:.0f} MB" for k, v in sorted(scan["nodes"].items())))
ok = scan["mismatches"] == 0 and scan["errors"] == 0 and look["mismatches"] == 0 and look["errors"] == 0
if data_path == "nfs":
    # The library's own count of attempts per node and path: over NFS, and
    # none to an agent (the fallback when a node's NFS export is unusable).
    att = {k: {p: scan["node_attempts"][k][p] + look["node_attempts"].get(k, {}).get(p, 0)
               for p in ("nfs_reads", "agent_reads", "mount_reads")}
           for k in scan["node_attempts"]}
    print("NFS reads/node    " + ", ".join(f"{k} {v['nfs_reads']}" for k, v in sorted(att.items()))
          + f" (agent {sum(v['agent_reads'] for v in att.values())},"
          + f" mount {sum(v['mount_reads'] for v in att.values())})")
    over_nfs = all(v["nfs_reads"] > 0 for v in att.values()) and \
        sum(v["agent_reads"] + v["mount_reads"] for v in att.values()) == 0
    if not over_nfs:
        print("                  FAILED: not every read came over NFS")
    ok = ok and over_nfs
print("result            " + ("OK: every byte verified" if ok else "FAILED"))
sys.exit(0 if ok else 1)
PY

cat <<EOT

Try next:
  $BIN/rangefs-admin --etcd=$RANGEFS_ETCD --cluster=$RANGEFS_CLUSTER file ls /crawl
  kill -STOP \$(cat $DIR/cluster/run/node-n2.pid)   # hang a node, then rerun the scan:
  $BIN/rangefs-bench --etcd=$RANGEFS_ETCD --cluster=$RANGEFS_CLUSTER --mount_root=$DIR/cluster/mnt --data_path=agent --workload=mixed --duration_s=5
  kill -CONT \$(cat $DIR/cluster/run/node-n2.pid)
  tests/bench/run.sh                                  # the full benchmark with baselines
Stop the cluster:
  deploy/local/cluster.sh down --dir=$DIR/cluster --purge
EOT
if [ "$DOWN" = 1 ]; then
  deploy/local/cluster.sh down --dir="$DIR/cluster"
fi
