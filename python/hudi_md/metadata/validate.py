"""Compare what the MDT says with what storage holds (hudi-cli's ``metadata validate-files``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hudi_md.table.fs_view import FileSystemView
from hudi_md.table.listing import StorageListing

if TYPE_CHECKING:
    from hudi_md.api import Table


@dataclass(frozen=True)
class Difference:
    kind: str  # partition_only_in_mdt | partition_only_in_storage | file_only_in_mdt | ...
    partition_path: str
    file_name: str = ""
    mdt_size: int | None = None
    storage_size: int | None = None

    def describe(self) -> str:
        where = self.partition_path or "<non-partitioned>"
        if self.kind.startswith("partition"):
            side = "MDT" if self.kind == "partition_only_in_mdt" else "storage"
            return f"partition {where!r} only in {side}"
        if self.kind == "size_mismatch":
            return f"{where}/{self.file_name}: size {self.mdt_size} in MDT, {self.storage_size} in storage"
        side = "MDT" if self.kind == "file_only_in_mdt" else "storage"
        return f"{where}/{self.file_name}: only in {side}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "partition_path": self.partition_path,
            "file_name": self.file_name,
            "mdt_size": self.mdt_size,
            "storage_size": self.storage_size,
            "message": self.describe(),
        }


def validate_metadata_table(table: Table) -> list[Difference]:
    """Differences between the MDT-based and the listing-based view of committed files.

    Both sides go through the same timeline filtering, so files of inflight or failed instants
    (which the MDT rightly does not list) are not reported. Log file sizes are compared only when
    both are known: the MDT records sizes as of each commit, and v6 logs can grow by appends.
    """
    mdt = table.metadata_table
    if mdt is None:
        raise ValueError(f"{table.uri} has no readable metadata table to validate")
    listing = StorageListing(table.storage)
    diffs: list[Difference] = []
    mdt_parts = set(mdt.all_partitions())
    storage_parts = set(listing.all_partitions())
    for p in sorted(mdt_parts - storage_parts):
        diffs.append(Difference("partition_only_in_mdt", p))
    storage_only = sorted(storage_parts - mdt_parts)
    visible = FileSystemView(table.config, table.timeline, listing).visible_files(storage_only)
    for p in storage_only:
        # A partition directory without any committed file (e.g. left by a failed first write)
        # is not data the MDT is missing.
        if visible.get(p):
            diffs.append(Difference("partition_only_in_storage", p))
    common = sorted(mdt_parts & storage_parts)
    mdt_files = FileSystemView(table.config, table.timeline, mdt).visible_files(common)
    storage_files = FileSystemView(table.config, table.timeline, listing).visible_files(common)
    for p in common:
        a, b = mdt_files.get(p, {}), storage_files.get(p, {})
        for name in sorted(set(a) - set(b)):
            diffs.append(Difference("file_only_in_mdt", p, name, mdt_size=a[name]))
        for name in sorted(set(b) - set(a)):
            diffs.append(Difference("file_only_in_storage", p, name, storage_size=b[name]))
        for name in sorted(set(a) & set(b)):
            if a[name] != b[name] and not name.startswith("."):
                diffs.append(Difference("size_mismatch", p, name, mdt_size=a[name], storage_size=b[name]))
    return diffs
