#!/usr/bin/env bash
# CPU profiles of the client's cached scan and 4 KiB random paths, with fio
# on the same objects for comparison (issue 16, part 2).
#
#   tests/bench/profile.sh [--out=DIR] [--bin=DIR] [--seconds=8]
#
# A local cluster as in run.sh's part A (4 nodes, 4 files x FILE_MB MiB, 1
# replica, 4 MiB stripes: 16 objects). For each workload, in turn:
#   scan       rangefs-bench cached scan, 4 threads, 16 MiB calls, 4 MiB
#              physical reads, prefetch off, Reader::Read into its buffer
#   scan_zc    the same with --zero_copy (Reader::Next, no copy out)
#   fio_scan   fio psync 2 jobs x 4 MiB blocks, --invalidate=0, same objects
#   rand       rangefs-bench 4 KiB random O_DIRECT, 1 thread x batch 32
#   fio_rand   fio io_uring 1 job x qd32, same objects
# it writes, under DIR (default tests/bench/out/profile):
#   NAME.json / NAME.fio.json   the run's own report (bytes, CPU s/GB)
#   NAME.stat                   perf stat: task-clock, context switches,
#                               migrations, page faults (software events;
#                               this VM has no hardware counters)
#   NAME.top.txt                perf report: top symbols by self samples
#   NAME.children.txt           the same, inclusive (callers' share)
#   NAME.threads.txt            samples by kind of thread (its first project
#                               frame: callers, a node's ring thread, ...)
#   NAME.folded, NAME.svg       folded stacks and a flame graph
#                               (tests/bench/flamegraph.py)
# perf samples cpu-clock at 999 Hz with frame-pointer call chains (-g):
# our -c opt code keeps frame pointers; Debian's libraries mostly do not,
# so chains through libc/absl/grpc may stop early (self costs are exact);
# CALLGRAPH=dwarf (environment) unwinds them too, at a larger perf.data.
# PROFILE_ONLY="rand fio_rand" (environment) runs only the named runs.
# Falls back to nothing: without perf (linux-perf) it says so and exits 1.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
OUT="$ROOT/tests/bench/out/profile"
BIN=""
SECS=8
FILE_MB=${FILE_MB:-256}
for a in "$@"; do
  case "$a" in
    --out=*) OUT=${a#*=} ;;
    --bin=*) BIN=${a#*=} ;;
    --seconds=*) SECS=${a#*=} ;;
    *) echo "profile: unknown argument $a" >&2; exit 2 ;;
  esac
done
command -v perf >/dev/null || { echo "profile: perf not installed (apt-get install linux-perf)"; exit 1; }
perf record -e cpu-clock -o /dev/null -- true >/dev/null 2>&1 || { echo "profile: perf record does not work here"; exit 1; }
mkdir -p "$OUT"
WORK=$(mktemp -d /tmp/rangefs-profile-XXXXXX)
CP="$WORK/cluster"
cleanup() { deploy/local/cluster.sh down --dir="$CP" >/dev/null 2>&1 || true; rm -rf "$WORK"; }
trap cleanup EXIT
if [ -z "$BIN" ]; then
  bazel build --symlink_prefix=/ -c opt --noshow_progress //storage_node:rangefs-node \
    //admin:rangefs-admin //tests/bench:rangefs-bench 2>&1 | grep -E "^ERROR" || true
  BAZEL_BIN=$(bazel info --symlink_prefix=/ -c opt bazel-bin 2>/dev/null)
  BIN="$WORK/bin"; mkdir -p "$BIN"
  for b in storage_node/rangefs-node admin/rangefs-admin tests/bench/rangefs-bench; do cp "$BAZEL_BIN/$b" "$BIN/"; done
fi
eval "$(deploy/local/cluster.sh up --dir="$CP" --nodes=4 --bin="$BIN" --cluster=prof | tail -n 1)"
ADMIN=("$BIN/rangefs-admin" --etcd="$RANGEFS_ETCD" --cluster=prof --no-progress)
for i in 1 2 3 4; do
  { openssl enc -aes-128-ctr -nosalt -pass "pass:p$i" -pbkdf2 </dev/zero 2>/dev/null || true; } \
    | head -c $((FILE_MB << 20)) >"$WORK/f$i"
  "${ADMIN[@]}" file put "$WORK/f$i" "/p/f$i" --replicas=1 --stripe-unit=4M >/dev/null
  rm -f "$WORK/f$i"
