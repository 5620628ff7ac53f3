"""Planning reads a bounded number of storage objects, and of MDT bytes, whatever the number of
partitions: the MDT's HFiles (base files and the HFiles inside log blocks) are read by their block
index, so a plan reads the blocks that hold the keys it needs.

The tables are written with MDT HFile blocks of 16 KiB instead of Hudi's 1 MiB, so that the MDT of
the larger table spans many blocks and "only the blocks needed" is a visible difference (the
reader follows whatever block size a file has)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import hudi_md
from hudi_md.formats.logframes import HEAD_BYTES, TAIL_BYTES, WHOLE_FILE_BYTES
from hudi_md.metadata import plan_source as mdt_plan_source
from hudi_md.metadata import writer as mdt_writer

SIZES = (100, 10_000)
MDT = ".hoodie/metadata"
BLOCK = 16 << 10


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    out = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(mdt_writer, "HFILE_BLOCK_SIZE", BLOCK)
        for n in SIZES:
            path = tmp_path_factory.mktemp(f"parts{n}") / "t"
            data = pa.table(
                {
                    "id": [f"k{i}" for i in range(n)],
                    "dt": [f"p{i:05d}" for i in range(n)],
                    "v": list(range(n)),
                }
            )
            options = {
                "hoodie.table.name": "parts",
                "hoodie.datasource.write.recordkey.field": "id",
                "hoodie.datasource.write.partitionpath.field": "dt",
                "hoodie.parquet.bloom.filter.enabled": "false",
            }
            hudi_md.write(data, str(path), operation="insert", options=options)
            # a second commit, so the MDT has more than one deltacommit to merge
            hudi_md.write(data.slice(0, 10), str(path), operation="upsert", options=options)
            out[n] = path
    return out


def _plan(path: Path, filters: list | None, options: dict | None = None) -> tuple[hudi_md.Table, dict]:
    table = hudi_md.open_table(str(path), options)
    table.state.storage.stats.reset()  # the plan's reads only (opening a table reads its timeline)
    plan = table.plan(filters)
    return table, {**plan.counters, "slices": len(plan.slices)}


def _mdt_files(path: Path, partition: str) -> list[int]:
    return [f.stat().st_size for f in (path / MDT / partition).iterdir() if f.is_file()]


def _mdt_size(path: Path, partition: str) -> int:
    return sum(_mdt_files(path, partition))


def _framing_bytes(path: Path, partition: str) -> int:
    """What opening an MDT partition's files reads: a small file whole, a larger log file its
    head and tail (the HFile in it opens from the tail)."""
    sizes = _mdt_files(path, partition)
    return sum(n for n in sizes if n <= WHOLE_FILE_BYTES) + sum(
        HEAD_BYTES + TAIL_BYTES for n in sizes if n > WHOLE_FILE_BYTES
    )


FILTERS = [
    None,
    [("dt", "=", "p00042")],
    [("dt", ">=", "p00040"), ("dt", "<", "p00050")],
    [("v", ">", 5)],
    [("dt", "in", ["p00001", "p00099"]), ("v", "<", 50)],
]


@pytest.mark.parametrize("filters", FILTERS)
def test_requests_per_plan_do_not_grow_with_partitions(tables: dict[int, Path], filters: list | None) -> None:
    small, small_counters = _plan(tables[100], filters)
    large, large_counters = _plan(tables[10_000], filters)
    assert small_counters["slices"] == large_counters["slices"] or filters in (None, FILTERS[3])
    small_n, large_n = small.state.storage.stats.requests, large.state.storage.stats.requests
    # The same files are read at both sizes; at 10k partitions a log file outgrows one read and
    # takes two to frame, and a lookup may touch another block: a bounded difference.
    files_only = filters in (FILTERS[0], FILTERS[1], FILTERS[2])
    if files_only:  # the timeline, the MDT's, the files partition: a partition filter or none
        assert small_n <= large_n <= 12, (small_n, large_n)
    else:  # with partition_stats and column_stats (two file groups) read too
        assert small_n <= large_n <= 32, (small_n, large_n)


@pytest.mark.parametrize(
    "filters",
    [
        [("dt", "=", "p05000")],
        [("dt", "=", "p09999")],
        [("dt", "in", ["p02000", "p07000"])],
        [("dt", ">=", "p06010"), ("dt", "<=", "p06019")],
        [("dt", "=", "p99999")],  # absent: no partition, no slice
    ],
)
def test_mdt_bytes_of_a_partition_plan_do_not_grow(tables: dict[int, Path], filters: list) -> None:
    for n in SIZES:
        table, counters = _plan(tables[n], filters)
        assert "partitions" not in counters  # the partition list was not read
        assert counters["partitions_from_keys"] <= 10
        # opening the files partition, then at most a few of its blocks (GZ: smaller than BLOCK)
        bound = _framing_bytes(tables[n], "files") + 4 * BLOCK
        mdt_bytes = table.state.storage.stats.bytes_read_under(MDT)
        assert mdt_bytes <= bound, (n, mdt_bytes, bound)
        assert mdt_bytes == table.state.storage.stats.bytes_read_under(
            f"{MDT}/files"
        ) + table.state.storage.stats.bytes_read_under(f"{MDT}/.hoodie")
    # and at 10k partitions that bound is a small part of the files partition
    assert 2 * (_framing_bytes(tables[10_000], "files") + 4 * BLOCK) < _mdt_size(tables[10_000], "files")


def test_a_plan_without_filter_reads_the_files_partition_once(tables: dict[int, Path]) -> None:
    path = tables[10_000]
    table, counters = _plan(path, None)
    assert counters["slices"] == 10_000
    files_bytes = table.state.storage.stats.bytes_read_under(f"{MDT}/files")
    # the whole partition, plus the framing reads of its log files, which a full scan reads again
    assert _mdt_size(path, "files") <= files_bytes <= _mdt_size(path, "files") + _framing_bytes(path, "files")
    before = table.state.storage.stats.requests
    again = table.plan(None)
    assert len(again.slices) == 10_000
    assert table.state.storage.stats.requests == before  # the same state plans from memory


def test_a_plan_without_filter_takes_the_partition_list_from_its_scan(
    tables: dict[int, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read whole first, the files partition gives the partition list too (one of its records):
    the plan does not wait for a read of the list's block before the scan."""
    path = tables[10_000]
    monkeypatch.setattr(mdt_plan_source, "SCAN_FILES_AHEAD_BYTES", 1 << 62)
    list_first, list_first_counters = _plan(path, None)
    monkeypatch.setattr(mdt_plan_source, "SCAN_FILES_AHEAD_BYTES", 0)
    ahead, ahead_counters = _plan(path, None)
    assert ahead_counters == list_first_counters
    assert ahead.partitions() == list_first.partitions()
    assert ahead.file_slices().equals(list_first.file_slices())
    assert ahead.state.storage.stats.requests < list_first.state.storage.stats.requests


def test_a_repeated_plan_on_one_state_reads_nothing(tables: dict[int, Path]) -> None:
    for filters in FILTERS:
        table, _ = _plan(tables[10_000], filters)
        before = table.state.storage.stats.snapshot()
        table.plan(filters)
        assert table.state.storage.stats.snapshot() == before, filters


def test_listing_does_grow(tables: dict[int, Path]) -> None:
    """The control: without the MDT, planning lists every partition."""
    small, _ = _plan(tables[100], [("v", ">", 5)], {"hoodie.metadata.enable": "false"})
    large, _ = _plan(tables[10_000], [("v", ">", 5)], {"hoodie.metadata.enable": "false"})
    assert large.state.storage.stats.requests > 100 * small.state.storage.stats.requests / 10
    assert large.state.storage.stats.requests >= 10_000
