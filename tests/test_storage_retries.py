"""Transient storage failures are retried with backoff; persistent ones fail with a typed error
naming the operation and the URL (issue 11). A fault-injecting fsspec file system (``flaky://``,
the local disk with failures before chosen calls) stands in for an object store that answers 503
SlowDown, resets connections or times out."""

from __future__ import annotations

import itertools
import threading
from pathlib import Path
from typing import Any

import fsspec
import pyarrow as pa
import pytest
from fsspec.implementations.local import LocalFileSystem

import hudi_md
from hudi_md.storage import Storage
from hudi_md.storage.retry import RetryPolicy, StorageError, is_transient


class FlakyFileSystem(LocalFileSystem):
    """The local disk, failing calls as ``plan`` says: ``plan(method)`` returns an exception to
    raise before the call, or None."""

    protocol = ("flaky",)
    plan: Any = staticmethod(lambda method: None)
    calls: list[str] = []

    @classmethod
    def _strip_protocol(cls, path: str) -> str:
        if isinstance(path, str) and path.startswith("flaky://"):
            path = path[len("flaky://") :]
        return super()._strip_protocol(path)

    def _maybe_fail(self, method: str) -> None:
        FlakyFileSystem.calls.append(method)
        exc = FlakyFileSystem.plan(method)
        if exc is not None:
            raise exc


_depth = threading.local()

for _name in ("cat_file", "pipe_file", "ls", "info", "exists", "rm", "mv", "makedirs", "open"):

    def _wrap(name: str = _name) -> Any:
        original = getattr(LocalFileSystem, name)

        def method(self: FlakyFileSystem, *args: Any, **kwargs: Any) -> Any:
            # Only the request hudi-md makes fails, not the calls fsspec makes inside it.
            depth = getattr(_depth, "value", 0)
            if not depth:
                self._maybe_fail(name)
            _depth.value = depth + 1
            try:
                return original(self, *args, **kwargs)
            finally:
                _depth.value = depth

        return method

    setattr(FlakyFileSystem, _name, _wrap())

fsspec.register_implementation("flaky", FlakyFileSystem, clobber=True)
FAST = {
    "hoodie.filesystem.operation.retry.initial_interval_ms": "1",
    "hoodie.filesystem.operation.retry.max_interval_ms": "5",
}


@pytest.fixture(autouse=True)
def reset() -> Any:
    FlakyFileSystem.calls = []
    FlakyFileSystem.plan = staticmethod(lambda method: None)
    yield
    FlakyFileSystem.plan = staticmethod(lambda method: None)


def fail_first(n: int, exc: Exception, methods: tuple[str, ...] = ("cat_file",)) -> None:
    counter = itertools.count()

    def plan(method: str) -> Exception | None:
        if method in methods and next(counter) < n:
            return exc
        return None

    FlakyFileSystem.plan = staticmethod(plan)


@pytest.mark.parametrize(
    "exc",
    [
        OSError(
            "An error occurred (SlowDown) when calling the GetObject operation (reached max retries: 0): 503"
        ),
        ConnectionResetError(104, "Connection reset by peer"),
        TimeoutError("Read timed out"),
        # s3fs's translations of 503 SlowDown and 500 InternalError name neither
        OSError(16, "Please reduce your request rate."),
        OSError(121, "We encountered an internal error. Please try again."),
    ],
    ids=["slowdown", "reset", "timeout", "s3fs-slowdown", "s3fs-internal-error"],
)
def test_transient_failures_are_retried(tmp_path: Path, exc: Exception) -> None:
    (tmp_path / "f").write_bytes(b"data")
    storage = Storage(f"flaky://{tmp_path}", FAST)
    assert storage.retry.attempts == 5  # remote: Hudi's max_numbers 4 retries by default
    fail_first(3, exc)
    assert storage.read_bytes("f") == b"data"
    assert storage.stats.count("retry") == 3


