"""Hudi bloom filters: bit-exact against every filter Hudi wrote into the fixtures, and against
Hadoop's own classes (which Hudi's SIMPLE filter is, and its dynamic filter copies) run in a JVM."""

from __future__ import annotations

import base64
import random
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

import hudi_md.index.bloom as bloom_module
from hudi_md.errors import InvalidOptionError
from hudi_md.formats.hfile import HFileReader
from hudi_md.index.bloom import DYNAMIC_V0, SIMPLE, BloomFilter, murmur_hash
from hudi_md.storage.base import BytesInputFile

# Keys that exercise every tail length, bytes >= 0x80 (sign extension in Hadoop's murmur tail),
# multi-byte UTF-8 and surrogate pairs.
ODD_KEYS = [
    "1",
    "ab",
    "abc",
    "abcd",
    "abcde",
    "é",
    "ü1",
    "x\x80y",
    "\xff\xfe\xfd",
    "日本語キー",
    "\U0001f600x",
    "id:2,name:Bob",
    "TXN-001",
    "036ded81-9ed4-479f-bcea-7145dfa0079b",
]


@pytest.fixture(scope="module")
def unpacked(all_archives: list[str], table_path: Callable[[str], Path]) -> list[Path]:
    return [table_path(a) for a in all_archives]


def _base_files(tables: list[Path]) -> Iterator[Path]:
    for table in tables:
        for p in sorted(table.rglob("*.parquet")):
            if ".hoodie" not in p.relative_to(table).parts:
                yield p


def test_every_fixture_footer_filter_is_reproduced_bit_for_bit(unpacked: list[Path]) -> None:
    checked = 0
    type_codes = set()
    for path in _base_files(unpacked):
        pf = pq.ParquetFile(path)
        footer = pf.metadata.metadata
        text = footer[b"org.apache.hudi.bloomfilter"].decode()
        type_code = footer.get(b"hoodie_bloom_filter_type_code", b"SIMPLE").decode()
        type_codes.add(type_code)
        keys = pf.read(columns=["_hoodie_record_key"]).column(0).to_pylist()

        stored = BloomFilter.deserialize(text, type_code)
        assert all(stored.might_contain(k) for k in keys), path
        assert stored.serialize() == text, path

        fresh = BloomFilter.create(type_code=type_code)  # Hudi's data-file defaults
        for key in keys:  # in file order, as HoodieAvroWriteSupport.add saw them
            fresh.add(key)
        assert fresh.serialize() == text, path
        checked += 1
    assert checked >= 150  # 170 base files in the hudi-rs fixtures (v6, v8, v9)
    assert type_codes == {DYNAMIC_V0}  # no fixture writes SIMPLE: see the Hadoop oracle tests below


def test_every_mdt_base_hfile_filter_is_reproduced_bit_for_bit(unpacked: list[Path]) -> None:
    checked = sizes = 0
    for table in unpacked:
        for path in sorted((table / ".hoodie" / "metadata").rglob("*.hfile")):
            reader = HFileReader(BytesInputFile(path.read_bytes(), str(path)))
            block = reader.meta_block("bloomFilter")
            if block is None:
                continue
            type_code = reader.file_info["bloomFilterTypeCode"].decode()
            keys = [k.decode() for k, _ in reader.scan()]
            stored = BloomFilter.deserialize(block.decode(), type_code)
            assert all(stored.might_contain(k) for k in keys), path
            # Hudi 1.1 sizes MDT filters for 10000 entries, Hudi 1.0 used the data-file 60000.
            assert stored.num_entries in (10000, 60000)
            fresh = BloomFilter.create(stored.num_entries or 0, 1e-9, type_code=type_code)
            fresh.add_all(keys)
            assert fresh.serialize() == block.decode(), path
            checked += 1
            sizes += len(keys)
    assert checked >= 150 and sizes > 1000  # 198 files, 1278 keys


