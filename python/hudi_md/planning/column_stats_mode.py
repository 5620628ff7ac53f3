"""Where a plan's ``column_stats`` pruning runs: in the planner's process, or on an engine.

Hudi's rule and keys (``SparkBaseIndexSupport.shouldReadInMemory``, ``HoodieMetadataConfig``):
``hoodie.metadata.index.column.stats.processing.mode.override`` (``in-memory`` or ``engine``)
decides when set; else the stats are read in memory when the projection the plan needs, file
slices x filtered columns, is below ``hoodie.metadata.index.column.stats.inMemory.projection.threshold``
rows (default 100000), and on the engine (a Spark job) otherwise.

An engine is a :data:`ColumnStatsEngine`: the planner hands it the slices and the filter and it
returns the slices to keep, exactly what the in-process pruning keeps, or None to leave the work to
the planner (``hudi_md.spark.distributed_plan`` is the Spark one).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa

from hudi_md.errors import InvalidOptionError
from hudi_md.planning.expressions import Expression
from hudi_md.table.fs_view import FileSlice
from hudi_md.table.state import TableState

PROCESSING_MODE_OVERRIDE = "hoodie.metadata.index.column.stats.processing.mode.override"
IN_MEMORY_PROJECTION_THRESHOLD = "hoodie.metadata.index.column.stats.inMemory.projection.threshold"
DEFAULT_IN_MEMORY_PROJECTION_THRESHOLD = 100_000
IN_MEMORY = "in-memory"
ENGINE = "engine"


@dataclass(frozen=True)
class ColumnStatsRequest:
    """What the planner asks an engine: which of ``slices`` may hold rows matching ``expr``,
    judged by the ``column_stats`` of ``columns`` (the planner's choice of indexed columns)."""

    table: TableState
    slices: Sequence[FileSlice]
    expr: Expression
    schema: pa.Schema
    columns: tuple[str, ...]


# The slices to keep, or None (the planner prunes in process); counters go into the dict.
ColumnStatsEngine = Callable[[ColumnStatsRequest, dict[str, int]], "list[FileSlice] | None"]


def projection_rows(slices: int, columns: int) -> int:
    """Hudi's measure of the stats a plan reads: file slices x filtered columns."""
    return slices * columns


def wants_engine(options: Mapping[str, str], slices: int, columns: int) -> bool:
    """Whether Hudi's rule sends this plan's column_stats read to the engine."""
    mode = (options.get(PROCESSING_MODE_OVERRIDE) or "").strip().lower()
    if mode:
        if mode not in (IN_MEMORY, ENGINE):
            raise InvalidOptionError(
                f"{PROCESSING_MODE_OVERRIDE} must be {IN_MEMORY!r} or {ENGINE!r}, got {mode!r}"
            )
        return mode == ENGINE
    raw = options.get(IN_MEMORY_PROJECTION_THRESHOLD)
    try:
        threshold = int(raw) if raw not in (None, "") else DEFAULT_IN_MEMORY_PROJECTION_THRESHOLD
    except ValueError:
        raise InvalidOptionError(
            f"{IN_MEMORY_PROJECTION_THRESHOLD} must be a whole number of rows, got {raw!r}"
        ) from None
    return projection_rows(slices, columns) >= threshold
