"""``delete_partition`` through the metastore (issue 37): the server lists a dropped partition as the
table's MDT does, as Apache Hudi 1.2 does (integration/test_delete_partition_interop.py): until the
clean that deletes its files (``isPartitionDeleted``), then no more; a write into it brings it
back. On SQLite and PostgreSQL, through a real ``hudi-md metastore serve``."""

from __future__ import annotations

import time
from pathlib import Path

import pyarrow as pa
from server_helpers import ServerProcess, token_for

import hudi_md
from hudi_md.metadata.validate import validate_metadata_table
from hudi_md.metastore.client import MetastoreClient
from hudi_md.write.writer import HudiWriter

OPTS = {
    "hoodie.table.name": "trips",
    "hoodie.database.name": "lake",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "city",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.hive_style_partitioning": "true",
    "hoodie.cleaner.commits.retained": "1",
}
CITIES = ["sf", "nyc", "la"]


def _rows(ids: range | list[int], ts: int) -> pa.Table:
    ids = list(ids)
    return pa.table(
        {
            "id": [f"k{i:03d}" for i in ids],
            "city": [CITIES[i % 3] for i in ids],
            "ts": [ts] * len(ids),
            "v": [i * 10 + ts for i in ids],
        }
    )


def _synced(client: MetastoreClient) -> None:
    deadline = time.monotonic() + 30
    while True:
        status = client.snapshot_status("lake", "trips")
        if status.status == "synced" and not status.pending:
            return
        assert time.monotonic() < deadline, status
        time.sleep(0.05)


def test_a_deleted_partition_leaves_the_server_at_its_clean(
    db_url: str, servers: list[ServerProcess], tmp_path: Path
) -> None:
    token = token_for(db_url)
    server = ServerProcess(db_url, tmp_path, "--sync-interval", "0.2")
    servers.append(server)
    server.wait_ready()
    ms = {
        "hoodie.metaserver.enabled": "true",
        "hoodie.metaserver.uris": server.url,
        "hoodie.metaserver.token": token,
    }
    opts = {**OPTS, **ms}
    path = str(tmp_path / "t")
    client = MetastoreClient(server.url, token)

    def listed() -> tuple[list[str], list[str], list[str]]:
        _synced(client)
        return (
            sorted(p.path for p in client.partitions("lake", "trips")),
            hudi_md.open_table(path, ms).partitions(),  # planned through the server
            hudi_md.open_table(path).partitions(),  # the table's own MDT
        )

    hudi_md.write(_rows(range(30), 1), path, options=opts, operation="insert")
    everything = ["city=la", "city=nyc", "city=sf"]
    assert listed() == (everything, everything, everything)
    HudiWriter(path, opts).delete_partitions(["city=sf"])
    assert listed() == (everything, everything, everything)  # as Hudi: listed until the clean
    through = hudi_md.open_table(path, ms)
    assert "city=sf" not in through.file_slices().column("partition_path").to_pylist()
    hudi_md.write(_rows(range(1, 30, 3), 2), path, options=opts, operation="upsert")  # nyc; a clean
    left = ["city=la", "city=nyc"]
    assert listed() == (left, left, left)
    gone = client.partitions("lake", "trips", include_dropped=True)
    assert [(p.path, p.dropped, p.clean_pending) for p in gone if p.path == "city=sf"] == [
        ("city=sf", True, False)
    ]
    rows = hudi_md.open_table(path, ms).read(columns=["id", "city"])
    assert set(rows.column("city").to_pylist()) == {"nyc", "la"} and rows.num_rows == 20
    assert validate_metadata_table(hudi_md.open_table(path)) == []
    # a write into it brings it back, everywhere
    hudi_md.write(_rows([0, 3], 3), path, options=opts, operation="upsert")
    assert listed() == (everything, everything, everything)
    rows = hudi_md.open_table(path, ms).read(columns=["id", "city"], filters=[("city", "=", "sf")])
    assert sorted(rows.column("id").to_pylist()) == ["k000", "k003"]
    assert validate_metadata_table(hudi_md.open_table(path)) == []
