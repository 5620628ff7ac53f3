"""Column statistics as one Arrow table, and the Arrow twin of the stats evaluator.

Pruning by ``column_stats`` and ``partition_stats`` asks one question of every entry (a file or a
partition): may it hold a row matching the filter?  :func:`~hudi_md.planning.evaluators.stats_evaluator`
answers it for one entry in Python.  Here the entries' statistics are one Arrow table
(:class:`StatsTable`: a row per entry, columns ``<column>.present``, ``.min``, ``.max``,
``.null_count``, ``.value_count``) and the question is one Arrow expression over it
(:func:`arrow_might_match`), answered for every row at once.

The answers are the scalar evaluator's, row for row; the rules that make it so:

- a bound is put in Arrow only in a type that holds it exactly and orders as Python does
  (:func:`bound_type`); a bound of another kind than the column's, or NaN, is stored as null,
  which like the scalar evaluator's ``_holds`` compares as "not proven";
- a bound of the column's kind that Arrow cannot hold exactly (an int beyond 2**53 for a float
  column, a decimal finer than the column's scale, ...) makes its row be decided by the scalar
  evaluator (:attr:`StatsTable.scalar_rows`);
- a filter the visitor cannot state exactly in Arrow (a literal of another kind than its column's
  statistics) gives ``None``: the caller uses the scalar evaluator.  Never guess.
"""

from __future__ import annotations

import datetime
import operator
import threading
import weakref
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from hudi_md.metadata.stats_columns import StatKind, StatsColumns, StatValues
from hudi_md.planning.binding import bind
from hudi_md.planning.evaluators import (
    IN_PREDICATE_LIMIT,
    ColumnStats,
    ColumnStatsLike,
    FileColumnStats,
    is_nan_value,
    stats_evaluator,
    value_kind,
)
from hudi_md.planning.expressions import BoundReference, Expression
from hudi_md.planning.visitors import BoundBooleanExpressionVisitor, visit
from hudi_md.table.state import SnapshotCache

__all__ = [
    "HAS_STATS",
    "NamedColumnStats",
    "StatsTable",
    "arrow_might_match",
    "bound_type",
    "build_stats_table",
    "cached_stats_table",
    "entry_rows",
    "rows_to_keep",
    "stats_field",
    "stats_table_of_columns",
]

# Whether an entry has any statistics record (of any column).
HAS_STATS = "has_stats"
PRESENT, MIN, MAX, NULL_COUNT, VALUE_COUNT = "present", "min", "max", "null_count", "value_count"


def stats_field(column: str, part: str) -> str:
    """The stats table's column for one part of a column's statistics (``PRESENT``, ``MIN``, ...)."""
    return f"{column}.{part}"


class NamedColumnStats(ColumnStatsLike, Protocol):
    """One statistics record: a column's stats in one entry (``metadata.reader.ColumnStat``)."""

    @property
    def column_name(self) -> str: ...


# --------------------------------------------------------------------------- types


def bound_type(arrow_type: pa.DataType) -> pa.DataType | None:
    """The Arrow type a column's min/max are kept in: one holding the Python values the scalar
    evaluator compares (ints, floats, ``Decimal``, str, bytes, bool, ``date``, ``datetime``) and
    ordering them as Python does; ``None`` when the column's bounds are not kept in Arrow."""
    t = arrow_type.value_type if pa.types.is_dictionary(arrow_type) else arrow_type
    if pa.types.is_integer(t) or pa.types.is_decimal(t) or pa.types.is_boolean(t):
        return t
    if pa.types.is_floating(t):
        return pa.float64()
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.string()  # UTF-8 byte order is code point order, Python's str order
    if (
        pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_fixed_size_binary(t)
        or pa.types.is_binary_view(t)
    ):
        return pa.binary()
    if pa.types.is_date(t):
        return pa.date32()
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", tz=t.tz)  # Python datetimes are microseconds
    return None


def _kind_of_type(t: pa.DataType) -> str:
    """The :func:`value_kind` of the Python values a :func:`bound_type` holds."""
    if pa.types.is_boolean(t):
        return "bool"
    if pa.types.is_string(t):
        return "str"
    if pa.types.is_binary(t):
        return "bytes"
    if pa.types.is_date(t):
        return "date"
    if pa.types.is_timestamp(t):
        return "datetime" if t.tz is None else "datetime-tz"
    return "number"


