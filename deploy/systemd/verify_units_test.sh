#!/usr/bin/env bash
# Runs `systemd-analyze verify` on the rangefs units. The units name
# binaries under /usr/local/bin and /usr/bin/etcd; copies of the units point
# at stub executables in a temp dir instead, so the check (which also
# requires ExecStart binaries to exist) runs on any machine. Any output
# from verify is a failure: systemd only warns (exit 0) on many unit-file
# errors, such as an unknown Restart= value. A deliberately broken unit
# checks that this detection works.
set -uo pipefail
fail() { echo "FAIL: $*"; exit 1; }

if ! command -v systemd-analyze >/dev/null; then
  echo "systemd-analyze missing: installing Debian's systemd package" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends systemd >/dev/null \
    || fail "cannot install systemd (run deploy/install-deps.sh)"
fi

src="$TEST_SRCDIR/$TEST_WORKSPACE/deploy/systemd"
tmp=$(mktemp -d "${TEST_TMPDIR:-/tmp}/units.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/units"
for b in etcd rangefs-node rangefs-mountd rangefs-mount rangefs-keeper rangefs-raise-pipe-max; do
  printf '#!/bin/sh\nexit 0\n' >"$tmp/bin/$b"
  chmod +x "$tmp/bin/$b"
done
units=()
printf '#!/bin/sh\nexit 0\n' >"$tmp/bin/ganesha.nfsd"
chmod +x "$tmp/bin/ganesha.nfsd"
for u in etcd-rangefs.service rangefs-node.service rangefs-node@.service rangefs-mountd.service \
         rangefs-mount.service rangefs-keeper.service rangefs-ganesha.service; do
  [ -f "$src/$u" ] || fail "missing unit $u"
  sed -e "s#/usr/local/bin/#$tmp/bin/#g" -e "s#/usr/bin/etcd #$tmp/bin/etcd #g" \
    -e "s#/usr/bin/ganesha.nfsd #$tmp/bin/ganesha.nfsd #g" \
    "$src/$u" >"$tmp/units/$u"
done
# A template is verified through an instance.
cp "$tmp/units/rangefs-node@.service" "$tmp/units/rangefs-node@sn-01.service"
units=("$tmp/units/etcd-rangefs.service" "$tmp/units/rangefs-node.service"
       "$tmp/units/rangefs-node@sn-01.service" "$tmp/units/rangefs-mountd.service"
       "$tmp/units/rangefs-mount.service" "$tmp/units/rangefs-ganesha.service")

verify() {  # verify UNIT...: prints verify's output; fails on any output
  local out rc
  out=$(cd "$tmp/units" && SYSTEMD_LOG_COLOR=0 systemd-analyze verify --man=no "$@" 2>&1)
  rc=$?
  # Messages about the host's own units (the test machine may not boot
  # with systemd) are not about ours.
  out=$(printf "%s\n" "$out" | grep -v "^$" | grep -E "$tmp|rangefs|etcd" || true)
  printf '%s' "$out"
  [ "$rc" = 0 ] && [ -z "$out" ]
}

out=$(verify "${units[@]}") || fail "systemd-analyze verify: rc or output: $out"

# The check must catch a broken unit: an unknown Restart= value only warns.
sed 's/^Restart=always/Restart=sometimes/' "$tmp/units/rangefs-mountd.service" \
  >"$tmp/units/broken-mountd.service"
out=$(verify "$tmp/units/broken-mountd.service") && fail "broken unit passed verify"
echo "$out" | grep -q "restart specifier" || fail "unexpected verify output: $out"
# And a missing binary.
sed "s#$tmp/bin/rangefs-mountd#$tmp/bin/nope#" "$tmp/units/rangefs-mountd.service" \
  >"$tmp/units/nobin-mountd.service"
verify "$tmp/units/nobin-mountd.service" >/dev/null && fail "missing binary passed verify"

# Contracts the runbook relies on.
grep -q '^KillSignal=SIGTERM' "$src/rangefs-node@.service" || fail "node: KillSignal"
grep -q '^TimeoutStopSec=30s' "$src/rangefs-node@.service" || fail "node: stop timeout"
grep -q 'CAP_SYS_ADMIN' "$src/rangefs-mountd.service" || fail "mountd: CAP_SYS_ADMIN"
# Agents are wired for mTLS, and --insecure is off unless the env file says so.
for u in rangefs-node.service rangefs-node@.service; do
  for f in '--tls_cert=${TLS_CERT}' '--tls_key=${TLS_KEY}' '--tls_client_ca=${TLS_CLIENT_CA}' \
           '--writers=${WRITERS}' '--insecure=${INSECURE}'; do
    grep '^ExecStart=' "$src/$u" | grep -qF -- "$f" || fail "$u: ExecStart lacks $f"
  done
  grep -q '^Environment=.*INSECURE=false' "$src/$u" || fail "$u: INSECURE must default to false"
done
for u in rangefs-mountd.service rangefs-mount.service; do
  if grep -Eq '^(ProtectSystem|PrivateTmp|ProtectHome|ReadWritePaths|ProtectKernelTunables|PrivateMounts)=' \
      "$src/$u"; then
    fail "$u must not run in a private mount namespace"
  fi
done
# rangefs-mount: readiness is the fork (the parent exits once it serves),
# SIGTERM unmounts cleanly, mounting needs CAP_SYS_ADMIN.
grep -q '^Type=forking' "$src/rangefs-mount.service" || fail "mount: Type=forking"
grep -q '^KillSignal=SIGTERM' "$src/rangefs-mount.service" || fail "mount: KillSignal"
grep -q 'CAP_SYS_ADMIN' "$src/rangefs-mount.service" || fail "mount: CAP_SYS_ADMIN"
grep '^ExecStart=' "$src/rangefs-mount.service" | grep -q -- '--status_dir=/run/rangefs-mount' \
  || fail "mount: status dir for doctor"
# rangefs-ganesha: the config export.sh --ganesha writes, in the foreground,
# logging to the journal; never beside the kernel's nfsd on port 2049.
grep '^ExecStart=' "$src/rangefs-ganesha.service" | grep -qF -- '-F -f /etc/ganesha/rangefs.conf -L STDOUT' \
  || fail "ganesha: ExecStart"
grep -q '^Conflicts=.*nfs-server.service' "$src/rangefs-ganesha.service" || fail "ganesha: Conflicts"
grep -q 'rangefs-ganesha.service' "$TEST_SRCDIR/$TEST_WORKSPACE/deploy/node/export_ganesha.sh" \
  || fail "export.sh --ganesha does not restart rangefs-ganesha.service"
for u in rangefs-node.service rangefs-node@.service; do
  grep '^ExecStart=' "$src/$u" | grep -qF -- '--nfs_export=${NFS_EXPORT} --nfs_version=${NFS_VERSION}' \
    || fail "$u: ExecStart lacks the NFS export flags"
done
echo "PASS: units verified"
