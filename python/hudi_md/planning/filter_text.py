"""The text form of a filter expression: a small SQL ``WHERE``-clause grammar.

::

    filter     := or_expr
    or_expr    := and_expr ( OR and_expr )*
    and_expr   := not_expr ( AND not_expr )*
    not_expr   := NOT not_expr | '(' filter ')' | predicate
    predicate  := column ( compare literal
                         | [NOT] IN '(' literal ( ',' literal )* ')'
                         | [NOT] BETWEEN literal AND literal
                         | IS [NOT] NULL )
    compare    := '=' | '==' | '!=' | '<>' | '<' | '<=' | '>' | '>='
    column     := word | `back-quoted` (`` `` `` inside is one back quote)
    literal    := 'single-quoted' ('' inside is one quote) | TRUE | FALSE | number | word

Keywords (``AND OR NOT IN BETWEEN IS NULL TRUE FALSE``) are case-insensitive and cannot be
column names unless back-quoted. A ``word`` is a run of characters other than white space, quotes,
parentheses, commas and ``= ! < >``; as a literal it is the text as written (``city = sf``, the
form the CLI has always documented, and ``dt = 2024-01-01``). Integers and plain decimals written
canonically become ``int`` and ``Decimal``; any other word stays text. Binding
(:func:`hudi_md.planning.bind`) then types every literal against its column exactly as it types the
values of pyarrow-style filters, so ``fare > 20`` and ``fare > '20'`` mean the same, and
``zip = 007`` on a string column still compares with ``"007"``.

Anything outside the grammar raises :class:`~hudi_md.errors.InvalidOptionError` naming the text
and the 1-based position: a filter is never read as a different predicate than the one written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from enum import Enum
from typing import Any

from hudi_md.errors import InvalidOptionError
from hudi_md.planning.expressions import (
    Expression,
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
    or_,
)

__all__ = ["parse_filter_text"]


class _Kind(Enum):
    WORD = "word"
    STRING = "string"
    QUOTED_COLUMN = "quoted column"
    OPERATOR = "operator"
    LPAREN = "("
    RPAREN = ")"
    COMMA = ","
    END = "end of filter"


@dataclass(frozen=True)
class _Token:
    kind: _Kind
    text: str
    position: int  # 0-based offset into the filter text

    @property
    def keyword(self) -> str | None:
        upper = self.text.upper()
        return upper if self.kind is _Kind.WORD and upper in _KEYWORDS else None

    def describe(self) -> str:
        return "the end of the filter" if self.kind is _Kind.END else repr(self.text)


_KEYWORDS = frozenset({"AND", "OR", "NOT", "IN", "BETWEEN", "IS", "NULL", "TRUE", "FALSE"})
_COMPARISONS = {
    "=": equal_to,
    "==": equal_to,
    "!=": not_equal_to,
    "<>": not_equal_to,
    "<": less_than,
    "<=": less_than_or_equal,
    ">": greater_than,
    ">=": greater_than_or_equal,
}
_OPERATOR_CHARS = "=!<>"
_WORD_STOP = frozenset(" \t\r\n'\"`(),") | frozenset(_OPERATOR_CHARS)
# Only canonical spellings become numbers: "007" or "1e3" stay text, so a string column compares
# with the characters written and a numeric column still reads them as its number.
_INTEGER = re.compile(r"-?(0|[1-9][0-9]*)")
_DECIMAL = re.compile(r"-?(0|[1-9][0-9]*)\.[0-9]+")


class _FilterSyntaxError(Exception):
    def __init__(self, reason: str, position: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.position = position


def parse_filter_text(text: str) -> Expression:
    """The (unbound) expression ``text`` spells in the grammar of this module's docstring.

    Raises:
        InvalidOptionError: ``text`` is not in the grammar; the message quotes it and gives the
            1-based position of the first character that does not fit.
    """
    if not isinstance(text, str):
        raise InvalidOptionError(f"a filter must be text, got {text!r}")
    try:
        return _Parser(_tokens(text)).parse()
    except _FilterSyntaxError as exc:
        raise InvalidOptionError(
            f"cannot parse filter {text!r}: {exc.reason} at position {exc.position + 1}"
        ) from None


def _tokens(text: str) -> list[_Token]:
    out: list[_Token] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch in "(),":
            kind = {"(": _Kind.LPAREN, ")": _Kind.RPAREN, ",": _Kind.COMMA}[ch]
            out.append(_Token(kind, ch, i))
            i += 1
        elif ch in "'`":
            value, end = _quoted(text, i)
            out.append(_Token(_Kind.STRING if ch == "'" else _Kind.QUOTED_COLUMN, value, i))
            i = end
        elif ch == '"':
            raise _FilterSyntaxError("double quotes are not accepted (quote values with ')", i)
        elif ch in _OPERATOR_CHARS:
            end = i
            while end < n and text[end] in _OPERATOR_CHARS:
                end += 1
            if text[i:end] not in _COMPARISONS:
                raise _FilterSyntaxError(f"unknown operator {text[i:end]!r}", i)
            out.append(_Token(_Kind.OPERATOR, text[i:end], i))
            i = end
        else:
            end = i
            while end < n and text[end] not in _WORD_STOP:
                end += 1
            out.append(_Token(_Kind.WORD, text[i:end], i))
            i = end
    out.append(_Token(_Kind.END, "", n))
    return out


def _quoted(text: str, start: int) -> tuple[str, int]:
    """The content of the quoted run opening at ``start`` (a doubled quote is one quote) and the
    offset just past its closing quote."""
    quote = text[start]
    parts: list[str] = []
    i = start + 1
    while True:
        close = text.find(quote, i)
        if close < 0:
            what = "string" if quote == "'" else "back-quoted column name"
            raise _FilterSyntaxError(f"unterminated {what}", start)
        parts.append(text[i:close])
        if text.startswith(quote * 2, close):
            parts.append(quote)
            i = close + 2
            continue
        return "".join(parts), close + 1


class _Parser:
    def __init__(self, tokens: list[_Token]) -> None:
        self._tokens = tokens
        self._at = 0

    def _peek(self) -> _Token:
        return self._tokens[self._at]

    def _next(self) -> _Token:
        token = self._tokens[self._at]
        if token.kind is not _Kind.END:
            self._at += 1
        return token

    def _accept_keyword(self, keyword: str) -> bool:
        if self._peek().keyword == keyword:
            self._at += 1
            return True
        return False

    def _expect_keyword(self, keyword: str, context: str) -> None:
        if not self._accept_keyword(keyword):
            token = self._peek()
            raise _FilterSyntaxError(
                f"expected {keyword} {context}, found {token.describe()}", token.position
            )

    def _expect(self, kind: _Kind, context: str) -> _Token:
        token = self._next()
        if token.kind is not kind:
            raise _FilterSyntaxError(
                f"expected {kind.value!r} {context}, found {token.describe()}", token.position
            )
        return token

    def parse(self) -> Expression:
        if self._peek().kind is _Kind.END:
            raise _FilterSyntaxError("empty filter", 0)
        expr = self._or()
        token = self._peek()
        if token.kind is not _Kind.END:
            hint = " (quote values that contain spaces)" if token.kind is _Kind.WORD else ""
            raise _FilterSyntaxError(f"unexpected {token.describe()}{hint}", token.position)
        return expr

    def _or(self) -> Expression:
        parts = [self._and()]
        while self._accept_keyword("OR"):
            parts.append(self._and())
        return or_(*parts)

    def _and(self) -> Expression:
        parts = [self._not()]
        while self._accept_keyword("AND"):
            parts.append(self._not())
        return and_(*parts)

    def _not(self) -> Expression:
        if self._accept_keyword("NOT"):
            return not_(self._not())
        if self._peek().kind is _Kind.LPAREN:
            self._next()
            inner = self._or()
            self._expect(_Kind.RPAREN, "to close the parenthesis")
            return inner
        return self._predicate()

    def _predicate(self) -> Expression:
        column = self._column()
        token = self._next()
        if token.kind is _Kind.OPERATOR:
            return _COMPARISONS[token.text](column, self._literal())
        keyword = token.keyword
        negated = keyword == "NOT"
        if negated:
            token = self._next()
            keyword = token.keyword
        if keyword == "IN":
            values = self._literal_list()
            return not_in(column, values) if negated else is_in(column, values)
        if keyword == "BETWEEN":
            low = self._literal()
            self._expect_keyword("AND", "between the bounds of BETWEEN")
            high = self._literal()
            between = and_(greater_than_or_equal(column, low), less_than_or_equal(column, high))
            return not_(between) if negated else between
        if keyword == "IS" and not negated:
            is_not = self._accept_keyword("NOT")
            self._expect_keyword("NULL", "after IS" + (" NOT" if is_not else ""))
            return not_null(column) if is_not else is_null(column)
        expected = "IN or BETWEEN after NOT" if negated else "an operator (= != <> < <= > >= IN BETWEEN IS)"
        raise _FilterSyntaxError(f"expected {expected}, found {token.describe()}", token.position)

    def _column(self) -> str:
        token = self._next()
        if token.kind is _Kind.QUOTED_COLUMN:
            if not token.text:
                raise _FilterSyntaxError("empty column name", token.position)
            return token.text
        if token.kind is _Kind.WORD and token.keyword is None:
            return token.text
        hint = " (back-quote column names that are keywords)" if token.keyword else ""
        raise _FilterSyntaxError(f"expected a column name, found {token.describe()}{hint}", token.position)

    def _literal(self) -> Any:
        token = self._next()
        if token.kind is _Kind.STRING:
            return token.text
        if token.kind is _Kind.WORD:
            keyword = token.keyword
            if keyword == "TRUE":
                return True
            if keyword == "FALSE":
                return False
            if keyword == "NULL":
                raise _FilterSyntaxError("NULL is not a value to compare with; use IS NULL", token.position)
            if keyword is not None:
                raise _FilterSyntaxError(f"expected a value, found keyword {token.text!r}", token.position)
            if _INTEGER.fullmatch(token.text):
                return int(token.text)
            if _DECIMAL.fullmatch(token.text):
                return Decimal(token.text)
            return token.text
        raise _FilterSyntaxError(f"expected a value, found {token.describe()}", token.position)

    def _literal_list(self) -> list[Any]:
        self._expect(_Kind.LPAREN, "after IN")
        values = [self._literal()]
        while self._peek().kind is _Kind.COMMA:
            self._next()
            values.append(self._literal())
        self._expect(_Kind.RPAREN, "to close the IN list")
        return values
