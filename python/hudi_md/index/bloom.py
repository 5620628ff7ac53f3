"""Hudi's record-key bloom filters, bit-for-bit as Hudi writes them.

Hudi stores a Base64 text of a Hadoop ``Writable``-serialised bloom filter in every base Parquet
file footer (``org.apache.hudi.bloomfilter``), in MDT base HFiles (meta block ``bloomFilter``) and
in the ``bloom_filters`` MDT partition. Two layouts exist (``BloomFilterFactory``):

* ``SIMPLE``: Hadoop's ``org.apache.hadoop.util.bloom.BloomFilter``;
* ``DYNAMIC_V0``: ``InternalDynamicBloomFilter``, a list of such filters ("rows") that grows by one
  row every ``num_entries`` keys until ``max_entries`` keys are covered, then hands keys to the
  existing rows round robin (``HoodieDynamicBoundedBloomFilter``).

Byte layout (big-endian, ``DataOutput``)::

    filter header   int32 -1 (version), int32 num_hashes, int8 hash_type (1 = murmur), int32 vector_size
    SIMPLE          header, bit vector
    DYNAMIC_V0      header, int32 nr (= num_entries), int32 keys in the current row, int32 row count,
                    then per row: header, bit vector
    bit vector      ceil(vector_size / 8) bytes, bit i at byte i // 8, mask 1 << (i % 8)

Key positions (Hadoop ``HashFunction`` over ``MurmurHash``): the UTF-8 key is hashed ``num_hashes``
times, each round seeded with the previous round's 32-bit result (first seed 0); position =
``abs(h % vector_size)`` with Java's signed ``int`` and truncating remainder. Hadoop's MurmurHash 2
port differs from the reference C code in its tail: with ``r`` trailing bytes ``t0..t(r-1)`` it
xors ``t0 << 8(r-1) ^ ... ^ t(r-1)`` with each byte *sign-extended* (Java ``byte``), which is
reproduced here.

Adding keys is buffered: keys are hashed in batches, vectorised over keys with ``pyarrow.compute``
(100k keys take well under a second); small batches and lookups use plain Python integers.
"""

from __future__ import annotations

import base64
import math
import struct
from collections.abc import Iterable, Sequence

import numpy as np
import pyarrow as pa

from hudi_md.errors import InvalidOptionError, UnsupportedFeatureError
from hudi_md.formats.arrow_buffers import byte_buffers

__all__ = [
    "DEFAULT_FPP",
    "DEFAULT_MAX_ENTRIES",
    "DEFAULT_NUM_ENTRIES",
    "DYNAMIC_V0",
    "SIMPLE",
    "BloomFilter",
    "murmur_hash",
]

SIMPLE = "SIMPLE"
DYNAMIC_V0 = "DYNAMIC_V0"

# Hudi's defaults for data files: hoodie.index.bloom.num_entries, hoodie.index.bloom.fpp,
# hoodie.bloom.index.filter.dynamic.max.entries.
DEFAULT_NUM_ENTRIES = 60000
DEFAULT_FPP = 1e-9
DEFAULT_MAX_ENTRIES = 100000

_VERSION = -1  # InternalFilter.VERSION: negative marks the versioned header
_MURMUR_HASH = 1  # org.apache.hadoop.util.hash.Hash.MURMUR_HASH
_HEADER = struct.Struct(">iibi")  # version, nbHash, hashType (one byte), vectorSize
_DYNAMIC_FIELDS = struct.Struct(">iii")  # nr, currentNbRecord, matrix length

_M = 0x5BD1E995
_MASK = 0xFFFFFFFF

# Below this many pending keys the per-key Python path beats ~30 x (blocks + 10) numpy calls.
_VECTORISE_FROM = 256
# a column's keys are grouped by length from its offsets (no Python step per key), so the kernels'
# fixed cost is worth it much sooner: 100 keys x 30 hashes is 3000 scalar murmur calls
_COLUMN_VECTORISE_FROM = 8
# Pending keys are hashed once this many have accumulated, bounding the memory of the buffer.
_FLUSH_EVERY = 1 << 17


