# Part E of tests/bench/run.sh (sourced; uses its helpers and settings):
# erasure coding (issue 35), RS(6,3) against replicas, same run, same files.
#
# A local cluster of 9 nodes (the export directories are the clients'
# mounts; no keeper). One dataset, E_FILES files of E_FILE_MB MiB (default
# 8 x 128 MiB = 1 GiB; --quick 4 x 24 MiB), put with rangefs-admin's
# defaults (1 MiB stripe unit) three ways, each under its own directory:
#   ec      --ec=6+3: 6 data + 3 parity columns, one cell per node
#   r2      --replicas=2 (width: every live node)
#   plain   --replicas=1 --width=6: the same data width as ec, no parity
# Rows (E_ROUNDS rounds, default REPEAT; sides alternate which goes first;
# medians and min-max):
#   1. ingest: wall time of `file put DIR` of each layout, and the raw
#      bytes it added to the agents' export directories (du -sb before and
#      after: objects and sidecars) over the logical bytes. Target: ec raw
#      <= 1.55 x logical. Rounds but the last remove their files again
#      (`file rm`, then the objects written since the round's mark).
#   2. healthy scan: rangefs-bench --workload=scan with default settings
#      (data_path auto: the mount path here), warm objects (cat of every
#      object first), E_DUR s after E_RAMP s, of ec vs plain. Target >= 0.95.
#   3. degraded scan: the same scan of ec with the agent of the node that
#      holds a data column in the most files (ties: the smallest node id;
#      the table names it and the count) SIGKILLed and its entry in the
#      clients' mount_root renamed (its export unreadable to the client),
#      vs ec healthy. The node is
#      restarted (cluster.sh restart-node) and its entry restored after
#      each dead run. Target >= 0.7.
#   4. 4 KiB random reads: rangefs-bench --workload=lookup --batch=1
#      (each ReadV one 4 KiB read, so the call's p99 is the read's p99),
#      --data_path=agent, no warm-up (E_DUR s), of ec healthy vs with the
#      agent of the hung node (below: a data column in the typical share
#      of the files) SIGSTOPped for the run (SIGCONT after). A closed loop
#      (8 threads, each call when its last returned) that keeps the 2
#      cores busy: on loopback the nine agents' CPU is the client's, so
#      the hung side's p99 grows with the RPCs a read costs (a rebuilt
#      4 KiB read: k = 6 helper RPCs) as well as with the read path's
#      waits; over capped links (E_LINKS) the same runs where each node
#      has a link of its own, as in a deployment. p99 ratio (target <= 1.5),
#      errors (0), and extra bytes read: the bytes the client read from
#      all nodes (the JSON's "nodes") per byte delivered, hung over
#      healthy, minus 1 (info); the EC counters (degraded reads,
#      reconstructed bytes, parity hedges and wins) in OUT/e_rounds.md.
#      A read of a cell on the hung node is rebuilt from the same 4 KiB of
#      k = 6 other cells: 5 x 4 KiB extra, by the code's arithmetic. The
#      table's "floor" row is that cost over the dataset: the share of
#      files whose data columns include the hung node x 1/6 of their bytes
#      x 5 (reads are uniform over files, then over offsets). No code
#      reads less while the node stays hung (any k cells are needed for a
#      byte of the lost one), so the 5% target applies to what the client
#      reads beyond that floor: extra minus floor, in points (hedges that
#      lost, retries, reads widened to whole cells).
# E_ROWS=dead (environment; default all): row 3 alone (the ec layout put
# once, no ingest rounds, no rows 2 and 4), e.g. to compare builds of the
# degraded read path quickly; E_ROWS=hung: row 4 alone, the same way.
# Row 3 also reports the scans' CPU s/GB
# (rangefs-bench's cpu_s_per_gb: the client's user + system CPU), and each
# dead round in OUT/e_rounds.md the share of the bytes read that were
# rebuilt: the layouts are placed at random, so it varies a little between
# runs (the dead node holds a data column of most files, maybe not all; a
# parity column of the others), and the ratio with it.
# E_SCAN_FLAGS (environment): extra rangefs-bench flags for the scans of
# rows 2 and 3 (both sides), e.g. --io_size=6M: reads of whole RS(6,3)
# rows (the default 4 MiB reads end inside a row two calls in three).
# E_BENCH_A=PATH (environment): row 3 also scans, in the same rounds, with
# that rangefs-bench (side A: dead and healthy), the order of the four
# scans reversed every other round: an A/B of two builds of the client
# (this run's own rangefs-bench is side B); so does row 4 (its 4 KiB
# reads, healthy and hung). Its rows: "A:" in the table.
# The capped-links row 3 (E_LINKS) takes side A the same way
# (tests/bench/part_en.sh).
# E_LINKS (environment; default both): loopback = the rows above, on
# 127.0.0.1 with the export directories as the client's mounts (row 3 is
# then bound by the client's CPU: warm objects at ~15 GB/s of memcpy,
# parity copies, ISA-L decodes and CRCs); capped = rows 3 and 4 again on a
# second cluster of 9 nodes whose agents each live in a network namespace
# behind a tc tbf cap of E_LINK_RATE (default 300mbit; see
# tests/bench/part_en.sh), where the scan is bound by the nodes' links as
# in a deployment; both = both, one cluster after the other. With
# E_LINKS=capped the loopback cluster is not started (E_ROWS=dead or hung
# picks the capped rows too).
# OUT/part_e.md: the table; OUT/e_rounds.md: every round; OUT/e_*.json:
# every run; every command in OUT/commands.log.
echo "bench: part E (erasure coding: RS(6,3) vs replicas, 9 nodes)"
E_FILES=${E_FILES:-$([ "$QUICK" = 1 ] && echo 4 || echo 8)}
E_FILE_MB=${E_FILE_MB:-$([ "$QUICK" = 1 ] && echo 24 || echo 128)}
E_ROUNDS=${E_ROUNDS:-$REPEAT}
E_DUR=${E_DUR:-$([ "$QUICK" = 1 ] && echo 1 || echo 5)}
E_RAMP=${E_RAMP:-$([ "$QUICK" = 1 ] && echo 0 || echo 1)}
E_ROWS=${E_ROWS:-all}
case "$E_ROWS" in
  all|dead|hung) ;;
  *) echo "bench: part E: E_ROWS=$E_ROWS: all, dead or hung" >&2; exit 2 ;;
