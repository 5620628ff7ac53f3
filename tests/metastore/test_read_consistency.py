"""Reads through the metastore server are never staler than the table's storage when they start,
and never torn (issue 37, items 2 and 3), on a real ``hudi-md metastore serve`` process (SQLite and
PostgreSQL):

* the server killed at the commit point misses a completion: reads that start after it include the
  commit, planned from the table's own MDT with a warning naming the instant, until
  ``hudi-md metastore sync`` brings the server up to date;
* what the staleness check costs: one listing of the table's timeline on storage (tables of
  version 6, 8 and 9), and one request to the server for the timeline and its snapshot status;
* a plan is pinned to the table version its timeline was read at: commits, a compaction and a clean
  that complete between the open and the plan do not change it;
* seeded concurrent writers (COW upserts rewriting file groups, optimistic concurrency) and
  readers: every read equals the table's state after some prefix of its commits (in completion
  order) that holds every commit returned before the read started.
"""

from __future__ import annotations

import random
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from server_helpers import ServerProcess, token_for

import hudi_md
from hudi_md.api import Table
from hudi_md.errors import WriteConflictError
from hudi_md.metadata.reader import open_metadata_table
from hudi_md.metastore.client import MetastoreClient
from hudi_md.metastore.mirror import MetastoreMirror, register_table
from hudi_md.metastore.plan_client import PlanClient
from hudi_md.storage import Storage
from hudi_md.table.config import TableConfig
from hudi_md.table.state import TableState
from hudi_md.table.timeline import Timeline
from hudi_md.write import services
from hudi_md.write.config import WriteConfig
from hudi_md.write.metastore_admin import register, sync
from hudi_md.write.writer import HudiWriter

from fixtures import unpack

CITIES = ["sf", "nyc", "la"]


def _serve(db_url: str, tmp_path: Path, servers: list[ServerProcess], token: str) -> dict[str, str]:
    server = ServerProcess(db_url, tmp_path, "--sync-interval", "0.2")
    servers.append(server)
    server.wait_ready()
    return {
        "hoodie.metaserver.enabled": "true",
        "hoodie.metaserver.uris": server.url,
        "hoodie.metaserver.token": token,
    }


def _options(table_type: str = "COPY_ON_WRITE", **extra: str) -> dict[str, str]:
    return {
        "hoodie.table.name": "t",
        "hoodie.database.name": "lake",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.parquet.max.file.size": "1500",  # several file groups per partition
        "hoodie.clean.automatic": "false",
        "hoodie.archive.automatic": "false",
        "hoodie.compact.inline": "false",
        "hoodie.cleaner.commits.retained": "1",
        **extra,
    }


def _rows(pairs: dict[str, str], ts: int) -> pa.Table:
    keys = sorted(pairs)
    return pa.table(
        {
            "id": keys,
            "city": [CITIES[int(k[1:4]) % 3] for k in keys],
            "ts": pa.array([ts] * len(keys), pa.int64()),
            "v": [pairs[k] for k in keys],
        }
    )


def _read(table: Any) -> dict[str, str]:
    t = table.read(columns=["id", "v"])
    return dict(zip(t.column("id").to_pylist(), t.column("v").to_pylist(), strict=True))


def _slices(table: Any) -> list[tuple[Any, ...]]:
    return sorted(
        (
            s.partition_path,
            s.file_id,
            s.base_instant,
            s.base_file.name if s.base_file else None,
            *(lf.name for lf in s.log_files),
        )
        for s in table.state.file_system_view().latest_file_slices(table.partitions())
    )


def _wait_synced(ms: dict[str, str], name: str = "t") -> None:
    client = MetastoreClient.from_options(ms)
    assert client is not None
    deadline = time.monotonic() + 60
    while True:
        status = client.snapshot_status("lake", name)
        if status.status == "synced" and not status.pending:
            return
        assert time.monotonic() < deadline, status
        time.sleep(0.05)


# --- a completion the server missed -------------------------------------------------------------------


