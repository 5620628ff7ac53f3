"""Writing the metadata table: partition initialisation, deltacommits, compaction.

Layout is Hudi 1.1's for table version 9: one log file per deltacommit per touched file group
(``.<fg>_<T>.log.1_<token>``) holding an HFILE_DATA block (records sorted by key) and, when keys
are removed, a DELETE block; compaction writes ``<fg>_<token>_<C>.hfile`` base files.
"""

from __future__ import annotations

import io
import logging
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_md.config import metadata as M
from hudi_md.formats.avro import parse_schema
from hudi_md.formats.commit_metadata import WriteStat
from hudi_md.metadata import keys as K
from hudi_md.metadata import metrics
from hudi_md.metadata.reader import METADATA_FOLDER
from hudi_md.metadata.records_builder import (
    MdtKeyBatch,
    MdtRecord,
    metadata_commit_schema_json,
    metadata_record_schema_json,
)
from hudi_md.storage import Storage
from hudi_md.table import config as C
from hudi_md.table.config import TableConfig, format_properties
from hudi_md.table.timeline import DELTA_COMMIT, Timeline
from hudi_md.table.timeline_writer import PendingInstant, TimelineWriter

log = logging.getLogger(__name__)

INIT_INSTANT_PREFIX = "00000000000000"
WRITE_TOKEN = "0-0-0"

# The options of each MDT partition's file group count (``files`` has one file group).
FILE_GROUP_COUNT_OPTIONS = {
    K.COLUMN_STATS: M.COLUMN_STATS_FILE_GROUP_COUNT,
    K.PARTITION_STATS: M.PARTITION_STATS_FILE_GROUP_COUNT,
    K.BLOOM_FILTERS: M.BLOOM_FILTER_FILE_GROUP_COUNT,
    K.RECORD_INDEX: M.RECORD_INDEX_MIN_FILE_GROUP_COUNT,
}
COMPACT_MAX_DELTA_COMMITS = M.COMPACT_MAX_DELTA_COMMITS.key
HFILE_BLOCK_SIZE = 1024 * 1024
MDT_BLOOM_ENTRIES, MDT_BLOOM_FPP, MDT_BLOOM_MAX = 10000, 1e-9, 100000

_FG_PREFIX = {
    K.FILES: "files",
    K.COLUMN_STATS: "col-stats",
    K.PARTITION_STATS: "partition-stats",
    K.BLOOM_FILTERS: "bloom-filters",
    K.RECORD_INDEX: "record-index",
}


def file_group_id(partition: str, index: int) -> str:
    prefix = _FG_PREFIX.get(partition) or partition.replace("_", "-")
    return f"{prefix}-{index:04d}-0"


def mdt_properties(data_config: TableConfig) -> dict[str, str]:
    """``hoodie.properties`` of a v9 MDT, key for key as Hudi 1.1 writes it."""
    name = f"{data_config.table_name}_metadata"
    return {
        C.TABLE_NAME: name,
        C.TABLE_TYPE: "MERGE_ON_READ",
        C.TABLE_VERSION: str(data_config.table_version),
        C.INITIAL_VERSION: str(data_config.table_version),
        C.BASE_FILE_FORMAT: "HFILE",
        C.RECORD_KEY_FIELDS: "key",
        C.POPULATE_META_FIELDS: "false",
        C.PAYLOAD_CLASS: "org.apache.hudi.metadata.HoodieMetadataPayload",
        C.KEYGEN_TYPE: "HOODIE_TABLE_METADATA",
        C.RECORD_MERGE_MODE: "CUSTOM",
        C.MERGE_STRATEGY_ID: "00000000-0000-0000-0000-000000000000",
        C.TIMELINE_LAYOUT_VERSION: "2",
        C.ARCHIVELOG_FOLDER: "history",
        C.TIMELINE_PATH: "timeline",
        C.TIMELINE_HISTORY_PATH: "history",
        C.DROP_PARTITION_COLUMNS: "false",
        C.CHECKSUM: str(C.compute_checksum("", name)),
    }


