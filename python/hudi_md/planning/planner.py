"""Scan planning as a pipeline: partitions → partition pruning (paths, then ``partition_stats``)
→ latest file slices → record-index pruning → ``column_stats`` data skipping → a :class:`ScanPlan`.

Every pruning step is inclusive: when unsure (no stats, a column not indexed, a partition path
that does not carry the column value), the partition or slice is kept.
"""

from __future__ import annotations

import logging
import operator
import weakref
from collections import defaultdict
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

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
from hudi_md.table.fs_view import FileSlice, FileSystemView
from hudi_md.table.partitions import PartitionScheme
from hudi_md.table.slice_rows import slices_from_arrow, slices_to_arrow
from hudi_md.table.slice_table import latest_slices_table, wanted_files
from hudi_md.table.state import TableState

if TYPE_CHECKING:
    from hudi_md.metadata.reader import ColumnStat, MetadataTable

log = logging.getLogger(__name__)

RECORD_KEY_COLUMN = "_hoodie_record_key"
# A plan of all the partitions of a table this large builds its slices column-wise.
COLUMNAR_MIN_PARTITIONS = 256
# slice rows of every partition, per file-system view (a view is one snapshot of a table state)
_SLICE_ROWS: weakref.WeakKeyDictionary[FileSystemView, tuple[int, pa.Table]] = weakref.WeakKeyDictionary()
# An unfiltered plan on a table whose MDT `files` partition is this large reads it whole first.
SCAN_FILES_AHEAD_BYTES = 1 << 20
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
        self._slices = list(slices) if slices is not None or rows is None else None
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
    mdt: MetadataTable,
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
        found = mdt.stats_columns(index, columns, partitions)
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
                        "p": pa.array([e[0] for e in entries], pa.string()),  # type: ignore[index]
                        "f": pa.array([e[1] for e in entries], pa.string()),  # type: ignore[index]
                    }
                )
            table = stats_table_of_columns(stats, named, wanted, schema)
            if table is not None:
                return table
        stats_of = mdt.partition_stats if index == "partition_stats" else mdt.column_stats
        return build_stats_table(stats_of(columns, partitions), entry_of, rows, schema)

    table = cached_stats_table(mdt, (index, tuple(columns), schema, tuple(entries)), build)
    if table is None:
        return None
    might = arrow_might_match(expr, schema, table)
    return None if might is None else rows_to_keep(might, table)