done
mapfile -t OBJ_LIST < <(find "$CP/exports" -type f -path '*/f/*' ! -name '.*' | sort)
OBJS=$(IFS=:; echo "${OBJ_LIST[*]}")
BENCH=("$BIN/rangefs-bench" --etcd="$RANGEFS_ETCD" --cluster=prof --mount_root="$MOUNT_ROOT" --dir=/p --data_path=mount
       --single_flight=false)  # every counted byte fetched, as fio's

# profile NAME CMD...: perf stat, then perf record, of one run of CMD
# (only the runs PROFILE_ONLY names, when set: "rand fio_rand").
profile() {
  local name=$1
  shift
  if [ -n "${PROFILE_ONLY:-}" ] && [[ " $PROFILE_ONLY " != *" $name "* ]]; then return 0; fi
  echo "profile: $name: $*" | tee -a "$OUT/commands.log"
  perf stat -e task-clock,context-switches,cpu-migrations,page-faults -o "$OUT/$name.stat" -- "$@" >"$OUT/$name.json"
  perf record -e cpu-clock -F 999 --call-graph "${CALLGRAPH:-fp}" -o "$WORK/$name.data" -- "$@" >/dev/null 2>"$WORK/$name.record.log"
  perf report -i "$WORK/$name.data" --stdio --no-children --sort symbol --percent-limit 0.5 2>/dev/null \
    | grep -E '^ +[0-9]' | head -n 40 >"$OUT/$name.top.txt" || true
  perf report -i "$WORK/$name.data" --stdio --children --sort symbol --percent-limit 2 -g none 2>/dev/null \
    | grep -v -E '^ +0x' | grep -E '^ +[0-9]' | head -n 60 >"$OUT/$name.children.txt" || true
  perf script -i "$WORK/$name.data" 2>/dev/null | python3 tests/bench/flamegraph.py "$OUT/$name" "$name: $*"
  rm -f "$WORK/$name.data"
}
warm() { cat "${OBJ_LIST[@]}" >/dev/null; }
fio_jobs() {  # N jobs, job j its own objects
  local nj=$1 j k files
  for j in $(seq 0 $((nj - 1))); do
    files=""
    for ((k = j; k < ${#OBJ_LIST[@]}; k += nj)); do files+="${files:+:}${OBJ_LIST[k]}"; done
    echo "--name=j$j --filename=$files"
  done
}
SCAN=("${BENCH[@]}" --workload=scan --threads=4 --io_size=16M --max_io_size=4M --prefetch=false
      --duration_s="$SECS" --warmup_s=1 --json)
warm; profile scan "${SCAN[@]}"
warm; profile scan_zc "${SCAN[@]}" --zero_copy=true
warm
# shellcheck disable=SC2046
profile fio_scan fio --output-format=json --rw=read --bs=4M --ioengine=psync --invalidate=0 \
  --time_based=1 --runtime="$SECS" --ramp_time=1 --readonly $(fio_jobs 2)
mv "$OUT/fio_scan.json" "$OUT/fio_scan.fio.json" 2>/dev/null || true
sync; echo 3 >/proc/sys/vm/drop_caches
profile rand "${BENCH[@]}" --workload=lookup --threads=1 --batch=32 --o_direct=true --hedging=false \
  --duration_s="$SECS" --warmup_s=1 --json
profile fio_rand fio --output-format=json --name=rand --filename="$OBJS" --rw=randread --bs=4k --direct=1 \
  --ioengine=io_uring --iodepth=32 --numjobs=1 --randrepeat=0 --norandommap --time_based=1 \
  --runtime="$SECS" --ramp_time=1 --readonly
mv "$OUT/fio_rand.json" "$OUT/fio_rand.fio.json" 2>/dev/null || true
echo "profile: written to $OUT"
