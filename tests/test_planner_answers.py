"""The planner names its ``plan`` answers; a request that knows the answer the planner would give
gets ``unchanged`` and no slices (the shim reuses the answer it decoded before). A new commit, other
filters or another answer's name get the slices: a stale answer is never reused."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import hudi_md
from hudi_md.spark import protocol as P
from hudi_md.spark.planner import Planner
from hudi_md.storage import Storage

OPTIONS = {
    "hoodie.table.name": "answers",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "p",
}


def _write(path: Path, ids: range) -> None:
    rows = pa.table({"id": [f"k{i}" for i in ids], "p": [f"p{i % 4}" for i in ids], "v": list(ids)})
    hudi_md.write(rows, str(path), operation="upsert", options=OPTIONS)


def _plan(planner: Planner, path: Path, known: str | None = None, filters: object = None) -> tuple:
    request = {P.OP: P.OP_PLAN, P.PATH: str(path), P.OPTIONS: {}, P.FILTERS: filters}
    if known is not None:
        request[P.KNOWN_ANSWER] = known
    return planner.handle(request)


def _slices(body: bytes) -> int:
    return pa.ipc.open_stream(body).read_all().num_rows


def test_a_known_answer_is_not_sent_again(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _write(path, range(40))
    planner = Planner()
    header, body = _plan(planner, path)
    answer = header[P.ANSWER]
    assert answer and not header.get(P.UNCHANGED) and _slices(body) == 4

    again, empty = _plan(planner, path, known=answer)
    assert again[P.UNCHANGED] is True and empty == b""
    assert again[P.ANSWER] == answer and again[P.ROWS] == header[P.ROWS]

    # another answer's name, or other filters: the slices
    other, body = _plan(planner, path, known="not-this-one")
    assert not other.get(P.UNCHANGED) and _slices(body) == 4
    only_p1 = {"op": "eq", "column": "p", "value": "p1"}
    filtered, body = _plan(planner, path, known=answer, filters=only_p1)
    assert not filtered.get(P.UNCHANGED) and filtered[P.ANSWER] != answer and _slices(body) == 1

    # a new commit: a new answer, whatever the request knew, listing the commit's file
    _write(path, range(100, 101))
    fresh, body = _plan(planner, path, known=answer)
    assert not fresh.get(P.UNCHANGED) and fresh[P.ANSWER] != answer
    latest = fresh[P.LATEST_INSTANT]
    assert latest != header[P.LATEST_INSTANT]
    assert latest in pa.ipc.open_stream(body).read_all().column(P.BASE_INSTANT).to_pylist()


def _timeline(path: Path) -> Path:
    return path / ".hoodie" / "timeline"


def test_an_instant_completing_behind_a_newer_pending_one_is_seen(tmp_path: Path) -> None:
    """Two writers: the second one's instant is pending (the newest on the timeline) when the first
    one's, older, completes. The newest instant is the same before and after, but the table is not:
    the planner must plan the new state, not the one it kept."""
    path = tmp_path / "t"
    _write(path, range(40))
    _write(path, range(200, 204))  # the first writer's commit (hidden below until it completes)
    second = sorted(p for p in _timeline(path).iterdir() if p.name.endswith(".commit") and "_" in p.name)[-1]
    completed = second.read_bytes()
    second.unlink()  # the first writer's instant is inflight again
    (_timeline(path) / "29991231235959999.commit.requested").write_bytes(b"")  # the second writer's
    planner = Planner()
    before, body = _plan(planner, path)
    assert _slices(body) == 4 and before[P.ROWS] == 4
    rows_before = hudi_md.open_table(str(path)).read().num_rows
    assert rows_before == 40

    second.write_bytes(completed)  # the first writer completes
    after, body = _plan(planner, path, known=before[P.ANSWER])
    assert not after.get(P.UNCHANGED) and after[P.ANSWER] != before[P.ANSWER]
    files = pa.ipc.open_stream(body).read_all()
    fresh = hudi_md.open_table(str(path)).file_slices()
    assert sorted(files.column("base_file").to_pylist()) == sorted(
        str(path / f) for f in fresh.column("base_file").to_pylist()
    )


def test_a_kept_table_is_checked_in_one_round_trip_and_reopened_when_it_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While nothing changed, each request of the table reuses the opened table after asking for
    hoodie.properties and the timeline at once (on an object store); a changed hoodie.properties
    opens it again."""
    path = tmp_path / "t"
    _write(path, range(40))
    planner = Planner()
    first, _ = _plan(planner, path)
    (kept,) = planner._tables.values()

    in_flight, most = 0, 0
    lock = threading.Lock()
    real = Storage._call

    def slow(storage: Storage, op: str, p: str, fn: Any, **kw: Any) -> Any:
        nonlocal in_flight, most
        with lock:
            in_flight += 1
            most = max(most, in_flight)
        try:
            time.sleep(0.2)
            return real(storage, op, p, fn, **kw)
        finally:
            with lock:
                in_flight -= 1

    monkeypatch.setattr(Storage, "_call", slow)
    # as on an object store (on the local disk the two are asked one after the other)
    monkeypatch.setattr(Storage, "is_local_disk", property(lambda self: False))
    start = time.perf_counter()
    again, _ = _plan(planner, path, known=first[P.ANSWER])
    assert again[P.UNCHANGED] is True
    assert most == 2 and time.perf_counter() - start < 0.35  # one round trip of two requests
    assert list(planner._tables.values()) == [kept]
    monkeypatch.undo()

    # the same timeline, another hoodie.properties (a writer dropped the stats indexes): opened again
    props = path / ".hoodie" / "hoodie.properties"
    text = props.read_text()
    assert "hoodie.table.metadata.partitions=column_stats,files,partition_stats\n" in text
    props.write_text(text.replace("=column_stats,files,partition_stats\n", "=files\n"))
    assert not kept.is_current()
    _plan(planner, path, known=first[P.ANSWER])
    (reopened,) = planner._tables.values()
    assert reopened is not kept
    assert reopened.config.get_list("hoodie.table.metadata.partitions") == ["files"]
