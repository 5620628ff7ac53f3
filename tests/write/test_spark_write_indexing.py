"""Writes from PySpark (``hudi_md.write(df, ...)``: files written by executors, the driver commits)
while an indexer builds MDT partitions: they write the inflight partitions too, and the built
partitions then hold what the table holds (tests/indexing_oracle.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import hudi_md
from hudi_md.metadata import keys as K
from hudi_md.write import indexing
from hudi_md.write.writer import HudiWriter
from indexing_oracle import check_index
from table_model import Model, assert_readers, rows

PARTS = [K.RECORD_INDEX, K.COLUMN_STATS, K.PARTITION_STATS]
OPTIONS = {
    "hoodie.table.name": "spark_ix",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "city",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.metadata.index.column.stats.enable": "false",
    "hoodie.metadata.index.partition.stats.enable": "false",
    "hoodie.write.concurrency.mode": "optimistic_concurrency_control",
    "hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.InProcessLockProvider",
}


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_spark_writes_during_indexing(
    spark: Any, tmp_path: Path, table_type: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, model = tmp_path / "t", Model(["city"])
    opts = {**OPTIONS, "hoodie.datasource.write.table.type": table_type}

    def spark_write(operation: str, ids: range, ts: int) -> str:
        data = rows(ids, ts, seed=ts)
        instant = hudi_md.write(
            spark.createDataFrame(data.to_pandas()), str(path), operation=operation, options=opts
        )
        model.apply(operation, data)
        return instant

    HudiWriter(str(path), opts).write(rows(range(0, 60), 1, seed=1), "insert")
    model.apply("insert", rows(range(0, 60), 1, seed=1))
    t = indexing.schedule_indexing(HudiWriter(str(path), opts), PARTS)
    between = spark_write("upsert", range(40, 90), 2)  # between schedule and run
    logs = {
        p: [f.name for f in (path / ".hoodie/metadata" / p).iterdir() if f"_{between}.log." in f.name]
        for p in PARTS
    }
    assert all(logs.values()), f"the Spark write logged into every inflight partition: {logs}"
    real = indexing.PartitionBuilder

    def build_then_write(*args: Any, **kwargs: Any) -> Any:
        builder = real(*args, **kwargs)  # listed: the writes below only log
        if not getattr(build_then_write, "done", False):
            build_then_write.done = True  # type: ignore[attr-defined]
            spark_write("delete", range(0, 15), 3)
            spark_write("upsert", range(80, 120), 4)
        return builder

    monkeypatch.setattr(indexing, "PartitionBuilder", build_then_write)
    assert indexing.run_indexing(HudiWriter(str(path), opts)) == t
    monkeypatch.undo()
    spark_write("upsert", range(0, 30), 5)  # after: the partitions are available
    check_index(path, PARTS, tmp_path)
    assert_readers(str(path), model.expected())
