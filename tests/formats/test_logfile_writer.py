"""Log-file writer: blocks re-encoded from Hudi-written log files must come out byte for byte."""

from __future__ import annotations

import datetime
import decimal
import json
import re
import struct
import zipfile
from collections import Counter
from functools import lru_cache
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hudi_md.errors import InvalidOptionError
from hudi_md.formats.commit_metadata_writer import schema_json
from hudi_md.formats.logfile import DeleteRecord, HeaderKey, LogBlock, LogBlockType, read_log_file
from hudi_md.formats.logfile_writer import (
    HOODIE_META_FIELDS,
    LogFileWriter,
    WrappedValue,
    avro_block_content,
    avro_data_block,
    delete_block,
    delete_block_content,
    encode_log_block,
    hfile_data_block,
    parquet_data_block,
    rollback_command_block,
    with_meta_fields,
)
from hudi_md.storage import BytesInputFile, Storage

from fixtures import fixtures_dir

FIXTURES = fixtures_dir()
LOG_NAME = re.compile(r"^\..+\.log\.\d+(_\d+-\d+-\d+)?$")
INSTANT = "20260307162520620"

needs_fixtures = pytest.mark.skipif(not FIXTURES.is_dir(), reason="hudi-rs fixtures not available")


@lru_cache(maxsize=1)
def fixture_logs() -> list[tuple[str, bytes]]:
    """(name, bytes) of every log file: the hudi-rs single log files and those inside the table zips."""
    out = [
        (p.name, p.read_bytes())
        for p in sorted((FIXTURES / "core-tests-data" / "log_files").rglob("*"))
        if p.is_file() and LOG_NAME.match(p.name)
    ]
    for archive in sorted(FIXTURES.rglob("*.zip")):
        with zipfile.ZipFile(archive) as zf:
            for member in zf.namelist():
                if not member.startswith("__MACOSX") and LOG_NAME.match(member.rsplit("/", 1)[-1]):
                    out.append((f"{archive.name}:{member}", zf.read(member)))
    return out


def read_blocks(data: bytes, name: str = "<log>") -> list[LogBlock]:
    return read_log_file(BytesInputFile(data, name))


def header_order(block: LogBlock) -> list[HeaderKey]:
    return list(block.header)


# --- byte-for-byte reproduction of Hudi's blocks ------------------------------------------------------


def reencode(block: LogBlock) -> bytes:
    """Rebuild a block from its decoded form with the writer (HFile and Parquet contents are reused)."""
    header = block.header
    kind = block.block_type
    instant_first = header_order(block)[:1] == [HeaderKey.INSTANT_TIME]
    if kind is LogBlockType.AVRO_DATA:
        records = block.avro_records()
        if instant_first:
            return avro_data_block(records, block.schema, block.instant_time)
        return encode_log_block(kind, header, avro_block_content(records, block.schema))
    if kind is LogBlockType.DELETE:
        records = block.delete_records()
        if instant_first:
            return delete_block(records, block.instant_time, block.schema)
        return encode_log_block(kind, header, delete_block_content(records))
    if kind is LogBlockType.COMMAND:
        assert block.is_rollback_command
        return rollback_command_block(block.instant_time, block.target_instant_time)
    if kind is LogBlockType.HFILE_DATA and instant_first:
        return hfile_data_block(block.hfile_bytes(), block.schema, block.instant_time)
    return encode_log_block(kind, header, block.content, block.footer)


@needs_fixtures
def test_hudi_log_files_are_reproduced_byte_for_byte() -> None:
    """Every log file of the fixtures (Hudi 0.15, 1.0 and 1.1 writers) rebuilt block by block."""
    kinds: Counter[str] = Counter()
    for name, data in fixture_logs():
        blocks = read_blocks(data, name)
        rebuilt = b"".join(reencode(b) for b in blocks)
        assert rebuilt == data, name
        kinds.update(b.block_type.name for b in blocks)
    # AVRO_DATA, DELETE and COMMAND re-encoded from decoded records; HFILE/PARQUET framing only
    assert kinds["AVRO_DATA"] >= 15 and kinds["DELETE"] >= 300 and kinds["COMMAND"] >= 1
    assert kinds["HFILE_DATA"] >= 500 and kinds["PARQUET_DATA"] >= 5


