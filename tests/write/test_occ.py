"""Optimistic concurrency control (issue 11, item 3): two writers on one table.

Writes are split at the protocol's steps (``start_write`` → ``write_files`` → ``finish_commit`` →
``end_write``) to run chosen interleavings deterministically: overlapping file groups → the later
committer gets a typed WriteConflictError and leaves nothing behind; disjoint → both commit. After
each scenario the rows match a model for hudi-md (MDT and listing) and hudi-rs, and validate finds
no difference. A multi-process run (``scripts/occ-stress``, a few seeds here) races real processes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import hudi_md
from hudi_md.errors import HeartbeatExpiredError, HudiMdError, WriteConflictError
from hudi_md.metadata.validate import validate_metadata_table
from hudi_md.storage import Storage
from hudi_md.table.timeline import Timeline
from hudi_md.write.heartbeat import heartbeat_path
from hudi_md.write.lock import LockLostError, LockTimeoutError, TableLock
from hudi_md.write.writer import CommitResult, HudiWriter, WriteSession
from table_model import assert_readers, pending_instants

REPO = Path(__file__).resolve().parents[2]
LOCKS = "org.apache.hudi.client.transaction.lock."


def options(table_type: str = "COPY_ON_WRITE", *, occ: bool = True, **extra: str) -> dict[str, str]:
    opts = {
        "hoodie.table.name": "occ",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.metadata.record.index.enable": "true",
        # each write's new keys start a file group of their own, so the scenarios decide which
        # groups overlap (small-file handling puts concurrent inserts into one small file: a
        # conflict, as in Apache Hudi; tests/write/test_small_files.py)
        "hoodie.parquet.small.file.limit": "0",
    }
    if occ:
        opts["hoodie.write.concurrency.mode"] = "optimistic_concurrency_control"
        opts["hoodie.write.lock.provider"] = LOCKS + "FileSystemBasedLockProvider"
    opts.update(extra)
    return opts


def rows(ids: list[int], v: str) -> pa.Table:
    return pa.table(
        {
            "id": pa.array([f"k{i:03d}" for i in ids], pa.string()),
            "city": pa.array([["sf", "nyc", "la"][i % 3] for i in ids], pa.string()),
            "v": pa.array([v] * len(ids), pa.string()),
        }
    )


class Step:
    """One writer's write, run a protocol step at a time."""

    def __init__(self, path: Path, opts: dict[str, str], data: pa.Table, operation: str = "upsert"):
        self.writer = HudiWriter(str(path), opts)
        self.data = data
        self.operation = operation
        self.session: WriteSession | None = None
        self.files: tuple[list[Any], dict[str, list[str]]] | None = None

    @property
    def instant(self) -> str:
        assert self.session is not None
        return self.session.instant

    def start(self) -> Step:
        self.session = self.writer.start_write(self.operation, self.data.schema)
        return self

    def write_files(self) -> Step:
        assert self.session is not None
        self.files = self.writer.write_files(self.session, self.data)
        return self

    def commit(self) -> CommitResult:
        s, (results, replaced) = self.session, self.files
        assert s is not None
        try:
            done = self.writer.finish_commit(s, results, replaced)
        except BaseException:
            self.writer.abandon_write(s)
            raise
        return self.writer.end_write(s, done)


def seed(path: Path, table_type: str, n: int = 30) -> dict[str, str]:
    HudiWriter(str(path), options(table_type)).write(rows(list(range(n)), "seed"), "insert")
    return {f"k{i:03d}": "seed" for i in range(n)}


def apply(model: dict[str, str], data: pa.Table) -> None:
    for k, v in zip(data.column("id").to_pylist(), data.column("v").to_pylist(), strict=True):
        model[k] = v


def check_table(path: Path, model: dict[str, str]) -> None:
    table, _ = assert_readers(str(path), sorted(model.items()), columns=["id", "v"])
    assert table.state.uses_metadata_table
    diffs = validate_metadata_table(table)
    assert not diffs, [d.describe() for d in diffs]
    assert pending_instants(str(path)) == []


def leftovers(path: Path, instant: str) -> list[str]:
    """Every file or folder whose name carries the instant (data files, logs, instant files,
    markers folder, heartbeat), anywhere under the table, MDT included."""
    out = []
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            if instant in name:
                out.append(os.path.relpath(os.path.join(root, name), path))
    return out


