"""Part D's Python readers (tests/bench/part_d.sh): N threads of one process
read the files of a rangefs directory through the rangefs package with its
defaults, each thread its own share (as rangefs-bench --api: with N threads
over F files, thread t reads files t, t+N, ... when N <= F, else the t/F-th
of the equal, 4 KiB-aligned parts of file t % F).

    python_readers.py --api=readinto|cat_file --etcd=H:P --cluster=C
        --mount_root=DIR --dir=/d [--threads=1] [--io_size=1048576]
        [--duration_s=10] [--warmup_s=0] [--once] [--cat_whole]

readinto: rangefs.Client().open(path), seek to the share, readinto of a
--io_size buffer until its end. cat_file: rangefs.fsspec.RangefsFileSystem
.cat_file(path, start, end) of each --io_size range of the share in turn
(what fsspec users call; the same request size as readinto and as fio's
--bs; --cat_whole: one call for the whole share, whose new bytes object of
hundreds of MiB costs the kernel ~0.35 s/GB of page faults and zeroing on
top of the copy, a cost of fresh memory, not of rangefs: os.pread pays it
too).
Time-based like rangefs-bench: the threads read for --warmup_s +
--duration_s; a call counts by the share of its time after the warm-up; the
window ends with the last call's completion. --once: every share once.
Prints one JSON object: mbps, bytes, seconds, cpu_s_per_gb (the process's
user + system CPU over the window, resource.getrusage).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import threading
import time

import rangefs


def shares(infos, threads, t):
    """Thread t's (path, begin, end) list."""
    n = len(infos)
    if threads <= n:
        return [(infos[i].path, 0, infos[i].size) for i in range(t, n, threads)]
    f = infos[t % n]
    sharing = (threads - t % n + n - 1) // n
    index = t // n

    def edge(k):
        return f.size if k == sharing else f.size * k // sharing // 4096 * 4096

    return [(f.path, edge(index), edge(index + 1))]


class Window:
    """The measured window: bytes of calls counted by their share in it."""

    def __init__(self):
        self.lock = threading.Lock()
        self.start = None  # monotonic seconds; None during the warm-up
        self.cpu0 = None
        self.bytes = 0.0
        self.last = 0.0
        self.error = None

    def count(self, begin, end, n):
        with self.lock:
            self.last = max(self.last, end)
            w = self.start
            if w is None or end <= w:
                return
            share = 1.0 if begin >= w else (end - w) / (end - begin)
            self.bytes += n * share


def cpu_now():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def reader_readinto(client, io_size):
    def run(path, begin, end, stop, window):
        buf = bytearray(io_size)
        view = memoryview(buf)
        with client.open(path) as f:
            f.seek(begin)
            pos = begin
            while pos < end and not stop.is_set():
                want = min(io_size, end - pos)
                t0 = time.monotonic()
                n = f.readinto(view[:want])
                window.count(t0, time.monotonic(), n)
                if n == 0:
                    raise RuntimeError(f"{path}: no bytes at {pos}")
                pos += n
    return run


def reader_cat_file(fs, io_size):
    """cat_file of [begin, end) in calls of io_size bytes (0: one call)."""
    def run(path, begin, end, stop, window):
        pos = begin
        while pos < end and not stop.is_set():
            hi = end if io_size == 0 else min(end, pos + io_size)
            t0 = time.monotonic()
            data = fs.cat_file(path, pos, hi)
            window.count(t0, time.monotonic(), len(data))
            if len(data) != hi - pos:
                raise RuntimeError(f"{path}: {len(data)} bytes of {hi - pos} at {pos}")
            pos = hi
    return run


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--api", choices=["readinto", "cat_file"], required=True)
    ap.add_argument("--etcd", required=True)
    ap.add_argument("--cluster", required=True)
    ap.add_argument("--mount_root", required=True)
    ap.add_argument("--dir", default="/")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--io_size", type=int, default=1 << 20)
    ap.add_argument("--duration_s", type=float, default=10)
    ap.add_argument("--warmup_s", type=float, default=0)
    ap.add_argument("--once", action="store_true")
    ap.add_argument("--cat_whole", action="store_true",
                    help="cat_file: one call per share, not one per --io_size")
    a = ap.parse_args()
    if a.api == "readinto":
        client = rangefs.Client(etcd=a.etcd, cluster=a.cluster, mount_root=a.mount_root)
        run = reader_readinto(client, a.io_size)
    else:
        from rangefs.fsspec import RangefsFileSystem
        fs = RangefsFileSystem(etcd=a.etcd, cluster=a.cluster, mount_root=a.mount_root,
                               skip_instance_cache=True)
        client = fs.client
        run = reader_cat_file(fs, 0 if a.cat_whole else a.io_size)
    infos = sorted((f for f in client.ls(a.dir) if f.ready), key=lambda f: f.path)
    if not infos:
        sys.exit(f"python_readers: no files under {a.dir}")
    stop = threading.Event()
    window = Window()

    def worker(t):
        try:
            while not stop.is_set():
                for path, begin, end in shares(infos, a.threads, t):
                    if stop.is_set():
                        break
                    run(path, begin, end, stop, window)
                if a.once:
                    return
        except Exception as e:  # reported, and the run fails
            window.error = f"{type(e).__name__}: {e}"
            stop.set()

    warmup = 0 if a.once else a.warmup_s
    if warmup == 0:
        window.cpu0, window.start = cpu_now(), time.monotonic()
    threads = [threading.Thread(target=worker, args=(t,)) for t in range(a.threads)]
    begin = time.monotonic()
    for th in threads:
        th.start()
    if warmup > 0:
        time.sleep(warmup)
        with window.lock:
            window.cpu0, window.start = cpu_now(), time.monotonic()
    if not a.once:
        stop.wait(max(0.0, begin + warmup + a.duration_s - time.monotonic()))
        stop.set()
    for th in threads:
        th.join()
    cpu = cpu_now() - window.cpu0
    if window.error:
        sys.exit(f"python_readers: {window.error}")
    secs = max(window.last - window.start, 1e-9)
    gb = window.bytes / 1e9
    print(json.dumps({"api": a.api, "threads": a.threads, "bytes": int(window.bytes),
                      "seconds": secs, "mbps": window.bytes / 1e6 / secs,
                      "cpu_s_per_gb": cpu / gb if gb > 0 else 0}))


if __name__ == "__main__":
    main()
