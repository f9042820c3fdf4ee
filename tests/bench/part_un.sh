# Part U over capped links (sourced by tests/bench/part_u.sh; uses
# run.sh's helpers and settings): the library's userspace NFS data path
# (data_path=nfs, issue 37) on a real cluster whose nodes are separate
# network namespaces, each behind a tc tbf cap, against the links'
# capacity and plain libnfs readers of the same objects over the same
# links.
#
# deploy/local/cluster.sh up --nfs --hosts=netns: UN_NODES nodes, each with
# its agent and its own nfs-ganesha (NFSv4, read-only VFS export) in its
# namespace, its egress capped at UN_RATE; the client (etcd, every reader
# below) in a namespace of its own. UN_FILES files of UN_FILE_MB MiB are
# put with --replicas=1 --stripe-unit=1M, so that each file is striped over
# every node and each byte lives on one node only; objects warm in the page
# cache. Every side reads for UN_S seconds, except nfs-cat (every object
# once).
#   capacity: iperf3 -R, one stream per node through its cap (1 MiB
#     writes, the first second omitted), summed; and the tbf rate itself.
#   sequential: rangefs-bench --data_path=nfs --workload=scan (UN_THREADS
#     threads, default UN_FILES, 16 MiB calls, no prefetch; and again with
#     the Reader's default prefetch) vs nfs_async_read, one process per node on its
#     node's objects in parallel (16 reads of 1 MiB in flight each), vs
#     nfs-cat, one loop per node in parallel; totals over the slowest.
#   4 KiB random, equal depth: rangefs-bench --workload=lookup with 32
#     reads held in flight (--max_in_flight=32 of ReadVs of 1024) vs
#     nfs_async_read --random, one process per node, 32 / UN_NODES held in
#     flight each (32 in all); with each side's CPU beyond the client: the
#     ganesha servers' a read and the machine's busy share (/proc).
#   UN_PIN=1 (environment): every process of the nodes' namespaces (agent,
#     ganesha, iperf3 server) on CPU 1 and every reader on CPU 0, the same
#     split for every side: a client with a CPU of its own, as on a host
#     apart from the servers' (on a shared host the client's CPU a read is
#     taken from the servers'). A diagnosis; the rows without it are the
#     result.
#   UN_PERF=1 (environment): the 4 KiB random sides also run under
#     `perf stat` (task-clock, context switches, syscalls; every thread of
#     every process of a side) and the report gives each side's CPU,
#     context switches and syscalls a read (reads: IOPS x UN_S), medians
#     over rounds: less noisy than IOPS on a shared host.
# Needs root, network namespaces, /usr/bin/ganesha.nfsd and iperf3.
if ! ip netns add rfs-bench-probe-u 2>/dev/null; then
  echo "bench: cannot create network namespaces: part U over capped links skipped" | tee -a "$OUT/report.md"
  return 0
fi
ip netns del rfs-bench-probe-u
UN_NODES=${UN_NODES:-4}
if [ "$QUICK" = 1 ]; then
  UN_RATE=${UN_RATE:-400mbit}; UN_FILES=${UN_FILES:-2}; UN_FILE_MB=${UN_FILE_MB:-32}; UN_S=${UN_S:-2}
else
  UN_RATE=${UN_RATE:-800mbit}; UN_FILES=${UN_FILES:-4}; UN_FILE_MB=${UN_FILE_MB:-256}; UN_S=${UN_S:-8}
fi
UN_THREADS=${UN_THREADS:-$UN_FILES}
UN_DEPTH=32
echo "bench: part U over capped links ($UN_NODES nodes in netns, egress capped at $UN_RATE each, $UN_FILES x $UN_FILE_MB MiB)"
CU="$WORK/clusterU"; CLUSTERS+=("$CU")
eval "$(deploy/local/cluster.sh up --dir="$CU" --nodes="$UN_NODES" --hosts=netns --insecure --nfs \
  --rate="$UN_RATE" --bin="$BIN" --cluster=benchu | tail -n 1)"