_KIND_BY_TYPE: dict[type, str] = {
    int: "number",
    float: "number",
    Decimal: "number",
    bool: "bool",
    str: "str",
    bytes: "bytes",
    datetime.date: "date",
}


def _comparable(value: Any, kind: str) -> Any:
    """``value`` when the scalar evaluator would compare it with a literal of ``kind``, else None."""
    if value is None:
        return None
    found = _KIND_BY_TYPE.get(type(value))
    if found is None:
        found = value_kind(value)
    if found != kind:
        return None
    if isinstance(value, (float, Decimal)) and is_nan_value(value):
        return None
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    return value


def _exact_scalar(value: Any, t: pa.DataType) -> pa.Scalar | None:
    try:
        scalar = pa.scalar(value, type=t)
        return scalar if scalar.as_py() == value else None
    except (pa.ArrowException, TypeError, ValueError, OverflowError, ArithmeticError):
        return None


def _exact_array(values: list[Any], t: pa.DataType, inexact: set[int]) -> pa.Array:
    """``values`` as an Arrow array of ``t``; a value ``t`` cannot hold exactly becomes null and
    its row goes to ``inexact``."""
    try:
        array = pa.array(values, type=t)
        if array.to_pylist() == values:  # == across int/float/Decimal is exact in Python
            return array
    except (pa.ArrowException, TypeError, ValueError, OverflowError, ArithmeticError):
        pass
    kept: list[Any] = []
    for row, v in enumerate(values):
        if v is not None and _exact_scalar(v, t) is None:
            inexact.add(row)
            v = None
        kept.append(v)
    return pa.array(kept, type=t)


def _count_array(values: list[Any], inexact: set[int]) -> pa.Array:
    for row, v in enumerate(values):
        if v is not None and type(v) is not int:
            inexact.add(row)
    return _exact_array([v if type(v) is int else None for v in values], pa.int64(), inexact)


# --------------------------------------------------------------------------- the table


@dataclass(frozen=True)
class StatsTable:
    """The statistics of a sequence of entries, one row per entry (in the caller's order).

    ``bound_types``: each column with statistics → the type of its ``.min``/``.max`` columns
    (``None``: only its counts are kept). ``scalar_rows``: rows Arrow cannot hold exactly, with
    their statistics as the scalar evaluator takes them.
    """

    table: pa.Table
    bound_types: Mapping[str, pa.DataType | None]
    scalar_rows: Mapping[int, FileColumnStats]

    @property
    def num_rows(self) -> int:
        return self.table.num_rows


def build_stats_table(
    stats: Iterable[NamedColumnStats],
    entry_of: Callable[[Any], Hashable],
    rows: Mapping[Hashable, int],
    schema: pa.Schema,
) -> StatsTable:
    """The statistics records ``stats`` as a :class:`StatsTable` with a row per entry.

    ``entry_of`` names a record's entry; ``rows`` gives each entry's row (``len(rows)`` rows).
    Records of other entries are left out; of two records for one entry and column the later
    wins. ``schema`` gives the columns' types.
    """
    n = len(rows)
    has_stats = [False] * n
    # column -> [mins, maxs, null counts, value counts, present]
    columns: dict[str, list[list[Any]]] = {}
    for s in stats:
        row = rows.get(entry_of(s))
        if row is None:
            continue
        has_stats[row] = True
        parts = columns.get(s.column_name)
        if parts is None:
            parts = columns[s.column_name] = [[None] * n, [None] * n, [None] * n, [None] * n, [False] * n]
        parts[0][row] = s.min_value
        parts[1][row] = s.max_value
        parts[2][row] = s.null_count
        parts[3][row] = s.value_count
        parts[4][row] = True

    arrays: dict[str, pa.Array] = {HAS_STATS: pa.array(has_stats, pa.bool_())}
    bound_types: dict[str, pa.DataType | None] = {}
    inexact: set[int] = set()
    for name, (mins, maxs, nulls, counts, present) in columns.items():
        index = schema.get_field_index(name)
        t = bound_type(schema.field(index).type) if index >= 0 else None
        bound_types[name] = t
        arrays[stats_field(name, PRESENT)] = pa.array(present, pa.bool_())
        if t is not None:
            kind = _kind_of_type(t)
            arrays[stats_field(name, MIN)] = _exact_array([_comparable(v, kind) for v in mins], t, inexact)
            arrays[stats_field(name, MAX)] = _exact_array([_comparable(v, kind) for v in maxs], t, inexact)
        arrays[stats_field(name, NULL_COUNT)] = _count_array(nulls, inexact)
        arrays[stats_field(name, VALUE_COUNT)] = _count_array(counts, inexact)
    scalar_rows = {
        row: {
            name: ColumnStats(parts[0][row], parts[1][row], parts[2][row], parts[3][row])
            for name, parts in columns.items()
            if parts[4][row]
        }
        for row in sorted(inexact)
    }
    return StatsTable(pa.table(arrays), bound_types, scalar_rows)


