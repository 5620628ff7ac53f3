"""Writer for Hudi log files (``HoodieLogFormat`` version 1), byte-compatible with Hudi 1.1/1.2.

Block framing is the one :mod:`hudi_md.formats.logfile` reads (reference §4.1). Facts the bytes
depend on, checked against the fixtures (hudi-rs log files and the v6/v8/v9 table zips):

* Header entries are written in the order given. Hudi keeps them in a ``HashMap`` keyed by enum
  constants, whose iteration order follows identity hash codes and so changes from JVM to JVM:
  the fixtures hold both ``INSTANT_TIME, SCHEMA`` and ``SCHEMA, INSTANT_TIME``. Readers look
  entries up by key, so any order is valid; the helpers here use ``INSTANT_TIME`` first.
* AVRO_DATA content is version 3: ``int32 3 | int32 count | (int32 length | Avro datum)*``.
* DELETE content is ``int32 3 | int32 length | Avro HoodieDeleteRecordList``. The empty delete
  block the MDT writes at initialisation carries only an ``INSTANT_TIME`` header and the content
  ``00000003 00000001 00`` (an empty array).
* A ROLLBACK command block has empty content and the headers ``INSTANT_TIME`` (the rollback),
  ``COMMAND_BLOCK_TYPE`` = ``"0"`` and ``TARGET_INSTANT_TIME`` (the instant undone).
* PARQUET_DATA content is a complete Parquet file written with Hudi's log-block settings:
  ``hoodie.parquet.compression.codec`` (default gzip), dictionary encoding on
  (``hoodie.parquet.dictionary.enabled``), 1 MiB pages, and the Avro write support's footer
  entries ``parquet.avro.schema`` and ``writer.model.name``.

Table version 9 never appends to an existing log file: every deltacommit writes a new log file
per file group, which :class:`LogFileWriter` builds in memory and stores with one request.
"""

from __future__ import annotations

import datetime
import decimal
import io
import json
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import fastavro

from hudi_md.errors import InvalidOptionError
from hudi_md.formats import avro
from hudi_md.formats.logfile import (
    LOG_FORMAT_VERSION,
    MAGIC,
    ROLLBACK_COMMAND,
    DeleteRecord,
    HeaderKey,
    LogBlockType,
    delete_list_schema,
)

if TYPE_CHECKING:
    import pyarrow

    from hudi_md.storage import Storage

__all__ = [
    "HOODIE_META_FIELDS",
    "LogFileWriter",
    "WrappedValue",
    "avro_block_content",
    "avro_data_block",
    "delete_block",
    "delete_block_content",
    "encode_log_block",
    "hfile_data_block",
    "parquet_data_block",
    "rollback_command_block",
    "with_meta_fields",
]

AVRO_BLOCK_VERSION = 3
DELETE_BLOCK_VERSION = 3
PARQUET_LOG_BLOCK_COMPRESSION = "gzip"  # hoodie.parquet.compression.codec default in 1.1/1.2
_PARQUET_PAGE_SIZE = 1024 * 1024  # ParquetWriter.DEFAULT_PAGE_SIZE, set by Hudi for log blocks
_INT32_RANGE = range(-(2**31), 2**31)
_WRAPPER_NAMESPACE = avro.WRAPPER_NAMESPACE + "."
# The fixed 4096-byte HFile trailer starts with this magic; checked so that arbitrary bytes are
# not framed as an HFile block (the constants are the HFile reader's, repeated to keep this
# module independent of the HFile package).
_HFILE_TRAILER_SIZE = 4096
_HFILE_TRAILER_MAGIC = b'TRABLK"$'

# The five nullable meta columns Hudi prepends to a table's Avro schema
# (HoodieAvroUtils.addMetadataFields): log-block SCHEMA headers and MDT HFile file info carry the
# schema with them.
HOODIE_META_FIELDS = (
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
)


# --- framing ---------------------------------------------------------------------------------------


