"""Builds the rangefs wheel from the package sources and a built extension.

    python3 python/build_wheel.py --so bazel-bin/python/rangefs/_rangefs.so \
        --out DIR [--python-tag cp311 --platform linux_x86_64]

Writes DIR/rangefs-VERSION-TAG-TAG-PLATFORM.whl and prints its path. The
tags default to the running interpreter's (``cp311-cp311-linux_x86_64`` for
Debian 12's /usr/bin/python3, whose headers the extension is built
against): the wheel carries a CPython extension, so it is not
``py3-none-any``.

The wheel links Debian's shared libraries (gRPC, protobuf, Abseil,
OpenSSL, liburing...); ``auditwheel repair`` (python/install.sh,
tests/python/test_wheel.py) copies them into the wheel and retags it
``manylinux_2_36_x86_64``. Stdlib only, no setuptools: a wheel is a zip of
the package plus ``*.dist-info`` (PEP 427), written here in a few lines,
its metadata from pyproject.toml's [project] table (tomllib: Python 3.11+).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import os
import re
import sys
import sysconfig
import tomllib
import zipfile
from typing import Any, Dict, List, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
NAME = "rangefs"


def project(pyproject: str) -> Dict[str, Any]:
    """pyproject.toml's [project] table: name, version, entry points..."""
    with open(pyproject, "rb") as f:
        p = tomllib.load(f)["project"]
    if p.get("name") != NAME or not p.get("version"):
        raise SystemExit(f"build_wheel: {pyproject}: [project] name must be "
                         f"{NAME!r}, with a version")
    return p


def default_tags() -> Tuple[str, str]:
    """(python tag, platform tag) of the running interpreter."""
    impl = {"cpython": "cp"}.get(sys.implementation.name, sys.implementation.name)
    py = f"{impl}{sys.version_info.major}{sys.version_info.minor}"
    plat = re.sub(r"[-.]", "_", sysconfig.get_platform())
    return py, plat


def record_line(arcname: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return f"{arcname},sha256={digest.decode()},{len(data)}"


def package_files(src: str, so: str) -> List[Tuple[str, str]]:
    """(archive name, source path) of every file the package ships."""
    pkg = os.path.join(src, NAME)
    names = sorted(n for n in os.listdir(pkg)
                   if n.endswith((".py", ".pyi")) or n == "py.typed")
    files = [(f"{NAME}/{n}", os.path.join(pkg, n)) for n in names]
    return files + [(f"{NAME}/_rangefs.so", so)]


def metadata(p: Dict[str, Any]) -> str:
    lines = [f"Metadata-Version: 2.1", f"Name: {p['name']}",
             f"Version: {p['version']}", f"Summary: {p.get('description', '')}"]
    if "requires-python" in p:
        lines.append(f"Requires-Python: {p['requires-python']}")
    lines += [f"Requires-Dist: {d}" for d in p.get("dependencies", [])]
    for extra, deps in sorted(p.get("optional-dependencies", {}).items()):
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {d}; extra == "{extra}"' for d in deps]
    return "\n".join(lines) + "\n"


def entry_points(p: Dict[str, Any]) -> str:
    out = []
    for group, entries in sorted(p.get("entry-points", {}).items()):
        out.append(f"[{group}]")
        out += [f"{k} = {v}" for k, v in sorted(entries.items())]
    return "\n".join(out) + "\n"


def build(so: str, out: str, py: str, plat: str, src: str = HERE) -> str:
    p = project(os.path.join(src, "pyproject.toml"))
    version = p["version"]
    tag = f"{py}-{py}-{plat}"
    info = f"{NAME}-{version}.dist-info"
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, f"{NAME}-{version}-{tag}.whl")
    meta = {
        "METADATA": metadata(p),
        "WHEEL": ("Wheel-Version: 1.0\nGenerator: rangefs build_wheel.py\n"
                  f"Root-Is-Purelib: false\nTag: {tag}\n"),
        "entry_points.txt": entry_points(p),
        "top_level.txt": f"{NAME}\n",
    }
    records = []
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for arcname, source in package_files(src, so):
            with open(source, "rb") as f:
                data = f.read()
            zi = zipfile.ZipInfo(arcname, date_time=(1980, 1, 1, 0, 0, 0))
            zi.external_attr = (0o755 if arcname.endswith(".so") else 0o644) << 16
            z.writestr(zi, data, zipfile.ZIP_DEFLATED)
            records.append(record_line(arcname, data))
        for name, text in meta.items():
            data = text.encode()
            z.writestr(f"{info}/{name}", data)
            records.append(record_line(f"{info}/{name}", data))
        records.append(f"{info}/RECORD,,")
        z.writestr(f"{info}/RECORD", "\n".join(records) + "\n")
    return path


def main() -> None:
    py, plat = default_tags()
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--so", required=True, help="the built _rangefs.so")
    p.add_argument("--out", required=True, help="directory for the wheel")
    p.add_argument("--python-tag", default=py, help=f"default {py}")
    p.add_argument("--platform", default=plat, help=f"default {plat}")
    a = p.parse_args()
    print(build(a.so, a.out, a.python_tag, a.platform))


if __name__ == "__main__":
    main()
