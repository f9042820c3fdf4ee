# Sourced by deploy/node/export.sh --ganesha (its variables and helpers:
# put_file, run_cmd, say, root, dry_run, changes): the node's export through
# nfs-ganesha, written from ganesha.conf.in beside this file.

ganesha_fail() { echo "export.sh: $*" >&2; exit 2; }
is_port() { [[ "$1" =~ ^[0-9]{1,5}$ ]] && [ "$1" -ge 1 ] && [ "$1" -le 65535 ]; }

is_port "$nfs_port" || ganesha_fail "bad --nfs-port=$nfs_port (1..65535)"
is_port "$mount_port" || ganesha_fail "bad --mount-port=$mount_port (1..65535)"
[ "$nfs_port" != "$mount_port" ] || ganesha_fail "--nfs-port and --mount-port are both $nfs_port"
[[ "$bind" =~ ^[0-9A-Za-z.:_-]+$ ]] || ganesha_fail "bad --bind=$bind (an address)"
case "$protocols" in
  3,4) ganesha_protocols="3, 4" ;;
  4) ganesha_protocols="4" ;;
  *) ganesha_fail "bad --protocols=$protocols (3,4 or 4)" ;;
esac
[[ "$lease" =~ ^[0-9]{1,4}$ ]] && [ "$lease" -ge 1 ] && [ "$lease" -le 3600 ] \
  || ganesha_fail "bad --lease=$lease (1..3600 seconds)"
case "$squash" in
  root) ganesha_squash=Root_Squash ;;
  none) ganesha_squash=No_Root_Squash ;;
  *) ganesha_fail "bad --squash=$squash (root or none)" ;;
esac
[[ "$ganesha_conf" == /* ]] || ganesha_fail "--ganesha-conf must be absolute"
[[ "$recovery" == /* && "$recovery" =~ ^[0-9A-Za-z/._-]+$ ]] \
  || ganesha_fail "bad --recovery=$recovery (an absolute path of [0-9A-Za-z/._-])"
[[ "$export_dir" =~ ^/[0-9A-Za-z/._+-]*$ ]] \
  || ganesha_fail "--export=$export_dir: ganesha config needs a path of [0-9A-Za-z/._+-]"
if [ "$clients" = "*" ]; then
  ganesha_clients="*"
else
  [[ "$clients" =~ ^[0-9A-Za-z.:/_,-]+$ ]] \
    || ganesha_fail "bad --clients=$clients (CIDRs or hosts, comma-separated, or *)"
  ganesha_clients=${clients//,/, }
fi
[ -d "$root$export_dir" ] || { echo "export.sh: export directory $export_dir does not exist" >&2; exit 1; }

template="$(dirname "${BASH_SOURCE[0]}")/ganesha.conf.in"
[ -r "$template" ] || { echo "export.sh: missing template $template" >&2; exit 1; }
conf=$(cat "$template")
conf=${conf//@BIND_ADDR@/"$bind"}
conf=${conf//@NFS_PORT@/"$nfs_port"}
conf=${conf//@MNT_PORT@/"$mount_port"}
conf=${conf//@PROTOCOLS@/"$ganesha_protocols"}
conf=${conf//@LEASE_LIFETIME@/"$lease"}
conf=${conf//@RECOVERY_ROOT@/"$recovery"}
conf=${conf//@EXPORT@/"$export_dir"}
conf=${conf//@CLIENTS@/"$ganesha_clients"}
conf=${conf//@SQUASH@/"$ganesha_squash"}
if [[ "$conf" =~ @[A-Z_]+@ ]]; then
  echo "export.sh: $template has a placeholder export.sh does not fill: ${BASH_REMATCH[0]}" >&2
  exit 1
fi

if [ ! -d "$root$recovery" ]; then
  changes=$((changes + 1))
  if [ "$dry_run" = 1 ]; then
    say "would create directory $recovery"
  else
    mkdir -p "$root$recovery"
    say "created directory $recovery"
  fi
fi
before=$changes
put_file "$ganesha_conf" "$conf"
if [ "$changes" != "$before" ] && [ "$restart" = 1 ]; then
  run_cmd systemctl restart rangefs-ganesha.service
fi
if [ "$dry_run" = 1 ]; then
  say "$changes change(s) needed; dry run, nothing changed"
else
  say "$changes change(s) made"
fi
