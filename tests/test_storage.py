"""The storage layer: every request counted, the same table read alike from local, file://, memory://
and s3:// (a moto S3 server on loopback, started by the test)."""

from __future__ import annotations

import pickle
import socket
from pathlib import Path

import fsspec
import pytest
import s3fs
from moto import server as moto_server

import hudi_md
from hudi_md.storage import BytesInputFile, Storage, StorageStats

ARCHIVE = "sample_table/mor/avro/v9_txns_simple_meta.zip"


def _snapshot(table: hudi_md.Table) -> tuple[list, list]:
    slices = sorted(
        (r["partition_path"], r["file_id"], r["base_file"], tuple(r["log_files"]))
        for r in table.file_slices().to_pylist()
    )
    rows = sorted(table.read(columns=["_hoodie_record_key", "amount"]).to_pylist(), key=str)
    return slices, rows


def test_counts_every_request(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f.bin").write_bytes(b"0123456789")
    st = Storage(str(tmp_path))
    assert [s.name for s in st.list("d")] == ["f.bin"]
    assert st.read_bytes("d/f.bin") == b"0123456789"
    assert st.read_range("d/f.bin", 2, 3) == b"234"
    assert st.info("d/f.bin").size == 10
    child = st.child("d")
    assert child.read_bytes("f.bin") == b"0123456789"
    snap = st.stats.snapshot()
    assert snap["list_requests"] == 1 and snap["read_requests"] == 3 and snap["info_requests"] == 1
    assert snap["bytes_read"] == 23
    assert st.stats.requests_under("d") == 5
    assert st.list("missing") == []
    with pytest.raises(FileNotFoundError):
        st.read_bytes("missing/file")


def test_stats_pickle_and_input_files() -> None:
    stats = StorageStats()
    stats.record("read", "x", 5)
    copy = pickle.loads(pickle.dumps(stats))
    assert copy.snapshot() == stats.snapshot()
    copy.record("list", "y")
    assert copy.requests == 2 and stats.requests == 1
    data = BytesInputFile(b"abcdef", "mem")
    assert data.read(1, 2) == b"bc" and data.size() == 6
    with pytest.raises(EOFError, match="mem"):
        data.read(5, 5)


def test_local_file_uri_and_memory_read_alike(table_path) -> None:
    local = table_path(ARCHIVE)
    expected = _snapshot(hudi_md.open_table(str(local)))
    assert _snapshot(hudi_md.open_table(f"file://{local}")) == expected
    mem = fsspec.filesystem("memory")
    for p in local.rglob("*"):
        if p.is_file():
            mem.pipe_file(f"/t/{p.relative_to(local).as_posix()}", p.read_bytes())
    try:
        table = hudi_md.open_table("memory://t")
        assert _snapshot(table) == expected
        assert table.state.uses_metadata_table
        assert table.storage_stats()["requests"] > 0
    finally:
        mem.rm("/t", recursive=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.s3
def test_s3_through_a_local_moto_server(table_path) -> None:
    port = _free_port()
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        opts = {
            "key": "test",
            "secret": "test",
            "client_kwargs": {"endpoint_url": f"http://127.0.0.1:{port}", "region_name": "us-east-1"},
        }
        fs = s3fs.S3FileSystem(**opts)
        fs.call_s3("create_bucket", Bucket="bucket")
        local = table_path(ARCHIVE)
        for p in local.rglob("*"):
            if p.is_file():
                fs.pipe_file(f"bucket/t/{p.relative_to(local).as_posix()}", p.read_bytes())
        expected = _snapshot(hudi_md.open_table(str(local)))
        table = hudi_md.open_table("s3://bucket/t", opts)
        assert _snapshot(table) == expected
        assert table.state.uses_metadata_table
        listed = hudi_md.open_table("s3://bucket/t", {**opts, "hoodie.metadata.enable": "false"})
        assert _snapshot(listed) == expected
        # A commit made by another writer (another filesystem object, as another process would
        # have) is seen by the next open_table in this process: listings are not served from
        # s3fs's per-instance cache, which fsspec shares between tables.
        before = len(hudi_md.open_table("s3://bucket/t", opts).timeline.write_timeline())
        other = s3fs.S3FileSystem(skip_instance_cache=True, **opts)
        last = sorted(n for n in other.ls("bucket/t/.hoodie/timeline") if n.endswith(".deltacommit"))[-1]
        later = "bucket/t/.hoodie/timeline/29991231235959000_29991231235959001.deltacommit"
        other.pipe_file(later, other.cat_file(last))
        assert len(hudi_md.open_table("s3://bucket/t", opts).timeline.write_timeline()) == before + 1
    finally:
        server.stop()


def test_rewriting_a_file_drops_hadoops_stale_checksum(tmp_path) -> None:
    """Apache Hudi on local disk writes through Hadoop's LocalFileSystem, which keeps
    ``.<name>.crc`` beside each file and checks it on read; a file hudi-md rewrites must not keep a
    stale one (Hudi then failed to load the hoodie.properties hudi-md had updated)."""
    storage = Storage(str(tmp_path))
    for write in (storage.write_atomic, storage.write_bytes):
        (tmp_path / ".hoodie").mkdir(exist_ok=True)
        (tmp_path / ".hoodie" / "hoodie.properties").write_bytes(b"old")
        crc = tmp_path / ".hoodie" / ".hoodie.properties.crc"
        crc.write_bytes(b"crc of old")
        write(".hoodie/hoodie.properties", b"new")
        assert (tmp_path / ".hoodie" / "hoodie.properties").read_bytes() == b"new"
        assert not crc.exists()


def test_exclusive_create_on_local_disk_is_whole_or_absent(tmp_path, monkeypatch) -> None:
    """The lock record is written to a temporary file and hard-linked into place: racing
    creators, one wins; a crash before the link leaves no (torn) lock file and no temporary."""
    import os
    import threading

    storage = Storage(str(tmp_path))
    results: list[bool] = []
    barrier = threading.Barrier(8)

    def create(i: int) -> None:
        barrier.wait()
        results.append(storage.create_exclusive("locks/l", f"owner-{i}".encode()))

    threads = [threading.Thread(target=create, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results.count(True) == 1
    assert (tmp_path / "locks" / "l").read_bytes().startswith(b"owner-")

    def crash(src: str, dst: str) -> None:
        raise KeyboardInterrupt("killed before the link")

    monkeypatch.setattr(os, "link", crash)
    with pytest.raises(KeyboardInterrupt):
        storage.create_exclusive("locks/m", b"record")
    assert sorted(p.name for p in (tmp_path / "locks").iterdir()) == ["l"]