esac
E_LINKS=${E_LINKS:-both}
case "$E_LINKS" in
  capped|loopback|both) ;;
  *) echo "bench: part E: E_LINKS=$E_LINKS: capped, loopback or both" >&2; exit 2 ;;
esac
E_SRC="$WORK/data/e"
mkdir -p "$E_SRC"
for i in $(seq 1 "$E_FILES"); do gen "$E_SRC/f$i" "e$i" $((E_FILE_MB << 20)); done
E_LOGICAL=$((E_FILES * E_FILE_MB << 20))
rm -f "$OUT/e_errors.log"
{ echo "# part E rounds"; echo; echo "| row | round | value | note |"; echo "|---|---|---|---|"; } >"$OUT/e_rounds.md"
e_round() { echo "| $1 | $2 | $3 | ${4:-} |" >>"$OUT/e_rounds.md"; }
e_log() { echo "$*" >>"$OUT/commands.log"; }

# --- the table
e_cell() {  # e_cell DIGITS V...: "median (min-max)" or "failed"
  python3 - "$@" <<'PY'
import statistics, sys
d = int(sys.argv[1])
try: v = [float(x) for x in sys.argv[2:]]
except ValueError: print("failed"); sys.exit()
if not v: print("failed"); sys.exit()
print(f"{statistics.median(v):.{d}f} ({min(v):.{d}f}-{max(v):.{d}f})")
PY
}
e_verdict() {  # e_verdict VALUE OP TARGET: PASS / FAIL / FAIL (not measured)
  python3 -c "
import sys
try: v = float(sys.argv[1])
except ValueError: print('FAIL (not measured)'); sys.exit()
t = float(sys.argv[3])
print('PASS' if (v >= t if sys.argv[2] == '>=' else v <= t) else 'FAIL')" "$@"
}
e_rawx() { python3 -c "
import sys
try: print(' '.join(str(float(x) / float(sys.argv[1])) for x in sys.argv[2:]))
except ValueError: print('failed')" "$E_LOGICAL" "$@"; }
e_row() { echo "| $1 | $2 | $3 | $4 | $5 | $6 |" >>"$OUT/part_e.md"; }
{ echo "# part E: erasure coding, RS(6,3) vs replicas (9 nodes, same run, same files)"
  echo
  echo "$E_FILES files x $E_FILE_MB MiB ($(python3 -c "print(f'{$E_LOGICAL / 2**30:.2f}')") GiB logical), 1 MiB stripe unit;"
  echo "$E_ROUNDS round(s) per row, the first side alternating; median (min-max); reads: $E_DUR s after $E_RAMP s; $(nproc) cores."
  echo "Scans: rangefs-bench --workload=scan${E_SCAN_FLAGS:+ $E_SCAN_FLAGS} (E_ROWS=$E_ROWS)."
  echo
  echo "| measure | ours | baseline | ratio | target | verdict |"
  echo "|---|---|---|---|---|---|"
} >"$OUT/part_e.md"
e_field() {  # e_field JSON FIELD: the value, or "failed" (no JSON)
  if [ -n "$1" ]; then jget "$1" "$2"; else echo failed; fi
}
e_mbps() { if [ -n "$1" ]; then python3 -c "print($(jget "$1" gbps) * 1000)"; else echo failed; fi; }
e_cpu() {  # e_cpu JSON: the run's client CPU s/GB, or "failed"
  if [ -s "$1" ]; then jget "$1" cpu_s_per_gb; else echo failed; fi
}
# e_rebuilt JSON: rebuilt bytes per byte read from the nodes, in % (both
# over the whole run, warm-up included). It varies between runs: the
# layouts are placed at random, and the dead node holds a data column in
# some files, a parity column in others.
e_rebuilt() { if [ -s "$1" ]; then python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
n = sum(d['nodes'].values())
print(f\"{d['ec_reconstructed_bytes'] / n * 100:.1f}\" if n else 'failed')" "$1"; else echo failed; fi; }
# Bytes read from the nodes per byte delivered.
e_amp() { if [ -n "$1" ]; then python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
print(sum(d['nodes'].values()) / d['bytes'] if d['bytes'] else 'failed')" "$1"; else echo failed; fi; }
# The dead node (row 3): the node that holds a data column in the most
# files (ties: the smallest id), so that the rebuilt share does not depend
# on chance as much: E_DEAD_FILES of E_FILES files lose a data column.
e_dead_node() {  # e_dead_node LAYOUT.json...: "NODE FILES", the node with a data column in the most files
  python3 - "$@" <<'PY'
import collections, json, sys
def nid(r): return r.get('node_id') or r.get('nodeId')
count = collections.Counter()
for p in sys.argv[1:]:
    t = json.load(open(p))['striped']['targets']
    count.update({nid(x['replicas'][0]) for x in t[:6]})
node, n = min(count.items(), key=lambda kv: (-kv[1], kv[0]))
print(node, n)
PY
}

# The hung node (row 4): the node whose count of files it holds a data
# column of is nearest the expected E_FILES x 6/9 (ties: the smallest id),
# so that how many reads it turns into rebuilds is the typical share, not
# the luck of the random placement (a data column in 4 of 8 files costs
# the hung side 1.42x the RPCs of the healthy one, 5 of 8 1.52x, 8 of 8
# 1.83x).
e_typical_node() {  # e_typical_node LAYOUT.json...: "NODE FILES"
  python3 - "$@" <<'PY'
import collections, json, sys
def nid(r): return r.get('node_id') or r.get('nodeId')
count, nodes = collections.Counter(), set()
for p in sys.argv[1:]:
    t = json.load(open(p))['striped']['targets']
    nodes.update(nid(x['replicas'][0]) for x in t)
    count.update({nid(x['replicas'][0]) for x in t[:6]})
want = len(sys.argv[1:]) * 6 / 9
node = min(nodes, key=lambda n: (abs(count[n] - want), n))
print(node, count[node])
PY
}
# The floor of the extra bytes (see the header): mean over the files of
# (the hung node holds a data column) x 5/6, in %.
e_floor() {  # e_floor NODE LAYOUT.json...
  python3 - "$@" <<'PY' 2>>"$OUT/e_errors.log" || echo failed
import json, sys
hung, docs = sys.argv[1], [json.load(open(p)) for p in sys.argv[2:]]
def nid(r): return r.get('node_id') or r.get('nodeId')
data = [any(nid(t['replicas'][0]) == hung for t in d['striped']['targets'][:6]) for d in docs]
print(sum(data) / len(data) * 5 / 6 * 100)
PY
}
# e_alternate R RUN NAME: row 4's pair of runs in round R, "RUN
# NAME_healthy_R" and "RUN NAME_hung_R hung" (each prints its JSON path),
# healthy first in odd rounds; their paths in JH and JX.
e_alternate() {
  local r=$1 run=$2 name=$3
  if [ $((r % 2)) = 1 ]; then
    JH=$("$run" "${name}_healthy_$r"); JX=$("$run" "${name}_hung_$r" hung)
  else
    JX=$("$run" "${name}_hung_$r" hung); JH=$("$run" "${name}_healthy_$r")
  fi
}
# --warmup_s=0: the JSON's "nodes" bytes count the whole run, its "bytes"
# only what follows the warm-up; without one both cover the same time.
LOOKUP=(--workload=lookup --batch=1 --data_path=agent --warmup_s=0)

# --- loopback links (E_LINKS=loopback or both): rows 1-4 on 127.0.0.1
if [ "$E_LINKS" != capped ]; then
CE="$WORK/clusterE"; CLUSTERS+=("$CE")
eval "$(deploy/local/cluster.sh up --dir="$CE" --nodes=9 --bin="$BIN" --cluster=benche | tail -n 1)"
E_ADMIN=("$BIN/rangefs-admin" --etcd="$RANGEFS_ETCD" --cluster=benche --no-progress)
e_du() { du -sb "$CE/exports" | cut -f1; }

# --- 1. ingest
e_layout_flags() {
  case "$1" in
    ec) echo "--ec=6+3" ;;
    r2) echo "--replicas=2" ;;
    plain) echo "--replicas=1 --width=6" ;;
  esac
}
# e_put LAYOUT ROUND: puts the dataset at /e/LAYOUT; "SECONDS RAW_BYTES".
e_put() {
  local layout=$1 r=$2 before after t0 t1
  # shellcheck disable=SC2046
  local cmd=("${E_ADMIN[@]}" file put "$E_SRC" "/e/$layout" $(e_layout_flags "$layout"))
  e_log "${cmd[*]}"
  sync
  before=$(e_du)
  t0=$(date +%s.%N)
  if ! "${cmd[@]}" >"$WORK/e_put.out" 2>&1; then
    { echo "put $layout round $r failed:"; tail -n 5 "$WORK/e_put.out"; } >>"$OUT/e_errors.log"
    echo "failed failed"; return
  fi
  t1=$(date +%s.%N)
  sync
  after=$(e_du)
  python3 -c "print($t1 - $t0, $after - $before)"
}
# e_unput LAYOUT MARK: removes /e/LAYOUT and the objects written since MARK.
e_unput() {
  local i
  for i in $(seq 1 "$E_FILES"); do "${E_ADMIN[@]}" file rm "/e/$1/f$i" >/dev/null 2>&1 || true; done
  find "$CE/exports" -type f -newer "$2" -delete
}
declare -A E_T E_RAW
E_PUT_ROUNDS=$E_ROUNDS
[ "$E_ROWS" != all ] && E_PUT_ROUNDS=1
for r in $(seq 1 "$E_PUT_ROUNDS"); do
  order="ec r2 plain"
  [ $((r % 2)) = 0 ] && order="plain r2 ec"
  [ "$E_ROWS" != all ] && order=ec
  for layout in $order; do
    mark="$WORK/e_mark"; touch "$mark"; sleep 0.01  # the mark's mtime is before every new object's
    read -r secs raw <<<"$(e_put "$layout" "$r")"
    E_T[$layout]+="$secs "; E_RAW[$layout]+="$raw "
    e_round "ingest $layout" "$r" "$(f2 "$secs") s" "raw $(ratio "$raw" "$E_LOGICAL") x logical"
    if [ "$r" -lt "$E_PUT_ROUNDS" ]; then e_unput "$layout" "$mark"; fi
  done
