from __future__ import annotations

import datetime
import random
import threading
from collections import defaultdict
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pytest
from filter_gen import SCHEMA, matches, random_expression, random_table, reference

from hudi_md.errors import InvalidOptionError
from hudi_md.planning import (
    IN_PREDICATE_LIMIT,
    ROWS_CANNOT_MATCH,
    ROWS_MIGHT_MATCH,
    AlwaysFalse,
    AlwaysTrue,
    ColumnStats,
    ColumnStatsLike,
    Not,
    bind,
    equal_to,
    from_filters,
    fully_answered_by_partitions,
    greater_than,
    greater_than_or_equal,
    inclusive_projection,
    is_in,
    is_null,
    less_than,
    less_than_or_equal,
    not_equal_to,
    not_in,
    not_null,
    not_starts_with,
    partition_evaluator,
    referenced_columns,
    row_evaluator,
    starts_with,
    stats_evaluator,
    to_arrow_expression,
)

SEED = 20240601
CASES = 300

D = datetime.date


# --------------------------------------------------------------------------- property tests


def test_arrow_filter_matches_python_reference() -> None:
    rng = random.Random(SEED)
    for case in range(CASES):
        table = random_table(rng, rng.randint(0, 25))
        expr = random_expression(rng)
        expected = [matches(expr, row) for row in table.to_pylist()]
        mask = row_evaluator(expr, SCHEMA)(table)
        assert mask.null_count == 0
        assert mask.to_pylist() == expected, f"case {case}: {expr}"
        filtered = table.filter(to_arrow_expression(bind(expr, SCHEMA)))
        assert filtered.num_rows == sum(expected), f"case {case}: {expr}"


def test_bind_and_rewrite_not_select_the_same_rows() -> None:
    # bind() rewrites NOT, coerces, rounds and folds; none of it may change which rows match.
    rng = random.Random(SEED + 1)
    for case in range(CASES):
        rows = random_table(rng, 20).to_pylist()
        expr = random_expression(rng)
        bound = bind(expr, SCHEMA)
        assert "Not(" not in repr(bound)
        for row in rows:
            assert matches(bound, row) == matches(expr, row), f"case {case}: {expr} on {row}"


def test_negation_is_the_exact_complement() -> None:
    rng = random.Random(SEED + 2)
    for case in range(CASES):
        expr = random_expression(rng)
        no_nulls = random_table(rng, 20, null_rate=0.0)
        yes = row_evaluator(expr, SCHEMA)(no_nulls).to_pylist()
        no = row_evaluator(~expr, SCHEMA)(no_nulls).to_pylist()
        assert [a != b for a, b in zip(yes, no, strict=True)] == [True] * len(yes), f"case {case}: {expr}"
        assert row_evaluator(Not(expr), SCHEMA)(no_nulls).to_pylist() == no
        # With nulls, SQL leaves some rows in neither, but never in both.
        with_nulls = random_table(rng, 20, null_rate=0.3)
        yes = row_evaluator(expr, SCHEMA)(with_nulls).to_pylist()
        no = row_evaluator(~expr, SCHEMA)(with_nulls).to_pylist()
        assert not any(a and b for a, b in zip(yes, no, strict=True)), f"case {case}: {expr}"
        for row in with_nulls.to_pylist():
            r, nr = reference(expr, row), reference(~expr, row)
            assert nr == (None if r is None else not r)


PARTITION_SCHEMA = pa.schema([SCHEMA.field("s"), SCHEMA.field("d")])


