"""Writes and reads on S3 while the store fails as object stores do (issue 11, item 4): a moto
server behind a proxy that answers 503 SlowDown, resets connections, and loses answers to requests
the store applied (tests/s3_fault_proxy.py). botocore's own retries are off, so every failure
reaches s3fs and hudi-md's storage layer.

- Transient failures are retried: the writes succeed and every reader returns the model's rows.
- A failure that persists from the n-th request on fails the write with a typed hudi-md error
  whose kind says whether the commit happened; the table stays readable and the next write
  recovers it, whatever n was.
- The lock file is created with a conditional PUT (If-None-Match): racing creators, one wins.
"""

from __future__ import annotations

import logging
import os
import random
import re
import threading
from collections import Counter
from typing import Any

import pyarrow as pa
import pytest
import s3fs

import hudi_md
from hudi_md.errors import CommitStateUnknownError, HudiMdError
from hudi_md.metadata.validate import validate_metadata_table
from hudi_md.storage import Storage
from hudi_md.table.timeline import Timeline
from hudi_md.write.writer import CommitCompletedError, HudiWriter
from s3_fault_proxy import FaultProxy
from table_model import Model, assert_readers, pending_instants, triples

pytestmark = pytest.mark.s3

BUCKET = "bucket"
FAST_RETRIES = {
    "hoodie.filesystem.operation.retry.enable": "true",
    "hoodie.filesystem.operation.retry.initial_interval_ms": "1",
    "hoodie.filesystem.operation.retry.max_interval_ms": "5",
}


def _options(table_type: str = "MERGE_ON_READ") -> dict[str, str]:
    return {
        "hoodie.table.name": "faults",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.metadata.enable": "true",
        "hoodie.metadata.record.index.enable": "true",
        "hoodie.compact.inline": "false",
        **FAST_RETRIES,
    }


def _rows(ids: range, ts: int) -> pa.Table:
    return pa.table(
        {
            "id": pa.array([f"id-{i:03d}" for i in ids], pa.string()),
            "city": pa.array([("sf", "nyc")[i % 2] for i in ids], pa.string()),
            "ts": pa.array([ts] * len(ids), pa.int64()),
            "fare": pa.array([float(i * 100 + ts) for i in ids], pa.float64()),
        }
    )


@pytest.fixture(scope="module")
def proxy() -> Any:
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    # s3fs retries SlowDown and resets itself (5 tries, ~2 s of sleep): one try here, so what is
    # tested is hudi-md's retry layer (and the sweep takes seconds per point, not minutes).
    retries, s3fs.S3FileSystem.retries = s3fs.S3FileSystem.retries, 1
    try:
        with FaultProxy() as p:
            s3fs.S3FileSystem(**p.storage_options(direct=True)).call_s3("create_bucket", Bucket=BUCKET)
            yield p
    finally:
        s3fs.S3FileSystem.retries = retries


def _uri(name: str) -> str:
    return f"s3://{BUCKET}/{name}"


def _check_readers(proxy: FaultProxy, uri: str, expected: list[tuple]) -> None:
    """Every reader, straight to the store (no faults): hudi-md with the MDT and by listing, hudi-rs;
    the MDT agrees with a listing; nothing is left pending."""
    direct = proxy.storage_options(direct=True)
    rs_opts = {
        "aws_endpoint_url": proxy.direct_endpoint,
        "aws_access_key_id": "test",
        "aws_secret_access_key": "test",
        "aws_region": "us-east-1",
        "aws_allow_http": "true",
    }
    table, _ = assert_readers(uri, expected, direct, rs_opts)
    assert table.state.uses_metadata_table
    diffs = validate_metadata_table(table)
    assert not diffs, [d.describe() for d in diffs]
    assert pending_instants(uri, direct) == []


@pytest.mark.parametrize("seed", [0])
def test_transient_failures_are_retried(proxy: FaultProxy, seed: int) -> None:
    """One request in six fails (503, reset, or applied with its answer lost): the writes and reads
    still succeed, with the model's rows."""
    uri = _uri(f"transient-{seed}")
    rng = random.Random(seed)
    opts = {**_options(("MERGE_ON_READ", "COPY_ON_WRITE")[seed % 2]), **proxy.storage_options()}
    model = Model()
    before = sum(proxy.injected.values())
    proxy.plan = lambda n, method, path: rng.choices(["pass", "503", "reset", "lost"], [84, 6, 5, 5])[0]
    try:
        steps = [(range(0, 40), 1, "insert"), (range(20, 60), 2, "upsert"), (range(0, 60, 3), 3, "upsert")]
        for ids, ts, op in steps:
            HudiWriter(uri, opts).write(_rows(ids, ts), op)
            model.apply(op, _rows(ids, ts))
        faulty = hudi_md.open_table(uri, opts)
        assert triples(faulty.read(columns=["id", "ts", "fare"])) == model.expected()
    finally:
        proxy.plan = lambda n, method, path: "pass"
    assert sum(proxy.injected.values()) - before >= 20
    _check_readers(proxy, uri, model.expected())