# --- two writers, step by step --------------------------------------------------------------------


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_overlapping_writers_one_conflicts_and_leaves_nothing(tmp_path: Path, table_type: str) -> None:
    model = seed(tmp_path, table_type)
    opts = options(table_type)
    a = Step(tmp_path, opts, rows([0, 3, 100], "a")).start()  # sf: its file group, and a new key
    b = Step(tmp_path, opts, rows([6, 1, 101], "b")).start()  # sf again (overlap) and nyc
    assert a.instant < b.instant
    a.write_files()
    b.write_files()
    a.commit()
    apply(model, a.data)
    with pytest.raises(WriteConflictError) as err:
        b.commit()
    assert err.value.instant_time == b.instant and err.value.other_instant == a.instant
    assert err.value.file_groups and all(p == "city=sf" for p, _ in err.value.file_groups)
    assert leftovers(tmp_path, b.instant) == []
    assert not (tmp_path / ".hoodie" / ".temp" / b.instant).exists()
    check_table(tmp_path, model)
    # the loser retries and commits
    Step(tmp_path, opts, b.data).start().write_files().commit()
    apply(model, b.data)
    check_table(tmp_path, model)


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_conflict_when_the_later_instant_commits_first(tmp_path: Path, table_type: str) -> None:
    """B started after A but committed first: A (the earlier instant) gets the conflict, since
    B completed after A started."""
    model = seed(tmp_path, table_type)
    opts = options(table_type)
    a = Step(tmp_path, opts, rows([2, 5], "a")).start().write_files()  # la
    b = Step(tmp_path, opts, rows([8], "b")).start().write_files()  # la
    b.commit()
    apply(model, b.data)
    with pytest.raises(WriteConflictError):
        a.commit()
    assert leftovers(tmp_path, a.instant) == []
    check_table(tmp_path, model)


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_disjoint_writers_both_commit(tmp_path: Path, table_type: str) -> None:
    """Disjoint file groups of one partition: A updates sf's file group, B inserts new sf keys (a
    new file group) and updates nyc. A started first and commits last, so its MDT deltacommit (an
    earlier instant) completes after B's: its partition stats, computed under the commit lock
    with B's files, must win (validate checks that they cover every file)."""
    model = seed(tmp_path, table_type)
    opts = options(table_type, **{"hoodie.metadata.index.partition.stats.enable": "true"})
    a = Step(tmp_path, opts, rows([0, 3], "a")).start()
    b = Step(tmp_path, opts, rows([1, 4, 201, 204, 207], "b")).start()
    a.write_files()
    b.write_files()
    b.commit()
    a.commit()
    apply(model, b.data)
    apply(model, a.data)
    check_table(tmp_path, model)
    timeline = Timeline.load(Storage(str(tmp_path)), ".hoodie/timeline", 2)
    ca, cb = timeline.completion_time_of(a.instant), timeline.completion_time_of(b.instant)
    assert ca is not None and cb is not None and a.instant < b.instant < cb < ca


def test_many_interleaved_writers_inserting(tmp_path: Path) -> None:
    """Four writers start before any commits; inserts of new keys never conflict."""
    model = seed(tmp_path, "MERGE_ON_READ")
    opts = options("MERGE_ON_READ")
    steps = [Step(tmp_path, opts, rows(list(range(300 + 10 * w, 305 + 10 * w)), f"w{w}")) for w in range(4)]
    for s in steps:
        s.start()
    for s in reversed(steps):
        s.write_files()
    for s in (steps[2], steps[0], steps[3], steps[1]):
        s.commit()
        apply(model, s.data)
    check_table(tmp_path, model)


# --- failed writes: LAZY rollback by heartbeat ------------------------------------------------------


def test_live_writer_is_not_rolled_back_but_a_dead_one_is(tmp_path: Path) -> None:
    model = seed(tmp_path, "COPY_ON_WRITE")
    opts = options("COPY_ON_WRITE")
    live = Step(tmp_path, opts, rows([0], "live")).start().write_files()
    dead = Step(tmp_path, opts, rows([1], "dead")).start().write_files()
    assert (tmp_path / heartbeat_path(live.instant)).exists()
    # the dead writer's process is gone: its heartbeat stops and ages
    hb = dead.writer.heartbeats.pop(dead.instant)
    hb.stop(delete=False)
    old = time.time() - 3600
    os.utime(tmp_path / heartbeat_path(dead.instant), (old, old))
    # a third writer starts: it rolls back the dead instant, not the live one
    third = Step(tmp_path, opts, rows([2], "third")).start()
    pending = {
        i.requested_time for i in Timeline.load(Storage(str(tmp_path)), ".hoodie/timeline", 2).pending()
    }
    assert live.instant in pending and dead.instant not in pending
    assert not (tmp_path / heartbeat_path(dead.instant)).exists()
    third.write_files().commit()
    live.commit()
    apply(model, third.data)
    apply(model, live.data)
    check_table(tmp_path, model)
    assert not (tmp_path / heartbeat_path(live.instant)).exists()
    # the dead writer comes back: its instant is gone, it commits nothing and cleans up
    with pytest.raises(HeartbeatExpiredError):
        dead.commit()
    assert [f for f in leftovers(tmp_path, dead.instant) if "rollback" not in f] == []
    check_table(tmp_path, model)


