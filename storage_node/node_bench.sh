#!/bin/bash
# Prints ReadRange vs plain-TCP and WriteObject vs dd throughput (MiB/s).
# Usage: storage_node/node_bench.sh [--dir=/data] [--mib=1024] [--rounds=3]
# Each round alternates a measurement with its baseline; medians are shown.
set -euo pipefail
cd "$(dirname "$0")/.."
bazel build --symlink_prefix=/ -c opt //storage_node:node_bench
exec "$(bazel info --symlink_prefix=/ -c opt bazel-bin)/storage_node/node_bench" "$@"
