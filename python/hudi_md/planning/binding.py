"""Binding: resolve column names against a schema and coerce literals to the column types.

Binding happens once per plan (against the table schema, and separately against the
partition schema), so evaluators never look names up or convert values again.

The bound expression is in negation normal form (``rewrite_not`` runs first).  That
is what lets binding fold literals that no value of the column can equal, exactly:
in a NOT-free tree, a leaf that is *unknown* for a null row may be replaced by one
that is *false* for it without changing which rows are selected.  So, for an
``int8`` column ``a``:

* ``a < 1000`` becomes ``not_null(a)``, ``a > 1000`` and ``a = 1000`` become ``AlwaysFalse``;
* ``a < 5.5`` becomes ``a <= 5``, ``a >= 5.5`` becomes ``a >= 6``, ``a = 5.5`` is ``AlwaysFalse``,
  ``a != 5.5`` is ``not_null(a)``;
* ``a in (5.5, 7)`` becomes ``a = 7``.

The same rounding applies to decimals (to the column's scale), dates compared with
timestamps, and timestamps compared with finer-grained timestamps.

Coercions accepted, by column type (anything else raises ``InvalidOptionError``):

* integers: int, integral or fractional float/Decimal, numeric strings (not bool);
* floating point: int, float, Decimal, numeric strings -- compared as float64;
* decimal: int, float (by its shortest repr), Decimal, numeric strings;
* string: str, and also bool (``"true"``/``"false"``), int, float, Decimal, date,
  datetime (``isoformat()``) and UTF-8 bytes, as Hive-style partition paths spell them;
* binary: bytes, str (UTF-8);
* bool: bool, 0/1, ``"true"``/``"false"`` (any case);
* date: date, ISO date string, naive datetime or ISO datetime string;
* timestamp: datetime, date (midnight), ISO strings.  With a column timezone, naive
  literals are read as UTC; without one, aware literals are converted to UTC and made
  naive (hudi-md reads timezone-less timestamps as UTC wall time).
"""

from __future__ import annotations

import datetime
import decimal
import math
from decimal import Decimal
from typing import Any, NamedTuple

import pyarrow as pa

from hudi_md.errors import InvalidOptionError
from hudi_md.planning.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    BoundReference,
    Expression,
    LiteralPredicate,
    Op,
    Predicate,
    SetPredicate,
    UnaryPredicate,
    and_,
    or_,
)
from hudi_md.planning.visitors import BooleanExpressionVisitor, rewrite_not, visit

__all__ = ["Rounded", "bind", "coerce_literal", "resolve_column"]


def bind(expr: Expression, schema: pa.Schema, case_sensitive: bool = True) -> Expression:
    """Resolve ``expr``'s columns in ``schema`` and coerce its literals; result has no ``Not``.

    Raises:
        InvalidOptionError: a column is unknown or ambiguous, or a literal cannot be
            converted to its column's type; the message names the column.
    """
    return visit(rewrite_not(expr), _BindVisitor(schema, case_sensitive))


def resolve_column(schema: pa.Schema, name: str, case_sensitive: bool = True) -> BoundReference:
    """The top-level field of ``schema`` called ``name``.

    Raises:
        InvalidOptionError: no such field, or more than one match.
    """
    if case_sensitive:
        matches = [i for i, f in enumerate(schema) if f.name == name]
    else:
        folded = name.casefold()
        matches = [i for i, f in enumerate(schema) if f.name.casefold() == folded]
    if not matches:
        raise InvalidOptionError(f"unknown column {name!r} in filter; available columns: {schema.names}")
    if len(matches) > 1:
        raise InvalidOptionError(
            f"column {name!r} in filter is ambiguous: {[schema[i].name for i in matches]}"
        )
    return BoundReference(schema.field(matches[0]), matches[0])


