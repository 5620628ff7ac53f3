"""``spark.read.format("hudi-md")`` from a Spark Connect client (Spark 4).

A Spark Connect server is started as a user would start it, from the running PySpark's
``spark-submit`` (``--class org.apache.spark.sql.connect.service.SparkConnectServer``; PySpark 4's
wheel ships the spark-connect jar) with the shim jar of this Spark line (``--jars``), the planner's
interpreter (``spark.hudi_md.planner.python``) and a free port. A client session on
``sc://localhost:<port>`` (``pyspark[connect]``: gRPC, no JVM of its own) reads tables with filters
and query options; the rows are compared with hudi-md's Python reader.

The client runs in a child process (``python test_connect.py URL SPEC OUT``): once a process made a
Connect session, PySpark's builders there (and in the processes it starts) make Connect sessions,
which would break every later classic-session test.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyspark
import pytest
from s3_server import free_port

import hudi_md
from hudi_md.spark.session import EXTENSIONS_CLASS, PLANNER_PYTHON_CONF

COW_TXNS = "sample_table/cow/v9_txns_simple_meta.zip"  # region=<string>, hive style
MOR_TRIPS = "quickstart_trips_table/mor/avro/v8_trips_8i3u1d.zip"  # log files: merged by the planner
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
SPARK_MAJOR = int(pyspark.__version__.split(".")[0])

pytestmark = pytest.mark.skipif(SPARK_MAJOR < 4, reason="Spark Connect is tested on Spark 4 lines")


def _wait_for_port(port: int, server: subprocess.Popen[bytes], log: Path, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError(
                f"Spark Connect server exited ({server.returncode}):\n{log.read_text()[-5000:]}"
            )
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    raise AssertionError(
        f"Spark Connect server not listening on {port} after {timeout}s:\n{log.read_text()[-5000:]}"
    )


@pytest.fixture(scope="module")
def connect_url(shim_jar: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    pytest.importorskip(
        "grpc", reason="the Spark Connect client needs pyspark[connect] (scripts/setup-spark installs it)"
    )
    port = free_port()
    log = tmp_path_factory.mktemp("connect") / "server.log"
    spark_submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    command = [
        str(spark_submit),
        "--master",
        "local[2]",
        "--class",
        SERVER_CLASS,
        "--jars",
        shim_jar,
        "--conf",
        f"spark.connect.grpc.binding.port={port}",
        "--conf",
        f"{PLANNER_PYTHON_CONF}={sys.executable}",
        "--conf",
        f"spark.sql.extensions={EXTENSIONS_CLASS}",
        "--conf",
        "spark.ui.enabled=false",
        "--conf",
        "spark.sql.session.timeZone=UTC",
        "--conf",
        "spark.sql.shuffle.partitions=2",
    ]
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_CONNECT_MODE": "0"}
    env.pop("SPARK_HOME", None)  # the running PySpark's own
    with log.open("wb") as out:
        server = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    try:
        _wait_for_port(port, server, log)
        yield f"sc://localhost:{port}"
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


READS = {
    # fixture, columns, Spark filter, the same on Python rows
    "cow": (
        COW_TXNS,
        ["txn_id", "amount", "region"],
        "region = 'us' AND amount > 500",
        lambda r: r["region"] == "us" and r["amount"] > 500,
    ),
    "mor": (
        MOR_TRIPS,
        ["_hoodie_record_key", "city", "fare", "rider"],
        "city = 'san_francisco' AND fare > 20",
        lambda r: r["city"] == "san_francisco" and r["fare"] > 20,
    ),
}
INC_COLUMNS = ["_hoodie_record_key", "_hoodie_commit_time", "fare"]


def _rows(df: Any, columns: list[str]) -> list[list[Any]]:
    return sorted(([r[c] for c in columns] for r in df.select(*columns).collect()), key=repr)


def _want(rows: list[dict[str, Any]], columns: list[str]) -> list[list[Any]]:
    """Python rows as the client's rows come back (sorted, through JSON: decimals as strings)."""
    want = sorted(([r[c] for c in columns] for r in rows), key=repr)
    return json.loads(json.dumps(want, default=str))


