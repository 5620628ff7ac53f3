"""Log-file reader: real Hudi log files (hudi-rs fixtures, table zips) and damaged copies of them."""

from __future__ import annotations

import datetime
import decimal
import io
import json
import os
import re
import shutil
import struct
import zipfile
from collections import Counter
from pathlib import Path

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hudi_md.errors import LogFormatError, UnsupportedFeatureError
from hudi_md.formats import avro, logfile
from hudi_md.formats.logfile import (
    DeleteRecord,
    HeaderKey,
    LogBlock,
    LogBlockType,
    iter_log_blocks,
    read_log_file,
)
from hudi_md.storage import BytesInputFile, Storage

from fixtures import fixtures_dir

FIXTURES = fixtures_dir()
LOG_FILES = FIXTURES / "core-tests-data" / "log_files"
MDT_ZIPS = [
    "sample_table/cow/v9_txns_simple_meta.zip",
    "quickstart_trips_table/mor/avro/v8_trips_8i3u1d.zip",
]
LOG_NAME = re.compile(r"^\..+\.log\.\d+(_\d+-\d+-\d+)?$")

pytestmark = pytest.mark.skipif(not FIXTURES.is_dir(), reason="hudi-rs fixtures not available")


def _fixture(kind: str) -> Path:
    (path,) = [p for p in (LOG_FILES / kind).iterdir() if ".log." in p.name]
    return path


def _input(path: Path) -> BytesInputFile:
    return BytesInputFile(path.read_bytes(), path.name)


# --- a block writer built from the format description, independent of the reader ---------------


def _map(entries: dict[int, str]) -> bytes:
    out = struct.pack(">i", len(entries))
    for key, value in entries.items():
        raw = value.encode()
        out += struct.pack(">ii", key, len(raw)) + raw
    return out


def frame_block(
    block_type: int,
    header: dict[int, str],
    content: bytes,
    *,
    version: int = 1,
    footer: dict[int, str] | None = None,
) -> bytes:
    body = (
        struct.pack(">ii", version, block_type)
        + _map(header)
        + struct.pack(">q", len(content))
        + content
        + _map(footer or {})
    )
    block_length = len(body) + 8
    return b"#HUDI#" + struct.pack(">q", block_length) + body + struct.pack(">q", 6 + block_length)


def _delete_content(records: list[dict], version: int = 3) -> bytes:
    schema = logfile.delete_list_schema()
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, schema, {"deleteRecordList": records})
    payload = buf.getvalue()
    return struct.pack(">ii", version, len(payload)) + payload


# --- fixtures --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The log files of every table zip, unpacked once for this module (``__MACOSX`` skipped)."""
    root = tmp_path_factory.mktemp("hudi_tables")
    for archive in sorted(FIXTURES.glob("**/*.zip")):
        dest = root / archive.relative_to(FIXTURES).with_suffix("")
        with zipfile.ZipFile(archive) as zf:
            members = [
                m
                for m in zf.namelist()
                if not m.startswith("__MACOSX") and LOG_NAME.match(m.rsplit("/", 1)[-1])
            ]
            zf.extractall(dest, members=members)
    return root


def _log_files_under(root: Path) -> list[Path]:
    return sorted(Path(d) / f for d, _, files in os.walk(root) for f in files if LOG_NAME.match(f))


# --- the single-block fixture files ---------------------------------------------------------------


def test_avro_data_block() -> None:
    (block,) = read_log_file(_input(_fixture("valid_log_avro_data")))
    assert block.block_type is LogBlockType.AVRO_DATA
    assert block.offset == 0
    assert block.instant_time == "20250316025828811"
    assert block.target_instant_time is None
    assert json.loads(block.schema)["name"] == "trips_quickstart_mor_avro_record"
    assert not block.is_rollback_command
    records = block.avro_records()
    assert len(records) == 1
    rec = records[0]
    assert rec["_hoodie_record_key"] == "334e26e9-8355-45cc-97c6-c31daf0df330"
    assert rec["_hoodie_commit_time"] == "20250316025828811"
    assert (rec["rider"], rec["city"], rec["fare"]) == ("rider-A", "san_francisco", 29.1)


def test_avro_data_block_with_reader_schema() -> None:
    (block,) = read_log_file(_input(_fixture("valid_log_avro_data")))
    writer = json.loads(block.schema)
    reader = dict(writer, fields=[f for f in writer["fields"] if f["name"] in ("uuid", "fare")])
    assert block.avro_records(json.dumps(reader)) == [
        {"uuid": "334e26e9-8355-45cc-97c6-c31daf0df330", "fare": 29.1}
    ]


