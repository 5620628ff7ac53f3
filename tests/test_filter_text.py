"""The text filter grammar (hudi_md.planning.filter_text): what it parses, and what it refuses."""

from __future__ import annotations

from decimal import Decimal

import pytest

from hudi_md.errors import InvalidOptionError
from hudi_md.planning import (
    and_,
    equal_to,
    greater_than,
    greater_than_or_equal,
    is_in,
    is_null,
    less_than_or_equal,
    not_,
    not_equal_to,
    not_in,
    not_null,
    or_,
    parse_filter_text,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("city = 'sf'", equal_to("city", "sf")),
        ("city = sf AND fare > 20", and_(equal_to("city", "sf"), greater_than("fare", 20))),
        ("city == sf", equal_to("city", "sf")),
        ("name = 'it''s'", equal_to("name", "it's")),
        ("city <> 'a b'", not_equal_to("city", "a b")),
        ("fare >= -2.50", greater_than_or_equal("fare", Decimal("-2.50"))),
        ("flag = TRUE or flag = false", or_(equal_to("flag", True), equal_to("flag", False))),
        ("zip = 007", equal_to("zip", "007")),
        ("dt = 2024-01-01", equal_to("dt", "2024-01-01")),
        ("city in ('sf', nyc)", is_in("city", ["sf", "nyc"])),
        ("city NOT IN (sf, nyc)", not_in("city", ["sf", "nyc"])),
        ("fare between 10 AND 25", and_(greater_than_or_equal("fare", 10), less_than_or_equal("fare", 25))),
        (
            "fare not between 10 and 25",
            not_(and_(greater_than_or_equal("fare", 10), less_than_or_equal("fare", 25))),
        ),
        ("note IS NULL", is_null("note")),
        ("note is not null", not_null("note")),
        ("`and` = 1", equal_to("and", 1)),
        ("`a``b` = 1", equal_to("a`b", 1)),
        (
            "a = 1 or b = 2 and not c = 3",
            or_(equal_to("a", 1), and_(equal_to("b", 2), not_(equal_to("c", 3)))),
        ),
        ("(a = 1 or b = 2) and c = 3", and_(or_(equal_to("a", 1), equal_to("b", 2)), equal_to("c", 3))),
    ],
)
def test_parses(text: str, expected: object) -> None:
    assert parse_filter_text(text) == expected


@pytest.mark.parametrize(
    ("text", "reason", "position"),
    [
        ("city = 'sf", "unterminated string", 8),
        ("`city = 1", "unterminated back-quoted column name", 1),
        ("city ~ sf", "expected an operator", 6),
        ("city => 2", "unknown operator '=>'", 6),
        ("city like 'x%'", "expected an operator", 6),
        ("city = 'sf' x", "unexpected 'x'", 13),
        ("city = San Francisco", "unexpected 'Francisco'", 12),
        ("city = sf and", "expected a column name", 14),
        ("a = NULL", "use IS NULL", 5),
        ("(a = 1", "expected ')'", 7),
        ("a in 1, 2", "expected '('", 6),
        ("a between 1 or 2", "expected AND", 13),
        ("in = 1", "back-quote column names that are keywords", 1),
        ('a = "x"', "double quotes", 5),
        ("", "empty filter", 1),
    ],
)
def test_refuses_with_the_text_and_position(text: str, reason: str, position: int) -> None:
    with pytest.raises(InvalidOptionError) as info:
        parse_filter_text(text)
    message = str(info.value)
    assert repr(text) in message
    assert reason in message
    assert message.endswith(f"at position {position}")
