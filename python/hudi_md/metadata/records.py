"""MDT records as decoded from HFile values, and Hudi's rules for merging them.

A record is a plain dict in the shape of ``HoodieMetadataRecord`` with record-union branches
already unwrapped; ``None`` stands for an empty payload (a key deleted by a DELETE block).
"""

from __future__ import annotations

import datetime
import decimal
import uuid
from collections.abc import Callable
from typing import Any

from hudi_md.formats.avro import unwrap_value
from hudi_md.metadata.keys import (
    TYPE_ALL_PARTITIONS,
    TYPE_BLOOM_FILTER,
    TYPE_COLUMN_STATS,
    TYPE_FILES,
    TYPE_PARTITION_STATS,
    TYPE_RECORD_INDEX,
    TYPE_SECONDARY_INDEX,
)

Record = dict[str, Any]

_PAYLOAD_FIELDS = (
    "filesystemMetadata",
    "BloomFilterMetadata",
    "ColumnStatsMetadata",
    "recordIndexMetadata",
    "SecondaryIndexMetadata",
)


def normalize(raw: dict[str, Any]) -> Record:
    """Strip fastavro's ``(record_name, value)`` union tags and unwrap stat values."""
    out: dict[str, Any] = {"key": raw.get("key"), "type": raw.get("type")}
    for name in _PAYLOAD_FIELDS:
        value = _untag(raw.get(name))
        if name == "filesystemMetadata" and value is not None:
            value = {k: _untag(v) for k, v in value.items()}
        elif name == "ColumnStatsMetadata" and value is not None:
            value = {k: _untag(v) for k, v in value.items()}
            value_type = value.get("valueType")
            value["minValue"] = typed_stat_value(unwrap_value(raw_stat(raw, "minValue")), value_type)
            value["maxValue"] = typed_stat_value(unwrap_value(raw_stat(raw, "maxValue")), value_type)
        out[name] = value
    return out


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_EPOCH_NAIVE = datetime.datetime(1970, 1, 1)


def typed_stat_value(value: Any, value_type: dict[str, Any] | None) -> Any:
    """Apply a V2 column-stats ``valueType`` (``org.apache.hudi.stats.ValueType``) to a raw value.

    V2 stats (v9 tables) store the primitive encoding (days, micros, unscaled decimal bytes) and say
    in ``valueType`` what it means; V1 stats used typed wrappers, already unwrapped by then.
    """
    if value is None or not value_type:
        return value
    ordinal = value_type.get("typeOrdinal")
    info = value_type.get("additionalInfo")
    if ordinal == 10 and isinstance(value, (bytes, bytearray)):  # DECIMAL: unscaled two's complement
        scale = int(info.split(",")[1]) if info and "," in info else 0
        return decimal.Decimal(int.from_bytes(value, "big", signed=True)).scaleb(-scale)
    if ordinal == 12 and isinstance(value, int):  # DATE: days since epoch
        return datetime.date(1970, 1, 1) + datetime.timedelta(days=value)
    if isinstance(value, int) and ordinal in _TIMESTAMP_UNITS:
        unit, local = _TIMESTAMP_UNITS[ordinal]
        micros = value * 1000 if unit == "ms" else (value // 1000 if unit == "ns" else value)
        base = _EPOCH_NAIVE if local else _EPOCH
        return base + datetime.timedelta(microseconds=micros)
    if ordinal in (13, 14) and isinstance(value, int):  # TIME_MILLIS / TIME_MICROS
        micros = value * 1000 if ordinal == 13 else value
        return (datetime.datetime.min + datetime.timedelta(microseconds=micros)).time()
    if ordinal == 11 and isinstance(value, (bytes, bytearray)) and len(value) == 16:  # UUID
        return str(uuid.UUID(bytes=bytes(value)))
    return value


# ordinal -> (unit, is local timestamp)
_TIMESTAMP_UNITS = {
    15: ("ms", False),
    16: ("us", False),
    17: ("ns", False),
    18: ("ms", True),
    19: ("us", True),
    20: ("ns", True),
}


def raw_stat(raw: dict[str, Any], field: str) -> Any:
    stats = raw.get("ColumnStatsMetadata")
    if isinstance(stats, tuple):
        stats = stats[1]
    return None if stats is None else stats.get(field)


def _untag(v: Any) -> Any:
    if isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], str):
        return v[1]
    return v


