"""The ``hudi-md`` Spark data source (JVM shim in jvm-shim/, planner in hudi_md.spark.planner).

Reads through ``spark.read.format("hudi-md")`` are compared with Spark's Parquet reader over the
latest base files the Python API lists, with and without filters; the planner's counters must show
that pruning happened, and partition pruning must stay exact for filters the planner cannot use.
"""

from __future__ import annotations

import os
import signal
import zipfile
from pathlib import Path
from typing import Any

import hudi
import pyarrow as pa
import pytest
from comparable import conf

import hudi_md
from hudi_md.spark.session import configure, jar_path, last_plan, last_plan_counters

from fixtures import writable_copy

SIMPLE = "sample_table/cow/v9_txns_simple_meta.zip"  # region=<string>, hive style
COMPLEX = "sample_table/cow/v6_complexkeygen_hivestyle.zip"  # byteField=<int>/shortField=<int>
NONPART = "sample_table/cow/v6_nonpartitioned.zip"
TIMEBASED = "sample_table/cow/v6_timebasedkeygen_nonhivestyle.zip"  # no identity partition columns
MOR_RO = "sample_table/mor/parquet/v6_simplekeygen_nonhivestyle.zip"  # one slice with log files
MOR_NOLOGS = "sample_table/mor/avro/v9_txns_simple_meta.zip"  # compacted: no log files
QUERY_TYPE = "hoodie.datasource.query.type"


def base_files(path: str) -> list[str]:
    slices = hudi_md.open_table(path).file_slices()
    return [str(Path(path) / f) for f in slices.column("base_file").to_pylist() if f]


def plain(uri: str) -> str:
    """A local path from the `file:` URIs the data source reports."""
    return uri.removeprefix("file://").removeprefix("file:")


def rows(df: Any, columns: list[str] | None = None) -> list[tuple]:
    cols = sorted(columns or df.columns)
    return sorted((tuple(r) for r in df.select(*cols).collect()), key=repr)


def reference(spark: Any, path: str) -> Any:
    """Spark's Parquet reader over the latest base files (partition columns as stored in the files)."""
    return spark.read.parquet(*base_files(path))


def hudi_md_df(spark: Any, path: str, fmt: str = "hudi-md", **options: str) -> Any:
    return spark.read.format(fmt).options(**options).load(path)


# --- whole tables ------------------------------------------------------------------------------------


@pytest.mark.spark_smoke
@pytest.mark.parametrize("archive", [SIMPLE, COMPLEX, NONPART, TIMEBASED])
def test_full_read_equals_parquet_of_latest_base_files(hudi_spark, table_path, archive: str) -> None:
    path = str(table_path(archive))
    df = hudi_md_df(hudi_spark, path)
    ref = reference(hudi_spark, path)
    assert sorted(df.columns) == sorted(ref.columns)
    assert df.count() == ref.count() > 0
    assert rows(df) == rows(ref)


def test_partition_columns_are_typed_and_last(hudi_spark, table_path) -> None:
    df = hudi_md_df(hudi_spark, str(table_path(COMPLEX)))
    assert df.columns[-2:] == ["byteField", "shortField"]
    assert {f.name: f.dataType.simpleString() for f in df.schema.fields[-2:]} == {
        "byteField": "int",
        "shortField": "int",
    }
    simple = hudi_md_df(hudi_spark, str(table_path(SIMPLE)))
    assert simple.columns[-1] == "region"
    assert dict(simple.dtypes)["region"] == "string"


def test_underscore_name_and_read_optimized_on_mor(hudi_spark, table_path) -> None:
    path = str(table_path(MOR_RO))
    df = hudi_md_df(hudi_spark, path, "hudi_md", **{QUERY_TYPE: "read_optimized"})
    expected = hudi_md.open_table(path).read(query_type="read_optimized")
    assert df.count() == expected.num_rows > 0
    assert sorted(r[0] for r in df.select("_hoodie_record_key").collect()) == sorted(
        expected.column("_hoodie_record_key").to_pylist()
    )


def test_mor_snapshot_without_log_files_reads(hudi_spark, table_path) -> None:
    path = str(table_path(MOR_NOLOGS))
    assert rows(hudi_md_df(hudi_spark, path)) == rows(reference(hudi_spark, path))


