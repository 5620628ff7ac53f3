"""Incremental queries through ``spark.read.format("hudi-md")``.

``hoodie.datasource.query.type=incremental`` with ``hoodie.datasource.read.begin.instanttime``
(exclusive) and ``hoodie.datasource.read.end.instanttime`` (inclusive, default the latest commit)
returns the latest version (as of the end) of the records whose ``_hoodie_commit_time`` is a commit
in range. Every fixture table with two or more commits is compared on all columns with hudi-md's
Python incremental read and with hudi-rs (its snapshot as of the end, filtered on the commit time:
its own incremental query returns whole snapshots on v8/v9 tables, see the fixtures' README; on v6
tables its incremental query is compared too). Then: the listing holds only the file groups the
range wrote, projections, filters and both row paths, tables written by hudi-md (COW and MOR,
upserts and deletes), a range fixed when the DataFrame is created, and the errors.
"""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path
from typing import Any

import hudi
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from comparable import TXNS_MOR_WRITE_OPTIONS, arrow_rows, conf, spark_rows

import hudi_md
from hudi_md.spark.session import last_plan_counters
from table_model import region_options, region_rows

from fixtures import archives, writable_copy

QUERY_TYPE = "hoodie.datasource.query.type"
BEGIN = "hoodie.datasource.read.begin.instanttime"
END = "hoodie.datasource.read.end.instanttime"

COW_TXNS = "sample_table/cow/v9_txns_simple_meta.zip"  # region=<string>, 10 commits + 2 replacecommits
MOR_TXNS = "sample_table/mor/avro/v9_txns_simple_meta.zip"  # log files in earlier slices, then compacted
TRIPS = "quickstart_trips_table/mor/avro/v8_trips_8i3u1d.zip"  # city=<string>, updates + a delete
MOR_V6 = "sample_table/mor/parquet/v6_simplekeygen_nonhivestyle.zip"  # one slice with a log file


def bounds(path: str) -> dict[str, str]:
    """Each commit's instant time → the time an incremental range compares for it: its completion
    time on tables of version 8+, its instant time on version 6 (as Apache Hudi 1.2 reads them)."""
    table = hudi_md.open_table(path)
    writes = table.timeline.write_timeline()
    if table.table_version == 6:
        return {i.requested_time: i.requested_time for i in writes}
    return {i.requested_time: i.completion_time for i in writes}


def commits(path: str) -> list[str]:
    """The commits as range bounds, in order: ``(commits[0], commits[1]]`` holds the second."""
    return sorted(bounds(path).values())


def instant_of(path: str, bound: str) -> str:
    """The instant time (``_hoodie_commit_time``) of the commit whose range bound is ``bound``."""
    return next(t for t, b in bounds(path).items() if b == bound)


MULTI_COMMIT = [a for a in archives() if "_empty" not in a]  # two or more commits each


def incremental(spark: Any, path: str, begin: str | None, end: str | None = None, **options: str) -> Any:
    opts = {QUERY_TYPE: "incremental", **options}
    if begin is not None:
        opts[BEGIN] = begin
    if end is not None:
        opts[END] = end
    return spark.read.format("hudi-md").options(**opts).load(path)


def python_rows(path: str, begin: str | None, end: str | None = None) -> pa.Table:
    return hudi_md.open_table(path).read(query_type="incremental", start=begin, end=end)


def hudi_rs_rows(path: str, begin: str | None, end: str | None = None) -> pa.Table:
    """hudi-rs's snapshot as of the last commit in range (latest when ``end`` is None), rows whose
    commit's bound (:func:`bounds`) is in ``(begin, end]``."""
    in_range = {
        t for t, b in bounds(path).items() if (begin is None or b > begin) and (end is None or b <= end)
    }
    options = hudi.HudiReadOptions()
    if end is not None:
        options = options.with_as_of_timestamp(
            max([instant_of(path, b) for b in commits(path) if b <= end] or ["0"])
        )
    batches = hudi.HudiTableBuilder.from_base_uri(path).build().read(options)
    rows = pa.Table.from_batches(batches)
    return rows.filter(
        pc.is_in(rows.column("_hoodie_commit_time"), value_set=pa.array(sorted(in_range), pa.string()))
    )


def hudi_rs_incremental(path: str, begin: str) -> pa.Table:
    options = hudi.HudiReadOptions().with_query_type(hudi.HudiQueryType.Incremental)
    options = options.with_start_timestamp(begin)
    return pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(path).build().read(options))


def files_read(df: Any) -> set[str]:
    """The files the relation of ``df`` (a load) lists."""
    listed = df._jdf.queryExecution().analyzed().relation().location().inputFiles()
    return {Path(f.removeprefix("file:")).name for f in listed}


