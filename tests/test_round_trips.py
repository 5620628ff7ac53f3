"""Round trips of a cold plan on an object store: the reads that do not depend on each other are
sent at once, so a cold plan waits for fewer round trips than it sends requests.

Each request here waits 0.15 s first (as on a network); a *round* is a run of requests in flight
together, and a new round starts when a request starts after every earlier one ended. The tests
count rounds and requests, not seconds. The storage is local, told it is not (``is_local_disk``),
which is what turns the side-by-side reads on.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import hudi_md
from hudi_md.formats.logframes import END_BYTES, HEAD_BYTES, WHOLE_FILE_BYTES, first_reads
from hudi_md.metadata import writer as mdt_writer
from hudi_md.storage.base import Storage

LATENCY_S = 0.15
MDT = ".hoodie/metadata"


@dataclass
class Request:
    op: str
    path: str
    start: float
    end: float
    round: int = 0


class Rounds:
    """Every storage request (op, path, start, end) from :meth:`start` on, and the round each was
    in; from then on, storage is an object store with :data:`LATENCY_S` a request."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._monkeypatch = monkeypatch

    def start(self) -> None:
        real = Storage._call

        def call(storage: Storage, op: str, path: str, fn: Any, **kw: Any) -> Any:
            start = time.monotonic()
            time.sleep(LATENCY_S)
            try:
                return real(storage, op, path, fn, **kw)
            finally:
                with self._lock:
                    self.requests.append(Request(op, storage.uri(path), start, time.monotonic()))

        self._monkeypatch.setattr(Storage, "_call", call)
        self._monkeypatch.setattr(Storage, "is_local_disk", property(lambda self: False))

    def number(self) -> list[Request]:
        ordered = sorted(self.requests, key=lambda r: r.start)
        rnd, ended = 0, float("-inf")
        for r in ordered:
            if r.start >= ended:
                rnd += 1
            r.round = rnd
            ended = max(ended, r.end)
        return ordered

    @property
    def rounds(self) -> int:
        return max((r.round for r in self.number()), default=0)

    def of(self, fragment: str) -> list[Request]:
        return [r for r in self.number() if fragment in r.path]


@pytest.fixture
def rounds(monkeypatch: pytest.MonkeyPatch) -> Rounds:
    return Rounds(monkeypatch)


def _files(plan: Any) -> list[str]:
    return sorted(s.base_file.name for s in plan.slices if s.base_file is not None)


@pytest.fixture(scope="module")
def big_mdt_table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """2,000 partitions: the MDT files partition's first log file is larger than is read whole."""
    path = tmp_path_factory.mktemp("rounds") / "t"
    n = 2000
    keys = [f"k{i}" for i in range(n)]
    data = pa.table({"id": keys, "dt": [f"p{i:05d}" for i in range(n)], "v": list(range(n))})
    options = {
        "hoodie.table.name": "rounds",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "dt",
        "hoodie.parquet.bloom.filter.enabled": "false",
    }
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(mdt_writer, "HFILE_BLOCK_SIZE", 16 << 10)
        hudi_md.write(data, str(path), operation="insert", options=options)
        hudi_md.write(data.slice(0, 10), str(path), operation="upsert", options=options)
    logs = [f.stat().st_size for f in (path / MDT / "files").iterdir() if ".log." in f.name]
    assert max(logs) > WHOLE_FILE_BYTES, logs
    return path


def test_a_table_opens_with_its_config_and_timeline_in_one_round(big_mdt_table: Path, rounds: Rounds) -> None:
    local = hudi_md.open_table(str(big_mdt_table))
    rounds.start()
    table = hudi_md.open_table(str(big_mdt_table))
    opened = {(r.op, r.path.rsplit("/.hoodie/", 1)[1], r.round) for r in rounds.number()}
    assert opened == {("list", "timeline", 1), ("read", "hoodie.properties", 1)}
    assert len(rounds.requests) == 2
    assert [i.file_name for i in table.timeline.instants] == [i.file_name for i in local.timeline.instants]


@pytest.mark.parametrize(
    "archive",
    ["sample_table/cow/v6_complexkeygen_hivestyle.zip", "quickstart_trips_table/mor/avro/v6_trips_8i3d.zip"],
)
def test_a_table_of_version_6_lists_its_timeline_where_its_config_says(
    table_path: Any, archive: str, rounds: Rounds
) -> None:
    """The timeline listed beside the config is where tables of version 8 and later keep it; a
    version-6 table's is listed again under .hoodie, one round later, and plans the same files."""
    path = table_path(archive)
    local = hudi_md.open_table(str(path))
    expected = _files(local.plan())
    assert expected
    rounds.start()
    table = hudi_md.open_table(str(path))
    listings = [(r.path.rsplit("/", 1)[1], r.round) for r in rounds.number() if r.op == "list"]
    assert listings == [("timeline", 1), (".hoodie", 2)]
    assert table.table_version == 6
    assert [i.file_name for i in table.timeline.instants] == [i.file_name for i in local.timeline.instants]
    assert _files(table.plan()) == expected


def test_a_filtered_plan_opens_the_mdt_while_it_reads_the_schema(big_mdt_table: Path, rounds: Rounds) -> None:
    """The commit the schema comes from and the MDT's config, timeline and files listing go in one
    round, after the data timeline's (the MDT is read after the data timeline, never beside it:
    an instant completed in between would have MDT files the listing missed)."""
    expected = _files(hudi_md.open_table(str(big_mdt_table)).plan([("dt", "=", "p00042")]))
    rounds.start()
    table = hudi_md.open_table(str(big_mdt_table))
    plan = table.plan([("dt", "=", "p00042")])
    assert _files(plan) == expected and len(expected) == 1
    (commit,) = [r for r in rounds.number() if r.path.endswith(".commit") or r.path.endswith(".deltacommit")]
    mdt_open = [r for r in rounds.number() if f"{MDT}/.hoodie" in r.path or r.path.endswith(f"{MDT}/files")]
    timeline = [r for r in rounds.number() if r.op == "list" and r.path.endswith("t/.hoodie/timeline")]
    assert len(mdt_open) == 3
    assert {r.round for r in mdt_open} == {commit.round} == {timeline[0].round + 1}


def test_a_large_log_file_is_framed_in_one_round(big_mdt_table: Path, rounds: Rounds) -> None:
    """A log file larger than is read whole: its head and its end go at once (the end holds the
    last block's footer and the HFile index in it), the same two requests as one after the other."""
    sizes = {f.name: f.stat().st_size for f in (big_mdt_table / MDT / "files").iterdir() if ".log." in f.name}
    rounds.start()
    table = hudi_md.open_table(str(big_mdt_table))
    table.plan([("dt", "=", "p00042")])
    for name, size in sizes.items():
        reads = rounds.of(name)
        # then the HFile blocks holding the key, if this file has it
        framing = [r for r in reads if r.round == reads[0].round]
        assert len(framing) == (2 if size > WHOLE_FILE_BYTES else 1), name
    # the cold plan: config and timeline; the MDT (and the schema's commit); the files partition's
    # heads and ends; the block holding the key
    assert rounds.rounds <= 4


def test_first_reads() -> None:
    assert first_reads(0) == []
    assert first_reads(WHOLE_FILE_BYTES) == [(0, WHOLE_FILE_BYTES)]
    size = WHOLE_FILE_BYTES + 1
    assert first_reads(size) == [(0, HEAD_BYTES), (size - END_BYTES, END_BYTES)]
