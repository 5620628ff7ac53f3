"""The Spark lines the shim is built for are one list: ``SCALA_FOR_SPARK_LINE`` in
``hudi_md/spark/session.py``. build.sbt has a project per line, compiled with that line's Scala,
``python/hudi_md/jars/`` holds exactly one committed jar (and its sources stamp) per line, each
jar's manifest names its line, ``scripts/spark-lines`` prints them, and pyproject's ``spark`` extra
accepts every line and nothing newer."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

from packaging.requirements import Requirement

from hudi_md.spark.session import JARS_DIR, SCALA_FOR_SPARK_LINE, jar_name

from fixtures import shim_sources_sha256

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: pip vendors the same parser
    from pip._vendor import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
LINES = sorted(SCALA_FOR_SPARK_LINE)


def _line(major_minor: tuple[int, int]) -> str:
    return f"{major_minor[0]}.{major_minor[1]}"


def test_build_sbt_has_one_project_per_line_with_its_scala() -> None:
    text = (REPO / "build.sbt").read_text()
    project = r'lazy val (spark\d+) = shimFor\(\s*"(\d+\.\d+)", "([\d.]+)", "(2\.1\d)\.\d+"'
    projects = re.findall(project, text)
    assert [(line, scala) for _, line, _, scala in projects] == [
        (_line(k), SCALA_FOR_SPARK_LINE[k]) for k in LINES
    ]
    for project, line, spark, _ in projects:
        assert project == "spark" + line.replace(".", "")
        assert spark.startswith(line + ".")  # compiled against a release of that line
    aggregated = re.search(r"\.aggregate\(([^)]*)\)", text)
    assert aggregated is not None
    assert [p.strip() for p in aggregated.group(1).split(",")] == [p for p, *_ in projects]


def test_one_committed_jar_per_line_naming_its_line() -> None:
    expected = {jar_name(f"{_line(k)}.0") for k in LINES}
    assert {p.name for p in JARS_DIR.glob("*.jar")} == expected
    stamps = set()
    for name in sorted(expected):
        jar = JARS_DIR / name
        stamp = jar.with_suffix(".sources.sha256")
        assert re.fullmatch(r"[0-9a-f]{64}\n", stamp.read_text()), stamp
        stamps.add(stamp.read_text())
        with zipfile.ZipFile(jar) as z:
            lines = z.read("META-INF/MANIFEST.MF").decode().splitlines()
            manifest = dict(line.split(": ", 1) for line in lines if ": " in line)
            assert "hudi/md/spark/DefaultSource.class" in z.namelist()
        line = name.removeprefix("hudi-md-spark-").split("_")[0]
        assert manifest["Spark-Line"] == line
        assert manifest["Spark-Version"].startswith(line + ".")
        assert 50_000 < jar.stat().st_size < 600_000  # the shim's own classes only (no bundled library)
    # Every jar was built from the checked-out sources (the wheel ships them as they are).
    assert stamps == {shim_sources_sha256() + "\n"}, "stale shim jars: run scripts/build-shim and commit them"


def test_scripts_list_the_same_lines() -> None:
    out = subprocess.run(
        [str(REPO / "scripts" / "spark-lines"), "--scala"], capture_output=True, text=True, check=True
    ).stdout
    assert out.split("\n")[:-1] == [f"{_line(k)} {SCALA_FOR_SPARK_LINE[k]}" for k in LINES]
    newest = subprocess.run(
        [str(REPO / "scripts" / "spark-lines"), "--newest"], capture_output=True, text=True, check=True
    ).stdout
    assert newest == _line(LINES[-1]) + "\n"


def test_the_spark_extra_accepts_every_line_and_nothing_newer() -> None:
    extra = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["spark"]
    (pyspark,) = [Requirement(r) for r in extra if Requirement(r).name == "pyspark"]
    for major, minor in LINES:
        assert pyspark.specifier.contains(f"{major}.{minor}.0"), (major, minor)
        assert pyspark.specifier.contains(f"{major}.{minor}.9"), (major, minor)
    newest = LINES[-1]
    assert not pyspark.specifier.contains(f"{newest[0]}.{newest[1] + 1}.0")
    oldest = LINES[0]
    assert not pyspark.specifier.contains(f"{oldest[0]}.{oldest[1] - 1}.4")
