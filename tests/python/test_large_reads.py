"""Large reads through rangefs.RangefsFile (issue 34): readinto and read(n)
of many MiB go in one library call (File::Read, split and parallelized by
the library) straight into the caller's memory, with the GIL released."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from conftest import SlowMount, random_bytes

MIB = 1 << 20
# Not a multiple of anything: the last stripe and every chunk end mid-unit.
SIZE = 40 * MIB + 12345


@pytest.fixture(scope="module")
def big(cluster):
    """/large/f: SIZE random bytes, 1 MiB stripes over 3 columns."""
    data = random_bytes(SIZE, seed=34)
    cluster.put_bytes(data, "/large/f", "--stripe-unit=1M", "--width=3")
    return "/large/f", data


def test_readinto_large_buffers_reads_every_byte(client, big):
    path, data = big
    with client.open(path) as f:
        # The whole file in one call, into a NumPy array one byte longer
        # (the count says where the file ended).
        arr = np.full(SIZE + 1, 0xAB, dtype=np.uint8)
        assert f.readinto(arr) == SIZE
        assert arr[:SIZE].tobytes() == data and arr[SIZE] == 0xAB
        assert f.tell() == SIZE and f.readinto(arr) == 0
        # Sequential 8 MiB + 1 calls into slices of one bytearray.
        f.seek(0)
        out = bytearray(SIZE)
        view = memoryview(out)
        got = 0
        while True:
            n = f.readinto(view[got:got + 8 * MIB + 1])
            if n == 0:
                break
            got += n
        assert got == SIZE and out == data


def test_read_large_sizes_returns_every_byte(client, big):
    path, data = big
    with client.open(path) as f:
        parts = []
        while True:
            b = f.read(16 * MIB - 3)
            if not b:
                break
            parts.append(b)
        assert [len(p) for p in parts[:-1]] == [16 * MIB - 3] * (len(parts) - 1)
        assert b"".join(parts) == data
        f.seek(5 * MIB + 7)
        assert f.read(2 * SIZE) == data[5 * MIB + 7:]  # capped at the end
        f.seek(3)
        assert f.read() == data[3:]


def test_large_readinto_and_read_release_the_gil(cluster, big):
    """Each mount read of the data waits 300 ms in a FUSE layer. While one
    thread is inside a large readinto/read, another runs Python code: with
    the GIL held through the read it could not, and the middle of the read
    would show no tick of the other thread."""
    path, data = big
    slow = SlowMount(cluster, delay_ms=300)
    try:
        c = cluster.client(mount_root=slow.mount_root, data_path="mount",
                           hedging=False, io_uring=False)
        with c.open(path) as f:
            for call in ("readinto", "read"):
                f.seek(MIB)
                span = {}
                result = {}

                def reader():
                    span["start"] = time.monotonic()
                    if call == "readinto":
                        buf = bytearray(4 * MIB)
                        result["n"] = f.readinto(buf)
                        result["bytes"] = bytes(buf)
                    else:
                        result["bytes"] = f.read(4 * MIB)
                    span["end"] = time.monotonic()

                t = threading.Thread(target=reader)
                ticks = []
                t.start()
                while t.is_alive():
                    ticks.append(time.monotonic())
                    time.sleep(0.001)  # paces the ticks; the GIL is free here
                t.join(timeout=60)
                assert result["bytes"] == data[MIB:5 * MIB], call
                start, end = span["start"], span["end"]
                assert end - start >= 0.3, (call, end - start)
                # The middle of the read: away from the bytecodes around it.
                inside = [x for x in ticks if start + 0.1 < x < end - 0.1]
                assert inside, f"{call}: no tick of another thread during a {end - start:.2f} s read"
    finally:
        slow.close()
