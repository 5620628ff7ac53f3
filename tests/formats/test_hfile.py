"""HFile reader: the HBase-written test files, real MDT HFiles (HBase and native), synthetic native files,
and corrupt input. Expected keys/values follow the generators used to write the test files
(``hudi-key-%09d`` -> ``hudi-value-%09d``; see the fixtures README)."""

from __future__ import annotations

import gzip
import io
import json
import random
import struct
import zipfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import fastavro
import pytest

from hudi_md.errors import HFileFormatError
from hudi_md.formats.hfile import HFileReader, HFileTrailer
from hudi_md.formats.hfile._wire import crc32c, read_hadoop_vint
from hudi_md.storage import BytesInputFile

from fixtures import fixtures_dir

FIXTURES = fixtures_dir()
HFILE_DIR = FIXTURES / "core-tests-data" / "hfile"

LARGE_KEY_PREFIX = "hudi-key-" + "a" * 100 + "-"
DUMMY_BLOOM_FILTER = b"/////wAAABQBAAABID797Rg6cC9QEnS/mT3C01cdQGaLYH2jbOCLtMA0RWppEH1HQg=="


def plain_key(i: int) -> bytes:
    return b"hudi-key-%09d" % i


def suffixed_key(i: int) -> bytes:
    return b"hudi-key-%09d-abcdefghij" % i


def large_key(i: int) -> bytes:
    return LARGE_KEY_PREFIX.encode() + b"%09d" % i


def value(i: int) -> bytes:
    return b"hudi-value-%09d" % i


def unique_cells(n: int, key: Callable[[int], bytes]) -> list[tuple[bytes, bytes]]:
    return [(key(i), value(i)) for i in range(n)]


def non_unique_cells() -> list[tuple[bytes, bytes]]:
    """200 keys, each written 21 times: the plain value, then ``<value>_0`` .. ``<value>_19``."""
    cells = []
    for i in range(200):
        cells.append((plain_key(i), value(i)))
        cells.extend((plain_key(i), value(i) + b"_%d" % j) for j in range(20))
    return cells


# file -> (codec, index levels, entries, root index entries, expected cells)
SAMPLES: dict[str, tuple[str, int, int, int, Callable[[], list[tuple[bytes, bytes]]]]] = {
    "hudi_1_0_hbase_2_4_9_16KB_GZ_20000.hfile": ("GZ", 1, 20000, 72, lambda: unique_cells(20000, plain_key)),
    "hudi_1_0_hbase_2_4_9_16KB_GZ_200_20_non_unique.hfile": ("GZ", 1, 4200, 16, non_unique_cells),
    "hudi_1_0_hbase_2_4_9_16KB_NONE_5000.hfile": ("NONE", 1, 5000, 18, lambda: unique_cells(5000, plain_key)),
    "hudi_1_0_hbase_2_4_9_512KB_GZ_20000.hfile": ("GZ", 1, 20000, 3, lambda: unique_cells(20000, plain_key)),
    "hudi_1_0_hbase_2_4_9_64KB_NONE_5000.hfile": ("NONE", 1, 5000, 5, lambda: unique_cells(5000, plain_key)),
    "hudi_1_0_hbase_2_4_9_no_entry.hfile": ("GZ", 1, 0, 0, lambda: []),
    "hudi_1_0_hbase_2_4_13_16KB_GZ_20000_fake_first_key.hfile": (
        "GZ",
        1,
        20000,
        86,
        lambda: unique_cells(20000, suffixed_key),
    ),
    "hudi_1_0_hbase_2_4_13_1KB_GZ_20000_large_keys.hfile": (
        "GZ",
        2,
        20000,
        4,
        lambda: unique_cells(20000, large_key),
    ),
    "hudi_1_0_hbase_2_4_13_1KB_GZ_10000_large_keys_deep_index.hfile": (
        "GZ",
        3,
        10000,
        7,
        lambda: unique_cells(10000, large_key),
    ),
}


class CountingInput:
    """An InputFile that records every range read, to check what a lookup costs."""

    def __init__(self, data: bytes, name: str) -> None:
        self._inner = BytesInputFile(data, name)
        self.name = name
        self.reads: list[tuple[int, int]] = []

    def size(self) -> int:
        return self._inner.size()

    def read(self, offset: int, length: int) -> bytes:
        self.reads.append((offset, length))
        return self._inner.read(offset, length)

    def read_all(self) -> bytes:
        self.reads.append((0, self._inner.size()))
        return self._inner.read_all()


