"""HFile writer: round trips through our reader, byte-level parity with the HFiles Hudi 1.1.1's native
writer put in the v9 fixture tables, hudi-rs reading what we write, and argument errors."""

from __future__ import annotations

import io
import json
import random
import shutil
import struct
import zlib
from pathlib import Path
from types import ModuleType

import fastavro
import pytest

from hfile_blocks import gz_data_blocks
from hudi_md.formats.hfile import HFileReader, HFileWriter, write_hfile
from hudi_md.formats.hfile import writer as writer_module
from hudi_md.formats.hfile._layout import (
    MAGIC_DATA,
    TRAILER_SIZE,
    block_payload,
    parse_header,
)
from hudi_md.formats.hfile._wire import read_hadoop_vint
from hudi_md.formats.hfile.writer import DEFAULT_BLOCK_SIZE, RESERVED_FILE_INFO_KEYS, hadoop_vint
from hudi_md.formats.logfile import LogBlockType, read_log_file
from hudi_md.storage import BytesInputFile

SIMPLE_META = "sample_table/cow/v9_txns_simple_meta.zip"
CREATE_TIME = "hfile.CREATE_TIME_TS"
# zlib-ng (a drop-in on some systems) deflates differently; classic zlib matches java.util.zip.
CLASSIC_ZLIB = "ng" not in zlib.ZLIB_RUNTIME_VERSION.lower()


# --- helpers -----------------------------------------------------------------------------------


def blocks(data: bytes) -> list[tuple[int, bytes, tuple[int, ...], bytes]]:
    """Every block before the trailer: ``(offset, magic, header ints, uncompressed payload)``."""
    codec = HFileReader.from_bytes(data).trailer.compression_codec
    out = []
    pos = 0
    end = len(data) - TRAILER_SIZE
    while pos < end:
        h = parse_header(data, pos)
        prev = struct.unpack_from(">q", data, pos + 16)[0]
        fields = (h.uncompressed_size, prev, h.checksum_type, h.bytes_per_checksum)
        out.append((pos, h.magic, fields, block_payload(data, pos, h, codec, verify=True)))
        pos += h.total_size
    assert pos == end
    return out


def root_index_entries(data: bytes) -> list[tuple[int, int, bytes]]:
    """The data index decoded strictly as Hadoop VInt key lengths (no fallback, unlike the reader)."""
    r = HFileReader.from_bytes(data)
    loo = r.trailer.load_on_open_data_offset
    h = parse_header(data, loo)
    payload = block_payload(data, loo, h, r.trailer.compression_codec, verify=True)
    entries = []
    pos = 0
    for _ in range(r.trailer.data_index_count):
        offset, size = struct.unpack_from(">qi", payload, pos)
        key_len, pos = read_hadoop_vint(payload, pos + 12)
        key = payload[pos : pos + key_len]
        pos += key_len
        (row_len,) = struct.unpack_from(">H", key, 0)
        assert key_len == row_len + 2, "native index keys are int16 rowLen | row"
        entries.append((offset, size, key[2:]))
    assert pos == len(payload)
    return entries


def user_file_info(r: HFileReader) -> dict[str, bytes]:
    return {k: v for k, v in r.file_info.items() if k not in RESERVED_FILE_INFO_KEYS}


def rewrite(original: bytes, *, keep_create_time: bool = True, **kwargs: object) -> bytes:
    """Re-write an HFile's cells, file info and meta blocks with our writer."""
    r = HFileReader.from_bytes(original)
    options: dict[str, object] = {"compression": r.trailer.codec_name}
    if keep_create_time:
        options["create_time_ms"] = struct.unpack(">q", r.file_info[CREATE_TIME])[0]
    options.update(kwargs)
    meta = {"bloomFilter": r.meta_block("bloomFilter")} if r.meta_block("bloomFilter") is not None else {}
    assert len(meta) == r.trailer.meta_index_count  # Hudi writes no other meta block
    return write_hfile(r.scan(), file_info=user_file_info(r), meta_blocks=meta, **options)  # type: ignore[arg-type]


def mdt_base_files(table: Path) -> list[Path]:
    return sorted((table / ".hoodie" / "metadata").glob("*/*.hfile"))


