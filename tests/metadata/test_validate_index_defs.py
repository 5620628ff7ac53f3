"""``index_dropped``: an index ``index.json`` defines and the table config no longer lists is a
dropped index only when it was in use once (issue 36, part 4). Apache Hudi 1.2's ``CREATE INDEX
record_index`` on a table without column stats defines ``column_stats`` too and builds its MDT
partition without ever listing it in the table config (integration/test_validate_index_defs.py
shows it with Hudi's bundle); that is no dropped index."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
from click.testing import CliRunner

import hudi_md
from hudi_md.cli import main
from hudi_md.metadata import keys as K
from hudi_md.metadata.lifecycle import index_definitions, write_index_defs
from hudi_md.metadata.validate import validate_metadata_table
from hudi_md.storage import Storage
from hudi_md.table import config as C
from hudi_md.table.config import TableConfig, update_table_config

OPTIONS = {
    "hoodie.table.name": "t",
    "hoodie.datasource.write.recordkey.field": "uuid",
    "hoodie.datasource.write.partitionpath.field": "city",
    "hoodie.datasource.write.precombine.field": "ts",
}
FILES_ONLY = {
    "hoodie.metadata.index.column.stats.enable": "false",
    "hoodie.metadata.index.partition.stats.enable": "false",
    "hoodie.metadata.record.index.enable": "false",
}
WITH_COLUMN_STATS = {
    "hoodie.metadata.index.column.stats.enable": "true",
    "hoodie.metadata.index.partition.stats.enable": "false",
    "hoodie.metadata.record.index.enable": "false",
}


def _write(path: Path, n: int, extra: dict[str, str]) -> None:
    rows = pa.table(
        {
            "uuid": [f"k{n}{i}" for i in range(3)],
            "city": ["sf", "nyc", "sf"],
            "ts": [n] * 3,
            "fare": [float(n + i) for i in range(3)],
        }
    )
    hudi_md.write(rows, str(path), operation="upsert", options={**OPTIONS, **extra})


def _kinds(path: Path) -> list[str]:
    return [d.kind for d in validate_metadata_table(hudi_md.open_table(str(path)))]


def _storage(path: Path) -> Storage:
    return Storage(str(path))


def _unlist(path: Path, name: str) -> None:
    """What Apache Hudi's table config update leaves: ``name`` in neither partition list."""
    storage = _storage(path)
    config = TableConfig.load(storage)
    update_table_config(
        storage,
        {
            C.METADATA_PARTITIONS: ",".join(p for p in config.metadata_partitions if p != name),
            C.METADATA_PARTITIONS_INFLIGHT: ",".join(
                p for p in config.metadata_partitions_inflight if p != name
            ),
        },
    )


def test_a_definition_nothing_built_is_not_a_dropped_index(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _write(path, 1, FILES_ONLY)
    write_index_defs(_storage(path), [K.COLUMN_STATS], ["uuid", "city", "ts", "fare"])
    assert K.COLUMN_STATS in index_definitions(_storage(path))
    assert not (path / ".hoodie" / "metadata" / K.COLUMN_STATS).exists()
    assert _kinds(path) == []


def _build_column_stats(path: Path) -> None:
    """Build column_stats of the table as it is (its initialisation instant only)."""
    result = CliRunner().invoke(
        main, ["metadata", "create", str(path), "--partitions", "files,column_stats", "--no-progress"]
    )
    assert result.exit_code == 0, result.output
    assert K.COLUMN_STATS in TableConfig.load(_storage(path)).metadata_partitions


def test_a_build_the_config_never_listed_is_not_a_dropped_index(tmp_path: Path) -> None:
    """The state Hudi's ``CREATE INDEX record_index`` leaves: column_stats built by its
    initialisation instant only, its folder there, the config not listing it."""
    path = tmp_path / "t"
    _write(path, 1, FILES_ONLY)
    _write(path, 2, FILES_ONLY)
    _build_column_stats(path)
    _unlist(path, K.COLUMN_STATS)
    assert (path / ".hoodie" / "metadata" / K.COLUMN_STATS).is_dir()
    assert K.COLUMN_STATS in index_definitions(_storage(path))
    assert _kinds(path) == []


def test_an_index_built_used_and_dropped_is_reported(tmp_path: Path) -> None:
    """Apache Hudi 1.2's auto-deletion: config entry and folder gone, the definition left."""
    path = tmp_path / "t"
    _write(path, 1, WITH_COLUMN_STATS)
    _write(path, 2, WITH_COLUMN_STATS)
    assert _kinds(path) == []
    _unlist(path, K.COLUMN_STATS)
    shutil.rmtree(path / ".hoodie" / "metadata" / K.COLUMN_STATS)
    assert _kinds(path) == ["index_dropped"]


def test_an_index_dropped_right_after_its_build_is_reported(tmp_path: Path) -> None:
    """Built by its initialisation only, then dropped (folder gone): still a dropped index."""
    path = tmp_path / "t"
    _write(path, 1, FILES_ONLY)
    _build_column_stats(path)
    _unlist(path, K.COLUMN_STATS)
    shutil.rmtree(path / ".hoodie" / "metadata" / K.COLUMN_STATS)
    assert _kinds(path) == ["index_dropped"]
