"""Spark schema ⇄ Arrow schema conversion (``hudi_md.spark.arrow_types``), which replaces PySpark's
private ``pyspark.sql.pandas.types`` in the writer, ``read_table`` and the planner process."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    CharType,
    DateType,
    DayTimeIntervalType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
    VarcharType,
)

from hudi_md.errors import UnsupportedFeatureError
from hudi_md.spark.arrow_types import arrow_schema_to_spark_json, spark_schema_to_arrow

EVERY_TYPE = StructType(
    [
        StructField("s", StringType(), False),
        StructField("b", ByteType()),
        StructField("h", ShortType()),
        StructField("i", IntegerType()),
        StructField("l", LongType(), False),
        StructField("f", FloatType()),
        StructField("d", DoubleType()),
        StructField("ok", BooleanType()),
        StructField("day", DateType()),
        StructField("ts", TimestampType()),
        StructField("ntz", TimestampNTZType()),
        StructField("dec", DecimalType(15, 2)),
        StructField("big", DecimalType(38, 10)),
        StructField("bin", BinaryType()),
        StructField("tags", ArrayType(StringType(), containsNull=False)),
        StructField(
            "points",
            ArrayType(StructType([StructField("x", DoubleType()), StructField("t", TimestampType())])),
        ),
        StructField("attrs", MapType(StringType(), LongType(), valueContainsNull=True)),
        StructField(
            "nested",
            StructType(
                [
                    StructField("a", IntegerType(), False),
                    StructField("inner", StructType([StructField("z", ArrayType(DateType()))])),
                ]
            ),
        ),
    ]
)

EXPECTED = pa.schema(
    [
        pa.field("s", pa.string(), nullable=False),
        pa.field("b", pa.int8()),
        pa.field("h", pa.int16()),
        pa.field("i", pa.int32()),
        pa.field("l", pa.int64(), nullable=False),
        pa.field("f", pa.float32()),
        pa.field("d", pa.float64()),
        pa.field("ok", pa.bool_()),
        pa.field("day", pa.date32()),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
        pa.field("ntz", pa.timestamp("us")),
        pa.field("dec", pa.decimal128(15, 2)),
        pa.field("big", pa.decimal128(38, 10)),
        pa.field("bin", pa.binary()),
        pa.field("tags", pa.list_(pa.field("element", pa.string(), nullable=False))),
        pa.field(
            "points",
            pa.list_(
                pa.field(
                    "element",
                    pa.struct([pa.field("x", pa.float64()), pa.field("t", pa.timestamp("us", tz="UTC"))]),
                )
            ),
        ),
        pa.field(
            "attrs", pa.map_(pa.field("key", pa.string(), nullable=False), pa.field("value", pa.int64()))
        ),
        pa.field(
            "nested",
            pa.struct(
                [
                    pa.field("a", pa.int32(), nullable=False),
                    pa.field("inner", pa.struct([pa.field("z", pa.list_(pa.field("element", pa.date32())))])),
                ]
            ),
        ),
    ]
)


def test_spark_to_arrow_covers_every_type_the_writer_takes() -> None:
    got = spark_schema_to_arrow(EVERY_TYPE)
    assert got.equals(EXPECTED, check_metadata=True), f"\n{got}\n!=\n{EXPECTED}"
    # The JSON form converts the same (the planner and tests pass JSON).
    assert spark_schema_to_arrow(EVERY_TYPE.jsonValue()).equals(EXPECTED)


def test_char_and_varchar_are_strings() -> None:
    schema = StructType([StructField("c", CharType(3)), StructField("v", VarcharType(10))])
    assert spark_schema_to_arrow(schema) == pa.schema(
        [pa.field("c", pa.string()), pa.field("v", pa.string())]
    )


@pytest.mark.parametrize(
    ("schema", "column"),
    [
        (StructType([StructField("span", DayTimeIntervalType())]), "span"),
        (StructType([StructField("n", StructType([StructField("span", DayTimeIntervalType())]))]), "n.span"),
        (StructType([StructField("xs", ArrayType(DayTimeIntervalType()))]), "xs.element"),
    ],
)
def test_unsupported_types_name_the_column(schema: StructType, column: str) -> None:
    with pytest.raises(UnsupportedFeatureError, match=f"column '{column}'"):
        spark_schema_to_arrow(schema)


@pytest.mark.spark_smoke
def test_arrow_to_spark_round_trips_through_pyspark() -> None:
    # PySpark parses our JSON into the same StructType (minus nullability PySpark does not keep
    # for list items and map values, which Spark's readers treat as nullable anyway).
    got = StructType.fromJson(arrow_schema_to_spark_json(EXPECTED))
    assert [f.name for f in got] == [f.name for f in EVERY_TYPE]
    by_name = {f.name: f for f in got}
    assert by_name["ts"].dataType == TimestampType()
    assert by_name["ntz"].dataType == TimestampType()  # as PySpark's from_arrow_schema: no NTZ
    assert by_name["dec"].dataType == DecimalType(15, 2)
    assert by_name["s"].nullable is False and by_name["b"].nullable is True
    assert by_name["attrs"].dataType == MapType(StringType(), LongType(), True)
    assert by_name["points"].dataType == ArrayType(
        StructType([StructField("x", DoubleType()), StructField("t", TimestampType())]), True
    )
    assert by_name["nested"].dataType["inner"].dataType == StructType(
        [StructField("z", ArrayType(DateType(), True))]
    )
    for name in ("s", "b", "h", "i", "l", "f", "d", "ok", "day", "big", "bin", "tags"):
        assert (
            by_name[name].dataType.simpleString().split("<")[0]
            == ({f.name: f for f in EVERY_TYPE}[name].dataType.simpleString().split("<")[0])
        )


def test_arrow_to_spark_large_and_dictionary_types() -> None:
    schema = pa.schema(
        [
            pa.field("ls", pa.large_string()),
            pa.field("lb", pa.large_binary()),
            pa.field("dict", pa.dictionary(pa.int32(), pa.string())),
            pa.field("ll", pa.large_list(pa.int64())),
            pa.field("tz", pa.timestamp("ms", tz="America/New_York")),
        ]
    )
    got = StructType.fromJson(arrow_schema_to_spark_json(schema))
    assert [f.dataType for f in got] == [
        StringType(),
        BinaryType(),
        StringType(),
        ArrayType(LongType(), True),
        TimestampType(),
    ]
    with pytest.raises(UnsupportedFeatureError, match="column 'u'"):
        arrow_schema_to_spark_json(pa.schema([pa.field("u", pa.uint64())]))