def test_single_writer_rolls_back_eagerly_but_not_a_live_occ_writer(tmp_path: Path) -> None:
    """Without OCC (Hudi's EAGER policy) every pending write instant counts as failed, except one
    with a live heartbeat (only OCC writers write heartbeats: that writer is still running)."""
    model = seed(tmp_path, "COPY_ON_WRITE")
    crashed = Step(tmp_path, options(occ=False), rows([0], "crashed")).start().write_files()
    crashed.writer.abandon_write(crashed.session)  # a single writer that died: no heartbeat
    live = Step(tmp_path, options(), rows([1], "live")).start().write_files()
    HudiWriter(str(tmp_path), options(occ=False)).write(rows([2], "y"), "upsert")
    apply(model, rows([2], "y"))
    assert all("rollback" in f for f in leftovers(tmp_path, crashed.instant))
    live.commit()
    apply(model, live.data)
    check_table(tmp_path, model)


def test_heartbeats_are_written_and_refreshed(tmp_path: Path) -> None:
    seed(tmp_path, "COPY_ON_WRITE")
    opts = options(**{"hoodie.client.heartbeat.interval_in_ms": "100"})
    s = Step(tmp_path, opts, rows([0], "a")).start()
    beat = tmp_path / heartbeat_path(s.instant)
    first = beat.stat().st_mtime
    time.sleep(0.35)
    assert beat.stat().st_mtime > first
    s.write_files().commit()
    assert not beat.exists()


# --- the lock ---------------------------------------------------------------------------------------


def _steal(path: Path, rel: str) -> None:
    (path / rel).write_text(
        json.dumps({"host": "elsewhere", "pid": 1, "token": "stolen", "heartbeat": time.time()})
    )


@pytest.mark.parametrize("occ", [True, False])
def test_commit_refused_when_the_lock_was_lost(tmp_path: Path, occ: bool) -> None:
    """Before the commit point the lock is checked: a lock taken from the writer (broken as stale
    by another) means no commit; the instant stays pending and the next writer rolls it back."""
    model = seed(tmp_path, "COPY_ON_WRITE")
    opts = options(occ=occ)
    lock_rel = ".hoodie/lock" if occ else ".hoodie/.locks/hudi-md.lock"
    s = Step(tmp_path, opts, rows([0, 1], "lost")).start().write_files()
    real = s.writer.check_step

    def hook(step: str) -> None:
        real(step)
        if step == "before_complete":
            _steal(tmp_path, lock_rel)

    s.writer.check_step = hook  # type: ignore[method-assign]
    with pytest.raises(LockLostError, match="did not happen"):
        s.commit()
    timeline = Timeline.load(Storage(str(tmp_path)), ".hoodie/timeline", 2)
    assert timeline.get(s.instant) is not None and not timeline.get(s.instant).is_completed
    (tmp_path / lock_rel).unlink()
    HudiWriter(str(tmp_path), opts).write(rows([2], "next"), "upsert")
    apply(model, rows([2], "next"))
    check_table(tmp_path, model)


def test_second_single_writer_is_refused_clearly(tmp_path: Path) -> None:
    seed(tmp_path, "COPY_ON_WRITE")
    first = Step(tmp_path, options(occ=False), rows([0], "a")).start()  # holds the lock
    second = HudiWriter(str(tmp_path), options(occ=False, **{"hoodie.write.lock.wait_time_ms": "300"}))
    t0 = time.monotonic()
    with pytest.raises(LockTimeoutError) as err:
        second.write(rows([1], "b"), "upsert")
    assert time.monotonic() - t0 < 5
    msg = str(err.value)
    assert f"pid {os.getpid()}" in msg
    assert "hoodie.write.concurrency.mode=optimistic_concurrency_control" in msg
    assert "hoodie.write.lock.provider" in msg
    first.write_files().commit()


