"""``WriteResult``: what every write and every table service that commits returns. Its counts are
those its instant file records (checked against the file on the timeline, read back as Hudi's
commit metadata) and what a read of the table shows; it stays the instant string for callers that
took the return of ``hudi_md.write`` as one."""

from __future__ import annotations

import copy
import json
import pickle
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import hudi_md
from hudi_md.formats.commit_metadata import CommitMetadata, parse_instant_metadata
from hudi_md.table.config import TableConfig
from hudi_md.write import services
from hudi_md.write.config import WriteConfig
from hudi_md.write.result import WriteResult
from hudi_md.write.writer import HudiWriter
from table_model import rows

OPTIONS = {
    "hoodie.table.name": "results",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "city",
    "hoodie.datasource.write.precombine.field": "ts",
}
MOR = {**OPTIONS, "hoodie.datasource.write.table.type": "MERGE_ON_READ"}


def _instant_file(path: str, instant: str) -> dict[str, Any]:
    """The completed instant file of ``instant`` on the data timeline, decoded."""
    timeline = hudi_md.open_table(path).timeline
    done = timeline.get(instant)
    assert done is not None and done.is_completed, instant
    raw = (Path(path) / ".hoodie" / "timeline" / done.file_name).read_bytes()
    return parse_instant_metadata(raw, done.file_name)


def _recorded(path: str, instant: str) -> dict[str, int]:
    """The totals of the commit's write stats as its instant file holds them (Hudi's names)."""
    stats = CommitMetadata(_instant_file(path, instant)).write_stats()
    return {
        "numInserts": sum(s.num_inserts for s in stats),
        "numUpdateWrites": sum(s.num_update_writes for s in stats),
        "numDeletes": sum(s.num_deletes for s in stats),
        "totalWriteBytes": sum(s.total_write_bytes for s in stats),
        "files": len({s.path for s in stats}),
    }


def _files_on_storage(path: str) -> dict[str, int]:
    """Data files (relative path -> size) outside .hoodie."""
    root = Path(path)
    return {
        str(f.relative_to(root)): f.stat().st_size
        for f in root.rglob("*")
        if f.is_file() and ".hoodie" not in f.parts and not f.name.startswith(".hoodie_partition_metadata")
    }


def test_an_upsert_counts_what_its_commit_recorded(tmp_path: Path) -> None:
    path = str(tmp_path / "cow")
    first = hudi_md.write(rows(range(10), 1, seed=1), path, operation="insert", options=OPTIONS)
    assert isinstance(first, WriteResult)
    assert (first.operation, first.action, first.rows_inserted, first.rows_updated) == (
        "insert",
        "commit",
        10,
        0,
    )
    before = _files_on_storage(path)
    # 10 rows, of which 4 (ids 6-9) are in the table
    result = hudi_md.write(rows(range(6, 16), 2, seed=2), path, operation="upsert", options=OPTIONS)
    assert (result.operation, result.action) == ("upsert", "commit")
    assert (result.rows_inserted, result.rows_updated, result.rows_deleted) == (6, 4, 0)
    recorded = _recorded(path, result)
    assert (
        recorded["numInserts"] == result.rows_inserted and recorded["numUpdateWrites"] == result.rows_updated
    )
    assert recorded["totalWriteBytes"] == result.bytes_written
    added = {p: size for p, size in _files_on_storage(path).items() if p not in before}
    assert result.files_added == recorded["files"] == len(added) > 0
    assert result.bytes_written == sum(added.values())  # base files are written whole
    # each file group the upsert merged into had its base file rewritten: the old one left the
    # snapshot (ids 6-9 live in the three cities' groups)
    assert result.files_removed == 3
    # every file group took an update, so each was rewritten whole: all 16 rows
    assert result.rows_written == 16
    table = hudi_md.open_table(path)
    assert table.read().num_rows == 10 + result.rows_inserted
    assert result.mdt_seconds > 0  # the table has a metadata table: its update took time

    deleted = hudi_md.write(rows([0, 7, 12], 3, seed=3), path, operation="delete", options=OPTIONS)
    assert (deleted.operation, deleted.rows_deleted, deleted.rows_inserted) == ("delete", 3, 0)
    assert _recorded(path, deleted)["numDeletes"] == 3
    assert hudi_md.open_table(path).read().num_rows == 16 - 3


