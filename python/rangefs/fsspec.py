"""fsspec file system for rangefs: ``rangefs://CLUSTER/path`` URLs.

Registered for the ``rangefs`` protocol through the ``fsspec.specs``
entry point (python/pyproject.toml), so, with ``RANGEFS_ETCD`` set (or
``storage_options={"etcd": "host:port"}``)::

    pandas.read_parquet("rangefs://default/data/t.parquet")
    dask.dataframe.read_parquet("rangefs://default/data/*.parquet")
    fs = fsspec.filesystem("rangefs", etcd="127.0.0.1:2379")
    pyarrow.parquet.read_table("/data/t.parquet", columns=["a"],
        filesystem=pyarrow.fs.PyFileSystem(pyarrow.fs.FSSpecHandler(fs)))

Read-only. Paths inside the file system are absolute ("/data/t.parquet");
the URL's host part is the cluster name (empty: $RANGEFS_CLUSTER or
"default"). Directories are implied by file paths, as in object stores.
``cat_ranges`` is one parallel ReadV over all its ranges; ``open`` returns
an fsspec buffered file whose reads go through the client library.

Pinned to a dataset (``dataset="/dir"``, optionally ``revision=R``; in a
URL ``rangefs://CLUSTER/dir/f.parquet?dataset=/dir&revision=R``), the file
system serves ``ls``/``info``/``find``/``open``/``cat_ranges`` from one
``rangefs.Dataset``: the files below that directory as of one etcd
revision, with no etcd request per file, still readable while etcd is down
and unchanged by later removals or re-puts. Only the dataset's files are
visible. A pickled instance (Dask workers) is pinned to the same
revision. fsspec caches instances by their arguments: with no revision, a
later ``fsspec.filesystem(..., dataset=...)`` returns the instance pinned
first; ``skip_instance_cache=True`` pins the latest revision anew.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional
from urllib.parse import parse_qs

from fsspec.spec import AbstractBufferedFile, AbstractFileSystem, make_instance
from fsspec.utils import stringify_path

import rangefs
from rangefs.errors import NotFound

_PREFIX = "rangefs://"


def _file_entry(info: Any) -> Dict[str, Any]:
    return {
        "name": info.path,
        "size": info.size,
        "type": "file",
        "file_id": info.file_id,
        "generation": info.generation,
        "mod_revision": info.mod_revision,
        "ready": info.ready,
    }


def _dir_entry(path: str) -> Dict[str, Any]:
    return {"name": path, "size": 0, "type": "directory"}


def _below(src: Any, path: str) -> List[Any]:
    """src.ls(path), or [] where it raises for a missing directory or a
    file (fsspec then asks info())."""
    try:
        return src.ls(path)
    except (FileNotFoundError, NotADirectoryError):
        return []


class RangefsFileSystem(AbstractFileSystem):
    """fsspec file system over rangefs.Client.

    Args:
      etcd: etcd endpoints; default $RANGEFS_ETCD, the config file's, or
        127.0.0.1:2379.
      cluster: cluster name; default from the URL, $RANGEFS_CLUSTER, the
        config file's or "default".
      config: the shared config file (default $RANGEFS_CONFIG), as
        rangefs.Client(config=...).
      dataset: pin the file system to the dataset of this directory
        (rangefs.Client.open_dataset): only its files, as of one revision.
      revision: the dataset's etcd revision (default: the latest).
      **client_options: passed to rangefs.Client (e.g. data_path="agent").
    """

    protocol = "rangefs"
    root_marker = "/"

    def __init__(self, etcd: Optional[str] = None, cluster: Optional[str] = None,
                 dataset: Optional[str] = None, revision: Optional[int] = None,
                 **client_options: Any) -> None:
        fs_options = {k: client_options.pop(k) for k in list(client_options)
                      if k in ("use_listings_cache", "listings_expiry_time",
                               "max_paths", "skip_instance_cache", "asynchronous",
                               "loop")}
        super().__init__(**fs_options)
        self.client = rangefs.Client(etcd=etcd, cluster=cluster, **client_options)
        self.cluster = self.client.cluster
        self.dataset: Optional[rangefs.Dataset] = None
        # Where ls/stat/open/read_ranges go: the dataset, or the namespace.
        self._src: Any = self.client
        if dataset is not None:
            rev = None if revision is None else int(revision)
            self.dataset = self.client.open_dataset(dataset, rev)
            self._src = self.dataset
        elif revision is not None:
            raise ValueError("revision= needs dataset=")

    def __reduce__(self) -> Any:
        """Pickled (Dask workers): a copy pinned to the same revision."""
        options = dict(self.storage_options)
        if self.dataset is not None:
            options["revision"] = self.dataset.revision
        return make_instance, (type(self), self.storage_args, options)

    # --- paths ---

    @classmethod
    def _strip_protocol(cls, path: Any) -> Any:
        if isinstance(path, list):
            return [cls._strip_protocol(p) for p in path]
        path = stringify_path(path)
        if path.startswith(_PREFIX):
            rest = path[len(_PREFIX):].split("?", 1)[0]
            slash = rest.find("/")
            path = "/" if slash < 0 else rest[slash:]
        path = "/" + path.lstrip("/")
        return path.rstrip("/") or "/"

    @staticmethod
    def _get_kwargs_from_urls(path: str) -> Dict[str, Any]:
        """The URL's cluster, and its ?dataset=/dir&revision=R options."""
        out: Dict[str, Any] = {}
        if isinstance(path, str) and path.startswith(_PREFIX):
            rest, _, query = path[len(_PREFIX):].partition("?")
            cluster = rest.split("/", 1)[0]
            if cluster:
                out["cluster"] = cluster
            for key, values in parse_qs(query, strict_parsing=bool(query)).items():
                if key not in ("dataset", "revision"):
                    raise ValueError(f"unknown rangefs URL option {key!r} in {path}")
                out[key] = int(values[-1]) if key == "revision" else values[-1]
        return out

    def unstrip_protocol(self, name: str) -> str:
        return f"{_PREFIX}{self.cluster}{self._strip_protocol(name)}"

    # --- listing ---

    def _children(self, path: str) -> List[Dict[str, Any]]:
        """Files and implied directories right below `path`."""
        prefix = path.rstrip("/") + "/"
        out: Dict[str, Dict[str, Any]] = {}
        for f in _below(self._src, path):
            if not f.path.startswith(prefix):
                continue
            rel = f.path[len(prefix):]
            head, sep, _ = rel.partition("/")
            if sep:
                name = prefix + head
                out.setdefault(name, _dir_entry(name))
            else:
                out[f.path] = _file_entry(f)
        return [out[k] for k in sorted(out)]

    def ls(self, path: str, detail: bool = True, **kwargs: Any) -> List[Any]:
        path = self._strip_protocol(path)
        entries = self._children(path)
        if not entries:
            entries = [self.info(path)]  # a file, or FileNotFoundError
            if entries[0]["type"] == "directory":
                entries = []
        return entries if detail else [e["name"] for e in entries]

    def info(self, path: str, **kwargs: Any) -> Dict[str, Any]:
        path = self._strip_protocol(path)
        if path == "/":
            return _dir_entry("/")
        try:
            return _file_entry(self._src.stat(path))
        except NotFound:
            pass
        if _below(self._src, path):
            return _dir_entry(path)
        raise FileNotFoundError(path)

    def find(self, path: str, maxdepth: Optional[int] = None,
             withdirs: bool = False, detail: bool = False, **kwargs: Any) -> Any:
        path = self._strip_protocol(path)
        prefix = path.rstrip("/") + "/"
        out: Dict[str, Dict[str, Any]] = {}
        for f in _below(self._src, path):
            if not f.path.startswith(prefix):
                continue
            parts = f.path[len(prefix):].split("/")
            if maxdepth is not None and len(parts) > maxdepth:
                if withdirs:
                    for d in range(1, maxdepth + 1):
                        name = prefix + "/".join(parts[:d])
                        out.setdefault(name, _dir_entry(name))
                continue
            out[f.path] = _file_entry(f)
            if withdirs:
                for d in range(1, len(parts)):
                    name = prefix + "/".join(parts[:d])
                    out.setdefault(name, _dir_entry(name))
        if not out and path != "/":
            try:
                out[path] = _file_entry(self._src.stat(path))
            except NotFound:
                pass
        if withdirs and out and path != "/" and path not in out:
            out[path] = _dir_entry(path)
        names = sorted(out)
        return {n: out[n] for n in names} if detail else names

    # --- reading ---

    def _open(self, path: str, mode: str = "rb", block_size: Any = None,
              autocommit: bool = True, cache_options: Any = None,
              **kwargs: Any) -> "RangefsBufferedFile":
        if mode != "rb":
            raise PermissionError(f"rangefs is read-only: mode {mode!r} for {path}")
        return RangefsBufferedFile(self, self._strip_protocol(path), mode=mode,
                                   block_size=block_size, cache_options=cache_options,
                                   **kwargs)

    def cat_file(self, path: str, start: Optional[int] = None,
                 end: Optional[int] = None, **kwargs: Any) -> bytes:
        """Through the client's kept File of `path` (as cat_ranges), not a
        File opened per call: a new File starts a new readahead stream, so
        a job reading a file in consecutive cat_file calls would never get
        the kernel to read ahead of it (and would pay an open per call)."""
        return self.cat_ranges([path], [start], [end], on_error="raise")[0]

    def cat_ranges(self, paths: List[str], starts: Any, ends: Any,
                   max_gap: Any = None, on_error: str = "return",
                   **kwargs: Any) -> List[Any]:
        """All ranges in one parallel Client::ReadV."""
        n = len(paths)
        starts = [starts] * n if not isinstance(starts, list) else starts
        ends = [ends] * n if not isinstance(ends, list) else ends
        if len(starts) != n or len(ends) != n:
            raise ValueError("paths, starts and ends must have the same length")
        paths = [self._strip_protocol(p) for p in paths]
        sizes: Dict[str, Any] = {}
        ranges = []
        for p, s, e in zip(paths, starts, ends):
            if e is None or e < 0 or (s is not None and s < 0):
                if p not in sizes:
                    try:
                        sizes[p] = self._src.stat(p).size
                    except rangefs.Error as err:
                        sizes[p] = err
                size = sizes[p]
                if isinstance(size, Exception):
                    ranges.append((p, 0, 0, size))
                    continue
                lo, hi = _bounds(s, e, size)
            else:
                lo, hi = s or 0, e
            ranges.append((p, lo, max(0, hi - lo), None))
        got = self._src.read_ranges([(p, lo, ln) for p, lo, ln, _ in ranges])
        out = [r[3] if r[3] is not None else g for r, g in zip(ranges, got)]
        if on_error == "raise":
            for r in out:
                if isinstance(r, Exception):
                    raise r
        return out

    def block_locations(self, path: str, start: int = 0,
                        length: Optional[int] = None) -> List[Dict[str, Any]]:
        """Where the bytes live, for schedulers: [{"offset", "length",
        "hosts", "nodes"}], hosts and nodes in the order reads try them.
        From the file's current layout (also when pinned to a dataset)."""
        out = []
        for r in self.client.locate(self._strip_protocol(path), start, length):
            hosts: List[str] = []
            for rep in r.replicas:
                hosts.extend(h for h in rep.hosts if h not in hosts)
            out.append({"offset": r.offset, "length": r.length, "hosts": hosts,
                        "nodes": [rep.node for rep in r.replicas]})
        return out

    # Read-only: every write is refused.
    def _refuse(self, *args: Any, **kwargs: Any) -> None:
        raise PermissionError("rangefs is read-only through fsspec")

    mkdir = makedirs = rm_file = rm = _rm = cp_file = mv = put_file = pipe_file = _refuse


