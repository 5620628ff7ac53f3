"""Small Avro helpers shared by the log-file, HFile-value and timeline decoders.

Hudi uses Avro in two shapes: *object container files* (timeline instants, with the writer schema
embedded) and *schemaless binary* (log-block records, delete lists, HFile values; the writer schema
comes from a block header or the HFile file info). Both are decoded with fastavro here so that every
caller parses a given schema string once per process and turns Hudi's value-wrapper records into
plain Python values the same way.
"""

from __future__ import annotations

import datetime
import decimal
import functools
import io
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeAlias, cast

import fastavro

if TYPE_CHECKING:
    from fastavro.types import AvroMessage

from hudi_md.errors import CommitMetadataError, UnsupportedFeatureError

__all__ = [
    "WRAPPER_NAMESPACE",
    "AvroSchema",
    "decode_schemaless",
    "parse_schema",
    "read_container",
    "unwrap_value",
]

WRAPPER_NAMESPACE = "org.apache.hudi.avro.model"

# An Avro schema: its JSON text, or parsed (fastavro's ``Schema``: a name, a union list, a dict).
AvroSchema: TypeAlias = str | list[Any] | dict[str, Any]

_EPOCH_DATE = datetime.date(1970, 1, 1)
_EPOCH_UTC = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
# DecimalWrapper.value is bytes with logicalType decimal(30, 15) in HoodieMetadata.avsc.
_DECIMAL_WRAPPER_SCALE = 15


@functools.lru_cache(maxsize=256)
def parse_schema(json_str: str) -> AvroSchema:
    """Parse an Avro schema JSON string with fastavro, cached by the exact string.

    Every block of a log file (and every HFile value) repeats the same schema string; caching by
    string makes parsing a once-per-process cost. The returned object is shared between callers
    and must not be mutated.
    """
    return fastavro.parse_schema(json.loads(json_str))


def _as_parsed(schema: AvroSchema) -> AvroSchema:
    if isinstance(schema, str):
        return parse_schema(schema)
    return schema


def decode_schemaless(
    data: bytes | memoryview,
    writer_schema: AvroSchema,
    reader_schema: AvroSchema | None = None,
    *,
    return_record_name: bool = False,
    return_record_name_override: bool = False,
    exact: bool = False,
) -> Any:
    """Decode one schemaless Avro datum.

    ``writer_schema``/``reader_schema`` may be JSON strings (parsed through the cache) or schemas
    already parsed by :func:`parse_schema`. With ``return_record_name=True`` a union branch that is
    a record comes back as ``(full_name, dict)``; that is what :func:`unwrap_value` needs to tell
    ``IntWrapper`` from ``DateWrapper`` (both hold an int). Adding
    ``return_record_name_override=True`` keeps ``[null, record]`` unions as plain dicts, so only
    the multi-record unions (the wrapper unions of column stats) come back as tuples.

    With ``exact=True`` the datum must use every byte of ``data`` (``ValueError`` otherwise): when
    the length of a datum is known, a mismatch means the schema does not fit the bytes.

    Raises whatever fastavro raises on malformed input (EOFError, ValueError, ...); callers wrap
    that into their own file-naming error.
    """
    stream = io.BytesIO(data)
    value = fastavro.schemaless_reader(
        stream,
        _as_parsed(writer_schema),
        None if reader_schema is None else _as_parsed(reader_schema),
        return_record_name=return_record_name,
        return_record_name_override=return_record_name_override,
    )
    if exact and stream.tell() != len(data):
        raise ValueError(f"Avro datum used {stream.tell()} of its {len(data)} bytes")
    return value


def read_container(data: bytes, name: str) -> list[AvroMessage]:
    """All records of an Avro object container file (``Obj\\x01`` magic, schema embedded): dicts
    when the file's schema is a record, as Hudi's timeline files' are (the caller checks).

    Strict where fastavro is lenient, since these are timeline instants and a half-used one is a
    wrong answer: every block's records must use up exactly the block's bytes (zeroed or altered
    bytes otherwise still decode as records with other values), every block ends with the file's
    sync marker, and nothing follows the last block. Errors become :class:`CommitMetadataError`
    naming ``name``.
    """
    if data[:4] != b"Obj\x01":
        raise CommitMetadataError(name, "not an Avro object container file (bad magic)")
    try:
        return _read_container_strict(bytes(data), name)
    except CommitMetadataError:
        raise
    except Exception as exc:  # fastavro raises many types (EOFError, ValueError, SchemaParseException...)
        raise CommitMetadataError(name, f"cannot decode Avro container: {type(exc).__name__}: {exc}") from exc


_HEADER_SCHEMA = fastavro.parse_schema(
    {
        "type": "record",
        "name": "org.apache.avro.file.Header",
        "fields": [
            {"name": "magic", "type": {"type": "fixed", "name": "Magic", "size": 4}},
            {"name": "meta", "type": {"type": "map", "values": "bytes"}},
            {"name": "sync", "type": {"type": "fixed", "name": "Sync", "size": 16}},
        ],
    }
)


def _read_long(buf: io.BytesIO, name: str) -> int:
    shift = result = 0
    while True:
        b = buf.read(1)
        if not b:
            raise CommitMetadataError(name, "truncated Avro container (in a block header)")
        result |= (b[0] & 0x7F) << shift
        if not b[0] & 0x80:
            return (result >> 1) ^ -(result & 1)
        shift += 7
        if shift > 63:
            raise CommitMetadataError(name, "malformed Avro long in a block header")


