#!/usr/bin/env bash
# The shell etcd harness against Debian's etcd and etcdctl: put/get on one
# member, then a 3-member cluster that loses its leader and still takes writes.
set -euo pipefail
source "$(dirname "$0")/etcd_harness.sh"
export ETCDCTL_API=3

etcd_start 1
etcdctl --endpoints="$ETCD_ENDPOINTS" put /rangefs/sh/a hello >/dev/null
got=$(etcdctl --endpoints="$ETCD_ENDPOINTS" get --print-value-only /rangefs/sh/a)
[ "$got" = "hello" ] || { echo "FAIL: got '$got'"; exit 1; }
etcd_stop_all

etcd_start 3
leader=$(etcd_leader)
etcd_kill "$leader"
survivors=$(tr ',' '\n' <<<"$ETCD_ENDPOINTS" | sed -n "$(( (leader + 1) % 3 + 1 ))p")
ok=0
for _ in $(seq 1 100); do
  if etcdctl --endpoints="$survivors" --command-timeout=1s put /k after >/dev/null 2>&1; then
    ok=1; break
  fi
  sleep 0.1
done
[ "$ok" = 1 ] || { echo "FAIL: no write after leader kill"; exit 1; }
etcd_restart "$leader"
echo "PASS"
