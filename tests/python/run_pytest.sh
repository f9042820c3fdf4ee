#!/usr/bin/env bash
# //tests/python:python_test: the pytest suite of the rangefs Python package
# against a real local cluster. Steps: the pinned virtualenv (python/venv.sh
# at $RANGEFS_PYTHON_VENV; tests/run.sh points it at .cache/python-venv),
# the package's wheel built from the extension, repaired by auditwheel and
# pip-installed into a private site dir, a 3-node cluster
# (deploy/local/cluster.sh), then pytest with its JUnit XML as this test's
# result. Runs in a private mount namespace (the tests' FUSE mounts go with
# it); the cluster is stopped on every exit.
set -uo pipefail
if [ -z "${RANGEFS_PYTEST_NS:-}" ]; then
  RANGEFS_PYTEST_NS=1 exec unshare -m --propagation private bash "$0" "$@"
fi
RF="$TEST_SRCDIR/$TEST_WORKSPACE"
T="$TEST_TMPDIR"
export PYTHONDONTWRITEBYTECODE=1

venv=${RANGEFS_PYTHON_VENV:-/tmp/rangefs-python-venv}
py=$(bash "$RF/python/venv.sh" "$venv") || { echo "FAIL: virtualenv $venv"; exit 1; }

# The package as a user installs it: the wheel (python/build_wheel.py) of
# the extension Bazel built for this test, repaired by auditwheel (Debian's
# shared libraries copied in, tag manylinux_2_34), pip-installed into a
# private site dir (so the fsspec entry point is registered as for users).
# test_wheel.py installs the same file into a fresh virtualenv.
rm -rf "$T/dist" "$T/wheelhouse" "$T/site"
vbin=$(dirname "$py")
"$py" "$RF/python/build_wheel.py" --so "$RF/python/rangefs/_rangefs.so" \
  --out "$T/dist" >/dev/null || { echo "FAIL: build_wheel.py"; exit 1; }
start=$(date +%s)
PATH="$vbin:$PATH" "$vbin/auditwheel" repair -z 1 -w "$T/wheelhouse" "$T"/dist/*.whl \
  >"$T/auditwheel.log" 2>&1 || { echo "FAIL: auditwheel repair"; cat "$T/auditwheel.log"; exit 1; }
wheel=$(ls "$T"/wheelhouse/rangefs-*.whl)
echo "wheel: $(basename "$wheel") ($(du -k "$wheel" | cut -f1) KiB, repaired in $(( $(date +%s) - start )) s)"
"$py" -m pip install -q --disable-pip-version-check --no-deps --no-index \
  --target "$T/site" "$wheel" || { echo "FAIL: pip install $wheel"; exit 1; }
export RANGEFS_TEST_WHEEL="$wheel"
export PYTHONPATH="$T/site"

BIN="$T/bin"
mkdir -p "$BIN"
cp "$RF/storage_node/rangefs-node" "$RF/admin/rangefs-admin" \
   "$RF/tests/bench/rangefs-bench" "$RF/client_lib/blocking_fuse" "$BIN/"
export RANGEFS_TEST_BIN="$BIN"
export RANGEFS_TEST_CLUSTER_SH="$RF/deploy/local/cluster.sh"
CDIR="$T/cluster"
cleanup() {
  # Clusters the tests started (and did not stop) too.
  for d in "$CDIR" "$T"/extra-*; do
    [ -e "$d/cluster.env" ] && bash "$RANGEFS_TEST_CLUSTER_SH" down --dir="$d" >/dev/null 2>&1
  done
  for p in "$T"/fuse-*.pid; do
    [ -e "$p" ] && kill -9 "$(cat "$p")" 2>/dev/null
  done
  return 0
}
trap cleanup EXIT
trap 'exit 1' TERM INT
env=$(bash "$RANGEFS_TEST_CLUSTER_SH" up --dir="$CDIR" --nodes=3 --bin="$BIN" \
      --cluster=pytest 2>"$T/cluster-up.log" | tail -n 1) \
  || { echo "FAIL: cluster up"; cat "$T/cluster-up.log"; exit 1; }
eval "export $env"  # RANGEFS_ETCD RANGEFS_CLUSTER MOUNT_ROOT
export RANGEFS_TEST_CLUSTER_DIR="$CDIR"

xml=${XML_OUTPUT_FILE:-$T/pytest.xml}
cd "$RF/tests/python"
"$py" -m pytest -p no:cacheprovider -q -ra --junitxml="$xml" \
  -o junit_family=xunit1 "$@" .
