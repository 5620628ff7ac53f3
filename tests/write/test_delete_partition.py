"""Hudi's ``delete_partition`` (``HudiWriter.delete_partitions``, or the ``delete_partition``
operation with ``hoodie.datasource.write.partitions.to.delete``): a replacecommit replacing every
file group of the partitions; their rows leave every reader at once (hudi-md through the MDT and by
listing, hudi-rs), their keys leave the record index, and the cleaner deletes their files later."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import hudi_md
from hudi_md.errors import InvalidOptionError
from hudi_md.metadata.validate import validate_metadata_table
from hudi_md.write.writer import HudiWriter
from table_model import Model, assert_readers, rows


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_delete_partitions(tmp_path: Path, table_type: str) -> None:
    path = tmp_path / "t"
    opts = {
        "hoodie.table.name": "dp",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.metadata.record.index.enable": "true",
    }
    model = Model(["city"])
    for op, ids, ts in [("insert", range(0, 90), 1), ("upsert", range(0, 45), 2)]:
        data = rows(ids, ts, seed=ts)
        HudiWriter(str(path), opts).write(data, op)
        model.apply(op, data)
    result = HudiWriter(str(path), opts).delete_partitions(["sf"])
    assert result.action == "replacecommit"
    gone = [k for k in model.rows if k[0] == "sf"]
    for k in gone:
        del model.rows[k]
    table, _ = assert_readers(str(path), model.expected())
    assert validate_metadata_table(table) == []
    keys = [f"id-{i:04d}" for i in range(90)]
    assert sorted(table.metadata_table.record_index(keys)) == sorted(k[1] for k in model.rows)
    meta = table.timeline.metadata(table.timeline.completed().last())
    assert meta["operationType"] == "DELETE_PARTITION" and set(meta["partitionToReplaceFileIds"]) == {"sf"}
    with pytest.raises(InvalidOptionError, match=r"partitions\.to\.delete"):
        HudiWriter(str(path), opts).write(
            pa.Table.from_pylist([], rows(range(1), 1, 1).schema), "delete_partition"
        )
    # writing into it again brings the partition back
    data = rows([0, 3], 9, seed=9)
    HudiWriter(str(path), opts).write(data, "upsert")
    model.apply("upsert", data)
    assert_readers(str(path), model.expected())
    assert validate_metadata_table(hudi_md.open_table(str(path))) == []
