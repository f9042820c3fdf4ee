#!/usr/bin/env bash
# Loads this machine the way a busy CI host is loaded, until killed:
#   tests/load.sh [--cpus=N] [--dir=D]
# N busy loops (default: one per core) and one disk writer (64 MiB files
# written with fsync and removed again, under D, default $TMPDIR or /tmp).
# SIGTERM or SIGINT stops every loop and removes the writer's file.
# tests/run.sh --stress runs the suite beside it; run it by hand beside any
# other command (e.g. `tests/load.sh & CI=true bash .ci/run; kill %1`).
set -uo pipefail

cpus=$(nproc)
dir=${TMPDIR:-/tmp}
for a in "$@"; do
  case "$a" in
    --cpus=*) cpus="${a#--cpus=}" ;;
    --dir=*) dir="${a#--dir=}" ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "load.sh: unknown argument $a (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$cpus" =~ ^[0-9]+$ ]] || { echo "load.sh: --cpus must be a whole number, got '$cpus'" >&2; exit 2; }
[ -d "$dir" ] || { echo "load.sh: --dir $dir is not a directory" >&2; exit 2; }

file=$(mktemp "$dir/rangefs-load-XXXXXX")
pids=()
stop() {
  trap - TERM INT HUP EXIT
  local p
  for p in "${pids[@]}"; do
    pkill -TERM -P "$p" 2>/dev/null  # the writer's dd
    kill "$p" 2>/dev/null
  done
  wait 2>/dev/null
  rm -f "$file"
  exit 0
}
trap stop TERM INT HUP EXIT

for ((i = 0; i < cpus; i++)); do
  (trap - TERM INT HUP EXIT; while :; do :; done) &
  pids+=($!)
done
(
  trap - TERM INT HUP EXIT
  while :; do
    dd if=/dev/zero of="$file" bs=1M count=64 conv=fsync status=none
    rm -f "$file"
  done
) 2>/dev/null &  # no "Terminated" from this shell when dd is stopped
pids+=($!)
echo "load.sh: $cpus busy loop(s) and a disk writer running (pids ${pids[*]})" >&2
wait
