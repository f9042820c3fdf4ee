# Part U of tests/bench/run.sh (sourced; uses its helpers and settings):
# the library's userspace NFS data path (data_path=nfs, issue 37) against
# plain libnfs readers of the same objects, in the same run.
#
# One nfs-ganesha (NFSv4 on loopback, read-only VFS export, no rpcbind)
# serves U_NODES objects of U_MB MiB each (client_lib/read_bench's layout:
# one file striped in 1 MiB units over U_NODES nodes, node i's export
# <dir>/n<i>); objects warm in the page cache on both sides.
#   sequential: read_bench --mode=seq --nfs (one File::Read of 16 MiB at a
#     time: 16 pieces in flight, nfs_connections_per_node 1 and 2) vs
#     tests/bench/nfs_async_read (libnfs's async API, one context, 16 reads
#     of 1 MiB in flight) vs nfs-cat (libnfs-utils, synchronous), each
#     reading every object once.
#   4 KiB random: read_bench --mode=rand --batch=32 (ReadVs of 32 reads,
#     each ended before the next starts) vs nfs_async_read --random
#     --depth=32 --batch (the same: batches of 32) at equal depth, and vs
#     nfs_async_read --random --depth=32 (32 always in flight), U_S s.
# U_REPEAT rounds (default REPEAT), the sides' order alternating; the table
# shows medians and min-max. Needs root and /usr/bin/ganesha.nfsd.
# Then the same over tbf-capped links on a real cluster (part_un.sh);
# U_LOOPBACK=0 or U_CAPPED=0 leaves out either.
echo "bench: part U (data_path=nfs vs plain libnfs readers, same objects)"
U_REPEAT=${U_REPEAT:-$REPEAT}
mm() { MM_DIGITS=${MM_DIGITS:-0} python3 -c "
import os, sys
d = int(os.environ['MM_DIGITS'])
v = sorted(float(x) for x in sys.argv[1:] if x != 'failed')
print(f'{min(v):.{d}f}-{max(v):.{d}f}' if v else 'failed')" "$@"; }
if [ "${U_LOOPBACK:-1}" != 0 ]; then
U_NODES=${U_NODES:-1}
if [ "$QUICK" = 1 ]; then U_MB=${U_MB:-64}; U_S=${U_S:-1}; else U_MB=${U_MB:-256}; U_S=${U_S:-3}; fi
UD="$WORK/u"; mkdir -p "$UD/rec"
U_PORT=$((20000 + RANDOM % 5000))
"$BIN/read_bench" --dir="$UD/data" --mode=prepare --nodes="$U_NODES" --size_mb="$U_MB"
cat >"$UD/ganesha.conf" <<CONF
NFS_CORE_PARAM { Protocols = 4; Bind_addr = 127.0.0.1; NFS_Port = $U_PORT; Enable_NLM = false; Enable_RQUOTA = false; Enable_UDP = false; mount_path_pseudo = true; }
NFSv4 { Graceless = true; Minor_Versions = 0, 1; RecoveryRoot = $UD/rec; }
EXPORT { Export_Id = 1; Path = $UD/data; Pseudo = $UD/data; Access_Type = RO; Squash = No_Root_Squash; Protocols = 4; Transports = TCP; FSAL { Name = VFS; } }
CONF
ganesha.nfsd -F -f "$UD/ganesha.conf" -L "$UD/ganesha.log" -p "$UD/ganesha.pid" &
U_PID=$!
u_stop() { kill -KILL "$U_PID" 2>/dev/null || true; wait "$U_PID" 2>/dev/null || true; }
trap 'u_stop; cleanup' EXIT
for _ in $(seq 1 100); do
  nfs-ls "nfs://127.0.0.1$UD/data?version=4&nfsport=$U_PORT" >/dev/null 2>&1 && break
  sleep 0.1
done
cat "$UD"/data/n*/obj >/dev/null  # warm
U_URL="nfs://127.0.0.1:$U_PORT$UD/data"
U_LIBNFS="nfs://127.0.0.1$UD/data?version=4&nfsport=$U_PORT"
U_OBJS=(); for i in $(seq 0 $((U_NODES - 1))); do U_OBJS+=("/n$i/obj"); done
U_TOTAL=$((U_NODES * U_MB << 20))
u_lib() {  # MB/s of data_path=nfs, $1 connections per node
  "$BIN/read_bench" --dir="$UD/data" --mode=seq --nodes="$U_NODES" --size_mb="$U_MB" \
    --nfs="$U_URL" --nfs_connections="$1" --passes=1 --chunk_mb=16 2>>"$UD/err.log" |
    awk '/^result/ {printf "%.0f", $3 / 1e6}' || echo failed
}
u_async() {
  "$BIN/nfs_async_read" "$U_LIBNFS" "${U_OBJS[@]}" --depth=16 --io=1048576 2>>"$UD/err.log" |
    sed -n 's/.*bytes=\([0-9]*\) seconds=\([0-9.]*\).*/\1 \2/p' | awk '{printf "%.0f", $1 / $2 / 1e6}' || echo failed
}
u_cat() {
  local t0 t1
  t0=$(date +%s.%N)
  for o in "${U_OBJS[@]}"; do nfs-cat "nfs://127.0.0.1$UD/data$o?version=4&nfsport=$U_PORT" >/dev/null || return 1; done
  t1=$(date +%s.%N)
  python3 -c "print(round($U_TOTAL / ($t1 - $t0) / 1e6))"
}
u_lib_rand() {
  "$BIN/read_bench" --dir="$UD/data" --mode=rand --nodes="$U_NODES" --size_mb="$U_MB" \
    --nfs="$U_URL" --bs=4096 --batch=32 --seconds="$U_S" 2>>"$UD/err.log" |
    awk '/^result/ {printf "%.0f", $4}' || echo failed
}
u_async_rand() {  # $1: --batch (batches of 32) or nothing (32 held)
  "$BIN/nfs_async_read" "$U_LIBNFS" "${U_OBJS[@]}" --depth=32 --random="$U_S" "$@" 2>>"$UD/err.log" |
    sed -n 's/.*seconds=\([0-9.]*\) reads=\([0-9]*\).*/\1 \2/p' | awk '{printf "%.0f", $2 / $1}' || echo failed
}
declare -A UV
for r in $(seq 1 "$U_REPEAT"); do
  if [ $((r % 2)) = 1 ]; then order="lib1 lib2 async cat"; else order="cat async lib2 lib1"; fi
  for s in $order; do
    case $s in
      lib1) UV[lib1]+=" $(u_lib 1)" ;;
      lib2) UV[lib2]+=" $(u_lib 2)" ;;
      async) UV[async]+=" $(u_async)" ;;
      cat) UV[cat]+=" $(u_cat || echo failed)" ;;
    esac
  done
  if [ $((r % 2)) = 1 ]; then
    UV[lrand]+=" $(u_lib_rand)"; UV[brand]+=" $(u_async_rand --batch)"; UV[arand]+=" $(u_async_rand)"
  else
    UV[arand]+=" $(u_async_rand)"; UV[brand]+=" $(u_async_rand --batch)"; UV[lrand]+=" $(u_lib_rand)"
  fi
  echo "part U round $r: lib1 ${UV[lib1]##* } lib2 ${UV[lib2]##* } async ${UV[async]##* } cat ${UV[cat]##* } MB/s; rand lib ${UV[lrand]##* } async batches ${UV[brand]##* } async held ${UV[arand]##* } IOPS" | tee -a "$OUT/u_rounds.md"
