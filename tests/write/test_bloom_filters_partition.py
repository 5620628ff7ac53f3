"""The MDT's ``bloom_filters`` partition: each live base file's entry is the bloom filter in that
file's footer (what Apache Hudi's bloom index reads), whether the writing task kept the filter
or the commit read it back from the footer."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

import hudi_md
from hudi_md.formats.commit_metadata import WriteStat
from hudi_md.metadata import keys as K
from hudi_md.metadata.column_ranges import parquet_footer
from hudi_md.metadata.validate import validate_metadata_table
from hudi_md.write.file_groups import TaskResult
from hudi_md.write.mdt_sync import mdt_records_for_commit

OPTIONS = {
    "hoodie.table.name": "blooms",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "city",
    "hoodie.datasource.write.precombine.field": "ts",
}


def _rows(ids: range, ts: int) -> pa.Table:
    return pa.table(
        {
            "id": [f"id-{i:04d}" for i in ids],
            "city": [("sf", "nyc", "ams")[i % 3] for i in ids],
            "ts": [ts] * len(ids),
        }
    )


def _footer_bloom(table: hudi_md.Table, path: str, size: int) -> bytes:
    """The footer's bloom filter text, as the MDT record holds it (Avro ``bytes``)."""
    kv = pq.read_metadata(pa.BufferReader(parquet_footer(table.state.storage, path, size))).metadata
    return kv[b"org.apache.hudi.bloomfilter"]


def _assert_blooms_match_footers(path: str) -> int:
    table = hudi_md.open_table(path)
    files = [s.base_file for s in table.state.file_system_view().latest_file_slices(table.partitions())]
    assert files
    mdt = table.metadata_table
    assert mdt is not None
    got = mdt.stats.bloom_filters([(f.path.rsplit("/", 1)[0], f.path.rsplit("/", 1)[1]) for f in files if f])
    for f in files:
        assert f is not None
        entry = got[(f.path.rsplit("/", 1)[0], f.path.rsplit("/", 1)[1])]
        assert entry["bloom_filter"] == _footer_bloom(table, f.path, f.size)
        assert entry["type"] == "DYNAMIC_V0"
    return len(files)


def test_bloom_filters_partition_holds_each_files_footer_filter(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    opts = {**OPTIONS, "hoodie.metadata.index.bloom.filter.enable": "true"}
    hudi_md.write(_rows(range(60), 1), path, operation="insert", options=opts)
    hudi_md.write(_rows(range(30, 90), 2), path, operation="upsert", options=opts)
    assert K.BLOOM_FILTERS in hudi_md.open_table(path).state.config.metadata_partitions
    assert _assert_blooms_match_footers(path) >= 3
    assert validate_metadata_table(hudi_md.open_table(path, {"hoodie.metadata.enable": "true"})) == []


def test_a_task_that_kept_no_filter_gets_it_from_the_footer(tmp_path: Path) -> None:
    """A write that began before bloom_filters was scheduled for indexing keeps no filters in its
    task results; its commit still logs every base file's filter into the partition."""
    path = str(tmp_path / "t")
    hudi_md.write(_rows(range(30), 1), path, operation="insert", options=OPTIONS)
    table = hudi_md.open_table(path)
    timeline = table.timeline
    meta = timeline.metadata(timeline.write_timeline().last())
    results = []
    for p, stats in meta["partitionToWriteStats"].items():
        results += [TaskResult(WriteStat.from_record(p, st)) for st in stats]
    assert results and all(r.bloom is None for r in results)
    records = mdt_records_for_commit("20990101000000000", results, [K.BLOOM_FILTERS], {}, before=table.state)
    assert len(records) == len(results)
    for r, record in zip(results, records, strict=True):
        stat = r.write_stat
        assert stat.path is not None
        assert record.key == K.bloom_filter_key(stat.partition_path, stat.path.rsplit("/", 1)[1])
        assert record.payload["BloomFilterMetadata"]["bloomFilter"] == _footer_bloom(
            table, stat.path, stat.file_size_in_bytes
        )
