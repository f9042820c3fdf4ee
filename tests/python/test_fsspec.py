"""rangefs.fsspec.RangefsFileSystem: listing, reads, and Parquet through
pyarrow, pandas and Dask, against the real local cluster."""

from __future__ import annotations

import ctypes
import mmap
import os

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from conftest import TMP, random_bytes, wait_until
from rangefs.fsspec import RangefsFileSystem

MIB = 1 << 20
ROWS = 200_000
COLUMNS = [f"c{i}" for i in range(6)]


@pytest.fixture(scope="module")
def fs(cluster):
    return fsspec.filesystem("rangefs", etcd=cluster.etcd, cluster=cluster.name,
                             mount_root=cluster.mount_root, skip_instance_cache=True)


@pytest.fixture(scope="module")
def tree(cluster):
    files = {"/t/a": random_bytes(5000, 1), "/t/sub/b": random_bytes(70000, 2),
             "/t/sub/deep/c.bin": random_bytes(10, 3), "/t/sub/deep/d.bin": b"dd"}
    for path, data in files.items():
        cluster.put_bytes(data, path)
    return files


@pytest.fixture(scope="module")
def table(cluster):
    """A Parquet file of 4 row groups x 7 columns, written locally by
    pyarrow and ingested with rangefs-admin file put."""
    rng = np.random.default_rng(11)
    t = pa.table({**{c: rng.random(ROWS) for c in COLUMNS}, "k": np.arange(ROWS)})
    local = os.path.join(TMP, "table.parquet")
    pq.write_table(t, local, row_group_size=ROWS // 4, compression=None)
    assert pq.ParquetFile(local).metadata.num_row_groups == 4
    cluster.put(local, "/pq/table.parquet")
    return t, os.path.getsize(local)


def test_the_entry_point_registers_the_protocol():
    assert fsspec.get_filesystem_class("rangefs") is RangefsFileSystem


def test_ls_info_find_glob(fs, tree):
    assert fs.ls("/t", detail=False) == ["/t/a", "/t/sub"]
    entries = {e["name"]: e for e in fs.ls("rangefs://pytest/t/sub")}
    assert entries["/t/sub/b"]["type"] == "file" and entries["/t/sub/b"]["size"] == 70000
    assert entries["/t/sub/deep"]["type"] == "directory"
    assert fs.info("/t/sub")["type"] == "directory"
    assert fs.info("/t/a")["size"] == 5000
    assert fs.ls("/t/a", detail=False) == ["/t/a"]
    with pytest.raises(FileNotFoundError):
        fs.info("/t/nope")
    assert fs.find("/t") == sorted(tree)
    assert fs.find("/t", maxdepth=1) == ["/t/a"]
    assert "/t/sub/deep" in fs.find("/t", withdirs=True)
    assert fs.glob("/t/sub/deep/*.bin") == ["/t/sub/deep/c.bin", "/t/sub/deep/d.bin"]
    assert fs.glob("/t/**/*.bin") == ["/t/sub/deep/c.bin", "/t/sub/deep/d.bin"]
    assert fs.exists("/t/a") and not fs.exists("/t/zzz")
    assert fs.unstrip_protocol("/t/a") == "rangefs://pytest/t/a"


def _resident_pages(path: str, length: int) -> int:
    """Pages of the first `length` bytes of `path` in the page cache
    (mincore(2) of a read-only mapping)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    page = mmap.PAGESIZE
    vec = ctypes.create_string_buffer((length + page - 1) // page)
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = libc.mmap(None, length, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        assert addr not in (None, ctypes.c_void_p(-1).value), os.strerror(ctypes.get_errno())
        try:
            assert libc.mincore(addr, length, vec) == 0, os.strerror(ctypes.get_errno())
        finally:
            libc.munmap(addr, length)
    finally:
        os.close(fd)
    return sum(b & 1 for b in vec.raw)


def _drop_cached(path: str) -> bool:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fdatasync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    return _resident_pages(path, os.path.getsize(path)) == 0


def test_consecutive_cat_file_calls_read_ahead(fs, cluster):
    """cat_file goes through the client's kept File of the path, so that
    consecutive calls are one sequential stream (readahead hints, issue 34):
    a File opened per call starts a new stream each time and never hints.
    1 MiB stripes over 3 columns: calls for MiB 0 and 1 (columns 0, 1),
    which wait for the disk, ask the kernel for the next 4 MiB: MiB 2,
    column 2's first unit, which no call read."""
    data = random_bytes(12 * MIB, seed=35)
    cluster.put_bytes(data, "/ra/f", "--stripe-unit=1M", "--width=3", "--replicas=1")
    objects = [os.path.join(cluster.mount_root, t["replicas"][0]["node_id"],
                            t["replicas"][0]["object"])
               for t in cluster.layout("/ra/f")["striped"]["targets"]]
    assert fs.cat_file("/ra/f") == data  # the client opens every object
    if not all(_drop_cached(o) for o in objects):
        pytest.skip(f"the page cache of {objects[0]} stays")
    assert fs.cat_file("/ra/f", 0, MIB) == data[:MIB]
    assert fs.cat_file("/ra/f", MIB, 2 * MIB) == data[MIB:2 * MIB]
    pages = MIB // mmap.PAGESIZE
    wait_until(lambda: _resident_pages(objects[2], MIB) == pages, 10,
               "column 2's first MiB read ahead")


def test_cat_open_and_cat_ranges(fs, tree):
    b = tree["/t/sub/b"]
    assert fs.cat_file("/t/sub/b") == b
    assert fs.cat_file("/t/sub/b", start=10, end=20) == b[10:20]
    assert fs.cat_file("/t/sub/b", start=-5) == b[-5:]
    with fs.open("rangefs://pytest/t/sub/b", "rb") as f:
        assert f.read(3) == b[:3]
        f.seek(65536)
        assert f.read() == b[65536:]
    with pytest.raises(PermissionError):
        fs.open("/t/new", "wb")
    before = fs.client.stats()["reads"]
    got = fs.cat_ranges(["/t/sub/b", "/t/missing", "/t/a", "/t/a"], [0, 0, 4990, -3],
                        [100, 10, 6000, None])
    assert fs.client.stats()["reads"] - before == 3  # one ReadV, 3 good ranges
    assert got[0] == b[:100] and got[2] == tree["/t/a"][4990:] and got[3] == tree["/t/a"][-3:]
    assert isinstance(got[1], FileNotFoundError)
    with pytest.raises(FileNotFoundError):
        fs.cat_ranges(["/t/missing"], [0], [1], on_error="raise")


def test_pyarrow_reads_columns_reading_a_fraction(fs, table):
    t, size = table
    handler = pafs.PyFileSystem(pafs.FSSpecHandler(fs))
    before = fs.client.stats()["bytes"]
    got = pq.read_table("/pq/table.parquet", columns=["c1", "c4"], filesystem=handler)
    read = fs.client.stats()["bytes"] - before
    assert got.equals(t.select(["c1", "c4"]))
    # 2 of 7 equal columns plus the footer: well under half the file.
    print(f"parquet: read_table of 2 of 7 columns read {read} of {size} bytes")
    assert 2 / 7 * size <= read < 0.4 * size
    assert pq.read_table("/pq/table.parquet", filesystem=handler).equals(t)
    # The README's form: the fsspec file system itself (pyarrow wraps it).
    assert pq.read_table("/pq/table.parquet", columns=["c1"], filesystem=fs).equals(
        t.select(["c1"]))


def test_pandas_and_dask_read_the_url(cluster, table, monkeypatch):
    import dask.dataframe as dd
    import pandas as pd
    t, _ = table
    monkeypatch.setenv("RANGEFS_ETCD", cluster.etcd)
    url = f"rangefs://{cluster.name}/pq/table.parquet"
    opts = {"mount_root": cluster.mount_root}
    df = pd.read_parquet(url, columns=["c2", "k"], storage_options=opts)
    assert df["c2"].to_numpy().tobytes() == t["c2"].to_numpy().tobytes()
    assert (df["k"].to_numpy() == np.arange(ROWS)).all()
    ddf = dd.read_parquet(url, columns=["c3"], storage_options=opts)
    assert ddf.npartitions >= 1
    total = ddf["c3"].sum().compute(scheduler="threads")
    assert total == pytest.approx(float(np.sum(t["c3"].to_numpy())))


def test_block_locations(fs, tree):
    locs = fs.block_locations("/t/sub/b")
    assert locs[0]["offset"] == 0
    assert sum(l["length"] for l in locs) == 70000
    assert all(l["hosts"] == ["127.0.0.1"] for l in locs)
    assert all(len(l["nodes"]) == 2 for l in locs)
