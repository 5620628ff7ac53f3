"""MDT compaction column-wise (:func:`compaction_columns.compacted_cells`) keeps the records the
record-wise compaction keeps — each slice's records decoded, merged with :func:`records.merge` and
filtered by :func:`records.is_live` — on hudi-md tables whose MDT holds files, column_stats,
partition_stats and record_index partitions with many log blocks (updates, deletes, cleans), and
on Hudi-written fixture tables where the cells were written with the same schema."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pytest

import hudi_md
from hudi_md.formats.avro import decode_schemaless
from hudi_md.metadata import keys as K
from hudi_md.metadata.compaction_columns import compacted_cells
from hudi_md.metadata.reader import MetadataTable
from hudi_md.metadata.records import is_live, normalize
from hudi_md.metadata.records_builder import metadata_record_schema_json
from hudi_md.metadata.table_services import to_payload
from hudi_md.metadata.writer import MetadataTableWriter
from hudi_md.storage import Storage
from hudi_md.table.config import TableConfig

from fixtures import archives

SCHEMA = metadata_record_schema_json()


def _record_wise(mdt: MetadataTable, file_slice) -> dict[str, dict]:
    merged = mdt.read_slice_records(file_slice)
    return {k: v for k, v in merged.items() if v is not None and is_live(v)}


def _compare(path: str, mdt: MetadataTable) -> tuple[int, int]:
    """(slices compared, records compared) over every MDT partition's latest slices."""
    writer = MetadataTableWriter(Storage(path), TableConfig.load(Storage(path)), {})
    slices = records = 0
    for partition in sorted(mdt.available_partitions):
        for file_slice in mdt.file_slices(partition):
            found = compacted_cells(
                mdt.record_index.slice_events(file_slice),
                partition,
                SCHEMA,
                lambda r: writer.encode(to_payload(r)),
            )
            if found is None:
                continue
            keys, values = found
            got_keys = [k.decode("utf-8") for k in keys.to_pylist()]
            assert got_keys == sorted(got_keys, key=lambda k: k.encode("utf-8"))
            got = {
                k: normalize(decode_schemaless(v, SCHEMA, return_record_name=True))
                for k, v in zip(got_keys, values.to_pylist(), strict=True)
            }
            want = _record_wise(mdt, file_slice)
            assert sorted(got) == sorted(want), (partition, file_slice.file_id)
            for k, record in want.items():
                assert {**got[k], "key": None} == {**record, "key": None}, (partition, k)
            slices += 1
            records += len(want)
    return slices, records


OPTIONS = {
    "hoodie.table.name": "compact",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "p",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.metadata.record.index.enable": "true",
    "hoodie.metadata.index.column.stats.enable": "true",
    "hoodie.metadata.index.partition.stats.enable": "true",
    "hoodie.metadata.compact.max.delta.commits": "1000",  # logs pile up: compaction is ours to test
    "hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS",
    "hoodie.cleaner.fileversions.retained": "1",  # cleans: deleted file entries and stats
}


def _rows(ids: list[int], ts: int) -> pa.Table:
    return pa.table(
        {
            "id": [f"k{i:05d}" for i in ids],
            "p": [f"p{i % 5}" for i in ids],
            "ts": [ts] * len(ids),
            "v": [float(i * ts) for i in ids],
            "s": [f"s{(i * 7 + ts) % 97}" for i in ids],
        }
    )