def load(name: str) -> bytes:
    return (HFILE_DIR / name).read_bytes()


def open_sample(name: str, **kwargs: bool) -> HFileReader:
    return HFileReader(BytesInputFile(load(name), name), **kwargs)


# --- the HBase-written sample files ------------------------------------------------------------


def test_fixture_table_is_complete() -> None:
    assert sorted(SAMPLES) == sorted(p.name for p in HFILE_DIR.glob("*.hfile"))


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_sample_trailer_and_metadata(name: str) -> None:
    codec, levels, entries, root_entries, _ = SAMPLES[name]
    r = open_sample(name)
    t = r.trailer
    assert isinstance(t, HFileTrailer)
    assert (t.major_version, t.minor_version) == (3, 3)
    assert t.codec_name == codec
    assert t.num_data_index_levels == levels
    assert t.data_index_count == root_entries
    assert t.entry_count == r.entry_count == entries
    assert t.meta_index_count == 1
    assert r.meta_block("nope") is None
    if entries:
        assert t.comparator_class_name == "org.apache.hadoop.hbase.KeyValue$KVComparator"
        assert r.file_info["hudi_hfile_testing.custom_key"] == b"hudi_custom_value"
        assert r.meta_block("bloomFilter") == DUMMY_BLOOM_FILTER
        assert r.schema is None
    else:
        assert t.comparator_class_name == "org.apache.hudi.io.storage.HoodieHBaseKVComparator"
        assert r.schema is not None and json.loads(r.schema)["type"] == "record"
        assert r.meta_block("bloomFilter")  # a real (empty) bloom filter


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_sample_full_scan_matches_generator(name: str) -> None:
    expected = SAMPLES[name][4]()
    r = open_sample(name)
    assert list(r.scan()) == expected
    assert list(r.scan_prefix(b"")) == expected


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_sample_point_lookups(name: str) -> None:
    expected = SAMPLES[name][4]()
    r = open_sample(name)
    first: dict[bytes, bytes] = {}
    for k, v in expected:
        first.setdefault(k, v)
    keys = list(first)
    # every present key through one batched walk, given out of order and as str and bytes
    shuffled = keys[:]
    random.Random(7).shuffle(shuffled)
    assert r.get_many([k.decode() if i % 2 else k for i, k in enumerate(shuffled)]) == first
    # single lookups: ends, and a spread across blocks
    for k in keys[:3] + keys[-3:] + keys[:: max(1, len(keys) // 150)]:
        assert r.get(k) == first[k]
        assert r.get(k.decode()) == first[k]
    # absent keys: before the first, after the last, between neighbours, truncated
    absent = [b"", b"a", b"as", b"hudi-key-", b"zzz", b"hudi-key-1"]
    for k in keys[:: max(1, len(keys) // 40)]:
        absent += [k + b"a", k + b"\x00", k[:-1]]
    absent = [k for k in absent if k not in first]
    for k in absent:
        assert r.get(k) is None, k
    assert r.get_many(absent) == {}
    assert r.get_many([]) == {}


def test_lookups_named_in_hudi_tests_16kb() -> None:
    r = open_sample("hudi_1_0_hbase_2_4_9_16KB_GZ_20000.hfile")
    for i in (0, 99, 277, 278, 8340, 13899, 13900, 13901, 13902, 19500, 19998, 19999):
        assert r.get(plain_key(i)) == value(i)
    for k in (
        "hudi-key-0000000",
        "hudi-key-000000100a",
        "hudi-key-000000277b",
        "hudi-key-000002501a",
        "hudi-key-0000196",
        "hudi-key-000019999a",
        "hudi-key-000020000",
    ):
        assert r.get(k) is None


def test_fake_first_keys_are_only_used_for_seeking() -> None:
    r = open_sample("hudi_1_0_hbase_2_4_13_16KB_GZ_20000_fake_first_key.hfile")
    # Index rows of blocks 2 and 29 are shortened separators that match no real row.
    assert b"hudi-key-00000047" in r._root_rows
    assert b"hudi-key-000006815" in r._root_rows
    for fake in (
        "hudi-key-00000047",
        "hudi-key-000000470",
        "hudi-key-000006815",
        "hudi-key-000006815-aa",
        "hudi-key-000006815-ac",
        "hudi-key-000006816",
        "hudi-key-000000469a",
    ):
        assert r.get(fake) is None
    for i in (469, 470, 471, 472, 6814, 6815, 6816):
        assert r.get(suffixed_key(i)) == value(i)
    assert [k for k, _ in r.scan_prefix("hudi-key-00000047")] == [suffixed_key(i) for i in range(470, 480)]
    assert [k for k, _ in r.scan_prefix("hudi-key-000006815")] == [suffixed_key(6815)]
    assert r.get_many(["hudi-key-00000047", suffixed_key(470), "hudi-key-000006815"]) == {
        suffixed_key(470): value(470)
    }


def test_non_unique_keys() -> None:
    r = open_sample("hudi_1_0_hbase_2_4_9_16KB_GZ_200_20_non_unique.hfile")
    for i in (0, 5, 12, 13, 64, 104, 155, 156, 199):
        assert r.get(plain_key(i)) == value(i)  # the first of the 21 cells
        got = list(r.scan_prefix(plain_key(i)))
        assert got == [(plain_key(i), value(i))] + [(plain_key(i), value(i) + b"_%d" % j) for j in range(20)]
    # "hudi-key-00000013" is the (shortened) index row of the block starting at key 130
    assert [k for k, _ in r.scan_prefix("hudi-key-00000013")] == [
        plain_key(i) for i in range(130, 140) for _ in range(21)
    ]
    assert r.get("hudi-key-00000013") is None
    assert r.get_many([plain_key(13), plain_key(12), "hudi-key-000000012a"]) == {
        plain_key(12): value(12),
        plain_key(13): value(13),
    }
    # the same cells as columns: the first of each key's run, and every cell of a prefix
    columns = r.get_many_columns([plain_key(13), plain_key(12), "hudi-key-000000012a"])
    buf = columns.buffer.tobytes()
    starts, lengths = columns.value_start.tolist(), columns.value_len.tolist()
    assert columns.rows.to_pylist() == [plain_key(12), plain_key(13)]
    assert [buf[s : s + n] for s, n in zip(starts, lengths, strict=True)] == [value(12), value(13)]
    assert len(r.scan_prefixes_columns([plain_key(13)])) == 21


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("hudi_1_0_hbase_2_4_9_16KB_GZ_20000.hfile", plain_key),
        ("hudi_1_0_hbase_2_4_9_16KB_NONE_5000.hfile", plain_key),
        ("hudi_1_0_hbase_2_4_13_1KB_GZ_20000_large_keys.hfile", large_key),
        ("hudi_1_0_hbase_2_4_13_1KB_GZ_10000_large_keys_deep_index.hfile", large_key),
    ],
)
def test_prefix_scans(name: str, key: Callable[[int], bytes]) -> None:
    n = SAMPLES[name][2]
    r = open_sample(name)
    stem = key(0)[:-9]

    def keys_of(it: Iterator[tuple[bytes, bytes]]) -> list[bytes]:
        pairs = list(it)
        assert all(v == value(int(k[-9:])) for k, v in pairs)
        return [k for k, _ in pairs]

    assert keys_of(r.scan_prefix(stem + b"0000027")) == [key(i) for i in range(2700, 2800)]
    assert keys_of(r.scan_prefix(stem + b"00000027")) == [key(i) for i in range(270, 280)]
    assert keys_of(r.scan_prefix((stem + b"%09d" % (n - 1)).decode())) == [key(n - 1)]
    assert keys_of(r.scan_prefix(stem + b"000000100a")) == []
    assert keys_of(r.scan_prefix(stem + b"1")) == []
    assert keys_of(r.scan_prefix(b"zzz")) == []
    assert keys_of(r.scan_prefix(b"a")) == []
    # union: unordered, overlapping and duplicated prefixes come back once each, in key order
    got = keys_of(
        r.scan_prefixes(
            [
                stem + b"00000139",
                b"nope",
                stem + b"0000000",
                stem + b"000001",
                stem + b"0000000",
                (stem + b"0000042").decode(),
            ]
        )
    )
    want = sorted({key(i) for i in list(range(100)) + list(range(1000, 2000)) + list(range(4200, 4300))})
    assert got == want
    assert keys_of(r.scan_prefixes([])) == []


def test_empty_file_every_method() -> None:
    r = open_sample("hudi_1_0_hbase_2_4_9_no_entry.hfile")
    assert r.entry_count == 0
    assert list(r.scan()) == []
    assert r.get("random") is None
    assert r.get_many(["a", b"b"]) == {}
    assert list(r.scan_prefix("")) == []
    assert list(r.scan_prefixes(["a", "b"])) == []
    assert r.file_info["minRecordKey"] == b""


def test_open_and_lookups_use_few_range_reads() -> None:
    name = "hudi_1_0_hbase_2_4_9_16KB_NONE_5000.hfile"  # 300 KB, 18 blocks of ~16 KB
    data = load(name)
    src = CountingInput(data, name)
    r = HFileReader(src)
    assert len(src.reads) == 1 and src.reads[0][1] <= 64 << 10  # trailer + load-on-open in one read
    src.reads.clear()
    assert r.get(plain_key(2500)) == value(2500)
    assert len(src.reads) == 1 and src.reads[0][1] < 20 << 10
    src.reads.clear()
    assert r.get(plain_key(2501)) == value(2501)  # cached block
    assert src.reads == []
    # a batch touches each block at most once
    assert len(r.get_many(plain_key(i) for i in range(0, 5000, 7))) == len(range(0, 5000, 7))
    assert len(src.reads) == len({off for off, _ in src.reads}) <= 18
    # a fresh reader: prefixes spanning many blocks still read each block once
    src2 = CountingInput(data, name)
    r2 = HFileReader(src2)
    prefixes = [b"hudi-key-000004", b"hudi-key-0000015", b"hudi-key-0000000", b"hudi-key-000001"]
    got = [k for k, _ in r2.scan_prefixes(prefixes)]
    assert got == [plain_key(i) for i in [*range(100), *range(1000, 2000), *range(4000, 5000)]]
    offsets = [off for off, _ in src2.reads[1:]]
    assert len(offsets) == len(set(offsets))
    # a full scan reads ahead in big windows
    src3 = CountingInput(data, name)
    assert sum(1 for _ in HFileReader(src3).scan()) == 5000
    assert len(src3.reads) <= 3


@pytest.mark.parametrize(
    ("name", "levels"),
    [
        ("hudi_1_0_hbase_2_4_13_1KB_GZ_20000_large_keys.hfile", 2),
        ("hudi_1_0_hbase_2_4_13_1KB_GZ_10000_large_keys_deep_index.hfile", 3),
    ],
)
def test_multi_level_lookup_reads_one_block_per_level(name: str, levels: int) -> None:
    src = CountingInput(load(name), name)
    r = HFileReader(src)
    src.reads.clear()
    assert r.get(large_key(5340)) == value(5340)
    assert len(src.reads) <= levels
    assert sum(n for _, n in src.reads) < 16 << 10


def test_from_bytes_and_checksum_switch() -> None:
    data = load("hudi_1_0_hbase_2_4_9_16KB_GZ_20000.hfile")
    r = HFileReader.from_bytes(data)
    assert r.name == "<bytes>"
    fast = HFileReader(BytesInputFile(data, "x"), verify_checksums=False)
    assert list(fast.scan()) == list(r.scan())


def test_crc32c_known_answer() -> None:
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32c(b"") == 0
    assert crc32c(bytes(32)) == 0x8A9136AA


# --- real metadata-table HFiles ----------------------------------------------------------------

MDT_ZIPS = {
    "v9_native": FIXTURES / "sample_table/cow/v9_txns_simple_meta.zip",
    "v8_hbase": FIXTURES / "quickstart_trips_table/mor/avro/v8_trips_8i3u1d.zip",
}


@pytest.fixture(scope="module")
def mdt_hfiles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Path]]:
    out: dict[str, list[Path]] = {}
    for label, archive in MDT_ZIPS.items():
        dest = tmp_path_factory.mktemp(label)
        with zipfile.ZipFile(archive) as zf:
            members = [m for m in zf.namelist() if not m.startswith("__MACOSX")]
            zf.extractall(dest, members=members)
        out[label] = sorted(dest.glob("*/.hoodie/metadata/**/*.hfile"))
    return out


