"""Clustering's record order under Hudi's layout strategies (``hudi_md.write.layout_order``):
``linear`` as Spark's sort, ``z-order`` and ``hilbert`` as Hudi's direct curve build method
(``SpaceCurveSortingHelper.orderDataFrameByMappingValues``). The Hilbert index is checked against
the values davidmoten's hilbert-curve library (which Hudi uses) publishes in its tests; the rest
against small curves worked out by hand and against slow scalar restatements of Hudi's mappings."""

from __future__ import annotations

import itertools
import math
import random
import struct
from datetime import date, datetime, timezone
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from hudi_md.errors import InvalidOptionError, UnsupportedFeatureError
from hudi_md.write import layout_order
from hudi_md.write.layout_order import HILBERT, LINEAR, Z_ORDER, sort_order, sorted_by_layout

# davidmoten/hilbert-curve src/test/resources/expected/indexes-2d-bits-{2,3}.txt: row i, column j
# holds HilbertCurve.bits(b).dimensions(2).index(i, j)
DAVIDMOTEN_BITS_2 = [
    [0, 3, 4, 5],
    [1, 2, 7, 6],
    [14, 13, 8, 9],
    [15, 12, 11, 10],
]
DAVIDMOTEN_BITS_3 = [
    [0, 1, 14, 15, 16, 19, 20, 21],
    [3, 2, 13, 12, 17, 18, 23, 22],
    [4, 7, 8, 11, 30, 29, 24, 25],
    [5, 6, 9, 10, 31, 28, 27, 26],
    [58, 57, 54, 53, 32, 35, 36, 37],
    [59, 56, 55, 52, 33, 34, 39, 38],
    [60, 61, 50, 51, 46, 45, 40, 41],
    [63, 62, 49, 48, 47, 44, 43, 42],
]

MASK64 = (1 << 64) - 1


def order(table: pa.Table, columns: list[str], strategy: str) -> list[int]:
    result = sort_order(table, columns, strategy)
    assert result.type == pa.uint64()
    return result.to_pylist()


def grid(side: int) -> list[tuple[int, int]]:
    return [(i, j) for i in range(side) for j in range(side)]


def grid_table(points: list[tuple[int, int]], first: str = "a", second: str = "b") -> pa.Table:
    return pa.table({first: [p[0] for p in points], second: [p[1] for p in points]})


# --- scalar restatements of Hudi's mappings ------------------------------------------------------------


def long_bits(v: int) -> int:
    return v & MASK64


def double_raw_bits(v: float) -> int:
    return int.from_bytes(struct.pack(">d", v), "big")


def hudi_double_8bytes(v: float) -> int:
    """BinaryUtil.doubleTo8Byte."""
    bits = double_raw_bits(v)
    if v > 0:
        return bits ^ (1 << 63)
    if v < 0:
        return ~bits & MASK64
    return bits


def hudi_padded_8bytes(b: bytes) -> int:
    """BinaryUtil.paddingTo8Byte, read big-endian."""
    return int.from_bytes(b[:8].rjust(8, b"\0"), "big")


def interleave(values: list[int], bits: int) -> int:
    """Bits ``bits - 1`` .. 0 of each value, a plane at a time, the first value's bit first."""
    out = 0
    for level in range(bits - 1, -1, -1):
        for v in values:
            out = (out << 1) | ((v >> level) & 1)
    return out


def skilling_index(point: list[int], bits: int) -> int:
    """One point's Hilbert index, Skilling's AxestoTranspose then the interleaving, on Python
    ints (davidmoten's HilbertCurve.index for coordinates below 2**bits)."""
    x = [v & ((1 << bits) - 1) for v in point]
    n = len(x)
    q = 1 << (bits - 1)
    while q > 1:
        p = q - 1
        for i in range(n):
            if x[i] & q:
                x[0] ^= p
            else:
                t = (x[0] ^ x[i]) & p
                x[0] ^= t
                x[i] ^= t
        q >>= 1
    for i in range(1, n):
        x[i] ^= x[i - 1]
    t = 0
    q = 1 << (bits - 1)
    while q > 1:
        if x[n - 1] & q:
            t ^= q - 1
        q >>= 1
    return interleave([v ^ t for v in x], bits)


