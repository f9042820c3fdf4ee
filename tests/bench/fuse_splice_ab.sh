#!/usr/bin/env bash
# A/B of rangefs-mount read modes (splice on/off x direct_io auto/false)
# vs dd on the same objects, warm objects, 1 reader, dd bs=1M of 2 x 512 MiB
# (same run,
# rotating order; CPU = dd user+sys plus the daemon's ticks). Run from the
# repository root as root: tests/bench/fuse_splice_ab.sh BIN_DIR ROUNDS
# (BIN_DIR: -c opt rangefs-node, rangefs-admin, rangefs-mount). Drops the
# page cache before each side. Prints a markdown table and each mount's
# spliced-reads counter.
set -u
BIN=$1; ROUNDS=${2:-5}
W=$(mktemp -d /tmp/rangefs-splice-ab-XXXX)
cleanup() {
  for m in "$W"/m_*; do [ -d "$m" ] && fusermount3 -u -z "$m" 2>/dev/null; done
  deploy/local/cluster.sh down --dir="$W/c" >/dev/null 2>&1
  rm -rf "$W"
}
trap cleanup EXIT
eval "$(deploy/local/cluster.sh up --dir="$W/c" --nodes=4 --bin="$BIN" --cluster=ab | tail -n 1)"
for i in 1 2; do
  head -c $((512 << 20)) /dev/urandom > "$W/f$i"
  "$BIN/rangefs-admin" --etcd="$RANGEFS_ETCD" --cluster=ab --no-progress file put "$W/f$i" "/d/f$i" --replicas=1 >/dev/null
  rm -f "$W/f$i"
done
mapfile -t OBJS < <(find "$W/c/exports" -type f -path '*/f/*' ! -name '.*' | sort)
declare -A PID
mnt() {  # name opts...
  local n=$1; shift
  mkdir -p "$W/m_$n" "$W/s_$n"
  "$BIN/rangefs-mount" --etcd="$RANGEFS_ETCD" --cluster=ab --mount_root="$MOUNT_ROOT" \
    --status_dir="$W/s_$n" --log_file="$W/$n.log" --metrics_file="$W/$n.prom" --metrics_interval=1s "$@" "$W/m_$n" || exit 1
  PID[$n]=$(awk '/^pid = / {print $3}' "$W/s_$n"/*.status)
}
mnt splice_auto
mnt copy_auto -o splice=false
mnt splice_pc -o direct_io=false
mnt copy_pc -o direct_io=false,splice=false
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
HZ=$(getconf CLK_TCK)
echo "| round | kind | MB/s | CPU s/GB (dd + daemon) |"
echo "|---|---|---|---|"
KINDS=(objects splice_auto copy_auto splice_pc copy_pc)
for r in $(seq 1 "$ROUNDS"); do
  for j in $(seq 0 4); do
    k=${KINDS[$(( (j + r) % 5 ))]}
    sync; echo 3 > /proc/sys/vm/drop_caches; cat "${OBJS[@]}" > /dev/null
    if [ "$k" = objects ]; then files=("${OBJS[@]}"); c0=0; else files=("$W/m_$k/d/f1" "$W/m_$k/d/f2"); c0=$(ticks "${PID[$k]}"); fi
    s=$(date +%s.%N)
    tm=$( { /usr/bin/time -f "%U %S" bash -c 'for f in "$@"; do dd if="$f" of=/dev/null bs=1M status=none; done' _ "${files[@]}"; } 2>&1 )
    e=$(date +%s.%N)
    c1=0; [ "$k" != objects ] && c1=$(ticks "${PID[$k]}")
    python3 -c "
import sys
s,e,tm,c0,c1,hz=float(sys.argv[1]),float(sys.argv[2]),sys.argv[3].split(),int(sys.argv[4]),int(sys.argv[5]),int(sys.argv[6])
gb=2*512*1048576/1e9
cpu=float(tm[0])+float(tm[1])+(c1-c0)/hz
print('| %s | %s | %.0f | %.2f |'%(sys.argv[7],sys.argv[8],gb*1000/(e-s),cpu/gb))" "$s" "$e" "$tm" "$c0" "$c1" "$HZ" "$r" "$k"
  done
done
sleep 2; for n in splice_auto copy_auto splice_pc copy_pc; do echo "$n: $(grep -h "^rangefs_mount_spliced_reads_total \|^rangefs_mount_reads_total " "$W/$n.prom" | tr "\n" " ")"; grep -i "warn" "$W/$n.log" | head -2; done