@pytest.mark.parametrize("label", sorted(MDT_ZIPS))
def test_mdt_base_hfiles(label: str, mdt_hfiles: dict[str, list[Path]]) -> None:
    files = mdt_hfiles[label]
    assert len(files) >= 20
    partitions = set()
    for path in files:
        r = HFileReader(BytesInputFile(path.read_bytes(), str(path)))
        partitions.add(path.parent.name)
        assert r.trailer.minor_version == (0 if label == "v9_native" else 3), path
        assert r.trailer.codec_name == "GZ"
        assert r.trailer.comparator_class_name == "org.apache.hudi.io.storage.HoodieHBaseKVComparator"
        cells = list(r.scan())
        keys = [k for k, _ in cells]
        assert keys == sorted(keys) and len(set(keys)) == len(keys), path
        assert r.entry_count == len(cells)
        for k, v in cells:
            assert r.get(k) == v
            assert r.get(k + b"\x00") is None
        assert r.get_many([*keys, b"\xff"]) == dict(cells)
        if keys:
            assert list(r.scan_prefix(keys[0][:3])) == [c for c in cells if c[0].startswith(keys[0][:3])]
        assert r.schema is not None
        schema = fastavro.parse_schema(json.loads(r.schema))
        for _, v in cells:
            buf = io.BytesIO(v)
            assert fastavro.schemaless_reader(buf, schema) is not None
            assert buf.tell() == len(v)
        assert r.meta_block("bloomFilter")
        if cells:
            assert r.file_info["minRecordKey"] == keys[0]
            assert r.file_info["maxRecordKey"] == keys[-1]
    assert {"files", "record_index", "column_stats"} <= partitions


