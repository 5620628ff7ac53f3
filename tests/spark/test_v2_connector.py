"""The DataSource V2 connector (issue 38): the V2 scan every query of a ``hudi-md`` relation reads
through with the session extension on, the ``hudi-md-v2`` table provider, and ``HudiMdCatalog``
as a named catalog and as the session catalog.

Oracles: Spark's own Parquet reader over the latest base files (COW), hudi-rs (MOR with log
files), the V1 scan of the same relation (``spark.hudi_md.read.connector=v1``), and a plain
listing of the table's partitions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import hudi
import pyarrow as pa
import pytest
from comparable import arrow_rows, conf, spark_rows
from pyspark.sql import functions as F

import hudi_md
from hudi_md.spark.session import last_plan_counters

from fixtures import writable_copy

SIMPLE = "sample_table/cow/v9_txns_simple_meta.zip"  # region=<string>, hive style
COMPLEX = "sample_table/cow/v6_complexkeygen_hivestyle.zip"  # byteField=<int>/shortField=<int>
MOR_LOGS = "sample_table/mor/parquet/v6_simplekeygen_nonhivestyle.zip"  # a slice with log files
TRIPS_MOR = "quickstart_trips_table/mor/avro/v8_trips_8i3u1d.zip"
V1 = {"spark.hudi_md.read.connector": "v1"}


def base_files(path: str) -> list[str]:
    slices = hudi_md.open_table(path).file_slices()
    return [str(Path(path) / f) for f in slices.column("base_file").to_pylist() if f]


def plan_of(df: Any) -> str:
    return str(df._jdf.queryExecution().executedPlan().toString())


def v2_scan(df: Any) -> Any:
    """The query's ``BatchScanExec`` (AQE's final plan looked into)."""
    found: list[Any] = []

    def walk(node: Any) -> None:
        name = node.getClass().getSimpleName()
        if name == "AdaptiveSparkPlanExec":
            walk(node.executedPlan())
            return
        if name.endswith("QueryStageExec"):
            walk(node.plan())
            return
        if name == "BatchScanExec":
            found.append(node)
        children = node.children()
        for i in range(children.size()):
            walk(children.apply(i))

    walk(df._jdf.queryExecution().executedPlan())
    (scan,) = found
    return scan


@pytest.mark.spark_smoke
@pytest.mark.parametrize(
    ("archive", "where"),
    [
        (SIMPLE, None),
        (SIMPLE, "region = 'us' AND amount > 100"),
        (SIMPLE, "region = 'us' OR amount > 1000"),  # a partition column under an OR: not for Parquet
        (SIMPLE, "length(region) = 2"),  # no data source filter: Catalyst's, pruned in the JVM
        (COMPLEX, "byteField IN (20, 30) OR name = 'Alice'"),
        (COMPLEX, "shortField > 100 AND byteField < 30"),
    ],
)
def test_v2_scan_equals_sparks_parquet_reader(
    hudi_spark, table_path, archive: str, where: str | None
) -> None:
    path = str(table_path(archive))
    df = hudi_spark.read.format("hudi-md").load(path)
    got = df.where(where) if where else df
    assert "HudiMdScan" in plan_of(got) and "reader=vectorized Parquet" in plan_of(got)
    # Spark's reader over the latest base files (their stored partition columns are the table's)
    ref = hudi_spark.read.parquet(*base_files(path))
    expected = ref.where(where) if where else ref
    assert spark_rows(got.select(*ref.columns)) == spark_rows(expected)
    with conf(hudi_spark, **V1):
        v1 = hudi_spark.read.format("hudi-md").load(path)
        assert "FileScan" in plan_of(v1)
        assert spark_rows(v1.where(where) if where else v1) == spark_rows(got)


@pytest.mark.parametrize("archive", [MOR_LOGS, TRIPS_MOR])
def test_v2_scan_merges_log_files_as_hudi_rs_reads_them(hudi_spark, table_path, archive: str) -> None:
    path = str(table_path(archive))
    df = hudi_spark.read.format("hudi-md").load(path)
    assert "HudiMdScan" in plan_of(df)
    rs = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(path).build().read())
    assert spark_rows(df) == arrow_rows(rs, df.columns)
    assert last_plan_counters(hudi_spark)["jvm_merged_slices"] >= 1


def test_incremental_and_read_optimized_queries(hudi_spark, table_path) -> None:
    """Every query type reads through the V2 scan as through V1 (incremental: row by row)."""
    path = str(table_path(MOR_LOGS))
    instants = sorted(hudi_md.open_table(path).timeline.write_timeline().completed().times())
    for options in (
        {"hoodie.datasource.query.type": "read_optimized"},
        {"hoodie.datasource.query.type": "incremental", "hoodie.datasource.read.begin.instanttime": "000"},
        {"as.of.instant": instants[0]},
    ):
        df = hudi_spark.read.format("hudi-md").options(**options).load(path)
        plan = plan_of(df)
        assert "HudiMdScan" in plan
        if options.get("hoodie.datasource.query.type") == "incremental":
            assert "reader=Parquet rows" in plan
        with conf(hudi_spark, **V1):
            v1 = hudi_spark.read.format("hudi-md").options(**options).load(path)
            assert spark_rows(v1) == spark_rows(df), options


def test_dynamic_partition_pruning_reads_only_the_joined_partitions(hudi_spark, table_path, tmp_path) -> None:
    path = str(table_path(SIMPLE))
    hudi_spark.read.format("hudi-md").load(path).createOrReplaceTempView("txns")
    # a small dimension table (Parquet: Spark knows its size and broadcasts it), the fact table
    # filtered only through the join
    dims = str(tmp_path / "regions")
    hudi_spark.createDataFrame([("us", "United States"), ("xx", "nowhere")], ["code", "label"]).write.parquet(
        dims
    )
    hudi_spark.read.parquet(dims).createOrReplaceTempView("regions")
    query = (
        "SELECT t.txn_id, r.label FROM txns t JOIN regions r ON t.region = r.code "
        "WHERE r.label = 'United States'"
    )
    with conf(hudi_spark, **{"spark.sql.optimizer.dynamicPartitionPruning.reuseBroadcastOnly": "false"}):
        df = hudi_spark.sql(query)
        got = sorted(df.collect())
        scan = v2_scan(df)
        assert "dynamicpruning" in str(scan.toString()).lower()
        # the planner listed every partition; the runtime filter kept one of them
        assert last_plan_counters(hudi_spark)["jvm_partitions"] == 1
    rows_us = hudi_spark.read.parquet(*base_files(path)).where("region = 'us'").count()
    assert len(got) == rows_us > 0
    with conf(hudi_spark, **V1):
        assert sorted(hudi_spark.sql(query).collect()) == got


def test_planning_requests_do_not_grow_with_the_partition_count(hudi_spark, tmp_path) -> None:
    """One query planned through the V2 scan: the planner's storage requests are the same for a
    table of 4 partitions and one of 64 (the MDT's files partition, read by key)."""
    requests = {}
    for n in (4, 64):
        path = str(tmp_path / f"t{n}")
        rows = pa.table(
            {"id": list(range(n * 2)), "p": [f"p{i % n:03d}" for i in range(n * 2)], "ts": [1] * (n * 2)}
        )
        hudi_md.write(
            rows,
            path,
            options={
                "hoodie.table.name": f"t{n}",
                "hoodie.datasource.write.recordkey.field": "id",
                "hoodie.datasource.write.partitionpath.field": "p",
                "hoodie.datasource.write.precombine.field": "ts",
            },
        )
        df = hudi_spark.read.format("hudi-md").load(path).where("p = 'p001'")
        assert df.count() == 2
        counters = last_plan_counters(hudi_spark)
        assert counters["jvm_partitions"] == 1
        requests[n] = counters["storage_requests"]
    assert requests[4] == requests[64], requests


def test_table_provider_reads_a_path(hudi_spark, table_path, tmp_path) -> None:
    path = writable_copy(table_path(SIMPLE), tmp_path / "copy")
    df = hudi_spark.read.format("hudi-md-v2").load(path).where("region = 'eu'")
    assert "HudiMdScan" in plan_of(df)
    assert spark_rows(df) == spark_rows(hudi_spark.read.format("hudi-md").load(path).where("region = 'eu'"))
    # DataFrame writes: `hudi-md`'s writer (Spark's fallback for a V2 table without V2 batch writes)
    new = hudi_spark.read.format("hudi-md-v2").load(path).where("txn_id = 'TXN-001'")
    new = new.drop(*[c for c in new.columns if c.startswith("_hoodie")]).withColumn("txn_id", F.lit("TXN-V2"))
    new.write.format("hudi-md-v2").mode("append").save(path)
    rs = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(path).build().read())
    assert "TXN-V2" in rs.column("txn_id").to_pylist()


