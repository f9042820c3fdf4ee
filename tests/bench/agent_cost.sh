#!/usr/bin/env bash
# What a 4 KiB read over the agent path costs the client, two builds of
# rangefs-bench against each other in the same rounds (an A/B of a client
# change; the agents are the same for both):
#
#   tests/bench/agent_cost.sh --bin=DIR --a=PATH [--b=PATH] [--rounds=5] [--seconds=5]
#
# DIR holds rangefs-node, rangefs-admin and rangefs-bench (`-c opt`, as
# run.sh --bin takes); A and B are rangefs-bench binaries (B: DIR's). A
# 9-node loopback cluster (deploy/local/cluster.sh) gets 4 x 128 MiB files
# put with --ec=6+3; each side then runs `rangefs-bench --workload=lookup
# --batch=1 --data_path=agent` (8 threads, healthy) under `perf stat -e
# task-clock,context-switches,raw_syscalls:sys_enter`, the first side
# alternating by round. Prints each round, then per side the median and
# min-max of reads/s and, per read, client CPU (µs), syscalls and context
# switches, and B / A of the medians. Needs root-free perf stat (or root).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN="" A="" B="" ROUNDS=5 SECS=5
for arg in "$@"; do
  case "$arg" in
    --bin=*) BIN=${arg#*=} ;;
    --a=*) A=${arg#*=} ;;
    --b=*) B=${arg#*=} ;;
    --rounds=*) ROUNDS=${arg#*=} ;;
    --seconds=*) SECS=${arg#*=} ;;
    *) echo "agent_cost: unknown argument $arg" >&2; exit 2 ;;
  esac
done
B=${B:-$BIN/rangefs-bench}
for f in "$BIN/rangefs-node" "$BIN/rangefs-admin" "$A" "$B"; do
  [ -x "$f" ] || { echo "agent_cost: not an executable: '$f' (--bin=DIR and --a=PATH are needed)" >&2; exit 2; }
done
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ && "$SECS" =~ ^[1-9][0-9]*$ ]] ||
  { echo "agent_cost: --rounds and --seconds take positive integers" >&2; exit 2; }
command -v perf >/dev/null || { echo "agent_cost: needs perf" >&2; exit 2; }
W=$(mktemp -d /tmp/rangefs-agent-cost.XXXXXX)
cleanup() {
  "$ROOT/deploy/local/cluster.sh" down --dir="$W/c" >/dev/null 2>&1 || true
  rm -rf "$W"
}
trap cleanup EXIT
eval "$("$ROOT/deploy/local/cluster.sh" up --dir="$W/c" --nodes=9 --bin="$BIN" --cluster=acost | tail -n 1)" >/dev/null
# shellcheck disable=SC1091
source "$W/c/cluster.env"
for f in 1 2 3 4; do
  head -c $((128 << 20)) /dev/urandom >"$W/g"
  "$BIN/rangefs-admin" --etcd="$RANGEFS_ETCD" --cluster=acost --no-progress \
    file put "$W/g" "/e/g$f" --ec=6+3 >/dev/null
done
rm -f "$W/g"
# side NAME BINARY: one run; appends "NAME iops cpu_us syscalls ctxsw" to $W/rows.
side() {
  perf stat -x, -e task-clock,context-switches,raw_syscalls:sys_enter -o "$W/perf.$1" -- \
    "$2" --etcd="$RANGEFS_ETCD" --cluster=acost --dir=/e --workload=lookup --batch=1 \
    --data_path=agent --duration_s="$SECS" --json >"$W/out.$1" 2>>"$W/err.log"
  python3 - "$W" "$1" "$SECS" <<'PY' | tee -a "$W/rows"
import json, sys
w, name, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
iops = json.load(open(f'{w}/out.{name}'))['iops']
tot = {}
for line in open(f'{w}/perf.{name}'):
    p = line.split(',')
    if len(p) > 2 and p[0].replace('.', '', 1).isdigit():
        tot[p[2]] = float(p[0])
reads = iops * secs
print(name, round(iops), round(tot['task-clock'] * 1e3 / reads, 1),
      round(tot['raw_syscalls:sys_enter'] / reads, 2), round(tot['context-switches'] / reads, 2))
PY
}
echo "round side reads/s cpu_us/read syscalls/read ctxsw/read"
for r in $(seq 1 "$ROUNDS"); do
  echo -n "$r "
  if [ $((r % 2)) = 1 ]; then side A "$A"; echo -n "$r "; side B "$B"
  else side B "$B"; echo -n "$r "; side A "$A"; fi
done
python3 - "$W/rows" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
names = ['reads/s', 'client CPU a read (us)', 'syscalls a read', 'context switches a read']
med = {}
for s in 'AB':
    cols = list(zip(*[[float(x) for x in r[1:]] for r in rows if r[0] == s]))
    med[s] = [statistics.median(c) for c in cols]
    print(f'{s}: ' + '; '.join(f'{n} {m:g} ({min(c):g}-{max(c):g})'
                              for n, m, c in zip(names, med[s], cols)))
print('B / A: ' + '; '.join(f'{n} {b / a:.2f}' for n, a, b in zip(names, med['A'], med['B'])))
PY