# shellcheck disable=SC1090,SC1091
source "$CU/cluster.env"
UN_C="rfs${TAG}-c"
UN_PIN=${UN_PIN:-0}
if [ "$UN_PIN" = 1 ] && [ "$(nproc)" -lt 2 ]; then
  echo "bench: UN_PIN=1 needs 2 CPUs; running unpinned" >&2
  UN_PIN=0
fi
un_in() {
  if [ "$UN_PIN" = 1 ]; then
    ip netns exec "$UN_C" taskset -c 0 "$@"
  else
    ip netns exec "$UN_C" "$@"
  fi
}
un_ip() { echo "10.250.${TAG}.$((10 + $1))"; }
mkdir -p "$WORK/data/u"
for f in $(seq 1 "$UN_FILES"); do
  gen "$WORK/data/u/g$f" "u$f" $((UN_FILE_MB << 20))
  un_in "$BIN/rangefs-admin" --etcd="$RANGEFS_ETCD" --cluster=benchu --no-progress \
    file put "$WORK/data/u/g$f" "/u/g$f" --replicas=1 --stripe-unit=1M >/dev/null
done
rm -rf "$WORK/data/u"
# Each node's objects (paths beneath its export) and their bytes.
declare -A UN_OBJS
UN_BYTES=0
for i in $(seq 1 "$UN_NODES"); do
  mapfile -t objs < <(find "$CU/exports/n$i" -type f -path '*/f/*' ! -name '.*' | sort)
  [ "${#objs[@]}" -gt 0 ] || { echo "bench: part U: node n$i holds no object" >&2; exit 1; }
  cat "${objs[@]}" >/dev/null  # warm
  UN_BYTES=$((UN_BYTES + $(du -cb "${objs[@]}" | tail -n 1 | cut -f1)))
  UN_OBJS[$i]="${objs[*]#"$CU/exports/n$i"}"
done
[ "$UN_BYTES" = $((UN_FILES * UN_FILE_MB << 20)) ] || {
  echo "bench: part U: the nodes hold $UN_BYTES bytes of objects, not $((UN_FILES * UN_FILE_MB << 20))" >&2; exit 1; }
for i in $(seq 1 "$UN_NODES"); do
  ip netns exec "rfs${TAG}-$i" iperf3 -s -B "$(un_ip "$i")" -p 5301 -D --logfile "$WORK/iperf-u$i.log" -I "$WORK/iperf-u$i.pid"
done
for i in $(seq 1 "$UN_NODES"); do  # -D returns before the server listens
  for _ in $(seq 1 1200); do
    ip netns exec "rfs${TAG}-$i" ss -ltnH "sport = :5301" | grep -q . && break
    sleep 0.05
  done
done
if [ "$UN_PIN" = 1 ]; then  # threads started later inherit the mask
  for i in $(seq 1 "$UN_NODES"); do
    for p in $(ip netns pids "rfs${TAG}-$i"); do taskset -a -p -c 1 "$p" >/dev/null; done
  done
