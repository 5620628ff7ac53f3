"""A metastore server SIGKILLed in the middle of a snapshot sync, then restarted: the new server
catches up at start, and nothing is lost or doubled (the files rows equal those of a database the
same instants were synced into without a fault; every version synced once, in order)."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import sqlalchemy as sa
from server_helpers import Api, ServerProcess, engine_of, feed_timeline, make_api

import hudi_md
from hudi_md.metastore_server import schema as S
from hudi_md.metastore_server.snapshot import SYNC_DELAY_ENV
from hudi_md.storage import Storage
from hudi_md.table.config import TableConfig
from hudi_md.write import services
from hudi_md.write.config import WriteConfig
from hudi_md.write.writer import HudiWriter

ROUTE = "/v1/databases/lake/tables/trips"


def write_table(path: str) -> None:
    opts = {
        "hoodie.table.name": "trips",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.table.type": "MERGE_ON_READ",
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.compact.inline": "false",
        "hoodie.clean.automatic": "false",
        "hoodie.archive.automatic": "false",
        "hoodie.cleaner.commits.retained": "1",
    }

    def rows(ids: range, ts: int) -> pa.Table:
        return pa.table(
            {
                "id": [f"id-{i}" for i in ids],
                "city": [f"c{i % 7}" for i in ids],
                "ts": pa.array([ts] * len(ids), pa.int64()),
            }
        )

    hudi_md.write(rows(range(70), 1), path, operation="insert", options=opts)
    for step in range(2, 6):
        hudi_md.write(rows(range(step * 5, step * 5 + 20), step), path, operation="upsert", options=opts)
    services.compact(HudiWriter(path, opts))
    hudi_md.write(rows(range(0, 30), 9), path, operation="upsert", options=opts)
    services.clean(HudiWriter(path, opts), WriteConfig.from_options(opts, TableConfig.load(Storage(path))))


def register_and_feed(api: Api, path: str) -> int:
    config = TableConfig.load(Storage(path))
    api.table("lake", "trips", path, [{"name": "city", "type": "string"}], config.to_dict(), "MERGE_ON_READ")
    return len(feed_timeline(api, ROUTE, path, set()))


def files_rows(url: str) -> list[tuple[Any, ...]]:
    engine = engine_of(url)
    f, p = S.files.c, S.partitions.c
    with engine.connect() as conn:
        rows = conn.execute(
            sa.select(
                p.part_name, f.name, f.size, f.file_id, f.instant, f.version, f.is_deleted, f.deleted_instant
            )
            .join(S.partitions, p.part_id == f.part_id)
            .order_by(p.part_name, f.name)
        ).all()
    engine.dispose()
    return [tuple(r) for r in rows]


def versions(url: str) -> list[tuple[int, int]]:
    engine = engine_of(url)
    v = S.tbl_version.c
    with engine.connect() as conn:
        rows = conn.execute(sa.select(v.version, v.snapshot_status).order_by(v.version)).all()
    engine.dispose()
    return [tuple(r) for r in rows]  # type: ignore[misc]


def test_sigkill_mid_sync_then_catch_up(db_url: str, tmp_path: Path, servers: list[ServerProcess]) -> None:
    path = str(tmp_path / "trips")
    write_table(path)
    # the reference: the same instants synced without a fault
    reference_url = f"sqlite:///{tmp_path / 'reference.db'}"
    for api in make_api(reference_url):
        n = register_and_feed(api, path)
        expected_slices = api.ok(api.post(f"{ROUTE}/snapshot/slices", {}))  # a read syncs everything
    assert n >= 8
    expected_files = files_rows(reference_url)
    # the database under test: every completion recorded, no sync yet
    for api in make_api(db_url, background_sync=False):
        assert register_and_feed(api, path) == n
    assert [s for _, s in versions(db_url)] == [S.SYNC_PENDING] * n
    # a server that syncs slowly (1.5 s inside each version's transaction) is killed in version 3
    slow = ServerProcess(db_url, tmp_path, env={SYNC_DELAY_ENV: "1.5"})
    servers.append(slow)
    deadline = time.monotonic() + 120
    while len(re.findall(r"version \d+ applied, pausing", slow.log())) < 3:
        assert time.monotonic() < deadline, slow.log()
        assert slow.proc.poll() is None, slow.log()
        time.sleep(0.05)
    slow.kill()
    assert re.findall(r"version (\d+) applied, pausing", slow.log()) == ["1", "2", "3"]
    assert [s for _, s in versions(db_url)] == [S.SYNC_DONE] * 2 + [S.SYNC_PENDING] * (n - 2)
    half = files_rows(db_url)
    assert half and {r[5] for r in half} <= {1, 2}  # only versions 1 and 2 are in
    # restarted: it catches up at start, before anyone asks
    fresh = ServerProcess(db_url, tmp_path)
    servers.append(fresh)
    fresh.wait_ready()
    deadline = time.monotonic() + 120
    while httpx.get(f"{fresh.url}{ROUTE}/snapshot/status").json()["status"] != "synced":
        assert time.monotonic() < deadline, fresh.log()
        time.sleep(0.1)
    assert versions(db_url) == [(i, S.SYNC_DONE) for i in range(1, n + 1)]
    assert files_rows(db_url) == expected_files
    names = [(r[0], r[1]) for r in files_rows(db_url)]
    assert len(names) == len(set(names))
    got = httpx.post(f"{fresh.url}{ROUTE}/snapshot/slices", json={}).json()
    key = lambda s: (s["partition"], s["file_id"])  # noqa: E731
    assert sorted(got, key=key) == sorted(expected_slices, key=key)
    assert {(s["partition"], s["file_id"]) for s in got} == {
        (s.partition_path, s.file_id)
        for s in hudi_md.open_table(path).state.file_system_view().latest_file_slices()
    }
