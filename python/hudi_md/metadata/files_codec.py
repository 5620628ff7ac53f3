"""A fast decoder of ``files`` partition records, for the writer schema Hudi (and hudi-md) write.

Planning a table without a partition filter decodes one ``files`` record per partition: a million
of them at 1M partitions, where fastavro's general decoder and the union-tag clean-up cost ~50 µs
a record. A ``files`` record is a handful of fields, so this decoder reads them directly from the
Avro binary: the nullable string fields before ``key`` (Hudi's meta fields), ``key``, ``type``, the
``filesystemMetadata`` map of ``HoodieMetadataFileInfo {size, isDeleted}``, and the other payload
unions, which a ``files`` record leaves null.

It is built only for a writer schema of exactly that shape (:func:`files_record_decoder` returns
None otherwise), and it answers None for a record it does not expect (a payload union that is not
null, bytes left over or missing): the caller then decodes that record with fastavro. Its output
equals :func:`hudi_md.metadata.records.normalize` of fastavro's.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from hudi_md.metadata.records import Record

__all__ = ["files_record_decoder", "files_record_shape"]

FilesDecoder = Callable[[bytes], Record | None]

_PAYLOAD_AFTER_FILES = (
    "BloomFilterMetadata",
    "ColumnStatsMetadata",
    "recordIndexMetadata",
    "SecondaryIndexMetadata",
)


class _Unexpected(Exception):
    pass


def _is_string(t: Any) -> bool:
    return t == "string" or (isinstance(t, dict) and t.get("type") == "string")


def _is_nullable_string(t: Any) -> bool:
    return isinstance(t, list) and len(t) == 2 and t[0] == "null" and _is_string(t[1])


def _is_file_info_map(t: Any) -> bool:
    if not (isinstance(t, list) and len(t) == 2 and t[0] == "null" and isinstance(t[1], dict)):
        return False
    m = t[1]
    if m.get("type") != "map" or not isinstance(m.get("values"), dict):
        return False
    info = m["values"]
    fields = [(f.get("name"), f.get("type")) for f in info.get("fields") or []]
    return info.get("type") == "record" and fields == [("size", "long"), ("isDeleted", "boolean")]


@lru_cache(maxsize=8)
def files_record_shape(schema_json: str) -> int | None:
    """The number of nullable string fields before ``key`` in a ``files`` writer schema of the
    known shape, or None for any other schema."""
    try:
        schema = json.loads(schema_json)
    except ValueError:
        return None
    fields = schema.get("fields") if isinstance(schema, dict) else None
    if not isinstance(fields, list):
        return None
    names = [f.get("name") for f in fields]
    if "key" not in names:
        return None
    at = names.index("key")
    leading = fields[:at]
    if not all(_is_nullable_string(f.get("type")) for f in leading):
        return None
    rest = fields[at:]
    expected = ["key", "type", "filesystemMetadata", *_PAYLOAD_AFTER_FILES]
    if [f.get("name") for f in rest] != expected:
        return None
    if not _is_string(rest[0]["type"]) or rest[1]["type"] != "int" or not _is_file_info_map(rest[2]["type"]):
        return None
    for f in rest[3:]:
        t = f["type"]
        if not (isinstance(t, list) and t and t[0] == "null"):
            return None
    return len(leading)


@lru_cache(maxsize=8)
def files_record_decoder(schema_json: str) -> FilesDecoder | None:
    """A decoder for records written with ``schema_json``, or None if its shape is not the known one."""
    nullable_before_key = files_record_shape(schema_json)
    if nullable_before_key is None:
        return None

    def decode(data: bytes) -> Record | None:
        try:
            return _decode(data, nullable_before_key)
        except (_Unexpected, IndexError, UnicodeDecodeError):
            return None

    return decode


def _decode(data: bytes, nullable_before_key: int) -> Record:
    pos = 0

    def long() -> int:
        nonlocal pos
        b = data[pos]
        pos += 1
        n = b & 0x7F
        shift = 7
        while b & 0x80:
            b = data[pos]
            pos += 1
            n |= (b & 0x7F) << shift
            shift += 7
        return (n >> 1) ^ -(n & 1)

    def string() -> str:
        nonlocal pos
        n = long()
        if n < 0 or pos + n > len(data):
            raise _Unexpected
        s = data[pos : pos + n].decode("utf-8")
        pos += n
        return s

    for _ in range(nullable_before_key):
        branch = long()
        if branch == 1:
            string()
        elif branch != 0:
            raise _Unexpected
    key = string()
    kind = long()
    files: dict[str, dict[str, Any]] | None = None
    branch = long()
    if branch == 1:
        files = {}
        while True:
            count = long()
            if count == 0:
                break
            if count < 0:
                count = -count
                long()  # the block's byte size
            for _ in range(count):
                name = string()
                size = long()
                flag = data[pos]
                pos += 1
                if flag > 1:
                    raise _Unexpected
                files[name] = {"size": size, "isDeleted": flag == 1}
    elif branch != 0:
        raise _Unexpected
    for _ in _PAYLOAD_AFTER_FILES:
        if long() != 0:
            raise _Unexpected  # not a files record: the general decoder reads it
    if pos != len(data):
        raise _Unexpected
    out: Record = {"key": key, "type": kind, "filesystemMetadata": files}
    for name in _PAYLOAD_AFTER_FILES:
        out[name] = None
    return out
