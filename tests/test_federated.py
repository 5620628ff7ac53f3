"""The federated storage layout (RFC-60, issue 14): data files spread over hashed prefixes under a
storage path, the MDT their only listing.

On an S3 server on loopback (moto) with the table path in one bucket and the storage path in
another: random upsert / delete / compaction / clustering / clean / rollback / restore sequences, after every
step the rows equal the model (hudi-md's reader through the MDT), every data file is where the
strategy puts it (base and log files of a file group share a prefix), the table path holds only
``.hoodie/`` and partition metadata, and ``metadata validate`` (which lists the storage path) finds
nothing. The repair tool rebuilds a deleted MDT that validates and gives the same slices, without
files of failed writes; the MDT turned off or unreadable is a typed error; a table cannot switch
its layout; a user's own strategy class works.
"""

from __future__ import annotations

import logging
import random
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import hudi_md
from hudi_md.errors import InvalidOptionError
from hudi_md.metadata.validate import validate_metadata_table
from hudi_md.storage.federated import FederatedStorage
from hudi_md.storage.strategy import ObjectStoreStorageStrategy
from hudi_md.table.filenames import parse_data_file
from hudi_md.table.layout import MetadataRequiredError, StorageLayoutError
from hudi_md.write import services
from hudi_md.write.config import WriteConfig
from hudi_md.write.table_setup import delete_metadata, repair_metadata_table
from hudi_md.write.writer import HudiWriter
from table_model import Model, rows, triples

OBJECT_STORE = "hudi_md.storage.strategy.ObjectStoreStorageStrategy"


def options(table_type: str, storage_path: str, **extra: str) -> dict[str, str]:
    return {
        "hoodie.table.name": "trips",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.metadata.record.index.enable": "true",
        "hoodie.storage.strategy.class": OBJECT_STORE,
        "hoodie.storage.path": storage_path,
        "hoodie.parquet.max.file.size": "4000",  # several file groups per partition
        "hoodie.cleaner.commits.retained": "2",
        "hoodie.keep.min.commits": "3",
        "hoodie.keep.max.commits": "4",
        **extra,
    }


# --- the strategy --------------------------------------------------------------------------------------


def test_object_store_prefixes() -> None:
    s = ObjectStoreStorageStrategy("trips")
    # Hudi 1.2's HashID.getXXHash32 over partition path + file id (../shared/reference §3.3)
    assert s.prefix("country=usa", "075f3295-def8-4a42-a927-07fd2dd2976c-0") == "3329a5ff"
    assert s.prefix("", "075f3295-def8-4a42-a927-07fd2dd2976c-0") == "943c61db"
    assert s.storage_location("country=usa", "075f3295-def8-4a42-a927-07fd2dd2976c-0") == (
        "3329a5ff/trips/country=usa"
    )
    assert s.storage_location("", "075f3295-def8-4a42-a927-07fd2dd2976c-0") == "943c61db/trips"
    bounded = ObjectStoreStorageStrategy("trips", {"hoodie.storage.strategy.prefix.count": "16"})
    prefixes = {bounded.prefix("p", f"{i:08x}-0") for i in range(2000)}
    assert prefixes == {f"{i:x}" for i in range(16)}
    wide = ObjectStoreStorageStrategy("trips", {"hoodie.storage.strategy.prefix.count": "1000"})
    assert {len(wide.prefix("p", f"{i}-0")) for i in range(500)} == {3}
    for bad in ("1", "-4", "x"):
        with pytest.raises(InvalidOptionError, match=r"prefix\.count"):
            ObjectStoreStorageStrategy("trips", {"hoodie.storage.strategy.prefix.count": bad})


# --- on an S3 server, two buckets -----------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def s3() -> Iterator[dict[str, Any]]:
    import s3fs
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        endpoint = f"http://127.0.0.1:{port}"
        opts = {
            "key": "test",
            "secret": "test",
            "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"},
        }
        fs = s3fs.S3FileSystem(**opts)
        for bucket in ("tables", "data"):
            fs.call_s3("create_bucket", Bucket=bucket)
        yield {"options": opts, "fs": fs}
    finally:
        server.stop()


