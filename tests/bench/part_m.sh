# Part M of tests/bench/run.sh (sourced; uses its helpers and settings):
# rangefs-mount, the FUSE file system, against the client library it
# wraps, on the same files in the same run.
#
# A local cluster (4 nodes, the export directories are the clients'
# mounts), FILES files of FILE_MB MiB (1 replica, 4 MiB stripes, as part A).
#   sequential: M_THREADS fio jobs (psync, 1 MiB reads, each job its own
#     files) reading every file once through the mount, vs rangefs-bench
#     scan --once with M_THREADS threads on the same files. Objects warm in
#     the page cache on both sides; the mount's own page cache is dropped.
#     Two mounts of the same namespace take part in each round: the default
#     (direct_io=auto since 2026-11-28: these files of FILE_MB MiB >= 8 MiB
#     are opened FOPEN_DIRECT_IO; before, the kernel's page cache of the
#     mount with its readahead) and -o direct_io (every file direct); the
#     three sides' order rotates between rounds. mount/direct_io_mode.h.
#   4 KiB random: fio io_uring --direct=1 through the mount, 4 jobs x qd32,
#     vs rangefs-bench lookup, 4 threads x batch 32 (128 reads in flight on
#     both sides), the same time each, the objects read with O_DIRECT on
#     both sides (rangefs-mount -o o_direct, rangefs-bench --o_direct).
#   scale: fio on the raw export objects, same jobs and sizes; and the same
#     fio runs on null_fuse (tests/bench/null_fuse.c), a FUSE file system
#     that answers every read with zeros at once: the kernel's FUSE round
#     trip alone, the ceiling of any FUSE client on this machine.
# Each comparison runs M_REPEAT rounds (default 5, quick 1), alternating
# which side goes first, the scale runs after each pair; the table shows
# medians, OUT/m_rounds.md every round and the min-max. The daemon's CPU per GB comes from /proc/PID/stat.
echo "bench: part M (rangefs-mount vs the client library, same files)"
M_REPEAT=${M_REPEAT:-$REPEAT}
M_THREADS=${M_THREADS:-$((FILES < 4 ? FILES : 4))}
CM="$WORK/clusterM"; CLUSTERS+=("$CM")
eval "$(deploy/local/cluster.sh up --dir="$CM" --nodes=4 --bin="$BIN" --cluster=benchm | tail -n 1)"
ADMIN=("$BIN/rangefs-admin" --etcd="$RANGEFS_ETCD" --cluster=benchm --no-progress)
mkdir -p "$WORK/data/m"
for i in $(seq 1 "$FILES"); do
  gen "$WORK/data/m/f$i" "m$i" $((FILE_MB << 20))
  "${ADMIN[@]}" file put "$WORK/data/m/f$i" "/m/f$i" --replicas=1 --stripe-unit=4M >/dev/null
  rm -f "$WORK/data/m/f$i"
done
M_OBJS=$(find "$CM/exports" -type f -path '*/f/*' ! -name '.*' | sort | tr '\n' ':' | sed 's/:$//')
M_TOTAL=$((FILES * FILE_MB << 20))
M_BENCH=("$BIN/rangefs-bench" --etcd="$RANGEFS_ETCD" --cluster=benchm --mount_root="$MOUNT_ROOT" --dir=/m --data_path=mount
         --single_flight=false)  # every counted byte fetched, as fio's
