"""The partition paths a filter can select, as keys of the MDT ``files`` partition: exact paths
and path prefixes, found by point and prefix lookups of its sorted keys instead of reading the
table's whole partition list.

The ``files`` partition keys each partition by its path, and a path is built from the partition
values by a fixed rule (:meth:`hudi_md.table.partitions.PartitionScheme.path_of`). So a filter that
pins every partition column to values names the paths themselves, one that pins the leading
columns names a path prefix, and a range on a leading string column bounds a prefix too: every
string between two bounds starts with their common prefix. What the lookups return is a superset
that partition pruning then decides exactly, as it does for the whole list.

Values are turned into paths only where the rule is exact: string and integer columns (Hudi
writes their values as they are), and, with URL encoding on, values with nothing to escape (hudi-md
before 0.2 escaped other characters than Hudi does). Anything else leaves the column unpinned.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from hudi_md.planning.binding import bind
from hudi_md.planning.evaluators import inclusive_projection
from hudi_md.planning.expressions import Expression, LiteralPredicate, Op, Predicate, SetPredicate
from hudi_md.planning.visitors import BooleanExpressionVisitor, visit
from hudi_md.table.partitions import HIVE_DEFAULT_PARTITION, PartitionScheme, escape_path_value, path_part
from hudi_md.table.plan_source import PartitionKeys

__all__ = ["MAX_PARTITION_KEYS", "PartitionKeys", "partition_keys"]

# More exact paths than this are looked up as their common prefixes (or the list is read).
MAX_PARTITION_KEYS = 10_000
# A filter whose disjunctive form has more terms than this is not turned into keys.
_MAX_TERMS = 64


class _TooComplex(Exception):
    pass


Conjunction = list[Predicate]


class _DisjunctiveForm(BooleanExpressionVisitor[list[Conjunction]]):
    """The filter as an OR of ANDs of predicates (bounded in size)."""

    def visit_true(self) -> list[Conjunction]:
        return [[]]

    def visit_false(self) -> list[Conjunction]:
        return []

    def visit_not(self, child_result: list[Conjunction]) -> list[Conjunction]:
        raise AssertionError("bound expressions have no Not")

    def visit_and(self, left_result: list[Conjunction], right_result: list[Conjunction]) -> list[Conjunction]:
        if len(left_result) * len(right_result) > _MAX_TERMS:
            raise _TooComplex
        return [a + b for a in left_result for b in right_result]

    def visit_or(self, left_result: list[Conjunction], right_result: list[Conjunction]) -> list[Conjunction]:
        if len(left_result) + len(right_result) > _MAX_TERMS:
            raise _TooComplex
        return left_result + right_result

    def visit_predicate(self, predicate: Predicate) -> list[Conjunction]:
        return [[predicate]]


def partition_keys(
    expr: Expression, scheme: PartitionScheme, partition_schema: pa.Schema
) -> PartitionKeys | None:
    """The ``files`` keys holding every partition ``expr`` may select, or None when the filter
    does not narrow them (the partition list is needed)."""
    if not scheme.is_identity or not scheme.fields:
        return None
    bound = bind(inclusive_projection(expr, partition_schema.names), partition_schema)
    try:
        terms = visit(bound, _DisjunctiveForm())
    except _TooComplex:
        return None
    paths: set[str] = set()
    prefixes: set[str] = set()
    for term in terms:
        keys = _term_keys(term, scheme, partition_schema)
        if keys is None:
            return None
        paths.update(keys.paths)
        prefixes.update(keys.prefixes)
    # a path under a prefix being scanned needs no lookup of its own
    reduced = sorted(p for p in prefixes if not any(p != q and p.startswith(q) for q in prefixes))
    exact = sorted(p for p in paths if not any(p.startswith(q) for q in reduced))
    return PartitionKeys(tuple(exact), tuple(reduced))


def _term_keys(term: Conjunction, scheme: PartitionScheme, schema: pa.Schema) -> PartitionKeys | None:
    values: dict[str, set[str]] = {}
    lows: dict[str, str] = {}
    highs: dict[str, str] = {}
    starts: dict[str, str] = {}
    for p in term:
        name = p.column
        field = schema.field(name)
        if isinstance(p, LiteralPredicate) and p.op is Op.EQ:
            text = _path_value(p.value, field.type, scheme)
            if text is not None:
                values[name] = values[name] & {text} if name in values else {text}
        elif isinstance(p, SetPredicate) and p.op is Op.IN:
            texts = {_path_value(v, field.type, scheme) for v in p.values}
            if None not in texts:
                given = {t for t in texts if t is not None}
                values[name] = values[name] & given if name in values else given
        elif isinstance(p, LiteralPredicate) and _is_string(field.type) and isinstance(p.value, str):
            if p.op is Op.STARTS_WITH:
                starts[name] = max(starts.get(name, ""), p.value, key=len)
            elif p.op in (Op.GT, Op.GE):
                lows[name] = max(lows.get(name, p.value), p.value)
            elif p.op in (Op.LT, Op.LE):
                highs[name] = min(highs.get(name, p.value), p.value)
    patterns = [""]
    fields = scheme.fields
    for i, name in enumerate(fields):
        last = i == len(fields) - 1
        pinned = values.get(name)
        if pinned is not None:
            if not pinned:
                return PartitionKeys((), ())  # contradictory values: nothing matches
            if len(patterns) * len(pinned) > MAX_PARTITION_KEYS:
                break
            patterns = [
                p
                + path_part(name, v, hive_style=scheme.hive_style, url_encode=scheme.url_encoded)
                + ("" if last else "/")
                for p in patterns
                for v in sorted(pinned)
            ]
            if last:
                return PartitionKeys(tuple(patterns), ())
            continue
        prefix = starts.get(name, "")
        if name in lows and name in highs:
            common = _common_prefix(lows[name], highs[name])
            prefix = common if len(common) > len(prefix) else prefix
        if prefix and _path_value(prefix, schema.field(name).type, scheme) is not None:
            head = f"{name}=" if scheme.hive_style else ""
            text = escape_path_value(prefix) if scheme.url_encoded else prefix
            patterns = [p + head + text for p in patterns]
        break
    if patterns == [""]:
        return None
    return PartitionKeys((), tuple(patterns))


def _common_prefix(a: str, b: str) -> str:
    n = 0
    while n < len(a) and n < len(b) and a[n] == b[n]:
        n += 1
    return a[:n]


def _is_string(arrow_type: pa.DataType) -> bool:
    return pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type)


def _path_value(value: Any, arrow_type: pa.DataType, scheme: PartitionScheme) -> str | None:
    """The value as its partition path writes it, when that is certain."""
    if _is_string(arrow_type) and isinstance(value, str):
        text = value
    elif pa.types.is_integer(arrow_type) and isinstance(value, int) and not isinstance(value, bool):
        text = str(value)
    else:
        return None
    if text == HIVE_DEFAULT_PARTITION:
        return None  # the null partition's name: pruning decides what it holds
    if scheme.url_encoded and (escape_path_value(text) != text or not text.isascii()):
        return None
    return text
