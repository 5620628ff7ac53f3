"""Building MDT partitions on a Spark cluster: ``run_indexing(table, builder=spark_builder(spark))``.

What runs where:

- The driver lists the table once, at one timeline snapshot, exactly as the local
  :class:`~hudi_md.metadata.lifecycle.PartitionBuilder` does (it *is* one: the listing, the
  file-group counts, the batches of 64 data partitions and the ``files`` records are its own).
- For each batch, the driver deals the batch's latest file slices, as slice rows
  (:mod:`hudi_md.table.slice_rows`), into Spark tasks of about equal bytes. Each task opens the
  table at the driver's snapshot and reads, per slice, what the MDT partition needs
  (:class:`~hudi_md.metadata.lifecycle.SliceFactsReader`: record keys, footer column ranges, log
  file ranges, the footer's bloom filter), and sends it back.
- The driver makes the records from what came back (``PartitionBuilder.make_records``, the local
  builder's own code, so the records are the same: same keys, same payloads, same order) and the
  MDT writer writes the HFiles. It reads no data file itself.

On the wire: to the executors the storage URI and fsspec options, the driver's timeline (its
instants) and schema, and the slice rows; back, per slice, its ``SliceFacts`` (the keys as one
Arrow array; column ranges as values; the bloom filter's text) or the exception reading it raised.
The driver holds one batch's results at a time.

Executors read at the driver's snapshot: they list nothing, and decide which log blocks are valid
with the driver's timeline, not their own, so a commit that completes during the build (its log
blocks may be in files the driver listed) does not leak into the records.
"""

from __future__ import annotations

import heapq
import pickle
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from hudi_md.metadata import keys as K
from hudi_md.metadata.lifecycle import (
    BuilderFactory,
    IndexOptions,
    PartitionBuilder,
    Progress,
    RecordSource,
    SliceFacts,
)
from hudi_md.metadata.records_builder import MdtRecord
from hudi_md.metadata.writer import MetadataTableWriter
from hudi_md.storage import Storage
from hudi_md.storage.retry import RetryPolicy
from hudi_md.table.state import TableState
from hudi_md.table.timeline import Instant, Timeline

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from hudi_md.table.fs_view import FileSlice

# The MDT partitions whose records come from reading data files (``files`` is a listing).
READ_PARTITIONS = (K.RECORD_INDEX, K.COLUMN_STATS, K.PARTITION_STATS, K.BLOOM_FILTERS)

# Tasks per batch: one per this many bytes of files to read (each task costs a Python worker's
# time to open the table, and a batch of small files is read faster by one than by many) ...
TASK_BYTES = 64 << 20
# ... and at most this many per core Spark offers: enough that uneven slices even out.
TASKS_PER_CORE = 4


@dataclass(frozen=True)
class TableSnapshot:
    """What an executor needs to read the table as the driver listed it (pickled to executors)."""

    uri: str
    storage_options: dict[str, Any]  # fsspec's (credentials, endpoints), as the driver's storage has them
    retry: RetryPolicy
    timeline_path: str
    instants: tuple[Instant, ...]
    schema: pa.Schema
    columns: tuple[str, ...]

    @classmethod
    def of(cls, table: TableState, columns: Sequence[str]) -> TableSnapshot:
        storage = table.storage
        return cls(
            storage.root_uri,
            dict(storage.options),
            storage.retry,
            table.config.timeline_path,
            tuple(table.timeline.instants),
            table.schema,
            tuple(columns),
        )

    def open(self) -> TableState:
        """The table with the driver's timeline and schema. Its own listing (taken now) may hold
        instants that completed since, or lack archived ones; log-block validity, and so the
        records, must be the driver's."""
        storage = Storage(self.uri, self.storage_options, retry=self.retry)
        table = TableState(storage, {"hoodie.metadata.enable": "false"}, physical_listing=True)
        path = self.timeline_path

        def read(instant: Instant) -> bytes:
            return storage.read_bytes(f"{path}/{instant.file_name}")

        table.timeline = Timeline(self.instants, reader=read, name=storage.uri(path))
        table.schema = self.schema
        return table


@dataclass(frozen=True)
class ExecutorError:
    """An exception raised reading a slice on an executor, as the driver raises it again: the
    same type, message and attributes as a local build's (a FileNotFoundError makes the indexer
    list the table again; hudi-md's own errors stay typed). Many of them take other constructor
    arguments than their message, so they are rebuilt, not unpickled."""

    type: type[BaseException]
    args: tuple[Any, ...]
    attributes: dict[str, Any]

    @classmethod
    def of(cls, e: BaseException) -> ExecutorError:
        carried = cls(type(e), tuple(e.args), dict(vars(e)))
        try:
            pickle.loads(pickle.dumps(carried))
        except Exception:  # an argument or attribute that does not travel: its text does
            return cls(RuntimeError, (f"{type(e).__name__}: {e}",), {})
        return carried

    def rebuild(self) -> BaseException:
        e = self.type.__new__(self.type)
        BaseException.__init__(e, *self.args)
        vars(e).update(self.attributes)
        return e


