"""Spark's built-in Hive client (Hive 2.3) against the metastore's Hive metastore API
(``hudi-md metastore serve --thrift-port``): a Hive-enabled session with ``hive.metastore.uris``
pointing at the server sees the registered tables as ``hudi-md`` data-source tables, reads them
(rows equal to hudi-md's Python reader and hudi-rs), prunes partitions on the server, lists
partitions, and Spark's own ``listPartitionsByFilter`` reaches ``get_partitions_by_filter``.

One Spark session in a fresh JVM (a Hive-enabled session cannot join the test process's running
Spark), run once for the module.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from datetime import date, datetime, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import hudi
import pyarrow as pa
import pytest

import hudi_md

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "metastore"))
from server_helpers import ServerProcess, free_port, token_for

CITIES = ["sf", "nyc", "la"]
TABLES = {"trips": "COPY_ON_WRITE", "trips_mor": "MERGE_ON_READ"}

SPARK_SCRIPT = """
import json, sys
from pyspark.sql import SparkSession
from hudi_md.spark.session import configure, last_plan_counters

conf = json.loads(sys.argv[1])
paths = json.loads(sys.argv[2])
builder = SparkSession.builder.master("local[1]")
for k, v in conf.items():
    builder = builder.config(k, v)
spark = configure(builder).getOrCreate()
out = {}

def rows(df):
    return sorted([r["id"], r["city"], r["v"]] for r in df.select("id", "city", "v").collect())

out["databases"] = sorted(r[0] for r in spark.sql("SHOW DATABASES").collect())
out["tables"] = sorted(r.tableName for r in spark.sql("SHOW TABLES IN lake").collect())
out["describe"] = [[r.col_name, r.data_type] for r in spark.sql("DESCRIBE TABLE lake.trips").collect()]
table = spark._jsparkSession.sessionState().catalog().getTableMetadata(
    spark._jvm.org.apache.spark.sql.catalyst.TableIdentifier("trips", spark._jvm.scala.Option.apply("lake")))
out["provider"] = table.provider().get()
out["location"] = table.location().toString()
for name in ("trips", "trips_mor"):
    out[name] = rows(spark.table(f"lake.{name}"))
    out[name + "_sf"] = rows(spark.table(f"lake.{name}").where("city = 'sf'"))
    out[name + "_sf_counters"] = last_plan_counters(spark)
# the catalog's schema (from the registered Avro schema) reads as the data source's own
for name in ("trips", "trips_mor"):
    by_name = spark.table(f"lake.{name}")
    by_path = spark.read.format("hudi-md").load(paths[name])
    out[name + "_schemas"] = [
        sorted([f.name, f.dataType.simpleString()] for f in df.schema.fields) for df in (by_name, by_path)
    ]
    typed = "id, cast(fare as string) f, cast(at as string) a, cast(day as string) d, tags, n"
    out[name + "_typed"] = [
        sorted(map(list, df.selectExpr(*typed.split(", ")).collect())) for df in (by_name, by_path)
    ]
out["sql_in"] = spark.sql("SELECT count(*) AS n FROM lake.trips WHERE city IN ('la', 'nyc')").first().n
out["sql_in_counters"] = last_plan_counters(spark)
out["partitions"] = [r.partition for r in spark.sql("SHOW PARTITIONS lake.trips").collect()]
sf = spark.sql("SHOW PARTITIONS lake.trips PARTITION (city='sf')")
out["partitions_sf"] = [r.partition for r in sf.collect()]
# The catalog call Spark's planner makes for Hive-tracked partitions, with an analyzed predicate
analyzed = spark.table("lake.trips").where("city >= 'nyc'")._jdf.queryExecution().analyzed()
predicates = spark._jvm.scala.collection.JavaConverters.asScalaBuffer(
    spark._jvm.java.util.Collections.singletonList(analyzed.condition())).toSeq()
