"""A table whose data files live under a separate storage path (RFC-60's wrapper file system).

Every layer above keeps *logical* paths: ``<partition path>/<file name>`` relative to the table
path, as the MDT, commit metadata and file slices name them. :class:`FederatedStorage` is the one
place that maps a data file to where it is: its ``locate`` function (given by the table layer,
which knows Hudi's file names and the table's storage strategy) answers the physical path under
the storage path, or None for everything else (``.hoodie/``, partition metadata), which stays
under the table path. The two roots may be different buckets, or different file systems.

A directory listing is the table path's (partition metadata); the data files of a partition are
known from the MDT. :meth:`FederatedStorage.data_files` walks the whole storage path (the repair
tool's and an MDT build's listing).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable

from hudi_md.storage.base import FileStatus, InputFile, Storage

# logical path -> physical path under the storage path (None: the file stays under the table path)
Locator = Callable[[str], str | None]


class FederatedStorage(Storage):
    """The table path's storage, with data files routed to ``data`` by ``locate``. Both share one
    request counter, so counts keep covering every request a plan or a write makes."""

    def __init__(self, table: Storage, data: Storage, locate: Locator) -> None:
        super().__init__(table.root_uri, table.options, fs=table.fs, stats=table.stats, retry=table.retry)
        self.table = table
        self.data = data
        self.locate = locate

    def _route(self, path: str) -> tuple[Storage, str]:
        physical = self.locate(path.strip("/"))
        return (self.data, physical) if physical is not None else (self.table, path)

    # --- paths -----------------------------------------------------------------------------------

    def uri(self, path: str = "") -> str:
        target, p = self._route(path)
        return target.uri(p)

    @property
    def uri_prefix(self) -> str | None:
        return None  # each file's place comes from its hash prefix

    def child(self, path: str) -> Storage:
        """A storage rooted below the table path (the MDT, which always uses the default layout)."""
        return self.table.child(path)

    # --- reads -----------------------------------------------------------------------------------

    def list(self, path: str = "") -> list[FileStatus]:
        """The table path's directory (``.hoodie``, partition metadata): data files are not there."""
        return self.table.list(path)

    def walk_files(self, path: str = "") -> builtins.list[FileStatus]:
        return self.table.walk_files(path)

    def data_files(self) -> builtins.list[FileStatus]:
        """Every file under the storage path, by its path relative to it (other tables' too when
        they share the storage path)."""
        return self.data.walk_files("")

    def info(self, path: str) -> FileStatus:
        target, p = self._route(path)
        status = target.info(p)
        return FileStatus(
            path=path.strip("/"),
            size=status.size,
            is_dir=status.is_dir,
            modification_time=status.modification_time,
        )

    def exists(self, path: str) -> bool:
        target, p = self._route(path)
        return target.exists(p)

    def read_bytes(self, path: str) -> bytes:
        target, p = self._route(path)
        return target.read_bytes(p)

    def read_range(self, path: str, offset: int, length: int) -> bytes:
        target, p = self._route(path)
        return target.read_range(p, offset, length)

    def input_file(self, path: str, size: int | None = None) -> InputFile:
        target, p = self._route(path)
        return target.input_file(p, size)

    # --- writes ----------------------------------------------------------------------------------

    def write_bytes(self, path: str, data: bytes, *, overwrite: bool = True) -> None:
        target, p = self._route(path)
        target.write_bytes(p, data, overwrite=overwrite)

    def write_atomic(self, path: str, data: bytes, *, overwrite: bool = True) -> None:
        target, p = self._route(path)
        target.write_atomic(p, data, overwrite=overwrite)

    def create_exclusive(self, path: str, data: bytes) -> bool:
        target, p = self._route(path)
        return target.create_exclusive(p, data)

    def delete(self, path: str, *, recursive: bool = False) -> None:
        target, p = self._route(path)
        target.delete(p, recursive=recursive)

    def makedirs(self, path: str) -> None:
        target, p = self._route(path)
        target.makedirs(p)

    def rename(self, src: str, dst: str) -> None:
        source, s = self._route(src)
        dest, d = self._route(dst)
        if source is not dest:
            raise ValueError(f"cannot rename {self.uri(src)} to {self.uri(dst)}: different storage roots")
        source.rename(s, d)

    def __repr__(self) -> str:
        return f"FederatedStorage({self.table.root_uri!r}, data={self.data.root_uri!r})"
