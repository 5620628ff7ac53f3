"""Structured Streaming into a hudi-md table: ``df.writeStream.format("hudi-md")``.

Each micro-batch is one commit through the DataFrame writer's pipeline, recording its batch id under
Apache Hudi's sink checkpoint key (``_hudi_streaming_sink_checkpoint`` in the commit's
``extraMetadata``). The model check: a query over JSON files (one file per batch) writes with the
``insert`` operation, which keeps a row written twice as two rows, so a batch committed twice would
show. A crash between the table's commit and Spark's record of the batch's end (the query's
``commits/<id>`` file removed, as a kill at that moment leaves it) makes Spark replay the batch on
restart: the sink must skip it. The rows are compared with the model, hudi-rs's read and the MDT
validator. A rate source stopped and restarted mid-stream commits every value once.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

import hudi_md
from hudi_md.metadata.validate import validate_metadata_table
from table_model import hudi_rs_table

CHECKPOINT_KEY = "_hudi_streaming_sink_checkpoint"
SCHEMA = "id string, ts long, v long, p string"


def _options(table_type: str, operation: str = "insert") -> dict[str, str]:
    return {
        "hoodie.table.name": "stream_t",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.operation": operation,
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.datasource.write.hive_style_partitioning": "true",
    }


def _input_file(folder: Path, i: int, rows: int = 4) -> list[tuple]:
    written = [(f"k{i}-{j}", i, i * 10 + j, "a" if j % 2 else "b") for j in range(rows)]
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".part-{i:03d}.tmp"
    tmp.write_text(
        "".join(json.dumps(dict(zip(("id", "ts", "v", "p"), r, strict=True))) + "\n" for r in written)
    )
    tmp.rename(folder / f"part-{i:03d}.json")  # whole files only: the source lists the folder
    time.sleep(0.01)  # one file per batch, in this order (the source orders by modification time)
    return written


def _run(spark: Any, source: Path, checkpoint: Path, table: Path, options: dict[str, str]) -> None:
    stream = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(source))
    query = (
        stream.writeStream.format("hudi-md")
        .options(**options)
        .partitionBy("p")
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start(str(table))
    )
    query.awaitTermination()


def _rows(table: Path) -> list[tuple]:
    rows = hudi_md.open_table(str(table)).read(columns=["id", "ts", "v", "p"])
    return sorted(zip(*(rows.column(c).to_pylist() for c in ("id", "ts", "v", "p")), strict=True))


def _batch_ids(table: Path) -> list[int]:
    t = hudi_md.open_table(str(table))
    recorded = [
        (t.timeline.metadata(i).get("extraMetadata") or {}).get(CHECKPOINT_KEY)
        for i in t.timeline.write_timeline()
    ]
    return [int(next(iter(json.loads(r)))) for r in recorded if r]


def _lose_the_last_batch_end(checkpoint: Path) -> int:
    """Remove Spark's record that the last batch ended (``commits/<id>``), as a crash right after
    the sink's commit leaves the query's checkpoint; returns that batch's id."""
    commits = checkpoint / "commits"
    last = max(int(f.name) for f in commits.iterdir() if f.name.isdigit())
    (commits / str(last)).unlink()
    for crc in commits.glob(f".{last}.crc"):
        crc.unlink()
    return last


@pytest.mark.spark_smoke
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_each_batch_commits_once_across_a_crash(hudi_spark, tmp_path: Path, table_type: str) -> None:
    source, checkpoint, table = tmp_path / "in", tmp_path / "checkpoint", tmp_path / "table"
    options = _options(table_type)
    model = [r for i in range(3) for r in _input_file(source, i)]
    _run(hudi_spark, source, checkpoint, table, options)
    assert _batch_ids(table) == [0, 1, 2]
    assert _rows(table) == sorted(model)
    config = (table / ".hoodie" / "hoodie.properties").read_text()
    assert "hoodie.table.partition.fields=p" in config

    replayed = _lose_the_last_batch_end(checkpoint)
    model += _input_file(source, 3)
    _run(hudi_spark, source, checkpoint, table, options)
    # the replayed batch was skipped (insert would have kept its rows twice), the new one written
    assert replayed == 2
    assert _batch_ids(table) == [0, 1, 2, 3]
    assert _rows(table) == sorted(model)
    rs = hudi_rs_table(str(table))
    assert sorted(zip(*(rs.column(c).to_pylist() for c in ("id", "ts", "v", "p")), strict=True)) == sorted(
        model
    )
    assert validate_metadata_table(hudi_md.open_table(str(table))) == []


