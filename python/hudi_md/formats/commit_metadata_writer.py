"""The Avro bytes of instant files (plans; commit, clean, rollback metadata), as Hudi 1.1/1.2 writes them.

Hudi serialises every instant's metadata with ``TimelineMetadataUtils.serializeAvroMetadata``: a
Java ``DataFileWriter`` over the generated class's ``SCHEMA$``, no codec set, one record, one
flush. The resulting bytes (checked against every Avro instant file of the v9 fixtures) are::

    "Obj\\x01" | metadata map {"avro.schema": schema JSON} (one block, no "avro.codec" entry)
    | 16-byte sync marker | one data block: count 1, byte size, datum | sync marker

The embedded schema is the generated class's ``SCHEMA$`` printed by ``Schema.toString()``: compact
JSON in Avro's own key order, every string type carrying ``"avro.java.string": "String"`` (added
by avro-maven-plugin's ``stringType=String``). The ``schemas/*.avsc`` files next to this module
hold exactly that form, pretty-printed, so :func:`schema_json` reproduces the embedded text byte
for byte. Where the fixtures had a file of the kind, the ``.avsc`` is its embedded schema
(commit, replacecommit, requested replace / clustering plan, compaction plan, rollback plan and
metadata, index plan and commit metadata). Clean, cleaner plan, restore, restore plan and
``HoodieLSMTimelineInstant`` were derived from Hudi's ``hudi-common/src/main/avro`` sources by
applying the same ``SCHEMA$`` transformation, which reproduces the embedded rollback and index
schemas exactly from their sources. ``HoodieMetadata.avsc`` is the MDT record schema from the
v9 MDT log-block headers with the five ``_hoodie_*`` fields removed.

Java's sync marker is random (MD5 of a UUID and the clock), so Hudi-written files differ from run
to run in those 32 bytes only; pass ``sync_marker`` to reproduce a given file exactly.
"""

from __future__ import annotations

import functools
import importlib.resources
import io
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import fastavro

from hudi_md.errors import InvalidOptionError
from hudi_md.formats import avro
from hudi_md.formats.commit_metadata import WriteStat

__all__ = [
    "INSTANT_KINDS",
    "commit_metadata_record",
    "schema_json",
    "serialize_instant_metadata",
    "write_stat_record",
]

# Instant kind -> schema file (record name) it is written with.
INSTANT_KINDS: Mapping[str, str] = {
    "commit": "HoodieCommitMetadata",  # commit, deltacommit and their .inflight files
    "deltacommit": "HoodieCommitMetadata",
    "replacecommit": "HoodieReplaceCommitMetadata",
    "requested_replace": "HoodieRequestedReplaceMetadata",  # replacecommit/clustering .requested
    "compaction_plan": "HoodieCompactionPlan",  # compaction/logcompaction .requested
    "cleaner_plan": "HoodieCleanerPlan",
    "clean": "HoodieCleanMetadata",
    "rollback_plan": "HoodieRollbackPlan",
    "rollback": "HoodieRollbackMetadata",
    "restore_plan": "HoodieRestorePlan",
    "restore": "HoodieRestoreMetadata",
    "index_plan": "HoodieIndexPlan",
    "index_commit": "HoodieIndexCommitMetadata",
}

_MAGIC = b"Obj\x01"
_SYNC_SIZE = 16
_ERROR_TEXT_LIMIT = 400  # fastavro puts the whole schema into its messages

# HoodieWriteStat fields that are Java primitive longs: an unset one is 0, never null. The other
# fields are objects and stay null (totalLogFiles has no Java property at all and is always null).
_WRITE_STAT_ZERO_FIELDS = frozenset(
    {
        "numWrites",
        "numDeletes",
        "numUpdateWrites",
        "totalWriteBytes",
        "totalWriteErrors",
        "totalLogRecords",
        "totalUpdatedRecordsCompacted",
        "numInserts",
        "totalLogBlocks",
        "totalCorruptLogBlock",
        "totalRollbackBlocks",
        "fileSizeInBytes",
        "totalLogFilesCompacted",
        "totalLogReadTimeMs",
        "totalLogSizeCompacted",
        "numUpdates",
    }
)
# Java's String.valueOf(null): what Hudi stores as prevCommit of a new file group.
_NULL_PREV_COMMIT = "null"


