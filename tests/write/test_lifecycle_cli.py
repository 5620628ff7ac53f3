"""MDT lifecycle and table-service commands of the CLI, on tables hudi-md wrote."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import hudi
import pyarrow as pa
from test_writer_model import _options, _rows, _table, check_readers

import hudi_md
from table_model import Model


def cli(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "hudi_md.cli", *args], capture_output=True, text=True, timeout=300
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"hudi-md {' '.join(args)}: {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def test_create_delete_init(tmp_path: Path) -> None:
    rng = random.Random(5)
    path = tmp_path / "t"
    opts = _options("MERGE_ON_READ", ["city"], **{"hoodie.metadata.enable": "false"})
    model = Model(["city"])
    for i in range(3):
        rows = _rows(rng, list(range(i * 5, i * 5 + 5)), 10 * (i + 1))
        hudi_md.write(_table(rows), str(path), operation="upsert", options=opts)
        model.upsert(rows)
    assert not hudi_md.open_table(str(path)).state.uses_metadata_table
    out = cli(
        "metadata", "create", str(path), "--no-progress", "-o", "hoodie.metadata.record.index.enable=true"
    )
    assert "files" in out.stdout and "record_index" in out.stdout
    table = hudi_md.open_table(str(path))
    assert table.state.uses_metadata_table
    assert sorted(table.state.config.metadata_partitions) == [
        "column_stats",
        "files",
        "partition_stats",
        "record_index",
    ]
    assert "OK" in cli("metadata", "validate", str(path)).stdout
    check_readers(path, model, "MERGE_ON_READ")
    # the record index knows every live key's file group
    keys = [r["id"] for r in model.rows.values()]
    found = table.metadata_table.record_index.locations(keys)
    assert sorted(found) == sorted(keys)
    # writes keep it in step
    more = _rows(rng, [100, 101], 50)
    hudi_md.write(
        _table(more), str(path), operation="upsert", options={**opts, "hoodie.metadata.enable": "true"}
    )
    model.upsert(more)
    check_readers(path, model, "MERGE_ON_READ")
    stats = json.loads(cli("metadata", "stats", "--json", str(path)).stdout)
    assert stats["partition_count"] == len({r["city"] for r in model.rows.values()})
    assert any(k.startswith("lookup_") or k.startswith("scan_") for k in stats["metrics"])
    cli("metadata", "delete", str(path))
    table = hudi_md.open_table(str(path))
    assert not table.state.uses_metadata_table and not (path / ".hoodie/metadata").exists()
    check_readers(path, model, "MERGE_ON_READ")
    out = cli("metadata", "init", str(path))
    assert "files" in out.stdout
    assert hudi_md.open_table(str(path)).state.uses_metadata_table
    check_readers(path, model, "MERGE_ON_READ")


def test_service_commands(tmp_path: Path) -> None:
    rng = random.Random(9)
    path = tmp_path / "t"
    opts = _options("MERGE_ON_READ", ["city"])
    model = Model(["city"])
    first = _rows(rng, list(range(6)), 10)
    i1 = hudi_md.write(_table(first), str(path), operation="insert", options=opts)
    model.insert(first)
    upd = [dict(r, ts=r["ts"] + 1, fare=1.0) for r in first[:3]]
    hudi_md.write(_table(upd), str(path), operation="upsert", options=opts)
    model.upsert(upd)
    assert "compaction" in cli("compaction", str(path)).stdout
    check_readers(path, model, "MERGE_ON_READ")
    assert not [s for s in hudi_md.open_table(str(path)).file_slices().to_pylist() if s["log_files"]]
    extra = _rows(rng, [50], 30)
    i3 = hudi_md.write(_table(extra), str(path), operation="upsert", options=opts)
    assert "rollback" in cli("rollback", str(path), i3).stdout
    check_readers(path, model, "MERGE_ON_READ")
    cli("restore", str(path), i1)
    # the compaction went whole: no compaction.requested left behind to be re-run on a restored table
    assert not list(hudi_md.open_table(str(path)).timeline.pending())
    restored = Model(["city"])
    restored.insert(first)
    check_readers(path, restored, "MERGE_ON_READ")
    rs = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(str(path)).build().read())
    assert rs.num_rows == len(first)
    assert cli("clean", str(path)).returncode == 0


def test_create_is_staged_in_partition_batches(tmp_path: Path) -> None:
    """150 partitions build in three batches: base HFiles, then `.log.2`, `.log.3`, ... of the init
    instant; every reader still sees exactly the table."""
    path = tmp_path / "t"
    n = 150
    data = pa.table(
        {"id": [f"k{i}" for i in range(n)], "dt": [f"p{i:03d}" for i in range(n)], "v": list(range(n))}
    )
    opts = {
        "hoodie.table.name": "staged",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "dt",
        "hoodie.parquet.bloom.filter.enabled": "false",
        "hoodie.metadata.enable": "false",
    }
    hudi_md.write(data, str(path), operation="insert", options=opts)
    cli("metadata", "create", str(path), "--no-progress", "-o", "hoodie.metadata.record.index.enable=true")
    logs = sorted(f.name for f in (path / ".hoodie/metadata/files").iterdir() if ".log." in f.name)
    assert any(".log.3_" in name for name in logs), logs
    assert "OK" in cli("metadata", "validate", str(path)).stdout
    table = hudi_md.open_table(str(path))
    assert len(table.partitions()) == n
    assert len(table.metadata_table.record_index.locations([f"k{i}" for i in range(n)])) == n
    rs = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(str(path)).build().read())
    assert rs.num_rows == n


def test_validate_checks_the_record_index_and_partition_stats(tmp_path: Path) -> None:
    """`metadata validate` fails on a stale record-index entry and on partition stats that do not
    cover a partition's live files, naming what is wrong."""
    from hudi_md.metadata import keys as K
    from hudi_md.metadata.records_builder import ColumnRange, column_stats_record, record_index_records
    from hudi_md.metadata.writer import MetadataTableWriter
    from hudi_md.storage import Storage
    from hudi_md.table.config import TableConfig
    from hudi_md.table.timeline_writer import new_instant_time

    path = tmp_path / "t"
    opts = _options("COPY_ON_WRITE", ["city"])
    rows = _rows(random.Random(3), list(range(12)), 10)
    hudi_md.write(_table(rows), str(path), operation="insert", options=opts)
    assert cli("metadata", "validate", str(path)).returncode == 0
    storage = Storage(str(path))

    def mdt_write(records) -> None:
        config = TableConfig.load(storage)
        MetadataTableWriter(storage, config, {}).write_records(
            new_instant_time(), records, partitions=sorted(config.metadata_partitions)
        )

    live = hudi_md.open_table(str(path)).file_slices().to_pylist()[0]
    mdt_write(record_index_records(["ghost"], live["partition_path"], live["file_id"], "20200101000000000"))
    out = cli("metadata", "validate", str(path), check=False)
    assert out.returncode == 1
    assert "record_index_extra" in out.stdout and "'ghost'" in out.stdout

    path2 = tmp_path / "t2"
    hudi_md.write(_table(rows), str(path2), operation="insert", options=opts)
    storage = Storage(str(path2))
    p = rows[0]["city"]
    narrow = ColumnRange("ts", 10**9, 10**9, 0, 1, 0, 0)
    mdt_write(
        [column_stats_record(f"city={p}", "", narrow, pa.int64(), for_partition=True, tight_bound=True)]
    )
    out = cli("metadata", "validate", str(path2), check=False)
    assert out.returncode == 1
    assert "partition_stats_unsound" in out.stdout and "ts" in out.stdout
    assert K.PARTITION_STATS in TableConfig.load(storage).metadata_partitions