def test_hudi_file_system_lock_is_honoured(tmp_path: Path) -> None:
    """FileSystemBasedLockProvider: the lock file is Hudi's (.hoodie/lock), created exclusively.
    A lock held by an Apache Hudi writer (its LockInfo record) blocks hudi-md and is never broken
    unless hoodie.write.lock.filesystem.expire (minutes) says it expired; while hudi-md holds the
    lock, the file exists, which is what Hudi's provider waits on."""
    seed(tmp_path, "COPY_ON_WRITE")
    lock = tmp_path / ".hoodie" / "lock"
    hudi_record = json.dumps(
        {"lockCreateTime": "2026-01-01 00:00:00.000", "lockThreadName": "main", "lockStacksInfo": []}
    )
    lock.write_text(hudi_record)
    old = time.time() - 3600
    os.utime(lock, (old, old))
    opts = options(**{"hoodie.write.lock.wait_time_ms": "300"})
    with pytest.raises(LockTimeoutError, match="not hudi-md"):
        HudiWriter(str(tmp_path), opts).write(rows([0], "a"), "upsert")
    assert lock.read_text() == hudi_record
    # Hudi's expiry: an hour-old lock with expire=1 (minute) is broken
    HudiWriter(str(tmp_path), {**opts, "hoodie.write.lock.filesystem.expire": "1"}).write(
        rows([0], "a"), "upsert"
    )
    assert not lock.exists()
    # while hudi-md holds it, the file is there
    storage = Storage(str(tmp_path))
    with TableLock(storage, options=opts):
        assert lock.exists() and json.loads(lock.read_text())["pid"] == os.getpid()
    assert not lock.exists()


def test_in_process_lock_provider_uses_hudi_md_lock(tmp_path: Path) -> None:
    seed(tmp_path, "COPY_ON_WRITE")
    opts = options(**{"hoodie.write.lock.provider": LOCKS + "InProcessLockProvider"})
    s = Step(tmp_path, opts, rows([0], "a"))
    held = []
    real = s.writer.check_step

    def hook(step: str) -> None:
        real(step)
        held.append((step, (tmp_path / ".hoodie/.locks/hudi-md.lock").exists()))

    s.writer.check_step = hook  # type: ignore[method-assign]
    s.start().write_files().commit()
    # data files are written outside the lock; the MDT deltacommit and the completion under it
    assert held == [("after_data_files", False), ("after_mdt_commit", True), ("before_complete", True)]


# --- many processes ---------------------------------------------------------------------------------


def test_multi_process_stress(tmp_path: Path) -> None:
    """A few seeds of scripts/occ-stress: processes upsert overlapping and disjoint key sets at
    once; every successful commit is in the table, every conflicted one is not, only typed errors,
    validate clean, hudi-rs agrees."""
    seeds = os.environ.get("HUDI_MD_OCC_SEEDS", "3")
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "tests" / "write" / "occ_harness.py"),
            "--seeds",
            seeds,
            "--json",
            "--dir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["failures"] == 0, summary
    assert summary["commits"] > 0
    assert set(summary["outcomes"]) <= {"committed", "conflict", "heartbeat_expired"}, summary


def test_errors_are_typed() -> None:
    assert issubclass(WriteConflictError, HudiMdError) and issubclass(HeartbeatExpiredError, HudiMdError)
    assert hudi_md.WriteConflictError is WriteConflictError


# --- the Spark writer follows the same protocol -----------------------------------------------------


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_spark_writer_under_occ(spark: Any, tmp_path: Path, table_type: str) -> None:
    """A local writer starts; a PySpark write of disjoint file groups commits meanwhile (both
    commit); a PySpark write of the same file groups commits meanwhile (the local writer, which
    commits later, gets the conflict). The PySpark write takes the lock only to start and commit."""
    model = seed(tmp_path, table_type)
    opts = options(table_type)
    a = Step(tmp_path, opts, rows([0, 3], "a")).start().write_files()  # sf
    b = rows([1, 4, 401], "spark-b")  # nyc, and a new key
    hudi_md.write(
        spark.createDataFrame(b.to_pylist(), "id string, city string, v string"),
        str(tmp_path),
        operation="upsert",
        options=opts,
    )
    apply(model, b)
    a.commit()
    apply(model, a.data)
    check_table(tmp_path, model)
    c = Step(tmp_path, opts, rows([2, 5], "c")).start().write_files()  # la
    d = rows([8, 11], "spark-d")  # la again: the same file groups
    hudi_md.write(
        spark.createDataFrame(d.to_pylist(), "id string, city string, v string"),
        str(tmp_path),
        operation="upsert",
        options=opts,
    )
    apply(model, d)
    with pytest.raises(WriteConflictError):
        c.commit()
    assert leftovers(tmp_path, c.instant) == []
    check_table(tmp_path, model)


