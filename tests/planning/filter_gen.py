"""Random tables and filters for the planning property tests, plus a pure-Python reference.

The reference evaluates *unbound* expressions row by row with SQL three-valued logic,
converting literals the simple way a person would (str(5) for a string column,
date.fromisoformat for a date column, comparing a date as midnight against a
datetime).  Checking evaluators against it therefore also checks ``bind``'s
coercion, rounding and folding.
"""

from __future__ import annotations

import datetime
import random
from decimal import Decimal
from typing import Any

import pyarrow as pa

from hudi_md.planning import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    Expression,
    LiteralPredicate,
    Not,
    Op,
    Or,
    SetPredicate,
    UnaryPredicate,
    and_,
    equal_to,
    greater_than,
    greater_than_or_equal,
    is_in,
    is_null,
    less_than,
    less_than_or_equal,
    not_,
    not_equal_to,
    not_in,
    not_null,
    not_starts_with,
    or_,
    starts_with,
)

SCHEMA = pa.schema(
    [
        pa.field("i", pa.int64()),
        pa.field("b", pa.int8()),  # small range, so literals fall outside it
        pa.field("s", pa.string()),
        pa.field("d", pa.date32()),
        pa.field("n", pa.int32(), nullable=False),
    ]
)

_BASE_DATE = datetime.date(2024, 1, 1)
_STRINGS = ["", "a", "ab", "abc", "b", "ba", "B", "5", "10"]
_TINY = [-128, -1, 0, 1, 7, 127]


def random_value(rng: random.Random, column: str) -> Any:
    if column == "i":
        return rng.randint(-4, 4)
    if column == "b":
        return rng.choice(_TINY)
    if column == "s":
        return rng.choice(_STRINGS)
    if column == "d":
        return _BASE_DATE + datetime.timedelta(days=rng.randint(-3, 3))
    if column == "n":
        return rng.randint(0, 3)
    raise AssertionError(column)


def random_table(rng: random.Random, rows: int, null_rate: float = 0.2) -> pa.Table:
    data: dict[str, list[Any]] = {}
    for field in SCHEMA:
        values = []
        for _ in range(rows):
            if field.nullable and rng.random() < null_rate:
                values.append(None)
            else:
                values.append(random_value(rng, field.name))
        data[field.name] = values
    return pa.table(data, schema=SCHEMA)


def random_literal(rng: random.Random, column: str, kind: str | None = None) -> Any:
    """A literal for ``column``, sometimes of another type that binding must coerce."""
    kind = kind or literal_kind(rng, column)
    base = random_value(rng, column)
    if kind == "native":
        return base
    if kind == "float":  # integer columns: fractional and integral floats
        return base + rng.choice([-0.5, 0.0, 0.5])
    if kind == "decimal":
        return Decimal(base) + rng.choice([Decimal("-0.25"), Decimal(0), Decimal("0.75")])
    if kind == "huge":  # outside the column type's range
        return rng.choice([200, -300, 2**70, -(2**70)])
    if kind == "int":  # string column compared with an int
        return rng.choice([5, 10, 7])
    if kind == "iso":  # date column compared with an ISO string
        return base.isoformat()
    if kind == "datetime":  # date column compared with a timestamp
        return datetime.datetime.combine(base, datetime.time(rng.choice([0, 0, 12])))
    raise AssertionError(kind)


def literal_kind(rng: random.Random, column: str) -> str:
    choices = {
        "i": ["native", "native", "float", "decimal"],
        "b": ["native", "native", "huge", "float"],
        "s": ["native", "native", "native", "int"],
        "d": ["native", "native", "iso", "datetime"],
        "n": ["native", "native", "float"],
    }[column]
    return rng.choice(choices)


_COMPARISONS = [equal_to, not_equal_to, less_than, less_than_or_equal, greater_than, greater_than_or_equal]


