# Part A of tests/bench/run.sh (sourced; uses its helpers and settings):
# the mount path and the agent path on one machine, against fio and a
# plain sendfile stream on the very same object files.
#
# A local cluster (4 nodes; the export directories are the clients'
# mounts), FILES files of FILE_MB MiB, 1 replica, 4 MiB stripes: every
# file has one object per node, FILES x 4 objects, which fio reads
# directly (each fio job its own objects: job j of N gets objects j, j+N,
# ...), and rangefs-bench through the client library.
#   sequential, O_DIRECT and cached: a sweep on each side (run.sh's
#     FIO_* and OUR_* lists), the best configuration of each side, then
#     REPEAT rounds of both, the first side alternating; median and range
#     of MB/s and of CPU s per GB (fio: usr+sys of its jobs; ours:
#     getrusage of the whole process). Cached: fio --invalidate=0 and the
#     objects read with `cat` first; O_DIRECT: `echo 3 > drop_caches` must
#     succeed before every run, else the O_DIRECT rows are not measured.
#   4 KiB random, O_DIRECT: at each depth of RAND_DEPTHS (reads in flight,
#     held all along: numjobs x iodepth for fio; for ours threads x
#     in-flight, ReadVs of 64 x in-flight ranges with
#     ReadOptions::max_in_flight, each thread's reads on a ring that deep
#     (--io_uring_depth), landing in 4 x in-flight page-aligned buffers per
#     thread (fio's jobs: iodepth buffers)) the best shape of each side at
#     that depth, then rounds as above; best vs best over all depths as its
#     own row. (Until run V10 ours also swept ReadVs of `depth` ranges that
#     each wait for all: never more than `depth` in flight, fewer as each
#     ReadV ends, and a 2 s sweep point of that shape won once by noise.)
#   agent path over loopback (objects in the page cache): rangefs-bench
#     --data_path=agent vs tests/bench/sendfile_stream (a plain TCP stream
#     of the same objects, no framing, sent with sendfile(2) or with pread
#     + write): the best thread count vs the best stream count and mode;
#     iperf3 -l 1M with as many streams for scale.
# Every run is time-based with a warm-up; every command line goes to
# OUT/commands.log, every sweep point to OUT/a_sweep_*.tsv.
echo "bench: part A (mount path and agent path, local cluster)"
CA="$WORK/clusterA"; CLUSTERS+=("$CA")
eval "$(deploy/local/cluster.sh up --dir="$CA" --nodes=4 --bin="$BIN" --cluster=bench | tail -n 1)"
ADMIN=("$BIN/rangefs-admin" --etcd="$RANGEFS_ETCD" --cluster=bench --no-progress)
mkdir -p "$WORK/data/a"
for i in $(seq 1 "$FILES"); do
  gen "$WORK/data/a/f$i" "a$i" $((FILE_MB << 20))
  "${ADMIN[@]}" file put "$WORK/data/a/f$i" "/a/f$i" --replicas=1 --stripe-unit=4M >/dev/null
  rm -f "$WORK/data/a/f$i"
done
mapfile -t OBJ_LIST < <(find "$CA/exports" -type f -path '*/f/*' ! -name '.*' | sort)
OBJS=$(IFS=:; echo "${OBJ_LIST[*]}")
# --single_flight=false: with more threads than files, threads read the same
# file in step and single flight would fetch its bytes once for all of them
# (counted once per thread): fio's jobs each read their own objects, so
# every byte we count must be fetched too. (Until run V5 it was on: the
# agent-path and the 8-thread O_DIRECT rows were inflated by it.)
BENCH=("$BIN/rangefs-bench" --etcd="$RANGEFS_ETCD" --cluster=bench --mount_root="$MOUNT_ROOT" --dir=/a
       --single_flight=false)
echo "part A: ${#OBJ_LIST[@]} objects, $((FILES * FILE_MB)) MiB" >>"$OUT/commands.log"

