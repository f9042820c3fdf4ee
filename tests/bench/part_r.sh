# Part R of tests/bench/run.sh (sourced; uses its helpers and settings;
# only with --only=R, not in the default set): rangefs-keeper rebuilding
# the erasure-coded columns of a node killed for good (issue 35), against
# copying the same bytes.
#
# Each round builds a fresh local cluster (10 nodes, the exports on this
# machine's one disk) holding R_FILES files of R_FILE_MB MiB put with
# --ec=6+3 (1 MiB cells; the same bytes every round) and kills node n2's
# agent with kill -9. The keeper starts once n2's live record is gone,
# with --dead_after_s=0.1 --interval_s=0.2, unthrottled
# (--ec_rebuild_bytes_per_sec=0 --copy_bytes_per_sec=0), 4 files at once
# (the default --parallel_copies).
#   rebuild: bytes = n2's column objects; time = the keeper's log, from its
#     first "rebuilding column" to its last "rebuilt column(s) swapped in"
#     (reads of 6 survivors per cell, CRC checks, decode, write with fsync
#     and rename, etcd swap). It reads 6 x those bytes.
#   copy: the same objects (and sidecars) copied from n2's export (still
#     on disk, warm) into n3's, 4 at once, each fsynced: the faster of cp
#     and dd bs=4M oflag=direct. What a replica copy of the same lost bytes
#     costs at best on this disk.
# R_REPEAT rounds (default REPEAT), sides in alternating order; the ratio
# is the median of the rounds' own ratios.
echo "bench: part R (rangefs-keeper rebuilding erasure-coded columns after kill -9 of a node)"
R_KEEPER="$BIN/keeper/rangefs-keeper"
R_REPEAT=${R_REPEAT:-$REPEAT}
if [ "$QUICK" = 1 ]; then
  R_FILES=${R_FILES:-4}; R_FILE_MB=${R_FILE_MB:-24}
else
  R_FILES=${R_FILES:-8}; R_FILE_MB=${R_FILE_MB:-96}
fi
R_PID=""
r_stop_keeper() {
  if [ -n "$R_PID" ]; then
    kill -TERM "$R_PID" 2>/dev/null || true
    wait "$R_PID" 2>/dev/null || true
    R_PID=""
  fi
}
trap 'r_stop_keeper; cleanup' EXIT
mkdir -p "$WORK/data/r"
for i in $(seq 1 "$R_FILES"); do gen "$WORK/data/r/f$i" "r$i" $((R_FILE_MB << 20)); done

r_up() {
  RC="$WORK/clusterR_$1"; CLUSTERS+=("$RC")
  eval "$(deploy/local/cluster.sh up --dir="$RC" --nodes=10 --bin="$BIN" --cluster=benchr \
            --node-flags="--lease_ttl_s=2 --live_interval_s=0.5 --copy_max_bytes_per_sec=0" | tail -n 1)"
  RADMIN=("$BIN/rangefs-admin" --etcd="$RANGEFS_ETCD" --cluster=benchr --no-progress)
  local i
  for i in $(seq 1 "$R_FILES"); do
    "${RADMIN[@]}" file put "$WORK/data/r/f$i" "/r/f$i" --ec=6+3 >/dev/null
  done
  mapfile -t ROBJ < <(cd "$RC/exports/n2" && find . -type f ! -name '.*' ! -name '*.cells' | sed 's#^\./##' | sort)
  RBYTES=0
  local rel
  for rel in "${ROBJ[@]}"; do RBYTES=$((RBYTES + $(stat -c %s "$RC/exports/n2/$rel"))); done
}
r_down() { deploy/local/cluster.sh down --dir="$RC" --purge >/dev/null; }

# r_copy_side HOW: MB/s of copying n2's objects (and sidecars) into n3's
# export, 4 at once, each fsynced.
r_copy_side() {
  local t0 t1
  (cd "$RC/exports/n2" && cat "${ROBJ[@]}" >/dev/null)
  t0=$(date +%s.%N)
  # shellcheck disable=SC2016
  if ! printf '%s\n' "${ROBJ[@]}" | R_HOW=$1 R_SRC="$RC/exports/n2" R_DST="$RC/exports/n3" xargs -P 4 -L 1 bash -c '
      b=$(echo "$0" | tr / _); s=$(dirname "$R_SRC/$0")/.$(basename "$0").rangefs-crc
      if [ "$R_HOW" = dd ]; then
        dd if="$R_SRC/$0" of="$R_DST/.benchcp-$b" bs=4M oflag=direct status=none
      else
        cp "$R_SRC/$0" "$R_DST/.benchcp-$b"
      fi && cp "$s" "$R_DST/.benchcp-$b.crc" && sync "$R_DST/.benchcp-$b" "$R_DST/.benchcp-$b.crc"' \
      2>>"$OUT/fio_errors.log"; then
    echo failed; return
  fi
  t1=$(date +%s.%N)
  find "$RC/exports/n3" -name '.benchcp-*' -delete
  echo "$1 -P4 + sync FILE of $RBYTES B: $t0 .. $t1" >>"$OUT/commands.log"
  python3 -c "print($RBYTES / 1e6 / ($t1 - $t0))"
}
r_cp_side() {
  local a b
  if [ $((RANDOM % 2)) = 0 ]; then a=$(r_copy_side cp); b=$(r_copy_side dd); else
    b=$(r_copy_side dd); a=$(r_copy_side cp); fi
  python3 -c "
import sys
v = [float(x) for x in sys.argv[1:] if x.replace('.', '', 1).isdigit()]
print(max(v) if v else 'failed', *sys.argv[1:])" "$a" "$b"
}

