"""Scan planning as a pipeline over a :class:`~hudi_md.table.plan_source.PlanSource` (storage, the
MDT or the metastore): the source's partitions for the filter → partition pruners (path values,
``partition_stats``) → the source's latest file slices → slice pruners (``record_index``,
``column_stats``) → a :class:`ScanPlan`. The pruners are made from the filter and the source's
indexes (:func:`pruners`) and passed to the pipeline (:func:`file_slices`) explicitly.

Every pruning step is inclusive: when unsure (no stats, a column not indexed, a partition path
that does not carry the column value), the partition or slice is kept.
"""

from __future__ import annotations

import logging
import operator
import time
from collections import defaultdict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_md.config import metadata as M
from hudi_md.errors import EngineUnavailableError
from hudi_md.planning.binding import bind
from hudi_md.planning.column_stats_mode import ColumnStatsEngine, ColumnStatsRequest, column_stats_mode
from hudi_md.planning.evaluators import (
    ColumnStats,
    partition_evaluator,
    stats_evaluator,
    to_arrow_expression,
)
from hudi_md.planning.expressions import Expression
from hudi_md.planning.partition_keys import partition_keys
from hudi_md.planning.stats_arrow import (
    StatsTable,
    arrow_might_match,
    build_stats_table,
    cached_stats_table,
    entry_rows,
    rows_to_keep,
    stats_table_of_columns,
)
from hudi_md.planning.visitors import referenced_columns
from hudi_md.table.fs_view import FileSlice
from hudi_md.table.partitions import PartitionScheme
from hudi_md.table.plan_source import (
    PartitionKeys,
    PlanHint,
    PlanSource,
    RecordLocator,
    StatsSource,
    partition_names,
)
from hudi_md.table.slice_rows import slices_from_arrow, slices_to_arrow
from hudi_md.table.state import TableState

if TYPE_CHECKING:
    from hudi_md.metadata.reader import ColumnStat

log = logging.getLogger(__name__)

RECORD_KEY_COLUMN = "_hoodie_record_key"
# A plan of all the partitions of a table this large builds its slices column-wise.
COLUMNAR_MIN_PARTITIONS = 256
RECORD_INDEX_MAX_KEYS = 10_000
# From this many partitions or slices, stats pruning runs over one Arrow table of the stats; below
# it, a Python call per entry costs less than building the table.
ARROW_MIN_ENTRIES = 64


class ScanPlan:
    """The slices a query must read, and what each pruning step did.

    The slices are held as :class:`FileSlice` objects or as :mod:`slice_rows` rows (a plan of
    every file group of a large table is built column-wise, see :mod:`slice_table`); each form is
    made from the other when first asked for."""

    def __init__(
        self,
        slices: Sequence[FileSlice] | None = None,
        counters: dict[str, int] | None = None,
        *,
        rows: pa.Table | None = None,
    ) -> None:
        # one of the forms is held; neither given: a plan of no slice
        self._slices: list[FileSlice] | None
        if slices is not None:
            self._slices = list(slices)
        else:
            self._slices = None if rows is not None else []
        self._rows = rows
        self.counters: dict[str, int] = dict(counters or {})

    @property
    def slices(self) -> list[FileSlice]:
        if self._slices is None:
            self._slices = slices_from_arrow(self._rows)
        return self._slices

    @property
    def rows(self) -> pa.Table:
        """The slices as :data:`slice_rows.SLICE_SCHEMA` rows (table-relative paths), sorted by
        partition path then file id."""
        if self._rows is None:
            self._rows = slices_to_arrow(self._slices or [])
        return self._rows

    def copy(self) -> ScanPlan:
        if self._rows is not None:
            return ScanPlan(self._slices, self.counters, rows=self._rows)
        return ScanPlan(self._slices, self.counters)


def row_filter(expr: Expression, schema: pa.Schema) -> pc.Expression:
    """The filter as a pyarrow compute expression over the table's rows (SQL null semantics)."""
    return to_arrow_expression(bind(expr, schema))


def _partition_schema(scheme: PartitionScheme, schema: pa.Schema) -> pa.Schema:
    fields = []
    for name in scheme.fields:
        idx = schema.get_field_index(name)
        fields.append(schema.field(idx) if idx >= 0 else pa.field(name, pa.string()))
    return pa.schema(fields)


