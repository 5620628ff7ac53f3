"""A table scan: plan the slices, read and merge each, filter and project the rows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from hudi_md.errors import InvalidOptionError
from hudi_md.planning.expressions import Expression
from hudi_md.planning.planner import plan_scan, row_filter
from hudi_md.table.fs_view import FileSlice
from hudi_md.table.partitions import PartitionScheme
from hudi_md.table.state import TableState

COMMIT_TIME_COLUMN = "_hoodie_commit_time"


class TableScan:
    """One read of a table: filters (an expression tree or None) and a column projection."""

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

    def _read_slices(self, slices: Sequence[FileSlice], schema: pa.Schema, as_of: str | None) -> pa.Table:
        from hudi_md.read.slice_reader import MergeSpec, instant_validator, read_file_slice

        merge = MergeSpec.from_config(self.table.config)
        # The one validity rule every reader applies (Hudi's log scanner's), Spark executors included.
        valid = instant_validator(self.table.timeline, as_of)
        row_filter = self._row_filter(schema)
        scheme = PartitionScheme(self.table.config)
        tables = []
        for s in slices:
            overrides = scheme.read_overrides(s.partition_path, schema)
            if not overrides:
                tables.append(
                    read_file_slice(
                        self.table.storage,
                        s,
                        schema=schema,
                        merge=merge,
                        is_valid_instant=valid,
                        columns=self.columns,
                        filter=row_filter,
                    )
                )
                continue
            # Partition columns the reader takes from the path (files without them, or the
            # default partition's nulls) are set before the row filter sees them.
            rows = read_file_slice(self.table.storage, s, schema=schema, merge=merge, is_valid_instant=valid)
            rows = with_values(rows, overrides)
            if row_filter is not None:
                rows = rows.filter(row_filter)
            tables.append(rows if self.columns is None else rows.select(self.columns))
        self.stats["file_slices_read"] = len(slices)
        if not tables:
            out_schema = (
                schema if self.columns is None else pa.schema([schema.field(c) for c in self.columns])
            )
            return out_schema.empty_table()
        return pa.concat_tables(tables, promote_options="default")

    # --- query types -------------------------------------------------------------------------------

    def snapshot(self, as_of: str | None, *, read_optimized: bool = False) -> pa.Table:
        if self.table.timeline.write_timeline().last() is None:
            return self._empty()
        schema = self._schema(as_of)
        self._check_columns(schema)
        if self.filters is not None:
            self._row_filter(schema)  # validate filters before any data is read
        plan = plan_scan(self.table, self.filters, as_of=as_of, read_optimized=read_optimized)
        self.stats.update(plan.counters)
        return self._read_slices(plan.slices, schema, as_of)

    def incremental(self, start: str | None, end: str | None) -> pa.Table:
        """Rows whose ``_hoodie_commit_time`` lies in ``(start, end]`` as of ``end``."""
        if self.table.timeline.write_timeline().last() is None:
            return self._empty()
        schema = self._schema()
        self._check_columns(schema)
        slices, times = self.incremental_plan(start, end)
        if not times:
            return self._project(schema.empty_table())
        return self.read_commits(slices, times, end)

    def incremental_plan(self, start: str | None, end: str | None) -> tuple[list[FileSlice], list[str]]:
        """What an incremental query over ``(start, end]`` reads: the latest slices as of ``end`` of
        the file groups the range's commits wrote (after this scan's filters), and those commits'
        instant times (a row belongs to the query when its ``_hoodie_commit_time`` is one)."""
        timeline = self.table.timeline
        if start is not None and end is not None and end < start:
            raise InvalidOptionError(f"incremental end {end} is before start {start}")
        schema = self._schema()
        if schema.get_field_index(COMMIT_TIME_COLUMN) < 0:
            raise InvalidOptionError(
                f"{self.table.uri}: incremental queries need the {COMMIT_TIME_COLUMN} meta column "
                "(hoodie.populate.meta.fields=false)"
            )
        in_range = list(timeline.write_timeline().between(start, end))
        if not in_range:
            return [], []
        touched: set[tuple[str, str]] = set()
        for instant in in_range:
            meta = timeline.metadata(instant)
            for partition, stats in (meta.get("partitionToWriteStats") or {}).items():
                for stat in stats or ():
                    if stat.get("fileId"):
                        touched.add((partition or "", stat["fileId"]))
        # Indexes describe the latest state, not `end`: plan this range without them.
        plan = plan_scan(self.table, self.filters, as_of=end, use_indexes=False)
        slices = [s for s in plan.slices if (s.partition_path, s.file_id) in touched]
        return slices, [i.requested_time for i in in_range]

    def read_commits(self, slices: Sequence[FileSlice], times: Sequence[str], as_of: str | None) -> pa.Table:
        """The rows of ``slices`` as of ``as_of`` whose ``_hoodie_commit_time`` is one of ``times``,
        with this scan's columns and filters (what an incremental query returns of them)."""
        saved = self.columns
        if saved is not None and COMMIT_TIME_COLUMN not in saved:
            self.columns = [*saved, COMMIT_TIME_COLUMN]
        try:
            rows = self._read_slices(slices, self._schema(), as_of)
        finally:
            self.columns = saved
        mask = pc.is_in(rows.column(COMMIT_TIME_COLUMN), value_set=pa.array(list(times), pa.string()))
        return self._project(rows.filter(mask))

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


def with_values(rows: pa.Table, values: dict[str, Any]) -> pa.Table:
    """``rows`` with each of these columns set to one value."""
    for name, value in values.items():
        i = rows.schema.get_field_index(name)
        if i < 0:
            continue
        field = rows.schema.field(i)
        rows = rows.set_column(i, field, pa.array([value] * rows.num_rows, field.type))
    return rows
