"""The session's Hadoop configuration reaches hudi-md as it reaches Spark's readers, and its secrets
stay out of plans, logs and errors.

A moto S3 server on loopback holds a COW table (written by hudi-md) and a MOR table with log files
(merged by the planner process on the executor: ``read_slice``). A Spark driver in a child process
reads both with ``spark.read.format("hudi-md").load(path)`` and no read option: the endpoint,
region and TLS setting are ``spark.hadoop.fs.s3a.*`` on the builder, the credentials are per-bucket
keys (``spark.hadoop.fs.s3a.bucket.<bucket>.access.key`` / ``secret.key``) with S3A's
SimpleAWSCredentialsProvider, and path-style access (which moto on an IP address needs) is set at
run time through ``sc._jsc.hadoopConfiguration()``. No AWS credentials exist in the environment or
in profile files, and the instance metadata service is off, so a planner (driver or executor side)
that missed the session's settings fails instead of finding credentials elsewhere. The rows are
compared with hudi-md's Python reader.

The secret key and access key never appear in ``explain(True)`` output, in the child's stderr (the
driver's log4j output at INFO, which carries the planner process's stderr and the shim's plan
log), nor in the error a bad path raises.

Run as a script (``python test_s3_session_conf.py SPEC OUT``) it is that child.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from s3_server import REPO, moto_server, s3_jars_or_skip

MOR_TRIPS = "quickstart_trips_table/mor/avro/v8_trips_8i3u1d.zip"  # city=<string>, updates + a delete
BUCKET = "hudi-md-conf"
ACCESS_KEY = "AKIAHUDIMDSESSIONKEY"
SECRET_KEY = "hudi-md-session-secret-7f3c9e21"
REGION = "eu-west-1"
# The driver's log at INFO on stderr. Loggers with a level of their own: PySpark's shell filter
# drops other INFO events on Spark 4, even after setLogLevel("INFO").
LOG4J2 = """
rootLogger.level = info
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n%ex
logger.apache.name = org.apache
logger.apache.level = info
logger.hudi.name = hudi.md
logger.hudi.level = info
"""
NO_AWS_ENV = {
    "AWS_CONFIG_FILE": "/nonexistent/hudi-md/aws-config",
    "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/hudi-md/aws-credentials",
    "AWS_EC2_METADATA_DISABLED": "true",
}


def session_conf(endpoint: str) -> dict[str, str]:
    host = endpoint.removeprefix("http://")
    return {
        "fs.s3a.endpoint": host,  # no scheme: http because of the next setting
        "fs.s3a.connection.ssl.enabled": "false",
        "fs.s3a.endpoint.region": REGION,
        "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
        f"fs.s3a.bucket.{BUCKET}.access.key": ACCESS_KEY,
        f"fs.s3a.bucket.{BUCKET}.secret.key": SECRET_KEY,
    }


def _rows(df: Any, columns: list[str]) -> list[list[Any]]:
    return sorted(([r[c] for c in columns] for r in df.select(*columns).collect()), key=repr)


def child(spec_path: str, out_path: str) -> None:
    from pyspark.sql import SparkSession

    import hudi_md
    from hudi_md.spark.reader import read_table
    from hudi_md.spark.session import configure

    spec = json.loads(Path(spec_path).read_text())
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("hudi-md-s3-session-conf")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.jars", ",".join(spec["jars"]))
        .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{spec['log4j2']}")
    )
    for k, v in spec["session_conf"].items():
        builder = builder.config(f"spark.hadoop.{k}", v)
    spark = configure(builder).getOrCreate()
    spark.sparkContext._jsc.hadoopConfiguration().set("fs.s3a.path.style.access", "true")
    out: dict[str, Any] = {}
    try:
        for name, t in spec["tables"].items():
            df = spark.read.format("hudi-md").load(t["path"])
            filtered = df.where(t["where"])
            explained = io.StringIO()
            with contextlib.redirect_stdout(explained):
                filtered.explain(True)
            out[name] = {
                "rows": _rows(df, t["columns"]),
                "filtered": _rows(filtered, t["columns"]),
                "explain": explained.getvalue(),
                # the same from Python (planned on the driver, MOR slices merged in Python workers)
                "read_table": _rows(read_table(spark, t["path"], columns=t["columns"]), t["columns"]),
            }
        w = spec["writes"]  # both write paths, with the same session-only settings
        df = spark.createDataFrame([tuple(r) for r in w["rows"]], w["schema"])
        hudi_md.write(df, w["paths"]["hudi_md_write"], operation="insert", options=w["options"])
        df.write.format("hudi-md").mode("append").options(**w["options"]).save(w["paths"]["dataframe_writer"])
        out["written"] = {
            name: _rows(spark.read.format("hudi-md").load(path), w["columns"])
            for name, path in w["paths"].items()
        }
        try:
            spark.read.format("hudi-md").load(f"s3a://{BUCKET}/no_such_table").collect()
            out["bad_path_error"] = None
        except Exception as e:  # whatever Spark raised: the test reads its text
            out["bad_path_error"] = f"{type(e).__name__}: {e}"
    finally:
        spark.stop()
    Path(out_path).write_text(json.dumps(out, default=str))


@pytest.mark.s3
def test_session_hadoop_conf_reaches_the_planner_and_secrets_stay_hidden(
    shim_jar: str, table_path: Any, tmp_path: Path
) -> None:
    jars = s3_jars_or_skip()
    import pyarrow as pa
    import s3fs

    import hudi_md

    with moto_server() as endpoint:
        storage = {
            "key": ACCESS_KEY,
            "secret": SECRET_KEY,
            "client_kwargs": {"endpoint_url": endpoint, "region_name": REGION},
        }
        fs = s3fs.S3FileSystem(**storage)
        fs.call_s3("create_bucket", Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
        cow_opts = {
            "hoodie.table.name": "conf_cow",
            "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "dt",
            "hoodie.datasource.write.precombine.field": "v",
            "hoodie.datasource.write.hive_style_partitioning": "true",
        }
        first = pa.table(
            {
                "id": [f"k{i:02d}" for i in range(20)],
                "dt": [f"d{i % 2}" for i in range(20)],
                "v": list(range(20)),
            }
        )
        hudi_md.write(first, f"s3://{BUCKET}/cow", operation="insert", options={**storage, **cow_opts})
        local_mor = table_path(MOR_TRIPS)
        for p in local_mor.rglob("*"):
            if p.is_file():
                fs.pipe_file(f"{BUCKET}/mor/{p.relative_to(local_mor).as_posix()}", p.read_bytes())

        mor_cols = ["_hoodie_record_key", "city", "fare"]
        spec = {
            "jars": jars,
            "session_conf": session_conf(endpoint),
            "tables": {
                "cow": {
                    "path": f"s3a://{BUCKET}/cow",
                    "columns": ["id", "dt", "v"],
                    "where": "dt = 'd1' AND v > 10",
                },
                "mor": {
                    "path": f"s3a://{BUCKET}/mor",
                    "columns": mor_cols,
                    "where": "city = 'san_francisco'",
                },
            },
        }
        spec["writes"] = {
            "rows": [[f"w{i}", f"d{i % 2}", i] for i in range(12)],
            "schema": "id string, dt string, v long",
            "columns": ["id", "dt", "v"],
            "options": {**cow_opts, "hoodie.table.name": "conf_written"},
            "paths": {
                "hudi_md_write": f"s3a://{BUCKET}/written_by_hudi_md_write",
                "dataframe_writer": f"s3a://{BUCKET}/written_by_dataframe_writer",
            },
        }
        # hudi-md's Python reader, on the same server: what Spark must return
        want = {}
        for name, t in spec["tables"].items():
            table = hudi_md.open_table(t["path"].replace("s3a://", "s3://", 1), storage)
            want[name] = sorted(
                ([r[c] for c in t["columns"]] for r in table.read(columns=t["columns"]).to_pylist()), key=repr
            )
        log4j2 = tmp_path / "log4j2.properties"
        log4j2.write_text(LOG4J2)
        spec["log4j2"] = str(log4j2)
        spec_path = tmp_path / "spec.json"
        spec_path.write_text(json.dumps(spec))
        out_path = tmp_path / "out.json"
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update(NO_AWS_ENV, PYSPARK_PYTHON=sys.executable)
        proc = subprocess.run(
            [sys.executable, __file__, str(spec_path), str(out_path)],
            capture_output=True,
            text=True,
            timeout=900,  # a hang guard: a loaded CI machine took over 300 s here
            env=env,
            cwd=REPO,
        )
        assert proc.returncode == 0, proc.stderr[-5000:]
        w = spec["writes"]
        python_read = {  # what the child wrote, read back by hudi-md's Python reader
            name: sorted(
                (
                    [r[c] for c in w["columns"]]
                    for r in hudi_md.open_table(path.replace("s3a://", "s3://", 1), storage)
                    .read(columns=w["columns"])
                    .to_pylist()
                ),
                key=repr,
            )
            for name, path in w["paths"].items()
        }
    got = json.loads(out_path.read_text())

    assert got["cow"]["rows"] == want["cow"] and len(want["cow"]) == 20
    assert got["cow"]["filtered"] == sorted((r for r in want["cow"] if r[1] == "d1" and r[2] > 10), key=repr)
    assert got["mor"]["rows"] == want["mor"]
    assert got["cow"]["read_table"] == want["cow"] and got["mor"]["read_table"] == want["mor"]
    assert got["mor"]["filtered"] == sorted((r for r in want["mor"] if r[1] == "san_francisco"), key=repr)
    assert got["mor"]["filtered"]
    written = sorted(spec["writes"]["rows"], key=repr)
    assert got["written"] == python_read == {name: written for name in spec["writes"]["paths"]}

    log = proc.stderr
    # what is searched holds what it should: the plans, the shim's log, the planner's answer
    for name in ("cow", "mor"):  # BatchScan ... HudiMdScan hudi-md.`s3a://...`
        assert "HudiMdScan" in got[name]["explain"] and f"s3a://{BUCKET}/{name}" in got[name]["explain"]
    assert f"hudi-md plan for s3a://{BUCKET}/mor" in log and "hudi-md: started planner process" in log
    assert "INFO SparkContext: " in log  # Spark's own INFO log
    assert got["bad_path_error"] and "no_such_table" in got["bad_path_error"]
    for text in (got["cow"]["explain"], got["mor"]["explain"], log, got["bad_path_error"]):
        assert SECRET_KEY not in text
        assert ACCESS_KEY not in text


if __name__ == "__main__":
    child(*sys.argv[1:3])
