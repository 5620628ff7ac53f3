"""The MDT as a :class:`~hudi_md.table.plan_source.PlanSource`: partitions from the ``files``
partition (point and prefix lookups when the filter pins partition paths, its partition list
otherwise), the latest slices of the data table's view over those files, and the MDT's
``column_stats`` / ``partition_stats`` and ``record_index`` for pruning."""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING

import pyarrow as pa

from hudi_md.table.fs_view import FileSlice, FileSystemView
from hudi_md.table.plan_source import Partitions, PlanHint, RecordLocator, StatsSource, view_slices
from hudi_md.table.slice_table import latest_slices_table, wanted_files

if TYPE_CHECKING:
    from hudi_md.metadata.files_index import FilesIndex
    from hudi_md.metadata.reader import MetadataTable

# An unfiltered plan on a table whose MDT `files` partition is this large reads it whole first.
SCAN_FILES_AHEAD_BYTES = 1 << 20
# slice rows of every partition, per file-system view (a view is one snapshot of a table state)
_SLICE_ROWS: weakref.WeakKeyDictionary[FileSystemView, tuple[int, pa.Table]] = weakref.WeakKeyDictionary()


class MdtPlanSource:
    name = "metadata"

    def __init__(self, mdt: MetadataTable, view: FileSystemView) -> None:
        self.mdt = mdt
        self.view = view
        self.stats: StatsSource | None
        self.record_locations: RecordLocator | None
        self.stats, self.record_locations = mdt.indexes()

    def partitions(self, hint: PlanHint) -> Partitions:
        files = self.mdt.files
        keys = hint.partition_keys() if hint.expr is not None else None
        if keys is not None:
            # the filter names the partitions' paths or path prefixes: point and prefix lookups of
            # the files partition, not the partition list
            found = files.partitions_with_keys(keys.paths, keys.prefixes) if not keys.is_empty else []
            return Partitions(found, "partitions_from_keys")
        if hint.expr is None and not hint.read_optimized and self._scan_files_ahead():
            # a plan of every partition compares them with the listing column-wise: no Python list
            return Partitions(files.partition_array(), scanned_ahead=True)
        return Partitions(files.all_partitions())

    def _scan_files_ahead(self) -> bool:
        """Whether a plan of every partition reads the ``files`` partition whole before it asks
        for the partition list: when that partition is this large, the table has many partitions,
        and one scan gives both (the list is one of its records) instead of a read for the list
        first."""
        files = self.mdt.files
        return files.files_partition_bytes() >= SCAN_FILES_AHEAD_BYTES and files.files_table() is not None

    def latest_slices(
        self,
        partitions: Sequence[str] | pa.StringArray,
        *,
        read_optimized: bool = False,
        columnar: bool = False,
    ) -> list[FileSlice] | pa.Table:
        if columnar and not read_optimized:
            rows = latest_slice_rows(self.mdt.files, self.view, partitions)
            if rows is not None:
                return rows
        return view_slices(self.view, partitions, read_optimized)


def latest_slice_rows(
    files: FilesIndex, view: FileSystemView, partitions: Sequence[str] | pa.StringArray
) -> pa.Table | None:
    """The latest slices of ``partitions`` (all the table's) as rows, built column-wise from the
    ``files`` partition read as one table; None when the column-wise decoder does not take its
    records."""
    known = _SLICE_ROWS.get(view)
    if known is not None and known[0] == len(partitions):
        return known[1]
    table = files.files_table()
    if table is None:
        return None
    # a partition's files record may outlive the partition (dropped from the partition list)
    rows = latest_slices_table(view, wanted_files(table, partitions))
    _SLICE_ROWS[view] = (len(partitions), rows)
    return rows