fi
echo "# part U over capped links: commands" >"$OUT/un_commands.log"
# Runs CMD for every node in parallel (in the client's namespace), with
# an argument "{URL}" replaced by the node's libnfs URL and the node's
# objects appended; prints their outputs, node after node ("failed" for a
# failed one).
un_each() {
  local i pids=() a args u
  for i in $(seq 1 "$UN_NODES"); do
    u=$(cat "$CU/run/nfs-n$i.libnfs")
    args=()
    for a in "$@"; do
      case $a in
        "{URL}") args+=("$u") ;;
        *"{NODE}"*) args+=("${a//\{NODE\}/$i}") ;;
        *) args+=("$a") ;;
      esac
    done
    echo "${args[*]}" >>"$OUT/un_commands.log"
    # shellcheck disable=SC2086
    { un_in "${args[@]}" ${UN_OBJS[$i]} || echo failed; } >"$WORK/un-out$i" 2>>"$WORK/un-err.log" &
    pids+=($!)
  done
  wait "${pids[@]}"
  for i in $(seq 1 "$UN_NODES"); do
    echo "n$i $(cat "$WORK/un-out$i")" >>"$OUT/un_each.log"
    cat "$WORK/un-out$i"
  done
}
un_iperf() {  # MB/s: one stream per node through its cap
  local i pids=() j
  for i in $(seq 1 "$UN_NODES"); do
    un_in iperf3 -c "$(un_ip "$i")" -p 5301 -R -l 1M -O 1 -t "$UN_S" -J >"$WORK/un-ip$i.json" 2>>"$WORK/un-err.log" &
    pids+=($!)
  done
  wait "${pids[@]}" || { echo failed; return; }
  j=$(for i in $(seq 1 "$UN_NODES"); do echo "$WORK/un-ip$i.json"; done)
  # shellcheck disable=SC2086
  python3 -c "
import json, sys
print(round(sum(json.load(open(f))['end']['sum_received']['bits_per_second'] / 8e6 for f in sys.argv[1:])))" $j ||
    echo failed
}
# With UN_PERF=1: `perf stat` writing $WORK/perf-SIDE-rROUND[-NODE].stat
# (un_perf SIDE [NODE]: the words to put before a command).
UN_PERF=${UN_PERF:-0}
un_perf() {
  [ "$UN_PERF" = 1 ] || return 0
  echo perf stat -x, -e task-clock,context-switches,raw_syscalls:sys_enter \
    -o "$WORK/perf-$1-r$r${2:+-$2}.stat" --
}
un_bench() {  # rangefs-bench in the client's namespace; prints FIELD of its JSON
  local field=$1; shift
  local cmd=()
  # shellcheck disable=SC2207
  [ -z "${UN_SIDE:-}" ] || cmd=($(un_perf "$UN_SIDE"))
  cmd+=("${BIN_BENCH:-$BIN/rangefs-bench}" --etcd="$RANGEFS_ETCD" --cluster=benchu --dir=/u --data_path=nfs
        --duration_s="$UN_S" --json "$@")
  echo "${cmd[*]}" >>"$OUT/un_commands.log"
  un_in "${cmd[@]}" >"$WORK/un-bench.json" 2>>"$WORK/un-err.log" &&
    python3 -c "import json; print(json.load(open('$WORK/un-bench.json'))['$field'])" 2>/dev/null || echo failed
}
# 16 MiB calls, once without the Reader's prefetch (as in part B) and once
# with the Reader's defaults (what a program that sets nothing gets): the
# scan uses nothing between calls, so the default reads ahead only on a
# file's first call (client_lib/internal/prefetch_policy.h); before that
# policy the default's extra copy cost the scan a third of its rate
# (250-280 MB/s against 367-371, shared machine).
# --single_flight=false: the threads read the files in step, and single
# flight would fetch a byte once for several threads.
un_lib() {  # MB/s of data_path=nfs scanning every file; extra flags: "$@"
  local g; g=$(un_bench gbps --workload=scan --threads="$UN_THREADS" --io_size=16M --single_flight=false "$@")
  if isnum "$g"; then python3 -c "print(round($g * 1000))"; else echo failed; fi
}
un_lib_rand() {  # IOPS of data_path=nfs, UN_DEPTH reads held in flight; extra flags: "$@"
  local v; v=$(un_bench iops --workload=lookup --threads=1 --lookup_size=4096 --batch=1024 \
                 --max_in_flight="$UN_DEPTH" --lookup_buffers="$UN_DEPTH" "$@")
  if isnum "$v"; then printf '%.0f\n' "$v"; else echo failed; fi
}
# Sum of bytes (or reads) over the slowest process's seconds, from
# nfs_async_read's "bytes=N seconds=S reads=R" lines.
un_total() {  # un_total bytes|reads
  python3 -c "
import re, sys
v = sys.stdin.read().split('\n')
m = [re.search(r'bytes=(\d+) seconds=([\d.]+) reads=(\d+)', l) for l in v if l.strip()]
if len(m) != $UN_NODES or not all(m): print('failed'); sys.exit()
s = max(float(x.group(2)) for x in m)
n = sum(int(x.group(1 if '$1' == 'bytes' else 3)) for x in m)
print(round(n / s / (1e6 if '$1' == 'bytes' else 1)))"
}
un_async() {
  un_each "$BIN/nfs_async_read" "{URL}" --depth=16 --io=1048576 --duration="$UN_S" | un_total bytes
}
un_async_rand() {
  # shellcheck disable=SC2046
  un_each $(un_perf arand "{NODE}") "$BIN/nfs_async_read" "{URL}" --depth=$((UN_DEPTH / UN_NODES)) \
    --random="$UN_S" | un_total reads
}
un_cat() {  # every object once with nfs-cat, one loop per node in parallel
  local t0 t1 i pids=() o u
  t0=$(date +%s.%N)
  for i in $(seq 1 "$UN_NODES"); do
    u=$(cat "$CU/run/nfs-n$i.libnfs")
    (
      for o in ${UN_OBJS[$i]}; do un_in nfs-cat "${u%%\?*}$o?${u#*\?}" >/dev/null || exit 1; done
    ) 2>>"$WORK/un-err.log" &
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i" || { echo failed; return; }; done
  t1=$(date +%s.%N)
  python3 -c "print(round($UN_BYTES / ($t1 - $t0) / 1e6))"
}

