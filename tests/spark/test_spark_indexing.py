"""Building MDT partitions on Spark executors (``hudi_md.spark.indexing``).

On COW and MOR tables written with updates, deletes and (MOR) log files, the Spark builder's records
are compared with the local builder's (record for record, in order), the built partitions are
checked against code we did not write (record index against hudi-rs's file-slice reads, column
stats and bloom filters against pyarrow's reading of the base files, partition stats against
hudi-rs's snapshot rows) and with ``metadata validate``, and the driver's storage requests show that
no data file was read in the driver process. Executors read at the driver's timeline snapshot (a
commit that completes after the listing does not leak in), storage options reach them (a table on
an S3 server that only answers with them), and an executor's FileNotFoundError is the driver's (the
indexer lists the table again on it).
"""

from __future__ import annotations

import datetime
import decimal
import os
import shutil
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import hudi
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import hudi_md
from hudi_md.errors import ParquetFileError
from hudi_md.metadata import keys as K
from hudi_md.metadata import lifecycle
from hudi_md.metadata.column_ranges import _stub_min_max
from hudi_md.metadata.indexing import indexing_state
from hudi_md.metadata.lifecycle import PartitionBuilder
from hudi_md.metadata.records_builder import MdtRecord
from hudi_md.metadata.validate import validate_metadata_table
from hudi_md.metadata.writer import MetadataTableWriter
from hudi_md.spark.indexing import SparkPartitionBuilder, TableSnapshot, deal, spark_builder
from hudi_md.storage import Storage
from hudi_md.storage.base import StorageStats
from hudi_md.table.config import TableConfig
from hudi_md.table.filenames import BaseFileName, LogFileName
from hudi_md.write.indexing import run_indexing, schedule_indexing
from hudi_md.write.writer import HudiWriter

from fixtures import unpack

# the keys _write_table and the fixture's later upsert leave
LIVE_KEYS = 2500 - 120 - 40
INDEXES = [K.RECORD_INDEX, K.COLUMN_STATS, K.PARTITION_STATS, K.BLOOM_FILTERS]
CITIES = ["sf", "nyc", "chennai"]
# The data columns column_stats indexes (all of them: fewer than 32), and the meta columns it adds.
COLUMNS = ["id", "city", "ts", "fare", "qty", "day", "price"]
META_COLUMNS = ["_hoodie_commit_time", "_hoodie_partition_path", "_hoodie_record_key"]
OPTIONS = {
    "hoodie.table.name": "spark_ix",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "city",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.hive_style_partitioning": "true",
    # built by the index run, not by the writes
    "hoodie.metadata.index.column.stats.enable": "false",
    "hoodie.metadata.index.partition.stats.enable": "false",
    "hoodie.metadata.record.index.enable": "false",
    "hoodie.metadata.index.bloom.filter.enable": "false",
    # several file groups per partition: several slices per Spark task and several tasks
    "hoodie.parquet.max.file.size": str(24 * 1024),
}


def _rows(ids: range, ts: int) -> pa.Table:
    start = datetime.date(2024, 1, 1)
    return pa.table(
        {
            "id": pa.array([f"id-{i:05d}" for i in ids], pa.string()),
            "city": pa.array([CITIES[i % 3] for i in ids], pa.string()),
            "ts": pa.array([ts] * len(ids), pa.int64()),
            "fare": pa.array([float((i * 7 + ts) % 101) + 0.5 for i in ids], pa.float64()),
            "qty": pa.array([None if i % 7 == 0 else (i * ts) % 50 for i in ids], pa.int32()),
            "day": pa.array([start + datetime.timedelta(days=(i + ts) % 90) for i in ids]),
            "price": pa.array([decimal.Decimal((i * ts) % 10000) / 100 for i in ids], pa.decimal128(10, 2)),
        }
    )


def _write_table(path: Path, table_type: str) -> None:
    """Inserts, upserts (MOR: into log files), deletes (MOR: delete blocks), new keys later on."""
    w = HudiWriter(str(path), {**OPTIONS, "hoodie.datasource.write.table.type": table_type})
    w.write(_rows(range(0, 1800), 1), "insert")
    w.write(_rows(range(900, 2100), 2), "upsert")
    w.write(_rows(range(0, 120), 3), "delete")
    w.write(_rows(range(2000, 2400), 4), "upsert")
    w.write(_rows(range(1000, 1040), 5), "delete")


