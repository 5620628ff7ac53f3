"""The MDT reader against independent oracles: a storage listing, Parquet footers, data files."""

from __future__ import annotations

import datetime
import decimal
import shutil
import warnings
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import hudi_md
from hudi_md.metadata import keys as K
from hudi_md.metadata.records import merge, typed_stat_value

from fixtures import archives

MDT_ARCHIVES = [
    a
    for a in archives()
    if "_meta" in a
    or "v9_timebased" in a
    or ("rollback.zip" in a and "v9" in a)
    or "v8_trips" in a
    or ("overwrite.zip" in a and "v9" in a)
]


def _slice_set(table: hudi_md.Table) -> list[tuple]:
    return sorted(
        (r["partition_path"], r["file_id"], r["base_file"], tuple(r["log_files"]))
        for r in table.file_slices().to_pylist()
    )


def test_mdt_archives_are_the_ones_with_an_mdt(table_path) -> None:
    for archive in archives():
        table = hudi_md.open_table(str(table_path(archive)))
        assert ("files" in table.state.config.metadata_partitions) == (archive in MDT_ARCHIVES), archive


@pytest.mark.parametrize("archive", MDT_ARCHIVES)
def test_mdt_and_listing_views_agree(archive: str, table_path) -> None:
    path = str(table_path(archive))
    with_mdt = hudi_md.open_table(path)
    listed = hudi_md.open_table(path, {"hoodie.metadata.enable": "false"})
    assert with_mdt.state.uses_metadata_table and not listed.state.uses_metadata_table
    assert with_mdt.partitions() == listed.partitions()
    assert _slice_set(with_mdt) == _slice_set(listed)


def test_meta_and_nometa_twins_agree(table_path) -> None:
    meta = hudi_md.open_table(str(table_path("sample_table/mor/avro/v9_txns_simple_meta.zip")))
    nometa = hudi_md.open_table(str(table_path("sample_table/mor/avro/v9_txns_simple_nometa.zip")))
    assert meta.state.uses_metadata_table and not nometa.state.uses_metadata_table
    assert meta.partitions() == nometa.partitions()
    a = sorted(meta.read(columns=["_hoodie_record_key", "txn_id", "amount"]).to_pylist(), key=str)
    b = sorted(nometa.read(columns=["_hoodie_record_key", "txn_id", "amount"]).to_pylist(), key=str)
    assert a == b


def test_planning_reads_no_data_partition_listing(table_path) -> None:
    """With the MDT, planning lists no data partition: requests under `region=` stay at zero."""
    table = hudi_md.open_table(str(table_path("sample_table/cow/v9_txns_simple_meta.zip")))
    table.file_slices()
    assert table.state.uses_metadata_table
    assert table.state.storage.stats.requests_under("region=") == 0
    assert table.state.storage.stats.count("list") <= 4  # data timeline, MDT timeline, MDT `files` dir, + 1


@pytest.mark.parametrize("archive", [a for a in MDT_ARCHIVES])
def test_record_index_matches_base_files(archive: str, table_path) -> None:
    """Every key in a latest base file is located by the RLI at that partition and file group."""
    table = hudi_md.open_table(str(table_path(archive)))
    if "record_index" not in table.state.config.metadata_partitions:
        pytest.skip("no record index")
    expected: dict[str, tuple[str, str]] = {}
    for row in table.file_slices().to_pylist():
        if row["base_file"] is None:
            continue
        keys = pq.read_table(Path(table.uri) / row["base_file"], columns=["_hoodie_record_key"])
        for k in keys.column(0).to_pylist():
            expected[k] = (row["partition_path"], row["file_id"])
    live = set(table.read(columns=["_hoodie_record_key"]).column(0).to_pylist())
    found = table.metadata_table.record_index.locations([*expected, "no-such-key"])
    assert "no-such-key" not in found
    for key, (partition, file_id) in expected.items():
        if key not in live:
            assert key not in found, f"deleted key {key} still in the record index"
            continue
        loc = found[key]
        assert (loc.partition_path, loc.file_id) == (partition, file_id), key


@pytest.mark.parametrize("archive", [a for a in MDT_ARCHIVES])
def test_column_stats_match_parquet_footers(archive: str, table_path) -> None:
    table = hudi_md.open_table(str(table_path(archive)))
    if "column_stats" not in table.state.config.metadata_partitions:
        pytest.skip("no column stats")
    stats = {
        (s.partition_path, s.file_name, s.column_name): s for s in table.metadata_table.stats.column_stats()
    }
    checked = 0
    for row in table.file_slices().to_pylist():
        if row["base_file"] is None:
            continue
        name = Path(row["base_file"]).name
        meta = pq.ParquetFile(Path(table.uri) / row["base_file"]).metadata
        for i in range(meta.num_columns):
            col = meta.schema.column(i)
            if "." in col.path or col.physical_type not in (
                "INT32",
                "INT64",
                "BYTE_ARRAY",
                "BOOLEAN",
                "DOUBLE",
            ):
                continue
            s = stats.get((row["partition_path"], name, col.path))
            if s is None:
                continue
            nulls = sum(meta.row_group(g).column(i).statistics.null_count for g in range(meta.num_row_groups))
            assert s.null_count == nulls, (name, col.path)
            assert s.value_count == meta.num_rows, (name, col.path)
            rg = [meta.row_group(g).column(i).statistics for g in range(meta.num_row_groups)]
            if all(st.has_min_max for st in rg) and s.min_value is not None:
                mins = [st.min for st in rg]
                maxs = [st.max for st in rg]
                assert _cmp(s.min_value) == _cmp(min(mins)), (name, col.path, s.min_value, mins)
                assert _cmp(s.max_value) == _cmp(max(maxs)), (name, col.path)
            checked += 1
    assert checked > 0