def test_default_sizing_matches_hudi() -> None:
    f = BloomFilter.create()
    # ceil(60000 * -ln(1e-9) / ln(2)^2) bits and ceil(ln(2) * bits / 60000) hashes.
    assert (f.vector_size, f.num_hashes, f.num_entries, f.type_code) == (2587966, 30, 60000, DYNAMIC_V0)
    assert len(f.serialize()) == 431380  # the size of every fixture footer filter
    simple = BloomFilter.create(type_code="simple")
    assert simple.type_code == SIMPLE and simple.num_entries is None


def test_false_positive_sanity() -> None:
    rng = random.Random(7)
    keys = [str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(5000)]
    strict = BloomFilter.create()  # fpp 1e-9
    strict.add_all(keys)
    absent = [f"absent-{i}" for i in range(20000)]
    assert all(strict.might_contain(k) for k in keys)
    assert sum(strict.might_contain(k) for k in absent) == 0

    loose = BloomFilter.create(2000, 0.01, type_code=SIMPLE)
    loose.add_all(keys[:2000])
    rate = sum(loose.might_contain(k) for k in absent) / len(absent)
    assert 0.001 < rate < 0.03  # designed for 1 %


def test_dynamic_filter_grows_then_reuses_rows_round_robin() -> None:
    f = BloomFilter.create(10, 0.01, max_entries=30)
    keys = [f"key-{i}" for i in range(100)]
    f.add_all(keys)
    assert f.num_rows == 3  # grows until rows * 10 >= 30 ...
    raw = base64.b64decode(f.serialize())
    header = 13
    nr, current, rows = (int.from_bytes(raw[header + 4 * i : header + 4 * i + 4], "big") for i in range(3))
    # ... then the 31st key goes to row 0 without resetting the count: 10 + 70 keys.
    assert (nr, current, rows) == (10, 80, 3)
    assert all(f.might_contain(k) for k in keys)
    again = BloomFilter.deserialize(f.serialize(), DYNAMIC_V0)
    assert again.serialize() == f.serialize() and again.num_rows == 3


def test_vectorised_and_scalar_paths_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(3)
    keys = ODD_KEYS * 20 + [f"k{rng.getrandbits(40)}" for _ in range(3000)]
    monkeypatch.setattr(bloom_module, "_VECTORISE_FROM", 10**9)
    scalar = BloomFilter.create(1000, 1e-4)
    scalar.add_all(keys)
    monkeypatch.setattr(bloom_module, "_VECTORISE_FROM", 1)
    vector = BloomFilter.create(1000, 1e-4)
    vector.add_all(keys)
    assert vector.num_rows == 4
    assert vector.serialize() == scalar.serialize()


def test_adding_100k_keys_takes_a_few_seconds_at_most() -> None:
    rng = random.Random(1)
    keys = [str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(100_000)]
    start = time.perf_counter()
    f = BloomFilter.create()
    for k in keys:
        f.add(k)
    text = f.serialize()
    elapsed = time.perf_counter() - start
    assert elapsed < 5.0, elapsed
    assert f.num_rows == 2 and len(text) > 2 * 431000
    assert all(f.might_contain(k) for k in keys[::997])


def test_rejects_bad_input() -> None:
    with pytest.raises(InvalidOptionError):
        BloomFilter.create(type_code="BOGUS")
    with pytest.raises(InvalidOptionError):
        BloomFilter.deserialize("not base64 !!", DYNAMIC_V0)
    text = BloomFilter.create(100, 0.01).serialize()
    with pytest.raises(InvalidOptionError):
        BloomFilter.deserialize(text[:-8], DYNAMIC_V0)  # truncated
    with pytest.raises(InvalidOptionError):
        BloomFilter.deserialize(text, SIMPLE)  # a dynamic filter read as simple has trailing bytes
    with pytest.raises(InvalidOptionError):
        BloomFilter.create().add("")  # Hadoop's HashFunction rejects empty keys


# --- Hadoop's classes as the oracle -------------------------------------------------------------------


@pytest.fixture(scope="module")
def jvm() -> Iterator[Any]:
    """A bare JVM with Spark's jars (hadoop-client-api holds org.apache.hadoop.util.bloom)."""
    pytest.importorskip("pyspark")
    from pyspark import SparkConf
    from pyspark.java_gateway import launch_gateway

    try:
        gateway = launch_gateway(SparkConf())
    except Exception as e:  # no Java on this machine
        pytest.skip(f"cannot start a JVM: {e}")
    yield gateway.jvm
    gateway.shutdown()


