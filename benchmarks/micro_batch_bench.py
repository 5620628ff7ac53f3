"""Micro-batch table health (issue 40): many small upserts, hudi-md beside Apache Hudi 1.2.

    .venv/bin/python benchmarks/micro_batch_bench.py [--commits 200] [--rows 1000] [--partitions 10] \
        [--new-fraction 0.8] [--every 50] [--table-type COPY_ON_WRITE|MERGE_ON_READ] \
        [--writers hudi_md,hudi] [--inline-clustering]

The same batches (``--rows`` rows each, ``--new-fraction`` of them new keys, the rest updates of
earlier keys, spread over ``--partitions`` partitions) go to two tables with the same options:
one written by ``hudi_md.write`` (the local writer, in this process) and one by Apache Hudi 1.2's
Spark bundle (``df.write.format("hudi")``, its defaults otherwise). After every ``--every`` commits
both tables are measured the same way:

- live file groups per partition (mean and max, the latest file-system view: replaced groups
  left out), file ids on storage per partition (replaced groups count until the cleaner deletes
  them), log files, data bytes (base + log files on storage, the versions the cleaner keeps
  included), live data bytes (the latest slices' files: the footprint of the rows themselves) and
  MDT bytes (``.hoodie/metadata``);
- plan time (``open_table(...).plan()``, best of 3) and full-scan time (``read()``, best of 3), by
  hudi-md's reader on both tables, so the figures compare the tables, not the readers.

Figures are ratios between the two tables in the same run (hudi-md over Hudi), never absolute
targets; the goal is file counts and bytes within 10 % of Hudi's and plan/scan times flat across
the commits. ``--inline-clustering`` gives both writers ``hoodie.clustering.inline=true`` with
``hoodie.clustering.inline.max.commits`` = ``--every`` (Hudi's size-based plan, its defaults
otherwise) and an active timeline long enough to count that many commits
(``hoodie.keep.min.commits`` / ``max.commits`` = every + 10 / + 20), so each checkpoint follows a
clustering. Results are appended to
benchmarks/results/micro_batch_bench.jsonl.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa

import hudi_md

ROOT = Path(__file__).resolve().parents[1]


def options(table_type: str, clustering_every: int = 0) -> dict[str, str]:
    # Inline clustering counts the commits since the last clustering on the active timeline, which
    # archival keeps to hoodie.keep.max.commits (30): every 50 commits needs a longer one (in
    # Apache Hudi 1.2 as in hudi-md, it never runs otherwise).
    clustering = (
        {
            "hoodie.clustering.inline": "true",
            "hoodie.clustering.inline.max.commits": str(clustering_every),
            "hoodie.keep.min.commits": str(clustering_every + 10),
            "hoodie.keep.max.commits": str(clustering_every + 20),
        }
        if clustering_every
        else {}
    )
    return {
        **clustering,
        "hoodie.table.name": "micro",
        "hoodie.datasource.write.recordkey.field": "k",
        "hoodie.datasource.write.partitionpath.field": "p",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.datasource.write.operation": "upsert",
    }


class Batches:
    """Deterministic batches: new keys numbered in order, updates drawn from earlier keys."""

    def __init__(self, rows: int, partitions: int, new_fraction: float, seed: int = 40) -> None:
        self.rows, self.partitions, self.new_fraction = rows, partitions, new_fraction
        self.rng = random.Random(seed)
        self.next_key = 0

    def batch(self, n: int) -> pa.Table:
        keys: list[int] = []
        for _ in range(self.rows):
            if self.next_key and self.rng.random() >= self.new_fraction:
                keys.append(self.rng.randrange(self.next_key))
            else:
                keys.append(self.next_key)
                self.next_key += 1
        keys = sorted(set(keys))  # one record per key in a batch: no precombine differences
        return pa.table(
            {
                "k": [f"k{k:09d}" for k in keys],
                "p": [f"p{k % self.partitions:02d}" for k in keys],
                "ts": pa.array([n] * len(keys), pa.int64()),
                "rider": [f"rider-{(k * 7919) % 1000}" for k in keys],
                "fare": pa.array([round((k % 10_000) * 0.37, 2) for k in keys], pa.float64()),
                "note": [f"batch {n} key {k}" for k in keys],
            }
        )


def layout(path: Path) -> dict[str, Any]:
    groups: dict[str, set[str]] = {}
    logs = data_bytes = mdt_bytes = 0
    for f in path.rglob("*"):
        if not f.is_file():
            continue
        rel = f.relative_to(path).parts
        if rel[0] == ".hoodie":
            if len(rel) > 1 and rel[1] == "metadata":
                mdt_bytes += f.stat().st_size
            continue
        name = f.name
        if name.endswith(".parquet"):
            fid = name.split("_")[0]
        elif ".log." in name and not name.endswith(".crc"):
            fid = name[1:].split("_")[0]
            logs += 1
        else:
            continue
        data_bytes += f.stat().st_size
        groups.setdefault(str(f.parent.relative_to(path)), set()).add(fid)
    per_partition = [len(v) for v in groups.values()] or [0]
    live: dict[str, int] = {}
    live_bytes = 0
    for s in hudi_md.open_table(str(path)).state.file_system_view().latest_file_slices():
        live[s.partition_path] = live.get(s.partition_path, 0) + 1
        live_bytes += (s.base_file.size if s.base_file else 0) + sum(lf.size for lf in s.log_files)
    live_counts = list(live.values()) or [0]
    return {
        "file_groups_mean": round(statistics.mean(live_counts), 2),
        "file_groups_max": max(live_counts),
        "stored_file_ids_mean": round(statistics.mean(per_partition), 2),
        "log_files": logs,
        "data_bytes": data_bytes,
        "live_data_bytes": live_bytes,
        "mdt_bytes": mdt_bytes,
    }


def timings(path: Path) -> dict[str, float]:
    def best(fn: Any) -> float:
        times = []
        for _ in range(3):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return round(min(times), 4)

    return {
        "plan_s": best(lambda: hudi_md.open_table(str(path)).plan()),
        "scan_s": best(lambda: hudi_md.open_table(str(path)).read()),
        "rows": hudi_md.open_table(str(path)).read(columns=["k"]).num_rows,
    }


def spark_session() -> Any:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    fetched = subprocess.run(
        [str(ROOT / "scripts" / "fetch-hudi-bundle")], check=True, capture_output=True, text=True
    )
    jars = [j for j in fetched.stdout.split() if j.endswith(".jar")]
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("micro-batch-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.serializer", "org.apache.spark.serializer.KryoSerializer")
        .config("spark.sql.extensions", "org.apache.spark.sql.hudi.HoodieSparkSessionExtension")
        .config("spark.jars", ",".join(jars))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--commits", type=int, default=200)
    ap.add_argument("--rows", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=10)
    ap.add_argument("--new-fraction", type=float, default=0.8)
    ap.add_argument("--every", type=int, default=50)
    ap.add_argument("--table-type", default="COPY_ON_WRITE")
    ap.add_argument("--writers", default="hudi_md,hudi")
    ap.add_argument("--inline-clustering", action="store_true")
    args = ap.parse_args()
    writers = args.writers.split(",")
    opts = options(args.table_type, args.every if args.inline_clustering else 0)
    work = Path(tempfile.mkdtemp(prefix="micro-batch-bench-"))
    paths = {w: work / w for w in writers}
    spark = spark_session() if "hudi" in writers else None
    batches = Batches(args.rows, args.partitions, args.new_fraction)
    commit_s: dict[str, list[float]] = {w: [] for w in writers}
    checkpoints = []
    try:
        for n in range(1, args.commits + 1):
            batch = batches.batch(n)
            for w in writers:
                start = time.perf_counter()
                if w == "hudi_md":
                    hudi_md.write(batch, str(paths[w]), operation="upsert", options=opts)
                else:
                    spark.createDataFrame(batch.to_pandas()).write.format("hudi").mode("append").options(
                        **opts
                    ).save(str(paths[w]))
                commit_s[w].append(time.perf_counter() - start)
            if n % args.every == 0 or n == args.commits:
                point: dict[str, Any] = {"commits": n, "keys": batches.next_key}
                for w in writers:
                    window = commit_s[w][-args.every :]
                    point[w] = {
                        **layout(paths[w]),
                        **timings(paths[w]),
                        "commit_s_mean": round(statistics.mean(window), 3),
                    }
                if len(writers) == 2:
                    a, b = (point[w] for w in writers)
                    point["ratios"] = {
                        k: round(a[k] / b[k], 3) if b[k] else None
                        for k in (
                            "file_groups_mean",
                            "data_bytes",
                            "live_data_bytes",
                            "mdt_bytes",
                            "plan_s",
                            "scan_s",
                        )
                    }
                print(json.dumps(point), flush=True)
                checkpoints.append(point)
    finally:
        if spark is not None:
            spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    summary = {
        "args": vars(args),
        "checkpoints": checkpoints,
        "commit": subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip(),
        "load_avg_1m": os.getloadavg()[0],
    }
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    with open(out / "micro_batch_bench.jsonl", "a") as f:
        f.write(json.dumps(summary) + "\n")


if __name__ == "__main__":
    main()