done
e_layouts() {  # every EC file's layout into WORK/e_layout_I.json
  local i
  for i in $(seq 1 "$E_FILES"); do "${E_ADMIN[@]}" file layout "/e/ec/f$i" >"$WORK/e_layout_$i.json" || return 1; done
}
E_EC_OK=1
if ! e_layouts || ! E_DEAD_AT=$(e_dead_node "$WORK"/e_layout_*.json) ||
   ! E_HUNG_AT=$(e_typical_node "$WORK"/e_layout_*.json) || [ -z "$E_DEAD_AT" ] || [ -z "$E_HUNG_AT" ]; then
  echo "part E: /e/ec has no erasure-coded layouts (file layout failed)" >>"$OUT/e_errors.log"
  E_EC_OK=0
fi
read -r E_DEAD E_DEAD_FILES <<<"${E_DEAD_AT:-}"
read -r E_HUNG E_HUNG_FILES <<<"${E_HUNG_AT:-}"
E_FLOOR=failed
if [ "$E_EC_OK" = 1 ]; then E_FLOOR=$(e_floor "$E_HUNG" "$WORK"/e_layout_*.json); fi
[ "$E_EC_OK" = 1 ] && e_round "dead node (row 3)" - "$E_DEAD" "a data column in $E_DEAD_FILES of $E_FILES files"
[ "$E_EC_OK" = 1 ] && e_round "hung node (row 4)" - "$E_HUNG" "a data column in $E_HUNG_FILES of $E_FILES files"
e_log "part E: dead node $E_DEAD (a data column in $E_DEAD_FILES of $E_FILES files), hung node $E_HUNG (a data column in $E_HUNG_FILES)"

