"""The order clustering writes records in: Apache Hudi's layout optimization strategies
(``hoodie.layout.optimize.strategy``) over ``hoodie.clustering.plan.strategy.sort.columns``.

* ``linear`` (Hudi's default): lexicographic by the columns, ascending, as Spark's ``sort``
  orders rows (``RowCustomColumnsSortPartitioner``): nulls first, and for floating point NaN after
  every number and ``-0.0`` equal to ``0.0``.
* ``z-order`` and ``hilbert``: Hudi's ``direct`` curve build method
  (``hoodie.layout.optimize.curve.build.method``, the default;
  ``SpaceCurveSortingHelper.orderDataFrameByMappingValues``). The ``sample`` method (``RangeSample``)
  is not implemented: its curve depends on a random sample and random tie-breaking, so no
  implementation could reproduce Hudi's order anyway.

Each sort column's value becomes 8 bytes (z-order, ``mapColumnValueTo8Bytes`` through
``BinaryUtil``) or a ``long`` (Hilbert, ``mapColumnValueToLong``). Hudi's mappings are not all
order-preserving, and this module keeps them as they are, since the point is Hudi's file layout:

================  ====================================================  ==============================
Spark type        z-order 8 bytes (big-endian; null)                    Hilbert long (null)
================  ====================================================  ==============================
long              ``v ^ 1<<63`` (``Long.MAX_VALUE``: last)              ``v`` (``Long.MAX_VALUE``)
int (int8..32)    4 zero bytes + ``v ^ 1<<31`` (``Integer.MAX_VALUE``)  ``v`` sign-extended (max)
double, float     IEEE bits: positive with the sign bit flipped,        ``doubleToLongBits`` (NaN
                  negative all bits inverted, ``0.0``/``-0.0``/NaN raw  canonical), max
                  (``Double``/``Float.MAX_VALUE``, a float widened)
string, binary    UTF-8 / the bytes: first 8, or fewer right-aligned    the same 8 bytes as a long
                  after zero bytes (null: all zero)                     (max)
date              epoch millis of the day (``java.sql.Date.getTime``)   the millis (max)
                  as a long (``Long.MAX_VALUE``)
timestamp (tz)    epoch millis, floored, as a long (``Long.MAX_VALUE``) the millis (max)
decimal           ``BigDecimal.longValue()`` (fraction dropped, low     the same long (max)
                  64 bits) as a long (``Long.MAX_VALUE``)
boolean           ``intTo8Byte(v ? 1 : 0)``, null as false              ``Long.MAX_VALUE`` if true,
                                                                        else 0 (null: 0)
================  ====================================================  ==============================

Arrow types are named by the Spark type Hudi reads them as (the Avro schema hudi-md writes:
``int8``/``int16`` are Avro ``int``, so Spark ``IntegerType``); any other type (tz-naive timestamps,
Spark's ``TIMESTAMP_NTZ``, nested types, unsigned integers, null) is refused, as Hudi refuses it.

z-order interleaves the k 8-byte values bit by bit, most significant first (``BinaryUtil.
interleaving``); Hilbert maps the k longs to an index on davidmoten's ``HilbertCurve.bits(63)``
(John Skilling's transposed algorithm, "Programming the Hilbert curve", 2004), which uses the low
63 bits of each long, so a negative value lands where its low 63 bits do. ``HilbertCurveUtils.
indexBytes`` turns the index into 63 bytes: ``BigInteger.toByteArray()`` zero-padded on the left,
or its first 63 bytes when longer (only with 8 or more columns, where it breaks the order;
emulated). Rows are sorted by those bytes, unsigned; ties keep their input order (Spark's sort
leaves their order unspecified).

Two more of Hudi's details are reproduced: the curve's dimensions follow the iteration order of
the ``HashMap`` keyed by the columns' schema positions, not the order of ``sort.columns`` (schema
order while the positions are below 16, with up to 12 sort columns). So pass the records as Hudi's
clustering frame holds them, meta columns first. And a single sort column skips the curve
(``repartitionByRange`` on it): ordered as ``linear``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from hudi_md.config import services as S
from hudi_md.errors import InvalidOptionError, UnsupportedFeatureError

__all__ = ["HILBERT", "LINEAR", "Z_ORDER", "sort_order", "sorted_by_layout"]

LINEAR, Z_ORDER, HILBERT = "linear", "z-order", "hilbert"

STRATEGY_OPTION = S.LAYOUT_OPTIMIZE_STRATEGY.key
SORT_COLUMNS_OPTION = S.CLUSTERING_SORT_COLUMNS.key

_U64 = npt.NDArray[np.uint64]

_SIGN = np.uint64(1 << 63)
_ALL_ONES = np.uint64((1 << 64) - 1)
_LONG_MAX = np.uint64((1 << 63) - 1)
_INT_MAX_FLIPPED = np.uint64(0xFFFFFFFF)  # intTo8Byte(Integer.MAX_VALUE)
_CANONICAL_NAN = np.uint64(0x7FF8000000000000)  # what Double.doubleToLongBits makes of every NaN
_MILLIS_PER_DAY = 86_400_000
_FLOAT_MAX = float(np.finfo(np.float32).max)
_DOUBLE_MAX = float(np.finfo(np.float64).max)

# HilbertCurve.bits(63) and HilbertCurveUtils.indexBytes(curve, longs, 63)
_HILBERT_BITS = 63
_HILBERT_KEY_BYTES = 63

# Rows per block of the bit-level work: a block's arrays stay in the CPU cache.
_BLOCK = 1 << 15

_BIT_LENGTH = np.array([b.bit_length() for b in range(256)], dtype=np.int64)


def sort_order(table: pa.Table, columns: Sequence[str], strategy: str = LINEAR) -> pa.Array:
    """Indices (uint64) of ``table``'s rows in the order Hudi's clustering writes them, sorted by
    ``columns`` under the layout ``strategy`` (any spelling ``hoodie.layout.optimize.strategy``
    accepts). Stable: equal rows keep their input order. No columns: the input order.

    Raises :class:`InvalidOptionError` for an unknown strategy or a column not in ``table``, and
    :class:`UnsupportedFeatureError` for a column type the strategy cannot order by."""
    kind = _resolve_strategy(strategy)
    names = list(columns)
    positions = _positions(table, names)
    n = table.num_rows
    if not names:
        return pa.array(np.arange(n, dtype=np.uint64))
    if kind == LINEAR or len(names) == 1:
        return _linear_order(table, names)
    if len(set(names)) != len(names):
        # Hudi keys its dimensions by schema position (Collectors.toMap): a repeat fails the job.
        raise InvalidOptionError(
            f"{SORT_COLUMNS_OPTION} names a column twice ({', '.join(names)}); {kind} ordering needs "
            "distinct columns"
        )
    dims = [names[i] for i in _hash_map_order(positions)]
    arrays = [_column_array(table, name) for name in dims]
    kinds = [_kind(a, name) for a, name in zip(arrays, dims, strict=True)]
    if n == 0:
        return pa.array(np.empty(0, dtype=np.uint64))
    value = _zorder_value if kind == Z_ORDER else _hilbert_value
    coords = [value(a, k) for a, k in zip(arrays, kinds, strict=True)]
    keys = _zorder_keys(coords) if kind == Z_ORDER else _hilbert_keys(coords)
    return pa.array(_sort_rows(keys).astype(np.uint64))


def sorted_by_layout(table: pa.Table, columns: Sequence[str], strategy: str = LINEAR) -> pa.Table:
    """``table``'s rows in the order :func:`sort_order` gives."""
    return table.take(sort_order(table, columns, strategy))


