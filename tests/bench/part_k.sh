# Part K of tests/bench/run.sh (sourced; uses its helpers and settings):
# rangefs-keeper re-replicating a node killed for good (issue 17).
#
# Each round builds fresh local clusters (4 nodes, the exports on this
# machine's one disk) holding K_FILES files of K_FILE_MB MiB (2 replicas,
# 4 MiB stripes; the same bytes every round) and kills node n2's agent with
# kill -9. The agents' live records expire within 2 s (--lease_ttl_s=2);
# the keeper starts once n2's is gone, with --dead_after_s=0.1
# --interval_s=0.2 (the detection delay is not what is measured) and no
# rebalancing.
#   throughput: the keeper and the agents unthrottled (--copy_bytes_per_sec=0,
#     rangefs-node --copy_max_bytes_per_sec=0), 4 copies at once (the
#     default --parallel_copies). Bytes: every object n2 held. Time: the
#     keeper's log, from its first "copying" to its last "layout updated"
#     (copy, CRC32C check end to end, fsync, rename, etcd swap). Ceiling,
#     the same round, order alternating: each of n2's objects and its
#     sidecar copied from the surviving replica's export to the export the
#     keeper picks (zone rule; see k_plan), 4 at once (xargs -P 4), each
#     fsynced (sync FILE): the same bytes between the same exports, the
#     faster of two ways, both in the round's line: cp (buffered) and dd
#     bs=4M oflag=direct (as the agents write copies; buffered writes
#     into fresh page-cache pages ran anywhere from 0.4 to 1.4 GB/s on
#     this VM, O_DIRECT steadily). Sources warm in the page cache
#     on both sides (read once just before).
#   scan during repair: rangefs-bench scan (mount path, 4 threads, 4 MiB
#     calls, warm page cache, K_SCAN_S s) with n2 dead, the keeper started
#     1 s into the scan at its default throttle (--copy_bytes_per_sec 400
#     MiB/s cluster-wide, the agents' --copy_max_bytes_per_sec 100 MiB/s),
#     against the same scan with n2 dead and no keeper (order alternating).
#     Both sides' MB/s is the mean of their 100 ms timeline samples inside
#     the repair window (first copy to last layout update, placed on the
#     scan's clock by its start_unix_us): the same seconds of the run.
# K_REPEAT rounds (default REPEAT, 1 with --quick); the table shows medians
# and min-max, the ratio column the median of the rounds' own ratios, OUT/rounds.md each round (with the time from kill -9 to the
# last replica back), OUT/k_keeper_*.log the keeper's logs. The keeper is
# $BIN/keeper/rangefs-keeper (kept out of $BIN itself: cluster.sh starts a
# keeper for every other part when it finds one there).
echo "bench: part K (rangefs-keeper re-replication after kill -9 of a node)"
K_KEEPER="$BIN/keeper/rangefs-keeper"
K_REPEAT=${K_REPEAT:-$REPEAT}
if [ "$QUICK" = 1 ]; then
  K_FILES=${K_FILES:-4}; K_FILE_MB=${K_FILE_MB:-16}; K_SCAN_S=${K_SCAN_S:-3}
else
  # The scan outlasts the repair at the default throttle (512 MiB into n4
  # at 100 MiB/s: ~5.2 s from 1 s in); a round says when it did not.
  K_FILES=${K_FILES:-8}; K_FILE_MB=${K_FILE_MB:-128}; K_SCAN_S=${K_SCAN_S:-9}
fi
K_NODE_FLAGS="--lease_ttl_s=2 --live_interval_s=0.5"
K_KEEPER_FLAGS=(--dead_after_s=0.1 --interval_s=0.2 --lease_ttl_s=2
                --rebalance_tolerance=0 --orphan_scan_interval_s=0
                --delete_grace_s=3600 --id=bench-keeper)
mkdir -p "$WORK/data/k/k"
for i in $(seq 1 "$K_FILES"); do gen "$WORK/data/k/k/f$i" "k$i" $((K_FILE_MB << 20)); done
K_PID=""
k_stop_keeper() {
  if [ -n "$K_PID" ]; then
    kill -TERM "$K_PID" 2>/dev/null || true
    wait "$K_PID" 2>/dev/null || true
    K_PID=""
  fi
}
trap 'k_stop_keeper; cleanup' EXIT