# --- fixture tables ----------------------------------------------------------------------------------


@pytest.mark.parametrize("archive", MULTI_COMMIT)
def test_equals_python_reader_and_hudi_rs(hudi_spark, table_path, archive: str) -> None:
    path = str(table_path(archive))
    instants = commits(path)
    ranges = [(instants[0], None)]
    if len(instants) > 2:
        ranges.append((instants[0], instants[-2]))
    for begin, end in ranges:
        df = incremental(hudi_spark, path, begin, end)
        got = spark_rows(df)
        assert got == arrow_rows(python_rows(path, begin, end), df.columns), (begin, end)
        assert got == arrow_rows(hudi_rs_rows(path, begin, end), df.columns), (begin, end)
        in_range = {instant_of(path, t) for t in instants if t > begin and (end is None or t <= end)}
        assert {r["_hoodie_commit_time"] for r in got} <= in_range
    if hudi_md.open_table(path).table_version == 6:
        df = incremental(hudi_spark, path, instants[0])
        assert spark_rows(df) == arrow_rows(hudi_rs_incremental(path, instants[0]), df.columns)


@pytest.mark.spark_smoke
@pytest.mark.parametrize("archive", [COW_TXNS, TRIPS])
def test_every_single_commit_range(hudi_spark, table_path, archive: str) -> None:
    """(previous, commit] for each commit; a record is in the range of every commit that wrote it."""
    path = str(table_path(archive))
    instants = commits(path)
    seen = 0
    for begin, end in zip(["000", *instants[:-1]], instants, strict=True):
        df = incremental(hudi_spark, path, begin, end)
        got = spark_rows(df)
        assert got == arrow_rows(python_rows(path, None if begin == "000" else begin, end), df.columns), end
        seen += len(got)
    assert seen >= hudi_md.open_table(path).read().num_rows > 0


def test_begin_000_is_every_commit(hudi_spark, table_path) -> None:
    for archive in (COW_TXNS, TRIPS):
        path = str(table_path(archive))
        df = incremental(hudi_spark, path, "000")
        snapshot = hudi_md.open_table(path).read()
        got = spark_rows(df)
        assert got == arrow_rows(snapshot, df.columns) == arrow_rows(python_rows(path, None), df.columns)


def test_begin_at_the_last_commit_is_empty(hudi_spark, table_path) -> None:
    path = str(table_path(MOR_TXNS))
    df = incremental(hudi_spark, path, commits(path)[-1])
    assert df.columns == hudi_spark.read.format("hudi-md").load(path).columns
    assert df.count() == 0 and df.collect() == []
    assert last_plan_counters(hudi_spark)["commits_in_range"] == 0
    assert df.inputFiles() == []


# --- the listing -------------------------------------------------------------------------------------


def test_lists_only_the_file_groups_written_in_range(hudi_spark, table_path) -> None:
    path = str(table_path(COW_TXNS))
    table = hudi_md.open_table(path)
    instants = commits(path)
    snapshot_files = files_read(hudi_spark.read.format("hudi-md").load(path))
    for begin, end in pairwise(instants):
        df = incremental(hudi_spark, path, begin, end)
        rows = df.collect()
        counters = last_plan_counters(hudi_spark)
        assert counters["commits_in_range"] == 1
        stats = table.timeline.metadata(table.timeline.get(instant_of(path, end)))["partitionToWriteStats"]
        written = {(partition or "", s["fileId"]) for partition, group in stats.items() for s in group}
        listed = files_read(df)
        assert len(listed) == counters["jvm_files"] <= len(written)
        assert all(name.split("_", 1)[0] in {f for _, f in written} for name in listed)
        assert all(r["_hoodie_commit_time"] == instant_of(path, end) for r in rows)
        if end == instants[-1]:
            assert listed <= snapshot_files
    df = incremental(hudi_spark, path, instants[0])
    assert "BatchScan" in df._jdf.queryExecution().executedPlan().toString()
    index = df._jdf.queryExecution().analyzed().relation().location().toString()
    assert f"incremental ({instants[0]}, {instants[-1]}]" in index


def test_merged_slices_are_filtered_by_the_planner(hudi_spark, table_path) -> None:
    """A range whose file groups have log files: merged on the executors, filtered there."""
    path = str(table_path(MOR_V6))
    begin = commits(path)[0]
    df = incremental(hudi_spark, path, begin)
    got = spark_rows(df)
    assert last_plan_counters(hudi_spark)["jvm_merged_slices"] >= 1
    assert got == arrow_rows(python_rows(path, begin), df.columns)
    assert 0 < len(got) < hudi_md.open_table(path).read().num_rows


# --- projections, filters, row paths -----------------------------------------------------------------


