"""The Python side of tests/python/bench.sh: sequential readinto and 4 KiB
read_ranges through the rangefs package, shaped like rangefs-bench's scan
(--once, one thread) and lookup (--batch ranges per ReadV) workloads.

    bench_python.py --etcd=H:P --cluster=C --mount_root=DIR --dir=/bench
        [--io_size=4194304] [--batch=32] [--duration_s=5]
        [--page_cache_reads=true]

Prints one JSON object: scan GB/s, lookup IOPS, and the process's CPU
microseconds per lookup range (as rangefs-bench's cpu_user_s + cpu_sys_s
over its ops).
"""

from __future__ import annotations

import argparse
import json
import random
import time

import rangefs


def scan(client, paths, io_size):
    buf = bytearray(io_size)
    view = memoryview(buf)
    total = 0
    start = time.monotonic()
    for p in paths:
        with client.open(p) as f:
            while True:
                n = f.readinto(view)
                if n == 0:
                    break
                total += n
    return total, time.monotonic() - start


def lookup(client, files, batch, size, duration):
    # The batches are drawn before the clock starts (4 KiB-aligned offsets,
    # as rangefs-bench's lookup): the time is the package's, not random's.
    rng = random.Random(1)
    batches = []
    for _ in range(4096):
        batch_ranges = []
        for _ in range(batch):
            p, s = files[rng.randrange(len(files))]
            batch_ranges.append((p, rng.randrange(0, max(1, s - size)) & ~4095, size))
        batches.append(batch_ranges)
    done = 0
    cpu = time.process_time()
    start = time.monotonic()
    end = start + duration
    while time.monotonic() < end:
        for r in client.read_ranges(batches[(done // batch) % len(batches)]):
            if isinstance(r, Exception):
                raise r
        done += batch
    return done, time.monotonic() - start, time.process_time() - cpu


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--etcd", required=True)
    ap.add_argument("--cluster", required=True)
    ap.add_argument("--mount_root", required=True)
    ap.add_argument("--dir", default="/")
    ap.add_argument("--io_size", type=int, default=4 << 20)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lookup_size", type=int, default=4096)
    ap.add_argument("--duration_s", type=float, default=5)
    ap.add_argument("--page_cache_reads", choices=["true", "false"], default="true")
    a = ap.parse_args()
    client = rangefs.Client(etcd=a.etcd, cluster=a.cluster, mount_root=a.mount_root,
                            page_cache_reads=a.page_cache_reads == "true")
    infos = [f for f in client.ls(a.dir) if f.ready]
    total, secs = scan(client, [f.path for f in infos], a.io_size)
    ops, lsecs, lcpu = lookup(client, [(f.path, f.size) for f in infos], a.batch,
                        a.lookup_size, a.duration_s)
    print(json.dumps({"scan_bytes": total, "scan_gbps": total / secs / 1e9,
                      "lookup_iops": ops / lsecs,
                      "lookup_cpu_us_per_range": lcpu / ops * 1e6}))


if __name__ == "__main__":
    main()