@needs_fixtures
def test_mdt_init_empty_delete_block() -> None:
    """The MDT initialisation writes a delete block with INSTANT_TIME only and an empty list."""
    empty = [
        b
        for name, data in fixture_logs()
        if "/.hoodie/metadata/" in name
        for b in read_blocks(data, name)
        if b.block_type is LogBlockType.DELETE and HeaderKey.SCHEMA not in b.header
    ]
    assert len(empty) > 200
    assert {b.content.hex() for b in empty} == {"000000030000000100"}
    block = delete_block([], "00000000000000000")
    (parsed,) = read_blocks(block)
    assert parsed.header == {HeaderKey.INSTANT_TIME: "00000000000000000"}
    assert parsed.content == bytes.fromhex("000000030000000100")
    assert parsed.delete_records() == []


@needs_fixtures
def test_mdt_schema_header_is_metadata_record_with_meta_fields() -> None:
    expected = with_meta_fields(schema_json("HoodieMetadata"))
    headers = {
        b.schema
        for name, data in fixture_logs()
        if "v9_" in name and "/.hoodie/metadata/" in name
        for b in read_blocks(data, name)
        if b.schema is not None
    }
    assert headers == {expected}
    assert json.loads(expected)["fields"][0] == {
        "name": "_hoodie_commit_time",
        "type": ["null", "string"],
        "doc": "",
        "default": None,
    }
    assert with_meta_fields(expected) == expected


# --- round trips through the reader ---------------------------------------------------------------


DATA_SCHEMA = json.dumps(
    {
        "type": "record",
        "name": "t_record",
        "namespace": "hoodie.t",
        "fields": [
            *(
                {"name": n, "type": ["null", "string"], "doc": "", "default": None}
                for n in HOODIE_META_FIELDS
            ),
            {"name": "id", "type": "string"},
            {"name": "amount", "type": ["null", "double"], "default": None},
            {"name": "qty", "type": ["null", "long"], "default": None},
            {"name": "day", "type": ["null", {"type": "int", "logicalType": "date"}], "default": None},
            {
                "name": "ts",
                "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}],
                "default": None,
            },
            {
                "name": "price",
                "type": [
                    "null",
                    {
                        "type": "fixed",
                        "name": "fixed",
                        "namespace": "hoodie.t.t_record.price",
                        "size": 5,
                        "logicalType": "decimal",
                        "precision": 10,
                        "scale": 2,
                    },
                ],
                "default": None,
            },
            {"name": "tags", "type": ["null", {"type": "array", "items": "string"}], "default": None},
        ],
    },
    separators=(",", ":"),
)


def _record(i: int) -> dict:
    return {
        "_hoodie_commit_time": INSTANT,
        "_hoodie_commit_seqno": f"{INSTANT}_0_{i}",
        "_hoodie_record_key": f"k{i}",
        "_hoodie_partition_path": "p=1",
        "_hoodie_file_name": "f1-0",
        "id": f"k{i}",
        "amount": i * 1.5,
        "qty": 2**40 + i if i % 2 else None,
        "day": datetime.date(2026, 3, 1 + i),
        "ts": datetime.datetime(2026, 3, 7, 16, 25, i, tzinfo=datetime.timezone.utc),
        "price": decimal.Decimal(f"{i}.25"),
        "tags": ["a", "é"][: i % 3],
    }


def test_avro_block_round_trip() -> None:
    records = [_record(i) for i in range(5)]
    data = avro_data_block(records, DATA_SCHEMA, INSTANT)
    (block,) = read_blocks(data)
    assert block.block_type is LogBlockType.AVRO_DATA
    assert header_order(block) == [HeaderKey.INSTANT_TIME, HeaderKey.SCHEMA]
    assert block.schema == DATA_SCHEMA and block.instant_time == INSTANT
    assert block.avro_records() == records
    assert struct.unpack_from(">ii", block.content) == (3, 5)
    assert avro_block_content([], DATA_SCHEMA) == struct.pack(">ii", 3, 0)


def test_parquet_block_round_trip_and_options() -> None:
    fields = [f["name"] for f in json.loads(DATA_SCHEMA)["fields"]][:8]
    schema = json.dumps({**json.loads(DATA_SCHEMA), "fields": json.loads(DATA_SCHEMA)["fields"][:8]})
    rows = [{k: v for k, v in _record(i).items() if k in fields} for i in range(4)]
    table = pa.Table.from_pylist(rows).select(fields)
    data = parquet_data_block(table, schema, INSTANT)
    (block,) = read_blocks(data)
    assert block.block_type is LogBlockType.PARQUET_DATA
    assert block.header == {HeaderKey.INSTANT_TIME: INSTANT, HeaderKey.SCHEMA: schema}
    assert block.parquet_table().to_pylist() == rows
    meta = pq.ParquetFile(pa.BufferReader(block.content)).metadata
    assert meta.metadata[b"parquet.avro.schema"] == schema.encode()
    assert meta.metadata[b"writer.model.name"] == b"avro"
    assert b"ARROW:schema" not in meta.metadata
    column = meta.row_group(0).column(5)  # "id"
    assert column.compression == "GZIP" and column.has_dictionary_page