def child(url: str, spec_path: str, out_path: str) -> None:
    """The Connect client: runs the spec's reads (and write) and writes what it saw as JSON."""
    from pyspark.sql import SparkSession
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    spec = json.loads(Path(spec_path).read_text())
    spark = SparkSession.builder.remote(url).getOrCreate()
    out: dict[str, Any] = {"connect": isinstance(spark, ConnectSession), "version": spark.version}
    try:
        for name, t in spec.get("reads", {}).items():
            df = spark.read.format("hudi-md").load(t["path"])
            filtered = df.where(t["where"])
            out[name] = {
                "rows": _rows(df, t["columns"]),
                "filtered": _rows(filtered, t["columns"]),
                "count": filtered.count(),
                "explain": filtered._explain_string(extended=True),
            }
        if "mor_options" in spec:
            t = spec["mor_options"]
            read = spark.read.format("hudi-md")
            ro = read.option("hoodie.datasource.query.type", "read_optimized").load(t["path"])
            inc = (
                spark.read.format("hudi-md")
                .option("hoodie.datasource.query.type", "incremental")
                .option("hoodie.datasource.read.begin.instanttime", t["begin"])
                .load(t["path"])
            )
            spark.sql(
                f"CREATE OR REPLACE TEMPORARY VIEW trips_connect USING hudi_md OPTIONS (path '{t['path']}')"
            )
            by_city = spark.sql("SELECT city, count(*) AS n FROM trips_connect GROUP BY city").collect()
            out["mor_options"] = {
                "read_optimized": _rows(ro, INC_COLUMNS),
                "incremental": _rows(inc, INC_COLUMNS),
                "by_city": {r["city"]: r["n"] for r in by_city},
            }
        if "write" in spec:
            w = spec["write"]
            df = spark.createDataFrame([tuple(r) for r in w["rows"]], w["schema"])
            df.write.format("hudi-md").options(**w["options"]).mode("append").save(w["path"])
            out["written_back"] = _rows(spark.read.format("hudi-md").load(w["path"]), w["columns"])
    finally:
        spark.stop()
    Path(out_path).write_text(json.dumps(out, default=str))


def _run_client(url: str, spec: dict[str, Any], tmp: Path) -> dict[str, Any]:
    spec_path, out_path = tmp / "spec.json", tmp / "out.json"
    spec_path.write_text(json.dumps(spec))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPARK_")}
    proc = subprocess.run(
        [sys.executable, __file__, url, str(spec_path), str(out_path)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-5000:]
    return json.loads(out_path.read_text())


@pytest.fixture(scope="module")
def client(connect_url: str, table_path: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """What the Connect client read: every read of the module in one client process."""
    reads = {
        name: {"path": str(table_path(fixture)), "columns": columns, "where": where}
        for name, (fixture, columns, where, _) in READS.items()
    }
    mor = table_path(MOR_TRIPS)
    begin = next(iter(hudi_md.open_table(str(mor)).timeline.write_timeline())).requested_time
    spec = {"reads": reads, "mor_options": {"path": str(mor), "begin": begin}}
    return _run_client(connect_url, spec, tmp_path_factory.mktemp("connect-client"))


def test_the_client_session_is_spark_connect(client: dict[str, Any]) -> None:
    assert client["connect"] is True
    assert client["version"] == pyspark.__version__


@pytest.mark.parametrize("name", sorted(READS))
def test_read_with_filters_through_connect(client: dict[str, Any], table_path: Any, name: str) -> None:
    fixture, columns, _, keep = READS[name]
    rows = hudi_md.open_table(str(table_path(fixture))).read(columns=columns).to_pylist()
    got = client[name]
    assert got["rows"] == _want(rows, columns)
    want = _want([r for r in rows if keep(r)], columns)
    assert want and len(want) < len(rows)
    assert got["filtered"] == want
    assert got["count"] == len(want)
    # the plan is the shim's V2 scan, made on the server (BatchScan ... HudiMdScan ... reader=...)
    assert "HudiMdScan" in got["explain"] and "reader=vectorized Parquet" in got["explain"]


def test_query_options_and_sql_through_connect(client: dict[str, Any], table_path: Any) -> None:
    table = hudi_md.open_table(str(table_path(MOR_TRIPS)))
    commits = [i.requested_time for i in table.timeline.write_timeline()]
    assert len(commits) >= 2
    got = client["mor_options"]
    ro = table.read(columns=INC_COLUMNS, query_type="read_optimized").to_pylist()
    assert got["read_optimized"] == _want(ro, INC_COLUMNS)
    inc = table.read(columns=INC_COLUMNS, query_type="incremental", start=commits[0]).to_pylist()
    assert inc and got["incremental"] == _want(inc, INC_COLUMNS)
    by_city: dict[str, int] = {}
    for r in table.read(columns=["city"]).to_pylist():
        by_city[r["city"]] = by_city.get(r["city"], 0) + 1
    assert got["by_city"] == by_city


def test_write_through_connect(connect_url: str, tmp_path: Path) -> None:
    path = str(tmp_path / "written_through_connect")
    rows = [[f"k{i}", f"d{i % 2}", i] for i in range(10)]
    columns = ["id", "dt", "v"]
    write = {
        "path": path,
        "rows": rows,
        "schema": "id string, dt string, v long",
        "columns": columns,
        "options": {
            "hoodie.table.name": "connect_write",
            "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "dt",
            "hoodie.datasource.write.precombine.field": "v",
        },
    }
    got = _run_client(connect_url, {"write": write}, tmp_path)
    want = sorted(rows, key=repr)
    assert _want(hudi_md.open_table(path).read(columns=columns).to_pylist(), columns) == want
    assert got["written_back"] == want


if __name__ == "__main__":
    child(*sys.argv[1:4])
