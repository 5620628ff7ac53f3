from __future__ import annotations

import datetime
import json
import math
import random
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from filter_gen import random_expression

from hudi_md.errors import InvalidOptionError
from hudi_md.planning import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BoundReference,
    Expression,
    LiteralPredicate,
    Not,
    Op,
    Or,
    Reference,
    SetPredicate,
    UnaryPredicate,
    and_,
    bind,
    equal_to,
    from_filters,
    from_json,
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
    referenced_columns,
    rewrite_not,
    starts_with,
    to_arrow_expression,
    to_json,
)

D = datetime.date
DT = datetime.datetime
UTC = datetime.timezone.utc

a1, b2, c3, d4 = equal_to("a", 1), equal_to("b", 2), equal_to("c", 3), equal_to("d", 4)


# --------------------------------------------------------------------------- folding


def test_and_folds_constants() -> None:
    assert and_(a1, AlwaysFalse()) == AlwaysFalse()
    assert and_(AlwaysFalse(), a1) == AlwaysFalse()
    assert and_(a1, AlwaysTrue()) == a1
    assert and_() == AlwaysTrue()
    assert and_(AlwaysTrue(), AlwaysTrue()) == AlwaysTrue()
    assert (a1 & AlwaysFalse()) == AlwaysFalse()


def test_or_folds_constants() -> None:
    assert or_(a1, AlwaysTrue()) == AlwaysTrue()
    assert or_(a1, AlwaysFalse()) == a1
    assert or_() == AlwaysFalse()
    assert (AlwaysFalse() | a1) == a1


def test_many_way_and_is_balanced_and_canonical() -> None:
    assert and_(a1, b2, c3, d4) == And(And(a1, b2), And(c3, d4))
    # Nested conjunctions are flattened first, so grouping does not change the shape.
    assert (a1 & b2) & (c3 & d4) == and_(a1, and_(b2, and_(c3, d4)))
    assert or_(a1, b2, c3) == Or(a1, Or(b2, c3))


def test_not_folds() -> None:
    assert not_(AlwaysTrue()) == AlwaysFalse()
    assert not_(AlwaysFalse()) == AlwaysTrue()
    assert not_(Not(a1)) == a1
    assert not_(a1) == Not(a1)
    assert ~Not(a1) == a1


def test_set_constructors_fold() -> None:
    assert is_in("a", []) == AlwaysFalse()
    assert not_in("a", []) == AlwaysTrue()
    assert is_in("a", [1]) == equal_to("a", 1)
    assert not_in("a", (1,)) == not_equal_to("a", 1)
    assert is_in("a", [1, 1]) == equal_to("a", 1)
    assert is_in("a", [2, 1]) == SetPredicate(Op.IN, Reference("a"), frozenset({1, 2}))
    assert is_in("a", [1, 2]) == is_in("a", {2, 1})


@pytest.mark.parametrize(
    ("expr", "negation"),
    [
        (equal_to("a", 1), not_equal_to("a", 1)),
        (less_than("a", 1), greater_than_or_equal("a", 1)),
        (less_than_or_equal("a", 1), greater_than("a", 1)),
        (is_null("a"), not_null("a")),
        (starts_with("a", "x"), not_starts_with("a", "x")),
        (is_in("a", [1, 2]), not_in("a", [1, 2])),
        (AlwaysTrue(), AlwaysFalse()),
        (a1 & b2, ~a1 | ~b2),
        (a1 | b2, ~a1 & ~b2),
        (Not(a1), a1),
    ],
)
def test_negation(expr: Expression, negation: Expression) -> None:
    assert ~expr == negation
    assert ~negation == expr or isinstance(expr, Not)


def test_str() -> None:
    expr = (equal_to("a", 1) | is_null("b")) & Not(is_in("c", ["y", "x"]))
    assert str(expr) == "((a = 1 or b is null) and not c in ('x', 'y'))"


# --------------------------------------------------------------------------- validation


