"""hudi-md's readers and writers through the metastore (issue 15's model test): random sequences of
writes through ``hudi_md.write`` with ``hoodie.metaserver.enabled`` on a real ``hudi-md metastore
serve`` process (SQLite and PostgreSQL); after every step the server's partitions, completed
timeline and latest file slices equal what hudi-md reads from the table itself (its MDT) and what a
plain storage listing implies, and reading through the server returns the model's rows. Also: a
table found by name, a table registered with history (``register``), the server's pruning in one
request, racing writers, and the snapshot lagging."""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from server_helpers import ServerProcess, token_for

import hudi_md
from hudi_md.errors import MetastoreError, WriteConflictError
from hudi_md.metastore.client import MetastoreClient
from hudi_md.metastore.plan_client import PlanClient
from hudi_md.write import services
from hudi_md.write.config import WriteConfig
from hudi_md.write.metastore_admin import register
from hudi_md.write.writer import HudiWriter

CITIES = ["sf", "nyc", "la", "sao_paulo"]


def _rows(ids: range | list[int], ts: int) -> pa.Table:
    ids = list(ids)
    return pa.table(
        {
            "id": [f"k{i:04d}" for i in ids],
            "region": ["us" if i % 4 < 2 else "br" for i in ids],
            "city": [CITIES[i % 4] for i in ids],
            "ts": [ts] * len(ids),
            "v": [i * 7 + ts for i in ids],
        }
    )


def _options(table_type: str, **extra: str) -> dict[str, str]:
    return {
        "hoodie.table.name": "trips",
        "hoodie.database.name": "lake",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "region,city",
        "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.ComplexKeyGenerator",
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.parquet.max.file.size": "3000",
        "hoodie.cleaner.commits.retained": "2",
        "hoodie.clean.automatic": "false",
        **extra,
    }


@pytest.fixture
def metastore(db_url: str, servers: list[ServerProcess], tmp_path: Path) -> dict[str, str]:
    token = token_for(db_url)
    server = ServerProcess(db_url, tmp_path, "--sync-interval", "0.2")
    servers.append(server)
    server.wait_ready()
    return {
        "hoodie.metaserver.enabled": "true",
        "hoodie.metaserver.uris": server.url,
        "hoodie.metaserver.token": token,
    }


def _slices(table: Any) -> list[tuple]:
    view = table.state.file_system_view()
    return sorted(
        (
            s.partition_path,
            s.file_id,
            s.base_instant,
            s.base_file.name if s.base_file else None,
            tuple(lf.name for lf in s.log_files),
        )
        for s in view.latest_file_slices(table.partitions())
    )


def _rows_of(table: Any) -> list[tuple]:
    t = table.read(columns=["id", "city", "v"])
    return sorted(zip(*(t.column(c).to_pylist() for c in ("id", "city", "v")), strict=True))


def _wait_synced(ms: dict[str, str]) -> None:
    client = MetastoreClient.from_options(ms)
    assert client is not None
    deadline = time.monotonic() + 30
    while True:
        status = client.snapshot_status("lake", "trips")
        if status.status == "synced" and not status.pending:
            return
        assert time.monotonic() < deadline, status
        time.sleep(0.05)


