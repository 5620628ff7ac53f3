"""`hudi_md.spark.reader.read_table`: base files via Spark's Parquet reader, MOR slices with logs
merged by Python workers on the executors; checked against hudi-rs on every MOR fixture."""

from __future__ import annotations

import hudi
import pyarrow as pa
import pytest

from hudi_md.spark.reader import read_table

from fixtures import archives

MOR = [a for a in archives() if "/mor/" in a]


@pytest.mark.parametrize("archive", MOR)
def test_snapshot_equals_hudi_rs(spark, archive: str, table_path) -> None:
    path = str(table_path(archive))
    rows = read_table(spark, path).select("_hoodie_record_key", "_hoodie_commit_time").collect()
    rs = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(path).build().read())
    assert sorted((r[0], r[1]) for r in rows) == sorted(
        zip(
            rs.column("_hoodie_record_key").to_pylist(),
            rs.column("_hoodie_commit_time").to_pylist(),
            strict=True,
        )
    )


def test_filters_and_read_optimized(spark, table_path) -> None:
    path = str(table_path("sample_table/mor/avro/v9_txns_simple_meta.zip"))
    rs = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(path).build().read())
    expected = sorted(
        k
        for k, region, amount in zip(
            rs.column("_hoodie_record_key").to_pylist(),
            rs.column("region").to_pylist(),
            rs.column("amount").to_pylist(),
            strict=True,
        )
        if region in ("us", "eu") and amount is not None and amount > 100
    )
    df = read_table(spark, path, filters=[("region", "in", ["us", "eu"]), ("amount", ">", 100)])
    assert sorted(r[0] for r in df.select("_hoodie_record_key").collect()) == expected
    ro = read_table(spark, path, read_optimized=True, columns=["txn_id"])
    rs_ro = (
        hudi.HudiTableBuilder.from_base_uri(path)
        .with_option("hoodie.read.use.read_optimized.mode", "true")
        .build()
    )
    assert ro.count() == pa.Table.from_batches(rs_ro.read()).num_rows
