"""Byte ranges of one file kept after a read, and views of a part of a file.

Readers of the metadata table open a file with a few range reads (a log block's header, an
HFile's tail) and then fetch only the blocks they need. :class:`RangeCachedFile` keeps the ranges a
reader fetched on purpose (:meth:`RangeCachedFile.prefetch`), so the nested readers that follow (an
HFile inside a log block opening its own tail) are served from them instead of sending another
request. :class:`InputSlice` is a part of a file seen as a file of its own.
"""

from __future__ import annotations

import threading

from hudi_md.storage.base import InputFile

__all__ = ["InputSlice", "RangeCachedFile"]


class RangeCachedFile:
    """An :class:`InputFile` whose prefetched ranges answer later reads that fall inside them.

    Only :meth:`prefetch` adds to the kept ranges; a :meth:`read` outside them is one request whose
    bytes are not kept (the block readers above keep what they decode).
    """

    def __init__(self, source: InputFile) -> None:
        self._source = source
        self.name = source.name
        self._lock = threading.Lock()
        self._ranges: list[tuple[int, bytes]] = []

    def size(self) -> int:
        return self._source.size()

    def cached(self, offset: int, length: int) -> bytes | None:
        """The bytes ``[offset, offset + length)`` if a kept range holds them, else None."""
        with self._lock:
            for start, data in self._ranges:
                if start <= offset and offset + length <= start + len(data):
                    return data[offset - start : offset - start + length]
        return None

    def prefetch(self, offset: int, length: int) -> bytes:
        """Read ``[offset, offset + length)`` (one request unless already kept) and keep it."""
        hit = self.cached(offset, length)
        if hit is not None:
            return hit
        data = self._source.read(offset, length)
        with self._lock:
            # a range inside the new one is no longer needed
            self._ranges = [
                (s, d) for s, d in self._ranges if not (offset <= s and s + len(d) <= offset + length)
            ]
            self._ranges.append((offset, data))
        return data

    def read(self, offset: int, length: int) -> bytes:
        hit = self.cached(offset, length)
        return hit if hit is not None else self._source.read(offset, length)

    def read_all(self) -> bytes:
        size = self.size()
        hit = self.cached(0, size)
        return hit if hit is not None else self._source.read_all()


class InputSlice:
    """``length`` bytes of ``source`` from ``start``, as a file of their own (an HFile inside a log
    block)."""

    def __init__(self, source: InputFile, start: int, length: int, name: str) -> None:
        if start < 0 or length < 0:
            raise ValueError(f"{name}: bad slice [{start}, {start + length})")
        self._source = source
        self._start = start
        self._length = length
        self.name = name

    def size(self) -> int:
        return self._length

    def read(self, offset: int, length: int) -> bytes:
        if offset < 0 or length < 0 or offset + length > self._length:
            raise EOFError(f"{self.name}: read of {length} bytes at {offset} past size {self._length}")
        return self._source.read(self._start + offset, length)

    def read_all(self) -> bytes:
        return self._source.read(self._start, self._length)
