"""Read options: the query (Apache Hudi's data source keys) and how the planner prunes."""

from __future__ import annotations

from hudi_md.config.option import NOT_IN_HUDI, enum, integer, size, string

READ = ("read",)

QUERY_TYPE = enum(
    "hoodie.datasource.query.type",
    "snapshot",
    ("snapshot", "read_optimized", "incremental"),
    hudi="snapshot",
    scopes=READ,
    doc="snapshot (the latest merged records), read_optimized (base files only) or incremental (the "
    "records changed in a range of commits).",
)
AS_OF_INSTANT = string(
    "as.of.instant",
    None,
    hudi=None,
    scopes=READ,
    doc="Time travel: read the table as of this instant (20240418173550988, or an ISO date-time).",
)
BEGIN_INSTANT = string(
    "hoodie.datasource.read.begin.instanttime",
    None,
    hudi=None,
    scopes=READ,
    doc="Incremental queries: the instant after which commits are read (exclusive; 000 reads from the "
    "first). Required for query.type incremental.",
)
END_INSTANT = string(
    "hoodie.datasource.read.end.instanttime",
    None,
    hudi=None,
    scopes=READ,
    doc="Incremental queries: the last instant read (inclusive). Unset: the latest.",
)
COLUMN_STATS_PROCESSING_MODE = enum(
    "hoodie.metadata.index.column.stats.processing.mode.override",
    None,
    ("in-memory", "engine"),
    hudi=None,
    scopes=READ,
    doc="Where a plan reads column_stats: in-memory (in the planner) or engine (a Spark job). Unset: "
    "Apache Hudi's rule (hoodie.metadata.index.column.stats.inMemory.projection.threshold) and "
    "hudi_md.planner.column.stats.memory.budget decide.",
)
IN_MEMORY_PROJECTION_THRESHOLD = integer(
    "hoodie.metadata.index.column.stats.inMemory.projection.threshold",
    100_000,
    hudi=100_000,
    scopes=READ,
    doc="Plans reading at least this many column_stats records (file slices x filtered columns) read "
    "them with the engine when there is one.",
)
PLANNER_MEMORY_BUDGET = size(
    "hudi_md.planner.column.stats.memory.budget",
    1 << 30,
    hudi=NOT_IN_HUDI,
    scopes=READ,
    doc="The most memory a plan may use to read column_stats in process (bytes; 512m, 2g); above it the "
    "read goes to the engine, or fails without one.",
)
