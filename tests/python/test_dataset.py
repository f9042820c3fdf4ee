"""rangefs.Dataset (Client.open_dataset) and RangefsFileSystem pinned to a
dataset, against the real local cluster: listing, stating, opening and
reading without etcd (even with every etcd member SIGSTOPped), and the old
bytes after rangefs-admin file rm / re-put."""

from __future__ import annotations

import os
import pickle
import signal
import time

import fsspec
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

import rangefs
from conftest import TMP, error_names, random_bytes, wait_until
from rangefs.fsspec import RangefsFileSystem


def put_tree(cluster, root, count, seed):
    """`count` files of different sizes in two sub-directories of `root`."""
    files = {}
    for i in range(count):
        path = f"{root}/sub{i % 2}/f{i}"
        files[path] = random_bytes(3000 + 1000 * i, seed + i)
        cluster.put_bytes(files[path], path)
    return files


def process_state(pid):
    """The state letter of /proc/PID/stat ("T": stopped)."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def test_dataset_lists_stats_opens_and_reads(cluster, client):
    files = put_tree(cluster, "/ds1", 5, 100)
    cluster.put_bytes(b"outside", "/ds1x/y")  # a sibling with the same prefix
    ds = client.open_dataset("/ds1")
    assert isinstance(ds, rangefs.Dataset)
    assert ds.dir == "/ds1" and ds.revision > 0
    assert ds.file_count == len(ds) == 5 and ds.invalid_count == 0
    assert ds.bytes == sum(len(d) for d in files.values())
    assert [f.path for f in ds.ls()] == sorted(files)
    assert [f.path for f in ds.ls("/ds1/sub1")] == ["/ds1/sub1/f1", "/ds1/sub1/f3"]
    assert ds.stat("/ds1/sub0/f2").size == len(files["/ds1/sub0/f2"])
    with pytest.raises(FileNotFoundError):
        ds.stat("/ds1x/y")
    with pytest.raises(ValueError):
        ds.ls("/ds1/../x")
    for path, data in files.items():
        with ds.open(path) as f:
            assert f.readall() == data
    buf = bytearray(1000)
    with ds.open("/ds1/sub1/f3") as f:
        f.seek(500)
        assert f.readinto(buf) == 1000
    assert bytes(buf) == files["/ds1/sub1/f3"][500:1500]
    got = ds.read_ranges([("/ds1/sub0/f0", 10, 100), ("/ds1x/y", 0, 4),
                          ("/ds1/sub1/f1", 3990, 100), ("/nope", 0, 1)])
    assert error_names(got) == ["bytes", "NotFound", "bytes", "NotFound"]
    assert got[0] == files["/ds1/sub0/f0"][10:110]
    assert got[2] == files["/ds1/sub1/f1"][3990:]  # short at the end

    # A dataset keeps its client alive; newer ClientOptions are accepted.
    other = cluster.client(page_cache_reads=False, single_flight=False)
    kept = other.open_dataset("/ds1", revision=ds.revision)
    other.close()
    del other
    head = files["/ds1/sub0/f0"][:64]
    assert kept.read_ranges([("/ds1/sub0/f0", 0, 64)] * 2) == [head, head]


def test_dataset_serves_while_etcd_is_stopped(cluster):
    files = put_tree(cluster, "/ds2", 6, 200)
    client = cluster.client()
    ds = client.open_dataset("/ds2")
    requests = client.stats()["etcd_requests"]
    pids = cluster.etcd_pids()
    try:
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        wait_until(lambda: all(process_state(p) == "T" for p in pids), 60,
                   "etcd stopped")
        start = time.monotonic()
        assert [f.path for f in ds.ls("/ds2")] == sorted(files)
        for path, data in files.items():
            assert ds.stat(path).size == len(data)
            with ds.open(path) as f:
                assert f.read() == data
        got = ds.read_ranges([(p, 100, 200) for p in files])
        assert got == [d[100:300] for d in files.values()]
        # From memory and the nodes: no request (below), and far from the
        # 5 s etcd call timeout (idle: a fraction of a second).
        took = time.monotonic() - start
        assert took < 5, f"took {took:.1f} s with etcd stopped"
        assert client.stats()["etcd_requests"] == requests
        # etcd really was stopped all along.
        assert all(process_state(pid) == "T" for pid in pids)
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)
    assert len(client.ls("/ds2")) == len(files)  # and back


def test_dataset_pinned_before_rm_and_reput_reads_old_bytes(cluster, client):
    a, c = random_bytes(5000, 301), random_bytes(7000, 302)
    cluster.put_bytes(a, "/ds3/a")
    cluster.put_bytes(c, "/ds3/c")
    ds = client.open_dataset("/ds3")
    cluster.admin("file", "rm", "/ds3/a")
    c2 = random_bytes(3000, 303)
    cluster.put_bytes(c2, "/ds3/c", "--overwrite")
    later = client.open_dataset("/ds3", revision=ds.revision)  # after the fact
    for d in (ds, later):
        assert d.revision == ds.revision and d.file_count == 2
        with d.open("/ds3/a") as f:
            assert f.readall() == a
        assert d.read_ranges([("/ds3/c", 0, 10**6)]) == [c]
    now = client.open_dataset("/ds3")
    assert now.revision > ds.revision and now.file_count == 1
    with now.open("/ds3/c") as f:
        assert f.readall() == c2
    with pytest.raises(FileNotFoundError):
        now.open("/ds3/a")


def write_table(seed, rows=30_000):
    rng = np.random.default_rng(seed)
    t = pa.table({"x": rng.random(rows), "y": rng.random(rows), "k": np.arange(rows)})
    local = os.path.join(TMP, f"ds-{seed}.parquet")
    pq.write_table(t, local, row_group_size=rows // 3, compression=None)
    return t, local


def test_fsspec_pinned_to_a_dataset_reads_parquet(cluster):
    t1, local1 = write_table(41)
    cluster.put(local1, "/dsq/t.parquet")
    cluster.put_bytes(b"not in the dataset", "/dsq-other/z")
    options = dict(etcd=cluster.etcd, cluster=cluster.name,
                   mount_root=cluster.mount_root, skip_instance_cache=True)
    fs = RangefsFileSystem(dataset="/dsq", **options)
    rev = fs.dataset.revision
    t2, local2 = write_table(42)
    cluster.put(local2, "/dsq/t.parquet", "--overwrite")  # after pinning

    assert fs.ls("/dsq", detail=False) == ["/dsq/t.parquet"]
    assert fs.info("/dsq/t.parquet")["size"] == os.path.getsize(local1)
    assert not fs.exists("/dsq-other/z")
    handler = pafs.PyFileSystem(pafs.FSSpecHandler(fs))
    got = pq.read_table("/dsq/t.parquet", columns=["x", "k"], filesystem=handler)
    assert got.equals(t1.select(["x", "k"]))
    with open(local1, "rb") as f:
        head = f.read(64)
    got = fs.cat_ranges(["/dsq/t.parquet", "/dsq-other/z"], [0, 0], [64, 4])
    assert got[0] == head and isinstance(got[1], FileNotFoundError)

    # URL options: the same snapshot by revision; pickled copies keep it.
    url = f"rangefs://{cluster.name}/dsq/t.parquet?dataset=/dsq&revision={rev}"
    fs2, path = fsspec.core.url_to_fs(url, **options)
    assert path == "/dsq/t.parquet" and fs2.dataset.revision == rev
    assert pickle.loads(pickle.dumps(fs)).dataset.revision == rev
    frame = pd.read_parquet(url, columns=["y"], storage_options=options)
    assert frame["y"].to_numpy().tolist() == t1.column("y").to_pylist()
    # Unpinned, the namespace has the new table.
    latest = pd.read_parquet(f"rangefs://{cluster.name}/dsq/t.parquet",
                             columns=["y"], storage_options=options)
    assert latest["y"].to_numpy().tolist() == t2.column("y").to_pylist()