def test_persistent_failures_are_typed_and_name_the_url(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"data")
    storage = Storage(f"flaky://{tmp_path}", FAST)
    fail_first(100, OSError("503 Service Unavailable"))
    with pytest.raises(
        StorageError, match=r"read flaky://.*/f: transient failure, retries exhausted after 5"
    ) as e:
        storage.read_bytes("f")
    assert e.value.transient and e.value.attempts == 5


def test_permanent_failures_are_not_retried(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"data")
    storage = Storage(f"flaky://{tmp_path}", FAST)
    fail_first(1, PermissionError(13, "Access Denied"))
    with pytest.raises(StorageError, match=r"read .*: failed after 1 attempt") as e:
        storage.read_bytes("f")
    assert not e.value.transient
    with pytest.raises(FileNotFoundError):  # callers act on these: passed through as they are
        storage.read_bytes("missing")


def test_local_disk_does_not_retry_and_retries_can_be_turned_off(tmp_path: Path) -> None:
    assert Storage(str(tmp_path)).retry.attempts == 1
    off = Storage(f"flaky://{tmp_path}", {"hoodie.filesystem.operation.retry.enable": "false"})
    assert off.retry == RetryPolicy(attempts=1)
    assert not is_transient(FileNotFoundError()) and is_transient(ConnectionAbortedError())


def test_a_create_whose_answer_was_lost_is_not_sent_twice(tmp_path: Path) -> None:
    """The request reached the store but the connection dropped before the answer: the retry must
    not report 'exists' for our own file."""
    storage = Storage(f"flaky://{tmp_path}", FAST)
    real_open = LocalFileSystem.open
    state = {"n": 0}

    def open_then_drop(self: Any, path: str, mode: str = "rb", **kw: Any) -> Any:
        f = real_open(self, path, mode, **kw)
        if "x" in mode and state["n"] == 0:
            state["n"] += 1
            with f:
                f.write(b"lock")
            raise ConnectionResetError(104, "Connection reset by peer")
        return f

    FlakyFileSystem.open = open_then_drop  # type: ignore[method-assign]
    try:
        assert storage.create_exclusive("lock", b"lock") is True
        assert storage.create_exclusive("lock", b"other") is False
    finally:
        del FlakyFileSystem.open


def test_writes_and_reads_through_a_flaky_store(tmp_path: Path) -> None:
    """A table written and read while every third request of each kind fails once transiently."""
    counters: dict[str, itertools.count] = {}

    def plan(method: str) -> Exception | None:
        n = next(counters.setdefault(method, itertools.count()))
        return OSError("SlowDown: Please reduce your request rate (503)") if n % 3 == 1 else None

    FlakyFileSystem.plan = staticmethod(plan)
    uri = f"flaky://{tmp_path / 't'}"
    opts = {
        "hoodie.table.name": "t",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "p",
        "hoodie.datasource.write.table.type": "MERGE_ON_READ",
        "hoodie.metadata.record.index.enable": "true",
        **FAST,
    }
    rows = pa.table({"id": [f"k{i}" for i in range(30)], "ts": list(range(30)), "p": ["a", "b", "c"] * 10})
    hudi_md.write(rows, uri, operation="insert", options=opts)
    hudi_md.write(rows.slice(0, 10), uri, operation="upsert", options=opts)
    got = hudi_md.open_table(uri, FAST).read(columns=["id"]).column("id").to_pylist()
    FlakyFileSystem.plan = staticmethod(lambda method: None)
    assert sorted(got) == sorted(rows.column("id").to_pylist())
    assert any(c for c in FlakyFileSystem.calls)
    from hudi_md.metadata.validate import validate_metadata_table

    assert validate_metadata_table(hudi_md.open_table(str(tmp_path / "t"))) == []


def test_writer_takes_the_retry_keys(tmp_path: Path) -> None:
    from hudi_md.write.writer import HudiWriter

    writer = HudiWriter(
        f"flaky://{tmp_path / 't'}",
        {"hoodie.table.name": "t", "hoodie.filesystem.operation.retry.max_numbers": "7", **FAST},
    )
    assert writer.storage.retry.attempts == 8
    assert "hoodie.table.name" not in writer.storage.options  # fsspec gets its own options only