def prune_partitions(
    partitions: Sequence[str], expr: Expression | None, scheme: PartitionScheme, schema: pa.Schema
) -> list[str]:
    """Partitions whose path values may satisfy ``expr`` (exact for identity partitioning)."""
    if expr is None or not scheme.fields or not scheme.is_identity:
        return list(partitions)
    pschema = _partition_schema(scheme, schema)
    if not set(referenced_columns(expr)) & set(pschema.names):
        return list(partitions)
    keep = partition_evaluator(expr, pschema)
    out = []
    for p in partitions:
        if keep(scheme.pruning_values(p, pschema)):
            out.append(p)
    return out


def _stats_map(
    stats: Sequence[ColumnStat], key_of: Callable[[ColumnStat], Hashable]
) -> dict[Hashable, dict[str, ColumnStats]]:
    out: dict[Hashable, dict[str, ColumnStats]] = defaultdict(dict)
    for s in stats:
        out[key_of(s)][s.column_name] = ColumnStats(s.min_value, s.max_value, s.null_count, s.value_count)
    return out


def _stats_columns(table: TableState, expr: Expression, schema: pa.Schema) -> list[str]:
    """The columns whose stats may prune: those the filter tests, but for the columns of an
    identity partitioning, which partition pruning has decided already (their stats would cost a
    lookup per partition and prune nothing more)."""
    scheme = table.partition_scheme
    exact = set(scheme.fields) if scheme.is_identity else set()
    return [c for c in referenced_columns(expr) if schema.get_field_index(c) >= 0 and c not in exact]


def _file_names(file_slice: FileSlice) -> list[str]:
    base = [file_slice.base_file.name] if file_slice.base_file else []
    return base + [lf.name for lf in file_slice.log_files]


def _rows_to_keep(
    stats_source: StatsSource,
    index: str,
    columns: list[str],
    partitions: list[str],
    entries: Sequence[Hashable],
    entry_of: Callable[[ColumnStat], Hashable],
    expr: Expression,
    schema: pa.Schema,
) -> np.ndarray | None:
    """The entries (by position) that ``index``'s stats do not rule out, decided over one Arrow
    table of the stats; None when Arrow cannot decide it exactly (then the scalar path does)."""

    def build() -> StatsTable | None:
        rows = entry_rows(entries)
        if rows is None:
            return None
        found = stats_source.stats_columns(index, columns, partitions)
        if found is not None:
            # column-wise: the records' and the rows' entries as Arrow columns, joined
            stats, partition = found
            if index == "partition_stats":
                named = pa.table({"p": partition})
                wanted = pa.table({"p": pa.array(entries, pa.string())})
            else:
                named = pa.table({"p": partition, "f": stats.file_name})
                wanted = pa.table(
                    {
                        # column_stats' entries are (partition, file name) pairs
                        "p": pa.array([e[0] for e in entries], pa.string()),  # type: ignore[index]
                        "f": pa.array([e[1] for e in entries], pa.string()),  # type: ignore[index]
                    }
                )
            table = stats_table_of_columns(stats, named, wanted, schema)
            if table is not None:
                return table
        stats_of = stats_source.partition_stats if index == "partition_stats" else stats_source.column_stats
        return build_stats_table(stats_of(columns, partitions), entry_of, rows, schema)

    table = cached_stats_table(stats_source, (index, tuple(columns), schema, tuple(entries)), build)
    if table is None:
        return None
    might = arrow_might_match(expr, schema, table)
    return None if might is None else rows_to_keep(might, table)


def prune_by_partition_stats(
    stats_source: StatsSource | None,
    table: TableState,
    partitions: list[str],
    expr: Expression,
    schema: pa.Schema,
) -> list[str]:
    if stats_source is None or "partition_stats" not in stats_source.indexes or not partitions:
        return partitions
    columns = _stats_columns(table, expr, schema)
    if not columns:
        return partitions
    if len(partitions) >= ARROW_MIN_ENTRIES:
        rows = _rows_to_keep(
            stats_source,
            "partition_stats",
            columns,
            partitions,
            partitions,
            operator.attrgetter("partition_path"),
            expr,
            schema,
        )
        if rows is not None:
            return [partitions[i] for i in rows.tolist()]
    stats = _stats_map(stats_source.partition_stats(columns, partitions), lambda s: s.partition_path)
    might_match = stats_evaluator(expr, schema)
    return [p for p in partitions if p not in stats or might_match(stats[p])]


