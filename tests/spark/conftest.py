"""A SparkSession with the ``hudi-md`` JVM shim on its classpath (``spark.jars``).

The shim jar is built with ``scripts/build-shim`` when it is missing or was built from other
sources than the checked-out ones (``<jar>.sources.sha256``); a failed build fails the tests.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures import shim_sources_sha256

REPO = Path(__file__).resolve().parents[2]
JARS = REPO / "python" / "hudi_md" / "jars"


@pytest.fixture(scope="session")
def shim_jar() -> str:
    """The shim jar of the running PySpark's line, rebuilt (``scripts/build-shim <line>``) when it
    is missing or stale."""
    import pyspark

    from hudi_md.spark.session import jar_name, spark_line

    name = jar_name(pyspark.__version__)
    line = ".".join(map(str, spark_line(pyspark.__version__) or ()))
    jar = JARS / name
    stamp = jar.with_suffix(".sources.sha256")
    if jar.is_file() and stamp.is_file() and stamp.read_text().strip() == shim_sources_sha256():
        return str(jar)
    why = "missing" if not jar.is_file() else "built from other sources"
    try:
        proc = subprocess.run(
            [str(REPO / "scripts" / "build-shim"), line],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=1500,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        pytest.fail(f"{name} is {why} and scripts/build-shim could not run: {e}", pytrace=False)
    if proc.returncode != 0 or not jar.is_file():
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-40:])
        pytest.fail(f"{name} is {why} and scripts/build-shim failed:\n{tail}", pytrace=False)
    return str(jar)


@pytest.fixture(scope="module")
def hudi_spark(shim_jar: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A local[2] session started with the shim in ``spark.jars`` (through
    ``hudi_md.spark.session.configure``), stopped after the module.

    A SparkContext already running in this process (e.g. the session-wide ``spark`` fixture, when
    other tests ran first) cannot take a new ``spark.jars``; it is reused with ``ADD JAR`` instead,
    which makes the jar visible to this (the main) thread only. It is left running.
    """
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    from hudi_md.spark.session import configure

    active = SparkContext._active_spark_context
    if active is not None:
        session = SparkSession.builder.getOrCreate()
        if shim_jar not in active.getConf().get("spark.jars", "").split(","):
            session.sql(f"ADD JAR '{shim_jar}'")
        session.conf.set("spark.sql.session.timeZone", "UTC")
        yield session
        return
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("hudi-md-shim-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.memory", "2g")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.warehouse.dir", str(tmp_path_factory.mktemp("warehouse")))
    )
    session = configure(builder).getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