def test_predicates_reject_bad_arguments() -> None:
    with pytest.raises(InvalidOptionError, match=r"'a'.*is_null"):
        equal_to("a", None)
    with pytest.raises(InvalidOptionError, match=r"'a'.*scalar"):
        less_than("a", [1, 2])
    with pytest.raises(InvalidOptionError, match=r"'a'.*prefix"):
        starts_with("a", 5)  # type: ignore[arg-type]
    with pytest.raises(InvalidOptionError, match=r"'a'.*collection"):
        is_in("a", "abc")
    with pytest.raises(InvalidOptionError, match=r"'a'.*is_null"):
        not_in("a", [1, None])
    with pytest.raises(InvalidOptionError, match=r"'a'.*hashable"):
        is_in("a", [bytearray(b"x")])
    with pytest.raises(InvalidOptionError, match=r"column name"):
        equal_to("", 1)
    with pytest.raises(InvalidOptionError, match=r"not a unary operator"):
        UnaryPredicate(Op.EQ, Reference("a"))
    with pytest.raises(InvalidOptionError, match=r"not a set operator"):
        SetPredicate(Op.EQ, Reference("a"), frozenset({1}))
    with pytest.raises(InvalidOptionError, match=r"not a comparison operator"):
        LiteralPredicate(Op.IN, Reference("a"), 1)
    with pytest.raises(InvalidOptionError, match=r"Expression"):
        and_(a1, "b = 2")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- from_filters


def test_from_filters_empty() -> None:
    assert from_filters(None) == AlwaysTrue()
    assert from_filters([]) == AlwaysTrue()


def test_from_filters_conjunction_and_dnf() -> None:
    assert from_filters([("a", "=", 1), ("b", "==", 2)]) == a1 & b2
    assert from_filters([[("a", "=", 1), ("b", "=", 2)], [("c", "=", 3)]]) == (a1 & b2) | c3
    assert from_filters([["a", "=", 1]]) == a1  # terms decoded from JSON are lists


@pytest.mark.parametrize(
    ("op", "expected"),
    [
        ("=", equal_to("a", 1)),
        ("==", equal_to("a", 1)),
        ("!=", not_equal_to("a", 1)),
        ("<", less_than("a", 1)),
        ("<=", less_than_or_equal("a", 1)),
        (">", greater_than("a", 1)),
        (">=", greater_than_or_equal("a", 1)),
    ],
)
def test_from_filters_comparison_ops(op: str, expected: Expression) -> None:
    assert from_filters([("a", op, 1)]) == expected


def test_from_filters_set_ops() -> None:
    assert from_filters([("a", "in", [1, 2])]) == is_in("a", [1, 2])
    assert from_filters([("a", "IN", {1, 2})]) == is_in("a", [1, 2])
    assert from_filters([("a", "not in", (1, 2))]) == not_in("a", [1, 2])
    assert from_filters([("a", " NOT  IN ", [1, 2])]) == not_in("a", [1, 2])
    assert from_filters([("a", "in", [])]) == AlwaysFalse()


@pytest.mark.parametrize(
    ("filters", "message"),
    [
        ([("a", "~=", 1)], "'~='"),
        ([("a", "like", "x%")], "'like'"),
        ([("a", "=")], r"\('a', '='\)"),
        ([("a", "=", 1, 2)], "expected \\(column, op, value\\)"),
        ([(1, "=", 1), ("a", "=", 1)], "expected \\(column, op, value\\)"),
        ([("a", 1, 1)], "operator must be a string"),
        ([("", "=", 1)], "column must be"),
        ([("a", "in", 5)], "'in' needs a list"),
        ([("a", "in", "ab")], "'in' needs a list"),
        ([("a", "=", None)], "'a'.*is_null"),
        ([("a", "=", [1])], "'a'.*scalar"),
        ([[("a", "=", 1)], []], "non-empty"),
        ([[("a", "=", 1)], "b = 2"], "non-empty"),
        ("a = 1", "list of"),
    ],
)
def test_from_filters_errors(filters: Any, message: str) -> None:
    with pytest.raises(InvalidOptionError, match=message):
        from_filters(filters)


# --------------------------------------------------------------------------- JSON


def test_to_json_shapes() -> None:
    expr = (equal_to("a", 1) | is_null("b")) & Not(is_in("c", ["y", "x"])) & AlwaysTrue()
    assert to_json(expr) == {
        "op": "and",
        "children": [
            {
                "op": "or",
                "children": [{"op": "eq", "column": "a", "value": 1}, {"op": "is_null", "column": "b"}],
            },
            {"op": "not", "child": {"op": "in", "column": "c", "values": ["x", "y"]}},
        ],
    }
    assert to_json(AlwaysTrue()) == {"op": "true"}
    assert to_json(AlwaysFalse()) == {"op": "false"}
    assert to_json(and_(a1, b2, c3))["children"] == [to_json(a1), to_json(b2), to_json(c3)]


