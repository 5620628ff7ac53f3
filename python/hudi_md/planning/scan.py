"""A table scan: plan the slices, read and merge each, filter and project the rows."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from hudi_md.errors import InvalidOptionError
from hudi_md.planning.expressions import Expression
from hudi_md.planning.planner import plan_scan, row_filter
from hudi_md.table.fs_view import FileSlice
from hudi_md.table.partitions import PartitionScheme
from hudi_md.table.state import TableState
from hudi_md.table.timeline import Instant

log = logging.getLogger(__name__)

COMMIT_TIME_COLUMN = "_hoodie_commit_time"


@dataclass(frozen=True)
class IncrementalCommits:
    """The completed writes of an incremental query over ``(start, end]`` and the instant (a
    requested time; None: the latest) its slices are read as of."""

    instants: tuple[Instant, ...]
    as_of: str | None

    @property
    def times(self) -> list[str]:
        """The commits' instant times: a row is in the query when its ``_hoodie_commit_time`` is one."""
        return [i.requested_time for i in self.instants]


def incremental_commits(table: TableState, start: str | None, end: str | None) -> IncrementalCommits:
    """Which commits ``(start, end]`` holds, as Apache Hudi 1.2 reads it: on tables of version 8
    and later the bounds are completion times (a commit's own instant time as the start takes that
    commit in: it completed after it was requested); on version 6, requested times."""
    timeline = table.timeline
    writes = timeline.write_timeline()
    if table.config.table_version < 8:
        return IncrementalCommits(tuple(writes.between(start, end)), end)
    as_of = None
    if end is not None:
        # the table as it stood at `end`: every instant completed by then (what a single writer's
        # timeline held; one requested earlier but completing later is not in it)
        done = timeline.completed().completed_between(None, end).last()
        as_of = done.requested_time if done else end
    return IncrementalCommits(tuple(writes.completed_between(start, end)), as_of)


