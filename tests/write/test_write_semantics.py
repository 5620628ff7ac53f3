"""What a write does to a table's columns and which record wins (issue 36), for the local
(pyarrow) writer: each case of ``merge_cases.py`` must leave Apache Hudi 1.2's rows (recorded there,
re-checked against Hudi's bundle by ``integration/test_merge_findings.py``), read by hudi-md
through the MDT and by listing and by hudi-rs; a batch Hudi refuses is refused with a typed error
and leaves the table byte for byte as it was. Then the write API's own rules: the operation given
as an option, the data types ``hudi_md.write`` takes, refused type changes before the instant."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import hudi_md
from hudi_md.errors import (
    HudiMdError,
    IncompatibleSchemaChangeError,
    InvalidOptionError,
    MissingSchemaFieldError,
    RecordMergeError,
    SchemaEvolutionError,
)
from hudi_md.metadata.validate import validate_metadata_table
from table_model import hudi_rs_table

from merge_cases import CASES, Case, assert_rows, listing

REFUSALS = {
    "reproduction": MissingSchemaFieldError,
    "4": RecordMergeError,
    "types": IncompatibleSchemaChangeError,
}


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_the_arrow_writer_leaves_apache_hudis_rows(tmp_path: Path, case: Case) -> None:
    path = tmp_path / "t"
    options = case.write_options(record_index=True)
    for n, batch in enumerate(case.batches):
        before = listing(path)
        if batch.refused:
            with pytest.raises(REFUSALS[case.finding]):
                hudi_md.write(batch.arrow(), str(path), operation=batch.op, options=options)
            assert listing(path) == before, f"batch {n} was refused but the table changed"
        else:
            hudi_md.write(batch.arrow(), str(path), operation=batch.op, options=options)
    assert_rows(path, case, record_index=True)
    assert validate_metadata_table(hudi_md.open_table(str(path))) == []


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES if c.finding in ("2", "6")])
def test_the_same_without_the_record_index(tmp_path: Path, case: Case) -> None:
    """Tagging by the slices' keys (Hudi's default index) routes a key re-inserted into a MOR
    table to the file group whose base file still holds it (finding 6)."""
    path = tmp_path / "t"
    for batch in case.batches:
        hudi_md.write(batch.arrow(), str(path), operation=batch.op, options=case.write_options())
    assert_rows(path, case)
    if case.table_type == "COPY_ON_WRITE":
        return  # the delete removed the row: a re-insert is a new record (no small-file handling)
    view = hudi_md.open_table(str(path)).state.file_system_view()
    groups = {s.file_id for s in view.latest_file_slices(["p0"])}
    assert len(groups) == 1, f"a re-inserted key started a new file group: {groups}"


def test_the_issues_reproduction_keeps_every_column(tmp_path: Path) -> None:
    """Issue 36's sequence, verbatim: the narrow upsert is refused naming ``tip``; the keys-only
    delete keeps ``fare`` and ``tip`` of the surviving rows, and the schema keeps both."""
    path = str(tmp_path / "t")
    o = {
        "hoodie.table.name": "t",
        "hoodie.datasource.write.recordkey.field": "uuid",
        "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.precombine.field": "ts",
    }
    full = {
        "uuid": ["a", "b", "c"],
        "city": ["sf"] * 3,
        "ts": [1, 1, 1],
        "fare": [1.0, 2.0, 3.0],
        "tip": [0.1, 0.2, 0.3],
    }
    hudi_md.write(pa.table(full), path, operation="upsert", options=o)
    with pytest.raises(MissingSchemaFieldError, match="tip") as refused:
        hudi_md.write(
            pa.table({"uuid": ["a"], "city": ["sf"], "ts": [2], "fare": [10.0]}),
            path,
            operation="upsert",
            options=o,
        )
    assert refused.value.fields == ["tip"]
    hudi_md.write(pa.table({"uuid": ["c"], "city": ["sf"], "ts": [5]}), path, operation="delete", options=o)
    table = hudi_md.open_table(path)
    assert {"fare", "tip"} <= set(table.schema.names)
    rows = sorted((r["uuid"], r["fare"], r["tip"]) for r in table.read().to_pylist())
    assert rows == [("a", 1.0, 0.1), ("b", 2.0, 0.2)]


def test_missing_columns_under_hudis_opt_ins(tmp_path: Path) -> None:
    """``hoodie.write.set.null.for.missing.columns`` writes nulls into the missing column (the
    column stays); ``...allow.auto.evolution.column.drop`` drops it, as Hudi does."""
    base = {
        "hoodie.table.name": "t",
        "hoodie.datasource.write.recordkey.field": "k",
        "hoodie.datasource.write.partitionpath.field": "p",
        "hoodie.datasource.write.precombine.field": "ts",
    }
    first = pa.table({"k": ["a", "b"], "p": ["x", "x"], "ts": [1, 1], "v": [1.0, 2.0]})
    narrow = pa.table({"k": ["a"], "p": ["x"], "ts": [2]})
    kept = str(tmp_path / "kept")
    hudi_md.write(first, kept, options=base)
    hudi_md.write(narrow, kept, options={**base, "hoodie.write.set.null.for.missing.columns": "true"})
    rows = sorted((r["k"], r["v"]) for r in hudi_md.open_table(kept).read().to_pylist())
    assert rows == [("a", None), ("b", 2.0)]
    dropped = str(tmp_path / "dropped")
    hudi_md.write(first, dropped, options=base)
    option = "hoodie.datasource.write.schema.allow.auto.evolution.column.drop"
    hudi_md.write(narrow, dropped, options={**base, option: "true"})
    assert "v" not in hudi_md.open_table(dropped).schema.names


BASE = {
    "hoodie.table.name": "t",
    "hoodie.datasource.write.recordkey.field": "k",
    "hoodie.datasource.write.partitionpath.field": "p",
    "hoodie.datasource.write.precombine.field": "ts",
}


@pytest.mark.parametrize(
    ("stored", "incoming", "outcome"),
    [
        (pa.int32(), pa.int64(), pa.int64()),  # promoted: the table's column becomes long
        (pa.int64(), pa.float64(), pa.float64()),
        (pa.float64(), pa.string(), pa.string()),
        (pa.float64(), pa.int32(), pa.float64()),  # converted: the table keeps double
        (pa.int64(), pa.string(), pa.string()),
        (pa.float64(), pa.bool_(), IncompatibleSchemaChangeError),
        (pa.string(), pa.int64(), pa.string()),  # converted: long values written as strings
    ],
)
def test_type_changes(tmp_path: Path, stored: pa.DataType, incoming: pa.DataType, outcome: Any) -> None:
    path = tmp_path / "t"
    values = {pa.int32(): 7, pa.int64(): 7, pa.float64(): 7.5, pa.string(): "7", pa.bool_(): True}
    first = pa.table(
        {"k": ["a", "b"], "p": ["x", "x"], "ts": [1, 1], "v": pa.array([values[stored]] * 2, stored)}
    )
    hudi_md.write(first, str(path), options=BASE)
    second = pa.table({"k": ["a"], "p": ["x"], "ts": [2], "v": pa.array([values[incoming]], incoming)})
    if isinstance(outcome, type):
        before = listing(path)
        with pytest.raises(outcome, match=r"column v") as refused:
            hudi_md.write(second, str(path), options=BASE)
        assert str(stored) in str(refused.value) or "double" in str(refused.value)
        assert listing(path) == before
        return
    hudi_md.write(second, str(path), options=BASE)
    table = hudi_md.open_table(str(path))
    assert table.schema.field("v").type == outcome
    got = {r["k"]: r["v"] for r in table.read().to_pylist()}
    rs = {r["k"]: r["v"] for r in hudi_rs_table(str(path)).to_pylist()}
    assert got == rs
    assert got["a"] == pa.array([values[incoming]], incoming).cast(outcome)[0].as_py()


def test_the_operation_option(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    data = pa.table({"k": ["a", "b"], "p": ["x", "y"], "ts": [1, 1], "v": [1.0, 2.0]})
    hudi_md.write(data, path, options=BASE)
    overwrite = pa.table({"k": ["c"], "p": ["z"], "ts": [1], "v": [3.0]})
    hudi_md.write(
        overwrite, path, options={**BASE, "hoodie.datasource.write.operation": "insert_overwrite_table"}
    )
    assert [r["k"] for r in hudi_md.open_table(path).read().to_pylist()] == ["c"]
    meta = hudi_md.open_table(path).timeline
    assert meta.metadata(meta.completed().last())["operationType"] == "INSERT_OVERWRITE_TABLE"
    before = listing(Path(path))
    with pytest.raises(InvalidOptionError, match="upsret"):
        hudi_md.write(data, path, options={**BASE, "hoodie.datasource.write.operation": "upsret"})
    with pytest.raises(InvalidOptionError, match="disagree"):
        hudi_md.write(
            data, path, operation="insert", options={**BASE, "hoodie.datasource.write.operation": "upsert"}
        )
    assert listing(Path(path)) == before


def test_data_types_the_writer_takes(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    path = str(tmp_path / "t")
    hudi_md.write(pd.DataFrame({"k": ["a"], "p": ["x"], "ts": [1], "v": [1.0]}), path, options=BASE)
    batch = pa.record_batch({"k": ["b"], "p": ["x"], "ts": [1], "v": [2.0]})
    hudi_md.write(batch, path, options=BASE)
    reader = pa.RecordBatchReader.from_batches(
        batch.schema, [pa.record_batch({"k": ["c"], "p": ["x"], "ts": [1], "v": [3.0]})]
    )
    hudi_md.write(reader, path, operation="insert", options=BASE)
    try:
        import polars as pl
    except ImportError:
        pl = None
    if pl is not None:
        hudi_md.write(pl.DataFrame({"k": ["d"], "p": ["x"], "ts": [1], "v": [4.0]}), path, options=BASE)
    expected = ["a", "b", "c"] + (["d"] if pl is not None else [])
    assert sorted(r["k"] for r in hudi_md.open_table(path).read().to_pylist()) == expected
    with pytest.raises(InvalidOptionError, match="dict"):
        hudi_md.write({"k": ["e"]}, path, options=BASE)
    with pytest.raises(HudiMdError):
        hudi_md.write([1, 2], path, options=BASE)


def _stream(path: Path, batches: int, seen: list[int], bad_at: int | None = None) -> pa.RecordBatchReader:
    """A stream of ``batches`` batches of 2,000 rows; before making each batch it records how many
    data files the table has (so a test sees whether earlier batches were written already)."""
    schema = pa.schema([("k", pa.string()), ("p", pa.string()), ("ts", pa.int64()), ("v", pa.string())])

    def gen():
        for b in range(batches):
            seen.append(len(list(path.rglob("*.parquet"))) if path.exists() else 0)
            keys = [f"k{b:03d}-{i:05d}" for i in range(2000)]
            values = ["x" * 200] * 2000 if b != bad_at else ["not a number"] * 2000
            yield pa.record_batch([keys, ["x"] * 2000, [b] * 2000, values], schema=schema)

    return pa.RecordBatchReader.from_batches(schema, gen())


@pytest.mark.parametrize("operation", ["insert", "bulk_insert"])
def test_a_record_batch_reader_is_written_as_it_is_read(tmp_path: Path, operation: str) -> None:
    path = tmp_path / "t"
    options = {**BASE, "hoodie.parquet.max.file.size": str(1024 * 1024)}
    seen: list[int] = []
    hudi_md.write(_stream(path, 8, seen), str(path), operation=operation, options=options)
    # later batches were made after earlier chunks' files were on storage: the stream was not read whole
    assert seen[0] == 0 and seen[-1] > 0, seen
    table = hudi_md.open_table(str(path))
    assert table.read(columns=["k"]).num_rows == 16000
    assert len(table.timeline.completed().instants) == 1
    assert sorted(hudi_rs_table(str(path)).column("k").to_pylist()) == sorted(
        f"k{b:03d}-{i:05d}" for b in range(8) for i in range(2000)
    )
    assert validate_metadata_table(table) == []


def test_a_stream_the_table_refuses_late_leaves_nothing(tmp_path: Path) -> None:
    """A value in the stream's third batch does not convert to the table's type (a string into a
    date column): the write is refused after two chunks' files were written, and those go too."""
    import datetime

    path = tmp_path / "t"
    first = pa.table({"k": ["a"], "p": ["x"], "ts": [1], "v": [datetime.date(2026, 1, 1)]})
    hudi_md.write(first, str(path), options=BASE)
    before = listing(path)
    options = {**BASE, "hoodie.parquet.max.file.size": str(64 * 1024)}
    seen: list[int] = []
    schema = pa.schema([("k", pa.string()), ("p", pa.string()), ("ts", pa.int64()), ("v", pa.string())])

    def gen():
        for b in range(3):
            seen.append(len(list(path.rglob("*.parquet"))))
            value = "2026-02-03" if b < 2 else "not a date"
            yield pa.record_batch(
                [[f"k{b}-{i}" for i in range(2000)], ["x"] * 2000, [b] * 2000, [value] * 2000], schema=schema
            )

    with pytest.raises(SchemaEvolutionError, match="column v"):
        hudi_md.write(
            pa.RecordBatchReader.from_batches(schema, gen()), str(path), operation="insert", options=options
        )
    assert seen[-1] > seen[0], "the first chunks were written before the bad batch was read"
    assert listing(path) == before
    with pytest.raises(InvalidOptionError, match="read_all"):
        hudi_md.write(_stream(path, 3, []), str(path), operation="upsert", options=options)
    assert listing(path) == before


