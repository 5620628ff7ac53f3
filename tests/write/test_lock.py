"""The table lock (issue 11): stale locks of dead or silent owners are broken, and only once.

Three processes race to break the same stale lock in every round; an exclusive-creation probe file
inside the critical section proves that at most one of them holds the lock at a time.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from hudi_md.errors import HudiMdError, InvalidOptionError
from hudi_md.storage import Storage
from hudi_md.write.config import WriteConfig
from hudi_md.write.lock import LOCK_FILE, LockTimeoutError, TableLock

ROUNDS = int(os.environ.get("HUDI_MD_LOCK_ROUNDS", "60"))


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _stale_record(kind: str, dead_pid: int) -> bytes:
    old = time.time() - 3600
    if kind == "dead_pid":  # written just now, owner process gone
        now = time.time()
        rec = {"host": socket.gethostname(), "pid": dead_pid, "token": "x", "heartbeat": now, "time": now}
    elif kind == "expired":  # another host, silent for an hour ("time": the record before heartbeats)
        rec = {"host": "elsewhere", "pid": 1, "token": "y", "heartbeat": old, "time": old}
    else:
        return b'{"host": "elsewh'  # torn
    return json.dumps(rec).encode()


def _plant(root: Path, kind: str, dead_pid: int) -> None:
    lock = root / LOCK_FILE
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_bytes(_stale_record(kind, dead_pid))
    if kind in ("expired", "torn"):
        old = time.time() - 3600
        os.utime(lock, (old, old))


_HUDI_FS_OPTS = {
    "hoodie.write.concurrency.mode": "optimistic_concurrency_control",
    "hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider",
    "hoodie.write.lock.filesystem.expire": "1",
}


def _plant_hudi(root: Path) -> None:
    """An Apache Hudi writer's lock (FileSystemBasedLockProvider), an hour old: expired by
    hoodie.write.lock.filesystem.expire=1 (minute)."""
    lock = root / ".hoodie" / "lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_bytes(b"LockInfo{lockCreateTime='2026-01-01 00:00:00.000', lockThreadName='main'}")
    old = time.time() - 3600
    os.utime(lock, (old, old))


def _racer(
    wid: int, root: str, barrier: Any, rounds: int, dead_pid: int, out: Any, hudi: bool = False
) -> None:
    import random

    from hudi_md.storage import set_fault_hook

    # Random delays before every storage mutation widen the windows between a breaker's steps, so
    # that interleavings a fast local disk would rarely show happen in most rounds.
    rng = random.Random(wid)
    set_fault_hook(lambda kind, path: time.sleep(rng.uniform(0, 0.01)))
    storage = Storage(root)
    probe = Path(root) / "probe"
    kinds = tuple(os.environ.get("HUDI_MD_LOCK_RACE_KINDS", "dead_pid,expired,torn").split(","))
    overlaps, errors = 0, []
    try:
        for r in range(rounds):
            if wid == 0:
                if hudi:
                    _plant_hudi(Path(root))
                else:
                    _plant(Path(root), kinds[r % len(kinds)], dead_pid)
            barrier.wait(timeout=120)
            try:
                with TableLock(storage, timeout_s=30, options=_HUDI_FS_OPTS if hudi else None):
                    try:
                        fd = os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
                    except FileExistsError:
                        overlaps += 1
                    else:
                        time.sleep(0.005)
                        os.close(fd)
                        os.unlink(probe)
            except HudiMdError as e:
                errors.append(f"typed {type(e).__name__}: {e}")
            except Exception as e:
                errors.append(f"UNTYPED {type(e).__name__}: {e}")
            barrier.wait(timeout=120)
    except threading.BrokenBarrierError:
        errors.append("a racer stopped (barrier broken)")
    finally:
        out.put((wid, overlaps, errors))


@pytest.mark.parametrize("hudi", [False, True], ids=["hudi-md", "hudi-fs-provider"])
def test_racing_breakers_never_share_the_lock(tmp_path: Path, hudi: bool) -> None:
    """Also with FileSystemBasedLockProvider: an expired Apache Hudi lock at .hoodie/lock is
    broken by exactly one of the racers (the tombstone protocol), never by two."""
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(3)
    out = ctx.Queue()
    dead = _dead_pid()
    rounds = ROUNDS // 2 if hudi else ROUNDS
    procs = [
        ctx.Process(target=_racer, args=(w, str(tmp_path), barrier, rounds, dead, out, hudi))
        for w in range(3)
    ]
    for p in procs:
        p.start()
    results = [out.get(timeout=600) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    overlaps = sum(r[1] for r in results)
    errors = [e for r in results for e in r[2]]
    print(f"rounds: {rounds} x 3 processes; rounds with two holders: {overlaps}; errors: {len(errors)}")
    assert overlaps == 0, f"{overlaps} times two processes held the lock at once"
    assert not errors, errors[:5]
    assert not (tmp_path / LOCK_FILE).exists()
    assert not (tmp_path / ".hoodie" / "lock").exists()
    assert [e.name for e in (tmp_path / LOCK_FILE).parent.iterdir()] == []


def test_dead_owner_is_broken_at_once(tmp_path: Path) -> None:
    _plant(tmp_path, "dead_pid", _dead_pid())
    start = time.monotonic()
    with TableLock(Storage(str(tmp_path)), timeout_s=5):
        pass
    assert time.monotonic() - start < 2


def test_torn_lock_expires_by_mtime(tmp_path: Path) -> None:
    lock = tmp_path / LOCK_FILE
    lock.parent.mkdir(parents=True)
    lock.write_bytes(b'{"host": "el')
    with pytest.raises(LockTimeoutError):
        TableLock(Storage(str(tmp_path)), timeout_s=0.5).acquire()
    old = time.time() - 3600
    os.utime(lock, (old, old))
    with TableLock(Storage(str(tmp_path)), timeout_s=5):
        pass


_HOLDER = textwrap.dedent(
    """
    import sys, time
    from hudi_md.storage import Storage
    from hudi_md.write.lock import TableLock
    lock = TableLock(Storage({root!r}), options={{"hoodie.client.heartbeat.interval_in_ms": "200"}})
    lock.acquire()
    print("held", flush=True)
    time.sleep({hold})
    lock.release()
    """
)


def test_live_holder_keeps_its_lock_by_heartbeat(tmp_path: Path) -> None:
    """A holder alive in another process refreshes its heartbeat (every 200 ms here): after many
    expiry periods (400 ms) it still holds the lock, and it is free once released."""
    code = _HOLDER.format(root=str(tmp_path), hold=3)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline().strip() == b"held"
    time.sleep(1.2)
    # The record names a live pid of this host: only its heartbeat could make it stale.
    record = json.loads((tmp_path / LOCK_FILE).read_bytes())
    record["host"] = "elsewhere"
    assert TableLock(Storage(str(tmp_path))).is_stale(json.dumps(record).encode(), None) is False
    with pytest.raises(LockTimeoutError):
        TableLock(Storage(str(tmp_path)), timeout_s=0.8).acquire()
    assert proc.wait(timeout=30) == 0
    with TableLock(Storage(str(tmp_path)), timeout_s=5):
        pass


def test_killed_holder_is_broken_at_once(tmp_path: Path) -> None:
    code = _HOLDER.format(root=str(tmp_path), hold=60)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline().strip() == b"held"
    proc.kill()
    proc.wait()
    assert (tmp_path / LOCK_FILE).exists()
    start = time.monotonic()
    with TableLock(Storage(str(tmp_path)), timeout_s=5):
        pass
    assert time.monotonic() - start < 2


def test_release_deletes_only_our_lock(tmp_path: Path) -> None:
    lock = TableLock(Storage(str(tmp_path)), timeout_s=5)
    lock.acquire()
    other = {"host": "elsewhere", "pid": 1, "token": "someone-else", "heartbeat": time.time()}
    (tmp_path / LOCK_FILE).write_bytes(json.dumps(other).encode())
    lock.release()
    assert json.loads((tmp_path / LOCK_FILE).read_bytes())["token"] == "someone-else"


def test_lock_left_by_this_process_is_stale(tmp_path: Path) -> None:
    """A lock file with our own pid whose TableLock is gone (its writer died in this process,
    e.g. a failed release) is broken; one whose TableLock is alive is not."""
    storage = Storage(str(tmp_path))
    first = TableLock(storage, timeout_s=5)
    first.acquire()
    with pytest.raises(LockTimeoutError):
        TableLock(storage, timeout_s=0.3).acquire()
    # simulate a release that could not delete the file
    first.held = False
    first._stop.set()
    first._forget()
    with TableLock(storage, timeout_s=5):
        pass


_LOCKS = "org.apache.hudi.client.transaction.lock."
_OCC = {"hoodie.write.concurrency.mode": "optimistic_concurrency_control"}
_DYNAMO = "org.apache.hudi.aws.transaction.lock.DynamoDBBasedLockProvider"
_HMS = "org.apache.hudi.hive.transaction.lock.HiveMetastoreBasedLockProvider"


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        (
            {"hoodie.write.concurrency.mode": "NON_BLOCKING_CONCURRENCY_CONTROL"},
            "hoodie.write.concurrency.mode",
        ),
        ({"hoodie.write.concurrency.mode": "bogus"}, "hoodie.write.concurrency.mode"),
        (_OCC, "hoodie.write.lock.provider"),  # OCC without a lock provider, as Hudi refuses
        ({**_OCC, "hoodie.write.lock.provider": _LOCKS + "ZookeeperBasedLockProvider"}, "ZookeeperBased"),
        (
            {
                **_OCC,
                "hoodie.write.lock.provider": _DYNAMO,
            },
            "DynamoDBBased",
        ),
        (
            {
                **_OCC,
                "hoodie.write.lock.provider": _HMS,
            },
            "HiveMetastoreBased",
        ),
        ({"hoodie.write.lock.provider": "com.example.MyLock"}, "com.example.MyLock"),
        (
            {
                **_OCC,
                "hoodie.write.lock.provider": _LOCKS + "FileSystemBasedLockProvider",
                "hoodie.write.lock.filesystem.path": "/elsewhere/locks",
            },
            "hoodie.write.lock.filesystem.path",
        ),
        (
            {
                **_OCC,
                "hoodie.write.lock.provider": _LOCKS + "InProcessLockProvider",
                "hoodie.write.lock.wait_time_ms": "soon",
            },
            "hoodie.write.lock.wait_time_ms",
        ),
    ],
)
def test_concurrency_options_are_refused(extra: dict[str, str], named: str) -> None:
    """Concurrency options are honoured or refused, never ignored; refusals name option and value."""
    opts = {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id", **extra}
    with pytest.raises(InvalidOptionError, match=named.replace(".", r"\.")):
        WriteConfig.from_options(opts)


@pytest.mark.parametrize("provider", ["FileSystemBasedLockProvider", "InProcessLockProvider"])
@pytest.mark.parametrize(
    "mode", ["optimistic_concurrency_control", "OPTIMISTIC_CONCURRENCY_CONTROL", "single_writer"]
)
def test_concurrency_options_are_honoured(mode: str, provider: str) -> None:
    opts = {
        "hoodie.table.name": "t",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.write.concurrency.mode": mode,
        "hoodie.write.lock.provider": _LOCKS + provider,
        "hoodie.write.lock.wait_time_ms": "1500",
    }
    c = WriteConfig.from_options(opts).concurrency
    assert c.optimistic == mode.lower().startswith("optimistic")
    assert c.wait_s == 1.5
    assert c.lock_path == (".hoodie/lock" if provider.startswith("FileSystem") else None)
    assert not WriteConfig.from_options(
        {k: v for k, v in opts.items() if "write." not in k}
    ).concurrency.optimistic
