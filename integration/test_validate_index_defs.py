"""``hudi-md metadata validate`` on the index definitions Apache Hudi 1.2 leaves (issue 36, part 4).

* ``CREATE INDEX record_index`` on a Hudi table written without column stats: Hudi's ``index.json``
  then defines ``column_stats`` too, and Hudi builds that MDT partition (its initialisation
  instant) without ever listing it in ``hoodie.table.metadata.partitions``. No writer used it:
  validate reports no ``index_dropped`` (it did, falsely, before).
* A Hudi writer whose options do not enable the record index drops it
  (``hoodie.metadata.auto.delete.partitions``: config entry and folder gone) and leaves its
  definition: that is a dropped index, still reported.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

IN_PROCESS_LOCK = "org.apache.hudi.client.transaction.lock.InProcessLockProvider"
ROWS = [("k1", "a", 1, 1.0), ("k2", "b", 1, 2.0), ("k3", "a", 1, 3.0)]


def _options(name: str, **extra: str) -> dict[str, str]:
    return {
        "hoodie.table.name": name,
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.operation": "upsert",
        "hoodie.metadata.enable": "true",
        "hoodie.upsert.shuffle.parallelism": "2",
        "hoodie.insert.shuffle.parallelism": "2",
        **extra,
    }


def _hudi_write(spark: Any, path: Path, options: dict[str, str]) -> None:
    df = spark.createDataFrame(ROWS, "id string, city string, ts long, fare double")
    df.write.format("hudi").options(**options).mode("append").save(str(path))


def _config(path: Path) -> dict[str, str]:
    out = {}
    for line in (path / ".hoodie" / "hoodie.properties").read_text().splitlines():
        if "=" in line and not line.startswith("#"):
            k, _, v = line.partition("=")
            out[k] = v
    return out


def _definitions(path: Path) -> dict[str, Any]:
    return json.loads((path / ".hoodie" / ".index_defs" / "index.json").read_text())["indexDefinitions"]


def _validate(path: Path) -> list[Any]:
    import hudi_md
    from hudi_md.metadata.validate import validate_metadata_table

    return validate_metadata_table(hudi_md.open_table(str(path)))


@pytest.mark.ci
def test_create_index_record_index_is_no_dropped_column_stats(spark: Any, tables_root: Path) -> None:
    import hudi_md

    name, path = "vid_create_index", tables_root / "vid-create-index"
    _hudi_write(
        spark,
        path,
        _options(
            name,
            **{
                "hoodie.metadata.index.column.stats.enable": "false",
                "hoodie.metadata.index.partition.stats.enable": "false",
                "hoodie.metadata.record.index.enable": "false",
            },
        ),
    )
    spark.sql(f"CREATE TABLE {name} USING hudi LOCATION '{path}'")
    try:
        spark.sql(f"SET hoodie.write.lock.provider={IN_PROCESS_LOCK}")
        try:
            spark.sql(f"CREATE INDEX record_index ON {name} (id)")
        finally:
            spark.sql("RESET hoodie.write.lock.provider")
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")
    # Apache Hudi 1.2's outcome, asserted so the test notices a change
    config = _config(path)
    listed = config["hoodie.table.metadata.partitions"].split(",")
    assert "record_index" in listed and "column_stats" not in listed
    assert not config.get("hoodie.table.metadata.partitions.inflight")
    assert {"record_index", "column_stats"} <= set(_definitions(path))
    assert (path / ".hoodie" / "metadata" / "column_stats").is_dir()  # built, never listed
    # hudi-md: no dropped index, nothing else either; the table reads
    diffs = _validate(path)
    assert diffs == [], [d.describe() for d in diffs]
    rows = hudi_md.open_table(str(path)).read(columns=["id", "fare"]).sort_by("id").to_pylist()
    assert rows == [{"id": k, "fare": f} for k, _, _, f in ROWS]


def test_a_record_index_hudi_dropped_is_reported(spark: Any, tables_root: Path) -> None:
    path = tables_root / "vid-auto-delete"
    _hudi_write(spark, path, _options("vid_auto_delete", **{"hoodie.metadata.record.index.enable": "true"}))
    assert "record_index" in _config(path)["hoodie.table.metadata.partitions"].split(",")
    off = {
        "hoodie.metadata.record.index.enable": "false",
        "hoodie.metadata.index.column.stats.enable": "false",
        "hoodie.metadata.index.partition.stats.enable": "false",
    }
    _hudi_write(spark, path, _options("vid_auto_delete", **off))
    # Apache Hudi 1.2's auto-deletion: config entry and folder gone, the definition left
    assert _config(path)["hoodie.table.metadata.partitions"] == "files"
    assert not (path / ".hoodie" / "metadata" / "record_index").exists()
    assert "record_index" in _definitions(path)
    diffs = _validate(path)
    assert [(d.kind, "record_index" in d.detail) for d in diffs] == [("index_dropped", True)]