def _keeps(keep: Any, row: dict) -> bool:
    try:
        return bool(keep(row))
    except TypeError:  # a comparison with NULL: SQL drops the row
        return False


SELECTIONS = [
    (TRIPS, ["fare", "city"], None, None),
    (
        TRIPS,
        ["rider"],
        "city = 'san_francisco' OR fare > 20",
        lambda r: r["city"] == "san_francisco" or r["fare"] > 20,
    ),
    (COW_TXNS, ["txn_id", "region"], "region = 'eu'", lambda r: r["region"] == "eu"),
    (COW_TXNS, ["amount"], "amount > 100", lambda r: r["amount"] > 100),
    (MOR_V6, ["name", "byteField"], "byteField IN (10, 30)", lambda r: r["byteField"] in (10, 30)),
]


@pytest.mark.parametrize(
    ("archive", "columns", "where", "keep"), SELECTIONS, ids=[f"{s[0]}-{s[2]}" for s in SELECTIONS]
)
def test_projection_and_filters(
    hudi_spark, table_path, archive: str, columns: list[str], where: str | None, keep: Any
) -> None:
    """Columns without ``_hoodie_commit_time`` (read anyway for the range check, then dropped)."""
    path = str(table_path(archive))
    begin = commits(path)[0]
    df = incremental(hudi_spark, path, begin)
    expected = arrow_rows(python_rows(path, begin), df.columns)
    if where is not None:
        df = df.where(where)
        expected = [r for r in expected if _keeps(keep, r)]
    got = spark_rows(df.select(*columns))
    assert sorted(map(repr, got)) == sorted(repr({c: r[c] for c in columns}) for r in expected)
    assert df.count() == len(expected)
    assert len(expected) > 0


@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"spark.sql.parquet.enableVectorizedReader": "false"},
        {"spark.sql.codegen.wholeStage": "false"},
    ],
    ids=["vectorized", "no-vectorized-reader", "no-codegen"],
)
def test_row_paths(hudi_spark, table_path, settings: dict) -> None:
    for archive in (COW_TXNS, TRIPS):
        path = str(table_path(archive))
        begin = commits(path)[1]
        with conf(hudi_spark, **settings):
            df = incremental(hudi_spark, path, begin)
            assert "ColumnarToRow" not in df._jdf.queryExecution().executedPlan().toString()
            assert spark_rows(df) == arrow_rows(python_rows(path, begin), df.columns)


def test_option_names_and_values_are_case_insensitive(hudi_spark, table_path) -> None:
    path = str(table_path(COW_TXNS))
    begin, end = commits(path)[2], commits(path)[5]
    df = (
        hudi_spark.read.format("hudi_md")
        .option("Hoodie.Datasource.Query.Type", "INCREMENTAL")
        .option(BEGIN.upper(), begin)
        .option(END.upper(), end)
        .load(path)
    )
    assert spark_rows(df) == arrow_rows(python_rows(path, begin, end), df.columns)


def test_sql_table_options(hudi_spark, table_path) -> None:
    path = str(table_path(TRIPS))
    begin = commits(path)[0]
    hudi_spark.sql(
        f"CREATE OR REPLACE TEMPORARY VIEW trips_incr USING hudi_md OPTIONS "
        f"(path '{path}', `{QUERY_TYPE}` 'incremental', `{BEGIN}` '{begin}')"
    )
    df = hudi_spark.sql("SELECT * FROM trips_incr")
    assert spark_rows(df) == arrow_rows(python_rows(path, begin), df.columns)


@pytest.mark.spark_smoke
def test_hudi_table_changes(hudi_spark, table_path) -> None:
    """Apache Hudi's ``hudi_table_changes`` table function, by path and by table name: the same rows
    as the incremental read (hudi-rs's as the oracle), ``earliest`` for every commit, an end bound;
    the ``cdc`` query type refused naming ``latest_state``."""
    from pyspark.errors import IllegalArgumentException

    path = str(table_path(TRIPS))
    instants = commits(path)
    hudi_spark.sql(f"CREATE TABLE changes_t USING hudi_md LOCATION '{path}'")
    try:
        for ref in (path, "changes_t", "default.changes_t"):
            df = hudi_spark.sql(f"SELECT * FROM hudi_table_changes('{ref}', 'latest_state', '{instants[0]}')")
            assert spark_rows(df) == arrow_rows(hudi_rs_rows(path, instants[0]), df.columns), ref
        df = hudi_spark.sql("SELECT * FROM hudi_table_changes('changes_t', 'LATEST_STATE', 'earliest')")
        assert spark_rows(df) == arrow_rows(hudi_md.open_table(path).read(), df.columns)
        df = hudi_spark.sql(
            f"SELECT * FROM hudi_table_changes('{path}', 'latest_state', '{instants[0]}', '{instants[-2]}')"
        )
        assert spark_rows(df) == arrow_rows(hudi_rs_rows(path, instants[0], instants[-2]), df.columns)
        with pytest.raises(IllegalArgumentException, match="latest_state"):
            hudi_spark.sql(f"SELECT * FROM hudi_table_changes('{path}', 'cdc', 'earliest')").collect()
        with pytest.raises(IllegalArgumentException, match="no table nope"):
            hudi_spark.sql("SELECT * FROM hudi_table_changes('nope', 'latest_state', 'earliest')").collect()
    finally:
        hudi_spark.sql("DROP TABLE IF EXISTS changes_t")