def test_partition_pruning_is_sound() -> None:
    rng = random.Random(SEED + 3)
    pruned = exact_checked = 0
    for case in range(CASES):
        table = random_table(rng, 40)
        expr = random_expression(rng)
        keep = partition_evaluator(expr, PARTITION_SCHEMA)
        exact = fully_answered_by_partitions(expr, PARTITION_SCHEMA.names)
        groups: dict[tuple[Any, Any], list[dict[str, Any]]] = defaultdict(list)
        for row in table.to_pylist():
            groups[(row["s"], row["d"])].append(row)
        for (s, d), rows in groups.items():
            kept = keep({"s": s, "d": d})
            if not kept:
                pruned += 1
                assert not any(matches(expr, r) for r in rows), f"case {case}: {expr} pruned {(s, d)}"
            if exact:
                # Only partition columns are tested, so every row of the partition agrees.
                exact_checked += 1
                assert kept == matches(expr, rows[0]), f"case {case}: {expr} on {(s, d)}"
    # Guard against a vacuous pass (an evaluator that never prunes).
    assert pruned > CASES
    assert exact_checked > CASES


def _file_stats(rng: random.Random, rows: list[dict[str, Any]]) -> dict[str, ColumnStatsLike]:
    stats: dict[str, ColumnStatsLike] = {}
    for name in SCHEMA.names:
        if rng.random() < 0.1:
            continue  # no stats record for this column
        values = [r[name] for r in rows]
        present = [v for v in values if v is not None]
        fields = {
            "min_value": min(present) if present else None,
            "max_value": max(present) if present else None,
            "null_count": len(values) - len(present),
            "value_count": len(values),
        }
        if rng.random() < 0.15:
            fields[rng.choice(list(fields))] = None  # partially unknown
        stats[name] = ColumnStats(**fields)
    return stats


def test_stats_pruning_is_sound() -> None:
    rng = random.Random(SEED + 4)
    pruned = 0
    for case in range(CASES):
        rows = random_table(rng, 40).to_pylist()
        expr = random_expression(rng)
        keep = stats_evaluator(expr, SCHEMA)
        start = 0
        while start < len(rows):
            size = rng.choice([0, 1, 2, 3, 5, 8])
            chunk = rows[start : start + size]  # size 0: empty files exist too
            start += size
            file_stats = _file_stats(rng, chunk)
            if keep(file_stats) is ROWS_CANNOT_MATCH:
                pruned += 1
                assert not any(matches(expr, r) for r in chunk), f"case {case}: {expr} pruned {file_stats}"
    assert pruned > CASES


# --------------------------------------------------------------------------- Arrow


def _table() -> pa.Table:
    return pa.table(
        {
            "a": pa.array([1, 2, None, 4], pa.int32()),
            "s": pa.array(["ab", "b", None, "abc"]),
            "d": pa.array([D(2024, 1, 1), None, D(2024, 1, 3), D(2024, 1, 4)], pa.date32()),
        }
    )


def _select(expr: Any, table: pa.Table | None = None) -> list[int]:
    table = table if table is not None else _table()
    mask = row_evaluator(expr, table.schema)(table).to_pylist()
    return [i for i, hit in enumerate(mask) if hit]


def test_not_equal_and_not_in_do_not_select_nulls() -> None:
    assert _select(not_equal_to("a", 2)) == [0, 3]
    assert _select(not_in("a", [2, 4])) == [0]
    assert _select(~is_in("a", [2, 4])) == [0]
    assert _select(Not(is_in("a", [2, 4]))) == [0]
    assert _select(not_starts_with("s", "a")) == [1]
    assert _select(Not(starts_with("s", "a"))) == [1]


def test_null_tests_and_kleene_or() -> None:
    assert _select(is_null("a")) == [2]
    assert _select(not_null("a")) == [0, 1, 3]
    # Row 2: a is null (true) OR s = "x" (unknown) is true.
    assert _select(is_null("a") | equal_to("s", "x")) == [2]
    assert _select(Not(is_null("a") & equal_to("s", "x"))) == [0, 1, 3]


def test_arrow_expression_works_as_dataset_filter() -> None:
    table = _table()
    expr = to_arrow_expression(bind(from_filters([("d", ">=", "2024-01-03")]), table.schema))
    assert ds.dataset(table).to_table(filter=expr).column("a").to_pylist() == [None, 4]


