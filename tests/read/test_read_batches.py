"""``Table.read_batches``: the rows ``Table.read`` returns (same arguments), as a
``pyarrow.RecordBatchReader`` that reads one file slice at a time as it is consumed: the same rows
on Apache Hudi's COW and MOR fixture tables and on a MOR table hudi-md wrote with log files (every
query type); no data file read before the first batch is asked for, one slice's files for it; and
memory holding about a slice, not the table."""

from __future__ import annotations

import json
import random
import string
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import hudi_md
from table_model import rows

FIXTURES = [
    "sample_table/cow/v9_txns_simple_meta.zip",
    "sample_table/cow/v8_complexkeygen_hivestyle.zip",
    "sample_table/cow/v6_simplekeygen_nonhivestyle.zip",
    "sample_table/mor/avro/v9_txns_simple_meta.zip",
    "sample_table/mor/parquet/v6_simplekeygen_nonhivestyle.zip",
    "quickstart_trips_table/mor/avro/v8_trips_8i3u1d.zip",
]

OPTIONS = {
    "hoodie.table.name": "batches",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "city",
    "hoodie.datasource.write.precombine.field": "ts",
}


def _row_list(table: pa.Table) -> list[str]:
    """The rows as sorted JSON texts: equal lists are equal multisets of rows."""
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in table.to_pylist())


def _assert_same_rows(table: hudi_md.Table, **query: Any) -> pa.Table:
    """``read_batches(**query)`` against ``read(**query)``; returns the rows read."""
    whole = table.read(**query)
    reader = table.read_batches(**query)
    assert isinstance(reader, pa.RecordBatchReader)
    assert reader.schema == whole.schema
    streamed = pa.Table.from_batches(list(reader), schema=reader.schema)
    assert _row_list(streamed) == _row_list(whole), query
    return whole


def _queries(table: hudi_md.Table) -> list[dict[str, Any]]:
    writes = table.timeline.write_timeline().instants
    first = writes[0].requested_time
    columns = [table.schema.names[2], table.schema.names[-1]]  # the record key, a data column
    partition = table.partitions()[0]
    field = table.partition_fields[0] if table.partition_fields else None
    queries: list[dict[str, Any]] = [
        {},
        {"query_type": "read_optimized"},
        {"query_type": "incremental", "start": first},
        {"as_of": first},
        {"columns": columns},
    ]
    if field is not None:
        value = partition.split("/")[0].split("=")[-1]
        queries.append({"filters": [(field, "=", value)], "columns": columns})
    return queries


@pytest.mark.parametrize("archive", FIXTURES)
def test_the_same_rows_as_read_on_hudi_tables(table_path: Callable[[str], Path], archive: str) -> None:
    table = hudi_md.open_table(str(table_path(archive)))
    rows_read = [_assert_same_rows(table, **q).num_rows for q in _queries(table)]
    assert rows_read[0] > 0, "the snapshot has rows"


