"""The one storage layer: fsspec underneath, request and byte counts on top."""

from __future__ import annotations

import builtins
import contextlib
import os
import posixpath
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import fsspec
from fsspec.core import split_protocol, url_to_fs

from hudi_md.errors import HudiMdError, MissingExtraError, StorageError
from hudi_md.storage.retry import RetryPolicy, is_transient


class SimulatedCrash(BaseException):
    """Raised by a fault hook (tests) to kill a writer before a storage mutation.

    A ``BaseException``, so no ``except Exception`` on the way up can swallow it: the process is as
    good as dead at that point."""


# An opt-in, process-wide fault hook: called as ``hook(kind, path)`` before every mutating storage
# call (kind: write, create, delete, mkdir, rename; path: the full fsspec path). Tests use it to
# kill a writer after any number of mutations (raise SimulatedCrash, or SIGKILL the process).
# A hook with a true ``wants_data`` attribute is called as ``hook(kind, path, data)``: ``data`` is
# the bytes about to land at ``path`` (write, create, and the rename of Storage.write_atomic, where
# ``path`` is the destination), else None; a test writes a prefix of them there to tear the file.
FaultHook = Callable[..., None]
_fault_hook: FaultHook | None = None


def set_fault_hook(hook: FaultHook | None) -> FaultHook | None:
    """Install ``hook`` (None removes it); returns the previous one."""
    global _fault_hook
    previous, _fault_hook = _fault_hook, hook
    return previous


def _before_mutation(kind: str, full_path: str, data: bytes | None = None) -> None:
    hook = _fault_hook
    if hook is not None:
        if getattr(hook, "wants_data", False):
            hook(kind, full_path, data)
        else:
            hook(kind, full_path)


# File systems whose rename is atomic (and replaces the target): a file written to a temporary
# name and renamed is never seen half-written. Object stores have no rename, but a single PUT is
# atomic there already.
_ATOMIC_RENAME_PROTOCOLS = frozenset({"file", "local", "hdfs", "viewfs", "webhdfs"})


def temp_name(name: str) -> str:
    """The temporary name a file is first written to: hidden (``.name.<uuid>.tmp``), so listings of
    the timeline, of partitions and of the MDT ignore it."""
    return f".{name}.{uuid.uuid4().hex}.tmp"


def is_temp_name(name: str) -> bool:
    return name.startswith(".") and name.endswith(".tmp")


@dataclass(frozen=True)
class FileStatus:
    """One entry of a listing. ``path`` is relative to the storage root."""

    path: str
    size: int
    is_dir: bool
    modification_time: float | None = None

    @property
    def name(self) -> str:
        return posixpath.basename(self.path.rstrip("/"))


class StorageStats:
    """Thread-safe request and byte counters, shared by a storage and its children.

    Pickles as its current values (Spark executors get a copy; counts made there stay there).
    """

    KINDS = ("list", "info", "exists", "read", "write", "delete", "mkdir", "rename", "retry")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: dict[str, int] = dict.fromkeys(self.KINDS, 0)
        self.bytes_read = 0
        self.bytes_written = 0
        self._paths: dict[str, int] = {}
        self._read_bytes: dict[str, int] = {}

    def record(self, kind: str, path: str, nbytes: int = 0) -> None:
        with self._lock:
            self._requests[kind] += 1
            if kind == "read":
                self.bytes_read += nbytes
                self._read_bytes[path] = self._read_bytes.get(path, 0) + nbytes
            elif kind == "write":
                self.bytes_written += nbytes
            self._paths[path] = self._paths.get(path, 0) + 1

    @property
    def requests(self) -> int:
        with self._lock:
            return sum(self._requests.values())

    def count(self, kind: str) -> int:
        with self._lock:
            return self._requests[kind]

    def requests_under(self, prefix: str) -> int:
        """Requests made for paths starting with ``prefix`` (relative to the root storage)."""
        with self._lock:
            return sum(n for p, n in self._paths.items() if p.startswith(prefix))

    def bytes_read_under(self, prefix: str) -> int:
        """Bytes read from paths starting with ``prefix`` (relative to the root storage)."""
        with self._lock:
            return sum(n for p, n in self._read_bytes.items() if p.startswith(prefix))

    def by_path(self) -> dict[str, int]:
        """Requests per path (relative to the root storage; a federated table's data files under
        ``@storage-path/``)."""
        with self._lock:
            return dict(self._paths)

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            out = {f"{k}_requests": v for k, v in self._requests.items()}
            out["requests"] = sum(self._requests.values())
            out["bytes_read"] = self.bytes_read
            out["bytes_written"] = self.bytes_written
            return out

    def reset(self) -> None:
        with self._lock:
            self._requests = dict.fromkeys(self.KINDS, 0)
            self.bytes_read = 0
            self.bytes_written = 0
            self._paths.clear()
            self._read_bytes.clear()

    def __getstate__(self) -> dict[str, Any]:
        with self._lock:
            return {
                "requests": dict(self._requests),
                "bytes_read": self.bytes_read,
                "bytes_written": self.bytes_written,
            }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._lock = threading.Lock()
        self._requests = dict(state["requests"])
        self.bytes_read = state["bytes_read"]
        self.bytes_written = state["bytes_written"]
        self._paths = {}
        self._read_bytes = {}


