#!/usr/bin/env bash
# Builds the rangefs wheel and, given a Python, pip-installs it there.
#
#   python/install.sh [PYTHON [pip install options]]
#
# 1. bazel build -c opt of the extension (cached: seconds when unchanged),
# 2. python/build_wheel.py: rangefs-VERSION-cp311-cp311-linux_x86_64.whl,
# 3. auditwheel repair (pinned in python/requirements.txt, from the tests'
#    virtualenv .cache/python-venv, python/venv.sh): Debian's gRPC,
#    protobuf, Abseil, OpenSSL, liburing... copied into the wheel, tagged
#    manylinux_2_34_x86_64, so it installs with `pip install FILE` into any
#    CPython 3.11 environment on x86-64 Linux with glibc >= 2.34,
# 4. with PYTHON (e.g. a virtualenv's bin/python): pip install of it.
# Prints the wheel's path (in dist/) on stdout.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
py=${1:-}
[ $# -gt 0 ] && shift
cd "$root"
bazel build --symlink_prefix=/ -c opt //python:rangefs/_rangefs.so >&2
bin=$(bazel info --symlink_prefix=/ -c opt bazel-bin 2>/dev/null)
tools=$(bash python/venv.sh "$root/.cache/python-venv")
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
"$tools" python/build_wheel.py --so "$bin/python/rangefs/_rangefs.so" \
  --out "$stage" >/dev/null
mkdir -p dist
rm -f dist/rangefs-*.whl
PATH="$(dirname "$tools"):$PATH" "$(dirname "$tools")/auditwheel" repair \
  -w dist "$stage"/rangefs-*.whl >&2
wheel=$(ls "$root"/dist/rangefs-*.whl)
if [ -n "$py" ]; then
  "$py" -m pip install --force-reinstall --no-deps "$@" "$wheel" >&2
fi
echo "$wheel"
