"""Filter expressions: the tree, its folding constructors, and its two external forms.

The tree is made of frozen dataclasses.  Predicates come in three families that
share one operator enum (:class:`Op`) instead of one class per operator:

* :class:`UnaryPredicate` -- ``is_null`` / ``not_null``;
* :class:`LiteralPredicate` -- ``eq``, ``ne``, ``lt``, ``le``, ``gt``, ``ge``,
  ``starts_with``, ``not_starts_with``;
* :class:`SetPredicate` -- ``in`` / ``not_in``.

A predicate's ``term`` is a :class:`Reference` (a column name, as written by the
user) until :func:`hudi_md.planning.bind` resolves it against a schema into a
:class:`BoundReference` and coerces the literal to the column's type.

Semantics are SQL's three-valued logic: a comparison involving a null column
value is unknown, and a row is selected only when the whole filter is true.  So
``ne``, ``not_in`` and ``not_starts_with`` never select nulls, and ``~`` is the
exact three-valued complement (``~eq`` is ``ne``, ``~lt`` is ``ge``, ``~And``
is ``Or`` of the complements).  The one deliberate exception follows Spark 3.5:
``in`` with an empty set is false even for null, so ``not_in`` with an empty set
is true for every row.

The dataclass constructors build nodes verbatim.  The lower-case constructors
(:func:`and_`, :func:`or_`, :func:`not_`, :func:`equal_to`, :func:`is_in`, ...)
and the ``&``, ``|``, ``~`` operators fold trivial cases, so prefer them.

Its two external forms (pyarrow-style filters, the JSON wire format of the Spark shim) are in
:mod:`hudi_md.planning.filters`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, TypeAlias

import pyarrow as pa

from hudi_md.errors import InvalidOptionError

__all__ = [
    "AlwaysFalse",
    "AlwaysTrue",
    "And",
    "BoundReference",
    "Expression",
    "LiteralPredicate",
    "Not",
    "Op",
    "Or",
    "Predicate",
    "Reference",
    "SetPredicate",
    "UnaryPredicate",
    "and_",
    "equal_to",
    "greater_than",
    "greater_than_or_equal",
    "is_in",
    "is_null",
    "less_than",
    "less_than_or_equal",
    "not_",
    "not_equal_to",
    "not_in",
    "not_null",
    "not_starts_with",
    "or_",
    "starts_with",
]


class Op(Enum):
    """Predicate operators; the value is the operator's name in the JSON form."""

    IS_NULL = "is_null"
    NOT_NULL = "not_null"
    EQ = "eq"
    NE = "ne"
    LT = "lt"
    LE = "le"
    GT = "gt"
    GE = "ge"
    STARTS_WITH = "starts_with"
    NOT_STARTS_WITH = "not_starts_with"
    IN = "in"
    NOT_IN = "not_in"

    @property
    def negated(self) -> Op:
        """The operator whose result is this one's three-valued complement."""
        return _NEGATED[self]


_NEGATED: dict[Op, Op] = {
    Op.IS_NULL: Op.NOT_NULL,
    Op.NOT_NULL: Op.IS_NULL,
    Op.EQ: Op.NE,
    Op.NE: Op.EQ,
    Op.LT: Op.GE,
    Op.GE: Op.LT,
    Op.GT: Op.LE,
    Op.LE: Op.GT,
    Op.STARTS_WITH: Op.NOT_STARTS_WITH,
    Op.NOT_STARTS_WITH: Op.STARTS_WITH,
    Op.IN: Op.NOT_IN,
    Op.NOT_IN: Op.IN,
}

UNARY_OPS = frozenset({Op.IS_NULL, Op.NOT_NULL})
LITERAL_OPS = frozenset({Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE, Op.STARTS_WITH, Op.NOT_STARTS_WITH})
SET_OPS = frozenset({Op.IN, Op.NOT_IN})

_SYMBOLS: dict[Op, str] = {
    Op.EQ: "=",
    Op.NE: "!=",
    Op.LT: "<",
    Op.LE: "<=",
    Op.GT: ">",
    Op.GE: ">=",
    Op.STARTS_WITH: "starts with",
    Op.NOT_STARTS_WITH: "not starts with",
    Op.IN: "in",
    Op.NOT_IN: "not in",
}


class Expression:
    """Base of every node.  ``&``, ``|`` and ``~`` build folded expressions."""

    __slots__ = ()

    def __and__(self, other: Expression) -> Expression:
        return and_(self, other)

    def __or__(self, other: Expression) -> Expression:
        return or_(self, other)

    def __invert__(self) -> Expression:
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class AlwaysTrue(Expression):
    """Selects every row, including rows full of nulls."""

    def __invert__(self) -> Expression:
        return AlwaysFalse()

    def __str__(self) -> str:
        return "true"


