#!/usr/bin/env bash
# Runs the libFuzzer targets of tests/fuzz for N minutes each, all at once
# (not part of CI: CI replays the checked-in corpus, tests/fuzz/README.md).
#
#   tests/fuzz/run_fuzzers.sh [--minutes=N] [--merge] [name...]
#
# name: data_port, layout (default: all). Installs clang and libFuzzer
# (Debian: clang, libclang-rt-14-dev) when missing, builds
# //tests/fuzz:<name>_fuzzer with --config=fuzz (clang,
# -fsanitize=fuzzer,address,undefined) in its own Bazel output base, and
# runs each fuzzer under nice -n 19 starting from tests/fuzz/corpus/<name>.
# Per fuzzer, under tests/fuzz/out/<name>/: corpus/ (new interesting
# inputs), crashes/ (crash-*, leak-*, timeout-*, oom-* inputs), fuzz.log.
# --merge then adds the new inputs that reach new coverage to the
# checked-in corpus (review and commit them). Prints one line per fuzzer
# (time, runs, exec/s, corpus, findings); exits 1 on any finding.
set -uo pipefail
cd "$(dirname "$0")/../.."

minutes=30
merge=0
names=()
for a in "$@"; do
  case "$a" in
    --minutes=*) minutes="${a#--minutes=}" ;;
    --merge) merge=1 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    -*) echo "unknown flag $a" >&2; exit 2 ;;
    *) names+=("$a") ;;
  esac
done
[ "${#names[@]}" -eq 0 ] && names=(data_port layout)
[[ "$minutes" =~ ^[0-9]+$ ]] || { echo "--minutes must be a whole number" >&2; exit 2; }
for n in "${names[@]}"; do
  [ -d "tests/fuzz/corpus/$n" ] || { echo "no fuzzer named $n" >&2; exit 2; }
done

bash deploy/install-deps.sh >/dev/null || { echo "install-deps failed" >&2; exit 1; }
if ! command -v clang++ >/dev/null ||
   [ -z "$(ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a 2>/dev/null)" ]; then
  apt-get install -y -q clang libclang-rt-14-dev >/dev/null ||
    { echo "cannot install clang / libclang-rt-14-dev" >&2; exit 1; }
fi

# Its own output base: clang and gcc builds would evict each other.
bazel_fuzz=(bazel "--output_base=${RANGEFS_FUZZ_OUTPUT_BASE:-$HOME/.cache/rangefs-fuzz-bazel}")
targets=()
for n in "${names[@]}"; do targets+=("//tests/fuzz:${n}_fuzzer"); done
mkdir -p tests/fuzz/out
"${bazel_fuzz[@]}" build --symlink_prefix=/ --noshow_progress --config=fuzz \
  "${targets[@]}" >tests/fuzz/out/build.log 2>&1
build_rc=$?
grep -v -E "Cannot export local symbol|^INFO: |^Loading|^Analyzing|^\[[0-9,]+ / " \
  tests/fuzz/out/build.log
[ "$build_rc" -eq 0 ] || { echo "fuzzer build failed" >&2; exit 1; }
bin=$("${bazel_fuzz[@]}" info --config=fuzz bazel-bin 2>/dev/null)

pids=()
for n in "${names[@]}"; do
  out="tests/fuzz/out/$n"
  mkdir -p "$out/corpus" "$out/crashes"
  # Inputs up to 64 KiB (the 2 MB poisoned layout seed is read cut there;
  # the corpus replay test covers it whole).
  nice -n 19 "$bin/tests/fuzz/${n}_fuzzer" \
    -max_total_time=$((minutes * 60)) -timeout=10 -rss_limit_mb=2048 \
    -max_len=65536 -print_final_stats=1 -artifact_prefix="$out/crashes/" \
    "$out/corpus" "tests/fuzz/corpus/$n" >"$out/fuzz.log" 2>&1 &
  pids+=($!)
  echo "$n: fuzzing for $minutes min (pid $!, log $out/fuzz.log)"
done

findings=0
for i in "${!names[@]}"; do
  n="${names[$i]}"
  out="tests/fuzz/out/$n"
  wait "${pids[$i]}"
  rc=$?
  crashes=$(find "$out/crashes" -type f | wc -l)
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/fuzz.log")
  eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$out/fuzz.log")
  secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$out/fuzz.log")
  corpus=$(find "$out/corpus" "tests/fuzz/corpus/$n" -type f | wc -l)
  echo "$n: exit $rc, ${secs:-?} s, ${runs:-?} runs, ${eps:-?} exec/s," \
    "corpus $corpus inputs (seeds + new), findings $crashes"
  if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ]; then
    findings=$((findings + 1))
    grep -m1 -E "ERROR: |FUZZ_CHECK|runtime error" "$out/fuzz.log" || true
    ls "$out/crashes"
  elif [ "$merge" -eq 1 ]; then
    "$bin/tests/fuzz/${n}_fuzzer" -merge=1 -max_len=65536 \
      "tests/fuzz/corpus/$n" "$out/corpus" >"$out/merge.log" 2>&1 &&
      echo "$n: merged into tests/fuzz/corpus/$n: $(grep -o '[0-9]* new files with [0-9]* new features' "$out/merge.log" | tail -1)"
  fi
done
[ "$findings" -eq 0 ]
