"""``spark.read.format("hudi-md")`` on tables of the federated storage layout (RFC-60): after every
step of a random upsert / delete / compaction / clean sequence, the rows Spark reads through the
shim equal the model and hudi-md's Python reader, the files Spark scans are under the storage path
where the strategy puts them, and partition pruning prunes as on any table.
(On local disk, so it runs on every Spark line; tests/spark/test_s3.py reads one from S3 with the
table and storage paths in two buckets, and tests/test_federated.py runs such sequences there.)"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

import hudi_md
from hudi_md.storage.strategy import ObjectStoreStorageStrategy
from hudi_md.table.filenames import parse_data_file
from hudi_md.write import services
from hudi_md.write.config import WriteConfig
from hudi_md.write.writer import HudiWriter

CITIES = ["sf", "nyc", "la"]


def _rows(ids: range, ts: int) -> Any:
    import pyarrow as pa

    return pa.table(
        {
            "id": [f"k{i:03d}" for i in ids],
            "city": [CITIES[i % 3] for i in ids],
            "ts": [ts] * len(ids),
            "v": [i * 10 + ts for i in ids],
        }
    )


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_spark_reads_a_federated_table_after_every_step(
    hudi_spark: Any, tmp_path: Path, table_type: str
) -> None:
    rng = random.Random(3)
    path, data = tmp_path / "t", tmp_path / "data"
    opts = {
        "hoodie.table.name": "fed",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.storage.strategy.class": "hudi_md.storage.strategy.ObjectStoreStorageStrategy",
        "hoodie.storage.path": str(data),
        "hoodie.storage.strategy.prefix.count": "64",
        "hoodie.parquet.max.file.size": "4000",
        "hoodie.cleaner.commits.retained": "2",
    }
    model: dict[str, tuple[str, int]] = {}

    def write(op: str, ids: range, ts: int) -> None:
        HudiWriter(str(path), opts).write(_rows(ids, ts), op)
        for i in ids:
            key = f"k{i:03d}"
            if op == "delete":
                model.pop(key, None)
            else:
                model[key] = (CITIES[i % 3], i * 10 + ts)

    strategy = ObjectStoreStorageStrategy("fed", {"hoodie.storage.strategy.prefix.count": "64"})
    write("insert", range(0, 60), 1)
    for step in range(2, 9):
        op = rng.choice(["upsert", "upsert", "delete", "service"])
        if op == "service":
            w = HudiWriter(str(path), opts)
            if table_type == "MERGE_ON_READ":
                services.compact(w)
            services.clean(w, WriteConfig.from_options(w.options, w.config()))
        else:
            start = rng.randrange(0, 70)
            write(op, range(start, start + rng.randint(5, 25)), step)
        df = hudi_spark.read.format("hudi-md").load(str(path))
        got = sorted((r["id"], r["city"], r["v"]) for r in df.select("id", "city", "v").collect())
        want = sorted((k, c, v) for k, (c, v) in model.items())
        assert got == want, f"step {step} ({op})"
        py = hudi_md.open_table(str(path)).read(columns=["id", "city", "v"])
        assert sorted(zip(*(py.column(c).to_pylist() for c in ("id", "city", "v")), strict=True)) == want
        for uri in df.inputFiles():
            rel = uri.split(str(data), 1)[1].strip("/")
            prefix, table, partition, name = rel.split("/")
            parsed = parse_data_file(name)
            assert parsed is not None and table == "fed"
            assert strategy.prefix(partition, parsed.file_id) == prefix
    assert not list(path.rglob("*.parquet"))
    # pruning as on any table: one partition of three by its value
    from hudi_md.spark.session import last_plan_counters

    pruned = hudi_spark.read.format("hudi-md").load(str(path)).where("city = 'sf'")
    assert sorted(r["id"] for r in pruned.collect()) == sorted(k for k, (c, _) in model.items() if c == "sf")
    counters = last_plan_counters(hudi_spark)
    # by its files key: the list of all partitions not read
    assert counters["partitions_from_keys"] == counters["partitions_after_partition_pruning"] == 1
    assert "partitions" not in counters