# k_up NAME NODE_FLAGS: a fresh cluster with the files; sets KC, KADMIN.
k_up() {
  KC="$WORK/clusterK_$1"; CLUSTERS+=("$KC")
  eval "$(deploy/local/cluster.sh up --dir="$KC" --nodes=4 --bin="$BIN" --cluster=benchk \
            --node-flags="$2" | tail -n 1)"
  KADMIN=("$BIN/rangefs-admin" --etcd="$RANGEFS_ETCD" --cluster=benchk --no-progress)
  local i
  for i in $(seq 1 "$K_FILES"); do
    "${KADMIN[@]}" file put "$WORK/data/k/k/f$i" "/k/f$i" --replicas=2 --stripe-unit=4M >/dev/null
  done
}
k_down() { deploy/local/cluster.sh down --dir="$KC" --purge >/dev/null; }

# k_plan: n2's objects (paths relative to the export), the bytes, and for
# the ceiling the keeper's source and target of each: the surviving
# replica, and a node without one in the other zone (cluster.sh puts n1, n3
# in z0 and n2, n4 in z1; the keeper keeps a slot's replicas in distinct
# zones), else any node without one: KOBJ, KBYTES, KPAIRS ("src dst" per
# line).
k_plan() {
  local rel n src dst any
  mapfile -t KOBJ < <(cd "$KC/exports/n2" && find . -type f ! -name '.*' | sed 's#^\./##' | sort)
  KBYTES=0; KPAIRS=""
  for rel in "${KOBJ[@]}"; do
    KBYTES=$((KBYTES + $(stat -c %s "$KC/exports/n2/$rel")))
    src=""; dst=""; any=""
    for n in 1 3 4; do
      if [ -e "$KC/exports/n$n/$rel" ]; then src=$n; fi
    done
    for n in 1 3 4; do
      [ -e "$KC/exports/n$n/$rel" ] && continue
      [ -z "$any" ] && any=$n
      if [ -z "$dst" ] && [ $(((n - 1) % 2)) != $(((src - 1) % 2)) ]; then dst=$n; fi
    done
    KPAIRS+="$KC/exports/n$src/$rel $KC/exports/n${dst:-$any}/$rel"$'\n'
  done
}
k_warm() { cut -d' ' -f1 <<<"$KPAIRS" | grep . | xargs cat >/dev/null; }

# k_copy_side HOW: MB/s of copying n2's objects (and sidecars) between the
# keeper's pairs, 4 at once, each fsynced (or "failed"). HOW: cp (buffered,
# through the target's page cache) or dd (dd bs=4M oflag=direct, as the
# agents write copies).
k_copy_side() {
  k_warm
  local t0 t1
  t0=$(date +%s.%N)
  # shellcheck disable=SC2016
  if ! grep . <<<"$KPAIRS" | K_HOW=$1 xargs -P 4 -L 1 bash -c '
      d=$(dirname "$1"); b=$(basename "$1"); s=$(dirname "$0")/.$b.rangefs-crc
      if [ "$K_HOW" = dd ]; then
        dd if="$0" of="$d/.benchcp-$b" bs=4M oflag=direct status=none
      else
        cp "$0" "$d/.benchcp-$b"
      fi && cp "$s" "$d/.benchcp-$b.crc" && sync "$d/.benchcp-$b" "$d/.benchcp-$b.crc"' \
      2>>"$OUT/fio_errors.log"; then
    echo failed; return
  fi
  t1=$(date +%s.%N)
  find "$KC/exports" -name '.benchcp-*' -delete
  echo "$1 -P4 + sync FILE of $KBYTES B: $t0 .. $t1" >>"$OUT/commands.log"
  python3 -c "print($KBYTES / 1e6 / ($t1 - $t0))"
}
# k_cp_side: the ceiling, the faster of the two ways (prints "MB/s cp dd").
k_cp_side() {
  local a b
  if [ $((RANDOM % 2)) = 0 ]; then a=$(k_copy_side cp); b=$(k_copy_side dd); else
    b=$(k_copy_side dd); a=$(k_copy_side cp); fi
  python3 -c "
import sys
v = [float(x) for x in sys.argv[1:] if x.replace('.', '', 1).isdigit()]
print(max(v) if v else 'failed', *sys.argv[1:])" "$a" "$b"
}

k_kill_n2() {
  kill -KILL "$(pgrep -f "rangefs-node --node_id=n2 --export_root=$KC/exports/n2( |\$)" | head -n 1)"
  KKILL=$(date +%s.%N)
  local i
  for i in $(seq 1 1200); do  # the live record expires within the 2 s lease (idle)
    "${KADMIN[@]}" --json status 2>/dev/null | python3 -c "
import json, sys
rows = json.load(sys.stdin)
sys.exit(0 if any(r['node'] == 'n2' and r['live'] == 'no' for r in rows) else 1)" && return 0
    sleep 0.05
  done
  echo "bench: part K: n2's live record did not expire" >&2; return 1
}