def test_a_completion_the_server_missed_is_read_from_the_table_with_a_warning(
    db_url: str, tmp_path: Path, servers: list[ServerProcess], monkeypatch: pytest.MonkeyPatch
) -> None:
    token = token_for(db_url)
    ms = _serve(db_url, tmp_path, servers, token)
    path = str(tmp_path / "t")
    opts = {**_options(), **ms}
    model = {f"k{i:03d}": "seed" for i in range(30)}
    hudi_md.write(_rows(model, 1), path, operation="insert", options=opts)
    update = {f"k{i:03d}": "second" for i in range(0, 30, 2)}
    hudi_md.write(_rows(update, 2), path, operation="upsert", options=opts)
    model.update(update)
    _wait_synced(ms)
    assert _read(hudi_md.open_table("lake.t", ms)) == model
    # the server is SIGKILLed at the commit point: the instant is complete on storage, the server
    # has it inflight
    server = servers[-1]
    original = MetastoreMirror.completed

    def killed_first(self: MetastoreMirror, instant: Any, content: bytes) -> None:
        server.kill()
        original(self, instant, content)

    monkeypatch.setattr(MetastoreMirror, "completed", killed_first)
    missed = {f"k{i:03d}": "missed" for i in range(1, 30, 3)} | {"k100": "missed"}
    with pytest.warns(RuntimeWarning, match="did not record"):
        instant = hudi_md.write(_rows(missed, 3), path, operation="upsert", options=opts)
    monkeypatch.setattr(MetastoreMirror, "completed", original)
    model.update(missed)
    assert _read(hudi_md.open_table(path)) == model  # the commit stands
    restarted = _serve(db_url, tmp_path, servers, token)
    # every read that starts now includes the commit: planned from the table's own MDT, warned
    for name in ("lake.t", path):
        with pytest.warns(RuntimeWarning, match=rf"{instant}.*hudi-md metastore sync"):
            table = hudi_md.open_table(name, restarted)
        assert table.state.source is None and table.state.uses_metadata_table
        assert _read(table) == model
    # once synced, reads plan through the server again, without a warning
    sync("lake.t", restarted)
    _wait_synced(restarted)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        table = hudi_md.open_table("lake.t", restarted)
        assert table.state.source is not None
        assert _read(table) == model


# --- what the check costs -------------------------------------------------------------------------------


def _register_any_version(path: str, ms: dict[str, str]) -> None:
    """Register a table of any version with its history (``metastore register`` reads only the
    timeline of version 9 tables)."""
    storage = Storage(path)
    config = TableConfig.load(storage)
    folder = config.timeline_path
    timeline = Timeline.load(storage, folder, config.timeline_layout_version)
    names = [e.name for e in storage.list(folder) if not e.is_dir]

    def read(instant: Any, state: str) -> bytes:
        t = instant.requested_time
        if state == "completed":
            return storage.read_bytes(f"{folder}/{instant.file_name}")
        found = [n for n in names if n.startswith(f"{t}.") and n.endswith(f".{state}")]
        return storage.read_bytes(f"{folder}/{found[0]}") if found else b""

    client = MetastoreClient(ms["hoodie.metaserver.uris"], ms["hoodie.metaserver.token"])
    ref = register_table(client, storage, config, "lake", "t", None)
    v8 = config.table_version >= 8  # before, a completion time is only the file's modification time
    done = sorted(timeline.completed(), key=lambda i: i.completion_time if v8 else i.requested_time)
    assert len(done) >= 2
    for i in done:  # a table before version 8 completes its instants in the order they started
        t, action = i.requested_time, i.action
        client.create_instant(ref.db, ref.table, t, action, metadata=read(i, "requested"))
        client.transition(ref.db, ref.table, t, action, "requested", "inflight", metadata=read(i, "inflight"))
        client.transition(
            ref.db, ref.table, t, action, "inflight", "completed",
            metadata=read(i, "completed"), completion_time=i.completion_time if v8 else t,
        )  # fmt: skip
    client.close()


def _v9_table(path: Path) -> str:
    hudi_md.write(_rows({f"k{i:03d}": "a" for i in range(20)}, 1), str(path), options=_options())
    hudi_md.write(_rows({f"k{i:03d}": "b" for i in range(0, 20, 3)}, 2), str(path), options=_options())
    return str(path)