def test_parquet_data_block() -> None:
    (block,) = read_log_file(_input(_fixture("valid_log_parquet_data")))
    assert block.block_type is LogBlockType.PARQUET_DATA
    assert block.instant_time == "20250113230424191"
    assert block.content[:4] == b"PAR1" and block.content[-4:] == b"PAR1"
    table = block.parquet_table()
    assert table.num_rows == 1
    assert {"_hoodie_record_key", "uuid", "fare", "city"} <= set(table.column_names)


def test_delete_block_holds_the_three_deletes_of_datagen_sql() -> None:
    (block,) = read_log_file(_input(_fixture("valid_log_delete")))
    assert block.block_type is LogBlockType.DELETE
    assert block.instant_time == "20250618054714114"
    deletes = block.delete_records()
    # datagen.sql: DELETE ... WHERE rider in ('rider-A', 'rider-C', 'rider-D'), all in san_francisco.
    assert sorted(deletes, key=lambda d: d.record_key or "") == [
        DeleteRecord("334e26e9-8355-45cc-97c6-c31daf0df330", "city=san_francisco", 0),
        DeleteRecord("9909a8b1-2d15-4d3d-8ec9-efc48c536a00", "city=san_francisco", 0),
        DeleteRecord("e96c4396-3fad-413a-a942-4cb36106d721", "city=san_francisco", 0),
    ]


def test_rollback_command_block() -> None:
    path = _fixture("valid_log_rollback")
    (block,) = read_log_file(_input(path))
    assert block.block_type is LogBlockType.COMMAND
    assert block.is_rollback_command
    assert block.instant_time == "20250126040936578"
    assert block.target_instant_time == "20250126040826878"
    assert block.header[HeaderKey.COMMAND_BLOCK_TYPE] == "0"
    assert block.content == b"" and block.footer == {}
    # The spec-built block is byte-identical to Hudi's: validates the test writer used below.
    rebuilt = frame_block(
        0,
        {0: "20250126040936578", 3: "0", 1: "20250126040826878"},
        b"",
    )
    assert rebuilt == path.read_bytes()


def test_empty_file_has_no_blocks() -> None:
    assert read_log_file(BytesInputFile(b"", "empty.log.1")) == []


def test_decoders_refuse_other_block_types() -> None:
    (block,) = read_log_file(_input(_fixture("valid_log_rollback")))
    for method in (block.avro_records, block.parquet_table, block.delete_records, block.hfile_bytes):
        with pytest.raises(TypeError, match="COMMAND"):
            method()


def test_several_blocks_in_one_file_with_offsets() -> None:
    parts = [
        _fixture(k).read_bytes() for k in ("valid_log_avro_data", "valid_log_delete", "valid_log_rollback")
    ]
    blocks = read_log_file(BytesInputFile(b"".join(parts), "multi.log.1"))
    assert [b.block_type for b in blocks] == [
        LogBlockType.AVRO_DATA,
        LogBlockType.DELETE,
        LogBlockType.COMMAND,
    ]
    assert [b.offset for b in blocks] == [0, len(parts[0]), len(parts[0]) + len(parts[1])]
    assert len(blocks[1].delete_records()) == 3


def test_block_by_block_reads_give_the_same_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    data = b"".join(_fixture(k).read_bytes() for k in ("valid_log_parquet_data", "valid_log_delete"))
    whole = read_log_file(BytesInputFile(data, "x.log.1"))
    monkeypatch.setattr(logfile, "_WHOLE_FILE_READ_LIMIT", 0)
    assert read_log_file(BytesInputFile(data, "x.log.1")) == whole
    with pytest.raises(LogFormatError, match="runs past the end"):
        read_log_file(BytesInputFile(data[:-10], "x.log.1"))


def test_read_through_storage_is_one_request(tmp_path: Path) -> None:
    src = _fixture("valid_log_delete")
    shutil.copy(src, tmp_path / src.name)
    storage = Storage(str(tmp_path))
    blocks = list(iter_log_blocks(storage.input_file(src.name, size=src.stat().st_size)))
    assert len(blocks) == 1 and blocks[0].file_name.endswith(src.name)
    assert storage.stats.count("read") == 1