def _resolve_strategy(strategy: str) -> str:
    # HoodieClusteringConfig.resolveLayoutOptimizationStrategy: "z-order" in any case, else an enum
    # name in any case (so "ZORDER" too, and the option's default "LINEAR")
    if strategy.lower() == Z_ORDER:
        return Z_ORDER
    resolved = {"LINEAR": LINEAR, "ZORDER": Z_ORDER, "HILBERT": HILBERT}.get(strategy.upper())
    if resolved is None:
        raise InvalidOptionError(
            f"{STRATEGY_OPTION}={strategy!r} is not a layout optimization strategy: expected linear, "
            "z-order or hilbert"
        )
    return resolved


def _positions(table: pa.Table, names: list[str]) -> list[int]:
    schema_names = table.schema.names
    missing = [name for name in names if name not in schema_names]
    if missing:
        raise InvalidOptionError(
            f"{SORT_COLUMNS_OPTION}: no column {', '.join(map(repr, missing))} in the records (columns: "
            f"{', '.join(schema_names)})"
        )
    ambiguous = [name for name in names if schema_names.count(name) > 1]
    if ambiguous:
        raise InvalidOptionError(
            f"{SORT_COLUMNS_OPTION}: the records have more than one column named "
            f"{', '.join(map(repr, ambiguous))}"
        )
    return [schema_names.index(name) for name in names]


