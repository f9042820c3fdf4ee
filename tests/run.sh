#!/usr/bin/env bash
# Runs every rangefs test: installs missing Debian packages, builds with Bazel
# (offline), runs `bazel test //...`, and prints one closing line
#   N passed, N failed
# counting test cases (gtest cases, one per shell test). Exits non-zero if
# anything failed or did not build. Extra arguments go to `bazel test`:
# target patterns (e.g. tests/run.sh //namespace/...) and flags (e.g.
# --symlink_prefix=/). Without a target pattern it runs //..., then the
# fuzz corpus replay again under --config=asan, and builds the C++ targets
# that tests/tsa_targets.py picks under --config=tsa (clang's thread-safety
# analysis; a build, not a test run) beside them, in an output base of its
# own at the lowest CPU priority.
#
# As many tests run at once as there are cores (--local_test_jobs), as
# before, but a running test no longer holds a core away from the build:
# tests mostly wait (on etcd, agents, mounts), so on a cold build the
# compiles go on beside them.
#
#   tests/run.sh --stress[=N] [--stress_runs=U,I] [targets...]
# runs the same suite on a loaded machine: N busy loops (default: one per
# core) and a disk writer beside it (tests/load.sh), every test run afresh
# (--nocache_test_results) I times (default 2) if it starts real processes
# (the harness's Subprocess: etcd, agents, mounts), is a shell or Python
# test or is large, and U times (default 5) otherwise, all runs in parallel
# as Bazel schedules them.
# It ends with one line per target that failed at least once (runs failed,
# test cases that failed) before the closing line. For engineers and for
# checking that load cannot change a verdict; .ci/run does not use it.
set -uo pipefail
cd "$(dirname "$0")/.."

bash deploy/install-deps.sh || { echo "install-deps failed"; echo "0 passed, 1 failed"; exit 1; }

# The Python tests' pinned virtualenv (python/venv.sh makes it on first use;
# .cache/ is ignored by git and Bazel).
flags=("--test_env=RANGEFS_PYTHON_VENV=$PWD/.cache/python-venv"
       "--local_test_jobs=$(nproc)")
targets=()
stress=0
stress_cpus=$(nproc)
stress_runs=5,2
for a in "$@"; do
  case "$a" in
    --stress) stress=1 ;;
    --stress=*) stress=1; stress_cpus="${a#--stress=}" ;;
    --stress_runs=*) stress_runs="${a#--stress_runs=}" ;;
    -//*) targets+=("$a") ;;  # A negative target pattern.
    -*) flags+=("$a") ;;
    *) targets+=("$a") ;;
  esac
