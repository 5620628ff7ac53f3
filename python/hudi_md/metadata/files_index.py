"""The MDT ``files`` partition as a listing source: the partition list and each partition's files.

What was read once is kept: a state is a snapshot, so it stays true.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from hudi_md.errors import MetadataTableError
from hudi_md.metadata import keys as K
from hudi_md.metadata import metrics
from hudi_md.metadata.files_codec import files_record_shape
from hudi_md.metadata.files_columns import FilesRun, decode_files_columns, merge_files_runs
from hudi_md.metadata.records import Record, live_files
from hudi_md.metadata.slice_sources import DeleteSource, HFileSource, KeySelection, OtherBlock
from hudi_md.table.listing import FileEntry

if TYPE_CHECKING:
    from hudi_md.metadata.reader import MetadataTable

_ALL_PARTITIONS_ROW = K.ALL_PARTITIONS_KEY.encode("utf-8")


class FilesIndex:
    """The ``files`` partition of ``mdt``: a :class:`~hudi_md.table.listing.ListingSource`."""

    name = "metadata"

    def __init__(self, mdt: MetadataTable) -> None:
        self._mdt = mdt
        self._lock = threading.Lock()
        # files partition records by partition path (None: no record), and the partitions found
        # under each key prefix
        self._files_records: dict[str, Record | None] = {}
        self._prefix_partitions: dict[str, list[str]] = {}
        self._all_partitions: list[str] | None = None
        self._partition_array: pa.StringArray | None = None
        self._files_table: pa.Table | None = None

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
                records = self._mdt.read_records(K.FILES, keys=[K.ALL_PARTITIONS_KEY])
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
        mdt = self._mdt
        mdt.read_counters["lookups"] += 1
        with metrics.timed("lookup_files_all_partitions_columns"):
            slices = mdt.file_slices(K.FILES)
            file_slice = slices[K.file_group_index(K.ALL_PARTITIONS_KEY, len(slices))]
            sel = KeySelection(keys=[K.ALL_PARTITIONS_KEY])
            hfiles: list[HFileSource] = []
            for source in mdt.slice_reader.sources(file_slice):
                if isinstance(source, HFileSource):
                    hfiles.append(source)
                elif isinstance(source, OtherBlock) or K.ALL_PARTITIONS_KEY in source.keys:
                    return None
            runs: list[FilesRun] = []
            for hfile in hfiles:
                shape = files_record_shape(hfile.schema) if hfile.schema is not None else None
                if shape is None:
                    return None
                run = decode_files_columns(sel.scan_columns(hfile.reader), shape)
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
            records = self._mdt.read_records(K.FILES, keys=[K.files_key(p) for p in missing])
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
                for k, r in self._mdt.read_records(K.FILES, prefixes=new_prefixes).items()
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
            records = self._mdt.read_records(K.FILES, keys=list(wanted))
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
            for s in self._mdt.file_slices(K.FILES)
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
            slices = self._mdt.file_slices(K.FILES)
            # the partition list comes from the same scan (its record is a cell of it), so a plan
            # of every partition waits for no read of its own; None: the record-wise read decides
            partition_runs: list[FilesRun] | None = []
            all_partitions_group = K.file_group_index(K.ALL_PARTITIONS_KEY, len(slices))
            for index, s in enumerate(slices):
                holds_partition_list = index == all_partitions_group
                hfiles: list[HFileSource] = []
                for source in self._mdt.slice_reader.sources(s):
                    if isinstance(source, DeleteSource):
                        deleted = set(source.keys)
                        if K.ALL_PARTITIONS_KEY in deleted:
                            partition_runs = None
                            deleted.discard(K.ALL_PARTITIONS_KEY)
                        if deleted:
                            return None  # a partition's record deleted: the record-wise merge
                        continue  # Hudi's MDT initialisation writes an empty delete block
                    if isinstance(source, OtherBlock):
                        return None
                    hfiles.append(source)
                for hfile in hfiles:
                    schema, where = hfile.schema, hfile.where
                    if schema is None:
                        raise MetadataTableError(f"{where}: MDT HFile has no Avro schema in its file info")
                    shape = files_record_shape(schema)
                    if shape is None:
                        return None
                    cells = hfile.reader.scan_columns()
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