@pytest.mark.parametrize(
    ("value", "encoded", "hint"),
    [
        (D(2024, 1, 2), "2024-01-02", "date"),
        (DT(2024, 1, 2, 3, 4, 5, 6), "2024-01-02T03:04:05.000006", "timestamp"),
        (DT(2024, 1, 2, 3, tzinfo=UTC), "2024-01-02T03:00:00+00:00", "timestamp"),
        (Decimal("1.50"), "1.50", "decimal"),
        (b"\x00\xff", "AP8=", "binary"),
        (float("inf"), "Infinity", "float"),
        (-float("inf"), "-Infinity", "float"),
        (1.5, 1.5, None),
        (True, True, None),
        ("x", "x", None),
        (7, 7, None),
    ],
)
def test_json_values(value: Any, encoded: Any, hint: str | None) -> None:
    data = to_json(equal_to("a", value))
    assert data["value"] == encoded
    assert data.get("type") == hint
    back = from_json(json.loads(json.dumps(data)))
    assert back == equal_to("a", value)
    assert type(back.value) is type(value)  # type: ignore[attr-defined]


def test_json_nan_and_sets_with_hints() -> None:
    data = to_json(equal_to("x", float("nan")))
    assert data == {"op": "eq", "column": "x", "value": "NaN", "type": "float"}
    assert math.isnan(from_json(data).value)  # type: ignore[attr-defined]
    dates = is_in("d", [D(2024, 1, 2), D(2024, 1, 1)])
    assert to_json(dates) == {
        "op": "in",
        "column": "d",
        "values": ["2024-01-01", "2024-01-02"],
        "type": "date",
    }
    assert from_json(to_json(dates)) == dates
    with pytest.raises(InvalidOptionError, match=r"'d'.*mixed"):
        to_json(is_in("d", [D(2024, 1, 1), "2024-01-02"]))


def test_json_accepts_n_ary_children_and_z_suffix() -> None:
    data = {
        "op": "or",
        "children": [
            {"op": "lt", "column": "t", "value": "2024-01-01T00:00:00Z", "type": "timestamp"},
            {"op": "true"},
        ],
    }
    assert from_json(data) == AlwaysTrue()
    data["children"][1] = {"op": "false"}  # type: ignore[index]
    assert from_json(data) == less_than("t", DT(2024, 1, 1, tzinfo=UTC))
    three = {"op": "and", "children": [to_json(a1), to_json(b2), to_json(c3)]}
    assert from_json(three) == and_(a1, b2, c3)
    assert from_json({"op": "not", "child": {"op": "not", "child": to_json(a1)}}) == a1


def test_bound_expressions_serialise_by_name() -> None:
    bound = bind(equal_to("d", "2024-01-01"), pa.schema([pa.field("d", pa.date32())]))
    assert to_json(bound) == {"op": "eq", "column": "d", "value": "2024-01-01", "type": "date"}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"op": "xor"}, "'xor'"),
        ({}, "None"),
        ([], "object"),
        ({"op": "and", "children": []}, "children"),
        ({"op": "not"}, "child"),
        ({"op": "eq", "value": 1}, "column"),
        ({"op": "eq", "column": "a"}, "'a'.*value"),
        ({"op": "in", "column": "a", "values": 1}, "'a'.*values"),
        ({"op": "eq", "column": "a", "value": "x", "type": "uuid"}, "'uuid'.*'a'"),
        ({"op": "eq", "column": "a", "value": "2024-13-01", "type": "date"}, "'a'"),
        ({"op": "eq", "column": "a", "value": "1.2.3", "type": "decimal"}, "'a'"),
        ({"op": "eq", "column": "a", "value": "!!", "type": "binary"}, "'a'"),
        ({"op": "eq", "column": "a", "value": 20240101, "type": "date"}, "'a'.*string"),
        ({"op": "eq", "column": "a", "value": {"x": 1}}, "'a'.*JSON scalar"),
    ],
)
def test_from_json_errors(data: Any, message: str) -> None:
    with pytest.raises(InvalidOptionError, match=message):
        from_json(data)