def _check(
    s3: dict[str, Any], uri: str, storage_path: str, model: Model, foreign: frozenset[str] = frozenset()
) -> Any:
    """The table reads the model's rows and validates clean, but for ``foreign`` (file names no
    instant on the timeline wrote, which validate must report as foreign files)."""
    table = hudi_md.open_table(uri, s3["options"])
    assert isinstance(table.state.storage, FederatedStorage)
    assert triples(table.read(columns=["id", "ts", "fare"])) == model.expected()
    diffs = validate_metadata_table(table)
    assert {(d.kind, d.file_name) for d in diffs} == {("foreign_file", f) for f in foreign}, [
        d.describe() for d in diffs
    ]
    fs, strategy = s3["fs"], ObjectStoreStorageStrategy("trips")
    # the table path: .hoodie/ and partition metadata only
    table_root = uri.removeprefix("s3://")
    for key in fs.find(table_root):
        rel = key[len(table_root) + 1 :]
        assert rel.startswith(".hoodie/") or rel.endswith(".hoodie_partition_metadata"), key
    # every data file of the latest slices where the strategy puts it; base and logs share a prefix
    slices = table.file_slices()
    for row in slices.to_pylist():
        files = ([row["base_file_uri"]] if row["base_file_uri"] else []) + row["log_file_uris"]
        want = f"{storage_path}/{strategy.storage_location(row['partition_path'], row['file_id'])}/"
        assert files and all(f.startswith(want) for f in files), (files, want)
        assert all(fs.exists(f) for f in files)
    return table


def _latest_write(uri: str, opts: dict[str, Any]) -> str | None:
    last = HudiWriter(uri, opts).timeline().completed().write_timeline().last()
    return last.requested_time if last is not None else None