def _metadata_map(entries: Mapping[HeaderKey, str], what: str) -> bytes:
    out = bytearray(struct.pack(">i", len(entries)))
    for key, value in entries.items():
        if not isinstance(key, HeaderKey):
            raise InvalidOptionError(f"{what} key {key!r} is not a HeaderKey")
        if not isinstance(value, str):
            raise InvalidOptionError(f"{what} value of {key.name} must be a str, not {type(value).__name__}")
        raw = value.encode("utf-8")
        out += struct.pack(">ii", int(key), len(raw))
        out += raw
    return bytes(out)


def encode_log_block(
    block_type: LogBlockType,
    header: Mapping[HeaderKey, str],
    content: bytes,
    footer: Mapping[HeaderKey, str] | None = None,
) -> bytes:
    """Frame one log block (§4.1); header and footer entries are written in mapping order.

    ``magic | blockLength int64 | version 1 | type | header | contentLength int64 | content |
    footer | trailing int64``, where ``blockLength`` counts everything after itself and the
    trailing long repeats the block size up to itself (``6 + blockLength``). Hudi never writes a
    footer entry; ``footer`` exists for completeness and tests.
    """
    if block_type in (LogBlockType.CORRUPT, LogBlockType.CDC_DATA):
        raise InvalidOptionError(f"refusing to write a {block_type.name} block")
    body = b"".join(
        (
            struct.pack(">ii", LOG_FORMAT_VERSION, int(block_type)),
            _metadata_map(header, "header"),
            struct.pack(">q", len(content)),
            content,
            _metadata_map(footer or {}, "footer"),
        )
    )
    block_length = len(body) + 8
    return b"".join(
        (MAGIC, struct.pack(">q", block_length), body, struct.pack(">q", len(MAGIC) + block_length))
    )


def _data_header(instant_time: str, schema_json: str) -> dict[HeaderKey, str]:
    return {HeaderKey.INSTANT_TIME: instant_time, HeaderKey.SCHEMA: schema_json}


# --- data blocks -----------------------------------------------------------------------------------


def avro_block_content(records: Iterable[Mapping[str, Any]], schema_json: str) -> bytes:
    """AVRO_DATA content (version 3) for ``records`` encoded with the writer schema ``schema_json``.

    Records are dicts in fastavro's conventions; a field missing from a record takes its schema
    default, and a field the schema does not have is an error rather than dropped silently.
    """
    schema = _parse(schema_json)
    out = io.BytesIO()
    out.write(b"\0" * 8)  # version and count, patched once the count is known
    count = 0
    for record in records:
        start = out.tell()
        out.write(b"\0\0\0\0")
        try:
            fastavro.schemaless_writer(out, schema, record, strict_allow_default=True)
        except (ValueError, TypeError, AttributeError, KeyError, OverflowError) as exc:
            raise InvalidOptionError(f"record {count} does not fit the block schema: {_short(exc)}") from exc
        end = out.tell()
        out.seek(start)
        out.write(struct.pack(">i", end - start - 4))
        out.seek(end)
        count += 1
    out.seek(0)
    out.write(struct.pack(">ii", AVRO_BLOCK_VERSION, count))
    return out.getvalue()


def avro_data_block(records: Iterable[Mapping[str, Any]], schema_json: str, instant_time: str) -> bytes:
    """An AVRO_DATA block with headers ``INSTANT_TIME`` and ``SCHEMA``."""
    return encode_log_block(
        LogBlockType.AVRO_DATA,
        _data_header(instant_time, schema_json),
        avro_block_content(records, schema_json),
    )


