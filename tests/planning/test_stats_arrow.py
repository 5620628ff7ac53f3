"""The Arrow stats evaluator gives the scalar stats evaluator's answer for every entry.

The oracle is ``stats_evaluator`` (the per-entry Python visitor the planner used before): over
many generated statistics rows (ints, floats with NaN, strings, bytes, dates, decimals,
timestamps, booleans, nulls, missing columns, bounds of the wrong kind or that Arrow cannot hold
exactly) and generated filters, every answer must be equal.
"""

from __future__ import annotations

import contextlib
import datetime
import random
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from hudi_md.planning import (
    AlwaysFalse,
    AlwaysTrue,
    Expression,
    Not,
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
from hudi_md.planning.evaluators import IN_PREDICATE_LIMIT, ColumnStats, stats_evaluator
from hudi_md.planning.stats_arrow import (
    StatsTable,
    arrow_might_match,
    build_stats_table,
    entry_rows,
    rows_to_keep,
)

UTC = datetime.timezone.utc

SCHEMA = pa.schema(
    [
        pa.field("i", pa.int64()),
        pa.field("t8", pa.int8()),
        pa.field("u", pa.uint64()),
        pa.field("f", pa.float64()),
        pa.field("f32", pa.float32()),
        pa.field("s", pa.string()),
        pa.field("ds", pa.dictionary(pa.int32(), pa.string())),
        pa.field("bin", pa.binary()),
        pa.field("fb", pa.binary(3)),
        pa.field("d", pa.date32()),
        pa.field("dec", pa.decimal128(9, 2)),
        pa.field("ts", pa.timestamp("us")),
        pa.field("tz", pa.timestamp("ms", tz="UTC")),
        pa.field("flag", pa.bool_()),
        pa.field("tm", pa.time64("us")),  # no comparisons bind; counts only
        pa.field("req", pa.int32(), nullable=False),
    ]
)

_D0 = datetime.date(2024, 1, 1)
_T0 = datetime.datetime(2024, 1, 1, 12, 0, 0)
_STRINGS = ["", "a", "ab", "abc", "abd", "b", "ba", "B", "é", "éa", "日本", "\U0001f600", "zz"]
_BYTES = [b"", b"a", b"ab", b"abc", b"\x00", b"\xff\x00", b"abd", b"b"]


def _native(rng: random.Random, column: str) -> Any:
    """A value of the column's own kind, as the MDT reader decodes it."""
    if column == "i":
        return rng.choice([rng.randint(-50, 50), 2**63 - 1, -(2**63)])
    if column in ("t8", "req"):
        return rng.randint(-130, 130)  # also beyond int8's range
    if column == "u":
        return rng.choice([rng.randint(0, 50), 2**64 - 1, 2**63])
    if column in ("f", "f32"):
        return rng.choice(
            [rng.uniform(-50, 50), float(rng.randint(-50, 50)), float("nan"), float("inf"), -0.0, 0.0]
        )
    if column in ("s", "ds"):
        return rng.choice(_STRINGS)
    if column in ("bin", "fb"):
        return rng.choice([*_BYTES, b"abc", b"xyz"])
    if column == "d":
        return _D0 + datetime.timedelta(days=rng.randint(-20, 20))
    if column == "dec":
        return Decimal(rng.randint(-5000, 5000)).scaleb(-2)
    if column == "ts":
        return _T0 + datetime.timedelta(seconds=rng.randint(-100, 100), microseconds=rng.choice([0, 7]))
    if column == "tz":
        return (_T0 + datetime.timedelta(seconds=rng.randint(-100, 100))).replace(tzinfo=UTC)
    if column == "flag":
        return rng.random() < 0.5
    if column == "tm":
        return datetime.time(rng.randint(0, 23))
    return rng.randint(0, 9)  # a column the schema does not have


def _odd(rng: random.Random, column: str) -> Any:
    """A bound the scalar evaluator sees rarely: another kind, NaN, or one Arrow cannot hold."""
    return rng.choice(
        [
            "abc",
            b"ab",
            bytearray(b"ab"),
            7,
            7.5,
            2**70,
            2**53 + 1,
            Decimal("1.005"),
            Decimal("NaN"),
            Decimal("Infinity"),
            float("nan"),
            True,
            _D0,
            _T0,
            _T0.replace(tzinfo=UTC),
            datetime.time(1),
            "\ud800",  # a lone surrogate: not UTF-8
            [1, 2],
        ]
    )


def _bound(rng: random.Random, column: str) -> Any:
    roll = rng.random()
    if roll < 0.1:
        return None
    if roll < 0.2:
        return _odd(rng, column)
    return _native(rng, column)


def _count(rng: random.Random) -> Any:
    roll = rng.random()
    if roll < 0.1:
        return None
    if roll < 0.13:
        return rng.choice([True, 1.0, 2**64])
    return rng.randint(0, 5)


@dataclass(frozen=True)
class Stat:
    """One statistics record, as ``metadata.reader.ColumnStat`` has it."""

    entry: int
    column_name: str
    min_value: Any
    max_value: Any
    null_count: Any
    value_count: Any


def _random_stats(rng: random.Random, entries: int) -> list[Stat]:
    out = []
    for entry in range(entries):
        for column in [*SCHEMA.names, "not_in_schema"]:
            if rng.random() < 0.25:
                continue  # missing stats for this column
            lo, hi = _bound(rng, column), _bound(rng, column)
            if rng.random() < 0.7:
                with contextlib.suppress(TypeError, ArithmeticError):
                    lo, hi = min(lo, hi), max(lo, hi)  # mostly ordered, like real stats
            if rng.random() < 0.1:
                hi = lo
            count = _count(rng)
            nulls = count if rng.random() < 0.1 else _count(rng)
            out.append(Stat(entry, column, lo, hi, nulls, count))
    # an entry with stats of an unknown column only, and one with no stats at all
    out = [s for s in out if s.entry not in (0, 1)]
    out.append(Stat(0, "not_in_schema", 1, 2, 0, 3))
    rng.shuffle(out)
    return out


def _literal(rng: random.Random, column: str) -> Any:
    if rng.random() < 0.1 and column in ("i", "t8", "u", "req"):
        return rng.choice([2.5, -1000, 10**30, float("inf"), "7", Decimal("3.5")])
    if rng.random() < 0.1 and column in ("f", "f32"):
        return rng.choice([float("nan"), 2**53 + 1, "1.5"])
    if rng.random() < 0.1 and column == "dec":
        return rng.choice([Decimal("1.005"), 10**12, 0.1])
    if rng.random() < 0.1 and column == "d":
        return rng.choice([_T0, "2024-01-03"])
    if column == "tm":
        return None
    value = _native(rng, column)
    if column in ("f", "f32") and value != value:
        return 1.0
    return value


_COMPARISONS = [equal_to, not_equal_to, less_than, less_than_or_equal, greater_than, greater_than_or_equal]


def _predicate(rng: random.Random) -> Expression:
    column = rng.choice(SCHEMA.names)
    roll = rng.random()
    if roll < 0.12 or column == "tm":
        return rng.choice([is_null, not_null])(column)
    if roll < 0.3 and column in ("s", "ds", "bin", "fb"):
        prefix: Any = rng.choice(["a", "ab", "é", "b", "abcd", "日", ""])
        if column in ("bin", "fb") and rng.random() < 0.5:
            prefix = rng.choice([b"a", b"\xff", b"ab"])
        return rng.choice([starts_with, not_starts_with])(column, prefix)
    if roll < 0.5:
        size = rng.choice([0, 1, 2, 3, 5, IN_PREDICATE_LIMIT + 1])
        values = [_literal(rng, column) for _ in range(size)]
        return rng.choice([is_in, not_in])(column, values)
    return rng.choice(_COMPARISONS)(column, _literal(rng, column))


def _expression(rng: random.Random, depth: int = 3) -> Expression:
    roll = rng.random()
    if depth == 0 or roll < 0.4:
        return _predicate(rng)
    if roll < 0.43:
        return rng.choice([AlwaysTrue(), AlwaysFalse()])
    if roll < 0.55:
        child = _expression(rng, depth - 1)
        return Not(child) if rng.random() < 0.5 else not_(child)
    left, right = _expression(rng, depth - 1), _expression(rng, depth - 1)
    return and_(left, right) if roll < 0.8 else or_(left, right)


def _scalar_maps(stats: list[Stat], entries: int) -> list[dict[str, ColumnStats] | None]:
    maps: list[dict[str, ColumnStats] | None] = [None] * entries
    for s in stats:
        m = maps[s.entry]
        if m is None:
            m = maps[s.entry] = {}
        m[s.column_name] = ColumnStats(s.min_value, s.max_value, s.null_count, s.value_count)
    return maps


def _table(stats: list[Stat], entries: int) -> StatsTable:
    rows = entry_rows(list(range(entries)))
    assert rows is not None
    return build_stats_table(stats, lambda s: s.entry, rows, SCHEMA)


def _bindable(expr: Expression) -> bool:
    try:
        stats_evaluator(expr, SCHEMA)
    except Exception:  # a literal that does not coerce: not a filter either evaluator gets
        return False
    return True


@pytest.mark.parametrize("seed", range(12))
def test_arrow_answers_equal_scalar_answers(seed: int) -> None:
    rng = random.Random(seed)
    entries = 60
    stats = _random_stats(rng, entries)
    table = _table(stats, entries)
    maps = _scalar_maps(stats, entries)
    assert table.scalar_rows, "the generator must produce rows Arrow cannot hold exactly"
    checked = decided_in_arrow = 0
    while checked < 40:
        expr = _expression(rng)
        if not _bindable(expr):
            continue
        checked += 1
        scalar = stats_evaluator(expr, SCHEMA)
        expected = [m is None or scalar(m) for m in maps]  # no stats at all: kept
        might = arrow_might_match(expr, SCHEMA, table)
        if might is None:
            continue
        decided_in_arrow += 1
        kept = set(rows_to_keep(might, table).tolist())
        got = [row in kept for row in range(entries)]
        assert got == expected, f"seed {seed}: {expr!r}"
        # the raw answers too, for rows with stats
        raw = might.to_pylist()
        assert [raw[r] for r in range(entries) if maps[r] is not None] == [
            scalar(m) for m in maps if m is not None
        ], f"seed {seed}: {expr!r}"
    assert decided_in_arrow >= 30


def test_clean_rows_are_decided_in_arrow() -> None:
    """Ordinary statistics leave no row to the scalar evaluator, and every filter kind is
    stated in Arrow (the fallback is for the odd cases only)."""
    stats = [
        Stat(e, c, lo, hi, 0, 5)
        for e in range(50)
        for c, lo, hi in [
            ("i", e, e + 5),
            ("f", e / 2, e / 2 + 1.0),
            ("s", f"k{e:03d}", f"k{e + 3:03d}"),
            ("bin", bytes([e]), bytes([e + 1])),
            ("d", _D0 + datetime.timedelta(days=e), _D0 + datetime.timedelta(days=e + 1)),
            ("dec", Decimal(e).scaleb(-2), Decimal(e + 9).scaleb(-2)),
            ("ts", _T0 + datetime.timedelta(seconds=e), _T0 + datetime.timedelta(seconds=e + 9)),
            ("tz", _T0.replace(tzinfo=UTC), _T0.replace(tzinfo=UTC)),
            ("flag", False, True),
        ]
    ]
    table = _table(stats, 50)
    assert table.scalar_rows == {}
    filters = [
        greater_than_or_equal("i", 30),
        and_(less_than("f", 3.0), not_null("s")),
        or_(starts_with("s", "k01"), equal_to("d", _D0 + datetime.timedelta(days=40))),
        is_in("dec", [Decimal("0.05"), Decimal("0.70")]),
        not_in("ts", [_T0, _T0 + datetime.timedelta(seconds=1)]),
        not_starts_with("bin", b"\x05"),
        less_than_or_equal("tz", _T0.replace(tzinfo=UTC)),
        equal_to("flag", True),
        is_null("i"),
    ]
    scalar_maps = _scalar_maps(stats, 50)
    for expr in filters:
        might = arrow_might_match(expr, SCHEMA, table)
        assert might is not None, expr
        scalar = stats_evaluator(expr, SCHEMA)
        assert might.to_pylist() == [scalar(m) for m in scalar_maps if m is not None], expr
    kept = rows_to_keep(arrow_might_match(greater_than_or_equal("i", 30), SCHEMA, table), table)
    assert kept.tolist() == list(range(25, 50))  # max = e + 5 >= 30


def test_repeated_entries_have_no_rows() -> None:
    assert entry_rows(["a", "b", "a"]) is None
    assert entry_rows(["a", "b"]) == {"a": 0, "b": 1}
