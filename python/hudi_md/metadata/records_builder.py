"""Building MDT records (``HoodieMetadataRecord`` dicts) from what a data commit did.

Values follow what Hudi 1.1 writes for table version 9: column stats V2 (primitive wrappers plus a
``valueType``), record index V1 (UUID bits + file index), files records with ``{size, isDeleted}``.
"""

from __future__ import annotations

import datetime
import decimal
import json
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from hudi_md.metadata import keys as K
from hudi_md.table.timeline import instant_to_datetime

if TYPE_CHECKING:  # pyarrow is imported where it is used
    import pyarrow as pa

NAMESPACE = "org.apache.hudi.avro.model"


@lru_cache(maxsize=1)
def metadata_record_schema_json() -> str:
    """``HoodieMetadataRecord`` with the five meta fields prepended, as Hudi 1.1 writes it in MDT HFiles."""
    return (
        resources.files("hudi_md.formats")
        .joinpath("schemas/HoodieMetadataRecordWithMetaFields.avsc")
        .read_text(encoding="utf-8")
    )


def metadata_commit_schema_json() -> str:
    """``HoodieMetadataRecord`` without the meta fields: the ``schema`` Hudi records in the
    metadata of MDT instants (the MDT does not populate meta fields)."""
    schema = json.loads(metadata_record_schema_json())
    schema["fields"] = [f for f in schema["fields"] if not f["name"].startswith("_hoodie_")]
    return json.dumps(schema, separators=(",", ":"))


@dataclass(frozen=True)
class MdtRecord:
    """One keyed MDT record; ``payload is None`` is a delete (written to a DELETE block)."""

    partition: str
    key: str
    payload: dict[str, Any] | None
    encoded: bytes | None = None  # the payload's Avro bytes, when shared by many records


def empty_payload(key_type: int) -> dict[str, Any]:
    return {
        "_hoodie_commit_time": None,
        "_hoodie_commit_seqno": None,
        "_hoodie_record_key": None,
        "_hoodie_partition_path": None,
        "_hoodie_file_name": None,
        "key": "",  # the key lives in the HFile cell; Hudi blanks it in the value
        "type": key_type,
        "filesystemMetadata": None,
        "BloomFilterMetadata": None,
        "ColumnStatsMetadata": None,
        "recordIndexMetadata": None,
        "SecondaryIndexMetadata": None,
    }


# --- files ---------------------------------------------------------------------------------------


def files_record(partition_path: str, added: Mapping[str, int], deleted: Iterable[str] = ()) -> MdtRecord:
    payload = empty_payload(K.TYPE_FILES)
    entries = {name: {"size": int(size), "isDeleted": False} for name, size in added.items()}
    for name in deleted:
        entries[name] = {"size": 0, "isDeleted": True}
    payload["filesystemMetadata"] = entries
    return MdtRecord(K.FILES, K.files_key(partition_path), payload)


def all_partitions_record(partitions: Iterable[str], deleted: Iterable[str] = ()) -> MdtRecord:
    payload = empty_payload(K.TYPE_ALL_PARTITIONS)
    entries = {K.partition_id(p): {"size": 0, "isDeleted": False} for p in partitions}
    for p in deleted:
        entries[K.partition_id(p)] = {"size": 0, "isDeleted": True}
    payload["filesystemMetadata"] = entries
    return MdtRecord(K.FILES, K.ALL_PARTITIONS_KEY, payload)


def delete_partition_record(partition_path: str) -> MdtRecord:
    return MdtRecord(K.FILES, K.files_key(partition_path), None)


# --- column stats --------------------------------------------------------------------------------

# ValueType ordinals (org.apache.hudi.stats.ValueType)
_VT_BOOLEAN, _VT_INT, _VT_LONG, _VT_FLOAT, _VT_DOUBLE, _VT_STRING, _VT_BYTES = 2, 3, 4, 5, 6, 7, 8
_VT_DECIMAL, _VT_DATE, _VT_TIMESTAMP_MICROS, _VT_LOCAL_TIMESTAMP_MICROS = 10, 12, 16, 19


