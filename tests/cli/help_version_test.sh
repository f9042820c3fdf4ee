#!/usr/bin/env bash
# Every rangefs binary answers --version with the version and git commit
# (base/version.h) and --help with its usage, both exit 0, without Abseil's
# "No flags matched" or "Debug build" lines; the local-cluster scripts
# answer --help with exit 0.
set -u
fail=0
check() {  # NAME CMD...: runs CMD, which must exit 0
  local name=$1; shift
  out=$("$@" 2>&1); rc=$?
  if [ "$rc" != 0 ]; then echo "FAIL $name: exit $rc: $out"; fail=1; fi
  if printf '%s' "$out" | grep -q -e "No flags matched" -e "Debug build"; then
    echo "FAIL $name: Abseil's usage lines: $out"; fail=1
  fi
}
for bin in admin/rangefs-admin mount/rangefs-mount storage_node/rangefs-node \
           keeper/rangefs-keeper tests/bench/rangefs-bench \
           client_lib/mountd/rangefs-mountd; do
  name=$(basename "$bin")
  check "$name --version" "$bin" --version
  if ! printf '%s' "$out" | grep -Eq "^$name [0-9]+\.[0-9]+\.[0-9]+ \(commit ([0-9a-f]{7,40}|unknown)\)$"; then
    echo "FAIL $name --version: '$out'"; fail=1
  fi
  check "$name --help" "$bin" --help
  printf '%s' "$out" | grep -q "usage: $name" || { echo "FAIL $name --help: $out"; fail=1; }
done
# The agent's --version is the version its live record carries.
node_version=$(storage_node/rangefs-node --version | cut -d' ' -f1-2)
admin_version=$(admin/rangefs-admin --version | cut -d' ' -f2)
[ "$node_version" = "rangefs-node $admin_version" ] \
  || { echo "FAIL: versions differ: $node_version / $admin_version"; fail=1; }
for script in deploy/local/cluster.sh deploy/local/quickstart.sh; do
  check "$script --help" bash "$script" --help
  printf '%s' "$out" | grep -q "deploy/local/" || { echo "FAIL $script --help: $out"; fail=1; }
done
check "cluster.sh help" bash deploy/local/cluster.sh help
# --etcd (the name every tool takes) and $RANGEFS_ETCD reach the keeper:
# it dials that endpoint (nothing listens on port 1: the error names it).
got=$(keeper/rangefs-keeper --etcd=127.0.0.1:1 --etcd_timeout_s=1 --dry_run 2>&1)
printf '%s' "$got" | grep -q "endpoints 127.0.0.1:1" \
  || { echo "FAIL keeper --etcd: $got"; fail=1; }
got=$(RANGEFS_ETCD=127.0.0.1:2 keeper/rangefs-keeper --etcd_timeout_s=1 --dry_run 2>&1)
printf '%s' "$got" | grep -q "endpoints 127.0.0.1:2" \
  || { echo "FAIL keeper \$RANGEFS_ETCD: $got"; fail=1; }
# A negative rate is refused (it used to mean "unpaced", silently).
for f in copy_bytes_per_sec ec_rebuild_bytes_per_sec convert_bytes_per_sec; do
  got=$(keeper/rangefs-keeper --etcd=127.0.0.1:1 --"$f"=-5 --dry_run 2>&1) && rc=0 || rc=$?
  { [ "$rc" = 2 ] && printf '%s' "$got" | grep -q -- "--$f=-5: want bytes/s >= 0"; } \
    || { echo "FAIL keeper --$f=-5 (rc $rc): $got"; fail=1; }
done
# A bad NFS export is refused before anything starts, naming the rule.
got=$(storage_node/rangefs-node --node_id=x --export_root=/tmp --nfs_export=nfs://h/a/../b 2>&1) \
  && rc=0 || rc=$?
{ [ "$rc" = 2 ] && printf '%s' "$got" | grep -q -- "--nfs_export.*not normalized"; } \
  || { echo "FAIL rangefs-node bad --nfs_export (rc $rc): $got"; fail=1; }
got=$(storage_node/rangefs-node --node_id=x --export_root=/tmp --nfs_export=nfs://h/a \
  --nfs_version=4.2 2>&1) && rc=0 || rc=$?
{ [ "$rc" = 2 ] && printf '%s' "$got" | grep -q "not 3, 4 or 4.1"; } \
  || { echo "FAIL rangefs-node bad --nfs_version (rc $rc): $got"; fail=1; }
# mount -t rangefs: mount.rangefs finds rangefs-mount on $PATH.
tmp=${TEST_TMPDIR:-$(mktemp -d)}
mkdir -p "$tmp/bin" "$tmp/helper"
printf '#!/bin/sh\necho "fake $*"\n' >"$tmp/bin/rangefs-mount"
chmod +x "$tmp/bin/rangefs-mount"
cp mount/mount.rangefs "$tmp/helper/mount.rangefs"
got=$(PATH="$tmp/bin:$PATH" sh "$tmp/helper/mount.rangefs" h:1 /mnt/x -o cluster=c 2>&1)
[ "$got" = "fake -o cluster=c h:1 /mnt/x" ] \
  || { echo "FAIL mount.rangefs via \$PATH: $got"; fail=1; }
[ "$fail" = 0 ] && echo "PASS" || exit 1