# What a task sends back per slice: (partition path, file id, facts or None, error or None).
SliceResult = tuple[str, str, SliceFacts | None, ExecutorError | None]


def read_slices(
    snapshot: TableSnapshot, mdt_partition: str
) -> Callable[[Iterable[dict[str, Any]]], Iterator[SliceResult]]:
    """The executor side: slice rows in, one :data:`SliceResult` per slice out."""

    def fn(rows: Iterable[dict[str, Any]]) -> Iterator[SliceResult]:
        from hudi_md.metadata.lifecycle import SliceFactsReader
        from hudi_md.table.slice_rows import slice_from_row

        reader: SliceFactsReader | None = None
        for row in rows:
            s = slice_from_row(row)
            try:
                if reader is None:
                    reader = SliceFactsReader(snapshot.open(), snapshot.columns)
                yield s.partition_path, s.file_id, reader.read(mdt_partition, s), None
            except Exception as e:  # re-raised by the driver, with its type (FileNotFoundError: list again)
                yield s.partition_path, s.file_id, None, ExecutorError.of(e)

    return fn


class SparkPartitionBuilder(PartitionBuilder):
    """A :class:`PartitionBuilder` whose batches' data files are read by Spark executors."""

    def __init__(
        self,
        spark: SparkSession,
        storage: Storage,
        writer: MetadataTableWriter,
        write_config: IndexOptions | None,
        *,
        progress: Progress | None = None,
        tasks: int | None = None,
    ) -> None:
        super().__init__(storage, writer, write_config, progress=progress)
        self.spark = spark
        self.tasks = tasks
        self._snapshot: TableSnapshot | None = None

    def records_of(self, partition: str, data_partitions: Sequence[str]) -> list[MdtRecord]:
        if partition == K.FILES:  # from the listing: no file is read
            return super().records_of(partition, data_partitions)
        if partition not in READ_PARTITIONS:
            raise ValueError(f"hudi-md cannot build MDT partition {partition!r}")
        slices = self.view.latest_file_slices(list(data_partitions))
        facts = self._read_on_executors(partition, slices) if slices else {}
        return self.make_records(partition, [(s, facts[(s.partition_path, s.file_id)]) for s in slices])

    def _read_on_executors(
        self, partition: str, slices: Sequence[FileSlice]
    ) -> dict[tuple[str, str], SliceFacts]:
        from hudi_md.table.slice_rows import slices_to_arrow

        if self._snapshot is None:
            self._snapshot = TableSnapshot.of(self.table, self.columns)
        rows = slices_to_arrow(slices).to_pylist()
        sc = self.spark.sparkContext
        tasks = self.tasks or min(
            TASKS_PER_CORE * max(1, sc.defaultParallelism),
            -(-sum(s.total_size for s in slices) // TASK_BYTES),
        )
        bins = deal(rows, max(1, min(tasks, len(rows))))
        results = (
            sc.parallelize(bins, len(bins))
            .flatMap(lambda b: b)
            .mapPartitions(read_slices(self._snapshot, partition))
            .collect()
        )
        out: dict[tuple[str, str], SliceFacts] = {}
        for p, fid, facts, error in results:
            if facts is None:
                raise error.rebuild() if error is not None else RuntimeError(f"no answer for {p}/{fid}")
            out[(p, fid)] = facts
        missing = [(s.partition_path, s.file_id) for s in slices if (s.partition_path, s.file_id) not in out]
        if missing:
            raise RuntimeError(f"Spark returned nothing for {len(missing)} file slices, e.g. {missing[0]}")
        return out


def deal(rows: Sequence[dict[str, Any]], n: int) -> list[list[dict[str, Any]]]:
    """``rows`` (slice rows) in ``n`` bins of about equal total size, largest first into the
    lightest bin: a task's work grows with the bytes it reads (keys, log files)."""
    heap = [(0, i) for i in range(max(1, n))]
    bins: list[list[dict[str, Any]]] = [[] for _ in heap]
    for row in sorted(rows, key=lambda r: -(r.get("total_size") or 0)):
        size, i = heapq.heappop(heap)
        bins[i].append(row)
        heapq.heappush(heap, (size + (row.get("total_size") or 0) + 1, i))
    return [b for b in bins if b]


def spark_builder(spark: SparkSession, *, tasks: int | None = None) -> BuilderFactory:
    """A :data:`~hudi_md.metadata.lifecycle.BuilderFactory` for ``run_indexing(builder=...)``: the
    build's data files are read on ``spark``'s executors, whose Python workers must import hudi_md
    (:func:`hudi_md.spark.session.configure` points them at this interpreter). ``tasks``: Spark
    tasks per batch of data partitions; default one per 64 MiB of files, at most four per core."""

    def make(
        storage: Storage, writer: MetadataTableWriter, cfg: IndexOptions | None, progress: Progress | None
    ) -> RecordSource:
        return SparkPartitionBuilder(spark, storage, writer, cfg, progress=progress, tasks=tasks)

    return make
