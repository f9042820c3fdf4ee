#!/usr/bin/env bash
# deploy/node/export.sh against a temp root: --dry-run prints every change
# and touches nothing; a real run makes them; a second run changes nothing.
set -uo pipefail
fail() { echo "FAIL: $*"; exit 1; }
script="$TEST_SRCDIR/$TEST_WORKSPACE/deploy/node/export.sh"
root=$(mktemp -d "${TEST_TMPDIR:-/tmp}/exportroot.XXXXXX")
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/srv/rangefs/sn-01" "$root/proc/fs/nfsd"
echo "tcp 2049" >"$root/proc/fs/nfsd/portlist"
echo 8 >"$root/proc/fs/nfsd/threads"
args=(--export=/srv/rangefs/sn-01 --clients=10.1.0.0/16,10.2.0.0/16 --threads=64 --fsid=1 --root="$root")
snapshot() { (cd "$root" && find . -type f | sort | xargs md5sum); }

before=$(snapshot)
out=$(bash "$script" "${args[@]}" --dry-run) || fail "dry run failed: $out"
echo "$out"
[ "$(snapshot)" = "$before" ] || fail "dry run changed files"
[ ! -e "$root/etc" ] || fail "dry run created /etc"
for want in \
  "would write /etc/exports.d/rangefs.exports:" \
  "/srv/rangefs/sn-01 10.1.0.0/16(ro,no_subtree_check,insecure,root_squash,sec=sys,fsid=1) 10.2.0.0/16(ro,no_subtree_check,insecure,root_squash,sec=sys,fsid=1)" \
  "would write /etc/nfs.conf.d/rangefs.conf:" \
  "rdma-port=20049" \
  "would run: exportfs -ra" \
  "would run: echo rdma 20049 > /proc/fs/nfsd/portlist" \
  "would run: echo 64 > /proc/fs/nfsd/threads (now 8)" \
  "5 change(s) needed; dry run, nothing changed"; do
  grep -qF -- "$want" <<<"$out" || fail "dry run output lacks: $want"
done

out=$(bash "$script" "${args[@]}") || fail "real run failed: $out"
echo "$out"
grep -q "ro,no_subtree_check,insecure" "$root/etc/exports.d/rangefs.exports" || fail "exports"
grep -qx "threads=64" "$root/etc/nfs.conf.d/rangefs.conf" || fail "nfs.conf threads"
grep -qx "rdma=y" "$root/etc/nfs.conf.d/rangefs.conf" || fail "nfs.conf rdma"
grep -qx "rdma 20049" "$root/proc/fs/nfsd/portlist" || fail "portlist"
[ "$(cat "$root/proc/fs/nfsd/threads")" = 64 ] || fail "threads"
grep -qF "skipped (--root): exportfs -ra" <<<"$out" || fail "exportfs not skipped under --root"

# Idempotent: nothing to do the second time, no file touched.
after=$(snapshot)
out=$(bash "$script" "${args[@]}") || fail "second run failed"
echo "$out"
grep -qF "0 change(s) made" <<<"$out" || fail "second run changed something: $out"
[ "$(snapshot)" = "$after" ] || fail "second run modified files"
out=$(bash "$script" "${args[@]}" --dry-run)
grep -qF "0 change(s) needed" <<<"$out" || fail "dry run after apply: $out"

# A changed client network is one change plus the exportfs reload.
out=$(bash "$script" --export=/srv/rangefs/sn-01 --clients=10.3.0.0/16 --threads=64 --fsid=1 \
  --root="$root" --dry-run)
grep -qF "2 change(s) needed" <<<"$out" || fail "client change: $out"

# Bad input is refused.
bash "$script" --export=/nonexistent --clients=10.0.0.0/8 --root="$root" >/dev/null 2>&1 \
  && fail "missing export dir accepted"
bash "$script" --clients=10.0.0.0/8 >/dev/null 2>&1 && fail "missing --export accepted"
echo "PASS"
