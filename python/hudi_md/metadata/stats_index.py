"""The MDT's data-skipping indexes: ``column_stats``, ``partition_stats`` and ``bloom_filters``."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from hudi_md.metadata import keys as K
from hudi_md.metadata import metrics
from hudi_md.metadata.records import Record
from hudi_md.metadata.slice_sources import DeleteSource, HFileSource, KeySelection
from hudi_md.metadata.stats_columns import (
    Deletes,
    StatsColumns,
    StatsRun,
    decode_stats_columns,
    merge_stats_runs,
)
from hudi_md.table.fs_view import FileSlice

if TYPE_CHECKING:
    from hudi_md.metadata.files_index import FilesIndex
    from hudi_md.metadata.reader import MetadataTable

# Stats of more partitions than this are read as the column's whole key range.
_MANY_PARTITIONS = 1000
# Stats results kept per MDT reader (repeated plans of one state).
_STATS_CACHE_ENTRIES = 16


@dataclass(frozen=True)
class ColumnStat:
    partition_path: str
    file_name: str
    column_name: str
    min_value: Any
    max_value: Any
    null_count: int | None
    value_count: int | None
    total_size: int | None
    total_uncompressed_size: int | None
    is_tight_bound: bool


class StatsIndex:
    """The ``column_stats``, ``partition_stats`` and ``bloom_filters`` partitions of ``mdt``;
    ``files`` names the table's partitions when a read of every partition's stats needs them."""

    def __init__(self, mdt: MetadataTable, files: FilesIndex) -> None:
        self._mdt = mdt
        self._files = files
        # which stats partitions the MDT holds (a plan prunes only by those)
        self.indexes = frozenset(mdt.available_partitions & {K.COLUMN_STATS, K.PARTITION_STATS})
        self._lock = threading.Lock()
        self._stats_cache: OrderedDict[tuple[Any, ...], list[ColumnStat]] = OrderedDict()

    def column_stats(
        self, columns: Sequence[str] | None = None, partitions: Sequence[str] | None = None
    ) -> list[ColumnStat]:
        return self._stats(K.COLUMN_STATS, columns, partitions)

    def partition_stats(
        self, columns: Sequence[str] | None = None, partitions: Sequence[str] | None = None
    ) -> list[ColumnStat]:
        return self._stats(K.PARTITION_STATS, columns, partitions)

    def _stats(
        self, mdt_partition: str, columns: Sequence[str] | None, partitions: Sequence[str] | None
    ) -> list[ColumnStat]:
        """Stats of ``columns`` in ``partitions``; a plan repeated on the same state (the planner
        keeps states) gets them from memory."""
        key = (
            mdt_partition,
            None if columns is None else tuple(columns),
            None if partitions is None else tuple(partitions),
        )
        with self._lock:
            known = self._stats_cache.get(key)
            if known is not None:
                self._stats_cache.move_to_end(key)
                return list(known)
        found = self._read_stats(mdt_partition, columns, partitions)
        with self._lock:
            self._stats_cache[key] = found
            while len(self._stats_cache) > _STATS_CACHE_ENTRIES:
                self._stats_cache.popitem(last=False)
        return list(found)

    def _read_stats(
        self, mdt_partition: str, columns: Sequence[str] | None, partitions: Sequence[str] | None
    ) -> list[ColumnStat]:
        read_records = self._mdt.read_records
        if columns is None:
            records = read_records(mdt_partition)
        elif partitions is None or len(partitions) > _MANY_PARTITIONS:
            # a column's stats are one key range: one walk over it beats a lookup per partition
            # (the stats of partitions not asked for are dropped below)
            records = read_records(mdt_partition, prefixes=[K.column_index_id(c) for c in columns])
        elif mdt_partition == K.PARTITION_STATS:
            records = read_records(
                mdt_partition, keys=[K.partition_stats_key(c, p) for c in columns for p in partitions]
            )
        else:
            records = read_records(
                mdt_partition,
                prefixes=[
                    K.column_index_id(c) + K.partition_index_id(p) for c in columns for p in partitions
                ],
            )
        if partitions is not None:
            id_to_partition = {K.partition_index_id(p): p for p in partitions}
        elif mdt_partition == K.PARTITION_STATS:
            id_to_partition = {}  # a partition_stats record names its partition
        else:
            id_to_partition = {K.partition_index_id(p): p for p in self._files.all_partitions()}
        out = []
        for key, rec in records.items():
            cs = rec["ColumnStatsMetadata"]
            part_id = key[12:24]
            partition = id_to_partition.get(part_id)
            if partition is None and partitions is None and mdt_partition == K.PARTITION_STATS:
                partition = cs.get("fileName")
                if partition == K.NON_PARTITIONED_NAME:
                    partition = ""
            if partition is None:
                continue  # not asked for, or stats of a partition that no longer exists
            out.append(column_stat_of(partition, rec))
        out.sort(key=lambda s: (s.column_name, s.partition_path, s.file_name))
        return out

    def column_stats_of_files(
        self, files: Mapping[str, Iterable[str]], columns: Iterable[str]
    ) -> list[ColumnStat]:
        """The ``column_stats`` of exactly these files (names per partition) and columns: point
        lookups of their keys. A commit's partition stats and a clean's deletes need the stats of
        some files; a scan of their partitions would also decode every record of the files'
        older versions still in the MDT's log blocks."""
        wanted = {
            K.column_stats_key(c, p, n): p for p, names in files.items() for n in names for c in columns
        }
        if not wanted:
            return []
        records = self._mdt.read_records(K.COLUMN_STATS, keys=sorted(wanted))
        out = [column_stat_of(wanted[key], rec) for key, rec in records.items()]
        out.sort(key=lambda s: (s.column_name, s.partition_path, s.file_name))
        return out

    def stats_columns(
        self, mdt_partition: str, columns: Sequence[str], partitions: Sequence[str]
    ) -> tuple[StatsColumns, pa.StringArray] | None:
        """:meth:`column_stats` / :meth:`partition_stats` of ``columns`` in ``partitions``, read
        column-wise (:mod:`stats_columns`): the merged, live records and each one's partition,
        the same records as those methods give; None when a block, schema or record is not of the
        shape the column-wise decoder knows (then read them with those methods)."""
        with metrics.timed(f"scan_{mdt_partition}_columns"):
            return self._stats_columns(mdt_partition, columns, partitions)

    def _stats_columns(
        self, mdt_partition: str, columns: Sequence[str], partitions: Sequence[str]
    ) -> tuple[StatsColumns, pa.StringArray] | None:
        partition_list = list(partitions)
        if not columns or not partition_list:
            return None  # nothing to read column-wise: the record-wise read answers at once
        ids = K.partition_index_ids(partition_list)
        if len(set(ids)) != len(ids):
            return None  # two partitions of one id: which one a record names is not clear
        # the keys _read_stats reads
        keys: list[str] | None = None
        prefixes: list[str] | None = None
        if len(partition_list) > _MANY_PARTITIONS:
            prefixes = [K.column_index_id(c) for c in columns]
        elif mdt_partition == K.PARTITION_STATS:
            keys = [K.partition_stats_key(c, p) for c in columns for p in partition_list]
        else:
            prefixes = [K.column_index_id(c) + i for c in columns for i in ids]
        slices = self._mdt.file_slices(mdt_partition)
        if keys is not None:
            groups = K.file_group_indexes(keys, len(slices))
            wanted: dict[int, KeySelection] = {}
            for index in sorted(set(groups)):
                wanted[index] = KeySelection(
                    keys=[k for k, g in zip(keys, groups, strict=True) if g == index]
                )
        else:
            wanted = {index: KeySelection(prefixes=prefixes) for index in range(len(slices))}
        parts: list[StatsColumns] = []
        for index, sel in wanted.items():
            merged = self._slice_stats_columns(slices[index], sel, K.record_type_of_partition(mdt_partition))
            if merged is None:
                return None
            parts.append(merged)
        found = StatsColumns.concat(parts)
        if len(pc.unique(found.keys)) != len(found):  # (count_distinct is far slower)
            return None  # a key in two file groups: the record-wise read keeps the later group's
        part_ids = pc.utf8_slice_codeunits(found.keys, 12, 24)
        where = pc.index_in(part_ids, value_set=pa.array(ids, pa.string()))
        if where.null_count:  # records of partitions not asked for (or gone) are dropped
            asked = pc.indices_nonzero(pc.is_valid(where)).to_numpy()
            found = found.take(asked)
            where = where.take(pa.array(asked, pa.int64()))
        return found, pa.array(partition_list, pa.string()).take(where)

    def _slice_stats_columns(
        self, file_slice: FileSlice, sel: KeySelection, record_type: int
    ) -> StatsColumns | None:
        """One MDT file slice's stats records selected by ``sel``, merged as
        :meth:`MetadataTable.read_slice_records` merges them."""
        sources: list[HFileSource | Deletes] = []
        for source in self._mdt.slice_reader.sources(file_slice):
            if isinstance(source, HFileSource):
                sources.append(source)
            elif isinstance(source, DeleteSource):
                sources.append(Deletes([k for k in source.keys if sel.matches(k)]))
            else:
                return None  # the record-wise read reports it
        events: list[StatsRun | Deletes] = []
        for hfile in sources:
            if isinstance(hfile, Deletes):
                events.append(hfile)
                continue
            if hfile.schema is None:
                return None
            run = decode_stats_columns(sel.scan_columns(hfile.reader), hfile.schema)
            if run is None:
                return None
            events.append(run)
        return merge_stats_runs(events, record_type)

    # --- bloom_filters ---------------------------------------------------------------------------

    def bloom_filters(self, files: Iterable[tuple[str, str]]) -> dict[tuple[str, str], dict[str, Any]]:
        """``(partition, file name) -> {"type", "timestamp", "bloom_filter"}`` for files that have one."""
        wanted = {K.bloom_filter_key(p, f): (p, f) for p, f in files}
        records = self._mdt.read_records(K.BLOOM_FILTERS, keys=list(wanted))
        out = {}
        for key, rec in records.items():
            bloom = rec["BloomFilterMetadata"]
            out[wanted[key]] = {
                "type": bloom.get("type"),
                "timestamp": bloom.get("timestamp"),
                "bloom_filter": bloom.get("bloomFilter"),
            }
        return out


