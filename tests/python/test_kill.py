"""A storage node SIGKILLed while reads run: no error, same bytes."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from conftest import random_bytes, start_cluster, stop_cluster, wait_until


@pytest.fixture(scope="module")
def pair():
    c = start_cluster("kill", nodes=2)
    yield c
    stop_cluster(c)


def test_node_killed_mid_read_is_no_error(pair):
    data = random_bytes(32 << 20, seed=7)
    pair.put_bytes(data, "/big", "--replicas=2")  # every byte on both nodes
    client = pair.client(data_path="agent")
    stop = threading.Event()
    passes = [0, 0]
    errors = []

    def reader(i):
        # Whole passes over the file in 1 MiB readinto calls, until stopped.
        got = bytearray(len(data))
        view = memoryview(got)
        try:
            while not stop.is_set():
                with client.open("/big") as f:
                    pos = 0
                    while pos < len(data):
                        n = f.readinto(view[pos:pos + (1 << 20)])
                        assert n > 0, f"0 bytes at {pos}"
                        pos += n
                assert got == data, f"pass {passes[i]}: bytes differ"
                passes[i] += 1
        except BaseException as e:  # reported by the test
            errors.append(e)

    threads = [threading.Thread(target=reader, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    try:
        wait_until(lambda: min(passes) >= 1 or errors, 60, "a first pass")
        os.kill(pair.node_pid("n1"), signal.SIGKILL)  # reads are running
        at_kill = list(passes)
        wait_until(lambda: min(p - k for p, k in zip(passes, at_kill)) >= 2 or errors,
                   60, "two passes after the kill")
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
    assert not errors, errors
    assert not any(t.is_alive() for t in threads)
    # n1 is now judged dead: the client reads n2 first, n1 only as a last resort.
    wait_until(lambda: [r.healthy for r in client.locate("/big", 0, 1)[0].replicas]
               == [True, False], 60, "n1 listed last, not healthy")
    assert [r.node for r in client.locate("/big", 0, 1)[0].replicas] == ["n2", "n1"]
    assert client.stats()["nodes"]["n2"]["bytes"] > 0
