"""Avro → Arrow: schema mapping, record conversion and alignment to the table schema."""

from __future__ import annotations

import datetime
import decimal
import io
import json
import uuid
from collections.abc import Callable
from pathlib import Path

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hudi_md.errors import UnsupportedFeatureError
from hudi_md.formats.avro_arrow import (
    META_COLUMNS,
    align_to_schema,
    avro_records_to_arrow,
    avro_schema_to_arrow,
    with_meta_columns,
)

EVERY_TYPE = {
    "type": "record",
    "name": "r",
    "namespace": "ns",
    "fields": [
        {"name": "i", "type": ["int", "null"]},  # Spark's create schemas put null second
        {"name": "l", "type": ["null", "long"]},
        {"name": "b", "type": "boolean"},
        {"name": "fl", "type": "float"},
        {"name": "db", "type": "double"},
        {"name": "by", "type": "bytes"},
        {"name": "s", "type": {"type": "string"}},
        {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["X", "Y"]}},
        {"name": "e2", "type": ["null", "E"]},  # a named type used again by name
        {"name": "fx", "type": {"type": "fixed", "name": "F", "size": 3}},
        {
            "name": "dec",
            "type": {
                "type": "fixed",
                "name": "D",
                "size": 7,
                "logicalType": "decimal",
                "precision": 15,
                "scale": 2,
            },
        },
        {"name": "big", "type": {"type": "bytes", "logicalType": "decimal", "precision": 40, "scale": 3}},
        {"name": "u", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "date", "type": {"type": "int", "logicalType": "date"}},
        {"name": "tm", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "tu", "type": {"type": "long", "logicalType": "time-micros"}},
        {"name": "tsm", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "tsu", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}]},
        {"name": "lts", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
        {"name": "m", "type": {"type": "map", "values": ["null", "long"]}},
        {"name": "arr", "type": {"type": "array", "items": "string"}},
        {
            "name": "rec",
            "type": [
                "null",
                {"type": "record", "name": "Inner", "fields": [{"name": "x", "type": "double"}]},
            ],
        },
        {"name": "rec2", "type": ["null", "ns.Inner"]},
    ],
}


def test_avro_schema_to_arrow_maps_every_type_like_parquet_does() -> None:
    schema = avro_schema_to_arrow(json.dumps(EVERY_TYPE))
    inner = pa.struct([pa.field("x", pa.float64(), nullable=False)])
    expected = {
        "i": (pa.int32(), True),
        "l": (pa.int64(), True),
        "b": (pa.bool_(), False),
        "fl": (pa.float32(), False),
        "db": (pa.float64(), False),
        "by": (pa.binary(), False),
        "s": (pa.string(), False),
        "e": (pa.string(), False),
        "e2": (pa.string(), True),
        "fx": (pa.binary(3), False),
        "dec": (pa.decimal128(15, 2), False),
        "big": (pa.decimal256(40, 3), False),
        "u": (pa.string(), False),
        "date": (pa.date32(), False),
        "tm": (pa.time32("ms"), False),
        "tu": (pa.time64("us"), False),
        "tsm": (pa.timestamp("ms", tz="UTC"), False),
        "tsu": (pa.timestamp("us", tz="UTC"), True),
        "lts": (pa.timestamp("us"), False),
        "m": (pa.map_(pa.string(), pa.field("value", pa.int64())), False),
        "arr": (pa.list_(pa.field("element", pa.string(), nullable=False)), False),
        "rec": (inner, True),
        "rec2": (inner, True),
    }
    assert schema.names == list(expected)
    for name, (arrow_type, nullable) in expected.items():
        field = schema.field(name)
        assert field.type.equals(arrow_type), name
        assert field.nullable == nullable, name


