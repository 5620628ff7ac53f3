"""RFC-15's MDT metrics: wall and CPU time per operation, and a commit's MDT upkeep timed as one
operation around its deltacommit (write_bench.py's within-commit share reads it)."""

from __future__ import annotations

import time
from pathlib import Path

import pyarrow as pa

import hudi_md
from hudi_md.metadata import metrics


def test_timed_counts_wall_and_cpu_time() -> None:
    metrics.reset()
    with metrics.timed("x"):
        end = time.process_time() + 0.05
        while time.process_time() < end:
            pass
    with metrics.timed("x"):
        time.sleep(0.05)  # wall time, no CPU time
    got = metrics.snapshot()["x"]
    assert got["count"] == 2
    assert got["total_ms"] >= 100
    assert 50 <= got["cpu_ms"] <= got["total_ms"] - 40
    metrics.reset()
    assert metrics.snapshot() == {}


def test_a_commit_times_its_mdt_upkeep_around_its_deltacommit(tmp_path: Path) -> None:
    options = {
        "hoodie.table.name": "t",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "p",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.metadata.record.index.enable": "true",
    }
    rows = pa.table({"id": [f"k{i}" for i in range(200)], "p": ["a", "b"] * 100, "ts": [1] * 200})
    hudi_md.write(rows, str(tmp_path / "t"), operation="bulk_insert", options=options)
    metrics.reset()
    hudi_md.write(rows, str(tmp_path / "t"), operation="upsert", options=options)
    got = metrics.snapshot()
    assert got["commit_upkeep"]["count"] == 1 and got["sync"]["count"] == 1
    assert got["sync"]["total_ms"] <= got["commit_upkeep"]["total_ms"]
    off, no_mdt = tmp_path / "off", {**options, "hoodie.metadata.enable": "false"}
    hudi_md.write(rows, str(off), operation="bulk_insert", options=no_mdt)
    metrics.reset()
    hudi_md.write(rows, str(off), operation="upsert", options=no_mdt)
    assert "commit_upkeep" not in metrics.snapshot()
