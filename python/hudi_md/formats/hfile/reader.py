"""Random-access HFile v3 reader: open with one or two range reads, then fetch only the blocks asked for."""

from __future__ import annotations

import struct
import threading
import zlib
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_md.errors import HFileFormatError
from hudi_md.formats.arrow_buffers import binaries_at
from hudi_md.formats.hfile._layout import (
    HEADER_SIZE,
    INLINE_MAGICS,
    MAGIC_DATA,
    MAGIC_ENCODED_DATA,
    MAGIC_FILE_INFO,
    MAGIC_INTERMEDIATE_INDEX,
    MAGIC_LEAF_INDEX,
    MAGIC_META,
    MAGIC_ROOT_INDEX,
    TRAILER_SIZE,
    BlockHeader,
    CellPositions,
    HFileTrailer,
    block_payload,
    cell_positions,
    check_index_order,
    floor_entry,
    index_key_row,
    parse_file_info,
    parse_header,
    parse_nonroot_index,
    parse_root_index,
    parse_trailer,
)
from hudi_md.formats.hfile._wire import Corrupt
from hudi_md.storage import BytesInputFile, InputFile

__all__ = ["CELL_BUFFER_PADDING", "CellColumns", "HFileReader"]

_OPEN_TAIL_BYTES = 64 << 10  # one read usually covers trailer + load-on-open (the whole file if small)
_SCAN_READAHEAD = 4 << 20  # a cursor walking block to block ramps its reads up to this
# A full scan reads the whole data section in one request (up to this much): it reads every byte
# anyway, and on an object store one large GET costs far less than many.
_SCAN_READ_LIMIT = 256 << 20
_WALK_READAHEAD_START = 256 << 10  # a cursor stepping block to block ramps its reads up from here
_DATA_CACHE_BYTES = 32 << 20  # decoded data blocks kept per reader (MDT blocks are ~1 MB)
# A full scan of at least this many bytes of (compressed) data blocks decodes them on this many threads.
_PARALLEL_SCAN_BYTES = 1 << 20
_SCAN_THREADS = 2
_INDEX_CACHE_BLOCKS = 256  # non-root index blocks (only multi-level HBase files have them)

_KEY_VALUE_VERSION_WITH_MVCC = (1).to_bytes(4, "big")


class _DataBlock:
    """A decoded data block: its cells' positions, the row/value lists made from them when a
    lookup first wants them, and where the next block starts."""

    __slots__ = ("_rows", "_values", "cells", "offset", "total_size", "weight")

    def __init__(self, offset: int, total_size: int, cells: CellPositions) -> None:
        self.offset = offset
        self.total_size = total_size
        self.cells = cells
        self._rows: list[bytes] | None = None
        self._values: list[bytes] | None = None
        self.weight = len(cells.payload) + 64 * len(cells)

    @property
    def rows(self) -> list[bytes]:
        if self._rows is None:
            self._rows = self.cells.rows()
        return self._rows

    @property
    def values(self) -> list[bytes]:
        if self._values is None:
            self._values = self.cells.values()
        return self._values


@dataclass(frozen=True)
class CellColumns:
    """Cells of an HFile as columns, for decoders that work on all of them at once: the payloads
    of the data blocks they come from, one after another in ``buffer`` (followed by
    :data:`CELL_BUFFER_PADDING` zero bytes, so a decoder reading a little past a value stays
    inside it), the rows (record keys) in file order, and where each value lies in ``buffer``."""

    buffer: np.ndarray  # uint8
    rows: pa.BinaryArray
    value_start: np.ndarray  # int64
    value_len: np.ndarray  # int64

    def __len__(self) -> int:
        return len(self.rows)

    def take(self, indices: np.ndarray) -> CellColumns:
        """The cells at ``indices`` (ascending: file order kept)."""
        return CellColumns(
            self.buffer, self.rows.take(pa.array(indices)), self.value_start[indices], self.value_len[indices]
        )

    @staticmethod
    def of_blocks(blocks: list[CellPositions]) -> CellColumns:
        # one copy: the padding joined with the payloads
        buffer = np.frombuffer(b"".join([*(b.payload for b in blocks), bytes(CELL_BUFFER_PADDING)]), np.uint8)
        base = np.cumsum([0] + [len(b.payload) for b in blocks])[:-1]
        starts = [b.row_start + o for b, o in zip(blocks, base, strict=True)]
        row_start = np.concatenate(starts) if starts else np.zeros(0, np.int64)
        row_len = np.concatenate([b.row_len for b in blocks]) if blocks else np.zeros(0, np.int64)
        values = [b.value_start + o for b, o in zip(blocks, base, strict=True)]
        return CellColumns(
            buffer,
            binaries_at(buffer, row_start, row_len),
            np.concatenate(values) if values else np.zeros(0, np.int64),
            np.concatenate([b.value_len for b in blocks]) if blocks else np.zeros(0, np.int64),
        )