found = spark._jsparkSession.sharedState().externalCatalog().listPartitionsByFilter(
    "lake", "trips", predicates, "UTC")
out["by_filter"] = sorted(found.apply(i).spec().get("city").get() for i in range(found.size()))
out["spark_version"] = spark.version
out["catalog_tables"] = sorted(t.name for t in spark.catalog.listTables("lake"))
try:
    spark.sql("ALTER TABLE lake.trips ADD PARTITION (city = 'x')")
    out["add_partition"] = "accepted"
except Exception as e:
    out["add_partition"] = str(e)
print("RESULT " + json.dumps(out))
spark.stop()
"""


def _rows(ids: range, ts: int) -> pa.Table:
    return pa.table(
        {
            "id": [f"k{i:03d}" for i in ids],
            "city": [CITIES[i % 3] for i in ids],
            "ts": [ts] * len(ids),
            "v": [i * 3 + ts for i in ids],
            # types whose Spark type the adapter derives from the Avro schema
            "fare": pa.array([Decimal(i) / 4 for i in ids], pa.decimal128(10, 2)),
            "at": pa.array(
                [datetime(2024, 1, 1, i % 24, tzinfo=timezone.utc) for i in ids], pa.timestamp("us", "UTC")
            ),
            "day": pa.array([date(2024, 1, 1 + i % 28) for i in ids], pa.date32()),
            "tags": [[f"t{i}"] * (i % 3) for i in ids],
            "n": pa.array(list(ids), pa.int32()),
        }
    )


def _key(row: dict[str, Any]) -> list[Any]:
    return [row["id"], row["city"], row["v"]]


@pytest.fixture(scope="module")
def run(shim_jar: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("hms_spark")
    db = f"sqlite:///{root / 'metastore.db'}"
    token = token_for(db)
    thrift_port = free_port()
    server = ServerProcess(
        db, root, "--sync-interval", "0.2", "--thrift-port", str(thrift_port), "--log-level", "debug"
    ).wait_ready()
    try:
        expected: dict[str, Any] = {}
        paths = {name: str(root / name) for name in TABLES}
        for name, table_type in TABLES.items():
            path = root / name
            opts = {
                "hoodie.table.name": name,
                "hoodie.database.name": "lake",
                "hoodie.datasource.write.recordkey.field": "id",
                "hoodie.datasource.write.partitionpath.field": "city",
                "hoodie.datasource.write.precombine.field": "ts",
                "hoodie.datasource.write.table.type": table_type,
                "hoodie.metaserver.enabled": "true",
                "hoodie.metaserver.uris": server.url,
                "hoodie.metaserver.token": token,
            }
            hudi_md.write(_rows(range(0, 60), 1), str(path), operation="insert", options=opts)
            hudi_md.write(_rows(range(30, 90), 2), str(path), operation="upsert", options=opts)
            expected[name] = sorted(_key(r) for r in hudi_md.open_table(str(path)).read().to_pylist())
            if table_type == "COPY_ON_WRITE":
                rs = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(str(path)).build().read())
                expected[name + "_hudi_rs"] = sorted(_key(r) for r in rs.to_pylist())
        conf = {
            "spark.sql.catalogImplementation": "hive",
            "spark.hadoop.hive.metastore.uris": f"thrift://127.0.0.1:{thrift_port}",
            "spark.sql.warehouse.dir": str(root / "warehouse"),
            "spark.sql.session.timeZone": "UTC",
            "spark.ui.enabled": "false",
            "spark.driver.memory": "1g",
        }
        proc = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(SPARK_SCRIPT), json.dumps(conf), json.dumps(paths)],
            capture_output=True,
            text=True,
            cwd=root,
            env={**os.environ, "PYSPARK_PYTHON": sys.executable},
            timeout=600,
        )
        result = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
        assert proc.returncode == 0 and result, f"{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
        out = json.loads(result[-1][len("RESULT ") :])
        calls = {
            line.rsplit("Hive metastore call: ", 1)[1].strip()
            for line in server.log().splitlines()
            if "Hive metastore call: " in line
        }
        yield {"out": out, "expected": expected, "calls": calls, "paths": paths}
    finally:
        server.stop()


def test_spark_sees_the_metastore_tables(run: dict[str, Any]) -> None:
    out = run["out"]
    assert out["databases"] == ["default", "lake"]
    assert out["tables"] == ["trips", "trips_mor"]
    assert out["provider"] == "hudi-md"
    assert out["location"] == run["paths"]["trips"]
    columns = [c for c, _ in out["describe"]]
    assert columns[:5] == [
        "_hoodie_commit_time",
        "_hoodie_commit_seqno",
        "_hoodie_record_key",
        "_hoodie_partition_path",
        "_hoodie_file_name",
    ]
    assert ["id", "string"] in out["describe"] and ["v", "bigint"] in out["describe"]
    assert "# Partition Information" in columns


@pytest.mark.parametrize("name", list(TABLES))
def test_catalog_schema_is_the_data_sources(run: dict[str, Any], name: str) -> None:
    by_name, by_path = run["out"][name + "_schemas"]
    assert by_name == by_path
    assert ["fare", "decimal(10,2)"] in by_name and ["at", "timestamp"] in by_name
    assert ["day", "date"] in by_name and ["tags", "array<string>"] in by_name and ["n", "int"] in by_name
    typed_by_name, typed_by_path = run["out"][name + "_typed"]
    assert typed_by_name == typed_by_path and len(typed_by_name) == 90


@pytest.mark.parametrize("name", list(TABLES))
def test_spark_table_reads_equal_the_readers(run: dict[str, Any], name: str) -> None:
    out, expected = run["out"], run["expected"]
    assert len(expected[name]) == 90
    assert out[name] == expected[name]
    if name + "_hudi_rs" in expected:
        assert out[name] == expected[name + "_hudi_rs"]
    assert out[name + "_sf"] == [r for r in expected[name] if r[1] == "sf"]
    # the data source got the metastore from the table: partitions pruned on the server
    assert out[name + "_sf_counters"].get("partitions_from_catalog") == 1, out[name + "_sf_counters"]


def test_spark_sql_and_partitions(run: dict[str, Any]) -> None:
    out, expected = run["out"], run["expected"]
    assert out["sql_in"] == sum(1 for r in expected["trips"] if r[1] in ("la", "nyc"))
    assert out["sql_in_counters"].get("partitions_from_catalog") == 2, out["sql_in_counters"]
    assert out["partitions"] == ["city=la", "city=nyc", "city=sf"]
    assert out["partitions_sf"] == ["city=sf"]
    assert out["by_filter"] == ["nyc", "sf"]


def test_spark_catalog_listing_and_a_refused_write(run: dict[str, Any]) -> None:
    out = run["out"]
    assert out["catalog_tables"] == ["trips", "trips_mor"]
    if out["spark_version"].startswith("3."):
        assert "managed by hudi-md" in out["add_partition"], out["add_partition"]  # the adapter's refusal
    else:
        # Spark 4 turns the table back into Hive's object before calling the metastore, which
        # loads its input format: Hudi's, absent without Hudi's jars, so it fails on its side
        assert "ClassNotFoundException: org.apache.hudi.hadoop" in out["add_partition"], out["add_partition"]
    assert out["partitions"] == ["city=la", "city=nyc", "city=sf"]  # nothing added


def test_spark_calls(run: dict[str, Any]) -> None:
    # what Spark's Hive 2.3 client asked for, all answered (an unsupported call is logged and fails
    # the query, which the tests above would show)
    assert {"set_ugi", "get_database", "get_databases", "get_tables", "get_table"} <= run["calls"]
    # (SHOW PARTITIONS of a hudi-md table asks its planner, not the metastore)
    assert {"get_partitions_by_filter"} <= run["calls"]