def test_delete_ordering_values_of_every_wrapper_type() -> None:
    ns = "org.apache.hudi.avro.model."
    ts = datetime.datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=datetime.timezone.utc)
    rows = [
        ("k0", None, None),
        ("k1", (ns + "BooleanWrapper", {"value": True}), True),
        ("k2", (ns + "IntWrapper", {"value": 7}), 7),
        ("k3", (ns + "LongWrapper", {"value": 1695159649087}), 1695159649087),
        ("k4", (ns + "FloatWrapper", {"value": 1.5}), 1.5),
        ("k5", (ns + "DoubleWrapper", {"value": 2.25}), 2.25),
        ("k6", (ns + "BytesWrapper", {"value": b"\x00\x01"}), b"\x00\x01"),
        ("k7", (ns + "StringWrapper", {"value": "abc"}), "abc"),
        ("k8", (ns + "DateWrapper", {"value": 19000}), datetime.date(2022, 1, 8)),
        ("k9", (ns + "DecimalWrapper", {"value": decimal.Decimal("12.5")}), decimal.Decimal("12.5")),
        ("k10", (ns + "TimeMicrosWrapper", {"value": datetime.time(1, 2, 3, 4)}), datetime.time(1, 2, 3, 4)),
        ("k11", (ns + "TimestampMicrosWrapper", {"value": 1704164645678901}), ts),
        (
            "k12",
            (
                ns + "ArrayWrapper",
                {
                    "wrappedValues": [
                        (ns + "LongWrapper", {"value": 5}),
                        (ns + "StringWrapper", {"value": "b"}),
                        (ns + "LocalDateWrapper", {"value": 1}),
                    ]
                },
            ),
            (5, "b", datetime.date(1970, 1, 2)),
        ),
    ]
    content = _delete_content([{"recordKey": k, "partitionPath": "p", "orderingVal": v} for k, v, _ in rows])
    data = frame_block(1, {0: "20240101000000000"}, content)
    (block,) = read_log_file(BytesInputFile(data, "deletes.log.1"))
    got = {d.record_key: d.ordering_value for d in block.delete_records()}
    assert got == {k: expected for k, _, expected in rows}
    assert got["k9"].as_tuple().exponent == -15  # DecimalWrapper is decimal(30, 15)


def test_empty_delete_block_as_written_by_mdt_initialisation() -> None:
    data = frame_block(1, {0: "00000000000000000"}, _delete_content([]))
    (block,) = read_log_file(BytesInputFile(data, "init.log.1"))
    assert block.delete_records() == []


# --- every log file of the fixture tables ---------------------------------------------------------


@pytest.mark.parametrize("archive", MDT_ZIPS)
def test_mdt_log_files_parse(tables: Path, archive: str) -> None:
    mdt = tables / Path(archive).with_suffix("") / Path(archive).stem / ".hoodie" / "metadata"
    files = _log_files_under(mdt)
    assert files
    kinds: Counter[LogBlockType] = Counter()
    for path in files:
        blocks = read_log_file(_input(path))
        assert blocks, path
        for block in blocks:
            kinds[block.block_type] += 1
            assert block.instant_time
            if block.block_type is LogBlockType.HFILE_DATA:
                hfile = block.hfile_bytes()
                assert hfile[:8] == b"DATABLK*" or hfile[-4096:][:8] == b'TRABLK"$', path
                assert block.schema and json.loads(block.schema)["name"] == "HoodieMetadataRecord"
            elif block.block_type is LogBlockType.DELETE:
                for d in block.delete_records():
                    assert d.record_key and d.partition_path
            else:
                pytest.fail(f"{path}: unexpected {block.block_type.name} block in an MDT log file")
    assert set(kinds) == {LogBlockType.HFILE_DATA, LogBlockType.DELETE}


@pytest.mark.parametrize("archive", MDT_ZIPS)
def test_mdt_hfile_blocks_decode_as_metadata_records(tables: Path, archive: str) -> None:
    """Integration with the HFile reader: every value is one HoodieMetadataRecord of the header SCHEMA."""
    pytest.importorskip("hudi_md.formats.hfile")
    mdt = tables / Path(archive).with_suffix("") / Path(archive).stem / ".hoodie" / "metadata"
    wrappers: Counter[str] = Counter()
    blank_keys = 0
    for path in _log_files_under(mdt):
        for block in read_log_file(_input(path)):
            if block.block_type is not LogBlockType.HFILE_DATA:
                continue
            keys = []
            for key, value in block.hfile_reader().scan():
                keys.append(key)
                record = avro.decode_schemaless(
                    value, block.schema, return_record_name=True, return_record_name_override=True, exact=True
                )
                assert record["key"] in ("", key.decode())  # writers may blank the key in the value
                blank_keys += record["key"] == ""
                stats = record.get("ColumnStatsMetadata")
                if stats:
                    for bound in ("minValue", "maxValue"):
                        if stats[bound] is not None:
                            wrappers[stats[bound][0].rsplit(".", 1)[-1]] += 1
                            avro.unwrap_value(stats[bound])
            assert keys == sorted(keys)
    assert wrappers  # column stats present, min/max wrapped in named wrapper records
    assert blank_keys  # Hudi blanks the value's "key" field: the key lives in the HFile cell only


