#!/usr/bin/env bash
# Builds the rangefs Python package and pip-installs it into the Python
# environment given (a virtualenv made from Debian's /usr/bin/python3: the
# extension is built against its headers).
#
#   python/install.sh /path/to/venv/bin/python [pip install options]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
py=${1:?usage: install.sh PYTHON [pip options]}
shift
cd "$root"
bazel build --symlink_prefix=/ -c opt //python:rangefs/_rangefs.so >&2
bin=$(bazel info --symlink_prefix=/ -c opt bazel-bin 2>/dev/null)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
cp -rL python/pyproject.toml python/rangefs "$stage/"
cp -L "$bin/python/rangefs/_rangefs.so" "$stage/rangefs/"
chmod -R u+w "$stage"
"$py" -m pip install "$@" "$stage"
