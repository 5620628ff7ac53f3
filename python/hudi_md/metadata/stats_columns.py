"""``column_stats`` / ``partition_stats`` records decoded and merged column-wise, for plans that
prune many entries.

A filter on a data column of a table of 100k partitions reads 100k ``partition_stats`` records
(``HoodieMetadataColumnStats``, whose min/max are a union of value-wrapper records), and fastavro
takes ~30-80 µs a record. Here the records of a cell run (an HFile base file or an HFILE_DATA log
block) are decoded together, a field at a time over all of them (:mod:`formats.avro_columns`),
and their min/max become typed columns (:class:`StatValues`: the kind of Python value the
record-wise path makes, :func:`records.normalize`, and that value in an int, float or binary
column), which :mod:`planning.stats_arrow` turns into its stats table without a Python object per
record.

The answer is exact or absent, never a guess: a writer schema of another shape, a record of
another type or payload, a wrapper or value type whose typed value is not one of the kinds below
(decimals of old tables, times, arrays, UUIDs), bytes left over or missing: None, and the caller
reads the records one by one. Merging follows the record-wise read: a key with one record is that
record; a key whose newest event is a delete is gone; a key whose newest record is a tight bound or
deleted is that record (what :func:`records.merge` gives whatever came before); any other key with
more than one event is folded by :func:`records.merge` itself, its records decoded by fastavro.
"""

from __future__ import annotations

import datetime
import decimal
import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_md.formats.avro import decode_schemaless
from hudi_md.formats.avro_columns import Records, Unexpected, binaries, strings
from hudi_md.formats.hfile import CellColumns
from hudi_md.metadata.records import Record, is_live, merge, normalize, typed_stat_value

__all__ = [
    "Deletes",
    "StatKind",
    "StatValues",
    "StatsColumns",
    "StatsRun",
    "StatsShape",
    "decode_stats_columns",
    "merge_stats_runs",
    "stats_record_shape",
    "typed_values_of",
]


class StatKind:
    """What a min/max is once the record-wise path has unwrapped and typed it: the Python type of
    its value (bool, int, float, Decimal, str, bytes, date, naive datetime, UTC datetime), and where
    :class:`StatValues` holds it: BOOL, INT, DATE (days), DATETIME / DATETIME_UTC (microseconds
    since the epoch) and DECIMAL (unscaled, with ``scale``) in ``integer``, FLOAT in ``floating``,
    STR and BYTES in ``binary``. Plain ints, for numpy."""

    NONE, BOOL, INT, FLOAT, DECIMAL, STR, BYTES, DATE, DATETIME, DATETIME_UTC = range(10)


# The wrapper records of the min/max union, by what their value is on the wire.
_W_NULL, _W_BOOL, _W_INT, _W_FLOAT, _W_DOUBLE, _W_BYTES, _W_STRING, _W_DATE, _W_TIMESTAMP = range(9)
_W_UNSUPPORTED = 99  # DecimalWrapper, TimeMicrosWrapper, ArrayWrapper, or a definition not known
_WRAPPERS = {
    "BooleanWrapper": ("boolean", _W_BOOL),
    "IntWrapper": ("int", _W_INT),
    "LongWrapper": ("long", _W_INT),
    "FloatWrapper": ("float", _W_FLOAT),
    "DoubleWrapper": ("double", _W_DOUBLE),
    "BytesWrapper": ("bytes", _W_BYTES),
    "StringWrapper": ("string", _W_STRING),
    "DateWrapper": ("int", _W_DATE),
    "LocalDateWrapper": ("int", _W_DATE),
    "TimestampMicrosWrapper": ("long", _W_TIMESTAMP),
}
_PAYLOAD_NAMES = ["key", "type", "filesystemMetadata", "BloomFilterMetadata", "ColumnStatsMetadata"]
_STATS_NAMES = [
    "fileName",
    "columnName",
    "minValue",
    "maxValue",
    "valueCount",
    "nullCount",
    "totalSize",
    "totalUncompressedSize",
    "isDeleted",
]
# valueType ordinals (org.apache.hudi.stats.ValueType) that records.typed_stat_value applies to an
# int value (DATE, TIME_*, TIMESTAMP_*, LOCAL_TIMESTAMP_*) and to bytes (DECIMAL, UUID)
_DATE, _DECIMAL, _UUID = 12, 10, 11
_TIMES = (13, 14)
_TIMESTAMPS = {
    15: (1000, False),
    16: (1, False),
    17: (-1000, False),
    18: (1000, True),
    19: (1, True),
    20: (-1000, True),
}
# Python's date and datetime ranges: a value outside makes the record-wise path raise
_DAYS = (-719_162, 2_932_896)
_MICROS = (-62_135_596_800_000_000, 253_402_300_799_999_999)
_EPOCH_DATE = datetime.date(1970, 1, 1)
_EPOCH = datetime.datetime(1970, 1, 1)
_EPOCH_UTC = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_MICROSECOND = datetime.timedelta(microseconds=1)
_INT64 = (-(2**63), 2**63 - 1)