def test_arrow_dictionary_and_binary_columns() -> None:
    table = pa.table(
        {
            "p": pa.array(["x1", "y", None, "x2"]).dictionary_encode(),
            "f": pa.array([b"ab", b"cd", None, b"ax"], pa.binary(2)),
            "r": pa.array([0.5, float("nan"), None, 2.0], pa.float32()),
        }
    )
    assert _select(starts_with("p", "x"), table) == [0, 3]
    assert _select(equal_to("p", "y"), table) == [1]
    assert _select(is_in("p", ["y", "x2"]), table) == [1, 3]
    assert _select(starts_with("f", "a"), table) == [0, 3]
    assert _select(equal_to("f", "cd"), table) == [1]
    # A float32 column is compared in float64, so 0.5 matches exactly and 0.1 is not rounded.
    assert _select(equal_to("r", 0.5), table) == [0]
    assert _select(less_than("r", 0.6), table) == [0]


def test_to_arrow_expression_needs_bound_expression() -> None:
    with pytest.raises(InvalidOptionError, match=r"'a'.*not bound"):
        to_arrow_expression(equal_to("a", 1))
    assert str(to_arrow_expression(AlwaysTrue())) == "true"


def test_row_evaluator_on_empty_table() -> None:
    empty = _table().slice(0, 0)
    assert row_evaluator(equal_to("a", 1), empty.schema)(empty).to_pylist() == []


# --------------------------------------------------------------------------- partitions

PARTS = pa.schema(
    [pa.field("dt", pa.date32()), pa.field("region", pa.string()), pa.field("bucket", pa.int32())]
)


def _keep(expr: Any, **values: Any) -> bool:
    return partition_evaluator(expr, PARTS)(values)


def test_partition_evaluator_prunes_on_partition_columns() -> None:
    expr = from_filters([("dt", ">=", "2024-01-02"), ("region", "in", ["eu", "us"])])
    assert _keep(expr, dt=D(2024, 1, 2), region="eu", bucket=1)
    assert not _keep(expr, dt=D(2024, 1, 1), region="eu", bucket=1)
    assert not _keep(expr, dt=D(2024, 1, 5), region="apac", bucket=1)


def test_partition_evaluator_never_prunes_on_data_columns() -> None:
    data_only = equal_to("amount", 5)
    assert _keep(data_only, dt=D(2024, 1, 1), region="eu", bucket=1)
    # Under NOT, treating the unknown predicate as true before pushing NOT down would prune.
    assert _keep(Not(data_only), dt=D(2024, 1, 1), region="eu", bucket=1)
    assert _keep(Not(data_only & equal_to("region", "eu")), dt=D(2024, 1, 1), region="eu", bucket=1)
    assert not _keep(Not(data_only | equal_to("region", "eu")), dt=D(2024, 1, 1), region="eu", bucket=1)


def test_partition_evaluator_default_partition_is_null() -> None:
    assert not _keep(equal_to("region", "eu"), region=None)
    assert not _keep(not_equal_to("region", "eu"), region=None)
    assert not _keep(not_in("region", ["eu", "us"]), region=None)
    assert not _keep(not_starts_with("region", "e"), region=None)
    assert _keep(is_null("region"), region=None)
    assert not _keep(not_null("region"), region=None)
    assert not _keep(is_null("region"), region="eu")


def test_partition_evaluator_unknown_or_mistyped_values_keep() -> None:
    assert _keep(equal_to("region", "eu"))  # no value for region at all
    assert _keep(is_null("region"))
    assert _keep(not_null("region"))
    # Value not parsed to the partition schema's type: keep rather than compare str with date.
    assert _keep(equal_to("dt", "2024-01-01"), dt="2024/01/01")
    assert _keep(less_than("bucket", 3), bucket="7")
    assert _keep(is_in("bucket", [1, 2]), bucket="7")
    assert _keep(starts_with("region", "e"), region=5)


