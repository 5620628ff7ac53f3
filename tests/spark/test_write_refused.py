"""The Spark writes into a ``hudi-md`` table that hudi-md does not carry out are refused before
they touch storage: the ``UPDATE`` / ``MERGE INTO`` forms Apache Hudi 1.2 refuses (a record key or
partition column set, an ordering field not set) or ignores (``WHEN NOT MATCHED BY SOURCE``),
``INSERT OVERWRITE DIRECTORY ... USING hudi-md``,
and Spark's own file writer (``HudiMdFileFormat.prepareWrite``), which a session without the
shim's extension would reach with SQL ``INSERT``. (``INSERT``, ``DELETE FROM``, CTAS and
``df.write.format("hudi-md")`` write: ``test_sql_writes.py``, ``test_dataframe_writer.py``.)

The shim's session extension (``hudi.md.spark.HudiMdExtensions``, loaded when the jar is on the
classpath at start-up) refuses at analysis with an ``AnalysisException`` naming hudi-md and the
writes that work.

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


def _assert_refused(
    hudi_spark, watched: list[Path], action: Callable[[], Any], what: str, hint: str = "INSERT INTO"
) -> None:
    from pyspark.errors import AnalysisException

    before = [listing(p) for p in watched]
    with pytest.raises(AnalysisException) as e:
        action()
    message = str(e.value)
    assert "hudi-md does not support" in message, message
    assert what in message, message
    assert hint in message and "Nothing was written" in message, message
    after = [listing(p) for p in watched]
    for p, b, a in zip(watched, before, after, strict=True):
        assert a == b, f"{p} changed: {sorted(set(a.items()) ^ set(b.items()))}"


# (statement, what the message names, what it says to do)
SQL_FORMS = [
    ("UPDATE {t} SET id = 'zz' WHERE id = 'a'", "record key field `id`", "delete the row"),
    ("UPDATE {t} SET region = 'eu' WHERE id = 'a'", "partition field `region`", "delete the row"),
    (
        "MERGE INTO {t} USING refused_src s ON {t}.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v",
        "does not set the ordering field `ts`",
        "as Apache Hudi requires",
    ),
    (
        "MERGE INTO {t} USING refused_src s ON {t}.id = s.id WHEN NOT MATCHED BY SOURCE THEN DELETE",
        "WHEN NOT MATCHED BY SOURCE",
        "WHEN MATCHED",
    ),
]


@pytest.mark.spark_smoke
@pytest.mark.parametrize("name", ["refused_dash", "refused_us"])
@pytest.mark.parametrize(("sql", "what", "hint"), SQL_FORMS)
def test_sql_writes_are_refused(
    hudi_spark, sql_tables, table: str, name: str, sql: str, what: str, hint: str
) -> None:
    _assert_refused(hudi_spark, [Path(table)], lambda: hudi_spark.sql(sql.format(t=name)), what, hint)
    assert hudi_spark.table(name).count() == 4


def test_temp_view_and_directory_writes_are_refused(
    hudi_spark, sql_tables, table: str, tmp_path: Path
) -> None:
    hudi_spark.read.format("hudi-md").load(table).createOrReplaceTempView("refused_view")
    out = tmp_path / "dir"
    watched = [Path(table), tmp_path]
    # a temporary view of a DataFrame takes INSERT INTO, not UPDATE / MERGE INTO (a catalog table does)
    _assert_refused(
        hudi_spark, watched, lambda: hudi_spark.sql("UPDATE refused_view SET v = 1"), "this UPDATE"
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
def test_file_format_refuses_spark_file_writes(hudi_spark, table: str) -> None:
    """Defence in depth, for a session the extension was not applied to (the jar added later),
    where SQL INSERT reaches Spark's own file writer: ``HudiMdFileFormat.prepareWrite`` throws
    before anything is written."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import AnalysisException

    jvm = hudi_spark.sparkContext._jvm
    session = hudi_spark._jsparkSession
    df = hudi_spark.table("refused_src")
    before = listing(Path(table))
    fmt = jvm.hudi.md.spark.HudiMdFileFormat(table, jvm.PythonUtils.toScalaMap({}), jvm.scala.Option.empty())
    with pytest.raises((AnalysisException, Py4JJavaError)) as e:
        fmt.prepareWrite(
            session,
            jvm.org.apache.hadoop.mapreduce.Job.getInstance(),
            jvm.PythonUtils.toScalaMap({}),
            session.parseDataType(df.schema.json()),
        )
    assert "hudi-md does not support" in str(e.value) and "INSERT INTO" in str(e.value)
    assert listing(Path(table)) == before
