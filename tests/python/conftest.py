"""Fixtures of the rangefs Python tests: the real local cluster that
run_pytest.sh started (etcd + 3 rangefs-node agents), ingest through
rangefs-admin, clients, and extra clusters / FUSE layers for single tests.

Every wait is bounded; everything a fixture starts is stopped by it (and
by run_pytest.sh's trap if the process dies).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from typing import Callable, Dict, List

import pytest

import rangefs

BIN = os.environ["RANGEFS_TEST_BIN"]
CLUSTER_SH = os.environ["RANGEFS_TEST_CLUSTER_SH"]
TMP = os.environ.get("TEST_TMPDIR", "/tmp")


def wait_until(cond: Callable[[], bool], timeout: float, what: str) -> None:
    """Polls cond() until it holds; fails the test after `timeout` s. The
    bound only ends a wait that would never end: give it room for a loaded
    machine (many times slower than an idle one)."""
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.01)


class Cluster:
    """A running cluster: its etcd, name, mount root and admin commands."""

    def __init__(self, etcd: str, name: str, mount_root: str, dir: str) -> None:
        self.etcd = etcd
        self.name = name
        self.mount_root = mount_root
        self.dir = dir

    def admin(self, *args: str, json_out: bool = False) -> str:
        cmd = [f"{BIN}/rangefs-admin", f"--etcd={self.etcd}",
               f"--cluster={self.name}", "--no-progress"]
        if json_out:
            cmd.append("--json")
        r = subprocess.run(cmd + list(args), capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, f"rangefs-admin {args}: {r.stdout}{r.stderr}"
        return r.stdout

    def put(self, local: str, path: str, *opts: str) -> None:
        self.admin("file", "put", local, path, *opts)

    def put_bytes(self, data: bytes, path: str, *opts: str) -> None:
        local = os.path.join(TMP, "put-" + path.strip("/").replace("/", "_"))
        with open(local, "wb") as f:
            f.write(data)
        self.put(local, path, *opts)

    def layout(self, path: str) -> dict:
        return json.loads(self.admin("file", "layout", path))

    def nodes(self) -> Dict[str, dict]:
        return {n["id"]: n for n in json.loads(self.admin("node", "list", json_out=True))}

    def etcd_pids(self) -> List[int]:
        """Every etcd member's pid (cluster.sh's run/etcd-m*.pid)."""
        run = os.path.join(self.dir, "run")
        pids = []
        for name in sorted(os.listdir(run)):
            if name.startswith("etcd-m") and name.endswith(".pid"):
                with open(os.path.join(run, name)) as f:
                    pids.append(int(f.read().split()[0]))
        assert pids, f"no etcd pid files in {run}"
        return pids

    def node_pid(self, node: str) -> int:
        with open(os.path.join(self.dir, "run", f"node-{node}.pid")) as f:
            return int(f.read().split()[0])

    def client(self, **options) -> rangefs.Client:
        options.setdefault("mount_root", self.mount_root)
        options.setdefault("default_deadline", 30)
        return rangefs.Client(etcd=self.etcd, cluster=self.name, **options)


@pytest.fixture(scope="session")
def cluster() -> Cluster:
    return Cluster(os.environ["RANGEFS_ETCD"], os.environ["RANGEFS_CLUSTER"],
                   os.environ["MOUNT_ROOT"], os.environ["RANGEFS_TEST_CLUSTER_DIR"])


@pytest.fixture(scope="session")
def client(cluster: Cluster) -> rangefs.Client:
    return cluster.client()


def start_cluster(name: str, nodes: int, *flags: str) -> Cluster:
    """Another cluster (its own etcd and agents) in $TEST_TMPDIR/extra-NAME,
    `flags` passed to `cluster.sh up` (e.g. --nfs); stop it with
    stop_cluster."""
    d = os.path.join(TMP, f"extra-{name}")
    r = subprocess.run(["bash", CLUSTER_SH, "up", f"--dir={d}", f"--nodes={nodes}",
                        f"--bin={BIN}", f"--cluster={name}", *flags],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"cluster up: {r.stderr}"
    env = dict(kv.split("=", 1) for kv in r.stdout.strip().splitlines()[-1].split())
    return Cluster(env["RANGEFS_ETCD"], env["RANGEFS_CLUSTER"], env["MOUNT_ROOT"], d)


def stop_cluster(c: Cluster) -> None:
    subprocess.run(["bash", CLUSTER_SH, "down", f"--dir={c.dir}", "--purge"],
                   capture_output=True, timeout=120)


class SlowMount:
    """blocking_fuse over the cluster's export directories, every data read
    delayed `delay_ms`; mount_root has one link per node into it."""

    def __init__(self, cluster: Cluster, delay_ms: int) -> None:
        exports = os.path.join(cluster.dir, "exports")
        base = os.path.join(TMP, f"slow-{delay_ms}")
        self.mountpoint = os.path.join(base, "fuse")
        self.mount_root = os.path.join(base, "mnt")
        os.makedirs(self.mountpoint, exist_ok=True)
        os.makedirs(self.mount_root, exist_ok=True)
        self.log = open(os.path.join(base, "fuse.log"), "w")
        env = dict(os.environ, BLOCKING_FUSE_DELAY_MS=str(delay_ms))
        self.proc = subprocess.Popen(
            [f"{BIN}/blocking_fuse", exports, os.path.join(base, "no-control"),
             self.mountpoint, "-f", "-o", "allow_other"],
            stdout=self.log, stderr=subprocess.STDOUT, env=env)
        with open(os.path.join(TMP, f"fuse-{delay_ms}.pid"), "w") as f:
            f.write(str(self.proc.pid))
        for node in os.listdir(exports):
            link = os.path.join(self.mount_root, node)
            if not os.path.lexists(link):
                os.symlink(os.path.join(self.mountpoint, node), link)
        wait_until(lambda: os.path.ismount(self.mountpoint), 60, "the FUSE mount")

    def close(self) -> None:
        subprocess.run(["fusermount3", "-u", "-z", self.mountpoint],
                       capture_output=True, timeout=30)
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)
        self.log.close()


def random_bytes(n: int, seed: int) -> bytes:
    import numpy as np
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8).tobytes()


def error_names(results: List[object]) -> List[str]:
    return [type(r).__name__ if isinstance(r, Exception) else "bytes" for r in results]