def partition_metadata_bytes(commit_time: str, depth: int) -> bytes:
    from datetime import datetime, timezone

    now = datetime.now(timezone.utc).strftime("%a %b %d %H:%M:%S UTC %Y")
    return f"#partition metadata\n#{now}\ncommitTime={commit_time}\npartitionDepth={depth}\n".encode()


@dataclass
class DeltaCommitResult:
    instant: str
    log_files: dict[str, list[tuple[str, int]]] = field(default_factory=dict)  # partition -> [(name, size)]


class MetadataTableWriter:
    """Writes the MDT of one data table (the caller holds the table lock)."""

    def __init__(
        self, data_storage: Storage, data_config: TableConfig, options: Mapping[str, str] | None = None
    ):
        self.data_storage = data_storage
        self.data_config = data_config
        self.options = dict(options or {})
        self.storage = data_storage.child(METADATA_FOLDER)
        self._schema_json = metadata_record_schema_json()
        self.record_schema_json = self._schema_json  # what the HFiles written here name as schema
        self._schema = parse_schema(self._schema_json)
        # The schema an MDT instant's metadata records: without the meta fields (the MDT does not
        # populate them), as Apache Hudi writes it. With them, Hudi's next MDT append after an
        # MDT hudi-md had (re)built failed (ArrayIndexOutOfBoundsException in
        # HoodieMetadataPayload.getInsertValue).
        self.commit_schema_json = metadata_commit_schema_json()

    # --- table -----------------------------------------------------------------------------

    def exists(self) -> bool:
        return self.storage.exists(C.PROPERTIES_FILE)

    def create_table(self) -> None:
        props = mdt_properties(self.data_config)
        self.storage.write_atomic(C.PROPERTIES_FILE, format_properties(props).encode("utf-8"))
        self.storage.makedirs(".hoodie/timeline/history")

    def timeline(self) -> Timeline:
        return Timeline.load(self.storage, ".hoodie/timeline", 2)

    def timeline_writer(self) -> TimelineWriter:
        return TimelineWriter(self.storage, ".hoodie/timeline")

    def file_group_count(self, partition: str) -> int:
        option = FILE_GROUP_COUNT_OPTIONS.get(partition)
        return 1 if option is None else max(1, option.get(self.options))

    def existing_file_group_count(self, partition: str) -> int:
        ids = {
            e.name.split("_")[0].lstrip(".")
            for e in self.storage.list(partition)
            if e.name[0] != "." or ".log." in e.name
        }
        ids.discard(".hoodie")
        return len({i for i in ids if not i.startswith("hoodie_partition_metadata")})

    # --- encoding ------------------------------------------------------------------------------

    def _encode(self, payload: dict[str, Any]) -> bytes:
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, self._schema, payload)
        return buf.getvalue()

    def encode(self, payload: dict[str, Any]) -> bytes:
        """A record payload's Avro bytes (the writer's record schema)."""
        return self._encode(payload)

    def hfile_of_columns(self, partition: str, keys: pa.Array, values: pa.Array, *, base_file: bool) -> bytes:
        """An HFile of MDT ``partition`` of cells given as Arrow columns: ``keys`` unique and sorted
        by their bytes, ``values`` the encoded records."""
        cells = _Cells(keys.cast(pa.string()), pc.dictionary_encode(values.cast(pa.binary())))
        return self.hfile_cells_bytes(partition, cells, base_file=base_file)

    def hfile_bytes(self, partition: str, records: Sequence[MdtRecord], *, base_file: bool) -> bytes:
        """An HFile of MDT ``partition`` of ``records`` (unique keys, sorted by their bytes)."""
        cells = _Cells.of_records(records, self._encode)
        return self.hfile_cells_bytes(partition, cells, base_file=base_file)

    def hfile_cells_bytes(self, partition: str, cells: _Cells, *, base_file: bool) -> bytes:
        from hudi_md.formats.hfile import HFileWriter

        # Java's default deflate level for every MDT partition: Hudi's bytes. The record index once
        # took level 3 (half the CPU) but its blocks were then ~38 % larger than Hudi's (issue 40).
        writer = HFileWriter(block_size=HFILE_BLOCK_SIZE, compression="GZ")
        writer.append_columns(cells.keys, cells.values)
        writer.add_file_info("schema", self._schema_json.encode("utf-8"))
        if base_file and len(cells.keys):
            from hudi_md.index.bloom import BloomFilter

            bloom = BloomFilter.create(
                MDT_BLOOM_ENTRIES, MDT_BLOOM_FPP, type_code="DYNAMIC_V0", max_entries=MDT_BLOOM_MAX
            )
            bloom.add_column(cells.keys)
            writer.add_meta_block("bloomFilter", bloom.serialize().encode("utf-8"))
            writer.add_file_info("bloomFilterTypeCode", b"DYNAMIC_V0")
            writer.add_file_info("minRecordKey", cells.keys[0].as_py().encode("utf-8"))
            writer.add_file_info("maxRecordKey", cells.keys[-1].as_py().encode("utf-8"))
        return writer.finish()

    def _log_file_bytes(
        self, partition: str, instant: str, upserts: _Cells | None, deletes: Sequence[MdtRecord]
    ) -> bytes:
        from hudi_md.formats.logfile import DeleteRecord
        from hudi_md.formats.logfile_writer import delete_block, hfile_data_block

        out = b""
        if upserts is not None:
            block = self.hfile_cells_bytes(partition, upserts, base_file=False)
            out += hfile_data_block(block, self._schema_json, instant)
        if deletes or upserts is None:
            records = [DeleteRecord(d.key, d.partition, 0) for d in deletes]
            out += delete_block(records, instant, self._schema_json if records else None)
        return out

    # --- deltacommits -------------------------------------------------------------------------------

    def write_records(
        self,
        instant: str,
        records: Iterable[MdtRecord | MdtKeyBatch],
        *,
        partitions: Iterable[str],
        action: str = DELTA_COMMIT,
        operation: str = "UPSERT_PREPPED",
    ) -> DeltaCommitResult:
        """One MDT deltacommit ``instant`` carrying ``records``; touches every listed MDT partition.

        Records for the same key within one commit are combined with Hudi's merge rules first.
        Key batches (the record index's entries of a data file group) go to the HFile blocks as
        Arrow columns.
        """
        with metrics.timed("sync"):
            return self._write_records(
                instant, records, partitions=partitions, action=action, operation=operation
            )

    def _write_records(
        self,
        instant: str,
        records: Iterable[MdtRecord | MdtKeyBatch],
        *,
        partitions: Iterable[str],
        action: str,
        operation: str,
    ) -> DeltaCommitResult:
        from hudi_md.formats.commit_metadata_writer import commit_metadata_record, serialize_instant_metadata

        items = list(records)
        groups = self._group_cells(items, partitions)
        if groups is None:
            # a key in two batches, or in a batch and a record: the records one by one, in order,
            # so that the later of a key wins as always
            items = [x for r in items for x in (r.records() if isinstance(r, MdtKeyBatch) else (r,))]
            groups = self._group_cells(items, partitions)
            assert groups is not None  # records alone are merged per key
        pending = PendingInstant.begin(self.timeline_writer(), instant, action)
        result = DeltaCommitResult(instant)
        stats: dict[str, list[WriteStat]] = {}
        for partition, index, deletes, upserts, count in groups:
            fg = file_group_id(partition, index)
            name = f".{fg}_{instant}.log.1_{WRITE_TOKEN}"
            data = self._log_file_bytes(partition, instant, upserts, deletes)
            self.storage.write_bytes(f"{partition}/{name}", data)
            result.log_files.setdefault(partition, []).append((name, len(data)))
            stat = mdt_write_stat(partition, fg, name, len(data), count, log=True)
            stats.setdefault(partition, []).append(stat)
        meta = commit_metadata_record(
            stats, operation_type=operation, extra_metadata={"schema": self.commit_schema_json}
        )
        pending.complete(serialize_instant_metadata("commit", meta))
        return result

    def _group_cells(
        self, items: Sequence[MdtRecord | MdtKeyBatch], partitions: Iterable[str]
    ) -> list[tuple[str, int, list[MdtRecord], _Cells | None, int]] | None:
        """Each touched MDT file group's deletes, upserts (as sorted cells) and record count,
        records of one key merged with Hudi's rules; None when a batch key is also in another
        batch or in a record (duplicates, adjacent once each group's keys are sorted), whose order
        only the records one by one keep."""
        from hudi_md.metadata.records import merge

        by_partition: dict[str, dict[str, MdtRecord]] = defaultdict(dict)
        batches: dict[str, list[MdtKeyBatch]] = defaultdict(list)
        for r in items:
            if isinstance(r, MdtKeyBatch):
                batches[r.partition].append(r)
                continue
            prev = by_partition[r.partition].get(r.key)
            if prev is not None and prev.payload is not None and r.payload is not None:
                merged = merge(_as_reader_record(prev), _as_reader_record(r))
                r = MdtRecord(r.partition, r.key, _merge_payload(prev.payload, r.payload, merged))
            by_partition[r.partition][r.key] = r
        out: list[tuple[str, int, list[MdtRecord], _Cells | None, int]] = []
        for partition in sorted(set(partitions) | set(by_partition) | set(batches)):
            n = self.existing_file_group_count(partition) or self.file_group_count(partition)
            groups = _by_file_group(list(by_partition.get(partition, {}).values()), n)
            batch_parts = _batches_by_file_group(batches.get(partition, []), n)
            for index in sorted(set(groups) | set(batch_parts)):
                group = groups.get(index, [])
                parts = batch_parts.get(index, [])
                deletes = sorted((r for r in group if r.payload is None), key=lambda r: r.key.encode("utf-8"))
                upserts = _Cells.of_group([r for r in group if r.payload is not None], parts, self._encode)
                if parts and upserts is not None and upserts.repeats_a_key(r.key for r in deletes):
                    return None
                count = len(group) + sum(len(keys) for _, keys in parts)
                out.append((partition, index, deletes, upserts, count))
        return out

    # --- partition initialisation ------------------------------------------------------------------

    def next_init_instant(self) -> str:
        used = [i.requested_time for i in self.timeline() if i.requested_time.startswith(INIT_INSTANT_PREFIX)]
        n = max((int(t[len(INIT_INSTANT_PREFIX) :] or 0) for t in used), default=-1) + 1
        return f"{INIT_INSTANT_PREFIX}{n:03d}"

    def initialize_partition(
        self,
        partition: str,
        records: Sequence[MdtRecord] | Iterable[Sequence[MdtRecord]],
        *,
        num_file_groups: int | None = None,
    ) -> str:
        """Create an MDT partition: per file group an empty DELETE block log and a base HFile.

        ``records`` may also be an iterable of batches: the first batch becomes the base HFiles,
        each further batch one more log version (``.log.2``, ``.log.3``, ...) of the init instant,
        so memory is bounded by a batch, not by the table.

        Returns the init instant (``00000000000000`` + 3 digits, as Hudi 1.x numbers them).
        """
        with metrics.timed(f"initialize_{partition}"):
            return self._initialize_partition(partition, records, num_file_groups=num_file_groups)

    def _initialize_partition(
        self,
        partition: str,
        records: Sequence[MdtRecord] | Iterable[Sequence[MdtRecord]],
        *,
        num_file_groups: int | None = None,
    ) -> str:
        from hudi_md.formats.commit_metadata_writer import commit_metadata_record, serialize_instant_metadata
        from hudi_md.formats.logfile_writer import delete_block

        if not self.exists():
            self.create_table()
        instant = self.next_init_instant()
        n = num_file_groups or self.file_group_count(partition)
        pending = PendingInstant.begin(self.timeline_writer(), instant, DELTA_COMMIT)
        self.storage.write_bytes(
            f"{partition}/.hoodie_partition_metadata", partition_metadata_bytes(instant, 1)
        )
        stats: dict[str, list[WriteStat]] = {partition: []}
        for index in range(n):
            fg = file_group_id(partition, index)
            log_name = f".{fg}_{instant}.log.1_{WRITE_TOKEN}"
            log_bytes = delete_block([], instant)
            self.storage.write_bytes(f"{partition}/{log_name}", log_bytes)
            stats[partition].append(mdt_write_stat(partition, fg, log_name, len(log_bytes), 0, log=True))
        stats[partition] += self.write_partition_records(partition, instant, n, records)
        meta = commit_metadata_record(
            stats, operation_type="BULK_INSERT", extra_metadata={"schema": self.commit_schema_json}
        )
        pending.complete(serialize_instant_metadata("commit", meta))
        return instant

    def write_partition_records(
        self,
        partition: str,
        instant: str,
        num_file_groups: int,
        records: Sequence[MdtRecord] | Iterable[Sequence[MdtRecord]],
    ) -> list[WriteStat]:
        """The files of a partition built at ``instant`` (its init instant): the first batch of
        ``records`` becomes one base HFile per file group, each further batch one more log
        version (``.log.2``, ...), so memory is bounded by a batch. Returns their write stats."""
        from hudi_md.formats.logfile_writer import hfile_data_block

        # one batch, or batches: told apart by the first element, which mypy cannot follow
        if isinstance(records, Sequence) and (not records or isinstance(records[0], MdtRecord)):
            batches: Iterator[Sequence[MdtRecord]] = iter([cast(Sequence[MdtRecord], records)])
        else:
            batches = iter(cast(Iterable[Sequence[MdtRecord]], records))
        n = num_file_groups
        stats: list[WriteStat] = []
        groups = _by_file_group(next(batches, []), n)
        for index, group in sorted(groups.items()):
            fg = file_group_id(partition, index)
            base_name = f"{fg}_{WRITE_TOKEN}_{instant}.hfile"
            data = self.hfile_bytes(partition, _dedupe(group), base_file=True)
            self.storage.write_bytes(f"{partition}/{base_name}", data)
            stats.append(mdt_write_stat(partition, fg, base_name, len(data), len(group), log=False))
        for version, batch in enumerate(batches, start=2):
            later = _by_file_group(batch, n)
            for index, group in sorted(later.items()):
                fg = file_group_id(partition, index)
                name = f".{fg}_{instant}.log.{version}_{WRITE_TOKEN}"
                block = self.hfile_bytes(partition, _dedupe(group), base_file=False)
                data = hfile_data_block(block, self._schema_json, instant)
                self.storage.write_bytes(f"{partition}/{name}", data)
                stats.append(mdt_write_stat(partition, fg, name, len(data), len(group), log=True))
        return stats