def prune_by_column_stats(
    stats_source: StatsSource | None,
    table: TableState,
    slices: list[FileSlice],
    expr: Expression,
    schema: pa.Schema | None = None,
) -> list[FileSlice]:
    """Drop slices none of whose files can hold a matching row, per ``column_stats``."""
    if stats_source is None or "column_stats" not in stats_source.indexes or not slices:
        return slices
    schema = schema if schema is not None else table.schema
    columns = _stats_columns(table, expr, schema)
    if not columns:
        return slices
    partitions = sorted({s.partition_path for s in slices})
    if len(slices) >= ARROW_MIN_ENTRIES:
        files = [(i, s.partition_path, n) for i, s in enumerate(slices) for n in _file_names(s)]
        rows = _rows_to_keep(
            stats_source,
            "column_stats",
            columns,
            partitions,
            [(p, n) for _, p, n in files],
            operator.attrgetter("partition_path", "file_name"),
            expr,
            schema,
        )
        if rows is not None:
            # a slice is kept when any of its files is
            return [slices[i] for i in np.unique(np.array([i for i, _, _ in files], np.int64)[rows]).tolist()]
    stats = _stats_map(
        stats_source.column_stats(columns, partitions), lambda s: (s.partition_path, s.file_name)
    )
    might_match = stats_evaluator(expr, schema)
    kept = []
    for s in slices:
        names = _file_names(s)
        # A file without any stats record is unknown: keep the slice.
        if any(
            (s.partition_path, n) not in stats or might_match(stats[(s.partition_path, n)]) for n in names
        ):
            kept.append(s)
    return kept


def _record_key_values(expr: Expression, table: TableState) -> set[str] | None:
    """Record keys an AND-conjunct pins (``key = x`` / ``key IN (...)``), or None."""
    from hudi_md.planning.expressions import And, LiteralPredicate, Op, SetPredicate

    key_fields = table.config.record_key_fields
    # column → how its value reads as a record key
    names: dict[str, Callable[[Any], str]] = {RECORD_KEY_COLUMN: str}
    if len(key_fields) == 1:
        key_field = key_fields[0]
        if table.config.keygen not in ("COMPLEX",):
            names[key_field] = str
        elif table.config.table_version >= 9:
            # version 9 always writes "<field>:<value>" for ComplexKeyGenerator; older versions
            # depend on a writer setting the table does not record, so they are not pruned.
            names[key_field] = lambda v: f"{key_field}:{v}"
    found: set[str] | None = None

    def walk(e: Expression) -> None:
        nonlocal found
        if isinstance(e, And):
            walk(e.left)
            walk(e.right)
            return
        values: set[str] | None = None
        if isinstance(e, LiteralPredicate) and e.op == Op.EQ and e.term.name in names:
            values = {names[e.term.name](e.value)}
        elif isinstance(e, SetPredicate) and e.op == Op.IN and e.term.name in names:
            values = {names[e.term.name](v) for v in e.values}
        if values is not None:
            found = values if found is None else found & values

    walk(expr)
    return found


# Operations that tag incoming records with their current location, so a key never lands in two
# file groups. INSERT / BULK_INSERT / INSERT_OVERWRITE do not look keys up and may write duplicates,
# which a record index (one location per key) cannot describe.
_KEY_UNIQUE_OPERATIONS = frozenset(
    {
        "UPSERT",
        "UPSERT_PREPPED",
        "DELETE",
        "DELETE_PREPPED",
        "DELETE_PARTITION",
        "COMPACT",
        "LOG_COMPACT",
        "CLUSTER",
        "INDEX",
        "ALTER_SCHEMA",
    }
)


