"""HFile point, prefix and range lookups through the block index: the same cells as a full scan,
and only the data blocks that hold them read (adjacent blocks in one request).

Files: round trips of our writer (one-level index, many small blocks), the HBase-written samples
with two- and three-level indexes and shortened ("fake") index keys, and the MDT base HFiles of the
hudi-rs fixture tables (written by Hudi: HBase's writer in 1.0, Hudi's own in 1.1)."""

from __future__ import annotations

import random
import threading
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from hudi_md.errors import HFileFormatError
from hudi_md.formats.hfile import CellColumns, HFileReader, write_hfile
from hudi_md.formats.hfile import reader as hfile_reader
from hudi_md.storage import BytesInputFile

from fixtures import fixtures_dir

FIXTURES = fixtures_dir()
HFILE_DIR = FIXTURES / "core-tests-data" / "hfile"


class CountingInput:
    """An InputFile recording every range read."""

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


Cells = list[tuple[bytes, bytes]]


def brute_prefixes(cells: Cells, prefixes: list[bytes]) -> Cells:
    return [c for c in cells if any(c[0].startswith(p) for p in prefixes)]


def brute_range(cells: Cells, lo: bytes, hi: bytes | None) -> Cells:
    return [c for c in cells if lo <= c[0] and (hi is None or c[0] < hi)]


def probes(cells: Cells, rng: random.Random, n: int) -> list[bytes]:
    """Keys to ask for: present ones, keys between them, and keys before and after all."""
    keys = [k for k, _ in cells]
    out = [b"", b"\x00", b"\xff" * 4]
    for _ in range(n):
        k = rng.choice(keys) if keys else b"k"
        cut = rng.randrange(len(k) + 1)
        out.append(rng.choice([k, k[:cut], k + b"\x00", k[:cut] + b"\xff", k[:-1] if k else b""]))
    return out


def as_cells(columns: CellColumns) -> Cells:
    """Column-wise cells as ``(row, value)`` pairs."""
    buf = columns.buffer.tobytes()
    starts, lengths = columns.value_start.tolist(), columns.value_len.tolist()
    values = [buf[s : s + n] for s, n in zip(starts, lengths, strict=True)]
    return list(zip(columns.rows.to_pylist(), values, strict=True))


def check_lookups(reader: HFileReader, cells: Cells, seed: int, rounds: int = 30) -> None:
    rng = random.Random(seed)
    present = dict(cells)
    assert as_cells(reader.scan_columns()) == cells
    for _ in range(rounds):
        asked = probes(cells, rng, rng.randrange(1, 40))
        found = {k: present[k] for k in asked if k in present}
        assert reader.get_many(asked) == found
        assert as_cells(reader.get_many_columns(asked)) == sorted(found.items())
        prefixes = [p[: rng.randrange(len(p) + 1)] for p in rng.sample(asked, min(len(asked), 4))]
        assert list(reader.scan_prefixes(prefixes)) == brute_prefixes(cells, prefixes)
        assert as_cells(reader.scan_prefixes_columns(prefixes)) == brute_prefixes(cells, prefixes)
        lo, hi = sorted(rng.sample(asked, 2))
        assert list(reader.scan_range(lo, hi)) == brute_range(cells, lo, hi)
        assert list(reader.scan_range(lo)) == brute_range(cells, lo, None)
        assert list(reader.scan_range(hi, lo)) == []  # an empty range


def round_trip_cells(n: int) -> Cells:
    """Keys shaped like MDT keys: groups sharing long prefixes, of uneven sizes."""
    rng = random.Random(n)
    cells = set()
    for i in range(n):
        group = rng.choice([b"__all__", b"dt=p", b"dt=q", b"id=", b"zz"])
        cells.add((group + b"%07d" % rng.randrange(10 * n), b"v%d" % i * rng.randrange(1, 6)))
    return sorted(dict(cells).items())


