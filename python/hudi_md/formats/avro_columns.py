"""Avro binary decoded a field at a time over many records at once, with numpy.

Records of one writer schema, laid one after another in a buffer, are read in lockstep: each
record has a position, and reading a field advances every record's position with one array
operation, so a field costs the same few numpy calls for ten records or a hundred thousand. A
decoder built on these reads only a shape it knows and stops (:class:`Unexpected`) at anything
else: a union branch it does not expect, a length that is negative, a position past its record's
end. The buffer ends with zero padding (:data:`PADDING` bytes), so a varint that runs past the
last record stops there, and the end checks refuse it.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from hudi_md.formats.arrow_buffers import binaries_at, strings_at

__all__ = ["PADDING", "Records", "Unexpected", "binaries", "scalar_varint", "strings", "varints"]

PADDING = 16


class Unexpected(Exception):
    """The bytes are not of the shape the decoder reads: the caller takes the record-wise path."""


def varints(buf: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The zigzag Avro longs at ``pos`` and the positions after them."""
    b = buf[pos]
    going = b >= 0x80
    if not going.any():
        # all one byte (lengths, counts, union branches mostly are): zigzag on the bytes themselves
        small = b.view(np.int8)
        return ((small >> 1) ^ -(small & 1)).astype(np.int64), pos + 1
    value = (b & 0x7F).astype(np.uint64)
    after = pos + 1
    shift = 7
    rows = None  # None while every value goes on: the next bytes are read without an index
    while True:
        if rows is None and not going.all():
            rows = np.flatnonzero(going)
        elif rows is not None:
            rows = rows[going]
        if rows is not None and not rows.size:
            break
        if shift > 63:
            raise Unexpected
        if rows is None:
            b = buf[after]
            value |= (b & 0x7F).astype(np.uint64) << np.uint64(shift)
            after += 1
        else:
            at = after[rows]
            b = buf[at]
            value[rows] |= (b & 0x7F).astype(np.uint64) << np.uint64(shift)
            after[rows] = at + 1
        going = b >= 0x80
        shift += 7
    decoded = (value >> np.uint64(1)) ^ (np.uint64(0) - (value & np.uint64(1)))
    return decoded.view(np.int64), after


def scalar_varint(data: bytes | memoryview, pos: int) -> tuple[int, int]:
    """The zigzag Avro long at ``pos`` of ``data`` and the position after it."""
    n = 0
    shift = 0
    while True:
        if shift > 63:
            raise Unexpected
        b = data[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
    return (n >> 1) ^ -(n & 1), pos


class Records:
    """The records at ``starts`` .. ``ends`` of ``buf`` (which ends with :data:`PADDING` zero
    bytes), read field by field; ``pos`` is every record's position."""

    def __init__(self, buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> None:
        if len(buf) - (int(ends.max()) if len(ends) else 0) < PADDING:
            raise ValueError("the records' buffer must end with PADDING bytes after the last record")
        self.buf = buf
        self.pos = starts.astype(np.int64, copy=True)
        self.ends = ends

    def __len__(self) -> int:
        return len(self.pos)

    def check(self, rows: np.ndarray | None = None) -> None:
        """No record (of ``rows``) read past its end."""
        if rows is None:
            if (self.pos > self.ends).any():
                raise Unexpected
        elif (self.pos[rows] > self.ends[rows]).any():
            raise Unexpected

    def long(self, rows: np.ndarray | None = None) -> np.ndarray:
        """A long (or int) of every record (of ``rows``)."""
        if rows is None:
            value, self.pos = varints(self.buf, self.pos)
        else:
            value, self.pos[rows] = varints(self.buf, self.pos[rows])
        self.check(rows)
        return value

    def branch(self, branches: int, rows: np.ndarray | None = None) -> np.ndarray:
        """A union branch index, each in ``0 .. branches - 1``."""
        value = self.long(rows)
        if ((value < 0) | (value >= branches)).any():
            raise Unexpected
        return value

    def null(self, rows: np.ndarray | None = None) -> None:
        """A ``[null, ...]`` union whose every record must take the null branch."""
        if self.long(rows).any():
            raise Unexpected

    def boolean(self, rows: np.ndarray | None = None) -> np.ndarray:
        at = self.pos if rows is None else self.pos[rows]
        value = self.buf[at]
        if (value > 1).any():
            raise Unexpected
        self._advance(1, rows)
        return value.astype(bool)

    def fixed_float(self, width: int, rows: np.ndarray) -> np.ndarray:
        """A little-endian float (``width`` 4) or double (8) of every record of ``rows``, as float64
        (a float widens exactly)."""
        at = self.pos[rows]
        raw = self.buf[at[:, None] + np.arange(width)]
        self._advance(width, rows)
        t = np.dtype("<f4") if width == 4 else np.dtype("<f8")
        return np.ascontiguousarray(raw).view(t).reshape(-1).astype(np.float64)

    def span(self, rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """A string or bytes of every record (of ``rows``): where its bytes start and how many."""
        length = self.long(rows)
        if (length < 0).any():
            raise Unexpected
        start = self.pos if rows is None else self.pos[rows]
        start = start.copy()
        if rows is None:
            self.pos = self.pos + length
        else:
            self.pos[rows] += length
        self.check(rows)
        return start, length

    def skip_nullable_string(self) -> None:
        some = np.flatnonzero(self.branch(2))
        if some.size:
            self.span(some)

    def at_ends(self) -> None:
        """Every record read to its last byte, and no further."""
        if not np.array_equal(self.pos, self.ends):
            raise Unexpected

    def _advance(self, n: int, rows: np.ndarray | None) -> None:
        if rows is None:
            self.pos = self.pos + n
        else:
            self.pos[rows] += n
        self.check(rows)


def strings(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> pa.StringArray:
    """The strings at ``starts``; :class:`Unexpected` when one is not UTF-8 (fastavro would refuse it)."""
    try:
        return strings_at(buf, starts, lengths)
    except ValueError as e:
        raise Unexpected from e


def binaries(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> pa.BinaryArray:
    return binaries_at(buf, starts, lengths)