def record_index_trusted(table: TableState) -> bool:
    """Whether the record index may prune: never guess when the table may hold duplicate keys.

    ``hoodie.metadata.global.record.level.index.enable`` (or its older name
    ``hoodie.metadata.record.index.enable``) = ``true`` trusts it, ``false`` never uses it; unset,
    it is trusted when every write on the active timeline tagged keys (upserts, deletes, table
    services) and nothing older was archived.
    """
    setting = M.RECORD_INDEX_ENABLE.get(table.options, None)
    if setting is not None:
        return setting
    if table.has_archived_instants():
        return False
    for instant in table.timeline.write_timeline():
        operation = (table.timeline.metadata(instant).get("operationType") or "").upper()
        if operation not in _KEY_UNIQUE_OPERATIONS:
            return False
    return True


def prune_by_record_index(
    locator: RecordLocator | None, table: TableState, slices: list[FileSlice], expr: Expression
) -> list[FileSlice] | None:
    if locator is None:
        return None
    keys = _record_key_values(expr, table)
    if keys is None or len(keys) > RECORD_INDEX_MAX_KEYS or not record_index_trusted(table):
        return None
    locations = locator.locations(sorted(keys))
    wanted = {(loc.partition_path, loc.file_id) for loc in locations.values()}
    return [s for s in slices if (s.partition_path, s.file_id) in wanted]


def _on_partition_values_only(expr: Expression, scheme: PartitionScheme) -> bool:
    """Whether ``expr`` tests only the columns of an identity partitioning (whose values the
    partition paths hold exactly)."""
    return scheme.is_identity and set(referenced_columns(expr)) <= set(scheme.fields)


def plan_scan(
    table: TableState,
    expr: Expression | None,
    *,
    as_of: str | None = None,
    read_optimized: bool = False,
    use_indexes: bool = True,
    column_stats_engine: ColumnStatsEngine | None = None,
) -> ScanPlan:
    """The slices a query reads. A state is a snapshot: a plan asked for again (same filter and
    options) is answered from memory, as a repeated query on an unchanged table is.
    ``column_stats_engine``: where column_stats pruning runs when Hudi's in-memory threshold is
    passed (:mod:`hudi_md.planning.column_stats_mode`); None: in this process."""
    key: Hashable | None = (id(table.timeline), expr, as_of, read_optimized, use_indexes, column_stats_engine)
    try:
        hash(key)
    except TypeError:  # a literal that does not hash (never the case for parsed filters)
        key = None
    known = table.plan_results.get(key) if key is not None else None
    if known is not None:
        _log_plan(table, expr, as_of, known, None)
    else:
        before = _PlanCost.now(table)
        known = _plan_scan(
            table,
            expr,
            as_of=as_of,
            read_optimized=read_optimized,
            use_indexes=use_indexes,
            column_stats_engine=column_stats_engine,
        )
        if key is not None:
            table.plan_results.put(key, known)
        _log_plan(table, expr, as_of, known, before)
    return known.copy()


@dataclass(frozen=True)
class _PlanCost:
    """A table's storage counters and the clock when a plan started: what it cost is the change."""

    started: float
    requests: int
    mdt_requests: int
    bytes_read: int

    @classmethod
    def now(cls, table: TableState) -> _PlanCost:
        stats = table.storage.stats
        return cls(time.perf_counter(), stats.requests, stats.requests_under(MDT_PREFIX), stats.bytes_read)


# where a table's MDT is (its requests are counted apart from the data's)
MDT_PREFIX = ".hoodie/metadata/"


def _log_plan(
    table: TableState, expr: Expression | None, as_of: str | None, plan: ScanPlan, before: _PlanCost | None
) -> None:
    """A DEBUG record of a plan: its filter, its counters (partitions and file slices before and
    after each pruning step) and, when it was not answered from memory, the storage requests it
    made (those to the MDT apart), the bytes it read and its time."""
    if not log.isEnabledFor(logging.DEBUG):
        return
    if before is None:
        cost = "answered from memory (the same plan of this table state)"
    else:
        stats = table.storage.stats
        cost = (
            f"{stats.requests - before.requests} storage requests "
            f"({stats.requests_under(MDT_PREFIX) - before.mdt_requests} to the metadata table), "
            f"{stats.bytes_read - before.bytes_read} bytes read, {time.perf_counter() - before.started:.3f} s"
        )
    log.debug(
        "plan %s: filter %s, as of %s: %s; %s",
        table.uri,
        expr,
        as_of or "latest",
        ", ".join(f"{k} {v}" for k, v in plan.counters.items()),
        cost,
        extra={"plan_counters": dict(plan.counters)},
    )


