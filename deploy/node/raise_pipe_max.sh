#!/usr/bin/env bash
# raise_pipe_max.sh [MIN_BYTES]: raises the kernel's fs.pipe-max-size to
# at least MIN_BYTES (default 2097152); never lowers it.
#
# rangefs-mount splices warm reads into the FUSE reply through a pipe
# (mount/mount_fs.h, MountFs::ReadSpliced): a 1 MiB reply plus its header
# needs a 2 MiB pipe, above the kernel's default fs.pipe-max-size (1 MiB).
# Without it the mount logs a warning and copies instead. The systemd unit
# (rangefs-mount.service, ExecStartPre) and deploy/local/{cluster,quickstart}.sh
# run this before mounting as root. To keep it across reboots instead:
#   echo fs.pipe-max-size=2097152 > /etc/sysctl.d/90-rangefs.conf
#
# Exit 0: the limit is at least MIN_BYTES now (one line says whether it
# was raised); 1: it is lower and cannot be raised (not root, read-only
# /proc/sys: the message says which file and why); 2: usage.
set -uo pipefail
FILE=/proc/sys/fs/pipe-max-size
min=${1:-2097152}
if [ $# -gt 1 ] || ! [[ "$min" =~ ^[0-9]{1,12}$ ]] || [ "$min" -eq 0 ]; then
  echo "usage: raise_pipe_max.sh [MIN_BYTES] (a positive byte count; got: $*)" >&2
  exit 2
fi
if ! now=$(cat "$FILE" 2>/dev/null) || ! [[ "$now" =~ ^[0-9]+$ ]]; then
  echo "raise_pipe_max.sh: cannot read $FILE (no /proc/sys here?)" >&2
  exit 1
fi
if [ "$now" -ge "$min" ]; then
  echo "fs.pipe-max-size = $now (>= $min): left as it is"
  exit 0
fi
if ! err=$( { echo "$min" >"$FILE"; } 2>&1); then
  who="uid $(id -u)"
  [ "$(id -u)" = 0 ] && who="root, but $FILE is not writable here (a container's read-only /proc/sys?)"
  echo "raise_pipe_max.sh: cannot raise fs.pipe-max-size from $now to $min ($who): ${err##*: }." \
    "Run as root, or set fs.pipe-max-size=$min in /etc/sysctl.d/ on the host;" \
    "rangefs-mount copies instead of splicing until then" >&2
  exit 1
fi
echo "fs.pipe-max-size = $(cat "$FILE") (raised from $now)"