# --------------------------------------------------------------------------- the writer schema


@dataclass(frozen=True)
class StatsShape:
    """A writer schema of the known ``column_stats`` shape: what the decoder steps over."""

    nullable_before_key: int
    wrappers: tuple[int, ...]  # the wire kind of each non-null branch of minValue / maxValue
    tight_bound: bool  # HoodieMetadataColumnStats has isTightBound
    value_type: bool  # ... and valueType
    unions_after: int  # [null, ...] payload unions after ColumnStatsMetadata


def _short(name: Any) -> str | None:
    return name.rsplit(".", 1)[-1] if isinstance(name, str) else None


def _is_string(t: Any) -> bool:
    return t == "string" or (isinstance(t, dict) and t.get("type") == "string" and "logicalType" not in t)


def _is_nullable(t: Any, inner: Any = None) -> bool:
    if not (isinstance(t, list) and len(t) == 2 and t[0] == "null"):
        return False
    return inner is None or inner(t[1])


def _wrapper_kind(definition: Any) -> tuple[str, int] | None:
    """(short name, wire kind) of a min/max union branch defined in place."""
    if not isinstance(definition, dict) or definition.get("type") != "record":
        return None
    name = _short(definition.get("name"))
    fields = definition.get("fields")
    if name is None or not isinstance(fields, list):
        return None
    known = _WRAPPERS.get(name)
    if known is None or len(fields) != 1 or fields[0].get("name") != "value":
        return name, _W_UNSUPPORTED
    t = fields[0].get("type")
    plain = known[0] == "string" and _is_string(t)
    return name, known[1] if plain or t == known[0] else _W_UNSUPPORTED


@lru_cache(maxsize=8)
def stats_record_shape(schema_json: str) -> StatsShape | None:
    """The shape of a ``column_stats`` / ``partition_stats`` writer schema, or None for a schema
    of another shape."""
    try:
        schema = json.loads(schema_json)
    except ValueError:
        return None
    fields = schema.get("fields") if isinstance(schema, dict) else None
    if not isinstance(fields, list) or not all(isinstance(f, dict) for f in fields):
        return None
    names = [f.get("name") for f in fields]
    if "key" not in names:
        return None
    at = names.index("key")
    if not all(_is_nullable(f.get("type"), _is_string) for f in fields[:at]):
        return None
    rest = fields[at:]
    after = [f.get("name") for f in rest[len(_PAYLOAD_NAMES) :]]
    if [f.get("name") for f in rest[: len(_PAYLOAD_NAMES)]] != _PAYLOAD_NAMES or after not in (
        ["recordIndexMetadata"],
        ["recordIndexMetadata", "SecondaryIndexMetadata"],
    ):
        return None
    key, kind, files, bloom, stats = (f.get("type") for f in rest[: len(_PAYLOAD_NAMES)])
    if not _is_string(key) or kind != "int" or not _is_nullable(files) or not _is_nullable(bloom):
        return None
    if not all(_is_nullable(f.get("type")) for f in rest[len(_PAYLOAD_NAMES) :]):
        return None
    if not _is_nullable(stats, lambda r: isinstance(r, dict) and r.get("type") == "record"):
        return None
    record_fields = stats[1].get("fields")
    if not isinstance(record_fields, list) or not all(isinstance(f, dict) for f in record_fields):
        return None
    by_name = {f.get("name"): f.get("type") for f in record_fields}
    listed = [f.get("name") for f in record_fields]
    extra = listed[len(_STATS_NAMES) :]
    if listed[: len(_STATS_NAMES)] != _STATS_NAMES or extra not in (
        [],
        ["isTightBound"],
        ["isTightBound", "valueType"],
    ):
        return None
    if not (
        _is_nullable(by_name["fileName"], _is_string) and _is_nullable(by_name["columnName"], _is_string)
    ):
        return None
    counts = ("valueCount", "nullCount", "totalSize", "totalUncompressedSize")
    if any(by_name[c] != ["null", "long"] for c in counts) or by_name["isDeleted"] != "boolean":
        return None
    if extra and by_name["isTightBound"] != "boolean":
        return None
    if "valueType" in by_name and not _is_value_type(by_name["valueType"]):
        return None
    wrappers = _wrapper_union(by_name["minValue"], by_name["maxValue"])
    if wrappers is None:
        return None
    return StatsShape(at, wrappers, "isTightBound" in by_name, "valueType" in by_name, len(after))


