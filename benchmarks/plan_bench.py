"""Planning benchmark: `spark.read.format("hudi-md")` (MDT planning) against Spark's own listing
(`spark.read.parquet` with partition discovery) on the same table, cold and warm.

    .venv/bin/python benchmarks/plan_bench.py --partitions 1000 --partitions 10000

"cold" is the first query on a new DataFrame after a fresh planner process / file listing cache;
"warm" repeats it. Figures are ratios between the two readers in the same process. Results are
appended to benchmarks/results/plan_bench.jsonl.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa

import hudi_md


def build_table(path: Path, partitions: int) -> None:
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
        str(path),
        operation="bulk_insert",
        options={
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", type=int, action="append", default=None)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    from hudi_md.spark.session import configure

    builder = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
    )
    spark = configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    jvm = spark.sparkContext._jvm
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    for parts in args.partitions or [1000]:
        root = Path(tempfile.mkdtemp(prefix="hudi-md-plan-"))
        path = root / "t"
        build_start = time.perf_counter()
        build_table(path, parts)
        build_s = time.perf_counter() - build_start
        where = "dt = 'p00042' AND v > 100"

        def hudi_md_query(path: Path = path, where: str = where) -> None:
            spark.read.format("hudi-md").load(str(path)).where(where).count()

        def spark_query(path: Path = path, where: str = where) -> None:
            spark.read.option("basePath", str(path)).parquet(str(path)).where(where).count()

        # cold: fresh planner process for hudi-md; a new DataFrame for Spark (its listing is not cached)
        jvm.hudi.md.spark.PlannerClient.shutdown()
        cold_md = timed(hudi_md_query)
        cold_spark = timed(spark_query)
        warm_md = statistics.median(timed(hudi_md_query) for _ in range(args.repeats))
        warm_spark = statistics.median(timed(spark_query) for _ in range(args.repeats))
        counters = json.loads(jvm.hudi.md.spark.HudiMdFileIndex.lastPlanJson()).get("counters", {})
        summary = {
            "partitions": parts,
            "storage": "local",
            "build_s": round(build_s, 1),
            "hudi_md_cold_s": round(cold_md, 3),
            "spark_listing_cold_s": round(cold_spark, 3),
            "hudi_md_warm_s": round(warm_md, 3),
            "spark_listing_warm_s": round(warm_spark, 3),
            "cold_ratio_spark_over_hudi_md": round(cold_spark / cold_md, 2),
            "warm_ratio_spark_over_hudi_md": round(warm_spark / warm_md, 2),
            "hudi_md_storage_requests_per_plan": counters.get("storage_requests"),
            "counters": counters,
        }
        print(json.dumps(summary, indent=2))
        with open(out / "plan_bench.jsonl", "a") as f:
            f.write(json.dumps(summary) + "\n")
        shutil.rmtree(root, ignore_errors=True)
    spark.stop()


if __name__ == "__main__":
    main()