def test_partition_evaluator_each_operator() -> None:
    values = {"dt": D(2024, 1, 2), "region": "eu-west", "bucket": 3}
    cases = [
        (equal_to("bucket", 3), True),
        (equal_to("bucket", 4), False),
        (not_equal_to("bucket", 3), False),
        (less_than("bucket", 3), False),
        (less_than_or_equal("bucket", 3), True),
        (greater_than("bucket", 3), False),
        (greater_than_or_equal("bucket", 3.5), False),
        (greater_than_or_equal("bucket", 2.5), True),
        (starts_with("region", "eu"), True),
        (starts_with("region", "us"), False),
        (not_starts_with("region", "eu"), False),
        (is_in("region", ["eu-west", "us"]), True),
        (not_in("region", ["eu-west", "us"]), False),
        (equal_to("dt", "2024-01-02"), True),
        (equal_to("dt", datetime.datetime(2024, 1, 2, 12)), False),
    ]
    for expr, expected in cases:
        assert partition_evaluator(expr, PARTS)(values) is expected, expr


def test_partition_evaluator_rejects_bad_literal_on_partition_column() -> None:
    with pytest.raises(InvalidOptionError, match=r"'dt'"):
        partition_evaluator(equal_to("dt", "yesterday"), PARTS)


def test_partition_evaluator_case_insensitive() -> None:
    keep = partition_evaluator(equal_to("REGION", "eu"), PARTS, case_sensitive=False)
    assert not keep({"region": "us"})
    # Case-sensitive, REGION is not a partition column: projected away, so nothing is pruned.
    assert partition_evaluator(equal_to("REGION", "eu"), PARTS)({"region": "us"})


def test_projection_and_partition_helpers() -> None:
    expr = equal_to("region", "eu") & (less_than("amount", 3) | is_null("dt"))
    assert referenced_columns(expr) == {"region", "amount", "dt"}
    assert inclusive_projection(expr, ["region", "dt"]) == equal_to("region", "eu")
    # NOT(region = eu AND x) = region != eu OR NOT x: the unknown side keeps everything.
    assert inclusive_projection(Not(expr), ["region"]) == AlwaysTrue()
    either = equal_to("region", "eu") | less_than("amount", 3)
    assert inclusive_projection(Not(either), ["region"]) == not_equal_to("region", "eu")
    assert inclusive_projection(AlwaysFalse(), ["region"]) == AlwaysFalse()
    assert not fully_answered_by_partitions(expr, ["region", "dt"])
    assert fully_answered_by_partitions(equal_to("region", "eu") | is_null("dt"), ["region", "dt"])
    assert fully_answered_by_partitions(AlwaysTrue(), [])
    assert fully_answered_by_partitions(equal_to("REGION", "eu"), ["region"], case_sensitive=False)
    assert not fully_answered_by_partitions(equal_to("REGION", "eu"), ["region"])


# --------------------------------------------------------------------------- column stats

STATS_SCHEMA = pa.schema(
    [
        pa.field("a", pa.int64()),
        pa.field("s", pa.string()),
        pa.field("d", pa.date32()),
        pa.field("x", pa.float64()),
        pa.field("m", pa.decimal128(10, 2)),
    ]
)


def _might(expr: Any, **stats: ColumnStats) -> bool:
    return stats_evaluator(expr, STATS_SCHEMA)(stats)


A = ColumnStats(min_value=10, max_value=20, null_count=0, value_count=100)


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        (equal_to("a", 5), False),
        (equal_to("a", 10), True),
        (equal_to("a", 25), False),
        (less_than("a", 10), False),
        (less_than("a", 11), True),
        (less_than_or_equal("a", 10), True),
        (less_than_or_equal("a", 9), False),
        (greater_than("a", 20), False),
        (greater_than("a", 19), True),
        (greater_than_or_equal("a", 20), True),
        (greater_than_or_equal("a", 21), False),
        (not_equal_to("a", 15), True),
        (is_in("a", [1, 2, 30]), False),
        (is_in("a", [1, 15]), True),
        (not_in("a", [10, 20]), True),
        (is_null("a"), False),
        (not_null("a"), True),
        (greater_than("a", 10.5), True),  # rounds to a >= 11
        (less_than("a", 9.5), False),
    ],
)
def test_stats_bounds(expr: Any, expected: bool) -> None:
    assert _might(expr, a=A) is expected


