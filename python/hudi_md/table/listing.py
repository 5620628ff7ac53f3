"""Listing sources: where the file system view learns which partitions and files exist.

The view takes any :class:`ListingSource` (storage listing here; the MDT ``files`` partition and the
metastore elsewhere), so all of them share one slicing logic.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from hudi_md.storage import Storage

PARTITION_METAFILE_PREFIX = ".hoodie_partition_metadata"


@dataclass(frozen=True)
class FileEntry:
    """A file a listing source reports: its name inside the partition, and its size."""

    name: str
    size: int
    modification_time: float | None = None


@runtime_checkable
class ListingSource(Protocol):
    """What a file system view needs to know about files, whatever answers it."""

    name: str

    def all_partitions(self) -> list[str]:
        """Relative partition paths; ``""`` for a non-partitioned table."""
        ...

    def files_in_partitions(self, partitions: Sequence[str]) -> dict[str, list[FileEntry]]:
        """File entries of each requested partition (missing partitions map to ``[]``)."""
        ...


class StorageListing:
    """Lists the storage itself: the oracle every other source must agree with.

    A partition is a directory holding ``.hoodie_partition_metadata`` (as Hudi writes in every
    partition); the walk skips ``.hoodie`` and other hidden folders.
    """

    name = "storage"

    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        self._partitions: list[str] | None = None
        self._files: dict[str, list[FileEntry]] = {}

    def all_partitions(self) -> list[str]:
        if self._partitions is None:
            found: list[str] = []
            self._walk("", found)
            self._partitions = sorted(found)
        return list(self._partitions)

    def _walk(self, path: str, found: list[str]) -> None:
        entries = self.storage.list(path)
        files = [e for e in entries if not e.is_dir]
        if any(e.name.startswith(PARTITION_METAFILE_PREFIX) for e in files):
            found.append(path)
            self._files[path] = [
                FileEntry(e.name, e.size, e.modification_time)
                for e in files
                if not e.name.startswith(PARTITION_METAFILE_PREFIX)
            ]
        for e in entries:
            if e.is_dir and not e.name.startswith("."):
                self._walk(e.path, found)

    def files_in_partitions(self, partitions: Sequence[str]) -> dict[str, list[FileEntry]]:
        out: dict[str, list[FileEntry]] = {}
        for p in partitions:
            if p not in self._files:
                self._files[p] = [
                    FileEntry(e.name, e.size, e.modification_time)
                    for e in self.storage.list(p)
                    if not e.is_dir and not e.name.startswith(PARTITION_METAFILE_PREFIX)
                ]
            out[p] = list(self._files[p])
        return out


def entries_by_name(entries: Iterable[FileEntry]) -> dict[str, FileEntry]:
    return {e.name: e for e in entries}
