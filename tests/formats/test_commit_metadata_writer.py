"""Timeline instant writer: schemas and container bytes checked against files written by Hudi 1.0/1.1."""

from __future__ import annotations

import io
import json
import re
import zipfile
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Any

import fastavro
import pytest

from hudi_md.errors import InvalidOptionError
from hudi_md.formats.commit_metadata import parse_commit_metadata, parse_instant_metadata
from hudi_md.formats.commit_metadata_writer import (
    INSTANT_KINDS,
    commit_metadata_record,
    schema_json,
    serialize_instant_metadata,
    write_stat_record,
)

from fixtures import fixtures_dir

FIXTURES = fixtures_dir()
SCHEMA_DIR = Path(__file__).resolve().parents[2] / "python" / "hudi_md" / "formats" / "schemas"
INSTANT = re.compile(r"^\d{17}(_\d{17})?\.")
# File-name suffix -> writer kind; longest suffixes first. Inflight commit-like instants hold
# HoodieCommitMetadata, a pending replacecommit included.
SUFFIX_KINDS = [
    (".deltacommit.inflight", "deltacommit"),
    (".replacecommit.inflight", "commit"),
    (".replacecommit.requested", "requested_replace"),
    (".clustering.requested", "requested_replace"),
    (".compaction.requested", "compaction_plan"),
    (".rollback.requested", "rollback_plan"),
    (".indexing.requested", "index_plan"),
    (".deltacommit", "deltacommit"),
    (".replacecommit", "replacecommit"),
    (".commit", "commit"),
    (".inflight", "commit"),
    (".rollback", "rollback"),
    (".indexing", "index_commit"),
]

needs_fixtures = pytest.mark.skipif(not FIXTURES.is_dir(), reason="hudi-rs fixtures not available")


@lru_cache(maxsize=1)
def avro_instants() -> list[tuple[str, str, bytes]]:
    """(archive, member, bytes) of every Avro instant file in the v8/v9 zips, MDT timelines included."""
    out = []
    for archive in sorted(FIXTURES.rglob("*.zip")):
        if not re.match(r"v[89]_", archive.name):
            continue
        with zipfile.ZipFile(archive) as zf:
            for member in zf.namelist():
                if member.startswith("__MACOSX") or "/.hoodie/" not in member:
                    continue
                if not INSTANT.match(member.rsplit("/", 1)[-1]):
                    continue
                data = zf.read(member)
                if data[:4] == b"Obj\x01":
                    out.append((archive.name, member, data))
    return out


def kind_of(member: str) -> str:
    name = member.rsplit("/", 1)[-1]
    return next(kind for suffix, kind in SUFFIX_KINDS if name.endswith(suffix))


def embedded_schema(data: bytes) -> str:
    return fastavro.reader(io.BytesIO(data)).metadata["avro.schema"]


# --- schemas ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", sorted(set(INSTANT_KINDS.values()) | {"HoodieMetadata", "HoodieLSMTimelineInstant"})
)
def test_schema_files_parse_and_are_named_by_record(name: str) -> None:
    schema = json.loads((SCHEMA_DIR / f"{name}.avsc").read_text(encoding="utf-8"))
    fastavro.parse_schema(schema)
    expected = "HoodieMetadataRecord" if name == "HoodieMetadata" else name
    assert schema["name"] == expected
    assert schema["namespace"] == "org.apache.hudi.avro.model"
    # schema_json is the compact Java form of the same document
    assert json.loads(schema_json(name)) == schema


@needs_fixtures
def test_schema_json_is_the_text_hudi_embeds() -> None:
    """The schema embedded in every v8/v9 instant is schema_json(...) of its kind, to the character."""
    seen: Counter[str] = Counter()
    for _archive, member, data in avro_instants():
        kind = kind_of(member)
        assert embedded_schema(data) == schema_json(INSTANT_KINDS[kind]), member
        seen[INSTANT_KINDS[kind]] += 1
    assert set(seen) == {
        "HoodieCommitMetadata",
        "HoodieReplaceCommitMetadata",
        "HoodieRequestedReplaceMetadata",
        "HoodieCompactionPlan",
        "HoodieRollbackPlan",
        "HoodieRollbackMetadata",
        "HoodieIndexPlan",
        "HoodieIndexCommitMetadata",
    }


def _fields(name: str) -> list[str]:
    return [f["name"] for f in json.loads(schema_json(name))["fields"]]