# --- runs of rangefs-bench
e_warm() { find "$CE/exports" -type f -path '*/f/*' -exec cat {} + >/dev/null; }
# e_bench NAME ARGS...: one run, its JSON in OUT/e_NAME.json; prints the
# JSON's path, or nothing when the run failed (logged).
e_bench() {
  local name=$1
  shift
  local cmd=("${E_BENCH:-$BIN/rangefs-bench}" --etcd="$RANGEFS_ETCD" --cluster=benche --mount_root="$MOUNT_ROOT"
             --duration_s="$E_DUR" --warmup_s="$E_RAMP" --json "$@")
  e_log "${cmd[*]}"
  if "${cmd[@]}" >"$OUT/e_$name.json" 2>"$OUT/e_$name.err" && isnum "$(jget "$OUT/e_$name.json" gbps 2>/dev/null)"; then
    echo "$OUT/e_$name.json"
  else
    { echo "rangefs-bench $name failed:"; tail -n 3 "$OUT/e_$name.err"; } >>"$OUT/e_errors.log"
  fi
}
e_agent_pid() { cat "$CE/run/node-$1.pid"; }
e_kill() {  # the dead node: agent SIGKILLed, its mount entry gone
  kill -KILL "$(e_agent_pid "$E_DEAD")"
  mv "$MOUNT_ROOT/$E_DEAD" "$MOUNT_ROOT/$E_DEAD.dead"
}
e_revive() {
  mv "$MOUNT_ROOT/$E_DEAD.dead" "$MOUNT_ROOT/$E_DEAD"
  deploy/local/cluster.sh restart-node "$E_DEAD" --dir="$CE" >>"$WORK/e_restart.log" 2>&1
}
# shellcheck disable=SC2206
SCAN=(--workload=scan ${E_SCAN_FLAGS:-})
e_scan() {  # e_scan NAME DIR [dead]: MB/s
  local j
  [ "${3:-}" = dead ] && e_kill
  e_warm
  j=$(e_bench "$1" "${SCAN[@]}" --dir="$2")
  [ "${3:-}" = dead ] && e_revive
  e_mbps "$j"
  [ -z "$j" ] || [ "$(jget "$j" errors)" = 0 ] || echo "$1: $(jget "$j" errors) read errors" >>"$OUT/e_errors.log"
}
e_lookup() {  # e_lookup NAME [hung]: JSON path
  local j pid
  [ "${2:-}" = hung ] && { pid=$(e_agent_pid "$E_HUNG"); kill -STOP "$pid"; }
  j=$(e_bench "$1" "${LOOKUP[@]}" --dir=/e/ec)
  [ "${2:-}" = hung ] && kill -CONT "$pid"
  echo "$j"
}

