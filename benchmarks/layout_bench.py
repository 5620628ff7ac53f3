"""Storage layout benchmark (issue 14): how requests spread over key prefixes, default layout vs the
object-store strategy (RFC-60), for a bulk insert and a full scan, and what the path translation
costs in time.

    .venv/bin/python benchmarks/layout_bench.py --rows 1000000 [--max-file-size 2000000] [--prefixes 0]

Object stores throttle per key prefix. A request's prefix here is the first component of its key
under the bucket: the table path for everything of a default-layout table (and for ``.hoodie/``
and partition metadata of a federated one), the hash prefix for a federated table's data files.
The figure is the largest share of a phase's requests on one prefix, and the histogram of
requests per prefix. Times are a ratio between the two layouts in the same run (local disk, so it
is what the translation costs, not what throttling would). Results are appended to
benchmarks/results/layout_bench.jsonl.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

import hudi_md
from hudi_md.storage import Storage, StorageStats
from hudi_md.table.layout import table_storage
from hudi_md.write import file_groups
from hudi_md.write.writer import HudiWriter

# The file-group tasks open their own storage (on Spark, in each executor); run in this process,
# they count into one StorageStats per run instead, so the data files' requests are in the figures.
RUN_STATS = StorageStats()


def _counted_storage(self: file_groups.WriteContext) -> Storage:
    return table_storage(Storage(self.base_uri, self.storage_options, stats=RUN_STATS), self.layout)


file_groups.WriteContext.storage = _counted_storage  # type: ignore[method-assign]

CITIES = [f"city_{i:02d}" for i in range(20)]
STORAGE_COUNTER = "@storage-path/"


def make_rows(n: int, start: int, ts: int) -> pa.Table:
    ids = pa.array(range(start, start + n), pa.int64())
    return pa.table(
        {
            "id": pc.cast(ids, pa.string()),
            "city": pa.array([CITIES[i % len(CITIES)] for i in range(start, start + n)], pa.string()),
            "ts": pa.array([ts] * n, pa.int64()),
            "fare": pc.multiply(pc.cast(ids, pa.float64()), 0.01),
        }
    )


def prefix_of(path: str, table_prefix: str) -> str:
    """The key prefix a request's path falls under (see the module doc)."""
    if path.startswith(STORAGE_COUNTER):
        return "data/" + path[len(STORAGE_COUNTER) :].split("/", 1)[0]
    return table_prefix


def histogram(by_path: dict[str, int], table_prefix: str) -> dict[str, int]:
    counts: Counter[str] = Counter()
    for path, n in by_path.items():
        counts[prefix_of(path, table_prefix)] += n
    return dict(counts)


def summary(hist: dict[str, int]) -> dict[str, object]:
    total = sum(hist.values())
    top = max(hist.values()) if hist else 0
    sizes = sorted(hist.values(), reverse=True)
    return {
        "requests": total,
        "prefixes": len(hist),
        "max_share": round(top / total, 4) if total else 0.0,
        "top_prefixes": sizes[:5],
        "median_per_prefix": sizes[len(sizes) // 2] if sizes else 0,
    }


def run(rows: int, layout: str, max_file_size: int, prefixes: int, root: Path) -> dict[str, object]:
    path = root / "tables" / f"t_{layout}"
    opts = {
        "hoodie.table.name": f"t_{layout}",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.parquet.max.file.size": str(max_file_size),
        "hoodie.metadata.index.column.stats.enable": "false",
        "hoodie.metadata.index.partition.stats.enable": "false",
    }
    if layout == "object_store":
        opts["hoodie.storage.strategy.class"] = "hudi_md.storage.strategy.ObjectStoreStorageStrategy"
        opts["hoodie.storage.path"] = str(root / "data")
        if prefixes:
            opts["hoodie.storage.strategy.prefix.count"] = str(prefixes)
    data = make_rows(rows, 0, 1)
    writer = HudiWriter(str(path), opts)
    RUN_STATS.reset()
    start = time.perf_counter()
    writer.write(data, "bulk_insert")
    write_s = time.perf_counter() - start
    # the commit's requests: the writer's (timeline, MDT, lock, partition metadata) and the tasks'
    counted = Counter(writer.storage.stats.by_path())
    counted.update(RUN_STATS.by_path())
    write_hist = histogram(dict(counted), "tables")
    table = hudi_md.open_table(str(path))
    start = time.perf_counter()
    n = table.read(columns=["id", "fare"]).num_rows
    scan_s = time.perf_counter() - start
    assert n == rows, (n, rows)
    scan_hist = histogram(table.state.storage.stats.by_path(), "tables")
    files = sum(1 for _ in (root / ("data" if layout == "object_store" else "tables")).rglob("*.parquet"))
    return {
        "layout": layout,
        "write_s": round(write_s, 3),
        "scan_s": round(scan_s, 3),
        "data_files": files,
        "write": summary(write_hist),
        "scan": summary(scan_hist),
        "write_histogram": dict(sorted(write_hist.items(), key=lambda kv: -kv[1])),
        "scan_histogram": dict(sorted(scan_hist.items(), key=lambda kv: -kv[1])),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--max-file-size", type=int, default=2_000_000, help="hoodie.parquet.max.file.size")
    ap.add_argument("--prefixes", type=int, default=0, help="hoodie.storage.strategy.prefix.count (0: 2^32)")
    ap.add_argument("--repeat", type=int, default=2, help="runs of each layout, interleaved (times: best)")
    args = ap.parse_args()
    runs: dict[str, list[dict[str, object]]] = {"default": [], "object_store": []}
    for _ in range(args.repeat):
        for layout in runs:
            root = Path(tempfile.mkdtemp(prefix="hudi-md-layout-"))
            try:
                runs[layout].append(run(args.rows, layout, args.max_file_size, args.prefixes, root))
            finally:
                shutil.rmtree(root, ignore_errors=True)
    best = {k: min(v, key=lambda r: float(r["write_s"])) for k, v in runs.items()}
    write_ratio = min(float(r["write_s"]) for r in runs["object_store"]) / min(
        float(r["write_s"]) for r in runs["default"]
    )
    scan_ratio = min(float(r["scan_s"]) for r in runs["object_store"]) / min(
        float(r["scan_s"]) for r in runs["default"]
    )
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    result = {
        "commit": commit,
        "rows": args.rows,
        "max_file_size": args.max_file_size,
        "prefix_count": args.prefixes,
        "cores": os.cpu_count(),
        "load": os.getloadavg(),
        "write_time_ratio_object_store_over_default": round(write_ratio, 4),
        "scan_time_ratio_object_store_over_default": round(scan_ratio, 4),
        "default": {k: v for k, v in best["default"].items() if not k.endswith("histogram")},
        "object_store": {k: v for k, v in best["object_store"].items() if not k.endswith("histogram")},
        "object_store_write_histogram_top20": dict(
            list(best["object_store"]["write_histogram"].items())[:20]
        ),
        "all_runs_s": {k: [(r["write_s"], r["scan_s"]) for r in v] for k, v in runs.items()},
    }
    print(json.dumps(result, indent=2))
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    with open(out / "layout_bench.jsonl", "a") as f:
        f.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