def stats_table_of_columns(
    stats: StatsColumns, stat_entries: pa.Table, entries: pa.Table, schema: pa.Schema
) -> StatsTable | None:
    """:func:`build_stats_table` of statistics read column-wise (:mod:`metadata.stats_columns`):
    the same table, made without a Python object per record; None where that is not sure to be
    so (then build it from the records).

    ``stat_entries`` names each record's entry and ``entries`` each row's (the same columns,
    e.g. partition path and file name); entries must not repeat. A bound is kept as
    :func:`build_stats_table` keeps it (the column's kind only, NaN as null), and any value that
    one would send to :attr:`StatsTable.scalar_rows` (not held exactly) gives None, as does an
    entry with two records of one column.
    """
    n = entries.num_rows
    names = entries.column_names
    keyed = stat_entries.append_column("__stat", pa.array(np.arange(len(stats), dtype=np.int64)))
    numbered = entries.append_column("__row", pa.array(np.arange(n, dtype=np.int64)))
    joined = keyed.join(numbered, names, join_type="inner", use_threads=False)
    stat = joined.column("__stat").to_numpy()
    row = joined.column("__row").to_numpy()
    column = np.asarray(stats.column_name.take(pa.array(stat, pa.int64())).to_pylist(), dtype=object)
    has_stats = np.zeros(n, bool)
    has_stats[row] = True
    arrays: dict[str, pa.Array] = {HAS_STATS: pa.array(has_stats)}
    bound_types: dict[str, pa.DataType | None] = {}
    for name in sorted(set(column.tolist())):
        mine = column == name
        rows, records = row[mine], stat[mine]
        if len(np.unique(rows)) != len(rows):
            return None  # two records of one entry and column: the later wins, in record order
        index = schema.get_field_index(name)
        t = bound_type(schema.field(index).type) if index >= 0 else None
        bound_types[name] = t
        present = np.zeros(n, bool)
        present[rows] = True
        arrays[stats_field(name, PRESENT)] = pa.array(present)
        if t is not None:
            for part, values in ((MIN, stats.min), (MAX, stats.max)):
                bounds = _bounds(values.take(records), t)
                if bounds is None:
                    return None
                arrays[stats_field(name, part)] = _scatter(bounds, rows, n)
        at = pa.array(records, pa.int64())
        arrays[stats_field(name, NULL_COUNT)] = _scatter(stats.null_count.take(at), rows, n)
        arrays[stats_field(name, VALUE_COUNT)] = _scatter(stats.value_count.take(at), rows, n)
    return StatsTable(pa.table(arrays), bound_types, {})


def _scatter(values: pa.Array, rows: np.ndarray, n: int) -> pa.Array:
    """``values`` at ``rows`` of an array of ``n`` nulls."""
    source = np.full(n, -1, np.int64)
    source[rows] = np.arange(len(rows))
    return values.take(pa.array(source, mask=source < 0))


_KINDS_OF = {
    "bool": (StatKind.BOOL,),
    "str": (StatKind.STR,),
    "bytes": (StatKind.BYTES,),
    "date": (StatKind.DATE,),
    "datetime": (StatKind.DATETIME,),
    "datetime-tz": (StatKind.DATETIME_UTC,),
    "number": (StatKind.INT, StatKind.FLOAT, StatKind.DECIMAL),
}
_EXACT_IN_DOUBLE = 2**53


