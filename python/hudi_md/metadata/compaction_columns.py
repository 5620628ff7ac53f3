"""An MDT file slice compacted column-wise: its base HFile and log blocks merged into the cells of
a new base file without a Python dict per record.

MDT compaction rewrites every record of a file group; at 10^6 files the `column_stats` file
groups hold millions of records, and decoding each into a dict, merging and encoding it again held
~20 GB and took tens of minutes. Most keys have one event since the last delete of the key (a file's
stats are written once; a record-index entry is replaced whole), and a key's merged record is then
that event's record unchanged: its value bytes are copied as they are. Only keys with several
events to merge (a `files` record updated by later commits, stats merged across commits) are
decoded and folded with :func:`records.merge`, then encoded again — the record-wise rules, for the
few keys that need them.

A record dropped by compaction (not live: a stats or bloom record marked deleted, an empty
record-index entry) is found column-wise where a decoder knows the records (`column_stats`,
`partition_stats`, `record_index`; `files` records are always kept), else by decoding that record.
Cells written with another Avro schema than the writer's, or anything not understood, make
:func:`compacted_cells` answer None and the caller compacts record-wise.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_md.formats.avro import decode_schemaless
from hudi_md.metadata import keys as K
from hudi_md.metadata.record_index_columns import CellEvent, DeleteEvent
from hudi_md.metadata.records import Record, is_live, merge, normalize
from hudi_md.metadata.stats_columns import decode_stats_columns

__all__ = ["compacted_cells"]

# partitions whose records of one key merge (records.merge): newest-wins everywhere else
_MERGING = (K.FILES, K.COLUMN_STATS, K.PARTITION_STATS)

Encode = Callable[[Record], bytes]  # a merged (reader-normalised) record back to writer bytes


def compacted_cells(
    events: Sequence[CellEvent | DeleteEvent], partition: str, writer_schema: str, encode: Encode
) -> tuple[pa.BinaryArray, pa.BinaryArray] | None:
    """The keys (sorted by their bytes) and values of the slice's live records after ``events``
    (merge order), or None when a cell run was written with another schema than ``writer_schema``
    (the record-wise compaction then decodes each record with its own)."""
    cell_events = [e for e in events if isinstance(e, CellEvent)]
    if any(e.schema != writer_schema for e in cell_events):
        return None
    keys, seq, deleted, value_at = [], [], [], []
    offset = 0
    for n, e in enumerate(events):
        count = len(e.keys)
        if not count:
            continue
        keys.append(e.keys)
        seq.append(np.full(count, n, np.int32))
        is_delete = isinstance(e, DeleteEvent)
        deleted.append(np.full(count, is_delete, bool))
        value_at.append(np.full(count, -1, np.int64) if is_delete else np.arange(offset, offset + count))
        offset += 0 if is_delete else count
    if not keys:
        return pa.array([], pa.binary()), pa.array([], pa.binary())
    key_column = pa.concat_arrays(keys)
    table = pa.table(
        {"key": key_column, "seq": np.concatenate(seq), "pos": np.arange(len(key_column), dtype=np.int64)}
    )
    # events grouped by key (runs), oldest first; `pos` keeps a file's repeated keys in file order
    sort_keys = [("key", "ascending"), ("seq", "ascending"), ("pos", "ascending")]
    order = pc.sort_indices(table, sort_keys=sort_keys).to_numpy()
    ordered = key_column.take(pa.array(order))
    n = len(order)
    starts_run = np.ones(n, bool)
    if n > 1:
        starts_run[1:] = pc.not_equal(ordered.slice(1), ordered.slice(0, n - 1)).to_numpy(
            zero_copy_only=False
        )
    run_id = np.cumsum(starts_run) - 1
    runs = int(run_id[-1]) + 1
    is_deleted = np.concatenate(deleted)[order]
    # a key's events that count: those after its last delete (a delete wins over older events)
    last_delete = np.full(runs, -1, np.int64)
    np.maximum.at(last_delete, run_id[is_deleted], np.flatnonzero(is_deleted))
    counts = ~is_deleted & (np.arange(n) > last_delete[run_id])
    live_events = np.bincount(run_id, weights=counts, minlength=runs).astype(np.int64)
    newest = np.full(runs, -1, np.int64)  # position (in `order`) of each key's newest counting event
    np.maximum.at(newest, run_id[counts], np.flatnonzero(counts))

    all_values = (
        pa.concat_arrays([e.values for e in cell_events]) if cell_events else pa.array([], pa.binary())
    )
    values_at = np.concatenate(value_at)[order]
    merging = partition in _MERGING
    copied = np.flatnonzero(live_events == 1 if merging else live_events >= 1)
    folded = np.flatnonzero(live_events > 1) if merging else np.zeros(0, np.int64)
    # copied as they are: the one (or newest) event's bytes, if that record is live
    copy_at = values_at[newest[copied]]
    keep = _live(all_values, copy_at, cell_events, partition, writer_schema)
    copied, copy_at = copied[keep], copy_at[keep]
    # folded with the record-wise rules, then encoded again
    fold_runs, fold_values = _fold_runs(folded, run_id, counts, values_at, all_values, writer_schema, encode)
    out_runs = np.concatenate([copied, np.asarray(fold_runs, np.int64)])
    out_values = pa.concat_arrays([all_values.take(pa.array(copy_at)), pa.array(fold_values, pa.binary())])
    by_key = np.argsort(out_runs, kind="stable")  # runs are numbered in key order
    first_of_run = np.flatnonzero(starts_run)
    out_keys = ordered.take(pa.array(first_of_run[out_runs[by_key]]))
    return out_keys, out_values.take(pa.array(by_key))


def _fold_runs(
    folded: np.ndarray,
    run_id: np.ndarray,
    counts: np.ndarray,
    values_at: np.ndarray,
    all_values: pa.BinaryArray,
    schema: str,
    encode: Encode,
) -> tuple[list[int], list[bytes]]:
    """The runs in ``folded`` whose merged record is live, and its bytes."""
    if not len(folded):
        return [], []
    wanted = np.zeros(int(run_id[-1]) + 1, bool)
    wanted[folded] = True
    positions = np.flatnonzero(counts & wanted[run_id])  # grouped by run, oldest first in each
    runs = run_id[positions]
    bounds = np.flatnonzero(np.diff(runs)) + 1
    keys: list[int] = []
    values: list[bytes] = []
    for group in np.split(positions, bounds):
        record = _fold(all_values, values_at[group], schema)
        if record is not None and is_live(record):
            keys.append(int(run_id[group[0]]))
            values.append(encode(record))
    return keys, values


def _fold(all_values: pa.BinaryArray, at: np.ndarray, schema: str) -> Record | None:
    """The events' records (oldest first) merged as the record-wise read merges them."""
    record: Record | None = None
    for value in all_values.take(pa.array(at)).to_pylist():
        record = merge(record, normalize(decode_schemaless(value, schema, return_record_name=True)))
    return record


