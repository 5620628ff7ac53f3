"""MOR snapshot reads through ``spark.read.format("hudi-md")``.

Base-only slices are read by Spark's Parquet reader; slices with log files are listed as one
synthetic file each and merged on the executor by the planner process (``read_slice``), arriving
as Arrow batches (vectorized scans) or rows. Every MOR fixture table is compared on all columns
with hudi-md's Python reader and with hudi-rs, then filters, time travel, projections (with nested
column pruning), both reader paths, type checking and a table written right before the read.
"""

from __future__ import annotations

import datetime
import decimal
import shutil
from typing import Any

import hudi
import pyarrow as pa
import pytest
from comparable import TXNS_MOR_WRITE_OPTIONS, arrow_rows, conf, spark_rows

import hudi_md
from hudi_md.spark.session import last_plan_counters

from fixtures import archives, writable_copy

MOR = [a for a in archives() if "/mor/" in a]
TRIPS = "quickstart_trips_table/mor/avro/v8_trips_8i3u1d.zip"  # city=<string>, updates + a delete
NESTED = "sample_table/mor/parquet/v6_complexkeygen_hivestyle.zip"  # byteField/shortField, nested types
NONPART_ROLLBACK = "sample_table/mor/parquet/v6_nonpartitioned_rollback.zip"  # one slice, with logs
TXNS = "sample_table/mor/avro/v9_txns_simple_meta.zip"  # compacted now; earlier instants have logs


def hudi_rs_read(path: str) -> pa.Table:
    batches = hudi.HudiTableBuilder.from_base_uri(path).build().read()
    return pa.Table.from_batches(batches)


def load(spark: Any, path: str, **options: str) -> Any:
    return spark.read.format("hudi-md").options(**options).load(path)


def slices_with_logs(path: str, as_of: str | None = None) -> int:
    slices = hudi_md.open_table(path).file_slices(as_of=as_of)
    return sum(1 for logs in slices.column("log_files").to_pylist() if logs)


# --- whole tables ------------------------------------------------------------------------------------


@pytest.mark.parametrize("archive", MOR)
def test_snapshot_equals_python_reader_and_hudi_rs(hudi_spark, table_path, archive: str) -> None:
    path = str(table_path(archive))
    df = load(hudi_spark, path)
    got = spark_rows(df)
    assert last_plan_counters(hudi_spark)["jvm_merged_slices"] == slices_with_logs(path)
    ours = hudi_md.open_table(path).read()
    rs = hudi_rs_read(path)
    assert sorted(df.columns) == sorted(ours.column_names) == sorted(rs.column_names)
    assert got == arrow_rows(ours, df.columns)
    assert got == arrow_rows(rs, df.columns)
    assert len(got) > 0


def test_merged_slices_are_listed_as_one_unsplittable_file(hudi_spark, table_path) -> None:
    path = str(table_path(NESTED))
    df = load(hudi_spark, path)
    slices = hudi_md.open_table(path).file_slices()
    logs = [f for fs in slices.column("log_files").to_pylist() for f in fs]
    listed = df._jdf.queryExecution().analyzed().relation().location().inputFiles()
    assert logs and all(any(f.endswith(lf) for f in listed) for lf in logs)
    names = {r[0] for r in df.selectExpr("input_file_name()").distinct().collect()}
    merged = [n for n in names if "/.hudi-md-slice/" in n]
    assert len(merged) == slices_with_logs(path) == 1
    # small splits cut base files into pieces; the merged slice must stay whole
    smallest = min(
        b + sum(logs)
        for b, logs in zip(
            slices.column("base_file_size").to_pylist(),
            slices.column("log_file_sizes").to_pylist(),
            strict=True,
        )
    )
    small = {"spark.sql.files.maxPartitionBytes": str(smallest // 3), "spark.sql.files.openCostInBytes": "0"}
    with conf(hudi_spark, **small):
        split = load(hudi_spark, path)
        assert split.rdd.getNumPartitions() > len(slices)
        assert spark_rows(split) == spark_rows(df)


# --- reader paths ------------------------------------------------------------------------------------


@pytest.mark.spark_smoke
@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"spark.sql.parquet.enableVectorizedReader": "false"},
        {"spark.sql.codegen.wholeStage": "false"},
        {"spark.sql.parquet.enableNestedColumnVectorizedReader": "false"},
    ],
    ids=["vectorized", "no-vectorized-reader", "no-codegen", "no-nested-vectorized"],
)
@pytest.mark.parametrize("archive", [NESTED, TRIPS])
def test_columnar_and_row_paths(hudi_spark, table_path, archive: str, settings: dict) -> None:
    path = str(table_path(archive))
    expected = arrow_rows(hudi_md.open_table(path).read(), load(hudi_spark, path).columns)
    with conf(hudi_spark, **settings):
        df = load(hudi_spark, path)
        columnar = "ColumnarToRow" in df._jdf.queryExecution().executedPlan().toString()
        assert spark_rows(df) == expected
    nested_only = "spark.sql.parquet.enableNestedColumnVectorizedReader" in settings
    assert columnar == (not settings or (nested_only and archive == TRIPS))