@pytest.mark.spark_smoke
def test_mor_snapshot_with_log_files_merges_them(hudi_spark, table_path) -> None:
    """Slices with log files are merged on the executors (more in test_mor_snapshot.py)."""
    path = str(table_path(MOR_RO))
    df = hudi_md_df(hudi_spark, path)
    expected = hudi_md.open_table(path).read()
    assert rows(df, ["_hoodie_record_key", "name"]) == sorted(
        zip(
            expected.column("_hoodie_record_key").to_pylist(),
            expected.column("name").to_pylist(),
            strict=True,
        ),
        key=repr,
    )
    assert last_plan_counters(hudi_spark)["jvm_merged_slices"] == 1
    logs = [f for fs in hudi_md.open_table(path).file_slices().column("log_files").to_pylist() for f in fs]
    listed = _relation(df).location().inputFiles()
    assert logs and all(any(plain(f).endswith(lf) for f in listed) for lf in logs)
    plan = df._jdf.queryExecution().executedPlan().toString()
    assert "BatchScan" in plan and "reader=vectorized Parquet" in plan


@pytest.mark.spark_smoke
def test_time_travel_option(hudi_spark, table_path) -> None:
    path = str(table_path(SIMPLE))
    table = hudi_md.open_table(path)
    instants = [i.requested_time for i in table.timeline.write_timeline()]
    for instant in (instants[0], instants[4], instants[-1]):
        df = hudi_md_df(hudi_spark, path, **{"as.of.instant": instant})
        assert df.count() == table.read(as_of=instant).num_rows


def test_user_schema_keeps_partition_columns_from_the_planner(hudi_spark, table_path) -> None:
    path = str(table_path(SIMPLE))
    schema = "txn_id string, amount decimal(15,2), region string"
    df = hudi_spark.read.format("hudi-md").schema(schema).load(path)
    assert df.columns == ["txn_id", "amount", "region"]
    assert rows(df.where("region = 'eu'")) == rows(
        reference(hudi_spark, path).where("region = 'eu'"), ["txn_id", "amount", "region"]
    )


@pytest.mark.spark_smoke
def test_planner_errors_carry_the_python_error(hudi_spark, tmp_path) -> None:
    with pytest.raises(Exception, match="TableNotFoundError: "):
        hudi_md_df(hudi_spark, str(tmp_path / "no-table"))


# --- filters ---------------------------------------------------------------------------------------

SIMPLE_FILTERS = [
    None,
    "region = 'us'",
    "amount > 100",
    "txn_id = 'TXN-003'",
    "region = 'us' AND amount > 100",
    "region = 'us' OR amount > 1000",
    "region IN ('us', 'eu') AND NOT (txn_type = 'debit')",
    "region LIKE 'e%'",
    "NOT (region = 'us')",
    "region IS NULL",
    "substring(region, 1, 1) = 'u'",  # untranslatable: exact pruning on the JVM only
    "txn_date >= DATE'2024-01-15' AND txn_datetime < TIMESTAMP'2024-01-20 00:00:00'",
    "region <=> 'eu' AND is_international",
]


@pytest.mark.parametrize("where", SIMPLE_FILTERS)
def test_filters_equal_filtered_parquet(hudi_spark, table_path, where: str | None) -> None:
    path = str(table_path(SIMPLE))
    df, ref = hudi_md_df(hudi_spark, path), reference(hudi_spark, path)
    if where:
        df, ref = df.where(where), ref.where(where)
    assert rows(df) == rows(ref)


@pytest.mark.parametrize(
    "where",
    [
        "byteField = 10",
        "byteField % 20 = 10",
        "shortField > 100 AND byteField < 30",
        "byteField IN (20, 30) OR name = 'Alice'",
        "NOT (shortField = 100)",
    ],
)
def test_int_partition_filters(hudi_spark, table_path, where: str) -> None:
    path = str(table_path(COMPLEX))
    assert rows(hudi_md_df(hudi_spark, path).where(where)) == rows(reference(hudi_spark, path).where(where))


