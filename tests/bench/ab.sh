#!/usr/bin/env bash
# A/B of two rangefs-bench binaries (a before and an after of a change) on
# the same local cluster, the same files, the same cache state:
#
#   tests/bench/ab.sh --a=OLD/rangefs-bench --b=NEW/rangefs-bench \
#     [--bin=DIR] [--rounds=5] [--seconds=5] [--file_mb=256] \
#     [--a_flags="..."] [--b_flags="..."] [--out=DIR]
#
# --bin: rangefs-node and rangefs-admin for the cluster (default: built
# here, -c opt). Each round runs every workload with A then B, or B then A
# (alternating by round), each time-based (--duration_s) after the objects
# were read once (cached); the table gives the median and min-max of each
# side and the ratio of the medians (B / A), for the rate and for the
# process's CPU per GB or per read. Workloads, both sides alike:
#   scan:   cached mount-path scan, 4 threads, 16 MiB reads, 4 MiB pieces,
#           prefetch off (GB/s)
#   4k:     4 KiB random O_DIRECT mount reads, 4 threads x batch 32 (IOPS)
#   agent:  cached agent-path scan over loopback, 4 threads (GB/s)
# Only flags both binaries know are passed; --a_flags/--b_flags add more.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
A="" B="" BIN="" ROUNDS=5 SECS=5 FILE_MB=256 A_FLAGS="" B_FLAGS=""
OUT="$ROOT/tests/bench/out/ab"
for arg in "$@"; do
  case "$arg" in
    --a=*) A=${arg#*=} ;;
    --b=*) B=${arg#*=} ;;
    --bin=*) BIN=${arg#*=} ;;
    --rounds=*) ROUNDS=${arg#*=} ;;
    --seconds=*) SECS=${arg#*=} ;;
    --file_mb=*) FILE_MB=${arg#*=} ;;
    --a_flags=*) A_FLAGS=${arg#*=} ;;
    --b_flags=*) B_FLAGS=${arg#*=} ;;
    --out=*) OUT=${arg#*=} ;;
    *) echo "ab: unknown argument $arg" >&2; exit 2 ;;
  esac
done
[ -x "$A" ] && [ -x "$B" ] || { echo "ab: --a and --b must be executables" >&2; exit 2; }
mkdir -p "$OUT"
WORK=$(mktemp -d /tmp/rangefs-ab-XXXXXX)
CL="$WORK/cluster"
cleanup() { deploy/local/cluster.sh down --dir="$CL" >/dev/null 2>&1 || true; rm -rf "$WORK"; }
trap cleanup EXIT
if [ -z "$BIN" ]; then
  bazel build --symlink_prefix=/ -c opt --noshow_progress //storage_node:rangefs-node \
    //admin:rangefs-admin 2>&1 | grep -E "^ERROR" && exit 1
  BAZEL_BIN=$(bazel info --symlink_prefix=/ -c opt bazel-bin 2>/dev/null)
  BIN="$WORK/bin"
  mkdir -p "$BIN"
  cp "$BAZEL_BIN/storage_node/rangefs-node" "$BAZEL_BIN/admin/rangefs-admin" "$BIN/"
fi
eval "$(deploy/local/cluster.sh up --dir="$CL" --nodes=4 --bin="$BIN" --cluster=ab | tail -n 1)"
ADMIN=("$BIN/rangefs-admin" --etcd="$RANGEFS_ETCD" --cluster=ab --no-progress)
for i in 1 2 3 4; do
  head -c $((FILE_MB << 20)) /dev/urandom >"$WORK/f$i"
  "${ADMIN[@]}" file put "$WORK/f$i" "/ab/f$i" --replicas=1 --stripe-unit=4M >/dev/null
  rm -f "$WORK/f$i"
done
mapfile -t OBJS < <(find "$CL/exports" -type f ! -name '.*' | sort)
COMMON=(--etcd="$RANGEFS_ETCD" --cluster=ab --mount_root="$MOUNT_ROOT" --dir=/ab
        --duration_s="$SECS" --json)
declare -A FLAGS=(
  [scan]="--workload=scan --data_path=mount --threads=4 --io_size=16M --max_io_size=4M --prefetch=false"
  [4k]="--workload=lookup --data_path=mount --threads=4 --batch=32 --o_direct=true --hedging=false"
  [agent]="--workload=scan --data_path=agent --threads=4 --io_size=16M --max_io_size=4M --prefetch=false"
)
# run SIDE WORKLOAD: prints "RATE CPU": GB/s (scans) or IOPS (4k), and the
# process's CPU (user + sys, perf stat task-clock, start-up included) per
# GB or per read: CPU per unit of work is much less sensitive to other load
# on the machine than a rate.
run() {
  local bin=$1 extra=$2 w=$3 json cpu_ms
  cat "${OBJS[@]}" >/dev/null  # cached, both sides alike
  # shellcheck disable=SC2086
  json=$(perf stat -x, -e task-clock -o "$WORK/stat" -- \
    "$bin" "${COMMON[@]}" ${FLAGS[$w]} $extra 2>>"$OUT/ab.log" | grep '^{' | tail -n 1)
  cpu_ms=$(grep task-clock "$WORK/stat" | cut -d, -f1)
  echo "$bin ${FLAGS[$w]} $extra -> $json cpu_ms=$cpu_ms" >>"$OUT/commands.log"
  python3 -c "
import json, sys
d = json.loads(sys.argv[1]); cpu = float(sys.argv[3]) / 1e3
if sys.argv[2] == '4k':
    print(d['iops'], cpu / max(d['ops'], 1) * 1e6)
else:
    print(d['gbps'], cpu / max(d['bytes'] / 1e9, 1e-9))
" "$json" "$w" "$cpu_ms"
}
# summary LABEL "A values" "B values": a table row, median (min-max), B / A
summary() {
  python3 -c "
import statistics, sys
label = sys.argv[1]
a = [float(x) for x in sys.argv[2].split()]
b = [float(x) for x in sys.argv[3].split()]
f = (lambda v: f'{v:.0f}') if 'IOPS' in label else (lambda v: f'{v:.3f}')
ma, mb = statistics.median(a), statistics.median(b)
print(f'| {label} | {f(ma)} ({f(min(a))}-{f(max(a))}) | {f(mb)} ({f(min(b))}-{f(max(b))}) | {mb / ma:.2f} |')
" "$@"
}
declare -A RA RB CA CB
for r in $(seq 1 "$ROUNDS"); do
  for w in scan 4k agent; do
    if [ $((r % 2)) = 1 ]; then a=$(run "$A" "$A_FLAGS" "$w"); b=$(run "$B" "$B_FLAGS" "$w")
    else b=$(run "$B" "$B_FLAGS" "$w"); a=$(run "$A" "$A_FLAGS" "$w"); fi
    read -r ra ca <<<"$a"
    read -r rb cb <<<"$b"
    RA[$w]+="$ra "; RB[$w]+="$rb "; CA[$w]+="$ca "; CB[$w]+="$cb "
    echo "round $r $w: A $ra (cpu $ca) B $rb (cpu $cb)" | tee -a "$OUT/rounds.txt"
  done
done
{
  echo "| workload | A median (min-max) | B median (min-max) | B / A |"
  echo "|---|---|---|---|"
  for w in scan 4k agent; do
    if [ "$w" = 4k ]; then unit="IOPS"; cunit="CPU us per read"; else unit="GB/s"; cunit="CPU s per GB"; fi
    summary "$w ($unit)" "${RA[$w]}" "${RB[$w]}"
    summary "$w ($cunit)" "${CA[$w]}" "${CB[$w]}"
  done
} | tee "$OUT/report.md"
