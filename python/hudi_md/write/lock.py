"""The table lock: a lock file under ``.hoodie/.locks`` held by one writer at a time.

The lock file holds its owner's record (JSON): host, pid, a token unique to the acquisition, and
a heartbeat time the holder refreshes from a daemon thread every ``interval`` seconds (Hudi's
``hoodie.client.heartbeat.interval_in_ms``, default 60 s). A lock is *stale*, and may be broken,
when

- its owner is a process of this host that no longer runs (``os.kill(pid, 0)``), or a lock of
  this very process whose :class:`TableLock` is gone (released, or its writer died with it);
- its heartbeat is older than ``interval * tolerable misses`` (Hudi's
  ``hoodie.client.heartbeat.tolerable.misses``, default 2), by the record and the file's mtime;
- it does not parse (torn by a crash) and its mtime is older than that expiry.

Breaking is race-free without rename: a breaker first creates, exclusively, a tombstone named by
the hash of the stale record's bytes. Only one breaker wins a given record; the winner re-reads
the lock file and deletes it only if it still holds those exact bytes (nobody else can change
them: the owner is dead or stale, other breakers lost the tombstone, and no one can create the
lock file while it exists). Exclusive creation is atomic on local disk and HDFS, and a conditional
PUT (``If-None-Match``) on object stores whose fsspec driver supports it (s3fs).

Release deletes the lock file only while it still holds our token. Every failure is a
:class:`LockError` (a :class:`~hudi_md.errors.HudiMdError`).

The lock files and the acquire timeout follow the write options
(:func:`hudi_md.write.config.concurrency_settings`). hudi-md's own lock file is always taken (so
hudi-md writers exclude each other whatever lock provider each names). With Hudi's
``FileSystemBasedLockProvider`` Hudi's lock file (``.hoodie/lock``, or
``hoodie.write.lock.filesystem.path``/lock) is taken next, created exclusively as Hudi does, so
that a hudi-md writer and an Apache Hudi writer with that provider exclude each other. A record
there that is not hudi-md's (Hudi's ``LockInfo``) is broken only by Hudi's own rule, once its mtime
is older than ``hoodie.write.lock.filesystem.expire`` minutes (never by default); hudi-md's own
records there follow the rules above. ``hoodie.write.lock.wait_time_ms`` (default 60 s) bounds
the wait for both.

A :class:`TableLock` acquired by a thread that already holds the same lock file through a
``reentrant=True`` lock (the writer's critical section, inside which table services take the lock
again) is nested: it neither waits nor releases.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from types import TracebackType
from typing import Any

from hudi_md.config import write as W
from hudi_md.errors import InvalidOptionError

# defined with every other error; named here too, where they were first
from hudi_md.errors import LockError as LockError
from hudi_md.errors import LockLostError as LockLostError
from hudi_md.errors import LockTimeoutError as LockTimeoutError
from hudi_md.storage import Storage

log = logging.getLogger(__name__)

LOCK_DIR = ".hoodie/.locks"
LOCK_FILE = f"{LOCK_DIR}/hudi-md.lock"
DEFAULT_TIMEOUT_S = W.LOCK_WAIT_TIME_MS.default / 1000.0
HEARTBEAT_INTERVAL = W.HEARTBEAT_INTERVAL_MS.key
HEARTBEAT_MISSES = W.HEARTBEAT_TOLERABLE_MISSES.key
DEFAULT_INTERVAL_S = W.HEARTBEAT_INTERVAL_MS.default / 1000.0
DEFAULT_MISSES = W.HEARTBEAT_TOLERABLE_MISSES.default
# A breaker needs a few requests; a tombstone this old was left by a breaker that died.
TOMBSTONE_EXPIRY_S = 60.0

# Tokens of the locks this process holds right now (a lock file with our pid and another token
# was left by a TableLock of this process that is gone).
_live_tokens: set[str] = set()
_live_lock = threading.Lock()


# Lock files held by threads of this process: uri -> (thread id, the outermost TableLock).
_held: dict[str, tuple[int, TableLock]] = {}

SINGLE_WRITER_HINT = (
    "a second writer is refused while one writes: concurrent writers on one table need "
    "hoodie.write.concurrency.mode=optimistic_concurrency_control with a hoodie.write.lock.provider "
    "(org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider or InProcessLockProvider)"
)
OCC_HINT = (
    "under optimistic concurrency control the lock is held only to start and to commit an instant; "
    "raise hoodie.write.lock.wait_time_ms to wait longer"
)


def heartbeat_settings(options: Mapping[str, str] | None) -> tuple[float, int]:
    opts = options or {}
    interval = W.HEARTBEAT_INTERVAL_MS.get(opts) / 1000.0
    misses = W.HEARTBEAT_TOLERABLE_MISSES.get(opts)
    if interval <= 0 or misses < 1:
        raise InvalidOptionError(f"{HEARTBEAT_INTERVAL} must be > 0 and {HEARTBEAT_MISSES} >= 1")
    return interval, misses


class TableLock:
    def __init__(
        self,
        storage: Storage,
        *,
        timeout_s: float | None = None,
        options: Mapping[str, str] | None = None,
        path: str | None = None,
        reentrant: bool = False,
    ) -> None:
        from hudi_md.write.config import concurrency_settings

        settings = concurrency_settings(options or {})
        self.storage = storage
        self.timeout_s = settings.wait_s if timeout_s is None else timeout_s
        self.path = path or LOCK_FILE
        # FileSystemBasedLockProvider: Hudi's lock file is taken too, after hudi-md's own (always
        # in that order, so two writers never deadlock): hudi-md writers exclude each other
        # whatever provider each was given (and the CLI's services, which name none), and an
        # Apache Hudi writer with that provider excludes them all.
        self._hudi_lock_path = settings.lock_path if path is None else None
        self._hudi: TableLock | None = None
        self._options = options
        # Records that are not hudi-md's at Hudi's lock path follow Hudi's expiry rule.
        self.hudi_path = settings.lock_path is not None and self.path == settings.lock_path
        self.foreign_expiry_s = settings.foreign_expiry_s
        self.hint = OCC_HINT if settings.optimistic else SINGLE_WRITER_HINT
        self.interval_s, self.misses = heartbeat_settings(options)
        self.held = False
        self._lost = False
        self.token = ""
        self._outer: TableLock | None = None
        self.reentrant = reentrant
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def lost(self) -> bool:
        if self._outer is not None:
            return self._outer.lost
        return self._lost or (self._hudi is not None and self._hudi.lost)

    @lost.setter
    def lost(self, value: bool) -> None:
        self._lost = value

    @property
    def _key(self) -> str:
        return self.storage.uri(self.path)

    # --- the owner record ------------------------------------------------------------------------

    def _record(self, now: float, acquired: float | None = None) -> bytes:
        return json.dumps(
            {
                "host": socket.gethostname(),
                "pid": os.getpid(),
                "token": self.token,
                "acquired": acquired if acquired is not None else now,
                "heartbeat": now,
                "interval_ms": int(self.interval_s * 1000),
                "tolerable_misses": self.misses,
            }
        ).encode()

    @property
    def expiry_s(self) -> float:
        return self.interval_s * self.misses

    # --- acquire ---------------------------------------------------------------------------------

    def acquire(self) -> None:
        with _live_lock:
            outer = _held.get(self._key)
        if outer is not None and outer[0] == threading.get_ident() and outer[1].held:
            self._outer = outer[1]  # nested in this thread's own critical section
            self.token = outer[1].token
            self.held = True
            return
        deadline = time.monotonic() + self.timeout_s
        self._acquire_file(deadline)
        if self._hudi_lock_path:
            hudi_lock = TableLock(
                self.storage,
                timeout_s=max(0.0, deadline - time.monotonic()),
                options=self._options,
                path=self._hudi_lock_path,
            )
            try:
                hudi_lock.acquire()
            except BaseException:
                self.release()
                raise
            self._hudi = hudi_lock

    def _acquire_file(self, deadline: float) -> None:
        self.token = uuid.uuid4().hex
        self.lost = False
        delay = 0.02
        self._acquired_at = time.time()
        while True:
            with _live_lock:
                _live_tokens.add(self.token)  # before the file exists: never judged dead
            try:
                created = self.storage.create_exclusive(self.path, self._record(self._acquired_at))
            except OSError as e:
                self._forget()
                raise LockError(f"could not create the lock {self.storage.uri(self.path)}: {e}") from e
            if created:
                self.held = True
                if self.reentrant:
                    with _live_lock:
                        _held[self._key] = (threading.get_ident(), self)
                self._start_heartbeat()
                return
            self._forget()
            if self._break_if_stale():
                continue
            if time.monotonic() > deadline:
                raise LockTimeoutError(
                    f"could not lock {self.storage.uri(self.path)} within {self.timeout_s:.3g}s: "
                    f"held by {self._describe_holder()}; {self.hint}"
                )
            time.sleep(delay)
            delay = min(delay * 2, 1.0)

    def _forget(self) -> None:
        with _live_lock:
            _live_tokens.discard(self.token)

    def _read(self) -> tuple[bytes, float | None] | None:
        """The lock file's bytes and mtime; None when it is gone."""
        try:
            data = self.storage.read_bytes(self.path)
            mtime = self.storage.info(self.path).modification_time
        except FileNotFoundError:
            return None
        except OSError as e:
            raise LockError(f"could not read the lock {self.storage.uri(self.path)}: {e}") from e
        return data, mtime

    def _describe_holder(self) -> str:
        got = self._read()
        if got is None:
            return "nobody (released meanwhile)"
        if self.hudi_path and not _is_ours(got[0]):
            text = got[0][:160].decode("utf-8", "replace").replace("\n", " ")
            return f"another writer (not hudi-md: Apache Hudi's lock info {text!r})"
        try:
            info = json.loads(got[0])
        except ValueError:
            return "an unreadable lock record"
        if not isinstance(info, dict):
            return "an unreadable lock record"
        if "token" not in info:
            return f"another writer (not hudi-md; lock info {got[0][:200].decode('utf-8', 'replace')})"
        return f"host {info.get('host')} pid {info.get('pid')} (heartbeat {info.get('heartbeat')})"

    def is_stale(self, data: bytes, mtime: float | None, now: float | None = None) -> bool:
        """Whether the lock record ``data`` (file mtime ``mtime``) belongs to a dead or silent owner."""
        now = time.time() if now is None else now
        if self.hudi_path and not _is_ours(data):
            # Apache Hudi's FileSystemBasedLockProvider: expired only by its configured age.
            if self.foreign_expiry_s is None or mtime is None:
                return False
            return now - mtime > self.foreign_expiry_s
        try:
            loaded = json.loads(data)
            if not isinstance(loaded, dict):
                raise ValueError("not an object")
        except ValueError:
            # Torn or foreign: stale once it has not changed for the expiry.
            return mtime is not None and now - mtime > self.expiry_s
        info: dict[str, Any] = loaded
        host, pid, token = info.get("host"), info.get("pid"), info.get("token")
        if host == socket.gethostname() and isinstance(pid, int):
            if pid == os.getpid():
                with _live_lock:
                    if token not in _live_tokens:
                        return True
            elif not _process_alive(pid):
                return True
        try:
            interval = float(info.get("interval_ms", self.interval_s * 1000)) / 1000.0
            misses = int(info.get("tolerable_misses", self.misses))
            beat = float(info.get("heartbeat", info.get("time", 0)))
        except (TypeError, ValueError):
            return mtime is not None and now - mtime > self.expiry_s
        last = max(beat, mtime or 0.0)
        return now - last > interval * max(misses, 1)

    def _break_if_stale(self) -> bool:
        """Break the lock if it is stale; True when the caller should try to create it again."""
        got = self._read()
        if got is None:
            return True  # released meanwhile
        data, mtime = got
        if not self.is_stale(data, mtime):
            return False
        digest = hashlib.sha256(data).hexdigest()[:32]
        try:
            tomb = self._claim(digest)
            if tomb is None:
                return False  # another breaker has this record; wait for it
            try:
                again = self._read()
                if again is not None and again[0] == data:
                    self.storage.delete(self.path)
                    log.warning("broke the stale lock %s (%s)", self.storage.uri(self.path), _summary(data))
            finally:
                with contextlib.suppress(FileNotFoundError):
                    self.storage.delete(tomb)
        except FileNotFoundError:
            pass
        except OSError as e:
            raise LockError(f"could not break the stale lock {self.storage.uri(self.path)}: {e}") from e
        return True

    def _claim(self, digest: str) -> str | None:
        """Create the tombstone of the record with this digest; None if a live breaker has it.

        Tombstones are numbered: one left by a breaker that died (older than TOMBSTONE_EXPIRY_S)
        is passed over for the next number, never deleted, so two breakers never both win."""
        for n in range(1000):
            tomb = f"{LOCK_DIR}/.broken.{digest}.{n}"
            if self.storage.create_exclusive(tomb, self._record(time.time())):
                return tomb
            try:
                mtime = self.storage.info(tomb).modification_time
            except FileNotFoundError:
                return None  # its breaker just finished: the record is gone
            if mtime is None or time.time() - mtime <= TOMBSTONE_EXPIRY_S:
                return None
        raise LockError(f"too many abandoned attempts to break {self.storage.uri(self.path)}")

    # --- heartbeat -------------------------------------------------------------------------------

    def _start_heartbeat(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._beat, name="hudi-md-lock-heartbeat", daemon=True)
        self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                if not self.refresh():
                    return
            except BaseException as e:  # the thread must never die loudly; the lock may expire
                log.warning("lock heartbeat of %s failed: %s", self.storage.uri(self.path), e)
                return

    def refresh(self) -> bool:
        """Write a new heartbeat if the lock file still holds our token; False (and ``lost``) if not."""
        got = self._read()
        if got is None or _token(got[0]) != self.token:
            self.lost = True
            log.error("the table lock %s was taken from this writer", self.storage.uri(self.path))
            return False
        self.storage.write_atomic(self.path, self._record(time.time(), self._acquired_at))
        return True

    @contextlib.contextmanager
    def nesting(self) -> Iterator[TableLock]:
        """While inside, a ``reentrant=True`` lock of the same file taken by this thread nests in
        this one (a lock acquired with ``reentrant=True`` allows that for as long as it is held)."""
        if self._outer is not None or not self.held:
            yield self
            return
        with _live_lock:
            prev = _held.get(self._key)
            _held[self._key] = (threading.get_ident(), self)
        try:
            yield self
        finally:
            with _live_lock:
                if prev is None:
                    _held.pop(self._key, None)
                else:
                    _held[self._key] = prev

    def check_held(self) -> None:
        """Raise :class:`LockLostError` unless the lock file still holds this writer's token."""
        if self._outer is not None:
            self._outer.check_held()
            return
        if not self.held or self.lost:
            raise LockLostError(f"the table lock {self.storage.uri(self.path)} is not held by this writer")
        got = self._read()
        if got is None or _token(got[0]) != self.token:
            self.lost = True
            holder = "nobody" if got is None else _summary(got[0])
            raise LockLostError(
                f"the table lock {self.storage.uri(self.path)} was taken from this writer (now: {holder})"
            )
        if self._hudi is not None:
            self._hudi.check_held()

    # --- release ---------------------------------------------------------------------------------

    def release(self) -> None:
        if not self.held:
            return
        self.held = False
        if self._outer is not None:
            self._outer = None
            return
        hudi_lock, self._hudi = self._hudi, None
        if hudi_lock is not None:
            hudi_lock.release()
        with _live_lock:
            if _held.get(self._key, (0, None))[1] is self:
                del _held[self._key]
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)
        self._forget()  # from here on, a lock file left with our token counts as stale
        try:
            got = self._read()
            if got is None or _token(got[0]) != self.token:
                log.error(
                    "the table lock %s is no longer this writer's; not deleting it",
                    self.storage.uri(self.path),
                )
                return
            self.storage.delete(self.path)
        except FileNotFoundError:
            pass
        except (OSError, LockError) as e:
            # Whatever this writer did is done; the lock is stale now (its token is dead) and the
            # next writer breaks it.
            log.warning("could not delete the table lock %s: %s", self.storage.uri(self.path), e)

    def __enter__(self) -> TableLock:
        self.acquire()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return True
    return True


def _is_ours(data: bytes) -> bool:
    """Whether a lock record is hudi-md's (JSON with its owner's pid and token)."""
    try:
        info: Any = json.loads(data)
    except ValueError:
        return False
    return isinstance(info, dict) and "token" in info and "pid" in info


def _token(data: bytes) -> str | None:
    try:
        info: Any = json.loads(data)
    except ValueError:
        return None
    return info.get("token") if isinstance(info, dict) else None


def _summary(data: bytes) -> str:
    try:
        info = json.loads(data)
        return f"host {info.get('host')} pid {info.get('pid')} heartbeat {info.get('heartbeat')}"
    except (ValueError, AttributeError):
        return f"{len(data)} unreadable bytes"
