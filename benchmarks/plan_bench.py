"""Planning benchmark: `spark.read.format("hudi-md")` (MDT planning) against Spark's own listing
(`spark.read.parquet` with partition discovery) on the same table, cold and warm.

    .venv/bin/python benchmarks/plan_bench.py --partitions 1000 --partitions 10000
    .venv/bin/python benchmarks/plan_bench.py --storage s3 --partitions 1000 --partitions 10000

"cold" is the first query on a new DataFrame after a fresh planner process / file listing cache;
"warm" repeats it (median of ``--repeats``). The query is the same for both readers:
``.where("dt = 'p00042' AND v > 100").count()``, so it includes reading the one matching file.
Figures are ratios between the two readers in the same process. Results are appended to
benchmarks/results/plan_bench.jsonl.

``--storage s3`` writes the tables to an S3-compatible server on loopback (moto, run as its own
process so it shares no GIL with the benchmark) and reads them through ``s3a://`` with Hadoop's
S3A connector (``scripts/fetch-s3-jars`` fetches hadoop-aws and the AWS SDK bundle into
build/jars). Spark gets the endpoint and credentials as ``spark.hadoop.fs.s3a.*``; the hudi-md
relation also gets them as read options (``fs.s3a.*``), which its planner process maps to s3fs
options. The S3 requests the server served during each query are counted from its request log.

``--warmup`` first runs both readers once on a small separate table (loads the JVM's classes, the
S3A connector and the planner's Python imports), so that "cold" measures the cold listing of the
benchmark table rather than the first query of the JVM.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

import hudi_md

REPO = Path(__file__).resolve().parents[1]
WHERE = "dt = 'p00042' AND v > 100"


def build_table(path: str, partitions: int, storage_options: dict[str, Any] | None = None) -> None:
    rows_per = 5
    n = partitions * rows_per
    data = pa.table(
        {
            "id": [f"k{i:08d}" for i in range(n)],
            "dt": [f"p{i // rows_per:05d}" for i in range(n)],
            "v": list(range(n)),
        }
    )
    hudi_md.write(
        data,
        path,
        operation="bulk_insert",
        options={
            **(storage_options or {}),
            "hoodie.table.name": "plan_bench",
            "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "dt",
            "hoodie.datasource.write.hive_style_partitioning": "true",
            "hoodie.parquet.bloom.filter.enabled": "false",
        },
    )


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class S3Server:
    """moto's S3 server on 127.0.0.1 in a subprocess; its request log counts the S3 requests."""

    KEY = "test"
    SECRET = "test"
    REGION = "us-east-1"

    def __init__(self) -> None:
        self.port = _free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._log_path = Path(tempfile.mkstemp(prefix="hudi-md-moto-", suffix=".log")[1])
        self._log = open(self._log_path, "wb")  # noqa: SIM115 (closed in stop())
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},  # a log line per request, as it is served
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.5).close()
                break
            except OSError as e:
                if self._proc.poll() is not None or time.monotonic() > deadline:
                    tail = self._log_path.read_text(errors="replace")[-2000:]
                    self.stop()
                    raise RuntimeError(f"moto server did not start: {tail}") from e
                time.sleep(0.1)

    def storage_options(self) -> dict[str, Any]:
        """s3fs options (for hudi_md.write / open_table)."""
        return {
            "key": self.KEY,
            "secret": self.SECRET,
            "client_kwargs": {"endpoint_url": self.endpoint, "region_name": self.REGION},
        }

    def s3a_options(self) -> dict[str, str]:
        """Hadoop S3A settings (``fs.s3a.*``) for this server."""
        return {
            "fs.s3a.endpoint": self.endpoint,
            "fs.s3a.endpoint.region": self.REGION,
            "fs.s3a.path.style.access": "true",
            "fs.s3a.connection.ssl.enabled": "false",
            "fs.s3a.access.key": self.KEY,
            "fs.s3a.secret.key": self.SECRET,
            "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
        }

    def create_bucket(self, bucket: str) -> None:
        import s3fs

        s3fs.S3FileSystem(**self.storage_options()).call_s3("create_bucket", Bucket=bucket)

    def requests(self) -> tuple[int, int]:
        """Requests served so far, and how many of them were not for a ``.parquet`` object
        (listings, ``.hoodie/``): from the request log, once it had a moment to be written."""
        time.sleep(0.3)
        total = files = 0
        with open(self._log_path, "rb") as f:
            for line in f:
                if b" HTTP/1." in line:
                    total += 1
                    files += b".parquet HTTP/1." in line
        return total, total - files

    def stop(self) -> None:
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._log.close()
        self._log_path.unlink(missing_ok=True)