@dataclass(frozen=True, slots=True)
class AlwaysFalse(Expression):
    """Selects no row."""

    def __invert__(self) -> Expression:
        return AlwaysTrue()

    def __str__(self) -> str:
        return "false"


@dataclass(frozen=True, slots=True)
class And(Expression):
    left: Expression
    right: Expression

    def __invert__(self) -> Expression:
        # De Morgan holds in Kleene logic, so this stays the exact complement.
        return or_(~self.left, ~self.right)

    def __str__(self) -> str:
        return f"({self.left} and {self.right})"


@dataclass(frozen=True, slots=True)
class Or(Expression):
    left: Expression
    right: Expression

    def __invert__(self) -> Expression:
        return and_(~self.left, ~self.right)

    def __str__(self) -> str:
        return f"({self.left} or {self.right})"


@dataclass(frozen=True, slots=True)
class Not(Expression):
    child: Expression

    def __invert__(self) -> Expression:
        return self.child

    def __str__(self) -> str:
        return f"not {self.child}"


@dataclass(frozen=True, slots=True)
class Reference:
    """A column named by the user, not yet resolved against a schema."""

    name: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise InvalidOptionError(f"column name must be a non-empty string, got {self.name!r}")


@dataclass(frozen=True, slots=True)
class BoundReference:
    """A column resolved against a schema: its field and position there."""

    field: pa.Field
    position: int

    @property
    def name(self) -> str:
        return self.field.name


Term: TypeAlias = Reference | BoundReference


class Predicate(Expression):
    """A test on one column; see the three concrete families."""

    __slots__ = ()

    op: Op
    term: Term

    @property
    def column(self) -> str:
        return self.term.name

    @property
    def is_bound(self) -> bool:
        return isinstance(self.term, BoundReference)


def _check_op(op: Op, allowed: frozenset[Op], family: str) -> None:
    if not isinstance(op, Op) or op not in allowed:
        raise InvalidOptionError(f"operator {op!r} is not a {family} operator")


@dataclass(frozen=True, slots=True)
class UnaryPredicate(Predicate):
    op: Op
    term: Term

    def __post_init__(self) -> None:
        _check_op(self.op, UNARY_OPS, "unary")

    def __invert__(self) -> Expression:
        return UnaryPredicate(self.op.negated, self.term)

    def __str__(self) -> str:
        return f"{self.column} {'is null' if self.op is Op.IS_NULL else 'is not null'}"


@dataclass(frozen=True, slots=True)
class LiteralPredicate(Predicate):
    op: Op
    term: Term
    value: Any

    def __post_init__(self) -> None:
        _check_op(self.op, LITERAL_OPS, "comparison")
        _check_scalar(self.term.name, self.op, self.value)
        if self.op in (Op.STARTS_WITH, Op.NOT_STARTS_WITH) and not isinstance(self.value, (str, bytes)):
            raise InvalidOptionError(
                f"{self.op.value} on column {self.term.name!r} needs a str or bytes prefix, "
                f"got {self.value!r}"
            )

    def __invert__(self) -> Expression:
        return LiteralPredicate(self.op.negated, self.term, self.value)

    def __str__(self) -> str:
        return f"{self.column} {_SYMBOLS[self.op]} {self.value!r}"


@dataclass(frozen=True, slots=True)
class SetPredicate(Predicate):
    op: Op
    term: Term
    values: frozenset[Any]

    def __post_init__(self) -> None:
        _check_op(self.op, SET_OPS, "set")
        # Frozen dataclass: callers may pass any iterable, but a frozenset makes equality order-free.
        object.__setattr__(self, "values", _normalise_values(self.term.name, self.op, self.values))

    def __invert__(self) -> Expression:
        return SetPredicate(self.op.negated, self.term, self.values)

    def __str__(self) -> str:
        listed = ", ".join(sorted(repr(v) for v in self.values))
        return f"{self.column} {_SYMBOLS[self.op]} ({listed})"


def _normalise_values(column: str, op: Op, values: Iterable[Any]) -> frozenset[Any]:
    if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Iterable):
        raise InvalidOptionError(
            f"{op.value} on column {column!r} needs a collection of values, got {values!r}"
        )
    listed = list(values)
    for value in listed:
        _check_scalar(column, op, value)
    try:
        return frozenset(listed)
    except TypeError as exc:
        raise InvalidOptionError(f"{op.value} on column {column!r}: values must be hashable scalars") from exc


def _check_scalar(column: str, op: Op, value: Any) -> None:
    if value is None:
        # "a = NULL" is never true in SQL; a None here is almost always a bug for is_null.
        raise InvalidOptionError(
            f"{op.value} on column {column!r} compares with None; use is_null/not_null instead"
        )
    if isinstance(value, (list, tuple, set, frozenset, dict)):
        raise InvalidOptionError(f"{op.value} on column {column!r} needs a scalar value, got {value!r}")