def _hash_map_order(positions: list[int]) -> list[int]:
    """Indices into ``positions`` in the order Java's ``HashMap<Integer, _>`` iterates them when
    put in list order: by bucket (the spread hash masked by the table size), then by insertion
    (resizing keeps a bucket's relative order). Tree bins, which need eight keys in one bucket,
    are not modelled."""
    capacity = 16
    while len(positions) > capacity * 3 // 4:  # load factor 0.75
        capacity *= 2

    def bucket(i: int) -> int:
        h = positions[i]
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(range(len(positions)), key=lambda i: (bucket(i), i))


# --- linear ----------------------------------------------------------------------------------------


def _linear_order(table: pa.Table, names: list[str]) -> pa.Array:
    # Spark's ordering is not Arrow's: nulls first and NaN after +inf. Explicit validity and NaN keys
    # make it independent of Arrow's null and NaN placement (and of its option's spelling).
    keys: dict[str, pa.ChunkedArray] = {}
    sort_keys: list[tuple[str, str]] = []
    for i, name in enumerate(names):
        col = table.column(name)
        t = col.type
        if pa.types.is_dictionary(t):
            col = col.cast(t.value_type)
            t = t.value_type
        if pa.types.is_nested(t):
            raise UnsupportedFeatureError(f"cannot sort by column {name!r} of type {t}: a nested type")
        if pa.types.is_null(t):
            continue  # all null: every row ties
        keys[f"{i}.valid"] = pc.is_valid(col)
        sort_keys.append((f"{i}.valid", "ascending"))
        if pa.types.is_floating(t):
            keys[f"{i}.nan"] = pc.fill_null(pc.is_nan(col), False)
            sort_keys.append((f"{i}.nan", "ascending"))
        keys[f"{i}.value"] = col
        sort_keys.append((f"{i}.value", "ascending"))
    if not keys:
        return pa.array(np.arange(table.num_rows, dtype=np.uint64))
    return pc.sort_indices(pa.table(keys), sort_keys=sort_keys)


# --- column values as Hudi maps them ---------------------------------------------------------------


def _column_array(table: pa.Table, name: str) -> pa.Array:
    col = table.column(name)
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    return col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)


def _spark_kind(t: pa.DataType) -> str | None:
    """The Spark type Hudi's clustering frame holds for an Arrow type, as far as the curve mappings
    tell them apart; None for the types they refuse."""
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_int32(t):
        return "int"
    if pa.types.is_int64(t):
        return "long"
    if pa.types.is_float32(t):
        return "float"
    if pa.types.is_float64(t):
        return "double"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or str(t) == "string_view":
        return "string"
    if (
        pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_fixed_size_binary(t)
        or str(t) == "binary_view"
    ):
        return "binary"
    if pa.types.is_date(t):
        return "date"
    if pa.types.is_timestamp(t) and t.tz is not None:
        return "timestamp"
    if pa.types.is_decimal(t):
        return "decimal"
    return None


