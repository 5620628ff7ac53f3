"""The sources of one MDT file slice in merge order: its base HFile, then each valid log block.

Every read of the MDT (records, the ``files`` listing, the stats indexes, the record index)
walks a file slice the same way; :meth:`SliceReader.sources` is that walk, and each reader of
the slice decides what to do with a source it cannot take (raise, or fall back to another read).
The files a walk opens and frames are kept: a state is a snapshot, so they never change.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from hudi_md.formats.hfile import CellColumns, HFileReader
from hudi_md.formats.logfile import DeleteRecord, LogBlockType
from hudi_md.formats.logframes import TAIL_BYTES, LogBlockFrame, first_reads, iter_log_frames
from hudi_md.storage import RangeCachedFile, Storage
from hudi_md.table.fs_view import FileSlice, LogFile

# Keys wanted times this > cells in the file: scan the file once instead of seeking each key.
DENSE_LOOKUP_RATIO = 8
# Requests in flight at once when the MDT reader reads files side by side.
_CONCURRENT_READS = 8


class KeySelection:
    """Which keys of an MDT partition a read wants: exact keys, key prefixes, or all."""

    def __init__(self, keys: Iterable[str] | None = None, prefixes: Iterable[str] | None = None) -> None:
        self.keys = sorted(set(keys)) if keys is not None else None
        self.prefixes = sorted(set(prefixes)) if prefixes is not None else None

    def scan(self, reader: HFileReader) -> Iterator[tuple[bytes, bytes]]:
        if self.keys is not None:
            if len(self.keys) * DENSE_LOOKUP_RATIO > reader.entry_count:
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
            if len(self.keys) * DENSE_LOOKUP_RATIO > reader.entry_count:
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


@dataclass(frozen=True)
class HFileSource:
    """A base HFile or an HFILE_DATA log block; ``schema`` is its writer schema (None: it names
    none), ``where`` the base file's URI or the log file's name, for messages."""

    reader: HFileReader
    schema: str | None
    where: str


@dataclass(frozen=True)
class DeleteSource:
    """A DELETE log block: the record keys it deletes (its entries without a key are left out)."""

    keys: list[str]


@dataclass(frozen=True)
class OtherBlock:
    """A log block of a type the MDT does not hold."""

    frame: LogBlockFrame


SliceSource = HFileSource | DeleteSource | OtherBlock


class SliceReader:
    """Reads MDT file slices as :class:`SliceSource` lists, keeping the HFiles it opened and the
    log files it framed."""

    def __init__(
        self,
        storage: Storage,
        timeline_layout_version: int,
        completion_times: Mapping[str, str],
        valid_instants: frozenset[str],
        counters: dict[str, int],
    ) -> None:
        """``completion_times``: the MDT's completed instants' completion times by instant;
        ``valid_instants``: the instants whose log blocks are read; ``counters``: the
        ``hfiles_opened`` and ``log_files_read`` figures to count into."""
        self.storage = storage
        self.timeline_layout_version = timeline_layout_version
        self.completion_times = completion_times
        self.valid_instants = valid_instants
        self.counters = counters
        self._lock = threading.Lock()
        self._hfiles: dict[str, HFileReader] = {}
        self._frames: dict[str, list[LogBlockFrame]] = {}
        self._block_readers: dict[tuple[str, int], HFileReader] = {}
        self._block_deletes: dict[tuple[str, int], list[DeleteRecord]] = {}

    def sources(self, file_slice: FileSlice) -> list[SliceSource]:
        """What ``file_slice`` holds, in merge order: its base HFile, then each valid log block
        in the order its deltacommit completed."""
        out: list[SliceSource] = []
        if file_slice.base_file is not None:
            bf = file_slice.base_file
            reader = self._hfile(bf.path, bf.size)
            out.append(HFileSource(reader, reader.schema, self.storage.uri(bf.path)))
        for block in self._valid_blocks(file_slice):
            if block.block_type == LogBlockType.HFILE_DATA:
                reader = self._block_reader(block)
                out.append(HFileSource(reader, reader.schema or block.schema, block.file_name))
            elif block.block_type == LogBlockType.DELETE:
                deleted = self._deleted_keys(block)
                out.append(DeleteSource([d.record_key for d in deleted if d.record_key is not None]))
            else:
                out.append(OtherBlock(block))
        return out

    def prefetch(self, slices: Sequence[FileSlice]) -> None:
        """Open the base files of ``slices`` and frame their log files, then open their valid
        HFILE_DATA blocks: each step's reads side by side (on an object store each is a round
        trip)."""
        bases = [s.base_file for s in slices if s.base_file is not None]
        opens: list[Callable[[], Any]] = [partial(self._hfile, b.path, b.size) for b in bases]
        self._frame_side_by_side([lf for s in slices for lf in s.log_files], opens)
        blocks = [b for s in slices for b in self._valid_blocks(s) if b.block_type == LogBlockType.HFILE_DATA]
        _side_by_side([partial(self._block_reader, b) for b in blocks])

    # --- low-level reads -------------------------------------------------------------------------

    def _hfile(self, path: str, size: int) -> HFileReader:
        with self._lock:
            reader = self._hfiles.get(path)
        if reader is None:
            reader = HFileReader(self.storage.input_file(path, size))
            self.counters["hfiles_opened"] += 1
            with self._lock:
                self._hfiles[path] = reader
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
            self.counters["log_files_read"] += 1
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
        if self.timeline_layout_version < 2:
            return list(log_files)
        completion = self.completion_times
        keyed = [(completion.get(lf.instant, lf.instant), n) for n, lf in enumerate(log_files)]
        return [log_files[n] for _, n in sorted(keyed)]


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
