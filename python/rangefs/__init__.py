"""rangefs for Python: the rangefs client library, for data-mining jobs.

::

    import rangefs
    client = rangefs.Client(etcd="127.0.0.1:2379", cluster="default")
    client = rangefs.Client()        # $RANGEFS_ETCD/$RANGEFS_CLUSTER/$RANGEFS_CONFIG
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

The library's log lines go to the ``rangefs`` logger (Python ``logging``);
``rangefs.__version__`` is the release (the binaries' version).
"""

from __future__ import annotations

import contextlib
import io
import os
from importlib import metadata as _metadata
from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple, Union

from rangefs import _logging, _rangefs
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

try:
    __version__ = _metadata.version("rangefs")
except _metadata.PackageNotFoundError:  # imported from a source tree
    __version__ = "0+unknown"

_logging.install()

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
    "__version__",
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

    def __repr__(self) -> str:
        if self.closed:
            return f"rangefs.RangefsFile({self.name!r}, closed)"
        return (f"rangefs.RangefsFile({self.name!r}, size={self.size}, "
                f"generation={self.generation}, pos={self._pos})")

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


# Config file key -> rangefs.Client keyword (the keys rangefs-admin reads:
# namespace/etcd/etcd_settings.h, plus the agent TLS files and mount_root).
_CONFIG_OPTIONS = {
    "etcd_ca": "etcd_ca_file",
    "etcd_cert": "etcd_cert_file",
    "etcd_key": "etcd_key_file",
    "etcd_user": "etcd_username",
    "agent_ca": "agent_ca_file",
    "agent_cert": "agent_cert_file",
    "agent_key": "agent_key_file",
    "mount_root": "mount_root",
}
_DEFAULT_ETCD = "127.0.0.1:2379"
_DEFAULT_CLUSTER = "default"


def _first(*values: Optional[str]) -> Optional[str]:
    for v in values:
        if v:
            return v
    return None


def _settings(etcd: Optional[str], cluster: Optional[str], config: Optional[str],
              options: Dict[str, Any]) -> Tuple[str, str, Optional[str], Dict[str, Any]]:
    """(etcd, cluster, config path, options): argument > environment
    ($RANGEFS_ETCD, $RANGEFS_CLUSTER, $RANGEFS_CONFIG) > config file >
    built-in default, as every rangefs binary."""
    env = os.environ
    path = _first(config, env.get("RANGEFS_CONFIG"))
    file: Dict[str, str] = _rangefs._read_config(path) if path else {}
    endpoints = ",".join(e.strip() for e in file.get("etcd_endpoints", "").split(",")
                         if e.strip())
    etcd = _first(etcd, env.get("RANGEFS_ETCD"), endpoints, _DEFAULT_ETCD)
    cluster = _first(cluster, env.get("RANGEFS_CLUSTER"), file.get("cluster"),
                     _DEFAULT_CLUSTER)
    merged = dict(options)
    for key, option in _CONFIG_OPTIONS.items():
        if file.get(key) and option not in merged:
            merged[option] = file[key]
    pw_file = file.get("etcd_password_file")
    if pw_file and "etcd_password" not in merged:
        try:
            with open(pw_file, encoding="utf-8") as f:
                merged["etcd_password"] = f.readline().rstrip("\r\n")
        except OSError as e:
            raise InvalidArgument(
                f"INVALID_ARGUMENT: etcd_password_file {pw_file} (set in {path}): "
                f"{e.strerror}") from None
    return etcd, cluster, path, merged


