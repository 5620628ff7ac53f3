"""MDT deltacommits with record-index key batches (Arrow columns) write the same cells, file
groups and delete blocks as the same records one by one — including when a batch key is also
in another batch or in a record (then the later of a key wins, as for records)."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

import hudi_md
from hudi_md.formats.logfile import LogBlockType, read_log_file
from hudi_md.metadata import keys as K
from hudi_md.metadata.records_builder import MdtKeyBatch, record_index_batch, record_index_delete
from hudi_md.metadata.writer import MetadataTableWriter
from hudi_md.storage import BytesInputFile, Storage
from hudi_md.table.config import TableConfig
from hudi_md.table.timeline_writer import new_instant_time


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("batches") / "t"
    data = pa.table({"id": [f"id{i}" for i in range(50)], "p": ["a", "b"] * 25, "ts": list(range(50))})
    hudi_md.write(
        data,
        str(path),
        operation="insert",
        options={
            "hoodie.table.name": "t",
            "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "p",
            "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.metadata.record.index.enable": "true",
        },
    )
    return path


def _written(path: Path, records: list, instant: str) -> dict[str, list]:
    storage = Storage(str(path))
    config = TableConfig.load(storage)
    assert K.RECORD_INDEX in config.metadata_partitions
    MetadataTableWriter(storage, config, {}).write_records(instant, records, partitions=[K.RECORD_INDEX])
    out: dict[str, list] = {}
    folder = path / ".hoodie/metadata" / K.RECORD_INDEX
    for f in sorted(folder.iterdir()):
        if instant not in f.name:
            continue
        blocks = []
        for block in read_log_file(BytesInputFile(f.read_bytes(), f.name)):
            if block.block_type is LogBlockType.HFILE_DATA:
                blocks.append(("cells", list(block.hfile_reader().scan())))
            else:
                blocks.append(("deletes", [d.record_key for d in block.delete_records()]))
        out[f.name] = blocks
    return out


def _keys(rng: random.Random, n: int) -> list[str]:
    alphabet = "abcXYZ0189-_:é漢"
    return list(
        dict.fromkeys("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12))) for _ in range(n))
    )


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("overlap", [False, True])
def test_batches_write_what_records_write(table: Path, tmp_path: Path, seed: int, overlap: bool) -> None:
    rng = random.Random(seed)
    keys = _keys(rng, 3000)
    a, b, gone = keys[:1500], keys[1500:2800], keys[2800:]
    if overlap:  # a key in two batches and a key deleted then written again
        b = [*b, a[7]]
        gone = [*gone, b[3]]
    records: list = [record_index_delete(k) for k in gone]
    records.append(record_index_batch(pa.array(a, pa.string()), "a", "fid-a", "20240101000000000"))
    records.append(record_index_batch(pa.array(b, pa.string()), "b", "fid-b", "20240102000000000"))
    if overlap:
        records.append(record_index_delete(a[11]))  # after its batch: the delete wins
    one_by_one = [x for r in records for x in (r.records() if isinstance(r, MdtKeyBatch) else [r])]

    copy = tmp_path / "copy"
    shutil.copytree(table, copy)
    instant = new_instant_time()
    expected = _written(copy, one_by_one, instant)
    shutil.rmtree(copy)
    shutil.copytree(table, copy)
    actual = _written(copy, records, instant)
    assert actual == expected
    cells = {k for blocks in actual.values() for kind, items in blocks if kind == "cells" for k, _ in items}
    deleted = {k for blocks in actual.values() for kind, items in blocks if kind == "deletes" for k in items}
    live = set(a) | set(b)
    if overlap:
        live.discard(a[11])
    assert cells == {k.encode("utf-8") for k in live}
    assert deleted == set(gone) - set(b) | ({a[11]} if overlap else set())