def _kind(arr: pa.Array, name: str) -> str:
    kind = _spark_kind(arr.type)
    if kind is None:
        raise UnsupportedFeatureError(
            f"cannot order by column {name!r} of type {arr.type} along a z-order or Hilbert curve: "
            "Apache Hudi's SpaceCurveSortingHelper maps longs, ints, doubles, floats, strings, "
            "binaries, dates, timestamps with a time zone, decimals and booleans only"
        )
    return kind


def _nulls(arr: pa.Array) -> npt.NDArray[np.bool_] | None:
    if arr.null_count == 0:
        return None
    return np.asarray(arr.is_null().to_numpy(zero_copy_only=False), dtype=np.bool_)


def _int64s(arr: pa.Array) -> npt.NDArray[np.int64]:
    return np.asarray(pc.fill_null(arr, 0).to_numpy(zero_copy_only=False)).astype(np.int64)


def _millis(arr: pa.Array, kind: str) -> npt.NDArray[np.int64]:
    """What Hudi reads as ``getDate(i).getTime()`` / ``getTimestamp(i).getTime()``: epoch millis.
    A date's midnight is taken in UTC (Spark builds the ``java.sql.Date`` in the JVM's zone)."""
    t = arr.type
    if kind == "date":
        if pa.types.is_date32(t):
            return _int64s(arr.cast(pa.int32())) * _MILLIS_PER_DAY
        return np.floor_divide(_int64s(arr.cast(pa.int64())), _MILLIS_PER_DAY) * _MILLIS_PER_DAY
    values = _int64s(arr.cast(pa.int64()))
    per_milli = {"s": 0, "ms": 1, "us": 1_000, "ns": 1_000_000}[t.unit]
    if per_milli == 0:
        return values * 1000
    return np.floor_divide(values, per_milli)  # Timestamp.getTime() floors sub-millisecond parts


def _decimal_longs(arr: pa.Array) -> npt.NDArray[np.int64]:
    # BigDecimal.longValue(): the fraction dropped, then the low 64 bits; Arrow's unchecked cast
    # does both the same way
    options = pc.CastOptions(pa.int64(), allow_int_overflow=True, allow_decimal_truncate=True)
    return _int64s(pc.cast(arr, options=options))


def _first_eight_bytes(arr: pa.Array) -> _U64:
    """``BinaryUtil.paddingTo8Byte`` of each value's bytes (UTF-8 for strings) read as a big-endian
    unsigned long: the first 8 bytes, or all of them after ``8 - len`` zero bytes."""
    arr = arr.cast(pa.large_binary())
    n = len(arr)
    buffers = arr.buffers()
    offsets = np.frombuffer(buffers[1], dtype=np.int64, count=arr.offset + n + 1)[arr.offset :]
    data = np.frombuffer(buffers[2], dtype=np.uint8) if buffers[2] is not None else np.empty(0, np.uint8)
    if data.size == 0:
        data = np.zeros(1, dtype=np.uint8)
    start = offsets[:-1]
    pad = 8 - np.minimum(offsets[1:] - start, 8)
    out = np.zeros(n, dtype=np.uint64)
    for c in range(8):
        present = c >= pad
        src = np.where(present, start + c - pad, 0)
        byte = np.where(present, data[src], 0).astype(np.uint64)
        out = (out << np.uint64(8)) | byte
    return out


def _double_bits(values: npt.NDArray[np.float64]) -> _U64:
    return np.ascontiguousarray(values, dtype=np.float64).view(np.uint64).copy()


