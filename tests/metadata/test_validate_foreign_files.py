"""`hudi-md metadata validate` reports files no instant wrote (``foreign_file``): what a writer
other than Hudi leaves in the table (Spark's generic ``INSERT INTO`` wrote ``part-*.parquet`` and
``_SUCCESS``; their rows are in no read). Files of pending instants, partition metadata and hidden
files such as Hadoop's checksums are not reported.

Each case runs on both storage layouts: the default one (data files in the partition folders
under the table path) and the federated one (RFC-60: data files in hashed prefix folders under a
storage path, where a file naming an instant not on the timeline went unreported). There, the
storage path's folders of other tables are not judged, and a file in a folder where the storage
strategy does not put its file group is foreign."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
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
FEDERATED = {"hoodie.storage.strategy.class": "hudi_md.storage.strategy.ObjectStoreStorageStrategy"}
SPARK_PART = "part-00000-5b1e7c2e-9a43-4a34-8f3c-1f0e4a1c9d3e.c000.snappy.parquet"
ROWS = pa.table(
    {
        "id": ["a", "b", "c"],
        "v": pa.array([1, 2, 3], pa.int64()),
        "ts": pa.array([1, 1, 1], pa.int64()),
        "region": ["us", "us", "eu"],
    }
)


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hudi_md.cli", *args], capture_output=True, text=True, timeout=120
    )


@dataclass
class Table:
    path: Path  # the table path
    data: Path  # where its data files are: the table path, or the storage path
    options: dict[str, str]

    def folder(self, partition: str) -> Path:
        """A folder holding data files of ``partition``: the partition folder, or a hashed
        prefix folder of one of its file groups under the storage path."""
        return self.data_file(partition).parent

    def data_file(self, partition: str) -> Path:
        # under a storage path: <prefix>/<table name>/<partition>/ (other tables may share it)
        name = self.options["hoodie.table.name"]
        return sorted(
            f
            for f in self.data.rglob("*.parquet")
            if f.parent.name == partition and (self.data == self.path or f.parent.parent.name == name)
        )[0]


def _write(path: Path, layout: str, storage_path: Path, name: str = "foreign") -> Table:
    options = {**OPTIONS, "hoodie.table.name": name}
    if layout == "federated":
        options |= {**FEDERATED, "hoodie.storage.path": str(storage_path)}
    hudi_md.write(ROWS, str(path), operation="insert", options=options)
    hudi_md.write(ROWS, str(path), operation="upsert", options=options)
    return Table(path, storage_path if layout == "federated" else path, options)


@pytest.fixture(params=["default", "federated"])
def table(request: pytest.FixtureRequest, tmp_path: Path) -> Table:
    t = _write(tmp_path / "t", request.param, tmp_path / "data")
    assert run("metadata", "validate", str(t.path)).returncode == 0
    if request.param == "federated":
        assert not list(t.path.rglob("*.parquet"))  # the data files are under the storage path only
    return t


def foreign(table: Table) -> list[tuple[str, str]]:
    diffs = validate_metadata_table(hudi_md.open_table(str(table.path)))
    return [(d.partition_path, d.file_name) for d in diffs if d.kind == "foreign_file"]


def test_spark_output_files_are_reported(table: Table) -> None:
    us = table.folder("region=us")
    shutil.copy(table.data_file("region=us"), us / SPARK_PART)
    (table.path / "_SUCCESS").write_bytes(b"")
    (us / f".{SPARK_PART}.crc").write_bytes(b"crc")  # hidden: not judged
    proc = run("metadata", "validate", str(table.path))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"region=us/{SPARK_PART}: no instant wrote this file" in proc.stdout
    assert "hudi_md.write" in proc.stdout
    data = json.loads(run("metadata", "validate", "--json", str(table.path)).stdout)
    assert not data["ok"]
    assert sorted((d["kind"], d["partition_path"], d["file_name"]) for d in data["differences"]) == [
        ("foreign_file", "", "_SUCCESS"),
        ("foreign_file", "region=us", SPARK_PART),
    ]


def test_files_in_a_new_directory_without_partition_metadata_are_reported(table: Table) -> None:
    # written through the table path, as a generic file source writes: in either layout
    new = table.path / "region=new"
    new.mkdir()
    shutil.copy(table.data_file("region=us"), new / SPARK_PART)
    (table.path / "region=eu" / "notes.txt").write_text("x")
    assert foreign(table) == [("region=eu", "notes.txt"), ("region=new", SPARK_PART)]


def test_hudi_names_of_instants_not_on_the_timeline_are_reported(table: Table) -> None:
    src = table.data_file("region=us")
    folder = src.parent
    file_id, token, instant = src.stem.split("_")
    unknown = "20991231235959999"
    # the file group's own file names with an instant no one wrote: where its files are
    base = f"{file_id}_{token}_{unknown}.parquet"
    log = f".{file_id}_{unknown}.log.1_0-1-0"
    shutil.copy(src, folder / base)
    (folder / log).write_bytes(b"#HUDI#")
    assert foreign(table) == [("region=us", log), ("region=us", base)]
    proc = run("metadata", "validate", str(table.path))
    assert proc.returncode == 1 and f"names instant {unknown}, which is not on the timeline" in proc.stdout
    # An instant older than the active timeline may have been archived: not judged.
    older = str(int(min(hudi_md.open_table(str(table.path)).timeline.times())) - 1).zfill(len(instant))
    (folder / base).rename(folder / f"{file_id}_{token}_{older}.parquet")
    (folder / log).unlink()
    assert foreign(table) == []


def test_files_of_a_pending_instant_are_left_to_rollback(table: Table) -> None:
    src = table.data_file("region=us")
    file_id, token, _ = src.stem.split("_")
    timeline = table.path / ".hoodie" / "timeline"
    pending = "20991231235959999"
    (timeline / f"{pending}.commit.requested").write_bytes(b"")
    (timeline / f"{pending}.inflight").write_bytes(b"")
    shutil.copy(src, src.parent / f"{file_id}_{token}_{pending}.parquet")
    assert foreign(table) == []
    proc = run("metadata", "validate", str(table.path))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_rolled_back_write_leaves_nothing_foreign(table: Table) -> None:
    hudi_md.write(ROWS.slice(0, 1), str(table.path), operation="upsert", options=table.options)
    last = hudi_md.open_table(str(table.path)).timeline.write_timeline().last()
    assert last is not None
    assert run("rollback", str(table.path), last.requested_time).returncode == 0
    assert not [f for f in table.data.rglob("*") if last.requested_time in f.name]
    assert foreign(table) == []
    assert run("metadata", "validate", str(table.path)).returncode == 0


# --- the federated layout's own cases ------------------------------------------------------------------


@pytest.fixture
def federated(tmp_path: Path) -> Table:
    return _write(tmp_path / "t", "federated", tmp_path / "data")


def test_a_file_where_the_strategy_does_not_put_its_file_group(federated: Table) -> None:
    """A data file of region=us copied into a folder of region=eu (under its own name: its file
    id and instant are the table's): no reader looks for it there."""
    src = federated.data_file("region=us")
    eu = federated.folder("region=eu")
    shutil.copy(src, eu / src.name)
    diffs = [
        d
        for d in validate_metadata_table(hudi_md.open_table(str(federated.path)))
        if d.kind == "foreign_file"
    ]
    assert [(d.partition_path, d.file_name) for d in diffs] == [("region=eu", src.name)]
    file_id = src.name.split("_")[0]
    assert f"puts file group {file_id} in another folder" in diffs[0].detail
    assert str(eu / src.name) in diffs[0].detail


def test_other_tables_sharing_the_storage_path_are_not_judged(federated: Table, tmp_path: Path) -> None:
    other = _write(tmp_path / "other", "federated", federated.data, name="other")
    assert foreign(federated) == [] and foreign(other) == []
    # a foreign file in a folder of the other table is the other table's
    src = other.data_file("region=us")
    unknown = f"{'_'.join(src.stem.split('_')[:2])}_20991231235959999.parquet"
    shutil.copy(src, src.parent / unknown)
    assert foreign(federated) == []
    assert foreign(other) == [("region=us", unknown)]