@pytest.mark.spark_smoke
def test_partition_filter_prunes_in_the_planner(hudi_spark, table_path) -> None:
    path = str(table_path(SIMPLE))
    assert hudi_md_df(hudi_spark, path).where("region = 'us'").count() == 5
    counters = last_plan_counters(hudi_spark)
    # an equality on every partition column: the partition's `files` key is looked up, the list of
    # all partitions is not read (issue 17)
    assert counters["partitions_from_keys"] == counters["partitions_after_partition_pruning"] == 1
    assert "partitions" not in counters
    assert counters["jvm_partitions"] == 1
    plan = last_plan(hudi_spark)
    assert plain(plan["path"]) == path and plan["latest_instant"]


@pytest.mark.spark_smoke
def test_data_filter_skips_files(hudi_spark, table_path) -> None:
    path = str(table_path(SIMPLE))
    assert hudi_md_df(hudi_spark, path).where("txn_id = 'TXN-003'").count() == 1
    counters = last_plan_counters(hudi_spark)
    assert counters["jvm_files"] < len(base_files(path))


@pytest.mark.spark_smoke
def test_untranslatable_partition_filter_is_exact(hudi_spark, table_path) -> None:
    path = str(table_path(COMPLEX))
    got = hudi_md_df(hudi_spark, path).where("byteField % 20 = 10").select("byteField").distinct()
    assert sorted(r[0] for r in got.collect()) == [10, 30]
    counters = last_plan_counters(hudi_spark)
    assert counters["partitions"] == 3  # the planner kept everything ...
    assert counters["jvm_partitions"] == 2  # ... the JVM dropped byteField=20


PARTITION_FILTER_SEQUENCES = {
    # a filter keeping every partition, one the planner prunes by, ones only the JVM evaluates
    # (untranslatable), alternating so that each is answered again from the directories held
    SIMPLE: (["region"], ["region IS NOT NULL", "region = 'us'", "region <> 'us'", "length(region) = 2"]),
    COMPLEX: (
        ["byteField", "shortField"],
        [
            "byteField IS NOT NULL",
            "byteField % 20 = 10",
            "NOT (byteField % 20 = 10)",
            "shortField > 100 AND byteField < 30",
        ],
    ),
}


@pytest.mark.parametrize("archive", [SIMPLE, COMPLEX])
def test_partition_filters_select_among_the_plans_directories(hudi_spark, table_path, archive: str) -> None:
    path = str(table_path(archive))
    columns, filters = PARTITION_FILTER_SEQUENCES[archive]
    ref = reference(hudi_spark, path)
    for where in filters + filters[::-1] + filters:
        df = hudi_md_df(hudi_spark, path).where(where)
        want = ref.where(where)
        assert rows(df) == rows(want), where
        partitions = want.select(*columns).distinct().count()
        assert last_plan_counters(hudi_spark)["jvm_partitions"] == partitions, where
    # a join on the partition columns: Spark infers `isnotnull` on each, which keeps every partition
    keys = ref.select(*columns).distinct().limit(1)
    for _ in range(2):
        df = hudi_md_df(hudi_spark, path).join(keys, columns)
        assert rows(df) == rows(ref.join(keys, columns))
        assert last_plan_counters(hudi_spark)["jvm_partitions"] == ref.select(*columns).distinct().count()


def test_explain_shows_a_parquet_scan_with_pushed_filters(hudi_spark, table_path) -> None:
    df = hudi_md_df(hudi_spark, str(table_path(SIMPLE))).where("region = 'us' AND amount > 100")
    plan = df._jdf.queryExecution().executedPlan().toString()
    # the V2 scan (the default with the session extension): Spark's vectorized Parquet reader
    assert "BatchScan" in plan and "HudiMdScan" in plan and "reader=vectorized Parquet" in plan
    assert "PartitionFilters: [(region = 'us'), (region IS NOT NULL)]" in plan
    assert "PushedFilters: [IsNotNull(amount), GreaterThan(amount,100.00)]" in plan
    with conf(hudi_spark, **{"spark.hudi_md.read.connector": "v1"}):
        df = hudi_md_df(hudi_spark, str(table_path(SIMPLE))).where("region = 'us' AND amount > 100")
        plan = df._jdf.queryExecution().executedPlan().toString()
    assert "FileScan parquet" in plan
    assert "HudiMdFileIndex" in plan
    assert "PartitionFilters: [isnotnull(region" in plan
    assert "GreaterThan(amount,100.00)" in plan


