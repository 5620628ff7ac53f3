"""Warm plans through Spark of shim jars side by side (issue 17, item 3): each jar in its own
PySpark process (a new JVM), the processes of the jars alternating round by round.

    .venv/bin/python benchmarks/warm_spark_ab.py --table build/plan-scale/t100000 --plans 200 \\
        --rounds 2 base=<old jar> new=python/hudi_md/jars/hudi-md-spark-3.5_2.12.jar

A plan is what ``plan_scale_bench.py`` times through Spark: ``spark.read.format("hudi-md")
.load(path)``, the query's ``where`` (none for ``none``), its executed plan, and the files its
``FileSourceScanExec`` selects (``selectedPartitions``); ``join`` joins the table on ``dt`` with
one row (the plan asks the relation's size for the join's strategy). Here the same query runs
``--plans`` times in a row on one session (the planner process's cached table state and the
answer reused by name). The JVM's compiled code keeps improving for ~100 plans of a 100k-file
table, so the medians are given per window of plans: 10-50, 50-100, 100-end; ``listing`` is
``selectedPartitions`` alone.

The machine's speed moves between processes by more than a change to the shim does, so only
alternating processes of both jars can show one.

``--floor`` adds a process per round and query that plans the same query over one Parquet file
(one base file of the table's middle partition, ``dt`` a column of it, not a partition) read by
Spark's own Parquet source with its schema given: Spark's analysis, optimizer and planning of the
same query shape over a one-file listing, the floor any file index is planned above.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "warm_spark_ab.jsonl"
WINDOWS = ((10, 50), (50, 100), (100, None))


def scan_node(df: Any) -> Any:
    found: list[Any] = []

    def walk(node: Any) -> None:
        if node.getClass().getSimpleName() == "AdaptiveSparkPlanExec":
            walk(node.executedPlan())
            return
        if node.getClass().getSimpleName() == "FileSourceScanExec":
            found.append(node)
        children = node.children()
        for i in range(children.size()):
            walk(children.apply(i))

    walk(df._jdf.queryExecution().executedPlan())
    (node,) = found
    return node


def child(jar: str, table: str, where: str | None, plans: int) -> dict:
    """One process: ``plans`` plans of the query with ``jar`` as the shim."""
    import hudi_md.spark.session as session

    floor = jar.startswith("floor:")
    if not floor:
        session.jar_path = lambda spark_version=None: jar
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "6g")
        .config("spark.sql.shuffle.partitions", "2")
        # the V1 file scan, which every commit compared has (queries default to the V2 scan now)
        .config("spark.hudi_md.read.connector", "v1")
    )
    spark = session.configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    total: list[float] = []
    listing: list[float] = []
    # ``join:<dt>``: the table joined on ``dt`` with a one-row DataFrame (Spark's join planning
    # asks the relation's size)
    other = None
    if where and where.startswith("join:"):
        other = spark.createDataFrame([(where.split(":", 1)[1],)], ["dt"])
    # the floor's schema is inferred once, outside the plans (inference runs a Spark job)
    floor_file = jar.split(":", 1)[1] if floor else None
    floor_schema = spark.read.parquet(floor_file).schema if floor_file else None
    for _ in range(plans):
        start = time.perf_counter()
        if floor_file:
            df = spark.read.schema(floor_schema).parquet(floor_file)
        else:
            df = spark.read.format("hudi-md").load(table)
        if other is not None:
            df = df.join(other, "dt")
        elif where:
            df = df.where(where)
        node = scan_node(df)
        listed = time.perf_counter()
        node.selectedPartitions()
        end = time.perf_counter()
        total.append((end - start) * 1000)
        listing.append((end - listed) * 1000)
    spark.stop()
    out = {}
    for a, z in WINDOWS:
        name = f"{a}-{z or 'end'}"
        out[name] = {
            "total_ms": round(statistics.median(total[a:z]), 1),
            "listing_ms": round(statistics.median(listing[a:z]), 1),
        }
    return out


def floor_file(table: Path, partition: str) -> Path:
    """One base file of ``partition`` with its ``dt`` as a column (written once, beside the table)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = table.parent / f"{table.name}-floor" / f"{partition}.parquet"
    if not out.exists():
        (base,) = sorted((table / f"dt={partition}").glob("*.parquet"))[:1]  # hive-style (scale_tables.py)
        rows = pq.read_table(base)
        if "dt" not in rows.column_names:
            rows = rows.append_column("dt", pa.array([partition] * rows.num_rows, pa.string()))
        out.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(rows, out)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--table", default=str(REPO / "build" / "plan-scale" / "t100000"))
    ap.add_argument("--plans", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--queries", default="none", help="none, eq (dt = the middle partition), join (on dt)")
    ap.add_argument("--floor", action="store_true", help="also Spark's own Parquet source over one file")
    ap.add_argument("--child", nargs=3, metavar=("JAR", "WHERE", "PLANS"), help=argparse.SUPPRESS)
    ap.add_argument("jars", nargs="*", metavar="NAME=JAR")
    args = ap.parse_args()
    if args.child:
        jar, where, plans = args.child
        print("RESULT " + json.dumps(child(jar, args.table, where or None, int(plans))), flush=True)
        return
    n = int(Path(args.table).name.lstrip("t"))
    middle = f"p{n // 2 + 1:07d}"
    wheres = {"none": "", "eq": f"dt = '{middle}'", "join": f"join:{middle}"}
    jars = dict(j.split("=", 1) for j in args.jars)
    if args.floor:
        jars["floor"] = "floor:" + str(floor_file(Path(args.table), middle))
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    runs = []
    for r in range(args.rounds):
        for q in args.queries.split(","):
            for name, jar in jars.items():
                cmd = [
                    sys.executable,
                    __file__,
                    "--table",
                    args.table,
                    "--child",
                    jar,
                    wheres[q],
                    str(args.plans),
                ]
                out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True).stdout
                result = json.loads(out.split("RESULT ", 1)[1])
                runs.append({"round": r, "query": q, "jar": name, **result})
                print(json.dumps(runs[-1]), flush=True)
    record = {
        "table": args.table,
        "plans": args.plans,
        "jars": jars,
        "runs": runs,
        "at": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    with RESULTS.open("a") as f:
        f.write(json.dumps(record) + "\n")
    for q in args.queries.split(","):
        for name in jars:
            for a, z in WINDOWS:
                w = f"{a}-{z or 'end'}"
                got = [x[w] for x in runs if x["query"] == q and x["jar"] == name]
                totals = [g["total_ms"] for g in got]
                listings = [g["listing_ms"] for g in got]
                print(f"{q:5} {name:6} plans {w:8} total {totals} ms, listing {listings} ms")


if __name__ == "__main__":
    main()
