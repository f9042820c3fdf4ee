#!/usr/bin/env bash
# Exports a storage node's data directory read-only over NFS (RDMA and TCP)
# to the client network. Idempotent: run it on every boot or config change.
#
#   deploy/node/export.sh --export=/srv/rangefs/sn-017 --clients=10.1.0.0/16 \
#       [--threads=64] [--rdma-port=20049] [--fsid=17] [--dry-run] [--root=DIR]
#
# It makes these changes (each only when needed; --dry-run prints them and
# changes nothing):
#   1. /etc/exports.d/rangefs.exports: one line
#        <export> <clients>(ro,no_subtree_check,insecure,root_squash,sec=sys[,fsid=N])
#      "insecure" because NFS/RDMA clients do not use a reserved port.
#   2. /etc/nfs.conf.d/rangefs.conf: [nfsd] threads=N, rdma=y,
#      rdma-port=20049 (persistent across reboots, read by nfs-utils).
#   3. the running server: `exportfs -ra`; `echo rdma 20049 >
#      /proc/fs/nfsd/portlist` (needs the svcrdma module: modprobe rpcrdma);
#      `echo N > /proc/fs/nfsd/threads`.
# --root=DIR prefixes every path (for tests); commands (exportfs, modprobe)
# are only run when --root is / .
#
# --ganesha: the userspace NFS server instead of the kernel's (no kernel
# nfsd, or no kernel modules allowed; clients read it with libnfs,
# data_path=nfs): writes /etc/ganesha/rangefs.conf from ganesha.conf.in
# beside this script (read-only VFS export of --export, NFSv3 and v4.0/4.1,
# TCP, root squashed, only --clients) and restarts rangefs-ganesha.service
# (deploy/systemd) when the file changed. Options of this mode:
#   [--bind=ADDR] (0.0.0.0) [--nfs-port=2049] [--mount-port=20048]
#   [--protocols=3,4] (or 4) [--lease=60] [--squash=root|none]
#   [--ganesha-conf=/etc/ganesha/rangefs.conf] [--recovery=/var/lib/rangefs/ganesha]
#   [--no-restart] (only write the file: deploy/local/cluster.sh runs its own)
# The node then publishes it: rangefs-node --nfs_export=nfs://HOST[:PORT]/EXPORT
# --nfs_version=4 (or 3). The kernel's nfsd and ganesha cannot both own port
# 2049: use one or the other on a node.
set -euo pipefail

usage() {
  echo "usage: $0 --export=DIR --clients=CIDR[,CIDR] [--threads=N] [--rdma-port=P] [--fsid=N] [--dry-run] [--root=DIR]" >&2
  echo "       $0 --ganesha --export=DIR --clients=CIDR[,CIDR]|* [--bind=ADDR] [--nfs-port=P] [--mount-port=P] [--protocols=3,4|4] [--lease=S] [--squash=root|none] [--ganesha-conf=FILE] [--recovery=DIR] [--no-restart] [--dry-run] [--root=DIR]" >&2
  exit 2
}

export_dir="" clients="" threads=64 rdma_port=20049 fsid="" dry_run=0 root=""
ganesha=0 bind=0.0.0.0 nfs_port=2049 mount_port=20048 protocols=3,4 lease=60 squash=root
ganesha_conf=/etc/ganesha/rangefs.conf recovery=/var/lib/rangefs/ganesha restart=1
for arg in "$@"; do
  case "$arg" in
    --ganesha) ganesha=1 ;;
    --bind=*) bind=${arg#--bind=} ;;
    --nfs-port=*) nfs_port=${arg#--nfs-port=} ;;
    --mount-port=*) mount_port=${arg#--mount-port=} ;;
    --protocols=*) protocols=${arg#--protocols=} ;;
    --lease=*) lease=${arg#--lease=} ;;
    --squash=*) squash=${arg#--squash=} ;;
    --ganesha-conf=*) ganesha_conf=${arg#--ganesha-conf=} ;;
    --recovery=*) recovery=${arg#--recovery=} ;;
    --no-restart) restart=0 ;;
    --export=*) export_dir=${arg#--export=} ;;
    --clients=*) clients=${arg#--clients=} ;;
    --threads=*) threads=${arg#--threads=} ;;
    --rdma-port=*) rdma_port=${arg#--rdma-port=} ;;
    --fsid=*) fsid=${arg#--fsid=} ;;
    --dry-run) dry_run=1 ;;
    --root=*) root=${arg#--root=} ;;
    *) usage ;;
  esac