def test_json_round_trip_random() -> None:
    # Exact for expressions built with the folding constructors; raw trees such as
    # Not(Not(x)) come back folded, which the last assertion checks is harmless.
    rng = random.Random(7)
    for case in range(500):
        expr = random_expression(rng, depth=4, raw_not=False)
        text = json.dumps(to_json(expr), allow_nan=False)
        assert from_json(json.loads(text)) == expr, f"case {case}: {expr}"
        raw = random_expression(rng, depth=3)
        assert rewrite_not(from_json(to_json(raw))) == rewrite_not(raw), f"case {case}: {raw}"


# --------------------------------------------------------------------------- rewrite_not


def test_rewrite_not_pushes_to_leaves() -> None:
    expr = Not(a1 & Not(b2 | Not(is_null("c"))))
    assert rewrite_not(expr) == not_equal_to("a", 1) | (b2 | not_null("c"))
    assert rewrite_not(Not(Not(a1))) == a1
    assert rewrite_not(Not(AlwaysTrue())) == AlwaysFalse()
    assert rewrite_not(Not(is_in("a", [1, 2]))) == not_in("a", [1, 2])


# --------------------------------------------------------------------------- binding

SCHEMA = pa.schema(
    [
        pa.field("i", pa.int64()),
        pa.field("b", pa.int8()),
        pa.field("u", pa.uint8()),
        pa.field("s", pa.string()),
        pa.field("d", pa.date32()),
        pa.field("t", pa.timestamp("us")),
        pa.field("tz", pa.timestamp("ms", tz="UTC")),
        pa.field("ts", pa.timestamp("s")),
        pa.field("tn", pa.timestamp("ns")),
        pa.field("x", pa.float32()),
        pa.field("m", pa.decimal128(5, 2)),
        pa.field("flag", pa.bool_()),
        pa.field("raw", pa.binary()),
        pa.field("req", pa.int32(), nullable=False),
        pa.field("cat", pa.dictionary(pa.int32(), pa.string())),
        pa.field("l", pa.list_(pa.int32())),
        pa.field("Mixed", pa.int32()),
    ]
)


def _bound(expr: Expression) -> Expression:
    return bind(expr, SCHEMA)


def _ref(name: str) -> BoundReference:
    index = SCHEMA.get_field_index(name)
    return BoundReference(SCHEMA.field(index), index)


def _lit(op: Op, name: str, value: Any) -> Expression:
    return LiteralPredicate(op, _ref(name), value)


def test_bind_resolves_columns() -> None:
    bound = _bound(equal_to("i", 5))
    assert bound == _lit(Op.EQ, "i", 5)
    assert isinstance(bound, LiteralPredicate) and bound.is_bound and bound.term.position == 0
    assert bind(equal_to("mixed", 5), SCHEMA, case_sensitive=False) == _lit(Op.EQ, "Mixed", 5)
    # Binding an already bound expression re-resolves by name.
    assert _bound(bound) == bound


def test_bind_errors_name_the_column() -> None:
    with pytest.raises(InvalidOptionError, match=r"unknown column 'nope'"):
        _bound(equal_to("nope", 1))
    with pytest.raises(InvalidOptionError, match=r"unknown column 'mixed'"):
        _bound(equal_to("mixed", 1))
    ambiguous = pa.schema([pa.field("A", pa.int32()), pa.field("a", pa.int32())])
    with pytest.raises(InvalidOptionError, match=r"'a' .*ambiguous"):
        bind(equal_to("a", 1), ambiguous, case_sensitive=False)
    with pytest.raises(InvalidOptionError, match=r"'l'"):
        _bound(equal_to("l", 1))
    with pytest.raises(InvalidOptionError, match=r"starts_with.*'i'"):
        _bound(starts_with("i", "1"))


