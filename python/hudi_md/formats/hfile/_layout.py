"""HFile v3 structures as Hudi (HBase 2.4 up to 1.0.x, its own writer since 1.1) lays them out.

Pure functions from bytes to values; no I/O. See the format reference, section 3, for the byte facts.
"""

from __future__ import annotations

import struct
import zlib
from bisect import bisect_left
from dataclasses import dataclass

import numpy as np
import pyarrow.compute as pc
from numpy.lib.stride_tricks import as_strided

from hudi_md.formats.arrow_buffers import binaries_at
from hudi_md.formats.hfile._wire import (
    CODEC_NAMES,
    SUPPORTED_CODECS,
    Corrupt,
    crc32c,
    decompress,
    iter_protobuf,
    read_hadoop_vint,
    read_protobuf_varint,
)

TRAILER_SIZE = 4096
HEADER_SIZE = 33

MAGIC_DATA = b"DATABLK*"
MAGIC_ENCODED_DATA = b"DATABLKE"
MAGIC_LEAF_INDEX = b"IDXLEAF2"
MAGIC_INTERMEDIATE_INDEX = b"IDXINTE2"
MAGIC_ROOT_INDEX = b"IDXROOT2"
MAGIC_META = b"METABLKc"
MAGIC_FILE_INFO = b"FILEINF2"
MAGIC_TRAILER = b'TRABLK"$'
MAGIC_BLOOM_CHUNK = b"BLMFBLK2"
MAGIC_BLOOM_META = b"BLMFMET2"
MAGIC_DELETE_BLOOM_META = b"DFBLMET2"
MAGIC_V1_INDEX = b"IDXBLK)+"

BLOCK_MAGICS = frozenset(
    {
        MAGIC_DATA,
        MAGIC_ENCODED_DATA,
        MAGIC_LEAF_INDEX,
        MAGIC_INTERMEDIATE_INDEX,
        MAGIC_ROOT_INDEX,
        MAGIC_META,
        MAGIC_FILE_INFO,
        MAGIC_BLOOM_CHUNK,
        MAGIC_BLOOM_META,
        MAGIC_DELETE_BLOOM_META,
        MAGIC_V1_INDEX,
    }
)
# Blocks HBase writes inline among data blocks; a sequential walk steps over them.
INLINE_MAGICS = frozenset({MAGIC_LEAF_INDEX, MAGIC_INTERMEDIATE_INDEX, MAGIC_BLOOM_CHUNK})

CHECKSUM_NULL = 0
CHECKSUM_CRC32 = 1
CHECKSUM_CRC32C = 2

_HEADER = struct.Struct(">8siiqBii")
_I32 = struct.Struct(">i")
_CELL_LENGTHS_UNSIGNED = struct.Struct(">II")
_U16 = struct.Struct(">H")

MAX_INDEX_LEVELS = 16  # HBase never needs more than a handful; anything larger is corruption


# --- trailer -----------------------------------------------------------------------------------


def _signed64(v: int) -> int:
    """Protobuf uint64 fields hold Java longs; -1 ("no block") arrives as 2**64 - 1."""
    return v - (1 << 64) if v >= 1 << 63 else v


@dataclass(frozen=True)
class HFileTrailer:
    """The fixed 4096-byte trailer: ``TrailerProto`` fields plus the version word.

    Offsets are Java longs (``-1`` when the writer had no such block, e.g. an empty file); absent
    optional fields read as 0 / ``""`` / ``None`` except ``num_data_index_levels``, which defaults to 1.
    """

    file_info_offset: int
    load_on_open_data_offset: int
    uncompressed_data_index_size: int
    total_uncompressed_bytes: int
    data_index_count: int
    meta_index_count: int
    entry_count: int
    num_data_index_levels: int
    first_data_block_offset: int
    last_data_block_offset: int
    comparator_class_name: str
    compression_codec: int
    encryption_key: bytes | None
    major_version: int
    minor_version: int

    @property
    def codec_name(self) -> str:
        return CODEC_NAMES.get(self.compression_codec, f"unknown({self.compression_codec})")


