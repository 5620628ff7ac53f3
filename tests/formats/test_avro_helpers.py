"""Avro helpers: schema cache, schemaless decoding, containers and Hudi value wrappers."""

from __future__ import annotations

import datetime
import decimal
import io
import json

import fastavro
import pytest

from hudi_md.errors import CommitMetadataError, UnsupportedFeatureError
from hudi_md.formats.avro import decode_schemaless, parse_schema, read_container, unwrap_value

NS = "org.apache.hudi.avro.model."
RECORD = json.dumps(
    {
        "type": "record",
        "name": "R",
        "fields": [{"name": "a", "type": "long"}, {"name": "b", "type": ["null", "string"]}],
    }
)


def _datum(value: dict) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, parse_schema(RECORD), value)
    return buf.getvalue()


def test_parse_schema_is_cached_by_string() -> None:
    assert parse_schema(RECORD) is parse_schema(RECORD)


def test_decode_schemaless_with_and_without_reader_schema() -> None:
    data = _datum({"a": 5, "b": "x"})
    assert decode_schemaless(data, RECORD) == {"a": 5, "b": "x"}
    reader = json.dumps(
        {"type": "record", "name": "R", "fields": [{"name": "b", "type": ["null", "string"]}]}
    )
    assert decode_schemaless(data, RECORD, reader) == {"b": "x"}


def test_decode_schemaless_exact_rejects_leftover_bytes() -> None:
    data = _datum({"a": 5, "b": None}) + b"\x00"
    assert decode_schemaless(data, RECORD) == {"a": 5, "b": None}
    with pytest.raises(ValueError, match="used 2 of its 3 bytes"):
        decode_schemaless(data, RECORD, exact=True)


def test_record_names_for_wrapper_unions_only() -> None:
    schema = json.dumps(
        {
            "type": "record",
            "name": "Stats",
            "fields": [
                {"name": "info", "type": ["null", {"type": "record", "name": "Info", "fields": []}]},
                {
                    "name": "minValue",
                    "type": [
                        "null",
                        {
                            "type": "record",
                            "name": NS + "IntWrapper",
                            "fields": [{"name": "value", "type": "int"}],
                        },
                        {
                            "type": "record",
                            "name": NS + "DateWrapper",
                            "fields": [{"name": "value", "type": "int"}],
                        },
                    ],
                },
            ],
        }
    )
    buf = io.BytesIO()
    fastavro.schemaless_writer(
        buf, parse_schema(schema), {"info": {}, "minValue": (NS + "DateWrapper", {"value": 3})}
    )
    value = decode_schemaless(
        buf.getvalue(), schema, return_record_name=True, return_record_name_override=True
    )
    assert value["info"] == {}
    assert unwrap_value(value["minValue"]) == datetime.date(1970, 1, 4)


def test_read_container_and_its_errors() -> None:
    buf = io.BytesIO()
    fastavro.writer(buf, parse_schema(RECORD), [{"a": 1, "b": None}, {"a": 2, "b": "y"}])
    data = buf.getvalue()
    assert read_container(data, "x.commit") == [{"a": 1, "b": None}, {"a": 2, "b": "y"}]
    with pytest.raises(CommitMetadataError, match=r"x\.commit"):
        read_container(data[:-20], "x.commit")
    with pytest.raises(CommitMetadataError, match=r"y\.commit.*bad magic"):
        read_container(b"{}", "y.commit")


@pytest.mark.parametrize(
    ("wrapped", "expected"),
    [
        (None, None),
        ((NS + "BooleanWrapper", {"value": False}), False),
        ((NS + "IntWrapper", {"value": 3}), 3),
        ((NS + "LongWrapper", {"value": 2**40}), 2**40),
        ((NS + "FloatWrapper", {"value": 0.5}), 0.5),
        ((NS + "DoubleWrapper", {"value": 0.25}), 0.25),
        ((NS + "BytesWrapper", {"value": b"ab"}), b"ab"),
        ((NS + "StringWrapper", {"value": "s"}), "s"),
        ((NS + "DateWrapper", {"value": -1}), datetime.date(1969, 12, 31)),
        ((NS + "LocalDateWrapper", {"value": 0}), datetime.date(1970, 1, 1)),
        # Raw decimal(30, 15) bytes (a schema read without the logical type).
        (
            (NS + "DecimalWrapper", {"value": (-1500).to_bytes(2, "big", signed=True)}),
            decimal.Decimal("-1.5E-12"),
        ),
        ((NS + "DecimalWrapper", {"value": decimal.Decimal("1.25")}), decimal.Decimal("1.25")),
        ((NS + "TimeMicrosWrapper", {"value": 3_723_000_004}), datetime.time(1, 2, 3, 4)),
        (
            (NS + "TimestampMicrosWrapper", {"value": -1}),
            datetime.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=datetime.timezone.utc),
        ),
        ((NS + "ArrayWrapper", {"wrappedValues": [None, (NS + "IntWrapper", {"value": 1})]}), (None, 1)),
        ((NS + "ArrayWrapper", {"wrappedValues": None}), None),
        ({"value": 9}, 9),
        ({"wrappedValues": [{"value": 1}, {"value": "a"}]}, (1, "a")),
        (17, 17),
    ],
)
def test_unwrap_value(wrapped: object, expected: object) -> None:
    assert unwrap_value(wrapped) == expected


def test_unwrap_value_keeps_precision_of_decimal_30_15() -> None:
    unscaled = 123456789012345678901234567890
    raw = unscaled.to_bytes(13, "big", signed=True)
    got = unwrap_value((NS + "DecimalWrapper", {"value": raw}))
    assert got == decimal.Decimal("123456789012345.678901234567890")


def test_unwrap_value_refuses_unknown_wrappers() -> None:
    with pytest.raises(UnsupportedFeatureError, match="FancyWrapper"):
        unwrap_value((NS + "FancyWrapper", {"value": 1}))
