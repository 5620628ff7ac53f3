"""``spark.read.format("hudi-md")`` on ``s3a://``: an S3-compatible server (moto) on loopback.

The tables are written to the server (a COW table by hudi-md's writer, a MOR fixture table with
log files copied as is), then a Spark driver in a child process (its JVM needs hadoop-aws and the
AWS SDK on the classpath from the start: ``scripts/fetch-s3-jars <Spark line>`` puts them in
build/jars; SDK v1 for Spark 3.5's Hadoop 3.3, v2 for Spark 4's Hadoop 3.4+) reads
them through the shim, with the S3A settings as ``spark.hadoop.fs.s3a.*`` and as read options
(``fs.s3a.*``, which the planner process maps to s3fs options). The hudi-md rows are compared with
``spark.read.parquet`` over the files the plan lists and with hudi-md's Python reader.

Run as a script (``python test_s3.py ENDPOINT SPEC OUT``) it is that child.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from s3_server import REPO, moto_server, s3_jars_or_skip

MOR_TRIPS = "quickstart_trips_table/mor/avro/v8_trips_8i3u1d.zip"  # city=<string>, updates + a delete
KEY = SECRET = "test"
REGION = "us-east-1"


def s3a_options(endpoint: str) -> dict[str, str]:
    return {
        "fs.s3a.endpoint": endpoint,
        "fs.s3a.endpoint.region": REGION,
        "fs.s3a.path.style.access": "true",
        "fs.s3a.connection.ssl.enabled": "false",
        "fs.s3a.access.key": KEY,
        "fs.s3a.secret.key": SECRET,
        "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
    }


def storage_options(endpoint: str) -> dict[str, Any]:
    """The same server's settings as s3fs options (for hudi-md's writer and Python reader)."""
    return {"key": KEY, "secret": SECRET, "client_kwargs": {"endpoint_url": endpoint, "region_name": REGION}}


def _rows(df: Any, columns: list[str]) -> list[list[Any]]:
    return sorted(([r[c] for c in columns] for r in df.select(*columns).collect()), key=repr)


def child(endpoint: str, spec_path: str, out_path: str) -> None:
    """The Spark side: reads each table of the spec and writes what it saw as JSON."""
    from pyspark.sql import SparkSession

    from hudi_md.spark.session import configure, last_plan_counters

    spec = json.loads(Path(spec_path).read_text())
    options = s3a_options(endpoint)
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("hudi-md-s3-test")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.jars", ",".join(spec["jars"]))
    )
    for k, v in options.items():
        builder = builder.config(f"spark.hadoop.{k}", v)
    spark = configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    out: dict[str, Any] = {}
    try:
        for name, t in spec["tables"].items():
            md = spark.read.format("hudi-md").options(**options).load(t["path"])
            cols = t["columns"]
            # the files the relation lists (Dataset.inputFiles knows V1 scans only; queries read V2)
            listed = md._jdf.queryExecution().analyzed().relation().location().inputFiles()
            got: dict[str, Any] = {"rows": _rows(md, cols), "input_files": sorted(listed)}
            got["filtered"] = _rows(md.where(t["where"]), cols)
            got["counters"] = last_plan_counters(spark)
            if t.get("parquet"):
                got["parquet_rows"] = _rows(spark.read.parquet(*got["input_files"]), cols)
                got["parquet_filtered"] = _rows(
                    spark.read.option("basePath", t["path"]).parquet(*got["input_files"]).where(t["where"]),
                    cols,
                )
            if t.get("then_spark_upsert"):
                # written from the executors (hudi_md.write of a DataFrame): new files go where the
                # table's storage layout puts them
                import hudi_md

                storage = storage_options(endpoint)
                s3_path = t["path"].replace("s3a://", "s3://", 1)
                df = spark.createDataFrame([tuple(r) for r in t["then_spark_upsert"]], t["schema"])
                hudi_md.write(df, s3_path, operation="upsert", options={**storage, **t["write_options"]})
                after = spark.read.format("hudi-md").options(**options).load(t["path"])
                got["rows_after_spark_upsert"] = _rows(after, cols)
                got["input_files_after"] = sorted(after.inputFiles())
            if t.get("then_upsert"):
                # a commit from another process than the planner's: the next plan must see it
                import pyarrow as pa

                import hudi_md

                storage = storage_options(endpoint)
                s3_path = t["path"].replace("s3a://", "s3://", 1)
                write_opts = {**storage, **t["write_options"]}
                hudi_md.write(pa.table(t["then_upsert"]), s3_path, operation="upsert", options=write_opts)
                after = spark.read.format("hudi-md").options(**options).load(t["path"])
                got["rows_after_upsert"] = _rows(after, cols)
            out[name] = got
    finally:
        spark.stop()
    Path(out_path).write_text(json.dumps(out, default=str))


# --- the tests ---------------------------------------------------------------------------------------


def test_planner_maps_s3a_settings_to_s3fs_options() -> None:
    from hudi_md.storage.hadoop_s3a import s3a_storage_options

    opts = {
        "hoodie.metadata.enable": "true",
        "fs.s3a.endpoint": "127.0.0.1:9000",
        "fs.s3a.connection.ssl.enabled": "false",
        "spark.hadoop.fs.s3a.access.key": "session-key",
        "fs.s3a.access.key": "read-option-key",
        "spark.hadoop.fs.s3a.secret.key": "s",
        "fs.s3a.path.style.access": "true",
        "fs.s3a.endpoint.region": "eu-west-1",
        "fs.s3a.bucket.other.endpoint": "http://elsewhere:1",
        "fs.s3a.bucket.b.access.key": "bucket-key",
        "fs.s3a.fast.upload": "true",
    }
    assert s3a_storage_options("s3a://b/t", opts) == {
        "hoodie.metadata.enable": "true",
        "key": "bucket-key",
        "secret": "s",
        "client_kwargs": {"endpoint_url": "http://127.0.0.1:9000", "region_name": "eu-west-1"},
        "use_ssl": False,
        "config_kwargs": {"s3": {"addressing_style": "path"}},
        "use_listings_cache": False,
        "max_concurrency": 1,
    }
    assert s3a_storage_options("s3://other/t", opts)["key"] == "read-option-key"
    assert s3a_storage_options("s3://other/t", opts)["client_kwargs"]["endpoint_url"] == "http://elsewhere:1"
    # explicit s3fs options win; client_kwargs are merged
    explicit = {"fs.s3a.endpoint": "https://x", "key": "k", "client_kwargs": {"region_name": "r"}}
    assert s3a_storage_options("s3a://b/t", {**explicit, "fs.s3a.access.key": "other"}) == {
        "key": "k",
        "client_kwargs": {"endpoint_url": "https://x", "region_name": "r"},
        "use_listings_cache": False,
        "max_concurrency": 1,
    }
    assert s3a_storage_options("s3://b/t", {"use_listings_cache": True}) == {
        "use_listings_cache": True,
        "max_concurrency": 1,
    }
    # not an S3 path: the S3A settings are dropped, the rest is kept
    assert s3a_storage_options("/tmp/t", opts) == {"hoodie.metadata.enable": "true"}
    assert s3a_storage_options("file:/tmp/t", {"fs.s3a.anything": "x"}) == {}


@pytest.mark.s3
def test_hudi_md_format_on_s3a(shim_jar: str, table_path: Any, tmp_path: Path) -> None:
    jars = s3_jars_or_skip()
    import pyarrow as pa
    import s3fs

    import hudi_md

    with moto_server() as endpoint:
        storage = storage_options(endpoint)
        fs = s3fs.S3FileSystem(**storage)
        fs.call_s3("create_bucket", Bucket="hudi-md-test")
        fs.call_s3("create_bucket", Bucket="hudi-md-data")

        # COW, written by hudi-md: an insert, then an upsert that rewrites two of the three partitions
        hoodie_opts = {
            "hoodie.table.name": "s3_cow",
            "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "dt",
            "hoodie.datasource.write.precombine.field": "v",
            "hoodie.datasource.write.hive_style_partitioning": "true",
        }
        write_opts = {**storage, **hoodie_opts}
        first = pa.table(
            {
                "id": [f"k{i:02d}" for i in range(30)],
                "dt": [f"d{i % 3}" for i in range(30)],
                "v": list(range(30)),
            }
        )
        hudi_md.write(first, "s3://hudi-md-test/cow", operation="insert", options=write_opts)
        update = pa.table({"id": ["k01", "k02", "k04"], "dt": ["d1", "d2", "d1"], "v": [101, 102, 104]})
        hudi_md.write(update, "s3://hudi-md-test/cow", operation="upsert", options=write_opts)

        # MOR under the federated layout (RFC-60): data files in another bucket, under hashed prefixes
        fed_opts = {
            "hoodie.table.name": "s3_fed",
            "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "dt",
            "hoodie.datasource.write.precombine.field": "v",
            "hoodie.datasource.write.hive_style_partitioning": "true",
            "hoodie.datasource.write.table.type": "MERGE_ON_READ",
            "hoodie.storage.strategy.class": "hudi_md.storage.strategy.ObjectStoreStorageStrategy",
            "hoodie.storage.path": "s3://hudi-md-data/fed",
        }
        hudi_md.write(first, "s3://hudi-md-test/fed", operation="insert", options={**storage, **fed_opts})
        hudi_md.write(update, "s3://hudi-md-test/fed", operation="upsert", options={**storage, **fed_opts})

        # MOR with log files (merged on the executor by the planner process), copied as is
        local_mor = table_path(MOR_TRIPS)
        for p in local_mor.rglob("*"):
            if p.is_file():
                fs.pipe_file(f"hudi-md-test/mor/{p.relative_to(local_mor).as_posix()}", p.read_bytes())
        mor_table = hudi_md.open_table(str(local_mor))
        mor_cols = ["_hoodie_record_key", "city", "fare"]

        spec = {
            "jars": jars,
            "tables": {
                "cow": {
                    "path": "s3a://hudi-md-test/cow",
                    "columns": ["id", "dt", "v"],
                    "where": "dt = 'd1' AND v > 10",
                    "parquet": True,
                    "write_options": hoodie_opts,
                    "then_upsert": {"id": ["k05", "k99"], "dt": ["d2", "d0"], "v": [105, 99]},
                },
                "fed": {
                    "path": "s3a://hudi-md-test/fed",
                    "columns": ["id", "dt", "v"],
                    "where": "dt = 'd1' AND v > 10",
                    "write_options": fed_opts,
                    "schema": "id string, dt string, v long",
                    "then_spark_upsert": [["k07", "d1", 107], ["k98", "d2", 98]],
                },
                "mor": {
                    "path": "s3a://hudi-md-test/mor",
                    "columns": mor_cols,
                    "where": "city = 'san_francisco'",
                },
            },
        }
        spec_path = tmp_path / "spec.json"
        spec_path.write_text(json.dumps(spec))
        out_path = tmp_path / "out.json"
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
        proc = subprocess.run(
            [sys.executable, __file__, endpoint, str(spec_path), str(out_path)],
            capture_output=True,
            text=True,
            timeout=900,  # a hang guard: a loaded CI machine took over 300 s here
            env=env,
            cwd=REPO,
        )
        assert proc.returncode == 0, proc.stderr[-5000:]
        got = json.loads(out_path.read_text())
        fed_table_keys = fs.find("hudi-md-test/fed")

    cow = got["cow"]
    upd = {"k01": 101, "k02": 102, "k04": 104}
    want = sorted(([f"k{i:02d}", f"d{i % 3}", upd.get(f"k{i:02d}", i)] for i in range(30)), key=repr)
    assert cow["rows"] == want
    assert cow["parquet_rows"] == want  # the latest file slices only: no row twice
    assert cow["filtered"] == sorted((r for r in want if r[1] == "d1" and r[2] > 10), key=repr)
    assert cow["parquet_filtered"] == cow["filtered"]
    assert cow["input_files"] and all(f.startswith("s3a://hudi-md-test/cow/dt=") for f in cow["input_files"])
    assert len(cow["input_files"]) == 3
    # by its files key: the list of all partitions not read
    counters = cow["counters"]
    assert counters["partitions_from_keys"] == counters["partitions_after_partition_pruning"] == 1
    assert "partitions" not in counters
    upd.update({"k05": 105})
    want_after = sorted(
        [[f"k{i:02d}", f"d{i % 3}", upd.get(f"k{i:02d}", i)] for i in range(30)] + [["k99", "d0", 99]],
        key=repr,
    )
    assert cow["rows_after_upsert"] == want_after

    fed = got["fed"]
    upd = {"k01": 101, "k02": 102, "k04": 104}
    want = sorted(([f"k{i:02d}", f"d{i % 3}", upd.get(f"k{i:02d}", i)] for i in range(30)), key=repr)
    assert fed["rows"] == want
    assert fed["filtered"] == sorted((r for r in want if r[1] == "d1" and r[2] > 10), key=repr)
    assert fed["counters"]["partitions_after_partition_pruning"] == 1
    # Spark's Parquet reader scans the data bucket, under the strategy's prefixes
    assert fed["input_files"] and all(f.startswith("s3a://hudi-md-data/fed/") for f in fed["input_files"])
    assert all("/s3_fed/dt=" in f for f in fed["input_files"])
    assert any(".log." in f for f in fed["input_files"]), "the upsert logged into MOR file groups"
    upd.update({"k07": 107})
    want_after = sorted(
        [[f"k{i:02d}", f"d{i % 3}", upd.get(f"k{i:02d}", i)] for i in range(30)] + [["k98", "d2", 98]],
        key=repr,
    )
    assert fed["rows_after_spark_upsert"] == want_after
    assert all(f.startswith("s3a://hudi-md-data/fed/") for f in fed["input_files_after"])
    # the table path holds .hoodie/ and partition metadata only
    assert fed_table_keys
    assert all("/.hoodie/" in k or k.endswith(".hoodie_partition_metadata") for k in fed_table_keys)

    mor = got["mor"]
    rows = mor_table.read(columns=mor_cols).to_pylist()
    want_mor = sorted(([r[c] for c in mor_cols] for r in rows), key=repr)
    assert mor["rows"] == want_mor
    assert mor["filtered"] == sorted((r for r in want_mor if r[1] == "san_francisco"), key=repr)
    assert mor["filtered"] and len(mor["filtered"]) < len(want_mor)
    assert all(f.startswith("s3a://hudi-md-test/mor/") for f in mor["input_files"])
    assert any(".log." in f for f in mor["input_files"]), "the MOR table should have slices with log files"


if __name__ == "__main__":
    child(*sys.argv[1:4])