def hudi_hilbert_key(index: int) -> bytes:
    """HilbertCurveUtils.indexBytes(curve, longs, 63): BigInteger.toByteArray(), left-padded to
    63 bytes or cut to its first 63."""
    raw = index.to_bytes(index.bit_length() // 8 + 1, "big")
    return raw[:63] if len(raw) > 63 else raw.rjust(63, b"\0")


def stable_order(keys: list[Any]) -> list[int]:
    return sorted(range(len(keys)), key=lambda i: keys[i])


# --- strategies and arguments -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spelling", "canonical"),
    [
        ("linear", LINEAR),
        ("LINEAR", LINEAR),
        ("Linear", LINEAR),
        ("z-order", Z_ORDER),
        ("Z-ORDER", Z_ORDER),
        ("zorder", Z_ORDER),
        ("ZORDER", Z_ORDER),
        ("hilbert", HILBERT),
        ("HILBERT", HILBERT),
    ],
)
def test_every_spelling_hudi_accepts_names_its_strategy(spelling: str, canonical: str) -> None:
    table = grid_table(grid(4)[::-1])
    assert order(table, ["a", "b"], spelling) == order(table, ["a", "b"], canonical)


def test_the_three_strategies_order_a_grid_differently() -> None:
    table = grid_table(grid(4))
    orders = {s: order(table, ["a", "b"], s) for s in (LINEAR, Z_ORDER, HILBERT)}
    assert len({tuple(o) for o in orders.values()}) == 3


@pytest.mark.parametrize("name", ["z_order", "hilbert-curve", "lexical", ""])
def test_an_unknown_strategy_names_the_option_and_value(name: str) -> None:
    with pytest.raises(InvalidOptionError) as raised:
        sort_order(grid_table(grid(2)), ["a", "b"], name)
    message = str(raised.value)
    assert "hoodie.layout.optimize.strategy" in message
    assert repr(name) in message
    assert isinstance(raised.value, ValueError)


def test_a_sort_column_not_in_the_records_is_refused() -> None:
    with pytest.raises(InvalidOptionError, match=r"hoodie\.clustering\.plan\.strategy\.sort\.columns.*'c'"):
        sort_order(grid_table(grid(2)), ["a", "c"], Z_ORDER)


def test_a_curve_over_a_repeated_column_is_refused() -> None:
    # Hudi keys the curve's dimensions by schema position (Collectors.toMap): a repeat fails there
    with pytest.raises(InvalidOptionError, match="twice"):
        sort_order(grid_table(grid(2)), ["a", "a"], HILBERT)
    # a linear sort by a column twice is just the sort by it
    table = grid_table(grid(3)[::-1])
    assert order(table, ["a", "a"], LINEAR) == order(table, ["a"], LINEAR)


@pytest.mark.parametrize("strategy", [LINEAR, Z_ORDER, HILBERT])
def test_no_sort_columns_or_no_rows(strategy: str) -> None:
    table = grid_table(grid(3)[::-1])
    assert order(table, [], strategy) == list(range(9))
    assert order(table.slice(0, 0), ["a", "b"], strategy) == []


@pytest.mark.parametrize("strategy", [LINEAR, Z_ORDER, HILBERT])
def test_sorted_by_layout_takes_the_rows_in_sort_order(strategy: str) -> None:
    table = grid_table(grid(4)[::-1]).append_column("row", pa.array(range(16)))
    result = sorted_by_layout(table, ["a", "b"], strategy)
    assert result.column("row").to_pylist() == order(table, ["a", "b"], strategy)
    assert result.schema == table.schema


# --- linear -------------------------------------------------------------------------------------------


def spark_key(v: Any) -> tuple[int, Any]:
    """Spark's ascending order: nulls first, NaN after every number, -0.0 equal to 0.0."""
    if v is None:
        return (0, 0)
    if isinstance(v, float) and math.isnan(v):
        return (2, 0)
    return (1, v)


def test_linear_orders_as_sparks_sort_over_several_columns() -> None:
    rng = random.Random(7)
    n = 400
    words = ["", "a", "ab", "b", "é", "z", "Ω", "abcdefghij"]
    floats = [-math.inf, -1.5, -0.0, 0.0, 2.5, math.inf, math.nan]
    data = {
        "s": [rng.choice([*words, None]) for _ in range(n)],
        "i": [rng.choice([None, -(2**40), -3, 0, 3, 2**40]) for _ in range(n)],
        "f": [rng.choice([*floats, None]) for _ in range(n)],
    }
    table = pa.table(data)
    columns = ["s", "f", "i"]
    expected = stable_order([tuple(spark_key(data[c][r]) for c in columns) for r in range(n)])
    assert order(table, columns, LINEAR) == expected