def stat_value(
    value: Any, arrow_type: pa.DataType
) -> tuple[tuple[str, dict[str, Any]] | None, dict[str, Any]]:
    """(wrapped value, valueType) for a column-stats min/max, as Hudi 1.1's V2 stats encode it."""
    import pyarrow as pa

    t = arrow_type
    if pa.types.is_boolean(t):
        wrapper, ordinal, info, raw = "BooleanWrapper", _VT_BOOLEAN, None, value
    elif pa.types.is_integer(t) and t.bit_width <= 32:
        wrapper, ordinal, info, raw = "IntWrapper", _VT_INT, None, None if value is None else int(value)
    elif pa.types.is_integer(t):
        wrapper, ordinal, info, raw = "LongWrapper", _VT_LONG, None, None if value is None else int(value)
    elif pa.types.is_float32(t):
        wrapper, ordinal, info, raw = "FloatWrapper", _VT_FLOAT, None, value
    elif pa.types.is_floating(t):
        wrapper, ordinal, info, raw = "DoubleWrapper", _VT_DOUBLE, None, value
    elif pa.types.is_string(t) or pa.types.is_large_string(t):
        wrapper, ordinal, info, raw = "StringWrapper", _VT_STRING, None, value
    elif pa.types.is_decimal(t):
        info = f"{t.precision},{t.scale}"
        raw = None if value is None else _unscaled_bytes(decimal.Decimal(value), t.scale)
        wrapper, ordinal = "BytesWrapper", _VT_DECIMAL
    elif pa.types.is_date(t):
        raw = None if value is None else (value - datetime.date(1970, 1, 1)).days
        wrapper, ordinal, info = "IntWrapper", _VT_DATE, None
    elif pa.types.is_timestamp(t):
        local = t.tz is None
        raw = None if value is None else _micros(value)
        wrapper, ordinal, info = (
            "LongWrapper",
            (_VT_LOCAL_TIMESTAMP_MICROS if local else _VT_TIMESTAMP_MICROS),
            None,
        )
    elif pa.types.is_binary(t) or pa.types.is_fixed_size_binary(t):
        wrapper, ordinal, info, raw = "BytesWrapper", _VT_BYTES, None, None if value is None else bytes(value)
    else:
        raise ValueError(f"column stats are not kept for type {t}")
    wrapped = None if raw is None else (f"{NAMESPACE}.{wrapper}", {"value": raw})
    return wrapped, {"typeOrdinal": ordinal, "additionalInfo": info}