@pytest.mark.parametrize(
    "source",
    [
        "sample_table/cow/v6_complexkeygen_hivestyle.zip",
        "sample_table/cow/v8_complexkeygen_hivestyle.zip",
        "written",
    ],
)
def test_the_staleness_check_costs_one_listing(
    db_url: str, tmp_path: Path, servers: list[ServerProcess], source: str
) -> None:
    path = _v9_table(tmp_path / "t") if source == "written" else str(unpack(source, tmp_path))
    ms = _serve(db_url, tmp_path, servers, token_for(db_url))
    if source == "written":
        register(path, "lake", "t", ms)
    else:
        _register_any_version(path, ms)
    _wait_synced(ms)
    client = PlanClient.from_options(ms)
    assert client is not None
    own = hudi_md.open_table(path)

    before = client.requests
    table = hudi_md.open_table("lake.t", ms)
    assert table.state.source is not None
    # the server: the table by name with its timeline and snapshot status, one request
    assert client.requests - before == 1
    # storage: hoodie.properties and ONE listing of the timeline folder
    stats = table.state.storage.stats
    assert stats.snapshot()["list_requests"] == 1, stats.snapshot()
    assert stats.requests == 2, stats.snapshot()
    assert _slices(table) == _slices(own)
    # the plan: the partitions and their slices, as of the version the timeline came with, one request
    assert client.requests - before == 2
    assert stats.requests == 2, stats.snapshot()  # planning reads nothing from storage

    # the server behind storage: its newest completed instant removed from it
    last = own.timeline.completed().last()
    assert last is not None
    client_w = MetastoreClient(ms["hoodie.metaserver.uris"], ms["hoodie.metaserver.token"])
    client_w.delete_instant("lake", "t", last.requested_time)
    client_w.close()
    with pytest.warns(RuntimeWarning, match=rf"{last.requested_time}.*hudi-md metastore sync"):
        behind = hudi_md.open_table("lake.t", ms)
    assert behind.state.source is None
    # the table's own timeline is the listing the check made: no second one
    assert behind.state.storage.stats.snapshot()["list_requests"] == 1
    assert behind.state.storage.stats.requests == 2
    assert _slices(behind) == _slices(own)


# --- a plan sees one table version ----------------------------------------------------------------------


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_a_plan_is_pinned_to_the_version_it_opened(
    db_url: str, tmp_path: Path, servers: list[ServerProcess], table_type: str
) -> None:
    ms = _serve(db_url, tmp_path, servers, token_for(db_url))
    path = str(tmp_path / "t")
    opts = {**_options(table_type), **ms}
    model = {f"k{i:03d}": "seed" for i in range(40)}
    hudi_md.write(_rows(model, 1), path, operation="insert", options=opts)
    hudi_md.write(_rows({f"k{i:03d}": "two" for i in range(0, 40, 2)}, 2), path, options=opts)
    model.update({f"k{i:03d}": "two" for i in range(0, 40, 2)})
    _wait_synced(ms)
    pinned = hudi_md.open_table("lake.t", ms)
    planned_later = hudi_md.open_table("lake.t", ms)
    expected = _slices(hudi_md.open_table(path))
    # after the open: an update of every file group, a new partition, a compaction, a clean
    changed = {f"k{i:03d}": "three" for i in range(40)} | {"k302": "new"}
    hudi_md.write(_rows(changed, 3), path, options=opts)
    writer = HudiWriter(path, opts)
    if table_type == "MERGE_ON_READ":
        assert services.compact(writer) is not None
    _wait_synced(ms)
    # the rows as of the open (from files a clean has not deleted yet)
    assert _read(pinned) == model
    cleaned = services.clean(writer, WriteConfig.from_options(opts, TableConfig.load(Storage(path))))
    assert cleaned is not None or table_type == "MERGE_ON_READ"  # a COW clean deletes the old bases
    _wait_synced(ms)
    fresh = hudi_md.open_table("lake.t", ms)
    assert fresh.state.source is not None and _slices(fresh) == _slices(hudi_md.open_table(path))
    # a new state from the same source is the table as it is now; the state opened before still
    # plans the version it was opened at (files the clean deleted since included)
    pinned_state = planned_later.state
    again = Table(
        TableState(
            pinned_state.storage,
            pinned_state.options,
            open_metadata=open_metadata_table,
            source=pinned_state.source,
        )
    )
    assert again.state.source is not None and _slices(again) == _slices(fresh)
    assert planned_later.state.source is not None and _slices(planned_later) == expected


