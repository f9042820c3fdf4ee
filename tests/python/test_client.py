"""rangefs.Client and rangefs.RangefsFile against the real local cluster."""

from __future__ import annotations

import io
import threading
import time
import tracemalloc

import numpy as np
import pytest

import rangefs
from conftest import SlowMount, error_names, random_bytes, wait_until

# Edge sizes around the 4 KiB page, the 64 KiB stripe unit used below, and
# the 1 MiB max_io_size.
SIZES = [0, 1, 4095, 4096, 4097, 65535, 65536, 65537, (1 << 20) + 1, 3 * (1 << 20) - 7]


@pytest.fixture(scope="module")
def files(cluster):
    """/edge/<size>: random bytes, striped 64 KiB over 3 columns."""
    out = {}
    for i, size in enumerate(SIZES):
        data = random_bytes(size, seed=i)
        path = f"/edge/{size}"
        cluster.put_bytes(data, path, "--stripe-unit=64K", "--width=3")
        out[size] = (path, data)
    return out


@pytest.mark.parametrize("size", SIZES)
def test_round_trip_at_edge_size(client, files, size):
    path, data = files[size]
    with client.open(path) as f:
        assert f.size == size
        assert f.readall() == data
        assert f.read() == b""  # at the end
        f.seek(0)
        got = bytearray()
        chunk = bytearray(7919)  # odd size: every boundary falls mid-chunk
        while True:
            n = f.readinto(chunk)
            if n == 0:
                break
            got += chunk[:n]
        assert bytes(got) == data
        if size:
            f.seek(-1, io.SEEK_END)
            assert f.read(10) == data[-1:]
        f.seek(size + 10)  # past the end: reads return nothing
        assert f.read(5) == b"" and f.readinto(bytearray(5)) == 0
    assert client.read_ranges([(path, 0, size + 5)]) == [data]


def test_readinto_writes_the_callers_numpy_memory(client, files):
    path, data = files[(1 << 20) + 1]
    arr = np.full(len(data) + 200, 0xAB, dtype=np.uint8)
    address = arr.__array_interface__["data"][0]
    view = arr[100:100 + len(data)]  # a view: writes must land in arr
    with client.open(path) as f:
        assert f.readinto(view) == len(data)
        assert f.tell() == len(data)
    assert arr.__array_interface__["data"][0] == address
    assert arr[100:-100].tobytes() == data
    assert (arr[:100] == 0xAB).all() and (arr[-100:] == 0xAB).all()
    # Any dtype: the buffer's bytes.
    words = np.zeros(1000, dtype=np.float64)
    with client.open(path) as f:
        f.seek(8)
        assert f.readinto(words) == 8000
    assert words.tobytes() == data[8:8008]


def test_readinto_allocates_nothing_and_read_only_its_result(client, files):
    """readinto lands the bytes in the caller's buffer: no Python object
    of the read's size on the way (a temporary bytes copied over would
    double the CPU of a large read). read(n) allocates the one bytes
    object it returns, not a second one besides."""
    path, data = files[3 * (1 << 20) - 7]
    mib = 1 << 20
    buf = bytearray(mib)
    with client.open(path) as f:
        f.readinto(buf)  # the first call's one-time allocations
        tracemalloc.start()
        try:
            for k in range(3):
                f.seek(k * mib)
                f.readinto(buf)
            _, readinto_peak = tracemalloc.get_traced_memory()
            f.seek(0)
            tracemalloc.reset_peak()
            got = f.read(mib)
            _, read_peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert bytes(buf[:mib - 7]) == data[2 * mib:]
    assert got == data[:mib]
    assert readinto_peak < 64 << 10, readinto_peak
    assert mib <= read_peak < mib + (256 << 10), read_peak


def test_readinto_refuses_read_only_and_strided_buffers(client, files):
    path, _ = files[4096]
    with client.open(path) as f:
        with pytest.raises(TypeError):
            f.readinto(bytes(10))
        with pytest.raises(TypeError):
            f.readinto(np.zeros(100, dtype=np.uint8)[::2])
        assert f.tell() == 0


def test_read_ranges_good_and_bad_mixed(client, files):
    p1, d1 = files[65537]
    p2, d2 = files[(1 << 20) + 1]
    got = client.read_ranges([
        (p1, 0, 10),
        ("/edge/missing", 0, 10),
        (p2, 65530, 4096),
        ("relative/path", 0, 1),
        (p1, 65537 + 1, 1),       # past the end
        (p1, 65530, 100),          # short at the end
        (p2, 0, 0),
        ("/edge//double", 0, 1),
    ])
    assert error_names(got) == ["bytes", "NotFound", "bytes", "InvalidArgument",
                                "OutOfRange", "bytes", "bytes", "InvalidArgument"]
    assert got[0] == d1[:10]
    assert got[2] == d2[65530:65530 + 4096]
    assert got[5] == d1[65530:]
    assert got[6] == b""
    assert isinstance(got[1], FileNotFoundError) and got[1].code == "NOT_FOUND"
    assert "/edge/missing" in str(got[1])
    with pytest.raises(ValueError):
        client.read_ranges([(p1, -1, 10)])
    with pytest.raises(TypeError):
        client.read_ranges([(p1, 0)])
    with pytest.raises(TypeError):
        client.read_ranges([(b"/edge/1", 0, 1)])
    # Per file: one File::ReadV.
    with client.open(p2) as f:
        got = f.read_ranges([(0, 5), (1 << 20, 10), (2 << 20, 1)])
    assert error_names(got) == ["bytes", "bytes", "OutOfRange"]
    assert got[0] == d2[:5] and got[1] == d2[1 << 20:]


