"""`hudi-md` polish (issue 39): --version, text filters, one-line errors, `commits show`, progress
lines of the table services. Run as a user would: a subprocess of the CLI."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pyarrow as pa
import pytest

import hudi_md
from test_cli import run  # the one way the CLI tests run the command


def _options(table_type: str = "COPY_ON_WRITE") -> dict[str, str]:
    return {
        "hoodie.table.name": "trips",
        "hoodie.datasource.write.recordkey.field": "uuid",
        "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.table.type": table_type,
    }


ROWS = pa.table(
    {
        "uuid": ["a", "b", "c", "d", "e"],
        "city": ["sf", "sf", "nyc", "la", "nyc"],
        "fare": [10, 25, 30, 5, 22],
        "ts": [1, 1, 1, 1, 1],
        "note": ["x", None, "it's", None, "y"],
    }
)


@pytest.fixture(scope="module")
def trips(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("cli") / "trips")
    hudi_md.write(ROWS, path, operation="insert", options=_options())
    return path


def _uuids(path: str, *filters: str) -> list[str]:
    args = [arg for f in filters for arg in ("--filter", f)]
    out = json.loads(run("read", path, "--json", "--limit", "-1", *args).stdout)
    return sorted(r["uuid"] for r in out["rows"])


def _assert_one_line_error(proc: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hudi-md: "), proc.stderr
    for fragment in fragments:
        assert fragment in lines[0]


def test_version() -> None:
    proc = run("--version")
    assert proc.stdout.strip() == f"hudi-md {hudi_md.__version__}"


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        # the two forms that used to select nothing
        (["city = 'sf'"], ["a", "b"]),
        (["city = sf AND fare > 20"], ["b"]),
        # the documented form keeps working
        (["city = sf"], ["a", "b"]),
        (["city IN ('sf', la)"], ["a", "b", "d"]),
        (["city not in (sf, la)"], ["c", "e"]),
        (["fare BETWEEN 10 AND 25"], ["a", "b", "e"]),
        (["note IS NULL"], ["b", "d"]),
        (["note is not null"], ["a", "c", "e"]),
        (["note = 'it''s'"], ["c"]),
        (["city = la OR fare >= 30"], ["c", "d"]),
        (["(city = sf or city = nyc) and fare > 20"], ["b", "c", "e"]),
        (["not (city = sf or city = nyc)"], ["d"]),
        (["fare > 20.5"], ["b", "c", "e"]),
        (["city = sf", "fare < 20"], ["a"]),  # repeated filters must all hold
    ],
)
def test_read_filters(trips: str, filters: list[str], expected: list[str]) -> None:
    assert _uuids(trips, *filters) == expected


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("city = 'sf", "unterminated string at position 8"),
        ("city ~ sf", "expected an operator"),
        ("city = sf nyc", "unexpected 'nyc'"),
        ("nosuch = 1", "unknown column 'nosuch'"),
        ("fare > cheap", "cannot compare column 'fare'"),
    ],
)
def test_read_refuses_a_bad_filter_in_one_line(trips: str, text: str, fragment: str) -> None:
    proc = run("read", trips, "--filter", text, check=False)
    _assert_one_line_error(proc, fragment)
    assert proc.stdout == ""


def test_list_files_of_a_missing_partition_fails(trips: str) -> None:
    proc = run("metadata", "list-files", trips, "--partition", "nosuch", check=False)
    _assert_one_line_error(proc, "partition 'nosuch' does not exist")
    assert run("metadata", "list-files", trips, "--partition", "sf").stdout.strip()


def test_a_regular_file_as_the_table_path_fails_naming_it(tmp_path: Path) -> None:
    not_a_table = tmp_path / "notes.txt"
    not_a_table.write_text("hello")
    for args in (("table", "show"), ("metadata", "list-files"), ("commits", "show"), ("clean",)):
        _assert_one_line_error(run(*args, str(not_a_table), check=False), str(not_a_table))


def test_commits_show(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    hudi_md.write(ROWS, path, operation="insert", options=_options())
    changed = ROWS.filter(pa.compute.equal(ROWS["city"], "sf")).set_column(
        2, "fare", pa.array([11, 26], pa.int64())
    )
    hudi_md.write(changed, path, operation="upsert", options=_options())
    gone = ROWS.filter(pa.compute.equal(ROWS["uuid"], "d"))
    hudi_md.write(gone, path, operation="delete", options=_options())

    rows = json.loads(run("commits", "show", path, "--json").stdout)
    assert [r["operation"] for r in rows] == ["DELETE", "UPSERT", "INSERT"]
    assert [r["instant_time"] for r in rows] == sorted((r["instant_time"] for r in rows), reverse=True)
    delete, upsert, insert = rows
    assert (
        insert["records_inserted"] == 5 and insert["files_added"] == 3 and insert["partitions_written"] == 3
    )
    assert (
        upsert["records_updated"] == 2 and upsert["files_updated"] == 1 and upsert["partitions_written"] == 1
    )
    assert delete["records_deleted"] == 1
    assert all(r["bytes_written"] > 0 and r["errors"] == 0 and r["action"] == "commit" for r in rows)
    assert len(json.loads(run("--json", "commits", "show", path, "--limit", "1").stdout)) == 1
    text = run("commits", "show", path).stdout.splitlines()
    assert text[0].split()[:3] == ["instant", "action", "operation"] and len(text) == 4


def test_compaction_and_clean_report_progress_unless_quiet(tmp_path: Path) -> None:
    path = str(tmp_path / "mor")
    options = {**_options("MERGE_ON_READ"), "hoodie.compact.inline": "false"}
    hudi_md.write(ROWS, path, operation="insert", options=options)
    hudi_md.write(ROWS.slice(0, 2), path, operation="upsert", options=options)

    proc = run("compaction", path)
    assert proc.stdout.startswith("compaction ")
    progress = proc.stderr.splitlines()
    assert progress[0].startswith("compacting ")
    assert "1 file groups compacted" in progress[1]
    assert progress[-1].startswith("done in ") and progress[-1].endswith(" s")

    proc = run("clean", path, "--quiet")
    assert proc.stderr == ""
    proc = run("clean", path)
    assert proc.stderr.splitlines()[0].startswith("cleaning ")
    assert proc.stderr.splitlines()[-1].startswith("done in ")