declare -a S_EC=() S_PL=() S_DEAD=() S_HEALTHY=() C_DEAD=() C_HEALTHY=() L_H=() L_X=() A_H=() A_X=()
declare -a SA_DEAD=() SA_HEALTHY=() CA_DEAD=() CA_HEALTHY=() LA_H=() LA_X=()
# e_lookup_a NAME [hung]: e_lookup with E_BENCH_A's rangefs-bench.
e_lookup_a() { E_BENCH="$E_BENCH_A" e_lookup "$@"; }
# e_hung_a R: row 4's side A in round R (E_BENCH_A), healthy and hung.
e_hung_a() {
  local r=$1 jh jx
  e_alternate "$r" e_lookup_a lookupA
  jh=$JH; jx=$JX
  LA_H+=("$(e_field "$jh" p99_us)"); LA_X+=("$(e_field "$jx" p99_us)")
  e_round "A: 4 KiB p99 hung / healthy (us)" "$r" "$(f0 "${LA_X[-1]}") / $(f0 "${LA_H[-1]}")" \
    "$(ratio "${LA_X[-1]}" "${LA_H[-1]}"); errors $(e_field "$jx" errors)"
}
# e_scan_a NAME DIR [dead]: e_scan with E_BENCH_A's rangefs-bench.
e_scan_a() { E_BENCH="$E_BENCH_A" e_scan "$@"; }
# e_dead_a R: row 3's side A in round R (E_BENCH_A), dead and healthy.
e_dead_a() {
  local r=$1 a b
  if [ $((r % 2)) = 1 ]; then
    a=$(e_scan_a "scanA_dead_$r" /e/ec dead); b=$(e_scan_a "scanA_healthy_$r" /e/ec)
  else
    b=$(e_scan_a "scanA_healthy_$r" /e/ec); a=$(e_scan_a "scanA_dead_$r" /e/ec dead)
  fi
  SA_DEAD+=("$a"); SA_HEALTHY+=("$b")
  CA_DEAD+=("$(e_cpu "$OUT/e_scanA_dead_$r.json")"); CA_HEALTHY+=("$(e_cpu "$OUT/e_scanA_healthy_$r.json")")
  e_round "A: ec scan dead / healthy (MB/s)" "$r" "$(f0 "$a") / $(f0 "$b")" \
    "$(ratio "$a" "$b"); CPU s/GB $(f2 "${CA_DEAD[-1]}") / $(f2 "${CA_HEALTHY[-1]}"); helper reads $(e_field "$OUT/e_scanA_dead_$r.json" ec_helper_reads), rebuilt $(e_rebuilt "$OUT/e_scanA_dead_$r.json") % of the bytes read"
}
E_LERR=0
if [ "$E_EC_OK" = 1 ]; then
  for r in $(seq 1 "$E_ROUNDS"); do
    # 2. healthy scan, ec vs plain
    if [ "$E_ROWS" != all ]; then
      :
    elif [ $((r % 2)) = 1 ]; then
      a=$(e_scan "scan_ec_$r" /e/ec); b=$(e_scan "scan_plain_$r" /e/plain)
    else
      b=$(e_scan "scan_plain_$r" /e/plain); a=$(e_scan "scan_ec_$r" /e/ec)
    fi
    if [ "$E_ROWS" = all ]; then
      S_EC+=("$a"); S_PL+=("$b")
      e_round "healthy scan ec / plain (MB/s)" "$r" "$(f0 "$a") / $(f0 "$b")" "$(ratio "$a" "$b")"
    fi
    # 3. ec with the dead node (most data columns) dead vs healthy (E_BENCH_A: side A
    # first in odd rounds, last in even ones)
    if [ "$E_ROWS" != hung ]; then
    if [ -n "${E_BENCH_A:-}" ] && [ $((r % 2)) = 1 ]; then e_dead_a "$r"; fi
    if [ $((r % 2)) = 1 ]; then
      a=$(e_scan "scan_dead_$r" /e/ec dead); b=$(e_scan "scan_healthy_$r" /e/ec)
    else
      b=$(e_scan "scan_healthy_$r" /e/ec); a=$(e_scan "scan_dead_$r" /e/ec dead)
    fi
    S_DEAD+=("$a"); S_HEALTHY+=("$b")
    if [ -n "${E_BENCH_A:-}" ] && [ $((r % 2)) = 0 ]; then e_dead_a "$r"; fi
    C_DEAD+=("$(e_cpu "$OUT/e_scan_dead_$r.json")"); C_HEALTHY+=("$(e_cpu "$OUT/e_scan_healthy_$r.json")")
    e_round "ec scan dead / healthy (MB/s)" "$r" "$(f0 "$a") / $(f0 "$b")" \
      "$(ratio "$a" "$b"); CPU s/GB $(f2 "${C_DEAD[-1]}") / $(f2 "${C_HEALTHY[-1]}"); degraded reads $(e_field "$OUT/e_scan_dead_$r.json" ec_degraded_reads), helper reads $(e_field "$OUT/e_scan_dead_$r.json" ec_helper_reads), rebuilt $(e_rebuilt "$OUT/e_scan_dead_$r.json") % of the bytes read"
    fi
    [ "$E_ROWS" = dead ] && continue
    # 4. 4 KiB random reads, healthy vs the hung node hung (E_BENCH_A: side A
    # first in odd rounds, last in even ones)
    if [ -n "${E_BENCH_A:-}" ] && [ $((r % 2)) = 1 ]; then e_hung_a "$r"; fi
    e_alternate "$r" e_lookup lookup
    jh=$JH; jx=$JX
    if [ -n "${E_BENCH_A:-}" ] && [ $((r % 2)) = 0 ]; then e_hung_a "$r"; fi
    L_H+=("$(e_field "$jh" p99_us)"); L_X+=("$(e_field "$jx" p99_us)")
    A_H+=("$(e_amp "$jh")"); A_X+=("$(e_amp "$jx")")
    if [ -n "$jx" ]; then E_LERR=$((E_LERR + $(jget "$jx" errors) + $(jget "$jx" mismatches))); fi
    e_round "4 KiB p99 hung / healthy (us)" "$r" "$(f0 "${L_X[-1]}") / $(f0 "${L_H[-1]}")" \
      "$(ratio "${L_X[-1]}" "${L_H[-1]}"); node bytes per byte $(f2 "${A_X[-1]}") / $(f2 "${A_H[-1]}"); hung: degraded $(e_field "$jx" ec_degraded_reads), reconstructed $(e_field "$jx" ec_reconstructed_bytes) B, parity hedges $(e_field "$jx" ec_parity_hedges) (won $(e_field "$jx" ec_parity_hedge_wins)), helper reads $(e_field "$jx" ec_helper_reads), errors $(e_field "$jx" errors)"
  done
