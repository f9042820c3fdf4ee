# Part E, rows 3 and 4 over capped links (sourced by tests/bench/part_e.sh
# with E_LINKS=capped or both; uses its helpers and run.sh's): the degraded
# scan where, as in a deployment, the storage nodes' links bound it rather
# than the client's memcpy; and the 4 KiB random reads with a node hung
# where each node has a link of its own.
#
# deploy/local/cluster.sh up --hosts=netns --insecure: 9 nodes, each agent
# in its own network namespace behind a veth whose egress is capped with
# tc tbf (burst 1mb), the client (etcd, rangefs-admin, rangefs-bench) in a
# namespace of its own. The export directories are not the client's
# mounts there: rangefs-bench runs with default settings (data_path auto,
# the default mount_root, which names no mount of these nodes), and the
# table names the path auto took (the JSON's node_attempts counters). The
# same dataset as the loopback rows (E_FILES x E_FILE_MB MiB), put once
# with --ec=6+3; objects warm in the page cache (cat of every object
# before every scan). The dead node: the one with a data column in the
# most files (part_e.sh's e_dead_node), SIGKILLed for the dead scan and
# restarted (cluster.sh restart-node) after it.
#   probe: E_LINK_PROBE_ROUNDS rounds (default 3) of dead and healthy with
#     the caps removed (tc qdisc del): what the 2 cores move through 9
#     agents; the table gives the caps' sum as a share of that healthy
#     rate (choose E_LINK_RATE so that it is <= ~1/3, else the row
#     measures the CPU again).
#   row: E_ROUNDS rounds of dead and healthy with every node's egress at
#     E_LINK_RATE (default 300mbit: 9 x 37.5 MB/s of frames, 0.23-0.34 of the
#     uncapped rate of 1.0-1.5 GB/s measured on the shared 2-core machine), the first side
#     alternating; medians (min-max) of MB/s, the ratio (target >= 0.7),
#     the client's CPU s/GB, the rebuilt share of the bytes read, the
#     bytes read from the nodes per byte delivered, and each link's use
#     (its node's bytes over the run, warm-up included, / the cap).
#   row 4: E_ROUNDS rounds of part_e.sh's row 4 (rangefs-bench
#     --workload=lookup --batch=1 --data_path=agent, a closed loop of 8
#     threads, E_DUR s) with every cap on, healthy vs the hung node's
#     agent SIGSTOPped (the node whose count of files it holds a data
#     column of is nearest the expected 6/9: e_typical_node), the first
#     side alternating: p99 ratio (target <= 1.5, 0 errors) and the extra
#     bytes beyond the rebuilds' floor (target <= 5 points).
#   E_ROWS (part_e.sh): dead = row 3 alone, hung = row 4 alone.
#   E_BENCH_A (part_e.sh): the capped rounds also scan, dead and healthy,
#     with that rangefs-bench (side A), the order of the four scans
#     reversed every other round; the "A:" rows, and each side's parity
#     nodes' bytes in the dead scans (node MB/s of the files' parity
#     columns: how the rebuild reads spread over them).
#   expectation, two ways: (a) with the scan bound by the links' sum,
#     dead / healthy = (8 of 9 links) x (node bytes per byte, healthy /
#     dead): a rebuilt cell is read as the parity cell instead of the lost
#     one, plus the helper cells that the client's reads did not already
#     fetch; (b) by the layouts (en_bounds below; the files are kept as
#     OUT/e_capped_layout_*.json): each side bound by its busiest link, as
#     the files' columns do not spread evenly over 9 nodes.
# Needs root and network namespaces (else the rows say "skipped").
E_LINK_RATE=${E_LINK_RATE:-300mbit}
E_LINK_PROBE_ROUNDS=${E_LINK_PROBE_ROUNDS:-3}
EN_DESC="capped links (netns, tbf $E_LINK_RATE a node)"
if ! ip netns add rfs-bench-probe-e 2>/dev/null; then
  echo "bench: part E: cannot create network namespaces: row 3 over capped links skipped" | tee -a "$OUT/report.md"
  e_row "scan (MB/s), $EN_DESC: skipped (no network namespaces)" - - - ">= 0.7" "FAIL (not measured)"
  return 0
