"""Asynchronous MDT indexing (write/indexing.py): schedule, writers during indexing, run, and the
new partitions checked against the table (every live key at its file group, column stats equal to
the Parquet footers, ``metadata validate`` clean)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import hudi_md
from hudi_md.errors import InvalidOptionError
from hudi_md.metadata import keys as K
from hudi_md.metadata.column_ranges import column_ranges_from_parquet
from hudi_md.metadata.indexing import indexing_state
from hudi_md.metadata.validate import validate_metadata_table
from hudi_md.write import indexing
from hudi_md.write.writer import HudiWriter
from table_model import Model, assert_same, read_hudi_md, read_hudi_rs

OPTIONS = {
    "hoodie.table.name": "ix",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "city",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.hive_style_partitioning": "true",
    "hoodie.metadata.index.column.stats.enable": "false",
    "hoodie.metadata.index.partition.stats.enable": "false",
    "hoodie.metadata.record.index.enable": "false",
    "hoodie.write.concurrency.mode": "optimistic_concurrency_control",
    "hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.InProcessLockProvider",
}
CITIES = ["sf", "nyc", "chennai"]


def _rows(ids: range, ts: int) -> pa.Table:
    return pa.table(
        {
            "id": [f"id-{i:03d}" for i in ids],
            "city": [CITIES[i % 3] for i in ids],
            "ts": [ts] * len(ids),
            "fare": [float(i * ts) for i in ids],
        }
    )


def _write(path: Path, model: Model, data: pa.Table, operation: str, table_type: str) -> None:
    HudiWriter(str(path), {**OPTIONS, "hoodie.datasource.write.table.type": table_type}).write(
        data, operation
    )
    model.apply(operation, data)


def _check(path: Path, model: Model) -> None:
    table = hudi_md.open_table(str(path), {"hoodie.metadata.enable": "true"})
    mdt = table.metadata_table
    assert mdt is not None and {K.RECORD_INDEX, K.COLUMN_STATS} <= mdt.available_partitions
    assert validate_metadata_table(table) == []
    slices = table.state.file_system_view().latest_file_slices(table.partitions())
    # record index: every live key at its file group, nothing else
    from hudi_md.read.slice_reader import SliceRowReader

    reader = SliceRowReader(table.state)
    where = {k: (s.partition_path, s.file_id) for s in slices for k in reader.keys(s).to_pylist()}
    found = mdt.record_index.locations(sorted(where))
    assert {k: (loc.partition_path, loc.file_id) for k, loc in found.items()} == where
    # column stats: what the Parquet footers of the latest base files say
    for s in slices:
        if s.base_file is None:
            continue
        footer = pq.read_metadata(str(path / s.base_file.path))
        want = column_ranges_from_parquet(footer, ["fare", "ts"])
        stats = mdt.stats.column_stats(["fare", "ts"], [s.partition_path])
        got = {c.column_name: c for c in stats if c.file_name == s.base_file.name}
        for col, rng in want.items():
            assert (got[col].min_value, got[col].max_value) == (rng.min_value, rng.max_value), col
    assert_same(read_hudi_md(str(path)), model.expected(), "hudi-md")
    assert_same(read_hudi_rs(str(path)), model.expected(), "hudi-rs")


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_index_built_beside_writers(tmp_path: Path, table_type: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t"
    model = Model(["city"])
    _write(path, model, _rows(range(0, 60), 1), "insert", table_type)
    _write(path, model, _rows(range(30, 90), 2), "upsert", table_type)
    _write(path, model, _rows(range(0, 10), 3), "delete", table_type)

    writer = HudiWriter(str(path), OPTIONS)
    t = indexing.schedule_indexing(writer, [K.RECORD_INDEX, K.COLUMN_STATS])
    state = indexing_state(writer.storage, writer.config(), writer.timeline())
    assert [p.instant.requested_time for p in state.pending] == [t]
    assert set(state.inflight) == {K.RECORD_INDEX, K.COLUMN_STATS}
    assert not {K.RECORD_INDEX, K.COLUMN_STATS} & set(state.available)
    with pytest.raises(InvalidOptionError, match="already available, inflight or planned"):
        indexing.schedule_indexing(writer, [K.RECORD_INDEX])
    # readers never use an inflight partition
    mdt = hudi_md.open_table(str(path)).metadata_table
    assert mdt is not None and K.RECORD_INDEX not in mdt.available_partitions

    # a writer between schedule and run, and one while the run is building
    _write(path, model, _rows(range(80, 120), 4), "upsert", table_type)
    real = indexing.PartitionBuilder

    def build_then_write(*args: Any, **kwargs: Any) -> Any:
        builder = real(*args, **kwargs)  # the table is listed: commits after it only log
        _write(path, model, _rows(range(40, 50), 5), "delete", table_type)
        _write(path, model, _rows(range(100, 130), 6), "upsert", table_type)
        return builder

    monkeypatch.setattr(indexing, "PartitionBuilder", build_then_write)
    assert indexing.run_indexing(writer) == t
    monkeypatch.undo()

    state = indexing_state(writer.storage, writer.config(), writer.timeline())
    assert state.pending == [] and state.inflight == []
    assert {K.RECORD_INDEX, K.COLUMN_STATS} <= set(state.available)
    assert [c[0].requested_time for c in state.completed] == [t]
    _check(path, model)
    # and writers after it keep the new partitions right
    _write(path, model, _rows(range(0, 20), 7), "upsert", table_type)
    _write(path, model, _rows(range(110, 115), 8), "delete", table_type)
    _check(path, model)
    assert indexing.run_indexing(writer) is None  # nothing pending


def test_schedule_refuses_bad_requests_and_leaves_nothing(tmp_path: Path) -> None:
    path = tmp_path / "t"
    model = Model(["city"])
    _write(path, model, _rows(range(0, 9), 1), "insert", "COPY_ON_WRITE")
    writer = HudiWriter(str(path), OPTIONS)
    before = sorted(p.name for p in (path / ".hoodie" / "timeline").iterdir())
    for bad in (["files"], ["no_such_index"], []):
        with pytest.raises(InvalidOptionError):
            indexing.schedule_indexing(writer, bad)
    assert sorted(p.name for p in (path / ".hoodie" / "timeline").iterdir()) == before

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise OSError("disk full")

    real = indexing.PartitionBuilder
    indexing.PartitionBuilder = boom  # type: ignore[assignment,misc]
    try:
        with pytest.raises(OSError):
            indexing.schedule_indexing(writer, [K.RECORD_INDEX])
    finally:
        indexing.PartitionBuilder = real  # type: ignore[misc]
    assert sorted(p.name for p in (path / ".hoodie" / "timeline").iterdir()) == before
    config = writer.config()
    assert config is not None and K.RECORD_INDEX not in config.metadata_partitions_inflight
    assert not (path / ".hoodie" / "metadata" / K.RECORD_INDEX).exists()


def test_a_run_that_died_is_run_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t"
    model = Model(["city"])
    _write(path, model, _rows(range(0, 60), 1), "insert", "MERGE_ON_READ")
    _write(path, model, _rows(range(20, 70), 2), "upsert", "MERGE_ON_READ")
    writer = HudiWriter(str(path), OPTIONS)
    indexing.schedule_indexing(writer, [K.RECORD_INDEX, K.COLUMN_STATS])
    real = indexing.write_index_defs

    def die(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("killed")

    monkeypatch.setattr(indexing, "write_index_defs", die)
    with pytest.raises(RuntimeError):
        indexing.run_indexing(writer)
    monkeypatch.setattr(indexing, "write_index_defs", real)
    _write(path, model, _rows(range(50, 80), 3), "upsert", "MERGE_ON_READ")
    assert indexing.run_indexing(writer) is not None
    _check(path, model)


def test_cli_schedule_show_run(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    path = tmp_path / "t"
    model = Model(["city"])
    _write(path, model, _rows(range(0, 30), 1), "insert", "COPY_ON_WRITE")

    def cli(*args: str) -> str:
        proc = subprocess.run([sys.executable, "-m", "hudi_md.cli", *args], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    assert "scheduled indexing" in cli(
        "index", "schedule", str(path), "--partitions", "record_index,column_stats"
    )
    shown = json.loads(cli("index", "show", "--json", str(path)))
    assert len(shown["pending_indexing"]) == 1 and set(shown["inflight"]) == {"record_index", "column_stats"}
    _write(path, model, _rows(range(20, 40), 2), "upsert", "COPY_ON_WRITE")
    assert "completed" in cli("index", "run", "--no-progress", str(path))
    shown = json.loads(cli("index", "show", "--json", str(path)))
    assert shown["pending_indexing"] == [] and shown["inflight"] == []
    assert {"record_index", "column_stats"} <= set(shown["available"])
    _check(path, model)


def test_columns_named_at_schedule_are_what_every_writer_indexes(tmp_path: Path) -> None:
    from hudi_md.metadata.column_ranges import columns_to_index

    path = tmp_path / "t"
    model = Model(["city"])
    _write(path, model, _rows(range(0, 30), 1), "insert", "MERGE_ON_READ")
    writer = HudiWriter(str(path), OPTIONS)
    with pytest.raises(InvalidOptionError, match="no_such_column"):
        indexing.schedule_indexing(writer, [K.COLUMN_STATS], columns=["fare", "no_such_column"])
    with pytest.raises(InvalidOptionError, match="column_stats"):
        indexing.schedule_indexing(writer, [K.RECORD_INDEX], columns=["fare"])
    indexing.schedule_indexing(writer, [K.COLUMN_STATS, K.PARTITION_STATS], columns=["fare"])
    _write(path, model, _rows(range(20, 40), 2), "upsert", "MERGE_ON_READ")  # during: logs fare only
    indexing.run_indexing(writer)
    _write(path, model, _rows(range(0, 10), 3), "upsert", "MERGE_ON_READ")  # after: fare only
    table = hudi_md.open_table(str(path))
    want = set(columns_to_index(table.schema, column_list=["fare"]))
    assert "fare" in want and "ts" not in want
    mdt = table.metadata_table
    assert mdt is not None
    assert {s.column_name for s in mdt.stats.column_stats()} == want
    assert {s.column_name for s in mdt.stats.partition_stats()} == want
    assert validate_metadata_table(table) == []


def test_an_index_a_writer_dropped_is_reported_and_can_be_dropped(tmp_path: Path) -> None:
    """Apache Hudi 1.2's writers drop MDT partitions their options do not enable
    (hoodie.metadata.auto.delete.partitions) and leave index.json's definition behind
    (../shared/reference/hudi-rfcs-45-36-60.md 1.9): validate reports it, index drop clears it."""
    from hudi_md.table import config as C
    from hudi_md.table.config import TableConfig, update_table_config
    from hudi_md.write.table_setup import drop_metadata_indexes

    path = tmp_path / "t"
    model = Model(["city"])
    _write(path, model, _rows(range(0, 30), 1), "insert", "COPY_ON_WRITE")
    writer = HudiWriter(str(path), OPTIONS)
    indexing.schedule_indexing(writer, [K.RECORD_INDEX])
    indexing.run_indexing(writer)
    assert validate_metadata_table(hudi_md.open_table(str(path))) == []
    # what Hudi's auto-deletion does: the partition leaves the table config and storage
    config = TableConfig.load(writer.storage)
    kept = [p for p in config.metadata_partitions if p != K.RECORD_INDEX]
    update_table_config(writer.storage, {C.METADATA_PARTITIONS: ",".join(kept)})
    import shutil

    shutil.rmtree(path / ".hoodie" / "metadata" / K.RECORD_INDEX)
    diffs = validate_metadata_table(hudi_md.open_table(str(path)))
    assert [(d.kind, K.RECORD_INDEX in d.detail) for d in diffs] == [("index_dropped", True)]
    drop_metadata_indexes(writer, [K.RECORD_INDEX])
    assert validate_metadata_table(hudi_md.open_table(str(path))) == []


def test_no_blocking_build_of_a_partition_being_indexed(tmp_path: Path) -> None:
    from hudi_md.write.table_setup import create_metadata_partitions

    path = tmp_path / "t"
    model = Model(["city"])
    _write(path, model, _rows(range(0, 30), 1), "insert", "COPY_ON_WRITE")
    writer = HudiWriter(str(path), OPTIONS)
    indexing.schedule_indexing(writer, [K.RECORD_INDEX])
    with pytest.raises(InvalidOptionError, match="being built by an indexer"):
        create_metadata_partitions(writer, [K.RECORD_INDEX])
    # a writer enabling the record index leaves it to the indexer (no second build)
    enabled = {**OPTIONS, "hoodie.metadata.record.index.enable": "true"}
    HudiWriter(str(path), enabled).write(_rows(range(20, 50), 2), "upsert")
    model.apply("upsert", _rows(range(20, 50), 2))
    state = indexing_state(writer.storage, writer.config(), writer.timeline())
    assert K.RECORD_INDEX in state.inflight and K.RECORD_INDEX not in state.available
    indexing.run_indexing(writer)
    _check_record_index(path)
    assert_same(read_hudi_rs(str(path)), model.expected(), "hudi-rs")


def _check_record_index(path: Path) -> None:
    """The record index of a COW table holds exactly the keys of its latest base files, found by a
    plain storage listing and read by pyarrow (hudi-rs plans through the MDT's files partition),
    at their file groups."""
    completed = {f.name.split("_")[0] for f in (path / ".hoodie" / "timeline").iterdir() if "_" in f.name}
    want: dict[str, tuple[str, str]] = {}
    for folder in path.iterdir():
        if folder.name.startswith("."):
            continue
        latest: dict[str, tuple[str, Path]] = {}
        for f in folder.glob("*.parquet"):
            file_id, _, instant = f.stem.split("_")
            if instant in completed and (file_id not in latest or instant > latest[file_id][0]):
                latest[file_id] = (instant, f)
        for file_id, (_, f) in latest.items():
            for k in pq.read_table(f, columns=["_hoodie_record_key"]).column(0).to_pylist():
                want[k] = (folder.name, file_id)
    mdt = hudi_md.open_table(str(path)).metadata_table
    assert mdt is not None
    assert {k: (loc.partition_path, loc.file_id) for k, loc in mdt.record_index.locations().items()} == want


def test_a_commit_without_an_mdt_deltacommit_is_caught_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RFC-45's indexing check: a commit that completed after the build's listing without syncing
    the MDT (a writer that does not know the MDT) makes the indexer build again, under the lock,
    so its keys are indexed."""
    from hudi_md.write.transaction import Transaction

    path = tmp_path / "t"
    model = Model(["city"])
    _write(path, model, _rows(range(0, 30), 1), "insert", "COPY_ON_WRITE")
    writer = HudiWriter(str(path), OPTIONS)
    indexing.schedule_indexing(writer, [K.RECORD_INDEX])
    real = indexing.PartitionBuilder

    def build_then_write(*args: Any, **kwargs: Any) -> Any:
        builder = real(*args, **kwargs)
        if not getattr(build_then_write, "done", False):
            build_then_write.done = True  # type: ignore[attr-defined]
            with monkeypatch.context() as m:
                m.setattr(Transaction, "write_metadata", lambda *a, **k: None)
                _write(path, model, _rows(range(100, 120), 2), "insert", "COPY_ON_WRITE")
        return builder

    monkeypatch.setattr(indexing, "PartitionBuilder", build_then_write)
    indexing.run_indexing(writer)
    monkeypatch.undo()
    _check_record_index(path)


def test_validate_after_commits_past_an_indexing_instant_are_archived(tmp_path: Path) -> None:
    """A completed indexing instant stays on the active timeline while the commits after it are
    archived; their files are live, and validate does not take them for files no instant wrote
    (it judged by the first instant of any action, the indexing one)."""
    path = tmp_path / "t"
    model = Model(["city"])
    opts = {
        **OPTIONS,
        "hoodie.keep.min.commits": "2",
        "hoodie.keep.max.commits": "3",
        "hoodie.metadata.compact.max.delta.commits": "2",
    }
    HudiWriter(str(path), opts).write(_rows(range(0, 9), 1), "insert")
    model.apply("insert", _rows(range(0, 9), 1))
    writer = HudiWriter(str(path), opts)
    indexing.schedule_indexing(writer, [K.RECORD_INDEX])
    indexing.run_indexing(writer)
    for n in range(2, 10):  # inserts: new file groups, live until the end
        data = _rows(range(n * 10, n * 10 + 3), n)
        HudiWriter(str(path), opts).write(data, "insert")
        model.apply("insert", data)
    table = hudi_md.open_table(str(path))
    assert table.state.has_archived_instants(), "commits were archived"
    assert validate_metadata_table(table) == []
    assert_same(read_hudi_md(str(path)), model.expected(), "hudi-md")