def _file_scan(df: Any) -> Any:
    """The query's scan, its files listed: a V1 ``FileSourceScanExec`` (``selectedPartitions``) or
    the V2 ``BatchScanExec`` (its input RDD, which posts the driver's metrics)."""
    found: list[Any] = []

    def walk(node: Any) -> None:
        if node.getClass().getSimpleName() in ("FileSourceScanExec", "BatchScanExec"):
            found.append(node)
        children = node.children()
        for i in range(children.size()):
            walk(children.apply(i))

    walk(df._jdf.queryExecution().executedPlan())
    (scan,) = found
    if scan.getClass().getSimpleName() == "FileSourceScanExec":
        scan.selectedPartitions()
    else:
        scan.inputRDD()
    return scan


def _slice_files(path: str, read_optimized: bool) -> list[tuple[str, list[str]]]:
    """hudi-rs's latest file slices as (partition path, files): the base file and, unless
    ``read_optimized``, the log files, as local paths."""
    out = []
    for s in hudi.HudiTableBuilder.from_base_uri(path).build().get_file_slices():
        files = [s.base_file_relative_path()] + ([] if read_optimized else list(s.log_files_relative_paths()))
        out.append((s.partition_path, [str(Path(path) / f) for f in files]))
    return out


def _stored_slices(path: str, read_optimized: bool, partition: str | None = None) -> tuple[int, int, int]:
    """hudi-rs's latest file slices (in ``partition``), as (files, bytes on storage, partitions): a
    slice is one file, its base file and, unless ``read_optimized``, its log files."""
    slices = [(p, files) for p, files in _slice_files(path, read_optimized) if partition in (None, p)]
    size = sum(os.path.getsize(f) for _, files in slices for f in files)
    return len(slices), size, len({p for p, _ in slices})


@pytest.mark.parametrize("connector", ["v2", "v1"])
@pytest.mark.parametrize(
    ("archive", "read_optimized", "where", "partition"),
    [
        (SIMPLE, False, None, None),  # partitions of one file and of two
        (SIMPLE, False, "region = 'us'", "region=us"),
        (MOR_RO, False, None, None),  # a slice with log files: one merged file
        (MOR_RO, True, None, None),
    ],
)
def test_the_scans_metrics_count_and_size_the_files_listed(
    hudi_spark,
    table_path,
    archive: str,
    read_optimized: bool,
    where: str | None,
    partition: str | None,
    connector: str,
) -> None:
    # Spark's scan maps the listed directories to their file counts and sizes (its own metrics):
    # the shim's directory and file sequences must answer those calls as Scala's own do, also when
    # they give again what the same functions mapped them to (a reused answer's directories) and
    # when the query before listed other directories
    path = str(table_path(archive))
    options = {QUERY_TYPE: "read_optimized"} if read_optimized else {}
    # the queries after the first reuse its answer and directories, or the unfiltered ones
    with conf(hudi_spark, **{"spark.hudi_md.read.connector": connector}):
        for w in (where, None, where, None, where):
            df = hudi_md_df(hudi_spark, path, **options)
            metrics = _file_scan(df.where(w) if w else df).metrics()
            got = tuple(
                int(metrics.apply(name).value()) for name in ("numFiles", "filesSize", "numPartitions")
            )
            assert got == _stored_slices(path, read_optimized, partition if w else None), w


# --- relation properties ---------------------------------------------------------------------------


def _relation(df: Any) -> Any:
    return df._jdf.queryExecution().analyzed().relation()


@pytest.mark.parametrize("connector", ["v2", "v1"])
@pytest.mark.parametrize(("archive", "read_optimized"), [(SIMPLE, False), (MOR_RO, False), (MOR_RO, True)])
def test_size_in_bytes_and_input_files(
    hudi_spark, table_path, archive: str, read_optimized: bool, connector: str
) -> None:
    # the relation's size (Spark's statistics) and input files are those of hudi-rs's latest
    # slices on storage, for a new index and for one reusing a held answer, whichever is asked
    # first; Dataset.inputFiles knows V1 file relations only (a V2 scan's are the index's)
    with conf(hudi_spark, **{"spark.hudi_md.read.connector": connector}):
        _check_size_and_input_files(hudi_spark, table_path, archive, read_optimized, connector == "v1")


