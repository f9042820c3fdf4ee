#!/usr/bin/env bash
# Bulk ingest of many small files: `rangefs-admin file put -r` of a
# directory of --files files of --size bytes into a local cluster
# (deploy/local/cluster.sh: real etcd, --nodes agents, 2 replicas), timed
# from the command's start to its exit (process start, etcd connect, the
# walk, every put and commit), repeated --rounds times, each round into a
# new namespace directory. Rounds alternate over the --jobs values given.
# Prints files/s per round, then the median and range per --jobs value;
# with --loop_files=N (> 0) also the old way, one `file put` per file in
# a shell loop, for N files. Each round also gives the CPU time of every
# process involved (rangefs-admin, etcd, agents, keeper) per file, which
# the machine's other load does not change, and the files/s that CPU
# allows on this machine's cores when idle.
#
#   tests/bench/ingest_many.sh [--files=10000] [--size=65536] [--rounds=3]
#       [--jobs=16[,32,...]] [--nodes=4] [--loop_files=200] [--bin=DIR]
#       [--dir=DIR] [--keep]
#
# --bin: rangefs-admin, rangefs-node and rangefs-keeper (default: built
# here with -c opt). --dir: work directory (default /tmp/rangefs-ingest-
# bench; it holds the files, the cluster and ~2 x files x size per round
# on the agents). --keep: leave the cluster up.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
FILES=10000 SIZE=65536 ROUNDS=3 JOBS=16 NODES=4 LOOP_FILES=200 BIN="" KEEP=0
DIR=/tmp/rangefs-ingest-bench
for arg in "$@"; do
  case "$arg" in
    --files=*) FILES=${arg#*=} ;;
    --size=*) SIZE=${arg#*=} ;;
    --rounds=*) ROUNDS=${arg#*=} ;;
    --jobs=*) JOBS=${arg#*=} ;;
    --nodes=*) NODES=${arg#*=} ;;
    --loop_files=*) LOOP_FILES=${arg#*=} ;;
    --bin=*) BIN=${arg#*=} ;;
    --dir=*) DIR=${arg#*=} ;;
    --keep) KEEP=1 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "ingest_many: unknown argument $arg (see --help)" >&2; exit 2 ;;
  esac
done
log() { echo "ingest_many: $*" >&2; }