class TableScan:
    """One read of a table: filters (an expression tree or None) and a column projection.

    Each query type comes whole (:meth:`snapshot`, :meth:`incremental`: a ``pyarrow.Table``) or
    as a stream (:meth:`snapshot_batches`, :meth:`incremental_batches`: a
    ``pyarrow.RecordBatchReader`` reading one file slice at a time as it is consumed); both read
    the same slices the same way (:meth:`_slice_tables`), so they hold the same rows."""

    def __init__(
        self, table: TableState, *, filters: Expression | None = None, columns: Sequence[str] | None = None
    ) -> None:
        self.table = table
        self.filters = filters
        self.columns = list(columns) if columns is not None else None
        self.stats: dict[str, int] = {}

    # --- helpers ---------------------------------------------------------------------------------

    def _schema(self, as_of: str | None = None) -> pa.Schema:
        """The rows' schema as of ``as_of`` (a time-travel read has that instant's columns)."""
        return self.table.schema_as_of(as_of)

    def _check_columns(self, schema: pa.Schema) -> None:
        if self.columns is None:
            return
        missing = [c for c in self.columns if schema.get_field_index(c) < 0]
        if missing:
            raise InvalidOptionError(
                f"columns {missing} not in the table schema of {self.table.uri} "
                f"(columns: {', '.join(schema.names)})"
            )

    def _row_filter(self, schema: pa.Schema) -> pc.Expression | None:
        if self.filters is None:
            return None
        return row_filter(self.filters, schema)

    def _output_schema(self, schema: pa.Schema) -> pa.Schema:
        """The schema of the rows this scan returns: ``schema``'s columns, or the projection's."""
        if self.columns is None:
            return schema
        return pa.schema([schema.field(c) for c in self.columns])

    def _slice_tables(
        self,
        slices: Sequence[FileSlice],
        schema: pa.Schema,
        as_of: str | None,
        columns: list[str] | None,
    ) -> Iterator[pa.Table]:
        """The rows of each slice in turn (merged, filtered, with ``columns``), each read only when
        the previous one has been taken: a caller holding one at a time holds one slice's rows."""
        from hudi_md.read.slice_reader import MergeSpec, instant_validator, read_file_slice

        merge = MergeSpec.from_config(self.table.config)
        # The one validity rule every reader applies (Hudi's log scanner's), Spark executors included.
        valid = instant_validator(self.table.timeline, as_of)
        row_filter = self._row_filter(schema)
        scheme = PartitionScheme(self.table.config)
        self.stats["file_slices_read"] = 0
        for s in slices:
            overrides = scheme.read_overrides(s.partition_path, schema)
            if not overrides:
                rows = read_file_slice(
                    self.table.storage,
                    s,
                    schema=schema,
                    merge=merge,
                    is_valid_instant=valid,
                    columns=columns,
                    filter=row_filter,
                )
            else:
                # Partition columns the reader takes from the path (files without them, or the
                # default partition's nulls) are set before the row filter sees them.
                rows = read_file_slice(
                    self.table.storage, s, schema=schema, merge=merge, is_valid_instant=valid
                )
                rows = with_values(rows, overrides)
                if row_filter is not None:
                    rows = rows.filter(row_filter)
                if columns is not None:
                    rows = rows.select(columns)
            self.stats["file_slices_read"] += 1
            yield rows

    def _read_slices(self, slices: Sequence[FileSlice], schema: pa.Schema, as_of: str | None) -> pa.Table:
        tables = list(self._slice_tables(slices, schema, as_of, self.columns))
        if not tables:
            return self._output_schema(schema).empty_table()
        return pa.concat_tables(tables, promote_options="default")

    def _stream(self, tables: Iterator[pa.Table], schema: pa.Schema, query: str) -> pa.RecordBatchReader:
        """``tables`` as a reader of ``schema``'s batches, read as they are taken."""
        started = time.perf_counter()
        requests = self.table.storage.stats.requests

        def batches() -> Iterator[pa.RecordBatch]:
            rows = 0
            for table in tables:
                if table.schema != schema:  # the same columns, as the whole read's concatenation has them
                    table = table.select(schema.names).cast(schema)
                rows += table.num_rows
                yield from table.to_batches()
                del table  # not held while the next slice is read
            self._log_read(query, rows, started, requests)

        return pa.RecordBatchReader.from_batches(schema, batches())

    def _log_read(self, query: str, rows: int, started: float, requests: int) -> None:
        if log.isEnabledFor(logging.DEBUG):
            log.debug(
                "read %s: %s query, filter %s, columns %s: %d rows from %d file slices in %.3f s, "
                "%d storage requests",
                self.table.uri,
                query,
                self.filters,
                self.columns if self.columns is not None else "all",
                rows,
                self.stats.get("file_slices_read", 0),
                time.perf_counter() - started,
                self.table.storage.stats.requests - requests,
            )

    # --- query types -------------------------------------------------------------------------------

    def _snapshot_plan(self, as_of: str | None, read_optimized: bool) -> tuple[list[FileSlice], pa.Schema]:
        """The slices a snapshot read as of ``as_of`` reads, and the rows' schema (filters and
        columns checked before any data is read)."""
        schema = self._schema(as_of)
        self._check_columns(schema)
        if self.filters is not None:
            self._row_filter(schema)  # validate filters before any data is read
        plan = plan_scan(self.table, self.filters, as_of=as_of, read_optimized=read_optimized)
        self.stats.update(plan.counters)
        return plan.slices, schema

    def snapshot(self, as_of: str | None, *, read_optimized: bool = False) -> pa.Table:
        if self.table.timeline.write_timeline().last() is None:
            return self._empty()
        started, requests = time.perf_counter(), self.table.storage.stats.requests
        slices, schema = self._snapshot_plan(as_of, read_optimized)
        rows = self._read_slices(slices, schema, as_of)
        self._log_read(_query_name(as_of, read_optimized), rows.num_rows, started, requests)
        return rows

    def snapshot_batches(self, as_of: str | None, *, read_optimized: bool = False) -> pa.RecordBatchReader:
        """:meth:`snapshot` as a stream: the plan now, each slice's rows as the reader is consumed."""
        if self.table.timeline.write_timeline().last() is None:
            empty = self._empty()
            return pa.RecordBatchReader.from_batches(empty.schema, empty.to_batches())
        slices, schema = self._snapshot_plan(as_of, read_optimized)
        tables = self._slice_tables(slices, schema, as_of, self.columns)
        return self._stream(tables, self._output_schema(schema), _query_name(as_of, read_optimized))

    def incremental(self, start: str | None, end: str | None) -> pa.Table:
        """Rows whose ``_hoodie_commit_time`` lies in ``(start, end]`` as of ``end``."""
        if self.table.timeline.write_timeline().last() is None:
            return self._empty()
        started, requests = time.perf_counter(), self.table.storage.stats.requests
        schema = self._schema()
        self._check_columns(schema)
        slices, commits = self.incremental_plan(start, end)
        if not commits.instants:
            return self._project(schema.empty_table())
        rows = self.read_commits(slices, commits.times, commits.as_of)
        self._log_read(f"incremental ({start}, {end}]", rows.num_rows, started, requests)
        return rows

    def incremental_batches(self, start: str | None, end: str | None) -> pa.RecordBatchReader:
        """:meth:`incremental` as a stream: the plan now, each slice's rows as the reader is
        consumed."""
        if self.table.timeline.write_timeline().last() is None:
            empty = self._empty()
            return pa.RecordBatchReader.from_batches(empty.schema, empty.to_batches())
        schema = self._schema()
        self._check_columns(schema)
        slices, commits = self.incremental_plan(start, end)
        out = self._output_schema(schema)
        if not commits.instants:
            return pa.RecordBatchReader.from_batches(out, [])
        tables = self._commit_tables(slices, commits.times, commits.as_of)
        return self._stream(tables, out, f"incremental ({start}, {end}]")

    def incremental_plan(
        self, start: str | None, end: str | None
    ) -> tuple[list[FileSlice], IncrementalCommits]:
        """What an incremental query over ``(start, end]`` reads: the latest slices as of its end
        of the file groups the range's commits wrote (after this scan's filters), and those commits
        (:func:`incremental_commits`)."""
        timeline = self.table.timeline
        if start is not None and end is not None and end < start:
            raise InvalidOptionError(f"incremental end {end} is before start {start}")
        schema = self._schema()
        if schema.get_field_index(COMMIT_TIME_COLUMN) < 0:
            raise InvalidOptionError(
                f"{self.table.uri}: incremental queries need the {COMMIT_TIME_COLUMN} meta column "
                "(hoodie.populate.meta.fields=false)"
            )
        commits = incremental_commits(self.table, start, end)
        if not commits.instants:
            return [], commits
        touched: set[tuple[str, str]] = set()
        for instant in commits.instants:
            meta = timeline.metadata(instant)
            for partition, stats in (meta.get("partitionToWriteStats") or {}).items():
                for stat in stats or ():
                    if stat.get("fileId"):
                        touched.add((partition or "", stat["fileId"]))
        # Indexes describe the latest state, not `end`: plan this range without them.
        plan = plan_scan(self.table, self.filters, as_of=commits.as_of, use_indexes=False)
        slices = [s for s in plan.slices if (s.partition_path, s.file_id) in touched]
        return slices, commits

    def read_commits(self, slices: Sequence[FileSlice], times: Sequence[str], as_of: str | None) -> pa.Table:
        """The rows of ``slices`` as of ``as_of`` whose ``_hoodie_commit_time`` is one of ``times``,
        with this scan's columns and filters (what an incremental query returns of them)."""
        tables = list(self._commit_tables(slices, times, as_of))
        if not tables:
            return self._output_schema(self._schema()).empty_table()
        return pa.concat_tables(tables, promote_options="default")

    def _commit_tables(
        self, slices: Sequence[FileSlice], times: Sequence[str], as_of: str | None
    ) -> Iterator[pa.Table]:
        """Each slice's rows written by one of ``times``, in turn (:meth:`read_commits`)."""
        columns = self.columns
        if columns is not None and COMMIT_TIME_COLUMN not in columns:
            columns = [*columns, COMMIT_TIME_COLUMN]  # read to select by, dropped after
        value_set = pa.array(list(times), pa.string())
        for rows in self._slice_tables(slices, self._schema(), as_of, columns):
            mask = pc.is_in(rows.column(COMMIT_TIME_COLUMN), value_set=value_set)
            yield self._project(rows.filter(mask))

    # --- small pieces ------------------------------------------------------------------------------

    def _project(self, rows: pa.Table) -> pa.Table:
        if self.columns is None:
            return rows
        return rows.select(self.columns)

    def _empty(self) -> pa.Table:
        try:
            schema = self._schema()
        except Exception:  # an empty table may have no schema anywhere yet
            return pa.table({})
        self._check_columns(schema)
        return self._project(schema.empty_table())


def _query_name(as_of: str | None, read_optimized: bool) -> str:
    kind = "read_optimized" if read_optimized else "snapshot"
    return f"{kind} as of {as_of}" if as_of is not None else kind


def with_values(rows: pa.Table, values: dict[str, Any]) -> pa.Table:
    """``rows`` with each of these columns set to one value."""
    for name, value in values.items():
        i = rows.schema.get_field_index(name)
        if i < 0:
            continue
        field = rows.schema.field(i)
        rows = rows.set_column(i, field, pa.array([value] * rows.num_rows, field.type))
    return rows
