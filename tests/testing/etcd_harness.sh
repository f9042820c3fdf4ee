#!/usr/bin/env bash
# Real-etcd harness for shell tests and scripts. Source it, then:
#
#   etcd_start 3                 # 3 members on free 127.0.0.1 ports, temp dirs
#   etcdctl --endpoints="$ETCD_ENDPOINTS" put /k v
#   etcd_kill 1                  # SIGKILL member 1 (0-based)
#   etcd_restart 1               # same data dir; waits until healthy
#   etcd_leader                  # prints the leader's index
#   etcd_stop_all                # also runs on EXIT (and INT/TERM exit) via traps
#
# Exports ETCD_ENDPOINTS ("127.0.0.1:P,...") and ETCD_DIR.

_etcd_free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

_etcd_start_member() {
  local i=$1 state=$2
  local cport=${_ETCD_CPORT[$i]} pport=${_ETCD_PPORT[$i]}
  /usr/bin/etcd --name "m$i" --data-dir "$ETCD_DIR/m$i" \
    --listen-client-urls "http://127.0.0.1:$cport" \
    --advertise-client-urls "http://127.0.0.1:$cport" \
    --listen-peer-urls "http://127.0.0.1:$pport" \
    --initial-advertise-peer-urls "http://127.0.0.1:$pport" \
    --initial-cluster "$_ETCD_INITIAL" --initial-cluster-state "$state" \
    --initial-cluster-token rangefs-test --logger=zap --log-level=warn \
    --heartbeat-interval=100 --election-timeout=1500 \
    >>"$ETCD_DIR/m$i.log" 2>&1 &
  _ETCD_PID[$i]=$!
}

# etcd_wait_healthy I [SECONDS]: polls member I's /health until true.
etcd_wait_healthy() {
  local i=$1 secs=${2:-20} n=0
  local limit=$((secs * 20))
  while [ "$n" -lt "$limit" ]; do
    if curl -fsS --max-time 1 "http://127.0.0.1:${_ETCD_CPORT[$i]}/health" 2>/dev/null \
        | grep -q '"health":"true"'; then
      return 0
    fi
    if ! kill -0 "${_ETCD_PID[$i]}" 2>/dev/null; then
      echo "etcd member $i exited; log:" >&2
      tail -n 20 "$ETCD_DIR/m$i.log" >&2
      return 1
    fi
    sleep 0.05
    n=$((n + 1))
  done
  echo "etcd member $i not healthy after ${secs}s" >&2
  return 1
}

# etcd_start N: starts an N-member cluster and waits until all are healthy.
etcd_start() {
  local n=${1:-1} i
  ETCD_DIR=$(mktemp -d "${TEST_TMPDIR:-/tmp}/etcd-sh-XXXXXX")
  export ETCD_DIR
  _ETCD_CPORT=() _ETCD_PPORT=() _ETCD_PID=()
  local parts=() eps=()
  for ((i = 0; i < n; i++)); do
    _ETCD_CPORT[$i]=$(_etcd_free_port)
    _ETCD_PPORT[$i]=$(_etcd_free_port)
    parts+=("m$i=http://127.0.0.1:${_ETCD_PPORT[$i]}")
    eps+=("127.0.0.1:${_ETCD_CPORT[$i]}")
  done
  _ETCD_INITIAL=$(IFS=,; echo "${parts[*]}")
  ETCD_ENDPOINTS=$(IFS=,; echo "${eps[*]}")
  export ETCD_ENDPOINTS
  # On SIGTERM (Bazel's timeout) or SIGINT: exit, which runs the EXIT trap.
  # (A trap that only stopped etcd let the script go on without it.)
  trap etcd_stop_all EXIT
  trap 'exit 143' TERM
  trap 'exit 130' INT
  for ((i = 0; i < n; i++)); do _etcd_start_member "$i" new; done
  for ((i = 0; i < n; i++)); do etcd_wait_healthy "$i" || return 1; done
}

etcd_kill() {
  local i=$1
  kill -KILL "${_ETCD_PID[$i]}" 2>/dev/null || true
  wait "${_ETCD_PID[$i]}" 2>/dev/null || true
}

etcd_restart() {
  local i=$1
  etcd_kill "$i"
  _etcd_start_member "$i" existing
  etcd_wait_healthy "$i"
}

# etcd_leader: prints the 0-based index of the current leader.
etcd_leader() {
  local i status leader="" ids=()
  for i in "${!_ETCD_CPORT[@]}"; do
    status=$(curl -fsS --max-time 2 -X POST -d '{}' \
      "http://127.0.0.1:${_ETCD_CPORT[$i]}/v3/maintenance/status" 2>/dev/null) || continue
    ids[$i]=$(sed -n 's/.*"member_id":"\([0-9]*\)".*/\1/p' <<<"$status")
    [ -z "$leader" ] && leader=$(sed -n 's/.*"leader":"\([0-9]*\)".*/\1/p' <<<"$status")
  done
  for i in "${!ids[@]}"; do
    if [ "${ids[$i]}" = "$leader" ]; then echo "$i"; return 0; fi
  done
  return 1
}

etcd_stop_all() {
  local i
  for i in "${!_ETCD_PID[@]}"; do etcd_kill "$i"; done
  _ETCD_PID=()
  [ -n "${ETCD_DIR:-}" ] && rm -rf "$ETCD_DIR"
  return 0
}