def prune_by_partition_stats(
    table: TableState, partitions: list[str], expr: Expression, schema: pa.Schema
) -> list[str]:
    mdt = table.metadata_table
    if mdt is None or "partition_stats" not in mdt.available_partitions or not partitions:
        return partitions
    columns = _stats_columns(table, expr, schema)
    if not columns:
        return partitions
    if len(partitions) >= ARROW_MIN_ENTRIES:
        rows = _rows_to_keep(
            mdt,
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
    stats = _stats_map(mdt.partition_stats(columns, partitions), lambda s: s.partition_path)
    might_match = stats_evaluator(expr, schema)
    return [p for p in partitions if p not in stats or might_match(stats[p])]


def prune_by_column_stats(
    table: TableState, slices: list[FileSlice], expr: Expression, schema: pa.Schema | None = None
) -> list[FileSlice]:
    """Drop slices none of whose files can hold a matching row, per MDT ``column_stats``."""
    mdt = table.metadata_table
    if mdt is None or "column_stats" not in mdt.available_partitions or not slices:
        return slices
    schema = schema if schema is not None else table.schema
    columns = _stats_columns(table, expr, schema)
    if not columns:
        return slices
    partitions = sorted({s.partition_path for s in slices})
    if len(slices) >= ARROW_MIN_ENTRIES:
        files = [(i, s.partition_path, n) for i, s in enumerate(slices) for n in _file_names(s)]
        rows = _rows_to_keep(
            mdt,
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
    stats = _stats_map(mdt.column_stats(columns, partitions), lambda s: (s.partition_path, s.file_name))
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


RECORD_INDEX_ENABLE = "hoodie.metadata.record.index.enable"
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

    ``hoodie.metadata.record.index.enable`` = ``true`` trusts it, ``false`` never uses it; unset,
    it is trusted when every write on the active timeline tagged keys (upserts, deletes, table
    services) and nothing older was archived.
    """
    setting = table.options.get(RECORD_INDEX_ENABLE, "").lower()
    if setting in ("true", "false"):
        return setting == "true"
    if table.has_archived_instants():
        return False
    for instant in table.timeline.write_timeline():
        operation = (table.timeline.metadata(instant).get("operationType") or "").upper()
        if operation not in _KEY_UNIQUE_OPERATIONS:
            return False
    return True


def prune_by_record_index(
    table: TableState, slices: list[FileSlice], expr: Expression
) -> list[FileSlice] | None:
    mdt = table.metadata_table
    if mdt is None or "record_index" not in mdt.available_partitions:
        return None
    if _record_key_values(expr, table) is None or not record_index_trusted(table):
        return None
    keys = _record_key_values(expr, table)
    if keys is None or len(keys) > RECORD_INDEX_MAX_KEYS:
        return None
    locations = mdt.record_index(sorted(keys))
    wanted = {(loc.partition_path, loc.file_id) for loc in locations.values()}
    return [s for s in slices if (s.partition_path, s.file_id) in wanted]


def latest_slice_rows(
    table: TableState, view: FileSystemView, partitions: Sequence[str] | pa.StringArray
) -> pa.Table | None:
    """The latest slices of ``partitions`` (all the table's) as rows, built column-wise from a
    listing that gives its files as one table (the MDT ``files`` partition); None when it cannot
    (another listing, records the column-wise decoder does not take)."""
    known = _SLICE_ROWS.get(view)
    if known is not None and known[0] == len(partitions):
        return known[1]
    files_table = getattr(table.listing, "files_table", None)
    files = files_table() if files_table is not None else None
    if files is None:
        return None
    # a partition's files record may outlive the partition (dropped from the partition list)
    rows = latest_slices_table(view, wanted_files(files, partitions))
    _SLICE_ROWS[view] = (len(partitions), rows)
    return rows


def _scan_files_ahead(table: TableState) -> bool:
    """Whether a plan of every partition reads the MDT ``files`` partition whole before it asks
    for the partition list: when that partition is this large, the table has many partitions, and
    one scan gives both (the list is one of its records) instead of a read for the list first."""
    if table.listing is not table.metadata_table:
        return False
    mdt = table.metadata_table
    assert mdt is not None
    if mdt.files_partition_bytes() < SCAN_FILES_AHEAD_BYTES:
        return False
    return mdt.files_table() is not None


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
    key = (id(table.timeline), expr, as_of, read_optimized, use_indexes, column_stats_engine)
    try:
        hash(key)
    except TypeError:  # a literal that does not hash (never the case for parsed filters)
        key = None
    known = table.plan_results.get(key) if key is not None else None
    if known is None:
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
    return known.copy()


def _plan_scan(
    table: TableState,
    expr: Expression | None,
    *,
    as_of: str | None,
    read_optimized: bool,
    use_indexes: bool,
    column_stats_engine: ColumnStatsEngine | None = None,
) -> ScanPlan:
    counters: dict[str, int] = {}
    scanned_ahead = False
    # filters bind to the columns the rows have as of the plan's instant (time travel: its schema)
    schema = table.schema_and_listing(as_of)[0] if expr is not None else None
    matching = getattr(table.listing, "matching_partitions", None) if schema is not None else None
    by_keys = getattr(table.listing, "partitions_with_keys", None) if schema is not None else None
    keys = None
    if by_keys is not None and expr is not None and schema is not None:
        keys = partition_keys(expr, table.partition_scheme, _partition_schema(table.partition_scheme, schema))
    if matching is not None and expr is not None and table.partition_scheme.is_identity:
        # a catalog prunes by partition values itself (the metastore: one SQL query), so the
        # table's partitions are never all fetched
        partitions = matching(expr, table.partition_scheme.fields)
        counters["partitions_from_catalog"] = len(partitions)
    elif keys is not None and by_keys is not None:
        # the filter names the partitions' paths or path prefixes: point and prefix lookups of
        # the MDT files partition, not the partition list
        partitions = by_keys(keys.paths, keys.prefixes) if not keys.is_empty else []
        counters["partitions_from_keys"] = len(partitions)
    else:
        scanned_ahead = expr is None and not read_optimized and _scan_files_ahead(table)
        # a plan of every partition compares them with the listing column-wise: no Python list
        as_array = getattr(table.listing, "partition_array", None) if scanned_ahead else None
        partitions = as_array() if as_array is not None else table.partitions()
        counters["partitions"] = len(partitions)
    if expr is not None and schema is not None:
        partitions = prune_partitions(partitions, expr, table.partition_scheme, schema)
        counters["partitions_after_partition_pruning"] = len(partitions)
        if _on_partition_values_only(expr, table.partition_scheme):
            # partition pruning was exact: no index can prune more (and the MDT is not opened)
            use_indexes = False
        if use_indexes and as_of is None:
            # partition_stats may be recomputed from the latest slices: not valid for time travel.
            partitions = prune_by_partition_stats(table, partitions, expr, schema)
            counters["partitions_after_partition_stats"] = len(partitions)
    view = table.file_system_view(as_of)
    if expr is None and not read_optimized and (len(partitions) >= COLUMNAR_MIN_PARTITIONS or scanned_ahead):
        # every file group of a large table, no slice pruning to follow: column-wise
        rows = latest_slice_rows(table, view, partitions)
        if rows is not None:
            counters["file_slices"] = rows.num_rows
            return ScanPlan(counters=counters, rows=rows)
    if isinstance(partitions, pa.Array):
        partitions = partitions.to_pylist()
    slices = view.latest_base_files(partitions) if read_optimized else view.latest_file_slices(partitions)
    counters["file_slices"] = len(slices)
    if expr is not None and schema is not None and use_indexes:
        # Indexes describe the latest table state; time travel plans without them.
        if as_of is None:
            by_key = prune_by_record_index(table, slices, expr)
            if by_key is not None:
                slices = by_key
                counters["file_slices_after_record_index"] = len(slices)
        kept = _column_stats_on_engine(table, slices, expr, schema, counters, column_stats_engine)
        slices = kept if kept is not None else prune_by_column_stats(table, slices, expr, schema)
        counters["file_slices_after_column_stats"] = len(slices)
    return ScanPlan(slices=slices, counters=counters)


def _column_stats_on_engine(
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
    mdt = table.metadata_table
    if mdt is None or "column_stats" not in mdt.available_partitions or not slices:
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
