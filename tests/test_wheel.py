"""The wheel as a user gets it: built from the repository (``pip wheel``), it carries the shim jar of
every Spark line, and installed with its ``spark`` extra into a fresh venv (pip picks the newest
PySpark the extra allows) it round-trips a table — written through a write path, read back through
``spark.read.format("hudi-md")`` — from a directory outside the repository, without PYTHONPATH.

pip's cache (~/.cache/pip) keeps the downloads and the PySpark wheel pip builds from its sdist, so
the venv costs about a minute after the first run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import venv
import zipfile
from pathlib import Path
from typing import Any

import pytest

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


def _run(args: list[str], timeout: float, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kwargs)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-40:])
        pytest.fail(f"{' '.join(args[:4])} ... failed ({proc.returncode}):\n{tail}", pytrace=False)
    return proc


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``pip wheel`` of a copy of the repository's package sources (an in-tree build would write
    build/ and *.egg-info into the repository)."""
    src = tmp_path_factory.mktemp("wheel-src")
    for name in ("pyproject.toml", "README.md", "LICENSE", "NOTICE"):
        shutil.copy2(REPO / name, src / name)
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info")
    shutil.copytree(REPO / "python", src / "python", ignore=skip)
    out = tmp_path_factory.mktemp("wheel")
    _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), str(src)], 600)
    (whl,) = out.glob("hudi_md-*.whl")
    return whl


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel and its ``spark`` extra (newest allowed PySpark); its python."""
    env_dir = tmp_path_factory.mktemp("wheel-venv")
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    _run([str(python), "-m", "pip", "install", "--quiet", f"{wheel}[spark]"], 1800, cwd=env_dir)
    return python


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


@pytest.mark.parametrize("write_path", WRITE_PATHS)
def test_round_trip_from_the_installed_wheel_on_the_newest_spark(
    installed: Path, write_path: str, tmp_path: Path
) -> None:
    script = tmp_path / "round_trip.py"
    script.write_text(ROUND_TRIP)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYSPARK_PYTHON", "VIRTUAL_ENV")}
    proc = _run([str(installed), str(script), write_path, str(tmp_path / "t")], 900, cwd=tmp_path, env=env)
    result = json.loads(proc.stdout.strip().splitlines()[-1])

    assert tuple(int(p) for p in result["pyspark"].split(".")[:2]) == NEWEST_LINE
    site = installed.parent.parent
    assert Path(result["hudi_md"]).is_relative_to(site)  # the installed package, not the repository
    assert not any(p and Path(p).resolve().is_relative_to(REPO) for p in result["sys_path"])
    assert Path(result["jar"]).is_relative_to(site)
    assert Path(result["jar"]).name == jar_name(result["pyspark"])
    assert result["spark_jars"] == result["jar"]
    assert [tuple(r) for r in result["rows"]] == [tuple(r) for r in result["expected"]]
    assert len(result["rows"]) == 25
    assert result["eu"] == 9  # i % 3 == 0 for i in 0..24
