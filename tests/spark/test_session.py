"""``hudi_md.spark.session.configure``: the Spark lines it accepts, and a venv that is not activated.

PySpark starts its Python workers with ``$PYSPARK_PYTHON`` (else ``python3`` from ``PATH``), not
with ``spark.pyspark.python``; the shim starts its planner with ``spark.hudi_md.planner.python``
(else ``spark.pyspark.python``, ``$PYSPARK_PYTHON``, ``python3``). ``configure`` sets both, so
``hudi_md.write(spark_df)``, ``read_table`` and ``format("hudi-md")`` work from a venv's python run
by absolute path, without activating it. The ``spark-sql`` command line has no Python driver: it is
pointed at the venv with ``--conf spark.hudi_md.planner.python=...``, and says so when it is not.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from jar_links import link_problems

from hudi_md.errors import UnsupportedSparkVersionError
from hudi_md.spark.session import JARS_DIR, SUPPORTED_SPARK_LINES, configure, jar_name, jar_path


class Builder:
    def __init__(self, **options: str) -> None:
        self._options: dict[str, str] = dict(options)

    def config(self, key: str, value: str) -> Builder:
        self._options[key] = value
        return self


@pytest.mark.spark_smoke
@pytest.mark.parametrize(
    "version", ["3.4.1", "3.3.2", "4.4.0", "4.4.0.dev0", "2.4.8", "5.0.0", "3.6.0", "nonsense"]
)
def test_unsupported_spark_versions_are_refused(version: str) -> None:
    b = Builder()
    with pytest.raises(UnsupportedSparkVersionError) as e:
        configure(b, spark_version=version)
    assert e.value.version == version
    assert e.value.supported == SUPPORTED_SPARK_LINES == ("3.5.x", "4.0.x", "4.1.x", "4.2.x", "4.3.x")
    assert f"not Spark {version}" in str(e.value) and "3.5.x, 4.0.x, 4.1.x, 4.2.x, 4.3.x" in str(e.value)
    assert b._options == {}  # nothing configured
    with pytest.raises(UnsupportedSparkVersionError):
        jar_path(version)
    assert isinstance(e.value, ValueError)


@pytest.mark.spark_smoke
@pytest.mark.parametrize(
    ("version", "jar"),
    [
        ("3.5.0", "hudi-md-spark-3.5_2.12.jar"),
        ("3.5.9", "hudi-md-spark-3.5_2.12.jar"),
        ("4.0.0", "hudi-md-spark-4.0_2.13.jar"),
        ("4.0.5", "hudi-md-spark-4.0_2.13.jar"),
        ("4.1.0.dev0", "hudi-md-spark-4.1_2.13.jar"),
        ("4.1.4", "hudi-md-spark-4.1_2.13.jar"),
        ("4.2.1", "hudi-md-spark-4.2_2.13.jar"),
        ("4.3.0", "hudi-md-spark-4.3_2.13.jar"),
        ("4.3.0-preview1", "hudi-md-spark-4.3_2.13.jar"),
    ],
)
def test_supported_lines_map_to_their_jar(version: str, jar: str) -> None:
    assert jar_name(version) == jar
    # Every line's jar is committed (python/hudi_md/jars/), so the path exists whatever Spark runs.
    assert jar_path(version) == str(JARS_DIR / jar)
    assert Path(jar_path(version)).is_file()
    b = configure(Builder(), spark_version=version)
    assert b._options["spark.jars"] == str(JARS_DIR / jar)


@pytest.mark.spark_smoke
def test_the_package_exports_configure() -> None:
    import hudi_md.spark

    assert hudi_md.spark.configure is configure
    assert hudi_md.spark.jar_path is jar_path


@pytest.mark.spark_smoke
def test_the_running_lines_jar_links_against_its_spark() -> None:
    """Every member the jar uses in Spark, Scala or Hadoop exists in the running PySpark's jars, and
    every abstract method of Spark's interfaces is implemented: the JVM only fails on first use."""
    import pyspark

    spark_jars = sorted((Path(pyspark.__file__).parent / "jars").glob("*.jar"))
    assert spark_jars
    assert link_problems(Path(jar_path(pyspark.__version__)), spark_jars) == []
    # The check fails a jar of another Scala line (the 3.5 jar is Scala 2.12, every 4.x jar 2.13).
    other = jar_path("4.3.0" if pyspark.__version__.startswith("3.") else "3.5.0")
    assert any("scala/collection" in p for p in link_problems(Path(other), spark_jars))


