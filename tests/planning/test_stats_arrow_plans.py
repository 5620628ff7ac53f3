"""Plans pruned over the Arrow stats table equal plans pruned by the scalar evaluator, on tables
Hudi wrote (hudi-rs's fixtures: column_stats and partition_stats of ints, decimals, dates,
timestamps, strings), for filters whose literals are the tables' own values and their neighbours."""

from __future__ import annotations

import datetime
import decimal
import random
from typing import Any

import pyarrow as pa
import pytest

import hudi_md
from hudi_md.planning import Expression, and_, is_null, not_null, planner, starts_with, stats_arrow
from hudi_md.planning.filters import from_filters

TABLES = [
    "sample_table/cow/v9_txns_simple_meta.zip",
    "sample_table/cow/v9_txns_complex_meta.zip",
    "sample_table/mor/avro/v9_txns_simple_meta.zip",
    "sample_table/cow/v9_txns_nonpart_meta.zip",
]
_OPS = ["=", "!=", "<", "<=", ">", ">="]


def _neighbour(rng: random.Random, value: Any) -> Any:
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return value + rng.choice([-1, 0, 1])
    if isinstance(value, decimal.Decimal):
        return value + rng.choice([decimal.Decimal("-0.01"), 0, decimal.Decimal("0.01")])
    if isinstance(value, float):
        return value + rng.choice([-0.5, 0.0, 0.5])
    if isinstance(value, datetime.datetime):
        return value + datetime.timedelta(microseconds=rng.choice([-1, 0, 1]))
    if isinstance(value, datetime.date):
        return value + datetime.timedelta(days=rng.choice([-1, 0, 1]))
    if isinstance(value, str):
        return rng.choice([value, value[:-1], value + "0"])
    return value


def _filters(rng: random.Random, rows: pa.Table) -> list[Expression]:
    columns = [
        name
        for name, t in zip(rows.column_names, rows.schema.types, strict=True)
        if not name.startswith("_hoodie") and not pa.types.is_nested(t)
    ]
    data = rows.to_pylist()
    out = []
    for _ in range(60):
        conjuncts: list[Expression] = []
        for _ in range(rng.randint(1, 2)):
            column = rng.choice(columns)
            values = [r[column] for r in data if r[column] is not None]
            if not values:
                continue
            roll = rng.random()
            if roll < 0.1:
                conjuncts.append(rng.choice([is_null, not_null])(column))
            elif roll < 0.3:
                picked = [_neighbour(rng, rng.choice(values)) for _ in range(rng.randint(1, 3))]
                conjuncts.append(from_filters([(column, rng.choice(["in", "not in"]), picked)]))
            elif roll < 0.4 and isinstance(values[0], str):
                conjuncts.append(starts_with(column, rng.choice(values)[: rng.randint(1, 4)]))
            else:
                op = rng.choice(_OPS)
                conjuncts.append(from_filters([(column, op, _neighbour(rng, rng.choice(values)))]))
        if conjuncts:
            expr = conjuncts[0]
            for c in conjuncts[1:]:
                expr = and_(expr, c)
            out.append(expr)
    return out


def _plan_files(path: str, filters: Expression) -> tuple[list[tuple[str, str]], dict]:
    plan = hudi_md.open_table(path).plan(filters)
    return sorted((s.partition_path, s.file_id) for s in plan.slices), plan.counters


@pytest.mark.parametrize("archive", TABLES)
def test_arrow_plans_equal_scalar_plans(archive: str, table_path, monkeypatch) -> None:
    path = str(table_path(archive))
    rows = hudi_md.open_table(path).read()
    decided = []
    original = stats_arrow.arrow_might_match

    def counting(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        decided.append(result is not None)
        return result

    monkeypatch.setattr(planner, "arrow_might_match", counting)
    pruned = 0
    for filters in _filters(random.Random(archive), rows):
        monkeypatch.setattr(planner, "ARROW_MIN_ENTRIES", 10**9)
        expected, scalar_counters = _plan_files(path, filters)
        monkeypatch.setattr(planner, "ARROW_MIN_ENTRIES", 0)
        got, arrow_counters = _plan_files(path, filters)
        assert got == expected, filters
        assert arrow_counters == scalar_counters, filters
        pruned += scalar_counters.get("file_slices", 0) > len(expected)
    assert decided and all(decided), "every one of these filters is decided in Arrow"
    assert pruned > 0, "some filters must prune, or the comparison shows nothing"
