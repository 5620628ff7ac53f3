"""Incremental reads beside Apache Hudi 1.2's, on tables Hudi wrote (issue 38).

Hudi 1.2 selects an incremental range's commits by completion time on tables of version 8 and
later (``begin < completion time <= end``: a commit's own instant time as the begin takes that
commit in, as it completed after it was requested) and by instant time on version 6. For each table
version (6 and 9) and type, Apache Hudi writes three upserts and a delete; then every range below is
read through Hudi's ``format("hudi")``, hudi-md's ``format("hudi-md")`` and hudi-md's Python reader,
and the three must hold the same rows. The bounds are each commit's instant time and completion
time (on version 6 the completion time is not in the timeline: the instant time plus one
millisecond stands in, between it and the next commit).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import hudi_md

FIELDS = ["id", "ts", "v", "p"]
BEGIN = "hoodie.datasource.read.begin.instanttime"
END = "hoodie.datasource.read.end.instanttime"


def _write(spark: Any, path: str, table_type: str, version: int, rows: list[tuple], operation: str) -> None:
    df = spark.createDataFrame(rows, "id string, ts long, v string, p string")
    options = {
        "hoodie.table.name": Path(path).name,
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "p",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.datasource.write.operation": operation,
        "hoodie.write.table.version": str(version),
        "hoodie.write.auto.upgrade": "false",
    }
    df.write.format("hudi").options(**options).mode("append").save(path)


def _bounds(path: str) -> list[tuple[str, str]]:
    """(instant time, completion time) of each commit, in order."""
    table = hudi_md.open_table(path)
    out = []
    for i in table.timeline.write_timeline():
        done = i.completion_time if table.table_version >= 8 else str(int(i.requested_time) + 1)
        out.append((i.requested_time, done))
    return out


def _rows(df: Any) -> list[tuple]:
    return sorted(tuple(r) for r in df.select("_hoodie_commit_time", *FIELDS).collect())


def _python_rows(path: str, begin: str, end: str | None) -> list[tuple]:
    start = None if begin == "000" else begin
    rows = hudi_md.open_table(path).read(query_type="incremental", start=start, end=end)
    return sorted(zip(*(rows.column(c).to_pylist() for c in ["_hoodie_commit_time", *FIELDS]), strict=True))


@pytest.mark.parametrize(
    ("table_type", "version"),
    [
        pytest.param("MERGE_ON_READ", 9, marks=pytest.mark.ci, id="mor-v9"),
        pytest.param("COPY_ON_WRITE", 9, id="cow-v9"),
        pytest.param("MERGE_ON_READ", 6, id="mor-v6"),
        pytest.param("COPY_ON_WRITE", 6, id="cow-v6"),
    ],
)
def test_incremental_ranges_equal_hudi(spark, tables_root: Path, table_type: str, version: int) -> None:
    path = str(tables_root / f"incr_{table_type.lower()}_v{version}")
    _write(spark, path, table_type, version, [("k1", 1, "a", "x"), ("k2", 1, "b", "y")], "upsert")
    _write(spark, path, table_type, version, [("k1", 2, "c", "x"), ("k3", 2, "d", "x")], "upsert")
    _write(spark, path, table_type, version, [("k2", 3, "e", "y"), ("k4", 3, "f", "y")], "upsert")
    _write(spark, path, table_type, version, [("k3", 4, "d", "x")], "delete")
    commits = _bounds(path)
    assert len(commits) == 4
    (r0, c0), (r1, c1), (r2, c2), _ = commits
    ranges = [("000", None), (r0, None), (c0, None), (r1, r2), (r0, c1), ("000", r1), ("000", c1), (c1, c2)]
    seen = set()
    for begin, end in ranges:
        options = {"hoodie.datasource.query.type": "incremental", BEGIN: begin}
        if end is not None:
            options[END] = end
        expected = _rows(spark.read.format("hudi").options(**options).load(path))
        got = _rows(spark.read.format("hudi-md").options(**options).load(path))
        assert got == expected, (begin, end)
        assert _python_rows(path, begin, end) == expected, (begin, end)
        seen.add(tuple(expected))
    # the ranges are told apart: the bounds' meaning decides what they hold
    assert len(seen) >= 4
