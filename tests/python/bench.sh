#!/usr/bin/env bash
# The Python benchmark row: sequential readinto and 4 KiB read_ranges from
# Python (bench_python.py, the rangefs package) vs the C++ rangefs-bench on
# the same files in the same run, one thread each, rounds alternating.
#
#   tests/python/bench.sh [--files=4] [--file_mib=128] [--rounds=3]
#                         [--duration_s=5] [--batch=32] [--page_cache_reads=1]
#
# Builds with -c opt, starts a local cluster (deploy/local/cluster.sh,
# 4 nodes, mount path), ingests random files, prints a markdown table
# (medians over the rounds, Python / C++ ratios; targets >= 0.8 sequential,
# >= 0.6 4 KiB IOPS) and stops the cluster. --page_cache_reads=0 turns the
# client's page-cache path (ClientOptions::page_cache_reads) off on both
# sides. Not part of tests/run.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
FILES=4; FILE_MIB=128; ROUNDS=3; DURATION=5; BATCH=32; PCR=1
for a in "$@"; do
  case "$a" in
    --files=*) FILES=${a#*=} ;;
    --file_mib=*) FILE_MIB=${a#*=} ;;
    --rounds=*) ROUNDS=${a#*=} ;;
    --duration_s=*) DURATION=${a#*=} ;;
    --batch=*) BATCH=${a#*=} ;;
    --page_cache_reads=*) PCR=${a#*=} ;;
    *) echo "bench.sh: unknown argument $a" >&2; exit 2 ;;
  esac
done
cd "$root"
bazel build --symlink_prefix=/ -c opt //admin:rangefs-admin //storage_node:rangefs-node \
  //tests/bench:rangefs-bench //python:rangefs/_rangefs.so >&2
bin=$(bazel info --symlink_prefix=/ -c opt bazel-bin 2>/dev/null)
py=$(bash python/venv.sh "$root/.cache/python-venv")
work=$(mktemp -d /tmp/rangefs-pybench-XXXXXX)
cleanup() { bash deploy/local/cluster.sh down --dir="$work/c" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
mkdir -p "$work/bin" "$work/site" "$work/stage" "$work/data"
cp "$bin/admin/rangefs-admin" "$bin/storage_node/rangefs-node" "$bin/tests/bench/rangefs-bench" "$work/bin/"
cp -rL python/pyproject.toml python/rangefs "$work/stage/"
cp -L "$bin/python/rangefs/_rangefs.so" "$work/stage/rangefs/"
chmod -R u+w "$work/stage"
"$py" -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation \
  --target "$work/site" "$work/stage" >&2
env=$(bash deploy/local/cluster.sh up --dir="$work/c" --nodes=4 --bin="$work/bin" \
      --cluster=pybench 2>/dev/null | tail -n 1)
eval "$env"
for i in $(seq 1 "$FILES"); do
  head -c $((FILE_MIB << 20)) /dev/urandom >"$work/data/f$i"
  "$work/bin/rangefs-admin" --etcd="$RANGEFS_ETCD" --cluster=pybench --no-progress \
    file put "$work/data/f$i" "/bench/f$i" >/dev/null
  rm -f "$work/data/f$i"
done
pcr=$([ "$PCR" = 0 ] && echo false || echo true)
common=(--etcd="$RANGEFS_ETCD" --cluster=pybench --mount_root="$MOUNT_ROOT" --dir=/bench
        --page_cache_reads="$pcr")
for r in $(seq 1 "$ROUNDS"); do
  "$work/bin/rangefs-bench" "${common[@]}" --workload=scan --once --threads=1 \
    --io_size=4M --json >"$work/cpp-scan-$r.json"
  "$work/bin/rangefs-bench" "${common[@]}" --workload=lookup --threads=1 \
    --batch="$BATCH" --lookup_size=4096 --duration_s="$DURATION" --json >"$work/cpp-lookup-$r.json"
  PYTHONPATH="$work/site" "$py" tests/python/bench_python.py "${common[@]}" \
    --io_size=$((4 << 20)) --batch="$BATCH" --duration_s="$DURATION" >"$work/py-$r.json"
  echo "round $r done" >&2
done
"$py" - "$work" "$ROUNDS" "$FILES" "$FILE_MIB" "$BATCH" <<'PY'
import json, statistics, sys
work, rounds, files, mib, batch = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
load = lambda n: json.load(open(f"{work}/{n}"))
cs = statistics.median(load(f"cpp-scan-{r}.json")["gbps"] for r in range(1, rounds + 1))
ci = statistics.median(load(f"cpp-lookup-{r}.json")["iops"] for r in range(1, rounds + 1))
ps = statistics.median(load(f"py-{r}.json")["scan_gbps"] for r in range(1, rounds + 1))
pi = statistics.median(load(f"py-{r}.json")["lookup_iops"] for r in range(1, rounds + 1))
cpu = lambda d: (d["cpu_user_s"] + d["cpu_sys_s"]) / d["ops"] * 1e6  # us per range
cc = statistics.median(cpu(load(f"cpp-lookup-{r}.json")) for r in range(1, rounds + 1))
pc = statistics.median(load(f"py-{r}.json")["lookup_cpu_us_per_range"]
                       for r in range(1, rounds + 1))
print(f"{files} files x {mib} MiB, 4 nodes, mount path, 1 thread, median of {rounds} rounds\n")
print("| workload | Python (rangefs package) | C++ rangefs-bench | ratio | target |")
print("|---|---|---|---|---|")
print(f"| sequential, 4 MiB readinto | {ps:.2f} GB/s | {cs:.2f} GB/s | {ps / cs:.2f} | >= 0.8 |")
print(f"| 4 KiB ranges, {batch} per ReadV | {pi:,.0f} IOPS | {ci:,.0f} IOPS | {pi / ci:.2f} | >= 0.6 |")
print(f"| 4 KiB ranges: process CPU per range | {pc:.2f} us | {cc:.2f} us | {cc / pc:.2f} | |")
print("\n| round | Python GB/s | C++ GB/s | Python IOPS | C++ IOPS | Python CPU us/range | C++ CPU us/range |")
print("|---|---|---|---|---|---|---|")
for r in range(1, rounds + 1):
    p, c = load(f"py-{r}.json"), load(f"cpp-lookup-{r}.json")
    print(f"| {r} | {p['scan_gbps']:.2f} | {load(f'cpp-scan-{r}.json')['gbps']:.2f} "
          f"| {p['lookup_iops']:,.0f} | {c['iops']:,.0f} "
          f"| {p['lookup_cpu_us_per_range']:.2f} | {cpu(c):.2f} |")
PY
