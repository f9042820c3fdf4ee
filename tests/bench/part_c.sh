# Part C of tests/bench/run.sh (sourced; uses its helpers and settings;
# only with --only=C, not in the default set): rangefs-keeper converting a
# directory of replicated files to RS(6,3) under a storage policy
# (issue 36), against copying the same bytes, and a scan's throughput
# while it converts at the default throttle against none.
#
# Each round builds a fresh local cluster (10 nodes, the exports on this
# machine's one disk) holding C_FILES files of C_FILE_MB MiB put with
# --replicas=2 --width=6 (1 MiB units = cells: the parity-only path; the
# same bytes every round), then `rangefs-admin policy set /c --ec=6+3`.
#   conversion: the keeper unthrottled (--convert_bytes_per_sec=0
#     --copy_bytes_per_sec=0), 2 files at once (the default
#     --parallel_conversions). MB/s = logical bytes converted / the time
#     in the keeper's log from its first "conversion of" to its last
#     "layout swapped" (reads of the data cells through the agents with
#     sidecar checks, ISA-L encoding, parity and .cells writes with fsync
#     and rename, one etcd swap per file). It writes 0.5 x those bytes.
#   copy: the same logical bytes (one replica of every column object, and
#     its sidecar) copied from their node's export into another's, 4 at
#     once, each fsynced: the faster of cp and dd bs=4M oflag=direct.
#   scan during conversion: rangefs-bench scan (agent path, 4 threads,
#     4 MiB calls, C_SCAN_S s) of /c with the keeper started 1 s in at its
#     default throttle (--convert_bytes_per_sec 100 MiB/s per file), against
#     the same scan with no keeper (order alternating); both sides' MB/s is
#     the mean of their 100 ms timeline samples inside the conversion
#     window (first "conversion of" to last "layout swapped"), the same
#     seconds of each run (part K's method).
# C_REPEAT rounds (default REPEAT); ratios are the medians of the rounds'
# own ratios. Needs rangefs-admin policy (issue 36).
echo "bench: part C (rangefs-keeper converting 2 replicas to RS(6,3) under a storage policy)"
C_KEEPER="$BIN/keeper/rangefs-keeper"
C_REPEAT=${C_REPEAT:-$REPEAT}
if [ "$QUICK" = 1 ]; then
  C_FILES=${C_FILES:-4}; C_FILE_MB=${C_FILE_MB:-24}; C_SCAN_S=${C_SCAN_S:-4}
else
  C_FILES=${C_FILES:-8}; C_FILE_MB=${C_FILE_MB:-96}; C_SCAN_S=${C_SCAN_S:-8}
fi
C_PID=""; C_SCAN_PID=""
c_stop_keeper() {
  if [ -n "$C_PID" ]; then
    kill -TERM "$C_PID" 2>/dev/null || true
    wait "$C_PID" 2>/dev/null || true
    C_PID=""
  fi
}
trap 'c_stop_keeper; cleanup' EXIT
mkdir -p "$WORK/data/c"
for i in $(seq 1 "$C_FILES"); do gen "$WORK/data/c/f$i" "c$i" $((C_FILE_MB << 20)); done

