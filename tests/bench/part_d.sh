# Part D of tests/bench/run.sh (sourced; uses its helpers and settings):
# every entry point with DEFAULT settings (issue 34, "Fast by default")
# against fio on the very same object files, with the same readers, in the
# same run.
#
# A local cluster (4 nodes; the export directories are the clients'
# mounts), FILES files of FILE_MB MiB put with rangefs-admin's defaults and
# --replicas=1: each file striped over the 4 nodes, one object per node.
# Our side passes only what says which files, how many readers and how
# long: no tuning flag (rangefs-bench --api refuses them). Each row, for
# each reader count of D_READERS (default "1 2 4 8"), warm and cold:
#   reader     rangefs-bench --api=reader: File::NewReader (ReaderOptions{})
#              + Reader::Read of 1 MiB
#   read       rangefs-bench --api=read: File::Read of 1 MiB (ReadOptions{})
#   readinto   tests/bench/python_readers.py: rangefs.Client().open + readinto
#              of a 1 MiB buffer (threads of one process)
#   cat_file   the same, rangefs.fsspec.RangefsFileSystem.cat_file of
#              each 1 MiB range of the reader's share (needs fsspec: the
#              tests' virtualenv, $RANGEFS_PYTHON_VENV, else
#              $ROOT/.cache/python-venv); D_CAT_WHOLE=1: one cat_file of
#              the whole share (a new bytes object of up to 512 MiB: the
#              kernel's page faults and zeroing of fresh memory, ~0.35 s/GB
#              here, on top of the copy that fio makes)
#   fuse dd    rangefs-mount with its default options, `dd bs=1M` of the
#              reader's share of the mounted files
#   fuse fio   the same mount, fio psync 1 MiB, each job its share
#   dio dd, dio fio   the same with `-o direct_io=true`
#   readv      rangefs-bench --api=readv: ReadV of D_BATCH (default 32)
#              random 4 KiB ranges per reader vs fio randread 4 KiB
#              io_uring, numjobs = readers, iodepth = D_BATCH, submitted
#              and reaped D_BATCH at a time (--iodepth_batch_submit and
#              --iodepth_batch_complete_min): equal reads in flight, as a
#              ReadV call waits for all its ranges before the next call;
#              D_READV_FIO=refill: fio refills each slot as it completes
#              (a deeper queue than any one ReadV call; for diagnosis); cold: O_DIRECT on both sides (fio --direct=1,
#              ours --o_direct: ClientOptions::o_direct, the workload's
#              O_DIRECT, not a tuning knob)
# Each reader reads its own share, each fio job its own objects: with N
# readers over F files, reader t reads files t, t+N, ... (N <= F), else an
# equal part of file t % F; fio job j reads objects j, j+N, ... The fio
# side of every sequential row is psync 1 MiB on the objects, numjobs =
# readers.
# Cache states, each side primed alike before each run:
#   warm: the objects read once with cat (the servers' page cache), fio
#     --invalidate=0. Library and Python rows are time-based (RUNTIME after
#     RAMP, fio --time_based --ramp_time). FUSE rows read every share ONCE
#     after `drop_caches` and the objects' cat (the mount's own page cache
#     cold, the servers' warm: a second pass would read the mount's page
#     cache, kept across opens), against fio reading its objects once.
#   cold: `sync; echo 3 >/proc/sys/vm/drop_caches` before each side (the
#     row is aborted, "failed", if it fails); sequential rows read every
#     share once (a time-based run would re-read cached bytes), readv rows
#     are time-based.
# REPEAT rounds per row, the first side alternating; median and min-max;
# ratio = ours / fio of the medians; CPU s/GB on both sides (ours:
# getrusage of the process, plus the FUSE daemon's /proc/PID/stat ticks
# for mount rows; fio: usr_cpu + sys_cpu x runtime of its jobs).
# Targets (issue 34): warm sequential library >= 0.9, Python >= 0.8, FUSE
# >= 0.8; cold sequential library and FUSE >= 0.9; 4 KiB random O_DIRECT
# >= 0.9; every row >= 0.7; CPU s/GB <= 1.2 x fio's in warm rows.
# OUT/part_d.md: the table; OUT/d_rounds.md: every round; every command
# line in OUT/commands.log; OUT/d_times.log: each row's wall time (to plan
# a D_ROWS run). --quick (the smoke test, on the CI's critical
# path): D_READERS=2, every row read once (readv: 0.3 s), one row per
# entry point (Reader, File::Read, Python readinto, FUSE dd, ReadV) warm and
# the Reader cold.
# D_READERS, D_KINDS, D_COLD_KINDS, D_BATCH (environment) pick the rows;
# D_ROWS="KIND:MODE:N ..." (e.g. "readinto:warm:4 readv:cold:1") runs
# exactly those rows, in that order, instead; D_FILES and D_FILE_MB
# (default: run.sh's FILES x FILE_MB, 4 x 512 MiB) size the data set, for a
# check on a busy machine (not a result: the targets assume the default);
# D_FUSE_OPTS (e.g. "-o splice=false") is added to both mounts' options,
# before the direct mount's -o direct_io=true (for A/B runs of a mount
# option; the defaults are what the rows are about).
echo "bench: part D (every entry point with default settings vs fio, same objects)"
D_SAVED_SIZE=("$FILES" "$FILE_MB")  # put back at the end (later parts)
FILES=${D_FILES:-$FILES}; FILE_MB=${D_FILE_MB:-$FILE_MB}
D_READERS=${D_READERS:-$([ "$QUICK" = 1 ] && echo 2 || echo "1 2 4 8")}
D_BATCH=${D_BATCH:-32}
D_READV_FIO=${D_READV_FIO:-batch}
case "$D_READV_FIO" in
  batch) D_FIO_BATCH=(--iodepth_batch_submit="$D_BATCH" --iodepth_batch_complete_min="$D_BATCH") ;;
  refill) D_FIO_BATCH=() ;;
  *) echo "bench: D_READV_FIO must be batch or refill, not '$D_READV_FIO'" >&2; exit 2 ;;