if [ -z "$BIN" ]; then
  log "building rangefs-admin, rangefs-node, rangefs-keeper (-c opt)"
  (cd "$ROOT" && bazel build -c opt --noshow_progress //admin:rangefs-admin \
    //storage_node:rangefs-node //keeper:rangefs-keeper >&2)
  bazel_bin=$(cd "$ROOT" && bazel info -c opt bazel-bin 2>/dev/null)
  BIN="$DIR/bin"
  mkdir -p "$BIN"
  cp -f "$bazel_bin/admin/rangefs-admin" "$bazel_bin/storage_node/rangefs-node" \
    "$bazel_bin/keeper/rangefs-keeper" "$BIN/"
fi
for b in rangefs-admin rangefs-node rangefs-keeper; do
  [ -x "$BIN/$b" ] || { echo "ingest_many: no $BIN/$b (--bin)" >&2; exit 2; }
done
ADMIN="$BIN/rangefs-admin"

CLUSTER_DIR="$DIR/cluster"
"$ROOT/deploy/local/cluster.sh" down --dir="$CLUSTER_DIR" --purge >/dev/null 2>&1 || true
"$ROOT/deploy/local/cluster.sh" up --dir="$CLUSTER_DIR" --nodes="$NODES" --bin="$BIN" >/dev/null
ETCD=$(sed -n 's/^ETCD_ENDPOINTS=//p' "$CLUSTER_DIR/cluster.env")
NAME=$(sed -n 's/^CLUSTER=//p' "$CLUSTER_DIR/cluster.env")
ADMIN=("$ADMIN" --etcd="$ETCD" --cluster="$NAME" --no-progress)
cleanup() {
  if [ "$KEEP" = 0 ]; then
    "$ROOT/deploy/local/cluster.sh" down --dir="$CLUSTER_DIR" --purge >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT

SRC="$DIR/src-$FILES-$SIZE"
if [ ! -f "$SRC/.complete" ]; then
  log "making $FILES files of $SIZE bytes in $SRC"
  rm -rf "$SRC"
  python3 - "$SRC" "$FILES" "$SIZE" <<'EOF'
import os, sys
src, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for i in range(n):
    d = os.path.join(src, "d%03d" % (i % 100))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%06d" % i), "wb") as f:
        f.write(os.urandom(size))
open(os.path.join(src, ".complete"), "w").close()
EOF
fi
# .complete is a file too: the put counts it.
TOTAL=$((FILES + 1))

now() { date +%s.%N; }
# CPU seconds used so far by the cluster's processes (etcd, agents, keeper).
cluster_cpu() {
  local f total=0 hz
  hz=$(getconf CLK_TCK)
  for f in "$CLUSTER_DIR"/run/*.pid; do
    total=$((total + $(awk '{print $14 + $15}' "/proc/$(cat "$f")/stat" 2>/dev/null || echo 0)))
  done
  python3 -c "print($total / $hz)"
}
rate() { python3 -c "print('%.0f' % ($1 / ($3 - $2)))"; }

IFS=, read -r -a jobs_list <<<"$JOBS"
declare -A rates cpus
echo "ingest_many: $FILES files x $SIZE bytes, $NODES nodes, 2 replicas, $(nproc) cores"
for ((r = 1; r <= ROUNDS; r++)); do
  for ((k = 0; k < ${#jobs_list[@]}; k++)); do
    # Alternate the order of the --jobs values from round to round.
    j=${jobs_list[$(( (r % 2 == 0) ? ${#jobs_list[@]} - 1 - k : k ))]}
    c0=$(cluster_cpu)
    t0=$(now)
    summary=$(/usr/bin/time -f "%U %S" -o "$DIR/admin.cpu" \
      "${ADMIN[@]}" file put -r "$SRC" "/bench/r$r-j$j" --jobs="$j")
    t1=$(now)
    c1=$(cluster_cpu)
    fps=$(rate "$TOTAL" "$t0" "$t1")
    # CPU of every process of the put (admin + etcd + agents + keeper)
    # per file: what the machine's other load does not change.
    cpu_ms=$(python3 -c "u, s = map(float, open('$DIR/admin.cpu').read().split()[-2:]); print('%.2f' % ((u + s + $c1 - $c0) * 1000 / $TOTAL))")
    rates[$j]="${rates[$j]:-} $fps"
    cpus[$j]="${cpus[$j]:-} $cpu_ms"
    echo "round $r jobs $j: $fps files/s, $cpu_ms CPU ms/file, load $(cut -d' ' -f1 /proc/loadavg)  ($summary)"
  done
done
for j in "${jobs_list[@]}"; do
  python3 - "$j" "$(nproc)" "${rates[$j]}" "${cpus[$j]}" <<'EOF'
import statistics, sys
j, cores = sys.argv[1], int(sys.argv[2])
v = sorted(float(x) for x in sys.argv[3].split())
c = sorted(float(x) for x in sys.argv[4].split())
print("jobs %s: median %.0f files/s, range %.0f-%.0f over %d rounds; "
      "CPU %.2f ms/file (range %.2f-%.2f): at most %.0f files/s on %d idle cores"
      % (j, statistics.median(v), v[0], v[-1], len(v), statistics.median(c),
         c[0], c[-1], cores * 1000 / statistics.median(c), cores))
EOF
done

if [ "$LOOP_FILES" -gt 0 ]; then
  t0=$(now)
  i=0
  for f in "$SRC"/d000/* "$SRC"/d001/* "$SRC"/d002/* "$SRC"/d003/*; do
    [ "$i" -lt "$LOOP_FILES" ] || break
    "${ADMIN[@]}" file put "$f" "/bench/loop/$i" >/dev/null
    i=$((i + 1))
  done
  t1=$(now)
  echo "one file put per file (shell loop): $(rate "$i" "$t0" "$t1") files/s over $i files"
fi