# k_keeper LOG FLAGS...: starts the keeper (K_PID).
k_keeper() {
  local log=$1
  shift
  echo "rangefs-keeper ${K_KEEPER_FLAGS[*]} $*" >>"$OUT/commands.log"
  "$K_KEEPER" --etcd_endpoints="$RANGEFS_ETCD" --cluster=benchk "${K_KEEPER_FLAGS[@]}" "$@" >"$log" 2>&1 &
  K_PID=$!
}
# k_wait_repaired LOG: until every object of n2 is in a layout elsewhere
# (one "layout updated" per object), bounded.
k_wait_repaired() {
  local i
  for i in $(seq 1 1200); do
    [ "$(grep -c ': layout updated' "$1")" -ge "${#KOBJ[@]}" ] && return 0
    kill -0 "$K_PID" 2>/dev/null || break
    sleep 0.1
  done
  echo "bench: part K: repair incomplete ($(grep -c ': layout updated' "$1") of ${#KOBJ[@]} moves; $1)" >&2
  return 1
}
# k_window LOG: "FIRST_COPY LAST_SWAP" in Unix seconds from the keeper's
# log (local time stamps, "IMMDD HH:MM:SS.micros").
k_window() { python3 - "$1" <<'PY'
import re, sys, time
first = last = None
year = time.localtime().tm_year
for line in open(sys.argv[1], errors="replace"):
    m = re.match(r"^[DIWE](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{6}) ", line)
    if not m:
        continue
    mo, d, h, mi, s, us = map(int, m.groups())
    t = time.mktime((year, mo, d, h, mi, s, 0, 0, -1)) + us / 1e6
    if ": copying from " in line and first is None:
        first = t
    if ": layout updated" in line:
        last = t
print(f"{first} {last}" if first and last else "failed failed")
PY
}
# k_fsck: every file's replicas whole and verified, none on n2.
k_fsck() {
  if ! "${KADMIN[@]}" fsck /k --checksums >"$WORK/k_fsck.log" 2>&1; then
    echo "bench: part K: fsck --checksums failed after repair:" >&2; cat "$WORK/k_fsck.log" >&2; return 1
  fi
}

# k_repair_side ROUND: prints MB/s of the unthrottled re-replication.
k_repair_side() {
  local log="$OUT/k_keeper_$1.log" w
  k_kill_n2 || { echo failed; return; }
  k_warm
  k_keeper "$log" --copy_bytes_per_sec=0
  if ! k_wait_repaired "$log"; then k_stop_keeper; echo failed; return; fi
  k_stop_keeper
  k_fsck || { echo failed; return; }
  read -r -a w <<<"$(k_window "$log")"
  python3 -c "print(f'{${w[1]} - $KKILL:.1f} s')" >"$WORK/k_heal.$1" 2>/dev/null || true
  python3 -c "print($KBYTES / 1e6 / (${w[1]} - ${w[0]}))" 2>/dev/null || echo failed
}