fi

if [ "$E_ROWS" = all ]; then
med_ec_t=$(median ${E_T[ec]}); med_r2_t=$(median ${E_T[r2]}); med_pl_t=$(median ${E_T[plain]})
# shellcheck disable=SC2046
raw_ec=$(median $(e_rawx ${E_RAW[ec]})); raw_r2=$(median $(e_rawx ${E_RAW[r2]})); raw_pl=$(median $(e_rawx ${E_RAW[plain]}))
e_row "ingest time (s): --ec=6+3 vs --replicas=2" "$(e_cell 2 ${E_T[ec]})" "$(e_cell 2 ${E_T[r2]})" \
  "$(ratio "$med_ec_t" "$med_r2_t")" "info" "-"
e_row "ingest time (s): --ec=6+3 vs --replicas=1 --width=6" "$(e_cell 2 ${E_T[ec]})" "$(e_cell 2 ${E_T[plain]})" \
  "$(ratio "$med_ec_t" "$med_pl_t")" "info" "-"
# shellcheck disable=SC2046
e_row "raw bytes on the agents / logical: --ec=6+3 vs --replicas=2" "$(e_cell 3 $(e_rawx ${E_RAW[ec]}))" \
  "$(e_cell 3 $(e_rawx ${E_RAW[r2]}))" "$(ratio "$raw_ec" "$raw_r2")" "ec <= 1.55" "$(e_verdict "$raw_ec" '<=' 1.55)"
