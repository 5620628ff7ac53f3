"""Checks of MDT partitions an indexer built beside writers (the async indexing tests).

``check_index`` holds the table's MDT partitions against oracles hudi-md did not write and against
a build from scratch on the final table:

* ``record_index``: every key hudi-rs reads, at the partition and file group of the file hudi-rs
  read it from (``_hoodie_file_name``), and no other key;
* ``column_stats``: for every latest base file, the min, max, null and value counts pyarrow reads
  from its Parquet footer, for every column the index names; every entry names a file that is on
  storage; entries of the latest slices (log files included) equal a build from scratch;
* ``partition_stats``: equal to a build from scratch (tight: exactly the partition's live values);
* ``metadata validate`` finds nothing, and no indexing instant or inflight partition is left.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

import hudi_md
from hudi_md.metadata import keys as K
from hudi_md.metadata.indexing import indexing_state
from hudi_md.metadata.validate import validate_metadata_table
from hudi_md.write.table_setup import create_metadata_partitions, drop_metadata_indexes
from hudi_md.write.writer import HudiWriter
from table_model import hudi_rs_table


def _file_id(file_name: str) -> str:
    return file_name.split("_")[0]


def footer_ranges(path: Path, columns: Sequence[str]) -> dict[str, tuple[Any, Any, int, int]]:
    """(min, max, null count, value count) of each column over a Parquet file's row groups, as
    pyarrow reads them from the footer."""
    meta = pq.read_metadata(str(path))
    names = [meta.schema.column(i).name for i in range(meta.num_columns)]
    out: dict[str, tuple[Any, Any, int, int]] = {}
    for col in columns:
        if col not in names:
            continue
        j = names.index(col)
        lo = hi = None
        nulls = values = 0
        for g in range(meta.num_row_groups):
            chunk = meta.row_group(g).column(j)
            values += chunk.num_values
            st = chunk.statistics
            if st is None:
                continue
            nulls += st.null_count or 0
            if st.has_min_max:
                lo = st.min if lo is None else min(lo, st.min)
                hi = st.max if hi is None else max(hi, st.max)
        out[col] = (lo, hi, nulls, values)
    return out


def _stats_key(s: Any) -> tuple[str, str, str]:
    return (s.partition_path, s.file_name, s.column_name)


def _stats_value(s: Any) -> tuple[Any, Any, Any, Any]:
    return (s.min_value, s.max_value, s.null_count, s.value_count)


def rebuilt_from_scratch(path: Path, partitions: Sequence[str], work: Path) -> Any:
    """A copy of the table whose ``partitions`` were dropped and built again by ``metadata
    create`` (the blocking build, from the files as they are): its MDT reader."""
    copy = work / f"rebuilt-{path.name}"
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(path, copy)
    writer = HudiWriter(str(copy), {})
    drop_metadata_indexes(writer, list(partitions))
    create_metadata_partitions(writer, list(partitions))
    mdt = hudi_md.open_table(str(copy)).metadata_table
    assert mdt is not None
    return mdt


def check_index(
    path: Path, partitions: Sequence[str], work: Path, *, options: dict[str, str] | None = None
) -> None:
    table = hudi_md.open_table(str(path), options)
    state = indexing_state(table.state.storage, table.state.config, table.timeline)
    assert state.pending == [], f"indexing left pending: {state.pending}"
    assert state.inflight == [], f"partitions left inflight: {state.inflight}"
    mdt = table.metadata_table
    assert mdt is not None and set(partitions) <= mdt.available_partitions, mdt and mdt.available_partitions
    diffs = validate_metadata_table(table)
    assert diffs == [], diffs[:5]
    scratch = rebuilt_from_scratch(path, partitions, work)
    slices = table.state.file_system_view().latest_file_slices(table.partitions())
    live_files = {(s.partition_path, f.name) for s in slices for f in ([s.base_file] if s.base_file else [])}
    live_files |= {(s.partition_path, lf.name) for s in slices for lf in s.log_files}

    if K.RECORD_INDEX in partitions:
        rs = hudi_rs_table(str(path), allow_empty=True)
        want = {
            k: (p, _file_id(f))
            for k, p, f in zip(
                rs.column("_hoodie_record_key").to_pylist(),
                rs.column("_hoodie_partition_path").to_pylist(),
                rs.column("_hoodie_file_name").to_pylist(),
                strict=True,
            )
        }
        got = {k: (loc.partition_path, loc.file_id) for k, loc in mdt.record_index.locations().items()}
        missing = sorted(set(want) - set(got))
        extra = sorted(set(got) - set(want))
        wrong = sorted(k for k in set(want) & set(got) if want[k] != got[k])
        assert not (missing or extra or wrong), (
            f"record_index: {len(missing)} live keys missing {missing[:3]}, {len(extra)} dead keys "
            f"{extra[:3]}, {len(wrong)} at the wrong file group {[(k, got[k], want[k]) for k in wrong[:3]]}"
        )

    if K.COLUMN_STATS in partitions:
        stats = mdt.stats.column_stats()
        columns = sorted({s.column_name for s in stats})
        assert columns, "column_stats is empty"
        by_key = {_stats_key(s): s for s in stats}
        on_storage = {(p, n) for p, files in _storage_files(table.state).items() for n in files}
        stale = sorted({(s.partition_path, s.file_name) for s in stats} - on_storage)
        assert not stale, f"column_stats of files not on storage: {stale[:3]}"
        for s in slices:
            if s.base_file is None:
                continue
            for col, (lo, hi, nulls, values) in footer_ranges(path / s.base_file.path, columns).items():
                entry = by_key.get((s.partition_path, s.base_file.name, col))
                assert entry is not None, f"column_stats has no {col} of {s.base_file.name}"
                if lo is None and hi is None:
                    # no value in the file: Hudi stores its type's zero (0, 0.0, false, epoch), as
                    # it reads such chunks from parquet-mr
                    assert entry.min_value == entry.max_value and not entry.min_value, (
                        s.base_file.name,
                        col,
                        entry,
                    )
                else:
                    assert (entry.min_value, entry.max_value) == (lo, hi), (
                        s.base_file.name,
                        col,
                        entry,
                        lo,
                        hi,
                    )
                counts = (entry.null_count, entry.value_count)
                assert counts == (nulls, values), (s.base_file.name, col, entry, nulls, values)
        want = {_stats_key(s): _stats_value(s) for s in scratch.stats.column_stats()}
        got = {k: _stats_value(v) for k, v in by_key.items() if (k[0], k[1]) in live_files}
        assert got == want, _first_difference(got, want)

    if K.PARTITION_STATS in partitions:
        want = {(s.partition_path, s.column_name): _stats_value(s) for s in scratch.stats.partition_stats()}
        got = {(s.partition_path, s.column_name): _stats_value(s) for s in mdt.stats.partition_stats()}
        assert got == want, _first_difference(got, want)


def _storage_files(table: Any) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for p in table.partitions():
        out[p] = {e.name for e in table.storage.list(p) if not e.is_dir}
    return out


def _first_difference(got: dict[Any, Any], want: dict[Any, Any]) -> str:
    missing = sorted(set(want) - set(got), key=str)
    extra = sorted(set(got) - set(want), key=str)
    wrong = sorted((k for k in set(got) & set(want) if got[k] != want[k]), key=str)
    return (
        f"{len(missing)} missing {missing[:3]}, {len(extra)} extra {extra[:3]}, {len(wrong)} differ "
        f"{[(k, got[k], want[k]) for k in wrong[:3]]}"
    )