def _live(
    all_values: pa.BinaryArray,
    at: np.ndarray,
    events: Sequence[CellEvent],
    partition: str,
    schema: str,
) -> np.ndarray:
    """Which of the records at ``at`` (positions in ``all_values``) compaction keeps."""
    if partition == K.FILES or not len(at):
        return np.ones(len(at), bool)
    if partition in (K.COLUMN_STATS, K.PARTITION_STATS):
        deleted = _stats_deleted(events, schema)
        if deleted is not None:
            return ~deleted[at]
    # decode each distinct value once (record-index entries of one file group share theirs)
    encoded = pc.dictionary_encode(all_values.take(pa.array(at)))
    live = [
        is_live(normalize(decode_schemaless(v, schema, return_record_name=True)))
        for v in encoded.dictionary.to_pylist()
    ]
    return np.asarray(live, bool)[encoded.indices.to_numpy(zero_copy_only=False)]


def _stats_deleted(events: Sequence[CellEvent], schema: str) -> np.ndarray | None:
    """``isDeleted`` of every stats cell, decoded column-wise; None if a run is not of the shape
    the decoder knows."""
    flags: list[np.ndarray] = []
    for e in events:
        run = decode_stats_columns(e.cells, schema)
        if run is None:
            return None
        flags.append(run.is_deleted)
    return np.concatenate(flags) if flags else np.zeros(0, bool)
