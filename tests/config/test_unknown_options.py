"""A ``hoodie.*`` / ``hudi_md.*`` key nothing reads warns once per key and process, naming the
nearest known key, wherever options come in: the Python API, the CLI's ``-o``, and the Spark
plugin's Python side (its planner and write requests, TBLPROPERTIES among their options). Apache
Hudi's own keys that hudi-md does not use are no mistake: logged at INFO, not warned."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

import hudi_md
from hudi_md.config import UnknownOptionWarning, check_options
from hudi_md.config.unknown import forget_checked, nearest_key
from hudi_md.errors import UnknownOptionWarning as ErrorsUnknownOptionWarning

OPTS = {
    "hoodie.table.name": "t",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.precombine.field": "ts",
}
MISSPELT = "hoodie.metadata.enabel"
WARNING = "unknown option hoodie.metadata.enabel (did you mean hoodie.metadata.enable?)"
HUDI_ONLY = "hoodie.upsert.shuffle.parallelism"


@pytest.fixture(autouse=True)
def fresh_process_memory() -> Iterator[None]:
    """Each test starts as a new process would: no key reported yet."""
    forget_checked()
    yield
    forget_checked()


@pytest.fixture
def table(tmp_path: Path) -> str:
    path = str(tmp_path / "t")
    hudi_md.write(pa.table({"id": ["a", "b"], "ts": [1, 2]}), path, options=OPTS)
    forget_checked()
    return path


def unknown_option_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, UnknownOptionWarning)]


def test_the_warning_class_is_exported_from_config_and_errors() -> None:
    assert UnknownOptionWarning is ErrorsUnknownOptionWarning
    assert issubclass(UnknownOptionWarning, UserWarning)


def test_a_misspelt_key_warns_once_with_the_nearest_key(table: str, caplog: pytest.LogCaptureFixture) -> None:
    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.INFO, "hudi_md.config"):
        warnings.simplefilter("always")
        first = hudi_md.open_table(table, {MISSPELT: "false"})
        hudi_md.open_table(table, {MISSPELT: "false"})
        hudi_md.open_table(table, {"hudi_md.planner.colum.stats.memory.budget": "1g"})
    assert unknown_option_warnings(caught) == [
        WARNING,
        "unknown option hudi_md.planner.colum.stats.memory.budget "
        "(did you mean hudi_md.planner.column.stats.memory.budget?)",
    ]
    logged = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert [r.getMessage() for r in logged][:1] == [WARNING]
    # ignored, as the warning says: the metadata table is used (hoodie.metadata.enable not set)
    assert first.metadata_table is not None


def test_a_write_warns_too(tmp_path: Path) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        hudi_md.write(
            pa.table({"id": ["a"], "ts": [1]}),
            str(tmp_path / "t"),
            options={**OPTS, "hoodie.datasource.write.recordkey.feild": "ts"},
        )
    assert unknown_option_warnings(caught) == [
        "unknown option hoodie.datasource.write.recordkey.feild "
        "(did you mean hoodie.datasource.write.recordkey.field?)"
    ]


def test_apache_hudis_own_keys_are_logged_not_warned(table: str, caplog: pytest.LogCaptureFixture) -> None:
    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.INFO, "hudi_md.config"):
        warnings.simplefilter("always")
        options = {HUDI_ONLY: "8", "hoodie.datasource.hive_sync.enable": "true", "path": "x"}
        hudi_md.open_table(table, {k: v for k, v in options.items() if k != "path"})
        hudi_md.open_table(table, {HUDI_ONLY: "8"})
    assert unknown_option_warnings(caught) == []
    infos = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert infos.count(f"{HUDI_ONLY} is Apache Hudi's option; hudi-md does not use it") == 1
    assert "hoodie.datasource.hive_sync.enable is Apache Hudi's option; hudi-md does not use it" in infos


def test_keys_read_under_a_prefix_and_storage_options_are_not_checked() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_options(
            {
                "hoodie.record.merge.property.hoodie.payload.delete.field": "op",  # a table's merge property
                "hoodie.cleaner.commits.retained": "3",  # an older name, read too
                "key": "s3 access key",
                "endpoint_url": "http://localhost:9000",
            }
        )
    assert unknown_option_warnings(caught) == []


def test_the_suggestion_is_the_nearest_known_key_or_none() -> None:
    assert nearest_key("hoodie.cleaner.commits.retaind") == "hoodie.cleaner.commits.retained"
    # a misspelling of Apache Hudi's key (not hudi-md's) is suggested that key
    assert nearest_key("hoodie.upsert.shuffle.paralelism") == HUDI_ONLY
    assert nearest_key("hoodie.nothing.like.this") is None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_options(["hoodie.nothing.like.this"])
    assert unknown_option_warnings(caught) == ["unknown option hoodie.nothing.like.this"]


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hudi_md.cli", *args], capture_output=True, text=True, timeout=120
    )


def test_the_cli_warns_in_one_line(table: str) -> None:
    proc = run_cli("table", "show", table, "-o", f"{MISSPELT}=true", "--json")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == [f"hudi-md: warning: {WARNING}"]
    assert proc.stdout.lstrip().startswith("{")  # the JSON on stdout is left alone
    quiet = run_cli("table", "show", table, "-o", f"{HUDI_ONLY}=4")
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr == ""


def test_the_spark_planner_checks_the_options_spark_sends(table: str) -> None:
    """The planner process (Python, run by the shim) checks a request's options: the reader's and
    the table's (TBLPROPERTIES come in them). No JVM here: the request is made by hand."""
    from hudi_md.spark import protocol as P
    from hudi_md.spark.planner import Planner

    request = {P.OP: P.OP_SCHEMA, P.PATH: table, P.OPTIONS: {MISSPELT: "true", HUDI_ONLY: "2"}}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        header, _ = Planner().handle(request)
    assert header[P.OK] is True
    assert unknown_option_warnings(caught) == [WARNING]


def test_the_planners_warning_is_a_line_the_shim_logs_at_warn() -> None:
    """The shim copies the planner's stderr into the driver's log, lines starting with the
    protocol's warning prefix at WARN (Spark's shells show WARN, not INFO): the planner's logging
    setup writes the unknown-option warning as such a line."""
    from hudi_md.spark import protocol as P

    child = textwrap.dedent(
        f"""
        from hudi_md.config import check_options
        from hudi_md.spark.planner import configure_logging
        configure_logging()
        check_options({{{MISSPELT!r}: "true"}})
        """
    )
    proc = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    warned = [line for line in proc.stderr.splitlines() if WARNING in line]
    assert warned and all(line.startswith(P.LOG_WARNING_PREFIX) for line in warned), proc.stderr


def test_a_spark_sql_write_checks_tblproperties_and_session_options(table: str) -> None:
    from hudi_md.spark import protocol as P
    from hudi_md.spark.write_request import SqlCommand, WriteRequest, resolve

    sql = SqlCommand(
        command=P.SQL_INSERT,
        overwrite=False,
        partition_spec={},
        overwrite_mode="static",
        table="t",
        database="default",
        partition_columns=(),
        table_properties={"hoodie.compact.inline.max.delta.comits": "3", "spark.sql.sources.provider": "x"},
        session_options={},
    )
    request = WriteRequest(path=table, save_mode=P.SAVE_MODE_APPEND, options={}, sql=sql)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        resolve(request, hudi_md.open_table(table).state)
    assert unknown_option_warnings(caught) == [
        "unknown option hoodie.compact.inline.max.delta.comits "
        "(did you mean hoodie.compact.inline.max.delta.commits?)"
    ]