class Client:
    """A rangefs client: one namespace (etcd) and its storage nodes.

    Args:
      etcd: etcd endpoints "host:port,host:port".
      cluster: the namespace's cluster name.
      config: the shared config file (deploy/config/rangefs.conf.example):
        etcd_endpoints, cluster, etcd_ca/etcd_cert/etcd_key, etcd_user,
        etcd_password_file, agent_ca/agent_cert/agent_key and mount_root.
      **options: rangefs::ClientOptions fields (client_lib/options.h) by
        name: durations in seconds (``default_deadline=5``), enums by
        lower-case name (``data_path="agent"``, ``verify="full"``), agent
        TLS as ``agent_ca_file``/``agent_cert_file``/``agent_key_file``.

    Each setting comes from the argument, else the environment
    ($RANGEFS_ETCD, $RANGEFS_CLUSTER; the file from $RANGEFS_CONFIG), else
    the config file, else the default (127.0.0.1:2379, "default"), as in
    every rangefs binary; a keyword option wins over the file's key.

    Raises rangefs.Unavailable if etcd cannot be reached and
    rangefs.InvalidArgument for a bad option or config file; errors name
    the cluster and endpoints. Thread-safe. Files opened from it keep it
    alive until they are closed.
    """

    def __init__(self, etcd: Optional[str] = None, cluster: Optional[str] = None,
                 config: Optional[str] = None, **options: Any) -> None:
        self._c = None
        etcd, cluster, path, options = _settings(etcd, cluster, config, options)
        self.etcd = etcd
        self.cluster = cluster
        self.config = path
        self.mount_root = options.get("mount_root")
        with self._naming():
            self._c = _rangefs._Client(etcd, cluster, options)

    def __repr__(self) -> str:
        state = "" if self._c is not None else ", closed"
        return f"rangefs.Client(cluster={self.cluster!r}, etcd={self.etcd!r}{state})"

    def _where(self) -> str:
        return f'in cluster "{self.cluster}" at {self.etcd}'

    def _named(self, e: Error) -> Error:
        """`e` with the cluster and endpoints in its message."""
        where = self._where()
        if where in str(e):
            return e
        named = type(e)(f"{e} {where}")
        named.code = e.code
        return named

    @contextlib.contextmanager
    def _naming(self) -> Iterator[None]:
        try:
            yield
        except Error as e:
            raise self._named(e) from None

    @property
    def _live(self) -> Any:
        if self._c is None:
            raise ValueError("rangefs.Client is closed")
        return self._c

    def open(self, path: str, revision: Optional[int] = None) -> RangefsFile:
        """Opens `path` (its current layout, or as of etcd `revision`)."""
        with self._naming():
            return RangefsFile(self._live.open(path, revision), path)

    def stat(self, path: str) -> FileInfo:
        with self._naming():
            return self._live.stat(path)

    def ls(self, dir: str = "/") -> List[FileInfo]:
        """Every file below `dir`, recursively, sorted by path.
        FileNotFoundError (rangefs.NotFound) if `dir` has no file below it
        and is not "/"; NotADirectoryError if it is a file."""
        with self._naming():
            files = self._live.ls(dir)
            if not files:
                _check_dir(self._live, dir, self._where())
            return files

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
        out = self._live.read_ranges(list(ranges), max_in_flight)
        for i, r in enumerate(out):
            if isinstance(r, NotFound):
                out[i] = self._named(r)
        return out

    def open_dataset(self, dir: str, revision: Optional[int] = None) -> "Dataset":
        """Pins the subtree `dir` as a Dataset: every file record below it
        read once, at one etcd revision (`revision`, or the latest). Blocks
        for about one etcd round trip per 1,000-10,000 files; raises
        rangefs.OutOfRange once `revision` is compacted, FileNotFoundError
        (rangefs.NotFound) if `dir` has no file below it and is not "/"."""
        with self._naming():
            d = Dataset(self._live.open_dataset(dir, revision), self.cluster)
            if d.file_count == 0:
                _check_dir(self._live, dir, self._where())
            return d

    def locate(self, path: str, offset: int = 0,
               length: Optional[int] = None) -> List[RangeLocation]:
        """Where [offset, offset+length) of `path` lives (to the end if
        length is None): ranges with their replicas' nodes and hosts, in
        the order reads try them."""
        with self._naming():
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

    def __init__(self, handle: Any, cluster: str = "") -> None:
        self._d = handle
        self.cluster = cluster

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
        """Its files below `dir` ("/": all), recursively, sorted by path;
        FileNotFoundError if none is below `dir` (and it is not "/" or the
        dataset's own directory), NotADirectoryError for a file."""
        files = self._d.ls(dir)
        if not files and dir.rstrip("/") != self.dir.rstrip("/"):
            _check_dir(self._d, dir, f"in dataset {self.dir} (revision {self.revision})")
        return files

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
        return (f"rangefs.Dataset(cluster={self.cluster!r}, dir={self.dir!r}, "
                f"revision={self.revision}, files={self.file_count}, "
                f"bytes={self.bytes})")


def _check_dir(src: Any, dir: str, where: str) -> None:
    """For an empty listing of `dir`: NotADirectoryError if it is a file,
    rangefs.NotFound unless it is the root (an empty namespace lists [])."""
    if dir.rstrip("/") == "":
        return
    try:
        src.stat(dir.rstrip("/"))
    except NotFound:
        raise NotFound(f"NOT_FOUND: directory {dir} not found {where}") from None
    except InvalidArgument:
        raise
    raise NotADirectoryError(f"{dir} is a file, not a directory ({where})")