def _sweep_points(requests: list[tuple[str, str]]) -> list[int]:
    """Where the store starts failing (1 = the upsert's first request). All points with
    HUDI_MD_S3_SWEEP_ALL=1 (scripts/s3-fault-sweep); otherwise the first request, a data-file
    request, the MDT deltacommit's completion, the data commit's completion (the commit point:
    its answer decides the commit state) and the request after it, and one past the end. Each
    point is a write and four readers on moto (~20 s on a slow day), hence few of them here."""
    if os.environ.get("HUDI_MD_S3_SWEEP_ALL"):
        return list(range(1, len(requests) + 2))
    completions = [
        i + 1
        for i, (method, path) in enumerate(requests)
        if method == "PUT" and re.search(r"timeline/\d+_\d+\.deltacommit$", path)
    ]
    mdt_complete, data_complete = completions[0], completions[-1]
    rng = random.Random(len(requests))
    return sorted(
        {1, rng.randrange(2, mdt_complete), mdt_complete, data_complete, data_complete + 1}
        | {len(requests) + 1}
    )


def _classify(exc: BaseException | None, committed: bool) -> str:
    if exc is None:
        return "succeeded"
    if isinstance(exc, CommitCompletedError):
        return "typed: committed"
    if isinstance(exc, CommitStateUnknownError):
        return f"typed: state unknown ({'committed' if committed else 'not committed'})"
    if isinstance(exc, HudiMdError):
        return "typed: not committed"
    return f"UNTYPED {type(exc).__name__}"


def test_persistent_failure_fails_cleanly_and_the_next_write_recovers(proxy: FaultProxy) -> None:
    """From the n-th request of an upsert on, the store answers only 503 (or resets): the upsert
    fails with a typed error that tells the truth about its commit, and once the store is back the
    next upsert succeeds and every reader has the model's rows."""
    outcomes: Counter[str] = Counter()
    base = _uri("persistent-base")
    opts = {**_options(), **proxy.storage_options()}
    HudiWriter(base, opts).write(_rows(range(0, 40), 1), "insert")
    fs = s3fs.S3FileSystem(**proxy.storage_options(direct=True))
    fs.copy(f"{BUCKET}/persistent-base", f"{BUCKET}/persistent-probe", recursive=True)
    start = len(proxy.log)
    HudiWriter(_uri("persistent-probe"), opts).write(_rows(range(20, 60), 2), "upsert")
    requests = proxy.log[start:]
    for n in _sweep_points(requests):
        uri = _uri(f"persistent-{n}")
        fs.copy(f"{BUCKET}/persistent-base", f"{BUCKET}/persistent-{n}", recursive=True)
        start = proxy.requests
        failure = "503" if n % 2 else "reset"
        proxy.plan = lambda k, method, path, s=start, n=n, f=failure: f if k - s >= n else "pass"
        error: BaseException | None = None
        try:
            result = HudiWriter(uri, opts).write(_rows(range(20, 60), 2), "upsert")
        except Exception as e:
            error = e
        finally:
            proxy.plan = lambda k, method, path: "pass"
        direct = Storage(uri, proxy.storage_options(direct=True))
        completed = Timeline.load(direct, ".hoodie/timeline", 2).completed()
        if error is None:
            committed = completed.get(result.instant) is not None
            assert committed
        else:
            instant = getattr(error, "instant", None) or getattr(error, "instant_time", None)
            committed = len(list(completed)) > 1
            if isinstance(error, CommitCompletedError):
                assert completed.get(instant) is not None
        outcome = _classify(error, committed)
        outcomes[outcome] += 1
        assert not outcome.startswith("UNTYPED"), f"n={n}: {error!r}"
        if outcome == "typed: not committed":
            assert not committed, f"n={n}: a write that failed with {error!r} committed"
        model = Model()
        model.upsert(_rows(range(0, 40), 1))
        if committed:
            model.upsert(_rows(range(20, 60), 2))
        HudiWriter(uri, opts).write(_rows(range(50, 70), 3), "upsert")
        model.upsert(_rows(range(50, 70), 3))
        _check_readers(proxy, uri, model.expected())
    print(f"persistent-failure outcomes over {len(requests)} requests:", dict(outcomes))
    assert outcomes["typed: not committed"] > 0
    assert outcomes["succeeded"] > 0


def test_lock_file_creation_is_conditional(proxy: FaultProxy) -> None:
    """Eight threads, each with its own S3 client, create the same lock file: exactly one wins
    (a conditional PUT, If-None-Match: *), and the file holds the winner's bytes."""
    results: dict[int, bool] = {}

    def create(i: int) -> None:
        storage = Storage(uri, proxy.storage_options(direct=True))
        results[i] = storage.create_exclusive(".hoodie/.locks/hudi-md.lock", f"owner-{i}".encode())

    for round_ in range(3):
        uri = _uri(f"locks-{round_}")
        results.clear()
        threads = [threading.Thread(target=create, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        winners = [i for i, won in results.items() if won]
        assert len(winners) == 1, results
        data = Storage(uri, proxy.storage_options(direct=True)).read_bytes(".hoodie/.locks/hudi-md.lock")
        assert data == f"owner-{winners[0]}".encode()


def test_lost_answer_to_the_lock_create_is_recognised(proxy: FaultProxy) -> None:
    """The store creates the lock file but the answer is lost: the retry finds our own bytes there
    and counts the lock as ours (a plain retry would find the file and wait for itself)."""
    storage = Storage(_uri("lost-lock"), {**proxy.storage_options(), **FAST_RETRIES})
    proxy.plan = lambda n, method, path: "lost" if method == "PUT" and path.endswith(".lock") else "pass"
    try:
        # the first PUT's answer is lost; the retry's conditional PUT fails: the file exists
        created = storage.create_exclusive(".hoodie/.locks/hudi-md.lock", b"mine")
    finally:
        proxy.plan = lambda n, method, path: "pass"
    assert created is True
    assert storage.create_exclusive(".hoodie/.locks/hudi-md.lock", b"other") is False