def test_linear_puts_nulls_first_and_nan_after_infinity() -> None:
    values = [1.0, None, math.nan, -math.inf, 0.0, -0.0, math.inf, None, math.nan]
    table = pa.table({"f": pa.array(values, pa.float64())})
    assert order(table, ["f"], LINEAR) == [1, 7, 3, 4, 5, 0, 6, 2, 8]


def test_linear_reads_dictionaries_and_chunks_as_their_values() -> None:
    values = ["b", None, "a", "c", "a", None, "b"]
    plain = pa.table({"s": values})
    chunked = pa.Table.from_batches(
        [
            pa.record_batch({"s": pa.array(values[:3]).dictionary_encode()}),
            pa.record_batch({"s": pa.array(values[3:]).dictionary_encode()}),
        ]
    )
    assert order(chunked, ["s"], LINEAR) == order(plain, ["s"], LINEAR) == [1, 5, 2, 4, 0, 6, 3]


def test_linear_refuses_a_nested_column() -> None:
    table = pa.table({"l": pa.array([[1], [2]])})
    with pytest.raises(UnsupportedFeatureError, match="'l'"):
        sort_order(table, ["l"], LINEAR)


# --- z-order ------------------------------------------------------------------------------------------

MORTON_4X4 = [
    (0, 0), (0, 1), (1, 0), (1, 1),
    (0, 2), (0, 3), (1, 2), (1, 3),
    (2, 0), (2, 1), (3, 0), (3, 1),
    (2, 2), (2, 3), (3, 2), (3, 3),
]  # fmt: skip


@pytest.mark.parametrize("arrow_type", [pa.int64(), pa.int32(), pa.int16(), pa.int8()])
def test_z_order_visits_a_grid_in_morton_order(arrow_type: pa.DataType) -> None:
    points = grid(4)[::-1]
    table = pa.table(
        {
            "a": pa.array([p[0] for p in points], arrow_type),
            "b": pa.array([p[1] for p in points], arrow_type),
        }
    )
    assert [points[i] for i in order(table, ["a", "b"], Z_ORDER)] == MORTON_4X4


def test_curve_dimensions_follow_schema_order_not_sort_column_order() -> None:
    # Hudi iterates a HashMap keyed by schema position: the earlier column is the curve's first axis
    points = grid(4)
    table = grid_table(points)
    assert order(table, ["b", "a"], Z_ORDER) == order(table, ["a", "b"], Z_ORDER)
    assert order(table, ["b", "a"], HILBERT) == order(table, ["a", "b"], HILBERT)
    # the same values with b first in the schema: b becomes the first axis
    swapped = pa.table({"b": [p[1] for p in points], "a": [p[0] for p in points]})
    assert [points[i] for i in order(swapped, ["a", "b"], Z_ORDER)] == [(j, i) for i, j in MORTON_4X4]


def test_curve_dimensions_follow_hash_map_buckets_past_sixteen_columns() -> None:
    # with 2 keys the HashMap has 16 buckets: position 17 lands in bucket 1, before position 2
    points = grid(4)
    columns: dict[str, Any] = {f"pad{i}": [0] * 16 for i in range(20)}
    columns["pad2"] = [p[1] for p in points]
    columns["pad17"] = [p[0] for p in points]
    table = pa.table(columns)
    assert [points[i] for i in order(table, ["pad2", "pad17"], Z_ORDER)] == MORTON_4X4


def test_z_order_maps_negative_integers_before_positive_ones() -> None:
    values = [5, -1, 0, -(2**31), 2**31 - 1, -7, 1]
    for arrow_type in (pa.int32(), pa.int64()):
        table = pa.table({"v": pa.array(values, arrow_type), "c": pa.array([0] * len(values))})
        assert order(table, ["v", "c"], Z_ORDER) == stable_order(values)


