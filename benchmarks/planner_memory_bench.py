"""Distributed planning (issue 17, item 6) on a table whose column_stats do not fit the planner's
memory: ``spark.read.format("hudi-md")`` with the planner process under an address-space limit.

    .venv/bin/python benchmarks/planner_memory_bench.py [--files 3000] [--columns 120]

The table (``hudi_md.write``, built once under ``--work``): ``--files`` partitions of one base file
(two rows) each and ``--columns`` int64 columns ``c000`` ..., all indexed in column_stats (eight
file groups; partition stats off, so column_stats does the pruning). The query tests every column,
``c000 < F/5 AND c001 < F/5 + 1 AND ...`` (F = files; a tenth of the files match), so a plan reads
files x columns stats records: wide rather than many files, the same records a table of that many
more files would need for a one-column filter.

Each run is its own process: a local[2] session with the shim whose planner interpreter
(``spark.hudi_md.planner.python``) is a wrapper that sets ``ulimit -v`` (RLIMIT_AS) when a limit is
given (and ``MALLOC_ARENA_MAX=2``, so the planner's few threads do not reserve glibc arenas of
64 MB each against it). A run plans the query (timed: Spark's physical planning, i.e. the shim's
file listing, of which the planner's plan is nearly all), then reads its rows; it reports the
scanned files, the rows, the plan's counters and the planner's peak resident and virtual memory
(``VmHWM`` / ``VmPeak`` of ``/proc/<planner pid>/status``). Runs:

1. ``in-memory`` and ``engine`` (``processing.mode.override``), no limit: the plan time and the
   planner's peak memory of each;
2. the limit: halfway between the two runs' ``VmPeak``, unless ``--limit-mb`` is given;
3. under the limit: ``in-memory`` (expected to fail: the planner runs out of memory and the shim
   reports it), ``engine`` (must give the same files and rows), and no override with
   ``hudi_md.planner.column.stats.memory.budget`` set to the room the limit leaves above the
   planner's resting resident memory (Hudi's row threshold raised out of the way): the planner
   sends the read to Spark by itself.

The oracle for the rows is Spark's own Parquet reader over every base file with the same filter.
Results: benchmarks/results/planner_memory_bench.jsonl.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa

import hudi_md
from hudi_md.planning.column_stats_mode import (
    IN_MEMORY_PROJECTION_THRESHOLD,
    MEMORY_BUDGET,
    PROCESSING_MODE_OVERRIDE,
)

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "planner_memory_bench.jsonl"


def make_table(path: Path, files: int, columns: int) -> None:
    n = 2 * files
    data: dict[str, Any] = {"id": [f"k{i}" for i in range(n)], "dt": [f"p{i // 2:06d}" for i in range(n)]}
    for j in range(columns):
        data[f"c{j:03d}"] = pa.array(range(j, n + j), pa.int64())
    hudi_md.write(
        pa.table(data),
        str(path),
        operation="bulk_insert",
        options={
            "hoodie.table.name": "planner_memory_bench",
            "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "dt",
            "hoodie.parquet.bloom.filter.enabled": "false",
            "hoodie.metadata.index.column.stats.enable": "true",
            "hoodie.metadata.index.partition.stats.enable": "false",
            "hoodie.metadata.index.column.stats.max.columns.to.index": str(columns + 2),
            "hoodie.metadata.index.column.stats.file.group.count": "8",
        },
    )


def where(files: int, columns: int) -> str:
    return " AND ".join(f"c{j:03d} < {files // 5 + j}" for j in range(columns))


def directory_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


# --- one run (its own process) ------------------------------------------------------------------------


def wrapper(work: Path) -> Path:
    script = work / "planner-python.sh"
    script.write_text(
        "#!/bin/sh\n"
        "# the planner's interpreter, under the benchmark's address-space limit when one is given\n"
        'if [ -n "$HUDI_MD_BENCH_PLANNER_LIMIT_KB" ]; then ulimit -v "$HUDI_MD_BENCH_PLANNER_LIMIT_KB"; fi\n'
        "export MALLOC_ARENA_MAX=2\n"
        f'exec {sys.executable} "$@"\n'
    )
    script.chmod(0o755)
    return script


def planner_memory(spark: Any) -> dict[str, int]:
    pid = spark.sparkContext._jvm.hudi.md.spark.PlannerClient.pid()
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmHWM", "VmPeak", "VmRSS"):
            out[key] = int(value.split()[0]) * 1024
    return out


def scanned_files(df: Any) -> list[str]:
    leaves = df._jdf.queryExecution().sparkPlan().collectLeaves()
    (scan,) = [
        leaf
        for leaf in (leaves.apply(i) for i in range(leaves.size()))
        if leaf.getClass().getSimpleName() in ("FileSourceScanExec", "BatchScanExec")
    ]
    if scan.getClass().getSimpleName() == "BatchScanExec":  # the V2 scan: its file partitions
        partitions = scan.inputPartitions().iterator()
    else:
        partitions = scan.inputRDD().filePartitions().iterator()
    files = []
    while partitions.hasNext():
        files += [str(f.filePath().toString()) for f in partitions.next().files()]
    return sorted(files)


def run(args: argparse.Namespace) -> dict[str, Any]:
    from pyspark.sql import SparkSession

    from hudi_md.spark.session import configure, last_plan_counters

    os.environ["PYSPARK_PYTHON"] = sys.executable
    builder = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "2g")
        .config("spark.hudi_md.planner.python", str(wrapper(Path(args.work))))
    )
    spark = configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark.sparkContext.parallelize(range(2), 2).count()  # Python workers start before the clock
    options = json.loads(args.options)
    sql = where(args.files, args.columns)
    df = spark.read.format("hudi-md").options(**options).load(args.path)
    resting = planner_memory(spark)  # the planner started (schema) and imported what it uses
    out: dict[str, Any] = {"resting": resting}
    start = time.perf_counter()
    try:
        files = scanned_files(df.where(sql))
    except Exception as e:  # the planner ran out of memory: the shim's exception, with its stderr
        text = str(e)
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        out["error"] = next((line for line in lines if "HudiMdPlannerException" in line), lines[0])[:300]
        out["out_of_memory"] = "MemoryError" in text or "bad_alloc" in text
        out["plan_seconds"] = time.perf_counter() - start
        return out
    out["plan_seconds"] = time.perf_counter() - start
    out["planner"] = planner_memory(spark)
    out["counters"] = last_plan_counters(spark)
    out["files"] = files
    out["rows"] = sorted(r[0] for r in df.where(sql).select("id").collect())
    if args.oracle:
        bases = hudi_md.open_table(args.path).file_slices().column("base_file").to_pylist()
        everything = [str(Path(args.path) / f) for f in bases]
        out["oracle_rows"] = sorted(
            r[0] for r in spark.read.parquet(*everything).where(sql).select("id").collect()
        )
    spark.stop()
    return out


def run_apart(args: argparse.Namespace, options: dict[str, str], limit_kb: int | None, oracle: bool) -> dict:
    env = dict(os.environ)
    env.pop("HUDI_MD_BENCH_PLANNER_LIMIT_KB", None)
    if limit_kb:
        env["HUDI_MD_BENCH_PLANNER_LIMIT_KB"] = str(limit_kb)
    cmd = [
        sys.executable,
        __file__,
        "--run",
        "--path",
        args.path,
        "--work",
        args.work,
        "--files",
        str(args.files),
        "--columns",
        str(args.columns),
        "--options",
        json.dumps(options),
    ] + (["--oracle"] if oracle else [])
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3600)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"run {options} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(lines[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=3000)
    ap.add_argument("--columns", type=int, default=120)
    ap.add_argument("--limit-mb", type=int, default=0, help="the planner's RLIMIT_AS (default: derived)")
    ap.add_argument("--work", default=str(ROOT / "build" / "planner_memory_bench"))
    ap.add_argument("--run", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--path", help=argparse.SUPPRESS)
    ap.add_argument("--options", default="{}", help=argparse.SUPPRESS)
    ap.add_argument("--oracle", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.run:
        print(json.dumps(run(args)))
        return

    work = Path(args.work)
    path = work / f"t{args.files}x{args.columns}"
    args.path = str(path)
    build_seconds = None
    if not (path / ".hoodie" / "hoodie.properties").exists():
        work.mkdir(parents=True, exist_ok=True)
        t = time.perf_counter()
        make_table(path, args.files, args.columns)
        build_seconds = time.perf_counter() - t
        print(f"table written in {build_seconds:.0f}s", flush=True)
    load_before = os.getloadavg()
    stats = path / ".hoodie" / "metadata" / "column_stats"

    in_memory = {PROCESSING_MODE_OVERRIDE: "in-memory"}
    engine = {PROCESSING_MODE_OVERRIDE: "engine"}
    free = {"in-memory": run_apart(args, in_memory, None, oracle=True)}
    free["engine"] = run_apart(args, engine, None, oracle=False)
    for name, r in free.items():
        assert "error" not in r, (name, r)
    assert free["in-memory"]["files"] == free["engine"]["files"]
    assert free["in-memory"]["rows"] == free["engine"]["rows"] == free["in-memory"]["oracle_rows"]
    peaks = {m: r["planner"]["VmPeak"] for m, r in free.items()}
    limit = args.limit_mb << 20 if args.limit_mb else (peaks["in-memory"] + peaks["engine"]) // 2
    # the room the limit leaves above the resting planner's address space
    budget = {MEMORY_BUDGET: str(max(1 << 20, limit - free["in-memory"]["resting"]["VmPeak"]))}
    print(f"planner limit {limit >> 20} MiB; peaks {peaks}", flush=True)

    limited = {
        "in-memory": run_apart(args, in_memory, limit >> 10, oracle=False),
        "engine": run_apart(args, engine, limit >> 10, oracle=False),
        "budget": run_apart(
            args, {IN_MEMORY_PROJECTION_THRESHOLD: str(10**12), **budget}, limit >> 10, oracle=False
        ),
    }
    for name in ("engine", "budget"):
        r = limited[name]
        assert "error" not in r, (name, r)
        assert r["counters"]["column_stats_distributed"] == 1, (name, r["counters"])
        assert r["files"] == free["in-memory"]["files"] and r["rows"] == free["in-memory"]["rows"], name

    def summary(r: dict[str, Any]) -> dict[str, Any]:
        keep = {k: r[k] for k in ("plan_seconds", "planner", "resting", "error", "out_of_memory") if k in r}
        if "counters" in r:
            keep["counters"] = r["counters"]
        return keep

    result = {
        "bench": "planner_memory",
        "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "commit": subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "files": args.files,
        "columns": args.columns,
        "stats_records": args.files * args.columns,
        "build_seconds": build_seconds,
        "column_stats_bytes_on_disk": directory_size(stats),
        "files_selected": len(free["engine"]["files"]),
        "rows": len(free["engine"]["rows"]),
        "planner_limit_bytes": limit,
        "budget": budget,
        "no_limit": {m: summary(r) for m, r in free.items()},
        "limited": {m: summary(r) for m, r in limited.items()},
        "in_memory_failed_under_limit": "error" in limited["in-memory"],
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    with RESULTS.open("a") as f:
        f.write(json.dumps(result) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