# --- filters, projections, time travel ---------------------------------------------------------------


FILTERS = [
    (
        TRIPS,
        "city = 'san_francisco' AND fare > 20",
        lambda r: r["city"] == "san_francisco" and r["fare"] > 20,
    ),
    (
        TRIPS,
        "city <> 'chennai' OR rider = 'rider-A'",
        lambda r: r["city"] != "chennai" or r["rider"] == "rider-A",
    ),
    (NESTED, "byteField = 10 AND id > 1", lambda r: r["byteField"] == 10 and r["id"] > 1),
    (NESTED, "shortField >= 100 AND name LIKE '%a%'", lambda r: r["shortField"] >= 100 and "a" in r["name"]),
    (
        "sample_table/mor/parquet/v6_simplekeygen_nonhivestyle.zip",
        "byteField IN (10, 30) AND isActive",
        lambda r: r["byteField"] in (10, 30) and r["isActive"],
    ),
]


@pytest.mark.parametrize(("archive", "where", "keep"), FILTERS, ids=[f[1] for f in FILTERS])
def test_filters_equal_the_python_read_filtered(
    hudi_spark, table_path, archive: str, where: str, keep
) -> None:
    path = str(table_path(archive))
    df = load(hudi_spark, path)
    expected = [r for r in arrow_rows(hudi_md.open_table(path).read(), df.columns) if _keeps(keep, r)]
    got = spark_rows(df.where(where))
    assert got == expected
    assert len(got) > 0


def _keeps(keep, row: dict) -> bool:
    try:
        return bool(keep(row))
    except TypeError:  # a comparison with NULL: SQL drops the row
        return False


def test_partition_filter_prunes_merged_slices(hudi_spark, table_path) -> None:
    path = str(table_path(TRIPS))
    all_slices = load(hudi_spark, path)
    all_slices.collect()
    total = last_plan_counters(hudi_spark)
    cities = [r[0] for r in all_slices.select("city").distinct().collect()]
    merged_total = total["jvm_merged_slices"]
    assert merged_total > 0
    seen = 0
    for city in cities:
        load(hudi_spark, path).where(f"city = '{city}'").collect()
        counters = last_plan_counters(hudi_spark)
        assert counters["jvm_partitions"] == 1
        seen += counters["jvm_merged_slices"]
    assert seen == merged_total


@pytest.mark.parametrize(
    ("archive", "columns"),
    [
        (TRIPS, ["fare", "city"]),
        (TRIPS, ["city"]),
        (NESTED, ["name", "byteField"]),
        (NESTED, ["structField", "shortField", "_hoodie_record_key"]),
    ],
)
def test_projection(hudi_spark, table_path, archive: str, columns: list[str]) -> None:
    path = str(table_path(archive))
    df = load(hudi_spark, path).select(*columns)
    assert df.columns == columns
    got = sorted(map(repr, spark_rows(df)))
    expected = sorted(map(repr, arrow_rows(hudi_md.open_table(path).read(), columns)))
    assert got == expected


