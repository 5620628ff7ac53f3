"""Evaluators: rows (via Arrow), partition values, and per-file column statistics.

Callers get factories that bind once and return plain callables; the visitor
classes stay private.  All evaluators work on bound expressions in negation normal
form, where a leaf only needs to answer "is it true?": unknown (null) and false
lead to the same decision once no ``Not`` sits above the leaf.

The pruning evaluators (:func:`partition_evaluator`, :func:`stats_evaluator`) are
*inclusive*: they answer ``False`` only when no row can satisfy the filter, and
``True`` whenever they cannot tell (missing values or statistics, predicates on
other columns, values of types that do not compare).  Pruning on a ``False`` is
therefore always safe.
"""

from __future__ import annotations

import datetime
import math
import numbers
import operator
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol, TypeAlias, runtime_checkable

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from hudi_md.planning.binding import bind
from hudi_md.planning.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    BoundReference,
    Expression,
    Predicate,
    and_,
    or_,
)
from hudi_md.planning.visitors import (
    BooleanExpressionVisitor,
    BoundBooleanExpressionVisitor,
    referenced_columns,
    rewrite_not,
    visit,
)

__all__ = [
    "IN_PREDICATE_LIMIT",
    "ROWS_CANNOT_MATCH",
    "ROWS_MIGHT_MATCH",
    "ColumnStats",
    "ColumnStatsLike",
    "FileColumnStats",
    "fully_answered_by_partitions",
    "inclusive_projection",
    "is_nan_value",
    "partition_evaluator",
    "row_evaluator",
    "stats_evaluator",
    "to_arrow_expression",
    "value_kind",
]

ROWS_MIGHT_MATCH = True
ROWS_CANNOT_MATCH = False

# Above this many values, checking each against a file's bounds costs more than reading it might.
IN_PREDICATE_LIMIT = 200


# --------------------------------------------------------------------------- Arrow


def to_arrow_expression(expr: Expression) -> pc.Expression:
    """An Arrow expression selecting exactly the rows ``expr`` selects (SQL null semantics).

    ``expr`` must be bound (see :func:`hudi_md.planning.bind`).  Use the result with
    ``table.filter(...)`` or as a ``pyarrow.dataset`` scan filter.  Where the Arrow
    result is null rather than false, Arrow's filters drop the row, as SQL does.
    """
    return visit(rewrite_not(expr), _ArrowVisitor())


def row_evaluator(
    expr: Expression, schema: pa.Schema, case_sensitive: bool = True
) -> Callable[[pa.Table], pa.ChunkedArray]:
    """Bind ``expr`` once; the callable returns a non-null boolean mask over a table's rows."""
    arrow_expr = to_arrow_expression(bind(expr, schema, case_sensitive))

    def evaluate(table: pa.Table) -> pa.ChunkedArray:
        # Arrow has no public "evaluate this expression" call; a single-threaded
        # dataset projection does it and keeps row order.
        projected = ds.dataset(table).to_table(columns={"mask": arrow_expr}, use_threads=False)
        return pc.fill_null(projected.column("mask"), False)

    return evaluate