@needs_fixtures
def test_hfile_block_round_trip() -> None:
    hfile = next(
        b.hfile_bytes()
        for name, data in fixture_logs()
        if "v9_" in name
        for b in read_blocks(data, name)
        if b.block_type is LogBlockType.HFILE_DATA
    )
    mdt_schema = with_meta_fields(schema_json("HoodieMetadata"))
    (block,) = read_blocks(hfile_data_block(hfile, mdt_schema, INSTANT))
    assert block.header == {HeaderKey.INSTANT_TIME: INSTANT, HeaderKey.SCHEMA: mdt_schema}
    assert block.hfile_bytes() == hfile
    assert block.hfile_reader() is not None


def test_delete_block_round_trip_with_every_ordering_type() -> None:
    utc = datetime.timezone.utc
    values = [
        0,
        None,
        True,
        -(2**31),
        2**40,
        2.5,
        "v",
        b"\x00\x01",
        decimal.Decimal("12.5"),
        datetime.date(2026, 3, 7),
        datetime.datetime(2026, 3, 7, 1, 2, 3, 456789, tzinfo=utc),
        datetime.time(1, 2, 3, 4),
        (1, "a", None),
    ]
    records = [DeleteRecord(f"k{i}", "p=1" if i % 2 else "", v) for i, v in enumerate(values)]
    records.append(DeleteRecord(None, None, 0))
    (block,) = read_blocks(delete_block(records, INSTANT, DATA_SCHEMA))
    assert header_order(block) == [HeaderKey.INSTANT_TIME, HeaderKey.SCHEMA]
    got = block.delete_records()
    assert [(r.record_key, r.partition_path) for r in got] == [
        (r.record_key, r.partition_path) for r in records
    ]
    expected = [r.ordering_value for r in records]
    expected[8] = decimal.Decimal("12.500000000000000")  # DecimalWrapper has scale 15
    assert [r.ordering_value for r in got] == expected


def test_explicit_ordering_wrappers() -> None:
    plain = delete_block_content([DeleteRecord("k", "p", 5)])
    as_long = delete_block_content([DeleteRecord("k", "p", WrappedValue("LongWrapper", 5))])
    # union branch 2 = IntWrapper, 3 = LongWrapper (zig-zag: 0x04, 0x06); both then hold 5 (0x0a)
    assert plain.endswith(b"\x04\x0a\x00") and as_long.endswith(b"\x06\x0a\x00")
    # LocalDateWrapper exists only inside ArrayWrapper in HoodieDeleteRecordList
    array = WrappedValue("ArrayWrapper", [WrappedValue("LocalDateWrapper", 3), "x"])
    (block,) = read_blocks(delete_block([DeleteRecord("k", "p", array)], INSTANT))
    assert block.delete_records()[0].ordering_value == (datetime.date(1970, 1, 4), "x")
    with pytest.raises(InvalidOptionError, match="do not fit"):
        delete_block_content([DeleteRecord("k", "p", WrappedValue("LocalDateWrapper", 3))])
    with pytest.raises(InvalidOptionError, match="unknown ordering value wrapper"):
        delete_block_content([DeleteRecord("k", "p", WrappedValue("UuidWrapper", "x"))])
    with pytest.raises(InvalidOptionError, match="timezone"):
        delete_block_content([DeleteRecord("k", "p", datetime.datetime(2026, 1, 1))])
    with pytest.raises(InvalidOptionError, match="cannot wrap"):
        delete_block_content([DeleteRecord("k", "p", object())])


def test_rollback_command_block_round_trip() -> None:
    (block,) = read_blocks(rollback_command_block("20260308000000000", INSTANT))
    assert block.is_rollback_command
    assert block.instant_time == "20260308000000000" and block.target_instant_time == INSTANT
    assert block.content == b""
    assert header_order(block) == [
        HeaderKey.INSTANT_TIME,
        HeaderKey.COMMAND_BLOCK_TYPE,
        HeaderKey.TARGET_INSTANT_TIME,
    ]