@pytest.mark.s3
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_random_sequences_on_two_buckets(s3: dict[str, Any], table_type: str) -> None:
    rng = random.Random(7 if table_type == "COPY_ON_WRITE" else 11)
    uri, storage_path = f"s3://tables/{table_type.lower()}", f"s3://data/{table_type.lower()}"
    # cleans only where the sequence says, so the restore below can pick a commit they kept
    opts = {**s3["options"], **options(table_type, storage_path, **{"hoodie.clean.automatic": "false"})}
    model = Model(["city"])
    history: list[tuple[str, Model]] = []
    cleaned_at = 0  # commits before this index of history may have been cleaned

    def write(operation: str, ids: range, ts: int) -> None:
        data = rows(ids, ts, seed=ts)
        instant = HudiWriter(uri, opts).write(data, operation).instant
        model.apply(operation, data)
        history.append((instant, model.copy()))

    write("insert", range(0, 80), 1)
    _check(s3, uri, storage_path, model)
    for step in range(2, 12):
        op = rng.choice(["upsert", "upsert", "delete", "service", "rollback"])
        if op == "upsert":
            start = rng.randrange(0, 100)
            write("upsert", range(start, start + rng.randint(5, 40)), step)
        elif op == "delete":
            start = rng.randrange(0, 80)
            write("delete", range(start, start + rng.randint(3, 15)), step)
        elif op == "service":
            w = HudiWriter(uri, opts)
            if table_type == "MERGE_ON_READ":
                services.compact(w)
            services.cluster(w)  # new file groups, written under hashed prefixes too
            if services.clean(w, WriteConfig.from_options(w.options, w.config())):
                cleaned_at = len(history) - 2
        elif op == "rollback" and len(history) > 1 and _latest_write(uri, opts) == history[-1][0]:
            instant, _ = history.pop()
            HudiWriter(uri, opts).rollback_commit(instant)
            model.rows = dict(history[-1][1].rows)
        _check(s3, uri, storage_path, model)
    # restore to an earlier commit (one the cleaner kept)
    write("upsert", range(0, 30), 20)
    write("upsert", range(20, 50), 21)
    # (one still on the active timeline: archival moves the oldest instants out, clusterings and
    # cleans adding to the count)
    active = {i.requested_time for i in HudiWriter(uri, opts).timeline().completed().write_timeline()}
    instant, before = next(h for h in history[max(cleaned_at, len(history) // 2, 0) :] if h[0] in active)
    HudiWriter(uri, opts).restore(instant)
    model.rows = dict(before.rows)
    _check(s3, uri, storage_path, model)


@pytest.mark.s3
def test_repair_rebuilds_a_deleted_mdt(s3: dict[str, Any]) -> None:
    uri, storage_path = "s3://tables/repair", "s3://data/repair"
    opts = {**s3["options"], **options("MERGE_ON_READ", storage_path)}
    model = Model(["city"])
    for ts, (op, ids) in enumerate(
        [("insert", range(0, 60)), ("upsert", range(30, 90)), ("delete", range(0, 10))], 1
    ):
        data = rows(ids, ts, seed=ts)
        HudiWriter(uri, opts).write(data, op)
        model.apply(op, data)
    before = _check(s3, uri, storage_path, model).file_slices()
    # a write that dies after writing its files under their prefixes, before its commit
    dead = HudiWriter(uri, opts)
    dead.crash_at = "before_complete"
    with pytest.raises(Exception, match=r"before_complete"):
        dead.write(rows(range(200, 230), 9, seed=9), "insert")
    written = [f for f in s3["fs"].find("data/repair") if "20" in f]
    assert written
    # a file no instant on the timeline wrote, in a prefix
    stray = "ffffffff-0000-0000-0000-000000000000-0"
    where = ObjectStoreStorageStrategy("trips").storage_location("sf", stray)
    s3["fs"].pipe_file(f"data/repair/{where}/{stray}_0-0-0_29991231000000000.parquet", b"not a commit's")
    stray_file = f"{stray}_0-0-0_29991231000000000.parquet"
    delete_metadata(HudiWriter(uri, opts))
    with pytest.raises(MetadataRequiredError):
        hudi_md.open_table(uri, s3["options"]).read()
    config = repair_metadata_table(HudiWriter(uri, opts))
    assert "files" in config.metadata_partitions
    # the repaired MDT lists neither the dead write's files nor the stray, which validate reports
    after = _check(s3, uri, storage_path, model, foreign=frozenset({stray_file})).file_slices()
    assert after.sort_by("file_id").to_pylist() == before.sort_by("file_id").to_pylist()
    # safe to run again
    repair_metadata_table(HudiWriter(uri, opts))
    assert _check(s3, uri, storage_path, model, frozenset({stray_file})).file_slices().sort_by(
        "file_id"
    ).to_pylist() == (before.sort_by("file_id").to_pylist())


# --- refusals (local disk: the layout does not depend on the file system) ------------------------------


def test_the_mdt_is_mandatory(tmp_path: Path) -> None:
    uri, storage_path = str(tmp_path / "t"), str(tmp_path / "data")
    opts = options("COPY_ON_WRITE", storage_path)
    with pytest.raises(MetadataRequiredError, match=r"hoodie\.metadata\.enable"):
        HudiWriter(uri, {**opts, "hoodie.metadata.enable": "false"}).write(
            rows(range(10), 1, seed=1), "insert"
        )
    assert not (tmp_path / "t").exists() or not any((tmp_path / "t").rglob("*.parquet"))
    HudiWriter(uri, opts).write(rows(range(30), 1, seed=1), "insert")
    with pytest.raises(MetadataRequiredError, match=r"hoodie\.metadata\.enable=false"):
        hudi_md.open_table(uri, {"hoodie.metadata.enable": "false"}).read()
    with pytest.raises(MetadataRequiredError, match=r"hoodie\.metadata\.enable"):
        HudiWriter(uri, {**opts, "hoodie.metadata.enable": "false"}).write(
            rows(range(5), 2, seed=2), "upsert"
        )
    assert len(hudi_md.open_table(uri).read()) == 30  # nothing was written, the MDT is still there
    # an unreadable MDT: never a listing of the table path
    for f in (tmp_path / "t" / ".hoodie" / "metadata" / "files").iterdir():
        if f.name.endswith(".hfile") or ".log." in f.name:
            f.write_bytes(b"garbage")
    with pytest.raises(MetadataRequiredError, match=r"cannot be read"):
        hudi_md.open_table(uri).read()


def test_a_table_cannot_switch_its_layout(tmp_path: Path) -> None:
    plain, fed = str(tmp_path / "plain"), str(tmp_path / "fed")
    base = {k: v for k, v in options("COPY_ON_WRITE", "").items() if not k.startswith("hoodie.storage.")}
    HudiWriter(plain, base).write(rows(range(10), 1, seed=1), "insert")
    with pytest.raises(StorageLayoutError, match=r"cannot switch"):
        HudiWriter(plain, options("COPY_ON_WRITE", str(tmp_path / "d"))).write(
            rows(range(5), 2, seed=2), "upsert"
        )
    HudiWriter(fed, options("COPY_ON_WRITE", str(tmp_path / "d1"))).write(
        rows(range(10), 1, seed=1), "insert"
    )
    with pytest.raises(StorageLayoutError, match=r"hoodie\.storage\.path"):
        HudiWriter(fed, options("COPY_ON_WRITE", str(tmp_path / "d2"))).write(
            rows(range(5), 2, seed=2), "upsert"
        )
    # the layout's own options may be repeated, or left out: the table's are used
    HudiWriter(fed, options("COPY_ON_WRITE", str(tmp_path / "d1"))).write(rows(range(5), 3, seed=3), "upsert")
    HudiWriter(fed, base).write(rows(range(5, 8), 4, seed=4), "upsert")
    assert not list((tmp_path / "fed").rglob("*.parquet")) and list((tmp_path / "d1").rglob("*.parquet"))
    with pytest.raises(InvalidOptionError, match=r"hoodie\.storage\.path"):
        HudiWriter(str(tmp_path / "nopath"), {**base, "hoodie.storage.strategy.class": OBJECT_STORE}).write(
            rows(range(3), 1, seed=1), "insert"
        )


class ByFirstLetter:
    """A user's strategy: one folder per first letter of the file id, under the storage path."""

    federated = True

    def __init__(self, table_name: str, properties: dict[str, str]) -> None:
        self.table_name = table_name

    def storage_location(self, partition_path: str, file_id: str) -> str:
        return f"{file_id[0]}/{self.table_name}/{partition_path}".rstrip("/")


def test_a_users_strategy_class(tmp_path: Path) -> None:
    uri, storage_path = str(tmp_path / "t"), str(tmp_path / "data")
    opts = {
        **options("MERGE_ON_READ", storage_path),
        "hoodie.storage.strategy.class": "test_federated.ByFirstLetter",
    }
    model = Model(["city"])
    for ts, (op, ids) in enumerate([("insert", range(0, 50)), ("upsert", range(20, 70))], 1):
        data = rows(ids, ts, seed=ts)
        HudiWriter(uri, opts).write(data, op)
        model.apply(op, data)
    table = hudi_md.open_table(uri)
    assert table.state.config.get("hoodie.storage.strategy.class") == "test_federated.ByFirstLetter"
    got = table.read(columns=["id", "ts", "fare"])
    assert triples(got) == model.expected()
    assert validate_metadata_table(table) == []
    for f in (tmp_path / "data").rglob("*"):
        if f.is_file():
            parsed = parse_data_file(f.name)
            assert parsed is not None and f.relative_to(tmp_path / "data").parts[0] == parsed.file_id[0]
    shutil.rmtree(tmp_path / "t" / ".hoodie" / "metadata")
    with pytest.raises(MetadataRequiredError):
        hudi_md.open_table(uri).read()
    repair_metadata_table(HudiWriter(uri, opts))
    assert validate_metadata_table(hudi_md.open_table(uri)) == []


def test_cli_repair_and_validate_list_the_storage_path(tmp_path: Path) -> None:
    """validate holds the MDT against a walk of the storage path (a data file gone from there is a
    difference), the planner prunes by column stats as on any table, and 'hudi-md metadata repair'
    (the CLI) rebuilds an MDT that validates."""
    import subprocess
    import sys

    uri, storage_path = str(tmp_path / "t"), str(tmp_path / "data")
    opts = options("COPY_ON_WRITE", storage_path)
    for ts, ids in enumerate([range(0, 60), range(100, 160)], 1):
        HudiWriter(uri, opts).write(rows(ids, ts, seed=ts), "insert")
    table = hudi_md.open_table(uri)
    plan = table.plan([("ts", "=", 2)])  # the second write's files only: column stats prune the first's
    assert plan.counters["partitions_after_partition_stats"] == 3
    assert 0 < plan.counters["file_slices_after_column_stats"] < plan.counters["file_slices"]
    assert triples(table.read([("ts", "=", 2)], columns=["id", "ts", "fare"])) == triples(
        rows(range(100, 160), 2, 2)
    )
    gone = next((tmp_path / "data").rglob("*.parquet"))
    gone.rename(tmp_path / "aside.parquet")
    diffs = validate_metadata_table(hudi_md.open_table(uri))
    assert [d.kind for d in diffs] == ["file_only_in_mdt"] and diffs[0].file_name == gone.name
    (tmp_path / "aside.parquet").rename(gone)
    proc = subprocess.run(
        [sys.executable, "-m", "hudi_md.cli", "metadata", "repair", "--no-progress", uri],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert "rebuilt the metadata table" in proc.stdout
    assert validate_metadata_table(hudi_md.open_table(uri)) == []
    read = subprocess.run(
        [sys.executable, "-m", "hudi_md.cli", "read", uri, "-o", "hoodie.metadata.enable=false"],
        capture_output=True,
        text=True,
    )
    assert read.returncode == 2 and "only its metadata table lists them" in read.stderr