# --- concurrent writers and readers ---------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_concurrent_writers_and_readers_see_whole_states(
    db_url: str, tmp_path: Path, servers: list[ServerProcess]
) -> None:
    seed = 37
    ms = _serve(db_url, tmp_path, servers, token_for(db_url))
    path = str(tmp_path / "t")
    occ = {
        "hoodie.write.concurrency.mode": "optimistic_concurrency_control",
        "hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.InProcessLockProvider",
    }
    opts = {**_options(**occ), **ms}
    seeded = {f"k{i:03d}": "seed" for i in range(45)}
    hudi_md.write(_rows(seeded, 0), path, operation="insert", options=opts)
    _wait_synced(ms)

    lock = threading.Lock()
    batches: dict[str, dict[str, str]] = {}  # instant -> the rows it wrote
    returned: list[str] = []  # instants whose write returned, in that order
    reads: list[tuple[int, dict[str, str], bool]] = []  # (len(returned) at start, rows, via server)
    errors: list[BaseException] = []
    deadline = time.monotonic() + 35
    writers_done = threading.Event()

    def writer(w: int) -> None:
        rng = random.Random(seed * 100 + w)
        try:
            for j in range(12):
                if time.monotonic() > deadline:
                    return
                city = rng.randrange(3)
                keys = [k for k in seeded if int(k[1:4]) % 3 == city]
                pairs = {k: f"w{w}-{j}" for k in rng.sample(keys, rng.randint(2, 6))}
                pairs[f"k{500 + w * 100 + j:03d}"] = f"w{w}-{j}"  # a new key of its own
                try:
                    instant = hudi_md.write(_rows(pairs, j + 1), path, options=opts)
                except WriteConflictError:
                    continue
                with lock:
                    batches[instant] = pairs
                    returned.append(instant)
        except BaseException as e:  # reported by the test
            errors.append(e)

    def reader(r: int) -> None:
        try:
            while not writers_done.is_set() and time.monotonic() < deadline + 10:
                with lock:
                    started = len(returned)
                table = hudi_md.open_table("lake.t", ms)
                rows = _read(table)
                with lock:
                    reads.append((started, rows, table.state.source is not None))
        except BaseException as e:  # reported by the test
            errors.append(e)

    writers = [threading.Thread(target=writer, args=(w,)) for w in range(2)]
    readers = [threading.Thread(target=reader, args=(r,)) for r in range(2)]
    for t in (*writers, *readers):
        t.start()
    for t in writers:
        t.join()
    writers_done.set()
    for t in readers:
        t.join()
    assert not errors, errors
    # the states: the seed, then each commit applied in completion order
    own = hudi_md.open_table(path, {"hoodie.metadata.enable": "false"})
    order = [
        i.requested_time
        for i in sorted(own.timeline.write_timeline(), key=lambda i: i.completion_time or i.requested_time)
        if i.requested_time in batches
    ]
    assert sorted(order) == sorted(batches)
    states = [dict(seeded)]
    for instant in order:
        states.append({**states[-1], **batches[instant]})
    assert _read(own) == states[-1]
    position = {instant: n + 1 for n, instant in enumerate(order)}
    bad = []
    for started, rows, via_server in reads:
        at_least = max((position[i] for i in returned[:started]), default=0)
        if not any(rows == states[j] for j in range(at_least, len(states))):
            seen = [j for j, s in enumerate(states) if s == rows]
            missing = sorted(k for k in states[at_least] if rows.get(k) != states[at_least][k])[:5]
            bad.append((started, at_least, seen, via_server, missing))
    assert len(order) >= 4, order
    through_server = sum(1 for _, _, via in reads if via)
    assert len(reads) >= 10 and through_server >= len(reads) // 3, (len(reads), through_server)
    assert not bad, f"{len(bad)} of {len(reads)} reads are no state at or after their start: {bad[:5]}"