def _is_value_type(t: Any) -> bool:
    if not _is_nullable(t, lambda r: isinstance(r, dict) and r.get("type") == "record"):
        return False
    fields = [(f.get("name"), f.get("type")) for f in t[1].get("fields") or [] if isinstance(f, dict)]
    return (
        len(fields) == 2
        and fields[0] == ("typeOrdinal", "int")
        and fields[1][0] == "additionalInfo"
        and _is_nullable(fields[1][1], _is_string)
    )


def _wrapper_union(min_type: Any, max_type: Any) -> tuple[int, ...] | None:
    """The wire kinds of the min/max union's branches; maxValue names the records minValue
    defines, in the same order."""
    if not (isinstance(min_type, list) and isinstance(max_type, list) and len(min_type) == len(max_type)):
        return None
    if not min_type or min_type[0] != "null" or max_type[0] != "null":
        return None
    kinds = []
    for defined, named in zip(min_type[1:], max_type[1:], strict=True):
        found = _wrapper_kind(defined)
        if found is None or _short(named) != found[0]:
            return None
        kinds.append(found[1])
    return tuple(kinds)


# --------------------------------------------------------------------------- decoding a run


@dataclass(frozen=True)
class _Wrapped:
    """The min or max of a run's records as on the wire."""

    wire: np.ndarray  # int64 wire kind (_W_*) per record
    integer: np.ndarray  # int64: booleans, ints, longs, dates, timestamps
    floating: np.ndarray  # float64: floats, doubles
    start: np.ndarray  # int64: where a string's / bytes' bytes start in the buffer
    length: np.ndarray


@dataclass(frozen=True)
class StatsRun:
    """The decoded records of one cell run, one row per record."""

    cells: CellColumns
    schema: str  # the writer schema (the fold decodes a record again with it)
    types: np.ndarray  # int64 record type
    file_name: pa.StringArray  # null when the record has none
    column_name: pa.StringArray
    min: _Wrapped
    max: _Wrapped
    value_count: pa.Int64Array
    null_count: pa.Int64Array
    is_deleted: np.ndarray  # bool
    tight_bound: np.ndarray  # bool
    ordinal: np.ndarray  # int64 valueType.typeOrdinal, -1 without a valueType
    additional_info: pa.StringArray

    def __len__(self) -> int:
        return len(self.types)


def decode_stats_columns(cells: CellColumns, schema: str) -> StatsRun | None:
    """The records of a cell run (in HFile order), or None when the writer schema or any record
    is not of the known shape."""
    shape = stats_record_shape(schema)
    if shape is None:
        return None
    try:
        return _decode(cells, schema, shape)
    except (Unexpected, IndexError):
        return None


