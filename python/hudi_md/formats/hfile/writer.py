"""HFile v3 writer laid out like Hudi 1.1+'s native writer (hudi-io ``HFileWriterImpl``).

The bytes follow what Hudi 1.1.1 wrote into the v9 fixture tables, so a file written here from the
same cells, file info, meta blocks and creation time is byte-identical to Hudi's own (checked in the
tests against every native base HFile and HFile log block of the fixtures). Three deliberate
departures from the 1.1.x writer, each a bug fixed upstream or harmless to every reader:

* Root-index key lengths are Hadoop ``WritableUtils`` VInts, as every reader expects. Hudi 1.1.x
  wrote protobuf varints there (apache/hudi #18465), which breaks keys of 128+ bytes.
* A data block's ``prevBlockOffset`` is the previous data block's offset (HBase semantics, fixed
  upstream in apache/hudi #19083); 1.1.x wrote the block's own offset. No Hudi reader looks at it.
* Keys must be strictly increasing. Hudi tolerates equal keys (and keeps them in one block); the
  metadata table never has any, and refusing them catches caller sorting bugs early.

Choices kept from the native writer:

* Checksum type NULL (0) with zero-filled checksum bytes. Every reader accepts it: Hudi's native
  reader and hudi-rs never verify checksums, and HBase's ``ChecksumUtil.validateChecksum`` returns
  true for NULL without looking, while the checksum byte count (which all of them check) does not
  depend on the type. CRC32C would buy nothing and cost byte-identity.
* Block-index keys are row-only (``int16 rowLen | row``), as Hudi 1.1.x and 1.2.x write them (master
  moved to full KeyValue keys in apache/hudi #19071). Hudi >= 1.0 and hudi-rs read them; an
  HBase-based reader (Hudi 0.x, table v6) fails looking up a block's first key, so these files are
  for v8/v9 tables.
* Block, file-info and meta-block layout, the flush rule, file-info keys and trailer fields as Hudi
  1.1.1 fills them (details at each constant and method below).
"""

from __future__ import annotations

import struct
import time
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_md.errors import InvalidOptionError
from hudi_md.formats.arrow_buffers import byte_buffers
from hudi_md.formats.hfile._layout import (
    CHECKSUM_NULL,
    HEADER_SIZE,
    MAGIC_DATA,
    MAGIC_FILE_INFO,
    MAGIC_META,
    MAGIC_ROOT_INDEX,
    MAGIC_TRAILER,
    TRAILER_SIZE,
)
from hudi_md.formats.hfile._wire import CODEC_GZ, CODEC_NONE

__all__ = [
    "DEFAULT_BLOCK_SIZE",
    "DEFAULT_COMPARATOR",
    "RESERVED_FILE_INFO_KEYS",
    "HFileWriter",
    "hadoop_vint",
    "protobuf_varint",
    "write_hfile",
]

DEFAULT_BLOCK_SIZE = 1 << 20  # hoodie.hfile.block.size and HFileContext's default
DEFAULT_COMPARATOR = "org.apache.hudi.io.storage.HoodieHBaseKVComparator"

_CODECS = {"GZ": CODEC_GZ, "GZIP": CODEC_GZ, "NONE": CODEC_NONE}
_BYTES_PER_CHECKSUM = 16 * 1024  # header field and checksum chunk size, as HBase and Hudi write it
_MAX_ROW_LENGTH = 0x7FFF  # the row length is a Java short in every reader
_MAX_INT32 = 0x7FFFFFFF

# Everything a cell adds around row and value: int32 key length, int32 value length, int16 row
# length, int8 family length (0), int64 timestamp, int8 type, one MVCC byte.
_CELL_OVERHEAD = 21
# The key after the row: empty family, timestamp Long.MAX_VALUE ("latest"), type 4 (Put).
_KEY_SUFFIX = b"\x00" + struct.pack(">q", 0x7FFFFFFFFFFFFFFF) + b"\x04"
_CELL_LENGTHS = struct.Struct(">iiH")
_HEADER = struct.Struct(">8siiqBii")
_INDEX_ENTRY = struct.Struct(">qi")

