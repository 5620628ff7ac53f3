"""`hudi_md.spark.hive_sync` against Spark's embedded Hive metastore (Derby): the table is
registered the way Hudi's Hive sync registers data-source tables, and plain SQL on it plans
through hudi-md — from PySpark and from the `spark-sql` command line, which shares the metastore.

Both run in fresh JVMs (a Hive-enabled session cannot join the test process's running Spark).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import hudi
import pyarrow as pa
import pytest

SIMPLE = "sample_table/cow/v9_txns_simple_meta.zip"  # partitioned by region


def _hive_conf(root: Path) -> dict[str, str]:
    return {
        "spark.sql.catalogImplementation": "hive",
        "spark.sql.warehouse.dir": str(root / "warehouse"),
        "spark.hadoop.javax.jdo.option.ConnectionURL": (
            f"jdbc:derby:;databaseName={root / 'metastore_db'};create=true"
        ),
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.enabled": "false",
    }


def _expected(path: str) -> dict[str, int]:
    t = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(path).build().read())
    counts: dict[str, int] = {}
    for region in t.column("region").to_pylist():
        counts[region] = counts.get(region, 0) + 1
    return counts


@pytest.mark.spark_smoke
def test_hive_sync_then_sql_from_pyspark_and_spark_sql_cli(shim_jar: str, table_path, tmp_path: Path) -> None:
    path = str(table_path(SIMPLE))
    expected = _expected(path)
    conf = _hive_conf(tmp_path)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    script = textwrap.dedent(
        f"""
        import json, sys
        from pyspark.sql import SparkSession
        from hudi_md.spark.catalog import hive_sync
        from hudi_md.spark.session import configure, last_plan_counters

        builder = SparkSession.builder.master("local[1]")
        for k, v in {conf!r}.items():
            builder = builder.config(k, v)
        spark = configure(builder.enableHiveSupport()).getOrCreate()
        hive_sync(spark, {path!r}, "lake", "txns")
        meta = spark.sql("DESCRIBE TABLE EXTENDED lake.txns").collect()
        info = {{r[0]: r[1] for r in meta}}
        by_region = {{r[0]: r[1] for r in spark.sql(
            "SELECT region, count(*) FROM lake.txns GROUP BY region").collect()}}
        us = spark.sql("SELECT count(*) FROM lake.txns WHERE region = 'us'").collect()[0][0]
        out = {{"provider": info.get("Provider"), "type": info.get("Type"), "by_region": by_region,
               "us": us, "jvm_partitions": last_plan_counters(spark)["jvm_partitions"],
               "partition_columns": [r[0] for r in spark.catalog.listColumns("lake.txns")
                                     if r.isPartition]}}
        print("RESULT " + json.dumps(out))
        spark.stop()
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path
    )
    result_lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and result_lines, proc.stdout[-2000:] + proc.stderr[-4000:]
    got = json.loads(result_lines[-1][len("RESULT ") :])
    assert got["provider"] == "hudi-md"
    assert got["type"] == "EXTERNAL"  # the table points at the Hudi table; dropping it keeps the data
    assert got["partition_columns"] == ["region"]
    assert got["by_region"] == expected
    assert got["us"] == expected["us"]
    assert got["jvm_partitions"] == 1  # partition pruning happened in the planner

    # The spark-sql command line on the same metastore sees the synced table and plans through the
    # shim (its jar on --jars, the planner's Python from PYSPARK_PYTHON).
    import pyspark

    spark_sql = Path(pyspark.__file__).parent / "bin" / "spark-sql"
    if not spark_sql.is_file():
        pytest.skip(f"{spark_sql} is not part of this pyspark installation")
    args = [str(spark_sql), "--master", "local[1]", "--jars", shim_jar]
    for k, v in conf.items():
        args += ["--conf", f"{k}={v}"]
    args += [
        "-S",
        "-e",
        "SELECT region, count(*) FROM lake.txns WHERE region IN ('us', 'eu') GROUP BY region",
    ]
    cli = subprocess.run(args, capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert cli.returncode == 0, cli.stdout[-2000:] + cli.stderr[-4000:]
    rows = dict(
        (parts[0], int(parts[1]))
        for parts in (ln.split("\t") for ln in cli.stdout.splitlines())
        if len(parts) == 2
    )
    assert rows == {r: expected[r] for r in ("us", "eu")}