# --- merging (HoodieMetadataPayload.preCombine) --------------------------------------------------


def merge(older: Record | None, newer: Record | None) -> Record | None:
    """Combine two versions of one key; ``newer`` comes later in log order."""
    if newer is None:
        return None  # an empty payload (delete) wins over anything older
    if older is None:
        return newer
    t = newer.get("type")
    if t in (TYPE_FILES, TYPE_ALL_PARTITIONS) and older.get("type") == t:
        return _merge_files(older, newer)
    if t in (TYPE_COLUMN_STATS, TYPE_PARTITION_STATS) and older.get("type") == t:
        return _merge_column_stats(older, newer)
    return newer  # bloom filters, record index, secondary index: newer wins


def _merge_files(older: Record, newer: Record) -> Record:
    merged: dict[str, dict[str, Any]] = dict(older.get("filesystemMetadata") or {})
    for name, info in (newer.get("filesystemMetadata") or {}).items():
        prev = merged.get(name)
        if prev is None:
            merged[name] = info
        elif info.get("isDeleted"):
            if prev.get("isDeleted"):
                merged[name] = info
            else:
                del merged[name]
        else:
            merged[name] = {"size": max(prev.get("size") or 0, info.get("size") or 0), "isDeleted": False}
    return {**newer, "filesystemMetadata": merged}


def _merge_column_stats(older: Record, newer: Record) -> Record:
    o = older.get("ColumnStatsMetadata")
    n = newer.get("ColumnStatsMetadata")
    if o is None or n is None or o.get("isDeleted") or n.get("isDeleted") or n.get("isTightBound"):
        return newer
    merged = dict(n)
    merged["minValue"] = _pick(o.get("minValue"), n.get("minValue"), min)
    merged["maxValue"] = _pick(o.get("maxValue"), n.get("maxValue"), max)
    for f in ("valueCount", "nullCount", "totalSize", "totalUncompressedSize"):
        a, b = o.get(f), n.get(f)
        merged[f] = None if a is None and b is None else (a or 0) + (b or 0)
    return {**newer, "ColumnStatsMetadata": merged}


def _pick(a: Any, b: Any, fn: Callable[[Any, Any], Any]) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    try:
        return fn(a, b)
    except TypeError:
        return b


def is_live(record: Record | None) -> bool:
    """False for deletes and for records whose payload marks them deleted."""
    if record is None:
        return False
    t = record.get("type")
    if t in (TYPE_COLUMN_STATS, TYPE_PARTITION_STATS):
        stats = record.get("ColumnStatsMetadata")
        return stats is not None and not stats.get("isDeleted")
    if t == TYPE_BLOOM_FILTER:
        bloom = record.get("BloomFilterMetadata")
        return bloom is not None and not bloom.get("isDeleted")
    if t == TYPE_SECONDARY_INDEX:
        si = record.get("SecondaryIndexMetadata")
        return si is not None and not si.get("isDeleted")
    if t == TYPE_RECORD_INDEX:
        return record.get("recordIndexMetadata") is not None
    return True


def live_files(record: Record | None) -> dict[str, int]:
    """File name → size of a ``files`` record, tombstones dropped."""
    if record is None:
        return {}
    return {
        name: int(info.get("size") or 0)
        for name, info in (record.get("filesystemMetadata") or {}).items()
        if not info.get("isDeleted")
    }


def record_index_file_id(info: dict[str, Any]) -> str:
    """The data file group id of a record-index entry (``fileIdEncoding`` 0: UUID bits + index)."""
    if info.get("fileIdEncoding", 0) == 1 or (info.get("fileId") and info.get("fileIdHighBits") is None):
        return info.get("fileId") or ""
    hi = int(info["fileIdHighBits"]) & 0xFFFFFFFFFFFFFFFF
    lo = int(info["fileIdLowBits"]) & 0xFFFFFFFFFFFFFFFF
    uid = str(uuid.UUID(int=(hi << 64) | lo))
    index = info.get("fileIndex")
    return uid if index is None or index == -1 else f"{uid}-{index}"
