"""One ``column_stats`` file group's stats for some columns and partitions: the unit of work of a
distributed plan (``hudi_md.spark.distributed_plan``), where each Spark task reads one file group.

The slice is read by :meth:`MetadataTable.read_slice_records` (the reader's own merge and
instant-validity rules); only the keys under the wanted ``column + partition`` prefixes are
decoded, and only live records are returned, as the in-process ``StatsIndex.column_stats``
returns them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from hudi_md.metadata import keys as K
from hudi_md.metadata.reader import MetadataTable
from hudi_md.metadata.records import is_live
from hudi_md.metadata.slice_sources import KeySelection
from hudi_md.metadata.stats_index import ColumnStat, column_stat_of
from hudi_md.table.fs_view import FileSlice

# A column_stats key is column id + partition id + file id, each a fixed-width hash.
_COLUMN_ID_WIDTH = len(K.column_index_id(""))
_PARTITION_ID_WIDTH = len(K.partition_index_id(""))
# Above this many partitions a column's stats are read as one key range (the planner's rule in
# StatsIndex.column_stats too): one walk beats a seek per partition prefix.
MANY_PARTITIONS = 1000


def column_stats_prefixes(columns: Sequence[str], partitions: Sequence[str]) -> list[str]:
    """The key prefixes holding the stats of ``columns`` in ``partitions``."""
    if len(partitions) > MANY_PARTITIONS:
        return [K.column_index_id(c) for c in columns]
    return [K.column_index_id(c) + K.partition_index_id(p) for c in columns for p in partitions]


def scan_column_stats(
    mdt: MetadataTable, file_slice: FileSlice, columns: Sequence[str], partitions: Sequence[str]
) -> Iterator[ColumnStat]:
    """The merged, live stats of ``columns`` in ``partitions`` held by one ``column_stats`` file
    slice of ``mdt`` (stats of other partitions under the same column prefix are skipped)."""
    by_id = {K.partition_index_id(p): p for p in partitions}
    records = mdt.read_slice_records(
        file_slice, KeySelection(prefixes=column_stats_prefixes(columns, partitions))
    )
    start = _COLUMN_ID_WIDTH
    for key, record in records.items():
        if record is None or not is_live(record):
            continue
        partition = by_id.get(key[start : start + _PARTITION_ID_WIDTH])
        if partition is not None:
            yield column_stat_of(partition, record)
