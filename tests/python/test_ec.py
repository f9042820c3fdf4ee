"""An erasure-coded file (file put --ec=2+1) read through the Python
package with a data cell's node SIGKILLed: the same bytes, rebuilt from the
other cells of each row (client_lib/internal/ec_read.h)."""

from __future__ import annotations

import os
import signal

import pytest

from conftest import random_bytes, start_cluster, stop_cluster


@pytest.fixture(scope="module")
def trio():
    c = start_cluster("ec", nodes=3)
    yield c
    stop_cluster(c)


def test_killed_data_cell_node_is_read_around(trio):
    cell = 64 << 10
    data = random_bytes(5 * 2 * cell + 12345, seed=11)  # 6 rows, the last partial
    trio.put_bytes(data, "/ec", "--ec=2+1", "--stripe-unit=64K", "--ec-min-rows=0")
    targets = trio.layout("/ec")["striped"]["targets"]
    assert len(targets) == 3
    data_node = targets[0]["replicas"][0]["node_id"]
    os.kill(trio.node_pid(data_node), signal.SIGKILL)
    client = trio.client(data_path="agent")
    with client.open("/ec") as f:
        got = f.read()
    assert got == data
    stats = client.stats()
    assert stats["ec_degraded_reads"] >= 1, stats
    assert stats["ec_crc_mismatches"] == 0, stats