def fetch_s3_jars() -> list[str]:
    """hadoop-aws + aws-java-sdk-bundle for PySpark's Hadoop, from scripts/fetch-s3-jars."""
    proc = subprocess.run(
        [str(REPO / "scripts" / "fetch-s3-jars")], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise SystemExit(f"scripts/fetch-s3-jars failed:\n{proc.stderr}")
    return [line for line in proc.stdout.splitlines() if line.strip()]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", type=int, action="append", default=None)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--storage", choices=("local", "s3"), default="local")
    ap.add_argument("--warmup", action="store_true", help="run both readers once on a small table first")
    ap.add_argument("--results", type=Path, default=Path(__file__).parent / "results" / "plan_bench.jsonl")
    args = ap.parse_args()
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import DataFrameReader, SparkSession

    from hudi_md.spark.session import configure

    builder = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
    )
    server: S3Server | None = None
    read_options: dict[str, str] = {}
    storage_options: dict[str, Any] | None = None
    if args.storage == "s3":
        jars = fetch_s3_jars()
        server = S3Server()
        storage_options = server.storage_options()
        read_options = server.s3a_options()
        builder = builder.config("spark.jars", ",".join(jars))
        for k, v in read_options.items():
            builder = builder.config(f"spark.hadoop.{k}", v)
    try:
        spark = configure(builder).getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        jvm = spark.sparkContext._jvm
        args.results.parent.mkdir(parents=True, exist_ok=True)

        def hudi_md_reader() -> DataFrameReader:
            # The planner process does not see Spark's conf: S3A settings go as read options too.
            return spark.read.format("hudi-md").options(**read_options)

        def queries(path: str) -> tuple[Callable[[], None], Callable[[], None]]:
            def hudi_md_query() -> None:
                hudi_md_reader().load(path).where(WHERE).count()

            def spark_query() -> None:
                spark.read.option("basePath", path).parquet(path).where(WHERE).count()

            return hudi_md_query, spark_query

        scratch = Path(tempfile.mkdtemp(prefix="hudi-md-plan-"))

        def table_path(name: str) -> str:
            if server is None:
                return str(scratch / name)
            bucket = f"plan-bench-{name}"
            server.create_bucket(bucket)
            return f"s3a://{bucket}/t"

        if args.warmup:
            warm_path = table_path("warmup")
            build_table(warm_path.replace("s3a://", "s3://"), 50, storage_options)
            for query in queries(warm_path):
                query()

        def s3_requests() -> tuple[int, int]:
            return server.requests() if server is not None else (0, 0)

        for parts in args.partitions or [1000]:
            path = table_path(str(parts))
            build_start = time.perf_counter()
            # hudi-md writes through s3fs (s3://); Spark and the planner read the same objects as s3a://.
            build_table(path.replace("s3a://", "s3://"), parts, storage_options)
            build_s = time.perf_counter() - build_start
            hudi_md_query, spark_query = queries(path)

            # cold: fresh planner process for hudi-md; a new DataFrame for Spark (its listing is not cached)
            jvm.hudi.md.spark.PlannerClient.shutdown()
            r0 = s3_requests()
            cold_md = timed(hudi_md_query)
            cold_counters = json.loads(jvm.hudi.md.spark.HudiMdFileIndex.lastPlanJson()).get("counters", {})
            r1 = s3_requests()
            cold_spark = timed(spark_query)
            r2 = s3_requests()
            warm_md = statistics.median(timed(hudi_md_query) for _ in range(args.repeats))
            r3 = s3_requests()
            warm_spark = statistics.median(timed(spark_query) for _ in range(args.repeats))
            r4 = s3_requests()
            counters = json.loads(jvm.hudi.md.spark.HudiMdFileIndex.lastPlanJson()).get("counters", {})
            summary: dict[str, Any] = {
                "partitions": parts,
                "storage": "s3 (moto on loopback, s3a)" if server is not None else "local",
                "warmup": args.warmup,
                "repeats": args.repeats,
                "build_s": round(build_s, 1),
                "hudi_md_cold_s": round(cold_md, 3),
                "spark_listing_cold_s": round(cold_spark, 3),
                "hudi_md_warm_s": round(warm_md, 3),
                "spark_listing_warm_s": round(warm_spark, 3),
                "cold_ratio_spark_over_hudi_md": round(cold_spark / cold_md, 2),
                "warm_ratio_spark_over_hudi_md": round(warm_spark / warm_md, 2),
                "hudi_md_storage_requests_per_plan": cold_counters.get("storage_requests"),
                "hudi_md_storage_requests_warm_plan": counters.get("storage_requests"),
                "counters": counters,
            }
            if server is not None:
                # what the server served during one query (planner + Spark's reads of the matching
                # file), all requests and those not for a data file (listings, .hoodie/)
                for i, kind in enumerate(("s3_requests_per_query", "s3_non_data_requests_per_query")):
                    summary[kind] = {
                        "hudi_md_cold": r1[i] - r0[i],
                        "spark_listing_cold": r2[i] - r1[i],
                        "hudi_md_warm": round((r3[i] - r2[i]) / args.repeats, 1),
                        "spark_listing_warm": round((r4[i] - r3[i]) / args.repeats, 1),
                    }
            print(json.dumps(summary, indent=2), flush=True)
            with open(args.results, "a") as f:
                f.write(json.dumps(summary) + "\n")
        shutil.rmtree(scratch, ignore_errors=True)
        spark.stop()
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
