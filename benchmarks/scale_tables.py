"""The tables of the planning-at-scale benchmark (issue 17), written with ``hudi_md.write``.

    .venv/bin/python benchmarks/scale_tables.py --partitions 100000 [--root build/plan-scale]

A table of N partitions ``dt=p0000000`` ... (hive-style, identity partitioning), one file each,
``ROWS_PER_PARTITION`` rows per file: ``id`` (record key), ``dt``, and ``v`` = the row number, so
``v`` is clustered (each file holds one narrow range of it) and ``v >= x`` selects a known share of
the files. The rows are bulk_inserted in commits of at most ``CHUNK`` partitions (one commit up to
100k partitions; ten for 1M: one write of 1M files holds ~30 GB of write stats and MDT records in
memory, and a table is written over many commits anyway); a build that stops resumes at the next
chunk. After the tenth, the MDT compacts its partitions inline (Hudi's default of ten deltacommits).
Then a last commit upserts a few rows of
``UPSERT_PARTITIONS`` partitions, so the latest commit (whose metadata a reader takes the schema
from) is a small one as on a table that is written to every day, and the MDT has deltacommits to
merge; its inline clean deletes the file versions the upsert replaced. MDT partitions: files,
column_stats (all columns), partition_stats (hudi-md's defaults).

Tables are built once per size and kept (``<root>/t<N>``, beside it ``t<N>.built`` holding the
build's figures); a half-built table (no marker) is removed and built again.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path
from typing import Any

import pyarrow as pa

import hudi_md

REPO = Path(__file__).resolve().parents[1]
DEFAULT_ROOT = REPO / "build" / "plan-scale"
ROWS_PER_PARTITION = 5
UPSERT_PARTITIONS = 10
CHUNK = 100_000
WIDTH = 7  # p0000000 .. p9999999

OPTIONS = {
    "hoodie.table.name": "plan_scale",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "dt",
    "hoodie.datasource.write.hive_style_partitioning": "true",
    "hoodie.parquet.bloom.filter.enabled": "false",
    # the upsert's inline clean removes the file versions it replaced: Spark's own listing of the
    # table then sees the same files as a Hudi reader
    "hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS",
    "hoodie.cleaner.fileversions.retained": "1",
}


def partition_name(i: int) -> str:
    return f"p{i:0{WIDTH}d}"


def rows(first: int, partitions: int) -> pa.Table:
    """The rows of partitions ``first`` .. ``first + partitions - 1``."""
    start, end = first * ROWS_PER_PARTITION, (first + partitions) * ROWS_PER_PARTITION
    return pa.table(
        {
            "id": [f"k{i:09d}" for i in range(start, end)],
            "dt": [partition_name(i // ROWS_PER_PARTITION) for i in range(start, end)],
            "v": pa.array(range(start, end), pa.int64()),
        }
    )


def upsert_rows(partitions: int) -> pa.Table:
    """One row in each of ``UPSERT_PARTITIONS`` partitions spread over the table, ``v`` kept."""
    step = max(partitions // UPSERT_PARTITIONS, 1)
    picked = [p * step for p in range(min(UPSERT_PARTITIONS, partitions))]
    ids = [p * ROWS_PER_PARTITION for p in picked]
    return pa.table(
        {
            "id": [f"k{i:09d}" for i in ids],
            "dt": [partition_name(p) for p in picked],
            "v": pa.array(ids, pa.int64()),
        }
    )


def table_path(root: Path, partitions: int) -> Path:
    return root / f"t{partitions}"


def build(root: Path, partitions: int) -> dict[str, Any]:
    """The table of ``partitions`` partitions under ``root`` (built unless already there) and the
    figures of its build."""
    path = table_path(root, partitions)
    marker = path.with_name(path.name + ".built")
    progress = path.with_name(path.name + ".progress")  # chunks committed so far, and their times
    if marker.exists():
        return dict(json.loads(marker.read_text()))
    done: list[float] = json.loads(progress.read_text()) if progress.exists() else []
    if not done and path.exists():
        shutil.rmtree(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # the commits the timeline completed decide where to resume (a chunk that committed just
    # before a crash is not written twice); a half-written one is rolled back by the next write
    committed = len(list((path / ".hoodie" / "timeline").glob("*_*.commit")))
    done = (done + [0.0] * committed)[:committed]
    for first in range(len(done) * CHUNK, partitions, CHUNK):
        start = time.perf_counter()
        data = rows(first, min(CHUNK, partitions - first))
        hudi_md.write(data, str(path), operation="bulk_insert", options=OPTIONS)
        done.append(round(time.perf_counter() - start, 1))
        progress.write_text(json.dumps(done))
    start = time.perf_counter()
    hudi_md.write(upsert_rows(partitions), str(path), operation="upsert", options=OPTIONS)
    upsert_s = time.perf_counter() - start
    figures = {
        "partitions": partitions,
        "rows": partitions * ROWS_PER_PARTITION,
        "bulk_insert_s": round(sum(done), 1),
        "bulk_insert_commits": len(done),
        "upsert_s": round(upsert_s, 1),
        "mdt_bytes": sum(f.stat().st_size for f in (path / ".hoodie" / "metadata").rglob("*") if f.is_file()),
        "hudi_md_version": hudi_md.__version__ if hasattr(hudi_md, "__version__") else None,
    }
    marker.write_text(json.dumps(figures))
    progress.unlink(missing_ok=True)
    return figures


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", type=int, action="append", required=True)
    ap.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    args = ap.parse_args()
    for n in args.partitions:
        print(json.dumps(build(args.root, n)), flush=True)


if __name__ == "__main__":
    main()
