#!/usr/bin/env bash
# Runs //ec:codec_benchmark briefly (RS(6,3) only) and checks that every case
# ran and reported a throughput: the benchmark builds, links, decodes the
# right bytes and measures. Speed is read from the benchmark, not asserted.
set -uo pipefail
bin="$TEST_SRCDIR/$TEST_WORKSPACE/ec/codec_benchmark"
out=$("$bin" --benchmark_filter='RS6_3' --benchmark_min_time=0.01 2>&1)
rc=$?
echo "$out"
[ "$rc" -eq 0 ] || { echo "FAIL: codec_benchmark exited $rc"; exit 1; }
for name in BM_Encode/Isal_RS6_3 BM_Encode/Naive_RS6_3 \
  BM_Decode/Isal_RS6_3/1 BM_Decode/Isal_RS6_3/3 BM_Decode/Naive_RS6_3/2 \
  BM_RebuildRow/Isal_RS6_3/0/0 BM_RebuildRow/Isal_RS6_3/1/0 \
  BM_RebuildRow/Isal_RS6_3/2/64; do
  grep -E "^$name .*bytes_per_second=[0-9.]+[kMGT]?/s" <<<"$out" >/dev/null ||
    { echo "FAIL: no throughput line for $name"; exit 1; }
done
echo PASS