def test_every_log_file_of_every_table_parses(tables: Path) -> None:
    files = _log_files_under(tables)
    kinds: Counter[LogBlockType] = Counter()
    for path in files:
        for block in read_log_file(_input(path)):
            kinds[block.block_type] += 1
            if block.block_type is LogBlockType.AVRO_DATA:
                assert block.avro_records()
            elif block.block_type is LogBlockType.PARQUET_DATA:
                assert block.parquet_table().num_rows > 0
            elif block.block_type is LogBlockType.DELETE:
                block.delete_records()
            elif block.block_type is LogBlockType.COMMAND:
                assert block.is_rollback_command and block.target_instant_time
    # Counts from the format reference: 889 log files, 893 blocks.
    assert len(files) == 889
    assert sum(kinds.values()) == 893
    assert kinds[LogBlockType.HFILE_DATA] == 535
    assert kinds[LogBlockType.COMMAND] == 1


# --- damaged files ----------------------------------------------------------------------------------

NAME = "bad.log.1_0-1-2"
N = re.escape(NAME)


def _two_blocks() -> tuple[bytes, int]:
    first = _fixture("valid_log_rollback").read_bytes()
    return first + _fixture("valid_log_delete").read_bytes(), len(first)


def test_truncated_file_mid_block() -> None:
    data, second = _two_blocks()
    with pytest.raises(LogFormatError, match=f"{N}.*block at offset {second}.*runs past the end"):
        read_log_file(BytesInputFile(data[: second + 200], NAME))


def test_truncated_inside_the_block_prefix() -> None:
    data, second = _two_blocks()
    with pytest.raises(LogFormatError, match=f"{N}.*block at offset {second}.*truncated"):
        read_log_file(BytesInputFile(data[: second + 9], NAME))


def test_bit_flip_in_magic() -> None:
    data, second = _two_blocks()
    damaged = bytearray(data)
    damaged[second + 2] ^= 0x01
    with pytest.raises(LogFormatError, match=f"{N}.*block at offset {second}.*bad magic"):
        read_log_file(BytesInputFile(bytes(damaged), NAME))


def test_block_length_past_end_of_file() -> None:
    data = bytearray(_fixture("valid_log_avro_data").read_bytes())
    struct.pack_into(">q", data, 6, len(data) + 100)
    with pytest.raises(LogFormatError, match=f"{N}.*block at offset 0.*runs past the end"):
        read_log_file(BytesInputFile(bytes(data), NAME))


def test_content_length_past_block_end() -> None:
    data = frame_block(3, {0: "1", 2: "{}"}, b"\x00" * 16)
    header_end = 6 + 8 + 8 + len(_map({0: "1", 2: "{}"}))
    damaged = bytearray(data)
    struct.pack_into(">q", damaged, header_end, 10_000)
    with pytest.raises(LogFormatError, match=f"{N}.*block at offset 0.*content.*past the declared block"):
        read_log_file(BytesInputFile(bytes(damaged), NAME))


def test_trailing_length_mismatch() -> None:
    data = bytearray(_fixture("valid_log_delete").read_bytes())
    (trailer,) = struct.unpack_from(">q", data, len(data) - 8)
    struct.pack_into(">q", data, len(data) - 8, trailer + 1)
    with pytest.raises(LogFormatError, match=f"{N}.*block at offset 0.*trailing length"):
        read_log_file(BytesInputFile(bytes(data), NAME))


def test_inner_lengths_that_do_not_fill_the_block() -> None:
    data = bytearray(frame_block(0, {0: "1"}, b""))
    # Grow the declared block (and trailer) by 4 bytes of padding the fields do not account for.
    padded = data[:-8] + b"\x00\x00\x00\x00" + data[-8:]
    struct.pack_into(">q", padded, 6, struct.unpack_from(">q", data, 6)[0] + 4)
    struct.pack_into(">q", padded, len(padded) - 8, struct.unpack_from(">q", data, len(data) - 8)[0] + 4)
    with pytest.raises(LogFormatError, match=f"{N}.*block at offset 0.*trailing length sits"):
        read_log_file(BytesInputFile(bytes(padded), NAME))


def test_unknown_log_format_version() -> None:
    with pytest.raises(LogFormatError, match=f"{N}.*block at offset 0.*unknown log format version 2"):
        read_log_file(BytesInputFile(frame_block(0, {}, b"", version=2), NAME))