def test_avro_records_round_trip_through_fastavro() -> None:
    parsed = fastavro.parse_schema(EVERY_TYPE)
    record = {
        "i": 1,
        "l": None,
        "b": True,
        "fl": 1.5,
        "db": 2.5,
        "by": b"\x00\x01",
        "s": "s",
        "e": "Y",
        "e2": None,
        "fx": b"abc",
        "dec": decimal.Decimal("12345.67"),
        "big": decimal.Decimal("1234567890123456789012345678901234567.891"),
        "u": uuid.UUID("12345678-1234-5678-1234-567812345678"),
        "date": datetime.date(2024, 2, 29),
        "tm": datetime.time(1, 2, 3, 4000),
        "tu": datetime.time(1, 2, 3, 5),
        "tsm": datetime.datetime(2024, 1, 1, 12, tzinfo=datetime.timezone.utc),
        "tsu": datetime.datetime(2024, 1, 1, 12, 0, 0, 7, tzinfo=datetime.timezone.utc),
        "lts": datetime.datetime(2024, 1, 1, 1, 1, 1, 1),
        "m": {"k": 1, "z": None},
        "arr": ["a", "b"],
        "rec": {"x": 1.5},
        "rec2": None,
    }
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, parsed, record)
    buf.seek(0)
    decoded = fastavro.schemaless_reader(buf, parsed)
    table = avro_records_to_arrow([decoded], avro_schema_to_arrow(EVERY_TYPE))
    (row,) = table.to_pylist()
    assert row["u"] == "12345678-1234-5678-1234-567812345678"
    assert row["m"] == [("k", 1), ("z", None)]
    assert row["tsu"] == record["tsu"] and row["tsm"] == record["tsm"]
    for name in ("i", "l", "b", "by", "s", "e", "fx", "dec", "big", "date", "tm", "tu", "lts", "arr", "rec"):
        assert row[name] == record[name], name


def test_records_of_an_older_schema_load_into_a_newer_one() -> None:
    schema = pa.schema([("a", pa.int64()), ("b", pa.string())])
    table = avro_records_to_arrow([{"a": 1}, {"a": 2, "b": "x", "gone": 1}], schema)
    assert table.to_pylist() == [{"a": 1, "b": None}, {"a": 2, "b": "x"}]


@pytest.mark.parametrize(
    "bad",
    [
        {"type": "record", "name": "r", "fields": [{"name": "u", "type": ["int", "string"]}]},
        {"type": "record", "name": "r", "fields": [{"name": "u", "type": "Undefined"}]},
        {"type": "array", "items": "int"},
    ],
)
def test_unsupported_avro_schemas(bad: dict) -> None:
    with pytest.raises(UnsupportedFeatureError):
        avro_schema_to_arrow(json.dumps(bad))


def test_meta_columns_come_first() -> None:
    schema = with_meta_columns(pa.schema([("x", pa.int32()), ("_hoodie_record_key", pa.large_string())]))
    assert schema.names == [*META_COLUMNS, "x"]
    assert schema.field("_hoodie_record_key").type == pa.large_string()


def test_align_by_name_adds_missing_nested_fields_and_renames_lists() -> None:
    source = pa.table(
        {
            "b": pa.array([1, None], pa.int32()),
            "s": pa.array([{"x": 1}, None], pa.struct([("x", pa.int32())])),
            "l": pa.array(
                [[{"x": 1}], None], pa.list_(pa.field("array", pa.struct([("x", pa.int32())]), False))
            ),
            "m": pa.array([[("k", {"x": 1})], None], pa.map_(pa.string(), pa.struct([("x", pa.int32())]))),
        }
    )
    inner = pa.struct([("y", pa.string()), ("x", pa.int64())])
    target = pa.schema(
        [
            ("a", pa.string()),
            ("b", pa.int64()),
            ("s", inner),
            ("l", pa.list_(pa.field("element", inner))),
            ("m", pa.map_(pa.string(), inner)),
        ]
    )
    out = align_to_schema(source.slice(0, 2), target)
    assert out.schema == target
    assert out.to_pylist() == [
        {
            "a": None,
            "b": 1,
            "s": {"y": None, "x": 1},
            "l": [{"y": None, "x": 1}],
            "m": [("k", {"y": None, "x": 1})],
        },
        {"a": None, "b": None, "s": None, "l": None, "m": None},
    ]
    # Sliced input keeps its rows.
    assert align_to_schema(source.slice(1, 1), target).to_pylist() == out.to_pylist()[1:]


def test_every_fixture_base_file_aligns_to_its_own_avro_schema(table_path: Callable[[str], Path]) -> None:
    # parquet-avro stores the writer schema in the footer; the Arrow schema derived from it must
    # take the file's rows unchanged (decimals, timestamps, old-style lists, maps, structs).
    checked = 0
    for archive in (
        "sample_table/cow/v6_nonpartitioned.zip",
        "sample_table/cow/v8_nonpartitioned.zip",
        "sample_table/cow/v9_txns_simple_meta.zip",
        "quickstart_trips_table/mor/avro/v8_trips_8i3u1d.zip",
    ):
        for path in table_path(archive).rglob("*.parquet"):
            if ".hoodie" in path.parts:
                continue
            footer = pq.read_schema(path).metadata or {}
            avro = footer.get(b"parquet.avro.schema")
            if avro is None:
                continue
            table = pq.read_table(path)
            aligned = align_to_schema(table, avro_schema_to_arrow(avro.decode()))
            assert aligned.to_pylist() == table.to_pylist(), path
            checked += 1
    assert checked >= 4
