#!/bin/sh
# Runs nfs-ganesha in the foreground in namespaces of its own, for local
# clusters (deploy/local/cluster.sh up --nfs) and tests
# (tests/testing/ganesha_server.h): ganesha is PID 1 of a new PID namespace
# (whatever it leaves behind dies with it), /run is a private tmpfs, and with
# --v3 a private rpcbind (needed by ganesha to register NFSv3/MOUNT; in a
# network namespace of its own, reached through /run/rpcbind.sock) starts
# first. So many servers can run on one host beside (or without) the host's
# rpcbind; clients skip rpcbind (libnfs: ?nfsport=P&mountport=M).
#
#   ganesha_private.sh [--v3] CONFIG LOGFILE [GANESHA_BINARY]
#
# The process that runs this script becomes `unshare --fork --kill-child`,
# the parent of ganesha: SIGKILL to it kills ganesha, ganesha's exit ends
# it, but it blocks SIGTERM and SIGINT: for a clean stop, send SIGTERM to
# ganesha (its only child) or to the process group. Needs root.
set -eu
if [ "${1:-}" != --inner ]; then
  v3=0
  if [ "${1:-}" = --v3 ]; then v3=1; shift; fi
  [ $# -ge 2 ] || { echo "usage: $0 [--v3] CONFIG LOGFILE [GANESHA_BINARY]" >&2; exit 2; }
  exec unshare --mount --propagation=private --pid --fork --kill-child \
    /bin/sh "$0" --inner "$v3" "$1" "$2" "${3:-/usr/bin/ganesha.nfsd}"
fi
# --inner V3 CONFIG LOGFILE BINARY: PID 1 of the new namespaces.
v3=$2 conf=$3 logf=$4 bin=$5
mount -t tmpfs -o size=4m,mode=755 rangefs-ganesha-run /run
if [ "$v3" = 1 ]; then
  unshare --net /usr/sbin/rpcbind -f &
  i=0
  while [ ! -S /run/rpcbind.sock ]; do
    i=$((i + 1))
    if [ "$i" -gt 1000 ]; then
      echo "ganesha_private.sh: rpcbind made no /run/rpcbind.sock in 10 s" >&2
      exit 1
    fi
    sleep 0.01
  done
fi
exec "$bin" -F -f "$conf" -L "$logf" -p /run/ganesha.pid