def test_z_order_maps_doubles_as_hudis_double_to_8_byte() -> None:
    # positive: sign bit flipped; negative: all bits inverted; 0.0, -0.0 and NaN raw: so 0.0 sorts
    # before -inf and NaN among the negatives; null is Double.MAX_VALUE, just below +inf
    values = [-math.inf, -1.0, -1e-310, -0.0, 0.0, 1e-310, 1.0, math.inf, math.nan, None]
    table = pa.table({"x": pa.array(values, pa.float64()), "c": pa.array([0] * len(values))})
    assert order(table, ["x", "c"], Z_ORDER) == [4, 0, 1, 8, 2, 3, 5, 6, 9, 7]
    # a float is widened to a double first; its null is Float.MAX_VALUE, above 1e38
    floats = [-math.inf, -1.0, -0.0, 0.0, 1.0, 1e38, math.inf, math.nan, None]
    as_floats = pa.table({"x": pa.array(floats, pa.float32()), "c": pa.array([0] * len(floats))})
    assert order(as_floats, ["x", "c"], Z_ORDER) == [3, 0, 1, 7, 2, 4, 5, 8, 6]


def test_z_order_keeps_the_first_eight_bytes_of_a_string_right_aligned() -> None:
    # paddingTo8Byte: a longer value is cut to 8 bytes, a shorter one follows zero bytes, so "b"
    # sorts before "ab"; a null is "": all zeros
    values = ["abcdefghZZ", "abcdefghAA", "b", "ab", None, "", "é"]
    table = pa.table({"s": values, "c": [0] * len(values)})
    assert order(table, ["s", "c"], Z_ORDER) == [4, 5, 2, 3, 6, 0, 1]
    as_binary = table.set_column(0, "s", table.column("s").cast(pa.binary()))
    assert order(as_binary, ["s", "c"], Z_ORDER) == [4, 5, 2, 3, 6, 0, 1]


def test_z_order_places_nulls_where_hudi_maps_them() -> None:
    # long and int nulls are their MAX_VALUE (an int's ties with Integer.MAX_VALUE); a boolean null
    # is false
    longs = pa.table({"v": pa.array([None, 2**62, -1], pa.int64()), "c": [0, 0, 0]})
    assert order(longs, ["v", "c"], Z_ORDER) == [2, 1, 0]
    ints = pa.table({"v": pa.array([None, 2**31 - 1, 7, None], pa.int32()), "c": [0, 0, 0, 0]})
    assert order(ints, ["v", "c"], Z_ORDER) == [2, 0, 1, 3]
    flags = pa.table({"v": pa.array([True, None, False, True]), "c": [0, 0, 0, 0]})
    assert order(flags, ["v", "c"], Z_ORDER) == [1, 2, 0, 3]


def test_z_order_maps_dates_timestamps_and_decimals_to_longs() -> None:
    c = [0, 0, 0, 0]
    # a timestamp becomes its epoch millis, floored: 1.999999 ms and 1.0 ms tie
    stamps = pa.array([1_999_999, 1_000_000, -1, None], pa.timestamp("ns", tz="UTC"))
    assert order(pa.table({"t": stamps, "c": c}), ["t", "c"], Z_ORDER) == [2, 0, 1, 3]
    # a decimal becomes BigDecimal.longValue(): the fraction dropped
    decimals = pa.array([Decimal("1.5"), Decimal("1.2"), Decimal("-1.5"), None], pa.decimal128(10, 1))
    assert order(pa.table({"d": decimals, "c": c}), ["d", "c"], Z_ORDER) == [2, 0, 1, 3]
    days = pa.array([date(2024, 1, 2), date(1969, 12, 31), None, date(2024, 1, 1)])
    assert order(pa.table({"d": days, "c": c}), ["d", "c"], Z_ORDER) == [1, 3, 0, 2]


