"""Spark-side writes (issue 16): the same rows written three ways in one Spark 3.5 session.

    .venv/bin/python benchmarks/spark_write_bench.py --rows 1000000 [--table-type MERGE_ON_READ]

- ``df.write.format("hudi-md")``: the shim's DefaultSource hands the DataFrame to a Python
  process attached to the driver JVM (WriteBridge), which runs hudi_md.write's Spark writer;
- ``hudi_md.write(df)``: the same Spark writer, called from this (PySpark) driver;
- ``df.write.format("hudi")``: Apache Hudi 1.2's own writer (its Spark bundle, from
  ``scripts/fetch-hudi-bundle``).

Each writes a new table: an insert of ``--rows`` rows (20 partitions), then an upsert of a tenth
of them (half updates, half new keys), with the same MDT partitions (files, column_stats,
partition_stats, record_index; checked in each table's hoodie.properties). hudi-md tags upserts
through the MDT's record index; Apache Hudi is told to do the same (``hoodie.index.type``, default
GLOBAL_RECORD_LEVEL_INDEX, Hudi 1.2's name for it; its own default is SIMPLE, a join against the
base files). The source is one Parquet file set read by all three. Figures are ratios between the
three in the same run, never absolute targets; appended to benchmarks/results/spark_write_bench.jsonl.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq
from write_bench import make_rows  # the same rows as the local write benchmark

ROOT = Path(__file__).resolve().parents[1]


def options(table_type: str) -> dict[str, str]:
    """Write options both writers take with the same meaning (Hudi 1.2's keys)."""
    return {
        "hoodie.table.name": "bench",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.datasource.write.hive_style_partitioning": "false",
        "hoodie.metadata.enable": "true",
        "hoodie.metadata.index.column.stats.enable": "true",
        "hoodie.metadata.index.partition.stats.enable": "true",
        "hoodie.metadata.record.index.enable": "true",
    }


def session(hudi_jars: list[str]):
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    from hudi_md.spark.session import configure

    builder = (
        SparkSession.builder.master("local[2]")
        .appName("spark-write-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "4g")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.serializer", "org.apache.spark.serializer.KryoSerializer")
        .config("spark.kryo.registrator", "org.apache.spark.HoodieSparkKryoRegistrar")
        .config("spark.jars", ",".join(hudi_jars))
    )
    spark = configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def mdt_partitions(path: Path) -> list[str]:
    for line in (path / ".hoodie" / "hoodie.properties").read_text().splitlines():
        if line.startswith("hoodie.table.metadata.partitions="):
            return sorted(p for p in line.split("=", 1)[1].split(",") if p)
    return []


def run(spark, how: str, source: Path, table_type: str, hudi_index_type: str) -> dict:
    import hudi_md

    path = Path(tempfile.mkdtemp(prefix=f"spark-write-bench-{how}-")) / "t"
    opts = options(table_type)
    times = {}
    for step, operation in (("insert", "insert"), ("upsert", "upsert")):
        df = spark.read.parquet(str(source / step))
        start = time.perf_counter()
        if how == "df.write.format(hudi-md)":
            df.write.format("hudi-md").mode("append").options(
                **opts, **{"hoodie.datasource.write.operation": operation}
            ).save(str(path))
        elif how == "hudi_md.write(df)":
            hudi_md.write(df, str(path), operation=operation, options=opts)
        else:
            df.write.format("hudi").mode("append").options(
                **opts,
                **{"hoodie.datasource.write.operation": operation, "hoodie.index.type": hudi_index_type},
            ).save(str(path))
        times[step] = round(time.perf_counter() - start, 2)
    rows = spark.read.format("hudi-md").load(str(path)).count()
    result = {
        "how": how,
        "insert_s": times["insert"],
        "upsert_s": times["upsert"],
        "rows_after": rows,
        "table_bytes": du(path),
        "mdt_partitions": mdt_partitions(path),
    }
    shutil.rmtree(path.parent, ignore_errors=True)
    return result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--table-type", default="COPY_ON_WRITE")
    ap.add_argument("--hudi-index-type", default="GLOBAL_RECORD_LEVEL_INDEX")
    args = ap.parse_args()
    fetched = subprocess.run(
        [str(ROOT / "scripts" / "fetch-hudi-bundle")], check=True, capture_output=True, text=True
    )
    hudi_jars = [j for j in fetched.stdout.split() if j.endswith(".jar")]
    source = Path(tempfile.mkdtemp(prefix="spark-write-bench-src-"))
    for step, table in (
        ("insert", make_rows(args.rows, 0, 1)),
        # a tenth of the rows: half of them updates of existing keys, half new keys
        ("upsert", make_rows(args.rows // 10, args.rows - args.rows // 20, 2)),
    ):
        (source / step).mkdir()
        pq.write_table(table, source / step / "part-0.parquet")
    spark = session(hudi_jars)
    runs = [
        run(spark, how, source, args.table_type, args.hudi_index_type)
        for how in ("df.write.format(hudi-md)", "hudi_md.write(df)", "hudi")
    ]
    api, direct, hudi = runs
    expected_rows = args.rows + args.rows // 20
    summary = {
        "rows": args.rows,
        "table_type": args.table_type,
        "hudi_index_type": args.hudi_index_type,
        "spark": spark.version,
        "runs": runs,
        "rows_ok": all(r["rows_after"] == expected_rows for r in runs),
        "same_mdt_partitions": len({tuple(r["mdt_partitions"]) for r in runs}) == 1,
        "insert_ratio_api_over_hudi_md_write": round(api["insert_s"] / direct["insert_s"], 3),
        "upsert_ratio_api_over_hudi_md_write": round(api["upsert_s"] / direct["upsert_s"], 3),
        "insert_ratio_api_over_hudi": round(api["insert_s"] / hudi["insert_s"], 3),
        "upsert_ratio_api_over_hudi": round(api["upsert_s"] / hudi["upsert_s"], 3),
        "insert_ratio_hudi_md_write_over_hudi": round(direct["insert_s"] / hudi["insert_s"], 3),
        "upsert_ratio_hudi_md_write_over_hudi": round(direct["upsert_s"] / hudi["upsert_s"], 3),
        "commit": subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip(),
        "load_avg_1m": os.getloadavg()[0],
    }
    spark.stop()
    shutil.rmtree(source, ignore_errors=True)
    print(json.dumps(summary, indent=2))
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    with open(out / "spark_write_bench.jsonl", "a") as f:
        f.write(json.dumps(summary) + "\n")


if __name__ == "__main__":
    main()