DROP_OK=1
prime() {  # prime DIRECT: empty the page cache (must work), or warm the objects
  if [ "$1" = 1 ]; then
    sync
    if ! echo 3 2>/dev/null >/proc/sys/vm/drop_caches; then DROP_OK=0; return 1; fi
  else
    cat "${OBJ_LIST[@]}" >/dev/null
  fi
}
# fio job sections: NJ jobs, job j gets objects j, j+NJ, ... (no job reads
# another's bytes).
fio_jobs() {
  local nj=$1 j k files
  for j in $(seq 0 $((nj - 1))); do
    files=""
    for ((k = j; k < ${#OBJ_LIST[@]}; k += nj)); do files+="${files:+:}${OBJ_LIST[k]}"; done
    [ -n "$files" ] && echo "--name=j$j --filename=$files"
  done
}
# seq_fio DIRECT CFG RUNTIME RAMP JSON: CFG "engine,numjobs,bs,iodepth".
seq_fio() {
  local engine nj bs qd
  IFS=, read -r engine nj bs qd <<<"$2"
  prime "$1" || return 1
  # shellcheck disable=SC2046
  fio_run "$5" --rw=read --bs="$bs" --direct="$1" --ioengine="$engine" --iodepth="$qd" \
    $([ "$1" = 0 ] && echo --invalidate=0) --time_based=1 --runtime="$3" --ramp_time="$4" \
    --readonly $(fio_jobs "$nj")
}
# seq_ours DIRECT CFG RUNTIME RAMP JSON [FLAGS...]: CFG
# "threads,max_io_size,io_uring,prefetch,zero_copy".
seq_ours() {
  local direct=$1 t mio ur pf zc rt=$3 ramp=$4 json=$5
  IFS=, read -r t mio ur pf zc <<<"$2"
  shift 5
  prime "$direct" || return 1
  local cmd=("${BENCH[@]}" --workload=scan --data_path=mount --threads="$t" --io_size=16M
             --max_io_size="$mio" --io_uring="$ur" --prefetch="$pf" --zero_copy="$zc"
             --o_direct=$([ "$direct" = 1 ] && echo true || echo false)
             --duration_s="$rt" --warmup_s="$ramp" --json "$@")
  echo "${cmd[*]}" >>"$OUT/commands.log"
  "${cmd[@]}" >"$json" 2>"$json.err"
}
rr_ours() { seq_ours "$@" --policy=round_robin; }  # same, round_robin policy
ours_get() {  # ours_get JSON mbps|iops|cpu
  case "$2" in
    mbps) python3 -c "print($(jget "$1" gbps) * 1000)" ;;
    iops) jget "$1" iops ;;
    cpu) jget "$1" cpu_s_per_gb ;;
  esac
}
# measure SIDE KIND ARGS...: runs seq_fio/seq_ours/... and prints "VALUE CPU"
# ("failed failed" when the run failed twice). A run that fails is run once
# more, either side: its failure goes to OUT/retried.log (named in the
# report) and its output to OUT/failed_*.json; only a second failure makes
# the point "failed". (Run V15: one of fio's 5 s cached runs ended with a
# job that "read nothing", and the whole row was lost.)
measure() {
  local side=$1 metric=$2 json="$WORK/m.json" try
  shift 2
  for try in 1 2; do
    rm -f "$json"
    if "$side" "$@" "$json"; then
      case "$side" in
        *_fio) echo "$(fio_get "$json" "$metric") $(fio_get "$json" cpu)" ;;
        *_ours) echo "$(ours_get "$json" "$metric") $(ours_get "$json" cpu)" ;;
        *) echo "$(jget "$json" mbps) $(jget "$json" cpu_s_per_gb)" ;;
      esac
      cp "$json" "$OUT/a_last_$side.json"
      return
    fi
    local keep
    keep="$OUT/failed_${side}_$(date +%s%N).json"
    cp "$json" "$keep" 2>/dev/null || true
    echo "$side $* failed (try $try of 2; output $keep)" >>"$OUT/retried.log"
  done
  echo "failed failed"
}
# A configuration measured in several passes counts by the median of its
# passes (2 passes: their mean): robust to one slow pass (a slow spell of
# the VM's disk: a 2 s point read 54k where the same shape read 93k a
# minute later, run V14) and to one lucky one (run V15 took each side's
# best pass: one high point, 101k against 84k for the same shape, picked
# it). tally_point CFG VALUE (with `local -A vals` in the caller): records
# the pass; a configuration that failed in any pass is out for good.
tally_point() {
  if isnum "$2" && [ "${vals[$1]-}" != failed ]; then
    vals[$1]="${vals[$1]-} $2"
  else
    vals[$1]=failed
  fi
}
# best_cfg CFG...: the configuration with the highest median (the first one
# when all failed).
best_cfg() {
  local c v pick="" pickv=0
  for c in "$@"; do
    [ "${vals[$c]-failed}" = failed ] && continue
    # shellcheck disable=SC2086
    v=$(median ${vals[$c]})
    if isnum "$v" && python3 -c "import sys; sys.exit(0 if $v > $pickv else 1)"; then
      pick=$c; pickv=$v
    fi
  done
  echo "${pick:-$1}"
}
# sweep SIDE METRIC TSV CFG... -- ARGS...: each configuration SWEEP_PASSES
# times (default 1; short runs; later passes in reverse order), every
# point into TSV; prints the configuration with the best median (the first
# one when there is only one: nothing to choose).
sweep() {
  local side=$1 metric=$2 tsv=$3 cfgs=() c v cpu k i
  local passes=${SWEEP_PASSES:-1}
  local -A vals=()
  shift 3
  while [ "$1" != -- ]; do cfgs+=("$1"); shift; done
  shift
  if [ "${#cfgs[@]}" = 1 ]; then echo "${cfgs[0]}"; return; fi
  for ((k = 0; k < passes; k++)); do
    for ((i = 0; i < ${#cfgs[@]}; i++)); do
      c=${cfgs[$i]}
      [ $((k % 2)) = 1 ] && c=${cfgs[$((${#cfgs[@]} - 1 - i))]}
      read -r v cpu <<<"$(measure "$side" "$metric" "$1" "$c" "$SWEEP_RUNTIME" "$SWEEP_RAMP" "${@:2}")"
      echo "$c	$v	$cpu" >>"$tsv"
      tally_point "$c" "$v"
    done
  done
  best_cfg "${cfgs[@]}"
}
# sweep_pair METRIC PASSES SIDE_A TSV_A "CFGS_A" SIDE_B TSV_B "CFGS_B"
# ARGS...: two sides' sweeps interleaved in time, point by point (A's
# i-th configuration, then B's; the first side and, in odd passes, the
# order of the points reversed), so that a slow spell of the VM's disk
# falls on both sides' points alike, not on one side's whole sweep.
# Prints "BEST_A BEST_B" (configurations hold no spaces).
sweep_pair() {
  local metric=$1 passes=$2 sa=$3 ta=$4 sb=$6 tb=$7 k i j n v cpu s t c
  local -a ca cb
  local -A vals=()
  read -ra ca <<<"$5"; read -ra cb <<<"$8"
  shift 8
  if [ "${#ca[@]}" = 1 ] && [ "${#cb[@]}" = 1 ]; then echo "${ca[0]} ${cb[0]}"; return; fi
  n=$((${#ca[@]} > ${#cb[@]} ? ${#ca[@]} : ${#cb[@]}))
  for ((k = 0; k < passes; k++)); do
    for ((i = 0; i < n; i++)); do
      j=$([ $((k % 2)) = 1 ] && echo $((n - 1 - i)) || echo "$i")
      for s in $([ $(((k + i) % 2)) = 0 ] && echo "A B" || echo "B A"); do
        if [ "$s" = A ]; then c=${ca[$j]-}; t=$ta; else c=${cb[$j]-}; t=$tb; fi
        [ -n "$c" ] || continue
        read -r v cpu <<<"$(measure "$([ "$s" = A ] && echo "$sa" || echo "$sb")" "$metric" "$1" "$c" "$SWEEP_RUNTIME" "$SWEEP_RAMP" "${@:2}")"
        echo "$c	$v	$cpu" >>"$t"
        tally_point "$s:$c" "$v"
      done
    done
  done
  local pa=() pb=()
  for c in "${ca[@]}"; do pa+=("A:$c"); done
  for c in "${cb[@]}"; do pb+=("B:$c"); done
  c=$(best_cfg "${pa[@]}"); v=$(best_cfg "${pb[@]}")
  echo "${c#A:} ${v#B:}"
}
fio_seq_cfgs() {
  local e nj bs qd
  for e in $FIO_ENGINES; do for nj in $FIO_JOBS; do for bs in $FIO_BS; do
    if [ "$e" = psync ]; then echo "$e,$nj,$bs,1"; continue; fi
    for qd in $FIO_QD; do echo "$e,$nj,$bs,$qd"; done
  done; done; done
}
our_seq_cfgs() {
  local t m e p z
  for t in $OUR_THREADS; do for m in $OUR_MAXIO; do for e in $OUR_ENGINES; do
    for p in $OUR_PREFETCH; do for z in $OUR_ZERO_COPY; do echo "$t,$m,$e,$p,$z"; done; done
  done; done; done
}
# rounds NAME UNIT SIDE_A CFG_A SIDE_B CFG_B ARGS...: REPEAT rounds of both
# (A first in odd rounds, B first in even ones); sets RA/RB (values) and
# CA_/CB_ (CPU s/GB) arrays, one line per round in OUT/rounds.md.
rounds() {
  local name=$1 unit=$2 sa=$3 ca=$4 sb=$5 cb=$6 r va vb cpa cpb
  shift 6
  RA=(); RB=(); CA_=(); CB_=()
  for r in $(seq 1 "$REPEAT"); do
    if [ $((r % 2)) = 1 ]; then
      read -r va cpa <<<"$(measure "$sa" "$unit" "$1" "$ca" "$RUNTIME" "$RAMP" "${@:2}")"
      read -r vb cpb <<<"$(measure "$sb" "$unit" "$1" "$cb" "$RUNTIME" "$RAMP" "${@:2}")"
    else
      read -r vb cpb <<<"$(measure "$sb" "$unit" "$1" "$cb" "$RUNTIME" "$RAMP" "${@:2}")"
      read -r va cpa <<<"$(measure "$sa" "$unit" "$1" "$ca" "$RUNTIME" "$RAMP" "${@:2}")"
    fi
    RA+=("$va"); RB+=("$vb"); CA_+=("$cpa"); CB_+=("$cpb")
    round_line "$name $r ($unit; CPU s/GB $(f2 "$cpa") vs $(f2 "$cpb"); $([ $((r % 2)) = 1 ] && echo "ours first" || echo "baseline first"))" "$va" "$vb"
  done
}
# rr: after rounds, "; rounds: R (MIN-MAX)", the median and range of the
# rounds' own ratios (RA_i / RB_i: each round's two sides ran back to
# back, and the VM's disk and load move between rounds). The ratio column
# stays the ratio of the medians; this is printed beside the target.
rr() { python3 -c "
import statistics, sys
i = sys.argv.index('--'); a, b = sys.argv[1:i], sys.argv[i + 1:]
try: r = [float(x) / float(y) for x, y in zip(a, b)]
except (ValueError, ZeroDivisionError): print('; rounds: n/a'); sys.exit()
print(f'; rounds: {statistics.median(r):.2f} ({min(r):.2f}-{max(r):.2f})')" "${RA[@]}" -- "${RB[@]}"; }
# cell V...: "median (min-max)" of the values.
cell() { echo "$(f0 "$(median "$@")") ($(span "$@"))"; }
cell2() { echo "$(f2 "$(median "$@")") ($(span "$@"))"; }

# ---- sequential, O_DIRECT then cached
for direct in 1 0; do
  name=$([ "$direct" = 1 ] && echo "O_DIRECT" || echo "cached")
  if [ "$direct" = 1 ] && ! prime 1; then
    echo "part A: sequential O_DIRECT not measured: drop_caches failed (no cold cache to compare)" | tee -a "$OUT/report.md"
    continue
  fi
  # The sweeps alternate which side goes first too (O_DIRECT: fio first).
  mapfile -t fcfgs < <(fio_seq_cfgs); mapfile -t ocfgs < <(our_seq_cfgs)
  if [ "$direct" = 1 ]; then
    fio_cfg=$(sweep seq_fio mbps "$OUT/a_sweep_fio_$name.tsv" "${fcfgs[@]}" -- "$direct")
    our_cfg=$(sweep seq_ours mbps "$OUT/a_sweep_ours_$name.tsv" "${ocfgs[@]}" -- "$direct")
  else
    our_cfg=$(sweep seq_ours mbps "$OUT/a_sweep_ours_$name.tsv" "${ocfgs[@]}" -- "$direct")
    fio_cfg=$(sweep seq_fio mbps "$OUT/a_sweep_fio_$name.tsv" "${fcfgs[@]}" -- "$direct")
  fi
  echo "ours: threads,max_io_size,io_uring,prefetch,zero_copy = $our_cfg; fio: engine,numjobs,bs,iodepth = $fio_cfg" >"$OUT/a_best_$name.config"
  rounds "sequential $name" mbps seq_ours "$our_cfg" seq_fio "$fio_cfg" "$direct"
  R[scan_$name]=$(median "${RA[@]}")
  [ "$direct" = 1 ] && [ "$DROP_OK" = 0 ] && { echo "part A: drop_caches failed during the O_DIRECT rounds: rows withdrawn" | tee -a "$OUT/report.md"; continue; }
  row "mount-path sequential, $name (MB/s), best vs fio best ($our_cfg vs $fio_cfg)" \
      "$(cell "${RA[@]}")" "$(cell "${RB[@]}")" "$(ratio "$(median "${RA[@]}")" "$(median "${RB[@]}")")" \
      "$([ "$direct" = 1 ] && echo ">= 0.95" || echo ">= 0.9")$(rr)"
  row "mount-path sequential, $name: CPU s/GB vs fio's (same runs)" \
      "$(cell2 "${CA_[@]}")" "$(cell2 "${CB_[@]}")" "$(ratio "$(median "${CA_[@]}")" "$(median "${CB_[@]}")")" \
      "$([ "$direct" = 1 ] && echo "(info)" || echo "<= 1.2")"
done

# ---- naive single stream and round_robin (O_DIRECT), when measured
if [ -n "${R[scan_O_DIRECT]:-}" ] && [ "$DROP_OK" = 1 ] && prime 1; then
  t0=$(date +%s.%N)
  for o in "${OBJ_LIST[@]}"; do dd if="$o" of=/dev/null bs=128k iflag=direct status=none; done
  t1=$(date +%s.%N)
  naive=$(python3 -c "print($((FILES * FILE_MB << 20))/1e6/($t1-$t0))")
  row "mount-path sequential O_DIRECT vs naive single stream" "$(f0 "${R[scan_O_DIRECT]}")" "$(f0 "$naive")" "$(ratio "${R[scan_O_DIRECT]}" "$naive")" "> 1"
  our_cfg=$(sed 's/^ours: [^=]*= \([^;]*\);.*/\1/' "$OUT/a_best_O_DIRECT.config")
  rounds "O_DIRECT least_loaded vs round_robin" mbps seq_ours "$our_cfg" rr_ours "$our_cfg" 1
  row "mount-path O_DIRECT least_loaded vs round_robin" "$(cell "${RA[@]}")" "$(cell "${RB[@]}")" "$(ratio "$(median "${RA[@]}")" "$(median "${RB[@]}")")" "~1 (healthy)"
fi

# ---- 4 KiB random, O_DIRECT, at equal depth and best vs best
rand_fio() {  # rand_fio DIRECT CFG RUNTIME RAMP JSON: CFG "engine,numjobs,iodepth"
  local engine nj qd
  IFS=, read -r engine nj qd <<<"$2"
  prime 1 || return 1
  fio_run "$5" --name=rand --filename="$OBJS" --rw=randread --bs=4k --direct=1 \
    --ioengine="$engine" --iodepth="$qd" --numjobs="$nj" --randrepeat=0 --norandommap \
    --time_based=1 --runtime="$3" --ramp_time="$4" --readonly
}
rand_ours() {  # rand_ours DIRECT CFG RUNTIME RAMP JSON: CFG "threads,in_flight,io_uring"
  local t d ur
  IFS=, read -r t d ur <<<"$2"
  prime 1 || return 1
  local cmd=("${BENCH[@]}" --workload=lookup --data_path=mount --threads="$t" --batch=$((64 * d))
             --max_in_flight="$d" --io_uring_depth=$((d > 32 ? d : 32)) --lookup_buffers=$((4 * d))
             --io_uring="$ur" --o_direct=true --hedging=false
             --duration_s="$3" --warmup_s="$4" --json)
  echo "${cmd[*]}" >>"$OUT/commands.log"
  "${cmd[@]}" >"$5" 2>"$5.err"
}
if [ "$DROP_OK" = 1 ] && prime 1; then
  best_o=""; best_f=""; best_ov=0; best_fv=0
  for depth in $RAND_DEPTHS; do
    fc=(); oc=()
    for s in $RAND_SPLITS; do
      [ $((depth % s)) = 0 ] || continue
      for e in $RAND_ENGINES; do fc+=("$e,$s,$((depth / s))"); done
      for e in $OUR_ENGINES; do oc+=("$s,$((depth / s)),$e"); done
    done
    # Shapes within a few % of each other: RAND_SWEEP_PASSES (default 3)
    # passes each, the two sides' points interleaved in time, so that one
    # noisy 2 s point or a slow spell does not pick the shape.
    read -r our_cfg fio_cfg <<<"$(sweep_pair iops "$RAND_SWEEP_PASSES" \
      rand_ours "$OUT/a_sweep_ours_rand$depth.tsv" "${oc[*]}" \
      rand_fio "$OUT/a_sweep_fio_rand$depth.tsv" "${fc[*]}" 1)"
    rounds "4 KiB random at $depth in flight" iops rand_ours "$our_cfg" rand_fio "$fio_cfg" 1
    mo=$(median "${RA[@]}"); mf=$(median "${RB[@]}")
    row "4 KiB random O_DIRECT IOPS, $depth in flight on both sides (ours threads,in_flight,io_uring $our_cfg; fio engine,numjobs,iodepth $fio_cfg)" \
        "$(cell "${RA[@]}")" "$(cell "${RB[@]}")" "$(ratio "$mo" "$mf")" ">= 0.9$(rr)"
    # CPU per read (us) = CPU s/GB x 4096 B.
    us_o=(); us_f=()
    for c in "${CA_[@]}"; do us_o+=("$(isnum "$c" && python3 -c "print($c * 4.096)" || echo failed)"); done
    for c in "${CB_[@]}"; do us_f+=("$(isnum "$c" && python3 -c "print($c * 4.096)" || echo failed)"); done
    row "4 KiB random, $depth in flight: CPU us per read vs fio's (same runs)" \
        "$(cell2 "${us_o[@]}")" "$(cell2 "${us_f[@]}")" "$(ratio "$(median "${us_o[@]}")" "$(median "${us_f[@]}")")" "(info)"
    if isnum "$mo" && python3 -c "import sys; sys.exit(0 if $mo > $best_ov else 1)"; then best_ov=$mo; best_o="$depth: $our_cfg"; fi
    if isnum "$mf" && python3 -c "import sys; sys.exit(0 if $mf > $best_fv else 1)"; then best_fv=$mf; best_f="$depth: $fio_cfg"; fi
  done
  R[rand]=$best_ov
  row "4 KiB random O_DIRECT IOPS, best vs best (ours $best_o; fio $best_f)" "$(f0 "$best_ov")" "$(f0 "$best_fv")" "$(ratio "$best_ov" "$best_fv")" ">= 0.95"
else
  echo "part A: 4 KiB random O_DIRECT not measured: drop_caches failed" | tee -a "$OUT/report.md"
fi

# ---- agent path over loopback vs a sendfile stream of the same objects
agent_ours() {  # agent_ours DIRECT CFG RUNTIME RAMP JSON: CFG threads
  prime 0
  local cmd=("${BENCH[@]}" --workload=scan --data_path=agent --threads="$2" --io_size=16M
             --prefetch=false --duration_s="$3" --warmup_s="$4" --json)
  echo "${cmd[*]}" >>"$OUT/commands.log"
  "${cmd[@]}" >"$5" 2>"$5.err"
}
SF_PORT=$((20000 + RANDOM % 20000))
# Two plain servers of the same objects: sendfile(2), and pread + write.
setsid "$BIN/sendfile_stream" serve 127.0.0.1 "$SF_PORT" "${OBJ_LIST[@]}" >"$WORK/sendfile.log" 2>&1 </dev/null &
echo $! >"$WORK/iperf-sendfile.pid"  # stopped with the iperf3 servers
setsid "$BIN/sendfile_stream" serve-pread 127.0.0.1 "$((SF_PORT + 2))" "${OBJ_LIST[@]}" >"$WORK/pread.log" 2>&1 </dev/null &
echo $! >"$WORK/iperf-pread.pid"
agent_sendfile() {  # agent_sendfile DIRECT STREAMS,MODE RUNTIME RAMP JSON
  local streams mode port=$SF_PORT
  IFS=, read -r streams mode <<<"$2"
  [ "$mode" = pread ] && port=$((SF_PORT + 2))
  prime 0
  echo "sendfile_stream fetch 127.0.0.1 $port $streams $4 $3 # $mode" >>"$OUT/commands.log"
  "$BIN/sendfile_stream" fetch 127.0.0.1 "$port" "$streams" "$4" "$3" >"$5" 2>"$5.err"
}
for p in "$SF_PORT" "$((SF_PORT + 2))"; do
  for _ in $(seq 1 1200); do (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && break; sleep 0.05; done
done
sf_cfgs=()
for s in $AGENT_STREAMS; do sf_cfgs+=("$s,sendfile" "$s,pread"); done
sf_cfg=$(sweep agent_sendfile mbps "$OUT/a_sweep_sendfile.tsv" "${sf_cfgs[@]}" -- 0)
# shellcheck disable=SC2086
ag_cfg=$(sweep agent_ours mbps "$OUT/a_sweep_ours_agent.tsv" $AGENT_STREAMS -- 0)
rounds "agent path, loopback" mbps agent_ours "$ag_cfg" agent_sendfile "$sf_cfg" 0
row "agent path over loopback, cached objects (MB/s), $ag_cfg threads vs plain TCP stream (streams,mode $sf_cfg)" \
    "$(cell "${RA[@]}")" "$(cell "${RB[@]}")" "$(ratio "$(median "${RA[@]}")" "$(median "${RB[@]}")")" ">= 0.8$(rr)"
row "agent path over loopback: client CPU s/GB vs the plain stream's receiver" \
    "$(cell2 "${CA_[@]}")" "$(cell2 "${CB_[@]}")" "$(ratio "$(median "${CA_[@]}")" "$(median "${CB_[@]}")")" "(info)"
# iperf3 with 1 MiB writes (its default 128 KiB understates loopback), as
# many streams, for scale.
IP_PORT=$((SF_PORT + 1))
iperf3 -s -B 127.0.0.1 -p "$IP_PORT" -D -I "$WORK/iperf-a.pid" --logfile "$WORK/iperf-a.log"
# -D returns before the server listens: wait for the socket (up to 60 s).
for _ in $(seq 1 1200); do ss -ltnH "sport = :$IP_PORT" | grep -q . && break; sleep 0.05; done
sf_streams=${sf_cfg%%,*}
echo "iperf3 -c 127.0.0.1 -l 1M -P $sf_streams -O $RAMP -t $RUNTIME -J" >>"$OUT/commands.log"
if iperf3 -c 127.0.0.1 -p "$IP_PORT" -l 1M -P "$sf_streams" -O "$RAMP" -t "$RUNTIME" -J >"$WORK/ip-a.json" 2>&1; then
  ipa=$(python3 -c "import json; print(json.load(open('$WORK/ip-a.json'))['end']['sum_received']['bits_per_second']/8e6)")
else
  ipa=failed; { echo "iperf3 loopback failed:"; cat "$WORK/ip-a.json"; } >>"$OUT/fio_errors.log"
fi
row "plain TCP stream ($sf_cfg) vs iperf3 -l 1M -P $sf_streams, loopback (scale)" "$(f0 "$(median "${RB[@]}")")" "$(f0 "$ipa")" "$(ratio "$(median "${RB[@]}")" "$ipa")" "(info)"
if [ -s "$OUT/retried.log" ]; then
  echo "part A: $(wc -l <"$OUT/retried.log") run(s) failed once and were run again (OUT/retried.log): $(cut -d' ' -f1 "$OUT/retried.log" | sort | uniq -c | awk '{printf "%s%s x%s", NR > 1 ? ", " : "", $2, $1}')" >>"$OUT/report.md"
fi
for c in "$OUT"/a_best_*.config; do
  [ -e "$c" ] && echo "part A best configurations, $(basename "$c" .config | sed 's/^a_best_//'): $(cat "$c")" >>"$OUT/report.md"
done
kill "$(cat "$WORK/iperf-sendfile.pid")" "$(cat "$WORK/iperf-pread.pid")" "$(cat "$WORK/iperf-a.pid" 2>/dev/null)" 2>/dev/null || true
rm -f "$WORK/iperf-sendfile.pid" "$WORK/iperf-pread.pid" "$WORK/iperf-a.pid"
deploy/local/cluster.sh down --dir="$CA" >/dev/null
