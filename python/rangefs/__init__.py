"""rangefs for Python: the rangefs client library, for data-mining jobs.

::

    import rangefs
    client = rangefs.Client(etcd="127.0.0.1:2379", cluster="default")
    with client.open("/crawl/seg-0001") as f:      # io.RawIOBase
        buf = bytearray(1 << 20)
        n = f.readinto(buf)                          # no copy
    parts = client.read_ranges([("/a", 0, 4096), ("/b", 8192, 4096)])
    # parts[i]: bytes, or the exception for that range (one ReadV)

Every call that waits (etcd, storage nodes) releases the GIL, so threads
read in parallel. Errors are :mod:`rangefs.errors` exceptions, which also
derive from the matching built-ins (``FileNotFoundError``,
``TimeoutError``, ``ConnectionError``, ``ValueError``...).

``rangefs.fsspec.RangefsFileSystem`` is the fsspec file system for
``rangefs://CLUSTER/path`` URLs (pandas, pyarrow, Dask).
"""

from __future__ import annotations

import io
import os
from typing import Any, Iterable, List, Optional, Tuple, Union

from rangefs import _rangefs
from rangefs.errors import (
    Aborted,
    Cancelled,
    DataLoss,
    DeadlineExceeded,
    Error,
    InvalidArgument,
    NotFound,
    NotReady,
    OutOfRange,
    PermissionDenied,
    Unavailable,
)

FileInfo = _rangefs.FileInfo
RangeLocation = _rangefs.RangeLocation
ReplicaLocation = _rangefs.ReplicaLocation

__all__ = [
    "Aborted",
    "Cancelled",
    "Client",
    "DataLoss",
    "DeadlineExceeded",
    "Error",
    "FileInfo",
    "InvalidArgument",
    "NotFound",
    "NotReady",
    "OutOfRange",
    "PermissionDenied",
    "RangeLocation",
    "RangefsFile",
    "ReplicaLocation",
    "Unavailable",
]

# A range read's result: the bytes, or the exception for that range.
RangeResult = Union[bytes, Error]


class RangefsFile(io.RawIOBase):
    """An open rangefs file as a read-only, seekable binary file.

    One layout snapshot of the file (``client.open``). ``readinto`` reads
    straight into the caller's writable buffer (``bytearray``,
    ``memoryview``, a C-contiguous NumPy array) with no copy and the GIL
    released. Wrap it in ``io.BufferedReader`` for many small reads.
    Not thread-safe (the position); open one per thread, or use
    ``pread_into`` / ``read_ranges``, which take no position.
    """

    def __init__(self, handle: Any, name: str) -> None:
        super().__init__()
        self._f = handle
        self._pos = 0
        self.name = name

    @property
    def size(self) -> int:
        """The file's size in bytes."""
        return self._f.size

    @property
    def generation(self) -> int:
        return self._f.generation

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        """Reads up to len(buffer) bytes at the position into `buffer`."""
        self._check_open()
        if self._pos >= self._f.size:
            return 0  # at or past the end (after a seek there)
        n = self._f.pread_into(self._pos, buffer)
        self._pos += n
        return n

    def readall(self) -> bytes:
        """The rest of the file, in one parallel read."""
        self._check_open()
        data = self._f.pread(self._pos, max(0, self._f.size - self._pos))
        self._pos += len(data)
        return data

    def read(self, size: int = -1) -> bytes:
        self._check_open()
        if size is None or size < 0:
            return self.readall()
        if self._pos >= self._f.size:
            return b""
        data = self._f.pread(self._pos, size)
        self._pos += len(data)
        return data

    def pread_into(self, offset: int, buffer: Any) -> int:
        """Reads at `offset` into `buffer` (no copy); the position stays."""
        self._check_open()
        return self._f.pread_into(offset, buffer)

    def read_ranges(self, ranges: Iterable[Tuple[int, int]]) -> List[RangeResult]:
        """[(offset, length), ...] in one parallel batch (File::ReadV)."""
        self._check_open()
        return self._f.read_ranges(list(ranges))

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self._check_open()
        if whence == io.SEEK_SET:
            pos = offset
        elif whence == io.SEEK_CUR:
            pos = self._pos + offset
        elif whence == io.SEEK_END:
            pos = self._f.size + offset
        else:
            raise ValueError(f"invalid whence {whence}")
        if pos < 0:
            raise ValueError(f"negative seek position {pos}")
        self._pos = pos
        return pos

    def tell(self) -> int:
        self._check_open()
        return self._pos

    def close(self) -> None:
        if not self.closed:
            self._f = None  # drops the File (before its Client)
        super().close()

    def _check_open(self) -> None:
        if self.closed:
            raise ValueError("I/O operation on closed file")


class Client:
    """A rangefs client: one namespace (etcd) and its storage nodes.

    Args:
      etcd: etcd endpoints "host:port,host:port"; default $RANGEFS_ETCD.
      cluster: the namespace's cluster name; default $RANGEFS_CLUSTER or
        "default".
      **options: rangefs::ClientOptions fields (client_lib/options.h) by
        name: durations in seconds (``default_deadline=5``), enums by
        lower-case name (``data_path="agent"``, ``verify="full"``), agent
        TLS as ``agent_ca_file``/``agent_cert_file``/``agent_key_file``.

    Raises rangefs.Unavailable if etcd cannot be reached and
    rangefs.InvalidArgument for a bad option. Thread-safe. Files opened
    from it keep it alive until they are closed.
    """

    def __init__(self, etcd: Optional[str] = None, cluster: Optional[str] = None,
                 **options: Any) -> None:
        etcd = etcd if etcd is not None else os.environ.get("RANGEFS_ETCD", "")
        if not etcd:
            raise InvalidArgument(
                "INVALID_ARGUMENT: no etcd endpoints (etcd= or $RANGEFS_ETCD)")
        cluster = cluster or os.environ.get("RANGEFS_CLUSTER", "default")
        self.etcd = etcd
        self.cluster = cluster
        self._c = _rangefs._Client(etcd, cluster, options)

    @property
    def _live(self) -> Any:
        if self._c is None:
            raise ValueError("rangefs.Client is closed")
        return self._c

    def open(self, path: str, revision: Optional[int] = None) -> RangefsFile:
        """Opens `path` (its current layout, or as of etcd `revision`)."""
        return RangefsFile(self._live.open(path, revision), path)

    def stat(self, path: str) -> FileInfo:
        return self._live.stat(path)

    def ls(self, dir: str = "/") -> List[FileInfo]:
        """Every file below `dir`, recursively, sorted by path."""
        return self._live.ls(dir)

    def read_ranges(self, ranges: Iterable[Tuple[str, int, int]]) -> List[RangeResult]:
        """Reads [(path, offset, length), ...] in one parallel batch.

        One Client::ReadV over all ranges (each file opened once). Returns
        one entry per range: its bytes (short only at the end of the file)
        or the exception for that range (e.g. rangefs.NotFound); a bad
        range does not fail the others.
        """
        return self._live.read_ranges(list(ranges))

    def locate(self, path: str, offset: int = 0,
               length: Optional[int] = None) -> List[RangeLocation]:
        """Where [offset, offset+length) of `path` lives (to the end if
        length is None): ranges with their replicas' nodes and hosts, in
        the order reads try them."""
        return self._live.locate(path, offset, length)

    def stats(self) -> dict:
        """The client's counters (client_lib/stats.h) as nested dicts."""
        return self._live.stats()

    def prometheus_text(self) -> str:
        return self._live.prometheus_text()

    def close(self) -> None:
        """Drops this object's reference; the client ends when its last
        open file is closed too."""
        self._c = None

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