def test_z_order_matches_hudis_interleaving_of_mixed_columns() -> None:
    rng = random.Random(3)
    n = 300
    longs = [rng.choice([None, rng.randrange(-(2**63), 2**63)]) for _ in range(n)]
    doubles = [rng.choice([None, math.nan, rng.uniform(-1e6, 1e6), 0.0]) for _ in range(n)]
    texts = [
        rng.choice([None, "".join(rng.choice("aé9Z") for _ in range(rng.randrange(12)))]) for _ in range(n)
    ]
    table = pa.table({"l": pa.array(longs, pa.int64()), "d": doubles, "s": texts})

    def key(r: int) -> int:
        long_8 = long_bits(2**63 - 1 if longs[r] is None else longs[r]) ^ (1 << 63)
        double = doubles[r]
        double_8 = hudi_double_8bytes(1.7976931348623157e308 if double is None else double)
        text_8 = hudi_padded_8bytes((texts[r] or "").encode())
        return interleave([long_8, double_8, text_8], 64)

    assert order(table, ["s", "l", "d"], Z_ORDER) == stable_order([key(r) for r in range(n)])


def test_z_order_and_hilbert_refuse_types_hudi_cannot_map() -> None:
    naive = pa.table({"t": pa.array([datetime(2024, 1, 1)]), "c": [1]})
    with pytest.raises(UnsupportedFeatureError, match=r"'t'.*timestamp\[us\]"):
        sort_order(naive, ["t", "c"], Z_ORDER)
    nested = pa.table({"l": pa.array([[1]]), "c": [1]})
    with pytest.raises(UnsupportedFeatureError, match=r"'l'.*list"):
        sort_order(nested, ["c", "l"], HILBERT)
    aware = pa.table({"t": pa.array([datetime(2024, 1, 1, tzinfo=timezone.utc)]), "c": [1]})
    assert order(aware, ["t", "c"], HILBERT) == [0]


@pytest.mark.parametrize("strategy", [Z_ORDER, HILBERT])
def test_a_single_column_curve_is_the_linear_order(strategy: str) -> None:
    # Hudi skips the curve for one column (repartitionByRange on it), whatever its type
    values = [3.0, None, math.nan, -1.0, 3.0, -0.0]
    table = pa.table({"f": values})
    assert order(table, ["f"], strategy) == order(table, ["f"], LINEAR) == [1, 3, 5, 0, 4, 2]
    naive = pa.table({"t": pa.array([datetime(2024, 1, 2), datetime(2024, 1, 1)])})
    assert order(naive, ["t"], strategy) == [1, 0]


@pytest.mark.parametrize("strategy", [LINEAR, Z_ORDER, HILBERT])
def test_equal_keys_keep_their_input_order(strategy: str) -> None:
    table = pa.table({"a": [2, 1, 2, 1, 2, 1], "b": ["x", "y", "x", "y", "x", "y"]})
    result = order(table, ["a", "b"], strategy)
    assert [i for i in result if i % 2 == 0] == [0, 2, 4]
    assert [i for i in result if i % 2 == 1] == [1, 3, 5]


