"""The Python package over the userspace NFS data path (data_path="nfs"):
a cluster of its own with one real nfs-ganesha per node (cluster.sh up
--nfs), a file striped over both nodes with two replicas, and a client with
no mount root: every byte comes from ganesha through libnfs, byte-exact at
edge offsets, and the per-node stats say so (nfs_reads, no agent or mount
reads). Needs root, nfs-ganesha and libnfs-utils (deploy/install-deps.sh)."""

from __future__ import annotations

import os

import pytest

from conftest import TMP, random_bytes, start_cluster, stop_cluster

UNIT = 256 << 10
SIZE = 4 * UNIT + 12345  # the last stripe unit and CRC block are partial


@pytest.fixture(scope="module")
def nfs_pair():
    c = start_cluster("nfs", 2, "--nfs")
    yield c
    stop_cluster(c)


@pytest.mark.parametrize("verify", ["off", "full"])
def test_reads_byte_exact_over_nfs(nfs_pair, verify):
    data = random_bytes(SIZE, seed=37)
    path = f"/nfs-{verify}"
    nfs_pair.put_bytes(data, path, "--stripe-unit=256K", "--replicas=2")
    client = nfs_pair.client(data_path="nfs", verify=verify,
                             mount_root=os.path.join(TMP, "no-such-root"))
    with client.open(path) as f:
        for off in (0, 1, UNIT - 1, UNIT, SIZE - 4097, SIZE - 1):
            for n in (1, 4096, UNIT + 1, SIZE):
                assert f.pread_into(off, buf := bytearray(n)) == min(n, SIZE - off)
                assert bytes(buf[:min(n, SIZE - off)]) == data[off:off + n], (off, n)
        f.seek(0)
        assert f.read() == data
    nodes = client.stats()["nodes"]
    assert sum(n["nfs_reads"] for n in nodes.values()) > 0, nodes
    assert sum(n["agent_reads"] for n in nodes.values()) == 0, nodes
    assert sum(n["mount_reads"] for n in nodes.values()) == 0, nodes
    assert sum(n["errors"] for n in nodes.values()) == 0, nodes
