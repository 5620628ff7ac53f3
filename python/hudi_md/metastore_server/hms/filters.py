"""Hive metastore partition filter strings (``get_partitions_by_filter``) as the server's
:class:`~hudi_md.metastore.protocol.Filter`, which :func:`hudi_md.metastore_server.partitions.prune`
turns into one parameterized statement.

The grammar is Hive 2's ``Filter.g``, the part clients send (Spark's ``HiveShim.convertFilters``
among them)::

    or   := and ("or" and)*
    and  := atom ("and" atom)*
    atom := "(" or ")" | key op literal | literal op key
          | key ["not"] "between" literal "and" literal | "(" key ")" ["not"] "in" "(" literal, ... ")"
    op   := "=" | "!=" | "<>" | "<" | "<=" | ">" | ">="

Literals are quoted strings (``'...'`` or ``"..."``, no escapes, as Hive reads them) or integers.
``like`` (a Java regular expression to Hive) and anything else is refused with
:class:`FilterError`: the caller answers a MetaException, and Hive clients then fetch every
partition and filter themselves, never a wrong subset. Column names are checked against the
table's partition columns by the compiler; values only ever become bound parameters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hudi_md.metastore import protocol as P

MAX_FILTER_CHARS = 100_000
MAX_NESTING = 100

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<str>'[^']*'|"[^"]*")
      | (?P<int>-?\d+)(?![\w.])
      | (?P<op><=|>=|<>|!=|=|<|>)
      | (?P<punct>[(),])
      | (?P<word>[A-Za-z0-9_]+)
    )""",
    re.VERBOSE,
)
_FLIP = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}
_OPS = {"=": "eq", "!=": "ne", "<>": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}
_KEYWORDS = frozenset({"and", "or", "not", "between", "in", "like"})


class FilterError(ValueError):
    """A filter string this adapter does not evaluate (the message says what and where)."""


@dataclass(frozen=True)
class _Tok:
    kind: str  # str | int | op | punct | word | end
    text: str
    pos: int

    def word(self) -> str:
        return self.text.lower() if self.kind == "word" else ""


def _tokens(text: str) -> list[_Tok]:
    out: list[_Tok] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise FilterError(f"unexpected character {text[pos:].lstrip()[:1]!r} at {pos} in filter {text!r}")
        kind = m.lastgroup or ""
        out.append(_Tok(kind, m.group(kind), m.start(kind)))
        pos = m.end()
    out.append(_Tok("end", "", len(text)))
    return out


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _tokens(text)
        self.i = 0
        self.depth = 0

    def peek(self, ahead: int = 0) -> _Tok:
        return self.toks[min(self.i + ahead, len(self.toks) - 1)]

    def take(self) -> _Tok:
        tok = self.peek()
        self.i += 1
        return tok

    def fail(self, what: str) -> FilterError:
        tok = self.peek()
        at = f"{tok.text!r} at {tok.pos}" if tok.kind != "end" else "the end"
        return FilterError(f"{what}, found {at} in filter {self.text!r}")

    def expect(self, kind: str, text: str | None = None) -> _Tok:
        tok = self.peek()
        if tok.kind != kind or (text is not None and tok.text.lower() != text):
            raise self.fail(f"expected {text or kind}")
        return self.take()

    def parse(self) -> P.Filter:
        f = self.disjunction()
        if self.peek().kind != "end":
            raise self.fail("expected 'and', 'or' or the end")
        return f

    def disjunction(self) -> P.Filter:
        args = [self.conjunction()]
        while self.peek().word() == "or":
            self.take()
            args.append(self.conjunction())
        return args[0] if len(args) == 1 else P.Filter(op="or", args=args)

    def conjunction(self) -> P.Filter:
        args = [self.atom()]
        while self.peek().word() == "and":
            self.take()
            args.append(self.atom())
        return args[0] if len(args) == 1 else P.Filter(op="and", args=args)

    def atom(self) -> P.Filter:
        tok = self.peek()
        if tok.kind == "punct" and tok.text == "(":
            # "(key) [not] in (...)" or a parenthesized expression
            if (
                self.peek(1).kind == "word"
                and self.peek(2).text == ")"
                and self.peek(3).word() in ("in", "not")
            ):
                self.take()
                key = self.key()
                self.take()
                return self.membership(key)
            self.take()
            self.depth += 1
            if self.depth > MAX_NESTING:
                raise self.fail(f"parentheses nest at most {MAX_NESTING} deep")
            f = self.disjunction()
            self.expect("punct", ")")
            self.depth -= 1
            return f
        if tok.kind in ("str", "int"):
            value = self.literal()
            op = self.operator()
            # op: a str, which pydantic checks against the Literal
            return P.Filter(op=_FLIP[op], column=self.key(), value=value)  # type: ignore[arg-type]
        key = self.key()
        nxt = self.peek().word()
        if nxt in ("between", "not") and (nxt == "between" or self.peek(1).word() == "between"):
            negated = self.take().word() == "not"
            if negated:
                self.take()
            low = self.literal()
            self.expect("word", "and")
            high = self.literal()
            f = P.Filter(
                op="and",
                args=[P.Filter(op="ge", column=key, value=low), P.Filter(op="le", column=key, value=high)],
            )
            return P.Filter(op="not", args=[f]) if negated else f
        if nxt in ("in", "not"):
            return self.membership(key)
        op = self.operator()
        # op: a str, which pydantic checks against the Literal
        return P.Filter(op=op, column=key, value=self.literal())  # type: ignore[arg-type]

    def membership(self, key: str) -> P.Filter:
        negated = self.peek().word() == "not"
        if negated:
            self.take()
        self.expect("word", "in")
        self.expect("punct", "(")
        values = [self.literal()]
        while self.peek().text == ",":
            self.take()
            values.append(self.literal())
        self.expect("punct", ")")
        f = P.Filter(op="in", column=key, values=values)
        return P.Filter(op="not", args=[f]) if negated else f

    def key(self) -> str:
        tok = self.peek()
        if tok.kind != "word" or tok.word() in _KEYWORDS or tok.text[0].isdigit():
            raise self.fail("expected a partition column name")
        return self.take().text

    def operator(self) -> str:
        tok = self.peek()
        if tok.word() == "like":
            raise self.fail("'like' is not supported by the hudi-md metastore (fetch all partitions instead)")
        if tok.kind != "op":
            raise self.fail("expected a comparison operator (= != <> < <= > >=)")
        return _OPS[self.take().text]

    def literal(self) -> str | int:
        tok = self.peek()
        if tok.kind == "str":
            self.take()
            if self.peek().kind == "str":
                raise self.fail("adjacent string literals are not supported")
            return tok.text[1:-1]
        if tok.kind == "int":
            return int(self.take().text)
        raise self.fail("expected a quoted string or an integer")


def parse_filter(text: str) -> P.Filter | None:
    """``text`` (a Hive metastore partition filter) as a :class:`P.Filter`; ``None`` for an empty
    filter (every partition). Raises :class:`FilterError` for what it does not evaluate."""
    if len(text) > MAX_FILTER_CHARS:
        raise FilterError(f"a partition filter has at most {MAX_FILTER_CHARS} characters")
    if not text.strip():
        return None
    return _Parser(text).parse()