_TRAILER_INT_FIELDS = {
    1: "file_info_offset",
    2: "load_on_open_data_offset",
    3: "uncompressed_data_index_size",
    4: "total_uncompressed_bytes",
    5: "data_index_count",
    6: "meta_index_count",
    7: "entry_count",
    8: "num_data_index_levels",
    9: "first_data_block_offset",
    10: "last_data_block_offset",
    12: "compression_codec",
}
_TRAILER_SIGNED = {
    "file_info_offset",
    "load_on_open_data_offset",
    "first_data_block_offset",
    "last_data_block_offset",
}


def parse_trailer(tail: bytes, file_size: int) -> HFileTrailer:
    """Decode and sanity-check the trailer (``tail`` = the file's last 4096 bytes)."""
    if len(tail) != TRAILER_SIZE:
        raise Corrupt(f"file of {file_size} bytes is shorter than the {TRAILER_SIZE}-byte HFile trailer")
    if tail[:8] != MAGIC_TRAILER:
        raise Corrupt(f"bad trailer magic {tail[:8]!r} (not an HFile, or truncated)")
    version = int.from_bytes(tail[-4:], "big")
    major, minor = version & 0x00FFFFFF, version >> 24
    if major != 3:
        raise Corrupt(f"HFile major version {major} (minor {minor}) is not supported; only v3 is")
    length, pos = read_protobuf_varint(tail, 8, TRAILER_SIZE - 4)
    if pos + length > TRAILER_SIZE - 4:
        raise Corrupt(f"trailer message length {length} runs past the trailer")
    values: dict[str, object] = dict.fromkeys(_TRAILER_INT_FIELDS.values(), 0)
    values.update(first_data_block_offset=-1, last_data_block_offset=-1, num_data_index_levels=1)
    values.update(comparator_class_name="", encryption_key=None)
    seen: set[str] = set()
    for field, value in iter_protobuf(tail[pos : pos + length]):
        name = _TRAILER_INT_FIELDS.get(field)
        if name is not None:
            if not isinstance(value, int):
                raise Corrupt(f"trailer field {name} has the wrong wire type")
            values[name] = _signed64(value) if name in _TRAILER_SIGNED else value
            seen.add(name)
        elif field == 11:
            if not isinstance(value, bytes):
                raise Corrupt("trailer comparator_class_name has the wrong wire type")
            values["comparator_class_name"] = value.decode("utf-8", "replace")
        elif field == 13:
            if not isinstance(value, bytes):
                raise Corrupt("trailer encryption_key has the wrong wire type")
            values["encryption_key"] = value
    # values: each field's wire type was checked above
    trailer = HFileTrailer(major_version=major, minor_version=minor, **values)  # type: ignore[arg-type]
    for required in ("load_on_open_data_offset", "file_info_offset"):
        if required not in seen:
            raise Corrupt(f"trailer lacks {required}")
    _check_trailer(trailer, file_size)
    return trailer


def _check_trailer(t: HFileTrailer, file_size: int) -> None:
    body_end = file_size - TRAILER_SIZE
    if not 0 <= t.load_on_open_data_offset < body_end:
        raise Corrupt(f"load-on-open offset {t.load_on_open_data_offset} outside the body [0, {body_end})")
    if not t.load_on_open_data_offset <= t.file_info_offset < body_end:
        raise Corrupt(f"file-info offset {t.file_info_offset} outside the load-on-open section")
    if t.compression_codec not in SUPPORTED_CODECS:
        raise Corrupt(f"compression codec {t.codec_name} is not supported (only GZ and NONE)")
    if t.encryption_key:
        raise Corrupt("encrypted HFiles are not supported")
    if not 1 <= t.num_data_index_levels <= MAX_INDEX_LEVELS:
        raise Corrupt(f"implausible number of data index levels {t.num_data_index_levels}")
    # Each index entry and each cell takes at least a dozen bytes on disk (before compression).
    if t.data_index_count > body_end or t.meta_index_count > body_end:
        raise Corrupt("index entry counts exceed what the file could hold")
    if t.entry_count and t.data_index_count == 0:
        raise Corrupt(f"trailer says {t.entry_count} entries but the data index is empty")
    if t.data_index_count and t.entry_count == 0:
        raise Corrupt("trailer says 0 entries but the data index is not empty")


