"""Spark's own write paths into a ``hudi-md`` table are refused before they touch storage.

Spark's generic file writer would put ``part-*.parquet`` and ``_SUCCESS`` files into the table
outside the Hudi timeline (no reader sees them), and ``INSERT OVERWRITE`` deletes the partitions it
replaces before it asks the file format for a writer. The shim's session extension
(``hudi.md.spark.HudiMdExtensions``, loaded when the jar is on the classpath at start-up) refuses
every such plan at analysis with an ``AnalysisException`` naming hudi-md and ``hudi_md.write``;
``DefaultSource.createRelation(mode, ...)`` and ``HudiMdFileFormat.prepareWrite`` refuse too.

Each form is checked against a recursive listing of the table (path, size, mtime and a hash of
every file and directory, ``.hoodie/`` included) and of the other directories it could create
(the warehouse, a fresh LOCATION).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import hudi_md

OPTIONS = {
    "hoodie.table.name": "refused",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "region",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.hive_style_partitioning": "true",
}


META = (
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
)
NULLS = ", ".join(["NULL"] * len(META))


def listing(root: Path) -> dict[str, tuple]:
    """Every file and directory under ``root``: (kind, size, mtime_ns, sha256 of the bytes)."""
    out: dict[str, tuple] = {}
    if not root.exists():
        return out
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            p = Path(dirpath) / d
            st = p.stat()
            out[str(p.relative_to(root))] = ("dir", st.st_mtime_ns)
        for f in filenames:
            p = Path(dirpath) / f
            st = p.stat()
            out[str(p.relative_to(root))] = (
                "file",
                st.st_size,
                st.st_mtime_ns,
                hashlib.sha256(p.read_bytes()).hexdigest(),
            )
    return out


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("refused") / "t"
    rows = pa.table(
        {
            "id": ["a", "b", "c", "d"],
            "v": pa.array([1, 2, 3, 4], pa.int64()),
            "ts": pa.array([10, 10, 10, 10], pa.int64()),
            "region": ["us", "us", "eu", "apac"],
        }
    )
    hudi_md.write(rows, str(path), operation="insert", options=OPTIONS)
    return str(path)


@pytest.fixture(scope="module")
def sql_tables(hudi_spark, table: str):
    hudi_spark.sql(f"CREATE TABLE refused_dash USING `hudi-md` LOCATION '{table}'")
    hudi_spark.sql(f"CREATE TABLE refused_us USING hudi_md LOCATION '{table}'")
    # The table's columns: Hudi's meta columns, then the data, partition column last.
    meta = ", ".join(f"CAST(NULL AS STRING) AS {c}" for c in META)
    hudi_spark.createDataFrame(
        [("a", 100, 20, "us"), ("z", 9, 20, "eu")], "id string, v long, ts long, region string"
    ).createOrReplaceTempView("refused_rows")
    hudi_spark.sql(f"SELECT {meta}, * FROM refused_rows").createOrReplaceTempView("refused_src")
    hudi_spark.sql(f"SELECT {meta}, id, v, ts FROM refused_rows").createOrReplaceTempView("refused_src_np")
    yield
    for t in ("refused_dash", "refused_us"):
        hudi_spark.sql(f"DROP TABLE IF EXISTS {t}")


def _assert_refused(hudi_spark, watched: list[Path], action: Callable[[], Any], what: str) -> None:
    from pyspark.errors import AnalysisException

    before = [listing(p) for p in watched]
    with pytest.raises(AnalysisException) as e:
        action()
    message = str(e.value)
    assert "hudi-md does not support" in message, message
    assert what in message, message
    assert "hudi_md.write(df, path, operation=" in message, message
    after = [listing(p) for p in watched]
    for p, b, a in zip(watched, before, after, strict=True):
        assert a == b, f"{p} changed: {sorted(set(a.items()) ^ set(b.items()))}"


SQL_FORMS = [
    ("INSERT INTO {t} VALUES (" + NULLS + ", 'x', 1, 1, 'us')", "INSERT INTO"),
    ("INSERT INTO {t} (id, v, ts, region) VALUES ('x', 1, 1, 'us')", "INSERT INTO"),
    ("INSERT INTO {t} SELECT * FROM refused_src", "INSERT INTO"),
    ("INSERT INTO {t} PARTITION (region = 'us') SELECT * FROM refused_src_np", "INSERT INTO"),
    ("INSERT INTO {t} PARTITION (region) SELECT * FROM refused_src", "INSERT INTO"),
    ("INSERT OVERWRITE {t} SELECT * FROM refused_src", "INSERT OVERWRITE"),
    ("INSERT OVERWRITE TABLE {t} PARTITION (region = 'us') SELECT * FROM refused_src_np", "INSERT OVERWRITE"),
    ("INSERT OVERWRITE {t} PARTITION (region) SELECT * FROM refused_src", "INSERT OVERWRITE"),
    ("UPDATE {t} SET v = 0 WHERE id = 'a'", "UPDATE"),
    ("DELETE FROM {t} WHERE id = 'a'", "DELETE FROM"),
    (
        "MERGE INTO {t} USING refused_src s ON {t}.id = s.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
        "MERGE INTO",
    ),
]


# INSERT OVERWRITE under both partition overwrite modes (dynamic mode stages files first).
SQL_CASES = [
    pytest.param(sql, what, mode, id=f"{what}-{i}-{mode}")
    for i, (sql, what) in enumerate(SQL_FORMS)
    for mode in ("static", "dynamic")
    if mode == "static" or "OVERWRITE" in sql
]


@pytest.mark.spark_smoke
@pytest.mark.parametrize("name", ["refused_dash", "refused_us"])
@pytest.mark.parametrize(("sql", "what", "overwrite_mode"), SQL_CASES)
def test_sql_writes_are_refused(
    hudi_spark, sql_tables, table: str, name: str, sql: str, what: str, overwrite_mode: str
) -> None:
    hudi_spark.conf.set("spark.sql.sources.partitionOverwriteMode", overwrite_mode)
    try:
        _assert_refused(hudi_spark, [Path(table)], lambda: hudi_spark.sql(sql.format(t=name)), what)
    finally:
        hudi_spark.conf.unset("spark.sql.sources.partitionOverwriteMode")
    assert hudi_spark.table(name).count() == 4


@pytest.mark.spark_smoke
def test_ctas_is_refused(hudi_spark, sql_tables, table: str, tmp_path: Path) -> None:
    warehouse = Path(hudi_spark.conf.get("spark.sql.warehouse.dir").removeprefix("file:"))
    fresh = tmp_path / "ctas"
    watched = [Path(table), warehouse, tmp_path]
    for sql in (
        f"CREATE TABLE refused_ctas USING `hudi-md` LOCATION '{fresh}' AS SELECT * FROM refused_src",
        "CREATE TABLE refused_ctas_managed USING hudi_md AS SELECT * FROM refused_src",
        f"CREATE TABLE refused_ctas_over USING hudi_md LOCATION '{table}' AS SELECT * FROM refused_src",
    ):
        _assert_refused(hudi_spark, watched, lambda sql=sql: hudi_spark.sql(sql), "CREATE TABLE AS SELECT")
    assert not fresh.exists()
    assert not any(hudi_spark.catalog.tableExists(t) for t in ("refused_ctas", "refused_ctas_managed"))


@pytest.mark.spark_smoke
def test_dataframe_writer_is_refused(hudi_spark, sql_tables, table: str, tmp_path: Path) -> None:
    warehouse = Path(hudi_spark.conf.get("spark.sql.warehouse.dir").removeprefix("file:"))
    fresh = tmp_path / "fresh"
    watched = [Path(table), warehouse, tmp_path]
    df = hudi_spark.table("refused_src")
    for fmt in ("hudi-md", "hudi_md"):
        for mode in ("append", "overwrite", "errorifexists", "ignore"):
            for target in (table, str(fresh)):
                _assert_refused(
                    hudi_spark,
                    watched,
                    lambda fmt=fmt, mode=mode, target=target: df.write.format(fmt).mode(mode).save(target),
                    "DataFrameWriter.save",
                )
        _assert_refused(
            hudi_spark,
            watched,
            lambda fmt=fmt: df.write.format(fmt).saveAsTable("refused_new"),
            "CREATE TABLE AS SELECT / DataFrameWriter.saveAsTable",
        )
        _assert_refused(
            hudi_spark,
            watched,
            lambda fmt=fmt: df.write.format(fmt).option("path", str(fresh)).saveAsTable("refused_new"),
            "CREATE TABLE AS SELECT / DataFrameWriter.saveAsTable",
        )
        _assert_refused(
            hudi_spark,
            watched,
            lambda fmt=fmt: df.write.format(fmt).mode("append").saveAsTable("refused_dash"),
            "hudi-md",
        )
    for mode in ("append", "overwrite"):
        _assert_refused(
            hudi_spark,
            watched,
            lambda mode=mode: df.write.mode(mode).insertInto("refused_dash"),
            "INSERT OVERWRITE" if mode == "overwrite" else "INSERT INTO",
        )
    assert not fresh.exists()
    assert not hudi_spark.catalog.tableExists("refused_new")
    assert hudi_spark.table("refused_dash").count() == 4


def test_temp_view_and_directory_writes_are_refused(
    hudi_spark, sql_tables, table: str, tmp_path: Path
) -> None:
    hudi_spark.read.format("hudi-md").load(table).createOrReplaceTempView("refused_view")
    out = tmp_path / "dir"
    watched = [Path(table), tmp_path]
    _assert_refused(
        hudi_spark,
        watched,
        lambda: hudi_spark.sql("INSERT INTO refused_view SELECT * FROM refused_src"),
        "INSERT INTO",
    )
    _assert_refused(
        hudi_spark,
        watched,
        lambda: hudi_spark.sql("INSERT OVERWRITE refused_view SELECT * FROM refused_src"),
        "INSERT OVERWRITE",
    )
    _assert_refused(
        hudi_spark,
        watched,
        lambda: hudi_spark.sql(
            f"INSERT OVERWRITE DIRECTORY '{out}' USING `hudi-md` SELECT * FROM refused_src"
        ),
        "INSERT OVERWRITE DIRECTORY",
    )
    assert not out.exists()


def test_reading_a_hudi_md_table_into_another_table_still_works(hudi_spark, sql_tables, tmp_path) -> None:
    """The guard looks at write targets only: hudi-md as a source of a write is fine."""
    copy = tmp_path / "copy"
    hudi_spark.sql(f"CREATE TABLE refused_copy USING parquet LOCATION '{copy}' AS SELECT * FROM refused_dash")
    try:
        hudi_spark.sql("INSERT INTO refused_copy SELECT * FROM refused_us")
        assert hudi_spark.table("refused_copy").count() == 8
    finally:
        hudi_spark.sql("DROP TABLE IF EXISTS refused_copy")


@pytest.mark.spark_smoke
def test_relation_provider_and_file_format_refuse_writes_without_the_extension(
    hudi_spark, table: str
) -> None:
    """Defence in depth, for a session the extension was not applied to (the jar added later):
    ``DefaultSource.createRelation(mode, ...)`` and ``HudiMdFileFormat.prepareWrite`` throw the
    same error, before anything is written."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import AnalysisException

    jvm = hudi_spark.sparkContext._jvm
    session = hudi_spark._jsparkSession
    df = hudi_spark.table("refused_src")
    params = jvm.PythonUtils.toScalaMap({"path": table})
    before = listing(Path(table))
    with pytest.raises((AnalysisException, Py4JJavaError)) as e:
        jvm.hudi.md.spark.DefaultSource().createRelation(
            session.sqlContext(), jvm.org.apache.spark.sql.SaveMode.Append, params, df._jdf
        )
    assert "hudi-md does not support" in str(e.value) and "hudi_md.write(df, path" in str(e.value)
    fmt = jvm.hudi.md.spark.HudiMdFileFormat(table, jvm.PythonUtils.toScalaMap({}), jvm.scala.Option.empty())
    with pytest.raises((AnalysisException, Py4JJavaError)) as e:
        fmt.prepareWrite(
            session,
            jvm.org.apache.hadoop.mapreduce.Job.getInstance(),
            jvm.PythonUtils.toScalaMap({}),
            session.parseDataType(df.schema.json()),
        )
    assert "hudi-md does not support" in str(e.value) and "hudi_md.write(df, path" in str(e.value)
    assert listing(Path(table)) == before


def test_save_as_table_overwrite_of_an_existing_table(hudi_spark, sql_tables, table: str) -> None:
    """``saveAsTable`` in overwrite mode onto an existing hudi-md table is refused and its files are
    untouched. Spark 3.5's DataFrameWriter drops the table's catalog entry before it plans the
    write (no hook runs in between), so there the entry is gone; Spark 4.0 keeps it."""
    import pyspark

    df = hudi_spark.table("refused_src")
    try:
        _assert_refused(
            hudi_spark,
            [Path(table)],
            lambda: df.write.format("hudi-md").mode("overwrite").saveAsTable("refused_us"),
            "DataFrameWriter.saveAsTable",
        )
        assert hudi_spark.catalog.tableExists("refused_us") == (not pyspark.__version__.startswith("3."))
    finally:
        hudi_spark.sql(f"CREATE TABLE IF NOT EXISTS refused_us USING hudi_md LOCATION '{table}'")
    assert hudi_spark.table("refused_us").count() == 4
