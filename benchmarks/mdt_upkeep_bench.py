"""MDT upkeep over many commits (issue 17 item 5): does MDT compaction keep up?

    .venv/bin/python benchmarks/mdt_upkeep_bench.py [--commits 500] [--rows 2000] [--table-rows 100000] \
        [--insert-share 0.5]

A COW table (files, column_stats, partition_stats and record_index in the MDT) takes ``--commits``
upserts of ``--rows`` rows (``--insert-share`` of them new keys, the rest updates of existing
ones). After every commit the MDT's log files per file group are counted (in its latest slice, and
on storage; the largest over all file groups and partitions), and
each commit is timed, by the wall clock and by the CPU time of this process (the writer is
single-threaded here, so CPU time is the commit's cost even on a machine shared with other work).
The same commits run on a copy of the table without the MDT: the ratio of commit times (MDT on /
off) over the first and the last 10% of commits says whether the MDT's share grows with history;
the MDT's file count and the timelines' instant files say whether its storage stays bounded.
Results are appended to benchmarks/results/mdt_upkeep_bench.jsonl.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa

import hudi_md

REPO = Path(__file__).resolve().parents[1]


def rows(ids: list[int], ts: int) -> pa.Table:
    return pa.table(
        {
            "id": [f"id{i:09d}" for i in ids],
            "dt": [f"d{i % 16:02d}" for i in ids],
            "ts": [ts] * len(ids),
            "v": [float(i) for i in ids],
        }
    )


def options(mdt: bool) -> dict[str, str]:
    return {
        "hoodie.table.name": "upkeep",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "dt",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.metadata.enable": str(mdt).lower(),
        "hoodie.metadata.index.column.stats.enable": str(mdt).lower(),
        "hoodie.metadata.index.partition.stats.enable": str(mdt).lower(),
        "hoodie.metadata.record.index.enable": str(mdt).lower(),
    }


def mdt_log_files(path: Path) -> tuple[int, int]:
    """(largest count of log files in an MDT file group's latest slice — what a reader merges —,
    largest count of log files of a file group on storage, older slices not yet cleaned included)."""
    mdt = path / ".hoodie" / "metadata"
    if not mdt.exists():
        return 0, 0
    bases: dict[tuple[str, str], str] = {}
    logs: dict[tuple[str, str], list[str]] = {}
    for part in mdt.iterdir():
        if part.name.startswith(".") or not part.is_dir():
            continue
        for f in part.iterdir():
            if f.name.startswith(".") and ".log." in f.name:
                fg, rest = f.name[1:].split("_", 1)
                logs.setdefault((part.name, fg), []).append(rest.split(".log.", 1)[0])
            elif f.name.endswith(".hfile"):
                fg = f.name.split("_", 1)[0]
                instant = f.name.rsplit("_", 1)[1].removesuffix(".hfile")
                bases[(part.name, fg)] = max(bases.get((part.name, fg), ""), instant)
    latest = [sum(1 for i in instants if i > bases.get(g, "")) for g, instants in logs.items()]
    return max(latest, default=0), max((len(v) for v in logs.values()), default=0)


def run(
    path: Path, mdt: bool, commits: int, n: int, table_rows: int, seed: int, insert_share: float = 0.5
) -> dict[str, Any]:
    rng = random.Random(seed)
    hudi_md.write(rows(list(range(table_rows)), 0), str(path), operation="bulk_insert", options=options(mdt))
    next_id = table_rows
    times, cpu, latest, on_disk, mdt_files, instants = [], [], [], [], [], []
    for c in range(1, commits + 1):
        n_inserts = round(n * insert_share)
        updates = rng.sample(range(next_id), n - n_inserts)
        inserts = list(range(next_id, next_id + n_inserts))
        next_id += len(inserts)
        start, start_cpu = time.perf_counter(), time.process_time()
        hudi_md.write(rows(updates + inserts, c), str(path), operation="upsert", options=options(mdt))
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
        in_slice, stored = mdt_log_files(path)
        latest.append(in_slice)
        on_disk.append(stored)
        mdt_folder = path / ".hoodie" / "metadata"
        mdt_files.append(sum(1 for f in mdt_folder.rglob("*") if f.is_file()) if mdt_folder.exists() else 0)
        instants.append(sum(1 for f in (path / ".hoodie" / "timeline").iterdir() if f.is_file()))
    data_file_groups = {
        (part.name, f.name.split("_", 1)[0])
        for part in path.iterdir()
        if part.is_dir() and not part.name.startswith(".")
        for f in part.iterdir()
        if f.name.endswith(".parquet")
    }
    return {
        "data_file_groups": len(data_file_groups),
        "times": times,
        "cpu": cpu,
        "latest_slice_logs": latest,
        "stored_logs": on_disk,
        "mdt_files": mdt_files,
        "timeline_files": instants,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--commits", type=int, default=500)
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--table-rows", type=int, default=100_000)
    ap.add_argument(
        "--insert-share",
        type=float,
        default=0.5,
        help="the share of each commit's rows that are new keys (the rest update existing ones)",
    )
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="hudi-md-upkeep-"))
    try:
        on = run(root / "on", True, args.commits, args.rows, args.table_rows, 1, args.insert_share)
        off = run(root / "off", False, args.commits, args.rows, args.table_rows, 1, args.insert_share)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    tenth = max(1, args.commits // 10)

    def ratio(sl: slice, measure: str = "times") -> float:
        return round(statistics.median(on[measure][sl]) / statistics.median(off[measure][sl]), 3)

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO)
    result = {
        "commit": commit.stdout.strip(),
        "cores": os.cpu_count(),
        "load_before": os.getloadavg(),
        "commits": args.commits,
        "rows_per_commit": args.rows,
        "table_rows": args.table_rows,
        "insert_share": args.insert_share,
        "data_file_groups_last": on["data_file_groups"],
        "max_logs_in_latest_mdt_slice": max(on["latest_slice_logs"]),
        "max_logs_in_latest_mdt_slice_last_10pct": max(on["latest_slice_logs"][-tenth:]),
        "max_stored_logs_per_mdt_file_group": max(on["stored_logs"]),
        "max_stored_logs_last_10pct": max(on["stored_logs"][-tenth:]),
        "median_commit_s_mdt_on": round(statistics.median(on["times"]), 3),
        "median_commit_s_mdt_off": round(statistics.median(off["times"]), 3),
        "ratio_on_off_first_10pct": ratio(slice(0, tenth)),
        "ratio_on_off_last_10pct": ratio(slice(-tenth, None)),
        "ratio_on_off_all": round(statistics.median(on["times"]) / statistics.median(off["times"]), 3),
        "median_commit_cpu_s_mdt_on": round(statistics.median(on["cpu"]), 3),
        "median_commit_cpu_s_mdt_off": round(statistics.median(off["cpu"]), 3),
        "cpu_ratio_on_off_first_10pct": ratio(slice(0, tenth), "cpu"),
        "cpu_ratio_on_off_last_10pct": ratio(slice(-tenth, None), "cpu"),
        "cpu_ratio_on_off_all": ratio(slice(None), "cpu"),
        "mdt_files_max": max(on["mdt_files"]),
        "mdt_files_last": on["mdt_files"][-1],
        "timeline_files_max": max(on["timeline_files"]),
        "timeline_files_last": on["timeline_files"][-1],
        "load_after": os.getloadavg(),
        # every 10th commit, for the plot of the counts over history
        "latest_slice_logs_every_10": on["latest_slice_logs"][9::10],
        "stored_logs_every_10": on["stored_logs"][9::10],
        "mdt_files_every_10": on["mdt_files"][9::10],
        "cpu_on_every_10": [round(x, 3) for x in on["cpu"][9::10]],
        "cpu_off_every_10": [round(x, 3) for x in off["cpu"][9::10]],
    }
    print(json.dumps(result, indent=2))
    out = REPO / "benchmarks" / "results"
    out.mkdir(exist_ok=True)
    with open(out / "mdt_upkeep_bench.jsonl", "a") as f:
        f.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
