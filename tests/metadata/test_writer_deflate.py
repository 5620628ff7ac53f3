"""Every MDT HFile block, the record index's too, is deflated at Java's default level: Hudi's bytes,
so the MDT is no larger than Apache Hudi's for the same records (the record index at zlib level 3
was ~38 % larger); every one reads back through our reader and hudi-rs reads the table."""

from __future__ import annotations

import zlib
from pathlib import Path

import pyarrow as pa
import pytest

import hudi_md
from hfile_blocks import gz_data_blocks
from hudi_md.formats.hfile.writer import DEFAULT_DEFLATE_LEVEL
from hudi_md.formats.logfile import LogBlockType, read_log_file
from hudi_md.metadata import keys as K
from hudi_md.storage import BytesInputFile

CLASSIC_ZLIB = "ng" not in zlib.ZLIB_RUNTIME_VERSION.lower()
pytestmark = pytest.mark.skipif(not CLASSIC_ZLIB, reason="zlib-ng deflates differently")

OPTIONS = {
    "hoodie.table.name": "t",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "p",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.metadata.record.index.enable": "true",
}


def _rows(start: int, n: int, ts: int) -> pa.Table:
    ids = range(start, start + n)
    return pa.table({"id": [f"id{i:06d}" for i in ids], "p": [f"p{i % 3}" for i in ids], "ts": [ts] * n})


def _hfiles(mdt: Path) -> list[tuple[str, bytes]]:
    """(MDT partition, HFile bytes) of every base file and HFile log block."""
    found = []
    for path in sorted(mdt.glob("*/*")):
        if path.name.endswith(".hfile"):
            found.append((path.parent.name, path.read_bytes()))
        elif ".log." in path.name:
            for block in read_log_file(BytesInputFile(path.read_bytes(), str(path))):
                if block.block_type is LogBlockType.HFILE_DATA:
                    found.append((path.parent.name, block.hfile_bytes()))
    return found


def test_every_mdt_partition_is_deflated_at_javas_level(tmp_path: Path) -> None:
    path = tmp_path / "t"
    hudi_md.write(_rows(0, 3000, 1), str(path), operation="bulk_insert", options=OPTIONS)
    hudi_md.write(_rows(2000, 2000, 2), str(path), operation="upsert", options=OPTIONS)
    checked: set[str] = set()
    for partition, data in _hfiles(path / ".hoodie" / "metadata"):
        for body, payload in gz_data_blocks(data):
            deflater = zlib.compressobj(DEFAULT_DEFLATE_LEVEL, zlib.DEFLATED, -zlib.MAX_WBITS)
            assert body == deflater.compress(payload) + deflater.flush(), partition
            checked.add(partition)
    assert {K.RECORD_INDEX, K.FILES} <= checked
    # every key's record-index location is the file group whose latest base file holds it
    # (hudi-rs's latest slices, read by pyarrow's Parquet reader)
    import hudi
    import pyarrow.parquet as pq

    expected = {}
    for s in hudi.HudiTableBuilder.from_base_uri(str(path)).build().get_file_slices():
        base = path / s.partition_path / s.base_file_name
        for key in pq.read_table(base, columns=["_hoodie_record_key"]).column(0).to_pylist():
            expected[key] = (s.partition_path, s.file_id)
    assert sorted(expected) == [f"id{i:06d}" for i in range(4000)]
    mdt = hudi_md.open_table(str(path)).metadata_table
    assert mdt is not None
    located = mdt.record_index.locations([*expected, "id004000"])
    assert {k: (v.partition_path, v.file_id) for k, v in located.items()} == expected