def native_log_block_hfiles(table: Path) -> list[bytes]:
    """The complete HFiles inside the MDT's HFile log blocks (Hudi 1.1.1 writes them natively)."""
    found = []
    for path in sorted((table / ".hoodie" / "metadata").glob("*/.*.log.*")):
        for block in read_log_file(BytesInputFile(path.read_bytes(), str(path))):
            if block.block_type == LogBlockType.HFILE_DATA:
                found.append(block.hfile_bytes())
    return found


def assert_reads_back(
    data: bytes,
    cells: list[tuple[bytes, bytes]],
    file_info: dict[str, bytes],
    meta: dict[str, bytes],
) -> HFileReader:
    """Every reader API answers exactly what was written."""
    r = HFileReader.from_bytes(data, "written.hfile")
    expected = dict(cells)
    assert list(r.scan()) == cells
    assert r.entry_count == len(cells)
    for key, value in cells:
        assert r.get(key) == value
    absent = [b"", b"\x00", b"\xff" * 3, *(k + b"\x00" for k, _ in cells[:: max(1, len(cells) // 7)])]
    assert all(r.get(k) is None for k in absent if k not in expected)
    assert r.get_many([k for k, _ in cells] + absent) == expected
    prefixes = {b"", b"\xff"} | {k[:n] for k, _ in cells[:: max(1, len(cells) // 5)] for n in (1, 3, 8)}
    for p in prefixes:
        assert list(r.scan_prefix(p)) == [(k, v) for k, v in cells if k.startswith(p)], p
    assert user_file_info(r) == file_info
    for name, payload in meta.items():
        assert r.meta_block(name) == payload
    assert r.trailer.meta_index_count == len(meta)
    info = r.file_info
    assert info["KEY_VALUE_VERSION"] == struct.pack(">i", 1)
    assert info["MAX_MEMSTORE_TS_KEY"] == bytes(8)
    last = cells[-1][0] if cells else b""
    assert info["hfile.LASTKEY"] == (struct.pack(">H", len(last)) + last if cells else b"")
    n = len(cells) or 1
    assert info["hfile.AVG_KEY_LEN"] == struct.pack(">i", sum(len(k) for k, _ in cells) // n)
    assert info["hfile.AVG_VALUE_LEN"] == struct.pack(">i", sum(len(v) for _, v in cells) // n)
    t = r.trailer
    assert (t.major_version, t.minor_version, t.num_data_index_levels) == (3, 0, 1)
    assert t.comparator_class_name == "org.apache.hudi.io.storage.HoodieHBaseKVComparator"
    assert t.uncompressed_data_index_size == sum(21 + len(k) + len(v) for k, v in cells)
    return r


# --- round trips -------------------------------------------------------------------------------


def numbered(n: int) -> list[tuple[bytes, bytes]]:
    return [(b"key-%06d" % i, b"value-%d" % i * (i % 7)) for i in range(n)]


def long_keys() -> list[tuple[bytes, bytes]]:
    """Rows of 1..2000 bytes around the VInt boundaries (index key = row + 2: 127/128, 255/256)."""
    rng = random.Random(7)
    lengths = [1, 2, 100, 124, 125, 126, 127, 128, 200, 253, 254, 255, 256, 300, 301, 512, 1000, 2000]
    cells = {
        bytes([65 + i % 26]) + b"k" * (n - 1): rng.randbytes(rng.randrange(0, 64))
        for i, n in enumerate(lengths)
    }
    return sorted(cells.items())


def binary_cells() -> list[tuple[bytes, bytes]]:
    rng = random.Random(3)
    keys = sorted({rng.randbytes(rng.randrange(1, 40)) for _ in range(600)})
    return [(k, rng.randbytes(rng.randrange(0, 300))) for k in keys]


ROUND_TRIPS = {
    "empty": ([], DEFAULT_BLOCK_SIZE),
    "one": ([(b"only-key", b"only-value")], DEFAULT_BLOCK_SIZE),
    "many-blocks": (numbered(3000), 700),
    "long-keys": (long_keys(), 300),
    "binary": (binary_cells(), 2048),
}


@pytest.mark.parametrize("compression", ["GZ", "NONE"])
@pytest.mark.parametrize("case", sorted(ROUND_TRIPS))
def test_round_trip(case: str, compression: str) -> None:
    cells, block_size = ROUND_TRIPS[case]
    file_info = {"schema": b'{"type":"string"}', "minRecordKey": b"a", "bloomFilterTypeCode": b"DYNAMIC_V0"}
    meta = {"bloomFilter": bytes(range(256)) * 3, "second": b""}
    data = write_hfile(
        cells, file_info=file_info, meta_blocks=meta, block_size=block_size, compression=compression
    )
    r = assert_reads_back(data, cells, file_info, meta)
    assert r.trailer.codec_name == compression
    index = root_index_entries(data)
    data_blocks = [b for b in blocks(data) if b[1] == MAGIC_DATA]
    assert [(off, len(payload)) for off, _, _, payload in data_blocks] == [
        (off, fields[0]) for off, _, fields, _ in data_blocks
    ]
    assert [e[0] for e in index] == [b[0] for b in data_blocks]
    # prevBlockOffset chains data blocks (-1 first), as HBase's seekBefore expects.
    assert [b[2][1] for b in data_blocks] == [-1, *(b[0] for b in data_blocks)][: len(data_blocks)]
    if case in ("many-blocks", "long-keys", "binary"):
        assert len(index) > 10
    # Every block starts with the row its index entry names, and none overflows block_size unless it
    # holds a single cell.
    for (_, _, first_row), (_, _, _, payload) in zip(index, data_blocks, strict=True):
        (row_len,) = struct.unpack_from(">H", payload, 8)
        assert payload[10 : 10 + row_len] == first_row
        one_cell = 8 + sum(struct.unpack_from(">ii", payload, 0)) + 1 == len(payload)
        assert len(payload) <= block_size or one_cell
    if case == "long-keys":  # index keys on both sides of the one-byte VInt limit (127)
        assert {len(row) + 2 for _, _, row in index} >= {128, 302, 2002}


@pytest.mark.skipif(not CLASSIC_ZLIB, reason="zlib-ng deflates differently")
@pytest.mark.parametrize("level", [1, 3, 9])
def test_deflate_level_is_the_blocks_and_reads_back_the_same_cells(level: int) -> None:
    cells, block_size = ROUND_TRIPS["many-blocks"]
    default = write_hfile(cells, block_size=block_size, create_time_ms=0)
    assert write_hfile(cells, block_size=block_size, create_time_ms=0, deflate_level=6) == default
    data = write_hfile(cells, block_size=block_size, create_time_ms=0, deflate_level=level)
    assert_reads_back(data, cells, {}, {})
    found = gz_data_blocks(data)
    assert len(found) > 10
    for body, payload in found:
        deflater = zlib.compressobj(level, zlib.DEFLATED, -zlib.MAX_WBITS)
        assert body == deflater.compress(payload) + deflater.flush()
    if level == 1:
        assert data != default


def test_long_index_keys_are_hadoop_vints() -> None:
    cells = [(b"x" * n, b"v") for n in (126, 300, 1000)]  # index keys of 128, 302 and 1002 bytes
    data = write_hfile(cells, block_size=1, compression="NONE")
    loo = HFileReader.from_bytes(data).trailer.load_on_open_data_offset
    first_entry = data[loo + 33 : loo + 33 + 12 + 2 + 2]
    # offset, size, then VInt 128 (marker 0x8f: one byte follows) and the int16 row length 126.
    assert first_entry[12:] == b"\x8f\x80\x00\x7e"
    assert [e[2] for e in root_index_entries(data)] == [k for k, _ in cells]


def test_hadoop_vint_round_trips() -> None:
    for n in (*range(-300, 300), 1 << 15, 1 << 31, (1 << 63) - 1, -(1 << 63), -(1 << 40)):
        enc = hadoop_vint(n)
        assert read_hadoop_vint(enc, 0) == (n, len(enc))
    assert hadoop_vint(127) == b"\x7f" and hadoop_vint(-112) == b"\x90" and hadoop_vint(128) == b"\x8f\x80"


def test_many_file_info_keys_and_replacement() -> None:
    # More than 12 entries make Java's HashMap resize; every key must still come back.
    w = HFileWriter(compression="NONE", create_time_ms=1234)
    info = {f"user.key.{i}": b"v%d" % i for i in range(40)}
    for k, v in info.items():
        w.add_file_info(k, b"old")
        w.add_file_info(k, v)
    w.add_meta_block("bloomFilter", b"old")
    w.add_meta_block("bloomFilter", b"new")
    w.append("a", b"1")
    data = w.finish()
    assert w.finish() is data
    r = HFileReader.from_bytes(data)
    assert user_file_info(r) == info
    assert r.file_info[CREATE_TIME] == struct.pack(">q", 1234)
    assert r.meta_block("bloomFilter") == b"new"


def test_str_keys_are_utf8() -> None:
    data = write_hfile([("a", b"1"), ("é", b"2"), ("😀", b"3")], compression="NONE")
    assert list(HFileReader.from_bytes(data).scan()) == [
        (b"a", b"1"),
        ("é".encode(), b"2"),
        ("😀".encode(), b"3"),
    ]


def test_empty_file_layout_matches_native() -> None:
    # As Hudi writes an empty file: no data block, empty root index, first offset -1, last offset 0.
    r = HFileReader.from_bytes(write_hfile([]))
    t = r.trailer
    assert (t.entry_count, t.data_index_count, t.load_on_open_data_offset) == (0, 0, 0)
    assert (t.first_data_block_offset, t.last_data_block_offset) == (-1, 0)
    assert list(r.scan()) == [] and r.get("x") is None


# --- parity with Hudi 1.1.1's native writer ----------------------------------------------------


def assert_same_structure(ours: bytes, theirs: bytes) -> None:
    """Everything but gzip-size-dependent offsets, and the creation time."""
    a, b = HFileReader.from_bytes(ours), HFileReader.from_bytes(theirs)
    blocks_a, blocks_b = blocks(ours), blocks(theirs)
    assert [x[1] for x in blocks_a] == [x[1] for x in blocks_b]  # same block kinds in the same order
    data_a = [x for x in blocks_a if x[1] == MAGIC_DATA]
    data_b = [x for x in blocks_b if x[1] == MAGIC_DATA]
    assert [x[3] for x in data_a] == [x[3] for x in data_b]  # same boundaries, identical cells
    assert [e[2] for e in root_index_entries(ours)] == [e[2] for e in root_index_entries(theirs)]
    for (_, magic, fields_a, payload_a), (_, _, fields_b, payload_b) in zip(blocks_a, blocks_b, strict=True):
        assert fields_a[2:] == fields_b[2:] == (0, 16384)  # NULL checksums over 16 KiB chunks
        if magic != b"IDXROOT2":  # index payloads hold block offsets, which follow gzip sizes
            assert fields_a[0] == fields_b[0]
            if magic != b"FILEINF2":  # differs only in the creation time (checked below)
                assert payload_a == payload_b
    assert list(a.file_info) == list(b.file_info)  # same keys in Hudi's (HashMap) order
    assert {k: v for k, v in a.file_info.items() if k != CREATE_TIME} == {
        k: v for k, v in b.file_info.items() if k != CREATE_TIME
    }
    offsets = {
        "file_info_offset",
        "load_on_open_data_offset",
        "first_data_block_offset",
        "last_data_block_offset",
    }
    fields = set(vars(a.trailer)) - offsets
    assert {f: getattr(a.trailer, f) for f in fields} == {f: getattr(b.trailer, f) for f in fields}
    assert (a.trailer.first_data_block_offset < 0) == (b.trailer.first_data_block_offset < 0)


def test_rewrites_simple_meta_mdt_base_files_like_hudi(table_path) -> None:
    table = table_path(SIMPLE_META)
    files = mdt_base_files(table)
    partitions = {p.parent.name for p in files}
    assert {"files", "column_stats", "record_index", "partition_stats"} <= partitions
    for path in files:
        original = path.read_bytes()
        r = HFileReader.from_bytes(original)
        # Block size: Hudi's default is 1 MiB; every fixture file holds at most one data block of
        # well under that, which is all the file can tell us.
        assert r.trailer.data_index_count <= 1
        assert all(len(p) <= DEFAULT_BLOCK_SIZE for _, m, _, p in blocks(original) if m == MAGIC_DATA)
        # With a fresh creation time: same structure, same uncompressed payloads.
        assert_same_structure(rewrite(original, keep_create_time=False), original)
        # With Hudi's creation time the whole file is the same bytes (gzip included, on classic zlib).
        ours = rewrite(original)
        if CLASSIC_ZLIB:
            assert ours == original, path.name
        else:
            assert_same_structure(ours, original)


def test_rewrites_every_native_hfile_of_the_v9_fixtures_byte_for_byte(table_path, all_archives) -> None:
    if not CLASSIC_ZLIB:
        pytest.skip(f"gzip bytes differ under {zlib.ZLIB_RUNTIME_VERSION}; structure is tested above")
    base_files = log_blocks = 0
    for archive in (a for a in all_archives if "/v9_" in a):
        table = table_path(archive)
        for path in mdt_base_files(table):
            assert rewrite(original := path.read_bytes()) == original, f"{archive}: {path.name}"
            base_files += 1
        for original in native_log_block_hfiles(table):
            assert HFileReader.from_bytes(original).trailer.minor_version == 0  # native, not HBase
            assert rewrite(original) == original, archive
            log_blocks += 1
    assert base_files >= 150 and log_blocks >= 400


# --- hudi-rs -----------------------------------------------------------------------------------


def hudi_rs() -> ModuleType:
    """hudi-rs's Python binding (``hudi``); only these tests need it."""
    return pytest.importorskip("hudi")


def hudi_rs_view(table: Path) -> tuple[list[tuple[str, ...]], list[dict], list[tuple[str, ...]]]:
    """What hudi-rs derives from the MDT: file slices (all and pruned) and the table's rows."""

    hudi = hudi_rs()

    def slices(options: object = None) -> list[tuple[str, ...]]:
        t = hudi.HudiTableBuilder.from_base_uri(str(table)).build()
        found = t.get_file_slices(options) if options is not None else t.get_file_slices()
        return sorted((s.partition_path, s.file_id, s.base_file_name, *s.log_file_names) for s in found)

    t = hudi.HudiTableBuilder.from_base_uri(str(table)).build()
    rows = [row for batch in t.read() for row in batch.to_pylist()]
    rows.sort(key=lambda row: json.dumps(row, sort_keys=True, default=str))
    pruned = slices(hudi.HudiReadOptions().with_filters([("region", "=", "eu")]))
    return slices(), rows, pruned


def mdt_rows(table: Path, relative: str) -> list[dict]:
    reader = hudi_rs().HudiFileGroupReader(str(table / ".hoodie" / "metadata"))
    return reader.read_file_slice_from_paths(relative, []).to_pylist()


def test_hudi_rs_reads_rewritten_mdt_base_files(table_path, tmp_path: Path) -> None:
    table = tmp_path / "table"
    shutil.copytree(table_path(SIMPLE_META), table)
    before = hudi_rs_view(table)
    assert before[0] and before[1] and 0 < len(before[2]) < len(before[0])
    metadata = table / ".hoodie" / "metadata"
    for path in mdt_base_files(table):
        relative = str(path.relative_to(metadata))
        expected = mdt_rows(table, relative)
        original = path.read_bytes()
        # One cell per block: every lookup crosses a multi-entry root index; at the record
        # index's deflate level (metadata/writer.py), not Java's
        ours = rewrite(original, block_size=1, keep_create_time=False, deflate_level=3)
        assert ours != original
        if expected:
            assert HFileReader.from_bytes(ours).trailer.data_index_count == len(expected)
        path.write_bytes(ours)
        assert mdt_rows(table, relative) == expected, relative
    assert hudi_rs_view(table) == before


def files_partition_cells(table: Path, keys: list[str]) -> tuple[list[tuple[str, bytes]], bytes]:
    """Valid ``files``-partition records for ``keys``, built from a real one; plus the schema."""
    (base,) = [p for p in mdt_base_files(table) if p.parent.name == "files" and "_13-" in p.name]
    r = HFileReader.from_bytes(base.read_bytes())
    schema = fastavro.parse_schema(json.loads(r.file_info["schema"]))
    template = fastavro.schemaless_reader(io.BytesIO(r.get("region=us")), schema, schema)
    cells = []
    for key in sorted(keys):
        out = io.BytesIO()
        fastavro.schemaless_writer(out, schema, {**template, "key": key})
        cells.append((key, out.getvalue()))
    return cells, r.file_info["schema"]


def test_hudi_rs_reads_long_index_keys(table_path, tmp_path: Path, monkeypatch) -> None:
    table = tmp_path / "table"
    shutil.copytree(table_path(SIMPLE_META), table)
    keys = ["a" + "x" * 129, "b" + "y" * 299, "c" + "z" * 999]  # index keys of 132, 302, 1002 bytes
    cells, schema = files_partition_cells(table, keys)
    files_dir = table / ".hoodie" / "metadata" / "files"
    (files_dir / "long-keys.hfile").write_bytes(
        write_hfile(cells, file_info={"schema": schema}, block_size=1)
    )
    assert [row["key"] for row in mdt_rows(table, "files/long-keys.hfile")] == keys
    # Control: with Hudi 1.1.x's protobuf-varint key lengths hudi-rs cannot even open the file,
    # so the read above really went through our VInt-encoded index.
    monkeypatch.setattr(writer_module, "hadoop_vint", writer_module.protobuf_varint)
    (files_dir / "varint-bug.hfile").write_bytes(
        write_hfile(cells, file_info={"schema": schema}, block_size=1)
    )
    with pytest.raises(BaseException, match=r"out of range|[Ii]nvalid"):  # a Rust panic, not an Exception
        mdt_rows(table, "files/varint-bug.hfile")


def test_append_all_writes_what_append_writes() -> None:
    """The batch path (``write_hfile`` and the MDT writer use it) and cell-by-cell appends give
    the same bytes, across many block boundaries; the fixture rewrites above go through the batch
    path."""
    cells = [(f"key-{i:06d}".encode(), bytes([i % 251]) * (i % 700)) for i in range(5000)]
    one = HFileWriter(block_size=4096, create_time_ms=1)
    for k, v in cells:
        one.append(k, v)
    many = HFileWriter(block_size=4096, create_time_ms=1)
    many.append_all(cells[:10])
    many.append_all(iter(cells[10:]))
    expected = one.finish()
    assert many.finish() == expected
    with pytest.raises(ValueError, match="out-of-order"):
        HFileWriter().append_all([(b"b", b""), (b"a", b"")])
    # a rejected cell leaves the cells before it written and counted
    resumed = HFileWriter(block_size=4096, create_time_ms=1)
    with pytest.raises(ValueError, match="out-of-order"):
        resumed.append_all([*cells[:10], (b"a", b"")])
    resumed.append_all(cells[10:])
    assert resumed.finish() == expected


# --- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "second", "word"), [(b"b", b"a", "out-of-order"), (b"same", b"same", "duplicate")]
)
def test_keys_must_strictly_increase(first: bytes, second: bytes, word: str) -> None:
    w = HFileWriter()
    w.append(first, b"1")
    with pytest.raises(ValueError, match=word) as info:
        w.append(second, b"2")
    assert repr(first) in str(info.value) and repr(second) in str(info.value)


@pytest.mark.parametrize("compression", ["SNAPPY", "LZ4", "ZSTD", "", "gzip2"])
def test_unsupported_compression(compression: str) -> None:
    with pytest.raises(ValueError, match="compression"):
        HFileWriter(compression=compression)


def test_argument_errors() -> None:
    with pytest.raises(ValueError, match="block_size"):
        HFileWriter(block_size=0)
    for level in (0, 10, True, "6"):
        with pytest.raises(ValueError, match="deflate_level"):
            HFileWriter(deflate_level=level)  # type: ignore[arg-type]
    w = HFileWriter(compression="none")
    with pytest.raises(ValueError, match="empty"):
        w.append(b"", b"v")
    with pytest.raises(ValueError, match="row limit"):
        w.append(b"k" * 32768, b"v")
    with pytest.raises(ValueError, match="create_time_ms"):
        w.add_file_info(CREATE_TIME, b"x")
    with pytest.raises(ValueError, match="computed by the writer"):
        w.add_file_info("hfile.LASTKEY", b"x")
    with pytest.raises(TypeError):
        w.append(b"k", "not bytes")  # type: ignore[arg-type]
    w.append(b"k" * 32767, b"")  # the largest row a Java short can describe
    w.finish()
    with pytest.raises(RuntimeError, match="finish"):
        w.append(b"z", b"v")