def test_schemas_without_fixture_files_have_hudi_1_1_fields() -> None:
    """Clean, restore and LSM schemas (no fixture holds them): field order as in Hudi 1.1's sources."""
    assert _fields("HoodieCleanMetadata") == [
        "startCleanTime",
        "timeTakenInMillis",
        "totalFilesDeleted",
        "earliestCommitToRetain",
        "lastCompletedCommitTimestamp",
        "partitionMetadata",
        "version",
        "bootstrapPartitionMetadata",
        "extraMetadata",
    ]
    assert _fields("HoodieCleanerPlan") == [
        "earliestInstantToRetain",
        "lastCompletedCommitTimestamp",
        "policy",
        "filesToBeDeletedPerPartition",
        "version",
        "filePathsToBeDeletedPerPartition",
        "partitionsToBeDeleted",
        "extraMetadata",
    ]
    assert _fields("HoodieRestorePlan") == ["instantsToRollback", "version"]
    assert _fields("HoodieRestoreMetadata") == [
        "startRestoreTime",
        "timeTakenInMillis",
        "instantsToRollback",
        "hoodieRestoreMetadata",
        "version",
        "restoreInstantInfo",
    ]
    assert _fields("HoodieLSMTimelineInstant") == [
        "instantTime",
        "completionTime",
        "action",
        "metadata",
        "plan",
        "version",
    ]


def test_restore_metadata_embeds_the_rollback_metadata_schema() -> None:
    """The rollback metadata nested in a restore must be the one rollback instants are written with."""
    restore = json.loads(schema_json("HoodieRestoreMetadata"))
    (field,) = [f for f in restore["fields"] if f["name"] == "hoodieRestoreMetadata"]
    nested = field["type"]["values"]["items"][1]
    standalone = json.loads(schema_json("HoodieRollbackMetadata"))
    del standalone["namespace"]  # inherited from the enclosing record when nested
    assert nested == standalone


def test_metadata_record_union_order() -> None:
    """minValue/maxValue branch order decides the union index on disk (reference §2.4, Hudi 1.1+)."""
    schema = json.loads(schema_json("HoodieMetadata"))
    assert [f["name"] for f in schema["fields"]] == [
        "key",
        "type",
        "filesystemMetadata",
        "BloomFilterMetadata",
        "ColumnStatsMetadata",
        "recordIndexMetadata",
        "SecondaryIndexMetadata",
    ]
    (stats,) = [f for f in schema["fields"] if f["name"] == "ColumnStatsMetadata"]
    min_value = next(f for f in stats["type"][1]["fields"] if f["name"] == "minValue")
    names = [b if isinstance(b, str) else b["name"] for b in min_value["type"]]
    assert names == [
        "null",
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
        "ArrayWrapper",
    ]


# --- container bytes -------------------------------------------------------------------------------


@needs_fixtures
def test_reserialising_hudi_instants_reproduces_them_byte_for_byte() -> None:
    """Decode each v8/v9 instant with our reader and write it again with the file's sync marker."""
    kinds: Counter[str] = Counter()
    for archive, member, data in avro_instants():
        kind = kind_of(member)
        record = parse_instant_metadata(data, member)
        out = serialize_instant_metadata(kind, record, sync_marker=data[-16:])
        assert out == data, f"{archive}:{member}"
        kinds[kind] += 1
    assert len(kinds) >= 9 and sum(kinds.values()) > 400


@needs_fixtures
def test_reserialised_instant_with_fresh_sync_marker_decodes_identically() -> None:
    for _archive, member, data in avro_instants()[::25]:
        record = parse_instant_metadata(data, member)
        out = serialize_instant_metadata(kind_of(member), record)
        assert out[-16:] != data[-16:]
        assert parse_instant_metadata(out, member) == record
        assert list(fastavro.reader(io.BytesIO(out))) == list(fastavro.reader(io.BytesIO(data)))


def test_container_layout() -> None:
    sync = bytes(range(16))
    out = serialize_instant_metadata("index_plan", {"indexPartitionInfos": []}, sync_marker=sync)
    text = schema_json("HoodieIndexPlan").encode()
    reader = fastavro.reader(io.BytesIO(out))
    assert reader.metadata == {"avro.schema": text.decode()}  # no avro.codec entry, like Java's null codec
    assert reader.codec == "null"
    assert out.startswith(b"Obj\x01\x02\x16avro.schema")
    # map: 1 entry, key, schema as bytes (zig-zag varint length), end of map; then the sync marker
    n, length = len(text) * 2, b""
    while n > 0x7F:
        length, n = length + bytes([n & 0x7F | 0x80]), n >> 7
    header = b"Obj\x01\x02\x16avro.schema" + length + bytes([n]) + text + b"\x00"
    assert out[: len(header)] == header
    header_end = len(header)
    assert out[header_end : header_end + 16] == sync
    # one block: count 1, size 4, datum (version: branch 0, int 1; infos: branch 1, empty array), sync
    assert out[header_end + 16 :] == bytes([0x02, 0x08, 0x00, 0x02, 0x02, 0x00]) + sync
    assert list(reader) == [{"version": 1, "indexPartitionInfos": []}]