class _ArrowVisitor(BoundBooleanExpressionVisitor[pc.Expression]):
    def visit_true(self) -> pc.Expression:
        return pc.scalar(True)

    def visit_false(self) -> pc.Expression:
        return pc.scalar(False)

    def visit_not(self, child_result: pc.Expression) -> pc.Expression:
        raise AssertionError("to_arrow_expression runs on rewrite_not output, which has no Not")

    def visit_and(self, left_result: pc.Expression, right_result: pc.Expression) -> pc.Expression:
        return left_result & right_result  # Kleene and

    def visit_or(self, left_result: pc.Expression, right_result: pc.Expression) -> pc.Expression:
        return left_result | right_result  # Kleene or

    @staticmethod
    def _field(ref: BoundReference) -> pc.Expression:
        field = pc.field(ref.name)
        arrow_type = ref.field.type
        if pa.types.is_dictionary(arrow_type):
            return field.cast(arrow_type.value_type)
        return field

    @staticmethod
    def _literal_type(ref: BoundReference) -> pa.DataType:
        arrow_type = ref.field.type
        if pa.types.is_dictionary(arrow_type):
            arrow_type = arrow_type.value_type
        # Literals stay float64 so a float32 column is compared exactly, not with a rounded literal.
        return pa.float64() if pa.types.is_floating(arrow_type) else arrow_type

    def _scalar(self, ref: BoundReference, value: Any) -> pc.Expression:
        return pc.scalar(pa.scalar(value, type=self._literal_type(ref)))

    def visit_is_null(self, ref: BoundReference) -> pc.Expression:
        return self._field(ref).is_null()

    def visit_not_null(self, ref: BoundReference) -> pc.Expression:
        return self._field(ref).is_valid()

    def visit_equal(self, ref: BoundReference, value: Any) -> pc.Expression:
        return self._field(ref) == self._scalar(ref, value)

    def visit_not_equal(self, ref: BoundReference, value: Any) -> pc.Expression:
        return self._field(ref) != self._scalar(ref, value)

    def visit_less_than(self, ref: BoundReference, value: Any) -> pc.Expression:
        return self._field(ref) < self._scalar(ref, value)

    def visit_less_than_or_equal(self, ref: BoundReference, value: Any) -> pc.Expression:
        return self._field(ref) <= self._scalar(ref, value)

    def visit_greater_than(self, ref: BoundReference, value: Any) -> pc.Expression:
        return self._field(ref) > self._scalar(ref, value)

    def visit_greater_than_or_equal(self, ref: BoundReference, value: Any) -> pc.Expression:
        return self._field(ref) >= self._scalar(ref, value)

    def _starts_with(self, ref: BoundReference, prefix: Any) -> pc.Expression:
        field = self._field(ref)
        if pa.types.is_fixed_size_binary(self._literal_type(ref)):
            field = field.cast(pa.binary())  # starts_with has no fixed-size kernel
        return pc.starts_with(field, pattern=prefix)

    def visit_starts_with(self, ref: BoundReference, prefix: Any) -> pc.Expression:
        return self._starts_with(ref, prefix)

    def visit_not_starts_with(self, ref: BoundReference, prefix: Any) -> pc.Expression:
        return ~self._starts_with(ref, prefix)  # null stays null

    def _isin(self, ref: BoundReference, values: frozenset[Any]) -> pc.Expression:
        return self._field(ref).isin(pa.array(list(values), type=self._literal_type(ref)))

    def visit_in(self, ref: BoundReference, values: frozenset[Any]) -> pc.Expression:
        return self._isin(ref, values)

    def visit_not_in(self, ref: BoundReference, values: frozenset[Any]) -> pc.Expression:
        # is_in gives false (not null) for a null input, so its inverse would select nulls.
        return ~self._isin(ref, values) & self._field(ref).is_valid()


# --------------------------------------------------------------------------- comparisons


