#!/usr/bin/env bash
# Makes (or reuses) the virtualenv of the Python tests: Debian's
# /usr/bin/python3 (the interpreter whose headers the extension is built
# against) plus python/requirements.txt, pinned wheels from the registry.
#
#   python/venv.sh DIR     -> prints DIR/bin/python
#
# Reused while DIR/.requirements matches requirements.txt; a concurrent
# caller waits on DIR.lock. Needs python3-venv (deploy/install-deps.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:?usage: venv.sh DIR}
req="$here/requirements.txt"
mkdir -p "$(dirname "$dir")"
exec 9>"$dir.lock"
flock -w 600 9 || { echo "venv.sh: $dir.lock held for 600 s" >&2; exit 1; }
if ! cmp -s "$req" "$dir/.requirements" 2>/dev/null || [ ! -x "$dir/bin/python" ]; then
  echo "venv.sh: creating $dir" >&2
  rm -rf "$dir"
  /usr/bin/python3 -m venv "$dir" >&2
  "$dir/bin/python" -m pip install -q --disable-pip-version-check \
    --only-binary=:all: -r "$req" >&2
  cp "$req" "$dir/.requirements"
fi
echo "$dir/bin/python"
