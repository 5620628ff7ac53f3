"""Typed reads through the registry: values parse as Apache Hudi parses them, a bad value raises
InvalidOptionError naming the key and the value, and it does so through the real entry points
(a write, ``open_table``, the CLI) before anything is written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import hudi_md
from hudi_md.config import metadata as M
from hudi_md.config import read as R
from hudi_md.config import services as S
from hudi_md.config import table as T
from hudi_md.config import write as W
from hudi_md.errors import InvalidOptionError

OPTS = {
    "hoodie.table.name": "t",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.precombine.field": "ts",
}


def rows() -> pa.Table:
    return pa.table({"id": ["a", "b"], "ts": [1, 2], "v": [1.5, 2.5]})


# --- parsing -----------------------------------------------------------------------------------------


def test_booleans_are_true_or_false_in_any_case() -> None:
    assert M.METADATA_ENABLE.get({"hoodie.metadata.enable": "FALSE"}) is False
    assert M.METADATA_ENABLE.get({"hoodie.metadata.enable": " True "}) is True
    assert M.METADATA_ENABLE.get({"hoodie.metadata.enable": False}) is False
    with pytest.raises(InvalidOptionError) as e:
        M.METADATA_ENABLE.get({"hoodie.metadata.enable": "yes"})
    assert str(e.value) == "hoodie.metadata.enable='yes': not true or false"


def test_numbers() -> None:
    assert W.MAX_FILE_SIZE.get({"hoodie.parquet.max.file.size": "1048576"}) == 1 << 20
    assert W.MAX_FILE_SIZE.get({"hoodie.parquet.max.file.size": 7}) == 7
    with pytest.raises(InvalidOptionError) as e:
        W.MAX_FILE_SIZE.get({"hoodie.parquet.max.file.size": "12x"})
    assert str(e.value) == "hoodie.parquet.max.file.size='12x': not an integer"
    assert R.PLANNER_MEMORY_BUDGET.get({R.PLANNER_MEMORY_BUDGET.key: "512m"}) == 512 << 20
    with pytest.raises(InvalidOptionError, match=r"hudi_md\.planner\.column\.stats\.memory\.budget='lots'"):
        R.PLANNER_MEMORY_BUDGET.get({R.PLANNER_MEMORY_BUDGET.key: "lots"})


def test_enums_take_any_case_and_give_the_declared_spelling() -> None:
    assert W.TABLE_TYPE.get({W.TABLE_TYPE.key: "merge_on_read"}) == "MERGE_ON_READ"
    assert R.QUERY_TYPE.get({R.QUERY_TYPE.key: "INCREMENTAL"}) == "incremental"
    with pytest.raises(InvalidOptionError) as e:
        W.TABLE_TYPE.get({W.TABLE_TYPE.key: "MOR"})
    assert str(e.value) == (
        "hoodie.datasource.write.table.type='MOR': not one of COPY_ON_WRITE, MERGE_ON_READ"
    )


def test_lists_are_comma_separated() -> None:
    assert W.RECORD_KEY.get({W.RECORD_KEY.key: " a, b ,,c"}) == ("a", "b", "c")
    assert W.RECORD_KEY.get({}) is None
    assert W.STATIC_OVERWRITE_PARTITIONS.get({}) == ()


def test_unset_and_empty_values_are_the_default() -> None:
    assert S.KEEP_MIN_COMMITS.get({}) == 20
    assert S.KEEP_MIN_COMMITS.get({S.KEEP_MIN_COMMITS.key: ""}) == 20
    assert S.KEEP_MIN_COMMITS.get({}, 7) == 7
    assert M.METADATA_ENABLE.get({}, None) is None  # the readers' "not said"
    assert not M.METADATA_ENABLE.is_set({M.METADATA_ENABLE.key: " "})


def test_older_names_are_read_and_the_current_one_wins() -> None:
    older = {"hoodie.cleaner.commits.retained": "4"}
    assert S.CLEANER_COMMITS_RETAINED.get(older) == 4
    assert S.CLEANER_COMMITS_RETAINED.given_key(older) == "hoodie.cleaner.commits.retained"
    assert S.CLEANER_COMMITS_RETAINED.get({**older, "hoodie.clean.commits.retained": "6"}) == 6
    with pytest.raises(InvalidOptionError, match=r"^hoodie\.cleaner\.commits\.retained='x': "):
        S.CLEANER_COMMITS_RETAINED.get({"hoodie.cleaner.commits.retained": "x"})
    # Hudi 1.2's name of the record index switch, and its older one
    assert M.RECORD_INDEX_ENABLE.get({"hoodie.metadata.record.index.enable": "true"}) is True


def test_the_table_config_keeps_its_own_leniency() -> None:
    """``hoodie.properties`` is read as Hudi reads it (a boolean is true only when it says so), not
    refused: a table written by another tool stays readable."""
    from hudi_md.table.config import TableConfig

    config = TableConfig(props={T.TABLE_NAME.key: "t", T.CDC_ENABLED.key: "yes"})
    assert config.cdc_enabled is False
    assert config.timeline_history_path == T.TIMELINE_HISTORY_PATH.default == "history"


# --- through the entry points ------------------------------------------------------------------------


def test_a_write_refuses_a_bad_value_before_writing(tmp_path: Path) -> None:
    path = tmp_path / "t"
    with pytest.raises(InvalidOptionError) as e:
        hudi_md.write(rows(), str(path), options={**OPTS, "hoodie.parquet.max.file.size": "12x"})
    assert str(e.value) == "hoodie.parquet.max.file.size='12x': not an integer"
    assert not (path / ".hoodie").exists()
    # a storage option read through the registry too (the retry keys): refused as well
    retries = {**OPTS, "hoodie.filesystem.operation.retry.max_numbers": "many"}
    with pytest.raises(InvalidOptionError, match=r"retry\.max_numbers='many': not an integer"):
        hudi_md.write(rows(), str(path), options=retries)
    assert not (path / ".hoodie").exists()


def test_a_write_to_an_existing_table_refuses_a_bad_value(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    hudi_md.write(rows(), path, options=OPTS)
    before = sorted(p.name for p in (tmp_path / "t" / ".hoodie" / "timeline").iterdir())
    for key, value, reason in (
        ("hoodie.clean.commits.retained", "ten", "not an integer"),
        ("hoodie.metadata.index.column.stats.enable", "on", "not true or false"),
        ("hoodie.write.concurrency.mode", "optimistic", "not one of"),
    ):
        with pytest.raises(InvalidOptionError) as e:
            hudi_md.write(rows(), path, options={**OPTS, key: value})
        assert str(e.value).startswith(f"{key}='{value}': {reason}")
    assert sorted(p.name for p in (tmp_path / "t" / ".hoodie" / "timeline").iterdir()) == before


def test_open_table_refuses_a_bad_value(tmp_path: Path) -> None:
    """Every known key given is checked when the table is opened, whether or not that read uses it
    (the record index switch is read only by plans the record index could prune)."""
    path = str(tmp_path / "t")
    hudi_md.write(rows(), path, options=OPTS)
    for key, value, reason in (
        ("hoodie.metadata.enable", "maybe", "not true or false"),
        ("hoodie.metadata.global.record.level.index.enable", "sometimes", "not true or false"),
        (
            "hudi_md.planner.column.stats.memory.budget",
            "lots",
            "not a size in bytes (e.g. 536870912 or 512m)",
        ),
        ("hoodie.datasource.query.type", "latest", "not one of snapshot, read_optimized, incremental"),
    ):
        with pytest.raises(InvalidOptionError) as e:
            hudi_md.open_table(path, {key: value})
        assert str(e.value) == f"{key}='{value}': {reason}"
    # a value that parses, but that the reader refuses when it uses it, names it too
    with pytest.raises(InvalidOptionError, match=r"memory\.budget='0': not a positive size"):
        hudi_md.open_table(path, {"hudi_md.planner.column.stats.memory.budget": "0"}).read(
            filters=[("v", ">", 2.0)]
        )


def test_the_cli_refuses_a_bad_value_in_one_line(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    hudi_md.write(rows(), path, options=OPTS)
    proc = subprocess.run(
        [sys.executable, "-m", "hudi_md.cli", "table", "show", path, "-o", "hoodie.metadata.enable=maybe"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert "hoodie.metadata.enable='maybe': not true or false" in proc.stderr
    assert "Traceback" not in proc.stderr