def _bounds(values: StatValues, t: pa.DataType) -> pa.Array | None:
    """Typed values as a bound column of type ``t``: values of the column's kind as ``_comparable``
    keeps them (NaN as null), the others null; None when one would not be held exactly."""
    kind = values.kind
    used = np.isin(kind, _KINDS_OF[_kind_of_type(t)])
    nan = (kind == StatKind.FLOAT) & np.isnan(values.floating)
    used &= ~nan
    integer = values.integer
    if pa.types.is_boolean(t):
        out = pa.array(integer.astype(bool))
    elif pa.types.is_string(t):
        # only the STR values are UTF-8 (BYTES ones share the column)
        out = pc.if_else(pa.array(used), values.binary, pa.nulls(len(kind), pa.binary())).cast(pa.string())
    elif pa.types.is_binary(t):
        out = values.binary
    elif pa.types.is_date32(t):
        out = pa.array(integer.astype(np.int32), pa.date32())
    elif pa.types.is_timestamp(t):
        out = pa.array(integer, t)
    elif pa.types.is_integer(t):
        if (used & (kind != StatKind.INT)).any():
            return None  # a float or decimal bound of an integer column
        info = np.iinfo(t.to_pandas_dtype())
        ints = integer[used]
        if ints.size and (ints.min() < info.min or (info.max < 2**63 and ints.max() > info.max)):
            return None
        if ints.size and info.min == 0 and ints.min() < 0:
            return None
        out = pa.array(np.where(used, integer, 0).astype(t.to_pandas_dtype()), t)
    elif pa.types.is_floating(t):
        if (used & (kind == StatKind.DECIMAL)).any():
            return None
        ints = used & (kind == StatKind.INT)
        # (no np.abs: it wraps -2**63 to itself)
        if ((integer[ints] < -_EXACT_IN_DOUBLE) | (integer[ints] > _EXACT_IN_DOUBLE)).any():
            return None  # beyond 2**53 an int is not a double exactly
        out = pa.array(np.where(ints, integer.astype(np.float64), values.floating), pa.float64())
    elif pa.types.is_decimal(t):
        if t.bit_width not in (128, 256) or (used & (kind != StatKind.DECIMAL)).any():
            return None  # (decimal32/64 columns: their words are not built here)
        unscaled = integer[used]
        if (values.scale[used] != t.scale).any():
            return None
        limit = 10**t.precision
        if t.precision < 19 and ((unscaled <= -limit) | (unscaled >= limit)).any():
            return None
        out = _decimal_array(np.where(used, integer, 0), t)
    else:
        return None
    return pc.if_else(pa.array(used), out, pa.nulls(len(kind), out.type))


def _decimal_array(unscaled: np.ndarray, t: pa.DataType) -> pa.Array:
    """Unscaled int64 values as a decimal array of ``t``: little-endian two's complement words."""
    words = 2 if t.bit_width == 128 else 4
    data = np.empty((len(unscaled), words), np.int64)
    data[:, 0] = unscaled
    data[:, 1:] = (unscaled >> 63)[:, None]
    return pa.Array.from_buffers(t, len(unscaled), [None, pa.py_buffer(data.tobytes())])


# --------------------------------------------------------------------------- evaluation


class _NotInArrow(Exception):
    """The filter cannot be stated exactly over the stats table: the scalar evaluator decides."""


def arrow_might_match(
    expr: Expression, schema: pa.Schema, stats: StatsTable, case_sensitive: bool = True
) -> pa.BooleanArray | None:
    """Per row of ``stats``, whether the entry may hold rows matching ``expr``: the answers of
    :func:`stats_evaluator` (``expr`` bound against ``schema``), or ``None`` when the filter cannot
    be stated exactly in Arrow (then ask the scalar evaluator)."""
    bound = bind(expr, schema, case_sensitive)
    try:
        arrow_expr = visit(bound, _StatsArrowVisitor(stats.bound_types))
    except _NotInArrow:
        return None
    projected = ds.dataset(stats.table).to_table(columns={"might": arrow_expr}, use_threads=False)
    might = projected.column("might").combine_chunks()
    if not stats.scalar_rows:
        return might
    answers = might.to_numpy(zero_copy_only=False).copy()
    might_match = stats_evaluator(expr, schema, case_sensitive)
    for row, entry in stats.scalar_rows.items():
        answers[row] = might_match(entry)
    return pa.array(answers, pa.bool_())


_TRUE = pc.scalar(True)
_FALSE = pc.scalar(False)


