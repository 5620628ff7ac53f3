"""`hudi_md.write(df, ...)` on PySpark: files written by executors, checked by hudi-md, hudi-rs,
Spark's own Parquet reader (COW base files) and `metadata validate`."""

from __future__ import annotations

from pathlib import Path

import hudi
import pyarrow as pa
import pytest

import hudi_md
from hudi_md.metadata.validate import validate_metadata_table

SCHEMA = "id string, city string, ts long, fare double"


def _opts(table_type: str, **extra: str) -> dict[str, str]:
    return {
        "hoodie.table.name": "spark_t",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.table.type": table_type,
        **extra,
    }


def _check(spark, path: Path, expected: dict[str, tuple], table_type: str) -> None:
    want = sorted((k, *v) for k, v in expected.items())
    ours = hudi_md.open_table(str(path)).read(columns=["id", "ts", "fare"]).to_pylist()
    assert sorted((r["id"], r["ts"], r["fare"]) for r in ours) == want
    rs = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(str(path)).build().read())
    assert (
        sorted(
            zip(
                rs.column("id").to_pylist(),
                rs.column("ts").to_pylist(),
                rs.column("fare").to_pylist(),
                strict=True,
            )
        )
        == want
    )
    table = hudi_md.open_table(str(path))
    if table_type == "COPY_ON_WRITE":
        files = [str(path / r["base_file"]) for r in table.file_slices().to_pylist()]
        got = spark.read.parquet(*files).select("id", "ts", "fare").collect()
        assert sorted((r.id, r.ts, r.fare) for r in got) == want
    assert not validate_metadata_table(table)


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_spark_insert_upsert_delete(spark, table_type: str, tmp_path: Path) -> None:
    path = tmp_path / "t"
    opts = _opts(table_type, **{"hoodie.metadata.record.index.enable": "true"})
    rows = [(f"k{i:03d}", ["sf", "nyc", "la"][i % 3], i, float(i)) for i in range(60)]
    hudi_md.write(spark.createDataFrame(rows, SCHEMA), str(path), operation="insert", options=opts)
    expected = {r[0]: (r[2], r[3]) for r in rows}
    _check(spark, path, expected, table_type)
    # updates (one with a lower ordering value, which must lose), a duplicate key in the batch, a new key
    updates = [
        ("k000", "sf", 100, -1.0),
        ("k003", "sf", 1, -3.0),
        ("k006", "sf", 50, 6.5),
        ("k006", "sf", 60, 6.6),
        ("n1", "la", 5, 5.0),
    ]
    hudi_md.write(spark.createDataFrame(updates, SCHEMA), str(path), operation="upsert", options=opts)
    expected.update({"k000": (100, -1.0), "k006": (60, 6.6), "n1": (5, 5.0)})
    _check(spark, path, expected, table_type)
    deletes = [("k001", "nyc", 0, 0.0), ("nope", "sf", 0, 0.0)]
    hudi_md.write(spark.createDataFrame(deletes, SCHEMA), str(path), operation="delete", options=opts)
    del expected["k001"]
    _check(spark, path, expected, table_type)
    # tagging without a record index (reads the keys of the partitions touched)
    plain = _opts(table_type)
    path2 = tmp_path / "plain"
    hudi_md.write(spark.createDataFrame(rows, SCHEMA), str(path2), operation="insert", options=plain)
    hudi_md.write(spark.createDataFrame(updates, SCHEMA), str(path2), operation="upsert", options=plain)
    expected2 = {r[0]: (r[2], r[3]) for r in rows}
    expected2.update({"k000": (100, -1.0), "k006": (60, 6.6), "n1": (5, 5.0)})
    _check(spark, path2, expected2, table_type)


@pytest.mark.parametrize("record_index", ["false", "true"])
def test_spark_insert_overwrite(spark, tmp_path: Path, record_index: str) -> None:
    path = tmp_path / "t"
    opts = _opts("COPY_ON_WRITE", **{"hoodie.metadata.record.index.enable": record_index})
    rows = [(f"k{i}", ["sf", "nyc"][i % 2], i, float(i)) for i in range(10)]
    hudi_md.write(spark.createDataFrame(rows, SCHEMA), str(path), operation="insert", options=opts)
    hudi_md.write(
        spark.createDataFrame([("z1", "sf", 1, 1.0), ("k2", "sf", 7, 7.0)], SCHEMA),
        str(path),
        operation="insert_overwrite",
        options=opts,
    )
    expected = {r[0]: (r[2], r[3]) for r in rows if r[1] == "nyc"}
    expected.update({"z1": (1, 1.0), "k2": (7, 7.0)})
    # the record index drops the replaced keys (k0, k4, ...) and keeps k2 at its new file group
    _check(spark, path, expected, "COPY_ON_WRITE")
    # an upsert of replaced keys inserts them anew instead of writing into a replaced group
    hudi_md.write(
        spark.createDataFrame([("k0", "sf", 9, 9.0), ("k2", "sf", 8, 8.0)], SCHEMA),
        str(path),
        operation="upsert",
        options=opts,
    )
    expected.update({"k0": (9, 9.0), "k2": (8, 8.0)})
    _check(spark, path, expected, "COPY_ON_WRITE")


def test_spark_writes_cluster_inline(spark, tmp_path: Path) -> None:
    """``hoodie.clustering.inline`` on the Spark writer: the third write's commit is followed by a
    clustering of each partition's three small file groups into one."""
    path = tmp_path / "t"
    opts = _opts(
        "MERGE_ON_READ",
        **{
            "hoodie.parquet.small.file.limit": "0",
            "hoodie.clustering.inline": "true",
            "hoodie.clustering.inline.max.commits": "3",
        },
    )
    expected: dict[str, tuple] = {}
    for b in range(3):
        rows = [(f"k{b}-{i}", ["sf", "nyc"][i % 2], b, float(i + b)) for i in range(6)]
        rows.append(("k0-0", "sf", 10 + b, 100.0 + b))  # an update (a log file after the first)
        hudi_md.write(spark.createDataFrame(rows, SCHEMA), str(path), options=opts)
        expected.update({r[0]: (r[2], r[3]) for r in rows})
    table = hudi_md.open_table(str(path))
    last = table.timeline.write_timeline().last()
    assert last is not None and last.action == "replacecommit"
    assert sorted(table.file_slices().column("partition_path").to_pylist()) == ["nyc", "sf"]
    _check(spark, path, expected, "MERGE_ON_READ")