def _bounds(start: Optional[int], end: Optional[int], size: int) -> tuple:
    """fsspec's start/end (None, negative = from the end) -> [lo, hi)."""
    lo = 0 if start is None else (size + start if start < 0 else start)
    hi = size if end is None else (size + end if end < 0 else end)
    lo = max(0, min(lo, size))
    hi = max(lo, min(hi, size))
    return lo, hi


class RangefsBufferedFile(AbstractBufferedFile):
    """A file of RangefsFileSystem.open: one layout snapshot
    (rangefs.Client.open, or the pinned dataset's). Reads of at least DIRECT_READ bytes (a Parquet
    column chunk) go straight to the client, exactly the bytes asked for;
    smaller ones through fsspec's read cache (readahead of block_size, 1 MiB
    by default), whose misses are parallel reads."""

    DIRECT_READ = 64 << 10

    def __init__(self, fs: RangefsFileSystem, path: str, **kwargs: Any) -> None:
        self._raw = fs._src.open(path)
        if kwargs.get("block_size") is None:
            kwargs["block_size"] = 1 << 20
        super().__init__(fs, path, size=self._raw.size, **kwargs)

    def read(self, length: int = -1) -> bytes:
        if length is not None and length >= self.DIRECT_READ and not self.closed:
            length = min(length, self.size - self.loc)
            if length <= 0:
                return b""
            data = self._raw._f.pread(self.loc, length)
            self.loc += len(data)
            return data
        return super().read(length)

    def _fetch_range(self, start: int, end: int) -> bytes:
        return self._raw._f.pread(start, max(0, end - start))

    def close(self) -> None:
        super().close()
        self._raw.close()
