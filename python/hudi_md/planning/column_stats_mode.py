"""Where a plan's ``column_stats`` pruning runs: in the planner's process, or on an engine.

Hudi's rule and keys (``SparkBaseIndexSupport.shouldReadInMemory``, ``HoodieMetadataConfig``):
``hoodie.metadata.index.column.stats.processing.mode.override`` (``in-memory`` or ``engine``)
decides when set; else the stats are read in memory when the projection the plan needs, file
slices x filtered columns, is below ``hoodie.metadata.index.column.stats.inMemory.projection.threshold``
rows (default 100000), and on the engine (a Spark job) otherwise.

Hudi counts rows; what runs out is the planner's memory. hudi-md adds a budget in bytes,
``hudi_md.planner.column.stats.memory.budget`` (:data:`MEMORY_BUDGET`, default 1 GiB; ``512m``,
``2g`` and plain bytes are taken): the in-process read is estimated at
:data:`BYTES_PER_STATS_RECORD` per stats record (file slices x filtered columns, Hudi's projection),
and a plan whose estimate is over the budget goes to the engine too. The budget also says when
falling back is safe: when the engine was wanted but cannot be reached (no Spark session; the
planner could not attach to the driver), the planner reads the stats itself only if the estimate
fits the budget, and raises :class:`~hudi_md.errors.EngineUnavailableError` otherwise. An explicit
``processing.mode.override=in-memory`` is the user's choice: no budget applies.

An engine is a :data:`ColumnStatsEngine`: the planner hands it the slices and the filter and it
returns the slices to keep, exactly what the in-process pruning keeps, or None to leave the work to
the planner (``hudi_md.spark.distributed_plan`` is the Spark one). An engine that cannot be reached
raises :class:`~hudi_md.errors.EngineUnavailableError`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa

from hudi_md.config import read as R
from hudi_md.planning.expressions import Expression
from hudi_md.table.fs_view import FileSlice
from hudi_md.table.state import TableState

PROCESSING_MODE_OVERRIDE = R.COLUMN_STATS_PROCESSING_MODE.key
IN_MEMORY_PROJECTION_THRESHOLD = R.IN_MEMORY_PROJECTION_THRESHOLD.key
DEFAULT_IN_MEMORY_PROJECTION_THRESHOLD = R.IN_MEMORY_PROJECTION_THRESHOLD.default
IN_MEMORY = "in-memory"
ENGINE = "engine"
# Not a Hudi key: Hudi has no bytes bound for this decision (its hoodie.metadata.max.reader.memory
# is the spill threshold of the MDT log merge, a different thing).
MEMORY_BUDGET = R.PLANNER_MEMORY_BUDGET.key
DEFAULT_MEMORY_BUDGET = R.PLANNER_MEMORY_BUDGET.default
# The planner's peak Python memory per stats record read in process (tracemalloc: ~1.9 KB per
# record for int64 columns, benchmarks/planner_memory_bench.py); rounded up.
BYTES_PER_STATS_RECORD = 2048


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


@dataclass(frozen=True)
class ColumnStatsMode:
    """Where one plan's column_stats read goes, and why."""

    engine: bool  # Hudi's rule or the budget sends it to the engine
    estimated_bytes: int  # what the in-process read would hold (projection x BYTES_PER_STATS_RECORD)
    budget: int | None  # None: in-memory forced, no budget applies

    @property
    def fits_budget(self) -> bool:
        """Whether reading in process is safe (the fallback when the engine cannot be reached)."""
        return self.budget is None or self.estimated_bytes <= self.budget

    def over_budget_message(self) -> str:
        return (
            f"the in-process column_stats read is estimated at {self.estimated_bytes:,} bytes "
            f"({BYTES_PER_STATS_RECORD} per stats record), over {MEMORY_BUDGET}={self.budget:,}"
        )


def column_stats_mode(options: Mapping[str, str], slices: int, columns: int) -> ColumnStatsMode:
    """Hudi's rule for this plan's column_stats read, with hudi-md's memory budget."""
    estimated = projection_rows(slices, columns) * BYTES_PER_STATS_RECORD
    mode = R.COLUMN_STATS_PROCESSING_MODE.get(options)
    if mode == IN_MEMORY:
        return ColumnStatsMode(engine=False, estimated_bytes=estimated, budget=None)
    budget = memory_budget(options)
    if mode == ENGINE:
        return ColumnStatsMode(engine=True, estimated_bytes=estimated, budget=budget)
    threshold = R.IN_MEMORY_PROJECTION_THRESHOLD.get(options)
    engine = projection_rows(slices, columns) >= threshold or estimated > budget
    return ColumnStatsMode(engine=engine, estimated_bytes=estimated, budget=budget)


def wants_engine(options: Mapping[str, str], slices: int, columns: int) -> bool:
    """Whether Hudi's rule (or the memory budget) sends this plan's column_stats read to the engine."""
    return column_stats_mode(options, slices, columns).engine


def memory_budget(options: Mapping[str, str]) -> int:
    """:data:`MEMORY_BUDGET` in bytes: a whole number, optionally with a unit (``k``, ``m``, ``g``;
    binary: ``512m`` = 512 MiB)."""
    budget = R.PLANNER_MEMORY_BUDGET.get(options)
    if budget <= 0:
        raise R.PLANNER_MEMORY_BUDGET.invalid(R.PLANNER_MEMORY_BUDGET.raw(options), "not a positive size")
    return budget