# k_scan JSON TIMELINE: the scan in the background (K_SCAN_PID).
k_scan() {
  "$BIN/rangefs-bench" --etcd="$RANGEFS_ETCD" --cluster=benchk --mount_root="$MOUNT_ROOT" \
    --dir=/k --data_path=mount --workload=scan --threads=4 --io_size=4M \
    --duration_s="$K_SCAN_S" --timeline="$2" --json >"$1" 2>>"$OUT/fio_errors.log" &
  K_SCAN_PID=$!
}
# k_mean TIMELINE START_UNIX_US WINDOW_FROM WINDOW_TO: the mean MB/s of the
# samples whose 100 ms lie inside the window (else the ones overlapping it).
k_mean() { python3 - "$@" <<'PY'
import sys
try:
    start, a, b = float(sys.argv[2]) / 1e6, float(sys.argv[3]), float(sys.argv[4])
    tl = [tuple(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
except (ValueError, OSError):
    print("failed"); sys.exit()
a, b = a - start, b - start
inside = [v for t, v in tl if t - 0.1 >= a and t <= b] or [v for t, v in tl if t > a and t - 0.1 < b]
print(sum(inside) / len(inside) if inside else "failed")
PY
}

kt=(); kc=(); ks=(); kn=()
for r in $(seq 1 "$K_REPEAT"); do
  # Throughput, unthrottled, against cp.
  k_up "t$r" "$K_NODE_FLAGS --copy_max_bytes_per_sec=0"
  k_plan
  if [ $((r % 2)) = 1 ]; then
    ours=$(k_repair_side "$r"); read -r base cpv ddv <<<"$(k_cp_side)"
  else
    read -r base cpv ddv <<<"$(k_cp_side)"; ours=$(k_repair_side "$r")
  fi
  kt+=("$ours"); kc+=("$base")
  round_line "re-replication $r, $((KBYTES >> 20)) MiB, ${#KOBJ[@]} objects (MB/s; ceiling the faster of cp $(f0 "$cpv") and dd oflag=direct $(f0 "$ddv"); kill -9 to last replica back $(cat "$WORK/k_heal.$r" 2>/dev/null || echo n/a))" "$ours" "$base"
  k_down
  # A scan with repair at the default throttle, against the same scan with
  # no keeper.
  k_up "s$r" "$K_NODE_FLAGS"
  k_plan
  k_kill_n2
  k_warm
  log="$OUT/k_scan_keeper_$r.log"
  scan_with() {
    k_scan "$OUT/k_scan_repair_$r.json" "$OUT/k_scan_repair_$r.timeline"
    sleep 1
    k_keeper "$log"
    k_wait_repaired "$log" || true
    wait "$K_SCAN_PID" || true
    k_stop_keeper
  }
  scan_without() {
    k_scan "$OUT/k_scan_none_$r.json" "$OUT/k_scan_none_$r.timeline"
    wait "$K_SCAN_PID" || true
  }
  if [ $((r % 2)) = 1 ]; then scan_with; scan_without; else scan_without; scan_with; fi
  k_fsck || true
  read -r -a w <<<"$(k_window "$log")"
  sw=$(k_mean "$OUT/k_scan_repair_$r.timeline" "$(jget "$OUT/k_scan_repair_$r.json" start_unix_us 2>/dev/null || echo x)" "${w[0]}" "${w[1]}")
  # The no-repair scan over the same seconds of its own run.
  s0=$(jget "$OUT/k_scan_repair_$r.json" start_unix_us 2>/dev/null || echo x)
  s1=$(jget "$OUT/k_scan_none_$r.json" start_unix_us 2>/dev/null || echo x)
  sn=$(python3 -c "print(*(float(x) - $s0 / 1e6 + $s1 / 1e6 for x in '${w[*]}'.split()))" 2>/dev/null || echo "failed failed")
  read -r -a wn <<<"$sn"
  sn=$(k_mean "$OUT/k_scan_none_$r.timeline" "$s1" "${wn[0]}" "${wn[1]}")
  errs=$(( $(jget "$OUT/k_scan_repair_$r.json" errors 2>/dev/null || echo 1) + $(jget "$OUT/k_scan_repair_$r.json" mismatches 2>/dev/null || echo 1) ))
  ks+=("$sw"); kn+=("$sn")
  # The part of the window after the scan ended is not measured: say so.
  late=$(python3 -c "
d = ${w[1]} - ($s0 / 1e6 + $(jget "$OUT/k_scan_repair_$r.json" seconds 2>/dev/null || echo 0))
print(f'; the repair outlasted the scan by {d:.2f} s' if d > 0 else '')" 2>/dev/null || true)
  round_line "scan during repair $r (MB/s over the $(python3 -c "print(f'{${w[1]} - ${w[0]}:.2f}')" 2>/dev/null || echo '?') s repair window; $errs errors$late)" "$sw" "$sn"
  k_down
done
# k_ratios A... -- B...: each round's ratio A_i / B_i ("failed" if a side failed).
k_ratios() { python3 -c "
import sys
i = sys.argv.index('--'); a, b = sys.argv[1:i], sys.argv[i + 1:]
for x, y in zip(a, b):
    try: print(float(x) / float(y))
    except (ValueError, ZeroDivisionError): print('failed')" "$@"; }
# The ratio column: the median of the rounds' own ratios (each round's two
# sides ran back to back; the machine's load moves between rounds), and
# their range.
mapfile -t krt < <(k_ratios "${kt[@]}" -- "${kc[@]}")
mapfile -t krs < <(k_ratios "${ks[@]}" -- "${kn[@]}")
row "re-replication of a killed node, unthrottled (MB/s, median and range) vs the faster of cp and dd oflag=direct, 4 at once + fsync, of the same objects; ratio: median of the rounds' ratios (range)" \
    "$(f0 "$(median "${kt[@]}")") ($(span "${kt[@]}"))" "$(f0 "$(median "${kc[@]}")") ($(span "${kc[@]}"))" \
    "$(f2 "$(median "${krt[@]}")")" ">= 0.7 ($(span "${krt[@]}"))"
row "scan during repair at the default throttle (MB/s in the repair window) vs no repair; ratio: median of the rounds' ratios (range)" \
    "$(f0 "$(median "${ks[@]}")") ($(span "${ks[@]}"))" "$(f0 "$(median "${kn[@]}")") ($(span "${kn[@]}"))" \
    "$(f2 "$(median "${krs[@]}")")" ">= 0.8 ($(span "${krs[@]}"))"
trap cleanup EXIT