def _decode(cells: CellColumns, schema: str, shape: StatsShape) -> StatsRun:
    n = len(cells)
    buf = cells.buffer
    r = Records(buf, cells.value_start, cells.value_start + cells.value_len)
    for _ in range(shape.nullable_before_key):
        r.skip_nullable_string()
    r.span()  # key: blank in MDT values, the cell's row is the key
    types = r.long()
    r.null()  # filesystemMetadata
    r.null()  # BloomFilterMetadata
    if not r.branch(2).all():
        raise Unexpected  # a record without ColumnStatsMetadata
    file_name = _nullable_string(r, buf)
    column_name = _nullable_string(r, buf)
    low = _wrapped(r, shape.wrappers)
    high = _wrapped(r, shape.wrappers)
    value_count, null_count = _nullable_long(r), _nullable_long(r)
    _nullable_long(r)  # totalSize
    _nullable_long(r)  # totalUncompressedSize
    is_deleted = r.boolean()
    tight = r.boolean() if shape.tight_bound else np.zeros(n, bool)
    ordinal = np.full(n, -1, np.int64)
    info = pa.nulls(n, pa.string())
    if shape.value_type:
        typed = np.flatnonzero(r.branch(2))
        if typed.size:
            ordinal[typed] = r.long(typed)
            info = _nullable_string(r, buf, typed, n)
    for _ in range(shape.unions_after):
        r.null()
    r.at_ends()
    return StatsRun(
        cells,
        schema,
        types,
        file_name,
        column_name,
        low,
        high,
        value_count,
        null_count,
        is_deleted,
        tight,
        ordinal,
        info,
    )


def _nullable_string(
    r: Records, buf: np.ndarray, rows: np.ndarray | None = None, n: int = 0
) -> pa.StringArray:
    """A ``[null, string]`` of every record (of ``rows``, the others null; ``n`` records in all)."""
    total = len(r) if rows is None else n
    rows = np.arange(total) if rows is None else rows
    some = rows[r.branch(2, rows) == 1]
    start = np.zeros(total, np.int64)
    length = np.zeros(total, np.int64)
    if some.size:
        start[some], length[some] = r.span(some)
    present = np.zeros(total, bool)
    present[some] = True
    values = strings(buf, start, length)
    return pc.if_else(pa.array(present), values, pa.nulls(total, pa.string()))


def _nullable_long(r: Records) -> pa.Int64Array:
    some = np.flatnonzero(r.branch(2))
    values = np.zeros(len(r), np.int64)
    if some.size:
        values[some] = r.long(some)
    present = np.zeros(len(r), bool)
    present[some] = True
    return pa.array(values, pa.int64(), mask=~present)


def _wrapped(r: Records, wrappers: tuple[int, ...]) -> _Wrapped:
    n = len(r)
    wire = np.asarray((_W_NULL, *wrappers), np.int64)[r.branch(1 + len(wrappers))]
    integer = np.zeros(n, np.int64)
    floating = np.zeros(n, np.float64)
    start = np.zeros(n, np.int64)
    length = np.zeros(n, np.int64)
    for kind in np.unique(wire).tolist():
        rows = np.flatnonzero(wire == kind)
        if kind == _W_NULL:
            continue
        if kind == _W_BOOL:
            integer[rows] = r.boolean(rows)
        elif kind in (_W_INT, _W_DATE, _W_TIMESTAMP):
            integer[rows] = r.long(rows)
        elif kind in (_W_FLOAT, _W_DOUBLE):
            floating[rows] = r.fixed_float(4 if kind == _W_FLOAT else 8, rows)
        elif kind in (_W_BYTES, _W_STRING):
            start[rows], length[rows] = r.span(rows)
        else:
            raise Unexpected  # a wrapper whose typed value is not one of the kinds
    return _Wrapped(wire, integer, floating, start, length)


# --------------------------------------------------------------------------- typed values