UN_CAP_TBF=$(python3 -c "r = '$UN_RATE'; print(round($UN_NODES * float(r[:-4]) * {'m': 1e6, 'g': 1e9, 'k': 1e3}[r[-4]] / 8e6))")
# UN_SIDES (environment): the sides to measure, in odd rounds' order (even
# rounds reverse it). UN_BENCH_A=PATH (environment): also side "lrandA",
# the 4 KiB random row with that rangefs-bench (an A/B of two builds in the
# same rounds, alternating); UN_BENCH_A_FLAGS (environment): flags added to
# that side's command (later flags win: "--batch=8192"); side "libA" (named
# in UN_SIDES): the sequential row (no prefetch) with that rangefs-bench. un_each.log in the
# output folder: each baseline process's line, by node.
# The 4 KiB random sides' CPU outside the client: the ganesha servers'
# (user + system of their processes) and the machine's busy share
# (/proc/stat), over each side's whole run (start and exit included, as
# for every side), per read (reads: IOPS x UN_S).
un_ticks() {  # "GANESHA_TICKS BUSY_TICKS ALL_TICKS"
  local g=0 p
  # Every process naming a node's ganesha config (the servers and the
  # wrappers that started them, which wait).
  for p in $(pgrep -f -- "$CU/nfs/n[0-9]+[.]conf"); do
    g=$((g + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0)))
  done
  awk -v g="$g" '/^cpu / {print g, $2 + $3 + $4 + $7 + $8 + $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9}' /proc/stat
}
# un_cpu_side SIDE T0 IOPS: appends the side's ganesha µs a read and busy
# share since T0 (un_ticks) to UNV[SIDE_srv] and UNV[SIDE_busy].
un_cpu_side() {
  local g0 b0 a0 g1 b1 a1
  read -r g0 b0 a0 <<<"$2"
  read -r g1 b1 a1 <<<"$(un_ticks)"
  UNV[${1}_srv]+=" $(python3 -c "
import os, sys
try: print(round(($g1 - $g0) / os.sysconf('SC_CLK_TCK') * 1e6 / (float(sys.argv[1]) * $UN_S), 2))
except (ValueError, ZeroDivisionError): print('failed')" "$3")"
  UNV[${1}_busy]+=" $(python3 -c "print(round(($b1 - $b0) / max(1, $a1 - $a0), 3))")"
}
UN_SIDES=${UN_SIDES:-iperf lib libd async cat lrand arand}
[ -n "${UN_BENCH_A:-}" ] && UN_SIDES+=" lrandA"
declare -A UNV
for s in iperf lib libA libd async cat lrand arand lrandA; do UNV[$s]=""; UNV[${s}_srv]=""; UNV[${s}_busy]=""; done  # (sides left out: empty)
for r in $(seq 1 "$U_REPEAT"); do
  order=$UN_SIDES
  if [ $((r % 2)) = 0 ]; then order=$(echo "$UN_SIDES" | tr ' ' '\n' | tac | tr '\n' ' '); fi
  for s in $order; do
    t0=$(un_ticks)
    case $s in
      lrandA) UNV[lrandA]+=" $(UN_SIDE=lrandA BIN_BENCH="$UN_BENCH_A" un_lib_rand ${UN_BENCH_A_FLAGS:-})" ;;
      iperf) UNV[iperf]+=" $(un_iperf)" ;;
      lib) UNV[lib]+=" $(un_lib --prefetch=false)" ;;
      libA) UNV[libA]+=" $(BIN_BENCH="$UN_BENCH_A" un_lib --prefetch=false)" ;;
      libd) UNV[libd]+=" $(un_lib)" ;;  # the Reader's defaults
      async) UNV[async]+=" $(un_async)" ;;
      cat) UNV[cat]+=" $(un_cat)" ;;
      lrand) UNV[lrand]+=" $(UN_SIDE=lrand un_lib_rand)" ;;
      arand) UNV[arand]+=" $(un_async_rand)" ;;
    esac
    case $s in lrand|lrandA|arand) un_cpu_side "$s" "$t0" "${UNV[$s]##* }" ;; esac
  done
  echo "part U capped round $r: iperf3 ${UNV[iperf]##* } lib ${UNV[lib]##* }${UNV[libA]:+ libA ${UNV[libA]##* }} lib-default ${UNV[libd]##* } async ${UNV[async]##* } cat ${UNV[cat]##* } MB/s; rand lib ${UNV[lrand]##* } async ${UNV[arand]##* }${UN_BENCH_A:+ A ${UNV[lrandA]##* }} IOPS; ganesha µs a read lib ${UNV[lrand_srv]##* } async ${UNV[arand_srv]##* }${UN_BENCH_A:+ A ${UNV[lrandA_srv]##* }}; machine busy lib ${UNV[lrand_busy]##* } async ${UNV[arand_busy]##* }" | tee -a "$OUT/u_rounds.md"