@pytest.fixture(scope="module", params=["COPY_ON_WRITE", "MERGE_ON_READ"])
def scheduled(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A table with the four partitions scheduled (not built), and a commit since that logged its
    records into them (the build leaves out the column stats they carry); tests work on copies."""
    table_type = request.param
    path = tmp_path_factory.mktemp(table_type.lower()) / "t"
    _write_table(path, table_type)
    schedule_indexing(HudiWriter(str(path), OPTIONS), INDEXES)
    w = HudiWriter(str(path), {**OPTIONS, "hoodie.datasource.write.table.type": table_type})
    w.write(_rows(range(2300, 2500), 6), "upsert")
    return path, table_type


def _copy(src: Path, dst: Path) -> str:
    shutil.copytree(src, dst)
    return str(dst)


class DriverReads:
    """Files this process (the driver) requested through hudi-md's storage layer: every Storage
    counts its requests in a StorageStats; executors are other processes, with their own."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.paths: list[str] = []
        real = StorageStats.record

        def record(stats: StorageStats, kind: str, path: str, nbytes: int = 0) -> None:
            if kind != "list":
                self.paths.append(path)
            real(stats, kind, path, nbytes)

        monkeypatch.setattr(StorageStats, "record", record)

    def data_files(self) -> list[str]:
        """The base and log files among them (MDT files under ``.hoodie`` are not data files)."""
        out = []
        for p in self.paths:
            name = os.path.basename(p)
            if "/.hoodie/" in f"/{p}" or name.startswith(".hoodie"):
                continue
            if BaseFileName.parse(name) is not None or LogFileName.parse(name) is not None:
                out.append(p)
        return out


def _all_records(source: Any, partition: str) -> list[list[MdtRecord]]:
    return [list(b) for b in source.batches(partition)]


# --- the records ---------------------------------------------------------------------------------------


def test_records_equal_the_local_builders_and_are_read_on_executors(
    hudi_spark: Any, scheduled: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _ = scheduled
    w = HudiWriter(str(path), OPTIONS)
    writer = w.metadata_writer(w.config())
    local = PartitionBuilder(w.storage, writer, None)
    on_spark = SparkPartitionBuilder(hudi_spark, w.storage, writer, None, tasks=3)
    slices = on_spark.view.latest_file_slices(on_spark.data_partitions)
    assert len(slices) > 6 and any(s.log_files for s in slices) == (scheduled[1] == "MERGE_ON_READ")

    with monkeypatch.context() as m:
        reads = DriverReads(m)

        def refuse(*args: Any, **kwargs: Any) -> Any:
            raise AssertionError("a data file slice was read in the driver process")

        m.setattr(lifecycle.SliceFactsReader, "read", refuse)
        got = {p: _all_records(on_spark, p) for p in INDEXES}
        assert reads.data_files() == []

    with monkeypatch.context() as m:  # the same watch sees the local builder read them
        reads = DriverReads(m)
        want = {p: _all_records(local, p) for p in INDEXES}
        assert len(reads.data_files()) >= len(slices)

    for p in INDEXES:
        assert sum(map(len, want[p])) > 0, p
        assert got[p] == want[p], p  # same batches, records, keys and payloads, in the same order
    keys = [r.key for b in got[K.RECORD_INDEX] for r in b]
    assert len(keys) == len(set(keys)) == LIVE_KEYS


def test_run_indexing_on_spark(hudi_spark: Any, scheduled: tuple[Path, str], tmp_path: Path) -> None:
    src, table_type = scheduled
    on_spark = _copy(src, tmp_path / "spark")
    local = _copy(src, tmp_path / "local")
    t = run_indexing(HudiWriter(on_spark, OPTIONS), builder=spark_builder(hudi_spark, tasks=4))
    assert t is not None and run_indexing(HudiWriter(local, OPTIONS)) == t
    w = HudiWriter(on_spark, OPTIONS)
    state = indexing_state(w.storage, w.config(), w.timeline())
    assert state.pending == [] and state.inflight == [] and set(INDEXES) <= set(state.available)

    # the partitions the local build wrote: same files, same decoded records
    a = hudi_md.open_table(on_spark).metadata_table
    b = hudi_md.open_table(local).metadata_table
    assert a is not None and b is not None
    for p in [*INDEXES, K.FILES]:
        names = sorted(os.listdir(Path(on_spark, ".hoodie", "metadata", p)))
        assert names == sorted(os.listdir(Path(local, ".hoodie", "metadata", p))), p
        records = a.read_records(p)
        assert records and records == b.read_records(p), p
    _check_against_oracles(on_spark, table_type)


def _check_against_oracles(path: str, table_type: str) -> None:
    table = hudi_md.open_table(path, {"hoodie.metadata.enable": "true"})
    mdt = table.metadata_table
    assert mdt is not None and set(INDEXES) <= mdt.available_partitions
    assert validate_metadata_table(table) == []

    # hudi-rs lists the table (not through our MDT) and reads each latest file slice
    rs = hudi.HudiTableBuilder.from_base_uri(path).with_options({"hoodie.metadata.enable": "false"}).build()
    reader = rs.create_file_group_reader_with_options()
    located: dict[str, tuple[str, str]] = {}
    snapshot: dict[str, list[pa.RecordBatch]] = defaultdict(list)
    base_files: list[tuple[str, str]] = []
    for s in rs.get_file_slices():
        batch = reader.read_file_slice(s)
        for key in batch.column("_hoodie_record_key").to_pylist():
            assert key not in located, key
            located[key] = (s.partition_path, s.file_id)
        snapshot[s.partition_path].append(batch)
        if s.base_file_name:
            base_files.append((s.partition_path, s.base_file_relative_path()))
    assert len(located) == LIVE_KEYS
    rs_keys = pa.Table.from_batches(rs.read()).column("_hoodie_record_key").to_pylist()
    assert sorted(rs_keys) == sorted(located)

    # record index: every key of the snapshot at its file group, and no other key
    found = mdt.record_index.locations()
    assert {k: (loc.partition_path, loc.file_id) for k, loc in found.items()} == located

    # column stats of each latest base file: its values as pyarrow reads them
    wanted = [*META_COLUMNS, *COLUMNS]
    file_bounds: dict[tuple[str, str], list[tuple[Any, Any]]] = defaultdict(list)
    for partition, rel in base_files:
        data = pq.read_table(os.path.join(path, rel))
        name = os.path.basename(rel)
        stats = {c.column_name: c for c in mdt.stats.column_stats(wanted, [partition]) if c.file_name == name}
        assert sorted(stats) == sorted(wanted), name
        footer = pq.read_metadata(os.path.join(path, rel))
        for col in wanted:
            values = data.column(col)
            mm = pc.min_max(values).as_py()
            got = stats[col]
            if values.null_count == len(values):
                # no value in the chunk: what Hudi records, parquet-mr's primitive default (a
                # file group of only null values is one of many small ones here: tiny max size)
                leaf = footer.schema.column(footer.schema.names.index(col))
                stub = _stub_min_max(leaf.physical_type, str(leaf.logical_type))
                mm = {"min": stub, "max": stub}
            assert (got.min_value, got.max_value) == (mm["min"], mm["max"]), (name, col)
            assert (got.null_count, got.value_count) == (values.null_count, len(values)), (name, col)
            file_bounds[(partition, col)].append((mm["min"], mm["max"]))

    # partition stats: bounds of the snapshot's rows; exactly them when each slice is one base
    # file (COW), wider on MOR (base files keep the rows their logs replace or delete)
    for partition, batches in snapshot.items():
        rows = pa.Table.from_batches(batches)
        stats = {c.column_name: c for c in mdt.stats.partition_stats(COLUMNS, [partition])}
        assert sorted(stats) == sorted(COLUMNS)
        for col in COLUMNS:
            mm = pc.min_max(rows.column(col)).as_py()
            got = stats[col]
            if table_type == "COPY_ON_WRITE":
                # the files' ranges merged (a file of only nulls brings its stub bound, as in Hudi)
                lows = [lo for lo, _ in file_bounds[(partition, col)] if lo is not None]
                highs = [hi for _, hi in file_bounds[(partition, col)] if hi is not None]
                expected = (min(lows, default=None), max(highs, default=None))
                assert (got.min_value, got.max_value) == expected, (partition, col)
                if len(lows) == len(file_bounds[(partition, col)]):
                    assert expected[1] == mm["max"], (partition, col)
            else:
                assert got.min_value <= mm["min"] and got.max_value >= mm["max"], (partition, col)

    # bloom filters: the filter in each base file's footer, as pyarrow reads it
    blooms = mdt.stats.bloom_filters([(p, os.path.basename(rel)) for p, rel in base_files])
    assert len(blooms) == len(base_files)
    for partition, rel in base_files:
        footer = pq.read_metadata(os.path.join(path, rel)).metadata
        got = blooms[(partition, os.path.basename(rel))]["bloom_filter"]
        assert bytes(got) == footer[b"org.apache.hudi.bloomfilter"], rel


# --- the snapshot executors read ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("archive", "changed"),
    [
        # its last deltacommit is a delete block in a log file named by the (committed) base instant
        ("quickstart_trips_table/mor/avro/v6_trips_8i3d.zip", K.RECORD_INDEX),
        # its last deltacommit is an update block in such a log file
        ("quickstart_trips_table/mor/avro/v6_trips_8i1u.zip", K.COLUMN_STATS),
    ],
)
def test_a_commit_completing_during_the_build_does_not_leak_in(
    hudi_spark: Any, tmp_path: Path, archive: str, changed: str
) -> None:
    path = unpack(archive, tmp_path)
    storage = Storage(str(path))
    writer = MetadataTableWriter(storage, TableConfig.load(storage), {})
    last = hudi_md.open_table(str(path)).timeline.write_timeline().last()
    assert last is not None
    done = path / ".hoodie" / last.file_name
    hidden = tmp_path / last.file_name
    done.rename(hidden)  # the last deltacommit is inflight when the table is listed ...
    try:
        local = PartitionBuilder(storage, writer, None)
        on_spark = SparkPartitionBuilder(hudi_spark, storage, writer, None)
        assert any(s.log_files for s in on_spark.view.latest_file_slices(on_spark.data_partitions))
    finally:
        hidden.rename(done)  # ... and completes before the executors read
    for p in INDEXES:
        assert _all_records(on_spark, p) == _all_records(local, p), p
    # the commit's blocks are in files the executors read: read as completed, they change the records
    after = PartitionBuilder(storage, writer, None)
    assert _all_records(after, changed) != _all_records(local, changed)


def test_snapshot_carries_the_drivers_timeline_schema_and_storage_options(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _write_table(path, "MERGE_ON_READ")
    w = HudiWriter(str(path), {**OPTIONS, "auto_mkdir": True})
    builder = PartitionBuilder(w.storage, w.metadata_writer(w.config()), None)
    snap = TableSnapshot.of(builder.table, builder.columns)
    assert snap.storage_options == {"auto_mkdir": True}
    HudiWriter(str(path), OPTIONS).write(_rows(range(5000, 5010), 9), "insert")
    opened = snap.open()  # now, after a commit the snapshot did not see
    assert opened.storage.options == {"auto_mkdir": True}
    assert len(opened.timeline) == len(builder.table.timeline) < len(hudi_md.open_table(str(path)).timeline)
    assert opened.timeline.instants == builder.table.timeline.instants
    assert opened.schema == builder.table.schema


# --- failures -----------------------------------------------------------------------------------------


def test_a_file_removed_during_the_build_is_a_file_not_found_error(hudi_spark: Any, tmp_path: Path) -> None:
    """The indexer lists the table again on FileNotFoundError (a clean or rollback removed a file
    it listed): an executor's must reach the driver as one."""
    path = tmp_path / "t"
    _write_table(path, "COPY_ON_WRITE")
    w = HudiWriter(str(path), OPTIONS)
    writer = w.metadata_writer(w.config())
    on_spark = SparkPartitionBuilder(hudi_spark, w.storage, writer, None)
    local = PartitionBuilder(w.storage, writer, None)
    victim = on_spark.view.latest_file_slices(on_spark.data_partitions)[0].base_file
    assert victim is not None
    (path / victim.path).unlink()
    for source in (on_spark, local):
        with pytest.raises(FileNotFoundError):
            _all_records(source, K.COLUMN_STATS)


def test_an_unreadable_file_fails_the_build_as_locally(hudi_spark: Any, tmp_path: Path) -> None:
    """hudi-md's errors take other constructor arguments than their message (they do not
    unpickle): the driver raises the executor's error with its type, message and attributes."""
    path = tmp_path / "t"
    _write_table(path, "COPY_ON_WRITE")
    w = HudiWriter(str(path), OPTIONS)
    writer = w.metadata_writer(w.config())
    on_spark = SparkPartitionBuilder(hudi_spark, w.storage, writer, None)
    local = PartitionBuilder(w.storage, writer, None)
    victim = on_spark.view.latest_file_slices(on_spark.data_partitions)[0].base_file
    assert victim is not None
    (path / victim.path).write_bytes(b"\0" * victim.size)
    errors = []
    for source in (on_spark, local):
        with pytest.raises(ParquetFileError) as caught:
            _all_records(source, K.RECORD_INDEX)
        errors.append(caught.value)
    assert type(errors[0]) is type(errors[1])
    assert str(errors[0]) == str(errors[1]) and victim.name in str(errors[0])
    assert (errors[0].path, errors[0].reason) == (errors[1].path, errors[1].reason)


def test_deal_spreads_slices_by_size() -> None:
    rows = [{"file_id": str(i), "total_size": size} for i, size in enumerate([900, 10, 10, 500, 400, 0, 80])]
    bins = deal(rows, 3)
    assert sorted(r["file_id"] for b in bins for r in b) == sorted(r["file_id"] for r in rows)
    assert sorted(sum(r["total_size"] for r in b) for b in bins) == [500, 500, 900]
    assert deal(rows[:2], 5) == [[rows[0]], [rows[1]]]


# --- storage options ------------------------------------------------------------------------------------


@pytest.fixture
def s3_server() -> Iterator[dict[str, Any]]:
    """A moto S3 server on loopback; yields the s3fs options that reach it."""
    import socket

    import s3fs
    from moto.server import ThreadedMotoServer

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        options = {
            "key": "test",
            "secret": "test",
            "client_kwargs": {"endpoint_url": f"http://127.0.0.1:{port}", "region_name": "us-east-1"},
        }
        s3fs.S3FileSystem(**options).call_s3("create_bucket", Bucket="hudi-md-ix")
        yield options
    finally:
        server.stop()


@pytest.mark.s3
def test_storage_options_reach_the_executors(hudi_spark: Any, s3_server: dict[str, Any]) -> None:
    """The table is on an S3 server that only the options name: executors that did not get them
    would ask AWS itself."""
    uri = "s3://hudi-md-ix/t"
    options = {**OPTIONS, **s3_server, "hoodie.datasource.write.table.type": "MERGE_ON_READ"}
    w = HudiWriter(uri, options)
    w.write(_rows(range(0, 300), 1), "insert")
    w.write(_rows(range(100, 400), 2), "upsert")
    w.write(_rows(range(0, 30), 3), "delete")
    schedule_indexing(HudiWriter(uri, options), [K.RECORD_INDEX, K.COLUMN_STATS])
    assert run_indexing(HudiWriter(uri, options), builder=spark_builder(hudi_spark)) is not None
    table = hudi_md.open_table(uri, {**s3_server, "hoodie.metadata.enable": "true"})
    assert validate_metadata_table(table) == []
    mdt = table.metadata_table
    assert mdt is not None and {K.RECORD_INDEX, K.COLUMN_STATS} <= mdt.available_partitions
    keys = table.read(columns=["_hoodie_record_key"]).column(0).to_pylist()
    assert sorted(mdt.record_index.locations()) == sorted(keys) and len(keys) == 370