fi
ip netns del rfs-bench-probe-e
echo "bench: part E row 3 over $EN_DESC, 9 nodes"
CEN="$WORK/clusterEN"; CLUSTERS+=("$CEN")
EN_ENV=$(deploy/local/cluster.sh up --dir="$CEN" --nodes=9 --hosts=netns --insecure --rate="$E_LINK_RATE" \
  --bin="$BIN" --cluster=benchen | tail -n 1)
EN_ETCD=$(echo "$EN_ENV" | tr ' ' '\n' | sed -n 's/^RANGEFS_ETCD=//p')
EN_TAG=$(sed -n 's/^TAG=//p' "$CEN/cluster.env")  # (not sourced: it would set run.sh's RATE, NODES)
en_in() { ip netns exec "rfs${EN_TAG}-c" "$@"; }
EN_ADMIN=(en_in "$BIN/rangefs-admin" --etcd="$EN_ETCD" --cluster=benchen --no-progress)
# en_caps RATE|off: every node's egress qdisc (off: none, the veth's default).
en_caps() {
  local i ns dev
  for i in $(seq 1 9); do
    ns="rfs${EN_TAG}-$i"; dev="r${EN_TAG}v$i"
    if [ "$1" = off ]; then
      ip netns exec "$ns" tc qdisc del dev "$dev" root 2>/dev/null || true
    else
      ip netns exec "$ns" tc qdisc replace dev "$dev" root tbf rate "$1" burst 1mb latency 50ms
    fi
  done
  e_log "part E capped links: every node's egress qdisc: $1"
}
EN_OK=1
e_log "${EN_ADMIN[*]} file put $E_SRC /e/ec --ec=6+3"
if ! "${EN_ADMIN[@]}" file put "$E_SRC" /e/ec --ec=6+3 >"$WORK/en_put.out" 2>&1; then
  { echo "capped links: put failed:"; tail -n 5 "$WORK/en_put.out"; } >>"$OUT/e_errors.log"
  EN_OK=0
fi
for i in $(seq 1 "$E_FILES"); do
  [ "$EN_OK" = 1 ] || break
  "${EN_ADMIN[@]}" file layout "/e/ec/f$i" >"$WORK/en_layout_$i.json" || EN_OK=0
done
[ "$EN_OK" = 1 ] && for i in $(seq 1 "$E_FILES"); do cp "$WORK/en_layout_$i.json" "$OUT/e_capped_layout_$i.json"; done
EN_DEAD_AT=""
[ "$EN_OK" = 1 ] && EN_DEAD_AT=$(e_dead_node "$WORK"/en_layout_*.json)
[ -n "$EN_DEAD_AT" ] || { echo "capped links: no erasure-coded layouts" >>"$OUT/e_errors.log"; EN_OK=0; }
read -r EN_DEAD EN_DEAD_FILES <<<"${EN_DEAD_AT:-}"
e_log "part E capped links: dead node $EN_DEAD (a data column in $EN_DEAD_FILES of $E_FILES files)"
[ "$EN_OK" = 1 ] && e_round "capped links: dead node" - "$EN_DEAD" "a data column in $EN_DEAD_FILES of $E_FILES files"
EN_HUNG_AT=""
[ "$EN_OK" = 1 ] && EN_HUNG_AT=$(e_typical_node "$WORK"/en_layout_*.json)
read -r EN_HUNG EN_HUNG_FILES <<<"${EN_HUNG_AT:-}"
[ -n "$EN_HUNG" ] && e_round "capped links: hung node (row 4)" - "$EN_HUNG" "a data column in $EN_HUNG_FILES of $E_FILES files"