def test_mdt_small_file_costs_one_read(mdt_hfiles: dict[str, list[Path]]) -> None:
    path = next(p for p in mdt_hfiles["v8_hbase"] if p.parent.name == "files")
    src = CountingInput(path.read_bytes(), str(path))
    r = HFileReader(src)
    assert r.get("__all_partitions__") is not None
    assert list(r.scan_prefixes(["city=", "__all"]))
    assert len(src.reads) == 1


# --- synthetic native-writer files ------------------------------------------------------------


def pb_varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def hadoop_vint(n: int) -> bytes:
    if -112 <= n <= 127:
        return struct.pack(">b", n)
    size, marker = (n.bit_length() + 7) // 8, -112
    return struct.pack(">b", marker - size) + n.to_bytes(size, "big")


def pb_bytes(field: int, data: bytes) -> bytes:
    return pb_varint(field << 3 | 2) + pb_varint(len(data)) + data


def pb_int(field: int, n: int) -> bytes:
    return pb_varint(field << 3) + pb_varint(n % (1 << 64))


def make_block(magic: bytes, payload: bytes, *, gz: bool, checksum_type: int) -> bytes:
    body = gzip.compress(payload, mtime=0) if gz else payload
    data_size, bpc = 33 + len(body), 16384
    chunks = -(-data_size // bpc)
    head = struct.pack(
        ">8siiqBii", magic, len(body) + 4 * chunks, len(payload), -1, checksum_type, bpc, data_size
    )
    block = head + body
    if checksum_type == 0:
        sums = bytes(4 * chunks)
    else:
        fn = zlib.crc32 if checksum_type == 1 else crc32c
        sums = b"".join(struct.pack(">I", fn(block[i : i + bpc])) for i in range(0, data_size, bpc))
    return block + sums


def make_hfile(
    cells: list[tuple[bytes, bytes]],
    *,
    block_cells: int = 50,
    gz: bool = False,
    checksum_type: int = 0,
    protobuf_key_lengths: bool = False,
    trailer_codec: int | None = None,
    version: int = 3,
) -> bytes:
    """A file laid out like Hudi's native (1.1+) writer: row-only index keys, one index level."""
    out = bytearray()
    index = []
    for i in range(0, len(cells), block_cells):
        chunk = cells[i : i + block_cells]
        payload = b"".join(
            struct.pack(">ii", len(r) + 12, len(v))
            + struct.pack(">H", len(r))
            + r
            + b"\x00"
            + struct.pack(">q", 2**63 - 1)
            + b"\x04"
            + v
            + b"\x00"
            for r, v in chunk
        )
        block = make_block(b"DATABLK*", payload, gz=gz, checksum_type=checksum_type)
        index.append((len(out), len(block), chunk[0][0]))
        out += block
    meta = make_block(b"METABLKc", b"bloom!", gz=gz, checksum_type=checksum_type)
    meta_offset = len(out)
    out += meta
    loo = len(out)
    root = b""
    for off, size, row in index:
        key = struct.pack(">H", len(row)) + row
        klen = pb_varint(len(key)) if protobuf_key_lengths else hadoop_vint(len(key))
        root += struct.pack(">qi", off, size) + klen + key
    out += make_block(b"IDXROOT2", root, gz=gz, checksum_type=checksum_type)
    meta_root = struct.pack(">qi", meta_offset, len(meta)) + hadoop_vint(11) + b"bloomFilter"
    out += make_block(b"IDXROOT2", meta_root, gz=gz, checksum_type=checksum_type)
    info = {
        "KEY_VALUE_VERSION": struct.pack(">i", 1),
        "MAX_MEMSTORE_TS_KEY": struct.pack(">q", 0),
        "hfile.LASTKEY": struct.pack(">H", len(cells[-1][0])) + cells[-1][0] if cells else b"",
        "schema": b'{"type":"string"}',
    }
    proto = b"".join(pb_bytes(1, pb_bytes(1, k.encode()) + pb_bytes(2, v)) for k, v in info.items())
    file_info_offset = len(out)
    out += make_block(
        b"FILEINF2", b"PBUF" + pb_varint(len(proto)) + proto, gz=gz, checksum_type=checksum_type
    )
    trailer = b"".join(
        [
            pb_int(1, file_info_offset),
            pb_int(2, loo),
            pb_int(5, len(index)),
            pb_int(6, 1),
            pb_int(7, len(cells)),
            pb_int(8, 1),
            pb_int(9, index[0][0] if index else -1),
            pb_int(10, index[-1][0] if index else 0),
            pb_bytes(11, b"org.apache.hudi.io.storage.HoodieHBaseKVComparator"),
            pb_int(12, trailer_codec if trailer_codec is not None else (1 if gz else 2)),
        ]
    )
    tail = (b'TRABLK"$' + pb_varint(len(trailer)) + trailer).ljust(4092, b"\x00") + struct.pack(">i", version)
    return bytes(out + tail)


def test_hadoop_vint_encoding_matches_reader() -> None:
    for n in (0, 1, 127, 128, 200, 300, 65535, 1 << 20, -1, -112):
        if n >= 0:
            enc = hadoop_vint(n)
            assert read_hadoop_vint(enc, 0) == (n, len(enc))
    assert read_hadoop_vint(b"\xff", 0) == (-1, 1)
    assert read_hadoop_vint(b"\x87\xff", 0) == (-256, 2)


@pytest.mark.parametrize("protobuf_key_lengths", [False, True])
@pytest.mark.parametrize("gz", [False, True])
def test_native_long_keys_and_1_1_varint_bug(protobuf_key_lengths: bool, gz: bool) -> None:
    # Rows of 126+ bytes make index keys of 128+ bytes, where the two varint dialects differ.
    cells = [(b"k" * 130 + b"%05d" % i, b"v%d" % i) for i in range(400)]
    data = make_hfile(cells, block_cells=37, gz=gz, protobuf_key_lengths=protobuf_key_lengths)
    r = HFileReader.from_bytes(data, "native.hfile")
    assert (r.trailer.major_version, r.trailer.minor_version) == (3, 0)
    assert list(r.scan()) == cells
    assert r.get_many(k for k, _ in cells) == dict(cells)
    assert r.get(cells[37][0]) == cells[37][1]
    assert r.get(b"k" * 130) is None
    assert r.meta_block("bloomFilter") == b"bloom!"
    assert r.schema == '{"type":"string"}'


def test_equal_rows_straddling_blocks_return_the_first() -> None:
    # Index rows will be a, b, b, c: the first "b" sits in the block indexed by "a".
    cells = [
        (b"a", b"1"),
        (b"b", b"first"),
        (b"b", b"2"),
        (b"b", b"3"),
        (b"b", b"4"),
        (b"b", b"5"),
        (b"c", b"6"),
    ]
    r = HFileReader.from_bytes(make_hfile(cells, block_cells=2), "dups.hfile")
    assert r.trailer.data_index_count == 4
    assert r.get("b") == b"first"
    assert r.get_many(["c", "b", "a", "bb"]) == {b"a": b"1", b"b": b"first", b"c": b"6"}
    assert [v for _, v in r.scan_prefix("b")] == [b"first", b"2", b"3", b"4", b"5"]


@pytest.mark.parametrize("checksum_type", [1, 2])
def test_crc_checksums_catch_a_flipped_bit(checksum_type: int) -> None:
    cells = [(b"row-%04d" % i, b"value-%04d" % i) for i in range(300)]
    data = bytearray(make_hfile(cells, checksum_type=checksum_type))
    assert list(HFileReader.from_bytes(bytes(data), "ok.hfile").scan()) == cells
    data[data.index(b"value-0123") + 8] ^= 0x01
    r = HFileReader.from_bytes(bytes(data), "flipped.hfile")  # opening does not touch data blocks
    with pytest.raises(HFileFormatError, match=r"flipped\.hfile.*checksum mismatch"):
        list(r.scan())
    with pytest.raises(HFileFormatError, match="checksum"):
        r.get(b"row-0123")
    unchecked = HFileReader(BytesInputFile(bytes(data), "flipped.hfile"), verify_checksums=False)
    assert unchecked.get(b"row-0123") == b"value-0133"


def test_native_empty_file() -> None:
    r = HFileReader.from_bytes(make_hfile([]), "empty.hfile")
    assert r.entry_count == 0 and r.trailer.first_data_block_offset == -1
    assert list(r.scan()) == [] and r.get("x") is None and r.get_many(["x"]) == {}
    assert list(r.scan_prefixes(["", "x"])) == []


# --- corrupt and unsupported input ------------------------------------------------------------


def expect_error(data: bytes, name: str, *, verify: bool = True) -> HFileFormatError:
    """Open and fully exercise ``data``; it must fail with an HFileFormatError naming the file."""
    with pytest.raises(HFileFormatError) as info:
        r = HFileReader(BytesInputFile(data, name), verify_checksums=verify)
        list(r.scan())
        r.get(b"hudi-key-000000100")
    assert name in str(info.value)
    assert info.value.path == name
    return info.value


def test_truncated_in_trailer() -> None:
    data = load("hudi_1_0_hbase_2_4_9_16KB_GZ_20000.hfile")
    expect_error(data[:-100], "cut-trailer.hfile")
    expect_error(data[:-4095], "cut-trailer2.hfile")
    expect_error(data[:3000], "cut-tiny.hfile")


def test_truncated_in_data_block() -> None:
    data = load("hudi_1_0_hbase_2_4_9_16KB_NONE_5000.hfile")
    expect_error(data[:8000], "cut-data.hfile")  # inside the first 16 KB data block


def test_data_shorter_than_reported_size() -> None:
    """A stale size: the trailer region reads fine but a data block lies past the real end."""
    data = load("hudi_1_0_hbase_2_4_9_16KB_NONE_5000.hfile")

    class Holey(BytesInputFile):
        def read(self, offset: int, length: int) -> bytes:
            if offset < 100_000:
                raise EOFError(f"{self.name}: short read at {offset}")
            return super().read(offset, length)

    r = HFileReader(Holey(data, "holey.hfile"))
    with pytest.raises(HFileFormatError, match=r"holey\.hfile.*truncated"):
        r.get(plain_key(10))


def test_bit_flip_in_crc32c_data_block() -> None:
    data = bytearray(load("hudi_1_0_hbase_2_4_9_16KB_NONE_5000.hfile"))
    data[data.index(b"hudi-value-000000100") + 15] ^= 0x04
    err = expect_error(bytes(data), "flip-data.hfile")
    assert "checksum mismatch" in str(err)
    unchecked = HFileReader(BytesInputFile(bytes(data), "flip-data.hfile"), verify_checksums=False)
    assert unchecked.get(plain_key(100)) != value(100)  # only the checksum could tell


def test_bit_flip_in_trailer_magic() -> None:
    data = bytearray(load("hudi_1_0_hbase_2_4_9_16KB_GZ_20000.hfile"))
    data[-4096 + 3] ^= 0x10
    assert "magic" in str(expect_error(bytes(data), "flip-magic.hfile"))


def test_bit_flip_in_load_on_open_section() -> None:
    data = bytearray(load("hudi_1_0_hbase_2_4_9_16KB_GZ_20000.hfile"))
    t = HFileReader.from_bytes(bytes(data)).trailer
    data[t.load_on_open_data_offset + 40] ^= 0x01
    expect_error(bytes(data), "flip-index.hfile")


def test_garbage_bytes() -> None:
    rng = random.Random(3)
    expect_error(bytes(rng.getrandbits(8) for _ in range(10_000)), "garbage.hfile")
    expect_error(b"", "empty.bin")
    expect_error(b"not an hfile", "text.bin")
    expect_error(bytes(8192), "zeros.bin")


def test_unsupported_codec_and_version() -> None:
    cells = [(b"a", b"1")]
    err = expect_error(make_hfile(cells, trailer_codec=3), "snappy.hfile")
    assert "SNAPPY" in str(err) and "not supported" in str(err)
    expect_error(make_hfile(cells, trailer_codec=9), "codec9.hfile")
    assert "version" in str(expect_error(make_hfile(cells, version=2), "v2.hfile"))


@pytest.mark.parametrize(
    ("name", "verify"),
    [("hudi_1_0_hbase_2_4_9_no_entry.hfile", True), ("native", False), ("native-gz", False)],
)
def test_random_byte_flips_raise_only_format_errors(name: str, verify: bool) -> None:
    """Whatever byte is damaged, the reader either still works or raises HFileFormatError."""
    if name.startswith("native"):
        cells = [(b"row-%03d" % i, b"v%d" % i) for i in range(60)]
        data = make_hfile(cells, block_cells=7, gz=name.endswith("gz"))
    else:
        data = load(name)
    rng = random.Random(11)
    trailer_start = len(data) - 4096
    positions = [rng.randrange(len(data)) for _ in range(250)] + list(
        range(trailer_start, trailer_start + 106)
    )
    for pos in positions:
        broken = bytearray(data)
        broken[pos] ^= 1 << rng.randrange(8)
        try:
            r = HFileReader(BytesInputFile(bytes(broken), "fuzz.hfile"), verify_checksums=verify)
            list(r.scan())
            r.get_many([b"row-010", b"zz"])
            list(r.scan_prefixes([b"row-00", b""]))
            r.meta_block("bloomFilter")
            _ = r.schema
        except HFileFormatError as e:
            assert "fuzz.hfile" in str(e)


def test_checksummed_file_never_returns_damaged_data(mdt_hfiles: dict[str, list[Path]]) -> None:
    """In a CRC32C file every block is covered: a damaged file either fails or reads as the original."""
    stats_files = [p for p in mdt_hfiles["v8_hbase"] if p.parent.name == "column_stats"]
    path = max(stats_files, key=lambda p: p.stat().st_size)
    data = path.read_bytes()
    good = HFileReader.from_bytes(data)
    cells = list(good.scan())
    keys = [k for k, _ in cells]
    bloom = good.meta_block("bloomFilter")
    rng = random.Random(5)
    trailer_start = len(data) - 4096
    positions = [rng.randrange(trailer_start) for _ in range(300)] + list(
        range(trailer_start, trailer_start + 96)
    )
    failures = 0
    for pos in positions:
        broken = bytearray(data)
        broken[pos] ^= 1 << rng.randrange(8)
        try:
            r = HFileReader(BytesInputFile(bytes(broken), "damaged.hfile"))
            assert list(r.scan()) == cells
            assert r.get_many(keys) == dict(cells)
            assert r.meta_block("bloomFilter") == bloom
        except HFileFormatError as e:
            assert "damaged.hfile" in str(e)
            failures += 1
    assert failures > len(positions) // 2
