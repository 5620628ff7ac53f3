"""Reading the metadata table: base HFiles + HFile log blocks, merged, trusting only valid instants.

Every lookup touches a bounded number of files whatever the number of data partitions: the MDT
timeline listing, one listing per MDT partition used, and the HFiles/log files of the file groups
a key routes to.
"""

from __future__ import annotations

import logging
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_md.errors import HudiMdError, MetadataTableError
from hudi_md.formats.avro import decode_schemaless
from hudi_md.formats.hfile import CellColumns, HFileReader
from hudi_md.formats.logfile import DeleteRecord, LogBlockType
from hudi_md.formats.logframes import TAIL_BYTES, LogBlockFrame, first_reads, iter_log_frames
from hudi_md.metadata import keys as K
from hudi_md.metadata import metrics
from hudi_md.metadata.files_codec import files_record_decoder, files_record_shape
from hudi_md.metadata.files_columns import FilesRun, decode_files_columns, merge_files_runs
from hudi_md.metadata.record_index_columns import (
    LOCATION_SCHEMA,
    CellEvent,
    DeleteEvent,
    cell_event,
    locations_of_events,
)
from hudi_md.metadata.records import Record, is_live, live_files, merge, normalize
from hudi_md.metadata.stats_columns import (
    Deletes,
    StatsColumns,
    StatsRun,
    decode_stats_columns,
    merge_stats_runs,
)
from hudi_md.storage import RangeCachedFile, Storage
from hudi_md.table.config import TableConfig
from hudi_md.table.fs_view import FileSlice, FileSystemView, LogFile
from hudi_md.table.listing import FileEntry, StorageListing
from hudi_md.table.state import METADATA_ENABLE, TableState
from hudi_md.table.timeline import DELTA_COMMIT, RESTORE, ROLLBACK, Timeline

log = logging.getLogger(__name__)

METADATA_FOLDER = ".hoodie/metadata"
_INIT_PREFIX = "00000000000000"
_ALL_PARTITIONS_ROW = K.ALL_PARTITIONS_KEY.encode("utf-8")
# Keys wanted times this > cells in the file: scan the file once instead of seeking each key.
_DENSE_LOOKUP_RATIO = 8
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


@dataclass(frozen=True)
class RecordLocation:
    record_key: str
    partition_path: str
    file_id: str
    instant_time: int | None
    position: int | None


class KeySelection:
    """Which keys of an MDT partition a read wants: exact keys, key prefixes, or all."""

    def __init__(self, keys: Iterable[str] | None = None, prefixes: Iterable[str] | None = None) -> None:
        self.keys = sorted(set(keys)) if keys is not None else None
        self.prefixes = sorted(set(prefixes)) if prefixes is not None else None

    def scan(self, reader: HFileReader) -> Iterator[tuple[bytes, bytes]]:
        if self.keys is not None:
            if len(self.keys) * _DENSE_LOOKUP_RATIO > reader.entry_count:
                # most of the file is wanted: one pass over it beats a seek per key
                wanted = {k.encode("utf-8") for k in self.keys}
                return ((k, v) for k, v in reader.scan() if k in wanted)
            return iter(sorted(reader.get_many(self.keys).items()))
        if self.prefixes is not None:
            return reader.scan_prefixes(self.prefixes)
        return reader.scan()

    def scan_columns(self, reader: HFileReader) -> CellColumns:
        """The cells :meth:`scan` yields, as columns."""
        if self.keys is not None:
            if len(self.keys) * _DENSE_LOOKUP_RATIO > reader.entry_count:
                cells = reader.scan_columns()
                hit = pc.is_in(
                    cells.rows, value_set=pa.array([k.encode("utf-8") for k in self.keys], pa.binary())
                )
                return cells.take(pc.indices_nonzero(hit).to_numpy())
            return reader.get_many_columns(self.keys)
        if self.prefixes is not None:
            return reader.scan_prefixes_columns(self.prefixes)
        return reader.scan_columns()

    def matches(self, key: str) -> bool:
        if self.keys is not None:
            return key in self._key_set
        if self.prefixes is not None:
            return any(key.startswith(p) for p in self.prefixes)
        return True

    @property
    def _key_set(self) -> set[str]:
        s = self.__dict__.get("_ks")
        if s is None:
            s = self.__dict__["_ks"] = set(self.keys or ())
        return s