def test_a_mor_reinsert_after_a_delete_operation_is_what_every_reader_returns(tmp_path: Path) -> None:
    """Where Apache Hudi 1.2 is wrong (docs/guide/writes.md, "Which record wins"): after a ``delete`` of a key
    whose base row has ``ts=5``, a re-insert with ``ts=3`` is what hudi-md, by listing and hudi-rs
    read (Hudi's MOR reader would bring back the deleted base row)."""
    path = tmp_path / "t"
    options = {**BASE, "hoodie.datasource.write.table.type": "MERGE_ON_READ"}
    hudi_md.write(
        pa.table({"k": ["a", "b"], "p": ["x", "x"], "ts": [5, 5], "v": ["a5", "b5"]}),
        str(path),
        options=options,
    )
    hudi_md.write(pa.table({"k": ["a"], "p": ["x"]}), str(path), operation="delete", options=options)
    hudi_md.write(pa.table({"k": ["a"], "p": ["x"], "ts": [3], "v": ["a3"]}), str(path), options=options)
    expected = [("a", 3, "a3"), ("b", 5, "b5")]
    for rows in (
        hudi_md.open_table(str(path)).read().to_pylist(),
        hudi_md.open_table(str(path), {"hoodie.metadata.enable": "false"}).read().to_pylist(),
        hudi_rs_table(str(path)).to_pylist(),
    ):
        assert sorted((r["k"], r["ts"], r["v"]) for r in rows) == expected