# java.util.zip.GZIPOutputStream's member header: no flags, mtime 0, XFL 0, OS 0. zlib's own gzip
# wrapper (wbits=31) writes OS 3 instead, so we frame raw deflate ourselves to match Hudi exactly.
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x00"
_GZIP_TRAILER = struct.Struct("<II")
# java.util.zip.Deflater.DEFAULT_COMPRESSION maps to zlib level 6: the bytes Hudi writes
DEFAULT_DEFLATE_LEVEL = 6

# File-info keys the writer owns (names as in Hudi's HFileInfo).
LAST_KEY = "hfile.LASTKEY"
AVG_KEY_LEN = "hfile.AVG_KEY_LEN"
AVG_VALUE_LEN = "hfile.AVG_VALUE_LEN"
CREATE_TIME_TS = "hfile.CREATE_TIME_TS"
KEY_VALUE_VERSION = "KEY_VALUE_VERSION"
MAX_MEMSTORE_TS_KEY = "MAX_MEMSTORE_TS_KEY"
RESERVED_FILE_INFO_KEYS = frozenset(
    {LAST_KEY, AVG_KEY_LEN, AVG_VALUE_LEN, CREATE_TIME_TS, KEY_VALUE_VERSION, MAX_MEMSTORE_TS_KEY}
)

_HFILE_VERSION = (3).to_bytes(4, "big")  # major 3, minor 0 in the top byte: what Hudi 1.1+ writes
_FIRST_BLOCK = -1  # prevBlockOffset of the first block of a kind; Java long -1 in the trailer too


# --- encoders (the reader's _wire module holds only decoders) ------------------------------------


def hadoop_vint(value: int) -> bytes:
    """Hadoop ``WritableUtils.writeVLong``: one byte for -112..127, else a marker byte + big-endian bytes.

    The marker says the sign and how many bytes follow (-113..-120 positive, -121..-128 negative);
    negative values store their ones' complement.
    """
    if -112 <= value <= 127:
        return (value & 0xFF).to_bytes(1, "big")
    if not -(1 << 63) <= value < 1 << 63:
        raise OverflowError(f"{value} does not fit a Java long")
    negative = value < 0
    magnitude = ~value if negative else value
    size = (magnitude.bit_length() + 7) // 8
    marker = (-120 if negative else -112) - size
    return (marker & 0xFF).to_bytes(1, "big") + magnitude.to_bytes(size, "big")


def protobuf_varint(value: int) -> bytes:
    """Unsigned base-128 varint; negative Java longs go out as their 64-bit two's complement."""
    value &= (1 << 64) - 1
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _pb_varint_field(field: int, value: int) -> bytes:
    return protobuf_varint(field << 3) + protobuf_varint(value)


def _pb_bytes_field(field: int, value: bytes) -> bytes:
    return protobuf_varint(field << 3 | 2) + protobuf_varint(len(value)) + value


def _java_string_hash(s: str) -> int:
    """``String.hashCode`` over UTF-16 code units, as an unsigned 32-bit value."""
    units = s.encode("utf-16-be")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return h


def _java_hashmap_order(keys: list[str]) -> list[str]:
    """The iteration order of a ``java.util.HashMap`` filled with ``keys`` (distinct) in this order.

    Hudi keeps file info and meta blocks in HashMaps and writes them in iteration order. Readers do
    not care, but reproducing it makes our file-info block byte-identical to Hudi's. Iteration walks
    the buckets (``(h ^ h >>> 16) & (capacity - 1)``) in order and each bucket's list in insertion
    order; resizing splits buckets without reordering them. Capacity starts at 16 and doubles past
    a 0.75 load, or when a bucket reaches 9 entries while the table is below 64 (Java resizes rather
    than treeify small tables). Treeified buckets (9+ colliding keys at capacity >= 64) are not
    modelled; their order would differ, and nothing else would.
    """
    capacity = 16
    spread = [(h ^ (h >> 16)) for h in map(_java_string_hash, keys)]
    for size, h in enumerate(spread, start=1):
        bucket_size = sum(1 for other in spread[: size - 1] if (other ^ h) & (capacity - 1) == 0)
        if bucket_size >= 8 and capacity < 64:
            capacity *= 2
        if size > capacity * 3 // 4:
            capacity *= 2
    order = sorted(range(len(keys)), key=lambda i: (spread[i] & (capacity - 1), i))
    return [keys[i] for i in order]