CELL_BUFFER_PADDING = 16


def _check_data_magic(h: BlockHeader, offset: int) -> None:
    if h.magic != MAGIC_DATA:
        if h.magic == MAGIC_ENCODED_DATA:
            raise Corrupt("encoded data blocks (DATABLKE) are not supported")
        raise Corrupt(f"expected a data block at {offset}, found {h.magic.decode()}")


def _as_key(key: bytes | str) -> bytes:
    if isinstance(key, str):
        return key.encode("utf-8")
    if isinstance(key, (bytes, bytearray, memoryview)):
        return bytes(key)
    raise TypeError(f"HFile keys are bytes or str, not {type(key).__name__}")


def _successor(prefix: bytes) -> bytes | None:
    """The least key greater than every key starting with ``prefix`` (None: there is none)."""
    p = prefix.rstrip(b"\xff")
    return p[:-1] + bytes([p[-1] + 1]) if p else None


class HFileReader:
    """Reads an HFile v3 as Hudi writes it (HBase-written ≤ 1.0.x files and native 1.1+ files).

    Opening costs one range read of the file's last ``open_tail_bytes`` (two when the trailer and
    load-on-open section are longer); a lookup then reads only the index and data blocks on its
    path, and decoded blocks stay in a small LRU so batched lookups walk each block once. Rows
    compare as unsigned bytes. Every malformed input raises
    :class:`~hudi_md.errors.HFileFormatError` naming the file.

    Thread safety: block fetching is serialized by a lock, so one reader may serve concurrent
    ``get`` calls; each iterator must still be consumed by a single thread.
    """

    trailer: HFileTrailer
    file_info: dict[str, bytes]  # raw file-info map, keys decoded as UTF-8

    def __init__(
        self, source: InputFile, *, verify_checksums: bool = True, open_tail_bytes: int = _OPEN_TAIL_BYTES
    ) -> None:
        self._source = source
        self._open_tail_bytes = open_tail_bytes
        self.name: str = str(getattr(source, "name", "<input>"))
        self._verify = verify_checksums
        self._lock = threading.RLock()
        self._buf_start = 0
        self._buf = b""
        # Spans of data blocks read ahead by one batch operation (see _prefetch_key_ranges).
        self._prefetched: list[tuple[int, bytes]] = []
        self._root_position: dict[int, int] | None = None
        self._data_cache: OrderedDict[int, _DataBlock] = OrderedDict()
        self._data_cache_bytes = 0
        self._index_cache: OrderedDict[int, tuple[list[bytes], list[int], list[int]]] = OrderedDict()
        self._meta_cache: dict[bytes, bytes] = {}
        # Offset -> (magic, on-disk size) of every block header seen, so walks need no extra reads.
        self._known: dict[int, tuple[bytes, int]] = {}
        with self._guard("cannot open HFile"):
            self._open()

    @classmethod
    def from_bytes(cls, data: bytes, name: str = "<bytes>") -> HFileReader:
        """Open an HFile held in memory (e.g. the content of an MDT log block)."""
        return cls(BytesInputFile(data, name))

    # --- opening ---------------------------------------------------------------------------------

    def _open(self) -> None:
        size = self._source.size()
        self._size = size
        if size < TRAILER_SIZE:
            raise Corrupt(f"file of {size} bytes is shorter than the {TRAILER_SIZE}-byte HFile trailer")
        tail = min(size, max(self._open_tail_bytes, TRAILER_SIZE))
        self._read(size - tail, tail)
        t = parse_trailer(self._read(size - TRAILER_SIZE, TRAILER_SIZE), size)
        self.trailer = t
        self._codec = t.compression_codec
        loo = t.load_on_open_data_offset
        self._data_end = loo  # data, inline index and meta blocks all sit below load-on-open
        section = self._read(loo, size - TRAILER_SIZE - loo)

        h, payload = self._section_block(section, 0, MAGIC_ROOT_INDEX, "root data index")
        rows, offsets, sizes = parse_root_index(
            payload,
            t.data_index_count,
            data_index=True,
            allow_trailing=(0,) if t.num_data_index_levels == 1 else (0, 16),
        )
        check_index_order(rows, offsets, "root data index")
        for off, sz in zip(offsets, sizes, strict=True):
            if off + sz > loo:
                raise Corrupt(f"root data index points at a block [{off}, {off + sz}) past the data section")
        self._root_rows, self._root_offsets, self._root_sizes = rows, offsets, sizes

        pos = h.total_size
        h, payload = self._section_block(section, pos, MAGIC_ROOT_INDEX, "meta index")
        names, moffs, msizes = parse_root_index(payload, t.meta_index_count, data_index=False)
        self._meta_index = {n: (o, s) for n, o, s in zip(names, moffs, msizes, strict=True)}

        _, payload = self._section_block(section, t.file_info_offset - loo, MAGIC_FILE_INFO, "file info")
        self.file_info = parse_file_info(payload)

        encoding = self.file_info.get("DATA_BLOCK_ENCODING")
        if encoding not in (None, b"NONE"):
            raise Corrupt(f"data block encoding {encoding!r} is not supported")
        self._has_mvcc = self.file_info.get("KEY_VALUE_VERSION") == _KEY_VALUE_VERSION_WITH_MVCC
        self._has_tags = "hfile.MAX_TAGS_LEN" in self.file_info
        last_key = self.file_info.get("hfile.LASTKEY")
        # Lets lookups past the end of the file answer without touching a data block.
        self._last_row = index_key_row(last_key) if last_key and t.entry_count else None
        if t.num_data_index_levels == 1:
            for off, sz in zip(offsets, sizes, strict=True):
                self._known[off] = (MAGIC_DATA, sz)

    def _section_block(self, section: bytes, pos: int, magic: bytes, what: str) -> tuple[BlockHeader, bytes]:
        if not 0 <= pos < len(section):
            raise Corrupt(f"{what} block lies outside the load-on-open section")
        h = parse_header(section, pos)
        if h.magic != magic:
            raise Corrupt(f"expected the {what} block ({magic.decode()}), found {h.magic.decode()}")
        return h, block_payload(section, pos, h, self._codec, self._verify)

    # --- public API ------------------------------------------------------------------------------

    @property
    def schema(self) -> str | None:
        """The writer's Avro schema (JSON) from file info, if the writer stored one."""
        raw = self.file_info.get("schema")
        if raw is None:
            return None
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise HFileFormatError(self.name, "file info 'schema' is not UTF-8") from None

    @property
    def entry_count(self) -> int:
        return self.trailer.entry_count

    def meta_block(self, name: str) -> bytes | None:
        """Payload of the named meta block (Hudi: ``bloomFilter``), or ``None`` if absent."""
        key = name.encode("utf-8")
        entry = self._meta_index.get(key)
        if entry is None:
            return None
        with self._guard(f"cannot read meta block {name!r}"), self._lock:
            cached = self._meta_cache.get(key)
            if cached is None:
                h, raw = self._fetch(entry[0], entry[1], 0)
                if h.magic != MAGIC_META:
                    raise Corrupt(f"meta index entry {name!r} points at a {h.magic.decode()} block")
                cached = self._meta_cache[key] = block_payload(raw, 0, h, self._codec, self._verify)
            return cached

    def get(self, key: bytes | str) -> bytes | None:
        """Value of the first cell whose row equals ``key``."""
        k = _as_key(key)
        with self._guard("lookup failed"):
            cursor = _Cursor(self)
            if cursor.seek(k) and cursor.row == k:
                return cursor.value
        return None

    def get_many(self, keys: Iterable[bytes | str]) -> dict[bytes, bytes]:
        """Values of every present key (first cell each), walking the file once in key order."""
        wanted = sorted({_as_key(k) for k in keys})
        found: dict[bytes, bytes] = {}
        with self._guard("batch lookup failed"), self._prefetch_key_ranges([(k, k + b"\0") for k in wanted]):
            cursor = _Cursor(self)
            for k in wanted:
                if not cursor.seek(k):
                    break
                if cursor.row == k:
                    found[k] = cursor.value
        return found

    def scan(self) -> Iterator[tuple[bytes, bytes]]:
        """Every ``(row, value)`` in file order; checks the total against the trailer's entry count."""
        with self._guard("scan failed"):
            for block in self._all_blocks():
                yield from zip(block.rows, block.values, strict=True)

    def scan_columns(self) -> CellColumns:
        """Every cell, as columns: what :meth:`scan` yields, with the same checks."""
        with self._guard("scan failed"):
            return CellColumns.of_blocks([block.cells for block in self._all_blocks(side_by_side=True)])

    def get_many_columns(self, keys: Iterable[bytes | str]) -> CellColumns:
        """The cells :meth:`get_many` finds (the first cell of each present key), as columns in
        file order."""
        wanted = sorted({_as_key(k) for k in keys})
        with self._guard("batch lookup failed"):
            cells = CellColumns.of_blocks(self._blocks_of_ranges([(k, k + b"\0") for k in wanted]))
            rows = cells.rows
            hit = pc.is_in(rows, value_set=pa.array(wanted, pa.binary()))
            if len(rows) > 1:  # a key's later cells (rows are sorted: they follow the first)
                repeat = pc.equal(rows.slice(1), rows.slice(0, len(rows) - 1))
                hit = pc.and_(hit, pc.invert(pa.concat_arrays([pa.array([False]), repeat])))
            return cells.take(pc.indices_nonzero(hit).to_numpy())

    def scan_prefixes_columns(self, prefixes: Iterable[bytes | str]) -> CellColumns:
        """The cells :meth:`scan_prefixes` yields, as columns in file order."""
        wanted = sorted({_as_key(p) for p in prefixes})
        if b"" in wanted:
            return self.scan_columns()
        with self._guard("prefix scan failed"):
            cells = CellColumns.of_blocks(self._blocks_of_ranges([(p, _successor(p)) for p in wanted]))
            hit = pa.array(np.zeros(len(cells), bool))
            for length in sorted({len(p) for p in wanted}):
                heads = pc.binary_slice(cells.rows, 0, length)
                same = [p for p in wanted if len(p) == length]
                hit = pc.or_(hit, pc.is_in(heads, value_set=pa.array(same, pa.binary())))
            return cells.take(pc.indices_nonzero(hit).to_numpy())

    def _all_blocks(self, *, side_by_side: bool = False) -> Iterator[_DataBlock]:
        """Every data block in file order, read in one request (up to a limit), checked: blocks in
        row order, the cell count the trailer's, the last row file info's ``hfile.LASTKEY``.
        Decoded one at a time as the caller goes on, or (``side_by_side``, for a caller that
        keeps them all) all at once, on two threads when there is enough of them: zlib, numpy
        and Arrow let one thread run while the other walks cells in Python."""
        raws = self._raw_data_blocks()
        blocks: Iterable[_DataBlock]
        if side_by_side and len(raws) > 1 and sum(h.total_size for _, h, _ in raws) >= _PARALLEL_SCAN_BYTES:
            with ThreadPoolExecutor(_SCAN_THREADS, thread_name_prefix="hfile-scan") as pool:
                blocks = list(pool.map(self._decoded, raws))
        else:
            blocks = map(self._decoded, raws)
        count = 0
        previous_last: bytes | None = None
        for block in blocks:
            cells = block.cells
            if len(cells):
                if previous_last is not None and cells.row(0) < previous_last:
                    raise Corrupt(f"data block at {block.offset} starts below its predecessor's last row")
                previous_last = cells.row(len(cells) - 1)
                count += len(cells)
                yield block
        if count != self.trailer.entry_count:
            raise Corrupt(f"scan found {count} cells, trailer says {self.trailer.entry_count}")
        if self._last_row is not None and previous_last != self._last_row:
            raise Corrupt("the last cell's row differs from file info hfile.LASTKEY")

    def _decoded(self, item: tuple[int, BlockHeader, bytes]) -> _DataBlock:
        offset, h, raw = item
        payload = block_payload(raw, 0, h, self._codec, self._verify)
        cells = cell_positions(payload, has_mvcc=self._has_mvcc, has_tags=self._has_tags)
        return _DataBlock(offset, h.total_size, cells)

    def _raw_data_blocks(self) -> list[tuple[int, BlockHeader, bytes]]:
        """The offset, header and on-disk bytes of every data block, found by walking their headers
        in one read of the data section (up to a limit)."""
        if not self._root_offsets:
            return []
        start = self._locate(b"")
        assert start is not None
        # up to the trailer: the last block's read peeks at the header after it
        readahead = min(self._size - TRAILER_SIZE - start[0], _SCAN_READ_LIMIT)
        raws: list[tuple[int, BlockHeader, bytes]] = []
        with self._lock:
            try:
                at: tuple[int, int | None] | None = (start[0], start[1])
                while at is not None:
                    h, raw = self._fetch(at[0], at[1], readahead)
                    _check_data_magic(h, at[0])
                    raws.append((at[0], h, raw))
                    at = self._next_data_at(at[0] + h.total_size, readahead)
            finally:  # the scan's buffer may be the whole file: do not keep it
                if len(self._buf) > _SCAN_READAHEAD:
                    self._buf_start, self._buf = 0, b""
        return raws

    def _blocks_of_ranges(self, ranges: list[tuple[bytes, bytes | None]]) -> list[CellPositions]:
        """The cells of every data block that may hold rows in the key ranges ``[low, high)``
        (``high`` None: to the end), each block once, in file order: the blocks a cursor walking
        the ranges reads, fetched as :meth:`get_many` and :meth:`scan_prefixes` fetch them."""
        planned = self._planned_blocks(ranges)
        if planned is not None:
            with self._prefetch_key_ranges(ranges):
                return [block.cells for block in self._decoded_side_by_side(planned)]
        found: dict[int, _DataBlock] = {}
        with self._prefetch_key_ranges(ranges):
            for low, high in ranges:
                if self._last_row is not None and low > self._last_row:
                    continue
                at = self._locate(low)
                if at is None:
                    continue
                block: _DataBlock | None = self._data_block(at[0], at[1], 0)
                readahead = 0
                while block is not None:
                    found.setdefault(block.offset, block)
                    cells = block.cells
                    if high is not None and (
                        (len(cells) and cells.row(len(cells) - 1) >= high)
                        or self._next_block_at_or_after(block.offset, high)
                    ):
                        break
                    readahead = min(max(2 * readahead, _WALK_READAHEAD_START), _SCAN_READAHEAD)
                    block = self._next_data_block(block, readahead)
        return [found[offset].cells for offset in sorted(found)]

    def _planned_blocks(self, ranges: list[tuple[bytes, bytes | None]]) -> list[tuple[int, int]] | None:
        """The blocks a cursor walking the key ranges reads (:meth:`_indexed_blocks`: known from a
        single-level index without reading them), when they are enough to decode side by side;
        None otherwise (the cursor walks them)."""
        if self.trailer.num_data_index_levels != 1 or not self._root_rows:
            return None
        blocks = self._indexed_blocks(ranges)
        if len(blocks) < 2 or sum(size for _, size in blocks) < _PARALLEL_SCAN_BYTES:
            return None
        return blocks

    def _decoded_side_by_side(self, blocks: list[tuple[int, int]]) -> list[_DataBlock]:
        """The data blocks at ``blocks`` (decoded ones taken from the cache), the others inflated
        and walked on two threads: zlib, numpy and Arrow let one run while the other walks cells."""
        todo: list[_DataBlock | tuple[int, BlockHeader, bytes]] = []
        with self._lock:
            for offset, size in blocks:
                cached = self._data_cache.get(offset)
                if cached is None:
                    h, raw = self._fetch(offset, size, 0)
                    _check_data_magic(h, offset)
                    todo.append((offset, h, raw))
                else:
                    todo.append(cached)

        def decoded(item: _DataBlock | tuple[int, BlockHeader, bytes]) -> _DataBlock:
            return item if isinstance(item, _DataBlock) else self._decoded(item)

        with ThreadPoolExecutor(_SCAN_THREADS, thread_name_prefix="hfile-scan") as pool:
            found = list(pool.map(decoded, todo))
        for block in found:  # kept as the cursor's walk keeps the blocks it reads
            self._cache_block(block)
        return found

    def scan_prefix(self, prefix: bytes | str) -> Iterator[tuple[bytes, bytes]]:
        """Every ``(row, value)`` whose row starts with ``prefix``, in file order."""
        return self.scan_prefixes([prefix])

    def scan_prefixes(self, prefixes: Iterable[bytes | str]) -> Iterator[tuple[bytes, bytes]]:
        """Union of several prefix scans, in key order, each row once and each block read once."""
        reduced: list[bytes] = []
        for p in sorted({_as_key(p) for p in prefixes}):
            # Sorted order puts a prefix right before everything it covers, so subsumed ones are adjacent.
            if reduced and p.startswith(reduced[-1]):
                continue
            reduced.append(p)
        if reduced == [b""]:
            return self.scan()
        return self._scan_prefixes(reduced)

    def _scan_prefixes(self, prefixes: list[bytes]) -> Iterator[tuple[bytes, bytes]]:
        ranges = [(p, _successor(p)) for p in prefixes]
        with self._guard("prefix scan failed"), self._prefetch_key_ranges(ranges):
            cursor = _Cursor(self)
            for p, end in ranges:
                if not cursor.seek(p):
                    return
                while cursor.row.startswith(p):
                    yield cursor.row, cursor.value
                    if end is not None and cursor.last_below(end):
                        break  # the next block starts past the prefix: not read
                    if not cursor.advance():
                        return

    def scan_range(self, low: bytes | str, high: bytes | str | None = None) -> Iterator[tuple[bytes, bytes]]:
        """Every ``(row, value)`` with ``low <= row < high`` (``high`` None: to the end), in file
        order, reading only the data blocks that may hold such rows (in one request when they are
        adjacent)."""
        lo = _as_key(low)
        hi = None if high is None else _as_key(high)
        if hi is not None and hi <= lo:
            return iter(())
        return self._scan_range(lo, hi)

    def _scan_range(self, lo: bytes, hi: bytes | None) -> Iterator[tuple[bytes, bytes]]:
        with self._guard("range scan failed"), self._prefetch_key_ranges([(lo, hi)]):
            cursor = _Cursor(self)
            if not cursor.seek(lo):
                return
            while hi is None or cursor.row < hi:
                yield cursor.row, cursor.value
                if hi is not None and cursor.last_below(hi):
                    return  # the next block starts at or past ``hi``: not read
                if not cursor.advance():
                    return

    def __repr__(self) -> str:
        t = self.trailer
        return f"HFileReader({self.name!r}, entries={t.entry_count}, codec={t.codec_name})"

    # --- block access ----------------------------------------------------------------------------

    @contextmanager
    def _guard(self, what: str) -> Iterator[None]:
        """Turn every decoding failure into one error type that names the file."""
        try:
            yield
        except HFileFormatError:
            raise
        except Corrupt as e:
            raise HFileFormatError(self.name, f"{what}: {e}") from None
        except EOFError as e:
            raise HFileFormatError(self.name, f"{what}: file is truncated ({e})") from e
        except (struct.error, zlib.error, IndexError, ValueError, OverflowError) as e:
            raise HFileFormatError(self.name, f"{what}: malformed bytes ({type(e).__name__}: {e})") from e

    def _read(self, offset: int, length: int, readahead: int = 0) -> bytes:
        """Bytes ``[offset, offset + length)``, from the last read's buffer when it covers them."""
        if offset < 0 or length < 0 or offset + length > self._size:
            raise Corrupt(f"read of {length} bytes at {offset} is outside the file ({self._size} bytes)")
        start = offset - self._buf_start
        if start >= 0 and start + length <= len(self._buf):
            return self._buf[start : start + length]
        for span_start, span in self._prefetched:
            if span_start <= offset and offset + length <= span_start + len(span):
                return span[offset - span_start : offset - span_start + length]
        want = min(max(length, readahead), self._size - offset)
        data = self._source.read(offset, want)
        if len(data) != want:
            raise Corrupt(f"short read: {len(data)} of {want} bytes at {offset}")
        self._buf_start, self._buf = offset, bytes(data)
        return self._buf[:length] if want != length else self._buf

    def _fetch(self, offset: int, size: int | None, readahead: int) -> tuple[BlockHeader, bytes]:
        """Raw bytes of the block at ``offset`` (``size`` = on-disk size incl. header, if known).

        Reads 33 bytes more than the block when it can, so the next block's size is known before it
        is needed and a forward walk costs one request per block, not two.
        """
        if not 0 <= offset < self._data_end:
            raise Corrupt(f"block offset {offset} is outside the data section [0, {self._data_end})")
        if size is None:
            known = self._known.get(offset)
            size = known[1] if known else None
        if size is None:
            h = parse_header(self._read(offset, HEADER_SIZE, readahead))
            size = h.total_size
        if offset + size > self._data_end:
            raise Corrupt(f"block [{offset}, {offset + size}) runs past the data section")
        limit = self._size - TRAILER_SIZE
        with_peek = size + HEADER_SIZE if offset + size + HEADER_SIZE <= limit else size
        raw = self._read(offset, with_peek, readahead)
        h = parse_header(raw)
        if h.total_size != size:
            raise Corrupt(f"block at {offset} is {h.total_size} bytes on disk, its index says {size}")
        self._known[offset] = (h.magic, size)
        if len(raw) > size:
            try:
                nh = parse_header(raw, size)
                self._known.setdefault(offset + size, (nh.magic, nh.total_size))
            except Corrupt:
                pass  # not a block boundary we will walk to; judged when (if) it is read
        return h, raw

    def _data_block(self, offset: int, size: int | None, readahead: int, *, cache: bool = True) -> _DataBlock:
        with self._lock:
            block = self._data_cache.get(offset)
            if block is not None:
                self._data_cache.move_to_end(offset)
                return block
            h, raw = self._fetch(offset, size, readahead)
            _check_data_magic(h, offset)
            payload = block_payload(raw, 0, h, self._codec, self._verify)
            cells = cell_positions(payload, has_mvcc=self._has_mvcc, has_tags=self._has_tags)
            block = _DataBlock(offset, h.total_size, cells)
            if cache:
                self._cache_block(block)
            return block

    def _cache_block(self, block: _DataBlock) -> None:
        with self._lock:
            if block.offset in self._data_cache:
                return
            self._data_cache[block.offset] = block
            self._data_cache_bytes += block.weight
            while self._data_cache_bytes > _DATA_CACHE_BYTES and len(self._data_cache) > 1:
                _, old = self._data_cache.popitem(last=False)
                self._data_cache_bytes -= old.weight

    def _next_data_block(self, block: _DataBlock, readahead: int, *, cache: bool = True) -> _DataBlock | None:
        """The data block physically after ``block``, stepping over inline index/bloom blocks."""
        with self._lock:
            at = self._next_data_at(block.offset + block.total_size, readahead)
            return None if at is None else self._data_block(at[0], at[1], readahead, cache=cache)

    def _next_data_at(self, offset: int, readahead: int) -> tuple[int, int | None] | None:
        """Where the first data block at or after ``offset`` is (and its size, when known),
        stepping over inline index/bloom blocks; None past the last one."""
        last = self.trailer.last_data_block_offset
        with self._lock:
            while offset < self._data_end and (last < 0 or offset <= last):
                if offset in self._data_cache:
                    return offset, None
                known = self._known.get(offset)
                if known is None:
                    h, _ = self._fetch(offset, None, readahead)
                    known = (h.magic, h.total_size)
                magic, size = known
                if magic == MAGIC_DATA:
                    return offset, size
                if magic not in INLINE_MAGICS:
                    if magic == MAGIC_ENCODED_DATA:
                        raise Corrupt("encoded data blocks (DATABLKE) are not supported")
                    return None  # meta blocks follow the last data block
                offset += size
        return None

    def _index_block(self, offset: int, size: int, magic: bytes) -> tuple[list[bytes], list[int], list[int]]:
        with self._lock:
            entry = self._index_cache.get(offset)
            if entry is not None:
                self._index_cache.move_to_end(offset)
                return entry
            h, raw = self._fetch(offset, size, 0)
            if h.magic != magic:
                raise Corrupt(f"expected a {magic.decode()} block at {offset}, found {h.magic.decode()}")
            entry = parse_nonroot_index(block_payload(raw, 0, h, self._codec, self._verify))
            check_index_order(entry[0], entry[1], f"index block at {offset}")
            if magic == MAGIC_LEAF_INDEX:
                for off, sz in zip(entry[1], entry[2], strict=True):
                    self._known.setdefault(off, (MAGIC_DATA, sz))
            self._index_cache[offset] = entry
            if len(self._index_cache) > _INDEX_CACHE_BLOCKS:
                self._index_cache.popitem(last=False)
            return entry

    @contextmanager
    def _prefetch_key_ranges(self, ranges: list[tuple[bytes, bytes | None]]) -> Iterator[None]:
        """Read, before a batch operation, the data blocks that may hold rows in the key ranges
        ``[low, high)`` (``high`` None: to the end): adjacent blocks in one request, blocks already
        decoded not at all. A multi-level index is walked (its blocks cached) to find the first
        and last block of each range."""
        if not self._root_rows or not ranges:
            yield
            return
        with self._lock:
            spans = self._block_spans(ranges)
            limit = self._size - TRAILER_SIZE
            for start, end in spans:
                # the block header after the last block too: _fetch peeks at it
                end = min(end + HEADER_SIZE, limit)
                data = self._source.read(start, end - start)
                if len(data) != end - start:
                    raise Corrupt(f"short read: {len(data)} of {end - start} bytes at {start}")
                self._prefetched.append((start, bytes(data)))
        try:
            yield
        finally:
            with self._lock:
                self._prefetched = []

    def _block_spans(self, ranges: list[tuple[bytes, bytes | None]]) -> list[tuple[int, int]]:
        """Byte spans ``[start, end)`` of the data blocks not yet decoded that the key ranges need,
        adjacent ones merged."""
        blocks: list[tuple[int, int]] = []  # (offset, size) of each needed block, or of a run
        if self.trailer.num_data_index_levels == 1:
            blocks = self._indexed_blocks(ranges)
        else:
            for lo, hi in ranges:
                if self._last_row is not None and lo > self._last_row:
                    continue
                first = self._locate(lo)
                last = self._locate(hi) if hi is not None else None
                if first is None:
                    continue
                if last is None:
                    blocks.append((first[0], self._data_end - first[0]))
                elif last[0] >= first[0]:
                    blocks.append((first[0], last[0] + last[1] - first[0]))
        spans: list[tuple[int, int]] = []
        for offset, size in sorted(set(blocks)):
            if offset in self._data_cache and size == self._data_cache[offset].total_size:
                continue
            if spans and offset <= spans[-1][1]:
                spans[-1] = (spans[-1][0], max(spans[-1][1], offset + size))
            else:
                spans.append((offset, offset + size))
        return spans

    def _indexed_blocks(self, ranges: list[tuple[bytes, bytes | None]]) -> list[tuple[int, int]]:
        """``(offset, size)`` of the data blocks that may hold rows in the key ranges, in file
        order, from a single-level index: from the last block whose index row is below a range's
        low key to the last below its high key."""
        rows = self._root_rows
        wanted: set[int] = set()
        for low, high in ranges:
            if self._last_row is not None and low > self._last_row:
                continue
            first = floor_entry(rows, low)
            last = len(rows) - 1 if high is None else floor_entry(rows, high)
            wanted.update(range(first, max(first, last) + 1))
        return [(self._root_offsets[i], self._root_sizes[i]) for i in sorted(wanted)]

    def _next_block_at_or_after(self, offset: int, key: bytes) -> bool:
        """Whether no cell below ``key`` follows the data block at ``offset`` (known from a
        single-level index without reading on: an index row is at most its block's first row)."""
        if self.trailer.num_data_index_levels != 1:
            return False
        if self._root_position is None:
            self._root_position = {off: i for i, off in enumerate(self._root_offsets)}
        i = self._root_position.get(offset)
        if i is None:
            return False
        return i + 1 >= len(self._root_rows) or self._root_rows[i + 1] >= key

    def _locate(self, key: bytes) -> tuple[int, int] | None:
        """``(offset, size)`` of the data block where a forward search for ``key`` must start."""
        if not self._root_rows:
            return None
        i = floor_entry(self._root_rows, key)
        offset, size = self._root_offsets[i], self._root_sizes[i]
        levels = self.trailer.num_data_index_levels
        for depth in range(levels - 1):
            magic = MAGIC_LEAF_INDEX if depth == levels - 2 else MAGIC_INTERMEDIATE_INDEX
            rows, offsets, sizes = self._index_block(offset, size, magic)
            i = floor_entry(rows, key)
            offset, size = offsets[i], sizes[i]
        return offset, size