def _java_serialize(jvm: Any, java_filter: Any) -> str:
    out = jvm.java.io.ByteArrayOutputStream()
    java_filter.write(jvm.java.io.DataOutputStream(out))
    return base64.b64encode(bytes(out.toByteArray())).decode()


def test_murmur_matches_hadoop(jvm: Any) -> None:
    hadoop = jvm.org.apache.hadoop.util.hash.MurmurHash.getInstance()
    rng = random.Random(11)
    for _ in range(300):
        data = bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 41)))
        seed = rng.getrandbits(32) - (1 << 31)
        assert murmur_hash(data, seed) == hadoop.hash(bytearray(data), len(data), seed)


def test_simple_filter_matches_hadoop_bloom_filter(jvm: Any) -> None:
    ours = BloomFilter.create(500, 1e-3, type_code=SIMPLE)
    theirs = jvm.org.apache.hadoop.util.bloom.BloomFilter(ours.vector_size, ours.num_hashes, 1)
    keys = ODD_KEYS + [f"key-{i}" for i in range(300)]
    for k in keys:
        ours.add(k)
        theirs.add(jvm.org.apache.hadoop.util.bloom.Key(bytearray(k.encode("utf-8"))))
    assert ours.serialize() == _java_serialize(jvm, theirs)


def test_dynamic_filter_matches_hadoop_dynamic_bloom_filter(jvm: Any) -> None:
    # Hadoop's DynamicBloomFilter has no bound: it equals Hudi's while rows * nr < max_entries.
    ours = BloomFilter.create(50, 1e-3, max_entries=10**6)
    theirs = jvm.org.apache.hadoop.util.bloom.DynamicBloomFilter(ours.vector_size, ours.num_hashes, 1, 50)
    keys = ODD_KEYS + [str(uuid.UUID(int=i * 7919)) for i in range(400)]
    for k in keys:
        ours.add(k)
        theirs.add(jvm.org.apache.hadoop.util.bloom.Key(bytearray(k.encode("utf-8"))))
    assert ours.num_rows == 9
    assert ours.serialize() == _java_serialize(jvm, theirs)


@pytest.mark.parametrize("type_code", [SIMPLE, DYNAMIC_V0])
@pytest.mark.parametrize("seed", range(3))
def test_add_column_sets_the_bits_add_sets(type_code: str, seed: int) -> None:
    """A string column's keys hashed from its bytes: the same filter as add() key by key, across
    dynamic rows being opened and the maximum being reached (then rows reused round robin)."""
    import pyarrow as pa

    rng = random.Random(seed)
    alphabet = "abz09-_é漢😀"
    keys = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40))) for _ in range(5000)]
    by_key = BloomFilter.create(700, 1e-3, type_code=type_code, max_entries=2100)
    by_column = BloomFilter.create(700, 1e-3, type_code=type_code, max_entries=2100)
    for k in keys[:123]:  # keys added one by one first, pending when the column comes
        by_key.add(k)
        by_column.add(k)
    by_key.add_all(keys[123:])
    by_column.add_column(pa.array(["pad", *keys[123:]], pa.string()).slice(1))
    assert by_column.serialize() == by_key.serialize()
    assert by_column.num_rows == by_key.num_rows
    by_key.add_all(keys[:400])  # the state after the column continues the same way
    by_column.add_column(pa.chunked_array([pa.array(keys[:200]), pa.array(keys[200:400])]))
    assert by_column.serialize() == by_key.serialize()
    for size in (3, 20):  # small columns: scalar below 8 keys, vectorised from there
        by_key.add_all(keys[1000 : 1000 + size])
        by_column.add_column(pa.array(keys[1000 : 1000 + size]))
        assert by_column.serialize() == by_key.serialize()
    with pytest.raises(InvalidOptionError, match="empty"):
        by_column.add_column(pa.array(["x"] * 300 + [""]))
    with pytest.raises(InvalidOptionError, match="None"):
        by_column.add_column(pa.array(["x", None]))
