"""Distributed planning: a plan's ``column_stats`` pruning run as a Spark job, for tables whose
stats do not fit the planner's memory.

>>> plan = hudi_md.spark.plan(spark, "s3://bucket/table", [("price", ">", 100)])
>>> plan.counters["column_stats_distributed"]
1

When Hudi's rule sends the read to the engine (:mod:`hudi_md.planning.column_stats_mode`: file
slices x filtered columns ≥ ``hoodie.metadata.index.column.stats.inMemory.projection.threshold``,
or ``...processing.mode.override=engine``), the planner asks :class:`SparkColumnStats`:

- The driver lists the ``column_stats`` file groups (the MDT's own listing: no record is read)
  and sends one task per file group: the file group's latest slice, the key prefixes of the
  filter's columns in the plan's partitions, the filter and schema, and the snapshot the driver
  planned at (the data and MDT timelines' instants, storage URI and options).
- Each task opens the MDT at the driver's snapshot (so log blocks of instants the driver did not
  see completed are ignored, by the reader's own rule), reads its slice's stats
  (:func:`hudi_md.metadata.stats_scan.scan_column_stats`: the reader's merge of base HFile and
  valid log blocks) and evaluates the filter with the planner's own ``stats_evaluator``.
- What comes back is the files whose stats prove no row matches, as Arrow (partition path, file
  name). The driver drops a slice when every one of its files is among them (the in-process
  rule: a file without stats keeps its slice), so the plan is the in-process plan.

A file's stats for different columns live in different file groups (the key is hashed whole).
A filter whose every top-level conjunct tests at most one indexed column is decided per file
group (a conjunct is false for a file exactly when its one column's stats say so). Any other
filter (``a > 1 OR b < 2``) needs a file's columns together: the tasks send per-file stats
through a shuffle keyed by file, and the second stage evaluates.

The planner holds the slices and the set of files found unable to match, never the stats.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_md.api import Filters, Table, open_table
from hudi_md.errors import MetadataTableError
from hudi_md.metadata import keys as K
from hudi_md.metadata.reader import METADATA_FOLDER, MetadataTable
from hudi_md.metadata.stats_scan import scan_column_stats
from hudi_md.planning.column_stats_mode import ColumnStatsRequest
from hudi_md.planning.evaluators import ColumnStats, stats_evaluator
from hudi_md.planning.expressions import And, Expression
from hudi_md.planning.planner import ScanPlan
from hudi_md.planning.visitors import referenced_columns
from hudi_md.spark.indexing import ExecutorError, TableSnapshot
from hudi_md.table.fs_view import FileSlice
from hudi_md.table.timeline import Instant, Timeline

if TYPE_CHECKING:
    from pyspark import Accumulator, SparkContext
    from pyspark.sql import SparkSession

CANNOT_MATCH_SCHEMA = pa.schema([("partition_path", pa.string()), ("file_name", pa.string())])
_ERROR = "\0error"  # the shuffle key of a task's error: (this, task index) never merges with a file


@dataclass(frozen=True)
class StatsJob:
    """What every task gets (pickled once into the job's closure)."""

    table: TableSnapshot  # the data table as the driver planned it
    mdt_instants: tuple[Instant, ...]
    mdt_timeline_path: str
    valid_instants: frozenset[str]  # the driver's; a task that computes others refuses
    columns: tuple[str, ...]
    partitions: tuple[str, ...]
    expr: Expression
    separable: bool

    def open_metadata_table(self) -> MetadataTable:
        table = self.table.open()
        mdt_storage = table.storage.child(METADATA_FOLDER)
        path = self.mdt_timeline_path

        def read(instant: Instant) -> bytes:
            return mdt_storage.read_bytes(f"{path}/{instant.file_name}")

        timeline = Timeline(self.mdt_instants, reader=read, name=mdt_storage.uri(path))
        mdt = MetadataTable(table.storage, table.config, table.timeline, mdt_timeline=timeline)
        if mdt.valid_instants != self.valid_instants:
            raise MetadataTableError(
                f"{mdt_storage.uri()}: the MDT instants valid on this executor differ from the "
                f"driver's ({sorted(mdt.valid_instants ^ self.valid_instants)[:5]}); plan again"
            )
        return mdt

    def file_stats(
        self, mdt: MetadataTable, file_slice: FileSlice
    ) -> dict[tuple[str, str], dict[str, ColumnStats]]:
        """(partition, file name) → column → stats, for the files this file group has stats of."""
        out: dict[tuple[str, str], dict[str, ColumnStats]] = {}
        for s in scan_column_stats(mdt, file_slice, self.columns, self.partitions):
            out.setdefault((s.partition_path, s.file_name), {})[s.column_name] = ColumnStats(
                s.min_value, s.max_value, s.null_count, s.value_count
            )
        return out

    def cannot_match(self, stats: Iterable[tuple[tuple[str, str], Mapping[str, ColumnStats]]]) -> bytes:
        """The files whose stats prove no row matches, as an Arrow IPC stream."""
        might_match = stats_evaluator(self.expr, self.table.schema)
        files = [key for key, s in stats if not might_match(s)]
        table = pa.table(
            [pa.array([p for p, _ in files], pa.string()), pa.array([f for _, f in files], pa.string())],
            schema=CANNOT_MATCH_SCHEMA,
        )
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, CANNOT_MATCH_SCHEMA) as writer:
            writer.write_table(table)
        return sink.getvalue().to_pybytes()