esac
D_KINDS=${D_KINDS:-$([ "$QUICK" = 1 ] && echo "reader read readinto fuse_dd readv" ||
  echo "reader read readinto cat_file fuse_dd fuse_fio dio_dd dio_fio readv")}
D_COLD_KINDS=${D_COLD_KINDS:-$([ "$QUICK" = 1 ] && echo "reader" || echo "$D_KINDS")}
CD="$WORK/clusterD"; CLUSTERS+=("$CD")
eval "$(deploy/local/cluster.sh up --dir="$CD" --nodes=4 --bin="$BIN" --cluster=benchd | tail -n 1)"
mkdir -p "$WORK/data/d"
for i in $(seq 1 "$FILES"); do
  gen "$WORK/data/d/f$i" "d$i" $((FILE_MB << 20))
  "$BIN/rangefs-admin" --etcd="$RANGEFS_ETCD" --cluster=benchd --no-progress \
    file put "$WORK/data/d/f$i" "/d/f$i" --replicas=1 >/dev/null
  rm -f "$WORK/data/d/f$i"
done
mapfile -t D_OBJS < <(find "$CD/exports" -type f -path '*/f/*' ! -name '.*' | sort)
D_FILE_BYTES=$((FILE_MB << 20))
rm -f "$OUT/d_errors.log" "$OUT/d_times.log"
echo "part D: ${#D_OBJS[@]} objects, $FILES files x $FILE_MB MiB" >>"$OUT/commands.log"

# The Python package: its sources and the extension, staged for PYTHONPATH.
D_PY=""
for p in "${RANGEFS_PYTHON_VENV:+$RANGEFS_PYTHON_VENV/bin/python}" "$ROOT/.cache/python-venv/bin/python" /usr/bin/python3; do
  [ -n "$p" ] && [ -x "$p" ] && { D_PY=$p; break; }
