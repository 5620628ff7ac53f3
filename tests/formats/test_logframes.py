"""Log blocks framed without their content (formats/logframes.py): the same blocks as the full
reader on every fixture log file (Hudi-written data and MDT logs), two requests to frame a large
block, an HFile inside it read by its block index, and damaged files refused as the full reader
refuses them."""

from __future__ import annotations

import random
import zipfile
from pathlib import Path

import pytest

from hudi_md.errors import LogFormatError
from hudi_md.formats.hfile import HFileReader, write_hfile
from hudi_md.formats.logfile import LogBlockType, iter_log_blocks, read_log_file
from hudi_md.formats.logfile_writer import delete_block, hfile_data_block, rollback_command_block
from hudi_md.formats.logframes import HEAD_BYTES, TAIL_BYTES, WHOLE_FILE_BYTES, iter_log_frames
from hudi_md.storage import BytesInputFile

from fixtures import fixtures_dir

FIXTURES = fixtures_dir()
ZIPS = [
    "sample_table/cow/v9_txns_simple_meta.zip",
    "sample_table/mor/v9_txns_simple_meta.zip",
    "quickstart_trips_table/mor/avro/v8_trips_8i3u1d.zip",
    "quickstart_trips_table/mor/avro/v6_trips_8i3u1d.zip",
]
SCHEMA = '{"type":"record","name":"R","fields":[{"name":"x","type":"int"}]}'


class CountingInput:
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


@pytest.fixture(scope="module")
def log_files(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    out: list[Path] = sorted((FIXTURES / "core-tests-data" / "log_files").glob("*/.*.log.*"))
    for archive in ZIPS:
        path = FIXTURES / archive
        if not path.exists():
            continue
        dest = tmp_path_factory.mktemp(path.stem)
        with zipfile.ZipFile(path) as zf:
            zf.extractall(dest, members=[m for m in zf.namelist() if not m.startswith("__MACOSX")])
        out.extend(p for p in dest.rglob(".*.log.*") if p.is_file())
    return out


def test_frames_are_the_blocks_of_every_fixture_log(log_files: list[Path]) -> None:
    assert len(log_files) >= 20
    kinds = set()
    for path in log_files:
        data = path.read_bytes()
        blocks = read_log_file(BytesInputFile(data, path.name))
        frames = list(iter_log_frames(BytesInputFile(data, path.name)))
        assert len(frames) == len(blocks), path
        for f, b in zip(frames, blocks, strict=True):
            kinds.add(f.block_type)
            assert (f.block_type, f.header, f.footer) == (b.block_type, b.header, b.footer)
            assert f.offset == b.offset
            assert f.instant_time == b.instant_time and f.schema == b.schema
            assert f.is_rollback_command == b.is_rollback_command
            assert f.load().content == b.content
            assert f.content_file().read_all() == b.content
    assert {LogBlockType.HFILE_DATA, LogBlockType.DELETE, LogBlockType.AVRO_DATA} <= kinds


def big_hfile_log(n: int = 20_000) -> tuple[bytes, list[tuple[bytes, bytes]]]:
    rng = random.Random(1)
    cells = [(b"key-%07d" % i, rng.randbytes(200)) for i in range(n)]  # 20k: ~4.5 MB, incompressible
    hfile = write_hfile(cells, block_size=64 << 10, compression="GZ")
    log = (
        hfile_data_block(hfile, SCHEMA, "20240101000000000")
        + delete_block([], "20240101000000001")
        + rollback_command_block("20240101000000002", "20240101000000001")
    )
    return log, cells


def test_a_large_block_is_framed_with_two_requests_and_its_hfile_read_by_its_index() -> None:
    log, cells = big_hfile_log()
    assert len(log) > 4 * WHOLE_FILE_BYTES
    src = CountingInput(log, "big.log")
    frames = list(iter_log_frames(src))
    kinds = [f.block_type for f in frames]
    assert kinds == [LogBlockType.HFILE_DATA, LogBlockType.DELETE, LogBlockType.COMMAND]
    assert frames[2].is_rollback_command and frames[2].target_instant_time == "20240101000000001"
    # head and tail of the HFile block; the two small blocks after it lie in the tail's read
    assert len(src.reads) == 2
    assert src.reads[0] == (0, HEAD_BYTES)
    assert src.reads[1][1] <= TAIL_BYTES + 200
    src.reads.clear()
    reader = HFileReader(frames[0].content_file(), open_tail_bytes=TAIL_BYTES)  # as the MDT reader opens it
    assert src.reads == []  # trailer and root index came with the tail
    assert reader.get(cells[12345][0]) == cells[12345][1]
    assert len(src.reads) == 1 and src.reads[0][1] < 100 << 10  # one 64 KiB block
    src.reads.clear()
    assert list(reader.scan_prefix(b"key-000123")) == cells[1230:1240]
    assert len(src.reads) == 1
    assert frames[1].load().delete_records() == []


def test_a_small_file_is_read_once() -> None:
    log = delete_block([], "20240101000000000") + rollback_command_block("20240101000000002", "1")
    src = CountingInput(log, "small.log")
    frames = list(iter_log_frames(src))
    assert len(frames) == 2 and len(src.reads) == 1
    assert frames[0].load().delete_records() == [] and len(src.reads) == 1


def test_a_header_longer_than_the_first_read() -> None:
    big_schema = SCHEMA.replace('"R"', '"' + "R" * (3 * HEAD_BYTES) + '"')
    hfile = write_hfile([(b"a", b"1")], compression="NONE")
    log = hfile_data_block(hfile, big_schema, "20240101000000000") + delete_block([], "2")
    (frame, _) = iter_log_frames(BytesInputFile(log, "h.log"), whole_file_bytes=0)
    assert frame.schema == big_schema
    assert HFileReader(frame.content_file()).get(b"a") == b"1"


@pytest.mark.parametrize("whole_file_bytes", [0, WHOLE_FILE_BYTES])
def test_damaged_files_are_refused_as_the_full_reader_refuses_them(whole_file_bytes: int) -> None:
    log, _ = big_hfile_log(200 if whole_file_bytes else 20_000)
    assert (len(log) <= whole_file_bytes) == bool(whole_file_bytes)
    rng = random.Random(3)
    cuts = {len(log) - 1, len(log) - 8, 13, 20, *(rng.randrange(len(log)) for _ in range(30))}
    for cut in sorted(cuts):
        data = log[:cut]
        try:
            full = list(iter_log_blocks(BytesInputFile(data, "x")))
        except LogFormatError:
            full = None
        try:
            framed = list(iter_log_frames(BytesInputFile(data, "x"), whole_file_bytes=whole_file_bytes))
        except LogFormatError:
            framed = None
        if full is None:
            assert framed is None, cut
        else:
            assert framed is not None and len(framed) == len(full), cut
    # a flipped trailing length, a bad magic
    flipped = bytearray(log)
    flipped[-1] ^= 1
    with pytest.raises(LogFormatError, match="trailing length"):
        list(iter_log_frames(BytesInputFile(bytes(flipped), "x"), whole_file_bytes=whole_file_bytes))
    bad = b"#HUDX#" + log[6:]
    with pytest.raises(LogFormatError, match="bad magic"):
        list(iter_log_frames(BytesInputFile(bad, "x"), whole_file_bytes=whole_file_bytes))