def test_count_without_columns(hudi_spark, table_path) -> None:
    for archive in (TRIPS, NESTED, NONPART_ROLLBACK):
        path = str(table_path(archive))
        assert load(hudi_spark, path).count() == hudi_md.open_table(path).read().num_rows


def test_nested_column_pruning(hudi_spark, table_path) -> None:
    """Spark prunes struct fields of Parquet scans: the merged slice's Arrow structs carry every
    field, the reader must hand Spark only the required ones."""
    path = str(table_path(NESTED))
    table = hudi_md.open_table(path).read()
    df = load(hudi_spark, path).selectExpr(
        "_hoodie_record_key AS k",
        "structField.child_struct.child_field2 AS c2",
        "structField.field2 AS f2",
        "arrayField.arr_struct_f2 AS a2",
        "mapField['key1'].map_field_value_struct_f1 AS m1",
        "byteField",
    )
    plan = df._jdf.queryExecution().executedPlan().toString()
    assert "arrayField:array<struct<arr_struct_f2:int>>" in plan  # Spark pruned the nested fields
    expected = []
    for r in table.to_pylist():
        s, arr, m = r["structField"], r["arrayField"], dict(r["mapField"] or [])
        expected.append(
            (
                r["_hoodie_record_key"],
                s["child_struct"]["child_field2"] if s and s["child_struct"] else None,
                s["field2"] if s else None,
                [e["arr_struct_f2"] for e in arr] if arr is not None else None,
                m["key1"]["map_field_value_struct_f1"] if m.get("key1") else None,
                r["byteField"],
            )
        )
    for settings in ({}, {"spark.sql.parquet.enableVectorizedReader": "false"}):
        with conf(hudi_spark, **settings):
            assert sorted(tuple(r) for r in df.collect()) == sorted(expected)


@pytest.mark.parametrize("archive", [TRIPS, TXNS, NONPART_ROLLBACK])
def test_time_travel(hudi_spark, table_path, archive: str) -> None:
    path = str(table_path(archive))
    table = hudi_md.open_table(path)
    instants = [i.requested_time for i in table.timeline.write_timeline()]
    merged = 0
    for instant in instants:
        df = load(hudi_spark, path, **{"as.of.instant": instant})
        assert spark_rows(df) == arrow_rows(table.read(as_of=instant), df.columns), instant
        assert last_plan_counters(hudi_spark)["jvm_merged_slices"] == slices_with_logs(path, instant)
        merged += slices_with_logs(path, instant)
    assert merged > 0  # some instant's plan had slices with log files


# --- types -------------------------------------------------------------------------------------------


def test_type_mismatch_fails_naming_the_column(hudi_spark, table_path) -> None:
    path = str(table_path(NONPART_ROLLBACK))
    assert slices_with_logs(path) == len(hudi_md.open_table(path).file_slices()) == 1
    df = (
        hudi_spark.read.format("hudi-md")
        .schema("_hoodie_record_key string, id string, name string")
        .load(path)
    )
    with pytest.raises(Exception) as info:
        df.select("id").collect()
    message = str(info.value)
    assert "column 'id'" in message and "Spark expects string" in message
    assert "refusing to read values of another type" in message


# --- a table written right before the read -----------------------------------------------------------