done
D_SITE="$WORK/pysite"
mkdir -p "$D_SITE/rangefs"
cp -L "$ROOT"/python/rangefs/*.py "$D_SITE/rangefs/"
if [ -e "$BIN/_rangefs.so" ]; then cp -L "$BIN/_rangefs.so" "$D_SITE/rangefs/"; fi
D_FSSPEC=0
if [ -n "$D_PY" ] && PYTHONPATH="$D_SITE" "$D_PY" -c "import rangefs" 2>/dev/null; then
  PYTHONPATH="$D_SITE" "$D_PY" -c "import rangefs.fsspec" 2>/dev/null && D_FSSPEC=1
else
  D_PY=""
fi

# The two mounts: default options, and -o direct_io=true.
D_MNT="$WORK/dmnt"; D_MNTD="$WORK/dmntd"
FUSE_MOUNTS+=("$D_MNT" "$D_MNTD")
d_mount() {  # d_mount DIR [-o OPTS]: rangefs-mount with its defaults
  local dir=$1
  shift
  mkdir -p "$dir" "$dir.status"
  local cmd=("$BIN/rangefs-mount" --etcd="$RANGEFS_ETCD" --cluster=benchd --mount_root="$MOUNT_ROOT"
             --status_dir="$dir.status" --log_file="$dir.log" ${D_FUSE_OPTS:-} "$@" "$dir")
  echo "${cmd[*]}" >>"$OUT/commands.log"
  "${cmd[@]}"
}
D_FUSE=0
if command -v fusermount3 >/dev/null && [ -e /dev/fuse ] && d_mount "$D_MNT" && d_mount "$D_MNTD" -o direct_io=true; then
  D_FUSE=1
  D_PID=$(awk '/^pid = / {print $3}' "$D_MNT.status"/*.status)
  D_DPID=$(awk '/^pid = / {print $3}' "$D_MNTD.status"/*.status)
fi

# --- priming
D_DROP_FAILED=0
d_drop() {  # empties the page cache; fails (and says so once) if it cannot
  sync
  if echo 3 2>/dev/null >/proc/sys/vm/drop_caches; then return 0; fi
  D_DROP_FAILED=1
  return 1
}
d_prime() {  # d_prime KIND MODE: that row's cache state
  if [ "$2" = cold ]; then d_drop; return; fi
  case "$1" in fuse_* | dio_*) d_drop || return 1 ;; esac
  cat "${D_OBJS[@]}" >/dev/null
}
# Time-based runs: RUNTIME s after RAMP s (--quick: 0.3 s, readv only).
D_RT=$RUNTIME; D_RT_FIO=$RUNTIME; D_RAMP=$RAMP
[ "$QUICK" = 1 ] && { D_RT=0.3; D_RT_FIO=300ms; D_RAMP=0; }
d_timed() {  # d_timed KIND MODE: whether the row is time-based
  [ "$QUICK" = 0 ] || [ "$1" = readv ] || return 1
  case "$1" in
    readv) return 0 ;;
    fuse_* | dio_*) return 1 ;;
    *) [ "$2" = warm ] ;;
  esac
}

# --- shares: reader t of N (as rangefs-bench --api and python_readers.py)
# d_share N T: "FILE_INDEX BEGIN END" lines (files 1-based).
d_share() {
  local n=$1 t=$2 i
  if [ "$n" -le "$FILES" ]; then
    for ((i = t; i < FILES; i += n)); do echo "$((i + 1)) 0 $D_FILE_BYTES"; done
    return
  fi
  local f=$((t % FILES)) sharing=$(((n - t % FILES + FILES - 1) / FILES)) k=$((t / FILES))
  local b=$((D_FILE_BYTES * k / sharing / 4096 * 4096)) e=$((D_FILE_BYTES * (k + 1) / sharing / 4096 * 4096))
  [ $((k + 1)) = "$sharing" ] && e=$D_FILE_BYTES
  echo "$((f + 1)) $b $e"
}
# d_obj_jobs N: fio job sections over the objects, job j objects j, j+N, ...
d_obj_jobs() {
  local n=$1 j k files
  for ((j = 0; j < n; j++)); do
    files=""
    for ((k = j; k < ${#D_OBJS[@]}; k += n)); do files+="${files:+:}${D_OBJS[k]}"; done
    [ -n "$files" ] && echo "--name=j$j --filename=$files"
  done
}
# d_mnt_jobs DIR N: fio job sections over the mounted files, job t its share
# (a part of a file: --offset/--size of that job alone).
d_mnt_jobs() {
  local dir=$1 n=$2 t fi b e files
  for ((t = 0; t < n; t++)); do
    if [ "$n" -le "$FILES" ]; then
      files=$(d_share "$n" "$t" | awk -v d="$dir/d" '{printf "%s%s/f%s", (NR > 1 ? ":" : ""), d, $1}')
      echo "--name=j$t --filename=$files"
    else
      read -r fi b e <<<"$(d_share "$n" "$t")"
      echo "--name=j$t --filename=$dir/d/f$fi --offset=$b --size=$((e - b))"
    fi
  done
}

# --- one run of a side: writes "RATE CPU" to its last argument (RATE:
# MB/s, IOPS for readv; CPU: s/GB); returns 1 when it failed.
D_TIME=()
d_time_args() {  # fio's, for time-based rows
  if d_timed "$1" "$2"; then D_TIME=(--time_based=1 --runtime="$D_RT_FIO" --ramp_time="$D_RAMP"); else D_TIME=(); fi
}
d_fio_json() {  # d_fio_json FIOJSON OUT [DAEMON_TICKS]: OUT "MB/s (IOPS for 4 KiB) CPU_s/GB"
  python3 - "$@" <<'PY'
import json, os, sys
d = json.load(open(sys.argv[1]))
jobs = d["jobs"]
b = sum(j["read"]["io_bytes"] for j in jobs)
rt = max(j["job_runtime"] for j in jobs) / 1000
cpu = sum((j["usr_cpu"] + j["sys_cpu"]) / 100 * j["job_runtime"] / 1000 for j in jobs)
cpu += float(sys.argv[3]) / os.sysconf("SC_CLK_TCK") if len(sys.argv) > 3 else 0
bs = jobs[0]["job options"].get("bs", "") or d.get("global options", {}).get("bs", "")
rate = sum(j["read"]["iops"] for j in jobs) if bs == "4k" else b / 1e6 / rt
open(sys.argv[2], "w").write(f"{rate} {cpu / (b / 1e9)}\n")
PY
}
d_fio() {  # d_fio KIND MODE N RES: the baseline, fio on the objects
  local kind=$1 mode=$2 n=$3 res=$4
  d_prime "$kind" "$mode" || return 1
  d_time_args "$kind" "$mode"
  if [ "$kind" = readv ]; then
    local direct=$([ "$mode" = cold ] && echo 1 || echo 0)
    # shellcheck disable=SC2046
    fio_run "$WORK/dfio.json" --rw=randread --bs=4k --direct="$direct" --ioengine=io_uring \
      --iodepth="$D_BATCH" "${D_FIO_BATCH[@]}" --randrepeat=0 --norandommap --invalidate=0 --readonly \
      "${D_TIME[@]}" --name=rand --filename="$(IFS=:; echo "${D_OBJS[*]}")" --numjobs="$n" || return 1
  else
    # shellcheck disable=SC2046
    fio_run "$WORK/dfio.json" --rw=read --bs=1M --ioengine=psync --invalidate=0 --readonly \
      "${D_TIME[@]}" $(d_obj_jobs "$n") || return 1
  fi
  d_fio_json "$WORK/dfio.json" "$res"
}
d_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
d_ours() {  # d_ours KIND MODE N RES
  local kind=$1 mode=$2 n=$3 res=$4 cmd=() t0
  d_prime "$kind" "$mode" || return 1
  local timing=(--once)
  d_timed "$kind" "$mode" && timing=(--duration_s="$D_RT" --warmup_s="$D_RAMP")
  case "$kind" in
    reader | read | readv)
      cmd=("$BIN/rangefs-bench" --api="$kind" --etcd="$RANGEFS_ETCD" --cluster=benchd
           --mount_root="$MOUNT_ROOT" --dir=/d --threads="$n" --json "${timing[@]}")
      if [ "$kind" = readv ]; then
        cmd+=(--batch="$D_BATCH" --lookup_size=4096)
        [ "$mode" = cold ] && cmd+=(--o_direct=true)
      else
        cmd+=(--io_size=1M)
      fi
      echo "${cmd[*]}" >>"$OUT/commands.log"
      "${cmd[@]}" >"$res.raw" 2>"$res.err" || return 1
      python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
rate = d['iops'] if d['workload'] == 'lookup' else d['gbps'] * 1000
open(sys.argv[2], 'w').write(f\"{rate} {d['cpu_s_per_gb']}\\n\")" "$res.raw" "$res" ;;
    readinto | cat_file)
      cmd=(env PYTHONPATH="$D_SITE" "$D_PY" "$ROOT/tests/bench/python_readers.py" --api="$kind"
           --etcd="$RANGEFS_ETCD" --cluster=benchd --mount_root="$MOUNT_ROOT" --dir=/d
           --threads="$n" "${timing[@]}")
      [ "${D_CAT_WHOLE:-0}" = 1 ] && [ "$kind" = cat_file ] && cmd+=(--cat_whole)
      echo "${cmd[*]}" >>"$OUT/commands.log"
      "${cmd[@]}" >"$res.raw" 2>"$res.err" || return 1
      python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
open(sys.argv[2], 'w').write(f\"{d['mbps']} {d['cpu_s_per_gb']}\\n\")" "$res.raw" "$res" ;;
    fuse_fio | dio_fio)
      local dir=$D_MNT pid=$D_PID
      [ "$kind" = dio_fio ] && { dir=$D_MNTD; pid=$D_DPID; }
      t0=$(d_ticks "$pid")
      # shellcheck disable=SC2046
      fio_run "$WORK/dfio.json" --rw=read --bs=1M --ioengine=psync --invalidate=0 --readonly \
        $(d_mnt_jobs "$dir" "$n") || return 1
      d_fio_json "$WORK/dfio.json" "$res" "$(($(d_ticks "$pid") - t0))" ;;
    fuse_dd | dio_dd)
      local dir=$D_MNT pid=$D_PID t
      [ "$kind" = dio_dd ] && { dir=$D_MNTD; pid=$D_DPID; }
      # One shell per reader, one dd per share: `dd bs=1M skip=B count=L
      # iflag=skip_bytes,count_bytes`.
      local scripts=()
      for ((t = 0; t < n; t++)); do
        scripts+=("$(d_share "$n" "$t" | awk -v d="$dir/d" '{printf "dd if=%s/f%s of=/dev/null bs=1M skip=%s count=%s iflag=skip_bytes,count_bytes status=none || exit 1; ", d, $1, $2, $3 - $2}')")
      done
      printf '%s\n' "${scripts[@]}" >>"$OUT/commands.log"
      python3 - "$res" "$pid" "$((FILES * D_FILE_BYTES))" "${scripts[@]}" <<'PY' 2>"$res.err"
import json, os, resource, subprocess, sys, time
out, pid, total, scripts = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
ticks = lambda: sum(int(x) for x in open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[11:13])
ru = lambda: (lambda r: r.ru_utime + r.ru_stime)(resource.getrusage(resource.RUSAGE_CHILDREN))
t0, c0, k0 = time.monotonic(), ru(), ticks()
procs = [subprocess.Popen(["bash", "-c", s]) for s in scripts]
rcs = [p.wait() for p in procs]
secs = time.monotonic() - t0
cpu = ru() - c0 + (ticks() - k0) / os.sysconf("SC_CLK_TCK")
if any(rcs):
    sys.exit(f"dd failed: exit statuses {rcs}")
open(out, "w").write(f"{total / 1e6 / secs} {cpu / (total / 1e9)}\n")
PY
      ;;
  esac
}
# d_measure SIDE KIND MODE N: "VALUE CPU", or "failed failed".
d_measure() {
  local res="$WORK/d.out"
  rm -f "$res"
  local v c
  if "$@" "$res" && read -r v c <"$res" && isnum "$v" && isnum "$c"; then
    echo "$v $c"
  else
    echo "$* failed: $(tail -n 3 "$res.err" 2>/dev/null | tr '\n' ' ')" >>"$OUT/d_errors.log"
    echo "failed failed"
  fi
}
# d_target KIND MODE: the rate ratio the row must reach.
d_target() {
  case "$2:$1" in
    warm:reader | warm:read) echo 0.9 ;;
    warm:readinto | warm:cat_file) echo 0.8 ;;
    warm:fuse_* | warm:dio_*) echo 0.8 ;;
    cold:reader | cold:read | cold:fuse_* | cold:dio_* | cold:readv) echo 0.9 ;;
    *) echo 0.7 ;;
  esac
}
d_label() {
  case "$1" in
    reader) echo "C++ Reader, 1 MiB Read" ;;
    read) echo "C++ File::Read, 1 MiB" ;;
    readinto) echo "Python readinto, 1 MiB" ;;
    cat_file) [ "${D_CAT_WHOLE:-0}" = 1 ] && echo "Python fsspec cat_file, whole share" || echo "Python fsspec cat_file, 1 MiB" ;;
    fuse_dd) echo "FUSE default, dd bs=1M" ;;
    fuse_fio) echo "FUSE default, fio psync 1M" ;;
    dio_dd) echo "FUSE direct_io, dd bs=1M" ;;
    dio_fio) echo "FUSE direct_io, fio psync 1M" ;;
    readv) echo "ReadV 4 KiB x $D_BATCH (IOPS)" ;;
  esac
}
# d_summary ROUNDS_MD LABEL MODE N TARGET OURS... -- FIO... -- CPU_OURS...
# -- CPU_FIO...: prints the table row: medians (min-max), ratio of the
# medians, verdict against TARGET (and, warm, CPU <= 1.2 x fio's); appends
# one line per round to ROUNDS_MD (odd rounds ran ours first). A failed
# run makes its side "failed" and the row "FAIL (not measured)", never a
# number.
d_summary() {
  python3 - "$@" <<'PY'
import statistics, sys
rounds_md, label, mode, n, target = sys.argv[1:6]
groups, cur = [], []
for x in sys.argv[6:] + ["--"]:
    if x == "--":
        groups.append(cur); cur = []
    else:
        cur.append(x)
def med(v):
    try: return statistics.median(float(x) for x in v)
    except ValueError: return None
def cell(v, d):
    m = med(v)
    if m is None: return "failed"
    f = [float(x) for x in v]
    return f"{m:.{d}f} ({min(f):.{d}f}-{max(f):.{d}f})"
def rat(a, b):
    return a / b if a is not None and b is not None and b > 0 else None
r = rat(med(groups[0]), med(groups[1]))
c = rat(med(groups[2]), med(groups[3]))
if r is None: verdict = "FAIL (not measured)"
elif r < float(target): verdict = "FAIL (rate)"
elif mode == "warm" and (c is None or c > 1.2): verdict = "FAIL (CPU)"
else: verdict = "PASS"
fmt = lambda x: "n/a" if x is None else f"{x:.2f}"
note = "" if mode == "warm" else " (CPU: info)"
def num(x, d):
    try: return f"{float(x):.{d}f}"
    except ValueError: return x
with open(rounds_md, "a") as f:
    for i, (a, b, ca, cb) in enumerate(zip(*groups)):
        try: q = f"{float(a) / float(b):.2f}"
        except (ValueError, ZeroDivisionError): q = "n/a"
        first = "ours" if i % 2 == 0 else "fio"
        f.write(f"| {label}, {mode}, {n} | {i + 1} | {first} | {num(a, 0)} | {num(b, 0)} | {q} "
                f"| {num(ca, 2)} | {num(cb, 2)} |\n")
print(f"| {label} | {mode} | {n} | {cell(groups[0], 0)} | {cell(groups[1], 0)} | {fmt(r)} | >= {target} "
      f"| {cell(groups[2], 2)} | {cell(groups[3], 2)} | {fmt(c)} | {verdict}{note} |")
PY
}

{ echo "# part D: every entry point with default settings vs fio on the same objects"
  echo
  echo "$FILES files x $FILE_MB MiB (1 replica, 4 nodes, ${#D_OBJS[@]} objects), $REPEAT round(s) per row, the first side alternating;"
  echo "time-based rows (warm library/Python, readv): $D_RT s after $D_RAMP s; FUSE and cold sequential rows: every share read once; $(nproc) cores."
  echo
  echo "| entry point | cache | readers | ours (MB/s; IOPS) | fio | ratio | target | ours CPU s/GB | fio CPU s/GB | CPU ratio | verdict |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|"
} >"$OUT/part_d.md"
{ echo "# part D rounds: ours, fio, ratio; CPU s/GB ours vs fio"; echo
  echo "| row | round | first | ours | fio | ratio | CPU ours | CPU fio |"; echo "|---|---|---|---|---|---|---|---|"; } >"$OUT/d_rounds.md"
# d_rows: the rows to run, "MODE N KIND" lines in order.
d_rows() {
  local row kind mode n
  if [ -n "${D_ROWS:-}" ]; then
    for row in $D_ROWS; do
      IFS=: read -r kind mode n <<<"$row"
      if [ -z "$(d_label "$kind")" ] || { [ "$mode" != warm ] && [ "$mode" != cold ]; } ||
        ! [[ "$n" =~ ^[1-9][0-9]*$ ]]; then
        echo "bench: D_ROWS: \"$row\" is not KIND:warm|cold:READERS" >&2
        return 1
      fi
      echo "$mode $n $kind"
    done
    return
  fi
  for mode in warm cold; do
    for n in $D_READERS; do
      for kind in $([ "$mode" = cold ] && echo "$D_COLD_KINDS" || echo "$D_KINDS"); do
        echo "$mode $n $kind"
      done
    done
  done
}
D_ROW_LIST=$(d_rows) || exit 2
D_PASS=0; D_FAIL=0; D_SKIP=()
while read -r mode n kind <&3; do
  case "$kind" in
    readinto) [ -n "$D_PY" ] || { D_SKIP+=("$kind (no Python with the rangefs extension)"); continue; } ;;
    cat_file) [ "$D_FSSPEC" = 1 ] || { D_SKIP+=("$kind (no fsspec: set RANGEFS_PYTHON_VENV)"); continue; } ;;
    fuse_* | dio_*) [ "$D_FUSE" = 1 ] || { D_SKIP+=("$kind (no FUSE)"); continue; } ;;
  esac
  RA=(); RB=(); CA_=(); CB_=(); D_T0=$SECONDS
  for r in $(seq 1 "$REPEAT"); do
    if [ $((r % 2)) = 1 ]; then
      read -r va cpa <<<"$(d_measure d_ours "$kind" "$mode" "$n")"
      read -r vb cpb <<<"$(d_measure d_fio "$kind" "$mode" "$n")"
    else
      read -r vb cpb <<<"$(d_measure d_fio "$kind" "$mode" "$n")"
      read -r va cpa <<<"$(d_measure d_ours "$kind" "$mode" "$n")"
    fi
    RA+=("$va"); RB+=("$vb"); CA_+=("$cpa"); CB_+=("$cpb")
  done
  line=$(d_summary "$OUT/d_rounds.md" "$(d_label "$kind")" "$mode" "$n" "$(d_target "$kind" "$mode")" \
         "${RA[@]}" -- "${RB[@]}" -- "${CA_[@]}" -- "${CB_[@]}")
  echo "$line" >>"$OUT/part_d.md"
  echo "$kind:$mode:$n $((SECONDS - D_T0)) s" >>"$OUT/d_times.log"
  if [[ "$line" == *"| PASS"* ]]; then D_PASS=$((D_PASS + 1)); else D_FAIL=$((D_FAIL + 1)); fi
done 3<<<"$D_ROW_LIST"
{ echo
  [ "$D_DROP_FAILED" = 1 ] && echo "drop_caches failed: the rows that need it (cold; FUSE warm) were not measured (failed)."
  [ "${#D_SKIP[@]}" -gt 0 ] && echo "skipped: $(printf '%s\n' "${D_SKIP[@]}" | sort -u | paste -sd ';' -)."
  [ -s "$OUT/d_errors.log" ] && echo "failed runs: $(wc -l <"$OUT/d_errors.log") (OUT/d_errors.log)."
  [ "$REPEAT" -lt 5 ] && echo "note: $REPEAT round(s) (< 5): not a result to report."
  [ -n "${D_FILES:-}${D_FILE_MB:-}" ] && echo "note: D_FILES/D_FILE_MB set: a check, not a result to report."
  true
} >>"$OUT/part_d.md"
echo "part D (default settings vs fio, OUT/part_d.md): $D_PASS row(s) PASS, $D_FAIL FAIL" >>"$OUT/report.md"
for d in "$D_MNT" "$D_MNTD"; do fusermount3 -u -z "$d" 2>/dev/null || true; done
deploy/local/cluster.sh down --dir="$CD" >/dev/null
FILES=${D_SAVED_SIZE[0]}; FILE_MB=${D_SAVED_SIZE[1]}