def _read_container_strict(data: bytes, name: str) -> list[AvroMessage]:
    import zlib

    buf = io.BytesIO(data)
    # _HEADER_SCHEMA is a record: it reads as a dict
    header = cast(dict[str, Any], fastavro.schemaless_reader(buf, _HEADER_SCHEMA))
    meta = header["meta"]
    codec = meta.get("avro.codec", b"null").decode()
    if codec not in ("null", "deflate"):
        return list(fastavro.reader(io.BytesIO(data)))  # not written by Hudi's timeline: lenient
    writer_schema = fastavro.parse_schema(json.loads(meta["avro.schema"].decode("utf-8")))
    sync = header["sync"]
    records: list[AvroMessage] = []
    while buf.tell() < len(data):
        count = _read_long(buf, name)
        size = _read_long(buf, name)
        if count < 0 or size < 0 or buf.tell() + size + 16 > len(data):
            raise CommitMetadataError(name, f"Avro block of {count} records, {size} bytes runs past the end")
        block = buf.read(size)
        if buf.read(16) != sync:
            raise CommitMetadataError(name, "Avro block is not followed by the file's sync marker")
        if codec == "deflate":
            block = zlib.decompress(block, -15)
        body = io.BytesIO(block)
        for _ in range(count):
            records.append(fastavro.schemaless_reader(body, writer_schema, None))
        if body.tell() != len(block):
            left = len(block) - body.tell()
            raise CommitMetadataError(name, f"{left} unexpected bytes after {count} records of an Avro block")
    return records


def _to_date(value: Any) -> datetime.date:
    if isinstance(value, datetime.date):
        return value
    return _EPOCH_DATE + datetime.timedelta(days=int(value))


def _to_decimal(value: Any) -> decimal.Decimal:
    if isinstance(value, decimal.Decimal):
        return value
    unscaled = int.from_bytes(bytes(value), "big", signed=True)
    # Built from a string so no decimal context (default precision 28 < 30) can round it.
    return decimal.Decimal(f"{unscaled}E-{_DECIMAL_WRAPPER_SCALE}")


def _to_time(value: Any) -> datetime.time:
    if isinstance(value, datetime.time):
        return value
    micros = int(value)
    seconds, micro = divmod(micros, 1_000_000)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    return datetime.time(hour, minute, second, micro)


def _to_timestamp(value: Any) -> datetime.datetime:
    if isinstance(value, datetime.datetime):
        return value
    return _EPOCH_UTC + datetime.timedelta(microseconds=int(value))


def _plain(value: Any) -> Any:
    return value


def _unwrap_array(record: Mapping[str, Any]) -> tuple[Any, ...] | None:
    values = record.get("wrappedValues")
    if values is None:
        return None
    return tuple(unwrap_value(v) for v in values)


# Short record name -> conversion of its "value" field. Hudi writes DateWrapper, LocalDateWrapper
# and TimestampMicrosWrapper without Avro logical types (ints/longs), so the name is what says how
# to read them.
_WRAPPERS: dict[str, Any] = {
    "BooleanWrapper": _plain,
    "IntWrapper": _plain,
    "LongWrapper": _plain,
    "FloatWrapper": _plain,
    "DoubleWrapper": _plain,
    "BytesWrapper": bytes,
    "StringWrapper": _plain,
    "DateWrapper": _to_date,
    "LocalDateWrapper": _to_date,
    "DecimalWrapper": _to_decimal,
    "TimeMicrosWrapper": _to_time,
    "TimestampMicrosWrapper": _to_timestamp,
}


def unwrap_value(v: Any) -> Any:
    """Turn one of Hudi's value-wrapper records into a plain Python value.

    Hudi stores ordering values (delete records) and column-stats min/max (MDT) as a union of
    single-field wrapper records so that any type fits one Avro field. Accepted inputs:

    * ``(name, record)`` as produced by fastavro with ``return_record_name=True`` — the reliable
      form: ``DateWrapper``/``LocalDateWrapper`` (int days) become :class:`datetime.date`,
      ``DecimalWrapper`` (decimal(30,15) bytes) :class:`decimal.Decimal`,
      ``TimestampMicrosWrapper`` (long micros) an aware UTC :class:`datetime.datetime`,
      ``TimeMicrosWrapper`` :class:`datetime.time`, ``BytesWrapper`` :class:`bytes`,
      ``ArrayWrapper`` (several ordering fields) a tuple of unwrapped values (tuples compare
      element by element, like Hudi's ``ArrayComparable``);
    * a bare record ``{"value": x}`` (decoded without record names): ``x`` as decoded, since the
      wrapper type is unknown; ``{"wrappedValues": [...]}``: a tuple;
    * ``None`` and any non-wrapper value: returned unchanged.

    An unknown wrapper name raises :class:`UnsupportedFeatureError`: a newer Hudi type whose raw
    encoding we would otherwise misread.
    """
    if v is None:
        return None
    if isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], str) and isinstance(v[1], Mapping):
        full_name, record = v
        short = full_name.rsplit(".", 1)[-1]
        if short == "ArrayWrapper":
            return _unwrap_array(record)
        convert = _WRAPPERS.get(short)
        if convert is None:
            raise UnsupportedFeatureError(f"unknown Hudi value wrapper record {full_name!r}")
        value = record.get("value")
        return None if value is None else convert(value)
    if isinstance(v, Mapping):
        if set(v) == {"value"}:
            return v["value"]
        if set(v) == {"wrappedValues"}:
            return _unwrap_array(v)
    return v
