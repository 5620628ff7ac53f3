"""Distributed planning (issue 17): plan time and the planner's peak Python memory, column_stats
pruning on Spark executors vs in the planner's process, on the same table in the same run.

    .venv/bin/python benchmarks/distributed_plan_bench.py --files 5000 --reps 3

The table: ``--files`` partitions of one base file each (hudi-md's writer), five data columns
with column_stats on all of them (partition stats off, so column_stats does the pruning), its
column_stats MDT partition in ``--file-groups`` file groups. The filter tests three indexed
columns (``v >= n/2 AND w < n AND s IN (...)``).

Both modes plan through ``hudi_md.spark.plan`` with
``hoodie.metadata.index.column.stats.processing.mode.override`` set: ``in-memory`` (the planner
reads and evaluates the stats) or ``engine`` (a local[2] Spark job, one task per file group). Each
rep opens the table afresh (no state or stats cache carried over); modes alternate. Time is
wall-clock of ``plan``; memory is tracemalloc's peak over ``plan`` in a separate rep (tracemalloc
slows Python down), i.e. the planner process's Python allocations, not the executors'. The first
Spark job (Python workers starting) is a warm-up, not measured.

Results: benchmarks/results/distributed_plan_bench.jsonl (git commit, cores, load average).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pyarrow as pa

import hudi_md
import hudi_md.spark
from hudi_md.planning.column_stats_mode import PROCESSING_MODE_OVERRIDE

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "distributed_plan_bench.jsonl"
MODES = {"in-memory": None, "engine": "spark"}


def make_table(path: Path, files: int, file_groups: int) -> None:
    n = 2 * files
    rows = pa.table(
        {
            "id": [f"k{i}" for i in range(n)],
            "dt": [f"p{i // 2:06d}" for i in range(n)],
            "v": list(range(n)),
            "w": [(i * 7) % n for i in range(n)],
            "s": [f"s{i % 97:03d}" for i in range(n)],
        }
    )
    hudi_md.write(
        rows,
        str(path),
        operation="insert",
        options={
            "hoodie.table.name": "dplan_bench",
            "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "dt",
            "hoodie.parquet.bloom.filter.enabled": "false",
            "hoodie.metadata.index.column.stats.enable": "true",
            "hoodie.metadata.index.partition.stats.enable": "false",
            "hoodie.metadata.index.column.stats.file.group.count": str(file_groups),
        },
    )


def plan_once(spark: Any, path: Path, mode: str, filters: list, *, traced: bool) -> dict[str, Any]:
    session = spark if MODES[mode] else None
    options = {PROCESSING_MODE_OVERRIDE: mode}
    if traced:
        tracemalloc.start()
    start = time.perf_counter()
    try:
        plan = hudi_md.spark.plan(session, str(path), filters, options=options)
        seconds = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1] if traced else None
    finally:
        if traced:
            tracemalloc.stop()
    return {"seconds": seconds, "peak_bytes": peak, "slices": len(plan.slices), "counters": plan.counters}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=5000)
    ap.add_argument("--file-groups", type=int, default=4)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--work", default=str(ROOT / "build" / "distributed_plan_bench"))
    args = ap.parse_args()

    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    path = Path(args.work) / f"t{args.files}_{args.file_groups}"
    if not (path / ".hoodie" / "hoodie.properties").exists():
        t = time.perf_counter()
        make_table(path, args.files, args.file_groups)
        print(f"table written in {time.perf_counter() - t:.1f}s", flush=True)
    n = 2 * args.files
    filters = [("v", ">=", n // 2), ("w", "<", n), ("s", "in", ["s001", "s050"])]

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "2g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    load_before = os.getloadavg()
    plan_once(spark, path, "engine", filters, traced=False)  # warm-up: Python workers start
    runs: dict[str, list[dict[str, Any]]] = {m: [] for m in MODES}
    traced: dict[str, dict[str, Any]] = {}
    for _ in range(args.reps):
        for mode in MODES:
            runs[mode].append(plan_once(spark, path, mode, filters, traced=False))
    for mode in MODES:
        traced[mode] = plan_once(spark, path, mode, filters, traced=True)
    spark.stop()

    slices = {m: {r["slices"] for r in rs} for m, rs in runs.items()}
    assert slices["in-memory"] == slices["engine"] and len(slices["engine"]) == 1, slices
    summary = {m: statistics.median(r["seconds"] for r in rs) for m, rs in runs.items()}
    result = {
        "bench": "distributed_plan",
        "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "commit": subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "files": args.files,
        "file_groups": args.file_groups,
        "filters": repr(filters),
        "slices_kept": next(iter(slices["engine"])),
        "plan_seconds_median": summary,
        "plan_seconds": {m: [round(r["seconds"], 3) for r in rs] for m, rs in runs.items()},
        "planner_peak_bytes": {m: t["peak_bytes"] for m, t in traced.items()},
        "engine_over_in_memory_time": summary["engine"] / summary["in-memory"],
        "engine_over_in_memory_peak": traced["engine"]["peak_bytes"] / traced["in-memory"]["peak_bytes"],
        "counters": {m: t["counters"] for m, t in traced.items()},
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    with RESULTS.open("a") as f:
        f.write(json.dumps(result) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
