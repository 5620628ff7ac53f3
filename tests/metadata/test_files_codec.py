"""The fast ``files`` record decoder (metadata/files_codec.py) against fastavro: every ``files``
record of every fixture MDT (Hudi 0.x..1.1 writers) and of a hudi-md table decodes to what
fastavro + normalize give, or is left to fastavro; odd input is left to fastavro too."""

from __future__ import annotations

import io
import json
from pathlib import Path

import fastavro
import pyarrow as pa
import pytest

import hudi_md
from hudi_md.formats.avro import decode_schemaless
from hudi_md.formats.hfile import HFileReader
from hudi_md.formats.logfile import LogBlockType, read_log_file
from hudi_md.metadata.files_codec import files_record_decoder
from hudi_md.metadata.records import normalize
from hudi_md.storage import BytesInputFile

from fixtures import archives


def files_hfiles(table: Path) -> list[HFileReader]:
    """Every HFile of a table's MDT files partition: base files and log blocks."""
    out = []
    folder = table / ".hoodie" / "metadata" / "files"
    for f in sorted(folder.iterdir()) if folder.is_dir() else []:
        if f.name.endswith(".hfile"):
            out.append(HFileReader(BytesInputFile(f.read_bytes(), f.name)))
        elif ".log." in f.name:
            for b in read_log_file(BytesInputFile(f.read_bytes(), f.name)):
                if b.block_type == LogBlockType.HFILE_DATA:
                    out.append(b.hfile_reader())
    return out


def check(reader: HFileReader, schema: str | None = None) -> tuple[int, int]:
    schema = schema or reader.schema
    assert schema is not None
    fast = files_record_decoder(schema)
    assert fast is not None, reader.name
    hits = total = 0
    for _, value in reader.scan():
        want = normalize(decode_schemaless(value, schema, return_record_name=True))
        got = fast(value)
        total += 1
        if got is not None:
            hits += 1
            assert got == want, reader.name
    return hits, total


def test_every_fixture_files_record(table_path) -> None:
    tables = [a for a in archives() if "v6_empty" not in a]
    hits = total = 0
    for archive in tables:
        for reader in files_hfiles(table_path(archive)):
            h, t = check(reader)
            hits, total = hits + h, total + t
    assert total > 200
    assert hits == total  # every files record Hudi wrote takes the fast path


def test_hudi_md_written_records(tmp_path: Path) -> None:
    path = tmp_path / "t"
    data = pa.table({"id": [f"k{i}" for i in range(300)], "p": [f"p{i % 30}" for i in range(300)]})
    options = {
        "hoodie.table.name": "t",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "p",
    }
    hudi_md.write(data, str(path), operation="insert", options=options)
    hudi_md.write(data.slice(0, 40), str(path), operation="upsert", options=options)
    readers = files_hfiles(path)
    assert readers
    for reader in readers:
        hits, total = check(reader)
        assert hits == total > 0


SCHEMA = {
    "type": "record",
    "name": "HoodieMetadataRecord",
    "fields": [
        {"name": "_hoodie_commit_time", "type": ["null", "string"]},
        {"name": "key", "type": {"type": "string", "avro.java.string": "String"}},
        {"name": "type", "type": "int"},
        {
            "name": "filesystemMetadata",
            "type": [
                "null",
                {
                    "type": "map",
                    "values": {
                        "type": "record",
                        "name": "HoodieMetadataFileInfo",
                        "fields": [
                            {"name": "size", "type": "long"},
                            {"name": "isDeleted", "type": "boolean"},
                        ],
                    },
                },
            ],
        },
        {"name": "BloomFilterMetadata", "type": ["null", {"type": "record", "name": "B", "fields": []}]},
        {"name": "ColumnStatsMetadata", "type": ["null", "string"]},
        {"name": "recordIndexMetadata", "type": ["null", "long"]},
        {"name": "SecondaryIndexMetadata", "type": ["null", "boolean"]},
    ],
}


def encode(record: dict) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(SCHEMA), record)
    return buf.getvalue()


def test_records_it_does_not_expect_are_left_to_fastavro() -> None:
    fast = files_record_decoder(json.dumps(SCHEMA))
    assert fast is not None
    base = {
        "_hoodie_commit_time": None,
        "key": "dt=a",
        "type": 2,
        "filesystemMetadata": {"f1": {"size": 10, "isDeleted": False}, "f2": {"size": 0, "isDeleted": True}},
        "BloomFilterMetadata": None,
        "ColumnStatsMetadata": None,
        "recordIndexMetadata": None,
        "SecondaryIndexMetadata": None,
    }
    value = encode(base)
    assert fast(value) == normalize(decode_schemaless(value, json.dumps(SCHEMA), return_record_name=True))
    assert fast(encode({**base, "ColumnStatsMetadata": "x"})) is None  # not a files record
    assert fast(value[:-1]) is None and fast(value + b"\x00") is None
    assert fast(encode({**base, "filesystemMetadata": None}))["filesystemMetadata"] is None
    # a map written in a block with its byte size (negative count), as some Avro writers do
    blocked = bytearray(encode({**base, "filesystemMetadata": {"f": {"size": 3, "isDeleted": False}}}))
    one = b"\x02"  # zigzag 1 = one entry
    at = blocked.index(one + b"\x02f")
    entry = blocked[at + 1 : blocked.index(b"\x00", at + 5) + 0]
    blocked[at : at + 1] = b"\x01" + bytes([len(entry) * 2])  # count -1, then the block's size
    decoded = fast(bytes(blocked))
    assert decoded is not None and decoded["filesystemMetadata"] == {"f": {"size": 3, "isDeleted": False}}


@pytest.mark.parametrize(
    "change",
    [
        lambda s: s["fields"].pop(0) and s,  # fine: no leading meta fields
        lambda s: s["fields"][1].update(type="bytes") or s,  # key is not a string
        lambda s: s["fields"].pop() and s,  # a payload union missing
        lambda s: s["fields"][3]["type"][1]["values"]["fields"].append({"name": "x", "type": "int"}) or s,
    ],
)
def test_other_schema_shapes_get_no_fast_decoder(change) -> None:
    schema = change(json.loads(json.dumps(SCHEMA)))
    fast = files_record_decoder(json.dumps(schema))
    if schema["fields"][0]["name"] == "key":
        assert fast is not None
    else:
        assert fast is None