def _as_bytes(data: object, what: str) -> bytes:
    if isinstance(data, bytes):
        return data
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    raise TypeError(f"{what} must be bytes, not {type(data).__name__}")


# --- writer ------------------------------------------------------------------------------------


class HFileWriter:
    """Builds one HFile v3 in memory, the way Hudi 1.1+'s native writer lays it out.

    Append cells in strictly increasing (unsigned byte) key order, optionally add file-info entries
    and meta blocks, then call :meth:`finish` for the file's bytes::

        w = HFileWriter(compression="GZ")
        w.append("key-1", b"value")
        w.add_file_info("schema", schema_json.encode())
        data = w.finish()

    ``create_time_ms`` is the ``hfile.CREATE_TIME_TS`` file-info value (default: now); pass it to
    make the output reproducible. ``deflate_level`` (GZ): zlib's 1-9; the default is Java's, whose
    output is byte for byte Hudi's. Any level reads the same everywhere.
    """

    def __init__(
        self,
        *,
        block_size: int = DEFAULT_BLOCK_SIZE,
        compression: str = "GZ",
        comparator: str = DEFAULT_COMPARATOR,
        create_time_ms: int | None = None,
        deflate_level: int = DEFAULT_DEFLATE_LEVEL,
    ) -> None:
        if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size <= 0:
            raise InvalidOptionError(f"block_size must be a positive int, not {block_size!r}")
        codec = _CODECS.get(compression.upper()) if isinstance(compression, str) else None
        if codec is None:
            raise InvalidOptionError(
                f"unsupported HFile compression {compression!r}; Hudi's writer supports GZ and NONE"
            )
        if not isinstance(comparator, str) or not comparator:
            raise InvalidOptionError(f"comparator must be a non-empty class name, not {comparator!r}")
        if isinstance(deflate_level, bool) or deflate_level not in range(1, 10):
            raise InvalidOptionError(f"deflate_level must be an int from 1 to 9, not {deflate_level!r}")
        self._block_size = block_size
        self._codec = codec
        self._deflate_level = deflate_level
        self._comparator = comparator
        # HFileContext takes System.currentTimeMillis() when the writer is set up, not at close.
        self._create_time_ms = int(time.time() * 1000) if create_time_ms is None else int(create_time_ms)
        self._out = bytearray()
        self._finished: bytes | None = None
        # The data block being filled: serialized cells, their count and first row.
        self._block = bytearray()
        self._block_first_row = b""
        self._block_cells = 0
        self._last_row: bytes | None = None
        self._prev_data_block = _FIRST_BLOCK
        self._first_data_block = _FIRST_BLOCK
        self._last_data_block = 0  # Java's default for a long field the empty file never sets
        self._index: list[tuple[bytes, int, int]] = []  # (first row, offset, on-disk size)
        self._entries = 0
        self._row_bytes = 0
        self._value_bytes = 0
        self._data_bytes = 0
        # Dicts keep insertion order, which the HashMap emulation needs; re-adding keeps the slot,
        # as HashMap.put does.
        self._file_info: dict[str, bytes] = {MAX_MEMSTORE_TS_KEY: bytes(8)}
        self._meta: dict[str, bytes] = {}

    # --- public API ------------------------------------------------------------------------------

    def append(self, key: bytes | str, value: bytes) -> None:
        """Add one cell; ``key`` (the row) must sort strictly after the previous one."""
        self.append_all(((key, value),))

    def append_all(self, cells: Iterable[tuple[bytes | str, bytes]]) -> None:
        """Add cells in order; each key (the row) must sort strictly after the previous one. One call
        for many cells saves the per-call overhead: the MDT writes a million record-index cells in
        one commit."""
        self._check_open()
        block_size = self._block_size
        pack = _CELL_LENGTHS.pack
        last = self._last_row
        block = self._block
        rows = values = data = entries = 0
        try:
            for key, value in cells:
                row = key.encode("utf-8") if isinstance(key, str) else _as_bytes(key, "an HFile key")
                if not isinstance(value, bytes):
                    value = _as_bytes(value, "an HFile value")
                n_row, n_value = len(row), len(value)
                if not n_row:
                    raise InvalidOptionError("HFile keys must not be empty")
                if n_row > _MAX_ROW_LENGTH:
                    raise InvalidOptionError(
                        f"HFile key of {n_row} bytes exceeds the {_MAX_ROW_LENGTH}-byte row limit: "
                        f"{row[:40]!r}..."
                    )
                if n_value > _MAX_INT32 - _CELL_OVERHEAD - n_row:
                    raise InvalidOptionError(
                        f"value of {n_value} bytes for key {row!r} is too large for a cell"
                    )
                if last is not None and row <= last:
                    what = "duplicate key" if row == last else "out-of-order key"
                    raise InvalidOptionError(
                        f"{what}: {row!r} after {last!r}; HFile keys must be strictly increasing"
                    )
                cell_size = _CELL_OVERHEAD + n_row + n_value
                if self._block_cells and len(block) + cell_size > block_size:
                    self._flush_data_block()
                    block = self._block
                if not self._block_cells:
                    self._block_first_row = row
                block += pack(n_row + 12, n_value, n_row)
                block += row
                block += _KEY_SUFFIX
                block += value
                block.append(0)
                self._block_cells += 1
                last = row
                self._last_row = row
                entries += 1
                rows += n_row
                values += n_value
                data += cell_size
        finally:
            # cells appended before a rejected one stay counted
            self._entries += entries
            self._row_bytes += rows
            self._value_bytes += values
            self._data_bytes += data

    def append_columns(self, keys: pa.Array, values: pa.Array) -> None:
        """Add cells from Arrow columns: ``keys`` (string or binary, no nulls, strictly increasing
        by their bytes) and ``values`` (binary; a dictionary array of binary values when many
        cells share a value, as the record index's do). The same bytes as :meth:`append_all` of
        the same cells, assembled in numpy blocks instead of one Python step per cell."""
        self._check_open()
        if len(keys) != len(values):
            raise InvalidOptionError(f"{len(keys)} keys but {len(values)} values")
        if not len(keys):
            return
        rows = _Segments.of(keys, "an HFile key")
        vals = _Segments.of(values, "an HFile value")
        if int(rows.lengths.min()) == 0:
            raise InvalidOptionError("HFile keys must not be empty")
        longest = int(rows.lengths.argmax())
        if int(rows.lengths[longest]) > _MAX_ROW_LENGTH:
            row = rows.bytes_at(longest)
            raise InvalidOptionError(
                f"HFile key of {len(row)} bytes exceeds the {_MAX_ROW_LENGTH}-byte row limit: {row[:40]!r}..."
            )
        if int((rows.lengths + vals.lengths).max()) > _MAX_INT32 - _CELL_OVERHEAD:
            raise InvalidOptionError("a value is too large for a cell")
        self._check_increasing(keys, rows)
        sizes = _CELL_OVERHEAD + rows.lengths + vals.lengths
        key_column, value_column = _binary(keys), _binary(values)
        for start in range(0, len(sizes), _COLUMN_CHUNK):
            end = min(start + _COLUMN_CHUNK, len(sizes))
            cells = _cell_bytes(key_column, value_column, rows.lengths, vals.lengths, start, end)
            self._append_cell_run(cells, rows, sizes, start, end)
        self._last_row = rows.bytes_at(len(keys) - 1)
        self._entries += len(keys)
        self._row_bytes += int(rows.lengths.sum())
        self._value_bytes += int(vals.lengths.sum())
        self._data_bytes += int(sizes.sum())

    def _check_increasing(self, keys: pa.Array, rows: _Segments) -> None:
        binary = keys.cast(pa.binary()) if pa.types.is_string(keys.type) else keys
        if len(binary) > 1:
            increasing = pc.less(binary.slice(0, len(binary) - 1), binary.slice(1))
            if not pc.all(increasing).as_py():
                i = int(pc.index(increasing, False).as_py())
                a, b = rows.bytes_at(i), rows.bytes_at(i + 1)
                what = "duplicate key" if a == b else "out-of-order key"
                raise InvalidOptionError(f"{what}: {b!r} after {a!r}; HFile keys must be strictly increasing")
        first = rows.bytes_at(0)
        if self._last_row is not None and first <= self._last_row:
            what = "duplicate key" if first == self._last_row else "out-of-order key"
            raise InvalidOptionError(
                f"{what}: {first!r} after {self._last_row!r}; HFile keys must be strictly increasing"
            )

    def _append_cell_run(
        self, cells: bytes, rows: _Segments, sizes: np.ndarray, start: int, end: int
    ) -> None:
        """Cells ``start:end`` (``cells``, serialized back to back) into data blocks, flushing a
        block before the cell that would overflow it (the rule of :meth:`append_all`)."""
        ends = np.cumsum(sizes[start:end])  # cell i ends at ends[i - start]
        j = start
        while j < end:
            room = self._block_size - len(self._block)
            before = int(ends[j - start - 1]) if j > start else 0
            k = int(np.searchsorted(ends, before + room, side="right")) + start  # cells j..k fit
            if k == j:
                if self._block_cells:
                    self._flush_data_block()
                    continue
                k = j + 1
            if not self._block_cells:
                self._block_first_row = rows.bytes_at(j)
            self._block += cells[before : int(ends[k - start - 1])]
            self._block_cells += k - j
            j = k
            if j < end:
                self._flush_data_block()

    def add_file_info(self, key: str, value: bytes) -> None:
        """Add (or replace) a file-info entry, e.g. ``schema``, ``minRecordKey``, ``bloomFilterTypeCode``."""
        self._check_open()
        if not isinstance(key, str) or not key:
            raise InvalidOptionError(f"file-info keys are non-empty strings, not {key!r}")
        if key in RESERVED_FILE_INFO_KEYS:
            hint = "; pass create_time_ms instead" if key == CREATE_TIME_TS else ""
            raise InvalidOptionError(f"file-info key {key!r} is computed by the writer{hint}")
        self._file_info[key] = _as_bytes(value, f"file-info value for {key!r}")

    def add_meta_block(self, name: str, data: bytes) -> None:
        """Add (or replace) a named meta block, e.g. Hudi's ``bloomFilter``."""
        self._check_open()
        if not isinstance(name, str) or not name:
            raise InvalidOptionError(f"meta block names are non-empty strings, not {name!r}")
        self._meta[name] = _as_bytes(data, f"meta block {name!r}")

    def finish(self) -> bytes:
        """Write meta blocks, the load-on-open section and the trailer; returns the whole file.

        Calling it again returns the same bytes; the writer accepts nothing more afterwards.
        """
        if self._finished is not None:
            return self._finished
        self._flush_data_block()
        meta_index = self._write_meta_blocks()
        load_on_open = len(self._out)
        self._out += self._block_bytes(MAGIC_ROOT_INDEX, self._root_index_payload())
        self._out += self._block_bytes(MAGIC_ROOT_INDEX, meta_index)
        file_info_offset = len(self._out)
        self._out += self._block_bytes(MAGIC_FILE_INFO, self._file_info_payload())
        self._out += self._trailer(file_info_offset, load_on_open)
        self._finished = bytes(self._out)
        self._out = bytearray()
        return self._finished

    # --- blocks ----------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._finished is not None:
            raise RuntimeError("HFileWriter.finish() was already called")

    def _compress(self, payload: bytes) -> bytes:
        if self._codec == CODEC_NONE:
            return payload
        # One gzip member per block, as Hudi (and Hadoop's GzipCodec) write; with classic zlib at
        # Java's default level the deflate stream is the same bytes java.util.zip produces.
        deflater = zlib.compressobj(self._deflate_level, zlib.DEFLATED, -zlib.MAX_WBITS)
        body = deflater.compress(payload) + deflater.flush()
        return _GZIP_HEADER + body + _GZIP_TRAILER.pack(zlib.crc32(payload), len(payload) & 0xFFFFFFFF)

    def _block_bytes(self, magic: bytes, payload: bytes, prev_offset: int = _FIRST_BLOCK) -> bytes:
        """Header + (compressed) payload + zero-filled NULL checksums, one 4-byte slot per 16 KiB."""
        body = self._compress(payload)
        data_size = HEADER_SIZE + len(body)
        checksum_bytes = 4 * -(-data_size // _BYTES_PER_CHECKSUM)
        if data_size + checksum_bytes > _MAX_INT32 or len(payload) > _MAX_INT32:
            raise InvalidOptionError(
                f"{magic.decode()} block of {len(payload)} bytes exceeds HFile's 2 GiB limit"
            )
        header = _HEADER.pack(
            magic,
            len(body) + checksum_bytes,
            len(payload),
            prev_offset,
            CHECKSUM_NULL,
            _BYTES_PER_CHECKSUM,
            data_size,
        )
        return header + body + bytes(checksum_bytes)

    def _flush_data_block(self) -> None:
        if not self._block_cells:
            return
        offset = len(self._out)
        block = self._block_bytes(MAGIC_DATA, bytes(self._block), self._prev_data_block)
        self._out += block
        self._index.append((self._block_first_row, offset, len(block)))
        if self._first_data_block < 0:
            self._first_data_block = offset
        self._prev_data_block = self._last_data_block = offset
        self._block = bytearray()
        self._block_cells = 0

    def _write_meta_blocks(self) -> bytes:
        """Write the meta blocks (one per name) and return the meta index payload.

        Meta index entries key by the raw name bytes, without the int16 prefix data keys carry.
        """
        entries = bytearray()
        for name in _java_hashmap_order(list(self._meta)):
            offset = len(self._out)
            block = self._block_bytes(MAGIC_META, self._meta[name])
            self._out += block
            raw = name.encode("utf-8")
            entries += _INDEX_ENTRY.pack(offset, len(block)) + hadoop_vint(len(raw)) + raw
        return bytes(entries)

    def _root_index_payload(self) -> bytes:
        """One entry per data block: offset, on-disk size, VInt key length, ``int16 rowLen | row``."""
        out = bytearray()
        for row, offset, size in self._index:
            out += _INDEX_ENTRY.pack(offset, size)
            out += hadoop_vint(len(row) + 2)
            out += len(row).to_bytes(2, "big") + row
        return bytes(out)

    def _file_info_payload(self) -> bytes:
        """``"PBUF"`` + varint length + ``InfoProto`` with the writer's keys added last, as Hudi does."""
        info = dict(self._file_info)
        last = self._last_row
        # Same insertion order as HFileWriterImpl.finishFileInfo; it only matters for HashMap order.
        info[LAST_KEY] = len(last).to_bytes(2, "big") + last if last else b""
        count = self._entries
        info[AVG_KEY_LEN] = struct.pack(">i", self._row_bytes // count if count else 0)
        info[CREATE_TIME_TS] = struct.pack(">q", self._create_time_ms)
        info[AVG_VALUE_LEN] = struct.pack(">i", self._value_bytes // count if count else 0)
        info[KEY_VALUE_VERSION] = struct.pack(">i", 1)  # cells carry the MVCC byte
        message = b"".join(
            _pb_bytes_field(1, _pb_bytes_field(1, key.encode("utf-8")) + _pb_bytes_field(2, info[key]))
            for key in _java_hashmap_order(list(info))
        )
        return b"PBUF" + protobuf_varint(len(message)) + message

    def _trailer(self, file_info_offset: int, load_on_open: int) -> bytes:
        """``TrailerProto`` with the fields Hudi 1.1+ sets (no ``total_uncompressed_bytes``, no key)."""
        message = b"".join(
            (
                _pb_varint_field(1, file_info_offset),
                _pb_varint_field(2, load_on_open),
                _pb_varint_field(3, self._data_bytes),  # Hudi stores the data bytes here, not index size
                _pb_varint_field(5, len(self._index)),
                _pb_varint_field(6, len(self._meta)),
                _pb_varint_field(7, self._entries),
                _pb_varint_field(8, 1),  # the native layout always has a single index level
                _pb_varint_field(9, self._first_data_block),
                _pb_varint_field(10, self._last_data_block),
                _pb_bytes_field(11, self._comparator.encode("utf-8")),
                _pb_varint_field(12, self._codec),
            )
        )
        head = MAGIC_TRAILER + protobuf_varint(len(message)) + message
        return head + bytes(TRAILER_SIZE - len(head) - len(_HFILE_VERSION)) + _HFILE_VERSION


def write_hfile(
    entries: Iterable[tuple[bytes | str, bytes]],
    *,
    file_info: Mapping[str, bytes] | None = None,
    meta_blocks: Mapping[str, bytes] | None = None,
    block_size: int = DEFAULT_BLOCK_SIZE,
    compression: str = "GZ",
    comparator: str = DEFAULT_COMPARATOR,
    create_time_ms: int | None = None,
    deflate_level: int = DEFAULT_DEFLATE_LEVEL,
) -> bytes:
    """One-shot helper: an HFile of ``entries`` (in strictly increasing key order), ``file_info`` and
    ``meta_blocks``; the other options are :class:`HFileWriter`'s."""
    writer = HFileWriter(
        block_size=block_size,
        compression=compression,
        comparator=comparator,
        create_time_ms=create_time_ms,
        deflate_level=deflate_level,
    )
    writer.append_all(entries)
    for name, value in (file_info or {}).items():
        writer.add_file_info(name, value)
    for name, data in (meta_blocks or {}).items():
        writer.add_meta_block(name, data)
    return writer.finish()


_COLUMN_CHUNK = 1 << 15  # cells assembled per pass: bounds the memory of a run's bytes


@dataclass(frozen=True)
class _Segments:
    """Variable-length byte strings as one buffer with starts and lengths (an Arrow binary
    column, or a dictionary column's values looked up per cell)."""

    buffer: np.ndarray
    starts: np.ndarray
    lengths: np.ndarray

    @staticmethod
    def of(column: pa.Array, what: str) -> _Segments:
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        if column.null_count:
            raise InvalidOptionError(f"{what} must not be null")
        if pa.types.is_dictionary(column.type):
            values = _Segments.of(column.dictionary, what)
            codes = column.indices.to_numpy(zero_copy_only=False).astype(np.int64)
            return _Segments(values.buffer, values.starts[codes], values.lengths[codes])
        try:
            offsets, data = byte_buffers(column)
        except TypeError:
            raise InvalidOptionError(f"{what} column must be string or binary, not {column.type}") from None
        starts = offsets[:-1].astype(np.int64)
        return _Segments(data, starts, offsets[1:].astype(np.int64) - starts)

    def bytes_at(self, i: int) -> bytes:
        start = int(self.starts[i])
        return self.buffer[start : start + int(self.lengths[i])].tobytes()


_CELL_HEADER = np.dtype([("key", ">i4"), ("value", ">i4"), ("row", ">u2")])


def _binary(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    """A string, binary or dictionary-of-those column as a large binary column (same bytes; 64-bit
    offsets, as a run of cells with big values, bloom filters say, can pass 2 GiB)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if pa.types.is_dictionary(column.type):
        column = column.dictionary.cast(pa.large_binary()).take(column.indices)
    return column.cast(pa.large_binary())


_KEY_SUFFIX_SCALAR = pa.scalar(_KEY_SUFFIX, pa.large_binary())
_MEMSTORE_TS_SCALAR = pa.scalar(b"\0", pa.large_binary())  # each cell's trailing memstore timestamp, 0
_NO_SEPARATOR = pa.scalar(b"", pa.large_binary())


def _cell_bytes(
    keys: pa.Array, values: pa.Array, row_len: np.ndarray, value_len: np.ndarray, start: int, end: int
) -> bytes:
    """Cells ``start:end`` serialized back to back: ``>iiH`` lengths, row, the key suffix
    (family, qualifier, timestamp, type), value, memstore timestamp 0. Arrow joins each cell's
    parts in one pass (a numpy gather of the same bytes needs index arrays as long as the bytes)."""
    n = end - start
    header = np.empty(n, dtype=_CELL_HEADER)
    header["key"] = row_len[start:end] + 12
    header["value"] = value_len[start:end]
    header["row"] = row_len[start:end]
    header_column = pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(_CELL_HEADER.itemsize), n, [None, pa.py_buffer(header.tobytes())]
    ).cast(pa.large_binary())
    cells = pc.binary_join_element_wise(
        header_column,
        keys.slice(start, n),
        _KEY_SUFFIX_SCALAR,
        values.slice(start, n),
        _MEMSTORE_TS_SCALAR,
        _NO_SEPARATOR,
    )
    offsets, data = byte_buffers(cells)
    return data[int(offsets[0]) : int(offsets[-1])].tobytes()
