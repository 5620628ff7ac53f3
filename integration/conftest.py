"""Session fixtures of the Apache Hudi interoperability suite: the Hudi Spark bundle (fetched by
``scripts/fetch-hudi-bundle``) and one local SparkSession that runs it beside hudi-md."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "ci: the small slice of the Hudi interoperability suite that CI runs")
    config.addinivalue_line("markers", "hudi_writes: Apache Hudi writes, hudi-md reads")
    config.addinivalue_line("markers", "hudi_md_writes: hudi-md writes, Apache Hudi reads and validates")


def _bundle_jars() -> list[str]:
    """Jar paths: ``HUDI_BUNDLE_JARS`` (colon-separated) or ``scripts/fetch-hudi-bundle``'s output."""
    env = os.environ.get("HUDI_BUNDLE_JARS")
    if env:
        jars = [j for j in env.split(":") if j]
    else:
        script = ROOT / "scripts" / "fetch-hudi-bundle"
        try:
            out = subprocess.run([str(script)], check=True, capture_output=True, text=True, timeout=1800)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as e:
            err = getattr(e, "stderr", "") or str(e)
            pytest.exit(f"scripts/fetch-hudi-bundle failed: {err.strip()}", returncode=2)
        jars = [line.strip() for line in out.stdout.splitlines() if line.strip().endswith(".jar")]
    missing = [j for j in jars if not Path(j).is_file()]
    if not jars or missing:
        pytest.exit(f"Hudi bundle jars missing: {missing or 'none printed'}", returncode=2)
    return jars


@pytest.fixture(scope="session")
def bundle_jars() -> list[str]:
    return _bundle_jars()


@pytest.fixture(scope="session")
def spark(bundle_jars: list[str]):
    """One local SparkSession with Apache Hudi's bundle and hudi-md's shim (for
    ``df.write.format("hudi-md")``); Python workers run this interpreter, so hudi-md's
    ``mapInArrow`` functions import ``hudi_md``."""
    from hudi_md.spark.session import jar_path

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("TZ", "UTC")
    from pyspark.sql import SparkSession

    started = time.monotonic()
    session = (
        SparkSession.builder.master("local[2]")
        .appName("hudi-md-integration")
        .config("spark.jars", ",".join([*bundle_jars, jar_path()]))
        .config("spark.serializer", "org.apache.spark.serializer.KryoSerializer")
        .config("spark.sql.extensions", "org.apache.spark.sql.hudi.HoodieSparkSessionExtension")
        .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.hudi.catalog.HoodieCatalog")
        .config("spark.kryo.registrator", "org.apache.spark.HoodieSparkKryoRegistrar")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.driver.memory", "3g")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.warehouse.dir", str(ROOT / "build" / "spark-warehouse"))
        .config("spark.driver.extraJavaOptions", "-Duser.timezone=UTC")
        .config("spark.executor.extraJavaOptions", "-Duser.timezone=UTC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    sys.stderr.write(
        f"\n[integration] SparkSession with {', '.join(Path(j).name for j in bundle_jars)} "
        f"started in {time.monotonic() - started:.1f}s\n"
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def hudi(spark):
    """Apache Hudi's own view of a table (py4j into the bundle): see ``hudi_oracle.Hudi``."""
    from hudi_oracle import Hudi

    return Hudi(spark)


@pytest.fixture(scope="session")
def tables_root(request: pytest.FixtureRequest) -> Path:
    """A fresh directory for this run's tables under ``HUDI_INTEGRATION_TABLES`` or
    ``build/integration-tables`` (not pytest's rotating tmp dirs, which a concurrent pytest run may
    prune; one directory per run, so concurrent runs do not share tables). Removed after a run
    without failures, kept otherwise for inspection; runs older than a day are pruned."""
    parent = Path(os.environ.get("HUDI_INTEGRATION_TABLES") or ROOT / "build" / "integration-tables")
    parent.mkdir(parents=True, exist_ok=True)
    for old in parent.glob("run-*"):
        with contextlib.suppress(OSError):
            if time.time() - old.stat().st_mtime > 86400:
                shutil.rmtree(old, ignore_errors=True)
    root = Path(tempfile.mkdtemp(prefix=f"run-{time.strftime('%Y%m%d-%H%M%S')}-", dir=parent))
    yield root
    if request.session.testsfailed == 0:
        shutil.rmtree(root, ignore_errors=True)
    else:
        sys.stderr.write(f"\n[integration] tables kept in {root}\n")
