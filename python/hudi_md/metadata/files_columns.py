"""The ``files`` partition decoded and merged column-wise, for plans that want most partitions.

A plan without a partition filter needs the files of every partition: at 100k partitions that is
100k ``files`` records, and decoding them one by one (:mod:`files_codec`), merging them as dicts
(:func:`records.merge`) and listing each partition's files costs ~30 µs a record in Python. Here the
records of a cell run (an HFile base file or an HFILE_DATA log block) are decoded together with
numpy — every record advances one field per step, so a step costs one array operation for all of
them — into one row per file entry, and the runs are merged with Arrow group-bys.

Only the writer schema :func:`files_codec.files_record_decoder` knows is decoded here, and the
answer is exact or absent: a record of another shape, a key whose records change type, bytes left
over or missing, all make :func:`decode_files_cells` / :func:`merge_files_runs` return None and
the caller reads the records one by one. File entries whose history holds a deletion are folded
one by one with :func:`records.merge`'s rules, so the merge is the same as the record-wise one.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_md.formats.arrow_buffers import pairs_equal_to_next, pairs_strictly_increasing
from hudi_md.formats.avro_columns import PADDING, Unexpected, scalar_varint, strings, varints
from hudi_md.formats.hfile import CellColumns
from hudi_md.metadata import keys as K
from hudi_md.metadata.records import Record, live_files, merge

__all__ = ["FILES_TABLE_SCHEMA", "FilesRun", "decode_files_cells", "merge_files_runs"]

# partition path ("" when not partitioned), file name, size: the live files of the partitions read
FILES_TABLE_SCHEMA = pa.schema(
    [pa.field("partition_path", pa.string()), pa.field("name", pa.string()), pa.field("size", pa.int64())]
)

# Map blocks with fewer records still inside them than this finish one record at a time: a step
# over a handful of records costs more in numpy calls than the Python loop it replaces.
_LOCKSTEP_MIN = 32
_PAYLOAD_UNIONS_AFTER_FILES = 4
# A map block with this many entries left first has its plain entries split out (_walk_short_entries).
_WALK_MIN = 4096
# At most this many entries outside the largest run are placed into it one by one (a binary search
# each, ~40 µs); more are sorted with it.
_PLACED_MAX = 256
# merge order: the entries of a (key, name) pair neighbours, in the order of their runs
_MERGE_ORDER = [("key", "ascending"), ("name", "ascending"), ("seq", "ascending")]


@dataclass(frozen=True)
class FilesRun:
    """The decoded records of one cell run: one row per record and one per file entry."""

    keys: pa.StringArray  # the HFile row keys
    types: np.ndarray  # int64 record type per record
    has_map: np.ndarray  # bool: the record carries a filesystemMetadata map
    entry_record: np.ndarray  # int64 index of the entry's record
    entry_name: pa.StringArray
    entry_size: np.ndarray  # int64
    entry_deleted: np.ndarray  # bool


def decode_files_cells(
    keys: Sequence[bytes], values: Sequence[bytes], nullable_before_key: int
) -> FilesRun | None:
    """:func:`decode_files_columns` of cells given as lists."""
    return decode_files_columns(cell_columns(keys, values), nullable_before_key)


def cell_columns(keys: Sequence[bytes], values: Sequence[bytes]) -> CellColumns:
    """Cells given as ``keys``/``values`` lists, as :class:`CellColumns`."""
    lengths = np.fromiter(map(len, values), np.int64, len(values))
    ends = np.cumsum(lengths)
    return CellColumns(
        np.frombuffer(b"".join([*values, bytes(PADDING)]), np.uint8),
        pa.array(keys, pa.binary()),
        ends - lengths,
        lengths,
    )


def decode_files_columns(cells: CellColumns, nullable_before_key: int) -> FilesRun | None:
    """The records of a cell run (in HFile order), or None when any of them is not a ``files``
    record of the known writer schema (``nullable_before_key`` nullable strings before ``key``,
    see :func:`files_codec.files_record_decoder`)."""
    try:
        return _decode(cells, nullable_before_key)
    except (Unexpected, IndexError):
        return None


def _decode(cells: CellColumns, nullable_before_key: int) -> FilesRun:
    pos = cells.value_start.astype(np.int64, copy=True)
    ends = pos + cells.value_len
    buf = cells.buffer

    def check(p: np.ndarray, rows: np.ndarray | None = None) -> None:
        limit = ends if rows is None else ends[rows]
        if (p > limit).any():
            raise Unexpected

    for _ in range(nullable_before_key):
        branch, pos = varints(buf, pos)
        if ((branch != 0) & (branch != 1)).any():
            raise Unexpected
        some = np.flatnonzero(branch == 1)
        if some.size:
            length, after = varints(buf, pos[some])
            if (length < 0).any():
                raise Unexpected
            pos[some] = after + length
        check(pos)
    key_length, pos = varints(buf, pos)
    if (key_length < 0).any():
        raise Unexpected
    pos = pos + key_length
    check(pos)
    types, pos = varints(buf, pos)
    branch, pos = varints(buf, pos)
    if ((branch != 0) & (branch != 1)).any():
        raise Unexpected
    has_map = branch == 1
    check(pos)

    rec_parts: list[np.ndarray] = []
    start_parts: list[np.ndarray] = []
    len_parts: list[np.ndarray] = []
    size_parts: list[np.ndarray] = []
    flag_parts: list[np.ndarray] = []
    active = np.flatnonzero(has_map)
    while active.size:
        count, after = varints(buf, pos[active])
        pos[active] = after
        negative = np.flatnonzero(count < 0)
        if negative.size:  # a block with its byte size: skip the size
            count[negative] = -count[negative]
            _, after = varints(buf, pos[active[negative]])
            pos[active[negative]] = after
        check(pos[active], active)
        going = count > 0
        work = active[going]
        remaining = count[going]
        while work.size >= _LOCKSTEP_MIN:
            name_length, after = varints(buf, pos[work])
            if (name_length < 0).any():
                raise Unexpected
            rec_parts.append(work)
            start_parts.append(after)
            len_parts.append(name_length)
            size, after = varints(buf, after + name_length)
            flag = buf[after]
            if (flag > 1).any():
                raise Unexpected
            size_parts.append(size)
            flag_parts.append(flag.astype(bool))
            pos[work] = after + 1
            check(pos[work], work)
            remaining = remaining - 1
            left = remaining > 0
            work = work[left]
            remaining = remaining[left]
        if work.size:
            parts = (rec_parts, start_parts, len_parts, size_parts, flag_parts)
            _entries_one_by_one(buf, pos, ends, work, remaining, parts)
        active = active[going]
    for _ in range(_PAYLOAD_UNIONS_AFTER_FILES):
        if buf[pos].any():
            raise Unexpected  # a payload other than files: the record-wise decoder reads it
        pos = pos + 1
    if not np.array_equal(pos, ends):
        raise Unexpected

    def cat(parts: list[np.ndarray], dtype: type) -> np.ndarray:
        return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype)

    entry_record = cat(rec_parts, np.int64)
    order = np.argsort(entry_record, kind="stable")  # entries grouped by record, map order kept
    starts = cat(start_parts, np.int64)[order]
    name_lengths = cat(len_parts, np.int64)[order]
    key_array = _utf8(cells.rows)
    return FilesRun(
        keys=key_array,
        types=types,
        has_map=has_map,
        entry_record=entry_record[order],
        entry_name=strings(buf, starts, name_lengths),
        entry_size=cat(size_parts, np.int64)[order],
        entry_deleted=cat(flag_parts, bool)[order],
    )


def _entries_one_by_one(
    buf: np.ndarray,
    pos: np.ndarray,
    ends: np.ndarray,
    work: np.ndarray,
    remaining: np.ndarray,
    parts: tuple[list[np.ndarray], ...],
) -> None:
    """The rest of the current map block of the few records in ``work``, a record at a time (the
    ``__all_partitions__`` record holds every partition in one map: its plain entries are split out
    by :func:`_walk_short_entries`, the others decoded by a Python loop whose common case, one-byte
    varints, is inlined)."""
    data = buf.data  # indexing a memoryview gives ints, without numpy scalars
    recs: list[int] = []
    starts: list[int] = []
    lens: list[int] = []
    sizes: list[int] = []
    flags: list[bool] = []
    rec_parts, start_parts, len_parts, size_parts, flag_parts = parts
    for r, left in zip(work.tolist(), remaining.tolist(), strict=True):
        p = int(pos[r])
        end = int(ends[r])
        if left >= _WALK_MIN:
            walked = _walk_short_entries(buf, p, end, left)
            if walked is not None:
                starts_of, lens_of, sizes_of, flags_of, p = walked
                rec_parts.append(np.full(len(starts_of), r, np.int64))
                start_parts.append(starts_of)
                len_parts.append(lens_of)
                size_parts.append(sizes_of)
                flag_parts.append(flags_of)
                left -= len(starts_of)
        for _ in range(left):
            b = data[p]
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                p += 1
            else:
                length, p = scalar_varint(data, p)
            if length < 0:
                raise Unexpected
            starts.append(p)
            lens.append(length)
            p += length
            b = data[p]
            if b < 0x80:
                sizes.append((b >> 1) ^ -(b & 1))
                p += 1
            else:
                size, p = scalar_varint(data, p)
                sizes.append(size)
            flag = data[p]
            if flag > 1 or p >= end:
                raise Unexpected
            p += 1
            flags.append(flag == 1)
        recs.extend([r] * left)
        pos[r] = p
    rec_parts.append(np.asarray(recs, np.int64))
    start_parts.append(np.asarray(starts, np.int64))
    len_parts.append(np.asarray(lens, np.int64))
    size_parts.append(np.asarray(sizes, np.int64))
    flag_parts.append(np.asarray(flags, bool))


def _walk_short_entries(
    buf: np.ndarray, start: int, end: int, left: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int] | None:
    """The leading entries of a map block in ``buf[start:end]`` (at most ``left``) of the shape of
    every ``__all_partitions__`` entry: a name under 64 bytes (a one-byte length), size 0, not
    deleted, i.e. ``<2n><name>\\0\\0``. Found by splitting the bytes at ``\\0\\0`` and kept
    while each piece's length byte says exactly the piece's length: then entry i+1 starts where
    entry i ends, which is what decoding them one by one gives (whatever bytes the names hold).
    Returns (name starts, name lengths, sizes, deleted flags, position after them), None when the
    first entry is not of that shape; the caller decodes the rest one by one."""
    piece_len = _pieces_before_double_zeros(buf[start:end], left)
    at = np.zeros(len(piece_len), np.int64)
    np.cumsum(piece_len[:-1] + 2, out=at[1:])
    length_byte = buf[start + np.minimum(at, end - start - 1)].astype(np.int64)
    bad = np.flatnonzero((piece_len < 1) | (piece_len > 64) | (length_byte != 2 * (piece_len - 1)))
    kept = int(bad[0]) if bad.size else len(piece_len)
    if not kept:
        return None
    at, lengths = at[:kept], piece_len[:kept] - 1
    after = start + int(at[-1] + lengths[-1]) + 3
    if after > end:
        raise Unexpected
    return at + start + 1, lengths, np.zeros(kept, np.int64), np.zeros(kept, bool), after


def _pieces_before_double_zeros(seg: np.ndarray, most: int) -> np.ndarray:
    """The lengths of the pieces ``bytes(seg).split(b"\\0\\0", most)`` gives but its last: found
    with numpy where none of those pairs touches another (the ``__all_partitions__`` entries: a
    name has no zero byte, its length byte is not 0); elsewhere by that split."""
    pair = np.flatnonzero((seg[:-1] == 0) & (seg[1:] == 0))[:most]
    if pair.size and np.all(np.diff(pair) > 1):
        # no run of three zeros or more among them: they do not overlap, and split's first pieces
        # end at each (zeros after the last one, such as the map's end, do not change those)
        return np.diff(pair, prepend=-2) - 2
    pieces = bytes(seg).split(b"\0\0", most)
    pieces.pop()  # what follows the last separator found (or the whole, without one)
    return np.fromiter(map(len, pieces), np.int64, len(pieces))


def _utf8(rows: pa.BinaryArray) -> pa.StringArray:
    """HFile rows as strings: MDT keys are UTF-8 (the record-wise path decodes them so)."""
    try:
        return rows.cast(pa.string())
    except pa.ArrowInvalid as e:
        raise Unexpected from e


def merge_files_runs(runs: Sequence[FilesRun], record_type: int = K.TYPE_FILES) -> pa.Table | None:
    """The live files of every partition key in ``runs`` (in merge order: base file first, then the
    log blocks), as :data:`FILES_TABLE_SCHEMA` rows sorted by partition and name; None when a key's
    records are not all ``files`` records (the record-wise merge decides those). With
    ``record_type`` ``TYPE_ALL_PARTITIONS``: the ``__all_partitions__`` record's live entries (its
    "files" are the partitions), merged by the same rules."""
    if not runs:
        return FILES_TABLE_SCHEMA.empty_table()
    types = np.concatenate([r.types for r in runs])
    if (types != record_type).any():
        return None
    record_keys = pa.chunked_array([r.keys for r in runs], pa.string()).combine_chunks()
    seq_base = np.cumsum([0] + [len(r.types) for r in runs])[:-1]
    entry_seq = np.concatenate([r.entry_record + base for r, base in zip(runs, seq_base, strict=True)])
    if len(entry_seq) == 0:
        return FILES_TABLE_SCHEMA.empty_table()
    names = pa.chunked_array([r.entry_name for r in runs], pa.string()).combine_chunks()
    # Most (key, name) pairs occur once (a file is listed when it is written) and usually come in
    # order (HFile keys are sorted, and so are the names of small maps): then each entry is its own
    # merge and a tombstone is not live, without a sort. Otherwise the entries are put in
    # (key, name, seq) order, which makes the entries of a pair neighbours, in merge order; the
    # string columns are gathered once, for the rows that stay.
    placed = _few_into_one(runs, record_keys, entry_seq, names)
    if placed is not None:
        order, same_as_next = placed
    else:
        entries = pa.table({"key": record_keys.take(pa.array(entry_seq)), "name": names, "seq": entry_seq})
        if pairs_strictly_increasing(entries["key"], names):
            order, same_as_next = None, None
        else:
            order = pc.sort_indices(entries, _MERGE_ORDER).to_numpy()
            at = pa.array(order)
            same_as_next = pairs_equal_to_next(entries["key"].take(at), names.take(at))
    size = np.concatenate([r.entry_size for r in runs])
    deleted = np.concatenate([r.entry_deleted for r in runs])
    seq = entry_seq
    if order is not None:
        size, deleted, seq = size[order], deleted[order], seq[order]
    if same_as_next is None or not same_as_next.any():
        rows = np.flatnonzero(~deleted)
        sizes = size[rows]
    else:
        if (same_as_next & (seq[1:] == seq[:-1])).any():
            return None  # a name twice in one map (Avro readers keep the last): the record-wise path
        starts = np.flatnonzero(np.concatenate(([True], ~same_as_next)))
        lengths = np.diff(np.append(starts, len(seq)))
        sizes = np.maximum.reduceat(size, starts)
        live = ~np.logical_or.reduceat(deleted, starts)
        for group in np.flatnonzero(~live & (lengths > 1)).tolist():
            # a deletion in the pair's history: folded in order by the record-wise rules
            first, end = int(starts[group]), int(starts[group] + lengths[group])
            at_first = first if order is None else int(order[first])
            name = names[at_first].as_py()
            folded = _fold_pair(name, size[first:end].tolist(), deleted[first:end].tolist(), record_type)
            if folded is not None:
                live[group] = True
                sizes[group] = folded
        rows = starts[live]
        sizes = sizes[live]
    at = rows if order is None else order[rows]
    keys = record_keys.take(pa.array(entry_seq[at]))
    unpartitioned = pc.any(pc.equal(record_keys, K.NON_PARTITIONED_NAME)).as_py()
    if unpartitioned:
        keys = pc.if_else(pc.equal(keys, K.NON_PARTITIONED_NAME), "", keys)
    out = pa.table(
        {"partition_path": keys, "name": names.take(pa.array(at)), "size": pa.array(sizes, pa.int64())},
        schema=FILES_TABLE_SCHEMA,
    )
    if unpartitioned:
        out = out.sort_by([("partition_path", "ascending"), ("name", "ascending")])
    return out


def _few_into_one(
    runs: Sequence[FilesRun], record_keys: pa.StringArray, entry_seq: np.ndarray, names: pa.StringArray
) -> tuple[np.ndarray | None, np.ndarray | None] | None:
    """``(order, same_as_next)`` of the entries when one run holds all but a few of them in
    strictly increasing (key, name) order (the usual ``files`` partition: a large base file or
    compacted log block, then small log blocks of the commits since): the merge order of the
    entries (None: they are in it already) and, per position but the last, whether its pair equals
    the next one's. The few, sorted, are placed into the large run by binary search, and only
    their neighbours can share their pair, instead of a sort and a comparison of all of them.
    None: that is not the case, and the caller sorts or finds them in order."""
    run_sizes = [len(r.entry_size) for r in runs]
    big = int(np.argmax(run_sizes))
    lo = int(sum(run_sizes[:big]))
    hi = lo + run_sizes[big]
    n = len(entry_seq)
    if n - (hi - lo) > _PLACED_MAX:
        return None
    big_names = names.slice(lo, hi - lo)
    if not _run_in_order(runs[big], big_names):
        return None
    if hi - lo == n:
        return None, None
    few = np.concatenate([np.arange(0, lo), np.arange(hi, n)])
    pairs: dict[int, tuple[str, str]] = {}

    def pair(entry: int) -> tuple[str, str]:
        if entry not in pairs:
            pairs[entry] = record_keys[int(entry_seq[entry])].as_py(), names[entry].as_py()
        return pairs[entry]

    few_pairs = [pair(e) for e in few.tolist()]
    few_order = sorted(range(len(few)), key=lambda j: (*few_pairs[j], int(entry_seq[few[j]])))
    every = range(lo, hi)
    at = []
    for j in few_order:
        # an earlier run's entry of the same pair goes before the large run's, a later one after
        place = bisect.bisect_left if few[j] < lo else bisect.bisect_right
        at.append(place(every, few_pairs[j], key=pair))
    order = np.insert(np.arange(lo, hi), np.asarray(at, np.int64), few[few_order])
    # the large run's pairs are strictly increasing: a pair repeats only next to a placed entry
    from_few = np.zeros(n, bool)
    from_few[few] = True
    same_as_next = np.zeros(n - 1, bool)
    for p in np.flatnonzero(from_few[order]).tolist():
        for q in (p - 1, p):
            if 0 <= q < n - 1:
                same_as_next[q] = pair(int(order[q])) == pair(int(order[q + 1]))
    return order, same_as_next


def _run_in_order(run: FilesRun, names: pa.StringArray) -> bool:
    """Whether a run's (key, name) pairs are strictly increasing in entry order: its records' keys
    strictly increasing, its entries grouped by record in that order, the names of a record's
    entries strictly increasing."""
    n = len(names)
    if n < 2:
        return True
    if (np.diff(run.entry_record) < 0).any():
        return False
    keys = run.keys
    if len(keys) > 1:
        increasing = pc.less(keys.slice(0, len(keys) - 1), keys.slice(1))
        if not pc.all(pc.fill_null(increasing, False)).as_py():
            return False
    one_record = run.entry_record[1:] == run.entry_record[:-1]
    if one_record.any():
        less = pc.fill_null(pc.less(names.slice(0, n - 1), names.slice(1)), False)
        if not less.to_numpy(zero_copy_only=False)[one_record].all():
            return False
    return True


def _fold_pair(name: str, sizes: list[int], deleted: list[bool], record_type: int) -> int | None:
    """The size of one (key, name) pair after folding its entries (in merge order) by
    :func:`records.merge`'s rules, None when not live (a deletion removes a live entry and
    replaces a deleted one; a live entry after a deleted one keeps the larger size)."""
    folded: Record | None = None
    for size, gone in zip(sizes, deleted, strict=True):
        entry = {"type": record_type, "filesystemMetadata": {name: {"size": size, "isDeleted": gone}}}
        folded = merge(folded, entry)
    return live_files(folded).get(name)
