"""rangefs for Python: the rangefs client library, for data-mining jobs.

::

    import rangefs
    client = rangefs.Client(etcd="127.0.0.1:2379", cluster="default")
    with client.open("/crawl/seg-0001") as f:      # io.RawIOBase
        buf = bytearray(1 << 20)
        n = f.readinto(buf)                          # no copy
    parts = client.read_ranges([("/a", 0, 4096), ("/b", 8192, 4096)])
    # parts[i]: bytes, or the exception for that range (one ReadV)
    ds = client.open_dataset("/crawl")               # pinned, no etcd after
    for info in ds.ls():
        with ds.open(info.path) as f: ...

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
    "Dataset",
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

    def read_ranges(
        self, ranges: Iterable[Tuple[int, int]], max_in_flight: Optional[int] = None
    ) -> List[RangeResult]:
        """[(offset, length), ...] in one parallel batch (File::ReadV); at
        most `max_in_flight` pieces at once when given (as Client.read_ranges)."""
        self._check_open()
        return self._f.read_ranges(list(ranges), max_in_flight)

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

    def read_ranges(
        self,
        ranges: Iterable[Tuple[str, int, int]],
        max_in_flight: Optional[int] = None,
    ) -> List[RangeResult]:
        """Reads [(path, offset, length), ...] in one parallel batch.

        One Client::ReadV over all ranges (each file opened once). Returns
        one entry per range: its bytes (short only at the end of the file)
        or the exception for that range (e.g. rangefs.NotFound); a bad
        range does not fail the others. With `max_in_flight`, at most that
        many pieces are read at once, the next as soon as one ends
        (ReadOptions::max_in_flight): many small ranges in one call then
        keep that queue depth all along. Negative: ValueError.
        """
        return self._live.read_ranges(list(ranges), max_in_flight)

    def open_dataset(self, dir: str, revision: Optional[int] = None) -> "Dataset":
        """Pins the subtree `dir` as a Dataset: every file record below it
        read once, at one etcd revision (`revision`, or the latest). Blocks
        for about one etcd round trip per 1,000-10,000 files; raises
        rangefs.OutOfRange once `revision` is compacted."""
        return Dataset(self._live.open_dataset(dir, revision))

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


class Dataset:
    """A pinned dataset (``Client.open_dataset``): the files below one
    directory as of one etcd revision, for jobs that open many files.

    ``ls``, ``stat`` and ``open`` work from memory and never touch etcd:
    they keep working while etcd is down, and every file is as of
    ``revision`` whatever is removed, renamed or replaced afterwards (the
    old bytes stay readable as long as their objects are on the nodes).
    Reads go to the storage nodes with the GIL released. Paths are absolute
    ("/dir/part-0001"). Thread-safe; keeps its Client alive.
    """

    def __init__(self, handle: Any) -> None:
        self._d = handle

    @property
    def dir(self) -> str:
        """The directory it pins."""
        return self._d.dir

    @property
    def revision(self) -> int:
        """The etcd revision of its snapshot."""
        return self._d.revision

    @property
    def file_count(self) -> int:
        """Its files, including ones whose record is invalid."""
        return self._d.file_count

    @property
    def bytes(self) -> int:
        """The total size of its valid files."""
        return self._d.bytes

    @property
    def invalid_count(self) -> int:
        """Files whose etcd record failed validation (each fails alone,
        with rangefs.DataLoss)."""
        return self._d.invalid_count

    def ls(self, dir: str = "/") -> List[FileInfo]:
        """Its files below `dir` ("/": all), recursively, sorted by path."""
        return self._d.ls(dir)

    def stat(self, path: str) -> FileInfo:
        """rangefs.NotFound if `path` is not in the dataset."""
        return self._d.stat(path)

    def open(self, path: str) -> RangefsFile:
        """Opens `path` as of the dataset's revision (no etcd request)."""
        return RangefsFile(self._d.open(path), path)

    def read_ranges(
        self,
        ranges: Iterable[Tuple[str, int, int]],
        max_in_flight: Optional[int] = None,
    ) -> List[RangeResult]:
        """As Client.read_ranges, over the dataset's files: one parallel
        batch; per range its bytes or its exception (rangefs.NotFound for a
        path outside the dataset)."""
        return self._d.read_ranges(list(ranges), max_in_flight)

    def __len__(self) -> int:
        return self._d.file_count

    def __repr__(self) -> str:
        return (f"rangefs.Dataset(dir={self.dir!r}, revision={self.revision}, "
                f"files={self.file_count}, bytes={self.bytes})")
