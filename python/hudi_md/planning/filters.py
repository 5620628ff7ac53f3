"""The two external forms of a filter expression (:mod:`hudi_md.planning.expressions`).

* :func:`from_filters` accepts pyarrow.parquet-style filters (``[(col, op, value), ...]``
  or a list of such lists, read as an OR of ANDs);
* :func:`to_json` / :func:`from_json` are the plain-dict wire format used by the
  Spark shim.  Nodes are ``{"op": ...}`` objects:

  - ``{"op": "true"}``, ``{"op": "false"}``;
  - ``{"op": "and" | "or", "children": [<node>, ...]}`` (one or more children);
  - ``{"op": "not", "child": <node>}``;
  - ``{"op": "is_null" | "not_null", "column": "a"}``;
  - ``{"op": "eq" | "ne" | "lt" | "le" | "gt" | "ge" | "starts_with" | "not_starts_with",
    "column": "a", "value": <value>}``;
  - ``{"op": "in" | "not_in", "column": "a", "values": [<value>, ...]}``.

  Values that JSON represents natively (bool, int, finite float, str) are written
  as is.  Anything else is written as a string plus a ``"type"`` hint on the
  predicate that applies to every value of that predicate: ``"date"`` (ISO
  ``YYYY-MM-DD``), ``"timestamp"`` (ISO 8601, with an offset when timezone-aware),
  ``"decimal"`` (the decimal's string form, exact), ``"binary"`` (standard base64),
  ``"float"`` (``"NaN"``, ``"Infinity"`` or ``"-Infinity"``).  A set whose values
  would need different hints cannot be written.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any, TypeAlias

from hudi_md.errors import InvalidOptionError
from hudi_md.planning.expressions import (
    LITERAL_OPS,
    SET_OPS,
    UNARY_OPS,
    AlwaysFalse,
    AlwaysTrue,
    And,
    ColumnLike,
    Expression,
    LiteralPredicate,
    Not,
    Op,
    Or,
    SetPredicate,
    UnaryPredicate,
    and_,
    equal_to,
    flatten,
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

_LITERAL_CONSTRUCTORS: dict[Op, Callable[[ColumnLike, Any], Expression]] = {
    Op.EQ: equal_to,
    Op.NE: not_equal_to,
    Op.LT: less_than,
    Op.LE: less_than_or_equal,
    Op.GT: greater_than,
    Op.GE: greater_than_or_equal,
    Op.STARTS_WITH: starts_with,
    Op.NOT_STARTS_WITH: not_starts_with,
}
_SET_CONSTRUCTORS: dict[Op, Callable[[ColumnLike, Iterable[Any]], Expression]] = {
    Op.IN: is_in,
    Op.NOT_IN: not_in,
}
_UNARY_CONSTRUCTORS: dict[Op, Callable[[ColumnLike], Expression]] = {
    Op.IS_NULL: is_null,
    Op.NOT_NULL: not_null,
}


# --------------------------------------------------------------------------- pyarrow-style filters

__all__ = ["FilterTuple", "Filters", "from_filters", "from_json", "to_expression", "to_json"]

FilterTuple: TypeAlias = tuple[str, str, Any]
Filters: TypeAlias = Sequence[FilterTuple] | Sequence[Sequence[FilterTuple]]

_FILTER_OPS: dict[str, Op] = {
    "=": Op.EQ,
    "==": Op.EQ,
    "!=": Op.NE,
    "<": Op.LT,
    "<=": Op.LE,
    ">": Op.GT,
    ">=": Op.GE,
    "in": Op.IN,
    "not in": Op.NOT_IN,
}


def from_filters(filters: Filters | None) -> Expression:
    """Convert pyarrow.parquet-style filters into an expression.

    ``[(col, op, value), ...]`` is an AND of its terms; ``[[...], [...]]`` is an OR
    of such ANDs (disjunctive normal form).  Ops: ``=``, ``==``, ``!=``, ``<``, ``<=``,
    ``>``, ``>=``, ``in``, ``not in`` (case and spacing of ``not in`` are not significant).
    Terms may be tuples or lists (as decoded from JSON).  ``None`` or ``[]`` selects everything.

    Raises:
        InvalidOptionError: a term is malformed, an operator unknown, a value unusable,
            or an inner conjunction empty; the message quotes the offending term.
    """
    if filters is None:
        return AlwaysTrue()
    if isinstance(filters, (str, bytes)) or not isinstance(filters, Sequence):
        raise InvalidOptionError(f"filters must be a list of (column, op, value) terms, got {filters!r}")
    if len(filters) == 0:
        return AlwaysTrue()
    if _is_term(filters[0]):
        return and_(*(_filter_term(term) for term in filters))
    disjuncts = []
    for conjunction in filters:
        if isinstance(conjunction, (str, bytes)) or not isinstance(conjunction, Sequence) or not conjunction:
            raise InvalidOptionError(
                "malformed filters: expected a non-empty list of (column, op, value) terms, "
                f"got {conjunction!r}"
            )
        disjuncts.append(and_(*(_filter_term(term) for term in conjunction)))
    return or_(*disjuncts)


def _is_term(obj: Any) -> bool:
    return isinstance(obj, (tuple, list)) and len(obj) > 0 and isinstance(obj[0], str)


def _filter_term(term: Any) -> Expression:
    if not isinstance(term, (tuple, list)) or len(term) != 3:
        raise InvalidOptionError(f"malformed filter term {term!r}: expected (column, op, value)")
    column, op_text, value = term
    if not isinstance(column, str) or not column:
        raise InvalidOptionError(f"malformed filter term {term!r}: column must be a non-empty string")
    if not isinstance(op_text, str):
        raise InvalidOptionError(f"malformed filter term {term!r}: operator must be a string")
    op = _FILTER_OPS.get(" ".join(op_text.split()).lower())
    if op is None:
        raise InvalidOptionError(
            f"unknown filter operator {op_text!r} in {term!r}; expected one of {sorted(_FILTER_OPS)}"
        )
    if op in SET_OPS:
        if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
            raise InvalidOptionError(f"filter term {term!r}: {op_text!r} needs a list of values")
        return _SET_CONSTRUCTORS[op](column, value)
    return _LITERAL_CONSTRUCTORS[op](column, value)


# --------------------------------------------------------------------------- JSON wire format


def to_json(expr: Expression) -> dict[str, Any]:
    """The plain, ``json.dumps``-able form of ``expr`` (see the module docstring).

    Bound expressions are written by column name, so they read back unbound.
    """
    if isinstance(expr, AlwaysTrue):
        return {"op": "true"}
    if isinstance(expr, AlwaysFalse):
        return {"op": "false"}
    if isinstance(expr, (And, Or)):
        kind = type(expr)
        return {
            "op": "and" if kind is And else "or",
            "children": [to_json(c) for c in flatten(kind, [expr])],
        }
    if isinstance(expr, Not):
        return {"op": "not", "child": to_json(expr.child)}
    if isinstance(expr, UnaryPredicate):
        return {"op": expr.op.value, "column": expr.column}
    if isinstance(expr, LiteralPredicate):
        encoded, hint = _encode_value(expr.column, expr.value)
        out: dict[str, Any] = {"op": expr.op.value, "column": expr.column, "value": encoded}
        if hint is not None:
            out["type"] = hint
        return out
    if isinstance(expr, SetPredicate):
        pairs = [_encode_value(expr.column, v) for v in expr.values]
        hints = {hint for _, hint in pairs}
        if len(hints) > 1:
            raise InvalidOptionError(
                f"cannot serialise {expr.op.value} on column {expr.column!r}: "
                f"values of mixed types {expr.values!r}"
            )
        # Sorted so the output is deterministic; values sharing a hint share a JSON type.
        encoded_values = sorted((v for v, _ in pairs), key=lambda v: (type(v).__name__, v))
        out = {"op": expr.op.value, "column": expr.column, "values": encoded_values}
        hint = hints.pop() if hints else None
        if hint is not None:
            out["type"] = hint
        return out
    raise InvalidOptionError(f"cannot serialise {expr!r}")


def from_json(data: object) -> Expression:
    """Rebuild an (unbound) expression from :func:`to_json`'s form (decoded JSON, checked here),
    folding as the constructors do.

    Raises:
        InvalidOptionError: unknown ``op`` or ``type``, missing keys, or undecodable values.
    """
    if not isinstance(data, Mapping):
        raise InvalidOptionError(f"expression node must be an object, got {data!r}")
    op_name = data.get("op")
    if op_name == "true":
        return AlwaysTrue()
    if op_name == "false":
        return AlwaysFalse()
    if op_name in ("and", "or"):
        children = data.get("children")
        if not isinstance(children, list) or not children:
            raise InvalidOptionError(f"{op_name!r} node needs a non-empty 'children' list: {data!r}")
        parts = [from_json(child) for child in children]
        return and_(*parts) if op_name == "and" else or_(*parts)
    if op_name == "not":
        if "child" not in data:
            raise InvalidOptionError(f"'not' node needs a 'child': {data!r}")
        return not_(from_json(data["child"]))
    try:
        op = Op(op_name)
    except ValueError:
        raise InvalidOptionError(f"unknown expression op {op_name!r}") from None
    column = data.get("column")
    if not isinstance(column, str) or not column:
        raise InvalidOptionError(f"{op.value!r} node needs a 'column' string: {data!r}")
    hint = data.get("type")
    if op in UNARY_OPS:
        return _UNARY_CONSTRUCTORS[op](column)
    if op in LITERAL_OPS:
        if "value" not in data:
            raise InvalidOptionError(f"{op.value!r} node on column {column!r} needs a 'value'")
        return _LITERAL_CONSTRUCTORS[op](column, _decode_value(column, data["value"], hint))
    values = data.get("values")
    if not isinstance(values, list):
        raise InvalidOptionError(f"{op.value!r} node on column {column!r} needs a 'values' list")
    return _SET_CONSTRUCTORS[op](column, [_decode_value(column, v, hint) for v in values])


def _encode_value(column: str, value: Any) -> tuple[Any, str | None]:
    if isinstance(value, (bool, int, str)):
        return value, None
    if isinstance(value, float):
        if math.isfinite(value):
            return value, None
        return ("NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")), "float"
    if isinstance(value, Decimal):
        return str(value), "decimal"
    # datetime is a date subclass, so it must be tested first.
    if isinstance(value, datetime.datetime):
        return value.isoformat(), "timestamp"
    if isinstance(value, datetime.date):
        return value.isoformat(), "date"
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii"), "binary"
    raise InvalidOptionError(
        f"cannot serialise value {value!r} ({type(value).__name__}) on column {column!r}"
    )


_DECODERS: dict[str, Callable[[str], Any]] = {
    "date": datetime.date.fromisoformat,
    "timestamp": lambda s: datetime.datetime.fromisoformat(s[:-1] + "+00:00" if s.endswith("Z") else s),
    "decimal": Decimal,
    "binary": lambda s: base64.b64decode(s, validate=True),
    "float": float,
}


def _decode_value(column: str, value: Any, hint: Any) -> Any:
    if hint is None:
        if isinstance(value, (bool, int, float, str)):
            return value
        raise InvalidOptionError(f"value {value!r} on column {column!r} is not a JSON scalar")
    decoder = _DECODERS.get(hint) if isinstance(hint, str) else None
    if decoder is None:
        raise InvalidOptionError(
            f"unknown value type {hint!r} on column {column!r}; expected one of {sorted(_DECODERS)}"
        )
    if not isinstance(value, str):
        raise InvalidOptionError(f"{hint} value on column {column!r} must be a string, got {value!r}")
    try:
        return decoder(value)
    except (ValueError, InvalidOperation, binascii.Error) as exc:
        raise InvalidOptionError(
            f"cannot decode {hint} value {value!r} on column {column!r}: {exc}"
        ) from None


def to_expression(filters: Expression | Filters | None) -> Expression | None:
    """A user's filters (an expression, or pyarrow.parquet-style tuples) as an expression; None
    when they select everything."""
    if filters is None:
        return None
    expr = filters if isinstance(filters, Expression) else from_filters(filters)
    return None if isinstance(expr, AlwaysTrue) else expr