# --- errors ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({}, f"{BEGIN} is required"),
        ({BEGIN: "  "}, f"{BEGIN} is required"),
        ({BEGIN: "yesterday"}, f"{BEGIN} must be an instant time.*'yesterday'"),
        ({BEGIN: "20240101", END: "soon"}, f"{END} must be an instant time.*'soon'"),
        ({BEGIN: "20250101000000000", END: "20240101000000000"}, f"{END} 20240101000000000 is before"),
        ({BEGIN: "20240101", "as.of.instant": "20250101"}, "as.of.instant cannot be combined with"),
    ],
    ids=["missing-begin", "blank-begin", "bad-begin", "bad-end", "end-before-begin", "as-of"],
)
def test_bad_options_fail_at_load_naming_the_option(
    hudi_spark, table_path, options: dict, match: str
) -> None:
    from pyspark.errors import IllegalArgumentException

    reader = hudi_spark.read.format("hudi-md").option(QUERY_TYPE, "incremental").options(**options)
    with pytest.raises(IllegalArgumentException, match=match):
        reader.load(str(table_path(COW_TXNS)))


# --- tables written by hudi-md -----------------------------------------------------------------------


def _options(table_type: str) -> dict[str, str]:
    return region_options(f"incr_{table_type.lower()}", table_type)


_rows = region_rows


@pytest.mark.spark_smoke
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_tables_written_by_hudi_md(hudi_spark, tmp_path, table_type: str) -> None:
    path = str(tmp_path / table_type.lower())
    opts = _options(table_type)
    instants = [
        hudi_md.write(_rows(range(30), 1, 0), path, operation="insert", options=opts),
        hudi_md.write(_rows([1, 2, 4, 7, 30, 31], 2, 100), path, operation="upsert", options=opts),
        hudi_md.write(_rows([2, 5, 31], 3, 0), path, operation="delete", options=opts),
        hudi_md.write(_rows([4, 8, 9, 32], 4, 200), path, operation="upsert", options=opts),
    ]
    assert instants == list(bounds(path))
    instants = commits(path)
    if table_type == "MERGE_ON_READ":
        slices = hudi_md.open_table(path).file_slices()
        assert any(slices.column("log_files").to_pylist())
    ranges = [("000", None), *pairwise(instants), (instants[0], instants[2])]
    for begin, end in ranges:
        df = incremental(hudi_spark, path, begin, end)
        got = spark_rows(df)
        start = None if begin == "000" else begin
        assert got == arrow_rows(python_rows(path, start, end), df.columns), (begin, end)
        assert got == arrow_rows(hudi_rs_rows(path, start, end), df.columns), (begin, end)
    # (instants[1], instants[2]]: the delete commit wrote no row
    assert incremental(hudi_spark, path, instants[1], instants[2]).count() == 0
    last = {r["id"]: r["value"] for r in spark_rows(incremental(hudi_spark, path, instants[2]))}
    assert last == {"id-004": 204, "id-008": 208, "id-009": 209, "id-032": 232}


def test_an_open_range_is_fixed_when_the_dataframe_is_created(hudi_spark, table_path, tmp_path) -> None:
    path = writable_copy(table_path(MOR_TXNS), tmp_path / "mor")
    instants = commits(path)
    begin = instants[-3]
    df = incremental(hudi_spark, path, begin)
    expected = arrow_rows(python_rows(path, begin), df.columns)
    data = hudi_md.open_table(path).read()
    data = data.drop_columns([c for c in data.column_names if c.startswith("_hoodie_")]).slice(0, 3)
    written = hudi_md.write(
        data,
        path,
        operation="upsert",
        options=TXNS_MOR_WRITE_OPTIONS,
    )
    got = spark_rows(df)  # planned and read after the write
    assert got == expected
    assert written not in {r["_hoodie_commit_time"] for r in got}
    later = incremental(hudi_spark, path, begin)
    assert written in {r["_hoodie_commit_time"] for r in spark_rows(later)}
    assert spark_rows(later) == arrow_rows(python_rows(path, begin), later.columns)