# shellcheck disable=SC2046
e_row "raw bytes on the agents / logical: --replicas=1 --width=6" "$(e_cell 3 $(e_rawx ${E_RAW[plain]}))" "-" "-" "info" "-"
fi
if [ "$E_EC_OK" = 1 ] && [ "$E_ROWS" = all ]; then
  r2_=$(ratio "$(median "${S_EC[@]}")" "$(median "${S_PL[@]}")")
  e_row "healthy scan (MB/s): RS(6,3) vs plain 6 columns" "$(e_cell 0 "${S_EC[@]}")" "$(e_cell 0 "${S_PL[@]}")" \
    "$r2_" ">= 0.95" "$(e_verdict "$r2_" '>=' 0.95)"
fi
if [ "$E_EC_OK" = 1 ] && [ "$E_ROWS" != hung ]; then
  r3_=$(ratio "$(median "${S_DEAD[@]}")" "$(median "${S_HEALTHY[@]}")")
  e_row "scan (MB/s): RS(6,3), 1 of 9 nodes dead ($E_DEAD: a data column in $E_DEAD_FILES of $E_FILES files) vs healthy" "$(e_cell 0 "${S_DEAD[@]}")" \
    "$(e_cell 0 "${S_HEALTHY[@]}")" "$r3_" ">= 0.7" "$(e_verdict "$r3_" '>=' 0.7)"
  e_row "scan client CPU s/GB: RS(6,3), 1 of 9 nodes dead vs healthy" "$(e_cell 2 "${C_DEAD[@]}")" \
    "$(e_cell 2 "${C_HEALTHY[@]}")" "$(ratio "$(median "${C_DEAD[@]}")" "$(median "${C_HEALTHY[@]}")")" "info" "-"
  if [ -n "${E_BENCH_A:-}" ]; then
    ra_=$(ratio "$(median "${SA_DEAD[@]}")" "$(median "${SA_HEALTHY[@]}")")
    e_row "A: scan (MB/s), 1 of 9 nodes dead vs healthy (E_BENCH_A=$E_BENCH_A)" "$(e_cell 0 "${SA_DEAD[@]}")" \
      "$(e_cell 0 "${SA_HEALTHY[@]}")" "$ra_" "info" "-"
    e_row "A: scan client CPU s/GB, dead vs healthy" "$(e_cell 2 "${CA_DEAD[@]}")" \
      "$(e_cell 2 "${CA_HEALTHY[@]}")" "$(ratio "$(median "${CA_DEAD[@]}")" "$(median "${CA_HEALTHY[@]}")")" "info" "-"
  fi
