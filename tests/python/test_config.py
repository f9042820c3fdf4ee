"""Client(config=...): the shared config file (base/config.h), with the
precedence of every rangefs binary: argument > environment
($RANGEFS_ETCD, $RANGEFS_CLUSTER, $RANGEFS_CONFIG) > config file >
built-in default."""

from __future__ import annotations

import os
import re

import pytest

import rangefs
from conftest import TMP

DEAD_ETCD = "127.0.0.1:1"  # nothing listens: a client using it fails


@pytest.fixture
def no_env(monkeypatch):
    for k in ("RANGEFS_ETCD", "RANGEFS_CLUSTER", "RANGEFS_CONFIG"):
        monkeypatch.delenv(k, raising=False)
    return monkeypatch


def write_config(name: str, text: str) -> str:
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        f.write(text)
    return path


@pytest.fixture(scope="module")
def conf(cluster):
    cluster.put_bytes(b"configured", "/conf/f")
    return write_config("rangefs.conf", f"""# as cluster.sh writes it
etcd_endpoints = {cluster.etcd}
cluster = {cluster.name}
mount_root = {cluster.mount_root}   # the fast path
""")


def test_config_file_gives_etcd_cluster_and_mount_root(cluster, conf, no_env):
    c = rangefs.Client(config=conf, data_path="mount", default_deadline=30)
    assert (c.etcd, c.cluster, c.mount_root, c.config) == (
        cluster.etcd, cluster.name, cluster.mount_root, conf)
    # data_path="mount" reads only through <mount_root>/<node>.
    assert c.open("/conf/f").readall() == b"configured"
    assert c.stats()["bytes"] == len(b"configured")
    no_env.setenv("RANGEFS_CONFIG", conf)
    c = rangefs.Client()
    assert (c.etcd, c.cluster, c.mount_root) == (cluster.etcd, cluster.name,
                                                 cluster.mount_root)


def test_environment_beats_the_file_and_arguments_beat_both(cluster, no_env):
    bad = write_config("bad.conf", f"etcd_endpoints = {DEAD_ETCD}\ncluster = nope\n")
    no_env.setenv("RANGEFS_ETCD", cluster.etcd)
    no_env.setenv("RANGEFS_CLUSTER", cluster.name)
    c = rangefs.Client(config=bad)
    assert (c.etcd, c.cluster) == (cluster.etcd, cluster.name)
    assert c.open("/conf/f").readall() == b"configured"
    no_env.setenv("RANGEFS_ETCD", DEAD_ETCD)
    no_env.setenv("RANGEFS_CLUSTER", "nope")
    c = rangefs.Client(etcd=cluster.etcd, cluster=cluster.name, config=bad)
    assert (c.etcd, c.cluster) == (cluster.etcd, cluster.name)
    with pytest.raises(ConnectionError, match=DEAD_ETCD):
        rangefs.Client(config=bad)
    # A keyword option beats the file's key.
    no_env.delenv("RANGEFS_ETCD")
    conf = write_config("mr.conf", f"etcd_endpoints = {cluster.etcd}\n"
                        "mount_root = /from/file\n")
    assert rangefs.Client(config=conf, mount_root="/kw").mount_root == "/kw"
    assert rangefs.Client(config=conf).mount_root == "/from/file"


def test_defaults_when_nothing_is_set(no_env):
    etcd, cluster, path, options = rangefs._settings(None, None, None, {})
    assert (etcd, cluster, path, options) == ("127.0.0.1:2379", "default", None, {})


def test_a_bad_config_file_is_an_error_naming_it(no_env):
    typo = write_config("typo.conf", "etcd_endpoint = 127.0.0.1:2379\n")
    with pytest.raises(rangefs.InvalidArgument, match=re.escape(f"{typo}:1: unknown key")):
        rangefs.Client(config=typo)
    with pytest.raises(FileNotFoundError, match="/no/such.conf"):
        rangefs.Client(config="/no/such.conf")
