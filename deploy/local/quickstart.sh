#!/usr/bin/env bash
# The README main-job command: a local rangefs cluster (real etcd, several
# storage nodes) and a verified parallel read job with a report.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash deploy/install-deps.sh
echo "quickstart: not yet: the local cluster launcher lands with the storage-node agent and client library (issues 4-6)."
exit 0
