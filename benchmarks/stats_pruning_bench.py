"""Stats pruning over one Arrow table vs the per-entry Python evaluator (issue 17, items 2 and 3).

    .venv/bin/python benchmarks/stats_pruning_bench.py [--table build/plan-scale/t100000] \\
        [--filter '[("v", ">=", 495000)]'] [--repeats 5]

The table: benchmarks/scale_tables.py (one file of 5 rows per partition, ``v`` = row number,
clustered; MDT with files, column_stats, partition_stats). The default query selects 1 % of the
rows. Both ways run in this process on the same table, alternating:

* ``scalar``: ``planner.ARROW_MIN_ENTRIES`` set beyond any entry count, so ``partition_stats`` and
  ``column_stats`` pruning call ``stats_evaluator``'s closure once per partition / file (the
  planner before the Arrow path);
* ``arrow``: the planner as it is (one Arrow expression over a table of the stats).

``cold``: ``open_table(path).plan(filter)`` on a newly opened table (timeline, MDT, schema read);
``warm``: the plan repeated on that opened table with its plan results forgotten
(``table.plan_results = SnapshotCache()``: what the planner process does for a new query on a
state it keeps), median of ``--repeats``; ``--rounds`` cold plans per way, alternating which way
goes first (medians recorded). The selected files of both ways must be identical.
Appends one line to benchmarks/results/stats_pruning.jsonl.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import platform
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

import hudi_md
from hudi_md.planning import planner
from hudi_md.table.state import SnapshotCache

ROOT = Path(__file__).resolve().parent.parent


def measure(path: str, filters: Any, repeats: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    table = hudi_md.open_table(path)
    plan = table.plan(filters)
    cold = time.perf_counter() - t0
    warm = []
    for _ in range(repeats):
        table.state.plan_results = SnapshotCache()
        t0 = time.perf_counter()
        again = table.plan(filters)
        warm.append(time.perf_counter() - t0)
        assert again.slices == plan.slices
    files = sorted((s.partition_path, s.base_file.name if s.base_file else s.file_id) for s in plan.slices)
    return {
        "cold_s": round(cold, 4),
        "warm_s": round(statistics.median(warm), 5),
        "warm_all_s": [round(w, 5) for w in warm],
        "counters": plan.counters,
        "files": files,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--table", default=str(ROOT / "build" / "plan-scale" / "t100000"))
    ap.add_argument("--filter", default='[("v", ">=", 495000)]')
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=2, help="cold plans per way (alternating order)")
    ap.add_argument("--results", type=Path, default=ROOT / "benchmarks" / "results" / "stats_pruning.jsonl")
    args = ap.parse_args()
    filters = ast.literal_eval(args.filter)
    arrow_min = planner.ARROW_MIN_ENTRIES
    runs: dict[str, dict[str, Any]] = {}
    # alternating rounds, so neither way always runs on the colder page cache
    order = [way for r in range(args.rounds) for way in (("scalar", "arrow"), ("arrow", "scalar"))[r % 2]]
    for way in order:
        planner.ARROW_MIN_ENTRIES = 10**12 if way == "scalar" else arrow_min
        run = measure(args.table, filters, args.repeats)
        print(way, {k: v for k, v in run.items() if k != "files"}, flush=True)
        if way in runs:
            assert run["files"] == runs[way]["files"]
            runs[way]["cold_all_s"].append(run["cold_s"])
            runs[way]["warm_all_s"] += run["warm_all_s"]
        else:
            runs[way] = {**run, "cold_all_s": [run["cold_s"]]}
    planner.ARROW_MIN_ENTRIES = arrow_min
    for run in runs.values():
        run["cold_s"] = round(statistics.median(run["cold_all_s"]), 4)
        run["warm_s"] = round(statistics.median(run["warm_all_s"]), 5)
    same = runs["scalar"]["files"] == runs["arrow"]["files"]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    record = {
        "table": args.table,
        "filter": args.filter,
        "commit": commit.stdout.strip(),
        "machine": f"{platform.machine()} {os.cpu_count()} cpus, load {os.getloadavg()[0]:.1f}",
        "repeats": args.repeats,
        "rounds": args.rounds,
        "selected_files": len(runs["arrow"]["files"]),
        "selected_files_identical": same,
        "scalar": {k: v for k, v in runs["scalar"].items() if k != "files"},
        "arrow": {k: v for k, v in runs["arrow"].items() if k != "files"},
        "warm_ratio_arrow_vs_scalar": round(runs["arrow"]["warm_s"] / runs["scalar"]["warm_s"], 4),
        "cold_ratio_arrow_vs_scalar": round(runs["arrow"]["cold_s"] / runs["scalar"]["cold_s"], 4),
    }
    print(json.dumps({k: v for k, v in record.items() if k not in ("scalar", "arrow")}), flush=True)
    with args.results.open("a") as out:
        out.write(json.dumps(record) + "\n")
    if not same:
        raise SystemExit("the selected files differ between the scalar and the Arrow path")


if __name__ == "__main__":
    main()
