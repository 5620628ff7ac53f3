"""A table's schema through its commits (issue 36, part 4): reads as of an instant have that
instant's columns, ``metadata validate`` reports a schema that lost fields earlier commits had
(``schema_narrowed``), and the columns a write dropped are restored from a read before the damage
(docs/guide/writes.md, "Restoring columns a write dropped")."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner

import hudi_md
from hudi_md.cli import main as cli
from hudi_md.metadata.validate import validate_metadata_table

KEYS = {
    "hoodie.table.name": "t",
    "hoodie.datasource.write.recordkey.field": "uuid",
    "hoodie.datasource.write.partitionpath.field": "city",
    "hoodie.datasource.write.precombine.field": "ts",
}
DROP = {"hoodie.datasource.write.schema.allow.auto.evolution.column.drop": "true"}
FIRST = pa.table(
    {
        "uuid": ["a", "b", "c", "d"],
        "city": ["sf", "sf", "nyc", "nyc"],
        "ts": [1, 1, 1, 1],
        "fare": [1.0, 2.0, 3.0, 4.0],
        "tip": [0.1, 0.2, 0.3, 0.4],
        "rider": pa.array(
            [
                {"name": "x", "age": 1},
                {"name": "y", "age": 2},
                {"name": "z", "age": 3},
                {"name": "w", "age": 4},
            ],
            pa.struct([("name", pa.string()), ("age", pa.int64())]),
        ),
    }
)
TABLE_TYPES = ["COPY_ON_WRITE", "MERGE_ON_READ"]


def _options(table_type: str, **extra: str) -> dict[str, str]:
    return {**KEYS, "hoodie.datasource.write.table.type": table_type, **extra}


def _write(path: Path, data: pa.Table, table_type: str, operation: str = "upsert", **extra: str) -> str:
    hudi_md.write(data, str(path), operation=operation, options=_options(table_type, **extra))
    last = hudi_md.open_table(str(path)).timeline.write_timeline().last()
    assert last is not None
    return last.requested_time


def _data(rows: pa.Table) -> list[dict]:
    """The rows without the meta columns, by key."""
    keep = [c for c in rows.column_names if not c.startswith("_hoodie_")]
    return sorted(rows.select(keep).to_pylist(), key=lambda r: r["uuid"])


def _narrowed(path: Path, table_type: str) -> tuple[str, str]:
    """FIRST, then an upsert of one row without ``tip`` that drops it (Hudi's opt-in): the
    instants of both writes."""
    first = _write(path, FIRST, table_type)
    narrow = (
        FIRST.slice(0, 1)
        .drop_columns(["tip"])
        .set_column(2, "ts", pa.array([2]))
        .set_column(3, "fare", pa.array([10.0]))
    )
    second = _write(path, narrow, table_type, **DROP)
    return first, second


def _schema_narrowed(path: Path) -> list:
    return [d for d in validate_metadata_table(hudi_md.open_table(str(path))) if d.kind == "schema_narrowed"]


# --- reads as of an instant --------------------------------------------------------------------------


@pytest.mark.parametrize("table_type", TABLE_TYPES)
def test_a_read_as_of_an_instant_has_its_columns(tmp_path: Path, table_type: str) -> None:
    path = tmp_path / "t"
    first, _ = _narrowed(path, table_type)
    table = hudi_md.open_table(str(path))
    latest = table.read()
    assert "tip" not in latest.column_names
    assert "tip" not in table.schema.names
    old = table.read(as_of=first)
    assert _data(old) == _data(FIRST)  # every column of the first write, with its values
    assert table.state.schema_as_of(first).names == old.column_names
    # projections and filters on a column the table lost later
    assert table.read(as_of=first, columns=["uuid", "tip"]).sort_by("uuid").column("tip").to_pylist() == [
        0.1,
        0.2,
        0.3,
        0.4,
    ]
    assert table.read(as_of=first, filters=[("tip", ">", 0.25)]).num_rows == 2
    assert table.file_slices([("tip", ">", 0.25)], as_of=first).num_rows >= 1


def test_a_read_as_of_a_later_instant_has_the_later_schema(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _, second = _narrowed(path, "COPY_ON_WRITE")
    table = hudi_md.open_table(str(path))
    assert table.read(as_of=second).column_names == table.read().column_names
    assert table.state.schema_as_of(second) == table.schema


# --- validate: schema_narrowed -----------------------------------------------------------------------


@pytest.mark.parametrize("table_type", TABLE_TYPES)
def test_validate_reports_a_table_whose_schema_lost_a_column(tmp_path: Path, table_type: str) -> None:
    path = tmp_path / "t"
    first, second = _narrowed(path, table_type)
    diffs = validate_metadata_table(hudi_md.open_table(str(path)))
    assert [d.kind for d in diffs] == ["schema_narrowed"]
    detail = diffs[0].detail
    assert "lost tip:" in detail and f"commit {second} is the first" in detail
    assert f"the last with it: {first}" in detail and "allow.auto.evolution.column.drop" in detail
    assert "fare" not in detail and "rider" not in detail
    # the command: exit 1, the difference named
    result = CliRunner().invoke(cli, ["metadata", "validate", str(path), "--json"])
    assert result.exit_code == 1, result.output
    out = json.loads(result.stdout)
    assert [d["kind"] for d in out["differences"]] == ["schema_narrowed"]
    text = CliRunner().invoke(cli, ["metadata", "validate", str(path)])
    # stdout: the differences (the progress lines go to stderr)
    assert text.exit_code == 1 and text.stdout.startswith("schema_narrowed: the table's schema lost tip")


def test_validate_names_each_dropping_commit_and_nested_fields(tmp_path: Path) -> None:
    path = tmp_path / "t"
    first, second = _narrowed(path, "COPY_ON_WRITE")
    # a second narrowing: `fare` and the struct field `rider.age` go at once
    rider = pa.array([{"name": "x2"}], pa.struct([("name", pa.string())]))
    third = _write(
        path,
        pa.table({"uuid": ["a"], "city": ["sf"], "ts": [3], "rider": rider}),
        "COPY_ON_WRITE",
        **DROP,
    )
    diffs = _schema_narrowed(path)
    assert len(diffs) == 2, [d.detail for d in diffs]
    assert "lost tip:" in diffs[0].detail and f"commit {second} is the first" in diffs[0].detail
    assert "lost fare, rider.age:" in diffs[1].detail and f"commit {third} is the first" in diffs[1].detail
    assert f"the last with them: {second}" in diffs[1].detail
    table = hudi_md.open_table(str(path))
    assert table.read(as_of=second).sort_by("uuid").column("fare").to_pylist() == [10.0, 2.0, 3.0, 4.0]
    assert table.read(as_of=first).sort_by("uuid").column("rider").to_pylist()[0] == {"name": "x", "age": 1}


def test_a_dropped_struct_column_is_named_once(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _write(path, FIRST, "COPY_ON_WRITE")
    _write(path, FIRST.drop_columns(["rider"]), "COPY_ON_WRITE", **DROP)
    diffs = _schema_narrowed(path)
    assert len(diffs) == 1 and "lost rider:" in diffs[0].detail, [d.detail for d in diffs]


@pytest.mark.parametrize("table_type", TABLE_TYPES)
def test_a_table_that_only_widened_is_not_narrowed(tmp_path: Path, table_type: str) -> None:
    path = tmp_path / "t"
    _write(path, FIRST.drop_columns(["tip"]), table_type)
    _write(path, FIRST, table_type)  # `tip` added
    _write(path, FIRST.slice(0, 1).append_column("extra", pa.array(["e"])), table_type)  # `extra` added
    _write(path, FIRST.slice(1, 1).select(["uuid", "city", "ts"]), table_type, operation="delete")
    assert validate_metadata_table(hudi_md.open_table(str(path))) == []


def test_commits_without_a_schema_are_skipped(tmp_path: Path) -> None:
    """A commit that recorded no schema (``extraMetadata.schema`` empty) says nothing of the
    table's columns: neither a narrowing nor the latest schema."""
    path = tmp_path / "t"
    _write(path, FIRST, "COPY_ON_WRITE")
    _write(path, FIRST.slice(0, 1), "COPY_ON_WRITE")
    table = hudi_md.open_table(str(path))
    last = table.timeline.write_timeline().last()
    assert last is not None
    # the last commit (it has every column) records no schema: the one before it is the latest
    _write(path, FIRST.slice(0, 1).drop_columns(["tip"]), "COPY_ON_WRITE", **DROP)
    _forget_schema(path / ".hoodie" / "timeline" / last.file_name)
    diffs = _schema_narrowed(path)
    assert len(diffs) == 1 and f"the last with it: {last.requested_time}" not in diffs[0].detail
    assert "lost tip:" in diffs[0].detail
    # the narrowing commit records none: no narrowing seen
    narrowing = hudi_md.open_table(str(path)).timeline.write_timeline().last()
    assert narrowing is not None
    _forget_schema(path / ".hoodie" / "timeline" / narrowing.file_name)
    assert _schema_narrowed(path) == []


def _forget_schema(instant_file: Path) -> None:
    """Rewrite a completed instant (Avro) with an empty ``extraMetadata.schema``."""
    import fastavro

    with instant_file.open("rb") as f:
        reader = fastavro.reader(f)
        schema, records = reader.writer_schema, list(reader)
    for record in records:
        record["extraMetadata"]["schema"] = ""
    with instant_file.open("wb") as f:
        fastavro.writer(f, schema, records)


# --- restoring the columns ----------------------------------------------------------------------------


@pytest.mark.parametrize("table_type", TABLE_TYPES)
def test_restoring_the_columns_a_write_dropped(tmp_path: Path, table_type: str) -> None:
    """The plain recipe of docs/guide/writes.md ("Restoring columns a write dropped"): read as of the
    last instant before the damage, upsert those rows back with the full schema. Rows not changed
    since come back whole; a row updated after the damage keeps its newer values (its ordering
    value is higher) and the dropped column stays null; a row deleted after the damage comes back.
    Joining the old columns onto the latest rows restores them all and keeps later updates and
    deletes."""
    path = tmp_path / "t"
    first, _ = _narrowed(path, table_type)  # a: updated by the damaging write itself
    # after the damage: b updated, d deleted
    update = FIRST.slice(1, 1).drop_columns(["tip"])
    _write(
        path, update.set_column(2, "ts", pa.array([5])).set_column(3, "fare", pa.array([20.0])), table_type
    )
    _write(path, pa.table({"uuid": ["d"], "city": ["nyc"], "ts": [5]}), table_type, operation="delete")
    table = hudi_md.open_table(str(path))
    columns = FIRST.column_names
    before = table.read(as_of=first, columns=columns)
    latest = _data(table.read())

    # the plain recipe
    plain = tmp_path / "plain"
    import shutil

    shutil.copytree(path, plain)
    _write(plain, before, table_type)
    got = {r["uuid"]: r for r in _data(hudi_md.open_table(str(plain)).read())}
    assert got["c"] == _data(FIRST)[2]  # unchanged since: every column back, old values
    assert got["a"]["fare"] == 10.0 and got["a"]["tip"] is None  # updated since: newer row wins
    assert got["b"]["fare"] == 20.0 and got["b"]["tip"] is None
    assert got["d"] == _data(FIRST)[3]  # deleted since: back again
    assert _schema_narrowed(plain) == []

    # the careful recipe: the latest rows, with the dropped columns taken from before the damage
    now = hudi_md.open_table(str(path)).read(columns=[c for c in columns if c != "tip"])
    old_tip = dict(zip(before.column("uuid").to_pylist(), before.column("tip").to_pylist(), strict=True))
    tips = pa.array([old_tip.get(k) for k in now.column("uuid").to_pylist()], pa.float64())
    _write(path, now.append_column("tip", tips).select(columns), table_type)
    got = {r["uuid"]: r for r in _data(hudi_md.open_table(str(path)).read())}
    assert sorted(got) == ["a", "b", "c"]  # d stays deleted
    for row in latest:
        assert {k: v for k, v in got[row["uuid"]].items() if k != "tip"} == row
    assert {k: r["tip"] for k, r in got.items()} == {"a": 0.1, "b": 0.2, "c": 0.3}
    assert _schema_narrowed(path) == []


def test_under_commit_time_ordering_the_plain_recipe_reverts_later_updates(tmp_path: Path) -> None:
    """With ``COMMIT_TIME_ORDERING`` the restoring upsert always wins: a row updated after the
    damage goes back to its values before it (docs/guide/writes.md says to join instead)."""
    path = tmp_path / "t"
    mode = {"hoodie.write.record.merge.mode": "COMMIT_TIME_ORDERING"}
    first = _write(path, FIRST, "COPY_ON_WRITE", **mode)
    narrow = FIRST.slice(0, 1).drop_columns(["tip"]).set_column(3, "fare", pa.array([10.0]))
    _write(path, narrow, "COPY_ON_WRITE", **mode, **DROP)
    before = hudi_md.open_table(str(path)).read(as_of=first, columns=FIRST.column_names)
    _write(path, before, "COPY_ON_WRITE", **mode)
    assert _data(hudi_md.open_table(str(path)).read()) == _data(FIRST)  # a's fare 10.0 is gone
