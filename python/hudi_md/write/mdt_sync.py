"""The MDT records one data commit implies (step 4 of the commit protocol).

Most records follow from the write statistics alone (files, per-file column stats, bloom filters,
record-index inserts and deletes). Two need the table as it was before the commit:

* ``partition_stats`` are recomputed from every file of the partition's latest slices after the
  commit (``isTightBound=true``), as Apache Hudi 1.x does when ``column_stats`` is available: files
  this commit wrote bring their own ranges, the other live files' ranges come from the MDT's
  ``column_stats``. Merging only this commit's ranges into the old record would keep the ranges
  of rewritten and replaced files forever.
* ``record_index`` entries of the keys of replaced file groups (insert_overwrite) are deleted,
  unless this commit writes the key again; otherwise the index would route later updates into a
  file group no reader sees.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from functools import cached_property
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from hudi_md.metadata import keys as K
from hudi_md.metadata.column_ranges import parquet_footer
from hudi_md.metadata.reader import ColumnStat
from hudi_md.metadata.records import typed_stat_value
from hudi_md.metadata.records_builder import (
    ColumnRange,
    MdtKeyBatch,
    MdtRecord,
    all_partitions_record,
    bloom_filter_record,
    column_stats_record,
    files_record,
    merge_ranges,
    record_index_batch,
    record_index_delete,
    stat_value,
)
from hudi_md.table.fs_view import FileSlice
from hudi_md.table.state import TableState
from hudi_md.table.timeline import WRITE_ACTIONS
from hudi_md.write.file_groups import TaskResult


def mdt_records_for_commit(
    instant: str,
    results: Sequence[TaskResult],
    available: Iterable[str],
    types: Mapping[str, pa.DataType],
    *,
    before: TableState | None = None,
    replaced: Mapping[str, Sequence[str]] | None = None,
    replaced_keys: Iterable[str] | None = None,
    deleted_partitions: Iterable[str] = (),
    indexed_columns: Sequence[str] = (),
) -> list[MdtRecord | MdtKeyBatch]:
    """The MDT records of a data commit, for the MDT partitions in ``available``.

    ``before`` is the data table's state, loaded before the commit completes;
    without it partition stats can only be merged from this commit's files (not tight) and the
    record-index entries of ``replaced`` file groups are left alone. ``replaced_keys`` are the
    keys of the replaced groups when the caller read them already (else they are read here).
    ``deleted_partitions`` (a ``delete_partition``): their ``partition_stats`` records (of the
    ``indexed_columns``) are deleted, as Apache Hudi 1.x does; they stay in the partition list
    until the clean that deletes their files.
    """
    available = set(available)
    state = _TableBefore(before, results, replaced or {}) if before is not None else None
    records: list[MdtRecord | MdtKeyBatch] = []
    added: dict[str, dict[str, int]] = defaultdict(dict)
    for r in results:
        added[r.write_stat.partition_path][_file_name(r)] = r.write_stat.file_size_in_bytes
    if K.FILES in available:
        for p, files in added.items():
            records.append(files_record(p, files))
        if added:
            records.append(all_partitions_record(sorted(added)))
    if K.COLUMN_STATS in available:
        for r in results:
            p = r.write_stat.partition_path
            for col, rng in r.column_ranges.items():
                if col in types:
                    records.append(column_stats_record(p, _file_name(r), rng, types[col]))
    if K.PARTITION_STATS in available:
        records.extend(_partition_stats(instant, results, types, state, K.COLUMN_STATS in available))
        records.extend(
            MdtRecord(K.PARTITION_STATS, K.partition_stats_key(col, p), None)
            for p in sorted(set(deleted_partitions))
            for col in indexed_columns
        )
    if K.RECORD_INDEX in available:
        # Deletes first: a key written again by this commit keeps its new location (later records
        # of a key win within one MDT deltacommit).
        if state is not None and state.replaced_ids:
            keys = set(replaced_keys) if replaced_keys is not None else state.keys_of_replaced()
            records.extend(record_index_delete(k) for k in sorted(keys))
        for r in results:
            p, file_id = r.write_stat.partition_path, r.write_stat.file_id
            inserted = r.inserted_keys
            if len(inserted):
                assert file_id is not None  # a stat of this writer's names its file group
                column = inserted if isinstance(inserted, pa.Array) else pa.array(inserted, pa.string())
                records.append(record_index_batch(column, p, file_id, instant))
            records.extend(record_index_delete(key) for key in r.deleted_keys)
    if K.BLOOM_FILTERS in available:
        for r in results:
            bloom = (r.bloom, r.bloom_type or "DYNAMIC_V0") if r.bloom else _footer_bloom(before, r)
            if bloom is not None:
                p = r.write_stat.partition_path
                records.append(bloom_filter_record(p, _file_name(r), bloom[0], bloom[1], instant))
    return records


def _footer_bloom(before: TableState | None, r: TaskResult) -> tuple[str, str] | None:
    """The bloom filter in the footer of the base file ``r`` wrote, for a task that did not keep
    it (its write started before the bloom_filters partition was scheduled for indexing)."""
    if before is None or _file_name(r).startswith("."):  # log file names start with a dot
        return None
    stat = r.write_stat
    if stat.path is None:
        return None
    footer = parquet_footer(before.storage, stat.path, stat.file_size_in_bytes)
    kv = pq.read_metadata(pa.BufferReader(footer)).metadata or {}
    text = kv.get(b"org.apache.hudi.bloomfilter")
    if not text:
        return None
    return text.decode(), kv.get(b"hoodie_bloom_filter_type_code", b"SIMPLE").decode()


def _file_name(r: TaskResult) -> str:
    return r.write_stat.file_name or ""


def _partition_stats(
    instant: str,
    results: Sequence[TaskResult],
    types: Mapping[str, pa.DataType],
    state: _TableBefore | None,
    column_stats_available: bool,
) -> list[MdtRecord]:
    """Each written partition's stats, from the latest slices after the commit (tight: a
    reader replaces what came before with them), unless a write with an earlier instant time is
    still pending (a concurrent writer under OCC). Apache Hudi merges MDT log blocks in instant
    order, so that write's record, though it completes later, is merged before this one: a tight
    record here, computed without that write's files, would replace its values and Hudi would
    prune partitions holding them. Then the record is a bound merged with what came before (not
    tight): sound in either merge order, exact again after the next tight one."""
    ranges: dict[str, dict[str, list[ColumnRange]]] = defaultdict(lambda: defaultdict(list))
    for r in results:
        for col, rng in r.column_ranges.items():
            if col in types:
                ranges[r.write_stat.partition_path][col].append(rng)
    mdt = state.table.metadata_table if state is not None else None
    tight = False
    if (
        state is not None
        and mdt is not None
        and column_stats_available
        and K.COLUMN_STATS in mdt.available_partitions
        and not state.earlier_writes_pending(instant)
    ):
        tight = True
        others = {p: names for p, names in state.other_live_files(results).items() if names}
        if others:
            columns = sorted({c for p in others for c in ranges.get(p, {})})
            for stat in mdt.stats.column_stats_of_files(others, columns):
                p = stat.partition_path
                if stat.file_name in others[p] and stat.column_name in ranges.get(p, {}):
                    ranges[p][stat.column_name].append(_range_of(stat))
    out = []
    for p, cols in ranges.items():
        for col, col_ranges in cols.items():
            canonical = [_as_type(r, types[col]) for r in col_ranges]
            merged = merge_ranges(_canonical(r, types[col]) for r, _ in canonical)
            if merged is not None and not all(bounded for _, bounded in canonical):
                # a file's range is of the column's type before a promotion that does not keep
                # order (double -> string): no sound bound for the partition, counts only
                merged = dataclasses.replace(merged, min_value=None, max_value=None)
            if merged is not None:
                out.append(
                    column_stats_record(p, "", merged, types[col], for_partition=True, tight_bound=tight)
                )
    return out


class _TableBefore:
    """The data table as it was before the commit, with the latest slices of the partitions the
    commit writes or replaces listed once for every record type that needs them."""

    def __init__(
        self, table: TableState, results: Sequence[TaskResult], replaced: Mapping[str, Sequence[str]]
    ):
        self.table = table
        self.replaced_ids = {(p, fid) for p, fids in replaced.items() for fid in fids}
        self._written = {r.write_stat.partition_path for r in results}
        self._partitions = sorted(self._written | set(replaced))

    def earlier_writes_pending(self, instant: str) -> bool:
        """Whether a data write with an instant time before ``instant`` is still pending."""
        return any(
            i.requested_time < instant and i.action in WRITE_ACTIONS for i in self.table.timeline.pending()
        )

    @cached_property
    def latest(self) -> list[FileSlice]:
        return self.table.file_system_view().latest_file_slices(self._partitions)

    def other_live_files(self, results: Sequence[TaskResult]) -> dict[str, set[str]]:
        """Per partition this commit writes to: the names of the files of its latest slices after
        the commit that this commit did not write itself."""
        new_base = {
            (r.write_stat.partition_path, r.write_stat.file_id)
            for r in results
            if not _file_name(r).startswith(".")  # log file names start with a dot
        }
        out: dict[str, set[str]] = defaultdict(set)
        for s in self.latest:
            key = (s.partition_path, s.file_id)
            if s.partition_path not in self._written:
                continue  # only replaced there: no partition stats are written for it
            if key in self.replaced_ids or key in new_base:
                continue  # replaced, or its new base file starts a new slice (COW rewrite, compaction)
            if s.base_file is not None:
                out[s.partition_path].add(s.base_file.name)
            out[s.partition_path].update(lf.name for lf in s.log_files)
        return out

    def keys_of_replaced(self) -> set[str]:
        from hudi_md.read.slice_reader import SliceRowReader

        reader = SliceRowReader(self.table)
        keys: set[str] = set()
        for s in self.latest:
            if (s.partition_path, s.file_id) in self.replaced_ids:
                keys.update(reader.keys(s).to_pylist())
        return keys


def _range_of(stat: ColumnStat) -> ColumnRange:
    return ColumnRange(
        stat.column_name,
        stat.min_value,
        stat.max_value,
        stat.null_count or 0,
        stat.value_count or 0,
        stat.total_size or 0,
        stat.total_uncompressed_size or 0,
    )


def _as_type(rng: ColumnRange, arrow_type: pa.DataType) -> tuple[ColumnRange, bool]:
    """``rng`` with its bounds in ``arrow_type`` where the column was promoted since the file was
    written and the conversion keeps order (int -> long -> float -> double, date -> string,
    bytes -> string); False when its bounds cannot be converted that way (they are dropped)."""
    lo, hi = rng.min_value, rng.max_value
    if lo is None and hi is None:
        return rng, True
    converted = [_keep_order(v, arrow_type) for v in (lo, hi)]
    if any(v is _NO_ORDER for v in converted):
        return dataclasses.replace(rng, min_value=None, max_value=None), False
    return dataclasses.replace(rng, min_value=converted[0], max_value=converted[1]), True


_NO_ORDER = object()


def _keep_order(value: Any, arrow_type: pa.DataType) -> Any:
    if value is None:
        return None
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        if isinstance(value, str):
            return value
        if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
            return value.isoformat()
        if isinstance(value, (bytes, bytearray)):
            return bytes(value).decode("utf-8", errors="replace")
        return _NO_ORDER
    if pa.types.is_floating(arrow_type):
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else _NO_ORDER
    if pa.types.is_integer(arrow_type):
        return value if isinstance(value, int) and not isinstance(value, bool) else _NO_ORDER
    if pa.types.is_decimal(arrow_type):
        if isinstance(value, decimal.Decimal):
            return value
        return decimal.Decimal(value) if isinstance(value, int) and not isinstance(value, bool) else _NO_ORDER
    return value


def _canonical(rng: ColumnRange, arrow_type: pa.DataType) -> ColumnRange:
    """The range with min/max in the form the MDT reader returns them, so that ranges computed
    by this writer and ranges read back from ``column_stats`` compare with each other."""

    def norm(value: Any) -> Any:
        wrapped, value_type = stat_value(value, arrow_type)
        return typed_stat_value(None if wrapped is None else wrapped[1]["value"], value_type)

    return ColumnRange(
        rng.column_name,
        norm(rng.min_value),
        norm(rng.max_value),
        rng.null_count,
        rng.value_count,
        rng.total_size,
        rng.total_uncompressed_size,
    )