def test_configure_sets_the_interpreters_and_the_extension(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    b = configure(Builder(**{"spark.sql.extensions": "a.B"}))
    assert b._options["spark.pyspark.python"] == sys.executable
    assert b._options["spark.hudi_md.planner.python"] == sys.executable
    assert b._options["spark.sql.extensions"] == "a.B,hudi.md.spark.HudiMdExtensions"
    assert os.environ["PYSPARK_PYTHON"] == sys.executable
    configure(b)
    assert b._options["spark.sql.extensions"] == "a.B,hudi.md.spark.HudiMdExtensions"

    # Explicit settings win; PYSPARK_PYTHON follows spark.pyspark.python when it is unset.
    monkeypatch.delenv("PYSPARK_PYTHON")
    b = configure(Builder(**{"spark.pyspark.python": "/opt/py/bin/python"}))
    assert b._options["spark.hudi_md.planner.python"] == "/opt/py/bin/python"
    assert os.environ["PYSPARK_PYTHON"] == "/opt/py/bin/python"
    monkeypatch.setenv("PYSPARK_PYTHON", "/elsewhere/python")
    b = configure(Builder(**{"spark.hudi_md.planner.python": "/p/python"}))
    assert b._options["spark.hudi_md.planner.python"] == "/p/python"
    assert os.environ["PYSPARK_PYTHON"] == "/elsewhere/python"


def _plain_env() -> dict[str, str]:
    """The environment of a shell where the venv is not activated and PySpark is not configured."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV")
    }
    venv_bin = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p and p != venv_bin)
    return env


SCRIPT = textwrap.dedent(
    """
    import os, sys
    import pyarrow as pa
    from pyspark.sql import SparkSession

    import hudi_md
    from hudi_md.spark.reader import read_table
    from hudi_md.spark.session import configure

    assert "PYSPARK_PYTHON" not in os.environ
    path = sys.argv[1]
    spark = (
        configure(SparkSession.builder.master("local[2]"))
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    opts = {
        "hoodie.table.name": "plain",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "region",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.table.type": "MERGE_ON_READ",
    }
    rows = [(f"k{i}", i, 1, "us" if i % 2 else "eu") for i in range(20)]
    df = spark.createDataFrame(rows, "id string, v long, ts long, region string")
    hudi_md.write(df, path, operation="insert", options=opts)
    upd = spark.createDataFrame([("k1", 100, 2, "us")], "id string, v long, ts long, region string")
    hudi_md.write(upd, path, operation="upsert", options=opts)  # a log file: merged on the executor
    got = spark.read.format("hudi-md").load(path)
    assert got.count() == 20, got.count()
    assert got.where("id = 'k1'").select("v").collect()[0][0] == 100
    assert read_table(spark, path).where("v = 100").count() == 1
    print("OK", spark.version)
    spark.stop()
    """
)


def test_unactivated_venv_without_pyspark_python(tmp_path: Path) -> None:
    script = tmp_path / "plain.py"
    script.write_text(SCRIPT)
    proc = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "t")],
        env=_plain_env(),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-6000:]
    assert "OK" in proc.stdout


def _spark_sql() -> Path:
    import pyspark

    cli = Path(pyspark.__file__).parent / "bin" / "spark-sql"
    if not cli.is_file():
        pytest.skip(f"{cli} is not part of this pyspark installation")
    return cli


def test_spark_sql_command_line(shim_jar: str, tmp_path: Path) -> None:
    """``spark-sql --jars <shim> --conf spark.hudi_md.planner.python=<venv python>`` reads a
    hudi-md table and refuses an ``UPDATE`` of the record key (the extension is found through the
    jar's service file; ``test_jvm_driver.py`` writes through it); without the conf the planner's
    error says which conf to set."""
    import pyarrow as pa

    import hudi_md

    table = tmp_path / "t"
    hudi_md.write(
        pa.table({"id": ["a", "b", "c"], "ts": [1, 1, 1], "region": ["us", "eu", "us"]}),
        str(table),
        operation="insert",
        options={
            "hoodie.table.name": "cli",
            "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "region",
            "hoodie.datasource.write.precombine.field": "ts",
        },
    )
    before = sorted((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in table.rglob("*"))

    def spark_sql(workdir: Path, sql: str, *conf: str) -> subprocess.CompletedProcess[str]:
        workdir.mkdir()
        args = [str(_spark_sql()), "--master", "local[1]", "--jars", shim_jar]
        args += ["--conf", "spark.ui.enabled=false", "--conf", f"spark.sql.warehouse.dir={workdir / 'wh'}"]
        derby = f"jdbc:derby:;databaseName={workdir / 'db'};create=true"
        args += ["--conf", f"spark.hadoop.javax.jdo.option.ConnectionURL={derby}"]
        for c in conf:
            args += ["--conf", c]
        args += ["-S", "-e", sql]
        return subprocess.run(
            args, capture_output=True, text=True, timeout=600, env=_plain_env(), cwd=workdir
        )

    create = f"CREATE TABLE t USING hudi_md LOCATION '{table}';"
    ok = spark_sql(
        tmp_path / "ok",
        f"{create} SELECT region, count(*) FROM t GROUP BY region ORDER BY region; "
        "UPDATE t SET id = 'z' WHERE id = 'a';",
        f"spark.hudi_md.planner.python={sys.executable}",
    )
    assert "eu\t1" in ok.stdout and "us\t2" in ok.stdout, ok.stdout[-2000:] + ok.stderr[-4000:]
    assert ok.returncode != 0
    assert "hudi-md does not support UPDATE" in ok.stderr and "record key field" in ok.stderr
    assert sorted((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in table.rglob("*")) == before

    bad = spark_sql(tmp_path / "bad", f"{create} SELECT count(*) FROM t;")
    assert bad.returncode != 0
    assert "spark.hudi_md.planner.python" in bad.stderr, bad.stderr[-4000:]