def parquet_data_block(
    table: pyarrow.Table,
    schema_json: str,
    instant_time: str,
    *,
    compression: str = PARQUET_LOG_BLOCK_COMPRESSION,
) -> bytes:
    """A PARQUET_DATA block whose content is ``table`` written as one Parquet file.

    The columns must be the top-level fields of ``schema_json`` in schema order: Hudi's reader
    takes the header schema as the writer schema of the Parquet rows. ``compression`` is the
    table's ``hoodie.parquet.compression.codec``. An empty table is refused: Hudi would write a
    block with empty content that no reader can open.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        fields = [f["name"] for f in json.loads(schema_json)["fields"]]
    except (ValueError, TypeError, KeyError) as exc:
        raise InvalidOptionError(f"Parquet block schema is not an Avro record schema: {exc!r}") from exc
    if table.column_names != fields:
        raise InvalidOptionError(
            f"Parquet block columns {table.column_names} do not match the schema fields {fields}"
        )
    if table.num_rows == 0:
        raise InvalidOptionError("refusing to write a Parquet log block without rows")
    sink = pa.BufferOutputStream()
    # Java readers ignore the Arrow schema; leaving it out keeps the footer as parquet-mr's, with
    # only the entries Hudi's Avro write support adds.
    with pq.ParquetWriter(
        sink,
        table.schema.remove_metadata(),
        compression=compression,
        use_dictionary=True,
        data_page_size=_PARQUET_PAGE_SIZE,
        data_page_version="1.0",
        store_schema=False,
    ) as writer:
        writer.write_table(table.replace_schema_metadata(None))
        writer.add_key_value_metadata({"parquet.avro.schema": schema_json, "writer.model.name": "avro"})
    return encode_log_block(
        LogBlockType.PARQUET_DATA, _data_header(instant_time, schema_json), sink.getvalue().to_pybytes()
    )


def hfile_data_block(hfile_bytes: bytes, schema_json: str, instant_time: str) -> bytes:
    """An HFILE_DATA block (MDT log blocks): the content is a complete HFile, trailer included."""
    data = bytes(hfile_bytes)
    trailer_start = len(data) - _HFILE_TRAILER_SIZE
    if trailer_start < 0 or not data.startswith(_HFILE_TRAILER_MAGIC, trailer_start):
        raise InvalidOptionError("HFile block content does not end with an HFile trailer")
    return encode_log_block(LogBlockType.HFILE_DATA, _data_header(instant_time, schema_json), data)


# --- delete blocks ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class WrappedValue:
    """An ordering value with an explicit Hudi wrapper record, e.g. ``WrappedValue("LongWrapper", 5)``.

    Plain Python values are wrapped by type (see :func:`delete_block_content`); Python has one int
    type where Java has two, so a ``long`` ordering field whose values fit 32 bits needs this to be
    written as ``LongWrapper``, the type Hudi itself would write. ``value`` is the wrapper's raw
    field value (days for ``DateWrapper``/``LocalDateWrapper``, micros for
    ``TimestampMicrosWrapper``).
    """

    wrapper: str
    value: Any


_PLAIN_WRAPPERS = frozenset(
    {
        "BooleanWrapper",
        "IntWrapper",
        "LongWrapper",
        "FloatWrapper",
        "DoubleWrapper",
        "BytesWrapper",
        "StringWrapper",
        "DateWrapper",
        "DecimalWrapper",
        "TimeMicrosWrapper",
        "TimestampMicrosWrapper",
        "LocalDateWrapper",
    }
)
_EPOCH_DATE = datetime.date(1970, 1, 1)
_EPOCH_UTC = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_DECIMAL_SCALE = decimal.Decimal(1).scaleb(-15)  # DecimalWrapper is decimal(30, 15)


def _wrap(wrapper: str, value: Any) -> tuple[str, dict[str, Any]]:
    return (_WRAPPER_NAMESPACE + wrapper, {"value": value})


def _wrap_ordering_value(value: Any) -> Any:
    """The ``orderingVal`` union value, in fastavro's ``(record name, record)`` notation.

    Mirrors Hudi's ``wrapValueIntoAvro`` for the Python counterparts of its Java types: ``0`` (the
    value Hudi writes when there is no ordering field) becomes ``IntWrapper`` like Java's boxed 0.
    """
    if value is None:
        return None
    if isinstance(value, WrappedValue):
        if value.wrapper == "ArrayWrapper":
            return (_WRAPPER_NAMESPACE + "ArrayWrapper", {"wrappedValues": _wrap_array(value.value)})
        if value.wrapper not in _PLAIN_WRAPPERS:
            raise InvalidOptionError(f"unknown ordering value wrapper {value.wrapper!r}")
        return _wrap(value.wrapper, value.value)
    if isinstance(value, bool):  # before int: bool is an int subclass
        return _wrap("BooleanWrapper", value)
    if isinstance(value, int):
        return _wrap("IntWrapper" if value in _INT32_RANGE else "LongWrapper", value)
    if isinstance(value, float):
        return _wrap("DoubleWrapper", value)
    if isinstance(value, str):
        return _wrap("StringWrapper", value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _wrap("BytesWrapper", bytes(value))
    if isinstance(value, decimal.Decimal):
        return _wrap("DecimalWrapper", value.quantize(_DECIMAL_SCALE))
    if isinstance(value, datetime.datetime):  # before date: datetime is a date subclass
        if value.tzinfo is None:
            raise InvalidOptionError("a datetime ordering value needs a timezone (Hudi stores UTC micros)")
        delta = value - _EPOCH_UTC
        return _wrap(
            "TimestampMicrosWrapper", (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
        )
    if isinstance(value, datetime.date):
        return _wrap("DateWrapper", (value - _EPOCH_DATE).days)
    if isinstance(value, datetime.time):
        return _wrap("TimeMicrosWrapper", value)
    if isinstance(value, (tuple, list)):
        return (_WRAPPER_NAMESPACE + "ArrayWrapper", {"wrappedValues": _wrap_array(value)})
    raise InvalidOptionError(f"cannot wrap an ordering value of type {type(value).__name__}")


def _wrap_array(values: Any) -> list[Any] | None:
    if values is None:
        return None
    out = []
    for item in values:
        wrapped = _wrap_ordering_value(item)
        if isinstance(wrapped, tuple) and wrapped[0].endswith(".ArrayWrapper"):
            raise InvalidOptionError("ordering value arrays cannot nest")
        out.append(wrapped)
    return out


def delete_block_content(records: Sequence[DeleteRecord]) -> bytes:
    """DELETE content (version 3): ``int32 3 | int32 length | Avro HoodieDeleteRecordList``.

    Ordering values are wrapped as Hudi's ``wrapValueIntoAvro`` does for the matching Java types
    (bool, int -> Int or Long by range, float -> Double, str, bytes, Decimal, aware datetime ->
    TimestampMicros, date -> Date, time -> TimeMicros, tuple -> Array); use :class:`WrappedValue`
    to choose the wrapper yourself.
    """
    items = [
        {
            "recordKey": r.record_key,
            "partitionPath": r.partition_path,
            "orderingVal": _wrap_ordering_value(r.ordering_value),
        }
        for r in records
    ]
    out = io.BytesIO()
    try:
        fastavro.schemaless_writer(out, delete_list_schema(), {"deleteRecordList": items}, strict=True)
    except (ValueError, TypeError, AttributeError, KeyError, OverflowError) as exc:
        raise InvalidOptionError(f"delete records do not fit HoodieDeleteRecordList: {_short(exc)}") from exc
    payload = out.getvalue()
    return struct.pack(">ii", DELETE_BLOCK_VERSION, len(payload)) + payload


def delete_block(records: Sequence[DeleteRecord], instant_time: str, schema_json: str | None = None) -> bytes:
    """A DELETE block; headers ``INSTANT_TIME`` and, when given, ``SCHEMA``.

    Hudi's delete blocks carry the table schema, except the empty one written when the MDT is
    initialised, which has ``INSTANT_TIME`` only: pass ``schema_json=None`` for that.
    """
    header = {HeaderKey.INSTANT_TIME: instant_time}
    if schema_json is not None:
        header[HeaderKey.SCHEMA] = schema_json
    return encode_log_block(LogBlockType.DELETE, header, delete_block_content(records))


def rollback_command_block(instant_time: str, target_instant_time: str) -> bytes:
    """A ROLLBACK command block: ``instant_time`` (the rollback) cancels ``target_instant_time``.

    Table version 9 does not write these (rollbacks delete the failed instant's log files); v6
    tables do, and readers of every version honour them.
    """
    header = {
        HeaderKey.INSTANT_TIME: instant_time,
        HeaderKey.COMMAND_BLOCK_TYPE: ROLLBACK_COMMAND,
        HeaderKey.TARGET_INSTANT_TIME: target_instant_time,
    }
    return encode_log_block(LogBlockType.COMMAND, header, b"")


# --- schema helpers --------------------------------------------------------------------------------


def with_meta_fields(schema_json: str) -> str:
    """``schema_json`` with the five ``_hoodie_*`` meta fields prepended, as Hudi prints it.

    Each meta field is ``{"name": ..., "type": ["null", "string"], "doc": "", "default": null}``
    (``HoodieAvroUtils.addMetadataFields``); the output is compact JSON like Java's
    ``Schema.toString()``. ``with_meta_fields(schema_json("HoodieMetadata"))`` is the exact
    ``SCHEMA`` header of v9 MDT log blocks. A schema that already has the meta fields is returned
    unchanged.
    """
    schema = json.loads(schema_json)
    fields = schema.get("fields") if isinstance(schema, dict) else None
    if not isinstance(fields, list):
        raise InvalidOptionError("with_meta_fields needs a record schema")
    names = [f.get("name") for f in fields]
    if names[: len(HOODIE_META_FIELDS)] == list(HOODIE_META_FIELDS):
        return schema_json
    clash = set(names) & set(HOODIE_META_FIELDS)
    if clash:
        raise InvalidOptionError(f"schema already has meta field(s) {sorted(clash)} out of place")
    meta = [
        {"name": name, "type": ["null", "string"], "doc": "", "default": None} for name in HOODIE_META_FIELDS
    ]
    schema["fields"] = meta + fields
    return json.dumps(schema, separators=(",", ":"), ensure_ascii=False)


def _parse(schema_json: str) -> avro.AvroSchema:
    try:
        return avro.parse_schema(schema_json)
    except Exception as exc:  # fastavro raises several types for a bad schema
        raise InvalidOptionError(f"cannot parse Avro schema: {_short(exc)}") from exc


def _short(exc: Exception, limit: int = 400) -> str:
    # fastavro error messages embed the whole schema
    text = str(exc)
    return f"{type(exc).__name__}: {text[:limit]}{' ...' if len(text) > limit else ''}"


# --- files -----------------------------------------------------------------------------------------


class LogFileWriter:
    """Collects encoded blocks for one new log file and stores it with a single write request.

    Object stores cannot append, and table version 9 writes a fresh log file per deltacommit and
    file group, so the whole file is built in memory. :meth:`close` (or leaving a ``with`` block
    without an exception) writes it; the file must not exist yet, since a name collision means two
    writers chose the same write token. Leaving a ``with`` block through an exception writes
    nothing, so a failed write leaves no partial log file behind.
    """

    def __init__(self, storage: Storage, path: str) -> None:
        self._storage = storage
        self.path = path
        self._blocks: list[bytes] = []
        self._size = 0
        self._closed = False
        self._discarded = False

    @property
    def size(self) -> int:
        """Bytes appended so far: the file size once written (``fileSizeInBytes`` of its write stat)."""
        return self._size

    @property
    def block_count(self) -> int:
        return len(self._blocks)

    def append(self, block: bytes) -> int:
        """Add one block made by the functions of this module; returns its offset in the file."""
        if self._closed or self._discarded:
            raise InvalidOptionError(f"{self.path}: log file already written or discarded")
        if bytes(block[: len(MAGIC)]) != MAGIC or len(block) < len(MAGIC) + 16:
            raise InvalidOptionError(f"{self.path}: not an encoded log block (no {MAGIC!r} magic)")
        (block_length,) = struct.unpack_from(">q", block, len(MAGIC))
        if len(MAGIC) + 8 + block_length != len(block):
            raise InvalidOptionError(
                f"{self.path}: block declares {block_length} bytes after its length field "
                f"but has {len(block) - len(MAGIC) - 8}"
            )
        offset = self._size
        self._blocks.append(bytes(block))
        self._size += len(block)
        return offset

    def getvalue(self) -> bytes:
        """The file's bytes as they will be (or were) written."""
        return b"".join(self._blocks)

    def close(self) -> int:
        """Write the file in one request and return its size; a second call does nothing."""
        if self._closed:
            return self._size
        if self._discarded:
            raise InvalidOptionError(f"{self.path}: log file was discarded after an error")
        if not self._blocks:
            raise InvalidOptionError(f"{self.path}: refusing to write a log file without blocks")
        self._storage.write_bytes(self.path, self.getvalue(), overwrite=False)
        self._closed = True
        return self._size

    def __enter__(self) -> LogFileWriter:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self.close()
        else:
            self._discarded = True