def separable(expr: Expression, columns: Sequence[str]) -> bool:
    """Whether every top-level conjunct of ``expr`` tests at most one of ``columns``: then each
    file group's stats decide alone (see the module's docstring)."""
    indexed = set(columns)
    pending = [expr]
    while pending:
        e = pending.pop()
        if isinstance(e, And):
            pending += [e.left, e.right]
        elif len(set(referenced_columns(e)) & indexed) > 1:
            return False
    return True


def scan_file_groups(
    job: StatsJob, bytes_read: Accumulator[int]
) -> Callable[[int, Iterable[FileSlice]], Iterator[tuple[Any, Any]]]:
    """The first stage: file-group slices in; per slice, the Arrow answer (``("cannot", ipc)``)
    when the filter is separable, else ``((partition, file), stats)`` pairs for the shuffle;
    errors as ``("error", ExecutorError)`` / ``((_ERROR, n), ExecutorError)``."""

    def fn(index: int, slices: Iterable[FileSlice]) -> Iterator[tuple[Any, Any]]:
        mdt: MetadataTable | None = None
        try:
            for file_slice in slices:
                mdt = mdt or job.open_metadata_table()
                stats = job.file_stats(mdt, file_slice)
                if job.separable:
                    yield "cannot", job.cannot_match(stats.items())
                else:
                    yield from stats.items()
        except Exception as e:  # the driver raises it again, typed
            yield ((_ERROR, index) if not job.separable else "error"), ExecutorError.of(e)
        finally:
            if mdt is not None:
                bytes_read.add(mdt.storage.stats.bytes_read)

    return fn


def evaluate_files(job: StatsJob) -> Callable[[Iterable[tuple[Any, Any]]], Iterator[tuple[str, Any]]]:
    """The second stage (non-separable filters): a file's stats, gathered, in; the Arrow answer out."""

    def fn(pairs: Iterable[tuple[Any, Any]]) -> Iterator[tuple[str, Any]]:
        stats = []
        for key, value in pairs:
            if isinstance(value, ExecutorError):
                yield "error", value
            else:
                stats.append((key, value))
        yield "cannot", job.cannot_match(stats)

    return fn


def _merge_columns(a: dict[str, ColumnStats], b: dict[str, ColumnStats]) -> dict[str, ColumnStats]:
    return {**a, **b}