def test_a_rate_source_stopped_and_restarted_commits_every_value_once(hudi_spark, tmp_path: Path) -> None:
    checkpoint, table = tmp_path / "checkpoint", tmp_path / "table"
    options = {**_options("MERGE_ON_READ"), "hoodie.datasource.write.precombine.field": "timestamp"}
    options["hoodie.datasource.write.recordkey.field"] = "key"

    def run_for(seconds: float) -> None:
        rate = hudi_spark.readStream.format("rate").option("rowsPerSecond", 20).load()
        query = (
            rate.selectExpr("cast(value as string) AS key", "value", "timestamp")
            .writeStream.format("hudi-md")
            .options(**options)
            .option("checkpointLocation", str(checkpoint))
            .trigger(processingTime="1 second")
            .start(str(table))
        )
        try:
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline or query.lastProgress is None:
                time.sleep(0.5)
        finally:
            query.stop()

    run_for(4)
    first = _batch_ids(table)
    run_for(4)
    ids = _batch_ids(table)
    assert len(ids) > len(first) > 0 and ids == sorted(set(ids))
    values = hudi_md.open_table(str(table)).read(columns=["value"]).column(0).to_pylist()
    # every value the source produced up to the last one committed, each once
    assert len(values) == len(set(values)) and sorted(values) == list(range(max(values) + 1))


def test_the_sink_needs_a_table_path(hudi_spark, tmp_path: Path) -> None:
    stream = hudi_spark.readStream.format("rate").load()
    with pytest.raises(Exception, match="writeStream needs the table path"):
        stream.writeStream.format("hudi-md").option("checkpointLocation", str(tmp_path / "c")).start()


# --- the source ----------------------------------------------------------------------------------------


def _commit(path: Path, ids: list[int], ts: int, operation: str = "upsert") -> str:
    import pyarrow as pa

    data = pa.table(
        {
            "id": [f"k{i}" for i in ids],
            "ts": pa.array([ts] * len(ids), pa.int64()),
            "v": pa.array([i * 100 + ts for i in ids], pa.int64()),
            "p": ["a" if i % 2 else "b" for i in ids],
        }
    )
    options = {**_options("MERGE_ON_READ", operation), "hoodie.datasource.write.partitionpath.field": "p"}
    return hudi_md.write(data, str(path), operation=operation, options=options)


def _delivered(spark: Any, table: Path, out: Path, checkpoint: Path, **options: str) -> list[tuple]:
    """Run the table as a stream into Parquet files until it has caught up; all rows delivered so far."""
    query = (
        spark.readStream.format("hudi-md")
        .options(**options)
        .load(str(table))
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    if not out.exists() or not any(out.glob("*.parquet")):
        return []
    return sorted((r.id, r.ts, r.v, r._hoodie_commit_time) for r in spark.read.parquet(str(out)).collect())


def _incremental(table: Path, start: str | None, end: str | None = None) -> list[tuple]:
    rows = hudi_md.open_table(str(table)).read(query_type="incremental", start=start, end=end)
    columns = ("id", "ts", "v", "_hoodie_commit_time")
    return sorted(zip(*(rows.column(c).to_pylist() for c in columns), strict=True))


def _bound(table: Path) -> str:
    """The latest commit's incremental range bound (its completion time: a version-9 table)."""
    t = hudi_md.open_table(str(table))
    return t.timeline.completion_time_of(t.timeline.write_timeline().last().requested_time)


@pytest.mark.spark_smoke
def test_the_source_delivers_every_commit_once_across_restarts(hudi_spark, tmp_path: Path) -> None:
    """Batches are incremental reads between commits (offsets: their completion times): a query
    restarted from its checkpoint delivers the commits made since, each once; the rows are what
    hudi-md's incremental read returns for the same ranges (the latest version of each record
    written in range, MOR slices merged)."""
    table, out, checkpoint = tmp_path / "table", tmp_path / "out", tmp_path / "checkpoint"
    _commit(table, [0, 1, 2, 3], 1, "insert")
    _commit(table, [1, 5], 2)
    first = _bound(table)
    got = _delivered(hudi_spark, table, out, checkpoint)
    assert got == _incremental(table, None, first)
    assert ("k1", 2, 102) in {r[:3] for r in got} and len(got) == 5
    _commit(table, [2, 6], 3)
    _commit(table, [3], 4, "delete")
    second = _bound(table)
    got = _delivered(hudi_spark, table, out, checkpoint)
    assert got == sorted(_incremental(table, None, first) + _incremental(table, first, second))
    assert _delivered(hudi_spark, table, out, checkpoint) == got  # nothing new: nothing delivered


def test_the_source_starts_where_asked(hudi_spark, tmp_path: Path) -> None:
    """``hoodie.datasource.streaming.startOffset``: ``latest`` skips the commits before the query,
    an instant time starts after it."""
    table = tmp_path / "table"
    _commit(table, [0, 1], 1, "insert")
    _commit(table, [2], 2)
    middle = _bound(table)
    _commit(table, [3], 3)
    after = _delivered(
        hudi_spark,
        table,
        tmp_path / "o1",
        tmp_path / "c1",
        **{"hoodie.datasource.streaming.startOffset": middle},
    )
    assert after == _incremental(table, middle) and [r[0] for r in after] == ["k3"]
    assert (
        _delivered(
            hudi_spark,
            table,
            tmp_path / "o2",
            tmp_path / "c2",
            **{"hoodie.datasource.streaming.startOffset": "latest"},
        )
        == []
    )