def test_compaction_keeps_every_column_the_writes_evolved(tmp_path: Path) -> None:
    """MOR: a column added, a type promoted (int -> long) and a keys-only delete in the logs;
    inline compaction then rewrites the base files with every column (hudi-md and hudi-rs read
    the same rows before and after), and Apache Hudi's rule holds for a later rewrite too."""
    path = str(tmp_path / "t")
    options = {
        **BASE,
        "hoodie.datasource.write.table.type": "MERGE_ON_READ",
        "hoodie.compact.inline": "true",
        "hoodie.compact.inline.max.delta.commits": "3",
    }
    first = pa.table(
        {
            "k": ["a", "b", "c"],
            "p": ["x"] * 3,
            "ts": [1, 1, 1],
            "n": pa.array([1, 2, 3], pa.int32()),
            "v": ["a", "b", "c"],
        }
    )
    hudi_md.write(first, path, options=options)
    wider = pa.table(
        {
            "k": ["a"],
            "p": ["x"],
            "ts": [2],
            "n": pa.array([2**40], pa.int64()),
            "v": ["a2"],
            "extra": ["e"],
        }
    )
    hudi_md.write(wider, path, options=options)
    hudi_md.write(pa.table({"k": ["c"], "p": ["x"]}), path, operation="delete", options=options)
    expected = [("a", 2, 2**40, "a2", "e"), ("b", 1, 2, "b", None)]

    def rows(t: pa.Table) -> list[tuple]:
        return sorted((r["k"], r["ts"], r["n"], r["v"], r["extra"]) for r in t.to_pylist())

    table = hudi_md.open_table(path)
    assert table.timeline.completed().last().action == "commit", "inline compaction ran"
    assert table.schema.field("n").type == pa.int64()
    assert rows(table.read()) == expected
    assert rows(hudi_rs_table(path)) == expected
    slices = table.state.file_system_view().latest_file_slices(["x"])
    assert all(not s.log_files for s in slices)
    import pyarrow.parquet as pq

    for s in slices:
        names = pq.read_schema(str(Path(path) / s.base_file.path)).names
        assert {"n", "v", "extra"} <= set(names), names
    assert validate_metadata_table(table) == []