def test_a_result_is_the_instant_string(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    result = hudi_md.write(rows(range(5), 1, seed=1), path, options=OPTIONS)
    instant = result.instant
    assert type(instant) is str and str(result) == instant and type(str(result)) is str
    assert result == instant and hash(result) == hash(instant) and {instant: 1}[result] == 1
    assert f"{result}" == instant and json.dumps(result) == json.dumps(instant)
    table = hudi_md.open_table(path)
    assert table.timeline.get(result) is not None
    assert table.read(as_of=result).num_rows == 5
    for again in (pickle.loads(pickle.dumps(result)), copy.copy(result), copy.deepcopy(result)):
        assert type(again) is WriteResult and again.to_dict() == result.to_dict()
    with pytest.raises(AttributeError):
        result.rows_inserted = 0  # type: ignore[misc]
    assert result.to_dict()["instant"] == instant and result.to_dict()["rows_inserted"] == 5
    assert repr(result).startswith(f"WriteResult({instant!r}, action='commit', operation='upsert'")


def test_a_table_without_a_metadata_table_spends_no_time_on_one(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    result = hudi_md.write(
        rows(range(5), 1, seed=1), path, options={**OPTIONS, "hoodie.metadata.enable": "false"}
    )
    assert result.mdt_seconds == 0.0 and result.rows_inserted == 5


def test_a_stream_written_returns_its_result(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    data = rows(range(30), 1, seed=1)
    reader = pa.RecordBatchReader.from_batches(data.schema, data.to_batches(max_chunksize=7))
    result = hudi_md.write(reader, path, operation="insert", options=OPTIONS)
    assert (result.operation, result.rows_inserted) == ("insert", 30)
    assert _recorded(path, result)["numInserts"] == 30


def test_table_services_return_what_they_committed(tmp_path: Path) -> None:
    path = str(tmp_path / "mor")
    opts = {
        **MOR,
        "hoodie.clean.automatic": "false",  # the clean below is the test's own
        "hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS",
        "hoodie.cleaner.fileversions.retained": "1",
    }
    hudi_md.write(rows(range(30), 1, seed=1), path, operation="insert", options=opts)
    upsert = hudi_md.write(rows(range(0, 30, 2), 2, seed=2), path, operation="upsert", options=opts)
    assert (upsert.action, upsert.rows_updated, upsert.rows_inserted) == ("deltacommit", 15, 0)
    logs = {p for p in _files_on_storage(path) if ".log." in p}
    assert upsert.files_added == len(logs) == 3  # a log file per city's file group
    assert upsert.files_removed == 0  # log files add to a slice, replace nothing

    slices = hudi_md.open_table(path).plan().slices
    writer = HudiWriter(path, opts)
    compaction = services.compact(writer)
    assert isinstance(compaction, WriteResult)
    assert (compaction.action, compaction.operation) == ("commit", "compact")
    assert compaction.rows_written == 30 and compaction.rows_inserted == 0
    assert compaction.files_added == len(slices) == 3
    assert compaction.files_removed == sum(1 + len(s.log_files) for s in slices)
    assert _recorded(path, compaction)["totalWriteBytes"] == compaction.bytes_written

    before = _files_on_storage(path)
    cleaned = services.clean(
        writer, WriteConfig.from_options(writer.options, TableConfig.load(writer.storage))
    )
    assert isinstance(cleaned, WriteResult)
    assert (cleaned.action, cleaned.operation) == ("clean", "clean")
    recorded = _instant_file(path, cleaned)
    gone = set(before) - set(_files_on_storage(path))
    assert cleaned.files_removed == recorded["totalFilesDeleted"] == len(gone) > 0
    assert hudi_md.open_table(path).read().num_rows == 30


def test_delete_partition_counts_the_file_groups_it_replaced(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    hudi_md.write(rows(range(30), 1, seed=1), path, operation="insert", options=OPTIONS)
    groups = {s.file_id for s in hudi_md.open_table(path).plan([("city", "=", "sf")]).slices}
    result = hudi_md.write(
        pa.Table.from_pylist([], rows(range(1), 1, seed=1).schema),
        path,
        operation="delete_partition",
        options={**OPTIONS, "hoodie.datasource.write.partitions.to.delete": "sf"},
    )
    assert (result.action, result.operation) == ("replacecommit", "delete_partition")
    recorded = CommitMetadata(_instant_file(path, result)).replaced_file_ids()
    assert result.file_groups_replaced == len(recorded["sf"]) == len(groups) > 0
    assert result.rows_inserted == result.rows_deleted == result.files_added == 0
    # and through HudiWriter, whose CommitResult carries the same result
    again = HudiWriter(path, OPTIONS).delete_partitions(["nyc"])
    assert again.write_result == again.instant and again.write_result.file_groups_replaced == 1
