#!/usr/bin/env bash
# Runs every rangefs test: installs missing Debian packages, builds with Bazel
# (offline), runs `bazel test //...`, and prints one closing line
#   N passed, N failed
# counting test cases (gtest cases, one per shell test). Exits non-zero if
# anything failed or did not build. Extra arguments go to `bazel test`:
# target patterns (e.g. tests/run.sh //namespace/...) and flags (e.g.
# --symlink_prefix=/). Without a target pattern it runs //... and then the
# fuzz corpus replay again under --config=asan.
set -uo pipefail
cd "$(dirname "$0")/.."

bash deploy/install-deps.sh || { echo "install-deps failed"; echo "0 passed, 1 failed"; exit 1; }

# The Python tests' pinned virtualenv (python/venv.sh makes it on first use;
# .cache/ is ignored by git and Bazel).
flags=("--test_env=RANGEFS_PYTHON_VENV=$PWD/.cache/python-venv")
targets=()
for a in "$@"; do
  case "$a" in
    -//*) targets+=("$a") ;;  # A negative target pattern.
    -*) flags+=("$a") ;;
    *) targets+=("$a") ;;
  esac
done
full=0
[ "${#targets[@]}" -eq 0 ] && { targets=(//...); full=1; }

log=$(mktemp /tmp/rangefs-test-XXXXXX.log)
asan_log=$(mktemp /tmp/rangefs-test-asan-XXXXXX.log)
trap 'rm -f "$log" "$asan_log"' EXIT
filter='^(INFO: (From|Analyzed|Found|Build|Elapsed|Invocation|Streaming)|Loading|Analyzing|\[[0-9,]+ / )'
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

python3 - "$log" "$testlogs" "$rc" "$asan_log" "$asan_testlogs" "$asan_rc" <<'PY'
import os, re, sys
import xml.etree.ElementTree as ET
runs = [(sys.argv[i], sys.argv[i + 1], int(sys.argv[i + 2])) for i in (1, 4)]
passed = failed = 0
seen = 0
bad = []
lines = [(l, t) for log, t, _ in runs for l in open(log, errors="replace")]
for line, testlogs in lines:
    m = re.match(r"^(//\S+?)(\[asan\])?\s+(?:\(cached\)\s+)?(PASSED|FAILED|TIMEOUT|FLAKY|NO STATUS|FAILED TO BUILD|INCOMPLETE|REMOTE FAILURE|SKIPPED)\b", line)
    if not m:
        continue
    seen += 1
    target, status = m.group(1), m.group(3)
    xml = os.path.join(testlogs, target[2:].replace(":", "/"), "test.xml")
    target += m.group(2) or ""
    p = f = 0
    if status in ("PASSED", "FAILED", "FLAKY") and os.path.exists(xml):
        try:
            for tc in ET.parse(xml).getroot().iter("testcase"):
                if tc.find("failure") is not None or tc.find("error") is not None:
                    f += 1
                elif tc.get("status", "run") != "notrun":
                    p += 1
        except ET.ParseError:
            pass
    if status == "PASSED":
        p = max(p, 1) if f == 0 else p
        f = 0
    elif f == 0:
        f = 1
    if f:
        bad.append(f"{target} {status}")
    passed += p
    failed += f
for log, _, rc in runs:
    if rc != 0 and failed == 0:
        failed = 1
        bad.append(f"bazel exited {rc} (build or analysis failure)")
for b in bad:
    print("FAILED:", b)
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
PY