class PartitionPruner(Protocol):
    """Narrows a plan's partitions; ``counter`` names the count it leaves. ``exact``: the source
    selected the partitions by the filter's partition part exactly (a catalog, in SQL)."""

    @property
    def counter(self) -> str: ...

    def prune(self, partitions: list[str], exact: bool) -> list[str]: ...


class SlicePruner(Protocol):
    """Narrows a plan's slices; None: it could not decide (and leaves no count)."""

    @property
    def counter(self) -> str: ...

    def prune(self, slices: list[FileSlice], counters: dict[str, int]) -> list[FileSlice] | None: ...


@dataclass(frozen=True)
class PartitionValuePruner:
    """Partition pruning by the values partition paths carry (exact for identity partitioning):
    nothing to do when the source selected them so already."""

    expr: Expression
    scheme: PartitionScheme
    schema: Callable[[], pa.Schema]
    counter: str = "partitions_after_partition_pruning"

    def prune(self, partitions: list[str], exact: bool) -> list[str]:
        return partitions if exact else prune_partitions(partitions, self.expr, self.scheme, self.schema())


@dataclass(frozen=True)
class PartitionStatsPruner:
    stats: StatsSource | None
    table: TableState
    expr: Expression
    schema: Callable[[], pa.Schema]
    counter: str = "partitions_after_partition_stats"

    def prune(self, partitions: list[str], exact: bool) -> list[str]:
        return prune_by_partition_stats(self.stats, self.table, partitions, self.expr, self.schema())


@dataclass(frozen=True)
class RecordIndexPruner:
    locator: RecordLocator | None
    table: TableState
    expr: Expression
    counter: str = "file_slices_after_record_index"

    def prune(self, slices: list[FileSlice], counters: dict[str, int]) -> list[FileSlice] | None:
        return prune_by_record_index(self.locator, self.table, slices, self.expr)


@dataclass(frozen=True)
class ColumnStatsPruner:
    """``column_stats`` data skipping, in this process or on the engine
    (:func:`_column_stats_on_engine`)."""

    stats: StatsSource | None
    table: TableState
    expr: Expression
    schema: Callable[[], pa.Schema]
    engine: ColumnStatsEngine | None
    counter: str = "file_slices_after_column_stats"

    def prune(self, slices: list[FileSlice], counters: dict[str, int]) -> list[FileSlice]:
        schema = self.schema()
        kept = _column_stats_on_engine(
            self.stats, self.table, slices, self.expr, schema, counters, self.engine
        )
        return (
            kept
            if kept is not None
            else prune_by_column_stats(self.stats, self.table, slices, self.expr, schema)
        )


def pruners(
    table: TableState,
    source: PlanSource,
    expr: Expression | None,
    schema: Callable[[], pa.Schema],
    *,
    as_of: str | None,
    use_indexes: bool,
    column_stats_engine: ColumnStatsEngine | None = None,
) -> tuple[list[PartitionPruner], list[SlicePruner]]:
    """The pruners of a plan of ``expr`` on ``source``: path values always; the source's indexes
    when ``use_indexes``, unless the filter tests only partition values (then pruning by path
    values is exact, and no index is opened); indexes describe the latest table state, so time
    travel (``as_of``) prunes by path values and ``column_stats`` only."""
    if expr is None:
        return [], []
    scheme = table.partition_scheme
    by_partition: list[PartitionPruner] = [PartitionValuePruner(expr, scheme, schema)]
    if not use_indexes or _on_partition_values_only(expr, scheme):
        return by_partition, []
    by_slice: list[SlicePruner] = []
    if as_of is None:
        # partition_stats may be recomputed from the latest slices: not valid for time travel
        by_partition.append(PartitionStatsPruner(source.stats, table, expr, schema))
        by_slice.append(RecordIndexPruner(source.record_locations, table, expr))
    by_slice.append(ColumnStatsPruner(source.stats, table, expr, schema, column_stats_engine))
    return by_partition, by_slice