def _check_size_and_input_files(
    hudi_spark: Any, table_path: Any, archive: str, read_optimized: bool, dataset_files: bool
) -> None:
    path = str(table_path(archive))
    options = {QUERY_TYPE: "read_optimized"} if read_optimized else {}
    files = sorted(f for _, slice_files in _slice_files(path, read_optimized) for f in slice_files)
    total = sum(os.path.getsize(f) for f in files)
    assert files and (read_optimized or archive != MOR_RO or any(".log." in f for f in files))
    for size_first in (True, False, True):
        df = hudi_md_df(hudi_spark, path, **options)
        index = _relation(df).location()
        if size_first:
            assert index.sizeInBytes() == total
        got = df.inputFiles() if dataset_files else index.inputFiles()
        assert all(f.startswith("file:/") for f in got)
        assert sorted(plain(f) for f in got) == files
        listed = index.inputFiles()
        listed[0] = "changed by the caller"  # the index's own files stay as they are
        assert sorted(plain(f) for f in index.inputFiles()) == files
        assert index.sizeInBytes() == total
        assert int(str(df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes())) == total


def test_scans_pick_up_a_new_commit(hudi_spark, table_path, tmp_path) -> None:
    path = writable_copy(table_path(SIMPLE), tmp_path / "copy")
    df = hudi_md_df(hudi_spark, path)
    index = _relation(df).location()
    assert df.count() == 12
    size_before = index.sizeInBytes()
    upsert = new_txn(path, "TXN-NEW-1")
    hudi_md.write(
        upsert,
        path,
        operation="upsert",
        options={
            "hoodie.table.name": "v9_txns_cow_simple_meta",
            "hoodie.datasource.write.recordkey.field": "txn_id",
            "hoodie.datasource.write.partitionpath.field": "region",
            "hoodie.datasource.write.precombine.field": "txn_ts",
            "hoodie.datasource.write.hive_style_partitioning": "true",
        },
    )
    # every scan asks the planner: a DataFrame made before the commit reads it (a catalog
    # table's relation outlives other writers' commits the same way)
    assert df.count() == 13
    index.refresh()
    assert df.count() == 13
    assert index.sizeInBytes() != size_before
    assert hudi_md_df(hudi_spark, path).where("txn_id = 'TXN-NEW-1'").count() == 1
    # The Spark way: refreshByPath refreshes the file index of cached plans.
    cached = hudi_md_df(hudi_spark, path).cache()
    assert cached.count() == 13
    hudi_md.write(
        new_txn(path, "TXN-NEW-2"),
        path,
        operation="upsert",
        options={
            "hoodie.table.name": "v9_txns_cow_simple_meta",
            "hoodie.datasource.write.recordkey.field": "txn_id",
            "hoodie.datasource.write.partitionpath.field": "region",
            "hoodie.datasource.write.precombine.field": "txn_ts",
            "hoodie.datasource.write.hive_style_partitioning": "true",
        },
    )
    hudi_spark.catalog.refreshByPath(path)
    assert cached.count() == 14
    cached.unpersist()


def test_a_repeated_query_reuses_the_answer_until_the_table_changes(hudi_spark, table_path, tmp_path) -> None:
    """Each DataFrame has its own file index; the same query of the same table state gets the
    answer the driver decoded before (the planner only says it is unchanged), and a commit in
    between gets a new one."""
    path = writable_copy(table_path(SIMPLE), tmp_path / "copy")
    assert hudi_md_df(hudi_spark, path).count() == 12
    assert last_plan_counters(hudi_spark)["jvm_answer_reused"] == 0
    assert hudi_md_df(hudi_spark, path).count() == 12
    assert last_plan_counters(hudi_spark)["jvm_answer_reused"] == 1
    us = hudi_md_df(hudi_spark, path).where("region = 'us'")
    assert us.count() == rows_in_us(hudi_spark, path)
    assert last_plan_counters(hudi_spark)["jvm_answer_reused"] == 0  # other filters, another answer
    hudi_md.write(
        new_txn(path, "TXN-NEW-1"),
        path,
        operation="upsert",
        options={
            "hoodie.table.name": "v9_txns_cow_simple_meta",
            "hoodie.datasource.write.recordkey.field": "txn_id",
            "hoodie.datasource.write.partitionpath.field": "region",
            "hoodie.datasource.write.precombine.field": "txn_ts",
            "hoodie.datasource.write.hive_style_partitioning": "true",
        },
    )
    assert hudi_md_df(hudi_spark, path).count() == 13
    assert last_plan_counters(hudi_spark)["jvm_answer_reused"] == 0
    assert hudi_md_df(hudi_spark, path).where("region = 'us'").count() == rows_in_us(hudi_spark, path)