def _check(path: Path, ms: dict[str, str], model: dict[str, tuple[str, int]]) -> None:
    _wait_synced(ms)
    through = hudi_md.open_table(str(path), ms)
    assert through.state.source is not None, "planned from the metastore"
    own = hudi_md.open_table(str(path))  # the table's own MDT
    listed = hudi_md.open_table(str(path), {"hoodie.metadata.enable": "false"})  # a storage listing
    assert own.state.uses_metadata_table
    assert through.partitions() == own.partitions() == listed.partitions()
    done = [(i.requested_time, i.action, i.completion_time) for i in own.timeline.completed()]
    assert [(i.requested_time, i.action, i.completion_time) for i in through.timeline.completed()] == done
    assert _slices(through) == _slices(own) == _slices(listed)
    want = sorted((k, c, v) for k, (c, v) in model.items())
    assert _rows_of(through) == want


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_writes_through_the_metastore_match_the_table(
    metastore: dict[str, str], tmp_path: Path, table_type: str
) -> None:
    rng = random.Random(17 if table_type == "COPY_ON_WRITE" else 29)
    path = tmp_path / "t"
    opts = {**_options(table_type), **metastore}
    model: dict[str, tuple[str, int]] = {}
    history: list[tuple[str, dict[str, tuple[str, int]]]] = []

    def write(op: str, ids: list[int], ts: int) -> None:
        instant = HudiWriter(str(path), opts).write(_rows(ids, ts), op).instant
        for i in ids:
            key = f"k{i:04d}"
            if op == "delete":
                model.pop(key, None)
            else:
                model[key] = (CITIES[i % 4], i * 7 + ts)
        history.append((instant, dict(model)))

    write("insert", list(range(0, 80)), 1)
    _check(path, metastore, model)
    for step in range(2, 10):
        op = rng.choice(["upsert", "upsert", "delete", "service", "rollback", "overwrite"])
        if op in ("upsert", "delete"):
            start = rng.randrange(0, 100)
            write(op, list(range(start, start + rng.randint(4, 30))), step)
        elif op == "overwrite":  # insert_overwrite of the partitions its rows touch (sf only)
            ids = [i for i in range(200, 240) if i % 4 == 0]
            instant = HudiWriter(str(path), opts).write(_rows(ids, step), "insert_overwrite").instant
            for k in [k for k, (c, _) in model.items() if c == "sf"]:
                del model[k]
            for i in ids:
                model[f"k{i:04d}"] = ("sf", i * 7 + step)
            history.append((instant, dict(model)))
        elif op == "service":
            w = HudiWriter(str(path), opts)
            if table_type == "MERGE_ON_READ":
                services.compact(w)
            services.clean(w, WriteConfig.from_options(w.options, w.config()))
        elif op == "rollback" and len(history) > 1:
            last = hudi_md.open_table(str(path)).timeline.write_timeline().last()
            if last is not None and last.requested_time == history[-1][0]:
                HudiWriter(str(path), opts).rollback_commit(history.pop()[0])
                model = dict(history[-1][1])
        _check(path, metastore, model)


def test_a_registered_table_by_name_and_pruning_in_one_request(
    metastore: dict[str, str], tmp_path: Path
) -> None:
    path = tmp_path / "t"
    plain = _options("COPY_ON_WRITE")
    for ts, ids in enumerate([range(0, 60), range(30, 90), range(100, 140)], 1):
        HudiWriter(str(path), plain).write(_rows(ids, ts), "upsert")
    ref, done = register(str(path), "lake", "trips", metastore)
    assert (ref.db, ref.table) == ("lake", "trips") and done["created"] == 3
    _wait_synced(metastore)
    by_name = hudi_md.open_table("lake.trips", metastore)
    assert by_name.uri == hudi_md.open_table(str(path)).uri
    assert _slices(by_name) == _slices(hudi_md.open_table(str(path)))
    client = PlanClient.from_options(metastore)
    assert client is not None
    table = hudi_md.open_table("lake.trips", metastore)
    before = client.requests
    plan = table.plan([("region", "=", "br"), ("city", "in", ["sao_paulo", "sf"])])
    # one request: the server prunes the partitions in SQL and answers their slices
    assert client.requests - before == 1, client.requests - before
    assert plan.counters["partitions_from_catalog"] == 1
    assert {s.partition_path for s in plan.slices} == {"region=br/city=sao_paulo"}
    # writes after the registration are recorded (the mirror finds the table by its location)
    HudiWriter(str(path), {**plain, **metastore}).write(_rows(range(140, 150), 4), "upsert")
    _wait_synced(metastore)
    assert _slices(hudi_md.open_table("lake.trips", metastore)) == _slices(hudi_md.open_table(str(path)))
    with pytest.raises(MetastoreError, match="not registered"):
        hudi_md.open_table(str(tmp_path / "elsewhere"), metastore)