@pytest.mark.spark_smoke
def test_named_catalog(hudi_spark, tmp_path) -> None:
    """`spark.sql.catalog.lake=hudi.md.spark.HudiMdCatalog`: the session catalog's tables under
    another name; queries read them as V2 tables, statements run as on spark_catalog."""
    spark = hudi_spark
    spark.conf.set("spark.sql.catalog.lake", "hudi.md.spark.HudiMdCatalog")
    location = tmp_path / "lake_t"
    spark.sql("DROP TABLE IF EXISTS default.lake_t")
    spark.sql(
        f"CREATE TABLE default.lake_t (id INT, name STRING, ts INT, region STRING) USING `hudi-md` "
        "PARTITIONED BY (region) TBLPROPERTIES (primaryKey = 'id', preCombineField = 'ts') "
        f"LOCATION '{location}'"
    )
    try:
        spark.sql(
            "INSERT INTO lake.default.lake_t VALUES (1, 'a', 1, 'eu'), (2, 'b', 1, 'us'), (3, 'c', 1, 'us')"
        )
        spark.sql("UPDATE lake.default.lake_t SET name = 'B' WHERE id = 2")
        spark.sql("DELETE FROM lake.default.lake_t WHERE id = 3")
        spark.sql(
            "MERGE INTO lake.default.lake_t t USING (SELECT 4 AS id, 'd' AS name, 1 AS ts, 'eu' AS region) s "
            "ON t.id = s.id WHEN NOT MATCHED THEN INSERT *"
        )
        df = spark.sql("SELECT id, name, region FROM lake.default.lake_t WHERE region = 'eu' OR id = 2")
        assert "BatchScan lake.default.lake_t" in plan_of(df) or "HudiMdScan" in plan_of(df)
        assert sorted(tuple(r) for r in df.collect()) == [(1, "a", "eu"), (2, "B", "us"), (4, "d", "eu")]
        # the same table through spark_catalog, and storage as hudi-rs reads it
        assert sorted(
            tuple(r) for r in spark.sql("SELECT id, name, region FROM default.lake_t").collect()
        ) == [
            (1, "a", "eu"),
            (2, "B", "us"),
            (4, "d", "eu"),
        ]
        rs = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(str(location)).build().read())
        assert sorted(rs.column("id").to_pylist()) == [1, 2, 4]
        assert [r[0] for r in spark.sql("SHOW PARTITIONS lake.default.lake_t").collect()] == [
            "region=eu",
            "region=us",
        ]
        assert "lake_t" in [r.tableName for r in spark.sql("SHOW TABLES IN lake.default").collect()]
        # DataFrameWriterV2 appends through the V2 table (the writer every DataFrame write uses)
        more = spark.createDataFrame([(5, "e", 1, "us")], ["id", "name", "ts", "region"])
        more.writeTo("lake.default.lake_t").append()
        assert spark.sql("SELECT name FROM lake.default.lake_t WHERE id = 5").collect()[0][0] == "e"
        # ... but would make a new table as a catalog entry without a Hudi table: refused
        with pytest.raises(Exception, match="DataFrameWriterV2"):
            spark.createDataFrame([(1, "x")], ["id", "name"]).writeTo("lake.default.lake_new").using(
                "hudi-md"
            ).create()
        assert not spark.catalog.tableExists("default.lake_new")
    finally:
        spark.sql("DROP TABLE IF EXISTS default.lake_t")


