"""Scan planning: filter expressions and the evaluators that prune partitions and files.

Typical use::

    expr = from_filters([("dt", ">=", "2024-01-01"), ("city", "in", ["Oslo", "Lima"])])
    keep_partition = partition_evaluator(expr, partition_schema)
    keep_file = stats_evaluator(expr, table_schema)
    rows = table.filter(to_arrow_expression(bind(expr, table_schema)))
"""

from __future__ import annotations

from hudi_md.planning.binding import bind
from hudi_md.planning.evaluators import (
    IN_PREDICATE_LIMIT,
    ROWS_CANNOT_MATCH,
    ROWS_MIGHT_MATCH,
    ColumnStats,
    ColumnStatsLike,
    FileColumnStats,
    fully_answered_by_partitions,
    inclusive_projection,
    partition_evaluator,
    row_evaluator,
    stats_evaluator,
    to_arrow_expression,
)
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
    Reference,
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
from hudi_md.planning.filter_text import parse_filter_text
from hudi_md.planning.filters import from_filters, from_json, to_json
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
    "AlwaysFalse",
    "AlwaysTrue",
    "And",
    "BooleanExpressionVisitor",
    "BoundBooleanExpressionVisitor",
    "BoundReference",
    "ColumnStats",
    "ColumnStatsLike",
    "Expression",
    "FileColumnStats",
    "LiteralPredicate",
    "Not",
    "Op",
    "Or",
    "Predicate",
    "Reference",
    "SetPredicate",
    "UnaryPredicate",
    "and_",
    "bind",
    "equal_to",
    "from_filters",
    "from_json",
    "fully_answered_by_partitions",
    "greater_than",
    "greater_than_or_equal",
    "inclusive_projection",
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
    "parse_filter_text",
    "partition_evaluator",
    "referenced_columns",
    "rewrite_not",
    "row_evaluator",
    "starts_with",
    "stats_evaluator",
    "to_arrow_expression",
    "to_json",
    "visit",
]