@pytest.mark.parametrize(
    ("column", "value", "coerced"),
    [
        ("s", 5, "5"),
        ("s", True, "true"),
        ("s", 1.5, "1.5"),
        ("s", Decimal("2.50"), "2.50"),
        ("s", D(2024, 1, 1), "2024-01-01"),
        ("s", b"abc", "abc"),
        ("cat", 7, "7"),
        ("i", "42", 42),
        ("i", 42.0, 42),
        ("i", Decimal("42"), 42),
        ("i", " -3 ", -3),
        ("d", "2024-01-01", D(2024, 1, 1)),
        ("d", DT(2024, 1, 1), D(2024, 1, 1)),
        ("d", "2024-01-01T00:00:00", D(2024, 1, 1)),
        ("t", "2024-01-01", DT(2024, 1, 1)),
        ("t", D(2024, 1, 1), DT(2024, 1, 1)),
        ("t", "2024-01-01T01:02:03.5", DT(2024, 1, 1, 1, 2, 3, 500000)),
        ("t", DT(2024, 1, 1, 2, tzinfo=datetime.timezone(datetime.timedelta(hours=2))), DT(2024, 1, 1)),
        ("tz", DT(2024, 1, 1), DT(2024, 1, 1, tzinfo=UTC)),
        ("tz", "2024-01-01T00:00:00Z", DT(2024, 1, 1, tzinfo=UTC)),
        ("x", 1, 1.0),
        ("x", "0.25", 0.25),
        ("x", Decimal("0.5"), 0.5),
        ("m", 1, Decimal("1")),
        ("m", 0.1, Decimal("0.1")),
        ("m", "123.45", Decimal("123.45")),
        ("flag", "TRUE", True),
        ("flag", 0, False),
        ("raw", "ab", b"ab"),
        ("raw", bytearray(b"ab"), b"ab"),
    ],
)
def test_bind_coerces_literals(column: str, value: Any, coerced: Any) -> None:
    bound = _bound(equal_to(column, value))
    assert isinstance(bound, LiteralPredicate)
    assert bound.value == coerced
    assert type(bound.value) is type(coerced)
    # Every coerced literal must also be accepted by Arrow as a value of the column type.
    assert SCHEMA.empty_table().filter(to_arrow_expression(bound)).num_rows == 0


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("i", "ten"),
        ("i", True),
        ("i", float("nan")),
        ("i", D(2024, 1, 1)),
        ("d", "yesterday"),
        ("d", 20240101),
        ("d", DT(2024, 1, 1, tzinfo=UTC)),
        ("t", 1704067200),
        ("t", "noon"),
        ("x", "abc"),
        ("x", True),
        ("m", "abc"),
        ("m", float("nan")),
        ("flag", "yes"),
        ("flag", 2),
        ("raw", 5),
        ("s", b"\xff"),
        ("s", object()),
    ],
)
def test_bind_rejects_uncoercible_literals(column: str, value: Any) -> None:
    with pytest.raises(InvalidOptionError, match=rf"column '{column}'"):
        _bound(equal_to(column, value))


