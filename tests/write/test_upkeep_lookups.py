"""The MDT upkeep of commits and cleans reads the ``column_stats`` of the files it needs by key
(``StatsIndex.column_stats_of_files``): a commit's tight partition stats come from the other
live files of its partitions, a clean deletes the stats of the files it deletes. Checked with
``indexing_oracle.check_index``: column stats against every latest base file's Parquet footer (read
by pyarrow), no entry of a file gone from storage, partition stats equal to a build from scratch."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import hudi_md
from hudi_md.metadata import keys as K
from indexing_oracle import check_index

PARTS = [K.COLUMN_STATS, K.PARTITION_STATS, K.RECORD_INDEX]


def _rows(ids: list[int], ts: int) -> pa.Table:
    return pa.table(
        {
            "id": [f"id{i:05d}" for i in ids],
            "dt": [f"d{i % 4}" for i in ids],
            "ts": [ts] * len(ids),
            # updates move the values both ways, so a stale file's stats would widen the ranges
            "v": [float(i * (-1) ** ts) for i in ids],
            "s": [None if (i + ts) % 7 == 0 else f"s{(i * ts) % 97:02d}" for i in ids],
        }
    )


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_commits_and_cleans_keep_the_stats_exact(tmp_path: Path, table_type: str) -> None:
    path = tmp_path / "t"
    options = {
        "hoodie.table.name": "upkeep",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "dt",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.metadata.enable": "true",
        "hoodie.metadata.index.column.stats.enable": "true",
        "hoodie.metadata.index.partition.stats.enable": "true",
        "hoodie.metadata.record.index.enable": "true",
        "hoodie.cleaner.commits.retained": "1",
        "hoodie.keep.min.commits": "20",  # no archival: the cleans stay on the active timeline
        "hoodie.keep.max.commits": "30",
        "hoodie.compact.inline": "true",
        "hoodie.compact.inline.max.delta.commits": "2",
    }
    hudi_md.write(_rows(list(range(400)), 0), str(path), operation="bulk_insert", options=options)
    for ts in range(1, 7):
        ids = list(range(ts * 13, ts * 13 + 60)) + list(range(1000 + ts * 10, 1000 + ts * 10 + 5))
        hudi_md.write(_rows(ids, ts), str(path), operation="upsert", options=options)
    timeline = [f.name for f in (path / ".hoodie" / "timeline").iterdir()]
    assert any(n.endswith(".clean") for n in timeline), "no clean ran: the test would not test it"
    check_index(path, PARTS, tmp_path / "work", options=None)
