"""The README's demo: write a table with hudi-md on Spark, then query it through
``spark.read.format("hudi-md")`` and print what planning cost.

    python -m hudi_md.demo [--rows N] [--path DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=20000)
    parser.add_argument("--path", default=None, help="table location (default: a temporary folder)")
    args = parser.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    import hudi_md
    from hudi_md.spark.session import configure, last_plan_counters

    tmp = tempfile.mkdtemp(prefix="hudi-md-demo-")
    path = args.path or os.path.join(tmp, "trips")
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("hudi-md demo")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
    )
    spark = configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        cities = ["san_francisco", "sao_paulo", "chennai", "new_york", "berlin"]
        trips = spark.range(args.rows).select(
            F.format_string("trip-%08d", F.col("id")).alias("uuid"),
            F.element_at(
                F.array(*[F.lit(c) for c in cities]), (F.col("id") % len(cities) + 1).cast("int")
            ).alias("city"),
            (F.col("id") * 7 % 1000).cast("double").alias("fare"),
            F.lit(1).cast("long").alias("ts"),
        )
        options = {
            "hoodie.table.name": "trips",
            "hoodie.datasource.write.recordkey.field": "uuid",
            "hoodie.datasource.write.partitionpath.field": "city",
            "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.hive_style_partitioning": "true",
            "hoodie.metadata.record.index.enable": "true",
        }
        start = time.perf_counter()
        first = hudi_md.write(trips, path, operation="insert", options=options)
        updates = (
            trips.where("id % 10 = 0")
            .withColumn("fare", F.col("fare") + 1)
            .withColumn("ts", F.lit(2).cast("long"))
        )
        second = hudi_md.write(updates, path, operation="upsert", options=options)
        took = time.perf_counter() - start
        print(f"wrote {args.rows} rows to {path}: commits {first}, {second} ({took:.1f}s)")

        df = spark.read.format("hudi-md").load(path)
        print(f"schema: {', '.join(f.name for f in df.schema.fields)}")
        query = df.where("city = 'sao_paulo' AND fare > 500")
        start = time.perf_counter()
        count = query.count()
        elapsed = time.perf_counter() - start
        counters = last_plan_counters(spark)
        print(f"city = 'sao_paulo' AND fare > 500: {count} rows in {elapsed:.2f}s")
        print("plan counters:", json.dumps(counters, sort_keys=True))
        expected = (
            hudi_md.open_table(path).read(filters=[("city", "=", "sao_paulo"), ("fare", ">", 500)]).num_rows
        )
        print(f"hudi-md's Python reader agrees: {expected == count}")
        return 0 if expected == count else 1
    finally:
        spark.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
