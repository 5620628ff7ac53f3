"""Small-file handling of the Spark writer (``hudi_md.write(df, ...)``): the same plan as the local
writer (:mod:`hudi_md.write.small_files`), its new records assigned on the executors so that every
file group takes exactly its planned records, whichever Spark task holds them.

After each sequence every reader (hudi-md, hudi-rs) returns the model's rows, ``metadata validate``
is clean and the record index places every key at the file group whose latest slice holds it.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

import hudi_md
from hudi_md.metadata.validate import validate_metadata_table
from hudi_md.table.fs_view import FileSlice
from table_model import Model, assert_readers, assert_record_index_matches, hudi_rs_table

TABLE_TYPES = ["COPY_ON_WRITE", "MERGE_ON_READ"]
PARTITIONS = ["p0", "p1", "p2"]
SCHEMA = "id string, p string, ts long, fare double"
MAX_FILE_SIZE = 20_000
ESTIMATE = 100
# files of a few KB sized by a fixed record estimate: a new group takes 200 records
SMALL = {
    "hoodie.parquet.bloom.filter.enabled": "false",
    "hoodie.parquet.max.file.size": str(MAX_FILE_SIZE),
    "hoodie.parquet.small.file.limit": str(MAX_FILE_SIZE),
    "hoodie.copyonwrite.record.size.estimate": str(ESTIMATE),
    "hoodie.record.size.estimation.threshold": "1000",
}


def _opts(table_type: str, record_index: bool = True, **extra: str) -> dict[str, str]:
    return {
        "hoodie.table.name": "small_files_spark",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "p",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.metadata.record.index.enable": str(record_index).lower(),
        "hoodie.clean.automatic": "false",
        "hoodie.compact.inline": "false",
        **extra,
    }


def _rows(ids: list[int], ts: int, partition: str | None = None) -> list[tuple[str, str, int, float]]:
    return [(f"id-{i:05d}", partition or PARTITIONS[i % 3], ts, float(i * 10 + ts)) for i in ids]


def _write(spark: Any, rows: list[tuple], path: Path, operation: str, options: dict[str, str]) -> str:
    # several Spark partitions, so that a partition's new records come from several tasks
    df = spark.createDataFrame(rows, SCHEMA).repartition(3)
    return hudi_md.write(df, str(path), operation=operation, options=options)


def _records(rows: list[tuple]) -> list[dict[str, Any]]:
    return [{"id": i, "p": p, "ts": ts, "fare": fare} for i, p, ts, fare in rows]


def _slices(path: Path, partition: str) -> list[FileSlice]:
    return hudi_md.open_table(str(path)).state.file_system_view().latest_file_slices([partition])


def _count(path: Path, s: FileSlice) -> int:
    assert s.base_file is not None
    return pq.read_metadata(path / s.base_file.path).num_rows


def _check(path: Path, model: Model, record_index: bool = True) -> None:
    table, _ = assert_readers(str(path), model.expected())
    assert validate_metadata_table(table) == []
    if not record_index:
        return
    assert_record_index_matches(table, hudi_rs_table(str(path)))


@pytest.mark.parametrize(
    ("table_type", "record_index"),
    [("COPY_ON_WRITE", True), ("MERGE_ON_READ", True), ("MERGE_ON_READ", False)],
)
def test_spark_micro_batches_keep_one_group_per_partition(
    spark: Any, tmp_path: Path, table_type: str, record_index: bool
) -> None:
    """200 rows a batch, 80 % new keys, three partitions (Hudi's defaults): one file group per
    partition after every batch, no log file on MERGE_ON_READ; tagged by the record index or by
    the slices' keys."""
    path = tmp_path / "t"
    options = _opts(table_type, record_index)
    model = Model(["p"])
    rng = random.Random(40)
    next_id = 0
    for b in range(4):
        updates = rng.sample(range(next_id), 40) if next_id else []
        fresh = list(range(next_id, next_id + 200 - len(updates)))
        next_id += len(fresh)
        rows = _rows(fresh + updates, ts=b)
        _write(spark, rows, path, "upsert", options)
        model.upsert(_records(rows))
        for p in PARTITIONS:
            (group,) = _slices(path, p)
            assert group.log_files == (), f"batch {b}: {p} has log files"
    _check(path, model, record_index)


@pytest.mark.parametrize("table_type", TABLE_TYPES)
def test_spark_groups_take_exactly_their_planned_records(spark: Any, tmp_path: Path, table_type: str) -> None:
    """New groups of max file size / estimate records and small files filled to their room, each
    with exactly that many records although the records come from several Spark tasks; the
    rows and indexes as the model says."""
    path = tmp_path / "t"
    per_group = MAX_FILE_SIZE // ESTIMATE
    options = _opts(table_type, **SMALL, **{"hoodie.merge.small.file.group.candidates.limit": "3"})
    model = Model(["p"])
    first = _rows(list(range(450)), 1, "p0")
    _write(spark, first, path, "insert", options)
    model.insert(_records(first))
    before = {s.file_id: s for s in _slices(path, "p0")}
    assert sorted(_count(path, s) for s in before.values()) == [50, per_group, per_group]

    room = {fid: (MAX_FILE_SIZE - s.base_file.size) // ESTIMATE for fid, s in before.items() if s.base_file}
    updates = _rows(list(range(0, 450, 9)), 2, "p0")
    fresh = _rows(list(range(1000, 1000 + sum(room.values()) + per_group + 3)), 2, "p0")
    _write(spark, updates + fresh, path, "upsert", options)
    model.upsert(_records(updates + fresh))
    after = {s.file_id: s for s in _slices(path, "p0")}
    for fid, s in before.items():
        assert _count(path, after[fid]) == _count(path, s) + room[fid], "filled to its room"
        assert after[fid].log_files == ()
    assert sorted(_count(path, s) for fid, s in after.items() if fid not in before) == [3, per_group]
    _check(path, model)


def test_spark_insert_keeps_duplicates_in_the_small_file(spark: Any, tmp_path: Path) -> None:
    """An insert of a key the small file holds keeps both rows (Hudi's concat handle)."""
    path = tmp_path / "t"
    options = _opts("MERGE_ON_READ")
    _write(spark, _rows(list(range(6)), 1, "p0"), path, "insert", options)
    _write(spark, _rows([2, 7], 2, "p0"), path, "insert", options)
    (group,) = _slices(path, "p0")
    assert group.log_files == ()
    ids = hudi_md.open_table(str(path)).read(columns=["id"]).column("id").to_pylist()
    assert sorted(ids) == sorted([f"id-{i:05d}" for i in [*range(6), 2, 7]])
    assert sorted(hudi_rs_table(str(path)).column("id").to_pylist()) == sorted(ids)
    assert validate_metadata_table(hudi_md.open_table(str(path))) == []