def column_stat_of(partition: str, record: Record) -> ColumnStat:
    """A merged ``column_stats`` / ``partition_stats`` record of ``partition`` as a ColumnStat."""
    cs = record["ColumnStatsMetadata"]
    return ColumnStat(
        partition_path=partition,
        file_name=cs.get("fileName") or "",
        column_name=cs.get("columnName") or "",
        min_value=cs.get("minValue"),
        max_value=cs.get("maxValue"),
        null_count=cs.get("nullCount"),
        value_count=cs.get("valueCount"),
        total_size=cs.get("totalSize"),
        total_uncompressed_size=cs.get("totalUncompressedSize"),
        is_tight_bound=bool(cs.get("isTightBound")),
    )


def column_stats_to_arrow(stats: Sequence[ColumnStat]) -> pa.Table:
    """Long-format stats; min/max rendered as strings so one table can hold every column type."""
    return pa.table(
        {
            "partition_path": pa.array([s.partition_path for s in stats], pa.string()),
            "file_name": pa.array([s.file_name for s in stats], pa.string()),
            "column_name": pa.array([s.column_name for s in stats], pa.string()),
            "min_value": pa.array([_render(s.min_value) for s in stats], pa.string()),
            "max_value": pa.array([_render(s.max_value) for s in stats], pa.string()),
            "null_count": pa.array([s.null_count for s in stats], pa.int64()),
            "value_count": pa.array([s.value_count for s in stats], pa.int64()),
            "total_size": pa.array([s.total_size for s in stats], pa.int64()),
            "total_uncompressed_size": pa.array([s.total_uncompressed_size for s in stats], pa.int64()),
            "is_tight_bound": pa.array([s.is_tight_bound for s in stats], pa.bool_()),
        }
    )


def _render(v: Any) -> str | None:
    if v is None:
        return None
    if isinstance(v, bytes):
        return v.hex()
    if hasattr(v, "isoformat"):
        return v.isoformat()
    return str(v)