def test_written_table_compacts_column_wise_as_record_wise(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    rng = random.Random(3)
    hudi_md.write(_rows(list(range(400)), 1), path, operation="bulk_insert", options=OPTIONS)
    live = set(range(400))
    for commit in range(2, 9):
        if commit % 3 == 0:
            gone = rng.sample(sorted(live), 30)
            hudi_md.write(_rows(gone, commit), path, operation="delete", options=OPTIONS)
            live -= set(gone)
        else:
            ids = rng.sample(sorted(live), 60) + list(range(400 + commit * 50, 420 + commit * 50))
            hudi_md.write(_rows(ids, commit), path, operation="upsert", options=OPTIONS)
            live |= set(ids)
    mdt = hudi_md.open_table(path).metadata_table
    assert {K.FILES, K.COLUMN_STATS, K.PARTITION_STATS, K.RECORD_INDEX} <= mdt.available_partitions
    slices, records = _compare(path, mdt)
    expected_slices = sum(len(mdt.file_slices(p)) for p in mdt.available_partitions)
    assert slices == expected_slices  # all written by hudi-md with its schema: none declined
    assert records > len(live)


def test_compaction_writes_the_same_table(tmp_path: Path) -> None:
    """After an inline MDT compaction the table reads as before (the same files, stats and
    record locations), and a record-wise read of the new base files agrees."""
    path = str(tmp_path / "t")
    options = {**OPTIONS, "hoodie.metadata.compact.max.delta.commits": "4"}
    hudi_md.write(_rows(list(range(300)), 1), path, operation="bulk_insert", options=options)
    before = None
    for commit in range(2, 6):
        table = hudi_md.open_table(path)
        before = (
            sorted(table.file_slices().column("base_file").to_pylist()),
            sorted(
                (s.file_name, s.column_name, s.value_count) for s in table.metadata_table.stats.column_stats()
            ),
            sorted((k, v.file_id) for k, v in table.metadata_table.record_index.locations().items()),
        )
        hudi_md.write(
            _rows(list(range(commit * 10, commit * 10 + 40)), commit),
            path,
            operation="upsert",
            options=options,
        )
    assert before is not None
    table = hudi_md.open_table(path)
    mdt = table.metadata_table
    compacted = [s for p in mdt.available_partitions for s in mdt.file_slices(p) if not s.log_files]
    assert compacted, "no MDT compaction ran"
    assert sorted(table.file_slices().column("base_file").to_pylist()) != before[0]  # it moved on
    listed = sorted(table.file_slices().column("base_file").to_pylist())
    storage = sorted(
        str(p.relative_to(path)) for p in Path(path).rglob("*.parquet") if ".hoodie" not in p.parts
    )
    assert set(listed) <= set(storage)
    rows = table.read(columns=["id"]).column("id").to_pylist()
    assert sorted(rows) == sorted({f"k{i:05d}" for i in range(300)})
    assert set(mdt.record_index.locations()) == set(rows)


MDT_ARCHIVES = [a for a in archives() if "v6_empty" not in a]


@pytest.mark.parametrize("archive", MDT_ARCHIVES)
def test_fixture_slices_compact_column_wise_as_record_wise(archive: str, table_path) -> None:
    path = str(table_path(archive))
    table = hudi_md.open_table(path)
    if table.metadata_table is None:
        pytest.skip("no metadata table")
    _compare(path, table.metadata_table)  # the slices it did not decline agree


def _event(records: list, writer: MetadataTableWriter):
    from hudi_md.formats.hfile import HFileReader
    from hudi_md.metadata.record_index_columns import cell_event

    ordered = sorted(records, key=lambda r: r.key.encode("utf-8"))
    reader = HFileReader.from_bytes(writer.hfile_bytes(ordered[0].partition, ordered, base_file=False))
    return cell_event(reader.scan_columns(), reader.schema, "test")


@pytest.mark.parametrize("partition", [K.COLUMN_STATS, K.RECORD_INDEX])
def test_records_compaction_drops_are_dropped_even_alone(tmp_path: Path, partition: str) -> None:
    """A key whose one event is a record compaction drops (stats marked deleted, an empty
    record-index entry) is not copied into the base file."""
    from hudi_md.metadata.records_builder import (
        ColumnRange,
        MdtRecord,
        column_stats_record,
        empty_payload,
        record_index_record,
    )

    path = str(tmp_path / "t")
    hudi_md.write(_rows([1, 2], 1), path, operation="bulk_insert", options=OPTIONS)
    writer = MetadataTableWriter(Storage(path), TableConfig.load(Storage(path)), {})
    if partition == K.COLUMN_STATS:
        rng = ColumnRange("v", 1.0, 2.0, 0, 2, 10, 10)
        kept = column_stats_record("p1", "a.parquet", rng, pa.float64())
        dropped = column_stats_record("p1", "b.parquet", rng, pa.float64(), is_deleted=True)
    else:
        kept = record_index_record("k1", "p1", "fid", "20240101000000000")
        dropped = MdtRecord(K.RECORD_INDEX, "k2", empty_payload(K.TYPE_RECORD_INDEX))
    found = compacted_cells(
        [_event([kept, dropped], writer)], partition, SCHEMA, lambda r: writer.encode(to_payload(r))
    )
    assert found is not None
    assert [k.decode("utf-8") for k in found[0].to_pylist()] == [kept.key]