done
full=0
[ "${#targets[@]}" -eq 0 ] && { targets=(//...); full=1; }
if [ "$stress" -eq 1 ]; then
  [[ "$stress_cpus" =~ ^[0-9]+$ ]] ||
    { echo "run.sh: --stress=N takes a whole number of busy loops, got '$stress_cpus'" >&2; exit 2; }
  [[ "$stress_runs" =~ ^[1-9][0-9]*,[1-9][0-9]*$ ]] ||
    { echo "run.sh: --stress_runs=U,I takes two counts (small tests, others), got '$stress_runs'" >&2; exit 2; }
  # Tests that start real processes (etcd, agents, mounts: the harness's
  # Subprocess), shell and Python tests and large ones run I times, the
  # rest U times (the last --runs_per_test that matches a test wins).
  query=""
  for t in "${targets[@]}"; do
    case "$t" in
      -*) query+=" - ${t#-}" ;;
      *) query+="${query:+ + }$t" ;;
    esac
  done
  big=$(bazel query --noshow_progress "tests($query) intersect (
          rdeps($query, //tests/testing:subprocess) +
          kind('sh_test|py_test', $query) + attr(size, large, tests($query)))" \
          2>/dev/null | sed -E 's/[.+]/\\&/g; s/^(.*)$/^\1$/' | paste -sd, -)
  flags+=("--nocache_test_results" "--runs_per_test=${stress_runs%,*}")
  [ -n "$big" ] && flags+=("--runs_per_test=$big@${stress_runs#*,}")
  bash tests/load.sh --cpus="$stress_cpus" &
  load_pid=$!
  disown "$load_pid"  # no "Terminated" line when it is stopped
fi

log=$(mktemp /tmp/rangefs-test-XXXXXX.log)
asan_log=$(mktemp /tmp/rangefs-test-asan-XXXXXX.log)
tsa_log=$(mktemp /tmp/rangefs-test-tsa-XXXXXX.log)
trap 'rm -f "$log" "$asan_log" "$tsa_log"; [ -n "${load_pid:-}" ] && kill "$load_pid" 2>/dev/null
      [ -n "${tsa_pid:-}" ] && { pkill -TERM -P "$tsa_pid"; kill "$tsa_pid"; } 2>/dev/null' EXIT
filter='^(INFO: (From|Analyzed|Found|Build|Elapsed|Invocation|Streaming)|Loading|Analyzing|\[[0-9,]+ / )'
started=$(date +%s)

# Clang's thread-safety analysis (--config=tsa, .bazelrc): compiles only (no
# link, no test run), on full runs only, of every C++ target with a source
# that can see a thread-safety annotation or a Mutex (tests/tsa_targets.py;
# the others cannot draw its diagnostics: ~1/3 of the compile time; every
# package git holds if the query fails). It runs beside the tests, from the
# start: in an output base of its own (a second Bazel server; neither
# rebuilds after the other, no bazel-* links of its own) and at nice 19, so
# it takes the CPU time that the build and the tests leave idle and yields
# it at once to them; whatever it still has to compile when they end, it
# compiles then (was: ~300 s after them on a cold 2-core machine).
tsa_rc=0
tsa_pid=
if [ "$full" -eq 1 ]; then
  tsa_base=$(bazel info output_base 2>/dev/null)
  if [ -n "$tsa_base" ]; then
    (
      tsa_bazel=(nice -n 19 bazel --output_base="$tsa_base-tsa" --max_idle_secs=600)
      # The packages git holds, not //...: the build below makes a
      # bazel-<this directory> link into its own output base, which this
      # second server would load as packages of the workspace and fail on
      # (a race with the build's start; .bazelignore cannot name every
      # clone's directory).
      tsa_patterns=$(git ls-files -- BUILD '*/BUILD' 2>/dev/null |
        awk -F/ 'NF == 1 {print "//:all"; next} {print "//" $1 "/..."}' | sort -u | tr '\n' ' ')
      [ -n "$tsa_patterns" ] || tsa_patterns=//...
      tsa_targets=$("${tsa_bazel[@]}" query --noshow_progress --output=xml \
        "kind(\"cc_(library|binary|test) rule\", $(echo $tsa_patterns | sed 's/ / + /g'))" 2>/dev/null |
        python3 tests/tsa_targets.py) || tsa_targets=$tsa_patterns
      echo "tsa: $(wc -w <<<"$tsa_targets") target(s)"
      [ -z "$tsa_targets" ] && exit 0
      # shellcheck disable=SC2086  # one label a line
      exec "${tsa_bazel[@]}" build --noshow_progress --symlink_prefix=/ --config=tsa \
        --output_groups=compilation_outputs $tsa_targets
    ) >"$tsa_log" 2>&1 &
    tsa_pid=$!
  else
    echo "run.sh: bazel info output_base failed: no --config=tsa build" >"$tsa_log"
    tsa_rc=1
  fi
fi
bazel test --noshow_progress "${flags[@]}" "${targets[@]}" 2>&1 | tee "$log" | grep -v -E "$filter"
rc=${PIPESTATUS[0]}
testlogs=$(bazel info bazel-testlogs 2>/dev/null)

# The fuzz corpus replays again under AddressSanitizer + UBSan (gcc; own
# output directory, so nothing else is rebuilt), on full runs only.
asan_rc=0
asan_testlogs=
if [ "$full" -eq 1 ]; then
  bazel test --noshow_progress "${flags[@]}" --config=asan --build_tests_only //tests/fuzz:all 2>&1 \
    | sed -E 's#^(//[^ ]+)#\1[asan]#' | tee "$asan_log" | grep -v -E "$filter"
  asan_rc=${PIPESTATUS[0]}
  asan_testlogs=$(bazel info --config=asan bazel-testlogs 2>/dev/null)
fi

if [ "$full" -eq 1 ]; then
  if [ -n "$tsa_pid" ]; then
    wait "$tsa_pid"
    tsa_rc=$?
    tsa_pid=
  fi
  echo "tsa: bazel build --config=tsa (clang -Wthread-safety, compile only):" \
    "$(grep -m1 -o -E '[0-9]+ target\(s\)' "$tsa_log" || echo "no targets")"
  grep -E "error:|warning:|run.sh:" "$tsa_log" | head -40
fi

python3 - "$log" "$testlogs" "$rc" "$asan_log" "$asan_testlogs" "$asan_rc" "$tsa_log" "$tsa_rc" "$started" <<'PY'
import glob, os, re, sys
import xml.etree.ElementTree as ET
runs = [(sys.argv[i], sys.argv[i + 1], int(sys.argv[i + 2])) for i in (1, 4)]
tsa_log, tsa_rc = sys.argv[7], int(sys.argv[8])
started = int(sys.argv[9])
passed = failed = 0
bad = []
flaky = []  # (target, runs failed, runs, failed test cases)


def cases(xml):
    """(passed, failed names) of one test.xml; None if unreadable."""
    try:
        root = ET.parse(xml).getroot()
    except (ET.ParseError, OSError):
        return None
    p, f = 0, []
    for tc in root.iter("testcase"):
        if tc.find("failure") is not None or tc.find("error") is not None:
            f.append(tc.get("name", "?"))
        elif tc.get("status", "run") != "notrun":
            p += 1
    return p, f


lines = [(l, t) for log, t, _ in runs for l in open(log, errors="replace")]
for line, testlogs in lines:
    m = re.match(r"^(//\S+?)(\[asan\])?\s+(?:\(cached\)\s+)?(PASSED|FAILED|TIMEOUT|FLAKY|NO STATUS|FAILED TO BUILD|INCOMPLETE|REMOTE FAILURE|SKIPPED)\b", line)
    if not m:
        continue
    target, status = m.group(1), m.group(3)
    base = os.path.join(testlogs, target[2:].replace(":", "/"))
    # One test.xml per run (--runs_per_test) or shard, or one for all;
    # files older than this run are left over from earlier ones (a result
    # from the cache is then the only one there is).
    xmls = sorted(glob.glob(os.path.join(base, "*_of_*", "test.xml")))
    xmls.append(os.path.join(base, "test.xml"))
    fresh = [x for x in xmls if os.path.exists(x) and os.path.getmtime(x) >= started]
    xmls = fresh or [xmls[-1]]
    target += m.group(2) or ""
    p = f = 0
    runs_failed, names = 0, set()
    if status in ("PASSED", "FAILED", "FLAKY"):
        for x in xmls:
            c = cases(x)
            if c is None:
                continue
            p += c[0]
            f += len(c[1])
            names.update(c[1])
            runs_failed += 1 if c[1] else 0
    if status == "PASSED":
        p = max(p, 1) if f == 0 else p
        f = 0
    elif f == 0:
        f = 1
    if f:
        bad.append(f"{target} {status}")
        if len(xmls) > 1:
            flaky.append((target, max(runs_failed, 1), len(xmls), sorted(names)))
    passed += p
    failed += f
for log, _, rc in runs:
    if rc != 0 and failed == 0:
        failed = 1
        bad.append(f"bazel exited {rc} (build or analysis failure)")
if tsa_rc != 0:
    failed += 1
    errs = [l.rstrip() for l in open(tsa_log, errors="replace") if "-Wthread-safety" in l]
    bad.append(f"--config=tsa build exited {tsa_rc}: {len(errs)} thread-safety error(s)")
    for e in errs[:20]:
        print("TSA:", e)
for b in bad:
    print("FAILED:", b)
for target, k, n, names in flaky:
    print(f"STRESS: {target} failed in {k} of {n} runs: {', '.join(names) or 'no test case named (timeout or crash)'}")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
PY
