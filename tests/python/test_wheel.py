"""The wheel as a user gets it: run_pytest.sh built it from the extension
Bazel made for this test run (python/build_wheel.py) and auditwheel
repaired it. Here it is pip-installed from the file into a fresh
virtualenv and used against the real cluster from a directory outside the
source tree, with nothing of the build tree on the path."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from conftest import TMP

WHEEL = os.environ["RANGEFS_TEST_WHEEL"]
PY_TAG = f"cp{sys.version_info.major}{sys.version_info.minor}"

# What a manylinux wheel may leave to the system (auditwheel's policy
# whitelist: glibc, the C++ runtime, zlib).
SYSTEM_LIBS = re.compile(r"^(linux-vdso|ld-linux-x86-64|libc|libm|libstdc\+\+|"
                         r"libgcc_s|libpthread|libdl|librt|libz)\.so")


def test_the_wheel_is_tagged_for_its_extension():
    name = os.path.basename(WHEEL)
    m = re.fullmatch(r"rangefs-([^-]+)-(\w+)-(\w+)-(manylinux_2_\d+_x86_64)\.whl", name)
    assert m, f"{name}: not a CPython manylinux wheel (py3-none-any is wrong: it "
    assert m.group(2) == m.group(3) == PY_TAG, name


@pytest.fixture(scope="module")
def fresh_venv():
    """A new virtualenv with only the wheel installed, by pip, from the file."""
    d = os.path.join(TMP, "fresh-venv")
    subprocess.run(["/usr/bin/python3", "-m", "venv", d], check=True, timeout=300,
                   env=outside_env())
    r = subprocess.run([f"{d}/bin/pip", "install", "-q", "--disable-pip-version-check",
                        "--no-index", WHEEL], capture_output=True, text=True, timeout=300,
                       env=outside_env())
    assert r.returncode == 0, r.stdout + r.stderr
    return d


def outside_env() -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTHON", "TEST_", "RUNFILES"))}
    env["PYTHONNOUSERSITE"] = "1"
    return env


def test_fresh_venv_imports_and_reads_the_cluster(cluster, fresh_venv):
    data = os.urandom(300_000)
    cluster.put_bytes(data, "/wheel/blob")
    work = os.path.join(TMP, "outside")  # not the source tree, not the site dir
    os.makedirs(work, exist_ok=True)
    script = f"""
import rangefs, sys
assert rangefs.__file__.startswith({fresh_venv!r}), rangefs.__file__
c = rangefs.Client(etcd={cluster.etcd!r}, cluster={cluster.name!r},
                   mount_root={cluster.mount_root!r})
with c.open("/wheel/blob") as f:
    sys.stdout.buffer.write(f.readall())
print(rangefs.__version__, repr(c), file=sys.stderr)
"""
    r = subprocess.run([f"{fresh_venv}/bin/python", "-c", script], cwd=work,
                       env=outside_env(), capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout == data
    version = os.path.basename(WHEEL).split("-")[1]
    assert r.stderr.decode().startswith(f"{version} rangefs.Client(cluster="), r.stderr


def test_the_extension_needs_nothing_outside_the_wheel(fresh_venv):
    """Every library the extension loads, other than glibc and the C++
    runtime (and zlib), is one the wheel carries (rangefs.libs), not Debian's."""
    r = subprocess.run([f"{fresh_venv}/bin/python", "-c",
                        "import rangefs._rangefs as m; print(m.__file__)"],
                       env=outside_env(), capture_output=True, text=True, timeout=60,
                       cwd=TMP)
    assert r.returncode == 0, r.stderr
    so = r.stdout.strip()
    ldd = subprocess.run(["ldd", so], capture_output=True, text=True, timeout=60).stdout
    libs = dict(re.findall(r"^\s*(\S+)\s+=>\s+(\S+)", ldd, re.M))
    assert any(name.startswith("libgrpc") for name in libs), ldd
    outside = {name: path for name, path in libs.items()
               if not SYSTEM_LIBS.match(name) and "/rangefs.libs/" not in path}
    assert not outside, f"loaded from outside the wheel: {outside}"