@pytest.fixture(scope="module")
def written_mor(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A MOR table hudi-md wrote: inserts, then upserts and deletes that went to log files."""
    path = str(tmp_path_factory.mktemp("mor") / "t")
    opts = {**OPTIONS, "hoodie.datasource.write.table.type": "MERGE_ON_READ"}
    hudi_md.write(rows(range(90), 1, seed=1), path, operation="insert", options=opts)
    hudi_md.write(rows(range(0, 60, 2), 2, seed=2), path, operation="upsert", options=opts)
    hudi_md.write(rows(range(1, 30, 3), 3, seed=3), path, operation="delete", options=opts)
    hudi_md.write(rows(range(80, 120), 4, seed=4), path, operation="upsert", options=opts)
    return path


def test_the_same_rows_as_read_on_a_written_mor_table(written_mor: str) -> None:
    table = hudi_md.open_table(written_mor)
    slices = table.plan().slices
    assert any(s.log_files for s in slices), "the upserts and deletes went to log files"
    writes = table.timeline.write_timeline().instants
    snapshot = _assert_same_rows(table)
    assert snapshot.num_rows == 120 - 10  # ids 0..119, less the 10 deleted
    _assert_same_rows(table, query_type="read_optimized")
    _assert_same_rows(table, query_type="incremental", start=writes[1].requested_time)
    _assert_same_rows(
        table, query_type="incremental", start=writes[0].requested_time, end=writes[2].requested_time
    )
    _assert_same_rows(table, as_of=writes[1].requested_time)
    sf = _assert_same_rows(table, filters=[("city", "=", "sf"), ("fare", ">", 30.0)], columns=["id", "fare"])
    assert sf.column_names == ["id", "fare"] and 0 < sf.num_rows < snapshot.num_rows


def test_an_empty_answer_is_an_empty_stream_of_the_schema(written_mor: str) -> None:
    table = hudi_md.open_table(written_mor)
    reader = table.read_batches(filters=[("city", "=", "nowhere")], columns=["id", "ts"])
    assert reader.schema.names == ["id", "ts"]
    assert reader.read_all().num_rows == 0
    last = table.timeline.write_timeline().last()
    assert last is not None
    after_last = table.read_batches(query_type="incremental", start=last.completion_time)
    assert after_last.read_all().num_rows == 0


def test_bad_arguments_raise_when_the_reader_is_made(written_mor: str) -> None:
    table = hudi_md.open_table(written_mor)
    with pytest.raises(hudi_md.InvalidOptionError, match="nope"):
        table.read_batches(columns=["id", "nope"])
    with pytest.raises(hudi_md.InvalidOptionError, match="query_type"):
        table.read_batches(query_type="streaming")


def _data_files_read(table: hudi_md.Table) -> set[str]:
    return {p for p in table.state.storage.stats.by_path() if not p.startswith(".hoodie")}


def test_slices_are_read_as_the_batches_are_taken(written_mor: str) -> None:
    table = hudi_md.open_table(written_mor)
    slices = {
        s.partition_path + "/" + s.file_id: {f.path for f in ([s.base_file] if s.base_file else [])}
        | {lf.path for lf in s.log_files}
        for s in table.plan().slices
    }
    assert len(slices) >= 3
    reader = table.read_batches()
    assert _data_files_read(table) == set(), "planned, nothing read yet"
    reader.read_next_batch()
    read = _data_files_read(table)
    assert read and any(read == files for files in slices.values()), "one slice read, whole"
    rest = sum(1 for _ in reader)
    assert rest >= len(slices) - 1
    assert _data_files_read(table) == set().union(*slices.values())


def _peak_allocation(consume: Callable[[], Any]) -> tuple[int, Any]:
    """Arrow's allocations at their highest while ``consume`` runs, above what they were before
    (sampled on a thread: a peak between two samples may be missed, never invented)."""
    before = pa.total_allocated_bytes()
    highest = [before]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            highest[0] = max(highest[0], pa.total_allocated_bytes())
            time.sleep(0.0002)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        out = consume()
        # the answer is alive now: a last sample, since a busy machine may give the thread none
        # between the answer's allocation and the return
        highest[0] = max(highest[0], pa.total_allocated_bytes())
    finally:
        done.set()
        sampler.join()
    return highest[0] - before, out


def test_memory_holds_about_one_slice(tmp_path: Path) -> None:
    # 16 partitions of one file group each, ~1.5 MB of Arrow data apiece
    n, partitions = 64_000, 16
    rng = random.Random(7)
    data = pa.table(
        {
            "id": [f"k{i:07d}" for i in range(n)],
            "ts": [1] * n,
            "city": [f"c{i % partitions:02d}" for i in range(n)],
            "payload": ["".join(rng.choices(string.ascii_letters, k=200)) for _ in range(n)],
        }
    )
    path = str(tmp_path / "t")
    hudi_md.write(data, path, operation="bulk_insert", options=OPTIONS)
    del data
    table = hudi_md.open_table(path)
    assert len(table.plan().slices) == partitions

    def stream() -> tuple[int, int]:
        batches = rows_seen = 0
        for batch in table.read_batches():
            batches += 1
            rows_seen += batch.num_rows
        return batches, rows_seen

    streamed_peak, (batches, rows_seen) = _peak_allocation(stream)
    whole_peak, whole = _peak_allocation(table.read)
    assert (batches, rows_seen) >= (partitions, n)
    assert whole.num_rows == n and whole_peak >= whole.nbytes
    # the stream held about a slice (1/16 of the table) at a time, never the table
    assert streamed_peak < whole.nbytes / 4, (streamed_peak, whole.nbytes)