@pytest.mark.parametrize("block_size", [256, 4096, 65536])
@pytest.mark.parametrize("compression", ["NONE", "GZ"])
def test_round_trip_lookups_equal_a_full_scan(block_size: int, compression: str) -> None:
    cells = round_trip_cells(3000)
    data = write_hfile(cells, block_size=block_size, compression=compression)
    reader = HFileReader(BytesInputFile(data, "rt"))
    assert list(reader.scan()) == cells
    check_lookups(reader, cells, seed=block_size)
    # a fresh reader per lookup: nothing cached from an earlier one
    rng = random.Random(7)
    for _ in range(10):
        lo, hi = sorted(rng.sample(probes(cells, rng, 10), 2))
        fresh = HFileReader(BytesInputFile(data, "rt"))
        assert list(fresh.scan_range(lo, hi)) == brute_range(cells, lo, hi)


@pytest.mark.parametrize("block_size", [256, 4096])
@pytest.mark.parametrize("compression", ["NONE", "GZ"])
def test_blocks_decoded_side_by_side_equal_one_at_a_time(
    block_size: int, compression: str, monkeypatch
) -> None:
    """A column-wise scan decodes the blocks on two threads (here whatever their size): the same
    cells as the one-at-a-time scan, and a damaged block still fails with the format error."""
    monkeypatch.setattr(hfile_reader, "_PARALLEL_SCAN_BYTES", 0)
    cells = round_trip_cells(3000)
    data = write_hfile(cells, block_size=block_size, compression=compression)
    threads: set[str] = set()
    real = hfile_reader.cell_positions

    def spy(*args, **kwargs):
        threads.add(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(hfile_reader, "cell_positions", spy)
    assert as_cells(HFileReader(BytesInputFile(data, "rt")).scan_columns()) == cells
    assert all(t.startswith("hfile-scan") for t in threads) and threads
    threads.clear()
    assert list(HFileReader(BytesInputFile(data, "rt")).scan()) == cells
    assert threads == {threading.current_thread().name}
    damaged = bytearray(data)
    second = data.index(b"DATABLK*", data.index(b"DATABLK*") + 1)
    damaged[second + 7] ^= 0x5A  # the second data block's magic
    with pytest.raises(HFileFormatError, match="rt"):
        HFileReader(BytesInputFile(bytes(damaged), "rt")).scan_columns()
    if compression == "NONE":  # a cell's key length past its block: found on a decoding thread
        damaged = bytearray(data)
        damaged[second + 33 : second + 35] = b"\x7f\xff"
        threads.clear()
        with pytest.raises(HFileFormatError, match=r"rt: scan failed: cell at 0 is truncated"):
            HFileReader(BytesInputFile(bytes(damaged), "rt")).scan_columns()
        assert all(t.startswith("hfile-scan") for t in threads) and threads


@pytest.mark.parametrize("block_size", [256, 4096])
@pytest.mark.parametrize("compression", ["NONE", "GZ"])
def test_batch_lookups_decode_the_walks_blocks_side_by_side(
    block_size: int, compression: str, monkeypatch
) -> None:
    """Column-wise batch lookups and prefix scans of many blocks take the blocks they need from the
    index and decode them on two threads (here whatever their size): the same cells as a brute
    search, and the same blocks as the cursor's walk reads."""
    cells = round_trip_cells(3000)
    data = write_hfile(cells, block_size=block_size, compression=compression)
    rng = random.Random(block_size)
    asks = []
    for _ in range(25):
        asked = probes(cells, rng, rng.randrange(1, 40))
        prefixes = [p[: rng.randrange(len(p) + 1)] for p in rng.sample(asked, min(len(asked), 4))]
        asks.append((asked, prefixes))

    def run(parallel_bytes: int) -> tuple[list, list[set[int]], set[str]]:
        monkeypatch.setattr(hfile_reader, "_PARALLEL_SCAN_BYTES", parallel_bytes)
        decoded: set[int] = set()
        threads: set[str] = set()
        real_block = hfile_reader.HFileReader._data_block
        real_decoded = hfile_reader.HFileReader._decoded

        def data_block(self, offset, *args, **kwargs):
            decoded.add(offset)
            return real_block(self, offset, *args, **kwargs)

        def side_by_side(self, item):
            decoded.add(item[0])
            threads.add(threading.current_thread().name)
            return real_decoded(self, item)

        monkeypatch.setattr(hfile_reader.HFileReader, "_data_block", data_block)
        monkeypatch.setattr(hfile_reader.HFileReader, "_decoded", side_by_side)
        answers, blocks = [], []
        for asked, prefixes in asks:
            for ask in (
                lambda r: r.get_many_columns(asked),  # noqa: B023 (run at once)
                lambda r: r.scan_prefixes_columns(prefixes),  # noqa: B023
            ):
                decoded.clear()
                answers.append(as_cells(ask(HFileReader(BytesInputFile(data, "rt")))))
                blocks.append(set(decoded))
        monkeypatch.undo()
        return answers, blocks, threads

    walked, walked_blocks, walk_threads = run(1 << 62)
    planned, planned_blocks, plan_threads = run(0)
    assert not any(t.startswith("hfile-scan") for t in walk_threads)
    assert plan_threads and all(t.startswith("hfile-scan") for t in plan_threads)
    assert planned == walked
    assert planned_blocks == walked_blocks
    present = dict(cells)
    for (asked, prefixes), by_keys, by_prefixes in zip(asks, planned[0::2], planned[1::2], strict=True):
        assert by_keys == sorted({k: present[k] for k in asked if k in present}.items())
        assert by_prefixes == brute_prefixes(cells, prefixes)


def test_blocks_decoded_side_by_side_are_kept_as_the_walk_keeps_them(monkeypatch) -> None:
    """A column-wise prefix scan decoding its blocks side by side reads each run of adjacent
    blocks in one request, as the walk does, and keeps them: a lookup among them reads nothing."""
    monkeypatch.setattr(hfile_reader, "_PARALLEL_SCAN_BYTES", 0)
    cells = sequential(20_000)
    src = CountingInput(write_hfile(cells, block_size=1024, compression="GZ"), "seq")
    reader = HFileReader(src)
    src.reads.clear()
    got = as_cells(reader.scan_prefixes_columns([b"key-0001", b"key-0002", b"key-0190"]))
    assert got == cells[100:300] + cells[19000:19100]
    assert len(src.reads) == 2
    src.reads.clear()
    assert as_cells(reader.get_many_columns([b"key-000150", b"key-019050"])) == [cells[150], cells[19050]]
    assert src.reads == []


def sequential(n: int) -> Cells:
    return [(b"key-%06d" % i, b"value-%06d-" % i + b"x" * 40) for i in range(n)]


def test_lookups_read_only_the_blocks_that_hold_the_keys() -> None:
    cells = sequential(20_000)  # ~60 bytes a cell, 1 KiB blocks: ~1300 blocks
    data = write_hfile(cells, block_size=1024, compression="NONE")
    src = CountingInput(data, "seq")
    reader = HFileReader(src)
    opened = len(src.reads)
    assert opened <= 2

    def cost(fn: Callable[[], object]) -> tuple[int, int]:
        src.reads.clear()
        fn()
        return len(src.reads), sum(n for _, n in src.reads)

    # a new reader for each probe below: no block decoded before
    reader = HFileReader(src)
    assert cost(lambda: reader.get_many([b"key-010000"])) == (1, pytest.approx(1100, abs=200))
    # keys in adjacent blocks (~12 cells a block): one request for the run
    reader = HFileReader(src)
    n, nbytes = cost(lambda: reader.get_many([b"key-012000", b"key-012020"]))
    assert n == 1 and nbytes < 4 * 1200
    # two keys far apart: two requests of one block each
    reader = HFileReader(src)
    n, nbytes = cost(lambda: reader.get_many([b"key-001000", b"key-019000"]))
    assert n == 2 and nbytes < 2 * 1200
    # a range of 2000 cells (~120 KiB): one request, about that long
    reader = HFileReader(src)
    got: list[Cells] = []
    n, nbytes = cost(lambda: got.append(list(reader.scan_range(b"key-005000", b"key-007000"))))
    assert got[0] == cells[5000:7000]
    span = sum(len(k) + len(v) for k, v in cells[5000:7000])
    assert n == 1 and span < nbytes < span * 1.5 + 2 * 1200
    # a prefix: the same
    reader = HFileReader(src)
    n, nbytes = cost(lambda: got.append(list(reader.scan_prefix(b"key-0123"))))
    assert got[-1] == cells[12300:12400]
    span = sum(len(k) + len(v) for k, v in cells[12300:12400])
    assert n == 1 and span < nbytes < span * 1.5 + 2 * 1200
    # several prefixes: one request per run of adjacent blocks
    reader = HFileReader(src)
    n, _ = cost(lambda: got.append(list(reader.scan_prefixes([b"key-0001", b"key-0002", b"key-0190"]))))
    assert got[-1] == cells[100:300] + cells[19000:19100]
    assert n == 2
    # blocks already decoded are not read again
    n, _ = cost(lambda: reader.get_many([b"key-000150", b"key-019050"]))
    assert n == 0
    # a full scan: one request for the whole data section
    reader = HFileReader(src)
    n, nbytes = cost(lambda: got.append(list(reader.scan())))
    assert got[-1] == cells and n == 1 and nbytes < len(data)


# --- HBase-written files with multi-level indexes and shortened index keys -------------------

LARGE_KEY_PREFIX = b"hudi-key-" + b"a" * 100 + b"-"


def hbase_cells(name: str) -> Cells:
    if "large_keys" in name:
        n = 20_000 if "20000" in name else 10_000
        return [(LARGE_KEY_PREFIX + b"%09d" % i, b"hudi-value-%09d" % i) for i in range(n)]
    if "fake_first_key" in name:
        return [(b"hudi-key-%09d-abcdefghij" % i, b"hudi-value-%09d" % i) for i in range(20_000)]
    return [(b"hudi-key-%09d" % i, b"hudi-value-%09d" % i) for i in range(20_000)]


@pytest.mark.parametrize(
    "name",
    [
        "hudi_1_0_hbase_2_4_13_1KB_GZ_20000_large_keys.hfile",  # two index levels
        "hudi_1_0_hbase_2_4_13_1KB_GZ_10000_large_keys_deep_index.hfile",  # three
        "hudi_1_0_hbase_2_4_13_16KB_GZ_20000_fake_first_key.hfile",  # shortened index keys
        "hudi_1_0_hbase_2_4_9_16KB_GZ_20000.hfile",
    ],
)
def test_hbase_files_lookups_equal_a_full_scan(name: str) -> None:
    data = (HFILE_DIR / name).read_bytes()
    cells = hbase_cells(name)
    reader = HFileReader(BytesInputFile(data, name))
    assert list(reader.scan()) == cells
    check_lookups(reader, cells, seed=len(name), rounds=12)  # 1 KiB blocks: thousands per file


def test_multi_level_range_reads_each_block_once() -> None:
    name = "hudi_1_0_hbase_2_4_13_1KB_GZ_10000_large_keys_deep_index.hfile"
    data = (HFILE_DIR / name).read_bytes()
    cells = hbase_cells(name)
    src = CountingInput(data, name)
    reader = HFileReader(src)
    src.reads.clear()
    lo, hi = cells[3000][0], cells[3300][0]
    assert list(reader.scan_range(lo, hi)) == cells[3000:3300]
    offsets = [off for off, _ in src.reads]
    assert len(offsets) == len(set(offsets))
    assert sum(n for _, n in src.reads) < len(data) / 10


# --- Hudi-written MDT base files -------------------------------------------------------------

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
            zf.extractall(dest, members=[m for m in zf.namelist() if not m.startswith("__MACOSX")])
        out[label] = sorted(dest.glob("*/.hoodie/metadata/**/*.hfile"))
    return out


@pytest.mark.parametrize("label", sorted(MDT_ZIPS))
def test_hudi_written_mdt_files_lookups_equal_a_full_scan(
    label: str, mdt_hfiles: dict[str, list[Path]]
) -> None:
    files = mdt_hfiles[label]
    assert files
    for n, path in enumerate(files):
        data = path.read_bytes()
        cells = list(HFileReader(BytesInputFile(data, str(path))).scan())
        check_lookups(HFileReader(BytesInputFile(data, str(path))), cells, seed=n, rounds=10)
