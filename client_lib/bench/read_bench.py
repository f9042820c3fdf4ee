#!/usr/bin/python3
"""Compares the rangefs client's mount data path with fio on the same files.

  bazel build -c opt //client_lib:read_bench
  /usr/bin/python3 client_lib/bench/read_bench.py [--dir D] [--size_mb 256]

Sequential: rangefs File::Read (16 MiB calls, 1 MiB pieces, 4 nodes x 8
workers) vs the best fio run over numjobs x iodepth (io_uring), cached and
O_DIRECT. Random: 4 KiB ReadV batches of 32 vs fio io_uring qd32, O_DIRECT.
Prints each run and the ratios (targets: >= 0.95 sequential, >= 0.9 IOPS).
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, "bazel-out/k8-opt/bin/client_lib/read_bench")


def run_bench(args, *extra):
    out = subprocess.run([BENCH, "--dir=" + args.dir, "--nodes=%d" % args.nodes,
                          "--size_mb=%d" % args.size_mb, *extra],
                         check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.startswith("result "):
            _, _, bps, iops = line.split()
            return float(bps), float(iops)
    raise RuntimeError("no result line: " + out)


def run_fio(args, rw, bs, direct, numjobs, iodepth, seconds):
    files = ":".join(os.path.join(args.dir, "n%d" % i, "obj")
                     for i in range(args.nodes))
    cmd = ["fio", "--name=b", "--filename=" + files, "--rw=" + rw, "--bs=" + bs,
           "--direct=%d" % direct, "--ioengine=io_uring",
           "--numjobs=%d" % numjobs, "--iodepth=%d" % iodepth,
           "--group_reporting", "--output-format=json", "--invalidate=0"]
    if seconds:
        cmd += ["--time_based", "--runtime=%d" % seconds]
    else:
        cmd += ["--size=%dM" % (args.size_mb * args.nodes)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    job = json.loads(out[out.index("{"):])["jobs"][0]["read"]
    return float(job["bw_bytes"]), float(job["iops"])


def drop_caches():
    try:
        subprocess.run(["sync"], check=True)
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    except OSError:
        pass


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dir", default="/tmp/rangefs-bench")
    p.add_argument("--nodes", type=int, default=4)
    p.add_argument("--size_mb", type=int, default=256)
    p.add_argument("--seconds", type=int, default=5)
    args = p.parse_args()
    if not os.path.exists(BENCH):
        sys.exit("build first: bazel build -c opt //client_lib:read_bench")
    obj = os.path.join(args.dir, "n0", "obj")
    if not os.path.exists(obj) or os.path.getsize(obj) != args.size_mb << 20:
        subprocess.run([BENCH, "--dir=" + args.dir, "--mode=prepare",
                        "--nodes=%d" % args.nodes, "--size_mb=%d" % args.size_mb],
                       check=True)
    gb = 1e9
    results = {}
    for direct in (0, 1):
        label = "O_DIRECT" if direct else "cached"
        if not direct:  # warm the page cache
            run_fio(args, "read", "1M", 0, 1, 8, 0)
        best = (0, "")
        for nj in (1, 2, 4):
            for qd in (1, 8, 32):
                bw, _ = run_fio(args, "read", "1M", direct, nj, qd, 0)
                print("fio seq %-8s numjobs=%d iodepth=%-2d %.2f GB/s" %
                      (label, nj, qd, bw / gb))
                best = max(best, (bw, "numjobs=%d iodepth=%d" % (nj, qd)))
        ours = max(run_bench(args, "--mode=seq", "--passes=2",
                             "--o_direct=%s" % ("true" if direct else "false"))[0]
                   for _ in range(2))
        print("rangefs seq %-8s %.2f GB/s; fio best %.2f GB/s (%s); ratio %.2f" %
              (label, ours / gb, best[0] / gb, best[1], ours / best[0]))
        results["seq_" + label] = ours / best[0]
    _, fio_iops = run_fio(args, "randread", "4k", 1, 1, 32, args.seconds)
    print("fio randread 4k O_DIRECT io_uring qd32: %.0f IOPS" % fio_iops)
    best = (0, "")
    for threads, batch in ((1, 32), (2, 16), (4, 8)):
        _, iops = run_bench(args, "--mode=rand", "--o_direct=true",
                            "--threads=%d" % threads, "--batch=%d" % batch,
                            "--seconds=%d" % args.seconds)
        print("rangefs ReadV 4k O_DIRECT threads=%d batch=%d: %.0f IOPS" %
              (threads, batch, iops))
        best = max(best, (iops, "threads=%d batch=%d" % (threads, batch)))
    print("rangefs 4k ReadV best %.0f IOPS (%s); fio qd32 %.0f; ratio %.2f" %
          (best[0], best[1], fio_iops, best[0] / fio_iops))
    results["rand_4k"] = best[0] / fio_iops
    print("ratios: " + ", ".join("%s=%.2f" % kv for kv in sorted(results.items())))


if __name__ == "__main__":
    main()