def _txns(path: str, ids: list[str], regions: list[str], amount: int, ts: int) -> pa.Table:
    """Rows with the table's own schema (an existing row, changed): a write with fewer columns
    would change the table schema."""
    data = hudi_md.open_table(path).read()
    data = data.drop_columns([c for c in data.column_names if c.startswith("_hoodie_")])
    rows = pa.concat_tables([data.slice(0, 1)] * len(ids))
    changes = {
        "txn_id": ids,
        "region": regions,
        "amount": [decimal.Decimal(amount)] * len(ids),
        "txn_ts": [ts + i for i in range(len(ids))],
        "txn_datetime": [datetime.datetime(2030, 1, 2, 3, 4, 5, 678901, tzinfo=datetime.timezone.utc)]
        * len(ids),
    }
    for name, values in changes.items():
        i = rows.schema.get_field_index(name)
        rows = rows.set_column(i, rows.schema.field(i), pa.array(values, rows.schema.field(i).type))
    return rows


@pytest.mark.spark_smoke
def test_upserts_and_deletes_written_by_hudi_md(hudi_spark, table_path, tmp_path) -> None:
    path = writable_copy(table_path(TXNS), tmp_path / "mor-copy")
    df = load(hudi_spark, path)
    index = df._jdf.queryExecution().analyzed().relation().location()
    before = df.count()
    assert last_plan_counters(hudi_spark)["jvm_merged_slices"] == 0  # compacted: base files only

    hudi_md.write(
        _txns(path, ["TXN-015", "TXN-NEW-1"], ["apac", "eu"], 1, 1_900_000_000_000),
        path,
        operation="upsert",
        options=TXNS_MOR_WRITE_OPTIONS,
    )
    assert df.count() == before + 1  # every scan lists the table as it is now
    index.refresh()
    assert slices_with_logs(path) > 0
    assert spark_rows(df) == arrow_rows(hudi_md.open_table(path).read(), df.columns)
    assert last_plan_counters(hudi_spark)["jvm_merged_slices"] == slices_with_logs(path)
    assert df.count() == before + 1
    got = {r["txn_id"]: r for r in spark_rows(df.where("txn_id IN ('TXN-015', 'TXN-NEW-1')"))}
    assert got["TXN-015"]["amount"] == decimal.Decimal(1) and got["TXN-015"]["region"] == "apac"
    assert got["TXN-NEW-1"]["txn_datetime"] == 1_893_553_445_678_901

    hudi_md.write(
        _txns(path, ["TXN-015"], ["apac"], 2, 1_900_000_001_000),
        path,
        operation="delete",
        options=TXNS_MOR_WRITE_OPTIONS,
    )
    hudi_md.write(
        _txns(path, ["TXN-016"], ["apac"], 3, 1_900_000_002_000),
        path,
        operation="upsert",
        options=TXNS_MOR_WRITE_OPTIONS,
    )
    index.refresh()
    rows = spark_rows(df)
    assert rows == arrow_rows(hudi_md.open_table(path).read(), df.columns)
    assert rows == arrow_rows(hudi_rs_read(path), df.columns)
    ids = {r["txn_id"]: r for r in rows}
    assert "TXN-015" not in ids and ids["TXN-016"]["amount"] == decimal.Decimal(3)
    assert len(rows) == before
    # a new relation sees the same; read_optimized still reads base files only
    assert load(hudi_spark, path).count() == before
    ro = load(hudi_spark, path, **{"hoodie.datasource.query.type": "read_optimized"})
    assert ro.count() == hudi_md.open_table(path).read(query_type="read_optimized").num_rows
    assert last_plan_counters(hudi_spark)["jvm_merged_slices"] == 0


def test_executor_side_planner_errors_reach_the_driver(hudi_spark, table_path, tmp_path) -> None:
    path = str(tmp_path / "lost-log")
    shutil.copytree(table_path(NONPART_ROLLBACK), path)
    df = load(hudi_spark, path)
    assert df.count() == hudi_md.open_table(path).read().num_rows  # listed (and cached) with its log
    log = hudi_md.open_table(path).file_slices().column("log_files").to_pylist()[0][-1]
    (tmp_path / "lost-log" / log).unlink()
    with pytest.raises(Exception) as info:
        df.collect()
    message = str(info.value)
    assert "FileNotFoundError" in message or "No such file" in message, message[:2000]
    assert log.rsplit("/", 1)[-1] in message