c_up() {
  CC="$WORK/clusterC_$1"; CLUSTERS+=("$CC")
  eval "$(deploy/local/cluster.sh up --dir="$CC" --nodes=10 --bin="$BIN" --cluster=benchc \
            --node-flags="--lease_ttl_s=2 --live_interval_s=0.5 --copy_max_bytes_per_sec=0" | tail -n 1)"
  CADMIN=("$BIN/rangefs-admin" --etcd="$RANGEFS_ETCD" --cluster=benchc --no-progress)
  local i
  for i in $(seq 1 "$C_FILES"); do
    "${CADMIN[@]}" file put "$WORK/data/c/f$i" "/c/f$i" --replicas=2 --width=6 >/dev/null
  done
  CBYTES=$((C_FILES * (C_FILE_MB << 20)))
  # One replica of every column object: "SRC_EXPORT/OBJ DST_EXPORT" (the
  # export of the node half way round the list), for the copy side.
  local nodes
  nodes=$(cd "$CC/exports" && echo n*)
  CPAIRS=$(cd "$CC/exports" && find n* -type f ! -name '.*' | sort | awk -F/ -v cc="$CC" -v nodes="$nodes" '
    BEGIN { k = split(nodes, N, " "); for (i = 1; i <= k; i++) at[N[i]] = i }
    { obj = substr($0, length($1) + 2); if (seen[obj]++) next
      printf "%s/exports/%s %s/exports/%s\n", cc, $0, cc, N[(at[$1] + int(k / 2) - 1) % k + 1] }')
}
c_down() { deploy/local/cluster.sh down --dir="$CC" --purge >/dev/null; }

c_keeper() {
  local log=$1
  shift
  echo "rangefs-keeper --interval_s=0.2 ... $*" >>"$OUT/commands.log"
  "$C_KEEPER" --etcd_endpoints="$RANGEFS_ETCD" --cluster=benchc --interval_s=0.2 \
    --lease_ttl_s=2 --rebalance_tolerance=0 --orphan_scan_interval_s=0 \
    --delete_grace_s=3600 --id=bench-c "$@" >"$log" 2>&1 &
  C_PID=$!
}
c_wait_converted() {
  local i
  for i in $(seq 1 3000); do
    [ "$(grep -c ': layout swapped' "$1")" -ge "$C_FILES" ] && return 0
    kill -0 "$C_PID" 2>/dev/null || break
    sleep 0.1
  done
  return 1
}
# c_window LOG: "FIRST_CONVERSION LAST_SWAP" in Unix seconds.
c_window() { python3 - "$1" <<'PY'
import re, sys, time
first = last = None
year = time.localtime().tm_year
for line in open(sys.argv[1], errors="replace"):
    m = re.match(r"^[DIWE](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{6}) ", line)
    if not m:
        continue
    mo, d, h, mi, s, us = map(int, m.groups())
    t = time.mktime((year, mo, d, h, mi, s, 0, 0, -1)) + us / 1e6
    if " conversion of " in line and first is None:
        first = t
    if ": layout swapped" in line:
        last = t
print(f"{first} {last}" if first and last else "failed failed")
PY
}
c_fsck() {
  if ! "${CADMIN[@]}" fsck /c --checksums >"$WORK/c_fsck.log" 2>&1; then
    echo "bench: part C: fsck --checksums failed:" >&2; cat "$WORK/c_fsck.log" >&2; return 1
  fi
}
c_policy() { "${CADMIN[@]}" policy set /c --ec=6+3 >/dev/null; }

# c_convert_side ROUND: MB/s (logical) of the unthrottled conversion.
c_convert_side() {
  local log="$OUT/c_keeper_$1.log" w
  c_policy || { echo failed; return; }
  c_keeper "$log" --convert_bytes_per_sec=0 --copy_bytes_per_sec=0
  if ! c_wait_converted "$log"; then c_stop_keeper; echo failed; return; fi
  c_stop_keeper
  c_fsck || { echo failed; return; }
  read -r -a w <<<"$(c_window "$log")"
  python3 -c "print($CBYTES / 1e6 / (${w[1]} - ${w[0]}))" 2>/dev/null || echo failed
}
# c_copy_side HOW: MB/s of copying one replica of every column (and its
# sidecar) to another node's export, 4 at once, each fsynced.
c_copy_side() {
  local t0 t1
  cut -d' ' -f1 <<<"$CPAIRS" | grep . | xargs cat >/dev/null
  t0=$(date +%s.%N)
  # shellcheck disable=SC2016
  if ! grep . <<<"$CPAIRS" | C_HOW=$1 xargs -P 4 -L 1 bash -c '
      b=$(echo "$0" | tr / _); s=$(dirname "$0")/.$(basename "$0").rangefs-crc
      if [ "$C_HOW" = dd ]; then
        dd if="$0" of="$1/.benchcp-$b" bs=4M oflag=direct status=none
      else
        cp "$0" "$1/.benchcp-$b"
      fi && cp "$s" "$1/.benchcp-$b.crc" && sync "$1/.benchcp-$b" "$1/.benchcp-$b.crc"' \
      2>>"$OUT/fio_errors.log"; then
    echo failed; return
  fi
  t1=$(date +%s.%N)
  find "$CC/exports" -name '.benchcp-*' -delete
  echo "$1 -P4 + sync FILE of $CBYTES B: $t0 .. $t1" >>"$OUT/commands.log"
  python3 -c "print($CBYTES / 1e6 / ($t1 - $t0))"
}
c_cp_side() {
  local a b
  if [ $((RANDOM % 2)) = 0 ]; then a=$(c_copy_side cp); b=$(c_copy_side dd); else
    b=$(c_copy_side dd); a=$(c_copy_side cp); fi
  python3 -c "
import sys
v = [float(x) for x in sys.argv[1:] if x.replace('.', '', 1).isdigit()]
print(max(v) if v else 'failed', *sys.argv[1:])" "$a" "$b"
}
c_scan() {
  "$BIN/rangefs-bench" --etcd="$RANGEFS_ETCD" --cluster=benchc \
    --dir=/c --data_path=agent --workload=scan --threads=4 --io_size=4M \
    --duration_s="$C_SCAN_S" --timeline="$2" --json >"$1" 2>>"$OUT/fio_errors.log" &
  C_SCAN_PID=$!
}
c_mean() { python3 - "$@" <<'PY'
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
c_ratios() { python3 -c "
import sys
i = sys.argv.index('--'); a, b = sys.argv[1:i], sys.argv[i + 1:]
for x, y in zip(a, b):
    try: print(float(x) / float(y))
    except (ValueError, ZeroDivisionError): print('failed')" "$@"; }

ct=(); cc=(); cs=(); cn=()
for r in $(seq 1 "$C_REPEAT"); do
  c_up "t$r"
  if [ $((r % 2)) = 1 ]; then
    ours=$(c_convert_side "$r"); read -r base cpv ddv <<<"$(c_cp_side)"
  else
    read -r base cpv ddv <<<"$(c_cp_side)"; ours=$(c_convert_side "$r")
  fi
  ct+=("$ours"); cc+=("$base")
  round_line "conversion $r to RS(6,3), $((CBYTES >> 20)) MiB logical (MB/s; copy: faster of cp $(f0 "$cpv") and dd oflag=direct $(f0 "$ddv"))" "$ours" "$base"
  c_down
  # A scan while converting at the default throttle, against the same scan
  # with no keeper (the files still replicated).
  c_up "s$r"
  log="$OUT/c_scan_keeper_$r.log"
  scan_with() {
    c_policy
    c_scan "$OUT/c_scan_conv_$r.json" "$OUT/c_scan_conv_$r.timeline"
    sleep 1
    c_keeper "$log"
    c_wait_converted "$log" || true
    wait "$C_SCAN_PID" || true
    c_stop_keeper
  }
  scan_without() {
    c_scan "$OUT/c_scan_none_$r.json" "$OUT/c_scan_none_$r.timeline"
    wait "$C_SCAN_PID" || true
  }
  if [ $((r % 2)) = 1 ]; then scan_with; scan_without; else scan_without; scan_with; fi
  c_fsck || true
  read -r -a w <<<"$(c_window "$log")"
  s0=$(jget "$OUT/c_scan_conv_$r.json" start_unix_us 2>/dev/null || echo x)
  s1=$(jget "$OUT/c_scan_none_$r.json" start_unix_us 2>/dev/null || echo x)
  sw=$(c_mean "$OUT/c_scan_conv_$r.timeline" "$s0" "${w[0]}" "${w[1]}")
  sn=$(python3 -c "print(*(float(x) - $s0 / 1e6 + $s1 / 1e6 for x in '${w[*]}'.split()))" 2>/dev/null || echo "failed failed")
  read -r -a wn <<<"$sn"
  sn=$(c_mean "$OUT/c_scan_none_$r.timeline" "$s1" "${wn[0]}" "${wn[1]}")
  errs=$(( $(jget "$OUT/c_scan_conv_$r.json" errors 2>/dev/null || echo 1) + $(jget "$OUT/c_scan_conv_$r.json" mismatches 2>/dev/null || echo 1) ))
  cs+=("$sw"); cn+=("$sn")
  round_line "scan during conversion $r (MB/s over the $(python3 -c "print(f'{${w[1]} - ${w[0]}:.2f}')" 2>/dev/null || echo '?') s conversion window; $errs errors)" "$sw" "$sn"
  c_down
done
mapfile -t crt < <(c_ratios "${ct[@]}" -- "${cc[@]}")
mapfile -t crs < <(c_ratios "${cs[@]}" -- "${cn[@]}")
row "conversion of 2 replicas to RS(6,3) in place, unthrottled (logical MB/s, median and range; writes 0.5x) vs copying the same bytes (faster of cp and dd oflag=direct, 4 at once + fsync); ratio: median of the rounds' ratios (range)" \
    "$(f0 "$(median "${ct[@]}")") ($(span "${ct[@]}"))" "$(f0 "$(median "${cc[@]}")") ($(span "${cc[@]}"))" \
    "$(f2 "$(median "${crt[@]}")")" "- ($(span "${crt[@]}"))"
row "scan during conversion at the default throttle (MB/s in the conversion window) vs no conversion; ratio: median of the rounds' ratios (range)" \
    "$(f0 "$(median "${cs[@]}")") ($(span "${cs[@]}"))" "$(f0 "$(median "${cn[@]}")") ($(span "${cn[@]}"))" \
    "$(f2 "$(median "${crs[@]}")")" "- ($(span "${crs[@]}"))"
trap cleanup EXIT