def _by_file_group(records: Sequence[MdtRecord], num_file_groups: int) -> dict[int, list[MdtRecord]]:
    """The records of each file group (Hudi's key hash, computed for all keys at once)."""
    groups: dict[int, list[MdtRecord]] = defaultdict(list)
    indexes = K.file_group_indexes([r.key for r in records], num_file_groups)
    for r, index in zip(records, indexes, strict=True):
        groups[index].append(r)
    return groups


def _batches_by_file_group(
    batches: Sequence[MdtKeyBatch], num_file_groups: int
) -> dict[int, list[tuple[MdtKeyBatch, pa.Array]]]:
    """Each batch's keys split by file group (Hudi's key hash over the column)."""
    out: dict[int, list[tuple[MdtKeyBatch, pa.Array]]] = defaultdict(list)
    for b in batches:
        keys = b.keys.combine_chunks() if isinstance(b.keys, pa.ChunkedArray) else b.keys
        keys = keys.cast(pa.string())
        indexes = K.file_group_indexes_of_column(keys, num_file_groups)
        for index in np.unique(indexes).tolist():
            out[int(index)].append((b, keys.filter(pa.array(indexes == index))))
    return out


@dataclass(frozen=True)
class _Cells:
    """An HFile's cells as Arrow columns: unique keys sorted by their bytes, and their values
    (a dictionary column: many cells share one encoded payload)."""

    keys: pa.Array
    values: pa.DictionaryArray

    def repeats_a_key(self, deleted: Iterable[str] = ()) -> bool:
        """Whether a key repeats, or is also one of ``deleted`` (the keys are sorted, so repeats
        are neighbours)."""
        n = len(self.keys)
        if n > 1 and pc.any(pc.equal(self.keys.slice(1), self.keys.slice(0, n - 1))).as_py():
            return True
        gone = pa.array(list(deleted), pa.string())
        return bool(len(gone)) and bool(pc.any(pc.is_in(self.keys, value_set=gone)).as_py())

    @staticmethod
    def of_records(records: Sequence[MdtRecord], encode: Callable[[dict[str, Any]], bytes]) -> _Cells:
        """Cells of records already sorted and unique."""
        values, codes = _shared_values(records, encode)
        return _Cells(pa.array([r.key for r in records], pa.string()), _dictionary(codes, values))

    @staticmethod
    def of_group(
        records: Sequence[MdtRecord],
        parts: Sequence[tuple[MdtKeyBatch, pa.Array]],
        encode: Callable[[dict[str, Any]], bytes],
    ) -> _Cells | None:
        """The upserts of one file group: its records and its share of each batch, sorted."""
        if not parts:
            ordered = sorted(records, key=lambda r: r.key.encode("utf-8"))
            return _Cells.of_records(ordered, encode) if ordered else None
        values, codes = _shared_values(records, encode)
        keys = [pa.array([r.key for r in records], pa.string())]
        all_codes = [np.asarray(codes, dtype=np.int32)]
        for batch, batch_keys in parts:
            keys.append(batch_keys)
            all_codes.append(np.full(len(batch_keys), len(values), dtype=np.int32))
            values.append(batch.encoded)
        key_column = pa.concat_arrays(keys)
        order = pc.sort_indices(key_column)  # by the keys' bytes, as HFiles want them
        codes_in_order = np.concatenate(all_codes)[order.to_numpy()]
        return _Cells(key_column.take(order), _dictionary(codes_in_order, values))


