"""MDT lifecycle (RFC-15): build partitions from the table's current state, delete the MDT.

Building reads each data partition once (a listing, then footers or keys of its latest files) and
hands the records of one partition batch at a time to the writer, so memory stays bounded by the
batch, not by the table.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa

from hudi_md.metadata import keys as K
from hudi_md.metadata.column_ranges import (
    DEFAULT_MAX_COLUMNS_TO_INDEX,
    column_ranges_from_parquet,
    columns_to_index,
    parquet_footer,
    ranges_of_table,
)
from hudi_md.metadata.records_builder import (
    ColumnRange,
    MdtRecord,
    all_partitions_record,
    bloom_filter_record,
    column_stats_record,
    files_record,
    merge_ranges,
    record_index_records,
)
from hudi_md.metadata.writer import MetadataTableWriter
from hudi_md.storage import Storage
from hudi_md.table import config as C
from hudi_md.table.config import TableConfig, update_table_config
from hudi_md.table.filenames import LogFileName
from hudi_md.table.fs_view import FileSlice, FileSystemView
from hudi_md.table.state import TableState

log = logging.getLogger(__name__)

INDEX_DEFS = ".hoodie/.index_defs/index.json"
PARTITION_ORDER = list(K.MAINTAINED_PARTITIONS)

Progress = Callable[[str, int, int], None]


class RecordSource(Protocol):
    """Where a build's MDT records come from: :class:`PartitionBuilder` (in this process) or
    ``hudi_md.spark.indexing.SparkPartitionBuilder`` (on a Spark cluster's executors).
    ``table``: the table as listed for the build (its timeline says which instants it covers).
    ``logged``: per MDT partition, the instants whose column stats a log block of the partition
    carries already (set by an asynchronous build; see :func:`records_from_facts`)."""

    table: TableState
    columns: list[str]
    logged: dict[str, frozenset[str]]

    def file_groups(self, partition: str) -> int: ...

    def batches(self, partition: str) -> Iterator[list[MdtRecord]]: ...


class IndexOptions(Protocol):
    """The write options the MDT's initialisation reads (``hudi_md.write.config.WriteConfig``)."""

    @property
    def column_stats_columns(self) -> list[str] | None: ...
    @property
    def column_stats_max_columns(self) -> int: ...


# (storage, MDT writer, write options, progress) -> the records of a build
BuilderFactory = Callable[[Storage, MetadataTableWriter, IndexOptions | None, Progress | None], RecordSource]


def delete_metadata_table(storage: Storage, *, definitions: bool = True) -> TableConfig:
    """Clear the table config first (readers stop trusting the MDT), then remove its files and,
    with ``definitions``, ``index.json``'s definitions (without: the MDT is about to be built
    again with the same indexes, on the same columns)."""
    config = update_table_config(storage, {C.METADATA_PARTITIONS: "", C.METADATA_PARTITIONS_INFLIGHT: ""})
    if storage.exists(".hoodie/metadata"):
        storage.delete(".hoodie/metadata", recursive=True)
    if definitions and _read_index_defs(storage):
        _store_index_defs(storage, {})
    return config


def drop_indexes(storage: Storage, names: Sequence[str]) -> TableConfig:
    """Drop MDT partitions (indexes: a secondary or expression index, the record index, ...), as
    Apache Hudi's ``DROP INDEX`` does: the table config first, so no reader or writer uses them
    any more, then their folders and their ``index.json`` definitions. ``files`` is the MDT
    itself (use :func:`delete_metadata_table`). The caller holds the table lock."""
    from hudi_md.errors import InvalidOptionError

    config = TableConfig.load(storage)
    present = [*config.metadata_partitions, *config.metadata_partitions_inflight]
    unknown = [n for n in names if n not in present]
    if unknown:
        raise InvalidOptionError(
            f"{storage.uri()} has no metadata-table index {', '.join(unknown)} "
            f"(it has {', '.join(present) or 'none'})"
        )
    if "files" in names:
        raise InvalidOptionError("'files' is the metadata table itself: delete the metadata table instead")
    config = update_table_config(
        storage,
        {
            C.METADATA_PARTITIONS: ",".join(p for p in config.metadata_partitions if p not in names),
            C.METADATA_PARTITIONS_INFLIGHT: ",".join(
                p for p in config.metadata_partitions_inflight if p not in names
            ),
        },
    )
    for name in names:
        folder = f".hoodie/metadata/{name}"
        if storage.exists(folder):
            storage.delete(folder, recursive=True)
    defs = _read_index_defs(storage)
    if any(n in defs for n in names):
        kept = {k: v for k, v in defs.items() if k not in names}
        _store_index_defs(storage, kept)
    return config


def _drop_half_built(
    storage: Storage, writer: MetadataTableWriter, config: TableConfig, partitions: Sequence[str]
) -> None:
    """Remove what a build that died left of the MDT partitions about to be built. The table
    config is the truth (readers use only the partitions it lists), so a partition it does not
    list is half-built whatever its files say: its folder goes, with every pending init instant
    and each completed one that built only such partitions. An MDT whose config lists no
    partition at all goes whole."""
    from hudi_md.errors import CorruptFileError
    from hudi_md.metadata.writer import INIT_INSTANT_PREFIX

    if not storage.exists(".hoodie/metadata"):
        return
    if not config.metadata_partitions and not config.metadata_partitions_inflight:
        log.warning("removing a half-built metadata table of %s", storage.uri())
        storage.delete(".hoodie/metadata", recursive=True)
        return
    doomed = set(partitions) - set(config.metadata_partitions) - set(config.metadata_partitions_inflight)
    if not doomed:
        return
    timeline = writer.timeline()
    for instant in timeline:
        t = instant.requested_time
        if not t.startswith(INIT_INSTANT_PREFIX):
            continue
        if instant.is_completed:
            try:
                built = set((timeline.metadata(instant).get("partitionToWriteStats") or {}).keys())
            except CorruptFileError:
                built = set()
            if built and not built <= doomed:
                continue
        log.warning("removing MDT init instant %s of a build that did not finish", t)
        for e in writer.storage.list(".hoodie/timeline"):
            if e.name.startswith((f"{t}.", f"{t}_")) and not e.is_dir:
                writer.storage.delete(e.path)
    for p in sorted(doomed):
        if writer.storage.exists(p):
            log.warning("removing half-built MDT partition %s", p)
            writer.storage.delete(p, recursive=True)


def _read_index_defs(storage: Storage) -> dict[str, Any]:
    """``index.json``'s definitions; a file that does not parse (torn where renames are not
    atomic) counts as none: the definitions of the MDT partitions are written anew."""
    if not storage.exists(INDEX_DEFS):
        return {}
    try:
        value = json.loads(storage.read_bytes(INDEX_DEFS))
        defs = value.get("indexDefinitions", {}) if isinstance(value, dict) else None
    except (ValueError, UnicodeDecodeError):
        defs = None
    if not isinstance(defs, dict):
        log.warning("%s does not parse; writing its index definitions anew", storage.uri(INDEX_DEFS))
        return {}
    return defs


def _store_index_defs(storage: Storage, defs: dict[str, Any]) -> None:
    storage.write_atomic(INDEX_DEFS, json.dumps({"indexDefinitions": defs}, indent=2).encode("utf-8"))


def _index_defs(partitions: Iterable[str], columns: Sequence[str]) -> dict[str, Any]:
    defs: dict[str, Any] = {}
    for p in partitions:
        if p == K.COLUMN_STATS:
            defs[p] = {
                "indexName": p,
                "indexType": p,
                "indexFunction": p,
                "sourceFields": list(columns),
                "indexOptions": {},
                "version": "V2",
            }
        elif p == K.RECORD_INDEX:
            defs[p] = {
                "indexName": p,
                "indexType": p,
                "indexFunction": "",
                "sourceFields": [],
                "indexOptions": {"isPartitioned": "false"},
                "version": "V1",
            }
    return defs


def index_definitions(storage: Storage) -> dict[str, Any]:
    """``index.json``'s definitions by MDT partition (none when it is absent or does not parse)."""
    return _read_index_defs(storage)


def indexed_columns(storage: Storage) -> list[str] | None:
    """The columns ``index.json``'s column_stats definition names (what every writer of the
    table indexes when its options name none, as Apache Hudi does), None when it names none."""
    fields = (_read_index_defs(storage).get(K.COLUMN_STATS) or {}).get("sourceFields")
    return [str(f) for f in fields] if isinstance(fields, list) and fields else None


def drop_index_defs(storage: Storage, partitions: Iterable[str]) -> None:
    """Remove the ``index.json`` definitions of ``partitions`` (those it has)."""
    defs = _read_index_defs(storage)
    kept = {k: v for k, v in defs.items() if k not in set(partitions)}
    if kept != defs:
        _store_index_defs(storage, kept)


def write_index_defs(storage: Storage, partitions: Iterable[str], columns: Sequence[str]) -> None:
    """The ``index.json`` definitions of built partitions (column_stats' source fields, the
    record index)."""
    existing = _read_index_defs(storage)
    existing.update(_index_defs(partitions, columns))
    if existing:
        _store_index_defs(storage, existing)


def fill_index_source_fields(storage: Storage, columns: Sequence[str]) -> None:
    """Name the indexed columns in ``index.json``'s column_stats definition if it names none yet
    (Apache Hudi lists them there and reads them back when it writes to the table)."""
    if not columns or not storage.exists(INDEX_DEFS):
        return
    defs = _read_index_defs(storage)
    if not defs:  # torn: rewritten whole from the table config's partitions
        config = TableConfig.load(storage)
        write_index_defs(storage, config.metadata_partitions, columns)
        return
    col_stats = defs.get(K.COLUMN_STATS)
    if col_stats is None or col_stats.get("sourceFields"):
        return
    col_stats["sourceFields"] = list(columns)
    _store_index_defs(storage, defs)


def initialize_partitions(
    storage: Storage,
    config: TableConfig,
    partitions: Sequence[str],
    write_config: IndexOptions | None,
    options: Mapping[str, str],
    *,
    progress: Progress | None = None,
) -> TableConfig:
    """Build the named MDT partitions from the table as it is now (the caller holds the lock)."""
    writer = MetadataTableWriter(storage, config, options)
    _drop_half_built(storage, writer, config, partitions)
    ordered = [p for p in PARTITION_ORDER if p in partitions] + [
        p for p in partitions if p not in PARTITION_ORDER
    ]
    builder = PartitionBuilder(storage, writer, write_config, progress=progress)
    for mdt_partition in ordered:
        writer.initialize_partition(
            mdt_partition, builder.batches(mdt_partition), num_file_groups=builder.file_groups(mdt_partition)
        )
        available = sorted(set(TableConfig.load(storage).metadata_partitions) | {mdt_partition})
        config = update_table_config(storage, {C.METADATA_PARTITIONS: ",".join(available)})
    write_index_defs(storage, ordered, builder.columns)
    return config


class PartitionBuilder:
    """The table's committed files as listed once, now (not through the MDT), and the MDT
    partitions built from them: each one's file-group count (Hudi's sizing rules) and records."""

    def __init__(
        self,
        storage: Storage,
        writer: MetadataTableWriter,
        write_config: IndexOptions | None,
        *,
        progress: Progress | None = None,
    ) -> None:
        self.writer = writer
        self.progress = progress
        self.table = TableState(storage, {"hoodie.metadata.enable": "false"}, physical_listing=True)
        has_data = bool(self.table.timeline.write_timeline())
        schema = self.table.schema if has_data else None
        self.types = {f.name: f.type for f in schema} if schema is not None else {}
        self.columns = _columns_to_index(schema, write_config) if schema is not None else []
        self.data_partitions = self.table.partitions() if has_data else []
        self.view = self.table.file_system_view()
        self.logged: dict[str, frozenset[str]] = {}

    def file_groups(self, partition: str) -> int:
        estimate = _estimate_records(partition, self.table, self.data_partitions)
        return _file_groups(self.writer, partition, estimate)

    def batches(self, partition: str) -> Iterator[list[MdtRecord]]:
        """The partition's records, one batch of data partitions at a time (memory is bounded by
        the batch), read lazily."""
        data_partitions, progress = self.data_partitions, self.progress
        if partition == K.FILES:
            yield [all_partitions_record(data_partitions)]
        for i, batch in enumerate(_batches(data_partitions, BATCH_PARTITIONS)):
            if progress:
                progress(partition, i * BATCH_PARTITIONS, len(data_partitions))
            yield self.records_of(partition, batch)
        if progress:
            progress(partition, len(data_partitions), len(data_partitions))

    def records_of(self, partition: str, data_partitions: Sequence[str]) -> list[MdtRecord]:
        """The records of MDT ``partition`` for the files of ``data_partitions`` (as listed)."""
        if partition == K.FILES:
            return _records_for(partition, self.table, self.view, data_partitions, self.columns, self.types)
        slices = self.view.latest_file_slices(list(data_partitions))
        reader = SliceFactsReader(self.table, self.columns)
        return self.make_records(partition, [(s, reader.read(partition, s)) for s in slices])

    def make_records(self, partition: str, facts: Sequence[tuple[FileSlice, SliceFacts]]) -> list[MdtRecord]:
        """The records of slices as read (:func:`records_from_facts`, leaving out what is logged)."""
        return records_from_facts(
            partition, facts, self.types, logged=self.logged.get(partition, frozenset())
        )


BATCH_PARTITIONS = 64


def _estimate_records(mdt_partition: str, table: TableState, partitions: Sequence[str]) -> int:
    """Record-index size estimate from the commit metadata (no data is read for it)."""
    if mdt_partition != K.RECORD_INDEX:
        return 0
    total = 0
    for instant in table.timeline.write_timeline():
        for stats in (table.timeline.metadata(instant).get("partitionToWriteStats") or {}).values():
            total += sum(int(s.get("numInserts") or 0) for s in stats or ())
    return total


def _file_groups(writer: MetadataTableWriter, partition: str, estimated_records: int) -> int:
    n = writer.file_group_count(partition)
    if partition != K.RECORD_INDEX:
        return n
    # estimateFileGroupCount: records x growth 2.0 / (1 GiB / 48 bytes), clamped to [min, max].
    estimate = int(estimated_records * 2.0 // ((1 << 30) // 48))
    return max(n, min(estimate, 10000))


def _batches(items: Sequence[str], size: int) -> Iterable[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _columns_to_index(schema: pa.Schema, write_config: IndexOptions | None) -> list[str]:
    return columns_to_index(
        schema,
        column_list=getattr(write_config, "column_stats_columns", None),
        max_columns=getattr(write_config, "column_stats_max_columns", DEFAULT_MAX_COLUMNS_TO_INDEX),
        missing_ok=getattr(write_config, "column_list_from_table", False),
    )


def _records_for(
    mdt_partition: str,
    table: TableState,
    view: FileSystemView,
    partitions: Sequence[str],
    columns: Sequence[str],
    types: Mapping[str, pa.DataType],
) -> list[MdtRecord]:
    if mdt_partition == K.FILES:
        return [files_record(p, files) for p, files in view.visible_files(list(partitions)).items()]
    slices = view.latest_file_slices(list(partitions))
    reader = SliceFactsReader(table, columns)
    return records_from_facts(mdt_partition, [(s, reader.read(mdt_partition, s)) for s in slices], types)


@dataclass(frozen=True)
class SliceFacts:
    """What one latest file slice contributes to an MDT partition other than ``files``, as read
    from its files; :func:`records_from_facts` makes the records. Reading is the costly half (a
    Spark build does it on the executors), making the records the cheap one."""

    # (log file name, column ranges of the records in that log file), in the slice's log order
    log_ranges: tuple[tuple[str, dict[str, ColumnRange]], ...] = ()
    base_ranges: dict[str, ColumnRange] | None = None  # from the base file's footer
    bloom: tuple[str, str] | None = None  # the footer's bloom filter text and type code
    keys: pa.Array | None = None  # the slice's live record keys


class SliceFactsReader:
    """Reads :class:`SliceFacts` of slices of one table (instant validity and merge rules set up
    once, from ``table``'s timeline)."""

    def __init__(self, table: TableState, columns: Sequence[str]) -> None:
        from hudi_md.read.slice_reader import SliceRowReader

        self.table = table
        self.columns = list(columns)
        self._rows = SliceRowReader(table)

    def read(self, mdt_partition: str, s: FileSlice) -> SliceFacts:
        if mdt_partition == K.RECORD_INDEX:
            return SliceFacts(keys=self._rows.keys(s))
        if mdt_partition not in (K.COLUMN_STATS, K.PARTITION_STATS, K.BLOOM_FILTERS):
            raise ValueError(f"hudi-md cannot build MDT partition {mdt_partition!r}")
        log_ranges: tuple[tuple[str, dict[str, ColumnRange]], ...] = ()
        if mdt_partition != K.BLOOM_FILTERS:
            # Log files hold values too (MOR updates): index each one's records, or partition
            # stats would not cover them and a later commit's recompute would leave them out.
            log_ranges = tuple(self._log_file_ranges(s))
        if s.base_file is None:
            return SliceFacts(log_ranges=log_ranges)
        import pyarrow.parquet as pq

        footer = parquet_footer(self.table.storage, s.base_file.path, s.base_file.size)
        meta = pq.read_metadata(pa.BufferReader(footer))
        if mdt_partition == K.BLOOM_FILTERS:
            kv = meta.metadata or {}
            text = kv.get(b"org.apache.hudi.bloomfilter")
            if not text:
                return SliceFacts()
            code = kv.get(b"hoodie_bloom_filter_type_code", b"SIMPLE").decode()
            return SliceFacts(bloom=(text.decode(), code))
        return SliceFacts(log_ranges=log_ranges, base_ranges=column_ranges_from_parquet(meta, self.columns))

    def _log_file_ranges(self, s: FileSlice) -> Iterator[tuple[str, dict[str, ColumnRange]]]:
        from hudi_md.table.fs_view import FileSlice

        wanted = [c for c in self.columns if self.table.schema.get_field_index(c) >= 0]
        for lf in s.log_files:
            alone = FileSlice(s.partition_path, s.file_id, s.base_instant, None, (lf,))
            rows = self._rows.rows(alone, wanted)
            if rows.num_rows:  # a log of deletes only has no column stats (nor has it from its writer)
                yield lf.name, ranges_of_table(rows, wanted)


def records_from_facts(
    mdt_partition: str,
    facts: Sequence[tuple[FileSlice, SliceFacts]],
    types: Mapping[str, pa.DataType],
    *,
    logged: frozenset[str] = frozenset(),
) -> list[MdtRecord]:
    """The records of MDT ``mdt_partition`` for slices as read (``types``: the table's column
    types; columns without one are not indexed). Partition stats merge over all the slices given,
    so every slice of a data partition must be among them.

    ``logged``: instants whose files' column stats a log block of the partition carries already
    (commits made while an indexer builds it): no column_stats record is made for their files, as
    Hudi merges two records of one file by adding their counts. Record-index entries and bloom
    filters are states (merging one twice changes nothing)."""
    out: list[MdtRecord] = []
    if mdt_partition == K.RECORD_INDEX:
        for s, f in facts:
            keys = f.keys.to_pylist() if f.keys is not None else []
            out.extend(record_index_records(keys, s.partition_path, s.file_id, s.base_instant))
        return out
    if mdt_partition == K.BLOOM_FILTERS:
        for s, f in facts:
            if f.bloom is not None and s.base_file is not None:
                text, code = f.bloom
                out.append(
                    bloom_filter_record(s.partition_path, s.base_file.name, text, code, s.base_instant)
                )
        return out
    if mdt_partition not in (K.COLUMN_STATS, K.PARTITION_STATS):
        raise ValueError(f"hudi-md cannot build MDT partition {mdt_partition!r}")
    per_partition: dict[str, dict[str, list[ColumnRange]]] = defaultdict(lambda: defaultdict(list))
    files = [(s, name, ranges) for s, f in facts for name, ranges in f.log_ranges]
    files += [(s, s.base_file.name, f.base_ranges) for s, f in facts if s.base_file and f.base_ranges]
    for s, name, ranges in files:
        written_by = _instant_of(name, s)
        for col, rng in ranges.items():
            if col not in types:
                continue
            if mdt_partition == K.COLUMN_STATS and written_by not in logged:
                out.append(column_stats_record(s.partition_path, name, rng, types[col]))
            per_partition[s.partition_path][col].append(rng)
    if mdt_partition == K.PARTITION_STATS:
        for p, cols in per_partition.items():
            for col, col_ranges in cols.items():
                merged = merge_ranges(col_ranges)
                if merged is not None:
                    out.append(
                        column_stats_record(p, "", merged, types[col], for_partition=True, tight_bound=True)
                    )
    return out


def _instant_of(file_name: str, s: FileSlice) -> str:
    """The instant that wrote a file of slice ``s``: a log file's (table version 8+ names it), or
    the base file's."""
    parsed = LogFileName.parse(file_name)
    return parsed.instant if parsed is not None else s.base_instant