@runtime_checkable
class InputFile(Protocol):
    """Random access to one file's bytes: what the HFile and log readers consume."""

    name: str

    def size(self) -> int: ...

    def read(self, offset: int, length: int) -> bytes: ...

    def read_all(self) -> bytes: ...


class BytesInputFile:
    """An :class:`InputFile` over bytes already in memory (an HFile inside a log block, a test)."""

    def __init__(self, data: bytes, name: str = "<bytes>") -> None:
        self._data = memoryview(data)
        self.name = name

    def size(self) -> int:
        return len(self._data)

    def read(self, offset: int, length: int) -> bytes:
        if offset < 0 or offset + length > len(self._data):
            raise EOFError(f"{self.name}: read of {length} bytes at {offset} past size {len(self._data)}")
        return bytes(self._data[offset : offset + length])

    def read_all(self) -> bytes:
        return bytes(self._data)


class _StorageInputFile:
    """An :class:`InputFile` reading through a :class:`Storage` (each call is one counted request)."""

    def __init__(self, storage: Storage, path: str, size: int | None) -> None:
        self._storage = storage
        self._path = path
        self._size = size
        self.name = storage.uri(path)

    def size(self) -> int:
        if self._size is None:
            self._size = self._storage.info(self._path).size
        return self._size

    def read(self, offset: int, length: int) -> bytes:
        data = self._storage.read_range(self._path, offset, length)
        if len(data) != length:
            raise EOFError(f"{self.name}: short read of {len(data)}/{length} bytes at offset {offset}")
        return data

    def read_all(self) -> bytes:
        data = self._storage.read_bytes(self._path)
        self._size = len(data)
        return data


# The hudi-md extra (pyproject's optional-dependencies) that installs the fsspec filesystem of each
# object-store protocol fsspec knows by name but does not ship.
EXTRA_OF_PROTOCOL = {
    "s3": "s3",
    "s3a": "s3",
    "gs": "gcs",
    "gcs": "gcs",
    "abfs": "azure",
    "abfss": "azure",
    "az": "azure",
    "adl": "azure",
}


def missing_filesystem_error(root: str, cause: ImportError) -> MissingExtraError:
    """The error for a URL whose fsspec filesystem cannot be imported: fsspec's own ImportError
    names a package, not how to get it with hudi-md, so the message names the extra to install."""
    # a chained URL (simplecache::gs://...) names several; the object store is the one to blame
    protocols = [split_protocol(part)[0] for part in root.split("::")]
    for protocol in protocols:
        extra = EXTRA_OF_PROTOCOL.get(protocol or "")
        if extra is not None:
            return MissingExtraError(
                f"{root}: {protocol}:// needs the hudi-md extra {extra!r}: pip install 'hudi-md[{extra}]' "
                f"({cause})",
                extra,
            )
    return MissingExtraError(f"{root}: the fsspec filesystem for this URL cannot be imported ({cause})")