def test_stats_missing_or_partial_stats_might_match() -> None:
    assert _might(equal_to("a", 5)) is ROWS_MIGHT_MATCH  # no record for the column
    assert _might(equal_to("a", 5), a=ColumnStats()) is ROWS_MIGHT_MATCH
    assert _might(less_than("a", 5), a=ColumnStats(max_value=20)) is ROWS_MIGHT_MATCH
    assert _might(less_than("a", 5), a=ColumnStats(min_value=10)) is ROWS_CANNOT_MATCH
    assert _might(greater_than("a", 25), a=ColumnStats(min_value=10)) is ROWS_MIGHT_MATCH
    assert _might(is_null("a"), a=ColumnStats(min_value=1)) is ROWS_MIGHT_MATCH
    assert _might(not_null("a"), a=ColumnStats(null_count=5)) is ROWS_MIGHT_MATCH


def test_stats_null_counts() -> None:
    only_nulls = ColumnStats(null_count=7, value_count=7)
    some_nulls = ColumnStats(min_value=1, max_value=1, null_count=3, value_count=7)
    assert _might(is_null("a"), a=only_nulls) is ROWS_MIGHT_MATCH
    assert _might(not_null("a"), a=only_nulls) is ROWS_CANNOT_MATCH
    assert _might(not_equal_to("a", 3), a=only_nulls) is ROWS_CANNOT_MATCH
    assert _might(not_in("a", [3, 4]), a=only_nulls) is ROWS_CANNOT_MATCH
    assert _might(not_starts_with("s", "x"), s=only_nulls) is ROWS_CANNOT_MATCH
    assert _might(is_null("a"), a=some_nulls) is ROWS_MIGHT_MATCH
    # Nulls never satisfy !=, so a file of 1s and nulls has no row with a != 1.
    assert _might(not_equal_to("a", 1), a=some_nulls) is ROWS_CANNOT_MATCH
    assert _might(not_in("a", [1, 2]), a=some_nulls) is ROWS_CANNOT_MATCH
    assert _might(not_in("a", [2, 3]), a=some_nulls) is ROWS_MIGHT_MATCH
    empty_file = ColumnStats(null_count=0, value_count=0)
    for expr in (is_null("a"), not_null("a"), equal_to("a", 1)):
        assert _might(expr, a=empty_file) is ROWS_CANNOT_MATCH


def test_stats_large_in_lists_are_not_checked() -> None:
    far = list(range(1000, 1000 + IN_PREDICATE_LIMIT))
    assert _might(is_in("a", far), a=A) is ROWS_CANNOT_MATCH
    assert _might(is_in("a", [*far, 5000]), a=A) is ROWS_MIGHT_MATCH


def test_stats_starts_with() -> None:
    s = ColumnStats(min_value="apple", max_value="banana", null_count=0, value_count=9)
    assert _might(starts_with("s", "b"), s=s) is ROWS_MIGHT_MATCH
    assert _might(starts_with("s", "ap"), s=s) is ROWS_MIGHT_MATCH
    assert _might(starts_with("s", "apple-pie"), s=s) is ROWS_MIGHT_MATCH
    assert _might(starts_with("s", "aa"), s=s) is ROWS_CANNOT_MATCH
    assert _might(starts_with("s", "bb"), s=s) is ROWS_CANNOT_MATCH
    assert _might(starts_with("s", "c"), s=s) is ROWS_CANNOT_MATCH
    assert _might(not_starts_with("s", "a"), s=s) is ROWS_MIGHT_MATCH
    same_prefix = ColumnStats(min_value="ab1", max_value="ab9", null_count=2, value_count=9)
    assert _might(not_starts_with("s", "ab"), s=same_prefix) is ROWS_CANNOT_MATCH
    assert _might(not_starts_with("s", "ab1"), s=same_prefix) is ROWS_MIGHT_MATCH