r_kill_n2() {
  kill -KILL "$(pgrep -f "rangefs-node --node_id=n2 --export_root=$RC/exports/n2( |\$)" | head -n 1)"
  local i
  for i in $(seq 1 1200); do
    "${RADMIN[@]}" --json status 2>/dev/null | python3 -c "
import json, sys
rows = json.load(sys.stdin)
sys.exit(0 if any(r['node'] == 'n2' and r['live'] == 'no' for r in rows) else 1)" && return 0
    sleep 0.05
  done
  echo "bench: part R: n2's live record did not expire" >&2; return 1
}

# r_window LOG: "FIRST_REBUILD LAST_SWAP" in Unix seconds from the log.
r_window() { python3 - "$1" <<'PY'
import re, sys, time
first = last = None
year = time.localtime().tm_year
for line in open(sys.argv[1], errors="replace"):
    m = re.match(r"^[DIWE](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{6}) ", line)
    if not m:
        continue
    mo, d, h, mi, s, us = map(int, m.groups())
    t = time.mktime((year, mo, d, h, mi, s, 0, 0, -1)) + us / 1e6
    if ": rebuilding column " in line and first is None:
        first = t
    if "rebuilt column(s) swapped in" in line:
        last = t
print(f"{first} {last}" if first and last else "failed failed")
PY
}

# r_rebuild_side ROUND: MB/s of the unthrottled rebuild of n2's columns.
r_rebuild_side() {
  local log="$OUT/r_keeper_$1.log" i w
  r_kill_n2 || { echo failed; return; }
  echo "rangefs-keeper --dead_after_s=0.1 --interval_s=0.2 ... (round $1)" >>"$OUT/commands.log"
  "$R_KEEPER" --etcd_endpoints="$RANGEFS_ETCD" --cluster=benchr --dead_after_s=0.1 \
    --interval_s=0.2 --lease_ttl_s=2 --rebalance_tolerance=0 --orphan_scan_interval_s=0 \
    --delete_grace_s=3600 --id=bench-r --copy_bytes_per_sec=0 --ec_rebuild_bytes_per_sec=0 \
    >"$log" 2>&1 &
  R_PID=$!
  for i in $(seq 1 1200); do
    [ "$(grep -c 'rebuilt column(s) swapped in' "$log")" -ge "${#ROBJ[@]}" ] && break
    kill -0 "$R_PID" 2>/dev/null || break
    sleep 0.1
  done
  r_stop_keeper
  if ! "${RADMIN[@]}" fsck /r --checksums >"$WORK/r_fsck.log" 2>&1; then
    echo "bench: part R: fsck --checksums failed after the rebuild:" >&2; cat "$WORK/r_fsck.log" >&2
    echo failed; return
  fi
  read -r -a w <<<"$(r_window "$log")"
  python3 -c "print($RBYTES / 1e6 / (${w[1]} - ${w[0]}))" 2>/dev/null || echo failed
}

rt=(); rc=()
for r in $(seq 1 "$R_REPEAT"); do
  r_up "$r"
  if [ $((r % 2)) = 1 ]; then
    ours=$(r_rebuild_side "$r"); read -r base cpv ddv <<<"$(r_cp_side)"
  else
    read -r base cpv ddv <<<"$(r_cp_side)"; ours=$(r_rebuild_side "$r")
  fi
  rt+=("$ours"); rc+=("$base")
  round_line "EC rebuild $r, $((RBYTES >> 20)) MiB in ${#ROBJ[@]} columns of n2 (MB/s rebuilt; copy: faster of cp $(f0 "$cpv") and dd oflag=direct $(f0 "$ddv"))" "$ours" "$base"
  r_down
done
mapfile -t rrt < <(python3 -c "
import sys
i = sys.argv.index('--'); a, b = sys.argv[1:i], sys.argv[i + 1:]
for x, y in zip(a, b):
    try: print(float(x) / float(y))
    except (ValueError, ZeroDivisionError): print('failed')" "${rt[@]}" -- "${rc[@]}")
row "EC 6+3 rebuild of a killed node's columns, unthrottled (MB/s rebuilt, median and range; reads 6x) vs copying the same bytes (faster of cp and dd oflag=direct, 4 at once + fsync); ratio: median of the rounds' ratios (range)" \
    "$(f0 "$(median "${rt[@]}")") ($(span "${rt[@]}"))" "$(f0 "$(median "${rc[@]}")") ($(span "${rc[@]}"))" \
    "$(f2 "$(median "${rrt[@]}")")" "- ($(span "${rrt[@]}"))"
trap cleanup EXIT