def new_txn(path: str, txn_id: str) -> pa.Table:
    """A new row of the transactions table in region ``us``, with every column of the table (a
    write must carry them all)."""
    row = hudi_md.open_table(path).read(filters=[("region", "=", "us")]).slice(0, 1)
    row = row.drop_columns([c for c in row.column_names if c.startswith("_hoodie_")])
    row = row.set_column(row.schema.get_field_index("txn_id"), "txn_id", pa.array([txn_id]))
    ts = row.schema.get_field_index("txn_ts")
    return row.set_column(ts, row.schema.field(ts), pa.array([1_900_000_000_000], row.schema.field(ts).type))


def rows_in_us(spark: Any, path: str) -> int:
    """The oracle: Spark's Parquet reader over the latest base files of partition us."""
    return int(reference(spark, path).where("region = 'us'").count())


def test_planner_process_is_restarted(hudi_spark, table_path) -> None:
    path = str(table_path(SIMPLE))
    assert hudi_md_df(hudi_spark, path).count() == 12
    client = hudi_spark.sparkContext._jvm.hudi.md.spark.PlannerClient
    pid = client.pid()
    assert pid > 0
    os.kill(pid, signal.SIGKILL)
    assert hudi_md_df(hudi_spark, path).where("region = 'eu'").count() == 3
    assert client.pid() not in (pid, -1)


# --- SQL -------------------------------------------------------------------------------------------


@pytest.mark.spark_smoke
def test_sql_tables(hudi_spark, table_path) -> None:
    simple = str(table_path(SIMPLE))
    complex_ = str(table_path(COMPLEX))
    try:
        hudi_spark.sql(f"CREATE TABLE hudi_md_simple USING `hudi-md` LOCATION '{simple}'")
        hudi_spark.sql(f"CREATE TABLE hudi_md_complex USING hudi_md LOCATION '{complex_}'")
        assert hudi_spark.sql("SELECT count(*) FROM hudi_md_simple").collect()[0][0] == 12
        by_region = hudi_spark.sql("SELECT region, count(*) FROM hudi_md_simple GROUP BY region").collect()
        assert dict((r[0], r[1]) for r in by_region) == {"us": 5, "eu": 3, "apac": 4}
        assert (
            hudi_spark.sql("SELECT count(*) FROM hudi_md_simple WHERE region = 'apac'").collect()[0][0] == 4
        )
        assert last_plan_counters(hudi_spark)["jvm_partitions"] == 1
        got = hudi_spark.sql("SELECT name FROM hudi_md_complex WHERE byteField = 10 ORDER BY name").collect()
        assert [r[0] for r in got] == ["Alice", "Carol"]
    finally:
        hudi_spark.sql("DROP TABLE IF EXISTS hudi_md_simple")
        hudi_spark.sql("DROP TABLE IF EXISTS hudi_md_complex")


# --- the Python helpers ------------------------------------------------------------------------------


@pytest.mark.spark_smoke
def test_jar_path_per_spark_line(shim_jar: str) -> None:
    import pyspark

    assert jar_path() == jar_path(pyspark.__version__) == shim_jar
    major, minor = pyspark.__version__.split(".")[:2]
    assert shim_jar.endswith(f"/hudi-md-spark-{major}.{minor}_{'2.12' if major == '3' else '2.13'}.jar")
    # build.sbt writes the line the jar was compiled for into its manifest.
    with zipfile.ZipFile(shim_jar) as jar:
        manifest = jar.read("META-INF/MANIFEST.MF").decode()
    assert f"Spark-Line: {major}.{minor}\r\n" in manifest or f"Spark-Line: {major}.{minor}\n" in manifest
    with pytest.raises(ValueError):
        jar_path("2.4.8")