def _sign_extend_byte(b: int) -> int:
    """A Java ``byte`` widened to ``int``, as an unsigned 32-bit value."""
    return b | 0xFFFFFF00 if b & 0x80 else b


def _prepare(key: bytes) -> tuple[int, tuple[int, ...], int | None]:
    """The seed-independent parts of Hadoop's murmur: (length, mixed 4-byte blocks, tail value).

    Only ``h = seed ^ length`` depends on the seed, so a key's ``num_hashes`` rounds share these.
    """
    n = len(key)
    nwords = n >> 2
    mixed = []
    for w in struct.unpack_from(f"<{nwords}I", key):
        k = (w * _M) & _MASK
        k ^= k >> 24
        mixed.append((k * _M) & _MASK)
    left = n & 3
    tail = None
    if left:
        tail = 0
        for i, b in enumerate(key[n - left :]):
            tail ^= (_sign_extend_byte(b) << (8 * (left - 1 - i))) & _MASK
    return n, tuple(mixed), tail


def _murmur_prepared(n: int, mixed: tuple[int, ...], tail: int | None, seed: int) -> int:
    h = (seed ^ n) & _MASK
    for k in mixed:
        h = ((h * _M) & _MASK) ^ k
    if tail is not None:
        h = ((h ^ tail) * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    return h ^ (h >> 15)


def murmur_hash(data: bytes, seed: int = -1) -> int:
    """Hadoop's ``MurmurHash.hash(data, length, seed)`` as a signed 32-bit Java ``int``."""
    h = _murmur_prepared(*_prepare(data), seed & _MASK)
    return h - (1 << 32) if h & 0x80000000 else h


def _positions(key: bytes, num_hashes: int, vector_size: int) -> list[int]:
    """Bit positions of one key (Hadoop ``HashFunction.hash``)."""
    if not key:
        raise InvalidOptionError("bloom filter keys must not be empty")  # HashFunction rejects them
    prepared = _prepare(key)
    out = []
    h = 0
    for _ in range(num_hashes):
        h = _murmur_prepared(*prepared, h)
        signed = h - (1 << 32) if h & 0x80000000 else h
        # Math.abs(signed % vs) with Java's truncating % equals abs(signed) % vs.
        out.append(abs(signed) % vector_size)
    return out


# --- vectorised hashing ---------------------------------------------------------------------------


def _words(keys: Sequence[bytes], length: int) -> tuple[list[np.ndarray], np.ndarray | None]:
    """Little-endian 4-byte words of equally long keys: one array per word position (over keys),
    plus the array of trailing partial words (zero padded) when ``length % 4``."""
    matrix = np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(len(keys), length)
    return _words_of_matrix(matrix, length)


def _positions_vectorised(keys: Sequence[bytes], num_hashes: int, vector_size: int) -> list[np.ndarray]:
    """``num_hashes`` int64 arrays of bit positions for keys that all have the same byte length."""
    length = len(keys[0])
    words, partial = _words(keys, length)
    return _positions_of_words(words, partial, length, num_hashes, vector_size)


def _words_of_matrix(keys: np.ndarray, length: int) -> tuple[list[np.ndarray], np.ndarray | None]:
    """:func:`_words` of keys given as the rows of a uint8 matrix (one key of ``length`` bytes
    per row)."""

    stride = (length + 3) >> 2
    padded = np.zeros((len(keys), stride * 4), dtype=np.uint8)
    padded[:, :length] = keys
    flat = padded.view("<u4")  # little-endian words, whatever the machine's order
    cols = [flat[:, j].astype(np.uint32) for j in range(stride)]
    nwords = length >> 2
    return (cols[:nwords], cols[nwords]) if length & 3 else (cols, None)


def _positions_of_words(
    words: list[np.ndarray], partial: np.ndarray | None, length: int, num_hashes: int, vector_size: int
) -> list[np.ndarray]:
    """:func:`_positions` of every key at once: numpy uint32 arithmetic wraps modulo 2**32 as
    Java's int arithmetic does, and works in place (a few calls per word, not one per step)."""
    m = np.uint32(_M)
    # no whole word: a key of 1 to 3 bytes, all in the partial word (keys are never empty)
    n = len(words[0]) if words else len(partial)  # type: ignore[arg-type]
    mixed = []
    for w in words:
        k = w * m
        k ^= k >> np.uint32(24)
        k *= m
        mixed.append(k)
    tail = None
    if partial is not None:
        left = length & 3
        tail = np.zeros(n, dtype=np.uint32)
        for i in range(left):
            b = (partial >> np.uint32(8 * i)) & np.uint32(0xFF)
            # Sign-extend the Java byte: or in 0xFFFFFF00 when bit 7 is set.
            b |= (b >> np.uint32(7)) * np.uint32(0xFFFFFF00)
            tail ^= b << np.uint32(8 * (left - 1 - i))
    length_u32 = np.uint32(length)
    out = []
    h = np.zeros(n, dtype=np.uint32)  # the first round is seeded with 0
    for _ in range(num_hashes):
        h ^= length_u32
        for k in mixed:
            h *= m
            h ^= k
        if tail is not None:
            h ^= tail
            h *= m
        h ^= h >> np.uint32(13)
        h *= m
        h ^= h >> np.uint32(15)
        # Java's int value of h, then abs(v) % vector_size (see _positions).
        out.append(np.abs(h.view(np.int32).astype(np.int64)) % vector_size)
    return out


# --- the filter -----------------------------------------------------------------------------------


def _sizing(num_entries: int, fpp: float) -> tuple[int, int]:
    """(vector size, number of hashes) as ``BloomFilterUtils`` computes them with Java doubles."""
    bits = math.ceil(num_entries * (-math.log(fpp) / (math.log(2) * math.log(2))))
    hashes = math.ceil(math.log(2) * bits / num_entries)
    return int(bits), int(hashes)


class BloomFilter:
    """A Hudi-compatible bloom filter (``SIMPLE`` or ``DYNAMIC_V0``) over string record keys.

    Rows of the dynamic layout share one ``bytearray``; row ``r`` occupies bytes
    ``[r * nbytes, (r + 1) * nbytes)`` in exactly the serialised bit order.
    """

    def __init__(
        self,
        *,
        type_code: str,
        vector_size: int,
        num_hashes: int,
        hash_type: int = _MURMUR_HASH,
        nr: int = 0,
        max_nr: int = 0,
        current_nb_record: int = 0,
        rows: int = 1,
        bits: bytes | None = None,
    ) -> None:
        if type_code not in (SIMPLE, DYNAMIC_V0):
            raise InvalidOptionError(
                f"bloom filter type code must be SIMPLE or DYNAMIC_V0, got {type_code!r}"
            )
        if vector_size <= 0 or num_hashes <= 0:
            raise InvalidOptionError("bloom filter vector size and number of hashes must be positive")
        if hash_type != _MURMUR_HASH:
            # Hudi always creates murmur filters; Jenkins only appears in pre-versioned Hadoop bytes.
            raise UnsupportedFeatureError(
                f"bloom filter hash type {hash_type} (only murmur = 1 is supported)"
            )
        self.type_code = type_code
        self.vector_size = vector_size
        self.num_hashes = num_hashes
        self.hash_type = hash_type
        self._nbytes = (vector_size + 7) // 8
        # InternalDynamicBloomFilter state; reached_max / cur_index / max_nr are not serialised.
        self._nr = nr
        self._max_nr = max_nr
        self._current = current_nb_record
        self._reached_max = False
        self._cur_index = 0
        self._rows = rows
        self._bits = bytearray(bits) if bits is not None else bytearray(self._nbytes * rows)
        self._pending: list[bytes] = []

    # --- construction ------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        num_entries: int = DEFAULT_NUM_ENTRIES,
        fpp: float = DEFAULT_FPP,
        *,
        type_code: str = DYNAMIC_V0,
        max_entries: int = DEFAULT_MAX_ENTRIES,
    ) -> BloomFilter:
        """An empty filter sized like ``BloomFilterFactory.createBloomFilter``."""
        if num_entries <= 0 or not 0 < fpp < 1:
            raise InvalidOptionError(f"need num_entries > 0 and 0 < fpp < 1, got {num_entries}, {fpp}")
        code = type_code.upper()
        vector_size, num_hashes = _sizing(num_entries, fpp)
        if code == DYNAMIC_V0:
            return cls(
                type_code=code,
                vector_size=vector_size,
                num_hashes=num_hashes,
                nr=num_entries,
                max_nr=max_entries,
            )
        return cls(type_code=code, vector_size=vector_size, num_hashes=num_hashes)

    @classmethod
    def deserialize(cls, text: str | bytes, type_code: str | None = None) -> BloomFilter:
        """Parse the Base64 text Hudi stores. ``type_code`` is the footer's
        ``hoodie_bloom_filter_type_code``; Hudi omits it for ``SIMPLE`` filters, so ``None`` means
        ``SIMPLE``.
        """
        code = (type_code or SIMPLE).upper()
        if code not in (SIMPLE, DYNAMIC_V0):
            raise InvalidOptionError(
                f"bloom filter type code must be SIMPLE or DYNAMIC_V0, got {type_code!r}"
            )
        try:
            raw = base64.b64decode(text, validate=True)
        except ValueError as e:
            raise InvalidOptionError(f"bloom filter text is not valid Base64: {e}") from None
        try:
            num_hashes, hash_type, vector_size, pos = _read_header(raw, 0)
            nbytes = (vector_size + 7) // 8
            if code == SIMPLE:
                bits = _read_bits(raw, pos, vector_size)
                if pos + nbytes != len(raw):
                    raise ValueError(f"{len(raw) - pos - nbytes} trailing bytes")
                return cls(
                    type_code=code,
                    vector_size=vector_size,
                    num_hashes=num_hashes,
                    hash_type=hash_type,
                    bits=bits,
                )
            nr, current, rows = _DYNAMIC_FIELDS.unpack_from(raw, pos)
            pos += _DYNAMIC_FIELDS.size
            if rows <= 0:
                raise ValueError(f"dynamic filter with {rows} rows")
            parts = []
            for _ in range(rows):
                row_hashes, row_type, row_size, pos = _read_header(raw, pos)
                if (row_hashes, row_type, row_size) != (num_hashes, hash_type, vector_size):
                    raise ValueError("a row's parameters differ from the filter's")
                parts.append(_read_bits(raw, pos, vector_size))
                pos += nbytes
            if pos != len(raw):
                raise ValueError(f"{len(raw) - pos} trailing bytes")
        except (struct.error, ValueError) as e:
            raise InvalidOptionError(f"not a serialised {code} bloom filter: {e}") from None
        # Java leaves maxNr at 0 after readFields, so further adds go round robin over the rows
        # (InternalDynamicBloomFilter.getActiveStandardBF); max_nr=0 reproduces that.
        return cls(
            type_code=code,
            vector_size=vector_size,
            num_hashes=num_hashes,
            hash_type=hash_type,
            nr=nr,
            max_nr=0,
            current_nb_record=current,
            rows=rows,
            bits=b"".join(parts),
        )

    # --- keys --------------------------------------------------------------------------------

    def add(self, key: str) -> None:
        """Add one record key (hashed as UTF-8). Keys are hashed lazily, in insertion order."""
        if key is None:
            raise InvalidOptionError("bloom filter keys must not be None")
        data = key.encode("utf-8")
        if not data:
            raise InvalidOptionError("bloom filter keys must not be empty")
        self._pending.append(data)
        if len(self._pending) >= _FLUSH_EVERY:
            self._flush()

    def add_all(self, keys: Iterable[str]) -> None:
        """Add keys in order (same result as calling :meth:`add` for each)."""
        for key in keys:
            self.add(key)

    def add_column(self, keys: pa.Array | pa.ChunkedArray) -> None:
        """:meth:`add` of every key of a string column, in order (the same bits), hashed from the
        column's bytes without a Python step per key."""

        if isinstance(keys, pa.ChunkedArray):
            keys = keys.combine_chunks()
        if keys.null_count:
            raise InvalidOptionError("bloom filter keys must not be None")
        if len(keys) < _COLUMN_VECTORISE_FROM:
            self.add_all(keys.to_pylist())
            return
        self._flush()  # keys added before go to their rows first
        column = keys.cast(pa.large_binary())
        offsets, data = byte_buffers(column)
        lengths = np.diff(offsets)
        if not lengths.all():
            raise InvalidOptionError("bloom filter keys must not be empty")
        rows = self._rows_for(len(column))
        chunks = []
        for length in np.unique(lengths).tolist():
            idx = np.nonzero(lengths == length)[0]
            matrix = data[offsets[idx][:, None] + np.arange(length)]
            words, partial = _words_of_matrix(matrix, length)
            bit_offsets = rows[idx] * (self._nbytes * 8)
            for pos in _positions_of_words(words, partial, length, self.num_hashes, self.vector_size):
                chunks.append(pos + bit_offsets)
        self._set_bits(np.concatenate(chunks))

    def _rows_for(self, n: int) -> np.ndarray:
        """The rows of the next ``n`` keys, advancing the dynamic state as ``n`` calls of
        :meth:`_next_row` do (a row grows the bits when it is opened)."""

        out = np.zeros(n, dtype=np.int64)
        if self.type_code == SIMPLE:
            return out
        i = 0
        while i < n:
            if self._reached_max:
                out[i:] = (self._cur_index + np.arange(n - i)) % self._rows
                self._cur_index += n - i
                self._current += n - i
                return out
            if self._current < self._nr:
                take = min(n - i, self._nr - self._current)
                out[i : i + take] = self._rows - 1
                self._current += take
                i += take
                continue
            out[i] = self._next_row()  # opens a row, or reaches the maximum
            i += 1
        return out

    def might_contain(self, key: str) -> bool:
        self._flush()
        positions = _positions(key.encode("utf-8"), self.num_hashes, self.vector_size)
        bits = self._bits
        for row in range(self._rows):
            base = row * self._nbytes
            if all(bits[base + (p >> 3)] >> (p & 7) & 1 for p in positions):
                return True
        return False

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.might_contain(key)

    @property
    def num_entries(self) -> int | None:
        """Keys per row of a dynamic filter (``num_entries`` at creation); ``None`` for ``SIMPLE``,
        whose bytes do not record it."""
        return self._nr if self.type_code == DYNAMIC_V0 else None

    @property
    def num_rows(self) -> int:
        """Rows of a dynamic filter (1 for ``SIMPLE``)."""
        self._flush()
        return self._rows

    # --- serialisation -----------------------------------------------------------------------

    def serialize(self) -> str:
        """The Base64 text Hudi writes (``BloomFilter.serializeToString``)."""
        self._flush()
        header = _HEADER.pack(_VERSION, self.num_hashes, self.hash_type, self.vector_size)
        if self.type_code == SIMPLE:
            body = header + bytes(self._bits)
        else:
            parts = [header, _DYNAMIC_FIELDS.pack(self._nr, self._current, self._rows)]
            for row in range(self._rows):
                parts.append(header)
                parts.append(bytes(self._bits[row * self._nbytes : (row + 1) * self._nbytes]))
            body = b"".join(parts)
        return base64.b64encode(body).decode("ascii")

    def __repr__(self) -> str:
        return (
            f"BloomFilter({self.type_code}, vector_size={self.vector_size}, "
            f"num_hashes={self.num_hashes}, rows={self.num_rows})"
        )

    # --- internals ---------------------------------------------------------------------------

    def _next_row(self) -> int:
        """Row the next key goes to, advancing the dynamic state like ``InternalDynamicBloomFilter.add``."""
        if self.type_code == SIMPLE:
            return 0
        if self._reached_max:
            row = self._cur_index % self._rows
            self._cur_index += 1
        elif self._current >= self._nr and self._rows * self._nr < self._max_nr:
            self._rows += 1
            self._bits.extend(bytes(self._nbytes))
            self._current = 0
            row = self._rows - 1
        elif self._current >= self._nr:
            self._reached_max = True
            row = 0
        else:
            row = self._rows - 1
        self._current += 1
        return row

    def _flush(self) -> None:
        pending = self._pending
        if not pending:
            return
        self._pending = []
        rows = [self._next_row() for _ in pending]
        bits = self._bits
        nbytes = self._nbytes
        if len(pending) < _VECTORISE_FROM:
            for key, row in zip(pending, rows, strict=True):
                base = row * nbytes
                for p in _positions(key, self.num_hashes, self.vector_size):
                    bits[base + (p >> 3)] |= 1 << (p & 7)
            return
        by_length: dict[int, list[int]] = {}
        for i, key in enumerate(pending):
            by_length.setdefault(len(key), []).append(i)
        chunks = []
        for idx in by_length.values():
            keys = [pending[i] for i in idx]
            # Global bit number = row * (8 * nbytes) + position, so one bytearray holds every row.
            offsets = np.asarray([rows[i] * nbytes * 8 for i in idx], np.int64)
            for pos in _positions_vectorised(keys, self.num_hashes, self.vector_size):
                chunks.append(pos + offsets)
        self._set_bits(np.concatenate(chunks))

    def _set_bits(self, positions: np.ndarray) -> None:
        """Set global bit numbers (row * 8 * nbytes + position) in the rows' bytearray."""
        flags = np.zeros(len(self._bits) * 8, dtype=bool)
        flags[positions] = True
        # bit p of a row is 1 << (p & 7) in byte p >> 3: little bit order
        view = np.frombuffer(self._bits, dtype=np.uint8)
        np.bitwise_or(view, np.packbits(flags, bitorder="little"), out=view)


def _read_header(raw: bytes, pos: int) -> tuple[int, int, int, int]:
    """(num_hashes, hash_type, vector_size, position after the header) of one filter header."""
    version, num_hashes, hash_type, vector_size = _HEADER.unpack_from(raw, pos)
    if version != _VERSION:
        # A positive first int is Hadoop's pre-versioned layout (Jenkins hash); Hudi never writes it.
        raise ValueError(f"unsupported filter version {version}")
    if vector_size <= 0 or num_hashes <= 0:
        raise ValueError(f"bad filter parameters: {num_hashes} hashes, {vector_size} bits")
    return num_hashes, hash_type, vector_size, pos + _HEADER.size


def _read_bits(raw: bytes, pos: int, vector_size: int) -> bytes:
    nbytes = (vector_size + 7) // 8
    chunk = raw[pos : pos + nbytes]
    if len(chunk) != nbytes:
        raise ValueError("truncated bit vector")
    spare = nbytes * 8 - vector_size
    if spare:
        # readFields ignores bits past vector_size; dropping them keeps serialize() Java-exact.
        chunk = chunk[:-1] + bytes([chunk[-1] & (0xFF >> spare)])
    return chunk