done
[ -n "$export_dir" ] && [ -n "$clients" ] || usage
[[ "$export_dir" == /* ]] || { echo "export.sh: --export must be absolute" >&2; exit 2; }
[[ "$threads" =~ ^[0-9]+$ ]] && [ "$threads" -ge 1 ] || { echo "export.sh: bad --threads" >&2; exit 2; }
[[ "$rdma_port" =~ ^[0-9]+$ ]] || { echo "export.sh: bad --rdma-port" >&2; exit 2; }
root=${root%/}
real_root=0
[ -z "$root" ] && real_root=1

changes=0
say() { echo "export.sh: $*"; }

# put_file PATH CONTENT: writes PATH (under --root) if its content differs.
put_file() {
  local path="$root$1" content=$2
  if [ -f "$path" ] && [ "$(cat "$path")" = "$content" ]; then
    say "unchanged: $1"
    return
  fi
  changes=$((changes + 1))
  if [ "$dry_run" = 1 ]; then
    say "would write $1:"
    printf '%s\n' "$content" | sed 's/^/    /'
    return
  fi
  mkdir -p "$(dirname "$path")"
  printf '%s\n' "$content" >"$path.tmp.$$"
  mv "$path.tmp.$$" "$path"
  say "wrote $1"
}

# run_cmd DESCRIPTION CMD...: runs CMD on the real root only.
run_cmd() {
  changes=$((changes + 1))
  if [ "$dry_run" = 1 ]; then
    say "would run: $*"
  elif [ "$real_root" = 1 ]; then
    say "running: $*"
    "$@"
  else
    say "skipped (--root): $*"
  fi
}

if [ "$ganesha" = 1 ]; then
  # shellcheck source=deploy/node/export_ganesha.sh
  . "$(dirname "$0")/export_ganesha.sh"
  exit 0
fi

# 1. The export line, one per client network.
opts="ro,no_subtree_check,insecure,root_squash,sec=sys"
[ -n "$fsid" ] && opts="$opts,fsid=$fsid"
line="$export_dir"
IFS=, read -r -a cidrs <<<"$clients"
for c in "${cidrs[@]}"; do
  [ -n "$c" ] && line="$line $c($opts)"
done
if [ ! -d "$root$export_dir" ]; then
  echo "export.sh: export directory $export_dir does not exist" >&2
  exit 1
fi
want_exports="# Written by rangefs deploy/node/export.sh; do not edit.
$line"
exports_changed=1
if [ -f "$root/etc/exports.d/rangefs.exports" ] &&
   [ "$(cat "$root/etc/exports.d/rangefs.exports")" = "$want_exports" ]; then
  exports_changed=0
fi
put_file /etc/exports.d/rangefs.exports "$want_exports"

# 2. Persistent nfsd settings.
put_file /etc/nfs.conf.d/rangefs.conf "# Written by rangefs deploy/node/export.sh; do not edit.
[nfsd]
threads=$threads
rdma=y
rdma-port=$rdma_port"

# 3. The running server.
[ "$exports_changed" = 1 ] && run_cmd exportfs -ra
portlist="$root/proc/fs/nfsd/portlist"
if [ ! -e "$portlist" ]; then
  say "note: /proc/fs/nfsd not mounted (nfs-server not running?): start nfs-server, then re-run"
elif grep -q "^rdma $rdma_port\$" "$portlist"; then
  say "unchanged: /proc/fs/nfsd/portlist has rdma $rdma_port"
else
  changes=$((changes + 1))
  if [ "$dry_run" = 1 ]; then
    say "would run: echo rdma $rdma_port > /proc/fs/nfsd/portlist"
  else
    [ "$real_root" = 1 ] && modprobe rpcrdma 2>/dev/null || true
    echo "rdma $rdma_port" >"$portlist"
    say "enabled NFS over RDMA: rdma $rdma_port in /proc/fs/nfsd/portlist"
  fi
fi
threads_file="$root/proc/fs/nfsd/threads"
if [ -e "$threads_file" ]; then
  if [ "$(cat "$threads_file")" = "$threads" ]; then
    say "unchanged: /proc/fs/nfsd/threads is $threads"
  else
    changes=$((changes + 1))
    if [ "$dry_run" = 1 ]; then
      say "would run: echo $threads > /proc/fs/nfsd/threads (now $(cat "$threads_file"))"
    else
      echo "$threads" >"$threads_file"
      say "set /proc/fs/nfsd/threads to $threads"
    fi
  fi
fi
if [ "$dry_run" = 1 ]; then
  say "$changes change(s) needed; dry run, nothing changed"
else
  say "$changes change(s) made"
fi