# --- blocks ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BlockHeader:
    """The 33-byte block header; ``total_size`` is what the block occupies on disk."""

    magic: bytes
    on_disk_size: int  # compressed payload + checksums, header excluded
    uncompressed_size: int
    checksum_type: int
    bytes_per_checksum: int
    on_disk_data_size: int  # header + compressed payload, checksums excluded

    @property
    def total_size(self) -> int:
        return HEADER_SIZE + self.on_disk_size


def parse_header(buf: bytes, pos: int = 0) -> BlockHeader:
    """Decode one block header and check that its size fields agree with each other."""
    if pos + HEADER_SIZE > len(buf):
        raise Corrupt(f"block header at {pos} is truncated")
    magic, on_disk, uncompressed, _prev, ck_type, bpc, data_size = _HEADER.unpack_from(buf, pos)
    if magic not in BLOCK_MAGICS:
        raise Corrupt(f"unknown block magic {magic!r}")
    if on_disk < 0 or uncompressed < 0:
        raise Corrupt(f"{magic.decode()} block has negative sizes")
    if not HEADER_SIZE <= data_size <= HEADER_SIZE + on_disk:
        raise Corrupt(f"{magic.decode()} block data size {data_size} disagrees with on-disk size {on_disk}")
    if ck_type not in (CHECKSUM_NULL, CHECKSUM_CRC32, CHECKSUM_CRC32C):
        raise Corrupt(f"unknown checksum type {ck_type}")
    checksum_bytes = HEADER_SIZE + on_disk - data_size
    if bpc > 0:
        chunks = -(-data_size // bpc)
        if checksum_bytes != 4 * chunks:
            raise Corrupt(
                f"{magic.decode()} block has {checksum_bytes} checksum bytes, expected {4 * chunks}"
            )
    elif ck_type != CHECKSUM_NULL or bpc < 0:
        raise Corrupt(f"invalid bytes-per-checksum {bpc}")
    return BlockHeader(magic, on_disk, uncompressed, ck_type, bpc, data_size)


def verify_checksums(buf: bytes | memoryview, pos: int, h: BlockHeader) -> None:
    """Check the per-chunk checksums over header + compressed payload (types 1 and 2 only)."""
    if h.checksum_type == CHECKSUM_NULL:
        return  # Hudi's native writer writes zero-filled placeholders
    fn = zlib.crc32 if h.checksum_type == CHECKSUM_CRC32 else crc32c
    view = memoryview(buf)
    data_end = pos + h.on_disk_data_size
    ck = data_end
    bpc = h.bytes_per_checksum
    for start in range(pos, data_end, bpc):
        expected = int.from_bytes(view[ck : ck + 4], "big")
        actual = fn(view[start : min(start + bpc, data_end)])
        if actual != expected:
            raise Corrupt(
                f"checksum mismatch in {h.magic.decode()} block at {pos} "
                f"(chunk at +{start - pos}: stored {expected:08x}, computed {actual:08x})"
            )
        ck += 4


def block_payload(buf: bytes, pos: int, h: BlockHeader, codec: int, verify: bool) -> bytes:
    """Verify (if asked) and decompress the payload of the block at ``buf[pos:]``."""
    if pos + h.total_size > len(buf):
        raise Corrupt(f"{h.magic.decode()} block is truncated")
    if verify:
        verify_checksums(buf, pos, h)
    compressed = memoryview(buf)[pos + HEADER_SIZE : pos + h.on_disk_data_size]
    return decompress(codec, compressed, h.uncompressed_size)


# --- index blocks ------------------------------------------------------------------------------


def index_key_row(key: bytes) -> bytes:
    """The row of a data-index key: ``int16 rowLen | row`` followed (HBase only) by the key tail."""
    if len(key) < 2:
        raise Corrupt(f"data index key of {len(key)} bytes has no row length")
    (row_len,) = _U16.unpack_from(key, 0)
    if 2 + row_len > len(key):
        raise Corrupt(f"data index key row length {row_len} exceeds the key ({len(key)} bytes)")
    return key[2 : 2 + row_len]


def _plausible_data_key(payload: bytes, start: int, length: int, end: int) -> bool:
    """Whether ``length`` bytes at ``start`` can be a data-index key (native row-only or HBase full)."""
    if length < 2 or start + length > end:
        return False
    (row_len,) = _U16.unpack_from(payload, start)
    return length == row_len + 2 or length >= row_len + 12


def parse_root_index(
    payload: bytes, count: int, *, data_index: bool, allow_trailing: tuple[int, ...] = (0,)
) -> tuple[list[bytes], list[int], list[int]]:
    """Decode ``count`` root-index entries: ``int64 offset | int32 onDiskSize | VInt keyLen | key``.

    For the data index the key's row is returned. Hudi 1.1.x wrote the key length as a protobuf
    varint; the two encodings agree below 128, and above it the VInt reading is implausible (negative
    or inconsistent with the key's own row length), so we retry as protobuf only then.
    """
    keys: list[bytes] = []
    offsets: list[int] = []
    sizes: list[int] = []
    pos = 0
    end = len(payload)
    for i in range(count):
        if pos + 12 > end:
            raise Corrupt(f"root index entry {i} of {count} is truncated")
        offset, size = struct.unpack_from(">qi", payload, pos)
        pos += 12
        key_len, key_pos = read_hadoop_vint(payload, pos, end)
        if data_index and not _plausible_data_key(payload, key_pos, key_len, end):
            try:
                alt_len, alt_pos = read_protobuf_varint(payload, pos, end)
            except Corrupt:
                alt_len, alt_pos = -1, pos
            if _plausible_data_key(payload, alt_pos, alt_len, end):
                key_len, key_pos = alt_len, alt_pos
        if key_len < 0 or key_pos + key_len > end:
            raise Corrupt(f"root index entry {i} key length {key_len} runs past the block")
        key = payload[key_pos : key_pos + key_len]
        pos = key_pos + key_len
        if offset < 0 or size < HEADER_SIZE:
            raise Corrupt(f"root index entry {i} points at offset {offset} with size {size}")
        keys.append(index_key_row(key) if data_index else key)
        offsets.append(offset)
        sizes.append(size)
    if end - pos not in allow_trailing:
        raise Corrupt(f"root index block has {end - pos} unexpected trailing bytes")
    return keys, offsets, sizes


def parse_nonroot_index(payload: bytes) -> tuple[list[bytes], list[int], list[int]]:
    """Decode an intermediate/leaf index block (secondary index of entry offsets, then entries)."""
    end = len(payload)
    if end < 4:
        raise Corrupt("non-root index block is truncated")
    (n,) = _I32.unpack_from(payload, 0)
    base = 4 + 4 * (n + 1)
    if n <= 0 or base > end:
        raise Corrupt(f"non-root index block claims {n} entries")
    secondary = struct.unpack_from(f">{n + 1}i", payload, 4)
    rows: list[bytes] = []
    offsets: list[int] = []
    sizes: list[int] = []
    for i in range(n):
        start, stop = base + secondary[i], base + secondary[i + 1]
        if not base <= start <= stop - 12 or stop > end:
            raise Corrupt(f"non-root index entry {i} spans [{start}, {stop}) outside its block")
        offset, size = struct.unpack_from(">qi", payload, start)
        if offset < 0 or size < HEADER_SIZE:
            raise Corrupt(f"non-root index entry {i} points at offset {offset} with size {size}")
        rows.append(index_key_row(payload[start + 12 : stop]))
        offsets.append(offset)
        sizes.append(size)
    return rows, offsets, sizes


def check_index_order(rows: list[bytes], offsets: list[int], what: str) -> None:
    """Index rows must not decrease and block offsets must increase; binary search relies on it."""
    for i in range(1, len(rows)):
        if rows[i] < rows[i - 1] or offsets[i] <= offsets[i - 1]:
            raise Corrupt(f"{what} entries {i - 1} and {i} are out of order")


# --- file info ---------------------------------------------------------------------------------


def parse_file_info(payload: bytes) -> dict[str, bytes]:
    """Decode ``"PBUF" + varint length + InfoProto`` into a ``{key: value}`` map."""
    if payload[:4] != b"PBUF":
        raise Corrupt("file info block lacks its PBUF prefix")
    length, pos = read_protobuf_varint(payload, 4)
    if pos + length > len(payload):
        raise Corrupt(f"file info message length {length} runs past its block")
    info: dict[str, bytes] = {}
    for field, entry in iter_protobuf(payload[pos : pos + length]):
        if field != 1:
            continue
        if not isinstance(entry, bytes):
            raise Corrupt("file info entry has the wrong wire type")
        key = value = None
        for sub, v in iter_protobuf(entry):
            if not isinstance(v, bytes):
                if sub in (1, 2):
                    raise Corrupt("file info pair has the wrong wire type")
                continue
            if sub == 1:
                key = v
            elif sub == 2:
                value = v
        if key is None:
            raise Corrupt("file info entry without a key")
        try:
            info[key.decode("utf-8")] = value if value is not None else b""
        except UnicodeDecodeError:
            raise Corrupt(f"file info key {key!r} is not UTF-8") from None
    return info


# --- data blocks -------------------------------------------------------------------------------


@dataclass(frozen=True)
class CellPositions:
    """Where the cells of one data block are in its payload: the row (record key) and the value of
    cell ``i`` are ``payload[row_start[i]:row_start[i] + row_len[i]]`` and likewise for the value
    (int64 arrays; rows ascending)."""

    payload: bytes
    row_start: np.ndarray
    row_len: np.ndarray
    value_start: np.ndarray
    value_len: np.ndarray

    def __len__(self) -> int:
        return len(self.row_start)

    def row(self, i: int) -> bytes:
        start = int(self.row_start[i])
        return self.payload[start : start + int(self.row_len[i])]

    def rows(self) -> list[bytes]:
        return _slices(self.payload, self.row_start, self.row_len)

    def values(self) -> list[bytes]:
        return _slices(self.payload, self.value_start, self.value_len)


def _slices(payload: bytes, start: np.ndarray, length: np.ndarray) -> list[bytes]:
    return [payload[a:b] for a, b in zip(start.tolist(), (start + length).tolist(), strict=True)]


def cell_positions(payload: bytes, *, has_mvcc: bool, has_tags: bool) -> CellPositions:
    """The cells of a data block, as positions in ``payload``.

    Each cell's place depends on the lengths of the one before, so finding them is a walk
    (:func:`_cell_starts`); it reads only two lengths and an MVCC byte a cell, and every other
    check runs over all the cells at once. Only Put cells are accepted: Hudi never writes anything
    else, and silently returning a delete marker's value would be wrong.
    """
    buf = np.frombuffer(payload, np.uint8)
    try:
        at = _cell_starts(payload, buf, has_mvcc=has_mvcc, has_tags=has_tags)
    except _Truncated as e:
        raise Corrupt(f"cell at {e.args[0]} is truncated") from None
    klen = _be(buf, at, 4)
    vlen = _be(buf, at + 4, 4)
    bad = (klen < 12) | (vlen < 0)
    if bad.any():
        i = int(np.argmax(bad))
        lengths = f"key {int(klen[i])}, value {int(vlen[i])}"
        raise Corrupt(f"cell at {int(at[i])} has inconsistent lengths ({lengths})")
    row_len = _be(buf, at + 8, 2)
    key_end = at + 8 + klen
    bad = klen < row_len + 12
    if bad.any():
        raise Corrupt(f"cell at {int(at[np.argmax(bad)])} has a key shorter than its row")
    family_len = buf[at + 10 + row_len].astype(np.int64)
    bad = (buf[key_end - 1] != 4) | (klen < row_len + 12 + family_len)
    if bad.any():
        raise Corrupt(f"cell at {int(at[np.argmax(bad)])} is not a plain Put cell")
    cells = CellPositions(payload, at + 10, row_len, key_end, vlen)
    if len(at) > 1 and not _ascending(buf, cells.row_start, cells.row_len):
        raise Corrupt("data block cells are not sorted by row")
    return cells


class _Truncated(Exception):
    """A cell runs past its block (args: the cell's start)."""


# The strided walk: a guess is checked for up to this many cells at first, twice as many after
# every guess that held for all it checked, up to the most.
_GUESS_FIRST = 256
_GUESS_MOST = 1 << 16
# A guess costs ~25 µs of array calls, the loop ~0.3 µs a cell: a guess is only made where cells
# ahead have the same lengths (_lengths_repeat), and one that held for fewer cells than this hands
# about the next _LOOP_CELLS cells to the loop, twice as many after every such guess in a row (up
# to _LOOP_CELLS_MOST), so where lengths change often guesses become rare.
_GUESS_WORTH = 128
_LOOP_CELLS = 128
_LOOP_CELLS_MOST = 1 << 13
_STEPS = np.arange(_GUESS_MOST, dtype=np.int64)
# cells a guess that holds for _GUESS_WORTH cells has the lengths of the first in, looked at first
_PROBES = (1, 2, 4, 8, 16, 32, 64, _GUESS_WORTH - 1)


def _lengths_repeat(payload: bytes, pos: int, stride: int) -> bool:
    """Whether the cells ``stride`` bytes apart from ``pos`` on have the first's lengths at
    :data:`_PROBES` (a guess worth making must hold there; a few slices cost far less than one)."""
    head = payload[pos : pos + 8]
    return all(payload[pos + k * stride : pos + k * stride + 8] == head for k in _PROBES)


def _cell_starts(payload: bytes, buf: np.ndarray, *, has_mvcc: bool, has_tags: bool) -> np.ndarray:
    """The start of every cell of a data block, walked from the first: a cell's start is the one
    before's plus 8 + key length + value length (+ tags, + the MVCC VLong).

    Cells of the same lengths follow each other in long runs (a ``files`` partition's cells differ
    in their keys' and values' bytes, seldom in their lengths), so the walk guesses that the cells
    after one have its lengths, checks the guess for many of them at once, and goes on from the
    first cell it does not hold for (whose start the cells before it fix). Cells with tags, and
    stretches where lengths change often, are walked one by one. An overrun of the block is left
    to the caller's end check; a cell cut off inside its lengths raises :class:`_Truncated`."""
    end = len(payload)
    if has_tags:
        starts, pos = _loop_cells(payload, 0, end, end, has_mvcc=has_mvcc, has_tags=True)
        _check_end(pos, end)
        return np.asarray(starts, np.int64)
    chained = _chained_starts(buf, has_mvcc=has_mvcc)
    if chained is not None:
        return chained
    parts: list[np.ndarray] = []
    unpack = _CELL_LENGTHS_UNSIGNED.unpack_from
    tail = 1 if has_mvcc else 0
    pos, span, looped = 0, _GUESS_FIRST, _LOOP_CELLS
    while pos < end:
        if end - pos < 8:
            raise _Truncated(pos)
        klen, vlen = unpack(payload, pos)
        stride = 8 + klen + vlen + tail
        count = min((end - pos) // stride, span)
        held = 0
        if count >= _GUESS_WORTH and _lengths_repeat(payload, pos, stride):
            # the 8 length bytes of every cell the guess places, as a view of the block
            lengths = as_strided(buf[pos:], shape=(count, 8), strides=(stride, 1), writeable=False)
            same = (lengths == buf[pos : pos + 8]).all(axis=1)
            if has_mvcc:  # the one-byte VLong form (-112..127), the only one Hudi writes
                mvcc = as_strided(buf[pos + stride - 1 :], shape=(count,), strides=(stride,), writeable=False)
                same &= (mvcc < 0x80) | (mvcc >= 0x90)
            held = count if bool(same.all()) else int(np.argmin(same))
            if held:
                parts.append(pos + stride * _STEPS[:held])
                pos += stride * held
        if held >= _GUESS_WORTH:
            looped = _LOOP_CELLS
            if held == count:
                span = min(span * 2, _GUESS_MOST)
        else:
            stop = min(end, pos + looped * stride)
            starts, pos = _loop_cells(payload, pos, stop, end, has_mvcc=has_mvcc, has_tags=False)
            parts.append(np.asarray(starts, np.int64))
            span, looped = _GUESS_FIRST, min(looped * 2, _LOOP_CELLS_MOST)
    _check_end(pos, end)
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


def _chained_starts(buf: np.ndarray, *, has_mvcc: bool) -> np.ndarray | None:
    """The cell starts where every cell's key has the first one's length (an MDT partition's keys
    mostly do, its values' lengths vary), found at once: the positions holding those four length
    bytes are the candidates; those that no candidate's lengths lead to are dropped (the same
    bytes as a value length, or inside a value); and the rest are the walk's cells when the walk
    from the first, each cell's lengths (and a one-byte MVCC VLong) giving the next start, steps
    from each to the next and ends at the block's end. None when it does not (a key of another
    length, a longer VLong, a cut block): the caller walks the cells."""
    end = len(buf)
    if end < 8:
        return None
    key_length = buf[:4]
    # the last length byte varies most in other bytes: the others are checked where it matches
    at = np.flatnonzero(buf[3 : end - 4] == key_length[3])
    at = at[(buf[at] == key_length[0]) & (buf[at + 1] == key_length[1]) & (buf[at + 2] == key_length[2])]
    if not at.size or at[0] != 0:
        return None
    klen = int(key_length.view(">u4")[0])
    tail = 8 + klen + (1 if has_mvcc else 0)
    after = at + tail + _be(buf, at + 4, 4)
    if not np.array_equal(after[:-1], at[1:]):
        led_to = np.isin(at, after)
        led_to[0] = True
        at = at[led_to]
        after = at + tail + _be(buf, at + 4, 4)
        if not np.array_equal(after[:-1], at[1:]):
            return None
    if after[-1] != end:
        return None
    if has_mvcc:
        mvcc = buf[after - 1]
        if ((mvcc >= 0x80) & (mvcc < 0x90)).any():  # a longer VLong than Hudi writes: walked
            return None
    return at


def _loop_cells(
    payload: bytes, pos: int, stop: int, end: int, *, has_mvcc: bool, has_tags: bool
) -> tuple[list[int], int]:
    """The starts of the cells from ``pos`` on, one cell at a time, up to the first at or past
    ``stop``; and where the walk stopped. (One loop per cell form: a test inside the loop costs
    as much as the step.)"""
    starts: list[int] = []
    append = starts.append
    # unsigned lengths: every step moves forward, and a length no writer makes runs past the end
    unpack = _CELL_LENGTHS_UNSIGNED.unpack_from
    try:
        if has_tags:
            while pos < stop:
                append(pos)
                klen, vlen = unpack(payload, pos)
                pos += 8 + klen + vlen
                pos += 2 + _U16.unpack_from(payload, pos)[0]
                if has_mvcc:
                    pos = _past_mvcc(payload, pos, end)
        elif has_mvcc:
            while pos < stop:
                append(pos)
                klen, vlen = unpack(payload, pos)
                pos += 8 + klen + vlen
                if 0x80 <= payload[pos] < 0x90:
                    pos = _past_mvcc(payload, pos, end)
                else:  # a one-byte VLong (-112..127), the only form Hudi writes
                    pos += 1
        else:
            while pos < stop:
                append(pos)
                klen, vlen = unpack(payload, pos)
                pos += 8 + klen + vlen
    except (struct.error, IndexError):
        raise _Truncated(starts[-1]) from None
    return starts, pos


def _check_end(pos: int, end: int) -> None:
    if pos != end:
        raise Corrupt("the last cell overruns its data block")


def _past_mvcc(payload: bytes, pos: int, end: int) -> int:
    return read_hadoop_vint(payload, pos, end)[1]


def _be(buf: np.ndarray, at: np.ndarray, width: int) -> np.ndarray:
    """The unsigned big-endian integers of ``width`` bytes at ``at`` (4-byte ones as signed)."""
    out = np.zeros(len(at), np.int64)
    for i in range(width):
        out = (out << 8) | buf[at + i]
    if width == 4:
        out = np.where(out >= 1 << 31, out - (1 << 32), out)
    return out


def _ascending(buf: np.ndarray, start: np.ndarray, length: np.ndarray) -> bool:
    """Whether the byte strings at ``start`` are in non-descending unsigned byte order."""
    rows = binaries_at(buf, start, length)
    return not pc.any(pc.less(rows[1:], rows[:-1])).as_py()


def decode_cells(payload: bytes, *, has_mvcc: bool, has_tags: bool) -> tuple[list[bytes], list[bytes]]:
    """A data block's parallel ``rows`` and ``values`` lists (rows ascending), for lookups that
    :func:`bisect` the rows."""
    cells = cell_positions(payload, has_mvcc=has_mvcc, has_tags=has_tags)
    return cells.rows(), cells.values()


def floor_entry(rows: list[bytes], key: bytes) -> int:
    """Index of the last entry whose row is strictly below ``key`` (0 if none).

    Strictly below, not at-or-below: a run of equal rows may straddle a block boundary (HBase does
    not avoid it), so the first cell of ``key`` can sit in the block before one whose index row
    equals ``key``. Index rows may be shortened separators, which never breaks this rule.
    """
    return max(bisect_left(rows, key) - 1, 0)
