"""A Python reader for convert_test: the rangefs package (python/) reads
every file of a directory while the keeper converts it, compared byte for
byte with the file that was put: on even scans through handles opened
before the conversion, on odd ones through fresh opens.

Usage: convert_reader.py ETCD CLUSTER STOP_FILE RANGEFS_PATH=LOCAL_FILE...

Prints "ready" once every handle is open, then "scan N" after each whole
scan (the test counts them), one line per error, and at the end (once
STOP_FILE exists) "done scans=N errors=E". Exits 1 if any read failed or
returned other bytes, 2 on bad arguments.
"""

from __future__ import annotations

import os
import sys

import rangefs


def read_all(f: rangefs.RangefsFile, size: int) -> bytes:
    buf = bytearray(size + 1)  # +1: sees a too-long file
    n = f.pread_into(0, buf)
    return bytes(buf[:n])


def main(argv: list) -> int:
    if len(argv) < 5:
        print(__doc__, file=sys.stderr)
        return 2
    etcd, cluster, stop = argv[1], argv[2], argv[3]
    expected = {}
    for arg in argv[4:]:
        path, sep, local = arg.partition("=")
        if not sep:
            print(f"bad argument {arg!r}: want RANGEFS_PATH=LOCAL_FILE",
                  file=sys.stderr)
            return 2
        with open(local, "rb") as f:
            expected[path] = f.read()
    client = rangefs.Client(etcd=etcd, cluster=cluster, data_path="agent",
                            default_deadline=20)
    handles = {p: client.open(p) for p in expected}
    print("ready", flush=True)
    scans = errors = 0

    def check(path: str, how: str, read) -> None:
        nonlocal errors
        try:
            got = read()
        except Exception as e:  # any error is what the test looks for
            errors += 1
            print(f"error: {how} {path}: {type(e).__name__}: {e}", flush=True)
            return
        if got != expected[path]:
            errors += 1
            print(f"error: {how} {path}: {len(got)} bytes, not the bytes put",
                  flush=True)

    while not os.path.exists(stop):
        for path, data in expected.items():
            if scans % 2 == 0:
                check(path, "old handle",
                      lambda: read_all(handles[path], len(data)))
                continue

            def fresh() -> bytes:
                with client.open(path) as f:
                    return read_all(f, len(data))

            check(path, "fresh open", fresh)
        scans += 1
        print(f"scan {scans}", flush=True)
    for f in handles.values():
        f.close()
    client.close()
    print(f"done scans={scans} errors={errors}", flush=True)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
