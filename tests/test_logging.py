"""hudi-md's ``logging`` records: one INFO record per commit (table, instant, operation, files, rows,
metadata-table time), a DEBUG record per plan (its pruning counters and what it cost in storage
requests) and per read (rows, slices); and no handler that emits anything installed by the
library."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest

import hudi_md
from hudi_md.write import services
from hudi_md.write.writer import HudiWriter
from table_model import rows

OPTIONS = {
    "hoodie.table.name": "logged",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "city",
    "hoodie.datasource.write.precombine.field": "ts",
}


def _records(caplog: pytest.LogCaptureFixture, logger: str, level: int) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == logger and r.levelno == level]


def test_a_write_and_a_filtered_read_are_logged(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = str(tmp_path / "t")
    hudi_md.write(rows(range(30), 1, seed=1), path, operation="insert", options=OPTIONS)
    caplog.set_level(logging.DEBUG, logger="hudi_md")
    caplog.clear()

    result = hudi_md.write(rows(range(20, 40), 2, seed=2), path, operation="upsert", options=OPTIONS)
    (commit,) = _records(caplog, "hudi_md.write.result", logging.INFO)
    assert commit.write_result is result and commit.table == path  # type: ignore[attr-defined]
    message = commit.getMessage()
    for shown in (
        f"commit {result} on {path}",
        "upsert",
        f"rows +{result.rows_inserted} ~{result.rows_updated} -0",
        f"files +{result.files_added} -{result.files_removed}",
        f"{result.bytes_written} bytes written",
        f"metadata table {result.mdt_seconds:.3f} s",
    ):
        assert shown in message, (shown, message)
    assert (result.rows_inserted, result.rows_updated) == (10, 10)

    caplog.clear()
    table = hudi_md.open_table(path)
    filters = [("city", "=", "sf"), ("fare", ">", 20.0)]
    read = table.read(filters=filters, columns=["id", "fare"])
    (plan,) = _records(caplog, "hudi_md.planning.planner", logging.DEBUG)
    counters = table.plan(filters).counters  # the same plan, again (answered from memory)
    assert plan.plan_counters == counters  # type: ignore[attr-defined]
    assert counters["partitions_after_partition_pruning"] == 1  # city = 'sf'
    assert counters["file_slices"] == len(table.plan(filters).slices) > 0
    text = plan.getMessage()
    assert text.startswith(f"plan {table.uri}: filter ") and "city" in text and "as of latest" in text
    assert ", ".join(f"{k} {v}" for k, v in counters.items()) in text
    # what the plan cost: storage requests, the metadata table's among them
    assert " storage requests (" in text and " to the metadata table), " in text and " bytes read, " in text
    (done,) = _records(caplog, "hudi_md.planning.scan", logging.DEBUG)
    assert done.getMessage().startswith(f"read {table.uri}: snapshot query, filter ")
    assert (
        f": {read.num_rows} rows from {len(table.plan(filters).slices)} file slices in " in done.getMessage()
    )
    again = [r for r in _records(caplog, "hudi_md.planning.planner", logging.DEBUG) if r is not plan]
    assert again and all("answered from memory" in r.getMessage() for r in again)


def test_a_stream_is_logged_when_it_is_consumed(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = str(tmp_path / "t")
    hudi_md.write(rows(range(30), 1, seed=1), path, operation="insert", options=OPTIONS)
    table = hudi_md.open_table(path)
    caplog.set_level(logging.DEBUG, logger="hudi_md")
    reader = table.read_batches()
    assert _records(caplog, "hudi_md.planning.scan", logging.DEBUG) == []
    assert reader.read_all().num_rows == 30
    (done,) = _records(caplog, "hudi_md.planning.scan", logging.DEBUG)
    assert ": 30 rows from 3 file slices in " in done.getMessage()


def test_table_services_log_their_commits(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = str(tmp_path / "t")
    opts = {**OPTIONS, "hoodie.datasource.write.table.type": "MERGE_ON_READ"}
    hudi_md.write(rows(range(30), 1, seed=1), path, operation="insert", options=opts)
    hudi_md.write(rows(range(0, 30, 2), 2, seed=2), path, operation="upsert", options=opts)
    caplog.set_level(logging.INFO, logger="hudi_md")
    caplog.clear()
    compaction = services.compact(HudiWriter(path, opts))
    assert compaction is not None
    (record,) = _records(caplog, "hudi_md.write.result", logging.INFO)
    assert record.write_result is compaction  # type: ignore[attr-defined]
    assert record.getMessage().startswith(f"committed commit {compaction} on ")
    assert f": compact, rows +0 ~0 -0, files +3 -{compaction.files_removed}, " in record.getMessage()


_NO_HANDLER_CHECK = """
import importlib, logging, pkgutil
import hudi_md
for info in pkgutil.walk_packages(hudi_md.__path__, "hudi_md."):
    if info.name.endswith("__main__") or info.name.endswith("migrations.env"):
        continue
    importlib.import_module(info.name)
ours = [n for n in logging.root.manager.loggerDict if n == "hudi_md" or n.startswith("hudi_md.")]
assert ours, "the package logs through named loggers"
# the application decides where records go; a NullHandler (which drops them) decides nothing
with_handlers = [
    n for n in ours if any(type(h) is not logging.NullHandler for h in logging.getLogger(n).handlers)
]
assert with_handlers == [], with_handlers
assert logging.getLogger("hudi_md").level == logging.NOTSET
"""


def test_the_library_adds_no_handler() -> None:
    """Importing every module adds no handler and sets no level. In a fresh interpreter: the
    ``hudi-md`` CLI (an application) adds one for ``--debug``, and in-process CLI tests keep it."""
    proc = subprocess.run(
        [sys.executable, "-c", _NO_HANDLER_CHECK], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