def value_kind(value: Any) -> str | None:
    """Values of the same kind compare meaningfully; ``None`` means "do not compare"."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (numbers.Real, Decimal)):
        return "number"
    if isinstance(value, str):
        return "str"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "bytes"
    # datetime is a date subclass, and naive and aware datetimes do not compare.
    if isinstance(value, datetime.datetime):
        return "datetime" if value.tzinfo is None else "datetime-tz"
    if isinstance(value, datetime.date):
        return "date"
    return None


def is_nan_value(value: Any) -> bool:
    try:
        return isinstance(value, (float, Decimal)) and math.isnan(value)
    except (TypeError, ValueError):
        return True


def _holds(left: Any, cmp: Callable[[Any, Any], bool], right: Any) -> bool:
    """``cmp(left, right)``, or False when the operands do not compare meaningfully.

    Every caller derives "cannot match" from a True here, so False is the safe answer:
    Python's ``==`` across kinds (date vs str) is silently False and ordering raises.
    """
    if left is None or right is None:
        return False
    kind = value_kind(left)
    if kind is None or kind != value_kind(right) or is_nan_value(left) or is_nan_value(right):
        return False
    try:
        return bool(cmp(left, right))
    except (TypeError, ArithmeticError):
        return False


# --------------------------------------------------------------------------- projection


class _ProjectVisitor(BooleanExpressionVisitor[Expression]):
    def __init__(self, keep: Callable[[str], bool]) -> None:
        self._keep = keep

    def visit_true(self) -> Expression:
        return AlwaysTrue()

    def visit_false(self) -> Expression:
        return AlwaysFalse()

    def visit_not(self, child_result: Expression) -> Expression:
        raise AssertionError("projection runs on rewrite_not output, which has no Not")

    def visit_and(self, left_result: Expression, right_result: Expression) -> Expression:
        return and_(left_result, right_result)

    def visit_or(self, left_result: Expression, right_result: Expression) -> Expression:
        return or_(left_result, right_result)

    def visit_predicate(self, predicate: Predicate) -> Expression:
        return predicate if self._keep(predicate.column) else AlwaysTrue()


def _name_matcher(columns: Collection[str], case_sensitive: bool) -> Callable[[str], bool]:
    if case_sensitive:
        names = frozenset(columns)
        return names.__contains__
    folded = frozenset(c.casefold() for c in columns)
    return lambda name: name.casefold() in folded


def inclusive_projection(
    expr: Expression, columns: Collection[str], case_sensitive: bool = True
) -> Expression:
    """A filter on ``columns`` only, true for every row where ``expr`` is true.

    Predicates on other columns become ``AlwaysTrue``.  NOT is pushed down first,
    because replacing a predicate under a NOT by true would negate into false.
    """
    return visit(rewrite_not(expr), _ProjectVisitor(_name_matcher(columns, case_sensitive)))


def fully_answered_by_partitions(
    expr: Expression, partition_columns: Collection[str], case_sensitive: bool = True
) -> bool:
    """Whether ``expr`` tests partition columns only.

    With identity partitioning, partition pruning then selects exactly the rows the
    filter selects, so the engine need not re-apply it to the rows read.
    """
    matches = _name_matcher(partition_columns, case_sensitive)
    return all(matches(name) for name in referenced_columns(expr))


# --------------------------------------------------------------------------- partitions

_UNKNOWN = object()


def partition_evaluator(
    expr: Expression, partition_schema: pa.Schema, case_sensitive: bool = True
) -> Callable[[Mapping[str, Any]], bool]:
    """Bind once; the callable says whether a partition may hold rows matching ``expr``.

    It takes one partition's typed values keyed by partition field name; ``None`` is
    a null value (Hudi's default partition).  A missing key or a value of the wrong
    Python type is unknown, so the partition is kept.
    """
    projected = inclusive_projection(expr, partition_schema.names, case_sensitive)
    bound = bind(projected, partition_schema, case_sensitive)

    def evaluate(values: Mapping[str, Any]) -> bool:
        return visit(bound, _PartitionVisitor(values))

    return evaluate


class _PartitionVisitor(BoundBooleanExpressionVisitor[bool]):
    """Identity partitions: every row of the partition has the partition's value."""

    def __init__(self, values: Mapping[str, Any]) -> None:
        self._values = values

    def visit_true(self) -> bool:
        return True

    def visit_false(self) -> bool:
        return False

    def visit_not(self, child_result: bool) -> bool:
        raise AssertionError("bound expressions have no Not")

    def visit_and(self, left_result: bool, right_result: bool) -> bool:
        return left_result and right_result

    def visit_or(self, left_result: bool, right_result: bool) -> bool:
        return left_result or right_result

    def _test(self, ref: BoundReference, test: Callable[[Any], bool]) -> bool:
        value = self._values.get(ref.name, _UNKNOWN)
        if value is _UNKNOWN:
            return ROWS_MIGHT_MATCH
        if value is None:
            return False  # comparisons with null are unknown, never true
        if value_kind(value) is None or is_nan_value(value):
            return ROWS_MIGHT_MATCH
        return test(value)

    def _compare(self, ref: BoundReference, cmp: Callable[[Any, Any], bool], literal: Any) -> bool:
        def test(value: Any) -> bool:
            if value_kind(value) != value_kind(literal) or is_nan_value(literal):
                return ROWS_MIGHT_MATCH
            try:
                return bool(cmp(value, literal))
            except (TypeError, ArithmeticError):
                return ROWS_MIGHT_MATCH

        return self._test(ref, test)

    def visit_is_null(self, ref: BoundReference) -> bool:
        value = self._values.get(ref.name, _UNKNOWN)
        return value is _UNKNOWN or value is None

    def visit_not_null(self, ref: BoundReference) -> bool:
        value = self._values.get(ref.name, _UNKNOWN)
        return value is not None

    def visit_equal(self, ref: BoundReference, value: Any) -> bool:
        return self._compare(ref, operator.eq, value)

    def visit_not_equal(self, ref: BoundReference, value: Any) -> bool:
        return self._compare(ref, operator.ne, value)

    def visit_less_than(self, ref: BoundReference, value: Any) -> bool:
        return self._compare(ref, operator.lt, value)

    def visit_less_than_or_equal(self, ref: BoundReference, value: Any) -> bool:
        return self._compare(ref, operator.le, value)

    def visit_greater_than(self, ref: BoundReference, value: Any) -> bool:
        return self._compare(ref, operator.gt, value)

    def visit_greater_than_or_equal(self, ref: BoundReference, value: Any) -> bool:
        return self._compare(ref, operator.ge, value)

    def _prefix(self, ref: BoundReference, prefix: Any, expected: bool) -> bool:
        def test(value: Any) -> bool:
            if value_kind(value) != value_kind(prefix):
                return ROWS_MIGHT_MATCH
            return (_head(value, len(prefix)) == prefix) is expected

        return self._test(ref, test)

    def visit_starts_with(self, ref: BoundReference, prefix: Any) -> bool:
        return self._prefix(ref, prefix, True)

    def visit_not_starts_with(self, ref: BoundReference, prefix: Any) -> bool:
        return self._prefix(ref, prefix, False)

    def _membership(self, ref: BoundReference, values: frozenset[Any], expected: bool) -> bool:
        def test(v: Any) -> bool:
            kind = value_kind(v)
            if any(value_kind(x) != kind for x in values):
                return ROWS_MIGHT_MATCH
            return (v in values) is expected

        return self._test(ref, test)

    def visit_in(self, ref: BoundReference, values: frozenset[Any]) -> bool:
        return self._membership(ref, values, True)

    def visit_not_in(self, ref: BoundReference, values: frozenset[Any]) -> bool:
        return self._membership(ref, values, False)


# --------------------------------------------------------------------------- column statistics


@runtime_checkable
class ColumnStatsLike(Protocol):
    """What the stats evaluator reads about one column of one file; ``None`` is unknown.

    ``min_value``/``max_value`` bound the non-null values (as Python values of the
    column's type: ``date`` for dates, ``Decimal`` for decimals, ...); ``value_count``
    counts rows including nulls; ``null_count`` counts nulls.
    """

    @property
    def min_value(self) -> Any: ...

    @property
    def max_value(self) -> Any: ...

    @property
    def null_count(self) -> int | None: ...

    @property
    def value_count(self) -> int | None: ...


@dataclass(frozen=True, slots=True)
class ColumnStats:
    """Plain :class:`ColumnStatsLike`, e.g. decoded from a ``column_stats`` index record."""

    min_value: Any = None
    max_value: Any = None
    null_count: int | None = None
    value_count: int | None = None


# One file's statistics by column name (the bound schema's spelling); absent = unknown.
FileColumnStats: TypeAlias = Mapping[str, ColumnStatsLike]


def stats_evaluator(
    expr: Expression, schema: pa.Schema, case_sensitive: bool = True
) -> Callable[[FileColumnStats], bool]:
    """Bind once; the callable says whether a file with these statistics may hold matching rows.

    Returns :data:`ROWS_CANNOT_MATCH` (False) only when the statistics prove no row
    matches.  The callable keeps no state between calls, so it is safe to share
    across threads.  Assumes min/max are exact, not truncated.  Hudi records no NaN
    count and Spark orders NaN above every number, so on floating-point columns
    ``>``, ``>=``, ``!=`` and ``not in`` never prune (a NaN might satisfy them).
    """
    bound = bind(expr, schema, case_sensitive)

    def evaluate(stats: FileColumnStats) -> bool:
        return visit(bound, _StatsVisitor(stats))

    return evaluate


class _StatsVisitor(BoundBooleanExpressionVisitor[bool]):
    def __init__(self, stats: FileColumnStats) -> None:
        self._stats = stats

    def visit_true(self) -> bool:
        return ROWS_MIGHT_MATCH

    def visit_false(self) -> bool:
        return ROWS_CANNOT_MATCH

    def visit_not(self, child_result: bool) -> bool:
        raise AssertionError("bound expressions have no Not")

    def visit_and(self, left_result: bool, right_result: bool) -> bool:
        return left_result and right_result

    def visit_or(self, left_result: bool, right_result: bool) -> bool:
        return left_result or right_result

    def _get(self, ref: BoundReference) -> ColumnStatsLike | None:
        return self._stats.get(ref.name)

    @staticmethod
    def _only_nulls(stats: ColumnStatsLike) -> bool:
        # Also true for a file with no rows, where nothing can match either.
        return (
            stats.null_count is not None
            and stats.value_count is not None
            and (stats.null_count >= stats.value_count)
        )

    def _bounds_check(self, ref: BoundReference, cannot: Callable[[Any, Any], bool]) -> bool:
        """Shared shape for comparisons: no stats -> might; only nulls -> cannot; else ask bounds."""
        stats = self._get(ref)
        if stats is None:
            return ROWS_MIGHT_MATCH
        if self._only_nulls(stats):
            return ROWS_CANNOT_MATCH
        return ROWS_CANNOT_MATCH if cannot(stats.min_value, stats.max_value) else ROWS_MIGHT_MATCH

    @staticmethod
    def _nan_possible(ref: BoundReference) -> bool:
        return pa.types.is_floating(ref.field.type)

    def visit_is_null(self, ref: BoundReference) -> bool:
        stats = self._get(ref)
        if stats is not None and stats.null_count == 0:
            return ROWS_CANNOT_MATCH
        return ROWS_MIGHT_MATCH

    def visit_not_null(self, ref: BoundReference) -> bool:
        stats = self._get(ref)
        if stats is not None and self._only_nulls(stats):
            return ROWS_CANNOT_MATCH
        return ROWS_MIGHT_MATCH

    def visit_less_than(self, ref: BoundReference, value: Any) -> bool:
        return self._bounds_check(ref, lambda lo, hi: _holds(lo, operator.ge, value))

    def visit_less_than_or_equal(self, ref: BoundReference, value: Any) -> bool:
        return self._bounds_check(ref, lambda lo, hi: _holds(lo, operator.gt, value))

    def visit_greater_than(self, ref: BoundReference, value: Any) -> bool:
        if self._nan_possible(ref):
            return self._bounds_check(ref, lambda lo, hi: False)
        return self._bounds_check(ref, lambda lo, hi: _holds(hi, operator.le, value))

    def visit_greater_than_or_equal(self, ref: BoundReference, value: Any) -> bool:
        if self._nan_possible(ref):
            return self._bounds_check(ref, lambda lo, hi: False)
        return self._bounds_check(ref, lambda lo, hi: _holds(hi, operator.lt, value))

    def visit_equal(self, ref: BoundReference, value: Any) -> bool:
        return self._bounds_check(
            ref, lambda lo, hi: _holds(lo, operator.gt, value) or _holds(hi, operator.lt, value)
        )

    def visit_not_equal(self, ref: BoundReference, value: Any) -> bool:
        # Only a file whose every non-null value equals the literal is excluded
        # (nulls never satisfy !=).
        if self._nan_possible(ref):
            return self._bounds_check(ref, lambda lo, hi: False)
        return self._bounds_check(
            ref, lambda lo, hi: _holds(lo, operator.eq, value) and _holds(hi, operator.eq, value)
        )

    def visit_in(self, ref: BoundReference, values: frozenset[Any]) -> bool:
        if len(values) > IN_PREDICATE_LIMIT:
            return self._bounds_check(ref, lambda lo, hi: False)

        def cannot(lo: Any, hi: Any) -> bool:
            return all(_holds(lo, operator.gt, v) or _holds(hi, operator.lt, v) for v in values)

        return self._bounds_check(ref, cannot)

    def visit_not_in(self, ref: BoundReference, values: frozenset[Any]) -> bool:
        if self._nan_possible(ref):
            return self._bounds_check(ref, lambda lo, hi: False)

        def cannot(lo: Any, hi: Any) -> bool:
            return _holds(lo, operator.eq, hi) and any(_holds(lo, operator.eq, v) for v in values)

        return self._bounds_check(ref, cannot)

    def visit_starts_with(self, ref: BoundReference, prefix: Any) -> bool:
        # A value starting with p has p as its first len(p) characters, and truncating
        # preserves order, so lo[:n] <= p <= hi[:n] for every such value in [lo, hi].
        n = len(prefix)
        return self._bounds_check(
            ref,
            lambda lo, hi: (
                _holds(_head(lo, n), operator.gt, prefix) or _holds(_head(hi, n), operator.lt, prefix)
            ),
        )

    def visit_not_starts_with(self, ref: BoundReference, prefix: Any) -> bool:
        # Every value between two values sharing a prefix shares it too.
        n = len(prefix)
        return self._bounds_check(
            ref,
            lambda lo, hi: (
                _holds(_head(lo, n), operator.eq, prefix) and _holds(_head(hi, n), operator.eq, prefix)
            ),
        )


def _head(value: Any, n: int) -> Any:
    if isinstance(value, (str, bytes)):
        return value[:n]
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)[:n]
    return None
