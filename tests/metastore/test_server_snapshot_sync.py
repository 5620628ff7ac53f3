"""The snapshot sync against hudi-md itself: a real table written with hudi-md (COW and MOR:
inserts, upserts, deletes, compaction, insert_overwrite, clean, a new partition, rollback, restore),
every instant file's bytes fed to the server in completion order after each step; then the
server's latest slices equal hudi-md's (through its MDT, and through a plain storage listing), its
live files equal the data files on storage, its partitions equal hudi-md's, and time travel to any
earlier step gives that step's slices."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from server_helpers import Api, feed_timeline

import hudi_md
from hudi_md.storage import Storage
from hudi_md.table.config import TableConfig
from hudi_md.table.filenames import parse_data_file
from hudi_md.table.fs_view import FileSlice
from hudi_md.table.listing import StorageListing
from hudi_md.write import services
from hudi_md.write.config import WriteConfig
from hudi_md.write.writer import HudiWriter

CITIES = ["sf", "nyc", "sao_paulo"]

SliceKey = tuple[str, str, str, str | None, int | None, tuple[tuple[str, int], ...]]


def options(table_type: str) -> dict[str, str]:
    return {
        "hoodie.table.name": "trips",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.metadata.enable": "true",
        "hoodie.compact.inline": "false",
        "hoodie.clean.automatic": "false",
        "hoodie.archive.automatic": "false",
        "hoodie.cleaner.commits.retained": "1",
    }


def rows(ids: Iterable[int], ts: int, city: str | None = None) -> pa.Table:
    ids = list(ids)
    return pa.table(
        {
            "id": pa.array([f"id-{i:04d}" for i in ids], pa.string()),
            "city": pa.array([city or CITIES[i % 3] for i in ids], pa.string()),
            "ts": pa.array([ts] * len(ids), pa.int64()),
            "fare": pa.array([float(i * ts % 97) for i in ids], pa.float64()),
        }
    )


def hudi_key(s: FileSlice) -> SliceKey:
    base = s.base_file
    return (
        s.partition_path,
        s.file_id,
        s.base_instant,
        base.name if base else None,
        base.size if base else None,
        tuple((lf.name, lf.size) for lf in s.log_files),
    )


def server_key(s: dict[str, Any]) -> SliceKey:
    base = s["base_file"]
    return (
        s["partition"],
        s["file_id"],
        s["base_instant"],
        base["name"] if base else None,
        base["size"] if base else None,
        tuple((lf["name"], lf["size"]) for lf in s["log_files"]),
    )


def storage_files(path: str) -> set[tuple[str, str, int]]:
    listing = StorageListing(Storage(path))
    out = set()
    for partition, entries in listing.files_in_partitions(listing.all_partitions()).items():
        out |= {(partition, e.name, e.size) for e in entries if parse_data_file(e.name) is not None}
    return out


class Scenario:
    """A table written step by step, fed to the server after each step and checked."""

    def __init__(self, api: Api, path: Path, table_type: str) -> None:
        self.api = api
        self.path = str(path)
        self.table_type = table_type
        self.opts = options(table_type)
        self.route = ""
        self.fed: set[str] = set()
        self.ts = 0
        # the slices after each step, by the last completed instant then (for time travel)
        self.history: list[tuple[str, set[str], set[SliceKey]]] = []
        self.slices_with_logs = 0

    def writer(self) -> HudiWriter:
        return HudiWriter(self.path, self.opts)

    def write(self, operation: str, ids: Iterable[int], city: str | None = None) -> str:
        self.ts += 1
        return hudi_md.write(rows(ids, self.ts, city), self.path, operation=operation, options=self.opts)

    def register(self) -> None:
        config = TableConfig.load(Storage(self.path))
        self.route = self.api.table(
            "lake",
            "trips",
            self.path,
            partition_fields=[{"name": "city", "type": "string"}],
            params=config.to_dict(),
            table_type=self.table_type,
        )

    def step(self, action: Callable[[], Any]) -> None:
        action()
        if not self.route:
            self.register()
        feed_timeline(self.api, self.route, self.path, self.fed)
        self.check()

    def check(self) -> None:
        api, route = self.api, self.route
        table = hudi_md.open_table(self.path)
        expected = {hudi_key(s) for s in table.state.file_system_view().latest_file_slices()}
        got = {server_key(s) for s in api.ok(api.post(f"{route}/snapshot/slices", {}))}
        assert got == expected
        self.slices_with_logs += sum(1 for k in got if k[5])
        listed = hudi_md.open_table(self.path, {"hoodie.metadata.enable": "false"})
        assert {hudi_key(s) for s in listed.state.file_system_view().latest_file_slices()} == expected
        # every live file the server knows is on storage, and every data file on storage is known
        live = {
            (f["partition"], f["name"], f["size"]) for f in api.ok(api.get(f"{route}/snapshot/all-files"))
        }
        assert live == storage_files(self.path)
        partitions = [p["path"] for p in api.ok(api.post(f"{route}/partitions/query", {}))]
        assert sorted(partitions) == sorted(table.partitions())
        for p in api.ok(api.post(f"{route}/partitions/query", {})):
            assert p["values"] == {"city": p["path"].split("=", 1)[1]}
        # time travel: every earlier step whose instants are all still on the timeline
        completed = {i.requested_time for i in table.timeline.completed()}
        last = max((i.requested_time for i in table.timeline.completed()), default=None)
        assert last is not None
        self.history.append((last, completed, expected))
        for as_of, instants, slices in self.history:
            if {t for t in completed if t <= as_of} != instants:
                continue  # a later rollback or restore undid an instant of that step
            at = api.ok(api.post(f"{route}/snapshot/slices", {"as_of": as_of}))
            assert {server_key(s) for s in at} == slices, as_of
        status = api.ok(api.get(f"{route}/snapshot/status"))
        assert status["status"] == "synced" and status["pending"] == []


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_snapshot_follows_hudi_md(api: Api, tmp_path: Path, table_type: str) -> None:
    s = Scenario(api, tmp_path / "trips", table_type)
    s.step(lambda: s.write("insert", range(30)))
    s.step(lambda: s.write("upsert", [*range(10), *range(30, 36)]))
    s.step(lambda: s.write("delete", range(5, 8)))
    if table_type == "MERGE_ON_READ":
        s.step(lambda: services.compact(s.writer()))
        s.step(lambda: s.write("upsert", range(12, 16)))  # logs on the compacted slices
    s.step(lambda: s.write("upsert", range(10, 21)))
    s.step(lambda: s.write("insert_overwrite", [i for i in range(40, 49) if i % 3 == 0]))  # sf replaced
    s.step(
        lambda: services.clean(
            s.writer(), WriteConfig.from_options(s.opts, TableConfig.load(Storage(s.path)))
        )
    )
    target = ""

    def new_city() -> None:
        nonlocal target
        target = s.write("upsert", range(50, 55), city="lisbon")

    s.step(new_city)
    s.step(lambda: s.write("upsert", range(0, 4)))
    rolled = ""

    def to_roll_back() -> None:
        nonlocal rolled
        rolled = s.write("upsert", range(20, 26))

    s.step(to_roll_back)
    s.step(lambda: s.writer().rollback_commit(rolled))
    assert rolled not in {i["requested_time"] for i in s.api.ok(s.api.get(f"{s.route}/instants"))}
    s.step(lambda: s.write("upsert", range(60, 63), city="porto"))
    s.step(lambda: s.writer().restore(target))  # undoes the upserts after the lisbon write
    s.step(lambda: s.write("upsert", range(0, 3)))
    if table_type == "MERGE_ON_READ":
        s.step(lambda: services.compact(s.writer()))
    s.step(
        lambda: services.clean(
            s.writer(), WriteConfig.from_options(s.opts, TableConfig.load(Storage(s.path)))
        )
    )
    assert len(s.history) >= 12
    # what the scenario went through, as the server recorded it
    actions = {(i["action"], i["state"]) for i in s.api.ok(s.api.get(f"{s.route}/instants"))}
    assert {("replacecommit", "completed"), ("clean", "completed"), ("rollback", "completed")} <= actions
    assert ("restore", "completed") in actions
    assert (s.slices_with_logs > 0) == (table_type == "MERGE_ON_READ")
    # every completion advanced the table version (rolled-back ones included)
    completed = [i for i in s.api.ok(s.api.get(f"{s.route}/instants")) if i["state"] == "completed"]
    # (the rollback undid one instant the server had recorded, the restore two)
    assert s.api.ok(s.api.get(s.route))["version"] == len(completed) + 3