# shellcheck disable=SC2206
EN_SCAN=(--workload=scan ${E_SCAN_FLAGS:-})
en_warm() { find "$CEN/exports" -type f -path '*/f/*' -exec cat {} + >/dev/null; }
# en_bench NAME: one scan of /e/ec with default settings in the client's
# namespace (with EN_BENCH's rangefs-bench if set), its JSON in
# OUT/e_NAME.json; prints the JSON's path, or nothing when the run failed
# (logged).
en_bench() {
  local cmd=(en_in "${EN_BENCH:-$BIN/rangefs-bench}" --etcd="$EN_ETCD" --cluster=benchen --dir=/e/ec
             --duration_s="$E_DUR" --warmup_s="$E_RAMP" --json "${EN_SCAN[@]}")
  e_log "${cmd[*]}"
  if "${cmd[@]}" >"$OUT/e_$1.json" 2>"$OUT/e_$1.err" && isnum "$(jget "$OUT/e_$1.json" gbps 2>/dev/null)"; then
    echo "$OUT/e_$1.json"
  else
    { echo "rangefs-bench $1 failed:"; tail -n 3 "$OUT/e_$1.err"; } >>"$OUT/e_errors.log"
  fi
}
en_kill() { kill -KILL "$(cat "$CEN/run/node-$EN_DEAD.pid")"; }
en_revive() { deploy/local/cluster.sh restart-node "$EN_DEAD" --dir="$CEN" >>"$WORK/en_restart.log" 2>&1; }
en_scan() {  # en_scan NAME [dead]: MB/s
  local j
  [ "${2:-}" = dead ] && en_kill
  en_warm
  j=$(en_bench "$1")
  [ "${2:-}" = dead ] && en_revive
  e_mbps "$j"
  [ -z "$j" ] || [ "$(jget "$j" errors)" = 0 ] || echo "$1: $(jget "$j" errors) read errors" >>"$OUT/e_errors.log"
}
# en_amp JSON: bytes read from the nodes per byte delivered. The JSON's
# "nodes" count the whole run, its "bytes" only what follows the warm-up:
# the nodes' bytes are scaled by seconds / (seconds + warmup_s) (the rate
# taken as steady).
en_amp() { if [ -s "$1" ]; then python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
n = sum(d['nodes'].values()) * d['seconds'] / (d['seconds'] + d['warmup_s'])
print(n / d['bytes'] if d['bytes'] else 'failed')" "$1"; else echo failed; fi; }
# en_paths JSON: the reads of each data path over all nodes ("agent 812"...).
en_paths() { if [ -s "$1" ]; then python3 -c "
import json, sys
a = json.load(open(sys.argv[1]))['node_attempts'].values()
p = {k: sum(x[k + '_reads'] for x in a) for k in ('mount', 'agent', 'nfs')}
print(', '.join(f'{k} {v}' for k, v in p.items() if v) or 'none')" "$1"; else echo failed; fi; }
# en_links JSON RATE [SKIP]: each link's use, its node's bytes over the
# whole run (warm-up included) / the cap's bytes a second (L2 frames, so
# ~0.96 is full for TCP payload), over the nodes but SKIP: "MEAN MAX".
en_links() {
  if [ ! -s "$1" ]; then echo "failed failed"; return; fi
  python3 - "$@" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
r = sys.argv[2]
cap = float(r[:-4]) * {'k': 1e3, 'm': 1e6, 'g': 1e9}[r[-4]] / 8
t = d['seconds'] + d['warmup_s']
u = [b / t / cap for n, b in d['nodes'].items() if n != (sys.argv[3] if len(sys.argv) > 3 else '')]
print(f'{sum(u) / len(u):.2f} {max(u):.2f}' if u else 'failed failed')
PY
}
# en_parity JSON: MB/s read from each node holding a parity column of a
# file that lost a data column to the dead node, over the whole run
# (warm-up included), sorted: "MIN MEDIAN MAX" (the rebuild's helper
# reads land there; before ec_helper_choice.h all on parity column 0's).
en_parity() {
  if [ ! -s "$1" ]; then echo "failed failed failed"; return; fi
  python3 - "$1" "$EN_DEAD" "$OUT"/e_capped_layout_*.json <<'PY'
import json, statistics, sys
d = json.load(open(sys.argv[1]))
dead = sys.argv[2]
def nid(x): return x['replicas'][0].get('node_id') or x['replicas'][0].get('nodeId')
par = set()
for p in sys.argv[3:]:
    t = [nid(x) for x in json.load(open(p))['striped']['targets']]
    if dead in t[:6]:
        par.update(t[6:])
t = d['seconds'] + d['warmup_s']
v = sorted(d['nodes'].get(n, 0) / t / 1e6 for n in par)
print(f'{v[0]:.1f} {statistics.median(v):.1f} {v[-1]:.1f}' if v else 'failed failed failed')
PY
}
# en_round KIND R: one round of dead and healthy (first side alternating);
# appends to EN_<KIND>_* and OUT/e_rounds.md.
declare -A EN
for k in uncapped capped; do
  for f in dead healthy cdead chealthy rebuilt adead ahealthy ldead lhealthy lmdead lmhealthy path \
           pmin pmax xdead xhealthy xlmdead xpmin xpmax; do EN[${k}_$f]=""; done
done
en_round() {
  local k=$1 r=$2 a b jd jh
  if [ $((r % 2)) = 1 ]; then
    a=$(en_scan "${k}_dead_$r" dead); b=$(en_scan "${k}_healthy_$r")
  else
    b=$(en_scan "${k}_healthy_$r"); a=$(en_scan "${k}_dead_$r" dead)
  fi
  jd="$OUT/e_${k}_dead_$r.json"; jh="$OUT/e_${k}_healthy_$r.json"
  EN[${k}_dead]+=" $a"; EN[${k}_healthy]+=" $b"
  EN[${k}_cdead]+=" $(e_cpu "$jd")"; EN[${k}_chealthy]+=" $(e_cpu "$jh")"
  EN[${k}_rebuilt]+=" $(e_rebuilt "$jd")"
  EN[${k}_adead]+=" $(en_amp "$jd")"; EN[${k}_ahealthy]+=" $(en_amp "$jh")"
  local ld lh
  ld=$(en_links "$jd" "$E_LINK_RATE" "$EN_DEAD"); lh=$(en_links "$jh" "$E_LINK_RATE")
  EN[${k}_ldead]+=" ${ld%% *}"; EN[${k}_lhealthy]+=" ${lh%% *}"
  EN[${k}_lmdead]+=" ${ld##* }"; EN[${k}_lmhealthy]+=" ${lh##* }"
  EN[${k}_path]="$(en_paths "$jh")"
  local pd
  pd=$(en_parity "$jd")
  EN[${k}_pmin]+=" ${pd%% *}"; EN[${k}_pmax]+=" ${pd##* }"
  e_round "$k: ec scan dead / healthy (MB/s)" "$r" "$(f0 "$a") / $(f0 "$b")" \
    "$(ratio "$a" "$b"); CPU s/GB $(f2 "$(e_cpu "$jd")") / $(f2 "$(e_cpu "$jh")"); rebuilt $(e_rebuilt "$jd") % of the bytes read; node bytes per byte $(f2 "$(en_amp "$jd")") / $(f2 "$(en_amp "$jh")"); link use mean max (cap $E_LINK_RATE) $ld / $lh; helper reads $(e_field "$jd" ec_helper_reads); parity nodes' MB/s min median max $pd; paths (healthy) ${EN[${k}_path]}"
}
# en_round_a KIND R: side A (E_BENCH_A) of round R, dead and healthy.
en_round_a() {
  local k=$1 r=$2 a b jd jh ld pd
  if [ $((r % 2)) = 1 ]; then
    a=$(EN_BENCH="$E_BENCH_A" en_scan "${k}A_dead_$r" dead); b=$(EN_BENCH="$E_BENCH_A" en_scan "${k}A_healthy_$r")
  else
    b=$(EN_BENCH="$E_BENCH_A" en_scan "${k}A_healthy_$r"); a=$(EN_BENCH="$E_BENCH_A" en_scan "${k}A_dead_$r" dead)
  fi
  jd="$OUT/e_${k}A_dead_$r.json"; jh="$OUT/e_${k}A_healthy_$r.json"
  EN[${k}_xdead]+=" $a"; EN[${k}_xhealthy]+=" $b"
  ld=$(en_links "$jd" "$E_LINK_RATE" "$EN_DEAD"); pd=$(en_parity "$jd")
  EN[${k}_xlmdead]+=" ${ld##* }"
  EN[${k}_xpmin]+=" ${pd%% *}"; EN[${k}_xpmax]+=" ${pd##* }"
  e_round "A: $k: ec scan dead / healthy (MB/s)" "$r" "$(f0 "$a") / $(f0 "$b")" \
    "$(ratio "$a" "$b"); link use mean max (cap $E_LINK_RATE) $ld; helper reads $(e_field "$jd" ec_helper_reads); parity nodes' MB/s min median max $pd"
}
# en_lookup NAME [hung]: row 4's run (part_e.sh's LOOKUP) in the client's
# namespace, the hung node's agent SIGSTOPped for it with "hung"; prints
# the JSON's path, or nothing when the run failed (logged).
en_lookup() {
  local pid="" cmd=(en_in "$BIN/rangefs-bench" --etcd="$EN_ETCD" --cluster=benchen --dir=/e/ec
                    --duration_s="$E_DUR" --json "${LOOKUP[@]}")
  e_log "${cmd[*]}${2:+ ($EN_HUNG SIGSTOPped)}"
  [ "${2:-}" = hung ] && { pid=$(cat "$CEN/run/node-$EN_HUNG.pid"); kill -STOP "$pid"; }
  "${cmd[@]}" >"$OUT/e_$1.json" 2>"$OUT/e_$1.err"
  [ -n "$pid" ] && kill -CONT "$pid"
  if isnum "$(jget "$OUT/e_$1.json" p99_us 2>/dev/null)"; then
    echo "$OUT/e_$1.json"
  else
    { echo "rangefs-bench $1 failed:"; tail -n 3 "$OUT/e_$1.err"; } >>"$OUT/e_errors.log"
  fi
}
EN_LH=() EN_LX=() EN_AH=() EN_AX=() EN_LERR=0
en_hung_round() {  # en_hung_round R: row 4's healthy and hung runs
  local r=$1 jh jx
  e_alternate "$r" en_lookup capped_lookup
  jh=$JH; jx=$JX
  EN_LH+=("$(e_field "$jh" p99_us)"); EN_LX+=("$(e_field "$jx" p99_us)")
  EN_AH+=("$(e_amp "$jh")"); EN_AX+=("$(e_amp "$jx")")
  if [ -n "$jx" ]; then
    EN_LERR=$((EN_LERR + $(jget "$jx" errors) + $(jget "$jx" mismatches)))
  else
    EN_LERR=$((EN_LERR + 1))  # not measured: no PASS
  fi
  e_round "capped: 4 KiB p99 hung / healthy (us)" "$r" "$(f0 "${EN_LX[-1]}") / $(f0 "${EN_LH[-1]}")" \
    "$(ratio "${EN_LX[-1]}" "${EN_LH[-1]}"); IOPS $(f0 "$(e_field "$jx" iops)") / $(f0 "$(e_field "$jh" iops)"); node bytes per byte $(f2 "${EN_AX[-1]}") / $(f2 "${EN_AH[-1]}"); hung: degraded $(e_field "$jx" ec_degraded_reads), helper reads $(e_field "$jx" ec_helper_reads), parity hedges $(e_field "$jx" ec_parity_hedges) (won $(e_field "$jx" ec_parity_hedge_wins)), errors $(e_field "$jx" errors)"
}
if [ "$EN_OK" = 1 ]; then
  if [ "$E_ROWS" != hung ]; then
    en_caps off
    for r in $(seq 1 "$E_LINK_PROBE_ROUNDS"); do en_round uncapped "$r"; done
  fi
  en_caps "$E_LINK_RATE"
  for r in $(seq 1 "$E_ROUNDS"); do
    if [ "$E_ROWS" != hung ]; then
      # Side A first in odd rounds, last in even ones.
      if [ -n "${E_BENCH_A:-}" ] && [ $((r % 2)) = 1 ]; then en_round_a capped "$r"; fi
      en_round capped "$r"
      if [ -n "${E_BENCH_A:-}" ] && [ $((r % 2)) = 0 ]; then en_round_a capped "$r"; fi
    fi
    [ "$E_ROWS" = dead ] || [ -z "$EN_HUNG" ] || en_hung_round "$r"
  done
fi
deploy/local/cluster.sh down --dir="$CEN" >/dev/null 2>&1 || true

# en_bounds DEAD RATE LAYOUT.json...: the links' arithmetic, "HEALTHY DEAD"
# in MB/s. Every file read at one rate r (one thread a file), each link
# at most C = RATE / 8 x 1448 / 1514 (TCP payload in 1514-byte frames): a
# node that serves a column of n files carries n x r / 6, so the scan
# delivers at most 6 x files x C / (the largest n). Healthy: the data
# columns; dead: the data columns of the live nodes, and for each file
# that lost one a third of a column on each of its 3 parity nodes (the
# rebuild's parity cell, by row in turn: ec_helper_choice.h; the helper
# bytes beyond it are left out).
en_bounds() {
  python3 - "$@" <<'PY'
import collections, json, sys
dead, r, docs = sys.argv[1], sys.argv[2], [json.load(open(p)) for p in sys.argv[3:]]
c = float(r[:-4]) * {'k': 1e3, 'm': 1e6, 'g': 1e9}[r[-4]] / 8e6 * 1448 / 1514
def nid(x): return x['replicas'][0].get('node_id') or x['replicas'][0].get('nodeId')
healthy, lost = collections.Counter(), collections.Counter()
for d in docs:
    t = [nid(x) for x in d['striped']['targets']]
    healthy.update(set(t[:6]))
    lost.update(set(n for n in t[:6] if n != dead))
    if dead in t[:6]:
        for p in t[6:]:
            lost[p] += 1 / 3
f = len(docs)
print(6 * f * c / max(healthy.values()), 6 * f * c / max(lost.values()))
PY
}
# --- the rows
en_med() { median ${EN[$1]}; }  # en_med KEY: the median of EN[KEY]
en_cell() { e_cell "$1" ${EN[$2]}; }  # en_cell DIGITS KEY
# An info row of two measures and the ratio of their medians:
# en_pair LABEL DIGITS KEY_A KEY_B.
en_pair() {
  e_row "$1" "$(en_cell "$2" "$3")" "$(en_cell "$2" "$4")" \
    "$(ratio "$(en_med "$3")" "$(en_med "$4")")" "info" "-"
}
# The row 3 target (dead / healthy >= 0.7): en_scan LABEL KEY_DEAD KEY_HEALTHY.
en_scan() {
  local r
  r=$(ratio "$(en_med "$2")" "$(en_med "$3")")
  e_row "$1" "$(en_cell 0 "$2")" "$(en_cell 0 "$3")" "$r" ">= 0.7" "$(e_verdict "$r" '>=' 0.7)"
}
EN_CAP_SUM=$(python3 -c "r = '$E_LINK_RATE'; print(round(9 * float(r[:-4]) * {'k': 1e3, 'm': 1e6, 'g': 1e9}[r[-4]] / 8e6))")
if [ "$EN_OK" = 1 ] && [ "$E_ROWS" != hung ]; then
  # shellcheck disable=SC2086
  {
    en_pair "scan (MB/s), netns, caps removed (probe, $E_LINK_PROBE_ROUNDS rounds): 1 of 9 dead vs healthy" 0 uncapped_dead uncapped_healthy
    e_row "$EN_DESC: the caps' sum (9 x $E_LINK_RATE, MB/s of frames) / the uncapped healthy scan" \
      "$EN_CAP_SUM" "$(f0 "$(en_med uncapped_healthy)")" "$(ratio "$EN_CAP_SUM" "$(en_med uncapped_healthy)")" \
      "<= 0.34 (~1/3)" "$(e_verdict "$(ratio "$EN_CAP_SUM" "$(en_med uncapped_healthy)")" '<=' 0.34)"
    rc=$(ratio "$(en_med capped_dead)" "$(en_med capped_healthy)")
    en_scan "scan (MB/s), $EN_DESC: RS(6,3), 1 of 9 nodes dead ($EN_DEAD: a data column in $EN_DEAD_FILES of $E_FILES files) vs healthy" \
      capped_dead capped_healthy
    en_pair "scan client CPU s/GB, $EN_DESC: dead vs healthy" 2 capped_cdead capped_chealthy
    e_row "$EN_DESC, dead: rebuilt share of the bytes read (%)" "$(en_cell 1 capped_rebuilt)" "-" "-" "info" "-"
    en_pair "$EN_DESC: node bytes per byte delivered (warm-up scaled out), dead vs healthy" 3 capped_adead capped_ahealthy
    expect=$(python3 -c "
import sys
try: print(8 / 9 * float(sys.argv[2]) / float(sys.argv[1]))
except ValueError: print('failed')" "$(en_med capped_adead)" "$(en_med capped_ahealthy)")
    e_row "$EN_DESC: expected dead / healthy if link-bound: 8/9 links x node bytes per byte healthy / dead" \
      "$(f2 "$expect")" "-" "measured $rc" "info" "-"
    read -r bh bd <<<"$(en_bounds "$EN_DEAD" "$E_LINK_RATE" "$OUT"/e_capped_layout_*.json || echo failed failed)"
    e_row "$EN_DESC: the links' bound by the layouts (every file at one rate, the busiest link full), dead vs healthy (MB/s)" \
      "$(f0 "$bd")" "$(f0 "$bh")" "$(ratio "$bd" "$bh")" "info" "-"
    e_row "$EN_DESC: link use (node bytes a second / cap), mean over live links, dead vs healthy" \
      "$(en_cell 2 capped_ldead)" "$(en_cell 2 capped_lhealthy)" "-" "info" "-"
    e_row "$EN_DESC: link use, busiest link, dead vs healthy" \
      "$(en_cell 2 capped_lmdead)" "$(en_cell 2 capped_lmhealthy)" "-" "info" "-"
    en_pair "$EN_DESC, dead: MB/s read from each parity node of the files that lost a column, least and most loaded" 1 capped_pmin capped_pmax
    if [ -n "${E_BENCH_A:-}" ]; then
      en_scan "A: scan (MB/s), $EN_DESC: 1 of 9 nodes dead vs healthy (E_BENCH_A=$E_BENCH_A)" \
        capped_xdead capped_xhealthy
      en_pair "$EN_DESC, dead: this build vs A (MB/s)" 0 capped_dead capped_xdead
      e_row "A: $EN_DESC, dead: link use, busiest link" "$(en_cell 2 capped_xlmdead)" "-" "-" "info" "-"
      en_pair "A: $EN_DESC, dead: MB/s read from each parity node of the files that lost a column, least and most loaded" 1 capped_xpmin capped_xpmax
    fi
    e_row "$EN_DESC: reads by data path (data_path=auto, default mount_root; healthy, last round)" \
      "${EN[capped_path]:-failed}" "-" "-" "info" "-"
  }
elif [ "$E_ROWS" != hung ]; then
  e_row "scan (MB/s), $EN_DESC: RS(6,3), 1 of 9 nodes dead vs healthy" failed failed n/a ">= 0.7" "FAIL (not measured)"
fi
if [ "$E_ROWS" != dead ]; then
  if [ "$EN_OK" = 1 ] && [ -n "$EN_HUNG" ]; then
    r4=$(ratio "$(median "${EN_LX[@]}")" "$(median "${EN_LH[@]}")")
    e_row "4 KiB random reads p99 (us), $EN_DESC, agent path: data node hung ($EN_HUNG: a data column in $EN_HUNG_FILES of $E_FILES files) vs healthy" \
      "$(e_cell 0 "${EN_LX[@]}")" "$(e_cell 0 "${EN_LH[@]}")" "$r4" "<= 1.5, 0 err ($EN_LERR)" \
      "$(if [ "$EN_LERR" = 0 ]; then e_verdict "$r4" '<=' 1.5; else echo "FAIL (errors)"; fi)"
    extra=$(python3 -c "
import statistics, sys
try: print((statistics.median(map(float, sys.argv[1].split())) / statistics.median(map(float, sys.argv[2].split())) - 1) * 100)
except (ValueError, ZeroDivisionError): print('failed')" "${EN_AX[*]}" "${EN_AH[*]}")
    floor=$(e_floor "$EN_HUNG" "$WORK"/en_layout_*.json)
    beyond=$(python3 -c "
import sys
try: print(float(sys.argv[1]) - float(sys.argv[2]))
except ValueError: print('failed')" "$extra" "$floor")
    e_row "4 KiB random reads, $EN_DESC: node bytes per byte read, hung vs healthy (extra; the rebuilds' floor $(f2 "$floor") %)" \
      "$(e_cell 3 "${EN_AX[@]}")" "$(e_cell 3 "${EN_AH[@]}")" "extra $(f2 "$extra") %" "info" "-"
    e_row "4 KiB random reads, $EN_DESC: extra bytes beyond that floor" "$(f2 "$beyond") %" "-" "-" "<= 5 %" \
      "$(e_verdict "$beyond" '<=' 5)"
  else
    e_row "4 KiB random reads p99 (us), $EN_DESC: data node hung vs healthy" failed failed n/a "<= 1.5" "FAIL (not measured)"
  fi
fi
