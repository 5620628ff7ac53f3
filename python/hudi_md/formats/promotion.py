"""Column values converted between the types Apache Hudi 1.2 lets a column change between.

Hudi converts values on two occasions, and both use the conversions here:

* a write whose records carry a column in a narrower type than the table keeps the table's type
  and converts the incoming values (a ``double`` column written with ``int`` values);
* a column the table promoted (``int`` → ``long`` → ``float`` → ``double`` → ``string``) is read
  from files written before in the new type.

The results are Java's, as Hudi 1.2 on Spark produces them (settled by running its bundle):
``float``/``double`` → ``string`` is ``Float.toString``/``Double.toString`` (``1.0E-5``,
``100.0``), ``decimal`` → ``string`` is ``BigDecimal.toString``, ``date`` → ``string`` is ISO,
``bytes`` ↔ ``string`` is UTF-8, numbers → ``decimal`` round half up at the column's scale from
the number's decimal string (``1.255`` → ``1.26``), and ``string`` → ``decimal``/``date`` parse
(a value that does not parse is refused). Everything else is Arrow's own cast.
"""

from __future__ import annotations

import datetime
import decimal
import math
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa

from hudi_md.errors import SchemaEvolutionError

__all__ = ["java_double_string", "java_float_string", "promote"]

_DATE = re.compile(r"^[+-]?\d{4,}-\d{2}-\d{2}$")


def _digits(text: str) -> tuple[str, int]:
    """The significant digits of a positive decimal text (``1.25e-3``) and the decimal exponent of
    the first one."""
    d = decimal.Decimal(text).normalize()
    _sign, digits, exp = d.as_tuple()
    assert isinstance(exp, int)
    s = "".join(map(str, digits))
    return s, len(s) - 1 + exp


def _java_fp(x: float, shortest: Callable[[float], str]) -> str:
    """Java's ``Double.toString`` / ``Float.toString`` layout of the shortest digits of ``x``:
    plain notation with at least one fraction digit for 1e-3 <= |x| < 1e7, else ``d.dddE±n``."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    sign = "-" if x < 0 else ""
    digits, e = _digits(shortest(abs(x)))
    if -3 <= e < 7:
        if e >= 0:
            whole = digits[: e + 1].ljust(e + 1, "0")
            frac = digits[e + 1 :] or "0"
        else:
            whole, frac = "0", "0" * (-e - 1) + digits
        return f"{sign}{whole}.{frac}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{e}"


def java_double_string(x: float) -> str:
    """``Double.toString(x)`` (the shortest digits that round-trip, as JDK 19+ prints them; JDK 17
    prints a longer form for a few values such as ``Double.MIN_VALUE``)."""
    return _java_fp(float(x), repr)


def java_float_string(x: float) -> str:
    """``Float.toString((float) x)``: the shortest digits that round-trip through ``float``."""
    return _java_fp(
        float(np.float32(x)),
        lambda v: np.format_float_scientific(np.float32(v), unique=True, trim="-", exp_digits=1),
    )


def _strings(values: list[Any], convert: Callable[[Any], str]) -> pa.Array:
    return pa.array([None if v is None else convert(v) for v in values], pa.string())


def _to_decimal(target: pa.Decimal128Type | pa.Decimal256Type) -> Callable[[Any], decimal.Decimal]:
    quantum = decimal.Decimal(1).scaleb(-target.scale)
    context = decimal.Context(prec=target.precision + 10)

    def convert(v: Any) -> decimal.Decimal:
        if isinstance(v, float):
            text = java_double_string(v)
        elif isinstance(v, str):
            text = v.strip()
        else:
            text = str(v)
        try:
            d = decimal.Decimal(text)
        except decimal.InvalidOperation:
            raise SchemaEvolutionError(f"value {v!r} is not a number, so it cannot become {target}") from None
        if not d.is_finite():
            raise SchemaEvolutionError(f"value {v!r} cannot become {target}")
        q = d.quantize(quantum, rounding=decimal.ROUND_HALF_UP, context=context)
        if len(q.as_tuple().digits) > target.precision:
            raise SchemaEvolutionError(f"value {v!r} does not fit {target}")
        return q

    return convert


def _to_date(v: str) -> datetime.date:
    text = v.strip()
    if not _DATE.match(text):
        raise SchemaEvolutionError(f"value {v!r} is not an ISO date (yyyy-MM-dd), so it cannot become a date")
    try:
        return datetime.date.fromisoformat(text)
    except ValueError:
        raise SchemaEvolutionError(f"value {v!r} is not a valid date") from None


def promote(array: pa.Array, target: pa.DataType) -> pa.Array:
    """``array`` (a primitive column) as ``target``, converted as Apache Hudi converts it."""
    source = array.type
    if source.equals(target):
        return array
    if pa.types.is_string(target) or pa.types.is_large_string(target):
        out = _to_string(array)
        if out is not None:
            return out.cast(target) if not out.type.equals(target) else out
    if pa.types.is_decimal(target) and (
        pa.types.is_integer(source)
        or pa.types.is_floating(source)
        or pa.types.is_string(source)
        or pa.types.is_large_string(source)
        or pa.types.is_decimal(source)
    ):
        values = array.to_pylist()
        if pa.types.is_float32(source):
            values = [None if v is None else float(java_float_string(v)) for v in values]
        convert = _to_decimal(target)
        return pa.array([None if v is None else convert(v) for v in values], target)
    if pa.types.is_date(target) and (pa.types.is_string(source) or pa.types.is_large_string(source)):
        return pa.array([None if v is None else _to_date(v) for v in array.to_pylist()], target)
    if pa.types.is_binary(target) and (pa.types.is_string(source) or pa.types.is_large_string(source)):
        return array.cast(pa.binary()).cast(target)
    if pa.types.is_floating(target) and pa.types.is_integer(source):
        # Java's widening int/long -> float/double: round to nearest, never refused.
        return array.cast(target, safe=False)
    return array.cast(target)


def _to_string(array: pa.Array) -> pa.Array | None:
    source = array.type
    if pa.types.is_float64(source):
        return _strings(array.to_pylist(), java_double_string)
    if pa.types.is_float32(source):
        return _strings(array.to_pylist(), java_float_string)
    if pa.types.is_decimal(source):
        return _strings(array.to_pylist(), str)
    if pa.types.is_date(source):
        return _strings(array.to_pylist(), lambda d: d.isoformat())
    if (
        pa.types.is_binary(source)
        or pa.types.is_large_binary(source)
        or pa.types.is_fixed_size_binary(source)
    ):
        return _strings(array.to_pylist(), lambda b: bytes(b).decode("utf-8", errors="replace"))
    if pa.types.is_integer(source):
        return array.cast(pa.string())
    return None
