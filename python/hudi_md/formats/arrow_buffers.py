"""Arrow string and binary columns as numpy byte buffers, and back.

The column-wise paths (HFile cells written from Arrow columns, record-index key routing, bloom
filter keys, the ``files`` partition decoded with numpy) read the bytes of a string column without
a Python object per value, and build string columns from byte positions in a buffer.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "binaries_at",
    "byte_buffers",
    "pairs_equal_to_next",
    "pairs_strictly_increasing",
    "strings_at",
]


def byte_buffers(column: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """``(offsets, data)`` of a (large) string or binary array, without copying: value ``i`` is
    ``data[offsets[i]:offsets[i + 1]]``; ``offsets`` has ``len(column) + 1`` int32 or int64
    entries. A null value's bytes are empty; callers that refuse nulls check ``null_count``."""
    t = column.type
    if pa.types.is_large_string(t) or pa.types.is_large_binary(t):
        offset_type: type = np.int64
    elif pa.types.is_string(t) or pa.types.is_binary(t):
        offset_type = np.int32
    else:
        raise TypeError(f"not a string or binary column: {t}")
    _, offsets_buf, data_buf = column.buffers()
    if offsets_buf is None:  # an empty column may have no buffers
        return np.zeros(1, offset_type), np.zeros(0, np.uint8)
    offsets: np.ndarray = np.frombuffer(offsets_buf, dtype=offset_type)[
        column.offset : column.offset + len(column) + 1
    ]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    return offsets, data


def strings_at(
    buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray, *, utf8_checked: bool = False
) -> pa.StringArray:
    """A string array of the ``lengths[i]`` bytes at ``starts[i]`` of ``buf``, gathered in one
    pass; ``ValueError`` when the bytes are not UTF-8 (not checked when the caller knows they are:
    ``utf8_checked``, pieces of valid strings cut at character boundaries)."""
    arr = _gathered(buf, starts, lengths, pa.string())
    if utf8_checked:
        return arr
    try:
        arr.validate(full=True)
    except pa.ArrowInvalid as e:
        raise ValueError(f"not UTF-8: {e}") from e
    return arr


def binaries_at(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> pa.BinaryArray:
    """A binary array of the ``lengths[i]`` bytes at ``starts[i]`` of ``buf``, gathered in one pass."""
    return _gathered(buf, starts, lengths, pa.binary())


def _gathered(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray, t: pa.DataType) -> pa.Array:
    n = len(lengths)
    ends = starts + lengths
    if n > 0 and len(buf) < 2**31 and bool(np.all(starts[1:] >= ends[:-1])):
        # In buffer order without overlaps (a decoder's usual output): one array over ``buf``
        # whose even values are the spans and odd values the bytes between them; Arrow copies
        # the even ones out.
        bounds = np.empty(2 * n, np.int32)
        bounds[0::2] = starts
        bounds[1::2] = ends
        spans = pa.Array.from_buffers(t, 2 * n - 1, [None, pa.py_buffer(bounds), pa.py_buffer(buf)])
        return spans.take(pa.array(np.arange(0, 2 * n, 2, dtype=np.int64)))
    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    total = int(offsets[-1])
    # the byte positions to gather: +1 inside a span, a jump at the start of the next one
    some = np.flatnonzero(lengths)
    s, n_, o = starts[some], lengths[some], offsets[:-1][some]
    step = np.ones(total, np.int32 if len(buf) < 2**31 else np.int64)
    if total:
        step[0] = s[0]
        step[o[1:]] = s[1:] - (s[:-1] + n_[:-1]) + 1
    data = buf[np.cumsum(step)] if total else np.zeros(0, np.uint8)
    if total < 2**31:
        return pa.Array.from_buffers(
            t, len(lengths), [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data.tobytes())]
        )
    large = pa.large_string() if t == pa.string() else pa.large_binary()
    return pa.Array.from_buffers(
        large, len(lengths), [None, pa.py_buffer(offsets), pa.py_buffer(data.tobytes())]
    ).cast(t)


def _neighbours(column: pa.ChunkedArray | pa.Array) -> tuple[pa.Array, pa.Array]:
    whole = column
    if isinstance(column, pa.ChunkedArray):  # one chunk: used as it is (combining copies it)
        whole = column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
    n = len(whole)
    return whole.slice(0, n - 1), whole.slice(1)


def pairs_strictly_increasing(first: pa.ChunkedArray | pa.Array, second: pa.ChunkedArray | pa.Array) -> bool:
    """Whether the ``(first, second)`` pairs are in strictly increasing order (byte order, as
    Arrow sorts strings): then no pair repeats and a sort would keep the order. One vectorised
    comparison of neighbours; nulls count as out of order."""
    if len(first) < 2:
        return True
    a0, a1 = _neighbours(first)
    b0, b1 = _neighbours(second)
    ordered = pc.or_(pc.less(a0, a1), pc.and_(pc.equal(a0, a1), pc.less(b0, b1)))
    return bool(pc.all(pc.fill_null(ordered, False)).as_py())


def pairs_equal_to_next(first: pa.ChunkedArray | pa.Array, second: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Per row but the last: whether the ``(first, second)`` pair equals the next row's (on
    sorted pairs, the rows of a repeated pair are neighbours)."""
    if len(first) < 2:
        return np.zeros(0, bool)
    a0, a1 = _neighbours(first)
    b0, b1 = _neighbours(second)
    same = pc.fill_null(pc.and_(pc.equal(a0, a1), pc.equal(b0, b1)), False)
    return same.to_numpy(zero_copy_only=False)
