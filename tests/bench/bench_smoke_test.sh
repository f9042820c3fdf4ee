#!/usr/bin/env bash
# Smoke test of the benchmark script: tests/bench/run.sh --quick on tiny data
# must complete and print every row of its ratio table with numbers.
set -uo pipefail
RF="$TEST_SRCDIR/$TEST_WORKSPACE"
# Namespaces, veths and mounts die with the test, even when it is killed.
source "$RF/tests/testing/private_namespaces.sh"
BIN="$TEST_TMPDIR/bin"
mkdir -p "$BIN"
cp "$RF/storage_node/rangefs-node" "$RF/admin/rangefs-admin" \
   "$RF/tests/bench/rangefs-bench" "$RF/client_lib/blocking_fuse" \
   "$RF/mount/rangefs-mount" "$RF/tests/bench/null_fuse" \
   "$RF/tests/bench/sendfile_stream" "$BIN/"
cp "$RF/python/rangefs/_rangefs.so" "$BIN/"
mkdir -p "$BIN/keeper"
cp "$RF/keeper/rangefs-keeper" "$BIN/keeper/"
OUT="$TEST_TMPDIR/out"
if ! bash "$RF/tests/bench/run.sh" --quick --bin="$BIN" --out="$OUT" >"$TEST_TMPDIR/log" 2>&1; then
  echo "FAIL: run.sh exited non-zero"; tail -30 "$TEST_TMPDIR/log"; exit 1
fi
rows=("mount-path sequential, cached" "sequential, cached: CPU s/GB" \
      "agent path over loopback" "plain TCP stream" "mount sequential" "mount 4 KiB random"
      "re-replication of a killed node" "scan during repair")
# O_DIRECT rows need a cold page cache (drop_caches); without it run.sh
# says so instead of measuring them.
if ! grep -q "drop_caches failed" "$OUT/report.md"; then
  rows+=("mount-path sequential, O_DIRECT" "naive single stream" "round_robin"
         "4 KiB random O_DIRECT IOPS, 32 in flight" "4 KiB random O_DIRECT IOPS, best vs best")
fi
for row in "${rows[@]}"; do
  grep -q "$row" "$OUT/report.md" || { echo "FAIL: no row '$row'"; cat "$OUT/report.md"; exit 1; }
done
if ! grep -q "part H skipped" "$OUT/report.md"; then
  grep -q "n2 mount hung from the start" "$OUT/report.md" || { echo "FAIL: no part H row"; cat "$OUT/report.md"; exit 1; }
fi
if ! grep -q "part B skipped" "$OUT/report.md"; then
  for row in "agent path balanced" "1/10 cap vs capacity" "1/10 cap vs naive round_robin" \
             "host hung" "host killed"; do
    grep -q "$row" "$OUT/report.md" || { echo "FAIL: no row '$row'"; cat "$OUT/report.md"; exit 1; }
  done
fi
# Part D (2 readers, --quick): a row per entry point warm and the C++
# Reader cold, each ratio a number (a failed side shows as n/a), or the
# reason the row was skipped.
D="$OUT/part_d.md"
[ -s "$D" ] || { echo "FAIL: no $D"; cat "$TEST_TMPDIR/log"; exit 1; }
d_rows=("C++ Reader|warm" "C++ File::Read|warm" "ReadV 4 KiB|warm")
grep -q "skipped:.*readinto" "$D" || d_rows+=("Python readinto|warm")
# Without drop_caches the rows that need it (cold; FUSE warm: the mount's
# own page cache dropped) say so instead.
if ! grep -q "drop_caches failed" "$D"; then
  d_rows+=("C++ Reader|cold")
  if ! grep -q "skipped:.*(no FUSE)" "$D"; then
    d_rows+=("FUSE default, dd|warm")
  fi
fi
for kr in "${d_rows[@]}"; do
  k=${kr%|*}; m=${kr#*|}
  line=$(grep -F "| $k" "$D" | grep -F "| $m | 2 |") || { echo "FAIL: part D: no row '$k, $m'"; cat "$D"; exit 1; }
  echo "$line" | awk -F'|' '{print $7}' | grep -q -E '^ *[0-9.]+ *$' || { echo "FAIL: part D: '$k, $m' not measured"; cat "$D"; exit 1; }
done
# Every ratio cell is a number (a failed measurement shows as n/a or empty).
if grep -E '^\| ' "$OUT/report.md" | grep -v -E '^\| (measure|---)' | awk -F'|' '{print $5}' | grep -q -v -E '^ *[0-9.]+ *$'; then
  echo "FAIL: a ratio is not a number"; cat "$OUT/report.md"; exit 1
fi
cat "$OUT/report.md" "$D"
echo PASS