def _cmp(v):
    if isinstance(v, datetime.datetime) and v.tzinfo is not None:
        return v.replace(tzinfo=None)
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    return v


@pytest.mark.parametrize("archive", [a for a in MDT_ARCHIVES])
def test_partition_stats_bound_the_column_stats(archive: str, table_path) -> None:
    table = hudi_md.open_table(str(table_path(archive)))
    if "partition_stats" not in table.state.config.metadata_partitions:
        pytest.skip("no partition stats")
    mdt = table.metadata_table
    latest = {
        (r["partition_path"], Path(r["base_file"]).name)
        for r in table.file_slices().to_pylist()
        if r["base_file"]
    }
    pstats = {(s.partition_path, s.column_name): s for s in mdt.stats.partition_stats()}
    assert {p for p, _ in pstats} == set(table.partitions()) - {""} or {p for p, _ in pstats} <= set(
        table.partitions()
    )
    for s in mdt.stats.column_stats():
        if (s.partition_path, s.file_name) not in latest or s.min_value is None:
            continue
        p = pstats[(s.partition_path, s.column_name)]
        assert p.min_value <= s.min_value and s.max_value <= p.max_value, (s, p)


def test_column_stats_lookup_by_column_and_partition(table_path) -> None:
    table = hudi_md.open_table(str(table_path("sample_table/cow/v9_txns_simple_meta.zip")))
    mdt = table.metadata_table
    everything = [s for s in mdt.stats.column_stats() if s.column_name == "txn_id"]
    by_column = mdt.stats.column_stats(["txn_id"])
    assert by_column == everything
    eu = mdt.stats.column_stats(["txn_id"], ["region=eu"])
    assert eu == [s for s in everything if s.partition_path == "region=eu"] and eu


def test_key_encodings_match_hudi_vectors() -> None:
    assert K.column_index_id("driver") == "AjpJ7N1gBZc="
    assert K.partition_index_id("city=sao_paulo") == "6Hj+sBy+gvM="
    assert K.java_string_hash("hello") == 99162322
    assert K.java_string_hash("polygenelubricants") == -(1 << 31)
    assert K.file_group_index("polygenelubricants", 10) == 8  # Math.abs(MIN_VALUE) % 10 = -8 → 8
    assert K.file_group_index("anything", 1) == 0
    assert K.file_group_index_of("record-index-0007-0") == 7
    assert K.file_group_index_of("files-0000") == 0


def test_stat_value_types() -> None:
    assert typed_stat_value(b"\x01\x00", {"typeOrdinal": 10, "additionalInfo": "10,2"}) == decimal.Decimal(
        "2.56"
    )
    assert typed_stat_value(b"\xff", {"typeOrdinal": 10, "additionalInfo": "3,0"}) == -1
    assert typed_stat_value(19737, {"typeOrdinal": 12}) == datetime.date(2024, 1, 15)
    assert typed_stat_value(1_000_000, {"typeOrdinal": 16}).timestamp() == 1.0


def test_files_merge_rules() -> None:
    base = {"type": 2, "filesystemMetadata": {"a": {"size": 10, "isDeleted": False}}}
    grow = {
        "type": 2,
        "filesystemMetadata": {"a": {"size": 15, "isDeleted": False}, "b": {"size": 1, "isDeleted": False}},
    }
    delete_a = {"type": 2, "filesystemMetadata": {"a": {"size": 0, "isDeleted": True}}}
    merged = merge(merge(base, grow), delete_a)
    assert merged["filesystemMetadata"] == {"b": {"size": 1, "isDeleted": False}}
    assert merge(base, None) is None
    assert merge(None, base) == base


def test_unreadable_mdt_falls_back_to_listing(tmp_path: Path, table_path) -> None:
    src = table_path("sample_table/cow/v9_txns_simple_meta.zip")
    dest = tmp_path / "t"
    shutil.copytree(src, dest)
    for log in (dest / ".hoodie/metadata/files").glob(".files-*.log.*"):
        data = log.read_bytes()
        log.write_bytes(data[: len(data) // 2])
    expected = _slice_set(hudi_md.open_table(str(src), {"hoodie.metadata.enable": "false"}))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = hudi_md.open_table(str(dest))
        assert _slice_set(table) == expected
    assert not table.state.uses_metadata_table
    assert any("metadata table" in str(w.message) for w in caught)
    with pytest.raises(hudi_md.LogFormatError, match=r"\.files-0000-0_"):
        hudi_md.open_table(str(dest), {"hoodie.metadata.enable": "true"}).file_slices()