def _zorder_value(arr: pa.Array, kind: str) -> _U64:
    """``mapColumnValueTo8Bytes``: the 8 bytes as a big-endian unsigned long."""
    nulls = _nulls(arr)
    if kind == "long":
        out = _int64s(arr).view(np.uint64) ^ _SIGN
        null_value = _ALL_ONES
    elif kind == "int":
        out = (_int64s(arr).astype(np.int32).view(np.uint32) ^ np.uint32(1 << 31)).astype(np.uint64)
        null_value = _INT_MAX_FLIPPED
    elif kind in ("double", "float"):
        fill = _DOUBLE_MAX if kind == "double" else _FLOAT_MAX
        values = np.asarray(pc.fill_null(arr, fill).to_numpy(zero_copy_only=False)).astype(np.float64)
        # BinaryUtil.doubleTo8Byte: flips the sign bit of a positive, inverts a negative, and leaves
        # 0.0, -0.0 and NaN as their raw bits (so 0.0 sorts before every negative number)
        bits = _double_bits(values)
        out = np.where(values > 0, bits ^ _SIGN, np.where(values < 0, ~bits, bits))
        return out  # nulls were filled with the MAX_VALUE Hudi uses
    elif kind in ("string", "binary"):
        out = _first_eight_bytes(arr)
        null_value = np.uint64(0)  # "" and byte[]{0} both pad to zeros
    elif kind in ("date", "timestamp"):
        out = _millis(arr, kind).view(np.uint64) ^ _SIGN
        null_value = _ALL_ONES
    elif kind == "decimal":
        out = _decimal_longs(arr).view(np.uint64) ^ _SIGN
        null_value = _ALL_ONES
    else:  # boolean: intTo8Byte(1 or 0), null as false
        flags = np.asarray(pc.fill_null(arr, False).to_numpy(zero_copy_only=False), dtype=np.bool_)
        return flags.astype(np.uint64) | np.uint64(1 << 31)
    if nulls is not None:
        out[nulls] = null_value
    return out


def _hilbert_value(arr: pa.Array, kind: str) -> _U64:
    """``mapColumnValueToLong``, as the unsigned long of its two's complement bits."""
    nulls = _nulls(arr)
    if kind in ("long", "int"):
        out = _int64s(arr).view(np.uint64)
    elif kind in ("double", "float"):
        values = np.asarray(pc.fill_null(arr, 0.0).to_numpy(zero_copy_only=False)).astype(np.float64)
        out = _double_bits(values)
        out[np.isnan(values)] = _CANONICAL_NAN
    elif kind in ("string", "binary"):
        out = _first_eight_bytes(arr)
    elif kind in ("date", "timestamp"):
        out = _millis(arr, kind).view(np.uint64)
    elif kind == "decimal":
        out = _decimal_longs(arr).view(np.uint64)
    else:  # boolean: Long.MAX_VALUE for true, 0 for false and null
        flags = np.asarray(pc.fill_null(arr, False).to_numpy(zero_copy_only=False), dtype=np.bool_)
        return np.where(flags, _LONG_MAX, np.uint64(0))
    if nulls is not None:
        out[nulls] = _LONG_MAX
    return out


# --- curves ----------------------------------------------------------------------------------------


def _to_bits(coords: Sequence[_U64], lo: int, hi: int) -> npt.NDArray[np.uint8]:
    """Bit planes ``hi - 1`` down to ``lo`` of k coordinates, interleaved: for each plane, most
    significant first, one bit of each coordinate in list order. Shape (rows, (hi - lo) * k)."""
    rows, k = len(coords[0]), len(coords)
    stacked = np.empty((rows, k), dtype=">u8")  # np.stack would give native byte order
    for i, c in enumerate(coords):
        stacked[:, i] = c
    planes = np.unpackbits(stacked.view(np.uint8).reshape(rows, k, 8), axis=2)
    return planes[:, :, 64 - hi : 64 - lo].transpose(0, 2, 1).reshape(rows, -1)