# --------------------------------------------------------------------------- constructors

ColumnLike: TypeAlias = str | Reference | BoundReference


def _term(column: ColumnLike) -> Term:
    if isinstance(column, (Reference, BoundReference)):
        return column
    return Reference(column)


def flatten(kind: type[And] | type[Or], exprs: Iterable[Expression]) -> list[Expression]:
    flat: list[Expression] = []
    for expr in exprs:
        if not isinstance(expr, Expression):
            raise InvalidOptionError(f"expected an Expression, got {expr!r}")
        if isinstance(expr, kind):
            flat.extend(flatten(kind, (expr.left, expr.right)))
        else:
            flat.append(expr)
    return flat


def _balanced(kind: type[And] | type[Or], exprs: Sequence[Expression]) -> Expression:
    # Balanced, so visitors recurse O(log n) deep even for filters with thousands of terms.
    if len(exprs) == 1:
        return exprs[0]
    mid = len(exprs) // 2
    return kind(_balanced(kind, exprs[:mid]), _balanced(kind, exprs[mid:]))


def and_(*exprs: Expression) -> Expression:
    """Conjunction; drops ``AlwaysTrue``, is ``AlwaysFalse`` if any child is.

    Nested conjunctions are flattened and rebuilt as one balanced tree, which makes
    the shape canonical (the JSON form relies on this to round-trip exactly).
    """
    flat = flatten(And, exprs)
    if any(isinstance(e, AlwaysFalse) for e in flat):
        return AlwaysFalse()
    kept = [e for e in flat if not isinstance(e, AlwaysTrue)]
    return _balanced(And, kept) if kept else AlwaysTrue()


def or_(*exprs: Expression) -> Expression:
    """Disjunction; drops ``AlwaysFalse``, is ``AlwaysTrue`` if any child is."""
    flat = flatten(Or, exprs)
    if any(isinstance(e, AlwaysTrue) for e in flat):
        return AlwaysTrue()
    kept = [e for e in flat if not isinstance(e, AlwaysFalse)]
    return _balanced(Or, kept) if kept else AlwaysFalse()


def not_(expr: Expression) -> Expression:
    """Negation; folds constants and double negation, keeps ``Not`` over anything else."""
    if isinstance(expr, (AlwaysTrue, AlwaysFalse, Not)):
        return ~expr
    if not isinstance(expr, Expression):
        raise InvalidOptionError(f"expected an Expression, got {expr!r}")
    return Not(expr)


def is_null(column: ColumnLike) -> Expression:
    return UnaryPredicate(Op.IS_NULL, _term(column))


def not_null(column: ColumnLike) -> Expression:
    return UnaryPredicate(Op.NOT_NULL, _term(column))


def equal_to(column: ColumnLike, value: Any) -> Expression:
    return LiteralPredicate(Op.EQ, _term(column), value)


def not_equal_to(column: ColumnLike, value: Any) -> Expression:
    return LiteralPredicate(Op.NE, _term(column), value)


def less_than(column: ColumnLike, value: Any) -> Expression:
    return LiteralPredicate(Op.LT, _term(column), value)


def less_than_or_equal(column: ColumnLike, value: Any) -> Expression:
    return LiteralPredicate(Op.LE, _term(column), value)


def greater_than(column: ColumnLike, value: Any) -> Expression:
    return LiteralPredicate(Op.GT, _term(column), value)


def greater_than_or_equal(column: ColumnLike, value: Any) -> Expression:
    return LiteralPredicate(Op.GE, _term(column), value)


def starts_with(column: ColumnLike, prefix: str | bytes) -> Expression:
    return LiteralPredicate(Op.STARTS_WITH, _term(column), prefix)


def not_starts_with(column: ColumnLike, prefix: str | bytes) -> Expression:
    return LiteralPredicate(Op.NOT_STARTS_WITH, _term(column), prefix)


def is_in(column: ColumnLike, values: Iterable[Any]) -> Expression:
    """Set membership; an empty set is ``AlwaysFalse``, one value is ``equal_to``."""
    term = _term(column)
    pred = SetPredicate(Op.IN, term, _normalise_values(term.name, Op.IN, values))
    if not pred.values:
        return AlwaysFalse()
    if len(pred.values) == 1:
        return LiteralPredicate(Op.EQ, pred.term, next(iter(pred.values)))
    return pred


def not_in(column: ColumnLike, values: Iterable[Any]) -> Expression:
    """Set exclusion; an empty set is ``AlwaysTrue``, one value is ``not_equal_to``."""
    term = _term(column)
    pred = SetPredicate(Op.NOT_IN, term, _normalise_values(term.name, Op.NOT_IN, values))
    if not pred.values:
        return AlwaysTrue()
    if len(pred.values) == 1:
        return LiteralPredicate(Op.NE, pred.term, next(iter(pred.values)))
    return pred