def test_legacy_version_zero_block_is_unsupported() -> None:
    with pytest.raises(UnsupportedFeatureError, match=f"{N}.*block at offset 0.*legacy version-0"):
        read_log_file(BytesInputFile(frame_block(3, {}, b"", version=0), NAME))


def test_unknown_block_type_and_corrupt_marker() -> None:
    with pytest.raises(LogFormatError, match=f"{N}.*unknown block type ordinal 9"):
        read_log_file(BytesInputFile(frame_block(9, {}, b""), NAME))
    with pytest.raises(LogFormatError, match=f"{N}.*CORRUPT"):
        read_log_file(BytesInputFile(frame_block(2, {}, b""), NAME))


def test_cdc_block_is_unsupported() -> None:
    data = frame_block(6, {0: "20240101000000000", 2: "{}"}, b"\x00\x00\x00\x03\x00\x00\x00\x00")
    with pytest.raises(UnsupportedFeatureError, match=f"{N}.*CDC log blocks are not supported"):
        read_log_file(BytesInputFile(data, NAME))


def test_unknown_header_key_is_unsupported() -> None:
    with pytest.raises(UnsupportedFeatureError, match=f"{N}.*header key ordinal 42"):
        read_log_file(BytesInputFile(frame_block(0, {42: "x"}, b""), NAME))


def _reframe(block: LogBlock, content: bytes) -> bytes:
    return frame_block(int(block.block_type), {int(k): v for k, v in block.header.items()}, content)


def test_bad_avro_record_bytes() -> None:
    (block,) = read_log_file(_input(_fixture("valid_log_avro_data")))
    content = bytearray(block.content)
    # Shorten the one record's declared length: the datum no longer fits its bytes.
    struct.pack_into(">i", content, 8, struct.unpack_from(">i", content, 8)[0] - 5)
    (bad,) = read_log_file(BytesInputFile(_reframe(block, bytes(content)), NAME))
    with pytest.raises(LogFormatError, match=f"{N}.*AVRO_DATA block at offset 0"):
        bad.avro_records()


def test_avro_record_count_past_content() -> None:
    (block,) = read_log_file(_input(_fixture("valid_log_avro_data")))
    content = bytearray(block.content)
    struct.pack_into(">i", content, 4, 2)
    (bad,) = read_log_file(BytesInputFile(_reframe(block, bytes(content)), NAME))
    with pytest.raises(LogFormatError, match=f"{N}.*record 1 of 2"):
        bad.avro_records()


def test_avro_block_without_schema_header() -> None:
    (block,) = read_log_file(BytesInputFile(frame_block(3, {0: "1"}, struct.pack(">ii", 3, 0)), NAME))
    with pytest.raises(LogFormatError, match=f"{N}.*no SCHEMA header"):
        block.avro_records()


def test_bad_parquet_content() -> None:
    (block,) = read_log_file(_input(_fixture("valid_log_parquet_data")))
    broken = block.content[:100] + block.content[-60:]
    (bad,) = read_log_file(BytesInputFile(_reframe(block, broken), NAME))
    with pytest.raises(LogFormatError, match=f"{N}.*PARQUET_DATA block at offset 0"):
        bad.parquet_table()


def test_parquet_block_round_trip() -> None:
    buf = io.BytesIO()
    pq.write_table(pa.table({"k": ["a", "b"]}), buf)
    (block,) = read_log_file(BytesInputFile(frame_block(5, {0: "1", 2: "{}"}, buf.getvalue()), NAME))
    assert block.parquet_table().column("k").to_pylist() == ["a", "b"]


def test_kryo_delete_block_is_unsupported() -> None:
    content = struct.pack(">ii", 2, 4) + b"\xde\xad\xbe\xef"
    (block,) = read_log_file(BytesInputFile(frame_block(1, {0: "1"}, content), NAME))
    with pytest.raises(UnsupportedFeatureError, match=f"{N}.*Kryo"):
        block.delete_records()


def test_bad_delete_payload() -> None:
    (block,) = read_log_file(_input(_fixture("valid_log_delete")))
    content = bytearray(block.content)
    content[8] = 0x7F  # array block count becomes huge
    (bad,) = read_log_file(BytesInputFile(_reframe(block, bytes(content)), NAME))
    with pytest.raises(LogFormatError, match=f"{N}.*DELETE block at offset 0"):
        bad.delete_records()
    wrong_length = struct.pack(">ii", 3, 500) + block.content[8:]
    (bad,) = read_log_file(BytesInputFile(_reframe(block, wrong_length), NAME))
    with pytest.raises(LogFormatError, match=f"{N}.*payload length 500"):
        bad.delete_records()