fi
if [ "$E_EC_OK" = 1 ] && [ "$E_ROWS" != dead ]; then
  r4_=$(ratio "$(median "${L_X[@]}")" "$(median "${L_H[@]}")")
  e_row "4 KiB random reads p99 (us), agent path: data node hung ($E_HUNG: a data column in $E_HUNG_FILES of $E_FILES files) vs healthy" "$(e_cell 0 "${L_X[@]}")" \
    "$(e_cell 0 "${L_H[@]}")" "$r4_" "<= 1.5, 0 err ($E_LERR)" \
    "$(if [ "$E_LERR" = 0 ]; then e_verdict "$r4_" '<=' 1.5; else echo "FAIL (errors)"; fi)"
  if [ -n "${E_BENCH_A:-}" ]; then
    e_row "A: 4 KiB random reads p99 (us), data node hung vs healthy (E_BENCH_A=$E_BENCH_A)" "$(e_cell 0 "${LA_X[@]}")" \
      "$(e_cell 0 "${LA_H[@]}")" "$(ratio "$(median "${LA_X[@]}")" "$(median "${LA_H[@]}")")" "info" "-"
  fi
  extra=$(python3 -c "
import statistics, sys
try: print((statistics.median(map(float, sys.argv[1].split())) / statistics.median(map(float, sys.argv[2].split())) - 1) * 100)
except (ValueError, ZeroDivisionError): print('failed')" "${A_X[*]}" "${A_H[*]}")
  e_row "4 KiB random reads: node bytes per byte read, hung vs healthy" "$(e_cell 3 "${A_X[@]}")" \
    "$(e_cell 3 "${A_H[@]}")" "extra $(f2 "$extra") %" "info" "-"
  e_row "4 KiB random reads: floor of the extra bytes with $E_HUNG hung (its data cells x (k-1))" \
    "$(f2 "${E_FLOOR:-failed}") %" "-" "-" "info" "-"
  beyond=$(python3 -c "
import sys
try: print(float(sys.argv[1]) - float(sys.argv[2]))
except ValueError: print('failed')" "$extra" "${E_FLOOR:-failed}")
  e_row "4 KiB random reads: extra bytes beyond that floor (hedges, retries, whole-cell reads)" \
    "$(f2 "$beyond") %" "-" "-" "<= 5 %" "$(e_verdict "$beyond" '<=' 5)"
fi
deploy/local/cluster.sh down --dir="$CE" >/dev/null
fi  # loopback links

# --- row 3 over capped links (E_LINKS=capped or both)
if [ "$E_LINKS" != loopback ]; then
  # shellcheck source=tests/bench/part_en.sh
  source "$ROOT/tests/bench/part_en.sh"
fi
{ echo
  [ -s "$OUT/e_errors.log" ] && echo "failures logged: $(wc -l <"$OUT/e_errors.log") line(s) in OUT/e_errors.log."
  [ "$E_ROUNDS" -lt 5 ] && echo "note: $E_ROUNDS round(s) (< 5): not a result to report."
  true
} >>"$OUT/part_e.md"
echo "part E (erasure coding, OUT/part_e.md): $(grep -c '| PASS |' "$OUT/part_e.md") row(s) PASS, $(grep -c '| FAIL' "$OUT/part_e.md") FAIL" >>"$OUT/report.md"
