"""The planner names its ``plan`` answers; a request that knows the answer the planner would give
gets ``unchanged`` and no slices (the shim reuses the answer it decoded before). A new commit, other
filters or another answer's name get the slices: a stale answer is never reused."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

import hudi_md
from hudi_md.spark import protocol as P
from hudi_md.spark.planner import Planner

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