def wrap_typed_stat(value: Any, value_type: Mapping[str, Any] | None) -> tuple[str, dict[str, Any]] | None:
    """Inverse of :func:`hudi_md.metadata.records.typed_stat_value`: a typed value back to its wrapper."""
    if value is None:
        return None
    ordinal = (value_type or {}).get("typeOrdinal")
    info = (value_type or {}).get("additionalInfo")
    if ordinal == _VT_DECIMAL or (ordinal is None and isinstance(value, decimal.Decimal)):
        scale = int(info.split(",")[1]) if info and "," in info else -value.as_tuple().exponent
        return f"{NAMESPACE}.BytesWrapper", {"value": _unscaled_bytes(value, scale)}
    if isinstance(value, datetime.datetime):
        micros = _micros(value)
        raw = micros // 1000 if ordinal in (15, 18) else micros * 1000 if ordinal in (17, 20) else micros
        return f"{NAMESPACE}.LongWrapper", {"value": raw}
    if isinstance(value, datetime.date):
        return f"{NAMESPACE}.IntWrapper", {"value": (value - datetime.date(1970, 1, 1)).days}
    if isinstance(value, datetime.time):
        micros = ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond
        if ordinal == 13:
            return f"{NAMESPACE}.IntWrapper", {"value": micros // 1000}
        return f"{NAMESPACE}.LongWrapper", {"value": micros}
    if isinstance(value, bool):
        return f"{NAMESPACE}.BooleanWrapper", {"value": value}
    if isinstance(value, int):
        wrapper = "IntWrapper" if ordinal == _VT_INT else "LongWrapper"
        return f"{NAMESPACE}.{wrapper}", {"value": value}
    if isinstance(value, float):
        wrapper = "FloatWrapper" if ordinal == _VT_FLOAT else "DoubleWrapper"
        return f"{NAMESPACE}.{wrapper}", {"value": value}
    if isinstance(value, str):
        if ordinal == 11:
            return f"{NAMESPACE}.BytesWrapper", {"value": uuid.UUID(value).bytes}
        return f"{NAMESPACE}.StringWrapper", {"value": value}
    if isinstance(value, (bytes, bytearray)):
        return f"{NAMESPACE}.BytesWrapper", {"value": bytes(value)}
    raise ValueError(f"cannot encode column stat value {value!r}")


def _unscaled_bytes(d: decimal.Decimal, scale: int) -> bytes:
    unscaled = int(d.scaleb(scale).to_integral_value())
    length = max(1, (unscaled.bit_length() + 8) // 8)
    return unscaled.to_bytes(length, "big", signed=True)


def _micros(v: Any) -> int:
    if isinstance(v, datetime.datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=datetime.timezone.utc)
        delta = v - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
        return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
    return int(v)


@dataclass(frozen=True)
class ColumnRange:
    """Per-file (or per-partition) statistics of one column."""

    column_name: str
    min_value: Any
    max_value: Any
    null_count: int
    value_count: int
    total_size: int
    total_uncompressed_size: int


def column_stats_record(
    partition_path: str,
    file_name: str,
    rng: ColumnRange,
    arrow_type: pa.DataType,
    *,
    is_deleted: bool = False,
    tight_bound: bool = False,
    for_partition: bool = False,
) -> MdtRecord:
    """A ``column_stats`` record (per file) or, with ``for_partition``, a ``partition_stats`` record."""
    payload = empty_payload(K.TYPE_PARTITION_STATS if for_partition else K.TYPE_COLUMN_STATS)
    min_w, value_type = stat_value(rng.min_value, arrow_type)
    max_w, _ = stat_value(rng.max_value, arrow_type)
    payload["ColumnStatsMetadata"] = {
        "fileName": K.partition_id(partition_path) if for_partition else file_name,
        "columnName": rng.column_name,
        "minValue": min_w,
        "maxValue": max_w,
        "valueCount": rng.value_count,
        "nullCount": rng.null_count,
        "totalSize": rng.total_size,
        "totalUncompressedSize": rng.total_uncompressed_size,
        "isDeleted": is_deleted,
        "isTightBound": tight_bound,
        "valueType": value_type,
    }
    if for_partition:
        return MdtRecord(K.PARTITION_STATS, K.partition_stats_key(rng.column_name, partition_path), payload)
    return MdtRecord(K.COLUMN_STATS, K.column_stats_key(rng.column_name, partition_path, file_name), payload)


def merge_ranges(ranges: Iterable[ColumnRange]) -> ColumnRange | None:
    """Combine per-file ranges of one column (partition stats)."""
    out: ColumnRange | None = None
    for r in ranges:
        if out is None:
            out = r
            continue
        mins = [v for v in (out.min_value, r.min_value) if v is not None]
        maxs = [v for v in (out.max_value, r.max_value) if v is not None]
        out = ColumnRange(
            r.column_name,
            min(mins) if mins else None,
            max(maxs) if maxs else None,
            out.null_count + r.null_count,
            out.value_count + r.value_count,
            out.total_size + r.total_size,
            out.total_uncompressed_size + r.total_uncompressed_size,
        )
    return out


# --- record index ----------------------------------------------------------------------------------


def record_index_record(record_key: str, partition_path: str, file_id: str, instant: str) -> MdtRecord:
    payload = empty_payload(K.TYPE_RECORD_INDEX)
    payload["recordIndexMetadata"] = dict(_record_location(partition_path, file_id, instant))
    return MdtRecord(K.RECORD_INDEX, record_key, payload)


@dataclass(frozen=True)
class MdtKeyBatch:
    """Records of one MDT partition sharing one payload, keyed by an Arrow string column: the
    record-index entries of a data file group, a million of them without a Python object each."""

    partition: str
    keys: pa.Array
    payload: dict[str, Any]
    encoded: bytes

    def records(self) -> list[MdtRecord]:
        return [MdtRecord(self.partition, k, self.payload, self.encoded) for k in self.keys.to_pylist()]


def record_index_batch(keys: pa.Array, partition_path: str, file_id: str, instant: str) -> MdtKeyBatch:
    """The record-index entries of ``keys`` (a string column), all in one data file group."""
    payload = empty_payload(K.TYPE_RECORD_INDEX)
    payload["recordIndexMetadata"] = dict(_record_location(partition_path, file_id, instant))
    return MdtKeyBatch(K.RECORD_INDEX, keys, payload, _encode_payload(payload))


def record_index_records(
    keys: Iterable[str], partition_path: str, file_id: str, instant: str
) -> list[MdtRecord]:
    """Record-index entries of many keys in one file group, sharing one pre-encoded payload.

    Every entry of a file group has the same value, so it is built and Avro-encoded once
    (``MdtRecord.encoded``); writing 10⁶ keys then costs no per-key Avro work.
    """
    payload = empty_payload(K.TYPE_RECORD_INDEX)
    payload["recordIndexMetadata"] = dict(_record_location(partition_path, file_id, instant))
    encoded = _encode_payload(payload)
    return [MdtRecord(K.RECORD_INDEX, k, payload, encoded) for k in keys]


def _encode_payload(payload: dict[str, Any]) -> bytes:
    import io

    import fastavro

    from hudi_md.formats.avro import parse_schema

    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, parse_schema(metadata_record_schema_json()), payload)
    return buf.getvalue()


def record_index_delete(record_key: str) -> MdtRecord:
    return MdtRecord(K.RECORD_INDEX, record_key, None)


@lru_cache(maxsize=4096)
def _record_location(partition_path: str, file_id: str, instant: str) -> Mapping[str, Any]:
    millis = int(instant_to_datetime(instant).replace(tzinfo=datetime.timezone.utc).timestamp() * 1000)
    base, _, index = file_id.rpartition("-")
    info: dict[str, Any] = {
        # Hudi 1.x writes "" for a non-partitioned table here (not the MDT's "." partition id).
        "partitionName": partition_path,
        "fileIdHighBits": None,
        "fileIdLowBits": None,
        "fileIndex": None,
        "fileId": None,
        "instantTime": millis,
        "fileIdEncoding": 0,
        "position": None,
    }
    try:
        u = uuid.UUID(base)
        idx = int(index)
    except ValueError:
        info["fileIdEncoding"] = 1
        info["fileId"] = file_id
        return info
    value = u.int
    hi, lo = value >> 64, value & 0xFFFFFFFFFFFFFFFF
    info["fileIdHighBits"] = hi - (1 << 64) if hi >= 1 << 63 else hi
    info["fileIdLowBits"] = lo - (1 << 64) if lo >= 1 << 63 else lo
    info["fileIndex"] = idx
    info["fileId"] = ""
    return info


# --- bloom filters ---------------------------------------------------------------------------------


def bloom_filter_record(
    partition_path: str,
    file_name: str,
    bloom_text: str,
    type_code: str,
    instant: str,
    *,
    is_deleted: bool = False,
) -> MdtRecord:
    payload = empty_payload(K.TYPE_BLOOM_FILTER)
    payload["BloomFilterMetadata"] = {
        "type": type_code,
        "timestamp": instant,
        "bloomFilter": bloom_text.encode("utf-8"),
        "isDeleted": is_deleted,
    }
    return MdtRecord(K.BLOOM_FILTERS, K.bloom_filter_key(partition_path, file_name), payload)


def schema_fields() -> list[str]:
    return [f["name"] for f in json.loads(metadata_record_schema_json())["fields"]]
