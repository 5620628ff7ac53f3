"""Visitor bases for expression trees, plus the structural rewrites built on them.

:func:`visit` walks post-order: a visitor sees its children's results, never the
children.  :class:`BooleanExpressionVisitor` handles the connectives and receives
predicates whole; :class:`BoundBooleanExpressionVisitor` further splits bound
predicates into one method per operator, so evaluators read like truth tables.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from functools import singledispatch
from typing import Any, Generic, TypeVar

from hudi_md.errors import InvalidOptionError
from hudi_md.planning.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BoundReference,
    Expression,
    LiteralPredicate,
    Not,
    Op,
    Or,
    Predicate,
    SetPredicate,
    UnaryPredicate,
    and_,
    or_,
)

__all__ = [
    "BooleanExpressionVisitor",
    "BoundBooleanExpressionVisitor",
    "referenced_columns",
    "rewrite_not",
    "visit",
]

T = TypeVar("T")


class BooleanExpressionVisitor(Generic[T], ABC):
    @abstractmethod
    def visit_true(self) -> T: ...

    @abstractmethod
    def visit_false(self) -> T: ...

    @abstractmethod
    def visit_not(self, child_result: T) -> T: ...

    @abstractmethod
    def visit_and(self, left_result: T, right_result: T) -> T: ...

    @abstractmethod
    def visit_or(self, left_result: T, right_result: T) -> T: ...

    @abstractmethod
    def visit_predicate(self, predicate: Predicate) -> T: ...


_METHODS: dict[Op, str] = {
    Op.IS_NULL: "visit_is_null",
    Op.NOT_NULL: "visit_not_null",
    Op.EQ: "visit_equal",
    Op.NE: "visit_not_equal",
    Op.LT: "visit_less_than",
    Op.LE: "visit_less_than_or_equal",
    Op.GT: "visit_greater_than",
    Op.GE: "visit_greater_than_or_equal",
    Op.STARTS_WITH: "visit_starts_with",
    Op.NOT_STARTS_WITH: "visit_not_starts_with",
    Op.IN: "visit_in",
    Op.NOT_IN: "visit_not_in",
}


class BoundBooleanExpressionVisitor(BooleanExpressionVisitor[T]):
    """Dispatches bound predicates to one method per operator."""

    def visit_predicate(self, predicate: Predicate) -> T:
        ref = predicate.term
        if not isinstance(ref, BoundReference):
            raise InvalidOptionError(
                f"predicate on column {predicate.column!r} is not bound; call bind() first"
            )
        method = getattr(self, _METHODS[predicate.op])
        if isinstance(predicate, UnaryPredicate):
            return method(ref)
        if isinstance(predicate, LiteralPredicate):
            return method(ref, predicate.value)
        if isinstance(predicate, SetPredicate):
            return method(ref, predicate.values)
        raise InvalidOptionError(f"unknown predicate {predicate!r}")

    @abstractmethod
    def visit_is_null(self, ref: BoundReference) -> T: ...

    @abstractmethod
    def visit_not_null(self, ref: BoundReference) -> T: ...

    @abstractmethod
    def visit_equal(self, ref: BoundReference, value: Any) -> T: ...

    @abstractmethod
    def visit_not_equal(self, ref: BoundReference, value: Any) -> T: ...

    @abstractmethod
    def visit_less_than(self, ref: BoundReference, value: Any) -> T: ...

    @abstractmethod
    def visit_less_than_or_equal(self, ref: BoundReference, value: Any) -> T: ...

    @abstractmethod
    def visit_greater_than(self, ref: BoundReference, value: Any) -> T: ...

    @abstractmethod
    def visit_greater_than_or_equal(self, ref: BoundReference, value: Any) -> T: ...

    @abstractmethod
    def visit_starts_with(self, ref: BoundReference, prefix: Any) -> T: ...

    @abstractmethod
    def visit_not_starts_with(self, ref: BoundReference, prefix: Any) -> T: ...

    @abstractmethod
    def visit_in(self, ref: BoundReference, values: frozenset[Any]) -> T: ...

    @abstractmethod
    def visit_not_in(self, ref: BoundReference, values: frozenset[Any]) -> T: ...


@singledispatch
def visit(expr: Expression, visitor: BooleanExpressionVisitor[T]) -> T:
    """Walk ``expr`` post-order, returning the visitor's result for the root."""
    raise InvalidOptionError(f"cannot visit {expr!r}: not an expression node")


@visit.register
def _(expr: AlwaysTrue, visitor: BooleanExpressionVisitor[T]) -> T:
    return visitor.visit_true()


@visit.register
def _(expr: AlwaysFalse, visitor: BooleanExpressionVisitor[T]) -> T:
    return visitor.visit_false()


@visit.register
def _(expr: Not, visitor: BooleanExpressionVisitor[T]) -> T:
    return visitor.visit_not(visit(expr.child, visitor))


@visit.register
def _(expr: And, visitor: BooleanExpressionVisitor[T]) -> T:
    return visitor.visit_and(visit(expr.left, visitor), visit(expr.right, visitor))


@visit.register
def _(expr: Or, visitor: BooleanExpressionVisitor[T]) -> T:
    return visitor.visit_or(visit(expr.left, visitor), visit(expr.right, visitor))


@visit.register
def _(expr: Predicate, visitor: BooleanExpressionVisitor[T]) -> T:
    return visitor.visit_predicate(expr)


class _RewriteNotVisitor(BooleanExpressionVisitor[Expression]):
    def visit_true(self) -> Expression:
        return AlwaysTrue()

    def visit_false(self) -> Expression:
        return AlwaysFalse()

    def visit_not(self, child_result: Expression) -> Expression:
        # The child is already NOT-free, and ``~`` on a NOT-free tree applies De Morgan
        # and negates predicates, so the result stays NOT-free.
        return ~child_result

    def visit_and(self, left_result: Expression, right_result: Expression) -> Expression:
        return and_(left_result, right_result)

    def visit_or(self, left_result: Expression, right_result: Expression) -> Expression:
        return or_(left_result, right_result)

    def visit_predicate(self, predicate: Predicate) -> Expression:
        return predicate


def rewrite_not(expr: Expression) -> Expression:
    """Push every ``Not`` down into the predicates (negation normal form).

    Exact under three-valued logic.  Evaluators rely on the result having no ``Not``:
    without negation above them, a leaf only has to say whether it is *true*, since an
    unknown leaf and a false leaf then lead to the same row decision.
    """
    return visit(expr, _RewriteNotVisitor())


class _ColumnsVisitor(BooleanExpressionVisitor[frozenset[str]]):
    def visit_true(self) -> frozenset[str]:
        return frozenset()

    def visit_false(self) -> frozenset[str]:
        return frozenset()

    def visit_not(self, child_result: frozenset[str]) -> frozenset[str]:
        return child_result

    def visit_and(self, left_result: frozenset[str], right_result: frozenset[str]) -> frozenset[str]:
        return left_result | right_result

    def visit_or(self, left_result: frozenset[str], right_result: frozenset[str]) -> frozenset[str]:
        return left_result | right_result

    def visit_predicate(self, predicate: Predicate) -> frozenset[str]:
        return frozenset((predicate.column,))


def referenced_columns(expr: Expression) -> frozenset[str]:
    """Names of the columns ``expr`` tests (as written, or as resolved if bound)."""
    return visit(expr, _ColumnsVisitor())