@dataclass(frozen=True)
class StatValues:
    """Typed min or max values, one per record: a :class:`StatKind` and the value in the column
    that kind uses (the others hold zeros or nulls)."""

    kind: np.ndarray  # int8
    integer: np.ndarray  # int64
    floating: np.ndarray  # float64
    binary: pa.BinaryArray  # STR (UTF-8) and BYTES values
    scale: np.ndarray  # int64: a DECIMAL's scale

    def __len__(self) -> int:
        return len(self.kind)

    def take(self, rows: np.ndarray) -> StatValues:
        return StatValues(
            self.kind[rows],
            self.integer[rows],
            self.floating[rows],
            self.binary.take(pa.array(rows, pa.int64())),
            self.scale[rows],
        )

    @staticmethod
    def concat(parts: Sequence[StatValues]) -> StatValues:
        return StatValues(
            np.concatenate([p.kind for p in parts]),
            np.concatenate([p.integer for p in parts]),
            np.concatenate([p.floating for p in parts]),
            pa.concat_arrays([p.binary for p in parts]),
            np.concatenate([p.scale for p in parts]),
        )


def _typed(run: StatsRun, side: _Wrapped, rows: np.ndarray) -> StatValues:
    """The typed values (``records.typed_stat_value`` of the unwrapped ones) of ``rows``;
    :class:`Unexpected` for a value whose type is not one of the kinds, or that the record-wise
    path cannot make (a date out of Python's range)."""
    wire = side.wire[rows]
    ordinal = run.ordinal[rows]
    integer = side.integer[rows].copy()
    kind = np.full(len(rows), StatKind.NONE, np.int8)
    scale = np.zeros(len(rows), np.int64)
    on_int = (wire == _W_INT) | (wire == _W_BOOL)
    if (on_int & np.isin(ordinal, _TIMES)).any():
        raise Unexpected  # times
    if ((wire == _W_BOOL) & np.isin(ordinal, [_DATE, *_TIMESTAMPS])).any():
        raise Unexpected  # a boolean read as a date or timestamp
    kind[wire == _W_BOOL] = StatKind.BOOL
    plain_int = (wire == _W_INT) & ~np.isin(ordinal, [_DATE, *_TIMESTAMPS])
    kind[plain_int] = StatKind.INT
    kind[(wire == _W_FLOAT) | (wire == _W_DOUBLE)] = StatKind.FLOAT
    kind[wire == _W_STRING] = StatKind.STR
    dates = (wire == _W_DATE) | ((wire == _W_INT) & (ordinal == _DATE))
    kind[dates] = StatKind.DATE
    if ((integer[dates] < _DAYS[0]) | (integer[dates] > _DAYS[1])).any():
        raise Unexpected
    kind[wire == _W_TIMESTAMP] = StatKind.DATETIME_UTC
    for ord_, (factor, local) in _TIMESTAMPS.items():
        at = np.flatnonzero((wire == _W_INT) & (ordinal == ord_))
        if not at.size:
            continue
        raw = integer[at]
        if factor == 1000:  # milliseconds
            if ((raw < _MICROS[0] // 1000) | (raw > _MICROS[1] // 1000 + 1)).any():
                raise Unexpected
            integer[at] = raw * 1000
        elif factor == -1000:  # nanoseconds, floored as Python's //
            integer[at] = raw // 1000
        kind[at] = StatKind.DATETIME if local else StatKind.DATETIME_UTC
    stamps = (kind == StatKind.DATETIME) | (kind == StatKind.DATETIME_UTC)
    if ((integer[stamps] < _MICROS[0]) | (integer[stamps] > _MICROS[1])).any():
        raise Unexpected
    on_bytes = wire == _W_BYTES
    if (on_bytes & (ordinal == _UUID)).any():
        raise Unexpected
    kind[on_bytes & (ordinal != _DECIMAL)] = StatKind.BYTES
    decimals = np.flatnonzero(on_bytes & (ordinal == _DECIMAL))
    if decimals.size:
        integer[decimals], scale[decimals] = _decimals(run, side, rows[decimals])
        kind[decimals] = StatKind.DECIMAL
    text = wire == _W_STRING
    some = text | (kind == StatKind.BYTES)
    buf = run.cells.buffer
    start, length = side.start[rows], side.length[rows]
    values = binaries(buf, np.where(some, start, 0), np.where(some, length, 0))
    if text.any():
        strings(buf, start[text], length[text])  # UTF-8, as fastavro insists
    binary = pc.if_else(pa.array(some), values, pa.nulls(len(rows), pa.binary()))
    return StatValues(
        kind, np.where(kind == StatKind.NONE, 0, integer), side.floating[rows].copy(), binary, scale
    )


def _decimals(run: StatsRun, side: _Wrapped, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unscaled values and scales of V2 decimals (big-endian two's complement bytes); unscaled
    values wider than 8 bytes are not taken."""
    length = side.length[rows]
    if (length > 8).any():
        raise Unexpected
    start = side.start[rows]
    buf = run.cells.buffer
    unsigned = np.zeros(len(rows), np.uint64)
    for i in range(8):
        has = length > i
        byte = buf[np.where(has, start + i, 0)].astype(np.uint64)
        unsigned = np.where(has, (unsigned << np.uint64(8)) | byte, unsigned)
    value = unsigned.view(np.int64)  # eight bytes: already the two's complement
    negative = (length > 0) & (length < 8) & (buf[start] >= 0x80)
    value = np.where(negative, value - (np.int64(1) << (8 * length)), value)
    infos = run.additional_info.take(pa.array(rows, pa.int64())).to_pylist()
    return value, np.asarray([_decimal_scale(i) for i in infos], np.int64)


@lru_cache(maxsize=64)
def _decimal_scale(info: str | None) -> int:
    """The scale ``records.typed_stat_value`` reads from a DECIMAL's additionalInfo (asked of it,
    so the two cannot differ)."""
    try:
        probe = typed_stat_value(b"\x01", {"typeOrdinal": _DECIMAL, "additionalInfo": info})
    except (ValueError, IndexError, decimal.DecimalException) as e:
        raise Unexpected from e
    exponent = probe.as_tuple().exponent
    if not isinstance(exponent, int):
        raise Unexpected
    return -exponent


def typed_values_of(values: Sequence[Any]) -> StatValues:
    """Typed values as the record-wise path holds them (a merged record's min or max), in the
    columns of :class:`StatValues`; :class:`Unexpected` for a value of another type."""
    n = len(values)
    kind = np.zeros(n, np.int8)
    integer = np.zeros(n, np.int64)
    floating = np.zeros(n, np.float64)
    scale = np.zeros(n, np.int64)
    binary: list[bytes | None] = [None] * n
    for i, v in enumerate(values):
        if v is None:
            continue
        if isinstance(v, bool):
            kind[i], integer[i] = StatKind.BOOL, int(v)
        elif isinstance(v, int):
            if not _INT64[0] <= v <= _INT64[1]:
                raise Unexpected
            kind[i], integer[i] = StatKind.INT, v
        elif isinstance(v, float):
            kind[i], floating[i] = StatKind.FLOAT, v
        elif isinstance(v, decimal.Decimal):
            sign, digits, exponent = v.as_tuple()
            if not isinstance(exponent, int):
                raise Unexpected  # NaN, infinity
            unscaled = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
            if not _INT64[0] <= unscaled <= _INT64[1]:
                raise Unexpected
            kind[i], integer[i], scale[i] = StatKind.DECIMAL, unscaled, -exponent
        elif isinstance(v, str):
            kind[i], binary[i] = StatKind.STR, v.encode("utf-8")
        elif isinstance(v, (bytes, bytearray)):
            kind[i], binary[i] = StatKind.BYTES, bytes(v)
        elif isinstance(v, datetime.datetime):
            if v.tzinfo is None:
                kind[i], integer[i] = StatKind.DATETIME, (v - _EPOCH) // _MICROSECOND
            else:
                kind[i], integer[i] = StatKind.DATETIME_UTC, (v - _EPOCH_UTC) // _MICROSECOND
        elif isinstance(v, datetime.date):
            kind[i], integer[i] = StatKind.DATE, (v - _EPOCH_DATE).days
        else:
            raise Unexpected  # times, arrays: not kinds the column-wise path holds
    return StatValues(kind, integer, floating, pa.array(binary, pa.binary()), scale)


# --------------------------------------------------------------------------- merging


@dataclass(frozen=True)
class StatsColumns:
    """Merged, live ``column_stats`` / ``partition_stats`` records, one row per record: its key,
    file name and column name (``""`` when the record has none), counts and typed min/max."""

    keys: pa.StringArray
    file_name: pa.StringArray
    column_name: pa.StringArray
    null_count: pa.Int64Array
    value_count: pa.Int64Array
    min: StatValues
    max: StatValues

    def __len__(self) -> int:
        return len(self.keys)

    def take(self, rows: np.ndarray) -> StatsColumns:
        at = pa.array(rows, pa.int64())
        return StatsColumns(
            self.keys.take(at),
            self.file_name.take(at),
            self.column_name.take(at),
            self.null_count.take(at),
            self.value_count.take(at),
            self.min.take(rows),
            self.max.take(rows),
        )

    @staticmethod
    def concat(parts: Sequence[StatsColumns]) -> StatsColumns:
        return StatsColumns(
            pa.concat_arrays([p.keys for p in parts]),
            pa.concat_arrays([p.file_name for p in parts]),
            pa.concat_arrays([p.column_name for p in parts]),
            pa.concat_arrays([p.null_count for p in parts]),
            pa.concat_arrays([p.value_count for p in parts]),
            StatValues.concat([p.min for p in parts]),
            StatValues.concat([p.max for p in parts]),
        )


def _of_run(run: StatsRun, rows: np.ndarray) -> StatsColumns:
    at = pa.array(rows, pa.int64())
    return StatsColumns(
        _utf8(run.cells.rows.take(at)),
        pc.fill_null(run.file_name.take(at), ""),
        pc.fill_null(run.column_name.take(at), ""),
        run.null_count.take(at),
        run.value_count.take(at),
        _typed(run, run.min, rows),
        _typed(run, run.max, rows),
    )


def _of_records(records: Sequence[tuple[str, Record]]) -> StatsColumns:
    stats = [r["ColumnStatsMetadata"] for _, r in records]
    return StatsColumns(
        pa.array([k for k, _ in records], pa.string()),
        pa.array([s.get("fileName") or "" for s in stats], pa.string()),
        pa.array([s.get("columnName") or "" for s in stats], pa.string()),
        _counts([s.get("nullCount") for s in stats]),
        _counts([s.get("valueCount") for s in stats]),
        typed_values_of([s.get("minValue") for s in stats]),
        typed_values_of([s.get("maxValue") for s in stats]),
    )


def _counts(values: list[Any]) -> pa.Int64Array:
    if any(v is not None and type(v) is not int for v in values):
        raise Unexpected
    try:
        return pa.array(values, pa.int64())
    except (pa.ArrowException, OverflowError) as e:
        raise Unexpected from e


def _utf8(rows: pa.BinaryArray) -> pa.StringArray:
    try:
        return rows.cast(pa.string())
    except pa.ArrowInvalid as e:
        raise Unexpected from e


@dataclass(frozen=True)
class Deletes:
    """The keys a DELETE block of the slice deleted (those the read selects)."""

    keys: Sequence[str]


def merge_stats_runs(events: Sequence[StatsRun | Deletes], record_type: int) -> StatsColumns | None:
    """The merged, live records of one file slice from its ``events`` in merge order (the base
    file's run, then each valid log block's run or deletes), as :meth:`MetadataTable.read_slice_records`
    and :func:`records.is_live` make them; None when a record is not a stats record of
    ``record_type`` or a merged value is not one of the kinds."""
    try:
        return _merge(events, record_type)
    except Unexpected:
        return None


def _merge(events: Sequence[StatsRun | Deletes], record_type: int) -> StatsColumns:
    runs = [e for e in events if isinstance(e, StatsRun)]
    if any((run.types != record_type).any() for run in runs):
        raise Unexpected
    # one row per event: each record of each run, and each deleted key, in merge order
    keys: list[pa.Array] = []
    source: list[np.ndarray] = []  # the run's index in ``events``, -1 for a delete
    row: list[np.ndarray] = []
    final_flag: list[np.ndarray] = []  # a record that is its key's merge whatever came before it
    for i, e in enumerate(events):
        if isinstance(e, StatsRun):
            keys.append(_utf8(e.cells.rows))
            source.append(np.full(len(e), i, np.int64))
            row.append(np.arange(len(e), dtype=np.int64))
            final_flag.append(e.tight_bound | e.is_deleted)
        elif e.keys:
            keys.append(pa.array(list(e.keys), pa.string()))
            source.append(np.full(len(e.keys), -1, np.int64))
            row.append(np.zeros(len(e.keys), np.int64))
            final_flag.append(np.ones(len(e.keys), bool))
    if not keys:
        return _of_records([])
    all_keys = pa.concat_arrays(keys)
    src, at, final = np.concatenate(source), np.concatenate(row), np.concatenate(final_flag)
    # A key with one event is that event (a delete: gone); only keys with more are sorted
    again = _repeated(all_keys)
    repeated, once = np.flatnonzero(again), np.flatnonzero(~again)
    taken = [once[src[once] >= 0]]
    histories: list[tuple[str, np.ndarray]] = []
    if repeated.size:
        # by key, and a key's events in merge order
        events_table = pa.table({"key": all_keys.take(pa.array(repeated)), "seq": repeated})
        order = repeated[
            pc.sort_indices(events_table, [("key", "ascending"), ("seq", "ascending")]).to_numpy()
        ]
        sorted_keys = all_keys.take(pa.array(order))
        n = len(order)
        first = np.ones(n, bool)
        first[1:] = pc.not_equal(sorted_keys.slice(1), sorted_keys.slice(0, n - 1)).to_numpy(
            zero_copy_only=False
        )
        starts = np.flatnonzero(first)
        ends = np.append(starts[1:], n)
        last = order[ends - 1]  # each key's newest event
        # newest a tight bound, a deleted record or a delete: that event, whatever came before
        # (records.merge returns the newer one); else the key's history is folded by records.merge
        taken.append(last[final[last] & (src[last] >= 0)])
        for g in np.flatnonzero(~final[last]).tolist():
            histories.append((sorted_keys[int(starts[g])].as_py(), order[starts[g] : ends[g]]))
    taken_events = np.concatenate(taken)
    parts = []
    for i, e in enumerate(events):
        if isinstance(e, StatsRun):
            mine = np.sort(at[taken_events[src[taken_events] == i]])
            live = mine[~e.is_deleted[mine]]
            if live.size:
                parts.append(_of_run(e, live))
    folded = []
    for key, history in histories:
        record = _fold(events, src, at, history, key)
        if record is not None and is_live(record):
            folded.append((key, record))
    if folded:
        parts.append(_of_records(folded))
    return StatsColumns.concat(parts) if parts else _of_records([])


def _repeated(keys: pa.StringArray) -> np.ndarray:
    """Whether each key occurs more than once (pc.unique first: most runs repeat no key)."""
    if len(pc.unique(keys)) == len(keys):
        return np.zeros(len(keys), bool)
    counts = pc.value_counts(keys)
    again = counts.field("values").filter(pc.greater(counts.field("counts"), 1))
    return pc.is_in(keys, value_set=again).to_numpy(zero_copy_only=False)


def _fold(
    events: Sequence[StatsRun | Deletes], src: np.ndarray, at: np.ndarray, history: np.ndarray, key: str
) -> Record | None:
    """One key's events folded as the record-wise read folds them: a delete empties it, a record
    merges into it by :func:`records.merge`, decoded by fastavro and :func:`records.normalize`."""
    merged: Record | None = None
    for event in history.tolist():
        if src[event] < 0:
            merged = None
            continue
        run = events[int(src[event])]
        assert isinstance(run, StatsRun)
        cells = run.cells
        start = int(cells.value_start[at[event]])
        value = cells.buffer[start : start + int(cells.value_len[at[event]])].tobytes()
        try:
            record = normalize(decode_schemaless(value, run.schema, return_record_name=True))
        except Exception as e:  # fastavro's many errors: the record-wise read reports it
            raise Unexpected from e
        record["key"] = key
        merged = merge(merged, record)
    return merged