def test_session_catalog_extension(hudi_spark, table_path, tmp_path) -> None:
    """`spark.sql.catalog.spark_catalog=hudi.md.spark.HudiMdCatalog` (what Hudi's users set for
    HoodieCatalog): every statement works as without it; queries read through the V2 scan."""
    session = hudi_spark.newSession()
    session.conf.set("spark.sql.catalog.spark_catalog", "hudi.md.spark.HudiMdCatalog")
    path = writable_copy(table_path(SIMPLE), tmp_path / "copy")
    session.sql(f"CREATE TABLE default.ext_t USING `hudi-md` LOCATION '{path}'")
    try:
        # the session's catalog (Spark reads the setting from the active session's conf)
        jvm_session = hudi_spark._jvm.org.apache.spark.sql.SparkSession
        jvm_session.setActiveSession(session._jsparkSession)
        try:
            catalog = session._jsparkSession.sessionState().catalogManager().v2SessionCatalog()
        finally:
            jvm_session.setActiveSession(hudi_spark._jsparkSession)
        assert catalog.getClass().getName() == "hudi.md.spark.HudiMdCatalog"
        before = session.sql("SELECT count(*) FROM default.ext_t").collect()[0][0]
        session.sql("DELETE FROM default.ext_t WHERE region = 'eu'")
        df = session.sql("SELECT txn_id FROM default.ext_t WHERE region = 'eu'")
        assert "HudiMdScan" in plan_of(df) and df.count() == 0
        eu = hudi_spark.read.parquet(*base_files(str(table_path(SIMPLE)))).where("region = 'eu'").count()
        assert session.sql("SELECT count(*) FROM default.ext_t").collect()[0][0] == before - eu
    finally:
        session.sql("DROP TABLE IF EXISTS default.ext_t")