@pytest.mark.parametrize("strategy", [Z_ORDER, HILBERT])
def test_chunks_dictionaries_and_blocks_do_not_change_a_curve(
    strategy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(5)
    n = 100
    ints = rng.integers(-50, 50, n)
    texts = [f"k{v}" for v in rng.integers(0, 30, n)]
    plain = pa.table({"i": ints, "s": texts})
    expected = order(plain, ["i", "s"], strategy)
    batches = [
        pa.record_batch(
            {"i": pa.array(ints[lo : lo + 33]), "s": pa.array(texts[lo : lo + 33]).dictionary_encode()}
        )
        for lo in range(0, n, 33)
    ]
    assert order(pa.Table.from_batches(batches), ["i", "s"], strategy) == expected
    monkeypatch.setattr(layout_order, "_BLOCK", 7)
    assert order(plain, ["i", "s"], strategy) == expected


# --- hilbert ------------------------------------------------------------------------------------------


def index_of(points: list[list[int]], bits: int) -> list[int]:
    coords = [np.array([p[d] for p in points], dtype=np.uint64) for d in range(len(points[0]))]
    index_bits = layout_order._hilbert_index_bits(coords, bits)
    return [int("".join(map(str, row)), 2) for row in index_bits]


@pytest.mark.parametrize("bits", [1, 2, 3])
def test_hilbert_index_is_davidmotens_on_his_published_grids(bits: int) -> None:
    published = {1: [[0, 1], [3, 2]], 2: DAVIDMOTEN_BITS_2, 3: DAVIDMOTEN_BITS_3}[bits]
    points = grid(1 << bits)
    assert index_of([list(p) for p in points], bits) == [published[i][j] for i, j in points]


def test_hilbert_index_matches_davidmotens_unit_tests() -> None:
    # HilbertCurveTest: bits(2).index(1, 2) == 7; bits(5): index(0, 16) == 256, point(100) ==
    # (14, 4), point(682) == (31, 31)
    assert index_of([[1, 2]], 2) == [7]
    assert index_of([[0, 16], [14, 4], [31, 31]], 5) == [256, 100, 682]


def test_hilbert_index_matches_skillings_algorithm_on_63_bit_points() -> None:
    rng = random.Random(11)
    for dims in (2, 3, 5, 9):
        points = [[rng.randrange(2**63) for _ in range(dims)] for _ in range(40)]
        # small coordinates too: their leading all-zero bit planes take the shortcut
        points += [[rng.randrange(2 ** rng.randrange(1, 40)) for _ in range(dims)] for _ in range(40)]
        assert index_of(points, 63) == [skilling_index(p, 63) for p in points]


def test_hilbert_visits_a_4x4_grid_as_the_published_curve() -> None:
    # at 63 bits the corner 4x4 of the curve is oriented as bits(3)'s corner (the orientation
    # alternates with the parity of the bits left over), the transpose of bits(2)'s whole grid
    points = grid(4)[::-1]
    visited = [points[i] for i in order(grid_table(points), ["a", "b"], HILBERT)]
    assert visited == sorted(points, key=lambda p: DAVIDMOTEN_BITS_3[p[0]][p[1]])
    assert visited == sorted(points, key=lambda p: DAVIDMOTEN_BITS_2[p[1]][p[0]])
    assert visited[:4] == [(0, 0), (0, 1), (1, 1), (1, 0)]


def test_hilbert_visits_an_8x8_grid_as_the_published_curve() -> None:
    points = grid(8)[::-1]
    visited = [points[i] for i in order(grid_table(points), ["a", "b"], HILBERT)]
    assert visited == sorted(points, key=lambda p: DAVIDMOTEN_BITS_3[p[0]][p[1]])
    steps = {abs(a - c) + abs(b - d) for (a, b), (c, d) in itertools.pairwise(visited)}
    assert steps == {1}


def test_hilbert_uses_the_low_63_bits_of_hudis_longs() -> None:
    # mapColumnValueToLong keeps the sign: -1 is all ones, the same 63 low bits as Long.MAX_VALUE,
    # which is a null
    ints = pa.table({"v": pa.array([-1, None, 0, 5], pa.int64()), "c": [0, 0, 0, 0]})
    assert order(ints, ["v", "c"], HILBERT) == [2, 3, 0, 1]
    # doubleToLongBits: -x and x differ in the sign bit only, so they tie; NaN is canonical
    doubles = pa.table({"v": [2.0, -2.0, 1.0, math.nan, None], "c": [0, 0, 0, 0, 0]})
    assert order(doubles, ["v", "c"], HILBERT) == [2, 0, 1, 3, 4]
    # true is Long.MAX_VALUE, false and null 0
    flags = pa.table({"v": [True, None, False], "c": [0, 0, 0]})
    assert order(flags, ["v", "c"], HILBERT) == [1, 2, 0]


def test_hilbert_keys_match_hudis_index_bytes_for_many_columns() -> None:
    # from 8 columns on, the index can outgrow 63 bytes and indexBytes keeps its first 63
    rng = random.Random(13)
    for dims in (3, 8, 9):
        n = 120
        rows = [
            [rng.choice([rng.randrange(2**63), rng.randrange(2**20)]) for _ in range(dims)] for _ in range(n)
        ]
        table = pa.table({f"c{d}": pa.array([r[d] for r in rows], pa.int64()) for d in range(dims)})
        indexes = [skilling_index(r, 63) for r in rows]
        keys = [hudi_hilbert_key(i) for i in indexes]
        assert order(table, [f"c{d}" for d in range(dims)], HILBERT) == stable_order(keys)
        if dims == 3:
            assert stable_order(keys) == stable_order(indexes)
        else:
            # some indexes need more than 63 bytes (at 8 columns: all 504 bits, and the sign byte):
            # cut to their first 63, those rows leave the curve's order
            assert any(i.bit_length() // 8 + 1 > 63 for i in indexes)
            assert stable_order(keys) != stable_order(indexes)