def random_predicate(rng: random.Random) -> Expression:
    column = rng.choice(SCHEMA.names)
    roll = rng.random()
    if roll < 0.1:
        return rng.choice([is_null, not_null])(column)
    if roll < 0.25 and column == "s":
        return rng.choice([starts_with, not_starts_with])(column, rng.choice(["", "a", "ab", "b", "1"]))
    if roll < 0.45:
        kind = literal_kind(rng, column)  # one kind per set keeps it JSON-serialisable
        values = [random_literal(rng, column, kind) for _ in range(rng.randint(0, 4))]
        return rng.choice([is_in, not_in])(column, values)
    return rng.choice(_COMPARISONS)(column, random_literal(rng, column))


def random_expression(rng: random.Random, depth: int = 3, raw_not: bool = True) -> Expression:
    """A random filter; with ``raw_not`` it also contains unfolded ``Not`` nodes (Not(Not(x)))."""
    roll = rng.random()
    if depth == 0 or roll < 0.35:
        return random_predicate(rng)
    if roll < 0.38:
        return rng.choice([AlwaysTrue(), AlwaysFalse()])
    if roll < 0.55:
        child = random_expression(rng, depth - 1, raw_not)
        # Raw Not nodes as well as folded negations: both must evaluate the same.
        return Not(child) if raw_not and rng.random() < 0.5 else not_(child)
    left, right = random_expression(rng, depth - 1, raw_not), random_expression(rng, depth - 1, raw_not)
    return and_(left, right) if roll < 0.8 else or_(left, right)


# --------------------------------------------------------------------------- reference evaluation


def _ref_literal(column: str, literal: Any) -> Any:
    if column == "s" and not isinstance(literal, str):
        return str(literal)
    if column == "d" and isinstance(literal, str):
        return datetime.date.fromisoformat(literal)
    return literal


def _ref_compare(op: Op, value: Any, literal: Any) -> bool:
    if isinstance(literal, datetime.datetime) and not isinstance(value, datetime.datetime):
        value = datetime.datetime.combine(value, datetime.time())
    if op is Op.EQ:
        return value == literal
    if op is Op.NE:
        return value != literal
    if op is Op.LT:
        return value < literal
    if op is Op.LE:
        return value <= literal
    if op is Op.GT:
        return value > literal
    if op is Op.GE:
        return value >= literal
    if op is Op.STARTS_WITH:
        return value.startswith(literal)
    if op is Op.NOT_STARTS_WITH:
        return not value.startswith(literal)
    raise AssertionError(op)


def reference(expr: Expression, row: dict[str, Any]) -> bool | None:
    """SQL three-valued result of ``expr`` on ``row``: True, False or None (unknown)."""
    if isinstance(expr, AlwaysTrue):
        return True
    if isinstance(expr, AlwaysFalse):
        return False
    if isinstance(expr, Not):
        child = reference(expr.child, row)
        return None if child is None else not child
    if isinstance(expr, And):
        left, right = reference(expr.left, row), reference(expr.right, row)
        if left is False or right is False:
            return False
        return None if left is None or right is None else True
    if isinstance(expr, Or):
        left, right = reference(expr.left, row), reference(expr.right, row)
        if left is True or right is True:
            return True
        return None if left is None or right is None else False
    value = row[expr.column]
    if isinstance(expr, UnaryPredicate):
        return (value is None) == (expr.op is Op.IS_NULL)
    if isinstance(expr, SetPredicate) and not expr.values:
        return expr.op is Op.NOT_IN  # Spark 3.5: x IN () is false, even for a null x
    if value is None:
        return None
    if isinstance(expr, LiteralPredicate):
        return _ref_compare(expr.op, value, _ref_literal(expr.column, expr.value))
    if isinstance(expr, SetPredicate):
        hit = any(_ref_compare(Op.EQ, value, _ref_literal(expr.column, v)) for v in expr.values)
        return hit if expr.op is Op.IN else not hit
    raise AssertionError(expr)


def matches(expr: Expression, row: dict[str, Any]) -> bool:
    return reference(expr, row) is True
