"""The wheel as a user gets it: built by ``scripts/build-dist`` (from the sdist; once per pytest
process with tests/test_dist.py, tests/dist_build.py), it carries the shim jar of every Spark line,
each with LICENSE and NOTICE, and installed with its ``spark`` extra into a fresh venv (pip picks
the newest PySpark the extra allows) it round-trips a table — written through a write path, read
back through ``spark.read.format("hudi-md")`` — from a directory outside the repository, without
PYTHONPATH. tests/test_dist.py has the other extras' round trips and build-dist's checks.

pip's cache (~/.cache/pip) keeps the downloads and the PySpark wheel pip builds from its sdist, so
the venv costs about a minute after the first run; it is deleted after the module (over 1 GB).
"""

from __future__ import annotations

import io
import json
import shutil
import textwrap
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from dist_build import built_dist, fresh_venv, outside_the_repository, run, user_env
from hudi_md.spark.session import SCALA_FOR_SPARK_LINE, jar_name

REPO = Path(__file__).resolve().parents[1]
NEWEST_LINE = max(SCALA_FOR_SPARK_LINE)

# The write paths of the round trip: each name is a key of WRITERS in ROUND_TRIP below, which writes
# `df` (a PySpark DataFrame) as a new table at `path` with Hudi's `options`.
WRITE_PATHS = ["hudi_md.write"]

ROUND_TRIP = textwrap.dedent(
    """
    import json, os, sys

    import pyspark
    from pyspark.sql import SparkSession

    import hudi_md
    import hudi_md.spark

    def write_with_hudi_md_write(df, path, options):
        hudi_md.write(df, path, operation="insert", options=options)

    WRITERS = {"hudi_md.write": write_with_hudi_md_write}

    writer, path = sys.argv[1], sys.argv[2]
    spark = (
        hudi_md.spark.configure(SparkSession.builder.master("local[2]"))
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    rows = [(f"k{i:02d}", i, i * 1.5, f"name {i}", 1, "us" if i % 3 else "eu") for i in range(25)]
    schema = "id string, n long, x double, s string, ts long, region string"
    options = {
        "hoodie.table.name": "wheel_round_trip",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "region",
        "hoodie.datasource.write.precombine.field": "ts",
    }
    WRITERS[writer](spark.createDataFrame(rows, schema), path, options)
    df = spark.read.format("hudi-md").load(path)
    got = sorted(tuple(r) for r in df.select("id", "n", "x", "s", "ts", "region").collect())
    pruned = df.where("region = 'eu'").count()
    print(json.dumps({
        "pyspark": pyspark.__version__,
        "hudi_md": hudi_md.__file__,
        "jar": hudi_md.spark.jar_path(),
        "spark_jars": spark.conf.get("spark.jars"),
        "rows": got,
        "expected": sorted(rows),
        "eu": pruned,
        "sys_path": sys.path,
    }))
    spark.stop()
    """
)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``scripts/build-dist``'s wheel (built from its sdist, from a copy of the repository's files:
    an in-tree build would write *.egg-info into the repository)."""
    return built_dist(tmp_path_factory).wheel


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh venv with the wheel and its ``spark`` extra (newest allowed PySpark); its python.
    Deleted after the module."""
    env_dir = tmp_path_factory.mktemp("wheel-venv")
    try:
        yield fresh_venv(env_dir, wheel, "spark", timeout=1800)
    finally:
        shutil.rmtree(env_dir, ignore_errors=True)


def test_the_wheel_carries_every_lines_jar(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as z:
        jars = {n for n in z.namelist() if n.endswith(".jar")}
        sizes = {n: z.getinfo(n).file_size for n in jars}
    expected = {f"hudi_md/jars/{jar_name(f'{major}.{minor}.0')}" for major, minor in SCALA_FOR_SPARK_LINE}
    assert jars == expected
    for name, size in sizes.items():
        assert size == (REPO / "python" / name).stat().st_size, name


def test_the_wheel_carries_the_license_and_notice(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as z:
        (dist_info,) = {n.split("/")[0] for n in z.namelist() if n.split("/")[0].endswith(".dist-info")}
        metadata = z.read(f"{dist_info}/METADATA").decode()
        for name in ("LICENSE", "NOTICE"):
            assert z.read(f"{dist_info}/licenses/{name}") == (REPO / name).read_bytes()
            assert f"License-File: {name}" in metadata
    assert "License-Expression: Apache-2.0" in metadata


def test_every_jar_carries_the_license_and_notice(wheel: Path) -> None:
    # META-INF/LICENSE and META-INF/NOTICE: build.sbt maps the repository's files into each jar
    with zipfile.ZipFile(wheel) as z:
        jars = {n: z.read(n) for n in z.namelist() if n.endswith(".jar")}
    assert len(jars) == len(SCALA_FOR_SPARK_LINE)
    for name, data in jars.items():
        with zipfile.ZipFile(io.BytesIO(data)) as jar:
            inner = set(jar.namelist())
            for legal in ("LICENSE", "NOTICE"):
                assert f"META-INF/{legal}" in inner, f"{name} lacks META-INF/{legal}"
                assert jar.read(f"META-INF/{legal}") == (REPO / legal).read_bytes(), name


@pytest.mark.parametrize("write_path", WRITE_PATHS)
def test_round_trip_from_the_installed_wheel_on_the_newest_spark(
    installed: Path, write_path: str, tmp_path: Path
) -> None:
    script = tmp_path / "round_trip.py"
    script.write_text(ROUND_TRIP)
    proc = run([installed, script, write_path, tmp_path / "t"], 900, cwd=tmp_path, env=user_env())
    result = json.loads(proc.stdout.strip().splitlines()[-1])

    assert tuple(int(p) for p in result["pyspark"].split(".")[:2]) == NEWEST_LINE
    site = installed.parent.parent
    assert Path(result["hudi_md"]).is_relative_to(site)  # the installed package, not the repository
    assert outside_the_repository(result["sys_path"], site, tmp_path)
    assert Path(result["jar"]).is_relative_to(site)
    assert Path(result["jar"]).name == jar_name(result["pyspark"])
    assert result["spark_jars"] == result["jar"]
    assert [tuple(r) for r in result["rows"]] == [tuple(r) for r in result["expected"]]
    assert len(result["rows"]) == 25
    assert result["eu"] == 9  # i % 3 == 0 for i in 0..24