def file_slices(
    source: PlanSource,
    hint: PlanHint,
    partition_pruners: Sequence[PartitionPruner],
    slice_pruners: Sequence[SlicePruner],
) -> ScanPlan:
    """The pipeline: the source's partitions, each partition pruner, the source's latest slices
    of what is left, each slice pruner. An unfiltered plan of many partitions takes the slices
    column-wise when the source gives them so."""
    counters: dict[str, int] = {}
    found = source.partitions(hint)
    partitions = found.names
    counters[found.found_by] = len(partitions)
    if partition_pruners:
        names = partition_names(partitions)
        for pruner in partition_pruners:
            names = pruner.prune(names, found.exact)
            counters[pruner.counter] = len(names)
        partitions = names
    columnar = (
        hint.expr is None
        and not hint.read_optimized
        and (len(partitions) >= COLUMNAR_MIN_PARTITIONS or found.scanned_ahead)
    )
    slices = source.latest_slices(partitions, read_optimized=hint.read_optimized, columnar=columnar)
    if isinstance(slices, pa.Table):
        counters["file_slices"] = slices.num_rows
        return ScanPlan(counters=counters, rows=slices)
    counters["file_slices"] = len(slices)
    for slice_pruner in slice_pruners:
        kept = slice_pruner.prune(slices, counters)
        if kept is not None:
            slices = kept
            counters[slice_pruner.counter] = len(slices)
    return ScanPlan(slices=slices, counters=counters)


def _plan_scan(
    table: TableState,
    expr: Expression | None,
    *,
    as_of: str | None,
    read_optimized: bool,
    use_indexes: bool,
    column_stats_engine: ColumnStatsEngine | None = None,
) -> ScanPlan:
    scheme = table.partition_scheme
    if expr is not None and table.source_state is None:
        # the schema and the listing (the MDT) are both needed: on an object store they open side
        # by side. A catalog plan of partition values needs neither the schema nor the MDT.
        table.schema_and_listing(as_of)

    @cache
    def schema() -> pa.Schema:
        # filters bind to the columns the rows have as of the plan's instant (time travel: its schema)
        return table.schema_as_of(as_of)

    def keys() -> PartitionKeys | None:
        assert expr is not None
        return partition_keys(expr, scheme, _partition_schema(scheme, schema()))

    source = table.plan_source(as_of)
    # a source may select partitions by the filter's part on the identity partition columns
    fields = tuple(scheme.fields) if scheme.is_identity else ()
    by_partition, by_slice = pruners(
        table,
        source,
        expr,
        schema,
        as_of=as_of,
        use_indexes=use_indexes,
        column_stats_engine=column_stats_engine,
    )
    return file_slices(source, PlanHint(expr, fields, read_optimized, keys), by_partition, by_slice)


def _column_stats_on_engine(
    stats: StatsSource | None,
    table: TableState,
    slices: list[FileSlice],
    expr: Expression,
    schema: pa.Schema,
    counters: dict[str, int],
    engine: ColumnStatsEngine | None,
) -> list[FileSlice] | None:
    """The slices the engine keeps when Hudi's rule (or the memory budget) sends the column_stats
    read there, else None (pruned in process; ``column_stats_distributed`` says which ran, when the
    step reads stats). Without a usable engine the stats are read in process only when that fits
    the memory budget (:mod:`hudi_md.planning.column_stats_mode`); ``column_stats_engine_unavailable``
    says an engine was offered but could not be used."""
    if stats is None or "column_stats" not in stats.indexes or not slices:
        return None

    columns = _stats_columns(table, expr, schema)
    if not columns:
        return None
    mode = column_stats_mode(table.options, len(slices), len(columns))
    if not mode.engine:
        return None
    request = ColumnStatsRequest(table, slices, expr, schema, tuple(columns))
    kept = None
    try:
        if engine is None:
            raise EngineUnavailableError(
                "no Spark session was given (hudi_md.spark.plan(spark, ...) has one)"
            )
        kept = engine(request, counters)
    except EngineUnavailableError as e:
        if not mode.fits_budget:
            raise EngineUnavailableError(
                f"{table.uri}: column_stats pruning needs the engine ({e}), and "
                f"{mode.over_budget_message()}; plan on Spark, or raise the budget"
            ) from e
        if engine is not None:
            log.warning(
                "%s: column_stats pruning runs in the planner, the engine is unavailable: %s", table.uri, e
            )
            counters["column_stats_engine_unavailable"] = 1
    counters["column_stats_distributed"] = int(kept is not None)
    return kept