def test_writers_with_different_providers_exclude_each_other(tmp_path: Path) -> None:
    """hudi-md's own lock file is always taken, so a FileSystemBasedLockProvider writer and an
    InProcessLockProvider writer (or the CLI, which names no provider) still exclude each other."""
    storage = Storage(str(tmp_path))
    fs = options(**{"hoodie.write.lock.wait_time_ms": "200"})
    inproc = options(
        **{
            "hoodie.write.lock.provider": LOCKS + "InProcessLockProvider",
            "hoodie.write.lock.wait_time_ms": "200",
        }
    )
    with TableLock(storage, options=fs):
        assert (tmp_path / ".hoodie/lock").exists() and (tmp_path / ".hoodie/.locks/hudi-md.lock").exists()
        with pytest.raises(LockTimeoutError):
            TableLock(storage, options=inproc).acquire()
        with pytest.raises(LockTimeoutError):
            TableLock(storage, timeout_s=0.2).acquire()
    with TableLock(storage, options=inproc), pytest.raises(LockTimeoutError):
        TableLock(storage, options=fs).acquire()
    assert not (tmp_path / ".hoodie/lock").exists()


# --- against Apache Hudi's own FileSystemBasedLockProvider (opt-in: Spark with Hudi's bundle) ------

_BUNDLES = sorted(REPO.glob("build/jars/hudi-spark3.5-bundle_2.12-*.jar"))

_HUDI_LOCK_SCRIPT = r"""
import json, sys
from pyspark.sql import SparkSession
from hudi_md.storage import Storage
from hudi_md.write.lock import LockTimeoutError, TableLock

jar, base = sys.argv[1], sys.argv[2]
spark = (SparkSession.builder.master("local[1]").appName("hudi-md-lock").config("spark.jars", jar)
         .config("spark.ui.enabled", "false").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
jvm = spark._jvm
props = jvm.java.util.Properties()
props.setProperty("hoodie.base.path", base)
props.setProperty("hoodie.write.lock.filesystem.expire", "0")
conf = jvm.org.apache.hudi.storage.hadoop.HadoopStorageConfiguration(spark._jsc.hadoopConfiguration())
hudi_lock = jvm.org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider(
    jvm.org.apache.hudi.common.config.LockConfiguration(props), conf)
secs = jvm.java.util.concurrent.TimeUnit.SECONDS
opts = {"hoodie.write.concurrency.mode": "optimistic_concurrency_control",
        "hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider",
        "hoodie.write.lock.wait_time_ms": "500"}
out = {"path": hudi_lock.getLock()}
storage = Storage(base)
with TableLock(storage, options=opts):
    out["hudi_while_ours"] = hudi_lock.tryLock(0, secs)
out["hudi_after_ours"] = hudi_lock.tryLock(0, secs)
try:
    TableLock(storage, options=opts).acquire()
    out["ours_while_hudi"] = "acquired"
except LockTimeoutError as e:
    out["ours_while_hudi"] = str(e)
hudi_lock.unlock()
with TableLock(storage, options=opts):
    out["ours_after_hudi"] = "acquired"
print("RESULT " + json.dumps(out))
spark.stop()
"""


@pytest.mark.skipif(
    os.environ.get("HUDI_MD_HUDI_INTEROP") != "1" or not _BUNDLES,
    reason="set HUDI_MD_HUDI_INTEROP=1 and fetch Hudi's Spark bundle (scripts/fetch-hudi-bundle); ~15 s",
)
def test_excludes_apache_hudi_file_system_lock_provider(tmp_path: Path) -> None:
    """Apache Hudi's FileSystemBasedLockProvider (its class, from Hudi's bundle, in a JVM) and
    hudi-md's lock with that provider configured exclude each other on the same table."""
    (tmp_path / "t" / ".hoodie").mkdir(parents=True)
    script = tmp_path / "hudi_lock.py"
    script.write_text(_HUDI_LOCK_SCRIPT)
    proc = subprocess.run(
        [sys.executable, str(script), str(_BUNDLES[-1]), str(tmp_path / "t")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
    assert line, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = json.loads(line[-1][len("RESULT ") :])
    assert out["path"].endswith("/t/.hoodie/lock")
    assert out["hudi_while_ours"] is False
    assert out["hudi_after_ours"] is True
    assert "not hudi-md: Apache Hudi's lock info" in out["ours_while_hudi"]
    assert out["ours_after_hudi"] == "acquired"
