"""``delete_partition`` as Apache Hudi 1.2 records it in the MDT, and hudi-md the same (issue 37).

Apache Hudi's bundle and hudi-md each write a partitioned COW table, delete partition ``sf``
(``hoodie.datasource.write.operation=delete_partition``), write into ``nyc`` (its clean runs) and
into ``sf`` again; after each step both tables are read with hudi-md's MDT reader. What Hudi 1.2
does, and hudi-md now does too:

* the replacecommit deletes the partition's ``partition_stats`` records and leaves it listed in
  ``__all_partitions__`` (its ``files`` record too): readers skip its replaced file groups;
* the clean that deletes its files plans it in ``partitionsToBeDeleted``, deletes its directory,
  records ``isPartitionDeleted``, and writes ``__all_partitions__`` with the partition marked
  deleted and a delete of its ``files`` record: no listing has it any more;
* a write into it lists it again.

Apache Hudi then reads hudi-md's table as its own (partitions through its MDT and by listing, rows)
and its metadata validator passes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import hudi_md
from hudi_md.formats.commit_metadata import parse_instant_metadata
from hudi_md.formats.logfile import LogBlockType
from hudi_md.metadata import keys as K
from hudi_md.metadata.validate import validate_metadata_table
from hudi_md.write.writer import HudiWriter

pytestmark = [pytest.mark.hudi_md_writes, pytest.mark.ci]

OPTIONS = {
    "hoodie.table.name": "dp",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "city",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.table.type": "COPY_ON_WRITE",
    "hoodie.metadata.enable": "true",
    "hoodie.metadata.index.column.stats.enable": "true",
    "hoodie.metadata.index.partition.stats.enable": "true",
    "hoodie.cleaner.commits.retained": "1",
    "hoodie.keep.min.commits": "5",
    "hoodie.keep.max.commits": "6",
}
DDL = "id string, city string, ts long, v long"
CITIES = ["sf", "nyc", "la"]


def _rows(ids: list[int], ts: int) -> list[tuple[str, str, int, int]]:
    return [(f"k{i:02d}", CITIES[i % 3], ts, i * 10 + ts) for i in ids]


STEPS: list[tuple[str, list[int], int]] = [
    ("insert", list(range(12)), 1),
    ("delete_partition", [], 2),
    ("upsert", [1, 4], 3),  # nyc: its clean deletes sf's files, and sf
    ("upsert", [0, 3], 4),  # sf again
]


def _hudi_write(spark: Any, path: str, op: str, ids: list[int], ts: int) -> None:
    rows = _rows(ids, ts) or _rows([0], ts)  # Hudi's delete_partition takes (and ignores) rows
    writer = spark.createDataFrame(rows, DDL).coalesce(1).write.format("hudi").options(**OPTIONS)
    if op == "delete_partition":
        writer = writer.option("hoodie.datasource.write.partitions.to.delete", "sf")
    writer.option("hoodie.datasource.write.operation", op).mode("append").save(path)


def _md_write(path: str, op: str, ids: list[int], ts: int) -> None:
    if op == "delete_partition":
        HudiWriter(path, OPTIONS).delete_partitions(["sf"])
        return
    rows = _rows(ids, ts)
    data = pa.table(
        {
            "id": [r[0] for r in rows],
            "city": [r[1] for r in rows],
            "ts": pa.array([r[2] for r in rows], pa.int64()),
            "v": pa.array([r[3] for r in rows], pa.int64()),
        }
    )
    hudi_md.write(data, path, options=OPTIONS, operation=op)


def _blocks(table: Any, instant: str) -> dict[str, list[tuple[str, Any]]]:
    """What MDT deltacommit ``instant`` wrote to ``files`` and ``partition_stats``: per MDT
    partition, ("data", key, files map) and ("delete", key) entries (an empty ``__all_partitions__``
    record, which Hudi writes for a replacecommit and hudi-md does not, is left out)."""
    from hudi_md.formats.avro import decode_schemaless
    from hudi_md.metadata.records import normalize

    mdt = table.metadata_table
    out: dict[str, list[tuple[str, Any]]] = {}
    for part in (K.FILES, K.PARTITION_STATS):
        entries: list[tuple[str, Any]] = []
        for s in mdt.file_slices(part):
            for lf in s.log_files:
                for b in mdt.slice_reader._log_frames(lf.path, lf.size):
                    if b.instant_time != instant:
                        continue
                    if b.block_type == LogBlockType.DELETE:
                        entries.extend(("delete", d.record_key) for d in mdt.slice_reader._deleted_keys(b))
                    elif b.block_type == LogBlockType.HFILE_DATA and part == K.FILES:
                        reader = mdt.slice_reader._block_reader(b)
                        for k, v in reader.scan():
                            rec = normalize(
                                decode_schemaless(v, reader.schema or b.schema, return_record_name=True)
                            )
                            fs = rec.get("filesystemMetadata") or {}
                            if k.decode() == K.ALL_PARTITIONS_KEY and not fs:
                                continue
                            if k.decode() == K.ALL_PARTITIONS_KEY:
                                entries.append(
                                    ("data", k.decode(), {p: e["isDeleted"] for p, e in fs.items()})
                                )
                            else:
                                entries.append(
                                    ("data", k.decode(), sorted(e["isDeleted"] for e in fs.values()))
                                )
        out[part] = sorted(entries, key=json.dumps)
    return out


def _observe(hudi: Any, path: str, instant: str) -> dict[str, Any]:
    table = hudi_md.open_table(path)
    mdt = table.metadata_table
    record = mdt.read_records(K.FILES, keys=[K.ALL_PARTITIONS_KEY, K.files_key("sf")])
    timeline = table.timeline.completed()
    cleans = [i for i in timeline if i.action == "clean"]
    clean: dict[str, Any] = {}
    if cleans:
        c = cleans[-1]
        f = Path(path) / ".hoodie" / "timeline" / f"{c.requested_time}.clean.requested"
        meta = table.timeline.metadata(c)
        clean = {
            "partitionsToBeDeleted": parse_instant_metadata(f.read_bytes(), str(f))["partitionsToBeDeleted"],
            "isPartitionDeleted": {
                p: pm["isPartitionDeleted"] for p, pm in (meta.get("partitionMetadata") or {}).items()
            },
        }
    return {
        "actions": [i.action for i in timeline],
        "__all_partitions__": {
            p: e["isDeleted"] for p, e in record[K.ALL_PARTITIONS_KEY]["filesystemMetadata"].items()
        },
        "sf files record": K.files_key("sf") in record,
        "hudi-md partitions": table.partitions(),
        "sf directory": (Path(path) / "sf").exists(),
        "last clean": clean,
        "mdt blocks": _blocks(table, instant),
        "hudi partitions (MDT)": hudi.partitions(path, metadata=True),
        "hudi partitions (listing)": hudi.partitions(path, metadata=False),
        "hudi rows": sorted((r["id"], r["city"], r["v"]) for r in hudi.rows(path)),
        "hudi-md rows": sorted(
            (r["id"], r["city"], r["v"]) for r in table.read(columns=["id", "city", "v"]).to_pylist()
        ),
    }


def test_delete_partition_as_hudi_records_it(spark: Any, hudi: Any, tables_root: Path) -> None:
    ours, theirs = str(tables_root / "dp-hudi-md"), str(tables_root / "dp-hudi")
    seen: dict[str, list[dict[str, Any]]] = {"hudi": [], "hudi-md": []}
    for op, ids, ts in STEPS:
        _hudi_write(spark, theirs, op, ids, ts)
        _md_write(ours, op, ids, ts)
        for name, path in (("hudi", theirs), ("hudi-md", ours)):
            last = hudi_md.open_table(path).timeline.completed().last()
            seen[name].append(_observe(hudi, path, last.requested_time))
    for n, (a, b) in enumerate(zip(seen["hudi"], seen["hudi-md"], strict=True)):
        assert b == a, f"after step {n} ({STEPS[n][0]}): hudi-md {b} != Apache Hudi {a}"
    after_delete, after_clean, after_rewrite = seen["hudi-md"][1:]
    # what Hudi 1.2 does, spelled out
    assert after_delete["__all_partitions__"] == {"la": False, "nyc": False, "sf": False}
    assert after_delete["sf files record"] and after_delete["sf directory"]
    assert after_delete["hudi-md partitions"] == ["la", "nyc", "sf"]
    assert len(after_delete["mdt blocks"][K.PARTITION_STATS]) == 7  # sf's stats, each indexed column
    assert after_clean["actions"][-2:] == ["commit", "clean"]
    assert after_clean["last clean"]["partitionsToBeDeleted"] == ["sf"]
    assert after_clean["last clean"]["isPartitionDeleted"] == {"sf": True}
    assert ("delete", "sf") in after_clean["mdt blocks"][K.FILES]
    assert ("data", K.ALL_PARTITIONS_KEY, {"sf": True}) in after_clean["mdt blocks"][K.FILES]
    assert after_clean["__all_partitions__"] == {"la": False, "nyc": False}
    assert not after_clean["sf files record"] and not after_clean["sf directory"]
    assert after_clean["hudi-md partitions"] == after_clean["hudi partitions (MDT)"] == ["la", "nyc"]
    assert after_rewrite["hudi-md partitions"] == ["la", "nyc", "sf"]
    assert after_rewrite["__all_partitions__"] == {"la": False, "nyc": False, "sf": False}
    # Apache Hudi reads hudi-md's table as its own, and validates its MDT
    assert hudi.validate(ours) == []
    assert validate_metadata_table(hudi_md.open_table(ours)) == []
