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

# --ganesha: the userspace server's config, from ganesha.conf.in.
gargs=(--ganesha --export=/srv/rangefs/sn-01 --clients=10.1.0.0/16,10.2.0.0/16 --root="$root")
before=$(snapshot)
out=$(bash "$script" "${gargs[@]}" --dry-run) || fail "ganesha dry run failed: $out"
echo "$out"
[ "$(snapshot)" = "$before" ] || fail "ganesha dry run changed files"
for want in \
  "would create directory /var/lib/rangefs/ganesha" \
  "would write /etc/ganesha/rangefs.conf:" \
  "Bind_addr = 0.0.0.0;" "NFS_Port = 2049;" "MNT_Port = 20048;" "Protocols = 3, 4;" \
  "Minor_Versions = 0, 1;" "Lease_Lifetime = 60;" 'RecoveryRoot = "/var/lib/rangefs/ganesha";' \
  'Path = "/srv/rangefs/sn-01";' 'Pseudo = "/srv/rangefs/sn-01";' "Access_Type = RO;" \
  "Access_Type = None;" "Clients = 10.1.0.0/16, 10.2.0.0/16;" "Squash = Root_Squash;" \
  "Transports = TCP;" "Name = VFS;" "Enable_UDP = false;" \
  "would run: systemctl restart rangefs-ganesha.service" \
  "3 change(s) needed; dry run, nothing changed"; do
  grep -qF -- "$want" <<<"$out" || fail "ganesha dry run output lacks: $want"
done
grep -q "@[A-Z_]*@" <<<"$out" && fail "ganesha config keeps a placeholder"
out=$(bash "$script" "${gargs[@]}") || fail "ganesha real run failed: $out"
echo "$out"
conf="$root/etc/ganesha/rangefs.conf"
grep -qF 'Path = "/srv/rangefs/sn-01";' "$conf" || fail "ganesha conf: Path"
[ -d "$root/var/lib/rangefs/ganesha" ] || fail "recovery dir not made"
grep -qF "skipped (--root): systemctl restart rangefs-ganesha.service" <<<"$out" \
  || fail "systemctl not skipped under --root"
after=$(snapshot)
out=$(bash "$script" "${gargs[@]}") || fail "ganesha second run failed"
grep -qF "0 change(s) made" <<<"$out" || fail "ganesha second run changed something: $out"
[ "$(snapshot)" = "$after" ] || fail "ganesha second run modified files"
# Bad input is refused, naming the option.
for bad in --nfs-port=0 --mount-port=70000 --nfs-port=20048 --protocols=2 --lease=0 \
           --squash=all --bind='1.2.3.4;' --recovery=rel --ganesha-conf=rel \
           --clients='10.0.0.0/8;x'; do
  out=$(bash "$script" "${gargs[@]}" "$bad" 2>&1) && fail "ganesha accepted $bad"
  grep -qF -- "${bad%%=*}" <<<"$out" || fail "ganesha error for $bad does not name it: $out"
done
mkdir -p "$root/srv/bad dir"
bash "$script" --ganesha --export="/srv/bad dir" --clients='*' --root="$root" >/dev/null 2>&1 \
  && fail "ganesha accepted an export path with a space"

# The written config really serves: ganesha (v4, loopback, a free port)
# hands a file back byte-exact to libnfs's nfs-cat.
if [ "$(id -u)" = 0 ] && [ -x /usr/bin/ganesha.nfsd ] && command -v nfs-cat >/dev/null; then
  launcher="$TEST_SRCDIR/$TEST_WORKSPACE/deploy/local/ganesha_private.sh"
  srv=$(mktemp -d "${TEST_TMPDIR:-/tmp}/ganesha-export.XXXXXX")
  chmod 755 "$srv"
  head -c 300001 /dev/urandom >"$srv/object"
  chmod 644 "$srv/object"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  mport=$((port == 65535 ? port - 1 : port + 1))
  bash "$script" --ganesha --export="$srv" --clients=127.0.0.1 --bind=127.0.0.1 \
    --nfs-port="$port" --mount-port="$mport" --protocols=4 --no-restart \
    --ganesha-conf="$srv.conf" --recovery="$srv.rec" --root= >/dev/null \
    || fail "writing a live ganesha config failed"
  /bin/sh "$launcher" "$srv.conf" "$srv.log" &
  gpid=$!
  trap 'kill -KILL $gpid 2>/dev/null; rm -rf "$root" "$srv" "$srv.conf" "$srv.rec" "$srv.log"' EXIT
  url="nfs://127.0.0.1$srv/object?version=4&nfsport=$port"
  for _ in $(seq 1 100); do
    timeout 2 nfs-ls "nfs://127.0.0.1$srv?version=4&nfsport=$port" >/dev/null 2>&1 && break
    kill -0 "$gpid" 2>/dev/null || fail "ganesha exited: $(tail -5 "$srv.log")"
    sleep 0.1
  done
  timeout 20 nfs-cat "$url" >"$srv.got" || fail "nfs-cat $url failed: $(tail -5 "$srv.log")"
  cmp "$srv.got" "$srv/object" || fail "nfs-cat returned other bytes"
  rm -f "$srv.got"
  # Root is squashed (a root-only file is not readable) and the export is read-only.
  head -c 10 /dev/urandom >"$srv/secret" && chmod 600 "$srv/secret"
  timeout 20 nfs-cat "nfs://127.0.0.1$srv/secret?version=4&nfsport=$port" >/dev/null 2>&1 \
    && fail "root squash off: a 0600 file was readable"
  # unshare (the launcher) blocks SIGTERM: stop ganesha, its child.
  kill -TERM "$(cat "/proc/$gpid/task/$gpid/children")"
  for _ in $(seq 1 100); do kill -0 "$gpid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$gpid" 2>/dev/null && fail "ganesha did not stop on SIGTERM"
  wait "$gpid" 2>/dev/null || true
  echo "ganesha served the written config: byte-exact, root squashed"
else
  echo "SKIP live ganesha check: needs root, nfs-ganesha and libnfs-utils (deploy/install-deps.sh)"
fi
echo "PASS"