def test_stats_floats_never_prune_where_nan_could_match() -> None:
    x = ColumnStats(min_value=1.0, max_value=2.0, null_count=0, value_count=5)
    assert _might(greater_than("x", 5.0), x=x) is ROWS_MIGHT_MATCH
    assert _might(greater_than_or_equal("x", 5.0), x=x) is ROWS_MIGHT_MATCH
    assert _might(not_equal_to("x", 1.0), x=ColumnStats(1.0, 1.0, 0, 5)) is ROWS_MIGHT_MATCH
    assert _might(less_than("x", 0.5), x=x) is ROWS_CANNOT_MATCH
    assert _might(equal_to("x", 5.0), x=x) is ROWS_CANNOT_MATCH
    nan_bounds = ColumnStats(min_value=float("nan"), max_value=float("nan"), null_count=0, value_count=5)
    assert _might(less_than("x", 0.5), x=nan_bounds) is ROWS_MIGHT_MATCH
    assert _might(equal_to("x", 0.5), x=nan_bounds) is ROWS_MIGHT_MATCH


def test_stats_incomparable_types_might_match() -> None:
    # Dates stored as epoch days, decimals as strings: never prune on a type mismatch.
    assert _might(equal_to("d", D(2024, 1, 1)), d=ColumnStats(0, 10, 0, 5)) is ROWS_MIGHT_MATCH
    assert _might(equal_to("m", Decimal("1.5")), m=ColumnStats("9.00", "9.99", 0, 5)) is ROWS_MIGHT_MATCH
    assert _might(is_in("s", ["a", "b"]), s=ColumnStats(b"x", b"y", 0, 5)) is ROWS_MIGHT_MATCH
    naive = datetime.datetime(2024, 1, 1)
    ts_schema = pa.schema([pa.field("t", pa.timestamp("us", tz="UTC"))])
    keep = stats_evaluator(less_than("t", naive), ts_schema)
    assert keep({"t": ColumnStats(naive, naive, 0, 1)}) is ROWS_MIGHT_MATCH  # naive vs aware
    aware = naive.replace(tzinfo=datetime.timezone.utc)
    assert keep({"t": ColumnStats(aware, aware, 0, 1)}) is ROWS_CANNOT_MATCH


def test_stats_mixed_numeric_types_compare() -> None:
    # Decimal stats against an integer literal, int stats against a decimal column's literal.
    assert (
        _might(equal_to("m", 5), m=ColumnStats(Decimal("6.00"), Decimal("9.00"), 0, 5)) is ROWS_CANNOT_MATCH
    )
    assert _might(equal_to("m", Decimal("6.5")), m=ColumnStats(6, 9, 0, 5)) is ROWS_MIGHT_MATCH
    assert _might(equal_to("a", 5), a=ColumnStats(6.0, 9.0, 0, 5)) is ROWS_CANNOT_MATCH


def test_stats_evaluator_binds_once_and_is_thread_safe() -> None:
    keep = stats_evaluator(from_filters([("a", ">", 15), ("d", "=", "2024-01-02")]), STATS_SCHEMA)
    d_hit = ColumnStats(D(2024, 1, 1), D(2024, 1, 3), 0, 5)
    d_miss = ColumnStats(D(2024, 2, 1), D(2024, 2, 3), 0, 5)
    results: list[bool] = []

    def work() -> None:
        for _ in range(200):
            results.append(keep({"a": A, "d": d_hit}) and not keep({"a": A, "d": d_miss}))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [True] * 800


def test_stats_evaluator_accepts_any_object_with_the_fields() -> None:
    class Record:
        def __init__(self) -> None:
            self.min_value, self.max_value, self.null_count, self.value_count = 10, 20, 0, 3

    record = Record()
    assert isinstance(record, ColumnStatsLike)
    assert stats_evaluator(equal_to("a", 50), STATS_SCHEMA)({"a": record}) is ROWS_CANNOT_MATCH


def test_stats_evaluator_errors_name_the_column() -> None:
    with pytest.raises(InvalidOptionError, match=r"'nope'"):
        stats_evaluator(equal_to("nope", 1), STATS_SCHEMA)
    with pytest.raises(InvalidOptionError, match=r"'a'"):
        stats_evaluator(equal_to("a", "ten"), STATS_SCHEMA)
