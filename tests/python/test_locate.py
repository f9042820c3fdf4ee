"""Client.locate: ranges, replica order and hosts match the layout that
rangefs-admin shows and the node records."""

from __future__ import annotations

import pytest

from conftest import random_bytes


@pytest.fixture(scope="module")
def striped(cluster):
    data = random_bytes(300_000, seed=3)
    cluster.put_bytes(data, "/loc/striped", "--stripe-unit=64K", "--width=3")
    return "/loc/striped", len(data)


def expected_nodes(layout: dict, offset: int) -> list:
    unit = int(layout["striped"]["stripe_unit"])
    targets = layout["striped"]["targets"]
    return [r["node_id"] for r in targets[(offset // unit) % len(targets)]["replicas"]]


def test_locate_matches_layout_and_node_records(cluster, client, striped):
    path, size = striped
    layout = cluster.layout(path)
    nodes = cluster.nodes()
    where = client.locate(path, 1000, size)  # clipped at the end
    assert where[0].offset == 1000
    assert where[-1].offset + where[-1].length == size
    pos = 1000
    for r in where:
        assert r.offset == pos  # contiguous, in file order
        pos += r.length
        for off in range(r.offset, r.offset + r.length, 65536):
            assert [x.node for x in r.replicas] == expected_nodes(layout, off)
        for rep in r.replicas:
            assert rep.healthy
            assert rep.addresses == [nodes[rep.node]["addresses"]]
            assert rep.hosts == [nodes[rep.node]["addresses"].rsplit(":", 1)[0]]
    # Neighbouring stripe units on the same replicas are one range.
    for a, b in zip(where, where[1:]):
        assert [x.node for x in a.replicas] != [x.node for x in b.replicas]


def test_locate_errors(client, striped):
    path, size = striped
    assert client.locate(path, size) == []
    with pytest.raises(ValueError):  # rangefs.OutOfRange
        client.locate(path, size + 1)
    with pytest.raises(FileNotFoundError):
        client.locate("/loc/missing")


def test_local_node_is_read_first_from_its_export(cluster):
    """local_node=n2: n2 comes first in locate and serves every read,
    from its export directory (the client's mount root has no mounts)."""
    import os
    from conftest import TMP
    data = random_bytes(3 << 20, seed=5)
    cluster.put_bytes(data, "/loc/everywhere", "--replicas=3")  # on every node
    c = cluster.client(local_node="n2", data_path="mount", hedging=False,
                       mount_root=os.path.join(TMP, "no-mounts-here"))
    assert all(r.replicas[0].node == "n2" for r in c.locate("/loc/everywhere"))
    assert c.open("/loc/everywhere").readall() == data
    s = c.stats()
    assert s["local_bytes"] == len(data)
    assert s["nodes"]["n2"]["local"] and s["nodes"]["n2"]["bytes"] == len(data)
    assert all(n["requests"] == 0 for k, n in s["nodes"].items() if k != "n2")
    # Without local_node the reads spread over the replicas.
    plain = cluster.client(hedging=False)
    assert plain.open("/loc/everywhere").readall() == data
    assert plain.stats()["local_bytes"] == 0