class SparkColumnStats:
    """A :data:`~hudi_md.planning.column_stats_mode.ColumnStatsEngine` running its job on ``sc``
    (a session's ``sparkContext``; the planner process's is the driver's, attached)."""

    def __init__(self, sc: SparkContext) -> None:
        self.sc = sc

    # equal engines share the planner's remembered plans (a plan's cache key holds its engine)
    def __eq__(self, other: object) -> bool:
        return isinstance(other, SparkColumnStats) and other.sc is self.sc

    def __hash__(self) -> int:
        return hash((SparkColumnStats, id(self.sc)))

    def __call__(self, request: ColumnStatsRequest, counters: dict[str, int]) -> list[FileSlice] | None:
        table, slices = request.table, request.slices
        mdt = table.metadata_table
        if mdt is None:
            return None
        groups = mdt.file_slices(K.COLUMN_STATS)
        job = StatsJob(
            table=replace(TableSnapshot.of(table, ()), schema=request.schema),
            mdt_instants=tuple(mdt.timeline.instants),
            mdt_timeline_path=mdt.config.timeline_path,
            valid_instants=mdt.valid_instants,
            columns=request.columns,
            partitions=tuple(sorted({s.partition_path for s in slices})),
            expr=request.expr,
            separable=separable(request.expr, request.columns),
        )
        sc = self.sc
        bytes_read = sc.accumulator(0)
        rdd = sc.parallelize(groups, len(groups)).mapPartitionsWithIndex(scan_file_groups(job, bytes_read))
        if not job.separable:
            rdd = rdd.reduceByKey(_merge_columns, len(groups)).mapPartitions(evaluate_files(job))
        answers = rdd.collect()
        found = []
        for kind, value in answers:
            if kind == "error":
                raise value.rebuild()
            found.append(pa.ipc.open_stream(value).read_all())
        cannot = pa.concat_tables(found) if found else CANNOT_MATCH_SCHEMA.empty_table()
        counters["column_stats_tasks"] = len(groups)
        counters["column_stats_shuffled"] = int(not job.separable)
        counters["column_stats_executor_bytes_read"] = int(bytes_read.value)
        counters["column_stats_cannot_match_rows"] = cannot.num_rows
        return drop_slices(slices, cannot)


def _file_key(partitions: pa.Array | pa.ChunkedArray, files: pa.Array | pa.ChunkedArray) -> pa.Array:
    return pc.binary_join_element_wise(partitions, files, "\0")


def drop_slices(slices: Sequence[FileSlice], cannot: pa.Table) -> list[FileSlice]:
    """``slices`` but those every file of which is in ``cannot`` (the in-process rule: a file
    without stats, or whose stats might match, keeps its slice). The match is done in Arrow, so
    the planner holds the answer as Arrow buffers, not as Python objects per file."""
    counts = np.fromiter((_files_in(s) for s in slices), np.int64, len(slices))
    partitions = pa.array((s.partition_path for s in slices for _ in range(_files_in(s))), pa.string())
    names = pa.array((n for s in slices for n in _file_names(s)), pa.string())
    pruned = pc.is_in(_file_key(partitions, names), value_set=_file_key(cannot.column(0), cannot.column(1)))
    # files outside ``cannot`` per slice; a slice with none goes (one without files too, as in process)
    outside = np.concatenate(([0], np.cumsum(~pruned.to_numpy(zero_copy_only=False))))
    ends = np.cumsum(counts)
    kept = outside[ends] - outside[ends - counts]
    return [s for s, n in zip(slices, kept, strict=True) if n > 0]


def _files_in(s: FileSlice) -> int:
    return len(s.log_files) + (s.base_file is not None)


def _file_names(s: FileSlice) -> list[str]:
    return ([s.base_file.name] if s.base_file else []) + [lf.name for lf in s.log_files]


def plan(
    spark: SparkSession | None,
    table: Table | str,
    filters: Filters = None,
    *,
    as_of: str | None = None,
    read_optimized: bool = False,
    options: Mapping[str, str] | None = None,
) -> ScanPlan:
    """``table.plan(filters)``, with column_stats pruning on ``spark``'s executors when Hudi's
    in-memory threshold is passed; ``spark`` None plans in this process (the counters say
    ``column_stats_distributed: 0`` when the threshold was passed). ``table``: an open table or
    its URI (opened with ``options``)."""
    opened = open_table(table, options) if isinstance(table, str) else table
    if not isinstance(opened, Table):
        raise TypeError(f"expected a hudi_md Table or a table URI, got {type(table).__name__}")
    engine = SparkColumnStats(spark.sparkContext) if spark is not None else None
    return opened.plan(filters, as_of, read_optimized=read_optimized, column_stats_engine=engine)