class MetadataTable:
    """The MDT of one data table, as of the data timeline it was opened with."""

    def __init__(
        self,
        data_storage: Storage,
        data_config: TableConfig,
        data_timeline: Timeline,
        *,
        mdt_timeline: Timeline | None = None,
    ) -> None:
        """``mdt_timeline``: the MDT's timeline as another process read it (Spark executors read
        slices with the driver's timelines, so log-block validity is the driver's); else loaded."""
        self.data_config = data_config
        self.data_timeline = data_timeline
        self.storage = data_storage.child(METADATA_FOLDER)
        listing = StorageListing(self.storage)
        # Three round trips side by side: the MDT's config, its timeline (in the data table's
        # layout, which an MDT shares; loaded again in the one its config names if not) and the
        # listing of the files partition, which every plan reads.
        # A failed listing is left to the view, which lists again and reports it as before.
        guess = (data_config.timeline_path, data_config.timeline_layout_version)
        with ThreadPoolExecutor(max_workers=2) as pool:
            if K.FILES in data_config.metadata_partitions:
                pool.submit(_list_ahead, listing, K.FILES)
            guessed = pool.submit(Timeline.load, self.storage, *guess) if mdt_timeline is None else None
            self.config = TableConfig.load(self.storage)
        layout = (self.config.timeline_path, self.config.timeline_layout_version)
        if mdt_timeline is not None:
            self.timeline = mdt_timeline
        elif guessed is not None and guess == layout:
            self.timeline = guessed.result()
        else:
            self.timeline = Timeline.load(self.storage, *layout)
        self.available_partitions = set(data_config.metadata_partitions)
        self.valid_instants = self._valid_instants()
        self._view = FileSystemView(self.config, self.timeline, listing)
        self._lock = threading.Lock()
        self._frames: dict[str, list[LogBlockFrame]] = {}
        self._block_readers: dict[tuple[str, int], HFileReader] = {}
        self._block_deletes: dict[tuple[str, int], list[DeleteRecord]] = {}
        # files partition records by partition path (None: no record), and the partitions found
        # under each key prefix: a state is a snapshot, so what was read once stays true
        self._files_records: dict[str, Record | None] = {}
        self._prefix_partitions: dict[str, list[str]] = {}
        self._all_partitions: list[str] | None = None
        self._partition_array: pa.StringArray | None = None
        self._files_table: pa.Table | None = None
        self._stats_cache: OrderedDict[tuple[Any, ...], list[ColumnStat]] = OrderedDict()
        self._completion_times = {
            i.requested_time: i.completion_time or i.requested_time for i in self.timeline.completed()
        }
        self._hfile_cache: dict[str, HFileReader] = {}
        self.stats: dict[str, int] = {"lookups": 0, "hfiles_opened": 0, "log_files_read": 0}

    # --- valid instants (HoodieTableMetadataUtil.getValidInstantTimestamps) ---------------------

    def _valid_instants(self) -> frozenset[str]:
        data = self.data_timeline
        valid = {i.requested_time for i in data.completed()}
        pending_data = {i.requested_time for i in data.pending()}
        mdt_completed = self.timeline.completed()
        for i in mdt_completed:
            if i.action == DELTA_COMMIT and i.requested_time not in pending_data:
                valid.add(i.requested_time)  # MDT-only instants, e.g. the async indexer's
            if i.action in (ROLLBACK, RESTORE) or i.requested_time.startswith(_INIT_PREFIX):
                valid.add(i.requested_time)
        earliest = data.completed().first()
        for i in data.completed().of_actions(ROLLBACK, RESTORE):
            if earliest is not None and i.requested_time < earliest.requested_time:
                continue
            meta = data.metadata(i)
            valid.update(meta.get("commitsRollback") or ())
            for restored in meta.get("instantsToRollback") or ():
                if isinstance(restored, dict) and restored.get("commitTime"):
                    valid.add(restored["commitTime"])
        # A block also needs its MDT deltacommit completed (or older than the MDT timeline).
        mdt_done = mdt_completed.times()
        mdt_start = self.timeline.first()
        return frozenset(
            t for t in valid if t in mdt_done or (mdt_start is not None and t < mdt_start.requested_time)
        )

    # --- file slices of an MDT partition -----------------------------------------------------------

    def file_slices(self, partition: str) -> list[FileSlice]:
        """Latest merged slices of an MDT partition, ordered by file-group index."""
        if partition not in self.available_partitions:
            raise MetadataTableError(
                f"MDT partition {partition!r} is not available for {self.storage.uri()} "
                f"(hoodie.table.metadata.partitions={','.join(sorted(self.available_partitions))})"
            )
        slices = self._view.latest_file_slices([partition])
        if not slices:
            raise MetadataTableError(
                f"MDT partition {partition!r} has no file groups in {self.storage.uri()}"
            )
        return sorted(slices, key=lambda s: K.file_group_index_of(s.file_id))

    # --- low-level reads -------------------------------------------------------------------------

    def _hfile(self, path: str, size: int) -> HFileReader:
        with self._lock:
            reader = self._hfile_cache.get(path)
        if reader is None:
            reader = HFileReader(self.storage.input_file(path, size))
            self.stats["hfiles_opened"] += 1
            with self._lock:
                self._hfile_cache[path] = reader
        return reader

    def _log_frames(self, path: str, size: int) -> list[LogBlockFrame]:
        """The blocks of an MDT log file, framed; contents are read in parts when needed."""
        with self._lock:
            frames = self._frames.get(path)
        if frames is None:
            source = RangeCachedFile(self.storage.input_file(path, size))
            if not self.storage.is_local_disk:  # head and end in one round trip
                _side_by_side([partial(source.prefetch, *r) for r in first_reads(size)])
            frames = list(iter_log_frames(source))
            self.stats["log_files_read"] += 1
            with self._lock:
                self._frames[path] = frames
        return frames

    def _block_reader(self, frame: LogBlockFrame) -> HFileReader:
        """The HFile of an HFILE_DATA block, opened on its bytes in the log file (its block index
        tells which of its blocks to read)."""
        key = (frame.file_name, frame.offset)
        with self._lock:
            reader = self._block_readers.get(key)
        if reader is None:
            reader = HFileReader(frame.content_file(), open_tail_bytes=TAIL_BYTES)
            with self._lock:
                self._block_readers[key] = reader
        return reader

    def _deleted_keys(self, frame: LogBlockFrame) -> list[DeleteRecord]:
        key = (frame.file_name, frame.offset)
        with self._lock:
            deletes = self._block_deletes.get(key)
        if deletes is None:
            deletes = frame.load().delete_records()
            with self._lock:
                self._block_deletes[key] = deletes
        return deletes

    def _valid_blocks(self, file_slice: FileSlice) -> list[LogBlockFrame]:
        queued: list[LogBlockFrame] = []
        ordered = self._in_completion_order(file_slice.log_files)
        self._frame_side_by_side(ordered)
        for lf in ordered:
            for block in self._log_frames(lf.path, lf.size):
                if block.block_type == LogBlockType.COMMAND:
                    if block.is_rollback_command:
                        target = block.target_instant_time
                        queued = [b for b in queued if b.instant_time != target]
                    continue
                if block.instant_time not in self.valid_instants:
                    continue
                queued.append(block)
        return queued

    def probe(self) -> None:
        """Open the ``files`` partition's base files and frame its log files: what every plan
        reads first, so an MDT that cannot be read is found when it is opened, without reading
        any record. The base files, log files and then HFile blocks are each read side by side."""
        slices = self.file_slices(K.FILES)
        bases = [s.base_file for s in slices if s.base_file is not None]
        opens: list[Callable[[], Any]] = [partial(self._hfile, b.path, b.size) for b in bases]
        self._frame_side_by_side([lf for s in slices for lf in s.log_files], opens)
        blocks = [b for s in slices for b in self._valid_blocks(s) if b.block_type == LogBlockType.HFILE_DATA]
        _side_by_side([partial(self._block_reader, b) for b in blocks])

    def _frame_side_by_side(
        self, log_files: Sequence[LogFile], also: Sequence[Callable[[], Any]] = ()
    ) -> None:
        """Frame the log files not framed yet (and run ``also``), their requests side by side: on
        an object store each is a round trip, and a file slice has several log files."""
        with self._lock:
            todo = [lf for lf in log_files if lf.path not in self._frames]
        _side_by_side([*also, *(partial(self._log_frames, lf.path, lf.size) for lf in todo)])

    def _in_completion_order(self, log_files: Sequence[LogFile]) -> list[LogFile]:
        """Log files in the order their deltacommits completed on the MDT timeline (instant
        order when they completed in it). Concurrent writers (optimistic concurrency control)
        may complete an MDT deltacommit of an earlier instant after a later one; records that
        replace (record index, tight partition stats) must merge in completion order, the order
        they were computed in. Files of one instant keep their (version) order. Layout 1 has no
        completion times (they would come from file mtimes): instant order."""
        if self.config.timeline_layout_version < 2:
            return list(log_files)
        completion = self._completion_times
        keyed = [(completion.get(lf.instant, lf.instant), n) for n, lf in enumerate(log_files)]
        return [log_files[n] for _, n in sorted(keyed)]

    def read_slice_records(
        self, file_slice: FileSlice, sel: KeySelection | None = None
    ) -> dict[str, Record | None]:
        """The merged records of one MDT file slice (``sel``: which keys; None: all of them)."""
        sel = sel if sel is not None else KeySelection()
        result: dict[str, Record | None] = {}
        # Record-index entries of one file group and commit share their value bytes (the key is
        # not part of the value) and merge by replacement: decode each distinct value once.
        shared: dict[bytes, Record] | None = {} if file_slice.partition_path == K.RECORD_INDEX else None

        files = file_slice.partition_path == K.FILES

        def apply(reader: HFileReader, schema: str | None, where: str) -> None:
            if schema is None:
                raise MetadataTableError(f"{where}: MDT HFile has no Avro schema in its file info")
            fast = files_record_decoder(schema) if files else None
            for key_bytes, value in sel.scan(reader):
                key = key_bytes.decode("utf-8")
                if fast is not None and (record := fast(value)) is not None:
                    record["key"] = key
                elif shared is not None:
                    decoded = shared.get(value)
                    if decoded is None:
                        decoded = shared[value] = normalize(
                            decode_schemaless(value, schema, return_record_name=True)
                        )
                    record = {**decoded, "key": key}
                else:
                    record = normalize(decode_schemaless(value, schema, return_record_name=True))
                    record["key"] = key
                result[key] = merge(result.get(key), record)

        if file_slice.base_file is not None:
            bf = file_slice.base_file
            reader = self._hfile(bf.path, bf.size)
            apply(reader, reader.schema, self.storage.uri(bf.path))
        for block in self._valid_blocks(file_slice):
            if block.block_type == LogBlockType.HFILE_DATA:
                reader = self._block_reader(block)
                apply(reader, reader.schema or block.schema, block.file_name)
            elif block.block_type == LogBlockType.DELETE:
                for d in self._deleted_keys(block):
                    if d.record_key is not None and sel.matches(d.record_key):
                        result[d.record_key] = None
            else:
                raise MetadataTableError(
                    f"{block.file_name}: unexpected {block.block_type.name} block in the metadata table"
                )
        return result

    def read_records(
        self,
        partition: str,
        *,
        keys: Iterable[str] | None = None,
        prefixes: Iterable[str] | None = None,
    ) -> dict[str, Record]:
        """Merged, live records of an MDT partition for exact keys, key prefixes, or everything."""
        self.stats["lookups"] += 1
        kind = "lookup" if keys is not None else "scan"
        with metrics.timed(f"{kind}_{partition}"):
            return self._read_records(partition, keys, prefixes)

    def _read_records(
        self, partition: str, keys: Iterable[str] | None, prefixes: Iterable[str] | None
    ) -> dict[str, Record]:
        slices = self.file_slices(partition)
        out: dict[str, Record | None] = {}
        if keys is not None:
            key_list = list(keys)
            by_group: dict[int, list[str]] = {}
            n = len(slices)
            for k in key_list:
                by_group.setdefault(K.file_group_index(k, n), []).append(k)
            for index, group_keys in sorted(by_group.items()):
                out.update(self.read_slice_records(slices[index], KeySelection(keys=group_keys)))
        else:
            sel = KeySelection(prefixes=prefixes)
            for s in slices:
                out.update(self.read_slice_records(s, sel))
        return {k: r for k, r in out.items() if r is not None and is_live(r)}

    # --- files partition (a ListingSource) --------------------------------------------------------

    name = "metadata"

    def all_partitions(self) -> list[str]:
        with self._lock:
            known = self._all_partitions
        if known is None:
            known = self.partition_array().to_pylist()
            with self._lock:
                self._all_partitions = known
        return list(known)

    def partition_array(self) -> pa.StringArray:
        """:meth:`all_partitions` as an Arrow array (sorted): a plan of every partition at 100k
        partitions compares them with the ``files`` listing column-wise, without a Python string
        per partition."""
        with self._lock:
            known = self._partition_array
        if known is None:
            known = self._all_partitions_columns()
            if known is None:
                records = self.read_records(K.FILES, keys=[K.ALL_PARTITIONS_KEY])
                parts = live_files(records.get(K.ALL_PARTITIONS_KEY))
                known = pa.array(sorted("" if p == K.NON_PARTITIONED_NAME else p for p in parts), pa.string())
            with self._lock:
                self._partition_array = known
        return known

    def _all_partitions_columns(self) -> pa.StringArray | None:
        """The partition list decoded column-wise: the ``__all_partitions__`` record holds every
        partition in one map (100k entries at 100k partitions), read with :mod:`files_columns`
        and merged by the files rules; None when a block or record is not of the shape it knows
        (then :meth:`all_partitions` reads the record)."""
        self.stats["lookups"] += 1
        with metrics.timed("lookup_files_all_partitions_columns"):
            slices = self.file_slices(K.FILES)
            file_slice = slices[K.file_group_index(K.ALL_PARTITIONS_KEY, len(slices))]
            sel = KeySelection(keys=[K.ALL_PARTITIONS_KEY])
            sources: list[tuple[HFileReader, str | None]] = []
            if file_slice.base_file is not None:
                reader = self._hfile(file_slice.base_file.path, file_slice.base_file.size)
                sources.append((reader, reader.schema))
            for block in self._valid_blocks(file_slice):
                if block.block_type == LogBlockType.HFILE_DATA:
                    reader = self._block_reader(block)
                    sources.append((reader, reader.schema or block.schema))
                elif block.block_type == LogBlockType.DELETE:
                    if any(d.record_key == K.ALL_PARTITIONS_KEY for d in self._deleted_keys(block)):
                        return None
                else:
                    return None
            runs: list[FilesRun] = []
            for reader, schema in sources:
                shape = files_record_shape(schema) if schema is not None else None
                if shape is None:
                    return None
                run = decode_files_columns(sel.scan_columns(reader), shape)
                if run is None:
                    return None
                runs.append(run)
            return _partition_names(merge_files_runs(runs, K.TYPE_ALL_PARTITIONS))

    def partitions_with_keys(self, paths: Sequence[str], prefixes: Sequence[str] = ()) -> list[str]:
        """Partitions whose ``files`` record exists among exact partition ``paths`` and under path
        ``prefixes``: point and prefix lookups of the sorted keys, never the partition list. Their
        records are kept for :meth:`files_in_partitions`."""
        found: set[str] = set()
        with self._lock:
            known = {p: self._files_records[p] for p in paths if p in self._files_records}
            cached_prefixes = {
                p: self._prefix_partitions[p] for p in prefixes if p in self._prefix_partitions
            }
        found.update(p for p, rec in known.items() if rec is not None)
        missing = [p for p in paths if p not in known]
        if missing:
            records = self.read_records(K.FILES, keys=[K.files_key(p) for p in missing])
            read = {p: records.get(K.files_key(p)) for p in missing}
            with self._lock:
                self._files_records.update(read)
            found.update(p for p, rec in read.items() if rec is not None)
        new_prefixes = [p for p in prefixes if p not in cached_prefixes]
        for partitions in cached_prefixes.values():
            found.update(partitions)
        if new_prefixes:
            records = {
                k: r
                for k, r in self.read_records(K.FILES, prefixes=new_prefixes).items()
                if k != K.ALL_PARTITIONS_KEY
            }
            under: dict[str, list[str]] = {p: [] for p in new_prefixes}
            for key in records:
                for p in new_prefixes:
                    if key.startswith(p):
                        under[p].append(key)
            with self._lock:
                self._files_records.update(records)
                self._prefix_partitions.update(under)
            found.update(records)
        return sorted(found)

    def files_in_partitions(self, partitions: Sequence[str]) -> dict[str, list[FileEntry]]:
        with self._lock:
            known = {p: self._files_records[p] for p in partitions if p in self._files_records}
        missing = [p for p in partitions if p not in known]
        if missing:
            wanted = {K.files_key(p): p for p in missing}
            records = self.read_records(K.FILES, keys=list(wanted))
            read = {p: records.get(key) for key, p in wanted.items()}
            with self._lock:
                self._files_records.update(read)
            known.update(read)
        out: dict[str, list[FileEntry]] = {}
        for p in partitions:
            files = live_files(known.get(p))
            out[p] = [FileEntry(name, size) for name, size in sorted(files.items())]
        return out

    def files_partition_bytes(self) -> int:
        """The size of the ``files`` partition's latest slices (base files and log files)."""
        return sum(
            (s.base_file.size if s.base_file is not None else 0) + sum(lf.size for lf in s.log_files)
            for s in self.file_slices(K.FILES)
        )

    def files_table(self) -> pa.Table | None:
        """The live files of every partition, read column-wise (``partition_path``, ``name``,
        ``size`` rows, see :data:`files_columns.FILES_TABLE_SCHEMA`), for a plan that wants all of
        them; None when a record or block is not of the shape the column-wise decoder knows (a
        delete block, another writer schema): :meth:`files_in_partitions` reads those."""
        with self._lock:
            known = self._files_table
        if known is not None:
            return known
        with metrics.timed("scan_files_columns"):
            runs: list[FilesRun] = []
            slices = self.file_slices(K.FILES)
            # the partition list comes from the same scan (its record is a cell of it), so a plan
            # of every partition waits for no read of its own; None: the record-wise read decides
            partition_runs: list[FilesRun] | None = []
            all_partitions_group = K.file_group_index(K.ALL_PARTITIONS_KEY, len(slices))
            for index, s in enumerate(slices):
                holds_partition_list = index == all_partitions_group
                sources: list[tuple[HFileReader, str | None, str]] = []
                if s.base_file is not None:
                    reader = self._hfile(s.base_file.path, s.base_file.size)
                    sources.append((reader, reader.schema, self.storage.uri(s.base_file.path)))
                for block in self._valid_blocks(s):
                    if block.block_type == LogBlockType.DELETE:
                        deleted = {d.record_key for d in self._deleted_keys(block)}
                        if K.ALL_PARTITIONS_KEY in deleted:
                            partition_runs = None
                            deleted.discard(K.ALL_PARTITIONS_KEY)
                        if deleted:
                            return None  # a partition's record deleted: the record-wise merge
                        continue  # Hudi's MDT initialisation writes an empty delete block
                    if block.block_type != LogBlockType.HFILE_DATA:
                        return None
                    reader = self._block_reader(block)
                    sources.append((reader, reader.schema or block.schema, block.file_name))
                for reader, schema, where in sources:
                    if schema is None:
                        raise MetadataTableError(f"{where}: MDT HFile has no Avro schema in its file info")
                    shape = files_record_shape(schema)
                    if shape is None:
                        return None
                    cells = reader.scan_columns()
                    is_list = pc.equal(cells.rows, pa.scalar(_ALL_PARTITIONS_ROW, pa.binary()))
                    others = pc.indices_nonzero(pc.invert(is_list)).to_numpy()
                    run = decode_files_columns(cells.take(others), shape)
                    if run is None:
                        return None
                    runs.append(run)
                    if holds_partition_list and partition_runs is not None:
                        the_list = pc.indices_nonzero(is_list).to_numpy()
                        listed = decode_files_columns(cells.take(the_list), shape)
                        if listed is None:
                            partition_runs = None
                        else:
                            partition_runs.append(listed)
            table = merge_files_runs(runs)
            partitions = (
                _partition_names(merge_files_runs(partition_runs, K.TYPE_ALL_PARTITIONS))
                if partition_runs is not None
                else None
            )
        if table is not None:
            with self._lock:
                self._files_table = table
                if partitions is not None and self._partition_array is None:
                    self._partition_array = partitions
        return table

    # --- column_stats / partition_stats ----------------------------------------------------------

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
        if columns is None:
            records = self.read_records(mdt_partition)
        elif partitions is None or len(partitions) > _MANY_PARTITIONS:
            # a column's stats are one key range: one walk over it beats a lookup per partition
            # (the stats of partitions not asked for are dropped below)
            records = self.read_records(mdt_partition, prefixes=[K.column_index_id(c) for c in columns])
        elif mdt_partition == K.PARTITION_STATS:
            records = self.read_records(
                mdt_partition, keys=[K.partition_stats_key(c, p) for c in columns for p in partitions]
            )
        else:
            records = self.read_records(
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
            id_to_partition = {K.partition_index_id(p): p for p in self.all_partitions()}
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
        records = self.read_records(K.COLUMN_STATS, keys=sorted(wanted))
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
        slices = self.file_slices(mdt_partition)
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
        :meth:`read_slice_records` merges them."""
        events: list[StatsRun | Deletes] = []
        sources: list[tuple[HFileReader, str | None] | Deletes] = []
        if file_slice.base_file is not None:
            reader = self._hfile(file_slice.base_file.path, file_slice.base_file.size)
            sources.append((reader, reader.schema))
        for block in self._valid_blocks(file_slice):
            if block.block_type == LogBlockType.HFILE_DATA:
                reader = self._block_reader(block)
                sources.append((reader, reader.schema or block.schema))
            elif block.block_type == LogBlockType.DELETE:
                deleted = [d.record_key for d in self._deleted_keys(block)]
                sources.append(Deletes([k for k in deleted if k is not None and sel.matches(k)]))
            else:
                return None  # the record-wise read reports it
        for source in sources:
            if isinstance(source, Deletes):
                events.append(source)
                continue
            reader, schema = source
            if schema is None:
                return None
            run = decode_stats_columns(sel.scan_columns(reader), schema)
            if run is None:
                return None
            events.append(run)
        return merge_stats_runs(events, record_type)

    # --- record_index ----------------------------------------------------------------------------

    def record_index(self, record_keys: Iterable[str] | None = None) -> dict[str, RecordLocation]:
        """Locations of ``record_keys`` (absent keys are left out), or of every indexed key."""
        keys = None if record_keys is None else pa.array(list(record_keys), pa.string())
        table = self.record_index_table(keys)
        return {
            k: RecordLocation(record_key=k, partition_path=p, file_id=f, instant_time=t, position=n)
            for k, p, f, t, n in zip(*(table[c].to_pylist() for c in LOCATION_SCHEMA.names), strict=True)
        }

    def record_index_table(self, record_keys: pa.Array | pa.ChunkedArray | None = None) -> pa.Table:
        """:meth:`record_index` as Arrow rows (:data:`record_index_columns.LOCATION_SCHEMA`, sorted
        by key within each MDT file group), read column-wise: a write's tagging asks for every
        incoming key at once."""
        self.stats["lookups"] += 1
        with metrics.timed("lookup_record_index" if record_keys is not None else "scan_record_index"):
            slices = self.file_slices(K.RECORD_INDEX)
            if record_keys is None:
                parts = [self._slice_locations(s, None) for s in slices]
            else:
                keys = pc.unique(record_keys.cast(pa.string()))
                if isinstance(keys, pa.ChunkedArray):
                    keys = keys.combine_chunks()
                if keys.null_count:
                    raise MetadataTableError("record keys to look up must not be null")
                index = K.file_group_indexes_of_column(keys, len(slices))
                parts = [
                    self._slice_locations(slices[i], keys.filter(pa.array(index == i)))
                    for i in np.unique(index).tolist()
                ]
            return pa.concat_tables([LOCATION_SCHEMA.empty_table(), *parts])

    def _slice_locations(self, file_slice: FileSlice, keys: pa.Array | None) -> pa.Table:
        """One record_index file slice's entries for ``keys`` (None: all), merged as
        :meth:`read_slice_records` merges them."""
        return locations_of_events(self.slice_events(file_slice, keys))

    def slice_events(
        self, file_slice: FileSlice, keys: pa.Array | None = None
    ) -> list[CellEvent | DeleteEvent]:
        """What an MDT file slice holds for ``keys`` (None: every key), source by source in merge
        order: the base HFile's cells, then each valid log block's cells or deleted keys, as Arrow
        columns (:mod:`record_index_columns`)."""
        wanted = None if keys is None else keys.cast(pa.binary())
        events: list[CellEvent | DeleteEvent] = []

        def cells(reader: HFileReader) -> CellColumns:
            if wanted is None:
                return reader.scan_columns()
            if len(wanted) * _DENSE_LOOKUP_RATIO > reader.entry_count:
                found = reader.scan_columns()  # most of the file is wanted: one pass over it
                return found.take(pc.indices_nonzero(pc.is_in(found.rows, value_set=wanted)).to_numpy())
            return reader.get_many_columns(wanted.to_pylist())

        if file_slice.base_file is not None:
            bf = file_slice.base_file
            reader = self._hfile(bf.path, bf.size)
            events.append(cell_event(cells(reader), reader.schema, self.storage.uri(bf.path)))
        for block in self._valid_blocks(file_slice):
            if block.block_type == LogBlockType.HFILE_DATA:
                reader = self._block_reader(block)
                events.append(cell_event(cells(reader), reader.schema or block.schema, block.file_name))
            elif block.block_type == LogBlockType.DELETE:
                gone = pa.array(
                    [d.record_key for d in self._deleted_keys(block) if d.record_key is not None], pa.binary()
                )
                if wanted is not None:
                    gone = gone.filter(pc.is_in(gone, value_set=wanted))
                events.append(DeleteEvent(gone))
            else:
                raise MetadataTableError(
                    f"{block.file_name}: unexpected {block.block_type.name} block in the metadata table"
                )
        return events

    # --- bloom_filters ---------------------------------------------------------------------------

    def bloom_filters(self, files: Iterable[tuple[str, str]]) -> dict[tuple[str, str], dict[str, Any]]:
        """``(partition, file name) -> {"type", "timestamp", "bloom_filter"}`` for files that have one."""
        wanted = {K.bloom_filter_key(p, f): (p, f) for p, f in files}
        records = self.read_records(K.BLOOM_FILTERS, keys=list(wanted))
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


# --- Arrow views -------------------------------------------------------------------------------


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


def record_locations_to_arrow(locations: Iterable[RecordLocation]) -> pa.Table:
    locs = list(locations)
    return pa.table(
        {
            "record_key": pa.array([r.record_key for r in locs], pa.string()),
            "partition_path": pa.array([r.partition_path for r in locs], pa.string()),
            "file_id": pa.array([r.file_id for r in locs], pa.string()),
            "instant_time": pa.array([r.instant_time for r in locs], pa.int64()),
            "position": pa.array([r.position for r in locs], pa.int64()),
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


def _partition_names(merged: pa.Table | None) -> pa.StringArray | None:
    """The partitions of a merged ``__all_partitions__`` record ("" for a table without
    partitions), sorted."""
    if merged is None:
        return None
    names = merged.column("name").combine_chunks()
    unpartitioned = pc.equal(names, K.NON_PARTITIONED_NAME)
    if not pc.any(unpartitioned).as_py():
        return names  # sorted by the merge (UTF-8 byte order is code point order)
    named = pc.if_else(unpartitioned, "", names)
    return named.take(pc.sort_indices(named))


def _list_ahead(listing: StorageListing, partition: str) -> None:
    """List ``partition`` into ``listing``'s cache ahead of its use; a failure is left for the
    use to meet (and report) again."""
    try:
        listing.files_in_partitions([partition])
    except Exception:  # the listing that follows meets it again and reports it
        log.debug("listing %s ahead failed", partition, exc_info=True)


# Requests in flight at once when the MDT reader reads files side by side.
_CONCURRENT_READS = 8


def _side_by_side(tasks: Sequence[Callable[[], Any]]) -> None:
    """Run ``tasks`` (reads that fill the reader's caches) on threads, up to
    :data:`_CONCURRENT_READS` at once; the first failure (in task order) is raised after all end."""
    if len(tasks) < 2:
        for task in tasks:
            task()
        return
    with ThreadPoolExecutor(max_workers=min(_CONCURRENT_READS, len(tasks))) as pool:
        futures = [pool.submit(task) for task in tasks]
    for future in futures:
        future.result()


def open_metadata_table(state: TableState) -> MetadataTable | None:
    """The MDT reader of ``state``'s table, or None to list storage instead.

    Used when ``files`` is among ``hoodie.table.metadata.partitions`` and the option
    ``hoodie.metadata.enable`` is not ``false``. An MDT that cannot be read falls back to listing
    with a warning, unless the option forces it on (then the error is raised).
    """
    if state.options.get(METADATA_ENABLE, "true").lower() == "false":
        return None
    if K.FILES not in state.config.metadata_partitions:
        if state.metadata_forced:
            log.info("%s: no MDT files partition; listing storage", state.uri)
        return None
    try:
        mdt = MetadataTable(state.storage, state.config, state.timeline)
        mdt.probe()  # a broken MDT is found here, not in the middle of a plan
        return mdt
    except (HudiMdError, OSError, EOFError, ValueError) as e:
        if state.metadata_forced:
            raise
        state.metadata_error = e
        if state.is_federated:  # no listing to fall back to: the state's listing says so
            return None
        warnings.warn(
            f"hudi-md: the metadata table of {state.uri} cannot be read ({e}); listing storage instead",
            RuntimeWarning,
            stacklevel=4,
        )
        return None


def load_table_state(storage: Storage, options: Mapping[str, str] | None = None) -> TableState:
    """The state of the table at ``storage``, read through its MDT when it has a usable one."""
    return TableState(storage, options, open_metadata=open_metadata_table)