@functools.cache
def _schema_dict(name: str) -> dict[str, Any]:
    resource = importlib.resources.files("hudi_md.formats").joinpath(f"schemas/{name}.avsc")
    try:
        text = resource.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InvalidOptionError(f"no schema named {name!r} in hudi_md/formats/schemas") from None
    value = json.loads(text)
    if not isinstance(value, dict):
        raise InvalidOptionError(f"schema {name!r} is not a record schema")
    return value


@functools.cache
def schema_json(name: str) -> str:
    """The schema ``schemas/<name>.avsc`` as Java's ``Schema.toString()`` prints it.

    That is compact JSON with non-ASCII characters left unescaped (Jackson's default); this is the
    exact text Hudi embeds in instant files and puts into log-block ``SCHEMA`` headers.
    """
    return json.dumps(_schema_dict(name), separators=(",", ":"), ensure_ascii=False)


def _zigzag_long(value: int) -> bytes:
    """Avro's variable-length zig-zag encoding of a long."""
    n = (value << 1) ^ (value >> 63)
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _avro_bytes(data: bytes) -> bytes:
    return _zigzag_long(len(data)) + data


def _short_error(exc: Exception) -> str:
    text = str(exc)
    if len(text) > _ERROR_TEXT_LIMIT:
        text = text[:_ERROR_TEXT_LIMIT] + " ..."
    return f"{type(exc).__name__}: {text}"


def serialize_instant_metadata(
    kind: str, record: Mapping[str, Any], *, sync_marker: bytes | None = None
) -> bytes:
    """Encode ``record`` as the Avro instant file Hudi writes for ``kind`` (see :data:`INSTANT_KINDS`).

    ``record`` uses Hudi's field names; fields left out take their schema default, and a field the
    schema does not know, or a required field without default, is an error (so a misspelt key
    cannot silently vanish). Values follow fastavro's conventions (maps as dicts, records as
    dicts). ``sync_marker`` (16 bytes) defaults to a random one, as in Java.

    Raises :class:`InvalidOptionError` for an unknown kind, a bad sync marker or a record that does
    not fit the schema.
    """
    name = INSTANT_KINDS.get(kind)
    if name is None:
        raise InvalidOptionError(
            f"unknown instant metadata kind {kind!r}; expected one of {sorted(INSTANT_KINDS)}"
        )
    if sync_marker is None:
        sync_marker = os.urandom(_SYNC_SIZE)
    if len(sync_marker) != _SYNC_SIZE:
        raise InvalidOptionError(f"sync marker must be {_SYNC_SIZE} bytes, got {len(sync_marker)}")
    text = schema_json(name)
    datum = io.BytesIO()
    try:
        fastavro.schemaless_writer(datum, avro.parse_schema(text), dict(record), strict_allow_default=True)
    except (ValueError, TypeError, AttributeError, KeyError, OverflowError) as exc:
        raise InvalidOptionError(f"{kind} metadata does not fit {name}: {_short_error(exc)}") from exc
    payload = datum.getvalue()
    header = (
        _MAGIC
        + _zigzag_long(1)
        + _avro_bytes(b"avro.schema")
        + _avro_bytes(text.encode("utf-8"))
        + _zigzag_long(0)
        + sync_marker
    )
    block = _zigzag_long(1) + _zigzag_long(len(payload)) + payload + sync_marker
    return header + block


def write_stat_record(partition_path: str, stat: Mapping[str, Any]) -> dict[str, Any]:
    """One ``HoodieWriteStat`` with every field present, in schema order, filled like Hudi's.

    Unset counters are ``0`` (Java primitives), ``prevCommit`` is the string ``"null"`` (a new file
    group), ``partitionPath`` is ``partition_path`` and everything else is ``None``, the way Hudi
    1.1's completed commits look. Raises :class:`InvalidOptionError` on an unknown field name.
    """
    fields = _write_stat_fields()
    unknown = set(stat) - set(fields)
    if unknown:
        raise InvalidOptionError(f"unknown HoodieWriteStat field(s) {sorted(unknown)}")
    out: dict[str, Any] = {}
    for field in fields:
        if field in stat:
            out[field] = stat[field]
        elif field in _WRITE_STAT_ZERO_FIELDS:
            out[field] = 0
        elif field == "prevCommit":
            out[field] = _NULL_PREV_COMMIT
        elif field == "partitionPath":
            out[field] = partition_path
        else:
            out[field] = None
    return out


