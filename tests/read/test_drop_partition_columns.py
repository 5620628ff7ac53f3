"""Tables written with ``hoodie.datasource.write.drop.partition.columns=true`` keep the partition
columns out of the data files; readers take them from the partition path."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import hudi_md
from hudi_md.errors import UnsupportedFeatureError
from hudi_md.storage import Storage
from hudi_md.table.config import DROP_PARTITION_COLUMNS, update_table_config


def _table_without_partition_columns(path: Path, hive_style: bool = True) -> pa.Table:
    data = pa.table(
        {
            "id": [f"k{i}" for i in range(12)],
            "city": [["sf", "nyc", "la"][i % 3] for i in range(12)],
            "v": list(range(12)),
        }
    )
    opts = {
        "hoodie.table.name": "dropped",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.hive_style_partitioning": str(hive_style).lower(),
        "hoodie.metadata.enable": "false",
    }
    hudi_md.write(data, str(path), operation="insert", options=opts)
    # What Hudi writes with drop.partition.columns: the same files without the partition column.
    for f in path.rglob("*.parquet"):
        t = pq.read_table(f)
        pq.write_table(t.drop_columns(["city"]), f)
        assert "city" not in pq.read_schema(f).names
    update_table_config(Storage(str(path)), {DROP_PARTITION_COLUMNS: "true"})
    return data


def test_partition_columns_come_from_the_partition_path(tmp_path: Path) -> None:
    path = tmp_path / "t"
    data = _table_without_partition_columns(path)
    table = hudi_md.open_table(str(path))
    assert table.state.config.drop_partition_columns
    got = table.read(columns=["id", "city", "v"])
    assert sorted(got.to_pylist(), key=lambda r: r["id"]) == sorted(data.to_pylist(), key=lambda r: r["id"])
    # a row filter on the partition column and one on a data column see the filled values
    got = table.read(columns=["id", "city"], filters=[("city", "=", "sf"), ("v", ">", 2)])
    assert sorted(got.column("id").to_pylist()) == ["k3", "k6", "k9"]
    assert set(got.column("city").to_pylist()) == {"sf"}


def test_unparsable_partition_path_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _table_without_partition_columns(path)
    # a partition folder whose name does not say city=<value>
    src = next(p for p in path.iterdir() if p.name == "city=sf")
    src.rename(path / "sf")
    update_table_config(Storage(str(path)), {"hoodie.datasource.write.hive_style_partitioning": "true"})
    table = hudi_md.open_table(str(path))
    with pytest.raises(UnsupportedFeatureError, match=r"drop\.partition\.columns"):
        table.read()