class _BindVisitor(BooleanExpressionVisitor[Expression]):
    def __init__(self, schema: pa.Schema, case_sensitive: bool) -> None:
        self._schema = schema
        self._case_sensitive = case_sensitive

    def visit_true(self) -> Expression:
        return AlwaysTrue()

    def visit_false(self) -> Expression:
        return AlwaysFalse()

    def visit_not(self, child_result: Expression) -> Expression:
        raise AssertionError("bind runs on rewrite_not output, which has no Not")

    def visit_and(self, left_result: Expression, right_result: Expression) -> Expression:
        return and_(left_result, right_result)

    def visit_or(self, left_result: Expression, right_result: Expression) -> Expression:
        return or_(left_result, right_result)

    def visit_predicate(self, predicate: Predicate) -> Expression:
        ref = resolve_column(self._schema, predicate.column, self._case_sensitive)
        if isinstance(predicate, UnaryPredicate):
            if not ref.field.nullable:
                return AlwaysFalse() if predicate.op is Op.IS_NULL else AlwaysTrue()
            return UnaryPredicate(predicate.op, ref)
        if isinstance(predicate, LiteralPredicate):
            if predicate.op in (Op.STARTS_WITH, Op.NOT_STARTS_WITH):
                return _bind_prefix(predicate.op, ref, predicate.value)
            return _bind_comparison(predicate.op, ref, coerce_literal(ref, predicate.value))
        if isinstance(predicate, SetPredicate):
            return _bind_set(predicate.op, ref, predicate.values)
        raise InvalidOptionError(f"cannot bind {predicate!r}")


def _not_null(ref: BoundReference) -> Expression:
    return UnaryPredicate(Op.NOT_NULL, ref) if ref.field.nullable else AlwaysTrue()


class Rounded(NamedTuple):
    """A literal placed in a column's domain.

    ``floor`` is the greatest column value <= the literal and ``ceil`` the least >= it;
    either is ``None`` when no column value lies on that side.  Equal when exact.
    """

    floor: Any
    ceil: Any

    @property
    def exact(self) -> bool:
        return self.floor is not None and self.ceil is not None and self.floor == self.ceil


def _bind_comparison(op: Op, ref: BoundReference, rounded: Rounded) -> Expression:
    if rounded.exact:
        return LiteralPredicate(op, ref, rounded.floor)
    if op is Op.EQ:
        return AlwaysFalse()
    if op is Op.NE:
        return _not_null(ref)
    if op in (Op.LT, Op.LE):
        # a < x and a <= x both mean a <= floor(x) once x is not a column value.
        if rounded.floor is None:
            return AlwaysFalse()
        return _not_null(ref) if rounded.ceil is None else LiteralPredicate(Op.LE, ref, rounded.floor)
    # GT / GE: a >= ceil(x).
    if rounded.ceil is None:
        return AlwaysFalse()
    return _not_null(ref) if rounded.floor is None else LiteralPredicate(Op.GE, ref, rounded.ceil)


def _bind_set(op: Op, ref: BoundReference, values: frozenset[Any]) -> Expression:
    if not values:
        # Only reachable with a raw SetPredicate; keep the constructors' meaning.
        return AlwaysFalse() if op is Op.IN else AlwaysTrue()
    # Values that no column value equals never match (in) and always differ (not in).
    kept = {r.floor for r in (coerce_literal(ref, v) for v in values) if r.exact}
    if op is Op.IN:
        if not kept:
            return AlwaysFalse()
        if len(kept) == 1:
            return LiteralPredicate(Op.EQ, ref, kept.pop())
        return SetPredicate(Op.IN, ref, frozenset(kept))
    if not kept:
        # Not AlwaysTrue: "a not in (...)" is unknown, so unselected, when a is null.
        return _not_null(ref)
    if len(kept) == 1:
        return LiteralPredicate(Op.NE, ref, kept.pop())
    return SetPredicate(Op.NOT_IN, ref, frozenset(kept))


def _bind_prefix(op: Op, ref: BoundReference, prefix: str | bytes) -> Expression:
    value_type = _value_type(ref.field.type)
    if _is_string(value_type):
        if isinstance(prefix, bytes):
            prefix = _utf8(ref, prefix)
    elif _is_binary(value_type):
        if isinstance(prefix, str):
            prefix = prefix.encode("utf-8")
    else:
        raise InvalidOptionError(
            f"{op.value} needs a string or binary column; column {ref.name!r} is {ref.field.type}"
        )
    if not prefix:
        # Every non-null value starts with the empty prefix.
        return _not_null(ref) if op is Op.STARTS_WITH else AlwaysFalse()
    return LiteralPredicate(op, ref, prefix)


