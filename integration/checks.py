"""The comparisons of hudi-md's view of a table with Apache Hudi's (``hudi_oracle.Hudi``)."""

from __future__ import annotations

from typing import Any

from workloads import (
    ALL_COLUMNS,
    Layout,
    diff_rows,
    md_column_stats,
    md_partition_stats,
    md_rows,
    md_slices,
    md_table,
    stats_diff,
)


def check_partitions(hudi: Any, path: str, layout: Layout) -> None:
    assert md_table(path).state.uses_metadata_table
    assert md_table(path).partitions() == hudi.partitions(path, metadata=True)
    assert md_table(path, metadata=False).partitions() == hudi.partitions(path, metadata=False)


def check_file_slices(hudi: Any, path: str, layout: Layout) -> None:
    expected = hudi.latest_file_slices(path, metadata=True)
    assert md_slices(md_table(path)) == expected
    assert md_slices(md_table(path, metadata=False)) == hudi.latest_file_slices(path, metadata=False)


def check_column_stats(hudi: Any, path: str, layout: Layout) -> None:
    table = md_table(path)
    columns = hudi.indexed_columns(path)
    assert columns, "Hudi indexed no column"
    partitions = hudi.partitions(path)
    # every live entry of the MDT (stale files' entries too), and the latest files' entries
    expected = hudi.all_column_stats(path, columns, partitions)
    got = md_column_stats(table, columns, partitions)
    problems = stats_diff(got, expected, "hudi-md", "Hudi")
    latest = [(s.partition, n) for s in hudi.latest_file_slices(path) for n in _names(s)]
    problems += stats_diff(
        {k: v for k, v in got.items() if (k[0], k[1]) in set(latest)},
        hudi.column_stats(path, latest, columns),
        "hudi-md",
        "Hudi getColumnStats",
    )
    assert not problems, "\n".join(problems[:20])


def check_partition_stats(hudi: Any, path: str, layout: Layout) -> None:
    table = md_table(path)
    columns = hudi.indexed_columns(path)
    if "partition_stats" not in table.state.config.metadata_partitions:
        assert not layout.partition_fields, "Hudi has no partition_stats for a partitioned table"
        return
    problems = stats_diff(
        md_partition_stats(table, columns), hudi.partition_stats(path, columns), "hudi-md", "Hudi"
    )
    assert not problems, "\n".join(problems[:20])


def check_record_index(hudi: Any, path: str, layout: Layout) -> None:
    """Lookups of every key in the table, of keys in both encodings (``k001``, ``id:k001``) and of
    absent keys; then the set of all record-index keys."""
    table = md_table(path)
    keys = {r["_hoodie_record_key"] for r in hudi.read_df(path).select("_hoodie_record_key").collect()}
    keys |= {f"k{i:03d}" for i in range(0, 215)} | {f"id:k{i:03d}" for i in range(0, 215)} | {"absent"}
    keys = sorted(keys)
    expected = hudi.record_index(path, keys)
    got = {
        k: (loc.partition_path, loc.file_id)
        for k, loc in table.metadata_table.record_index.locations(keys).items()
    }
    assert got == expected
    entries = hudi.record_index_entries(path)
    all_md = table.metadata_table.read_records("record_index")
    assert sorted(all_md) == sorted(entries)


def check_snapshot(hudi: Any, path: str, layout: Layout) -> None:
    expected = hudi.rows(path)
    problems = []
    for metadata in (True, False):
        got = md_rows(md_table(path, metadata))
        d = diff_rows(got, expected, ALL_COLUMNS, key="_hoodie_record_key")
        if d:
            problems.append(f"snapshot (hudi-md metadata={metadata}) vs Hudi: {d}")
    if layout.is_mor:
        ro = hudi.rows(path, query_type="read_optimized")
        d = diff_rows(
            md_rows(md_table(path), query_type="read_optimized"), ro, ALL_COLUMNS, key="_hoodie_record_key"
        )
        if d:
            problems.append(f"read_optimized vs Hudi: {d}")
    assert not problems, "\n".join(problems)


def _names(s: Any) -> list[str]:
    return ([s.base_file] if s.base_file else []) + list(s.log_files)


CHECKS = {
    "partitions": check_partitions,
    "file_slices": check_file_slices,
    "column_stats": check_column_stats,
    "partition_stats": check_partition_stats,
    "record_index": check_record_index,
    "snapshot": check_snapshot,
}