def test_bind_rejects_uncoercible_set_values() -> None:
    with pytest.raises(InvalidOptionError, match=r"column 'd'"):
        _bound(is_in("d", ["2024-01-01", "soon"]))


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        # Fractional literal on an integer column: rounded to the equivalent integer bound.
        (less_than("i", 5.5), ("le", 5)),
        (less_than_or_equal("i", 5.5), ("le", 5)),
        (greater_than("i", 5.5), ("ge", 6)),
        (greater_than_or_equal("i", 5.5), ("ge", 6)),
        (greater_than("i", -5.5), ("ge", -5)),
        (less_than("i", Decimal("-0.5")), ("le", -1)),
        (equal_to("i", 5.5), "false"),
        (not_equal_to("i", 5.5), "not_null"),
        (less_than("i", "5.5"), ("le", 5)),
        # Outside int8's range.
        (less_than("b", 1000), "not_null"),
        (less_than_or_equal("b", 1000), "not_null"),
        (not_equal_to("b", 1000), "not_null"),
        (greater_than("b", 1000), "false"),
        (greater_than_or_equal("b", 1000), "false"),
        (equal_to("b", 1000), "false"),
        (greater_than("b", -1000), "not_null"),
        (less_than("b", -1000), "false"),
        (less_than("b", 2**80), "not_null"),
        (less_than("b", float("inf")), "not_null"),
        (less_than("b", 127.5), "not_null"),
        (less_than("b", 127), ("lt", 127)),
        (less_than("u", -1), "false"),
        (greater_than_or_equal("u", -0.5), "not_null"),
        # Decimal scale and precision.
        (less_than("m", Decimal("1.005")), ("le", Decimal("1.00"))),
        (greater_than("m", Decimal("1.005")), ("ge", Decimal("1.01"))),
        (equal_to("m", Decimal("1.005")), "false"),
        (less_than("m", 1000), "not_null"),
        (greater_than("m", Decimal("-1e30")), "not_null"),
        # Timestamps against dates, and against coarser timestamps.
        (less_than("d", DT(2024, 1, 1, 12)), ("le", D(2024, 1, 1))),
        (greater_than_or_equal("d", DT(2024, 1, 1, 12)), ("ge", D(2024, 1, 2))),
        (equal_to("d", "2024-01-01T12:00"), "false"),
        (less_than("ts", DT(2024, 1, 1, 0, 0, 0, 500)), ("le", DT(2024, 1, 1))),
        (greater_than("ts", DT(2024, 1, 1, 0, 0, 0, 500)), ("ge", DT(2024, 1, 1, 0, 0, 1))),
        (greater_than("tz", DT(2024, 1, 1, 0, 0, 0, 1500)), ("ge", DT(2024, 1, 1, 0, 0, 0, 2000, UTC))),
        (less_than("tn", DT(2300, 1, 1)), "not_null"),
        (greater_than("tn", DT(1600, 1, 1)), "not_null"),
        (equal_to("tn", DT(2300, 1, 1)), "false"),
        # Non-nullable columns fold null tests (and not_null results) to constants.
        (is_null("req"), "false"),
        (not_null("req"), "true"),
        (not_equal_to("req", 0.5), "true"),
        # Empty prefixes.
        (starts_with("s", ""), "not_null"),
        (not_starts_with("s", ""), "false"),
    ],
)
def test_bind_rounds_and_folds(expr: Expression, expected: Any) -> None:
    bound = _bound(expr)
    (column,) = referenced_columns(expr)
    if expected == "false":
        assert bound == AlwaysFalse()
    elif expected == "true":
        assert bound == AlwaysTrue()
    elif expected == "not_null":
        assert bound == UnaryPredicate(Op.NOT_NULL, _ref(column))
    else:
        op, value = expected
        assert bound == _lit(Op(op), column, value)
        assert type(bound.value) is type(value)  # type: ignore[attr-defined]
    assert SCHEMA.empty_table().filter(to_arrow_expression(bound)).num_rows == 0


def test_bind_sets_drop_values_no_column_value_equals() -> None:
    assert _bound(is_in("i", [1.5, 2, 3])) == SetPredicate(Op.IN, _ref("i"), frozenset({2, 3}))
    assert _bound(is_in("i", [1.5, 2])) == _lit(Op.EQ, "i", 2)
    assert _bound(is_in("i", [1.5, 2.5])) == AlwaysFalse()
    assert _bound(not_in("i", [1.5, 2])) == _lit(Op.NE, "i", 2)
    # "a not in (...)" is unknown for a null a, so this is not_null, not true.
    assert _bound(not_in("b", [1000, 2000])) == UnaryPredicate(Op.NOT_NULL, _ref("b"))
    assert _bound(is_in("d", ["2024-01-01", D(2024, 1, 2)])) == SetPredicate(
        Op.IN, _ref("d"), frozenset({D(2024, 1, 1), D(2024, 1, 2)})
    )
    # Raw empty sets keep the constructors' meaning.
    assert _bound(SetPredicate(Op.NOT_IN, Reference("i"), frozenset())) == AlwaysTrue()


def test_bind_removes_not_and_prefix_types() -> None:
    assert _bound(Not(equal_to("i", 1) & is_null("s"))) == _lit(Op.NE, "i", 1) | UnaryPredicate(
        Op.NOT_NULL, _ref("s")
    )
    assert _bound(starts_with("s", b"ab")) == _lit(Op.STARTS_WITH, "s", "ab")
    assert _bound(starts_with("raw", "ab")) == _lit(Op.STARTS_WITH, "raw", b"ab")
    with pytest.raises(InvalidOptionError, match=r"'s'"):
        _bound(starts_with("s", b"\xff"))
