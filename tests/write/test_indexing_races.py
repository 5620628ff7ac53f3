"""RFC-45's error cases for asynchronous MDT indexing, each with real concurrent processes
(tests/write/indexing_procs.py): writers, the indexer and table services run as separate Python
processes, stopped at chosen steps by barriers, let go or SIGKILLed.

1. a writer fails while the indexer is inflight; 2. the indexer fails while a writer is inflight;
3a. a writer starts after the schedule and commits before the indexer runs; 3b. a writer about to
commit when the indexing completes; 3c. a writer that began before the schedule and commits
during the indexing (the indexer waits for it; or times out and rolls back whole); 4. table
services (compaction, clean, archival, MDT compaction) during the indexing; 5. timelines with
holes: base instant and catch-up set exactly; and a randomized interleaving of a writer process
and the indexer over several seeds.

After each: the new partitions hold what the table holds (tests/indexing_oracle.py: hudi-rs's keys
and file groups, pyarrow's footers, a build from scratch), ``metadata validate`` is clean and every
reader (hudi-md through the MDT and by listing, hudi-rs) returns the model's rows.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from hudi_md.metadata import keys as K
from hudi_md.metadata.indexing import catchup_instants, indexing_state, read_index_plan
from hudi_md.table.timeline import Timeline
from hudi_md.write import indexing
from hudi_md.write.heartbeat import heartbeat_path
from hudi_md.write.writer import HudiWriter
from indexing_oracle import check_index
from table_model import Model, assert_readers, rows

PROCS = Path(__file__).with_name("indexing_procs.py")
PARTS = [K.RECORD_INDEX, K.COLUMN_STATS, K.PARTITION_STATS]
OPTIONS = {
    "hoodie.table.name": "races",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "city",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.metadata.index.column.stats.enable": "false",
    "hoodie.metadata.index.partition.stats.enable": "false",
    "hoodie.metadata.record.index.enable": "false",
    "hoodie.write.concurrency.mode": "optimistic_concurrency_control",
    "hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.InProcessLockProvider",
    "hoodie.client.heartbeat.interval_in_ms": "500",
    "hoodie.client.heartbeat.tolerable.misses": "6",
    "hoodie.parquet.max.file.size": "3000",  # several file groups per partition
}


def options(table_type: str, **extra: str) -> dict[str, str]:
    return {**OPTIONS, "hoodie.datasource.write.table.type": table_type, **extra}


class Proc:
    """One process of indexing_procs.py; ``pause``: stop at a step behind a barrier."""

    def __init__(self, tmp: Path, spec: dict[str, Any], pause: tuple[str, str] | None = None) -> None:
        self.barriers = tmp / "barriers"
        self.barriers.mkdir(exist_ok=True)
        if pause is not None:
            spec = {**spec, "pause": {"dir": str(self.barriers), "name": pause[0], "at": pause[1]}}
        self.name = pause[0] if pause else spec["cmd"]
        self.log = ""
        self.proc = subprocess.Popen(
            [sys.executable, str(PROCS), json.dumps(spec)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def ready(self, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        flag = self.barriers / f"{self.name}.ready"
        while not flag.exists():
            if self.proc.poll() is not None:
                out, err = self.proc.communicate()
                raise AssertionError(f"{self.name} ended before its pause: {out}\n{err[-3000:]}")
            assert time.monotonic() < deadline, f"{self.name} never reached its pause"
            time.sleep(0.02)

    def go(self) -> None:
        (self.barriers / f"{self.name}.go").write_text("go")

    def result(self, timeout: float = 240.0) -> dict[str, Any]:
        out, err = self.proc.communicate(timeout=timeout)
        self.log = err
        lines = [line for line in out.splitlines() if line.startswith("{")]
        assert lines, f"{self.name} printed no result (rc {self.proc.returncode}): {err[-3000:]}"
        return json.loads(lines[-1])

    def ok(self) -> str | None:
        res = self.result()
        assert res["ok"], res.get("trace") or res
        return res["instant"]

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()


def write_spec(path: Path, opts: dict[str, str], operation: str, ids: range, ts: int, seed: int = 0) -> dict:
    return {
        "cmd": "write",
        "path": str(path),
        "options": opts,
        "operation": operation,
        "ids": [ids.start, ids.stop],
        "ts": ts,
        "seed": seed,
    }


def index_spec(path: Path, opts: dict[str, str], **extra: Any) -> dict:
    return {"cmd": "index", "path": str(path), "options": opts, **extra}


def write(
    path: Path, model: Model, opts: dict[str, str], operation: str, ids: range, ts: int, seed: int = 0
) -> str:
    data = rows(ids, ts, seed)
    instant = HudiWriter(str(path), opts).write(data, operation).instant
    model.apply(operation, data)
    return instant


def apply(model: Model, spec: dict) -> None:
    model.apply(spec["operation"], rows(range(*spec["ids"]), spec["ts"], spec["seed"]))


def seeded(tmp_path: Path, table_type: str) -> tuple[Path, Model, dict[str, str]]:
    """A table with history (insert, upsert, delete; MDT files partition only)."""
    path, model, opts = tmp_path / "t", Model(["city"]), options(table_type)
    write(path, model, opts, "insert", range(0, 60), 1, seed=1)
    write(path, model, opts, "upsert", range(30, 90), 2, seed=2)
    write(path, model, opts, "delete", range(0, 10), 3)
    return path, model, opts


def finish(path: Path, model: Model, tmp_path: Path) -> None:
    check_index(path, PARTS, tmp_path)
    assert_readers(str(path), model.expected())


def pending(path: Path) -> list[str]:
    return [i.requested_time for i in HudiWriter(str(path)).timeline().pending()]


def mdt_files(path: Path, partition: str, suffix: str = "") -> list[str]:
    folder = path / ".hoodie" / "metadata" / partition
    return sorted(f.name for f in folder.iterdir() if f.name.endswith(suffix)) if folder.exists() else []


def mdt_logs_of(path: Path, instant: str, partitions: list[str]) -> dict[str, list[str]]:
    mdt = path / ".hoodie" / "metadata"
    return {
        p: sorted(f.name for f in (mdt / p).iterdir() if f"_{instant}.log." in f.name) for p in partitions
    }


def age_heartbeat(path: Path, instant: str) -> None:
    """The heartbeat of a killed writer, aged past its expiry (as if the allowance had passed)."""
    beat = path / heartbeat_path(instant)
    if beat.exists():
        old = time.time() - 3600
        os.utime(beat, (old, old))


# --- 1. a writer fails while the indexer is inflight ---------------------------------------------------


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_writer_fails_while_the_indexer_is_inflight(tmp_path: Path, table_type: str) -> None:
    path, model, opts = seeded(tmp_path, table_type)
    t = indexing.schedule_indexing(HudiWriter(str(path), opts), PARTS)
    ix = Proc(tmp_path, index_spec(path, opts), ("IX", "build"))
    ix.ready()
    # the writer dies after its MDT deltacommit (it logged into the inflight partitions), before
    # its commit
    # (new keys too: updates alone log nothing into the record index)
    spec = write_spec(path, opts, "upsert", range(70, 110), 5, seed=5)
    w = Proc(tmp_path, spec, ("W", "before_complete"))
    w.ready()
    (dead,) = [p for p in pending(path) if p not in (t,)]
    assert all(mdt_logs_of(path, dead, PARTS).values()), "the writer logged into every inflight partition"
    w.kill()
    ix.go()
    assert ix.ok() == t
    age_heartbeat(path, dead)
    write(path, model, opts, "upsert", range(100, 110), 6, seed=6)  # rolls the dead writer back
    assert dead not in pending(path)
    assert not any(mdt_logs_of(path, dead, PARTS).values()), "its MDT log blocks went with it"
    finish(path, model, tmp_path)


# --- 2. the indexer fails while a writer is inflight ------------------------------------------------


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_indexer_fails_while_a_writer_is_inflight(tmp_path: Path, table_type: str) -> None:
    path, model, opts = seeded(tmp_path, table_type)
    t = indexing.schedule_indexing(HudiWriter(str(path), opts), PARTS)
    spec = write_spec(path, opts, "upsert", range(70, 100), 5, seed=5)
    w = Proc(tmp_path, spec, ("W", "before_commit"))
    w.ready()
    ix = Proc(tmp_path, index_spec(path, opts), ("IX", "build"))
    ix.ready()
    ix.kill()
    w.go()
    mine = w.ok()
    apply(model, spec)
    assert mine is not None and all(mdt_logs_of(path, mine, PARTS).values())
    assert t in pending(path)
    assert indexing.run_indexing(HudiWriter(str(path), opts)) == t  # run again: it resumes
    finish(path, model, tmp_path)


# --- 3. races ---------------------------------------------------------------------------------------


def test_writer_starting_after_the_schedule_commits_before_the_run(tmp_path: Path) -> None:
    """3a: the writer logs into the scheduled partitions; the run builds beside its log blocks."""
    path, model, opts = seeded(tmp_path, "MERGE_ON_READ")
    t = indexing.schedule_indexing(HudiWriter(str(path), opts), PARTS)
    spec = write_spec(path, opts, "upsert", range(70, 100), 5, seed=5)
    mine = Proc(tmp_path, spec).ok()
    apply(model, spec)
    assert mine is not None and all(mdt_logs_of(path, mine, PARTS).values())
    assert Proc(tmp_path, index_spec(path, opts)).ok() == t
    finish(path, model, tmp_path)


def test_writer_commits_just_after_the_indexing_completed(tmp_path: Path) -> None:
    """3b: the partitions are available when the writer commits: it writes them as any commit."""
    path, model, opts = seeded(tmp_path, "COPY_ON_WRITE")
    t = indexing.schedule_indexing(HudiWriter(str(path), opts), PARTS)
    spec = write_spec(path, opts, "upsert", range(60, 100), 5, seed=5)
    w = Proc(tmp_path, spec, ("W", "before_commit"))
    w.ready()
    assert Proc(tmp_path, index_spec(path, opts)).ok() == t
    w.go()
    w.ok()
    apply(model, spec)
    finish(path, model, tmp_path)


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_writer_that_began_before_the_schedule_is_waited_for(tmp_path: Path, table_type: str) -> None:
    """3c: a writer that read the table config before the schedule may not write the new
    partitions (hudi-md's do, at commit; and its files carry no column ranges, since column stats
    were not maintained when it began): the indexer waits for it before listing the table."""
    path, model, opts = seeded(tmp_path, table_type)
    spec = write_spec(path, opts, "upsert", range(40, 80), 5, seed=5)
    w = Proc(tmp_path, spec, ("W", "before_commit"))
    w.ready()
    t = indexing.schedule_indexing(HudiWriter(str(path), opts), PARTS)
    ix = Proc(tmp_path, index_spec(path, opts))
    timeline = path / ".hoodie" / "timeline"
    deadline = time.monotonic() + 60
    while not (timeline / f"{t}.indexing.inflight").exists():
        assert time.monotonic() < deadline and ix.proc.poll() is None
        time.sleep(0.05)
    time.sleep(1.5)
    assert ix.proc.poll() is None, "the indexer must wait for the writer"
    built = [
        f.name for p in PARTS for f in (path / ".hoodie" / "metadata" / p).iterdir() if f.suffix == ".hfile"
    ]
    assert built == [], "nothing is built before the writer finished"
    w.go()
    w.ok()
    apply(model, spec)
    assert ix.ok() == t
    finish(path, model, tmp_path)


def test_indexer_times_out_and_leaves_nothing(tmp_path: Path) -> None:
    path, model, opts = seeded(tmp_path, "MERGE_ON_READ")
    timeline = path / ".hoodie" / "timeline"
    spec = write_spec(path, opts, "upsert", range(40, 80), 5, seed=5)
    w = Proc(tmp_path, spec, ("W", "before_commit"))
    w.ready()
    before = sorted(f.name for f in timeline.iterdir())
    mdt_before = mdt_files(path, ".hoodie/timeline")
    t = indexing.schedule_indexing(HudiWriter(str(path), opts), PARTS)
    res = Proc(tmp_path, index_spec(path, opts, timeout_s=2)).result()
    assert not res["ok"] and res["error"] == "IndexingTimeoutError", res
    assert t in res["message"] and "hoodie.metadata.index.check.timeout.seconds" in res["message"]
    # rolled back whole: no indexing instant, no partition, nothing on the MDT's timeline
    assert sorted(f.name for f in timeline.iterdir()) == before
    assert (
        sorted(f.name for f in (path / ".hoodie" / "metadata" / ".hoodie" / "timeline").iterdir())
        == mdt_before
    )
    table = HudiWriter(str(path))
    state = indexing_state(table.storage, table.config(), table.timeline())
    assert state.pending == [] and state.inflight == []
    assert not any((path / ".hoodie" / "metadata" / p).exists() for p in PARTS)
    w.go()
    w.ok()
    apply(model, spec)
    # scheduled again once the writer is done, it completes
    t2 = indexing.schedule_indexing(HudiWriter(str(path), opts), PARTS)
    assert indexing.run_indexing(HudiWriter(str(path), opts)) == t2
    finish(path, model, tmp_path)


# --- 4. table services during the indexing -----------------------------------------------------------


def test_table_services_during_the_indexing(tmp_path: Path) -> None:
    """Compaction, clean (of files the indexer listed as latest), archival and MDT compaction run
    while the indexer is between its listing and its reads: the indexer lists again where a file
    went, and MDT compaction leaves the partitions being built alone."""
    opts = options(
        "MERGE_ON_READ",
        **{
            "hoodie.cleaner.commits.retained": "1",
            "hoodie.clean.automatic": "false",  # the clean below is the one under test
            "hoodie.metadata.compact.max.delta.commits": "2",
            "hoodie.keep.min.commits": "2",
            "hoodie.keep.max.commits": "3",
        },
    )
    path, model = tmp_path / "t", Model(["city"])
    write(path, model, opts, "insert", range(0, 60), 1, seed=1)
    write(path, model, opts, "upsert", range(30, 60), 2, seed=2)
    t = indexing.schedule_indexing(HudiWriter(str(path), opts), PARTS)
    ix = Proc(tmp_path, index_spec(path, opts), ("IX", "build"))
    ix.ready()
    assert Proc(tmp_path, {"cmd": "compact", "path": str(path), "options": opts}).ok() is not None
    write(path, model, opts, "upsert", range(0, 40), 3, seed=3)
    assert Proc(tmp_path, {"cmd": "compact", "path": str(path), "options": opts}).ok() is not None
    for ts in (4, 5, 6):
        write(path, model, opts, "upsert", range(10 * ts, 10 * ts + 15), ts, seed=ts)
    assert Proc(tmp_path, {"cmd": "clean", "path": str(path), "options": opts}).ok() is not None
    mdt_timeline = Timeline.load(
        HudiWriter(str(path)).storage.child(".hoodie/metadata"), ".hoodie/timeline", 2
    )
    assert any(i.action == "commit" for i in mdt_timeline.completed()), "an MDT compaction ran meanwhile"
    for p in PARTS:  # the partitions being built were left out of it
        assert mdt_files(path, p, ".hfile") == []
    ix.go()
    assert ix.ok() == t
    assert "listing the table again" in ix.log, "the clean removed files the indexer had listed"
    finish(path, model, tmp_path)


# --- 5. timelines with holes -------------------------------------------------------------------------


def test_timeline_with_a_pending_write_before_a_completed_one(tmp_path: Path) -> None:
    """t0 completed, t1 pending (a live writer), t2 completed: the index is built up to t0 and
    t0, t1, t2 are to catch up; the run waits for t1."""
    path, model, opts = tmp_path / "t", Model(["city"]), options("COPY_ON_WRITE")
    t0 = write(path, model, opts, "insert", range(0, 60), 1, seed=1)
    # new keys: an insert goes to new file groups, so the writers never conflict
    spec = write_spec(path, opts, "insert", range(100, 130), 2, seed=2)
    w1 = Proc(tmp_path, spec, ("W1", "before_commit"))
    w1.ready()
    (t1,) = pending(path)
    t2 = write(path, model, opts, "upsert", range(40, 60), 3, seed=3)
    assert t0 < t1 < t2
    writer = HudiWriter(str(path), opts)
    t = indexing.schedule_indexing(writer, PARTS)
    plan = read_index_plan(writer.storage, ".hoodie/timeline", t)
    assert {p.up_to_instant for p in plan.partitions} == {t0}
    assert [i.requested_time for i in catchup_instants(writer.timeline(), t0)] == [t0, t1, t2]
    ix = Proc(tmp_path, index_spec(path, opts))
    time.sleep(1.0)
    assert ix.proc.poll() is None, "the run waits for t1"
    w1.go()
    w1.ok()
    apply(model, spec)
    assert ix.ok() == t
    finish(path, model, tmp_path)


def test_timeline_with_two_pending_writes_between_completed_ones(tmp_path: Path) -> None:
    """t0, t1 completed, t2 and t3 pending, t4 completed: base t1, catch-up t1..t4; the run
    waits for both, whichever finishes first."""
    path, model, opts = tmp_path / "t", Model(["city"]), options("MERGE_ON_READ")
    write(path, model, opts, "insert", range(0, 60), 1, seed=1)
    t1 = write(path, model, opts, "upsert", range(0, 30), 2, seed=2)
    s2 = write_spec(path, opts, "insert", range(100, 120), 3, seed=3)
    w2 = Proc(tmp_path, s2, ("W2", "before_commit"))
    w2.ready()
    s3 = write_spec(path, opts, "insert", range(200, 230), 4, seed=4)
    w3 = Proc(tmp_path, s3, ("W3", "before_commit"))
    w3.ready()
    t2, t3 = pending(path)
    t4 = write(path, model, opts, "delete", range(50, 55), 5)
    writer = HudiWriter(str(path), opts)
    t = indexing.schedule_indexing(writer, PARTS)
    plan = read_index_plan(writer.storage, ".hoodie/timeline", t)
    assert {p.up_to_instant for p in plan.partitions} == {t1}
    assert [i.requested_time for i in catchup_instants(writer.timeline(), t1)] == [t1, t2, t3, t4]
    ix = Proc(tmp_path, index_spec(path, opts))
    w3.go()
    w3.ok()
    apply(model, s3)
    time.sleep(1.0)
    assert ix.proc.poll() is None, "the run still waits for t2"
    w2.go()
    w2.ok()
    apply(model, s2)
    assert ix.ok() == t
    finish(path, model, tmp_path)


# --- randomized interleaving -------------------------------------------------------------------------


def _seeds() -> list[int]:
    return list(range(int(os.environ.get("HUDI_MD_INDEXING_SEEDS", "3"))))


@pytest.mark.parametrize("seed", _seeds())
def test_randomized_writer_and_indexer(tmp_path: Path, seed: int) -> None:
    """A writer process upserts and deletes at random while the indexer is scheduled and runs
    (``HUDI_MD_INDEXING_SEEDS=N`` runs N seeds; CI runs 3)."""
    rng = random.Random(seed)
    table_type = ["COPY_ON_WRITE", "MERGE_ON_READ"][seed % 2]
    opts = options(table_type, **{"hoodie.metadata.compact.max.delta.commits": str(rng.choice([3, 5, 10]))})
    path, model = tmp_path / "t", Model(["city"])
    write(path, model, opts, "insert", range(0, 120), 1, seed=seed)
    ops = []
    for n in range(rng.randint(6, 10)):
        start = rng.randrange(0, 150)
        ops.append(
            {
                "operation": rng.choice(["upsert", "upsert", "delete"]),
                "ids": [start, start + rng.randint(5, 40)],
                "ts": 10 + n,
                "seed": seed * 100 + n,
                "sleep": rng.uniform(0, 0.3),
            }
        )
    w = Proc(tmp_path, {"cmd": "random", "path": str(path), "options": opts, "ops": ops})
    time.sleep(rng.uniform(0, 2.0))
    t = indexing.schedule_indexing(HudiWriter(str(path), opts), PARTS)
    ix = Proc(tmp_path, index_spec(path, opts))
    done = w.result()
    assert done["ok"], done
    assert ix.ok() == t
    # hudi-md's writers write the partitions being built: the run never has to build again
    assert "again under the lock" not in ix.log, ix.log
    for i in done["committed"]:
        apply(model, ops[i])
    finish(path, model, tmp_path)
