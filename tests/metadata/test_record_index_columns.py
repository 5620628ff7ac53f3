"""The record index read column-wise (:meth:`RecordIndex.table`) finds what the
record-wise read finds (:meth:`MetadataTable.read_records`, each record decoded and merged with
:func:`records.merge`), on Hudi-written fixture tables and on a hudi-md table whose record index
has base files, log blocks of updates that move keys, and delete blocks."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pytest

import hudi_md
from hudi_md.metadata import keys as K
from hudi_md.metadata.reader import MetadataTable
from hudi_md.metadata.records import record_index_file_id

from fixtures import archives


def record_wise(mdt: MetadataTable, keys: list[str] | None) -> dict[str, tuple[str, str, int | None]]:
    out = {}
    for key, rec in mdt.read_records(K.RECORD_INDEX, keys=keys).items():
        info = rec["recordIndexMetadata"]
        partition = info.get("partitionName") or ""
        partition = "" if partition == K.NON_PARTITIONED_NAME else partition
        out[key] = (partition, record_index_file_id(info), info.get("instantTime"))
    return out


def column_wise(mdt: MetadataTable, keys: list[str] | None) -> dict[str, tuple[str, str, int | None]]:
    table = mdt.record_index.table(None if keys is None else pa.array(keys, pa.string()))
    names = ("record_key", "partition_path", "file_id", "instant_time")
    rows = zip(*(table[c].to_pylist() for c in names), strict=True)
    out: dict[str, tuple[str, str, int | None]] = {}
    for key, partition, file_id, instant in rows:
        assert key not in out, f"{key} located twice"
        out[key] = (partition, file_id, instant)
    return out


def assert_same(mdt: MetadataTable, rng: random.Random) -> int:
    everything = record_wise(mdt, None)
    assert column_wise(mdt, None) == everything
    known = sorted(everything)
    for size in (1, 7, len(known) // 3, len(known)):  # sparse lookups and dense scans
        keys = rng.sample(known, min(size, len(known))) + [f"absent-{i}" for i in range(3)]
        assert column_wise(mdt, keys) == record_wise(mdt, keys), size
    return len(known)


RI_ARCHIVES = [a for a in archives() if "v6_empty" not in a]


@pytest.mark.parametrize("archive", RI_ARCHIVES)
def test_fixture_record_index_column_wise(archive: str, table_path) -> None:
    table = hudi_md.open_table(str(table_path(archive)))
    if "record_index" not in table.state.config.metadata_partitions:
        pytest.skip("no record index")
    assert assert_same(table.metadata_table, random.Random(archive)) > 0


OPTIONS = {
    "hoodie.table.name": "ri",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "p",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.metadata.record.index.enable": "true",
    "hoodie.metadata.record.index.min.filegroup.count": "2",
    "hoodie.metadata.record.index.max.filegroup.count": "2",
    # MDT compaction after a few deltacommits: base HFiles with logs after them
    "hoodie.metadata.compact.max.delta.commits": "3",
}


def _rows(ids: list[int], ts: int) -> pa.Table:
    return pa.table(
        {"id": [f"k{i:05d}" for i in ids], "p": [f"p{i % 3}" for i in ids], "ts": [ts] * len(ids)}
    )


def test_written_record_index_column_wise(tmp_path: Path) -> None:
    """Inserts, updates and deletes across commits and an MDT compaction."""
    path = str(tmp_path / "t")
    rng = random.Random(7)

    def write(ids: list[int], ts: int, operation: str) -> None:
        hudi_md.write(_rows(ids, ts), path, operation=operation, options=OPTIONS)

    write(list(range(600)), 1, "bulk_insert")
    live = set(range(600))
    checked = 0
    for commit in range(2, 8):
        if commit % 3 == 0:
            gone = rng.sample(sorted(live), 40)
            write(gone, commit, "delete")
            live -= set(gone)
        else:
            ids = rng.sample(sorted(live), 50) + list(range(600 + commit * 100, 600 + commit * 100 + 30))
            write(ids, commit, "upsert")
            live |= set(ids)
        mdt = hudi_md.open_table(path).metadata_table
        assert mdt is not None and K.RECORD_INDEX in mdt.available_partitions
        assert assert_same(mdt, rng) == len(live)
        checked += 1
    slices = hudi_md.open_table(path).metadata_table.file_slices(K.RECORD_INDEX)
    assert any(s.base_file is not None and s.log_files for s in slices)  # compacted, then logged
    assert checked == 6
