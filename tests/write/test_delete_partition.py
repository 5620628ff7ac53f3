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
    assert sorted(table.metadata_table.record_index.locations(keys)) == sorted(k[1] for k in model.rows)
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


def _all_partitions_record(table: hudi_md.Table) -> dict[str, bool]:
    """The merged ``__all_partitions__`` record of the MDT's ``files`` partition: partition ->
    isDeleted (entries a later delete cancelled an add of are gone)."""
    from hudi_md.metadata import keys as K

    mdt = table.metadata_table
    assert mdt is not None
    record = mdt.read_records(K.FILES, keys=[K.ALL_PARTITIONS_KEY])[K.ALL_PARTITIONS_KEY]
    return {p: bool(e["isDeleted"]) for p, e in record["filesystemMetadata"].items()}


def _clean_plan(path: Path, instant: str) -> dict:
    from hudi_md.formats.commit_metadata import parse_instant_metadata

    f = path / ".hoodie" / "timeline" / f"{instant}.clean.requested"
    return parse_instant_metadata(f.read_bytes(), str(f))


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_a_deleted_partition_leaves_the_mdt_at_its_clean(tmp_path: Path, table_type: str) -> None:
    """As Apache Hudi 1.2 does (integration/test_delete_partition_interop.py compares the two): the
    ``delete_partition`` replacecommit leaves the partition listed (its ``partition_stats``
    deleted), and the clean that deletes its files plans it in ``partitionsToBeDeleted``, deletes its
    directory, records ``isPartitionDeleted``, marks it deleted in ``__all_partitions__`` and
    deletes its ``files`` record: from then on no reader, plan or listing has it. A write into it
    brings it back."""
    from hudi_md.metadata import keys as K

    path = tmp_path / "t"
    opts = {
        "hoodie.table.name": "dp",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.metadata.index.partition.stats.enable": "true",
        "hoodie.cleaner.commits.retained": "1",
    }
    model = Model(["city"])
    data = rows(range(0, 90), 1, seed=1)
    HudiWriter(str(path), opts).write(data, "insert")
    model.apply("insert", data)
    HudiWriter(str(path), opts).delete_partitions(["sf"])
    for k in [k for k in model.rows if k[0] == "sf"]:
        del model.rows[k]
    table = hudi_md.open_table(str(path))
    # the replacecommit: still listed (Hudi lists it until the clean), no rows, no stats
    assert table.partitions() == ["nyc", "sao_paulo", "sf"] and (path / "sf").is_dir()
    assert _all_partitions_record(table) == {"nyc": False, "sao_paulo": False, "sf": False}
    assert "sf" not in table.file_slices().column("partition_path").to_pylist()
    stats = table.metadata_table.read_records(K.PARTITION_STATS)
    assert stats and not [k for k in stats if k.endswith(K.partition_index_id("sf"))]
    # the next commit's clean deletes its files and the partition
    data = rows(range(1, 90, 3), 2, seed=2)  # nyc only
    HudiWriter(str(path), opts).write(data, "upsert")
    model.apply("upsert", data)
    table, _ = assert_readers(str(path), model.expected())
    clean = table.timeline.completed().of_actions("clean").last()
    assert clean is not None
    assert _clean_plan(path, clean.requested_time)["partitionsToBeDeleted"] == ["sf"]
    meta = table.timeline.metadata(clean)
    assert meta["partitionMetadata"]["sf"]["isPartitionDeleted"] is True
    assert not meta["partitionMetadata"].get("nyc", {}).get("isPartitionDeleted")
    assert not (path / "sf").exists()
    assert table.partitions() == ["nyc", "sao_paulo"]
    assert hudi_md.open_table(str(path), {"hoodie.metadata.enable": "false"}).partitions() == [
        "nyc",
        "sao_paulo",
    ]
    assert "sf" not in _all_partitions_record(table)
    assert table.metadata_table.read_records(K.FILES, keys=[K.files_key("sf")]) == {}
    assert set(table.file_slices().column("partition_path").to_pylist()) == {"nyc", "sao_paulo"}
    assert table.file_slices(filters=[("city", "=", "sf")]).num_rows == 0
    assert validate_metadata_table(table) == []
    # a later clean does not delete it again
    data = rows(range(1, 90, 3), 3, seed=3)
    HudiWriter(str(path), opts).write(data, "upsert")
    model.apply("upsert", data)
    table = hudi_md.open_table(str(path))
    cleans = table.timeline.completed().of_actions("clean")
    assert [_clean_plan(path, c.requested_time)["partitionsToBeDeleted"] for c in cleans].count(["sf"]) == 1
    # writing into it again brings it back, in the MDT's partition list too
    data = rows([0, 3], 9, seed=9)
    HudiWriter(str(path), opts).write(data, "upsert")
    model.apply("upsert", data)
    table, _ = assert_readers(str(path), model.expected())
    assert table.partitions() == ["nyc", "sao_paulo", "sf"]
    assert _all_partitions_record(table) == {"nyc": False, "sao_paulo": False, "sf": False}
    assert validate_metadata_table(table) == []