# --- records ---------------------------------------------------------------------------------------


def _with_defaults(name: str, record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with every absent field, nested ones included, set to its schema default."""
    names: dict[str, Any] = {}

    def fill(schema: Any, value: Any) -> Any:
        if isinstance(schema, str):
            return fill(names[schema], value) if schema in names else value
        if isinstance(schema, list):  # the unions here have one non-null branch
            (branch,) = [b for b in schema if b != "null"]
            return None if value is None else fill(branch, value)
        kind = schema["type"]
        if kind == "record":
            names[schema["name"]] = schema
            return {
                f["name"]: fill(f["type"], value[f["name"]] if f["name"] in value else f.get("default"))
                for f in schema["fields"]
            }
        if kind == "map":
            return {k: fill(schema["values"], v) for k, v in value.items()}
        if kind == "array":
            return [fill(schema["items"], v) for v in value]
        return value

    return fill(json.loads(schema_json(name)), record)


SAMPLES: dict[str, dict[str, Any]] = {
    "cleaner_plan": {
        "earliestInstantToRetain": {
            "timestamp": "20260101000000000",
            "action": "commit",
            "state": "COMPLETED",
        },
        "lastCompletedCommitTimestamp": "20260102000000000",
        "policy": "KEEP_LATEST_COMMITS",
        "filePathsToBeDeletedPerPartition": {
            "p=1": [
                {"filePath": "s3://b/t/p=1/f1_0-1-1_20250101000000000.parquet", "isBootstrapBaseFile": False}
            ]
        },
        "partitionsToBeDeleted": [],
        "extraMetadata": {"hudi.version": "1.1.1"},
    },
    "clean": {
        "startCleanTime": "20260103000000000",
        "timeTakenInMillis": 12,
        "totalFilesDeleted": 1,
        "earliestCommitToRetain": "20260101000000000",
        "lastCompletedCommitTimestamp": "20260102000000000",
        "partitionMetadata": {
            "p=1": {
                "partitionPath": "p=1",
                "policy": "KEEP_LATEST_COMMITS",
                "deletePathPatterns": ["f1_0-1-1_20250101000000000.parquet"],
                "successDeleteFiles": ["f1_0-1-1_20250101000000000.parquet"],
                "failedDeleteFiles": [],
                "isPartitionDeleted": False,
            }
        },
        "version": 2,
        "bootstrapPartitionMetadata": {},
    },
    "rollback_plan": {
        "instantToRollback": {"commitTime": "20260104000000000", "action": "deltacommit"},
        "RollbackRequests": [
            {
                "partitionPath": "",
                "fileId": "f1",
                "latestBaseInstant": "20260101000000000",
                "filesToBeDeleted": [".f1_20260104000000000.log.1_0-1-1"],
                "logBlocksToBeDeleted": {},
            }
        ],
    },
    "rollback": {
        "startRollbackTime": "20260105000000000",
        "timeTakenInMillis": 3,
        "totalFilesDeleted": 1,
        "commitsRollback": ["20260104000000000"],
        "partitionMetadata": {
            "": {
                "partitionPath": "",
                "successDeleteFiles": ["/t/.f1_20260104000000000.log.1_0-1-1"],
                "failedDeleteFiles": [],
                "rollbackLogFiles": {},
                "logFilesFromFailedCommit": {},
            }
        },
        "instantsRollback": [{"commitTime": "20260104000000000", "action": "deltacommit"}],
    },
    "restore_plan": {"instantsToRollback": [{"commitTime": "20260104000000000", "action": "commit"}]},
    "restore": {
        "startRestoreTime": "20260106000000000",
        "timeTakenInMillis": 9,
        "instantsToRollback": ["20260104000000000"],
        "hoodieRestoreMetadata": {
            "20260104000000000": [
                {
                    "startRollbackTime": "20260106000000000",
                    "timeTakenInMillis": 3,
                    "totalFilesDeleted": 0,
                    "commitsRollback": ["20260104000000000"],
                    "partitionMetadata": {},
                    "version": 1,
                    "instantsRollback": [],
                }
            ]
        },
        "restoreInstantInfo": [{"commitTime": "20260104000000000", "action": "commit"}],
    },
    "compaction_plan": {
        "operations": [
            {
                "baseInstantTime": "20260101000000000",
                "deltaFilePaths": [".f1_20260101000000000.log.1_0-1-1"],
                "dataFilePath": "f1_0-1-1_20260101000000000.parquet",
                "fileId": "f1",
                "partitionPath": "p=1",
                "metrics": {"TOTAL_LOG_FILES": 1.0},
            }
        ],
        "extraMetadata": {},
    },
    "requested_replace": {
        "operationType": "CLUSTER",
        "clusteringPlan": {
            "inputGroups": [
                {
                    "slices": [{"dataFilePath": "p/f1.parquet", "fileId": "f1", "partitionPath": "p"}],
                    "numOutputFileGroups": 1,
                }
            ],
            "strategy": {"strategyClassName": "x.Strategy", "strategyParams": {}},
            "preserveHoodieMetadata": True,
        },
    },
    "index_plan": {
        "indexPartitionInfos": [
            {
                "metadataPartitionPath": "column_stats",
                "indexUptoInstant": "20260101000000000",
                "extraMetadata": {},
            }
        ]
    },
    "index_commit": {"operationType": "INDEX", "indexPartitionInfos": []},
}


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_round_trip_through_our_reader(kind: str) -> None:
    out = serialize_instant_metadata(kind, SAMPLES[kind])
    assert parse_instant_metadata(out, kind) == _with_defaults(INSTANT_KINDS[kind], SAMPLES[kind])


def test_commit_metadata_record_defaults_and_round_trip() -> None:
    record = commit_metadata_record(
        {
            "p=1": [
                {
                    "fileId": "f1-0",
                    "path": "p=1/f1-0_0-1-1_20260101000000000.parquet",
                    "numWrites": 3,
                    "numInserts": 3,
                    "totalWriteBytes": 100,
                    "fileSizeInBytes": 100,
                }
            ]
        },
        operation_type="INSERT",
        extra_metadata={"schema": '{"type":"record","name":"r","fields":[]}'},
    )
    stat = record["partitionToWriteStats"]["p=1"][0]
    assert stat["prevCommit"] == "null" and stat["partitionPath"] == "p=1"
    assert stat["numDeletes"] == 0 and stat["totalLogFiles"] is None and stat["logFiles"] is None
    assert record["version"] is None and record["compacted"] is False
    data = serialize_instant_metadata("commit", record)
    assert parse_instant_metadata(data, "c") == record
    meta = parse_commit_metadata(data, "c")
    assert meta.operation_type == "INSERT"
    assert meta.files_added() == {"p=1": {"f1-0_0-1-1_20260101000000000.parquet": 100}}

    replace = commit_metadata_record(
        {},
        operation_type="INSERT_OVERWRITE",
        extra_metadata={},
        partition_to_replace_file_ids={"p=1": ["f0-0"]},
    )
    data = serialize_instant_metadata("replacecommit", replace)
    assert parse_commit_metadata(data, "r").replaced_file_ids() == {"p=1": ["f0-0"]}


@needs_fixtures
def test_commit_metadata_record_rebuilds_hudi_commits() -> None:
    """Given only the non-default stat values, the builder yields exactly what Hudi 1.1 wrote."""
    checked = 0
    for _archive, member, data in avro_instants():
        if not member.endswith((".commit", ".deltacommit", ".replacecommit")) or "v9_" not in _archive:
            continue
        original = parse_instant_metadata(data, member)
        sparse = {}
        for partition, stats in original["partitionToWriteStats"].items():
            defaults = write_stat_record(partition, {})
            sparse[partition] = [{k: v for k, v in stat.items() if defaults[k] != v} for stat in stats]
        rebuilt = commit_metadata_record(
            sparse,
            operation_type=original["operationType"],
            extra_metadata=original["extraMetadata"],
            compacted=original["compacted"],
            partition_to_replace_file_ids=original.get("partitionToReplaceFileIds"),
        )
        assert rebuilt == original, member
        kind = "replacecommit" if "partitionToReplaceFileIds" in original else "commit"
        assert serialize_instant_metadata(kind, rebuilt, sync_marker=data[-16:]) == data
        checked += 1
    assert checked > 100


# --- errors ----------------------------------------------------------------------------------------


def test_errors() -> None:
    with pytest.raises(InvalidOptionError, match="unknown instant metadata kind"):
        serialize_instant_metadata("savepoint", {})
    with pytest.raises(InvalidOptionError, match="16 bytes"):
        serialize_instant_metadata("commit", {}, sync_marker=b"short")
    with pytest.raises(InvalidOptionError, match="does not fit HoodieCommitMetadata"):
        serialize_instant_metadata("commit", {"partitionToWriteStat": {}})  # misspelt key
    with pytest.raises(InvalidOptionError, match="does not fit HoodieCleanMetadata"):
        serialize_instant_metadata("clean", {"timeTakenInMillis": 1})  # required fields missing
    with pytest.raises(InvalidOptionError, match="does not fit HoodieCommitMetadata"):
        serialize_instant_metadata("commit", {"partitionToWriteStats": {"p": [{"numWrites": "3"}]}})
    with pytest.raises(InvalidOptionError, match="unknown HoodieWriteStat field"):
        write_stat_record("p", {"numWrite": 1})
    with pytest.raises(InvalidOptionError, match="no schema named"):
        schema_json("HoodieNoSuchThing")