@functools.lru_cache(maxsize=1)
def _write_stat_fields() -> tuple[str, ...]:
    (stats_map,) = (
        branch
        for branch in _field(_schema_dict("HoodieCommitMetadata"), "partitionToWriteStats")["type"]
        if branch != "null"
    )
    return tuple(f["name"] for f in stats_map["values"]["items"]["fields"])


def _field(record_schema: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    for field in record_schema["fields"]:
        if field["name"] == name:
            return field
    raise KeyError(name)


def stats_by_partition(stats: Iterable[WriteStat]) -> dict[str, list[WriteStat]]:
    """Write stats grouped as ``partitionToWriteStats`` holds them."""
    out: dict[str, list[WriteStat]] = {}
    for stat in stats:
        out.setdefault(stat.partition_path, []).append(stat)
    return out


def commit_metadata_record(
    partition_to_write_stats: Mapping[str, Sequence[WriteStat | Mapping[str, Any]]],
    *,
    operation_type: str,
    extra_metadata: Mapping[str, str],
    compacted: bool = False,
    partition_to_replace_file_ids: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, Any]:
    """A complete ``HoodieCommitMetadata`` (or, with replaced file ids, ``HoodieReplaceCommitMetadata``).

    Write stats are completed by :func:`write_stat_record`. ``version`` is ``None``: Hudi 1.1
    converts its Java commit object to Avro without setting it (the schema default of 1 is not
    applied by that conversion), and all 400+ v9 commit-like files of the fixtures hold null. Serialise
    the result with kind ``"commit"``/``"deltacommit"``, or ``"replacecommit"`` when
    ``partition_to_replace_file_ids`` is given (insert overwrite, clustering).
    """
    record: dict[str, Any] = {
        "partitionToWriteStats": {
            str(partition): [
                write_stat_record(str(partition), s.to_record() if isinstance(s, WriteStat) else s)
                for s in stats
            ]
            for partition, stats in partition_to_write_stats.items()
        },
        "compacted": compacted,
        "extraMetadata": dict(extra_metadata),
        "version": None,
        "operationType": operation_type,
    }
    if partition_to_replace_file_ids is not None:
        record["partitionToReplaceFileIds"] = {
            str(partition): list(ids) for partition, ids in partition_to_replace_file_ids.items()
        }
    return record


def cleaner_plan_record(
    *,
    earliest_to_retain: str | None,
    last_completed: str,
    policy: str,
    file_uris: Mapping[str, Sequence[str]],
    partitions_to_delete: Sequence[str] = (),
) -> dict[str, Any]:
    """A ``HoodieCleanerPlan`` (version 2) deleting ``file_uris`` (partition → full file paths)
    and the partitions ``partitions_to_delete`` (left without files)."""
    return {
        "earliestInstantToRetain": (
            {"timestamp": earliest_to_retain, "action": "commit", "state": "COMPLETED"}
            if earliest_to_retain
            else None
        ),
        "lastCompletedCommitTimestamp": last_completed,
        "policy": policy,
        "filesToBeDeletedPerPartition": {},
        "version": 2,
        "filePathsToBeDeletedPerPartition": {
            p: [{"filePath": uri, "isBootstrapBaseFile": False} for uri in uris]
            for p, uris in file_uris.items()
        },
        "partitionsToBeDeleted": list(partitions_to_delete),
        "extraMetadata": {},
    }


def clean_metadata_record(
    *,
    instant: str,
    earliest_to_retain: str | None,
    last_completed: str,
    policy: str,
    deleted: Mapping[str, Sequence[str]],
    partitions_deleted: Sequence[str] = (),
) -> dict[str, Any]:
    """The ``HoodieCleanMetadata`` (version 2) of a clean that deleted ``deleted`` (partition →
    names) and the partitions ``partitions_deleted``."""
    return {
        "startCleanTime": instant,
        "timeTakenInMillis": 0,
        "totalFilesDeleted": sum(len(v) for v in deleted.values()),
        "earliestCommitToRetain": earliest_to_retain or "",
        "lastCompletedCommitTimestamp": last_completed,
        "partitionMetadata": {
            p: {
                "partitionPath": p,
                "policy": policy,
                "deletePathPatterns": list(names),
                "successDeleteFiles": list(names),
                "failedDeleteFiles": [],
                "isPartitionDeleted": p in partitions_deleted,
            }
            for p, names in deleted.items()
        },
        "version": 2,
        "bootstrapPartitionMetadata": {},
        "extraMetadata": {},
    }