class _Cursor:
    """A forward-only position in the file, shared by the lookups of one call.

    Seeking never moves backwards: keys must be asked for in ascending order, which is what lets a
    batch of lookups or prefixes read each block at most once. A jump reads just the target block;
    consecutive steps to the next block ramp up read-ahead, as a long prefix range is likely.
    """

    __slots__ = ("_block", "_done", "_pos", "_readahead", "_reader")

    def __init__(self, reader: HFileReader) -> None:
        self._reader = reader
        self._readahead = 0
        self._block: _DataBlock | None = None
        self._pos = 0
        self._done = False

    @property
    def row(self) -> bytes:
        assert self._block is not None
        return self._block.rows[self._pos]

    @property
    def value(self) -> bytes:
        assert self._block is not None
        return self._block.values[self._pos]

    def seek(self, key: bytes) -> bool:
        """Move to the first cell whose row is >= ``key``; ``False`` once past the last cell."""
        if self._done:
            return False
        r = self._reader
        if r._last_row is not None and key > r._last_row:
            self._done = True  # later keys are larger still
            return False
        target = r._locate(key)
        if target is None:
            self._done = True
            return False
        if self._block is None or target[0] > self._block.offset:
            self._readahead = 0
            self._block = r._data_block(target[0], target[1], 0)
            self._pos = 0
        while True:
            rows = self._block.rows
            i = bisect_left(rows, key, self._pos)
            if i < len(rows):
                self._pos = i
                return True
            if not self._next_block():
                return False

    def last_below(self, key: bytes) -> bool:
        """Whether the cell here is the last one below ``key`` that the file can hold, as far as
        the index tells without reading another block."""
        block = self._block
        assert block is not None
        return self._pos == len(block.rows) - 1 and self._reader._next_block_at_or_after(block.offset, key)

    def advance(self) -> bool:
        """Step to the next cell; ``False`` at the end of the file."""
        assert self._block is not None
        self._pos += 1
        if self._pos < len(self._block.rows):
            return True
        return self._next_block()

    def _next_block(self) -> bool:
        assert self._block is not None
        self._readahead = min(max(2 * self._readahead, _WALK_READAHEAD_START), _SCAN_READAHEAD)
        while True:
            nxt = self._reader._next_data_block(self._block, self._readahead)
            if nxt is None:
                self._done = True
                return False
            self._block, self._pos = nxt, 0
            if nxt.rows:
                return True
