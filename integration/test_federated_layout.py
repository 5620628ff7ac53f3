"""What Apache Hudi 1.2 makes of a table written with hudi-md's federated storage layout (RFC-60,
which Hudi never shipped): its ``.hoodie/`` is a normal version-9 table, so Hudi reads the timeline,
the table config and the MDT (partitions, file listings by logical name, column stats, record
index) as hudi-md does; the data files are not under the table path, so a Hudi snapshot query
cannot return the rows. The test pins both, so that docs/guide/federated-layout.md stays true, and checks
that a default-layout table is untouched by the feature (Hudi reads it as before)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from hudi_oracle import Hudi

pytestmark = pytest.mark.hudi_md_writes

OPTS = {
    "hoodie.table.name": "fed",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "city",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.hive_style_partitioning": "true",
    "hoodie.datasource.write.table.type": "COPY_ON_WRITE",
    "hoodie.metadata.record.index.enable": "true",
}
FEDERATED = {
    "hoodie.storage.strategy.class": "hudi_md.storage.strategy.ObjectStoreStorageStrategy",
}


def _rows(n: int, ts: int) -> pa.Table:
    return pa.table(
        {
            "id": [f"k{i:03d}" for i in range(n)],
            "city": [["sf", "nyc", "la"][i % 3] for i in range(n)],
            "ts": [ts] * n,
            "fare": [float(i) for i in range(n)],
        }
    )


@pytest.mark.ci
def test_hudi_reads_a_federated_tables_metadata_but_not_its_data(spark: Any, tables_root: Path) -> None:
    import hudi_md

    path = tables_root / "federated"
    opts = {**OPTS, **FEDERATED, "hoodie.storage.path": str(tables_root / "federated-data")}
    hudi_md.write(_rows(30, 1), str(path), operation="insert", options=opts)
    hudi_md.write(_rows(12, 2), str(path), operation="upsert", options=opts)
    ours = hudi_md.open_table(str(path))
    hudi = Hudi(spark)
    # the metadata: partitions through the MDT, the latest slices by logical name, the record index
    assert sorted(hudi.partitions(str(path), metadata=True)) == sorted(ours.partitions())
    slices = hudi.latest_file_slices(str(path), metadata=True)
    view = ours.state.file_system_view()
    want = sorted((s.partition_path, s.file_id) for s in view.latest_file_slices(ours.partitions()))
    assert sorted((s.partition, s.file_id) for s in slices) == want
    keys = [f"k{i:03d}" for i in range(30)]
    located = hudi.record_index(str(path), keys)
    mine = ours.metadata_table.record_index.locations(keys)
    assert {k: v[1] for k, v in located.items()} == {k: loc.file_id for k, loc in mine.items()}
    # the data: not under the table path, where Hudi looks for it
    assert not list(path.rglob("*.parquet"))
    with pytest.raises(Exception) as failure:
        hudi.rows(str(path), metadata=True)
    assert "FileNotFound" in str(failure.value) or "does not exist" in str(failure.value), failure.value
    # hudi-md reads it whole
    assert ours.read().num_rows == 30


@pytest.mark.ci
def test_default_layout_tables_are_unchanged(spark: Any, tables_root: Path) -> None:
    """The layout keys are written only for a federated table: a default-layout table's
    hoodie.properties carries none, and Hudi reads its rows."""
    import hudi_md

    path = tables_root / "default-layout"
    hudi_md.write(_rows(9, 1), str(path), operation="insert", options=OPTS)
    props = (path / ".hoodie" / "hoodie.properties").read_text()
    assert "hoodie.storage" not in props
    assert len(Hudi(spark).rows(str(path), metadata=True)) == 9
