"""Existing tables whose features hudi-md's writer would leave stale are refused before anything
is written (a secondary index: integration/test_unmaintained_features.py against Apache Hudi)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from hudi_md.errors import UnsupportedFeatureError
from hudi_md.storage import Storage
from hudi_md.table.config import TableConfig, write_table_config
from hudi_md.write.writer import HudiWriter

OPTS = {
    "hoodie.table.name": "t",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.precombine.field": "ts",
}


def _rows(ts: int) -> pa.Table:
    return pa.table({"id": ["a", "b"], "ts": [ts, ts]})


@pytest.mark.parametrize(
    ("prop", "value", "message"),
    [
        ("hoodie.table.cdc.enabled", "true", "change data capture"),
        ("hoodie.table.base.file.format", "ORC", "base files are ORC"),
        ("hoodie.populate.meta.fields", "false", "no meta fields"),
        ("hoodie.record.merge.mode", "CUSTOM", "merge mode is CUSTOM"),
        ("hoodie.table.partial.update.mode", "IGNORE_DEFAULTS", "partial updates"),
        ("hoodie.table.metadata.partitions", "files,secondary_index_by_name", "secondary_index_by_name"),
        ("hoodie.table.metadata.partitions.inflight", "expr_index_lower_name", "expr_index_lower_name"),
    ],
)
def test_refused_before_anything_is_written(tmp_path: Path, prop: str, value: str, message: str) -> None:
    HudiWriter(str(tmp_path), OPTS).write(_rows(1), "insert")
    storage = Storage(str(tmp_path))
    props = dict(TableConfig.load(storage).props)
    props[prop] = value
    write_table_config(storage, props)
    before = sorted(p for p in tmp_path.rglob("*") if p.is_file())
    with pytest.raises(UnsupportedFeatureError, match=message):
        HudiWriter(str(tmp_path), OPTS).write(_rows(2), "upsert")
    assert sorted(p for p in tmp_path.rglob("*") if p.is_file()) == before


def test_an_unmaintained_index_goes_with_the_metadata_table(tmp_path: Path) -> None:
    """Writing with the MDT off removes the MDT, and the index with it: allowed."""
    HudiWriter(str(tmp_path), OPTS).write(_rows(1), "insert")
    storage = Storage(str(tmp_path))
    props = dict(TableConfig.load(storage).props)
    props["hoodie.table.metadata.partitions"] += ",secondary_index_by_name"
    write_table_config(storage, props)
    HudiWriter(str(tmp_path), {**OPTS, "hoodie.metadata.enable": "false"}).write(_rows(2), "upsert")
    assert TableConfig.load(storage).metadata_partitions == []