def _completed_instant(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return "/.hoodie/timeline/" in path and "/metadata/" not in path and "_" in name.split(".")[0]


COMMIT_OPTS = {
    "hoodie.table.name": "t",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.metadata.enable": "false",
    **FAST,
}
ROWS = pa.table({"id": ["a", "b"], "ts": [1, 2]})


def _failing_completion(*, write_first: bool, reads_fail: bool) -> None:
    """Every write of the data table's completed instant fails (after writing it, when
    ``write_first``: the answer was lost); with ``reads_fail`` checking for it fails too."""
    real_pipe = LocalFileSystem.pipe_file
    real_exists = LocalFileSystem.exists

    def pipe_file(self: Any, path: str, value: bytes, **kw: Any) -> Any:
        if _completed_instant(path):
            if write_first:
                real_pipe(self, path, value, **kw)
            raise ConnectionResetError(104, "Connection reset by peer")
        return real_pipe(self, path, value, **kw)

    def exists(self: Any, path: str, **kw: Any) -> bool:
        if reads_fail and _completed_instant(path):
            raise ConnectionResetError(104, "Connection reset by peer")
        return real_exists(self, path, **kw)

    FlakyFileSystem.pipe_file = pipe_file  # type: ignore[method-assign]
    FlakyFileSystem.exists = exists  # type: ignore[method-assign]


@pytest.fixture
def restore_methods() -> Any:
    saved = {n: FlakyFileSystem.__dict__[n] for n in ("pipe_file", "exists")}
    yield
    for n, m in saved.items():
        setattr(FlakyFileSystem, n, m)


def test_a_completion_whose_answer_was_lost_is_a_commit(tmp_path: Path, restore_methods: Any) -> None:
    uri = f"flaky://{tmp_path / 't'}"
    hudi_md.write(ROWS, uri, operation="insert", options=COMMIT_OPTS)
    _failing_completion(write_first=True, reads_fail=False)
    hudi_md.write(pa.table({"id": ["c"], "ts": [3]}), uri, operation="upsert", options=COMMIT_OPTS)
    ids = hudi_md.open_table(str(tmp_path / "t")).read(columns=["id"]).column("id").to_pylist()
    assert sorted(ids) == ["a", "b", "c"]


def test_a_completion_that_cannot_be_checked_is_commit_state_unknown(
    tmp_path: Path, restore_methods: Any
) -> None:
    from hudi_md.errors import CommitStateUnknownError

    uri = f"flaky://{tmp_path / 't'}"
    hudi_md.write(ROWS, uri, operation="insert", options=COMMIT_OPTS)
    _failing_completion(write_first=False, reads_fail=True)
    with pytest.raises(CommitStateUnknownError, match="commit state unknown"):
        hudi_md.write(pa.table({"id": ["c"], "ts": [3]}), uri, operation="upsert", options=COMMIT_OPTS)


def test_a_completion_that_did_not_happen_fails_cleanly(tmp_path: Path, restore_methods: Any) -> None:
    from hudi_md.storage.retry import StorageError

    uri = f"flaky://{tmp_path / 't'}"
    hudi_md.write(ROWS, uri, operation="insert", options=COMMIT_OPTS)
    saved = {n: FlakyFileSystem.__dict__[n] for n in ("pipe_file", "exists")}
    _failing_completion(write_first=False, reads_fail=False)
    with pytest.raises(StorageError, match="write"):
        hudi_md.write(pa.table({"id": ["c"], "ts": [3]}), uri, operation="upsert", options=COMMIT_OPTS)
    for n, m in saved.items():
        setattr(FlakyFileSystem, n, m)
    t = hudi_md.open_table(str(tmp_path / "t"))
    assert sorted(t.read(columns=["id"]).column("id").to_pylist()) == ["a", "b"]
    hudi_md.write(pa.table({"id": ["d"], "ts": [4]}), uri, operation="upsert", options=COMMIT_OPTS)
    t = hudi_md.open_table(str(tmp_path / "t"))
    assert sorted(t.read(columns=["id"]).column("id").to_pylist()) == ["a", "b", "d"]
    assert not list(t.timeline.pending())