MNT="$WORK/mnt"
mkdir -p "$MNT"
MNTD="$WORK/mntd"  # the -o direct_io mount
mkdir -p "$MNTD"
m_mount_at() {  # m_mount_at DIR OPTS: (re)mounts rangefs-mount at DIR
  local dir=$1
  shift
  fusermount3 -u -z "$dir" 2>/dev/null || true
  "$BIN/rangefs-mount" --etcd="$RANGEFS_ETCD" --cluster=benchm --data_path=mount \
    --mount_root="$MOUNT_ROOT" --status_dir="$WORK" --log_file="$dir.log" "$@" "$dir"
}
m_mount() {  # m_mount OPTS: (re)mounts rangefs-mount at $MNT
  m_mount_at "$MNT" "$@"
  M_PID=$(grep '^pid = ' "$WORK"/*mnt.status | awk '{print $3}')
}
NULLMNT="$WORK/nullmnt"
mkdir -p "$NULLMNT"
"$BIN/null_fuse" "$NULLMNT" "$FILES" "$FILE_MB" >"$WORK/null_fuse.log" 2>&1 &
NULL_PID=$!
for _ in $(seq 600); do grep -q " $NULLMNT fuse.null " /proc/mounts && break; sleep 0.1; done
# The same kernel readahead as rangefs-mount sets for itself.
echo 16384 >"/sys/class/bdi/$(mountpoint -d "$NULLMNT")/read_ahead_kb"
m_cleanup() {
  fusermount3 -u -z "$MNT" 2>/dev/null || true
  fusermount3 -u -z "$MNTD" 2>/dev/null || true
  fusermount3 -u -z "$NULLMNT" 2>/dev/null || true
  kill "$NULL_PID" 2>/dev/null || true
}
trap 'm_cleanup; cleanup' EXIT
m_prime() {  # objects warm, every other cache (the mount's pages) cold
  sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true
  cat $(tr ':' ' ' <<<"$M_OBJS") >/dev/null
}
m_ticks() { awk '{print $14 + $15}' "/proc/$M_PID/stat"; }
# M_THREADS jobs, each its own files (job j: files j, j+T, ...). fio's
# options must come before these sections: an option after --name=jN
# belongs to job N alone (before 2026-11-27 every job but the last read
# with fio's default 4 KiB blocks).
m_jobs() {  # m_jobs DIR PREFIX: fio job options over DIR/PREFIX<i>
  local j i files
  for j in $(seq 1 "$M_THREADS"); do
    files=""
    for i in $(seq "$j" "$M_THREADS" "$FILES"); do files+="${files:+:}$1/$2$i"; done
    [ -n "$files" ] && echo "--name=j$j --filename=$files"
  done
}
m_fio_cpu() {  # m_fio_cpu JSON: fio's user+sys seconds
  python3 -c "
import json,sys; d=json.load(open(sys.argv[1]))
print(sum((j['usr_cpu']+j['sys_cpu'])/100*j['job_runtime']/1000 for j in d['jobs']))" "$1"
}
m_seq_mount() {  # m_seq_mount [DIR]: MB/s through the mount at DIR ($MNT)
  m_prime
  # shellcheck disable=SC2046
  fio --output-format=json --rw=read --bs=1M --ioengine=psync --readonly \
    $(m_jobs "${1:-$MNT}/m" f) >"$WORK/m_seq.json" 2>/dev/null || { echo failed; return; }
  python3 -c "
import json; d=json.load(open('$WORK/m_seq.json'))
print(sum(j['read']['io_bytes'] for j in d['jobs'])/1e6/(max(j['job_runtime'] for j in d['jobs'])/1000))"
}
m_seq_null() {  # MB/s of the same readers on null_fuse
  sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true
  # shellcheck disable=SC2046
  fio_bw --rw=read --bs=1M --ioengine=psync --readonly $(m_jobs "$NULLMNT" f) || true
}
m_seq_ours() {  # MB/s
  m_prime
  "${M_BENCH[@]}" --workload=scan --once --threads="$M_THREADS" --io_size=16M --json \
    >"$WORK/m_scan.json" || { echo failed; return; }
  python3 -c "print($(jget "$WORK/m_scan.json" gbps)*1000)"
}
m_seq_raw() {  # the objects split over M_THREADS jobs, read once, cached
  m_prime
  local j=0 o groups=()
  for o in $(tr ':' ' ' <<<"$M_OBJS"); do
    groups[j]+="${groups[j]:+:}$o"; j=$(((j + 1) % M_THREADS))
  done
  # shellcheck disable=SC2046
  fio_bw --rw=read --bs=1M --ioengine=psync --invalidate=0 --readonly \
    $(for j in "${!groups[@]}"; do echo "--name=r$j --filename=${groups[j]}"; done) || true
}
M_FILES=$(for i in $(seq 1 "$FILES"); do echo "$MNT/m/f$i"; done | tr '\n' ':' | sed 's/:$//')
m_rand_mount() {
  fio_iops --name=rand --filename="$M_FILES" \
    --rw=randread --bs=4k --direct=1 --ioengine=io_uring --iodepth=32 --numjobs=4 \
    --group_reporting --readonly --runtime="$DUR" --time_based=1 || true
}
m_rand_null() {
  fio_iops --name=rand --filename="$(for i in $(seq 1 "$FILES"); do echo "$NULLMNT/f$i"; done | tr '\n' ':' | sed 's/:$//')" \
    --rw=randread --bs=4k --direct=1 --ioengine=io_uring --iodepth=32 --numjobs=4 \
    --group_reporting --readonly --runtime="$DUR" --time_based=1 || true
}
m_rand_ours() {
  "${M_BENCH[@]}" --workload=lookup --threads=4 --batch=32 --o_direct=true \
    --duration_s="$DUR" --hedging=false --json >"$WORK/m_lookup.json" || { echo failed; return; }
  jget "$WORK/m_lookup.json" iops
}
m_rand_raw() {
  fio_iops --name=rand --filename="$M_OBJS" --rw=randread --bs=4k --direct=1 \
    --ioengine=io_uring --iodepth=32 --numjobs=4 --group_reporting \
    --runtime="$DUR" --time_based=1 || true
}
m_range() { span "$@"; }  # min-max, or "failed"
{ echo "# part M rounds: rangefs-mount vs rangefs-bench, $M_REPEAT rounds, first side alternating"
  echo; echo "| round | mount | rangefs-bench | ratio | first; scale (same round) |"; echo "|---|---|---|---|---|"; } >"$OUT/m_rounds.md"

# Sequential.
m_mount
m_mount_at "$MNTD" -o direct_io=true
M_DPID=$(grep '^pid = ' "$WORK"/*mntd.status | awk '{print $3}')
seq_m=(); seq_d=(); seq_b=(); seq_r=(); seq_n=()
for r in $(seq 1 "$M_REPEAT"); do
  case $((r % 3)) in
    1) m=$(m_seq_mount); d=$(m_seq_mount "$MNTD"); b=$(m_seq_ours); first=mount ;;
    2) d=$(m_seq_mount "$MNTD"); b=$(m_seq_ours); m=$(m_seq_mount); first=direct_io ;;
    0) b=$(m_seq_ours); m=$(m_seq_mount); d=$(m_seq_mount "$MNTD"); first=bench ;;
  esac
  seq_m+=("$m"); seq_d+=("$d"); seq_b+=("$b"); seq_r+=("$(m_seq_raw)"); seq_n+=("$(m_seq_null)")
  echo "| sequential $r (MB/s) | $(f0 "$m") | $(f0 "$b") | $(ratio "$m" "$b") | $first; -o direct_io $(f0 "$d") ($(ratio "$d" "$b")), raw fio $(f0 "${seq_r[-1]}"), null_fuse $(f0 "${seq_n[-1]}") |" >>"$OUT/m_rounds.md"
done
raw_seq=$(median "${seq_r[@]}")
null_seq=$(median "${seq_n[@]}")
# CPU per GB, measured on one more pair (inside this shell).
m_prime; t0=$(m_ticks)
# shellcheck disable=SC2046
fio --output-format=json --rw=read --bs=1M --ioengine=psync --readonly $(m_jobs "$MNT/m" f) \
  >"$WORK/m_seq.json" 2>/dev/null || true
t1=$(m_ticks)
cpu_mount=$(python3 -c "print((($t1-$t0)/$(getconf CLK_TCK) + $(m_fio_cpu "$WORK/m_seq.json"))/($M_TOTAL/1e9))")
cpu_daemon=$(python3 -c "print((($t1-$t0)/$(getconf CLK_TCK))/($M_TOTAL/1e9))")
m_prime; t0=$(awk '{print $14 + $15}' "/proc/$M_DPID/stat")
# shellcheck disable=SC2046
fio --output-format=json --rw=read --bs=1M --ioengine=psync --readonly $(m_jobs "$MNTD/m" f) \
  >"$WORK/m_seqd.json" 2>/dev/null || true
t1=$(awk '{print $14 + $15}' "/proc/$M_DPID/stat")
cpu_dio=$(python3 -c "print((($t1-$t0)/$(getconf CLK_TCK) + $(m_fio_cpu "$WORK/m_seqd.json"))/($M_TOTAL/1e9))")
fusermount3 -u -z "$MNTD" 2>/dev/null || true
m_prime
"${M_BENCH[@]}" --workload=scan --once --threads="$M_THREADS" --io_size=16M --json >"$WORK/m_scan.json"
cpu_ours=$(jget "$WORK/m_scan.json" cpu_s_per_gb)
sm=$(median "${seq_m[@]}"); sb=$(median "${seq_b[@]}"); sd=$(median "${seq_d[@]}")
mapfile -t m_rat < <(for i in "${!seq_m[@]}"; do ratio "${seq_m[i]}" "${seq_b[i]}"; done)
mapfile -t d_rat < <(for i in "${!seq_d[@]}"; do ratio "${seq_d[i]}" "${seq_b[i]}"; done)
row "mount sequential, $M_THREADS readers (MB/s) vs rangefs-bench scan; ratio: median of the rounds' ratios (range)" "$(f0 "$sm")" "$(f0 "$sb")" "$(f2 "$(median "${m_rat[@]}")")" ">= 0.8 ($(span "${m_rat[@]}"))"
row "mount -o direct_io sequential, $M_THREADS readers (MB/s) vs rangefs-bench scan; ratio: median of the rounds' ratios (range)" "$(f0 "$sd")" "$(f0 "$sb")" "$(f2 "$(median "${d_rat[@]}")")" ">= 0.8 ($(span "${d_rat[@]}"))"
row "mount sequential (MB/s) vs fio on the raw objects (scale)" "$(f0 "$sm")" "$(f0 "$raw_seq")" "$(ratio "$sm" "$raw_seq")" "(info)"
row "mount sequential (MB/s) vs null_fuse (FUSE round trip alone)" "$(f0 "$sm")" "$(f0 "$null_seq")" "$(ratio "$sm" "$null_seq")" "(info)"
row "mount sequential CPU s/GB (daemon + fio) vs rangefs-bench" "$(f2 "$cpu_mount")" "$(f2 "$cpu_ours")" "$(ratio "$cpu_mount" "$cpu_ours")" "(info)"
row "mount -o direct_io sequential CPU s/GB (daemon + fio) vs rangefs-bench" "$(f2 "$cpu_dio")" "$(f2 "$cpu_ours")" "$(ratio "$cpu_dio" "$cpu_ours")" "(info)"

# 4 KiB random, objects read with O_DIRECT on both sides.
m_mount -o o_direct=true,hedging=false
rnd_m=(); rnd_b=(); rnd_r=(); rnd_n=()
for r in $(seq 1 "$M_REPEAT"); do
  if [ $((r % 2)) = 1 ]; then
    m=$(m_rand_mount); b=$(m_rand_ours); first=mount
  else
    b=$(m_rand_ours); m=$(m_rand_mount); first=bench
  fi
  rnd_m+=("$m"); rnd_b+=("$b"); rnd_r+=("$(m_rand_raw)"); rnd_n+=("$(m_rand_null)")
  echo "| 4 KiB random $r (IOPS) | $(f0 "$m") | $(f0 "$b") | $(ratio "$m" "$b") | $first; raw fio $(f0 "${rnd_r[-1]}"), null_fuse $(f0 "${rnd_n[-1]}") |" >>"$OUT/m_rounds.md"
done
raw_rand=$(median "${rnd_r[@]}")
null_rand=$(median "${rnd_n[@]}")
rm_=$(median "${rnd_m[@]}"); rb=$(median "${rnd_b[@]}")
row "mount 4 KiB random IOPS (fio io_uring 4x32) vs rangefs-bench lookup (4x32)" "$(f0 "$rm_")" "$(f0 "$rb")" "$(ratio "$rm_" "$rb")" ">= 0.5"
row "mount 4 KiB random IOPS vs fio on the raw objects (scale)" "$(f0 "$rm_")" "$(f0 "$raw_rand")" "$(ratio "$rm_" "$raw_rand")" "(info)"
row "mount 4 KiB random IOPS vs null_fuse (FUSE round trip alone)" "$(f0 "$rm_")" "$(f0 "$null_rand")" "$(ratio "$rm_" "$null_rand")" "(info)"
{ echo
  echo "ranges (min-max over $M_REPEAT rounds): mount sequential $(m_range "${seq_m[@]}") MB/s, -o direct_io $(m_range "${seq_d[@]}") MB/s, rangefs-bench scan $(m_range "${seq_b[@]}") MB/s; mount 4 KiB $(m_range "${rnd_m[@]}") IOPS, rangefs-bench lookup $(m_range "${rnd_b[@]}") IOPS."
  echo "daemon CPU $(f2 "$cpu_daemon") s/GB of the mount's $(f2 "$cpu_mount")."
} >>"$OUT/m_rounds.md"
echo "part M: $(tail -n 2 "$OUT/m_rounds.md" | head -n 1)" >>"$OUT/report.md"
m_cleanup
deploy/local/cluster.sh down --dir="$CM" >/dev/null