done
for i in $(seq 1 "$UN_NODES"); do kill "$(cat "$WORK/iperf-u$i.pid")" 2>/dev/null || true; done
deploy/local/cluster.sh down --dir="$CU" >/dev/null 2>&1 || true
# shellcheck disable=SC2086
{
  echo
  echo "## Part U over capped links: data_path=nfs, $UN_NODES nodes (netns, egress tbf $UN_RATE each), $UN_FILES x $UN_FILE_MB MiB striped 1 MiB over all, $U_REPEAT rounds, medians; min-max$([ "$UN_PIN" = 1 ] && echo "; UN_PIN=1: the nodes' processes on CPU 1, every reader on CPU 0")"
  echo
  echo "| side | median | min-max |"
  echo "|---|---|---|"
  echo "| links: iperf3 -R, 1 stream per node (MB/s) | $(f0 "$(median ${UNV[iperf]})") | $(mm ${UNV[iperf]}) |"
  echo "| links: tbf rate x $UN_NODES (MB/s, L2 bytes) | $UN_CAP_TBF | - |"
  echo "| seq data_path=nfs, rangefs-bench scan, $UN_THREADS threads x 16 MiB, no prefetch (MB/s) | $(f0 "$(median ${UNV[lib]})") | $(mm ${UNV[lib]}) |"
  echo "| seq data_path=nfs, the same scan with the Reader's default prefetch (MB/s) | $(f0 "$(median ${UNV[libd]})") | $(mm ${UNV[libd]}) |"
  echo "| seq nfs_async_read, 1 per node, 16 x 1 MiB in flight each (MB/s) | $(f0 "$(median ${UNV[async]})") | $(mm ${UNV[async]}) |"
  echo "| seq nfs-cat, 1 loop per node (MB/s) | $(f0 "$(median ${UNV[cat]})") | $(mm ${UNV[cat]}) |"
  echo "| 4 KiB random data_path=nfs, $UN_DEPTH held in flight (IOPS) | $(f0 "$(median ${UNV[lrand]})") | $(mm ${UNV[lrand]}) |"
  echo "| 4 KiB random nfs_async_read, $((UN_DEPTH / UN_NODES)) held per node, $UN_DEPTH in all (IOPS) | $(f0 "$(median ${UNV[arand]})") | $(mm ${UNV[arand]}) |"
  for side in lrand lrandA arand; do
    [ -n "${UNV[$side]}" ] || continue
    echo "| 4 KiB random, $side: the ganesha servers' CPU a read (µs); the machine's busy share | $(median ${UNV[${side}_srv]}); $(median ${UNV[${side}_busy]}) | $(MM_DIGITS=1 mm ${UNV[${side}_srv]}); $(MM_DIGITS=3 mm ${UNV[${side}_busy]}) |"
  done
  if [ -n "${UNV[libA]}" ]; then
    echo "| seq data_path=nfs, no prefetch, with UN_BENCH_A=$UN_BENCH_A (MB/s) | $(f0 "$(median ${UNV[libA]})") | $(mm ${UNV[libA]}) |"
  fi
  if [ -n "${UN_BENCH_A:-}" ]; then
    echo "| 4 KiB random data_path=nfs with UN_BENCH_A=$UN_BENCH_A (IOPS) | $(f0 "$(median ${UNV[lrandA]})") | $(mm ${UNV[lrandA]}) |"
  fi
  echo
  best=$(python3 -c "
import sys
v = [float(x) for x in sys.argv[1:] if x not in ('failed', '')]
print(max(v) if v else 'failed')" "$(median ${UNV[async]})" "$(median ${UNV[cat]})")
  echo "capped seq data_path=nfs / iperf3 capacity: $(ratio "$(median ${UNV[lib]})" "$(median ${UNV[iperf]})") (target >= 0.95); / best of nfs_async_read and nfs-cat: $(ratio "$(median ${UNV[lib]})" "$best") (target >= 0.9); default prefetch / no prefetch: $(ratio "$(median ${UNV[libd]})" "$(median ${UNV[lib]})") (target >= 1.0); 4 KiB random lib / async at equal depth: $(ratio "$(median ${UNV[lrand]})" "$(median ${UNV[arand]})")${UN_BENCH_A:+; UN_BENCH_A / async: $(ratio "$(median ${UNV[lrandA]})" "$(median ${UNV[arand]})")}"
  if [ "$UN_PERF" = 1 ]; then
    echo
    echo "4 KiB random, per read (perf stat of every process of a side, reads = IOPS x $UN_S s; medians over rounds, min-max):"
    for side in lrand lrandA arand; do
      [ -n "${UNV[$side]}" ] || continue
      python3 - "$WORK" "$side" "$UN_S" ${UNV[$side]} <<'PY'
import glob, re, statistics, sys
work, side, secs, iops = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4:]
rows = {'task-clock': [], 'context-switches': [], 'raw_syscalls:sys_enter': []}
for r, v in enumerate(iops, 1):
    files = glob.glob(f'{work}/perf-{side}-r{r}.stat') + glob.glob(f'{work}/perf-{side}-r{r}-*.stat')
    if v == 'failed' or not files:
        continue
    tot = dict.fromkeys(rows, 0.0)
    for f in files:
        for line in open(f):
            p = line.split(',')
            if len(p) > 2 and p[2] in tot and p[0].replace('.', '', 1).isdigit():
                tot[p[2]] += float(p[0])
    reads = float(v) * secs
    for k in rows:
        rows[k].append(tot[k] * (1e3 if k == 'task-clock' else 1) / reads)
def cell(x):
    return 'n/a' if not x else '%.2f (%.2f-%.2f)' % (statistics.median(x), min(x), max(x))
print(f"- {side}: CPU {cell(rows['task-clock'])} us, context switches {cell(rows['context-switches'])}, syscalls {cell(rows['raw_syscalls:sys_enter'])}")
PY
    done
  fi
} | tee -a "$OUT/report.md"
