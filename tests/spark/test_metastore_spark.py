"""``spark.read.format("hudi-md")`` planned through the metastore (issue 15): a table registered on a
``hudi-md metastore serve`` process (SQLite) is loaded by its name ``db.table`` or by its path with
``hoodie.metaserver.*`` read options; the rows equal a read without the server, and the planner
prunes partitions on the server."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import hudi_md
from hudi_md.spark.session import last_plan_counters

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "metastore"))
from server_helpers import ServerProcess, token_for

CITIES = ["sf", "nyc", "la"]


def _rows(ids: range, ts: int) -> pa.Table:
    return pa.table(
        {
            "id": [f"k{i:03d}" for i in ids],
            "city": [CITIES[i % 3] for i in ids],
            "ts": [ts] * len(ids),
            "v": [i * 3 + ts for i in ids],
        }
    )


@pytest.fixture
def metastore(tmp_path: Path) -> Iterator[dict[str, str]]:
    db = f"sqlite:///{tmp_path / 'metastore.db'}"
    token = token_for(db)
    server = ServerProcess(db, tmp_path, "--sync-interval", "0.2").wait_ready()
    try:
        yield {
            "hoodie.metaserver.enabled": "true",
            "hoodie.metaserver.uris": server.url,
            "hoodie.metaserver.token": token,
        }
    finally:
        server.stop()


@pytest.mark.spark_smoke
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_spark_reads_through_the_metastore(
    hudi_spark: Any, metastore: dict[str, str], tmp_path: Path, table_type: str
) -> None:
    import time

    from hudi_md.metastore.client import MetastoreClient

    path = tmp_path / "t"
    opts = {
        "hoodie.table.name": "trips",
        "hoodie.database.name": "lake",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.table.type": table_type,
        **metastore,
    }
    hudi_md.write(_rows(range(0, 60), 1), str(path), operation="insert", options=opts)
    hudi_md.write(_rows(range(30, 90), 2), str(path), operation="upsert", options=opts)
    client = MetastoreClient.from_options(metastore)
    assert client is not None
    deadline = time.monotonic() + 30
    while client.snapshot_status("lake", "trips").pending:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    want = sorted(
        (r["id"], r["city"], r["v"])
        for r in hudi_spark.read.format("hudi-md").load(str(path)).select("id", "city", "v").collect()
    )
    assert len(want) == 90
    for target in ("lake.trips", str(path)):
        df = hudi_spark.read.format("hudi-md").options(**metastore).load(target)
        got = sorted((r["id"], r["city"], r["v"]) for r in df.select("id", "city", "v").collect())
        assert got == want, target
        sf = df.where("city = 'sf'").select("id").collect()
        assert sorted(r["id"] for r in sf) == sorted(k for k, c, _ in want if c == "sf")
        counters = last_plan_counters(hudi_spark)
        assert counters.get("partitions_from_catalog") == 1, counters  # pruned by the server
