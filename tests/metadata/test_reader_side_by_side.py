"""The MDT reader reads the files partition's base file and log files side by side (object-store
round trips overlap), and gets what reading them one after another gets."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pyarrow as pa
import pytest

import hudi_md
from hudi_md.metadata import slice_sources
from hudi_md.storage.base import Storage

OPTIONS = {
    "hoodie.table.name": "side_by_side",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "dt",
    "hoodie.parquet.bloom.filter.enabled": "false",
    # every insert starts file groups of its own: each base file on storage is a latest slice
    "hoodie.parquet.small.file.limit": "0",
}


@pytest.fixture(scope="module")
def table_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("side") / "t"
    for commit in range(4):  # four deltacommits: four log files in the MDT files partition
        rows = pa.table(
            {
                "id": [f"k{commit}-{i}" for i in range(20)],
                "dt": [f"p{(commit * 7 + i) % 9}" for i in range(20)],
                "v": list(range(20)),
            }
        )
        hudi_md.write(rows, str(path), operation="insert", options=OPTIONS)
    return path


class _InFlight:
    """Counts the storage reads running at once; each read takes ``delay`` longer."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.now = 0
        self.most = 0
        self.reads = 0
        self._lock = threading.Lock()

    def wrap(self, call):  # type: ignore[no-untyped-def]
        def _call(storage, op, path, fn, **kw):  # type: ignore[no-untyped-def]
            if op != "read":
                return call(storage, op, path, fn, **kw)
            with self._lock:
                self.now += 1
                self.reads += 1
                self.most = max(self.most, self.now)
            try:
                time.sleep(self.delay)
                return call(storage, op, path, fn, **kw)
            finally:
                with self._lock:
                    self.now -= 1

        return _call


def _plan_files(path: Path, monkeypatch: pytest.MonkeyPatch, delay: float) -> tuple[list[str], _InFlight]:
    counter = _InFlight(delay)
    with monkeypatch.context() as mp:
        mp.setattr(Storage, "_call", counter.wrap(Storage._call))
        table = hudi_md.open_table(str(path))
        assert table.metadata_table is not None
        files = sorted(s.base_file.name for s in table.plan().slices if s.base_file is not None)
    return files, counter


def test_log_files_read_side_by_side(table_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mdt_files = table_path / ".hoodie" / "metadata" / "files"
    assert len([f for f in mdt_files.iterdir() if ".log." in f.name]) >= 4
    files, counter = _plan_files(table_path, monkeypatch, 0.05)
    assert counter.most >= 3  # the log files' reads overlapped
    monkeypatch.setattr(slice_sources, "_CONCURRENT_READS", 1)
    one_by_one, sequential = _plan_files(table_path, monkeypatch, 0.0)
    assert sequential.most == 1
    assert files == one_by_one
    assert counter.reads == sequential.reads  # the same reads, only overlapped
    listed = sorted(p.name for p in table_path.glob("p*/*.parquet"))
    assert files == listed  # and what a storage listing finds (every file is live: inserts only)


def test_a_failed_read_among_them_is_reported(table_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = Storage._call

    def failing(storage, op, path, fn, **kw):  # type: ignore[no-untyped-def]
        if op == "read" and path.endswith(".log.1_0-0-0") and "files/" in path:
            raise OSError(f"injected failure reading {path}")
        return real(storage, op, path, fn, **kw)

    monkeypatch.setattr(Storage, "_call", failing)
    with pytest.raises(Exception, match="injected failure"):
        hudi_md.open_table(str(table_path), {"hoodie.metadata.enable": "true"}).plan()
    with pytest.warns(RuntimeWarning, match="cannot be read"):
        table = hudi_md.open_table(str(table_path))
        files = [s.base_file.name for s in table.plan().slices if s.base_file is not None]
    assert len(files) == len(list(table_path.glob("p*/*.parquet")))  # listed from storage instead