def test_framing_with_footer() -> None:
    data = encode_log_block(
        LogBlockType.AVRO_DATA,
        {HeaderKey.SCHEMA: DATA_SCHEMA, HeaderKey.INSTANT_TIME: INSTANT},
        avro_block_content([_record(1)], DATA_SCHEMA),
        {HeaderKey.BLOCK_IDENTIFIER: "7"},
    )
    (block_length,) = struct.unpack_from(">q", data, 6)
    assert len(data) == 6 + 8 + block_length
    assert struct.unpack_from(">q", data, len(data) - 8)[0] == 6 + block_length
    (block,) = read_blocks(data)
    assert header_order(block) == [HeaderKey.SCHEMA, HeaderKey.INSTANT_TIME]
    assert block.footer == {HeaderKey.BLOCK_IDENTIFIER: "7"}
    assert block.avro_records() == [_record(1)]


# --- LogFileWriter ---------------------------------------------------------------------------------


def test_log_file_writer_writes_once(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    path = "p=1/.f1-0_20260307162520620.log.1_0-1-1"
    blocks = [
        avro_data_block([_record(0), _record(1)], DATA_SCHEMA, INSTANT),
        delete_block([DeleteRecord("k9", "p=1", 0)], INSTANT, DATA_SCHEMA),
    ]
    with LogFileWriter(storage, path) as writer:
        assert writer.append(blocks[0]) == 0
        assert writer.append(blocks[1]) == len(blocks[0])
        assert writer.block_count == 2
    assert storage.stats.count("write") == 1
    assert writer.size == len(blocks[0]) + len(blocks[1]) == storage.info(path).size
    read = read_log_file(storage.input_file(path))
    assert [b.block_type for b in read] == [LogBlockType.AVRO_DATA, LogBlockType.DELETE]
    assert [b.offset for b in read] == [0, len(blocks[0])]
    assert writer.close() == writer.size  # idempotent
    with pytest.raises(InvalidOptionError, match="already written"):
        writer.append(blocks[0])
    again = LogFileWriter(storage, path)
    again.append(blocks[0])
    with pytest.raises(FileExistsError):  # v9 log files are never appended to or replaced
        again.close()


def test_log_file_writer_discards_on_error(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    with pytest.raises(RuntimeError), LogFileWriter(storage, "x.log.1_0-1-1") as writer:
        writer.append(rollback_command_block("2", "1"))
        raise RuntimeError("task failed")
    assert not storage.exists("x.log.1_0-1-1")
    with pytest.raises(InvalidOptionError, match="discarded"):
        writer.close()
    with pytest.raises(InvalidOptionError, match="without blocks"):
        LogFileWriter(storage, "y.log.1_0-1-1").close()
    with pytest.raises(InvalidOptionError, match="not an encoded log block"):
        LogFileWriter(storage, "z").append(b"PAR1")
    with pytest.raises(InvalidOptionError, match="declares"):
        LogFileWriter(storage, "z").append(rollback_command_block("2", "1")[:-1])


# --- argument errors -------------------------------------------------------------------------------


def test_writer_argument_errors() -> None:
    with pytest.raises(InvalidOptionError, match="CDC_DATA"):
        encode_log_block(LogBlockType.CDC_DATA, {}, b"")
    with pytest.raises(InvalidOptionError, match="not a HeaderKey"):
        encode_log_block(LogBlockType.COMMAND, {0: "x"}, b"")  # type: ignore[dict-item]
    with pytest.raises(InvalidOptionError, match="does not fit"):
        avro_block_content([{**_record(0), "extra": 1}], DATA_SCHEMA)
    with pytest.raises(InvalidOptionError, match="does not fit"):
        avro_block_content([{"_hoodie_commit_time": INSTANT}], DATA_SCHEMA)  # required "id" missing
    with pytest.raises(InvalidOptionError, match="cannot parse"):
        avro_block_content([], '{"type": "record"}')
    with pytest.raises(InvalidOptionError, match="do not match the schema fields"):
        parquet_data_block(pa.table({"id": ["a"]}), DATA_SCHEMA, INSTANT)
    with pytest.raises(InvalidOptionError, match="without rows"):
        parquet_data_block(pa.table({"id": pa.array([], pa.string())}), '{"fields":[{"name":"id"}]}', INSTANT)
    with pytest.raises(InvalidOptionError, match="not an Avro record schema"):
        parquet_data_block(pa.table({"id": ["a"]}), '"string"', INSTANT)
    with pytest.raises(InvalidOptionError, match="HFile trailer"):
        hfile_data_block(b"\0" * 5000, DATA_SCHEMA, INSTANT)
    with pytest.raises(InvalidOptionError, match="record schema"):
        with_meta_fields('"string"')