done
u_stop; trap cleanup EXIT
# shellcheck disable=SC2086
{
  echo
  echo "## Part U: data_path=nfs vs libnfs readers ($U_NODES x $U_MB MiB, $U_REPEAT rounds, medians; min-max)"
  echo
  echo "| side | median | min-max |"
  echo "|---|---|---|"
  for k in lib1 lib2 async cat; do echo "| seq $k (MB/s) | $(f0 "$(median ${UV[$k]})") | $(mm ${UV[$k]}) |"; done
  for k in lrand brand arand; do echo "| 4 KiB random $k (IOPS) | $(f0 "$(median ${UV[$k]})") | $(mm ${UV[$k]}) |"; done
  echo
  echo "seq lib1 / async: $(ratio "$(median ${UV[lib1]})" "$(median ${UV[async]})"); lib1 / nfs-cat: $(ratio "$(median ${UV[lib1]})" "$(median ${UV[cat]})"); 4 KiB random lib (ReadVs of 32) / async in batches of 32 (equal depth): $(ratio "$(median ${UV[lrand]})" "$(median ${UV[brand]})"); / async with 32 held: $(ratio "$(median ${UV[lrand]})" "$(median ${UV[arand]})")"
} | tee -a "$OUT/report.md"
fi
if [ "${U_CAPPED:-1}" != 0 ]; then
  # shellcheck source=tests/bench/part_un.sh
  source "$ROOT/tests/bench/part_un.sh"
fi