# --------------------------------------------------------------------------- literal coercion


class _Uncoercible(Exception):
    """Internal: the literal cannot be read as a value of the column's type."""


def coerce_literal(ref: BoundReference, value: Any) -> Rounded:
    """Place ``value`` in the domain of ``ref``'s column type.

    Raises:
        InvalidOptionError: the value cannot be read as that type; names the column.
    """
    value_type = _value_type(ref.field.type)
    try:
        return _coerce(value_type, value)
    except _Uncoercible as exc:
        detail = f": {exc}" if str(exc) else ""
        raise InvalidOptionError(
            f"cannot compare column {ref.name!r} ({ref.field.type}) with {value!r} "
            f"({type(value).__name__}){detail}"
        ) from None


def _value_type(arrow_type: pa.DataType) -> pa.DataType:
    # Partition columns read from Parquet are often dictionary-encoded; compare by value type.
    return arrow_type.value_type if pa.types.is_dictionary(arrow_type) else arrow_type


def _is_string(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


def _is_binary(t: pa.DataType) -> bool:
    return (
        pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_fixed_size_binary(t)
        or pa.types.is_binary_view(t)
    )


def _utf8(ref: BoundReference, raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidOptionError(
            f"bytes literal {raw!r} for string column {ref.name!r} is not UTF-8"
        ) from None


def _coerce(t: pa.DataType, value: Any) -> Rounded:
    if pa.types.is_integer(t):
        return _to_integer(t, value)
    if pa.types.is_floating(t):
        return _exact(_to_float(value))
    if pa.types.is_decimal(t):
        return _to_decimal(t, value)
    if _is_string(t):
        return _exact(_to_string(value))
    if _is_binary(t):
        return _exact(_to_binary(t, value))
    if pa.types.is_boolean(t):
        return _exact(_to_bool(value))
    if pa.types.is_date(t):
        return _to_date(value)
    if pa.types.is_timestamp(t):
        return _to_timestamp(t, value)
    raise _Uncoercible(f"comparisons on {t} columns are not supported")


def _exact(value: Any) -> Rounded:
    return Rounded(value, value)


def _within(floor: Any, ceil: Any, lo: Any, hi: Any) -> Rounded:
    """Clip a (floor, ceil) pair, where ``None`` means unbounded, to the range [lo, hi]."""
    new_floor = None if floor is None or floor < lo else min(floor, hi)
    new_ceil = None if ceil is None or ceil > hi else max(ceil, lo)
    return Rounded(new_floor, new_ceil)


def _parse_number(text: str) -> int | Decimal:
    text = text.strip()
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return Decimal(text)
    except decimal.InvalidOperation:
        raise _Uncoercible("not a number") from None


def _to_integer(t: pa.DataType, value: Any) -> Rounded:
    bits = t.bit_width
    lo, hi = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if pa.types.is_signed_integer(t) else (0, 2**bits - 1)
    if isinstance(value, str):
        value = _parse_number(value)
    if isinstance(value, bool):
        raise _Uncoercible
    if isinstance(value, int):
        return _within(value, value, lo, hi)
    if isinstance(value, (float, Decimal)):
        if math.isnan(value):
            raise _Uncoercible("NaN")
        if math.isinf(value):
            return Rounded(hi, None) if value > 0 else Rounded(None, lo)
        return _within(math.floor(value), math.ceil(value), lo, hi)
    raise _Uncoercible


def _to_float(value: Any) -> float:
    if isinstance(value, bool):
        raise _Uncoercible
    try:
        if isinstance(value, (int, float, Decimal)):
            return float(value)
        if isinstance(value, str):
            return float(value.strip())
    except (ValueError, OverflowError) as exc:
        raise _Uncoercible(str(exc)) from None
    raise _Uncoercible


def _to_decimal(t: pa.DataType, value: Any) -> Rounded:
    if isinstance(value, bool):
        raise _Uncoercible
    if isinstance(value, str):
        value = _parse_number(value)
    if isinstance(value, float):
        # repr is the shortest string that round-trips: 0.1 means 0.1, not 0.1000000000000000055...
        value = Decimal(repr(value))
    elif isinstance(value, int):
        value = Decimal(value)
    if not isinstance(value, Decimal):
        raise _Uncoercible
    if value.is_nan():
        raise _Uncoercible("NaN")
    quantum = Decimal(1).scaleb(-t.scale)
    hi = Decimal(10**t.precision - 1).scaleb(-t.scale)
    lo = -hi
    # Out-of-range checks come first: quantizing a huge value would exceed any context precision.
    if value > hi:
        return Rounded(hi, None)
    if value < lo:
        return Rounded(None, lo)
    with decimal.localcontext() as ctx:
        ctx.prec = t.precision + 2
        return Rounded(
            value.quantize(quantum, rounding=decimal.ROUND_FLOOR),
            value.quantize(quantum, rounding=decimal.ROUND_CEILING),
        )


def _to_string(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        # Hive-style partition paths spell booleans in lower case.
        return "true" if value else "false"
    if isinstance(value, (int, float, Decimal)):
        return str(value)
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            raise _Uncoercible("bytes are not UTF-8") from None
    raise _Uncoercible


def _to_binary(t: pa.DataType, value: Any) -> bytes:
    if isinstance(value, str):
        value = value.encode("utf-8")
    if not isinstance(value, (bytes, bytearray)):
        raise _Uncoercible
    if pa.types.is_fixed_size_binary(t) and len(value) != t.byte_width:
        raise _Uncoercible(f"expected {t.byte_width} bytes")
    return bytes(value)


def _to_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise _Uncoercible


def _parse_datetime(text: str) -> datetime.datetime:
    text = text.strip()
    # Python 3.10's fromisoformat does not accept the "Z" suffix.
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        return datetime.datetime.fromisoformat(text)
    except ValueError:
        raise _Uncoercible("not an ISO 8601 date or timestamp") from None


_DAY = datetime.timedelta(days=1)


def _to_date(value: Any) -> Rounded:
    if isinstance(value, str):
        try:
            return _exact(datetime.date.fromisoformat(value.strip()))
        except ValueError:
            value = _parse_datetime(value)
    if isinstance(value, datetime.datetime):
        if value.tzinfo is not None:
            raise _Uncoercible("a timezone-aware timestamp has no single date")
        floor = value.date()
        if value.time() == datetime.time():
            return _exact(floor)
        ceil = floor + _DAY if floor < datetime.date.max else None
        return Rounded(floor, ceil)
    if isinstance(value, datetime.date):
        return _exact(value)
    raise _Uncoercible


_UTC = datetime.timezone.utc
_EPOCH = datetime.datetime(1970, 1, 1)
# Nanosecond timestamps are int64 nanoseconds; these are the extreme microsecond instants.
_NS_SPAN = datetime.timedelta(microseconds=(2**63 - 1) // 1000)


def _to_timestamp(t: pa.DataType, value: Any) -> Rounded:
    if isinstance(value, str):
        text = value.strip()
        try:
            value = datetime.datetime.combine(datetime.date.fromisoformat(text), datetime.time())
        except ValueError:
            value = _parse_datetime(text)
    elif isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        value = datetime.datetime.combine(value, datetime.time())
    if not isinstance(value, datetime.datetime):
        # Integers are refused: without a unit they are ambiguous.
        raise _Uncoercible
    if t.tz is not None:
        # Arrow compares zoned timestamps as instants; naive literals are taken as UTC.
        epoch = _EPOCH.replace(tzinfo=_UTC)
        if value.tzinfo is None:
            value = value.replace(tzinfo=_UTC)
    else:
        epoch = _EPOCH
        if value.tzinfo is not None:
            value = value.astimezone(_UTC).replace(tzinfo=None)
    if t.unit == "s":
        floor = value.replace(microsecond=0)
        step = datetime.timedelta(seconds=1)
    elif t.unit == "ms":
        floor = value.replace(microsecond=value.microsecond // 1000 * 1000)
        step = datetime.timedelta(milliseconds=1)
    else:
        floor, step = value, datetime.timedelta(0)
    try:
        ceil = floor if floor == value else floor + step
    except OverflowError:
        ceil = None
    if t.unit == "ns":
        return _within(floor, ceil, epoch - _NS_SPAN, epoch + _NS_SPAN)
    return Rounded(floor, ceil)
