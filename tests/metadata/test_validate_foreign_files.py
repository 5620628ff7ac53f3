"""`hudi-md metadata validate` reports files no instant wrote (``foreign_file``): what a writer
other than Hudi leaves in the table (Spark's generic ``INSERT INTO`` wrote ``part-*.parquet`` and
``_SUCCESS``; their rows are in no read). Files of pending instants, partition metadata and hidden
files such as Hadoop's checksums are not reported."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import hudi_md
from hudi_md.metadata.validate import validate_metadata_table

OPTIONS = {
    "hoodie.table.name": "foreign",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "region",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.hive_style_partitioning": "true",
}
SPARK_PART = "part-00000-5b1e7c2e-9a43-4a34-8f3c-1f0e4a1c9d3e.c000.snappy.parquet"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hudi_md.cli", *args], capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def table(tmp_path: Path) -> Path:
    path = tmp_path / "t"
    rows = pa.table(
        {
            "id": ["a", "b", "c"],
            "v": pa.array([1, 2, 3], pa.int64()),
            "ts": pa.array([1, 1, 1], pa.int64()),
            "region": ["us", "us", "eu"],
        }
    )
    hudi_md.write(rows, str(path), operation="insert", options=OPTIONS)
    hudi_md.write(rows, str(path), operation="upsert", options=OPTIONS)
    assert run("metadata", "validate", str(path)).returncode == 0
    return path


def _a_parquet_file(table: Path) -> Path:
    return sorted((table / "region=us").glob("*.parquet"))[0]


def foreign(table: Path) -> list[tuple[str, str]]:
    diffs = validate_metadata_table(hudi_md.open_table(str(table)))
    return [(d.partition_path, d.file_name) for d in diffs if d.kind == "foreign_file"]


def test_spark_output_files_are_reported(table: Path) -> None:
    shutil.copy(_a_parquet_file(table), table / "region=us" / SPARK_PART)
    (table / "_SUCCESS").write_bytes(b"")
    (table / "region=us" / f".{SPARK_PART}.crc").write_bytes(b"crc")  # hidden: not judged
    proc = run("metadata", "validate", str(table))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"region=us/{SPARK_PART}: no instant wrote this file" in proc.stdout
    assert "hudi_md.write" in proc.stdout
    data = json.loads(run("metadata", "validate", "--json", str(table)).stdout)
    assert not data["ok"]
    assert sorted((d["kind"], d["partition_path"], d["file_name"]) for d in data["differences"]) == [
        ("foreign_file", "", "_SUCCESS"),
        ("foreign_file", "region=us", SPARK_PART),
    ]


def test_files_in_a_new_directory_without_partition_metadata_are_reported(table: Path) -> None:
    new = table / "region=new"
    new.mkdir()
    shutil.copy(_a_parquet_file(table), new / SPARK_PART)
    (table / "region=eu" / "notes.txt").write_text("x")
    assert foreign(table) == [("region=eu", "notes.txt"), ("region=new", SPARK_PART)]


def test_hudi_names_of_instants_not_on_the_timeline_are_reported(table: Path) -> None:
    src = _a_parquet_file(table)
    file_id, token, instant = src.stem.split("_")
    unknown = "20991231235959999"
    base = f"{file_id[:-1]}9_{token}_{unknown}.parquet"
    log = f".{file_id}_{unknown}.log.1_0-1-0"
    shutil.copy(src, table / "region=us" / base)
    (table / "region=us" / log).write_bytes(b"#HUDI#")
    assert foreign(table) == [("region=us", log), ("region=us", base)]
    # An instant older than the active timeline may have been archived: not judged.
    older = str(int(min(hudi_md.open_table(str(table)).timeline.times())) - 1).zfill(len(instant))
    (table / "region=us" / base).rename(table / "region=us" / f"{file_id[:-1]}9_{token}_{older}.parquet")
    (table / "region=us" / log).unlink()
    assert foreign(table) == []


def test_files_of_a_pending_instant_are_left_to_rollback(table: Path) -> None:
    src = _a_parquet_file(table)
    file_id, token, _ = src.stem.split("_")
    timeline = table / ".hoodie" / "timeline"
    pending = "20991231235959999"
    (timeline / f"{pending}.commit.requested").write_bytes(b"")
    (timeline / f"{pending}.inflight").write_bytes(b"")
    shutil.copy(src, table / "region=us" / f"{file_id}_{token}_{pending}.parquet")
    assert foreign(table) == []
    proc = run("metadata", "validate", str(table))
    assert proc.returncode == 0, proc.stdout + proc.stderr