def _shared_values(
    records: Sequence[MdtRecord], encode: Callable[[dict[str, Any]], bytes]
) -> tuple[list[bytes], list[int]]:
    """The distinct encoded payloads of ``records`` (shared ones once) and each record's code."""
    values: list[bytes] = []
    codes: list[int] = []
    seen: dict[int, int] = {}
    for r in records:
        if r.encoded is None:
            codes.append(len(values))
            values.append(encode(r.payload or {}))
            continue
        code = seen.get(id(r.encoded))
        if code is None:
            code = seen[id(r.encoded)] = len(values)
            values.append(r.encoded)
        codes.append(code)
    return values, codes


def _dictionary(codes: Sequence[int] | np.ndarray, values: Sequence[bytes]) -> pa.DictionaryArray:
    return pa.DictionaryArray.from_arrays(pa.array(codes, pa.int32()), pa.array(values, pa.binary()))


def _dedupe(records: Sequence[MdtRecord]) -> list[MdtRecord]:
    """One record per key (the last), sorted by key bytes as HFiles want them."""
    out: dict[str, MdtRecord] = {}
    for r in records:
        out[r.key] = r
    return [out[k] for k in sorted(out, key=lambda k: k.encode("utf-8"))]


def _as_reader_record(r: MdtRecord) -> dict[str, Any]:
    """A builder payload in the reader's normalised shape, for the shared merge rules."""
    from hudi_md.formats.avro import unwrap_value

    p = dict(r.payload or {})
    cs = p.get("ColumnStatsMetadata")
    if cs is not None:
        cs = dict(cs)
        cs["minValue"] = unwrap_value(cs.get("minValue"))
        cs["maxValue"] = unwrap_value(cs.get("maxValue"))
        p["ColumnStatsMetadata"] = cs
    return p


def _merge_payload(
    older: dict[str, Any], newer: dict[str, Any], merged: dict[str, Any] | None
) -> dict[str, Any]:
    if merged is None:
        return newer
    if merged.get("filesystemMetadata") is not None:
        return {**newer, "filesystemMetadata": merged["filesystemMetadata"]}
    return newer


def mdt_write_stat(
    partition: str, file_id: str, name: str, size: int, num_writes: int, *, log: bool
) -> WriteStat:
    path = f"{partition}/{name}"
    if log:
        return WriteStat.delta(
            partition, file_id, path, size=size, num_writes=num_writes, num_inserts=num_writes
        )
    return WriteStat.base(partition, file_id, path, size=size, num_writes=num_writes, num_inserts=num_writes)