def test_racing_writers_one_wins(metastore: dict[str, str], tmp_path: Path) -> None:
    path = tmp_path / "t"
    occ = {
        "hoodie.write.concurrency.mode": "optimistic_concurrency_control",
        "hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.InProcessLockProvider",
    }
    opts = {**_options("COPY_ON_WRITE", **occ), **metastore}
    HudiWriter(str(path), opts).write(_rows(range(0, 40), 1), "insert")
    a, b = HudiWriter(str(path), opts), HudiWriter(str(path), opts)
    sa = a.start_write("upsert", _rows([1], 2).schema)
    sb = b.start_write("upsert", _rows([1], 3).schema)
    ra = a.write_files(sa, _rows(range(0, 10), 2))
    rb = b.write_files(sb, _rows(range(0, 10), 3))
    a.end_write(sa, a.finish_commit(sa, *ra))
    with pytest.raises(WriteConflictError):
        b.finish_commit(sb, *rb)
    _wait_synced(metastore)
    through = hudi_md.open_table(str(path), metastore)
    assert [i.requested_time for i in through.timeline.pending()] == []
    assert _slices(through) == _slices(hudi_md.open_table(str(path)))


def test_cli_register_sync_ls(metastore: dict[str, str], tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    path = tmp_path / "t"
    plain = _options("MERGE_ON_READ")
    HudiWriter(str(path), plain).write(_rows(range(0, 40), 1), "insert")
    uri, token = metastore["hoodie.metaserver.uris"], metastore["hoodie.metaserver.token"]

    def cli(*args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [sys.executable, "-m", "hudi_md.cli", "metastore", *args], capture_output=True, text=True
        )
        assert (proc.returncode == 0) == ok, proc.stderr
        return proc

    refused = cli(
        "register", str(path), "--db", "lake", "--table", "trips", "--uri", uri, "--no-progress", ok=False
    )
    assert "unauthorized" in refused.stderr  # writes need the token
    out = cli(
        "register",
        str(path),
        "--db",
        "lake",
        "--table",
        "trips",
        "--uri",
        uri,
        "--token",
        token,
        "--no-progress",
    )
    assert "as lake.trips: 1 instants recorded" in out.stdout
    HudiWriter(str(path), plain).write(_rows(range(20, 60), 2), "upsert")  # not through the server
    out = cli("sync", "lake.trips", "--uri", uri, "--token", token, "--no-progress")
    assert "1 instants recorded" in out.stdout
    _wait_synced(metastore)
    assert _slices(hudi_md.open_table("lake.trips", metastore)) == _slices(hudi_md.open_table(str(path)))
    listed = json.loads(cli("ls", "lake", "--uri", uri, "--json").stdout)
    assert [(r["table"], r["snapshot"], r["pending"]) for r in listed] == [("lake.trips", "synced", 0)]


def test_a_dropped_partition_is_deleted_by_sync(metastore: dict[str, str], tmp_path: Path) -> None:
    """DELETE of a partition on the server marks it dropped and its clean pending; 'sync' carries it
    out on the table: a delete_partition replacecommit (its rows leave every reader, recorded on the
    server like any commit) and a clean."""
    from hudi_md.write.metastore_admin import sync

    path = tmp_path / "t"
    opts = {**_options("COPY_ON_WRITE", **{"hoodie.cleaner.commits.retained": "1"}), **metastore}
    HudiWriter(str(path), opts).write(_rows(range(0, 80), 1), "insert")
    HudiWriter(str(path), opts).write(_rows(range(0, 40), 2), "upsert")
    _wait_synced(metastore)
    client = MetastoreClient.from_options(metastore)
    assert client is not None
    dropped = client.drop_partition("lake", "trips", "region=us/city=sf")
    assert dropped.dropped and dropped.clean_pending
    _, done = sync(str(path), metastore)
    assert done["partitions_deleted"] == 1
    _wait_synced(metastore)
    own = hudi_md.open_table(str(path))
    assert own.timeline.completed().last().action == "replacecommit"
    want = sorted((f"k{i:04d}", CITIES[i % 4]) for i in range(0, 80) if CITIES[i % 4] != "sf")
    for table in (own, hudi_md.open_table(str(path), metastore)):
        rows = table.read(columns=["id", "city"])
        assert (
            sorted(zip(rows.column("id").to_pylist(), rows.column("city").to_pylist(), strict=True)) == want
        )
    assert "region=us/city=sf" not in [p.path for p in client.partitions("lake", "trips")]