def test_create_on_a_mor_table_with_logs_indexes_the_log_files(tmp_path: Path) -> None:
    """`metadata create` on a MOR table whose updates are still in log files: the logs' values are
    in column_stats and partition_stats, so a filter that only log rows match still finds them
    (partition-stats pruning would drop the partition otherwise)."""
    from hudi_md.metadata import keys as K

    path = tmp_path / "t"
    opts = {**_options("MERGE_ON_READ", ["city"]), "hoodie.metadata.enable": "false"}
    rows = _rows(random.Random(5), list(range(12)), 10)  # ts 10..13
    hudi_md.write(_table(rows), str(path), operation="insert", options=opts)
    updated = [dict(r, ts=1000 + i) for i, r in enumerate(rows[:4])]
    hudi_md.write(_table(updated), str(path), operation="upsert", options=opts)
    table = hudi_md.open_table(str(path), {"hoodie.metadata.enable": "false"})
    assert any(s["log_files"] for s in table.file_slices().to_pylist()), "the upsert must have made logs"
    cli("metadata", "create", str(path), "--no-progress")
    table = hudi_md.open_table(str(path))
    assert K.PARTITION_STATS in table.metadata_table.available_partitions
    got = table.read(columns=["id", "ts"], filters=[("ts", ">=", 1000)])
    rs = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(str(path)).build().read())
    pairs = zip(rs.column("id").to_pylist(), rs.column("ts").to_pylist(), strict=True)
    want = sorted((i, t) for i, t in pairs if t >= 1000)
    assert len(want) == 4
    assert sorted(zip(got.column("id").to_pylist(), got.column("ts").to_pylist(), strict=True)) == want
    log_names = {lf for s in table.file_slices().to_pylist() for lf in s["log_files"]}
    indexed = {st.file_name for st in table.metadata_table.stats.column_stats(columns=["ts"])}
    assert {n.rsplit("/", 1)[-1] for n in log_names} <= indexed