class _StatsArrowVisitor(BoundBooleanExpressionVisitor[pc.Expression]):
    """The Arrow twin of the scalar stats visitor: each method states its counterpart's answer
    as an expression that is never null (a null comparison is "not proven", as ``_holds``)."""

    def __init__(self, bound_types: Mapping[str, pa.DataType | None]) -> None:
        self._bound_types = bound_types

    def visit_true(self) -> pc.Expression:
        return _TRUE

    def visit_false(self) -> pc.Expression:
        return _FALSE

    def visit_not(self, child_result: pc.Expression) -> pc.Expression:
        raise AssertionError("bound expressions have no Not")

    def visit_and(self, left_result: pc.Expression, right_result: pc.Expression) -> pc.Expression:
        return left_result & right_result

    def visit_or(self, left_result: pc.Expression, right_result: pc.Expression) -> pc.Expression:
        return left_result | right_result

    @staticmethod
    def _field(ref: BoundReference, part: str) -> pc.Expression:
        return pc.field(stats_field(ref.name, part))

    def _only_nulls(self, ref: BoundReference) -> pc.Expression:
        nulls, count = self._field(ref, NULL_COUNT), self._field(ref, VALUE_COUNT)
        return pc.coalesce(nulls >= count, _FALSE)

    def _bound_type(self, ref: BoundReference) -> pa.DataType:
        t = self._bound_types.get(ref.name)
        if t is None or t != bound_type(ref.field.type):
            raise _NotInArrow
        return t

    def _holds(
        self, ref: BoundReference, left: pc.Expression, cmp: Callable[[Any, Any], Any], literal: Any
    ) -> pc.Expression:
        """``_holds(bound, cmp, literal)`` of the scalar evaluator, for every row."""
        if literal is None or value_kind(literal) is None or is_nan_value(literal):
            return _FALSE
        t = self._bound_type(ref)
        if value_kind(literal) != _kind_of_type(t):
            raise _NotInArrow
        scalar = _exact_scalar(literal, t)
        if scalar is None:
            raise _NotInArrow
        return pc.coalesce(cmp(left, pc.scalar(scalar)), _FALSE)

    def _bounds_check(self, ref: BoundReference, cannot: Callable[[], pc.Expression] | None) -> pc.Expression:
        """No stats -> might; only nulls -> cannot; else cannot when the bounds prove it."""
        if ref.name not in self._bound_types:
            return _TRUE
        present = self._field(ref, PRESENT)
        might = ~self._only_nulls(ref)
        if cannot is not None:
            might = might & ~cannot()
        return ~present | might

    def _lo(self, ref: BoundReference) -> pc.Expression:
        return self._field(ref, MIN)

    def _hi(self, ref: BoundReference) -> pc.Expression:
        return self._field(ref, MAX)

    @staticmethod
    def _nan_possible(ref: BoundReference) -> bool:
        return pa.types.is_floating(ref.field.type)

    def visit_is_null(self, ref: BoundReference) -> pc.Expression:
        if ref.name not in self._bound_types:
            return _TRUE
        no_nulls = pc.coalesce(self._field(ref, NULL_COUNT) == pc.scalar(0), _FALSE)
        return ~(self._field(ref, PRESENT) & no_nulls)

    def visit_not_null(self, ref: BoundReference) -> pc.Expression:
        if ref.name not in self._bound_types:
            return _TRUE
        return ~(self._field(ref, PRESENT) & self._only_nulls(ref))

    def visit_less_than(self, ref: BoundReference, value: Any) -> pc.Expression:
        return self._bounds_check(ref, lambda: self._holds(ref, self._lo(ref), operator.ge, value))

    def visit_less_than_or_equal(self, ref: BoundReference, value: Any) -> pc.Expression:
        return self._bounds_check(ref, lambda: self._holds(ref, self._lo(ref), operator.gt, value))

    def visit_greater_than(self, ref: BoundReference, value: Any) -> pc.Expression:
        if self._nan_possible(ref):
            return self._bounds_check(ref, None)
        return self._bounds_check(ref, lambda: self._holds(ref, self._hi(ref), operator.le, value))

    def visit_greater_than_or_equal(self, ref: BoundReference, value: Any) -> pc.Expression:
        if self._nan_possible(ref):
            return self._bounds_check(ref, None)
        return self._bounds_check(ref, lambda: self._holds(ref, self._hi(ref), operator.lt, value))

    def _outside(self, ref: BoundReference, value: Any) -> pc.Expression:
        return self._holds(ref, self._lo(ref), operator.gt, value) | self._holds(
            ref, self._hi(ref), operator.lt, value
        )

    def _all_equal(self, ref: BoundReference, value: Any) -> pc.Expression:
        return self._holds(ref, self._lo(ref), operator.eq, value) & self._holds(
            ref, self._hi(ref), operator.eq, value
        )

    def visit_equal(self, ref: BoundReference, value: Any) -> pc.Expression:
        return self._bounds_check(ref, lambda: self._outside(ref, value))

    def visit_not_equal(self, ref: BoundReference, value: Any) -> pc.Expression:
        if self._nan_possible(ref):
            return self._bounds_check(ref, None)
        return self._bounds_check(ref, lambda: self._all_equal(ref, value))

    def visit_in(self, ref: BoundReference, values: frozenset[Any]) -> pc.Expression:
        if len(values) > IN_PREDICATE_LIMIT:
            return self._bounds_check(ref, None)

        def cannot() -> pc.Expression:
            result = _TRUE
            for v in values:
                result = result & self._outside(ref, v)
            return result

        return self._bounds_check(ref, cannot)

    def visit_not_in(self, ref: BoundReference, values: frozenset[Any]) -> pc.Expression:
        if self._nan_possible(ref):
            return self._bounds_check(ref, None)

        def cannot() -> pc.Expression:
            self._bound_type(ref)
            single = pc.coalesce(self._lo(ref) == self._hi(ref), _FALSE)
            equal_any = _FALSE
            for v in values:
                equal_any = equal_any | self._holds(ref, self._lo(ref), operator.eq, v)
            return single & equal_any

        return self._bounds_check(ref, cannot)

    def _head(self, ref: BoundReference, bound: pc.Expression, n: int) -> pc.Expression:
        t = self._bound_type(ref)
        if pa.types.is_string(t):
            return pc.utf8_slice_codeunits(bound, start=0, stop=n)  # code points, as str[:n]
        if pa.types.is_binary(t):
            return pc.binary_slice(bound, start=0, stop=n)
        raise _NotInArrow  # _head is None for other kinds: never proven, but say so in one place

    def visit_starts_with(self, ref: BoundReference, prefix: Any) -> pc.Expression:
        n = len(prefix)
        return self._bounds_check(
            ref,
            lambda: (
                self._holds(ref, self._head(ref, self._lo(ref), n), operator.gt, prefix)
                | self._holds(ref, self._head(ref, self._hi(ref), n), operator.lt, prefix)
            ),
        )

    def visit_not_starts_with(self, ref: BoundReference, prefix: Any) -> pc.Expression:
        n = len(prefix)
        return self._bounds_check(
            ref,
            lambda: (
                self._holds(ref, self._head(ref, self._lo(ref), n), operator.eq, prefix)
                & self._holds(ref, self._head(ref, self._hi(ref), n), operator.eq, prefix)
            ),
        )