def test_configure_appends_to_spark_jars(shim_jar: str) -> None:
    class Builder:
        def __init__(self) -> None:
            self._options: dict[str, str] = {"spark.jars": "/x/a.jar"}

        def config(self, key: str, value: str) -> Builder:
            self._options[key] = value
            return self

    b = configure(Builder())
    assert b._options["spark.jars"] == "/x/a.jar," + shim_jar
    assert b._options["spark.pyspark.python"]
    b._options["spark.pyspark.python"] = "/custom/python"
    configure(b)
    assert b._options["spark.jars"].count("hudi-md-spark") == 1
    assert b._options["spark.pyspark.python"] == "/custom/python"


# --- what reaches the planner ------------------------------------------------------------------------


def _conjuncts(node: dict) -> list[dict]:
    return [c for child in node["children"] for c in _conjuncts(child)] if node["op"] == "and" else [node]


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ("region = 'us'", {"op": "eq", "column": "region", "value": "us"}),
        ("amount > 100", {"op": "gt", "column": "amount", "value": "100.00", "type": "decimal"}),
        ("100 >= txn_ts", {"op": "le", "column": "txn_ts", "value": 100}),
        ("is_international = true", {"op": "eq", "column": "is_international", "value": True}),
        (
            "NOT is_international",
            {"op": "not", "child": {"op": "eq", "column": "is_international", "value": True}},
        ),
        (
            "txn_date >= DATE'2024-01-15'",
            {"op": "ge", "column": "txn_date", "value": "2024-01-15", "type": "date"},
        ),
        (
            "txn_datetime < TIMESTAMP'2024-01-20 01:02:03.5'",
            {
                "op": "lt",
                "column": "txn_datetime",
                "value": "2024-01-20T01:02:03.500000+00:00",
                "type": "timestamp",
            },
        ),
        ("region IN ('us', 'eu')", {"op": "in", "column": "region", "values": ["us", "eu"]}),
        ("region LIKE 'e%'", {"op": "starts_with", "column": "region", "value": "e"}),
        (
            "NOT (region = 'us')",
            {"op": "not", "child": {"op": "eq", "column": "region", "value": "us"}},
        ),
        (
            "txn_id = 'TXN-003' OR currency = 'EUR'",
            {
                "op": "or",
                "children": [
                    {"op": "eq", "column": "txn_id", "value": "TXN-003"},
                    {"op": "eq", "column": "currency", "value": "EUR"},
                ],
            },
        ),
        ("region IS NULL", {"op": "is_null", "column": "region"}),
    ],
)
def test_filters_sent_to_the_planner(hudi_spark, table_path, where: str, expected: dict) -> None:
    hudi_md_df(hudi_spark, str(table_path(SIMPLE))).where(where).collect()
    assert expected in _conjuncts(last_plan(hudi_spark)["filters"])


@pytest.mark.parametrize(
    "where",
    [
        "substring(region, 1, 1) = 'u'",
        "substring(region, 1, 1) = 'u' OR amount > 1000",
        # NOT over a conjunction the planner only got part of would drop matching rows
        "NOT (region = 'us' AND substring(txn_id, 1, 3) = 'TXN')",
        # a <=> x is FALSE for NULL a, so NOT (a <=> x) keeps NULLs that NOT (a = x) drops
        "NOT (region <=> 'us')",
    ],
)
def test_untranslatable_filters_are_not_sent(hudi_spark, table_path, where: str) -> None:
    path = str(table_path(SIMPLE))
    df = hudi_md_df(hudi_spark, path).where(where)
    assert rows(df) == rows(reference(hudi_spark, path).where(where))
    sent = _conjuncts(last_plan(hudi_spark)["filters"])
    assert all(node["op"] in ("not_null", "true") for node in sent), sent


