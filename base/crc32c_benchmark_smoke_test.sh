#!/usr/bin/env bash
# Runs //base:crc32c_benchmark briefly (4 KiB cases only) and checks that
# every case ran and reported a throughput: the benchmark builds, links and
# measures. Speed itself is read from the benchmark, not asserted here.
set -uo pipefail
bin="$TEST_SRCDIR/$TEST_WORKSPACE/base/crc32c_benchmark"
out=$("$bin" --benchmark_filter='/4096$' --benchmark_min_time=0.01 2>&1)
rc=$?
echo "$out"
[ "$rc" -eq 0 ] || { echo "FAIL: crc32c_benchmark exited $rc"; exit 1; }
for name in BM_Crc32cSoftware/4096 BM_Crc32cExtend/4096; do
  grep -E "^$name .*bytes_per_second=[0-9.]+[kMGT]?/s" <<<"$out" >/dev/null ||
    { echo "FAIL: no throughput line for $name"; exit 1; }
done
echo PASS