def rows_to_keep(might: pa.BooleanArray, stats: StatsTable) -> np.ndarray:
    """Rows to keep: those without any statistics (unknown), and those that might match."""
    keep = pc.or_(pc.invert(stats.table.column(HAS_STATS).combine_chunks()), might)
    return pc.indices_nonzero(keep).to_numpy()


def entry_rows(keys: Sequence[Hashable]) -> dict[Hashable, int] | None:
    """Each entry's row, or None when an entry repeats (then rows do not name entries)."""
    rows = {k: i for i, k in enumerate(keys)}
    return rows if len(rows) == len(keys) else None


# Stats tables built from one MDT reader's statistics. A reader belongs to one state, a snapshot,
# so a plan repeated on it (the planner keeps states) reuses them, as the reader reuses its records;
# they go with the reader.
_TABLES: weakref.WeakKeyDictionary[Any, SnapshotCache] = weakref.WeakKeyDictionary()
_TABLES_LOCK = threading.Lock()


def cached_stats_table(
    owner: Any, key: Hashable, build: Callable[[], StatsTable | None]
) -> StatsTable | None:
    """The stats table ``build`` makes, kept for as long as ``owner`` (the MDT reader) lives."""
    with _TABLES_LOCK:
        cache = _TABLES.get(owner)
        if cache is None:
            cache = _TABLES[owner] = SnapshotCache(size=8)
    known = cache.get(key)
    if known is None:
        known = build()
        if known is not None:
            cache.put(key, known)
    return known