def test_the_planner_gets_the_s3a_settings_spark_reads_with(hudi_spark) -> None:
    """The S3A entries the shim sends the planner (``StorageConf.ofSession``) are those of the
    configuration Spark's own file scans build (``newHadoopConfWithOptions``): from the shared
    Hadoop configuration alone (no copy of it), and with the session's SQL conf and read options
    over it, a variable in a shared value taking the session's value."""
    jvm = hudi_spark.sparkContext._jvm
    sc = hudi_spark.sparkContext._jsc.sc()
    shared = sc.hadoopConfiguration()
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    storage_conf = (
        jvm.java.lang.Class.forName("hudi.md.spark.StorageConf$", True, loader).getField("MODULE$").get(None)
    )
    keys = [f"fs.s3a.hudi-md-test.{k}" for k in ("plain", "variable", "session", "option")]

    def scala_map(d: dict[str, str]) -> Any:
        return jvm.org.apache.spark.api.python.PythonUtils.toScalaMap(d)

    def sent(options: dict[str, str]) -> dict[str, str | None]:
        got = storage_conf.ofSession(sc, scala_map(options))
        return {k: (got.get(k).get() if got.get(k).isDefined() else None) for k in keys}

    def sparks(options: dict[str, str]) -> dict[str, str | None]:
        conf = hudi_spark._jsparkSession.sessionState().newHadoopConfWithOptions(scala_map(options))
        return {k: conf.get(k) for k in keys}

    shared.set(keys[0], "plain-value")
    shared.set(keys[1], "${hudi.md.test.var}")
    shared.set("hudi.md.test.var", "from-the-shared-conf")
    try:
        assert (
            sent({})
            == sparks({})
            == {**dict.fromkeys(keys), keys[0]: "plain-value", keys[1]: "from-the-shared-conf"}
        )
        hudi_spark.conf.set("hudi.md.test.var", "from-the-session")
        hudi_spark.conf.set(keys[2], "session-value")
        options = {keys[3]: "option-value"}
        want = {
            keys[0]: "plain-value",
            keys[1]: "from-the-session",
            keys[2]: "session-value",
            keys[3]: "option-value",
        }
        assert sent(options) == sparks(options) == want
        hudi_spark.conf.unset(keys[2])  # a variable set by the session alone still counts
        assert (
            sent({})
            == sparks({})
            == {**dict.fromkeys(keys), keys[0]: "plain-value", keys[1]: "from-the-session"}
        )
    finally:
        for k in (*keys, "hudi.md.test.var"):
            shared.unset(k)
            hudi_spark.conf.unset(k)


S3A_PATHS = [
    "s3a://bucket/t",
    "S3A://bucket/t",
    "s3://b/t",
    "S3n://b/t",
    "s3a://",
    "file:/tmp/t",
    "file:///tmp/t",
    "/tmp/t",
    "gs://b/t",
    "abfss://c@a.dfs.core.windows.net/t",
    "hdfs://nn:8020/t",
    "xs3a://b/t",
    "s3a:/b/t",
    "://b/t",
    "s3a_://b",
]


def test_the_s3a_settings_go_with_the_paths_the_planner_reads_with_them(hudi_spark) -> None:
    """The shim collects S3A settings for a table (``StorageConf.forTable``, at the driver and for
    the executors' readers) exactly when the planner uses them (``is_s3_path``): an S3 table never
    plans without its session's settings, and no other table pays for collecting them."""
    from hudi_md.storage.hadoop_s3a import is_s3_path

    jvm = hudi_spark.sparkContext._jvm
    sc = hudi_spark.sparkContext._jsc.sc()
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    storage_conf = (
        jvm.java.lang.Class.forName("hudi.md.spark.StorageConf$", True, loader).getField("MODULE$").get(None)
    )
    key = "fs.s3a.hudi-md-test.scheme"
    shared = sc.hadoopConfiguration()
    shared.set(key, "set")
    try:
        no_options = jvm.org.apache.spark.api.python.PythonUtils.toScalaMap({})
        for path in S3A_PATHS:
            want = is_s3_path(path)
            driver = storage_conf.forTable(path, sc, no_options)
            executor = storage_conf.forTable(path, shared)
            assert storage_conf.appliesTo(path) == want, path
            assert driver.contains(key) == executor.contains(key) == want, path
            assert want or (driver.isEmpty() and executor.isEmpty()), path
    finally:
        shared.unset(key)
