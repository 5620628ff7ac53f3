"""Spark time travel (``as.of.instant``) has the instant's columns (issue 36, part 4): the shim's
schema request carries the option, the planner answers with the schema as of the instant, and
base files (Spark's Parquet reader) and merged MOR slices (``read_slice``) are read with it. Also
``hudi_md.spark.reader.read_table(as_of=...)``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import hudi_md

KEYS = {
    "hoodie.table.name": "t",
    "hoodie.datasource.write.recordkey.field": "uuid",
    "hoodie.datasource.write.partitionpath.field": "city",
    "hoodie.datasource.write.precombine.field": "ts",
}
DROP = {"hoodie.datasource.write.schema.allow.auto.evolution.column.drop": "true"}
FIRST = pa.table(
    {
        "uuid": ["a", "b", "c"],
        "city": ["sf", "sf", "nyc"],
        "ts": [1, 1, 1],
        "fare": [1.0, 2.0, 3.0],
        "tip": [0.1, 0.2, 0.3],
    }
)
UPDATE = pa.table({"uuid": ["b"], "city": ["sf"], "ts": [2], "fare": [20.0], "tip": [0.25]})
NARROW = pa.table({"uuid": ["c"], "city": ["nyc"], "ts": [3], "fare": [30.0]})


def _write(path: Path, data: pa.Table, table_type: str, **extra: str) -> str:
    options = {**KEYS, "hoodie.datasource.write.table.type": table_type, **extra}
    hudi_md.write(data, str(path), operation="upsert", options=options)
    last = hudi_md.open_table(str(path)).timeline.write_timeline().last()
    assert last is not None
    return last.requested_time


def _rows(df: Any) -> list[dict]:
    cols = [c for c in df.columns if not c.startswith("_hoodie_")]
    return sorted((r.asDict() for r in df.select(*cols).collect()), key=lambda r: (r["city"], r["uuid"]))


def _rows_of(rows: pa.Table) -> list[dict]:
    cols = [c for c in rows.column_names if not c.startswith("_hoodie_")]
    return sorted(rows.select(cols).to_pylist(), key=lambda r: (r["city"], r["uuid"]))


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_spark_time_travel_reads_the_instant_schema(hudi_spark, tmp_path: Path, table_type: str) -> None:
    path = tmp_path / "t"
    _write(path, FIRST, table_type)
    updated = _write(path, UPDATE, table_type)  # MOR: a log file, read by read_slice as of it
    _write(path, NARROW, table_type, **DROP)  # `tip` leaves the table
    table = hudi_md.open_table(str(path))
    expected = table.read(as_of=updated)
    assert "tip" in expected.column_names and "tip" not in table.schema.names

    latest = hudi_spark.read.format("hudi-md").load(str(path))
    assert "tip" not in latest.columns
    df = hudi_spark.read.format("hudi-md").option("as.of.instant", updated).load(str(path))
    assert "tip" in df.columns
    assert (
        _rows(df)
        == _rows_of(expected)
        == [
            {"city": "nyc", "fare": 3.0, "tip": 0.3, "ts": 1, "uuid": "c"},
            {"city": "sf", "fare": 1.0, "tip": 0.1, "ts": 1, "uuid": "a"},
            {"city": "sf", "fare": 20.0, "tip": 0.25, "ts": 2, "uuid": "b"},
        ]
    )
    assert sorted(r["tip"] for r in df.select("tip").collect()) == [0.1, 0.25, 0.3]
    assert df.where("tip > 0.2").count() == 2

    from hudi_md.spark.reader import read_table

    frame = read_table(hudi_spark, str(path), as_of=updated)
    assert sorted(r["tip"] for r in frame.select("tip").collect()) == [0.1, 0.25, 0.3]