def test_read_ranges_with_max_in_flight(client, files):
    p1, d1 = files[(1 << 20) + 1]
    ranges = [(p1, off, 4096) for off in range(0, len(d1) - 4096, 40000)]
    want = [d1[off:off + 4096] for _, off, _ in ranges]
    assert client.read_ranges(ranges, max_in_flight=2) == want
    assert client.read_ranges(ranges, max_in_flight=0) == want
    with client.open(p1) as f:
        assert f.read_ranges([(o, n) for _, o, n in ranges], max_in_flight=3) == want
        with pytest.raises(ValueError, match="max_in_flight"):
            f.read_ranges([(0, 1)], max_in_flight=-1)
    with pytest.raises(ValueError, match="max_in_flight"):
        client.read_ranges(ranges, max_in_flight=-1)
    with pytest.raises(ValueError, match="max_in_flight"):
        client.read_ranges(ranges, max_in_flight=1 << 40)


def test_stat_ls_and_revisions(cluster, client, files):
    info = client.stat("/edge/4097")
    assert (info.path, info.size, info.ready) == ("/edge/4097", 4097, True)
    listed = [f.path for f in client.ls("/edge")]
    assert listed == sorted(f"/edge/{s}" for s in SIZES)
    # A snapshot at a revision survives a replacement of the file.
    cluster.put_bytes(b"old contents", "/rev/f")
    rev = client.stat("/rev/f").mod_revision
    assert client.read_ranges([["/rev/f", 0, 100]]) == [b"old contents"]
    cluster.put_bytes(b"new", "/rev/f", "--overwrite")
    assert client.open("/rev/f", revision=rev).readall() == b"old contents"
    # read_ranges keeps its Files open: a replaced one is reopened.
    wait_until(lambda: client.read_ranges([("/rev/f", 0, 100)]) == [b"new"], 60,
               "read_ranges to see the new /rev/f")
    assert client.open("/rev/f").readall() == b"new"


def test_errors_are_python_exceptions(cluster, client):
    with pytest.raises(FileNotFoundError) as e:
        client.open("/no/such/file")
    assert isinstance(e.value, rangefs.NotFound) and "/no/such/file" in str(e.value)
    with pytest.raises(ValueError):
        client.open("no-leading-slash")
    with pytest.raises(rangefs.InvalidArgument):
        client.stat("/a/../b")
    with pytest.raises(rangefs.InvalidArgument):
        cluster.client(data_path="sideways")
    with pytest.raises(rangefs.InvalidArgument):
        cluster.client(no_such_option=1)
    f = client.open("/edge/1")
    f.close()
    with pytest.raises(ValueError):
        f.read()
    closed = cluster.client()
    closed.close()
    with pytest.raises(ValueError):
        closed.stat("/edge/1")


def test_dead_etcd_is_connection_error(cluster):
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))  # a port nobody listens on
    port = s.getsockname()[1]
    s.close()
    start = time.monotonic()
    with pytest.raises(ConnectionError) as e:
        rangefs.Client(etcd=f"127.0.0.1:{port}", cluster=cluster.name)
    assert isinstance(e.value, rangefs.Unavailable)
    assert f"127.0.0.1:{port}" in str(e.value)
    # Refused at once (idle: milliseconds): 30 s only tells a hang.
    took = time.monotonic() - start
    assert took < 30, f"took {took:.1f} s"


def test_stats_count_the_bytes(cluster, files):
    c = cluster.client()
    path, data = files[3 * (1 << 20) - 7]
    assert c.open(path).readall() == data
    s = c.stats()
    assert s["bytes"] == len(data)
    assert sum(n["bytes"] for n in s["nodes"].values()) >= len(data)
    assert "rangefs_client" in c.prometheus_text()


def test_threads_read_in_parallel(cluster, files):
    """Each mount read waits 100 ms (a FUSE layer) without using CPU: with
    the GIL released, 4 threads finish 4x the reads of 1 in about the same
    time. (The wait dwarfs a read's CPU time even on a loaded machine, so
    the ratio measures overlap, not CPU; with the GIL held it stays ~1.)"""
    slow = SlowMount(cluster, delay_ms=100)
    try:
        c = cluster.client(mount_root=slow.mount_root, data_path="mount",
                           hedging=False, io_uring=False)
        path, data = files[(1 << 20) + 1]
        reads = 6

        def worker(seed, errors):
            try:
                with c.open(path) as f:
                    buf = bytearray(4096)
                    for k in range(reads):
                        off = (seed * 7919 + k * 65536) % (len(data) - 4096)
                        assert f.pread_into(off, buf) == 4096
                        assert buf == data[off:off + 4096]
            except BaseException as e:  # reported by the main thread
                errors.append(e)

        def run(threads):
            errors = []
            ts = [threading.Thread(target=worker, args=(i, errors)) for i in range(threads)]
            start = time.monotonic()
            for t in ts:
                t.start()
            for t in ts:
                t.join(timeout=60)
            assert not any(t.is_alive() for t in ts) and not errors, errors
            return threads * reads / (time.monotonic() - start)

        run(1)  # warm-up: opens, sidecars
        one = run(1)
        four = run(4)
        print(f"threads: 1 thread {one:.0f} reads/s, 4 threads {four:.0f} reads/s")
        assert four > 2 * one, f"4 threads {four:.0f} reads/s, 1 thread {one:.0f} reads/s"
    finally:
        slow.close()
