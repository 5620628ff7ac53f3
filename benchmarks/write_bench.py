"""Write benchmark: commit time with and without MDT upkeep, and the MDT's size.

    .venv/bin/python benchmarks/write_bench.py --rows 1000000 [--rows 10000000] [--engine local|spark] \
        [--repeats 3]

Figures are ratios between runs in the same process on the same machine (MDT on / MDT off), never
absolute targets: by the wall clock, and for the local engine also by this process's CPU time (the
local writer runs in this process, so its CPU time is the commit's cost even on a shared machine).
The modes run in ABBA order (on, off, off, on, ...) after a discarded first run: a run after the
other mode's upsert is not always the same mode, and no mode pays for the process's first run.
For the local engine the MDT upkeep's share is also measured within each commit with the MDT on:
the CPU time of its MDT work (``hudi_md.metadata.metrics``: the commit's MDT records and
deltacommit, MDT initialisation, MDT compaction) over the commit's; the between-run noise of
writing the Parquet files (±0.3-0.5 s at 1M rows) does not reach it.
Results are appended to benchmarks/results/write_bench.jsonl.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

import hudi_md
from hudi_md.metadata import metrics

CITIES = [f"city_{i:02d}" for i in range(20)]


def make_rows(n: int, start: int, ts: int) -> pa.Table:
    ids = pa.array(range(start, start + n), pa.int64())
    return pa.table(
        {
            "id": pc.cast(ids, pa.string()),
            "city": pa.array([CITIES[i % len(CITIES)] for i in range(start, start + n)], pa.string()),
            "ts": pa.array([ts] * n, pa.int64()),
            "fare": pc.multiply(pc.cast(ids, pa.float64()), 0.01),
            "rider": pc.binary_join_element_wise(
                "rider-", pc.cast(pc.bit_wise_and(ids, 1023), pa.string()), ""
            ),
        }
    )


def upkeep_cpu_ms(snapshot: dict[str, dict[str, float]]) -> float:
    """The MDT upkeep's CPU time in a metrics snapshot (the outer timers only: ``sync`` runs
    inside ``commit_upkeep``)."""
    return sum(
        v["cpu_ms"]
        for name, v in snapshot.items()
        if name in ("commit_upkeep", "compaction") or name.startswith("initialize_")
    )


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def run(rows: int, mdt: bool, engine: str, table_type: str, spark=None) -> dict:
    root = Path(tempfile.mkdtemp(prefix="hudi-md-bench-"))
    path = root / "t"
    opts = {
        "hoodie.table.name": "bench",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.metadata.enable": str(mdt).lower(),
        "hoodie.metadata.record.index.enable": str(mdt).lower(),
    }
    data = make_rows(rows, 0, 1)
    update = make_rows(rows // 10, 0, 2)

    cpu: dict[str, float] = {}
    mdt_cpu: dict[str, float] = {}

    def write(t: pa.Table, op: str) -> float:
        payload = spark.createDataFrame(t.to_pandas()) if engine == "spark" else t
        metrics.reset()
        start, start_cpu = time.perf_counter(), time.process_time()
        hudi_md.write(payload, str(path), operation=op, options=opts)
        cpu[op] = round(time.process_time() - start_cpu, 2)
        mdt_cpu[op] = round(upkeep_cpu_ms(metrics.snapshot()) / 1000, 3)
        return time.perf_counter() - start

    insert_s = write(data, "bulk_insert")
    upsert_s = write(update, "upsert")
    mdt_bytes = du(path / ".hoodie/metadata") if (path / ".hoodie/metadata").exists() else 0
    result = {
        "rows": rows,
        "engine": engine,
        "table_type": table_type,
        "mdt": mdt,
        "insert_s": round(insert_s, 2),
        "upsert_10pct_s": round(upsert_s, 2),
        "insert_cpu_s": cpu["bulk_insert"],
        "upsert_10pct_cpu_s": cpu["upsert"],
        "insert_mdt_cpu_s": mdt_cpu["bulk_insert"],
        "upsert_mdt_cpu_s": mdt_cpu["upsert"],
        "table_bytes": du(path),
        "mdt_bytes": mdt_bytes,
    }
    shutil.rmtree(root, ignore_errors=True)
    return result


def median_run(runs: list[dict]) -> dict:
    """One run's fields with every timing the median over ``runs`` (sizes are the same each run)."""
    out = dict(runs[0])
    timings = ("insert_s", "upsert_10pct_s", "insert_cpu_s", "upsert_10pct_cpu_s")
    for key in (*timings, "insert_mdt_cpu_s", "upsert_mdt_cpu_s"):
        out[key] = round(statistics.median(r[key] for r in runs), 2)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, action="append", default=None)
    ap.add_argument("--engine", choices=["local", "spark"], default="local")
    ap.add_argument("--table-type", default="COPY_ON_WRITE")
    ap.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="runs of each mode, in ABBA order (on, off, off, on, ...); the figures are medians",
    )
    ap.add_argument(
        "--no-warmup",
        action="store_true",
        help="skip the discarded first run (without the MDT) that grows the process's heap first",
    )
    args = ap.parse_args()
    spark = None
    if args.engine == "spark":
        os.environ["PYSPARK_PYTHON"] = sys.executable
        from pyspark.sql import SparkSession

        spark = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=Path(__file__).parent
    ).stdout.strip()
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    for n in args.rows or [1_000_000]:
        runs_on, runs_off = [], []
        if not args.no_warmup:
            # the first run of a process pays for growing its heap (page faults, system CPU time),
            # which later runs reuse: ~1 s at 1M rows, several at 10M
            run(n, False, args.engine, args.table_type, spark)
        for i in range(args.repeats):
            for mdt in (True, False) if i % 2 == 0 else (False, True):
                (runs_on if mdt else runs_off).append(run(n, mdt, args.engine, args.table_type, spark))
        on, off = median_run(runs_on), median_run(runs_off)
        summary = {
            "rows": n,
            "engine": args.engine,
            "table_type": args.table_type,
            "with_mdt": on,
            "without_mdt": off,
            "insert_time_ratio_mdt_on_off": round(on["insert_s"] / off["insert_s"], 3),
            "upsert_time_ratio_mdt_on_off": round(on["upsert_10pct_s"] / off["upsert_10pct_s"], 3),
            "mdt_bytes_over_table_bytes": round(on["mdt_bytes"] / max(1, on["table_bytes"]), 4),
            "load_avg": os.getloadavg(),
            "commit": commit,
            "repeats": args.repeats,
            "warmup": not args.no_warmup,
        }
        if args.engine == "local":
            for op, key in (("insert", "insert_cpu_s"), ("upsert", "upsert_10pct_cpu_s")):
                summary[f"{op}_cpu_ratio_mdt_on_off"] = round(on[key] / off[key], 3)
                # item 5's figure: the part of a commit's CPU time the MDT upkeep adds
                summary[f"{op}_mdt_share_of_commit_cpu"] = round((on[key] - off[key]) / on[key], 3)
                # the same within each commit with the MDT on (no between-run noise)
                shares = [r[f"{op}_mdt_cpu_s"] / r[key] for r in runs_on]
                summary[f"{op}_mdt_upkeep_share_within_commit_cpu"] = round(statistics.median(shares), 3)
            summary["runs_cpu_s"] = {
                "with_mdt": [(r["insert_cpu_s"], r["upsert_10pct_cpu_s"]) for r in runs_on],
                "without_mdt": [(r["insert_cpu_s"], r["upsert_10pct_cpu_s"]) for r in runs_off],
                "mdt_upkeep": [(r["insert_mdt_cpu_s"], r["upsert_mdt_cpu_s"]) for r in runs_on],
            }
        print(json.dumps(summary, indent=2))
        with open(out / "write_bench.jsonl", "a") as f:
            f.write(json.dumps(summary) + "\n")


if __name__ == "__main__":
    main()