def _words(key_bytes: npt.NDArray[np.uint8]) -> _U64:
    """Rows of big-endian key bytes as rows of native uint64 words comparing in the same order,
    zero bytes appended to fill the last word."""
    rows, width = key_bytes.shape
    padded = np.zeros((rows, -(-width // 8) * 8), dtype=np.uint8)
    padded[:, :width] = key_bytes
    return padded.view(">u8").astype(np.uint64)


def _spread_table(k: int) -> _U64:
    """For every byte value, its 8 bits (most significant first) moved k bits apart, the first
    to bit 63: where one byte of coordinate 0 lands in the interleaving of k coordinates."""
    values = np.arange(256, dtype=np.uint64)
    table = np.zeros(256, dtype=np.uint64)
    for b in range(8):
        table |= ((values >> np.uint64(7 - b)) & np.uint64(1)) << np.uint64(63 - b * k)
    return table


def _interleave(coords: Sequence[_U64]) -> _U64:
    """All 64 bits of k coordinates interleaved, most significant first, one bit of each
    coordinate in list order (``BinaryUtil.interleaving``), as k uint64 words per row."""
    rows, k = len(coords[0]), len(coords)
    if k > 8:
        return _words(np.packbits(_to_bits(coords, 0, 64), axis=1))
    # Byte j of every coordinate fills k bytes of the result, from byte j * k: build those k bytes
    # left-aligned in a uint64 per j, by table lookups instead of bit by bit.
    spread = _spread_table(k)
    regions = np.zeros((8, rows), dtype=np.uint64)
    byte = np.empty(rows, dtype=np.uint64)
    for d, c in enumerate(coords):
        for j in range(8):
            np.right_shift(c, np.uint64(56 - 8 * j), out=byte)
            np.bitwise_and(byte, np.uint64(0xFF), out=byte)
            regions[j] |= spread[byte] >> np.uint64(d)
    key_bytes = np.ascontiguousarray(regions.T, dtype=">u8").view(np.uint8).reshape(rows, 8, 8)[:, :, :k]
    return _words(key_bytes.reshape(rows, 8 * k))


def _zorder_keys(coords: list[_U64]) -> _U64:
    """``BinaryUtil.interleaving(bytes, 8)`` of every row, as k uint64 words per row."""
    n, k = len(coords[0]), len(coords)
    keys = np.empty((n, k), dtype=np.uint64)
    for lo in range(0, n, _BLOCK):
        hi = min(n, lo + _BLOCK)
        keys[lo:hi] = _interleave([c[lo:hi] for c in coords])
    return keys


def _sort_rows(keys: _U64) -> npt.NDArray[np.intp]:
    """A stable sort of rows of words, lexicographic; most keys differ in their first word."""
    order = np.argsort(keys[:, 0], kind="stable")
    if keys.shape[1] > 1:
        first = keys[order, 0]
        if (first[1:] == first[:-1]).any():
            order = np.lexsort(keys.T[::-1])  # stable, primary key last
    return order


def _hilbert_transpose(coords: Sequence[_U64], bits: int) -> list[_U64]:
    """Skilling's AxestoTranspose over every row at once, as davidmoten's
    ``HilbertCurve.transposedIndex``: the index of each point in transposed form (coordinate i
    holds bits i, i + k, i + 2k, ... of the index counted from the top). Only the low ``bits``
    bits of the coordinates matter, as in the library."""
    mask = np.uint64((1 << bits) - 1)
    x = [np.asarray(c, dtype=np.uint64) & mask for c in coords]
    k = len(x)
    top = 0
    for c in x:
        top |= int(np.bitwise_or.reduce(c)) if c.size else 0
    flag, swap, t = (np.empty_like(x[0]) for _ in range(3))
    one = np.uint64(1)
    for b in range(bits - 1, 0, -1):
        if top >> b == 0:
            # no coordinate has this bit or a higher one: each exchange swaps x[0] and x[i] whole
            for i in range(1, k):
                x[0], x[i] = x[i], x[0]
            continue
        low = np.uint64((1 << b) - 1)
        for i in range(k):
            np.right_shift(x[i], np.uint64(b), out=flag)
            np.bitwise_and(flag, one, out=flag)
            np.negative(flag, out=flag)  # all ones where x[i] has bit b
            np.bitwise_and(flag, low, out=flag)  # where set: invert the low bits of x[0]
            if i:
                # where clear: exchange the low bits of x[0] and x[i]
                np.bitwise_xor(flag, low, out=swap)
                np.bitwise_xor(x[0], x[i], out=t)
                np.bitwise_and(t, swap, out=t)
                np.bitwise_xor(x[i], t, out=x[i])
                np.bitwise_xor(x[0], t, out=x[0])
            np.bitwise_xor(x[0], flag, out=x[0])
    # Gray encode
    for i in range(1, k):
        np.bitwise_xor(x[i], x[i - 1], out=x[i])
    # t collects q - 1 for every bit q (from 2 up to 2^(bits-1)) of x[k-1]: bit j of t is the parity of
    # those bits above j, a suffix XOR
    np.bitwise_and(x[k - 1], mask & ~one, out=t)
    for shift in (1, 2, 4, 8, 16, 32):
        np.bitwise_xor(t, t >> np.uint64(shift), out=t)
    np.right_shift(t, one, out=t)
    for i in range(k):
        np.bitwise_xor(x[i], t, out=x[i])
    return x


def _hilbert_index_bits(coords: Sequence[_U64], bits: int) -> npt.NDArray[np.uint8]:
    """The bits of ``HilbertCurve.bits(bits).dimensions(k).index(point)`` for every row, most
    significant first (shape (rows, bits * k)): davidmoten's ``toIndex`` takes bit ``bits - 1``
    of each transposed coordinate in order, then the next bit, and so on."""
    return _to_bits(_hilbert_transpose(coords, bits), 0, bits)


def _hilbert_keys(coords: list[_U64]) -> _U64:
    """Hudi's Hilbert sort key of every row as uint64 words: ``HilbertCurveUtils.indexBytes``, the
    index's ``BigInteger.toByteArray()`` padded on the left to 63 bytes, or cut to its first 63."""
    n, k = len(coords[0]), len(coords)
    index_bits = _HILBERT_BITS * k
    # toByteArray's length: bitLength / 8 + 1 bytes (a sign bit), so never more than this
    width = index_bits // 8 + 1
    if width <= _HILBERT_KEY_BYTES:
        # Always padded, never cut (7 columns or fewer): the key orders as the index does, and so
        # as the index shifted left by k, the interleaving of the 63-bit coordinates shifted left
        # by one.
        keys = np.empty((n, k), dtype=np.uint64)
        one = np.uint64(1)
        for lo in range(0, n, _BLOCK):
            hi = min(n, lo + _BLOCK)
            transposed = _hilbert_transpose([c[lo:hi] for c in coords], _HILBERT_BITS)
            keys[lo:hi] = _interleave([x << one for x in transposed])
        return keys
    keys = np.empty((n, 8), dtype=np.uint64)
    offsets = np.arange(_HILBERT_KEY_BYTES)
    for lo in range(0, n, _BLOCK):
        hi = min(n, lo + _BLOCK)
        index = _hilbert_index_bits([c[lo:hi] for c in coords], _HILBERT_BITS)
        rows = hi - lo
        # right-aligned in `width` bytes, so the first byte is always zero (the sign byte)
        aligned = np.zeros((rows, width * 8), dtype=np.uint8)
        aligned[:, width * 8 - index_bits :] = index
        magnitude = np.packbits(aligned, axis=1)
        nonzero = magnitude != 0
        first = np.argmax(nonzero, axis=1)
        lead = magnitude[np.arange(rows), first]
        bit_length = np.where(nonzero.any(axis=1), (width - first - 1) * 8 + _BIT_LENGTH[lead], 0)
        length = bit_length // 8 + 1
        # toByteArray() is the last `length` bytes: left-padded when short, its head when long
        start = width - np.maximum(length, _HILBERT_KEY_BYTES)
        key = magnitude[np.arange(rows)[:, None], start[:, None] + offsets]
        keys[lo:hi] = _words(key)
    return keys
