from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fixtures import archives, unpack


@pytest.fixture(scope="session")
def fixture_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("hudi-fixtures")


@pytest.fixture(scope="session")
def table_path(fixture_root: Path):
    """``table_path("sample_table/cow/v6_empty.zip") -> Path`` of the unpacked table."""

    def get(archive: str) -> Path:
        return unpack(archive, fixture_root)

    return get


@pytest.fixture(scope="session")
def all_archives() -> list[str]:
    return archives()


@pytest.fixture(scope="session")
def spark():
    """One local SparkSession for the run; Python workers use this interpreter (with hudi_md)."""
    import os

    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("hudi-md-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.memory", "2g")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