class Storage:
    """A filesystem rooted at ``root`` (any fsspec URL or a local path).

    Paths given to methods are relative to the root, ``/``-separated. :meth:`child` makes a storage
    rooted below this one that shares the same counters.
    """

    def __init__(
        self,
        root: str,
        options: dict[str, Any] | None = None,
        *,
        fs: fsspec.AbstractFileSystem | None = None,
        stats: StorageStats | None = None,
        retry: RetryPolicy | None = None,
        counter_prefix: str = "",
    ) -> None:
        options = dict(options or {})
        hoodie = {k: options.pop(k) for k in list(options) if k.startswith("hoodie.")}
        self.options = options  # fsspec's
        if fs is None:
            try:
                fs, fs_root = url_to_fs(root, **self.options)
            except ImportError as e:
                raise missing_filesystem_error(root, e) from e
        else:
            fs_root = fs._strip_protocol(root)
        self.fs: fsspec.AbstractFileSystem = fs
        remote = not any(p in ("file", "local", "memory") for p in self._protocols)
        self.retry = retry if retry is not None else RetryPolicy.from_options(hoodie, remote=remote)
        self.root_uri = root.rstrip("/") if root not in ("/",) else root
        self._fs_root = str(fs_root).rstrip("/")
        self.stats = stats if stats is not None else StorageStats()
        self._prefix = counter_prefix

    # --- paths -------------------------------------------------------------------------------

    def _full(self, path: str) -> str:
        path = path.strip("/")
        return f"{self._fs_root}/{path}" if path else self._fs_root

    def _rel(self, full: str) -> str:
        full = self.fs._strip_protocol(full).rstrip("/")
        root = self._fs_root
        if full == root:
            return ""
        if full.startswith(root + "/"):
            return full[len(root) + 1 :]
        return full

    def uri(self, path: str = "") -> str:
        """The full URL of ``path`` (for messages and for engines that open files themselves)."""
        path = path.strip("/")
        return f"{self.root_uri}/{path}" if path else self.root_uri

    @property
    def uri_prefix(self) -> str | None:
        """What :meth:`uri` puts before a relative path (so a column of paths maps at once), or
        None when paths map one by one."""
        return self.root_uri + "/"

    def child(self, path: str) -> Storage:
        return Storage(
            self.uri(path),
            self.options,
            fs=self.fs,
            stats=self.stats,
            retry=self.retry,
            counter_prefix=self._count_key(path) + "/",
        )

    def _count_key(self, path: str) -> str:
        return (self._prefix + path.strip("/")).strip("/")

    # --- requests ------------------------------------------------------------------------------

    def _call(
        self, op: str, path: str, fn: Callable[[], Any], *, settled: Callable[[], bool] | None = None
    ) -> Any:
        """``fn()``, sent again on transient failures per :attr:`retry`; other failures (and
        transient ones that persist) become :class:`StorageError` naming ``op`` and the URL.
        ``FileNotFoundError``/``FileExistsError`` pass through: callers act on them. For a request
        that is not idempotent, ``settled()`` tells after a failure whether it took effect anyway
        (then it is not sent again)."""
        attempt = 0
        while True:
            attempt += 1
            try:
                return fn()
            except (FileNotFoundError, FileExistsError, IsADirectoryError, NotADirectoryError, HudiMdError):
                raise
            except Exception as exc:
                transient = is_transient(exc)
                if transient and settled is not None:
                    with contextlib.suppress(Exception):
                        if settled():
                            return None
                if not transient or attempt >= self.retry.attempts:
                    raise StorageError(
                        op, self.uri(path), exc, transient=transient, attempts=attempt
                    ) from exc
                self.stats.record("retry", self._count_key(path))
                time.sleep(self.retry.delay(attempt))

    # --- reads ---------------------------------------------------------------------------------

    def list(self, path: str = "") -> list[FileStatus]:
        """Direct children of a directory; a missing directory lists as empty."""
        self.stats.record("list", self._count_key(path))
        full = self._full(path)
        # Object-store filesystems (s3fs, gcsfs, adlfs) cache listings per filesystem object, and
        # fsspec shares that object across tables: a long-lived process would keep an old timeline.
        self.fs.invalidate_cache(full)
        try:
            entries = self._call("list", path, lambda: self.fs.ls(full, detail=True))
        except FileNotFoundError:
            return []
        out = []
        for e in entries:
            rel = self._rel(e["name"])
            if rel == path.strip("/"):
                continue  # some filesystems list a file as itself
            out.append(
                FileStatus(
                    path=rel,
                    size=int(e.get("size") or 0),
                    is_dir=e.get("type") == "directory",
                    modification_time=_mtime(e),
                )
            )
        out.sort(key=lambda s: s.path)
        return out

    def walk_files(self, path: str = "") -> builtins.list[FileStatus]:
        """Every file below a directory, at any depth (one recursive listing: on object stores a
        listing without delimiter, paged); a missing directory walks as empty."""
        self.stats.record("list", self._count_key(path))
        full = self._full(path)
        self.fs.invalidate_cache(full)
        try:
            found = self._call("walk", path, lambda: self.fs.find(full, detail=True))
        except FileNotFoundError:
            return []
        out = [
            FileStatus(
                path=self._rel(e["name"]),
                size=int(e.get("size") or 0),
                is_dir=False,
                modification_time=_mtime(e),
            )
            for e in found.values()
            if e.get("type") != "directory"
        ]
        out.sort(key=lambda s: s.path)
        return out

    def info(self, path: str) -> FileStatus:
        self.stats.record("info", self._count_key(path))
        e = self._call("info", path, lambda: self.fs.info(self._full(path)))
        return FileStatus(
            path=path.strip("/"),
            size=int(e.get("size") or 0),
            is_dir=e.get("type") == "directory",
            modification_time=_mtime(e),
        )

    def exists(self, path: str) -> bool:
        self.stats.record("exists", self._count_key(path))
        return bool(self._call("exists", path, lambda: self.fs.exists(self._full(path))))

    def read_bytes(self, path: str) -> bytes:
        data = self._call("read", path, lambda: self.fs.cat_file(self._full(path)))
        self.stats.record("read", self._count_key(path), len(data))
        return data

    def read_range(self, path: str, offset: int, length: int) -> bytes:
        data = self._call(
            "read", path, lambda: self.fs.cat_file(self._full(path), start=offset, end=offset + length)
        )
        self.stats.record("read", self._count_key(path), len(data))
        return data

    def input_file(self, path: str, size: int | None = None) -> InputFile:
        return _StorageInputFile(self, path, size)

    # --- writes --------------------------------------------------------------------------------

    @property
    def renames_atomically(self) -> bool:
        return any(p in _ATOMIC_RENAME_PROTOCOLS for p in self._protocols)

    @property
    def _protocols(self) -> tuple[str, ...]:
        protocol = self.fs.protocol
        return tuple(protocol) if isinstance(protocol, (tuple, list)) else (protocol,)

    def _prepare_write(self, path: str, overwrite: bool) -> str:
        """The full path to write ``path`` to, its folder made; FileExistsError unless ``overwrite``."""
        full = self._full(path)
        if not overwrite and self._call("exists", path, lambda: self.fs.exists(full)):
            raise FileExistsError(self.uri(path))
        parent = posixpath.dirname(full)
        if parent:
            self._call("mkdir", path, lambda: self.fs.makedirs(parent, exist_ok=True))
        return full

    def write_bytes(self, path: str, data: bytes, *, overwrite: bool = True) -> None:
        full = self._prepare_write(path, overwrite)
        _before_mutation("write", full, data)
        self._call("write", path, lambda: self.fs.pipe_file(full, data))  # a PUT: idempotent
        self.stats.record("write", self._count_key(path), len(data))
        if overwrite:
            self._drop_stale_checksum(full)

    @property
    def is_local_disk(self) -> bool:
        """Whether requests go to the local disk (no round trips worth sending side by side)."""
        return any(p in ("file", "local") for p in self._protocols)

    def _drop_stale_checksum(self, full: str) -> None:
        """Remove ``.<name>.crc`` beside a file just rewritten on local disk. Apache Hudi writes
        through Hadoop's LocalFileSystem, which keeps such a checksum beside every file and checks
        it on each read: left stale, it makes Hudi fail to read the file (``hoodie.properties``
        after hudi-md updated it: "Could not load Hoodie properties")."""
        if not self.is_local_disk:
            return
        crc = posixpath.join(posixpath.dirname(full), f".{posixpath.basename(full)}.crc")
        with contextlib.suppress(FileNotFoundError):
            self.fs.rm(crc)

    def write_atomic(self, path: str, data: bytes, *, overwrite: bool = True) -> None:
        """Write ``path`` so that no reader ever sees it partly written: to a temporary name in the
        same folder, then renamed, where the file system renames atomically (local disk, HDFS);
        one PUT elsewhere (atomic on object stores). For metadata files: instants, manifests,
        properties."""
        if not self.renames_atomically:
            self.write_bytes(path, data, overwrite=overwrite)
            return
        full = self._prepare_write(path, overwrite)
        tmp = posixpath.join(posixpath.dirname(full), temp_name(posixpath.basename(full)))
        _before_mutation("write", tmp, data)
        self._call("write", path, lambda: self.fs.pipe_file(tmp, data))
        self.stats.record("write", self._count_key(path), len(data))
        try:
            _before_mutation("rename", full, data)
            self._call(
                "rename",
                path,
                lambda: self.fs.mv(tmp, full),
                settled=lambda: not self.fs.exists(tmp) and self.fs.exists(full),
            )
        except Exception:  # not on SimulatedCrash: a dead process leaves its temp file behind
            with contextlib.suppress(OSError):
                self.fs.rm(tmp)
            raise
        self.stats.record("rename", self._count_key(path))
        self._drop_stale_checksum(full)

    def create_exclusive(self, path: str, data: bytes) -> bool:
        """Create ``path`` only if absent; False if it exists. Atomic on local and HDFS-like stores;
        on object stores without conditional writes it is a best effort (check, then write)."""
        full = self._full(path)
        parent = posixpath.dirname(full)
        if parent:
            self._call("mkdir", path, lambda: self.fs.makedirs(parent, exist_ok=True))
        self.stats.record("write", self._count_key(path), len(data))
        _before_mutation("create", full, data)

        def create() -> bool:
            if self.is_local_disk:
                return _create_by_link(full, data)
            try:
                with self.fs.open(full, "xb") as f:
                    f.write(data)
                return True
            except FileExistsError:
                return False
            except (ValueError, NotImplementedError):
                if self.fs.exists(full):
                    return False
                self.fs.pipe_file(full, data)
                return True

        def ours() -> bool:
            # A create whose answer was lost: it took effect if the file holds exactly our bytes.
            return bool(self.fs.exists(full)) and self.fs.cat_file(full) == data

        result = self._call("create", path, create, settled=ours)
        return True if result is None else bool(result)

    def delete(self, path: str, *, recursive: bool = False) -> None:
        self.stats.record("delete", self._count_key(path))
        full = self._full(path)
        _before_mutation("delete", full)
        self._call(
            "delete",
            path,
            lambda: self.fs.rm(full, recursive=recursive),
            settled=lambda: not self.fs.exists(full),
        )
        self._drop_stale_checksum(full)  # Hadoop's checksum of a file Apache Hudi wrote

    def makedirs(self, path: str) -> None:
        self.stats.record("mkdir", self._count_key(path))
        _before_mutation("mkdir", self._full(path))
        self._call("mkdir", path, lambda: self.fs.makedirs(self._full(path), exist_ok=True))

    def rename(self, src: str, dst: str) -> None:
        self.stats.record("rename", self._count_key(src))
        full_src, full_dst = self._full(src), self._full(dst)
        _before_mutation("rename", full_src)
        self._call(
            "rename",
            src,
            lambda: self.fs.mv(full_src, full_dst),
            settled=lambda: not self.fs.exists(full_src) and self.fs.exists(full_dst),
        )

    def __repr__(self) -> str:
        return f"Storage({self.root_uri!r})"


def _create_by_link(full: str, data: bytes) -> bool:
    """Create ``full`` with ``data`` unless it exists, on local disk, never leaving it partly
    written: the bytes go to a temporary file first, which is then hard-linked to ``full`` (a
    link fails if the name exists, atomically). A lock record created in place and torn by a
    crash could only expire by age; this one is whole or absent."""
    tmp = posixpath.join(posixpath.dirname(full), temp_name(posixpath.basename(full)))
    try:
        with open(tmp, "xb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, full)
        except FileExistsError:
            return False
        return True
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def _mtime(entry: dict[str, Any]) -> float | None:
    for key in ("mtime", "LastModified", "last_modified", "updated", "created"):
        value = entry.get(key)
        if value is None:
            continue
        if isinstance(value, (int, float)):
            return float(value)
        if hasattr(value, "timestamp"):
            return float(value.timestamp())
    return None


def join(*parts: str) -> str:
    """Join relative storage paths, ignoring empty parts."""
    return "/".join(p.strip("/") for p in parts if p and p.strip("/"))
