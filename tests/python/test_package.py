"""The package's manners: version, repr, missing directories, errors that
name the cluster and endpoint."""

from __future__ import annotations

import os
import re

import pytest

import rangefs


def test_version_is_the_release():
    assert re.fullmatch(r"\d+\.\d+\.\d+", rangefs.__version__), rangefs.__version__
    wheel = os.path.basename(os.environ["RANGEFS_TEST_WHEEL"])
    assert wheel.startswith(f"rangefs-{rangefs.__version__}-")


def test_reprs(cluster, client):
    cluster.put_bytes(b"0123456789", "/repr/f")
    assert repr(client) == (f"rangefs.Client(cluster={cluster.name!r}, "
                            f"etcd={cluster.etcd!r})")
    f = client.open("/repr/f")
    f.seek(3)
    assert repr(f) == "rangefs.RangefsFile('/repr/f', size=10, generation=%d, pos=3)" % (
        f.generation)
    f.close()
    assert repr(f) == "rangefs.RangefsFile('/repr/f', closed)"
    ds = client.open_dataset("/repr")
    assert repr(ds) == (f"rangefs.Dataset(cluster={cluster.name!r}, dir='/repr', "
                        f"revision={ds.revision}, files=1, bytes=10)")
    c = cluster.client()
    c.close()
    assert repr(c).endswith(", closed)")


def test_missing_directory_is_file_not_found(cluster, client):
    cluster.put_bytes(b"x", "/there/f")
    where = f'in cluster "{cluster.name}" at {cluster.etcd}'
    with pytest.raises(FileNotFoundError) as e:
        client.ls("/nope")
    assert isinstance(e.value, rangefs.NotFound)
    assert str(e.value) == f"NOT_FOUND: directory /nope not found {where}"
    with pytest.raises(FileNotFoundError, match=re.escape(where)):
        client.open_dataset("/nope")
    with pytest.raises(NotADirectoryError):
        client.ls("/there/f")
    assert [f.path for f in client.ls("/there")] == ["/there/f"]
    ds = client.open_dataset("/there")
    assert [f.path for f in ds.ls("/there")] == ["/there/f"]
    with pytest.raises(FileNotFoundError):
        ds.ls("/there/nope")


def test_errors_name_cluster_and_endpoint(cluster, client):
    where = f'in cluster "{cluster.name}" at {cluster.etcd}'
    with pytest.raises(FileNotFoundError) as e:
        client.open("/x.csv")
    assert str(e.value).endswith(f"file /x.csv not found {where}"), str(e.value)
    with pytest.raises(FileNotFoundError, match=re.escape(where)):
        client.stat("/x.csv")
    got = client.read_ranges([("/x.csv", 0, 1)])
    assert isinstance(got[0], rangefs.NotFound) and where in str(got[0])
    other = rangefs.Client(etcd=cluster.etcd, cluster="prod-typo")
    with pytest.raises(FileNotFoundError,
                       match=re.escape(f'in cluster "prod-typo" at {cluster.etcd}')):
        other.open("/x.csv")
